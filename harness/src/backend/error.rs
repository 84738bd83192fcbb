//! Database failures, classified by the driver's error kind (never by
//! matching message text).

use crate::engine::EngineErrorKind;

/// A failure reported by a database driver.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct BackendError {
    /// What kind of failure.
    pub kind: BackendErrorKind,
    /// The driver's message, with any password removed.
    pub message: String,
}

/// The kinds of backend failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendErrorKind {
    /// The server answered with an error.
    Database,
    /// The server could not be reached or the connection broke.
    Connection,
    /// A value could not be converted.
    Decode,
    /// The server refused a connection because it has too many: PostgreSQL
    /// SQLSTATE 53300 (the server's `max_connections` or the role's
    /// `CONNECTION LIMIT`), MySQL and MariaDB errors 1040 (`max_connections`),
    /// 1203 (`max_user_connections`) and 1226 (an account's resource limit).
    TooManyConnections,
}

impl BackendError {
    /// A backend error of `kind`.
    pub fn new(kind: BackendErrorKind, message: impl Into<String>) -> Self {
        BackendError { kind, message: message.into() }
    }

    /// `Err` when a row has fewer columns than the contract declares
    /// (columns are read by position; extras after the contract's are
    /// ignored). `got` and `declared` are column counts.
    pub fn check_width(got: usize, declared: usize) -> Result<(), BackendError> {
        if got >= declared {
            return Ok(());
        }
        let message = format!(
            "a row has {got} columns, the contract declares {declared}: return them first, in its order \
             (extras after them are ignored)"
        );
        Err(BackendError::new(BackendErrorKind::Decode, message))
    }
}

impl From<sqlx::Error> for BackendError {
    fn from(e: sqlx::Error) -> Self {
        let kind = match &e {
            sqlx::Error::Database(db) if too_many_connections(db.as_ref()) => {
                let message = format!(
                    "{e}: the server refused one more connection; lower --jobs or raise the connection limit \
                     (the server's max_connections, or the role's or user's limit)"
                );
                return BackendError { kind: BackendErrorKind::TooManyConnections, message };
            }
            sqlx::Error::Database(db) if connection_ended(db.as_ref()) => BackendErrorKind::Connection,
            sqlx::Error::Database(_) | sqlx::Error::RowNotFound => BackendErrorKind::Database,
            sqlx::Error::ColumnDecode { .. }
            | sqlx::Error::Decode(_)
            | sqlx::Error::ColumnIndexOutOfBounds { .. }
            | sqlx::Error::ColumnNotFound(_)
            | sqlx::Error::TypeNotFound { .. } => BackendErrorKind::Decode,
            _ => BackendErrorKind::Connection,
        };
        BackendError { kind, message: e.to_string() }
    }
}

/// Whether the server refused a connection for having too many, by the
/// error's code (see [`BackendErrorKind::TooManyConnections`]).
fn too_many_connections(db: &(dyn sqlx::error::DatabaseError + 'static)) -> bool {
    if let Some(pg) = db.try_downcast_ref::<sqlx::postgres::PgDatabaseError>() {
        return pg.code() == "53300";
    }
    if let Some(my) = db.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>() {
        return matches!(my.number(), 1040 | 1203 | 1226);
    }
    false
}

/// Whether the server reported that it ended the session, by code:
/// PostgreSQL SQLSTATE class 08 (connection exception) and 57P01-57P03
/// (terminated by an administrator, crash shutdown, cannot connect now);
/// MySQL and MariaDB errors 1053 (server shutdown) and 1927 (connection
/// killed). Such a session is gone, as if its socket had been cut.
fn connection_ended(db: &(dyn sqlx::error::DatabaseError + 'static)) -> bool {
    if let Some(pg) = db.try_downcast_ref::<sqlx::postgres::PgDatabaseError>() {
        return pg.code().starts_with("08") || matches!(pg.code(), "57P01" | "57P02" | "57P03");
    }
    if let Some(my) = db.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>() {
        return matches!(my.number(), 1053 | 1927);
    }
    false
}

impl From<BackendError> for EngineErrorKind {
    fn from(e: BackendError) -> Self {
        match e.kind {
            BackendErrorKind::Database => EngineErrorKind::Database(e.message),
            BackendErrorKind::Connection | BackendErrorKind::TooManyConnections => {
                EngineErrorKind::Connection(e.message)
            }
            BackendErrorKind::Decode => EngineErrorKind::Decode(e.message),
        }
    }
}
