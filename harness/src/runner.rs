//! Checking scenarios: the model against its snapshot and `expect`, and each
//! target against the model. The CLI and the test suite both decide
//! pass/fail here, so they cannot drift apart.

use std::panic::AssertUnwindSafe;
use std::time::{Duration, Instant};

use futures_util::FutureExt;

use crate::backend::{Connection, Server};
use crate::dialect::{Dialect, Profile};
use crate::diff;
use crate::driver;
use crate::engine::{EngineError, EngineErrorKind};
use crate::expect;
use crate::feature;
use crate::interrupt;
use crate::isolation;
use crate::model::Model;
use crate::namespace;
use crate::outcome::Outcome;
use crate::relax;
use crate::resolution::Resolved;
use crate::scenario::LoadedScenario;
use crate::snapshot;
use crate::sql::{SqlEngine, namespace_script};
use crate::statement_log::Executed;
use crate::target::Target;

/// The verdict on one scenario for the model or one target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Matches the snapshot (and, for a target, the model) and `expect`.
    Ok,
    /// Agrees with the model and `expect`, but no snapshot is committed yet.
    New,
    /// A declared divergence: matches its own snapshot; the reason given.
    Diverged(String),
    /// Did not run: why.
    Skipped(String),
    /// Failed: what differs, in words and diffs.
    Fail(String),
}

impl Verdict {
    /// True when this counts as a failure.
    pub fn is_failure(&self) -> bool {
        matches!(self, Verdict::Fail(_))
    }
}

/// The model's run of one scenario.
#[derive(Clone, Debug)]
pub struct ModelRun {
    /// What the model produced.
    pub outcome: Outcome,
    /// The outcome as snapshot text.
    pub yaml: String,
    /// The committed snapshot's text, if any.
    pub snapshot: Option<String>,
    /// The model's verdict.
    pub verdict: Verdict,
    /// The committed snapshot differs from the model's outcome and that is
    /// the only problem (`expect` holds): `run --accept --force` may
    /// replace it.
    pub stale: bool,
    /// The model's state after setup and after every step, when it was
    /// asked to record them ([`check_models`] for a run with an adapter
    /// target, whose checkpoints are compared with these); `None` otherwise.
    pub states: Option<driver::Checkpoints>,
}

/// Plays `scenario` on the reference model and checks it against the
/// scenario's `expect` and committed snapshot.
pub async fn check_model(scenario: &LoadedScenario) -> ModelRun {
    check_model_recording(scenario, false).await
}

/// [`check_model`], also recording the model's state after setup and after
/// every step in [`ModelRun::states`] when `states` is true (the reference
/// model's, what an adapter under the reference profile is compared with).
pub async fn check_model_recording(scenario: &LoadedScenario, states: bool) -> ModelRun {
    let mut model = Model::new(scenario.scenario.schema);
    let mut recorded = states.then(driver::Checkpoints::new);
    let outcome = match driver::run_with(&scenario.scenario, &mut model, None, recorded.as_mut()).await {
        Ok(outcome) => outcome,
        // Only a scenario `check` should have refused gets here (an instant
        // out of range): that scenario fails, the run goes on.
        Err(e) => {
            let verdict = Verdict::Fail(format!("the model cannot run this scenario: {e}"));
            return ModelRun {
                outcome: Outcome::default(),
                yaml: String::new(),
                snapshot: None,
                verdict,
                stale: false,
                states: None,
            };
        }
    };
    let yaml = snapshot::normalize(&outcome.to_yaml());
    let snapshot_path = snapshot::path(&scenario.path, None);
    let snapshot = match snapshot::read(&snapshot_path) {
        Ok(s) => s,
        Err(e) => {
            let verdict = Verdict::Fail(format!("cannot read {}: {e}", snapshot_path.display()));
            return ModelRun { outcome, yaml, snapshot: None, verdict, stale: false, states: recorded };
        }
    };
    let mut problems = expect_problems(scenario, &outcome);
    let expect_holds = problems.is_empty();
    let mut stale = false;
    if let Some(recorded) = &snapshot
        && let Some(d) = diff::render("snapshot", recorded, "model", &yaml)
    {
        stale = expect_holds;
        let replace = if crate::corpus::is_builtin(&scenario.path) {
            "the builtin corpus is part of reapcheck: report it, or copy the scenario into your own set".to_owned()
        } else if expect_holds {
            format!(
                "if the spec changed and the model is right, replace it: reapcheck run --accept --force --exact {}",
                scenario.name
            )
        } else {
            "fix the scenario's `expect` first".to_owned()
        };
        problems.push(format!("the model disagrees with {}; {replace}\n{d}", snapshot_path.display()));
    }
    let verdict = match (problems.is_empty(), snapshot.is_some()) {
        (false, _) => Verdict::Fail(problems.join("\n")),
        (true, true) => Verdict::Ok,
        (true, false) => Verdict::New,
    };
    ModelRun { outcome, yaml, snapshot, verdict, stale, states: recorded }
}

