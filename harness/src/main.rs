//! The `reapcheck` command line.

mod cli;

fn main() -> std::process::ExitCode {
    restore_sigpipe();
    reapcheck::redact::install_panic_hook();
    cli::main()
}

/// Rust ignores SIGPIPE, so printing to a closed pipe (`reapcheck run |
/// head`) would panic; with the default action the process ends quietly,
/// as command-line tools do.
#[cfg(unix)]
fn restore_sigpipe() {
    // SAFETY: called first in `main`, before any other thread exists;
    // SIG_DFL is a valid action for SIGPIPE.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

#[cfg(not(unix))]
fn restore_sigpipe() {}
