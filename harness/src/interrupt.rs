//! Ctrl-C and SIGTERM during `reapcheck run`: the first one asks the run to
//! stop (no new scenario starts, the runs in flight are abandoned and their
//! namespaces dropped, the reports are written marked incomplete, the
//! summary is printed, exit 130); a second one ends the process at once
//! with 130.
//!
//! The handler only stores the signal's number (an atomic store is
//! async-signal-safe); the run polls [`interrupted`]. It is installed by
//! libc's `signal` rather than tokio's, whose `signal` feature would
//! rebuild tokio and sqlx for one flag. Without [`install`] (every other
//! command, and off Unix) the signals keep their default action.

use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

/// The exit code of an interrupted run: 128 + SIGINT, as shells report it.
pub const EXIT_INTERRUPTED: u8 = 130;

/// The first signal received, or 0.
static SIGNAL: AtomicI32 = AtomicI32::new(0);

/// Asks the run to stop on SIGINT and SIGTERM.
pub fn install() {
    #[cfg(unix)]
    {
        let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        // SAFETY: the handler only does an atomic swap and `_exit`, both
        // async-signal-safe.
        unsafe {
            libc::signal(libc::SIGINT, handler);
            libc::signal(libc::SIGTERM, handler);
        }
    }
}

#[cfg(unix)]
extern "C" fn on_signal(signal: libc::c_int) {
    if SIGNAL.swap(signal, Ordering::SeqCst) != 0 {
        // SAFETY: `_exit` is async-signal-safe; a second signal means now.
        unsafe { libc::_exit(i32::from(EXIT_INTERRUPTED)) }
    }
}

/// The signal that interrupted the run (`SIGINT`, `SIGTERM`), if one did.
pub fn interrupted() -> Option<&'static str> {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        #[cfg(unix)]
        libc::SIGTERM => Some("SIGTERM"),
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
