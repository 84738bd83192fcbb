//! The mutation operators that replace one expression: comparison
//! operators, `COALESCE` and its spellings, `IS [NOT] NULL`, and numeric and
//! interval constants.

use sqlparser::ast::{
    BinaryOperator, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Ident, ObjectName, ObjectNamePart, Value,
};

use sqlparser::tokenizer::Span;

use super::generate::Operator;
use super::parse::greatest_least;
use super::walk::{Node, Seen};
use crate::dialect::text::Grammar;

/// A proposed replacement: its operator, what it does in words, the node.
pub type Proposal = ((Operator, String), Node);

/// Every expression replacement proposed for the node `seen`.
pub fn propose(seen: Seen<'_>, syntax: Grammar) -> Vec<Proposal> {
    let Seen::Expr(e) = seen else { return Vec::new() };
    let mut out = comparison(e);
    out.extend(coalesce(e, syntax));
    out.extend(null_check(e));
    out.extend(constant(e));
    out
}

/// `<`, `<=`, `>`, `>=` each become the other bound of the same direction
/// and the opposite direction; `=` and `<>` become each other.
fn comparison(e: &Expr) -> Vec<Proposal> {
    use BinaryOperator::{Eq, Gt, GtEq, Lt, LtEq, NotEq};
    let Expr::BinaryOp { left, op, right } = e else { return Vec::new() };
    let others: &[BinaryOperator] = match op {
        Lt => &[LtEq, Gt],
        LtEq => &[Lt, GtEq],
        Gt => &[GtEq, Lt],
        GtEq => &[Gt, LtEq],
        Eq => &[NotEq],
        NotEq => &[Eq],
        _ => &[],
    };
    others
        .iter()
        .map(|other| {
            let new = Expr::BinaryOp { left: left.clone(), op: other.clone(), right: right.clone() };
            ((Operator::Comparison, format!("replace {op} with {other} in `{e}`")), Node::Expr(Box::new(new)))
        })
        .collect()
}

/// The two arguments of a two-argument `COALESCE`, `IFNULL`, `ISNULL` or
/// `NVL` call.
fn coalesce_args(e: &Expr) -> Option<(&Expr, &Expr)> {
    let Expr::Function(f) = e else { return None };
    let name = f.name.0.last()?.to_string().to_ascii_lowercase();
    if !matches!(name.as_str(), "coalesce" | "ifnull" | "isnull" | "nvl") {
        return None;
    }
    let FunctionArguments::List(list) = &f.args else { return None };
    match list.args.as_slice() {
        [FunctionArg::Unnamed(FunctionArgExpr::Expr(a)), FunctionArg::Unnamed(FunctionArgExpr::Expr(b))] => {
            Some((a, b))
        }
        _ => None,
    }
}

/// `COALESCE(a, b)` (or its spelling) becomes `COALESCE(b, a)`, `a`, `b`,
/// the greater and the lesser of `a` and `b` in the dialect's spelling.
fn coalesce(e: &Expr, syntax: Grammar) -> Vec<Proposal> {
    let Some((a, b)) = coalesce_args(e) else { return Vec::new() };
    let Expr::Function(f) = e else { return Vec::new() };
    let call = |name: Option<&str>, first: &Expr, second: &Expr| {
        let mut g = f.clone();
        if let Some(name) = name {
            g.name = ObjectName(vec![ObjectNamePart::Identifier(Ident::new(name))]);
        }
        if let FunctionArguments::List(list) = &mut g.args {
            list.args = vec![
                FunctionArg::Unnamed(FunctionArgExpr::Expr(first.clone())),
                FunctionArg::Unnamed(FunctionArgExpr::Expr(second.clone())),
            ];
        }
        Expr::Function(g)
    };
    let (greatest, least) = greatest_least(syntax);
    let news = [
        call(None, b, a),
        Expr::Nested(Box::new(a.clone())),
        Expr::Nested(Box::new(b.clone())),
        call(Some(greatest), a, b),
        call(Some(least), a, b),
    ];
    news.into_iter()
        .map(|new| {
            let shown = match &new {
                Expr::Nested(inner) => inner.to_string(),
                other => other.to_string(),
            };
            ((Operator::Coalesce, format!("replace `{e}` with `{shown}`")), Node::Expr(Box::new(new)))
        })
        .collect()
}

/// `IS NULL` and `IS NOT NULL` become each other.
fn null_check(e: &Expr) -> Vec<Proposal> {
    let (new, from, to) = match e {
        Expr::IsNull(x) => (Expr::IsNotNull(x.clone()), "IS NULL", "IS NOT NULL"),
        Expr::IsNotNull(x) => (Expr::IsNull(x.clone()), "IS NOT NULL", "IS NULL"),
        _ => return Vec::new(),
    };
    vec![((Operator::NullCheck, format!("replace {from} with {to} in `{e}`")), Node::Expr(Box::new(new)))]
}

/// The integers an integer constant `n` moves to: `n + 1`, `n - 1` and `0`,
/// each once.
fn moves(n: i64) -> Vec<i64> {
    let mut out = Vec::new();
    for m in [n.checked_add(1), n.checked_sub(1), Some(0)].into_iter().flatten() {
        if m != n && !out.contains(&m) {
            out.push(m);
        }
    }
    out
}

