//! `reapcheck bench --scale` on small tables (2,000 and 20,000 rows, 1,000
//! processing, 100 stale): the shipped dialects' scans read only the stale
//! rows, and a copy whose scan index was dropped is flagged with the plan
//! line that shows it. Growth ratios are not asserted here (timings are a
//! benchmark's business, README.md "Performance"): `--max-growth` is set
//! out of reach so that only the plans decide.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use reapcheck::reach::test_url;
use reapcheck::target::Target;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace root").to_path_buf()
}

const SMALL: &[&str] = &["--sizes", "2000,20000", "--processing", "1000", "--stale", "100", "--runs", "3"];

/// `bench --scale` on `target` with the dialects in `dialects`.
fn scale(target: Target, url: Option<&str>, dialects: &Path) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_reapcheck"));
    cmd.args(["bench", "--scale", "--db", target.name(), "--dialects"])
        .arg(dialects)
        .args(SMALL)
        .args(["--max-growth", "1000"])
        .current_dir(root())
        .env_remove("REAPCHECK_REQUIRE");
    for t in Target::ALL {
        cmd.env_remove(t.url_variable());
    }
    if let Some(url) = url {
        cmd.env(target.url_variable(), url);
    }
    cmd.output().expect("the binary runs")
}

/// The targets this machine reaches: sqlite, and the servers whose URL is
/// set (required ones panic when unset, see `reach::test_url`).
fn targets() -> Vec<(Target, Option<String>)> {
    let mut found = vec![(Target::Sqlite, None)];
    for target in [Target::Postgres, Target::Mariadb] {
        if let Some(url) = test_url(target) {
            found.push((target, Some(url)));
        }
    }
    found
}

/// A copy of `dialects/` without the scan's index.
struct NoIndex(PathBuf);

impl NoIndex {
    fn new() -> NoIndex {
        let dir = std::env::temp_dir().join(format!("reapcheck-scale-noindex-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for name in ["sqlite", "postgres", "mysql"] {
            let from = root().join("dialects").join(name);
            let to = dir.join(name);
            std::fs::create_dir_all(&to).expect("a scratch folder");
            for file in std::fs::read_dir(&from).expect("a dialect folder") {
                let file = file.expect("a file").path();
                let mut text = std::fs::read_to_string(&file).expect("readable");
                if file.file_name().is_some_and(|n| n == "schema.sql") {
                    let before = text.clone();
                    text = text
                        .lines()
                        .filter(|l| !l.starts_with("CREATE INDEX jobs_stale"))
                        .collect::<Vec<_>>()
                        .join("\n");
                    text = text.replace(
                        "    INDEX jobs_reap (status, queue),\n    INDEX jobs_stale (status, last_seen)\n",
                        "    INDEX jobs_reap (status, queue)\n",
                    );
                    assert_ne!(text, before, "{name}/schema.sql no longer has jobs_stale: update this test");
                }
                // MySQL's scans name the index (FORCE INDEX): a copy without
                // the index cannot name it either.
                if file.file_name().is_some_and(|n| n == "reaper.sql") {
                    text = text.replace(" FORCE INDEX (jobs_stale)", "");
                }
                std::fs::write(to.join(file.file_name().expect("a name")), text).expect("written");
            }
        }
        NoIndex(dir)
    }
}

impl Drop for NoIndex {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn stdout(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

#[test]
fn the_shipped_scans_read_only_the_stale_rows_and_a_dropped_index_is_flagged() {
    let copy = NoIndex::new();
    for (target, url) in targets() {
        let o = scale(target, url.as_deref(), &root().join("dialects"));
        let out = stdout(&o);
        assert!(o.status.success(), "{target}: {out}");
        assert!(out.contains("  plan at 20000 rows:\n"), "{target}: no plan printed: {out}");
        assert!(!out.contains("FLAGGED"), "{target}: {out}");
        assert!(out.contains(&format!("{target}: scale ok")), "{target}: {out}");
        assert!(out.contains("growth t(20000)/t(2000): "), "{target}: {out}");

        let o = scale(target, url.as_deref(), &copy.0);
        let out = stdout(&o);
        assert_eq!(o.status.code(), Some(1), "{target}: the dropped index passed: {out}");
        let flagged: Vec<&str> = out.lines().filter(|l| l.starts_with("  FLAGGED (plan): `")).collect();
        assert!(!flagged.is_empty(), "{target}: nothing flagged: {out}");
        assert!(
            flagged.iter().all(|l| l.contains("jobs_reap") && l.ends_with("reads every processing row")),
            "{target}: the plan line should show the status index read for every processing row: {out}"
        );
        assert!(out.contains(&format!("{target}: scale FAILED")), "{target}: {out}");
    }
}

#[test]
fn scale_settings_that_cannot_be_measured_are_refused() {
    let dialects = root().join("dialects");
    for (args, message) in [
        (&["--sizes", "20000,2000"][..], "--sizes: 20000,2000 must be above zero and ascending"),
        (&["--sizes", "1000,2000", "--processing", "1001"][..], "need 0 < stale <= processing <= the smallest size"),
        (&["--sizes", "ten"][..], "--sizes: `ten` is not a row count"),
        (&["--sizes", "20000"][..], "--sizes: 20000 is one size; give two or more"),
        (&["--max-growth", "0"][..], "--max-growth: 0 is not a ratio above zero"),
        (&["--max-growth", "NaN"][..], "--max-growth: NaN is not a ratio above zero"),
        (&["--runs", "0"][..], "--runs"),
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_reapcheck"))
            .args(["bench", "--scale", "--db", "sqlite", "--dialects"])
            .arg(&dialects)
            .args(args)
            .current_dir(root())
            .output()
            .expect("the binary runs");
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stdout(&o));
        assert!(stdout(&o).contains(message), "{args:?}: {}", stdout(&o));
    }
}
