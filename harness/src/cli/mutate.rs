//! `reapcheck mutate`: runs the corpus against each mutant of each target's
//! SQL, the fourteen named ones and those generated from the syntax tree; a
//! mutant is killed by the first scenario whose outcome differs from the
//! model's (or whose run errs). A mutant runs only the scenarios whose
//! unmutated run executed a statement it changes ([`select`]), best killers
//! first, and stops at the first kill. Mutants run a few at a time, and the
//! targets run at once, each printing its report when it is done.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::Instant;

use futures_util::{StreamExt, stream};

use reapcheck::backend::Server;
use reapcheck::dialect::text::Grammar;
use reapcheck::dialect::{Dialect, read_extra};
use reapcheck::diff;
use reapcheck::mutate::equivalent::{self, EquivalentError};
use reapcheck::mutate::select;
use reapcheck::mutate::{Generation, MUTANTS, Mutant, MutantError, Operator, apply, generate};
use reapcheck::progress::Progress;
use reapcheck::reach::{self, Reach};
use reapcheck::runner::{self, ModelRun};
use reapcheck::scenario::LoadedScenario;
use reapcheck::target::Target;

use super::inputs::report;
use super::run::parse_targets;
use super::{EXIT_FAILED, EXIT_INVALID, Inputs};

/// Scenario runs in flight at once on one target (one per mutant, or per
/// scenario for the baseline).
const CONCURRENT_RUNS: usize = 4;

/// Arguments of `mutate`.
#[derive(clap::Args, Debug)]
pub struct MutateArgs {
    /// Targets, comma-separated, or `all`.
    #[arg(long, default_value = "sqlite")]
    db: String,
    /// List each generated mutant (id, operator, origin and the hash an
    /// equivalence declaration names its statement by) and run nothing.
    #[arg(long)]
    list: bool,
    #[command(flatten)]
    inputs: Inputs,
}

/// One dialect's mutants, ready to run.
struct Plan {
    dialect: Dialect,
    /// Named mutants that apply, with the dialect they make.
    named: Vec<(&'static Mutant, Dialect)>,
    /// Named mutants that do not apply (a port spelled differently).
    not_applicable: Vec<MutantError>,
    generation: Generation,
    /// Declared equivalent mutants: id -> reason.
    equivalent: BTreeMap<String, String>,
}

/// Runs the mutation self-test; exit 1 when a mutant survives, a declared
/// equivalent is killed or a target cannot run, 2 on invalid input
/// (including a stale equivalence declaration).
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
    // mysql and mariadb share a dialect: plan (and list) it once.
    let mut names: Vec<&str> = targets.iter().map(|t| t.dialect()).collect();
    names.sort_unstable();
    names.dedup();
    let dialects = match args.inputs.dialects(&names) {
        Ok(d) => d,
        Err(errors) => {
            report(&errors);
            return ExitCode::from(EXIT_INVALID);
        }
    };
    let mut plans = Vec::new();
    let mut invalid: Vec<String> = Vec::new();
    for d in dialects {
        match plan(&args.inputs, d, args.list) {
            Ok(p) => plans.push(p),
            Err(errors) => invalid.extend(errors),
        }
    }
    if !invalid.is_empty() {
        report(&invalid);
        return ExitCode::from(EXIT_INVALID);
    }
    if args.list {
        for p in &plans {
            list(p);
        }
        return ExitCode::SUCCESS;
    }
    let Ok(runtime) = tokio::runtime::Builder::new_multi_thread().enable_all().build() else {
        eprintln!("error: cannot start the async runtime");
        return ExitCode::from(EXIT_FAILED);
    };
    let ok = runtime.block_on(async {
        let mut models = Vec::new();
        for s in &scenarios {
            models.push(runner::check_model(s).await);
        }
        let started = Instant::now();
        let runs = targets.iter().filter_map(|&target| {
            let plan = plans.iter().find(|p| p.dialect.name == target.dialect())?;
            Some(mutate_target(target, plan, &scenarios, &models))
        });
        let reports = futures_util::future::join_all(runs).await;
        let mut ok = true;
        for (passed, text) in &reports {
            print!("{text}");
            ok &= passed;
        }
        println!(
            "mutate: {} target{} in {:.1} s",
            reports.len(),
            if reports.len() == 1 { "" } else { "s" },
            started.elapsed().as_secs_f64()
        );
        ok
    });
    if ok { ExitCode::SUCCESS } else { ExitCode::from(EXIT_FAILED) }
}

