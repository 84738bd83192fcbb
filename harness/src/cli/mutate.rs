//! `reapcheck mutate`: runs the corpus against each mutant of each target's
//! SQL, the fourteen named ones and those generated from the syntax tree; a
//! mutant is killed by the first scenario whose outcome differs from the
//! model's (or whose run errs). A mutant runs only the scenarios whose
//! unmutated run executed a statement it changes ([`select`]), cheap likely
//! killers first (the unmutated run's statement count weighs each), and
//! stops at the first kill ([`kill`]); one whose SQL the server
//! cannot compile is not applicable on that server and not counted.
//! Equivalence declarations hold on the servers they name, and those only
//! reasoned are listed on each leg. Mutants run a few at a time, and the
//! targets run at once, each printing its report when it is done.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::Instant;

use futures_util::{StreamExt, stream};

use reapcheck::backend::Server;
use reapcheck::dialect::Source;
use reapcheck::dialect::text::Grammar;
use reapcheck::dialect::{Dialect, read_extra};
use reapcheck::diff;
use reapcheck::interrupt;
use reapcheck::mutate::carry::{self, Upstream};
use reapcheck::mutate::equivalent::{
    self, Declaration, EquivalentError, EquivalentErrorKind, Evidence, ServerVersion, Written,
};
use reapcheck::mutate::kill::{Found, KillOrder, Verdict, first_killer};
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

/// Arguments of `mutate`.
#[derive(clap::Args, Debug)]
pub struct MutateArgs {
    #[command(flatten)]
    statement_timeout: super::limits::StatementTimeout,
    /// Targets, comma-separated, or `all`.
    #[arg(long, default_value = "sqlite")]
    db: String,
    /// Mutants in flight at once on each target (1 to 64), each running its
    /// scenarios one after another on a session of its own (the unmutated
    /// baseline: scenarios at once). A server that commits to disk on
    /// every statement is waited on, not busy: more in flight share its
    /// flushes. Whether a mutant is killed never depends on it; which
    /// scenario is named as its killer may, since a mutant's kill order
    /// sees the verdicts of the mutants `--jobs` turns before its own.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..=64))]
    jobs: u16,
    /// List each generated mutant (id, operator, origin and the hash an
    /// equivalence declaration names its statement by) and run nothing.
    #[arg(long)]
    list: bool,
    /// Run nothing: print, for each stale equivalence declaration (and
    /// each the builtin dialect of the same name makes that yours lacks),
    /// the declaration carried over to your mutant that makes the same
    /// change, with its id and hash, for review.
    #[arg(long, conflicts_with = "list")]
    suggest: bool,
    /// With `--suggest`: replace the stale declarations in your
    /// `equivalent-mutants.yaml` with the carried-over ones (every other
    /// line is kept; the file is replaced at once).
    #[arg(long, requires = "suggest")]
    write: bool,
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
    /// Declared equivalent mutants: id -> declaration (on every server
    /// of the dialect or only some).
    equivalent: BTreeMap<String, Declaration>,
}

