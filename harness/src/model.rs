//! The reference model: the storage contract answered in plain Rust, with no
//! I/O. Together with the driver it is the oracle every dialect must match:
//! each arm below is what the same-named SQL statement must do.

use std::collections::BTreeMap;

use crate::engine::{Call, Candidate, Engine, EngineError, JobRow, JobState, LeaseRow, ReapGuard, Reply};
use crate::outcome::{LastError, Status};
use crate::policy::{ClaimWindow, Fence, Policy, ScanFloor};
use crate::rules::{SCAN_FLOOR_SECONDS, defer_seconds};
use crate::scenario::Schema;
use crate::time::{Duration, Instant};

/// The tables, in memory.
#[derive(Clone, Debug)]
pub struct Model {
    schema: Schema,
    policy: Policy,
    jobs: BTreeMap<String, JobRow>,
    leases: BTreeMap<String, LeaseRow>,
}

impl Model {
    /// Empty tables of the given shape, under the reference policy.
    pub fn new(schema: Schema) -> Model {
        Model::under(schema, &Policy::default())
    }

    /// Empty tables of the given shape whose statements follow `policy`
    /// (docs/policy.md): its staleness comparison (`<` or `<=`) in the scan
    /// floor and the reap guard, its scan floor, a claim that writes
    /// `heartbeat_at` when there is no claim window, and its fence.
    pub fn under(schema: Schema, policy: &Policy) -> Model {
        Model { schema, policy: policy.clone(), jobs: BTreeMap::new(), leases: BTreeMap::new() }
    }

    /// Whether a claim writes `heartbeat_at` (`claim_window = none`, on a
    /// table that has the column). A setup row claimed before the scenario
    /// gets its beat from the driver ([`Policy::setup_heartbeat`]), as
    /// every store does.
    fn claim_beats(&self) -> bool {
        self.policy.claim_window == ClaimWindow::None && self.schema == Schema::Standard
    }

    /// `COALESCE(heartbeat_at, updated_at)`; `updated_at` alone on the legacy table.
    fn last_seen(&self, row: &JobRow) -> Instant {
        match self.schema {
            Schema::Standard => row.heartbeat_at.unwrap_or(row.updated_at),
            Schema::Legacy => row.updated_at,
        }
    }

    /// The row of the live attempt `token` of job `id`, if it is live
    /// (under `fence = none`, any processing row of the job).
    fn live(&mut self, id: &str, token: &str) -> Option<&mut JobRow> {
        let unfenced = self.policy.fence == Fence::None;
        self.jobs
            .get_mut(id)
            .filter(|r| r.status == Status::Processing && (unfenced || r.claim_token.as_deref() == Some(token)))
    }

    /// The row a reap UPDATE may change: still processing, still the scanned
    /// attempt (unless `fence = none`), and still silent since before the
    /// cutoff (`<`, or `<=` under `staleness = "<="`).
    fn reapable(&mut self, guard: &ReapGuard) -> Option<&mut JobRow> {
        let row = self.jobs.get(&guard.id)?;
        let stale = self.policy.staleness.is_stale(self.last_seen(row), guard.cutoff);
        let same_attempt = self.policy.fence == Fence::None || row.attempts == guard.attempts;
        if row.status == Status::Processing && same_attempt && stale { self.jobs.get_mut(&guard.id) } else { None }
    }

