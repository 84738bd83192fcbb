//! The outcome document: what a scenario left behind, the same from the
//! reference model and from every dialect, and what a snapshot records.
//!
//! Every instant is written relative to the final clock, canonical and exact
//! to the microsecond, so a snapshot does not depend on the starting clock.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};

use crate::time::Duration;

mod text;

/// A job's status.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)]
pub enum Status {
    #[default]
    Pending,
    Processing,
    Completed,
    Failed,
    Interrupted,
}

impl Status {
    /// The text stored in the `status` column.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Processing => "processing",
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Interrupted => "interrupted",
        }
    }

    /// The status stored as `text`, if it is one.
    pub fn from_column(text: &str) -> Option<Status> {
        [Status::Pending, Status::Processing, Status::Completed, Status::Failed, Status::Interrupted]
            .into_iter()
            .find(|s| s.as_str() == text)
    }
}

/// Why a job last failed: the kind stored in `last_error`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LastError {
    /// The reaper found the worker gone.
    Timeout,
    /// The worker reported a failure.
    Failed,
}

impl LastError {
    /// The text stored in `last_error`.
    pub fn as_str(self) -> &'static str {
        match self {
            LastError::Timeout => "timeout",
            LastError::Failed => "failed",
        }
    }

    /// The kind stored as `text`, if it is one.
    pub fn from_column(text: &str) -> Option<LastError> {
        [LastError::Timeout, LastError::Failed].into_iter().find(|e| e.as_str() == text)
    }
}

/// What a claim did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimResult {
    /// The attempt runs.
    Claimed,
    /// The job's lease was busy; the claim was given back.
    Deferred,
    /// Not pending, or not yet due.
    NotClaimable,
}

/// What a worker's heartbeat, complete or fail did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkerResult {
    /// The attempt still held the job.
    Ok,
    /// The attempt had lost the job; nothing changed.
    Fenced,
}

/// The result of one step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StepResult {
    /// Rows a full reap changed.
    Reap(u64),
    /// The candidate ids a scan found.
    Scan(Vec<String>),
    /// Rows an apply changed.
    Apply(u64),
    /// A claim's result.
    Claim(ClaimResult),
    /// A heartbeat's result.
    Heartbeat(WorkerResult),
    /// A completion's result, and whether the lease had been lost.
    Complete(WorkerResult, bool),
    /// A failure's result, and whether the lease had been lost.
    Fail(WorkerResult, bool),
}

impl Serialize for StepResult {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let lost = matches!(self, StepResult::Complete(_, true) | StepResult::Fail(_, true));
        let mut map = s.serialize_map(Some(1 + usize::from(lost)))?;
        match self {
            StepResult::Reap(n) => map.serialize_entry("reap", n)?,
            StepResult::Scan(ids) => map.serialize_entry("scan", ids)?,
            StepResult::Apply(n) => map.serialize_entry("apply", n)?,
            StepResult::Claim(r) => map.serialize_entry("claim", r)?,
            StepResult::Heartbeat(r) => map.serialize_entry("heartbeat", r)?,
            StepResult::Complete(r, _) => map.serialize_entry("complete", r)?,
            StepResult::Fail(r, _) => map.serialize_entry("fail", r)?,
        }
        if lost {
            map.serialize_entry("lease_lost", &true)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for StepResult {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = StepResult;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a step result such as `{ reap: 1 }` or `{ claim: deferred }`, or null")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<StepResult, A::Error> {
                const KEYS: &[&str] = &["reap", "scan", "apply", "claim", "heartbeat", "complete", "fail"];
                let key: String = map.next_key()?.ok_or_else(|| de::Error::custom("a step result needs a key"))?;
                let mut result = match key.as_str() {
                    "reap" => StepResult::Reap(map.next_value()?),
                    "scan" => StepResult::Scan(map.next_value()?),
                    "apply" => StepResult::Apply(map.next_value()?),
                    "claim" => StepResult::Claim(map.next_value()?),
                    "heartbeat" => StepResult::Heartbeat(map.next_value()?),
                    "complete" => StepResult::Complete(map.next_value()?, false),
                    "fail" => StepResult::Fail(map.next_value()?, false),
                    other => return Err(de::Error::unknown_field(other, KEYS)),
                };
                while let Some(extra) = map.next_key::<String>()? {
                    match (&mut result, extra.as_str()) {
                        (StepResult::Complete(_, lost) | StepResult::Fail(_, lost), "lease_lost") => {
                            *lost = map.next_value()?;
                        }
                        _ => {
                            return Err(de::Error::custom(format!(
                                "unexpected `{extra}` in a `{key}` result; only complete and fail take `lease_lost`"
                            )));
                        }
                    }
                }
                Ok(result)
            }
        }
        d.deserialize_map(V)
    }
}

