//! PostgreSQL and CockroachDB through sqlx, over the PostgreSQL protocol.
//!
//! Values are bound with their types (`text`, `int8`, `timestamptz`), NULLs
//! included, and results come back in the binary protocol: an instant
//! travels as UTC microseconds both ways, so no session `TimeZone` or
//! `DateStyle` can change one. Columns are decoded by the kind the contract
//! declares and the type the server reports (docs/decode-types.md): an
//! integer of any width (`int2`, `int4`, `int8`) or a whole `numeric`; a
//! `timestamptz`, or a `timestamp` without zone taken as UTC, as a queue
//! that binds UTC stores it. Under [`InstantEncoding::NaiveUtc`] instants
//! are bound as `timestamp`, so a port whose columns are `timestamp` needs
//! no cast and no session `TimeZone` enters its comparisons.
//!
//! A statement that fails with a serialization failure (SQLSTATE 40001,
//! which CockroachDB raises whenever it cannot order two transactions) runs
//! again after a short wait, at most five times in all (`retry.rs`).
//!
//! One backend serves both products. [`connect`] asks the server what it is
//! (`SELECT version()`) and refuses a URL that reaches the other product, so
//! that a `cockroach` run can never be reported from a PostgreSQL server or
//! the reverse.
//!
//! Connections come from a small pool of this module's own and are reset by
//! [`PgServer::open`]: their cached prepared statements are dropped (they
//! may name a dropped namespace's tables) and `RESET ALL` restores every
//! session setting a dialect can change (`search_path`, `TimeZone`), so
//! nothing leaks from one scenario into the next. The pool never holds more
//! sessions than its limit ([`PgServer::limit_connections`]; `run` sets it
//! to `--jobs`), counting the ones in use and the idle ones; the version
//! probe of [`connect`] is the pool's first idle session, so a run opens
//! no connection more than it uses (each TLS handshake costs a few round
//! trips). It never retries: a refused or reset connection fails the open that met it
//! at once (sqlx's own pool retried a refused connect until its 5 s
//! timeout, for every remaining scenario once a server had stopped, and
//! could open more sessions than its maximum while a returned connection
//! was still on its way back). Measured on a local PostgreSQL 15 (debug build,
//! 50 runs each): a new connection per open costs 9-10 ms, a pooled one
//! 0.7-1.0 ms with its reset; a six-step scenario took about 150 ms with
//! new connections and 115-130 ms pooled (the rest is mostly DDL), the
//! difference being a new server process and its cold catalog caches. The
//! pool belongs to the tokio runtime that first uses it.

use std::str::FromStr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, NaiveDateTime, Utc};
use sqlx::postgres::{PgArguments, PgConnectOptions, PgRow};
use sqlx::{Arguments, Column as _, ConnectOptions, Connection as _, PgConnection, Row, TypeInfo as _};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::cancel::{self, Session as CancelSession};
use super::error::{BackendError, BackendErrorKind};
use super::instants::InstantEncoding;
use super::numeric;
use super::retry;
use crate::dialect::contract::Column;
use crate::engine::{Kind, Value};
use crate::redact;
use crate::time::Instant;

/// How long a connection attempt may take before it counts as unreachable.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The most connections a server's pool opens unless
/// [`PgServer::limit_connections`] says otherwise: well under PostgreSQL's
/// default limit of 100.
const MAX_CONNECTIONS: usize = 32;

/// A database product that speaks the PostgreSQL protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Product {
    /// PostgreSQL itself.
    Postgres,
    /// CockroachDB.
    Cockroach,
}

impl Product {
    /// The name reports use: `postgres` or `cockroach`.
    pub fn name(self) -> &'static str {
        match self {
            Product::Postgres => "postgres",
            Product::Cockroach => "cockroach",
        }
    }
}

/// A reachable server, from which each scenario gets a reset connection.
pub struct PgServer {
    options: PgConnectOptions,
    /// The same options, shared with the cancels of this server's
    /// statements (`cancel.rs`).
    cancel: Arc<PgConnectOptions>,
    timeout: Duration,
    /// One permit per session in use; see [`PgServer::open`].
    permits: Arc<Semaphore>,
    /// Sessions given back by [`PgConn::close`], with their backend pids.
    idle: Arc<Mutex<Vec<(PgConnection, Option<i32>)>>>,
    /// How many sessions were ever opened (for tests).
    opened: AtomicUsize,
    /// Whether the server still answers, shared with every connection.
    answering: cancel::Answering,
    /// Kept only to take its password out of error messages.
    url: String,
    version: String,
    product: Product,
}

/// One connection, for one scenario run. [`PgConn::close`] gives it back
/// to its server's pool; dropped without it, the session ends.
pub struct PgConn {
    conn: Session,
    permit: OwnedSemaphorePermit,
    idle: Arc<Mutex<Vec<(PgConnection, Option<i32>)>>>,
    /// Where a cancel of this session's statement goes: the server's
    /// options and the backend's pid (`None` on CockroachDB, which has no
    /// `pg_cancel_backend`).
    cancel: Option<CancelSession>,
    /// A statement was given up mid-reply (the client-side time limit, or
    /// its future dropped): the session is closed, never pooled again.
    busy: bool,
    /// The server's [`cancel::Answering`].
    answering: cancel::Answering,
    /// How instants are bound; see [`InstantEncoding`].
    pub(super) instants: InstantEncoding,
    /// What `bench --compare`'s capture calls this session.
    pub(super) capture: crate::compare::capture::Session,
}

/// A session, dereferencing to sqlx's connection; boxed, as the connection
/// is large and a [`super::Connection`] is moved around.
struct Session(Box<PgConnection>);

impl std::ops::Deref for Session {
    type Target = PgConnection;
    fn deref(&self) -> &PgConnection {
        &self.0
    }
}

impl std::ops::DerefMut for Session {
    fn deref_mut(&mut self) -> &mut PgConnection {
        &mut self.0
    }
}

/// Reaches the server at `url` and checks that it is `wanted`.
pub async fn connect(url: &str, wanted: Product) -> Result<PgServer, BackendError> {
    connect_within(url, wanted, CONNECT_TIMEOUT).await
}

async fn connect_within(url: &str, wanted: Product, timeout: Duration) -> Result<PgServer, BackendError> {
    let hide = |e: BackendError| hide_password(e, url);
    let options = with_time_limit(PgConnectOptions::from_str(url).map_err(|e| hide(e.into()))?);
    let (reported, probe) = match probe_version(&options, timeout).await {
        Ok(probed) => probed,
        Err(e) => return Err(hide(super::tls::explain_pg_refusal(e, &options, timeout).await)),
    };
    let version = match expect_product(&reported, wanted) {
        Ok(version) => version,
        Err(e) => {
            let _ = probe.close().await;
            return Err(e);
        }
    };
    let mut probe = probe;
    let pid = match wanted {
        Product::Postgres => Some(backend_pid(&mut probe, timeout).await.map_err(hide)?),
        Product::Cockroach => None,
    };
    let probe = (probe, pid);
    Ok(PgServer {
        cancel: Arc::new(options.clone()),
        options,
        timeout,
        permits: Arc::new(Semaphore::new(MAX_CONNECTIONS)),
        // The probe's session is the first run's: reset when opened, like
        // any idle one, and holding no permit until then.
        idle: Arc::new(Mutex::new(vec![probe])),
        opened: AtomicUsize::new(1),
        answering: cancel::Answering::default(),
        url: url.to_owned(),
        version,
        product: wanted,
    })
}

