//! Which scenarios can kill a mutant: those whose unmutated run executed a
//! statement the mutant changes. A scenario that never executes a changed
//! statement sends the mutant exactly the SQL it sent the original (the
//! driver is deterministic: the same scenario, the same replies, the same
//! calls), so its outcome cannot differ and running it is wasted.
//!
//! The executed statements come from the baseline run's statement log
//! ([`crate::statement_log`]), the same record `run --coverage` counts
//! (docs/reports.md, "Coverage"). A mutant that no scenario executes
//! survives without a run: the corpus cannot catch it.
//!
//! The same log weighs each scenario ([`cost`]): how many statements its
//! run executes, which [`super::kill::KillOrder`] uses to try cheap
//! scenarios before expensive ones.

use std::collections::{BTreeMap, BTreeSet};

use crate::dialect::Dialect;
use crate::statement_log::{Executed, Returned};

/// The names of the statements a run executed (`legacy_reap_scan` for a
/// legacy-schema text), from its log. A statement the run did not send
/// (a `schema` whose tables were kept from an earlier run) still counts:
/// a mutant of it changes the next fresh namespace.
pub fn executed(log: &[Executed]) -> BTreeSet<String> {
    log.iter().map(|e| e.statement.clone()).collect()
}

/// The namespace scripts a run may or may not send depending on whether it
/// took a kept lane ([`crate::isolation`]): left out of [`cost`], so a
/// scenario weighs the same whichever connection it ran on.
const LIFECYCLE: &[&str] =
    &["create_namespace", "enter_namespace", "empty_namespace", "drop_namespace", "schema", "legacy_schema"];

/// What a run costs, in statements executed: one per line of its log (a
/// setup row counts one, as the server inserts each, even when rows are
/// sent as one multi-row INSERT), the namespace scripts left out
/// ([`LIFECYCLE`]: the same for every run, and sent or not depending on
/// the lane). Deterministic: the driver makes the same calls on every run
/// of the same scenario and SQL. At least 1, so that costs can divide.
pub fn cost(log: &[Executed]) -> u64 {
    let n = log.iter().filter(|e| !LIFECYCLE.contains(&e.statement.as_str())).count();
    (n as u64).max(1)
}

/// Per statement, the most rows one execution of it returned (a query)
/// or changed (an UPDATE, INSERT or DELETE) in a run, from its log.
pub fn most_rows(log: &[Executed]) -> BTreeMap<String, u64> {
    let mut most: BTreeMap<String, u64> = BTreeMap::new();
    for e in log {
        let rows = match e.returned {
            Returned::Rows(n) => n as u64,
            Returned::Changed(n) => n,
            _ => 0,
        };
        let kept = most.entry(e.statement.clone()).or_default();
        *kept = (*kept).max(rows);
    }
    most
}

/// `candidates` (scenario indices into `most`, one map per scenario from
/// [`most_rows`]) split in two, each in its order: those in which
/// `statement` returned or changed at least `rows` rows at once, and the
/// rest. Zero `rows`: all in the first.
pub fn by_rows(candidates: &[usize], most: &[BTreeMap<String, u64>], statement: &str, rows: u64) -> [Vec<usize>; 2] {
    let (first, then) = candidates
        .iter()
        .partition(|&&i| rows == 0 || most.get(i).and_then(|m| m.get(statement)).is_some_and(|n| *n >= rows));
    [first, then]
}

/// The names of the statements whose SQL differs between `original` and
/// `mutant` (a statement only one of them defines counts as changed).
pub fn changed(original: &Dialect, mutant: &Dialect) -> Vec<String> {
    let before: Vec<_> = original.statements().map(|s| (s.name.as_str(), s.sql.as_str())).collect();
    let after: Vec<_> = mutant.statements().map(|s| (s.name.as_str(), s.sql.as_str())).collect();
    let mut names: BTreeSet<&str> = BTreeSet::new();
    for (name, sql) in &before {
        if !after.iter().any(|(n, s)| n == name && s == sql) {
            names.insert(name);
        }
    }
    for (name, sql) in &after {
        if !before.iter().any(|(n, s)| n == name && s == sql) {
            names.insert(name);
        }
    }
    names.into_iter().map(str::to_owned).collect()
}

