//! A PostgreSQL server of a test's own and a `reapcheck` run against it,
//! for the tests that stop, freeze or signal things (`interrupt.rs`,
//! `stopped_server.rs`): each starts its server on a loopback port of its
//! own in a temporary data folder, removed afterwards, so nothing they do
//! touches a server anyone else uses. Included with `#[path]` by the files
//! that use it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Debian's PostgreSQL 15 programs.
const BIN: &str = "/usr/lib/postgresql/15/bin";

/// The workspace root (the runs' working folder).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().expect("the workspace exists")
}

/// A PostgreSQL server of this test's own, stopped and deleted on drop.
pub struct PrivatePostgres {
    /// Its folder: the data folder, its socket and its log.
    pub dir: PathBuf,
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
    /// A new server on 127.0.0.1:`port` (trust auth, fsync off), started.
    pub fn start(port: u16) -> PrivatePostgres {
        let dir = std::env::temp_dir().join(format!("reapcheck-pg-{port}-{}", std::process::id()));
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
        server.pg_ctl_start();
        server
    }

    fn data(&self) -> String {
        self.dir.join("data").display().to_string()
    }

    /// Starts the (stopped) server again, waiting until it accepts.
    pub fn pg_ctl_start(&self) {
        let options = format!("-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off", self.port, self.dir.display());
        let log = self.dir.join("log").display().to_string();
        let started =
            as_postgres(&format!("{BIN}/pg_ctl"), &["-D", &self.data(), "-l", &log, "-o", &options, "-w", "start"])
                .stdout(Stdio::null())
                .status()
                .expect("pg_ctl runs");
        // The folder, log included, is removed on drop: the log goes into
        // the message, so a failed start says why.
        let why = || std::fs::read_to_string(&log).unwrap_or_else(|e| format!("(no log at {log}: {e})"));
        assert!(started.success(), "pg_ctl start failed on port {}; its log:\n{}", self.port, why());
    }

    /// Stops the server at once, as a crash would.
    pub fn stop_now(&self) {
        let _ = as_postgres(&format!("{BIN}/pg_ctl"), &["-D", &self.data(), "-m", "immediate", "-w", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }

    /// Its URL, database `postgres`.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// The `rc_` schemas on the server, as reapcheck's sweep lists them.
    pub async fn namespaces(&self) -> Vec<String> {
        let server = reapcheck::backend::postgres(&self.url()).await.expect("the private server answers");
        let names = server.namespaces().await.expect("the schemas are listed");
        server.close().await;
        names
    }

    /// The postmaster's pid and those of its children (the backends and
    /// the server's own workers), postmaster first.
    pub fn processes(&self) -> Vec<libc::pid_t> {
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
        self.stop_now();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A running `reapcheck` command and its stdout so far.
pub struct Run {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Run {
    /// `reapcheck run --db postgres <extra...>` against `url`.
    pub fn start(url: &str, extra: &[&str]) -> Run {
        Run::start_on("postgres", url, extra)
    }

    /// `reapcheck run --db <target> <extra...>` against `url`.
    pub fn start_on(target: &str, url: &str, extra: &[&str]) -> Run {
        Run::start_command(&["run"], target, url, extra)
    }

    /// `reapcheck <command...> --db <target> <extra...>` against `url`,
    /// from the workspace root, with no other target's URL, no
    /// REAPCHECK_REQUIRE and no CI in its environment.
    pub fn start_command(command: &[&str], target: &str, url: &str, extra: &[&str]) -> Run {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_reapcheck"));
        cmd.args(command).args(["--db", target]).args(extra).current_dir(root());
        cmd.env_remove("REAPCHECK_REQUIRE").env_remove("CI");
        for t in reapcheck::target::Target::ALL {
            cmd.env_remove(t.url_variable());
        }
        let mut child = cmd
            .env(format!("REAPCHECK_{}_URL", target.to_uppercase()), url)
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

    /// How many lines printed so far `matches`.
    pub fn count(&self, matches: impl Fn(&str) -> bool) -> usize {
        self.lines.lock().unwrap().iter().filter(|l| matches(l)).count()
    }

    /// Waits until `n` lines `matches` (`what` names them in the failure);
    /// fails past 300 s.
    pub fn wait_for(&self, n: usize, what: &str, matches: impl Fn(&str) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(300);
        while self.count(&matches) < n {
            assert!(Instant::now() < deadline, "no {n} {what} within 300 s: {:?}", self.lines.lock().unwrap());
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Waits until `n` lines name `on <target>` (its cases' lines).
    pub fn wait_for_cases_on(&self, target: &str, n: usize) {
        let on = format!(" on {target}");
        self.wait_for(n, &format!("cases on {target}"), |l| l.contains(&on));
    }

    /// [`Run::wait_for_cases_on`] postgres.
    pub fn wait_for_cases(&self, n: usize) {
        self.wait_for_cases_on("postgres", n);
    }

    /// Waits until a line starts with `prefix`.
    pub fn wait_for_line(&self, prefix: &str) {
        self.wait_for(1, &format!("`{prefix}`"), |l| l.starts_with(prefix));
    }

    /// Sends `signal` to the command.
    pub fn signal(&self, signal: libc::c_int) {
        let pid = libc::pid_t::try_from(self.child.id()).expect("a pid");
        // SAFETY: signals a child of this test.
        assert_eq!(unsafe { libc::kill(pid, signal) }, 0, "kill {signal}");
    }

    /// Waits for the exit; its code (None when killed) and its stdout.
    /// Fails with `hung` (the child killed) past 600 s: a guard against a
    /// hang, not a bound on how long it may take.
    pub fn finish(self) -> (Option<i32>, String) {
        self.finish_in("the run", Duration::from_secs(600))
    }

    /// [`Run::finish`], failing with `hung` when the command has not ended
    /// 120 s after it was asked to (by a signal): a guard, not a bound.
    pub fn finish_within(self, what: &str) -> (Option<i32>, String) {
        self.finish_in(what, Duration::from_secs(120))
    }

    fn finish_in(mut self, what: &str, limit: Duration) -> (Option<i32>, String) {
        let deadline = Instant::now() + limit;
        while self.child.try_wait().expect("the child is there").is_none() {
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                let out = self.lines.lock().unwrap().join("\n");
                panic!("hung: {what} did not end within {} s:\n{out}", limit.as_secs());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let status = self.child.wait().expect("the run ends");
        self.reader.take().expect("once").join().expect("the reader ends");
        let out = self.lines.lock().unwrap().join("\n");
        (status.code(), out)
    }
}

/// The closing `N passed, M failed, K skipped` line's numbers for the last
/// target it names (`model: ...; postgres: N passed, M failed, K skipped`).
pub fn closing(out: &str) -> (usize, usize, usize) {
    let line = out.lines().rev().find(|l| l.ends_with(" skipped")).unwrap_or_else(|| panic!("no summary:\n{out}"));
    let target = line.rsplit("; ").next().unwrap_or(line);
    let n: Vec<usize> = target.split([' ', ',']).filter_map(|w| w.parse().ok()).collect();
    (n[0], n[1], n[2])
}
