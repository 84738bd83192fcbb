//! `reapcheck.toml`, the project configuration, and the one order in which
//! every setting is resolved: the command-line flag, then the environment
//! variable, then the file, then the default.
//!
//! The file is found by walking up from the current folder, as Cargo finds
//! `Cargo.toml`; its folder is the project root, against which the paths in
//! it (and the snapshots' `input_file` headers) are relative. Keys (all
//! optional, unknown keys are errors):
//!
//! | key | flag | variable | default |
//! | --- | --- | --- | --- |
//! | `dialects` (folder) | `--dialects` | `REAPCHECK_DIALECTS` | the SQL built into reapcheck |
//! | `builtin_dialects` (names) | — | — | none |
//! | `scenarios` (sets) | `--scenarios` | `REAPCHECK_SCENARIOS` | `builtin` |
//! | `targets` (names) | `--db` | `REAPCHECK_DB` | `sqlite` |
//! | `required` (names) | `--require` | `REAPCHECK_REQUIRE` | none |
//!
//! `[adapters.<name>]` tables name adapter targets (docs/adapter-protocol.md,
//! "Configuring an adapter target"): `command` (a non-empty array of
//! strings, run in the project root), `database` (the target whose server
//! the adapter uses), optional `env` (a table of strings added to
//! reapcheck's environment) and `timeout_seconds` (per request, 1 to 600,
//! default 10). Such a target is named `adapter:<name>` in `targets`,
//! `required`, `--db`, `--require` and their variables.
//!
//! A dialect runs from the `dialects` folder when that folder has a
//! sub-folder of its name; otherwise it runs reapcheck's own SQL only when
//! `builtin_dialects` lists it, and is an error if not (a binary never runs
//! SQL the user did not choose).

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use crate::target::Target;

/// The file's name.
pub const FILE_NAME: &str = "reapcheck.toml";
/// Variable: the dialects folder.
pub const DIALECTS_VARIABLE: &str = "REAPCHECK_DIALECTS";
/// Variable: the scenario sets, comma-separated.
pub const SCENARIOS_VARIABLE: &str = "REAPCHECK_SCENARIOS";
/// Variable: the targets, comma-separated.
pub const TARGETS_VARIABLE: &str = "REAPCHECK_DB";
/// Variable: the required targets, comma-separated.
pub const REQUIRE_VARIABLE: &str = "REAPCHECK_REQUIRE";

/// Where a setting's value came from; errors name it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A command-line flag such as `--db`.
    Flag(&'static str),
    /// An environment variable.
    Variable(&'static str),
    /// A key of `reapcheck.toml`, at its value's line and column (1-based).
    File {
        /// The file.
        path: PathBuf,
        /// The line of the value.
        line: usize,
        /// The column of the value.
        column: usize,
        /// The key.
        key: &'static str,
    },
    /// No flag, variable or key: the built-in default.
    Default,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Flag(flag) => write!(f, "{flag}"),
            Origin::Variable(v) => write!(f, "{v}"),
            Origin::File { path, line, column, key: "" } => write!(f, "{}:{line}:{column}", path.display()),
            Origin::File { path, line, column, key } => write!(f, "{}:{line}:{column}: key `{key}`", path.display()),
            Origin::Default => f.write_str("default"),
        }
    }
}

/// A resolved setting and where it came from.
#[derive(Clone, Debug)]
pub struct Setting<T> {
    /// The value.
    pub value: T,
    /// Its origin.
    pub origin: Origin,
}

/// A configuration value that cannot be used, with where it was given.
#[derive(Debug, thiserror::Error)]
#[error("{origin}: {kind}")]
pub struct ConfigError {
    /// The flag, variable or file position of the value.
    pub origin: Origin,
    /// What is wrong.
    #[source]
    pub kind: ConfigErrorKind,
}