/// One scenario's [`check_model`] from [`check_models`].
pub struct ModelCheck {
    /// The model's run, or the payload of its panic.
    pub run: std::thread::Result<ModelRun>,
    /// `outcomes::hash` of the model's text, when it ran.
    pub hash: Option<String>,
    /// How long the check took.
    pub elapsed: std::time::Duration,
}

/// [`check_model_recording`] of each of `scenarios` (recording `states`
/// when asked), in their order, on up to one thread per CPU
/// ([`crate::parallel`]: the model is CPU alone, a seventh of a SQLite
/// corpus run's instructions); `None` for a scenario not started because a
/// signal came first (`crate::interrupt`).
pub fn check_models(scenarios: &[LoadedScenario], states: bool) -> Vec<Option<ModelCheck>> {
    crate::parallel::map_in_order(scenarios, |s| {
        crate::interrupt::interrupted().is_none().then(|| {
            let started = std::time::Instant::now();
            let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a current-thread runtime");
                runtime.block_on(check_model_recording(s, states))
            }));
            let hash = run.as_ref().ok().map(|m| crate::report::outcomes::hash(m.yaml.as_bytes()));
            ModelCheck { run, hash, elapsed: started.elapsed() }
        })
    })
}

/// Whether a missing snapshot fails, as insta decides: under `CI=true` (or
/// `CI=1`) a result without a committed snapshot is a failure, never `new`.
pub fn missing_snapshot_fails() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// `verdict`, with `new` turned into a failure when
/// [`missing_snapshot_fails`]; `accept` names the command that writes it.
pub fn under_ci(verdict: Verdict, accept: &str) -> Verdict {
    match verdict {
        Verdict::New if missing_snapshot_fails() => Verdict::Fail(format!(
            "no committed snapshot, and CI=true: write it where you develop with `{accept}`, read it, and commit it"
        )),
        v => v,
    }
}

fn expect_problems(scenario: &LoadedScenario, outcome: &Outcome) -> Vec<String> {
    match &scenario.scenario.expect {
        Some(e) => expect::mismatches(e, outcome),
        None => Vec::new(),
    }
}

/// Why `dialect` cannot run `scenario`: the first feature the scenario
/// needs that the dialect's profile declares absent
/// (`<dialect> declares no leases (dialect.toml)`).
/// `outcome` is the reference model's (hooks are needed when it fires one).
pub fn absent_feature(scenario: &LoadedScenario, dialect: &Dialect, outcome: &Outcome) -> Option<String> {
    if let Some(why) = dialect.profile.policy.unjudgeable(&scenario.scenario) {
        return Some(format!("{} {why} (dialect.toml)", dialect.name));
    }
    let needed = feature::needed(&scenario.scenario, outcome);
    let absent = needed.into_iter().find(|f| !dialect.profile.has(*f))?;
    Some(format!("{} declares no {absent} (dialect.toml)", dialect.name))
}

