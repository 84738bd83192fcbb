//! `reapcheck fuzz`: generated scenarios on the model and each target; the
//! first difference per target is shrunk, saved as a scenario file and
//! printed with the one-line command that reruns it. Ends with the cases per
//! second of each target. Database targets fuzz at once where they are
//! different servers ([`super::at_once`]); adapters after them.

use std::path::PathBuf;
use std::process::ExitCode;

use reapcheck::adapter::target::AdapterTarget;
use reapcheck::backend::Server;
use reapcheck::config::AdapterConfig;
use reapcheck::dialect::Dialect;
use reapcheck::fuzz::{self, Compared, FuzzSettings, TargetFuzz};
use reapcheck::interrupt;
use reapcheck::progress::Progress;
use reapcheck::runner::{self, Verdict};

use reapcheck::reach;
use reapcheck::target::Target;

use super::at_once;
use super::inputs::report;
use super::one_server::{self, Reached, random_seed};
use super::{EXIT_FAILED, EXIT_INVALID};

/// Arguments of `fuzz`.
#[derive(clap::Args, Debug)]
pub struct FuzzArgs {
    #[command(flatten)]
    statement_timeout: super::limits::StatementTimeout,
    /// Targets, comma-separated: sqlite, postgres, mariadb, mysql, cockroach,
    /// mssql, `adapter:<name>` (an `[adapters.<name>]` of reapcheck.toml),
    /// or `all` (the databases).
    #[arg(long, default_value = "sqlite")]
    db: String,
    /// Generated cases per target.
    #[arg(long, default_value_t = 256)]
    cases: u32,
    /// The generator's seed; without it a random one is drawn and printed.
    #[arg(long)]
    seed: Option<u64>,
    /// At most this many runs spent shrinking a failing case.
    #[arg(long, default_value_t = 2048)]
    max_shrink_iters: u32,
    /// Folder the shrunk failing cases are written to, one scenario file
    /// per target: `<target>-<seed>.yaml`.
    #[arg(long, default_value = "fuzz-failures")]
    out: PathBuf,
    /// Folder holding one sub-folder of SQL per dialect, instead of the copy
    /// built into reapcheck.
    #[arg(long)]
    dialects: Option<PathBuf>,
}

