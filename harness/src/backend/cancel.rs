//! Statements in flight on a server, and cancelling them from a new
//! connection: what a signal (`crate::interrupt`) and the client-side time
//! limit (`crate::deadline`) use so that nothing reapcheck started keeps
//! running on the server after it gave the statement up.
//!
//! Each PostgreSQL and MySQL/MariaDB statement registers itself while it
//! runs ([`InFlight`]) with what a cancel needs: the connection options
//! and the session's id (PostgreSQL `pg_backend_pid()`, MySQL
//! `CONNECTION_ID()`, read once per session). A statement whose future is
//! dropped before it finishes (a run abandoned on a signal, the client-side
//! limit) is cancelled at once; [`cancel_in_flight`] cancels every one
//! still running (the first signal). Cancels are sent by one worker thread
//! with a runtime of its own, each within [`CANCEL_LIMIT`], so a frozen
//! server never holds up the command: PostgreSQL `SELECT
//! pg_cancel_backend(pid)`, MySQL and MariaDB `KILL QUERY id`. SQLite
//! needs none (its progress handler stops the statement on the same
//! thread, see `sqlite.rs`); CockroachDB and SQL Server get none (their
//! statements end with the dropped connection or the server's limit).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use sqlx::mysql::MySqlConnectOptions;
use sqlx::postgres::PgConnectOptions;
use sqlx::{ConnectOptions, Connection as _};

/// How long one cancel may take (connecting included) before it is given
/// up: the server's own limit ends the statement then.
pub const CANCEL_LIMIT: Duration = Duration::from_secs(5);

/// What cancelling one session's statement needs.
#[derive(Clone)]
pub(super) enum Session {
    /// A PostgreSQL backend's process id.
    Postgres(Arc<PgConnectOptions>, i32),
    /// A MySQL or MariaDB connection id.
    MySql(Arc<MySqlConnectOptions>, u64),
}

/// One registered statement: its session, whether a cancel was sent, and
/// whether it started before the first signal (only those are the work a
/// signal stops; the ones after it are the command's cleanup).
struct Entry {
    session: Session,
    cancelled: bool,
    before_signal: bool,
}

/// The statements running now, by a number of their own.
fn registry() -> &'static Mutex<HashMap<u64, Entry>> {
    static REGISTRY: OnceLock<Mutex<HashMap<u64, Entry>>> = OnceLock::new();
    REGISTRY.get_or_init(Mutex::default)
}

static NEXT: AtomicU64 = AtomicU64::new(1);

/// Cancels queued or being sent.
static PENDING: AtomicUsize = AtomicUsize::new(0);

/// A statement running on `session`; dropped before [`InFlight::finish`],
/// it cancels the statement on the server.
pub(super) struct InFlight {
    id: u64,
}

impl InFlight {
    /// Registers a statement starting on `session`.
    pub(super) fn start(session: Session) -> InFlight {
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        let before_signal = crate::interrupt::interrupted().is_none();
        lock().insert(id, Entry { session, cancelled: false, before_signal });
        InFlight { id }
    }

    /// The statement ended (with a result or an error from the server):
    /// nothing to cancel.
    pub(super) fn finish(self) {
        lock().remove(&self.id);
        std::mem::forget(self);
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let entry = lock().remove(&self.id);
        if let Some(Entry { session, cancelled: false, .. }) = entry {
            send(session);
        }
    }
}

fn lock() -> std::sync::MutexGuard<'static, HashMap<u64, Entry>> {
    registry().lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs `statement` under the client-side time limit
/// ([`crate::deadline::client_limit`]), registered as in flight on
/// `session` (when the product has a cancel). `None` when the limit passed
/// first: the statement was given up and cancelled on the server, and the
/// connection may be in the middle of a reply, so the caller must never
/// use it again (then fail with [`super::BackendError::timed_out`]).
pub(super) async fn bounded<T>(session: Option<Session>, statement: impl Future<Output = T>) -> Option<T> {
    let guard = session.map(InFlight::start);
    let done = tokio::time::timeout(crate::deadline::client_limit(), statement).await.ok()?;
    // Dropped unfinished (the `?` above, or this future dropped while it
    // waits), the guard cancels the statement.
    guard.map(InFlight::finish);
    Some(done)
}

