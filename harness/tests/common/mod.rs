//! What the integration tests share: a scratch folder in the system's temp
//! folder (outside this repository), and the binary run there with none of
//! the caller's reapcheck settings. Each test file uses part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A fresh, empty folder `reapcheck-<suite>-<tag>-<pid>-<n>` (the counter
/// keeps tests that run at once in one process apart); removed when
/// dropped.
pub struct Scratch(pub PathBuf);

impl Scratch {
    /// The folder for test suite `suite` (the test file's name) and `tag`.
    pub fn new(suite: &str, tag: &str) -> Scratch {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("reapcheck-{suite}-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a scratch folder");
        Scratch(dir)
    }

    /// `rel` below the folder.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.0.join(rel)
    }

    /// The text of `rel` below the folder.
    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().expect("the workspace exists")
}

/// The binary with `args` in `dir`, with no `REAPCHECK_*` variable and no
/// `CI` from the caller: no target, URL, requirement or input set but what
/// the test gives.
pub fn clean_command(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_reapcheck"));
    cmd.args(args).current_dir(dir).env_remove("CI");
    for (key, _) in std::env::vars().filter(|(k, _)| k.starts_with("REAPCHECK_")) {
        cmd.env_remove(key);
    }
    cmd
}

/// [`clean_command`], run to its end.
pub fn clean_run(dir: &Path, args: &[&str]) -> Output {
    clean_command(dir, args).output().expect("the binary runs")
}

/// Its stdout as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Its stderr as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