/// Plays `scenario` on `target` and checks it against the model's run (or,
/// for a declared divergence, against the divergence's own snapshot). A
/// failure carries the SQL trace up to the first step where the target and
/// the model part ([`crate::trace`]). A
/// scenario needing a feature the dialect lacks is skipped; under a profile
/// other than the reference, the target is compared with the model run at
/// the profile's resolution, both outcomes normalized by its relaxations,
/// and not with the snapshot (which holds the reference claim).
pub async fn check_target(
    scenario: &LoadedScenario,
    target: Target,
    server: &Server,
    dialect: &Dialect,
    model: &ModelRun,
) -> TargetRun {
    // The features a scenario needs follow from the outcome under the
    // dialect's policy (a policy may fire a hook the reference does not, or
    // none where it does); its `expect` holds the reference claim.
    let skip = if dialect.profile.policy.is_reference() {
        absent_feature(scenario, dialect, &model.outcome)
    } else {
        let under_policy = model_outcome(&scenario.scenario, &dialect.profile).await;
        let mut judged = scenario.clone();
        judged.scenario.expect = None;
        absent_feature(&judged, dialect, &under_policy)
    };
    // Before the skip: a server given up fails every remaining case, so
    // none reads as fine.
    if let Some(why) = server.stopped_answering() {
        return TargetRun { verdict: Verdict::Fail(not_run_on_stopped(&why, target)), yaml: None, log: Vec::new() };
    }
    if let Some(reason) = skip {
        return TargetRun { verdict: Verdict::Skipped(reason), yaml: None, log: Vec::new() };
    }
    // The state after every step, for the invariants every queue keeps.
    let mut states = driver::Checkpoints::new();
    let run = run_logged(server, dialect, scenario, Some(&mut states)).await;
    let broken = crate::invariants::check(&scenario.scenario, &dialect.profile.policy, &states);
    let (verdict, yaml) = match run.outcome {
        Err(EngineError { kind: EngineErrorKind::Interrupted(signal), .. }) => {
            let reason = match &run.left {
                None => format!(
                    "interrupted by {signal} mid-run; its namespace was dropped ({} is gone from the catalog)",
                    run.namespace
                ),
                Some(why) => format!(
                    "interrupted by {signal} mid-run; its namespace {} is still on the server ({why}): the next \
                     `reapcheck run --db {target}` removes it",
                    run.namespace
                ),
            };
            return TargetRun { verdict: Verdict::Skipped(reason), yaml: None, log: run.log };
        }
        // No trace: it would only wait on the server again.
        Err(e) if server.stopped_answering().is_some() => {
            let why = server.stopped_answering().unwrap_or_default();
            let verdict = Verdict::Fail(format!(
                "{target} failed: {e}\n{why}: the scenarios after it on {target} fail without running; resume or \
                 restart the server and run again"
            ));
            return TargetRun { verdict, yaml: None, log: run.log };
        }
        Err(e) => (Verdict::Fail(format!("{target} failed: {e}")), None),
        Ok(outcome) => {
            // The text is a function of the outcome: one equal to the
            // model's is not rendered again (a fifth of a SQLite run's
            // instructions went to rendering outcomes).
            let yaml = match outcome == model.outcome {
                true => model.yaml.clone(),
                false => snapshot::normalize(&outcome.to_yaml()),
            };
            let declared = scenario.scenario.divergence.iter().find(|(t, _)| t.as_str() == target.name());
            let pin = dialect.pins.get(&scenario.name);
            let (verdict, yaml) = match (declared, pin) {
                (Some((_, reason)), _) => (check_divergence(scenario, target, reason, &yaml, model), yaml),
                (None, Some(pin)) => {
                    let document = compared_document(outcome, &dialect.profile);
                    (check_pin(target, pin, &document), document)
                }
                (None, None) => (
                    if dialect.profile.is_reference() {
                        check_against_model(scenario, target, &outcome, &yaml, model)
                    } else {
                        check_under_profile(scenario, target, dialect, outcome, model).await
                    },
                    yaml,
                ),
            };
            // An outcome that agrees can hide a state between steps that
            // does not (a token left on a requeued row, then overwritten):
            // every checkpoint is judged, not only the last. A pin or a
            // declared divergence pins the final document alone.
            let verdict = match (verdict, declared.is_none() && pin.is_none()) {
                (Verdict::Ok, true) => match states_part(scenario, dialect, &states).await {
                    Some(step) => Verdict::Fail(format!(
                        "{target} ends as the model does, but its state after {step} is not the model's \
                         (the trace below shows where and how)"
                    )),
                    None => Verdict::Ok,
                },
                (verdict, _) => verdict,
            };
            (with_invariants(verdict, &broken), Some(yaml))
        }
    };
    let verdict = match verdict {
        Verdict::Fail(detail) => {
            let traced = crate::trace::trace(server, dialect, scenario, target.name()).await;
            Verdict::Fail(format!("{detail}\n{}", traced.trim_end()))
        }
        other => other,
    };
    TargetRun { verdict, yaml, log: run.log }
}

/// The failure of a case not run because its target's server stopped
/// answering (`why`, from [`Server::stopped_answering`]).
fn not_run_on_stopped(why: &str, target: Target) -> String {
    format!(
        "not run: {why}; nothing more is sent to it: resume or restart {target}'s server and run again (the next \
         run removes what this one left there)"
    )
}

/// The namespaces this process made that are still on `server`, by the
/// owner in their names ([`namespace::parse`]), as the sweep lists them
/// ([`Server::namespaces`]): what a command that says its namespaces were
/// dropped checks first, once its runs and lanes are done. Errors: the
/// server could not be asked (it stopped answering, or the listing failed).
pub async fn left_behind(server: &Server) -> Result<Vec<String>, String> {
    if let Some(why) = server.stopped_answering() {
        return Err(why);
    }
    let names = server.namespaces().await.map_err(|e| format!("cannot list the namespaces: {e}"))?;
    let me = namespace::this_process();
    Ok(names.into_iter().filter(|n| namespace::parse(n).as_ref() == Some(me)).collect())
}

/// Where the target's checkpoints (`states`: after setup and after every
/// step) first differ from the model's under the dialect's profile, as
/// `setup` or `step N` (1-based); `None` when they all agree.
async fn states_part(scenario: &LoadedScenario, dialect: &Dialect, states: &driver::Checkpoints) -> Option<String> {
    let profile = &dialect.profile;
    let mut model_states = driver::Checkpoints::new();
    model_outcome_with_states(&scenario.scenario, profile, Some(&mut model_states)).await;
    match crate::trace::checkpoints_parting(&model_states, states, profile, false) {
        crate::trace::Parting::Setup => Some("setup".to_owned()),
        crate::trace::Parting::Step(i) => Some(format!("step {}", i + 1)),
        crate::trace::Parting::Error(_) | crate::trace::Parting::Never => None,
    }
}