/// Runs the mutation self-test; exit 1 when a mutant survives, a declared
/// equivalent is killed or a target cannot run, 2 on invalid input
/// (including a stale equivalence declaration).
pub fn mutate(args: MutateArgs) -> ExitCode {
    args.statement_timeout.apply();
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
    if args.suggest {
        return suggest(&args.inputs, &dialects, args.write);
    }
    let mut plans = Vec::new();
    let mut invalid: Vec<String> = Vec::new();
    let mut stale = false;
    for d in dialects {
        match plan(&args.inputs, d, args.list) {
            Ok(p) => plans.push(p),
            Err((errors, any_stale)) => {
                invalid.extend(errors);
                stale |= any_stale;
            }
        }
    }
    if !invalid.is_empty() {
        report(&invalid);
        if stale {
            eprintln!(
                "hint: after renaming or reordering your SQL, `reapcheck mutate --suggest` (same --db and \
                 --dialects) finds each stale declaration's mutant in your SQL and prints it with its new id and \
                 hash for review; `--suggest --write` replaces the stale declarations in the file"
            );
        }
        return ExitCode::from(EXIT_INVALID);
    }
    if args.list {
        for p in &plans {
            list(p);
        }
        return ExitCode::SUCCESS;
    }
    interrupt::install();
    let Ok(runtime) = tokio::runtime::Builder::new_multi_thread().enable_all().build() else {
        eprintln!("error: cannot start the async runtime");
        return ExitCode::from(EXIT_FAILED);
    };
    // What the servers' catalogs still hold of this run, one warning each.
    let mut left: Vec<String> = Vec::new();
    let ok = runtime.block_on(async {
        let mut models = Vec::new();
        for s in &scenarios {
            models.push(runner::check_model(s).await);
        }
        let started = Instant::now();
        let runs = targets.iter().filter_map(|&target| {
            let plan = plans.iter().find(|p| p.dialect.name == target.dialect())?;
            Some(mutate_target(target, plan, &scenarios, &models, usize::from(args.jobs)))
        });
        let reports = futures_util::future::join_all(runs).await;
        let mut ok = true;
        for (passed, text, warnings) in &reports {
            print!("{text}");
            ok &= passed;
            left.extend(warnings.iter().cloned());
        }
        println!(
            "mutate: {} target{} in {:.1} s",
            reports.len(),
            if reports.len() == 1 { "" } else { "s" },
            started.elapsed().as_secs_f64()
        );
        ok
    });
    if let Some(signal) = interrupt::interrupted() {
        let namespaces = if left.is_empty() {
            " and their namespaces dropped (none is left in the servers' catalogs)".to_owned()
        } else {
            format!("; {}", left.join("; "))
        };
        println!(
            "mutate: interrupted by {signal}: the mutants in flight were stopped{namespaces}; those not judged are \
             left out of the scores above"
        );
        return ExitCode::from(interrupt::exit_code());
    }
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
        // The suffix is exactly this whatever the declaration's `servers`
        // and `evidence`: tools read the listing's lines.
        let declared = if plan.equivalent.contains_key(&m.id) { " (declared equivalent)" } else { "" };
        println!("{}\t{hash}\t{}\t{}\t{}{declared}", plan.dialect.name, m.operator, m.origin, m.id);
    }
}

/// `mutate --suggest`: for each dialect, prints every stale declaration
/// carried over to the mutant of the SQL as it is now that makes the same
/// change (and every declaration of the builtin dialect of that name the
/// port lacks), as YAML to review and paste; with `write`, replaces the
/// stale declarations in the file. Runs nothing. Exit 2 on invalid input
/// (a declaration file that does not parse, `--write` without a folder).
fn suggest(inputs: &Inputs, dialects: &[Dialect], write: bool) -> ExitCode {
    let mut errors = Vec::new();
    for d in dialects {
        if let Err(e) = suggest_one(inputs, d, write) {
            errors.extend(e);
        }
    }
    if errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        report(&errors);
        ExitCode::from(EXIT_INVALID)
    }
}

