//! Database connections: one module per driver, and the enums that dispatch
//! to them. A backend only binds values, runs SQL and decodes columns; what
//! the SQL means is the dialect's business.

mod cancel;
mod error;
mod instants;
mod lanes;
mod mssql;
mod mysql;
mod numeric;
mod plan;
mod postgres;
mod retry;
mod sqlite;
mod tls;

pub use cancel::{cancel_in_flight, settle as settle_cancels};
pub use error::{BackendError, BackendErrorKind};
pub use instants::InstantEncoding;
pub use lanes::Lane;
pub use plan::{PlanKind, summarise_json};

use crate::compare::capture;
use crate::dialect::contract::Column;
use crate::dialect::text::{Grammar, Placeholders};
use crate::engine::Value;

/// A connection to one isolated scenario run.
pub enum Connection {
    /// SQLite through sqlx.
    Sqlite(sqlite::SqliteConn),
    /// PostgreSQL or CockroachDB through sqlx.
    Postgres(postgres::PgConn),
    /// MySQL or MariaDB through sqlx (boxed: a TLS-capable connection is
    /// large).
    MySql(Box<mysql::MySqlConn>),
    /// SQL Server through tiberius (boxed, as MySQL).
    Mssql(Box<mssql::MssqlConn>),
}

impl Connection {
    /// How this driver writes bind markers.
    pub fn placeholders(&self) -> Placeholders {
        match self {
            Connection::Sqlite(_) => Placeholders::Question,
            Connection::Postgres(_) => Placeholders::Dollar,
            Connection::MySql(_) => Placeholders::Question,
            Connection::Mssql(_) => Placeholders::AtP,
        }
    }

    /// The grammar scripts are split in for this driver (see
    /// [`crate::dialect::text::commands_in`]).
    pub fn grammar(&self) -> Grammar {
        match self {
            Connection::Sqlite(_) => Grammar::Sqlite,
            Connection::Postgres(_) => Grammar::Postgres,
            Connection::MySql(_) => Grammar::MySql,
            Connection::Mssql(_) => Grammar::MsSql,
        }
    }

    /// How this connection binds and reads instants; [`InstantEncoding::Native`]
    /// until [`Connection::set_instant_encoding`] says otherwise.
    pub fn instant_encoding(&self) -> InstantEncoding {
        match self {
            Connection::Sqlite(c) => c.instants,
            Connection::Postgres(c) => c.instants,
            Connection::MySql(c) => c.instants,
            Connection::Mssql(c) => c.instants,
        }
    }

    /// Binds and reads instants as `encoding` says from now on: what a
    /// dialect's profile declares (its instants' column type or epoch unit).
    /// Set it once, right after [`Server::open`]; on PostgreSQL a change
    /// also drops the connection's prepared statements, which hold the
    /// parameter types they were prepared with.
    pub async fn set_instant_encoding(&mut self, encoding: InstantEncoding) -> Result<(), BackendError> {
        if encoding == self.instant_encoding() {
            return Ok(());
        }
        match self {
            Connection::Sqlite(c) => c.instants = encoding,
            Connection::Postgres(c) => c.set_instant_encoding(encoding).await?,
            Connection::MySql(c) => c.instants = encoding,
            Connection::Mssql(c) => c.instants = encoding,
        }
        Ok(())
    }

    /// What `bench --compare`'s capture calls this connection's session.
    fn capture_session(&self) -> &capture::Session {
        match self {
            Connection::Sqlite(c) => &c.capture,
            Connection::Postgres(c) => &c.capture,
            Connection::MySql(c) => &c.capture,
            Connection::Mssql(c) => &c.capture,
        }
    }

    /// From now on, nothing this connection sends is recorded by a
    /// `bench --compare` capture ([`capture::Session::unrecorded`]).
    pub fn stop_recording(&mut self) {
        let session = match self {
            Connection::Sqlite(c) => &mut c.capture,
            Connection::Postgres(c) => &mut c.capture,
            Connection::MySql(c) => &mut c.capture,
            Connection::Mssql(c) => &mut c.capture,
        };
        *session = capture::Session::unrecorded();
    }

