//! `reapcheck run --db adapter:<name>`: an adapter configured in
//! reapcheck.toml as a target, played scenario by scenario
//! (docs/adapter-protocol.md). The reference adapter (`reapcheck adapter
//! serve`) passes what SQL mode passes; an adapter that cannot start fails
//! its target; one that writes junk on stdout fails each scenario with the
//! hint and is started again for the next.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A scratch project folder with a reapcheck.toml, removed when dropped.
struct Project(PathBuf);

impl Project {
    fn new(name: &str, config: &str) -> Project {
        let dir = std::env::temp_dir().join(format!("reapcheck-adapter-run-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        std::fs::write(dir.join("reapcheck.toml"), config).expect("config written");
        Project(dir)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Project {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs the binary in `dir` with no target, setting or CI from the
/// environment.
fn reapcheck_in(dir: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_reapcheck"));
    cmd.args(args).current_dir(dir);
    for v in ["REAPCHECK_REQUIRE", "REAPCHECK_DB", "REAPCHECK_DIALECTS", "REAPCHECK_SCENARIOS", "CI"] {
        cmd.env_remove(v);
    }
    cmd.output().expect("the binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The `(passed, failed, skipped)` of `target` in the closing line.
fn counts(out: &str, target: &str) -> (usize, usize, usize) {
    let last = out.lines().last().unwrap_or_default();
    let part = last.split("; ").find(|p| p.starts_with(&format!("{target}: "))).unwrap_or_else(|| panic!("{last}"));
    let numbers: Vec<usize> =
        part.split(|c: char| !c.is_ascii_digit()).filter(|n| !n.is_empty()).map(|n| n.parse().unwrap()).collect();
    assert_eq!(numbers.len(), 3, "{part}");
    (numbers[0], numbers[1], numbers[2])
}

fn toml_string(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// A project whose corpus is one scenario, `s/<file>` holding `yaml`,
/// with `adapters` (reapcheck.toml tables) as its targets.
fn one_scenario_project(name: &str, adapters: &str, file: &str, yaml: &str) -> Project {
    let project = Project::new(name, &format!("scenarios = [\"s\"]\n\n{adapters}"));
    std::fs::create_dir_all(project.path().join("s")).unwrap();
    std::fs::write(project.path().join("s").join(file), yaml).unwrap();
    project
}

/// `[adapters.ref]`: the reference adapter on SQLite.
fn reference_adapter() -> String {
    let bin = toml_string(env!("CARGO_BIN_EXE_reapcheck"));
    format!("[adapters.ref]\ncommand = [{bin}, \"adapter\", \"serve\", \"--db\", \"sqlite\"]\ndatabase = \"sqlite\"\n")
}

#[test]
fn the_reference_adapter_passes_what_sql_mode_passes() {
    let bin = toml_string(env!("CARGO_BIN_EXE_reapcheck"));
    let config = format!(
        "[adapters.ref]\ncommand = [{bin}, \"adapter\", \"serve\", \"--db\", \"sqlite\"]\ndatabase = \"sqlite\"\n"
    );
    let project = Project::new("ref", &config);
    let o = reapcheck_in(project.path(), &["run", "--db", "sqlite,adapter:ref", "--report", "out", "--leg", "both"]);
    let out = stdout(&o);
    let (sql_passed, sql_failed, _) = counts(&out, "sqlite");
    let (passed, failed, skipped) = counts(&out, "adapter:ref");
    let fails: Vec<&str> = out.lines().filter(|l| l.starts_with("FAIL")).collect();
    assert_eq!((failed, sql_failed), (0, 0), "{fails:?}\n{out}");
    assert_eq!(passed, sql_passed, "the reference adapter passes as many as SQL mode\n{out}");
    assert!(passed > 100, "{out}");
    assert!(o.status.success(), "{out}");
    let line = out.lines().find(|l| l.starts_with("ok ") && l.contains("on adapter:ref (")).expect("an ok line");
    assert!(line.ends_with(", over sqlite)"), "{line}");
    let _ = skipped;
    // Outcome for outcome: every case the adapter passed carries the hash
    // of its outcome document, equal to SQL mode's for the same scenario,
    // and `verdict` over the leg finds no divergence.
    let report = std::fs::read_to_string(project.path().join("out/outcomes.json")).expect("outcomes.json written");
    let report: serde_json::Value = serde_json::from_str(&report).expect("outcomes.json is JSON");
    let cases = report["cases"].as_array().expect("cases");
    let hash = |scenario: &str, target: &str| {
        let case = cases.iter().find(|c| c["scenario"] == scenario && c["target"] == target);
        case.and_then(|c| c["outcome_hash"].as_str()).map(str::to_owned)
    };
    let passed_here: Vec<&str> = cases
        .iter()
        .filter(|c| c["target"] == "adapter:ref" && c["result"] == "pass")
        .map(|c| c["scenario"].as_str().expect("a scenario name"))
        .collect();
    assert_eq!(passed_here.len(), passed, "{out}");
    for scenario in passed_here {
        let ours = hash(scenario, "adapter:ref");
        assert!(ours.is_some(), "{scenario} passed on adapter:ref without an outcome hash");
        assert_eq!(ours, hash(scenario, "sqlite"), "{scenario}: the adapter's outcome is not SQL mode's");
    }
    let o = reapcheck_in(project.path(), &["verdict", "out", "--expect", "both", "--out", "matrix"]);
    assert!(o.status.success(), "{}{}", stdout(&o), String::from_utf8_lossy(&o.stderr));
}

/// An adapter in `sh` that handshakes properly, then writes a log line on
/// stdout instead of replying; every start is counted in `starts`.
const BROKEN: &str = r#"echo start >> starts
while read -r line; do
  seq=$(printf '%s' "$line" | sed 's/^{"seq":\([0-9]*\).*/\1/')
  case "$line" in
    *'"op":"handshake"'*)
      echo '{"seq":'"$seq"',"reply":"ok","result":{"protocol_version":1,"adapter":{"name":"broken","version":"0.0.1","language":"sh"},"queue":{"name":"none","version":"0"},"capabilities":{"features":["leases","legacy","worker_fail","hooks"],"split_reap":true,"clocks":["app"]}}}' ;;
    *) echo "a log line on stderr" >&2; sleep 0.2; echo "starting worker..." ;;
  esac
done
"#;

#[test]
fn junk_on_stdout_fails_the_scenario_with_the_hint_and_the_next_starts_a_new_process() {
    let config = "[adapters.broken]\ncommand = [\"sh\", \"broken.sh\"]\ndatabase = \"sqlite\"\n";
    let project = Project::new("broken", config);
    std::fs::write(project.path().join("broken.sh"), BROKEN).expect("script written");
    let names = ["grace/beat-older-than-claim", "grace/beat-stamped-before-claim"];
    let o = reapcheck_in(project.path(), &["run", "--db", "adapter:broken", "--exact", names[0], names[1]]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert_eq!(counts(&out, "adapter:broken"), (0, 2, 0), "{out}");
    for name in names {
        assert!(
            out.contains(&format!("FAIL     {name}  on adapter:broken (none 0, broken 0.0.1, over sqlite)")),
            "{out}"
        );
    }
    assert!(out.contains("adapter broken: setup (seq 2): wrote a line on stdout that is not a reply"), "{out}");
    assert!(out.contains("logs belong on stderr"), "{out}");
    assert!(out.contains("the line: starting worker..."), "{out}");
    assert!(out.contains("a log line on stderr"), "the stderr tail is shown\n{out}");
    assert!(out.contains("rerun: reapcheck run --db adapter:broken --exact grace/beat-stamped-before-claim"), "{out}");
    let starts = std::fs::read_to_string(project.path().join("starts")).expect("the adapter started");
    // The opening handshake's process serves the first scenario; each
    // failure starts a new one for what comes next.
    assert_eq!(starts.lines().count(), 2, "{out}");
}

#[test]
fn an_adapter_that_cannot_start_fails_its_target_unless_skips_are_allowed() {
    let config = "[adapters.gone]\ncommand = [\"./no-such-adapter\"]\ndatabase = \"sqlite\"\n";
    let project = Project::new("gone", config);
    let name = "grace/beat-older-than-claim";
    let o = reapcheck_in(project.path(), &["run", "--db", "adapter:gone", "--exact", name]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("FAIL     adapter:gone (named as a target"), "{out}");
    assert!(out.contains("cannot start `./no-such-adapter`"), "{out}");
    assert_eq!(counts(&out, "adapter:gone"), (0, 1, 0), "{out}");
    // Allowed to skip beside a target that ran: skipped, and the run passes.
    let o = reapcheck_in(project.path(), &["run", "--db", "sqlite,adapter:gone", "--allow-skip", "--exact", name]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("skipped: adapter:gone (1 scenarios): "), "{out}");
    assert_eq!(counts(&out, "adapter:gone"), (0, 0, 1), "{out}");
    // Alone, its skip leaves nothing judged: the run fails all the same.
    let o = reapcheck_in(project.path(), &["run", "--db", "adapter:gone", "--allow-skip", "--exact", name]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("skipped: adapter:gone (1 scenarios): "), "{out}");
    assert!(out.contains("every database target was skipped"), "{out}");
}

/// An adapter in `sh` whose `MODE` (from its `env` in reapcheck.toml)
/// decides: `stuck` answers every `clock` with a clock that never moved,
/// `unsupported` refuses `setup` as something its queue cannot do, `leak`
/// raises in `setup` with a message and traceback that hold a password.
const MODED: &str = r#"while read -r line; do
  seq=$(printf '%s' "$line" | sed 's/^{"seq":\([0-9]*\).*/\1/')
  case "$line" in
    *'"op":"handshake"'*)
      echo '{"seq":'"$seq"',"reply":"ok","result":{"protocol_version":1,"adapter":{"name":"moded","version":"1","language":"sh"},"queue":{"name":"none","version":"0"},"capabilities":{"features":["leases","legacy","worker_fail","hooks"],"split_reap":true,"clocks":["app"]}}}' ;;
    *'"op":"setup"'*)
      if [ "$MODE" = unsupported ]; then
        echo '{"seq":'"$seq"',"reply":"error","kind":"unsupported","message":"this queue has no such table"}'
      elif [ "$MODE" = leak ]; then
        echo '{"seq":'"$seq"',"reply":"error","kind":"exception","message":"boom postgres://app:s3cretpw@db:5432/test","traceback":"connect(password=s3cretpw)"}'
      else
        echo '{"seq":'"$seq"',"reply":"ok","result":{}}'
      fi ;;
    *'"op":"clock"'*) echo '{"seq":'"$seq"',"reply":"ok","result":{"app":"2000-01-01T00:00:00.000000Z","database":null}}' ;;
    *) echo '{"seq":'"$seq"',"reply":"ok","result":{}}' ;;
  esac
done
"#;

#[test]
fn a_clock_that_did_not_move_fails_and_an_unsupported_setup_skips() {
    let config = "[adapters.stuck]\ncommand = [\"sh\", \"moded.sh\"]\ndatabase = \"sqlite\"\nenv = { MODE = \"stuck\" }\n\n\
                  [adapters.nope]\ncommand = [\"sh\", \"moded.sh\"]\ndatabase = \"sqlite\"\nenv = { MODE = \"unsupported\" }\n";
    let project = Project::new("moded", config);
    std::fs::write(project.path().join("moded.sh"), MODED).expect("script written");
    let name = "grace/beat-older-than-claim";
    let o = reapcheck_in(project.path(), &["run", "--db", "adapter:stuck,adapter:nope", "--exact", name]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert_eq!(counts(&out, "adapter:stuck"), (0, 1, 0), "{out}");
    assert!(
        out.contains("the clock did not move: `clock` asked for 2026-01-15T12:00:00.000000Z, the app clock reads 2000-01-01T00:00:00.000000Z"),
        "{out}"
    );
    assert_eq!(counts(&out, "adapter:nope"), (0, 0, 1), "{out}");
    assert!(
        out.contains(&format!(
            "skipped: {name}  on adapter:nope (none 0, moded 1, over sqlite): moded: this queue has no such table"
        )),
        "{out}"
    );
}

#[test]
fn a_state_between_steps_that_breaks_an_invariant_fails_even_when_the_outcome_matches() {
    let bin = toml_string(env!("CARGO_BIN_EXE_reapcheck"));
    let proxy = toml_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/adapters/proxy/forgets_a_job.py"));
    let config = format!(
        "[adapters.forgetful]\ncommand = [\"python3\", {proxy}, {bin}, \"adapter\", \"serve\", \"--db\", \"sqlite\"]\n\
         database = \"sqlite\"\n"
    );
    let project = Project::new("forgetful", &config);
    let name = "grace/beat-older-than-claim";
    let o = reapcheck_in(project.path(), &["run", "--db", "adapter:forgetful", "--exact", name]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert_eq!(counts(&out, "adapter:forgetful"), (0, 1, 0), "{out}");
    assert!(out.contains("invariant `no job is lost` broken at step 1"), "{out}");
    assert!(!out.contains("disagrees with the model"), "the last read is true: only the invariant fails\n{out}");
}

#[test]
fn an_adapter_that_sets_the_app_time_zone_itself_keeps_one_process_across_zones() {
    let bin = toml_string(env!("CARGO_BIN_EXE_reapcheck"));
    let proxy = toml_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/adapters/proxy/counts_its_starts.py"));
    // The target is reached (handshaken) under UTC before any scenario;
    // app-zone/ in name order is then New York, New York, Lord Howe, New
    // York, Lord Howe, New York: five changes of zone.
    let (utc, ny, lh) = ("UTC", "America/New_York", "Australia/Lord_Howe");
    for (mode, expected) in [("keep", vec![utc]), ("strip", vec![utc, ny, lh, ny, lh, ny])] {
        let config = format!(
            "[adapters.zones]\ncommand = [\"python3\", {proxy}, \"{mode}\", {bin}, \"adapter\", \"serve\", \"--db\", \"sqlite\"]\n\
             database = \"sqlite\"\n"
        );
        let project = Project::new(&format!("zones-{mode}"), &config);
        let o = reapcheck_in(project.path(), &["run", "--db", "adapter:zones", "app-zone/"]);
        let out = stdout(&o);
        assert!(o.status.success(), "{mode}\n{out}");
        assert_eq!(counts(&out, "adapter:zones"), (6, 0, 0), "{mode}\n{out}");
        let starts = std::fs::read_to_string(project.path().join("starts")).expect("starts written");
        assert_eq!(starts.lines().collect::<Vec<_>>(), expected, "{mode}: the processes started, by TZ\n{out}");
    }
}

/// The reference adapter and the forgetful proxy in front of it, in one
/// project.
fn forgetful_project(name: &str) -> Project {
    let bin = toml_string(env!("CARGO_BIN_EXE_reapcheck"));
    let proxy = toml_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/adapters/proxy/forgets_a_job.py"));
    let config = format!(
        "[adapters.ref]\ncommand = [{bin}, \"adapter\", \"serve\", \"--db\", \"sqlite\"]\ndatabase = \"sqlite\"\n\n\
         [adapters.forgetful]\ncommand = [\"python3\", {proxy}, {bin}, \"adapter\", \"serve\", \"--db\", \"sqlite\"]\n\
         database = \"sqlite\"\n"
    );
    Project::new(name, &config)
}

#[test]
fn explain_interleaves_the_requests_with_the_model_and_marks_where_the_states_part() {
    let project = forgetful_project("explain");
    let name = "grace/beat-older-than-claim";
    let o = reapcheck_in(project.path(), &["explain", name, "--db", "adapter:ref"]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("policy in effect (the adapter's handshake): reference policy"), "{out}");
    // The model's note for the first claim, then its request and the read after it.
    let note = out.find("@ 2026-01-15T12:00:00Z claim: a").expect("the model's note");
    let request = out[note..].find(r#"> {"seq":5,"op":"claim""#).expect("the claim request after the note");
    assert!(out[note + request..].contains(r#"> {"seq":6,"op":"read"}"#), "{out}");
    assert!(out.contains("agrees with the model at every step"), "{out}");
    assert!(!out.contains("!!"), "{out}");

    let o = reapcheck_in(project.path(), &["explain", name, "--db", "adapter:forgetful"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    let marker = out.find("!! adapter:forgetful and the model part here").expect("a parting marker");
    let first_step = out.find("@ 2026-01-15T12:00:00Z claim: a").expect("step 1");
    let second_step = out.find("@ 2026-01-15T12:00:00Z claim: c").expect("step 2");
    assert!(first_step < marker && marker < second_step, "the states part after step 1\n{out}");
    assert!(out.contains("invariant `no job is lost` broken at step 1"), "{out}");

    let o = reapcheck_in(project.path(), &["explain", name, "--db", "adapter:nope"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("no `[adapters.nope]` in reapcheck.toml (configured: adapter:forgetful, adapter:ref)"),
        "{err}"
    );
}

#[test]
fn fuzz_through_an_adapter_agrees_on_the_reference_and_shrinks_a_broken_one() {
    let project = forgetful_project("fuzz");
    let o = reapcheck_in(project.path(), &["fuzz", "--db", "adapter:ref", "--cases", "30", "--seed", "5"]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("ok       adapter:ref (reapcheck-sqlite "), "{out}");
    assert!(out.contains(": 30 cases agree with the model"), "{out}");

    let o = reapcheck_in(project.path(), &["fuzz", "--db", "adapter:forgetful", "--cases", "30", "--seed", "5"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("invariant `no job is lost` broken at step 1"), "{out}");
    let saved = project.path().join("fuzz-failures/adapter-forgetful-5.yaml");
    assert!(saved.is_file(), "the shrunk case is saved\n{out}");
    assert!(
        out.contains(
            "rerun: reapcheck run --db adapter:forgetful --scenarios fuzz-failures --exact adapter-forgetful-5"
        ),
        "{out}"
    );
    // The saved case fails again through the same adapter.
    let o = reapcheck_in(
        project.path(),
        &["run", "--db", "adapter:forgetful", "--scenarios", "fuzz-failures", "--exact", "adapter-forgetful-5"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
}

#[test]
fn a_streamed_adapter_gets_requests_ahead_of_replies_but_never_a_token_that_waits_on_a_claim() {
    let bin = toml_string(env!("CARGO_BIN_EXE_reapcheck"));
    let proxy = toml_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/adapters/proxy/streams.py"));
    // The proxy holds its replies until five requests are in: a client
    // that waited for each reply would hang here, and fail in 20 s.
    let adapters = format!(
        "[adapters.streams]\ncommand = [\"python3\", {proxy}, {bin}, \"adapter\", \"serve\", \"--db\", \"sqlite\"]\n\
         database = \"sqlite\"\ntimeout_seconds = 20\n"
    );
    let scenario = "description: Two claims, each with a heartbeat on its attempt, then a reap.\n\
                    now: 2026-01-15T12:00:00Z\nclasses:\n  Work: { timeout: 60 }\n\
                    jobs:\n  - { id: a, class: Work }\n  - { id: b, class: Work }\n\
                    steps:\n  - claim: a\n  - heartbeat: a\n  - claim: b\n  - heartbeat: b\n  - advance: 10s\n  - reap\n";
    let project = one_scenario_project("streams", &adapters, "beat-after-claim.yaml", scenario);
    let o = reapcheck_in(project.path(), &["run", "--db", "adapter:streams"]);
    let out = stdout(&o);
    // The proxy's `not_claimable` for a is not the model's `claimed`.
    assert_eq!(counts(&out, "adapter:streams"), (0, 1, 0), "{out}");
    assert!(!out.contains("hung"), "{out}");
    let requests = std::fs::read_to_string(project.path().join("requests")).expect("requests logged");
    // Each heartbeat on a latest attempt waited for its claim's reply: a's
    // claimed nothing, so it was answered `fenced` without a request; b's
    // claimed, so it went with b's label.
    let expected = [
        "handshake",
        "setup",
        "clock",
        "read",
        "claim a a/1",
        "read",
        "read",
        "claim b b/1",
        "read",
        "heartbeat b b/1",
        "read",
        "clock",
        "read",
        "reap",
        "read",
        "teardown",
    ];
    assert_eq!(requests.lines().collect::<Vec<_>>(), expected, "{out}");
}

#[test]
fn a_protocol_break_after_an_unsupported_reply_fails_the_scenario_it_would_have_skipped() {
    let bin = toml_string(env!("CARGO_BIN_EXE_reapcheck"));
    let proxy = toml_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/adapters/proxy/unsupported_then_junk.py"));
    let config = format!(
        "[adapters.junk]\ncommand = [\"python3\", {proxy}, {bin}, \"adapter\", \"serve\", \"--db\", \"sqlite\"]\n\
         database = \"sqlite\"\n"
    );
    let project = Project::new("unsupported-then-junk", &config);
    let o =
        reapcheck_in(project.path(), &["run", "--db", "adapter:junk", "--exact", "grace/beat-stamped-before-claim"]);
    let out = stdout(&o);
    assert_eq!(counts(&out, "adapter:junk"), (0, 1, 0), "{out}");
    assert!(out.contains("read (seq"), "the read sent behind the reap is named:\n{out}");
    assert!(out.contains("logs belong on stderr"), "{out}");
}

#[test]
fn a_scenario_over_a_megabyte_a_line_passes_through_the_reference_adapter() {
    // 4,000 rows: a setup line and `read` replies of about 1.2 MB each,
    // over the protocol's old 1 MiB limit.
    let scenario = "description: Four thousand live jobs and one dead one, reaped once.\n\
                    now: 2026-01-15T12:00:00Z\nclasses:\n  Work: { timeout: 60 }\n\
                    jobs:\n  - { id: live-, count: 4000, class: Work, status: processing, claimed: -10s }\n\
                    \x20 - { id: dead, class: Work, status: processing, claimed: -2m }\n\
                    steps:\n  - reap\n";
    let project = one_scenario_project("big-lines", &reference_adapter(), "many-live.yaml", scenario);
    let o = reapcheck_in(project.path(), &["run", "--db", "adapter:ref"]);
    let out = stdout(&o);
    assert_eq!(counts(&out, "adapter:ref"), (1, 0, 0), "{out}");
}

#[test]
fn a_scenario_whose_setup_is_over_the_line_limit_is_skipped_unsent_and_not_blamed_on_the_adapter() {
    // 2,200 ids of 8,000 bytes: a setup line of about 18 MB, over 16 MiB.
    let prefix = "j".repeat(7_990);
    let scenario = format!(
        "description: Long ids.\nnow: 2026-01-15T12:00:00Z\nclasses:\n  Work: {{ timeout: 60 }}\n\
         jobs:\n  - {{ id: {prefix}, count: 2200, class: Work }}\nsteps:\n  - reap\n"
    );
    let project = one_scenario_project("over-the-line", &reference_adapter(), "long-ids.yaml", &scenario);
    let o = reapcheck_in(project.path(), &["run", "--db", "adapter:ref"]);
    let out = stdout(&o);
    assert_eq!(counts(&out, "adapter:ref"), (0, 0, 1), "{out}");
    let skip = out.lines().find(|l| l.starts_with("skip")).unwrap_or_else(|| panic!("{out}"));
    assert!(out.contains("not played: it cannot go through the protocol"), "{out}");
    assert!(out.contains("over the protocol's 16777216 (16 MiB) a line; it was not sent"), "{out}");
    assert!(!skip.contains("reapcheck-adapter-serve:"), "reapcheck's own limit, not the adapter's: {skip}");
}

#[test]
fn an_exception_reply_that_echoes_a_password_is_shown_redacted() {
    let config =
        "[adapters.leak]\ncommand = [\"sh\", \"moded.sh\"]\ndatabase = \"sqlite\"\nenv = { MODE = \"leak\" }\n";
    let project = Project::new("leak", config);
    std::fs::write(project.path().join("moded.sh"), MODED).expect("script written");
    let o = reapcheck_in(
        project.path(),
        &["run", "--db", "adapter:leak", "--exact", "grace/beat-older-than-claim", "--report", "out"],
    );
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("`setup` raised: boom postgres://app:***@db:5432/test"), "{out}");
    assert!(!out.contains("s3cretpw"), "{out}");
    let report = std::fs::read_to_string(project.path().join("out/outcomes.json")).expect("outcomes.json");
    assert!(!report.contains("s3cretpw"), "{report}");
}

#[test]
fn an_adapter_whose_handshake_breaks_the_protocol_fails_even_when_skips_are_allowed() {
    let config = "[adapters.junk]\ncommand = [\"sh\", \"-c\", \"read line; echo 'INFO starting'; sleep 5\"]\ndatabase = \"sqlite\"\n";
    let project = Project::new("junk-handshake", config);
    let name = "grace/beat-older-than-claim";
    let o = reapcheck_in(project.path(), &["run", "--db", "adapter:junk", "--allow-skip", "--exact", name]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("FAIL     adapter:junk (its handshake broke the protocol; 1 scenarios not run)"), "{out}");
    assert!(!out.contains("--allow-skip"), "no advice to skip a broken adapter\n{out}");
    assert_eq!(counts(&out, "adapter:junk"), (0, 1, 0), "{out}");
}

#[test]
fn a_ports_time_resolution_crosses_the_handshake() {
    // The whole-second port (harness/tests/ports/whole-second) behind the
    // reference adapter declares `time_resolution = 1s` in its handshake,
    // so the model runs at whole seconds and the corpus passes, as it does
    // in SQL mode with the port's dialect.toml.
    let bin = toml_string(env!("CARGO_BIN_EXE_reapcheck"));
    let port = toml_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/ports/whole-second"));
    let config = format!(
        "[adapters.ws]\ncommand = [{bin}, \"adapter\", \"serve\", \"--db\", \"sqlite\", \"--dialects\", {port}]\n\
         database = \"sqlite\"\n"
    );
    let project = Project::new("whole-second", &config);
    let o = reapcheck_in(project.path(), &["run", "--db", "adapter:ws"]);
    let out = stdout(&o);
    assert!(out.contains("time_resolution = 1s"), "the opening line names it\n{out}");
    let (passed, failed, _) = counts(&out, "adapter:ws");
    assert_eq!(failed, 0, "{out}");
    assert!(passed > 100, "{out}");
}

/// An adapter in `sh` that handshakes, then on `setup` says so in a file
/// and never answers (it sleeps).
const SLOW_SETUP: &str = r#"while read -r line; do
  seq=$(printf '%s' "$line" | sed 's/^{"seq":\([0-9]*\).*/\1/')
  case "$line" in
    *'"op":"handshake"'*)
      echo '{"seq":'"$seq"',"reply":"ok","result":{"protocol_version":1,"adapter":{"name":"slow","version":"1","language":"sh"},"queue":{"name":"none","version":"0"},"capabilities":{"features":["leases","legacy","worker_fail","hooks"],"split_reap":true,"clocks":["app"]}}}' ;;
    *'"op":"setup"'*) echo started > setup-started; sleep 300 ;;
    *) echo '{"seq":'"$seq"',"reply":"ok","result":{}}' ;;
  esac
done
"#;

#[cfg(unix)]
#[test]
fn sigint_during_an_adapter_request_stops_at_once_and_nothing_is_passed() {
    let config = "[adapters.slow]\ncommand = [\"sh\", \"slow.sh\"]\ndatabase = \"sqlite\"\ntimeout_seconds = 600\n";
    let project = Project::new("slow", config);
    std::fs::write(project.path().join("slow.sh"), SLOW_SETUP).expect("script written");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_reapcheck"));
    cmd.args(["run", "--db", "adapter:slow", "--exact", "grace/beat-older-than-claim"])
        .current_dir(project.path())
        .stdout(std::process::Stdio::piped());
    for v in ["REAPCHECK_REQUIRE", "REAPCHECK_DB", "CI"] {
        cmd.env_remove(v);
    }
    let mut child = cmd.spawn().expect("the binary starts");
    let started = project.path().join("setup-started");
    // The adapter is mid-request (its request timeout is 600 s).
    let waited = std::time::Instant::now();
    while !started.exists() {
        assert!(waited.elapsed() < std::time::Duration::from_secs(120), "the setup never reached the adapter");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let pid = i32::try_from(child.id()).expect("a pid");
    // SAFETY: kill only sends a signal to our own child.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    // Without the interrupt the run would wait out the 600 s request limit.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let status = loop {
        if let Some(status) = child.try_wait().expect("waitable") {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("reapcheck did not stop within 120 s of SIGINT during an adapter request");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let mut out = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().expect("stdout"), &mut out).expect("stdout read");
    assert_eq!(status.code(), Some(130), "{out}");
    assert!(out.contains("interrupted by SIGINT mid-run; its namespace was dropped"), "{out}");
    assert_eq!(counts(&out, "adapter:slow"), (0, 0, 1), "skipped, never passed\n{out}");
}
