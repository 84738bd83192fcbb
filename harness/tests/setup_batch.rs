//! Setup rows go in as multi-row INSERTs (issue 22): a scenario's 1,001
//! jobs take a handful of statements instead of 1,001 round trips, every
//! row is still in the trace with its `file:line`, and the outcome still
//! equals the snapshot. Counted from what the backends sent
//! (`REAPCHECK_CAPTURE_SQL`, the capture `bench --compare` replays). Runs on
//! sqlite always, and on PostgreSQL and MariaDB when their URLs are set.

mod common;

use common::{Scratch, clean_command, root, stdout};
use reapcheck::reach::test_url;
use reapcheck::target::Target;

/// The captured statements that insert into `jobs`, and the rows they
/// changed in all.
fn job_inserts(capture: &str) -> (usize, usize) {
    let mut statements = 0;
    let mut rows = 0;
    for line in capture.lines() {
        let event: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        let Some(sql) = event.pointer("/sql/sql").and_then(|s| s.as_str()) else { continue };
        if sql.trim_start().to_ascii_uppercase().starts_with("INSERT INTO JOBS") {
            statements += 1;
            let returned = event.pointer("/sql/returned").and_then(|s| s.as_str()).unwrap_or_default();
            rows += returned.strip_prefix("changed ").and_then(|n| n.parse::<usize>().ok()).unwrap_or(0);
        }
    }
    (statements, rows)
}

#[test]
fn a_thousand_setup_rows_are_a_few_statements_and_a_row_each_in_the_trace() {
    let mut targets = vec![("sqlite", None)];
    for target in [Target::Postgres, Target::Mariadb] {
        if let Some(url) = test_url(target) {
            targets.push((target.name(), Some((target.url_variable(), url))));
        }
    }
    for (target, url) in targets {
        let scratch = Scratch::new("setup_batch", target);
        let capture = scratch.0.join("capture.jsonl");
        let run = |extra: &[&str], capture: Option<&std::path::Path>| {
            let mut args = vec!["run", "--db", target, "--jobs", "1", "--exact", "boundaries/1001-rows"];
            args.extend_from_slice(extra);
            let mut cmd = clean_command(&root(), &args);
            if let Some((variable, url)) = &url {
                cmd.env(variable, url);
            }
            if let Some(capture) = capture {
                cmd.env("REAPCHECK_CAPTURE_SQL", capture);
            }
            let out = cmd.output().expect("the binary runs");
            let text = stdout(&out);
            assert!(out.status.success(), "{target}: {text}{}", common::stderr(&out));
            assert!(text.contains(&format!("ok       boundaries/1001-rows  on {target}")), "{text}");
            text
        };
        run(&[], Some(&capture));
        let (statements, rows) = job_inserts(&std::fs::read_to_string(&capture).expect("a capture"));
        // 1,001 rows of 11 values: 181 rows per statement (2,000 values at most).
        assert_eq!((statements, rows), (6, 1001), "{target}: INSERTs and rows for 1,001 jobs");
        let traced = run(&["--trace"], None);
        let traced = traced.lines().filter(|l| l.trim_start().starts_with("insert_job (dialects/")).count();
        assert_eq!(traced, 1001, "{target}: one trace line per row");
    }
}

/// The reference adapter inserts a setup's rows as SQL mode does: its
/// `setup` of three jobs is one INSERT, sent before the setup's reply.
#[test]
fn the_reference_adapter_sends_its_setup_rows_as_one_insert_before_it_replies() {
    use std::io::Write;
    let scratch = Scratch::new("setup_batch", "serve");
    let capture = scratch.0.join("capture.jsonl");
    let job = |id: &str| {
        serde_json::json!({"id": id, "class": "C", "queue": "default", "status": "pending", "attempts": 0,
            "max_retries": 3, "claim_timeout": null, "claim_token": null, "concurrency_key": null,
            "heartbeat_at": null, "run_at": "2026-01-15T12:00:00.000000Z", "updated_at": "2026-01-15T12:00:00.000000Z"})
    };
    let setup = serde_json::json!({"seq": 2, "op": "setup", "scenario": "t", "namespace": "rc_test_1",
        "database": null, "now": "2026-01-15T12:00:00.000000Z", "app_time_zone": "UTC", "session_time_zone": null,
        "schema": "standard", "settings": {"heartbeat_grace": 300},
        "classes": {"C": {"timeout": 60, "idempotent": true, "heartbeat_grace": null, "max_retries": 3,
            "base_delay": 2, "max_delay": 3600, "exclusive": false, "concurrency_key": null, "loadable": true}},
        "jobs": [job("a"), job("b"), job("c")], "leases": []});
    let mut child = clean_command(&root(), &["adapter", "serve", "--db", "sqlite"])
        .env("REAPCHECK_CAPTURE_SQL", &capture)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let mut stdin = child.stdin.take().expect("piped");
    writeln!(stdin, r#"{{"seq":1,"op":"handshake","protocol_versions":[1],"reapcheck":"0.1.0"}}"#).expect("written");
    writeln!(stdin, "{setup}").expect("written");
    // Closed before any other request: the rows must be in by the reply.
    drop(stdin);
    let out = child.wait_with_output().expect("it exits");
    let replies = stdout(&out);
    assert!(replies.lines().nth(1).is_some_and(|l| l.contains(r#""reply":"ok""#)), "{replies}");
    let (statements, rows) = job_inserts(&std::fs::read_to_string(&capture).expect("a capture"));
    assert_eq!((statements, rows), (1, 3), "INSERTs and rows for 3 jobs\n{replies}");
}
