//! Ports: dialects written the way a queue's own SQL is, run against the
//! whole scenario corpus and compared with the reference model.
//!
//! * `ports/naive-int/postgres`: `INT` counters, `timestamp` (without time
//!   zone) instants, no casts, extra columns from `reap_scan`, a plpgsql
//!   trigger function in `$body$` quotes; its `dialect.toml` declares
//!   instants bound as naive UTC (`instants = naive_utc`). Needs
//!   `REAPCHECK_POSTGRES_URL`.
//! * The embedded SQLite and MySQL dialects with a trigger whose
//!   `BEGIN ... END` body holds `;` added to their schemas, and two extra
//!   columns after `reap_scan`'s six. SQLite needs no server; MariaDB needs
//!   `REAPCHECK_MARIADB_URL`.
//!
//! A test needing a server is ignored, with its reason, unless the URL was
//! set when the tests were built (see build.rs).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use reapcheck::backend::{self, InstantEncoding, Server};
use reapcheck::dialect::{Dialect, Source};
use reapcheck::driver;
use reapcheck::model::Model;
use reapcheck::scenario::{LoadedScenario, Schema, load_dir};
use reapcheck::sql::{SqlEngine, namespace_script};
use reapcheck::target::Target;

fn scenarios() -> Vec<LoadedScenario> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    load_dir(&root, &[]).unwrap_or_else(|errors| panic!("the corpus loads: {errors:?}"))
}

fn ports_root(port: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ports").join(port)
}

fn load(source: &Source, name: &str) -> Dialect {
    Dialect::load(source, name).unwrap_or_else(|errors| panic!("dialect {name}: {errors:?}"))
}

fn namespace() -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    format!("rc_port_{}_{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}

/// Plays every scenario on the model and on `server` through `dialect`,
/// instants bound as `encoding`; returns how many ran, or the differences.
async fn run_corpus(server: &Server, dialect: &Dialect, encoding: InstantEncoding) -> usize {
    let mut failures = Vec::new();
    let all = scenarios();
    for s in &all {
        let expected =
            driver::run(&s.scenario, &mut Model::new(s.scenario.schema), None).await.expect("the model runs");
        let mut conn = server.open().await.expect("a connection opens");
        conn.set_instant_encoding(encoding).await.expect("the encoding is set");
        let ns = namespace();
        namespace_script(&mut conn, dialect, "create_namespace", &ns).await.expect("the namespace is created");
        namespace_script(&mut conn, dialect, "enter_namespace", &ns).await.expect("the namespace is entered");
        let actual = driver::run(&s.scenario, &mut SqlEngine::new(dialect, s.scenario.schema, &mut conn), None).await;
        namespace_script(&mut conn, dialect, "drop_namespace", &ns).await.expect("the namespace is dropped");
        conn.close().await;
        match actual {
            Ok(actual) if actual == expected => {}
            Ok(actual) => {
                failures.push(format!("{}:\nmodel:\n{}\ntarget:\n{}", s.name, expected.to_yaml(), actual.to_yaml()))
            }
            Err(e) => failures.push(format!("{}: {e}", s.name)),
        }
    }
    assert!(failures.is_empty(), "{} of {} scenarios differ:\n{}", failures.len(), all.len(), failures.join("\n"));
    all.len()
}

/// `dialect` with `trigger` appended to both schemas and two columns more
/// than the contract's six in both scans (`queue` and `status`, after the
/// six).
fn with_trigger_and_wide_scan(dialect: &Dialect, trigger: &str) -> Dialect {
    let mut out = dialect.clone();
    for (name, schema) in [("schema", Schema::Standard), ("legacy_schema", Schema::Legacy)] {
        let sql =
            format!("{};\n{trigger};\n", dialect.statement("schema", schema).sql.trim_end().trim_end_matches(';'));
        out = out.with_sql(name, sql);
    }
    for (name, schema) in [("reap_scan", Schema::Standard), ("legacy_reap_scan", Schema::Legacy)] {
        let sql = dialect.statement("reap_scan", schema).sql.replacen(" AS has_beat", " AS has_beat, queue, status", 1);
        assert!(sql.contains("has_beat, queue, status"), "{name} widened");
        out = out.with_sql(name, sql);
    }
    out
}

/// A SQLite trigger with `;` inside its body and a CASE ... END in it.
const SQLITE_TRIGGER: &str = "CREATE TRIGGER jobs_guard BEFORE UPDATE OF attempts ON jobs
FOR EACH ROW WHEN NEW.attempts < 0
BEGIN
    SELECT RAISE(ABORT, 'attempts below zero; refused');
    SELECT CASE WHEN NEW.attempts < -1 THEN RAISE(ABORT, 'far below; refused') END;
END";

/// A MariaDB/MySQL trigger: BEGIN ... END with IF ... END IF, no DELIMITER.
const MYSQL_TRIGGER: &str = "CREATE TRIGGER jobs_guard BEFORE UPDATE ON jobs
FOR EACH ROW
BEGIN
    IF NEW.attempts < 0 THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'attempts below zero; refused';
    END IF;
END";

#[tokio::test]
async fn sqlite_with_a_trigger_and_a_wide_scan_passes_the_corpus() {
    let server = backend::sqlite().await.expect("sqlite opens");
    let dialect = with_trigger_and_wide_scan(&load(&Source::Embedded, "sqlite"), SQLITE_TRIGGER);
    let ran = run_corpus(&server, &dialect, InstantEncoding::Native).await;
    assert!(ran > 0, "the corpus is empty");
}

#[tokio::test]
async fn the_sqlite_trigger_is_created_whole_and_fires() {
    use reapcheck::engine::{Call, Engine, JobRow};
    use reapcheck::outcome::Status;
    use reapcheck::time::Instant;
    let server = backend::sqlite().await.expect("sqlite opens");
    let dialect = with_trigger_and_wide_scan(&load(&Source::Embedded, "sqlite"), SQLITE_TRIGGER);
    let mut conn = server.open().await.expect("a connection");
    let mut engine = SqlEngine::new(&dialect, Schema::Standard, &mut conn);
    engine.call(Call::CreateSchema).await.expect("the schema, trigger included, is created");
    let t = Instant::from_unix_micros(1_700_000_000_000_000);
    let job = JobRow {
        id: "a".into(),
        class: "C".into(),
        queue: "default".into(),
        status: Status::Pending,
        attempts: -2,
        max_retries: 3,
        claim_timeout: None,
        claim_token: None,
        heartbeat_at: None,
        run_at: t,
        updated_at: t,
        failed_at: None,
        completed_at: None,
        last_error: None,
    };
    engine.call(Call::InsertJob(job)).await.expect("inserted");
    // A claim counts the attempt: -2 becomes -1, which the trigger refuses.
    let refused = engine
        .call(Call::Claim { id: "a".into(), token: "a/1".into(), claim_timeout: 300, now: t, retake: None })
        .await;
    let Err(e) = refused else { panic!("the trigger did not fire: {refused:?}") };
    assert!(e.to_string().contains("attempts below zero; refused"), "{e}");
}

#[tokio::test]
async fn the_naive_int_port_passes_the_corpus_on_postgres() {
    if reapcheck::reach::test_url(Target::Postgres).is_none() {
        return;
    }
    // Through the binary, as a user runs it: its dialect.toml declares
    // `instants = naive_utc`, and every statement is covered twice.
    let dialects = ports_root("naive-int").display().to_string();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_reapcheck"))
        .args(["run", "--db", "postgres", "--dialects", &dialects, "--coverage-min", "2"])
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .env_remove("REAPCHECK_REQUIRE")
        .output()
        .expect("the binary runs");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.contains("profile of postgres on postgres: instants = naive_utc"), "{out}");
    let n = scenarios().len();
    let closing = format!("model: {n} passed, 0 failed; postgres: {n} passed, 0 failed, 0 skipped");
    assert_eq!(out.lines().last(), Some(closing.as_str()), "{out}");
}

