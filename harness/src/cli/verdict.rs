//! `reapcheck verdict DIR...`: merges the outcome files of CI legs
//! (`run --report DIR --leg NAME`), prints every cross-leg problem naming
//! its leg (`report::verdict`), and writes the merged matrix as
//! `matrix.json`, `matrix.html` and `matrix.md` into `--out`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde::Serialize;

use reapcheck::report::matrix::Matrix;
use reapcheck::report::outcomes::{self, LegOutcomes};
use reapcheck::report::verdict::{self, Problem};
use reapcheck::report::{self, html, markdown};

use super::{EXIT_FAILED, EXIT_INVALID};

/// Arguments of `verdict`.
#[derive(clap::Args, Debug)]
pub struct VerdictArgs {
    /// Folders written by `run --report` (or outcomes.json files); a
    /// folder without outcomes.json is searched one level down, as
    /// downloaded CI artifacts are laid out.
    #[arg(required = true, value_name = "DIR")]
    dirs: Vec<PathBuf>,
    /// Leg names, comma-separated, that must all be present (`run --leg`).
    #[arg(long, value_name = "LEGS", value_delimiter = ',')]
    expect: Vec<String>,
    /// Where to write matrix.json, matrix.html and matrix.md.
    #[arg(long, default_value = "matrix", value_name = "DIR")]
    out: PathBuf,
}

/// `matrix.json`: the verdict and the merged matrix.
#[derive(Serialize)]
struct Merged<'a> {
    schema_version: u32,
    passed: bool,
    problems: &'a [Problem],
    matrix: &'a Matrix,
}

/// Runs the command; see the module docs.
pub fn verdict(args: VerdictArgs) -> ExitCode {
    let mut files = Vec::new();
    for dir in &args.dirs {
        match outcome_files(dir) {
            Ok(found) if found.is_empty() => {
                eprintln!(
                    "error: no {} in {} or its sub-folders: pass the folders `run --report` wrote",
                    outcomes::FILE_NAME,
                    dir.display()
                );
                return ExitCode::from(EXIT_INVALID);
            }
            Ok(found) => files.extend(found),
            Err(e) => {
                eprintln!("error: cannot list {}: {e}", dir.display());
                return ExitCode::from(EXIT_INVALID);
            }
        }
    }
    let mut legs: Vec<LegOutcomes> = Vec::new();
    for f in &files {
        match outcomes::read(f) {
            Ok(leg) => legs.push(leg),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(EXIT_INVALID);
            }
        }
    }
    legs.sort_by(|a, b| a.leg.cmp(&b.leg));
    let expected: Vec<String> = args.expect.iter().map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()).collect();
    let problems = verdict::check(&legs, &expected);
    let matrix = Matrix::new(&legs);
    // Counted per column, so the model's cases are never added to a
    // database's.
    for leg in &matrix.legs {
        println!("leg {}:", leg.leg);
        for col in matrix.columns.iter().filter(|col| col.leg == leg.leg) {
            let c = &col.counts;
            let server = if col.server == col.target { String::new() } else { format!(" ({})", col.server) };
            let ran = if col.code.is_empty() { String::new() } else { format!("; ran {}", col.code) };
            println!(
                "    {}{server}: {} pass, {} new, {} divergence, {} skipped, {} failed{ran}",
                col.target, c.pass, c.new, c.divergence, c.skipped, c.fail
            );
        }
    }
    for p in &problems {
        println!("FAIL     {}", p.message);
    }
    let merged = Merged {
        schema_version: outcomes::SCHEMA_VERSION,
        passed: problems.is_empty(),
        problems: &problems,
        matrix: &matrix,
    };
    let json = serde_json::to_string_pretty(&merged).expect("the matrix always serializes") + "\n";
    let written = [
        ("matrix.json", json),
        ("matrix.html", html::render(&matrix, &problems)),
        ("matrix.md", markdown::render(&matrix, &problems)),
    ]
    .into_iter()
    .try_for_each(|(name, text)| report::write_atomic(&args.out, name, &text));
    let mut failed_legs: Vec<&str> = problems.iter().map(|p| p.leg.as_str()).collect();
    failed_legs.sort_unstable();
    failed_legs.dedup();
    let mut failed = failed_legs.len();
    match written {
        Ok(()) => println!("matrix written to {}", args.out.display()),
        Err(e) => {
            eprintln!("error: cannot write the matrix to {}: {e}", args.out.display());
            failed += 1;
        }
    }
    let passed = legs.iter().filter(|l| !failed_legs.contains(&l.leg.as_str())).count();
    println!("{passed} passed, {failed} failed");
    if failed > 0 { ExitCode::from(EXIT_FAILED) } else { ExitCode::SUCCESS }
}

/// `dir/outcomes.json`, or `dir` itself when it is a file, or else the
/// outcome file of each immediate sub-folder, sorted.
fn outcome_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    if dir.is_file() {
        return Ok(vec![dir.to_owned()]);
    }
    let own = dir.join(outcomes::FILE_NAME);
    if own.is_file() {
        return Ok(vec![own]);
    }
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let file = entry?.path().join(outcomes::FILE_NAME);
        if file.is_file() {
            found.push(file);
        }
    }
    found.sort();
    Ok(found)
}
