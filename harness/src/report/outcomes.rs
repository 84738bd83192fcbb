//! The outcome file of one CI leg, `outcomes.json`: per scenario and target
//! the result, the server that answered, the outcome document's hash, the
//! failing diff and trace, and the rerun command, with the leg's counts,
//! reapcheck's version and the corpus's hash. `reapcheck verdict` merges
//! these files across legs. The format is documented in docs/reports.md
//! (schema version [`SCHEMA_VERSION`]).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::CaseRecord;
use crate::runner::Verdict;

/// The outcome file's name inside a report folder.
pub const FILE_NAME: &str = "outcomes.json";

/// The version of the format written; a file of another version is refused
/// by [`read`] rather than misread. Bumped on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

/// What a run knows about itself beyond its cases.
#[derive(Clone, Debug)]
pub struct RunInfo {
    /// The leg's name (`run --leg`; by default the `--db` list).
    pub leg: String,
    /// [`corpus_hash`] of the scenarios the run loaded.
    pub corpus_hash: String,
    /// The scenario filters the run was given (`run grace/`); empty for
    /// the whole corpus.
    pub filters: Vec<String>,
    /// Whose code ran on each database target: its name and what
    /// [`TargetSummary::code`] records.
    pub code: Vec<(String, String)>,
    /// The signal (`SIGINT`, `SIGTERM`) that stopped the run before it
    /// finished ([`crate::interrupt`]): its cases are incomplete and
    /// `verdict` fails the leg. `None` for a run that finished.
    pub interrupted: Option<String>,
}

/// The outcome file of one leg.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LegOutcomes {
    /// [`SCHEMA_VERSION`] when written.
    pub schema_version: u32,
    /// The version of reapcheck that wrote the file.
    pub reapcheck_version: String,
    /// The leg's name.
    pub leg: String,
    /// `sha256:<hex>` over the scenarios run and their snapshots.
    pub corpus_hash: String,
    /// The scenario filters the run was given; empty for the whole corpus
    /// (absent in files written before it was recorded).
    #[serde(default)]
    pub filters: Vec<String>,
    /// True when the run was stopped before it finished.
    pub interrupted: bool,
    /// Per target (the model first), its server and counts.
    pub targets: Vec<TargetSummary>,
    /// One entry per scenario and target, in the order they ran.
    pub cases: Vec<CaseOutcome>,
}

/// One target of a leg.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetSummary {
    /// `model` or the target's name.
    pub target: String,
    /// The server and version that answered (`postgres 15.8`), or `not run`
    /// / `not reached`.
    pub server: String,
    /// Its cases by result.
    pub counts: Counts,
    /// Whose code ran: for a SQL target its dialect's provenance
    /// (`builtin sha256:<hex>` or `<folder> sha256:<hex>`, see
    /// [`crate::dialect::Provenance`]) and policy; for an adapter its
    /// command; empty for the model (and in files written before it was
    /// recorded).
    #[serde(default)]
    pub code: String,
}

/// Cases by result.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Counts {
    /// Agreed with the model and the snapshot.
    pub pass: usize,
    /// Agreed with the model; no snapshot committed yet.
    pub new: usize,
    /// Matched a declared divergence's own snapshot.
    pub divergence: usize,
    /// Did not run.
    pub skipped: usize,
    /// Failed.
    pub fail: usize,
}

impl Counts {
    /// Adds one case.
    pub fn add(&mut self, result: CaseResult) {
        match result {
            CaseResult::Pass => self.pass += 1,
            CaseResult::New => self.new += 1,
            CaseResult::Divergence => self.divergence += 1,
            CaseResult::Skipped => self.skipped += 1,
            CaseResult::Fail => self.fail += 1,
        }
    }

    /// Cases that ran to a result (everything but skipped).
    pub fn ran(&self) -> usize {
        self.pass + self.new + self.divergence + self.fail
    }
}

