//! The outcome comparisons a dialect profile may relax
//! (docs/dialect-profile.md), as one normalization applied to both outcome
//! documents before the one diff renderer (`diff.rs`) compares them.

use crate::dialect::profile::{ClaimTokens, HookOrder, Profile};
use crate::outcome::{Outcome, Status, StepResult};
use crate::policy::{Field, FinishedRows, Policy};
use crate::snapshot;

/// `outcome` with what `profile` leaves unspecified made canonical:
/// with `claim_token_on_finished_rows = kept`, the claim token of every row
/// that is not `processing` is dropped; with `hook_order = unordered`, the
/// `on_failure` events and each `scan` step's candidates are sorted (the
/// reaper's scan order decides the hooks' order), so they compare as
/// multisets. The reference profile changes nothing.
pub fn normalize(mut outcome: Outcome, profile: &Profile) -> Outcome {
    if profile.claim_tokens == ClaimTokens::Kept {
        for job in outcome.jobs.values_mut().filter(|j| j.status != crate::outcome::Status::Processing) {
            job.claim_token = None;
        }
    }
    if profile.hook_order == HookOrder::Unordered {
        outcome.on_failure.sort_by(|a, b| {
            (&a.job, a.attempt, a.is_final, a.error.as_str()).cmp(&(&b.job, b.attempt, b.is_final, b.error.as_str()))
        });
        for step in outcome.steps.iter_mut().flatten() {
            if let StepResult::Scan(ids) = step {
                ids.sort();
            }
        }
    }
    outcome
}

/// The document `outcome` is compared by under `profile`: normalized by
/// its relaxations ([`normalize`]), as snapshot text, with the state its
/// policy says the queue does not keep left out ([`hide_state`]). Every
/// comparison of a target with the model, and every trace, goes through it.
pub fn document(outcome: Outcome, profile: &Profile) -> String {
    let outcome = normalize(outcome, profile);
    if !profile.policy.hides_state() {
        return snapshot::normalize(&outcome.to_yaml());
    }
    snapshot::normalize(&hide_state(&outcome, &profile.policy))
}

/// `outcome` as YAML without what `policy` says the queue does not keep
/// (docs/policy.md, "State a queue does not keep"): the `absent` fields of
/// every job row, and, under `finished_rows = deleted`, every row in a
/// terminal state (a deleted row reads as `gone`: not listed). The rest
/// keeps the outcome's own order.
pub fn hide_state(outcome: &Outcome, policy: &Policy) -> String {
    let deleted = policy.finished_rows == FinishedRows::Deleted;
    let mut shown = outcome.clone();
    shown.jobs.retain(|_, j| !(deleted && j.status != Status::Pending && j.status != Status::Processing));
    let mut text = String::new();
    // The job rows are the only part with absent fields: render them by
    // hand, field by field, and the rest through the outcome's own YAML.
    let yaml = Outcome { jobs: Default::default(), ..shown.clone() }.to_yaml();
    for line in yaml.lines() {
        if line == "jobs: {}" {
            text.push_str("jobs:");
            if shown.jobs.is_empty() {
                text.push_str(" {}\n");
                continue;
            }
            text.push('\n');
            for (id, job) in &shown.jobs {
                let row = serde_saphyr::to_string(job).expect("a job row always serializes");
                text.push_str(&format!("  {id}:\n"));
                for field in row.lines() {
                    let key = field.split(':').next().unwrap_or_default();
                    if Field::ALL.iter().any(|f| f.as_str() == key && policy.absent.contains(f)) {
                        continue;
                    }
                    text.push_str(&format!("    {field}\n"));
                }
            }
            continue;
        }
        text.push_str(line);
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::{FailureEvent, JobOutcome, LastError, Status};
    use crate::time::Duration;

    fn job(status: Status, token: &str) -> JobOutcome {
        JobOutcome {
            status,
            attempts: 1,
            claim_token: Some(token.to_owned()),
            heartbeat_at: None,
            run_at: Duration::ZERO,
            updated_at: Duration::ZERO,
            failed_at: None,
            completed_at: None,
            last_error: None,
        }
    }

    fn event(job: &str) -> FailureEvent {
        FailureEvent { job: job.to_owned(), attempt: 1, is_final: true, error: LastError::Timeout }
    }

    fn sample() -> Outcome {
        let mut o = Outcome {
            steps: vec![Some(StepResult::Scan(vec!["b".into(), "a".into()])), None],
            on_failure: vec![event("b"), event("a")],
            ..Outcome::default()
        };
        o.jobs.insert("a".into(), job(Status::Completed, "a/1"));
        o.jobs.insert("b".into(), job(Status::Processing, "b/1"));
        o
    }

    #[test]
    fn the_reference_profile_changes_nothing() {
        assert_eq!(normalize(sample(), &Profile::default()), sample());
    }

    #[test]
    fn kept_claim_tokens_are_ignored_on_finished_rows_only() {
        let profile = Profile { claim_tokens: ClaimTokens::Kept, ..Profile::default() };
        let o = normalize(sample(), &profile);
        assert_eq!(o.jobs["a"].claim_token, None);
        assert_eq!(o.jobs["b"].claim_token.as_deref(), Some("b/1"));
        assert_eq!(o.on_failure, sample().on_failure);
    }

    #[test]
    fn absent_fields_and_deleted_rows_are_left_out_of_the_document() {
        let mut profile = Profile::default();
        profile.policy.absent = [Field::UpdatedAt, Field::LastError].into_iter().collect();
        let text = document(sample(), &profile);
        assert!(!text.contains("updated_at") && !text.contains("last_error"), "{text}");
        assert!(text.contains("  a:\n    status: completed\n"), "{text}");
        profile.policy.finished_rows = FinishedRows::Deleted;
        let text = document(sample(), &profile);
        assert!(!text.contains("  a:"), "a completed row is gone: {text}");
        assert!(text.contains("  b:\n    status: processing\n"), "{text}");
        let mut none = sample();
        none.jobs.clear();
        assert!(document(none, &profile).contains("jobs: {}\n"));
        assert_eq!(document(sample(), &Profile::default()), snapshot::normalize(&sample().to_yaml()));
    }

    #[test]
    fn unordered_hooks_compare_as_multisets() {
        let profile = Profile { hook_order: HookOrder::Unordered, ..Profile::default() };
        let o = normalize(sample(), &profile);
        assert_eq!(o.on_failure, vec![event("a"), event("b")]);
        assert_eq!(o.steps[0], Some(StepResult::Scan(vec!["a".into(), "b".into()])));
        let mut twice = sample();
        twice.on_failure.push(event("a"));
        assert_eq!(normalize(twice, &profile).on_failure.len(), 3, "a multiset keeps repeats");
    }
}
