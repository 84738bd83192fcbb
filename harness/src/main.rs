//! The `reapcheck` command line.

mod cli;

/// mimalloc, not the system allocator: a run allocates and frees many small
/// values (YAML, JSON lines, SQL rows), and glibc's malloc was a fifth of
/// its CPU (the measurement is beside the dependency in Cargo.toml).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
