//! Statement coverage: on one target, how many scenarios executed each of
//! the dialect's statements, and for each UPDATE how many saw it change a
//! row (its guard matched) and how many saw it change none (its guard
//! refused). A statement no scenario executes can be wrong without any
//! scenario noticing, so `run` fails on it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use crate::dialect::Dialect;
use crate::dialect::contract::Shape;
use crate::engine::Phase;
use crate::statement_log::{Executed, Returned};

/// The counts of one statement.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatementCount {
    /// Scenarios that executed it at least once.
    pub scenarios: usize,
    /// Scenarios in which it changed at least one row (UPDATEs only).
    pub matched: usize,
    /// Scenarios in which it changed no row at least once (UPDATEs only).
    pub missed: usize,
    /// Whether the contract reads its count of changed rows (an UPDATE,
    /// INSERT or DELETE whose guard decides something), so it has two
    /// branches.
    pub counts_rows: bool,
}

/// Coverage of one dialect's statements on one target.
#[derive(Clone, Debug)]
pub struct Coverage {
    /// The target's name.
    pub target: String,
    /// The dialect's name.
    pub dialect: String,
    /// Scenarios whose statements were added.
    pub scenarios: usize,
    /// Scenarios the target skipped (a feature the dialect's profile
    /// declares absent): the statements they would run are not judged.
    pub skipped: usize,
    /// Scenarios that failed on the target: a run that stopped early may
    /// not have reached the statements after its failure.
    pub failed: usize,
    /// Every statement the dialect defines, by its name in the files.
    pub statements: BTreeMap<String, StatementCount>,
}

impl Coverage {
    /// Zero counts for every statement `dialect` defines.
    pub fn new(target: &str, dialect: &Dialect) -> Coverage {
        // The namespace scripts run around scenarios, not for their steps:
        // with kept lanes, `create_namespace` and `drop_namespace` run once
        // per connection, not per scenario.
        let statements = dialect
            .statements()
            .filter(|s| !crate::dialect::contract::NAMESPACE_SCRIPTS.contains(&s.name.as_str()))
            // What the policy never runs cannot be covered: not counted.
            .filter(|s| !dialect.profile.policy.never_runs_statement(&s.name))
            .map(|s| {
                let counts_rows = crate::dialect::contract::spec(&s.name)
                    .is_some_and(|spec| spec.shape == Shape::Update && !spec.name.starts_with("insert_"));
                (s.name.clone(), StatementCount { counts_rows, ..StatementCount::default() })
            })
            .collect();
        Coverage {
            target: target.to_owned(),
            dialect: dialect.name.clone(),
            scenarios: 0,
            skipped: 0,
            failed: 0,
            statements,
        }
    }

    /// Adds one scenario's statement log. Read-backs made only for a trace
    /// ([`Phase::Checkpoint`]) do not count.
    pub fn add(&mut self, log: &[Executed]) {
        self.scenarios += 1;
        let mut seen = BTreeSet::new();
        let mut matched = BTreeSet::new();
        let mut missed = BTreeSet::new();
        for e in log.iter().filter(|e| e.phase != Phase::Checkpoint) {
            seen.insert(e.statement.as_str());
            if let Returned::Changed(n) = e.returned {
                if n > 0 {
                    matched.insert(e.statement.as_str())
                } else {
                    missed.insert(e.statement.as_str())
                };
            }
        }
        for name in seen.into_iter().filter(|n| !crate::dialect::contract::NAMESPACE_SCRIPTS.contains(n)) {
            let count = self.statements.entry(name.to_owned()).or_default();
            count.scenarios += 1;
            count.matched += usize::from(matched.contains(name));
            count.missed += usize::from(missed.contains(name));
        }
    }

    /// Counts a scenario the target skipped.
    pub fn add_skipped(&mut self) {
        self.skipped += 1;
    }

    /// Counts a scenario that failed on the target (its statements are
    /// added with [`Coverage::add`] too).
    pub fn add_failed(&mut self) {
        self.failed += 1;
    }

