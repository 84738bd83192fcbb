//! MySQL and MariaDB through sqlx; the one `mysql` dialect serves both.
//!
//! Instants are bound and read as `NaiveDateTime` holding UTC, for the
//! dialect's `DATETIME(6)` columns, which no session time zone converts; a
//! `TIMESTAMP` column decodes too (the server shows it in the session's
//! `time_zone`, UTC unless a scenario sets one). Integers decode from any
//! integer type, signed or unsigned, `BOOLEAN`/`TINYINT(1)` as 0 or 1, and
//! from a whole `DECIMAL` (docs/decode-types.md).
//! Text is bound as a string and read back as bytes checked to be UTF-8: the
//! dialect keeps keys and tokens in `VARBINARY` (see
//! `dialects/mysql/schema.sql`), which sqlx will not decode as a `String`.
//!
//! Every `open()` is a new session (the first is the version probe's), so
//! a scenario's session state (its current database, `time_zone`,
//! `sql_mode`, prepared statements) ends with it, unless the connection
//! stays in its namespace as a lane (`crate::isolation`): then the next
//! scenario runs in the same database, whose statements sqlx keeps
//! prepared, and only `time_zone` is set back to the session's first
//! value ([`MySqlConn::reset_time_zone`]). A connection is never moved to
//! another database by hand (`USE`): sqlx's cached prepared statements
//! stay bound to the database they were prepared in, so the next
//! scenario's `INSERT INTO jobs` would land in the previous scenario's
//! table (seen on MariaDB 10.11), and sqlx has no `COM_RESET_CONNECTION`;
//! a lane evicted for another namespace gets a new session
//! ([`MySqlServer::renew`]).
//!
//! At most [`MySqlServer::limit_connections`] sessions are open at once
//! (`run` sets it to `--jobs`), in use and kept in lanes together: each
//! [`MySqlConn`] holds a permit until it closes.

use std::str::FromStr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::NaiveDateTime;
use sqlx::mysql::{MySqlArguments, MySqlConnectOptions, MySqlDatabaseError, MySqlRow};
use sqlx::{Arguments, Column as _, ConnectOptions, Connection as _, MySqlConnection, Row, TypeInfo as _};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::cancel::{self, Session as CancelSession};
use super::error::{BackendError, BackendErrorKind};
use super::instants::InstantEncoding;
use super::numeric;
use crate::dialect::contract::Column;
use crate::engine::{Kind, Value};
use crate::time::Instant;

/// MySQL's and MariaDB's error number for `Unknown or incorrect time zone`.
const UNKNOWN_TIME_ZONE: u16 = 1298;

/// The error of a named time zone on a server without time zone tables.
pub const NO_ZONE_TABLES: &str = "the server has no time zone tables, so it knows no named time zone: load them with \
    `sh ci/mysql-timezones.sh` (MariaDB: `mariadb-tzinfo-to-sql /usr/share/zoneinfo | mariadb -u root mysql`; \
    Oracle MySQL: `mysql_tzinfo_to_sql /usr/share/zoneinfo | mysql -u root mysql`)";

/// How long connecting, and the login after it, may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The most sessions a server holds at once unless
/// [`MySqlServer::limit_connections`] says otherwise: well under MariaDB's
/// and MySQL's default `max_connections` of 151.
const MAX_CONNECTIONS: usize = 32;

/// A reachable MySQL or MariaDB server. Not `Debug`: its options hold the
/// password.
pub struct MySqlServer {
    options: MySqlConnectOptions,
    /// The same options, shared with the cancels of this server's
    /// statements (`cancel.rs`).
    cancel: Arc<MySqlConnectOptions>,
    /// Whether it is MariaDB (`max_statement_time`) or MySQL
    /// (`max_execution_time`); `None` until the version probe said.
    mariadb: Option<bool>,
    secret: Secret,
    timeout: Duration,
    /// Whether the server knows named time zones (`false`: its time zone
    /// tables are empty), probed once when the server is reached.
    zone_tables: bool,
    /// The `time_zone` a new session has (sqlx sets `+00:00` unless the
    /// URL's `timezone` says otherwise), read by the probe.
    initial_zone: String,
    /// One permit per open session; see [`MySqlServer::limit_connections`].
    permits: Arc<Semaphore>,
    /// The version probe's session, for the first open.
    probe: Mutex<Option<MySqlConnection>>,
    /// How many sessions were opened, the probe's included (for tests).
    pub(super) opened: AtomicUsize,
    /// Whether the server still answers, shared with every connection.
    answering: cancel::Answering,
}

/// One connection, private to one scenario run (or kept in a lane).
pub struct MySqlConn {
    conn: MySqlConnection,
    /// Where a cancel of this session's statement goes (`KILL QUERY` with
    /// its `CONNECTION_ID()`); `None` on the version probe's connection.
    cancel: Option<CancelSession>,
    /// A statement was given up mid-reply (the client-side time limit, or
    /// its future dropped): the session is dropped, not closed politely.
    busy: bool,
    /// The server's [`cancel::Answering`].
    answering: cancel::Answering,
    secret: Secret,
    /// See [`MySqlServer`]'s field.
    zone_tables: bool,
    /// See [`MySqlServer`]'s field.
    initial_zone: String,
    /// This session's share of the server's limit, given back when the
    /// connection is closed or dropped.
    permit: OwnedSemaphorePermit,
    /// How instants are bound; `NaiveUtc` is the same as `Native` here.
    pub(super) instants: InstantEncoding,
    /// What `bench --compare`'s capture calls this session.
    pub(super) capture: crate::compare::capture::Session,
}

