//! `reapcheck run`: scenarios on the model and the chosen targets, one line
//! per scenario and target, and a closing line that counts the model and
//! each database target apart (`model: N passed, 0 failed; sqlite: N
//! passed, 0 failed, 0 skipped`), so that model checks are never counted
//! under a database's name. The database targets run at once where they are
//! different servers ([`super::at_once`]), each target's lines printed
//! together, in target order; adapter targets run after them.

use std::panic::AssertUnwindSafe;
use std::process::ExitCode;
use std::time::Instant;

use futures_util::{FutureExt, StreamExt, stream};

use reapcheck::adapter::target::AdapterTarget;
use reapcheck::config::AdapterConfig;
use reapcheck::coverage::Coverage;
use reapcheck::dialect::Dialect;
use reapcheck::interrupt;
use reapcheck::progress::Progress;
use reapcheck::reach::{self, Reach};
use reapcheck::report::{self, CaseRecord, NOT_REACHED, NOT_RUN, outcomes};
use reapcheck::runner::{self, Verdict};
use reapcheck::scenario::LoadedScenario;
use reapcheck::snapshot;
use reapcheck::target::Target;
use reapcheck::trace;

use super::at_once;
use super::inputs::report;
use super::{EXIT_FAILED, EXIT_INVALID, Inputs};

/// Arguments of `run`.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    statement_timeout: super::limits::StatementTimeout,
    /// Targets, comma-separated: sqlite, postgres, mariadb, mysql, cockroach,
    /// mssql, `adapter:<name>` (an `[adapters.<name>]` of reapcheck.toml),
    /// or `all` alone (the databases it can reach, listing what it skipped)
    /// [default: REAPCHECK_DB, else `targets` in reapcheck.toml, else sqlite].
    /// A target named here that cannot be reached fails the run.
    #[arg(long, value_name = "TARGETS")]
    db: Option<String>,
    /// Targets that must run, comma-separated; each must be selected
    /// [default: REAPCHECK_REQUIRE, else `required` in reapcheck.toml].
    #[arg(long, value_name = "TARGETS")]
    require: Option<String>,
    /// Report a named target that has no URL (and no container) as skipped
    /// instead of failing (never a required one); a URL that is set and
    /// does not answer still fails.
    #[arg(long)]
    allow_skip: bool,
    #[command(flatten)]
    inputs: Inputs,
    /// Write the snapshot of every scenario that has none, from the model.
    #[arg(long)]
    accept: bool,
    /// With --accept: also replace snapshots that differ from the model's
    /// outcome (where the scenario's `expect` holds). Narrow it with
    /// filters, e.g. `--accept --force --exact grace/floor`.
    #[arg(long, requires = "accept")]
    force: bool,
    /// Filters match whole scenario names instead of parts of them.
    #[arg(long)]
    exact: bool,
    /// Scenarios run at once on each database server (1 to 64), each on a
    /// session of its own; on SQLite, whose statements run in this
    /// process, one at a time whatever it says.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=64))]
    jobs: u16,
    /// Write junit.xml, summary.txt, outcomes.json, matrix.html and
    /// summary.md into this folder (docs/reports.md); an earlier run's are
    /// removed first.
    #[arg(long)]
    report: Option<std::path::PathBuf>,
    /// The leg's name in outcomes.json, which `reapcheck verdict --expect`
    /// matches (default: the --db list).
    #[arg(long, value_name = "NAME")]
    leg: Option<String>,
    /// Print, per database target, how many scenarios executed each
    /// statement and each UPDATE's branches (changed rows or none).
    #[arg(long)]
    coverage: bool,
    /// Fail when a statement is executed by fewer scenarios than this on a
    /// target (checked when no filter narrows the corpus; 0 turns the check
    /// off for a folder that is not the whole corpus).
    #[arg(long, default_value_t = 1, value_name = "N")]
    coverage_min: usize,
    /// Print the SQL trace of every case on a database target (statements,
    /// file:line, bound values, results), not only of failures.
    #[arg(long)]
    trace: bool,
    /// Print only failures, what cannot run, and the closing counts: no
    /// `ok`, `new`, `diverged` or per-scenario `skipped` line (a CI log
    /// of three databases is otherwise some 600 `ok` lines).
    #[arg(long, short)]
    quiet: bool,
    /// Only scenarios whose name contains one of these.
    filters: Vec<String>,
}

/// Counts of one target (or the model) for the closing line.
#[derive(Default, Clone, Copy)]
struct Counts {
    passed: usize,
    failed: usize,
    skipped: usize,
    new: usize,
}

impl Counts {
    fn add(&mut self, verdict: &Verdict) {
        match verdict {
            Verdict::Ok | Verdict::Diverged(_) => self.passed += 1,
            Verdict::New => {
                self.passed += 1;
                self.new += 1;
            }
            Verdict::Skipped(_) => self.skipped += 1,
            Verdict::Fail(_) => self.failed += 1,
        }
    }
}

/// The closing line's counts: the model and each target apart, in order.
#[derive(Default)]
struct Tally {
    rows: Vec<(String, Counts)>,
    /// Failures outside any case (coverage, reports).
    other_failed: usize,
    /// Some database target was reached and ran SQL.
    sql_ran: bool,
}

impl Tally {
    fn add(&mut self, target: &str, verdict: &Verdict) {
        let index = match self.rows.iter().position(|(t, _)| t == target) {
            Some(i) => i,
            None => {
                self.rows.push((target.to_owned(), Counts::default()));
                self.rows.len() - 1
            }
        };
        self.rows[index].1.add(verdict);
    }

    /// Adds a case record; a target's case ran SQL unless it was not reached.
    fn add_record(&mut self, r: &CaseRecord) {
        self.add(&r.target, &r.verdict);
        if r.target != "model" && !matches!(r.server.as_str(), NOT_RUN | NOT_REACHED) {
            self.sql_ran = true;
        }
    }

