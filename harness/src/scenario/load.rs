//! Finding scenario files and reading them; all errors of all files at once.

use std::path::{Path, PathBuf};

use serde_saphyr::{DefaultMessageFormatter, MessageFormatter};

use super::error::{ScenarioError, ScenarioErrorKind};
use super::located::Position;
use super::types::Scenario;
use super::validate::validate;

/// A scenario with its name and file.
#[derive(Clone, Debug)]
pub struct LoadedScenario {
    /// The path below the scenarios folder, without `.yaml`: `grace/floor`.
    pub name: String,
    /// The file it came from.
    pub path: PathBuf,
    /// Its content.
    pub scenario: Scenario,
}

pub use crate::input_file::MAX_FILE_BYTES;

/// Every `.yaml` file below `root`, sorted by name. A `.yml` file is an
/// error (it would otherwise be silently skipped): rename it.
pub fn discover(root: &Path) -> Result<Vec<(String, PathBuf)>, ScenarioError> {
    let mut found = Vec::new();
    let mut ancestors = Vec::new();
    walk(root, root, &mut ancestors, &mut found)?;
    found.sort();
    Ok(found)
}

/// Walks `dir`, below the folders `ancestors` (canonical paths): a folder
/// that is one of its own ancestors through a symlink is a cycle and is
/// not entered again, so each file counts once.
fn walk(
    root: &Path,
    dir: &Path,
    ancestors: &mut Vec<PathBuf>,
    found: &mut Vec<(String, PathBuf)>,
) -> Result<(), ScenarioError> {
    let read_error = |e| ScenarioError { path: dir.to_owned(), position: None, kind: ScenarioErrorKind::Read(e) };
    let canonical = std::fs::canonicalize(dir).map_err(read_error)?;
    if ancestors.contains(&canonical) {
        return Ok(());
    }
    ancestors.push(canonical);
    for entry in std::fs::read_dir(dir).map_err(read_error)? {
        let path = entry.map_err(read_error)?.path();
        if path.is_dir() {
            walk(root, &path, ancestors, found)?;
        } else if path.extension().is_some_and(|e| e == "yml") {
            let renamed = path.with_extension("yaml").display().to_string();
            return Err(ScenarioError { path, position: None, kind: ScenarioErrorKind::YmlExtension(renamed) });
        } else if path.extension().is_some_and(|e| e == "yaml") {
            let relative = path.strip_prefix(root).expect("walked below root").with_extension("");
            let name = relative.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/");
            found.push((name, path));
        }
    }
    ancestors.pop();
    Ok(())
}

/// Reads and validates one file; every problem in it is returned.
pub fn parse_file(name: &str, path: &Path) -> Result<LoadedScenario, Vec<ScenarioError>> {
    let error = |position, kind| ScenarioError { path: path.to_owned(), position, kind };
    let text = read_text(path).map_err(|(position, kind)| vec![error(position, kind)])?;
    parse_named(name, path, &text)
}

/// The text of the regular file at `path` (symlinks followed), at most
/// [`MAX_FILE_BYTES`] (see `crate::input_file`), as UTF-8; invalid UTF-8 is
/// reported at its byte offset, line and column.
pub fn read_text(path: &Path) -> Result<String, (Option<Position>, ScenarioErrorKind)> {
    use crate::input_file::ReadErrorKind;
    let bytes = crate::input_file::read_bytes(path).map_err(|e| match e {
        ReadErrorKind::Io(e) => (None, ScenarioErrorKind::Read(e)),
        ReadErrorKind::NotRegular => (None, ScenarioErrorKind::NotRegularFile),
        ReadErrorKind::TooLarge { size, limit } => (None, ScenarioErrorKind::TooLarge { size, limit }),
    })?;
    String::from_utf8(bytes).map_err(|e| {
        let offset = e.utf8_error().valid_up_to();
        let before = &e.as_bytes()[..offset];
        let line = before.iter().filter(|b| **b == b'\n').count() as u64 + 1;
        let line_start = before.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        let column = String::from_utf8_lossy(&before[line_start..]).chars().count() as u64 + 1;
        (Some(Position { line, column }), ScenarioErrorKind::NotUtf8 { offset })
    })
}

/// Parses and validates `text` as if it had been read from `path`: what
/// [`parse_file`] does after reading, for scenarios made in memory
/// (`reapcheck fuzz`), so they pass the very checks a file does.
pub fn parse_named(name: &str, path: &Path, text: &str) -> Result<LoadedScenario, Vec<ScenarioError>> {
    let error = |position, kind| ScenarioError { path: path.to_owned(), position, kind };
    let scenario =
        parse_text(text).map_err(|(position, message)| vec![error(position, ScenarioErrorKind::Format(message))])?;
    let problems = validate(&scenario);
    if !problems.is_empty() {
        return Err(problems.into_iter().map(|(p, k)| error(p, k)).collect());
    }
    Ok(LoadedScenario { name: name.to_owned(), path: path.to_owned(), scenario })
}