/// Prints one line per generated mutant of `plan`: statement hash, operator,
/// origin, id.
fn list(plan: &Plan) {
    for u in &plan.generation.unparsed {
        println!("{}: not generated: {} (`{}`): {}", plan.dialect.name, u.origin, u.statement, u.message);
    }
    for m in &plan.generation.mutants {
        let hash = equivalent::statement_hash(&m.before);
        let declared = if plan.equivalent.contains_key(&m.id) { " (declared equivalent)" } else { "" };
        println!("{}\t{hash}\t{}\t{}\t{}{declared}", plan.dialect.name, m.operator, m.origin, m.id);
    }
}

/// Applies the named mutants, generates the others and reads the
/// dialect's equivalence declarations. For `--list` (`listing`), a stale
/// declaration is a warning, since the listing is how its new id and hash
/// are found.
fn plan(inputs: &Inputs, dialect: Dialect, listing: bool) -> Result<Plan, Vec<String>> {
    let mut named = Vec::new();
    let mut not_applicable = Vec::new();
    for m in MUTANTS {
        match apply(&dialect, m) {
            Ok(d) => named.push((m, d)),
            Err(e) => not_applicable.push(e),
        }
    }
    let generation = generate(&dialect, Grammar::for_dialect(&dialect.name));
    let file = format!("{}/{}", dialect.name, equivalent::FILE);
    let source = inputs.dialect_source(&dialect.name).map_err(|e| vec![e])?;
    let text = read_extra(&source, &dialect.name, equivalent::FILE).map_err(|e| vec![e.to_string()])?;
    let equivalent = match equivalent::check(
        &file,
        text.as_deref().unwrap_or_default(),
        &generation.mutants,
        &generation.unparsed,
    ) {
        Ok(declared) => declared,
        Err(errors) if listing => {
            errors.iter().for_each(|e| eprintln!("warning: {e}"));
            Default::default()
        }
        Err(errors) => return Err(errors.iter().map(EquivalentError::to_string).collect()),
    };
    Ok(Plan { dialect, named, not_applicable, generation, equivalent })
}

/// What a run of one mutant found.
struct Verdict {
    /// The first scenario that killed it, if any.
    killer: Option<String>,
    /// How many scenarios it ran.
    runs: usize,
}

/// Mutates `target`'s SQL: returns whether every mutant was killed (and
/// no declared equivalent was) and the report, printed by the caller once
/// every target is done so that targets running at once do not interleave.
async fn mutate_target(
    target: Target,
    plan: &Plan,
    scenarios: &[LoadedScenario],
    models: &[ModelRun],
) -> (bool, String) {
    let mut out = String::new();
    let ok = mutate_into(&mut out, target, plan, scenarios, models).await;
    (ok, out)
}

