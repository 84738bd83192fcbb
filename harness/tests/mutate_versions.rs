//! `reapcheck mutate` across server versions: a mutant the server cannot
//! compile is not applicable there and left out of the score (a runtime
//! error still kills); equivalence declarations limited with `servers` hold
//! only there; declarations marked `evidence: reasoned` are listed on the
//! leg, and one that is killed says it was only reasoned; every shipped
//! declaration resolves.
//!
//! SQLite always runs; PostgreSQL and MariaDB run when
//! `REAPCHECK_POSTGRES_URL` / `REAPCHECK_MARIADB_URL` are set.

mod common;
use common::{Scratch, root, stderr, stdout};

use std::process::{Command, Output};

use reapcheck::dialect::{Dialect, Source};
use reapcheck::mutate::kill::{Found, KillOrder, first_killer};
use reapcheck::scenario::Schema;

fn reapcheck(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_reapcheck")).args(args).current_dir(root()).output().expect("reapcheck runs")
}

/// The copies a test makes in its scratch folder.
trait Copies {
    fn dialect(&self, dialect: &str, file: &str, from: &str, to: &str, declarations: &str) -> String;
    fn scenarios(&self) -> String;
}

impl Copies for Scratch {
    /// A copy of `dialects/<dialect>` under `dialects/`, with `from`
    /// replaced by `to` in `file` and the declarations replaced by
    /// `declarations`; returns the dialects folder.
    fn dialect(&self, dialect: &str, file: &str, from: &str, to: &str, declarations: &str) -> String {
        let to_dir = self.0.join("dialects").join(dialect);
        std::fs::create_dir_all(&to_dir).expect("a dialect folder");
        for f in std::fs::read_dir(root().join("dialects").join(dialect)).expect("the dialect") {
            let f = f.expect("a file").path();
            std::fs::copy(&f, to_dir.join(f.file_name().expect("a name"))).expect("copied");
        }
        let path = to_dir.join(file);
        let text = std::fs::read_to_string(&path).expect("the SQL");
        assert!(text.contains(from), "{dialect}/{file} has no `{from}`");
        std::fs::write(&path, text.replace(from, to)).expect("edited");
        std::fs::write(to_dir.join("equivalent-mutants.yaml"), declarations).expect("declarations");
        self.0.join("dialects").display().to_string()
    }

    /// Two lease scenarios (every scenario reads the leases back).
    fn scenarios(&self) -> String {
        let dir = self.0.join("scenarios");
        std::fs::create_dir_all(&dir).expect("a scenarios folder");
        for name in ["busy-defers-12-5s.yaml", "heartbeat-after-takeover.yaml"] {
            std::fs::copy(root().join("scenarios/leases").join(name), dir.join(name)).expect("copied");
        }
        dir.display().to_string()
    }
}

/// The targets to run (target, dialect, `read_leases`'s ORDER BY there):
/// sqlite, and postgres and mariadb when their URLs are set.
fn targets() -> Vec<(&'static str, &'static str, &'static str)> {
    let mut t = vec![("sqlite", "sqlite", "ORDER BY name")];
    if std::env::var("REAPCHECK_POSTGRES_URL").is_ok() {
        t.push(("postgres", "postgres", "ORDER BY name COLLATE \"C\""));
    }
    if std::env::var("REAPCHECK_MARIADB_URL").is_ok() {
        t.push(("mariadb", "mysql", "ORDER BY name"));
    }
    t
}

/// `read_leases` ordered by position (`ORDER BY 1`): its generated mutant
/// `ORDER BY 0` is refused by every server at compile time (SQLite: "1st
/// ORDER BY term out of range", PostgreSQL 42P10, MariaDB 1054).
const LEASES: &str = "SELECT name, owner, expires_at FROM job_leases ";

#[test]
fn a_mutant_the_server_cannot_compile_is_not_applicable_and_left_out_of_the_score() {
    for (target, dialect, order) in targets() {
        let scratch = Scratch::new("mutate-versions", &format!("compile-{target}"));
        let from = format!("{LEASES}{order}");
        let dialects = scratch.dialect(dialect, "readback.sql", &from, &format!("{LEASES}ORDER BY 1"), "");
        let scenarios = scratch.scenarios();
        let o = reapcheck(&["mutate", "--db", target, "--dialects", &dialects, "--scenarios", &scenarios]);
        let out = stdout(&o);
        let id = "read_leases: replace constant 1 with 0 at 1:57";
        let line = out.lines().find(|l| l.contains(id)).unwrap_or_else(|| panic!("{target}: no `{id}`: {out}"));
        assert!(line.starts_with(&format!("  not applicable on {target} ")), "{target}: {line}");
        assert!(line.contains("`read_leases` does not compile there: "), "{target}: {line}");
        // Its sibling compiles (ORDER BY 2 orders by owner): not listed so.
        assert!(
            !out.lines().any(|l| l.starts_with("  not applicable on") && l.contains("with 2 at 1:57")),
            "{target}: {out}"
        );
        // Neither killed nor surviving: out of the denominator, and in its column.
        let header = out.lines().find(|l| l.starts_with(&format!("{target} ["))).expect("a header");
        let counts: Vec<usize> =
            header.split("]: ").nth(1).expect("counts").split_whitespace().filter_map(|w| w.parse().ok()).collect();
        let counted = counts[0] + counts[1] - 1;
        let summary = out.lines().find(|l| l.starts_with(&format!("{target}: mutation score "))).expect("a summary");
        assert!(summary.contains(&format!("/{counted} killed, ")), "{target}: {summary}");
        assert!(summary.contains(", 1 not applicable on "), "{target}: {summary}");
        let row: Vec<&str> =
            out.lines().find(|l| l.starts_with("  constant ")).expect("a row").split_whitespace().collect();
        assert_eq!(row[4], "1", "{target}: the not applicable column: {out}");
    }
}