/// The connection string, kept to hide its secrets (in every form
/// `crate::redact` knows, raw and percent-decoded) from any message.
#[derive(Clone, Default)]
struct Secret {
    connection: String,
}

impl Secret {
    fn of(url: &str) -> Secret {
        Secret { connection: url.to_owned() }
    }

    /// `message` through the one redactor, knowing the connection string.
    fn scrub(&self, message: &str) -> String {
        crate::redact::message(message, &self.connection)
    }

    /// A backend error without the password.
    fn scrub_error(&self, e: BackendError) -> BackendError {
        BackendError::new(e.kind, self.scrub(&e.message))
    }

    /// A sqlx error as a backend error, without the password.
    fn error(&self, e: sqlx::Error) -> BackendError {
        let e = BackendError::from(e);
        BackendError::new(e.kind, self.scrub(&e.message))
    }
}

/// Reaches the server at `url` (`mysql://user:password@host:port/database`)
/// and reads its product and version, such as `mariadb 10.11.6` or
/// `mysql 8.4.3`, from `SELECT VERSION()`.
pub async fn connect(url: &str) -> Result<(String, MySqlServer), BackendError> {
    connect_within(url, CONNECT_TIMEOUT).await
}

async fn connect_within(url: &str, timeout: Duration) -> Result<(String, MySqlServer), BackendError> {
    let secret = Secret::of(url);
    let options = MySqlConnectOptions::from_str(url).map_err(|e| secret.error(e))?;
    let mut server = MySqlServer {
        cancel: Arc::new(options.clone()),
        mariadb: None,
        options,
        secret,
        timeout,
        zone_tables: true,
        initial_zone: String::new(),
        permits: Arc::new(Semaphore::new(MAX_CONNECTIONS)),
        probe: Mutex::new(None),
        opened: AtomicUsize::new(0),
        answering: cancel::Answering::default(),
    };
    let mut conn = match server.open().await {
        Ok(conn) => conn,
        Err(e) => {
            let explained = super::tls::explain_mysql_refusal(e, &server.options, timeout).await;
            return Err(server.secret.scrub_error(explained));
        }
    };
    let probed = tokio::time::timeout(timeout, async {
        Ok::<_, BackendError>((conn.version().await?, conn.zone_tables().await?, conn.time_zone().await?))
    })
    .await;
    let (version, zone_tables, initial_zone) = match probed {
        Ok(Ok(probed)) => probed,
        Ok(Err(e)) => {
            conn.close().await;
            return Err(e);
        }
        Err(_) => {
            conn.close().await;
            return Err(silent(timeout));
        }
    };
    server.zone_tables = zone_tables;
    server.mariadb = Some(version.contains("MariaDB"));
    server.initial_zone = initial_zone;
    // The probe's session is the first run's (its permit goes back now).
    *server.probe.lock().unwrap_or_else(|p| p.into_inner()) = Some(conn.conn);
    Ok((product_version(&version), server))
}

/// The error of a server that did not answer in time.
fn silent(timeout: Duration) -> BackendError {
    let message = format!("no answer within {} s", timeout.as_secs_f64());
    BackendError::new(BackendErrorKind::Connection, message)
}

/// `mariadb <version>` when the server says it is MariaDB (its `VERSION()`
/// contains `MariaDB`, as in `10.11.6-MariaDB-0+deb12u1`), else
/// `mysql <version>`; the version is the text before the first `-`, after
/// the `5.5.5-` some MariaDB releases put first for old clients.
fn product_version(reported: &str) -> String {
    let mariadb = reported.contains("MariaDB");
    let product = if mariadb { "mariadb" } else { "mysql" };
    let text = if mariadb { reported.strip_prefix("5.5.5-").unwrap_or(reported) } else { reported };
    let number = text.split('-').next().unwrap_or(text);
    format!("{product} {number}")
}

impl MySqlServer {
    /// A new session, with the session sqlx sets up (UTC `time_zone`,
    /// utf8mb4) and no state of any earlier run (the first open gets the
    /// version probe's, which ran only its probes). Waits while the server
    /// holds its limit of sessions.
    pub async fn open(&self) -> Result<MySqlConn, BackendError> {
        self.answering.refuse()?;
        let Ok(permit) = self.permits.clone().acquire_owned().await else {
            return Err(BackendError::new(BackendErrorKind::Connection, "the server's connections were closed"));
        };
        self.open_with(permit).await
    }

    /// [`MySqlServer::open`] when the server is below its limit now; `None`
    /// when it would have to wait.
    pub async fn try_open(&self) -> Option<Result<MySqlConn, BackendError>> {
        if let Err(e) = self.answering.refuse() {
            return Some(Err(e));
        }
        let permit = self.permits.clone().try_acquire_owned().ok()?;
        Some(self.open_with(permit).await)
    }

    /// A new session in place of `conn`'s, which is closed, under the same
    /// permit: for a lane evicted for another namespace, whose session
    /// must not be moved there by hand (see the module).
    pub async fn renew(&self, conn: MySqlConn) -> Result<MySqlConn, BackendError> {
        let MySqlConn { conn, permit, .. } = conn;
        let _ = conn.close().await;
        self.open_with(permit).await
    }

