//! What a user meets outside reapcheck's own repository: the snapshots
//! `run --accept` and `init` write there name a source that exists for the
//! user, the missing-snapshot hint names only commands that work there, an
//! orphaned snapshot is reported, a store that keeps whole seconds without
//! saying so gets one hint naming `time_resolution`, and an interrupted run
//! does not report coverage as missing.

mod common;
use common::{Scratch, root, stderr, stdout};

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The binary in `dir`, with no target, setting or CI configured.
fn command_in(dir: &Path, args: &[&str]) -> Command {
    common::clean_command(dir, args)
}

fn reapcheck_in(dir: &Path, args: &[&str]) -> Output {
    common::clean_run(dir, args)
}

const IDLE: &str = "description: an idle queue\nclasses:\n  C: { timeout: 300 }\njobs: []\nsteps: [ reap ]\n";

/// A user's project: `reapcheck.toml` naming `scenarios/`, with scenario
/// `x/idle` and no snapshot.
fn project(tag: &str) -> Scratch {
    let scratch = Scratch::new("user_path", tag);
    std::fs::write(scratch.0.join("reapcheck.toml"), "scenarios = [\"scenarios\"]\n").expect("written");
    std::fs::create_dir_all(scratch.0.join("scenarios/x")).expect("a folder");
    std::fs::write(scratch.0.join("scenarios/x/idle.yaml"), IDLE).expect("written");
    scratch
}

#[test]
fn snapshots_written_in_a_user_project_name_the_command_not_reapcheck_s_test_file() {
    let p = project("accept");
    let out = reapcheck_in(&p.0, &["run", "--db", "sqlite", "--coverage-min", "0"]);
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    let hint = "2 results have no committed snapshot yet: `reapcheck run --accept` writes them\n";
    assert!(stdout(&out).contains(hint), "{}", stdout(&out));
    assert!(!stdout(&out).contains("cargo insta"), "cargo insta review works only in reapcheck's repository");
    let out = reapcheck_in(&p.0, &["run", "--db", "sqlite", "--coverage-min", "0", "--accept"]);
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    let snap = std::fs::read_to_string(p.0.join("scenarios/x/snapshots/idle.snap")).expect("written");
    assert!(
        snap.starts_with("---\nsource: reapcheck run --accept\ninput_file: scenarios/x/idle.yaml\n---\n"),
        "{snap}"
    );

    // `init`'s example snapshot, in a folder that is no repository of reapcheck.
    let dir = Scratch::new("user_path", "init");
    let out = reapcheck_in(&dir.0, &["init"]);
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    let snap = std::fs::read_to_string(dir.0.join("reapcheck/scenarios/snapshots/stopped-heartbeat.snap"))
        .expect("init writes its example's snapshot");
    assert!(snap.starts_with("---\nsource: reapcheck run --accept\n"), "{snap}");
}

#[test]
fn in_reapcheck_s_repository_the_hint_names_cargo_insta_review_and_snapshots_keep_insta_s_source() {
    let set = Scratch::new("user_path", "repo-hint");
    std::fs::write(set.0.join("idle.yaml"), IDLE).expect("written");
    let scenarios = set.0.display().to_string();
    let out = reapcheck_in(&root(), &["run", "--db", "sqlite", "--coverage-min", "0", "--scenarios", &scenarios]);
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("writes them (or `cargo insta review` after the tests)"), "{}", stdout(&out));
    // Every committed snapshot keeps the header insta writes here.
    for (name, path) in reapcheck::scenario::discover(&root().join("scenarios")).expect("the corpus") {
        let snap = reapcheck::snapshot::path(&path, None);
        let text = std::fs::read_to_string(&snap).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(text.starts_with("---\nsource: harness/tests/scenarios.rs\n"), "{}", snap.display());
    }
}

