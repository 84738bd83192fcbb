//! The time limit on every statement reapcheck sends to a database target
//! (`--statement-timeout`, seconds; default [`DEFAULT_SECONDS`]).
//!
//! Each backend enforces it twice:
//!
//! - on the server, so the server itself stops the statement and the
//!   session stays usable: PostgreSQL `statement_timeout` (a startup
//!   option of every session, so `RESET ALL` keeps it), MariaDB
//!   `max_statement_time`, MySQL `max_execution_time` (which MySQL applies
//!   to read-only `SELECT`s only: every other statement relies on the
//!   client-side limit below), SQLite a progress handler that interrupts
//!   the statement once the limit has passed;
//! - on the client, [`client_limit`] ([`GRACE`] above the server's), so a
//!   server that stops answering (frozen by SIGSTOP, a cut network) also
//!   ends the statement: the connection is then dropped, never reused, and
//!   the statement is cancelled from a new connection where the product
//!   allows (`crate::backend`'s cancel worker). SQL Server has no
//!   server-side setting: the client-side limit is its query timeout.
//!
//! A statement that hits either limit fails with
//! `BackendErrorKind::TimedOut` (`timed out after N s`), its scenario
//! names the statement's `file:line`, and `mutate` counts a mutant that
//! hits it as killed with that reason.
//!
//! The limit is one value for the process, set once by the command before
//! it connects ([`set_seconds`]): a PostgreSQL session takes it when it
//! opens.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The default limit, in seconds: long above any statement of the corpus
/// (the slowest, a `bench --scale` load of 5,000 rows in one transaction,
/// takes well under a second), short enough that a hung statement is seen.
pub const DEFAULT_SECONDS: u64 = 30;

/// The largest limit `--statement-timeout` takes, in seconds (one day).
pub const MAX_SECONDS: u64 = 86_400;

/// How much longer than the server's limit the client waits, in seconds'
/// worth of [`Duration`], before it gives the statement up itself: time
/// for the server's own timeout error to arrive first.
pub const GRACE: Duration = Duration::from_secs(2);

/// The limit now in force, in seconds.
static SECONDS: AtomicU64 = AtomicU64::new(DEFAULT_SECONDS);

/// Sets the limit to `seconds` (clamped to 1..=[`MAX_SECONDS`]) for every
/// statement and session from now on.
pub fn set_seconds(seconds: u64) {
    SECONDS.store(clamped(seconds), Ordering::SeqCst);
}

fn clamped(seconds: u64) -> u64 {
    seconds.clamp(1, MAX_SECONDS)
}

/// The limit in force, in seconds.
pub fn seconds() -> u64 {
    SECONDS.load(Ordering::SeqCst)
}

/// The limit in force.
pub fn limit() -> Duration {
    Duration::from_secs(seconds())
}

/// How long the client waits for a statement: the limit plus [`GRACE`].
pub fn client_limit() -> Duration {
    limit() + GRACE
}

/// The message of a statement stopped by the limit, `timed out after N s`
/// (N in seconds).
pub fn timed_out_message() -> String {
    message_for(seconds())
}

fn message_for(seconds: u64) -> String {
    format!("timed out after {seconds} s")
}

#[cfg(test)]
mod tests {
    #[test]
    // The process-wide value is left alone: live tests run beside this one.
    fn the_limit_is_clamped_to_its_range_and_named_in_seconds() {
        assert_eq!(super::clamped(0), 1);
        assert_eq!(super::clamped(super::MAX_SECONDS + 1), super::MAX_SECONDS);
        assert_eq!(super::message_for(1), "timed out after 1 s");
    }
}
