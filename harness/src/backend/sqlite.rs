//! SQLite through sqlx. Instants are bound as INTEGER microseconds since
//! the Unix epoch (see `dialects/sqlite/schema.sql`), or under
//! [`InstantEncoding::NaiveUtc`] as text `YYYY-MM-DD HH:MM:SS.ffffff` in
//! UTC, which orders as it compares. Values are decoded by their storage
//! class, whatever the column's declared type: an INTEGER instant is
//! microseconds, a TEXT one a UTC date and time.

use chrono::NaiveDateTime;
use sqlx::sqlite::{SqliteArguments, SqliteConnectOptions, SqliteRow};
use sqlx::{Arguments, ConnectOptions, Connection as _, Row, SqliteConnection, TypeInfo as _, ValueRef as _};

use super::error::{BackendError, BackendErrorKind};
use super::instants::InstantEncoding;
use crate::dialect::contract::Column;
use crate::engine::{Kind, Value};
use crate::time::Instant;

/// One in-memory SQLite database.
pub struct SqliteConn {
    conn: SqliteConnection,
    /// How instants are bound; see [`InstantEncoding`].
    pub(super) instants: InstantEncoding,
}

/// The text form of a [`InstantEncoding::NaiveUtc`] instant: SQLite's own
/// `datetime()` form with six fractional digits.
const NAIVE_FORMAT: &str = "%Y-%m-%d %H:%M:%S%.6f";

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
        Ok(SqliteConn { conn, instants: InstantEncoding::default() })
    }

    fn arguments(&self, params: &[Value]) -> Result<SqliteArguments, BackendError> {
        let naive = self.instants == InstantEncoding::NaiveUtc;
        let mut args = SqliteArguments::default();
        for p in params {
            let added = match p {
                Value::Text(s) => args.add(s.clone()),
                Value::Int(i) => args.add(*i),
                Value::Instant(t) if naive => args.add(t.to_chrono().naive_utc().format(NAIVE_FORMAT).to_string()),
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
        let args = self.arguments(params)?;
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
        let args = self.arguments(params)?;
        let rows = sqlx::query_with(sqlx::AssertSqlSafe(sql), args).fetch_all(&mut self.conn).await?;
        rows.iter().map(|r| decode(r, columns)).collect()
    }

    /// Closes the connection, and with it the database.
    pub async fn close(self) {
        let _ = self.conn.close().await;
    }
}

fn decode(row: &SqliteRow, columns: &[Column]) -> Result<Vec<Value>, BackendError> {
    if row.len() < columns.len() {
        let message = format!(
            "a row has {} columns, the contract declares {}: return them first, in its order (extras after them are ignored)",
            row.len(),
            columns.len()
        );
        return Err(BackendError::new(BackendErrorKind::Decode, message));
    }
    columns.iter().enumerate().map(|(i, c)| decode_column(row, i, c)).collect()
}

/// Column `i` as `column` declares, by the value's storage class.
fn decode_column(row: &SqliteRow, i: usize, column: &Column) -> Result<Value, BackendError> {
    let raw = row.try_get_raw(i)?;
    if raw.is_null() {
        return Ok(Value::Null(column.kind));
    }
    let class = raw.type_info().name().to_owned();
    let wrong = |what: &str| {
        let message = format!("column `{}` holds {class}, not {what}", column.name);
        BackendError::new(BackendErrorKind::Decode, message)
    };
    Ok(match (column.kind, class.as_str()) {
        (Kind::Text, "TEXT") => Value::Text(row.try_get(i)?),
        (Kind::Int, "INTEGER") => Value::Int(row.try_get(i)?),
        (Kind::Instant, "INTEGER") => Value::Instant(Instant::from_unix_micros(row.try_get(i)?)),
        (Kind::Instant, "TEXT") => {
            let text: String = row.try_get(i)?;
            Value::Instant(naive_utc(&text).ok_or_else(|| wrong(&format!("a UTC date and time (`{text}`)")))?)
        }
        (Kind::Text, _) => return Err(wrong("text")),
        (Kind::Int, _) => return Err(wrong("an integer")),
        (Kind::Instant, _) => return Err(wrong("INTEGER microseconds or a TEXT date and time")),
    })
}

/// A UTC date and time in SQLite's text forms: `2026-03-08 07:00:00`, with
/// an optional fraction, or with `T` between date and time.
fn naive_utc(text: &str) -> Option<Instant> {
    ["%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%dT%H:%M:%S%.f"]
        .iter()
        .find_map(|f| NaiveDateTime::parse_from_str(text, f).ok())
        .map(|t| Instant::from_chrono(t.and_utc()))
}
