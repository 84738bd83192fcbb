//! `reapcheck init`: sets reapcheck up in a user's repository. Writes
//! `reapcheck.toml`, a copy of each dialect named by `--from` (to port),
//! `reapcheck/scenarios/` with one example regression and its snapshot
//! (made by the model, so `reapcheck run` passes right after), and the CI
//! workflow `ci/github-actions.yml` of this repository, byte for byte.
//! Nothing is written when any of these files exists, unless `--force`.
//!
//! `init --add <dialect>` ports one more dialect in a project set up
//! before: it copies that dialect's folder next to the others and takes its
//! name out of `builtin_dialects`, editing `reapcheck.toml` in place (every
//! other byte kept), and touches nothing else.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use reapcheck::config::{FILE_NAME, Project};
use reapcheck::dialect::{Source, dialect_names, embedded_files};
use reapcheck::runner;
use reapcheck::scenario::parse_named;
use reapcheck::snapshot;
use reapcheck::target::Target;

use super::EXIT_INVALID;

/// The CI workflow template, as `init` writes it.
pub const WORKFLOW: &str = include_str!("../../../ci/github-actions.yml");

/// Where `init` writes the workflow.
const WORKFLOW_PATH: &str = ".github/workflows/reapcheck.yml";

/// The folder of the user's dialect copies.
const DIALECTS_DIR: &str = "reapcheck/dialects";

/// The folder of the user's scenarios.
const SCENARIOS_DIR: &str = "reapcheck/scenarios";

/// The example regression's name.
const EXAMPLE: &str = "stopped-heartbeat";

/// The example regression (the one README.md walks through).
const EXAMPLE_YAML: &str = "\
description: >
  A job whose heartbeats stopped ten minutes ago is reclaimed by the grace,
  although its one-hour timeout has not run out. An example regression:
  write one file like this for each bug of your queue's reaper.
classes:
  ProcessOrders: { timeout: 3600 }
jobs:
  - { id: a, class: ProcessOrders, status: processing, attempts: 1, claimed: -70m, heartbeat: -10m }
steps:
  - reap
expect:
  steps: [ { reap: 1 } ]
  jobs:
    a: { status: pending, run_at: +4s }
";

/// Arguments of `init`.
#[derive(clap::Args, Debug)]
pub struct InitArgs {
    /// Dialects to copy for porting, comma-separated: postgres, mysql,
    /// sqlite, cockroach, mssql (a target name such as `mariadb` means its
    /// dialect). Without it, reapcheck's own SQL runs, and `run` says so.
    #[arg(long, value_name = "DIALECTS")]
    from: Option<String>,
    /// In a project `init` set up before: copy one more dialect to port
    /// into its dialects folder and take it out of `builtin_dialects` in
    /// reapcheck.toml; nothing else is written.
    #[arg(long, value_name = "DIALECT", conflicts_with_all = ["from", "force"])]
    add: Option<String>,
    /// Overwrite files that exist.
    #[arg(long)]
    force: bool,
    /// The repository to set up (its root, where GitHub reads workflows).
    #[arg(long, value_name = "DIR", default_value = ".")]
    dir: PathBuf,
}

/// The git repository root above `dir` when `dir` itself is not one: the
/// folder holding `.git` nearest above it. `None` when `dir` holds `.git` or
/// no folder above it does.
fn repository_root_above(dir: &std::path::Path) -> Option<std::path::PathBuf> {
    let dir = std::fs::canonicalize(dir).ok()?;
    if dir.join(".git").exists() {
        return None;
    }
    dir.ancestors().skip(1).find(|a| a.join(".git").exists()).map(std::path::Path::to_path_buf)
}

/// The `reapcheck.toml` of a folder above `dir` (not `dir` itself, which
/// the existing-file check covers), if any: the project `run` would use
/// there until an `init` in `dir` split it.
fn project_above(dir: &std::path::Path) -> Option<std::path::PathBuf> {
    let dir = std::fs::canonicalize(dir).ok()?;
    dir.ancestors().skip(1).map(|a| a.join(FILE_NAME)).find(|f| f.is_file())
}