    /// Runs one command; returns the rows it changed.
    pub async fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, BackendError> {
        let encoding = self.instant_encoding();
        let bound: Vec<Value> = params.iter().map(|p| encoding.bind(p)).collect();
        let params = bound.as_slice();
        let changed = match self {
            Connection::Sqlite(c) => c.execute(sql, params).await,
            Connection::Postgres(c) => c.execute(sql, params).await,
            Connection::MySql(c) => c.execute(sql, params).await,
            Connection::Mssql(c) => c.execute(sql, params).await,
        };
        let returned = changed.as_ref().map_or(capture::Returned::Failed, |n| capture::Returned::Changed(*n));
        capture::sent(self.capture_session(), self.grammar(), self.placeholders(), encoding, sql, params, returned);
        changed
    }

    /// Runs one query; returns its rows decoded as `columns` declare, read
    /// by position: a row may have more columns than `columns` (the extras
    /// are ignored), never fewer.
    pub async fn query(
        &mut self,
        sql: &str,
        params: &[Value],
        columns: &[Column],
    ) -> Result<Vec<Vec<Value>>, BackendError> {
        let encoding = self.instant_encoding();
        let bound: Vec<Value> = params.iter().map(|p| encoding.bind(p)).collect();
        let (params, stored) = (bound.as_slice(), encoding.read_columns(columns));
        let rows = match self {
            Connection::Sqlite(c) => c.query(sql, params, &stored).await,
            Connection::Postgres(c) => c.query(sql, params, &stored).await,
            Connection::MySql(c) => c.query(sql, params, &stored).await,
            Connection::Mssql(c) => c.query(sql, params, &stored).await,
        };
        let returned = rows.as_ref().map_or(capture::Returned::Failed, |r| capture::Returned::Rows(r.len()));
        capture::sent(self.capture_session(), self.grammar(), self.placeholders(), encoding, sql, params, returned);
        let rows = rows?;
        rows.into_iter()
            .map(|row| {
                encoding.read_row(columns, row).map_err(|message| BackendError::new(BackendErrorKind::Decode, message))
            })
            .collect()
    }

    /// Restores the session's settings to the connection's defaults where
    /// the product can (PostgreSQL and CockroachDB: `RESET ALL`, prepared
    /// statements kept) and says whether it did; `false` means a setting
    /// a scenario changed (its time zone) stays until the session ends.
    pub async fn reset_settings(&mut self) -> Result<bool, BackendError> {
        match self {
            Connection::Postgres(c) => {
                let reset = c.reset_settings().await;
                capture::sent(
                    &c.capture,
                    Grammar::Postgres,
                    Placeholders::Dollar,
                    InstantEncoding::Native,
                    "RESET ALL",
                    &[],
                    capture::Returned::Changed(0),
                );
                reset.map(|()| true)
            }
            _ => Ok(false),
        }
    }

    /// Whether [`Connection::reset_settings`] restores the session's
    /// settings on this product.
    pub fn resets_settings(&self) -> bool {
        matches!(self, Connection::Postgres(_))
    }

    /// The names in which this session resolves an unqualified table
    /// name, as the catalog says: PostgreSQL's `current_schema()` (`None`
    /// where no schema on the search path exists) and, for CockroachDB,
    /// whose namespaces are databases, `current_database()`; MySQL's and
    /// MariaDB's `DATABASE()`; SQL Server's `DB_NAME()`. Empty on SQLite,
    /// where the connection is the scenario's own database: no name to
    /// compare. What `crate::isolation` checks after `enter_namespace`.
    pub async fn current_namespaces(&mut self) -> Result<Vec<Option<String>>, BackendError> {
        // Harness bookkeeping, like the sweep's listing: where the session
        // is, from the product's own functions.
        let (sql, count) = match self {
            Connection::Sqlite(_) => return Ok(Vec::new()),
            Connection::Postgres(_) => ("SELECT CAST(current_schema() AS text), CAST(current_database() AS text)", 2),
            Connection::MySql(_) => ("SELECT CAST(DATABASE() AS BINARY)", 1),
            Connection::Mssql(_) => ("SELECT DB_NAME()", 1),
        };
        let names =
            ["namespace", "database"].map(|name| Column { name, kind: crate::engine::Kind::Text, nullable: true });
        let rows = self.query(sql, &[], &names[..count]).await?;
        let row = rows.into_iter().next().unwrap_or_default();
        Ok(row.into_iter().map(|v| if let Value::Text(t) = v { Some(t) } else { None }).collect())
    }

