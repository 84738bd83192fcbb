//! The `reapcheck` binary as a user meets it: exact closing lines, exit
//! codes, error positions, and broken SQL being caught.

mod common;
use common::Scratch;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().expect("the workspace exists")
}

fn reapcheck(args: &[&str]) -> Output {
    reapcheck_with(args, &[])
}

/// Runs the binary with no target configured but `env`.
fn reapcheck_with(args: &[&str], env: &[(&str, &str)]) -> Output {
    reapcheck_in(&root(), args, env)
}

/// Runs the binary in `dir` with no target, setting or CI configured but `env`.
fn reapcheck_in(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_reapcheck"));
    cmd.args(args).current_dir(dir);
    for v in ["REAPCHECK_REQUIRE", "REAPCHECK_DB", "REAPCHECK_DIALECTS", "REAPCHECK_SCENARIOS", "CI"] {
        cmd.env_remove(v);
    }
    for t in reapcheck::target::Target::ALL {
        cmd.env_remove(t.url_variable());
    }
    cmd.envs(env.iter().copied()).output().expect("the binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn scenario_count() -> usize {
    reapcheck::scenario::discover(&root().join("scenarios")).expect("scenarios load").len()
}

/// A copy of the SQLite dialect with `from` replaced by `to` in `file`.
fn mutated_sqlite(scratch: &Scratch, file: &str, from: &str, to: &str) -> String {
    let dir = scratch.0.join("dialects/sqlite");
    std::fs::create_dir_all(&dir).unwrap();
    for entry in std::fs::read_dir(root().join("dialects/sqlite")).unwrap() {
        let path = entry.unwrap().path();
        let mut text = std::fs::read_to_string(&path).unwrap();
        if path.file_name().unwrap() == file {
            assert!(text.contains(from), "{file} no longer contains {from:?}");
            text = text.replace(from, to);
        }
        std::fs::write(dir.join(path.file_name().unwrap()), text).unwrap();
    }
    scratch.0.join("dialects").display().to_string()
}

#[test]
fn run_checks_every_scenario_on_the_model_and_sqlite() {
    let o = reapcheck(&["run"]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}{}", stderr(&o));
    let n = scenario_count();
    assert!(n >= 10, "only {n} scenarios");
    assert_eq!(
        out.lines().last(),
        Some(format!("model: {n} passed, 0 failed; sqlite: {n} passed, 0 failed, 0 skipped").as_str()),
        "{out}"
    );
    assert_eq!(out.lines().filter(|l| l.starts_with("ok ") && l.ends_with("on model")).count(), n, "{out}");
    assert_eq!(out.lines().filter(|l| l.starts_with("ok ") && l.contains("on sqlite [sqlite 3.")).count(), n, "{out}");
}

#[test]
fn swapped_coalesce_arguments_fail_named_scenarios() {
    let scratch = Scratch::new("cli", "coalesce");
    let dialects = mutated_sqlite(
        &scratch,
        "reaper.sql",
        "COALESCE(heartbeat_at, updated_at)",
        "COALESCE(updated_at, heartbeat_at)",
    );
    let o = reapcheck(&["run", "--dialects", &dialects]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("FAIL     grace/recent-beat  on sqlite"), "{out}");
    assert!(out.contains("sqlite disagrees with the model"), "{out}");
    assert!(
        out.contains(&format!("rerun: reapcheck run --db sqlite --dialects {dialects} --exact grace/recent-beat")),
        "{out}"
    );
}

#[test]
fn a_non_strict_staleness_guard_fails_named_scenarios() {
    let scratch = Scratch::new("cli", "lte");
    let dialects = mutated_sqlite(
        &scratch,
        "reaper.sql",
        "AND COALESCE(heartbeat_at, updated_at) < :cutoff",
        "AND COALESCE(heartbeat_at, updated_at) <= :cutoff",
    );
    let o = reapcheck(&["run", "--dialects", &dialects]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("FAIL     boundaries/exact-cutoff  on sqlite"), "{out}");
}

#[test]
fn an_unknown_key_exits_2_with_file_line_and_column() {
    let scratch = Scratch::new("cli", "unknown-key");
    std::fs::write(
        scratch.0.join("bad.yaml"),
        "description: x\nclasses:\n  C: { timeout: 30, colour: red }\njobs: []\nsteps: []\n",
    )
    .unwrap();
    let dir = scratch.0.display().to_string();
    let o = reapcheck(&["run", "--scenarios", &dir]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains(&format!("{dir}/bad.yaml:3:")), "{err}");
    assert!(err.contains("colour"), "{err}");
    assert!(stdout(&o).is_empty(), "nothing may run: {}", stdout(&o));
}

#[test]
fn every_invalid_file_is_reported_and_nothing_runs() {
    let scratch = Scratch::new("cli", "many-errors");
    let good = std::fs::read_to_string(root().join("scenarios/grace/recent-beat.yaml")).unwrap();
    std::fs::write(scratch.0.join("good.yaml"), good).unwrap();
    std::fs::write(scratch.0.join("a.yaml"), "description: x\nsteps:\n  - claim: nobody\n").unwrap();
    std::fs::write(scratch.0.join("b.yaml"), "description: x\nsteps:\n  - advance: 10\n").unwrap();
    let dir = scratch.0.display().to_string();
    let o = reapcheck(&["run", "--scenarios", &dir, "good"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains(&format!("{dir}/a.yaml:3:12: unknown job `nobody`")), "{err}");
    assert!(err.contains(&format!("{dir}/b.yaml:3:14: invalid duration `10`: a number has no unit")), "{err}");
    assert!(err.contains("3 |   - advance: 10"), "the offending line is shown: {err}");
    assert!(stdout(&o).is_empty());
}

#[test]
fn accept_writes_missing_snapshots_that_the_next_run_uses() {
    let scratch = Scratch::new("cli", "accept");
    let good = std::fs::read_to_string(root().join("scenarios/grace/never-beat.yaml")).unwrap();
    std::fs::write(scratch.0.join("never-beat.yaml"), good).unwrap();
    let dir = scratch.0.display().to_string();
    let first = stdout(&reapcheck(&["run", "--coverage-min", "0", "--scenarios", &dir]));
    assert!(first.contains("new      never-beat  on model"), "{first}");
    assert!(!scratch.0.join("snapshots/never-beat.snap").exists());
    let accepted = reapcheck(&["run", "--coverage-min", "0", "--scenarios", &dir, "--accept"]);
    assert!(accepted.status.success());
    let snap = std::fs::read_to_string(scratch.0.join("snapshots/never-beat.snap")).unwrap();
    assert!(snap.contains("\ninput_file: never-beat.yaml\n"), "never an absolute path: {snap}");
    let committed = std::fs::read_to_string(root().join("scenarios/grace/snapshots/never-beat.snap")).unwrap();
    assert_eq!(snap.split_once("\n---\n").unwrap().1, committed.split_once("\n---\n").unwrap().1);
    let again = stdout(&reapcheck(&["run", "--coverage-min", "0", "--scenarios", &dir]));
    assert!(
        again.contains("ok       never-beat  on model")
            && again.ends_with("model: 1 passed, 0 failed; sqlite: 1 passed, 0 failed, 0 skipped\n"),
        "{again}"
    );
}

#[test]
fn a_snapshot_that_disagrees_fails_the_model() {
    let scratch = Scratch::new("cli", "stale-snapshot");
    let good = std::fs::read_to_string(root().join("scenarios/grace/recent-beat.yaml")).unwrap();
    std::fs::write(scratch.0.join("recent-beat.yaml"), good).unwrap();
    std::fs::create_dir_all(scratch.0.join("snapshots")).unwrap();
    let committed = std::fs::read_to_string(root().join("scenarios/grace/snapshots/recent-beat.snap")).unwrap();
    std::fs::write(
        scratch.0.join("snapshots/recent-beat.snap"),
        committed.replace("status: processing", "status: pending"),
    )
    .unwrap();
    let o = reapcheck(&["run", "--scenarios", &scratch.0.display().to_string()]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("FAIL     recent-beat  on model") && out.contains("-    status: pending"), "{out}");
}

#[test]
fn unknown_targets_and_empty_selections_are_invalid_input() {
    let o = reapcheck(&["run", "--db", "oracle"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("unknown target `oracle`"));
    let o = reapcheck(&["run", "no-such-scenario"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("nothing would run"));
    assert!(!stderr(&o).contains("did you mean"), "nothing is that close: {}", stderr(&o));
    // A typo gets the name it was close to.
    let o = reapcheck(&["run", "grace/recent-beet"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("nothing would run; did you mean `grace/recent-beat`?"), "{}", stderr(&o));
}

#[test]
fn check_validates_without_running() {
    let o = reapcheck(&["check"]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}{}", stderr(&o));
    assert!(out.starts_with(&format!("{} scenarios and ", scenario_count())), "{out}");
    let scratch = Scratch::new("cli", "check-dialect");
    let dialects = mutated_sqlite(&scratch, "worker.sql", "-- name: complete", "-- name: completed");
    let o = reapcheck(&["check", "--dialects", &dialects]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("sqlite/worker.sql:") && err.contains("unknown statement `completed`"), "{err}");
    assert!(err.contains("missing statement `complete`"), "{err}");
}

#[test]
fn explain_shows_each_candidates_reasoning() {
    let o = reapcheck(&["explain", "scenarios/grace/never-beat.yaml"]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("candidate stale: last_seen 2026-01-15T09:59:00Z (-2h1m), has_beat 0, grace 300s"), "{out}");
    assert!(out.contains("window 7200s, cutoff 2026-01-15T10:00:00Z (-2h)"), "{out}");
    assert!(out.contains("apply stale: reclaimed"), "{out}");
}

#[test]
fn an_unreachable_server_is_one_line_without_its_password_and_others_still_run() {
    let url = "postgres://app:s3cret-pw@127.0.0.1:1/test";
    let o = reapcheck_with(&["run", "--db", "postgres,sqlite", "grace/"], &[("REAPCHECK_POSTGRES_URL", url)]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(!out.contains("s3cret") && !stderr(&o).contains("s3cret"), "a password was printed: {out}");
    let fail: Vec<&str> = out.lines().filter(|l| l.starts_with("FAIL")).collect();
    assert_eq!(fail.len(), 1, "{out}");
    assert!(fail[0].contains("postgres") && fail[0].contains("127.0.0.1:1") && fail[0].contains("app:***@"), "{out}");
    assert!(out.lines().any(|l| l.starts_with("ok ") && l.contains("on sqlite")), "sqlite still ran: {out}");
}

#[test]
fn a_named_target_without_a_server_fails_unless_skips_are_allowed_and_required_ones_always_fail() {
    let o = reapcheck(&["run", "--db", "mssql", "grace/recent-beat"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("FAIL     mssql (named as a target: give --allow-skip"), "{out}");
    assert!(
        out.ends_with("model: 1 passed, 0 failed; mssql: 0 passed, 1 failed, 0 skipped; no SQL ran on any database\n"),
        "the model's passes are never counted under mssql: {out}"
    );
    let o = reapcheck(&["run", "--db", "sqlite,mssql", "--allow-skip", "grace/recent-beat"]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("skipped: mssql (1 scenarios): no REAPCHECK_MSSQL_URL"), "{out}");
    assert!(out.ends_with("; sqlite: 1 passed, 0 failed, 0 skipped; mssql: 0 passed, 0 failed, 1 skipped\n"), "{out}");
    let o = reapcheck(&["run", "--db", "all", "grace/recent-beat"]);
    let out = stdout(&o);
    assert!(o.status.success(), "`all` runs what it reaches: {out}");
    assert!(
        out.contains("skipped: mysql (1 scenarios)") && out.contains("mssql: 0 passed, 0 failed, 1 skipped"),
        "{out}"
    );
    let require = [("REAPCHECK_REQUIRE", "mssql")];
    let o = reapcheck_with(&["run", "--db", "sqlite,mssql", "--allow-skip", "grace/recent-beat"], &require);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("FAIL     mssql (required)"), "{out}");
}

#[test]
fn a_required_target_that_is_not_selected_and_all_with_others_are_invalid() {
    let o = reapcheck_with(&["run", "--db", "sqlite", "grace/recent-beat"], &[("REAPCHECK_REQUIRE", "postgres")]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(stderr(&o).contains("error: REAPCHECK_REQUIRE: requires postgres, which the targets (sqlite, from --db)"));
    let o = reapcheck(&["run", "--db", "all,sqlite"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--db: `all` cannot be combined with other targets"), "{}", stderr(&o));
}

#[test]
fn a_missing_or_empty_dialects_folder_is_invalid_input_with_what_to_do() {
    let scratch = Scratch::new("cli", "no-dialects");
    for args in [["check", "--dialects", "/nonexistent"], ["run", "--dialects", "/nonexistent"]] {
        let o = reapcheck(&args);
        assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
        assert!(
            stderr(&o).contains("the dialects folder /nonexistent does not exist: give the folder"),
            "{}",
            stderr(&o)
        );
    }
    let empty = scratch.0.display().to_string();
    let o = reapcheck(&["check", "--dialects", &empty]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("holds no dialect sub-folder"), "{}", stderr(&o));
}

#[test]
fn under_ci_a_missing_snapshot_fails_run() {
    let scratch = Scratch::new("cli", "ci-missing");
    let scenarios = one_scenario(&scratch, "grace/never-beat");
    std::fs::remove_dir_all(Path::new(&scenarios).join("grace/snapshots")).unwrap();
    let args = ["run", "--coverage-min", "0", "--scenarios", &scenarios];
    assert!(reapcheck(&args).status.success(), "without CI a missing snapshot is `new`");
    let o = reapcheck_with(&args, &[("CI", "true")]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains("no committed snapshot, and CI=true: write it where you develop with `reapcheck run --accept"),
        "{out}"
    );
}

#[test]
fn a_stale_snapshot_shows_its_diff_and_the_command_that_replaces_it_which_works() {
    let scratch = Scratch::new("cli", "force");
    let scenarios = one_scenario(&scratch, "grace/recent-beat");
    let snap = Path::new(&scenarios).join("grace/snapshots/recent-beat.snap");
    let good = std::fs::read_to_string(&snap).unwrap();
    std::fs::write(&snap, good.replace("status: processing", "status: pending")).unwrap();
    let o = reapcheck(&["run", "--coverage-min", "0", "--scenarios", &scenarios]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("replace it: reapcheck run --accept --force --exact grace/recent-beat"), "{out}");
    assert!(out.contains("-    status: pending"), "{out}");
    let o = reapcheck(&["run", "--coverage-min", "0", "--scenarios", &scenarios, "--accept"]);
    assert_eq!(o.status.code(), Some(1), "without --force a differing snapshot is kept: {}", stdout(&o));
    let o = reapcheck(&[
        "run",
        "--coverage-min",
        "0",
        "--scenarios",
        &scenarios,
        "--accept",
        "--force",
        "--exact",
        "grace/recent-beat",
    ]);
    assert!(o.status.success(), "{}", stdout(&o));
    assert!(stdout(&o).contains("replaced "), "{}", stdout(&o));
    let written = std::fs::read_to_string(&snap).unwrap();
    assert_eq!(written.split_once("\n---\n").unwrap().1, good.split_once("\n---\n").unwrap().1);
    assert!(reapcheck(&["run", "--coverage-min", "0", "--scenarios", &scenarios]).status.success());
}

#[test]
fn from_a_subfolder_the_project_file_runs_the_on_disk_sql_and_corpus() {
    let o = reapcheck_in(&root().join("harness/src"), &["run", "grace/recent-beat"], &[]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}{}", stderr(&o));
    let first = out.lines().next().unwrap();
    let dialects = root().join("dialects/sqlite").display().to_string();
    assert!(first.starts_with(&format!("config {}", root().join("reapcheck.toml").display())), "{first}");
    assert!(first.contains(&format!("SQL: sqlite from {dialects}; SQL hashes: sqlite sha256:")), "{first}");
    // A project whose SQL is broken fails without any flag: the binary runs
    // the files the user sees, not the copy built into it.
    let scratch = Scratch::new("cli", "project");
    let dialects = mutated_sqlite(
        &scratch,
        "reaper.sql",
        "COALESCE(heartbeat_at, updated_at)",
        "COALESCE(updated_at, heartbeat_at)",
    );
    std::fs::write(scratch.0.join("reapcheck.toml"), "dialects = \"dialects\"\nscenarios = [\"builtin\"]\n").unwrap();
    std::fs::create_dir_all(scratch.0.join("deeper")).unwrap();
    let o = reapcheck_in(&scratch.0.join("deeper"), &["run", "grace/recent-beat"], &[]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains(&format!("SQL: sqlite from {dialects}/sqlite")), "{out}");
    assert!(out.contains("FAIL     grace/recent-beat  on sqlite"), "{out}");
}

#[test]
fn without_a_project_file_the_builtin_corpus_and_sql_run_and_the_header_says_so() {
    let scratch = Scratch::new("cli", "bare");
    let o = reapcheck_in(&scratch.0, &["run", "grace/"], &[]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}{}", stderr(&o));
    assert!(
        out.starts_with(
            "no reapcheck.toml; scenarios: builtin; SQL: sqlite builtin (builtin = the SQL inside reapcheck"
        ),
        "{out}"
    );
    assert!(out.contains("ok       grace/recent-beat  on sqlite"), "{out}");
}

#[test]
fn an_invalid_project_file_names_its_line_column_and_key() {
    let scratch = Scratch::new("cli", "bad-config");
    std::fs::write(scratch.0.join("reapcheck.toml"), "# targets\ntargets = [\"sqlite\", \"oracel\"]\n").unwrap();
    let o = reapcheck_in(&scratch.0, &["run"], &[]);
    assert_eq!(o.status.code(), Some(2));
    let file = scratch.0.join("reapcheck.toml").display().to_string();
    assert!(
        stderr(&o).contains(&format!("error: {file}:2:22: key `targets`: unknown target `oracel`")),
        "{}",
        stderr(&o)
    );
    let o = reapcheck_in(&scratch.0, &["run"], &[("REAPCHECK_DB", "nope")]);
    assert!(stderr(&o).contains("error: REAPCHECK_DB: unknown target `nope`"), "the variable wins: {}", stderr(&o));
}

#[test]
fn mutate_jobs_change_how_many_mutants_run_at_once_never_which_are_killed() {
    // What survives, and the score, is the same one at a time as eight at
    // once (the grace scenarios leave some mutants alive to compare).
    let verdicts = |jobs: &str| {
        let o = reapcheck(&["mutate", "--db", "sqlite", "--scenarios", "scenarios/grace", "--jobs", jobs]);
        let out = stdout(&o);
        let mut survived: Vec<String> = out
            .lines()
            .filter(|l| l.starts_with("  SURVIVED "))
            .map(|l| l.split(':').next().unwrap().to_owned())
            .collect();
        survived.sort();
        let score = out
            .lines()
            .find(|l| l.starts_with("sqlite: mutation score"))
            .map(|l| l.split(" in ").next().unwrap().to_owned());
        (o.status.code(), survived, score)
    };
    let one = verdicts("1");
    assert!(!one.1.is_empty() && one.2.is_some(), "{one:?}");
    assert_eq!(verdicts("8"), one);
    let o = reapcheck(&["mutate", "--db", "sqlite", "--jobs", "0"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--jobs"), "{}", stderr(&o));
}

#[test]
fn run_refuses_a_jobs_count_outside_1_to_64_before_it_starts() {
    for jobs in ["0", "65", "many"] {
        let o = reapcheck(&["run", "--db", "sqlite", "--jobs", jobs]);
        assert_eq!(o.status.code(), Some(2), "--jobs {jobs}: {}", stderr(&o));
        assert!(stderr(&o).contains("--jobs"), "{}", stderr(&o));
        assert!(stdout(&o).is_empty(), "nothing ran: {}", stdout(&o));
    }
    let o = reapcheck(&["run", "--db", "sqlite", "--jobs", "64", "--exact", "grace/floor-reclaims-past-it"]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
}

#[test]
fn mutate_kills_every_named_and_generated_mutant_on_sqlite_after_declared_equivalents() {
    let o = reapcheck(&["mutate", "--db", "sqlite"]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}");
    let named = reapcheck::mutate::MUTANTS.len();
    assert_eq!(out.lines().filter(|l| l.starts_with("  killed ")).count(), named, "{out}");
    let row: Vec<String> = out
        .lines()
        .find(|l| l.starts_with("  named "))
        .map(|l| l.split_whitespace().map(str::to_owned).collect())
        .unwrap_or_default();
    assert_eq!(row, ["named", &named.to_string(), &named.to_string(), "0", "0"], "{out}");
    for op in reapcheck::mutate::Operator::ALL {
        assert!(out.lines().any(|l| l.starts_with(&format!("  {} ", op.name()))), "no {op} row: {out}");
    }
    assert!(out.contains("sqlite: mutation score 100% ("), "{out}");
    assert!(!out.contains("SURVIVED"), "{out}");
}

#[test]
fn mutate_runs_a_mutant_only_on_scenarios_that_execute_what_it_changes() {
    // The grace scenarios use no lease, no legacy table and never complete
    // a job: mutants of those statements run no scenario and survive, said
    // so; the scan's mutants all run.
    let o = reapcheck(&["mutate", "--db", "sqlite", "--scenarios", "scenarios/grace"]);
    let out = stdout(&o);
    assert!(!o.status.success(), "lease mutants cannot be killed here: {out}");
    let unseen = ": no scenario executes the statement it changes";
    for id in ["takeover-ignores-expiry", "legacy-guard-not-strict", "complete-unfenced"] {
        assert!(
            out.lines().any(|l| l.starts_with(&format!("  SURVIVED {id}: ")) && l.ends_with(unseen)),
            "{id}: {out}"
        );
    }
    // Every grace scenario scans: the scan's mutants ran, whatever they
    // survived (queue filters are not what these scenarios test).
    assert!(out.lines().any(|l| l.starts_with("  SURVIVED reap_scan")), "{out}");
    assert!(!out.lines().any(|l| l.starts_with("  SURVIVED reap_scan") && l.ends_with(unseen)), "{out}");
    // The count of runs is printed, and far below mutants x scenarios.
    let summary = out.lines().find(|l| l.starts_with("sqlite: mutation score ")).expect("a summary line");
    let runs: usize = summary
        .rsplit(", ")
        .next()
        .and_then(|t| t.strip_suffix(" scenario runs"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no run count: {summary}"));
    let header = out.lines().find(|l| l.starts_with("sqlite [")).expect("a header line");
    let product: usize = header
        .split(": ")
        .nth(1)
        .map(|t| t.split_whitespace().filter_map(|w| w.parse::<usize>().ok()).collect::<Vec<_>>())
        .map(|n| (n[0] + n[1]) * n[2])
        .unwrap_or_default();
    assert!(runs > 0 && runs * 4 < product, "{runs} runs of at most {product}: {out}");
    assert!(out.lines().last().is_some_and(|l| l.starts_with("mutate: 1 target in ")), "{out}");
}

#[test]
fn mutate_runs_on_a_port_spelled_differently() {
    let scratch = Scratch::new("cli", "mutant-port");
    let dialects = mutated_sqlite(
        &scratch,
        "reaper.sql",
        "COALESCE(heartbeat_at, updated_at)",
        "IFNULL(heartbeat_at, updated_at)",
    );
    let leases = scratch.0.join("dialects/sqlite/leases.sql");
    let text = std::fs::read_to_string(&leases).unwrap();
    let from = "WHERE name = :name AND expires_at < :now";
    assert!(text.contains(from));
    std::fs::write(&leases, text.replace(from, "WHERE job_leases.expires_at < :now AND job_leases.name = :name"))
        .unwrap();

    // The port's reap_fail changed, so its equivalence declaration is stale
    // until its reason is checked and its hash updated, as a user would.
    let o = reapcheck(&["mutate", "--db", "sqlite", "--dialects", &dialects]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("was declared for another text of `reap_fail` (hash "), "{err}");
    let hashes = |line: &str| -> Option<(String, String)> {
        let old = line.split("(hash ").nth(1)?.split(',').next()?.to_owned();
        let new = line.split(", now ").nth(1)?.split(')').next()?.to_owned();
        Some((old, new))
    };
    let declarations = scratch.0.join("dialects/sqlite/equivalent-mutants.yaml");
    let mut text = std::fs::read_to_string(&declarations).unwrap();
    for (old, new) in err.lines().filter_map(hashes) {
        text = text.replace(&old, &new);
    }
    std::fs::write(&declarations, text).unwrap();

    let o = reapcheck(&["mutate", "--db", "sqlite", "--dialects", &dialects, "--list"]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}{}", stderr(&o));
    assert!(
        out.contains("reap_retry: replace `IFNULL(heartbeat_at, updated_at)` with `IFNULL(updated_at, heartbeat_at)`"),
        "{out}"
    );
    assert!(out.contains("lease_takeover: drop WHERE conjunct 1 `job_leases.expires_at < :now`"), "{out}");

    let o = reapcheck(&["mutate", "--db", "sqlite", "--dialects", &dialects]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}{}", stderr(&o));
    assert!(
        out.contains(&format!(
            "  not applicable: named mutant `coalesce-swapped` does not apply to sqlite's `reap_scan` ({}:7)",
            std::path::Path::new(&dialects).join("sqlite/reaper.sql").display()
        )),
        "{out}"
    );
    assert!(out.contains("  not applicable: named mutant `takeover-ignores-expiry`"), "{out}");
    assert!(out.contains("sqlite: mutation score 100% ("), "{out}");
}

#[test]
fn mutate_lists_unparsable_statements_and_rejects_a_stale_equivalence() {
    let scratch = Scratch::new("cli", "mutant-unparsable");
    let dialects = mutated_sqlite(
        &scratch,
        "worker.sql",
        "UPDATE jobs SET heartbeat_at = :now",
        "UPDATE jobs SET heartbeat_at = :now,",
    );
    let o = reapcheck(&["mutate", "--db", "sqlite", "--dialects", &dialects, "--list"]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}");
    let worker = std::path::Path::new(&dialects).join("sqlite/worker.sql");
    assert!(out.contains(&format!("sqlite: not generated: {}:18 ", worker.display())), "{out}");
    assert!(out.contains("(`heartbeat`): "), "{out}");
    assert!(!out.contains("\theartbeat: "), "{out}");

    let scratch = Scratch::new("cli", "mutant-stale");
    let dialects = mutated_sqlite(&scratch, "readback.sql", "FROM jobs ORDER BY id", "FROM jobs ORDER BY id ASC");
    let o = reapcheck(&["mutate", "--db", "sqlite", "--dialects", &dialects]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("error: sqlite/equivalent-mutants.yaml:"), "{err}");
    assert!(err.contains("`read_jobs: drop ORDER BY` was declared for another text of `read_jobs`"), "{err}");
    // --list is how the new id and hash are found: it warns and still lists.
    let o = reapcheck(&["mutate", "--db", "sqlite", "--dialects", &dialects, "--list"]);
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(o.status.success(), "{out}{err}");
    assert!(err.contains("warning: sqlite/equivalent-mutants.yaml:"), "{err}");
    assert!(out.contains("read_jobs: drop ORDER BY"), "{out}");
}

#[test]
fn a_scan_row_of_an_undeclared_class_fails_the_run_without_a_panic() {
    let scratch = Scratch::new("cli", "scan-class");
    let dialects = mutated_sqlite(
        &scratch,
        "reaper.sql",
        "SELECT id, class, attempts, max_retries, claim_timeout,\n       CASE",
        "SELECT id, 'Nope' AS class, attempts, max_retries, claim_timeout,\n       CASE",
    );
    let o = reapcheck(&["run", "--db", "sqlite", "--dialects", &dialects, "boundaries/scan-floor"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{}", stderr(&o));
    assert!(out.contains("has class `Nope`, which the scenario does not declare"), "{out}");
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
}

#[test]
fn reports_name_servers_and_never_count_a_skip_as_a_pass() {
    let scratch = Scratch::new("cli", "report");
    let dir = scratch.0.join("reports");
    let o =
        reapcheck(&["run", "--db", "sqlite,mssql", "--allow-skip", "--report", &dir.display().to_string(), "grace/"]);
    assert!(o.status.success(), "{}", stdout(&o));
    let summary = std::fs::read_to_string(dir.join("summary.txt")).unwrap();
    let n = summary.lines().find(|l| l.starts_with("model")).and_then(|l| l.split(": ").nth(1)).unwrap().to_owned();
    assert!(summary.contains("mssql [not run]: 0 passed, 0 failed,"), "{summary}");
    // The same counts as the model's, then whose code ran.
    assert!(
        summary.lines().any(|l| l.starts_with("sqlite [sqlite 3.")
            && l.contains(&format!(": {n}; ran "))
            && l.ends_with("; reference policy")),
        "{summary}"
    );
    let junit = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    assert!(
        junit.contains("<testsuite name=\"mssql\"") && junit.contains("<skipped message=\"no REAPCHECK_MSSQL_URL"),
        "{junit}"
    );
}

#[test]
fn a_declared_divergence_keeps_its_own_snapshot_and_fails_once_it_agrees() {
    let scratch = Scratch::new("cli", "divergence");
    let scenarios = scratch.0.join("scenarios");
    std::fs::create_dir_all(&scenarios).unwrap();
    let text = std::fs::read_to_string(root().join("scenarios/grace/never-beat.yaml")).unwrap();
    let declared =
        format!("{text}divergence:\n  sqlite: this copy of the SQL retries a reaped job at once on purpose\n");
    std::fs::write(scenarios.join("never-beat.yaml"), declared).unwrap();
    let dir = scenarios.display().to_string();
    let dialects = mutated_sqlite(
        &scratch,
        "reaper.sql",
        "run_at = :run_at, updated_at = :now",
        "run_at = :now, updated_at = :now",
    );

    let accepted = reapcheck(&["run", "--coverage-min", "0", "--scenarios", &dir, "--dialects", &dialects, "--accept"]);
    assert!(accepted.status.success(), "{}", stdout(&accepted));
    assert!(scenarios.join("snapshots/never-beat@sqlite.snap").exists());
    let out = stdout(&reapcheck(&["run", "--coverage-min", "0", "--scenarios", &dir, "--dialects", &dialects]));
    assert!(
        out.contains("diverged never-beat  on sqlite [sqlite 3.")
            && out.contains("retries a reaped job at once on purpose"),
        "{out}"
    );

    // The embedded SQL agrees with the model: the declaration has outlived its cause.
    let o = reapcheck(&["run", "--coverage-min", "0", "--scenarios", &dir]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("sqlite is declared divergent") && out.contains("remove `sqlite` from `divergence`"), "{out}");
}

#[test]
fn a_declared_divergence_that_reclaims_a_live_job_still_fails_on_the_invariants() {
    let scratch = Scratch::new("cli", "divergence-invariant");
    let scenarios = scratch.0.join("scenarios");
    std::fs::create_dir_all(&scenarios).unwrap();
    let text = std::fs::read_to_string(root().join("scenarios/grace/recent-beat.yaml")).unwrap();
    let declared = format!("{text}divergence:\n  sqlite: this copy of the SQL swaps COALESCE on purpose\n");
    std::fs::write(scenarios.join("recent-beat.yaml"), declared).unwrap();
    let dir = scenarios.display().to_string();
    let dialects = mutated_sqlite(
        &scratch,
        "reaper.sql",
        "COALESCE(heartbeat_at, updated_at)",
        "COALESCE(updated_at, heartbeat_at)",
    );
    let o = reapcheck(&["run", "--coverage-min", "0", "--scenarios", &dir, "--dialects", &dialects, "--accept"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("invariant `no early reclaim` broken at step 1: job `a` was reclaimed"), "{out}");
}

/// A copy of one committed scenario (and its snapshot) in a scenarios
/// folder of its own.
fn one_scenario(scratch: &Scratch, name: &str) -> String {
    let (concern, file) = name.split_once('/').expect("concern/name");
    let dir = scratch.0.join("scenarios").join(concern);
    std::fs::create_dir_all(dir.join("snapshots")).unwrap();
    let src = root().join("scenarios").join(concern);
    std::fs::copy(src.join(format!("{file}.yaml")), dir.join(format!("{file}.yaml"))).unwrap();
    std::fs::copy(src.join(format!("snapshots/{file}.snap")), dir.join(format!("snapshots/{file}.snap"))).unwrap();
    scratch.0.join("scenarios").display().to_string()
}

#[test]
fn a_failure_on_a_target_carries_the_sql_trace_up_to_the_step_where_it_parts() {
    let scratch = Scratch::new("cli", "trace");
    let dialects = mutated_sqlite(
        &scratch,
        "reaper.sql",
        "AND COALESCE(heartbeat_at, updated_at) < :cutoff",
        "AND COALESCE(heartbeat_at, updated_at) <= :cutoff",
    );
    let o = reapcheck(&["run", "--dialects", &dialects, "--exact", "boundaries/claim-window-exact"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("    trace on sqlite: statements up to step 1, where sqlite and the model part\n"), "{out}");
    assert!(out.contains("      step 1 at 2026-01-15T12:00:00Z: reap\n"), "{out}");
    // The statement, its file:line, every bound value with instants relative
    // to the clock, and what it changed.
    assert!(
        out.contains(&format!(
            "reap_retry ({}:24) :run_at=2026-01-15T12:00:04Z (+4s) :now=2026-01-15T12:00:00Z (0s) \
             :id=\"on-cutoff\" :attempts=1 :cutoff=2026-01-15T11:50:00Z (-10m) -> 1 row changed",
            std::path::Path::new(&dialects).join("sqlite/reaper.sql").display()
        )),
        "{out}"
    );
    assert!(out.contains("      state after step 1 (instants relative to the clock then):"), "{out}");
    assert!(!out.contains("drop_namespace"), "teardown is not part of a trace: {out}");
}

#[test]
fn run_trace_prints_every_statement_of_a_passing_case() {
    let o = reapcheck(&["run", "--trace", "--exact", "grace/recent-beat"]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("    trace on sqlite: every statement (the step-by-step states agree)"), "{out}");
    // The path opens from where the command ran (the repository's root);
    // the line is the statement's first line of SQL, not its marker.
    assert!(out.contains("reap_scan (dialects/sqlite/reaper.sql:7) :now=2026-01-15T12:00:00Z (0s)"), "{out}");
    assert!(!out.contains("trace on model"), "the model runs no SQL: {out}");
}

#[test]
fn coverage_fails_a_statement_that_no_scenario_executes() {
    let scratch = Scratch::new("cli", "coverage");
    let scenarios = one_scenario(&scratch, "grace/recent-beat");
    let o = reapcheck(&["run", "--scenarios", &scenarios, "--coverage"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("coverage on sqlite (dialect sqlite, 1 scenarios):"), "{out}");
    assert!(out.contains("FAIL     coverage on sqlite\n"), "{out}");
    assert!(
        out.contains(
            "`legacy_reap_fail` of dialect sqlite is executed by 0 scenarios on sqlite (at least 1 required): \
             add a scenario that runs it, or pass --coverage-min 0 when this is not the whole corpus"
        ),
        "{out}"
    );
    assert!(!out.contains("`reap_scan` of dialect"), "reap_scan ran: {out}");
    assert_eq!(
        out.lines().last(),
        Some("model: 1 passed, 0 failed; sqlite: 1 passed, 0 failed, 0 skipped; 1 other failures"),
        "{out}"
    );
    // A partial corpus may say so.
    let o = reapcheck(&["run", "--scenarios", &scenarios, "--coverage-min", "0"]);
    assert!(o.status.success(), "{}", stdout(&o));
    // A filtered run cannot judge coverage, and says so.
    let o = reapcheck(&["run", "--scenarios", &scenarios, "--coverage", "recent"]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("coverage not checked: filters narrow the corpus"), "{out}");
}

#[test]
fn every_statement_is_executed_by_at_least_two_scenarios_on_sqlite() {
    let o = reapcheck(&["run", "--coverage", "--coverage-min", "2"]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}");
    assert!(!out.contains("FAIL     coverage"), "{out}");
}

#[test]
fn explain_by_name_interleaves_the_models_reasoning_with_the_targets_sql() {
    let scratch = Scratch::new("cli", "explain-db");
    let dialects = mutated_sqlite(
        &scratch,
        "reaper.sql",
        "AND COALESCE(heartbeat_at, updated_at) < :cutoff",
        "AND COALESCE(heartbeat_at, updated_at) <= :cutoff",
    );
    let o = reapcheck(&["explain", "boundaries/claim-window-exact", "--db", "sqlite", "--dialects", &dialects]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    let reasoning = out.find("  candidate on-cutoff: last_seen").expect("the model's reasoning");
    let reaper = std::path::Path::new(&dialects).join("sqlite/reaper.sql");
    let sql = out.find(&format!("    sql on sqlite: reap_retry ({}:24)", reaper.display())).expect("the target's SQL");
    let parted = out.find("  !! sqlite and the model part here").expect("the parting marker");
    assert!(reasoning < sql && sql < parted, "{out}");
    let o = reapcheck(&["explain", "boundaries/claim-window-exact", "--db", "sqlite"]);
    assert!(o.status.success(), "{}", stdout(&o));
    assert!(stdout(&o).contains("sqlite [sqlite 3."), "{}", stdout(&o));
    let o = reapcheck(&["explain", "grace/"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("scenarios (grace/"), "{}", stderr(&o));
    assert!(stderr(&o).contains("give the whole name"), "{}", stderr(&o));
}

#[cfg(unix)]
#[test]
fn a_closed_pipe_ends_the_run_quietly_without_a_panic() {
    use std::io::Read;
    use std::os::unix::process::ExitStatusExt;
    let mut child = Command::new(env!("CARGO_BIN_EXE_reapcheck"))
        .args(["run"])
        .current_dir(root())
        .env_remove("REAPCHECK_REQUIRE")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let mut first = [0u8; 16];
    child.stdout.take().expect("piped").read_exact(&mut first).expect("some output");
    // The reader goes away, as `head -1` does.
    let o = child.wait_with_output().expect("it ends");
    assert_eq!(o.status.signal(), Some(libc_sigpipe()), "{o:?}");
    assert!(!String::from_utf8_lossy(&o.stderr).contains("panicked"), "{}", String::from_utf8_lossy(&o.stderr));
}

#[cfg(unix)]
fn libc_sigpipe() -> i32 {
    13
}

#[test]
fn a_failing_command_inside_a_script_is_named_by_its_own_line() {
    let scratch = Scratch::new("cli", "script-line");
    let index = "CREATE INDEX jobs_reap ON jobs (status, queue);";
    let text = std::fs::read_to_string(root().join("dialects/sqlite/schema.sql")).unwrap();
    let line = text.lines().position(|l| l == index).expect("the schema creates its index") + 1;
    // Only the first (standard) schema's index is broken.
    let dialects = mutated_sqlite(&scratch, "schema.sql", "", "");
    let path = scratch.0.join("dialects/sqlite/schema.sql");
    let broken = text.replacen(index, "CREATE INDEX jobs_reap ON no_such_table (status, queue);", 1);
    std::fs::write(&path, broken).unwrap();
    let o = reapcheck(&["run", "--dialects", &dialects, "--exact", "grace/recent-beat"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains(&format!("no_such_table (in the command at {}:{line})", path.display())), "{out}");
}

/// Every file below `dir`, recursively, as text (lossy).
fn every_file(dir: &std::path::Path, out: &mut Vec<(PathBuf, String)>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            every_file(&path, out);
        } else {
            let bytes = std::fs::read(&path).unwrap_or_default();
            out.push((path, String::from_utf8_lossy(&bytes).into_owned()));
        }
    }
}

#[test]
fn a_planted_password_in_any_form_reaches_no_output_channel() {
    // One connection string per credential form, each with its own planted
    // secret, for a server that refuses (port 1), so the error paths that
    // print a connection string run.
    let forms: &[(&str, &str, &str)] = &[
        ("postgres", "REAPCHECK_POSTGRES_URL", "postgres://u:PLANTEDuserinfo@127.0.0.1:1/test"),
        ("postgres", "REAPCHECK_POSTGRES_URL", "postgres://127.0.0.1:1/test?user=u&password=PLANTEDquery"),
        ("postgres", "REAPCHECK_POSTGRES_URL", "postgres://127.0.0.1:1/test?sslpassword=PLANTEDssl&user=u"),
        ("postgres", "REAPCHECK_POSTGRES_URL", "host=127.0.0.1 port=1 user=u password=PLANTEDlibpq dbname=test"),
        ("postgres", "REAPCHECK_POSTGRES_URL", "host=127.0.0.1 port=1 password='PLANTED quoted' dbname=test"),
        ("mariadb", "REAPCHECK_MARIADB_URL", "mysql://root:PLANTEDmaria@127.0.0.1:1/test"),
        ("mssql", "REAPCHECK_MSSQL_URL", "Server=tcp:127.0.0.1,1;User Id=sa;Password=PLANTEDado;Encrypt=false"),
        ("mssql", "REAPCHECK_MSSQL_URL", "Server=127.0.0.1,1;Uid=sa;Pwd={PLANTED;braced};"),
        ("mssql", "REAPCHECK_MSSQL_URL", "jdbc:sqlserver://127.0.0.1:1;user=sa;password=PLANTEDjdbc;encrypt=false"),
        ("mssql", "REAPCHECK_MSSQL_URL", "mssql://sa:PLANTEDmssql@127.0.0.1:1/master"),
    ];
    for (i, (target, variable, url)) in forms.iter().enumerate() {
        let scratch = Scratch::new("cli", &format!("secret-{i}"));
        let reports = scratch.0.join("reports");
        let o = reapcheck_with(
            &["run", "--db", target, "--report", &reports.display().to_string(), "grace/"],
            &[(variable, url)],
        );
        // A libpq keyword string, an ADO.NET or a JDBC string is no URL the
        // drivers read: refused as invalid input before anything runs (no
        // report), its password still not shown.
        // So is `sslpassword`, which the PostgreSQL driver would ignore.
        let refused = !["postgres://", "mysql://", "mssql://"].iter().any(|scheme| url.starts_with(scheme))
            || url.contains("sslpassword=");
        assert_eq!(o.status.code(), Some(if refused { 2 } else { 1 }), "{url}: {}{}", stdout(&o), stderr(&o));
        if refused {
            assert!(
                stderr(&o).contains(": fix the URL; nothing ran") && !stderr(&o).contains("PLANTED"),
                "{}",
                stderr(&o)
            );
            assert!(!stdout(&o).contains("PLANTED"), "{}", stdout(&o));
            continue;
        }
        let mut channels = vec![(PathBuf::from("stdout"), stdout(&o)), (PathBuf::from("stderr"), stderr(&o))];
        every_file(&scratch.0, &mut channels);
        assert!(channels.len() > 2, "{url}: no report was written");
        for (channel, text) in &channels {
            assert!(!text.contains("PLANTED"), "{url}: the secret reached {}:\n{text}", channel.display());
        }
        assert!(stdout(&o).contains("127.0.0.1"), "{url}: the server is still named: {}", stdout(&o));
    }
}

#[test]
fn check_refuses_what_would_crash_or_wrap_at_run_time_with_file_line_and_column() {
    let scratch = Scratch::new("cli", "crash-repros");
    let head = "description: x\nclasses: { C: {} }\n";
    let job = "jobs: [ { id: a, class: C, status: processing, attempts: 1, claimed: -1h } ]\n";
    let files = [
        (
            "advance.yaml",
            format!("{head}{job}steps: [ {{advance: 100000000d}}, reap ]\n"),
            "advance.yaml:4:20: duration `+100000000d` is longer than the range",
        ),
        (
            "claimed.yaml",
            format!("{head}jobs: [ {{ id: a, class: C, claimed: -100000000d }} ]\nsteps: [ reap ]\n"),
            "claimed.yaml:3:37: duration `-100000000d` is longer",
        ),
        (
            "timeout.yaml",
            format!("description: x\nclasses: {{ C: {{ timeout: 9223372036854 }} }}\n{job}steps: [ reap ]\n"),
            "timeout.yaml:2:26: `9223372036854` is out of range",
        ),
        (
            "backoff.yaml",
            format!("description: x\nclasses: {{ C: {{ base_delay: 9223372036854775807 }} }}\n{job}steps: [ reap ]\n"),
            "backoff.yaml:2:29: `9223372036854775807` is out of range",
        ),
        (
            "clock.yaml",
            format!("{head}{job}steps: [ {{advance: 1500000d}}, {{advance: 1500000d}}, reap ]\n"),
            "clock.yaml:4:31: the clock after `advance: +1500000d` from 6132-11-25T12:00:00Z leaves the range",
        ),
        (
            "units.yaml",
            "description: x\nsettings: { heartbeat_grace: 30s }\nsteps: []\n".to_owned(),
            "units.yaml:2:30: `30s` has a unit, but this field takes whole seconds as an integer with no unit: write `30`",
        ),
    ];
    for (name, text, _) in &files {
        std::fs::write(scratch.0.join(name), text).unwrap();
    }
    let o = reapcheck(&["check", "--scenarios", &scratch.0.display().to_string()]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    for (_, _, expected) in &files {
        assert!(err.contains(expected), "missing `{expected}` in:\n{err}");
    }
    // `run` refuses them the same way, before running anything.
    let o = reapcheck(&["run", "--scenarios", &scratch.0.display().to_string()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[cfg(unix)]
#[test]
fn check_does_not_hang_on_a_fifo_or_read_dev_zero_and_refuses_yml() {
    let scratch = Scratch::new("cli", "special-files");
    assert!(std::process::Command::new("mkfifo").arg(scratch.0.join("pipe.yaml")).status().unwrap().success());
    std::os::unix::fs::symlink("/dev/zero", scratch.0.join("zero.yaml")).unwrap();
    let o = reapcheck(&["check", "--scenarios", &scratch.0.display().to_string()]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("pipe.yaml: not a regular file") && err.contains("zero.yaml: not a regular file"), "{err}");
    let yml = Scratch::new("cli", "yml-file");
    let recent = std::fs::read_to_string(root().join("scenarios/grace/recent-beat.yaml")).unwrap();
    std::fs::write(yml.0.join("recent-beat.yml"), recent).unwrap();
    let o = reapcheck(&["check", "--scenarios", &yml.0.display().to_string()]);
    assert_eq!(o.status.code(), Some(2), "a .yml file is never silently ignored: {}", stdout(&o));
    assert!(stderr(&o).contains("recent-beat.yml: scenario files end in `.yaml`"), "{}", stderr(&o));
    // The same for a dialect folder: a FIFO named `*.sql` is refused, not read.
    let dialects = Scratch::new("cli", "fifo-dialect");
    for entry in std::fs::read_dir(root().join("dialects")).unwrap() {
        let from = entry.unwrap().path();
        let to = dialects.0.join(from.file_name().unwrap());
        std::fs::create_dir_all(&to).unwrap();
        for file in std::fs::read_dir(&from).unwrap() {
            let file = file.unwrap().path();
            std::fs::copy(&file, to.join(file.file_name().unwrap())).unwrap();
        }
    }
    assert!(std::process::Command::new("mkfifo").arg(dialects.0.join("sqlite/zz.sql")).status().unwrap().success());
    let o = reapcheck(&["check", "--dialects", &dialects.0.display().to_string()]);
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("zz.sql") && stderr(&o).contains("not a regular file"), "{}", stderr(&o));
}

/// Scenarios at both ends of the declared time range (docs/scenario-format.md,
/// "Time range"): `check` accepts them, and every target that runs stores
/// and compares their instants as the model does (sqlite here; postgres and
/// mariadb too when their URLs are set, as in `.ci/run`).
const RANGE_EDGES: [(&str, &str); 2] = [
    (
        "low.yaml",
        r#"description: the earliest clock the range allows, with a reap, a claim, a beat and a retry
now: 1000-01-01T00:20:00Z
classes: { C: { timeout: 60, exclusive: true } }
jobs:
  - { id: a, class: C, status: processing, attempts: 1, claimed: -19m }
  - { id: b, class: C, run_at: -1m }
leases: [ { name: 'job:C', owner: a/1, expires: -1s } ]
steps:
  - reap
  - claim: b
  - heartbeat: b
  - fail: b
"#,
    ),
    (
        "high.yaml",
        r#"description: the latest clock the range allows, with a reap, a claim, a beat and a retry
now: 9999-12-31T22:00:00Z
session_time_zone: "+05:30"
classes: { C: { timeout: 60, exclusive: true, max_delay: 600 } }
jobs:
  - { id: a, class: C, status: processing, attempts: 1, claimed: -19m }
  - { id: b, class: C, run_at: -1m }
steps:
  - reap
  - claim: b
  - heartbeat: b
  - fail: b
  - { advance: 1h }
  - reap
"#,
    ),
];

#[test]
fn scenarios_at_both_ends_of_the_time_range_run_alike_on_every_target() {
    let scratch = Scratch::new("cli", "range-edges");
    for (name, text) in RANGE_EDGES {
        std::fs::write(scratch.0.join(name), text).unwrap();
    }
    let mut targets = vec!["sqlite"];
    let mut env = Vec::new();
    for (target, variable) in [("postgres", "REAPCHECK_POSTGRES_URL"), ("mariadb", "REAPCHECK_MARIADB_URL")] {
        if let Ok(url) = std::env::var(variable) {
            targets.push(target);
            env.push((variable, url));
        }
    }
    let env: Vec<(&str, &str)> = env.iter().map(|(v, u)| (*v, u.as_str())).collect();
    let db = targets.join(",");
    let dir = scratch.0.display().to_string();
    let o = reapcheck_with(&["run", "--db", &db, "--coverage-min", "0", "--scenarios", &dir], &env);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    for target in targets {
        for name in ["low", "high"] {
            assert!(
                out.lines().any(|l| l.starts_with(&format!("new      {name}  on {target}"))),
                "{name} on {target}: {out}"
            );
        }
    }
}

#[test]
fn init_sets_up_a_repository_whose_run_passes_and_refuses_to_overwrite_without_force() {
    let scratch = Scratch::new("cli", "init");
    let o = reapcheck_in(&scratch.0, &["init", "--from", "postgres"], &[]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    for file in [
        "reapcheck.toml",
        "reapcheck/dialects/postgres/reaper.sql",
        "reapcheck/scenarios/stopped-heartbeat.yaml",
        "reapcheck/scenarios/snapshots/stopped-heartbeat.snap",
    ] {
        assert!(scratch.0.join(file).is_file(), "{file} was not written");
    }
    assert!(!scratch.0.join("reapcheck/dialects/mysql").exists(), "only the dialects asked for are copied");
    let workflow = std::fs::read(scratch.0.join(".github/workflows/reapcheck.yml")).unwrap();
    assert_eq!(workflow, std::fs::read(root().join("ci/github-actions.yml")).unwrap(), "the template, byte for byte");
    let snap = std::fs::read_to_string(scratch.0.join("reapcheck/scenarios/snapshots/stopped-heartbeat.snap")).unwrap();
    assert!(snap.contains("\ninput_file: reapcheck/scenarios/stopped-heartbeat.yaml\n"), "{snap}");
    // Right after init, `run` passes: the builtin corpus plus the example,
    // on the model and sqlite (the builtin SQL, as the header says).
    let o = reapcheck_in(&scratch.0.join("reapcheck"), &["run"], &[]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}{}", stderr(&o));
    let first = out.lines().next().unwrap();
    assert!(out.starts_with("config ") && first.contains("SQL: sqlite builtin; SQL hashes: sqlite sha256:"), "{out}");
    assert!(out.contains("ok       stopped-heartbeat  on sqlite"), "{out}");
    let n = scenario_count() + 1;
    assert!(out.ends_with(&format!("model: {n} passed, 0 failed; sqlite: {n} passed, 0 failed, 0 skipped\n")), "{out}");
    // A second init writes nothing, and says which files exist.
    std::fs::write(scratch.0.join("reapcheck.toml"), "# mine\n").unwrap();
    std::fs::remove_file(scratch.0.join("reapcheck/dialects/postgres/reaper.sql")).unwrap();
    let o = reapcheck_in(&scratch.0, &["init", "--from", "postgres"], &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("reapcheck.toml") && stderr(&o).contains("give --force to overwrite"),
        "{}",
        stderr(&o)
    );
    assert!(!scratch.0.join("reapcheck/dialects/postgres/reaper.sql").exists(), "nothing was written");
    assert_eq!(std::fs::read_to_string(scratch.0.join("reapcheck.toml")).unwrap(), "# mine\n");
    let o = reapcheck_in(&scratch.0, &["init", "--from", "postgres", "--force"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(scratch.0.join("reapcheck/dialects/postgres/reaper.sql").is_file());
    let o = reapcheck_in(&scratch.0, &["init", "--from", "oracle", "--force"], &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--from: unknown dialect `oracle`"), "{}", stderr(&o));
}

#[test]
fn a_dialect_neither_copied_nor_listed_as_builtin_is_an_error_naming_the_config() {
    let scratch = Scratch::new("cli", "partial-port");
    assert!(reapcheck_in(&scratch.0, &["init", "--from", "postgres"], &[]).status.success());
    std::fs::write(
        scratch.0.join("reapcheck.toml"),
        "dialects = \"reapcheck/dialects\"\nscenarios = [\"reapcheck/scenarios\"]\n",
    )
    .unwrap();
    let o = reapcheck_in(&scratch.0, &["run"], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    let file = scratch.0.join("reapcheck.toml").display().to_string();
    assert!(
        stderr(&o).contains(&format!("error: {file}:1:12: key `dialects`: dialect `sqlite` is not in ")),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("list it in `builtin_dialects`"), "{}", stderr(&o));
}

#[test]
fn every_subcommand_help_lists_examples_environment_and_exit_codes() {
    for command in ["run", "check", "explain", "mutate", "bench", "fuzz", "init", "verdict", "race"] {
        let o = reapcheck(&[command, "--help"]);
        assert!(o.status.success(), "{command}");
        let help = stdout(&o);
        for section in ["Examples:\n", "Environment:\n", "Exit codes:\n  0  "] {
            assert!(help.contains(section), "`{command} --help` has no {section:?}:\n{help}");
        }
        assert!(help.contains(&format!("reapcheck {command} ")), "`{command} --help` shows no example of itself");
    }
    let help = stdout(&reapcheck(&["run", "--help"]));
    for v in ["REAPCHECK_DB", "REAPCHECK_REQUIRE", "REAPCHECK_POSTGRES_URL", "CI ", "--allow-skip"] {
        assert!(help.contains(v), "run --help does not mention {v}:\n{help}");
    }
}

#[test]
fn the_build_script_reads_no_environment_so_a_changed_url_never_recompiles() {
    // Which servers exist is decided at run time (reach::test_url); a
    // `rerun-if-env-changed` or an environment read here would rebuild the
    // crate whenever a REAPCHECK_*_URL changes.
    let script = std::fs::read_to_string(root().join("harness/build.rs")).unwrap();
    let code: String = script.lines().filter(|l| !l.trim_start().starts_with("//")).collect();
    for forbidden in ["rerun-if-env-changed", "std::env", "env::var", "rustc-cfg"] {
        assert!(!code.contains(forbidden), "build.rs uses {forbidden}");
    }
    assert!(code.contains("rerun-if-changed=../scenarios"), "the embedded corpus must rebuild when it changes");
}