/// `options` with the statement time limit (`crate::deadline`) as a
/// startup option of every session: `RESET ALL` restores a session setting
/// to its startup value, so the limit survives the pool's resets. Both
/// PostgreSQL and CockroachDB take `statement_timeout` in milliseconds.
fn with_time_limit(options: PgConnectOptions) -> PgConnectOptions {
    let millis = crate::deadline::limit().as_millis().to_string();
    options.options([("statement_timeout", millis)])
}

/// The server's `version()` text, asked on a new connection, which is
/// given back for the pool (failing at once with the cause of a refusal).
async fn probe_version(options: &PgConnectOptions, timeout: Duration) -> Result<(String, PgConnection), BackendError> {
    let mut probe = connect_once(options, timeout).await?;
    match server_version(&mut probe).await {
        Ok(reported) => Ok((reported, probe)),
        Err(e) => {
            let _ = probe.close().await;
            Err(e)
        }
    }
}

/// `postgres 15.20` or `cockroach 23.1.11` from a `version()` text, when it
/// names the `wanted` product.
fn expect_product(reported: &str, wanted: Product) -> Result<String, BackendError> {
    let refuse = |message| BackendError::new(BackendErrorKind::Database, message);
    let (product, number) = parse_version(reported).map_err(refuse)?;
    let version = format!("{} {number}", product.name());
    if product != wanted {
        let (wanted, found) = (wanted.name(), product.name());
        return Err(refuse(format!("the url reaches {version}, not {wanted}; give it to the {found} target instead")));
    }
    Ok(version)
}

/// A new connection, or an error once `timeout` has passed.
async fn connect_once(options: &PgConnectOptions, timeout: Duration) -> Result<PgConnection, BackendError> {
    connect_watched(options, timeout, &cancel::Answering::default()).await
}

/// [`connect_once`] to a server that may stop answering: a timeout takes
/// it as stopped ([`cancel::connecting`]).
async fn connect_watched(
    options: &PgConnectOptions,
    timeout: Duration,
    answering: &cancel::Answering,
) -> Result<PgConnection, BackendError> {
    let connecting = async { Ok(options.connect().await?) };
    cancel::connecting(answering, timeout, connecting, || timed_out(options, timeout)).await
}

fn timed_out(options: &PgConnectOptions, timeout: Duration) -> BackendError {
    let (host, port, secs) = (options.get_host(), options.get_port(), timeout.as_secs_f64());
    BackendError::new(BackendErrorKind::Connection, format!("no connection to {host}:{port} within {secs} s"))
}

/// The text of `SELECT version()`.
async fn server_version(conn: &mut PgConnection) -> Result<String, BackendError> {
    // One of the two SQL texts outside dialects/ (with RESET ALL below): a
    // product and version probe that both PostgreSQL and CockroachDB answer,
    // run before any dialect is chosen.
    let row = sqlx::query("SELECT version()").fetch_one(conn).await?;
    Ok(row.try_get::<String, _>(0)?)
}

/// The product and version number in a `version()` text, such as
/// `PostgreSQL 15.20 (Debian ...) on x86_64...` or
/// `CockroachDB CCL v23.1.11 (x86_64-pc-linux-gnu, ...)`.
fn parse_version(text: &str) -> Result<(Product, String), String> {
    let mut words = text.split_whitespace();
    let number = match words.next() {
        Some("PostgreSQL") => words.next().map(|n| (Product::Postgres, n.to_owned())),
        Some("CockroachDB") => words
            .find_map(|w| w.strip_prefix('v').filter(|n| n.starts_with(|c: char| c.is_ascii_digit())))
            .map(|n| (Product::Cockroach, n.to_owned())),
        _ => None,
    };
    number.ok_or_else(|| {
        let shown: String = text.chars().take(80).collect();
        format!("the server is neither postgresql nor cockroachdb: version() says `{shown}`")
    })
}

fn hide_password(mut e: BackendError, url: &str) -> BackendError {
    e.message = redact::message(&e.message, url);
    e
}

impl PgServer {
    /// The product and version the server reported, such as
    /// `postgres 15.20` or `cockroach 23.1.11`.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// Which product answered: the one [`connect`] was asked for, since it
    /// refuses any other.
    pub fn product(&self) -> Product {
        self.product
    }

    /// Whether the server still answers ([`cancel::Answering`]).
    pub(super) fn answering(&self) -> &cancel::Answering {
        &self.answering
    }

    /// A connection with the session defaults and no cached statements:
    /// an idle one reset, else a new one. Waits while the pool holds its
    /// limit of sessions in use; an idle session whose reset fails (the
    /// server restarted or cut it) is closed and the next one tried, and a
    /// refused connect fails at once.
    pub async fn open(&self) -> Result<PgConn, BackendError> {
        self.open_inner().await.map_err(|e| hide_password(e, &self.url))
    }

    /// [`PgServer::open`] when the pool is below its limit now; `None`
    /// when it would have to wait (or was closed).
    pub async fn try_open(&self) -> Option<Result<PgConn, BackendError>> {
        if let Err(e) = self.answering.refuse() {
            return Some(Err(e));
        }
        let permit = self.permits.clone().try_acquire_owned().ok()?;
        Some(self.open_with(permit).await.map_err(|e| hide_password(e, &self.url)))
    }

    async fn open_inner(&self) -> Result<PgConn, BackendError> {
        self.answering.refuse()?;
        // A permit per session in use. An idle session holds none, and a
        // new one is opened only when none is idle, so the sessions in use
        // and idle together never outnumber the permits.
        let Ok(permit) = self.permits.clone().acquire_owned().await else {
            return Err(BackendError::new(BackendErrorKind::Connection, "the pool was closed"));
        };
        self.open_with(permit).await
    }

