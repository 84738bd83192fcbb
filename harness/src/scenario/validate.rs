//! Checks a parsed scenario for what the YAML shape alone cannot: that every
//! name it uses is declared. Reports every problem, not just the first.

use std::collections::{BTreeMap, BTreeSet};

use super::bounds::check_bounds;
use super::error::ScenarioErrorKind;
use super::located::{Located, Position};
use super::types::{AttemptRef, MAX_COUNT, Scenario, Schema, Step};
use crate::target::Target;

/// A problem and where it is.
pub type Problem = (Option<Position>, ScenarioErrorKind);

/// Every problem in `scenario`, in file order.
pub fn validate(scenario: &Scenario) -> Vec<Problem> {
    let mut problems = Vec::new();
    let jobs = check_jobs(scenario, &mut problems);
    check_steps(scenario, &jobs, &mut problems);
    check_expect(scenario, &jobs, &mut problems);
    check_divergence(scenario, &mut problems);
    check_leases(scenario, &mut problems);
    check_bounds(scenario, &mut problems);
    super::limits::check(scenario, &mut problems);
    if let Some(zone) = &scenario.session_time_zone
        && !is_time_zone(zone)
    {
        problems.push((zone.position(), ScenarioErrorKind::BadTimeZone(zone.to_string())));
    }
    if let Some(zone) = &scenario.app_time_zone
        && (!is_time_zone(zone) || zone.starts_with(['+', '-']))
    {
        problems.push((zone.position(), ScenarioErrorKind::BadAppTimeZone(zone.to_string())));
    }
    problems.sort_by_key(|(p, _)| *p);
    problems
}

/// The attempt labels each job's steps may name.
type Labels = BTreeMap<String, BTreeSet<String>>;

fn check_jobs(scenario: &Scenario, problems: &mut Vec<Problem>) -> Labels {
    let declared = join(scenario.classes.keys());
    let mut labels = Labels::new();
    for job in &scenario.jobs {
        if let Some(count) = &job.count
            && !(1..=MAX_COUNT).contains(count.value())
        {
            problems.push((count.position(), ScenarioErrorKind::BadCount { count: *count.value(), max: MAX_COUNT }));
        }
        // An entry with an invalid count, or an id over the name limit
        // (reported by `limits`), stands for no row: expanding a 100 KB id
        // 10,000 times took 1 GB.
        let valid_count = job.count.as_ref().is_none_or(|c| (1..=MAX_COUNT).contains(c.value()))
            && job.id.len() <= super::limits::MAX_NAME_BYTES;
        let ids = if valid_count { job.ids() } else { Vec::new() };
        for id in ids {
            if labels.insert(id.clone(), BTreeSet::new()).is_some() {
                problems.push((job.id.position(), ScenarioErrorKind::DuplicateJob(id)));
            }
        }
        if !scenario.classes.contains_key(job.class.as_str()) {
            problems.push((
                job.class.position(),
                ScenarioErrorKind::UnknownClass { class: job.class.to_string(), declared: declared.clone() },
            ));
        }
        check_queue(&job.queue, problems);
        if scenario.schema == Schema::Legacy && job.heartbeat.is_some() {
            problems.push((job.id.position(), ScenarioErrorKind::HeartbeatOnLegacy));
        }
    }
    labels
}

fn check_leases(scenario: &Scenario, problems: &mut Vec<Problem>) {
    let mut names = BTreeSet::new();
    for lease in &scenario.leases {
        if !names.insert(lease.name.as_str()) {
            problems.push((lease.name.position(), ScenarioErrorKind::DuplicateLease(lease.name.to_string())));
        }
    }
}

fn check_queue(queue: &Located<String>, problems: &mut Vec<Problem>) {
    if queue.is_empty() || queue.contains(',') {
        problems.push((queue.position(), ScenarioErrorKind::BadQueue(queue.to_string())));
    }
}

fn check_queues(queues: &Option<Vec<Located<String>>>, at: Option<Position>, problems: &mut Vec<Problem>) {
    match queues {
        Some(list) if list.is_empty() => problems.push((at, ScenarioErrorKind::EmptyQueues)),
        Some(list) => list.iter().for_each(|q| check_queue(q, problems)),
        None => {}
    }
}

