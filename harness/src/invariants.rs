//! Invariants that hold for every queue under every policy
//! (docs/policy.md, "Invariants that hold for every queue"), checked on
//! the state read back after setup and after every step of a scenario run
//! ([`crate::driver::Checkpoints`]), on the model and on every target.
//!
//! Unlike the outcome comparison, these need no model: they catch a port
//! or an adapter that breaks a rule even where its outcome matches a
//! pinned one. Each violation names its rule and the step.

use std::fmt;

use crate::outcome::{JobOutcome, Outcome, Status, StepResult, WorkerResult};
use crate::policy::{Field, FinishedRows, GiveUp, Policy};
use crate::rules::{self, AppClass};
use crate::scenario::{DEFAULT_REAPER, Scenario, Schema, Step};
use crate::time::{Duration, Instant};

/// One of the six rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// A reap or a re-taking claim took a job that was not yet stale.
    NoEarlyReclaim,
    /// A completed job changed.
    CompletedIsFinal,
    /// A step answered `fenced` changed something.
    FencedWriteChangesNothing,
    /// A reap right after a reap changed something.
    SecondReapIsIdle,
    /// A reap retried a job whose retries were spent.
    NoRetryPastTheLimit,
    /// A job disappeared.
    NoJobIsLost,
}

impl Rule {
    /// Its name, as docs/policy.md lists it.
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::NoEarlyReclaim => "no early reclaim",
            Rule::CompletedIsFinal => "completed is final",
            Rule::FencedWriteChangesNothing => "a fenced write changes nothing",
            Rule::SecondReapIsIdle => "a second reap is idle",
            Rule::NoRetryPastTheLimit => "no retry past the limit",
            Rule::NoJobIsLost => "no job is lost",
        }
    }
}

/// A broken invariant: the rule, the step (0-based index in `steps`) and
/// what happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The rule broken.
    pub rule: Rule,
    /// The step after which it was seen.
    pub step: usize,
    /// What happened, in words.
    pub detail: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invariant `{}` broken at step {}: {}", self.rule.as_str(), self.step + 1, self.detail)
    }
}

/// A job row with its instants made absolute again (checkpoints hold them
/// relative to the clock at that point).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Row {
    status: Status,
    attempts: i64,
    claim_token: Option<String>,
    heartbeat_at: Option<Instant>,
    run_at: Instant,
    updated_at: Instant,
    failed_at: Option<Instant>,
    completed_at: Option<Instant>,
    last_error: Option<crate::outcome::LastError>,
}

fn absolute(j: &JobOutcome, now: Instant) -> Row {
    let at = |d: Duration| now + d;
    Row {
        status: j.status,
        attempts: j.attempts,
        claim_token: j.claim_token.clone(),
        heartbeat_at: j.heartbeat_at.map(at),
        run_at: at(j.run_at),
        updated_at: at(j.updated_at),
        failed_at: j.failed_at.map(at),
        completed_at: j.completed_at.map(at),
        last_error: j.last_error,
    }
}

/// The absolute state at one checkpoint.
struct State {
    jobs: std::collections::BTreeMap<String, Row>,
    leases: Vec<(String, String, Instant)>,
}

/// `state` with every field the policy declares absent set to one fixed
/// value: what the queue does not keep cannot change, so no rule sees it
/// (an absent `updated_at` read back as NULL would otherwise move with the
/// clock and look like a change to a completed row).
fn unobserved_blank(mut state: State, policy: &Policy) -> State {
    for row in state.jobs.values_mut() {
        for field in &policy.absent {
            match field {
                Field::Attempts => row.attempts = 0,
                Field::ClaimToken => row.claim_token = None,
                Field::HeartbeatAt => row.heartbeat_at = None,
                Field::RunAt => row.run_at = Instant::MIN,
                Field::UpdatedAt => row.updated_at = Instant::MIN,
                Field::FailedAt => row.failed_at = None,
                Field::CompletedAt => row.completed_at = None,
                Field::LastError => row.last_error = None,
            }
        }
    }
    state
}

