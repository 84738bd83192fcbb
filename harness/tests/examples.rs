//! `examples/tinyqueue`, the queue docs/porting.md walks through: its own
//! table and column names and status words, INT counters, whole seconds,
//! epoch-second instants on SQLite and naive `timestamp(0)` on PostgreSQL,
//! no leases. It must pass the corpus through the binary as a user runs it,
//! and a broken guard in it must fail with a trace naming the statement,
//! its file:line and its bound values.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().expect("the workspace exists")
}

fn reapcheck(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_reapcheck"))
        .args(args)
        .current_dir(root())
        .env_remove("REAPCHECK_REQUIRE")
        .output()
        .expect("the binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Scenarios that need leases: tinyqueue has none, so these are skipped.
fn lease_scenarios() -> usize {
    let out = stdout(&reapcheck(&["run", "--dialects", "examples/tinyqueue"]));
    out.lines()
        .filter(|l| l.starts_with("skipped: ") && l.ends_with("sqlite declares no leases (dialect.toml)"))
        .count()
}

#[test]
fn tinyqueue_passes_the_corpus_on_sqlite_with_the_lease_scenarios_skipped() {
    let o = reapcheck(&["run", "--dialects", "examples/tinyqueue"]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("profile of sqlite on sqlite: time_resolution = 1s"), "{out}");
    assert!(out.contains("instants = epoch_seconds"), "{out}");
    let skipped = lease_scenarios();
    assert!(skipped >= 20, "only {skipped} lease scenarios skipped: {out}");
    assert!(!out.contains("FAIL"), "{out}");
    assert!(out.lines().last().is_some_and(|l| l.ends_with(&format!(", 0 failed, {skipped} skipped"))), "{out}");
}

#[test]
fn a_broken_guard_in_tinyqueue_fails_with_a_trace_of_its_own_sql() {
    let scratch = std::env::temp_dir().join(format!("reapcheck-tinyqueue-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    let copy = scratch.join("sqlite");
    std::fs::create_dir_all(&copy).unwrap();
    for entry in std::fs::read_dir(root().join("examples/tinyqueue/sqlite")).unwrap() {
        let path = entry.unwrap().path();
        let mut text = std::fs::read_to_string(&path).unwrap();
        if path.file_name().unwrap() == "reaper.sql" {
            let guard = "AND IFNULL(pinged_at, touched_at) < :cutoff";
            assert!(text.contains(guard), "reaper.sql no longer has {guard:?}");
            text = text.replacen(guard, "AND IFNULL(pinged_at, touched_at) <= :cutoff", 1);
        }
        std::fs::write(copy.join(path.file_name().unwrap()), text).unwrap();
    }
    let dir = scratch.display().to_string();
    let o = reapcheck(&["run", "--dialects", &dir, "--exact", "boundaries/claim-window-exact"]);
    let _ = std::fs::remove_dir_all(&scratch);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("FAIL     boundaries/claim-window-exact  on sqlite"), "{out}");
    assert!(out.contains("trace on sqlite: statements up to step 1, where sqlite and the model part"), "{out}");
    // The port's own statement and line, with epoch-second values shown as instants.
    assert!(out.contains(&format!("reap_retry ({}:", scratch.join("sqlite/reaper.sql").display())), "{out}");
    assert!(out.contains(":cutoff=2026-01-15T11:50:00Z (-10m) -> 1 row changed"), "{out}");
}

#[test]
fn tinyqueue_passes_the_corpus_on_postgres() {
    if reapcheck::reach::test_url(reapcheck::target::Target::Postgres).is_none() {
        return;
    }
    let o = reapcheck(&["run", "--db", "postgres", "--dialects", "examples/tinyqueue"]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("instants = naive_utc"), "{out}");
    assert!(!out.contains("FAIL"), "{out}");
    let skipped = lease_scenarios();
    assert!(out.lines().last().is_some_and(|l| l.ends_with(&format!(", 0 failed, {skipped} skipped"))), "{out}");
}

#[test]
fn explain_says_skipped_for_a_scenario_that_needs_an_absent_feature() {
    let o = reapcheck(&["explain", "leases/taken-on-claim", "--db", "sqlite", "--dialects", "examples/tinyqueue"]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}");
    assert!(
        out.ends_with("skipped: leases/taken-on-claim on sqlite: sqlite declares no leases (dialect.toml)\n"),
        "{out}"
    );
}
