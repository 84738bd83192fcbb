//! Product commands that are not queue SQL, for `reapcheck bench --scale`:
//! transactions around a bulk load, fresh planner statistics, and the
//! query plan a product chooses for a statement. They depend on the
//! product only (never on a user's port), so they live here and not in a
//! dialect folder.

use super::{BackendError, Connection};
use crate::dialect::contract::Column;
use crate::engine::{Kind, Value};

/// Which plan to ask PostgreSQL for: one made for the bound values (what
/// the first five executions of a prepared statement get), or the generic
/// one made without them (what PostgreSQL may switch to from the sixth
/// execution on, and always uses under `plan_cache_mode =
/// force_generic_plan`). Other products have one kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlanKind {
    /// Planned for the bound values.
    Custom,
    /// Planned without them (PostgreSQL only).
    Generic,
}

impl Connection {
    /// Starts a transaction.
    pub async fn begin(&mut self) -> Result<(), BackendError> {
        let sql = match self {
            Connection::MySql(_) => "START TRANSACTION",
            Connection::Mssql(_) => "BEGIN TRANSACTION",
            _ => "BEGIN",
        };
        self.execute(sql, &[]).await.map(drop)
    }

    /// Commits the transaction [`Connection::begin`] started.
    pub async fn commit(&mut self) -> Result<(), BackendError> {
        let sql = match self {
            Connection::Mssql(_) => "COMMIT TRANSACTION",
            _ => "COMMIT",
        };
        self.execute(sql, &[]).await.map(drop)
    }

    /// Rolls back the transaction [`Connection::begin`] started.
    pub async fn rollback(&mut self) -> Result<(), BackendError> {
        let sql = match self {
            Connection::Mssql(_) => "ROLLBACK TRANSACTION",
            _ => "ROLLBACK",
        };
        self.execute(sql, &[]).await.map(drop)
    }