    fn failed(&self) -> usize {
        self.rows.iter().map(|(_, c)| c.failed).sum::<usize>() + self.other_failed
    }

    fn without_snapshot(&self) -> usize {
        self.rows.iter().map(|(_, c)| c.new).sum()
    }

    /// `model: 132 passed, 0 failed; sqlite: 132 passed, 0 failed, 0 skipped`
    /// (and `, N other failures` when coverage or reports failed).
    fn line(&self) -> String {
        let mut parts: Vec<String> = self
            .rows
            .iter()
            .map(|(t, c)| {
                if t == "model" {
                    format!("model: {} passed, {} failed", c.passed, c.failed)
                } else {
                    format!("{t}: {} passed, {} failed, {} skipped", c.passed, c.failed, c.skipped)
                }
            })
            .collect();
        if !self.sql_ran {
            parts.push("no SQL ran on any database".to_owned());
        }
        let mut line = parts.join("; ");
        if self.other_failed > 0 {
            line.push_str(&format!("; {} other failures", self.other_failed));
        }
        line
    }
}

/// The targets named by `--db` (`all` alone, or names).
pub fn parse_targets(list: &str) -> Result<Vec<Target>, String> {
    let names: Vec<&str> = list.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
    if names.contains(&"all") {
        if names.len() > 1 {
            return Err(format!(
                "`all` cannot be combined with other targets in --db {list}: give `--db all` alone, or list the targets"
            ));
        }
        return Ok(Target::ALL.to_vec());
    }
    let mut targets = Vec::new();
    for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let t = Target::from_name(name)
            .ok_or_else(|| format!("unknown target `{name}` in --db: the targets are {}", reach::target_names()))?;
        if !targets.contains(&t) {
            targets.push(t);
        }
    }
    if targets.is_empty() {
        return Err("--db names no target".to_owned());
    }
    Ok(targets)
}

