//! `reapcheck bench --compare --adapter`: the reference adapter
//! (`reapcheck adapter serve`, docs/adapter-protocol.md) against SQL mode
//! on the database it drives, per scenario.
//!
//! Each round is one `reapcheck run --db <sql>,adapter:reference-<sql>
//! --jobs 1 --report DIR` in a scratch project whose `reapcheck.toml`
//! declares `reference-<sql>` as this binary's `adapter serve` (so both
//! sides are the same build); the case times (microseconds) come from its
//! outcomes.json.
//! Per scenario, the ratio adapter / SQL mode of each round; reported is
//! the median over rounds, summarised over the scenarios.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use super::{Settings, cpus, load_average, median, timed};
use crate::report::outcomes::{self, CaseResult, LegOutcomes};

/// The user's project settings that `run` and `adapter serve` read,
/// resolved (flag, then environment, then `reapcheck.toml`), folders
/// absolute: written into the scratch project's `reapcheck.toml`, whose
/// runs start in another folder and would otherwise read the built-in
/// corpus and SQL.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProjectInputs {
    /// Scenario sets: `builtin` or absolute folders.
    pub scenarios: Vec<String>,
    /// The dialects folder, absolute; `None` for the built-in SQL.
    pub dialects: Option<String>,
    /// `builtin_dialects`, as the project lists them.
    pub builtin_dialects: Vec<String>,
}

/// Case times of one run's `outcomes.json`, in microseconds:
/// (target, scenario) -> microseconds, skipped cases left out.
///
/// Not junit.xml's times: those are rounded to milliseconds, and a SQLite
/// case takes well under one, so most SQL-mode cases read `0.000` (and
/// were left out) and every ratio was a ratio of whole milliseconds.
pub fn case_times(outcomes: &LegOutcomes) -> BTreeMap<(String, String), f64> {
    outcomes
        .cases
        .iter()
        .filter(|c| c.result != CaseResult::Skipped)
        .map(|c| ((c.target.clone(), c.scenario.clone()), c.elapsed_us as f64))
        .collect()
}

/// Runs the rounds for the SQL target `sql` and prints its lines; false
/// when anything failed.
pub fn compare_adapter(settings: &Settings, sql: &str) -> bool {
    let adapter = format!("adapter:reference-{sql}");
    let project = settings.scripts.join(format!("adapter-{sql}"));
    if let Err(e) = write_project(&project, settings, sql) {
        say!("{adapter}: not compared: {e}");
        return false;
    }
    say!(
        "{adapter}: {} of run --db {sql},{adapter} --jobs 1 (case times in microseconds from its outcomes.json)",
        super::rounds(settings.rounds)
    );
    let load_before = load_average();
    let mut per_scenario: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let (mut sql_totals, mut adapter_totals) = (Vec::new(), Vec::new());
    // Per round, the adapter's slowest case and its share of the adapter's
    // case time ([`slowest_case_note`]).
    let mut slowest: Vec<(f64, String)> = Vec::new();
    for round in 1..=settings.rounds {
        if let Some(signal) = super::stopped() {
            say!("{adapter}: interrupted by {signal} before round {round}: no figure");
            return false;
        }
        let report = project.join("report");
        let mut cmd = std::process::Command::new(&settings.exe);
        cmd.current_dir(&project)
            .args([
                "run",
                "--db",
                &format!("{sql},{adapter}"),
                "--jobs",
                "1",
                "--quiet",
                "--coverage-min",
                "0",
                "--report",
            ])
            .arg(&report)
            .args(&settings.run_args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .env_remove(super::capture::CAPTURE_ENV)
            .env_remove(crate::reach::REQUIRE_VARIABLE)
            // Resolved into the scratch project's file (relative folders
            // would be read from the scratch folder).
            .env_remove(crate::config::SCENARIOS_VARIABLE)
            .env_remove(crate::config::DIALECTS_VARIABLE);
        if let Err(e) = timed(cmd, &format!("{adapter}: run (round {round})")) {
            super::say_stopped_or(&adapter, &format!("in round {round}"), format_args!("FAILED: {e}"));
            return false;
        }
        let file = report.join(outcomes::FILE_NAME);
        let times = match outcomes::read(&file) {
            Ok(o) => case_times(&o),
            Err(e) => {
                say!("{adapter}: FAILED: {e}");
                return false;
            }
        };
        let (mut sql_total, mut adapter_total) = (0.0, 0.0);
        let mut round_slowest = (0.0, String::new());
        for ((target, scenario), t) in &times {
            if target != sql {
                continue;
            }
            let Some(a) = times.get(&(adapter.clone(), scenario.clone())) else { continue };
            if *t > 0.0 {
                per_scenario.entry(scenario.clone()).or_default().push(a / t);
                sql_total += t;
                adapter_total += a;
                if *a > round_slowest.0 {
                    round_slowest = (*a, scenario.clone());
                }
            }
        }
        sql_totals.push(sql_total / 1e6);
        adapter_totals.push(adapter_total / 1e6);
        if adapter_total > 0.0 {
            slowest.push((round_slowest.0 / adapter_total, round_slowest.1));
        }
    }
    let mut ratios: Vec<(f64, String)> =
        per_scenario.iter().filter_map(|(name, r)| median(r).map(|m| (m, name.clone()))).collect();
    if ratios.is_empty() {
        say!("{adapter}: FAILED: no scenario ran on both {sql} and {adapter}");
        return false;
    }
    ratios.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal));
    let values: Vec<f64> = ratios.iter().map(|r| r.0).collect();
    let p90 = p90(&values);
    let (max, worst) = ratios.last().expect("not empty");
    let over = values.iter().filter(|r| **r > 2.0).count();
    let corpus: Vec<f64> = adapter_totals.iter().zip(&sql_totals).map(|(a, s)| a / s.max(1e-9)).collect();
    say!(
        "{adapter} / {sql}, per scenario: median {:.2}x   p90 {p90:.2}x   max {max:.2}x ({worst})   over 2x: {over} of {}   \
         (medians of {})",
        median(&values).unwrap_or(0.0),
        values.len(),
        super::rounds(settings.rounds)
    );
    say!(
        "{adapter} / {sql}, corpus case time: {:.2}x   medians {adapter} {}   {sql} {}   (load average {load_before} \
         before, {} after; {} CPUs)",
        median(&corpus).unwrap_or(0.0),
        super::secs(Duration::from_secs_f64(median(&adapter_totals).unwrap_or(0.0))),
        super::secs(Duration::from_secs_f64(median(&sql_totals).unwrap_or(0.0))),
        load_average(),
        cpus()
    );
    if let Some(note) = slowest_case_note(&slowest) {
        say!("{adapter}: {note}");
    }
    true
}

