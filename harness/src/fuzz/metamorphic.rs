//! Metamorphic properties of the reference model alone (issue 7): each
//! relates two runs, or a run and a rule, so that it holds whatever the
//! outcome of any one case is.
//!
//! - A second reap without time passing changes nothing.
//! - A job beating at least every window/3 is never reaped (the window is
//!   the grace when it beat and the grace is on and shorter than the claim
//!   window: `docs/reaper-spec.md`, "Derived values").
//! - A job whose worker stopped is reaped by the first poll strictly after
//!   its window has passed, so within its window plus one poll interval.
//! - Naming any `app_time_zone` (or none) changes no corpus scenario's
//!   outcome: the zone is the adapter's, never the model's.

use std::collections::BTreeMap;

use proptest::prelude::*;
use proptest::strategy::ValueTree;

use super::case::GRACES;
use super::strategy;
use crate::driver;
use crate::model::Model;
use crate::outcome::{ClaimResult, Outcome, Status, StepResult, WorkerResult};
use crate::rules::{self, AppClass};
use crate::scenario::{
    AttemptRef, Class, DEFAULT_POLL_TIMEOUT, Job, Located, ReapArgs, Scenario, Schema, Settings, Step,
};
use crate::time::{Duration, Instant, TimeSpec};

/// Cases per property: together they stay well under 20 s in a debug build.
const CASES: u32 = 256;

fn play(scenario: &Scenario) -> Outcome {
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a runtime starts");
    runtime.block_on(driver::run(scenario, &mut Model::new(scenario.schema), None)).expect("the model never fails")
}

fn reap(timeout: Option<i64>) -> Located<Step> {
    Located::new(Step::Reap(ReapArgs { timeout, queues: None }))
}

/// One processing job `a` of class `C`, claimed and (unless `legacy` or not
/// `beat`) heartbeating at the starting clock.
fn one_job(class: Class, app_grace: i64, legacy: bool, beat: bool, steps: Vec<Located<Step>>) -> Scenario {
    let now = TimeSpec::Relative(Duration::ZERO);
    Scenario {
        description: "metamorphic".to_owned(),
        now: Instant::from_unix_micros(1_768_478_400_000_000),
        settings: Settings { heartbeat_grace: app_grace },
        schema: if legacy { Schema::Legacy } else { Schema::Standard },
        session_time_zone: None,
        app_time_zone: None,
        classes: BTreeMap::from([("C".to_owned(), class)]),
        jobs: vec![Job {
            id: Located::new("a".to_owned()),
            class: Located::new("C".to_owned()),
            queue: Located::new("default".to_owned()),
            status: Status::Processing,
            attempts: 1,
            max_retries: None,
            claim_timeout: None,
            claimed: Located::new(now),
            heartbeat: (beat && !legacy).then_some(Located::new(now)),
            run_at: Located::new(now),
            concurrency_key: None,
            count: None,
        }],
        leases: Vec::new(),
        steps,
        expect: None,
        divergence: BTreeMap::new(),
    }
}

/// A class with a positive timeout (so the poll timeout never matters),
/// its grace at the edges, idempotent or not.
fn class() -> impl Strategy<Value = Class> {
    (
        proptest::sample::select(&[1i64, 30, 59, 60, 61, 300, 3600][..]),
        prop::option::of(proptest::sample::select(GRACES)),
        any::<bool>(),
        0i64..=3,
    )
        .prop_map(|(timeout, heartbeat_grace, idempotent, max_retries)| Class {
            timeout,
            heartbeat_grace,
            idempotent,
            max_retries,
            ..Class::default()
        })
}

