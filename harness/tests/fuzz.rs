//! `reapcheck fuzz` as a user meets it: a green run reports its rate, a
//! deliberately broken dialect is caught and shrunk to a small scenario
//! file whose printed rerun command fails (and passes on the real SQL), and
//! bad input exits like `run` does.

mod common;
use common::Scratch;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use reapcheck::scenario::parse_file;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().expect("the workspace exists")
}

/// Runs the binary in the workspace with no target configured but `env`.
fn reapcheck(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_reapcheck"));
    cmd.args(args).current_dir(root()).env_remove("REAPCHECK_REQUIRE");
    for t in reapcheck::target::Target::ALL {
        cmd.env_remove(t.url_variable());
    }
    cmd.envs(env.iter().copied()).output().expect("the binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A copy of the SQLite dialect whose staleness guard is `<=` instead of the
/// spec's strict `<`: a job exactly at its cutoff is reaped.
fn non_strict_sqlite(scratch: &Scratch) -> String {
    let dir = scratch.0.join("dialects/sqlite");
    std::fs::create_dir_all(&dir).unwrap();
    let (from, to) = ("COALESCE(heartbeat_at, updated_at) < :cutoff", "COALESCE(heartbeat_at, updated_at) <= :cutoff");
    for entry in std::fs::read_dir(root().join("dialects/sqlite")).unwrap() {
        let path = entry.unwrap().path();
        let mut text = std::fs::read_to_string(&path).unwrap();
        if path.file_name().unwrap() == "reaper.sql" {
            assert!(text.contains(from), "reaper.sql no longer contains {from:?}");
            text = text.replace(from, to);
        }
        std::fs::write(dir.join(path.file_name().unwrap()), text).unwrap();
    }
    scratch.0.join("dialects").display().to_string()
}

#[test]
fn a_green_run_names_the_seed_and_the_rate() {
    let o = reapcheck(&["fuzz", "--db", "sqlite", "--cases", "40", "--seed", "11"], &[]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.starts_with("fuzz: seed 11 (given), 40 cases per target\n"), "{out}");
    assert!(out.contains("ok       sqlite [sqlite 3."), "{out}");
    assert!(out.contains(": 40 cases agree with the model"), "{out}");
    assert!(out.contains("cases per second: sqlite "), "{out}");
    assert!(out.ends_with("1 targets agreed with the model, 0 failed, 0 skipped\n"), "{out}");
    let random = stdout(&reapcheck(&["fuzz", "--cases", "1"], &[]));
    assert!(random.starts_with("fuzz: seed ") && random.contains(" (random), 1 cases per target"), "{random}");
}

#[test]
fn a_non_strict_guard_is_found_shrunk_and_saved_with_a_rerun_that_fails() {
    let scratch = Scratch::new("fuzz", "broken");
    let dialects = non_strict_sqlite(&scratch);
    let out_dir = scratch.0.join("found").display().to_string();
    let o = reapcheck(
        &["fuzz", "--db", "sqlite", "--cases", "300", "--seed", "1", "--dialects", &dialects, "--out", &out_dir],
        &[],
    );
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("FAIL     sqlite [sqlite 3."), "{out}");
    assert!(out.contains("sqlite disagrees with the model"), "{out}");
    let file = Path::new(&out_dir).join("sqlite-1.yaml");
    assert!(out.contains(&format!("    {}:1: the shrunk case", file.display())), "{out}");
    let rerun = format!("reapcheck run --db sqlite --scenarios {out_dir} --dialects {dialects} --exact sqlite-1");
    assert!(out.contains(&format!("    rerun: {rerun}\n")), "{out}");
    let explain = format!("reapcheck explain {} --db sqlite --dialects {dialects}", file.display());
    assert!(out.contains(&format!("    step by step beside the model: {explain}\n")), "{out}");

    // Shrunk: one job and a reap or two are enough to show a `<=` guard.
    let shrunk = parse_file("sqlite-1", &file).unwrap().scenario;
    assert_eq!(shrunk.jobs.len(), 1, "{shrunk:#?}");
    assert!((1..=2).contains(&shrunk.steps.len()), "{shrunk:#?}");
    assert!(shrunk.steps.iter().all(|s| s.keyword() == "reap"), "{shrunk:#?}");
    assert!(shrunk.description.contains(&rerun), "{}", shrunk.description);

    let args: Vec<&str> = rerun.split(' ').skip(1).collect();
    let again = reapcheck(&args, &[]);
    assert_eq!(again.status.code(), Some(1), "{}", stdout(&again));
    assert!(stdout(&again).contains("FAIL     sqlite-1  on sqlite"), "{}", stdout(&again));
    // A saved case has no snapshot yet; under CI=true that alone fails the
    // model, so this run checks agreement only.
    let fixed =
        reapcheck(&["run", "--db", "sqlite", "--scenarios", &out_dir, "--exact", "sqlite-1"], &[("CI", "false")]);
    assert!(fixed.status.success(), "the real SQL agrees with the model: {}", stdout(&fixed));
}

#[test]
fn an_unreachable_target_fails_like_run() {
    let url = [("REAPCHECK_POSTGRES_URL", "postgres://nobody@127.0.0.1:1/none")];
    let o = reapcheck(&["fuzz", "--db", "postgres", "--cases", "5", "--seed", "1"], &url);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("FAIL     postgres: not run: cannot reach postgres://nobody@127.0.0.1:1/none"), "{out}");

    let required = reapcheck(&["fuzz", "--db", "postgres", "--cases", "5"], &[("REAPCHECK_REQUIRE", "postgres")]);
    assert_eq!(required.status.code(), Some(1), "{}", stdout(&required));
    assert!(stdout(&required).contains("FAIL     postgres (required by REAPCHECK_REQUIRE): not run"));

    let skipped = reapcheck(&["fuzz", "--db", "postgres", "--cases", "5"], &[]);
    assert_eq!(skipped.status.code(), Some(1), "a run that compared nothing fails: {}", stdout(&skipped));
    assert!(stdout(&skipped).contains("skipped: postgres: no REAPCHECK_POSTGRES_URL"), "{}", stdout(&skipped));
    assert!(stdout(&skipped).contains("no target ran: nothing was compared"), "{}", stdout(&skipped));
}

#[test]
fn invalid_arguments_exit_2() {
    for args in [&["fuzz", "--db", "oracle"][..], &["fuzz", "--cases", "0"], &["fuzz", "--dialects", "/nonexistent"]] {
        let o = reapcheck(args, &[]);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stdout(&o));
        assert!(stdout(&o).is_empty(), "{args:?}: nothing may run: {}", stdout(&o));
    }
}