fn state(o: &Outcome, now: Instant) -> State {
    State {
        jobs: o.jobs.iter().map(|(id, j)| (id.clone(), absolute(j, now))).collect(),
        leases: o.leases.iter().map(|(n, l)| (n.clone(), l.owner.clone(), now + l.expires_at)).collect(),
    }
}

/// Checks every rule on `checkpoints` of a run of `scenario` under
/// `policy`: index 0 is the state after setup, `i + 1` after step `i`
/// (a run that stopped early has fewer). Returns every violation, in step
/// order. Rules that need a field the policy declares absent are not
/// checked (they cannot be observed).
pub fn check(scenario: &Scenario, policy: &Policy, checkpoints: &[Outcome]) -> Vec<Violation> {
    let mut violations = Vec::new();
    let mut now = scenario.now;
    let mut clocks = vec![now];
    for step in &scenario.steps {
        if let Step::Advance(d) = step.value() {
            now = now.checked_add(*d).unwrap_or(now);
        }
        clocks.push(now);
    }
    let states: Vec<State> =
        checkpoints.iter().zip(&clocks).map(|(o, &at)| unobserved_blank(state(o, at), policy)).collect();
    let mut app_grace = scenario.settings.heartbeat_grace;
    let mut claimed_here = std::collections::BTreeSet::new();
    // Each reaper's scan: its clock, its poll timeout and the grace then.
    let mut scans: std::collections::BTreeMap<String, (Instant, i64, i64)> = Default::default();
    let observed = |f: Field| !policy.absent.contains(&f);
    for (i, step) in scenario.steps.iter().enumerate() {
        let (Some(before), Some(after)) = (states.get(i), states.get(i + 1)) else { break };
        let at = clocks[i + 1];
        let result = checkpoints[i + 1].steps.get(i).cloned().flatten();
        let mut broke = |rule, detail: String| violations.push(Violation { rule, step: i, detail });
        // 2: completed is final.
        for (id, row) in before.jobs.iter().filter(|(_, r)| r.status == Status::Completed) {
            match after.jobs.get(id) {
                Some(now_row) if now_row != row => broke(
                    Rule::CompletedIsFinal,
                    format!("completed job `{id}` changed: {}", row_changes(row, now_row)),
                ),
                _ => {}
            }
        }
        // 6: no job is lost.
        for id in before.jobs.keys().filter(|id| !after.jobs.contains_key(*id)) {
            let finishes = matches!(step.value(), Step::Complete(r) | Step::Fail(r) if r.job.as_str() == id)
                || matches!(step.value(), Step::Reap(_) | Step::Apply(_));
            if !(policy.finished_rows == FinishedRows::Deleted && finishes) {
                broke(Rule::NoJobIsLost, format!("job `{id}` is no longer in the table"));
            }
        }
        // 3: a fenced write changes nothing.
        let fenced = matches!(
            result,
            Some(StepResult::Heartbeat(WorkerResult::Fenced))
                | Some(StepResult::Complete(WorkerResult::Fenced, _))
                | Some(StepResult::Fail(WorkerResult::Fenced, _))
        );
        if fenced && (before.jobs != after.jobs || before.leases != after.leases) {
            broke(
                Rule::FencedWriteChangesNothing,
                format!("the step was answered `fenced` but changed {}", changes(before, after)),
            );
        }
        // 4: a second reap is idle.
        // The same reap (poll timeout and queues) right after a reap: no
        // time has passed, so it finds nothing more.
        let same_reap = match (i.checked_sub(1).map(|p| scenario.steps[p].value()), step.value()) {
            (Some(Step::Reap(a)), Step::Reap(b)) => a == b,
            _ => false,
        };
        if same_reap && before.jobs != after.jobs {
            broke(Rule::SecondReapIsIdle, format!("a reap right after a reap changed {}", changes(before, after)));
        }
        // 1 and 5: what a reap took.
        // A claim that took a processing job re-took it (`recovery =
        // next_claim`): judged like a reap, by the class's own timeout.
        let retook = match step.value() {
            Step::Claim(c) => before.jobs.get(c.job.as_str()).is_some_and(|r| r.status == Status::Processing),
            _ => false,
        };
        let reap_clock = match step.value() {
            Step::Reap(a) => Some((at, rules::poll_timeout(a.timeout), app_grace)),
            Step::Apply(a) => scans.remove(a.reaper.as_deref().unwrap_or(DEFAULT_REAPER)),
            Step::Claim(_) if retook => Some((at, rules::poll_timeout(None), app_grace)),
            _ => None,
        };
        if let Some((reap_at, poll, grace_app)) = reap_clock {
            for (id, row) in before.jobs.iter().filter(|(_, r)| r.status == Status::Processing) {
                let Some(now_row) = after.jobs.get(id) else { continue };
                if now_row.status == Status::Processing && now_row.claim_token == row.claim_token {
                    continue;
                }
                let Some(job) = scenario.jobs.iter().find(|j| j.has_row(id)) else { continue };
                let Some(class) = scenario.classes.get(job.class.as_str()) else { continue };
                let app = AppClass::of(class);
                let claim_timeout = if retook || claimed_here.contains(id) {
                    Some(class.timeout)
                } else {
                    job.claim_timeout.unwrap_or(Some(class.timeout))
                };
                let timeout = rules::row_timeout(claim_timeout, poll);
                // last_seen is COALESCE(heartbeat_at, updated_at): a row that
                // beat needs only its beat observed (a queue without an
                // updated_at column, whose claim writes the beat, is judged too).
                let has_beat = scenario.schema == Schema::Standard && row.heartbeat_at.is_some();
                let last_seen_observed = (has_beat && observed(Field::HeartbeatAt))
                    || (observed(Field::HeartbeatAt) && observed(Field::UpdatedAt));
                if last_seen_observed {
                    let last_seen = match scenario.schema {
                        Schema::Standard => row.heartbeat_at.unwrap_or(row.updated_at),
                        Schema::Legacy => row.updated_at,
                    };
                    let grace = app.grace_under(policy, grace_app);
                    let window = rules::window_under(has_beat, grace, rules::claim_window_under(policy, timeout));
                    let cutoff = reap_at.checked_add(-Duration::from_secs(window)).unwrap_or(Instant::MIN);
                    if !policy.staleness.is_stale(last_seen, cutoff) {
                        broke(
                            Rule::NoEarlyReclaim,
                            format!(
                                "job `{id}` was reclaimed with last_seen {last_seen}, not stale against the cutoff \
                                 {cutoff} (window {window}s before the reap's clock {reap_at})"
                            ),
                        );
                    }
                }
                // Rule 5 judges reaps only: a re-taking claim that meets a
                // busy lease is undone (a deferral, `attempts` back down),
                // which is no retry; under `recovery = next_claim` the
                // re-take itself ignores the limit (delayed_job's `reserve`).
                let max_retries = job.max_retries.unwrap_or(class.max_retries);
                if !retook
                    && now_row.status == Status::Pending
                    && observed(Field::Attempts)
                    && policy.give_up == GiveUp::AfterRetries
                    && !rules::has_retry_left(policy, row.attempts, max_retries)
                {
                    broke(
                        Rule::NoRetryPastTheLimit,
                        format!(
                            "job `{id}` went back to pending after {} attempts (max_retries {max_retries})",
                            row.attempts
                        ),
                    );
                }
            }
        }
        match step.value() {
            Step::Scan(a) => {
                let name = a.reaper.clone().unwrap_or_else(|| DEFAULT_REAPER.to_owned());
                scans.insert(name, (at, rules::poll_timeout(a.timeout), app_grace));
            }
            Step::Claim(c) if matches!(result, Some(StepResult::Claim(crate::outcome::ClaimResult::Claimed))) => {
                claimed_here.insert(c.job.to_string());
            }
            Step::Set(s) => app_grace = s.heartbeat_grace,
            _ => {}
        }
    }
    violations
}

