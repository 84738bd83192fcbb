//! `reapcheck check`: validate without running.

use std::process::ExitCode;

use super::inputs::report;
use super::{EXIT_INVALID, Inputs};

/// Arguments of `check`.
#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    #[command(flatten)]
    inputs: Inputs,
}

/// Validates every scenario and every dialect and prints each dialect's profile;
/// exit 2 if any is invalid.
pub fn check(args: CheckArgs) -> ExitCode {
    let scenarios = args.inputs.scenarios(&[], false);
    let names = match args.inputs.dialect_names() {
        Ok(n) => n,
        Err(e) => {
            report(&e);
            return ExitCode::from(EXIT_INVALID);
        }
    };
    let dialects = args.inputs.dialects(&names.iter().map(String::as_str).collect::<Vec<_>>());
    let mut invalid = false;
    // A folder no target reads (`mariadb/`, whose target runs `mysql`'s SQL)
    // would be "valid" and never run.
    for name in &names {
        let targets = reapcheck::target::Target::ALL;
        if targets.iter().any(|t| t.dialect() == name) {
            continue;
        }
        let hint = match targets.iter().find(|t| t.name() == name) {
            Some(t) => {
                format!("the {t} target runs the `{}` dialect, so rename the folder {}/", t.dialect(), t.dialect())
            }
            None => {
                let mut known: Vec<&str> = targets.iter().map(|t| t.dialect()).collect();
                known.dedup();
                format!("the dialects are {}", known.join(", "))
            }
        };
        eprintln!("error: {name}/ is a folder no target reads: {hint}");
        invalid = true;
    }
    if let Err(e) = &scenarios {
        report(e);
        invalid = true;
    }
    if let Err(e) = &dialects {
        report(e);
        invalid = true;
    }
    if let Ok(loaded) = &dialects
        && let Some(why) = reapcheck::policy::disagreement(loaded.iter().map(|d| (d.name.as_str(), &d.profile.policy)))
    {
        eprintln!("error: {why}");
        invalid = true;
    }
    if invalid {
        return ExitCode::from(EXIT_INVALID);
    }
    let count = scenarios.map(|s| s.len()).unwrap_or_default();
    println!("{count} scenarios and {} dialects ({}) are valid", names.len(), names.join(", "));
    for d in dialects.iter().flatten() {
        println!("profile of {}: {}", d.name, d.profile);
    }
    ExitCode::SUCCESS
}