async fn mutate_into(
    out: &mut String,
    target: Target,
    plan: &Plan,
    scenarios: &[LoadedScenario],
    models: &[ModelRun],
) -> bool {
    let (scenarios, models) = &under_profile(&plan.dialect, scenarios, models).await;
    let (scenarios, models) = (scenarios.as_slice(), models.as_slice());
    let (server, _container) = match reach::reach(target).await {
        Reach::Ready(s, keep) => (s, keep),
        Reach::Skipped(reason) | Reach::Unreachable(reason) => {
            let _ = writeln!(out, "{target}: not run: {reason}");
            return false;
        }
    };
    let started = Instant::now();
    let g = &plan.generation;
    let _ = writeln!(
        out,
        "{target} [{}]: {} named + {} generated mutants x {} scenarios",
        server.version(),
        plan.named.len(),
        g.mutants.len(),
        scenarios.len()
    );
    for e in &plan.not_applicable {
        let _ = writeln!(out, "  not applicable: {e}");
    }
    for u in &g.unparsed {
        let _ = writeln!(
            out,
            "  not generated: {} (`{}`): the parser cannot read it: {}",
            u.origin, u.statement, u.message
        );
    }
    let _ = writeln!(out, "  not mutated (scripts): {}", g.scripts.join(", "));
    if !g.never_run.is_empty() {
        let _ = writeln!(out, "  not mutated (the policy never runs them): {}", g.never_run.join(", "));
    }
    let mut executed = Vec::new();
    for (label, dialect) in [("unmutated SQL", &plan.dialect), ("SQL printed back by the parser", &g.round_trip)] {
        let base = baseline(target, &server, dialect, scenarios, models).await;
        if !base.failing.is_empty() {
            let _ = writeln!(out, "  the {label} already fails {}: fix it before mutating", base.failing.join(", "));
            server.close().await;
            return false;
        }
        executed.push(base.executed);
    }
    let (by_named, by_generated) = (&executed[0], &executed[1]);
    let order = KillOrder::new(scenarios.len());
    let order = &order;
    let progress = Progress::new((plan.named.len() + g.mutants.len()) as u64, &format!("mutate {target}"));
    let named = stream::iter(plan.named.iter().map(|(_, d)| {
        let candidates = select::select(&select::changed(&plan.dialect, d), by_named);
        first_killer(&server, d.clone(), candidates, scenarios, models, order)
    }))
    .buffered(CONCURRENT_RUNS)
    .inspect(|_| progress.inc(1))
    .collect::<Vec<_>>()
    .await;
    let generated = stream::iter(g.mutants.iter().map(|m| {
        let candidates = select::select(std::slice::from_ref(&m.statement), by_generated);
        first_killer(&server, m.apply(&g.round_trip), candidates, scenarios, models, order)
    }))
    .buffered(CONCURRENT_RUNS)
    .inspect(|_| progress.inc(1))
    .collect::<Vec<_>>()
    .await;
    drop(progress);
    server.close().await;
    let runs: usize = named.iter().chain(&generated).map(|v| v.runs).sum();
    let mut ok = true;
    for ((m, _), v) in plan.named.iter().zip(&named) {
        match &v.killer {
            Some(by) => {
                let _ = writeln!(out, "  killed   {}: {} (by {by})", m.id, m.bug);
            }
            None => {
                let _ = writeln!(out, "  SURVIVED {}: {}{}", m.id, m.bug, unseen(v));
                ok = false;
            }
        }
    }
    let mut table: BTreeMap<Operator, [usize; 4]> = BTreeMap::new();
    for (m, v) in g.mutants.iter().zip(&generated) {
        let row = table.entry(m.operator).or_default();
        row[0] += 1;
        match (plan.equivalent.get(&m.id), &v.killer) {
            (Some(_), None) => row[2] += 1,
            (Some(_), Some(by)) => {
                let _ = writeln!(
                    out,
                    "  KILLED BUT DECLARED EQUIVALENT {} ({}), by {by}: remove its declaration",
                    m.id, m.origin
                );
                ok = false;
            }
            (None, Some(_)) => row[1] += 1,
            (None, None) => {
                row[3] += 1;
                ok = false;
                let _ = writeln!(out, "  SURVIVED {} [{}] ({}){}", m.id, m.operator, m.origin, unseen(v));
                if let Some(d) = diff::render("original", &with_newline(&m.before), "mutant", &with_newline(&m.after)) {
                    for line in d.lines() {
                        let _ = writeln!(out, "    {line}");
                    }
                }
            }
        }
    }
    let named_killed = named.iter().filter(|v| v.killer.is_some()).count();
    let _ =
        writeln!(out, "  {:<16} {:>9} {:>7} {:>10} {:>8}", "operator", "generated", "killed", "equivalent", "survived");
    let _ = writeln!(
        out,
        "  {:<16} {:>9} {:>7} {:>10} {:>8}",
        "named",
        plan.named.len(),
        named_killed,
        0,
        plan.named.len() - named_killed
    );
    let mut total = [plan.named.len(), named_killed, 0, plan.named.len() - named_killed];
    for op in Operator::ALL {
        let row = table.get(&op).copied().unwrap_or_default();
        let _ = writeln!(out, "  {:<16} {:>9} {:>7} {:>10} {:>8}", op.name(), row[0], row[1], row[2], row[3]);
        for (t, r) in total.iter_mut().zip(row) {
            *t += r;
        }
    }
    let counted = total[0] - total[2];
    let score = (total[1] * 100).checked_div(counted).unwrap_or(100);
    let unparsed = match g.unparsed.len() {
        0 => String::new(),
        n => format!(
            "; {n} statement{} not mutated: the parser cannot read {}",
            if n == 1 { "" } else { "s" },
            if n == 1 { "it" } else { "them" }
        ),
    };
    let _ = writeln!(
        out,
        "{target}: mutation score {score}% ({}/{counted} killed, the {} named counted; {} generated, {} declared \
         equivalent{unparsed}) in {:.1} s, {runs} scenario runs",
        total[1],
        plan.named.len(),
        g.mutants.len(),
        total[2],
        started.elapsed().as_secs_f64()
    );
    ok && total[1] == counted
}

/// Why a surviving mutant ran nothing, if it did not.
fn unseen(v: &Verdict) -> &'static str {
    if v.runs == 0 { ": no scenario executes the statement it changes" } else { "" }
}

fn with_newline(sql: &str) -> String {
    format!("{sql}\n")
}

