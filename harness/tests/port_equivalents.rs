//! A port's equivalence declarations after it renames a column: the user's
//! own path. Copy a builtin dialect with its `equivalent-mutants.yaml`,
//! rename `claim_token` to `lock_token` in every SQL file (read back as
//! `claim_token`, the name the read-back contract reads), and every copied
//! declaration is stale, so plain `mutate` refuses them (exit 2).
//! `mutate --suggest` carries each one over to the port's mutant that makes
//! the same change, printed for review and, with `--write`, replaced in the
//! file; then `mutate` scores 100% with the same declared equivalents as
//! upstream, and no hash was written by hand. A port that deleted the
//! copied file gets upstream's declarations printed to paste.
//!
//! SQLite always runs; PostgreSQL runs when `REAPCHECK_POSTGRES_URL` is set.

mod common;
use common::Scratch;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().expect("the workspace exists")
}

fn reapcheck(args: &[&str]) -> Output {
    reapcheck_in(&root(), args)
}

/// The binary in `dir`; the caller's required targets do not apply (each
/// test names its one target), its server URLs do.
fn reapcheck_in(dir: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_reapcheck"));
    cmd.args(args).current_dir(dir).env_remove("REAPCHECK_REQUIRE");
    cmd.output().expect("reapcheck runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `sql` with the column `claim_token` renamed `lock_token`; the bound
/// parameter `:claim_token` (the contract's name) is kept.
fn renamed(sql: &str) -> String {
    let mut out = String::new();
    let mut rest = sql;
    while let Some(at) = rest.find("claim_token") {
        let before = rest[..at].chars().last();
        let after = rest[at + "claim_token".len()..].chars().next();
        let word = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        out.push_str(&rest[..at]);
        if before == Some(':') || word(before) || word(after) {
            out.push_str("claim_token");
        } else {
            out.push_str("lock_token");
        }
        rest = &rest[at + "claim_token".len()..];
    }
    out.push_str(rest);
    out
}

/// A copy of the builtin dialect `name` (with its declarations) under
/// `scratch`, its column renamed in every SQL file; returns the folder to
/// pass as `--dialects`.
fn port(scratch: &Scratch, name: &str) -> String {
    let dir = scratch.0.join("dialects").join(name);
    std::fs::create_dir_all(&dir).unwrap();
    for entry in std::fs::read_dir(root().join("dialects").join(name)).unwrap() {
        let path = entry.unwrap().path();
        let file = path.file_name().unwrap().to_str().unwrap().to_owned();
        let mut text = std::fs::read_to_string(&path).unwrap();
        if file.ends_with(".sql") {
            text = renamed(&text);
        }
        if file == "readback.sql" {
            // The harness reads the read-back row's columns by name.
            assert!(text.contains("attempts, lock_token,"), "{name}/readback.sql changed");
            text = text.replace("attempts, lock_token,", "attempts, lock_token AS claim_token,");
        }
        std::fs::write(dir.join(&file), text).unwrap();
    }
    let sql: String =
        ["schema.sql", "worker.sql"].iter().map(|f| std::fs::read_to_string(dir.join(f)).unwrap()).collect();
    assert!(sql.contains("lock_token") && !renamed(&sql).contains(" claim_token"), "the copy is renamed");
    scratch.0.join("dialects").display().to_string()
}

/// How many declarations the builtin dialect `name` ships.
fn upstream_declarations(name: &str) -> usize {
    let text = std::fs::read_to_string(root().join("dialects").join(name).join("equivalent-mutants.yaml")).unwrap();
    text.lines().filter(|l| l.starts_with("- mutant:")).count()
}

/// Runs `mutate` on the port and checks it scores 100% with `declared`
/// equivalents.
fn scores_full(db: &str, dialects: &str, declared: usize) -> String {
    let o = reapcheck(&["mutate", "--db", db, "--dialects", dialects]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}{}", stderr(&o));
    let score = out.lines().find(|l| l.starts_with(&format!("{db}: mutation score"))).unwrap_or_default().to_owned();
    assert!(score.starts_with(&format!("{db}: mutation score 100% (")), "{out}");
    assert!(score.contains(&format!(" {declared} declared equivalent")), "{score}");
    score
}

/// The whole path on one target: stale, refused, suggested, written, 100%.
fn the_users_path(db: &str) {
    let scratch = Scratch::new("port-equivalents", db);
    let dialects = port(&scratch, db);
    let file = scratch.0.join("dialects").join(db).join("equivalent-mutants.yaml");
    let copied = std::fs::read_to_string(&file).unwrap();
    let declared = upstream_declarations(db);

    let o = reapcheck(&["run", "--db", db, "--dialects", &dialects]);
    assert!(o.status.success(), "the renamed copy still passes the corpus: {}{}", stdout(&o), stderr(&o));

    let o = reapcheck(&["mutate", "--db", db, "--dialects", &dialects]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    let errors = err.lines().filter(|l| l.starts_with(&format!("error: {db}/equivalent-mutants.yaml:"))).count();
    // All but `read_leases: drop ORDER BY`, whose statement has no token.
    assert_eq!(errors, declared - 1, "every declaration the rename touched is stale: {err}");
    assert!(err.contains("no generated mutant `fail_final: drop WHERE conjunct 3 `claim_token = :token``"), "{err}");
    assert!(err.contains("hint: after renaming or reordering your SQL, `reapcheck mutate --suggest`"), "{err}");

    // --suggest prints, for review, and writes nothing.
    let o = reapcheck(&["mutate", "--db", db, "--dialects", &dialects, "--suggest"]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), copied, "--suggest alone writes nothing");
    assert!(
        out.contains(&format!("# {db}/equivalent-mutants.yaml: {errors} stale declarations, {errors} carried over")),
        "{out}"
    );
    assert_eq!(out.matches("# carried over from upstream, review the reason: was `").count(), errors, "{out}");
    assert!(out.contains("- mutant: \"fail_final: drop WHERE conjunct 3 `lock_token = :token`\"\n"), "{out}");
    assert!(!out.contains("\n# declared by the builtin"), "nothing is missing: {out}");

    // --write replaces the stale entries, and the port scores as upstream.
    let o = reapcheck(&["mutate", "--db", db, "--dialects", &dialects, "--suggest", "--write"]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(written.starts_with(copied.lines().next().unwrap()), "the header comment is kept: {written}");
    assert!(!written.contains("- mutant: \"fail_final: drop WHERE conjunct 3 `claim_token"), "{written}");
    assert_eq!(written.matches("# carried over from upstream, review the reason").count(), errors);
    scores_full(db, &dialects, declared);

    // Nothing is left to carry over.
    let o = reapcheck(&["mutate", "--db", db, "--dialects", &dialects, "--suggest"]);
    let out = stdout(&o);
    assert!(out.contains("no stale declaration") && !out.contains("- mutant:"), "{out}");
}

#[test]
fn sqlite_port_that_renamed_a_column_gets_upstreams_equivalents_carried_over() {
    the_users_path("sqlite");
}

#[test]
fn postgres_port_that_renamed_a_column_gets_upstreams_equivalents_carried_over() {
    if std::env::var("REAPCHECK_POSTGRES_URL").is_err() {
        eprintln!("skipped: REAPCHECK_POSTGRES_URL is not set");
        return;
    }
    the_users_path("postgres");
}

#[test]
fn a_port_that_deleted_the_copied_declarations_gets_upstreams_printed_to_paste() {
    let scratch = Scratch::new("port-equivalents", "deleted");
    let dialects = port(&scratch, "sqlite");
    let file = scratch.0.join("dialects/sqlite/equivalent-mutants.yaml");
    std::fs::remove_file(&file).unwrap();
    let declared = upstream_declarations("sqlite");

    let o = reapcheck(&["mutate", "--db", "sqlite", "--dialects", &dialects, "--suggest", "--write"]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}{}", stderr(&o));
    assert!(!file.exists(), "--write rewrites stale entries only; it creates nothing");
    assert!(
        out.contains("# declared by the builtin sqlite dialect and not in sqlite/equivalent-mutants.yaml"),
        "{out}"
    );
    assert_eq!(out.matches("# carried over from upstream, review the reason").count(), declared, "{out}");

    // The output is the file to paste, as it is.
    std::fs::write(&file, &out).unwrap();
    scores_full("sqlite", &dialects, declared);
}

#[test]
fn write_needs_a_folder_and_a_stale_declaration_it_cannot_carry_is_a_warning() {
    // Outside any project, the builtin SQL runs: there is no file of yours.
    let outside = Scratch::new("port-equivalents", "outside");
    let o = reapcheck_in(&outside.0, &["mutate", "--db", "sqlite", "--suggest", "--write"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("error: `--write` rewrites your own sqlite/equivalent-mutants.yaml"), "{}", stderr(&o));
    let o = reapcheck(&["mutate", "--db", "sqlite", "--write"]);
    assert_eq!(o.status.code(), Some(2), "--write alone is refused: {}", stderr(&o));

    let scratch = Scratch::new("port-equivalents", "gone");
    let dialects = port(&scratch, "sqlite");
    let worker = scratch.0.join("dialects/sqlite/worker.sql");
    let text = std::fs::read_to_string(&worker).unwrap();
    // The port's `complete` no longer checks the status: that declaration
    // has nothing to carry over to.
    let from = "lock_token = NULL\n WHERE id = :id AND status = 'processing' AND lock_token = :token\n";
    assert!(text.contains(from), "{text}");
    let to = "lock_token = NULL\n WHERE id = :id AND lock_token = :token\n";
    std::fs::write(&worker, text.replacen(from, to, 1)).unwrap();
    let file = scratch.0.join("dialects/sqlite/equivalent-mutants.yaml");
    let o = reapcheck(&["mutate", "--db", "sqlite", "--dialects", &dialects, "--suggest", "--write"]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("warning: sqlite/equivalent-mutants.yaml:5:11: `complete: drop WHERE conjunct 2 `status = 'processing'`` is stale: no mutant of `complete` in your SQL makes the same change"),
        "{err}"
    );
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(
        written.contains(
            "- mutant: \"complete: drop WHERE conjunct 2 `status = 'processing'`\"\n  statement: \"da9ec0e77867f936\""
        ),
        "left as it was: {written}"
    );
    let o = reapcheck(&["mutate", "--db", "sqlite", "--dialects", &dialects]);
    assert_eq!(o.status.code(), Some(2), "still stale in plain mutate: {}", stderr(&o));
}
