//! Mutants generated from the syntax tree of each statement worth mutating
//! (the contract's Update and Query statements; scripts such as `schema`
//! and the namespace statements are not mutated), printed back to SQL.

use std::collections::BTreeSet;
use std::fmt;

use super::parse::parse;
use super::walk::{edit, sites};
use super::{clauses, exprs};
use crate::dialect::contract::{self, Shape};
use crate::dialect::text::Grammar;
use crate::dialect::{Dialect, Statement};

/// The operator a generated mutant comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Operator {
    /// One conjunct of a `WHERE` dropped.
    DropConjunct,
    /// A comparison operator replaced.
    Comparison,
    /// `COALESCE(a, b)` (or `IFNULL`, ...) swapped, split or bounded.
    Coalesce,
    /// `IS NULL` and `IS NOT NULL` swapped.
    NullCheck,
    /// A numeric or interval constant moved by one or set to 0.
    Constant,
    /// `ORDER BY` dropped.
    DropOrderBy,
    /// A row limit appended to a query.
    AppendLimit,
    /// One `SET` assignment dropped.
    DropAssignment,
    /// Two bound parameters of the same type swapped.
    SwapParameters,
}

impl Operator {
    /// Every operator, in report order.
    pub const ALL: [Operator; 9] = [
        Operator::DropConjunct,
        Operator::Comparison,
        Operator::Coalesce,
        Operator::NullCheck,
        Operator::Constant,
        Operator::DropOrderBy,
        Operator::AppendLimit,
        Operator::DropAssignment,
        Operator::SwapParameters,
    ];

    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Operator::DropConjunct => "drop-conjunct",
            Operator::Comparison => "comparison",
            Operator::Coalesce => "coalesce",
            Operator::NullCheck => "null-check",
            Operator::Constant => "constant",
            Operator::DropOrderBy => "drop-order-by",
            Operator::AppendLimit => "append-limit",
            Operator::DropAssignment => "drop-assignment",
            Operator::SwapParameters => "swap-parameters",
        }
    }
}

impl fmt::Display for Operator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One generated mutant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GeneratedMutant {
    /// Readable and stable: `<statement>: <what it does>`, e.g.
    /// `reap_retry: replace < with <= in `attempts < :cutoff``; a second
    /// identical edit in the same statement gets ` (#2)`.
    pub id: String,
    /// The operator it comes from.
    pub operator: Operator,
    /// The statement it edits.
    pub statement: String,
    /// Where that statement is defined (`<dialect>/<file>:<line>`).
    pub origin: String,
    /// The statement's SQL as the parser prints it, unmutated.
    pub before: String,
    /// The mutated SQL.
    pub after: String,
    /// How many rows its statement must return (or change) in a run for
    /// this mutant to change that run, when the edit is to the statement's
    /// own result: `n + 1` for an appended `LIMIT n` (`TOP n`), 2 for a
    /// dropped `ORDER BY`, else 0 (any run may show it). A run in which
    /// every execution of the statement stayed below that sends the mutant
    /// the same replies, so its outcome is the same; but an edit of a
    /// subquery is not bounded by the rows the statement returns, so this
    /// only orders the scenarios tried (`super::kill::first_killer`),
    /// never leaves one out.
    /// Set where the edit is made (`clauses::limits` carries its `n`).
    pub rows_to_differ: u64,
}

/// A statement the parser could not read: its mutants are not generated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unparsed {
    /// The statement.
    pub statement: String,
    /// Where it is defined (`<dialect>/<file>:<line>`).
    pub origin: String,
    /// The parser's message.
    pub message: String,
}

/// Everything generated for one dialect.
#[derive(Clone, Debug)]
pub struct Generation {
    /// The dialect with every parsed statement replaced by its printed
    /// form: the base every generated mutant edits, which must pass the
    /// corpus before any mutant is run.
    pub round_trip: Dialect,
    /// The mutants, by statement name then walk order.
    pub mutants: Vec<GeneratedMutant>,
    /// The statements not parsed, so not mutated.
    pub unparsed: Vec<Unparsed>,
    /// The scripts left out by design (not mutated).
    pub scripts: Vec<String>,
    /// The statements the dialect's policy never runs, left out: no
    /// scenario could catch a mutant of them ([`crate::policy::Policy::never_runs`]).
    pub never_run: Vec<String>,
}

impl GeneratedMutant {
    /// `dialect` (a [`Generation::round_trip`]) with this mutant applied.
    pub fn apply(&self, dialect: &Dialect) -> Dialect {
        dialect.with_sql(&self.statement, self.after.clone())
    }
}

