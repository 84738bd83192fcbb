//! Pinned outcomes (docs/policy.md, "Pinned outcomes"): where no policy
//! knob expresses a deliberate difference, a port pins the outcome of a
//! named scenario, in its own folder, with a reason:
//! `DIR/<dialect>/pinned/<scenario name>.yaml`.
//!
//! ```yaml
//! reason: the queue keeps a revived execution's last heartbeat
//! outcome: |
//!   steps:
//!   - reap: 1
//!   ...
//! ```
//!
//! `outcome` is the document the port is compared by under its profile
//! ([`crate::relax::document`]); `reapcheck run --accept` writes it into a
//! pin that has only its `reason`. The builtin corpus is never touched.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_saphyr::MessageFormatter;

use super::error::{DialectError, DialectErrorKind};
use crate::scenario::Located;

/// The folder of a dialect's pins.
pub const FOLDER: &str = "pinned";

/// One pinned outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pin {
    /// The scenario's name (`grace/floor`).
    pub scenario: String,
    /// Why the port's outcome differs from the model's under its policy.
    pub reason: String,
    /// The pinned document; `None` until `run --accept` writes it.
    pub outcome: Option<String>,
    /// The pin's file.
    pub path: PathBuf,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PinFile {
    reason: Located<String>,
    #[serde(default)]
    outcome: Option<String>,
}

/// Every pin below `dialect_dir/pinned/`, by scenario name. A file that is
/// not `.yaml`, an unknown key, a missing or blank `reason` is an error with
/// `file:line:column`.
pub fn load(dialect_dir: &Path) -> Result<BTreeMap<String, Pin>, Vec<DialectError>> {
    let root = dialect_dir.join(FOLDER);
    let mut pins = BTreeMap::new();
    let mut errors = Vec::new();
    if !root.is_dir() {
        return Ok(pins);
    }
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) => {
                errors.push(error(&dir, None, format!("cannot read the folder: {e}")));
                continue;
            }
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().and_then(|e| e.to_str()) != Some("yaml") {
                errors.push(error(&path, None, "a pin is a `.yaml` file named like its scenario".to_owned()));
                continue;
            }
            let name = path
                .strip_prefix(&root)
                .unwrap_or(&path)
                .with_extension("")
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            match read(&path, &name) {
                Ok(pin) => {
                    pins.insert(name, pin);
                }
                Err(e) => errors.push(e),
            }
        }
    }
    if errors.is_empty() { Ok(pins) } else { Err(errors) }
}

fn read(path: &Path, name: &str) -> Result<Pin, DialectError> {
    let text = crate::input_file::read_string(path).map_err(|e| error(path, None, e.to_string()))?;
    let mut options = serde_saphyr::Options::default();
    options.strict_booleans = true;
    let file: PinFile = serde_saphyr::from_str_with_options(&text, options).map_err(|e| {
        let at = e.location().filter(|l| l.line() > 0).map(|l| (l.line(), l.column()));
        let message = serde_saphyr::DefaultMessageFormatter.format_message(e.without_snippet()).to_string();
        error(path, at, message)
    })?;
    if file.reason.trim().is_empty() {
        let at = file.reason.position().map(|p| (p.line, p.column));
        return Err(error(path, at, "`reason` is blank: say why the port's outcome is deliberate".to_owned()));
    }
    Ok(Pin {
        scenario: name.to_owned(),
        reason: file.reason.trim().to_owned(),
        outcome: file.outcome,
        path: path.to_owned(),
    })
}

/// The text of a pin file holding `reason` and `outcome`.
pub fn render(reason: &str, outcome: &str) -> String {
    let mut text = format!("reason: {}\noutcome: |\n", serde_json::to_string(reason).expect("a string serializes"));
    for line in outcome.lines() {
        text.push_str("  ");
        text.push_str(line);
        text.push('\n');
    }
    text
}

fn error(path: &Path, at: Option<(u64, u64)>, message: String) -> DialectError {
    DialectError {
        file: path.display().to_string(),
        line: at.and_then(|(l, _)| u32::try_from(l).ok()),
        column: at.and_then(|(_, c)| u32::try_from(c).ok()),
        kind: DialectErrorKind::Pin(message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder(files: &[(&str, &str)]) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("reapcheck-pins-{}-{}", std::process::id(), files.len()));
        let _ = std::fs::remove_dir_all(&dir);
        for (name, text) in files {
            let path = dir.join(FOLDER).join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        dir
    }

    #[test]
    fn pins_are_read_by_scenario_name_and_render_back() {
        let text = render("revived rows keep their beat", "steps:\n- reap: 1\njobs: {}\n");
        let dir = folder(&[("grace/floor.yaml", &text)]);
        let pins = load(&dir).unwrap();
        let pin = &pins["grace/floor"];
        assert_eq!(pin.reason, "revived rows keep their beat");
        assert_eq!(pin.outcome.as_deref(), Some("steps:\n- reap: 1\njobs: {}\n"));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_blank_reason_an_unknown_key_and_a_stray_file_are_errors_at_their_place() {
        let dir = folder(&[("a.yaml", "reason: \"  \"\n"), ("b.yaml", "reason: x\nwhy: y\n"), ("c.txt", "")]);
        let mut errors: Vec<String> = load(&dir).unwrap_err().iter().map(|e| e.to_string()).collect();
        errors.sort();
        assert_eq!(errors.len(), 3, "{errors:?}");
        assert!(errors[0].contains("a.yaml:1:9: ") && errors[0].contains("blank"), "{errors:?}");
        assert!(errors[1].contains("b.yaml:2:") && errors[1].contains("why"), "{errors:?}");
        assert!(errors[2].contains("c.txt") && errors[2].contains(".yaml"), "{errors:?}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