/// The corpus's scenarios and the model's runs, for [`first_killer`].
async fn corpus(filter: &str) -> (Vec<reapcheck::scenario::LoadedScenario>, Vec<reapcheck::runner::ModelRun>) {
    let scenarios = reapcheck::scenario::load_dir(&root().join("scenarios"), &[filter.to_owned()]).expect("loads");
    assert!(!scenarios.is_empty(), "{filter}");
    let mut models = Vec::new();
    for s in &scenarios {
        models.push(reapcheck::runner::check_model(s).await);
    }
    (scenarios, models)
}

/// The verdict on `dialect` with `claim`'s SQL edited from `from` to `to`.
async fn claim_mutant(server: &reapcheck::backend::Server, dialect: &Dialect, from: &str, to: &str) -> Found {
    let (scenarios, models) = corpus("claim/").await;
    let sql = dialect.find("claim", Schema::Standard).expect("a claim").sql.clone();
    assert!(sql.contains(from), "{}: {sql}", dialect.name);
    let mutant = dialect.with_sql("claim", sql.replace(from, to));
    let candidates: Vec<usize> = (0..scenarios.len()).collect();
    let order = KillOrder::new(scenarios.len());
    let changed = ["claim".to_owned()];
    first_killer(server, &mutant, &changed, &[candidates], &scenarios, &models, &order).await.found
}

#[tokio::test]
async fn on_sqlite_an_unknown_function_is_not_applicable_and_a_constraint_failure_kills() {
    let server = reapcheck::backend::sqlite().await.expect("sqlite");
    let dialect = Dialect::load(&Source::Embedded, "sqlite").expect("loads");
    let from = "attempts = attempts + 1";
    let found = claim_mutant(&server, &dialect, from, "attempts = no_such_function(attempts)").await;
    assert!(matches!(&found, Found::NotApplicable { statement, .. } if statement == "claim"), "{found:?}");
    // NOT NULL: refused at run time only, on a row the claim matches.
    let found = claim_mutant(&server, &dialect, from, "attempts = NULL").await;
    assert!(matches!(found, Found::Killed { .. }), "{found:?}");
}

#[tokio::test]
async fn on_postgres_an_unknown_function_is_not_applicable_and_a_data_error_kills() {
    let Ok(url) = std::env::var("REAPCHECK_POSTGRES_URL") else { return };
    let server = reapcheck::backend::postgres(&url).await.expect("postgres");
    let dialect = Dialect::load(&Source::Embedded, "postgres").expect("loads");
    let from = "attempts = attempts + 1";
    let found = claim_mutant(&server, &dialect, from, "attempts = no_such_function(attempts)").await;
    assert!(matches!(found, Found::NotApplicable { .. }), "{found:?}");
    // 22P02, invalid input syntax for type bigint: a data exception.
    let found = claim_mutant(&server, &dialect, from, "attempts = CAST(:id AS bigint)").await;
    assert!(matches!(found, Found::Killed { .. }), "{found:?}");
    server.close().await;
}

#[tokio::test]
async fn on_mariadb_an_unknown_function_is_not_applicable_and_a_constraint_failure_kills() {
    let Ok(url) = std::env::var("REAPCHECK_MARIADB_URL") else { return };
    let server = reapcheck::backend::mysql(&url).await.expect("mariadb");
    let dialect = Dialect::load(&Source::Embedded, "mysql").expect("loads");
    let from = "attempts = attempts + 1";
    let found = claim_mutant(&server, &dialect, from, "attempts = no_such_function(attempts)").await;
    assert!(matches!(found, Found::NotApplicable { .. }), "{found:?}");
    let found = claim_mutant(&server, &dialect, from, "attempts = NULL").await;
    assert!(matches!(found, Found::Killed { .. }), "{found:?}");
    server.close().await;
}

