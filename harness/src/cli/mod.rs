//! Command-line parsing and the exit-code convention: 0 when nothing failed,
//! 1 when something failed, 2 on invalid input.

mod adapter;
mod at_once;
mod bench;
mod bench_compare;
mod check;
mod explain;
mod explain_adapter;
mod fuzz;
mod help;
mod init;
mod inputs;
mod limits;
mod list;
mod mutate;
mod one_server;
mod race;
mod run;
mod verdict;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Exit code: a scenario failed on the model or a target.
pub const EXIT_FAILED: u8 = 1;
/// Exit code: a scenario, dialect or argument is invalid; nothing ran.
pub const EXIT_INVALID: u8 = 2;

/// Conformance harness for the reapers of SQL-backed job queues.
#[derive(Parser, Debug)]
#[command(
    name = "reapcheck",
    version = reapcheck::VERSION,
    about,
    after_help = "Run `reapcheck <command> --help` for examples, environment variables and exit codes."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Where scenarios and dialects come from; unset, from `REAPCHECK_SCENARIOS`
/// and `REAPCHECK_DIALECTS`, then `reapcheck.toml` (see `config`).
#[derive(clap::Args, Debug, Clone)]
pub struct Inputs {
    /// Scenario sets, comma-separated: `builtin` (the corpus inside
    /// reapcheck) and/or folders of scenario files [default: from
    /// reapcheck.toml, else builtin].
    #[arg(long, value_name = "SETS")]
    pub scenarios: Option<String>,
    /// Folder holding one sub-folder of SQL per dialect (`builtin`: the copy
    /// built into reapcheck) [default: from reapcheck.toml, else builtin].
    #[arg(long, value_name = "DIR")]
    pub dialects: Option<PathBuf>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run scenarios on the model and on database targets.
    #[command(after_help = help::RUN)]
    Run(run::RunArgs),
    /// Validate every scenario and dialect without running anything.
    #[command(after_help = help::CHECK)]
    Check(check::CheckArgs),
    /// Show the model's reasoning for one scenario file, step by step.
    #[command(after_help = help::EXPLAIN)]
    Explain(explain::ExplainArgs),
    /// Run the corpus against known-bad edits of each target's SQL.
    #[command(after_help = help::MUTATE)]
    Mutate(mutate::MutateArgs),
    /// Measure the setup, run and teardown time of scenario runs per target.
    #[command(after_help = help::BENCH)]
    Bench(bench::BenchArgs),
    /// Differential property testing: generated scenarios on the model and
    /// each target; a difference is shrunk and saved as a scenario file.
    #[command(after_help = help::FUZZ)]
    Fuzz(fuzz::FuzzArgs),
    /// Merge CI legs' outcome files (`run --report`) into one matrix and
    /// fail on a missing or empty leg, another corpus, a failure, or an
    /// undeclared divergence between databases.
    #[command(after_help = help::VERDICT)]
    Verdict(verdict::VerdictArgs),
    /// Real concurrency on live servers: workers and reapers on their own
    /// connections for a bounded time, every operation checked.
    #[command(after_help = help::RACE)]
    Race(race::RaceArgs),
    /// Set reapcheck up in your repository: reapcheck.toml, dialect copies
    /// to port, an example regression and a CI workflow.
    #[command(after_help = help::INIT)]
    Init(init::InitArgs),
    /// Adapter mode's tools: the reference adapter (`serve`) and the
    /// protocol check of an adapter (`check`).
    Adapter(adapter::AdapterArgs),
    /// List the scenarios of every set with their files, or print them
    /// (`--print`), builtin ones included.
    #[command(after_help = help::LIST)]
    List(list::ListArgs),
}

/// Parses the arguments and runs the command.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Run(args) => run::run(args),
        Command::Check(args) => check::check(args),
        Command::Explain(args) => explain::explain(args),
        Command::Mutate(args) => mutate::mutate(args),
        Command::Bench(args) => bench::bench(args),
        Command::Fuzz(args) => fuzz::fuzz(args),
        Command::Verdict(args) => verdict::verdict(args),
        Command::Race(args) => race::race(args),
        Command::Init(args) => init::init(args),
        Command::Adapter(args) => adapter::adapter(args),
        Command::List(args) => list::list(args),
    }
}
