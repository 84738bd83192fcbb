//! A queue's reaper **policy**: the decisions where a real queue's design
//! differs from the reference on purpose (docs/policy.md). The reference
//! design of `docs/reaper-spec.md` is one value of it, [`Policy::default`];
//! the rules ([`crate::rules`]), the driver and the model are functions of
//! it, so a port or an adapter is judged by its own intended rules.
//!
//! A policy is declared in a dialect's `dialect.toml` as `[policy.<knob>]`
//! tables (and `[state.<knob>]` for state a queue does not keep), or in an
//! adapter's handshake as the same knobs in JSON. Every knob has a `value`
//! and a non-blank `reason`.

use std::collections::BTreeSet;
use std::fmt;

use serde::Deserialize;

/// How the dead test compares a row's `last_seen` with the cutoff (and the
/// scan floor). Reference: `<` (spec "reap").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
pub enum Staleness {
    /// `last_seen < cutoff`: a row exactly at the cutoff is alive.
    #[default]
    #[serde(rename = "<")]
    Strict,
    /// `last_seen <= cutoff`: a row exactly at the cutoff is dead.
    #[serde(rename = "<=")]
    Inclusive,
}

impl Staleness {
    /// Whether `last_seen` (µs) counts as silent past `cutoff` (µs).
    pub fn is_stale<T: PartialOrd>(self, last_seen: T, cutoff: T) -> bool {
        match self {
            Staleness::Strict => last_seen < cutoff,
            Staleness::Inclusive => last_seen <= cutoff,
        }
    }
}

/// The scan's floor: candidates are rows silent for longer than this.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
pub enum ScanFloor {
    /// 30 s (reference, spec "reap"): the smallest grace.
    #[default]
    #[serde(rename = "30s")]
    ThirtySeconds,
    /// No floor: every processing row is a candidate; the guard decides.
    #[serde(rename = "none")]
    None,
}

/// How long an attempt that never beat is alive after its claim.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimWindow {
    /// `row_timeout + max(60, row_timeout)` seconds (reference).
    #[default]
    TimeoutPlusMax60,
    /// The row timeout alone, in seconds.
    Timeout,
    /// None: only the heartbeat decides, and a claim starts the heartbeat
    /// clock (the claim writes `heartbeat_at = now`), as in queues whose
    /// pick writes the heartbeat column.
    None,
}

/// Whether a class's own `heartbeat_grace` overrides the app's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GraceOverrides {
    /// The class's grace when set (0 included), else the app's (reference).
    #[default]
    PerClass,
    /// The app's grace for every class.
    AppOnly,
}

/// The smallest positive grace.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
pub enum GraceFloor {
    /// A grace of 1 to 29 s is raised to 30 s (reference).
    #[default]
    #[serde(rename = "30s")]
    ThirtySeconds,
    /// Any positive grace is used as it is.
    #[serde(rename = "none")]
    None,
}

/// Whether a grace of 0 or less turns the heartbeat test off.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GraceOff {
    /// A grace <= 0 is off: only the claim window decides (reference).
    #[default]
    Allowed,
    /// The queue always checks heartbeats: a grace <= 0 is replaced by
    /// [`DEFAULT_GRACE_SECONDS`].
    Never,
}

/// The grace used when a queue never turns its heartbeat test off and the
/// configured one is 0 or less: the spec's default, seconds.
pub const DEFAULT_GRACE_SECONDS: i64 = 300;

/// When a reaped job may run again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Retry {
    /// After `min(base * 2^attempts, max)` seconds of the class (reference).
    #[default]
    Backoff,
    /// At once: `run_at = now`.
    Immediate,
    /// Never: a dead job is failed.
    Never,
}

/// What a reap does with a job of a class that is not idempotent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NonIdempotent {
    /// `interrupted`, with a final hook (reference).
    #[default]
    Interrupt,
    /// Like any other class: the queue has no notion of idempotency.
    Retry,
}

/// Whether the reaper stops retrying a job whose retries are spent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GiveUp {
    /// `failed` once the retries are spent (reference).
    #[default]
    AfterRetries,
    /// Never: a dead job is retried however often it died.
    Never,
}

/// What `max_retries` counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RetryCount {
    /// Retries after the first run: a job with `attempts <= max_retries`
    /// has one left (reference).
    #[default]
    AfterFirstRun,
    /// Attempts in all: a job with `attempts < max_retries` has one left.
    MaxAttempts,
}

