//! A generated case: a plain description of a scenario whose every
//! reference is an index (taken modulo the list it points into) and whose
//! every instant is an *edge* of a rule, resolved when the case becomes a
//! [`Scenario`]. Because nothing names what shrinking may remove, every
//! case, shrunk or not, becomes a valid scenario.

use std::collections::BTreeMap;

use crate::outcome::Status;
use crate::rules::{self, AppClass, GRACE_FLOOR_SECONDS, SCAN_FLOOR_SECONDS};
use crate::scenario::{
    ApplyArgs, AttemptRef, ClaimArgs, Class, DEFAULT_POLL_TIMEOUT, Job, Lease, Located, ReapArgs, ScanArgs, Scenario,
    Schema, SetArgs, Settings, Step,
};
use crate::time::{Duration, Instant, TimeSpec};

/// The second queue jobs may be in, besides `default`.
pub const OTHER_QUEUE: &str = "q1";

/// The concurrency key every keyed class and job shares, so leases collide.
pub const KEY: &str = "k";

/// The name of the second reaper of `scan`/`apply` interleavings.
pub const SECOND_REAPER: &str = "r2";

/// One generated scenario, before its edges are resolved.
#[derive(Clone, Debug)]
pub struct Case {
    /// The starting clock, µs since the epoch (within 1970..2200).
    pub now: i64,
    /// The app-wide grace, seconds.
    pub app_grace: i64,
    /// The legacy table (no `heartbeat_at`).
    pub legacy: bool,
    /// The session time zone, if any.
    pub zone: Option<&'static str>,
    /// One to three classes, named `C0`, `C1`, `C2`.
    pub classes: Vec<ClassCase>,
    /// One to six jobs, named `j0` to `j5`.
    pub jobs: Vec<JobCase>,
    /// A lease row at setup, if any.
    pub lease: Option<LeaseCase>,
    /// The steps.
    pub steps: Vec<StepCase>,
}

/// A class's settings (see `Class`; every field in its own unit).
#[derive(Clone, Debug)]
pub struct ClassCase {
    /// Seconds; <= 0 falls back to the poll timeout.
    pub timeout: i64,
    /// Whether a reaped job may run again.
    pub idempotent: bool,
    /// Seconds; unset uses the app's.
    pub grace: Option<i64>,
    /// Retries after the first run.
    pub max_retries: i64,
    /// Backoff base, seconds.
    pub base_delay: i64,
    /// Backoff cap, seconds.
    pub max_delay: i64,
    /// One attempt of the class at a time.
    pub exclusive: bool,
    /// The class carries the shared key [`KEY`].
    pub keyed: bool,
    /// The app can load the class.
    pub loadable: bool,
}

/// A job row at setup.
#[derive(Clone, Debug)]
pub struct JobCase {
    /// Index into the classes, modulo their count.
    pub class: usize,
    /// In [`OTHER_QUEUE`] instead of `default`.
    pub other_queue: bool,
    /// Its status.
    pub status: Status,
    /// Claims so far.
    pub attempts: i64,
    /// Its own retries, else the class's.
    pub max_retries: Option<i64>,
    /// Unset: the class's; `Some(None)`: an old row without one.
    pub claim_timeout: Option<Option<i64>>,
    /// `updated_at`, as an edge before the clock.
    pub claimed: Offset,
    /// `heartbeat_at`, as an edge before the clock (dropped on legacy).
    pub heartbeat: Option<Offset>,
    /// `run_at`, as an edge before the clock.
    pub run_at: Offset,
    /// The job carries the shared key [`KEY`].
    pub keyed: bool,
}

/// A lease row at setup.
#[derive(Clone, Debug)]
pub struct LeaseCase {
    /// `Some(i)`: `job:C<i>` (modulo the classes); `None`: `key:k`.
    pub class: Option<usize>,
    /// The owner is attempt `<job>/1` of this job (modulo the jobs).
    pub owner: usize,
    /// Seconds from the clock to its expiry (negative: already lapsed).
    pub expires_secs: i64,
    /// Microseconds added to that.
    pub nudge: i64,
}

