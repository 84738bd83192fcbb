//! Database connections: one module per driver, and the enums that dispatch
//! to them. A backend only binds values, runs SQL and decodes columns; what
//! the SQL means is the dialect's business.

mod error;
mod instants;
mod mssql;
mod mysql;
mod numeric;
mod postgres;
mod retry;
mod sqlite;
mod tls;

pub use error::{BackendError, BackendErrorKind};
pub use instants::InstantEncoding;

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
            Connection::Sqlite(_) => Placeholders::QuestionNumbered,
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

    /// Runs one command; returns the rows it changed.
    pub async fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, BackendError> {
        let encoding = self.instant_encoding();
        let bound: Vec<Value> = params.iter().map(|p| encoding.bind(p)).collect();
        let params = bound.as_slice();
        match self {
            Connection::Sqlite(c) => c.execute(sql, params).await,
            Connection::Postgres(c) => c.execute(sql, params).await,
            Connection::MySql(c) => c.execute(sql, params).await,
            Connection::Mssql(c) => c.execute(sql, params).await,
        }
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
        }?;
        rows.into_iter()
            .map(|row| {
                encoding.read_row(columns, row).map_err(|message| BackendError::new(BackendErrorKind::Decode, message))
            })
            .collect()
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

/// A reachable database server, from which isolated connections are opened.
pub enum Server {
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
    /// The server product and version actually reached, such as
    /// `sqlite 3.46.0` or `mariadb 10.11.6`.
    pub fn version(&self) -> &str {
        match self {
            Server::Sqlite { version } => version,
            Server::Postgres(s) => s.version(),
            Server::MySql { version, .. } => version,
            Server::Mssql { version, .. } => version,
        }
    }

    /// Opens a connection for one scenario run.
    pub async fn open(&self) -> Result<Connection, BackendError> {
        match self {
            Server::Sqlite { .. } => Ok(Connection::Sqlite(sqlite::SqliteConn::open_memory().await?)),
            Server::Postgres(s) => Ok(Connection::Postgres(s.open().await?)),
            Server::MySql { server, .. } => Ok(Connection::MySql(Box::new(server.open().await?))),
            Server::Mssql { url, .. } => Ok(Connection::Mssql(Box::new(mssql::MssqlConn::connect(url).await?))),
        }
    }

    /// Holds at most `sessions` connections at once (at least 1) from now
    /// on; call it before the first [`Server::open`]. Only PostgreSQL's pool
    /// keeps sessions between runs and needs the bound: MySQL, MariaDB,
    /// SQL Server and SQLite open one connection per run and close it at
    /// the run's end, so the runs at once (`--jobs`) bound them already.
    pub fn limit_connections(&mut self, sessions: usize) {
        if let Server::Postgres(s) = self {
            s.limit_connections(sessions);
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
        let sql = match self {
            Server::Sqlite { .. } => return Ok(Vec::new()),
            Server::Postgres(_) => {
                "SELECT CAST(schema_name AS text) FROM information_schema.schemata WHERE schema_name LIKE 'rc\\_%'"
            }
            Server::MySql { .. } => {
                "SELECT CAST(schema_name AS BINARY) FROM information_schema.schemata WHERE schema_name LIKE 'rc\\_%'"
            }
            Server::Mssql { .. } => "SELECT name FROM sys.databases WHERE name LIKE 'rc[_]%'",
        };
        let name = Column { name: "name", kind: crate::engine::Kind::Text, nullable: false };
        let mut conn = self.open().await?;
        let rows = conn.query(sql, &[], std::slice::from_ref(&name)).await;
        conn.close().await;
        let names = rows?.into_iter().filter_map(|row| match row.into_iter().next() {
            Some(Value::Text(name)) => Some(name),
            _ => None,
        });
        Ok(names.collect())
    }

    /// Closes the server's pool, if it has one.
    pub async fn close(self) {
        if let Server::Postgres(s) = self {
            s.close().await;
        }
    }
}

/// Reaches embedded SQLite.
pub async fn sqlite() -> Result<Server, BackendError> {
    Ok(Server::Sqlite { version: format!("sqlite {}", sqlite::library_version().await?) })
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
    Ok(Server::Postgres(postgres::connect(url, postgres::Product::Postgres).await?))
}

/// Reaches CockroachDB at `url`, through the PostgreSQL backend; a URL that
/// reaches PostgreSQL is refused (use [`postgres`]).
pub async fn cockroach(url: &str) -> Result<Server, BackendError> {
    Ok(Server::Postgres(postgres::connect(url, postgres::Product::Cockroach).await?))
}

/// Reaches MySQL or MariaDB at `url`; the version says which one answered
/// (`mariadb 10.11.6`, `mysql 8.4.3`), so a MariaDB passing as `mysql` shows.
pub async fn mysql(url: &str) -> Result<Server, BackendError> {
    let (version, server) = mysql::connect(url).await?;
    Ok(Server::MySql { version, server: Box::new(server) })
}

/// Reaches SQL Server at `url`, `mssql://user:password@host:port/database`
/// (see the `mssql` backend for the form and its defaults).
pub async fn mssql(url: &str) -> Result<Server, BackendError> {
    let url = mssql::MssqlUrl::parse(url)?;
    let version = mssql::server_version(&url).await?;
    Ok(Server::Mssql { version, url })
}
