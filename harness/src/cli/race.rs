//! `reapcheck race`: the dialects' statements under real concurrency on
//! live servers, for a bounded time, then the history checked (see
//! `reapcheck::race`). Loopback servers only. Targets race at once where
//! they are different servers ([`super::at_once`]).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::SystemTime;

use reapcheck::backend::Server;
use reapcheck::dialect::Dialect;
use reapcheck::interrupt;
use reapcheck::race::check;
use reapcheck::race::history::Res;
use reapcheck::race::workload::{self, Place, Settings};
use reapcheck::target::Target;

use super::at_once::{self, Out};
use super::inputs::report;
use reapcheck::reach;

use super::one_server::{self, Reached, random_seed};
use super::run::parse_targets;
use super::{EXIT_FAILED, EXIT_INVALID};

/// Arguments of `race`.
#[derive(clap::Args, Debug)]
pub struct RaceArgs {
    #[command(flatten)]
    statement_timeout: super::limits::StatementTimeout,
    /// Targets, comma-separated: sqlite, postgres, mariadb, mysql,
    /// cockroach, mssql; servers must be on this machine.
    #[arg(long, default_value = "sqlite")]
    db: String,
    /// Real seconds each target races (at most 600), per round.
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    /// Races each target up to this many times (1 to 20), round k with
    /// seed `seed + k - 1`, stopping at the first round that breaks a rule;
    /// a target passes when every round passed. A race finds a defect by
    /// chance: rounds make a miss rarer without making one race longer.
    #[arg(long, default_value_t = 1)]
    rounds: u32,
    /// Worker tasks, each on its own connection (1 to 64; with the reapers
    /// at most 31).
    #[arg(long, default_value_t = 8)]
    workers: u32,
    /// Reaper tasks, each on its own connection (1 to 16).
    #[arg(long, default_value_t = 3)]
    reapers: u32,
    /// Jobs inserted at the start (1 to 10000); default 16 per worker, so
    /// that jobs finished for good do not starve the workers.
    #[arg(long)]
    jobs: Option<u32>,
    /// Seed of the tasks' choices; without it one is drawn and printed.
    #[arg(long)]
    seed: Option<u64>,
    /// Clock seconds per real second (1 to 1000): at 40 the 30-second
    /// grace passes in 0.75 real seconds.
    #[arg(long, default_value_t = 40)]
    scale: u32,
    /// Each reaper polls every this many clock seconds (1 to 300).
    #[arg(long, default_value_t = 5)]
    poll: i64,
    /// Clock seconds a reaper may pause between its scan and its apply
    /// (0 to 300).
    #[arg(long, default_value_t = 2)]
    apply_delay: i64,
    /// Clock seconds reaper 0's clock runs ahead of the others' (0 to 3600).
    #[arg(long, default_value_t = 0)]
    skew: i64,
    /// Folder holding one sub-folder of SQL per dialect, instead of the copy
    /// built into reapcheck.
    #[arg(long)]
    dialects: Option<PathBuf>,
    /// Play one fixed interleaving instead of the random workload: a
    /// reaper with a fast clock applies its reap after another reaper
    /// reclaimed the attempt and (every other round) a worker claimed it
    /// again (`reapcheck::race::directed`). It exposes a reap guard missing
    /// its status or attempts check on every run; `--jobs` rounds (default
    /// 8), and the bounds of the random workload do not apply.
    #[arg(long)]
    directed: bool,
    /// Write each target's history to `DIR/<target>.history`, one
    /// operation a line in real-time order.
    #[arg(long, value_name = "DIR")]
    history: Option<PathBuf>,
}