/// Parses scenario YAML; on error, the position and a message followed by
/// the offending source lines.
pub fn parse_text(text: &str) -> Result<Scenario, (Option<Position>, String)> {
    // YAML 1.1 reads `y`, `n`, `on`, `off`, `yes` and `no` as booleans, so a
    // job called `y` would silently become `true`; only `true` and `false` are.
    let mut options = serde_saphyr::Options::default();
    options.strict_booleans = true;
    serde_saphyr::from_str_with_options::<Scenario>(text, options).map_err(|e| {
        let position = e.location().filter(|l| l.line() > 0).map(|l| Position { line: l.line(), column: l.column() });
        let core = DefaultMessageFormatter.format_message(e.without_snippet()).escape_debug().to_string();
        // The rendered error opens with its own location line; keep only the
        // source excerpt that follows it.
        let rendered = e.to_string();
        let excerpt: Vec<&str> = rendered.lines().skip_while(|l| !l.trim_start().starts_with("-->")).skip(1).collect();
        let message = if excerpt.is_empty() { core } else { format!("{core}\n{}", excerpt.join("\n")) };
        (position, message)
    })
}

/// Loads every scenario below `root` whose name contains one of `filters`
/// (all when `filters` is empty). Every file is checked, matching or not:
/// either all are valid, or the errors of all of them come back and nothing
/// runs.
pub fn load_dir(root: &Path, filters: &[String]) -> Result<Vec<LoadedScenario>, Vec<ScenarioError>> {
    let files = discover(root).map_err(|e| vec![e])?;
    let mut loaded = Vec::new();
    let mut errors = Vec::new();
    for ((name, _), parsed) in files.iter().zip(parse_all(&files)) {
        let wanted = filters.is_empty() || filters.iter().any(|f| name.contains(f.as_str()));
        match parsed {
            Ok(s) if wanted => loaded.push(s),
            Ok(_) => {}
            Err(mut e) => errors.append(&mut e),
        }
    }
    if errors.is_empty() { Ok(loaded) } else { Err(errors) }
}