/// The job ids whose rows differ, for a message.
/// The fields that differ between two rows, `field: before -> after`.
fn row_changes(before: &Row, after: &Row) -> String {
    fn shown<T: fmt::Debug>(v: &T) -> String {
        format!("{v:?}")
    }
    fn at(v: &Option<Instant>) -> String {
        v.map_or_else(|| "null".to_owned(), |i| i.to_string())
    }
    let fields = [
        ("status", shown(&before.status), shown(&after.status)),
        ("attempts", before.attempts.to_string(), after.attempts.to_string()),
        ("claim_token", shown(&before.claim_token), shown(&after.claim_token)),
        ("heartbeat_at", at(&before.heartbeat_at), at(&after.heartbeat_at)),
        ("run_at", before.run_at.to_string(), after.run_at.to_string()),
        ("updated_at", before.updated_at.to_string(), after.updated_at.to_string()),
        ("failed_at", at(&before.failed_at), at(&after.failed_at)),
        ("completed_at", at(&before.completed_at), at(&after.completed_at)),
        ("last_error", shown(&before.last_error), shown(&after.last_error)),
    ];
    let changed: Vec<String> =
        fields.into_iter().filter(|(_, a, b)| a != b).map(|(f, a, b)| format!("{f} {a} -> {b}")).collect();
    changed.join(", ")
}

