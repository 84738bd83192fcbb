//! What `run` prints for a reader of CI logs: `--quiet` keeps failures and
//! the closing counts only.

mod common;
use common::Scratch;

use std::path::Path;

/// The binary in `dir` with none of the caller's settings: its exit code
/// and its stdout and stderr together.
fn reapcheck(dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    let o = common::clean_run(dir, args);
    (o.status.code(), format!("{}{}", common::stdout(&o), common::stderr(&o)))
}

#[test]
fn quiet_prints_failures_and_the_counts_only() {
    let scratch = Scratch::new("output", "quiet");
    let dir = &scratch.0;
    let (code, out) = reapcheck(dir, &["run", "--db", "sqlite", "--quiet"]);
    assert_eq!(code, Some(0), "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "the opening line and the counts: {out}");
    assert!(lines[1].starts_with("model: ") && lines[1].contains("sqlite: "), "{out}");

    // A port whose reap scan says `<=` fails the boundary scenarios: those
    // are printed with their diff, and no `ok` line is.
    let port = dir.join("port/sqlite");
    std::fs::create_dir_all(&port).expect("a port folder");
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../dialects/sqlite");
    let mut edited = false;
    for file in std::fs::read_dir(&shipped).expect("dialects/sqlite") {
        let file = file.expect("a file").path();
        let mut text = std::fs::read_to_string(&file).expect("readable");
        if file.ends_with("reaper.sql") {
            let strict = "updated_at) < :cutoff";
            assert!(text.contains(strict), "the reaper compares strictly: update this test");
            text = text.replace(strict, "updated_at) <= :cutoff");
            edited = true;
        }
        std::fs::write(port.join(file.file_name().expect("a name")), text).expect("the copy");
    }
    assert!(edited);
    let (code, out) = reapcheck(dir, &["run", "--db", "sqlite", "--dialects", "port", "-q"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.lines().any(|l| l.starts_with("FAIL     boundaries/")), "{out}");
    assert!(!out.lines().any(|l| l.starts_with("ok ") || l.starts_with("new ")), "{out}");
    assert!(out.contains("\nfailures ("), "{out}");
}

#[test]
fn list_names_every_scenario_with_its_file_and_prints_a_builtin_one() {
    let scratch = Scratch::new("output", "list");
    let dir = &scratch.0;
    let (code, out) = reapcheck(dir, &["list"]);
    assert_eq!(code, Some(0), "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines.len() > 100, "{out}");
    assert!(lines.contains(&"grace/floor-keeps-recent-beat\tbuiltin:/grace/floor-keeps-recent-beat.yaml"), "{out}");

    let (code, out) = reapcheck(dir, &["list", "--print", "--exact", "grace/floor-keeps-recent-beat"]);
    assert_eq!(code, Some(0), "{out}");
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/grace/floor-keeps-recent-beat.yaml");
    let text = std::fs::read_to_string(shipped).expect("the shipped file");
    assert_eq!(out, format!("# grace/floor-keeps-recent-beat (builtin:/grace/floor-keeps-recent-beat.yaml)\n{text}"));

    let (code, out) = reapcheck(dir, &["list", "no-such-scenario"]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("no scenario in builtin matches [\"no-such-scenario\"]"), "{out}");
}

#[test]
fn allow_skip_does_not_pass_a_run_that_judged_nothing_on_a_database() {
    let scratch = Scratch::new("output", "allow-skip");
    let (code, out) = reapcheck(&scratch.0, &["run", "--db", "postgres", "--allow-skip", "--quiet"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("no SQL ran on any database"), "{out}");
    assert!(out.contains("FAIL     every database target was skipped"), "{out}");
    // One target skipped among others that ran is what --allow-skip is for.
    let (code, out) = reapcheck(&scratch.0, &["run", "--db", "sqlite,postgres", "--allow-skip", "--quiet", "grace/"]);
    assert_eq!(code, Some(0), "{out}");
}

#[test]
fn a_url_its_driver_cannot_read_is_invalid_input_and_nothing_runs() {
    let scratch = Scratch::new("output", "bad-url");
    let mut cmd = common::clean_command(&scratch.0, &["run", "--db", "sqlite,mssql"]);
    let bad = "mssql://sa:Sekrit-1@127.0.0.1:1433/master?trustServerCertificate=maybe";
    let o = cmd.env("REAPCHECK_MSSQL_URL", bad).output().expect("the binary runs");
    let (out, err) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert_eq!(o.status.code(), Some(2), "{out}{err}");
    assert!(
        err.contains("error: REAPCHECK_MSSQL_URL: `trustServerCertificate` must be true or false: fix the URL"),
        "{err}"
    );
    assert!(!out.contains("model:") && !format!("{out}{err}").contains("Sekrit-1"), "nothing ran: {out}{err}");
}
