//! The storage contract: the operations the driver asks of a store, one per
//! named SQL statement of a dialect. The reference model answers them in
//! Rust; a SQL engine answers them by running the dialect's statement.

use crate::outcome::{LastError, Status};
use crate::time::Instant;

/// A value bound to, or read from, a statement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// Text.
    Text(String),
    /// A 64-bit integer.
    Int(i64),
    /// An instant.
    Instant(Instant),
    /// SQL NULL of the given kind (drivers that type their parameters need it).
    Null(Kind),
}

/// The kind of a bound or returned value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Text.
    Text,
    /// A 64-bit integer.
    Int,
    /// An instant.
    Instant,
}

impl Value {
    /// Text, or NULL.
    pub fn opt_text(v: Option<&str>) -> Value {
        v.map_or(Value::Null(Kind::Text), |s| Value::Text(s.to_owned()))
    }

    /// An integer, or NULL.
    pub fn opt_int(v: Option<i64>) -> Value {
        v.map_or(Value::Null(Kind::Int), Value::Int)
    }

    /// An instant, or NULL.
    pub fn opt_instant(v: Option<Instant>) -> Value {
        v.map_or(Value::Null(Kind::Instant), Value::Instant)
    }
}

/// A row of `jobs` as written at setup (and as the model holds it).
#[derive(Clone, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct JobRow {
    pub id: String,
    pub class: String,
    pub queue: String,
    pub status: Status,
    pub attempts: i64,
    pub max_retries: i64,
    pub claim_timeout: Option<i64>,
    pub claim_token: Option<String>,
    pub heartbeat_at: Option<Instant>,
    pub run_at: Instant,
    pub updated_at: Instant,
    pub failed_at: Option<Instant>,
    pub completed_at: Option<Instant>,
    pub last_error: Option<LastError>,
}

/// A job as read back at the end: exactly the columns an outcome shows.
#[derive(Clone, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct JobState {
    pub id: String,
    pub status: Status,
    pub attempts: i64,
    pub claim_token: Option<String>,
    pub heartbeat_at: Option<Instant>,
    pub run_at: Instant,
    pub updated_at: Instant,
    pub failed_at: Option<Instant>,
    pub completed_at: Option<Instant>,
    pub last_error: Option<LastError>,
}

impl From<&JobRow> for JobState {
    fn from(r: &JobRow) -> JobState {
        JobState {
            id: r.id.clone(),
            status: r.status,
            attempts: r.attempts,
            claim_token: r.claim_token.clone(),
            heartbeat_at: r.heartbeat_at,
            run_at: r.run_at,
            updated_at: r.updated_at,
            failed_at: r.failed_at,
            completed_at: r.completed_at,
            last_error: r.last_error,
        }
    }
}

/// A row of `job_leases`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct LeaseRow {
    pub name: String,
    pub owner: String,
    pub expires_at: Instant,
}

/// A row a reaper's scan found.
#[derive(Clone, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct Candidate {
    pub id: String,
    pub class: String,
    pub attempts: i64,
    pub max_retries: i64,
    pub claim_timeout: Option<i64>,
    /// `CASE WHEN heartbeat_at IS NULL THEN 0 ELSE 1 END`, computed by the store.
    pub has_beat: bool,
    /// `last_seen`, for `reapcheck explain` only: the model fills it, SQL
    /// stores leave it empty, and the driver never decides anything by it.
    pub last_seen: Option<Instant>,
}

/// The guard of a reap UPDATE: the row as scanned, and the staleness cutoff.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReapGuard {
    /// The job.
    pub id: String,
    /// `attempts` as scanned.
    pub attempts: i64,
    /// The row must still have `last_seen < cutoff`.
    pub cutoff: Instant,
}

/// What a claim may re-take under `recovery = next_claim` (docs/policy.md):
/// a processing row whose `last_seen` is stale against the cutoff for its
/// kind (`has_beat` or not), compared as the policy's staleness says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retake {
    /// `now - window` for an attempt that beat.
    pub beat_cutoff: Instant,
    /// `now - window` for an attempt that never beat.
    pub claim_cutoff: Instant,
}

