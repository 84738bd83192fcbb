//! A server that stops answering, and what a run says it left: `reapcheck
//! run --db postgres` against a private PostgreSQL started by each test
//! (loopback ports 55461-55462, a temporary data folder, removed
//! afterwards), so freezing or breaking it never touches a server anyone
//! else uses.
//!
//! - Frozen mid-run (SIGSTOP on the postmaster and every backend), the
//!   server is given up as a whole: the scenarios in flight wait out one
//!   limit (at most one per scenario running at once), every later one
//!   fails at once saying the server stopped answering where, exit 1.
//! - After SIGINT, the run never says its namespaces were dropped while its
//!   server's catalog still lists some: it names them, and how to remove
//!   them, and the next run does.
//!
//! The private server and the run are `tests/common/private_postgres.rs`,
//! shared with `interrupt.rs`.

#![cfg(unix)]

#[path = "common/private_postgres.rs"]
mod private_postgres;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use private_postgres::{PrivatePostgres, Run, closing, root};

/// The private server's processes stopped with SIGSTOP, continued with
/// SIGCONT when dropped (also when the test fails, before the server is
/// stopped and removed).
struct Frozen(Vec<libc::pid_t>);

impl Frozen {
    fn freeze(pg: &PrivatePostgres) -> Frozen {
        let pids = pg.processes();
        for &pid in &pids {
            // SAFETY: signals a process of this test's own server.
            assert_eq!(unsafe { libc::kill(pid, libc::SIGSTOP) }, 0, "SIGSTOP {pid}");
        }
        Frozen(pids)
    }
}

impl Drop for Frozen {
    fn drop(&mut self) {
        for &pid in &self.0 {
            // SAFETY: as above.
            unsafe { libc::kill(pid, libc::SIGCONT) };
        }
    }
}

/// A case line of the postgres target: `ok       grace/x  on postgres ...`.
fn is_case(line: &str) -> bool {
    ["ok ", "new ", "diverged ", "skipped: ", "FAIL "].iter().any(|p| line.starts_with(p))
        && line.contains("  on postgres")
}

/// Scenario runs at once on a target (`run`'s default `--jobs`).
const JOBS: usize = 4;

#[tokio::test(flavor = "multi_thread")]
async fn a_frozen_server_fails_every_remaining_scenario_at_once_after_one_wait() {
    let Some(_url) = reapcheck::reach::test_url(reapcheck::target::Target::Postgres) else { return };
    let pg = PrivatePostgres::start(55461);
    // A short limit keeps the one wait short; the bound is the same shape.
    let run = Run::start(&pg.url(), &["--statement-timeout", "5"]);
    run.wait_for(1, "cases", is_case);
    let frozen = Frozen::freeze(&pg);
    let before = run.count(is_case);
    let froze = Instant::now();
    let (code, out) = run.finish();
    println!("exit {code:?} {:?} after the freeze ({before} cases printed before it)", froze.elapsed());
    drop(frozen);
    assert_eq!(code, Some(1), "{out}");
    let (passed, failed, skipped) = closing(&out);
    let total = passed + failed + skipped;
    assert_eq!(skipped, 0, "{out}");
    // Every case after the freeze failed, but those in flight then, which
    // may have been past their last statement.
    assert!(passed <= before + JOBS, "{passed} of {total} passed, {before} before the freeze:\n{out}");
    let fails: Vec<&str> = out.lines().filter(|l| l.starts_with("FAIL ") && l.contains("  on postgres")).collect();
    assert_eq!(fails.len(), failed, "{out}");
    // A case that failed without waiting says so on the line under it;
    // only the cases running when the server froze waited (one limit each,
    // at once), never one per scenario.
    let at_once = out.lines().filter(|l| l.trim_start().starts_with("not run: postgres stopped answering at ")).count();
    println!("{total} cases: {passed} passed, {failed} failed, {at_once} of them at once, {} waited", failed - at_once);
    if std::env::var_os("REAPCHECK_TEST_SHOW").is_some() {
        println!("{out}");
    }
    assert!(at_once > 0, "no case failed at once:\n{out}");
    assert!(
        failed - at_once <= JOBS,
        "{} cases waited on the frozen server, at most {JOBS} may:\n{out}",
        failed - at_once
    );
    let said = out.lines().find(|l| l.starts_with("postgres: postgres stopped answering at ")).unwrap_or_default();
    assert!(said.contains(" (") && said.ends_with("; the cases after it failed without running"), "{out}");
}