    /// Whether the catalog lists a schema or database named `namespace`:
    /// PostgreSQL's schemas of the current database or the cluster's
    /// databases (CockroachDB's namespaces), MySQL's and MariaDB's
    /// databases, SQL Server's databases; never on SQLite, whose
    /// namespaces are in-memory databases that go with their connection.
    /// What `crate::isolation` checks after `drop_namespace`.
    pub async fn namespace_exists(&mut self, namespace: &str) -> Result<bool, BackendError> {
        // Harness bookkeeping, like the sweep's listing; the name is bound.
        let sql = match self {
            Connection::Sqlite(_) => return Ok(false),
            Connection::Postgres(_) => {
                "SELECT (SELECT count(*) FROM information_schema.schemata WHERE CAST(schema_name AS text) = $1) \
                 + (SELECT count(*) FROM pg_catalog.pg_database WHERE CAST(datname AS text) = $1)"
            }
            Connection::MySql(_) => "SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name = ?",
            Connection::Mssql(_) => "SELECT COUNT(*) FROM sys.databases WHERE name = @P1",
        };
        let count = Column { name: "count", kind: crate::engine::Kind::Int, nullable: false };
        let rows = self.query(sql, &[Value::Text(namespace.to_owned())], std::slice::from_ref(&count)).await?;
        Ok(rows.first().and_then(|r| r.first()).is_some_and(|v| !matches!(v, Value::Int(0))))
    }

    /// Closes the connection.
    pub async fn close(self) {
        match self {
            Connection::Sqlite(c) => c.close().await,
            Connection::Postgres(c) => c.close().await,
            Connection::MySql(c) => c.close().await,
            Connection::Mssql(c) => c.close().await,
        }
    }
}

/// A reachable database server, from which isolated connections are opened,
/// with the idle [`Lane`]s kept on it between scenario runs.
pub struct Server {
    kind: ServerKind,
    lanes: lanes::Lanes,
    /// What `crate::isolation::prove` found for each set of namespace
    /// scripts on this server, so that it runs once per server.
    proofs: tokio::sync::Mutex<std::collections::HashMap<u64, Proof>>,
    /// Whether the server still answers (`cancel.rs`), shared with its
    /// pool and connections.
    answering: cancel::Answering,
}