/// The result of one case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CaseResult {
    /// Agreed with the model and the snapshot.
    Pass,
    /// Agreed with the model; no snapshot committed yet.
    New,
    /// A declared divergence matching its own snapshot.
    Divergence,
    /// Did not run (`reason` says why).
    Skipped,
    /// Failed (`diff`, `trace` and `rerun` say how).
    Fail,
}

impl CaseResult {
    /// The word shown in the matrix.
    pub fn label(self) -> &'static str {
        match self {
            CaseResult::Pass => "pass",
            CaseResult::New => "new",
            CaseResult::Divergence => "divergence",
            CaseResult::Skipped => "skipped",
            CaseResult::Fail => "FAIL",
        }
    }
}

/// One scenario on one target.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseOutcome {
    /// The scenario's name (`grace/floor`).
    pub scenario: String,
    /// Its concern: the folder it is in (`grace`), `-` at the top level.
    pub concern: String,
    /// `model` or the target's name.
    pub target: String,
    /// The server and version that answered.
    pub server: String,
    /// What happened.
    pub result: CaseResult,
    /// Why it was skipped, or the declared divergence's reason.
    pub reason: Option<String>,
    /// `sha256:<hex>` of the outcome document, when the target finished
    /// under the reference profile.
    pub outcome_hash: Option<String>,
    /// A failure's explanation and diff (`-` expected, `+` actual).
    pub diff: Option<String>,
    /// A failure's SQL trace up to the step where the target and the model
    /// part.
    pub trace: Option<String>,
    /// The one-line command that reruns exactly this case.
    pub rerun: Option<String>,
    /// How long it took, in microseconds.
    pub elapsed_us: u64,
}

impl CaseOutcome {
    fn new(r: &CaseRecord) -> CaseOutcome {
        let (result, reason, diff, trace) = match &r.verdict {
            Verdict::Ok => (CaseResult::Pass, None, None, None),
            Verdict::New => (CaseResult::New, None, None, None),
            Verdict::Diverged(why) => (CaseResult::Divergence, Some(why.clone()), None, None),
            Verdict::Skipped(why) => (CaseResult::Skipped, Some(why.clone()), None, None),
            Verdict::Fail(detail) => {
                let (diff, trace) = split_trace(detail);
                (CaseResult::Fail, None, Some(diff), trace)
            }
        };
        CaseOutcome {
            scenario: r.scenario.clone(),
            concern: concern(&r.scenario).to_owned(),
            target: r.target.clone(),
            server: r.server.clone(),
            result,
            reason,
            outcome_hash: r.outcome_hash.clone(),
            diff,
            trace,
            rerun: matches!(result, CaseResult::Fail).then(|| r.rerun.clone()).flatten(),
            elapsed_us: u64::try_from(r.elapsed.as_micros()).unwrap_or(u64::MAX),
        }
    }
}

/// A scenario's concern: the folder its file is in, `-` at the top level.
pub fn concern(scenario: &str) -> &str {
    scenario.rsplit_once('/').map_or("-", |(folder, _)| folder)
}

/// A failure's detail cut into its explanation with diff and its SQL trace
/// (which `runner::check_target` appends, starting `trace on <target>`).
fn split_trace(detail: &str) -> (String, Option<String>) {
    match detail.split_once("\ntrace on ") {
        Some((diff, trace)) => (diff.to_owned(), Some(format!("trace on {trace}"))),
        None => (detail.to_owned(), None),
    }
}

