//! SQLite through sqlx. Instants are bound as INTEGER microseconds since
//! the Unix epoch (see `dialects/sqlite/schema.sql`), or under
//! [`InstantEncoding::NaiveUtc`] as text `YYYY-MM-DD HH:MM:SS.ffffff` in
//! UTC, which orders as it compares. Values are decoded by their storage
//! class, whatever the column's declared type: an INTEGER instant is
//! microseconds, a TEXT one a UTC date and time.

use chrono::NaiveDateTime;
use sqlx::sqlite::{SqliteArguments, SqliteConnectOptions, SqliteJournalMode, SqliteRow};
use sqlx::{Arguments, ConnectOptions, Connection as _, Row, SqliteConnection, TypeInfo as _, ValueRef as _};

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};

use super::error::{BackendError, BackendErrorKind};
use super::instants::InstantEncoding;
use crate::dialect::contract::Column;
use crate::engine::{Kind, Value};
use crate::time::Instant;

/// One in-memory SQLite database.
pub struct SqliteConn {
    conn: SqliteConnection,
    /// What the progress handler checks (see [`Watch`]).
    watch: Arc<Watch>,
    /// A statement was given up by the client-side limit, or its future
    /// dropped: the connection is dropped, not closed politely.
    busy: bool,
    /// How instants are bound; see [`InstantEncoding`].
    pub(super) instants: InstantEncoding,
    /// What `bench --compare`'s capture calls this session.
    pub(super) capture: crate::compare::capture::Session,
}

/// The text form of a [`InstantEncoding::NaiveUtc`] instant: SQLite's own
/// `datetime()` form with six fractional digits.
const NAIVE_FORMAT: &str = "%Y-%m-%d %H:%M:%S%.6f";

/// How many virtual machine instructions SQLite runs between two calls of
/// the progress handler: a check of two atomics and the clock costs far
/// less than 1,000 instructions take.
const PROGRESS_EVERY: i32 = 1_000;

/// What a connection's progress handler reads: SQLite has no statement
/// timeout of its own, so the handler interrupts the statement running
/// past its deadline, or one a signal came during (`SQLITE_INTERRUPT`).
#[derive(Default)]
struct Watch {
    /// Milliseconds after [`base`] when the statement must end; 0: none.
    deadline: AtomicU64,
    /// Whether a signal stops the statement: it began before any signal.
    on_signal: AtomicBool,
    /// Why the handler stopped the statement: 0 not, 1 the limit, 2 a signal.
    fired: AtomicU8,
}

/// The instant [`Watch::deadline`] counts from.
fn base() -> std::time::Instant {
    static BASE: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    *BASE.get_or_init(std::time::Instant::now)
}

/// Milliseconds since [`base`], at least 1.
fn now_ms() -> u64 {
    u64::try_from(base().elapsed().as_millis()).unwrap_or(u64::MAX).max(1)
}

impl Watch {
    /// The progress handler: `false` stops the statement.
    fn proceed(&self) -> bool {
        let deadline = self.deadline.load(Ordering::Relaxed);
        if deadline != 0 && now_ms() >= deadline {
            self.fired.store(1, Ordering::Relaxed);
            return false;
        }
        if self.on_signal.load(Ordering::Relaxed) && crate::interrupt::interrupted().is_some() {
            self.fired.store(2, Ordering::Relaxed);
            return false;
        }
        true
    }

    /// A statement starts: its deadline is the limit from now
    /// (`crate::deadline`).
    fn start(&self) {
        let limit = u64::try_from(crate::deadline::limit().as_millis()).unwrap_or(u64::MAX);
        self.fired.store(0, Ordering::Relaxed);
        self.on_signal.store(crate::interrupt::interrupted().is_none(), Ordering::Relaxed);
        self.deadline.store(now_ms().saturating_add(limit), Ordering::Relaxed);
    }

