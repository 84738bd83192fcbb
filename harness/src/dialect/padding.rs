//! A lint, run as a test, for one class of bug no scenario can catch on a
//! server that does not run here: comparing a text key under PAD SPACE
//! semantics, where `'mail' = 'mail '` is true.
//!
//! Which comparisons pad depends on the dialect and the column's declared
//! type (read from the dialect's `schema` script):
//!
//! - SQL Server: `=`, `<>` and `IN` pad under every collation, binary ones
//!   included, for every character type;
//! - MySQL and MariaDB: a character type pads under a PAD SPACE collation,
//!   which every `_bin` and `_ci` collation of MariaDB 10.11 is (and
//!   `utf8mb4_bin` on MySQL 8); `VARBINARY`/`BINARY`/`BLOB` and the NO PAD
//!   collations (`utf8mb4_nopad_bin`, `utf8mb4_0900_bin`) do not. `FIND_IN_SET`
//!   compares with the column's semantics;
//! - PostgreSQL, CockroachDB, SQLite: only `CHAR(n)` pads.
//!
//! A comparison of a key column (job id, class, queue, status, claim token,
//! lease name and owner, last error) with anything but a literal is a
//! finding unless the column pads not, or the same statement also compares
//! `DATALENGTH(column)` (or `OCTET_LENGTH`, `LENGTH`) with its other side's.
//! Every Update and Query statement of every shipped dialect is parsed with
//! the grammar `mutate` uses.

use std::ops::ControlFlow;

use sqlparser::ast::{BinaryOperator, Expr, visit_expressions};

use crate::dialect::Dialect;
use crate::dialect::contract::{self, Shape};
use crate::dialect::text::Grammar;
use crate::mutate::parse::parse;
use crate::scenario::Schema;

/// The contract's text columns a reaper matches on.
const KEYS: [&str; 8] = ["id", "class", "queue", "status", "claim_token", "name", "owner", "last_error"];

/// Functions whose equality on both sides makes trailing spaces count.
const LENGTHS: [&str; 3] = ["DATALENGTH", "OCTET_LENGTH", "LENGTH"];

/// A comparison that ignores trailing spaces: `<origin>: <comparison>`.
type Finding = String;

/// Whether `column`, declared as `line` in `dialect`'s schema, compares
/// with PAD SPACE semantics.
fn pads(dialect: &str, line: &str) -> bool {
    let upper = line.to_ascii_uppercase();
    let declared = upper.split_whitespace().nth(1).unwrap_or_default();
    let type_name: String = declared.chars().take_while(|c| c.is_ascii_alphabetic()).collect();
    let character = matches!(type_name.as_str(), "CHAR" | "NCHAR" | "CHARACTER" | "BPCHAR");
    match dialect {
        "mssql" => matches!(type_name.as_str(), "CHAR" | "NCHAR" | "VARCHAR" | "NVARCHAR" | "TEXT" | "NTEXT"),
        "mysql" => {
            let binary = matches!(type_name.as_str(), "VARBINARY" | "BINARY" | "BLOB" | "TINYBLOB" | "MEDIUMBLOB");
            let no_pad = upper.contains("NOPAD") || upper.contains("_0900_");
            !binary && !no_pad
        }
        _ => character,
    }
}

/// The schema line declaring each key column of `dialect`.
fn key_declarations(d: &Dialect) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for schema in [Schema::Standard, Schema::Legacy] {
        let Some(s) = d.find("schema", schema) else { continue };
        for line in s.sql.lines() {
            let word = line.split_whitespace().next().unwrap_or_default();
            if KEYS.contains(&word) && !found.iter().any(|(c, _): &(String, String)| c == word) {
                found.push((word.to_owned(), line.trim().to_owned()));
            }
        }
    }
    found
}

/// The key column `e` names (`id`, `l.name`), by its last part.
fn key_of(e: &Expr) -> Option<String> {
    let last = match e {
        Expr::Identifier(i) => i.value.clone(),
        Expr::CompoundIdentifier(parts) => parts.last()?.value.clone(),
        Expr::Nested(inner) => return key_of(inner),
        _ => return None,
    };
    KEYS.contains(&last.as_str()).then_some(last)
}

/// Whether `e` is a plain string literal without trailing spaces.
fn harmless_literal(e: &Expr) -> bool {
    let printed = e.to_string();
    let quoted = printed.trim_start_matches(['N', 'n', 'E', 'e']);
    quoted.starts_with('\'') && !quoted.trim_end_matches('\'').ends_with(' ')
}

/// The column inside `LENGTH_FUNCTION(column)`, printed.
fn length_of(e: &Expr) -> Option<String> {
    let printed = e.to_string();
    let (name, rest) = printed.split_once('(')?;
    LENGTHS.iter().any(|f| f.eq_ignore_ascii_case(name)).then(|| rest.trim_end_matches(')').to_owned())
}