#[test]
fn an_orphaned_snapshot_fails_check_and_warns_in_a_full_run_and_builtin_snapshots_are_no_orphans() {
    let p = project("orphans");
    let snapshots = p.0.join("scenarios/x/snapshots");
    let out = reapcheck_in(&p.0, &["run", "--db", "sqlite", "--coverage-min", "0", "--accept"]);
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    let out = reapcheck_in(&p.0, &["check"]);
    assert_eq!(out.status.code(), Some(0), "no orphan yet: {}{}", stdout(&out), stderr(&out));
    // The scenario is renamed, its snapshot is not; a divergence's too.
    std::fs::rename(p.0.join("scenarios/x/idle.yaml"), p.0.join("scenarios/x/quiet.yaml")).expect("renamed");
    std::fs::copy(snapshots.join("idle.snap"), snapshots.join("idle@mysql.snap")).expect("copied");
    let out = reapcheck_in(&p.0, &["check"]);
    assert_eq!(out.status.code(), Some(2), "{}{}", stdout(&out), stderr(&out));
    for snap in ["idle.snap", "idle@mysql.snap"] {
        let said = format!(
            "error: {} is an orphaned snapshot: its scenario {} does not exist (deleted or renamed); delete the \
             snapshot, or restore the scenario",
            Path::new("scenarios/x/snapshots").join(snap).display(),
            Path::new("scenarios/x/idle.yaml").display()
        );
        assert!(stderr(&out).contains(&said), "expected `{said}`:\n{}", stderr(&out));
    }
    let out = reapcheck_in(&p.0, &["run", "--db", "sqlite", "--coverage-min", "0"]);
    assert_eq!(out.status.code(), Some(0), "a warning in run: {}{}", stdout(&out), stderr(&out));
    assert_eq!(stdout(&out).matches("warning: scenarios/x/snapshots/idle").count(), 2, "{}", stdout(&out));
    // A filtered run cannot tell a scenario that is gone from one filtered out.
    let out = reapcheck_in(&p.0, &["run", "--db", "sqlite", "--coverage-min", "0", "quiet"]);
    assert!(!stdout(&out).contains("orphaned"), "{}", stdout(&out));
    // The builtin corpus, from the user's project and in this repository: none.
    let out = reapcheck_in(&p.0, &["check", "--scenarios", "builtin"]);
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    let out = reapcheck_in(&root(), &["check"]);
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    assert!(!stderr(&out).contains("orphaned"), "{}", stderr(&out));
}

/// A copy of the SQLite dialect below `scratch` with `edit` applied to each
/// `.sql` file's text; the `--dialects` folder.
fn sqlite_copy(scratch: &Scratch, edit: impl Fn(&str) -> String) -> String {
    let dir = scratch.0.join("dialects/sqlite");
    std::fs::create_dir_all(&dir).expect("a folder");
    for entry in std::fs::read_dir(root().join("dialects/sqlite")).expect("the sqlite dialect") {
        let path = entry.expect("an entry").path();
        let text = std::fs::read_to_string(&path).expect("readable");
        let text = if path.extension().is_some_and(|e| e == "sql") { edit(&text) } else { text };
        std::fs::write(dir.join(path.file_name().expect("a name")), text).expect("written");
    }
    scratch.0.join("dialects").display().to_string()
}

/// `sql` with every bound instant truncated to a whole second before it is
/// stored or compared (instants are integer microseconds in this dialect):
/// a queue whose store keeps whole seconds.
fn whole_seconds(sql: &str) -> String {
    let params = ["now", "heartbeat_at", "run_at", "updated_at", "expires_at", "cutoff"];
    let mut out = String::new();
    let mut rest = sql;
    while let Some(at) = rest.find(':') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let word = after.find(|c: char| !c.is_ascii_alphanumeric() && c != '_').unwrap_or(after.len());
        if params.contains(&&after[..word]) {
            out.push_str(&format!("(:{} / 1000000 * 1000000)", &after[..word]));
        } else {
            out.push(':');
            out.push_str(&after[..word]);
        }
        rest = &after[word..];
    }
    out.push_str(rest);
    out
}

#[test]
fn a_whole_second_store_without_time_resolution_gets_one_hint_and_a_wrong_comparison_gets_none() {
    let scratch = Scratch::new("user_path", "whole-second");
    let dialects = sqlite_copy(&scratch, whole_seconds);
    let out = reapcheck_in(&root(), &["run", "--db", "sqlite", "--quiet", "--dialects", &dialects]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    let hints: Vec<&str> = text.lines().filter(|l| l.starts_with("hint: ")).collect();
    assert_eq!(hints.len(), 1, "{text}");
    let hint = hints[0];
    assert!(hint.contains("failures on sqlite differ only in instants that agree when truncated to whole seconds"));
    assert!(hint.contains("declare `time_resolution = \"1s\"`"), "{hint}");
    assert!(hint.contains(&format!("in {dialects}/sqlite/dialect.toml")), "{hint}");
    let count: usize = hint["hint: ".len()..].split(' ').next().and_then(|n| n.parse().ok()).expect("a count");
    assert!(count >= 20, "{hint}");
    let last = text.lines().last().unwrap_or_default();
    assert!(text.find(hint) > text.find("FAIL "), "the hint comes after the failures:\n{text}");
    assert!(last.starts_with("model: "), "the closing line stays last: {last}");

    // Declared, the same store passes: the hint named the right knob.
    let toml = "[time_resolution]\nvalue = \"1s\"\nreason = \"the store keeps whole seconds\"\n";
    std::fs::write(scratch.0.join("dialects/sqlite/dialect.toml"), toml).expect("written");
    let out = reapcheck_in(&root(), &["run", "--db", "sqlite", "--quiet", "--dialects", &dialects]);
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));

    // A `<=` for `<` fails scenarios too, with no instant to blame.
    let scratch = Scratch::new("user_path", "le-for-lt");
    let dialects = sqlite_copy(&scratch, |sql| sql.replace("< :cutoff", "<= :cutoff"));
    let out = reapcheck_in(&root(), &["run", "--db", "sqlite", "--quiet", "--dialects", &dialects]);
    assert_eq!(out.status.code(), Some(1), "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("FAIL "), "{}", stdout(&out));
    assert!(!stdout(&out).contains("time_resolution"), "{}", stdout(&out));
}