fn check_steps(scenario: &Scenario, labels: &Labels, problems: &mut Vec<Problem>) {
    let known = known_jobs(scenario);
    let unknown_job = |job: &Located<String>| {
        (job.position(), ScenarioErrorKind::UnknownJob { job: job.to_string(), known: known.clone() })
    };
    // First pass: the job of every step exists, and `as:` labels are unique.
    let mut labels = labels.clone();
    for step in &scenario.steps {
        match step.value() {
            Step::Reap(a) => check_queues(&a.queues, step.position(), problems),
            Step::Scan(a) => check_queues(&a.queues, step.position(), problems),
            Step::Claim(c) => match labels.get_mut(c.job.as_str()) {
                None => problems.push(unknown_job(&c.job)),
                Some(taken) => {
                    if let Some(label) = &c.label
                        && let Some(problem) = non_canonical(&c.job, label)
                    {
                        problems.push(problem);
                    } else if let Some(label) = &c.label
                        && (!taken.insert(label.to_string()) || numbered(&c.job, label).is_some())
                    {
                        problems.push((label.position(), ScenarioErrorKind::DuplicateLabel(label.to_string())));
                    }
                }
            },
            Step::Heartbeat(r) | Step::Complete(r) | Step::Fail(r) if !labels.contains_key(r.job.as_str()) => {
                problems.push(unknown_job(&r.job));
            }
            _ => {}
        }
    }
    // Second pass: every attempt named is one the job can have.
    for step in &scenario.steps {
        if let Step::Heartbeat(r) | Step::Complete(r) | Step::Fail(r) = step.value() {
            check_attempt(r, &labels, problems);
        }
    }
}

/// `n` when `label` is `<job>/<n>` with n >= 1, written canonically (no
/// sign, no leading zeros): the label the driver gives the n-th claim.
fn numbered(job: &str, label: &str) -> Option<u64> {
    let digits = label.strip_prefix(job)?.strip_prefix('/')?;
    let n: u64 = digits.parse().ok()?;
    (n >= 1 && digits == n.to_string()).then_some(n)
}

/// A problem when `label` spells a numbered attempt of `job` another way
/// (`a/01`, `a/+1`): the driver's tokens are canonical, so such a label
/// would silently be a different attempt.
fn non_canonical(job: &str, label: &Located<String>) -> Option<Problem> {
    let digits = label.strip_prefix(job)?.strip_prefix('/')?;
    let n: u64 = digits.parse().ok()?;
    (digits != n.to_string()).then(|| {
        let canonical = if n == 0 { format!("{job}/1 or later") } else { format!("{job}/{n}") };
        (label.position(), ScenarioErrorKind::NonCanonicalAttempt { given: label.to_string(), canonical })
    })
}

fn check_attempt(r: &AttemptRef, labels: &Labels, problems: &mut Vec<Problem>) {
    let (Some(attempt), Some(taken)) = (&r.attempt, labels.get(r.job.as_str())) else {
        return;
    };
    if let Some(problem) = non_canonical(&r.job, attempt) {
        problems.push(problem);
    } else if numbered(&r.job, attempt).is_none() && !taken.contains(attempt.as_str()) {
        problems.push((
            attempt.position(),
            ScenarioErrorKind::UnknownAttempt { job: r.job.to_string(), attempt: attempt.to_string() },
        ));
    }
}

fn check_expect(scenario: &Scenario, labels: &Labels, problems: &mut Vec<Problem>) {
    let Some(expect) = &scenario.expect else { return };
    if let Some(steps) = &expect.steps
        && steps.len() != scenario.steps.len()
    {
        problems.push((
            steps.position(),
            ScenarioErrorKind::ExpectStepCount { given: steps.len(), steps: scenario.steps.len() },
        ));
    }
    for job in expect.jobs.iter().flat_map(|jobs| jobs.keys()) {
        if !labels.contains_key(job.as_str()) {
            problems.push((
                job.position(),
                ScenarioErrorKind::UnknownJob { job: job.to_string(), known: known_jobs(scenario) },
            ));
        }
    }
}

fn check_divergence(scenario: &Scenario, problems: &mut Vec<Problem>) {
    for target in scenario.divergence.keys() {
        if Target::from_name(target).is_none() {
            problems.push((
                target.position(),
                ScenarioErrorKind::UnknownTarget {
                    target: target.to_string(),
                    known: join(Target::ALL.iter().map(|t| t.name())),
                },
            ));
        }
    }
}