/// A target's document against its dialect's pinned outcome
/// (docs/policy.md, "Pinned outcomes"): the pin's reason when it holds;
/// new when the pin has no outcome yet (`run --accept` writes it).
fn check_pin(target: Target, pin: &crate::dialect::pins::Pin, document: &str) -> Verdict {
    match &pin.outcome {
        None => Verdict::New,
        Some(pinned) => match diff::render("pinned outcome", pinned, target.name(), document) {
            None => Verdict::Diverged(format!("pinned ({})", pin.reason)),
            Some(d) => Verdict::Fail(format!(
                "{target} no longer gives the outcome pinned in {} ({}); fix the port, or delete the pin's \
                 `outcome` and accept the new one with `reapcheck run --accept --exact {}`\n{d}",
                pin.path.display(),
                pin.reason,
                pin.scenario
            )),
        },
    }
}

/// Problems with the pins of `dialects` before anything runs: a pin naming
/// no scenario of `scenarios` (when `all` scenarios are selected), and a
/// pin whose outcome the model under the dialect's policy already gives
/// (then it pins nothing). Each as `file: message`.
pub async fn pin_problems(scenarios: &[LoadedScenario], dialects: &[Dialect], all: bool) -> Vec<String> {
    let mut problems = Vec::new();
    for dialect in dialects {
        for pin in dialect.pins.values() {
            let Some(s) = scenarios.iter().find(|s| s.name == pin.scenario) else {
                if all {
                    problems.push(format!(
                        "{}:1:1: pins `{}`, which is no scenario of this run: rename the pin after its scenario, or delete it",
                        pin.path.display(),
                        pin.scenario
                    ));
                }
                continue;
            };
            let model = model_document(&s.scenario, &dialect.profile).await;
            if pin.outcome.as_deref() == Some(model.as_str()) {
                problems.push(format!(
                    "{}:1:1: pins the outcome the model under {}'s policy already gives: delete the pin",
                    pin.path.display(),
                    dialect.name
                ));
            }
        }
    }
    problems
}

/// `verdict`, failed when any invariant is `broken` (docs/policy.md,
/// "Invariants that hold for every queue"): even a run that matches the
/// model, its snapshot or a pinned outcome fails, naming the rule and the
/// step.
pub fn with_invariants(verdict: Verdict, broken: &[crate::invariants::Violation]) -> Verdict {
    if broken.is_empty() {
        return verdict;
    }
    let lines: Vec<String> = broken.iter().map(|v| v.to_string()).collect();
    match verdict {
        Verdict::Fail(detail) => Verdict::Fail(format!("{}\n{detail}", lines.join("\n"))),
        _ => Verdict::Fail(lines.join("\n")),
    }
}

/// The target against the model under the dialect's profile: the model
/// runs at the profile's time resolution, and both outcomes are normalized
/// by its relaxations before the one diff. `expect` and the snapshot hold
/// the reference claim and are checked on the model's own line.
async fn check_under_profile(
    scenario: &LoadedScenario,
    target: Target,
    dialect: &Dialect,
    outcome: Outcome,
    model: &ModelRun,
) -> Verdict {
    let profile = &dialect.profile;
    let expected = model_document(&scenario.scenario, profile).await;
    let actual = compared_document(outcome, profile);
    let label = format!("model under {}'s profile", dialect.name);
    match diff::render(&label, &expected, target.name(), &actual) {
        Some(d) => Verdict::Fail(format!(
            "{target} disagrees with the model under {}'s profile (dialect.toml); the snapshot is not compared\n{d}",
            dialect.name
        )),
        None if model.snapshot.is_some() => Verdict::Ok,
        None => Verdict::New,
    }
}

/// The model's outcome of `scenario` under `profile` (run at its time
/// resolution, normalized by its relaxations), as targets are compared
/// with it; for the reference profile, the model's own outcome document.
pub async fn model_document(scenario: &crate::scenario::Scenario, profile: &Profile) -> String {
    let outcome = model_outcome(scenario, profile).await;
    compared_document(outcome, profile)
}

/// The model's outcome of `scenario` under `profile`: its policy decides
/// (driver and model alike), at its time resolution; not normalized.
pub async fn model_outcome(scenario: &crate::scenario::Scenario, profile: &Profile) -> Outcome {
    model_outcome_with_states(scenario, profile, None).await
}

/// [`model_outcome`], with the model's state after setup and after every
/// step pushed to `states` when given (what a target's checkpoints are
/// compared with).
pub async fn model_outcome_with_states(
    scenario: &crate::scenario::Scenario,
    profile: &Profile,
    states: Option<&mut driver::Checkpoints>,
) -> Outcome {
    let mut resolved = Resolved::new(Model::under(scenario.schema, &profile.policy), profile.time_resolution);
    driver::run_under(scenario, &profile.policy, &mut resolved, None, states).await.expect("the model never fails")
}

