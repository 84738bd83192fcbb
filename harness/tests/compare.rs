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
    // One scenario: its run is reapcheck's start-up probe itself.
    let args = ["bench", "--compare", "--rounds", "1", "--db", "sqlite", "--only", "grace/never-beat", "--scripts"];
    let o = clean_run(&dir.0, &[&args[..], &[out.to_str().unwrap()]].concat());
    let text = stdout(&o);
    assert!(o.status.success(), "{text}{}", stderr(&o));
    let ratio = regex::Regex::new(
        r"(?m)^sqlite: run --jobs 1 / sqlite3: \d+\.\d\dx   run / sqlite3: \d+\.\d\dx   \(medians of 1 per-round ratio\)$",
    )
    .unwrap();
    assert!(ratio.is_match(&text), "{text}");
    let times = regex::Regex::new(
        r"(?m)^sqlite: medians sqlite3 \d+\.\d\ds   run --jobs 1 \d+\.\d\ds   run \d+\.\d\ds   \(load average \S+ \S+ \S+ before, \S+ \S+ \S+ after; \d+ CPUs\)$",
    )
    .unwrap();
    assert!(times.is_match(&text), "{text}");
    // One scenario: reapcheck's start-up is its whole run (measured, not a
    // count of scenarios), so the figures are said to be mostly start-up.
    let note = regex::Regex::new(
        r"(?m)^sqlite: note: process start-up is 100% of run --jobs 1's median \(the pass is one scenario: \d+\.\d\ds\) and \d+% of sqlite3's \(`SELECT 1`: \d+\.\d\ds\): the ratios of so short a pass are mostly process start-up \(where --only narrowed the corpus, compare more scenarios for figures of the statements\)$",
    )
    .unwrap();
    assert!(note.is_match(&text), "{text}");
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
    // A failure keeps its folder, and says where: here a sqlite3 that
    // answers the check's `SELECT 1` and fails the replay, whose exit
    // status the failure names.
    let bin = fake_client(&dir, "sqlite3", "exit 3");
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let args = ["bench", "--compare", "--db", "sqlite", "--rounds", "1", "--only", "grace/floor"];
    let o = common::clean_command(&dir.0, &args).env("TMPDIR", &tmp).env("PATH", &path).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "a failing client: {}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("exit status: 3"), "{}", stdout(&o));
    let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(stdout(&o).contains(&format!("kept {}", left[0].display())), "{}", stdout(&o));
    std::fs::remove_dir_all(&left[0]).unwrap();
    // No sqlite3 at all: refused (exit 2) before the capture, and the
    // folder made for it removed.
    let empty = dir.path("no-clients");
    std::fs::create_dir_all(&empty).unwrap();
    let o = common::clean_command(&dir.0, &["bench", "--compare", "--db", "sqlite", "--rounds", "1"])
        .env("TMPDIR", &tmp)
        .env("PATH", &empty)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "no client: {}{}", stdout(&o), stderr(&o));
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0);
    // Refused inputs make no folder at all.
    let o =
        common::clean_command(&dir.0, &["bench", "--compare", "--db", "oracle"]).env("TMPDIR", &tmp).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0);
}

/// A fake client named `name` in a folder of its own (returned): it
/// answers `--version`, runs a `SELECT 1;` script (the check before the
/// capture) printing its 1, and anything else with the shell commands
/// `rest`.
#[cfg(unix)]
fn fake_client(dir: &Scratch, name: &str, rest: &str) -> std::path::PathBuf {
    fake_client_answering(dir, name, "echo 1; exit 0", rest)
}

