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
//!
//! A server that stops answering (frozen by SIGSTOP, a cut network) is
//! given up as a whole ([`Answering`]): once a connect to it timed out, or
//! a statement ran past the client-side limit and its cancel got no answer
//! within [`CANCEL_LIMIT`] either, nothing more is sent to it. Every
//! statement and connect still waiting on it ends at once, and every later
//! one fails before it is sent, so a frozen server ends the command within
//! the statement limit + [`crate::deadline::GRACE`] + [`CANCEL_LIMIT`]
//! (or the connect timeout, when a connect is what waits on it), not one
//! timeout per scenario.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
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

/// Whether a server still answers, shared by the server, its pool and its
/// connections (a clone is the same state). Once stopped it stays stopped
/// for the life of the server: every connect and statement on it fails
/// before anything is sent ([`Answering::refuse`]), and those waiting on
/// it end at once ([`Answering::until_stopped`]).
#[derive(Clone, Default)]
pub struct Answering(Arc<Stopped>);

#[derive(Default)]
struct Stopped {
    /// What showed it: `connect timed out after 5 s`, ...
    why: OnceLock<String>,
    /// The first scenario that failed once it had stopped (set by the
    /// runner, which knows scenarios).
    at: OnceLock<String>,
    /// Wakes whatever waits on the server when it is found stopped.
    woken: tokio::sync::Notify,
}

impl Answering {
    /// Takes the server as stopped, for `why` (the first reason is kept),
    /// and wakes every statement and connect waiting on it.
    pub(super) fn stop(&self, why: String) {
        let _ = self.0.why.set(why);
        self.0.woken.notify_waiters();
    }

    /// What showed that the server stopped answering; `None` while it
    /// answers.
    pub fn why(&self) -> Option<&str> {
        self.0.why.get().map(String::as_str)
    }

    /// Records `scenario` as where the server was found stopped, unless
    /// one was recorded already or the server still answers.
    pub fn note_at(&self, scenario: &str) {
        if self.why().is_some() {
            let _ = self.0.at.set(scenario.to_owned());
        }
    }

    /// The scenario [`Answering::note_at`] recorded.
    pub fn at(&self) -> Option<&str> {
        self.0.at.get().map(String::as_str)
    }

    /// `Err` (a connection error naming the reason) once the server has
    /// stopped answering: nothing more is sent to it.
    pub(super) fn refuse(&self) -> Result<(), super::BackendError> {
        match self.why() {
            None => Ok(()),
            Some(why) => Err(Self::given_up(why)),
        }
    }

    fn given_up(why: &str) -> super::BackendError {
        super::BackendError::new(
            super::BackendErrorKind::Connection,
            format!("not sent: the server stopped answering ({why})"),
        )
    }

    /// Returns once the server is taken as stopped.
    pub(super) async fn until_stopped(&self) {
        loop {
            let woken = self.0.woken.notified();
            let mut woken = std::pin::pin!(woken);
            // Registered before the check, so a stop between the two is seen.
            woken.as_mut().enable();
            if self.why().is_some() {
                return;
            }
            woken.await;
        }
    }
}

