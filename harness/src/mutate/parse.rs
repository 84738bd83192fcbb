//! Reading a named statement into sqlparser's syntax tree, in the grammar of
//! the dialect it is written for, and printing a tree back to SQL.
//!
//! Our `:name` parameters need no rewriting: sqlparser reads a `:` followed
//! by a word as a placeholder in every grammar used here, and prints it back
//! unchanged, so the printed SQL binds exactly as the original (a test checks
//! this for every shipped statement).

use sqlparser::ast::Statement as Ast;
use sqlparser::parser::Parser;

use crate::dialect::text::Grammar;

/// The scalar functions that return the greater and the lesser of their
/// arguments: `max`/`min` in SQLite, `GREATEST`/`LEAST` elsewhere.
pub fn greatest_least(grammar: Grammar) -> (&'static str, &'static str) {
    match grammar {
        Grammar::Sqlite => ("max", "min"),
        _ => ("GREATEST", "LEAST"),
    }
}

/// Whether a row limit is written `TOP n` after `SELECT` (SQL Server)
/// rather than `LIMIT n` at the end.
pub fn limits_with_top(grammar: Grammar) -> bool {
    grammar == Grammar::MsSql
}

/// Parses `sql`, one command, in `syntax`; the parser's message when it
/// cannot, or when the text holds more or less than one command.
pub fn parse(sql: &str, syntax: Grammar) -> Result<Ast, String> {
    let grammar = syntax.sqlparser();
    let mut statements = Parser::parse_sql(grammar.as_ref(), sql).map_err(|e| e.to_string())?;
    match statements.len() {
        1 => Ok(statements.remove(0)),
        n => Err(format!("expected one command, found {n}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::{Dialect, Source, contract, dialect_names, text};

    /// Every Update and Query statement of every shipped dialect parses, and
    /// printing it back keeps its parameters in the same order, so it binds
    /// exactly as written.
    #[test]
    fn every_shipped_statement_parses_and_prints_back_with_the_same_parameters() {
        let mut failures = Vec::new();
        for name in dialect_names(&Source::Embedded) {
            let dialect = Dialect::load(&Source::Embedded, &name).unwrap();
            let syntax = Grammar::for_dialect(&name);
            for s in dialect.statements() {
                let spec = contract::spec(&s.name).unwrap();
                if spec.shape == contract::Shape::Script {
                    continue;
                }
                match parse(&s.sql, syntax) {
                    Ok(ast) => {
                        let printed = ast.to_string();
                        let again = parse(&printed, syntax).map(|a| a.to_string());
                        assert_eq!(again.as_deref(), Ok(printed.as_str()), "{} does not print stably", s.origin);
                        let before = text::prepare(&s.sql, text::Placeholders::Question).binds;
                        let after = text::prepare(&printed, text::Placeholders::Question).binds;
                        assert_eq!(before, after, "{} binds differently once printed: {printed}", s.origin);
                    }
                    Err(e) => failures.push(format!("{}: {e}", s.origin)),
                }
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn unknown_folders_use_the_generic_grammar_and_bad_sql_is_a_message() {
        assert_eq!(Grammar::for_dialect("my_port"), Grammar::Generic);
        assert_eq!(Grammar::for_dialect("cockroach"), Grammar::Postgres);
        let e = parse("UPDATE jobs SET WHERE", Grammar::Sqlite).unwrap_err();
        assert!(e.contains("Expected"), "{e}");
        assert!(parse("SELECT 1; SELECT 2", Grammar::Sqlite).unwrap_err().contains("found 2"));
    }
}
