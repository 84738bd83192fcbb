//! Snapshot files in insta's format, one per scenario (and one per declared
//! divergence), beside the scenarios: `scenarios/grace/snapshots/floor.snap`
//! for `scenarios/grace/floor.yaml`. `cargo insta review` handles them, and
//! so does `reapcheck run --accept`. Snapshots of the builtin corpus
//! ([`crate::corpus`]) are read from the binary and never written.
//!
//! insta's `source:` header names the test that compares a snapshot. In
//! reapcheck's own repository that is `harness/tests/scenarios.rs`, and the
//! header stays exactly as insta writes it there; in a user's project no
//! such file exists, so reapcheck writes `source: reapcheck run --accept`,
//! the command that wrote it and compares it ([`source`]).

use std::path::{Path, PathBuf};

/// Where the snapshot of scenario file `scenario_path` lives; with
/// `variant`, the declared divergence of that target.
pub fn path(scenario_path: &Path, variant: Option<&str>) -> PathBuf {
    let stem = scenario_path.file_stem().expect("scenario files have names").to_string_lossy();
    let dir = scenario_path.parent().unwrap_or(Path::new(".")).join("snapshots");
    dir.join(format!("{}.snap", name(&stem, variant)))
}

/// The snapshot name insta knows it by: the file stem, `@target` for a
/// divergence.
pub fn name(stem: &str, variant: Option<&str>) -> String {
    match variant {
        Some(v) => format!("{stem}@{v}"),
        None => stem.to_owned(),
    }
}

/// The recorded contents of a snapshot file, or `None` when there is none.
pub fn read(path: &Path) -> std::io::Result<Option<String>> {
    if crate::corpus::is_builtin(path) {
        return Ok(crate::corpus::read(path).map(|text| normalize(contents(text))));
    }
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(normalize(contents(&text)))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// The text after insta's `---` header.
fn contents(text: &str) -> &str {
    text.strip_prefix("---\n").and_then(|rest| rest.split_once("\n---\n")).map_or(text, |(_, body)| body)
}

/// What is compared: lines without trailing white space, one final newline.
pub fn normalize(text: &str) -> String {
    // Most texts are so already (every outcome reapcheck writes, every
    // snapshot it wrote): copied whole, not line by line.
    let already = text.ends_with('\n')
        && !text.ends_with("\n\n")
        && !text.bytes().any(|b| b >= 0x80 || matches!(b, b'\r' | 0x0b | 0x0c))
        && !text.contains(" \n")
        && !text.contains("\t\n");
    if already {
        return text.to_owned();
    }
    normalize_lines(text)
}

/// [`normalize`], line by line.
fn normalize_lines(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 1);
    for line in text.lines() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

/// The `source:` header insta writes in reapcheck's own repository: the
/// test that compares the snapshots there.
pub const REPOSITORY_SOURCE: &str = "harness/tests/scenarios.rs";

/// The `source:` header of snapshots written in a user's project: the
/// command that writes and compares them.
pub const PROJECT_SOURCE: &str = "reapcheck run --accept";

/// Whether `root` (the project root: the folder of `reapcheck.toml`, or the
/// current folder) is reapcheck's own repository. Decided by the file that
/// compares its snapshots, `harness/tests/scenarios.rs` below `root`, not by
/// a folder name, a remote or the binary's build path: a clone anywhere is
/// this repository, and a user's project, which has no such test, never is.
pub fn is_reapcheck_repository(root: &Path) -> bool {
    root.join(REPOSITORY_SOURCE).is_file()
}

/// The `source:` header for snapshots written below `root`:
/// [`REPOSITORY_SOURCE`] in reapcheck's own repository (as insta writes
/// it), else [`PROJECT_SOURCE`].
pub fn source(root: &Path) -> &'static str {
    if is_reapcheck_repository(root) { REPOSITORY_SOURCE } else { PROJECT_SOURCE }
}

