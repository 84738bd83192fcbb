//! The cockroach dialect on PostgreSQL. CockroachDB cannot run on this
//! machine; its statements are PostgreSQL's but for three things, which
//! this test rewrites in a copy of `dialects/cockroach/` staged as a
//! `postgres/` folder:
//!
//! - `STRING`, which CockroachDB compares by its bytes, becomes
//!   `text COLLATE "C"`;
//! - the index declared inside `CREATE TABLE` becomes a `CREATE INDEX`;
//! - the namespace (a database per run, entered with `SET database`)
//!   becomes PostgreSQL's schema (the three namespace scripts of
//!   `dialects/postgres/schema.sql`).
//!
//! Every other statement, and `equivalent-mutants.yaml`, is the cockroach
//! dialect's own. `run` must pass the whole corpus and `mutate` must kill
//! every mutant the dialect does not declare equivalent, with no stale
//! declaration: so a typo or a wrong clause in the cockroach SQL, or a
//! declaration its SQL no longer earns, fails here, though a behaviour only
//! CockroachDB has does not (docs/targets-not-run-here.md).
//!
//! Needs `REAPCHECK_POSTGRES_URL` (`.ci/run` sets it); without it the tests
//! pass without running, unless `REAPCHECK_REQUIRE` names postgres.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().expect("the workspace exists")
}

/// The PostgreSQL URL, or `None` when the test should not run.
fn postgres_url() -> Option<String> {
    match std::env::var("REAPCHECK_POSTGRES_URL") {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ => {
            let required = std::env::var("REAPCHECK_REQUIRE").unwrap_or_default();
            assert!(
                !required.split(',').any(|t| t.trim() == "postgres" || t.trim() == "all"),
                "REAPCHECK_REQUIRE names postgres but REAPCHECK_POSTGRES_URL is not set"
            );
            None
        }
    }
}

/// `text` cut before each `-- name:` line: the header, then one part per
/// statement, each starting with its `-- name:` line.
fn split_statements(text: &str) -> Vec<&str> {
    let mut starts: Vec<usize> = text.match_indices("\n-- name: ").map(|(i, _)| i + 1).collect();
    starts.insert(0, 0);
    starts.push(text.len());
    starts.windows(2).map(|w| &text[w[0]..w[1]]).collect()
}

/// The name a part of [`split_statements`] declares, if it is a statement.
fn name_of(part: &str) -> Option<&str> {
    part.strip_prefix("-- name: ").and_then(|rest| rest.lines().next()).map(str::trim)
}

const NAMESPACE_SCRIPTS: [&str; 3] = ["create_namespace", "enter_namespace", "drop_namespace"];

/// `dialects/cockroach/schema.sql` in PostgreSQL's words (see the module
/// docs); panics when a rewrite finds nothing to rewrite, so a change of the
/// cockroach schema cannot silently leave the stand-in stale.
fn schema_in_postgres_words(cockroach: &str, postgres: &str) -> String {
    let postgres_scripts: Vec<&str> = split_statements(postgres)
        .into_iter()
        .filter(|p| name_of(p).is_some_and(|n| NAMESPACE_SCRIPTS.contains(&n)))
        .collect();
    assert_eq!(postgres_scripts.len(), 3, "dialects/postgres/schema.sql has the three namespace scripts");
    let mut out = String::new();
    let mut replaced = 0;
    for part in split_statements(cockroach) {
        match name_of(part) {
            Some(name) if NAMESPACE_SCRIPTS.contains(&name) => {
                let script = postgres_scripts.iter().find(|p| name_of(p) == Some(name)).expect("found above");
                out.push_str(script.trim_end());
                out.push_str("\n\n");
                replaced += 1;
            }
            _ => out.push_str(part),
        }
    }
    assert_eq!(replaced, 3, "dialects/cockroach/schema.sql has the three namespace scripts");
    let inline = ",\n    INDEX jobs_reap (status, queue)\n);";
    assert_eq!(out.matches(inline).count(), 2, "both schemas declare their index inside CREATE TABLE jobs");
    let out = out.replace(inline, "\n);\nCREATE INDEX jobs_reap ON jobs (status, queue);");
    assert!(out.contains("STRING"), "the cockroach schema uses STRING");
    out.replace("STRING", "text COLLATE \"C\"")
}