/// The kinds of configuration error.
#[derive(Debug, thiserror::Error)]
pub enum ConfigErrorKind {
    /// The file exists but cannot be read.
    #[error("cannot read the file: {0}")]
    Read(#[from] std::io::Error),
    /// The file is not valid TOML or has an unknown key or a wrong type.
    #[error("{0}")]
    Syntax(String),
    /// A target name that does not exist.
    #[error("unknown target `{name}`: the targets are {}", target_names())]
    UnknownTarget {
        /// The name given.
        name: String,
    },
    /// `all` given together with other targets.
    #[error("`all` cannot be combined with other targets: give `all` alone, or list the targets")]
    AllCombined,
    /// An empty list of targets.
    #[error("names no target: give at least one of {}", target_names())]
    NoTarget,
    /// `adapter:<name>` names no `[adapters.<name>]` table.
    #[error("unknown adapter `{name}`: {}", known_adapters(.known))]
    UnknownAdapter {
        /// The name after `adapter:`.
        name: String,
        /// The adapters the file configures.
        known: Vec<String>,
    },
    /// An `[adapters.<name>]` table with a value that cannot be used.
    #[error("adapter `{name}`: {why}")]
    Adapter {
        /// The adapter's name.
        name: String,
        /// What is wrong and what to write instead.
        why: String,
    },
    /// An empty list of scenario sets.
    #[error("names no scenario set: give `builtin` (the corpus inside reapcheck) and/or a folder of scenario files")]
    NoScenarioSet,
}

/// The target names, comma-separated.
pub fn target_names() -> String {
    Target::ALL.iter().map(|t| t.name()).collect::<Vec<_>>().join(", ")
}

fn known_adapters(known: &[String]) -> String {
    if known.is_empty() {
        format!(
            "no {FILE_NAME} in this folder or above it configures one: add an `[adapters.<name>]` table with \
             `command` and `database` to your project's {FILE_NAME} (docs/adapter-protocol.md)"
        )
    } else {
        format!("{FILE_NAME} configures {}", known.join(", "))
    }
}

/// The prefix of an adapter target's name: `adapter:saq`.
pub const ADAPTER_PREFIX: &str = "adapter:";

/// The default time limit of one adapter request, in seconds.
pub const DEFAULT_ADAPTER_TIMEOUT: u64 = 10;

/// The largest `timeout_seconds` of an adapter, in seconds.
pub const MAX_ADAPTER_TIMEOUT: u64 = 600;

/// One `[adapters.<name>]` table, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdapterConfig {
    /// The table's name: the target is `adapter:<name>`.
    pub name: String,
    /// The program and its arguments (never empty).
    pub command: Vec<String>,
    /// The database target whose server (and URL) the adapter uses.
    pub database: Target,
    /// Variables added to reapcheck's own environment, in name order.
    pub env: Vec<(String, String)>,
    /// The time limit of each request.
    pub timeout: std::time::Duration,
    /// Where the table is.
    pub origin: Origin,
}

impl AdapterConfig {
    /// The target's name, `adapter:<name>`.
    pub fn target_name(&self) -> String {
        format!("{ADAPTER_PREFIX}{}", self.name)
    }
}

/// A set of scenarios to run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScenarioSet {
    /// The corpus built into reapcheck ([`crate::corpus`]).
    Builtin,
    /// A folder of scenario files.
    Folder(PathBuf),
}

impl fmt::Display for ScenarioSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScenarioSet::Builtin => f.write_str(crate::corpus::BUILTIN),
            ScenarioSet::Folder(p) => write!(f, "{}", p.display()),
        }
    }
}