/// An IANA zone name (`UTC`, `Area/City`, `Etc/GMT+5`) or an offset `+HH:MM`.
fn is_time_zone(zone: &str) -> bool {
    let b = zone.as_bytes();
    let offset = b.len() == 6
        && (b[0] == b'+' || b[0] == b'-')
        && b[1..3].iter().all(u8::is_ascii_digit)
        && b[3] == b':'
        && b[4..6].iter().all(u8::is_ascii_digit);
    let name = !zone.is_empty()
        && zone.bytes().all(|c| c.is_ascii_alphanumeric() || b"/_+-".contains(&c))
        && zone.as_bytes()[0].is_ascii_alphabetic();
    offset || name
}

/// The job ids, for a message: a counted entry as its first and last id
/// (`live-0001` to `live-1000`), not a thousand names; an invalid count
/// stands for no row.
fn known_jobs(scenario: &Scenario) -> String {
    let mut entries = BTreeSet::new();
    for job in &scenario.jobs {
        let ids = match job.count.as_deref() {
            Some(n) if !(1..=MAX_COUNT).contains(n) => continue,
            _ if job.id.len() > super::limits::MAX_NAME_BYTES => continue,
            _ => job.ids(),
        };
        entries.insert(match (ids.first(), ids.last()) {
            (Some(first), Some(last)) if ids.len() > 1 => format!("`{first}` to `{last}`"),
            _ => format!("`{}`", ids.first().map_or("", String::as_str)),
        });
    }
    if entries.is_empty() { "none".to_owned() } else { entries.into_iter().collect::<Vec<_>>().join(", ") }
}

