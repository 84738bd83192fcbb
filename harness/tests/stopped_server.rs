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
//! The private server helper is the one of `interrupt.rs` (which keeps its
//! own copy).

#![cfg(unix)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const BIN: &str = "/usr/lib/postgresql/15/bin";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().expect("the workspace exists")
}

/// A PostgreSQL server of this test's own, stopped and deleted on drop.
struct PrivatePostgres {
    dir: PathBuf,
    port: u16,
}

/// `program args` run as the `postgres` user when this process is root
/// (initdb and postgres refuse to run as root).
fn as_postgres(program: &str, args: &[&str]) -> Command {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        let mut cmd = Command::new("runuser");
        cmd.args(["-u", "postgres", "--", program]).args(args);
        cmd
    } else {
        let mut cmd = Command::new(program);
        cmd.args(args);
        cmd
    }
}

impl PrivatePostgres {
    fn start(port: u16) -> PrivatePostgres {
        let dir = std::env::temp_dir().join(format!("reapcheck-stopped-pg-{port}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a temp dir");
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            let chown = Command::new("chown").args(["-R", "postgres:postgres"]).arg(&dir).status();
            assert!(chown.is_ok_and(|s| s.success()), "chown {}", dir.display());
        }
        let server = PrivatePostgres { dir, port };
        let data = server.data();
        let initdb = as_postgres(&format!("{BIN}/initdb"), &["-D", &data, "-U", "postgres", "--auth=trust", "-N"])
            .stdout(Stdio::null())
            .output()
            .expect("initdb runs");
        assert!(initdb.status.success(), "initdb: {}", String::from_utf8_lossy(&initdb.stderr));
        let options =
            format!("-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off", server.port, server.dir.display());
        let log = server.dir.join("log").display().to_string();
        let started = as_postgres(&format!("{BIN}/pg_ctl"), &["-D", &data, "-l", &log, "-o", &options, "-w", "start"])
            .stdout(Stdio::null())
            .status()
            .expect("pg_ctl runs");
        assert!(started.success(), "pg_ctl start failed; see {log}");
        server
    }

    fn data(&self) -> String {
        self.dir.join("data").display().to_string()
    }

    fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// The `rc_` schemas on the server.
    async fn namespaces(&self) -> Vec<String> {
        let server = reapcheck::backend::postgres(&self.url()).await.expect("the private server answers");
        let names = server.namespaces().await.expect("the schemas are listed");
        server.close().await;
        names
    }

    /// The postmaster's pid and those of its children (the backends and
    /// the server's own workers), postmaster first.
    fn processes(&self) -> Vec<libc::pid_t> {
        let pidfile = std::fs::read_to_string(self.dir.join("data/postmaster.pid")).expect("postmaster.pid");
        let postmaster: libc::pid_t = pidfile.lines().next().and_then(|l| l.trim().parse().ok()).expect("a pid");
        let mut pids = vec![postmaster];
        for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<libc::pid_t>().ok()) else { continue };
            let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
            // `pid (comm) state ppid ...`: the fields after the last `)`.
            let after = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or_default();
            let ppid = after.split_whitespace().nth(1).and_then(|p| p.parse::<libc::pid_t>().ok());
            if ppid == Some(postmaster) {
                pids.push(pid);
            }
        }
        pids
    }
}