/// Runs the command; see the module docs.
pub fn run(args: RunArgs) -> ExitCode {
    args.statement_timeout.apply();
    let invalid = |message: String| {
        eprintln!("error: {message}");
        ExitCode::from(EXIT_INVALID)
    };
    // A run that ends early must not leave the previous run's report.
    if let Some(dir) = &args.report
        && let Err(e) = report::clear(dir)
    {
        return invalid(format!("cannot remove the previous reports in {}: {e}", dir.display()));
    }
    let project = match args.inputs.project() {
        Ok(p) => p,
        Err(e) => return invalid(e.join("\n")),
    };
    let (selection, required) = match (project.targets(args.db.as_deref()), project.required(args.require.as_deref())) {
        (Ok(s), Ok(r)) => (s, r),
        (Err(e), _) | (_, Err(e)) => return invalid(e.to_string()),
    };
    let targets = selection.value.targets.clone();
    let required_targets = required.value.targets.clone();
    let adapters: Vec<AdapterConfig> =
        selection.value.adapters.iter().filter_map(|name| project.adapter(name).cloned()).collect();
    let required_adapters = required.value.adapters.clone();
    let mut unselected: Vec<&str> =
        required_targets.iter().filter(|t| !targets.contains(t)).map(|t| t.name()).collect();
    let adapter_names: Vec<String> = required_adapters
        .iter()
        .filter(|a| !selection.value.adapters.contains(a))
        .map(|a| format!("{}{a}", reapcheck::config::ADAPTER_PREFIX))
        .collect();
    unselected.extend(adapter_names.iter().map(String::as_str));
    if !unselected.is_empty() {
        return invalid(format!(
            "{}: requires {}, which the targets ({}, from {}) do not include: add it to --db, or stop requiring it",
            required.origin,
            unselected.join(", "),
            target_list(&targets, &adapters),
            selection.origin
        ));
    }
    // Targets whose skip fails the run: the required ones, and every one
    // named explicitly unless `all` chose them or --allow-skip is given.
    let must_run: Vec<Target> =
        if selection.value.all || args.allow_skip { required_targets.clone() } else { targets.clone() };
    let must_run_adapters: Vec<String> =
        if selection.value.all || args.allow_skip { required_adapters } else { selection.value.adapters.clone() };
    // A URL its driver cannot read is invalid input, refused before anything
    // runs, not a server that did not answer.
    for &target in targets.iter().filter(|t| **t != Target::Sqlite) {
        let variable = target.url_variable();
        if let Ok(url) = std::env::var(&variable)
            && !url.trim().is_empty()
            && let Some(why) = reach::url_variable_refused(target, &url)
        {
            return invalid(format!("{why}: fix the URL; nothing ran"));
        }
    }
    let scenarios = match args.inputs.scenarios(&args.filters, args.exact) {
        Ok(s) if s.is_empty() => {
            let known = args.inputs.scenarios(&[], false).unwrap_or_default();
            return invalid(format!(
                "no scenario in {} matches {:?}: nothing would run{}",
                args.inputs.scenarios_shown(),
                args.filters,
                super::inputs::did_you_mean(&args.filters, &known)
            ));
        }
        Ok(s) => s,
        Err(errors) => {
            report(&errors);
            return ExitCode::from(EXIT_INVALID);
        }
    };
    let mut dialect_names: Vec<&str> = targets.iter().map(|t| t.dialect()).collect();
    dialect_names.dedup();
    let dialects = match args.inputs.dialects(&dialect_names) {
        Ok(d) => d,
        Err(errors) => {
            report(&errors);
            return ExitCode::from(EXIT_INVALID);
        }
    };
    let outside = reapcheck::scenario::outside_limits_of(&scenarios, &targets, &dialects);
    if !outside.is_empty() {
        report(&outside);
        return ExitCode::from(EXIT_INVALID);
    }
    println!("{}{}", args.inputs.describe_sql(&dialect_names), hashes_shown(&dialects));
    let root = project.root.clone();
    let plan = Plan {
        scenarios: &scenarios,
        targets: &targets,
        must_run: &must_run,
        required: &required_targets,
        dialects: &dialects,
        root: &root,
        adapters: &adapters,
        must_run_adapters: &must_run_adapters,
    };
    interrupt::install();
    // One thread drives the whole run, whatever --jobs says. Every target's
    // cases are futures of this one task (`at_once::run`, `buffered`), so
    // a second thread never ran any of them; on the multi-thread runtime
    // its workers read the sockets and pipes and handed every reply to
    // this thread (on MariaDB about 35 us a statement). `bench --compare
    // --db postgres,mariadb --rounds 5`, the default --jobs against
    // psql/mariadb, multi-thread then one thread: quiet 0.63x/0.57x and
    // 0.73x/0.66x; beside a busy CPU 1.13x/0.93x and 1.20x/0.96x (where
    // it had been slower than --jobs 1).
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime starts");
    // Every dialect of the port, not only the selected targets': a CI leg
    // runs one database, and the policy must not drift between legs. Only
    // their profiles are read (the SQL of the five not run was a fortieth
    // of a SQLite run's instructions); one that does not read is left to
    // the run that selects it.
    let whole_port = args.inputs.profiles(&args.inputs.dialect_names().unwrap_or_default());
    if let Some(why) = reapcheck::policy::disagreement(whole_port.iter().map(|(name, p)| (name.as_str(), &p.policy))) {
        eprintln!("error: {why}");
        return ExitCode::from(EXIT_INVALID);
    }
    let pin_errors = runtime.block_on(runner::pin_problems(&scenarios, &dialects, args.filters.is_empty()));
    if !pin_errors.is_empty() {
        pin_errors.iter().for_each(|e| eprintln!("error: {e}"));
        return ExitCode::from(EXIT_INVALID);
    }
    let (records, coverages, left) = runtime.block_on(run_all(&args, &plan));
    let mut tally = Tally::default();
    records.iter().for_each(|r| tally.add_record(r));
    let interrupted = interrupt::interrupted();
    tally.other_failed += check_coverage(&args, &coverages, interrupted);
    if let Some(signal) = interrupted {
        println!("{}", interrupted_line(signal, &left));
    }
    if let Some(dir) = &args.report {
        let corpus = outcomes::corpus_hash(scenarios.iter().map(|s| (s.name.as_str(), s.path.as_path())));
        let run = outcomes::RunInfo {
            leg: args.leg.clone().unwrap_or_else(|| target_list(&targets, &adapters)),
            corpus_hash: corpus.unwrap_or_else(|e| format!("unreadable: {e}")),
            filters: args.filters.clone(),
            code: code_of_targets(&dialects, &targets, &adapters),
            interrupted: interrupted.map(str::to_owned),
        };
        match report::write(dir, &records, &run) {
            Ok(()) => println!("reports written to {}", dir.display()),
            Err(e) => {
                eprintln!("error: cannot write reports to {}: {e}", dir.display());
                tally.other_failed += 1;
            }
        }
    }
    if tally.without_snapshot() > 0 && !args.accept {
        println!("{}", missing_snapshots_hint(tally.without_snapshot(), &root));
    }
    print!("{}", report::failure_list(&records));
    for line in resolution_hints(&records, &dialects) {
        println!("{line}");
    }
    // Only the whole corpus tells a scenario that is gone from one filtered out.
    if args.filters.is_empty() {
        for orphan in super::check::orphaned_snapshots(&args.inputs) {
            match orphan {
                Ok(orphan) => println!("warning: {orphan}"),
                Err(e) => println!("warning: {e}"),
            }
        }
    }
    println!("{}", tally.line());
    if interrupted.is_some() {
        return ExitCode::from(interrupt::exit_code());
    }
    if tally.failed() > 0 {
        return ExitCode::from(EXIT_FAILED);
    }
    if !tally.sql_ran && (!targets.is_empty() || !adapters.is_empty()) {
        // Skips are allowed one by one; a run that judged nothing on any
        // database must not pass as if it had.
        println!(
            "FAIL     every database target was skipped, so nothing was judged on a database: --allow-skip lets \
             some targets skip, not all; set a target's URL (or run `--db sqlite`)"
        );
        return ExitCode::from(EXIT_FAILED);
    }
    ExitCode::SUCCESS
}

/// One hint line per database target whose failures are mostly instants
/// that agree once truncated to whole seconds (or milliseconds)
/// ([`reapcheck::diff::vanishing_step`]): a store that keeps that
/// resolution without declaring `time_resolution` in its `dialect.toml`.
/// More than half of the target's failures must show it, and the dialect
/// must not declare that step (or a coarser one) already.
fn resolution_hints(records: &[CaseRecord], dialects: &[Dialect]) -> Vec<String> {
    let mut hints = Vec::new();
    let mut targets: Vec<&str> = records.iter().map(|r| r.target.as_str()).collect();
    targets.dedup();
    for name in targets {
        let Some(dialect) = Target::from_name(name).and_then(|t| dialects.iter().find(|d| d.name == t.dialect()))
        else {
            continue;
        };
        let failures: Vec<&str> = records
            .iter()
            .filter(|r| r.target == name)
            .filter_map(|r| match &r.verdict {
                Verdict::Fail(detail) => Some(detail.as_str()),
                _ => None,
            })
            .collect();
        let steps: Vec<&str> = failures.iter().filter_map(|d| reapcheck::diff::vanishing_step(d)).collect();
        // A diff that vanishes at 1 ms also vanishes at 1 s: the finest step most failures share.
        let chosen = reapcheck::diff::STEPS.iter().find_map(|&(step, micros)| {
            let shared = steps.iter().filter(|s| reapcheck::diff::STEPS.iter().any(|(n, m)| n == *s && *m <= micros));
            let count = shared.count();
            (count * 2 > failures.len()).then_some((step, micros, count))
        });
        let Some((step, micros, count)) = chosen else { continue };
        if dialect.profile.time_resolution.micros() >= micros {
            continue;
        }
        let file = match dialect.provenance.source.as_str() {
            "builtin" => format!("{}/dialect.toml of your port", dialect.name),
            folder => format!("{}/dialect.toml", folder.trim_end_matches('/')),
        };
        let unit = if step == "1s" { "whole seconds" } else { "whole milliseconds" };
        hints.push(format!(
            "hint: {count} of the {} failures on {name} differ only in instants that agree when truncated to {unit}: \
             if the store keeps {unit}, declare `time_resolution = \"{step}\"` (with a `reason`) in {file} \
             (docs/dialect-profile.md)",
            failures.len()
        ));
    }
    hints
}

