//! Namespaces that are gone when reapcheck says so (issue 24, item 4).
//!
//! Copies of `dialects/` with a broken namespace script (a no-op
//! `drop_namespace`, a `DROP SCHEMA` without `CASCADE`, a no-op
//! `enter_namespace`, a `drop_namespace` that errs on SQLite) must fail
//! `reapcheck check` and `reapcheck run`, naming the script and its
//! `file:line`; the shipped dialects must pass. And two runs in separate
//! PID namespaces with one host name (two containers, two CI jobs on one
//! runner) must never sweep each other's live namespaces.
//!
//! SQLite always runs; PostgreSQL and MariaDB when `REAPCHECK_POSTGRES_URL`
//! / `REAPCHECK_MARIADB_URL` are set (`.ci/run` sets both). The PID
//! namespace test needs `unshare` and root, and says so when it skips.

mod common;

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{Scratch, clean_command, root, stderr, stdout};

/// A copy of `dialects/` below `scratch`, with `from` replaced by `to` in
/// `dialect/schema.sql` (which must contain it); returns the copy's path.
fn broken_copy(scratch: &Scratch, dialect: &str, from: &str, to: &str) -> String {
    let copy = scratch.path("dialects");
    for entry in std::fs::read_dir(root().join("dialects")).expect("dialects/ is readable") {
        let dir = entry.expect("a dialect folder").path();
        let into = copy.join(dir.file_name().expect("a name"));
        std::fs::create_dir_all(&into).expect("a scratch folder");
        for file in std::fs::read_dir(&dir).expect("a dialect folder is readable") {
            let file = file.expect("a dialect file").path();
            std::fs::copy(&file, into.join(file.file_name().expect("a name"))).expect("copied");
        }
    }
    let path = copy.join(dialect).join("schema.sql");
    let text = std::fs::read_to_string(&path).expect("schema.sql");
    assert!(text.contains(from), "{dialect}/schema.sql no longer holds `{from}`: update this test");
    std::fs::write(&path, text.replacen(from, to, 1)).expect("the broken copy");
    copy.display().to_string()
}

/// The first line of SQL after the marker `needle` in `dialect/schema.sql`
/// of the shipped dialects (1-based, past comments and blank lines): the
/// `file:line` a message must name for that statement.
fn line_after(dialect: &str, needle: &str) -> usize {
    let text = std::fs::read_to_string(root().join("dialects").join(dialect).join("schema.sql")).expect("schema.sql");
    let lines: Vec<&str> = text.lines().collect();
    let marker = marker_line(dialect, needle) - 1;
    let sql = lines[marker + 1..].iter().position(|l| !l.trim().is_empty() && !l.starts_with("--")).expect("SQL");
    marker + 1 + sql + 1
}

/// The line (1-based) of `needle` in `dialect/schema.sql` of the shipped
/// dialects.
fn marker_line(dialect: &str, needle: &str) -> usize {
    let text = std::fs::read_to_string(root().join("dialects").join(dialect).join("schema.sql")).expect("schema.sql");
    text.lines().position(|l| l == needle).unwrap_or_else(|| panic!("{dialect}/schema.sql has no `{needle}`")) + 1
}

/// `(target, variable, url)` for each server target whose URL is set.
fn servers() -> Vec<(&'static str, &'static str, String)> {
    [("postgres", "REAPCHECK_POSTGRES_URL"), ("mariadb", "REAPCHECK_MARIADB_URL")]
        .into_iter()
        .filter_map(|(t, v)| std::env::var(v).ok().filter(|u| !u.is_empty()).map(|u| (t, v, u)))
        .collect()
}

/// `reapcheck args` in the workspace with only `env` naming servers.
fn reapcheck(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = clean_command(&root(), args);
    cmd.envs(env.iter().copied());
    cmd.output().expect("the binary runs")
}

/// `check --dialects copy` with the URL of `target`: exit 1, and a FAIL
/// line for `target` naming `statement` at `origin`.
fn assert_check_fails(copy: &str, target: &str, env: &[(&str, &str)], statement: &str, origin: &str) {
    let o = reapcheck(&["check", "--dialects", copy], env);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "check passed a broken {statement} on {target}:\n{out}{}", stderr(&o));
    let fail = out
        .lines()
        .find(|l| l.starts_with("FAIL namespace scripts of ") && l.contains(&format!(" on {target} [")))
        .unwrap_or_else(|| panic!("no FAIL line for {target}:\n{out}"));
    assert!(fail.contains(&format!("{statement}: ")), "the script: {fail}");
    assert!(fail.contains(&format!("/{origin}: {statement} ")), "the script's file:line ({origin}): {fail}");
}

/// `run --dialects copy --db target` of one scenario: exit 1, naming
/// `statement` at `origin`.
fn assert_run_fails(copy: &str, target: &str, env: &[(&str, &str)], statement: &str, origin: &str) {
    let o = reapcheck(&["run", "--db", target, "--dialects", copy, "--coverage-min", "0", "grace/"], env);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "run passed a broken {statement} on {target}:\n{out}{}", stderr(&o));
    assert!(out.contains(&format!("failed: {statement}: ")), "the script:\n{out}");
    assert!(out.contains(&format!("/{origin}: {statement} ")), "the script's file:line ({origin}):\n{out}");
}