    async fn open_with(&self, permit: OwnedSemaphorePermit) -> Result<MySqlConn, BackendError> {
        let probe = self.probe.lock().unwrap_or_else(|p| p.into_inner()).take();
        let conn = match probe {
            Some(conn) => conn,
            None => {
                let connecting = async { self.options.connect().await.map_err(|e| self.secret.error(e)) };
                let conn =
                    cancel::connecting(&self.answering, self.timeout, connecting, || silent(self.timeout)).await?;
                self.opened.fetch_add(1, Ordering::Relaxed);
                conn
            }
        };
        let mut conn = MySqlConn {
            conn,
            cancel: None,
            busy: false,
            answering: self.answering.clone(),
            secret: self.secret.clone(),
            zone_tables: self.zone_tables,
            initial_zone: self.initial_zone.clone(),
            permit,
            instants: InstantEncoding::default(),
            capture: crate::compare::capture::Session::open(),
        };
        if let Some(mariadb) = self.mariadb {
            // Part of connecting: a server that does not answer it within
            // the connect timeout is taken as stopped.
            let limiting = conn.limit_statements(mariadb);
            let id = cancel::connecting(&self.answering, self.timeout, limiting, || silent(self.timeout)).await?;
            conn.cancel = Some(CancelSession::MySql(self.cancel.clone(), id));
        }
        Ok(conn)
    }

    /// Holds at most `sessions` connections at once (at least 1) from now
    /// on, in use and kept in lanes together; call it before the first
    /// [`MySqlServer::open`] after [`connect`].
    pub fn limit_connections(&mut self, sessions: usize) {
        self.permits = Arc::new(Semaphore::new(sessions.max(1)));
    }

    /// Closes the probe's session if no run took it (dropped unspoken to
    /// when the server stopped answering); no session opens after it.
    pub async fn close(&self) {
        self.permits.close();
        let probe = self.probe.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(conn) = probe
            && self.answering.why().is_none()
        {
            let _ = conn.close().await;
        }
    }

    /// Whether the server still answers ([`cancel::Answering`]).
    pub(super) fn answering(&self) -> &cancel::Answering {
        &self.answering
    }
}

impl MySqlConn {
    /// Sets the session's statement time limit (`crate::deadline`):
    /// MariaDB's `max_statement_time` (seconds) covers every statement;
    /// MySQL's `max_execution_time` (milliseconds) only read-only
    /// `SELECT`s, so MySQL's other statements have the client-side limit
    /// alone. Returns the session's `CONNECTION_ID()`, which `KILL QUERY`
    /// takes.
    async fn limit_statements(&mut self, mariadb: bool) -> Result<u64, BackendError> {
        // Connection hygiene, not a queue's behaviour (like the version
        // probe): the limit is a number reapcheck computed, not text.
        let seconds = crate::deadline::seconds();
        let set = if mariadb {
            format!("SET SESSION max_statement_time = {seconds}")
        } else {
            format!("SET SESSION max_execution_time = {}", seconds * 1000)
        };
        sqlx::raw_sql(sqlx::AssertSqlSafe(set)).execute(&mut self.conn).await.map_err(|e| self.secret.error(e))?;
        let id = sqlx::query_scalar::<_, u64>("SELECT CONNECTION_ID()").fetch_one(&mut self.conn).await;
        id.map_err(|e| self.secret.error(e))
    }

    /// The server's `VERSION()` text.
    async fn version(&mut self) -> Result<String, BackendError> {
        // A trivial probe, the one SQL text not taken from a dialect file.
        let row = sqlx::query("SELECT VERSION()").fetch_one(&mut self.conn).await.map_err(|e| self.secret.error(e))?;
        row.try_get(0).map_err(|e| self.secret.error(e))
    }

    /// The session's `time_zone`.
    async fn time_zone(&mut self) -> Result<String, BackendError> {
        // A probe of the session, like the version probe: the zone a
        // scenario's `set_time_zone` is undone to.
        let row = sqlx::query("SELECT @@session.time_zone").fetch_one(&mut self.conn).await;
        row.and_then(|r| r.try_get::<String, _>(0)).map_err(|e| self.secret.error(e))
    }

    /// Sets the session's `time_zone` back to the value it had when the
    /// session began: after a scenario's `set_time_zone`, for a connection
    /// kept in its namespace.
    pub(super) async fn reset_time_zone(&mut self) -> Result<(), BackendError> {
        // Connection hygiene, not a dialect's business (like PostgreSQL's
        // RESET ALL): undoes what `set_time_zone` did. The zone is bound.
        let zone = Value::Text(self.initial_zone.clone());
        let set = self.execute("SET time_zone = ?", std::slice::from_ref(&zone)).await;
        use crate::compare::capture::{Returned, sent};
        let returned = set.as_ref().map_or(Returned::Failed, |n| Returned::Changed(*n));
        let style = crate::dialect::text::Placeholders::Question;
        sent(
            &self.capture,
            crate::dialect::text::Grammar::MySql,
            style,
            self.instants,
            "SET time_zone = ?",
            std::slice::from_ref(&zone),
            returned,
        );
        set.map(drop)
    }

    /// Whether the server converts to a named zone: `CONVERT_TZ` gives NULL
    /// for a zone it does not know, which is every name when its time zone
    /// tables are empty (MariaDB's and MySQL's state after a plain install).
    async fn zone_tables(&mut self) -> Result<bool, BackendError> {
        // A probe of the server, not of a dialect: run once per target,
        // before any dialect SQL, like the version probe.
        let probe = "SELECT CONVERT_TZ('2026-01-01 00:00:00', 'UTC', 'Europe/London') IS NOT NULL";
        let row = sqlx::query(probe).fetch_one(&mut self.conn).await.map_err(|e| self.secret.error(e))?;
        let known: i64 = row.try_get(0).map_err(|e| self.secret.error(e))?;
        Ok(known == 1)
    }

