//! `reapcheck list`: the scenarios of every set the project runs, one per
//! line with the file it comes from (`builtin:/…` for the corpus inside
//! reapcheck), or with `--print`, each file's text, so that a builtin
//! scenario can be read and copied without this repository.

use std::process::ExitCode;

use super::inputs::report;
use super::{EXIT_INVALID, Inputs};

/// Arguments of `list`.
#[derive(clap::Args, Debug)]
pub struct ListArgs {
    #[command(flatten)]
    inputs: Inputs,
    /// Filters match whole scenario names instead of parts of them.
    #[arg(long)]
    exact: bool,
    /// Print each listed scenario's file, after a `# <name> (<path>)` line,
    /// instead of its name and path.
    #[arg(long)]
    print: bool,
    /// Only scenarios whose name contains one of these.
    filters: Vec<String>,
}

/// Runs the command: exit 0 when at least one scenario is listed, 2 when
/// none matches or a set cannot be read (every problem printed).
pub fn list(args: ListArgs) -> ExitCode {
    let scenarios = match args.inputs.scenarios(&args.filters, args.exact) {
        Ok(s) => s,
        Err(errors) => {
            report(&errors);
            return ExitCode::from(EXIT_INVALID);
        }
    };
    if scenarios.is_empty() {
        eprintln!(
            "error: no scenario in {} matches {:?}: `reapcheck list` without filters lists them all",
            args.inputs.scenarios_shown(),
            args.filters
        );
        return ExitCode::from(EXIT_INVALID);
    }
    for s in &scenarios {
        if !args.print {
            println!("{}\t{}", s.name, s.path.display());
            continue;
        }
        let text = if reapcheck::corpus::is_builtin(&s.path) {
            reapcheck::corpus::read(&s.path).map(str::to_owned)
        } else {
            std::fs::read_to_string(&s.path).ok()
        };
        match text {
            Some(text) => {
                println!("# {} ({})", s.name, s.path.display());
                print!("{text}");
                if !text.ends_with('\n') {
                    println!();
                }
            }
            None => {
                eprintln!("error: {}: cannot read the file it was loaded from", s.path.display());
                return ExitCode::from(EXIT_INVALID);
            }
        }
    }
    ExitCode::SUCCESS
}
