//! Retrying a statement that failed only because of other sessions: the one
//! place that says which failures are transient and how long to wait.
//!
//! - PostgreSQL protocol (CockroachDB above all): SQLSTATE `40001`,
//!   `serialization_failure`. CockroachDB runs every transaction
//!   SERIALIZABLE and asks the client to retry one it could not order
//!   (docs: "Transaction retry error reference"); PostgreSQL raises it only
//!   under REPEATABLE READ or SERIALIZABLE. No dialect script opens a
//!   transaction, and outside the two below every statement the backend
//!   runs is its own implicit transaction: the failed statement was rolled
//!   back whole and running it again is the retry CockroachDB documents.
//!
//!   Two callers do open one: a scenario's setup rows are inserted in one
//!   explicit transaction (`SqlEngine::with_setup_transaction`, used by
//!   `run`, `bench --scale` and `adapter serve`), and `bench --scale` runs
//!   its guarded `reap_retry` statements in one it rolls back. There a 40001 has
//!   already aborted the whole transaction, not only the statement, and the
//!   retry does not replay it: the rerun of an INSERT or UPDATE gets 25P02
//!   (`in_failed_sql_transaction`), which is not retried, so the setup
//!   fails with that error instead of going on with rows missing. A 40001
//!   on the COMMIT itself has ended the transaction; the rerun COMMIT gets
//!   25P01 (no transaction in progress) from CockroachDB, an error again,
//!   but only a WARNING from PostgreSQL, where it would succeed and the
//!   setup pass with its rows lost. So a COMMIT is never retried
//!   ([`may_retry`]): its 40001 fails the setup. (reapcheck sets no
//!   isolation level, so PostgreSQL, at its default READ COMMITTED, raises
//!   40001 there only when the server's `default_transaction_isolation` is
//!   raised.)
//! - SQL Server: error 1807 (`CREATE DATABASE` could not obtain an exclusive
//!   lock on database 'model', while another `CREATE DATABASE` copies it),
//!   3702 (`DROP DATABASE` while a session is still inside) and 5061
//!   (`ALTER DATABASE ... SET SINGLE_USER` while another session holds the
//!   database), and 1205 (chosen as a deadlock victim). The first three
//!   come from `CREATE`, `DROP` and `ALTER DATABASE`, which SQL Server never
//!   runs inside a transaction. A 1205 inside the setup transaction has
//!   rolled back the whole transaction and left it: the rerun commits
//!   alone, and the setup's `COMMIT TRANSACTION` then fails with 3902 (no
//!   matching `BEGIN TRANSACTION`), not retried, so the setup fails rather
//!   than passing with the earlier rows lost.
//!
//! At most [`ATTEMPTS`] runs, waiting [`backoff`] between them: 10, 20, 40
//! and 80 ms, 150 ms in all, more than any of these conflicts lasts between
//! two scenarios' statements.

use std::time::Duration;

/// How many times a statement runs at most (the first run included).
pub const ATTEMPTS: u32 = 5;

/// The wait after failed run number `attempt` (1-based): 10 ms doubled
/// each time.
pub fn backoff(attempt: u32) -> Duration {
    Duration::from_millis(10u64 << attempt.saturating_sub(1).min(10))
}

/// Whether a PostgreSQL-protocol failure is a serialization failure
/// (SQLSTATE 40001), to be retried.
pub fn pg_transient(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(db) if db.code().as_deref() == Some("40001"))
}

/// SQL Server's error numbers that a retry resolves (see the module docs).
pub const MSSQL_TRANSIENT: [u32; 4] = [1205, 1807, 3702, 5061];

/// Whether a SQL Server failure is one of [`MSSQL_TRANSIENT`].
pub fn mssql_transient(e: &tiberius::error::Error) -> bool {
    matches!(e, tiberius::error::Error::Server(token) if mssql_transient_number(token.code()))
}