    fn answer(&mut self, call: Call) -> Reply {
        match call {
            Call::SetTimeZone { .. } | Call::CreateSchema => Reply::Done,
            Call::InsertJob(row) => {
                self.jobs.insert(row.id.clone(), row);
                Reply::Done
            }
            Call::InsertLease(lease) => {
                self.leases.insert(lease.name.clone(), lease);
                Reply::Done
            }
            Call::Claim { id, token, claim_timeout, now, retake } => {
                // With no claim window, the claim starts the heartbeat clock.
                let beat = self.claim_beats().then_some(now);
                // Under `recovery = next_claim`, a stale attempt is re-taken.
                let stale = |m: &Model, r: &JobRow| {
                    retake.is_some_and(|t| {
                        let has_beat = m.schema == Schema::Standard && r.heartbeat_at.is_some();
                        let cutoff = if has_beat { t.beat_cutoff } else { t.claim_cutoff };
                        r.status == Status::Processing && m.policy.staleness.is_stale(m.last_seen(r), cutoff)
                    })
                };
                let claimable = self
                    .jobs
                    .get(&id)
                    .is_some_and(|r| (r.status == Status::Pending && r.run_at <= now) || stale(self, r));
                changed(self.jobs.get_mut(&id).filter(|_| claimable).map(|r| {
                    r.status = Status::Processing;
                    r.attempts += 1;
                    r.updated_at = now;
                    r.claim_timeout = Some(claim_timeout);
                    r.heartbeat_at = beat;
                    r.claim_token = Some(token);
                }))
            }
            Call::Heartbeat { id, token, now } => {
                let schema = self.schema;
                changed(self.live(&id, &token).map(|r| match schema {
                    Schema::Standard => r.heartbeat_at = Some(now),
                    Schema::Legacy => r.updated_at = now,
                }))
            }
            Call::Complete { id, token, now } => changed(self.live(&id, &token).map(|r| {
                r.status = Status::Completed;
                r.completed_at = Some(now);
                r.updated_at = now;
                r.claim_token = None;
            })),
            Call::ReadAttempt { id, token } => {
                Reply::Attempt(self.live(&id, &token).map(|r| (r.attempts, r.max_retries)))
            }
            Call::FailRetry { id, token, attempts, now, run_at } => {
                changed(self.live(&id, &token).filter(|r| r.attempts == attempts).map(|r| {
                    r.status = Status::Pending;
                    r.run_at = run_at;
                    r.updated_at = now;
                    r.claim_token = None;
                    r.last_error = Some(LastError::Failed);
                }))
            }
            Call::FailFinal { id, token, attempts, now } => {
                changed(self.live(&id, &token).filter(|r| r.attempts == attempts).map(|r| {
                    finish(r, Status::Failed, now, LastError::Failed);
                }))
            }
            Call::ReapScan { now, queues } => {
                let floor = match self.policy.scan_floor {
                    ScanFloor::ThirtySeconds => Some(now - Duration::from_secs(SCAN_FLOOR_SECONDS)),
                    ScanFloor::None => None,
                };
                let staleness = self.policy.staleness;
                let candidates = self
                    .jobs
                    .values()
                    .filter(|r| r.status == Status::Processing)
                    .filter(|r| floor.is_none_or(|f| staleness.is_stale(self.last_seen(r), f)))
                    .filter(|r| queues.as_ref().is_none_or(|q| q.contains(&r.queue)))
                    .map(|r| Candidate {
                        id: r.id.clone(),
                        class: r.class.clone(),
                        attempts: r.attempts,
                        max_retries: r.max_retries,
                        claim_timeout: r.claim_timeout,
                        has_beat: self.schema == Schema::Standard && r.heartbeat_at.is_some(),
                        last_seen: Some(self.last_seen(r)),
                    })
                    .collect();
                Reply::Candidates(candidates)
            }
            Call::ReapRetry { guard, now, run_at } => changed(self.reapable(&guard).map(|r| {
                r.status = Status::Pending;
                r.run_at = run_at;
                r.updated_at = now;
                r.claim_token = None;
                r.last_error = Some(LastError::Timeout);
            })),
            Call::ReapInterrupt { guard, now } => {
                changed(self.reapable(&guard).map(|r| finish(r, Status::Interrupted, now, LastError::Timeout)))
            }
            Call::ReapFail { guard, now } => {
                changed(self.reapable(&guard).map(|r| finish(r, Status::Failed, now, LastError::Timeout)))
            }
            Call::LeaseAcquire { name, token, expires_at } => {
                if self.leases.contains_key(&name) {
                    Reply::Changed(0)
                } else {
                    self.leases.insert(name.clone(), LeaseRow { name, owner: token, expires_at });
                    Reply::Changed(1)
                }
            }
            Call::LeaseTakeover { name, token, now, expires_at } => {
                changed(self.leases.get_mut(&name).filter(|l| l.expires_at < now).map(|l| {
                    l.owner = token;
                    l.expires_at = expires_at;
                }))
            }
            Call::LeaseDefer { id, token, name, now } => {
                let left = self.leases.get(&name).map_or(0, |l| l.expires_at.since(now).as_micros());
                changed(self.live(&id, &token).map(|r| {
                    r.status = Status::Pending;
                    r.attempts -= 1;
                    r.run_at = now + Duration::from_secs(defer_seconds(left));
                    r.updated_at = now;
                    r.claim_token = None;
                }))
            }
            Call::LeaseRenew { name, token, expires_at } => {
                changed(self.leases.get_mut(&name).filter(|l| l.owner == token).map(|l| l.expires_at = expires_at))
            }
            Call::LeaseRelease { name, token } => {
                let owned = self.leases.get(&name).is_some_and(|l| l.owner == token);
                changed(owned.then(|| self.leases.remove(&name)))
            }
            Call::ReadJobs => Reply::Jobs(self.jobs.values().map(JobState::from).collect()),
            Call::ReadLeases => Reply::Leases(self.leases.values().cloned().collect()),
        }
    }
}