/// Whether the queue has queues the reaper can filter by.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Queues {
    /// `reap {queues}` scans only those queues (reference).
    #[default]
    Filtered,
    /// One queue for every job; a scenario that names queues is skipped.
    None,
}

/// What fences a reap and a worker's writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fence {
    /// The claim token of the attempt, and the scanned `attempts` (reference).
    #[default]
    ClaimToken,
    /// A row version the queue bumps on each claim and reap (not on a
    /// heartbeat); judged like the claim token: a write of an older
    /// attempt changes nothing.
    RowVersion,
    /// Nothing: a worker's write lands whatever attempt holds the job, and
    /// a reap checks no attempt.
    None,
}

/// How a dead attempt is recovered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Recovery {
    /// By a reaper pass (`reap`, `scan`/`apply`), as the spec says (reference).
    #[default]
    Reaper,
    /// By the next claim: a claim takes a processing job whose attempt is
    /// older than its window (as queues whose `reserve` re-takes a stale
    /// lock); the queue has no reaper, so `reap`, `scan` and `apply` change
    /// nothing.
    NextClaim,
}

/// A field of the outcome's job rows that a queue may not keep.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Field {
    /// `attempts`.
    Attempts,
    /// `claim_token`.
    ClaimToken,
    /// `heartbeat_at`.
    HeartbeatAt,
    /// `run_at`.
    RunAt,
    /// `updated_at`.
    UpdatedAt,
    /// `failed_at`.
    FailedAt,
    /// `completed_at`.
    CompletedAt,
    /// `last_error`.
    LastError,
}

impl Field {
    /// Every field, in outcome order.
    pub const ALL: [Field; 8] = [
        Field::Attempts,
        Field::ClaimToken,
        Field::HeartbeatAt,
        Field::RunAt,
        Field::UpdatedAt,
        Field::FailedAt,
        Field::CompletedAt,
        Field::LastError,
    ];

    /// Its key in the outcome document.
    pub fn as_str(self) -> &'static str {
        match self {
            Field::Attempts => "attempts",
            Field::ClaimToken => "claim_token",
            Field::HeartbeatAt => "heartbeat_at",
            Field::RunAt => "run_at",
            Field::UpdatedAt => "updated_at",
            Field::FailedAt => "failed_at",
            Field::CompletedAt => "completed_at",
            Field::LastError => "last_error",
        }
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a queue does with a job that left `processing` for good.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishedRows {
    /// Kept, with its terminal status (reference).
    #[default]
    Kept,
    /// Deleted: a job in a terminal state is compared as `gone`.
    Deleted,
}

/// The policy in effect for one port or adapter. [`Policy::default`] is the
/// reference design.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Policy {
    /// `<` or `<=`.
    pub staleness: Staleness,
    /// The scan floor.
    pub scan_floor: ScanFloor,
    /// The claim window.
    pub claim_window: ClaimWindow,
    /// Per-class grace overrides.
    pub grace_overrides: GraceOverrides,
    /// The 30 s grace floor.
    pub grace_floor: GraceFloor,
    /// Whether a grace can be off.
    pub grace_off: GraceOff,
    /// When a reaped job runs again.
    pub retry: Retry,
    /// Non-idempotent classes.
    pub non_idempotent: NonIdempotent,
    /// Giving up after the retries.
    pub give_up: GiveUp,
    /// What `max_retries` counts.
    pub retry_count: RetryCount,
    /// Queue filtering.
    pub queues: Queues,
    /// The fence.
    pub fence: Fence,
    /// How a dead attempt is recovered.
    pub recovery: Recovery,
    /// Fields of the job rows the queue does not keep: not compared.
    pub absent: BTreeSet<Field>,
    /// Finished rows kept or deleted.
    pub finished_rows: FinishedRows,
    /// Each knob declared, with its reason, in declaration order:
    /// (knob, value, reason).
    pub declared: Vec<(&'static str, String, String)>,
}

impl Policy {
    /// True for the reference design: every knob at its default.
    pub fn is_reference(&self) -> bool {
        Policy { declared: Vec::new(), ..self.clone() } == Policy::default()
    }

