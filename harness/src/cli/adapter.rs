//! `reapcheck adapter serve` (the reference adapter) and `reapcheck adapter
//! check -- CMD` (an adapter's replies against the protocol).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use reapcheck::adapter::protocol::Database;
use reapcheck::adapter::{check, serve};
use reapcheck::reach;
use reapcheck::target::Target;

use super::inputs::report;
use super::{EXIT_FAILED, EXIT_INVALID, Inputs, help};

/// Arguments of `adapter`.
#[derive(clap::Args, Debug)]
pub struct AdapterArgs {
    #[command(subcommand)]
    command: AdapterCommand,
}

#[derive(clap::Subcommand, Debug)]
enum AdapterCommand {
    /// The reference adapter: reapcheck's own driver and a dialect's SQL
    /// behind the adapter protocol, on stdin and stdout.
    #[command(after_help = help::ADAPTER_SERVE)]
    Serve(ServeArgs),
    /// Drive an adapter through a short fixed script and validate every
    /// reply it writes against the protocol.
    #[command(after_help = help::ADAPTER_CHECK)]
    Check(CheckArgs),
}

/// Arguments of `adapter serve`.
#[derive(clap::Args, Debug)]
struct ServeArgs {
    /// The target whose dialect runs: sqlite, postgres, mariadb, mysql,
    /// cockroach or mssql.
    #[arg(long, value_name = "TARGET")]
    db: String,
    /// Folder holding one sub-folder of SQL per dialect (`builtin`: the copy
    /// built into reapcheck) [default: from reapcheck.toml, else builtin].
    #[arg(long, value_name = "DIR")]
    dialects: Option<PathBuf>,
}

/// Arguments of `adapter check`.
#[derive(clap::Args, Debug)]
struct CheckArgs {
    /// Seconds each reply may take before the adapter is killed and the
    /// check fails (1 to 600).
    #[arg(long, value_name = "N", default_value_t = check::DEFAULT_TIMEOUT_SECONDS,
          value_parser = clap::value_parser!(u64).range(1..=600))]
    timeout_seconds: u64,
    /// The database the script's `setup` names: `sqlite` (its `database`
    /// is `null`: the adapter's own file or memory), or a server target
    /// (postgres, mariadb, ...), whose URL comes from
    /// `REAPCHECK_<TARGET>_URL`; its namespace is dropped afterwards.
    #[arg(long, value_name = "TARGET", default_value = "sqlite")]
    db: String,
    /// The adapter's command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    command: Vec<String>,
}

/// Runs `adapter serve` or `adapter check`.
pub fn adapter(args: AdapterArgs) -> ExitCode {
    match args.command {
        AdapterCommand::Serve(a) => serve_command(a),
        AdapterCommand::Check(a) => check_command(a),
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("the tokio runtime starts")
}

/// Serves stdin to stdout until stdin ends: exit 0, or 2 on invalid input
/// (the target, the dialect), 1 when stdout or stdin failed.
fn serve_command(args: ServeArgs) -> ExitCode {
    let Some(target) = Target::from_name(&args.db) else {
        eprintln!("error: unknown target `{}` in --db: the targets are {}", args.db, reach::target_names());
        return ExitCode::from(EXIT_INVALID);
    };
    let inputs = Inputs { scenarios: None, dialects: args.dialects };
    let dialect = match inputs.dialects(&[target.dialect()]) {
        Ok(mut d) => d.remove(0),
        Err(e) => {
            report(&e);
            return ExitCode::from(EXIT_INVALID);
        }
    };
    let reference = serve::Reference { target, dialect: &dialect };
    // One thread: a request's reply is all there is to do, and the event
    // loop on the thread that waits for it wakes it without a hand-over.
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("the tokio runtime starts");
    let served = runtime.block_on(async {
        let (input, output) = serve::standard_streams();
        serve::serve(&reference, tokio::io::BufReader::new(input), output).await
    });
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: adapter serve: {e}");
            ExitCode::from(EXIT_FAILED)
        }
    }
}

/// Checks the adapter: exit 0 when every reply holds, 1 at the first
/// violation (printed with its line).
fn check_command(args: CheckArgs) -> ExitCode {
    let shown = args.command.join(" ");
    let timeout = Duration::from_secs(args.timeout_seconds);
    let Some(target) = Target::from_name(&args.db) else {
        eprintln!("error: unknown target `{}` in --db: the targets are {}", args.db, reach::target_names());
        return ExitCode::from(EXIT_INVALID);
    };
    let database = if target == Target::Sqlite {
        None
    } else {
        let variable = target.url_variable();
        match std::env::var(&variable).ok().filter(|u| !u.trim().is_empty()) {
            Some(url) => Some(Database { target: target.name().to_owned(), url }),
            None => {
                eprintln!("error: --db {target} needs {variable}: set it to the URL of the database to check on");
                return ExitCode::from(EXIT_INVALID);
            }
        }
    };
    let namespace = reapcheck::namespace::fresh();
    let (checked, dropped) = runtime().block_on(async {
        let mut out = std::io::stdout();
        let checked = check::check(&args.command, timeout, &namespace, database, &mut out).await;
        // Whatever the adapter did or did not drop, nothing is left behind.
        let dropped = match target {
            Target::Sqlite => Ok(()),
            _ => reapcheck::adapter::target::drop_namespace_on(target, &namespace).await,
        };
        (checked, dropped)
    });
    if let Err(e) = &dropped {
        eprintln!("warning: the check's namespace {namespace} on {target} was not dropped: {e}");
    }
    match checked {
        Ok(()) => {
            println!("ok: {shown}: every reply holds to the adapter protocol, version 1");
            ExitCode::SUCCESS
        }
        Err(violation) => {
            eprint!("{}", violation.render(&shown));
            ExitCode::from(EXIT_FAILED)
        }
    }
}