/// The targets selected, and whether by `all` (which may skip what it
/// cannot reach).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selection {
    /// The database targets, without repetition, in the order given.
    pub targets: Vec<Target>,
    /// The adapter targets (their names, without `adapter:`), without
    /// repetition, in the order given; each has an `[adapters.<name>]` table.
    pub adapters: Vec<String>,
    /// `all` was given: unreachable targets are skipped, not failed.
    pub all: bool,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawFile {
    dialects: Option<Spanned<String>>,
    builtin_dialects: Option<Vec<Spanned<String>>>,
    scenarios: Option<Spanned<Vec<Spanned<String>>>>,
    targets: Option<Spanned<Vec<Spanned<String>>>>,
    required: Option<Spanned<Vec<Spanned<String>>>>,
    adapters: Option<std::collections::BTreeMap<Spanned<String>, RawAdapter>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAdapter {
    command: Spanned<Vec<Spanned<String>>>,
    database: Spanned<String>,
    env: Option<std::collections::BTreeMap<String, Spanned<String>>>,
    timeout_seconds: Option<Spanned<i64>>,
}

/// The project: its `reapcheck.toml` (if any) and root folder.
pub struct Project {
    /// The file found, if any.
    pub file: Option<PathBuf>,
    /// The folder of the file, or the current folder without one.
    pub root: PathBuf,
    text: String,
    raw: RawFile,
    adapters: Vec<AdapterConfig>,
}

impl Project {
    /// Finds `reapcheck.toml` in `start` or the nearest folder above it and
    /// reads it; without one, a project rooted at `start` with every
    /// setting at its default.
    ///
    /// # Errors
    ///
    /// The file cannot be read, is not TOML, has an unknown key or a value
    /// of the wrong type: the error names `file:line:column`.
    pub fn discover(start: &Path) -> Result<Project, ConfigError> {
        let start = std::path::absolute(start).unwrap_or_else(|_| start.to_owned());
        let found = start.ancestors().map(|d| d.join(FILE_NAME)).find(|p| p.is_file());
        match found {
            None => Ok(Project {
                file: None,
                root: start,
                text: String::new(),
                raw: RawFile::default(),
                adapters: Vec::new(),
            }),
            Some(path) => Project::read(&path),
        }
    }

    /// Reads the project file at `path`.
    ///
    /// # Errors
    ///
    /// As [`Project::discover`].
    pub fn read(path: &Path) -> Result<Project, ConfigError> {
        let at = |line, column| Origin::File { path: path.to_owned(), line, column, key: "" };
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError { origin: at(1, 1), kind: e.into() })?;
        let raw: RawFile = toml::from_str(&text).map_err(|e| {
            let (line, column) = e.span().map_or((1, 1), |s| line_column(&text, s.start));
            let origin = Origin::File { path: path.to_owned(), line, column, key: "" };
            ConfigError { origin, kind: ConfigErrorKind::Syntax(e.message().trim().to_owned()) }
        })?;
        let root = path.parent().map(Path::to_owned).unwrap_or_default();
        let mut project = Project { file: Some(path.to_owned()), root, text, raw, adapters: Vec::new() };
        project.adapters = project.read_adapters()?;
        Ok(project)
    }

    /// Checks every `[adapters.<name>]` table.
    fn read_adapters(&self) -> Result<Vec<AdapterConfig>, ConfigError> {
        let mut adapters = Vec::new();
        for (name, raw) in self.raw.adapters.iter().flatten() {
            let bad = |at: Origin, why: String| ConfigError {
                origin: at,
                kind: ConfigErrorKind::Adapter { name: name.get_ref().clone(), why },
            };
            let named = name.get_ref();
            if Target::from_name(named).is_some() {
                let why = format!("`{named}` is a database target's name: give the adapter another name");
                return Err(bad(self.origin(name, "adapters"), why));
            }
            if named.is_empty() || !named.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
                let why = "a name is letters, digits, `-` and `_`".to_owned();
                return Err(bad(self.origin(name, "adapters"), why));
            }
            let command: Vec<String> = raw.command.get_ref().iter().map(|c| c.get_ref().clone()).collect();
            if command.first().is_none_or(|p| p.trim().is_empty()) {
                let why =
                    "`command` is empty: give the program and its arguments, such as [\"python3\", \"adapter.py\"]";
                return Err(bad(self.origin(&raw.command, "command"), why.to_owned()));
            }
            let Some(database) = Target::from_name(raw.database.get_ref().trim()) else {
                let why = format!(
                    "`database` names no database target `{}`: give one of {}",
                    raw.database.get_ref(),
                    target_names()
                );
                return Err(bad(self.origin(&raw.database, "database"), why));
            };
            let timeout = match &raw.timeout_seconds {
                None => DEFAULT_ADAPTER_TIMEOUT,
                Some(t) => match u64::try_from(*t.get_ref()) {
                    Ok(secs @ 1..=MAX_ADAPTER_TIMEOUT) => secs,
                    _ => {
                        let why = format!(
                            "`timeout_seconds` is {}: give whole seconds from 1 to {MAX_ADAPTER_TIMEOUT}",
                            t.get_ref()
                        );
                        return Err(bad(self.origin(t, "timeout_seconds"), why));
                    }
                },
            };
            let env = raw.env.iter().flatten().map(|(k, v)| (k.clone(), v.get_ref().clone())).collect();
            adapters.push(AdapterConfig {
                name: named.clone(),
                command,
                database,
                env,
                timeout: std::time::Duration::from_secs(timeout),
                origin: self.origin(name, ""),
            });
        }
        Ok(adapters)
    }

    /// The adapters the file configures, in name order.
    pub fn adapters(&self) -> &[AdapterConfig] {
        &self.adapters
    }

    /// The adapter called `name` (without `adapter:`), if configured.
    pub fn adapter(&self, name: &str) -> Option<&AdapterConfig> {
        self.adapters.iter().find(|a| a.name == name)
    }

    fn origin<T>(&self, value: &Spanned<T>, key: &'static str) -> Origin {
        let (line, column) = line_column(&self.text, value.span().start);
        Origin::File { path: self.file.clone().unwrap_or_default(), line, column, key }
    }

    /// The targets: `--db`, else `REAPCHECK_DB`, else `targets`, else
    /// `sqlite`.
    ///
    /// # Errors
    ///
    /// An unknown name, `all` with others, or an empty list.
    pub fn targets(&self, flag: Option<&str>) -> Result<Setting<Selection>, ConfigError> {
        self.target_list(flag, "--db", TARGETS_VARIABLE, self.raw.targets.as_ref(), "targets", Some("sqlite"))
    }

    /// The required targets: `--require`, else `REAPCHECK_REQUIRE`, else
    /// `required`, else none. A required target that does not run fails.
    ///
    /// # Errors
    ///
    /// An unknown name or `all` with others.
    pub fn required(&self, flag: Option<&str>) -> Result<Setting<Selection>, ConfigError> {
        self.target_list(flag, "--require", REQUIRE_VARIABLE, self.raw.required.as_ref(), "required", None)
    }

    fn target_list(
        &self,
        flag: Option<&str>,
        flag_name: &'static str,
        variable: &'static str,
        key: Option<&Spanned<Vec<Spanned<String>>>>,
        key_name: &'static str,
        default: Option<&str>,
    ) -> Result<Setting<Selection>, ConfigError> {
        let (items, origin): (Vec<(String, Origin)>, Origin) = if let Some(list) = flag {
            (split(list).map(|n| (n, Origin::Flag(flag_name))).collect(), Origin::Flag(flag_name))
        } else if let Some(list) = env(variable) {
            (split(&list).map(|n| (n, Origin::Variable(variable))).collect(), Origin::Variable(variable))
        } else if let Some(list) = key {
            let items = list.get_ref().iter().map(|n| (n.get_ref().trim().to_owned(), self.origin(n, key_name)));
            (items.collect(), self.origin(list, key_name))
        } else {
            (default.into_iter().map(|n| (n.to_owned(), Origin::Default)).collect(), Origin::Default)
        };
        let known: Vec<String> = self.adapters.iter().map(|a| a.name.clone()).collect();
        let value = parse_selection(&items, &origin, default.is_some(), &known)?;
        Ok(Setting { value, origin })
    }

    /// The scenario sets: `--scenarios`, else `REAPCHECK_SCENARIOS`, else
    /// `scenarios`, else `builtin`. Folders from the file are relative to
    /// the project root; from a flag or variable, to the current folder.
    ///
    /// # Errors
    ///
    /// An empty list.
    pub fn scenarios(&self, flag: Option<&str>) -> Result<Setting<Vec<ScenarioSet>>, ConfigError> {
        let set = |name: &str, base: Option<&Path>| match name {
            crate::corpus::BUILTIN => ScenarioSet::Builtin,
            folder => ScenarioSet::Folder(base.map_or_else(|| PathBuf::from(folder), |b| b.join(folder))),
        };
        let (value, origin): (Vec<ScenarioSet>, Origin) = if let Some(list) = flag {
            (split(list).map(|n| set(&n, None)).collect(), Origin::Flag("--scenarios"))
        } else if let Some(list) = env(SCENARIOS_VARIABLE) {
            (split(&list).map(|n| set(&n, None)).collect(), Origin::Variable(SCENARIOS_VARIABLE))
        } else if let Some(list) = &self.raw.scenarios {
            let sets = list.get_ref().iter().map(|n| set(n.get_ref().trim(), Some(&self.root))).collect();
            (sets, self.origin(list, "scenarios"))
        } else {
            (vec![ScenarioSet::Builtin], Origin::Default)
        };
        if value.is_empty() {
            return Err(ConfigError { origin, kind: ConfigErrorKind::NoScenarioSet });
        }
        Ok(Setting { value, origin })
    }

    /// The folder of the user's dialects: `--dialects`, else
    /// `REAPCHECK_DIALECTS`, else `dialects`, else none (reapcheck's own
    /// SQL). `builtin` as a value means none.
    pub fn dialects(&self, flag: Option<&Path>) -> Setting<Option<PathBuf>> {
        let folder = |p: PathBuf| (p != Path::new(crate::corpus::BUILTIN)).then_some(p);
        if let Some(dir) = flag {
            Setting { value: folder(dir.to_owned()), origin: Origin::Flag("--dialects") }
        } else if let Some(dir) = env(DIALECTS_VARIABLE) {
            Setting { value: folder(PathBuf::from(dir)), origin: Origin::Variable(DIALECTS_VARIABLE) }
        } else if let Some(dir) = &self.raw.dialects {
            let value = folder(PathBuf::from(dir.get_ref())).map(|p| self.root.join(p));
            Setting { value, origin: self.origin(dir, "dialects") }
        } else {
            Setting { value: None, origin: Origin::Default }
        }
    }

    /// The dialects that run reapcheck's own SQL when the dialects folder
    /// has no sub-folder of their name (`builtin_dialects`), each with its
    /// origin.
    pub fn builtin_dialects(&self) -> Vec<Setting<String>> {
        self.raw
            .builtin_dialects
            .iter()
            .flatten()
            .map(|n| Setting { value: n.get_ref().clone(), origin: self.origin(n, "builtin_dialects") })
            .collect()
    }
}

