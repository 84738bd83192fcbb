//! Bug classes that once slipped through the corpus, each applied as a
//! fault to a copy of `dialects/`: `reapcheck run --dialects COPY` must fail,
//! and the scenarios written for the class must be among the failures.
//!
//! SQLite always runs; PostgreSQL and MariaDB run when
//! `REAPCHECK_POSTGRES_URL` / `REAPCHECK_MARIADB_URL` are set (`.ci/run`
//! sets both), and only the scenario folders a fault is about are run there,
//! to keep the test cheap. A fault whose edit no longer matches the dialect
//! text fails the test, so no fault silently stops being applied.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use regex::Regex;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().expect("the workspace exists")
}

/// One edit: in `dialect/file`, inside the statement `statement` (the text
/// from its `-- name:` line to the next one), replace every match of
/// `pattern` with `replacement` (regex syntax, `$1` for groups).
struct Edit {
    dialect: &'static str,
    file: &'static str,
    statement: &'static str,
    pattern: &'static str,
    replacement: &'static str,
}

/// A copy of `dialects/` in a scratch folder, removed when dropped.
struct Copy(PathBuf);

impl Copy {
    fn new(name: &str, edits: &[Edit]) -> Copy {
        let dir = std::env::temp_dir().join(format!("reapcheck-fault-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for dialect in std::fs::read_dir(root().join("dialects")).expect("dialects/ is readable") {
            let dialect = dialect.expect("a dialect folder").path();
            let to = dir.join(dialect.file_name().expect("a folder name"));
            std::fs::create_dir_all(&to).expect("a scratch folder");
            for file in std::fs::read_dir(&dialect).expect("a dialect folder is readable") {
                let file = file.expect("a dialect file").path();
                std::fs::copy(&file, to.join(file.file_name().expect("a file name"))).expect("the copy");
            }
        }
        for edit in edits {
            let path = dir.join(edit.dialect).join(edit.file);
            let text = std::fs::read_to_string(&path).expect("the dialect file");
            std::fs::write(&path, apply(&text, edit)).expect("the edited copy");
        }
        Copy(dir)
    }

    fn path(&self) -> &str {
        self.0.to_str().expect("a UTF-8 temp path")
    }
}

impl Drop for Copy {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `text` with `edit` applied inside its statement; panics when the
/// statement is missing or the pattern matches nothing in it.
fn apply(text: &str, edit: &Edit) -> String {
    let header = format!("-- name: {}\n", edit.statement);
    let start = text
        .match_indices(&header)
        .map(|(i, _)| i)
        .find(|&i| i == 0 || text.as_bytes()[i - 1] == b'\n')
        .unwrap_or_else(|| panic!("{}/{} has no statement {}", edit.dialect, edit.file, edit.statement));
    let body_start = start + header.len();
    let end = text[body_start..].find("\n-- name: ").map_or(text.len(), |i| body_start + i + 1);
    let pattern = Regex::new(edit.pattern).expect("a valid pattern");
    let body = &text[body_start..end];
    assert!(
        pattern.is_match(body),
        "{}/{} statement {}: `{}` matches nothing; update this fault",
        edit.dialect,
        edit.file,
        edit.statement,
        edit.pattern
    );
    format!("{}{}{}", &text[..body_start], pattern.replace_all(body, edit.replacement), &text[end..])
}

/// Runs the binary with only `env` configuring targets.
fn reapcheck(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_reapcheck"));
    cmd.args(args).current_dir(root()).env_remove("REAPCHECK_REQUIRE");
    for t in reapcheck::target::Target::ALL {
        cmd.env_remove(t.url_variable());
    }
    cmd.envs(env.iter().copied()).output().expect("the binary runs")
}

/// The targets this test can reach: sqlite always, the others when set.
fn targets() -> Vec<(&'static str, Option<(&'static str, String)>)> {
    let mut found = vec![("sqlite", None)];
    for (target, var) in [("postgres", "REAPCHECK_POSTGRES_URL"), ("mariadb", "REAPCHECK_MARIADB_URL")] {
        if let Ok(url) = std::env::var(var) {
            found.push((target, Some((var, url))));
        }
    }
    found
}

/// Runs `copy` on `target` (all scenarios on sqlite, `folders` elsewhere)
/// and asserts the run fails with each of `caught_by` among its failures.
fn assert_caught(copy: &Copy, target: &str, url: Option<&(&str, String)>, folders: &[&str], caught_by: &[&str]) {
    let mut args = vec!["run", "--db", target, "--dialects", copy.path()];
    if target != "sqlite" {
        args.extend_from_slice(folders);
    }
    let env: Vec<(&str, &str)> = url.map(|(var, url)| (*var, url.as_str())).into_iter().collect();
    let o = reapcheck(&args, &env);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(1),
        "the fault survived on {target}:\n{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    for name in caught_by {
        let line = format!("FAIL     {name}  on {target} [");
        assert!(out.contains(&line), "{name} does not catch the fault on {target}:\n{out}");
    }
}