/// Whether a dialect's namespace scripts did what they must on a server
/// (`crate::isolation::prove`): `Err` holds the script at fault and why.
pub type Proof = Result<(), (&'static str, String)>;

/// The product behind a [`Server`].
enum ServerKind {
    /// Embedded SQLite: every connection is a new in-memory database.
    Sqlite {
        /// The SQLite library version.
        version: String,
    },
    /// PostgreSQL or CockroachDB: pooled connections, reset when opened.
    Postgres(postgres::PgServer),
    /// MySQL or MariaDB: every connection is a new session.
    MySql {
        /// `mariadb <version>` or `mysql <version>`, from `SELECT VERSION()`.
        version: String,
        /// How to open connections to it (boxed: its options are large).
        server: Box<mysql::MySqlServer>,
    },
    /// SQL Server: every connection is a new session.
    Mssql {
        /// `mssql <first line of @@VERSION>`.
        version: String,
        /// Where and as whom to connect.
        url: mssql::MssqlUrl,
    },
}

impl Server {
    fn new(kind: ServerKind) -> Server {
        let answering = match &kind {
            ServerKind::Postgres(s) => s.answering().clone(),
            ServerKind::MySql { server, .. } => server.answering().clone(),
            ServerKind::Sqlite { .. } | ServerKind::Mssql { .. } => cancel::Answering::default(),
        };
        Server { kind, lanes: lanes::Lanes::default(), proofs: Default::default(), answering }
    }

    /// Why this server is taken to have stopped answering, once it has:
    /// `postgres stopped answering at grace/floor (connect timed out after
    /// 5 s)` (the scenario from [`Server::note_stopped_at`]). A connect
    /// that timed out, or a statement past the client-side time limit whose
    /// cancel got no answer either, stops it; from then on nothing more is
    /// sent to it, and every open and statement on it fails at once.
    /// `None` while it answers.
    pub fn stopped_answering(&self) -> Option<String> {
        let why = self.answering.why()?;
        let product = self.version().split_whitespace().next().unwrap_or("the server");
        Some(match self.answering.at() {
            Some(at) => format!("{product} stopped answering at {at} ({why})"),
            None => format!("{product} stopped answering ({why})"),
        })
    }

    /// Records `scenario` as where the server was found to have stopped
    /// answering, when it has and no scenario was recorded before.
    pub fn note_stopped_at(&self, scenario: &str) {
        self.answering.note_at(scenario);
    }

    /// The namespace proofs made on this server, by the key of the scripts
    /// proved (`crate::isolation::prove`).
    pub fn proofs(&self) -> &tokio::sync::Mutex<std::collections::HashMap<u64, Proof>> {
        &self.proofs
    }

    /// The server product and version actually reached, such as
    /// `sqlite 3.46.0` or `mariadb 10.11.6`.
    pub fn version(&self) -> &str {
        match &self.kind {
            ServerKind::Sqlite { version } => version,
            ServerKind::Postgres(s) => s.version(),
            ServerKind::MySql { version, .. } => version,
            ServerKind::Mssql { version, .. } => version,
        }
    }

    /// Whether this is embedded SQLite, whose every connection is a
    /// database of its own.
    pub fn is_sqlite(&self) -> bool {
        matches!(self.kind, ServerKind::Sqlite { .. })
    }

    /// Opens a connection with the session defaults, in no namespace. On
    /// PostgreSQL, MySQL and MariaDB, which hold at most their limit of
    /// sessions ([`Server::limit_connections`]), an open that finds the
    /// limit reached takes an idle [`Lane`] instead (dropping its
    /// namespace), or waits for a session or a lane to come back: idle
    /// lanes never starve it.
    pub async fn open(&self) -> Result<Connection, BackendError> {
        self.answering.refuse()?;
        loop {
            let now = match &self.kind {
                ServerKind::Postgres(pg) => pg.try_open().await.map(|c| c.map(Connection::Postgres)),
                ServerKind::MySql { server, .. } => {
                    server.try_open().await.map(|c| c.map(|c| Connection::MySql(Box::new(c))))
                }
                _ => return self.open_new().await,
            };
            if let Some(conn) = now {
                return conn;
            }
            if let Some(lane) = self.lanes.take_any() {
                return self.evict(lane).await;
            }
            tokio::select! {
                biased;
                conn = self.open_new() => return conn,
                () = self.lanes.kept() => continue,
            }
        }
    }

    /// A new connection (or, on PostgreSQL, a pooled one), waiting for the
    /// pool's limit without looking at the lanes.
    async fn open_new(&self) -> Result<Connection, BackendError> {
        match &self.kind {
            ServerKind::Sqlite { .. } => Ok(Connection::Sqlite(sqlite::SqliteConn::open_memory().await?)),
            ServerKind::Postgres(s) => Ok(Connection::Postgres(s.open().await?)),
            ServerKind::MySql { server, .. } => Ok(Connection::MySql(Box::new(server.open().await?))),
            ServerKind::Mssql { url, .. } => {
                Ok(Connection::Mssql(Box::new(mssql::MssqlConn::connect_watched(url, &self.answering).await?)))
            }
        }
    }

    /// An idle lane with `key`, if one is kept (`crate::isolation`).
    pub fn take_lane(&self, key: u64) -> Option<Lane> {
        self.lanes.take(key)
    }

    /// Keeps `lane` for a later run with the same key.
    pub fn keep_lane(&self, lane: Lane) {
        self.lanes.keep(lane);
    }

    /// Drops an idle lane's namespace and gives its connection back with
    /// the session defaults: on PostgreSQL the same session, reset; on the
    /// others a new one (their sessions have no reset).
    async fn evict(&self, lane: Lane) -> Result<Connection, BackendError> {
        let Lane { mut conn, drop, namespace, .. } = lane;
        let dropped = drop_namespace(&mut conn, &namespace, &drop).await;
        match conn {
            Connection::Postgres(mut pg) if dropped.is_ok() => match pg.reset().await {
                Ok(()) => Ok(Connection::Postgres(pg)),
                Err(_) => {
                    pg.close().await;
                    self.open_new().await
                }
            },
            // A new session under the lane's permit (`mysql.rs`: a session
            // is never moved to another database by hand).
            Connection::MySql(my) => match &self.kind {
                ServerKind::MySql { server, .. } => Ok(Connection::MySql(Box::new(server.renew(*my).await?))),
                _ => unreachable!("a MySQL lane comes from a MySQL server"),
            },
            other => {
                other.close().await;
                self.open_new().await
            }
        }
    }

    /// Drops every idle lane's namespace and closes its connection; one
    /// line for each namespace that could not be dropped (the next run's
    /// sweep removes it, see [`crate::namespace`]).
    pub async fn release_lanes(&self) -> Vec<String> {
        let mut errors = Vec::new();
        if let Some(why) = self.stopped_answering() {
            // Nothing is sent to it: each drop would fail, and say less.
            let left: Vec<String> = self.lanes.take_all().into_iter().map(|lane| lane.namespace).collect();
            if !left.is_empty() {
                errors.push(format!(
                    "{} idle namespaces were not dropped ({}): {why}; the next `reapcheck run` against this server \
                     removes them",
                    left.len(),
                    left.join(", ")
                ));
            }
            return errors;
        }
        for lane in self.lanes.take_all() {
            let Lane { mut conn, namespace, drop, .. } = lane;
            if let Err(e) = drop_namespace(&mut conn, &namespace, &drop).await {
                errors.push(format!("namespace {namespace} was not dropped: {e}"));
            }
            conn.close().await;
        }
        errors
    }

    /// Holds at most `sessions` connections at once (at least 1) from now
    /// on, in use and kept in lanes together; call it before the first
    /// [`Server::open`]. PostgreSQL and MySQL/MariaDB keep sessions
    /// between runs (a pool, lanes of two schemas) and need the bound; SQL
    /// Server and SQLite open one connection per run, and the runs at once
    /// (`--jobs`) bound them already.
    pub fn limit_connections(&mut self, sessions: usize) {
        match &mut self.kind {
            ServerKind::Postgres(s) => s.limit_connections(sessions),
            ServerKind::MySql { server, .. } => server.limit_connections(sessions),
            _ => {}
        }
    }

    /// The names of the schemas or databases on the server whose names
    /// start with `rc_`, where runs make their namespaces
    /// ([`crate::namespace`]); none on SQLite, whose namespaces are
    /// in-memory databases.
    pub async fn namespaces(&self) -> Result<Vec<String>, BackendError> {
        // Harness bookkeeping, not a queue's behaviour, so not a dialect
        // statement (like the version probes): which namespaces earlier
        // runs left, from each product's catalog. `\_` is a literal `_`
        // in LIKE (PostgreSQL, CockroachDB, MySQL, MariaDB); SQL Server
        // writes it `[_]`.
        let sql = match &self.kind {
            ServerKind::Sqlite { .. } => return Ok(Vec::new()),
            ServerKind::Postgres(s) => namespace_listing(s.product()),
            ServerKind::MySql { .. } => {
                "SELECT CAST(schema_name AS BINARY) FROM information_schema.schemata WHERE schema_name LIKE 'rc\\_%'"
            }
            ServerKind::Mssql { .. } => "SELECT name FROM sys.databases WHERE name LIKE 'rc[_]%'",
        };
        let name = Column { name: "name", kind: crate::engine::Kind::Text, nullable: false };
        let mut conn = self.open().await?;
        // Not in a `bench --compare` capture either, as the version probes
        // are not: the start-up sweep's listings are no part of the pass.
        conn.stop_recording();
        let rows = conn.query(sql, &[], std::slice::from_ref(&name)).await;
        conn.close().await;
        let names = rows?.into_iter().filter_map(|row| match row.into_iter().next() {
            Some(Value::Text(name)) => Some(name),
            _ => None,
        });
        Ok(names.collect())
    }

    /// Drops the idle lanes' namespaces ([`Server::release_lanes`]) and
    /// closes the server's pool, if it has one.
    pub async fn close(self) {
        for e in self.release_lanes().await {
            eprintln!("warning: {e}");
        }
        match self.kind {
            ServerKind::Postgres(s) => s.close().await,
            ServerKind::MySql { server, .. } => server.close().await,
            _ => {}
        }
    }
}

/// The query that lists the `rc_` namespaces of a server of `product`, one
/// `name` column. PostgreSQL's namespaces are schemas of the URL's
/// database (`information_schema.schemata`); CockroachDB's are databases of
/// the cluster (`dialects/cockroach/schema.sql` creates one per run), which
/// `information_schema` does not show beyond the current one, so they are
/// read from `pg_catalog.pg_database`, which lists every database of the
/// cluster.
pub(crate) fn namespace_listing(product: postgres::Product) -> &'static str {
    match product {
        postgres::Product::Postgres => {
            "SELECT CAST(schema_name AS text) FROM information_schema.schemata WHERE schema_name LIKE 'rc\\_%'"
        }
        postgres::Product::Cockroach => {
            "SELECT CAST(datname AS text) FROM pg_catalog.pg_database WHERE datname LIKE 'rc\\_%'"
        }
    }
}

