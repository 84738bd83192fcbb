//! The scenario corpus built into the binary, selectable as the scenario
//! set `builtin`: every `scenarios/**/*.yaml` and its `snapshots/*.snap` of
//! this repository at build time, so an installed `reapcheck` runs the
//! corpus from any folder. Builtin files have virtual paths below
//! `builtin:` (`builtin:/grace/floor.yaml`), shown in messages like files;
//! they are read-only.

use std::path::{Path, PathBuf};

use include_dir::{Dir, DirEntry, include_dir};

use crate::scenario::{LoadedScenario, ScenarioError, parse_named};

/// The corpus, embedded at build time (build.rs reruns when it changes).
static CORPUS: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/../scenarios");

/// The name of the builtin scenario set, in `--scenarios`, the
/// environment and `reapcheck.toml`.
pub const BUILTIN: &str = "builtin";

/// The first component of every builtin file's virtual path.
const ROOT: &str = "builtin:";

/// The virtual path of builtin file `relative` (`grace/floor.yaml`).
pub fn path(relative: &str) -> PathBuf {
    Path::new(ROOT).join(relative)
}

/// Whether `path` names a builtin file rather than one on disk.
pub fn is_builtin(path: &Path) -> bool {
    path.starts_with(ROOT)
}

/// The text of builtin file `path` (a virtual path), or `None`.
pub fn read(path: &Path) -> Option<&'static str> {
    let relative = path.strip_prefix(ROOT).ok()?;
    CORPUS.get_file(relative).and_then(|f| f.contents_utf8())
}

/// Every builtin scenario, sorted by name, each parsed and validated as a
/// file on disk is. The corpus is checked by the test suite, so an error
/// here means the binary was built from a broken tree.
pub fn load() -> Result<Vec<LoadedScenario>, Vec<ScenarioError>> {
    let mut files = Vec::new();
    collect(&CORPUS, &mut files);
    // By name, as scenarios on disk are sorted (`a` before `a-b`).
    files.sort_by(|a, b| a.0.trim_end_matches(".yaml").cmp(b.0.trim_end_matches(".yaml")));
    let mut loaded = Vec::new();
    let mut errors = Vec::new();
    for (relative, text) in files {
        let name = relative.trim_end_matches(".yaml").to_owned();
        match parse_named(&name, &path(&relative), text) {
            Ok(s) => loaded.push(s),
            Err(mut e) => errors.append(&mut e),
        }
    }
    if errors.is_empty() { Ok(loaded) } else { Err(errors) }
}

fn collect(dir: &'static Dir<'static>, out: &mut Vec<(String, &'static str)>) {
    for entry in dir.entries() {
        match entry {
            DirEntry::Dir(d) => collect(d, out),
            DirEntry::File(f) if f.path().extension().is_some_and(|e| e == "yaml") => {
                let relative = f.path().to_string_lossy().replace('\\', "/");
                out.push((relative, f.contents_utf8().unwrap_or_default()));
            }
            DirEntry::File(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_corpus_is_the_one_on_disk_with_its_snapshots() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
        let on_disk = crate::scenario::discover(&root).unwrap();
        let builtin = load().unwrap();
        let names: Vec<&str> = builtin.iter().map(|s| s.name.as_str()).collect();
        let disk_names: Vec<&str> = on_disk.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, disk_names);
        let floor = builtin.iter().find(|s| s.name == "grace/floor-keeps-recent-beat").unwrap();
        assert_eq!(floor.path, Path::new("builtin:/grace/floor-keeps-recent-beat.yaml"));
        assert!(is_builtin(&floor.path));
        let snap = crate::snapshot::path(&floor.path, None);
        assert_eq!(
            read(&snap),
            Some(std::fs::read_to_string(root.join("grace/snapshots/floor-keeps-recent-beat.snap")).unwrap().as_str())
        );
        assert!(!is_builtin(Path::new("scenarios/grace/floor.yaml")));
    }
}
