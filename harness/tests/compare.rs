//! `reapcheck bench --compare` (issue 22, item 7): the captured script of a
//! few scenarios replays through `sqlite3` with the rows reapcheck saw
//! changed, and the command prints its ratio lines in the documented
//! format (docs/performance.md). Never a ratio or a time asserted.

mod common;

use std::process::Command;

use common::{Scratch, clean_run, stderr, stdout};

// A legacy-schema scenario runs on a session of its own between two that
// share a kept lane: the replay must send the last one to the first
// session's database, not to the legacy one's.
const SCENARIOS: &str = "grace/floor,grace/never-beat,leases/,schema/legacy-claim-guards,time/after-2038";

#[test]
fn the_captured_script_replays_through_sqlite3_with_the_rows_reapcheck_saw() {
    let dir = Scratch::new("compare", "replay");
    let out = dir.path("out");
    let args = ["bench", "--compare", "--rounds", "1", "--db", "sqlite", "--only", SCENARIOS, "--scripts"];
    let o = clean_run(&dir.0, &[&args[..], &[out.to_str().unwrap()]].concat());
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let events = reapcheck::compare::read_capture(&out.join("sqlite.jsonl")).expect("a capture");
    let sql: Vec<(String, String)> = events
        .into_iter()
        .filter_map(|e| match e {
            reapcheck::compare::capture::Event::Sql { sql, returned, .. } => Some((sql, returned)),
            _ => None,
        })
        .collect();
    assert!(sql.len() > 50, "a few scenarios' statements: {}", sql.len());
    // `.changes on`: sqlite3 prints the rows changed after each statement
    // that succeeds, so one line per statement that did for reapcheck.
    let script = format!(".changes on\n{}", std::fs::read_to_string(out.join("sqlite.sql")).unwrap());
    let replay = Command::new("sqlite3")
        .arg(":memory:")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write as _;
            child.stdin.take().unwrap().write_all(script.as_bytes())?;
            child.wait_with_output()
        })
        .expect("sqlite3 runs (apt-get install sqlite3)");
    let printed = String::from_utf8_lossy(&replay.stdout);
    let changes: Vec<u64> = printed
        .lines()
        .filter_map(|l| l.strip_prefix("changes: "))
        .map(|l| l.split_whitespace().next().unwrap().parse().unwrap())
        .collect();
    let succeeded: Vec<&(String, String)> = sql.iter().filter(|(_, r)| r != "failed").collect();
    let failed = sql.len() - succeeded.len();
    assert_eq!(
        reapcheck::compare::client_errors(&String::from_utf8_lossy(&replay.stderr)),
        failed,
        "the client fails where reapcheck's run did, nowhere else: {}",
        String::from_utf8_lossy(&replay.stderr)
    );
    assert_eq!(changes.len(), succeeded.len(), "one statement executed by the client for each of reapcheck's");
    let mut compared = 0;
    for ((sql, returned), n) in succeeded.iter().zip(&changes) {
        let verb = sql.trim_start().split_whitespace().next().unwrap_or("").to_ascii_uppercase();
        if ["INSERT", "UPDATE", "DELETE"].contains(&verb.as_str()) && returned.starts_with("changed ") {
            assert_eq!(format!("changed {n}"), *returned, "{sql}");
            compared += 1;
        }
    }
    assert!(compared > 20, "row counts compared: {compared}");
}

#[test]
fn compare_prints_its_ratio_lines_in_the_documented_format() {
    let dir = Scratch::new("compare", "format");
    let out = dir.path("out");
    let args = ["bench", "--compare", "--rounds", "1", "--db", "sqlite", "--only", "grace/floor", "--scripts"];
    let o = clean_run(&dir.0, &[&args[..], &[out.to_str().unwrap()]].concat());
    let text = stdout(&o);
    assert!(o.status.success(), "{text}{}", stderr(&o));
    let ratio = regex::Regex::new(
        r"(?m)^sqlite: run --jobs 1 / sqlite3: \d+\.\d\dx   run / sqlite3: \d+\.\d\dx   \(medians of 1 per-round ratios\)$",
    )
    .unwrap();
    assert!(ratio.is_match(&text), "{text}");
    let times = regex::Regex::new(
        r"(?m)^sqlite: medians sqlite3 \d+\.\d\ds   run --jobs 1 \d+\.\d\ds   run \d+\.\d\ds   \(load average \S+ \S+ \S+ before, \S+ \S+ \S+ after; \d+ CPUs\)$",
    )
    .unwrap();
    assert!(times.is_match(&text), "{text}");
}