impl RaceArgs {
    fn settings(&self, seed: u64) -> Result<Settings, String> {
        let within = |name: &str, v: i64, lo: i64, hi: i64| {
            if (lo..=hi).contains(&v) {
                Ok(())
            } else {
                Err(format!("--{name} {v} is out of range: give {lo} to {hi}"))
            }
        };
        if !(self.seconds > 0.0 && self.seconds <= 600.0) {
            return Err(format!("--seconds {} is out of range: give more than 0 and at most 600", self.seconds));
        }
        within("workers", self.workers.into(), 1, 64)?;
        within("reapers", self.reapers.into(), 1, 16)?;
        // One connection per task plus one for setup and read-back; the
        // PostgreSQL backend's pool opens at most 32.
        if self.workers + self.reapers > 31 {
            return Err(format!(
                "--workers {} plus --reapers {} is out of range: each task holds a connection, give at most 31 together",
                self.workers, self.reapers
            ));
        }
        let jobs = self.jobs.unwrap_or(self.workers.saturating_mul(16));
        within("jobs", jobs.into(), 1, 10_000)?;
        within("scale", self.scale.into(), 1, 1000)?;
        within("poll", self.poll, 1, 300)?;
        within("apply-delay", self.apply_delay, 0, 300)?;
        within("skew", self.skew, 0, 3600)?;
        within("rounds", self.rounds.into(), 1, 20)?;
        Ok(Settings {
            seconds: self.seconds,
            workers: self.workers,
            reapers: self.reapers,
            jobs,
            seed,
            scale: self.scale,
            poll: self.poll,
            apply_delay: self.apply_delay,
            skew: self.skew,
        })
    }
}

