//! `reapcheck verdict` on legs run the way a user runs them: the built
//! binary in a folder outside this repository (no `reapcheck.toml`, so the
//! `builtin` scenarios and SQL), on embedded SQLite. Two legs that ran
//! different scenarios, or the same target on different SQL, must fail the
//! verdict; two legs that ran the same must pass it (docs/reports.md).

mod common;
use common::Scratch;

use std::path::Path;

/// The binary in `dir` with none of the caller's settings: its exit code
/// and its stdout and stderr together.
fn reapcheck(dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    let o = common::clean_run(dir, args);
    (o.status.code(), format!("{}{}", common::stdout(&o), common::stderr(&o)))
}

/// Runs leg `leg` on sqlite in `dir` with `extra` arguments, its reports
/// in `dir/<leg>`; panics unless the run passed.
fn leg(dir: &Path, leg: &str, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["run", "--db", "sqlite", "--leg", leg, "--report", leg];
    args.extend_from_slice(extra);
    let (code, out) = reapcheck(dir, &args);
    assert_eq!(code, Some(0), "{out}");
    let text = std::fs::read_to_string(dir.join(leg).join("outcomes.json")).expect("outcomes.json");
    serde_json::from_str(&text).expect("JSON")
}

#[test]
fn a_filtered_leg_or_another_sql_fails_the_verdict_outside_the_repository() {
    let scratch = Scratch::new("verdict", "legs");
    let dir = &scratch.0;
    assert!(!dir.starts_with(env!("CARGO_MANIFEST_DIR")), "outside the repository");

    let full = leg(dir, "full", &[]);
    let again = leg(dir, "again", &[]);
    let grace = leg(dir, "grace", &["grace/"]);
    let hash = |o: &serde_json::Value| o["corpus_hash"].as_str().expect("a corpus hash").to_owned();
    assert!(hash(&full).starts_with("sha256:"), "the builtin corpus is hashed: {}", hash(&full));
    assert_eq!(hash(&full), hash(&again));
    assert_ne!(hash(&full), hash(&grace));
    assert_eq!(grace["filters"], serde_json::json!(["grace/"]));
    assert!(
        full["reapcheck_version"].as_str().is_some_and(|v| v.contains("(commit ")),
        "{}",
        full["reapcheck_version"]
    );
    let sqlite = full["targets"].as_array().and_then(|t| t.iter().find(|t| t["target"] == "sqlite")).expect("sqlite");
    let code = sqlite["code"].as_str().expect("code");
    assert!(code.starts_with("builtin sqlite sha256:") && code.ends_with("; reference policy"), "{code}");

    // Every report of the leg says whose SQL ran on sqlite.
    for file in ["summary.md", "junit.xml", "matrix.html"] {
        let text = std::fs::read_to_string(dir.join("full").join(file)).expect(file);
        assert!(text.contains(code), "{file} does not name {code}:\n{text}");
    }

    // The same corpus and SQL twice: the verdict passes.
    let (status, out) = reapcheck(dir, &["verdict", "full", "again", "--expect", "full,again", "--out", "m1"]);
    assert_eq!(status, Some(0), "{out}");
    // Per column: whose code ran, and counts of its own (the model's cases
    // are not added to the database's).
    let line = |target: &str| {
        out.lines()
            .find(|l| l.starts_with(&format!("    {target}")))
            .unwrap_or_else(|| panic!("no {target} line: {out}"))
    };
    let passed = |l: &str| l.split(": ").nth(1).and_then(|c| c.split(' ').next()).map(str::to_owned);
    assert!(line("sqlite").ends_with(&format!("; ran {code}")), "verdict shows whose code ran per column: {out}");
    assert_eq!(passed(line("sqlite")), passed(line("model")), "{out}");

    // A leg filtered to grace/ is refused, by its filter and its corpus.
    let (code, out) = reapcheck(dir, &["verdict", "full", "grace", "--expect", "full,grace", "--out", "m2"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("leg `grace` ran only grace/ but leg `full` ran the whole corpus"), "{out}");
    assert!(out.contains("leg `grace` ran corpus sha256:"), "{out}");

    // The same target on a port's copy of the SQL (one comment more) is
    // refused: the column would mix two codes.
    let port = dir.join("port/sqlite");
    std::fs::create_dir_all(&port).expect("a port folder");
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../dialects/sqlite");
    for file in std::fs::read_dir(&shipped).expect("dialects/sqlite") {
        let file = file.expect("a file").path();
        let text = std::fs::read_to_string(&file).expect("readable");
        let text = if file.ends_with("reaper.sql") { format!("-- our port\n{text}") } else { text };
        std::fs::write(port.join(file.file_name().expect("a name")), text).expect("the copy");
    }
    let ported = leg(dir, "ported", &["--dialects", "port"]);
    assert_eq!(hash(&ported), hash(&full), "the same scenarios");
    let (code, out) = reapcheck(dir, &["verdict", "full", "ported", "--expect", "full,ported", "--out", "m3"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("leg `ported` ran sqlite with ") && out.contains("but leg `full` ran it with builtin sqlite"),
        "{out}"
    );
}

#[test]
fn the_version_names_the_commit() {
    let (code, out) = reapcheck(&std::env::temp_dir(), &["--version"]);
    assert_eq!(code, Some(0), "{out}");
    let commit = out.trim().strip_prefix("reapcheck 0.1.0 (commit ").and_then(|c| c.strip_suffix(')'));
    assert!(
        commit.is_some_and(|c| c == "unknown" || (c.len() == 12 && c.bytes().all(|b| b.is_ascii_hexdigit()))),
        "{out}"
    );
}
