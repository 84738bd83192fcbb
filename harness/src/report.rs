//! Reports of a run: JUnit XML (one suite per target, one case per
//! scenario) and a plain summary naming each target's server and version,
//! beside the leg's outcome file ([`outcomes`]), its HTML matrix
//! ([`html`]) and its Markdown summary ([`markdown`]); docs/reports.md
//! describes them. A case that did not run is `skipped` in all of them,
//! never passed. Every file is written atomically.

pub mod html;
pub mod markdown;
pub mod matrix;
pub mod outcomes;
pub mod verdict;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};

use crate::runner::Verdict;

/// The server recorded for every case of a target that was required but
/// could not be reached (or an adapter whose handshake failed): none of
/// its scenarios ran. Each report shows such a target as one failure with
/// its cause, not one per scenario.
pub const NOT_REACHED: &str = "not reached";

/// The server recorded for every case of a target that was skipped.
pub const NOT_RUN: &str = "not run";

/// One scenario on the model or one target.
#[derive(Clone, Debug)]
pub struct CaseRecord {
    /// The scenario's name.
    pub scenario: String,
    /// `model` or the target's name.
    pub target: String,
    /// The server and version reached, or the reason none was.
    pub server: String,
    /// What happened.
    pub verdict: Verdict,
    /// How long it took.
    pub elapsed: Duration,
    /// `sha256:<hex>` of the outcome document the target produced, when it
    /// finished and was compared under the reference profile (so that the
    /// same hash on two targets means the same outcome).
    pub outcome_hash: Option<String>,
    /// The one-line command that reruns exactly this case.
    pub rerun: Option<String>,
    /// The scenario's file (`builtin:/…` for the corpus inside reapcheck).
    pub file: String,
}

/// The JUnit XML document for `records`. A run `interrupted` by a signal
/// (`SIGINT`, `SIGTERM`) gives every suite the property
/// `interrupted=<signal>`: the cases it did not run are skipped, and the
/// document is incomplete. Each suite of a target in `code` (target, whose
/// code ran: [`outcomes::RunInfo::code`]) has the property `code`.
pub fn junit(records: &[CaseRecord], interrupted: Option<&str>, code: &[(String, String)]) -> String {
    let mut report = Report::new("reapcheck");
    for (target, cases) in by_target(records) {
        let mut suite = TestSuite::new(target);
        if let Some(signal) = interrupted {
            suite.add_property(quick_junit::Property::new("interrupted", signal));
        }
        if let Some((_, code)) = code.iter().find(|(t, _)| t == target) {
            suite.add_property(quick_junit::Property::new("code", code.as_str()));
        }
        if let Some(reason) = unreached(&cases) {
            // One failure with the cause; the scenarios, which never ran,
            // are skipped (never passed) so a CI reader sees one red line.
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_message(format!("{target} was not reached: {reason}"));
            s.set_description(format!("{} scenarios not run: {reason}", cases.len()));
            let mut case = TestCase::new(format!("{target} reached"), s);
            case.set_classname(target);
            suite.add_test_case(case);
            for r in &cases {
                let mut s = TestCaseStatus::skipped();
                s.set_message(format!("not run: {target} was not reached"));
                let mut case = TestCase::new(r.scenario.clone(), s);
                case.set_classname(r.target.clone());
                suite.add_test_case(case);
            }
            report.add_test_suite(suite);
            continue;
        }
        for r in cases {
            let status = match &r.verdict {
                Verdict::Ok | Verdict::New => TestCaseStatus::success(),
                Verdict::Diverged(reason) => {
                    let mut s = TestCaseStatus::success();
                    s.set_description(format!("declared divergence: {reason}"));
                    s
                }
                Verdict::Skipped(reason) => {
                    let mut s = TestCaseStatus::skipped();
                    s.set_message(reason.clone());
                    s
                }
                Verdict::Fail(detail) => {
                    let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                    s.set_message(detail.lines().next().unwrap_or("failed").to_owned());
                    s.set_description(detail.clone());
                    s
                }
            };
            let mut case = TestCase::new(r.scenario.clone(), status);
            // The identity (class and name) stays the same when the server
            // is upgraded; the version it ran on is a property.
            case.set_classname(r.target.clone());
            case.add_property(Property::new("server", r.server.clone()));
            // Where to look and what to type: the scenario file (line 1:
            // an outcome belongs to the whole file) and, for a failure, the
            // command that reruns it.
            case.add_property(Property::new("file", format!("{}:1", r.file)));
            if let (Verdict::Fail(_), Some(rerun)) = (&r.verdict, &r.rerun) {
                case.add_property(Property::new("rerun", rerun.as_str()));
            }
            case.set_time(r.elapsed);
            suite.add_test_case(case);
        }
        report.add_test_suite(suite);
    }
    report.to_string().expect("a report always serializes")
}

