//! An outcome's snapshot text written directly: byte for byte what
//! `serde_saphyr::to_string` writes for it, without its serializer, which
//! weighs every scalar against YAML's quoting rules and was a tenth of a
//! SQLite corpus run's instructions (`valgrind --tool=callgrind reapcheck
//! run --db sqlite --jobs 1 --quiet`).
//!
//! Only what cannot be mistaken is written here: numbers, booleans,
//! `null`, the enums' fixed words, durations, and texts made of letters,
//! digits and `_ . / -` that start with a letter and are no YAML keyword.
//! Any other short printable text is quoted as serde-saphyr quotes that
//! text alone in the same place (a key or a value); anything else (a line
//! break, a control character, a long text) makes [`write`] answer `None`,
//! and the whole outcome goes through serde-saphyr. The tests compare the
//! two on every shipped scenario's outcome and on generated ones.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::{ClaimResult, FailureEvent, JobOutcome, LeaseOutcome, Outcome, StepResult, WorkerResult};
use crate::time::Duration;

/// The texts longer than this go through serde-saphyr whole: a long
/// scalar is where a YAML writer may fold or choose a block style.
const LONGEST_QUOTED: usize = 64;

/// Words YAML 1.1 or 1.2 may read as something other than a text, in
/// lower case: a text that is one of them (in any case) is quoted.
const KEYWORDS: &[&str] = &["null", "true", "false", "yes", "no", "on", "off", "y", "n", "nan", "inf", "infinity"];

/// The snapshot text of `outcome`, or `None` when one of its texts is one
/// that only serde-saphyr may write (see the module's documentation).
pub fn write(outcome: &Outcome) -> Option<String> {
    let mut out = String::with_capacity(256 + outcome.jobs.len() * 200);
    steps(&mut out, &outcome.steps)?;
    jobs(&mut out, &outcome.jobs)?;
    leases(&mut out, &outcome.leases)?;
    failures(&mut out, &outcome.on_failure)?;
    Some(out)
}

fn steps(out: &mut String, steps: &[Option<StepResult>]) -> Option<()> {
    if steps.is_empty() {
        out.push_str("steps: []\n");
        return Some(());
    }
    out.push_str("steps:\n");
    for step in steps {
        let Some(step) = step else {
            out.push_str("- null\n");
            continue;
        };
        let (key, word): (&str, &str) = match step {
            StepResult::Reap(n) => {
                let _ = writeln!(out, "- reap: {n}");
                continue;
            }
            StepResult::Apply(n) => {
                let _ = writeln!(out, "- apply: {n}");
                continue;
            }
            StepResult::Claim(r) => ("claim", claim_word(*r)),
            StepResult::Heartbeat(r) => ("heartbeat", worker_word(*r)),
            StepResult::Complete(r, _) => ("complete", worker_word(*r)),
            StepResult::Fail(r, _) => ("fail", worker_word(*r)),
            StepResult::Scan(ids) if ids.is_empty() => ("scan", "[]"),
            StepResult::Scan(ids) => {
                out.push_str("- scan:\n");
                for id in ids {
                    out.push_str("  - ");
                    value(out, id)?;
                    out.push('\n');
                }
                continue;
            }
        };
        let _ = writeln!(out, "- {key}: {word}");
        if matches!(step, StepResult::Complete(_, true) | StepResult::Fail(_, true)) {
            out.push_str("  lease_lost: true\n");
        }
    }
    Some(())
}

fn jobs(out: &mut String, jobs: &BTreeMap<String, JobOutcome>) -> Option<()> {
    map(out, "jobs", jobs, |out, job| {
        out.push_str("    status: ");
        out.push_str(job.status.as_str());
        let _ = write!(out, "\n    attempts: {}\n    claim_token: ", job.attempts);
        match &job.claim_token {
            Some(token) => value(out, token)?,
            None => out.push_str("null"),
        }
        optional_duration(out, "\n    heartbeat_at: ", job.heartbeat_at);
        let _ = write!(out, "\n    run_at: {}\n    updated_at: {}", job.run_at, job.updated_at);
        optional_duration(out, "\n    failed_at: ", job.failed_at);
        optional_duration(out, "\n    completed_at: ", job.completed_at);
        out.push_str("\n    last_error: ");
        out.push_str(job.last_error.map_or("null", |e| e.as_str()));
        out.push('\n');
        Some(())
    })
}

fn leases(out: &mut String, leases: &BTreeMap<String, LeaseOutcome>) -> Option<()> {
    map(out, "leases", leases, |out, lease| {
        out.push_str("    owner: ");
        value(out, &lease.owner)?;
        let _ = writeln!(out, "\n    expires_at: {}", lease.expires_at);
        Some(())
    })
}