/// Waits until the private server holds a namespace (a command is
/// running scenarios on it).
async fn until_a_namespace(pg: &PrivatePostgres) {
    let deadline = Instant::now() + Duration::from_secs(300);
    while pg.namespaces().await.is_empty() {
        assert!(Instant::now() < deadline, "no namespace within 300 s");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn mutate_on_a_frozen_server_fails_without_a_score() {
    let Some(_url) = reapcheck::reach::test_url(reapcheck::target::Target::Postgres) else { return };
    let pg = PrivatePostgres::start(55463);
    let run = Run::start_command(
        &["mutate"],
        "postgres",
        &pg.url(),
        &["--statement-timeout", "5", "--scenarios", "scenarios/grace"],
    );
    until_a_namespace(&pg).await;
    let frozen = Frozen::freeze(&pg);
    let froze = Instant::now();
    let (code, out) = run.finish();
    println!("mutate: exit {code:?} {:?} after the freeze", froze.elapsed());
    drop(frozen);
    assert_eq!(code, Some(1), "{out}");
    // Runs that erred on a server that no longer answers kill nothing.
    assert!(out.contains("  FAIL postgres stopped answering at "), "{out}");
    assert!(!out.contains("mutation score"), "a score from runs that never ran:\n{out}");
}

/// A copy of `dialects/` whose PostgreSQL `drop_namespace` leaves a
/// schema that holds jobs: the proof (empty tables) passes, a scenario's
/// namespace with rows is left on the server.
struct LeavesRows(PathBuf);

impl LeavesRows {
    fn new() -> LeavesRows {
        let dir = std::env::temp_dir().join(format!("reapcheck-leaves-rows-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let to = dir.join("postgres");
        std::fs::create_dir_all(&to).expect("a scratch folder");
        for file in std::fs::read_dir(root().join("dialects/postgres")).expect("the dialect") {
            let file = file.expect("a file").path();
            if file.is_file() {
                std::fs::copy(&file, to.join(file.file_name().expect("a name"))).expect("copied");
            }
        }
        let path = to.join("schema.sql");
        let text = std::fs::read_to_string(&path).expect("the SQL");
        let drop = "-- name: drop_namespace\nDROP SCHEMA {namespace} CASCADE\n";
        assert!(text.contains(drop), "the shipped drop_namespace changed: update this test");
        let leaves = "-- name: drop_namespace\nDO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM {namespace}.jobs) THEN \
                      EXECUTE 'DROP SCHEMA {namespace} CASCADE'; END IF; END $$\n";
        std::fs::write(&path, text.replace(drop, leaves)).expect("edited");
        LeavesRows(dir)
    }

    fn path(&self) -> String {
        self.0.display().to_string()
    }
}

impl Drop for LeavesRows {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn after_sigint_the_run_names_the_namespaces_still_on_the_server_and_the_next_run_removes_them() {
    let Some(_url) = reapcheck::reach::test_url(reapcheck::target::Target::Postgres) else { return };
    let pg = PrivatePostgres::start(55462);
    let copy = LeavesRows::new();
    let run = Run::start(&pg.url(), &["--dialects", &copy.path()]);
    run.wait_for(5, "cases", is_case);
    run.signal(libc::SIGINT);
    let (code, out) = run.finish();
    assert_eq!(code, Some(130), "{out}");
    let left = pg.namespaces().await;
    assert!(!left.is_empty(), "the copy left no schema: the test proves nothing:\n{out}");
    let line = out.lines().find(|l| l.starts_with("interrupted by SIGINT")).unwrap_or_else(|| panic!("{out}"));
    assert!(!line.contains("namespaces dropped"), "says dropped while {} schemas are left:\n{out}", left.len());
    let said = format!("{} namespaces of this run are still on postgres", left.len());
    assert!(line.contains(&said), "expected `{said}`:\n{line}");
    assert!(left.iter().all(|n| line.contains(n.as_str())), "{left:?} not all named:\n{line}");
    assert!(line.contains("the next `reapcheck run --db postgres` removes them"), "{line}");
    // A case that says its namespace was dropped is right about it.
    for l in out.lines().filter(|l| l.contains("mid-run; its namespace was dropped (")) {
        assert!(!left.iter().any(|n| l.contains(n.as_str())), "said dropped, still there: {l}");
    }
    // The advice holds: the next run (shipped SQL) removes them.
    let (code, out) = Run::start(&pg.url(), &["--exact", "grace/beat-older-than-claim"]).finish();
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains(&format!("removed {} left on postgres", reapcheck::namespace::count(left.len()))), "{out}");
    assert_eq!(pg.namespaces().await, Vec::<String>::new(), "schemas left behind");
    // `mutate` says the same after its signal.
    let run = Run::start_command(
        &["mutate"],
        "postgres",
        &pg.url(),
        &["--dialects", &copy.path(), "--scenarios", "scenarios/grace"],
    );
    until_a_namespace(&pg).await;
    run.signal(libc::SIGINT);
    let (code, out) = run.finish();
    assert_eq!(code, Some(130), "{out}");
    let left = pg.namespaces().await;
    let line = out.lines().find(|l| l.starts_with("mutate: interrupted by SIGINT")).unwrap_or_else(|| panic!("{out}"));
    if left.is_empty() {
        assert!(line.contains("namespaces dropped"), "{line}");
    } else {
        assert!(!line.contains("namespaces dropped"), "says dropped while {} schemas are left:\n{out}", left.len());
        assert!(left.iter().all(|n| line.contains(n.as_str())), "{left:?} not all named:\n{line}");
    }
    println!("mutate left {} schemas and said: {line}", left.len());
}
