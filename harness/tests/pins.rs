//! Pinned outcomes (docs/policy.md, "Pinned outcomes") through the binary:
//! a pin that holds only its reason fails the case it names until
//! `run --accept` records the port's outcome; then the case reports
//! `diverged ... pinned (<reason>)`, and a port that no longer gives the
//! pinned outcome fails.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().expect("the workspace exists")
}

fn reapcheck(args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_reapcheck"));
    cmd.args(args).current_dir(root());
    for v in ["REAPCHECK_REQUIRE", "REAPCHECK_DB", "REAPCHECK_DIALECTS", "CI"] {
        cmd.env_remove(v);
    }
    cmd.output().expect("the binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A copy of the sqlite dialect whose reaper retries a dead job at once
/// (no backoff: no knob or invariant covers it), in a temporary folder
/// removed when dropped.
struct Port(PathBuf);

impl Port {
    fn new(name: &str) -> Port {
        let dir = std::env::temp_dir().join(format!("reapcheck-pins-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let sqlite = dir.join("sqlite");
        std::fs::create_dir_all(&sqlite).expect("temp dir");
        for entry in std::fs::read_dir(root().join("dialects/sqlite")).expect("the sqlite dialect") {
            let path = entry.expect("an entry").path();
            if path.is_file() {
                let text = std::fs::read_to_string(&path).expect("readable");
                let text =
                    text.replace("SET status = 'pending', run_at = :run_at,", "SET status = 'pending', run_at = :now,");
                std::fs::write(sqlite.join(path.file_name().expect("a name")), text).expect("copied");
            }
        }
        Port(dir)
    }

    fn pin(&self, scenario: &str) -> PathBuf {
        self.0.join("sqlite/pinned").join(format!("{scenario}.yaml"))
    }
}

impl Drop for Port {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn a_pin_without_its_outcome_fails_until_accepted_then_holds() {
    let port = Port::new("accept");
    let dir = port.0.to_str().expect("a UTF-8 path").to_owned();
    let name = "grace/never-beat";
    let run = |extra: &[&str]| {
        let mut args = vec!["run", "--dialects", dir.as_str(), "--db", "sqlite", "--exact", name];
        args.extend_from_slice(extra);
        reapcheck(&args)
    };
    let o = run(&[]);
    assert_eq!(o.status.code(), Some(1), "the copy retries without the backoff\n{}", stdout(&o));

    let pin = port.pin(name);
    std::fs::create_dir_all(pin.parent().expect("a folder")).expect("pinned/ made");
    std::fs::write(&pin, "reason: our reaper retries at once\n").expect("pin written");
    let o = run(&[]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "a pin with only its reason pins nothing\n{out}");
    assert!(out.contains("has a reason but no `outcome` yet"), "{out}");
    assert!(out.contains(&format!("reapcheck run --db sqlite --accept --exact {name}")), "{out}");

    let o = run(&["--accept"]);
    assert!(o.status.success(), "{}", stdout(&o));
    let written = std::fs::read_to_string(&pin).expect("the pin");
    assert!(written.contains("outcome:"), "{written}");

    let o = run(&[]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.contains(&format!("diverged {name}  on sqlite")), "{out}");
    assert!(out.contains("pinned (our reaper retries at once)"), "{out}");

    // A port that no longer gives the pinned outcome fails.
    let edited = written.replacen("run_at: 0s", "run_at: +1s", 1);
    assert_ne!(edited, written, "the pinned outcome holds the retry's run_at\n{written}");
    std::fs::write(&pin, edited).expect("pin edited");
    let o = run(&[]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("no longer gives the outcome pinned in"), "{out}");
}