fn suggest_one(inputs: &Inputs, dialect: &Dialect, write: bool) -> Result<(), Vec<String>> {
    let name = &dialect.name;
    let file = format!("{name}/{}", equivalent::FILE);
    let source = inputs.dialect_source(name).map_err(|e| vec![e])?;
    let path = match (&source, write) {
        (Source::Folder(root), _) => Some(root.join(name).join(equivalent::FILE)),
        (Source::Embedded, true) => {
            return Err(vec![format!(
                "`--write` rewrites your own {file}, and {name} runs the builtin SQL: pass `--dialects <your folder>`"
            )]);
        }
        (Source::Embedded, false) => None,
    };
    let strings = |errors: Vec<EquivalentError>| errors.iter().map(ToString::to_string).collect::<Vec<_>>();
    let text = read_extra(&source, name, equivalent::FILE).map_err(|e| vec![e.to_string()])?.unwrap_or_default();
    let declared = equivalent::read(&file, &text).map_err(strings)?;
    let generation = generate(dialect, Grammar::for_dialect(name));
    let builtin = Dialect::load(&Source::Embedded, name).ok().map(|d| {
        let g = generate(&d, Grammar::for_dialect(name));
        let text = read_extra(&Source::Embedded, name, equivalent::FILE).ok().flatten().unwrap_or_default();
        let declared = equivalent::read(&file, &text).unwrap_or_default();
        (d, g, declared)
    });
    let upstream = match (&source, &builtin) {
        (Source::Folder(_), Some((d, g, w))) => Some(Upstream { dialect: d, generation: g, declarations: w }),
        _ => None,
    };
    let carried = carry::carry(&declared, dialect, &generation, upstream);
    let from_upstream = |w: &Written| {
        builtin.as_ref().is_some_and(|(_, _, u)| u.iter().any(|u| u.mutant == w.mutant && u.statement == w.statement))
    };
    let matched: Vec<_> = carried.stale.iter().filter_map(|(w, m)| Some((w, m.as_ref().ok()?))).collect();
    let mut out = String::new();
    if carried.stale.is_empty() {
        let _ = writeln!(out, "# {file}: no stale declaration");
    } else {
        let _ = writeln!(
            out,
            "# {file}: {} stale declaration{}, {} carried over to your SQL: {}",
            carried.stale.len(),
            if carried.stale.len() == 1 { "" } else { "s" },
            matched.len(),
            if write {
                "replaced in the file; review each reason"
            } else {
                "replace each entry at the line named with the block under it, or rerun with `--write`"
            }
        );
    }
    let mut replacements = Vec::new();
    for (w, found) in &carried.stale {
        match found {
            Ok(m) => {
                let block = carry::block(w, m, from_upstream(w));
                let _ = write!(out, "# replaces {file}:{}:{}\n{block}", w.line, w.column);
                replacements.push((w.line, block));
            }
            Err(why) => eprintln!("warning: {file}:{}:{}: `{}` is stale: {why}", w.line, w.column, w.mutant),
        }
    }
    if !carried.missing.is_empty() {
        let _ = writeln!(
            out,
            "# declared by the builtin {name} dialect and not in {file}: append the ones whose reason holds for \
             your SQL"
        );
        for (w, m) in &carried.missing {
            out.push_str(&carry::block(w, m, true));
        }
    }
    for (w, why) in &carried.unmatched_upstream {
        let _ = writeln!(out, "# the builtin {name} dialect declares `{}`, not carried over: {why}", w.mutant);
    }
    print!("{out}");
    if let (true, Some(path), false) = (write, &path, replacements.is_empty()) {
        let new = carry::rewrite(&file, &text, &replacements).map_err(|e| vec![e])?;
        if let Err(e) = equivalent::read(&file, &new) {
            return Err(strings(e)
                .into_iter()
                .map(|e| format!("{e} (in the rewritten text, not written: paste the printed blocks by hand)"))
                .collect());
        }
        let temporary = path.with_file_name(format!(".{}.tmp", equivalent::FILE));
        std::fs::write(&temporary, &new)
            .and_then(|()| std::fs::rename(&temporary, path))
            .map_err(|e| vec![format!("cannot write {}: {e}: paste the printed blocks by hand", path.display())])?;
        println!(
            "# wrote {} carried-over declaration{} to {}",
            replacements.len(),
            if replacements.len() == 1 { "" } else { "s" },
            path.display()
        );
    }
    Ok(())
}