/// Runs the command; exit 0 when every target agreed with the model on
/// every case, 1 on a difference or when a target that should run did not
/// (or none ran at all), 2 on invalid arguments or dialects.
pub fn fuzz(args: FuzzArgs) -> ExitCode {
    args.statement_timeout.apply();
    let invalid = |message: String| {
        eprintln!("error: {message}");
        ExitCode::from(EXIT_INVALID)
    };
    // `--db` as `run` reads it (config.rs): database names, `all`, and
    // `adapter:<name>` for an `[adapters.<name>]` of reapcheck.toml.
    let project = match (super::Inputs { scenarios: None, dialects: None }).project() {
        Ok(p) => p,
        Err(errors) => return invalid(errors.join("\nerror: ")),
    };
    let selection = match project.targets(Some(&args.db)) {
        Ok(s) => s.value,
        Err(e) => return invalid(e.to_string()),
    };
    let targets = selection.targets;
    let adapters: Vec<AdapterConfig> =
        selection.adapters.iter().filter_map(|name| project.adapter(name).cloned()).collect();
    let required = match reach::required_targets() {
        Ok(r) => r,
        Err(e) => return invalid(e),
    };
    if args.cases == 0 {
        return invalid("--cases 0 would compare nothing: give at least 1".to_owned());
    }
    let inputs = super::Inputs { scenarios: None, dialects: args.dialects.clone() };
    let mut names: Vec<&str> = targets.iter().map(|t| t.dialect()).collect();
    names.sort_unstable();
    names.dedup();
    let dialects = match inputs.dialects(&names) {
        Ok(d) => d,
        Err(errors) => {
            report(&errors);
            return ExitCode::from(EXIT_INVALID);
        }
    };
    let seed = args.seed.unwrap_or_else(random_seed);
    let origin = if args.seed.is_some() { "given" } else { "random" };
    println!("fuzz: seed {seed} ({origin}), {} cases per target", args.cases);
    let settings = FuzzSettings { cases: args.cases, seed, max_shrink_iters: args.max_shrink_iters };
    interrupt::install();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a runtime starts");
    let (mut green, mut failed, mut skipped) = (0, 0, 0);
    let mut rates = Vec::new();
    // Every target reached first, in target order (a skip or a failure
    // prints its line then); the reached ones fuzz at once, one after
    // another where they share a server (`at_once`), each printing its
    // result when every target before it has.
    let mut reached = Vec::new();
    for &target in &targets {
        if interrupt::interrupted().is_some() {
            break;
        }
        match one_server::reach(&runtime, target, &required) {
            Reached::Ready(server, keep) => reached.push((target, server, keep)),
            Reached::Skipped => skipped += 1,
            Reached::Failed => failed += 1,
        }
    }
    if !reached.is_empty() {
        let names: Vec<&str> = reached.iter().map(|(t, ..)| t.name()).collect();
        let spinner = Progress::spinner(&format!("fuzz {}: {} cases each", names.join(", "), args.cases));
        let board = at_once::Board::new(reached.len(), |text| spinner.suspend(|| print!("{text}")));
        let servers = at_once::servers(reached.iter().map(|(t, ..)| *t));
        let mut keep = Vec::new();
        let mut runs = Vec::new();
        for (i, (target, server, kept)) in reached.into_iter().enumerate() {
            keep.push(kept);
            let dialect = dialects.iter().find(|d| d.name == target.dialect()).expect("loaded for every target");
            let (out, runtime, settings, args) = (board.out(i), &runtime, &settings, &args);
            runs.push(move || fuzz_target(runtime, target, server, dialect, settings, args, out));
        }
        for (agreed, rate) in at_once::run_blocking(&board, &servers, runs).into_iter().flatten() {
            rates.push(rate);
            if agreed { green += 1 } else { failed += 1 }
        }
        drop(keep);
    }
    for config in &adapters {
        if interrupt::interrupted().is_some() {
            break;
        }
        let name = config.target_name();
        let mut target = match runtime.block_on(AdapterTarget::open(config, &project.root)) {
            Ok(t) => t,
            Err(reason) => {
                println!("FAIL     {name} not run: {reason}");
                failed += 1;
                continue;
            }
        };
        let on = format!("{name} ({})", target.label());
        let spinner = Progress::spinner(&format!("fuzz {name}: {} cases", args.cases));
        let result = fuzz_adapter(&runtime, &mut target, &settings);
        drop(spinner);
        runtime.block_on(target.close());
        rates.push(format!("{name} {:.1}", result.cases_per_second()));
        let skipped_why = format!("{name}'s handshake declares absent");
        let (agreed, text) = result_text(&on, &name, "through its adapter", &skipped_why, &result, &args, seed);
        print!("{text}");
        if agreed {
            green += 1;
        } else {
            failed += 1;
        }
    }
    if !rates.is_empty() {
        println!("cases per second: {}", rates.join(", "));
    }
    println!("{green} targets agreed with the model, {failed} failed, {skipped} skipped");
    if let Some(signal) = interrupt::interrupted() {
        println!(
            "fuzz: interrupted by {signal}: the case in flight was stopped and its namespace dropped; no case ran \
             after it, so the counts above cover the cases before it"
        );
        return ExitCode::from(interrupt::exit_code());
    }
    if failed == 0 && green == 0 {
        println!("no target ran: nothing was compared");
        return ExitCode::from(EXIT_FAILED);
    }
    if failed > 0 { ExitCode::from(EXIT_FAILED) } else { ExitCode::SUCCESS }
}

/// Fuzzes one database target on `server`, its result to `out`; whether
/// it agreed on every case and its cases per second, or `None` when a
/// signal came before it started (then it printed nothing and counts
/// neither way).
fn fuzz_target(
    runtime: &tokio::runtime::Runtime,
    target: Target,
    server: Server,
    dialect: &Dialect,
    settings: &FuzzSettings,
    args: &FuzzArgs,
    out: at_once::Out<'_, '_>,
) -> Option<(bool, String)> {
    if interrupt::interrupted().is_some() {
        runtime.block_on(server.close());
        return None;
    }
    let on = format!("{target} [{}]", server.version());
    let result = fuzz::fuzz_with(settings, |loaded| {
        unless_interrupted(|| runtime.block_on(fuzz::compare(&server, dialect, target, loaded)))
    });
    runtime.block_on(server.close());
    let rate = format!("{target} {:.0}", result.cases_per_second());
    let sql = match &args.dialects {
        Some(d) => format!("through the {} dialect in {}", dialect.name, d.display()),
        None => format!("through the built-in {} dialect", dialect.name),
    };
    let skipped_why = format!("{}'s profile declares absent", dialect.name);
    let (agreed, text) = result_text(&on, target.name(), &sql, &skipped_why, &result, args, settings.seed);
    out.print(&text);
    Some((agreed, rate))
}

