//! The cross-leg verdict: the one place that decides whether a set of CI
//! legs passes as a whole. Each leg already decided its own cases
//! (`runner`); this adds what only the merge can see: a leg that is
//! missing, ran nothing, was interrupted or ran another corpus, and two
//! targets whose outcomes differ where no divergence is declared.

use std::collections::BTreeMap;

use serde::Serialize;

use super::outcomes::{CaseResult, LegOutcomes};

/// Why a set of legs fails; every problem names a leg.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// The leg at fault.
    pub leg: String,
    /// What is wrong.
    pub kind: ProblemKind,
    /// The message shown: lowercase, naming the leg, saying what to do.
    pub message: String,
}

/// The kinds of [`Problem`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProblemKind {
    /// A leg named by `--expect` has no outcome file among those given.
    Missing,
    /// Two outcome files carry the same leg name.
    Duplicate,
    /// The leg ran no scenario on any database target (everything there
    /// was skipped, or it had no target but the model).
    Empty,
    /// The leg was stopped before it finished.
    Interrupted,
    /// The leg ran another corpus (or another reapcheck) than the first.
    CorpusMismatch,
    /// A case of the leg failed.
    Failed,
    /// The leg's outcome of a scenario differs from another leg's or
    /// target's, and neither declares a divergence.
    Undeclared,
}

/// Failures listed one by one per leg; the rest are counted in one line
/// (an unreachable required target fails every scenario at once).
pub const MAX_FAILURES_SHOWN: usize = 10;

/// Every problem of `legs`, given the leg names `expected` (empty: only
/// the legs given are checked). The first leg is the reference for the
/// corpus; legs should be sorted by name for stable messages.
pub fn check(legs: &[LegOutcomes], expected: &[String]) -> Vec<Problem> {
    let mut problems = Vec::new();
    let mut push = |leg: &str, kind, message: String| {
        problems.push(Problem { leg: leg.to_owned(), kind, message });
    };
    for name in expected {
        if !legs.iter().any(|l| &l.leg == name) {
            push(
                name,
                ProblemKind::Missing,
                format!(
                    "leg `{name}` is missing: no outcome file given has `\"leg\": \"{name}\"`; did its job fail before `run --report` wrote one?"
                ),
            );
        }
    }
    for (i, leg) in legs.iter().enumerate() {
        if legs[..i].iter().any(|l| l.leg == leg.leg) {
            push(
                &leg.leg,
                ProblemKind::Duplicate,
                format!("leg `{}` is given twice: name each leg once with `run --leg`", leg.leg),
            );
        }
    }
    let reference = legs.first();
    for leg in legs {
        let name = &leg.leg;
        if leg.interrupted {
            push(
                name,
                ProblemKind::Interrupted,
                format!("leg `{name}` was interrupted before it finished: its outcomes are incomplete; rerun the leg"),
            );
        }
        let ran: usize = leg.targets.iter().filter(|t| t.target != "model").map(|t| t.counts.ran()).sum();
        if ran == 0 {
            let why = leg
                .cases
                .iter()
                .find(|c| c.target != "model")
                .and_then(|c| c.reason.clone())
                .map_or_else(|| "it has no database target".to_owned(), |r| format!("every case was skipped: {r}"));
            push(
                name,
                ProblemKind::Empty,
                format!("leg `{name}` ran zero scenarios on a database ({why}); set its URL and REAPCHECK_REQUIRE"),
            );
        }
        if !leg.corpus_hash.starts_with("sha256:") {
            push(
                name,
                ProblemKind::CorpusMismatch,
                format!(
                    "leg `{name}` has no corpus hash ({}): its scenarios cannot be compared with another leg's; rerun it with a reapcheck that records one",
                    leg.corpus_hash
                ),
            );
        }
        if let Some(first) = reference
            && first.leg != leg.leg
        {
            if first.filters != leg.filters {
                let shown = |f: &[String]| {
                    if f.is_empty() { "the whole corpus".to_owned() } else { format!("only {}", f.join(" ")) }
                };
                push(
                    name,
                    ProblemKind::CorpusMismatch,
                    format!(
                        "leg `{name}` ran {} but leg `{}` ran {}: run every leg on the same scenarios (no filters)",
                        shown(&leg.filters),
                        first.leg,
                        shown(&first.filters)
                    ),
                );
            }
            if first.corpus_hash != leg.corpus_hash {
                push(
                    name,
                    ProblemKind::CorpusMismatch,
                    format!(
                        "leg `{name}` ran corpus {} but leg `{}` ran {}: run every leg on the same scenarios (the same commit and scenario sets, no filters)",
                        leg.corpus_hash, first.leg, first.corpus_hash
                    ),
                );
            }
            if first.reapcheck_version != leg.reapcheck_version {
                push(
                    name,
                    ProblemKind::CorpusMismatch,
                    format!(
                        "leg `{name}` ran reapcheck {} but leg `{}` ran {}: run every leg with the same reapcheck",
                        leg.reapcheck_version, first.leg, first.reapcheck_version
                    ),
                );
            }
        }
        // A target that was not reached is one problem with its cause.
        for t in leg.targets.iter().filter(|t| t.server == super::NOT_REACHED && t.counts.fail > 0) {
            let cause = leg
                .cases
                .iter()
                .find(|c| c.target == t.target)
                .and_then(|c| c.diff.as_deref())
                .and_then(|d| d.lines().next())
                .unwrap_or("no cause recorded")
                .trim_start_matches("not run: ");
            push(
                name,
                ProblemKind::Failed,
                format!("leg `{name}`: {} was not reached ({} scenarios not run): {cause}", t.target, t.counts.fail),
            );
        }
        let reached = |c: &&super::outcomes::CaseOutcome| c.server != super::NOT_REACHED;
        let failed: Vec<_> = leg.cases.iter().filter(|c| c.result == CaseResult::Fail).filter(reached).collect();
        for c in failed.iter().take(MAX_FAILURES_SHOWN) {
            let rerun = c.rerun.as_deref().map(|r| format!("; rerun: {r}")).unwrap_or_default();
            push(name, ProblemKind::Failed, format!("leg `{name}`: {} failed on {}{rerun}", c.scenario, c.target));
        }
        if failed.len() > MAX_FAILURES_SHOWN {
            let more = failed.len() - MAX_FAILURES_SHOWN;
            push(
                name,
                ProblemKind::Failed,
                format!("leg `{name}`: {more} more failures: see its summary.md or the matrix"),
            );
        }
    }
    different_code(legs, &mut push);
    undeclared(legs, &mut push);
    problems
}