/// The hash `--list` prints for `id` on `dialects`.
fn hash_of(dialects: &str, id: &str) -> String {
    let o = reapcheck(&["mutate", "--db", "sqlite", "--dialects", dialects, "--list"]);
    let out = stdout(&o);
    let line = out
        .lines()
        .find(|l| l.ends_with(&format!("\t{id}")) || l.contains(&format!("\t{id} (")))
        .unwrap_or_else(|| panic!("no {id}: {out}"));
    line.split('\t').nth(1).expect("a hash").to_owned()
}

#[test]
fn declarations_hold_on_their_servers_and_reasoned_ones_are_listed_and_fail_when_killed() {
    let scratch = Scratch::new("mutate-versions", "servers");
    let dialects = scratch.dialect("sqlite", "readback.sql", "ORDER BY", "ORDER BY", "");
    let scenarios = scratch.scenarios();
    let survivor = "read_jobs: drop ORDER BY";
    let killed = "claim: drop SET assignment `claim_token = :token`";
    let declare = |id: &str, extra: &str| {
        format!("- mutant: \"{id}\"\n  statement: \"{}\"\n  reason: r\n{extra}", hash_of(&dialects, id))
    };
    let write = |text: String| std::fs::write(scratch.0.join("dialects/sqlite/equivalent-mutants.yaml"), text).unwrap();
    let run = || stdout(&reapcheck(&["mutate", "--db", "sqlite", "--dialects", &dialects, "--scenarios", &scenarios]));

    // Outside its servers a declaration is not used: the survivor survives,
    // the killed one is killed (not stale).
    write(declare(survivor, "  servers: \"< 3\"\n") + &declare(killed, "  servers: \"sqlite < 3.0\"\n"));
    let out = run();
    assert!(out.contains(&format!("  SURVIVED {survivor} [")), "{out}");
    assert!(!out.contains("KILLED BUT DECLARED EQUIVALENT"), "{out}");
    assert!(
        out.contains(&format!("  declared equivalent on other servers only, so counted as any mutant on sqlite 3.")),
        "{out}"
    );

    // On its servers, and reasoned: equivalent, listed; the killed one fails, saying it was only reasoned.
    write(
        declare(survivor, "  servers: \">= 3\"\n  evidence: reasoned\n") + &declare(killed, "  evidence: reasoned\n"),
    );
    let out = run();
    assert!(!out.contains(&format!("  SURVIVED {survivor} [")), "{out}");
    assert!(
        out.contains("  2 declared equivalent by reasoning only (`evidence: reasoned`), to confirm on sqlite 3."),
        "{out}"
    );
    assert!(out.lines().any(|l| l.starts_with(&format!("    {survivor} (")) && l.ends_with(": survived")), "{out}");
    assert!(out.lines().any(|l| l.starts_with(&format!("    {killed} (")) && l.contains(": KILLED by ")), "{out}");
    let line = out.lines().find(|l| l.starts_with(&format!("  KILLED BUT DECLARED EQUIVALENT {killed}"))).expect(&out);
    assert!(
        line.contains("it was only reasoned (`evidence: reasoned`), never seen surviving on a real server"),
        "{line}"
    );

    // --list marks it declared, in the one form tools read, wherever it holds.
    let o = reapcheck(&["mutate", "--db", "sqlite", "--dialects", &dialects, "--list"]);
    assert!(stdout(&o).contains(&format!("\t{survivor} (declared equivalent)\n")), "{}", stdout(&o));
}

#[test]
fn every_shipped_declaration_resolves_in_the_listing() {
    for (target, dialect) in
        [("sqlite", "sqlite"), ("postgres", "postgres"), ("mariadb", "mysql"), ("mysql", "mysql"), ("mssql", "mssql")]
    {
        let o = reapcheck(&["mutate", "--db", target, "--list", "--dialects", "builtin"]);
        let (out, err) = (stdout(&o), stderr(&o));
        assert!(o.status.success() && err.is_empty(), "{target}: {err}");
        let declared = out.lines().filter(|l| l.contains(" (declared equivalent")).count();
        let text =
            std::fs::read_to_string(root().join("dialects").join(dialect).join("equivalent-mutants.yaml")).unwrap();
        assert_eq!(
            declared,
            text.matches("\n- mutant: ").count() + usize::from(text.starts_with("- mutant: ")),
            "{target}"
        );
    }
    // The mssql declarations are all reasoned, and GREATEST is declared for 2022 and later only.
    let text = std::fs::read_to_string(root().join("dialects/mssql/equivalent-mutants.yaml")).unwrap();
    assert_eq!(text.matches("\n  evidence: reasoned\n").count(), text.matches("\n- mutant: ").count(), "{text}");
    let greatest = text.split("\n- mutant: ").find(|d| d.contains("with `GREATEST(")).expect("declared");
    assert!(greatest.contains("\n  servers: \">= 16\"\n"), "{greatest}");
}