/// The line under a run whose results have no snapshot. `cargo insta
/// review` works only where `cargo test` compares the snapshots, that is in
/// reapcheck's own repository ([`snapshot::is_reapcheck_repository`]), so
/// it is named only there.
fn missing_snapshots_hint(count: usize, root: &std::path::Path) -> String {
    let insta = if snapshot::is_reapcheck_repository(root) { " (or `cargo insta review` after the tests)" } else { "" };
    format!("{count} results have no committed snapshot yet: `reapcheck run --accept` writes them{insta}")
}

/// What a run plays, resolved from the arguments and the project.
struct Plan<'a> {
    scenarios: &'a [LoadedScenario],
    targets: &'a [Target],
    /// Targets whose skip is a failure.
    must_run: &'a [Target],
    /// Targets that are required (a subset of `must_run`).
    required: &'a [Target],
    dialects: &'a [Dialect],
    /// The project root, against which snapshots name their scenario
    /// (and where adapters run).
    root: &'a std::path::Path,
    /// The adapter targets, after the database targets.
    adapters: &'a [AdapterConfig],
    /// The adapters whose skip is a failure (names without `adapter:`).
    must_run_adapters: &'a [String],
}

/// The targets as `--db` names them: `sqlite,adapter:ref`.
/// Whose code ran on each target, for `outcomes.json`
/// ([`outcomes::TargetSummary::code`]): a SQL target's dialect provenance
/// and policy, an adapter's command.
fn code_of_targets(dialects: &[Dialect], targets: &[Target], adapters: &[AdapterConfig]) -> Vec<(String, String)> {
    let sql = targets.iter().filter_map(|t| {
        let dialect = dialects.iter().find(|d| d.name == t.dialect())?;
        let policy = if dialect.profile.policy.is_reference() {
            "reference policy".to_owned()
        } else {
            let knobs: Vec<String> =
                dialect.profile.policy.decisions().iter().map(|(k, v)| format!("{k} = {v}")).collect();
            format!("policy {}", knobs.join(", "))
        };
        let p = &dialect.provenance;
        let source = if p.source == "builtin" { format!("builtin {}", dialect.name) } else { p.source.clone() };
        Some((t.name().to_owned(), format!("{source} {}; {policy}", p.hash)))
    });
    let adapters = adapters
        .iter()
        .map(|a| (a.target_name(), format!("adapter command `{}` on {}", a.command.join(" "), a.database.name())));
    sql.chain(adapters).collect()
}

/// `; sqlite sha256:0123456789ab, postgres sha256:…` for the opening line:
/// which files each dialect's SQL was read from, told apart by hash.
fn hashes_shown(dialects: &[Dialect]) -> String {
    if dialects.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = dialects
        .iter()
        .map(|d| format!("{} {}", d.name, d.provenance.to_string().rsplit(' ').next().unwrap_or_default()))
        .collect();
    format!("; SQL hashes: {}", parts.join(", "))
}

fn target_list(targets: &[Target], adapters: &[AdapterConfig]) -> String {
    let names = targets.iter().map(|t| t.name().to_owned()).chain(adapters.iter().map(AdapterConfig::target_name));
    names.collect::<Vec<_>>().join(",")
}

/// What one database target's server still holds of this run once its
/// cases are done and its idle lanes dropped, from its catalog
/// ([`runner::left_behind`]).
pub(super) struct Left {
    target: Target,
    /// The namespaces still there, or why the catalog could not be read.
    names: Result<Vec<String>, String>,
}

impl Left {
    /// Drops `server`'s idle lanes (their namespaces are this run's until
    /// then), then reads what its catalog still holds of this run; with the
    /// lines to print, `warning: ` first: lanes that could not be dropped,
    /// then [`Left::warning`].
    pub(super) async fn check(server: &reapcheck::backend::Server, target: Target) -> (Left, Vec<String>) {
        let mut lines: Vec<String> =
            server.release_lanes().await.into_iter().map(|e| format!("{target}: {e}")).collect();
        let left = Left { target, names: runner::left_behind(server).await };
        lines.extend(left.warning());
        (left, lines.into_iter().map(|l| format!("warning: {l}")).collect())
    }

    /// The warning to print, when something may be left.
    pub(super) fn warning(&self) -> Option<String> {
        let target = self.target;
        match &self.names {
            Ok(names) if names.is_empty() => None,
            Ok(names) => Some(format!(
                "{} namespaces of this run are still on {target} ({}): the next `reapcheck run --db {target}` removes them",
                names.len(),
                names.join(", ")
            )),
            Err(why) => Some(format!(
                "cannot check that this run's namespaces on {target} are gone ({why}): the next `reapcheck run --db \
                 {target}` removes any that are left"
            )),
        }
    }
}

