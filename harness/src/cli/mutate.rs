//! `reapcheck mutate`: runs the whole corpus against each known-bad edit of
//! each target's SQL; a mutant is killed when at least one scenario's
//! outcome differs from the model's (or the run errs).

use std::process::ExitCode;

use futures_util::{StreamExt, stream};

use reapcheck::backend::Server;
use reapcheck::dialect::Dialect;
use reapcheck::mutate::{MUTANTS, Mutant, apply};
use reapcheck::reach::{self, Reach};
use reapcheck::runner::{self, ModelRun};
use reapcheck::scenario::LoadedScenario;
use reapcheck::snapshot;
use reapcheck::target::Target;

use super::inputs::report;
use super::run::parse_targets;
use super::{EXIT_FAILED, EXIT_INVALID, Inputs};

/// Scenario runs in flight at once on one target.
const CONCURRENT_RUNS: usize = 4;

/// Arguments of `mutate`.
#[derive(clap::Args, Debug)]
pub struct MutateArgs {
    /// Targets, comma-separated, or `all`.
    #[arg(long, default_value = "sqlite")]
    db: String,
    #[command(flatten)]
    inputs: Inputs,
}

/// Runs the mutation self-test; exit 1 when a mutant survives or a target
/// cannot run, 2 on invalid input or a mutant that does not apply.
pub fn mutate(args: MutateArgs) -> ExitCode {
    let targets = match parse_targets(&args.db) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(EXIT_INVALID);
        }
    };
    let scenarios = match args.inputs.scenarios(&[], false) {
        Ok(s) => s,
        Err(errors) => {
            report(&errors);
            return ExitCode::from(EXIT_INVALID);
        }
    };
    let names: Vec<&str> = targets.iter().map(|t| t.dialect()).collect();
    let dialects = match args.inputs.dialects(&names) {
        Ok(d) => d,
        Err(errors) => {
            report(&errors);
            return ExitCode::from(EXIT_INVALID);
        }
    };
    let mut invalid = Vec::new();
    for d in &dialects {
        for m in MUTANTS {
            if let Err(e) = apply(d, m) {
                invalid.push(e);
            }
        }
    }
    if !invalid.is_empty() {
        report(&invalid);
        return ExitCode::from(EXIT_INVALID);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a runtime starts");
    let ok = runtime.block_on(async {
        let mut models = Vec::new();
        for s in &scenarios {
            models.push(runner::check_model(s).await);
        }
        let mut ok = true;
        for &target in &targets {
            let dialect = dialects.iter().find(|d| d.name == target.dialect()).expect("loaded");
            ok &= mutate_target(target, dialect, &scenarios, &models).await;
        }
        ok
    });
    if ok { ExitCode::SUCCESS } else { ExitCode::from(EXIT_FAILED) }
}

async fn mutate_target(target: Target, dialect: &Dialect, scenarios: &[LoadedScenario], models: &[ModelRun]) -> bool {
    let (server, _container) = match reach::reach(target).await {
        Reach::Ready(s, keep) => (s, keep),
        Reach::Skipped(reason) | Reach::Unreachable(reason) => {
            println!("{target}: not run: {reason}");
            return false;
        }
    };
    println!("{target} [{}]: {} mutants x {} scenarios", server.version(), MUTANTS.len(), scenarios.len());
    let baseline = killers(target, &server, dialect, scenarios, models).await;
    if !baseline.is_empty() {
        println!("  the unmutated SQL already fails {}: fix it before mutating", baseline.join(", "));
        return false;
    }
    let mut killed = 0;
    for m in MUTANTS {
        let mutated = apply(dialect, m).expect("checked before running");
        let by = killers(target, &server, &mutated, scenarios, models).await;
        print_mutant(m, &by);
        killed += usize::from(!by.is_empty());
    }
    let score = killed * 100 / MUTANTS.len();
    println!("{target}: mutation score {score}% ({killed}/{} killed)", MUTANTS.len());
    server.close().await;
    killed == MUTANTS.len()
}

fn print_mutant(m: &Mutant, by: &[String]) {
    if by.is_empty() {
        println!("  SURVIVED {}: {}", m.id, m.bug);
    } else {
        println!("  killed   {}: {} (by {})", m.id, m.bug, by.join(", "));
    }
}

/// The scenarios whose outcome on `dialect` differs from the model's, run
/// a few at a time (each in its own namespace).
async fn killers(
    target: Target,
    server: &Server,
    dialect: &Dialect,
    scenarios: &[LoadedScenario],
    models: &[ModelRun],
) -> Vec<String> {
    let runs = scenarios
        .iter()
        .zip(models)
        .filter(|(s, _)| !s.scenario.divergence.keys().any(|t| t.as_str() == target.name()))
        .map(|(s, model)| async move {
            let differs = match runner::run_on(server, dialect, s).await {
                Ok(outcome) => snapshot::normalize(&outcome.to_yaml()) != model.yaml,
                Err(_) => true,
            };
            differs.then(|| s.name.clone())
        });
    stream::iter(runs).buffered(CONCURRENT_RUNS).filter_map(|k| async move { k }).collect().await
}
