//! One test per scenario file and target, found at run time (a new file
//! needs no rebuild): `grace/floor-reclaims-past-it::model`,
//! `grace/floor-reclaims-past-it::sqlite`, ... so `cargo test grace/`
//! selects by scenario path.
//!
//! `::model` checks the reference model against the scenario's `expect` and
//! its committed insta snapshot (a missing snapshot fails under `CI=true`;
//! otherwise insta writes `.snap.new` for `cargo insta review`). Each target
//! test checks the database against the model, the snapshot and `expect`.
//! A target without `REAPCHECK_<TARGET>_URL` is ignored, with its reason
//! printed, unless `REAPCHECK_REQUIRE` names it: then it fails. A target
//! none of whose tests the filter selects is not reached at all (no
//! container starts for it).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use libtest_mimic::{Arguments, Failed, Trial};
use reapcheck::backend::Server;
use reapcheck::dialect::{Dialect, Source};
use reapcheck::reach::{self, Reach};
use reapcheck::runner::{self, Verdict};
use reapcheck::scenario::{LoadedScenario, load_dir};
use reapcheck::snapshot;
use reapcheck::target::Target;
use tokio::runtime::Runtime;

fn scenarios_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios")
}

/// How a target's tests will go, decided while building the list.
enum TargetState {
    /// Connected; the last field keeps a container alive until the tests end.
    Ready(Arc<Server>, Arc<Dialect>, #[allow(dead_code, reason = "held, never read")] reach::Keep),
    Ignored,
    MustFail(String),
}

fn main() {
    let args = Arguments::from_args();
    let runtime: &'static Runtime =
        Box::leak(Box::new(tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a runtime")));
    let scenarios = match load_dir(&scenarios_root(), &[]) {
        Ok(s) => s,
        Err(errors) => {
            let message = errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n");
            libtest_mimic::run(&args, vec![Trial::test("scenarios::load", move || Err(message.into()))]).exit();
        }
    };
    let required = reach::required_targets().unwrap_or_else(|e| panic!("{e}"));
    // Only targets with a selected test are reached (and, with the
    // `containers` feature, started); the others' tests are filtered out.
    let filter = reach::TestFilter { filter: args.filter.clone(), exact: args.exact, skip: args.skip.clone() };
    let names: Vec<&str> = scenarios.iter().map(|s| s.name.as_str()).collect();
    let needed = reach::needed_targets(&names, &filter);
    let mut trials = Vec::new();
    let mut states = Vec::new();
    for target in Target::ALL {
        let state = if needed.contains(&target) { prepare(runtime, target, &required) } else { TargetState::Ignored };
        for s in &scenarios {
            if target == Target::Sqlite {
                trials.push(model_trial(runtime, s.clone()));
            }
            trials.push(target_trial(runtime, s.clone(), target, &state));
        }
        states.push(state);
    }
    let conclusion = libtest_mimic::run(&args, trials);
    // Drops the namespaces the runs kept for reuse (reapcheck::isolation),
    // then stops any containers, only after every test has run.
    for state in &states {
        if let TargetState::Ready(server, ..) = state {
            for e in runtime.block_on(server.release_lanes()) {
                eprintln!("warning: {e}");
            }
        }
    }
    drop(states);
    conclusion.exit();
}

fn prepare(runtime: &'static Runtime, target: Target, required: &[Target]) -> TargetState {
    let dialect = match Dialect::load(&Source::Embedded, target.dialect()) {
        Ok(d) => Arc::new(d),
        Err(e) => return TargetState::MustFail(e.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n")),
    };
    match runtime.block_on(reach::reach(target)) {
        Reach::Ready(server, keep) => {
            eprintln!("{target}: running on {}", server.version());
            TargetState::Ready(Arc::new(server), dialect, keep)
        }
        Reach::Skipped(reason) if !required.contains(&target) => {
            eprintln!("skipped: {target}: {reason}");
            TargetState::Ignored
        }
        Reach::Skipped(reason) | Reach::Unreachable(reason) => {
            TargetState::MustFail(format!("{target} must run (REAPCHECK_REQUIRE or a URL is set) but: {reason}"))
        }
    }
}

fn model_trial(runtime: &'static Runtime, s: LoadedScenario) -> Trial {
    Trial::test(format!("{}::model", s.name), move || {
        let model = runtime.block_on(runner::check_model_recording(&s, true));
        if let Verdict::Fail(detail) = model.verdict {
            return Err(detail.into());
        }
        assert_insta_snapshot(&s, &model.yaml);
        // An adapter under the reference profile is judged against these
        // recorded states instead of a run of its own: they must be that run's.
        let mut states = reapcheck::driver::Checkpoints::new();
        let reference = reapcheck::dialect::Profile::default();
        let outcome = runtime.block_on(runner::model_outcome_with_states(&s.scenario, &reference, Some(&mut states)));
        assert_eq!(model.states.as_ref(), Some(&states), "the recorded states are the reference run's");
        assert_eq!(model.outcome, outcome);
        assert_eq!(model.yaml, runner::compared_document(outcome, &reference), "the reference document is the yaml");
        Ok(())
    })
}

/// The insta assertion: fails on a difference or, under `CI=true`, on a
/// missing snapshot; elsewhere it writes `.snap.new` for review.
fn assert_insta_snapshot(s: &LoadedScenario, yaml: &str) {
    let path = snapshot::path(&s.path, None);
    let stem = s.path.file_stem().expect("named").to_string_lossy().into_owned();
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(path.parent().expect("in a folder"));
    settings.set_prepend_module_to_snapshot(false);
    settings.set_input_file(&s.path);
    settings.set_omit_expression(true);
    settings.bind(|| insta::assert_snapshot!(snapshot::name(&stem, None), yaml));
}

fn target_trial(runtime: &'static Runtime, s: LoadedScenario, target: Target, state: &TargetState) -> Trial {
    let name = format!("{}::{target}", s.name);
    match state {
        TargetState::Ignored => Trial::test(name, || Ok(())).with_ignored_flag(true),
        TargetState::MustFail(reason) => {
            let reason = reason.clone();
            Trial::test(name, move || Err(Failed::from(reason)))
        }
        TargetState::Ready(server, dialect, _) => {
            let (server, dialect) = (server.clone(), dialect.clone());
            Trial::test(name, move || {
                let verdict = runtime.block_on(async {
                    let model = runner::check_model(&s).await;
                    runner::check_target(&s, target, &server, &dialect, &model).await.verdict
                });
                match verdict {
                    Verdict::Fail(detail) => Err(detail.into()),
                    Verdict::Ok | Verdict::New | Verdict::Diverged(_) => Ok(()),
                    Verdict::Skipped(reason) => Err(format!("did not run: {reason}").into()),
                }
            })
        }
    }
}
