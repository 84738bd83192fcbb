//! Checking scenarios: the model against its snapshot and `expect`, and each
//! target against the model. The CLI and the test suite both decide
//! pass/fail here, so they cannot drift apart.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use crate::backend::Server;
use crate::dialect::{Dialect, Profile};
use crate::diff;
use crate::driver;
use crate::engine::{EngineError, EngineErrorKind, Phase};
use crate::expect;
use crate::feature;
use crate::model::Model;
use crate::outcome::Outcome;
use crate::relax;
use crate::resolution::Resolved;
use crate::scenario::LoadedScenario;
use crate::scenario::Schema;
use crate::snapshot;
use crate::sql::{SqlEngine, namespace_script};
use crate::statement_log::{Executed, Returned};
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
}

/// Plays `scenario` on the reference model and checks it against the
/// scenario's `expect` and committed snapshot.
pub async fn check_model(scenario: &LoadedScenario) -> ModelRun {
    let mut model = Model::new(scenario.scenario.schema);
    let outcome = driver::run(&scenario.scenario, &mut model, None).await.expect("the model never fails");
    let yaml = snapshot::normalize(&outcome.to_yaml());
    let snapshot_path = snapshot::path(&scenario.path, None);
    let snapshot = match snapshot::read(&snapshot_path) {
        Ok(s) => s,
        Err(e) => {
            let verdict = Verdict::Fail(format!("cannot read {}: {e}", snapshot_path.display()));
            return ModelRun { outcome, yaml, snapshot: None, verdict, stale: false };
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
    ModelRun { outcome, yaml, snapshot, verdict, stale }
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
    if let Some(reason) = absent_feature(scenario, dialect, &model.outcome) {
        return TargetRun { verdict: Verdict::Skipped(reason), yaml: None, log: Vec::new() };
    }
    let run = run_logged(server, dialect, scenario, None).await;
    let (verdict, yaml) = match run.outcome {
        Err(e) => (Verdict::Fail(format!("{target} failed: {e}")), None),
        Ok(outcome) => {
            let yaml = snapshot::normalize(&outcome.to_yaml());
            let declared = scenario.scenario.divergence.iter().find(|(t, _)| t.as_str() == target.name());
            let verdict = match declared {
                Some((_, reason)) => check_divergence(scenario, target, reason, &yaml, model),
                None if dialect.profile.is_reference() => check_against_model(scenario, target, &outcome, &yaml, model),
                None => check_under_profile(scenario, target, dialect, outcome, model).await,
            };
            (verdict, Some(yaml))
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
    let mut resolved = Resolved::new(Model::new(scenario.schema), profile.time_resolution);
    let outcome = driver::run(scenario, &mut resolved, None).await.expect("the model never fails");
    compared_document(outcome, profile)
}

/// A target's outcome as compared under `profile`: normalized by its
/// relaxations, then as snapshots are.
pub fn compared_document(outcome: Outcome, profile: &Profile) -> String {
    snapshot::normalize(&relax::normalize(outcome, profile).to_yaml())
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
}

/// Runs `scenario` on a target in a namespace of its own, dropped afterwards
/// whether or not the run succeeded, logging every statement. With
/// `checkpoints`, the state is read back after setup and after each step
/// (see [`driver::run_with`]).
pub async fn run_logged(
    server: &Server,
    dialect: &Dialect,
    scenario: &LoadedScenario,
    checkpoints: Option<&mut driver::Checkpoints>,
) -> LoggedRun {
    let namespace = fresh_namespace();
    let started = Instant::now();
    let mut log = Vec::new();
    let mut conn = match server.open().await {
        Ok(c) => c,
        Err(e) => {
            let outcome = Err(EngineError { statement: "connect", kind: e.into() });
            return LoggedRun { outcome, log, phases: Phases::default() };
        }
    };
    if let Err(e) = conn.set_instant_encoding(dialect.profile.instants).await {
        conn.close().await;
        let outcome = Err(EngineError { statement: "connect", kind: e.into() });
        return LoggedRun { outcome, log, phases: Phases::default() };
    }
    let script = async |conn: &mut _, name, phase, log: &mut Vec<Executed>| {
        let result = namespace_script(conn, dialect, name, &namespace).await;
        let returned = match &result {
            Ok(()) => Returned::Done,
            Err(e) => Returned::Failed(e.kind.to_string()),
        };
        let origin = dialect.statement(name, Schema::Standard).origin.clone();
        log.push(Executed { phase, statement: name.to_owned(), origin, binds: Vec::new(), returned });
        result
    };
    let created = script(&mut conn, "create_namespace", Phase::Setup, &mut log).await;
    let entered = match created {
        Ok(()) => script(&mut conn, "enter_namespace", Phase::Setup, &mut log).await,
        Err(e) => Err(e),
    };
    let setup = started.elapsed();
    let run = match entered {
        Ok(()) => {
            let s = &scenario.scenario;
            let engine = SqlEngine::new(dialect, s.schema, &mut conn);
            let mut engine = Resolved::new(engine, dialect.profile.time_resolution);
            let outcome = driver::run_with(s, &mut engine, None, checkpoints).await;
            log.extend(engine.into_inner().into_log());
            outcome
        }
        Err(e) => Err(e),
    };
    let ran = started.elapsed();
    let dropped = script(&mut conn, "drop_namespace", Phase::Teardown, &mut log).await;
    conn.close().await;
    let phases = Phases { setup, run: ran - setup, teardown: started.elapsed() - ran };
    let outcome = run.and_then(|outcome| {
        dropped.map(|()| outcome).map_err(|e| EngineError {
            statement: e.statement,
            kind: EngineErrorKind::Database(format!(
                "the run passed but its namespace {namespace} was not dropped: {}",
                e.kind
            )),
        })
    });
    LoggedRun { outcome, log, phases }
}

/// A namespace name no other run, in this process or another, is using.
fn fresh_namespace() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    format!("rc_{}_{n}_{nanos}", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces_are_unique_identifiers() {
        let a = fresh_namespace();
        let b = fresh_namespace();
        assert_ne!(a, b);
        assert!(a.starts_with("rc_") && a.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_'));
    }
}