/// [`fake_client`], whose answer to `SELECT 1;` is the shell commands
/// `select`.
#[cfg(unix)]
fn fake_client_answering(dir: &Scratch, name: &str, select: &str, rest: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt as _;
    let bin = dir.path(&format!("bin-{name}"));
    std::fs::create_dir_all(&bin).unwrap();
    let fake = format!(
        "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 3.40.1; exit 0; fi\nread -r first\n\
         if [ \"$first\" = 'SELECT 1;' ]; then {select}; fi\n{rest}\n"
    );
    let script = bin.join(name);
    std::fs::write(&script, fake).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

/// SIGINT after the capture: no new round starts, the command says so and
/// exits 130 (it ran every round to its end before, and exited 0). Started
/// as `nohup` starts it, SIGHUP ignored: a SIGHUP sent just before the
/// SIGINT (and delivered first, being pending with a lower number) stays
/// ignored, and SIGINT is what it names.
#[cfg(unix)]
#[test]
fn a_signal_stops_compare_between_rounds_with_exit_130() {
    use std::io::BufRead as _;
    use std::os::unix::process::CommandExt as _;
    let dir = Scratch::new("compare", "signal");
    let out = dir.path("out");
    let args = ["bench", "--compare", "--rounds", "10000", "--db", "sqlite", "--only", "grace/floor", "--scripts"];
    let mut cmd = common::clean_command(&dir.0, &[&args[..], &[out.to_str().unwrap()]].concat());
    // SAFETY: signal(2) is async-signal-safe, allowed between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGHUP, libc::SIG_IGN);
            Ok(())
        });
    }
    let mut child = cmd
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
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGHUP) }, 0);
    // SAFETY: as above.
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

/// SIGTERM or SIGHUP (a closed terminal) to reapcheck alone while the
/// client replays: the client is ended too, not left replaying without a
/// parent (a stranger's `psql` went on for its whole script), and the
/// default folder is removed.
#[cfg(unix)]
#[test]
fn a_signal_mid_replay_ends_the_client_too() {
    for (signal, name) in [(libc::SIGTERM, "SIGTERM"), (libc::SIGHUP, "SIGHUP")] {
        let text = signal_mid_replay(signal, name, "sqlite", "sqlite3", None);
        assert!(!text.contains("namespace stays"), "SQLite's replay has no namespace on a server: {text}");
    }
}

/// A replay cut short on a server leaves the namespace its script made
/// (the script drops it at its end): the command says the next run sweeps
/// it. The capture runs on the real server; the replaying client is fake.
#[cfg(unix)]
#[test]
fn a_signal_mid_replay_on_a_server_says_its_namespace_waits_for_the_sweep() {
    let Some(url) = server_url("REAPCHECK_MARIADB_URL") else { return };
    let text = signal_mid_replay(libc::SIGTERM, "SIGTERM", "mariadb", "mariadb", Some(("REAPCHECK_MARIADB_URL", &url)));
    assert!(
        text.contains("mariadb: the replay's namespace stays on the server until the next reapcheck run sweeps it"),
        "{text}"
    );
}