/// The line after an interrupted run: what was stopped, and what the
/// servers' catalogs say of its namespaces (never that they were dropped
/// unless each reached server's catalog shows none left).
fn interrupted_line(signal: &str, left: &[Left]) -> String {
    let warnings: Vec<String> = left.iter().filter_map(Left::warning).collect();
    let start = format!("interrupted by {signal}: no scenario started after it; the runs in flight were stopped");
    if warnings.is_empty() {
        let checked =
            if left.is_empty() { String::new() } else { " (none is left in the servers' catalogs)".to_owned() };
        return format!("{start} and their namespaces dropped{checked}");
    }
    format!("{start}; {}", warnings.join("; "))
}

async fn run_all(args: &RunArgs, plan: &Plan<'_>) -> (Vec<CaseRecord>, Vec<Coverage>, Vec<Left>) {
    let Plan { scenarios, targets, root, .. } = *plan;
    let mut records = Vec::new();
    let mut coverages = Vec::new();
    let mut left = Vec::new();
    let mut models = Vec::with_capacity(scenarios.len());
    let progress = Progress::new((scenarios.len() * (targets.len() + plan.adapters.len() + 1)) as u64, "run");
    for (s, checked) in scenarios.iter().zip(runner::check_models(scenarios, !plan.adapters.is_empty())) {
        let started = Instant::now();
        let Some(checked) = checked else {
            let signal = interrupt::interrupted().unwrap_or("a signal");
            records.push(record(s, "model", "model", not_started(signal), started, None, args));
            models.push(None);
            continue;
        };
        let mut model = match checked.run {
            Ok(model) => model,
            Err(panic) => {
                let verdict = Verdict::Fail(runner::panicked("model", panic.as_ref()).to_string());
                let mut record = record(s, "model", "model", verdict, started, None, args);
                record.elapsed = checked.elapsed;
                progress.suspend(|| print!("{}", case_text(&record, s, args.quiet)));
                progress.inc(1);
                records.push(record);
                models.push(None);
                continue;
            }
        };
        let replace = args.force && model.stale;
        if args.accept && (model.verdict == Verdict::New || replace) {
            let path = snapshot::path(&s.path, None);
            match snapshot::write(&path, snapshot::source(root), &snapshot::input_file(&s.path, root), &model.yaml) {
                Ok(()) => {
                    println!("{} {}", if replace { "replaced" } else { "wrote" }, path.display());
                    model.snapshot = Some(model.yaml.clone());
                    model.stale = false;
                    if replace {
                        model.verdict = Verdict::Ok;
                    }
                }
                Err(e) => model.verdict = Verdict::Fail(format!("cannot write {}: {e}", path.display())),
            }
        }
        model.verdict = runner::under_ci(model.verdict, &format!("reapcheck run --accept --exact {}", s.name));
        let mut record = record(s, "model", "model", model.verdict.clone(), started, checked.hash, args);
        record.elapsed = checked.elapsed;
        progress.suspend(|| print!("{}", case_text(&record, s, args.quiet)));
        progress.inc(1);
        records.push(record);
        models.push(Some(model));
    }
    // The database targets at once (one after another where they share a
    // server), each printing through its own `Out`, in target order.
    let board = at_once::Board::new(targets.len(), |text| progress.suspend(|| print!("{text}")));
    let servers = at_once::servers(targets.iter().copied());
    let runs =
        targets.iter().enumerate().map(|(i, &target)| run_target(args, plan, &models, &progress, target, board.out(i)));
    for run in at_once::run(&board, &servers, runs.collect()).await {
        records.extend(run.records);
        coverages.extend(run.coverage);
        left.extend(run.left);
    }
    run_adapters(args, plan, &models, &progress, &mut records).await;
    (records, coverages, left)
}

/// What one database target came to: its records in scenario order, its
/// coverage and what its server still holds of this run (neither when it
/// was not reached).
struct TargetRun {
    records: Vec<CaseRecord>,
    coverage: Option<Coverage>,
    left: Option<Left>,
}

/// How many of `target`'s cases `run` plays at once: `--jobs`, but one
/// on SQLite, whose statements run inline on the thread that polls the
/// case (`backend::sqlite`), so that its cases never overlapped and
/// interleaving four of them only cost (`run --db sqlite` was 2% to 3%
/// slower than `--jobs 1` in `perf stat -r 15`).
fn cases_at_once(target: Target, jobs: u16) -> usize {
    if target == Target::Sqlite { 1 } else { usize::from(jobs) }
}

