//! `reapcheck explain SCENARIO --db adapter:<name>`: the model's reasoning
//! under the adapter's declared policy, step by step, interleaved with the
//! requests reapcheck sent the adapter and its replies for each step, and a
//! `!!` marker with the difference at the first state read back where the
//! adapter and the model part (docs/adapter-protocol.md).

use std::process::ExitCode;

use reapcheck::adapter::target::{AdapterTarget, Transcript};
use reapcheck::config::ADAPTER_PREFIX;
use reapcheck::diff;
use reapcheck::driver;
use reapcheck::model::Model;
use reapcheck::resolution::Resolved;
use reapcheck::runner::{self, Verdict};
use reapcheck::scenario::LoadedScenario;
use reapcheck::trace::{Parting, parting};

use super::inputs::report;
use super::{EXIT_FAILED, EXIT_INVALID, Inputs};

/// Explains `loaded` through the adapter `name` (without `adapter:`) of
/// the project's reapcheck.toml. Exit 0 when it agrees with the model (or
/// is skipped, with the reason), 1 when it parts or cannot start, 2 when
/// no such adapter is configured.
pub fn explain(loaded: &LoadedScenario, name: &str, inputs: &Inputs) -> ExitCode {
    let project = match inputs.project() {
        Ok(p) => p,
        Err(errors) => {
            report(&errors);
            return ExitCode::from(EXIT_INVALID);
        }
    };
    let Some(config) = project.adapter(name).cloned() else {
        let known: Vec<String> = project.adapters().iter().map(|a| a.target_name()).collect();
        let known = if known.is_empty() { "none".to_owned() } else { known.join(", ") };
        eprintln!(
            "error: no `[adapters.{name}]` in reapcheck.toml (configured: {known}); docs/adapter-protocol.md, \
             \"Configuring an adapter target\", shows how"
        );
        return ExitCode::from(EXIT_INVALID);
    };
    let target_name = format!("{ADAPTER_PREFIX}{name}");
    let s = &loaded.scenario;
    println!("{}: {}", loaded.path.display(), s.description.trim());
    println!("clock starts at {}; app heartbeat_grace {}s; {} schema", s.now, s.settings.heartbeat_grace, s.schema);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a runtime starts");
    runtime.block_on(async {
        let mut target = match AdapterTarget::open(&config, &project.root).await {
            Ok(t) => t,
            Err(reason) => {
                println!("FAIL     {target_name} not run: {reason}");
                return ExitCode::from(EXIT_FAILED);
            }
        };
        let profile = target.profile().cloned().unwrap_or_default();
        println!("{target_name} is {}", target.label());
        println!("policy in effect (the adapter's handshake): {}", profile.policy);
        let mut notes = Vec::new();
        let mut model = Resolved::new(Model::under(s.schema, &profile.policy), profile.time_resolution);
        let outcome = driver::run_under(s, &profile.policy, &mut model, Some(&mut notes), None)
            .await
            .expect("the model never fails");
        let reference = runner::check_model(loaded).await;
        let run = target.check(loaded, Some(&reference)).await;
        let label = target.label().to_owned();
        target.close().await;
        if let Verdict::Skipped(reason) = &run.verdict {
            println!("skipped: {} on {target_name}: {reason}", loaded.name);
            return ExitCode::SUCCESS;
        }
        let t = &run.transcript;
        let failed = run.verdict.is_failure();
        let parted = parting(&t.model_states, &t.states, failed && t.states.len() < t.model_states.len());
        interleave(loaded, &target_name, &notes, t, &parted);
        println!("outcome on the model under this policy (instants relative to the final clock):");
        print!("{}", outcome.to_yaml());
        match &run.verdict {
            Verdict::Fail(detail) => {
                println!("FAIL     {target_name} ({label}) parts from the model:");
                // The verdict's own trace repeats what is shown above.
                detail.lines().take_while(|l| !l.starts_with("the requests and replies")).for_each(|l| {
                    println!("    {l}");
                });
                ExitCode::from(EXIT_FAILED)
            }
            _ => {
                println!("{target_name} ({label}) agrees with the model at every step");
                ExitCode::SUCCESS
            }
        }
    })
}

/// Prints setup's exchanges, then for each step the model's reasoning and
/// the exchanges of that step (its request, then the `read` after it),
/// with a `!!` marker where the states read back first part.
fn interleave(loaded: &LoadedScenario, target: &str, notes: &[String], t: &Transcript, parted: &Parting) {
    let exchanges = t.exchanges();
    let show = |from: usize, to: usize| {
        for e in exchanges.get(from..to.min(exchanges.len())).unwrap_or_default() {
            println!("    > {}", e.request);
            println!("    < {}", e.reply.as_deref().unwrap_or("(no reply)"));
        }
    };
    println!("setup");
    show(0, t.marks.first().copied().unwrap_or(exchanges.len()));
    mark_parting(target, 0, parted, t);
    let mut groups = super::explain::split_steps(notes).into_iter();
    for index in 0..loaded.scenario.steps.len() {
        for line in groups.next().unwrap_or_default() {
            println!("{line}");
        }
        if let Some(&from) = t.marks.get(index) {
            show(from, t.marks.get(index + 1).copied().unwrap_or(exchanges.len()));
        }
        mark_parting(target, index + 1, parted, t);
    }
}

fn mark_parting(target: &str, checkpoint: usize, parted: &Parting, t: &Transcript) {
    let here = match parted {
        Parting::Setup => checkpoint == 0,
        Parting::Step(i) => checkpoint == i + 1,
        _ => false,
    };
    if here
        && let (Some(m), Some(ours)) = (t.model_states.get(checkpoint), t.states.get(checkpoint))
        && let Some(d) = diff::render("model", m, target, ours)
    {
        println!("  !! {target} and the model part here; state now (instants relative to the clock):");
        d.lines().for_each(|l| println!("    {l}"));
    }
}
