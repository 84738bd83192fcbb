//! Database connections: one module per driver, and the enums that dispatch
//! to them. A backend only binds values, runs SQL and decodes columns; what
//! the SQL means is the dialect's business.

mod error;
mod sqlite;

pub use error::{BackendError, BackendErrorKind};

use crate::dialect::contract::Column;
use crate::dialect::text::Placeholders;
use crate::engine::Value;

/// A connection to one isolated scenario run.
pub enum Connection {
    /// SQLite through sqlx.
    Sqlite(sqlite::SqliteConn),
}

impl Connection {
    /// How this driver writes bind markers.
    pub fn placeholders(&self) -> Placeholders {
        match self {
            Connection::Sqlite(_) => Placeholders::QuestionNumbered,
        }
    }

    /// Runs one command; returns the rows it changed.
    pub async fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, BackendError> {
        match self {
            Connection::Sqlite(c) => c.execute(sql, params).await,
        }
    }

    /// Runs one query; returns its rows decoded as `columns` declare.
    pub async fn query(&mut self, sql: &str, params: &[Value], columns: &[Column]) -> Result<Vec<Vec<Value>>, BackendError> {
        match self {
            Connection::Sqlite(c) => c.query(sql, params, columns).await,
        }
    }

    /// Closes the connection.
    pub async fn close(self) {
        match self {
            Connection::Sqlite(c) => c.close().await,
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
}

impl Server {
    /// The server product and version actually reached, such as
    /// `sqlite 3.46.0` or `mariadb 10.11.6`.
    pub fn version(&self) -> &str {
        match self {
            Server::Sqlite { version } => version,
        }
    }

    /// Opens a connection for one scenario run.
    pub async fn open(&self) -> Result<Connection, BackendError> {
        match self {
            Server::Sqlite { .. } => Ok(Connection::Sqlite(sqlite::SqliteConn::open_memory().await?)),
        }
    }

    /// Closes the server's pool, if it has one.
    pub async fn close(self) {}
}

/// Reaches embedded SQLite.
pub async fn sqlite() -> Result<Server, BackendError> {
    Ok(Server::Sqlite { version: format!("sqlite {}", sqlite::library_version().await?) })
}