/// A rule's length in seconds, as seen from one job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Edge {
    /// No time.
    Zero,
    /// The 30 s scan floor.
    ScanFloor,
    /// The job's class grace, after the floor (0 when off).
    Grace,
    /// The claim window of the job's row timeout.
    ClaimWindow,
    /// `window` for a job that beat: `min(claim_window, grace)`.
    Window,
    /// A fixed number of seconds.
    Seconds(i64),
}

/// `edge` seconds, plus `nudge` microseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Offset {
    /// The rule's length.
    pub edge: Edge,
    /// Microseconds added (-1, 0 and +1 are the interesting ones).
    pub nudge: i64,
}

/// One step, its job an index modulo the jobs.
#[derive(Clone, Debug)]
pub enum StepCase {
    /// A full reap with an optional poll timeout (seconds) and queue filter
    /// (`Some(true)`: [`OTHER_QUEUE`], `Some(false)`: `default`).
    Reap {
        /// The poll timeout.
        timeout: Option<i64>,
        /// The queue filter.
        queue: Option<bool>,
    },
    /// The scan half, by reaper `r` or (`second`) [`SECOND_REAPER`].
    Scan {
        /// Which reaper.
        second: bool,
        /// The poll timeout.
        timeout: Option<i64>,
        /// The queue filter.
        queue: Option<bool>,
    },
    /// The apply half.
    Apply {
        /// Which reaper.
        second: bool,
    },
    /// A claim.
    Claim {
        /// The job.
        job: usize,
    },
    /// A heartbeat by attempt `<job>/<n>`, or the latest.
    Heartbeat {
        /// The job.
        job: usize,
        /// The attempt number.
        attempt: Option<u64>,
    },
    /// A completion.
    Complete {
        /// The job.
        job: usize,
        /// The attempt number.
        attempt: Option<u64>,
    },
    /// A worker failure.
    Fail {
        /// The job.
        job: usize,
        /// The attempt number.
        attempt: Option<u64>,
    },
    /// The clock moves by one of the job's edges plus the nudge: forward,
    /// or (`back`) backward, as for a process whose clock is behind.
    Advance {
        /// The job whose class the edge is measured for.
        job: usize,
        /// How far.
        by: Offset,
        /// Backward instead of forward.
        back: bool,
    },
    /// The app grace changes, seconds.
    Set {
        /// The new grace.
        grace: i64,
    },
}