#[test]
fn a_failure_names_its_sql_by_a_path_that_opens_where_the_command_ran_and_says_how_to_read_a_builtin_scenario() {
    // A user's project running the builtin corpus on its own (broken) port.
    let scratch = Scratch::new("user_path", "paths");
    sqlite_copy(&scratch, |sql| sql.replace("< :cutoff", "<= :cutoff"));
    std::fs::write(scratch.0.join("reapcheck.toml"), "dialects = \"dialects\"\nscenarios = [\"builtin\"]\n")
        .expect("written");
    let out = reapcheck_in(&scratch.0, &["run", "--db", "sqlite", "--exact", "boundaries/claim-window-exact"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    // The statement's first line of SQL (below its marker and comment),
    // relative to the project, where the user's editor opens it.
    let reaper = std::fs::read_to_string(scratch.0.join("dialects/sqlite/reaper.sql")).expect("readable");
    let marker = reaper.lines().position(|l| l == "-- name: reap_retry").expect("reap_retry") + 1;
    assert!(text.contains(&format!("reap_retry (dialects/sqlite/reaper.sql:{}) ", marker + 1)), "{text}");
    assert!(
        text.contains(
            "builtin:/boundaries/claim-window-exact.yaml:1: scenario file \
             (reapcheck list --print boundaries/claim-window-exact)"
        ),
        "{text}"
    );
    let listed = reapcheck_in(&scratch.0, &["list", "--print", "boundaries/claim-window-exact"]);
    assert!(stdout(&listed).contains("description:"), "the hint's command prints it: {}", stdout(&listed));
}

/// SIGINT while a sqlite case is in flight, as `harness/tests/interrupt.rs`
/// interrupts runs: the binary's stdout is read line by line and the signal
/// is sent once a given case has printed. One scenario (`b-slow`, 9,900
/// stale jobs read back after each of 30 reaps) keeps sqlite busy for
/// seconds, so the signal lands while it runs, whatever the machine's
/// speed; the cases after it never start.
#[cfg(unix)]
#[test]
fn an_interrupted_run_says_coverage_was_not_judged_instead_of_listing_statements() {
    let set = Scratch::new("user_path", "interrupted");
    std::fs::write(set.0.join("a-fast.yaml"), IDLE).expect("written");
    // Within the limits `check` enforces (10,000 rows; docs/scenario-format.md),
    // busy for seconds: every one of its 30 steps reads the 9,900 rows back.
    let many = format!(
        "description: many stale jobs, so that sqlite is busy when the run is interrupted\n\
         classes:\n  Work: {{ timeout: 300 }}\njobs:\n\
         - {{ id: j, count: 3300, class: Work, status: processing, attempts: 1, claimed: -2h }}\n\
         - {{ id: k, count: 3300, class: Work, status: processing, attempts: 1, claimed: -2h }}\n\
         - {{ id: l, count: 3300, class: Work, status: processing, attempts: 1, claimed: -2h }}\n\
         steps: [ {} ]\n",
        vec!["reap"; 30].join(", ")
    );
    std::fs::write(set.0.join("b-slow.yaml"), many).expect("written");
    std::fs::write(set.0.join("c-fast.yaml"), IDLE).expect("written");
    // Its own scenarios first, then the corpus: run to the end, coverage would pass.
    let sets = format!("{},scenarios", set.0.display());
    let args = ["run", "--db", "sqlite", "--jobs", "1", "--coverage", "--scenarios", &sets];
    let mut child =
        command_in(&root(), &args).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().expect("the binary starts");
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = lines.clone();
    let stdout = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            sink.lock().unwrap().push(line);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(300);
    while !lines.lock().unwrap().iter().any(|l| l.contains("a-fast  on sqlite")) {
        assert!(Instant::now() < deadline, "a-fast did not run on sqlite: {:?}", lines.lock().unwrap());
        std::thread::sleep(Duration::from_millis(5));
    }
    let pid = libc::pid_t::try_from(child.id()).expect("a pid");
    // SAFETY: signals a child of this test.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0, "kill");
    let status = child.wait().expect("the run ends");
    reader.join().expect("the reader ends");
    let out = lines.lock().unwrap().join("\n");
    assert_eq!(status.code(), Some(130), "{out}");
    assert!(out.contains("skipped: c-fast  on sqlite"), "the signal came after the run: {out}");
    assert!(out.contains("coverage not judged: the run was interrupted by SIGINT, so not every scenario ran"), "{out}");
    assert!(!out.contains("is executed by"), "no statement is listed as run by too few:\n{out}");
    assert!(!out.contains("FAIL     coverage"), "{out}");
    assert!(!out.contains("coverage on sqlite"), "no partial table or judgement:\n{out}");
}