/// The edit in each of the three runnable dialects.
fn everywhere(file: &'static str, statement: &'static str, pattern: &'static str, with: &'static str) -> Vec<Edit> {
    ["sqlite", "postgres", "mysql"]
        .into_iter()
        .map(|dialect| Edit { dialect, file, statement, pattern, replacement: with })
        .collect()
}

#[test]
fn a_reaper_scan_capped_at_a_batch_misses_the_dead_job_behind_it() {
    // Up to 16 rows: both batch scenarios; up to 1000: the big one.
    for (cap, caught_by) in [
        ("16", &["batch/dead-behind-a-full-batch", "batch/dead-behind-1000-live"][..]),
        ("1000", &["batch/dead-behind-1000-live"][..]),
    ] {
        let replacement: &'static str = if cap == "16" { "$1 LIMIT 16" } else { "$1 LIMIT 1000" };
        let copy = Copy::new(
            &format!("limit-{cap}"),
            &everywhere("reaper.sql", "reap_scan", r"(ORDER BY id[^\n]*)", replacement),
        );
        for (target, url) in targets() {
            assert_caught(&copy, target, url.as_ref(), &["batch/"], caught_by);
        }
    }
}

#[test]
fn a_reap_guard_without_its_status_check_is_caught_for_each_outcome() {
    for (statement, caught_by) in [
        ("reap_interrupt", "races/two-reapers-beat-interrupt"),
        ("reap_fail", "races/two-reapers-beat-retries-exhausted"),
        ("reap_retry", "races/two-reapers-beat-retry"),
    ] {
        let copy = Copy::new(statement, &everywhere("reaper.sql", statement, r"status = 'processing' AND ", ""));
        for (target, url) in targets() {
            assert_caught(&copy, target, url.as_ref(), &["races/"], &[caught_by]);
        }
    }
}

#[test]
fn greatest_instead_of_coalesce_for_last_seen_is_caught() {
    // PostgreSQL's GREATEST skips NULLs, MySQL's returns NULL: written with
    // the COALESCE inside, both mean "the later of the beat and the claim",
    // as SQLite's two-argument max does.
    let mut edits = Vec::new();
    for statement in ["reap_scan", "reap_retry", "reap_interrupt", "reap_fail"] {
        for (dialect, function) in [("sqlite", "max"), ("postgres", "GREATEST"), ("mysql", "GREATEST")] {
            // MySQL's scan compares last_seen, the stored generated column
            // `schema` defines with that COALESCE.
            let (file, statement) = if dialect == "mysql" && statement == "reap_scan" {
                ("schema.sql", "schema")
            } else {
                ("reaper.sql", statement)
            };
            edits.push(Edit {
                dialect,
                file,
                statement,
                pattern: r"COALESCE\(heartbeat_at, updated_at\)",
                replacement: match function {
                    "max" => "max(COALESCE(heartbeat_at, updated_at), updated_at)",
                    _ => "GREATEST(COALESCE(heartbeat_at, updated_at), updated_at)",
                },
            });
        }
    }
    let copy = Copy::new("greatest", &edits);
    for (target, url) in targets() {
        assert_caught(
            &copy,
            target,
            url.as_ref(),
            &["grace/"],
            &["grace/beat-stamped-before-claim", "grace/beat-stamped-before-claim-setup"],
        );
    }
}