impl Case {
    /// The scenario this case describes, with `description`. Instants in
    /// jobs lie `edge + nudge` before the clock; advances move it by that.
    /// Every generated case gives a valid scenario; a hand-made case with no
    /// jobs or classes gives one the loader refuses, never a panic.
    pub fn to_scenario(&self, description: &str) -> Scenario {
        let classes: Vec<Class> = self.classes.iter().map(ClassCase::to_class).collect();
        let class_name = |i: usize| format!("C{}", i % classes.len().max(1));
        let job_name = |i: usize| format!("j{}", i % self.jobs.len().max(1));
        let mut grace = self.app_grace;
        let edges = |job: usize, grace: i64, offset: Offset, has_beat: bool| {
            // A case without jobs or classes (never generated) measures
            // against the default class rather than panicking.
            let spec = self.jobs.get(job % self.jobs.len().max(1));
            let class = spec.and_then(|j| classes.get(j.class % classes.len().max(1))).cloned().unwrap_or_default();
            let claim_timeout = spec.and_then(|j| j.claim_timeout).unwrap_or(Some(class.timeout));
            offset.micros(&AppClass::of(&class), grace, claim_timeout, has_beat)
        };
        let jobs = self
            .jobs
            .iter()
            .enumerate()
            .map(|(i, j)| {
                let has_beat = j.heartbeat.is_some() && !self.legacy;
                let before = |o: Offset| {
                    Located::new(TimeSpec::Relative(Duration::from_micros(
                        edges(i, grace, o, has_beat).saturating_neg(),
                    )))
                };
                Job {
                    id: Located::new(job_name(i)),
                    class: Located::new(class_name(j.class)),
                    queue: Located::new(if j.other_queue { OTHER_QUEUE } else { "default" }.to_owned()),
                    status: j.status,
                    attempts: j.attempts,
                    max_retries: j.max_retries,
                    claim_timeout: j.claim_timeout,
                    claimed: before(j.claimed),
                    heartbeat: j.heartbeat.filter(|_| !self.legacy).map(before),
                    run_at: before(j.run_at),
                    concurrency_key: j.keyed.then(|| KEY.to_owned()),
                    count: None,
                }
            })
            .collect();
        let leases = self
            .lease
            .iter()
            .map(|l| Lease {
                name: Located::new(match l.class {
                    Some(c) => format!("job:{}", class_name(c)),
                    None => format!("key:{KEY}"),
                }),
                owner: format!("{}/1", job_name(l.owner)),
                expires: Located::new(TimeSpec::Relative(Duration::from_micros(
                    l.expires_secs.saturating_mul(1_000_000).saturating_add(l.nudge),
                ))),
            })
            .collect();
        let queues =
            |q: Option<bool>| q.map(|other| vec![Located::new(if other { OTHER_QUEUE } else { "default" }.to_owned())]);
        let reaper = |second: bool| second.then(|| SECOND_REAPER.to_owned());
        let attempt = |job: usize, n: Option<u64>| AttemptRef {
            job: Located::new(job_name(job)),
            attempt: n.map(|n| Located::new(format!("{}/{n}", job_name(job)))),
        };
        let mut steps = Vec::with_capacity(self.steps.len());
        for s in &self.steps {
            let step = match *s {
                StepCase::Reap { timeout, queue } => Step::Reap(ReapArgs { timeout, queues: queues(queue) }),
                StepCase::Scan { second, timeout, queue } => {
                    Step::Scan(ScanArgs { reaper: reaper(second), timeout, queues: queues(queue) })
                }
                StepCase::Apply { second } => Step::Apply(ApplyArgs { reaper: reaper(second) }),
                StepCase::Claim { job } => Step::Claim(ClaimArgs { job: Located::new(job_name(job)), label: None }),
                StepCase::Heartbeat { job, attempt: n } => Step::Heartbeat(attempt(job, n)),
                StepCase::Complete { job, attempt: n } => Step::Complete(attempt(job, n)),
                StepCase::Fail { job, attempt: n } => Step::Fail(attempt(job, n)),
                StepCase::Advance { job, by, back } => {
                    let micros = edges(job, grace, by, !self.legacy);
                    Step::Advance(Duration::from_micros(if back { micros.saturating_neg() } else { micros }))
                }
                StepCase::Set { grace: g } => {
                    grace = g;
                    Step::Set(SetArgs { heartbeat_grace: g })
                }
            };
            steps.push(Located::new(step));
        }
        Scenario {
            description: description.to_owned(),
            now: Instant::from_unix_micros(self.now),
            settings: Settings { heartbeat_grace: self.app_grace },
            schema: if self.legacy { Schema::Legacy } else { Schema::Standard },
            session_time_zone: self.zone.map(|z| Located::new(z.to_owned())),
            app_time_zone: None,
            classes: classes.into_iter().enumerate().map(|(i, c)| (format!("C{i}"), c)).collect::<BTreeMap<_, _>>(),
            jobs,
            leases,
            steps,
            expect: None,
            divergence: BTreeMap::new(),
        }
    }
}

impl ClassCase {
    fn to_class(&self) -> Class {
        Class {
            timeout: self.timeout,
            idempotent: self.idempotent,
            heartbeat_grace: self.grace,
            max_retries: self.max_retries,
            base_delay: self.base_delay,
            max_delay: self.max_delay,
            exclusive: self.exclusive,
            concurrency_key: self.keyed.then(|| KEY.to_owned()),
            loadable: self.loadable,
        }
    }
}

