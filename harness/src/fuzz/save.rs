//! Saving a shrunk failing case as a scenario file that `reapcheck run`
//! reads like any other, so the failure reruns with one command and can be
//! moved into the corpus as a regression.

use std::path::{Path, PathBuf};

use crate::scenario::{Scenario, parse_file};

use super::check::to_yaml;

/// A failing case that could not be saved.
#[derive(Debug, thiserror::Error)]
#[error("cannot save the failing case as {}: {kind}", path.display())]
pub struct SaveError {
    /// The file it was to be written to.
    pub path: PathBuf,
    /// What went wrong.
    pub kind: SaveErrorKind,
}

/// Why a failing case could not be saved.
#[derive(Debug, thiserror::Error)]
pub enum SaveErrorKind {
    /// The scenario did not serialize.
    #[error("{0}")]
    Serialize(String),
    /// The folder or file could not be written; check `--out`.
    #[error("{0}; choose a writable folder with --out")]
    Write(std::io::Error),
    /// The file written does not load back (a bug in reapcheck).
    #[error("the file written does not load back (a bug in reapcheck): {0}")]
    Reload(String),
}

/// Writes `scenario` to `<dir>/<name>.yaml` (replacing an older file of
/// that name) and checks that the loader reads it back; returns the path.
pub fn save(dir: &Path, name: &str, scenario: &Scenario) -> Result<PathBuf, SaveError> {
    let path = dir.join(format!("{name}.yaml"));
    let error = |kind| SaveError { path: path.clone(), kind };
    let yaml = to_yaml(scenario).map_err(|e| error(SaveErrorKind::Serialize(e)))?;
    std::fs::create_dir_all(dir).map_err(|e| error(SaveErrorKind::Write(e)))?;
    std::fs::write(&path, yaml).map_err(|e| error(SaveErrorKind::Write(e)))?;
    parse_file(name, &path).map_err(|errors| {
        error(SaveErrorKind::Reload(errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")))
    })?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fuzz::{Case, ClassCase, Edge, JobCase, Offset, StepCase};
    use crate::outcome::Status;

    fn small_case() -> Case {
        let at = |edge| Offset { edge, nudge: -1 };
        Case {
            now: 1_768_478_400_000_000,
            app_grace: 300,
            legacy: false,
            zone: None,
            classes: vec![ClassCase {
                timeout: 300,
                idempotent: true,
                grace: None,
                max_retries: 3,
                base_delay: 2,
                max_delay: 3600,
                exclusive: false,
                keyed: false,
                loadable: true,
            }],
            jobs: vec![JobCase {
                class: 0,
                other_queue: false,
                status: Status::Processing,
                attempts: 1,
                max_retries: None,
                claim_timeout: None,
                claimed: at(Edge::ClaimWindow),
                heartbeat: Some(at(Edge::Window)),
                run_at: at(Edge::Zero),
                keyed: false,
            }],
            lease: None,
            steps: vec![StepCase::Reap { timeout: None, queue: None }],
        }
    }

    #[test]
    fn a_saved_case_loads_back_equal_with_its_edges_resolved() {
        let dir = std::env::temp_dir().join(format!("reapcheck-fuzz-save-{}", std::process::id()));
        let scenario = small_case().to_scenario("found by a test");
        let path = save(&dir, "sqlite-1", &scenario).unwrap();
        assert_eq!(path, dir.join("sqlite-1.yaml"));
        let loaded = parse_file("sqlite-1", &path).unwrap();
        assert_eq!(loaded.scenario, scenario);
        let text = std::fs::read_to_string(&path).unwrap();
        // The beat lies one microsecond inside the 300 s window.
        assert!(text.contains("heartbeat: -4m59.999999s"), "{text}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
