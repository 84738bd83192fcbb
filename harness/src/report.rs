//! Reports of a run: JUnit XML (one suite per target, one case per
//! scenario) and a plain summary naming each target's server and version.
//! A case that did not run is `skipped` in both, never passed.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};

use crate::runner::Verdict;

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
}

/// The JUnit XML document for `records`.
pub fn junit(records: &[CaseRecord]) -> String {
    let mut report = Report::new("reapcheck");
    for (target, cases) in by_target(records) {
        let mut suite = TestSuite::new(target);
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
            case.set_time(r.elapsed);
            suite.add_test_case(case);
        }
        report.add_test_suite(suite);
    }
    report.to_string().expect("a report always serializes")
}

/// One line per target: its server and its counts.
pub fn summary(records: &[CaseRecord]) -> String {
    let mut out = String::new();
    for (target, cases) in by_target(records) {
        let count = |f: fn(&Verdict) -> bool| cases.iter().filter(|r| f(&r.verdict)).count();
        let passed = count(|v| matches!(v, Verdict::Ok | Verdict::New | Verdict::Diverged(_)));
        let failed = count(|v| matches!(v, Verdict::Fail(_)));
        let skipped = count(|v| matches!(v, Verdict::Skipped(_)));
        let server = &cases[0].server;
        out.push_str(&format!("{target} [{server}]: {passed} passed, {failed} failed, {skipped} skipped\n"));
    }
    out
}

fn by_target(records: &[CaseRecord]) -> BTreeMap<&str, Vec<&CaseRecord>> {
    let mut map: BTreeMap<&str, Vec<&CaseRecord>> = BTreeMap::new();
    for r in records {
        map.entry(r.target.as_str()).or_default().push(r);
    }
    map
}

/// Writes `junit.xml` and `summary.txt` into `dir`, each atomically.
pub fn write(dir: &Path, records: &[CaseRecord]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for (name, text) in [("junit.xml", junit(records)), ("summary.txt", summary(records))] {
        let tmp = dir.join(format!(".{name}.tmp"));
        std::fs::write(&tmp, text)?;
        std::fs::rename(&tmp, dir.join(name))?;
    }
    Ok(())
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
        }
    }

    #[test]
    fn skipped_cases_are_never_reported_as_passing() {
        let records = [
            record("sqlite", Verdict::Ok),
            record("mssql", Verdict::Skipped("no REAPCHECK_MSSQL_URL".into())),
            record("postgres", Verdict::Fail("postgres disagrees with the model\n-a\n+b".into())),
        ];
        let xml = junit(&records);
        assert!(xml.contains("<skipped message=\"no REAPCHECK_MSSQL_URL\""), "{xml}");
        assert!(xml.contains("<failure message=\"postgres disagrees with the model\""), "{xml}");
        assert!(xml.contains("classname=\"sqlite\""), "{xml}");
        assert!(xml.contains("<property name=\"server\" value=\"sqlite 1.0\"/>"), "{xml}");
        assert!(!xml.contains("[sqlite 1.0]"), "the server version is no part of a test's identity: {xml}");
        assert_eq!(
            summary(&records),
            "mssql [not reached]: 0 passed, 0 failed, 1 skipped\n\
             postgres [postgres 1.0]: 0 passed, 1 failed, 0 skipped\n\
             sqlite [sqlite 1.0]: 1 passed, 0 failed, 0 skipped\n"
        );
    }
}
