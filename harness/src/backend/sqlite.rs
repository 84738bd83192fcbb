//! SQLite through rusqlite, on the caller's thread. Instants are bound as
//! INTEGER microseconds since the Unix epoch (see
//! `dialects/sqlite/schema.sql`), or under [`InstantEncoding::NaiveUtc`]
//! as text `YYYY-MM-DD HH:MM:SS.ffffff` in UTC, which orders as it
//! compares. Values are decoded by their storage class, whatever the
//! column's declared type: an INTEGER instant is microseconds, a TEXT one
//! a UTC date and time.
//!
//! An in-memory database (`run`, `mutate`, `fuzz`, `adapter serve`) runs
//! each statement inline: it never waits on another connection, and its
//! time limit and signals are the progress handler's ([`Watch`]). This is
//! where SQLite mode's time went under sqlx-sqlite, which hands every
//! statement to a worker thread and back (issue 22's measurements are in
//! README's Performance section). A database file shared by several
//! connections (`race`) may wait on another's write lock, so its
//! statements run on tokio's blocking threads under the client-side limit
//! as well, and never hold up the connections they wait for.

use chrono::NaiveDateTime;
use rusqlite::types::{Value as SqlValue, ValueRef};

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};

use super::error::{BackendError, BackendErrorKind};
use super::instants::InstantEncoding;
use crate::dialect::contract::Column;
use crate::engine::{Kind, Value};
use crate::time::Instant;

/// One SQLite database connection.
pub struct SqliteConn {
    /// The connection; `None` while a shared file's statement runs on a
    /// blocking thread, and for good once one was given up there (the
    /// thread drops it when the statement ends).
    db: Option<rusqlite::Connection>,
    /// What the progress handler checks (see [`Watch`]).
    watch: Arc<Watch>,
    /// A database file other connections use too: statements run on a
    /// blocking thread (see the module's documentation).
    shared: bool,
    /// How instants are bound; see [`InstantEncoding`].
    pub(super) instants: InstantEncoding,
    /// What `bench --compare`'s capture calls this session.
    pub(super) capture: crate::compare::capture::Session,
}

/// How many prepared statements a connection keeps, as sqlx-sqlite did:
/// a dialect's statements are far fewer, so each is prepared once.
const STATEMENT_CACHE: usize = 100;

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

/// The version of the SQLite library linked in.
pub async fn library_version() -> Result<String, BackendError> {
    Ok(rusqlite::version().to_owned())
}

impl SqliteConn {
    /// A new, empty in-memory database.
    pub async fn open_memory() -> Result<Self, BackendError> {
        Self::watching(rusqlite::Connection::open_in_memory()?, false)
    }

