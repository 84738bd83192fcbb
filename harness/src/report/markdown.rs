//! The Markdown summary, fit for `$GITHUB_STEP_SUMMARY`: totals per leg
//! and target with the server that answered, then each failure with its
//! rerun line (and, from `verdict`, the cross-leg problems first).

use std::fmt::Write as _;

use super::matrix::Matrix;
use super::verdict::Problem;

/// The summary of `matrix`, `problems` first.
pub fn render(matrix: &Matrix, problems: &[Problem]) -> String {
    let mut out = String::from("## reapcheck\n\n");
    if !problems.is_empty() {
        let _ = writeln!(out, "**verdict: {} problems**\n", problems.len());
        for p in problems {
            let _ = writeln!(out, "- {}", cell(&p.message));
        }
        out.push('\n');
    }
    // One leg (a `run --report`): its name is no column and no suffix.
    let many = matrix.legs.len() > 1;
    let of_leg = |leg: &str| if many { format!(" (leg {})", cell(leg)) } else { String::new() };
    if many {
        out.push_str("| leg | target | server | pass | new | divergence | skipped | FAIL |\n");
        out.push_str("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |\n");
    } else {
        out.push_str("| target | server | pass | new | divergence | skipped | FAIL |\n");
        out.push_str("| --- | --- | ---: | ---: | ---: | ---: | ---: |\n");
    }
    for c in &matrix.columns {
        let n = &c.counts;
        let leg = if many { format!("| {} ", cell(&c.leg)) } else { String::new() };
        let _ = writeln!(
            out,
            "{leg}| {} | {} | {} | {} | {} | {} | {} |",
            cell(&c.target),
            cell(&c.server),
            n.pass,
            n.new,
            n.divergence,
            n.skipped,
            n.fail
        );
    }
    let code: Vec<_> = matrix.columns.iter().filter(|c| !c.code.is_empty()).collect();
    if !code.is_empty() {
        out.push_str("\nWhose code ran:\n\n");
        for c in code {
            let _ = writeln!(out, "- {}{}: `{}`", cell(&c.target), of_leg(&c.leg), c.code.replace('`', "'"));
        }
    }
    for l in matrix.legs.iter().filter(|l| l.interrupted) {
        let _ = writeln!(out, "\nleg `{}` was interrupted: its counts are incomplete.", l.leg);
    }
    // A column whose target was not reached is one failure with its cause.
    let unreached = |col: &super::matrix::Column| col.server == super::NOT_REACHED;
    let mut lost: Vec<(&super::matrix::Column, &super::outcomes::CaseOutcome, usize)> = Vec::new();
    let mut failures = Vec::new();
    for (col, c) in matrix.failures() {
        if !unreached(col) {
            failures.push((col, c));
        } else if let Some(entry) = lost.iter_mut().find(|(seen, _, _)| std::ptr::eq(*seen, col)) {
            entry.2 += 1;
        } else {
            lost.push((col, c, 1));
        }
    }
    if failures.is_empty() && lost.is_empty() {
        out.push_str("\nNo failures.\n");
    } else {
        let _ = writeln!(out, "\n### Failures ({})\n", failures.len() + lost.len());
        for (col, c, n) in lost {
            let cause = c.diff.as_deref().and_then(|d| d.lines().next()).unwrap_or("not reached");
            let cause = cause.trim_start_matches("not run: ");
            let _ = writeln!(
                out,
                "- {}{} was not reached ({n} scenarios not run): {}",
                col.target,
                of_leg(&col.leg),
                cell(cause)
            );
        }
        for (col, c) in failures {
            let first = c.diff.as_deref().and_then(|d| d.lines().next()).unwrap_or("failed");
            let _ = writeln!(out, "- `{}` on {}{}: {}", c.scenario, c.target, of_leg(&col.leg), cell(first));
            if let Some(rerun) = &c.rerun {
                let _ = writeln!(out, "  ```\n  {rerun}\n  ```");
            }
        }
    }
    out
}

/// `text` safe inside a table cell or list item: one line, pipes escaped.
fn cell(text: &str) -> String {
    text.replace('\n', " ").replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::matrix::tests::leg;
    use crate::report::outcomes::CaseResult::*;

    #[test]
    fn totals_per_leg_then_failures_with_their_rerun_lines() {
        let l = leg("pg|15", &[("grace/a", "model", Pass, "h"), ("grace/a", "postgres", Fail, "")]);
        let lite = leg("lite", &[("grace/a", "sqlite", Pass, "h")]);
        let md = render(&Matrix::new(&[l.clone(), lite.clone()]), &[]);
        assert!(md.contains("| pg\\|15 | model | model 1.0 | 1 | 0 | 0 | 0 | 0 |\n"), "{md}");
        assert!(md.contains("| pg\\|15 | postgres | postgres 1.0 | 0 | 0 | 0 | 0 | 1 |\n"), "{md}");
        assert!(md.contains("### Failures (1)\n\n- `grace/a` on postgres (leg pg\\|15): --- model\n"), "{md}");
        assert!(md.contains("  ```\n  reapcheck run --db postgres --exact grace/a\n  ```\n"), "{md}");
        let ok = render(&Matrix::new(&[lite]), &[]);
        assert!(ok.ends_with("\nNo failures.\n"), "{ok}");
    }

    #[test]
    fn one_legs_summary_does_not_repeat_the_leg_on_every_line() {
        let l = leg("pg", &[("grace/a", "model", Pass, "h"), ("grace/a", "postgres", Fail, "")]);
        let md = render(&Matrix::new(&[l]), &[]);
        assert!(md.contains("| target | server | pass |"), "{md}");
        assert!(md.contains("\n| postgres | postgres 1.0 | 0 | 0 | 0 | 0 | 1 |\n"), "{md}");
        assert!(md.contains("- `grace/a` on postgres: --- model\n"), "{md}");
        assert!(!md.contains("(leg "), "{md}");
    }
}
