//! Carrying equivalence declarations over to a port (`mutate --suggest`).
//!
//! A declaration names its mutant by id and its statement by hash, so a
//! port that copied upstream's `equivalent-mutants.yaml` and then renamed a
//! column or reordered a `WHERE` has only stale declarations. For each one
//! (and for each declaration of the builtin dialect of the same name that
//! the port lacks) this finds the port's generated mutant that makes the
//! same change: the same statement, the same operator, and the same
//! description once positions are left out (a dropped conjunct's number, a
//! constant's line and column) and upstream's identifiers are mapped to
//! the port's. The map is learned by aligning each statement of the port
//! with upstream's of the same name, token by token: where the two differ
//! only in identifiers, each pair is a rename (`claim_token` ->
//! `lock_token`); a rename seen consistently across the dialect applies to
//! statements that do not align (a reordered `WHERE`). Several mutants with
//! the same description (two constants `0`) are told apart by their order
//! in the statement. Nothing is written here: the caller prints the
//! declarations for review, or rewrites the stale entries in place.

use std::collections::{BTreeMap, BTreeSet};

use super::equivalent::{Evidence, Written, statement_hash};
use super::generate::{GeneratedMutant, Generation};
use crate::dialect::Dialect;

/// The port's mutant a declaration corresponds to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Match {
    /// The port's mutant id.
    pub id: String,
    /// The hash of the port's statement as it is now.
    pub hash: String,
}

/// What [`carry`] found for one dialect.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Carry {
    /// Each stale declaration of the port (no mutant has its id, or its
    /// statement's hash changed), in file order, with the port's mutant
    /// that makes the same change or why none was chosen.
    pub stale: Vec<(Written, Result<Match, String>)>,
    /// Each declaration of upstream that the port lacks, with the port's
    /// mutant it corresponds to (not yet declared in the port).
    pub missing: Vec<(Written, Match)>,
    /// Upstream declarations the port lacks and that correspond to no
    /// mutant of the port, with why.
    pub unmatched_upstream: Vec<(Written, String)>,
}

/// Upstream's side: the builtin dialect, its mutants and its declarations.
#[derive(Clone, Copy, Debug)]
pub struct Upstream<'a> {
    /// The builtin dialect of the port's name.
    pub dialect: &'a Dialect,
    /// Its generated mutants.
    pub generation: &'a Generation,
    /// Its declarations as written.
    pub declarations: &'a [Written],
}

/// Finds, for each stale declaration of `declared` (the port's file) and
/// each of `upstream`'s declarations the port lacks, the mutant of `port`
/// (generated from `dialect`) that makes the same change.
pub fn carry(declared: &[Written], dialect: &Dialect, port: &Generation, upstream: Option<Upstream<'_>>) -> Carry {
    let renames = upstream.map(|u| Renames::learn(u.dialect, dialect)).unwrap_or_default();
    let ours = |id: &str| port.mutants.iter().find(|m| m.id == id);
    let unparsed = |id: &str| port.unparsed.iter().any(|u| id.split_once(": ").is_some_and(|(s, _)| s == u.statement));
    let mut carry = Carry::default();
    let mut taken: BTreeSet<String> = BTreeSet::new();
    for w in declared {
        if unparsed(&w.mutant) {
            continue;
        }
        match ours(&w.mutant) {
            Some(m) if statement_hash(&m.before) == w.statement => {
                taken.insert(m.id.clone());
            }
            _ => {
                let found = corresponding(&w.mutant, upstream.map(|u| u.generation), &renames, &port.mutants);
                if let Ok(m) = &found {
                    taken.insert(m.id.clone());
                }
                carry.stale.push((w.clone(), found));
            }
        }
    }
    let Some(upstream) = upstream else { return carry };
    for u in upstream.declarations {
        if declared.iter().any(|w| w.mutant == u.mutant) || unparsed(&u.mutant) {
            continue;
        }
        match corresponding(&u.mutant, Some(upstream.generation), &renames, &port.mutants) {
            Ok(m) if taken.contains(&m.id) => {}
            Ok(m) => {
                taken.insert(m.id.clone());
                carry.missing.push((u.clone(), m));
            }
            Err(why) => carry.unmatched_upstream.push((u.clone(), why)),
        }
    }
    carry
}

