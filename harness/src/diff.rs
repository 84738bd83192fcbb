//! The one renderer of a difference between two outcomes, used both to
//! decide that they differ and to show how.

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_texts_have_no_diff_and_different_ones_show_both_sides() {
        assert_eq!(render("a", "x\n", "b", "x\n"), None);
        let d = render("model", "a: 1\nb: 2\n", "sqlite", "a: 1\nb: 3\n").unwrap();
        assert!(d.contains("--- model\n+++ sqlite\n"), "{d}");
        assert!(d.contains("-b: 2\n+b: 3\n"), "{d}");
    }
}
