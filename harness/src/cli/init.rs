//! `reapcheck init`: sets reapcheck up in a user's repository. Writes
//! `reapcheck.toml`, a copy of each dialect named by `--from` (to port),
//! `reapcheck/scenarios/` with one example regression and its snapshot
//! (made by the model, so `reapcheck run` passes right after), and the CI
//! workflow `ci/github-actions.yml` of this repository, byte for byte.
//! Nothing is written when any of these files exists, unless `--force`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use reapcheck::config::FILE_NAME;
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

/// Writes the files; exit 2 (writing nothing) when one exists without
/// `--force`, or `--from` names an unknown dialect. Warns when `--dir` is
/// below its repository's root, where GitHub would never read the workflow.
pub fn init(args: InitArgs) -> ExitCode {
    let invalid = |message: String| {
        eprintln!("error: {message}");
        ExitCode::from(EXIT_INVALID)
    };
    let known = dialect_names(&Source::Embedded);
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
    let text = snapshot::render(&input, &model.yaml);
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
             # and `reapcheck run` says so. `reapcheck init --from postgres --force`\n\
             # copies a dialect to port.\n",
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
