//! What can be wrong with a scenario file.

use std::fmt;
use std::path::PathBuf;

use super::located::Position;

/// A scenario file that cannot run, with the place to fix it.
#[derive(Debug, thiserror::Error)]
pub struct ScenarioError {
    /// The file.
    pub path: PathBuf,
    /// Where in it, when known.
    pub position: Option<Position>,
    /// What is wrong.
    #[source]
    pub kind: ScenarioErrorKind,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.position {
            Some(p) => write!(f, "{}:{}:{}: {}", self.path.display(), p.line, p.column, self.kind),
            None => write!(f, "{}: {}", self.path.display(), self.kind),
        }
    }
}

/// The kinds of scenario error.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioErrorKind {
    /// The file could not be read.
    #[error("cannot read the file: {0}")]
    Read(#[from] std::io::Error),
    /// The YAML does not match the scenario format.
    #[error("{0}")]
    Format(String),
    /// Two jobs share an id.
    #[error("duplicate job id `{0}`: give each job its own id")]
    DuplicateJob(String),
    /// A job entry's `count` is 0 or above the maximum.
    #[error("invalid count {count}: a job entry stands for 1 to {max} rows")]
    BadCount {
        /// The count given.
        count: u64,
        /// The largest count allowed.
        max: u64,
    },
    /// A job names a class the scenario does not declare.
    #[error("unknown class `{class}`: declare it under `classes` (declared: {declared})")]
    UnknownClass {
        /// The class named.
        class: String,
        /// The classes declared, comma-separated.
        declared: String,
    },
    /// A step or an expectation names a job that does not exist.
    #[error("unknown job `{job}`: the jobs are {known}")]
    UnknownJob {
        /// The job named.
        job: String,
        /// The job ids, comma-separated.
        known: String,
    },
    /// A step names an attempt that no claim of the job can make.
    #[error(
        "unknown attempt `{attempt}` of job `{job}`: use `{job}/<n>` or a label given with `as:` on a claim of `{job}`"
    )]
    UnknownAttempt {
        /// The job.
        job: String,
        /// The attempt label named.
        attempt: String,
    },
    /// An `as:` label is used twice for one job, or clashes with `<job>/<n>`.
    #[error("attempt label `{0}` is already used for this job: choose another")]
    DuplicateLabel(String),
    /// A legacy-schema scenario sets a heartbeat, which has no column there.
    #[error("the legacy schema has no `heartbeat_at`: remove `heartbeat` or use `schema: standard`")]
    HeartbeatOnLegacy,
    /// A queue list is empty or a queue name cannot be passed to SQL.
    #[error("invalid queue `{0}`: queue names are non-empty and contain no comma")]
    BadQueue(String),
    /// `queues: []` would reap nothing.
    #[error("`queues` is empty: name at least one queue, or omit it for all")]
    EmptyQueues,
    /// A divergence names no known target.
    #[error("unknown target `{target}` under `divergence`: the targets are {known}")]
    UnknownTarget {
        /// The name given.
        target: String,
        /// The known target names.
        known: String,
    },
    /// `session_time_zone` is neither an IANA name nor an offset.
    #[error(
        "invalid session_time_zone `{0}`: write an IANA name such as `America/New_York` or an offset such as `+05:30`"
    )]
    BadTimeZone(String),
    /// `app_time_zone` is not an IANA name.
    #[error(
        "invalid app_time_zone `{0}`: write an IANA name such as `America/New_York` (the adapter's `TZ`; offsets are not zones)"
    )]
    BadAppTimeZone(String),
    /// An instant the run would compute leaves the declared range.
    #[error(
        "{what} leaves the range every backend stores ({min} to {max}): move the clock or the value back inside it",
        min = crate::time::Instant::MIN,
        max = crate::time::Instant::MAX
    )]
    OutOfRange {
        /// The instant, in words.
        what: String,
    },
    /// Two lease rows share a name (`job_leases.name` is unique).
    #[error("duplicate lease name `{0}`: give each lease row its own name")]
    DuplicateLease(String),
    /// An attempt label spells a numbered attempt another way (`a/01`, `a/+1`).
    #[error("attempt label `{given}` is not canonical: write `{canonical}` (a number without sign or leading zeros)")]
    NonCanonicalAttempt {
        /// The label given.
        given: String,
        /// How to write it.
        canonical: String,
    },
    /// The file is not valid UTF-8.
    #[error("the file is not UTF-8: invalid byte at offset {offset}: save it as UTF-8")]
    NotUtf8 {
        /// The byte offset of the first invalid byte, from 0.
        offset: usize,
    },
    /// The path is not a regular file (a FIFO, a device, a socket).
    #[error("not a regular file: scenario files must be regular files (or symlinks to one)")]
    NotRegularFile,
    /// The file is larger than the limit.
    #[error("the file has {size} bytes, more than the {limit} a scenario may have: split it")]
    TooLarge {
        /// Its size in bytes.
        size: u64,
        /// The limit in bytes.
        limit: u64,
    },
    /// A `.yml` file where scenarios end in `.yaml`.
    #[error("scenario files end in `.yaml`, so this `.yml` file would not run: rename it to `{0}`")]
    YmlExtension(String),
    /// A name or the description is longer than a scenario may have.
    #[error("the {what} has {bytes} bytes, more than the {max} a scenario may have: shorten it")]
    TooLong {
        /// What the text is (`job id`, `queue`, ...).
        what: String,
        /// Its length in bytes.
        bytes: usize,
        /// The limit in bytes.
        max: usize,
    },
    /// More job rows than a scenario may have.
    #[error("the jobs have {rows} rows, more than the {max} a scenario may have: use fewer rows (a smaller `count`)")]
    TooManyRows {
        /// The rows counted up to this entry.
        rows: usize,
        /// The limit.
        max: usize,
    },
    /// More lease rows than a scenario may have.
    #[error("the setup has {rows} lease rows, more than the {max} a scenario may have: use fewer")]
    TooManyLeaseRows {
        /// The lease rows.
        rows: usize,
        /// The limit.
        max: usize,
    },
    /// More steps than a scenario may have.
    #[error("the scenario has {steps} steps, more than the {max} a scenario may have: split it into several scenarios")]
    TooManySteps {
        /// The steps.
        steps: usize,
        /// The limit.
        max: usize,
    },
    /// The run's checkpoints (the state after every step) would pass the memory limit.
    #[error(
        "the run's checkpoints would hold about {} MiB by this step (every row is read back after every step), more than the {} MiB a scenario may use: use fewer rows or fewer steps, or split the scenario",
        bytes.div_ceil(1 << 20),
        max >> 20
    )]
    TooHeavy {
        /// The estimate in bytes (see `scenario::checkpoint_bytes`).
        bytes: u64,
        /// The limit in bytes.
        max: u64,
    },
    /// `expect.steps` does not have one entry per step.
    #[error(
        "expect.steps has {given} entries but the scenario has {steps} steps: give one per step, null to match any"
    )]
    ExpectStepCount {
        /// Entries given.
        given: usize,
        /// Steps in the scenario.
        steps: usize,
    },
}
