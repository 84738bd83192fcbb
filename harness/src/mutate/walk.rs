//! Finding the places a mutation can go in a syntax tree and editing one of
//! them. A place is the n-th node of a kind (expression, `SELECT`, query)
//! in sqlparser's post-order walk, so the same statement always numbers its
//! places the same way.

use std::ops::ControlFlow;

use sqlparser::ast::{Expr, Query, Select, Statement as Ast, VisitMut, VisitorMut};

/// A node a mutation replaces, of one of the kinds walked.
#[derive(Clone, Debug)]
pub enum Node {
    /// An expression.
    Expr(Box<Expr>),
    /// A `SELECT` (its `WHERE` lives here).
    Select(Box<Select>),
    /// A query (its `ORDER BY` and `LIMIT` live here).
    Query(Box<Query>),
}

/// What a probe sees at each node.
#[derive(Clone, Copy)]
pub enum Seen<'a> {
    /// An expression.
    Expr(&'a Expr),
    /// A `SELECT`.
    Select(&'a Select),
    /// A query.
    Query(&'a Query),
}

/// One replacement found by a probe, with the place it goes.
pub struct Site<T> {
    /// Which node of the replacement's kind, in walk order.
    index: usize,
    /// What the probe attached to it.
    pub value: T,
    /// The node that replaces the one found.
    pub node: Node,
}

struct Walker<F>(F);

impl<F: FnMut(NodeRef<'_>) -> ControlFlow<()>> VisitorMut for Walker<F> {
    type Break = ();

    fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        (self.0)(NodeRef::Expr(e))
    }

    fn post_visit_select(&mut self, s: &mut Select) -> ControlFlow<()> {
        (self.0)(NodeRef::Select(s))
    }

    fn post_visit_query(&mut self, q: &mut Query) -> ControlFlow<()> {
        (self.0)(NodeRef::Query(q))
    }
}

enum NodeRef<'a> {
    Expr(&'a mut Expr),
    Select(&'a mut Select),
    Query(&'a mut Query),
}

impl NodeRef<'_> {
    fn kind(&self) -> usize {
        match self {
            NodeRef::Expr(_) => 0,
            NodeRef::Select(_) => 1,
            NodeRef::Query(_) => 2,
        }
    }
}

fn kind(node: &Node) -> usize {
    match node {
        Node::Expr(_) => 0,
        Node::Select(_) => 1,
        Node::Query(_) => 2,
    }
}

/// Every replacement `probe` proposes anywhere in `ast`, each with its
/// place. A probe returns `(value, node)` pairs; the node must be of the
/// kind it was shown.
pub fn sites<T>(ast: &Ast, mut probe: impl FnMut(Seen<'_>) -> Vec<(T, Node)>) -> Vec<Site<T>> {
    let mut found = Vec::new();
    let mut counts = [0usize; 3];
    let mut copy = ast.clone();
    let _ = copy.visit(&mut Walker(|n: NodeRef<'_>| {
        let k = n.kind();
        let seen = match &n {
            NodeRef::Expr(e) => Seen::Expr(e),
            NodeRef::Select(s) => Seen::Select(s),
            NodeRef::Query(q) => Seen::Query(q),
        };
        for (value, node) in probe(seen) {
            if kind(&node) == k {
                found.push(Site { index: counts[k], value, node });
            }
        }
        counts[k] += 1;
        ControlFlow::Continue(())
    }));
    found
}

/// `ast` with the site's node put in its place.
pub fn edit<T>(ast: &Ast, site: &Site<T>) -> Ast {
    let mut copy = ast.clone();
    let target = kind(&site.node);
    let mut seen = 0;
    let _ = copy.visit(&mut Walker(|n: NodeRef<'_>| {
        if n.kind() != target {
            return ControlFlow::Continue(());
        }
        if seen < site.index {
            seen += 1;
            return ControlFlow::Continue(());
        }
        match (n, &site.node) {
            (NodeRef::Expr(e), Node::Expr(new)) => *e = (**new).clone(),
            (NodeRef::Select(s), Node::Select(new)) => *s = (**new).clone(),
            (NodeRef::Query(q), Node::Query(new)) => *q = (**new).clone(),
            _ => {}
        }
        ControlFlow::Break(())
    }));
    copy
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::text::Grammar;
    use crate::mutate::parse::parse;

    #[test]
    fn an_edit_replaces_exactly_the_site_found() {
        let ast = parse("SELECT a FROM t WHERE x = 1 AND y = 1", Grammar::Sqlite).unwrap();
        let found = sites(&ast, |seen| match seen {
            Seen::Expr(Expr::Value(v)) if v.to_string() == "1" => {
                vec![((), Node::Expr(Box::new(Expr::Value(sqlparser::ast::Value::Number("2".into(), false).into()))))]
            }
            _ => Vec::new(),
        });
        assert_eq!(found.len(), 2);
        assert_eq!(edit(&ast, &found[0]).to_string(), "SELECT a FROM t WHERE x = 2 AND y = 1");
        assert_eq!(edit(&ast, &found[1]).to_string(), "SELECT a FROM t WHERE x = 1 AND y = 2");
    }
}