fn env(variable: &str) -> Option<String> {
    std::env::var(variable).ok().filter(|v| !v.trim().is_empty())
}

fn split(list: &str) -> impl Iterator<Item = String> + '_ {
    list.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned)
}

fn parse_selection(
    items: &[(String, Origin)],
    origin: &Origin,
    non_empty: bool,
    adapters: &[String],
) -> Result<Selection, ConfigError> {
    let err = |origin: &Origin, kind| ConfigError { origin: origin.clone(), kind };
    if items.iter().any(|(n, _)| n == "all") {
        if items.len() > 1 {
            return Err(err(origin, ConfigErrorKind::AllCombined));
        }
        return Ok(Selection { targets: Target::ALL.to_vec(), adapters: Vec::new(), all: true });
    }
    let mut targets = Vec::new();
    let mut chosen = Vec::new();
    for (name, at) in items {
        if let Some(adapter) = name.strip_prefix(ADAPTER_PREFIX) {
            if !adapters.iter().any(|a| a == adapter) {
                let kind = ConfigErrorKind::UnknownAdapter { name: adapter.to_owned(), known: adapters.to_vec() };
                return Err(err(at, kind));
            }
            if !chosen.iter().any(|c| c == adapter) {
                chosen.push(adapter.to_owned());
            }
            continue;
        }
        let t =
            Target::from_name(name).ok_or_else(|| err(at, ConfigErrorKind::UnknownTarget { name: name.clone() }))?;
        if !targets.contains(&t) {
            targets.push(t);
        }
    }
    if targets.is_empty() && chosen.is_empty() && non_empty {
        return Err(err(origin, ConfigErrorKind::NoTarget));
    }
    Ok(Selection { targets, adapters: chosen, all: false })
}

