//! Every state between steps is judged, not only the outcome: a copy of
//! the sqlite dialect whose worker `fail_retry` leaves the failed
//! attempt's token on the requeued row passes a scenario's final document
//! (a later claim or reap writes over the token) but not the state after
//! the `fail`, and the run says so.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().expect("the workspace exists")
}

#[test]
fn a_state_between_steps_that_parts_fails_even_when_the_outcome_agrees() {
    let dir = std::env::temp_dir().join(format!("reapcheck-checkpoints-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("sqlite")).expect("temp dir");
    for entry in std::fs::read_dir(root().join("dialects/sqlite")).expect("the sqlite dialect") {
        let path = entry.expect("an entry").path();
        let mut text = std::fs::read_to_string(&path).expect("readable");
        if path.ends_with("worker.sql") {
            let kept = "SET status = 'pending', run_at = :run_at, updated_at = :now,\n       last_error = 'failed'";
            let edited = text.replacen(
                "SET status = 'pending', run_at = :run_at, updated_at = :now, claim_token = NULL,\n       last_error = 'failed'",
                kept,
                1,
            );
            assert_ne!(edited, text, "fail_retry clears the token in the builtin dialect");
            text = edited;
        }
        std::fs::write(dir.join("sqlite").join(path.file_name().expect("a name")), text).expect("copied");
    }
    let name = "races/guards-after-skewed-finish";
    let o = Command::new(env!("CARGO_BIN_EXE_reapcheck"))
        .args(["run", "--dialects", dir.to_str().expect("UTF-8"), "--db", "sqlite", "--exact", name])
        .current_dir(root())
        .env_remove("REAPCHECK_REQUIRE")
        .env_remove("CI")
        .output()
        .expect("the binary runs");
    let out = String::from_utf8_lossy(&o.stdout);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("sqlite ends as the model does, but its state after step 5 is not the model's"), "{out}");
    assert!(out.contains("-    claim_token: null\n") || out.contains("claim_token: null"), "{out}");
    assert!(!out.contains("disagrees with the model"), "the outcome itself agrees\n{out}");
}