#[test]
fn a_mariadb_timestamp_column_is_caught_by_the_london_gap() {
    let Some((_, Some(url))) = targets().into_iter().find(|(t, _)| *t == "mariadb") else {
        eprintln!("skipped: REAPCHECK_MARIADB_URL is not set");
        return;
    };
    // TIMESTAMP converts from the session time_zone; read back through a
    // DATETIME cast, as a dialect using it would have to.
    let mut edits = Vec::new();
    for statement in ["schema", "legacy_schema"] {
        edits.push(Edit {
            dialect: "mysql",
            file: "schema.sql",
            statement,
            pattern: r"DATETIME\(6\)(\s+)NULL",
            replacement: "TIMESTAMP(6)${1}NULL DEFAULT NULL",
        });
        edits.push(Edit {
            dialect: "mysql",
            file: "schema.sql",
            statement,
            pattern: r"DATETIME\(6\)(\s+)NOT NULL",
            replacement: "TIMESTAMP(6)${1}NOT NULL DEFAULT 0",
        });
    }
    for statement in ["read_jobs", "legacy_read_jobs", "read_leases"] {
        edits.push(Edit {
            dialect: "mysql",
            file: "readback.sql",
            statement,
            pattern: r"\b(run_at|updated_at|failed_at|completed_at|expires_at)\b(,| FROM)",
            replacement: "CAST($1 AS DATETIME(6)) AS $1$2",
        });
    }
    edits.push(Edit {
        dialect: "mysql",
        file: "readback.sql",
        statement: "read_jobs",
        pattern: r"\bheartbeat_at,",
        replacement: "CAST(heartbeat_at AS DATETIME(6)) AS heartbeat_at,",
    });
    let copy = Copy::new("timestamp", &edits);
    assert_caught(
        &copy,
        "mariadb",
        Some(&("REAPCHECK_MARIADB_URL", url.1)),
        &["time/"],
        &["time/london-gap-heartbeat", "time/london-gap-claim-and-run-at", "time/london-gap-setup-rows"],
    );
}

#[test]
fn a_postgres_timestamp_without_time_zone_column_is_caught_by_the_folds() {
    let Some((_, Some(url))) = targets().into_iter().find(|(t, _)| *t == "postgres") else {
        eprintln!("skipped: REAPCHECK_POSTGRES_URL is not set");
        return;
    };
    // `timestamp` stores the session's local wall-clock time; read back
    // with the natural `::timestamptz` cast.
    let mut edits = Vec::new();
    for statement in ["schema", "legacy_schema"] {
        edits.push(Edit {
            dialect: "postgres",
            file: "schema.sql",
            statement,
            pattern: r"(_at\s+)timestamptz",
            replacement: "${1}timestamp",
        });
    }
    for statement in ["read_jobs", "legacy_read_jobs", "read_leases"] {
        edits.push(Edit {
            dialect: "postgres",
            file: "readback.sql",
            statement,
            pattern: r"\b(run_at|updated_at|failed_at|completed_at|expires_at)\b(,| FROM)",
            replacement: "$1::timestamptz AS $1$2",
        });
    }
    edits.push(Edit {
        dialect: "postgres",
        file: "readback.sql",
        statement: "read_jobs",
        pattern: r"\bheartbeat_at,",
        replacement: "heartbeat_at::timestamptz AS heartbeat_at,",
    });
    let copy = Copy::new("pg-timestamp", &edits);
    assert_caught(
        &copy,
        "postgres",
        Some(&("REAPCHECK_POSTGRES_URL", url.1)),
        &["time/"],
        &["time/london-fold-heartbeat", "time/london-fold-setup-rows"],
    );
}

#[test]
fn legacy_interrupt_and_fail_statements_each_run_in_two_scenarios() {
    for (statement, caught_by) in [
        (
            "legacy_reap_interrupt",
            ["schema/legacy-not-idempotent-interrupted", "schema/legacy-interrupt-after-late-beat"],
        ),
        ("legacy_reap_fail", ["schema/legacy-retries-exhausted", "schema/legacy-fail-after-late-beat"]),
    ] {
        // Valid SQL that fails only when run (`THIS IS NOT SQL ((` fails the
        // same way today, but a stricter loader may refuse it before running).
        let broken = "UPDATE no_such_table_proves_the_statement_ran SET id = id\n";
        let copy = Copy::new(statement, &everywhere("reaper.sql", statement, r"(?s)UPDATE.*", broken));
        for (target, url) in targets() {
            assert_caught(&copy, target, url.as_ref(), &["schema/"], &caught_by);
        }
    }
}

/// SQL that turns an instant into host-local time: the scan floor computed
/// through SQLite's `localtime`, which follows the reapcheck process's `TZ`.
fn localtime_floor() -> Copy {
    Copy::new(
        "localtime",
        &[Edit {
            dialect: "sqlite",
            file: "reaper.sql",
            statement: "reap_scan",
            pattern: r":now - 30000000",
            replacement: "unixepoch(:now / 1000000, 'unixepoch', 'localtime') * 1000000 + :now % 1000000 - 30000000",
        }],
    )
}

