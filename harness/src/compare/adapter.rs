//! `reapcheck bench --compare --adapter`: the reference adapter
//! (`reapcheck adapter serve`, docs/adapter-protocol.md) against SQL mode
//! on the database it drives, per scenario.
//!
//! Each round is one `reapcheck run --db <sql>,adapter:reference-<sql>
//! --jobs 1 --report DIR` in a scratch project whose `reapcheck.toml`
//! declares `reference-<sql>` as this binary's `adapter serve` (so both
//! sides are the same build); the case times come from its junit.xml.
//! Per scenario, the ratio adapter / SQL mode of each round; reported is
//! the median over rounds, summarised over the scenarios.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use super::{Settings, cpus, load_average, median, timed};

/// Case times of one junit.xml: (target, scenario) -> seconds, skipped
/// cases left out.
pub fn case_times(junit: &str) -> BTreeMap<(String, String), f64> {
    let case = regex::Regex::new(r#"<testcase name="([^"]*)" classname="([^"]*)" time="([0-9.]+)"(/?)>"#)
        .expect("a valid pattern");
    let mut out = BTreeMap::new();
    let mut rest = junit;
    while let Some(m) = case.captures(rest) {
        let whole = m.get(0).expect("matched");
        let body_end = if &m[4] == "/" {
            whole.end()
        } else {
            rest[whole.end()..].find("</testcase>").map_or(rest.len(), |n| whole.end() + n)
        };
        let skipped = rest[whole.end()..body_end].contains("<skipped");
        if let (false, Ok(t)) = (skipped, m[3].parse::<f64>()) {
            out.insert((m[2].to_owned(), m[1].to_owned()), t);
        }
        rest = &rest[body_end..];
    }
    out
}

/// Runs the rounds for the SQL target `sql` and prints its lines; false
/// when anything failed.
pub fn compare_adapter(settings: &Settings, sql: &str) -> bool {
    let adapter = format!("adapter:reference-{sql}");
    let project = settings.scripts.join(format!("adapter-{sql}"));
    if let Err(e) = write_project(&project, settings, sql) {
        println!("{adapter}: not compared: {e}");
        return false;
    }
    println!(
        "{adapter}: {} rounds of run --db {sql},{adapter} --jobs 1 (case times from its junit.xml)",
        settings.rounds
    );
    let load_before = load_average();
    let mut per_scenario: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let (mut sql_totals, mut adapter_totals) = (Vec::new(), Vec::new());
    for round in 1..=settings.rounds {
        let report = project.join("report");
        let mut cmd = std::process::Command::new(&settings.exe);
        cmd.current_dir(&project)
            .args(["run", "--db", &format!("{sql},{adapter}"), "--jobs", "1", "--quiet", "--report"])
            .arg(&report)
            .args(&settings.run_args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .env_remove(super::capture::CAPTURE_ENV);
        if let Err(e) = timed(cmd, &format!("{adapter}: run (round {round})")) {
            println!("{adapter}: FAILED: {e}");
            return false;
        }
        let junit = match std::fs::read_to_string(report.join("junit.xml")) {
            Ok(j) => j,
            Err(e) => {
                println!("{adapter}: FAILED: {}: {e}", report.join("junit.xml").display());
                return false;
            }
        };
        let times = case_times(&junit);
        let (mut sql_total, mut adapter_total) = (0.0, 0.0);
        for ((target, scenario), t) in &times {
            if target != sql {
                continue;
            }
            let Some(a) = times.get(&(adapter.clone(), scenario.clone())) else { continue };
            if *t > 0.0 {
                per_scenario.entry(scenario.clone()).or_default().push(a / t);
                sql_total += t;
                adapter_total += a;
            }
        }
        sql_totals.push(sql_total);
        adapter_totals.push(adapter_total);
    }
    let mut ratios: Vec<(f64, String)> =
        per_scenario.iter().filter_map(|(name, r)| median(r).map(|m| (m, name.clone()))).collect();
    if ratios.is_empty() {
        println!("{adapter}: FAILED: no scenario ran on both {sql} and {adapter}");
        return false;
    }
    ratios.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal));
    let values: Vec<f64> = ratios.iter().map(|r| r.0).collect();
    let p90 = values[(values.len() - 1) * 9 / 10];
    let (max, worst) = ratios.last().expect("not empty");
    let over = values.iter().filter(|r| **r > 2.0).count();
    let corpus: Vec<f64> = adapter_totals.iter().zip(&sql_totals).map(|(a, s)| a / s.max(1e-9)).collect();
    println!(
        "{adapter} / {sql}, per scenario: median {:.2}x   p90 {p90:.2}x   max {max:.2}x ({worst})   over 2x: {over} of {}   \
         (medians of {} rounds)",
        median(&values).unwrap_or(0.0),
        values.len(),
        settings.rounds
    );
    println!(
        "{adapter} / {sql}, corpus case time: {:.2}x   medians {adapter} {}   {sql} {}   (load average {load_before} \
         before, {} after; {} CPUs)",
        median(&corpus).unwrap_or(0.0),
        super::secs(Duration::from_secs_f64(median(&adapter_totals).unwrap_or(0.0))),
        super::secs(Duration::from_secs_f64(median(&sql_totals).unwrap_or(0.0))),
        load_average(),
        cpus()
    );
    true
}

/// A scratch project whose `reapcheck.toml` declares `reference-<sql>` as
/// this binary's `adapter serve --db <sql>`; scenarios and dialects come
/// from the child's `--scenarios` and `--dialects` (the built-in ones
/// without them, on both sides: `adapter serve` reads this project file).
fn write_project(project: &Path, settings: &Settings, sql: &str) -> Result<(), String> {
    std::fs::create_dir_all(project).map_err(|e| format!("{}: {e}", project.display()))?;
    let exe = settings.exe.to_string_lossy();
    let mut command = vec![exe.to_string(), "adapter".into(), "serve".into(), "--db".into(), sql.into()];
    if let Some(i) = settings.run_args.iter().position(|a| a == "--dialects") {
        command.push("--dialects".into());
        command.extend(settings.run_args.get(i + 1).cloned());
    }
    let quoted: Vec<String> = command.iter().map(|c| format!("{c:?}")).collect();
    let toml = format!(
        "# Written by reapcheck bench --compare --adapter.\n[adapters.reference-{sql}]\ncommand = [{}]\n\
         database = \"{sql}\"\ntimeout_seconds = 120\n",
        quoted.join(", ")
    );
    let path = project.join("reapcheck.toml");
    std::fs::write(&path, toml).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_times_leave_skipped_cases_out() {
        let junit = r#"<testsuite><testcase name="a/b" classname="sqlite" time="0.010">
<property/></testcase><testcase name="a/c" classname="sqlite" time="0.020"><skipped message="x"/></testcase>
<testcase name="a/b" classname="adapter:reference-sqlite" time="0.015"/></testsuite>"#;
        let times = case_times(junit);
        assert_eq!(times.len(), 2, "{times:?}");
        assert_eq!(times[&("adapter:reference-sqlite".to_owned(), "a/b".to_owned())], 0.015);
    }
}