/// Applies the named mutants, generates the others and reads the
/// dialect's equivalence declarations. For `--list` (`listing`), a stale
/// declaration is a warning, since the listing is how its new id and hash
/// are found. An error says whether some declaration is stale.
fn plan(inputs: &Inputs, dialect: Dialect, listing: bool) -> Result<Plan, (Vec<String>, bool)> {
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
    let source = inputs.dialect_source(&dialect.name).map_err(|e| (vec![e], false))?;
    let text = read_extra(&source, &dialect.name, equivalent::FILE).map_err(|e| (vec![e.to_string()], false))?;
    let equivalent = match equivalent::check(
        &file,
        &dialect.name,
        text.as_deref().unwrap_or_default(),
        &generation.mutants,
        &generation.unparsed,
    ) {
        Ok(declared) => declared,
        Err(errors) if listing => {
            errors.iter().for_each(|e| eprintln!("warning: {e}"));
            Default::default()
        }
        Err(errors) => {
            let stale = errors
                .iter()
                .any(|e| matches!(e.kind, EquivalentErrorKind::Stale { .. } | EquivalentErrorKind::Unknown(_)));
            return Err((errors.iter().map(EquivalentError::to_string).collect(), stale));
        }
    };
    Ok(Plan { dialect, named, not_applicable, generation, equivalent })
}

/// Mutates `target`'s SQL: returns whether every mutant was killed (and
/// no declared equivalent was), the report, printed by the caller once
/// every target is done so that targets running at once do not interleave,
/// and what the server's catalog still holds of this run (a warning each,
/// [`super::run::Left`]).
async fn mutate_target(
    target: Target,
    plan: &Plan,
    scenarios: &[LoadedScenario],
    models: &[ModelRun],
    jobs: usize,
) -> (bool, String, Vec<String>) {
    let mut out = String::new();
    let mut left = Vec::new();
    let ok = mutate_into(&mut out, &mut left, target, plan, scenarios, models, jobs).await;
    (ok, out, left)
}

/// Closes `server` once its lanes are dropped and its catalog checked for
/// this run's namespaces ([`super::run::Left::check`]): the lines go to
/// `out`, the warning to `left`.
async fn close_checked(server: Server, target: Target, out: &mut String, left: &mut Vec<String>) {
    let (found, lines) = super::run::Left::check(&server, target).await;
    lines.iter().for_each(|l| {
        let _ = writeln!(out, "  {l}");
    });
    left.extend(found.warning());
    server.close().await;
}

/// `Some(line)` when `server` stopped answering: the leg fails with it, as
/// the runs after it erred without running (a mutant "killed" by that is
/// no kill).
fn stopped_line(server: &Server, target: Target, what: &str) -> Option<String> {
    let why = server.stopped_answering()?;
    Some(format!(
        "  FAIL {why}: {what} after it were not judged; resume or restart {target}'s server and run mutate again"
    ))
}