/// Generates the mutants of every Update and Query statement of `dialect`,
/// read in `syntax`.
pub fn generate(dialect: &Dialect, syntax: Grammar) -> Generation {
    let mut round_trip = dialect.clone();
    let mut mutants = Vec::new();
    let mut unparsed = Vec::new();
    let mut scripts = Vec::new();
    let mut never_run = Vec::new();
    for s in dialect.statements() {
        if dialect.profile.policy.never_runs_statement(&s.name) {
            never_run.push(s.name.clone());
            continue;
        }
        let is_script = contract::spec(&s.name).is_none_or(|spec| spec.shape == Shape::Script);
        if is_script {
            scripts.push(s.name.clone());
            continue;
        }
        match parse(&s.sql, syntax) {
            Ok(ast) => {
                let before = ast.to_string();
                round_trip = round_trip.with_sql(&s.name, before.clone());
                mutants.extend(of_statement(s, &ast, &before, syntax));
            }
            Err(message) => unparsed.push(Unparsed { statement: s.name.clone(), origin: s.origin.clone(), message }),
        }
    }
    Generation { round_trip, mutants, unparsed, scripts, never_run }
}

/// The mutants of one parsed statement, without duplicates (two edits that
/// print the same SQL are one mutant) and without edits that change nothing.
fn of_statement(s: &Statement, ast: &sqlparser::ast::Statement, before: &str, syntax: Grammar) -> Vec<GeneratedMutant> {
    // (operator, description, SQL, rows to differ)
    let mut edited: Vec<(Operator, String, String, u64)> = Vec::new();
    for site in sites(ast, |seen| {
        let mut p = clauses::propose(seen);
        p.extend(exprs::propose(seen, syntax));
        p
    }) {
        let (operator, description) = site.value.clone();
        // A dropped `ORDER BY` shows only in two rows or more.
        let rows = if operator == Operator::DropOrderBy { 2 } else { 0 };
        edited.push((operator, description, edit(ast, &site).to_string(), rows));
    }
    for e in clauses::edits(ast, syntax) {
        edited.push((e.operator, e.description, e.ast.to_string(), e.rows_to_differ));
    }
    edited.sort_by_key(|(operator, ..)| Operator::ALL.iter().position(|o| o == operator));
    let mut seen_sql = BTreeSet::from([before.to_owned()]);
    let mut ids = BTreeSet::new();
    let mut out = Vec::new();
    for (operator, description, after, rows_to_differ) in edited {
        if !seen_sql.insert(after.clone()) {
            continue;
        }
        let base = format!("{}: {description}", s.name);
        let mut id = base.clone();
        let mut n = 1;
        while !ids.insert(id.clone()) {
            n += 1;
            id = format!("{base} (#{n})");
        }
        out.push(GeneratedMutant {
            id,
            operator,
            statement: s.name.clone(),
            origin: s.origin.clone(),
            before: before.to_owned(),
            after,
            rows_to_differ,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::{Source, dialect_names};

    #[test]
    fn every_shipped_dialect_generates_mutants_of_every_operator_with_unique_ids() {
        for name in dialect_names(&Source::Embedded) {
            let dialect = Dialect::load(&Source::Embedded, &name).unwrap();
            let g = generate(&dialect, Grammar::for_dialect(&name));
            assert!(g.unparsed.is_empty(), "{name}: {:?}", g.unparsed);
            assert!(g.scripts.contains(&"schema".to_owned()), "{name}: {:?}", g.scripts);
            for op in Operator::ALL {
                assert!(g.mutants.iter().any(|m| m.operator == op), "{name} has no {op} mutant");
            }
            let ids: BTreeSet<_> = g.mutants.iter().map(|m| &m.id).collect();
            assert_eq!(ids.len(), g.mutants.len(), "{name}: ids repeat");
            assert!(g.mutants.iter().all(|m| m.after != m.before));
        }
    }

    #[test]
    fn an_unparsable_statement_is_listed_with_its_origin_and_others_still_generate() {
        let dialect = Dialect::load(&Source::Embedded, "sqlite").unwrap();
        let broken = dialect.with_sql("complete", "UPDATE jobs SET WHERE".to_owned());
        let g = generate(&broken, Grammar::Sqlite);
        assert_eq!(g.unparsed.len(), 1);
        assert_eq!(g.unparsed[0].statement, "complete");
        assert!(g.unparsed[0].origin.starts_with("builtin:sqlite/worker.sql:"), "{:?}", g.unparsed);
        assert!(!g.mutants.iter().any(|m| m.statement == "complete"));
        assert!(g.mutants.iter().any(|m| m.statement == "heartbeat"));
    }

    #[test]
    fn a_limit_or_order_mutant_needs_more_rows_than_it_keeps_and_the_rest_none() {
        for name in dialect_names(&Source::Embedded) {
            let dialect = Dialect::load(&Source::Embedded, &name).unwrap();
            let g = generate(&dialect, Grammar::for_dialect(&name));
            for m in &g.mutants {
                let expected = match m.operator {
                    Operator::DropOrderBy => 2,
                    Operator::AppendLimit if m.id.ends_with(" 1") => 2,
                    Operator::AppendLimit if m.id.ends_with(" 10") => 11,
                    Operator::AppendLimit if m.id.ends_with(" 1000") => 1001,
                    Operator::AppendLimit => panic!("{name}: a limit that is not in LIMITS: {}", m.id),
                    _ => 0,
                };
                assert_eq!(m.rows_to_differ, expected, "{name}: {}", m.id);
            }
            assert!(g.mutants.iter().any(|m| m.rows_to_differ == 1001), "{name} has a LIMIT 1000 mutant");
        }
    }
}