#[tokio::test]
async fn the_naive_int_port_needs_naive_binding_under_a_session_time_zone() {
    // The same port with instants bound as timestamptz: the server converts
    // through the session TimeZone, and a scenario that sets one diverges.
    let Some(url) = reapcheck::reach::test_url(Target::Postgres) else { return };
    let server = backend::postgres(&url).await.expect("postgres is reachable");
    let dialect = load(&Source::Folder(ports_root("naive-int")), "postgres");
    let zoned = scenarios().into_iter().filter(|s| s.scenario.session_time_zone.is_some()).collect::<Vec<_>>();
    assert!(!zoned.is_empty(), "the corpus has session_time_zone scenarios");
    let mut diverged = 0;
    for s in &zoned {
        let expected =
            driver::run(&s.scenario, &mut Model::new(s.scenario.schema), None).await.expect("the model runs");
        let mut conn = server.open().await.expect("a connection opens");
        let ns = namespace();
        namespace_script(&mut conn, &dialect, "create_namespace", &ns).await.expect("created");
        namespace_script(&mut conn, &dialect, "enter_namespace", &ns).await.expect("entered");
        let actual = driver::run(&s.scenario, &mut SqlEngine::new(&dialect, s.scenario.schema, &mut conn), None).await;
        namespace_script(&mut conn, &dialect, "drop_namespace", &ns).await.expect("dropped");
        conn.close().await;
        if actual.as_ref().ok() != Some(&expected) {
            diverged += 1;
        }
    }
    assert!(diverged > 0, "none of {} zoned scenarios diverged with timestamptz binding", zoned.len());
    server.close().await;
}

#[tokio::test]
async fn mariadb_with_a_trigger_and_a_wide_scan_passes_the_corpus() {
    let Some(url) = reapcheck::reach::test_url(Target::Mariadb) else { return };
    let server = backend::mysql(&url).await.expect("mariadb is reachable");
    let dialect = with_trigger_and_wide_scan(&load(&Source::Embedded, "mysql"), MYSQL_TRIGGER);
    let ran = run_corpus(&server, &dialect, InstantEncoding::Native).await;
    assert!(ran > 0, "the corpus is empty");
}
