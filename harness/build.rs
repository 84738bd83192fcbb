//! Rebuilds the binary when the embedded dialect SQL or scenario corpus
//! changes (include_dir does not track the files it embeds), and records
//! the git commit it was built from as `REAPCHECK_COMMIT` (`--version`,
//! `outcomes.json`), so that two builds can be told apart. Nothing here
//! reads the environment: which servers exist is decided at run time, so
//! changing a `REAPCHECK_*_URL` never recompiles the crate.

use std::process::Command;

fn main() {
    println!("cargo::rerun-if-changed=../dialects");
    println!("cargo::rerun-if-changed=../scenarios");
    println!("cargo::rerun-if-changed=build.rs");
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".to_owned());
    println!("cargo::rustc-env=REAPCHECK_COMMIT={commit}");
    // A new commit moves HEAD or the branch it names (loose or packed).
    // In a worktree (`git worktree add`) HEAD is in its own folder and the
    // branches in the common one.
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        println!("cargo::rerun-if-changed={dir}/HEAD");
        let common = git(&["rev-parse", "--path-format=absolute", "--git-common-dir"]).unwrap_or(dir);
        println!("cargo::rerun-if-changed={common}/packed-refs");
        if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo::rerun-if-changed={common}/{branch}");
        }
    }
}

/// `git args` in the crate's folder, its trimmed output; `None` outside a
/// repository (a source tarball) or without git.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (out.status.success() && !text.is_empty()).then_some(text)
}
