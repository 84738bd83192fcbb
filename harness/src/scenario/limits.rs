//! Size limits of one scenario, so that any file `check` accepts runs in
//! bounded memory and time (docs/scenario-format.md, "Limits").
//!
//! A run reads the whole state back after setup and after every step (the
//! checkpoints that `runner` compares with the model's and that the
//! invariants walk), and each checkpoint also carries the step results and
//! hook calls so far. Memory therefore grows with rows × steps, and with
//! steps² for the results; [`checkpoint_bytes`] estimates what the
//! checkpoints of one run hold, and [`check`] refuses a scenario whose
//! estimate passes [`MAX_CHECKPOINT_BYTES`], at the step where it does.

use super::error::ScenarioErrorKind;
use super::located::Position;
use super::types::{Scenario, Step};
use super::validate::Problem;
use crate::outcome::Status;

/// The most job rows a scenario may set up, after `count` is expanded.
pub const MAX_ROWS: usize = 10_000;
/// The most `leases:` rows a scenario may set up.
pub const MAX_LEASE_ROWS: usize = 10_000;
/// The most steps a scenario may have.
pub const MAX_STEPS: usize = 2_000;
/// The longest name, in bytes: a job id (with `count`, its prefix), class,
/// queue, concurrency key, attempt label, lease name or owner, reaper name
/// or time zone. A target may take less (`outside <target>'s limits`).
pub const MAX_NAME_BYTES: usize = 8_192;
/// The longest `description`, in bytes.
pub const MAX_DESCRIPTION_BYTES: usize = 65_536;
/// The most the checkpoints of one run may hold by [`checkpoint_bytes`]'s
/// estimate, in bytes (128 MiB).
pub const MAX_CHECKPOINT_BYTES: u64 = 128 << 20;

/// Estimated bytes of one job row in a checkpoint, besides its texts.
const ROW_OVERHEAD: u64 = 160;
/// Estimated bytes of one step result or hook call in a checkpoint.
const ENTRY_OVERHEAD: u64 = 48;

/// Every limit `scenario` passes, as problems at the place to fix.
pub(super) fn check(scenario: &Scenario, problems: &mut Vec<Problem>) {
    let mut long = |position: Option<Position>, what: &str, text: &str, max: usize| {
        if text.len() > max {
            problems.push((position, ScenarioErrorKind::TooLong { what: what.to_owned(), bytes: text.len(), max }));
        }
    };
    long(Some(Position { line: 1, column: 1 }), "description", &scenario.description, MAX_DESCRIPTION_BYTES);
    for zone in [&scenario.session_time_zone, &scenario.app_time_zone].into_iter().flatten() {
        long(zone.position(), "time zone", zone, MAX_NAME_BYTES);
    }
    for (name, class) in &scenario.classes {
        // Class settings have no position of their own: the first job of
        // the class points at it.
        let at = scenario.jobs.iter().find(|j| j.class.as_str() == name).and_then(|j| j.class.position());
        long(at, "class name", name, MAX_NAME_BYTES);
        if let Some(key) = &class.concurrency_key {
            long(at, "concurrency key", key, MAX_NAME_BYTES);
        }
    }
    for job in &scenario.jobs {
        long(job.id.position(), "job id", &job.id, MAX_NAME_BYTES);
        long(job.class.position(), "class name", &job.class, MAX_NAME_BYTES);
        long(job.queue.position(), "queue", &job.queue, MAX_NAME_BYTES);
        if let Some(key) = &job.concurrency_key {
            long(job.id.position(), "concurrency key", key, MAX_NAME_BYTES);
        }
    }
    for lease in &scenario.leases {
        long(lease.name.position(), "lease name", &lease.name, MAX_NAME_BYTES);
        long(lease.name.position(), "lease owner", &lease.owner, MAX_NAME_BYTES);
    }
    for step in &scenario.steps {
        let at = step.position();
        match step.value() {
            Step::Reap(r) => r.queues.iter().flatten().for_each(|q| long(q.position(), "queue", q, MAX_NAME_BYTES)),
            Step::Scan(s) => {
                s.queues.iter().flatten().for_each(|q| long(q.position(), "queue", q, MAX_NAME_BYTES));
                s.reaper.iter().for_each(|r| long(at, "reaper name", r, MAX_NAME_BYTES));
            }
            Step::Apply(a) => a.reaper.iter().for_each(|r| long(at, "reaper name", r, MAX_NAME_BYTES)),
            Step::Claim(c) => c.label.iter().for_each(|l| long(l.position(), "attempt label", l, MAX_NAME_BYTES)),
            Step::Heartbeat(r) | Step::Complete(r) | Step::Fail(r) => {
                r.attempt.iter().for_each(|l| long(l.position(), "attempt label", l, MAX_NAME_BYTES));
            }
            Step::Advance(_) | Step::Set(_) => {}
        }
    }
    let mut rows = 0usize;
    for job in &scenario.jobs {
        // An invalid count is reported by validation and stands for no row.
        let count = match job.count.as_deref() {
            None => 1,
            Some(n) if (1..=super::types::MAX_COUNT).contains(n) => *n as usize,
            Some(_) => 0,
        };
        rows = rows.saturating_add(count);
        if rows > MAX_ROWS {
            problems.push((job.id.position(), ScenarioErrorKind::TooManyRows { rows, max: MAX_ROWS }));
            break;
        }
    }
    if let Some(lease) = scenario.leases.get(MAX_LEASE_ROWS) {
        let rows = scenario.leases.len();
        problems.push((lease.name.position(), ScenarioErrorKind::TooManyLeaseRows { rows, max: MAX_LEASE_ROWS }));
    }
    if let Some(step) = scenario.steps.get(MAX_STEPS) {
        let steps = scenario.steps.len();
        problems.push((step.position(), ScenarioErrorKind::TooManySteps { steps, max: MAX_STEPS }));
    }
    if let Err((index, bytes)) = checkpoint_bytes(scenario) {
        let position = index.and_then(|i| scenario.steps.get(i)).and_then(|s| s.position());
        let position = position.or_else(|| scenario.jobs.first().and_then(|j| j.id.position()));
        problems.push((position, ScenarioErrorKind::TooHeavy { bytes, max: MAX_CHECKPOINT_BYTES }));
    }
}