/// Runs a lane's `drop_namespace` commands, then checks in the catalog
/// that `namespace` is gone: a script that runs without an error is not
/// proof (a no-op, a `DROP SCHEMA` without `CASCADE` that only warns).
async fn drop_namespace(conn: &mut Connection, namespace: &str, commands: &[String]) -> Result<(), BackendError> {
    for command in commands {
        conn.execute(command, &[]).await?;
    }
    if conn.namespace_exists(namespace).await? {
        return Err(BackendError::new(
            BackendErrorKind::Database,
            format!(
                "{namespace} is still on the server after drop_namespace ran without an error: make the \
                 dialect's drop_namespace remove the namespace and everything in it (CASCADE)"
            ),
        ));
    }
    Ok(())
}

/// Which driver reads a URL, for [`check_url`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UrlForm {
    /// `postgres://…` (PostgreSQL and CockroachDB).
    Postgres,
    /// `mysql://…` (MySQL and MariaDB).
    MySql,
    /// `mssql://…`, ADO.NET or JDBC (SQL Server).
    Mssql,
}

/// Whether the driver of `form` can read `url` at all, without connecting:
/// an unknown option, a bad value or no URL is invalid input, told apart
/// from a server that does not answer. The message shows no credential.
pub fn check_url(form: UrlForm, url: &str) -> Result<(), BackendError> {
    use std::str::FromStr;
    // sqlx says `error with configuration: ` once per layer of its error
    // (twice for an unknown `ssl-mode`): said once, in our words.
    let hide = |e: BackendError| {
        let said = e.message.replace("error with configuration: ", "");
        let said = if said == e.message { said } else { format!("the driver cannot read it: {said}") };
        BackendError { message: crate::redact::message(&said, url), ..e }
    };
    match form {
        UrlForm::Postgres => sqlx::postgres::PgConnectOptions::from_str(url).map(drop).map_err(|e| hide(e.into())),
        UrlForm::MySql => sqlx::mysql::MySqlConnectOptions::from_str(url).map(drop).map_err(|e| hide(e.into())),
        UrlForm::Mssql => mssql::MssqlUrl::parse(url).map(drop).map_err(hide),
    }
}