impl LegOutcomes {
    /// The outcome file of a run's `records`.
    pub fn new(records: &[CaseRecord], run: &RunInfo) -> LegOutcomes {
        let cases: Vec<CaseOutcome> = records.iter().map(CaseOutcome::new).collect();
        let mut targets: Vec<TargetSummary> = Vec::new();
        for c in &cases {
            let i = match targets.iter().position(|t| t.target == c.target) {
                Some(i) => i,
                None => {
                    let server = c.server.clone();
                    let code =
                        run.code.iter().find(|(t, _)| *t == c.target).map(|(_, code)| code.clone()).unwrap_or_default();
                    targets.push(TargetSummary { target: c.target.clone(), server, counts: Counts::default(), code });
                    targets.len() - 1
                }
            };
            targets[i].counts.add(c.result);
        }
        LegOutcomes {
            schema_version: SCHEMA_VERSION,
            reapcheck_version: crate::VERSION.to_owned(),
            leg: run.leg.clone(),
            corpus_hash: run.corpus_hash.clone(),
            filters: run.filters.clone(),
            interrupted: run.interrupted.is_some(),
            targets,
            cases,
        }
    }

    /// The file's text: pretty JSON ending in a newline.
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).expect("outcomes always serialize");
        text.push('\n');
        text
    }

    /// All cases of the leg, the model's included, by result.
    pub fn counts(&self) -> Counts {
        let mut counts = Counts::default();
        self.cases.iter().for_each(|c| counts.add(c.result));
        counts
    }
}

/// `sha256:<hex>` of `bytes`.
pub fn hash(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// The corpus's hash: over each scenario's name, its file and its model
/// snapshot (absent counts as empty), in the order given (sorted by name).
/// Two legs with the same hash ran the same scenarios with the same claims.
/// Builtin scenarios (`builtin:/…`, [`crate::corpus`]) are read from the
/// copy inside the binary, as the run read them.
pub fn corpus_hash<'a>(scenarios: impl IntoIterator<Item = (&'a str, &'a Path)>) -> std::io::Result<String> {
    let mut all = Vec::new();
    for (name, path) in scenarios {
        let snapshot = crate::snapshot::path(path, None);
        let (file, snap) = if crate::corpus::is_builtin(path) {
            let missing =
                || std::io::Error::new(std::io::ErrorKind::NotFound, format!("no builtin {}", path.display()));
            let file = crate::corpus::read(path).ok_or_else(missing)?.as_bytes().to_vec();
            (file, crate::corpus::read(&snapshot).unwrap_or_default().as_bytes().to_vec())
        } else {
            let snap = match std::fs::read(&snapshot) {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
                Err(e) => return Err(e),
            };
            (std::fs::read(path)?, snap)
        };
        for part in [name.as_bytes(), &file, &snap] {
            all.extend_from_slice(&(part.len() as u64).to_le_bytes());
            all.extend_from_slice(part);
        }
    }
    Ok(hash(&all))
}

/// Why an outcome file could not be read.
#[derive(Debug, thiserror::Error)]
#[error("cannot read the outcome file {}: {kind}", path.display())]
pub struct ReadError {
    /// The file.
    pub path: PathBuf,
    /// What went wrong.
    pub kind: ReadErrorKind,
}

/// What went wrong reading an outcome file.
#[derive(Debug, thiserror::Error)]
pub enum ReadErrorKind {
    /// The file could not be opened or read.
    #[error("{0}; pass the folder given to `run --report`")]
    Io(#[from] std::io::Error),
    /// The file is not JSON of this format (`line:column` in the message).
    #[error("{line}:{column}: {message}")]
    Json {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What serde_json says.
        message: String,
    },
    /// The file has another schema version.
    #[error(
        "schema version {found}, but this reapcheck reads version {SCHEMA_VERSION}: run `verdict` with the reapcheck that wrote it"
    )]
    SchemaVersion {
        /// The version found (0 when the field is missing).
        found: u64,
    },
}