/// Writes the files; exit 2 (writing nothing) when one exists without
/// `--force`, or `--from` names an unknown dialect. With `--add`, ports one
/// more dialect in the project instead (exit 2, writing nothing, for an
/// unknown dialect, one already ported, or no project). Warns when `--dir` is
/// below its repository's root, where GitHub would never read the workflow.
pub fn init(args: InitArgs) -> ExitCode {
    let invalid = |message: String| {
        eprintln!("error: {message}");
        ExitCode::from(EXIT_INVALID)
    };
    let known = dialect_names(&Source::Embedded);
    if let Some(name) = &args.add {
        return match add(&args.dir, name.trim(), &known) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => invalid(e),
        };
    }
    if let Some(outer) = project_above(&args.dir)
        && !args.force
    {
        return invalid(format!(
            "{} already sets up a project above {}: nothing was written; run `reapcheck init --add <dialect>` to \
             port one more dialect in it, or give --force to set up a second project here (which that file would \
             no longer govern below this folder)",
            outer.display(),
            args.dir.display()
        ));
    }
    let mut chosen: Vec<String> = Vec::new();
    for name in args.from.as_deref().unwrap_or_default().split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let dialect = Target::from_name(name).map_or(name, |t| t.dialect());
        if !known.iter().any(|k| k == dialect) {
            return invalid(format!("--from: unknown dialect `{name}`: the dialects are {}", known.join(", ")));
        }
        if !chosen.iter().any(|c| c == dialect) {
            chosen.push(dialect.to_owned());
        }
    }
    let files = match plan(&args.dir, &chosen, &known) {
        Ok(f) => f,
        Err(e) => return invalid(e),
    };
    let existing: Vec<String> =
        files.iter().filter(|(p, _)| p.exists()).map(|(p, _)| p.display().to_string()).collect();
    if !existing.is_empty() && !args.force {
        return invalid(format!(
            "{} already exist{}: nothing was written; give --force to overwrite",
            existing.join(", "),
            if existing.len() == 1 { "s" } else { "" }
        ));
    }
    for (path, bytes) in &files {
        let written = path.parent().map_or(Ok(()), std::fs::create_dir_all).and_then(|()| std::fs::write(path, bytes));
        if let Err(e) = written {
            return invalid(format!("cannot write {}: {e}", path.display()));
        }
        println!("wrote {}", path.display());
    }
    if let Some(root) = repository_root_above(&args.dir) {
        println!(
            "warning: {} is not the root of its git repository ({}): GitHub reads workflows only from the root's \
             .github/workflows/, so move {WORKFLOW_PATH} there (or run `reapcheck init --dir {}` instead)",
            args.dir.display(),
            root.display(),
            root.display()
        );
    }
    println!(
        "next: `reapcheck run` (the builtin corpus and {SCENARIOS_DIR}/ on the model and sqlite); port your SQL in \
         {DIALECTS_DIR}/ and add one scenario per regression in {SCENARIOS_DIR}/; write REAPCHECK_GIT and \
         REAPCHECK_REF into the `env:` of {WORKFLOW_PATH} (repository variables work too, but a pull request \
         from a fork gets none)"
    );
    ExitCode::SUCCESS
}

/// Every file `init` writes below `dir`, with its contents.
fn plan(dir: &Path, chosen: &[String], known: &[String]) -> Result<Vec<(PathBuf, Vec<u8>)>, String> {
    let mut files = vec![(dir.join(FILE_NAME), config(chosen, known).into_bytes())];
    for name in chosen {
        for (file, bytes) in embedded_files(name) {
            files.push((dir.join(DIALECTS_DIR).join(name).join(file), bytes.to_vec()));
        }
    }
    let scenario = dir.join(SCENARIOS_DIR).join(format!("{EXAMPLE}.yaml"));
    let loaded = parse_named(EXAMPLE, &scenario, EXAMPLE_YAML)
        .map_err(|e| format!("the example scenario is invalid (a bug in reapcheck): {}", e[0]))?;
    let runtime = tokio::runtime::Builder::new_current_thread().build().map_err(|e| e.to_string())?;
    let model = runtime.block_on(runner::check_model(&loaded));
    let snap = snapshot::path(&scenario, None);
    let input = format!("{SCENARIOS_DIR}/{EXAMPLE}.yaml");
    // Rendered into memory, so that nothing is written before every file
    // is known to be free.
    let text = snapshot::render(snapshot::source(dir), &input, &model.yaml);
    files.push((scenario, EXAMPLE_YAML.as_bytes().to_vec()));
    files.push((snap, text.into_bytes()));
    files.push((dir.join(WORKFLOW_PATH), WORKFLOW.as_bytes().to_vec()));
    Ok(files)
}

