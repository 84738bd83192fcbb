//! `race --directed`: the race's operations in one fixed interleaving, each
//! on its own connection to one namespace, so that a reap guard missing its
//! `status` or its `attempts` check (spec "reap" step 4) is caught on every
//! run, on every target, whatever the machine's load. The random
//! [`super::workload`] explores; this one proves.
//!
//! Every job (idempotent, so a death is retried) goes through one of two
//! interleavings of four tasks: worker 0 claims it and beats once, then
//! dies; reaper 0, whose clock runs [`SKEW`] seconds ahead (a host with a
//! fast clock), scans and sees the attempt past its grace; reaper 1, on
//! the true clock, scans after the grace and reaps it (`reap_retry`):
//!
//! - **A (even rounds)**: worker 1 claims the job again once its backoff is
//!   over, and only then reaper 0 applies its reap for the attempt it
//!   scanned. Its cutoff, from its fast clock, is past the new claim: only
//!   the `attempts` check stops it from reclaiming the live attempt 2.
//! - **B (odd rounds)**: reaper 0 applies while the job is pending again,
//!   before worker 1 claims it; the row still has the scanned attempts and
//!   an old last-seen: only the `status` check stops a second reclaim.
//!
//! Worker 1 then beats and completes. Each operation's `now` is set by the
//! script, not read from a clock (round k starts [`ROUND`] seconds after
//! round k - 1), and each is awaited before the next starts, so the history
//! is the same on every run; [`super::check`] judges it as it judges a
//! random race. With the shipped dialects every rule holds; with either
//! check missing, every round of its kind reclaims one death twice.

use super::check::Expectations;
use super::history::{Entry, Op, Res, Scanned, Task};
use super::workload::{self, GRACE, Place, Race, RaceError, TIMEOUT};
use crate::backend::Connection;
use crate::dialect::Dialect;
use crate::engine::{Call, Engine};
use crate::scenario::Schema;
use crate::sql::SqlEngine;
use crate::time::{Duration, Instant};

/// Seconds reaper 0's clock runs ahead of the others'.
pub const SKEW: i64 = 90;
/// Seconds between the starts of two rounds: more than one round lasts.
pub const ROUND: i64 = 200;

/// What the checker must be told about a directed race of `rounds` jobs.
pub fn expectations(rounds: u32) -> Expectations {
    workload::expectations_of((0..rounds).map(job))
}

/// The job of round `k`: even ids are idempotent ([`workload`]'s classes).
fn job(k: u32) -> String {
    workload::job_id(k.saturating_mul(2))
}

/// Runs `rounds` rounds (1 to 1000) on `place` with `dialect`'s
/// statements; the namespace is dropped afterwards, also when a statement
/// failed.
pub async fn run(place: Place<'_>, dialect: &Dialect, rounds: u32) -> Result<Race, RaceError> {
    workload::in_namespace(&place, dialect, async |admin, namespace| {
        let started = std::time::Instant::now();
        // Whole seconds: exact at every dialect's resolution.
        let now = Instant::from_chrono(chrono::Utc::now()).unix_micros();
        let origin = Instant::from_unix_micros(now.div_euclid(1_000_000) * 1_000_000);
        workload::set_up(admin, dialect, namespace, (0..rounds).map(job), origin).await?;
        let mut conns = workload::task_connections(&place, dialect, namespace, 4).await?;
        let mut script = Script { dialect, history: Vec::new(), seq: 0 };
        let [w0, w1, r0, r1] = conns.as_mut_slice() else { unreachable!("four connections were opened") };
        for k in 0..rounds {
            let base = origin + Duration::from_secs(i64::from(k + 1) * ROUND);
            script.round(k, base, [w0, w1, r0, r1]).await;
        }
        for conn in conns {
            conn.close().await;
        }
        let rows = workload::final_rows(admin, dialect).await?;
        Ok(Race { history: script.history, rows, elapsed: started.elapsed().as_secs_f64() })
    })
    .await
}

/// The history being written, one awaited operation after another.
struct Script<'d> {
    dialect: &'d Dialect,
    history: Vec<Entry>,
    seq: u64,
}