    /// The statement ended with `done`: an interrupt the handler caused is
    /// told as the limit's or the signal's.
    fn end<T>(&self, done: Result<T, BackendError>) -> Result<T, BackendError> {
        self.deadline.store(0, Ordering::Relaxed);
        match (self.fired.swap(0, Ordering::Relaxed), done) {
            (1, Err(_)) => Err(BackendError::timed_out()),
            (2, Err(_)) => Err(BackendError::new(
                BackendErrorKind::Interrupted,
                crate::interrupt::interrupted().unwrap_or("a signal"),
            )),
            (_, done) => done,
        }
    }
}

/// `conn` with a progress handler reading a new [`Watch`].
async fn watched(mut conn: SqliteConnection) -> Result<(SqliteConnection, Arc<Watch>), BackendError> {
    let watch = Arc::new(Watch::default());
    let handler = watch.clone();
    conn.lock_handle().await?.set_progress_handler(PROGRESS_EVERY, move || handler.proceed());
    Ok((conn, watch))
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
        Self::watching(SqliteConnectOptions::new().in_memory(true).connect().await?).await
    }

    /// A connection to the database file `path`, created if missing, in
    /// WAL mode and waiting up to `busy_timeout` for another connection's
    /// write lock: several connections onto one database, as `reapcheck
    /// race` needs (`run` keeps one in-memory database per scenario).
    pub async fn open_file(path: &std::path::Path, busy_timeout: std::time::Duration) -> Result<Self, BackendError> {
        let conn = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .busy_timeout(busy_timeout)
            .connect()
            .await?;
        Self::watching(conn).await
    }

    /// `conn` under the statement time limit's progress handler, binding
    /// instants natively until told otherwise, a new session to the capture.
    async fn watching(conn: SqliteConnection) -> Result<Self, BackendError> {
        let (conn, watch) = watched(conn).await?;
        Ok(SqliteConn {
            conn,
            watch,
            busy: false,
            instants: InstantEncoding::default(),
            capture: crate::compare::capture::Session::open(),
        })
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
        let conn = &mut self.conn;
        let running = async { Ok(sqlx::query_with(sqlx::AssertSqlSafe(sql), args).execute(&mut *conn).await?) };
        let done = Self::bounded(&mut self.busy, &self.watch, running).await?;
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
        let conn = &mut self.conn;
        let running = async { Ok(sqlx::query_with(sqlx::AssertSqlSafe(sql), args).fetch_all(&mut *conn).await?) };
        let rows = Self::bounded(&mut self.busy, &self.watch, running).await?;
        rows.iter().map(|r| decode(r, columns)).collect()
    }

    /// Runs `statement` under the time limit: the progress handler's
    /// deadline, and the client-side limit for a statement the handler is
    /// not called in (waiting on another connection's lock).
    async fn bounded<T>(
        busy: &mut bool,
        watch: &Watch,
        statement: impl Future<Output = Result<T, BackendError>>,
    ) -> Result<T, BackendError> {
        *busy = true;
        watch.start();
        let done = super::cancel::bounded(None, statement).await.ok_or_else(BackendError::timed_out)?;
        *busy = false;
        watch.end(done)
    }

    /// Closes the connection, and with it the database.
    pub async fn close(self) {
        if self.busy {
            // Given up mid-statement: dropped, not waited for.
            return;
        }
        let _ = self.conn.close().await;
    }
}

