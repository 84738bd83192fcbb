//! `reapcheck bench`: where the time of a (scenario, target) run goes
//! (setup, run, teardown), measured over repeated runs of the corpus, and
//! the wall time of the whole pass; with `--scale`, the reaper's scan on a
//! growing table ([`reapcheck::scale`]). Speed is measured here, never
//! asserted by timed tests.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use reapcheck::dialect::Dialect;
use reapcheck::interrupt;
use reapcheck::progress::Progress;
use reapcheck::reach::{self, Reach};
use reapcheck::runner::{self, Phases};
use reapcheck::scale;
use reapcheck::target::Target;

use super::inputs::report;
use super::run::parse_targets;
use super::{EXIT_FAILED, EXIT_INVALID, Inputs};

/// Arguments of `bench`.
#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    #[command(flatten)]
    statement_timeout: super::limits::StatementTimeout,
    /// Targets, comma-separated, or `all`.
    #[arg(long, default_value = "sqlite")]
    db: String,
    /// Passes over the corpus per target.
    #[arg(long, default_value_t = 5, conflicts_with = "compare")]
    iterations: usize,
    /// Measure the reaper at scale instead of the corpus: load each size,
    /// time `reap_scan` and the reap UPDATEs, print and judge the scan's
    /// plan, and report the growth ratio t(largest)/t(smallest).
    #[arg(long, conflicts_with = "compare")]
    scale: bool,
    /// `--scale`: table sizes in rows, comma-separated, ascending.
    #[arg(long, default_value = "10000,100000,1000000", value_name = "ROWS", conflicts_with = "compare")]
    sizes: String,
    /// `--scale`: processing rows, the same at every size.
    #[arg(long, default_value_t = 10_000, value_name = "ROWS", conflicts_with = "compare")]
    processing: usize,
    /// `--scale`: stale rows among the processing ones (the scan's
    /// candidates).
    #[arg(long, default_value_t = 1_000, value_name = "ROWS", conflicts_with = "compare")]
    stale: usize,
    /// `--scale`: timed scans per size (the median is reported).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u16).range(1..), conflicts_with = "compare")]
    runs: u16,
    /// `--scale`: the largest growth ratio that passes [default: 3 on
    /// MySQL and MariaDB, 1.5 elsewhere].
    #[arg(long, value_name = "RATIO", conflicts_with = "compare")]
    max_growth: Option<f64>,
    #[command(flatten)]
    compare: super::bench_compare::CompareArgs,
    #[command(flatten)]
    inputs: Inputs,
}

/// Runs the benchmark and prints, per target, the median and 95th
/// percentile of each phase per scenario run, and the pass wall time.
pub fn bench(args: BenchArgs) -> ExitCode {
    if let Some(flag) = args.compare.misplaced() {
        eprintln!("error: {flag} is a flag of `bench --compare`: add --compare, or leave {flag} out; nothing ran");
        return ExitCode::from(EXIT_INVALID);
    }
    if args.compare.compare {
        let code = super::bench_compare::compare(&args.compare, &args.db, &args.inputs, args.statement_timeout.seconds);
        // Stopped by a closed stdout, its child ended and its folder
        // removed (dropped): it ends as a closed stdout ends any other
        // command, by SIGPIPE.
        if reapcheck::compare::stdout_was_closed() && interrupt::interrupted().is_none() {
            return reapcheck::compare::end_as_a_broken_pipe();
        }
        return code;
    }
    args.statement_timeout.apply();
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
    if args.scale {
        let settings = match scale_settings(&args) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(EXIT_INVALID);
            }
        };
        interrupt::install();
        let mut ok = true;
        for target in targets {
            let dialect = dialects.iter().find(|d| d.name == target.dialect()).expect("loaded");
            ok &= runtime.block_on(scale_target(target, dialect, &settings, args.max_growth));
            if interrupt::interrupted().is_some() {
                return ExitCode::from(interrupt::exit_code());
            }
        }
        return if ok { ExitCode::SUCCESS } else { ExitCode::from(EXIT_FAILED) };
    }
    interrupt::install();
    let mut ok = true;
    for target in targets {
        if interrupt::interrupted().is_some() {
            break;
        }
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
                    if interrupt::interrupted().is_some() {
                        break;
                    }
                    match runner::run_on_timed(&server, dialect, s).await {
                        // A run the signal stopped is not a failure, nor a measurement.
                        Err(_) if interrupt::interrupted().is_some() => break,
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
            let interrupted = if interrupt::interrupted().is_some() { " (interrupted: partial)" } else { "" };
            println!(
                "{target} [{}]{interrupted}: {} runs; per run median/p95 setup {} run {} teardown {}; corpus pass ({} scenarios, one at a time) median {}",
                server.version(),
                phases.len(),
                stats(phases.iter().map(|p| p.setup)),
                stats(phases.iter().map(|p| p.run)),
                stats(phases.iter().map(|p| p.teardown)),
                scenarios.len(),
                ms(median(&passes)),
            );
            server.close().await;
        });
    }
    if let Some(signal) = interrupt::interrupted() {
        println!("bench: interrupted by {signal}: the run in flight was stopped and its namespace dropped");
        return ExitCode::from(interrupt::exit_code());
    }
    if ok { ExitCode::SUCCESS } else { ExitCode::from(EXIT_FAILED) }
}