/// [`bounded`] on a connection marked `busy` while `statement` runs: one
/// given up, or whose future is dropped before it ends, leaves the
/// connection `busy`, so it is never pooled or reused again.
///
/// Errors: the statement's own, or [`super::BackendError::timed_out`] once
/// the limit passed.
pub(super) async fn bounded_busy<T>(
    busy: &mut bool,
    session: Option<Session>,
    statement: impl Future<Output = Result<T, super::BackendError>>,
) -> Result<T, super::BackendError> {
    *busy = true;
    let done = bounded(session, statement).await.ok_or_else(super::BackendError::timed_out)?;
    *busy = false;
    done
}

/// Cancels, on their servers, the statements running now; returns how
/// many it asked to cancel. Does not wait for the cancels ([`settle`]).
/// With `all` false, only those that started before the first signal
/// (the work it stops, not the cleanup after it: the drops of the
/// abandoned runs' namespaces); with `all`, every one (a second signal).
pub fn cancel_in_flight(all: bool) -> usize {
    let sessions: Vec<Session> = lock()
        .values_mut()
        .filter(|e| !e.cancelled && (all || e.before_signal))
        .map(|e| {
            e.cancelled = true;
            e.session.clone()
        })
        .collect();
    let n = sessions.len();
    sessions.into_iter().for_each(send);
    n
}

/// Waits until every cancel asked for so far was sent or given up, at most
/// `bound`; returns whether none is left.
pub fn settle(bound: Duration) -> bool {
    let started = std::time::Instant::now();
    while PENDING.load(Ordering::SeqCst) > 0 {
        if started.elapsed() >= bound {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

/// Hands `session`'s cancel to the worker thread (started on first use).
fn send(session: Session) {
    static WORKER: OnceLock<Mutex<Option<Sender<Session>>>> = OnceLock::new();
    let worker = WORKER.get_or_init(|| Mutex::new(start_worker()));
    PENDING.fetch_add(1, Ordering::SeqCst);
    let sent = worker.lock().unwrap_or_else(|p| p.into_inner()).as_ref().is_some_and(|tx| tx.send(session).is_ok());
    if !sent {
        PENDING.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A thread with a runtime of its own that sends each cancel it is given
/// (one at a time, each bounded by [`CANCEL_LIMIT`]): the command's own
/// runtime may be the one waiting on the statement.
fn start_worker() -> Option<Sender<Session>> {
    let (tx, rx) = channel::<Session>();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().ok()?;
    let spawned = std::thread::Builder::new().name("reapcheck-cancel".into()).spawn(move || {
        while let Ok(session) = rx.recv() {
            // The timer is made inside the runtime, which it needs.
            let _ = runtime.block_on(async { tokio::time::timeout(CANCEL_LIMIT, cancel(session)).await });
            PENDING.fetch_sub(1, Ordering::SeqCst);
        }
    });
    spawned.ok().map(|_| tx)
}

/// Cancels the statement running on `session` from a new connection.
async fn cancel(session: Session) -> Result<(), sqlx::Error> {
    match session {
        Session::Postgres(options, pid) => {
            let mut conn = options.connect().await?;
            // Harness bookkeeping, not a queue's behaviour: cancels the
            // statement of one of reapcheck's own sessions.
            let done = sqlx::query("SELECT pg_cancel_backend($1)").bind(pid).execute(&mut conn).await;
            let _ = conn.close().await;
            done.map(drop)
        }
        Session::MySql(options, id) => {
            let mut conn = options.connect().await?;
            // As above; the id is a number the server gave, not text.
            let done = sqlx::raw_sql(sqlx::AssertSqlSafe(format!("KILL QUERY {id}"))).execute(&mut conn).await;
            let _ = conn.close().await;
            done.map(drop)
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_finished_statement_leaves_nothing_to_cancel() {
        let options = std::sync::Arc::new(sqlx::postgres::PgConnectOptions::new());
        let statement = super::InFlight::start(super::Session::Postgres(options, 1));
        let id = statement.id;
        assert!(super::lock().contains_key(&id));
        statement.finish();
        assert!(!super::lock().contains_key(&id));
    }
}