    /// Why this coverage cannot fail a run, if it cannot: skipped scenarios
    /// may be the only ones that run a statement, and failed ones may have
    /// stopped before it, so a shortfall is then reported, not judged.
    pub fn not_judged(&self) -> Option<String> {
        if self.failed > 0 {
            return Some(format!(
                "{} scenario{} failed on {} (fix those first)",
                self.failed,
                if self.failed == 1 { "" } else { "s" },
                self.target
            ));
        }
        (self.skipped > 0).then(|| {
            format!(
                "{} scenario{} skipped on {} (features its profile declares absent)",
                self.skipped,
                if self.skipped == 1 { " was" } else { "s were" },
                self.target
            )
        })
    }

    /// One line per statement executed by fewer than `min` scenarios.
    pub fn shortfalls(&self, min: usize) -> Vec<String> {
        self.statements
            .iter()
            .filter(|(_, c)| c.scenarios < min)
            .map(|(name, c)| {
                format!(
                    "`{name}` of dialect {} is executed by {} scenario{} on {} (at least {min} required): \
                     add a scenario that runs it, or pass --coverage-min 0 when this is not the whole corpus",
                    self.dialect,
                    c.scenarios,
                    if c.scenarios == 1 { "" } else { "s" },
                    self.target
                )
            })
            .collect()
    }

    /// The table `run --coverage` prints: statement, scenarios executing it,
    /// and for UPDATEs the scenarios where it changed a row and where it
    /// changed none.
    pub fn table(&self) -> String {
        let mut out = format!(
            "coverage on {} (dialect {}, {} scenarios):\n  {:<26} {:>9} {:>12} {:>12}\n",
            self.target, self.dialect, self.scenarios, "statement", "scenarios", "changed > 0", "changed = 0"
        );
        for (name, c) in &self.statements {
            let branch = |n: usize| if c.counts_rows { n.to_string() } else { "-".to_owned() };
            let _ = writeln!(out, "  {name:<26} {:>9} {:>12} {:>12}", c.scenarios, branch(c.matched), branch(c.missed));
        }
        out
    }
}

/// The one line a run interrupted by `signal` prints instead of coverage:
/// the scenarios it never started would read as statements run by too few,
/// so nothing is judged and no statement is listed.
pub fn not_judged_after(signal: &str) -> String {
    format!(
        "coverage not judged: the run was interrupted by {signal}, so not every scenario ran; \
         run the whole corpus to its end to judge it"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::Source;

    fn executed(statement: &str, phase: Phase, returned: Returned) -> Executed {
        Executed { phase, statement: statement.into(), origin: "x.sql:1".into(), binds: vec![], returned }
    }

    #[test]
    fn counts_scenarios_once_and_both_branches_of_an_update() {
        let dialect = Dialect::load(&Source::Embedded, "sqlite").unwrap();
        let mut c = Coverage::new("sqlite", &dialect);
        let step = Phase::Step { index: 0, now: crate::time::Instant::parse_rfc3339("2026-01-15T12:00:00Z").unwrap() };
        c.add(&[
            executed("reap_retry", step, Returned::Changed(1)),
            executed("reap_retry", step, Returned::Changed(0)),
            executed("read_jobs", Phase::ReadBack, Returned::Rows(2)),
            executed("read_leases", Phase::Checkpoint, Returned::Rows(0)),
        ]);
        c.add(&[executed("reap_retry", step, Returned::Changed(0))]);
        let retry = c.statements["reap_retry"];
        assert_eq!((retry.scenarios, retry.matched, retry.missed, retry.counts_rows), (2, 1, 2, true));
        assert_eq!(c.statements["read_jobs"].scenarios, 1);
        assert_eq!(c.statements["read_leases"].scenarios, 0, "a trace's read-back is not coverage");
        let short = c.shortfalls(2);
        assert!(short.iter().any(|s| s.starts_with("`read_jobs` of dialect sqlite is executed by 1 scenario on")));
        assert!(!short.iter().any(|s| s.starts_with("`reap_retry`")));
        assert!(c.table().contains("reap_retry"));
        assert!(c.statements["legacy_reap_fail"].counts_rows, "known from the contract, executed or not");
        assert_eq!(c.not_judged(), None);
        let mut failing = c.clone();
        failing.add_failed();
        assert_eq!(failing.not_judged().as_deref(), Some("1 scenario failed on sqlite (fix those first)"));
        c.add_skipped();
        assert_eq!(
            c.not_judged().as_deref(),
            Some("1 scenario was skipped on sqlite (features its profile declares absent)")
        );
        assert!(!c.statements["insert_job"].counts_rows);
    }
}
