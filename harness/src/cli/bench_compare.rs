//! `reapcheck bench --compare` and `--compare --adapter`: the flags, and
//! the targets handed to [`reapcheck::compare`].

use std::process::ExitCode;

use reapcheck::compare::{self, Settings};
use reapcheck::interrupt;

use super::{EXIT_FAILED, EXIT_INVALID, Inputs};

/// `println!` through [`compare::say`]: a closed stdout stops the command
/// instead of ending the process.
macro_rules! say {
    ($($arg:tt)*) => {
        compare::say(format_args!($($arg)*))
    };
}

/// The flags of `bench --compare`.
#[derive(clap::Args, Debug)]
pub struct CompareArgs {
    /// Replay one captured pass of the corpus through the database's own
    /// client (sqlite3, psql, mariadb) in rounds interleaved with `run
    /// --jobs 1` and `run`, and print the medians of the per-round ratios
    /// (docs/performance.md).
    #[arg(long)]
    pub compare: bool,
    /// `--compare`: rounds of client, `run --jobs 1`, `run` [default: 5].
    // An Option, not `default_value_t`: `bench` sees that it was given
    // ([`CompareArgs::misplaced`]).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..), requires = "compare")]
    pub rounds: Option<u16>,
    /// `--compare`: instead, the reference adapter (`adapter:reference-<db>`,
    /// this binary's `adapter serve`) against SQL mode on the same
    /// database, per scenario.
    #[arg(long, requires = "compare")]
    pub adapter: bool,
    /// `--compare`: only scenarios whose name contains one of these
    /// (comma-separated), as `run`'s filters.
    #[arg(long, value_name = "NAMES", requires = "compare")]
    pub only: Option<String>,
    /// `--compare`: where the captures (`<db>.jsonl`) and scripts
    /// (`<db>.sql`) are written, replacing files of those names, and kept
    /// [default: a folder in the temporary directory, removed when every
    /// target was compared or a signal or a closed stdout stopped it, kept
    /// and named when one failed].
    #[arg(long, value_name = "DIR", requires = "compare")]
    pub scripts: Option<std::path::PathBuf>,
}

/// The rounds when `--rounds` is not given.
const DEFAULT_ROUNDS: u16 = 5;

impl CompareArgs {
    /// The first flag of `--compare` given without it. clap's `requires =
    /// "compare"` refuses one only when no flag of `bench`'s other modes is
    /// given: those conflict with `--compare`, and clap takes a missing
    /// requirement that conflicts with a flag given for satisfied, so
    /// `bench --iterations 1 --rounds 3` measured 1 iteration and ignored
    /// `--rounds`.
    pub fn misplaced(&self) -> Option<&'static str> {
        if self.compare {
            return None;
        }
        [
            (self.rounds.is_some(), "--rounds"),
            (self.adapter, "--adapter"),
            (self.only.is_some(), "--only"),
            (self.scripts.is_some(), "--scripts"),
        ]
        .into_iter()
        .find_map(|(given, flag)| given.then_some(flag))
    }
}