/// Where a literal is written in its statement's text, `line:column` from 1
/// (line 1 is the line after the `-- name:` marker), so that two equal
/// constants of one statement have different mutant ids.
fn at(span: Span) -> String {
    format!("{}:{}", span.start.line, span.start.column)
}

/// An integer literal moves by one either way and becomes 0; so does the
/// leading number of an interval written as a string (`interval '30
/// seconds'`). Other numbers (decimals, exponents) are left alone.
fn constant(e: &Expr) -> Vec<Proposal> {
    match e {
        Expr::Value(v) => {
            let Value::Number(text, long) = &v.value else { return Vec::new() };
            let Ok(n) = text.parse::<i64>() else { return Vec::new() };
            moves(n)
                .into_iter()
                .map(|m| {
                    let mut new = v.clone();
                    new.value = Value::Number(m.to_string(), *long);
                    let description = format!("replace constant {n} with {m} at {}", at(v.span));
                    ((Operator::Constant, description), Node::Expr(Box::new(Expr::Value(new))))
                })
                .collect()
        }
        Expr::Interval(iv) => {
            let Expr::Value(v) = iv.value.as_ref() else { return Vec::new() };
            let Value::SingleQuotedString(text) = &v.value else { return Vec::new() };
            let digits = text.bytes().take_while(u8::is_ascii_digit).count();
            let Ok(n) = text[..digits].parse::<i64>() else { return Vec::new() };
            let rest = &text[digits..];
            moves(n)
                .into_iter()
                .map(|m| {
                    let mut new = iv.clone();
                    let mut value = v.clone();
                    value.value = Value::SingleQuotedString(format!("{m}{rest}"));
                    new.value = Box::new(Expr::Value(value));
                    let description = format!("replace interval '{text}' with '{m}{rest}' at {}", at(v.span));
                    ((Operator::Constant, description), Node::Expr(Box::new(Expr::Interval(new))))
                })
                .collect()
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mutate::parse::parse;
    use crate::mutate::walk::{edit, sites};

    fn mutants(sql: &str, syntax: Grammar) -> Vec<(String, String)> {
        let ast = parse(sql, syntax).unwrap();
        sites(&ast, |seen| propose(seen, syntax))
            .iter()
            .map(|s| (s.value.1.clone(), edit(&ast, s).to_string()))
            .collect()
    }

    #[test]
    fn comparisons_move_their_bound_and_turn_around() {
        let m = mutants("SELECT a FROM t WHERE x < :cutoff", Grammar::Sqlite);
        let sql: Vec<&str> = m.iter().map(|(_, s)| s.as_str()).collect();
        assert_eq!(sql, ["SELECT a FROM t WHERE x <= :cutoff", "SELECT a FROM t WHERE x > :cutoff"]);
        assert_eq!(m[0].0, "replace < with <= in `x < :cutoff`");
    }

    #[test]
    fn coalesce_and_its_spellings_are_swapped_split_and_bounded() {
        let m = mutants("SELECT IFNULL(h, u) FROM t", Grammar::Sqlite);
        let sql: Vec<&str> = m.iter().map(|(_, s)| s.as_str()).collect();
        assert_eq!(
            sql,
            [
                "SELECT IFNULL(u, h) FROM t",
                "SELECT (h) FROM t",
                "SELECT (u) FROM t",
                "SELECT max(h, u) FROM t",
                "SELECT min(h, u) FROM t"
            ]
        );
        let pg = mutants("SELECT COALESCE(h, u) FROM t", Grammar::Postgres);
        assert!(pg.iter().any(|(_, s)| s == "SELECT GREATEST(h, u) FROM t"), "{pg:?}");
        assert!(mutants("SELECT COALESCE(a, b, c) FROM t", Grammar::Postgres).is_empty());
    }

    #[test]
    fn null_checks_flip_and_constants_move_by_one_and_to_zero() {
        let m = mutants("SELECT a FROM t WHERE h IS NULL", Grammar::Sqlite);
        assert_eq!(m[0].1, "SELECT a FROM t WHERE h IS NOT NULL");
        let m = mutants("SELECT a - 30 FROM t", Grammar::Sqlite);
        let sql: Vec<&str> = m.iter().map(|(_, s)| s.as_str()).collect();
        assert_eq!(sql, ["SELECT a - 31 FROM t", "SELECT a - 29 FROM t", "SELECT a - 0 FROM t"]);
        let m = mutants("SELECT a - 1 FROM t", Grammar::Sqlite);
        assert_eq!(m.len(), 2, "1 - 1 and 0 are one mutant: {m:?}");
        let m = mutants("SELECT :now - interval '30 seconds'", Grammar::Postgres);
        assert_eq!(m[0].1, "SELECT :now - INTERVAL '31 seconds'");
        assert_eq!(m[2].0, "replace interval '30 seconds' with '0 seconds' at 1:24");
        let m = mutants("SELECT 1,\n  1", Grammar::Sqlite);
        assert_eq!(m[0].0, "replace constant 1 with 2 at 1:8");
        assert_eq!(m[2].0, "replace constant 1 with 2 at 2:3");
    }
}
