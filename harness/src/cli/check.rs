//! `reapcheck check`: validate without running.
//!
//! An orphaned snapshot (its scenario deleted or renamed) is an error here,
//! exit 2: the claim it recorded is no longer checked by anything, and a
//! renamed scenario has lost its snapshot. `run` on the whole corpus warns
//! about the same files without changing its verdict ([`orphaned_snapshots`]).

use std::process::ExitCode;

use reapcheck::config::ScenarioSet;
use reapcheck::snapshot::{self, Orphan};

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
    for orphan in orphaned_snapshots(&args.inputs) {
        match orphan {
            Ok(orphan) => eprintln!("error: {orphan}"),
            Err(e) => eprintln!("error: {e}"),
        }
        invalid = true;
    }
    invalid |= outside_limits_or_empty(&args.inputs, &scenarios, &dialects);
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

/// Every orphaned snapshot in the scenario folders `inputs` selects
/// ([`snapshot::orphans`]), its paths relative to the current folder when
/// below it, or why a folder could not be searched. The
/// builtin set has none (its snapshots are built from its scenarios), and a
/// folder that does not exist is reported by the scenario loading instead.
pub(super) fn orphaned_snapshots(inputs: &Inputs) -> Vec<Result<Orphan, String>> {
    let Ok(sets) =
        inputs.project().and_then(|p| p.scenarios(inputs.scenarios.as_deref()).map_err(|e| vec![e.to_string()]))
    else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for set in &sets.value {
        let ScenarioSet::Folder(dir) = set else { continue };
        if !dir.is_dir() {
            continue;
        }
        match snapshot::orphans(dir) {
            Ok(orphans) => found.extend(orphans.into_iter().map(|o| Ok(relative(o)))),
            Err(e) => found.push(Err(format!(
                "cannot search {} for orphaned snapshots: {e}; make the folder readable",
                dir.display()
            ))),
        }
    }
    found
}

/// `orphan` with its paths relative to the current folder when they lie below it.
fn relative(orphan: Orphan) -> Orphan {
    let Ok(cwd) = std::env::current_dir() else { return orphan };
    let shorter = |p: std::path::PathBuf| p.strip_prefix(&cwd).map(std::path::Path::to_path_buf).unwrap_or(p);
    Orphan { snapshot: shorter(orphan.snapshot), scenario: shorter(orphan.scenario) }
}

/// Prints, as errors, an empty scenario selection (nothing would run, as
/// `run` says) and every scenario outside a target's limits
/// ([`reapcheck::scenario::outside_limits`], for every target whose dialect
/// loaded); true when there was any.
fn outside_limits_or_empty<E>(
    inputs: &Inputs,
    scenarios: &Result<Vec<reapcheck::scenario::LoadedScenario>, E>,
    dialects: &Result<Vec<reapcheck::dialect::Dialect>, E>,
) -> bool {
    let Ok(scenarios) = scenarios else { return false };
    if scenarios.is_empty() {
        eprintln!("error: no scenario in {}: nothing would run; add a .yaml file", inputs.scenarios_shown());
        return true;
    }
    let Ok(dialects) = dialects else { return false };
    let outside = reapcheck::scenario::outside_limits_of(scenarios, &reapcheck::target::Target::ALL, dialects);
    report(&outside);
    !outside.is_empty()
}