    /// The contract's statements the driver never runs under this policy
    /// (their `legacy_` forms too): a reaper that never gives up runs no
    /// `reap_fail`, one that retries non-idempotent jobs no
    /// `reap_interrupt`, one that never retries no `reap_retry` nor the
    /// worker's `fail_retry`, and recovery by the next claim no reap
    /// statement at all. A dialect need not define them, and coverage and
    /// the mutation test leave them out (docs/policy.md, "The knobs").
    pub fn never_runs(&self) -> Vec<&'static str> {
        let mut names = Vec::new();
        if self.recovery == Recovery::NextClaim {
            names.extend(["reap_scan", "reap_retry", "reap_fail", "reap_interrupt"]);
            return names;
        }
        if self.non_idempotent != NonIdempotent::Interrupt {
            names.push("reap_interrupt");
        }
        if self.give_up == GiveUp::Never && self.retry != Retry::Never {
            names.push("reap_fail");
        }
        if self.retry == Retry::Never {
            names.extend(["reap_retry", "fail_retry"]);
        }
        names
    }

    /// Whether `statement` (a contract name, `legacy_` forms included) is
    /// one the driver never runs under this policy ([`Policy::never_runs`]).
    pub fn never_runs_statement(&self, statement: &str) -> bool {
        let base = statement.strip_prefix("legacy_").unwrap_or(statement);
        self.never_runs().contains(&base)
    }

    /// Whether the queue holds a row in `status` at all: under
    /// `finished_rows = deleted` a finished (completed, failed or
    /// interrupted) row is gone, so a scenario's setup row in such a state
    /// is not written (docs/policy.md, "State a queue does not keep").
    pub fn keeps(&self, status: crate::outcome::Status) -> bool {
        use crate::outcome::Status;
        self.finished_rows == FinishedRows::Kept || matches!(status, Status::Pending | Status::Processing)
    }

    /// The heartbeat a scenario's setup row holds: its own `heartbeat`;
    /// or, where a claim writes the heartbeat (`claim_window = none`, on
    /// the standard table), a `processing` row that never beat has beat at
    /// its claim, `claimed` (its `updated_at`), as the claim that made it
    /// would have written (docs/policy.md, "The knobs").
    pub fn setup_heartbeat(
        &self,
        schema: crate::scenario::Schema,
        status: crate::outcome::Status,
        heartbeat: Option<crate::time::Instant>,
        claimed: crate::time::Instant,
    ) -> Option<crate::time::Instant> {
        let claim_beats = self.claim_window == ClaimWindow::None && schema == crate::scenario::Schema::Standard;
        heartbeat.or_else(|| (claim_beats && status == crate::outcome::Status::Processing).then_some(claimed))
    }

    /// Whether the outcome's comparison drops something (absent fields or
    /// deleted rows): what only those could decide is not judged.
    pub fn hides_state(&self) -> bool {
        !self.absent.is_empty() || self.finished_rows == FinishedRows::Deleted
    }

    /// Checks the policy as a whole: `Err` names what contradicts what.
    /// No claim window with a grace that can be off means a job that never
    /// beat, or whose grace is 0, could never be reclaimed.
    pub fn contradiction(&self) -> Option<String> {
        self.contradicting().map(|(_, message)| message)
    }

    /// [`Policy::contradiction`] with the knob an error points at: the one
    /// that needs the other (`claim_window`, `retry`).
    fn contradicting(&self) -> Option<(&'static str, String)> {
        if self.claim_window == ClaimWindow::None && self.grace_off == GraceOff::Allowed {
            return Some((
                "claim_window",
                "`claim_window = none` with `grace_off = allowed`: a job whose grace is off could never be \
                 reclaimed; declare `grace_off = never`, or a claim window"
                    .to_owned(),
            ));
        }
        if self.retry == Retry::Never && self.give_up == GiveUp::Never {
            return Some((
                "retry",
                "`retry = never` with `give_up = never`: a dead job would be neither retried nor failed; \
                 choose one"
                    .to_owned(),
            ));
        }
        None
    }
}