/// One operation of the contract. Each has a statement of the same name in
/// every dialect (see `dialect::contract`).
#[derive(Clone, Debug)]
#[allow(missing_docs)]
pub enum Call {
    /// Sets the connection's time zone (a no-op where the store has none).
    SetTimeZone {
        zone: String,
    },
    /// Creates the tables.
    CreateSchema,
    InsertJob(JobRow),
    InsertLease(LeaseRow),
    /// `pending` and due -> `processing`, attempts + 1, heartbeat cleared;
    /// with `retake`, also a processing row whose attempt is stale.
    Claim {
        id: String,
        token: String,
        claim_timeout: i64,
        now: Instant,
        retake: Option<Retake>,
    },
    /// `heartbeat_at = now` (legacy: `updated_at`) for the live attempt.
    Heartbeat {
        id: String,
        token: String,
        now: Instant,
    },
    /// `completed` for the live attempt.
    Complete {
        id: String,
        token: String,
        now: Instant,
    },
    /// The live attempt's `attempts` and `max_retries`.
    ReadAttempt {
        id: String,
        token: String,
    },
    /// The worker's failure with retries left.
    FailRetry {
        id: String,
        token: String,
        attempts: i64,
        now: Instant,
        run_at: Instant,
    },
    /// The worker's failure with none left.
    FailFinal {
        id: String,
        token: String,
        attempts: i64,
        now: Instant,
    },
    /// The reaper's scan: `processing` rows silent past the 30 s floor.
    ReapScan {
        now: Instant,
        queues: Option<Vec<String>>,
    },
    /// Guarded: back to `pending`.
    ReapRetry {
        guard: ReapGuard,
        now: Instant,
        run_at: Instant,
    },
    /// Guarded: `interrupted`.
    ReapInterrupt {
        guard: ReapGuard,
        now: Instant,
    },
    /// Guarded: `failed`.
    ReapFail {
        guard: ReapGuard,
        now: Instant,
    },
    /// Insert the lease if nobody holds it.
    LeaseAcquire {
        name: String,
        token: String,
        expires_at: Instant,
    },
    /// Take the lease over if it expired before `now`.
    LeaseTakeover {
        name: String,
        token: String,
        now: Instant,
        expires_at: Instant,
    },
    /// Give the claim back until the busy lease lapses.
    LeaseDefer {
        id: String,
        token: String,
        name: String,
        now: Instant,
    },
    /// Extend the attempt's own lease.
    LeaseRenew {
        name: String,
        token: String,
        expires_at: Instant,
    },
    /// Delete the attempt's own lease.
    LeaseRelease {
        name: String,
        token: String,
    },
    /// Every job row.
    ReadJobs,
    /// Every lease row.
    ReadLeases,
}

impl Call {
    /// The operation's clock, for the calls that bind `:now`.
    pub fn now(&self) -> Option<Instant> {
        match self {
            Call::Claim { now, .. }
            | Call::Heartbeat { now, .. }
            | Call::Complete { now, .. }
            | Call::FailRetry { now, .. }
            | Call::FailFinal { now, .. }
            | Call::ReapScan { now, .. }
            | Call::ReapRetry { now, .. }
            | Call::ReapInterrupt { now, .. }
            | Call::ReapFail { now, .. }
            | Call::LeaseTakeover { now, .. }
            | Call::LeaseDefer { now, .. } => Some(*now),
            Call::SetTimeZone { .. }
            | Call::CreateSchema
            | Call::InsertJob(_)
            | Call::InsertLease(_)
            | Call::ReadAttempt { .. }
            | Call::LeaseAcquire { .. }
            | Call::LeaseRenew { .. }
            | Call::LeaseRelease { .. }
            | Call::ReadJobs
            | Call::ReadLeases => None,
        }
    }
}