/// Whether a target's `outcome` under `profile` reads as `model`'s:
/// [`compared_document`] equal to the model's text. Under the reference
/// profile, where that document is the outcome's own text, an outcome
/// equal to the model's is not rendered at all (a mutant's run is judged
/// this way thousands of times in one `mutate`).
pub fn agrees_with_model(outcome: Outcome, profile: &Profile, model: &ModelRun) -> bool {
    if profile.is_reference() && outcome == model.outcome {
        return true;
    }
    compared_document(outcome, profile) == model.yaml
}

/// A target's outcome as compared under `profile`: normalized by its
/// relaxations, then as snapshots are, without the state its policy says
/// the queue does not keep ([`relax::document`]).
pub fn compared_document(outcome: Outcome, profile: &Profile) -> String {
    relax::document(outcome, profile)
}

/// A target's run of one scenario.
#[derive(Clone, Debug)]
pub struct TargetRun {
    /// The target's verdict.
    pub verdict: Verdict,
    /// The outcome as snapshot text, when the run finished.
    pub yaml: Option<String>,
    /// Every statement the run executed (for coverage).
    pub log: Vec<Executed>,
}

fn check_against_model(
    scenario: &LoadedScenario,
    target: Target,
    outcome: &Outcome,
    yaml: &str,
    model: &ModelRun,
) -> Verdict {
    let mut problems = expect_problems(scenario, outcome);
    if let Some(d) = diff::render("model", &model.yaml, target.name(), yaml) {
        problems.push(format!("{target} disagrees with the model\n{d}"));
    } else if let Some(recorded) = &model.snapshot
        && let Some(d) = diff::render("snapshot", recorded, target.name(), yaml)
    {
        problems.push(format!("{target} disagrees with the snapshot\n{d}"));
    }
    match (problems.is_empty(), model.snapshot.is_some()) {
        (false, _) => Verdict::Fail(problems.join("\n")),
        (true, true) => Verdict::Ok,
        (true, false) => Verdict::New,
    }
}

fn check_divergence(scenario: &LoadedScenario, target: Target, reason: &str, yaml: &str, model: &ModelRun) -> Verdict {
    if yaml == model.yaml {
        return Verdict::Fail(format!(
            "{target} is declared divergent ({reason}) but now agrees with the model: remove `{target}` from `divergence`"
        ));
    }
    let path = snapshot::path(&scenario.path, Some(target.name()));
    match snapshot::read(&path) {
        Err(e) => Verdict::Fail(format!("cannot read {}: {e}", path.display())),
        Ok(None) => Verdict::New,
        Ok(Some(recorded)) => match diff::render("divergence snapshot", &recorded, target.name(), yaml) {
            None => Verdict::Diverged(reason.to_owned()),
            Some(d) => Verdict::Fail(format!("{target} no longer matches its declared divergence snapshot\n{d}")),
        },
    }
}

/// The outcome of `scenario` on a target, in a namespace of its own that is
/// dropped afterwards whether or not the run succeeded.
pub async fn run_on(server: &Server, dialect: &Dialect, scenario: &LoadedScenario) -> Result<Outcome, EngineError> {
    run_logged(server, dialect, scenario, None).await.outcome
}

/// Where the time of one run on a target went.
#[derive(Clone, Copy, Debug, Default)]
pub struct Phases {
    /// Connecting and creating and entering the namespace.
    pub setup: Duration,
    /// Schema, rows and steps: the scenario itself.
    pub run: Duration,
    /// Dropping the namespace and closing the connection.
    pub teardown: Duration,
}

/// [`run_on`], also timing its phases.
pub async fn run_on_timed(
    server: &Server,
    dialect: &Dialect,
    scenario: &LoadedScenario,
) -> Result<(Outcome, Phases), EngineError> {
    let run = run_logged(server, dialect, scenario, None).await;
    run.outcome.map(|o| (o, run.phases))
}

/// Everything one run on a target produced.
#[derive(Debug)]
pub struct LoggedRun {
    /// The outcome, or the first error (the namespace's drop included).
    pub outcome: Result<Outcome, EngineError>,
    /// Every statement run, namespace scripts included, in order.
    pub log: Vec<Executed>,
    /// Where the time went.
    pub phases: Phases,
    /// The namespace the run was given (empty when it got none).
    pub namespace: String,
    /// Why that namespace may still be on the server: its drop failed, or
    /// could not be confirmed in the catalog. `None` when it is gone (or
    /// was kept as a lane, which the server drops when it closes).
    pub left: Option<String>,
}