/// The `--scale` settings, checked: sizes ascending and above zero, the
/// processing rows fitting in the smallest size, the stale ones among them.
fn scale_settings(args: &BenchArgs) -> Result<scale::Settings, String> {
    let mut sizes = Vec::new();
    for part in args.sizes.split(',') {
        let part = part.trim().replace('_', "");
        let size: usize =
            part.parse().map_err(|_| format!("--sizes: `{part}` is not a row count (e.g. 10000,100000)"))?;
        if size == 0 || sizes.last().is_some_and(|&last| size <= last) {
            return Err(format!("--sizes: {} must be above zero and ascending", args.sizes));
        }
        sizes.push(size);
    }
    let shape = scale::Shape { processing: args.processing, stale: args.stale };
    if shape.stale == 0 || shape.stale > shape.processing || shape.processing > sizes[0] {
        return Err(format!(
            "--stale {} and --processing {}: need 0 < stale <= processing <= the smallest size ({})",
            shape.stale, shape.processing, sizes[0]
        ));
    }
    if sizes.len() < 2 {
        return Err(format!(
            "--sizes: {} is one size; give two or more (e.g. 10000,100000) for a growth ratio",
            args.sizes
        ));
    }
    if let Some(goal) = args.max_growth
        && !(goal.is_finite() && goal > 0.0)
    {
        return Err(format!("--max-growth: {goal} is not a ratio above zero (e.g. 1.5)"));
    }
    Ok(scale::Settings { sizes, shape, runs: usize::from(args.runs) })
}