    async fn open_with(&self, mut permit: OwnedSemaphorePermit) -> Result<PgConn, BackendError> {
        loop {
            let reused = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
            let Some((conn, pid)) = reused else { break };
            let mut conn = PgConn {
                conn: Session(Box::new(conn)),
                permit,
                idle: self.idle.clone(),
                cancel: pid.map(|pid| CancelSession::Postgres(self.cancel.clone(), pid)),
                busy: false,
                answering: self.answering.clone(),
                instants: Default::default(),
                // The pool's session again: a new one to the capture, whose
                // PostgreSQL script replays every session on one.
                capture: crate::compare::capture::Session::open(),
            };
            match conn.reset().await {
                Ok(()) => return Ok(conn),
                // The session is dead (the server restarted or cut it): close it, try the next.
                Err(_) => permit = conn.permit,
            }
        }
        let mut conn = connect_watched(&self.options, self.timeout, &self.answering).await?;
        self.opened.fetch_add(1, Ordering::Relaxed);
        let pid = match self.product {
            // Part of connecting: a server that does not answer it within
            // the connect timeout is taken as stopped.
            Product::Postgres => {
                // Its own limit is longer, so the connect timeout is what ends a wait.
                let asked = async { backend_pid(&mut conn, self.timeout + Duration::from_secs(1)).await };
                Some(cancel::connecting(&self.answering, self.timeout, asked, BackendError::timed_out).await?)
            }
            Product::Cockroach => None,
        };
        Ok(PgConn {
            conn: Session(Box::new(conn)),
            permit,
            idle: self.idle.clone(),
            cancel: pid.map(|pid| CancelSession::Postgres(self.cancel.clone(), pid)),
            busy: false,
            answering: self.answering.clone(),
            instants: InstantEncoding::default(),
            capture: crate::compare::capture::Session::open(),
        })
    }

    /// Holds at most `sessions` connections from now on (at least 1), in
    /// use and idle together. Call it before the first [`PgServer::open`].
    pub fn limit_connections(&mut self, sessions: usize) {
        self.permits = Arc::new(Semaphore::new(sessions.max(1)));
    }

    /// Closes every idle connection (a server that stopped answering is
    /// not spoken to: they are dropped); no connection opens after it.
    pub async fn close(self) {
        self.permits.close();
        let idle = std::mem::take(&mut *self.idle.lock().unwrap_or_else(|p| p.into_inner()));
        for (conn, _) in idle {
            if self.answering.why().is_none() {
                let _ = conn.close().await;
            }
        }
    }
}

/// The session's backend pid, which `pg_cancel_backend` takes.
async fn backend_pid(conn: &mut PgConnection, timeout: Duration) -> Result<i32, BackendError> {
    // Connection hygiene, not a queue's behaviour (like `version()`): the
    // id a cancel of this session's statements names.
    let asked = sqlx::query_scalar::<_, i32>("SELECT pg_backend_pid()").fetch_one(conn);
    match tokio::time::timeout(timeout, asked).await {
        Ok(pid) => Ok(pid?),
        Err(_) => Err(BackendError::timed_out()),
    }
}

impl PgConn {
    /// Forgets what an earlier scenario left on this connection: its
    /// prepared statements and its session settings.
    pub(super) async fn reset(&mut self) -> Result<(), BackendError> {
        // PostgreSQL re-plans a cached statement whose tables were dropped;
        // CockroachDB's handling is not tested here, and a fresh prepare per
        // scenario costs well under a millisecond.
        let conn = &mut self.conn;
        let clearing = async { Ok(conn.clear_cached_statements().await?) };
        cancel::bounded_busy(&mut self.busy, self.cancel.clone(), &self.answering, clearing).await?;
        self.reset_settings().await
    }

    /// Restores every session setting to the connection's default and
    /// keeps its prepared statements: for a connection that stays in its
    /// namespace between scenarios, whose tables the statements name.
    pub(super) async fn reset_settings(&mut self) -> Result<(), BackendError> {
        // The other SQL text outside dialects/: restores every session
        // setting to the connection's default. Both products accept it, and
        // it is no dialect's business: dialects say what a scenario does,
        // this undoes it.
        let conn = &mut self.conn;
        let resetting = async { Ok(sqlx::query("RESET ALL").persistent(false).execute(&mut **conn).await.map(drop)?) };
        cancel::bounded_busy(&mut self.busy, self.cancel.clone(), &self.answering, resetting).await
    }

    /// Binds instants as `encoding` says, forgetting the statements
    /// prepared with the previous encoding's parameter types.
    pub(super) async fn set_instant_encoding(&mut self, encoding: InstantEncoding) -> Result<(), BackendError> {
        let conn = &mut self.conn;
        let clearing = async { Ok(conn.clear_cached_statements().await?) };
        cancel::bounded_busy(&mut self.busy, self.cancel.clone(), &self.answering, clearing).await?;
        self.instants = encoding;
        Ok(())
    }

    fn arguments(&self, params: &[Value]) -> Result<PgArguments, BackendError> {
        let naive = self.instants == InstantEncoding::NaiveUtc;
        let mut args = PgArguments::default();
        for p in params {
            let added = match p {
                Value::Text(s) => args.add(s.clone()),
                Value::Int(i) => args.add(*i),
                Value::Instant(t) if naive => args.add(t.to_chrono().naive_utc()),
                Value::Instant(t) => args.add(t.to_chrono()),
                Value::Null(Kind::Instant) if naive => args.add(None::<NaiveDateTime>),
                // Typed NULLs: an untyped one would leave the server to guess.
                Value::Null(Kind::Text) => args.add(None::<String>),
                Value::Null(Kind::Int) => args.add(None::<i64>),
                Value::Null(Kind::Instant) => args.add(None::<DateTime<Utc>>),
            };
            added.map_err(|e| BackendError::new(BackendErrorKind::Decode, e.to_string()))?;
        }
        Ok(args)
    }

    /// Runs one command; returns the rows it changed. A serialization
    /// failure (40001) runs it again, a bounded number of times
    /// ([`retry`]), unless the command is a COMMIT ([`retry::may_retry`]).
    pub async fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, BackendError> {
        let args = self.arguments(params)?;
        let conn = &mut self.conn;
        let transient = |e: &sqlx::Error| retry::may_retry(sql) && retry::pg_transient(e);
        let running = retry::retrying(transient, async || {
            sqlx::query_with(sqlx::AssertSqlSafe(sql), args.clone()).execute(&mut **conn).await
        });
        let done =
            cancel::bounded_busy(&mut self.busy, self.cancel.clone(), &self.answering, async { Ok(running.await?) })
                .await?;
        Ok(done.rows_affected())
    }

    /// Runs one query and decodes its rows as `columns` declare.
    pub async fn query(
        &mut self,
        sql: &str,
        params: &[Value],
        columns: &[Column],
    ) -> Result<Vec<Vec<Value>>, BackendError> {
        let args = self.arguments(params)?;
        let conn = &mut self.conn;
        let running = retry::retrying(retry::pg_transient, async || {
            sqlx::query_with(sqlx::AssertSqlSafe(sql), args.clone()).fetch_all(&mut **conn).await
        });
        let rows =
            cancel::bounded_busy(&mut self.busy, self.cancel.clone(), &self.answering, async { Ok(running.await?) })
                .await?;
        rows.iter().map(|r| decode(r, columns)).collect()
    }