/// The 90th percentile of `sorted` (ascending, not empty), by nearest
/// rank ([`super::nearest_rank`]), so never below the median.
pub fn p90(sorted: &[f64]) -> f64 {
    super::nearest_rank(sorted, 90).unwrap_or(f64::NAN)
}

/// The note said when the adapter's slowest case is more than
/// [`super::START_UP_SHARE`] of its case time (the median share over the
/// rounds, `(share, scenario)` per round): the corpus case time ratio is
/// then mostly that one case. The adapter's process starts inside a case
/// (the first it plays, and again after a failure or a change of time
/// zone), so with few scenarios that case is mostly the adapter's
/// start-up. The case times leave reapcheck's own process start-up out:
/// a count of scenarios says nothing about this; the case times do.
pub fn slowest_case_note(slowest: &[(f64, String)]) -> Option<String> {
    let shares: Vec<f64> = slowest.iter().map(|s| s.0).collect();
    let share = median(&shares)?;
    if share <= super::START_UP_SHARE {
        return None;
    }
    // The scenario of the round nearest the median share.
    let (_, scenario) = slowest.iter().min_by(|a, b| (a.0 - share).abs().total_cmp(&(b.0 - share).abs()))?;
    Some(format!(
        "note: its slowest case ({scenario}) is {:.0}% of its case time (median over rounds): the corpus case time \
         ratio of so few scenarios is mostly that case, and the adapter's process start-up is inside its first \
         case (where --only narrowed the corpus, compare more scenarios for figures)",
        share * 100.0
    ))
}

/// A scratch project whose `reapcheck.toml` declares `reference-<sql>` as
/// this binary's `adapter serve --db <sql>`, with the user's scenario sets,
/// dialects folder and `builtin_dialects` ([`ProjectInputs`]), which both
/// the run and `adapter serve` read from it.
fn write_project(project: &Path, settings: &Settings, sql: &str) -> Result<(), String> {
    std::fs::create_dir_all(project).map_err(|e| format!("{}: {e}", project.display()))?;
    let toml = project_toml(&settings.exe.to_string_lossy(), settings.project.as_ref(), sql);
    let path = project.join("reapcheck.toml");
    std::fs::write(&path, toml).map_err(|e| format!("{}: {e}", path.display()))
}

/// The scratch project's `reapcheck.toml` (see [`write_project`]).
fn project_toml(exe: &str, inputs: Option<&ProjectInputs>, sql: &str) -> String {
    let list = |items: &[String]| items.iter().map(|c| toml_string(c)).collect::<Vec<_>>().join(", ");
    let mut toml = "# Written by reapcheck bench --compare --adapter.\n".to_owned();
    if let Some(inputs) = inputs {
        if !inputs.scenarios.is_empty() {
            toml.push_str(&format!("scenarios = [{}]\n", list(&inputs.scenarios)));
        }
        if let Some(dialects) = &inputs.dialects {
            toml.push_str(&format!("dialects = {}\n", toml_string(dialects)));
        }
        if !inputs.builtin_dialects.is_empty() {
            toml.push_str(&format!("builtin_dialects = [{}]\n", list(&inputs.builtin_dialects)));
        }
    }
    let command = [exe.to_owned(), "adapter".into(), "serve".into(), "--db".into(), sql.into()];
    toml.push_str(&format!(
        "[adapters.reference-{sql}]\ncommand = [{}]\ndatabase = \"{sql}\"\ntimeout_seconds = 120\n",
        list(&command)
    ));
    toml
}