#[test]
fn without_scripts_its_own_folder_is_removed_when_every_target_was_compared() {
    let dir = Scratch::new("compare", "removed");
    let tmp = dir.path("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let args = ["bench", "--compare", "--rounds", "1", "--db", "sqlite", "--only", "grace/floor"];
    let o = common::clean_command(&dir.0, &args).env("TMPDIR", &tmp).output().unwrap();
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("1 round of sqlite3"), "one round, in the singular: {}", stdout(&o));
    let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().map(|e| e.unwrap().path()).collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    // A failure keeps its folder, and says where (here: no sqlite3 on PATH).
    let empty = dir.path("no-clients");
    std::fs::create_dir_all(&empty).unwrap();
    let o = common::clean_command(&dir.0, &["bench", "--compare", "--db", "sqlite", "--rounds", "1"])
        .env("TMPDIR", &tmp)
        .env("PATH", &empty)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "no client: {}{}", stdout(&o), stderr(&o));
    let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(stdout(&o).contains(&format!("kept {}", left[0].display())), "{}", stdout(&o));
    std::fs::remove_dir_all(&left[0]).unwrap();
    // Refused inputs make no folder at all.
    let o =
        common::clean_command(&dir.0, &["bench", "--compare", "--db", "oracle"]).env("TMPDIR", &tmp).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0);
}

/// SIGINT after the capture: no new round starts, the command says so and
/// exits 130 (it ran every round to its end before, and exited 0).
#[cfg(unix)]
#[test]
fn a_signal_stops_compare_between_rounds_with_exit_130() {
    use std::io::BufRead as _;
    let dir = Scratch::new("compare", "signal");
    let out = dir.path("out");
    let args = ["bench", "--compare", "--rounds", "10000", "--db", "sqlite", "--only", "grace/floor", "--scripts"];
    let mut child = common::clean_command(&dir.0, &[&args[..], &[out.to_str().unwrap()]].concat())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("reapcheck starts");
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    // The line after the capture: the rounds are starting.
    let mut seen = String::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        seen.push_str(&line);
        seen.push('\n');
        if line.contains(" rounds of sqlite3") {
            break;
        }
    }
    assert!(seen.contains(" rounds of sqlite3"), "{seen}");
    // SAFETY: kill(2) on the child's pid, which has not been waited for.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) }, 0);
    // 10,000 rounds take minutes: ending within the guard is stopping.
    let guard = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(std::time::Instant::now() < guard, "bench --compare did not stop on SIGINT:\n{seen}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let text = format!("{seen}{}", rest.join("\n"));
    assert_eq!(status.code(), Some(130), "{text}");
    assert!(text.contains("sqlite: interrupted by SIGINT"), "{text}");
    assert!(!text.contains("run --jobs 1 / sqlite3:"), "no figure from the rounds cut short: {text}");
}