/// The `reapcheck.toml` written for the dialects `chosen`.
fn config(chosen: &[String], known: &[String]) -> String {
    let mut text = String::from(
        "# reapcheck's project file, written by `reapcheck init`. `reapcheck run` finds\n\
         # it from this folder or any below; paths are relative to this folder. A flag\n\
         # or environment variable overrides each key (`reapcheck run --help`).\n\n",
    );
    if chosen.is_empty() {
        text.push_str(
            "# No `dialects` folder: the SQL built into reapcheck runs (the reference),\n\
             # and `reapcheck run` says so. `reapcheck init --add postgres` copies\n\
             # a dialect to port.\n",
        );
    } else {
        let others: Vec<String> = known.iter().filter(|k| !chosen.contains(k)).map(|k| format!("{k:?}")).collect();
        text.push_str(&format!(
            "# Your port of the queue's SQL, one sub-folder per dialect.\n\
             dialects = \"{DIALECTS_DIR}\"\n\
             # Dialects not in that folder that run reapcheck's own SQL (the reference);\n\
             # remove one to make its targets an error until you port it.\n\
             builtin_dialects = [{}]\n",
            others.join(", ")
        ));
    }
    text.push_str(&format!(
        "# Scenario sets: `builtin` is the corpus inside reapcheck; then your own.\n\
         scenarios = [\"builtin\", \"{SCENARIOS_DIR}\"]\n\
         # Targets of `reapcheck run` without --db; each must be reachable.\n\
         targets = [\"sqlite\"]\n\
         # Targets that must run (REAPCHECK_REQUIRE overrides).\n\
         required = []\n"
    ));
    text
}

/// `init --add`: copies the embedded dialect `name` (a target name means
/// its dialect) into the dialects folder of the project around `dir` and
/// edits that project's reapcheck.toml so the copy is the SQL that runs.
/// Every check comes before the first write; each write is atomic, and the
/// copy is removed again when reapcheck.toml cannot be written.
fn add(dir: &Path, name: &str, known: &[String]) -> Result<(), String> {
    let dialect = Target::from_name(name).map_or(name, |t| t.dialect());
    if !known.iter().any(|k| k == dialect) {
        return Err(format!("--add: unknown dialect `{name}`: the dialects are {}", known.join(", ")));
    }
    let start = std::path::absolute(dir).unwrap_or_else(|_| dir.to_owned());
    let Some(config_path) = start.ancestors().map(|d| d.join(FILE_NAME)).find(|p| p.is_file()) else {
        return Err(format!(
            "--add: no {FILE_NAME} in {} or any folder above it, so there is no project to add `{dialect}` to: \
             run `reapcheck init --from {dialect}` in your repository's root to set one up with that dialect",
            start.display()
        ));
    };
    let root = config_path.parent().map(Path::to_owned).unwrap_or_default();
    // Paths as the user gave them when the project is `dir` itself.
    let shown = |rel: &Path| if root == start { dir.join(rel) } else { root.join(rel) };
    Project::read(&config_path).map_err(|e| format!("--add: {e}: fix {FILE_NAME} first; nothing was written"))?;
    let text = std::fs::read_to_string(&config_path)
        .map_err(|e| format!("--add: cannot read {}: {e}", config_path.display()))?;
    let edit = edit_config(&text, dialect, known)?;
    let folder = root.join(&edit.folder);
    let copy = folder.join(dialect);
    let copy_shown = shown(&edit.folder.join(dialect));
    if copy.exists() {
        return Err(format!(
            "--add: dialect `{dialect}` is already ported: {} exists, and nothing was written: edit the SQL there, or \
             to start again from reapcheck's own SQL, move that folder away and run `reapcheck init --add {dialect}` \
             again",
            copy_shown.display()
        ));
    }
    if folder.exists() && !folder.is_dir() {
        return Err(format!(
            "--add: the dialects folder {} of {FILE_NAME} is not a folder; nothing was written: point `dialects` \
             at a folder",
            shown(&edit.folder).display()
        ));
    }
    let workflow = workflow_note(&root, dialect);
    // Checks done: the writes.
    let files = embedded_files(dialect);
    copy_dialect(&copy, &files)
        .map_err(|e| format!("cannot write {}: {e}; nothing was written", copy_shown.display()))?;
    if let Some(new) = &edit.text
        && let Err(e) = write_atomic(&config_path, new.as_bytes())
    {
        let _ = std::fs::remove_dir_all(&copy);
        return Err(format!(
            "cannot write {}: {e}; the copy {} was removed again, so nothing was changed",
            config_path.display(),
            copy_shown.display()
        ));
    }
    if name != dialect {
        println!("`{name}` runs the `{dialect}` dialect: added {dialect}");
    }
    for (file, _) in &files {
        println!("wrote {}", copy_shown.join(file).display());
    }
    let config_shown = shown(Path::new(FILE_NAME));
    if edit.text.is_some() {
        println!("edited {}: {}", config_shown.display(), edit.changes.join("; "));
    } else {
        println!("{} unchanged: `{dialect}` was not in `builtin_dialects`", config_shown.display());
    }
    println!("{workflow}");
    println!(
        "next: port your queue's SQL in {}/, then `reapcheck check` and `reapcheck run --db {}`",
        copy_shown.display(),
        // The target the user named (`mariadb` runs the `mysql` dialect).
        Target::from_name(name).or_else(|| Target::from_name(dialect)).map_or(dialect, |t| t.name())
    );
    Ok(())
}

