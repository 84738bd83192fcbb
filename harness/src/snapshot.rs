//! Snapshot files in insta's format, one per scenario (and one per declared
//! divergence), beside the scenarios: `scenarios/grace/snapshots/floor.snap`
//! for `scenarios/grace/floor.yaml`. `cargo insta review` handles them, and
//! so does `reapcheck run --accept`. Snapshots of the builtin corpus
//! ([`crate::corpus`]) are read from the binary and never written.

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
    let mut out: String = text.lines().map(|l| format!("{}\n", l.trim_end())).collect();
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

/// Writes `contents` as an insta snapshot, atomically (a temporary file
/// renamed into place, so an interrupted write leaves no half file).
/// `input_file` is the header naming the scenario file; give it relative to
/// the project root ([`input_file`]) so that it is the same on every machine.
///
/// # Errors
///
/// The file cannot be written, or `path` is a builtin snapshot (read-only).
pub fn write(path: &Path, input_file: &str, contents: &str) -> std::io::Result<()> {
    if crate::corpus::is_builtin(path) {
        return Err(std::io::Error::other(
            "the builtin corpus is part of reapcheck and read-only: copy the scenario into your own scenarios folder",
        ));
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let text = render(input_file, contents);
    let tmp = path.with_extension("snap.tmp");
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}

/// The text of a snapshot file: insta's header naming `input_file`, then
/// `contents` normalized.
pub fn render(input_file: &str, contents: &str) -> String {
    let input = input_file.replace('\\', "/");
    format!("---\nsource: harness/tests/scenarios.rs\ninput_file: {input}\n---\n{}", normalize(contents))
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

#[cfg(test)]
mod tests {
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
        write(&p, "scenarios/x.yaml", "steps:\n- reap: 1   \n").unwrap();
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
        let e = write(Path::new("builtin:/grace/snapshots/x.snap"), "x.yaml", "a: 1\n").unwrap_err();
        assert!(e.to_string().contains("read-only"), "{e}");
    }
}
