//! proptest strategies for [`Case`]: settings at their edges (grace off,
//! 1..29 raised to the floor, 30, longer than any window; timeouts <= 0;
//! not idempotent; exclusive and keyed classes), jobs whose instants lie
//! exactly on, one microsecond before or one after the scan floor, the
//! grace, the claim window and the window, and steps mixing full reaps,
//! two reapers' scan/apply interleavings, claims, beats, completions,
//! failures, advances (backward too) and `set`; in one case of four, a
//! race: a scan, then operations on one job, then its apply. Sizes stay
//! small (at most 6 jobs and 12 steps) so that a case runs in milliseconds.
//!
//! Every choice shrinks toward the scenario format's default (a 300 s
//! timeout and grace, idempotent, loadable, no zone, the default clock), so
//! a shrunk case differs from a plain scenario only where it must.

use proptest::prelude::*;

use super::case::{Case, ClassCase, Edge, GRACES, JobCase, LeaseCase, Offset, StepCase};
use crate::outcome::Status;

/// Starting clocks, µs since the epoch: the scenario default, both New York
/// DST switches of 2026, the 2038 `TIMESTAMP` limit, and 1970 and
/// 2200 (the range every backend stores is wider: docs/scenario-format.md, "Time range").
const CLOCKS: &[i64] = &[
    1_768_478_400_000_000, // 2026-01-15T12:00:00Z
    1_772_953_200_000_000, // 2026-03-08T07:00:00Z, 02:00 in New York
    1_793_512_800_000_000, // 2026-11-01T06:00:00Z, 01:00 EST in New York
    2_147_483_647_000_000, // 2038-01-19T03:14:07Z
    172_800_000_000,       // 1970-01-03T00:00:00Z
    7_258_032_000_000_000, // 2199-12-31T00:00:00Z
];

/// Session zones every target knows (those the corpus uses).
const ZONES: &[&str] = &["+05:30", "America/New_York", "America/Los_Angeles", "Asia/Kathmandu", "Asia/Tokyo"];

/// Class timeouts, seconds: <= 0 (the poll timeout applies), tiny, the 60 s
/// turn of `max(60, timeout)`, the default, an hour.
const TIMEOUTS: &[i64] = &[300, 3600, 61, 60, 59, 30, 1, 0, -5];

/// Poll timeouts of reap steps, seconds (<= 0 means 300).
const POLLS: &[i64] = &[300, 45, 3600, 0, -1];

fn pick<T: Clone + std::fmt::Debug + 'static>(values: &'static [T]) -> impl Strategy<Value = T> + Clone {
    proptest::sample::select(values)
}

/// -1, 0 or +1 µs most of the time, sometimes a sub-second amount.
fn nudge() -> impl Strategy<Value = i64> + Clone {
    prop_oneof![4 => -1i64..=1, 1 => -999_999i64..=999_999]
}

fn edge() -> impl Strategy<Value = Edge> + Clone {
    prop_oneof![
        1 => Just(Edge::Zero),
        2 => Just(Edge::ScanFloor),
        2 => Just(Edge::Grace),
        2 => Just(Edge::ClaimWindow),
        3 => Just(Edge::Window),
        2 => (-120i64..=8000).prop_map(Edge::Seconds),
    ]
}

fn offset() -> impl Strategy<Value = Offset> + Clone {
    (edge(), nudge()).prop_map(|(edge, nudge)| Offset { edge, nudge })
}

/// An advance: usually forward by an edge, sometimes back a little.
fn advance() -> impl Strategy<Value = Offset> + Clone {
    prop_oneof![
        4 => offset(),
        1 => (-90i64..=0, nudge()).prop_map(|(s, nudge)| Offset { edge: Edge::Seconds(s), nudge }),
    ]
}

fn class() -> impl Strategy<Value = ClassCase> {
    (
        pick(TIMEOUTS),
        prop::bool::weighted(0.2),
        prop::option::weighted(0.6, pick(GRACES)),
        pick(&[3i64, 0, 1, 2]),
        prop_oneof![Just(2i64), Just(1), Just(7)],
        prop_oneof![Just(3600i64), Just(3), Just(10)],
        prop::bool::weighted(0.3),
        prop::bool::weighted(0.2),
        prop::bool::weighted(0.1),
    )
        .prop_map(
            |(timeout, interrupts, grace, max_retries, base_delay, max_delay, exclusive, keyed, unloadable)| {
                ClassCase {
                    timeout,
                    idempotent: !interrupts,
                    grace,
                    max_retries,
                    base_delay,
                    max_delay,
                    exclusive,
                    keyed,
                    loadable: !unloadable,
                }
            },
        )
}

fn status() -> impl Strategy<Value = Status> {
    prop_oneof![
        6 => Just(Status::Processing),
        4 => Just(Status::Pending),
        1 => Just(Status::Completed),
        1 => Just(Status::Failed),
        1 => Just(Status::Interrupted),
    ]
}