impl Policy {
    /// Why `scenario` cannot be judged under this policy, if it cannot: a
    /// knob that removes what the scenario is about (docs/policy.md). With
    /// `queues = none`, a scenario whose reaper names queues or whose jobs
    /// are in more than one queue: `declares queues = none`.
    pub fn unjudgeable(&self, scenario: &crate::scenario::Scenario) -> Option<String> {
        use crate::scenario::Step;
        if self.queues == Queues::None {
            let names_queues = scenario.steps.iter().any(|s| match s.value() {
                Step::Reap(a) => a.queues.is_some(),
                Step::Scan(a) => a.queues.is_some(),
                _ => false,
            });
            let queues: BTreeSet<&str> = scenario.jobs.iter().map(|j| j.queue.as_str()).collect();
            if names_queues || queues.len() > 1 {
                return Some("declares queues = none".to_owned());
            }
        }
        None
    }
}

/// The policy in words, one knob after another (`run`'s opening line and
/// `explain`).
/// Every statement some policy never runs ([`Policy::never_runs`]).
pub const MAY_NEVER_RUN: [&str; 5] = ["reap_scan", "reap_retry", "reap_fail", "reap_interrupt", "fail_retry"];

impl Policy {
    /// The decisions alone, without the reasons: `(knob, value)` for every
    /// knob declared, in knob order. Two policies with equal decisions
    /// decide every scenario alike, whatever their reasons say.
    pub fn decisions(&self) -> Vec<(&'static str, String)> {
        let mut d: Vec<(&'static str, String)> = self.declared.iter().map(|(k, v, _)| (*k, v.clone())).collect();
        d.sort();
        d
    }
}

/// Why the dialects of one port cannot all be judged together: two of
/// them declare different policies (docs/policy.md, "Declaring it": one
/// queue has one design, on every database). `named` is each dialect's
/// name with its policy; `None` when they agree.
pub fn disagreement<'a>(named: impl IntoIterator<Item = (&'a str, &'a Policy)>) -> Option<String> {
    let mut named = named.into_iter();
    let (first_name, first) = named.next()?;
    let (name, other) = named.find(|(_, p)| p.decisions() != first.decisions())?;
    let (a, b) = (first.decisions(), other.decisions());
    let value = |d: &[(&'static str, String)], knob: &str| {
        d.iter().find(|(k, _)| *k == knob).map_or_else(|| "the reference".to_owned(), |(_, v)| format!("`{v}`"))
    };
    let mut knobs: Vec<&str> = a.iter().chain(&b).map(|(k, _)| *k).collect();
    knobs.sort_unstable();
    knobs.dedup();
    let differing: Vec<String> = knobs
        .into_iter()
        .filter(|k| value(&a, k) != value(&b, k))
        .map(|k| format!("{k}: {} in {first_name}, {} in {name}", value(&a, k), value(&b, k)))
        .collect();
    Some(format!(
        "the {first_name} and {name} dialects declare different policies ({}): one queue has one design on \
         every database, so declare the same [policy.*] and [state.*] in each dialect.toml (reasons may \
         differ), or run them as two ports",
        differing.join("; ")
    ))
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.declared.is_empty() {
            return f.write_str("reference policy");
        }
        for (i, (knob, value, reason)) in self.declared.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{knob} = {value} ({reason})")?;
        }
        Ok(())
    }
}

/// One knob as written: its value and the reason the queue needs it. `R` is
/// the reason's type (a spanned string in TOML, a plain one in JSON).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Knob<T, R> {
    /// The value.
    pub value: T,
    /// Why the queue differs.
    pub reason: R,
}

/// The `[policy]` table as written (TOML) or the handshake's `policy`
/// object (JSON); every key optional, unknown keys refused.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct PolicyFile<R> {
    pub staleness: Option<Knob<Staleness, R>>,
    pub scan_floor: Option<Knob<ScanFloor, R>>,
    pub claim_window: Option<Knob<ClaimWindow, R>>,
    pub grace_overrides: Option<Knob<GraceOverrides, R>>,
    pub grace_floor: Option<Knob<GraceFloor, R>>,
    pub grace_off: Option<Knob<GraceOff, R>>,
    pub retry: Option<Knob<Retry, R>>,
    pub non_idempotent: Option<Knob<NonIdempotent, R>>,
    pub give_up: Option<Knob<GiveUp, R>>,
    pub retry_count: Option<Knob<RetryCount, R>>,
    pub queues: Option<Knob<Queues, R>>,
    pub fence: Option<Knob<Fence, R>>,
    pub recovery: Option<Knob<Recovery, R>>,
}

/// The `[state]` table: what a queue does not keep.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct StateFile<R> {
    pub absent: Option<Knob<Vec<Field>, R>>,
    pub finished_rows: Option<Knob<FinishedRows, R>>,
}