/// Sends `signal` (called `name`) to `bench --compare --db target` while
/// its fake `client` replays (`url`: the target's variable and server, for
/// the capture), checks exit 130 and that nothing is left, and returns
/// what it printed.
#[cfg(unix)]
fn signal_mid_replay(signal: libc::c_int, name: &str, target: &str, client: &str, url: Option<(&str, &str)>) -> String {
    let dir = Scratch::new("compare", &format!("client-{target}-{name}"));
    let pid_file = dir.path("client.pid");
    // A client that passes the check and never ends a replay.
    let bin = fake_client(&dir, client, &format!("echo $$ > {}\nexec sleep 600", pid_file.display()));
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let tmp = dir.path("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let args = ["bench", "--compare", "--rounds", "1", "--db", target, "--only", "grace/floor"];
    let mut cmd = common::clean_command(&dir.0, &args);
    if let Some((variable, url)) = url {
        cmd.env(variable, url);
    }
    // A test run under `nohup` (as `.ci/run` is) hands SIGHUP down ignored,
    // which reapcheck rightly keeps: this child gets the default.
    // SAFETY: signal(2) is async-signal-safe, allowed between fork and exec.
    unsafe {
        use std::os::unix::process::CommandExt as _;
        cmd.pre_exec(|| {
            libc::signal(libc::SIGHUP, libc::SIG_DFL);
            Ok(())
        });
    }
    let mut child = cmd
        .env("PATH", path)
        .env("TMPDIR", &tmp)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("reapcheck starts");
    let client = replaying_client(&mut child, &pid_file);
    // SAFETY: kill(2) on the child's pid, which has not been waited for.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, signal) }, 0);
    let output = child.wait_with_output().unwrap();
    let text = format!("{}{}", stdout(&output), stderr(&output));
    assert_eq!(output.status.code(), Some(130), "{name}: {text}");
    assert!(text.contains(&format!("interrupted by {name}")), "{text}");
    // Its own folder is removed: nothing in it is worth keeping.
    assert_nothing_left(client, &tmp, &text);
    text
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
    assert!(stderr(&o).contains("--scripts /dev/null: is not a folder"), "{}", stderr(&o));
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
    // A dialect folder that does not load: exit 2 before any capture, in
    // either comparison (--adapter ran a round, then exited 1).
    for adapter in [&[][..], &["--adapter"][..]] {
        let mut args = vec!["bench", "--compare", "--db", "sqlite", "--rounds", "1", "--only", "grace/never-beat"];
        args.extend_from_slice(adapter);
        args.extend(["--dialects", "/nonexistent-dialects"]);
        let o = clean_run(&dir.0, &args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}{}", stdout(&o), stderr(&o));
        assert!(stderr(&o).contains("/nonexistent-dialects"), "{args:?}: {}", stderr(&o));
        assert!(stdout(&o).is_empty(), "{args:?}: nothing ran: {}", stdout(&o));
    }
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
    // No client on PATH: refused before the capture, with what to install.
    let empty = dir.path("no-clients");
    std::fs::create_dir_all(&empty).unwrap();
    let o =
        common::clean_command(&dir.0, &["bench", "--compare", "--db", "sqlite", "--scripts", out.to_str().unwrap()])
            .env("PATH", &empty)
            .output()
            .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("--db sqlite: cannot start `sqlite3`"), "{}", stderr(&o));
    assert!(stderr(&o).contains("apt-get install sqlite3"), "{}", stderr(&o));
    assert!(!stdout(&o).contains(" statements "), "no capture ran: {}", stdout(&o));
    // `--only` naming nothing: refused, not the whole corpus; the value is
    // quoted, so a bare comma is seen as what was given.
    let o = clean_run(&dir.0, &["bench", "--compare", "--db", "sqlite", "--only", ","]);
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stderr(&o).contains("--only ',' names no scenario") && stdout(&o).is_empty(),
        "{}{}",
        stdout(&o),
        stderr(&o)
    );
    // One name of `--only` matching nothing beside one that matches:
    // refused, naming it, not a measurement of fewer scenarios than meant.
    let o = clean_run(&dir.0, &["bench", "--compare", "--db", "sqlite", "--only", "grace/floor,grace/flor-typo"]);
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("grace/flor-typo matches no scenario in"), "{}", stderr(&o));
    assert!(stdout(&o).is_empty(), "nothing ran: {}", stdout(&o));
    // An adapter target given to --adapter, which adds it itself: refused.
    let o = clean_run(&dir.0, &["bench", "--compare", "--adapter", "--db", "adapter:reference-sqlite"]);
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stderr(&o).contains("give the database (--db sqlite)") && stdout(&o).is_empty(),
        "{}{}",
        stdout(&o),
        stderr(&o)
    );
    // What --only was is shown so that a blank one is seen.
    let o = clean_run(&dir.0, &["bench", "--compare", "--db", "sqlite", "--only", " "]);
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("error: --only ' ': no scenario in "), "{}", stderr(&o));
}

