//! A queue's time resolution (`time_resolution` in a dialect profile, see
//! docs/dialect-profile.md) and the engine wrapper that applies it.
//!
//! A queue that keeps whole seconds truncates its clock before writing or
//! comparing. [`Resolved`] does the same to every instant the driver binds
//! (each operation's `now`, reap cutoffs, `run_at`, lease expiries, setup
//! rows), toward the past, before the call reaches the store. The model and
//! the database are wrapped alike, so a port is compared with the model at
//! the port's own resolution.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::engine::{Call, Engine, EngineError, JobRow, LeaseRow, Phase, ReapGuard, Reply};
use crate::time::Instant;

/// How finely a queue's clock counts time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
pub enum Resolution {
    /// One microsecond: the reference semantics (spec: "Time").
    #[default]
    #[serde(rename = "1us")]
    Micro,
    /// One millisecond.
    #[serde(rename = "1ms")]
    Milli,
    /// One second (for example MySQL `DATETIME` without fractions).
    #[serde(rename = "1s")]
    Second,
}

impl Resolution {
    /// Its step in microseconds.
    pub const fn micros(self) -> i64 {
        match self {
            Resolution::Micro => 1,
            Resolution::Milli => 1_000,
            Resolution::Second => 1_000_000,
        }
    }

    /// `at` truncated toward the past to a whole step (an instant before
    /// the epoch goes to the earlier step, as a truncating clock would).
    pub fn truncate(self, at: Instant) -> Instant {
        let step = self.micros();
        Instant::from_unix_micros(at.unix_micros().div_euclid(step) * step)
    }

    /// `phase` with its clock truncated, as the statements of that step
    /// see it.
    pub fn phase(self, phase: Phase) -> Phase {
        match phase {
            Phase::Step { index, now } => Phase::Step { index, now: self.truncate(now) },
            other => other,
        }
    }

    /// Every instant bound by `call`, truncated.
    pub fn call(self, call: Call) -> Call {
        let t = |i: Instant| self.truncate(i);
        let guard = |g: ReapGuard| ReapGuard { cutoff: t(g.cutoff), ..g };
        match call {
            Call::InsertJob(r) => Call::InsertJob(JobRow {
                heartbeat_at: r.heartbeat_at.map(t),
                run_at: t(r.run_at),
                updated_at: t(r.updated_at),
                failed_at: r.failed_at.map(t),
                completed_at: r.completed_at.map(t),
                ..r
            }),
            Call::InsertLease(l) => Call::InsertLease(LeaseRow { expires_at: t(l.expires_at), ..l }),
            Call::Claim { id, token, claim_timeout, now, retake } => Call::Claim {
                id,
                token,
                claim_timeout,
                now: t(now),
                retake: retake
                    .map(|r| crate::engine::Retake { beat_cutoff: t(r.beat_cutoff), claim_cutoff: t(r.claim_cutoff) }),
            },
            Call::Heartbeat { id, token, now } => Call::Heartbeat { id, token, now: t(now) },
            Call::Complete { id, token, now } => Call::Complete { id, token, now: t(now) },
            Call::FailRetry { id, token, attempts, now, run_at } => {
                Call::FailRetry { id, token, attempts, now: t(now), run_at: t(run_at) }
            }
            Call::FailFinal { id, token, attempts, now } => Call::FailFinal { id, token, attempts, now: t(now) },
            Call::ReapScan { now, queues } => Call::ReapScan { now: t(now), queues },
            Call::ReapRetry { guard: g, now, run_at } => {
                Call::ReapRetry { guard: guard(g), now: t(now), run_at: t(run_at) }
            }
            Call::ReapInterrupt { guard: g, now } => Call::ReapInterrupt { guard: guard(g), now: t(now) },
            Call::ReapFail { guard: g, now } => Call::ReapFail { guard: guard(g), now: t(now) },
            Call::LeaseAcquire { name, token, expires_at } => {
                Call::LeaseAcquire { name, token, expires_at: t(expires_at) }
            }
            Call::LeaseTakeover { name, token, now, expires_at } => {
                Call::LeaseTakeover { name, token, now: t(now), expires_at: t(expires_at) }
            }
            Call::LeaseDefer { id, token, name, now } => Call::LeaseDefer { id, token, name, now: t(now) },
            Call::LeaseRenew { name, token, expires_at } => Call::LeaseRenew { name, token, expires_at: t(expires_at) },
            other @ (Call::SetTimeZone { .. }
            | Call::CreateSchema
            | Call::ReadAttempt { .. }
            | Call::LeaseRelease { .. }
            | Call::ReadJobs
            | Call::ReadLeases) => other,
        }
    }
}