/// The 1-based line and column of byte `offset` in `text`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Dir(PathBuf);

    impl Dir {
        fn new(name: &str, config: Option<&str>) -> Dir {
            let dir = std::env::temp_dir().join(format!("reapcheck-config-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(dir.join("a/b")).unwrap();
            if let Some(text) = config {
                std::fs::write(dir.join(FILE_NAME), text).unwrap();
            }
            Dir(dir)
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn the_file_is_found_from_a_subfolder_and_paths_are_relative_to_it() {
        let d = Dir::new("walk", Some("dialects = \"sql\"\nscenarios = [\"builtin\", \"mine\"]\n"));
        let p = Project::discover(&d.0.join("a/b")).unwrap();
        assert_eq!(p.file.as_deref(), Some(d.0.join(FILE_NAME).as_path()));
        assert_eq!(p.dialects(None).value, Some(d.0.join("sql")));
        let sets = p.scenarios(None).unwrap();
        assert_eq!(sets.value, vec![ScenarioSet::Builtin, ScenarioSet::Folder(d.0.join("mine"))]);
        assert_eq!(sets.origin.to_string(), format!("{}:2:13: key `scenarios`", d.0.join(FILE_NAME).display()));
    }

    #[test]
    fn a_flag_wins_over_the_file_and_defaults_apply_without_one() {
        let d = Dir::new("order", Some("targets = [\"postgres\"]\n"));
        let p = Project::discover(&d.0).unwrap();
        let flagged = p.targets(Some("mariadb")).unwrap();
        assert_eq!((flagged.value.targets, flagged.origin), (vec![Target::Mariadb], Origin::Flag("--db")));
        let bare = Project::discover(&std::env::temp_dir().join("reapcheck-no-such-project")).unwrap();
        assert!(bare.file.is_none());
        assert_eq!(bare.dialects(None).value, None);
        assert_eq!(bare.scenarios(None).unwrap().value, vec![ScenarioSet::Builtin]);
        // The environment comes before the default: under CI's
        // REAPCHECK_REQUIRE the required targets are the variable's.
        let required = bare.required(None).unwrap();
        match std::env::var(crate::reach::REQUIRE_VARIABLE) {
            Ok(list) if !list.trim().is_empty() => {
                assert_eq!(required.origin, Origin::Variable(crate::reach::REQUIRE_VARIABLE));
                let named: Vec<&str> = required.value.targets.iter().map(|t| t.name()).collect();
                assert_eq!(named.join(","), list.split(',').map(str::trim).collect::<Vec<_>>().join(","));
            }
            _ => assert_eq!(required.value.targets, Vec::<Target>::new()),
        }
    }

    #[test]
    fn errors_name_the_file_line_column_and_key() {
        let d = Dir::new("errors", Some("# mine\ntargets = [\"sqlite\", \"oracle\"]\n"));
        let e = Project::discover(&d.0).unwrap().targets(None).unwrap_err();
        let file = d.0.join(FILE_NAME).display().to_string();
        assert_eq!(
            e.to_string(),
            format!("{file}:2:22: key `targets`: unknown target `oracle`: the targets are {}", target_names())
        );
        let d = Dir::new("unknown-key", Some("target = [\"sqlite\"]\n"));
        let e = Project::discover(&d.0).err().unwrap().to_string();
        assert!(e.starts_with(&format!("{}:1:1: ", d.0.join(FILE_NAME).display())), "{e}");
        assert!(e.contains("unknown field `target`"), "{e}");
    }

    #[test]
    fn an_adapter_table_is_read_and_selected_as_adapter_name() {
        let text = "targets = [\"sqlite\", \"adapter:saq\"]\n\n[adapters.saq]\ncommand = [\"python3\", \"a.py\"]\n\
                    database = \"postgres\"\nenv = { PYTHONUNBUFFERED = \"1\" }\ntimeout_seconds = 30\n\n\
                    [adapters.ref]\ncommand = [\"reapcheck\"]\ndatabase = \"sqlite\"\n";
        let d = Dir::new("adapters", Some(text));
        let p = Project::discover(&d.0).unwrap();
        let saq = p.adapter("saq").unwrap();
        assert_eq!(saq.command, vec!["python3".to_owned(), "a.py".to_owned()]);
        assert_eq!((saq.database, saq.timeout.as_secs()), (Target::Postgres, 30));
        assert_eq!(saq.env, vec![("PYTHONUNBUFFERED".to_owned(), "1".to_owned())]);
        assert_eq!(saq.target_name(), "adapter:saq");
        let r = p.adapter("ref").unwrap();
        assert_eq!((r.database, r.timeout.as_secs(), r.env.len()), (Target::Sqlite, DEFAULT_ADAPTER_TIMEOUT, 0));
        let selected = p.targets(None).unwrap().value;
        assert_eq!((selected.targets, selected.adapters), (vec![Target::Sqlite], vec!["saq".to_owned()]));
        let only = p.targets(Some("adapter:ref,adapter:ref")).unwrap().value;
        assert_eq!((only.targets, only.adapters), (vec![], vec!["ref".to_owned()]));
        let e = p.targets(Some("adapter:nope")).unwrap_err();
        assert_eq!(e.to_string(), "--db: unknown adapter `nope`: reapcheck.toml configures ref, saq");
        let bare = Project::discover(&std::env::temp_dir().join("reapcheck-no-such-project")).unwrap();
        let e = bare.required(Some("adapter:saq")).unwrap_err().to_string();
        assert!(e.contains("above it configures one: add an `[adapters.<name>]` table"), "{e}");
    }

    #[test]
    fn a_bad_adapter_table_is_an_error_at_its_line_and_column() {
        let head = "[adapters.a]\n";
        let cases = [
            ("command = []\ndatabase = \"sqlite\"\n", "2:11: key `command`: adapter `a`: `command` is empty"),
            (
                "command = [\"x\"]\ndatabase = \"oracle\"\n",
                "3:12: key `database`: adapter `a`: `database` names no database target `oracle`",
            ),
            (
                "command = [\"x\"]\ndatabase = \"sqlite\"\ntimeout_seconds = 0\n",
                "4:19: key `timeout_seconds`: adapter `a`: `timeout_seconds` is 0: give whole seconds from 1 to 600",
            ),
            (
                "command = [\"x\"]\ndatabase = \"sqlite\"\ntimeout_seconds = 601\n",
                "4:19: key `timeout_seconds`: adapter `a`: `timeout_seconds` is 601",
            ),
            ("command = [\"x\"]\ndatabase = \"sqlite\"\nretries = 2\n", "4:1: unknown field `retries`"),
            (
                "command = [\"x\"]\ndatabase = \"sqlite\"\nenv = { A = 1 }\n",
                "4:13: invalid type: integer `1`, expected a string",
            ),
            ("command = \"x\"\ndatabase = \"sqlite\"\n", "2:11: invalid type: string \"x\", expected a sequence"),
            ("database = \"sqlite\"\n", "missing field `command`"),
        ];
        for (body, wanted) in cases {
            let d = Dir::new("bad-adapter", Some(&format!("{head}{body}")));
            let e = Project::discover(&d.0).err().expect("refused").to_string();
            let file = d.0.join(FILE_NAME).display().to_string();
            assert!(e.starts_with(&file) && e.contains(wanted), "{body}: {e}");
        }
        let d = Dir::new("adapter-named-sqlite", Some("[adapters.sqlite]\ncommand = [\"x\"]\ndatabase = \"sqlite\"\n"));
        let e = Project::discover(&d.0).err().expect("refused").to_string();
        assert!(
            e.contains("adapter `sqlite`: `sqlite` is a database target's name: give the adapter another name"),
            "{e}"
        );
        assert!(e.contains(":1:11: key `adapters`"), "{e}");
    }

    #[test]
    fn all_stands_alone() {
        let at = Origin::Flag("--db");
        let items = |names: &[&str]| names.iter().map(|n| (n.to_string(), at.clone())).collect::<Vec<_>>();
        let all = parse_selection(&items(&["all"]), &at, true, &[]).unwrap();
        assert!(all.all && all.targets.len() == 6);
        let e = parse_selection(&items(&["all", "sqlite"]), &at, true, &[]).unwrap_err();
        assert!(matches!(e.kind, ConfigErrorKind::AllCombined), "{e}");
        assert!(e.to_string().starts_with("--db: `all` cannot be combined"), "{e}");
        assert!(matches!(parse_selection(&[], &at, true, &[]).unwrap_err().kind, ConfigErrorKind::NoTarget));
    }
}
