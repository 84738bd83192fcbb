//! The check that a dialect's `empty_namespace` empties every table its
//! `schema` and `legacy_schema` create.
//!
//! With `empty_namespace`, a connection keeps its namespace and tables from
//! one scenario to the next and only empties them in between
//! (`crate::isolation`). A table the script forgets would carry one
//! scenario's rows into the next, which could then pass or fail for a
//! reason no scenario file shows. So a dialect that forgets one does not
//! load: the error names the table and the statement to add.
//!
//! The SQL is read with two patterns rather than a parser: a user's DDL may
//! use syntax a parser does not know (generated columns, engine options),
//! and only the table names matter. Comments are removed first.

use std::sync::LazyLock;

use regex::Regex;

use super::Dialect;
use super::text;

/// `CREATE TABLE [IF NOT EXISTS] name`, the name possibly quoted or
/// qualified.
static CREATED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)\bCREATE\s+(?:TEMP(?:ORARY)?\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?([A-Za-z0-9_."`\[\]]+)"#)
        .expect("a valid pattern")
});

/// `DELETE [FROM] name` and `TRUNCATE [TABLE] name[, name...]`.
static EMPTIED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?i)\b(?:DELETE\s+(?:FROM\s+)?|TRUNCATE\s+(?:TABLE\s+)?(?:ONLY\s+)?)([A-Za-z0-9_."`\[\]]+(?:\s*,\s*[A-Za-z0-9_."`\[\]]+)*)"#,
    )
    .expect("a valid pattern")
});

/// A table `schema` (or `legacy_schema`) creates that `empty_namespace`
/// does not empty.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotEmptied {
    /// The table, as `schema` names it (unquoted, lowercase, last part).
    pub table: String,
    /// The statement that creates it (`schema` or `legacy_schema`).
    pub created_by: String,
    /// `<dialect>/<file>:<line>` of `empty_namespace`.
    pub origin: String,
}

/// Every table the dialect's `schema` and `legacy_schema` create that its
/// `empty_namespace` does not empty; none when it has no `empty_namespace`.
pub fn not_emptied(d: &Dialect) -> Vec<NotEmptied> {
    let Some(empty) = d.statements().find(|s| s.name == "empty_namespace") else { return Vec::new() };
    let emptied = emptied_tables(&empty.sql);
    let mut missing = Vec::new();
    for creator in d.statements().filter(|s| s.name == "schema" || s.name == "legacy_schema") {
        for table in tables(&CREATED, &creator.sql) {
            if !emptied.contains(&table) && !missing.iter().any(|m: &NotEmptied| m.table == table) {
                missing.push(NotEmptied { table, created_by: creator.name.clone(), origin: empty.origin.clone() });
            }
        }
    }
    missing
}

/// The tables `sql` empties: every `TRUNCATE`, and every `DELETE` without
/// a `WHERE` (a `DELETE ... WHERE` keeps rows, so it empties nothing).
/// Commands are split at `;`, which a table name never holds.
fn emptied_tables(sql: &str) -> Vec<String> {
    static WHERE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?i)\bWHERE\b").expect("a valid pattern"));
    let code = text::strip_comments(sql);
    let mut found = Vec::new();
    for command in code.split(';').filter(|c| !WHERE.is_match(c)) {
        for table in tables(&EMPTIED, command) {
            if !found.contains(&table) {
                found.push(table);
            }
        }
    }
    found
}

/// The table names `pattern`'s first group captures in `sql` (comments
/// removed), each unquoted, its last dotted part, lowercase.
fn tables(pattern: &Regex, sql: &str) -> Vec<String> {
    let code = text::strip_comments(sql);
    let mut found = Vec::new();
    for captured in pattern.captures_iter(&code) {
        for name in captured[1].split(',') {
            let last = name.trim().rsplit('.').next().unwrap_or_default();
            let bare = last.trim_matches(|c| matches!(c, '"' | '`' | '[' | ']')).to_ascii_lowercase();
            if !bare.is_empty() && !found.contains(&bare) {
                found.push(bare);
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(pattern: &Regex, sql: &str) -> Vec<String> {
        tables(pattern, sql)
    }

    #[test]
    fn created_tables_are_read_quoted_qualified_or_plain() {
        let sql = "CREATE TABLE jobs (id text);\n-- CREATE TABLE ghost (x int)\nCREATE TABLE IF NOT EXISTS \"Job_Leases\" (n text);\nCREATE TABLE [dbo].[audit] (x int)";
        assert_eq!(names(&CREATED, sql), ["jobs", "job_leases", "audit"]);
    }

    #[test]
    fn a_delete_with_a_where_empties_nothing() {
        let sql = "DELETE FROM jobs WHERE status <> 'processing'; DELETE FROM job_leases";
        assert_eq!(emptied_tables(sql), ["job_leases"]);
        assert_eq!(emptied_tables("DELETE FROM jobs;\nTRUNCATE TABLE job_leases"), ["jobs", "job_leases"]);
    }

    #[test]
    fn emptied_tables_are_read_from_delete_and_truncate() {
        let sql = "DELETE FROM jobs; TRUNCATE TABLE a, `b`; delete job_leases; TRUNCATE ONLY c";
        assert_eq!(names(&EMPTIED, sql), ["jobs", "a", "b", "job_leases", "c"]);
    }

    #[test]
    fn every_shipped_dialect_empties_every_table_it_creates() {
        for name in ["sqlite", "postgres", "mysql", "cockroach", "mssql"] {
            let d = Dialect::load(&super::super::Source::Embedded, name).expect("a shipped dialect loads");
            assert!(d.has_statement("empty_namespace"), "{name} reuses its tables between scenarios");
            assert_eq!(not_emptied(&d), [], "{name}");
        }
    }

    #[test]
    fn a_forgotten_table_is_named_with_its_creator() {
        let d = Dialect::load(&super::super::Source::Embedded, "postgres").expect("loads");
        let forgetful = d.with_sql("empty_namespace", "DELETE FROM jobs".to_owned());
        let missing = not_emptied(&forgetful);
        assert_eq!(missing.len(), 1, "{missing:?}");
        assert_eq!(missing[0].table, "job_leases");
        assert_eq!(missing[0].created_by, "legacy_schema");
        assert!(missing[0].origin.starts_with("builtin:postgres/schema.sql:"), "{}", missing[0].origin);
    }
}