async fn mutate_into(
    out: &mut String,
    left: &mut Vec<String>,
    target: Target,
    plan: &Plan,
    scenarios: &[LoadedScenario],
    models: &[ModelRun],
    jobs: usize,
) -> bool {
    let (scenarios, models) = &under_profile(&plan.dialect, scenarios, models).await;
    let (scenarios, models) = (scenarios.as_slice(), models.as_slice());
    let (mut server, _container) = match reach::reach(target).await {
        Reach::Ready(s, keep) => (s, keep),
        Reach::Skipped(reason) | Reach::Unreachable(reason) => {
            let _ = writeln!(out, "{target}: not run: {reason}");
            return false;
        }
    };
    // A mutant in flight holds one session (its lane) at a time, as a
    // baseline scenario does.
    server.limit_connections(jobs);
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
    let (mut executed, mut costs, mut most_rows) = (Vec::new(), Vec::new(), Vec::new());
    for (label, dialect) in [("unmutated SQL", &plan.dialect), ("SQL printed back by the parser", &g.round_trip)] {
        let base = baseline(target, &server, dialect, scenarios, models, jobs).await;
        if let Some(signal) = interrupt::interrupted() {
            let _ = writeln!(out, "  interrupted by {signal} before any mutant ran");
            close_checked(server, target, out, left).await;
            return false;
        }
        if let Some(line) = stopped_line(&server, target, "the scenarios") {
            let _ = writeln!(out, "{line}");
            let _ = writeln!(out, "{target}: not run: no mutant ran");
            close_checked(server, target, out, left).await;
            return false;
        }
        if !base.failing.is_empty() {
            let _ = writeln!(out, "  the {label} already fails {}: fix it before mutating", base.failing.join(", "));
            close_checked(server, target, out, left).await;
            return false;
        }
        executed.push(base.executed);
        costs.push(base.costs);
        most_rows.push(base.most_rows);
    }
    let (by_named, by_generated) = (&executed[0], &executed[1]);
    let rows = &most_rows[1];
    let names = scenarios.iter().map(|s| s.name.clone()).collect();
    let order = KillOrder::weighed(costs.swap_remove(0), names, jobs);
    let order = &order;
    let progress = Progress::new((plan.named.len() + g.mutants.len()) as u64, &format!("mutate {target}"));
    let named = stream::iter(plan.named.iter().map(|(_, d)| (d, order.turn())).map(|(d, turn)| async {
        let changed = select::changed(&plan.dialect, d);
        let candidates = select::select(&changed, by_named);
        first_killer(&server, d, &changed, &[candidates], scenarios, models, turn).await
    }))
    .buffered(jobs)
    .inspect(|_| progress.inc(1))
    .collect::<Vec<_>>()
    .await;
    let generated = stream::iter(g.mutants.iter().map(|m| (m, order.turn())).map(|(m, turn)| async {
        let changed = std::slice::from_ref(&m.statement);
        let candidates = select::select(changed, by_generated);
        let tiers = select::by_rows(&candidates, rows, &m.statement, m.rows_to_differ);
        first_killer(&server, &m.apply(&g.round_trip), changed, &tiers, scenarios, models, turn).await
    }))
    .buffered(jobs)
    .inspect(|_| progress.inc(1))
    .collect::<Vec<_>>()
    .await;
    drop(progress);
    let version = ServerVersion::parse(server.version());
    if let Some(line) = stopped_line(&server, target, "the mutants") {
        let _ = writeln!(out, "{line}");
        let _ = writeln!(out, "{target}: no mutation score: its server stopped answering mid-run");
        close_checked(server, target, out, left).await;
        return false;
    }
    close_checked(server, target, out, left).await;
    let (ok, summary) = tally(out, plan, &version, &named, &generated);
    let runs: usize = named.iter().chain(&generated).map(|v| v.runs).sum();
    let statements: u64 = named.iter().chain(&generated).map(|v| v.statements).sum();
    let _ = writeln!(
        out,
        "{target}: {summary} in {:.1} s ({statements} statements), {runs} scenario runs",
        started.elapsed().as_secs_f64()
    );
    ok
}

/// Counts of one row of the report's table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Row {
    generated: usize,
    killed: usize,
    equivalent: usize,
    not_applicable: usize,
    survived: usize,
}

impl Row {
    fn add(&mut self, other: Row) {
        self.generated += other.generated;
        self.killed += other.killed;
        self.equivalent += other.equivalent;
        self.not_applicable += other.not_applicable;
        self.survived += other.survived;
    }

    /// The row under [`Row::header`]; `not_applicable` adds that column
    /// (only shown when some mutant is not applicable).
    fn line(&self, name: &str, not_applicable: bool) -> String {
        let column = if not_applicable { format!(" {:>14}", self.not_applicable) } else { String::new() };
        format!(
            "  {name:<16} {:>9} {:>7} {:>10}{column} {:>8}",
            self.generated, self.killed, self.equivalent, self.survived
        )
    }

    fn header(not_applicable: bool) -> String {
        let column = if not_applicable { format!(" {:>14}", "not applicable") } else { String::new() };
        format!(
            "  {:<16} {:>9} {:>7} {:>10}{column} {:>8}",
            "operator", "generated", "killed", "equivalent", "survived"
        )
    }
}