/// A knob's reason, as the format gives it: its text, and where it stands
/// (for an error about it).
pub trait Reason {
    /// The text.
    fn text(&self) -> &str;
    /// Byte offset of the reason in the file, when known.
    fn offset(&self) -> Option<usize>;
}

impl Reason for String {
    fn text(&self) -> &str {
        self
    }
    fn offset(&self) -> Option<usize> {
        None
    }
}

impl Reason for toml::Spanned<String> {
    fn text(&self) -> &str {
        self.get_ref()
    }
    fn offset(&self) -> Option<usize> {
        Some(self.span().start)
    }
}

/// A knob that cannot be used: its message, and the byte offset of the
/// reason it concerns when the format knows it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct PolicyError {
    /// What is wrong and what to do.
    pub message: String,
    /// Byte offset in the file, when known.
    pub offset: Option<usize>,
}

fn serde_name<T: fmt::Debug>(value: &T) -> String {
    // Knob values print as written in the file: the enums' serde names.
    format!("{value:?}")
}

impl Policy {
    /// The policy of a `[policy]` and a `[state]` table (either may be
    /// missing). A blank reason, a repeated absent field, or a
    /// contradiction is an error.
    pub fn from_files<R: Reason>(
        policy: Option<PolicyFile<R>>,
        state: Option<StateFile<R>>,
    ) -> Result<Policy, PolicyError> {
        let mut p = Policy::default();
        let mut declared = Vec::new();
        let mut offsets: Vec<(&'static str, Option<usize>)> = Vec::new();
        let mut note = |knob: &'static str, value: String, reason: &R| -> Result<(), PolicyError> {
            if reason.text().trim().is_empty() {
                return Err(PolicyError {
                    message: format!("`{knob}` has a blank reason: say why the queue differs"),
                    offset: reason.offset(),
                });
            }
            offsets.push((knob, reason.offset()));
            declared.push((knob, value, reason.text().trim().to_owned()));
            Ok(())
        };
        macro_rules! knob {
            ($file:expr, $field:ident, $name:literal, $show:expr) => {
                if let Some(k) = $file.$field {
                    note($name, $show(&k.value), &k.reason)?;
                    p.$field = k.value;
                }
            };
        }
        if let Some(f) = policy {
            knob!(f, staleness, "staleness", |v: &Staleness| match v {
                Staleness::Strict => "<".to_owned(),
                Staleness::Inclusive => "<=".to_owned(),
            });
            knob!(f, scan_floor, "scan_floor", |v: &ScanFloor| match v {
                ScanFloor::ThirtySeconds => "30s".to_owned(),
                ScanFloor::None => "none".to_owned(),
            });
            knob!(f, claim_window, "claim_window", |v: &ClaimWindow| match v {
                ClaimWindow::TimeoutPlusMax60 => "timeout_plus_max_60".to_owned(),
                ClaimWindow::Timeout => "timeout".to_owned(),
                ClaimWindow::None => "none".to_owned(),
            });
            knob!(f, grace_overrides, "grace_overrides", |v: &GraceOverrides| snake(serde_name(v)));
            knob!(f, grace_floor, "grace_floor", |v: &GraceFloor| match v {
                GraceFloor::ThirtySeconds => "30s".to_owned(),
                GraceFloor::None => "none".to_owned(),
            });
            knob!(f, grace_off, "grace_off", |v: &GraceOff| snake(serde_name(v)));
            knob!(f, retry, "retry", |v: &Retry| snake(serde_name(v)));
            knob!(f, non_idempotent, "non_idempotent", |v: &NonIdempotent| snake(serde_name(v)));
            knob!(f, give_up, "give_up", |v: &GiveUp| snake(serde_name(v)));
            knob!(f, retry_count, "retry_count", |v: &RetryCount| snake(serde_name(v)));
            knob!(f, queues, "queues", |v: &Queues| snake(serde_name(v)));
            knob!(f, fence, "fence", |v: &Fence| snake(serde_name(v)));
            knob!(f, recovery, "recovery", |v: &Recovery| snake(serde_name(v)));
        }
        if let Some(s) = state {
            if let Some(k) = s.absent {
                let mut seen = BTreeSet::new();
                if let Some(twice) = k.value.iter().find(|f| !seen.insert(**f)) {
                    return Err(PolicyError {
                        message: format!("`absent` names `{twice}` twice: name each field once"),
                        offset: k.reason.offset(),
                    });
                }
                let names: Vec<&str> = k.value.iter().map(|f| f.as_str()).collect();
                note("absent", format!("[{}]", names.join(", ")), &k.reason)?;
                p.absent = seen;
            }
            if let Some(k) = s.finished_rows {
                note("finished_rows", snake(serde_name(&k.value)), &k.reason)?;
                p.finished_rows = k.value;
            }
        }
        p.declared = declared;
        if let Some((knob, message)) = p.contradicting() {
            // At the reason of the knob that needs the other, which is declared.
            let offset = offsets.iter().find(|(k, _)| *k == knob).and_then(|(_, o)| *o);
            return Err(PolicyError { message, offset });
        }
        Ok(p)
    }