/// The indices of the scenarios (into `executed`, one set per scenario)
/// that executed at least one of `changed`, in index order.
pub fn select(changed: &[String], executed: &[BTreeSet<String>]) -> Vec<usize> {
    executed.iter().enumerate().filter(|(_, names)| changed.iter().any(|c| names.contains(c))).map(|(i, _)| i).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Phase;
    use crate::statement_log::Returned;

    fn reference() -> Dialect {
        Dialect::load(&crate::dialect::Source::Embedded, "sqlite").expect("the reference dialect loads")
    }

    fn entry(statement: &str, returned: Returned) -> Executed {
        Executed {
            phase: Phase::Setup,
            statement: statement.to_owned(),
            origin: String::new(),
            binds: Vec::new(),
            returned,
        }
    }

    #[test]
    fn executed_names_every_statement_sent_or_kept() {
        let log = [
            entry("schema", Returned::Kept),
            entry("insert_job", Returned::Done),
            entry("reap_scan", Returned::Rows(2)),
            entry("reap_scan", Returned::Rows(0)),
        ];
        let names: Vec<_> = executed(&log).into_iter().collect();
        assert_eq!(names, ["insert_job", "reap_scan", "schema"]);
    }

    #[test]
    fn most_rows_is_the_largest_result_or_change_of_each_statement_and_splits_the_candidates() {
        let log = [
            entry("insert_job", Returned::Done),
            entry("reap_scan", Returned::Rows(2)),
            entry("reap_scan", Returned::Rows(11)),
            entry("reap_retry", Returned::Changed(3)),
            entry("reap_retry", Returned::Changed(1)),
        ];
        let most = most_rows(&log);
        assert_eq!(most["reap_scan"], 11);
        assert_eq!(most["reap_retry"], 3);
        assert_eq!(most["insert_job"], 0);
        let small = most_rows(&[entry("reap_scan", Returned::Rows(1))]);
        let maps = [small, most];
        assert_eq!(by_rows(&[0, 1], &maps, "reap_scan", 11), [vec![1], vec![0]]);
        assert_eq!(by_rows(&[0, 1], &maps, "reap_scan", 12), [vec![], vec![0, 1]], "none returned 12");
        assert_eq!(by_rows(&[1, 0], &maps, "reap_scan", 0), [vec![1, 0], vec![]], "zero: all first, in order");
        assert_eq!(by_rows(&[0, 1], &maps, "claim", 2), [vec![], vec![0, 1]], "a statement not run");
    }

    #[test]
    fn cost_counts_the_statements_a_scenario_runs_not_its_namespace() {
        let log = [
            entry("create_namespace", Returned::Done),
            entry("enter_namespace", Returned::Done),
            entry("schema", Returned::Done),
            entry("insert_job", Returned::Done),
            entry("insert_job", Returned::Done),
            entry("reap_scan", Returned::Rows(2)),
            entry("read_jobs", Returned::Rows(2)),
            entry("drop_namespace", Returned::Done),
        ];
        assert_eq!(cost(&log), 4);
        // The same run on a kept lane: the same cost.
        let kept = [
            entry("empty_namespace", Returned::Done),
            entry("schema", Returned::Kept),
            entry("insert_job", Returned::Done),
            entry("insert_job", Returned::Done),
            entry("reap_scan", Returned::Rows(2)),
            entry("read_jobs", Returned::Rows(2)),
        ];
        assert_eq!(cost(&kept), 4);
        assert_eq!(cost(&[]), 1, "never 0");
    }

    #[test]
    fn changed_names_only_the_edited_statement() {
        let original = reference();
        let scan = original.find("reap_scan", crate::scenario::Schema::Standard).expect("defined").sql.clone();
        let mutant = original.with_sql("reap_scan", scan.replace('<', "<="));
        assert_eq!(changed(&original, &mutant), ["reap_scan"]);
        assert!(changed(&original, &original.clone()).is_empty(), "an unchanged copy changes nothing");
    }

    #[test]
    fn select_keeps_the_scenarios_that_executed_a_changed_statement() {
        let sets: Vec<BTreeSet<String>> =
            [vec!["insert_job", "reap_scan"], vec!["insert_job"], vec!["legacy_reap_scan"]]
                .into_iter()
                .map(|v| v.into_iter().map(str::to_owned).collect())
                .collect();
        assert_eq!(select(&["reap_scan".to_owned()], &sets), [0]);
        assert_eq!(select(&["insert_job".to_owned()], &sets), [0, 1]);
        assert_eq!(select(&["legacy_reap_scan".to_owned(), "reap_scan".to_owned()], &sets), [0, 2]);
        assert!(select(&["reap_apply".to_owned()], &sets).is_empty(), "executed by none: no run");
    }
}