/// Writes `contents` as an insta snapshot, atomically (a temporary file
/// renamed into place, so an interrupted write leaves no half file).
/// `input_file` is the header naming the scenario file; give it relative to
/// the project root ([`input_file`]) so that it is the same on every machine,
/// and `source` as [`source`] gives it for that root.
///
/// # Errors
///
/// The file cannot be written, or `path` is a builtin snapshot (read-only).
pub fn write(path: &Path, source: &str, input_file: &str, contents: &str) -> std::io::Result<()> {
    if crate::corpus::is_builtin(path) {
        return Err(std::io::Error::other(
            "the builtin corpus is part of reapcheck and read-only: copy the scenario into your own scenarios folder",
        ));
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let text = render(source, input_file, contents);
    let tmp = path.with_extension("snap.tmp");
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}

/// The text of a snapshot file: insta's header naming `source` (see
/// [`source`]) and `input_file`, then `contents` normalized.
pub fn render(source: &str, input_file: &str, contents: &str) -> String {
    let input = input_file.replace('\\', "/");
    format!("---\nsource: {source}\ninput_file: {input}\n---\n{}", normalize(contents))
}

/// The `input_file` header for scenario file `scenario_file`: relative to
/// `root` (the folder of `reapcheck.toml`, or the current folder) when it
/// lies below it, else its path as given when that is relative, else its
/// file name alone. Never an absolute path, which would differ per machine.
pub fn input_file(scenario_file: &Path, root: &Path) -> String {
    let absolute = std::path::absolute(scenario_file).unwrap_or_else(|_| scenario_file.to_owned());
    let root = std::path::absolute(root).unwrap_or_else(|_| root.to_owned());
    let shown = match absolute.strip_prefix(&root) {
        Ok(relative) => relative.to_owned(),
        Err(_) if scenario_file.is_relative() => scenario_file.to_owned(),
        Err(_) => PathBuf::from(scenario_file.file_name().unwrap_or_default()),
    };
    shown.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/")
}

/// A snapshot file whose scenario is gone: `snapshots/<name>.snap` (or
/// `<name>@<target>.snap`) with no `<name>.yaml` in the folder above.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Orphan {
    /// The snapshot file.
    pub snapshot: PathBuf,
    /// The scenario file it belongs to, which does not exist.
    pub scenario: PathBuf,
}

impl std::fmt::Display for Orphan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} is an orphaned snapshot: its scenario {} does not exist (deleted or renamed); delete the snapshot, \
             or restore the scenario (a renamed scenario takes its snapshot along: rename the .snap the same way)",
            self.snapshot.display(),
            self.scenario.display()
        )
    }
}

/// Every orphaned snapshot below the scenarios folder `folder`, sorted.
/// Only `.snap` files in folders named `snapshots` count (insta's pending
/// `.snap.new` and an interrupted write's `.snap.tmp` do not). The builtin
/// corpus is never walked: its snapshots are read from the binary, built
/// from scenarios that exist, so a `builtin:` folder gives none.
///
/// # Errors
///
/// A folder below `folder` cannot be read.
pub fn orphans(folder: &Path) -> std::io::Result<Vec<Orphan>> {
    let mut found = Vec::new();
    if !crate::corpus::is_builtin(folder) {
        walk_orphans(folder, &mut found)?;
    }
    found.sort_by(|a, b| a.snapshot.cmp(&b.snapshot));
    Ok(found)
}