    /// A failed statement as a backend error: error 1298 (unknown time
    /// zone) on a server without time zone tables says how to load them.
    fn failure(&self, e: sqlx::Error) -> BackendError {
        let number = e.as_database_error().and_then(|d| d.try_downcast_ref::<MySqlDatabaseError>()).map(|d| d.number());
        if number == Some(UNKNOWN_TIME_ZONE) && !self.zone_tables {
            return BackendError::new(BackendErrorKind::Database, NO_ZONE_TABLES);
        }
        self.secret.error(e)
    }

    /// Runs one command; returns the rows it changed (for an UPDATE, the
    /// rows it matched: sqlx sets CLIENT_FOUND_ROWS).
    ///
    /// A command without parameters goes through the text protocol, because
    /// MySQL cannot prepare some of them (`USE`); one with parameters is a
    /// prepared statement, its values bound, never spliced into the text.
    pub async fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, BackendError> {
        let args = if params.is_empty() { None } else { Some(arguments(params)?) };
        let conn = &mut self.conn;
        let running = async {
            Ok(match args {
                None => sqlx::raw_sql(sqlx::AssertSqlSafe(sql)).execute(&mut *conn).await,
                Some(args) => sqlx::query_with(sqlx::AssertSqlSafe(sql), args).execute(&mut *conn).await,
            })
        };
        let done = cancel::bounded_busy(&mut self.busy, self.cancel.clone(), &self.answering, running).await?;
        Ok(done.map_err(|e| self.failure(e))?.rows_affected())
    }

    /// Runs one query and decodes its rows as `columns` declare.
    pub async fn query(
        &mut self,
        sql: &str,
        params: &[Value],
        columns: &[Column],
    ) -> Result<Vec<Vec<Value>>, BackendError> {
        let args = arguments(params)?;
        let conn = &mut self.conn;
        let running = async { Ok(sqlx::query_with(sqlx::AssertSqlSafe(sql), args).fetch_all(&mut *conn).await) };
        let rows = cancel::bounded_busy(&mut self.busy, self.cancel.clone(), &self.answering, running)
            .await?
            .map_err(|e| self.failure(e))?;
        rows.iter().map(|r| decode(r, columns).map_err(|e| self.secret.scrub_error(e))).collect()
    }

    /// Closes the connection, and with it the session; its permit goes
    /// back to the server.
    pub async fn close(self) {
        if self.busy {
            // Given up mid-reply: dropping it closes the socket unspoken to.
            return;
        }
        let MySqlConn { conn, permit, .. } = self;
        let _ = conn.close().await;
        drop(permit);
    }
}

/// The values as typed parameters: a NULL keeps its kind, so the server is
/// told a DATETIME, BIGINT or string even when there is no value.
fn arguments(params: &[Value]) -> Result<MySqlArguments, BackendError> {
    let mut args = MySqlArguments::default();
    for p in params {
        let added = match p {
            Value::Text(s) => args.add(s.clone()),
            Value::Int(i) => args.add(*i),
            Value::Instant(t) => args.add(utc_datetime(*t)),
            Value::Null(Kind::Text) => args.add(None::<String>),
            Value::Null(Kind::Int) => args.add(None::<i64>),
            Value::Null(Kind::Instant) => args.add(None::<NaiveDateTime>),
        };
        added.map_err(|e| BackendError::new(BackendErrorKind::Decode, format!("cannot bind {p:?}: {e}")))?;
    }
    Ok(args)
}

/// The instant as the UTC date and time a `DATETIME(6)` column holds.
fn utc_datetime(t: Instant) -> NaiveDateTime {
    t.to_chrono().naive_utc()
}

fn decode(row: &MySqlRow, columns: &[Column]) -> Result<Vec<Value>, BackendError> {
    BackendError::check_width(row.len(), columns.len())?;
    columns.iter().enumerate().map(|(i, c)| decode_column(row, i, c)).collect()
}

/// Column `i` as `column` declares, by the type the server reports.
fn decode_column(row: &MySqlRow, i: usize, column: &Column) -> Result<Value, BackendError> {
    let server_type = row.columns()[i].type_info().name().to_owned();
    let wrong = |why: String| {
        BackendError::new(BackendErrorKind::Decode, format!("column `{}` ({server_type}): {why}", column.name))
    };
    let null = Value::Null(column.kind);
    Ok(match column.kind {
        Kind::Text => match row.try_get::<Option<Vec<u8>>, _>(i)? {
            None => null,
            Some(bytes) => Value::Text(String::from_utf8(bytes).map_err(|e| column_error(i, e))?),
        },
        Kind::Int if server_type.ends_with("UNSIGNED") => match row.try_get::<Option<u64>, _>(i)? {
            None => null,
            Some(v) => Value::Int(i64::try_from(v).map_err(|_| wrong(format!("{v} does not fit in 64 bits")))?),
        },
        Kind::Int if server_type == "DECIMAL" => match row.try_get_unchecked::<Option<String>, _>(i)? {
            None => null,
            Some(text) => Value::Int(numeric::integral_decimal_text(&text).map_err(wrong)?),
        },
        Kind::Int => row.try_get::<Option<i64>, _>(i)?.map_or(null, Value::Int),
        // A TIMESTAMP is read as the server shows it in the session zone,
        // taken as UTC like a DATETIME (docs/decode-types.md).
        Kind::Instant if server_type == "TIMESTAMP" => row
            .try_get::<Option<chrono::DateTime<chrono::Utc>>, _>(i)?
            .map_or(null, |t| Value::Instant(Instant::from_chrono(t))),
        Kind::Instant if server_type == "DATETIME" || server_type == "NULL" => row
            .try_get::<Option<NaiveDateTime>, _>(i)?
            .map_or(null, |n| Value::Instant(Instant::from_chrono(n.and_utc()))),
        Kind::Instant => return Err(wrong("an instant must be a DATETIME or TIMESTAMP column".to_owned())),
    })
}