impl Drop for PrivatePostgres {
    fn drop(&mut self) {
        let _ = as_postgres(&format!("{BIN}/pg_ctl"), &["-D", &self.data(), "-m", "immediate", "-w", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

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

/// A running `reapcheck run --db postgres` and its stdout so far.
struct Run {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Run {
    fn start(url: &str, extra: &[&str]) -> Run {
        Run::start_command("run", url, extra)
    }

    /// `reapcheck <command> --db postgres <extra...>` against `url`.
    fn start_command(command: &str, url: &str, extra: &[&str]) -> Run {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_reapcheck"));
        cmd.args([command, "--db", "postgres"]).args(extra).current_dir(root()).env_remove("REAPCHECK_REQUIRE");
        cmd.env_remove("CI");
        for t in reapcheck::target::Target::ALL {
            cmd.env_remove(t.url_variable());
        }
        let mut child = cmd
            .env("REAPCHECK_POSTGRES_URL", url)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the binary starts");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let stdout = child.stdout.take().expect("piped");
        let sink = lines.clone();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                sink.lock().unwrap().push(line);
            }
        });
        Run { child, lines, reader: Some(reader) }
    }

    /// How many cases on postgres have printed their line.
    fn cases(&self) -> usize {
        self.lines.lock().unwrap().iter().filter(|l| is_case(l)).count()
    }

    /// Waits until `n` cases on postgres have printed their line.
    fn wait_for_cases(&self, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(300);
        while self.cases() < n {
            assert!(Instant::now() < deadline, "no {n} cases within 300 s: {:?}", self.lines.lock().unwrap());
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn signal(&self, signal: libc::c_int) {
        let pid = libc::pid_t::try_from(self.child.id()).expect("a pid");
        // SAFETY: signals a child of this test.
        assert_eq!(unsafe { libc::kill(pid, signal) }, 0, "kill {signal}");
    }

    /// Waits for the exit; its code and its stdout. Fails with `hung`
    /// (the child killed) past 600 s: a guard against a hang, not a bound
    /// on how long it may take.
    fn finish(mut self) -> (Option<i32>, String) {
        let deadline = Instant::now() + Duration::from_secs(600);
        while self.child.try_wait().expect("the child is there").is_none() {
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                panic!("hung: the run did not end within 600 s:\n{}", self.lines.lock().unwrap().join("\n"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let status = self.child.wait().expect("the run ends");
        self.reader.take().expect("once").join().expect("the reader ends");
        let out = self.lines.lock().unwrap().join("\n");
        (status.code(), out)
    }
}

/// A case line of the postgres target: `ok       grace/x  on postgres ...`.
fn is_case(line: &str) -> bool {
    ["ok ", "new ", "diverged ", "skipped: ", "FAIL "].iter().any(|p| line.starts_with(p))
        && line.contains("  on postgres")
}

/// The closing line's numbers for postgres: passed, failed, skipped.
fn closing(out: &str) -> (usize, usize, usize) {
    let line = out.lines().rev().find(|l| l.ends_with(" skipped")).unwrap_or_else(|| panic!("no summary:\n{out}"));
    let target = line.rsplit("; ").next().unwrap_or(line);
    let n: Vec<usize> = target.split([' ', ',']).filter_map(|w| w.parse().ok()).collect();
    (n[0], n[1], n[2])
}

/// Scenario runs at once on a target (`run`'s default `--jobs`).
const JOBS: usize = 4;

#[tokio::test(flavor = "multi_thread")]
async fn a_frozen_server_fails_every_remaining_scenario_at_once_after_one_wait() {
    let Some(_url) = reapcheck::reach::test_url(reapcheck::target::Target::Postgres) else { return };
    let pg = PrivatePostgres::start(55461);
    // A short limit keeps the one wait short; the bound is the same shape.
    let run = Run::start(&pg.url(), &["--statement-timeout", "5"]);
    run.wait_for_cases(1);
    let frozen = Frozen::freeze(&pg);
    let before = run.cases();
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
    let run = Run::start_command("mutate", &pg.url(), &["--statement-timeout", "5", "--scenarios", "scenarios/grace"]);
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
    run.wait_for_cases(5);
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
    assert!(out.contains(&format!("removed {} namespaces left on postgres", left.len())), "{out}");
    assert_eq!(pg.namespaces().await, Vec::<String>::new(), "schemas left behind");
    // `mutate` says the same after its signal.
    let run = Run::start_command("mutate", &pg.url(), &["--dialects", &copy.path(), "--scenarios", "scenarios/grace"]);
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