fn walk_orphans(dir: &Path, found: &mut Vec<Orphan>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if !path.is_dir() {
            continue;
        }
        if path.file_name().is_some_and(|n| n == "snapshots") {
            for snap in std::fs::read_dir(&path)? {
                let snap = snap?.path();
                let Some(name) = snap.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_suffix(".snap")) else {
                    continue;
                };
                if !snap.is_file() {
                    continue;
                }
                let scenario = |stem: &str| dir.join(format!("{stem}.yaml"));
                // `<stem>@<target>` is a divergence of `<stem>`; a stem that
                // itself holds `@` is tried whole first.
                let exists =
                    scenario(name).is_file() || name.rsplit_once('@').is_some_and(|(stem, _)| scenario(stem).is_file());
                if !exists {
                    let stem = name.rsplit_once('@').map_or(name, |(stem, _)| stem);
                    found.push(Orphan { snapshot: snap.clone(), scenario: scenario(stem) });
                }
            }
        }
        walk_orphans(&path, found)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn a_text_already_normalized_is_copied_as_line_by_line_would_write_it(
            text in "([a-z :-]{0,6}[ \t\r\u{b}\u{c}\u{a0}]?\n){0,5}[a-z ]{0,3}\n{0,2}"
        ) {
            prop_assert_eq!(normalize(&text), normalize_lines(&text));
        }
    }

    use super::*;

    #[test]
    fn snapshots_sit_beside_their_scenario() {
        let p = Path::new("scenarios/grace/floor.yaml");
        assert_eq!(path(p, None), Path::new("scenarios/grace/snapshots/floor.snap"));
        assert_eq!(path(p, Some("mssql")), Path::new("scenarios/grace/snapshots/floor@mssql.snap"));
    }

    #[test]
    fn written_snapshots_read_back_and_keep_insta_headers() {
        let dir = std::env::temp_dir().join(format!("reapcheck-snap-{}", std::process::id()));
        let p = dir.join("snapshots/x.snap");
        write(&p, REPOSITORY_SOURCE, "scenarios/x.yaml", "steps:\n- reap: 1   \n").unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(
            text.starts_with("---\nsource: harness/tests/scenarios.rs\ninput_file: scenarios/x.yaml\n---\nsteps:\n")
        );
        assert_eq!(read(&p).unwrap().as_deref(), Some("steps:\n- reap: 1\n"));
        assert_eq!(read(&dir.join("missing.snap")).unwrap(), None);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn input_files_are_relative_to_the_project_root_never_absolute() {
        let root = std::env::temp_dir().join("reapcheck-project");
        assert_eq!(input_file(&root.join("reapcheck/scenarios/a.yaml"), &root), "reapcheck/scenarios/a.yaml");
        assert_eq!(input_file(Path::new("scenarios/a.yaml"), Path::new("/elsewhere")), "scenarios/a.yaml");
        assert_eq!(input_file(Path::new("/home/someone/x/a.yaml"), &root), "a.yaml");
    }

    #[test]
    fn builtin_snapshots_are_never_written() {
        let e = write(Path::new("builtin:/grace/snapshots/x.snap"), PROJECT_SOURCE, "x.yaml", "a: 1\n").unwrap_err();
        assert!(e.to_string().contains("read-only"), "{e}");
    }

    #[test]
    fn this_repository_keeps_insta_s_source_and_any_other_project_names_the_command() {
        let repository = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        assert_eq!(source(&repository), "harness/tests/scenarios.rs");
        assert_eq!(source(&repository.join("harness")), PROJECT_SOURCE);
        assert_eq!(source(&std::env::temp_dir()), PROJECT_SOURCE);
        assert!(render(PROJECT_SOURCE, "s/a.yaml", "a: 1\n").starts_with("---\nsource: reapcheck run --accept\n"));
    }

    #[test]
    fn a_snapshot_without_its_scenario_is_an_orphan_and_a_divergence_is_not() {
        let dir = std::env::temp_dir().join(format!("reapcheck-orphans-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("g/snapshots")).unwrap();
        std::fs::write(dir.join("g/kept.yaml"), "").unwrap();
        for snap in ["kept.snap", "kept@mssql.snap", "gone.snap", "gone@mysql.snap", "kept.snap.new"] {
            std::fs::write(dir.join("g/snapshots").join(snap), "").unwrap();
        }
        let found = orphans(&dir).unwrap();
        let shown: Vec<_> = found.iter().map(|o| o.snapshot.file_name().unwrap().to_string_lossy()).collect();
        assert_eq!(shown, ["gone.snap", "gone@mysql.snap"]);
        assert_eq!(found[1].scenario, dir.join("g/gone.yaml"));
        assert!(found[0].to_string().contains("delete the snapshot, or restore the scenario"), "{}", found[0]);
        assert_eq!(orphans(Path::new("builtin:/")).unwrap(), []);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