/// The scenarios `dialect` can run, with the model's outcome document as
/// targets are compared with it under the dialect's profile (as `run`
/// compares them): a scenario needing a feature the profile declares
/// absent is left out, and under a non-reference profile the model runs at
/// its time resolution with its relaxations.
async fn under_profile(
    dialect: &Dialect,
    scenarios: &[LoadedScenario],
    models: &[ModelRun],
) -> (Vec<LoadedScenario>, Vec<ModelRun>) {
    let mut kept = (Vec::new(), Vec::new());
    for (s, m) in scenarios.iter().zip(models) {
        if runner::absent_feature(s, dialect, &m.outcome).is_some() {
            continue;
        }
        let yaml = if dialect.profile.is_reference() {
            m.yaml.clone()
        } else {
            runner::model_document(&s.scenario, &dialect.profile).await
        };
        kept.0.push(s.clone());
        kept.1.push(ModelRun { yaml, ..m.clone() });
    }
    kept
}

/// Whether `scenario`'s outcome on `dialect` differs from the model's (a
/// run that errs differs), compared as `run` compares it.
async fn differs(server: &Server, dialect: &Dialect, scenario: &LoadedScenario, model: &ModelRun) -> bool {
    match runner::run_on(server, dialect, scenario).await {
        Ok(outcome) => runner::compared_document(outcome, &dialect.profile) != model.yaml,
        Err(_) => true,
    }
}

/// Whether `scenario` is compared with the model on `target` (a declared
/// divergence has its own outcome, not the model's).
fn compared(target: Target, scenario: &LoadedScenario) -> bool {
    !scenario.scenario.divergence.keys().any(|t| t.as_str() == target.name())
}

/// The unmutated SQL's run of the corpus.
struct Baseline {
    /// The scenarios whose outcome differs from the model's.
    failing: Vec<String>,
    /// Per scenario (by index), the statements its run executed; empty
    /// for a scenario not compared on the target.
    executed: Vec<BTreeSet<String>>,
}

/// Runs every compared scenario on `dialect`, a few at a time (each in a
/// namespace of its own), recording what each executed.
async fn baseline(
    target: Target,
    server: &Server,
    dialect: &Dialect,
    scenarios: &[LoadedScenario],
    models: &[ModelRun],
) -> Baseline {
    let runs = scenarios.iter().zip(models).map(|(s, model)| async move {
        if !compared(target, s) {
            return (None, BTreeSet::new());
        }
        let run = runner::run_logged(server, dialect, s, None).await;
        let differs = match run.outcome {
            Ok(outcome) => runner::compared_document(outcome, &dialect.profile) != model.yaml,
            Err(_) => true,
        };
        (differs.then(|| s.name.clone()), select::executed(&run.log))
    });
    let results: Vec<_> = stream::iter(runs).buffered(CONCURRENT_RUNS).collect().await;
    let (failing, executed): (Vec<_>, Vec<_>) = results.into_iter().unzip();
    Baseline { failing: failing.into_iter().flatten().collect(), executed }
}

/// The corpus order a mutant tries scenarios in: those that killed the
/// most mutants so far first, so a killed mutant usually stops after one
/// or two runs. Shared by the mutants in flight on one target.
struct KillOrder(Mutex<Vec<(usize, usize)>>);

impl KillOrder {
    fn new(scenarios: usize) -> KillOrder {
        KillOrder(Mutex::new((0..scenarios).map(|i| (0, i)).collect()))
    }

    /// `candidates` (scenario indices), best killers first.
    fn order(&self, candidates: &[usize]) -> Vec<usize> {
        let mut v = self.0.lock().map(|v| v.clone()).unwrap_or_default();
        v.retain(|(_, i)| candidates.contains(i));
        v.sort_by_key(|&(kills, i)| (std::cmp::Reverse(kills), i));
        v.into_iter().map(|(_, i)| i).collect()
    }

    fn killed_by(&self, index: usize) {
        if let Ok(mut v) = self.0.lock()
            && let Some(entry) = v.iter_mut().find(|(_, i)| *i == index)
        {
            entry.0 += 1;
        }
    }
}

/// The first of `candidates` (scenario indices: those that can see the
/// mutant, [`select`]) whose outcome on `dialect` differs from the
/// model's, best killers first; the rest are not run.
async fn first_killer(
    server: &Server,
    dialect: Dialect,
    candidates: Vec<usize>,
    scenarios: &[LoadedScenario],
    models: &[ModelRun],
    order: &KillOrder,
) -> Verdict {
    let mut runs = 0;
    for i in order.order(&candidates) {
        runs += 1;
        if differs(server, &dialect, &scenarios[i], &models[i]).await {
            order.killed_by(i);
            return Verdict { killer: Some(scenarios[i].name.clone()), runs };
        }
    }
    Verdict { killer: None, runs }
}