fn join<I: IntoIterator<Item = S>, S: std::fmt::Display>(items: I) -> String {
    let list: Vec<String> = items.into_iter().map(|s| format!("`{s}`")).collect();
    if list.is_empty() { "none".to_owned() } else { list.join(", ") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::parse_text;

    fn problems(yaml: &str) -> Vec<String> {
        let s = parse_text(yaml).unwrap_or_else(|e| panic!("{e:?}"));
        validate(&s).into_iter().map(|(p, k)| format!("{}: {k}", p.map_or("-".into(), |p| p.to_string()))).collect()
    }

    #[test]
    fn the_app_time_zone_is_an_iana_name() {
        for (zone, ok) in
            [("America/New_York", true), ("Australia/Lord_Howe", true), ("+05:30", false), ("Mars Base", false)]
        {
            let text = format!(
                "description: x\napp_time_zone: \"{zone}\"\nclasses: {{ C: {{}} }}\njobs: [ {{ id: a, class: C }} ]\nsteps: []\n"
            );
            let found = problems(&text);
            assert_eq!(found.is_empty(), ok, "{zone}: {found:?}");
            if !ok {
                assert!(found[0].starts_with("2:16: invalid app_time_zone"), "{found:?}");
            }
        }
    }

    #[test]
    fn every_problem_is_reported_with_its_position() {
        let found = problems(
            "description: x\nclasses: { C: {} }\njobs:\n  - { id: a, class: C }\n  - { id: a, class: D }\n\
             steps:\n  - claim: { job: a, as: a/2 }\n  - heartbeat: { job: a, attempt: b/1 }\n  - complete: z\n",
        );
        assert_eq!(
            found,
            vec![
                "5:11: duplicate job id `a`: give each job its own id",
                "5:21: unknown class `D`: declare it under `classes` (declared: `C`)",
                "7:26: attempt label `a/2` is already used for this job: choose another",
                "8:35: unknown attempt `b/1` of job `a`: use `a/<n>` or a label given with `as:` on a claim of `a`",
                "9:15: unknown job `z`: the jobs are `a`",
            ]
        );
    }

    #[test]
    fn legacy_heartbeats_queues_zones_targets_and_expect_lengths_are_checked() {
        let found = problems(
            "description: x\nschema: legacy\nsession_time_zone: Mars Base\nclasses: { C: {} }\n\
             jobs:\n  - { id: a, class: C, queue: 'x,y', heartbeat: -1m }\nsteps:\n  - reap: { queues: [] }\n\
             expect: { steps: [] }\ndivergence: { oracle: why }\n",
        );
        assert!(found.iter().any(|f| f.contains("legacy schema has no `heartbeat_at`")), "{found:?}");
        assert!(found.iter().any(|f| f.contains("invalid queue `x,y`")), "{found:?}");
        assert!(found.iter().any(|f| f.contains("`queues` is empty")), "{found:?}");
        assert!(found.iter().any(|f| f.contains("invalid session_time_zone `Mars Base`")), "{found:?}");
        assert!(found.iter().any(|f| f.contains("unknown target `oracle`")), "{found:?}");
        assert!(
            found.iter().any(|f| f.contains("expect.steps has 0 entries but the scenario has 1 steps")),
            "{found:?}"
        );
        assert_eq!(found.len(), 6, "{found:?}");
    }

    #[test]
    fn counted_entries_are_checked_row_by_row() {
        let found = problems(
            "description: x\nclasses: { C: {} }\njobs:\n  - { id: r, count: 0, class: C }\n\
             \x20 - { id: s, count: 10001, class: C }\n  - { id: t-, count: 12, class: C }\n\
             \x20 - { id: t-07, class: C }\nsteps:\n  - claim: t-12\n  - claim: t-13\n  - claim: t-7\n\
             expect:\n  jobs: { t-01: { status: pending }, t-00: { status: pending } }\n",
        );
        let positions: Vec<&str> = found.iter().map(|f| f.split(' ').next().unwrap_or_default()).collect();
        assert_eq!(positions, ["4:21:", "5:21:", "7:11:", "10:12:", "11:12:", "13:38:"], "{found:?}");
        assert!(found[0].ends_with("invalid count 0: a job entry stands for 1 to 10000 rows"), "{found:?}");
        assert!(found[1].ends_with("invalid count 10001: a job entry stands for 1 to 10000 rows"), "{found:?}");
        assert!(found[2].ends_with("duplicate job id `t-07`: give each job its own id"), "{found:?}");
        assert_eq!(
            found[3], "10:12: unknown job `t-13`: the jobs are `t-01` to `t-12`, `t-07`",
            "a counted entry is named by its first and last id"
        );
        assert!(found[4].starts_with("11:12: unknown job `t-7`"), "{found:?}");
        assert!(found[5].starts_with("13:38: unknown job `t-00`"), "{found:?}");
    }

    #[test]
    fn duplicate_leases_and_non_canonical_labels_are_refused_where_written() {
        let found = problems(
            "description: x\nclasses: { C: {} }\njobs: [ { id: a, class: C } ]\n\
             leases:\n  - { name: n, owner: a/1, expires: +1m }\n  - { name: n, owner: a/2, expires: +1m }\n\
             steps:\n  - claim: { job: a, as: a/01 }\n  - heartbeat: { job: a, attempt: a/+1 }\n\
             \x20 - complete: { job: a, attempt: a/0 }\n  - fail: { job: a, attempt: a/1 }\n",
        );
        assert_eq!(
            found,
            vec![
                "6:13: duplicate lease name `n`: give each lease row its own name",
                "8:26: attempt label `a/01` is not canonical: write `a/1` (a number without sign or leading zeros)",
                "9:35: attempt label `a/+1` is not canonical: write `a/1` (a number without sign or leading zeros)",
                "10:34: unknown attempt `a/0` of job `a`: use `a/<n>` or a label given with `as:` on a claim of `a`",
            ]
        );
    }

    #[test]
    fn expect_step_counts_and_time_zones_have_positions() {
        let found = problems(
            "description: x\nsession_time_zone: Mars Base\nclasses: { C: {} }\njobs: [ { id: a, class: C } ]\n\
             steps: [ reap ]\nexpect:\n  steps: [ { reap: 1 }, null ]\n",
        );
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].starts_with("2:20: invalid session_time_zone `Mars Base`"), "{found:?}");
        assert!(found[1].starts_with("7:10: expect.steps has 2 entries but the scenario has 1 steps"), "{found:?}");
    }

    #[test]
    fn recognises_zone_names_and_offsets() {
        for ok in ["UTC", "America/New_York", "+05:30", "-03:00", "Asia/Kathmandu", "Etc/GMT+5"] {
            assert!(is_time_zone(ok), "{ok}");
        }
        for bad in ["", "+5:30", "05:30", "New York", "; DROP TABLE"] {
            assert!(!is_time_zone(bad), "{bad}");
        }
    }

    #[test]
    fn numbered_labels_belong_to_their_job() {
        assert_eq!(numbered("a", "a/2"), Some(2));
        assert_eq!(numbered("a", "a/0"), None);
        assert_eq!(numbered("a", "ab/1"), None);
        assert_eq!(numbered("a", "b/1"), None);
        assert_eq!(numbered("a", "a/01"), None, "only the canonical spelling is the numbered attempt");
        assert_eq!(numbered("a", "a/+1"), None);
    }
}