/// What the failed proofs left on `target` (the broken script could not
/// remove them) goes with the shipped SQL: a sweep of a later run removes
/// every namespace of this host whose process is gone.
fn sweep_leftovers(target: &str, env: &[(&str, &str)]) {
    let o = reapcheck(&["run", "--db", target, "--coverage-min", "0", "--exact", "grace/never-beat"], env);
    // Not asserted free of warnings: a sweep of another process at the
    // same moment may have dropped a leftover first.
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
}

#[test]
fn the_shipped_dialects_prove_their_namespace_scripts_on_every_reachable_target() {
    let servers = servers();
    let env: Vec<(&str, &str)> = servers.iter().map(|(_, v, u)| (*v, u.as_str())).collect();
    let dialects = root().join("dialects").display().to_string();
    let o = reapcheck(&["check", "--dialects", &dialects], &env);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    let passed = |target: &str| {
        out.lines().any(|l| {
            l.starts_with("namespace scripts of ")
                && l.contains(&format!(" on {target} ["))
                && l.ends_with("create_namespace, enter_namespace and drop_namespace do their job")
        })
    };
    assert!(passed("sqlite"), "{out}");
    for (target, ..) in &servers {
        assert!(passed(target), "{out}");
    }
    // Never reported as passing: a target with no URL is not checked.
    assert!(
        out.lines().any(|l| l == "not checked: namespace scripts of mssql on mssql: REAPCHECK_MSSQL_URL is not set"),
        "{out}"
    );
    // An unreachable server is not checked either, and not a pass.
    let o = reapcheck(
        &["check", "--dialects", &dialects],
        &[("REAPCHECK_POSTGRES_URL", "postgres://nobody@127.0.0.1:1/none?connect_timeout=2")],
    );
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    assert!(out.lines().any(|l| l.starts_with("not checked: namespace scripts of postgres on postgres: cannot reach")));
    // --offline proves nothing and connects to nothing.
    let o = reapcheck(&["check", "--offline", "--dialects", &dialects], &env);
    assert_eq!(o.status.code(), Some(0));
    assert!(!stdout(&o).contains("namespace scripts of"), "{}", stdout(&o));
}

/// SQLite's namespace scripts are blank (each run is a new in-memory
/// database), so only a script that errs can be caught there.
#[test]
fn a_drop_namespace_that_errs_fails_check_on_sqlite() {
    let scratch = Scratch::new("namespaces", "sqlite-drop");
    let marker = "-- name: drop_namespace";
    let copy = broken_copy(&scratch, "sqlite", marker, &format!("{marker}\nSELECT no_such_function()"));
    // The inserted line comes right after the marker.
    let origin = format!("sqlite/schema.sql:{}", marker_line("sqlite", marker) + 1);
    assert_check_fails(&copy, "sqlite", &[], "drop_namespace", &origin);
}

#[test]
fn a_no_op_drop_namespace_fails_check_and_run() {
    for (target, variable, url) in servers() {
        let env = [(variable, url.as_str())];
        let (dialect, drop) = match target {
            "postgres" => ("postgres", "DROP SCHEMA {namespace} CASCADE"),
            _ => ("mysql", "DROP DATABASE {namespace}"),
        };
        let scratch = Scratch::new("namespaces", &format!("no-op-drop-{target}"));
        let copy = broken_copy(&scratch, dialect, drop, "SELECT 1");
        let origin = format!("{dialect}/schema.sql:{}", line_after(dialect, "-- name: drop_namespace"));
        assert_check_fails(&copy, target, &env, "drop_namespace", &origin);
        assert_run_fails(&copy, target, &env, "drop_namespace", &origin);
        sweep_leftovers(target, &env);
    }
}

#[test]
fn a_drop_schema_without_cascade_fails_check_and_run_on_postgres() {
    let Some((target, variable, url)) = servers().into_iter().find(|(t, ..)| *t == "postgres") else {
        eprintln!("skipped: REAPCHECK_POSTGRES_URL is not set");
        return;
    };
    let env = [(variable, url.as_str())];
    let scratch = Scratch::new("namespaces", "no-cascade");
    let copy = broken_copy(&scratch, "postgres", "DROP SCHEMA {namespace} CASCADE", "DROP SCHEMA {namespace}");
    let origin = format!("postgres/schema.sql:{}", line_after("postgres", "-- name: drop_namespace"));
    assert_check_fails(&copy, target, &env, "drop_namespace", &origin);
    assert_run_fails(&copy, target, &env, "drop_namespace", &origin);
    sweep_leftovers(target, &env);
}

