//! Declared equivalent mutants: generated mutants that no valid scenario
//! can kill, listed per dialect in `<dialect>/equivalent-mutants.yaml`, each
//! with the hash of its statement's SQL (so editing the statement
//! invalidates the declaration) and the reason it is equivalent.
//!
//! ```yaml
//! - mutant: "read_jobs: append LIMIT 1000"
//!   statement: 3f1c0a9d2e4b5c6d
//!   reason: the harness never inserts more than 1000 jobs
//! ```

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_saphyr::{MessageFormatter, Spanned};

use super::generate::{GeneratedMutant, Unparsed};

/// The file, in each dialect folder, that declares its equivalent mutants.
pub const FILE: &str = "equivalent-mutants.yaml";

/// One declaration as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    mutant: Spanned<String>,
    statement: String,
    reason: String,
}

/// A declaration that cannot be used, with the place to fix it.
#[derive(Debug, thiserror::Error)]
#[error("{file}:{line}: {kind}")]
pub struct EquivalentError {
    /// The file, as shown to the user (`<dialect>/equivalent-mutants.yaml`).
    pub file: String,
    /// The line in it, from 1 (`line:column` for a YAML error).
    pub line: String,
    /// What is wrong.
    #[source]
    pub kind: EquivalentErrorKind,
}

/// The kinds of declaration error.
#[derive(Debug, thiserror::Error)]
pub enum EquivalentErrorKind {
    /// The file is not a list of declarations.
    #[error("{0}")]
    Yaml(String),
    /// No generated mutant has this id.
    #[error("no generated mutant `{0}`: the statement or the generator changed; remove the declaration or fix its id")]
    Unknown(String),
    /// The statement changed since the declaration.
    #[error(
        "`{mutant}` was declared for another text of `{statement}` (hash {declared}, now {now}): check the reason still holds, then update the hash"
    )]
    Stale {
        /// The mutant.
        mutant: String,
        /// Its statement.
        statement: String,
        /// The hash written.
        declared: String,
        /// The statement's hash now.
        now: String,
    },
    /// The same mutant declared twice.
    #[error("`{0}` is declared twice: keep one")]
    Duplicate(String),
    /// A declaration without a reason.
    #[error("`{0}` has no reason: say why no scenario can kill it")]
    NoReason(String),
}