/// Whether SQL Server error number `code` is one of [`MSSQL_TRANSIENT`].
pub fn mssql_transient_number(code: u32) -> bool {
    MSSQL_TRANSIENT.contains(&code)
}

/// Whether the command `sql` may be run again after a transient failure:
/// every command but a COMMIT, whose failure has ended its transaction, so
/// that a second COMMIT would commit nothing (PostgreSQL only warns) and
/// hide the rows the first one lost.
pub fn may_retry(sql: &str) -> bool {
    let words: Vec<String> = sql.split_whitespace().map(|w| w.trim_end_matches(';').to_ascii_uppercase()).collect();
    !matches!(words.first().map(String::as_str), Some("COMMIT" | "END"))
}

/// Runs `op` until it succeeds, fails with an error `transient` does not
/// accept, or has run [`ATTEMPTS`] times; returns its last result.
pub async fn retrying<T, E>(transient: impl Fn(&E) -> bool, mut op: impl AsyncFnMut() -> Result<T, E>) -> Result<T, E> {
    let mut attempt = 1;
    loop {
        match op().await {
            Err(e) if attempt < ATTEMPTS && transient(&e) => {
                tokio::time::sleep(backoff(attempt)).await;
                attempt += 1;
            }
            done => return done,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commit_is_never_run_twice() {
        for commit in ["COMMIT", "commit", "  COMMIT TRANSACTION ", "END", "COMMIT;"] {
            assert!(!may_retry(commit), "{commit}");
        }
        for other in ["BEGIN", "INSERT INTO jobs (id) VALUES ($1)", "UPDATE jobs SET x = 1", "CREATE DATABASE rc_x"] {
            assert!(may_retry(other), "{other}");
        }
    }

    #[test]
    fn waits_double_from_10_ms_and_total_150_ms() {
        let waits: Vec<u64> = (1..ATTEMPTS).map(|a| backoff(a).as_millis() as u64).collect();
        assert_eq!(waits, vec![10, 20, 40, 80]);
        assert_eq!(waits.iter().sum::<u64>(), 150);
    }

    #[tokio::test]
    async fn a_transient_failure_is_retried_until_it_passes_and_no_more() {
        let mut runs = 0;
        let result = retrying(
            |e: &&str| *e == "transient",
            async || {
                runs += 1;
                if runs < 3 { Err("transient") } else { Ok(runs) }
            },
        )
        .await;
        assert_eq!(result, Ok(3));
    }

    #[tokio::test]
    async fn a_lasting_or_other_failure_is_returned() {
        let mut runs = 0;
        let lasting: Result<(), &str> = retrying(
            |e: &&str| *e == "transient",
            async || {
                runs += 1;
                Err("transient")
            },
        )
        .await;
        assert_eq!((lasting, runs), (Err("transient"), ATTEMPTS));
        let mut runs = 0;
        let other: Result<(), &str> = retrying(
            |e: &&str| *e == "transient",
            async || {
                runs += 1;
                Err("syntax")
            },
        )
        .await;
        assert_eq!((other, runs), (Err("syntax"), 1));
    }

    #[test]
    fn other_sqlx_errors_are_not_transient() {
        assert!(!pg_transient(&sqlx::Error::RowNotFound));
        assert!(!pg_transient(&sqlx::Error::PoolTimedOut));
    }

    #[test]
    fn sql_server_numbers_of_lock_races_are_transient_and_others_not() {
        // tiberius has no public constructor for a server error, so the
        // classification is by number; the variant check is one `matches!`.
        for code in MSSQL_TRANSIENT {
            assert!(mssql_transient_number(code), "{code}");
        }
        // Syntax, unknown object, duplicate key, database exists.
        for code in [102, 208, 2627, 1801] {
            assert!(!mssql_transient_number(code), "{code}");
        }
        assert!(!mssql_transient(&tiberius::error::Error::Protocol("x".into())));
    }
}
