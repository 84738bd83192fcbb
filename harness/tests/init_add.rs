//! `reapcheck init --add <dialect>`: a second dialect ported in a project
//! that `init` set up, with the user's edits to every other file kept.

mod common;
use common::{Scratch, root, stderr, stdout};

use std::collections::BTreeMap;
use std::path::Path;

/// Every file below `scratch`, by relative path, with its bytes.
fn tree(scratch: &Scratch) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    files(&scratch.0, &scratch.0, &mut out);
    out
}

/// A scratch repository (`.git` present) for test `name`.
fn repository(name: &str) -> Scratch {
    let scratch = Scratch::new("init-add", name);
    std::fs::create_dir_all(scratch.path(".git")).expect("a repository");
    scratch
}

/// Runs the binary in `dir` with no target, setting or CI configured.
fn reapcheck_in(dir: &Path, args: &[&str]) -> std::process::Output {
    common::clean_run(dir, args)
}

fn files(base: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
    for entry in std::fs::read_dir(dir).expect("readable").flatten() {
        let path = entry.path();
        if path.is_dir() {
            files(base, &path, out);
        } else {
            let rel = path.strip_prefix(base).unwrap().to_string_lossy().replace('\\', "/");
            out.insert(rel, std::fs::read(&path).unwrap());
        }
    }
}

/// The dialect folder reapcheck ships, by file name.
fn shipped(dialect: &str) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    files(&root().join("dialects").join(dialect), &root().join("dialects").join(dialect), &mut out);
    out
}

const BUILTIN_LINE: &str = "builtin_dialects = [\"cockroach\", \"mssql\", \"mysql\", \"sqlite\"]\n";

