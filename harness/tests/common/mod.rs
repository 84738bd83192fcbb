//! What the integration tests share: a scratch folder in the system's temp
//! folder (outside this repository), removed when dropped.

use std::path::PathBuf;
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
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