#[test]
fn sql_that_follows_the_host_time_zone_fails_away_from_utc() {
    let copy = localtime_floor();
    let under_utc = reapcheck(&["run", "--db", "sqlite", "--dialects", copy.path()], &[("TZ", "UTC")]);
    assert!(under_utc.status.success(), "under TZ=UTC the host-local fault hides: {:?}", under_utc);
    for zone in ["America/Chicago", "Asia/Kathmandu"] {
        let o = reapcheck(&["run", "--db", "sqlite", "--dialects", copy.path()], &[("TZ", zone)]);
        let out = String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(1), "under TZ={zone} the fault survived:\n{out}");
        assert!(out.contains("FAIL     boundaries/scan-floor  on sqlite ["), "under TZ={zone}:\n{out}");
    }
}

#[test]
fn outcomes_do_not_depend_on_the_harness_time_zone() {
    for zone in ["America/Chicago", "Asia/Kathmandu"] {
        let o = reapcheck(&["run", "--db", "sqlite"], &[("TZ", zone)]);
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "under TZ={zone}:\n{out}");
        assert!(out.lines().last().is_some_and(|l| l.ends_with(" 0 failed, 0 skipped")), "under TZ={zone}:\n{out}");
    }
}

#[test]
fn each_fault_edit_stays_inside_its_statement() {
    let text = "-- name: a\nSELECT x FROM t\n\n-- name: b\nSELECT x FROM t\n";
    let edit = Edit { dialect: "d", file: "f", statement: "b", pattern: "x", replacement: "y" };
    assert_eq!(apply(text, &edit), "-- name: a\nSELECT x FROM t\n\n-- name: b\nSELECT y FROM t\n");
    let edit = Edit { dialect: "d", file: "f", statement: "a", pattern: r"(?s)SELECT.*", replacement: "Z\n" };
    assert_eq!(apply(text, &edit), "-- name: a\nZ\n-- name: b\nSELECT x FROM t\n");
}

#[test]
fn a_queue_filter_that_matches_parts_of_names_is_caught() {
    // The substring test a hand-written filter often is, on SQLite.
    let edits = [Edit {
        dialect: "sqlite",
        file: "reaper.sql",
        statement: "reap_scan",
        pattern: r"instr\(',' \|\| :queues \|\| ',', ',' \|\| queue \|\| ','\) > 0",
        replacement: "instr(:queues, queue) > 0",
    }];
    let copy = Copy::new("substring-queues", &edits);
    assert_caught(&copy, "sqlite", None, &["windows/"], &["windows/queue-name-inside-another"]);
}

#[test]
fn a_scan_floor_on_a_clock_truncated_to_the_second_is_caught() {
    // MariaDB's CAST(... AS DATETIME) drops the fraction before the 30 s
    // are subtracted; SQLite's integer division by a million does the same.
    let edits = [
        Edit {
            dialect: "mysql",
            file: "reaper.sql",
            statement: "reap_scan",
            pattern: r"CAST\(:now AS DATETIME\(6\)\) - INTERVAL 30 SECOND",
            replacement: "CAST(:now AS DATETIME) - INTERVAL 30 SECOND",
        },
        Edit {
            dialect: "sqlite",
            file: "reaper.sql",
            statement: "reap_scan",
            pattern: r":now - 30000000",
            replacement: "(:now / 1000000) * 1000000 - 30000000",
        },
    ];
    let copy = Copy::new("truncated-floor", &edits);
    for (target, url) in targets().into_iter().filter(|(t, _)| *t != "postgres") {
        assert_caught(&copy, target, url.as_ref(), &["boundaries/"], &["boundaries/fractional-clock-scan-floor"]);
    }
}

/// Runs the binary as [`reapcheck`] does, failing with `hung` (the child
/// killed) when it has not ended within 120 s: a guard against a hang,
/// not a bound on how long it may take.
fn reapcheck_within(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_reapcheck"));
    cmd.args(args).current_dir(root()).env_remove("REAPCHECK_REQUIRE");
    for t in reapcheck::target::Target::ALL {
        cmd.env_remove(t.url_variable());
    }
    let child = cmd
        .envs(env.iter().copied())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let pid = child.id();
    let (done, waited) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(child.wait_with_output());
    });
    match waited.recv_timeout(std::time::Duration::from_secs(120)) {
        Ok(output) => output.expect("the binary ran"),
        Err(_) => {
            // SAFETY: signals our own child.
            unsafe { libc::kill(libc::pid_t::try_from(pid).expect("a pid"), libc::SIGKILL) };
            panic!("hung: reapcheck {} did not end within 120 s", args.join(" "));
        }
    }
}