/// Runs `connecting` (opening a session) within `timeout`: one that takes
/// longer takes the server as stopped (`connect timed out after N s`) and
/// fails with `timed_out`'s error; one still waiting when the server is
/// found stopped by another fails at once; none starts on a server that
/// stopped answering.
pub(super) async fn connecting<T>(
    answering: &Answering,
    timeout: Duration,
    connecting: impl Future<Output = Result<T, super::BackendError>>,
    timed_out: impl FnOnce() -> super::BackendError,
) -> Result<T, super::BackendError> {
    answering.refuse()?;
    tokio::select! {
        done = tokio::time::timeout(timeout, connecting) => match done {
            Ok(done) => done,
            Err(_) => {
                answering.stop(format!("connect timed out after {} s", timeout.as_secs_f64()));
                Err(timed_out())
            }
        },
        () = answering.until_stopped() => Err(Answering::given_up(answering.why().unwrap_or_default())),
    }
}

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

    /// Cancels the statement (given up) and waits for the cancel: `Some(true)`
    /// when the server answered it, `Some(false)` when it failed or got no
    /// answer within [`CANCEL_LIMIT`], `None` when no cancel was sent here
    /// (a signal's sent one already) or none could be.
    async fn cancel_and_wait(self) -> Option<bool> {
        let entry = lock().remove(&self.id);
        std::mem::forget(self);
        let Some(Entry { session, cancelled: false, .. }) = entry else { return None };
        let (reply, answer) = tokio::sync::oneshot::channel();
        if !send_job(Job { session, reply: Some(reply) }) {
            return None;
        }
        // The worker gives each cancel up after CANCEL_LIMIT; the margin is
        // for the worker itself.
        match tokio::time::timeout(CANCEL_LIMIT + Duration::from_secs(1), answer).await {
            Ok(Ok(answered)) => Some(answered),
            Ok(Err(_)) => None,
            Err(_) => Some(false),
        }
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

/// [`bounded`] on a connection marked `busy` while `statement` runs, on a
/// server that may stop answering (`answering`). One given up, or whose
/// future is dropped before it ends, leaves the connection `busy`, so it
/// is never pooled, reused or sent anything again. A statement that runs
/// past the limit is cancelled from a new connection and waited for (at
/// most [`CANCEL_LIMIT`]); a cancel that fails or gets no answer takes the
/// server as stopped. A statement still running when the server is taken
/// as stopped (by this connection or another) is given up at once.
///
/// Errors: the statement's own; [`super::BackendError::timed_out`] once
/// the limit passed; a connection error when the connection gave up a
/// statement before, or the server stopped answering.
pub(super) async fn bounded_busy<T>(
    busy: &mut bool,
    session: Option<Session>,
    answering: &Answering,
    statement: impl Future<Output = Result<T, super::BackendError>>,
) -> Result<T, super::BackendError> {
    answering.refuse()?;
    if *busy {
        return Err(super::BackendError::new(
            super::BackendErrorKind::Connection,
            "not sent: this connection gave up a statement mid-reply and is not used again",
        ));
    }
    *busy = true;
    let guard = session.map(InFlight::start);
    let done = tokio::select! {
        done = tokio::time::timeout(crate::deadline::client_limit(), statement) => done.ok(),
        // Dropped unfinished, the guard cancels the statement.
        () = answering.until_stopped() => return Err(Answering::given_up(answering.why().unwrap_or_default())),
    };
    match done {
        Some(done) => {
            guard.map(InFlight::finish);
            *busy = false;
            done
        }
        None => {
            if let Some(guard) = guard
                && guard.cancel_and_wait().await == Some(false)
            {
                answering.stop(format!(
                    "a statement timed out after {} s and its cancel got no answer within {} s",
                    crate::deadline::seconds(),
                    CANCEL_LIMIT.as_secs()
                ));
            }
            Err(super::BackendError::timed_out())
        }
    }
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

/// One cancel for the worker, and where to say whether it was answered.
struct Job {
    session: Session,
    reply: Option<tokio::sync::oneshot::Sender<bool>>,
}

/// Hands `session`'s cancel to the worker thread (started on first use).
fn send(session: Session) {
    send_job(Job { session, reply: None });
}

/// Hands `job` to the worker thread; false when there is none.
fn send_job(job: Job) -> bool {
    static WORKER: OnceLock<Mutex<Option<tokio::sync::mpsc::UnboundedSender<Job>>>> = OnceLock::new();
    let worker = WORKER.get_or_init(|| Mutex::new(start_worker()));
    PENDING.fetch_add(1, Ordering::SeqCst);
    let sent = worker.lock().unwrap_or_else(|p| p.into_inner()).as_ref().is_some_and(|tx| tx.send(job).is_ok());
    if !sent {
        PENDING.fetch_sub(1, Ordering::SeqCst);
    }
    sent
}

/// A thread with a runtime of its own that sends the cancels it is given,
/// all at once (each bounded by [`CANCEL_LIMIT`], so cancels to a frozen
/// server cost that limit once, not once each): the command's own runtime
/// may be the one waiting on the statement.
fn start_worker() -> Option<tokio::sync::mpsc::UnboundedSender<Job>> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Job>();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().ok()?;
    let spawned = std::thread::Builder::new().name("reapcheck-cancel".into()).spawn(move || {
        runtime.block_on(async move {
            while let Some(Job { session, reply }) = rx.recv().await {
                tokio::spawn(async move {
                    let done = tokio::time::timeout(CANCEL_LIMIT, cancel(session)).await;
                    PENDING.fetch_sub(1, Ordering::SeqCst);
                    if let Some(reply) = reply {
                        let _ = reply.send(matches!(done, Ok(Ok(()))));
                    }
                });
            }
        });
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
    use super::Answering;
    use crate::backend::{BackendError, BackendErrorKind};

    fn refused(e: &BackendError) -> bool {
        e.kind == BackendErrorKind::Connection && e.message.starts_with("not sent: the server stopped answering (")
    }

    #[tokio::test]
    async fn a_connect_that_times_out_stops_the_server_and_nothing_more_is_sent() {
        let answering = Answering::default();
        let silent = || BackendError::new(BackendErrorKind::Connection, "no answer");
        let waited = super::connecting(
            &answering,
            std::time::Duration::from_millis(20),
            std::future::pending::<Result<(), BackendError>>(),
            silent,
        );
        assert_eq!(waited.await.expect_err("it timed out").message, "no answer");
        assert_eq!(answering.why(), Some("connect timed out after 0.02 s"));
        // Neither a connect nor a statement is polled once it has stopped.
        let never = async { panic!("sent to a server that stopped answering") };
        let hour = std::time::Duration::from_secs(3600);
        let e = super::connecting::<()>(&answering, hour, never, silent).await.expect_err("refused");
        assert!(refused(&e), "{e:?}");
        let never = async { panic!("sent to a server that stopped answering") };
        let e = super::bounded_busy::<()>(&mut false, None, &answering, never).await.expect_err("refused");
        assert!(refused(&e), "{e:?}");
        // Where it was found stopped is kept once.
        answering.note_at("grace/floor");
        answering.note_at("grace/other");
        assert_eq!(answering.at(), Some("grace/floor"));
    }

    #[tokio::test]
    async fn a_statement_waiting_on_a_server_ends_when_another_finds_it_stopped() {
        let answering = Answering::default();
        // Nothing noted while the server answers.
        answering.note_at("grace/floor");
        assert_eq!(answering.at(), None);
        let waiting = answering.clone();
        let statement = tokio::spawn(async move {
            let mut busy = false;
            let e = super::bounded_busy::<()>(&mut busy, None, &waiting, std::future::pending()).await;
            (e.expect_err("given up"), busy)
        });
        tokio::task::yield_now().await;
        answering.stop("connect timed out after 5 s".to_owned());
        let (e, busy) = statement.await.expect("no panic");
        // Given up, not timed out: without the wake it would end at the limit.
        assert!(refused(&e), "{e:?}");
        assert!(busy, "a connection that gave a statement up is never used again");
        let e = super::bounded_busy(&mut true, None, &Answering::default(), async { Ok(()) }).await.expect_err("busy");
        assert!(e.message.contains("gave up a statement"), "{e:?}");
    }

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