/// Runs `scenario` on a target in a namespace of its own with empty tables
/// ([`isolation::acquire`]: a kept lane emptied, or a new namespace),
/// logging every statement; afterwards the lane is kept for another run or
/// its namespace dropped ([`isolation::release`]), whether or not the run
/// succeeded. With `checkpoints`, the state is read back after setup and
/// after each step (see [`driver::run_with`]).
pub async fn run_logged(
    server: &Server,
    dialect: &Dialect,
    scenario: &LoadedScenario,
    checkpoints: Option<&mut driver::Checkpoints>,
) -> LoggedRun {
    let started = Instant::now();
    let s = &scenario.scenario;
    let mut log = Vec::new();
    let nothing = |outcome, log, phases| LoggedRun { outcome, log, phases, namespace: String::new(), left: None };
    if let Some(why) = server.stopped_answering() {
        let e = EngineError { statement: "connect", kind: EngineErrorKind::Connection(format!("not run: {why}")) };
        return nothing(Err(e), log, Phases::default());
    }
    let mut acquired = match isolation::acquire(server, dialect, s.schema, &mut log).await {
        Ok(a) => a,
        Err(e) => {
            server.note_stopped_at(&scenario.name);
            let phases = Phases { setup: started.elapsed(), ..Phases::default() };
            return nothing(Err(e), log, phases);
        }
    };
    let setup = started.elapsed();
    let engine = SqlEngine::new(dialect, s.schema, &mut acquired.lane.conn)
        .with_tables_kept(acquired.tables_kept)
        .with_setup_transaction();
    let mut engine = Resolved::new(engine, dialect.profile.time_resolution);
    let policy = &dialect.profile.policy;
    let played = AssertUnwindSafe(driver::run_under(s, policy, &mut engine, None, checkpoints)).catch_unwind();
    let run = tokio::select! {
        played = played => played.unwrap_or_else(|panic| Err(panicked("run", panic.as_ref()))),
        signal = interrupt::wait() => Err(EngineError { statement: "run", kind: EngineErrorKind::Interrupted(signal) }),
    };
    // An interrupt drops the run's future wherever it was, possibly in the
    // middle of a statement: that connection is never spoken to again.
    let abandoned = matches!(run, Err(EngineError { kind: EngineErrorKind::Interrupted(_), .. }));
    let mut engine = engine.into_inner();
    let settled = if abandoned { Ok(()) } else { engine.settle(run.is_ok()).await };
    let run = run.and_then(|outcome| settled.map(|()| outcome));
    log.extend(engine.into_log());
    let ran = started.elapsed();
    let failure = run.as_ref().err().map(|e| &e.kind);
    let reusable = !abandoned && isolation::reusable(&mut acquired, failure, s.session_time_zone.is_some(), &log).await;
    let namespace = acquired.lane.namespace.clone();
    let released = if abandoned {
        isolation::release_abandoned(server, dialect, acquired).await
    } else {
        isolation::release(server, dialect, acquired, reusable, &mut log).await
    };
    let phases = Phases { setup, run: ran - setup, teardown: started.elapsed() - ran };
    let left = released.as_ref().err().map(|e| e.kind.to_string());
    if run.is_err() || released.is_err() {
        server.note_stopped_at(&scenario.name);
    }
    let outcome = run.and_then(|outcome| {
        released.map(|()| outcome).map_err(|e| EngineError {
            statement: e.statement,
            kind: EngineErrorKind::Database(format!(
                "the run passed but its namespace {namespace} was not dropped: {}",
                e.kind
            )),
        })
    });
    LoggedRun { outcome, log, phases, namespace, left }
}

/// Drops the namespaces earlier runs left on `server` ([`namespace::is_stale`]:
/// made on this host by a process that is gone, or older than
/// [`namespace::MAX_AGE`]), each with the dialect's `drop_namespace` on a
/// connection of its own, which a `bench --compare` capture does not
/// record.
pub async fn sweep(server: &Server, dialect: &Dialect) -> Swept {
    let names = match server.namespaces().await {
        Ok(names) => names,
        Err(e) => return Swept { errors: vec![format!("cannot list the namespaces: {e}")], ..Swept::default() },
    };
    let (me, now) = (namespace::this_process(), namespace::unix_seconds());
    let mut swept = Swept::default();
    for name in names {
        if !namespace::is_stale(&name, me, now, namespace::process_alive) {
            continue;
        }
        let dropped = match server.open().await {
            Ok(mut conn) => {
                // Another run's leftovers are no part of this one's pass.
                conn.stop_recording();
                let dropped = namespace_script(&mut conn, dialect, "drop_namespace", &name).await;
                Connection::close(conn).await;
                dropped.map_err(|e| e.to_string())
            }
            Err(e) => Err(e.to_string()),
        };
        match dropped {
            Ok(()) => swept.removed.push(name),
            Err(e) => swept.errors.push(format!("cannot drop {name}: {e}")),
        }
    }
    if !swept.removed.is_empty() {
        confirm_dropped(server, &mut swept).await;
    }
    swept
}

/// Moves from `swept.removed` to its errors every namespace the server
/// still lists: a `drop_namespace` that ran without an error is not proof
/// that the namespace is gone (a no-op script, a `DROP SCHEMA` without
/// `CASCADE` that only warns), and a sweep never reports as removed what
/// is still there.
async fn confirm_dropped(server: &Server, swept: &mut Swept) {
    let still = match server.namespaces().await {
        Ok(names) => names,
        Err(e) => {
            swept.errors.push(format!("cannot list the namespaces again to confirm the drops: {e}"));
            swept.removed.clear();
            return;
        }
    };
    let (gone, kept): (Vec<String>, Vec<String>) = swept.removed.drain(..).partition(|n| !still.contains(n));
    swept.removed = gone;
    for name in kept {
        swept.errors.push(format!(
            "{name} is still on the server after its drop_namespace ran without an error: make the dialect's \
             drop_namespace remove the namespace and everything in it (CASCADE)"
        ));
    }
}

