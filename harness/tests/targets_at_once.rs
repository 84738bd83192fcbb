//! `run`, `fuzz` and `race` on sqlite, postgres and mariadb at once
//! (`cli/at_once.rs`): every target still passes, and the output stays
//! grouped per target, in the order `--db` names them, whichever target
//! finishes first. Needs `REAPCHECK_POSTGRES_URL` and
//! `REAPCHECK_MARIADB_URL`; without them the tests pass without running
//! (and say so), unless `REAPCHECK_REQUIRE` names the target.

mod common;
use common::Scratch;

use reapcheck::target::Target;

/// The two servers' URLs, or `None` (after saying why) when one is not set.
fn urls() -> Option<[(String, String); 2]> {
    let postgres = reapcheck::reach::test_url(Target::Postgres)?;
    let mariadb = reapcheck::reach::test_url(Target::Mariadb)?;
    Some([(Target::Postgres.url_variable(), postgres), (Target::Mariadb.url_variable(), mariadb)])
}

/// The binary with `args` in `dir`, given only these URLs; exit code and stdout.
fn reapcheck(dir: &std::path::Path, urls: &[(String, String)], args: &[&str]) -> (Option<i32>, String) {
    let mut cmd = common::clean_command(dir, args);
    cmd.envs(urls.iter().map(|(k, v)| (k, v)));
    let o = cmd.output().expect("the binary runs");
    (o.status.code(), format!("{}{}", common::stdout(&o), common::stderr(&o)))
}

/// The target each line is about, in output order, consecutive repeats
/// merged: a target that appears twice had its lines split.
fn blocks<'a>(out: &'a str, about: impl Fn(&'a str) -> Option<&'a str>) -> Vec<&'a str> {
    let mut seen: Vec<&str> = Vec::new();
    for target in out.lines().filter_map(about) {
        if seen.last() != Some(&target) {
            seen.push(target);
        }
    }
    seen
}

/// `ok       grace/x  on postgres [postgres 16.4]` is about `postgres`;
/// a target's own lines (`skipped: mysql (3 scenarios): ...`) too.
fn case_target(line: &str) -> Option<&str> {
    if let Some((_, on)) = line.split_once("  on ") {
        return on.split([' ', ':']).next();
    }
    line.strip_prefix("skipped: ").and_then(|r| r.split_once(" (")).map(|(target, _)| target)
}

#[test]
fn run_on_three_servers_keeps_each_targets_lines_together_in_db_order() {
    let Some(urls) = urls() else { return };
    let scratch = Scratch::new("targets-at-once", "run");
    let (code, out) =
        reapcheck(&scratch.0, &urls, &["run", "--db", "sqlite,postgres,mariadb", "grace/", "boundaries/"]);
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(blocks(&out, case_target), ["model", "sqlite", "postgres", "mariadb"], "{out}");
    let cases = out.lines().filter(|l| l.starts_with("ok ")).count();
    let closing = out.lines().last().unwrap_or_default();
    let per_target = cases / 4;
    assert!(per_target > 10 && cases == per_target * 4, "as many cases on each: {out}");
    for target in ["sqlite", "postgres", "mariadb"] {
        assert!(closing.contains(&format!("{target}: {per_target} passed, 0 failed, 0 skipped")), "{closing}");
    }
}

#[test]
fn a_target_skipped_among_them_keeps_its_place_and_is_never_counted_passed() {
    let Some(urls) = urls() else { return };
    let scratch = Scratch::new("targets-at-once", "skip");
    let db = "sqlite,postgres,mysql,mariadb";
    let (code, out) = reapcheck(&scratch.0, &urls, &["run", "--db", db, "--allow-skip", "--exact", "grace/never-beat"]);
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(blocks(&out, case_target), ["model", "sqlite", "postgres", "mysql", "mariadb"], "{out}");
    assert!(out.contains("skipped: mysql (1 scenarios): "), "{out}");
    assert!(out.lines().last().unwrap_or_default().contains("mysql: 0 passed, 0 failed, 1 skipped"), "{out}");
}

/// `ok       postgres [postgres 16.4]: ...` is about `postgres`.
fn result_target(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("ok       ").or_else(|| line.strip_prefix("FAIL     "))?;
    rest.split(' ').next()
}

#[test]
fn fuzz_and_race_on_three_servers_print_each_targets_result_in_db_order() {
    let Some(urls) = urls() else { return };
    let scratch = Scratch::new("targets-at-once", "fuzz");
    let db = "sqlite,postgres,mariadb";
    let (code, out) = reapcheck(&scratch.0, &urls, &["fuzz", "--db", db, "--cases", "8", "--seed", "1"]);
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(blocks(&out, result_target), ["sqlite", "postgres", "mariadb"], "{out}");
    assert!(out.contains("3 targets agreed with the model, 0 failed, 0 skipped"), "{out}");
    // The directed race is a fixed interleaving: it passes on every run.
    let (code, out) = reapcheck(&scratch.0, &urls, &["race", "--directed", "--db", db, "--jobs", "2"]);
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(blocks(&out, result_target), ["sqlite", "postgres", "mariadb"], "{out}");
    assert!(out.contains("3 passed, 0 failed, 0 skipped"), "{out}");
}