fn job() -> impl Strategy<Value = JobCase> {
    (
        (0usize..3, prop::bool::weighted(0.2), status(), 0i64..=4, prop::option::weighted(0.2, 0i64..=3)),
        prop_oneof![
            6 => Just(None),
            1 => Just(Some(None)),
            2 => pick(&[-1i64, 0, 1, 45, 300, 3600]).prop_map(|t| Some(Some(t))),
        ],
        (offset(), prop::option::weighted(0.6, offset()), offset(), prop::bool::weighted(0.2)),
    )
        .prop_map(
            |(
                (class, other_queue, status, attempts, max_retries),
                claim_timeout,
                (claimed, heartbeat, run_at, keyed),
            )| {
                JobCase {
                    class,
                    other_queue,
                    status,
                    attempts,
                    max_retries,
                    claim_timeout,
                    claimed,
                    heartbeat,
                    run_at,
                    keyed,
                }
            },
        )
}

fn lease() -> impl Strategy<Value = LeaseCase> {
    (prop::option::of(0usize..3), 0usize..6, -5i64..=40, nudge())
        .prop_map(|(class, owner, expires_secs, nudge)| LeaseCase { class, owner, expires_secs, nudge })
}

fn queue() -> impl Strategy<Value = Option<bool>> + Clone {
    prop::option::weighted(0.2, any::<bool>())
}

fn attempt() -> impl Strategy<Value = Option<u64>> + Clone {
    prop::option::weighted(0.3, 1u64..=3)
}

fn step() -> impl Strategy<Value = StepCase> {
    let job = 0usize..6;
    prop_oneof![
        4 => (prop::option::weighted(0.3, pick(POLLS)), queue())
            .prop_map(|(timeout, queue)| StepCase::Reap { timeout, queue }),
        2 => (any::<bool>(), prop::option::weighted(0.3, pick(POLLS)), queue())
            .prop_map(|(second, timeout, queue)| StepCase::Scan { second, timeout, queue }),
        2 => any::<bool>().prop_map(|second| StepCase::Apply { second }),
        3 => job.clone().prop_map(|job| StepCase::Claim { job }),
        3 => (job.clone(), attempt()).prop_map(|(job, attempt)| StepCase::Heartbeat { job, attempt }),
        1 => (job.clone(), attempt()).prop_map(|(job, attempt)| StepCase::Complete { job, attempt }),
        1 => (job.clone(), attempt()).prop_map(|(job, attempt)| StepCase::Fail { job, attempt }),
        5 => (job, advance(), prop::bool::weighted(0.1)).prop_map(|(job, by, back)| StepCase::Advance { job, by, back }),
        1 => pick(GRACES).prop_map(|grace| StepCase::Set { grace }),
    ]
}

/// An operation between a scan and its apply; its job is replaced by the
/// race's.
fn between() -> impl Strategy<Value = StepCase> {
    prop_oneof![
        3 => (advance(), prop::bool::weighted(0.5)).prop_map(|(by, back)| StepCase::Advance { job: 0, by, back }),
        2 => Just(StepCase::Reap { timeout: None, queue: None }),
        2 => Just(StepCase::Claim { job: 0 }),
        2 => Just(StepCase::Heartbeat { job: 0, attempt: None }),
        1 => Just(StepCase::Complete { job: 0, attempt: None }),
        1 => Just(StepCase::Fail { job: 0, attempt: None }),
        1 => (any::<bool>(), pick(POLLS)).prop_map(|(second, timeout)| StepCase::Scan {
            second,
            timeout: Some(timeout),
            queue: None
        }),
    ]
}

/// The same step acting on `job`.
fn on_job(step: StepCase, job: usize) -> StepCase {
    match step {
        StepCase::Claim { .. } => StepCase::Claim { job },
        StepCase::Heartbeat { attempt, .. } => StepCase::Heartbeat { job, attempt },
        StepCase::Complete { attempt, .. } => StepCase::Complete { job, attempt },
        StepCase::Fail { attempt, .. } => StepCase::Fail { job, attempt },
        StepCase::Advance { by, back, .. } => StepCase::Advance { job, by, back },
        other => other,
    }
}

/// A race (`docs/reaper-spec.md`, reap step 4): reaper `r` or `r2` scans,
/// other operations on one job follow (full reaps, claims, beats, clocks
/// running behind), then the scan is applied; a few random steps around.
fn race() -> impl Strategy<Value = Vec<StepCase>> {
    (
        0usize..6,
        any::<bool>(),
        prop::collection::vec(step(), 0..=3),
        prop::collection::vec(between(), 1..=5),
        prop::collection::vec(step(), 0..=2),
    )
        .prop_map(|(job, second, before, between, after)| {
            let mut steps = before;
            steps.push(StepCase::Scan { second, timeout: None, queue: None });
            steps.extend(between.into_iter().map(|s| on_job(s, job)));
            steps.push(StepCase::Apply { second });
            steps.extend(after);
            steps
        })
}

/// Any case: 1 to 3 classes, 1 to 6 jobs, 0 to 12 steps (a race in one
/// case of four).
pub fn case() -> impl Strategy<Value = Case> {
    (
        (pick(CLOCKS), 0i64..1_000_000, pick(GRACES), prop::bool::weighted(0.15)),
        prop::option::weighted(0.2, pick(ZONES)),
        prop::collection::vec(class(), 1..=3),
        prop::collection::vec(job(), 1..=6),
        prop::option::weighted(0.5, lease()),
        prop_oneof![3 => prop::collection::vec(step(), 0..=12), 1 => race()],
    )
        .prop_map(|((clock, micros, app_grace, legacy), zone, classes, jobs, lease, steps)| Case {
            now: clock + micros,
            app_grace,
            legacy,
            zone,
            classes,
            jobs,
            lease,
            steps,
        })
}
