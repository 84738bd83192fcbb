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

impl From<BackendError> for EngineErrorKind {
    fn from(e: BackendError) -> Self {
        match e.kind {
            BackendErrorKind::Database => EngineErrorKind::Database(e.message),
            BackendErrorKind::Connection => EngineErrorKind::Connection(e.message),
            BackendErrorKind::Decode => EngineErrorKind::Decode(e.message),
        }
    }
}