/// Plays every scenario on `target`, [`cases_at_once`] at once, its lines
/// to `out`.
async fn run_target(
    args: &RunArgs,
    plan: &Plan<'_>,
    models: &[Option<runner::ModelRun>],
    progress: &Progress,
    target: Target,
    out: at_once::Out<'_, '_>,
) -> TargetRun {
    let Plan { scenarios, must_run, required, dialects, root, .. } = *plan;
    let not_run = |verdict: Verdict, server: &str| {
        let records =
            scenarios.iter().map(|s| record(s, target.name(), server, verdict.clone(), Instant::now(), None, args));
        TargetRun { records: records.collect(), coverage: None, left: None }
    };
    let dialect = dialects.iter().find(|d| d.name == target.dialect()).expect("loaded for every target");
    if let Some(signal) = interrupt::interrupted() {
        return not_run(not_started(signal), NOT_RUN);
    }
    let (mut server, _container) = match reach::reach(target).await {
        Reach::Ready(server, keep) => (server, keep),
        Reach::Skipped(reason) if !must_run.contains(&target) => {
            out.line(format!("skipped: {target} ({} scenarios): {reason}", scenarios.len()));
            progress.inc(scenarios.len() as u64);
            return not_run(Verdict::Skipped(reason), NOT_RUN);
        }
        reached @ (Reach::Skipped(_) | Reach::Unreachable(_)) => {
            let (why, reason) = match reached {
                _ if required.contains(&target) => (" (required)", reached.reason()),
                Reach::Skipped(reason) => {
                    (" (named as a target: give --allow-skip to report it skipped, or `--db all`)", reason)
                }
                _ => ("", reached.reason()),
            };
            out.line(format!("FAIL     {target}{why} ({} scenarios not run): {reason}", scenarios.len()));
            progress.inc(scenarios.len() as u64);
            return not_run(Verdict::Fail(format!("not run: {reason}")), NOT_REACHED);
        }
    };
    let at_once = cases_at_once(target, args.jobs);
    // The pool's bound: at most one session per scenario at once.
    server.limit_connections(at_once);
    let swept = runner::sweep(&server, dialect).await;
    if !swept.removed.is_empty() {
        out.line(format!(
            "removed {} left on {target} by earlier runs (their process is gone, or they are over {} h old)",
            reapcheck::namespace::count(swept.removed.len()),
            reapcheck::namespace::MAX_AGE.as_secs() / 3600
        ));
    }
    swept.errors.iter().for_each(|e| out.line(format!("warning: {target}: {e}")));
    let version = server.version().to_owned();
    if !dialect.profile.declared.is_empty() {
        out.line(format!("profile of {} on {target}: {}", dialect.name, dialect.profile));
    }
    if !dialect.profile.is_reference() {
        out.line(format!(
            "{target} is compared with the model under this profile, not with the snapshots (the reference claim)"
        ));
    }
    // Each case boxed where it is made: a case's future is about 40 KB,
    // and `buffered` moved it twice unboxed (2% of a SQLite run's
    // instructions were those copies).
    let cases = scenarios.iter().zip(models).map(|(s, model)| {
        let (server, version) = (&server, &version);
        Box::pin(async move {
            let started = Instant::now();
            let model = match (interrupt::interrupted(), model) {
                (Some(signal), _) => {
                    return (
                        s,
                        record(s, target.name(), version, not_started(signal), started, None, args),
                        Vec::new(),
                        None,
                    );
                }
                (None, None) => {
                    let verdict = Verdict::Fail("not run: the model panicked on this scenario".to_owned());
                    return (s, record(s, target.name(), version, verdict, started, None, args), Vec::new(), None);
                }
                (None, Some(model)) => model,
            };
            let checked = AssertUnwindSafe(runner::check_target(s, target, server, dialect, model)).catch_unwind();
            let run = match checked.await {
                Ok(run) => run,
                Err(panic) => {
                    let verdict = Verdict::Fail(runner::panicked("check", panic.as_ref()).to_string());
                    return (s, record(s, target.name(), version, verdict, started, None, args), Vec::new(), None);
                }
            };
            let traced = match (args.trace, &run.verdict) {
                (true, v) if !v.is_failure() => Some(trace::trace(server, dialect, s, target.name()).await),
                _ => None,
            };
            let mut verdict = run.verdict;
            let declared = s.scenario.divergence.keys().any(|t| t.as_str() == target.name());
            if let (true, Verdict::New, true, Some(yaml)) = (args.accept, &verdict, declared, &run.yaml) {
                verdict = accept_divergence(s, target, yaml, root, out);
            }
            let pin = dialect.pins.get(&s.name);
            if let (true, Verdict::New, false, Some(pin), Some(document)) =
                (args.accept, &verdict, declared, pin, &run.yaml)
            {
                verdict = accept_pin(pin, document, out);
            }
            // A pin that holds only its reason pins nothing yet: it must
            // never let the case it names pass (docs/policy.md, "Pinned outcomes").
            if let (false, Verdict::New, false, Some(pin)) = (args.accept, &verdict, declared, pin) {
                verdict = Verdict::Fail(format!(
                    "{} has a reason but no `outcome` yet, so nothing is compared: record what {target} gives \
                     with `reapcheck run --db {target} --accept --exact {}` and read it before committing",
                    pin.path.display(),
                    s.name
                ));
            }
            let accept = format!("reapcheck run --db {target} --accept --exact {}", s.name);
            let verdict = runner::under_ci(verdict, &accept);
            // Hashes are comparable across targets only under the reference profile.
            let hash = run.yaml.as_ref().filter(|_| dialect.profile.is_reference());
            let hash = hash.map(|y| outcomes::hash(y.as_bytes()));
            (s, record(s, target.name(), version, verdict, started, hash, args), run.log, traced)
        })
    });
    let mut records = Vec::with_capacity(scenarios.len());
    let mut coverage = Coverage::new(target.name(), dialect);
    let mut results = stream::iter(cases).buffered(at_once);
    while let Some((s, record, log, traced)) = results.next().await {
        let mut text = case_text(&record, s, args.quiet);
        if let Some(t) = traced {
            text.push_str(&indent(&t));
        }
        out.print(&text);
        progress.inc(1);
        match record.verdict {
            Verdict::Skipped(_) => coverage.add_skipped(),
            Verdict::Fail(_) => {
                coverage.add(&log);
                coverage.add_failed();
            }
            _ => coverage.add(&log),
        }
        records.push(record);
    }
    drop(results);
    if let Some(why) = server.stopped_answering() {
        out.line(format!("{target}: {why}; the cases after it failed without running"));
    }
    let (here, lines) = Left::check(&server, target).await;
    lines.iter().for_each(|l| out.line(l));
    server.close().await;
    TargetRun { records, coverage: Some(coverage), left: Some(here) }
}