/// Runs `bench --compare` on the `--db` targets.
///
/// `statement_timeout_seconds` is `bench`'s `--statement-timeout`, handed
/// to every child `run`.
pub fn compare(args: &CompareArgs, db: &str, inputs: &Inputs, statement_timeout_seconds: u64) -> ExitCode {
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("error: cannot find the reapcheck binary: {e}");
            return ExitCode::from(EXIT_INVALID);
        }
    };
    // Adapter mode's runs start in a scratch project, whose reapcheck.toml
    // holds these settings resolved ([`adapter_project`]) instead.
    let folders = ChildFolders {
        scenarios: inputs.scenarios.clone().filter(|_| !args.adapter),
        dialects: inputs
            .dialects
            .as_ref()
            .filter(|_| !args.adapter)
            .map(|d| d.canonicalize().unwrap_or_else(|_| d.clone())),
    };
    let mut targets: Vec<&str> = Vec::new();
    for t in db.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        if !targets.contains(&t) {
            targets.push(t);
        }
    }
    if targets.is_empty() || targets.contains(&"all") {
        eprintln!("error: --compare: name the targets (--db sqlite,postgres,mariadb)");
        return ExitCode::from(EXIT_INVALID);
    }
    // Refused before anything runs: an adapter target given to --adapter,
    // which names the database and adds its reference adapter itself.
    if args.adapter
        && let Some(t) = targets.iter().find(|t| t.starts_with("adapter:"))
    {
        let db = t.strip_prefix("adapter:reference-").unwrap_or("sqlite");
        eprintln!(
            "error: --compare --adapter --db {t}: --adapter compares adapter:reference-<db> with SQL mode on <db> \
             itself: give the database (--db {db}); nothing ran"
        );
        return ExitCode::from(EXIT_INVALID);
    }
    // Refused before anything runs: a target no client here replays.
    if !args.adapter
        && let Some(t) = targets.iter().find(|t| compare::Client::for_target(t).is_none())
    {
        let adapter =
            if t.starts_with("adapter:") { "; an adapter is compared by --adapter --db <its database>" } else { "" };
        eprintln!(
            "error: --compare --db {t}: bench --compare replays through sqlite3, psql and mariadb only (--db \
             sqlite,postgres,mariadb){adapter}; nothing ran"
        );
        return ExitCode::from(EXIT_INVALID);
    }
    // Refused before anything runs: a database target without a server to
    // replay on (the capturing `run` would start a container or skip it,
    // and the client has nothing to connect to).
    for t in &targets {
        let Some(target) = reapcheck::target::Target::from_name(t) else {
            eprintln!("error: --compare --db {t}: no such target (one of {})", reapcheck::reach::target_names());
            return ExitCode::from(EXIT_INVALID);
        };
        let variable = target.url_variable();
        let url = std::env::var(&variable).ok().filter(|u| !u.trim().is_empty());
        let users =
            if args.adapter { "the reference adapter uses" } else { "the capturing run and the client both use" };
        if target != reapcheck::target::Target::Sqlite && url.is_none() {
            eprintln!(
                "error: --compare --db {t}: {variable} is not set (or blank): set it to the server's URL, which \
                 {users}; nothing ran"
            );
            return ExitCode::from(EXIT_INVALID);
        }
        // reapcheck's own reading of the URL first, as `run`'s: the client
        // reads it otherwise (psql took `not a url` for a database name).
        if let Some(why) = url.as_deref().and_then(|u| reapcheck::reach::url_variable_refused(target, u)) {
            eprintln!("error: --compare --db {t}: {why}: fix the URL; nothing ran");
            return ExitCode::from(EXIT_INVALID);
        }
    }
    // Refused before anything runs: scenarios that do not load (the runs
    // it starts would each fail on them, with exit 1, not 2), and `--only`
    // matching none of them (every run would refuse it, with exit 1).
    let only: Vec<String> =
        args.only.iter().flat_map(|o| o.split(',')).filter(|f| !f.is_empty()).map(str::to_owned).collect();
    let only_shown = shell_quoted(args.only.as_deref().unwrap_or_default());
    if args.only.is_some() && only.is_empty() {
        // Always quoted: a bare `,` reads as punctuation of the message.
        let only_shown = format!("'{}'", args.only.as_deref().unwrap_or_default());
        eprintln!("error: --only {only_shown} names no scenario: give names (grace/floor,leases/) or leave --only out");
        return ExitCode::from(EXIT_INVALID);
    }
    let selected = match inputs.scenarios(&only, false) {
        Ok(s) if s.is_empty() && only.is_empty() => {
            eprintln!("error: no scenario in {}: nothing would run; add a .yaml file", inputs.scenarios_shown());
            return ExitCode::from(EXIT_INVALID);
        }
        Ok(s) if s.is_empty() => {
            let known = inputs.scenarios(&[], false).unwrap_or_default();
            eprintln!(
                "error: --only {only_shown}: no scenario in {} matches: nothing would run{}",
                inputs.scenarios_shown(),
                super::inputs::did_you_mean(&only, &known)
            );
            return ExitCode::from(EXIT_INVALID);
        }
        Ok(s) => s,
        Err(errors) => {
            super::inputs::report(&errors);
            return ExitCode::from(EXIT_INVALID);
        }
    };
    // Refused before anything runs: one name of `--only` that matches
    // nothing (a typo would silently measure fewer scenarios than meant).
    if let Some(unmatched) = only.iter().find(|f| !selected.iter().any(|s| s.name.contains(f.as_str()))) {
        let known = inputs.scenarios(&[], false).unwrap_or_default();
        eprintln!(
            "error: --only {only_shown}: {} matches no scenario in {}: fix it or leave it out; nothing ran{}",
            shell_quoted(unmatched),
            inputs.scenarios_shown(),
            super::inputs::did_you_mean(std::slice::from_ref(unmatched), &known)
        );
        return ExitCode::from(EXIT_INVALID);
    }
    // Refused before anything runs: a dialect folder that does not load
    // (the capturing run, or --adapter's first round, would fail on it,
    // with exit 1). --adapter's runs read the same folder, resolved the
    // same way, from their scratch project ([`adapter_project`]).
    let names: Vec<&str> =
        targets.iter().filter_map(|t| reapcheck::target::Target::from_name(t)).map(|t| t.dialect()).collect();
    if let Err(errors) = inputs.dialects(&names) {
        errors.iter().for_each(|e| eprintln!("error: {e}"));
        return ExitCode::from(EXIT_INVALID);
    }
    let scripts = args
        .scripts
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join(format!("reapcheck-compare-{}", std::process::id())));
    // Made, and written once: a folder that exists but cannot be written
    // (`/sys`) made the capturing run fail on its first statement.
    // Its own folder is made in the temporary directory, never the
    // directory itself (a missing TMPDIR was made, and left).
    let probe = scripts.join(format!(".reapcheck-write-{}", std::process::id()));
    let made = if args.scripts.is_some() {
        std::fs::create_dir_all(&scripts)
    } else {
        std::fs::create_dir(&scripts)
            .or_else(|e| if e.kind() == std::io::ErrorKind::AlreadyExists { Ok(()) } else { Err(e) })
    };
    let writable = made.and_then(|()| std::fs::write(&probe, b"")).and_then(|()| std::fs::remove_file(&probe));
    if let Err(e) = writable {
        if args.scripts.is_some() && !scripts.is_dir() && scripts.exists() {
            eprintln!("error: --scripts {}: is not a folder: give a folder (made if missing)", scripts.display());
        } else if args.scripts.is_some() {
            eprintln!(
                "error: --scripts {}: cannot write in the folder ({e}): give a folder that can be written",
                scripts.display()
            );
        } else {
            eprintln!(
                "error: cannot make {} in the temporary directory ({e}): set TMPDIR to a folder that exists and can \
                 be written, or give --scripts DIR; nothing ran",
                scripts.display()
            );
        }
        return ExitCode::from(EXIT_INVALID);
    }
    let scripts = scripts.canonicalize().unwrap_or(scripts);
    // Removes a folder of its own when the command ends, whichever way
    // (an early return, a panic, a closed stdout), unless a failure keeps
    // it.
    let mut folder = ScriptsFolder { path: scripts.clone(), own: args.scripts.is_none(), keep: false };
    // From here a closed stdout (`| head -1`) stops the command as a
    // signal does, its child ended and this folder removed, and ends it by
    // SIGPIPE after (`bench`), instead of SIGPIPE ending it at its next
    // line with its child running and this folder left.
    compare::ignore_sigpipe();
    // Refused before anything is captured: a client that does not start or
    // cannot reach its server, for every target, not after the first
    // target's rounds.
    interrupt::install();
    if !args.adapter {
        let refused: Vec<String> = targets
            .iter()
            .filter_map(|t| compare::preflight(t, &scripts).err().map(|e| format!("error: --compare --db {t}: {e}")))
            .collect();
        if let Some(why) = compare::stopped() {
            say!("bench --compare: interrupted by {why} while checking the clients: nothing ran");
            return stopped_exit();
        }
        if !refused.is_empty() {
            refused.iter().for_each(|e| compare::say_err(format_args!("{e}; nothing ran")));
            return ExitCode::from(EXIT_INVALID);
        }
    }
    // The start-up probe's scenario (`compare::start_up_note`): one of the
    // selection, none when it is the selection.
    let probe_args = match selected.as_slice() {
        [_] | [] => None,
        [first, ..] => Some(child_args(statement_timeout_seconds, &folders, true, std::slice::from_ref(&first.name))),
    };
    let run_args = child_args(statement_timeout_seconds, &folders, false, &only);
    let project = if args.adapter {
        match adapter_project(inputs) {
            Ok(p) => Some(p),
            Err(errors) => {
                errors.iter().for_each(|e| compare::say_err(format_args!("error: {e}")));
                return ExitCode::from(EXIT_INVALID);
            }
        }
    } else {
        None
    };
    let settings = Settings {
        exe,
        rounds: usize::from(args.rounds.unwrap_or(DEFAULT_ROUNDS)),
        run_args,
        probe_args,
        scripts: scripts.clone(),
        project,
    };
    let mut ok = true;
    for target in targets {
        if let Some(why) = compare::stopped() {
            say!("bench --compare: interrupted by {why}: no target started after it");
            break;
        }
        ok &= if args.adapter {
            compare::adapter::compare_adapter(&settings, target)
        } else {
            compare::compare_target(&settings, target)
        };
    }
    let stopped = compare::stopped().is_some();
    // A folder of its own, in the temporary directory: removed when there
    // is nothing to look at (every target compared, or stopped by a signal
    // or a closed stdout), kept and named when a target failed, whose
    // lines name its files.
    if folder.own {
        folder.own = false;
        if ok || stopped {
            match std::fs::remove_dir_all(&scripts) {
                Ok(()) => say!("removed {} (give --scripts DIR to keep what it wrote)", scripts.display()),
                Err(e) => compare::say_err(format_args!("warning: cannot remove {}: {e}", scripts.display())),
            }
        } else {
            folder.keep = true;
            say!("kept {} for the failure above (remove it when done)", scripts.display());
        }
    }
    if stopped {
        return stopped_exit();
    }
    if let Some(e) = compare::stdout_failed() {
        compare::say_err(format_args!("error: the figures could not be written to stdout ({e}): nothing was shown"));
        return ExitCode::from(EXIT_FAILED);
    }
    if ok { ExitCode::SUCCESS } else { ExitCode::from(EXIT_FAILED) }
}