/// Reads `path`, refusing another schema version before anything else.
pub fn read(path: &Path) -> Result<LegOutcomes, ReadError> {
    let fail = |kind| ReadError { path: path.to_owned(), kind };
    let text = std::fs::read_to_string(path).map_err(|e| fail(ReadErrorKind::Io(e)))?;
    let json_error = |e: serde_json::Error| ReadErrorKind::Json {
        line: e.line(),
        column: e.column(),
        message: e.to_string().split(" at line ").next().unwrap_or_default().to_owned(),
    };
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| fail(json_error(e)))?;
    let found = value.get("schema_version").and_then(serde_json::Value::as_u64).unwrap_or(0);
    if found != u64::from(SCHEMA_VERSION) {
        return Err(fail(ReadErrorKind::SchemaVersion { found }));
    }
    serde_json::from_str(&text).map_err(|e| fail(json_error(e)))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn record(target: &str, verdict: Verdict) -> CaseRecord {
        CaseRecord {
            file: "scenarios/grace/floor.yaml".into(),
            scenario: "grace/floor".into(),
            target: target.into(),
            server: format!("{target} 1.0"),
            verdict,
            elapsed: Duration::from_micros(1500),
            outcome_hash: Some(hash(b"outcome")),
            rerun: Some(format!("reapcheck run --db {target} --exact grace/floor")),
        }
    }

    #[test]
    fn a_failure_keeps_its_diff_trace_and_rerun_and_round_trips() {
        let fail = "postgres disagrees with the model\n--- model\n+++ postgres\n-a\n+b\ntrace on postgres: statements\n  setup";
        let records = [
            record("model", Verdict::Ok),
            record("postgres", Verdict::Fail(fail.into())),
            record("mssql", Verdict::Skipped("no REAPCHECK_MSSQL_URL".into())),
        ];
        let run = RunInfo {
            leg: "pg-15".into(),
            corpus_hash: hash(b"corpus"),
            filters: Vec::new(),
            code: Vec::new(),
            interrupted: None,
        };
        let leg = LegOutcomes::new(&records, &run);
        let c = &leg.cases[1];
        assert_eq!(c.result, CaseResult::Fail);
        assert_eq!(c.concern, "grace");
        assert_eq!(c.diff.as_deref(), Some("postgres disagrees with the model\n--- model\n+++ postgres\n-a\n+b"));
        assert_eq!(c.trace.as_deref(), Some("trace on postgres: statements\n  setup"));
        assert_eq!(c.rerun.as_deref(), Some("reapcheck run --db postgres --exact grace/floor"));
        assert_eq!(c.elapsed_us, 1500);
        assert_eq!(leg.cases[0].rerun, None, "only failures carry a rerun");
        assert_eq!(leg.cases[2].reason.as_deref(), Some("no REAPCHECK_MSSQL_URL"));
        assert_eq!(leg.targets.iter().map(|t| t.counts.ran()).collect::<Vec<_>>(), [1, 1, 0]);

        let dir = std::env::temp_dir().join(format!("reapcheck-outcomes-{}", std::process::id()));
        super::super::write_atomic(&dir, FILE_NAME, &leg.to_json()).unwrap();
        assert_eq!(read(&dir.join(FILE_NAME)).unwrap(), leg);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn another_schema_version_or_broken_json_is_refused_with_its_position() {
        let dir = std::env::temp_dir().join(format!("reapcheck-outcomes-bad-{}", std::process::id()));
        super::super::write_atomic(&dir, "v2.json", "{\"schema_version\": 2, \"leg\": \"x\"}").unwrap();
        let e = read(&dir.join("v2.json")).unwrap_err().to_string();
        assert!(e.contains("v2.json: schema version 2, but this reapcheck reads version 1"), "{e}");
        super::super::write_atomic(&dir, "cut.json", "{\"schema_version\": 1,\n \"leg\": ").unwrap();
        let e = read(&dir.join("cut.json")).unwrap_err();
        assert!(matches!(e.kind, ReadErrorKind::Json { line: 2, .. }), "{e}");
        let e = read(&dir.join("none.json")).unwrap_err().to_string();
        assert!(e.contains("none.json: ") && e.contains("pass the folder given to `run --report`"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn concerns_are_folders() {
        assert_eq!(concern("grace/floor"), "grace");
        assert_eq!(concern("a/b/c"), "a/b");
        assert_eq!(concern("top"), "-");
    }
}