/// A target that appears in two legs must have run the same code in both
/// (the same dialect files and policy, or the same adapter command): two
/// legs of `sqlite`, one on reapcheck's SQL and one on a port's, would
/// otherwise be merged as one column. Files that do not record it are not
/// compared.
fn different_code(legs: &[LegOutcomes], push: &mut impl FnMut(&str, ProblemKind, String)) {
    let mut first: BTreeMap<&str, (&str, &str)> = BTreeMap::new();
    for leg in legs {
        for t in leg.targets.iter().filter(|t| t.target != "model" && !t.code.is_empty()) {
            match first.get(t.target.as_str()) {
                None => {
                    first.insert(&t.target, (&t.code, &leg.leg));
                }
                Some(&(code, seen_leg)) if code != t.code => push(
                    &leg.leg,
                    ProblemKind::CorpusMismatch,
                    format!(
                        "leg `{}` ran {} with {} but leg `{seen_leg}` ran it with {code}: run every leg on the same SQL and policy (the hash covers the dialect folder's files: one changed byte differs)",
                        leg.leg, t.target, t.code
                    ),
                ),
                Some(_) => {}
            }
        }
    }
}

/// Cases that passed under the reference profile must have produced the
/// same outcome document on every leg and target: a declared divergence
/// shows as `divergence`, never as a pass with another hash.
fn undeclared(legs: &[LegOutcomes], push: &mut impl FnMut(&str, ProblemKind, String)) {
    // scenario -> the first (hash, leg, target) seen
    let mut first: BTreeMap<&str, (&str, &str, &str)> = BTreeMap::new();
    for leg in legs {
        for c in &leg.cases {
            let (CaseResult::Pass | CaseResult::New, Some(hash)) = (c.result, &c.outcome_hash) else {
                continue;
            };
            match first.get(c.scenario.as_str()) {
                None => {
                    first.insert(&c.scenario, (hash, &leg.leg, &c.target));
                }
                Some(&(seen, seen_leg, seen_target)) if seen != hash => {
                    // `run` always plays the model too: only database targets go in --db.
                    let mut db: Vec<&str> =
                        [seen_target, c.target.as_str()].into_iter().filter(|t| *t != "model").collect();
                    db.dedup();
                    let db = if db.is_empty() { "sqlite".to_owned() } else { db.join(",") };
                    push(
                        &leg.leg,
                        ProblemKind::Undeclared,
                        format!(
                            "leg `{}`: {} on {} has outcome {hash} but leg `{seen_leg}` has {seen} on {seen_target}, and no divergence is declared: compare them with `reapcheck run --db {db} --exact {}` on each leg's setup, or declare the divergence in the scenario",
                            leg.leg, c.scenario, c.target, c.scenario
                        ),
                    );
                }
                Some(_) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::matrix::tests::leg;

    fn good(name: &str, target: &str) -> LegOutcomes {
        use CaseResult::*;
        leg(
            name,
            &[
                ("grace/a", "model", Pass, "h1"),
                ("grace/b", "model", Pass, "h2"),
                ("grace/a", target, Pass, "h1"),
                ("grace/b", target, Divergence, "h9"),
            ],
        )
    }

    fn kinds(problems: &[Problem]) -> Vec<(String, ProblemKind)> {
        problems.iter().map(|p| (p.leg.clone(), p.kind)).collect()
    }

    #[test]
    fn legs_that_agree_pass() {
        let expected = ["pg".to_owned(), "my".to_owned()];
        assert_eq!(check(&[good("my", "mysql"), good("pg", "postgres")], &expected), []);
    }

    #[test]
    fn every_problem_names_its_leg() {
        use CaseResult::*;
        let mut other_corpus = good("my", "mysql");
        other_corpus.corpus_hash = "sha256:c1".into();
        other_corpus.interrupted = true;
        let empty = leg("ms", &[("grace/a", "model", Pass, "h1"), ("grace/a", "mssql", Skipped, "")]);
        let differs = leg("ck", &[("grace/a", "cockroach", Pass, "h7"), ("grace/b", "cockroach", Fail, "")]);
        let legs = [good("pg", "postgres"), other_corpus, empty, differs, good("pg", "postgres")];
        let problems = check(&legs, &["pg".to_owned(), "lite".to_owned()]);
        assert_eq!(
            kinds(&problems),
            [
                ("lite".to_owned(), ProblemKind::Missing),
                ("pg".to_owned(), ProblemKind::Duplicate),
                ("my".to_owned(), ProblemKind::Interrupted),
                ("my".to_owned(), ProblemKind::CorpusMismatch),
                ("ms".to_owned(), ProblemKind::Empty),
                ("ck".to_owned(), ProblemKind::Failed),
                ("ck".to_owned(), ProblemKind::Undeclared),
            ]
        );
        for p in &problems {
            assert!(p.message.contains(&format!("leg `{}`", p.leg)), "{}", p.message);
        }
        let undeclared = &problems[6].message;
        assert!(
            undeclared.contains("grace/a on cockroach has outcome h7 but leg `pg` has h1 on model"),
            "{undeclared}"
        );
        assert!(undeclared.contains("`reapcheck run --db cockroach --exact grace/a`"), "{undeclared}");
        assert!(
            problems[4].message.contains("every case was skipped: no REAPCHECK_mssql_URL"),
            "{}",
            problems[4].message
        );
        assert!(problems[5].message.ends_with("rerun: reapcheck run --db cockroach --exact grace/b"));
    }

    #[test]
    fn legs_on_other_scenarios_or_other_sql_or_no_corpus_hash_are_refused() {
        let full = good("local", "sqlite");
        let mut filtered = good("grace", "sqlite");
        filtered.filters = vec!["grace/".to_owned()];
        let problems = check(&[full.clone(), filtered], &[]);
        assert_eq!(kinds(&problems), [("grace".to_owned(), ProblemKind::CorpusMismatch)]);
        assert!(
            problems[0].message.contains("leg `grace` ran only grace/ but leg `local` ran the whole corpus"),
            "{}",
            problems[0].message
        );

        let mut ours = good("ours", "sqlite");
        let mut theirs = good("theirs", "sqlite");
        ours.targets
            .iter_mut()
            .filter(|t| t.target == "sqlite")
            .for_each(|t| t.code = "builtin sqlite sha256:a".into());
        theirs.targets.iter_mut().filter(|t| t.target == "sqlite").for_each(|t| t.code = "port/sqlite sha256:b".into());
        let problems = check(&[ours, theirs], &[]);
        assert_eq!(kinds(&problems), [("theirs".to_owned(), ProblemKind::CorpusMismatch)]);
        assert!(
            problems[0].message.contains("ran sqlite with port/sqlite sha256:b but leg `ours` ran it with builtin")
        );

        // Two legs whose hash could not be computed must not agree by their
        // equal error text.
        let mut a = good("a", "sqlite");
        let mut b = good("b", "postgres");
        a.corpus_hash = "unreadable: No such file or directory (os error 2)".into();
        b.corpus_hash = a.corpus_hash.clone();
        let problems = check(&[a, b], &[]);
        assert_eq!(
            kinds(&problems),
            [("a".to_owned(), ProblemKind::CorpusMismatch), ("b".to_owned(), ProblemKind::CorpusMismatch)]
        );
    }

    #[test]
    fn an_unreached_target_is_one_problem_with_its_cause() {
        let names: Vec<String> = (0..25).map(|i| format!("grace/s{i:02}")).collect();
        let cases: Vec<_> = names.iter().map(|n| (n.as_str(), "mssql", CaseResult::Fail, "")).collect();
        let mut lost = leg("ms", &cases);
        for c in &mut lost.cases {
            c.server = super::super::NOT_REACHED.to_owned();
            c.diff = Some("not run: cannot reach mssql://sa:***@127.0.0.1:1433/master".to_owned());
        }
        lost.targets.iter_mut().for_each(|t| t.server = super::super::NOT_REACHED.to_owned());
        let problems = check(&[lost], &[]);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(
            problems[0].message,
            "leg `ms`: mssql was not reached (25 scenarios not run): cannot reach mssql://sa:***@127.0.0.1:1433/master"
        );
    }

    #[test]
    fn many_failures_of_one_leg_are_counted_after_the_first_ten() {
        let names: Vec<String> = (0..25).map(|i| format!("grace/s{i:02}")).collect();
        let cases: Vec<_> = names.iter().map(|n| (n.as_str(), "mssql", CaseResult::Fail, "")).collect();
        let problems = check(&[leg("ms", &cases)], &[]);
        assert_eq!(problems.len(), MAX_FAILURES_SHOWN + 1);
        assert_eq!(problems[10].message, "leg `ms`: 15 more failures: see its summary.md or the matrix");
    }
}
