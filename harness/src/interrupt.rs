//! Ctrl-C, SIGTERM and SIGHUP (a closed terminal; left ignored when it is,
//! as under `nohup`) during a command that runs scenarios or SQL (`run`,
//! `mutate`, `fuzz`, `race`, `bench`, `bench --scale`): the first one asks
//! the command to stop (no new scenario, mutant, case or round starts, the
//! runs in flight are abandoned and their namespaces dropped, the reports
//! are written marked incomplete, the summary is printed, exit 130); a
//! second one ends the process at once with 130.
//!
//! The handler only stores the signal's number (an atomic store is
//! async-signal-safe); the command polls [`interrupted`]. A watcher thread,
//! started by [`install`], does what a handler cannot:
//!
//! - at the first signal it cancels, on their servers, every statement in
//!   flight (`crate::backend::cancel_in_flight`: PostgreSQL
//!   `pg_cancel_backend`, MySQL and MariaDB `KILL QUERY`, each from a new
//!   connection; SQLite's progress handler stops its own), so a blocking
//!   statement neither holds the command up nor keeps running, holding
//!   locks the next run's sweep would wait on;
//! - at a second signal it cancels what started since, waits at most
//!   [`SECOND_SIGNAL_LIMIT`] for those cancels to be sent, and exits 130
//!   (a third signal exits at once, in the handler);
//! - [`STOP_LIMIT`] after the first signal, if the command is still
//!   running (a wait that never looks at the signal), it says so, cancels
//!   and exits 130 the same way: the stated bound on any command's stop.
//!
//! It is installed by libc's `signal` rather than tokio's, whose `signal`
//! feature would rebuild tokio and sqlx for one flag. Without [`install`]
//! (the commands that run no SQL, and off Unix) the signals keep their
//! default action.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};
use std::time::Duration;

/// The exit code of an interrupted run: 128 + SIGINT, as shells report it.
pub const EXIT_INTERRUPTED: u8 = 130;

/// The longest a command may take to stop after the first signal, in
/// seconds' worth of [`Duration`]: an abandoned run's namespace gets 30 s
/// (`crate::isolation::ABANDONED_TEARDOWN_LIMIT`), a cancel 5 s; past
/// this the watcher exits 130 whatever the command is waiting on.
pub const STOP_LIMIT: Duration = Duration::from_secs(60);

/// How long a second signal waits for its cancels to be sent before the
/// process exits.
pub const SECOND_SIGNAL_LIMIT: Duration = Duration::from_secs(2);

/// The first signal received, or 0.
static SIGNAL: AtomicI32 = AtomicI32::new(0);

/// How many signals were received.
static COUNT: AtomicU32 = AtomicU32::new(0);

/// Whether the watcher thread runs (a second signal leaves the exit to it).
static WATCHING: AtomicBool = AtomicBool::new(false);

/// Asks the command to stop on SIGINT, SIGTERM and SIGHUP, and starts the
/// watcher thread (once).
pub fn install() {
    #[cfg(unix)]
    {
        let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        // SAFETY: the handler only does atomic operations and `_exit`, all
        // async-signal-safe.
        unsafe {
            libc::signal(libc::SIGINT, handler);
            libc::signal(libc::SIGTERM, handler);
            // Left ignored when it is (`nohup`): a closed terminal then
            // must not stop the command.
            if libc::signal(libc::SIGHUP, handler) == libc::SIG_IGN {
                libc::signal(libc::SIGHUP, libc::SIG_IGN);
            }
        }
        if !WATCHING.swap(true, Ordering::SeqCst) {
            let started = std::thread::Builder::new().name("reapcheck-signals".into()).spawn(watch);
            if started.is_err() {
                WATCHING.store(false, Ordering::SeqCst);
            }
        }
    }
}

#[cfg(unix)]
extern "C" fn on_signal(signal: libc::c_int) {
    let _ = SIGNAL.compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst);
    let count = COUNT.fetch_add(1, Ordering::SeqCst) + 1;
    if count >= 3 || (count == 2 && !WATCHING.load(Ordering::SeqCst)) {
        // SAFETY: `_exit` is async-signal-safe; another signal means now.
        unsafe { libc::_exit(i32::from(EXIT_INTERRUPTED)) }
    }
}

/// The watcher thread (see the module): polls every 20 ms.
#[cfg(unix)]
fn watch() {
    let mut first: Option<std::time::Instant> = None;
    loop {
        std::thread::sleep(Duration::from_millis(20));
        let count = COUNT.load(Ordering::SeqCst);
        if count == 0 {
            continue;
        }
        let since = *first.get_or_insert_with(|| {
            crate::backend::cancel_in_flight(false);
            std::time::Instant::now()
        });
        let overdue = since.elapsed() >= STOP_LIMIT;
        if count >= 2 || overdue {
            if overdue {
                eprintln!(
                    "reapcheck: still running {} s after {}: cancelling its statements and exiting",
                    STOP_LIMIT.as_secs(),
                    interrupted().unwrap_or("the signal")
                );
            }
            crate::backend::cancel_in_flight(true);
            crate::backend::settle_cancels(SECOND_SIGNAL_LIMIT);
            // SAFETY: ends the process without running destructors, as
            // the signal's default action would.
            unsafe { libc::_exit(i32::from(EXIT_INTERRUPTED)) }
        }
    }
}

/// The exit code of a command that stopped on a signal,
/// [`EXIT_INTERRUPTED`], once the cancels it asked for were sent (at most
/// 5 s, `crate::backend`'s cancel limit): no statement it gave up outlives
/// the process by more than the server takes to act on the cancel.
pub fn exit_code() -> u8 {
    crate::backend::settle_cancels(Duration::from_secs(5));
    EXIT_INTERRUPTED
}

/// The signal that interrupted the run (`SIGINT`, `SIGTERM`, `SIGHUP`),
/// if one did.
pub fn interrupted() -> Option<&'static str> {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        #[cfg(unix)]
        libc::SIGTERM => Some("SIGTERM"),
        #[cfg(unix)]
        libc::SIGHUP => Some("SIGHUP"),
        _ => Some("SIGINT"),
    }
}

/// Resolves once the run is interrupted (polled every 20 ms); never
/// otherwise.
pub async fn wait() -> &'static str {
    loop {
        if let Some(signal) = interrupted() {
            return signal;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
