//! The example ports under `harness/tests/ports/` run through the binary as
//! a user runs their own copy of the SQL (`--dialects DIR`), and the
//! profile's bad inputs are refused with their place:
//!
//! - `whole-second`: MySQL `DATETIME` without fractions, PostgreSQL
//!   `timestamptz(0)`, `time_resolution = 1s`; passes the whole corpus.
//! - `no-leases`: no lease table or statements, `features` without leases;
//!   every scenario needing leases is skipped with the reason, nothing else.
//! - `dbclock`: statements read the database's own clock, set by
//!   `set_clock`; passes the corpus (on MariaDB 10.11 except the two
//!   scenarios past 2038, whose clock `SET timestamp` cannot reach).
//!
//! - `relaxed`: finished rows keep `claim_token`, the scan has no `ORDER BY`
//!   (hooks in table order); `claim_token_on_finished_rows = kept` and
//!   `hook_order = unordered`, each needed.
//!
//! - `dbsched`: a db-scheduler-like queue on one table of its own columns,
//!   under a declared policy (`[policy]`, `[state]`); passes the corpus,
//!   each knob set back fails exactly the scenarios it decides, and a
//!   revive fenced by the version alone fails the scan/apply race.
//!
//! SQLite always runs; PostgreSQL and MariaDB when `REAPCHECK_POSTGRES_URL`
//! and `REAPCHECK_MARIADB_URL` are set.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use reapcheck::feature::{self, Feature};
use reapcheck::runner;
use reapcheck::scenario::load_dir;
use reapcheck::target::Target;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().expect("the workspace exists")
}

fn port(name: &str) -> String {
    root().join("harness/tests/ports").join(name).display().to_string()
}

/// The targets to run: sqlite, and each server whose URL is set.
fn targets() -> Vec<Target> {
    let mut t = vec![Target::Sqlite];
    for server in [Target::Postgres, Target::Mariadb] {
        if std::env::var_os(server.url_variable()).is_some() {
            t.push(server);
        }
    }
    t
}

/// The closing line of a run of `n` scenarios on `targets`, `skipped` of
/// them skipped on each target.
fn closing(n: usize, targets: &[Target], skipped: usize) -> String {
    let mut line = format!("model: {n} passed, 0 failed");
    for t in targets {
        line.push_str(&format!("; {t}: {} passed, 0 failed, {skipped} skipped", n - skipped));
    }
    line
}

fn db_list(targets: &[Target]) -> String {
    targets.iter().map(|t| t.name()).collect::<Vec<_>>().join(",")
}