    /// The policy of an adapter's handshake (`policy` and `state` objects,
    /// JSON): the same knobs as `dialect.toml`.
    pub fn from_json(
        policy: Option<&serde_json::Value>,
        state: Option<&serde_json::Value>,
    ) -> Result<Policy, PolicyError> {
        let read = |v: Option<&serde_json::Value>, what: &str| -> Result<Option<serde_json::Value>, PolicyError> {
            match v {
                None | Some(serde_json::Value::Null) => Ok(None),
                Some(v) if v.is_object() => Ok(Some(v.clone())),
                Some(_) => Err(PolicyError { message: format!("`{what}` must be an object of knobs"), offset: None }),
            }
        };
        let bad = |e: serde_json::Error| PolicyError { message: e.to_string(), offset: None };
        let policy =
            read(policy, "policy")?.map(serde_json::from_value::<PolicyFile<String>>).transpose().map_err(bad)?;
        let state = read(state, "state")?.map(serde_json::from_value::<StateFile<String>>).transpose().map_err(bad)?;
        Policy::from_files(policy, state)
    }
}

/// `AfterFirstRun` as `after_first_run`: the enums' variant names in the
/// file's snake case.
fn snake(camel: String) -> String {
    let mut out = String::with_capacity(camel.len() + 4);
    for (i, c) in camel.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Policy, PolicyError> {
        #[derive(Deserialize)]
        struct File {
            policy: Option<PolicyFile<toml::Spanned<String>>>,
            state: Option<StateFile<toml::Spanned<String>>>,
        }
        let f: File = toml::from_str(text).map_err(|e| PolicyError { message: e.to_string(), offset: None })?;
        Policy::from_files(f.policy, f.state)
    }

    #[test]
    fn statements_the_policy_never_runs() {
        assert!(Policy::default().never_runs().is_empty());
        let db_scheduler = Policy {
            give_up: GiveUp::Never,
            non_idempotent: NonIdempotent::Retry,
            retry: Retry::Immediate,
            ..Policy::default()
        };
        assert_eq!(db_scheduler.never_runs(), ["reap_interrupt", "reap_fail"]);
        assert!(db_scheduler.never_runs_statement("legacy_reap_fail"));
        assert!(!db_scheduler.never_runs_statement("reap_retry"));
        // Never retrying is giving up at once, whatever give_up says.
        let no_retry = Policy { retry: Retry::Never, give_up: GiveUp::Never, ..Policy::default() };
        assert_eq!(no_retry.never_runs(), ["reap_retry", "fail_retry"]);
        let by_claim = Policy { recovery: Recovery::NextClaim, ..Policy::default() };
        assert_eq!(by_claim.never_runs(), ["reap_scan", "reap_retry", "reap_fail", "reap_interrupt"]);
        for p in [db_scheduler, no_retry, by_claim] {
            assert!(p.never_runs().iter().all(|s| MAY_NEVER_RUN.contains(s)), "{:?}", p.never_runs());
        }
    }

    #[test]
    fn setup_rows_are_what_the_queue_would_hold() {
        use crate::outcome::Status;
        use crate::scenario::Schema;
        use crate::time::Instant;
        let (claimed, beat) = (Instant::from_unix_micros(100), Instant::from_unix_micros(150));
        let none = Policy { claim_window: ClaimWindow::None, ..Policy::default() };
        let setup = |p: &Policy, schema, status, hb| p.setup_heartbeat(schema, status, hb, claimed);
        assert_eq!(setup(&none, Schema::Standard, Status::Processing, None), Some(claimed), "the claim wrote the beat");
        assert_eq!(setup(&none, Schema::Standard, Status::Processing, Some(beat)), Some(beat));
        assert_eq!(setup(&none, Schema::Standard, Status::Pending, None), None, "only a claimed row has beat");
        assert_eq!(setup(&none, Schema::Legacy, Status::Processing, None), None, "no heartbeat column");
        assert_eq!(setup(&Policy::default(), Schema::Standard, Status::Processing, None), None);
        let deleted = Policy { finished_rows: FinishedRows::Deleted, ..Policy::default() };
        assert!(deleted.keeps(Status::Pending) && deleted.keeps(Status::Processing));
        for finished in [Status::Completed, Status::Failed, Status::Interrupted] {
            assert!(!deleted.keeps(finished), "{finished:?}");
            assert!(Policy::default().keeps(finished), "{finished:?}");
        }
    }

    #[test]
    fn dialects_of_one_port_must_agree_on_their_decisions_not_their_reasons() {
        let lt = parse("[policy.staleness]\nvalue = \"<\"\nreason = \"a\"\n").unwrap();
        let le = parse("[policy.staleness]\nvalue = \"<=\"\nreason = \"a\"\n").unwrap();
        let le_worded = parse("[policy.staleness]\nvalue = \"<=\"\nreason = \"worded otherwise\"\n").unwrap();
        assert_eq!(disagreement([("sqlite", &le), ("postgres", &le_worded)]), None);
        let why = disagreement([("sqlite", &le), ("postgres", &le_worded), ("mysql", &lt)]).unwrap();
        assert!(why.starts_with("the sqlite and mysql dialects declare different policies"), "{why}");
        assert!(why.contains("(staleness: `<=` in sqlite, `<` in mysql)"), "{why}");
        let reference = Policy::default();
        let why = disagreement([("sqlite", &reference), ("postgres", &le)]).unwrap();
        assert!(why.contains("(staleness: the reference in sqlite, `<=` in postgres)"), "{why}");
        assert_eq!(disagreement(std::iter::empty()), None);
    }

    #[test]
    fn no_knob_is_the_reference() {
        let p = parse("").unwrap();
        assert!(p.is_reference());
        assert_eq!(p.to_string(), "reference policy");
    }

    #[test]
    fn knobs_read_with_their_reasons_and_print_as_written() {
        let p = parse(
            "[policy.staleness]\nvalue = \"<=\"\nreason = \"dead test is <=\"\n\
             [policy.claim_window]\nvalue = \"none\"\nreason = \"pick writes the heartbeat\"\n\
             [policy.grace_off]\nvalue = \"never\"\nreason = \"always checks\"\n\
             [policy.retry_count]\nvalue = \"max_attempts\"\nreason = \"counts attempts\"\n\
             [state.absent]\nvalue = [\"updated_at\", \"last_error\"]\nreason = \"no such columns\"\n",
        )
        .unwrap();
        assert_eq!(p.staleness, Staleness::Inclusive);
        assert_eq!(p.claim_window, ClaimWindow::None);
        assert_eq!(p.retry_count, RetryCount::MaxAttempts);
        assert_eq!(p.absent, BTreeSet::from([Field::UpdatedAt, Field::LastError]));
        assert!(!p.is_reference());
        assert_eq!(
            p.to_string(),
            "staleness = <= (dead test is <=); claim_window = none (pick writes the heartbeat); \
             grace_off = never (always checks); retry_count = max_attempts (counts attempts); \
             absent = [updated_at, last_error] (no such columns)"
        );
    }

    #[test]
    fn an_unknown_knob_or_value_or_a_blank_reason_is_refused() {
        assert!(
            parse("[policy.stalenes]\nvalue = \"<\"\nreason = \"x\"\n").unwrap_err().message.contains("unknown field")
        );
        assert!(
            parse("[policy.staleness]\nvalue = \"=<\"\nreason = \"x\"\n")
                .unwrap_err()
                .message
                .contains("unknown variant")
        );
        let e = parse("[policy.retry]\nvalue = \"immediate\"\nreason = \" \"\n").unwrap_err();
        assert!(e.message.contains("blank reason"), "{e}");
        assert_eq!(e.offset, Some(44), "the reason's string starts after `reason = `");
        assert!(
            parse("[policy.retry]\nvalue = \"immediate\"\n").unwrap_err().message.contains("missing field `reason`")
        );
    }

    #[test]
    fn a_policy_that_could_never_reclaim_is_a_contradiction() {
        let e = parse("[policy.claim_window]\nvalue = \"none\"\nreason = \"pick beats\"\n").unwrap_err();
        assert!(e.message.contains("could never be reclaimed"), "{e}");
        let e = parse(
            "[policy.retry]\nvalue = \"never\"\nreason = \"a\"\n[policy.give_up]\nvalue = \"never\"\nreason = \"b\"\n",
        )
        .unwrap_err();
        assert!(e.message.contains("neither retried nor failed"), "{e}");
    }

    async fn outcome(policy: &Policy, yaml: &str) -> crate::outcome::Outcome {
        let s = crate::scenario::parse_text(yaml).unwrap();
        let mut model = crate::model::Model::under(s.schema, policy);
        crate::driver::run_under(&s, policy, &mut model, None, None).await.unwrap()
    }

    #[tokio::test]
    async fn next_claim_recovers_a_stale_attempt_and_the_reaper_does_nothing() {
        use crate::outcome::{ClaimResult, Status, StepResult};
        // Claimed 11 minutes ago with a 300 s timeout: past its 600 s window.
        let yaml = "description: x\nclasses: { C: {} }\n\
                    jobs: [ { id: a, class: C, status: processing, attempts: 1, claimed: -11m },\
                    { id: b, class: C, status: processing, attempts: 1, claimed: -9m } ]\n\
                    steps: [ reap, { claim: { job: a } }, { claim: { job: b } } ]\n";
        let reference = outcome(&Policy::default(), yaml).await;
        assert_eq!(reference.steps[0], Some(StepResult::Reap(1)));
        let next_claim = Policy { recovery: Recovery::NextClaim, ..Policy::default() };
        let o = outcome(&next_claim, yaml).await;
        assert_eq!(o.steps[0], Some(StepResult::Reap(0)), "no reaper");
        assert_eq!(o.steps[1], Some(StepResult::Claim(ClaimResult::Claimed)), "the stale attempt is re-taken");
        assert_eq!(o.steps[2], Some(StepResult::Claim(ClaimResult::NotClaimable)), "a live one is not");
        assert_eq!(
            (o.jobs["a"].status, o.jobs["a"].attempts, o.jobs["a"].claim_token.as_deref()),
            (Status::Processing, 2, Some("a/2"))
        );
    }

    #[tokio::test]
    async fn no_claim_window_means_the_claim_starts_the_heartbeat_clock() {
        let policy = Policy { claim_window: ClaimWindow::None, grace_off: GraceOff::Never, ..Policy::default() };
        let yaml = "description: x\nclasses: { C: {} }\njobs: [ { id: a, class: C } ]\n\
                    steps: [ { claim: { job: a } }, { advance: 301s }, reap ]\n";
        let o = outcome(&policy, yaml).await;
        assert_eq!(o.steps[2], Some(crate::outcome::StepResult::Reap(1)), "dead after the grace alone");
        assert_eq!(outcome(&Policy::default(), yaml).await.steps[2], Some(crate::outcome::StepResult::Reap(0)));
    }

    #[test]
    fn a_contradiction_points_at_the_knob_that_needs_the_other() {
        let text = "[policy.claim_window]\nvalue = \"none\"\nreason = \"pick beats\"\n\
                    [state.finished_rows]\nvalue = \"deleted\"\nreason = \"gone\"\n";
        let e = parse(text).unwrap_err();
        assert_eq!(e.offset, text.find("\"pick beats\""), "{e:?}");
    }

    #[test]
    fn the_handshake_declares_the_same_knobs_in_json() {
        let policy = serde_json::json!({"retry": {"value": "immediate", "reason": "swept jobs run at once"}});
        let p = Policy::from_json(Some(&policy), None).unwrap();
        assert_eq!(p.retry, Retry::Immediate);
        let bad = serde_json::json!({"retry": {"value": "later", "reason": "x"}});
        assert!(Policy::from_json(Some(&bad), None).unwrap_err().message.contains("unknown variant"));
        let extra = serde_json::json!({"retry": {"value": "immediate", "reason": "x", "why": "y"}});
        assert!(Policy::from_json(Some(&extra), None).unwrap_err().message.contains("unknown field"));
    }
}