/// A job row as the outcome shows it.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct JobOutcome {
    pub status: Status,
    pub attempts: i64,
    /// The attempt label of the current claim token.
    pub claim_token: Option<String>,
    pub heartbeat_at: Option<Duration>,
    pub run_at: Duration,
    pub updated_at: Duration,
    pub failed_at: Option<Duration>,
    pub completed_at: Option<Duration>,
    pub last_error: Option<LastError>,
}

/// A lease row as the outcome shows it.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LeaseOutcome {
    /// The owning attempt label.
    pub owner: String,
    /// When it lapses, relative to the final clock.
    pub expires_at: Duration,
}

/// One `on_failure` hook call.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FailureEvent {
    /// The job.
    pub job: String,
    /// The job's `attempts` when the hook fired.
    pub attempt: i64,
    /// True when the job will not run again.
    #[serde(rename = "final")]
    pub is_final: bool,
    /// Who failed it.
    pub error: LastError,
}

/// Everything a scenario left behind.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Outcome {
    /// One entry per step; `None` for `advance` and `set`.
    pub steps: Vec<Option<StepResult>>,
    /// Every job, by id.
    pub jobs: BTreeMap<String, JobOutcome>,
    /// Every lease, by name.
    pub leases: BTreeMap<String, LeaseOutcome>,
    /// Every hook call, in order.
    pub on_failure: Vec<FailureEvent>,
}

impl Outcome {
    /// The YAML text a snapshot holds; the same outcome always gives the same
    /// text: serde-saphyr's, written directly when every text in it is
    /// plain ([`text::write`], a tenth of a SQLite corpus run's
    /// instructions went to serde-saphyr's serializer), through
    /// serde-saphyr otherwise.
    pub fn to_yaml(&self) -> String {
        text::write(self).unwrap_or_else(|| serde_saphyr::to_string(self).expect("an outcome always serializes"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Outcome {
        let mut o = Outcome {
            steps: vec![
                Some(StepResult::Reap(1)),
                None,
                Some(StepResult::Scan(vec!["a".into(), "b".into()])),
                Some(StepResult::Complete(WorkerResult::Ok, true)),
                Some(StepResult::Claim(ClaimResult::NotClaimable)),
            ],
            ..Outcome::default()
        };
        o.jobs.insert(
            "a".into(),
            JobOutcome {
                status: Status::Pending,
                attempts: 1,
                claim_token: None,
                heartbeat_at: Some(Duration::from_secs(-600)),
                run_at: Duration::from_secs(4),
                updated_at: Duration::ZERO,
                failed_at: None,
                completed_at: None,
                last_error: Some(LastError::Timeout),
            },
        );
        o.leases.insert("job:R".into(), LeaseOutcome { owner: "a/1".into(), expires_at: Duration::from_micros(-1) });
        o.on_failure.push(FailureEvent { job: "a".into(), attempt: 4, is_final: true, error: LastError::Failed });
        o
    }

    #[test]
    fn renders_the_documented_shape() {
        let yaml = sample().to_yaml();
        for line in [
            "- reap: 1",
            "- null",
            "- complete: ok",
            "  lease_lost: true",
            "- claim: not_claimable",
            "    heartbeat_at: -10m",
            "    run_at: +4s",
            "    updated_at: 0s",
            "    expires_at: -0.000001s",
            "  final: true",
        ] {
            assert!(yaml.lines().any(|l| l == line), "missing {line:?} in:\n{yaml}");
        }
    }

    #[test]
    fn yaml_reads_back_to_the_same_outcome() {
        let o = sample();
        let back: Outcome = serde_saphyr::from_str(&o.to_yaml()).unwrap();
        assert_eq!(back, o);
    }

    #[test]
    fn lease_lost_only_belongs_to_complete_and_fail() {
        let err = serde_saphyr::from_str::<StepResult>("{ reap: 1, lease_lost: true }").unwrap_err();
        assert!(err.to_string().contains("only complete and fail"), "{err}");
    }
}