/// Plays every scenario through each adapter target in turn, one scenario
/// at a time ([`AdapterTarget`]). An adapter that cannot start or fails its
/// handshake fails its target like an unreachable database (skipped when
/// its skip is allowed).
async fn run_adapters(
    args: &RunArgs,
    plan: &Plan<'_>,
    models: &[Option<runner::ModelRun>],
    progress: &Progress,
    records: &mut Vec<CaseRecord>,
) {
    let scenarios = plan.scenarios;
    for config in plan.adapters {
        let name = config.target_name();
        let none_run = |verdict: Verdict, server: &str, records: &mut Vec<CaseRecord>| {
            let now = Instant::now();
            records.extend(scenarios.iter().map(|s| record(s, &name, server, verdict.clone(), now, None, args)));
        };
        if let Some(signal) = interrupt::interrupted() {
            none_run(not_started(signal), NOT_RUN, records);
            continue;
        }
        let mut target = match AdapterTarget::open(config, plan.root).await {
            Ok(target) => target,
            Err(not_opened) => {
                progress.inc(scenarios.len() as u64);
                let reason = not_opened.reason;
                if not_opened.broken {
                    // It ran and broke the protocol: a failure whatever is allowed to skip.
                    progress.suspend(|| {
                        println!(
                            "FAIL     {name} (its handshake broke the protocol; {} scenarios not run): {reason}",
                            scenarios.len()
                        )
                    });
                    none_run(Verdict::Fail(format!("not run: {reason}")), NOT_REACHED, records);
                } else if plan.must_run_adapters.contains(&config.name) {
                    let why = " (named as a target: give --allow-skip to report it skipped)";
                    progress
                        .suspend(|| println!("FAIL     {name}{why} ({} scenarios not run): {reason}", scenarios.len()));
                    none_run(Verdict::Fail(format!("not run: {reason}")), NOT_REACHED, records);
                } else {
                    progress.suspend(|| println!("skipped: {name} ({} scenarios): {reason}", scenarios.len()));
                    none_run(Verdict::Skipped(reason), NOT_RUN, records);
                }
                continue;
            }
        };
        if let Some(line) = target.describe_policy() {
            progress.suspend(|| println!("{line}"));
        }
        if args.coverage {
            progress.suspend(|| {
                println!(
                    "coverage on {name} not judged: reapcheck sees an adapter's requests, not its queue's SQL \
                     (--coverage counts a dialect folder's statements)"
                )
            });
        }
        for (s, model) in scenarios.iter().zip(models) {
            let started = Instant::now();
            let (verdict, document, traced) = match interrupt::interrupted() {
                Some(signal) => (not_started(signal), None, None),
                None => match AssertUnwindSafe(target.check(s, model.as_ref())).catch_unwind().await {
                    // A failure carries its exchanges already; `--trace` shows a pass's.
                    Ok(run) => {
                        let traced = (args.trace && !run.verdict.is_failure() && !run.transcript.log.is_empty())
                            .then(|| run.transcript.render());
                        (run.verdict, run.document, traced)
                    }
                    Err(panic) => (Verdict::Fail(runner::panicked("check", panic.as_ref()).to_string()), None, None),
                },
            };
            // As for a database target, only a reference document is hashed:
            // `verdict` then compares it with SQL mode's and the model's.
            let hash = document.map(|d| outcomes::hash(d.as_bytes()));
            let record = record(s, &name, target.label(), verdict, started, hash, args);
            let mut text = case_text(&record, s, args.quiet);
            if let Some(t) = &traced {
                text.push_str(&indent(t));
            }
            progress.suspend(|| print!("{text}"));
            progress.inc(1);
            records.push(record);
        }
        target.close().await;
    }
}

/// The verdict of a case that was not started because the run was
/// interrupted by `signal`: skipped, never passed.
fn not_started(signal: &str) -> Verdict {
    Verdict::Skipped(format!("not run: interrupted by {signal}"))
}

/// Prints the coverage tables (`--coverage`) and the statements executed by
/// fewer than `--coverage-min` scenarios; returns how many targets fell
/// short. Only a run of the whole corpus can fall short, and only one that
/// ran to its end: after an interruption (`interrupted`, the signal) the
/// scenarios not started would count as statements not run, so coverage
/// says it was not judged, and neither fails nor lists statements.
fn check_coverage(args: &RunArgs, coverages: &[Coverage], interrupted: Option<&str>) -> usize {
    if let Some(signal) = interrupted {
        if args.coverage || (args.filters.is_empty() && args.coverage_min > 0) {
            println!("{}", reapcheck::coverage::not_judged_after(signal));
        }
        return 0;
    }
    let mut short_targets = 0;
    for c in coverages {
        if args.coverage {
            print!("{}", c.table());
        }
        if !args.filters.is_empty() {
            continue;
        }
        let short = c.shortfalls(args.coverage_min);
        if let Some(why) = c.not_judged() {
            if !short.is_empty() {
                println!("coverage on {} not judged: {why}; statements run by too few of the others:", c.target);
                short.iter().for_each(|line| println!("    {line}"));
            }
            continue;
        }
        if !short.is_empty() {
            short_targets += 1;
            println!("FAIL     coverage on {}", c.target);
            for line in short {
                println!("    {line}");
            }
        }
    }
    if args.coverage && !args.filters.is_empty() {
        println!("coverage not checked: filters narrow the corpus");
    }
    short_targets
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("    {l}\n")).collect()
}

fn record(
    s: &LoadedScenario,
    target: &str,
    server: &str,
    verdict: Verdict,
    started: Instant,
    outcome_hash: Option<String>,
    args: &RunArgs,
) -> CaseRecord {
    CaseRecord {
        scenario: s.name.clone(),
        target: target.to_owned(),
        server: server.to_owned(),
        verdict,
        elapsed: started.elapsed(),
        outcome_hash,
        rerun: Some(rerun_command(target, s, args)),
        file: s.path.display().to_string(),
    }
}

/// Writes the port's document into a pin that had only its reason
/// (docs/policy.md, "Pinned outcomes"); says so on `out`.
fn accept_pin(pin: &reapcheck::dialect::pins::Pin, document: &str, out: at_once::Out<'_, '_>) -> Verdict {
    match std::fs::write(&pin.path, reapcheck::dialect::pins::render(&pin.reason, document)) {
        Ok(()) => {
            out.line(format!("wrote {}", pin.path.display()));
            Verdict::New
        }
        Err(e) => Verdict::Fail(format!("cannot write {}: {e}", pin.path.display())),
    }
}

