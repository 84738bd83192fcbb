//! The `reapcheck` command line.

mod cli;

fn main() -> std::process::ExitCode {
    restore_sigpipe();
    // Before anything can print: the URLs' secrets are hidden in every
    // output, even on a path that does not pass its URL to the redactor.
    reapcheck::redact::hide_environment_secrets();
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