/// Fuzzes an adapter target: each generated case played through it and
/// judged as `run` judges it (its verdict, under its declared policy).
fn fuzz_adapter(runtime: &tokio::runtime::Runtime, target: &mut AdapterTarget, settings: &FuzzSettings) -> TargetFuzz {
    let target = std::cell::RefCell::new(target);
    fuzz::fuzz_with(settings, |loaded| {
        unless_interrupted(|| {
            let model = runtime.block_on(runner::check_model(loaded));
            let run = runtime.block_on(target.borrow_mut().check(loaded, Some(&model)));
            match run.verdict {
                Verdict::Skipped(_) => Ok(Compared::Skipped),
                Verdict::Fail(why) => Err(why),
                Verdict::Ok | Verdict::New | Verdict::Diverged(_) => Ok(Compared::Agreed),
            }
        })
    })
}

/// `compare()` unless a signal came (`reapcheck::interrupt`): then no case
/// runs, and a case the signal stopped mid-run counts as not compared
/// rather than as a difference to shrink and save. The remaining cases are
/// still drawn (no SQL runs for them), as proptest's runner has no stop.
fn unless_interrupted(compare: impl FnOnce() -> Result<Compared, String>) -> Result<Compared, String> {
    if interrupt::interrupted().is_some() {
        return Ok(Compared::Skipped);
    }
    let compared = compare();
    if interrupt::interrupted().is_some() { Ok(Compared::Skipped) } else { compared }
}

/// One target's result, its lines; true when it agreed on every case. `sql`
/// says what ran (`through the built-in sqlite dialect`), `skipped_why`
/// who declares a skipped case's feature absent.
fn result_text(
    on: &str,
    target: &str,
    sql: &str,
    skipped_why: &str,
    r: &TargetFuzz,
    args: &FuzzArgs,
    seed: u64,
) -> (bool, String) {
    use std::fmt::Write as _;
    let mut text = String::new();
    let seconds = r.elapsed.as_secs_f64();
    let Some(failure) = &r.failure else {
        let compared = r.cases - r.skipped;
        if compared == 0 {
            let _ = writeln!(
                text,
                "FAIL     {on}: none of {} cases ran: each needs a feature the profile declares absent",
                r.cases
            );
            return (false, text);
        }
        if r.skipped > 0 {
            let _ = writeln!(
                text,
                "ok       {on}: {compared} cases agree with the model, {} skipped: they need a feature \
                 {skipped_why} ({seconds:.1} s)",
                r.skipped
            );
        } else {
            let _ = writeln!(text, "ok       {on}: {compared} cases agree with the model ({seconds:.1} s)");
        }
        return (true, text);
    };
    let _ = writeln!(
        text,
        "FAIL     {on}: case {} of {} differs; shrunk in {} runs ({seconds:.1} s)",
        r.cases, args.cases, r.shrink_runs
    );
    for line in failure.reason.lines() {
        let _ = writeln!(text, "    {line}");
    }
    let Some(case) = &failure.case else { return (false, text) };
    // A file name without the `:` of `adapter:<name>`.
    let name = format!("{}-{seed}", target.replace(':', "-"));
    let mut rerun = format!("reapcheck run --db {target} --scenarios {}", args.out.display());
    if let Some(d) = &args.dialects {
        rerun.push_str(&format!(" --dialects {}", d.display()));
    }
    rerun.push_str(&format!(" --exact {name}"));
    let description = format!(
        "Found by `reapcheck fuzz --db {target} --seed {seed}` and shrunk: {target}, {sql}, disagrees \
         with the model (under the target's policy, when it declares one) on this case. Rerun: {rerun}"
    );
    match fuzz::save(&args.out, &name, &case.to_scenario(&description)) {
        Ok(path) => {
            let _ = writeln!(text, "    {}:1: the shrunk case", path.display());
            let _ = writeln!(text, "    rerun: {rerun}");
            let mut explain = format!("reapcheck explain {} --db {target}", path.display());
            if let Some(d) = &args.dialects {
                explain.push_str(&format!(" --dialects {}", d.display()));
            }
            let _ = writeln!(text, "    step by step beside the model: {explain}");
        }
        Err(e) => {
            let _ = writeln!(text, "    error: {e}");
        }
    }
    (false, text)
}
