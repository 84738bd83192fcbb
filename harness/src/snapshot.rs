//! Snapshot files in insta's format, one per scenario (and one per declared
//! divergence), beside the scenarios: `scenarios/grace/snapshots/floor.snap`
//! for `scenarios/grace/floor.yaml`. `cargo insta review` handles them, and
//! so does `reapcheck run --accept`.

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
pub fn write(path: &Path, scenario_file: &Path, contents: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let input = scenario_file.display().to_string().replace('\\', "/");
    let text = format!("---\nsource: harness/tests/scenarios.rs\ninput_file: {input}\n---\n{}", normalize(contents));
    let tmp = path.with_extension("snap.tmp");
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
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
        write(&p, Path::new("scenarios/x.yaml"), "steps:\n- reap: 1   \n").unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(
            text.starts_with("---\nsource: harness/tests/scenarios.rs\ninput_file: scenarios/x.yaml\n---\nsteps:\n")
        );
        assert_eq!(read(&p).unwrap().as_deref(), Some("steps:\n- reap: 1\n"));
        assert_eq!(read(&dir.join("missing.snap")).unwrap(), None);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
