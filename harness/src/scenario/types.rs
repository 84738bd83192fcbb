//! The scenario document, as `docs/scenario-format.md` describes it.
//!
//! These types deserialize strictly (every struct denies unknown keys) and
//! serialize back to YAML that parses to an equal scenario, so generated
//! scenarios can be saved as files.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::located::Located;
use super::seconds;
use crate::outcome::{FailureEvent, LastError, Status, StepResult};
use crate::time::{Duration, Instant, TimeSpec};

/// The default starting clock of every scenario.
pub const DEFAULT_NOW: &str = "2026-01-15T12:00:00Z";

/// One scenario file.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// What the scenario shows, in words.
    pub description: String,
    /// The starting clock.
    #[serde(default = "default_now")]
    pub now: Instant,
    /// App-wide settings.
    #[serde(default)]
    pub settings: Settings,
    /// Which `jobs` table the scenario runs on.
    #[serde(default)]
    pub schema: Schema,
    /// A time zone set on every connection; outcomes must not change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_time_zone: Option<Located<String>>,
    /// The application's own time zone (an IANA name such as
    /// `America/New_York`): an adapter's process runs with `TZ` set to it
    /// and receives it in `setup` (docs/adapter-protocol.md). It never
    /// changes the model's outcome: a queue whose clock or cutoff
    /// arithmetic follows the local wall clock is what it catches. Unset is
    /// `UTC`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_time_zone: Option<Located<String>>,
    /// Job classes by name.
    #[serde(default)]
    pub classes: BTreeMap<String, Class>,
    /// The rows of `jobs` at setup.
    #[serde(default)]
    pub jobs: Vec<Job>,
    /// The rows of `job_leases` at setup.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub leases: Vec<Lease>,
    /// The operations, in order.
    pub steps: Vec<Located<Step>>,
    /// Assertions on the outcome, checked on every target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<Expect>,
    /// Targets that declare a reasoned difference: target name to reason.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub divergence: BTreeMap<Located<String>, String>,
}

fn default_now() -> Instant {
    Instant::parse_rfc3339(DEFAULT_NOW).expect("the default clock is valid")
}

/// App-wide settings; `set` steps change them mid-scenario.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// Seconds of silence after a heartbeat before the job counts as dead.
    #[serde(default = "default_grace", deserialize_with = "seconds::signed::plain")]
    pub heartbeat_grace: i64,
}

fn default_grace() -> i64 {
    300
}

impl Default for Settings {
    fn default() -> Self {
        Settings { heartbeat_grace: default_grace() }
    }
}

/// The shape of the `jobs` table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Schema {
    /// With `heartbeat_at`.
    #[default]
    Standard,
    /// Without `heartbeat_at`: a heartbeat writes `updated_at`.
    Legacy,
}

impl fmt::Display for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Schema::Standard => "standard",
            Schema::Legacy => "legacy",
        })
    }
}

/// Per-class settings.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Class {
    /// Seconds an attempt may run; written to `claim_timeout` at claim.
    #[serde(default = "default_timeout", deserialize_with = "seconds::signed::plain")]
    pub timeout: i64,
    /// Whether a reaped job may simply run again.
    #[serde(default = "yes")]
    pub idempotent: bool,
    /// The class's own grace; unset uses the app setting, `0` turns it off.
    #[serde(default, deserialize_with = "seconds::signed::option", skip_serializing_if = "Option::is_none")]
    pub heartbeat_grace: Option<i64>,
    /// Retries allowed after the first run.
    #[serde(default = "default_max_retries", deserialize_with = "seconds::counter::plain")]
    pub max_retries: i64,
    /// Backoff base, in seconds (0 or more).
    #[serde(default = "default_base_delay", deserialize_with = "seconds::non_negative::plain")]
    pub base_delay: i64,
    /// Backoff cap, in seconds.
    #[serde(default = "default_max_delay", deserialize_with = "seconds::signed::plain")]
    pub max_delay: i64,
    /// At most one attempt of the class runs at once.
    #[serde(default)]
    pub exclusive: bool,
    /// The lease key shared by the class's jobs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency_key: Option<String>,
    /// False when the app cannot load the class.
    #[serde(default = "yes")]
    pub loadable: bool,
}

fn default_timeout() -> i64 {
    300
}
fn yes() -> bool {
    true
}
fn default_max_retries() -> i64 {
    3
}
fn default_base_delay() -> i64 {
    2
}
fn default_max_delay() -> i64 {
    3600
}

impl Default for Class {
    fn default() -> Self {
        Class {
            timeout: default_timeout(),
            idempotent: true,
            heartbeat_grace: None,
            max_retries: default_max_retries(),
            base_delay: default_base_delay(),
            max_delay: default_max_delay(),
            exclusive: false,
            concurrency_key: None,
            loadable: true,
        }
    }
}