/// SIGTERM to reapcheck alone while the client replays: the client is
/// ended too, not left replaying without a parent (a stranger's `psql`
/// went on for its whole script), and the default folder is removed.
#[cfg(unix)]
#[test]
fn a_signal_mid_replay_ends_the_client_too() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = Scratch::new("compare", "client-signal");
    let bin = dir.path("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let pid_file = dir.path("client.pid");
    // A sqlite3 that answers --version and otherwise never ends.
    let fake = format!(
        "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 3.40.1; exit 0; fi\necho $$ > {}\nexec sleep 600\n",
        pid_file.display()
    );
    let script = bin.join("sqlite3");
    std::fs::write(&script, fake).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let tmp = dir.path("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let args = ["bench", "--compare", "--rounds", "1", "--db", "sqlite", "--only", "grace/floor"];
    let mut child = common::clean_command(&dir.0, &args)
        .env("PATH", path)
        .env("TMPDIR", &tmp)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("reapcheck starts");
    let guard = std::time::Instant::now() + std::time::Duration::from_secs(300);
    let client: libc::pid_t = loop {
        if let Some(pid) = std::fs::read_to_string(&pid_file).ok().and_then(|t| t.trim().parse().ok()) {
            break pid;
        }
        assert!(child.try_wait().unwrap().is_none(), "reapcheck ended before the replay");
        assert!(std::time::Instant::now() < guard, "the replay never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    // SAFETY: kill(2) on the child's pid, which has not been waited for.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) }, 0);
    let output = child.wait_with_output().unwrap();
    let text = format!("{}{}", stdout(&output), stderr(&output));
    assert_eq!(output.status.code(), Some(130), "{text}");
    // SAFETY: kill(2) with signal 0 only asks whether the process exists.
    let alive = unsafe { libc::kill(client, 0) } == 0;
    if alive {
        // SAFETY: as above; the test's own leftover.
        unsafe { libc::kill(client, libc::SIGKILL) };
    }
    assert!(!alive, "the client (pid {client}) was left running: {text}");
    // Its own folder is removed: nothing in it is worth keeping.
    let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().map(|e| e.unwrap().path()).collect();
    assert!(left.is_empty(), "left behind: {left:?}\n{text}");
}

#[test]
fn compare_takes_a_folder_that_is_not_the_whole_corpus_and_refuses_what_it_cannot_do_first() {
    let dir = Scratch::new("compare", "inputs");
    let grace = common::root().join("scenarios/grace");
    let out = dir.path("out");
    // Coverage is not what is compared: a part of the corpus gives figures.
    let o = clean_run(
        &dir.0,
        &[
            "bench",
            "--compare",
            "--rounds",
            "1",
            "--db",
            "sqlite",
            "--scenarios",
            grace.to_str().unwrap(),
            "--scripts",
            out.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("sqlite: run --jobs 1 / sqlite3: "), "{}", stdout(&o));
    // A --scripts that cannot be a folder: exit 2, naming the flag.
    let o = clean_run(&dir.0, &["bench", "--compare", "--db", "sqlite", "--scripts", "/dev/null"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--scripts /dev/null: cannot write in the folder"), "{}", stderr(&o));
    // A folder that exists but takes no file (even from root): the same
    // exit 2, not a capturing run that panics on its first statement.
    let o = clean_run(&dir.0, &["bench", "--compare", "--db", "sqlite", "--scripts", "/sys"]);
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("--scripts /sys: cannot write in the folder"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    // A target no client replays: exit 2 before anything runs.
    let o = clean_run(&dir.0, &["bench", "--compare", "--db", "sqlite,cockroach"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stdout(&o).is_empty() && stderr(&o).contains("--db cockroach"), "{}{}", stdout(&o), stderr(&o));
    // A scenario that does not load: exit 2 with its file:line:col, before
    // any capture or round.
    let broken = dir.path("broken");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("bad.yaml"), "description: x\nclasses: { C: {} }\njobs: [ { id: a, class: D } ]\n")
        .unwrap();
    let o = clean_run(&dir.0, &["bench", "--compare", "--db", "sqlite", "--scenarios", broken.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("bad.yaml:3:"), "{}", stderr(&o));
    assert!(stdout(&o).is_empty(), "nothing ran: {}", stdout(&o));
    // `--only` matching no scenario: exit 2 before anything runs, not a
    // run per target that refuses it with exit 1.
    let o = clean_run(&dir.0, &["bench", "--compare", "--db", "sqlite", "--only", "no-such-scenario"]);
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("--only no-such-scenario: no scenario in"), "{}", stderr(&o));
    assert!(stdout(&o).is_empty(), "nothing ran: {}", stdout(&o));
    // A database target without its URL (the environment is cleared), in
    // either comparison: exit 2 naming the variable, never `--allow-skip`.
    for args in [
        &["bench", "--compare", "--db", "sqlite,postgres"][..],
        &["bench", "--compare", "--adapter", "--db", "sqlite,mssql"][..],
    ] {
        let o = clean_run(&dir.0, args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}{}", stdout(&o), stderr(&o));
        assert!(stderr(&o).contains("_URL is not set"), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("allow-skip") && stdout(&o).is_empty(), "{args:?}: {}{}", stdout(&o), stderr(&o));
    }
    // A dialect folder that does not load: exit 2 before any capture.
    let o = clean_run(&dir.0, &["bench", "--compare", "--db", "sqlite", "--dialects", "/nonexistent-dialects"]);
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("/nonexistent-dialects") && stdout(&o).is_empty(), "{}{}", stdout(&o), stderr(&o));
    // A CI's REAPCHECK_REQUIRE is not handed to the runs it starts, whose
    // one target is the one --db names.
    let o = common::clean_command(
        &dir.0,
        &["bench", "--compare", "--rounds", "1", "--db", "sqlite", "--only", "grace/floor"],
    )
    .env("REAPCHECK_REQUIRE", "postgres")
    .output()
    .unwrap();
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("sqlite: run --jobs 1 / sqlite3: "), "{}", stdout(&o));
    // A flag of another mode of `bench`: refused, not silently ignored.
    for flag in [&["--iterations", "3"][..], &["--scale"][..], &["--sizes", "10,20"][..]] {
        let mut args = vec!["bench", "--compare", "--db", "sqlite"];
        args.extend_from_slice(flag);
        let o = clean_run(&dir.0, &args);
        assert_eq!(o.status.code(), Some(2), "{flag:?}: {}{}", stdout(&o), stderr(&o));
        assert!(stderr(&o).contains("cannot be used with"), "{flag:?}: {}", stderr(&o));
    }
    // No client on PATH: said before the capture, with what to install.
    let empty = dir.path("no-clients");
    std::fs::create_dir_all(&empty).unwrap();
    let o =
        common::clean_command(&dir.0, &["bench", "--compare", "--db", "sqlite", "--scripts", out.to_str().unwrap()])
            .env("PATH", &empty)
            .output()
            .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stdout(&o).contains("sqlite: not compared: cannot start `sqlite3`"), "{}", stdout(&o));
    assert!(!stdout(&o).contains(" statements "), "no capture ran: {}", stdout(&o));
}