/// What `init --add` changes in reapcheck.toml.
struct ConfigEdit {
    /// The new text, `None` when nothing changes.
    text: Option<String>,
    /// The dialects folder, relative to the project root (as written).
    folder: PathBuf,
    /// Each change, as printed.
    changes: Vec<String>,
}

/// reapcheck.toml's `text` with `dialect` ported: its name taken out of
/// `builtin_dialects`. Without a `dialects` folder (every dialect ran
/// reapcheck's own SQL), also `dialects` set to [`DIALECTS_DIR`] and every
/// other dialect listed in `builtin_dialects`, so that they keep running
/// as before. Comments, layout and every other key stay byte for byte.
fn edit_config(text: &str, dialect: &str, known: &[String]) -> Result<ConfigEdit, String> {
    use toml_edit::{Array, DocumentMut, Item, Value};
    let mut doc: DocumentMut =
        text.parse().map_err(|e| format!("--add: {FILE_NAME} cannot be edited: {e}; nothing was written"))?;
    let mut changes = Vec::new();
    let folder = match doc.get("dialects").and_then(Item::as_str) {
        Some(f) if f != reapcheck::corpus::BUILTIN => PathBuf::from(f),
        _ => {
            match doc.get_mut("dialects").and_then(Item::as_value_mut) {
                Some(v) => {
                    let decor = v.decor().clone();
                    *v = Value::from(DIALECTS_DIR);
                    *v.decor_mut() = decor;
                }
                None => {
                    doc.insert("dialects", toml_edit::value(DIALECTS_DIR));
                    if let Some(mut key) = doc.key_mut("dialects") {
                        key.leaf_decor_mut()
                            .set_prefix("# Your port of the queue's SQL, one sub-folder per dialect.\n");
                    }
                }
            }
            changes.push(format!("set `dialects = \"{DIALECTS_DIR}\"`"));
            if doc.get("builtin_dialects").is_none() {
                doc.insert("builtin_dialects", toml_edit::value(Array::new()));
                if let Some(mut key) = doc.key_mut("builtin_dialects") {
                    key.leaf_decor_mut().set_prefix(
                        "# Dialects not in that folder that run reapcheck's own SQL (the reference);\n\
                         # remove one to make its targets an error until you port it.\n",
                    );
                }
            }
            let list = doc.get_mut("builtin_dialects").and_then(Item::as_array_mut).ok_or_else(|| {
                format!("--add: `builtin_dialects` of {FILE_NAME} is not a list of names; nothing was written")
            })?;
            let mut listed = Vec::new();
            for other in known.iter().filter(|k| *k != dialect) {
                if !list.iter().any(|v| v.as_str() == Some(other)) {
                    list.push(other.as_str());
                    listed.push(format!("`{other}`"));
                }
            }
            if !listed.is_empty() {
                changes.push(format!(
                    "listed {} in `builtin_dialects` (they ran reapcheck's SQL and still do)",
                    listed.join(", ")
                ));
            }
            PathBuf::from(DIALECTS_DIR)
        }
    };
    if let Some(list) = doc.get_mut("builtin_dialects").and_then(Item::as_array_mut)
        && list.iter().any(|v| v.as_str() == Some(dialect))
    {
        // The first element's spacing (`["a", ...`) stays the list's own
        // when that element is the one removed.
        let first = list.get(0).map(|v| v.decor().prefix().cloned());
        list.retain(|v| v.as_str() != Some(dialect));
        if let (Some(prefix), Some(v)) = (first, list.get_mut(0)) {
            match prefix {
                Some(p) => v.decor_mut().set_prefix(p),
                None => v.decor_mut().set_prefix(""),
            }
        }
        changes.push(format!("removed `{dialect}` from `builtin_dialects`"));
    }
    let text = (!changes.is_empty()).then(|| doc.to_string());
    Ok(ConfigEdit { text, folder, changes })
}