/// The window of job `a`, seconds, as the spec derives it.
fn window(class: &Class, app_grace: i64, has_beat: bool) -> i64 {
    let grace = AppClass::of(class).grace(app_grace);
    rules::window(has_beat, grace, rules::claim_window(class.timeout))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: CASES, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn a_second_reap_without_time_passing_changes_nothing(case in strategy::case()) {
        let mut once = case.to_scenario("once");
        once.steps.push(reap(None));
        let mut twice = once.clone();
        twice.steps.push(reap(None));
        let (first, second) = (play(&once), play(&twice));
        prop_assert_eq!(second.steps.last(), Some(&Some(StepResult::Reap(0))));
        prop_assert_eq!(&first.jobs, &second.jobs);
        prop_assert_eq!(&first.leases, &second.leases);
        prop_assert_eq!(&first.on_failure, &second.on_failure);
    }

    #[test]
    fn a_job_beating_every_window_third_is_never_reaped(
        class in class(),
        app_grace in proptest::sample::select(GRACES),
        legacy in any::<bool>(),
        beats in prop::collection::vec((0.0f64..=1.0, prop::option::of(-1i64..=3600)), 1..=12),
    ) {
        let third = window(&class, app_grace, !legacy) * 1_000_000 / 3;
        let mut steps = Vec::new();
        for (fraction, poll) in &beats {
            // Exactly a third half of the time, else any positive part of it.
            let gap = if *fraction > 0.5 { third } else { ((third as f64 * fraction * 2.0) as i64).max(1) };
            steps.push(Located::new(Step::Advance(Duration::from_micros(gap))));
            steps.push(reap(*poll));
            let attempt = AttemptRef { job: Located::new("a".to_owned()), attempt: None };
            steps.push(Located::new(Step::Heartbeat(attempt)));
        }
        let outcome = play(&one_job(class, app_grace, legacy, true, steps));
        for (i, result) in outcome.steps.iter().enumerate() {
            match i % 3 {
                1 => prop_assert_eq!(result, &Some(StepResult::Reap(0)), "step {}", i),
                2 => prop_assert_eq!(result, &Some(StepResult::Heartbeat(WorkerResult::Ok)), "step {}", i),
                _ => {}
            }
        }
        prop_assert_eq!(outcome.jobs["a"].status, Status::Processing);
    }

    #[test]
    fn a_stopped_worker_is_reaped_within_its_window_plus_one_poll(
        class in class(),
        app_grace in proptest::sample::select(GRACES),
        legacy in any::<bool>(),
        beat in any::<bool>(),
        polls_per_window in 1i64..=12,
        jitter in 0i64..1_000_000,
    ) {
        let window = window(&class, app_grace, beat && !legacy) * 1_000_000;
        let poll = (window / polls_per_window + jitter).max(1);
        // The first poll strictly after the window: `last_seen < cutoff` is strict.
        let n = window / poll + 1;
        let mut steps = Vec::new();
        for _ in 0..n {
            steps.push(Located::new(Step::Advance(Duration::from_micros(poll))));
            steps.push(reap(Some(DEFAULT_POLL_TIMEOUT)));
        }
        prop_assert!(n * poll > window && n * poll <= window + poll);
        let outcome = play(&one_job(class, app_grace, legacy, beat, steps));
        let reaps: Vec<_> = outcome.steps.iter().skip(1).step_by(2).cloned().collect();
        let (last, before) = reaps.split_last().expect("at least one poll");
        prop_assert!(before.iter().all(|r| *r == Some(StepResult::Reap(0))), "{:?}", reaps);
        prop_assert_eq!(last, &Some(StepResult::Reap(1)));
        prop_assert_ne!(outcome.jobs["a"].status, Status::Processing);
    }
}

/// The generator reaches the outcomes the differential check is for: reaps
/// that reclaim and reaps that find nothing, deferred claims, fenced
/// workers. A generator that drifted into trivial cases fails here.
#[test]
fn generated_cases_reach_every_kind_of_result() {
    let mut runner = super::check::test_runner(&super::check::FuzzSettings { cases: 1, seed: 3, max_shrink_iters: 0 });
    let (mut reclaimed, mut idle, mut deferred, mut fenced) = (0, 0, 0, 0);
    for _ in 0..500 {
        let case = strategy::case().new_tree(&mut runner).expect("cases generate").current();
        for result in play(&case.to_scenario("coverage")).steps.into_iter().flatten() {
            match result {
                StepResult::Reap(n) | StepResult::Apply(n) if n > 0 => reclaimed += 1,
                StepResult::Reap(0) => idle += 1,
                StepResult::Claim(ClaimResult::Deferred) => deferred += 1,
                StepResult::Heartbeat(WorkerResult::Fenced)
                | StepResult::Complete(WorkerResult::Fenced, _)
                | StepResult::Fail(WorkerResult::Fenced, _) => fenced += 1,
                _ => {}
            }
        }
    }
    eprintln!("reclaimed {reclaimed}, idle {idle}, deferred {deferred}, fenced {fenced}");
    assert!(reclaimed >= 100 && idle >= 100 && deferred >= 5 && fenced >= 50, "{reclaimed} {idle} {deferred} {fenced}");
}

/// The zones the app-time-zone property sets: `None` (the field removed,
/// which the `app-zone/` scenarios set), UTC, both of New York's
/// daylight-saving changes, Lord Howe's 30-minute ones, Kathmandu's +05:45
/// and Kiritimati's +14:00.
const APP_ZONES: [Option<&str>; 6] = [
    None,
    Some("UTC"),
    Some("America/New_York"),
    Some("Australia/Lord_Howe"),
    Some("Asia/Kathmandu"),
    Some("Pacific/Kiritimati"),
];

/// `app_time_zone` is the adapter's `TZ` and nothing else: the model's
/// outcome of every corpus scenario is the same whatever zone it names, so
/// a driver or model that ever read it (to shift a clock, a cutoff, or a
/// written instant) fails here, first on the `app-zone/` scenarios whose
/// instants sit on either side of a daylight-saving change.
#[test]
fn the_app_time_zone_never_changes_a_corpus_outcome() {
    let corpus = crate::corpus::load().expect("the builtin corpus loads");
    let with_zone = corpus.iter().filter(|s| s.scenario.app_time_zone.is_some()).count();
    assert!(with_zone >= 3, "only {with_zone} corpus scenarios set app_time_zone");
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a runtime starts");
    for loaded in &corpus {
        let mut scenario = loaded.scenario.clone();
        let reference = runtime
            .block_on(driver::run(&scenario, &mut Model::new(scenario.schema), None))
            .expect("the model never fails");
        for zone in APP_ZONES {
            scenario.app_time_zone = zone.map(|z| Located::new(z.to_owned()));
            let outcome = runtime
                .block_on(driver::run(&scenario, &mut Model::new(scenario.schema), None))
                .expect("the model never fails");
            assert_eq!(outcome, reference, "{} with app_time_zone {zone:?}", loaded.name);
        }
    }
}