/// The mutant of `port` that makes the change the mutant `id` made (found
/// in `upstream`'s generation if it is there, for its operator and order).
fn corresponding(
    id: &str,
    upstream: Option<&Generation>,
    renames: &Renames,
    port: &[GeneratedMutant],
) -> Result<Match, String> {
    let theirs = upstream.and_then(|g| g.mutants.iter().find(|m| m.id == id));
    let Some((statement, description)) = id.split_once(": ") else {
        return Err("the id does not start with `<statement>: `: find the mutant with `mutate --list` and declare \
                    it by hand"
            .to_owned());
    };
    let statement = theirs.map_or(statement, |m| m.statement.as_str());
    let map = renames.for_statement(statement);
    let wanted = key(&rename(description, map));
    let candidates: Vec<&GeneratedMutant> = port
        .iter()
        .filter(|m| m.statement == statement)
        .filter(|m| theirs.is_none_or(|t| t.operator == m.operator))
        .filter(|m| key(&m.id[m.statement.len() + 2..]) == wanted)
        .collect();
    let chosen = match candidates.as_slice() {
        [] => None,
        [one] => Some(*one),
        many => theirs.and_then(|t| {
            let same: Vec<&GeneratedMutant> = upstream?
                .mutants
                .iter()
                .filter(|m| m.statement == t.statement && m.operator == t.operator)
                .filter(|m| key(&rename(&m.id[m.statement.len() + 2..], map)) == wanted)
                .collect();
            let nth = same.iter().position(|m| m.id == t.id)?;
            (same.len() == many.len()).then(|| many[nth])
        }),
    };
    match chosen {
        Some(m) => Ok(Match { id: m.id.clone(), hash: statement_hash(&m.before) }),
        None if candidates.is_empty() => Err(format!(
            "no mutant of `{statement}` in your SQL makes the same change: if the statement still has that shape, \
             find its mutant with `mutate --list` and declare it by hand; otherwise remove the declaration"
        )),
        None => Err(format!(
            "{} mutants of `{statement}` in your SQL make the same change ({}): declare the one that corresponds \
             by hand (`mutate --list` prints ids and hashes)",
            candidates.len(),
            candidates.iter().map(|m| format!("`{}`", m.id)).collect::<Vec<_>>().join(", ")
        )),
    }
}

/// A description with its positions left out, to compare shapes: no
/// ` (#n)` suffix, no conjunct number, no ` at line:column`.
fn key(description: &str) -> String {
    let mut d = description.to_owned();
    if let Some(open) = d.rfind(" (#")
        && d.ends_with(')')
        && d[open + 3..d.len() - 1].bytes().all(|b| b.is_ascii_digit())
    {
        d.truncate(open);
    }
    if let Some(rest) = d.strip_prefix("drop WHERE conjunct ") {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        d = format!("drop WHERE conjunct{}", &rest[digits..]);
    }
    let mut out = String::new();
    let mut rest = d.as_str();
    while let Some(at) = rest.find(" at ") {
        let after = &rest[at + 4..];
        let line = after.bytes().take_while(u8::is_ascii_digit).count();
        let column = after[line..].strip_prefix(':').map_or(0, |c| c.bytes().take_while(u8::is_ascii_digit).count());
        out.push_str(&rest[..at]);
        if line > 0 && column > 0 {
            rest = &after[line + 1 + column..];
        } else {
            out.push_str(" at ");
            rest = after;
        }
    }
    out.push_str(rest);
    out.to_lowercase()
}

/// Identifier renames from upstream's SQL to the port's, lower-case
/// upstream name -> the port's name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Renames {
    /// Seen consistently wherever a statement aligns.
    global: BTreeMap<String, String>,
    /// Per statement that aligns with upstream's token by token.
    aligned: BTreeMap<String, BTreeMap<String, String>>,
}