fn column_error(index: usize, e: std::string::FromUtf8Error) -> sqlx::Error {
    sqlx::Error::ColumnDecode { index: index.to_string(), source: format!("text is not UTF-8: {e}").into() }
}

#[cfg(test)]
mod tests {
    //! Against a live server when `REAPCHECK_MARIADB_URL` is set (locally
    //! `mysql://root@127.0.0.1:3306/test`); each such test prints
    //! as ignored, with that reason, when the variable was not set at build
    //! time (build.rs), so a test that checked nothing never passes.
    //! Named zones need the server's time zone tables:
    //! `ci/mysql-timezones.sh` loads them.

    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;
    use crate::backend::Connection;
    use crate::dialect::{Dialect, Source};
    use crate::engine::{Call, Engine, JobRow, LeaseRow, Reply};
    use crate::model::Model;
    use crate::outcome::{Outcome, Status};
    use crate::scenario::{Schema, parse_text};
    use crate::sql::{SqlEngine, namespace_script};

    const URL_VARIABLE: &str = "REAPCHECK_MARIADB_URL";

    /// No zone (sqlx's UTC session), a DST zone, an offset, and a zone with
    /// a 45-minute offset.
    const ZONES: [Option<&str>; 4] = [None, Some("America/New_York"), Some("+05:30"), Some("Asia/Kathmandu")];

    /// The server's URL. Live tests are ignored unless the variable was set
    /// when they were built (see build.rs); one run without it now fails
    /// rather than passing having checked nothing.
    fn live_url() -> Option<String> {
        // Decided at run time: skipped without the URL, failing when
        // REAPCHECK_REQUIRE names mariadb.
        crate::reach::test_url(crate::target::Target::Mariadb)
    }

    fn dialect() -> Dialect {
        Dialect::load(&Source::Embedded, "mysql").unwrap_or_else(|e| panic!("the mysql dialect does not load: {e:?}"))
    }

    async fn server(url: &str) -> MySqlServer {
        connect(url).await.unwrap_or_else(|e| panic!("cannot reach {URL_VARIABLE}: {e}")).1
    }

