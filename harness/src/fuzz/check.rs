//! The differential check: a generated case becomes a scenario through the
//! corpus's own serializer and loader, is played on the reference model and
//! on a target (in a namespace of its own, as `run` does), and the two
//! outcome documents must be equal. proptest's runner drives the cases from
//! a seed and shrinks a failing one to a minimal case.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use tokio::runtime::Handle;

use super::case::Case;
use super::strategy;
use crate::backend::Server;
use crate::dialect::Dialect;
use crate::diff;
use crate::driver;
use crate::model::Model;
use crate::outcome::Outcome;
use crate::runner;
use crate::scenario::{LoadedScenario, Scenario, parse_named};
use crate::target::Target;

/// How many cases, from which seed.
#[derive(Clone, Copy, Debug)]
pub struct FuzzSettings {
    /// Cases generated per target (shrinking runs come on top).
    pub cases: u32,
    /// The seed of the case generator: the same seed gives the same cases.
    pub seed: u64,
    /// At most this many shrinking runs after a failure.
    pub max_shrink_iters: u32,
}

/// A deterministic generator state from `seed` (ChaCha, so every platform
/// draws the same cases).
pub fn rng(seed: u64) -> TestRng {
    let mut bytes = [0u8; 32];
    let mut state = seed;
    for chunk in bytes.chunks_mut(8) {
        // splitmix64: spreads the 64-bit seed over the 256-bit key.
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        chunk.copy_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    TestRng::from_seed(RngAlgorithm::ChaCha, &bytes)
}

/// A proptest runner for `settings`: no failure files, no forking, shrinking
/// bounded by `max_shrink_iters`.
pub fn test_runner(settings: &FuzzSettings) -> TestRunner {
    let config = Config {
        cases: settings.cases,
        max_shrink_iters: settings.max_shrink_iters,
        failure_persistence: None,
        ..Config::default()
    };
    TestRunner::new_with_rng(config, rng(settings.seed))
}

/// `case` as scenario YAML (the serializer the corpus round-trips through),
/// read back by the normal loader under `name`; a case the loader refuses is
/// a bug in the generator, reported with the loader's messages.
pub fn load(case: &Case, name: &str, description: &str) -> Result<(String, LoadedScenario), String> {
    let yaml = to_yaml(&case.to_scenario(description))?;
    let path = Path::new(name).with_extension("yaml");
    match parse_named(name, &path, &yaml) {
        Ok(loaded) => Ok((yaml, loaded)),
        Err(errors) => {
            let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
            Err(format!(
                "the generator made an invalid scenario (a bug in reapcheck):\n{}\n{yaml}",
                messages.join("\n")
            ))
        }
    }
}

/// A scenario as the YAML a file holds.
pub fn to_yaml(scenario: &Scenario) -> Result<String, String> {
    serde_saphyr::to_string(scenario).map_err(|e| format!("cannot serialize a generated scenario: {e}"))
}

/// The reference model's outcome.
pub async fn model_outcome(scenario: &Scenario) -> Result<Outcome, String> {
    let mut model = Model::new(scenario.schema);
    driver::run(scenario, &mut model, None).await.map_err(|e| format!("the model failed (a bug in reapcheck): {e}"))
}

/// What comparing one case did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compared {
    /// The target agreed with the model (under the dialect's profile).
    Agreed,
    /// The case needs a feature the dialect's profile declares absent: not run.
    Skipped,
}

/// Plays `loaded` on the model and on `target`, compared as `run` compares
/// them under the dialect's profile; the difference, if any, as `run`
/// renders it (`-` the model, `+` the target).
pub async fn compare(
    server: &Server,
    dialect: &Dialect,
    target: Target,
    loaded: &LoadedScenario,
) -> Result<Compared, String> {
    let reference = model_outcome(&loaded.scenario).await?;
    if runner::absent_feature(loaded, dialect, &reference).is_some() {
        return Ok(Compared::Skipped);
    }
    let expected = runner::model_document(&loaded.scenario, &dialect.profile).await;
    let outcome = runner::run_on(server, dialect, loaded).await.map_err(|e| format!("{target} failed: {e}"))?;
    let got = runner::compared_document(outcome, &dialect.profile);
    match diff::render("model", &expected, target.name(), &got) {
        Some(d) => Err(format!("{target} disagrees with the model\n{d}")),
        None => Ok(Compared::Agreed),
    }
}

