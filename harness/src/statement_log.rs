//! The statements a SQL engine ran for one scenario: which one, where it is
//! defined, the values bound to it and what it returned. Coverage counts
//! these; traces print them.

use std::fmt::Write as _;

use crate::engine::{Phase, Value};
use crate::time::Instant;

/// What a statement returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Returned {
    /// A script or a setup insert: no result is read.
    Done,
    /// An UPDATE (or INSERT/DELETE) changed this many rows.
    Changed(u64),
    /// A query returned this many rows.
    Rows(usize),
    /// The database refused it or the connection broke: the message.
    Failed(String),
    /// Not run: `schema`'s tables were made by an earlier scenario on this
    /// connection and emptied by `empty_namespace` (`crate::isolation`).
    Kept,
}

/// One statement the engine ran.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Executed {
    /// Where the driver was.
    pub phase: Phase,
    /// The statement's name in the dialect (`legacy_reap_fail` on the
    /// legacy table), i.e. the text after `-- name:`.
    pub statement: String,
    /// `<dialect>/<file>:<line>` of its `-- name:` marker.
    pub origin: String,
    /// The parameters the SQL uses, in order of first use, with their values.
    pub binds: Vec<(String, Value)>,
    /// What it returned.
    pub returned: Returned,
}

impl Executed {
    /// True when the statement changed at least one row (a guarded UPDATE's
    /// "matched" branch); false for zero rows or anything else.
    pub fn matched(&self) -> bool {
        matches!(self.returned, Returned::Changed(n) if n > 0)
    }

    /// True when the database refused the statement.
    pub fn failed(&self) -> bool {
        matches!(self.returned, Returned::Failed(_))
    }

    /// One line: name, origin, bound values (instants in RFC 3339 and
    /// relative to `clock`, the scenario clock when it ran) and the result.
    pub fn render(&self, clock: Option<Instant>) -> String {
        let mut line = format!("{} ({})", self.statement, self.origin);
        for (name, value) in &self.binds {
            let _ = write!(line, " :{name}={}", render_value(value, clock));
        }
        let _ = write!(
            line,
            " -> {}",
            match &self.returned {
                Returned::Done => "done".to_owned(),
                Returned::Changed(1) => "1 row changed".to_owned(),
                Returned::Changed(n) => format!("{n} rows changed"),
                Returned::Rows(1) => "1 row".to_owned(),
                Returned::Rows(n) => format!("{n} rows"),
                Returned::Failed(e) => format!("error: {e}"),
                Returned::Kept => "kept: made by an earlier scenario on this connection, emptied since".to_owned(),
            }
        );
        line
    }
}

/// A bound value as a person reads it: text quoted, instants in RFC 3339
/// and, given the scenario clock, relative to it (`(-10m)`).
pub fn render_value(value: &Value, clock: Option<Instant>) -> String {
    match value {
        Value::Text(t) => format!("{t:?}"),
        Value::Int(i) => i.to_string(),
        Value::Instant(at) => match clock {
            Some(now) => format!("{at} ({})", at.since(now)),
            None => at.to_string(),
        },
        Value::Null(_) => "NULL".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Instant {
        Instant::parse_rfc3339(text).unwrap()
    }

    #[test]
    fn a_line_names_the_statement_its_origin_its_values_and_its_result() {
        let e = Executed {
            phase: Phase::Setup,
            statement: "reap_retry".into(),
            origin: "sqlite/reaper.sql:23".into(),
            binds: vec![
                ("id".into(), Value::Text("a".into())),
                ("cutoff".into(), Value::Instant(at("2026-01-15T11:55:00Z"))),
                ("attempts".into(), Value::Int(1)),
                ("claim_token".into(), Value::Null(crate::engine::Kind::Text)),
            ],
            returned: Returned::Changed(0),
        };
        let line = e.render(Some(at("2026-01-15T12:00:00Z")));
        assert_eq!(
            line,
            "reap_retry (sqlite/reaper.sql:23) :id=\"a\" :cutoff=2026-01-15T11:55:00Z (-5m) :attempts=1 \
             :claim_token=NULL -> 0 rows changed"
        );
        assert!(!e.matched());
        assert!(Executed { returned: Returned::Changed(2), ..e.clone() }.matched());
        assert!(!Executed { returned: Returned::Rows(2), ..e }.matched());
    }
}