fn decode(row: &SqliteRow, columns: &[Column]) -> Result<Vec<Value>, BackendError> {
    BackendError::check_width(row.len(), columns.len())?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{Connection, InstantEncoding};

    fn declared(kinds: &[Kind]) -> Vec<Column> {
        const NAMES: [&str; 4] = ["c0", "c1", "c2", "c3"];
        kinds.iter().zip(NAMES).map(|(kind, name)| Column { name, kind: *kind, nullable: true }).collect()
    }

    fn at(text: &str) -> Instant {
        Instant::parse_rfc3339(text).expect("an instant")
    }

    /// A connection holding table `t (a)` with `value` bound into it under `encoding`.
    async fn stored(encoding: InstantEncoding, value: Value) -> Connection {
        let mut conn = Connection::Sqlite(SqliteConn::open_memory().await.expect("open"));
        conn.set_instant_encoding(encoding).await.expect("set");
        // Test probes: a column of no declared type keeps what is bound as is.
        conn.execute("CREATE TABLE t (a)", &[]).await.expect("created");
        conn.execute("INSERT INTO t (a) VALUES (?1)", &[value]).await.expect("inserted");
        conn
    }

    #[tokio::test]
    async fn each_encoding_stores_its_form_and_reads_it_back() {
        let t = at("2026-03-08T07:00:00.123456Z");
        let cases = [
            (InstantEncoding::Native, Value::Int(1_772_953_200_123_456), t),
            (InstantEncoding::EpochMicros, Value::Int(1_772_953_200_123_456), t),
            (InstantEncoding::EpochMillis, Value::Int(1_772_953_200_123), at("2026-03-08T07:00:00.123Z")),
            (InstantEncoding::EpochSeconds, Value::Int(1_772_953_200), at("2026-03-08T07:00:00Z")),
            (InstantEncoding::NaiveUtc, Value::Text("2026-03-08 07:00:00.123456".into()), t),
        ];
        for (encoding, raw, back) in cases {
            let mut conn = stored(encoding, Value::Instant(t)).await;
            let kind = if matches!(raw, Value::Text(_)) { Kind::Text } else { Kind::Int };
            let rows = conn.query("SELECT a, a FROM t", &[], &declared(&[Kind::Instant, kind])).await.expect("read");
            assert_eq!(rows, vec![vec![Value::Instant(back), raw]], "{encoding:?}");
            conn.close().await;
        }
    }

    #[tokio::test]
    async fn null_instants_stay_null_in_every_encoding() {
        for encoding in [InstantEncoding::Native, InstantEncoding::NaiveUtc, InstantEncoding::EpochSeconds] {
            let mut conn = stored(encoding, Value::Null(Kind::Instant)).await;
            let rows = conn.query("SELECT a FROM t", &[], &declared(&[Kind::Instant])).await.expect("read");
            assert_eq!(rows, vec![vec![Value::Null(Kind::Instant)]], "{encoding:?}");
            conn.close().await;
        }
    }

    #[tokio::test]
    async fn text_instants_in_sqlite_forms_decode_as_utc() {
        let mut conn = stored(InstantEncoding::Native, Value::Text("2026-03-08T07:00:00".into())).await;
        let rows = conn.query("SELECT a FROM t", &[], &declared(&[Kind::Instant])).await.expect("read");
        assert_eq!(rows, vec![vec![Value::Instant(at("2026-03-08T07:00:00Z"))]]);
        conn.close().await;
    }

    #[tokio::test]
    async fn extra_columns_are_ignored_and_missing_ones_named() {
        let mut conn = stored(InstantEncoding::Native, Value::Int(5)).await;
        let rows = conn.query("SELECT a, 'extra', 3.5 FROM t", &[], &declared(&[Kind::Int])).await.expect("read");
        assert_eq!(rows, vec![vec![Value::Int(5)]]);
        let e = conn.query("SELECT a FROM t", &[], &declared(&[Kind::Int, Kind::Text])).await.unwrap_err();
        assert!(e.message.contains("a row has 1 columns, the contract declares 2"), "{e}");
        conn.close().await;
    }

    #[tokio::test]
    async fn a_value_of_the_wrong_class_names_its_column() {
        let mut conn = stored(InstantEncoding::Native, Value::Text("soon".into())).await;
        for (kind, what) in [(Kind::Int, "an integer"), (Kind::Instant, "a UTC date and time (`soon`)")] {
            let e = conn.query("SELECT a FROM t", &[], &declared(&[kind])).await.unwrap_err();
            assert_eq!(e.kind, BackendErrorKind::Decode);
            assert!(e.message.contains(&format!("column `c0` holds TEXT, not {what}")), "{e}");
        }
        let e = conn.query("SELECT 1.5", &[], &declared(&[Kind::Int])).await.unwrap_err();
        assert!(e.message.contains("column `c0` holds REAL, not an integer"), "{e}");
        conn.close().await;
    }
}