/// What a stranger found on 2026-12-06: a filter starting with `-` was
/// read by the child run as a flag; the client read a URL before
/// reapcheck's own rules did; an empty scenario folder blamed `--only`; a
/// typo got no suggestion; a missing TMPDIR was made and left.
#[test]
fn compare_hands_names_safely_and_refuses_bad_input_in_its_own_words() {
    let dir = Scratch::new("compare", "stranger");
    // A filter starting with `-` is a name (`leases/renewal-grace-off`).
    let o = clean_run(&dir.0, &["bench", "--compare", "--db", "sqlite", "--rounds", "1", "--only=-grace-off"]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("sqlite: run --jobs 1 / sqlite3: "), "{}", stdout(&o));
    // reapcheck's reading of the URL, not psql's: exit 2, nothing kept.
    for (url, said) in [("not a url", "not a URL"), ("mysql://root@127.0.0.1:3306/test", "mysql")] {
        let o = common::clean_command(&dir.0, &["bench", "--compare", "--db", "postgres"])
            .env("REAPCHECK_POSTGRES_URL", url)
            .env("TMPDIR", &dir.0)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{url}: {}{}", stdout(&o), stderr(&o));
        assert!(stderr(&o).contains("REAPCHECK_POSTGRES_URL: ") && stderr(&o).contains(said), "{url}: {}", stderr(&o));
        assert!(stderr(&o).contains("fix the URL") && !stderr(&o).contains("does not exist"), "{}", stderr(&o));
    }
    let kept: Vec<_> = std::fs::read_dir(&dir.0)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("reapcheck-compare-"))
        .collect();
    assert!(kept.is_empty(), "a refused URL kept {kept:?}");
    // An empty scenario folder: said as such, not as an --only that was never given.
    let empty = dir.path("no-scenarios");
    std::fs::create_dir_all(&empty).unwrap();
    let o = clean_run(&dir.0, &["bench", "--compare", "--db", "sqlite", "--scenarios", empty.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("no scenario in") && !stderr(&o).contains("--only"), "{}", stderr(&o));
    // A typo of a whole name: the closest one is suggested.
    let o = clean_run(&dir.0, &["bench", "--compare", "--db", "sqlite", "--only", "grace/recent-bet"]);
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("did you mean `grace/recent-beat`?"), "{}", stderr(&o));
    // A TMPDIR that does not exist: refused, and not made.
    let missing = dir.path("no-such-tmp");
    let o = common::clean_command(
        &dir.0,
        &["bench", "--compare", "--db", "sqlite", "--rounds", "1", "--only", "grace/floor"],
    )
    .env("TMPDIR", &missing)
    .output()
    .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("set TMPDIR to a folder that exists"), "{}", stderr(&o));
    assert!(!missing.exists(), "bench --compare made the missing TMPDIR {}", missing.display());
    // A scenario folder whose name starts with `-` reaches the child runs
    // as a value, not a flag.
    let dashed = dir.path("-sc");
    std::fs::create_dir_all(&dashed).unwrap();
    let floor = common::root().join("scenarios/grace/floor-keeps-recent-beat.yaml");
    std::fs::copy(&floor, dashed.join("floor-keeps-recent-beat.yaml")).unwrap();
    let snapshots = common::root().join("scenarios/grace/snapshots");
    if snapshots.is_dir() {
        std::fs::create_dir_all(dashed.join("snapshots")).unwrap();
        for e in std::fs::read_dir(&snapshots).unwrap().flatten() {
            if e.file_name().to_string_lossy().contains("floor-keeps-recent-beat") {
                std::fs::copy(e.path(), dashed.join("snapshots").join(e.file_name())).unwrap();
            }
        }
    }
    let o = clean_run(&dir.0, &["bench", "--compare", "--db", "sqlite", "--rounds", "1", "--scenarios=-sc"]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    // The hints name what to give instead.
    let o = clean_run(&dir.0, &["bench", "--compare", "--adapter", "--db", "adapter:reference-postgres"]);
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("(--db postgres)"), "{}", stderr(&o));
    let o = clean_run(&dir.0, &["bench", "--compare", "--db", "adapter:reference-sqlite"]);
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stderr(&o).contains("--adapter --db <its database>") && stderr(&o).contains("nothing ran"),
        "{}",
        stderr(&o)
    );
    let file = dir.path("a-file");
    std::fs::write(&file, "").unwrap();
    let o = clean_run(&dir.0, &["bench", "--compare", "--db", "sqlite", "--scripts", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("is not a folder"), "{}", stderr(&o));
}