impl Renames {
    /// Aligns every statement `port` shares with `upstream`.
    fn learn(upstream: &Dialect, port: &Dialect) -> Renames {
        let mut votes: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let mut aligned = BTreeMap::new();
        for theirs in upstream.statements() {
            let Some(ours) = port.statements().find(|s| s.name == theirs.name) else { continue };
            let (a, b) = (tokens(&theirs.sql), tokens(&ours.sql));
            if a.len() != b.len() {
                continue;
            }
            let mut pairs = BTreeMap::new();
            let aligns = a.iter().zip(&b).all(|(x, y)| match (x, y) {
                (Token::Word(x), Token::Word(y)) => {
                    let (x, y) = (x.to_lowercase(), y.clone());
                    pairs.insert(x, y);
                    true
                }
                _ => x == y,
            });
            if !aligns {
                continue;
            }
            // A word mapped two ways within one statement is no rename.
            let mut map = BTreeMap::new();
            for (x, y) in &pairs {
                let consistent = a.iter().zip(&b).all(
                    |(p, q)| !matches!((p, q), (Token::Word(p), Token::Word(q)) if p.to_lowercase() == *x && q != y),
                );
                if consistent && x != &y.to_lowercase() {
                    map.insert(x.clone(), y.clone());
                }
                votes.entry(x.clone()).or_default().insert(if consistent { y.to_lowercase() } else { String::new() });
            }
            aligned.insert(theirs.name.clone(), map);
        }
        let mut global = BTreeMap::new();
        let mut targets: BTreeMap<String, usize> = BTreeMap::new();
        for (x, ys) in &votes {
            if let [y] = ys.iter().collect::<Vec<_>>().as_slice()
                && !y.is_empty()
                && x != *y
                && votes.get(*y).is_none_or(|back| !back.contains(*y))
            {
                global.insert(x.clone(), (*y).clone());
                *targets.entry((*y).clone()).or_default() += 1;
            }
        }
        global.retain(|_, y| targets[y.as_str()] == 1);
        // The port's spelling, from any statement that aligned.
        for y in global.values_mut() {
            if let Some(spelled) = aligned.values().flat_map(|m| m.values()).find(|v| v.to_lowercase() == *y) {
                *y = spelled.clone();
            }
        }
        Renames { global, aligned }
    }

    fn for_statement(&self, statement: &str) -> &BTreeMap<String, String> {
        self.aligned.get(statement).unwrap_or(&self.global)
    }
}

/// A token of SQL, as far as aligning needs: comments and spaces dropped.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    /// An identifier or keyword (quotes removed).
    Word(String),
    /// `:name`: a bound parameter, named by the contract, never renamed.
    Parameter(String),
    /// Anything else: a string, a number, punctuation.
    Other(String),
}

fn is_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '$'
}

fn tokens(sql: &str) -> Vec<Token> {
    let chars: Vec<char> = sql.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let take = |i: &mut usize, until: &dyn Fn(char) -> bool| {
        let start = *i;
        while *i < chars.len() && !until(chars[*i]) {
            *i += 1;
        }
        chars[start..*i].iter().collect::<String>()
    };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c.is_whitespace() {
            i += 1;
        } else if c == '-' && next == Some('-') {
            take(&mut i, &|c| c == '\n');
        } else if c == '/' && next == Some('*') {
            i += 2;
            while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                i += 1;
            }
            i += 2;
        } else if c == '\'' {
            let start = i;
            i += 1;
            while i < chars.len() {
                if chars[i] == '\'' && chars.get(i + 1) == Some(&'\'') {
                    i += 2;
                } else if chars[i] == '\'' {
                    i += 1;
                    break;
                } else {
                    i += 1;
                }
            }
            out.push(Token::Other(chars[start..i.min(chars.len())].iter().collect()));
        } else if c == '"' || c == '`' {
            i += 1;
            let word = take(&mut i, &|d| d == c);
            i += 1;
            out.push(Token::Word(word));
        } else if c == ':' && next.is_some_and(|n| n.is_ascii_alphabetic() || n == '_') {
            i += 1;
            out.push(Token::Parameter(take(&mut i, &|c| !is_word(c))));
        } else if c.is_ascii_digit() {
            out.push(Token::Other(take(&mut i, &|c| !is_word(c) && c != '.')));
        } else if is_word(c) {
            out.push(Token::Word(take(&mut i, &|c| !is_word(c))));
        } else {
            i += 1;
            out.push(Token::Other(c.to_string()));
        }
    }
    out
}