/// The exit of a command that was stopped: 130 for a signal
/// ([`interrupt::exit_code`]); for a closed stdout, [`EXIT_STDOUT_CLOSED`],
/// which `bench` turns into SIGPIPE once everything is dropped
/// ([`compare::end_as_a_broken_pipe`]).
fn stopped_exit() -> ExitCode {
    if interrupt::interrupted().is_some() {
        return ExitCode::from(interrupt::exit_code());
    }
    ExitCode::from(EXIT_STDOUT_CLOSED)
}

/// The exit status of `bench --compare` stopped by a closed stdout, where
/// it cannot end by SIGPIPE: 128 + SIGPIPE, as a shell reports that.
pub const EXIT_STDOUT_CLOSED: u8 = 141;

/// `text` as a shell would take it back: as it is when it is a plain word
/// (`grace/floor,leases/`), else in single quotes (`' '`, `''`).
fn shell_quoted(text: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/_-.,:=+@%".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        return text.to_owned();
    }
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// The scenario sets and dialects folder the child runs are given (SQL
/// mode; `None` in `--adapter` mode, whose scratch project holds them).
struct ChildFolders {
    scenarios: Option<String>,
    dialects: Option<std::path::PathBuf>,
}

/// The arguments every child `run` gets after `--db <target>`: the
/// statement time limit in seconds (`bench`'s `--statement-timeout`), the
/// folders as `--flag=value`, then `--exact` if asked, and the scenario
/// names or filters after `--`: a value starting with `-` (a folder `-sc`,
/// `--only=-grace`) is never read as a flag.
fn child_args(statement_timeout_seconds: u64, folders: &ChildFolders, exact: bool, names: &[String]) -> Vec<String> {
    let mut args = vec!["--statement-timeout".to_owned(), statement_timeout_seconds.to_string()];
    if let Some(s) = &folders.scenarios {
        args.push(format!("--scenarios={s}"));
    }
    if let Some(d) = &folders.dialects {
        args.push(format!("--dialects={}", d.to_string_lossy()));
    }
    if exact {
        args.push("--exact".to_owned());
    }
    if !names.is_empty() {
        args.push("--".to_owned());
        args.extend(names.iter().cloned());
    }
    args
}