    /// A connection to the database file `path`, created if missing, in
    /// WAL mode and waiting up to `busy_timeout` for another connection's
    /// write lock: several connections onto one database, as `reapcheck
    /// race` needs (`run` keeps one in-memory database per scenario).
    pub async fn open_file(path: &std::path::Path, busy_timeout: std::time::Duration) -> Result<Self, BackendError> {
        let path = path.to_owned();
        let opened = tokio::task::spawn_blocking(move || -> Result<rusqlite::Connection, BackendError> {
            let db = rusqlite::Connection::open(&path)?;
            db.busy_timeout(busy_timeout)?;
            // Answers with the mode now in force, a row.
            db.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))?;
            Ok(db)
        })
        .await
        .map_err(|e| BackendError::new(BackendErrorKind::Connection, format!("cannot open {e}")))??;
        Self::watching(opened, true)
    }

    /// `db` under the statement time limit's progress handler, with
    /// foreign keys enforced (sqlx-sqlite's default, kept), binding
    /// instants natively until told otherwise, a new session to the
    /// capture.
    fn watching(db: rusqlite::Connection, shared: bool) -> Result<Self, BackendError> {
        let watch = Arc::new(Watch::default());
        let handler = watch.clone();
        // rusqlite's handler interrupts on `true`.
        db.progress_handler(PROGRESS_EVERY, Some(move || !handler.proceed()))?;
        db.execute_batch("PRAGMA foreign_keys = ON")?;
        db.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        Ok(SqliteConn {
            db: Some(db),
            watch,
            shared,
            instants: InstantEncoding::default(),
            capture: crate::compare::capture::Session::open(),
        })
    }

    fn arguments(&self, params: &[Value]) -> Vec<SqlValue> {
        let naive = self.instants == InstantEncoding::NaiveUtc;
        params
            .iter()
            .map(|p| match p {
                Value::Text(s) => SqlValue::Text(s.clone()),
                Value::Int(i) => SqlValue::Integer(*i),
                Value::Instant(t) if naive => {
                    SqlValue::Text(t.to_chrono().naive_utc().format(NAIVE_FORMAT).to_string())
                }
                Value::Instant(t) => SqlValue::Integer(t.unix_micros()),
                Value::Null(_) => SqlValue::Null,
            })
            .collect()
    }

    /// Runs one command; returns the rows it changed.
    pub async fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, BackendError> {
        let params = self.arguments(params);
        Ok(self.run(sql, params, None).await?.0)
    }

    /// Runs one query and decodes its rows.
    pub async fn query(
        &mut self,
        sql: &str,
        params: &[Value],
        columns: &[Column],
    ) -> Result<Vec<Vec<Value>>, BackendError> {
        let params = self.arguments(params);
        Ok(self.run(sql, params, Some(columns)).await?.1)
    }

    /// Runs `sql` under the time limit: inline on an in-memory database,
    /// on a blocking thread under the client-side limit as well on a
    /// shared file (see the module's documentation). Returns the rows
    /// changed and, when `columns` is given, the rows decoded by them.
    async fn run(
        &mut self,
        sql: &str,
        params: Vec<SqlValue>,
        columns: Option<&[Column]>,
    ) -> Result<(u64, Vec<Vec<Value>>), BackendError> {
        if !self.shared {
            let db = self.db.as_ref().ok_or_else(given_up)?;
            self.watch.start();
            let done = statements(db, sql, &params, columns);
            return self.watch.end(done);
        }
        let db = self.db.take().ok_or_else(given_up)?;
        let (sql, columns) = (sql.to_owned(), columns.map(<[Column]>::to_vec));
        self.watch.start();
        let running = tokio::task::spawn_blocking(move || {
            let done = statements(&db, &sql, &params, columns.as_deref());
            (db, done)
        });
        let Some(joined) = super::cancel::bounded(None, running).await else {
            // Past the client-side limit, waiting on a lock: the thread
            // keeps the connection and drops it when the wait ends. The
            // deadline stays, so the progress handler stops the statement
            // if it gets the lock and runs.
            return Err(BackendError::timed_out());
        };
        let (db, done) = joined.map_err(|e| BackendError::new(BackendErrorKind::Connection, e.to_string()))?;
        self.db = Some(db);
        self.watch.end(done)
    }

    /// Closes the connection, and with it an in-memory database. One given
    /// up mid-statement is the blocking thread's to drop.
    pub async fn close(self) {
        if let Some(db) = self.db {
            let _ = db.close();
        }
    }
}

/// The error of a statement on a connection that gave one up before.
fn given_up() -> BackendError {
    BackendError::new(
        BackendErrorKind::Connection,
        "not sent: this connection gave up a statement waiting on a lock and is not used again",
    )
}

/// Runs each statement of `sql` in turn, as sqlx-sqlite did: `params` are
/// taken in order across them, `?NNN` and `$NNN` by number, missing ones
/// NULL. Returns the rows changed (summed over the statements) and the
/// rows returned, decoded by `columns` (none read when `None`).
fn statements(
    db: &rusqlite::Connection,
    sql: &str,
    params: &[SqlValue],
    columns: Option<&[Column]>,
) -> Result<(u64, Vec<Vec<Value>>), BackendError> {
    let mut done = (0, Vec::new());
    match db.prepare_cached(sql) {
        Ok(mut statement) => {
            one_statement(db, &mut statement, params, 0, columns, &mut done)?;
        }
        Err(rusqlite::Error::MultipleStatement) => {
            use rusqlite::fallible_iterator::FallibleIterator as _;
            let mut batch = rusqlite::Batch::new(db, sql);
            let mut used = 0;
            while let Some(mut statement) = batch.next()? {
                used = one_statement(db, &mut statement, params, used, columns, &mut done)?;
            }
        }
        Err(e) => return Err(e.into()),
    }
    Ok(done)
}

/// Binds `params` from `used` on into `statement`, runs it and adds to
/// `done` what it changed and returned; returns how many anonymous `?`
/// have been used so far.
fn one_statement(
    db: &rusqlite::Connection,
    statement: &mut rusqlite::Statement<'_>,
    params: &[SqlValue],
    mut used: usize,
    columns: Option<&[Column]>,
    done: &mut (u64, Vec<Vec<Value>>),
) -> Result<usize, BackendError> {
    for index in 1..=statement.parameter_count() {
        let n = match statement.parameter_name(index) {
            None => {
                used += 1;
                used
            }
            Some(name) => numbered(name)?,
        };
        // SQLite takes a parameter left unbound as NULL.
        let Some(value) = n.checked_sub(1).and_then(|i| params.get(i)) else { break };
        statement.raw_bind_parameter(index, value)?;
    }
    let width = statement.column_count();
    let mut rows = statement.raw_query();
    while let Some(row) = rows.next()? {
        if let Some(columns) = columns {
            BackendError::check_width(width, columns.len())?;
            done.1.push(columns.iter().enumerate().map(|(i, c)| decode_column(row, i, c)).collect::<Result<_, _>>()?);
        }
    }
    drop(rows);
    done.0 += db.changes();
    Ok(used)
}