#[test]
fn a_no_op_enter_namespace_fails_check_and_run() {
    for (target, variable, url) in servers() {
        let env = [(variable, url.as_str())];
        let (dialect, enter) = match target {
            "postgres" => ("postgres", "SET search_path TO {namespace}"),
            _ => ("mysql", "USE {namespace};\n"),
        };
        let scratch = Scratch::new("namespaces", &format!("no-op-enter-{target}"));
        let copy = broken_copy(&scratch, dialect, enter, if target == "postgres" { "SELECT 1" } else { "" });
        let origin = format!("{dialect}/schema.sql:{}", line_after(dialect, "-- name: enter_namespace"));
        assert_check_fails(&copy, target, &env, "enter_namespace", &origin);
        assert_run_fails(&copy, target, &env, "enter_namespace", &origin);
    }
}

/// Whether `unshare --pid --fork` works here (Linux, root or user
/// namespaces allowed).
fn unshare_works() -> bool {
    Command::new("unshare")
        .args(["--pid", "--fork", "true"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// `reapcheck args` in a PID namespace of its own (same host name: only the
/// PID namespace is new), after `burn` throwaway processes so that its pid
/// there is `burn + 2`, a pid no process has in another new PID namespace.
fn in_pid_namespace(burn: usize, args: &[&str], env: &[(&str, &str)]) -> Command {
    in_pid_namespace_running(burn, "\"$0\" \"$@\"", args, env)
}

/// [`in_pid_namespace`] with the binary run as `run` says (a shell
/// command over `"$0" "$@"`).
fn in_pid_namespace_running(burn: usize, run: &str, args: &[&str], env: &[(&str, &str)]) -> Command {
    let script = format!("i=0; while [ $i -lt {burn} ]; do /bin/true; i=$((i+1)); done; {run}");
    let mut cmd = Command::new("unshare");
    cmd.args(["--pid", "--fork", "sh", "-c", &script, env!("CARGO_BIN_EXE_reapcheck")]).args(args);
    cmd.current_dir(root()).env_remove("CI");
    for (key, _) in std::env::vars().filter(|(k, _)| k.starts_with("REAPCHECK_")) {
        cmd.env_remove(key);
    }
    cmd.envs(env.iter().copied());
    cmd
}

/// Two runs with one host name in two PID namespaces (two containers, two
/// CI jobs on one runner): the long one's process id means nothing in the
/// other's PID namespace, where that pid is free. Before namespace names
/// carried the PID namespace, each sweep of the short runs removed the
/// long run's live namespaces (5-9 false failures per round). Now the long
/// run fails nothing, however many sweeps run beside it.
#[test]
fn two_runs_in_separate_pid_namespaces_never_sweep_each_other() {
    let Some((target, variable, url)) = servers().into_iter().find(|(t, ..)| *t == "postgres") else {
        eprintln!("skipped: REAPCHECK_POSTGRES_URL is not set");
        return;
    };
    if !unshare_works() {
        eprintln!("skipped: `unshare --pid --fork` does not work here (needs Linux and root)");
        return;
    }
    let env = [(variable, url.as_str())];
    // The long side plays the corpus again and again until told to stop, so
    // the sweeps run beside a live run however fast the corpus is (a single
    // run once ended before two sweeps, on a fast machine).
    let stop = std::env::temp_dir().join(format!("reapcheck-pidns-stop-{}", std::process::id()));
    let _ = std::fs::remove_file(&stop);
    let until_stopped = "while [ ! -e \"$REAPCHECK_TEST_STOP\" ]; do \"$0\" \"$@\" || exit $?; done";
    let long_args = ["run", "--db", target, "--jobs", "2", "--coverage-min", "0"];
    let long = in_pid_namespace_running(300, until_stopped, &long_args, &env)
        .env("REAPCHECK_TEST_STOP", &stop)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the long run starts");
    let started = Instant::now();
    // Give it time to make its namespaces, then sweep beside it.
    std::thread::sleep(Duration::from_secs(2));
    let mut rounds = 0;
    let waiter = std::thread::spawn(move || long.wait_with_output().expect("the long run ends"));
    while rounds < 4 && !waiter.is_finished() && started.elapsed() < Duration::from_secs(600) {
        let sweep = ["run", "--db", target, "--coverage-min", "0", "--exact", "grace/never-beat"];
        let sweeper = in_pid_namespace(0, &sweep, &env).output().expect("a sweeping run");
        assert_eq!(sweeper.status.code(), Some(0), "{}{}", stdout(&sweeper), stderr(&sweeper));
        rounds += 1;
    }
    std::fs::write(&stop, "").expect("the stop file");
    let o = waiter.join().expect("the waiter");
    let _ = std::fs::remove_file(&stop);
    let out = stdout(&o);
    let failures = out.lines().filter(|l| l.starts_with("FAIL")).count();
    eprintln!("{rounds} sweeping runs beside the long run; {failures} failures in the long run");
    assert!(rounds >= 2, "the long runs ended (failed) before two sweeps ran beside them: {out}");
    assert_eq!(failures, 0, "a sweep in another PID namespace removed the long run's namespaces:\n{out}");
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
}