/// A flag of `--compare` without `--compare` is refused (exit 2), not
/// ignored: clap's `requires` gave way whenever a flag of `bench`'s other
/// modes (which conflict with `--compare`) was given too.
#[test]
fn a_flag_of_compare_without_compare_is_refused() {
    let dir = Scratch::new("compare", "misplaced");
    for (flag, other) in [
        (&["--rounds", "3"][..], &["--iterations", "1"][..]),
        (&["--adapter"][..], &["--iterations", "1"][..]),
        (&["--only", "grace/"][..], &["--scale", "--sizes", "10,20", "--processing", "5", "--stale", "1"][..]),
        (
            &["--scripts", "out"][..],
            &["--runs", "1", "--scale", "--sizes", "10,20", "--processing", "5", "--stale", "1"][..],
        ),
        (&["--rounds", "3"][..], &[][..]),
    ] {
        let args = [&["bench", "--db", "sqlite"][..], flag, other].concat();
        let o = clean_run(&dir.0, &args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}{}", stdout(&o), stderr(&o));
        assert!(stderr(&o).contains("--compare") && stderr(&o).contains(flag[0]), "{args:?}: {}", stderr(&o));
        assert!(stdout(&o).is_empty(), "{args:?}: nothing ran: {}", stdout(&o));
    }
}

/// The check before the capture looks for the 1 of `SELECT 1`: a client
/// that exits 0 and prints nothing answered nothing. SQLite's failure is
/// said as SQLite's (no server, no URL).
#[cfg(unix)]
#[test]
fn a_client_that_prints_nothing_fails_the_check() {
    let dir = Scratch::new("compare", "silent");
    for (select, said) in [("exit 0", "without printing the 1; it printed nothing"), ("exit 1", "exit status: 1")] {
        let bin = fake_client_answering(&dir, "sqlite3", select, "exit 0");
        let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
        let args = ["bench", "--compare", "--rounds", "1", "--db", "sqlite", "--only", "grace/never-beat"];
        let o = common::clean_command(&dir.0, &args).env("PATH", &path).output().unwrap();
        let text = format!("{}{}", stdout(&o), stderr(&o));
        assert_eq!(o.status.code(), Some(2), "{select}: {text}");
        assert!(
            stderr(&o).contains("--db sqlite: `sqlite3` could not run `SELECT 1` on an in-memory database ("),
            "{select}: {text}"
        );
        assert!(stderr(&o).contains(said) && stderr(&o).contains("nothing ran"), "{select}: {text}");
        assert!(!text.contains("server") && !text.contains("URL"), "SQLite has neither: {text}");
        assert!(!stdout(&o).contains(" statements "), "no capture ran: {text}");
    }
}

/// The `mariadb` client connects as reapcheck's sqlx connection does, TLS
/// options included: a URL requiring TLS of a server without it fails the
/// check before anything runs (exit 2), where the client connected in the
/// clear and the capture then failed (exit 1). MariaDB, when
/// `REAPCHECK_MARIADB_URL` is set to a server without TLS (`.ci/run`'s).
#[test]
fn a_mariadb_url_requiring_tls_is_the_clients_too() {
    let Some(url) = server_url("REAPCHECK_MARIADB_URL") else { return };
    let dir = Scratch::new("compare", "mariadb-tls");
    let parsed = url::Url::parse(&url).unwrap();
    let mut ask = Command::new("mariadb");
    ask.args(["--batch", "--skip-column-names", "--protocol=TCP", "-h", parsed.host_str().unwrap_or("127.0.0.1")]);
    ask.args([
        "-P",
        &parsed.port().unwrap_or(3306).to_string(),
        "-u",
        Some(parsed.username()).filter(|u| !u.is_empty()).unwrap_or("root"),
        "-e",
        "SELECT @@have_ssl",
    ]);
    if let Some(password) = parsed.password() {
        ask.env("MYSQL_PWD", password);
    }
    let have_ssl = ask.output().map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    let mut required = parsed.clone();
    required.query_pairs_mut().append_pair("ssl-mode", "REQUIRED");
    let args = ["bench", "--compare", "--rounds", "1", "--db", "mariadb", "--only", "grace/never-beat"];
    let o = common::clean_command(&dir.0, &args).env("REAPCHECK_MARIADB_URL", required.as_str()).output().unwrap();
    let text = format!("{}{}", stdout(&o), stderr(&o));
    if have_ssl.as_deref().is_ok_and(|h| h == "YES") {
        eprintln!("skipped: the server has TLS: {text}");
        return;
    }
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(
        stderr(&o).contains("--db mariadb: the client could not run `SELECT 1` through REAPCHECK_MARIADB_URL"),
        "{text}"
    );
    assert!(stderr(&o).contains("ssl-ca=FILE") && stderr(&o).contains("nothing ran"), "{text}");
    assert!(!stdout(&o).contains(" statements "), "no capture ran: {text}");
    if let Some(password) = parsed.password().filter(|p| !p.is_empty()) {
        assert!(!text.contains(password), "the password is never printed: {text}");
    }
    // A mode neither sqlx nor the client knows: refused, nothing ran.
    let mut unknown = parsed.clone();
    unknown.query_pairs_mut().append_pair("ssl-mode", "ALWAYS");
    let o = common::clean_command(&dir.0, &args).env("REAPCHECK_MARIADB_URL", unknown.as_str()).output().unwrap();
    let text = format!("{}{}", stdout(&o), stderr(&o));
    assert_eq!(o.status.code(), Some(2), "{text}");
    // reapcheck's own reading of the URL refuses it first, as `run` does.
    let said = "REAPCHECK_MARIADB_URL: the driver cannot read it: unknown value \"ALWAYS\" for `ssl_mode`: fix the URL";
    assert!(stderr(&o).contains(said) && stderr(&o).contains("nothing ran"), "{text}");
}

