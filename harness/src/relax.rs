//! The outcome comparisons a dialect profile may relax
//! (docs/dialect-profile.md), as one normalization applied to both outcome
//! documents before the one diff renderer (`diff.rs`) compares them.

use crate::dialect::profile::{ClaimTokens, HookOrder, Profile};
use crate::outcome::{Outcome, StepResult};

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
