//! The one renderer of a difference between two outcomes, used both to
//! decide that they differ and to show how, and the one reader of what it
//! rendered: whether a failure's differences are only instants that agree
//! once truncated to a coarser clock ([`vanishing_step`]), the mark of a
//! store that keeps whole seconds (or milliseconds) without a declared
//! `time_resolution`.

use similar::{ChangeTag, TextDiff};

/// `None` when the texts are equal; else a line diff with `-` for
/// `expected` and `+` for `actual`, each labelled.
pub fn render(expected_label: &str, expected: &str, actual_label: &str, actual: &str) -> Option<String> {
    if expected == actual {
        return None;
    }
    let diff = TextDiff::from_lines(expected, actual);
    let mut out = format!("--- {expected_label}\n+++ {actual_label}\n");
    for group in diff.grouped_ops(3) {
        for op in group {
            for change in diff.iter_changes(&op) {
                let sign = match change.tag() {
                    ChangeTag::Delete => '-',
                    ChangeTag::Insert => '+',
                    ChangeTag::Equal => ' ',
                };
                out.push(sign);
                out.push_str(change.value().trim_end_matches('\n'));
                out.push('\n');
            }
        }
        out.push_str("...\n");
    }
    Some(out)
}

/// The clock steps a store may keep instants at, finest first, as
/// `time_resolution` names them (docs/dialect-profile.md), in microseconds.
pub const STEPS: [(&str, i64); 2] = [("1ms", 1_000), ("1s", 1_000_000)];

/// The finest step of [`STEPS`] at which some difference rendered in
/// `detail` (a failure's text, holding diffs from [`render`], indented or
/// not) vanishes when every duration and instant on both sides is truncated
/// toward the past to it; `None` when none does. Durations are relative to
/// the clock, so this is exact while the clock is on a whole step (most
/// scenarios), and a store that truncates shows in most of its failures.
pub fn vanishing_step(detail: &str) -> Option<&'static str> {
    let diffs = rendered_diffs(detail);
    STEPS
        .iter()
        .find(|(_, step)| {
            diffs
                .iter()
                .any(|(expected, actual)| expected != actual && truncated(expected, *step) == truncated(actual, *step))
        })
        .map(|(name, _)| *name)
}

/// The two sides (`-` with context, `+` with context) of every diff
/// [`render`] wrote into `detail`, at whatever indentation.
fn rendered_diffs(detail: &str) -> Vec<(Vec<&str>, Vec<&str>)> {
    let lines: Vec<&str> = detail.lines().collect();
    let mut diffs = Vec::new();
    let mut i = 0;
    while i + 1 < lines.len() {
        let body = lines[i].trim_start();
        let indent = &lines[i][..lines[i].len() - body.len()];
        let header =
            body.starts_with("--- ") && lines[i + 1].strip_prefix(indent).is_some_and(|next| next.starts_with("+++ "));
        i += 1;
        if !header {
            continue;
        }
        let (mut expected, mut actual) = (Vec::new(), Vec::new());
        i += 1;
        while let Some(line) = lines.get(i).and_then(|l| l.strip_prefix(indent)) {
            if line == "..." {
            } else if let Some(rest) = line.strip_prefix(' ') {
                expected.push(rest);
                actual.push(rest);
            } else if let Some(rest) = line.strip_prefix('-') {
                expected.push(rest);
            } else if let Some(rest) = line.strip_prefix('+') {
                actual.push(rest);
            } else {
                break;
            }
            i += 1;
        }
        diffs.push((expected, actual));
    }
    diffs
}

/// `lines` with every duration and RFC 3339 instant truncated toward the
/// past to `step` microseconds.
fn truncated(lines: &[&str], step: i64) -> Vec<String> {
    let floor = |micros: i64| micros.div_euclid(step) * step;
    let token = |t: &str| {
        if let Ok(d) = crate::time::Duration::parse(t) {
            format!("duration {}", floor(d.as_micros()))
        } else if let Ok(i) = crate::time::Instant::parse_rfc3339(t) {
            format!("instant {}", floor(i.to_chrono().timestamp_micros()))
        } else {
            t.to_owned()
        }
    };
    lines.iter().map(|l| l.split_whitespace().map(token).collect::<Vec<_>>().join(" ")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diff_of_instants_that_agree_truncated_names_the_step() {
        let seconds = render("model", "a:\n  at: -10m0.000001s\n  b: 1\n", "sqlite", "a:\n  at: -10m1s\n  b: 1\n");
        let detail = format!("sqlite ends as the model does\n{}after\n", indent(&seconds.unwrap()));
        assert_eq!(vanishing_step(&detail), Some("1s"));
        let millis = render("model", "at: 2026-01-15T12:00:00.000999Z\n", "x", "at: 2026-01-15T12:00:00Z\n");
        assert_eq!(vanishing_step(&millis.unwrap()), Some("1ms"));
        // A behaviour that differs, or an instant a whole step off, is no resolution.
        let status = render("model", "status: pending\nrun_at: +4s\n", "x", "status: processing\nrun_at: -10m\n");
        assert_eq!(vanishing_step(&status.unwrap()), None);
        assert_eq!(vanishing_step(&render("model", "at: 0s\n", "x", "at: -1s\n").unwrap()), None);
        assert_eq!(vanishing_step("no diff here\n"), None);
    }

    fn indent(text: &str) -> String {
        text.lines().map(|l| format!("    {l}\n")).collect()
    }

    #[test]
    fn equal_texts_have_no_diff_and_different_ones_show_both_sides() {
        assert_eq!(render("a", "x\n", "b", "x\n"), None);
        let d = render("model", "a: 1\nb: 2\n", "sqlite", "a: 1\nb: 3\n").unwrap();
        assert!(d.contains("--- model\n+++ sqlite\n"), "{d}");
        assert!(d.contains("-b: 2\n+b: 3\n"), "{d}");
    }
}