/// Leaves `processing` for good.
fn finish(r: &mut JobRow, status: Status, now: Instant, error: LastError) {
    r.status = status;
    r.failed_at = Some(now);
    r.updated_at = now;
    r.claim_token = None;
    r.last_error = Some(error);
}

fn changed<T>(applied: Option<T>) -> Reply {
    Reply::Changed(u64::from(applied.is_some()))
}

impl Engine for Model {
    async fn call(&mut self, call: Call) -> Result<Reply, EngineError> {
        Ok(self.answer(call))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> Instant {
        Instant::from_unix_micros(1_700_000_000_000_000) + Duration::from_secs(seconds)
    }

    fn processing(id: &str, updated: i64, beat: Option<i64>) -> JobRow {
        JobRow {
            id: id.into(),
            class: "C".into(),
            queue: "default".into(),
            status: Status::Processing,
            attempts: 1,
            max_retries: 3,
            claim_timeout: Some(300),
            claim_token: Some(format!("{id}/1")),
            heartbeat_at: beat.map(at),
            run_at: at(updated),
            updated_at: at(updated),
            failed_at: None,
            completed_at: None,
            last_error: None,
        }
    }

    fn model(schema: Schema, rows: Vec<JobRow>) -> Model {
        let mut m = Model::new(schema);
        for r in rows {
            m.answer(Call::InsertJob(r));
        }
        m
    }

    fn scan(m: &mut Model, now: i64) -> Vec<(String, bool)> {
        match m.answer(Call::ReapScan { now: at(now), queues: None }) {
            Reply::Candidates(c) => c.into_iter().map(|c| (c.id, c.has_beat)).collect(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn scan_uses_the_last_beat_over_the_claim_and_a_strict_floor() {
        let mut m = model(
            Schema::Standard,
            vec![
                processing("beat-recently", -600, Some(-10)),
                processing("beat-long-ago", 0, Some(-600)),
                processing("never", -31, None),
                processing("edge", -30, None),
            ],
        );
        assert_eq!(scan(&mut m, 0), vec![("beat-long-ago".into(), true), ("never".into(), false)]);
    }

    #[test]
    fn legacy_scan_ignores_heartbeats_it_cannot_store() {
        let mut m = model(Schema::Legacy, vec![processing("a", -600, None)]);
        assert_eq!(scan(&mut m, 0), vec![("a".into(), false)]);
        m.answer(Call::Heartbeat { id: "a".into(), token: "a/1".into(), now: at(0) });
        assert_eq!(scan(&mut m, 0), vec![]);
    }

    #[test]
    fn reap_guard_is_strict_and_checks_the_attempt() {
        let mut m = model(Schema::Standard, vec![processing("a", -600, None)]);
        let guard = |attempts, cutoff| ReapGuard { id: "a".into(), attempts, cutoff: at(cutoff) };
        assert_eq!(m.answer(Call::ReapFail { guard: guard(1, -600), now: at(0) }), Reply::Changed(0));
        assert_eq!(m.answer(Call::ReapFail { guard: guard(2, -599), now: at(0) }), Reply::Changed(0));
        assert_eq!(m.answer(Call::ReapFail { guard: guard(1, -599), now: at(0) }), Reply::Changed(1));
        assert_eq!(m.jobs["a"].status, Status::Failed);
        assert_eq!(m.jobs["a"].claim_token, None);
    }

    #[test]
    fn claim_needs_a_due_pending_row_and_clears_the_heartbeat() {
        let mut row = processing("a", -100, Some(-50));
        row.status = Status::Pending;
        row.run_at = at(10);
        let mut m = model(Schema::Standard, vec![row]);
        let claim =
            |now| Call::Claim { id: "a".into(), token: "a/1".into(), claim_timeout: 60, now: at(now), retake: None };
        assert_eq!(m.answer(claim(9)), Reply::Changed(0));
        assert_eq!(m.answer(claim(10)), Reply::Changed(1));
        assert_eq!(m.answer(claim(11)), Reply::Changed(0));
        let r = &m.jobs["a"];
        assert_eq!((r.status, r.attempts, r.heartbeat_at, r.updated_at), (Status::Processing, 2, None, at(10)));
    }

    #[test]
    fn a_stale_token_is_fenced_everywhere() {
        let mut m = model(Schema::Standard, vec![processing("a", 0, None)]);
        let old = || "a/0".to_owned();
        assert_eq!(m.answer(Call::Heartbeat { id: "a".into(), token: old(), now: at(1) }), Reply::Changed(0));
        assert_eq!(m.answer(Call::Complete { id: "a".into(), token: old(), now: at(1) }), Reply::Changed(0));
        assert_eq!(m.answer(Call::ReadAttempt { id: "a".into(), token: old() }), Reply::Attempt(None));
        assert_eq!(m.jobs["a"], processing("a", 0, None));
    }

    #[test]
    fn leases_are_taken_over_only_after_expiry_and_released_by_their_owner() {
        let mut m = Model::new(Schema::Standard);
        let acquire = |token: &str| Call::LeaseAcquire { name: "L".into(), token: token.into(), expires_at: at(100) };
        assert_eq!(m.answer(acquire("x")), Reply::Changed(1));
        assert_eq!(m.answer(acquire("y")), Reply::Changed(0));
        let takeover =
            |now| Call::LeaseTakeover { name: "L".into(), token: "y".into(), now: at(now), expires_at: at(500) };
        assert_eq!(m.answer(takeover(100)), Reply::Changed(0));
        assert_eq!(m.answer(takeover(101)), Reply::Changed(1));
        assert_eq!(m.answer(Call::LeaseRelease { name: "L".into(), token: "x".into() }), Reply::Changed(0));
        assert_eq!(m.answer(Call::LeaseRelease { name: "L".into(), token: "y".into() }), Reply::Changed(1));
        assert!(m.leases.is_empty());
    }

    #[test]
    fn defer_gives_the_attempt_back_until_the_lease_lapses() {
        let mut m = model(Schema::Standard, vec![processing("a", 0, None)]);
        m.answer(Call::InsertLease(LeaseRow {
            name: "L".into(),
            owner: "z".into(),
            expires_at: at(12) + Duration::from_micros(1),
        }));
        let reply = m.answer(Call::LeaseDefer { id: "a".into(), token: "a/1".into(), name: "L".into(), now: at(0) });
        assert_eq!(reply, Reply::Changed(1));
        let r = &m.jobs["a"];
        assert_eq!((r.status, r.attempts, r.run_at, r.claim_token.clone()), (Status::Pending, 0, at(13), None));
    }
}