/// A row of `jobs` at setup.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Job {
    /// The job's key; with `count`, the prefix of its rows' keys.
    pub id: Located<String>,
    /// How many rows this entry stands for (1 to [`MAX_COUNT`]); unset is
    /// one row keyed `id`. See [`Job::ids`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<Located<u64>>,
    /// Its class; must be declared under `classes`.
    pub class: Located<String>,
    /// Its queue.
    #[serde(default = "default_queue")]
    pub queue: Located<String>,
    /// Its status.
    #[serde(default)]
    pub status: Status,
    /// Claims so far.
    #[serde(default, deserialize_with = "seconds::counter::plain")]
    pub attempts: i64,
    /// Retries allowed; unset takes the class's.
    #[serde(default, deserialize_with = "seconds::counter::option", skip_serializing_if = "Option::is_none")]
    pub max_retries: Option<i64>,
    /// `claim_timeout`: unset takes the class's timeout for a processing
    /// row (NULL otherwise); `null` is an old row without one.
    #[serde(
        default,
        deserialize_with = "seconds::signed::present",
        serialize_with = "present::serialize",
        skip_serializing_if = "Option::is_none"
    )]
    pub claim_timeout: Option<Option<i64>>,
    /// `updated_at`: the claim time.
    #[serde(default = "zero", skip_serializing_if = "is_zero")]
    pub claimed: Located<TimeSpec>,
    /// `heartbeat_at`; unset means it never beat.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heartbeat: Option<Located<TimeSpec>>,
    /// When a pending job is due.
    #[serde(default = "zero", skip_serializing_if = "is_zero")]
    pub run_at: Located<TimeSpec>,
    /// The job's own lease key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency_key: Option<String>,
}

/// The largest `count` a job entry may have.
pub const MAX_COUNT: u64 = 10_000;

impl Job {
    /// The keys of the rows this entry stands for, in byte order.
    ///
    /// Without `count`, `id` alone. With `count: n`, `id` followed by each
    /// number from 1 to n, zero-padded to as many digits as n has (`id:
    /// live-`, `count: 1000`: `live-0001` to `live-1000`), so that byte
    /// order, the spec's "order of id", is number order. A count of 0
    /// gives no row, and one above [`MAX_COUNT`] is cut there (validation
    /// rejects both).
    pub fn ids(&self) -> Vec<String> {
        let Some(n) = self.count.as_deref().copied() else {
            return vec![self.id.to_string()];
        };
        let width = digits(n);
        (1..=n.min(MAX_COUNT)).map(|i| format!("{}{i:0width$}", self.id.as_str())).collect()
    }

    /// Whether `key` is the key of one of this entry's rows.
    pub fn has_row(&self, key: &str) -> bool {
        let Some(n) = self.count.as_deref().copied() else {
            return self.id.as_str() == key;
        };
        key.strip_prefix(self.id.as_str()).is_some_and(|number| {
            number.len() == digits(n)
                && number.bytes().all(|b| b.is_ascii_digit())
                && number.parse::<u64>().is_ok_and(|i| i >= 1 && i <= n.min(MAX_COUNT))
        })
    }
}

/// The number of decimal digits of `n`.
fn digits(n: u64) -> usize {
    n.to_string().len()
}

fn default_queue() -> Located<String> {
    Located::new("default".to_owned())
}
fn zero() -> Located<TimeSpec> {
    Located::new(TimeSpec::Relative(Duration::ZERO))
}
fn is_zero(t: &Located<TimeSpec>) -> bool {
    *t == zero()
}

/// Serde glue for a key whose `null` differs from its absence.
mod present {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn deserialize<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<Option<T>>, D::Error> {
        Option::<T>::deserialize(d).map(Some)
    }

    pub fn serialize<S: Serializer, T: Serialize>(value: &Option<Option<T>>, s: S) -> Result<S::Ok, S::Error> {
        match value {
            Some(inner) => inner.serialize(s),
            None => s.serialize_none(),
        }
    }
}

/// A row of `job_leases` at setup.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Lease {
    /// The lease name, such as `job:Report` or `key:tenant-1`; unique.
    pub name: Located<String>,
    /// The attempt label that holds it.
    pub owner: String,
    /// When it lapses.
    pub expires: Located<TimeSpec>,
}

/// One operation of a scenario.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// One full reaper pass.
    Reap(ReapArgs),
    /// The first half of a reap: find the candidates.
    Scan(ScanArgs),
    /// The second half: the guarded updates for a reaper's candidates.
    Apply(ApplyArgs),
    /// A worker claims a job.
    Claim(ClaimArgs),
    /// An attempt heartbeats.
    Heartbeat(AttemptRef),
    /// An attempt completes.
    Complete(AttemptRef),
    /// An attempt fails.
    Fail(AttemptRef),
    /// The clock moves forward.
    Advance(Duration),
    /// A setting changes from here on.
    Set(SetArgs),
}

impl Step {
    /// The step's key in a scenario and in an outcome.
    pub fn keyword(&self) -> &'static str {
        match self {
            Step::Reap(_) => "reap",
            Step::Scan(_) => "scan",
            Step::Apply(_) => "apply",
            Step::Claim(_) => "claim",
            Step::Heartbeat(_) => "heartbeat",
            Step::Complete(_) => "complete",
            Step::Fail(_) => "fail",
            Step::Advance(_) => "advance",
            Step::Set(_) => "set",
        }
    }
}

