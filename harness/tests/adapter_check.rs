//! `reapcheck adapter check` against the reference adapter (it must pass)
//! and against one broken adapter per rule (each must fail, naming the
//! request and printing the offending line); and every JSON example of
//! docs/adapter-protocol.md against the protocol's schemas.
//!
//! The broken adapters are python3 scripts in tests/adapters/broken/, each
//! a correct minimal adapter (`common.py`, also checked here: it passes)
//! with one rule broken.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use reapcheck::adapter::check::{check_any_reply, check_request};
use reapcheck::adapter::protocol::{Body, OpResult, Reply, Request};

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn check(adapter: &[&str], extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_reapcheck"))
        .args(["adapter", "check"])
        .args(extra)
        .arg("--")
        .args(adapter)
        .current_dir(manifest_dir())
        .output()
        .expect("reapcheck runs")
}

fn broken(name: &str) -> Output {
    broken_with(name, &[])
}

fn broken_with(name: &str, extra: &[&str]) -> Output {
    let script = manifest_dir().join("tests/adapters/broken").join(format!("{name}.py"));
    check(&["python3", "-B", script.to_str().unwrap()], extra)
}

fn text(o: &Output) -> (String, String) {
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

#[test]
fn the_reference_adapter_passes() {
    let o = check(&[env!("CARGO_BIN_EXE_reapcheck"), "adapter", "serve", "--db", "sqlite"], &[]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "stdout:\n{out}\nstderr:\n{err}");
    assert_eq!(out.lines().filter(|l| l.starts_with("> ")).count(), 10, "{out}");
    assert_eq!(out.lines().filter(|l| l.starts_with("< ")).count(), 10, "{out}");
    assert!(out.contains(r#"< {"seq":7,"reply":"ok","result":{"changed":1}}"#), "the reap reclaims a:\n{out}");
    assert!(out.contains("every reply holds"), "{out}");
}

/// `adapter check --timeout-seconds <timeout>` of the streams proxy (in
/// front of the reference adapter) holding its replies until `hold`
/// requests are in; the output and the requests the proxy logged.
fn check_streams(hold: &str, timeout: &str) -> (Output, String) {
    let dir = std::env::temp_dir().join(format!("reapcheck-check-streamed-{hold}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let proxy = manifest_dir().join("tests/adapters/proxy/streams.py");
    let o = Command::new(env!("CARGO_BIN_EXE_reapcheck"))
        .args(["adapter", "check", "--timeout-seconds", timeout, "--", "python3", "-B"])
        .arg(&proxy)
        .args([env!("CARGO_BIN_EXE_reapcheck"), "adapter", "serve", "--db", "sqlite"])
        .env("HOLD", hold)
        .current_dir(&dir)
        .output()
        .expect("reapcheck runs");
    let requests = std::fs::read_to_string(dir.join("requests")).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    (o, requests)
}

#[test]
fn a_streamed_adapter_is_checked_with_its_requests_sent_ahead_as_run_sends_them() {
    // Setup, clock and claim go at once (a check that waited for each
    // reply would time out on the setup); the heartbeat waits for the
    // claim's reply, and then the rest go.
    let (o, requests) = check_streams("3", "20");
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.contains("the handshake declares `streamed`"), "{out}");
    assert_eq!(out.lines().filter(|l| l.starts_with("< ")).count(), 10, "{out}");
    assert_eq!(requests.lines().count(), 10, "{requests}");
}

#[test]
fn a_streamed_adapter_that_waits_for_more_than_run_sends_ahead_fails_the_check() {
    // Holding for a fourth request is waiting for the heartbeat, which
    // `run` sends only after the claim's reply: the adapter hangs.
    let (o, requests) = check_streams("4", "2");
    fails("streams HOLD=4", &o, "setup", 2, "no reply within 2 s", None);
    assert_eq!(requests.lines().collect::<Vec<_>>(), ["handshake", "setup", "clock", "claim a a/1"], "{requests}");
}

#[test]
fn the_minimal_correct_adapter_passes() {
    let o = broken("common");
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "stdout:\n{out}\nstderr:\n{err}");
}

/// Fails with exit 1; the error names `op` and `seq` and contains `what`;
/// with `line`, the offending line is printed.
fn fails(name: &str, o: &Output, op: &str, seq: u64, what: &str, line: Option<&str>) {
    let (out, err) = text(o);
    assert_eq!(o.status.code(), Some(1), "{name}: stdout:\n{out}\nstderr:\n{err}");
    let head = format!("reply to {op} (seq {seq}), line {seq}: ");
    let error = err.lines().find(|l| l.starts_with("error: ")).unwrap_or_else(|| panic!("{name}: no error in\n{err}"));
    assert!(error.contains(&head), "{name}: {error}");
    assert!(error.contains(what), "{name}: wanted {what:?} in {error}");
    if let Some(line) = line {
        let shown = err.lines().find_map(|l| l.trim_start().strip_prefix("offending line: "));
        assert!(shown.is_some_and(|l| l.contains(line)), "{name}: the line is not shown:\n{err}");
    }
}

#[test]
fn a_log_line_on_stdout_fails_with_the_hint() {
    let o = broken("log_on_stdout");
    fails("log_on_stdout", &o, "setup", 2, "logs belong on stderr", Some("INFO creating tables in rc_"));
}

#[test]
fn a_wrong_seq_fails() {
    let o = broken("wrong_seq");
    fails("wrong_seq", &o, "claim", 4, "must echo its request's seq 4", Some(r#"{"seq": 3, "reply": "ok""#));
}

#[test]
fn an_unknown_field_fails_naming_it() {
    let o = broken("unknown_field");
    fails("unknown_field", &o, "heartbeat", 5, "elapsed_ms", Some(r#""elapsed_ms": 3"#));
}

#[test]
fn an_unknown_reply_kind_fails() {
    let o = broken("unknown_reply_kind");
    fails("unknown_reply_kind", &o, "reap", 7, "`/reply`", Some(r#""reply": "partial""#));
}

#[test]
fn an_unknown_error_kind_fails() {
    let o = broken("unknown_error_kind");
    fails("unknown_error_kind", &o, "complete", 8, "`/kind`", Some(r#""kind": "timeout""#));
}

#[test]
fn an_adapter_that_speaks_no_version_of_reapcheck_fails() {
    let o = broken("no_common_version");
    fails("no_common_version", &o, "handshake", 1, "speaks none of the protocol versions", Some("version 2 only"));
}

#[test]
fn a_hang_fails_naming_the_request() {
    let o = broken_with("hangs", &["--timeout-seconds", "1"]);
    fails("hangs", &o, "read", 9, "no reply within 1 s", None);
}

#[test]
fn an_adapter_that_exits_mid_script_fails_with_its_stderr() {
    let o = broken("exits");
    fails("exits", &o, "claim", 4, "exited with status 3", None);
    assert!(text(&o).1.contains("Traceback: claim crashed"), "the stderr tail is shown:\n{}", text(&o).1);
}

#[test]
fn a_command_that_cannot_start_fails_on_the_handshake() {
    let o = check(&["./no-such-adapter"], &[]);
    fails("no-such-adapter", &o, "handshake", 1, "cannot start", None);
}

#[test]
fn help_of_serve_and_check_lists_examples_environment_and_exit_codes() {
    for command in ["serve", "check"] {
        let o = Command::new(env!("CARGO_BIN_EXE_reapcheck")).args(["adapter", command, "--help"]).output().unwrap();
        let help = text(&o).0;
        assert!(o.status.success(), "{command}");
        for section in ["Examples:\n", "Environment:\n", "Exit codes:\n  0  ", &format!("reapcheck adapter {command} ")]
        {
            assert!(help.contains(section), "`adapter {command} --help` has no {section:?}:\n{help}");
        }
    }
}

/// Every message in the doc's ```json blocks (a block holds one or more
/// objects, each on one line or over several), compacted.
fn doc_messages(doc: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(doc).unwrap();
    let mut messages = Vec::new();
    let mut block: Option<String> = None;
    for line in text.lines() {
        match (&mut block, line.trim_start()) {
            (None, "```json") => block = Some(String::new()),
            (Some(b), "```") => {
                for value in serde_json::Deserializer::from_str(b).into_iter::<serde_json::Value>() {
                    messages.push(
                        value.unwrap_or_else(|e| panic!("a JSON example that is not JSON: {e}\n{b}")).to_string(),
                    );
                }
                block = None;
            }
            (Some(b), _) => {
                b.push_str(line);
                b.push('\n');
            }
            (None, _) => {}
        }
    }
    messages
}

#[test]
fn every_json_example_of_the_protocol_doc_validates() {
    let doc = manifest_dir().join("../docs/adapter-protocol.md");
    let messages = doc_messages(&doc);
    assert!(messages.len() >= 10, "found only {} examples", messages.len());
    let (mut requests, mut replies) = (Vec::<Request>::new(), 0);
    for message in &messages {
        let value: serde_json::Value = serde_json::from_str(message).unwrap_or_else(|e| panic!("{message}: {e}"));
        let compact = value.to_string();
        if value.get("op").is_some() {
            check_request(&compact).unwrap_or_else(|e| panic!("request {message}: {e}"));
            requests.push(Request::from_line(&compact).unwrap_or_else(|e| panic!("request {message}: {e}")));
        } else {
            check_any_reply(&compact).unwrap_or_else(|e| panic!("reply {message}: {e}"));
            let reply = Reply::from_line(&compact).unwrap_or_else(|e| panic!("reply {message}: {e}"));
            // A reply to a request shown before it decodes as that op's.
            if let (Body::Ok(ok), Some(request)) = (&reply.body, requests.iter().rev().find(|r| r.seq == reply.seq)) {
                OpResult::decode(&request.op, ok.result.clone()).unwrap_or_else(|e| panic!("reply {message}: {e}"));
            }
            replies += 1;
        }
    }
    assert!(requests.len() >= 5 && replies >= 5, "{} requests, {replies} replies", requests.len());
}

#[test]
fn an_exception_to_a_step_every_queue_has_fails() {
    let o = broken("raises_on_claim");
    fails("raises_on_claim", &o, "claim", 4, "the adapter raised on `claim`: KeyError: 'a'", None);
}

#[test]
fn a_setup_unsupported_on_sqlite_fails_and_names_the_database_flag() {
    let o = broken("setup_unsupported");
    fails("setup_unsupported", &o, "setup", 2, "give `--db <target>`", None);
    // On a database the adapter's setup is answered, and the check passes.
    let Some(url) = std::env::var("REAPCHECK_POSTGRES_URL").ok().filter(|u| !u.is_empty()) else {
        eprintln!("skipped the --db postgres half: REAPCHECK_POSTGRES_URL is not set");
        return;
    };
    let o = broken_with("setup_unsupported", &["--db", "postgres"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.contains(r#""database":{"target":"postgres","url":"#), "{out}");
    let _ = url;
}

#[test]
fn the_reference_adapter_passes_on_postgres_and_leaves_no_namespace() {
    let Some(url) = std::env::var("REAPCHECK_POSTGRES_URL").ok().filter(|u| !u.is_empty()) else {
        eprintln!("skipped: REAPCHECK_POSTGRES_URL is not set");
        return;
    };
    let o = check(&[env!("CARGO_BIN_EXE_reapcheck"), "adapter", "serve", "--db", "postgres"], &["--db", "postgres"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.contains(r#"< {"seq":7,"reply":"ok","result":{"changed":1}}"#), "{out}");
    let namespace = out
        .split(r#""namespace":""#)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("the setup names its namespace")
        .to_owned();
    let listed = Command::new("psql")
        .args([url.as_str(), "-Atc", &format!("SELECT count(*) FROM pg_namespace WHERE nspname = '{namespace}'")])
        .output()
        .expect("psql runs (PostgreSQL's client, beside the server this test uses)");
    assert!(listed.status.success(), "{}", String::from_utf8_lossy(&listed.stderr));
    assert_eq!(String::from_utf8_lossy(&listed.stdout).trim(), "0", "{namespace} was left behind");
    let o = check(&["true"], &["--db", "postgres"]);
    assert_ne!(o.status.code(), Some(0));
}