/// One line per target: its server and its counts; first, when the run was
/// `interrupted` by a signal, a line saying the counts are incomplete.
pub fn summary(records: &[CaseRecord], interrupted: Option<&str>, code: &[(String, String)]) -> String {
    let mut out = String::new();
    if let Some(signal) = interrupted {
        out.push_str(&format!("INCOMPLETE: interrupted by {signal}; the cases it did not run are skipped\n"));
    }
    for (target, cases) in by_target(records) {
        let count = |f: fn(&Verdict) -> bool| cases.iter().filter(|r| f(&r.verdict)).count();
        let passed = count(|v| matches!(v, Verdict::Ok | Verdict::New | Verdict::Diverged(_)));
        let failed = count(|v| matches!(v, Verdict::Fail(_)));
        let skipped = count(|v| matches!(v, Verdict::Skipped(_)));
        let server = &cases[0].server;
        let ran = code.iter().find(|(t, _)| t == target).map_or(String::new(), |(_, c)| format!("; ran {c}"));
        out.push_str(&format!("{target} [{server}]: {passed} passed, {failed} failed, {skipped} skipped{ran}\n"));
    }
    out
}

/// The cause, when every case of one target failed because the target was
/// not reached ([`NOT_REACHED`]): the first case's message without its
/// `not run: ` prefix.
fn unreached(cases: &[&CaseRecord]) -> Option<String> {
    let all =
        !cases.is_empty() && cases.iter().all(|r| r.server == NOT_REACHED && matches!(r.verdict, Verdict::Fail(_)));
    let Verdict::Fail(detail) = &cases.first()?.verdict else { return None };
    all.then(|| detail.lines().next().unwrap_or_default().trim_start_matches("not run: ").to_owned())
}

fn by_target(records: &[CaseRecord]) -> BTreeMap<&str, Vec<&CaseRecord>> {
    let mut map: BTreeMap<&str, Vec<&CaseRecord>> = BTreeMap::new();
    for r in records {
        map.entry(r.target.as_str()).or_default().push(r);
    }
    map
}

/// The files [`write`] puts in a report folder.
pub const FILES: [&str; 5] = ["junit.xml", "summary.txt", outcomes::FILE_NAME, "matrix.html", "summary.md"];

/// Writes `junit.xml`, `summary.txt`, `outcomes.json`, `matrix.html` and
/// `summary.md` into `dir`, each atomically (a temporary file renamed over
/// the old one).
pub fn write(dir: &Path, records: &[CaseRecord], run: &outcomes::RunInfo) -> std::io::Result<()> {
    let leg = outcomes::LegOutcomes::new(records, run);
    let matrix = matrix::Matrix::new(std::slice::from_ref(&leg));
    let files = [
        ("junit.xml", junit(records, run.interrupted.as_deref(), &run.code)),
        ("summary.txt", summary(records, run.interrupted.as_deref(), &run.code)),
        (outcomes::FILE_NAME, leg.to_json()),
        ("matrix.html", html::render(&matrix, &[])),
        ("summary.md", markdown::render(&matrix, &[])),
    ];
    for (name, text) in files {
        write_atomic(dir, name, &text)?;
    }
    Ok(())
}