    /// A namespace of this process no other test uses.
    fn namespace() -> String {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        format!("rc_mysqltest_{}_{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
    }

    /// A connection inside a new namespace, with the session in `zone`.
    async fn enter(server: &MySqlServer, dialect: &Dialect, zone: Option<&str>) -> (Connection, String) {
        let mut conn = Connection::MySql(Box::new(server.open().await.expect("open")));
        let ns = namespace();
        namespace_script(&mut conn, dialect, "create_namespace", &ns).await.expect("create_namespace");
        namespace_script(&mut conn, dialect, "enter_namespace", &ns).await.expect("enter_namespace");
        if let Some(zone) = zone {
            let mut engine = SqlEngine::new(dialect, Schema::Standard, &mut conn);
            engine
                .call(Call::SetTimeZone { zone: zone.to_owned() })
                .await
                .unwrap_or_else(|e| panic!("set_time_zone {zone}: {e} (named zones need ci/mysql-timezones.sh)"));
        }
        (conn, ns)
    }

    async fn leave(mut conn: Connection, dialect: &Dialect, ns: &str) {
        namespace_script(&mut conn, dialect, "drop_namespace", ns).await.expect("drop_namespace");
        conn.close().await;
    }

    /// The session's current database and time zone.
    async fn session(conn: &mut MySqlConn) -> (Option<String>, String) {
        // A trivial probe of session state, for these tests only.
        let row = sqlx::query("SELECT DATABASE(), @@session.time_zone").fetch_one(&mut conn.conn).await.expect("probe");
        (row.try_get(0).expect("database"), row.try_get(1).expect("time_zone"))
    }

    fn instant(text: &str) -> Instant {
        Instant::parse_rfc3339(text).expect("a valid instant")
    }

    /// Instants a TIMESTAMP column, a whole-second column or a session time
    /// zone would change: microseconds, both sides of the 2038 limit, the
    /// end of unsigned 32-bit seconds, New York's DST gap and repeated hour,
    /// and the ends of the DATETIME range.
    fn edge_instants() -> Vec<Instant> {
        [
            "2026-01-15T12:00:00.000001Z",
            "2038-01-19T03:14:07.999999Z",
            "2038-01-19T03:14:08.000001Z",
            "2106-02-07T06:28:16.123456Z",
            "2026-03-08T02:30:00.250000Z",
            "2026-11-01T01:30:00.999999Z",
            "1000-01-01T00:00:00.000000Z",
            "9999-12-31T23:59:59.999999Z",
        ]
        .into_iter()
        .map(instant)
        .collect()
    }

    fn job(i: usize, at: Instant) -> JobRow {
        JobRow {
            id: format!("job-{i}"),
            class: "C".into(),
            queue: "default".into(),
            status: Status::Processing,
            attempts: 1,
            max_retries: 3,
            claim_timeout: Some(300),
            claim_token: Some(format!("job-{i}/1")),
            heartbeat_at: Some(at),
            run_at: at,
            updated_at: at,
            failed_at: None,
            completed_at: None,
            last_error: None,
        }
    }

    /// The instants read back: (heartbeat_at, run_at, updated_at) per job,
    /// and expires_at per lease.
    async fn read_instants(engine: &mut SqlEngine<'_>) -> (Vec<(Option<Instant>, Instant, Instant)>, Vec<Instant>) {
        let Ok(Reply::Jobs(jobs)) = engine.call(Call::ReadJobs).await else { panic!("read_jobs") };
        let Ok(Reply::Leases(leases)) = engine.call(Call::ReadLeases).await else { panic!("read_leases") };
        (
            jobs.iter().map(|j| (j.heartbeat_at, j.run_at, j.updated_at)).collect(),
            leases.iter().map(|l| l.expires_at).collect(),
        )
    }

    #[tokio::test]
    async fn instants_round_trip_to_the_microsecond_in_every_session_time_zone() {
        let Some(url) = live_url() else { return };
        let (server, dialect) = (server(&url).await, dialect());
        let instants = edge_instants();
        let want_jobs: Vec<_> = instants.iter().map(|t| (Some(*t), *t, *t)).collect();
        for zone in ZONES {
            let (mut conn, ns) = enter(&server, &dialect, zone).await;
            let mut engine = SqlEngine::new(&dialect, Schema::Standard, &mut conn);
            engine.call(Call::CreateSchema).await.expect("schema");
            for (i, t) in instants.iter().enumerate() {
                engine.call(Call::InsertJob(job(i, *t))).await.expect("insert_job");
                let lease = LeaseRow { name: format!("key:{i}"), owner: format!("job-{i}/1"), expires_at: *t };
                engine.call(Call::InsertLease(lease)).await.expect("insert_lease");
            }
            // Read back in the zone written, then in every other zone.
            for reader in ZONES.iter().flatten() {
                let (jobs, leases) = read_instants(&mut engine).await;
                assert_eq!(jobs, want_jobs, "written in {zone:?}, read after switching zones");
                assert_eq!(leases, instants, "written in {zone:?}, read after switching zones");
                engine.call(Call::SetTimeZone { zone: (*reader).to_owned() }).await.expect("set_time_zone");
            }
            leave(conn, &dialect, &ns).await;
        }
    }

    fn declared(kinds: &[Kind]) -> Vec<Column> {
        const NAMES: [&str; 8] = ["c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7"];
        kinds.iter().zip(NAMES).map(|(kind, name)| Column { name, kind: *kind, nullable: true }).collect()
    }

    #[tokio::test]
    async fn a_timestamp_column_decodes_as_utc_and_a_text_column_is_refused_by_name() {
        let Some(url) = live_url() else { return };
        let mut conn = server(&url).await.open().await.expect("open");
        // Test probes: a TIMESTAMP(6) column of a port's table (the session
        // zone is UTC on a new connection), and a column of the wrong type.
        conn.execute("CREATE TEMPORARY TABLE rc_probe_ts (t TIMESTAMP(6) NULL)", &[]).await.expect("created");
        conn.execute("INSERT INTO rc_probe_ts VALUES ('2026-03-29 01:00:10.000001')", &[]).await.expect("inserted");
        let rows = conn.query("SELECT t FROM rc_probe_ts", &[], &declared(&[Kind::Instant])).await.expect("decodes");
        let t = Instant::parse_rfc3339("2026-03-29T01:00:10.000001Z").expect("an instant");
        assert_eq!(rows, vec![vec![Value::Instant(t)]]);
        let e = conn.query("SELECT 'soon'", &[], &declared(&[Kind::Instant])).await.unwrap_err();
        assert!(e.message.contains("column `c0`") && e.message.contains("DATETIME or TIMESTAMP"), "{e}");
        conn.close().await;
    }

    #[tokio::test]
    async fn integers_of_every_width_whole_decimals_and_timestamps_decode() {
        let Some(url) = live_url() else { return };
        let mut conn = server(&url).await.open().await.expect("open");
        // Test probes, like the version probe: the types a port's columns may have.
        let sql = "SELECT CAST(-1 AS SIGNED), TRUE, CAST(7 AS UNSIGNED), CAST(42 AS DECIMAL(10,0)), \
                   CAST(3.00 AS DECIMAL(10,2)), TIMESTAMP '2026-03-08 07:00:00.000001', NULL, 'extra'";
        let kinds = [Kind::Int, Kind::Int, Kind::Int, Kind::Int, Kind::Int, Kind::Instant, Kind::Int];
        let rows = conn.query(sql, &[], &declared(&kinds)).await.expect("decodes");
        let t = Instant::parse_rfc3339("2026-03-08T07:00:00.000001Z").expect("an instant");
        let want = [
            Value::Int(-1),
            Value::Int(1),
            Value::Int(7),
            Value::Int(42),
            Value::Int(3),
            Value::Instant(t),
            Value::Null(Kind::Int),
        ];
        assert_eq!(rows, vec![want.to_vec()]);
        let e = conn.query("SELECT CAST(4.5 AS DECIMAL(10,1))", &[], &declared(&[Kind::Int])).await.unwrap_err();
        assert!(e.message.contains("column `c0`") && e.message.contains("not a whole number"), "{e}");
        let e = conn.query("SELECT 1", &[], &declared(&[Kind::Int, Kind::Int])).await.unwrap_err();
        assert!(e.message.contains("a row has 1 columns, the contract declares 2"), "{e}");
        conn.close().await;
    }

    #[tokio::test]
    async fn set_time_zone_really_sets_the_session_zone() {
        let Some(url) = live_url() else { return };
        let (server, dialect) = (server(&url).await, dialect());
        for zone in ZONES.iter().flatten() {
            let (mut conn, ns) = enter(&server, &dialect, Some(zone)).await;
            let Connection::MySql(c) = &mut conn else { unreachable!() };
            assert_eq!(session(c).await, (Some(ns.clone()), (*zone).to_owned()));
            leave(conn, &dialect, &ns).await;
        }
    }

    #[tokio::test]
    async fn every_open_is_a_fresh_session() {
        let Some(url) = live_url() else { return };
        let (server, dialect) = (server(&url).await, dialect());
        let mut fresh = server.open().await.expect("open");
        let pristine = session(&mut fresh).await;
        fresh.close().await;
        assert_eq!(pristine.1, "+00:00", "sqlx sets the session to UTC");
        let (conn, ns) = enter(&server, &dialect, Some("Asia/Kathmandu")).await;
        // The dirty session ends here; the next open must not inherit it.
        conn.close().await;
        let started = std::time::Instant::now();
        const OPENS: u32 = 50;
        for _ in 0..OPENS {
            let mut next = server.open().await.expect("open");
            assert_eq!(session(&mut next).await, pristine, "a new connection inherited session state");
            next.close().await;
        }
        let each = started.elapsed() / OPENS;
        println!("open + probe + close: {:.2} ms each over {OPENS}", each.as_secs_f64() * 1e3);
        let mut conn = Connection::MySql(Box::new(server.open().await.expect("open")));
        namespace_script(&mut conn, &dialect, "drop_namespace", &ns).await.expect("drop_namespace");
        conn.close().await;
    }

    /// Scenarios whose outcome turns on what this dialect could get wrong:
    /// microsecond cutoffs, the strict `<`, byte-exact ids and queues,
    /// guarded updates after a scan, repeated writes of the same value (the
    /// affected-row count), the lease defer's ceiling, and the legacy table.
    const SCENARIOS: &[(&str, &str)] = &[
        (
            "cutoffs",
            r#"
description: grace, claim window and the strict cutoff, to the microsecond
classes:
  Long: { timeout: 3600 }
  Short: { timeout: 300 }
  Fragile: { idempotent: false }
jobs:
  - { id: beat-stopped, class: Long, status: processing, attempts: 1, claimed: -70m, heartbeat: -10m }
  - { id: beat-recent, class: Long, status: processing, attempts: 1, claimed: -70m, heartbeat: -299.999999s }
  - { id: at-cutoff, class: Short, status: processing, attempts: 1, claimed: -600s }
  - { id: past-cutoff, class: Short, status: processing, attempts: 1, claimed: -600.000001s }
  - { id: no-timeout, class: Short, status: processing, attempts: 1, claim_timeout: null, claimed: -601s }
  - { id: fragile, class: Fragile, status: processing, attempts: 1, claimed: -20m }
  - { id: spent, class: Short, status: processing, attempts: 4, claimed: -20m }
  - { id: floor, class: Short, status: processing, attempts: 1, claimed: -1h, heartbeat: -30s }
steps:
  - reap
  - advance: 0.000001s
  - reap
  - set: { heartbeat_grace: 0 }
  - advance: 5m
  - reap
"#,
        ),
        (
            "bytes-and-races",
            r#"
description: ids and queues differ only by case or a trailing space; a beat after the scan wins
classes:
  C: {}
jobs:
  - { id: a, class: C, status: processing, attempts: 1, claimed: -20m, queue: mail }
  - { id: "a ", class: C, status: processing, attempts: 1, claimed: -20m, queue: "mail " }
  - { id: A, class: C, status: processing, attempts: 1, claimed: -20m, queue: Mail }
  - { id: "a\t", class: C, status: processing, attempts: 1, claimed: -20m, queue: mail }
  - { id: b, class: C, status: processing, attempts: 1, claimed: -20m, queue: mail }
  - { id: "é", class: C, status: processing, attempts: 1, claimed: -20m, queue: mail }
steps:
  - scan: { queues: [mail] }
  - heartbeat: b
  - scan: { reaper: r2, queues: [mail] }
  - apply: { reaper: r2 }
  - apply
  - complete: { job: a, attempt: a/1 }
  - reap: { queues: [Mail, "mail "] }
  - claim: a
  - heartbeat: a
  - heartbeat: a
  - complete: a
"#,
        ),
        (
            "leases",
            r#"
description: a busy lease defers to the microsecond-rounded second; renewals and releases
classes:
  Solo: { exclusive: true, timeout: 60 }
jobs:
  - { id: first, class: Solo }
  - { id: second, class: Solo }
leases:
  - { name: "job:Solo", owner: z/1, expires: +12.000001s }
steps:
  - claim: first
  - advance: 12.000001s
  - claim: second
  - advance: 1s
  - claim: second
  - heartbeat: second
  - heartbeat: second
  - complete: second
  - claim: first
  - fail: first
"#,
        ),
        (
            "legacy",
            r#"
description: the legacy table, where a beat writes updated_at
schema: legacy
classes:
  C: { timeout: 300 }
jobs:
  - { id: a, class: C }
  - { id: old, class: C, status: processing, attempts: 1, claimed: -601s }
steps:
  - claim: a
  - heartbeat: a
  - heartbeat: a
  - advance: 10m
  - reap
  - advance: 0.000001s
  - reap
  - fail: a
  - advance: 1h
  - claim: a
  - fail: a
"#,
        ),
    ];
    #[tokio::test]
    async fn scenarios_match_the_model_in_every_session_time_zone() {
        let Some(url) = live_url() else { return };
        let (server, dialect) = (server(&url).await, dialect());
        for (name, yaml) in SCENARIOS {
            let mut scenario = parse_text(yaml).unwrap_or_else(|e| panic!("{name}: {e:?}"));
            let want = crate::driver::run(&scenario, &mut Model::new(scenario.schema), None).await.expect("model");
            assert!(want.jobs.values().any(|j| j.status != Status::Processing), "{name} changes nothing");
            for zone in ZONES {
                scenario.session_time_zone = zone.map(|z| crate::scenario::Located::new(z.to_owned()));
                let started = std::time::Instant::now();
                let got =
                    run_sql(&server, &dialect, &scenario).await.unwrap_or_else(|e| panic!("{name} in {zone:?}: {e}"));
                println!("{name} in {zone:?}: {:.1} ms", started.elapsed().as_secs_f64() * 1e3);
                assert_eq!(yaml_of(&got), yaml_of(&want), "{name} in {zone:?}: the database differs from the model");
            }
        }
    }

    /// Runs `scenario` in a namespace of its own, as the runner would.
    async fn run_sql(
        server: &MySqlServer,
        dialect: &Dialect,
        scenario: &crate::scenario::Scenario,
    ) -> Result<Outcome, String> {
        let (mut conn, ns) = enter(server, dialect, None).await;
        let mut engine = SqlEngine::new(dialect, scenario.schema, &mut conn);
        let outcome = crate::driver::run(scenario, &mut engine, None).await.map_err(|e| e.to_string());
        leave(conn, dialect, &ns).await;
        outcome
    }

    fn yaml_of(outcome: &Outcome) -> String {
        serde_saphyr::to_string(outcome).expect("outcomes serialize")
    }

    #[tokio::test]
    async fn the_version_names_the_product() {
        let Some(url) = live_url() else { return };
        let (version, _) = connect(&url).await.expect("connect");
        assert!(version.starts_with("mariadb ") || version.starts_with("mysql "), "{version}");
        println!("reached {version}");
    }

    #[test]
    fn product_and_version_come_from_the_version_text() {
        assert_eq!(product_version("10.11.19-MariaDB-0+deb12u1"), "mariadb 10.11.19");
        assert_eq!(product_version("11.4.2-MariaDB"), "mariadb 11.4.2");
        assert_eq!(product_version("5.5.5-10.4.7-MariaDB-1:10.4.7+maria~bionic"), "mariadb 10.4.7");
        assert_eq!(product_version("8.4.3"), "mysql 8.4.3");
        assert_eq!(product_version("8.0.36-commercial"), "mysql 8.0.36");
    }

    #[test]
    fn the_password_is_scrubbed_in_every_form() {
        let secret = Secret::of("mysql://root:pa%24%24w0rd@db.example:3306/test");
        let message = "login pa$$w0rd failed; url mysql://root:pa%24%24w0rd@db.example/test";
        let scrubbed = secret.scrub(message);
        assert!(!scrubbed.contains("pa$$w0rd") && !scrubbed.contains("pa%24%24w0rd"), "{scrubbed}");
        assert_eq!(scrubbed, "login *** failed; url mysql://root:***@db.example/test");
        assert_eq!(Secret::of("mysql://root@db/test").scrub("root@db"), "root@db");
    }
    #[tokio::test]
    async fn connecting_fails_in_bounded_time_without_the_password() {
        // Something listening that never says hello: only the timeout ends it.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let silent = format!("mysql://root:hunter2-secret@127.0.0.1:{port}/test");
        // The outer minute only turns a hang into a failure (no wall-clock
        // bound under load).
        let attempt = connect_within(&silent, Duration::from_millis(300));
        let Err(e) = tokio::time::timeout(Duration::from_secs(60), attempt).await.expect("timed out, not hung") else {
            panic!("connected to nothing")
        };
        assert_eq!(e.kind, BackendErrorKind::Connection, "{e}");
        assert!(!e.message.contains("hunter2"), "{e}");
        drop(listener);
        // A refused port.
        let Err(e) = connect("mysql://root:hunter2-secret@127.0.0.1:1/test").await else { panic!("port 1 answered") };
        assert!(!e.message.contains("hunter2"), "{e}");
    }

    #[tokio::test]
    async fn a_wrong_password_is_refused_without_showing_it() {
        let Some(url) = live_url() else { return };
        let mut wrong = url::Url::parse(&url).expect("a URL");
        wrong.set_password(Some("hunter2-secret")).expect("settable");
        let Err(e) = connect(wrong.as_str()).await else { panic!("the server took a wrong password") };
        assert_eq!(e.kind, BackendErrorKind::Database, "{e}");
        assert!(!e.message.contains("hunter2"), "{e}");
    }
}