/// `text` with each identifier `map` names replaced; parameters (`:x`)
/// and string literals are left alone.
fn rename(text: &str, map: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let mut chars = text.char_indices().peekable();
    let mut quoted = false;
    let mut after_colon = false;
    while let Some((i, c)) = chars.next() {
        if c == '\'' {
            quoted = !quoted;
        }
        if quoted || !(c.is_ascii_alphabetic() || c == '_') {
            after_colon = c == ':';
            out.push(c);
            continue;
        }
        let mut end = i + c.len_utf8();
        while let Some(&(j, d)) = chars.peek() {
            if !is_word(d) {
                break;
            }
            end = j + d.len_utf8();
            chars.next();
        }
        let word = &text[i..end];
        match map.get(&word.to_lowercase()) {
            Some(to) if !after_colon => out.push_str(to),
            _ => out.push_str(word),
        }
        after_colon = false;
    }
    out
}

/// The declaration `from` carried over to the port's mutant `to`, as YAML
/// ready to paste into `equivalent-mutants.yaml`: a comment saying where it
/// comes from and that its reason is to be reviewed, then the entry, with
/// `from`'s reason, `servers` and `evidence`. `upstream` says whether
/// `from` is upstream's (else the port's own older declaration).
pub fn block(from: &Written, to: &Match, upstream: bool) -> String {
    let whose = if upstream { "upstream" } else { "the old declaration" };
    let mut out = format!(
        "# carried over from {whose}, review the reason: was `{}` (statement {})\n- mutant: {}\n  statement: {}\n",
        from.mutant.replace('\n', " "),
        from.statement.replace('\n', " "),
        quoted(&to.id),
        quoted(&to.hash)
    );
    let reason = &from.reason;
    if !reason.contains('\n') && reason.trim() == reason && !reason.is_empty() {
        out.push_str(&format!("  reason: >-\n    {reason}\n"));
    } else {
        out.push_str(&format!("  reason: {}\n", quoted(reason)));
    }
    if let Some(servers) = &from.servers {
        out.push_str(&format!("  servers: {}\n", quoted(servers)));
    }
    if from.evidence != Evidence::Measured {
        out.push_str(&format!("  evidence: {}\n", from.evidence.name()));
    }
    out
}

