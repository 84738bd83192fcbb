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
    /// The server refused to compile the statement: its syntax, or a
    /// function, column, table or type use it contains, does not exist on
    /// this server (a function added in a later version, a typo), by the
    /// error's code: [`postgres_cannot_compile`], [`mysql_cannot_compile`],
    /// [`sqlite_cannot_compile`], [`mssql_cannot_compile`]. The rest of
    /// the harness treats it as [`BackendErrorKind::Database`] (the server
    /// answered with an error); `mutate` tells such a mutant apart from a
    /// killed one.
    CannotCompile,
    /// The statement ran past the time limit (`crate::deadline`, seconds,
    /// `--statement-timeout`): stopped by the server's own limit
    /// (PostgreSQL SQLSTATE 57014, MariaDB error 1969, MySQL 3024, SQLite
    /// `SQLITE_INTERRUPT` from the progress handler) or given up by the
    /// client after [`crate::deadline::client_limit`] with no answer. The
    /// message is `timed out after N s`.
    TimedOut,
    /// A signal (SIGINT, SIGTERM) stopped the statement: it was cancelled
    /// on the server (`crate::interrupt`).
    Interrupted,
}

impl BackendError {
    /// A backend error of `kind`.
    pub fn new(kind: BackendErrorKind, message: impl Into<String>) -> Self {
        BackendError { kind, message: message.into() }
    }

    /// The error of a statement the limit or a signal stopped: interrupted
    /// once a signal has come ([`crate::interrupt::interrupted`]), else
    /// timed out (`timed out after N s`).
    pub fn stopped() -> Self {
        match crate::interrupt::interrupted() {
            Some(signal) => BackendError::new(BackendErrorKind::Interrupted, signal),
            None => BackendError::timed_out(),
        }
    }

    /// The error of a statement past the time limit: `timed out after N s`.
    pub fn timed_out() -> Self {
        BackendError::new(BackendErrorKind::TimedOut, crate::deadline::timed_out_message())
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
            sqlx::Error::Database(db) if stopped(db.as_ref()) => return BackendError::stopped(),
            sqlx::Error::Database(db) if cannot_compile(db.as_ref()) => BackendErrorKind::CannotCompile,
            sqlx::Error::Database(_) | sqlx::Error::RowNotFound => BackendErrorKind::Database,
            sqlx::Error::ColumnDecode { .. }
            | sqlx::Error::Decode(_)
            | sqlx::Error::ColumnIndexOutOfBounds { .. }
            | sqlx::Error::ColumnNotFound(_)
            | sqlx::Error::TypeNotFound { .. } => BackendErrorKind::Decode,
            _ => BackendErrorKind::Connection,
        };
        BackendError { kind, message: message_of(&e) }
    }
}

impl From<rusqlite::Error> for BackendError {
    /// SQLite's errors, by extended result code: 9 (`SQLITE_INTERRUPT`,
    /// the progress handler's) is [`BackendError::stopped`], a
    /// [`sqlite_cannot_compile`] code [`BackendErrorKind::CannotCompile`],
    /// the others [`BackendErrorKind::Database`]; a value that cannot be
    /// read is [`BackendErrorKind::Decode`]. The message keeps the form
    /// sqlx-sqlite gave it: `error returned from database: (code: N) text`.
    fn from(e: rusqlite::Error) -> Self {
        use rusqlite::Error as E;
        let (failure, text) = match &e {
            E::SqliteFailure(failure, text) => (failure, text.clone().unwrap_or_else(|| failure.to_string())),
            // What `sqlite3_prepare` refused, with the offending token's offset.
            E::SqlInputError { error, msg, .. } => (error, msg.clone()),
            _ => return BackendError::from_rusqlite_client(e),
        };
        let code = failure.extended_code;
        if code & 0xff == 9 {
            return BackendError::stopped();
        }
        let kind =
            if sqlite_cannot_compile(code) { BackendErrorKind::CannotCompile } else { BackendErrorKind::Database };
        BackendError { kind, message: format!("error returned from database: (code: {code}) {text}") }
    }
}

impl BackendError {
    /// A rusqlite error that SQLite did not return: a value that cannot be
    /// read is [`BackendErrorKind::Decode`], the rest
    /// [`BackendErrorKind::Database`].
    fn from_rusqlite_client(e: rusqlite::Error) -> Self {
        use rusqlite::Error as E;
        let kind = match &e {
            E::FromSqlConversionFailure(..)
            | E::IntegralValueOutOfRange(..)
            | E::InvalidColumnIndex(_)
            | E::InvalidColumnType(..)
            | E::Utf8Error(..) => BackendErrorKind::Decode,
            _ => BackendErrorKind::Database,
        };
        BackendError { kind, message: e.to_string() }
    }
}