/// [`parse_file`] of each of `files` (name, path), in their order, on up
/// to one thread per CPU ([`crate::parallel`]): parsing is most of what
/// loading a corpus costs (an eighth of a SQLite corpus run's
/// instructions), and the other cores are idle then.
fn parse_all(files: &[(String, PathBuf)]) -> Vec<Result<LoadedScenario, Vec<ScenarioError>>> {
    crate::parallel::map_in_order(files, |(name, path)| parse_file(name, path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Step;

    #[test]
    fn files_parsed_at_once_come_back_in_their_order_with_their_errors() {
        let dir = Scratch::new("order");
        let mut files = Vec::new();
        for i in 0..40 {
            let name = format!("s{i:02}");
            let path = dir.0.join(format!("{name}.yaml"));
            // Every seventh file is broken; the rest differ by description.
            let text = match i % 7 {
                3 => "description: [".to_owned(),
                _ => format!("{}steps: []\n", BASE.replacen("description: x", &format!("description: d{i}"), 1)),
            };
            std::fs::write(&path, text).unwrap();
            files.push((name, path));
        }
        let parsed = parse_all(&files);
        assert_eq!(parsed.len(), 40);
        for (i, p) in parsed.iter().enumerate() {
            match p {
                Ok(s) => {
                    assert_ne!(i % 7, 3, "s{i:02} parsed");
                    assert_eq!(
                        (s.name.as_str(), s.scenario.description.as_str()),
                        (files[i].0.as_str(), format!("d{i}").as_str())
                    );
                }
                Err(e) => {
                    assert_eq!(i % 7, 3, "s{i:02}: {e:?}");
                    assert!(e.iter().all(|e| e.to_string().contains(&format!("s{i:02}"))), "{e:?}");
                }
            }
        }
    }

    const BASE: &str = "description: x\nclasses: { C: {} }\njobs:\n  - { id: y, class: C }\n  - { id: 7, class: C }\n";

    #[test]
    fn job_ids_that_look_like_booleans_or_numbers_stay_names() {
        let s = parse_text(&format!("{BASE}steps:\n  - claim: y\n  - claim: 7\n")).unwrap();
        let jobs: Vec<&str> = s
            .steps
            .iter()
            .map(|step| match step.value() {
                Step::Claim(c) => c.job.as_str(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(jobs, ["y", "7"]);
    }

    #[test]
    fn a_wrong_type_is_an_error_at_its_position() {
        let (position, message) =
            parse_text(&format!("{BASE}steps: []\nsettings: {{ heartbeat_grace: soon }}\n")).unwrap_err();
        assert_eq!(position, Some(Position { line: 7, column: 30 }), "{message}");
        let (position, message) =
            parse_text("description: x\nclasses: { C: { idempotent: yes } }\nsteps: []\n").unwrap_err();
        assert_eq!(position.map(|p| p.line), Some(2), "{message}");
    }

    /// A scratch folder removed on drop.
    struct Scratch(PathBuf);
    impl Scratch {
        fn new(name: &str) -> Scratch {
            let dir = std::env::temp_dir().join(format!("reapcheck-load-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            Scratch(dir)
        }
    }
    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn message(path: &Path) -> String {
        parse_file("x", path).unwrap_err().iter().map(ToString::to_string).collect::<Vec<_>>().join("\n")
    }

    #[test]
    fn non_utf8_files_name_the_byte_offset_line_and_column() {
        let scratch = Scratch::new("utf8");
        let path = scratch.0.join("bad.yaml");
        std::fs::write(&path, b"description: x\nsteps: [ re\xffap ]\n").unwrap();
        let m = message(&path);
        assert!(
            m.ends_with("bad.yaml:2:12: the file is not UTF-8: invalid byte at offset 26: save it as UTF-8"),
            "{m}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn only_regular_files_are_read_and_at_most_the_size_limit() {
        let scratch = Scratch::new("special");
        let fifo = scratch.0.join("pipe.yaml");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(made.success());
        // A FIFO would block a read forever: refused without opening it.
        assert!(
            message(&fifo)
                .ends_with("pipe.yaml: not a regular file: scenario files must be regular files (or symlinks to one)")
        );
        let zero = scratch.0.join("zero.yaml");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        assert!(message(&zero).contains("not a regular file"), "{}", message(&zero));
        let big = scratch.0.join("big.yaml");
        std::fs::write(&big, vec![b'#'; MAX_FILE_BYTES as usize + 1]).unwrap();
        assert!(
            message(&big).ends_with("the file has 8388609 bytes, more than the 8388608 a scenario may have: split it"),
            "{}",
            message(&big)
        );
        // The whole folder fails to load, naming each file, and nothing hangs.
        let errors = load_dir(&scratch.0, &[]).unwrap_err();
        assert_eq!(errors.len(), 3, "{errors:?}");
    }

    #[test]
    fn a_yml_file_is_refused_with_its_new_name() {
        let scratch = Scratch::new("yml");
        std::fs::write(scratch.0.join("recent-beat.yml"), "description: x\nsteps: []\n").unwrap();
        let errors = load_dir(&scratch.0, &[]).unwrap_err();
        let m = errors[0].to_string();
        assert!(
            m.contains(
                "recent-beat.yml: scenario files end in `.yaml`, so this `.yml` file would not run: rename it to"
            ),
            "{m}"
        );
        assert!(m.ends_with("recent-beat.yaml`"), "{m}");
    }

    #[test]
    fn whole_seconds_fields_refuse_units_and_out_of_range_values() {
        let (position, message) =
            parse_text("description: x\nsettings: { heartbeat_grace: 30s }\nsteps: []\n").unwrap_err();
        assert_eq!(position, Some(Position { line: 2, column: 30 }));
        assert!(
            message.starts_with(
                "`30s` has a unit, but this field takes whole seconds as an integer with no unit: write `30`"
            ),
            "{message}"
        );
        let (_, message) = parse_text("description: x\nclasses: { C: { timeout: 1h } }\nsteps: []\n").unwrap_err();
        assert!(message.contains("write `3600`"), "{message}");
        let (position, message) =
            parse_text("description: x\nclasses: { C: { base_delay: -1 } }\nsteps: []\n").unwrap_err();
        assert_eq!(position, Some(Position { line: 2, column: 29 }));
        assert!(message.contains("from 0 to 284012524800"), "{message}");
        let (_, message) =
            parse_text("description: x\njobs: [ { id: a, class: C, attempts: 9223372036854775807 } ]\nsteps: []\n")
                .unwrap_err();
        assert!(message.contains("so that counting claims cannot overflow"), "{message}");
        // Values inside the ranges still read as before.
        let s = parse_text("description: x\nsettings: { heartbeat_grace: -5 }\nclasses: { C: { timeout: 0, max_delay: 1 } }\nsteps: [ { reap: { timeout: -60 } } ]\n").unwrap();
        assert_eq!((s.settings.heartbeat_grace, s.classes["C"].timeout), (-5, 0));
    }

    #[cfg(unix)]
    #[test]
    fn a_folder_linked_to_itself_counts_each_file_once() {
        let scratch = Scratch::new("cycle");
        std::fs::create_dir_all(scratch.0.join("a")).unwrap();
        std::fs::write(scratch.0.join("a/one.yaml"), "description: x\nsteps: []\n").unwrap();
        std::os::unix::fs::symlink("..", scratch.0.join("a/loop")).unwrap();
        std::os::unix::fs::symlink(".", scratch.0.join("self")).unwrap();
        let found = discover(&scratch.0).unwrap();
        let names: Vec<&str> = found.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["a/one"]);
        assert_eq!(load_dir(&scratch.0, &[]).unwrap().len(), 1);
    }

    #[test]
    fn duplicate_keys_are_errors() {
        let (position, _) = parse_text("description: x\ndescription: y\nsteps: []\n").unwrap_err();
        assert_eq!(position.map(|p| p.line), Some(2));
    }
}
