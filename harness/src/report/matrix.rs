//! The matrix of one or more legs: scenarios as rows grouped by concern,
//! one column per leg and target (with the server that answered), one cell
//! per case. The HTML and Markdown reports and `verdict`'s `matrix.json`
//! all render this one structure.

use serde::Serialize;

use super::outcomes::{CaseOutcome, Counts, LegOutcomes};

/// One column: a target as one leg ran it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Column {
    /// The leg's name.
    pub leg: String,
    /// `model` or the target's name.
    pub target: String,
    /// The server and version that answered.
    pub server: String,
    /// Its cases by result.
    pub counts: Counts,
    /// Whose code ran on it ([`super::outcomes::TargetSummary::code`]);
    /// empty for the model.
    pub code: String,
}

/// One row: a scenario on every column (`None` where a leg did not run it).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    /// The scenario's name.
    pub scenario: String,
    /// Its concern (folder).
    pub concern: String,
    /// One cell per column, in the columns' order.
    pub cells: Vec<Option<CaseOutcome>>,
}

/// A leg as the matrix's header shows it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LegHeader {
    /// The leg's name.
    pub leg: String,
    /// The reapcheck that ran it.
    pub reapcheck_version: String,
    /// The corpus it ran.
    pub corpus_hash: String,
    /// True when it was stopped before it finished.
    pub interrupted: bool,
    /// All its cases, the model's included, by result.
    pub counts: Counts,
}

/// The merged matrix; see the module docs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Matrix {
    /// The legs, in the order given.
    pub legs: Vec<LegHeader>,
    /// The columns: each leg's targets in the order they ran.
    pub columns: Vec<Column>,
    /// The rows, sorted by concern then scenario.
    pub rows: Vec<Row>,
}

impl Matrix {
    /// The matrix of `legs`.
    pub fn new(legs: &[LegOutcomes]) -> Matrix {
        let mut columns = Vec::new();
        let mut rows: Vec<Row> = Vec::new();
        for leg in legs {
            for t in &leg.targets {
                columns.push(Column {
                    leg: leg.leg.clone(),
                    target: t.target.clone(),
                    server: t.server.clone(),
                    counts: t.counts,
                    code: t.code.clone(),
                });
            }
        }
        let width = columns.len();
        for leg in legs {
            for case in &leg.cases {
                let Some(col) = columns.iter().position(|c| c.leg == leg.leg && c.target == case.target) else {
                    continue;
                };
                let i = match rows.iter().position(|r| r.scenario == case.scenario) {
                    Some(i) => i,
                    None => {
                        rows.push(Row {
                            scenario: case.scenario.clone(),
                            concern: case.concern.clone(),
                            cells: vec![None; width],
                        });
                        rows.len() - 1
                    }
                };
                rows[i].cells[col] = Some(case.clone());
            }
        }
        rows.sort_by(|a, b| (&a.concern, &a.scenario).cmp(&(&b.concern, &b.scenario)));
        let legs = legs
            .iter()
            .map(|l| LegHeader {
                leg: l.leg.clone(),
                reapcheck_version: l.reapcheck_version.clone(),
                corpus_hash: l.corpus_hash.clone(),
                interrupted: l.interrupted,
                counts: l.counts(),
            })
            .collect();
        Matrix { legs, columns, rows }
    }

    /// Every case of every leg, by result.
    pub fn counts(&self) -> Counts {
        let mut counts = Counts::default();
        self.rows.iter().flat_map(|r| r.cells.iter().flatten()).for_each(|c| counts.add(c.result));
        counts
    }

    /// The failed cases, row by row, with their column.
    pub fn failures(&self) -> impl Iterator<Item = (&Column, &CaseOutcome)> {
        self.rows.iter().flat_map(move |r| {
            r.cells.iter().zip(&self.columns).filter_map(|(cell, col)| {
                cell.as_ref().filter(|c| c.result == super::outcomes::CaseResult::Fail).map(|c| (col, c))
            })
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::report::outcomes::{CaseResult, SCHEMA_VERSION, TargetSummary, concern};

    /// A leg for tests: `cases` are (scenario, target, result, outcome hash).
    pub(crate) fn leg(name: &str, cases: &[(&str, &str, CaseResult, &str)]) -> LegOutcomes {
        let cases: Vec<CaseOutcome> = cases
            .iter()
            .map(|&(scenario, target, result, hash)| CaseOutcome {
                scenario: scenario.into(),
                concern: concern(scenario).into(),
                target: target.into(),
                server: format!("{target} 1.0"),
                result,
                reason: (result == CaseResult::Skipped).then(|| format!("no REAPCHECK_{target}_URL")),
                outcome_hash: (!hash.is_empty()).then(|| hash.to_owned()),
                diff: (result == CaseResult::Fail).then(|| "--- model\n+++ x\n-a\n+b <tag>\n".to_owned()),
                trace: (result == CaseResult::Fail).then(|| "trace on x: every statement\n".to_owned()),
                rerun: (result == CaseResult::Fail).then(|| format!("reapcheck run --db {target} --exact {scenario}")),
                elapsed_us: 10,
            })
            .collect();
        let mut targets: Vec<TargetSummary> = Vec::new();
        for c in &cases {
            if let Some(t) = targets.iter_mut().find(|t| t.target == c.target) {
                t.counts.add(c.result);
            } else {
                let mut counts = Counts::default();
                counts.add(c.result);
                targets.push(TargetSummary {
                    target: c.target.clone(),
                    server: c.server.clone(),
                    counts,
                    code: String::new(),
                });
            }
        }
        LegOutcomes {
            schema_version: SCHEMA_VERSION,
            reapcheck_version: "0.1.0".into(),
            leg: name.into(),
            corpus_hash: "sha256:c0".into(),
            filters: Vec::new(),
            interrupted: false,
            targets,
            cases,
        }
    }

    #[test]
    fn rows_group_by_concern_and_cells_follow_the_columns() {
        use CaseResult::*;
        let a = leg(
            "pg",
            &[("time/b", "model", Pass, "h"), ("grace/a", "model", Pass, "h"), ("time/b", "postgres", Fail, "")],
        );
        let b = leg("my", &[("grace/a", "mysql", Skipped, "")]);
        let m = Matrix::new(&[a, b]);
        let names: Vec<_> = m.columns.iter().map(|c| format!("{}/{}", c.leg, c.target)).collect();
        assert_eq!(names, ["pg/model", "pg/postgres", "my/mysql"]);
        assert_eq!(m.rows.iter().map(|r| r.scenario.as_str()).collect::<Vec<_>>(), ["grace/a", "time/b"]);
        let results = |r: &Row| r.cells.iter().map(|c| c.as_ref().map(|c| c.result)).collect::<Vec<_>>();
        assert_eq!(results(&m.rows[0]), [Some(Pass), None, Some(Skipped)]);
        assert_eq!(results(&m.rows[1]), [Some(Pass), Some(Fail), None]);
        assert_eq!(m.counts(), Counts { pass: 2, new: 0, divergence: 0, skipped: 1, fail: 1 });
        let failed: Vec<_> = m.failures().map(|(col, c)| (col.target.as_str(), c.scenario.as_str())).collect();
        assert_eq!(failed, [("postgres", "time/b")]);
    }
}