/// The number of a `?NNN` or `$NNN` parameter.
fn numbered(name: &str) -> Result<usize, BackendError> {
    name.strip_prefix(['?', '$']).and_then(|n| n.parse().ok()).ok_or_else(|| {
        BackendError::new(
            BackendErrorKind::Database,
            format!("unsupported SQL parameter format: {name}: use `?` or `?NNN`"),
        )
    })
}

/// Column `i` as `column` declares, by the value's storage class.
fn decode_column(row: &rusqlite::Row<'_>, i: usize, column: &Column) -> Result<Value, BackendError> {
    let raw = row.get_ref(i)?;
    let class = match raw {
        ValueRef::Null => return Ok(Value::Null(column.kind)),
        ValueRef::Integer(_) => "INTEGER",
        ValueRef::Real(_) => "REAL",
        ValueRef::Text(_) => "TEXT",
        ValueRef::Blob(_) => "BLOB",
    };
    let wrong = |what: &str| {
        let message = format!("column `{}` holds {class}, not {what}", column.name);
        BackendError::new(BackendErrorKind::Decode, message)
    };
    let text = |bytes: &[u8]| String::from_utf8(bytes.to_vec()).map_err(|_| wrong("UTF-8 text"));
    Ok(match (column.kind, raw) {
        (Kind::Text, ValueRef::Text(t)) => Value::Text(text(t)?),
        (Kind::Int, ValueRef::Integer(i)) => Value::Int(i),
        (Kind::Instant, ValueRef::Integer(i)) => Value::Instant(Instant::from_unix_micros(i)),
        (Kind::Instant, ValueRef::Text(t)) => {
            let text = text(t)?;
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
    async fn statements_of_one_text_take_the_parameters_in_turn() {
        let mut conn = SqliteConn::open_memory().await.expect("open");
        conn.execute("CREATE TABLE t (a INTEGER); CREATE TABLE u (b TEXT)", &[]).await.expect("created");
        let params = [Value::Int(7), Value::Text("x".into())];
        let changed = conn.execute("INSERT INTO t (a) VALUES (?); INSERT INTO u (b) VALUES (?)", &params).await;
        assert_eq!(changed.expect("inserted"), 2);
        let rows = conn.query("SELECT a, ?2 FROM t", &params, &declared(&[Kind::Int, Kind::Text])).await;
        assert_eq!(rows.expect("read"), vec![vec![Value::Int(7), Value::Text("x".into())]]);
        let e = conn.query("SELECT :name", &[], &declared(&[Kind::Int])).await.unwrap_err();
        assert!(e.message.contains("unsupported SQL parameter format: :name"), "{e}");
        conn.close().await;
    }

    /// On one thread, as `race` may run: a statement of a shared file
    /// waiting on another connection's write lock must not stop that
    /// connection from committing (inline, it would wait out its busy
    /// timeout and fail with `database is locked`).
    #[tokio::test(flavor = "current_thread")]
    async fn a_shared_file_waiting_on_a_lock_lets_the_holder_commit() {
        let dir = std::env::temp_dir().join(format!("reapcheck-sqlite-lock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("db.sqlite");
        let wait = std::time::Duration::from_secs(30);
        let mut holder = SqliteConn::open_file(&path, wait).await.expect("open");
        let mut waiter = SqliteConn::open_file(&path, wait).await.expect("open");
        holder.execute("CREATE TABLE t (a INTEGER)", &[]).await.expect("created");
        holder.execute("BEGIN IMMEDIATE", &[]).await.expect("locked");
        let commit = async {
            tokio::task::yield_now().await;
            holder.execute("INSERT INTO t (a) VALUES (1)", &[]).await.expect("held");
            holder.execute("COMMIT", &[]).await.expect("committed");
        };
        let (inserted, ()) = tokio::join!(waiter.execute("INSERT INTO t (a) VALUES (2)", &[]), commit);
        assert_eq!(inserted.expect("waited for the lock"), 1);
        let rows = waiter.query("SELECT count(*) FROM t", &[], &declared(&[Kind::Int])).await.expect("read");
        assert_eq!(rows, vec![vec![Value::Int(2)]]);
        holder.close().await;
        waiter.close().await;
        let _ = std::fs::remove_dir_all(&dir);
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