/// `init --from postgres`, then the user's own edits: a comment in
/// reapcheck.toml and a line in the example scenario.
fn initialised(name: &str) -> Scratch {
    let scratch = repository(name);
    let o = reapcheck_in(&scratch.0, &["init", "--from", "postgres"]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let config = scratch.read("reapcheck.toml");
    assert!(config.contains(BUILTIN_LINE), "{config}");
    let config = config.replace(BUILTIN_LINE, &format!("# mine: keep mysql on the reference for now\n{BUILTIN_LINE}"));
    std::fs::write(scratch.path("reapcheck.toml"), format!("# our queue's reapcheck setup\n{config}")).unwrap();
    let scenario = "reapcheck/scenarios/stopped-heartbeat.yaml";
    let text = scratch.read(scenario);
    std::fs::write(scratch.path(scenario), format!("# seen in production, ticket 42\n{text}")).unwrap();
    scratch
}

#[test]
fn add_copies_the_shipped_dialect_and_edits_only_builtin_dialects_keeping_every_other_byte() {
    let scratch = initialised("second");
    let before = tree(&scratch);
    let o = reapcheck_in(&scratch.0, &["init", "--add", "mysql"]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}{}", stderr(&o));

    // The copy is the shipped folder, byte for byte, its declarations included.
    let after = tree(&scratch);
    let copied: BTreeMap<String, Vec<u8>> = after
        .iter()
        .filter_map(|(p, b)| p.strip_prefix("reapcheck/dialects/mysql/").map(|f| (f.to_owned(), b.clone())))
        .collect();
    let shipped = shipped("mysql");
    assert!(shipped.contains_key("equivalent-mutants.yaml"), "{:?}", shipped.keys());
    assert_eq!(copied, shipped, "the copy equals dialects/mysql/");
    for file in shipped.keys() {
        assert!(out.contains(&format!("wrote ./reapcheck/dialects/mysql/{file}\n")), "{out}");
    }

    // reapcheck.toml: `mysql` out of builtin_dialects, every comment kept.
    let expected = String::from_utf8(before["reapcheck.toml"].clone())
        .unwrap()
        .replace(BUILTIN_LINE, "builtin_dialects = [\"cockroach\", \"mssql\", \"sqlite\"]\n");
    assert_eq!(scratch.read("reapcheck.toml"), expected);
    assert!(out.contains("edited ./reapcheck.toml: removed `mysql` from `builtin_dialects`\n"), "{out}");

    // Nothing else changed: the scenario, its snapshot, the workflow (its
    // mysql and mariadb legs exist already) and the postgres port.
    let mut changed: Vec<&String> = after.keys().filter(|p| before.get(*p) != after.get(*p)).collect();
    changed.retain(|p| !p.starts_with("reapcheck/dialects/mysql/"));
    assert_eq!(changed, vec!["reapcheck.toml"], "only reapcheck.toml and the copy changed");
    assert!(before.keys().all(|p| after.contains_key(p)), "nothing was removed");
    assert!(scratch.read("reapcheck/scenarios/stopped-heartbeat.yaml").starts_with("# seen in production"));
    assert_eq!(
        scratch.read(".github/workflows/reapcheck.yml"),
        std::fs::read_to_string(root().join("ci/github-actions.yml")).unwrap()
    );
    assert!(out.contains(".github/workflows/reapcheck.yml unchanged: its mariadb and mysql legs run"), "{out}");

    // The project is valid, and runs on sqlite with no server.
    let o = reapcheck_in(&scratch.0, &["check"]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("5 dialects (cockroach, mssql, mysql, postgres, sqlite) are valid"), "{}", stdout(&o));
    let o = reapcheck_in(&scratch.0, &["run", "--db", "sqlite"]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("sqlite: ") && stdout(&o).contains(" passed, 0 failed, 0 skipped\n"), "{}", stdout(&o));
}

#[test]
fn add_refuses_a_dialect_already_ported_and_an_unknown_one_writing_nothing() {
    let scratch = initialised("refuse");
    let o = reapcheck_in(&scratch.0, &["init", "--add", "mysql"]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    // The user's port begins.
    let reaper = "reapcheck/dialects/mysql/reaper.sql";
    std::fs::write(scratch.path(reaper), "-- ours\n").unwrap();
    let before = tree(&scratch);

    for name in ["mysql", "mariadb"] {
        let o = reapcheck_in(&scratch.0, &["init", "--add", name]);
        assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
        let err = stderr(&o);
        assert!(
            err.contains("error: --add: dialect `mysql` is already ported: ./reapcheck/dialects/mysql exists")
                && err.contains("nothing was written")
                && err.contains("move that folder away and run `reapcheck init --add mysql` again"),
            "{err}"
        );
        assert_eq!(tree(&scratch), before, "nothing was written");
    }

    let o = reapcheck_in(&scratch.0, &["init", "--add", "oracle"]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(
        stderr(&o).contains(
            "error: --add: unknown dialect `oracle`: the dialects are cockroach, mssql, mysql, postgres, sqlite"
        ),
        "{}",
        stderr(&o)
    );
    assert_eq!(tree(&scratch), before, "nothing was written");
    assert_eq!(scratch.read(reaper), "-- ours\n");
}

#[test]
fn add_outside_an_initialised_project_points_at_init_from_and_writes_nothing() {
    let scratch = repository("outside");
    let o = reapcheck_in(&scratch.0, &["init", "--add", "sqlite"]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    let err = stderr(&o);
    assert!(
        err.contains("error: --add: no reapcheck.toml in ")
            && err.contains("run `reapcheck init --from sqlite` in your repository's root"),
        "{err}"
    );
    assert_eq!(tree(&scratch), BTreeMap::new(), "nothing was written");
}

#[test]
fn the_unported_dialect_error_names_init_add_and_following_it_makes_run_pass() {
    let scratch = initialised("advice");
    // sqlite taken out of builtin_dialects: an error until it is ported.
    let config = scratch
        .read("reapcheck.toml")
        .replace(BUILTIN_LINE, "builtin_dialects = [\"cockroach\", \"mssql\", \"mysql\"]\n");
    std::fs::write(scratch.path("reapcheck.toml"), &config).unwrap();
    let o = reapcheck_in(&scratch.0.join("reapcheck"), &["run"]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("dialect `sqlite` is not in ")
            && stderr(&o).contains("(`reapcheck init --add sqlite` makes a copy to port)"),
        "{}",
        stderr(&o)
    );
    // The advice, from the same subfolder, works and leaves the file as is
    // (sqlite is no longer listed).
    let o = reapcheck_in(&scratch.0.join("reapcheck"), &["init", "--add", "sqlite"]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("reapcheck.toml unchanged: `sqlite` was not in `builtin_dialects`"), "{}", stdout(&o));
    assert_eq!(scratch.read("reapcheck.toml"), config);
    assert_eq!(shipped("sqlite").len(), std::fs::read_dir(scratch.path("reapcheck/dialects/sqlite")).unwrap().count());
    let o = reapcheck_in(&scratch.0.join("reapcheck"), &["run"]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("SQL: sqlite from dialects/sqlite"), "{}", stdout(&o));
}

#[test]
fn add_after_an_init_without_from_keeps_the_other_dialects_on_reapchecks_sql() {
    let scratch = repository("bare");
    let o = reapcheck_in(&scratch.0, &["init"]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let before = scratch.read("reapcheck.toml");
    assert!(!before.contains("\ndialects ="), "{before}");
    let o = reapcheck_in(&scratch.0, &["init", "--add", "mysql"]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let after = scratch.read("reapcheck.toml");
    assert_eq!(
        after.strip_prefix(before.as_str()),
        Some(
            "# Your port of the queue's SQL, one sub-folder per dialect.\n\
             dialects = \"reapcheck/dialects\"\n\
             # Dialects not in that folder that run reapcheck's own SQL (the reference);\n\
             # remove one to make its targets an error until you port it.\n\
             builtin_dialects = [\"cockroach\", \"mssql\", \"postgres\", \"sqlite\"]\n"
        ),
        "{after}"
    );
    let o = reapcheck_in(&scratch.0, &["run", "--db", "sqlite"]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("SQL: sqlite builtin"), "{}", stdout(&o));
    let o = reapcheck_in(&scratch.0, &["check"]);
    assert!(stdout(&o).contains("5 dialects (cockroach, mssql, mysql, postgres, sqlite) are valid"), "{}", stdout(&o));
}

#[test]
fn add_of_a_database_without_a_leg_leaves_the_workflow_and_says_how_to_add_one() {
    let scratch = initialised("leg");
    let workflow = scratch.read(".github/workflows/reapcheck.yml");
    let o = reapcheck_in(&scratch.0, &["init", "--add", "cockroach"]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains(
            "note: .github/workflows/reapcheck.yml unchanged, and it has no cockroach leg, so CI does not run your \
             port there: add one as the comment at the top of that file says"
        ),
        "{}",
        stdout(&o)
    );
    assert_eq!(scratch.read(".github/workflows/reapcheck.yml"), workflow);
    assert!(scratch.read("reapcheck.toml").contains("builtin_dialects = [\"mssql\", \"mysql\", \"sqlite\"]\n"));
}

#[test]
fn add_by_a_target_name_suggests_running_that_target() {
    // `mariadb` runs the `mysql` dialect: the next step names the target
    // the user has, not `--db mysql`, which needs an Oracle MySQL server.
    let scratch = initialised("by-target");
    let o = reapcheck_in(&scratch.0, &["init", "--add", "mariadb"]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}{}", stderr(&o));
    assert!(out.contains("`reapcheck check` and `reapcheck run --db mariadb`"), "{out}");
}

#[test]
fn init_in_a_folder_of_a_project_refuses_to_split_it_unless_forced() {
    // Run from a subfolder, a plain init would write a second project that
    // the first reapcheck.toml no longer governs below it.
    let scratch = initialised("nested");
    let before = tree(&scratch);
    let sub = scratch.path("reapcheck/dialects/postgres");
    let o = reapcheck_in(&sub, &["init", "--from", "postgres"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{}{err}", stdout(&o));
    assert!(err.contains("reapcheck.toml already sets up a project above") && err.contains("init --add"), "{err}");
    assert_eq!(tree(&scratch), before, "nothing was written");
    let o = reapcheck_in(&sub, &["init", "--from", "postgres", "--force"]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert!(sub.join("reapcheck.toml").is_file());
}