/// Runs the binary with only the URLs of `targets` set.
fn reapcheck(args: &[&str], targets: &[Target]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_reapcheck"));
    cmd.args(args).current_dir(root()).env_remove("REAPCHECK_REQUIRE");
    for t in Target::ALL {
        if !targets.contains(&t) {
            cmd.env_remove(t.url_variable());
        }
    }
    cmd.output().expect("the binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The scenario names whose lines on `target` start with `prefix`.
fn named(out: &str, prefix: &str, target: Target) -> BTreeSet<String> {
    out.lines()
        .filter(|l| l.starts_with(prefix) && l.contains(&format!("  on {} [", target.name())))
        .filter_map(|l| l[prefix.len()..].trim_start().split("  on ").next().map(str::to_owned))
        .collect()
}

fn scenario_count() -> usize {
    reapcheck::scenario::discover(&root().join("scenarios")).expect("scenarios load").len()
}

#[test]
fn the_whole_second_port_passes_the_corpus_at_its_resolution() {
    let targets = targets();
    let o = reapcheck(&["run", "--db", &db_list(&targets), "--dialects", &port("whole-second")], &targets);
    let out = text(&o.stdout);
    assert!(o.status.success(), "{out}{}", text(&o.stderr));
    let n = scenario_count();
    assert_eq!(out.lines().last(), Some(closing(n, &targets, 0).as_str()), "{out}");
    for t in &targets {
        assert!(out.contains(&format!("on {t}: time_resolution = 1s (")), "{out}");
        assert!(out.contains(&format!("{t} is compared with the model under this profile, not with the snapshots")));
        assert_eq!(named(&out, "ok ", *t).len(), n, "{out}");
    }
}

/// Without its profile, the whole-second MySQL port fails the sub-second
/// scenarios on MariaDB: the knob, not luck, makes it pass.
#[test]
fn the_whole_second_port_fails_without_its_profile() {
    if std::env::var_os(Target::Mariadb.url_variable()).is_none() {
        eprintln!("skipped: REAPCHECK_MARIADB_URL is not set");
        return;
    }
    let scratch = std::env::temp_dir().join(format!("reapcheck-ports-{}", std::process::id()));
    let dir = scratch.join("mysql");
    std::fs::create_dir_all(&dir).unwrap();
    for entry in std::fs::read_dir(Path::new(&port("whole-second")).join("mysql")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "sql") {
            std::fs::copy(&path, dir.join(path.file_name().unwrap())).unwrap();
        }
    }
    let o = reapcheck(&["run", "--db", "mariadb", "--dialects", &scratch.display().to_string()], &[Target::Mariadb]);
    let _ = std::fs::remove_dir_all(&scratch);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    let failed = named(&out, "FAIL ", Target::Mariadb);
    assert!(failed.contains("boundaries/sub-second-heartbeat") && failed.contains("time/sub-second-now"), "{out}");
}

#[test]
fn the_no_leases_port_skips_exactly_the_lease_scenarios() {
    let scenarios = load_dir(&root().join("scenarios"), &[]).expect("scenarios load");
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let needing: BTreeSet<String> = scenarios
        .iter()
        .filter(|s| {
            let model = runtime.block_on(runner::check_model(s));
            feature::needed(&s.scenario, &model.outcome).contains(&Feature::Leases)
        })
        .map(|s| s.name.clone())
        .collect();
    assert!(needing.contains("leases/deferral-row") && needing.len() >= 20, "{needing:?}");
    let targets = targets();
    let o = reapcheck(&["run", "--db", &db_list(&targets), "--dialects", &port("no-leases")], &targets);
    let out = text(&o.stdout);
    assert!(o.status.success(), "{out}{}", text(&o.stderr));
    for t in &targets {
        assert_eq!(named(&out, "skipped:", *t), needing, "{out}");
        let ok = named(&out, "ok ", *t);
        assert_eq!(ok.len() + needing.len(), scenarios.len(), "{out}");
        let reason = format!(": {} declares no leases (dialect.toml)", t.dialect());
        let on = format!("  on {} [", t.name());
        let with_reason = out.lines().filter(|l| l.starts_with("skipped:") && l.contains(&on) && l.ends_with(&reason));
        assert_eq!(with_reason.count(), needing.len(), "{out}");
    }
    assert_eq!(out.lines().last(), Some(closing(scenarios.len(), &targets, needing.len()).as_str()), "{out}");
}

#[test]
fn the_database_clock_port_passes_the_corpus() {
    let targets = targets();
    let o = reapcheck(&["run", "--db", &db_list(&targets), "--dialects", &port("dbclock")], &targets);
    let out = text(&o.stdout);
    let n = scenario_count();
    for t in &targets {
        let failed = named(&out, "FAIL ", *t);
        let expected: BTreeSet<String> = if *t == Target::Mariadb {
            // MariaDB 10.11's clock is 32-bit: SET timestamp refuses 2038-01-19T03:14:08Z
            // and later, as NOW() itself would then.
            ["time/across-2038-rollover", "time/after-2038"].map(String::from).into()
        } else {
            BTreeSet::new()
        };
        assert_eq!(failed, expected, "{out}");
        assert_eq!(named(&out, "ok ", *t).len(), n - expected.len(), "{out}");
    }
    if targets.contains(&Target::Mariadb) {
        assert!(out.contains("set_clock: the database refused it"), "{out}");
    } else {
        assert!(o.status.success(), "{out}{}", text(&o.stderr));
    }
}

#[test]
fn the_relaxed_port_passes_with_its_two_relaxations() {
    let targets = targets();
    let o = reapcheck(&["run", "--db", &db_list(&targets), "--dialects", &port("relaxed")], &targets);
    let out = text(&o.stdout);
    assert!(o.status.success(), "{out}{}", text(&o.stderr));
    assert_eq!(out.lines().last(), Some(closing(scenario_count(), &targets, 0).as_str()), "{out}");
}

/// The relaxed SQLite port under a profile holding only `knob`: the
/// scenarios it fails.
fn relaxed_failures_with_only(name: &str, knob: &str) -> BTreeSet<String> {
    let scratch = std::env::temp_dir().join(format!("reapcheck-ports-{name}-{}", std::process::id()));
    let dir = scratch.join("sqlite");
    std::fs::create_dir_all(&dir).unwrap();
    for entry in std::fs::read_dir(Path::new(&port("relaxed")).join("sqlite")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "sql") {
            std::fs::copy(&path, dir.join(path.file_name().unwrap())).unwrap();
        }
    }
    std::fs::write(dir.join("dialect.toml"), knob).unwrap();
    let o = reapcheck(&["run", "--dialects", &scratch.display().to_string()], &[Target::Sqlite]);
    let _ = std::fs::remove_dir_all(&scratch);
    named(&text(&o.stdout), "FAIL ", Target::Sqlite)
}