/// `bench --scale` on one target: prints each size as it is measured,
/// then the scan's plan at the largest size, its flags and the growth
/// ratio against the goal; true when no plan line is flagged and the
/// ratio is within the goal.
async fn scale_target(target: Target, dialect: &Dialect, settings: &scale::Settings, max_growth: Option<f64>) -> bool {
    let (server, _container) = match reach::reach(target).await {
        Reach::Ready(s, keep) => (s, keep),
        Reach::Skipped(reason) | Reach::Unreachable(reason) => {
            println!("{target}: not measured: {reason}");
            return false;
        }
    };
    let swept = runner::sweep(&server, dialect).await;
    if !swept.removed.is_empty() {
        println!("removed {} left on {target} by earlier runs", reapcheck::namespace::count(swept.removed.len()));
    }
    swept.errors.iter().for_each(|e| println!("warning: {target}: {e}"));
    let shape = settings.shape;
    println!(
        "{target} [{}]: reap_scan at scale ({} processing rows, {} stale; median of {} scans)",
        server.version(),
        shape.processing,
        shape.stale,
        settings.runs
    );
    println!(
        "  {:>9} {:>9} {:>10} {:>15} {:>22}",
        "rows",
        "load",
        "scan",
        "scan (generic)",
        format!("reap {} rows", shape.stale)
    );
    let progress = Progress::spinner(&format!("bench --scale {target}"));
    let measured = scale::measure(&server, dialect, settings, |size| {
        progress.suspend(|| {
            let generic = size.scan_generic.map_or_else(|| "-".to_owned(), ms);
            println!(
                "  {:>9} {:>8.1}s {:>10} {:>15} {:>22}",
                size.rows,
                size.load.as_secs_f64(),
                ms(size.scan),
                generic,
                ms(size.apply)
            );
        })
    })
    .await;
    drop(progress);
    let _ = server.release_lanes().await;
    server.close().await;
    let report = match measured {
        Ok(r) => r,
        Err(e) => {
            println!("{target}: scale FAILED: {e}");
            return false;
        }
    };
    let Some(largest) = report.sizes.last() else { return false };
    let mut flags = Vec::new();
    for (label, plan) in [("plan", Some(&largest.plan)), ("generic plan", largest.plan_generic.as_ref())] {
        let Some(plan) = plan else { continue };
        println!("  {label} at {} rows:", largest.rows);
        for line in plan {
            println!("    {line}");
        }
        flags.extend(scale::judge(report.planner, plan).into_iter().map(|f| (label, f)));
    }
    for (label, f) in &flags {
        println!("  FLAGGED ({label}): `{}` reads {}", f.line, f.reads);
    }
    let goal = max_growth.unwrap_or(if dialect.name == "mysql" { 3.0 } else { 1.5 });
    let mut ok = flags.is_empty();
    let smallest = report.sizes.first().map_or(0, |s| s.rows);
    if !flags.is_empty() {
        println!(
            "  what to do: give the scan an index it can range over on the staleness instant, limited to processing \
             rows where the product allows (see dialects/*/schema.sql, jobs_stale)"
        );
    }
    if report.sizes.first().is_some_and(|s| s.scan < Duration::from_millis(1)) {
        println!(
            "  note: a scan under 1 ms at {smallest} rows is mostly noise, and so is its ratio: measure larger sizes \
             (the default 10000,100000,1000000) before trusting it"
        );
    }
    for (label, growth) in [("growth", report.growth()), ("generic growth", report.growth_generic())] {
        let Some(growth) = growth else { continue };
        let within = growth <= goal;
        ok &= within;
        println!(
            "  {label} t({})/t({smallest}): {growth:.2} (goal at most {goal}): {}",
            largest.rows,
            if within { "ok" } else { "OVER" }
        );
    }
    println!("{target}: scale {}", if ok { "ok" } else { "FAILED" });
    ok
}

fn stats(values: impl Iterator<Item = Duration>) -> String {
    let mut v: Vec<Duration> = values.collect();
    let p95 = percentile(&mut v, 95);
    format!("{}/{}", ms(median(&v)), ms(p95))
}

/// The one median of `bench` ([`reapcheck::compare::median`]): of an even
/// count, the mean of the two middle values, not the lower one alone (the
/// faster of `--iterations 2`'s passes).
fn median(v: &[Duration]) -> Duration {
    reapcheck::compare::median(v).unwrap_or(Duration::ZERO)
}

/// The `p`th percentile of `v` by nearest rank
/// ([`reapcheck::compare::nearest_rank`]), zero when `v` is empty.
fn percentile(v: &mut [Duration], p: usize) -> Duration {
    v.sort();
    reapcheck::compare::nearest_rank(v, p).unwrap_or(Duration::ZERO)
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
        assert_eq!(median(&v), Duration::from_millis(3));
        assert_eq!(percentile(&mut v, 95), Duration::from_millis(5), "nearest rank: 95% of 5 values is the 5th");
        assert_eq!(percentile(&mut v, 50), Duration::from_millis(3));
        assert_eq!(percentile(&mut v, 20), Duration::from_millis(1));
        assert_eq!(median(&[]), Duration::ZERO);
        let even: Vec<Duration> = [4, 1, 3, 2].into_iter().map(Duration::from_millis).collect();
        assert_eq!(median(&even), Duration::from_micros(2500), "the mean of the two middle values");
        assert_eq!(ms(Duration::from_micros(1500)), "1.50ms");
    }
}
