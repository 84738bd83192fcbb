//! What `reapcheck race` records: every operation its workers and reapers
//! ran, with the values bound, the result, and where it sits in real time.
//!
//! Real-time order comes from one counter shared by every task: an
//! operation takes a number when it starts (before its `now` is read) and
//! another when its reply arrived, so "A ended before B started" is
//! `a.end < b.start`. Instants are the ones bound to the statements (each
//! task's own clock, truncated to the dialect's resolution), in
//! microseconds since the epoch ([`Instant`]).

use crate::time::Instant;

/// Who ran an operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Task {
    /// Worker number n (from 0).
    Worker(u32),
    /// Reaper number n (from 0).
    Reaper(u32),
}

/// Which of the reaper's guarded UPDATEs ran (spec "reap", step 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReapKind {
    /// `reap_retry`: back to `pending`.
    Retry,
    /// `reap_interrupt`: `interrupted`.
    Interrupt,
    /// `reap_fail`: `failed`.
    Fail,
}

/// One operation, with the values it bound.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// `claim` of `job` with a fresh `token` (the attempt's fencing token).
    Claim { job: String, token: String, now: Instant },
    /// `heartbeat` of the attempt `token`.
    Beat { job: String, token: String, now: Instant },
    /// `complete` of the attempt `token`.
    Complete { job: String, token: String, now: Instant },
    /// `fail_retry` (`retry`) or `fail_final` of the attempt `token`.
    Fail { job: String, token: String, retry: bool, now: Instant },
    /// The worker running `token` stopped beating: it "died" (no statement).
    Die { job: String, token: String },
    /// `reap_scan`.
    Scan { now: Instant },
    /// A guarded reap UPDATE on (`job`, `attempts` as scanned) with
    /// `cutoff = now - window`.
    Reap { kind: ReapKind, job: String, attempts: i64, cutoff: Instant, now: Instant },
}

impl Op {
    /// The `now` the operation bound, if any.
    pub fn now(&self) -> Option<Instant> {
        match self {
            Op::Claim { now, .. }
            | Op::Beat { now, .. }
            | Op::Complete { now, .. }
            | Op::Fail { now, .. }
            | Op::Scan { now }
            | Op::Reap { now, .. } => Some(*now),
            Op::Die { .. } => None,
        }
    }

    /// The statement's name, for messages.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Claim { .. } => "claim",
            Op::Beat { .. } => "heartbeat",
            Op::Complete { .. } => "complete",
            Op::Fail { retry: true, .. } => "fail_retry",
            Op::Fail { retry: false, .. } => "fail_final",
            Op::Die { .. } => "die",
            Op::Scan { .. } => "reap_scan",
            Op::Reap { kind: ReapKind::Retry, .. } => "reap_retry",
            Op::Reap { kind: ReapKind::Interrupt, .. } => "reap_interrupt",
            Op::Reap { kind: ReapKind::Fail, .. } => "reap_fail",
        }
    }
}

/// A row `reap_scan` returned: id, attempts as scanned, has_beat.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scanned {
    /// The job.
    pub job: String,
    /// `attempts` as scanned.
    pub attempts: i64,
    /// Whether the attempt had beaten.
    pub has_beat: bool,
}

/// What an operation returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Res {
    /// An UPDATE changed this many rows.
    Changed(u64),
    /// The scan's rows.
    Scanned(Vec<Scanned>),
    /// No statement ran (`Die`).
    Nothing,
    /// The database refused the statement or the connection broke; the
    /// message, with no credential in it.
    Error(String),
}

/// One recorded operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Who ran it.
    pub task: Task,
    /// Position in real time when it started (before its `now` was read).
    pub start: u64,
    /// Position in real time when its reply arrived.
    pub end: u64,
    /// The operation.
    pub op: Op,
    /// Its result.
    pub res: Res,
}

impl Entry {
    /// True when the UPDATE changed exactly one row.
    pub fn changed(&self) -> bool {
        self.res == Res::Changed(1)
    }
}