#[test]
fn each_relaxation_is_needed_by_the_relaxed_port() {
    let tokens_only = "claim_token_on_finished_rows = { value = \"kept\", reason = \"x\" }\n";
    let failed = relaxed_failures_with_only("tokens-only", tokens_only);
    // The port scans in table order: its hooks fire in that order, and its
    // scans list candidates in it.
    let order: BTreeSet<String> = [
        "boundaries/scan-candidates",
        "boundaries/scan-order-against-last-seen",
        "boundaries/scan-order-among-finished",
        "fencing/ids-differ-by-trailing-space",
        "outcomes/events-in-byte-order-of-id",
        "outcomes/events-in-id-order",
        "schema/legacy-ids-differ-by-trailing-space",
        "schema/legacy-scan-candidates",
        "schema/legacy-scan-order-against-last-seen",
        "schema/legacy-scan-order-among-finished",
    ]
    .map(String::from)
    .into();
    assert_eq!(failed, order, "the scan and the hooks follow table order");
    let order_only = "hook_order = { value = \"unordered\", reason = \"x\" }\n";
    let failed = relaxed_failures_with_only("order-only", order_only);
    assert!(failed.contains("fencing/stale-complete-after-reclaim"), "{failed:?}");
    assert!(failed.contains("outcomes/retries-exhausted"), "{failed:?}");
}

/// A copy of the SQLite dialect in a scratch folder, with `edit` applied to
/// each file's text and `profile` as its dialect.toml.
fn sqlite_copy(name: &str, profile: Option<&str>, edit: impl Fn(&str, String) -> String) -> PathBuf {
    let scratch = std::env::temp_dir().join(format!("reapcheck-ports-{name}-{}", std::process::id()));
    let dir = scratch.join("sqlite");
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&dir).unwrap();
    for entry in std::fs::read_dir(root().join("dialects/sqlite")).unwrap() {
        let path = entry.unwrap().path();
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        let edited = edit(&file, std::fs::read_to_string(&path).unwrap());
        std::fs::write(dir.join(&file), edited).unwrap();
    }
    if let Some(p) = profile {
        std::fs::write(dir.join("dialect.toml"), p).unwrap();
    }
    scratch
}

/// `text` without the statements that belong to `feature`.
fn without_feature(text: &str, feature: Feature) -> String {
    let mut keep = true;
    let mut out = String::new();
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("-- name:") {
            keep = reapcheck::dialect::contract::feature_of(name.trim()) != Some(feature);
        }
        if keep {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// Every other feature, declared absent in a SQLite copy without its
/// statements, skips exactly the scenarios that need it, with the reason.
#[test]
fn each_absent_feature_skips_exactly_the_scenarios_that_need_it() {
    let scenarios = load_dir(&root().join("scenarios"), &[]).expect("scenarios load");
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let needs: Vec<BTreeSet<Feature>> = scenarios
        .iter()
        .map(|s| feature::needed(&s.scenario, &runtime.block_on(runner::check_model(s)).outcome))
        .collect();
    for absent in [Feature::Legacy, Feature::WorkerFail, Feature::Hooks] {
        let present: Vec<String> = Feature::ALL.iter().filter(|f| **f != absent).map(|f| format!("\"{f}\"")).collect();
        let profile = format!("features = {{ value = [{}], reason = \"test\" }}\n", present.join(", "));
        let dir = sqlite_copy(absent.as_str(), Some(&profile), |_, t| without_feature(&t, absent));
        let o = reapcheck(&["run", "--dialects", &dir.display().to_string()], &[Target::Sqlite]);
        let _ = std::fs::remove_dir_all(&dir);
        let out = text(&o.stdout);
        assert!(o.status.success(), "{absent}: {out}{}", text(&o.stderr));
        let expected: BTreeSet<String> =
            scenarios.iter().zip(&needs).filter(|(_, n)| n.contains(&absent)).map(|(s, _)| s.name.clone()).collect();
        assert!(!expected.is_empty(), "no scenario needs {absent}");
        assert_eq!(named(&out, "skipped:", Target::Sqlite), expected, "{absent}: {out}");
        let reason = format!(": sqlite declares no {absent} (dialect.toml)");
        assert_eq!(out.lines().filter(|l| l.ends_with(&reason)).count(), expected.len(), "{out}");
    }
}

fn check_errors(dir: &Path) -> String {
    let o = reapcheck(&["check", "--dialects", &dir.display().to_string()], &[]);
    let _ = std::fs::remove_dir_all(dir);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stdout));
    text(&o.stderr)
}

