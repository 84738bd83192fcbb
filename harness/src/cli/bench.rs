//! `reapcheck bench`: where the time of a (scenario, target) run goes
//! (setup, run, teardown), measured over repeated runs of the corpus, and
//! the wall time of the whole pass. Speed is measured here, never asserted
//! by timed tests.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use reapcheck::progress::Progress;
use reapcheck::reach::{self, Reach};
use reapcheck::runner::{self, Phases};

use super::inputs::report;
use super::run::parse_targets;
use super::{EXIT_FAILED, EXIT_INVALID, Inputs};

/// Arguments of `bench`.
#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    /// Targets, comma-separated, or `all`.
    #[arg(long, default_value = "sqlite")]
    db: String,
    /// Passes over the corpus per target.
    #[arg(long, default_value_t = 5)]
    iterations: usize,
    #[command(flatten)]
    inputs: Inputs,
}

/// Runs the benchmark and prints, per target, the median and 95th
/// percentile of each phase per scenario run, and the pass wall time.
pub fn bench(args: BenchArgs) -> ExitCode {
    let targets = match parse_targets(&args.db) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(EXIT_INVALID);
        }
    };
    let (scenarios, dialects) = match (
        args.inputs.scenarios(&[], false),
        args.inputs.dialects(&targets.iter().map(|t| t.dialect()).collect::<Vec<_>>()),
    ) {
        (Ok(s), Ok(d)) => (s, d),
        (s, d) => {
            if let Err(e) = s {
                report(&e);
            }
            if let Err(e) = d {
                report(&e);
            }
            return ExitCode::from(EXIT_INVALID);
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a runtime starts");
    let mut ok = true;
    for target in targets {
        let dialect = dialects.iter().find(|d| d.name == target.dialect()).expect("loaded");
        runtime.block_on(async {
            let (server, _container) = match reach::reach(target).await {
                Reach::Ready(s, keep) => (s, keep),
                Reach::Skipped(reason) | Reach::Unreachable(reason) => {
                    println!("{target}: not measured: {reason}");
                    ok = false;
                    return;
                }
            };
            let mut phases: Vec<Phases> = Vec::new();
            let mut passes = Vec::new();
            let runs = (args.iterations.max(1) * scenarios.len()) as u64;
            let progress = Progress::new(runs, &format!("bench {target}"));
            for _ in 0..args.iterations.max(1) {
                let pass = Instant::now();
                for s in &scenarios {
                    match runner::run_on_timed(&server, dialect, s).await {
                        Ok((_, p)) => phases.push(p),
                        Err(e) => {
                            progress.suspend(|| println!("{target}: {} failed: {e}", s.name));
                            ok = false;
                        }
                    }
                    progress.inc(1);
                }
                passes.push(pass.elapsed());
            }
            drop(progress);
            println!(
                "{target} [{}]: {} runs; per run median/p95 setup {} run {} teardown {}; corpus pass ({} scenarios, one at a time) median {}",
                server.version(),
                phases.len(),
                stats(phases.iter().map(|p| p.setup)),
                stats(phases.iter().map(|p| p.run)),
                stats(phases.iter().map(|p| p.teardown)),
                scenarios.len(),
                ms(median(&mut passes)),
            );
            server.close().await;
        });
    }
    if ok { ExitCode::SUCCESS } else { ExitCode::from(EXIT_FAILED) }
}

fn stats(values: impl Iterator<Item = Duration>) -> String {
    let mut v: Vec<Duration> = values.collect();
    let p95 = percentile(&mut v, 95);
    format!("{}/{}", ms(median(&mut v)), ms(p95))
}

fn median(v: &mut [Duration]) -> Duration {
    percentile(v, 50)
}

fn percentile(v: &mut [Duration], p: usize) -> Duration {
    if v.is_empty() {
        return Duration::ZERO;
    }
    v.sort();
    v[(v.len() - 1) * p / 100]
}

fn ms(d: Duration) -> String {
    format!("{:.2}ms", d.as_secs_f64() * 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_pick_from_the_sorted_values() {
        let mut v: Vec<Duration> = [5, 1, 3, 2, 4].into_iter().map(Duration::from_millis).collect();
        assert_eq!(median(&mut v), Duration::from_millis(3));
        assert_eq!(percentile(&mut v, 95), Duration::from_millis(4));
        assert_eq!(median(&mut []), Duration::ZERO);
        assert_eq!(ms(Duration::from_micros(1500)), "1.50ms");
    }
}