/// What a call returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// Statements with no result: schema, setup, time zone.
    Done,
    /// Rows changed.
    Changed(u64),
    /// `ReadAttempt`: attempts and max_retries, when the attempt is live.
    Attempt(Option<(i64, i64)>),
    /// `ReapScan`, in order of id.
    Candidates(Vec<Candidate>),
    /// `ReadJobs`, in order of id.
    Jobs(Vec<JobState>),
    /// `ReadLeases`, in order of name.
    Leases(Vec<LeaseRow>),
}

/// Where the driver is in a scenario, so that a store logging its
/// statements can say which step ran each one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Creating the tables and inserting the setup rows.
    Setup,
    /// Step `index` (0-based) of the scenario's `steps`, run at clock `now`.
    Step {
        /// The step's position in `steps`, from 0.
        index: usize,
        /// The scenario clock when the step ran.
        now: Instant,
    },
    /// Reading the state back after a step, only to compare stores step by
    /// step (trace mode); not part of the scenario.
    Checkpoint,
    /// Reading the final state back for the outcome.
    ReadBack,
    /// Dropping the scenario's namespace.
    Teardown,
}

/// A store that answers the contract: the model or a database.
pub trait Engine {
    /// Runs one operation.
    fn call(&mut self, call: Call) -> impl Future<Output = Result<Reply, EngineError>>;

    /// Notes where the driver is; calls that follow belong to `phase`. A
    /// store that keeps no log ignores it.
    fn mark(&mut self, _phase: Phase) {}

    /// Ends the setup: sends the rows it held back and commits them (a SQL
    /// engine's setup transaction, `SqlEngine::with_setup_transaction`), so
    /// an error in them is the setup's. A store that holds nothing back
    /// has nothing to do; otherwise the next call would do it first.
    fn end_setup(&mut self) -> impl Future<Output = Result<(), EngineError>> {
        std::future::ready(Ok(()))
    }
}

/// A store that failed to answer.
#[derive(Debug, thiserror::Error)]
#[error("{statement}: {kind}")]
pub struct EngineError {
    /// The statement that failed.
    pub statement: &'static str,
    /// What went wrong.
    #[source]
    pub kind: EngineErrorKind,
}

/// The kinds of store failure.
#[derive(Debug, thiserror::Error)]
pub enum EngineErrorKind {
    /// The database answered with an error.
    #[error("the database refused it: {0}")]
    Database(String),
    /// The connection broke.
    #[error("the connection was lost: {0}")]
    Connection(String),
    /// A returned row did not have the declared columns or types.
    #[error("unexpected result: {0}")]
    Decode(String),
    /// The driver would compute an instant outside the declared range
    /// (`Instant::MIN..=Instant::MAX`); `check` refuses such scenarios, so
    /// this is a scenario made without it.
    #[error("{0} leaves the range every backend stores: run `reapcheck check` on the scenario")]
    OutOfRange(String),
    /// The run was stopped by a signal (`SIGINT`, `SIGTERM`) before it
    /// finished ([`crate::interrupt`]).
    #[error("interrupted by {0} before it finished")]
    Interrupted(&'static str),
    /// The statement ran past the time limit (`crate::deadline`,
    /// `--statement-timeout`, seconds): `timed out after N s`, with the
    /// statement's `file:line` where the SQL engine knows it.
    #[error("{0}: raise --statement-timeout if the statement is meant to run this long")]
    TimedOut(String),
    /// A namespace script ran without an error but did not do its job (a
    /// namespace still listed after `drop_namespace`, a session elsewhere
    /// after `enter_namespace`): what the catalog showed, with the
    /// script's `file:line` (`crate::isolation::NamespaceFault`).
    #[error("{0}")]
    Namespace(String),
    /// reapcheck itself panicked while running the scenario: the message.
    #[error("reapcheck panicked: {0}; this is a bug in reapcheck, please report it with the scenario")]
    Panicked(String),
}
