//! Loading what a command needs, reporting every problem at once. Settings
//! resolve through [`reapcheck::config`]: flag, then environment, then
//! `reapcheck.toml`, then default.

use std::path::PathBuf;

use reapcheck::config::{Origin, Project, ScenarioSet, Setting};
use reapcheck::corpus;
use reapcheck::dialect::{Dialect, Source, dialect_names};
use reapcheck::input_file::shown_path;
use reapcheck::scenario::{LoadedScenario, load_dir};

use super::Inputs;

impl Inputs {
    /// The project around the current folder.
    pub fn project(&self) -> Result<Project, Vec<String>> {
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        Project::discover(&cwd).map_err(|e| vec![e.to_string()])
    }

    /// The scenario sets, as shown in messages (`builtin, reapcheck/scenarios`).
    pub fn scenarios_shown(&self) -> String {
        match self.project().and_then(|p| p.scenarios(self.scenarios.as_deref()).map_err(|e| vec![e.to_string()])) {
            Ok(sets) => sets.value.iter().map(shown).collect::<Vec<_>>().join(", "),
            Err(_) => self.scenarios.clone().unwrap_or_else(|| corpus::BUILTIN.to_owned()),
        }
    }

    /// The scenarios of every set whose names contain a filter (`exact`:
    /// equal one). Every file of every set is checked; a folder that does
    /// not exist and a name found in two sets are errors.
    pub fn scenarios(&self, filters: &[String], exact: bool) -> Result<Vec<LoadedScenario>, Vec<String>> {
        let project = self.project()?;
        let sets = project.scenarios(self.scenarios.as_deref()).map_err(|e| vec![e.to_string()])?;
        let mut all: Vec<LoadedScenario> = Vec::new();
        let mut errors = Vec::new();
        for set in &sets.value {
            let loaded = match set {
                ScenarioSet::Builtin => corpus::load(),
                ScenarioSet::Folder(dir) if !dir.is_dir() => {
                    errors.push(format!(
                        "{}: the scenarios folder {} does not exist: create it, run from your project \
                         (the folder of reapcheck.toml or below it), or give `--scenarios builtin` for the corpus \
                         inside reapcheck",
                        sets.origin,
                        dir.display()
                    ));
                    continue;
                }
                ScenarioSet::Folder(dir) => load_dir(dir, &[]),
            };
            match loaded {
                Ok(list) => {
                    for s in list {
                        if let Some(first) = all.iter().find(|o| o.name == s.name) {
                            errors.push(format!(
                                "{}: scenario `{}` is also {}: rename one of them",
                                s.path.display(),
                                s.name,
                                first.path.display()
                            ));
                        } else {
                            all.push(s);
                        }
                    }
                }
                Err(e) => errors.extend(e.iter().map(ToString::to_string)),
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(all
            .into_iter()
            .filter(|s| {
                filters.is_empty()
                    || filters.iter().any(|f| if exact { s.name == *f } else { s.name.contains(f.as_str()) })
            })
            .collect())
    }

    /// The user's dialects folder, checked to exist and to hold at least one
    /// dialect; `None` for reapcheck's own SQL.
    fn folder(&self, project: &Project) -> Result<Setting<Option<PathBuf>>, Vec<String>> {
        let setting = project.dialects(self.dialects.as_deref());
        if let Some(dir) = &setting.value {
            let hint = "give the folder holding one sub-folder of SQL per dialect (postgres/, mysql/, ...; \
                        `reapcheck init --from postgres` makes one), or `--dialects builtin` for the SQL inside reapcheck";
            if !dir.is_dir() {
                return Err(vec![format!(
                    "{}: the dialects folder {} does not exist: {hint}",
                    setting.origin,
                    dir.display()
                )]);
            }
            if dialect_names(&Source::Folder(dir.clone())).is_empty() {
                return Err(vec![format!(
                    "{}: the dialects folder {} holds no dialect sub-folder: {hint}",
                    setting.origin,
                    dir.display()
                )]);
            }
        }
        Ok(setting)
    }

    /// Where dialect `name`'s SQL is read from: the user's folder when it
    /// has a sub-folder of that name, else reapcheck's own copy when no
    /// folder is set or `builtin_dialects` lists it.
    pub fn dialect_source(&self, name: &str) -> Result<Source, String> {
        let project = self.project().map_err(|e| e.join("\n"))?;
        let setting = self.folder(&project).map_err(|e| e.join("\n"))?;
        source_for(&project, &setting, name)
    }

    /// The dialect names `check` validates: every dialect of the folder
    /// and those listed in `builtin_dialects`, or every builtin one.
    pub fn dialect_names(&self) -> Result<Vec<String>, Vec<String>> {
        let project = self.project()?;
        let setting = self.folder(&project)?;
        let mut names = match &setting.value {
            Some(dir) => dialect_names(&Source::Folder(dir.clone())),
            None => dialect_names(&Source::Embedded),
        };
        if setting.value.is_some() {
            names.extend(project.builtin_dialects().into_iter().map(|s| s.value));
        }
        names.sort();
        names.dedup();
        Ok(names)
    }

    /// One line saying which SQL each dialect runs, so that a run never
    /// silently uses SQL other than the files the user sees.
    pub fn describe_sql(&self, names: &[&str]) -> String {
        let Ok(project) = self.project() else { return String::new() };
        let Ok(setting) = self.folder(&project) else { return String::new() };
        let parts: Vec<String> = names
            .iter()
            .map(|name| match source_for(&project, &setting, name) {
                Ok(Source::Folder(dir)) => format!("{name} from {}", shown_path(&dir.join(name))),
                Ok(Source::Embedded) => format!("{name} builtin"),
                Err(_) => format!("{name} missing"),
            })
            .collect();
        let config = project
            .file
            .as_ref()
            .map_or_else(|| "no reapcheck.toml".to_owned(), |f| format!("config {}", shown_path(f)));
        if parts.is_empty() {
            // Only adapter targets: no SQL of reapcheck's runs.
            return format!("{config}; scenarios: {}; no SQL target (adapters only)", self.scenarios_shown());
        }
        let mut line = format!("{config}; scenarios: {}; SQL: {}", self.scenarios_shown(), parts.join(", "));
        if setting.value.is_none() {
            line.push_str(&format!(
                " (builtin = the SQL inside reapcheck {}; give --dialects DIR or `dialects` in reapcheck.toml to run yours)",
                env!("CARGO_PKG_VERSION")
            ));
        }
        line
    }

    /// Dialects by name, all checked.
    pub fn dialects(&self, names: &[&str]) -> Result<Vec<Dialect>, Vec<String>> {
        let project = self.project()?;
        let setting = self.folder(&project)?;
        let mut loaded = Vec::new();
        let mut errors = Vec::new();
        for name in names {
            let source = match source_for(&project, &setting, name) {
                Ok(s) => s,
                Err(e) => {
                    errors.push(e);
                    continue;
                }
            };
            match Dialect::load(&source, name) {
                Ok(d) => loaded.push(d),
                Err(e) => errors.extend(e.iter().map(ToString::to_string)),
            }
        }
        if errors.is_empty() { Ok(loaded) } else { Err(errors) }
    }

    /// The profile (`dialect.toml`) of each of `names` that has a readable
    /// one, by name, the default profile where the file is absent; the
    /// dialect's SQL is not read. A profile that does not read or parse is
    /// left out: the run that selects its dialect reports it.
    pub fn profiles(&self, names: &[String]) -> Vec<(String, reapcheck::dialect::Profile)> {
        let Ok(project) = self.project() else { return Vec::new() };
        let Ok(setting) = self.folder(&project) else { return Vec::new() };
        let profile = |name: &String| {
            let source = source_for(&project, &setting, name).ok()?;
            let text = reapcheck::dialect::read_extra(&source, name, reapcheck::dialect::profile::FILE_NAME).ok()?;
            let profile = match text {
                Some(text) => reapcheck::dialect::Profile::parse(&text).ok()?,
                None => reapcheck::dialect::Profile::default(),
            };
            Some((name.clone(), profile))
        };
        names.iter().filter_map(profile).collect()
    }
}

fn source_for(project: &Project, setting: &Setting<Option<PathBuf>>, name: &str) -> Result<Source, String> {
    let Some(dir) = &setting.value else { return Ok(Source::Embedded) };
    if dir.join(name).is_dir() {
        return Ok(Source::Folder(dir.clone()));
    }
    if project.builtin_dialects().iter().any(|b| b.value == name) {
        return Ok(Source::Embedded);
    }
    let listed = match &setting.origin {
        Origin::File { .. } => " or list it in `builtin_dialects` of reapcheck.toml to run reapcheck's own SQL for it",
        _ => "",
    };
    // A folder named after a target that runs another dialect's SQL
    // (mariadb runs mysql's, cockroach postgres's) is never read.
    let misnamed = reapcheck::target::Target::ALL
        .iter()
        .find(|t| t.dialect() == name && t.name() != name && dir.join(t.name()).is_dir())
        .map(|t| format!("; {}/ is not read: the {t} target runs the `{name}` dialect, so rename it {name}/", t.name()))
        .unwrap_or_default();
    let listed = format!("{listed}{misnamed}");
    // A folder named by reapcheck.toml: the project exists, and `init
    // --from` would refuse in it; `init --add` copies into that folder.
    let copy = match &setting.origin {
        Origin::File { .. } => "add",
        _ => "from",
    };
    Err(format!(
        "{}: dialect `{name}` is not in {}: copy it there (`reapcheck init --{copy} {name}` makes a copy to port){listed}",
        setting.origin,
        dir.display()
    ))
}

fn shown(set: &ScenarioSet) -> String {
    match set {
        ScenarioSet::Builtin => corpus::BUILTIN.to_owned(),
        ScenarioSet::Folder(dir) => shown_path(dir),
    }
}

/// `: did you mean \`grace/recent-beat\`?` for the known scenario name
/// closest to a filter that matched nothing (at most a fifth of its
/// characters, and at least two, edited); empty when none is that close.
pub fn did_you_mean(filters: &[String], known: &[LoadedScenario]) -> String {
    let mut best: Option<(usize, &str)> = None;
    for filter in filters {
        let filter = filter.trim_end_matches(".yaml");
        for s in known {
            let distance = strsim::levenshtein(filter, &s.name);
            if distance <= (filter.chars().count() / 5).max(2) && best.is_none_or(|(d, _)| distance < d) {
                best = Some((distance, &s.name));
            }
        }
    }
    best.map_or(String::new(), |(_, name)| format!("; did you mean `{name}`?"))
}

/// Prints each error on its own line to standard error.
pub fn report<E: std::fmt::Display>(errors: &[E]) {
    for e in errors {
        eprintln!("error: {e}");
    }
}