/// Writes `text` to `dir/name` through a temporary file renamed over it,
/// so a reader never sees half a file; creates `dir`.
pub fn write_atomic(dir: &Path, name: &str, text: &str) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(".{name}.tmp"));
    // Every message was redacted where it was made; this is the last line:
    // nothing written here may carry a credential.
    std::fs::write(&tmp, crate::redact::text(text))?;
    std::fs::rename(&tmp, dir.join(name))
}

/// Removes the report files of an earlier run from `dir` (a missing folder
/// or file is fine), so that a run that ends early (invalid input, exit 2)
/// never leaves the previous run's passing report in place.
pub fn clear(dir: &Path) -> std::io::Result<()> {
    for name in FILES {
        match std::fs::remove_file(dir.join(name)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    Ok(())
}

/// The closing list of failures at the end of `run`'s output: one line per
/// failed case with its rerun command; empty when nothing failed.
/// A target that was not reached is one line with its cause and the
/// command that reruns it, not one per scenario.
pub fn failure_list(records: &[CaseRecord]) -> String {
    let failed: Vec<&CaseRecord> = records.iter().filter(|r| r.verdict.is_failure()).collect();
    if failed.is_empty() {
        return String::new();
    }
    let groups = by_target(records);
    let unreached: BTreeMap<&str, String> =
        groups.iter().filter_map(|(t, cases)| Some((*t, unreached(cases)?))).collect();
    let lines = failed.iter().filter(|r| !unreached.contains_key(r.target.as_str())).count() + unreached.len();
    let mut out = format!("failures ({lines}):\n");
    for (target, reason) in &unreached {
        let n = groups[target].len();
        out.push_str(&format!("    {target} was not reached ({n} scenarios not run): {reason}\n"));
    }
    for r in failed.into_iter().filter(|r| !unreached.contains_key(r.target.as_str())) {
        out.push_str(&format!("    {} on {}", r.scenario, r.target));
        if let Some(rerun) = &r.rerun {
            out.push_str(&format!(": {rerun}"));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(target: &str, verdict: Verdict) -> CaseRecord {
        CaseRecord {
            scenario: "grace/floor".into(),
            target: target.into(),
            server: if target == "mssql" { "not reached".into() } else { format!("{target} 1.0") },
            verdict,
            elapsed: Duration::from_millis(3),
            outcome_hash: None,
            rerun: Some(format!("reapcheck run --db {target} --exact grace/floor")),
            file: "scenarios/grace/floor.yaml".into(),
        }
    }

    #[test]
    fn skipped_cases_are_never_reported_as_passing() {
        let records = [
            record("sqlite", Verdict::Ok),
            record("mssql", Verdict::Skipped("no REAPCHECK_MSSQL_URL".into())),
            record("postgres", Verdict::Fail("postgres disagrees with the model\n-a\n+b".into())),
        ];
        let xml = junit(&records, None, &[]);
        assert!(!xml.contains("interrupted"), "{xml}");
        assert!(xml.contains("<skipped message=\"no REAPCHECK_MSSQL_URL\""), "{xml}");
        assert!(xml.contains("<failure message=\"postgres disagrees with the model\""), "{xml}");
        assert!(xml.contains("classname=\"sqlite\""), "{xml}");
        assert!(xml.contains("<property name=\"server\" value=\"sqlite 1.0\"/>"), "{xml}");
        assert!(xml.contains("<property name=\"file\" value=\"scenarios/grace/floor.yaml:1\"/>"), "{xml}");
        assert!(
            xml.contains("<property name=\"rerun\" value=\"reapcheck run --db postgres --exact grace/floor\"/>"),
            "{xml}"
        );
        assert_eq!(xml.matches("<property name=\"rerun\"").count(), 1, "only the failure has one: {xml}");
        assert!(!xml.contains("[sqlite 1.0]"), "the server version is no part of a test's identity: {xml}");
        let code = [("postgres".to_owned(), "builtin postgres sha256:0; reference policy".to_owned())];
        assert_eq!(
            summary(&records, None, &code),
            "mssql [not reached]: 0 passed, 0 failed, 1 skipped\n\
             postgres [postgres 1.0]: 0 passed, 1 failed, 0 skipped; ran builtin postgres sha256:0; reference policy\n\
             sqlite [sqlite 1.0]: 1 passed, 0 failed, 0 skipped\n"
        );
        assert_eq!(
            failure_list(&records),
            "failures (1):\n    grace/floor on postgres: reapcheck run --db postgres --exact grace/floor\n"
        );
        assert_eq!(failure_list(&records[..2]), "");
    }

    #[test]
    fn a_target_not_reached_is_one_failure_with_its_cause_in_every_report() {
        let cause = "not run: cannot reach postgres://u:***@127.0.0.1:5999/test: connection refused";
        let mut records: Vec<CaseRecord> = ["grace/a", "grace/b", "grace/c"]
            .iter()
            .map(|name| CaseRecord {
                scenario: (*name).into(),
                server: NOT_REACHED.into(),
                ..record("postgres", Verdict::Fail(cause.into()))
            })
            .collect();
        records.push(record("sqlite", Verdict::Fail("sqlite disagrees with the model".into())));
        assert_eq!(
            failure_list(&records),
            "failures (2):\n    postgres was not reached (3 scenarios not run): cannot reach \
             postgres://u:***@127.0.0.1:5999/test: connection refused\n    grace/floor on sqlite: reapcheck run --db \
             sqlite --exact grace/floor\n"
        );
        let xml = junit(&records, None, &[]);
        assert_eq!(xml.matches("<failure ").count(), 2, "{xml}");
        assert!(xml.contains("<failure message=\"postgres was not reached: cannot reach postgres://u:***@"), "{xml}");
        assert_eq!(xml.matches("<skipped message=\"not run: postgres was not reached\"").count(), 3, "{xml}");
        let run = outcomes::RunInfo {
            leg: "both".into(),
            corpus_hash: "sha256:0".into(),
            filters: Vec::new(),
            code: Vec::new(),
            interrupted: None,
        };
        let leg = outcomes::LegOutcomes::new(&records, &run);
        let md = markdown::render(&matrix::Matrix::new(std::slice::from_ref(&leg)), &[]);
        assert!(md.contains("### Failures (2)\n"), "{md}");
        assert_eq!(md.matches("was not reached").count(), 1, "{md}");
        assert!(
            md.contains("- postgres was not reached (3 scenarios not run): cannot reach postgres://u:***@"),
            "{md}"
        );
        assert_eq!(leg.targets.iter().find(|t| t.target == "postgres").map(|t| t.counts.fail), Some(3), "still failed");
    }

    #[test]
    fn a_cleared_folder_keeps_no_report_of_the_previous_run() {
        let dir = std::env::temp_dir().join(format!("reapcheck-clear-{}", std::process::id()));
        let run = outcomes::RunInfo {
            leg: "sqlite".into(),
            corpus_hash: "sha256:0".into(),
            filters: Vec::new(),
            code: Vec::new(),
            interrupted: None,
        };
        write(&dir, &[record("sqlite", Verdict::Ok)], &run).unwrap();
        for name in FILES {
            assert!(dir.join(name).exists(), "{name} not written");
        }
        std::fs::write(dir.join("other.txt"), "kept").unwrap();
        clear(&dir).unwrap();
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left, ["other.txt"]);
        clear(&dir.join("missing")).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_interrupted_run_is_marked_incomplete_in_both() {
        let records = [
            record("sqlite", Verdict::Ok),
            record("sqlite", Verdict::Skipped("not run: interrupted by SIGINT".into())),
        ];
        let xml = junit(&records, Some("SIGINT"), &[]);
        assert!(xml.contains("<property name=\"interrupted\" value=\"SIGINT\"/>"), "{xml}");
        assert_eq!(
            summary(&records, Some("SIGTERM"), &[]),
            "INCOMPLETE: interrupted by SIGTERM; the cases it did not run are skipped\n\
             sqlite [sqlite 1.0]: 1 passed, 0 failed, 1 skipped\n"
        );
    }
}
