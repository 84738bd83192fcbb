//! The mutation operators that edit a clause: drop a `WHERE` conjunct, drop
//! `ORDER BY`, append a row limit, drop a `SET` assignment, and swap two
//! bound parameters of the same type.

use std::ops::ControlFlow;

use sqlparser::ast::{
    BinaryOperator, Expr, LimitClause, Statement as Ast, Top, TopQuantity, Value, visit_expressions_mut,
};

use super::generate::Operator;
use super::parse::limits_with_top;
use super::walk::{Node, Seen};
use crate::dialect::text::Grammar;

/// A mutated statement.
pub struct Edited {
    /// The operator it comes from.
    pub operator: Operator,
    /// What was done, in words.
    pub description: String,
    /// The mutated tree.
    pub ast: Ast,
    /// How many rows the statement must return at once for the edit to
    /// show: `n + 1` for an appended `LIMIT n`, else 0
    /// (`GeneratedMutant::rows_to_differ`).
    pub rows_to_differ: u64,
}

impl Edited {
    fn new(operator: Operator, description: String, ast: Ast) -> Edited {
        Edited { operator, description, ast, rows_to_differ: 0 }
    }
}

/// A proposed node replacement: its operator, what it does, the node.
pub type Proposal = ((Operator, String), Node);

/// The row limits appended to every query.
pub const LIMITS: [u64; 3] = [1, 10, 1000];

/// The conjuncts of `e`'s top-level `AND` chain, left to right.
fn conjuncts(e: &Expr) -> Vec<&Expr> {
    match e {
        Expr::BinaryOp { left, op: BinaryOperator::And, right } => {
            let mut out = conjuncts(left);
            out.extend(conjuncts(right));
            out
        }
        other => vec![other],
    }
}

/// `where_` with each conjunct dropped in turn: (1-based number, the
/// conjunct, the condition left, `None` when nothing is).
fn without_each(where_: &Expr) -> Vec<(usize, String, Option<Expr>)> {
    let all = conjuncts(where_);
    (0..all.len())
        .map(|i| {
            let kept = all.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, c)| (*c).clone());
            let rest =
                kept.reduce(|l, r| Expr::BinaryOp { left: Box::new(l), op: BinaryOperator::And, right: Box::new(r) });
            (i + 1, all[i].to_string(), rest)
        })
        .collect()
}

fn drop_description(number: usize, conjunct: &str, of: &str) -> String {
    format!("drop WHERE conjunct {number} `{conjunct}`{of}")
}

/// Node replacements: each `WHERE` conjunct of a `SELECT` (subqueries
/// included) dropped, and each query's `ORDER BY` dropped.
pub fn propose(seen: Seen<'_>) -> Vec<Proposal> {
    match seen {
        Seen::Select(s) => {
            let Some(where_) = &s.selection else { return Vec::new() };
            without_each(where_)
                .into_iter()
                .map(|(n, conjunct, rest)| {
                    let mut new = s.clone();
                    new.selection = rest;
                    let of = format!(
                        " of `SELECT ... FROM {}`",
                        s.from.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(", ")
                    );
                    ((Operator::DropConjunct, drop_description(n, &conjunct, &of)), Node::Select(Box::new(new)))
                })
                .collect()
        }
        Seen::Query(q) if q.order_by.is_some() => {
            let mut new = q.clone();
            new.order_by = None;
            vec![((Operator::DropOrderBy, "drop ORDER BY".to_owned()), Node::Query(Box::new(new)))]
        }
        _ => Vec::new(),
    }
}

/// Whole-statement edits: the `WHERE` conjuncts of an `UPDATE` or `DELETE`
/// dropped, a row limit appended to a query, each `SET` assignment dropped
/// (when more than one: none left is not SQL), and parameters swapped.
pub fn edits(ast: &Ast, syntax: Grammar) -> Vec<Edited> {
    let mut out = Vec::new();
    let selection = match ast {
        Ast::Update(u) => u.selection.as_ref(),
        Ast::Delete(d) => d.selection.as_ref(),
        _ => None,
    };
    if let Some(where_) = selection {
        for (n, conjunct, rest) in without_each(where_) {
            let mut new = ast.clone();
            match &mut new {
                Ast::Update(u) => u.selection = rest,
                Ast::Delete(d) => d.selection = rest,
                _ => {}
            }
            out.push(Edited::new(Operator::DropConjunct, drop_description(n, &conjunct, ""), new));
        }
    }
    if let Ast::Query(q) = ast {
        out.extend(limits(q, syntax));
    }
    if let Ast::Update(u) = ast
        && u.assignments.len() > 1
    {
        for (i, a) in u.assignments.iter().enumerate() {
            let mut new = u.clone();
            new.assignments.remove(i);
            out.push(Edited::new(Operator::DropAssignment, format!("drop SET assignment `{a}`"), Ast::Update(new)));
        }
    }
    out.extend(swaps(ast));
    out
}

/// The query with `LIMIT n` (SQL Server: `TOP n`) for each of [`LIMITS`],
/// unless it already has a limit.
fn limits(q: &sqlparser::ast::Query, syntax: Grammar) -> Vec<Edited> {
    if q.limit_clause.is_some() || q.fetch.is_some() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for n in LIMITS {
        let mut new = q.clone();
        if limits_with_top(syntax) {
            let sqlparser::ast::SetExpr::Select(s) = new.body.as_mut() else { continue };
            if s.top.is_some() {
                continue;
            }
            s.top = Some(Top { with_ties: false, percent: false, quantity: Some(TopQuantity::Constant(n)) });
        } else {
            let limit = Expr::Value(Value::Number(n.to_string(), false).into());
            new.limit_clause =
                Some(LimitClause::LimitOffset { limit: Some(limit), offset: None, limit_by: Vec::new() });
        }
        let shown = if limits_with_top(syntax) { format!("add TOP {n}") } else { format!("append LIMIT {n}") };
        out.push(Edited {
            operator: Operator::AppendLimit,
            description: shown,
            ast: Ast::Query(Box::new(new)),
            rows_to_differ: n.saturating_add(1),
        });
    }
    out
}

