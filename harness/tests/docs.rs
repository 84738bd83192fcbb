//! Every relative link in every Markdown file of the repository resolves
//! inside it: the file exists, and a `#fragment` into a Markdown file names
//! one of its headings (GitHub's slugs: lowercase, spaces to `-`, other
//! punctuation dropped).

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().expect("the workspace exists")
}

fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable") {
        let path = entry.expect("an entry").path();
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        // node_modules: an adapter's installed packages (examples/adapters/pg-boss), not our docs.
        if name.starts_with('.') || name == "target" || name == "fuzz-failures" || name == "node_modules" {
            continue;
        }
        if path.is_dir() {
            markdown_files(&path, out);
        } else if name.ends_with(".md") {
            out.push(path);
        }
    }
}

/// `(target)` of every `[text](target)` outside code blocks and code spans.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut fenced = false;
    for (n, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut in_code = false;
        let bytes: Vec<char> = line.chars().collect();
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                '`' => in_code = !in_code,
                ']' if !in_code && bytes.get(i + 1) == Some(&'(') => {
                    if let Some(end) = bytes[i + 2..].iter().position(|c| *c == ')') {
                        found.push((n + 1, bytes[i + 2..i + 2 + end].iter().collect()));
                        i += end + 2;
                    }
                }
                _ => {}
            }
            i += 1;
        }
    }
    found
}

fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn headings(text: &str) -> Vec<String> {
    text.lines().filter(|l| l.starts_with('#')).map(|l| slug(l.trim_start_matches('#'))).collect()
}

#[test]
fn every_relative_link_in_the_docs_resolves_inside_the_repository() {
    let root = root();
    let mut files = Vec::new();
    markdown_files(&root, &mut files);
    assert!(files.len() >= 6, "only {} Markdown files found", files.len());
    let mut broken = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("UTF-8 Markdown");
        for (line, target) in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, fragment) = target.split_once('#').map_or((target.as_str(), None), |(p, f)| (p, Some(f)));
            let resolved = if path.is_empty() { file.clone() } else { file.parent().unwrap().join(path) };
            let shown = format!("{}:{line}: `{target}`", file.strip_prefix(&root).unwrap_or(file).display());
            let Ok(canonical) = resolved.canonicalize() else {
                broken.push(format!("{shown}: no such file"));
                continue;
            };
            if !canonical.starts_with(&root) {
                broken.push(format!("{shown}: outside the repository"));
                continue;
            }
            if let Some(fragment) = fragment
                && canonical.extension().is_some_and(|e| e == "md")
            {
                let heads = headings(&std::fs::read_to_string(&canonical).unwrap_or_default());
                if !heads.iter().any(|h| h == fragment) {
                    broken.push(format!("{shown}: no heading `#{fragment}`"));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_link_reader_finds_links_and_skips_code() {
    let text = "see [a](x.md#one) and `[b](y.md)`\n```\n[c](z.md)\n```\n[d](../e.md)\n";
    assert_eq!(links(text), vec![(1, "x.md#one".to_owned()), (5, "../e.md".to_owned())]);
    assert_eq!(slug(" The statement contract"), "the-statement-contract");
    assert_eq!(slug("`set_clock`: the database's own clock"), "set_clock-the-databases-own-clock");
}