/// Writes a declared divergence's own snapshot from the target's outcome;
/// says so on `out`.
fn accept_divergence(
    s: &LoadedScenario,
    target: Target,
    yaml: &str,
    root: &std::path::Path,
    out: at_once::Out<'_, '_>,
) -> Verdict {
    let path = snapshot::path(&s.path, Some(target.name()));
    match snapshot::write(&path, snapshot::source(root), &snapshot::input_file(&s.path, root), yaml) {
        Ok(()) => {
            out.line(format!("wrote {}", path.display()));
            Verdict::New
        }
        Err(e) => Verdict::Fail(format!("cannot write {}: {e}", path.display())),
    }
}

/// One case's lines; with `quiet`, only a failure's (else nothing).
fn case_text(r: &CaseRecord, s: &LoadedScenario, quiet: bool) -> String {
    use std::fmt::Write as _;
    let mut text = String::new();
    if quiet && !matches!(r.verdict, Verdict::Fail(_)) {
        return text;
    }
    let on = match r.target.strip_prefix(reapcheck::config::ADAPTER_PREFIX) {
        _ if r.target == r.server => r.target.clone(),
        Some(_) if !matches!(r.server.as_str(), NOT_RUN | NOT_REACHED) => format!("{} ({})", r.target, r.server),
        _ => format!("{} [{}]", r.target, r.server),
    };
    let _ = match &r.verdict {
        Verdict::Ok => writeln!(text, "ok       {}  on {on}", s.name),
        Verdict::New => writeln!(text, "new      {}  on {on}", s.name),
        Verdict::Diverged(reason) => writeln!(text, "diverged {}  on {on}: {reason}", s.name),
        Verdict::Skipped(reason) => writeln!(text, "skipped: {}  on {on}: {reason}", s.name),
        Verdict::Fail(detail) => {
            let _ = writeln!(text, "FAIL     {}  on {on}", s.name);
            for line in detail.lines() {
                let _ = writeln!(text, "    {line}");
            }
            if reapcheck::corpus::is_builtin(&s.path) {
                // Inside the binary: say how to read it.
                let _ = writeln!(text, "    {}:1: scenario file (reapcheck list --print {})", s.path.display(), s.name);
            } else {
                let _ = writeln!(text, "    {}:1: scenario file", s.path.display());
            }
            match &r.rerun {
                Some(rerun) => writeln!(text, "    rerun: {rerun}"),
                None => Ok(()),
            }
        }
    };
    text
}

/// The one-line command that reruns exactly this case.
fn rerun_command(target: &str, s: &LoadedScenario, args: &RunArgs) -> String {
    let mut cmd = String::from("reapcheck run");
    let db = if target == "model" { "sqlite" } else { target };
    cmd.push_str(&format!(" --db {db}"));
    if let Some(sets) = &args.inputs.scenarios {
        cmd.push_str(&format!(" --scenarios {sets}"));
    }
    if let Some(d) = &args.inputs.dialects {
        cmd.push_str(&format!(" --dialects {}", d.display()));
    }
    cmd.push_str(&format!(" --exact {}", s.name));
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_plays_one_case_at_a_time_and_a_server_its_jobs() {
        for jobs in [1, 4, 64] {
            assert_eq!(cases_at_once(Target::Sqlite, jobs), 1);
            for server in [Target::Postgres, Target::Mariadb, Target::Mssql, Target::Cockroach, Target::Mysql] {
                assert_eq!(cases_at_once(server, jobs), usize::from(jobs), "{server}");
            }
        }
    }

    #[test]
    fn targets_parse_from_a_list() {
        assert_eq!(parse_targets("sqlite,postgres,sqlite").unwrap(), vec![Target::Sqlite, Target::Postgres]);
        assert_eq!(parse_targets("all").unwrap().len(), 6);
        assert!(parse_targets("oracle").unwrap_err().contains("unknown target `oracle`"));
        assert!(parse_targets("").is_err());
        assert!(parse_targets("all,sqlite").unwrap_err().contains("`all` cannot be combined"));
    }

    #[test]
    fn an_interrupted_run_says_dropped_only_when_no_catalog_lists_its_namespaces() {
        let gone = Left { target: Target::Postgres, names: Ok(Vec::new()) };
        let line = interrupted_line("SIGINT", &[gone]);
        assert!(line.ends_with("and their namespaces dropped (none is left in the servers' catalogs)"), "{line}");
        let left = Left { target: Target::Mariadb, names: Ok(vec!["rc_a_1_2_3".to_owned()]) };
        let unknown = Left { target: Target::Postgres, names: Err("postgres stopped answering".to_owned()) };
        let line = interrupted_line("SIGTERM", &[left, unknown]);
        assert!(!line.contains("dropped"), "{line}");
        assert!(line.contains("1 namespaces of this run are still on mariadb (rc_a_1_2_3): the next `reapcheck run --db mariadb` removes them"), "{line}");
        assert!(
            line.contains("cannot check that this run's namespaces on postgres are gone (postgres stopped answering)"),
            "{line}"
        );
    }

    #[test]
    fn the_closing_line_counts_the_model_apart_from_each_target() {
        let mut tally = Tally::default();
        tally.add("model", &Verdict::Ok);
        tally.add("mssql", &Verdict::Skipped("no URL".into()));
        assert_eq!(
            tally.line(),
            "model: 1 passed, 0 failed; mssql: 0 passed, 0 failed, 1 skipped; no SQL ran on any database"
        );
        tally.add("sqlite", &Verdict::Fail("x".into()));
        assert_eq!(tally.failed(), 1);
        tally.sql_ran = true;
        assert!(tally.line().ends_with("; sqlite: 0 passed, 1 failed, 0 skipped"), "{}", tally.line());
    }
}