impl fmt::Display for Resolution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Resolution::Micro => "1us",
            Resolution::Milli => "1ms",
            Resolution::Second => "1s",
        })
    }
}

/// An engine whose bound instants are truncated to `resolution` first.
pub struct Resolved<E> {
    inner: E,
    resolution: Resolution,
}

impl<E: Engine> Resolved<E> {
    /// `inner`, seen through a clock of `resolution`.
    pub fn new(inner: E, resolution: Resolution) -> Self {
        Resolved { inner, resolution }
    }

    /// The wrapped engine.
    pub fn into_inner(self) -> E {
        self.inner
    }
}

impl<E: Engine> Engine for Resolved<E> {
    async fn call(&mut self, call: Call) -> Result<Reply, EngineError> {
        self.inner.call(self.resolution.call(call)).await
    }

    fn mark(&mut self, phase: Phase) {
        self.inner.mark(self.resolution.phase(phase));
    }

    async fn end_setup(&mut self) -> Result<(), EngineError> {
        self.inner.end_setup().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Duration;

    fn at(micros: i64) -> Instant {
        Instant::from_unix_micros(micros)
    }

    #[test]
    fn truncation_goes_toward_the_past_at_every_step() {
        assert_eq!(Resolution::Second.truncate(at(1_999_999)), at(1_000_000));
        assert_eq!(Resolution::Second.truncate(at(-1)), at(-1_000_000));
        assert_eq!(Resolution::Milli.truncate(at(1_999_999)), at(1_999_000));
        assert_eq!(Resolution::Micro.truncate(at(1_999_999)), at(1_999_999));
    }

    /// A beat 30.5 s before 12:00:00.7 is past the strict 30 s scan floor
    /// at 1us; on a whole-second clock the beat is 11:59:30 and the clock
    /// 12:00:00, exactly 30 s: not past it, as a whole-second queue sees it.
    #[tokio::test]
    async fn the_model_at_one_second_sees_what_a_whole_second_queue_sees() {
        let scenario: crate::scenario::Scenario = serde_saphyr::from_str(
            "description: d\nnow: 2026-01-15T12:00:00.7Z\nclasses: { C: {} }\n\
             jobs: [ { id: a, class: C, status: processing, attempts: 1, claimed: -10m, heartbeat: -30.5s } ]\n\
             steps: [ scan ]\n",
        )
        .unwrap();
        let schema = scenario.schema;
        let exact = crate::driver::run(&scenario, &mut crate::model::Model::new(schema), None).await.unwrap();
        let mut whole = Resolved::new(crate::model::Model::new(schema), Resolution::Second);
        let seconds = crate::driver::run(&scenario, &mut whole, None).await.unwrap();
        use crate::outcome::StepResult::Scan;
        assert_eq!(exact.steps, vec![Some(Scan(vec!["a".into()]))]);
        assert_eq!(seconds.steps, vec![Some(Scan(vec![]))]);
        assert_eq!(seconds.jobs["a"].heartbeat_at, Some(Duration::from_micros(-30_700_000)), "relative to 12:00:00.7");
    }

    #[test]
    fn every_bound_instant_of_a_call_is_truncated() {
        let now = at(10_500_000);
        let guard = ReapGuard { id: "a".into(), attempts: 1, cutoff: now - Duration::from_secs(5) };
        let call = Call::ReapRetry { guard, now, run_at: now + Duration::from_secs(4) };
        match Resolution::Second.call(call) {
            Call::ReapRetry { guard, now, run_at } => {
                assert_eq!((guard.cutoff, now, run_at), (at(5_000_000), at(10_000_000), at(14_000_000)));
            }
            other => panic!("changed the call: {other:?}"),
        }
    }
}
