//! `reapcheck explain SCENARIO [--db TARGET]`: the model's reasoning, step
//! by step; with `--db`, interleaved with the SQL the target actually ran
//! for each step and the first step where the two part. An adapter target
//! (`--db adapter:<name>`) is explained by [`super::explain_adapter`].

use std::path::PathBuf;
use std::process::ExitCode;

use reapcheck::diff;
use reapcheck::driver::{self, Checkpoints};
use reapcheck::engine::Phase;
use reapcheck::model::Model;
use reapcheck::reach::{self, Reach};
use reapcheck::resolution::Resolved;
use reapcheck::runner;
use reapcheck::scenario::{LoadedScenario, parse_file};
use reapcheck::target::Target;
use reapcheck::trace::{Parting, documents, parting};

use super::inputs::report;
use super::{EXIT_FAILED, EXIT_INVALID, Inputs};

/// Arguments of `explain`.
#[derive(clap::Args, Debug)]
pub struct ExplainArgs {
    #[command(flatten)]
    statement_timeout: super::limits::StatementTimeout,
    /// A scenario file, or a scenario name as `run` takes it
    /// (`grace/recent-beat`, or a part of one that names a single scenario).
    scenario: String,
    /// Also run the scenario on this target and show, under each step, the
    /// statements it ran (name, file:line, bound values, result), or for
    /// `adapter:<name>` the requests and replies.
    #[arg(long, value_name = "TARGET")]
    db: Option<String>,
    #[command(flatten)]
    inputs: Inputs,
}

/// Plays the scenario on the model and prints each step, each reaper
/// candidate's last_seen, has_beat, grace, window, cutoff and decision, and
/// the outcome; with `--db`, the target's SQL under each step. Exit 0, or 1
/// when the target parts from the model, 2 on invalid input.
pub fn explain(args: ExplainArgs) -> ExitCode {
    args.statement_timeout.apply();
    let loaded = match find(&args) {
        Ok(s) => s,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(EXIT_INVALID);
        }
    };
    if let Some(name) = args.db.as_deref().and_then(|t| t.strip_prefix(reapcheck::config::ADAPTER_PREFIX)) {
        return super::explain_adapter::explain(&loaded, name, &args.inputs);
    }
    let target = match args.db.as_deref().map(|t| {
        Target::from_name(t)
            .ok_or_else(|| format!("unknown target `{t}` in --db: the targets are {}", reach::target_names()))
    }) {
        None => None,
        Some(Ok(t)) => Some(t),
        Some(Err(e)) => {
            eprintln!("error: {e}");
            return ExitCode::from(EXIT_INVALID);
        }
    };
    let dialect = match target.map(|t| args.inputs.dialects(&[t.dialect()])) {
        None => None,
        Some(Ok(mut d)) => d.pop(),
        Some(Err(errors)) => {
            report(&errors);
            return ExitCode::from(EXIT_INVALID);
        }
    };
    let s = &loaded.scenario;
    println!("{}: {}", loaded.path.display(), s.description.trim());
    println!("clock starts at {}; app heartbeat_grace {}s; {} schema", s.now, s.settings.heartbeat_grace, s.schema);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a runtime starts");
    let mut notes = Vec::new();
    let mut model_states = Checkpoints::new();
    // The step-by-step states are compared only with a target's: without
    // one, none is kept (they are the scenario's rows once per step).
    let keep_states = target.is_some().then_some(&mut model_states);
    let resolution = dialect.as_ref().map(|d| d.profile.time_resolution).unwrap_or_default();
    // The target's policy decides, as its queue's code would (docs/policy.md).
    let policy = dialect.as_ref().map(|d| d.profile.policy.clone()).unwrap_or_default();
    println!("policy in effect: {policy}");
    let mut model = Resolved::new(Model::under(s.schema, &policy), resolution);
    let outcome = runtime
        .block_on(driver::run_under(s, &policy, &mut model, Some(&mut notes), keep_states))
        .expect("the model never fails");
    let (Some(target), Some(dialect)) = (target, dialect) else {
        notes.iter().for_each(|line| println!("{line}"));
        println!("outcome (instants relative to the final clock):");
        print!("{}", outcome.to_yaml());
        return ExitCode::SUCCESS;
    };
    if let Some(reason) = runner::absent_feature(&loaded, &dialect, &outcome) {
        println!("skipped: {} on {target}: {reason}", loaded.name);
        return ExitCode::SUCCESS;
    }
    runtime.block_on(async {
        let (server, _container) = match reach::reach(target).await {
            Reach::Ready(server, keep) => (server, keep),
            Reach::Skipped(reason) | Reach::Unreachable(reason) => {
                println!("FAIL     {target} not run: {reason}");
                return ExitCode::from(EXIT_FAILED);
            }
        };
        let mut states = Checkpoints::new();
        let run = runner::run_logged(&server, &dialect, &loaded, Some(&mut states)).await;
        let version = server.version().to_owned();
        server.close().await;
        let (model_states, states) = (documents(&model_states, &dialect.profile), documents(&states, &dialect.profile));
        let parted = parting(&model_states, &states, run.outcome.is_err());
        interleave(&loaded, target, &notes, &run.log, &parted, &model_states, &states);
        println!("outcome on the model (instants relative to the final clock):");
        print!("{}", outcome.to_yaml());
        match (&run.outcome, parted) {
            (Ok(_), Parting::Never) => {
                println!("{target} [{}] agrees with the model at every step", version);
                ExitCode::SUCCESS
            }
            (Err(e), _) => {
                println!("{target} [{}] failed: {e}", version);
                ExitCode::from(EXIT_FAILED)
            }
            (Ok(_), _) => {
                println!("{target} [{}] parts from the model (see `!!` above)", version);
                ExitCode::from(EXIT_FAILED)
            }
        }
    })
}

