//! Checking a scenario's `expect` against an outcome: every key it gives
//! must equal the outcome's; each difference is named by its path.

use std::fmt::Debug;

use crate::outcome::Outcome;
use crate::scenario::Expect;

/// Every way `outcome` differs from `expect`, as `path: expected X, got Y`.
pub fn mismatches(expect: &Expect, outcome: &Outcome) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(steps) = &expect.steps {
        for (i, (want, got)) in steps.iter().zip(&outcome.steps).enumerate() {
            if let Some(want) = want
                && Some(want) != got.as_ref()
            {
                out.push(differ(&format!("expect.steps[{i}]"), want, got));
            }
        }
    }
    for (id, want) in expect.jobs.iter().flatten() {
        let path = format!("expect.jobs.{id}");
        let Some(got) = outcome.jobs.get(id.as_str()) else {
            out.push(format!("{path}: the outcome has no job `{id}`"));
            continue;
        };
        let mut field = |name: &str, want: Option<String>, got: String| {
            if let Some(want) = want
                && want != got
            {
                out.push(format!("{path}.{name}: expected {want}, got {got}"));
            }
        };
        field("status", want.status.map(|s| yaml(&s)), yaml(&got.status));
        field("attempts", want.attempts.map(|a| a.to_string()), got.attempts.to_string());
        field("claim_token", want.claim_token.as_ref().map(yaml), yaml(&got.claim_token));
        field("heartbeat_at", want.heartbeat_at.as_ref().map(yaml), yaml(&got.heartbeat_at));
        field("run_at", want.run_at.as_ref().map(yaml), yaml(&got.run_at));
        field("updated_at", want.updated_at.as_ref().map(yaml), yaml(&got.updated_at));
        field("failed_at", want.failed_at.as_ref().map(yaml), yaml(&got.failed_at));
        field("completed_at", want.completed_at.as_ref().map(yaml), yaml(&got.completed_at));
        field("last_error", want.last_error.as_ref().map(yaml), yaml(&got.last_error));
    }
    for (name, want) in expect.leases.iter().flatten() {
        let path = format!("expect.leases.{name}");
        match outcome.leases.get(name) {
            None => out.push(format!("{path}: the outcome has no lease `{name}`")),
            Some(got) => {
                if let Some(owner) = &want.owner
                    && *owner != got.owner
                {
                    out.push(format!("{path}.owner: expected {owner}, got {}", got.owner));
                }
                if let Some(expires) = &want.expires_at
                    && *expires != got.expires_at
                {
                    out.push(format!("{path}.expires_at: expected {expires}, got {}", got.expires_at));
                }
            }
        }
    }
    if let Some(events) = &expect.on_failure
        && *events != outcome.on_failure
    {
        out.push(differ("expect.on_failure", events, &outcome.on_failure));
    }
    out
}

fn differ<A: serde::Serialize + Debug, B: serde::Serialize + Debug>(path: &str, want: &A, got: &B) -> String {
    format!("{path}: expected {}, got {}", yaml(want), yaml(got))
}

/// A value as one line of YAML flow style.
fn yaml<T: serde::Serialize>(value: &T) -> String {
    let text = serde_saphyr::to_string(value).unwrap_or_default();
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    lines.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::{JobOutcome, Status, StepResult};
    use crate::time::Duration;

    fn outcome() -> Outcome {
        let mut o = Outcome { steps: vec![Some(StepResult::Reap(1)), None], ..Outcome::default() };
        o.jobs.insert(
            "a".into(),
            JobOutcome {
                status: Status::Pending,
                attempts: 1,
                claim_token: None,
                heartbeat_at: None,
                run_at: Duration::from_secs(4),
                updated_at: Duration::ZERO,
                failed_at: None,
                completed_at: None,
                last_error: None,
            },
        );
        o
    }

    fn expect(yaml: &str) -> Expect {
        serde_saphyr::from_str(yaml).unwrap()
    }

    #[test]
    fn matching_keys_pass_and_absent_keys_match_anything() {
        let e =
            expect("steps: [ { reap: 1 }, null ]\njobs:\n  a: { status: pending, run_at: +4s, claim_token: null }\n");
        assert_eq!(mismatches(&e, &outcome()), Vec::<String>::new());
    }

    #[test]
    fn each_difference_is_named_by_its_path() {
        let e =
            expect("steps: [ { reap: 0 }, null ]\njobs:\n  a: { status: failed, run_at: +5s }\n  b: { attempts: 1 }\n");
        assert_eq!(
            mismatches(&e, &outcome()),
            vec![
                "expect.steps[0]: expected reap: 0, got reap: 1",
                "expect.jobs.a.status: expected failed, got pending",
                "expect.jobs.a.run_at: expected +5s, got +4s",
                "expect.jobs.b: the outcome has no job `b`",
            ]
        );
    }
}