/// Writes the verdicts of `plan`'s mutants on `server` to `out` (the
/// killed named mutants, every survivor, every mutant not applicable there,
/// every declaration killed, the reasoned declarations and the table) and
/// returns whether the leg passed and its score line (without the target).
/// A mutant not applicable on `server` is neither killed nor surviving: it
/// is left out of the score; a declaration whose `servers` do not include
/// `server` is ignored there.
fn tally(
    out: &mut String,
    plan: &Plan,
    server: &ServerVersion,
    named: &[Verdict],
    generated: &[Verdict],
) -> (bool, String) {
    let g = &plan.generation;
    let mut ok = true;
    // Mutants a signal stopped before they were judged: out of the score.
    let mut interrupted = 0;
    let mut named_row = Row { generated: plan.named.len(), ..Row::default() };
    for ((m, _), v) in plan.named.iter().zip(named) {
        match &v.found {
            Found::Killed { by, reason } => {
                named_row.killed += 1;
                let why = reason.as_ref().map(|r| format!(": {r}")).unwrap_or_default();
                let _ = writeln!(out, "  killed   {}: {} (by {by}{why})", m.id, m.bug);
            }
            Found::Interrupted => interrupted += 1,
            Found::NotApplicable { statement, message, .. } => {
                named_row.not_applicable += 1;
                let _ = writeln!(
                    out,
                    "  not applicable on {server}: {}: {} (`{statement}` does not compile there: {message})",
                    m.id, m.bug
                );
            }
            Found::Survived => {
                named_row.survived += 1;
                let _ = writeln!(out, "  SURVIVED {}: {}{}", m.id, m.bug, unseen(v));
                ok = false;
            }
        }
    }
    let mut table: BTreeMap<Operator, Row> = BTreeMap::new();
    let mut reasoned = Vec::new();
    let mut elsewhere = Vec::new();
    for (m, v) in g.mutants.iter().zip(generated) {
        let row = table.entry(m.operator).or_default();
        row.generated += 1;
        let declared = plan.equivalent.get(&m.id);
        if declared.is_some_and(|d| !d.holds_on(server)) {
            elsewhere.push(m.id.as_str());
        }
        let declared = declared.filter(|d| d.holds_on(server));
        if let Some(d) = declared
            && d.evidence == Evidence::Reasoned
        {
            let seen = match &v.found {
                Found::Killed { by, .. } => format!("KILLED by {by}"),
                Found::NotApplicable { .. } => "not applicable".to_owned(),
                Found::Survived => "survived".to_owned(),
                Found::Interrupted => "not judged: interrupted".to_owned(),
            };
            reasoned.push(format!("{} ({}): {seen}", m.id, m.origin));
        }
        match (declared, &v.found) {
            (_, Found::Interrupted) => interrupted += 1,
            (_, Found::NotApplicable { statement, message, .. }) => {
                row.not_applicable += 1;
                let note = if declared.is_some() { " (declared equivalent)" } else { "" };
                let _ = writeln!(
                    out,
                    "  not applicable on {server}: {} ({}){note}: `{statement}` does not compile there: {message}",
                    m.id, m.origin
                );
            }
            (Some(_), Found::Survived) => row.equivalent += 1,
            (Some(d), Found::Killed { by, .. }) => {
                let only = if d.evidence == Evidence::Reasoned {
                    "; it was only reasoned (`evidence: reasoned`), never seen surviving on a real server: remove \
                     the declaration, or limit it with `servers` to the servers it holds on"
                } else {
                    ""
                };
                let _ = writeln!(
                    out,
                    "  KILLED BUT DECLARED EQUIVALENT {} ({}), by {by}: remove its declaration{only}",
                    m.id, m.origin
                );
                ok = false;
            }
            (None, Found::Killed { .. }) => row.killed += 1,
            (None, Found::Survived) => {
                row.survived += 1;
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
    if !reasoned.is_empty() {
        let _ = writeln!(
            out,
            "  {} declared equivalent by reasoning only (`evidence: reasoned`), to confirm on {server}; once \
             confirmed on a real server, drop the field:",
            reasoned.len()
        );
        for line in &reasoned {
            let _ = writeln!(out, "    {line}");
        }
    }
    if !elsewhere.is_empty() {
        let _ = writeln!(
            out,
            "  declared equivalent on other servers only, so counted as any mutant on {server}: {}",
            elsewhere.join("; ")
        );
    }
    let mut total = named_row;
    table.values().for_each(|row| total.add(*row));
    let shown = total.not_applicable > 0;
    let _ = writeln!(out, "{}", Row::header(shown));
    let _ = writeln!(out, "{}", named_row.line("named", shown));
    for op in Operator::ALL {
        let _ = writeln!(out, "{}", table.get(&op).copied().unwrap_or_default().line(op.name(), shown));
    }
    if interrupted > 0 {
        // A score over the mutants that happened to finish would read as
        // the target's: there is none.
        let summary = format!(
            "no mutation score: a signal stopped the run with {interrupted} mutants not judged ({} killed among \
             those judged)",
            total.killed
        );
        return (false, summary);
    }
    let counted = total.generated - total.equivalent - total.not_applicable;
    let score = (total.killed * 100).checked_div(counted).unwrap_or(100);
    let unparsed = match g.unparsed.len() {
        0 => String::new(),
        n => format!(
            "; {n} statement{} not mutated: the parser cannot read {}",
            if n == 1 { "" } else { "s" },
            if n == 1 { "it" } else { "them" }
        ),
    };
    let not_applicable = match total.not_applicable {
        0 => String::new(),
        n => format!(", {n} not applicable on {server}"),
    };
    let summary = format!(
        "mutation score {score}% ({}/{counted} killed, the {} named counted; {} generated, {} declared \
         equivalent{not_applicable}{unparsed})",
        total.killed,
        plan.named.len() - named_row.not_applicable,
        g.mutants.len(),
        total.equivalent,
    );
    (ok && total.killed == counted, summary)
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
    /// Per scenario (by index), what its run cost in statements executed
    /// ([`select::cost`]); 1 for a scenario not compared on the target.
    costs: Vec<u64>,
    /// Per scenario (by index), the most rows each statement returned or
    /// changed at once ([`select::most_rows`]); empty for a scenario not
    /// compared on the target.
    most_rows: Vec<BTreeMap<String, u64>>,
}

/// Runs every compared scenario on `dialect`, a few at a time (each in a
/// namespace of its own), recording what each executed.
async fn baseline(
    target: Target,
    server: &Server,
    dialect: &Dialect,
    scenarios: &[LoadedScenario],
    models: &[ModelRun],
    jobs: usize,
) -> Baseline {
    let runs = scenarios.iter().zip(models).map(|(s, model)| async move {
        if !compared(target, s) {
            return (None, (BTreeSet::new(), 1, BTreeMap::new()));
        }
        let run = runner::run_logged(server, dialect, s, None).await;
        let differs = match run.outcome {
            Ok(outcome) => !runner::agrees_with_model(outcome, &dialect.profile, model),
            Err(_) => true,
        };
        let seen = (select::executed(&run.log), select::cost(&run.log), select::most_rows(&run.log));
        (differs.then(|| s.name.clone()), seen)
    });
    let results: Vec<_> = stream::iter(runs).buffered(jobs).collect().await;
    let (failing, seen): (Vec<_>, Vec<_>) = results.into_iter().unzip();
    let (mut executed, mut costs, mut most_rows) = (Vec::new(), Vec::new(), Vec::new());
    for (e, c, r) in seen {
        executed.push(e);
        costs.push(c);
        most_rows.push(r);
    }
    Baseline { failing: failing.into_iter().flatten().collect(), executed, costs, most_rows }
}