/// SQL that never ends in each dialect, as a condition that holds: a sleep
/// of 600 s on the servers, a recursive CTE with no stop on SQLite.
#[test]
fn a_statement_that_never_ends_fails_its_scenario_timed_out_at_its_file_line() {
    let edits: Vec<Edit> = ["sqlite", "postgres", "mysql"]
        .into_iter()
        .map(|dialect| Edit {
            dialect,
            file: "reaper.sql",
            statement: "reap_scan",
            pattern: r"WHERE status = 'processing'",
            replacement: match dialect {
                "sqlite" => "WHERE status = 'processing' AND (WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r) >= 0",
                "postgres" => "WHERE status = 'processing' AND (SELECT count(*) FROM pg_sleep(600)) >= 0",
                _ => "WHERE status = 'processing' AND SLEEP(600) = 0",
            },
        })
        .collect();
    let copy = Copy::new("blocking", &edits);
    for (target, url) in targets() {
        let args = ["run", "--db", target, "--dialects", copy.path(), "--statement-timeout", "1"];
        let args = [&args[..], &["--exact", "grace/floor-reclaims-past-it"]].concat();
        let env: Vec<(&str, &str)> = url.as_ref().map(|(var, url)| (*var, url.as_str())).into_iter().collect();
        let o = reapcheck_within(&args, &env);
        let out = String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(1), "{target}:\n{out}{}", String::from_utf8_lossy(&o.stderr));
        let dialect = if target == "mariadb" { "mysql" } else { target };
        let said = format!("{target} failed: reap_scan: timed out after 1 s at ");
        let line = out.lines().find(|l| l.contains(&said)).unwrap_or_else(|| panic!("{target}: no `{said}`:\n{out}"));
        assert!(line.contains(&format!("{dialect}/reaper.sql:")), "{target}: no file:line: {line}");
    }
}

#[tokio::test]
async fn a_mutant_that_recurses_forever_is_killed_by_the_time_limit() {
    use reapcheck::mutate::kill::{Found, KillOrder, first_killer};
    use reapcheck::scenario::Schema;
    // This test process's limit only: the other tests run the binary.
    reapcheck::deadline::set_seconds(1);
    let scenarios = reapcheck::scenario::load_dir(&root().join("scenarios"), &["grace/floor-reclaims".to_owned()])
        .expect("the scenarios load");
    assert!(!scenarios.is_empty());
    let mut models = Vec::new();
    for s in &scenarios {
        models.push(reapcheck::runner::check_model(s).await);
    }
    // MariaDB and MySQL bound a recursive CTE themselves
    // (`max_recursive_iterations`, `cte_max_recursion_depth`): there the
    // mutant ends, and `a_statement_that_never_ends...` covers the limit.
    let mut servers = vec![("sqlite", reapcheck::backend::sqlite().await.expect("sqlite"))];
    for (target, url) in targets().into_iter().filter(|(t, _)| *t == "postgres") {
        let (_, url) = url.expect("a url");
        servers.push((target, reapcheck::backend::postgres(&url).await.expect("the server answers")));
    }
    for (target, server) in servers {
        let dialect = reapcheck::dialect::Dialect::load(&reapcheck::dialect::Source::Embedded, target).expect("loads");
        let sql = dialect.find("reap_scan", Schema::Standard).expect("a reap_scan").sql.clone();
        // The recursive step no longer moves towards its stop: it never ends.
        let forever =
            "(WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n FROM r WHERE n > 0) SELECT count(*) FROM r) > 0";
        assert!(sql.contains("WHERE status = 'processing'"), "{target}: {sql}");
        let mutated = sql.replace("WHERE status = 'processing'", &format!("WHERE status = 'processing' AND {forever}"));
        let mutant = dialect.with_sql("reap_scan", mutated);
        let candidates: Vec<usize> = (0..scenarios.len()).collect();
        let order = KillOrder::new(scenarios.len());
        let changed = ["reap_scan".to_owned()];
        let found = tokio::time::timeout(
            std::time::Duration::from_secs(120),
            first_killer(&server, &mutant, &changed, &[candidates], &scenarios, &models, &order),
        )
        .await
        .unwrap_or_else(|_| panic!("hung: the mutant on {target} did not end within 120 s"))
        .found;
        match &found {
            Found::Killed { reason: Some(reason), .. } => {
                assert!(reason.contains("timed out after 1 s at "), "{target}: {reason}");
            }
            other => panic!("{target}: not killed by the time limit: {other:?}"),
        }
        server.close().await;
    }
}