/// The poll timeout reaps run with when a step gives none.
pub const DEFAULT_POLL_TIMEOUT: i64 = 300;

/// Arguments of `reap`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ReapArgs {
    /// The reaper's poll timeout in seconds (default 300).
    #[serde(default, deserialize_with = "seconds::signed::option", skip_serializing_if = "Option::is_none")]
    pub timeout: Option<i64>,
    /// Only these queues; unset means all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queues: Option<Vec<Located<String>>>,
}

/// Arguments of `scan`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ScanArgs {
    /// The reaper that keeps the candidates (default `r`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reaper: Option<String>,
    /// The reaper's poll timeout in seconds (default 300).
    #[serde(default, deserialize_with = "seconds::signed::option", skip_serializing_if = "Option::is_none")]
    pub timeout: Option<i64>,
    /// Only these queues; unset means all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queues: Option<Vec<Located<String>>>,
}

/// Arguments of `apply`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ApplyArgs {
    /// The reaper whose candidates are applied (default `r`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reaper: Option<String>,
}

/// The default reaper name of `scan` and `apply`.
pub const DEFAULT_REAPER: &str = "r";

/// Arguments of `claim`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ClaimArgs {
    /// The job to claim.
    pub job: Located<String>,
    /// The label of the attempt this claim makes, instead of `<job>/<n>`.
    #[serde(rename = "as", skip_serializing_if = "Option::is_none")]
    pub label: Option<Located<String>>,
}

/// The attempt a worker step acts as.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AttemptRef {
    /// The job.
    pub job: Located<String>,
    /// The attempt label; unset acts as the job's latest attempt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempt: Option<Located<String>>,
}

/// Arguments of `set`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SetArgs {
    /// The new app-wide grace, seconds.
    #[serde(deserialize_with = "seconds::signed::plain")]
    pub heartbeat_grace: i64,
}

/// Assertions on the outcome; every key given must equal the outcome's.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// One entry per step; `null` matches any result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<Located<Vec<Option<StepResult>>>>,
    /// Parts of job rows, by job id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jobs: Option<BTreeMap<Located<String>, ExpectJob>>,
    /// Whole lease rows, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leases: Option<BTreeMap<String, ExpectLease>>,
    /// The whole list of `on_failure` events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_failure: Option<Vec<FailureEvent>>,
}

/// The parts of a job's outcome an `expect` checks; absent keys match any.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct ExpectJob {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempts: Option<i64>,
    #[serde(default, with = "present", skip_serializing_if = "Option::is_none")]
    pub claim_token: Option<Option<String>>,
    #[serde(default, with = "present", skip_serializing_if = "Option::is_none")]
    pub heartbeat_at: Option<Option<Duration>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_at: Option<Duration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<Duration>,
    #[serde(default, with = "present", skip_serializing_if = "Option::is_none")]
    pub failed_at: Option<Option<Duration>>,
    #[serde(default, with = "present", skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<Option<Duration>>,
    #[serde(default, with = "present", skip_serializing_if = "Option::is_none")]
    pub last_error: Option<Option<LastError>>,
}

/// A lease an `expect` checks.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectLease {
    /// The owning attempt label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// When it lapses, relative to the final clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<Duration>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: &str, count: Option<u64>) -> Job {
        Job {
            id: Located::new(id.to_owned()),
            count: count.map(Located::new),
            class: Located::new("C".to_owned()),
            queue: default_queue(),
            status: Status::Pending,
            attempts: 0,
            max_retries: None,
            claim_timeout: None,
            claimed: zero(),
            heartbeat: None,
            run_at: zero(),
            concurrency_key: None,
        }
    }

    #[test]
    fn a_count_expands_to_zero_padded_ids_in_byte_order() {
        let ids = entry("live-", Some(1000)).ids();
        assert_eq!(ids.len(), 1000);
        assert_eq!((ids[0].as_str(), ids[8].as_str(), ids[999].as_str()), ("live-0001", "live-0009", "live-1000"));
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids sort in byte order as in number order");
        assert_eq!(entry("x", Some(9)).ids().last().map(String::as_str), Some("x9"));
        assert_eq!(entry("a", None).ids(), vec!["a".to_owned()]);
        assert!(entry("a", Some(0)).ids().is_empty());
        assert_eq!(entry("a", Some(MAX_COUNT + 5)).ids().len() as u64, MAX_COUNT);
    }

    #[test]
    fn has_row_accepts_exactly_the_expanded_ids() {
        let live = entry("live-", Some(1000));
        for yes in ["live-0001", "live-0500", "live-1000"] {
            assert!(live.has_row(yes), "{yes}");
        }
        for no in ["live-", "live-0000", "live-1001", "live-1", "live-00001", "live-+001", "live", "a"] {
            assert!(!live.has_row(no), "{no}");
        }
        assert!(entry("a", None).has_row("a") && !entry("a", None).has_row("a1"));
    }
}