#[test]
fn a_bad_profile_is_refused_at_file_line_and_column() {
    let dir = sqlite_copy("bad-key", Some("# port\n[time_resolution]\nvalue = \"1s\"\nwhy = \"x\"\n"), |_, t| t);
    let err = check_errors(&dir);
    // Named as scenario files are: the path as given (absolute here).
    let toml = |dir: &Path| dir.join("sqlite/dialect.toml").display().to_string();
    assert!(err.contains(&format!("error: {}:4:1: unknown field `why`", toml(&dir))), "{err}");
    let dir = sqlite_copy("bad-feature", Some("features = { value = [\"cron\"], reason = \"x\" }\n"), |_, t| t);
    let err = check_errors(&dir);
    assert!(err.contains(&format!("error: {}:1:23: unknown variant `cron`", toml(&dir))), "{err}");
    let dir = sqlite_copy("no-reason", Some("hook_order = { value = \"unordered\" }\n"), |_, t| t);
    let err = check_errors(&dir);
    assert!(err.contains(&format!("error: {}:1:", toml(&dir))) && err.contains("missing field `reason`"), "{err}");
}

#[test]
fn a_feature_declared_absent_but_defined_or_present_but_missing_names_both() {
    let without_leases = "features = { value = [\"legacy\", \"worker_fail\", \"hooks\"], reason = \"old\" }\n";
    let dir = sqlite_copy("absent-defined", Some(without_leases), |_, t| t);
    let err = check_errors(&dir);
    assert!(
        err.contains(&format!("{}:", dir.join("sqlite/leases.sql").display()))
            && err.contains(&format!(
                "statement `lease_acquire` belongs to feature `leases`, which {} declares absent",
                dir.join("sqlite/dialect.toml").display()
            )),
        "{err}"
    );
    let dir = sqlite_copy("present-missing", None, |file, t| if file == "leases.sql" { String::new() } else { t });
    let err = check_errors(&dir);
    assert!(err.contains("missing statement `lease_defer` of feature `leases`"), "{err}");
}

#[test]
fn a_statement_the_lint_rejects_is_reported_once() {
    let dir = sqlite_copy("rejected-once", None, |file, t| {
        if file == "worker.sql" {
            t.replace("WHERE id = :id AND status = 'processing'", "WHERE id = :job AND status = 'processing'")
        } else {
            t
        }
    });
    let err = check_errors(&dir);
    assert!(err.contains("statement `heartbeat` uses `:job`"), "{err}");
    assert!(!err.contains("missing statement `heartbeat`"), "{err}");
}