/// The scenario named by the argument: an existing file, else the scenario
/// whose name equals it, else the only one whose name contains it.
fn find(args: &ExplainArgs) -> Result<LoadedScenario, String> {
    let as_path = PathBuf::from(&args.scenario);
    if as_path.is_file() {
        let name = as_path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        return parse_file(&name, &as_path)
            .map_err(|errors| errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("\nerror: "));
    }
    let all = args.inputs.scenarios(&[], false).map_err(|errors| errors.join("\nerror: "))?;
    if let Some(exact) = all.iter().find(|s| s.name == args.scenario) {
        return Ok(exact.clone());
    }
    let mut matching: Vec<_> = all.into_iter().filter(|s| s.name.contains(&args.scenario)).collect();
    match matching.len() {
        1 => Ok(matching.remove(0)),
        0 => Err(format!(
            "no scenario file or name `{}` in {}: give a path to a .yaml file or a scenario name as `run` lists it",
            args.scenario,
            args.inputs.scenarios_shown()
        )),
        _ => Err(format!(
            "`{}` names {} scenarios ({}): give the whole name",
            args.scenario,
            matching.len(),
            matching.iter().map(|s| s.name.as_str()).take(8).collect::<Vec<_>>().join(", ")
        )),
    }
}

/// Prints setup's statements, then for each step the model's reasoning, the
/// target's statements, and a `!!` marker with the difference where the
/// step-by-step states part.
fn interleave(
    loaded: &LoadedScenario,
    target: Target,
    notes: &[String],
    log: &[reapcheck::statement_log::Executed],
    parted: &Parting,
    model: &[String],
    states: &[String],
) {
    let steps = loaded.scenario.steps.len();
    let (grouped, _) = by_step(log, steps);
    let show = |entries: &[&reapcheck::statement_log::Executed], clock| {
        for e in entries.iter().chain(&grouped.failed_teardown) {
            println!("    sql on {target}: {}", e.render(clock));
        }
    };
    println!("setup");
    show(&grouped.setup, Some(loaded.scenario.now));
    mark_parting(target, 0, parted, model, states);
    let mut groups = split_steps(notes).into_iter();
    for (index, entries) in grouped.steps.iter().enumerate() {
        for line in groups.next().unwrap_or_default() {
            println!("{line}");
        }
        let now = entries.iter().find_map(|e| match e.phase {
            Phase::Step { now, .. } => Some(now),
            _ => None,
        });
        show(entries, now);
        mark_parting(target, index + 1, parted, model, states);
    }
}

