//! SQLite through sqlx. Instants are bound and read as INTEGER microseconds
//! since the Unix epoch (see `dialects/sqlite/schema.sql`).

use sqlx::sqlite::{SqliteArguments, SqliteConnectOptions, SqliteRow};
use sqlx::{Arguments, ConnectOptions, Connection as _, Row, SqliteConnection};

use super::error::{BackendError, BackendErrorKind};
use crate::dialect::contract::Column;
use crate::engine::{Kind, Value};
use crate::time::Instant;

/// One in-memory SQLite database.
pub struct SqliteConn {
    conn: SqliteConnection,
}

/// The version of the SQLite library linked in.
pub async fn library_version() -> Result<String, BackendError> {
    let mut conn = SqliteConn::open_memory().await?;
    let row = sqlx::query("SELECT sqlite_version()").fetch_one(&mut conn.conn).await?;
    let version: String = row.try_get(0)?;
    conn.close().await;
    Ok(version)
}

impl SqliteConn {
    /// A new, empty in-memory database.
    pub async fn open_memory() -> Result<Self, BackendError> {
        let conn = SqliteConnectOptions::new().in_memory(true).connect().await?;
        Ok(SqliteConn { conn })
    }

    fn arguments(params: &[Value]) -> Result<SqliteArguments, BackendError> {
        let mut args = SqliteArguments::default();
        for p in params {
            let added = match p {
                Value::Text(s) => args.add(s.clone()),
                Value::Int(i) => args.add(*i),
                Value::Instant(t) => args.add(t.unix_micros()),
                Value::Null(Kind::Text) => args.add(None::<String>),
                Value::Null(Kind::Int | Kind::Instant) => args.add(None::<i64>),
            };
            added.map_err(|e| BackendError::new(BackendErrorKind::Decode, e.to_string()))?;
        }
        Ok(args)
    }

    /// Runs one command; returns the rows it changed.
    pub async fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, BackendError> {
        let args = Self::arguments(params)?;
        let done = sqlx::query_with(sqlx::AssertSqlSafe(sql), args).execute(&mut self.conn).await?;
        Ok(done.rows_affected())
    }

    /// Runs one query and decodes its rows.
    pub async fn query(
        &mut self,
        sql: &str,
        params: &[Value],
        columns: &[Column],
    ) -> Result<Vec<Vec<Value>>, BackendError> {
        let args = Self::arguments(params)?;
        let rows = sqlx::query_with(sqlx::AssertSqlSafe(sql), args).fetch_all(&mut self.conn).await?;
        rows.iter().map(|r| decode(r, columns)).collect()
    }

    /// Closes the connection, and with it the database.
    pub async fn close(self) {
        let _ = self.conn.close().await;
    }
}

fn decode(row: &SqliteRow, columns: &[Column]) -> Result<Vec<Value>, BackendError> {
    columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            Ok(match c.kind {
                Kind::Text => row.try_get::<Option<String>, _>(i)?.map_or(Value::Null(Kind::Text), Value::Text),
                Kind::Int => row.try_get::<Option<i64>, _>(i)?.map_or(Value::Null(Kind::Int), Value::Int),
                Kind::Instant => row
                    .try_get::<Option<i64>, _>(i)?
                    .map_or(Value::Null(Kind::Instant), |m| Value::Instant(Instant::from_unix_micros(m))),
            })
        })
        .collect()
}