fn changes(before: &State, after: &State) -> String {
    let mut ids: Vec<&str> = before
        .jobs
        .iter()
        .filter(|(id, r)| after.jobs.get(*id) != Some(r))
        .map(|(id, _)| id.as_str())
        .chain(after.jobs.keys().filter(|id| !before.jobs.contains_key(*id)).map(String::as_str))
        .collect();
    ids.dedup();
    if before.leases != after.leases {
        ids.push("(the leases)");
    }
    format!("job(s) {}", ids.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::{self, Checkpoints};
    use crate::model::Model;

    async fn checkpoints(scenario: &Scenario, policy: &Policy) -> Checkpoints {
        let mut model = Model::under(scenario.schema, policy);
        let mut states = Checkpoints::new();
        driver::run_under(scenario, policy, &mut model, None, Some(&mut states)).await.unwrap();
        states
    }

    #[tokio::test]
    async fn the_model_breaks_no_invariant_on_the_corpus() {
        let corpus = crate::corpus::load().expect("the builtin corpus loads");
        assert!(corpus.len() > 100);
        for loaded in &corpus {
            let s = &loaded.scenario;
            let policy = Policy::default();
            let found = check(s, &policy, &checkpoints(s, &policy).await);
            assert!(
                found.is_empty(),
                "{}: {}",
                loaded.name,
                found.iter().map(|v| v.to_string()).collect::<Vec<_>>().join("; ")
            );
        }
    }

    /// Every knob away from the reference on its own, and the port of
    /// docs/policy.md's scheduler (all of them at once).
    fn policies() -> Vec<Policy> {
        use crate::policy::*;
        let one = |f: &dyn Fn(&mut Policy)| {
            let mut p = Policy::default();
            f(&mut p);
            p
        };
        vec![
            one(&|p| p.staleness = Staleness::Inclusive),
            one(&|p| p.scan_floor = ScanFloor::None),
            one(&|p| (p.claim_window, p.grace_off) = (ClaimWindow::None, GraceOff::Never)),
            one(&|p| p.claim_window = ClaimWindow::Timeout),
            one(&|p| p.grace_overrides = GraceOverrides::AppOnly),
            one(&|p| p.grace_floor = GraceFloor::None),
            one(&|p| p.retry = Retry::Immediate),
            one(&|p| p.retry = Retry::Never),
            one(&|p| p.non_idempotent = NonIdempotent::Retry),
            one(&|p| p.give_up = GiveUp::Never),
            one(&|p| p.retry_count = RetryCount::MaxAttempts),
            one(&|p| p.recovery = Recovery::NextClaim),
            one(&|p| p.fence = Fence::None),
            one(&|p| {
                (p.staleness, p.claim_window, p.grace_off) = (Staleness::Inclusive, ClaimWindow::None, GraceOff::Never);
                (p.retry, p.give_up, p.non_idempotent) = (Retry::Immediate, GiveUp::Never, NonIdempotent::Retry);
                (p.queues, p.fence, p.finished_rows) = (Queues::None, Fence::RowVersion, FinishedRows::Deleted);
            }),
        ]
    }

    #[tokio::test]
    async fn the_model_breaks_no_invariant_under_any_policy() {
        let corpus = crate::corpus::load().expect("the builtin corpus loads");
        for policy in policies() {
            for loaded in &corpus {
                let s = &loaded.scenario;
                let found = check(s, &policy, &checkpoints(s, &policy).await);
                assert!(found.is_empty(), "{} under {policy:?}: {}", loaded.name, found[0]);
            }
        }
    }

    /// Each non-reference value of a knob that decides outcomes changes the
    /// model's outcome of at least one corpus scenario: the corpus pins
    /// every knob's consequences. (`fence = row_version` is judged like the
    /// claim token, and the `state` knobs change what is compared, not the
    /// outcome, so they are not in this list.)
    #[tokio::test]
    async fn every_knob_value_changes_some_corpus_outcome() {
        let corpus = crate::corpus::load().expect("the builtin corpus loads");
        let reference = Policy::default();
        for policy in policies().into_iter().filter(|p| p.fence != crate::policy::Fence::RowVersion) {
            let mut changed = None;
            for loaded in &corpus {
                let s = &loaded.scenario;
                if policy.unjudgeable(s).is_some() {
                    continue;
                }
                let mut a = Model::under(s.schema, &reference);
                let mut b = Model::under(s.schema, &policy);
                let ra = driver::run_under(s, &reference, &mut a, None, None).await.unwrap();
                let rb = driver::run_under(s, &policy, &mut b, None, None).await.unwrap();
                if ra != rb {
                    changed = Some(loaded.name.clone());
                    break;
                }
            }
            assert!(changed.is_some(), "no corpus scenario shows {policy:?}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 64, ..Default::default() })]
        /// Fuzz drawing policies: a generated scenario under any of the
        /// policies breaks no invariant on the model.
        #[test]
        fn generated_cases_under_drawn_policies_break_no_invariant(
            case in crate::fuzz::strategy::case(),
            which in 0usize..14,
        ) {
            let policy = policies()[which % policies().len()].clone();
            let s = case.to_scenario("generated");
            let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
            let states = runtime.block_on(checkpoints(&s, &policy));
            let found = check(&s, &policy, &states);
            proptest::prop_assert!(found.is_empty(), "{}", found.iter().map(|v| v.to_string()).collect::<Vec<_>>().join("; "));
        }
    }

    fn scenario(yaml: &str) -> Scenario {
        crate::scenario::parse_text(yaml).unwrap()
    }

    #[tokio::test]
    async fn a_reclaim_of_a_fresh_heartbeat_is_an_early_reclaim() {
        // Scan sees a dead job; a heartbeat lands; a store whose apply
        // ignores the beat (a version fence heartbeats do not bump) takes it.
        let s = scenario(
            "description: x\nclasses: { C: {} }\n\
             jobs: [ { id: a, class: C, status: processing, attempts: 1, claimed: -20m, heartbeat: -10m } ]\n\
             steps: [ scan, { heartbeat: { job: a } }, apply ]\n",
        );
        let policy = Policy::default();
        let mut states = checkpoints(&s, &policy).await;
        assert!(check(&s, &policy, &states).is_empty());
        // The broken store: after apply, the job went back to pending anyway.
        let mut reclaimed = states[2].clone();
        let job = reclaimed.jobs.get_mut("a").unwrap();
        job.status = Status::Pending;
        job.claim_token = None;
        states[3] = reclaimed;
        let found = check(&s, &policy, &states);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].rule, found[0].step), (Rule::NoEarlyReclaim, 2));
        assert!(found[0].to_string().starts_with("invariant `no early reclaim` broken at step 3"), "{}", found[0]);
    }

    #[tokio::test]
    async fn a_fenced_write_that_changes_a_row_a_lost_job_and_a_changed_completion_are_caught() {
        let s = scenario(
            "description: x\nclasses: { C: {} }\n\
             jobs: [ { id: a, class: C, status: processing, attempts: 1, claimed: -1m }, { id: b, class: C, status: completed } ]\n\
             steps: [ { heartbeat: { job: a, attempt: a/9 } }, { advance: 1s } ]\n",
        );
        let policy = Policy::default();
        let mut states = checkpoints(&s, &policy).await;
        assert!(check(&s, &policy, &states).is_empty());
        states[1].jobs.get_mut("a").unwrap().heartbeat_at = Some(Duration::ZERO);
        states[2].jobs.remove("a");
        states[2].jobs.get_mut("b").unwrap().attempts = 7;
        let rules: Vec<Rule> = check(&s, &policy, &states).iter().map(|v| v.rule).collect();
        assert_eq!(rules, vec![Rule::FencedWriteChangesNothing, Rule::CompletedIsFinal, Rule::NoJobIsLost]);
    }

    #[tokio::test]
    async fn a_field_the_queue_does_not_keep_never_breaks_a_rule() {
        let s = scenario(
            "description: x\nclasses: { C: {} }\n\
             jobs: [ { id: b, class: C, status: completed } ]\n\
             steps: [ { advance: 1m } ]\n",
        );
        let policy = Policy { absent: [Field::UpdatedAt].into(), ..Policy::default() };
        let mut states = checkpoints(&s, &policy).await;
        // An absent updated_at read back as NULL moves with the clock.
        states[1].jobs.get_mut("b").unwrap().updated_at = Duration::ZERO;
        assert!(check(&s, &policy, &states).is_empty());
        // Under the reference the same change is a changed completed row.
        let rules: Vec<Rule> = check(&s, &Policy::default(), &states).iter().map(|v| v.rule).collect();
        assert_eq!(rules, vec![Rule::CompletedIsFinal]);
    }

    /// Found by `generated_cases_under_drawn_policies_break_no_invariant`:
    /// under `recovery = next_claim` a claim re-takes a stale attempt whose
    /// retries are spent, meets the dead attempt's own lease and defers.
    /// The job is back to `pending`, but by a claim undone, not by a reap.
    #[tokio::test]
    async fn a_retaking_claim_that_defers_is_no_retry_past_the_limit() {
        let s = scenario(
            "description: x\nclasses: { R: { timeout: 300, exclusive: true, max_retries: 0 } }\n\
             jobs: [ { id: a, class: R, status: processing, attempts: 1, claimed: -20m } ]\n\
             leases: [ { name: \"job:R\", owner: a/1, expires: +2m } ]\n\
             steps: [ { claim: a } ]\n",
        );
        let policy = Policy { recovery: crate::policy::Recovery::NextClaim, ..Policy::default() };
        let states = checkpoints(&s, &policy).await;
        let after = &states[1].jobs["a"];
        assert_eq!((after.status, after.attempts), (Status::Pending, 1), "the claim re-took and deferred");
        assert_eq!(check(&s, &policy, &states), vec![]);
    }

    #[tokio::test]
    async fn a_retry_with_spent_retries_and_a_busy_second_reap_are_caught() {
        let s = scenario(
            "description: x\nclasses: { C: { max_retries: 1 } }\n\
             jobs: [ { id: a, class: C, status: processing, attempts: 2, claimed: -20m } ]\n\
             steps: [ reap, reap ]\n",
        );
        let policy = Policy::default();
        let mut states = checkpoints(&s, &policy).await;
        assert!(check(&s, &policy, &states).is_empty());
        // A queue that retried instead of failing, then changed it again.
        let job = states[1].jobs.get_mut("a").unwrap();
        (job.status, job.failed_at) = (Status::Pending, None);
        states[2].jobs.get_mut("a").unwrap().status = Status::Failed;
        let rules: Vec<Rule> = check(&s, &policy, &states).iter().map(|v| v.rule).collect();
        assert_eq!(rules, vec![Rule::NoRetryPastTheLimit, Rule::SecondReapIsIdle]);
        // Under `give_up = never` the retry is the policy, not a violation.
        let forever = Policy { give_up: GiveUp::Never, ..Policy::default() };
        let rules: Vec<Rule> = check(&s, &forever, &states).iter().map(|v| v.rule).collect();
        assert_eq!(rules, vec![Rule::SecondReapIsIdle]);
    }
}