/// A target's statement log cut by phase, for [`interleave`].
struct ByStep<'a> {
    /// Setup's statements.
    setup: Vec<&'a reapcheck::statement_log::Executed>,
    /// Each step's statements, one list per step of the scenario.
    steps: Vec<Vec<&'a reapcheck::statement_log::Executed>>,
    /// Teardown statements that failed (shown under every phase).
    failed_teardown: Vec<&'a reapcheck::statement_log::Executed>,
}

/// `log` cut by phase in one pass, and how many entries were examined
/// (the log's length: `explain` stays linear in the steps).
fn by_step(log: &[reapcheck::statement_log::Executed], steps: usize) -> (ByStep<'_>, usize) {
    let mut grouped = ByStep { setup: Vec::new(), steps: vec![Vec::new(); steps], failed_teardown: Vec::new() };
    let mut examined = 0;
    for e in log {
        examined += 1;
        match e.phase {
            Phase::Setup => grouped.setup.push(e),
            Phase::Step { index, .. } if index < steps => grouped.steps[index].push(e),
            Phase::Teardown if e.failed() => grouped.failed_teardown.push(e),
            _ => {}
        }
    }
    (grouped, examined)
}

fn mark_parting(target: Target, checkpoint: usize, parted: &Parting, model: &[String], states: &[String]) {
    let here = match parted {
        Parting::Setup => checkpoint == 0,
        Parting::Step(i) => checkpoint == i + 1,
        _ => false,
    };
    if here
        && let (Some(m), Some(t)) = (model.get(checkpoint), states.get(checkpoint))
        && let Some(d) = diff::render("model", m, target.name(), t)
    {
        println!("  !! {target} and the model part here; state now (instants relative to the clock):");
        d.lines().for_each(|l| println!("    {l}"));
    }
}

/// The model's notes, one group per step (each begins with `@ `).
pub(super) fn split_steps(notes: &[String]) -> Vec<Vec<String>> {
    let mut groups: Vec<Vec<String>> = Vec::new();
    for line in notes {
        if line.starts_with("@ ") || groups.is_empty() {
            groups.push(Vec::new());
        }
        groups.last_mut().expect("pushed").push(line.clone());
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;
    use reapcheck::statement_log::{Executed, Returned};
    use reapcheck::time::Instant;

    #[test]
    fn cutting_the_log_by_step_examines_each_entry_once() {
        let steps = 20_000;
        let entry = |phase| Executed {
            phase,
            statement: "reap_scan".to_owned(),
            origin: "sqlite/reaper.sql:1".to_owned(),
            binds: Vec::new(),
            returned: Returned::Changed(1),
        };
        let mut log = vec![entry(Phase::Setup)];
        for index in 0..steps {
            let now = Instant::MIN;
            log.extend([
                entry(Phase::Step { index, now }),
                entry(Phase::Step { index, now }),
                entry(Phase::Checkpoint),
            ]);
        }
        log.push(entry(Phase::ReadBack));
        let (grouped, examined) = by_step(&log, steps);
        assert_eq!(examined, log.len(), "one pass over the log, not one per step");
        assert_eq!((grouped.setup.len(), grouped.steps.len()), (1, steps));
        assert!(grouped.steps.iter().all(|s| s.len() == 2));
    }
}