impl Offset {
    /// The offset in microseconds for a job of `class` whose row has
    /// `claim_timeout`, under app grace `app_grace` (seconds), measured as
    /// the reaper with the default poll timeout would (`docs/reaper-spec.md`,
    /// "Derived values").
    pub fn micros(self, class: &AppClass, app_grace: i64, claim_timeout: Option<i64>, has_beat: bool) -> i64 {
        let grace = class.grace(app_grace);
        let claim_window = rules::claim_window(rules::row_timeout(claim_timeout, DEFAULT_POLL_TIMEOUT));
        let seconds = match self.edge {
            Edge::Zero => 0,
            Edge::ScanFloor => SCAN_FLOOR_SECONDS,
            Edge::Grace => grace,
            Edge::ClaimWindow => claim_window,
            Edge::Window => rules::window(has_beat, grace, claim_window),
            Edge::Seconds(s) => s,
        };
        // Saturating: the extremes test feeds any i64 here, and a value
        // out of the range is for the loader to refuse, not to overflow.
        seconds.saturating_mul(1_000_000).saturating_add(self.nudge)
    }
}

/// Graces worth generating, seconds: off, the floor's edges, the default,
/// and one longer than any claim window generated.
/// The default comes first: shrinking moves toward it.
pub const GRACES: &[i64] = &[300, 0, -1, 1, 29, GRACE_FLOOR_SECONDS, 31, 90, 1200, 100_000];

#[cfg(test)]
mod tests {
    use super::*;

    fn offset(edge: Edge, nudge: i64, grace: Option<i64>, app: i64, claim_timeout: Option<i64>, beat: bool) -> i64 {
        let class = AppClass::of(&Class { heartbeat_grace: grace, ..Class::default() });
        Offset { edge, nudge }.micros(&class, app, claim_timeout, beat)
    }

    #[test]
    fn edges_resolve_to_the_rules_lengths() {
        assert_eq!(offset(Edge::ScanFloor, -1, None, 300, Some(300), true), 29_999_999);
        assert_eq!(offset(Edge::Grace, 1, Some(5), 300, Some(300), true), 30_000_001);
        assert_eq!(offset(Edge::Grace, 0, None, 0, Some(300), true), 0);
        assert_eq!(offset(Edge::ClaimWindow, 0, None, 300, Some(3600), true), 7_200_000_000);
        assert_eq!(offset(Edge::ClaimWindow, 0, None, 300, None, true), 600_000_000);
        assert_eq!(offset(Edge::Window, 0, None, 300, Some(3600), true), 300_000_000);
        assert_eq!(offset(Edge::Window, 0, None, 300, Some(3600), false), 7_200_000_000);
        assert_eq!(offset(Edge::Window, 0, Some(100_000), 300, Some(300), true), 600_000_000);
        assert_eq!(offset(Edge::Seconds(-60), 0, None, 300, None, true), -60_000_000);
    }

    fn empty(steps: Vec<StepCase>) -> Case {
        Case { now: 0, app_grace: 300, legacy: false, zone: None, classes: vec![], jobs: vec![], lease: None, steps }
    }

    #[test]
    fn advances_measure_the_grace_in_force_at_their_step() {
        let by = Offset { edge: Edge::Grace, nudge: 1 };
        let steps = vec![
            StepCase::Advance { job: 0, by, back: false },
            StepCase::Set { grace: 60 },
            StepCase::Advance { job: 0, by, back: true },
            StepCase::Set { grace: 0 },
            StepCase::Advance { job: 0, by, back: false },
        ];
        let advances: Vec<String> = empty(steps)
            .to_scenario("x")
            .steps
            .iter()
            .filter_map(|s| match s.value() {
                Step::Advance(d) => Some(d.to_string()),
                _ => None,
            })
            .collect();
        assert_eq!(advances, ["+5m0.000001s", "-1m0.000001s", "+0.000001s"]);
    }

    #[test]
    fn a_case_without_jobs_or_classes_gives_a_scenario_the_loader_refuses() {
        let refused = crate::fuzz::load(&empty(vec![StepCase::Claim { job: 4 }]), "x", "x").unwrap_err();
        assert!(refused.contains("unknown job `j0`"), "{refused}");
    }
}