/// The hash a declaration names its statement by: 64-bit FNV-1a of the
/// statement's SQL as the parser prints it (so comments and spacing do not
/// count, any other edit does), in 16 hexadecimal digits.
pub fn statement_hash(sql: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in sql.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// The declarations in `text` (the content of `file`) checked against the
/// dialect's generated `mutants`: each names a generated mutant, once, with
/// its statement's current hash and a reason. A declaration for a statement
/// in `unparsed` is left unchecked (that statement's mutants are reported
/// as not generated). Returns mutant id -> reason.
pub fn check(
    file: &str,
    text: &str,
    mutants: &[GeneratedMutant],
    unparsed: &[Unparsed],
) -> Result<BTreeMap<String, String>, Vec<EquivalentError>> {
    let error = |line: String, kind| EquivalentError { file: file.to_owned(), line, kind };
    let entries: Vec<Entry> = if text.trim().is_empty() {
        Vec::new()
    } else {
        serde_saphyr::from_str(text).map_err(|e| {
            let at = e.location().map_or_else(|| "1".to_owned(), |l| format!("{}:{}", l.line(), l.column()));
            let message = serde_saphyr::DefaultMessageFormatter.format_message(e.without_snippet()).to_string();
            vec![error(at, EquivalentErrorKind::Yaml(message))]
        })?
    };
    let mut declared = BTreeMap::new();
    let mut errors = Vec::new();
    for e in entries {
        let line = e.mutant.referenced.line().to_string();
        let id = e.mutant.value;
        if unparsed.iter().any(|u| id.strip_prefix(u.statement.as_str()).is_some_and(|rest| rest.starts_with(": "))) {
            continue;
        }
        let Some(m) = mutants.iter().find(|m| m.id == id) else {
            errors.push(error(line, EquivalentErrorKind::Unknown(id)));
            continue;
        };
        let now = statement_hash(&m.before);
        if e.statement != now {
            errors.push(error(
                line,
                EquivalentErrorKind::Stale { mutant: id, statement: m.statement.clone(), declared: e.statement, now },
            ));
            continue;
        }
        if e.reason.trim().is_empty() {
            errors.push(error(line, EquivalentErrorKind::NoReason(id)));
            continue;
        }
        if declared.insert(id.clone(), e.reason).is_some() {
            errors.push(error(line, EquivalentErrorKind::Duplicate(id)));
        }
    }
    if errors.is_empty() { Ok(declared) } else { Err(errors) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mutate::generate::Operator;

    fn mutant() -> GeneratedMutant {
        GeneratedMutant {
            id: "read_jobs: drop ORDER BY".to_owned(),
            operator: Operator::DropOrderBy,
            statement: "read_jobs".to_owned(),
            origin: "x/readback.sql:3".to_owned(),
            before: "SELECT id FROM jobs ORDER BY id".to_owned(),
            after: "SELECT id FROM jobs".to_owned(),
        }
    }

    fn entry(hash: &str, reason: &str) -> String {
        format!("# header\n- mutant: \"read_jobs: drop ORDER BY\"\n  statement: {hash}\n  reason: \"{reason}\"\n")
    }

    #[test]
    fn a_matching_declaration_is_kept_with_its_reason() {
        let hash = statement_hash(&mutant().before);
        let got = check("x/equivalent-mutants.yaml", &entry(&hash, "sorted anyway"), &[mutant()], &[]).unwrap();
        assert_eq!(got["read_jobs: drop ORDER BY"], "sorted anyway");
        assert!(check("f", "", &[mutant()], &[]).unwrap().is_empty());
    }

    #[test]
    fn a_changed_statement_unknown_mutant_or_missing_reason_is_an_error_at_its_line() {
        let e = check("x/equivalent-mutants.yaml", &entry("0000000000000000", "r"), &[mutant()], &[]).unwrap_err();
        assert!(
            e[0].to_string()
                .starts_with("x/equivalent-mutants.yaml:2: `read_jobs: drop ORDER BY` was declared for another text"),
            "{}",
            e[0]
        );
        let e = check("f", &entry(&statement_hash(&mutant().before), " "), &[mutant()], &[]).unwrap_err();
        assert!(e[0].to_string().contains("has no reason"), "{}", e[0]);
        let e = check("f", &entry("0", "r"), &[], &[]).unwrap_err();
        assert!(e[0].to_string().contains("f:2: no generated mutant `read_jobs: drop ORDER BY`"), "{}", e[0]);
        let twice = format!(
            "{}{}",
            entry(&statement_hash(&mutant().before), "r"),
            entry(&statement_hash(&mutant().before), "r").replace("# header\n", "")
        );
        let e = check("f", &twice, &[mutant()], &[]).unwrap_err();
        assert!(e[0].to_string().starts_with("f:5: `read_jobs: drop ORDER BY` is declared twice"), "{}", e[0]);
        let e = check("f", "- mutant: x\n  nope: 1\n", &[mutant()], &[]).unwrap_err();
        assert!(e[0].to_string().starts_with("f:2:"), "{}", e[0]);
    }

    #[test]
    fn a_declaration_for_an_unparsed_statement_is_not_checked() {
        let unparsed =
            Unparsed { statement: "read_jobs".into(), origin: "x/readback.sql:3".into(), message: "m".into() };
        assert!(check("f", &entry("0", "r"), &[], &[unparsed]).unwrap().is_empty());
    }

    #[test]
    fn the_hash_is_fnv1a() {
        assert_eq!(statement_hash(""), "cbf29ce484222325");
        assert_eq!(statement_hash("a"), "af63dc4c8601ec8c");
    }
}
