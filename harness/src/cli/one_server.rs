//! Reaching each target for the commands that hold one server per target
//! for the whole run (`fuzz`, `race`), and printing why one did not run.

use reapcheck::backend::Server;
use reapcheck::reach::{self, Keep, Reach};
use reapcheck::target::Target;

/// What became of a target.
pub enum Reached {
    /// Connected; keep the second field alive while the server is used.
    Ready(Server, Keep),
    /// Not configured and not required: `skipped: <target>: <reason>` was printed.
    Skipped,
    /// Unreachable, or required and not configured: `FAIL <target>` was printed.
    Failed,
}

/// Connects to `target` on `runtime`, printing the line for a skip or a
/// failure; a skip of a target in `required` is a failure.
pub fn reach(runtime: &tokio::runtime::Runtime, target: Target, required: &[Target]) -> Reached {
    match runtime.block_on(reach::reach(target)) {
        Reach::Ready(server, keep) => Reached::Ready(server, keep),
        Reach::Skipped(reason) if !required.contains(&target) => {
            println!("skipped: {target}: {reason}");
            Reached::Skipped
        }
        Reach::Skipped(reason) | Reach::Unreachable(reason) => {
            let why = if required.contains(&target) { " (required by REAPCHECK_REQUIRE)" } else { "" };
            println!("FAIL     {target}{why}: not run: {reason}");
            Reached::Failed
        }
    }
}

/// A seed from the clock and the process id, for runs without `--seed`.
pub fn random_seed() -> u64 {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    nanos ^ (u64::from(std::process::id()) << 32)
}