/// The estimated bytes the checkpoints of one run of `scenario` hold: after
/// setup and after each step, every job row (its texts and
/// [`ROW_OVERHEAD`]), every lease it may hold, the step results so far
/// (each scan's candidate ids among them) and the hook calls so far.
///
/// Errors: the index of the step at which the estimate passes
/// [`MAX_CHECKPOINT_BYTES`] (`None`: already after setup) and the estimate
/// there.
pub fn checkpoint_bytes(scenario: &Scenario) -> Result<u64, (Option<usize>, u64)> {
    let mut state = 0u64;
    let mut ids = 0u64;
    let mut processing = 0u64;
    let mut longest_id = 0u64;
    for job in &scenario.jobs {
        let count = job.count.as_deref().copied().unwrap_or(1).min(super::types::MAX_COUNT);
        // An id with its number, its class, queue and claim token (the
        // label: the id, `/` and a number), and a lease it may hold.
        let id = job.id.len() as u64 + 6;
        let key = job.concurrency_key.as_ref().map_or(0, |k| k.len() as u64 + 4);
        let row = ROW_OVERHEAD + 2 * id + job.class.len() as u64 + job.queue.len() as u64 + key.max(id);
        state = state.saturating_add(row.saturating_mul(count));
        ids = ids.saturating_add((id + ENTRY_OVERHEAD).saturating_mul(count));
        longest_id = longest_id.max(id);
        if job.status == Status::Processing {
            processing = processing.saturating_add(count);
        }
    }
    for lease in &scenario.leases {
        state = state.saturating_add(ROW_OVERHEAD + lease.name.len() as u64 + lease.owner.len() as u64);
    }
    let hook = ENTRY_OVERHEAD + longest_id;
    // Hook calls: at most one per processing row at setup, per claim and per fail.
    let mut hooks = processing.saturating_mul(hook);
    let mut results = 0u64;
    let mut total = state;
    if total > MAX_CHECKPOINT_BYTES {
        return Err((None, total));
    }
    for (index, step) in scenario.steps.iter().enumerate() {
        results = results.saturating_add(match step.value() {
            Step::Scan(_) => ids.saturating_add(ENTRY_OVERHEAD),
            _ => ENTRY_OVERHEAD,
        });
        if matches!(step.value(), Step::Claim(_) | Step::Fail(_)) {
            hooks = hooks.saturating_add(hook);
        }
        total = total.saturating_add(state).saturating_add(results).saturating_add(hooks);
        if total > MAX_CHECKPOINT_BYTES {
            return Err((Some(index), total));
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use crate::scenario::parse_text;

    fn errors(text: &str) -> Vec<String> {
        let s = parse_text(text).unwrap();
        let mut problems = Vec::new();
        super::check(&s, &mut problems);
        problems.into_iter().map(|(p, k)| format!("{}: {k}", p.map(|p| p.to_string()).unwrap_or_default())).collect()
    }

    fn scenario(rows: u64, steps: usize, step: &str) -> String {
        let mut text = format!(
            "description: x\nclasses: {{ C: {{}} }}\njobs:\n  - {{ id: j, count: {rows}, class: C, status: processing, attempts: 1, claimed: -1h }}\nsteps:\n"
        );
        for _ in 0..steps {
            text.push_str(&format!("  - {step}\n"));
        }
        text
    }

    #[test]
    fn rows_steps_and_their_product_are_bounded_at_the_place_that_passes_them() {
        assert!(errors(&scenario(10_000, 10, "reap")).is_empty());
        assert!(errors(&scenario(10, 2_000, "reap")).is_empty());
        let many_steps = errors(&scenario(1, 2_001, "reap"));
        assert_eq!(
            many_steps,
            [
                "2006:5: the scenario has 2001 steps, more than the 2000 a scenario may have: split it into several scenarios"
            ]
        );
        let text = format!(
            "{}  - {{ id: k, count: 2, class: C }}\nsteps: []\n",
            scenario(9_999, 0, "").trim_end_matches("steps:\n")
        );
        assert_eq!(
            errors(&text),
            [
                "5:11: the jobs have 10001 rows, more than the 10000 a scenario may have: use fewer rows (a smaller `count`)"
            ]
        );
        // The 18 KB scenario of issue 24: 10,000 rows and 2,000 reaps.
        let heavy = errors(&scenario(10_000, 2_000, "reap"));
        assert_eq!(heavy.len(), 1, "{heavy:?}");
        assert!(heavy[0].contains("the run's checkpoints would hold about"), "{heavy:?}");
        assert!(heavy[0].contains("more than the 128 MiB"), "{heavy:?}");
        // Scans copy their candidates into every later checkpoint.
        assert!(errors(&scenario(2_000, 200, "reap")).is_empty());
        assert!(!errors(&scenario(2_000, 200, "scan")).is_empty());
    }

    #[test]
    fn long_names_are_refused_with_the_limit() {
        let id = "x".repeat(8_193);
        let found = errors(&format!(
            "description: x\nclasses: {{ C: {{}} }}\njobs:\n  - {{ id: {id}, class: C }}\nsteps: []\n"
        ));
        assert_eq!(found, ["4:11: the job id has 8193 bytes, more than the 8192 a scenario may have: shorten it"]);
    }
}
