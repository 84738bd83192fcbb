//! `reapcheck explain FILE`: the model's reasoning, step by step.

use std::path::PathBuf;
use std::process::ExitCode;

use reapcheck::driver;
use reapcheck::model::Model;
use reapcheck::scenario::parse_file;

use super::EXIT_INVALID;
use super::inputs::report;

/// Arguments of `explain`.
#[derive(clap::Args, Debug)]
pub struct ExplainArgs {
    /// The scenario file.
    file: PathBuf,
}

/// Plays the scenario on the model and prints each step, each reaper
/// candidate's last_seen, has_beat, grace, window, cutoff and decision, and
/// the outcome.
pub fn explain(args: ExplainArgs) -> ExitCode {
    let name = args.file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let loaded = match parse_file(&name, &args.file) {
        Ok(s) => s,
        Err(errors) => {
            report(&errors);
            return ExitCode::from(EXIT_INVALID);
        }
    };
    let s = &loaded.scenario;
    println!("{}: {}", args.file.display(), s.description.trim());
    println!("clock starts at {}; app heartbeat_grace {}s; {} schema", s.now, s.settings.heartbeat_grace, s.schema);
    let mut trace = Vec::new();
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a runtime starts");
    let outcome =
        runtime.block_on(driver::run(s, &mut Model::new(s.schema), Some(&mut trace))).expect("the model never fails");
    for line in trace {
        println!("{line}");
    }
    println!("outcome (instants relative to the final clock):");
    print!("{}", outcome.to_yaml());
    ExitCode::SUCCESS
}