/// The type of each parameter the driver binds, for swapping: only two of
/// the same type make a mutant that binds and runs. Instants are
/// microseconds or timestamps, texts are ids, names and tokens, integers
/// are counts and flags.
const PARAMETER_TYPES: &[(&str, &str)] = &[
    ("now", "instant"),
    ("cutoff", "instant"),
    ("run_at", "instant"),
    ("expires_at", "instant"),
    ("heartbeat_at", "instant"),
    ("updated_at", "instant"),
    ("id", "text"),
    ("class", "text"),
    ("queue", "text"),
    ("queues", "text"),
    ("status", "text"),
    ("token", "text"),
    ("claim_token", "text"),
    ("name", "text"),
    ("owner", "text"),
    ("attempts", "integer"),
    ("max_retries", "integer"),
    ("claim_timeout", "integer"),
    ("all_queues", "integer"),
];

fn parameter_type(name: &str) -> Option<&'static str> {
    PARAMETER_TYPES.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// The `:name` parameters of `ast`, each once, in walk order.
fn parameters(ast: &Ast) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let mut copy = ast.clone();
    let _ = visit_expressions_mut(&mut copy, |e| {
        if let Expr::Value(v) = e
            && let Value::Placeholder(p) = &v.value
            && let Some(name) = p.strip_prefix(':')
            && !names.iter().any(|n| n == name)
        {
            names.push(name.to_owned());
        }
        ControlFlow::<()>::Continue(())
    });
    names
}

/// For each pair of parameters of the same type used in `ast`, the
/// statement with every use of one written as the other and back.
fn swaps(ast: &Ast) -> Vec<Edited> {
    let names = parameters(ast);
    let mut out = Vec::new();
    for (i, a) in names.iter().enumerate() {
        for b in &names[i + 1..] {
            if parameter_type(a).is_none() || parameter_type(a) != parameter_type(b) {
                continue;
            }
            let (from, to) = (format!(":{a}"), format!(":{b}"));
            let mut new = ast.clone();
            let _ = visit_expressions_mut(&mut new, |e| {
                if let Expr::Value(v) = e
                    && let Value::Placeholder(p) = &mut v.value
                {
                    if *p == from {
                        *p = to.clone();
                    } else if *p == to {
                        *p = from.clone();
                    }
                }
                ControlFlow::<()>::Continue(())
            });
            out.push(Edited::new(Operator::SwapParameters, format!("swap {from} with {to}"), new));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mutate::parse::parse;
    use crate::mutate::walk::{edit, sites};

    fn all(sql: &str, syntax: Grammar) -> Vec<(String, String)> {
        let ast = parse(sql, syntax).unwrap();
        let mut out: Vec<(String, String)> =
            sites(&ast, propose).iter().map(|s| (s.value.1.clone(), edit(&ast, s).to_string())).collect();
        out.extend(edits(&ast, syntax).into_iter().map(|e| (e.description, e.ast.to_string())));
        out
    }

    #[test]
    fn each_update_conjunct_and_assignment_is_dropped_and_like_parameters_swapped() {
        let m = all("UPDATE t SET a = :now, b = 1 WHERE id = :id AND x < :cutoff AND y = 2", Grammar::Sqlite);
        let find = |d: &str| m.iter().find(|(x, _)| x == d).map(|(_, s)| s.as_str());
        assert_eq!(
            find("drop WHERE conjunct 2 `x < :cutoff`"),
            Some("UPDATE t SET a = :now, b = 1 WHERE id = :id AND y = 2")
        );
        assert_eq!(
            find("drop SET assignment `a = :now`"),
            Some("UPDATE t SET b = 1 WHERE id = :id AND x < :cutoff AND y = 2")
        );
        assert_eq!(
            find("swap :now with :cutoff"),
            Some("UPDATE t SET a = :cutoff, b = 1 WHERE id = :id AND x < :now AND y = 2")
        );
        assert_eq!(m.iter().filter(|(d, _)| d.starts_with("swap")).count(), 1, "{m:?}");
    }

    #[test]
    fn queries_lose_order_by_and_gain_a_limit_in_the_dialects_spelling() {
        let m = all("SELECT a FROM t WHERE x = 1 ORDER BY a", Grammar::Postgres);
        let find = |d: &str| m.iter().find(|(x, _)| x == d).map(|(_, s)| s.as_str());
        assert_eq!(find("drop ORDER BY"), Some("SELECT a FROM t WHERE x = 1"));
        assert_eq!(find("append LIMIT 10"), Some("SELECT a FROM t WHERE x = 1 ORDER BY a LIMIT 10"));
        assert_eq!(find("drop WHERE conjunct 1 `x = 1` of `SELECT ... FROM t`"), Some("SELECT a FROM t ORDER BY a"));
        let ms = all("SELECT a FROM t ORDER BY a", Grammar::MsSql);
        assert!(ms.iter().any(|(d, s)| d == "add TOP 1" && s == "SELECT TOP 1 a FROM t ORDER BY a"), "{ms:?}");
    }
}