/// A YAML double-quoted string.
fn quoted(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `text` (the file `file`) with each entry whose `mutant` value is on the
/// line given replaced by its block; every other line is kept as it is.
/// An entry runs from its `- ` line (at column 1) to the next one, less the
/// comments and blank lines just before that (they belong to the next
/// entry). An error, saying to paste by hand, when an entry is not laid
/// out so.
pub fn rewrite(file: &str, text: &str, replacements: &[(usize, String)]) -> Result<String, String> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let starts: Vec<usize> = (0..lines.len()).filter(|&i| lines[i].starts_with('-')).collect();
    let mut ranges = Vec::new();
    for (line, block) in replacements {
        let at = line - 1;
        let Some(&start) = starts.iter().rev().find(|&&s| s <= at) else {
            return Err(format!(
                "{file}:{line}:1: cannot rewrite this declaration: it is not an item of a block list starting with \
                 `- ` at column 1; paste the printed declaration in its place by hand"
            ));
        };
        let mut end = starts.iter().find(|&&s| s > at).copied().unwrap_or(lines.len());
        while end > start + 1 && (lines[end - 1].trim().is_empty() || lines[end - 1].starts_with('#')) {
            end -= 1;
        }
        ranges.push((start, end, block.as_str()));
    }
    ranges.sort_unstable();
    let mut out = String::new();
    let mut next = 0;
    for (start, end, block) in ranges {
        out.extend(lines[next..start].iter().copied());
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(block);
        next = end;
    }
    out.extend(lines[next..].iter().copied());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::text::Grammar;
    use crate::dialect::{Source, dialect_names};
    use crate::mutate::equivalent::{FILE, read};
    use crate::mutate::generate;

    fn upstream(name: &str) -> (Dialect, Generation, Vec<Written>) {
        let d = Dialect::load(&Source::Embedded, name).unwrap();
        let g = generate(&d, Grammar::for_dialect(name));
        let text = crate::dialect::read_extra(&Source::Embedded, name, FILE).unwrap().unwrap_or_default();
        (d, g, read("f", &text).unwrap())
    }

    /// `dialect` with every statement's SQL edited by `edit`.
    fn edited(dialect: &Dialect, edit: impl Fn(&str, &str) -> String) -> Dialect {
        let mut d = dialect.clone();
        for s in dialect.statements() {
            d = d.with_sql(&s.name, edit(&s.name, &s.sql));
        }
        d
    }

    fn rename_claim_token(sql: &str) -> String {
        rename(sql, &BTreeMap::from([("claim_token".to_owned(), "lock_token".to_owned())]))
    }

    #[test]
    fn every_upstream_declaration_is_carried_to_a_port_that_renamed_a_column() {
        for name in dialect_names(&Source::Embedded) {
            let (d, g, declared) = upstream(&name);
            let port = edited(&d, |_, sql| rename_claim_token(sql));
            let pg = generate(&port, Grammar::for_dialect(&name));
            let u = Upstream { dialect: &d, generation: &g, declarations: &declared };
            let c = carry(&declared, &port, &pg, Some(u));
            assert!(c.missing.is_empty() && c.unmatched_upstream.is_empty(), "{name}: {c:?}");
            assert!(!c.stale.is_empty(), "{name}");
            for (w, found) in &c.stale {
                let m = found.as_ref().unwrap_or_else(|e| panic!("{name}: {}: {e}", w.mutant));
                assert_eq!(m.id, rename_claim_token(&w.mutant), "{name}");
                let ours = pg.mutants.iter().find(|p| p.id == m.id).unwrap();
                let theirs = g.mutants.iter().find(|t| t.id == w.mutant).unwrap();
                assert_eq!((ours.operator, &ours.statement), (theirs.operator, &theirs.statement));
                assert_eq!(m.hash, statement_hash(&ours.before));
            }
            // A declaration the port lacks is found the same way.
            let c = carry(&[], &port, &pg, Some(u));
            assert_eq!(c.missing.len(), declared.len(), "{name}: {:?}", c.unmatched_upstream);
        }
    }

    #[test]
    fn a_reordered_where_is_matched_by_the_dropped_conjunct_not_its_number() {
        let (d, g, declared) = upstream("postgres");
        let from = "WHERE id = :id AND status = 'processing' AND claim_token = :token AND attempts = :attempts";
        let to = "WHERE attempts = :attempts AND lock_token = :token AND id = :id AND status = 'processing'";
        let port = edited(&d, |name, sql| {
            let sql = if name == "fail_final" { sql.replace(from, to) } else { sql.to_owned() };
            rename_claim_token(&sql)
        });
        assert_ne!(
            port.statements().find(|s| s.name == "fail_final").unwrap().sql,
            rename_claim_token(&d.statements().find(|s| s.name == "fail_final").unwrap().sql)
        );
        let pg = generate(&port, Grammar::for_dialect("postgres"));
        let c = carry(&declared, &port, &pg, Some(Upstream { dialect: &d, generation: &g, declarations: &declared }));
        let to = |id: &str| c.stale.iter().find(|(w, _)| w.mutant == id).unwrap().1.clone().unwrap().id;
        assert_eq!(
            to("fail_final: drop WHERE conjunct 2 `status = 'processing'`"),
            "fail_final: drop WHERE conjunct 4 `status = 'processing'`"
        );
        assert_eq!(
            to("fail_final: drop WHERE conjunct 3 `claim_token = :token`"),
            "fail_final: drop WHERE conjunct 2 `lock_token = :token`"
        );
        assert_eq!(
            to("fail_final: drop WHERE conjunct 4 `attempts = :attempts`"),
            "fail_final: drop WHERE conjunct 1 `attempts = :attempts`"
        );
    }

    #[test]
    fn a_change_the_port_no_longer_has_or_cannot_tell_apart_is_not_guessed() {
        let (d, g, declared) = upstream("postgres");
        let port =
            edited(
                &d,
                |name, sql| {
                    if name == "complete" { sql.replace(" AND status = 'processing'", "") } else { sql.to_owned() }
                },
            );
        let pg = generate(&port, Grammar::for_dialect("postgres"));
        let c = carry(&declared, &port, &pg, Some(Upstream { dialect: &d, generation: &g, declarations: &declared }));
        assert_eq!(c.stale.len(), 1, "{c:?}");
        let e = c.stale[0].1.clone().unwrap_err();
        assert!(e.starts_with("no mutant of `complete` in your SQL makes the same change"), "{e}");
        // Two constants alike and nothing to order them by: not guessed.
        let m = |id: &str| GeneratedMutant {
            id: id.to_owned(),
            operator: crate::mutate::Operator::Constant,
            statement: "s".to_owned(),
            origin: String::new(),
            before: String::new(),
            after: String::new(),
            rows_to_differ: 0,
        };
        let port = [m("s: replace constant 0 with 1 at 1:5"), m("s: replace constant 0 with 1 at 2:5")];
        let e = corresponding("s: replace constant 0 with 1 at 9:9", None, &Renames::default(), &port).unwrap_err();
        assert!(e.starts_with("2 mutants of `s` in your SQL make the same change"), "{e}");
    }

    #[test]
    fn keys_leave_positions_out_and_renames_spare_parameters_and_strings() {
        assert_eq!(
            key("drop WHERE conjunct 12 `a = :b` of `SELECT ... FROM jobs`"),
            key("drop WHERE conjunct 1 `a = :b` of `SELECT ... FROM jobs`")
        );
        assert_eq!(key("replace constant 0 with 1 at 21:56 (#2)"), "replace constant 0 with 1");
        assert_eq!(
            key("replace interval '30 seconds' with '31 seconds' at 3:4"),
            "replace interval '30 seconds' with '31 seconds'"
        );
        let map = BTreeMap::from([("claim_token".to_owned(), "lock_token".to_owned())]);
        assert_eq!(
            rename("claim_token = :claim_token AND x = 'claim_token' AND Claim_Token", &map),
            "lock_token = :claim_token AND x = 'claim_token' AND lock_token"
        );
    }

    #[test]
    fn a_carried_block_parses_back_to_the_port_id_and_hash_with_the_reason_kept() {
        let from = Written {
            mutant: "a: b".into(),
            line: 1,
            column: 1,
            statement: "0".into(),
            reason: "two: \"x\" # not a comment".into(),
            servers: Some(">= 16".into()),
            evidence: Evidence::Reasoned,
        };
        let to = Match { id: "a: `c = 'd'` \"e\"".into(), hash: "0123456789abcdef".into() };
        for reason in [from.reason.clone(), "line one\nline two".into(), " padded".into()] {
            let from = Written { reason, ..from.clone() };
            let text = block(&from, &to, true);
            assert!(text.starts_with("# carried over from upstream, review the reason: was `a: b`"), "{text}");
            let back = &read("f", &text).unwrap()[0];
            assert_eq!((&back.mutant, &back.statement), (&to.id, &to.hash), "{text}");
            assert_eq!((&back.reason, &back.servers, back.evidence), (&from.reason, &from.servers, from.evidence));
        }
    }

    #[test]
    fn rewriting_replaces_only_the_entries_named_and_keeps_every_other_line() {
        let text = "# head\n- mutant: a\n  statement: \"1\"\n  reason: >-\n    r\n\n# about b\n- mutant: b\n  statement: \"2\"\n  reason: s\n- mutant: c\n  statement: \"3\"\n  reason: t\n";
        let got = rewrite("f", text, &[(11, "- mutant: C\n".into()), (2, "- mutant: A\n".into())]).unwrap();
        assert_eq!(
            got,
            "# head\n- mutant: A\n\n# about b\n- mutant: b\n  statement: \"2\"\n  reason: s\n- mutant: C\n"
        );
        let e = rewrite("f", "[{mutant: a}]\n", &[(1, String::new())]).unwrap_err();
        assert!(e.starts_with("f:1:1: cannot rewrite this declaration"), "{e}");
    }
}