/// Runs the command: exit 0 when every target raced and its history
/// passed every rule, 1 on a violation, a database error, an unreachable
/// target (or a required one skipped), or when none ran; 2 on invalid
/// arguments, dialects, or a server that is not on this machine.
pub fn race(args: RaceArgs) -> ExitCode {
    args.statement_timeout.apply();
    let invalid = |message: String| {
        eprintln!("error: {message}");
        ExitCode::from(EXIT_INVALID)
    };
    let targets = match parse_targets(&args.db) {
        Ok(t) => t,
        Err(e) => return invalid(e),
    };
    let required = match reach::required_targets() {
        Ok(r) => r,
        Err(e) => return invalid(e),
    };
    let seed = args.seed.unwrap_or_else(random_seed);
    let settings = match args.settings(seed) {
        Ok(s) => s,
        Err(e) => return invalid(e),
    };
    for &target in targets.iter().filter(|t| **t != Target::Sqlite) {
        if let Ok(url) = std::env::var(target.url_variable())
            && !url.trim().is_empty()
            && let Err(why) = reapcheck::race::loopback_only(&url)
        {
            return invalid(format!("{}: {why}", target.url_variable()));
        }
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
    let rounds = if args.rounds > 1 { format!(", up to {} rounds", args.rounds) } else { String::new() };
    if args.directed {
        println!(
            "race: directed, {} rounds per target (a reaper {} s ahead applies after another reaper's reclaim)",
            args.jobs.unwrap_or(8),
            reapcheck::race::directed::SKEW
        );
    } else {
        println!(
            "race: seed {seed}{rounds}, {} s per target, {} workers, {} reapers, {} jobs, clock x{}, poll {} s, apply delay up to {} s, skew {} s",
            settings.seconds,
            settings.workers,
            settings.reapers,
            settings.jobs,
            settings.scale,
            settings.poll,
            settings.apply_delay,
            settings.skew
        );
    }
    interrupt::install();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a runtime starts");
    let (mut passed, mut failed, mut skipped) = (0, 0, 0);
    // Every target reached first, in target order (a skip or a failure
    // prints its line then); the reached ones race at once, one after
    // another where they share a server (`at_once`), each printing its
    // lines when every target before it has.
    let mut reached = Vec::new();
    for &target in &targets {
        if interrupt::interrupted().is_some() {
            break;
        }
        let dialect = dialects.iter().find(|d| d.name == target.dialect()).expect("loaded for every target");
        // The history checker holds the reference rules (docs/reaper-spec.md);
        // a port with its own policy would be judged by rules it does not keep.
        if !dialect.profile.policy.is_reference() {
            println!(
                "skipped: race on {target}: the {} dialect declares a policy ({}), and race judges histories by \
                 the reference design only; `run` judges the port under its policy",
                dialect.name,
                dialect
                    .profile
                    .policy
                    .decisions()
                    .iter()
                    .map(|(k, v)| format!("{k} = {v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            skipped += 1;
            continue;
        }
        match one_server::reach(&runtime, target, &required) {
            Reached::Ready(server, keep) => reached.push((target, dialect, server, keep)),
            Reached::Skipped => skipped += 1,
            Reached::Failed => failed += 1,
        }
    }
    let board = at_once::Board::new(reached.len(), |text| print!("{text}"));
    let servers = at_once::servers(reached.iter().map(|(t, ..)| *t));
    let mut keep = Vec::new();
    let mut runs = Vec::new();
    for (i, (target, dialect, server, kept)) in reached.into_iter().enumerate() {
        keep.push(kept);
        runs.push(race_target(&args, &settings, target, dialect, server, board.out(i)));
    }
    for ok in runtime.block_on(at_once::run(&board, &servers, runs)).into_iter().flatten() {
        if ok { passed += 1 } else { failed += 1 }
    }
    drop(keep);
    println!("{passed} passed, {failed} failed, {skipped} skipped");
    if let Some(signal) = interrupt::interrupted() {
        println!(
            "race: interrupted by {signal}: the race in flight stopped early (its statements cancelled, its \
             namespace dropped), so its line above judges a partial history; no target or round started after it"
        );
        return ExitCode::from(interrupt::exit_code());
    }
    if failed == 0 && passed == 0 {
        println!("no target ran: nothing was raced");
        return ExitCode::from(EXIT_FAILED);
    }
    if failed > 0 { ExitCode::from(EXIT_FAILED) } else { ExitCode::SUCCESS }
}

/// Races one target on `server` (`--directed` or `--rounds`), its lines
/// to `out`: whether it passed, or `None` when a signal came before it
/// started (then it printed nothing and counts neither way).
async fn race_target(
    args: &RaceArgs,
    settings: &Settings,
    target: Target,
    dialect: &Dialect,
    server: Server,
    out: Out<'_, '_>,
) -> Option<bool> {
    if interrupt::interrupted().is_some() {
        server.close().await;
        return None;
    }
    let on = format!("{target} [{}]", server.version());
    let history = args.history.as_ref().map(|d| d.join(format!("{target}.history")));
    let ok = if args.directed {
        let rounds = args.jobs.unwrap_or(8);
        race_directed(&on, &server, dialect, rounds, history, out).await
    } else {
        race_rounds(&on, &server, dialect, settings, args.rounds, history, out).await
    };
    server.close().await;
    Some(ok)
}

/// Races one target up to `rounds` times, round k with seed `seed + k -
/// 1`, and prints its line: `ok` with the last round's figures when every
/// round passed, else `FAIL` with the failing round's. True when it passed.
async fn race_rounds(
    on: &str,
    server: &Server,
    dialect: &Dialect,
    settings: &Settings,
    rounds: u32,
    history: Option<PathBuf>,
    out: Out<'_, '_>,
) -> bool {
    for round in 1..=rounds {
        if interrupt::interrupted().is_some() {
            return false;
        }
        let settings = Settings { seed: settings.seed.wrapping_add(u64::from(round - 1)), ..settings.clone() };
        let on = if rounds > 1 {
            format!("{on}, round {round} of {rounds} (seed {})", settings.seed)
        } else {
            on.to_owned()
        };
        let last = round == rounds;
        match race_one(&on, server, dialect, &settings, history.clone(), out).await {
            Round::Failed => return false,
            Round::Passed(summary) if last => {
                out.line(format!("ok       {on}: {summary}"));
                return true;
            }
            Round::Passed(summary) => out.line(format!("    passed {on}: {summary}")),
        }
    }
    false
}

/// Races one target through the directed interleaving and prints its
/// line; true when it passed.
async fn race_directed(
    on: &str,
    server: &Server,
    dialect: &Dialect,
    rounds: u32,
    history: Option<PathBuf>,
    out: Out<'_, '_>,
) -> bool {
    let file = std::env::temp_dir().join(format!("reapcheck-race-{}-{}.db", std::process::id(), nanos()));
    let place = if server.is_sqlite() { Place::SqliteFile(file.clone()) } else { Place::Server(server) };
    let result = reapcheck::race::directed::run(place, dialect, rounds).await;
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", file.display()));
    }
    let expectations = reapcheck::race::directed::expectations(rounds);
    match judge(on, result, &expectations, history, out) {
        Round::Passed(summary) => {
            out.line(format!("ok       {on}: {summary}"));
            true
        }
        Round::Failed => false,
    }
}

/// What one round of one target came to.
enum Round {
    /// Every rule held; the round's figures.
    Passed(String),
    /// A rule broke or the race did not run; already printed.
    Failed,
}

/// Races one target once; prints its `FAIL` line and violations when it
/// failed. A later round overwrites the history file of an earlier one.
async fn race_one(
    on: &str,
    server: &Server,
    dialect: &Dialect,
    settings: &Settings,
    history: Option<PathBuf>,
    out: Out<'_, '_>,
) -> Round {
    let file = std::env::temp_dir().join(format!("reapcheck-race-{}-{}.db", std::process::id(), nanos()));
    let place = if server.is_sqlite() { Place::SqliteFile(file.clone()) } else { Place::Server(server) };
    let result = workload::run(place, dialect, settings).await;
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", file.display()));
    }
    judge(on, result, &settings.expectations(), history, out)
}

/// Checks a race's history, writes it to `history` when asked, and prints
/// the `FAIL` line and violations when a rule broke.
fn judge(
    on: &str,
    result: Result<workload::Race, workload::RaceError>,
    expectations: &check::Expectations,
    history: Option<PathBuf>,
    out: Out<'_, '_>,
) -> Round {
    let race = match result {
        Ok(r) => r,
        Err(e) => {
            out.line(format!("FAIL     {on}: the race did not run: {e}"));
            return Round::Failed;
        }
    };
    if let Some(path) = history {
        let mut entries: Vec<_> = race.history.iter().collect();
        entries.sort_by_key(|e| e.start);
        let mut text: String = entries.iter().map(|e| format!("{e:?}\n")).collect();
        text.extend(race.rows.iter().map(|r| format!("final {r:?}\n")));
        let written = path.parent().map_or(Ok(()), std::fs::create_dir_all).and_then(|()| std::fs::write(&path, text));
        if let Err(e) = written {
            out.line(format!("    cannot write {}: {e}", path.display()));
        }
    }
    let checking = std::time::Instant::now();
    let violations = check::check(&race.history, &race.rows, expectations);
    let checked = checking.elapsed().as_secs_f64();
    let ops = race.history.len();
    let count = |name: &str| race.history.iter().filter(|e| e.op.name() == name && e.changed()).count();
    let reclaims = count("reap_retry") + count("reap_interrupt") + count("reap_fail");
    let deaths = race.history.iter().filter(|e| e.op.name() == "die").count();
    let fenced = race
        .history
        .iter()
        .filter(|e| matches!(e.op.name(), "heartbeat" | "complete") && e.res == Res::Changed(0))
        .count();
    let errors: Vec<&str> = race
        .history
        .iter()
        .filter_map(|e| match &e.res {
            Res::Error(m) => Some(m.as_str()),
            _ => None,
        })
        .collect();
    let summary = format!(
        "{ops} operations in {:.1} s ({:.0} per second): {} claims, {} completions, {deaths} deaths, {reclaims} reclaims, \
         {fenced} fenced writes; checked in {:.3} s ({:.0} operations checked per second)",
        race.elapsed,
        ops as f64 / race.elapsed.max(1e-9),
        count("claim"),
        count("complete"),
        checked,
        ops as f64 / checked.max(1e-9)
    );
    if violations.is_empty() && errors.is_empty() && reclaims > 0 {
        return Round::Passed(summary);
    }
    out.line(format!("FAIL     {on}: {summary}"));
    if reclaims == 0 {
        out.line("    no death was reclaimed: race longer (--seconds) or with a faster clock (--scale)");
    }
    if !errors.is_empty() {
        out.line(format!("    {} operations failed with a database error; the first: {}", errors.len(), errors[0]));
    }
    out.line(format!("    {} violations", violations.len()));
    for v in violations.iter().take(10) {
        out.line(format!("    {v}"));
    }
    Round::Failed
}

fn nanos() -> u128 {
    SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_nanos())
}