    /// Refreshes the planner's statistics of `table` (`ANALYZE`; MySQL and
    /// MariaDB `ANALYZE TABLE`; SQL Server `UPDATE STATISTICS`), as a
    /// production database's autovacuum or its operator would.
    pub async fn analyze(&mut self, table: &str) -> Result<(), BackendError> {
        assert!(table.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'), "a table of the contract");
        let sql = match self {
            Connection::Sqlite(_) => format!("ANALYZE {table}"),
            Connection::Postgres(_) => format!("ANALYZE {table}"),
            Connection::MySql(_) => format!("ANALYZE TABLE {table}"),
            Connection::Mssql(_) => format!("UPDATE STATISTICS {table}"),
        };
        match self {
            // ANALYZE TABLE answers with a result set.
            Connection::MySql(_) => self.query(&sql, &[], &[text("Table")]).await.map(drop),
            _ => self.execute(&sql, &[]).await.map(drop),
        }
    }

    /// The plan the product chooses for query `sql` (prepared for this
    /// connection, with `values` in bind order), one line per plan line:
    /// PostgreSQL and CockroachDB `EXPLAIN`, SQLite `EXPLAIN QUERY PLAN`,
    /// MySQL and MariaDB `EXPLAIN FORMAT=JSON` (summarised, one line per
    /// table read: [`summarise_json`]). SQL Server has no plan here (`Ok`
    /// with one line saying so): its showplan needs a batch of its own.
    ///
    /// `Generic` on PostgreSQL explains the statement `sql` was prepared
    /// as by the driver (run it at least once first), under
    /// `plan_cache_mode = force_generic_plan`, reset afterwards; elsewhere
    /// it is the same as `Custom`.
    ///
    /// Errors: the product refused the EXPLAIN, or (`Generic`) `sql` has
    /// not been prepared on this connection.
    pub async fn explain(&mut self, sql: &str, values: &[Value], kind: PlanKind) -> Result<Vec<String>, BackendError> {
        match self {
            Connection::Postgres(_) if kind == PlanKind::Generic => self.explain_generic(sql, values).await,
            Connection::Postgres(_) => self.lines(&format!("EXPLAIN {sql}"), values, &[text("QUERY PLAN")], 0).await,
            Connection::Sqlite(_) => {
                let columns = [int("id"), int("parent"), int("notused"), text("detail")];
                self.lines(&format!("EXPLAIN QUERY PLAN {sql}"), values, &columns, 3).await
            }
            Connection::MySql(_) => {
                let json = self.lines(&format!("EXPLAIN FORMAT=JSON {sql}"), values, &[text("EXPLAIN")], 0).await?;
                Ok(summarise_json(&json.join("\n")))
            }
            Connection::Mssql(_) => {
                Ok(vec!["(no plan: SQL Server's SHOWPLAN is not read by reapcheck yet)".to_owned()])
            }
        }
    }

    async fn lines(
        &mut self,
        sql: &str,
        values: &[Value],
        columns: &[Column],
        at: usize,
    ) -> Result<Vec<String>, BackendError> {
        let rows = self.query(sql, values, columns).await?;
        Ok(rows
            .into_iter()
            .filter_map(|row| match row.into_iter().nth(at) {
                Some(Value::Text(t)) => Some(t),
                _ => None,
            })
            .flat_map(|t| t.lines().map(str::to_owned).collect::<Vec<_>>())
            .collect())
    }

    /// PostgreSQL's generic plan for `sql`: `EXPLAIN EXECUTE` of the
    /// driver's prepared statement of the same text, with the values
    /// written as literals (EXECUTE takes no bind parameters).
    async fn explain_generic(&mut self, sql: &str, values: &[Value]) -> Result<Vec<String>, BackendError> {
        let name_column = [text("name")];
        let names = self
            .query(
                "SELECT name FROM pg_prepared_statements WHERE statement = $1",
                &[Value::Text(sql.to_owned())],
                &name_column,
            )
            .await?;
        let Some(Some(Value::Text(name))) = names.into_iter().next().map(|r| r.into_iter().next()) else {
            return Err(BackendError::new(
                super::BackendErrorKind::Database,
                "the statement is not prepared on this connection: run it before asking for its generic plan"
                    .to_owned(),
            ));
        };
        let encoding = self.instant_encoding();
        let literals: Vec<String> = values.iter().map(|v| literal(&encoding.bind(v))).collect();
        let ident = name.replace('"', "\"\"");
        self.execute("SET plan_cache_mode = force_generic_plan", &[]).await?;
        let plan = self
            .lines(&format!("EXPLAIN EXECUTE \"{ident}\"({})", literals.join(", ")), &[], &[text("QUERY PLAN")], 0)
            .await;
        let reset = self.execute("RESET plan_cache_mode", &[]).await;
        let plan = plan?;
        reset?;
        Ok(plan)
    }

    /// Plans this session's prepared statements generically from now on
    /// (`on`), or back to the default choice; a no-op elsewhere.
    pub async fn force_generic_plans(&mut self, on: bool) -> Result<(), BackendError> {
        match self {
            Connection::Postgres(_) if on => {
                self.execute("SET plan_cache_mode = force_generic_plan", &[]).await.map(drop)
            }
            Connection::Postgres(_) => self.execute("RESET plan_cache_mode", &[]).await.map(drop),
            _ => Ok(()),
        }
    }
}

fn text(name: &'static str) -> Column {
    Column { name, kind: Kind::Text, nullable: true }
}

fn int(name: &'static str) -> Column {
    Column { name, kind: Kind::Int, nullable: true }
}

/// A bound value as a PostgreSQL literal (an instant in UTC with six
/// fractional digits, which `timestamptz` and `timestamp` both read).
fn literal(value: &Value) -> String {
    match value {
        Value::Text(t) => format!("'{}'", t.replace('\'', "''")),
        Value::Int(i) => i.to_string(),
        Value::Instant(t) => format!("'{}'", t.to_chrono().format("%Y-%m-%d %H:%M:%S%.6f+00")),
        Value::Null(_) => "NULL".to_owned(),
    }
}

/// MySQL's and MariaDB's JSON plan as one line per table read: the table,
/// its access type (`ALL` reads the whole table, `index` a whole index,
/// `range` a slice of one, `ref` the rows equal to a key), the index and
/// the key parts it uses, the rows it expects and the condition left to
/// check on each row. Text that is not JSON is returned as it is.
pub fn summarise_json(json: &str) -> Vec<String> {
    let Ok(tree) = serde_json::from_str::<serde_json::Value>(json) else {
        return json.lines().map(str::to_owned).collect();
    };
    let mut lines = Vec::new();
    walk(&tree, &mut lines);
    if lines.is_empty() {
        lines.push("(no table read)".to_owned());
    }
    lines
}

fn walk(node: &serde_json::Value, lines: &mut Vec<String>) {
    match node {
        serde_json::Value::Object(map) => {
            if let Some(serde_json::Value::String(table)) = map.get("table_name") {
                let field = |k: &str| map.get(k).map(|v| v.to_string().trim_matches('"').to_owned());
                let mut line = format!("table {table}: access_type {}", field("access_type").unwrap_or_default());
                for key in ["key", "used_key_parts", "rows", "filesort", "attached_condition"] {
                    if let Some(v) = field(key) {
                        line.push_str(&format!(", {key} {v}"));
                    }
                }
                lines.push(line);
            }
            for (key, value) in map {
                if key != "table_name" {
                    walk(value, lines);
                }
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| walk(v, lines)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_json_plan_becomes_one_line_per_table() {
        let json = r#"{"query_block": {"select_id": 1, "filesort": {"sort_key": "jobs.`id`",
            "temporary_table": {"table": {"table_name": "jobs", "access_type": "range",
            "possible_keys": ["jobs_reap", "jobs_stale"], "key": "jobs_stale",
            "used_key_parts": ["status", "last_seen"], "rows": 1000,
            "attached_condition": "jobs.`status` = 'processing'"}}}}}"#;
        assert_eq!(
            summarise_json(json),
            [
                r#"table jobs: access_type range, key jobs_stale, used_key_parts ["status","last_seen"], rows 1000, attached_condition jobs.`status` = 'processing'"#
            ]
        );
        assert_eq!(summarise_json("not json\nat all"), ["not json", "at all"]);
    }

    #[test]
    fn literals_are_quoted_for_postgresql() {
        assert_eq!(literal(&Value::Text("o'k".into())), "'o''k'");
        assert_eq!(literal(&Value::Int(-3)), "-3");
        assert_eq!(literal(&Value::Null(Kind::Text)), "NULL");
        let t = crate::time::Instant::parse_rfc3339("2026-03-08T07:00:00.000001Z").expect("an instant");
        assert_eq!(literal(&Value::Instant(t)), "'2026-03-08 07:00:00.000001+00'");
    }
}
