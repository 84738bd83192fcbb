//! Interrupted runs leave nothing behind: `reapcheck run --db postgres`
//! (or `mariadb`) against a private server started by each test (loopback
//! ports 55433-55438, a temporary data folder, removed afterwards), so stopping
//! or killing things never touches a server anyone else uses. SIGINT mid-run
//! exits 130 with the summary and no `rc_*` schema left; SIGKILL leaves the
//! schemas in flight, and the next run removes them and says how many; a
//! server stopped mid-run fails the remaining scenarios at once (refused),
//! without waiting out a connect timeout each.

#![cfg(unix)]

#[path = "common/private_postgres.rs"]
mod private_postgres;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use private_postgres::{PrivatePostgres, Run, closing, root};

#[tokio::test(flavor = "multi_thread")]
async fn sigint_or_sigterm_mid_run_drops_the_namespaces_in_flight_prints_the_summary_and_exits_130() {
    let Some(_url) = reapcheck::reach::test_url(reapcheck::target::Target::Postgres) else { return };
    let pg = PrivatePostgres::start(55433);
    let reports = pg.dir.join("reports");
    let run = Run::start(&pg.url(), &["--report", &reports.display().to_string()]);
    run.wait_for_cases(5);
    run.signal(libc::SIGINT);
    let (code, out) = run.finish();
    assert_eq!(code, Some(130), "{out}");
    assert!(out.contains("interrupted by SIGINT"), "{out}");
    let (passed, failed, skipped) = closing(&out);
    assert_eq!(failed, 0, "an interruption is no failure:\n{out}");
    assert!(skipped > 0 && passed > 0, "{out}");
    let summary = std::fs::read_to_string(reports.join("summary.txt")).expect("the summary is written");
    assert!(summary.starts_with("INCOMPLETE: interrupted by SIGINT"), "{summary}");
    let junit = std::fs::read_to_string(reports.join("junit.xml")).expect("the junit report is written");
    assert!(junit.contains("name=\"interrupted\" value=\"SIGINT\""), "{junit}");
    assert_eq!(pg.namespaces().await, Vec::<String>::new(), "schemas left behind");
    // SIGTERM, as a CI runner's timeout sends it, stops the run the same way.
    let run = Run::start(&pg.url(), &[]);
    run.wait_for_cases(5);
    run.signal(libc::SIGTERM);
    let (code, out) = run.finish();
    assert_eq!(code, Some(130), "{out}");
    assert!(out.contains("interrupted by SIGTERM") && closing(&out).1 == 0, "{out}");
    assert_eq!(pg.namespaces().await, Vec::<String>::new(), "schemas left behind after SIGTERM");
}

#[tokio::test(flavor = "multi_thread")]
async fn sigint_mid_bench_scale_drops_its_namespace_and_exits_130() {
    let Some(_url) = reapcheck::reach::test_url(reapcheck::target::Target::Postgres) else { return };
    let pg = PrivatePostgres::start(55438);
    // The first size is measured, the second (400,000 rows) is loading, its
    // batch's transaction open, when the signal comes.
    let sizes = ["--scale", "--sizes", "20000,400000", "--processing", "1000", "--stale", "100", "--runs", "1"];
    let run = Run::start_command(&["bench"], "postgres", &pg.url(), &sizes);
    run.wait_for_line("      20000 ");
    std::thread::sleep(Duration::from_millis(500));
    run.signal(libc::SIGINT);
    let (code, out) = run.finish();
    assert_eq!(code, Some(130), "{out}");
    assert!(out.contains("postgres: scale FAILED: run: interrupted by SIGINT"), "{out}");
    assert_eq!(pg.namespaces().await, Vec::<String>::new(), "the scale namespace was left behind");
}