impl Script<'_> {
    /// Runs `call` on `conn` as `task` and records it as `op`.
    async fn record(&mut self, conn: &mut Connection, task: Task, op: Op, call: Call) -> Res {
        let start = self.seq;
        let res = workload::res_of(SqlEngine::new(self.dialect, Schema::Standard, conn).call(call).await);
        self.seq += 2;
        self.history.push(Entry { task, start, end: start + 1, op, res: res.clone() });
        res
    }

    fn note(&mut self, task: Task, op: Op) {
        self.history.push(Entry { task, start: self.seq, end: self.seq, op, res: Res::Nothing });
        self.seq += 1;
    }

    /// Round `k` from `base` (see the module docs); a statement that
    /// fails is recorded and the round goes on, as a real task would.
    async fn round(&mut self, k: u32, base: Instant, [w0, w1, r0, r1]: [&mut Connection; 4]) {
        let id = job(k);
        let at = |s: i64| base + Duration::from_secs(s);
        let (first, second) = (format!("w0.{k}"), format!("w1.{k}"));
        self.claim(w0, Task::Worker(0), &id, &first, at(0)).await;
        self.beat(w0, Task::Worker(0), &id, &first, at(0)).await;
        self.note(Task::Worker(0), Op::Die { job: id.clone(), token: first });
        // Reaper 0 on its fast clock: the attempt is past its grace.
        let early = self.scan(r0, Task::Reaper(0), at(SKEW), &id).await;
        // Reaper 1 on the true clock, after the grace: it reclaims it.
        let late = self.scan(r1, Task::Reaper(1), at(GRACE + 1), &id).await;
        let retried_at = at(GRACE + 1);
        if let Some(row) = late {
            self.reap(r1, Task::Reaper(1), &row, retried_at).await;
        }
        let (_, class) = workload::class_of(&id);
        let claimable = retried_at + Duration::from_secs(class.backoff(1));
        if k % 2 == 0 {
            // A: the job is claimed again before reaper 0 applies.
            self.claim(w1, Task::Worker(1), &id, &second, claimable).await;
            if let Some(row) = &early {
                self.reap(r0, Task::Reaper(0), row, at(SKEW)).await;
            }
        } else {
            // B: reaper 0 applies while the job is pending again.
            if let Some(row) = &early {
                self.reap(r0, Task::Reaper(0), row, at(SKEW)).await;
            }
            self.claim(w1, Task::Worker(1), &id, &second, claimable).await;
        }
        self.beat(w1, Task::Worker(1), &id, &second, claimable + Duration::from_secs(1)).await;
        let done = claimable + Duration::from_secs(2);
        let op = Op::Complete { job: id.clone(), token: second.clone(), now: done };
        self.record(w1, Task::Worker(1), op, Call::Complete { id, token: second, now: done }).await;
    }

    async fn claim(&mut self, conn: &mut Connection, task: Task, id: &str, token: &str, now: Instant) {
        let (id, token) = (id.to_owned(), token.to_owned());
        let op = Op::Claim { job: id.clone(), token: token.clone(), now };
        self.record(conn, task, op, Call::Claim { id, token, claim_timeout: TIMEOUT, now, retake: None }).await;
    }

    async fn beat(&mut self, conn: &mut Connection, task: Task, id: &str, token: &str, now: Instant) {
        let (id, token) = (id.to_owned(), token.to_owned());
        let op = Op::Beat { job: id.clone(), token: token.clone(), now };
        self.record(conn, task, op, Call::Heartbeat { id, token, now }).await;
    }

    /// `reap_scan` at `now`; the row of job `id` it returned, if any.
    async fn scan(&mut self, conn: &mut Connection, task: Task, now: Instant, id: &str) -> Option<Scanned> {
        let res = self.record(conn, task, Op::Scan { now }, Call::ReapScan { now, queues: None }).await;
        let Res::Scanned(rows) = res else { return None };
        rows.into_iter().find(|r| r.job == id)
    }

    /// The guarded reap of the scanned `row` at `now`, as a reaper task
    /// does it ([`workload::reap_of`]).
    async fn reap(&mut self, conn: &mut Connection, task: Task, row: &Scanned, now: Instant) {
        let (op, call) = workload::reap_of(row, now);
        self.record(conn, task, op, call).await;
    }
}