/// What `init --add` says of the workflow, which it never changes: its
/// legs are per database, and each runs whatever SQL reapcheck.toml names,
/// so a port needs no change to a leg that exists. The CockroachDB and SQL
/// Server legs are left out of the template on purpose (bigger, slower
/// servers): the user adds one as its opening comment says.
fn workflow_note(root: &Path, dialect: &str) -> String {
    let targets: Vec<&str> = Target::ALL.iter().filter(|t| t.dialect() == dialect).map(|t| t.name()).collect();
    let Ok(text) = std::fs::read_to_string(root.join(WORKFLOW_PATH)) else {
        return format!("{WORKFLOW_PATH} not found, so not changed: CI runs your port only in a leg per database");
    };
    let (with, without): (Vec<&str>, Vec<&str>) =
        targets.iter().partition(|t| text.lines().any(|l| l.trim_end() == format!("  {t}:")));
    if without.is_empty() {
        format!(
            "{WORKFLOW_PATH} unchanged: its {} leg{} run{} the SQL reapcheck.toml names, now your port",
            with.join(" and "),
            if with.len() == 1 { "" } else { "s" },
            if with.len() == 1 { "s" } else { "" }
        )
    } else {
        format!(
            "note: {WORKFLOW_PATH} unchanged, and it has no {} leg, so CI does not run your port there: add one as \
             the comment at the top of that file says",
            without.join(" or ")
        )
    }
}

/// Writes `files` into the new folder `copy`: staged in a folder beside
/// the dialects folder (a folder left in it by a killed run would be read
/// as a dialect), then renamed into place, so that `copy` is whole or
/// absent.
fn copy_dialect(copy: &Path, files: &[(String, &[u8])]) -> std::io::Result<()> {
    let folder = copy.parent().unwrap_or(copy);
    std::fs::create_dir_all(folder)?;
    let beside = folder.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(folder);
    let name = copy.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let stage = beside.join(format!(".reapcheck-add-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&stage);
    let staged = (|| {
        std::fs::create_dir_all(&stage)?;
        for (file, bytes) in files {
            write_synced(&stage.join(file), bytes)?;
        }
        std::fs::rename(&stage, copy)
    })();
    if staged.is_err() {
        let _ = std::fs::remove_dir_all(&stage);
    }
    staged
}

/// Replaces `path` by `bytes` atomically: a file beside it, then renamed
/// over it, keeping its permissions.
fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.reapcheck-{}", std::process::id()));
    let written = write_synced(&tmp, bytes)
        .and_then(|()| match std::fs::metadata(path) {
            Ok(meta) => std::fs::set_permissions(&tmp, meta.permissions()),
            Err(_) => Ok(()),
        })
        .and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Writes `bytes` to a new file at `path` and flushes it to the disk.
fn write_synced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut file = std::fs::File::create(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_folder_below_a_repository_root_is_told_where_workflows_are_read() {
        let root = std::env::temp_dir().join(format!("reapcheck-init-root-{}", std::process::id()));
        let sub = root.join("sub");
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(&sub).unwrap();
        let canonical = std::fs::canonicalize(&root).unwrap();
        assert_eq!(super::repository_root_above(&sub), Some(canonical));
        assert_eq!(super::repository_root_above(&root), None);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