/// The padded comparisons of `d`, each with its statement's origin.
pub fn padded_comparisons(d: &Dialect) -> Vec<Finding> {
    let padding: Vec<String> =
        key_declarations(d).into_iter().filter(|(_, line)| pads(&d.name, line)).map(|(c, _)| c).collect();
    let grammar = Grammar::for_dialect(&d.name);
    let mut findings = Vec::new();
    for s in d.statements() {
        if contract::spec(&s.name).is_none_or(|spec| spec.shape == Shape::Script) {
            continue;
        }
        let Ok(ast) = parse(&s.sql, grammar) else { continue };
        let (mut compared, mut guarded) = (Vec::new(), Vec::new());
        let _ = visit_expressions(&ast, |e: &Expr| {
            match e {
                Expr::BinaryOp { left, op: BinaryOperator::Eq, right } => {
                    if let (Some(l), Some(_)) = (length_of(left), length_of(right)) {
                        guarded.push(l);
                    }
                    for (side, other) in [(left, right), (right, left)] {
                        if let Some(key) = key_of(side).filter(|_| !harmless_literal(other)) {
                            compared.push((key, side.to_string(), e.to_string()));
                        }
                    }
                }
                Expr::BinaryOp { left, op: BinaryOperator::NotEq, right } => {
                    if let Some(key) = key_of(left).filter(|_| !harmless_literal(right)) {
                        compared.push((key, left.to_string(), e.to_string()));
                    }
                }
                Expr::In { expr, .. } => {
                    if let Some(key) = key_of(expr) {
                        // IN has no place for a length guard: always a finding.
                        compared.push((key, String::new(), e.to_string()));
                    }
                }
                Expr::Function(f) if f.name.to_string().eq_ignore_ascii_case("FIND_IN_SET") => {
                    let printed = e.to_string();
                    let first = printed.split_once('(').and_then(|(_, r)| r.split([',', ')']).next());
                    if let Some(key) = first.map(str::trim).filter(|k| KEYS.contains(k)) {
                        compared.push((key.to_owned(), String::new(), printed));
                    }
                }
                _ => {}
            }
            ControlFlow::<()>::Continue(())
        });
        for (key, column, comparison) in compared {
            if padding.contains(&key) && !guarded.contains(&column) {
                findings.push(format!("{}: {comparison}", s.origin));
            }
        }
    }
    findings
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::{Source, dialect_names};

    fn load(name: &str) -> Dialect {
        Dialect::load(&Source::Embedded, name).unwrap()
    }

    #[test]
    fn no_shipped_dialect_compares_a_key_with_padding() {
        let names = dialect_names(&Source::Embedded);
        assert!(names.len() >= 5, "{names:?}");
        for name in names {
            let findings = padded_comparisons(&load(&name));
            assert!(findings.is_empty(), "{name}: comparisons that ignore trailing spaces:\n{}", findings.join("\n"));
        }
    }

    #[test]
    fn every_key_column_of_every_dialect_is_declared() {
        for name in dialect_names(&Source::Embedded) {
            let declared: Vec<String> = key_declarations(&load(&name)).into_iter().map(|(c, _)| c).collect();
            assert_eq!(declared.len(), KEYS.len(), "{name}: {declared:?}");
        }
    }

    /// The mssql SQL before padding was handled: `IN` over STRING_SPLIT and
    /// unguarded `=` on ids and tokens.
    #[test]
    fn the_former_mssql_sql_is_caught() {
        let mssql = load("mssql");
        let scan = mssql.statement("reap_scan", Schema::Standard).sql.replace(
            "CHARINDEX(N',' + queue + N',', N',' + :queues + N',' COLLATE Latin1_General_BIN2) > 0",
            "queue IN (SELECT value COLLATE Latin1_General_BIN2 FROM STRING_SPLIT(:queues, ','))",
        );
        let beat = "UPDATE jobs SET heartbeat_at = :now \
                    WHERE id = :id AND status = N'processing' AND claim_token = :token"
            .to_owned();
        let old = mssql.with_sql("reap_scan", scan).with_sql("heartbeat", beat);
        let findings = padded_comparisons(&old);
        assert_eq!(findings.len(), 3, "{findings:#?}");
        assert!(findings.iter().any(|f| f.contains("queue IN (SELECT")), "{findings:#?}");
        assert!(findings.iter().any(|f| f.ends_with("id = :id")), "{findings:#?}");
        assert!(findings.iter().any(|f| f.ends_with("claim_token = :token")), "{findings:#?}");
    }

    /// MySQL with a `_bin` collation in place of VARBINARY: `FIND_IN_SET`
    /// and `=` on keys pad (utf8mb4_bin is PAD SPACE on both servers);
    /// with a NO PAD collation they do not.
    #[test]
    fn mysql_pad_space_collations_are_caught() {
        let mysql = load("mysql");
        let with = |collated: &str| {
            let schema = mysql.statement("schema", Schema::Standard).sql.replace("VARBINARY(255)", collated);
            padded_comparisons(&mysql.with_sql("schema", schema).with_sql("legacy_schema", String::new()))
        };
        let findings = with("VARCHAR(255) COLLATE utf8mb4_bin");
        assert!(findings.iter().any(|f| f.contains("FIND_IN_SET(queue, :queues)")), "{findings:#?}");
        assert!(findings.iter().any(|f| f.contains("id = :id")), "{findings:#?}");
        assert_eq!(with("VARCHAR(255) COLLATE utf8mb4_nopad_bin"), Vec::<String>::new());
    }

    #[test]
    fn char_columns_pad_on_postgres_and_text_does_not() {
        let pg = load("postgres");
        let schema =
            pg.statement("schema", Schema::Standard).sql.replace("id            text", "id            char(40)");
        assert_ne!(schema, pg.statement("schema", Schema::Standard).sql, "the schema spells `id text` so");
        let findings = padded_comparisons(&pg.with_sql("schema", schema).with_sql("legacy_schema", String::new()));
        assert!(findings.iter().any(|f| f.contains("id = :id")), "{findings:#?}");
    }
}