    /// Gives the connection back to the pool; the next [`PgServer::open`]
    /// resets it.
    pub async fn close(self) {
        let PgConn { conn, permit, idle, cancel, busy, .. } = self;
        if busy {
            // Given up mid-reply: never spoken to again; dropping it ends
            // the session (its statement was cancelled).
            drop(conn);
            drop(permit);
            return;
        }
        let pid = match cancel {
            Some(CancelSession::Postgres(_, pid)) => Some(pid),
            _ => None,
        };
        // Idle first, then the permit: a waiting open finds the session.
        idle.lock().unwrap_or_else(|p| p.into_inner()).push((*conn.0, pid));
        drop(permit);
    }
}

fn decode(row: &PgRow, columns: &[Column]) -> Result<Vec<Value>, BackendError> {
    BackendError::check_width(row.len(), columns.len())?;
    columns.iter().enumerate().map(|(i, c)| decode_column(row, i, c)).collect()
}

/// Column `i` as `column` declares, by the type the server reports.
fn decode_column(row: &PgRow, i: usize, column: &Column) -> Result<Value, BackendError> {
    let server_type = row.columns()[i].type_info().name().to_owned();
    let wrong = |why: String| {
        BackendError::new(BackendErrorKind::Decode, format!("column `{}` ({server_type}): {why}", column.name))
    };
    let null = Value::Null(column.kind);
    Ok(match (column.kind, server_type.as_str()) {
        (Kind::Text, _) => row.try_get::<Option<String>, _>(i)?.map_or(null, Value::Text),
        (Kind::Int, "INT2") => row.try_get::<Option<i16>, _>(i)?.map_or(null, |v| Value::Int(i64::from(v))),
        (Kind::Int, "INT4") => row.try_get::<Option<i32>, _>(i)?.map_or(null, |v| Value::Int(i64::from(v))),
        (Kind::Int, "NUMERIC") => match row.try_get_unchecked::<Option<Vec<u8>>, _>(i)? {
            None => null,
            Some(bytes) => Value::Int(numeric::integral_pg_numeric(&bytes).map_err(wrong)?),
        },
        (Kind::Int, _) => row.try_get::<Option<i64>, _>(i)?.map_or(null, Value::Int),
        (Kind::Instant, "TIMESTAMP") => row
            .try_get::<Option<NaiveDateTime>, _>(i)?
            .map_or(null, |t| Value::Instant(Instant::from_chrono(t.and_utc()))),
        (Kind::Instant, _) => {
            row.try_get::<Option<DateTime<Utc>>, _>(i)?.map_or(null, |t| Value::Instant(Instant::from_chrono(t)))
        }
    })
}

#[cfg(test)]
mod tests {
    use std::panic::AssertUnwindSafe;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use futures_util::FutureExt;

    use super::*;
    use crate::backend::{self, Connection, Server};
    use crate::dialect::{Dialect, Source};
    use crate::engine::{Call, Engine, EngineError, JobRow, JobState, LeaseRow, Reply};
    use crate::model::Model;
    use crate::outcome::{Outcome, Status};
    use crate::scenario::{self, Scenario, Schema};
    use crate::sql::{self, SqlEngine};

    const URL_VARIABLE: &str = "REAPCHECK_POSTGRES_URL";

    /// The server of `REAPCHECK_POSTGRES_URL`, or `None` (and a line saying
    /// so) when it is not set.
    async fn server() -> Option<Server> {
        // Decided at run time: skipped without the URL, failing when
        // REAPCHECK_REQUIRE names postgres (crate::reach::test_url).
        let url = crate::reach::test_url(crate::target::Target::Postgres)?;
        Some(backend::postgres(&url).await.unwrap_or_else(|e| panic!("{URL_VARIABLE} is set but unreachable: {e}")))
    }

    fn dialect(name: &str) -> Dialect {
        Dialect::load(&Source::Embedded, name).unwrap_or_else(|errors| panic!("dialect {name}: {errors:?}"))
    }