/// A stdout that takes no more (a full disk: `> /dev/full`) loses the
/// figures: the command fails (exit 1) and says so on stderr, where it
/// exited 0 having shown nothing (a stranger's point).
#[cfg(target_os = "linux")]
#[test]
fn figures_that_cannot_be_written_fail_the_command() {
    let dir = Scratch::new("compare", "full");
    let args = ["bench", "--compare", "--rounds", "1", "--db", "sqlite", "--only", "grace/never-beat"];
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let o = common::clean_command(&dir.0, &args).stdout(full).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("error: the figures could not be written to stdout ("), "{}", stderr(&o));
}

/// `bench --compare | head -1`: a closed stdout stops the command as a
/// signal does (the client in flight ended, its own folder removed) and it
/// ends by SIGPIPE, as a closed stdout ends any reapcheck command; SIGPIPE
/// ended it at its next line, leaving the folder and the client.
#[cfg(unix)]
#[test]
fn a_closed_stdout_ends_compare_cleanly() {
    use std::os::unix::process::ExitStatusExt as _;
    let dir = Scratch::new("compare", "closed-stdout");
    let pid_file = dir.path("client.pid");
    // A sqlite3 that passes the check and never ends a replay.
    let bin = fake_client(&dir, "sqlite3", &format!("echo $$ > {}\nexec sleep 600", pid_file.display()));
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let tmp = dir.path("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let args = ["bench", "--compare", "--rounds", "1", "--db", "sqlite", "--only", "grace/never-beat"];
    let mut child = common::clean_command(&dir.0, &args)
        .env("PATH", path)
        .env("TMPDIR", &tmp)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("reapcheck starts");
    let stdout_pipe = child.stdout.take().unwrap();
    let client = replaying_client(&mut child, &pid_file);
    // `head -1` has read its line and gone.
    drop(stdout_pipe);
    // The replay never ends by itself: ending within the guard is stopping.
    let guard = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() >= guard {
            let _ = child.kill();
            // SAFETY: kill(2) on the fake client, the test's own leftover.
            unsafe { libc::kill(client, libc::SIGKILL) };
            panic!("bench --compare went on with its stdout closed");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.signal(), Some(libc::SIGPIPE), "{status:?}: {err}");
    assert!(!err.contains("panicked") && !err.contains("error"), "quiet: {err}");
    assert_nothing_left(client, &tmp, &err);
}

/// Every target's client is checked before the first capture: an
/// unreachable server is refused with exit 2 before SQLite's rounds, not
/// found by its own capture after them.
#[test]
fn an_unreachable_server_is_refused_before_any_target_is_compared() {
    let dir = Scratch::new("compare", "unreachable");
    // A loopback port nothing listens on (this test's own, never a server's).
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let o = common::clean_command(&dir.0, &["bench", "--compare", "--rounds", "1", "--db", "sqlite,postgres"])
        .env("REAPCHECK_POSTGRES_URL", format!("postgres://u:s3cret@127.0.0.1:{port}/test"))
        .output()
        .unwrap();
    let text = format!("{}{}", stdout(&o), stderr(&o));
    assert!(!text.contains("cannot start `psql`"), "psql is needed (apt-get install postgresql-client): {text}");
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(stderr(&o).contains("--db postgres: the client could not run `SELECT 1`"), "{text}");
    assert!(!text.contains("s3cret"), "the password is never printed: {text}");
    assert!(!stdout(&o).contains(" statements "), "no capture ran, SQLite's neither: {text}");
}

/// The capturing run's start-up sweep is no part of its pass: its drop of
/// an earlier run's leftover is not recorded (the replay found the
/// leftover gone and failed on it), nor its listings of the namespaces,
/// nor the sessions it opened for them, while the leftover is still
/// dropped.
/// The capture opens with the run's namespace prefix, which the script
/// renames. PostgreSQL, when `REAPCHECK_POSTGRES_URL` is set (`.ci/run`
/// sets it).
#[test]
fn the_capturing_runs_sweep_is_not_recorded() {
    let Some(url) = server_url("REAPCHECK_POSTGRES_URL") else { return };
    let dir = Scratch::new("compare", "sweep");
    // A namespace of this host whose process is gone.
    let mut gone = Command::new("true").spawn().unwrap();
    let dead_pid = gone.id();
    gone.wait().unwrap();
    let me = reapcheck::namespace::this_process();
    let owner = reapcheck::namespace::Owner { host: me.host.clone(), pid: dead_pid, started: me.started - 60 };
    let leftover = reapcheck::namespace::name(&owner, 0);
    let psql = |sql: &str| {
        let o = Command::new("psql")
            .args(["-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-c", sql, &url])
            .output()
            .unwrap();
        assert!(o.status.success(), "{sql}: {}", stderr(&o));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    psql(&format!("CREATE SCHEMA {leftover}"));
    // One captured run of one scenario into `file`.
    let captured = |file: &str| {
        let capture = dir.path(file);
        let o = common::clean_command(
            &dir.0,
            &["run", "--db", "postgres", "--coverage-min", "0", "--exact", "grace/never-beat"],
        )
        .env("REAPCHECK_POSTGRES_URL", &url)
        .env(reapcheck::compare::capture::CAPTURE_ENV, &capture)
        .output()
        .unwrap();
        assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
        reapcheck::compare::read_capture(&capture).unwrap()
    };
    let events = captured("capture.jsonl");
    let left = psql(&format!("SELECT count(*) FROM pg_namespace WHERE nspname = '{leftover}'"));
    assert_eq!(left.trim(), "0", "the sweep still drops it");
    let Some(reapcheck::compare::capture::Event::Began { namespace_prefix }) = events.first() else {
        panic!("the capture opens with the run's prefix: {:?}", events.first());
    };
    assert!(namespace_prefix.starts_with(&format!("rc_{}_", me.host)), "{namespace_prefix}");
    let recorded: Vec<&String> = events
        .iter()
        .filter_map(|e| match e {
            reapcheck::compare::capture::Event::Sql { sql, .. } if sql.contains(&leftover) => Some(sql),
            _ => None,
        })
        .collect();
    assert!(recorded.is_empty(), "the sweep's statements were recorded: {recorded:?}");
    assert!(events.iter().any(
        |e| matches!(e, reapcheck::compare::capture::Event::Sql { sql, .. } if sql.contains(namespace_prefix.as_str()))
    ));
    // Nor its listings of the namespaces, nor its sessions: the capture of
    // the same run without a leftover holds as many statements and
    // sessions (4843 against 4842 statements where a leftover was swept),
    // no listing, and no session without a statement.
    use reapcheck::compare::capture::Event;
    let without = captured("again.jsonl");
    let tally = |events: &[Event]| {
        let sessions = events.iter().filter(|e| matches!(e, Event::Session { .. })).count();
        let closed = events.iter().filter(|e| matches!(e, Event::Closed { .. })).count();
        (reapcheck::compare::counts(events).0, sessions, closed)
    };
    assert_eq!(tally(&events), tally(&without), "the swept leftover left something in the capture");
    let listings: Vec<&String> = events
        .iter()
        .filter_map(|e| match e {
            // `Server::namespaces`'s: every `rc_` name.
            Event::Sql { sql, .. } if sql.contains("LIKE 'rc\\_%'") => Some(sql),
            _ => None,
        })
        .collect();
    assert!(listings.is_empty(), "the namespaces' listings were recorded: {listings:?}");
    for (i, e) in events.iter().enumerate() {
        if let Event::Session { id } = e {
            let used = events[i..].iter().any(|e| matches!(e, Event::Sql { session, .. } if session == id));
            assert!(used, "session {id} sent nothing and was recorded");
        }
    }
}

/// `--adapter` runs in a scratch project of its own: the user's scenario
/// sets (from reapcheck.toml, or a relative `--scenarios`) are what it
/// measures, not the built-in corpus.
#[cfg(unix)]
#[test]
fn the_adapter_comparison_measures_the_users_scenarios() {
    let dir = Scratch::new("compare", "adapter-project");
    let grace = common::root().join("scenarios/grace");
    let files = std::fs::read_dir(&grace)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "yaml"))
        .count();
    std::fs::write(dir.path("reapcheck.toml"), format!("scenarios = [{:?}]\n", grace.to_str().unwrap())).unwrap();
    let measured = format!(" of {files}   (medians of 1 round)");
    let args = ["bench", "--compare", "--adapter", "--rounds", "1", "--db", "sqlite"];
    let o = clean_run(&dir.0, &args);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains(&measured), "{files} scenarios of reapcheck.toml's set: {}", stdout(&o));
    // A relative --scenarios, read from the user's folder.
    let other = Scratch::new("compare", "adapter-relative");
    std::os::unix::fs::symlink(&grace, other.path("mine")).unwrap();
    let o = clean_run(&other.0, &[&args[..], &["--scenarios", "mine"]].concat());
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains(&measured), "{}", stdout(&o));
    // One scenario: its case is the adapter's whole case time, start-up
    // included, and that is said (it was said in SQL mode only).
    let o = clean_run(&other.0, &[&args[..], &["--scenarios", "mine", "--only", "never-beat"]].concat());
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let note = "adapter:reference-sqlite: note: its slowest case (never-beat) is 100% of its case time";
    assert!(stdout(&o).contains(note), "{}", stdout(&o));
}