/// What fuzzing one target found.
#[derive(Debug)]
pub struct TargetFuzz {
    /// Generated cases that ran before the end or the first failure.
    pub cases: u64,
    /// Of those, cases not run on the target: they need a feature its
    /// dialect's profile declares absent.
    pub skipped: u64,
    /// Runs spent shrinking a failure.
    pub shrink_runs: u64,
    /// Wall time of all runs.
    pub elapsed: Duration,
    /// The first failure, shrunk, if a case failed.
    pub failure: Option<Failure>,
}

/// A failing case after shrinking.
#[derive(Debug)]
pub struct Failure {
    /// The minimal case; none when the run stopped without one.
    pub case: Option<Case>,
    /// Why it fails: the difference, or the error.
    pub reason: String,
}

impl TargetFuzz {
    /// Case runs (generated and shrinking) per second of wall time.
    pub fn cases_per_second(&self) -> f64 {
        (self.cases + self.shrink_runs) as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// Runs `settings.cases` generated cases on `target`, blocking on `handle`
/// for each; the first difference is shrunk to a minimal case.
pub fn fuzz_target(
    handle: &Handle,
    server: &Server,
    dialect: &Dialect,
    target: Target,
    settings: &FuzzSettings,
) -> TargetFuzz {
    fuzz_with(settings, |loaded| handle.block_on(compare(server, dialect, target, loaded)))
}

/// Runs `settings.cases` generated cases through `compare` (a case loaded
/// as a scenario; `Err` with the difference when it disagrees with the
/// model), shrinking the first difference to a minimal case. The one loop
/// behind every fuzzed target, database or adapter.
pub fn fuzz_with(settings: &FuzzSettings, compare: impl Fn(&LoadedScenario) -> Result<Compared, String>) -> TargetFuzz {
    let cases = AtomicU64::new(0);
    let skipped = AtomicU64::new(0);
    let shrink_runs = AtomicU64::new(0);
    let failed = AtomicBool::new(false);
    let started = Instant::now();
    let mut runner = test_runner(settings);
    let result = runner.run(&strategy::case(), |case| {
        // After a signal (`crate::interrupt`) no case runs: each is
        // rejected, so proptest's runner gives up at its reject limit at
        // once instead of drawing every remaining case.
        if crate::interrupt::interrupted().is_some() {
            return Err(TestCaseError::reject("interrupted"));
        }
        let counter = if failed.load(Ordering::Relaxed) { &shrink_runs } else { &cases };
        counter.fetch_add(1, Ordering::Relaxed);
        let checked = load(&case, "fuzz", "a generated case").and_then(|(_, loaded)| compare(&loaded));
        if checked == Ok(Compared::Skipped) && !failed.load(Ordering::Relaxed) {
            skipped.fetch_add(1, Ordering::Relaxed);
        }
        checked.map(|_| ()).map_err(|why| {
            failed.store(true, Ordering::Relaxed);
            TestCaseError::fail(why)
        })
    });
    let failure = match result {
        Ok(()) => None,
        _ if crate::interrupt::interrupted().is_some() => None,
        Err(TestError::Fail(why, case)) => Some(Failure { case: Some(case), reason: why.message().to_owned() }),
        Err(TestError::Abort(why)) => {
            Some(Failure { case: None, reason: format!("the fuzz run stopped: {}", why.message()) })
        }
    };
    TargetFuzz {
        cases: cases.into_inner(),
        skipped: skipped.into_inner(),
        shrink_runs: shrink_runs.into_inner(),
        elapsed: started.elapsed(),
        failure,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::{Strategy, ValueTree};

    #[test]
    fn the_same_seed_draws_the_same_cases() {
        let draw = |seed| {
            let mut runner = test_runner(&FuzzSettings { cases: 1, seed, max_shrink_iters: 0 });
            let tree = strategy::case().new_tree(&mut runner).unwrap();
            format!("{:?}", tree.current())
        };
        assert_eq!(draw(7), draw(7));
        assert_ne!(draw(7), draw(8));
    }

    #[test]
    fn thousands_of_generated_scenarios_pass_the_loader() {
        let mut runner = test_runner(&FuzzSettings { cases: 3000, seed: 1, max_shrink_iters: 0 });
        runner
            .run(&strategy::case(), |case| load(&case, "fuzz", "generated").map(|_| ()).map_err(TestCaseError::fail))
            .unwrap();
    }
}