/// A top-level map `name` of `entries`, each key on a line of its own and
/// its fields (written by `fields`, indented four spaces) below it.
fn map<T>(
    out: &mut String,
    name: &str,
    entries: &BTreeMap<String, T>,
    fields: impl Fn(&mut String, &T) -> Option<()>,
) -> Option<()> {
    if entries.is_empty() {
        let _ = writeln!(out, "{name}: {{}}");
        return Some(());
    }
    let _ = writeln!(out, "{name}:");
    for (k, entry) in entries {
        out.push_str("  ");
        key(out, k)?;
        out.push_str(":\n");
        fields(out, entry)?;
    }
    Some(())
}

fn failures(out: &mut String, events: &[FailureEvent]) -> Option<()> {
    if events.is_empty() {
        out.push_str("on_failure: []\n");
        return Some(());
    }
    out.push_str("on_failure:\n");
    for event in events {
        out.push_str("- job: ");
        value(out, &event.job)?;
        let _ = writeln!(
            out,
            "\n  attempt: {}\n  final: {}\n  error: {}",
            event.attempt,
            event.is_final,
            event.error.as_str()
        );
    }
    Some(())
}

/// `label` then the duration, or `null`.
fn optional_duration(out: &mut String, label: &str, d: Option<Duration>) {
    out.push_str(label);
    match d {
        Some(d) => {
            let _ = write!(out, "{d}");
        }
        None => out.push_str("null"),
    }
}

/// A claim's result as its `Serialize` names it (`not_claimable`).
fn claim_word(r: ClaimResult) -> &'static str {
    match r {
        ClaimResult::Claimed => "claimed",
        ClaimResult::Deferred => "deferred",
        ClaimResult::NotClaimable => "not_claimable",
    }
}

/// A worker's result as its `Serialize` names it.
fn worker_word(r: WorkerResult) -> &'static str {
    match r {
        WorkerResult::Ok => "ok",
        WorkerResult::Fenced => "fenced",
    }
}

/// Whether `text` is written as it is, in a key or a value: letters,
/// digits and `_ . / -`, starting with a letter, and no keyword.
fn plain(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.first().is_some_and(u8::is_ascii_alphabetic)
        && bytes.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'/' | b'-'))
        && !KEYWORDS.iter().any(|k| k.eq_ignore_ascii_case(text))
}

/// Whether `text` may be quoted here as serde-saphyr quotes it alone: short
/// and printable ASCII, so no writer folds it or picks a block style.
fn quotable(text: &str) -> bool {
    text.len() <= LONGEST_QUOTED && text.bytes().all(|b| (0x20..0x7f).contains(&b))
}

/// Writes `text` as a map key.
fn key(out: &mut String, text: &str) -> Option<()> {
    if plain(text) {
        out.push_str(text);
        return Some(());
    }
    if !quotable(text) {
        return None;
    }
    let alone = serde_saphyr::to_string(&BTreeMap::from([(text, 0)])).ok()?;
    let written = alone.strip_suffix(": 0\n").filter(|k| !k.contains('\n'))?;
    out.push_str(written);
    Some(())
}