/// `bench --compare`'s own folder in the temporary directory, removed on
/// drop unless kept: a panic or an early return leaves nothing behind.
struct ScriptsFolder {
    path: std::path::PathBuf,
    /// Made by `bench --compare` (no `--scripts`), so removed by it.
    own: bool,
    /// A failure's files, named on its last line.
    keep: bool,
}

impl Drop for ScriptsFolder {
    fn drop(&mut self) {
        if self.own && !self.keep {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// What the user's project says `run` reads, resolved (flag, then
/// environment, then `reapcheck.toml`) with folders made absolute, for the
/// scratch project of `--compare --adapter`, whose runs start in another
/// folder: the scenario sets, the dialects folder and `builtin_dialects`.
fn adapter_project(inputs: &Inputs) -> Result<compare::adapter::ProjectInputs, Vec<String>> {
    let project = inputs.project()?;
    let sets = project.scenarios(inputs.scenarios.as_deref()).map_err(|e| vec![e.to_string()])?;
    let absolute = |p: &std::path::Path| {
        let p = if p.is_absolute() { p.to_owned() } else { std::env::current_dir().unwrap_or_default().join(p) };
        p.canonicalize().unwrap_or(p).to_string_lossy().into_owned()
    };
    let scenarios = sets
        .value
        .iter()
        .map(|set| match set {
            reapcheck::config::ScenarioSet::Builtin => reapcheck::corpus::BUILTIN.to_owned(),
            reapcheck::config::ScenarioSet::Folder(dir) => absolute(dir),
        })
        .collect();
    let dialects = project.dialects(inputs.dialects.as_deref()).value.as_deref().map(absolute);
    let builtin_dialects = project.builtin_dialects().into_iter().map(|s| s.value).collect();
    Ok(compare::adapter::ProjectInputs { scenarios, dialects, builtin_dialects })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn child_runs_get_the_statement_timeout_and_names_after_a_double_dash() {
        let none = ChildFolders { scenarios: None, dialects: None };
        assert_eq!(child_args(7, &none, false, &[]), ["--statement-timeout", "7"]);
        assert_eq!(
            child_args(30, &none, false, &["-grace".to_owned(), "leases/".to_owned()]),
            ["--statement-timeout", "30", "--", "-grace", "leases/"]
        );
        let folders = ChildFolders { scenarios: Some("builtin".into()), dialects: Some("/d".into()) };
        assert_eq!(
            child_args(30, &folders, true, &["grace/floor".to_owned()]),
            ["--statement-timeout", "30", "--scenarios=builtin", "--dialects=/d", "--exact", "--", "grace/floor"]
        );
    }

    #[test]
    fn a_plain_word_is_shown_as_it_is_and_anything_else_quoted() {
        assert_eq!(shell_quoted("grace/floor,leases/"), "grace/floor,leases/");
        assert_eq!([shell_quoted(" "), shell_quoted(""), shell_quoted("a'b")], ["' '", "''", "'a'\\''b'"]);
    }
}