    /// A namespace no other test (or test process) uses.
    fn namespace() -> String {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        format!("rc_pgtest_{}_{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
    }

    /// Runs `body` on a new connection inside a new namespace, and drops the
    /// namespace before returning what `body` returned.
    async fn in_namespace<T>(server: &Server, dialect: &Dialect, body: impl AsyncFnOnce(&mut Connection) -> T) -> T {
        let mut conn = server.open().await.expect("a connection opens");
        let ns = namespace();
        sql::namespace_script(&mut conn, dialect, "create_namespace", &ns).await.expect("the namespace is created");
        sql::namespace_script(&mut conn, dialect, "enter_namespace", &ns).await.expect("the namespace is entered");
        let result = body(&mut conn).await;
        sql::namespace_script(&mut conn, dialect, "drop_namespace", &ns).await.expect("the namespace is dropped");
        conn.close().await;
        result
    }

    /// `scenario` on the model and on the server; the two outcomes.
    async fn both(server: &Server, dialect: &Dialect, yaml: &str) -> (Outcome, Outcome) {
        let scenario: Scenario = scenario::parse_text(yaml).unwrap_or_else(|(_, e)| panic!("{e}"));
        let expected =
            crate::driver::run(&scenario, &mut Model::new(scenario.schema), None).await.expect("the model runs");
        let actual = in_namespace(server, dialect, async |conn| {
            crate::driver::run(&scenario, &mut SqlEngine::new(dialect, scenario.schema, conn), None).await
        })
        .await
        .unwrap_or_else(|e| panic!("{}: {e}", scenario.description));
        if let Some(expect) = &scenario.expect {
            let wrong = crate::expect::mismatches(expect, &expected);
            assert!(
                wrong.is_empty(),
                "{}: the model breaks the scenario's expectation: {wrong:?}",
                scenario.description
            );
        }
        (expected, actual)
    }

    fn at(rfc3339: &str) -> Instant {
        Instant::parse_rfc3339(rfc3339).expect("a valid instant")
    }

    #[test]
    fn the_postgres_and_cockroach_dialects_load() {
        for name in ["postgres", "cockroach"] {
            let d = dialect(name);
            assert_eq!(d.name, name);
            // Every required statement, and the optional empty_namespace.
            assert_eq!(d.statements().count(), crate::dialect::contract::required_names().count() + 1);
            assert!(d.find("empty_namespace", crate::scenario::Schema::Standard).is_some());
        }
    }

    #[test]
    fn version_texts_name_the_product() {
        let pg = "PostgreSQL 15.20 (Debian 15.20-0+deb12u1) on x86_64-pc-linux-gnu, compiled by gcc, 64-bit";
        assert_eq!(parse_version(pg), Ok((Product::Postgres, "15.20".to_owned())));
        let crdb = "CockroachDB CCL v23.1.11 (x86_64-pc-linux-gnu, built 2023/09/27 01:53:43, go1.19.10)";
        assert_eq!(parse_version(crdb), Ok((Product::Cockroach, "23.1.11".to_owned())));
        assert_eq!(parse_version("CockroachDB OSS v19.2.0 (x86_64)"), Ok((Product::Cockroach, "19.2.0".to_owned())));
        let refused = expect_product(crdb, Product::Postgres).unwrap_err().message;
        assert!(refused.contains("reaches cockroach 23.1.11, not postgres"), "{refused}");
        assert_eq!(expect_product(pg, Product::Postgres).ok().as_deref(), Some("postgres 15.20"));
        let other = parse_version("8.0.36 MySQL Community Server").unwrap_err();
        assert!(other.contains("neither") && other.contains("8.0.36"), "{other}");
    }

    #[tokio::test]
    async fn an_unreachable_server_fails_without_the_password() {
        let url = "postgres://app:hunter2%21x@127.0.0.1:1/test";
        let Err(e) = backend::postgres(url).await else { panic!("port 1 answered") };
        assert_eq!(e.kind, BackendErrorKind::Connection, "{e}");
        assert!(!e.message.contains("hunter2"), "{e}");
    }

    #[tokio::test]
    async fn a_silent_server_times_out() {
        // Accepts TCP connections (the kernel does, from the backlog) and
        // never answers the startup message.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a local port");
        let url = format!("postgres://app:hunter2@{}/test", listener.local_addr().expect("bound"));
        // The message proves the 0.3 s limit ended it; the outer minute
        // only turns a hang into a failure (no wall-clock bound under load).
        let attempt = connect_within(&url, Product::Postgres, Duration::from_millis(300));
        let Err(e) = tokio::time::timeout(Duration::from_secs(60), attempt).await.expect("timed out, not hung") else {
            panic!("a silent server was accepted")
        };
        assert_eq!(e.kind, BackendErrorKind::Connection);
        assert!(e.message.contains("within 0.3 s") && !e.message.contains("hunter2"), "{e}");
    }

    #[tokio::test]
    async fn the_server_reports_its_product_and_refuses_the_other_one() {
        let Some(server) = server().await else { return };
        let version = server.version();
        assert!(
            version.strip_prefix("postgres ").is_some_and(|v| v.starts_with(|c: char| c.is_ascii_digit())),
            "{version}"
        );
        let url = std::env::var(URL_VARIABLE).expect("set");
        let Err(e) = backend::cockroach(&url).await else { panic!("postgresql was taken for cockroachdb") };
        assert!(e.message.contains("not cockroach"), "{e}");
    }

    #[tokio::test]
    async fn server_errors_hide_the_password() {
        if server().await.is_none() {
            return;
        }
        let mut url = url::Url::parse(&std::env::var(URL_VARIABLE).expect("set")).expect("a url");
        // The URL's own password, so that the server gets past it to the
        // missing database; a made-up one where it trusts without.
        if url.password().is_none() {
            url.set_password(Some("hunter2%21x")).expect("a password fits");
        }
        let password = url.password().expect("set above").to_owned();
        url.set_path("/rc_no_such_database");
        let Err(e) = backend::postgres(url.as_str()).await else { panic!("a missing database was reached") };
        assert!(e.message.contains("rc_no_such_database"), "{e}");
        assert!(!e.message.contains(&password) && !e.message.contains("hunter2"), "{e}");
    }

    /// The session's `TimeZone`. A test probe, like the version probe: no
    /// dialect statement reads a setting back.
    async fn time_zone(conn: &mut Connection) -> String {
        let Connection::Postgres(c) = conn else { unreachable!("a postgres server gives postgres connections") };
        sqlx::query_scalar::<_, String>("SHOW TimeZone").fetch_one(&mut *c.conn).await.expect("a time zone")
    }

    #[tokio::test]
    async fn a_reused_connection_has_the_session_defaults() {
        let Some(server) = server().await else { return };
        let super::super::ServerKind::Postgres(pg) = &server.kind else {
            unreachable!("backend::postgres gives a postgres server")
        };
        let dialect = dialect("postgres");
        let mut first = server.open().await.expect("a connection opens");
        let default_zone = time_zone(&mut first).await;
        let ns = namespace();
        sql::namespace_script(&mut first, &dialect, "create_namespace", &ns).await.expect("created");
        sql::namespace_script(&mut first, &dialect, "enter_namespace", &ns).await.expect("entered");
        let mut engine = SqlEngine::new(&dialect, Schema::Standard, &mut first);
        engine.call(Call::SetTimeZone { zone: "Asia/Kathmandu".into() }).await.expect("the zone is set");
        engine.call(Call::CreateSchema).await.expect("the tables are created");
        engine.call(Call::ReadJobs).await.expect("the first session sees its tables");
        assert_eq!(time_zone(&mut first).await, "Asia/Kathmandu");
        first.close().await;
        let mut second = server.open().await.expect("a connection reopens");
        let reused = pg.opened.load(Ordering::Relaxed);
        let Connection::Postgres(c) = &second else { unreachable!("a postgres server gives postgres connections") };
        let cached = c.conn.cached_statements_size();
        let zone = time_zone(&mut second).await;
        let read = SqlEngine::new(&dialect, Schema::Standard, &mut second).call(Call::ReadJobs).await;
        sql::namespace_script(&mut second, &dialect, "drop_namespace", &ns).await.expect("dropped");
        second.close().await;
        assert_eq!(reused, 1, "the second open did not reuse the first connection");
        assert_eq!(zone, default_zone, "the time zone leaked");
        assert_eq!(cached, 0, "statements prepared for the last namespace are still cached");
        let Err(e) = read else { panic!("the search_path leaked: {read:?}") };
        assert!(e.to_string().contains("jobs"), "{e}");
    }

    /// The sessions `role` has open, asked on `admin`. A test probe.
    async fn sessions_of(admin: &mut PgConnection, role: &str) -> i64 {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM pg_stat_activity WHERE usename = $1")
            .bind(role)
            .fetch_one(admin)
            .await
            .expect("counted")
    }

    /// Waits until `role` has no session left (a closed one takes a moment
    /// to leave the server's count).
    async fn until_no_session(admin: &mut PgConnection, role: &str) {
        for _ in 0..500 {
            if sessions_of(admin, role).await == 0 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("{role} still has sessions after 5 s");
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_role_limited_to_five_sessions_runs_four_at_once_and_a_refusal_is_named() {
        let Some(url) = crate::reach::test_url(crate::target::Target::Postgres) else { return };
        let mut admin = PgConnectOptions::from_str(&url).expect("a url").connect().await.expect("admin connects");
        let role = format!("rc_limited_{}", std::process::id());
        // Test probes: a role of this test's own, dropped at the end.
        let create = format!("CREATE ROLE {role} LOGIN CONNECTION LIMIT 5");
        sqlx::query(sqlx::AssertSqlSafe(create)).execute(&mut admin).await.expect("the role is created");
        let mut limited = url::Url::parse(&url).expect("a url");
        limited.set_username(&role).expect("a user name fits");
        limited.set_password(None).expect("no password");
        let checked = AssertUnwindSafe(async {
            let mut server = backend::postgres(limited.as_str()).await.expect("the limited role logs in");
            server.limit_connections(4);
            let opens = (0..16).map(|_| async {
                let conn = server.open().await?;
                tokio::time::sleep(Duration::from_millis(20)).await;
                conn.close().await;
                Ok::<(), BackendError>(())
            });
            let opened: Result<Vec<()>, _> = futures_util::future::join_all(opens).await.into_iter().collect();
            opened.expect("16 runs, 4 at once, within a limit of 5 sessions");
            let super::super::ServerKind::Postgres(pg) = &server.kind else {
                unreachable!("backend::postgres gives a postgres server")
            };
            assert_eq!(pg.opened.load(Ordering::Relaxed), 4, "the pool opened more sessions than its limit");
            assert!(sessions_of(&mut admin, &role).await <= 4);
            server.close().await;
            until_no_session(&mut admin, &role).await;
            let alter = format!("ALTER ROLE {role} CONNECTION LIMIT 1");
            sqlx::query(sqlx::AssertSqlSafe(alter)).execute(&mut admin).await.expect("the limit is lowered");
            let mut server = backend::postgres(limited.as_str()).await.expect("the limited role logs in");
            // The version probe's session stays, idle, for the first open.
            assert_eq!(sessions_of(&mut admin, &role).await, 1, "the probe's session is kept");
            server.limit_connections(4);
            let first = server.open().await.expect("the probe's session is reused");
            let Err(e) = server.open().await else { panic!("a second session was allowed") };
            first.close().await;
            server.close().await;
            e
        })
        .catch_unwind()
        .await;
        until_no_session(&mut admin, &role).await;
        let drop = format!("DROP ROLE {role}");
        sqlx::query(sqlx::AssertSqlSafe(drop)).execute(&mut admin).await.expect("the role is dropped");
        let e = checked.unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        assert_eq!(e.kind, BackendErrorKind::TooManyConnections, "{e}");
        assert!(e.message.contains("lower --jobs or raise the connection limit"), "{e}");
    }

    fn declared(kinds: &[Kind]) -> Vec<Column> {
        const NAMES: [&str; 9] = ["c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8"];
        kinds.iter().zip(NAMES).map(|(kind, name)| Column { name, kind: *kind, nullable: true }).collect()
    }

    #[tokio::test]
    async fn integers_of_every_width_whole_numerics_and_naive_timestamps_decode() {
        let Some(server) = server().await else { return };
        let mut conn = server.open().await.expect("a connection opens");
        // Test probes: the types a port's columns may have, under a zone
        // that would shift a naive timestamp read through it.
        let Connection::Postgres(pg) = &mut conn else { unreachable!("a postgres server gives postgres connections") };
        sqlx::query("SET TimeZone = 'Asia/Kathmandu'").execute(&mut *pg.conn).await.expect("set");
        let sql = "SELECT CAST(-2 AS int2), CAST(2147483647 AS int4), CAST(-9223372036854775808 AS int8), \
                   CAST(123456789012 AS numeric(20,0)), CAST(-3.00 AS numeric(10,2)), \
                   TIMESTAMP '2026-03-08 07:00:00.000001', TIMESTAMPTZ '2026-03-08 07:00:00.000001+00', NULL, 'extra'";
        let kinds =
            [Kind::Int, Kind::Int, Kind::Int, Kind::Int, Kind::Int, Kind::Instant, Kind::Instant, Kind::Instant];
        let rows = conn.query(sql, &[], &declared(&kinds)).await.expect("decodes");
        let t = at("2026-03-08T07:00:00.000001Z");
        let ints = [-2, 2_147_483_647, i64::MIN, 123_456_789_012, -3].map(Value::Int);
        let want: Vec<Value> =
            ints.into_iter().chain([Value::Instant(t), Value::Instant(t), Value::Null(Kind::Instant)]).collect();
        assert_eq!(rows, vec![want]);
        let e = conn.query("SELECT CAST(4.5 AS numeric)", &[], &declared(&[Kind::Int])).await.unwrap_err();
        assert!(e.message.contains("column `c0` (NUMERIC)") && e.message.contains("fraction"), "{e}");
        let e = conn.query("SELECT 1", &[], &declared(&[Kind::Int, Kind::Int])).await.unwrap_err();
        assert!(e.message.contains("a row has 1 columns, the contract declares 2"), "{e}");
        conn.close().await;
    }

    #[tokio::test]
    async fn a_serialization_failure_is_retried_a_bounded_number_of_times() {
        let Some(server) = server().await else { return };
        in_namespace(&server, &dialect("postgres"), async |conn| {
            // Test fixtures: `flaky(k)` fails with 40001 until it has run k
            // times in all. The sequence counts runs: nextval survives the
            // rollback of the statement that failed.
            conn.execute("CREATE SEQUENCE runs", &[]).await.expect("created");
            let flaky = "CREATE FUNCTION flaky(k bigint) RETURNS bigint LANGUAGE plpgsql AS $$ \
                         DECLARE n bigint := nextval('runs'); BEGIN \
                         IF n < k THEN RAISE EXCEPTION 'not yet' USING ERRCODE = 'serialization_failure'; END IF; \
                         RETURN n; END $$";
            conn.execute(flaky, &[]).await.expect("created");
            let int = declared(&[Kind::Int]);
            // A query passes on its second run, a command on its fifth.
            let rows = conn.query("SELECT flaky(2)", &[], &int).await.expect("passes on its second run");
            assert_eq!(rows, vec![vec![Value::Int(2)]]);
            let changed = conn.execute("SELECT flaky(7)", &[]).await.expect("passes on its fifth run");
            assert_eq!(changed, 1);
            // Lasting: five runs, then the failure itself.
            let e = conn.execute("SELECT flaky(1000)", &[]).await.expect_err("never passes");
            assert_eq!(e.kind, BackendErrorKind::Database);
            let runs = conn.query("SELECT last_value FROM runs", &[], &int).await.expect("read");
            assert_eq!(runs, vec![vec![Value::Int(12)]], "7 runs, then 5 of the lasting one");
            // Another failure is not retried.
            let e = conn.execute("SELECT flaky(1) / 0", &[]).await.expect_err("division by zero");
            assert_eq!(e.kind, BackendErrorKind::Database);
            let runs = conn.query("SELECT last_value FROM runs", &[], &int).await.expect("read");
            assert_eq!(runs, vec![vec![Value::Int(13)]], "one run");
        })
        .await;
    }

    #[tokio::test]
    async fn naive_utc_binds_instants_as_timestamp() {
        let Some(server) = server().await else { return };
        let mut conn = server.open().await.expect("a connection opens");
        let Connection::Postgres(pg) = &mut conn else { unreachable!("a postgres server gives postgres connections") };
        sqlx::query("SET TimeZone = 'America/New_York'").execute(&mut *pg.conn).await.expect("set");
        let t = Value::Instant(at("2026-03-08T07:00:00Z"));
        // A test probe: the type the server was told, and the value as text.
        let probe = "SELECT pg_typeof($1)::text, $1::text";
        let columns = declared(&[Kind::Text, Kind::Text]);
        let native = conn.query(probe, std::slice::from_ref(&t), &columns).await.expect("native");
        conn.set_instant_encoding(InstantEncoding::NaiveUtc).await.expect("set");
        let naive = conn.query(probe, &[t], &columns).await.expect("naive");
        let text = |s: &str| Value::Text(s.to_owned());
        assert_eq!(native, vec![vec![text("timestamp with time zone"), text("2026-03-08 03:00:00-04")]]);
        assert_eq!(naive, vec![vec![text("timestamp without time zone"), text("2026-03-08 07:00:00")]]);
        conn.close().await;
    }

    /// Instants before 1970, around 2038, at the ends of the year range and
    /// on both sides of New York's DST changes, all but one a microsecond
    /// off a whole second.
    const INSTANTS: &[&str] = &[
        "0001-01-01T00:00:00.000001Z",
        "1900-01-01T00:00:00.000001Z",
        "1969-12-31T23:59:59.999999Z",
        "1970-01-01T00:00:00Z",
        "2026-03-08T06:59:59.999999Z",
        "2026-03-08T07:00:00.000001Z",
        "2026-11-01T05:30:00.000001Z",
        "2026-11-01T06:30:00.000001Z",
        "2038-01-19T03:14:07.999999Z",
        "2038-01-19T03:14:08.000001Z",
        "2262-04-11T23:47:16.854776Z",
        "9999-12-31T23:59:59.999999Z",
    ];

    async fn round_trip(server: &Server, dialect: &Dialect, zone: Option<&str>) -> Result<(Reply, Reply), EngineError> {
        in_namespace(server, dialect, async |conn| {
            let mut engine = SqlEngine::new(dialect, Schema::Standard, conn);
            if let Some(zone) = zone {
                engine.call(Call::SetTimeZone { zone: zone.to_owned() }).await?;
            }
            engine.call(Call::CreateSchema).await?;
            for (i, text) in INSTANTS.iter().enumerate() {
                let lease = LeaseRow { name: format!("i{i:02}"), owner: "o".into(), expires_at: at(text) };
                engine.call(Call::InsertLease(lease)).await?;
                engine.call(Call::InsertJob(job(i, at(text)))).await?;
            }
            Ok((engine.call(Call::ReadLeases).await?, engine.call(Call::ReadJobs).await?))
        })
        .await
    }

    /// A job whose three instants are all `t`, with no heartbeat on odd rows.
    fn job(i: usize, t: Instant) -> JobRow {
        JobRow {
            id: format!("j{i:02}"),
            class: "C".into(),
            queue: "default".into(),
            status: Status::Processing,
            attempts: 1,
            max_retries: 3,
            claim_timeout: None,
            claim_token: Some(format!("j{i:02}/1")),
            heartbeat_at: i.is_multiple_of(2).then_some(t),
            run_at: t,
            updated_at: t,
            failed_at: None,
            completed_at: None,
            last_error: None,
        }
    }

    #[tokio::test]
    async fn instants_round_trip_to_the_microsecond_in_any_session_time_zone() {
        let Some(server) = server().await else { return };
        let dialect = dialect("postgres");
        for zone in [None, Some("America/New_York"), Some("+05:30"), Some("Asia/Kathmandu")] {
            let (leases, jobs) = round_trip(&server, &dialect, zone).await.unwrap_or_else(|e| panic!("{zone:?}: {e}"));
            let Reply::Leases(leases) = leases else { panic!("{leases:?}") };
            let read: Vec<_> = leases.iter().map(|l| l.expires_at).collect();
            assert_eq!(read, INSTANTS.iter().map(|t| at(t)).collect::<Vec<_>>(), "zone {zone:?}");
            let Reply::Jobs(jobs) = jobs else { panic!("{jobs:?}") };
            assert_eq!(jobs.len(), INSTANTS.len());
            for (i, row) in jobs.iter().enumerate() {
                let t = at(INSTANTS[i]);
                let expected = job(i, t);
                let instants = |r: JobState| (r.id, r.heartbeat_at, r.run_at, r.updated_at, r.claim_token);
                assert_eq!(instants(row.clone()), instants(JobState::from(&expected)), "zone {zone:?}");
            }
        }
    }

    /// Scenarios chosen for what PostgreSQL could get wrong: DST, strict
    /// comparisons at the microsecond, the lease ceiling, the legacy table,
    /// the queue filter, byte order of ids, and guarded updates.
    const SCENARIOS: &[&str] = &[
        r#"
description: grace reclaims a silent job, and a one-day window stays 24 hours across New York's spring-forward
now: 2026-03-08T07:05:00Z
session_time_zone: America/New_York
classes:
  ProcessOrders: { timeout: 3600 }
  Long: { timeout: 43200 }
jobs:
  - { id: a, class: ProcessOrders, status: processing, attempts: 1, claimed: -70m, heartbeat: -10m }
  - { id: b, class: ProcessOrders, status: processing, attempts: 1, claimed: -70m, heartbeat: -4m59.999999s }
  - { id: c, class: Long, status: processing, attempts: 1, claimed: -1d }
  - { id: d, class: Long, status: processing, attempts: 1, claimed: -1d0.000001s }
  - { id: e, class: Long, status: processing, attempts: 1, claimed: -1h, heartbeat: -10s }
steps:
  - scan
  - apply
expect:
  steps: [ { scan: [a, b, c, d] }, { apply: 2 } ]
  jobs:
    a: { status: pending, attempts: 1, run_at: +4s, last_error: timeout }
    b: { status: processing }
    c: { status: processing }
    d: { status: pending, run_at: +4s }
"#,
        r#"
description: the scan floor and the reap cutoff are strict to the microsecond
session_time_zone: "+05:30"
settings: { heartbeat_grace: 30 }
classes:
  C: { timeout: 300 }
jobs:
  - { id: at-floor, class: C, status: processing, attempts: 1, claimed: -1h, heartbeat: -30s }
  - { id: past-floor, class: C, status: processing, attempts: 1, claimed: -1h, heartbeat: -30.000001s }
  - { id: at-window, class: C, status: processing, attempts: 1, claimed: -10m }
  - { id: past-window, class: C, status: processing, attempts: 4, claimed: -10m0.000001s }
steps:
  - scan
  - apply
expect:
  steps: [ { scan: [at-window, past-floor, past-window] }, { apply: 2 } ]
  jobs:
    at-floor: { status: processing }
    past-floor: { status: pending, run_at: +4s }
    at-window: { status: processing }
    past-window: { status: failed, failed_at: 0s }
"#,
        r#"
description: a busy lease defers the claim by the ceiling of its remaining seconds, from 1 to 30
session_time_zone: Asia/Kathmandu
classes:
  K: { timeout: 300 }
jobs:
  - { id: a, class: K, concurrency_key: k1 }
  - { id: b, class: K, concurrency_key: k2 }
  - { id: c, class: K, concurrency_key: k3 }
  - { id: d, class: K, concurrency_key: k4 }
  - { id: e, class: K, concurrency_key: k5 }
  - { id: f, class: K, concurrency_key: k6 }
leases:
  - { name: "key:k1", owner: x/1, expires: +12.000001s }
  - { name: "key:k2", owner: x/1, expires: +12s }
  - { name: "key:k3", owner: x/1, expires: +0.000001s }
  - { name: "key:k4", owner: x/1, expires: -0.000001s }
  - { name: "key:k5", owner: x/1, expires: +90s }
  - { name: "key:k6", owner: x/1, expires: 0s }
steps:
  - claim: a
  - claim: b
  - claim: c
  - claim: d
  - claim: e
  - claim: f
expect:
  steps: [ { claim: deferred }, { claim: deferred }, { claim: deferred }, { claim: claimed }, { claim: deferred }, { claim: deferred } ]
  jobs:
    a: { status: pending, attempts: 0, run_at: +13s, claim_token: null }
    b: { run_at: +12s }
    c: { run_at: +1s }
    d: { status: processing, attempts: 1, claim_token: d/1 }
    e: { run_at: +30s }
    f: { run_at: +1s }
  leases:
    "key:k4": { owner: d/1, expires_at: +10m }
"#,
        r#"
description: on the legacy table a heartbeat writes updated_at and the reaper reads it alone
schema: legacy
session_time_zone: America/New_York
classes:
  C: { timeout: 300 }
jobs:
  - { id: a, class: C, status: processing, attempts: 1, claimed: -9m }
  - { id: b, class: C, status: processing, attempts: 1, claimed: -11m }
steps:
  - heartbeat: a
  - advance: 9m
  - reap
  - advance: 1m0.000001s
  - reap
expect:
  steps: [ { heartbeat: ok }, null, { reap: 1 }, null, { reap: 1 } ]
  jobs:
    a: { status: pending, heartbeat_at: null, updated_at: 0s }
    b: { status: pending }
"#,
        r#"
description: a beat between scan and apply saves the row; queues filter; ids come in byte order
classes:
  C: { timeout: 300 }
  Once: { timeout: 300, idempotent: false }
jobs:
  - { id: b, class: Once, status: processing, attempts: 1, claimed: -20m }
  - { id: a, class: C, status: processing, attempts: 1, claimed: -20m }
  - { id: B, class: C, status: processing, attempts: 1, claimed: -20m }
  - { id: q, class: C, queue: other, status: processing, attempts: 1, claimed: -20m }
steps:
  - scan: { queues: [default] }
  - heartbeat: a
  - complete: { job: B, attempt: B/0 }
  - apply
  - reap: { queues: [other, nowhere] }
expect:
  steps: [ { scan: [B, a, b] }, { heartbeat: ok }, { complete: fenced }, { apply: 2 }, { reap: 1 } ]
  jobs:
    a: { status: processing, heartbeat_at: 0s }
    b: { status: interrupted, last_error: timeout }
    B: { status: pending }
    q: { status: pending }
  on_failure: [ { job: b, attempt: 1, final: true, error: timeout } ]
"#,
        r#"
description: the worker's failures back off and then fail for good
session_time_zone: Asia/Kathmandu
classes:
  C: { timeout: 300, max_retries: 1 }
jobs:
  - { id: a, class: C }
steps:
  - claim: a
  - fail: a
  - claim: a
  - advance: 4s
  - claim: a
  - fail: a
expect:
  steps: [ { claim: claimed }, { fail: ok }, { claim: not_claimable }, null, { claim: claimed }, { fail: ok } ]
  jobs:
    a: { status: failed, attempts: 2, last_error: failed, failed_at: 0s }
"#,
    ];

    async fn check_scenarios(server: &Server, dialect: &Dialect) {
        for yaml in SCENARIOS {
            let (expected, actual) = both(server, dialect, yaml).await;
            let name = &dialect.name;
            assert_eq!(actual, expected, "{yaml}\nmodel:\n{}\n{name}:\n{}", expected.to_yaml(), actual.to_yaml());
        }
    }

    #[tokio::test]
    async fn scenarios_give_the_models_outcome() {
        let Some(server) = server().await else { return };
        check_scenarios(&server, &dialect("postgres")).await;
    }

    #[tokio::test]
    async fn a_server_error_names_its_sqlstate_not_the_servers_source_line() {
        let Some(server) = server().await else { return };
        let mut conn = server.open().await.expect("a connection");
        let e = conn.execute("SELECT * FROM rc_no_such_table", &[]).await.expect_err("no such table");
        conn.close().await;
        assert!(e.message.contains("relation \"rc_no_such_table\" does not exist (SQLSTATE 42P01)"), "{e}");
        assert!(!e.message.contains(" at line "), "the server's C source line reads like the user's: {e}");
    }

    #[tokio::test]
    async fn cockroachs_namespaces_are_listed_from_the_clusters_databases() {
        // CockroachDB's namespaces are databases (dialects/cockroach/
        // schema.sql), which information_schema.schemata does not list
        // beyond the current database; pg_database lists them on both
        // products, so the listing is proven here on PostgreSQL.
        let Some(server) = server().await else { return };
        let name = namespace();
        let mut conn = server.open().await.expect("a connection");
        conn.execute(&format!("CREATE DATABASE {name}"), &[]).await.expect("a database");
        let as_cockroach = lists(&mut conn, Product::Cockroach, &name).await;
        let as_postgres = lists(&mut conn, Product::Postgres, &name).await;
        conn.execute(&format!("DROP DATABASE {name}"), &[]).await.expect("dropped");
        conn.close().await;
        assert!(as_cockroach, "the cockroach listing must show a database {name}");
        assert!(!as_postgres, "the postgres listing reads schemas, not databases");
    }

    /// Whether `product`'s namespace listing, run on `conn`, names `name`.
    async fn lists(conn: &mut Connection, product: Product, name: &str) -> bool {
        let column = Column { name: "name", kind: Kind::Text, nullable: false };
        let sql = backend::namespace_listing(product);
        let rows = conn.query(sql, &[], std::slice::from_ref(&column)).await.expect("the listing runs");
        rows.into_iter().any(|row| row.first() == Some(&Value::Text(name.to_owned())))
    }
}
