//! Validation equals execution: every instant a run can reach stays in the
//! declared range [`crate::time::Instant::MIN`]..=[`crate::time::Instant::MAX`] (docs/scenario-format.md,
//! "Time range").
//!
//! The clock is known at every step (only `advance` moves it), so this
//! walks the steps with it and checks, with checked arithmetic, the
//! instants each step may compute at that clock: setup rows, the clock
//! after each `advance`, a reap's cutoff (with the longest window any row
//! can have), a retry's `run_at` (with the largest backoff cap), a claim's
//! lease expiry and defer, a heartbeat's lease renewal. Where a value is
//! only known at run time (which row a reap finds, its attempts), the
//! bound taken is the widest the scenario allows, so a scenario that
//! passes here never computes an instant outside the range.

use super::error::ScenarioErrorKind;
use super::located::Position;
use super::types::{ReapArgs, ScanArgs, Scenario, Step};
use super::validate::Problem;
use crate::rules::{self, AppClass, MAX_DEFER_SECONDS, SCAN_FLOOR_SECONDS};
use crate::time::Duration;

/// Every instant `scenario` can reach that leaves the declared range.
pub fn check_bounds(scenario: &Scenario, problems: &mut Vec<Problem>) {
    let start = scenario.now;
    let mut out = |at: Option<Position>, what: String| problems.push((at, ScenarioErrorKind::OutOfRange { what }));
    for job in &scenario.jobs {
        let fields =
            [("claimed", Some(&job.claimed)), ("heartbeat", job.heartbeat.as_ref()), ("run_at", Some(&job.run_at))];
        for (name, spec) in fields.into_iter().filter_map(|(n, s)| s.map(|s| (n, s))) {
            if spec.checked_resolve(start).is_none() {
                out(
                    spec.position().or(job.id.position()),
                    format!("`{name}: {}` of job `{}`", spec.value(), job.id.as_str()),
                );
            }
        }
    }
    for lease in &scenario.leases {
        if lease.expires.checked_resolve(start).is_none() {
            out(
                lease.expires.position(),
                format!("`expires: {}` of lease `{}`", lease.expires.value(), lease.name.as_str()),
            );
        }
    }
    let longest = Longest::of(scenario);
    let mut now = start;
    let mut app_grace = scenario.settings.heartbeat_grace;
    for step in &scenario.steps {
        // What this step computes, as offsets from the clock.
        let reached: Vec<(&str, Option<Duration>)> = match step.value() {
            Step::Advance(d) => {
                let Some(next) = now.checked_add(*d) else {
                    out(step.position(), format!("the clock after `advance: {d}` from {now}"));
                    return;
                };
                now = next;
                continue;
            }
            Step::Set(s) => {
                app_grace = s.heartbeat_grace;
                continue;
            }
            Step::Reap(ReapArgs { timeout, .. }) | Step::Scan(ScanArgs { timeout, .. }) => vec![
                ("the reap's cutoff (now minus the longest window)", longest.window(*timeout).map(|w| -w)),
                ("the reap's scan floor", Some(-Duration::from_secs(SCAN_FLOOR_SECONDS))),
                ("a retry's `run_at` (now plus the largest `max_delay`)", secs(longest.max_delay.0)),
                ("a retry's `run_at` (now plus the smallest `max_delay`)", secs(longest.max_delay.1)),
            ],
            Step::Apply(_) | Step::Complete(_) => continue,
            // An unknown job or class is reported by the other checks.
            Step::Claim(c) => {
                let Some(class) = class_of(scenario, c.job.as_str()) else { continue };
                vec![
                    ("the claim's lease expiry", Some(rules::lease_window(&class))),
                    ("a deferred claim's `run_at`", Some(Duration::from_secs(MAX_DEFER_SECONDS))),
                ]
            }
            Step::Heartbeat(r) => {
                let Some(class) = class_of(scenario, r.job.as_str()) else { continue };
                vec![("the heartbeat's lease renewal", Some(rules::lease_renewal(&class, class.grace(app_grace))))]
            }
            Step::Fail(r) => {
                let Some(class) = class_of(scenario, r.job.as_str()) else { continue };
                vec![
                    ("the retry's `run_at` (now plus `max_delay`)", secs(class.max_delay.max(0))),
                    ("the retry's `run_at` (now plus `max_delay`)", secs(class.max_delay.min(0))),
                ]
            }
        };
        // `None`: the offset itself does not fit in 64-bit microseconds.
        for (what, offset) in reached {
            if offset.and_then(|d| now.checked_add(d)).is_none() {
                out(step.position(), format!("{what} at clock {now}"));
            }
        }
    }
}

/// `seconds` as a duration, when it fits.
fn secs(seconds: i64) -> Option<Duration> {
    Duration::checked_from_secs(seconds)
}