/// The URL in `variable`, or `None` (saying the test is skipped) when it is
/// not set: the tests that need a server run where `.ci/run` sets it.
fn server_url(variable: &str) -> Option<String> {
    let url = std::env::var(variable).ok().filter(|u| !u.is_empty());
    if url.is_none() {
        eprintln!("skipped: {variable} is not set");
    }
    url
}

/// The pid the fake client wrote to `pid_file` once its replay started
/// (waited for up to 300 s); fails when `child` (reapcheck) ended first.
#[cfg(unix)]
fn replaying_client(child: &mut std::process::Child, pid_file: &std::path::Path) -> libc::pid_t {
    let guard = std::time::Instant::now() + std::time::Duration::from_secs(300);
    loop {
        if let Some(pid) = std::fs::read_to_string(pid_file).ok().and_then(|t| t.trim().parse().ok()) {
            return pid;
        }
        assert!(child.try_wait().unwrap().is_none(), "reapcheck ended before the replay");
        assert!(std::time::Instant::now() < guard, "the replay never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The fake client `client` is gone (killed here if not, and then the test
/// fails) and reapcheck's temporary directory `tmp` is empty; `said` is
/// what reapcheck printed, for the failure message.
#[cfg(unix)]
fn assert_nothing_left(client: libc::pid_t, tmp: &std::path::Path, said: &str) {
    // SAFETY: kill(2) with signal 0 only asks whether the process exists.
    let alive = unsafe { libc::kill(client, 0) } == 0;
    if alive {
        // SAFETY: as above; the test's own leftover.
        unsafe { libc::kill(client, libc::SIGKILL) };
    }
    assert!(!alive, "the client (pid {client}) was left running: {said}");
    let left: Vec<_> = std::fs::read_dir(tmp).unwrap().map(|e| e.unwrap().path()).collect();
    assert!(left.is_empty(), "left behind: {left:?}\n{said}");
}