/// Writes `text` as a map value or a sequence item.
fn value(out: &mut String, text: &str) -> Option<()> {
    if plain(text) {
        out.push_str(text);
        return Some(());
    }
    if !quotable(text) {
        return None;
    }
    let alone = serde_saphyr::to_string(&BTreeMap::from([("k", text)])).ok()?;
    let written = alone.strip_prefix("k: ")?.strip_suffix('\n').filter(|v| !v.contains('\n'))?;
    out.push_str(written);
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::{LastError, Status};
    use proptest::prelude::*;

    fn through_serde_saphyr(o: &Outcome) -> String {
        serde_saphyr::to_string(o).expect("serializes")
    }

    #[test]
    fn every_shipped_scenario_s_outcome_is_written_as_serde_saphyr_writes_it() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
        let scenarios = crate::scenario::load_dir(&root, &[]).expect("the corpus loads");
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let mut direct = 0;
        for s in &scenarios {
            let outcome = runtime.block_on(crate::runner::check_model(s)).outcome;
            let expected = through_serde_saphyr(&outcome);
            if let Some(written) = write(&outcome) {
                assert_eq!(written, expected, "{}", s.name);
                direct += 1;
            }
            assert_eq!(outcome.to_yaml(), expected, "{}", s.name);
        }
        // Every shipped outcome's texts are plain or short: none needs the fallback.
        assert_eq!(direct, scenarios.len());
    }

    #[test]
    fn a_text_that_is_not_plain_is_quoted_as_serde_saphyr_quotes_it_and_a_line_break_is_left_to_it() {
        let mut o = Outcome::default();
        for (i, name) in ["y", "No", "1", "job:Report", "c /1", "v ", "-x", "a#b", "'q'", "~", ""].iter().enumerate() {
            o.jobs.insert((*name).to_owned(), job(Some(name)));
            o.leases
                .insert(format!("key:{name}"), LeaseOutcome { owner: (*name).to_owned(), expires_at: Duration::ZERO });
            o.steps.push(Some(StepResult::Scan(vec![(*name).to_owned(), format!("j{i}")])));
        }
        let written = write(&o).expect("short printable texts are written here");
        assert_eq!(written, through_serde_saphyr(&o));
        assert!(written.contains("\"y\""), "{written}");
        o.jobs.insert("two\nlines".into(), job(None));
        assert_eq!(write(&o), None);
        assert_eq!(o.to_yaml(), through_serde_saphyr(&o));
    }

    fn job(token: Option<&str>) -> JobOutcome {
        JobOutcome {
            status: Status::Processing,
            attempts: 1,
            claim_token: token.map(str::to_owned),
            heartbeat_at: None,
            run_at: Duration::from_micros(-1),
            updated_at: Duration::ZERO,
            failed_at: None,
            completed_at: None,
            last_error: None,
        }
    }

    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z][a-z0-9_/-]{0,6}",
            "(y|n|yes|No|ON|off|true|Null|nan|Inf|~)",
            "[ -~]{0,10}",
            "[a-z]{1,3}[\n\t\u{e9}\u{0}][a-z]{0,3}",
            "[a-z]{70,80}",
        ]
    }

    fn duration() -> impl Strategy<Value = Duration> {
        prop_oneof![Just(Duration::ZERO), (-400_000_000_000i64..400_000_000_000).prop_map(Duration::from_micros)]
    }

    fn worker() -> impl Strategy<Value = WorkerResult> {
        prop_oneof![Just(WorkerResult::Ok), Just(WorkerResult::Fenced)]
    }

    fn step() -> impl Strategy<Value = Option<StepResult>> {
        prop_oneof![
            Just(None),
            any::<u64>().prop_map(|n| Some(StepResult::Reap(n))),
            any::<u64>().prop_map(|n| Some(StepResult::Apply(n))),
            prop::collection::vec(text(), 0..3).prop_map(|ids| Some(StepResult::Scan(ids))),
            prop_oneof![Just(ClaimResult::Claimed), Just(ClaimResult::Deferred), Just(ClaimResult::NotClaimable)]
                .prop_map(|r| Some(StepResult::Claim(r))),
            worker().prop_map(|r| Some(StepResult::Heartbeat(r))),
            (worker(), any::<bool>()).prop_map(|(r, l)| Some(StepResult::Complete(r, l))),
            (worker(), any::<bool>()).prop_map(|(r, l)| Some(StepResult::Fail(r, l))),
        ]
    }

    fn job_outcome() -> impl Strategy<Value = JobOutcome> {
        let status = prop_oneof![
            Just(Status::Pending),
            Just(Status::Processing),
            Just(Status::Completed),
            Just(Status::Failed),
            Just(Status::Interrupted)
        ];
        let error = prop::option::of(prop_oneof![Just(LastError::Timeout), Just(LastError::Failed)]);
        let times = (prop::option::of(duration()), duration(), duration(), prop::option::of(duration()));
        (status, any::<i64>(), prop::option::of(text()), times, prop::option::of(duration()), error).prop_map(
            |(
                status,
                attempts,
                claim_token,
                (heartbeat_at, run_at, updated_at, failed_at),
                completed_at,
                last_error,
            )| {
                JobOutcome {
                    status,
                    attempts,
                    claim_token,
                    heartbeat_at,
                    run_at,
                    updated_at,
                    failed_at,
                    completed_at,
                    last_error,
                }
            },
        )
    }

    fn outcome() -> impl Strategy<Value = Outcome> {
        let lease = (text(), duration()).prop_map(|(owner, expires_at)| LeaseOutcome { owner, expires_at });
        let event =
            (text(), any::<i64>(), any::<bool>(), prop_oneof![Just(LastError::Timeout), Just(LastError::Failed)])
                .prop_map(|(job, attempt, is_final, error)| FailureEvent { job, attempt, is_final, error });
        (
            prop::collection::vec(step(), 0..5),
            prop::collection::btree_map(text(), job_outcome(), 0..4),
            prop::collection::btree_map(text(), lease, 0..3),
            prop::collection::vec(event, 0..3),
        )
            .prop_map(|(steps, jobs, leases, on_failure)| Outcome { steps, jobs, leases, on_failure })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn any_outcome_is_written_as_serde_saphyr_writes_it(o in outcome()) {
            let expected = through_serde_saphyr(&o);
            if let Some(written) = write(&o) {
                prop_assert_eq!(written, expected.clone());
            }
            prop_assert_eq!(o.to_yaml(), expected);
        }
    }
}
