//! `reapcheck check`: validate without running scenarios.
//!
//! Once everything is valid, each dialect's namespace scripts are proved
//! on each target that runs it and can be reached (SQLite always, the
//! others from `REAPCHECK_<TARGET>_URL`; `--offline` connects to none):
//! a namespace is made, entered, given the tables and dropped, and the
//! catalog must agree after each script ([`reapcheck::isolation::prove`]).
//! A script that fails or does not do its job fails `check` (exit 1) with
//! the script and its `file:line`; a target not reached is reported as not
//! checked, never as passing.
//!
//! An orphaned snapshot (its scenario deleted or renamed) is an error here,
//! exit 2: the claim it recorded is no longer checked by anything, and a
//! renamed scenario has lost its snapshot. `run` on the whole corpus warns
//! about the same files without changing its verdict ([`orphaned_snapshots`]).

use std::process::ExitCode;

use reapcheck::config::ScenarioSet;
use reapcheck::snapshot::{self, Orphan};

use reapcheck::dialect::Dialect;
use reapcheck::target::Target;

use super::inputs::report;
use super::{EXIT_FAILED, EXIT_INVALID, Inputs};

/// Arguments of `check`.
#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    #[command(flatten)]
    inputs: Inputs,
    /// Validate only: do not prove the namespace scripts on any target
    /// (not even embedded SQLite).
    #[arg(long)]
    offline: bool,
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
    if args.offline {
        return ExitCode::SUCCESS;
    }
    let loaded = dialects.unwrap_or_default();
    let Ok(runtime) = tokio::runtime::Builder::new_multi_thread().enable_all().build() else {
        eprintln!("error: the async runtime did not start: free some memory or threads and run again");
        return ExitCode::from(EXIT_FAILED);
    };
    let failed = runtime.block_on(prove_namespaces(&loaded));
    if failed > 0 {
        println!("{failed} namespace proofs failed: fix the scripts named above before running scenarios");
        return ExitCode::from(EXIT_FAILED);
    }
    ExitCode::SUCCESS
}

/// What [`prove_on`] found for one target.
enum Proved {
    /// The scripts did their job on the server of this version.
    Passed(String),
    /// A script failed or did not do its job, on the server of this version.
    Failed(String, String),
    /// The target was not reached: why.
    NotChecked(String),
}

/// Proves each of `dialects`' namespace scripts on every target that runs
/// it, one line per target; returns how many failed.
async fn prove_namespaces(dialects: &[Dialect]) -> usize {
    let mut failed = 0;
    for target in Target::ALL {
        let Some(dialect) = dialects.iter().find(|d| d.name == target.dialect()) else { continue };
        let what = format!("namespace scripts of {} on {target}", dialect.name);
        match prove_on(target, dialect).await {
            Proved::Passed(version) => {
                println!("{what} [{version}]: create_namespace, enter_namespace and drop_namespace do their job")
            }
            Proved::Failed(version, why) => {
                println!("FAIL {what} [{version}]: {why}");
                failed += 1;
            }
            Proved::NotChecked(why) => println!("not checked: {what}: {why}"),
        }
    }
    failed
}

/// Reaches `target` from its URL (SQLite: embedded) and proves `dialect`'s
/// namespace scripts on it. No container is started: `check` proves what
/// the environment names.
async fn prove_on(target: Target, dialect: &Dialect) -> Proved {
    let variable = target.url_variable();
    let url = match std::env::var(&variable) {
        _ if target == Target::Sqlite => String::new(),
        Ok(url) if !url.trim().is_empty() => url,
        _ => return Proved::NotChecked(format!("{variable} is not set")),
    };
    let server = match reapcheck::reach::connect(target, &url).await {
        Ok(server) => server,
        Err(e) => {
            let shown = reapcheck::redact::url(&url);
            return Proved::NotChecked(format!(
                "cannot reach {shown} (from {variable}): {}",
                reapcheck::redact::message(&e, &url)
            ));
        }
    };
    if let Some(why) = reapcheck::reach::wrong_server(target, server.version()) {
        server.close().await;
        return Proved::NotChecked(why);
    }
    let version = server.version().to_owned();
    let proved = reapcheck::isolation::prove(&server, dialect).await;
    server.close().await;
    match proved {
        Ok(()) => Proved::Passed(version),
        Err(e) => Proved::Failed(version, e.to_string()),
    }
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