/// A folder holding `postgres/`: the cockroach dialect in PostgreSQL's
/// words; deleted when dropped.
struct Staged(PathBuf);

impl Staged {
    fn new() -> Staged {
        let dir = std::env::temp_dir().join(format!("reapcheck-cockroach-on-postgres-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let to = dir.join("postgres");
        std::fs::create_dir_all(&to).expect("a scratch folder");
        let from = root().join("dialects/cockroach");
        for file in std::fs::read_dir(&from).expect("dialects/cockroach is readable") {
            let file = file.expect("a dialect file").path();
            std::fs::copy(&file, to.join(file.file_name().expect("a file name"))).expect("the copy");
        }
        let read = |p: PathBuf| std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        let schema = schema_in_postgres_words(
            &read(from.join("schema.sql")),
            &read(root().join("dialects/postgres/schema.sql")),
        );
        std::fs::write(to.join("schema.sql"), schema).expect("the rewritten schema");
        Staged(dir)
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn reapcheck(args: &[&str], url: &str) -> (Option<i32>, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_reapcheck"));
    cmd.args(args).current_dir(root()).env_remove("REAPCHECK_REQUIRE").env_remove("REAPCHECK_SCENARIOS");
    for var in ["REAPCHECK_MARIADB_URL", "REAPCHECK_MYSQL_URL", "REAPCHECK_COCKROACH_URL", "REAPCHECK_MSSQL_URL"] {
        cmd.env_remove(var);
    }
    let o: Output = cmd.env("REAPCHECK_POSTGRES_URL", url).output().expect("the binary runs");
    (o.status.code(), format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr)))
}

#[test]
fn the_cockroach_sql_passes_the_corpus_and_kills_every_mutant_on_postgresql() {
    let Some(url) = postgres_url() else { return };
    let staged = Staged::new();
    let dialects = staged.0.to_str().expect("a UTF-8 temp path");
    let (code, out) = reapcheck(&["run", "--db", "postgres", "--dialects", dialects, "--scenarios", "builtin"], &url);
    assert_eq!(code, Some(0), "{out}");
    let summary = out.lines().find(|l| l.starts_with("model: ")).unwrap_or_else(|| panic!("no summary: {out}"));
    let (model, postgres) = summary.split_once("; ").expect("model; target");
    let passed = |part: &str| part.split_whitespace().nth(1).and_then(|n| n.parse::<usize>().ok());
    assert!(passed(model).is_some_and(|n| n > 100), "{summary}");
    assert_eq!(postgres, format!("postgres: {} passed, 0 failed, 0 skipped", passed(model).unwrap()), "{summary}");

    let (code, out) =
        reapcheck(&["mutate", "--db", "postgres", "--dialects", dialects, "--scenarios", "builtin"], &url);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("postgres: mutation score 100% ("), "{out}");
    assert!(!out.contains("SURVIVED"), "{out}");
}

#[test]
fn the_rewrites_find_what_they_rewrite() {
    let read = |p: &str| std::fs::read_to_string(root().join(p)).expect("readable");
    let schema =
        schema_in_postgres_words(&read("dialects/cockroach/schema.sql"), &read("dialects/postgres/schema.sql"));
    assert!(
        !schema.contains("STRING") && !schema.contains("SET database") && !schema.contains("DROP DATABASE"),
        "{schema}"
    );
    assert_eq!(schema.matches("CREATE INDEX jobs_reap ON jobs (status, queue);").count(), 2, "{schema}");
    assert!(schema.contains("CREATE SCHEMA {namespace}") && schema.contains("-- name: empty_namespace"), "{schema}");
}
