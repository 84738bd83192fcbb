//! `--statement-timeout`, shared by every command that sends SQL to a
//! database target (`run`, `mutate`, `fuzz`, `race`, `bench`,
//! `explain --db`); see `reapcheck::deadline`.

use reapcheck::deadline;

/// The statement time limit of one command.
#[derive(clap::Args, Debug, Clone, Copy)]
pub struct StatementTimeout {
    /// Seconds one statement may run on a database target before it fails
    /// its scenario with `timed out after N s` and the statement's
    /// file:line (1 to 86400). The server enforces it where it can
    /// (PostgreSQL statement_timeout, MariaDB max_statement_time, MySQL
    /// max_execution_time for SELECTs only, SQLite a progress handler);
    /// the client gives a statement up 2 s later in any case, so a server
    /// that stops answering fails too.
    #[arg(
        id = "statement_timeout",
        long = "statement-timeout",
        value_name = "SECONDS",
        default_value_t = deadline::DEFAULT_SECONDS,
        value_parser = clap::value_parser!(u64).range(1..=deadline::MAX_SECONDS)
    )]
    pub seconds: u64,
}

impl StatementTimeout {
    /// Makes the limit the process's, before anything connects.
    pub fn apply(self) {
        deadline::set_seconds(self.seconds);
    }
}