/// The dbsched port (a db-scheduler-like queue on one table,
/// `scheduled_tasks`) copied to a scratch folder, every file of every
/// dialect passed through `edit(dialect, file, text)`.
fn dbsched_copy(name: &str, edit: impl Fn(&str, &str, String) -> String) -> PathBuf {
    let scratch = std::env::temp_dir().join(format!("reapcheck-dbsched-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    for dialect in ["sqlite", "postgres", "mysql"] {
        let dir = scratch.join(dialect);
        std::fs::create_dir_all(&dir).unwrap();
        for entry in std::fs::read_dir(Path::new(&port("dbsched")).join(dialect)).unwrap() {
            let path = entry.unwrap().path();
            let file = path.file_name().unwrap().to_string_lossy().into_owned();
            std::fs::write(dir.join(&file), edit(dialect, &file, std::fs::read_to_string(&path).unwrap())).unwrap();
        }
    }
    scratch
}

/// A MariaDB failure that says only that the server has no time zone
/// tables (a server without them fails every named-zone scenario, the
/// reference dialects too; ci/mysql-timezones.sh loads them).
const NO_ZONE_TABLES: &str = "the server has no time zone tables";

/// The scenarios that fail on `target`, without those failing only for
/// want of the server's time zone tables ([`NO_ZONE_TABLES`]); and those.
fn port_failures(out: &str, target: Target) -> (BTreeSet<String>, BTreeSet<String>) {
    let lines: Vec<&str> = out.lines().collect();
    let (mut failed, mut no_zones) = (BTreeSet::new(), BTreeSet::new());
    let on = format!("  on {} [", target.name());
    for (i, line) in lines.iter().enumerate() {
        let Some(rest) = line.strip_prefix("FAIL ").filter(|_| line.contains(&on)) else { continue };
        let name = rest.trim_start().split("  on ").next().unwrap_or_default().to_owned();
        if lines.get(i + 1).is_some_and(|next| next.contains(NO_ZONE_TABLES)) {
            no_zones.insert(name);
        } else {
            failed.insert(name);
        }
    }
    (failed, no_zones)
}

/// `[policy.<knob>]` and its two lines taken out of a dialect.toml.
fn without_knob(toml: &str, knob: &str) -> String {
    let header = format!("[policy.{knob}]\n");
    let start = toml.find(&header).unwrap_or_else(|| panic!("the port declares `{knob}`"));
    let mut end = start;
    for _ in 0..3 {
        end += toml[end..].find('\n').expect("a knob is three lines") + 1;
    }
    format!("{}{}", &toml[..start], toml[end..].trim_start_matches('\n'))
}

#[test]
fn the_dbsched_port_passes_the_corpus_under_its_policy() {
    let targets = targets();
    let o = reapcheck(&["run", "--db", &db_list(&targets), "--dialects", &port("dbsched")], &targets);
    let out = text(&o.stdout);
    let n = scenario_count();
    let mut zone_failures = 0;
    for t in &targets {
        let (failed, no_zones) = port_failures(&out, *t);
        assert_eq!(failed, BTreeSet::new(), "{out}");
        zone_failures += no_zones.len();
        let (ok, skipped) = (named(&out, "ok ", *t), named(&out, "skipped:", *t));
        assert_eq!(ok.len() + skipped.len() + no_zones.len(), n, "{out}");
        assert!(ok.len() >= 60, "most of the corpus is judged: {out}");
        // What the queue lacks, and nothing else, is skipped.
        let d = t.dialect();
        let reasons = ["no leases", "no legacy", "no hooks", "queues = none"]
            .map(|r| format!(": {d} declares {r} (dialect.toml)"));
        let on = format!("  on {} [", t.name());
        for line in out.lines().filter(|l| l.starts_with("skipped:") && l.contains(&on)) {
            assert!(reasons.iter().any(|r| line.ends_with(r.as_str())), "{line}");
        }
        assert!(out.contains(&format!("{t} is compared with the model under this profile, not with the snapshots")));
        assert!(out.contains("staleness = <= ("), "{out}");
    }
    if zone_failures == 0 {
        assert!(o.status.success(), "{out}{}", text(&o.stderr));
    }
}

/// Each policy knob the dbsched port declares, and the scenarios a copy
/// with that one knob set back to the reference (its SQL unchanged) fails:
/// the scenarios the knob decides. Derived by running, on sqlite, postgres
/// and mariadb alike.
const DBSCHED_KNOBS: &[(&str, &[&str])] = &[
    (
        "staleness",
        &[
            "batch/dead-behind-a-full-batch",
            "boundaries/exact-cutoff",
            "boundaries/scan-floor",
            "boundaries/sub-second-steps",
            "grace/beat-stamped-before-claim",
            "time/dst-fall-back-fold",
            "time/dst-fall-back-setup-rows",
            "time/dst-spring-forward-gap",
            "time/dst-spring-forward-setup-rows",
            "time/london-fold-heartbeat",
            "time/london-fold-setup-rows",
            "time/london-gap-heartbeat",
            "time/london-gap-setup-rows",
            "time/sub-second-now",
        ],
    ),
    (
        "claim_window",
        &[
            "app-zone/fall-back-live-job",
            "app-zone/odd-offset",
            "app-zone/spring-forward-dead-job",
            "batch/dead-behind-a-full-batch",
            "boundaries/claim-window-exact",
            "boundaries/claim-window-exact-after-claim",
            "boundaries/claim-window-short-timeout",
            "boundaries/run-at-now",
            "boundaries/sub-second-steps",
            "claim/clears-previous-heartbeat",
            "claim/not-pending",
            "claim/writes-class-timeout",
            "fencing/labels-differ-by-trailing-space",
            "fencing/stale-complete-after-reap",
            "fencing/stale-complete-after-reclaim",
            "fencing/stale-complete-while-processing",
            "fencing/stale-fail",
            "fencing/stale-heartbeat",
            "grace/beat-older-than-claim",
            "grace/beat-stamped-before-claim",
            "grace/class-override-longer",
            "grace/never-beat",
            "outcomes/backoff-doubles",
            "outcomes/backoff-max-delay-cap",
            "outcomes/events-in-byte-order-of-id",
            "outcomes/events-in-id-order",
            "outcomes/fenced-fires-no-hook",
            "outcomes/last-allowed-retry",
            "outcomes/not-idempotent-first-match",
            "outcomes/not-idempotent-interrupted",
            "outcomes/reaper-retry-fires-no-hook",
            "outcomes/retries-exhausted",
            "races/apply-uses-scan-clock",
            "races/reclaim-between-scan-and-apply",
            "races/skewed-reclaim-between-scan-and-apply",
            "races/two-reapers-one-hook",
            "races/two-reapers-one-job",
            "time/across-2038-rollover",
            "time/dst-fall-back-fold",
            "time/dst-spring-forward-gap",
            "time/dst-spring-forward-setup-rows",
            "time/london-fold-heartbeat",
            "time/london-fold-setup-rows",
            "time/london-gap-claim-and-run-at",
            "time/london-gap-heartbeat",
            "time/london-gap-setup-rows",
            "time/sub-second-now",
            "windows/claim-timeout-null-uses-poll-timeout",
            "windows/claim-timeout-zero-uses-poll-timeout",
            "windows/grace-longer-than-claim-window",
            "windows/keeps-beating-past-timeout",
            "windows/never-beat-vs-beat",
            "windows/poll-timeout-negative-means-300",
            "windows/poll-timeout-zero-means-300",
        ],
    ),
    (
        "retry",
        &[
            "app-zone/odd-offset",
            "app-zone/spring-forward-dead-job",
            "batch/dead-behind-1000-live",
            "batch/dead-behind-a-full-batch",
            "boundaries/claim-window-exact",
            "boundaries/claim-window-exact-after-claim",
            "boundaries/exact-cutoff",
            "boundaries/scan-floor",
            "boundaries/sub-second-heartbeat",
            "boundaries/sub-second-steps",
            "claim/clears-previous-heartbeat",
            "claim/writes-class-timeout",
            "fencing/labels-differ-by-trailing-space",
            "fencing/stale-complete-after-reap",
            "fencing/stale-complete-after-reclaim",
            "fencing/stale-complete-while-processing",
            "fencing/stale-fail",
            "fencing/stale-heartbeat",
            "grace/beat-older-than-claim",
            "grace/beat-stamped-before-claim",
            "grace/beat-stamped-before-claim-setup",
            "grace/class-override-longer",
            "grace/class-override-off",
            "grace/floor-reclaims-past-it",
            "grace/grace-off",
            "grace/never-beat",
            "grace/stopped-heartbeats",
            "outcomes/backoff-doubles",
            "outcomes/backoff-max-delay-cap",
            "outcomes/events-in-byte-order-of-id",
            "outcomes/events-in-id-order",
            "outcomes/fail-and-interrupt-guards",
            "outcomes/fenced-fires-no-hook",
            "outcomes/last-allowed-retry",
            "outcomes/not-idempotent-first-match",
            "outcomes/not-idempotent-interrupted",
            "outcomes/reaper-retry-fires-no-hook",
            "outcomes/retries-exhausted",
            "races/apply-uses-scan-clock",
            "races/reclaim-between-scan-and-apply",
            "races/skewed-reclaim-between-scan-and-apply",
            "races/two-reapers-beat-interrupt",
            "races/two-reapers-beat-retries-exhausted",
            "races/two-reapers-beat-retry",
            "races/two-reapers-one-hook",
            "races/two-reapers-one-job",
            "schema/unloadable-class",
            "schema/unloadable-class-longer-grace",
            "time/across-2038-rollover",
            "time/dst-fall-back-fold",
            "time/dst-fall-back-setup-rows",
            "time/dst-spring-forward-gap",
            "time/dst-spring-forward-setup-rows",
            "time/london-fold-heartbeat",
            "time/london-fold-setup-rows",
            "time/london-gap-claim-and-run-at",
            "time/london-gap-heartbeat",
            "time/london-gap-setup-rows",
            "time/sub-second-now",
            "windows/claim-timeout-null-uses-poll-timeout",
            "windows/claim-timeout-zero-uses-poll-timeout",
            "windows/grace-off-window-from-last-beat",
            "windows/grace-shorter-than-claim-window",
            "windows/never-beat-vs-beat",
            "windows/poll-timeout-negative-means-300",
            "windows/poll-timeout-zero-means-300",
            "windows/set-grace-mid-scenario",
        ],
    ),
    // The port has no queue column: the queue scenarios, skipped under
    // `queues = none`, run and fail (the other two pass: all their jobs
    // are reaped anyway).
    (
        "queues",
        &[
            "windows/queue-name-inside-another",
            "windows/queue-names-exact",
            "windows/queue-scoped-reap",
            "windows/queue-scoped-reap-other-queue",
        ],
    ),
    // No scenario fails with these three set back. give_up and
    // non_idempotent decide only reaps that end in `failed` or
    // `interrupted`; set back to the reference, such a reap fires a final
    // hook, and the port declares no hooks, so those scenarios become
    // skips, not failures (the features needed follow from the model under
    // the policy in effect). fence = row_version is judged exactly like the
    // claim token (policy.rs).
    ("give_up", &[]),
    ("non_idempotent", &[]),
    ("fence", &[]),
];

#[test]
fn each_policy_knob_of_the_dbsched_port_decides_its_scenarios() {
    let targets = targets();
    for (knob, expected) in DBSCHED_KNOBS {
        let dir = dbsched_copy(knob, |_, file, t| if file == "dialect.toml" { without_knob(&t, knob) } else { t });
        let o = reapcheck(&["run", "--db", &db_list(&targets), "--dialects", &dir.display().to_string()], &targets);
        let _ = std::fs::remove_dir_all(&dir);
        let out = text(&o.stdout);
        assert!(!out.contains(&format!("; {knob} = ")), "{knob} is set back: {out}");
        for t in &targets {
            let (failed, no_zones) = port_failures(&out, *t);
            let expected: BTreeSet<String> =
                expected.iter().map(|s| s.to_string()).filter(|s| !no_zones.contains(s)).collect();
            assert_eq!(failed, expected, "{knob} on {t}: {out}");
        }
    }
}

/// `grace_off = never` is what `claim_window = none` needs: set back alone,
/// the profile is refused, at the knob that needs it.
#[test]
fn the_dbsched_port_without_grace_off_never_is_refused() {
    let dir =
        dbsched_copy("grace-off", |_, file, t| if file == "dialect.toml" { without_knob(&t, "grace_off") } else { t });
    let line = std::fs::read_to_string(dir.join("sqlite/dialect.toml"))
        .unwrap()
        .lines()
        .position(|l| l == "[policy.claim_window]")
        .expect("the copy keeps claim_window")
        + 3;
    let err = check_errors(&dir);
    let at = format!(
        "error: {}:{line}:10: `claim_window = none` with `grace_off = allowed`",
        dir.join("sqlite/dialect.toml").display()
    );
    assert!(err.contains(&at) && err.contains("could never be reclaimed"), "{err}");
    // Nothing else: a refused profile declares no features, so no
    // statement is reported missing for the reference's.
    assert_eq!(err.lines().filter(|l| l.starts_with("error:")).count(), 3, "one per dialect: {err}");
}

/// The revive's guard without its `last_heartbeat <= :cutoff` recheck: the
/// version fence alone, which a heartbeat does not bump, so a beat landing
/// between the scan and the revive is lost
/// (`races/heartbeat-between-scan-and-apply`), and, since the scan only has
/// the 30 s floor, a job still inside its grace is revived.
#[test]
fn the_dbsched_revive_without_its_heartbeat_recheck_fails() {
    let targets = targets();
    let dir = dbsched_copy("no-recheck", |_, file, t| {
        if file != "reaper.sql" {
            return t;
        }
        let start = t.find("-- name: reap_retry").unwrap();
        let end = t[start + 1..].find("-- name:").map_or(t.len(), |i| start + 1 + i);
        let revive = t[start..end].replace("\n   AND last_heartbeat <= :cutoff", "");
        assert_ne!(revive, t[start..end], "the recheck is there to drop");
        format!("{}{revive}{}", &t[..start], &t[end..])
    });
    let o = reapcheck(&["run", "--db", &db_list(&targets), "--dialects", &dir.display().to_string()], &targets);
    let _ = std::fs::remove_dir_all(&dir);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    let expected: BTreeSet<String> = [
        "app-zone/fall-back-live-job",
        "batch/dead-behind-1000-live",
        "batch/dead-behind-a-full-batch",
        "boundaries/claim-window-short-timeout",
        "boundaries/fractional-clock-scan-floor",
        "boundaries/sub-second-heartbeat",
        "claim/writes-class-timeout",
        "grace/class-override-longer",
        "grace/recent-beat",
        "races/heartbeat-between-scan-and-apply",
        "windows/grace-longer-than-claim-window",
        "windows/grace-shorter-than-claim-window",
        "windows/keeps-beating-past-timeout",
    ]
    .map(String::from)
    .into();
    for t in &targets {
        assert_eq!(port_failures(&out, *t).0, expected, "{t}: {out}");
    }
    // The invariants catch it, not only the outcome comparison: the revive
    // takes the job whose beat landed between the scan and the apply.
    let race = "FAIL     races/heartbeat-between-scan-and-apply  on sqlite [";
    let detail = out.split(race).nth(1).expect("the race scenario fails on sqlite");
    let detail = detail.split("\nFAIL ").next().unwrap_or(detail);
    assert!(detail.contains("invariant `no early reclaim` broken at step 3: job `a` was reclaimed"), "{detail}");
}

/// A copy of the dbsched port whose postgres dialect says `<` where the
/// others say `<=`.
fn dbsched_with_mixed_staleness() -> PathBuf {
    dbsched_copy("mixed", |dialect, file, text| match (dialect, file) {
        ("postgres", "dialect.toml") => {
            text.replacen("[policy.staleness]\nvalue = \"<=\"", "[policy.staleness]\nvalue = \"<\"", 1)
        }
        _ => text,
    })
}

#[test]
fn dialects_of_one_port_with_different_policies_are_refused_before_anything_runs() {
    let dir = dbsched_with_mixed_staleness();
    let shown = dir.display().to_string();
    let o = reapcheck(&["check", "--dialects", &shown], &[]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{}{err}", text(&o.stdout));
    assert!(err.contains("dialects declare different policies"), "{err}");
    assert!(err.contains("(staleness: `<=` in mysql, `<` in postgres)"), "{err}");
    let o = reapcheck(&["run", "--dialects", &shown, "--db", "sqlite,postgres", "--allow-skip"], &[]);
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert_eq!(o.status.code(), Some(2), "{out}{err}");
    assert!(err.contains("the mysql and postgres dialects declare different policies"), "{err}");
    assert!(!out.contains("ok "), "nothing ran\n{out}");
    // A leg that runs one database is refused too: the port's policy is
    // one, whichever dialect a leg selects.
    let o = reapcheck(&["run", "--dialects", &shown, "--db", "sqlite", "--exact", "grace/recent-beat"], &[]);
    assert_eq!(o.status.code(), Some(2), "{}{}", text(&o.stdout), text(&o.stderr));
    assert!(text(&o.stderr).contains("(staleness: `<=` in mysql, `<` in postgres)"), "{}", text(&o.stderr));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn race_skips_a_port_with_a_policy_and_a_misnamed_folder_is_named() {
    let o = reapcheck(&["race", "--dialects", &port("dbsched"), "--db", "sqlite", "--seconds", "1"], &[]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "nothing was raced, so nothing passed\n{out}");
    assert!(
        out.contains("skipped: race on sqlite: the sqlite dialect declares a policy (absent = [attempts,"),
        "{out}"
    );
    assert!(out.contains("0 passed, 0 failed, 1 skipped"), "{out}");

    let scratch = std::env::temp_dir().join(format!("reapcheck-ports-misnamed-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(scratch.join("mariadb")).unwrap();
    let o = reapcheck(&["run", "--dialects", &scratch.display().to_string(), "--db", "mariadb"], &[]);
    let err = text(&o.stderr);
    let _ = std::fs::remove_dir_all(&scratch);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("mariadb/ is not read: the mariadb target runs the `mysql` dialect, so rename it mysql/"),
        "{err}"
    );
}