/// Reaches embedded SQLite.
pub async fn sqlite() -> Result<Server, BackendError> {
    Ok(Server::new(ServerKind::Sqlite { version: format!("sqlite {}", sqlite::library_version().await?) }))
}

/// A connection to the SQLite database file `path` (created if missing), in
/// WAL mode with a busy timeout of `busy_timeout`, so that several
/// connections share one database: what `reapcheck race` uses for SQLite.
pub async fn sqlite_file(
    path: &std::path::Path,
    busy_timeout: std::time::Duration,
) -> Result<Connection, BackendError> {
    Ok(Connection::Sqlite(sqlite::SqliteConn::open_file(path, busy_timeout).await?))
}

/// Reaches PostgreSQL at `url`; a URL that reaches CockroachDB is refused
/// (use [`cockroach`]), so a report never names the wrong product.
pub async fn postgres(url: &str) -> Result<Server, BackendError> {
    Ok(Server::new(ServerKind::Postgres(postgres::connect(url, postgres::Product::Postgres).await?)))
}

/// Reaches CockroachDB at `url`, through the PostgreSQL backend; a URL that
/// reaches PostgreSQL is refused (use [`postgres`]).
pub async fn cockroach(url: &str) -> Result<Server, BackendError> {
    Ok(Server::new(ServerKind::Postgres(postgres::connect(url, postgres::Product::Cockroach).await?)))
}

/// Reaches MySQL or MariaDB at `url`; the version says which one answered
/// (`mariadb 10.11.6`, `mysql 8.4.3`), so a MariaDB passing as `mysql` shows.
pub async fn mysql(url: &str) -> Result<Server, BackendError> {
    let (version, server) = mysql::connect(url).await?;
    Ok(Server::new(ServerKind::MySql { version, server: Box::new(server) }))
}

/// Reaches SQL Server at `url`, `mssql://user:password@host:port/database`
/// (see the `mssql` backend for the form and its defaults).
pub async fn mssql(url: &str) -> Result<Server, BackendError> {
    let url = mssql::MssqlUrl::parse(url)?;
    let version = mssql::server_version(&url).await?;
    Ok(Server::new(ServerKind::Mssql { version, url }))
}