/// A TOML basic string holding `text` exactly: a JSON string is one (its
/// escapes `\"`, `\\`, `\n`, `\uXXXX` are TOML's too).
fn toml_string(text: &str) -> String {
    serde_json::to_string(text).expect("a string serializes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p90_is_by_nearest_rank_and_never_below_the_median() {
        assert_eq!(p90(&[1.26, 1.43]), 1.43);
        assert_eq!(p90(&[1.0]), 1.0);
        let ten: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(p90(&ten), 9.0);
        let many: Vec<f64> = (1..=146).map(f64::from).collect();
        assert_eq!(p90(&many), 132.0);
        for n in 1..50 {
            let v: Vec<f64> = (1..=n).map(f64::from).collect();
            assert!(p90(&v) >= median(&v).unwrap(), "{n}");
        }
    }

    #[test]
    fn the_scratch_project_reads_the_users_scenarios_and_dialects() {
        let inputs = ProjectInputs {
            scenarios: vec!["builtin".into(), "/home/u/q \"x\"\\\u{1}/scenarios".into()],
            dialects: Some("/home/u/q/dialects".into()),
            builtin_dialects: vec!["sqlite".into()],
        };
        let text = project_toml("/bin/rc", Some(&inputs), "sqlite");
        let parsed: toml::Table = toml::from_str(&text).expect(&text);
        assert_eq!(parsed["scenarios"].as_array().unwrap()[1].as_str(), Some("/home/u/q \"x\"\\\u{1}/scenarios"));
        assert_eq!(parsed["dialects"].as_str(), Some("/home/u/q/dialects"));
        assert_eq!(parsed["builtin_dialects"].as_array().unwrap()[0].as_str(), Some("sqlite"));
        let adapter = &parsed["adapters"]["reference-sqlite"];
        assert_eq!(adapter["command"].as_array().unwrap()[0].as_str(), Some("/bin/rc"));
        // Without the user's settings: only the adapter.
        let bare: toml::Table = toml::from_str(&project_toml("/bin/rc", None, "sqlite")).unwrap();
        assert_eq!(bare.keys().collect::<Vec<_>>(), ["adapters"]);
    }

    #[test]
    fn the_slowest_case_note_is_decided_by_its_share_of_the_case_time() {
        let rounds = |shares: &[f64]| shares.iter().map(|s| (*s, format!("s{s}"))).collect::<Vec<_>>();
        assert_eq!(slowest_case_note(&rounds(&[0.1, 0.2, 0.6])), None, "the median share, 20%");
        let note = slowest_case_note(&rounds(&[0.7, 0.9, 0.2])).unwrap();
        assert!(note.starts_with("note: its slowest case (s0.7) is 70% of its case time (median over rounds): "));
        assert_eq!(slowest_case_note(&[]), None);
    }

    #[test]
    fn case_times_are_microseconds_and_leave_skipped_cases_out() {
        let case = |target: &str, scenario: &str, result: CaseResult, elapsed_us| outcomes::CaseOutcome {
            scenario: scenario.to_owned(),
            concern: "a".to_owned(),
            target: target.to_owned(),
            server: "x".to_owned(),
            result,
            reason: None,
            outcome_hash: None,
            diff: None,
            trace: None,
            rerun: None,
            elapsed_us,
        };
        let leg = LegOutcomes {
            schema_version: outcomes::SCHEMA_VERSION,
            reapcheck_version: "0".to_owned(),
            leg: "l".to_owned(),
            corpus_hash: "h".to_owned(),
            filters: Vec::new(),
            interrupted: false,
            targets: Vec::new(),
            cases: vec![
                case("sqlite", "a/b", CaseResult::Pass, 310),
                case("sqlite", "a/c", CaseResult::Skipped, 20),
                case("adapter:reference-sqlite", "a/b", CaseResult::Pass, 470),
            ],
        };
        let times = case_times(&leg);
        assert_eq!(times.len(), 2, "{times:?}");
        // Under a millisecond, as junit.xml would have rounded it to 0.000.
        assert_eq!(times[&("sqlite".to_owned(), "a/b".to_owned())], 310.0);
        assert_eq!(times[&("adapter:reference-sqlite".to_owned(), "a/b".to_owned())], 470.0);
    }
}