/// The app's view of the class of job `id`; `None` for an unknown job or
/// class (reported by the other checks).
fn class_of(scenario: &Scenario, id: &str) -> Option<AppClass> {
    let job = scenario.jobs.iter().find(|j| j.has_row(id))?;
    scenario.classes.get(job.class.as_str()).map(AppClass::of)
}

/// The largest values a run may meet where the row decides.
struct Longest {
    /// The longest positive timeout any row can carry (class timeouts,
    /// explicit `claim_timeout`s).
    timeout: i64,
    /// The largest and smallest backoff cap of any class, as the app sees
    /// it (an unloadable class uses the default cap), and 0.
    max_delay: (i64, i64),
}

impl Longest {
    fn of(scenario: &Scenario) -> Longest {
        let classes: Vec<AppClass> = scenario.classes.values().map(AppClass::of).collect();
        let timeout = classes
            .iter()
            .map(|c| c.timeout)
            .chain(scenario.jobs.iter().filter_map(|j| j.claim_timeout.flatten()))
            .max()
            .unwrap_or(0);
        // `AppClass::of` already gives an unloadable class the default cap.
        let max_delay = classes.iter().map(|c| c.max_delay).fold((0, 0), |(hi, lo), c| (hi.max(c), lo.min(c)));
        Longest { timeout, max_delay }
    }

    /// The longest window a reap with this poll timeout may use: the claim
    /// window of the longest row timeout (a grace only shortens it).
    fn window(&self, poll: Option<i64>) -> Option<Duration> {
        let timeout = self.timeout.max(rules::poll_timeout(poll));
        timeout.checked_add(timeout.max(60)).and_then(secs)
    }
}

#[cfg(test)]
mod tests {
    use crate::scenario::{parse_text, validate::validate};

    /// Each problem as `line:col: message`.
    fn problems(yaml: &str) -> Vec<String> {
        let s = parse_text(yaml).unwrap_or_else(|e| panic!("{e:?}"));
        validate(&s).into_iter().map(|(p, k)| format!("{}: {k}", p.map_or("-".into(), |p| p.to_string()))).collect()
    }

    const HEAD: &str = "description: x\nnow: 9999-12-31T00:00:00Z\nclasses: { C: {} }\n";

    #[test]
    fn the_clock_after_each_advance_stays_in_range() {
        let found = problems(&format!("{HEAD}jobs: [ {{ id: a, class: C }} ]\nsteps:\n  - advance: 1d\n  - reap\n"));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].starts_with("6:5: the clock after `advance: +1d` from 9999-12-31T00:00:00Z leaves"),
            "{found:?}"
        );
    }

    #[test]
    fn setup_instants_are_checked_at_their_own_position() {
        let found = problems(&format!(
            "{HEAD}jobs: [ {{ id: a, class: C, run_at: +2d }} ]\nleases: [ {{ name: n, owner: a/1, expires: +1d }} ]\nsteps: []\n"
        ));
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].starts_with("4:36: `run_at: +2d` of job `a` leaves the range"), "{found:?}");
        assert!(found[1].starts_with("5:43: `expires: +1d` of lease `n` leaves"), "{found:?}");
    }

    #[test]
    fn what_a_step_computes_is_checked_with_the_widest_value_the_run_may_meet() {
        // A backoff cap of 2 days from the last day of the range: a retry
        // may land after it.
        let found = problems(
            "description: x\nnow: 9999-12-30T00:00:00Z\nclasses: { C: { max_delay: 172800 } }\n\
             jobs: [ { id: a, class: C } ]\nsteps:\n  - reap\n  - claim: a\n  - fail: a\n",
        );
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(
            found[0].starts_with("6:5: a retry's `run_at` (now plus the largest `max_delay`) at clock"),
            "{found:?}"
        );
        assert!(found[1].starts_with("8:5: the retry's `run_at`"), "{found:?}");
        // A huge timeout: the cutoff of a reap falls before year 1000.
        let found = problems(
            "description: x\nclasses: { C: { timeout: 200000000000 } }\njobs: [ { id: a, class: C } ]\nsteps: [ reap ]\n",
        );
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].starts_with("4:10: the reap's cutoff (now minus the longest window)"), "{found:?}");
        // A lease renewed (for 600 s) five minutes before the range ends.
        let found = problems(
            "description: x\nnow: 9999-12-31T23:55:00Z\nclasses: { C: { exclusive: true } }\n\
             jobs: [ { id: a, class: C } ]\nsteps: [ { heartbeat: a } ]\n",
        );
        assert!(found.iter().any(|f| f.starts_with("5:10: the heartbeat's lease renewal")), "{found:?}");
    }

    #[test]
    fn the_corpus_clocks_are_far_inside_the_range() {
        assert!(problems("description: x\nclasses: { C: {} }\njobs: [ { id: a, class: C, claimed: -1h } ]\nsteps: [ reap, { advance: 3650d }, reap ]\n").is_empty());
    }
}