#[tokio::test(flavor = "multi_thread")]
async fn namespaces_left_by_a_killed_run_are_removed_by_the_next_one() {
    let Some(_url) = reapcheck::reach::test_url(reapcheck::target::Target::Postgres) else { return };
    let pg = PrivatePostgres::start(55434);
    // A kill between two runs leaves nothing; a few tries catch runs in flight.
    let mut left = Vec::new();
    for _ in 0..5 {
        let run = Run::start(&pg.url(), &[]);
        run.wait_for_cases(3);
        run.signal(libc::SIGKILL);
        let (code, _) = run.finish();
        assert_eq!(code, None, "killed by a signal");
        left = pg.namespaces().await;
        if !left.is_empty() {
            break;
        }
    }
    assert!(!left.is_empty(), "five killed runs left no schema: the test proves nothing");
    let (code, out) = Run::start(&pg.url(), &["--exact", "grace/beat-older-than-claim"]).finish();
    assert_eq!(code, Some(0), "{out}");
    let said = format!("removed {} left on postgres by earlier runs", reapcheck::namespace::count(left.len()));
    assert!(out.contains(&said), "expected `{said}`:\n{out}");
    assert_eq!(pg.namespaces().await, Vec::<String>::new(), "schemas left behind");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_stopped_mid_run_fails_the_remaining_scenarios_at_once() {
    let Some(_url) = reapcheck::reach::test_url(reapcheck::target::Target::Postgres) else { return };
    let pg = PrivatePostgres::start(55435);
    let run = Run::start(&pg.url(), &[]);
    run.wait_for_cases(5);
    pg.stop_now();
    let stopped = Instant::now();
    let (code, out) = run.finish();
    let after = stopped.elapsed();
    assert_eq!(code, Some(1), "{out}");
    let (_, failed, _) = closing(&out);
    assert!(failed > 0, "{out}");
    // Each refused connect fails at once: none waits out the 5 s timeout.
    assert!(!out.contains("within 5 s"), "a scenario waited for a connection:\n{out}");
    println!("{failed} scenarios failed in {after:?} after the server stopped");
    // Started again, the server holds what the stop cut off; the next run removes it.
    pg.pg_ctl_start();
    let left = pg.namespaces().await;
    let (code, out) = Run::start(&pg.url(), &["--exact", "grace/beat-older-than-claim"]).finish();
    assert_eq!(code, Some(0), "{out}");
    if !left.is_empty() {
        assert!(out.contains(&format!("removed {}", reapcheck::namespace::count(left.len()))), "{out}");
    }
    assert_eq!(pg.namespaces().await, Vec::<String>::new(), "schemas left behind");
}

/// A MariaDB server of this test's own (`--skip-grant-tables`: anyone may
/// log in, on loopback only), killed and deleted on drop.
struct PrivateMariadb {
    dir: PathBuf,
    port: u16,
    server: Child,
}

impl PrivateMariadb {
    async fn start(port: u16) -> PrivateMariadb {
        let dir = std::env::temp_dir().join(format!("reapcheck-mariadb-{port}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a temp dir");
        let data = dir.join("data");
        // Temporary tables in a folder of its own: in the shared /tmp their
        // files are named after the server's pid, and a bootstrap whose pid
        // an earlier or concurrent server had used failed with `Unknown
        // table 'mysql.tmp_user_sys'` (seen here once pids had wrapped).
        let tmp = dir.join("tmp");
        std::fs::create_dir_all(&tmp).expect("a temp dir");
        let install = Command::new("mariadb-install-db")
            .arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--tmpdir={}", tmp.display()))
            .args(["--user=root", "--auth-root-authentication-method=normal", "--skip-test-db"])
            .output()
            .expect("mariadb-install-db runs");
        assert!(install.status.success(), "mariadb-install-db: {}", String::from_utf8_lossy(&install.stderr));
        let server = Command::new("/usr/sbin/mariadbd")
            .arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--tmpdir={}", tmp.display()))
            .arg(format!("--socket={}", dir.join("sock").display()))
            .arg(format!("--port={port}"))
            .args(["--bind-address=127.0.0.1", "--user=root", "--skip-grant-tables", "--skip-log-bin"])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("server.log")).expect("a server log"))
            .spawn()
            .expect("mariadbd starts");
        let mut db = PrivateMariadb { dir, port, server };
        // A fresh data directory on a busy disk can take long to open (a
        // CI run saw over 60 s); a server that stopped fails at once, with
        // its log.
        let deadline = Instant::now() + Duration::from_secs(300);
        while reapcheck::backend::mysql(&db.url()).await.is_err() {
            let log = || std::fs::read_to_string(db.dir.join("server.log")).unwrap_or_default();
            if let Ok(Some(status)) = db.server.try_wait() {
                panic!("the private mariadb on port {port} stopped ({status}):\n{}", log());
            }
            assert!(Instant::now() < deadline, "the private mariadb did not answer within 300 s:\n{}", log());
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        db
    }

    fn url(&self) -> String {
        format!("mysql://root@127.0.0.1:{}/mysql", self.port)
    }

    async fn namespaces(&self) -> Vec<String> {
        let server = reapcheck::backend::mysql(&self.url()).await.expect("the private server answers");
        server.namespaces().await.expect("the databases are listed")
    }
}

impl Drop for PrivateMariadb {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn on_mariadb_sigint_leaves_nothing_and_a_killed_runs_leftovers_are_removed() {
    let Some(_url) = reapcheck::reach::test_url(reapcheck::target::Target::Mariadb) else { return };
    let db = PrivateMariadb::start(55436).await;
    let run = Run::start_on("mariadb", &db.url(), &[]);
    run.wait_for_cases_on("mariadb", 5);
    run.signal(libc::SIGINT);
    let (code, out) = run.finish();
    assert_eq!(code, Some(130), "{out}");
    assert_eq!(closing(&out).1, 0, "an interruption is no failure:\n{out}");
    assert_eq!(db.namespaces().await, Vec::<String>::new(), "databases left behind after SIGINT");
    let (mut left, mut last) = (Vec::new(), String::new());
    // MariaDB runs a case in about 30 ms: the kill comes at a different
    // point of the corpus each try.
    for attempt in 0..8 {
        let run = Run::start_on("mariadb", &db.url(), &[]);
        run.wait_for_cases_on("mariadb", 3 + 7 * attempt);
        run.signal(libc::SIGKILL);
        let (code, out) = run.finish();
        last = format!("{code:?}\n{out}");
        // What the dead client left is what the server holds once its last
        // statements (a lane's DROP DATABASE in flight) have ended.
        let deadline = Instant::now() + Duration::from_secs(30);
        while mariadb_busy(&db.url()).await > 0 {
            assert!(Instant::now() < deadline, "the killed run's statements still run after 30 s");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        left = db.namespaces().await;
        if !left.is_empty() {
            break;
        }
    }
    assert!(!left.is_empty(), "eight killed runs left no database: the test proves nothing; the last:\n{last}");
    let (code, out) = Run::start_on("mariadb", &db.url(), &["--exact", "grace/beat-older-than-claim"]).finish();
    assert_eq!(code, Some(0), "{out}");
    let said = format!("removed {} left on mariadb by earlier runs", reapcheck::namespace::count(left.len()));
    assert!(out.contains(&said), "expected `{said}`:\n{out}");
    assert_eq!(db.namespaces().await, Vec::<String>::new(), "databases left behind");
}

/// A scenario that made `run` panic (issue 12: the clock pushed past
/// chrono's range) fails alone: the other scenarios run, the summary is
/// printed, exit 1. Once `check` rejects the file, exit 2 before anything
/// runs is right too; a crash (101) never is.
#[test]
fn a_scenario_that_panics_fails_alone_and_the_run_goes_on() {
    let dir = std::env::temp_dir().join(format!("reapcheck-panic-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("x")).expect("a temp dir");
    let far = "description: the clock leaves chrono's range\nclasses:\n  C: { timeout: 300 }\n\
               jobs:\n  - { id: a, class: C, status: processing, attempts: 1, claimed: -1h }\n\
               steps: [ {advance: 100000000d}, reap ]\n";
    std::fs::write(dir.join("x/far.yaml"), far).expect("written");
    let ok = "description: an idle queue\nclasses:\n  C: { timeout: 300 }\njobs: []\nsteps: [ reap ]\n";
    std::fs::write(dir.join("x/ok.yaml"), ok).expect("written");
    let out = Command::new(env!("CARGO_BIN_EXE_reapcheck"))
        .args(["run", "--db", "sqlite", "--coverage-min", "0", "--scenarios"])
        .arg(&dir)
        .current_dir(root())
        .env_remove("REAPCHECK_REQUIRE")
        .output()
        .expect("the binary runs");
    let _ = std::fs::remove_dir_all(&dir);
    let stdout = String::from_utf8_lossy(&out.stdout);
    match out.status.code() {
        Some(1) => {
            assert!(stdout.contains("reapcheck panicked: instants are validated"), "{stdout}");
            assert!(stdout.contains("not run: the model panicked on this scenario"), "{stdout}");
            assert!(stdout.contains("new      x/ok  on model"), "{stdout}");
            assert_eq!(closing(&stdout).1, 2, "the panicking scenario fails on the model and sqlite:\n{stdout}");
        }
        Some(2) => assert!(String::from_utf8_lossy(&out.stderr).contains("far.yaml:"), "{out:?}"),
        other => panic!("exit {other:?}:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr)),
    }
}

/// A copy of `dialects/` whose `reap_scan`, in every dialect, waits 600 s
/// on the server (SQLite: recurses forever) before it answers; removed
/// when dropped.
struct Blocking(PathBuf);

impl Blocking {
    fn new(tag: &str) -> Blocking {
        let dir = std::env::temp_dir().join(format!("reapcheck-blocking-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (dialect, condition) in [
            ("sqlite", "(WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r) >= 0"),
            ("postgres", "(SELECT count(*) FROM pg_sleep(600)) >= 0"),
            ("mysql", "SLEEP(600) = 0"),
        ] {
            let to = dir.join(dialect);
            std::fs::create_dir_all(&to).expect("a scratch folder");
            for file in std::fs::read_dir(root().join("dialects").join(dialect)).expect("the dialect") {
                let file = file.expect("a file").path();
                std::fs::copy(&file, to.join(file.file_name().expect("a name"))).expect("copied");
            }
            let path = to.join("reaper.sql");
            let text = std::fs::read_to_string(&path).expect("the SQL");
            let start = text.find("-- name: reap_scan\n").expect("a reap_scan");
            let at = start + text[start..].find("WHERE status = 'processing'").expect("its WHERE");
            let edited = format!("{}WHERE status = 'processing' AND {condition}{}", &text[..at], &text[at + 27..]);
            std::fs::write(&path, edited).expect("edited");
        }
        Blocking(dir)
    }

    fn path(&self) -> String {
        self.0.display().to_string()
    }
}

impl Drop for Blocking {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// How many sessions of the private PostgreSQL run a `pg_sleep` now.
async fn pg_sleeping(url: &str) -> i64 {
    use sqlx::{ConnectOptions, Connection};
    let options: sqlx::postgres::PgConnectOptions = url.parse().expect("a url");
    let mut conn = options.connect().await.expect("the private server answers");
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep'")
        .fetch_one(&mut conn)
        .await
        .expect("pg_stat_activity");
    let _ = conn.close().await;
    n
}

/// How many sessions of the private MariaDB other than this one are
/// running a statement now (a killed client's last statement, such as a
/// `DROP DATABASE`, goes on running on the server after the client died).
async fn mariadb_busy(url: &str) -> i64 {
    use sqlx::{ConnectOptions, Connection};
    let options: sqlx::mysql::MySqlConnectOptions = url.parse().expect("a url");
    let mut conn = options.connect().await.expect("the private server answers");
    let n: i64 = sqlx::query_scalar(
        "SELECT CAST(count(*) AS SIGNED) FROM information_schema.processlist \
         WHERE id <> CONNECTION_ID() AND command NOT IN ('Sleep', 'Daemon') AND user <> 'system user'",
    )
    .fetch_one(&mut conn)
    .await
    .expect("the processlist");
    let _ = conn.close().await;
    n
}

/// How many sessions of the private MariaDB are in a `SLEEP()` now.
async fn mariadb_sleeping(url: &str) -> i64 {
    use sqlx::{ConnectOptions, Connection};
    let options: sqlx::mysql::MySqlConnectOptions = url.parse().expect("a url");
    let mut conn = options.connect().await.expect("the private server answers");
    let n: i64 = sqlx::query_scalar(
        "SELECT CAST(count(*) AS SIGNED) FROM information_schema.processlist WHERE state = 'User sleep'",
    )
    .fetch_one(&mut conn)
    .await
    .expect("the processlist");
    let _ = conn.close().await;
    n
}

/// Polls `count` until it gives 0, for at most 20 s (the server acts on a
/// cancel in milliseconds; a statement never cancelled sleeps 600 s).
async fn until_none(count: impl AsyncFn() -> i64) -> i64 {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let n = count().await;
        if n == 0 || Instant::now() >= deadline {
            return n;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Polls `count` until it gives at least 1 (the marker that a statement
/// blocks now), failing after 120 s.
async fn until_some(what: &str, count: impl AsyncFn() -> i64) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while count().await == 0 {
        assert!(Instant::now() < deadline, "{what}: no blocked statement within 120 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn sigint_cancels_a_blocking_statement_on_postgres_and_leaves_no_session_running_it() {
    let Some(_url) = reapcheck::reach::test_url(reapcheck::target::Target::Postgres) else { return };
    let pg = PrivatePostgres::start(55439);
    let copy = Blocking::new("pg");
    let url = pg.url();
    let run = Run::start(&url, &["--dialects", &copy.path(), "grace/"]);
    until_some("postgres", async || pg_sleeping(&url).await).await;
    let signalled = Instant::now();
    run.signal(libc::SIGINT);
    let (code, out) = run.finish_within("run --db postgres");
    println!("exit {code:?} {:?} after the signal", signalled.elapsed());
    assert_eq!(code, Some(130), "{out}");
    assert!(out.contains("interrupted by SIGINT"), "no summary marked interrupted:\n{out}");
    assert_eq!(until_none(async || pg_sleeping(&url).await).await, 0, "a pg_sleep still runs:\n{out}");
    assert_eq!(pg.namespaces().await, Vec::<String>::new(), "schemas left behind");
}

#[tokio::test(flavor = "multi_thread")]
async fn sigint_kills_a_blocking_query_on_mariadb_and_leaves_no_session_running_it() {
    let Some(_url) = reapcheck::reach::test_url(reapcheck::target::Target::Mariadb) else { return };
    let db = PrivateMariadb::start(55440).await;
    let copy = Blocking::new("mariadb");
    let url = db.url();
    let run = Run::start_on("mariadb", &url, &["--dialects", &copy.path(), "grace/"]);
    until_some("mariadb", async || mariadb_sleeping(&url).await).await;
    let signalled = Instant::now();
    run.signal(libc::SIGINT);
    let (code, out) = run.finish_within("run --db mariadb");
    println!("exit {code:?} {:?} after the signal", signalled.elapsed());
    assert_eq!(code, Some(130), "{out}");
    assert!(out.contains("interrupted by SIGINT"), "no summary marked interrupted:\n{out}");
    assert_eq!(until_none(async || mariadb_sleeping(&url).await).await, 0, "a SLEEP still runs:\n{out}");
    assert_eq!(db.namespaces().await, Vec::<String>::new(), "databases left behind");
}

/// `reapcheck <command>` on the private PostgreSQL, signalled once it has
/// a namespace on the server (the marker that it is running scenarios):
/// exit 130, its summary marked interrupted, no namespace and no session
/// of it left.
async fn signal_mid(pg: &PrivatePostgres, command: &[&str], extra: &[&str], signal: libc::c_int, said: &str) -> String {
    let run = Run::start_command(command, "postgres", &pg.url(), extra);
    let deadline = Instant::now() + Duration::from_secs(120);
    while pg.namespaces().await.is_empty() {
        assert!(Instant::now() < deadline, "{command:?}: no namespace within 120 s");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let signalled = Instant::now();
    run.signal(signal);
    let (code, out) = run.finish_within(&command.join(" "));
    println!("{command:?}: exit {code:?} {:?} after the signal", signalled.elapsed());
    assert_eq!(code, Some(130), "{command:?}:\n{out}");
    assert!(out.contains(said), "{command:?}: no `{said}`:\n{out}");
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut left = pg.namespaces().await;
    while !left.is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
        left = pg.namespaces().await;
    }
    assert_eq!(left, Vec::<String>::new(), "{command:?}: schemas left behind:\n{out}");
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn sigint_or_sigterm_mid_mutate_fuzz_or_race_stops_it_with_its_summary_and_leaves_nothing() {
    let Some(_url) = reapcheck::reach::test_url(reapcheck::target::Target::Postgres) else { return };
    let pg = PrivatePostgres::start(55441);
    let out = signal_mid(
        &pg,
        &["mutate"],
        &["--scenarios", "scenarios/grace"],
        libc::SIGINT,
        "mutate: interrupted by SIGINT",
    )
    .await;
    // A run cut short has no score, not one over the mutants that finished.
    let score = regex::Regex::new(r"mutation score \d+%").unwrap();
    assert!(!score.is_match(&out), "{out}");
    let _ = signal_mid(
        &pg,
        &["fuzz"],
        &["--cases", "100000", "--seed", "1"],
        libc::SIGTERM,
        "fuzz: interrupted by SIGTERM",
    )
    .await;
    // Without the signal the race would run its 600 s.
    let _ =
        signal_mid(&pg, &["race"], &["--seconds", "600", "--seed", "1"], libc::SIGINT, "race: interrupted by SIGINT")
            .await;
    let _ = signal_mid(&pg, &["bench"], &["--iterations", "1000"], libc::SIGINT, "bench: interrupted by SIGINT").await;
}