/// What [`sweep`] did.
#[derive(Debug, Default)]
pub struct Swept {
    /// The namespaces it dropped.
    pub removed: Vec<String>,
    /// What went wrong, one line each (listing or dropping).
    pub errors: Vec<String>,
}

/// The error of a run that panicked at `statement`, with the panic's message.
pub fn panicked(statement: &'static str, panic: &(dyn std::any::Any + Send)) -> EngineError {
    EngineError { statement, kind: EngineErrorKind::Panicked(panic_message(panic)) }
}

/// The text a panic was raised with.
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    match (panic.downcast_ref::<&str>(), panic.downcast_ref::<String>()) {
        (Some(s), _) => (*s).to_owned(),
        (_, Some(s)) => s.clone(),
        _ => "a panic without a message".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agreement_with_the_model_is_its_documents_whether_rendered_or_not() {
        use crate::dialect::profile::HookOrder;
        use crate::outcome::StepResult;
        let scan = |ids: [&str; 2]| Outcome {
            steps: vec![Some(StepResult::Scan(ids.iter().map(|&i| i.to_owned()).collect())), None],
            ..Outcome::default()
        };
        let model_run = |outcome: Outcome, profile: &Profile| ModelRun {
            yaml: compared_document(outcome.clone(), profile),
            outcome,
            snapshot: None,
            verdict: Verdict::Ok,
            stale: false,
            states: None,
        };
        let reference = Profile::default();
        assert!(reference.is_reference());
        let model = model_run(scan(["a", "b"]), &reference);
        assert!(agrees_with_model(scan(["a", "b"]), &reference, &model));
        assert!(!agrees_with_model(scan(["b", "a"]), &reference, &model));
        // Under a profile the document decides: an unordered hook order
        // sorts a scan's ids, so another order agrees.
        let unordered = Profile { hook_order: HookOrder::Unordered, ..Profile::default() };
        let model = model_run(scan(["a", "b"]), &unordered);
        assert!(agrees_with_model(scan(["b", "a"]), &unordered, &model));
        assert!(!agrees_with_model(scan(["a", "c"]), &unordered, &model));
    }

    #[test]
    fn panic_messages_are_read_from_either_payload() {
        assert_eq!(panic_message(&"static"), "static");
        assert_eq!(panic_message(&String::from("owned")), "owned");
        assert_eq!(panic_message(&3_u8), "a panic without a message");
        let e = panicked("run", &"instants are validated");
        assert!(e.to_string().contains("reapcheck panicked: instants are validated"), "{e}");
    }

    /// Against `REAPCHECK_MARIADB_URL`: MariaDB is where a failed drop was
    /// reported although the namespace was gone.
    #[tokio::test]
    async fn a_failed_drop_is_checked_on_a_new_connection_before_it_is_reported() {
        let Some(url) = crate::reach::test_url(crate::target::Target::Mariadb) else { return };
        use crate::dialect::Source;
        use crate::dialect::contract::Column;
        use crate::engine::{Kind, Value};
        let server = crate::backend::mysql(&url).await.expect("mariadb is reachable");
        let dialect = Dialect::load(&Source::Embedded, "mysql").expect("the mysql dialect loads");
        let script = async |conn: &mut Connection, name: &'static str, ns: &str| {
            namespace_script(conn, &dialect, name, ns).await
        };
        // The drop completed (here from another session), yet the run's own
        // DROP DATABASE errs: no alarm.
        let ns = namespace::fresh();
        let mut run = server.open().await.expect("open");
        script(&mut run, "create_namespace", &ns).await.expect("created");
        script(&mut run, "enter_namespace", &ns).await.expect("entered");
        let mut other = server.open().await.expect("open");
        script(&mut other, "drop_namespace", &ns).await.expect("dropped elsewhere");
        other.close().await;
        let failed = script(&mut run, "drop_namespace", &ns).await.expect_err("the run's drop errs");
        run.close().await;
        isolation::confirm_dropped(&server, &dialect, &ns, failed).await.expect("the namespace is gone: no failure");
        // The run's session is killed before its drop: dropped on a new one.
        let ns = namespace::fresh();
        let mut run = server.open().await.expect("open");
        script(&mut run, "create_namespace", &ns).await.expect("created");
        script(&mut run, "enter_namespace", &ns).await.expect("entered");
        let id = Column { name: "id", kind: Kind::Int, nullable: false };
        // Test probes: the session's id, and a kill from another session.
        let rows = run.query("SELECT CONNECTION_ID()", &[], std::slice::from_ref(&id)).await.expect("an id");
        let Some(Value::Int(id)) = rows.first().and_then(|r| r.first()).cloned() else { panic!("{rows:?}") };
        let mut other = server.open().await.expect("open");
        other.execute(&format!("KILL CONNECTION {id}"), &[]).await.expect("killed");
        other.close().await;
        let failed = script(&mut run, "drop_namespace", &ns).await.expect_err("a killed session cannot drop");
        run.close().await;
        assert!(server.namespaces().await.expect("listed").contains(&ns), "the kill came before the drop");
        isolation::confirm_dropped(&server, &dialect, &ns, failed).await.expect("dropped on a new connection");
        assert!(!server.namespaces().await.expect("listed").contains(&ns), "left behind");
    }

    /// Against `REAPCHECK_POSTGRES_URL`: a sweep whose `drop_namespace`
    /// runs without an error but drops nothing reports the namespace as
    /// still there, not as removed; the shipped script then removes it.
    #[tokio::test]
    async fn a_sweep_reports_removed_only_what_is_gone() {
        let Some(url) = crate::reach::test_url(crate::target::Target::Postgres) else { return };
        use crate::dialect::Source;
        let server = crate::backend::postgres(&url).await.expect("postgres is reachable");
        let dialect = Dialect::load(&Source::Embedded, "postgres").expect("the postgres dialect loads");
        // Made a day and an hour ago by this host: stale whoever owns it.
        let me = namespace::this_process();
        let old = namespace::Owner { started: namespace::unix_seconds() - 25 * 3600, ..me.clone() };
        let ns = namespace::name(&old, 7);
        let mut conn = server.open().await.expect("open");
        namespace_script(&mut conn, &dialect, "create_namespace", &ns).await.expect("created");
        conn.close().await;
        let no_op = dialect.with_sql("drop_namespace", "SELECT 1".to_owned());
        let swept = sweep(&server, &no_op).await;
        assert!(!swept.removed.contains(&ns), "{swept:?}");
        assert!(swept.errors.iter().any(|e| e.starts_with(&format!("{ns} is still on the server"))), "{swept:?}");
        let swept = sweep(&server, &dialect).await;
        assert!(swept.removed.contains(&ns), "{swept:?}");
        assert!(!server.namespaces().await.expect("listed").contains(&ns), "left behind");
    }

    /// Against `REAPCHECK_POSTGRES_URL`: a session terminated by the server
    /// mid-run fails its statement at once, its namespace is still dropped
    /// (on a new connection), and the pool hands out a live session next.
    #[tokio::test]
    async fn a_terminated_postgres_session_is_replaced_and_its_namespace_dropped() {
        let Some(url) = crate::reach::test_url(crate::target::Target::Postgres) else { return };
        use crate::dialect::Source;
        use crate::dialect::contract::Column;
        use crate::engine::{Kind, Value};
        let mut server = crate::backend::postgres(&url).await.expect("postgres is reachable");
        server.limit_connections(1);
        let dialect = Dialect::load(&Source::Embedded, "postgres").expect("the postgres dialect loads");
        let int = Column { name: "n", kind: Kind::Int, nullable: false };
        let ns = namespace::fresh();
        let mut run = server.open().await.expect("open");
        namespace_script(&mut run, &dialect, "create_namespace", &ns).await.expect("created");
        namespace_script(&mut run, &dialect, "enter_namespace", &ns).await.expect("entered");
        // Test probes: the session's pid, terminated from another session.
        let rows = run.query("SELECT pg_backend_pid()::int8", &[], std::slice::from_ref(&int)).await.expect("a pid");
        let Some(Value::Int(pid)) = rows.first().and_then(|r| r.first()).cloned() else { panic!("{rows:?}") };
        let admin = crate::backend::postgres(&url).await.expect("postgres is reachable");
        let mut other = admin.open().await.expect("open");
        let kill = format!("SELECT CAST(pg_terminate_backend({pid}) AS int)");
        other.query(&kill, &[], std::slice::from_ref(&int)).await.expect("terminated");
        other.close().await;
        let started = std::time::Instant::now();
        let failed = namespace_script(&mut run, &dialect, "drop_namespace", &ns).await.expect_err("a dead session");
        assert!(started.elapsed() < Duration::from_secs(5), "waited {:?} on a dead session", started.elapsed());
        assert!(matches!(failed.kind, EngineErrorKind::Connection(_)), "{failed}");
        run.close().await;
        // The dead session went back to the pool; the next open replaces it.
        isolation::confirm_dropped(&server, &dialect, &ns, failed).await.expect("dropped on a new connection");
        assert!(!admin.namespaces().await.expect("listed").contains(&ns), "left behind");
        let mut next = server.open().await.expect("a live session replaces the dead one");
        let one = next.query("SELECT CAST(1 AS int8)", &[], std::slice::from_ref(&int)).await.expect("it answers");
        assert_eq!(one, vec![vec![Value::Int(1)]]);
        next.close().await;
        server.close().await;
        admin.close().await;
    }
}
