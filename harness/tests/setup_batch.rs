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