/// The text of `e`. For a PostgreSQL error, its message and SQLSTATE
/// without the ` at line N` sqlx's Display appends: that N is a line of the
/// server's own C source, which reads like a line of the user's SQL file.
fn message_of(e: &sqlx::Error) -> String {
    if let sqlx::Error::Database(db) = e
        && let Some(pg) = db.try_downcast_ref::<sqlx::postgres::PgDatabaseError>()
    {
        return format!("error returned from database: {} (SQLSTATE {})", pg.message(), pg.code());
    }
    e.to_string()
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

/// Whether the server stopped the statement on its time limit or a
/// cancel, by code: PostgreSQL SQLSTATE 57014 (`query_canceled`, both
/// `statement_timeout` and `pg_cancel_backend`), MariaDB 1969
/// (`ER_STATEMENT_TIMEOUT`), MySQL 3024 (`ER_QUERY_TIMEOUT`), both 1317
/// (`ER_QUERY_INTERRUPTED`, `KILL QUERY`), SQLite 9 (`SQLITE_INTERRUPT`,
/// the progress handler's). Which of the two it was is reapcheck's own
/// state ([`BackendError::stopped`]), not the message.
fn stopped(db: &(dyn sqlx::error::DatabaseError + 'static)) -> bool {
    if let Some(pg) = db.try_downcast_ref::<sqlx::postgres::PgDatabaseError>() {
        return pg.code() == "57014";
    }
    if let Some(my) = db.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>() {
        return matches!(my.number(), 1969 | 3024 | 1317);
    }
    false
}

/// Whether the server refused to compile the statement, by the error's
/// code (see [`BackendErrorKind::CannotCompile`]).
fn cannot_compile(db: &(dyn sqlx::error::DatabaseError + 'static)) -> bool {
    if let Some(pg) = db.try_downcast_ref::<sqlx::postgres::PgDatabaseError>() {
        return postgres_cannot_compile(pg.code());
    }
    if let Some(my) = db.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>() {
        return mysql_cannot_compile(my.number());
    }
    false
}

/// Whether a PostgreSQL (or CockroachDB) SQLSTATE says the statement cannot
/// be compiled: the class 42 codes of parse analysis, i.e. syntax (42601),
/// an undefined function, column, table, parameter or object (42883, 42703,
/// 42P01, 42P02, 42704), an ambiguous one (42702, 42725, 42P08, 42P09), a
/// type the statement cannot resolve or match (42804, 42P18, 42846, 42809),
/// grouping and window misuse (42803, 42P20) and an invalid column
/// reference (42P10). Not the rest of class 42: 42501 (insufficient
/// privilege) and the duplicate-object codes are about the database, not the
/// text. Runtime failures have other classes (22 data exception, 23
/// integrity constraint, 40 rollback).
pub fn postgres_cannot_compile(sqlstate: &str) -> bool {
    matches!(
        sqlstate,
        "42601"
            | "42883"
            | "42703"
            | "42P01"
            | "42P02"
            | "42704"
            | "42702"
            | "42725"
            | "42P08"
            | "42P09"
            | "42804"
            | "42P18"
            | "42846"
            | "42809"
            | "42803"
            | "42P20"
            | "42P10"
    )
}

/// Whether a MySQL or MariaDB error number says the statement cannot be
/// compiled: 1064 (`ER_PARSE_ERROR`), 1149 (`ER_SYNTAX_ERROR`), 1305
/// (`ER_SP_DOES_NOT_EXIST`: FUNCTION ... does not exist), 1582 to 1584 (wrong
/// arguments to a function), 1054 (`ER_BAD_FIELD_ERROR`: unknown column),
/// 1146 (`ER_NO_SUCH_TABLE`), 1052 (`ER_NON_UNIQ_ERROR`: ambiguous column),
/// 1111 (`ER_INVALID_GROUP_FUNC_USE`), 1093 (`ER_UPDATE_TABLE_USED`: the
/// updated table in a subquery, which MySQL refuses and MariaDB allows) and
/// 1235 (`ER_NOT_SUPPORTED_YET`: "this version ... doesn't yet support").
/// Runtime failures have other numbers (1062 duplicate key, 1264 out of
/// range, 1292 incorrect value, 1048 column cannot be null).
pub fn mysql_cannot_compile(number: u16) -> bool {
    matches!(number, 1064 | 1149 | 1305 | 1582 | 1583 | 1584 | 1054 | 1146 | 1052 | 1111 | 1093 | 1235)
}

/// Whether an SQLite extended result code says the statement cannot be
/// compiled: plain `SQLITE_ERROR` (1), the code `sqlite3_prepare` gives a
/// syntax error, an unknown function, column or table, or a wrong number of
/// arguments. Runtime failures mostly have codes of their own
/// (`SQLITE_CONSTRAINT` 19 and its extended codes, `SQLITE_MISMATCH` 20,
/// `SQLITE_TOOBIG` 18, `SQLITE_BUSY` 5); the few that use plain
/// `SQLITE_ERROR` (an integer overflow in `abs` or `sum`, malformed JSON)
/// are why `mutate` also requires the statement's first use to fail (see
/// `mutate::applicable`).
pub fn sqlite_cannot_compile(extended_code: i32) -> bool {
    extended_code == 1
}

/// Whether a SQL Server error number says the batch cannot be compiled:
/// 102 and 156 (incorrect syntax), 195 (not a recognized built-in function
/// name: `GREATEST` and `LEAST` before SQL Server 2022), 174 and 189 (a
/// function given the wrong number of arguments), 207 (invalid column
/// name), 208 (invalid object name), 209 (ambiguous column name), 4104 (a
/// multi-part identifier that cannot be bound), 4121 (no such column or
/// user-defined function), 4145 (a non-boolean expression where a condition
/// is expected), 8116 and 8117 (an argument or operand type a function or
/// operator does not take), 8120 (a column neither grouped nor aggregated)
/// and 402 (incompatible data types in an operator). Runtime failures have
/// other numbers (245 conversion failed, 515 NULL into a NOT NULL column,
/// 2627 duplicate key, 8115 arithmetic overflow). For the mssql driver,
/// whose server errors (tiberius `Error::Server`) carry this number as
/// `code()`: such an error is [`BackendErrorKind::CannotCompile`].
pub fn mssql_cannot_compile(number: u32) -> bool {
    matches!(number, 102 | 156 | 195 | 174 | 189 | 207 | 208 | 209 | 4104 | 4121 | 4145 | 8116 | 8117 | 8120 | 402)
}

impl From<BackendError> for EngineErrorKind {
    fn from(e: BackendError) -> Self {
        match e.kind {
            BackendErrorKind::Database | BackendErrorKind::CannotCompile => EngineErrorKind::Database(e.message),
            BackendErrorKind::Connection | BackendErrorKind::TooManyConnections => {
                EngineErrorKind::Connection(e.message)
            }
            BackendErrorKind::Decode => EngineErrorKind::Decode(e.message),
            BackendErrorKind::TimedOut => EngineErrorKind::TimedOut(e.message),
            BackendErrorKind::Interrupted => {
                EngineErrorKind::Interrupted(crate::interrupt::interrupted().unwrap_or("a signal"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgres_syntax_and_undefined_names_cannot_compile_other_errors_can() {
        for code in ["42601", "42883", "42703", "42P01", "42804", "42P18", "42725"] {
            assert!(postgres_cannot_compile(code), "{code}");
        }
        // Privilege, duplicates, data, constraints, serialization, division.
        for code in ["42501", "42P07", "42710", "22P02", "22003", "23505", "23502", "40001", "22012", "53300"] {
            assert!(!postgres_cannot_compile(code), "{code}");
        }
    }

    #[test]
    fn mysql_parse_errors_and_unknown_functions_cannot_compile_other_errors_can() {
        for number in [1064, 1305, 1054, 1146, 1582, 1093, 1235] {
            assert!(mysql_cannot_compile(number), "{number}");
        }
        for number in [1062, 1264, 1292, 1048, 1213, 1205, 1040, 1053, 1298] {
            assert!(!mysql_cannot_compile(number), "{number}");
        }
    }

    #[test]
    fn sqlite_plain_error_cannot_compile_constraints_and_mismatches_can() {
        assert!(sqlite_cannot_compile(1));
        // SQLITE_CONSTRAINT_NOTNULL, _PRIMARYKEY, SQLITE_CONSTRAINT,
        // SQLITE_MISMATCH, SQLITE_BUSY, SQLITE_TOOBIG, SQLITE_ERROR_RETRY.
        for code in [1299, 1555, 19, 20, 5, 18, 513] {
            assert!(!sqlite_cannot_compile(code), "{code}");
        }
    }

    #[test]
    fn mssql_syntax_and_unknown_builtins_cannot_compile_other_errors_can() {
        for number in [102, 156, 195, 207, 208, 4145, 8116] {
            assert!(mssql_cannot_compile(number), "{number}");
        }
        // Conversion, NULL into NOT NULL, duplicate key, overflow, deadlock,
        // too many connections, DATEDIFF overflow.
        for number in [245, 515, 2627, 8115, 1205, 17809, 535] {
            assert!(!mssql_cannot_compile(number), "{number}");
        }
    }

    #[tokio::test]
    async fn an_sqlite_statement_naming_a_missing_function_cannot_compile_a_constraint_failure_is_a_refusal() {
        let mut conn = super::super::sqlite::SqliteConn::open_memory().await.expect("opens");
        conn.execute("CREATE TABLE t (a integer NOT NULL)", &[]).await.expect("created");
        let e = conn.execute("UPDATE t SET a = no_such_function(a)", &[]).await.unwrap_err();
        assert_eq!(e.kind, BackendErrorKind::CannotCompile, "{e}");
        let e = conn.execute("UPDATE t SET a = 1 WHERE", &[]).await.unwrap_err();
        assert_eq!(e.kind, BackendErrorKind::CannotCompile, "{e}");
        let e = conn.execute("INSERT INTO t (a) VALUES (NULL)", &[]).await.unwrap_err();
        assert_eq!(e.kind, BackendErrorKind::Database, "{e}");
        assert!(matches!(EngineErrorKind::from(e), EngineErrorKind::Database(_)));
    }
}
