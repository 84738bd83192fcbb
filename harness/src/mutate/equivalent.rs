//! Declared equivalent mutants: generated mutants that no valid scenario
//! can kill, listed per dialect in `<dialect>/equivalent-mutants.yaml`, each
//! with the hash of its statement's SQL (so editing the statement
//! invalidates the declaration) and the reason it is equivalent.
//!
//! ```yaml
//! - mutant: "read_jobs: append LIMIT 1000"
//!   statement: 3f1c0a9d2e4b5c6d
//!   reason: the harness never inserts more than 1000 jobs
//! - mutant: "lease_defer: replace `COALESCE(x, 0)` with `GREATEST(x, 0)`"
//!   statement: 18dcbe38cc17c75c
//!   reason: x is never negative
//!   servers: ">= 16"      # optional: only where it holds (below 16 GREATEST does not exist)
//!   evidence: reasoned    # optional: reasoned from the SQL, not yet seen surviving
//! ```
//!
//! `servers` ([`Servers`]) limits a declaration to the servers it holds on:
//! elsewhere the mutant is an ordinary one (it must be killed, and a kill
//! is not stale). `evidence: reasoned` ([`Evidence`]) marks a declaration
//! argued from the SQL on a server that could not be run; `mutate` lists
//! such declarations on each leg, and one that is killed fails like any
//! stale declaration.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use serde_saphyr::{MessageFormatter, Spanned};

use super::generate::{GeneratedMutant, Unparsed};
use crate::target::Target;

/// The file, in each dialect folder, that declares its equivalent mutants.
pub const FILE: &str = "equivalent-mutants.yaml";

/// One declaration as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    mutant: Spanned<String>,
    statement: String,
    reason: String,
    #[serde(default)]
    servers: Option<Spanned<String>>,
    #[serde(default)]
    evidence: Evidence,
}

/// How a declaration is known to hold.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Evidence {
    /// Seen surviving the corpus on a real server (the default).
    #[default]
    Measured,
    /// Argued from the SQL only, for a server that could not be run: the
    /// first real run must confirm it survives.
    Reasoned,
}

impl Evidence {
    /// Its value as written in the file.
    pub fn name(self) -> &'static str {
        match self {
            Evidence::Measured => "measured",
            Evidence::Reasoned => "reasoned",
        }
    }
}

/// A declaration that holds: its reason, where it holds, how it is known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Declaration {
    /// Why no scenario can kill the mutant.
    pub reason: String,
    /// The servers it holds on; `None`: every server of the dialect.
    pub servers: Option<Servers>,
    /// Measured or only reasoned.
    pub evidence: Evidence,
}

impl Declaration {
    /// Whether the declaration holds on `server`.
    pub fn holds_on(&self, server: &ServerVersion) -> bool {
        self.servers.as_ref().is_none_or(|s| s.matches(server))
    }
}

/// The product and version a server reported, as `servers` compares them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerVersion {
    /// `mssql`, `postgres`, `mariadb`, ...: the target name it reports first.
    pub product: String,
    /// The version's numbers (`[15, 0, 4385, 2]`); empty when none was found.
    pub numbers: Vec<u64>,
}

impl ServerVersion {
    /// Reads [`crate::backend::Server::version`]'s text: the product is its
    /// first word, the version its first word made of numbers and dots with
    /// at least one dot (SQL Server's `- 15.0.4385.2`, not its `2019`), else
    /// its first number.
    pub fn parse(text: &str) -> ServerVersion {
        let mut words = text.split_whitespace();
        let product = words.next().unwrap_or_default().to_owned();
        let rest: Vec<&str> = words.collect();
        let numeric =
            |w: &&str| !w.is_empty() && w.split('.').all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
        let number = rest.iter().find(|w| numeric(w) && w.contains('.')).or_else(|| rest.iter().find(|w| numeric(w)));
        let numbers = number.map(|n| n.split('.').filter_map(|p| p.parse().ok()).collect()).unwrap_or_default();
        ServerVersion { product, numbers }
    }
}

impl fmt::Display for ServerVersion {
    /// `mssql 15.0.4385.2`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let numbers: Vec<String> = self.numbers.iter().map(u64::to_string).collect();
        if numbers.is_empty() {
            f.write_str(&self.product)
        } else {
            write!(f, "{} {}", self.product, numbers.join("."))
        }
    }
}

/// Where a declaration holds: alternatives separated by commas, each a
/// product, a version bound, or both (`mssql >= 16`, `mariadb`, `< 16`,
/// `15, 16`). A version bound is an operator (`>=`, `>`, `<=`, `<`, `=`;
/// none is `=`) and a version of one or more numbers, compared with as
/// many leading numbers of the server's: `16` is every 16.x, `>= 8.4`
/// is 8.4.0 and later.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Servers {
    text: String,
    alternatives: Vec<Alternative>,
}

impl fmt::Display for Servers {
    /// As written.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// One alternative of [`Servers`].
#[derive(Clone, Debug, PartialEq, Eq)]
struct Alternative {
    product: Option<String>,
    bound: Option<(Ordering, bool, Vec<u64>)>,
}

impl Servers {
    /// Parses `text` for a dialect run by `products` (target names); the
    /// error says what to write instead.
    pub fn parse(text: &str, products: &[&str]) -> Result<Servers, String> {
        let mut alternatives = Vec::new();
        for part in text.split(',') {
            let part = part.trim();
            if part.is_empty() {
                return Err(format!(
                    "`servers: {text:?}` has an empty alternative: write a product ({}), a version bound \
                     (`>= 16`) or both (`{} >= 16`), separated by commas",
                    products.join(", "),
                    products.first().unwrap_or(&"mssql")
                ));
            }
            let (product, rest) = match part.find(|c: char| !c.is_ascii_alphabetic()) {
                Some(0) => (None, part),
                Some(i) => (Some(&part[..i]), part[i..].trim_start()),
                None => (Some(part), ""),
            };
            if let Some(p) = product
                && !products.contains(&p)
            {
                return Err(format!(
                    "`{p}` in `servers` is not a server this dialect runs on: write {}",
                    products.iter().map(|p| format!("`{p}`")).collect::<Vec<_>>().join(" or ")
                ));
            }
            let bound = if rest.is_empty() { None } else { Some(bound(rest)?) };
            alternatives.push(Alternative { product: product.map(str::to_owned), bound });
        }
        Ok(Servers { text: text.trim().to_owned(), alternatives })
    }

    /// Whether `server` is one of them. A version bound never matches a
    /// server whose version could not be read.
    pub fn matches(&self, server: &ServerVersion) -> bool {
        self.alternatives.iter().any(|a| {
            a.product.as_ref().is_none_or(|p| *p == server.product)
                && a.bound.as_ref().is_none_or(|(ordering, or_equal, version)| {
                    if server.numbers.is_empty() {
                        return false;
                    }
                    let n = version.len().min(server.numbers.len());
                    let got = server.numbers[..n].cmp(&version[..n]);
                    got == *ordering || (*or_equal && got == Ordering::Equal)
                })
        })
    }
}

/// `>= 16` and the like: the ordering the server's version must have with
/// the one written, whether equal also matches, and the version.
fn bound(text: &str) -> Result<(Ordering, bool, Vec<u64>), String> {
    let (ordering, or_equal, version) = if let Some(v) = text.strip_prefix(">=") {
        (Ordering::Greater, true, v)
    } else if let Some(v) = text.strip_prefix("<=") {
        (Ordering::Less, true, v)
    } else if let Some(v) = text.strip_prefix('>') {
        (Ordering::Greater, false, v)
    } else if let Some(v) = text.strip_prefix('<') {
        (Ordering::Less, false, v)
    } else if let Some(v) = text.strip_prefix('=') {
        (Ordering::Equal, true, v)
    } else {
        (Ordering::Equal, true, text)
    };
    let version = version.trim();
    let numbers: Option<Vec<u64>> = version.split('.').map(|p| p.parse().ok()).collect();
    match numbers {
        Some(numbers) if !version.is_empty() => Ok((ordering, or_equal, numbers)),
        _ => Err(format!(
            "`{text}` in `servers` is not a version bound: write an operator (>=, >, <=, <, =) and numbers \
             separated by dots, such as `>= 16` or `< 8.4`"
        )),
    }
}

/// A declaration that cannot be used, with the place to fix it.
#[derive(Debug, thiserror::Error)]
#[error("{file}:{line}: {kind}")]
pub struct EquivalentError {
    /// The file, as shown to the user (`<dialect>/equivalent-mutants.yaml`).
    pub file: String,
    /// Where in it: `line:column`, from 1.
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
    /// A `servers` value that cannot be read.
    #[error("`{mutant}`: {message}")]
    Servers {
        /// The mutant.
        mutant: String,
        /// What is wrong and what to write.
        message: String,
    },
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

/// One declaration as written in the file, with where it is: what
/// [`crate::mutate::carry`] carries over to a port's mutants.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Written {
    /// The mutant id written.
    pub mutant: String,
    /// The line of its `mutant` value, from 1.
    pub line: usize,
    /// The column of its `mutant` value, from 1.
    pub column: usize,
    /// The statement hash written.
    pub statement: String,
    /// The reason written.
    pub reason: String,
    /// The `servers` text written, if any (not checked here).
    pub servers: Option<String>,
    /// The evidence written (`measured` when absent).
    pub evidence: Evidence,
}

/// The declarations of `text` (the content of `file`) as written, in file
/// order, unchecked against any mutant; an error when the file is not a
/// list of declarations.
pub fn read(file: &str, text: &str) -> Result<Vec<Written>, Vec<EquivalentError>> {
    Ok(entries(file, text)?
        .into_iter()
        .map(|e| Written {
            line: e.mutant.referenced.line() as usize,
            column: e.mutant.referenced.column() as usize,
            mutant: e.mutant.value,
            statement: e.statement,
            reason: e.reason,
            servers: e.servers.map(|s| s.value),
            evidence: e.evidence,
        })
        .collect())
}

fn entries(file: &str, text: &str) -> Result<Vec<Entry>, Vec<EquivalentError>> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    serde_saphyr::from_str(text).map_err(|e| {
        let at = e.location().map_or_else(|| "1:1".to_owned(), |l| format!("{}:{}", l.line(), l.column()));
        let message = serde_saphyr::DefaultMessageFormatter.format_message(e.without_snippet()).to_string();
        let hint = "; a declaration takes `mutant`, `statement` and `reason`, and optionally `servers` (one text, \
                    such as \">= 16\" or \"mariadb, mysql >= 8.4\") and `evidence` (`reasoned` or `measured`)";
        vec![EquivalentError {
            file: file.to_owned(),
            line: at,
            kind: EquivalentErrorKind::Yaml(format!("{message}{hint}")),
        }]
    })
}

/// The declarations in `text` (the content of `file`, for the dialect
/// `dialect`) checked against the dialect's generated `mutants`: each names
/// a generated mutant, once, with its statement's current hash, a reason
/// and, if any, a `servers` value naming the dialect's products. A
/// declaration for a statement in `unparsed` is left unchecked (that
/// statement's mutants are reported as not generated). Returns mutant id ->
/// declaration.
pub fn check(
    file: &str,
    dialect: &str,
    text: &str,
    mutants: &[GeneratedMutant],
    unparsed: &[Unparsed],
) -> Result<BTreeMap<String, Declaration>, Vec<EquivalentError>> {
    let error = |line: String, kind| EquivalentError { file: file.to_owned(), line, kind };
    let entries = entries(file, text)?;
    let mut products: Vec<&str> = Target::ALL.iter().filter(|t| t.dialect() == dialect).map(|t| t.name()).collect();
    if products.is_empty() {
        products = Target::ALL.iter().map(|t| t.name()).collect();
    }
    let mut declared = BTreeMap::new();
    let mut errors = Vec::new();
    for e in entries {
        let line = format!("{}:{}", e.mutant.referenced.line(), e.mutant.referenced.column());
        let id = e.mutant.value;
        if unparsed.iter().any(|u| id.strip_prefix(u.statement.as_str()).is_some_and(|rest| rest.starts_with(": "))) {
            continue;
        }
        let servers = match &e.servers {
            None => None,
            Some(s) => match Servers::parse(&s.value, &products) {
                Ok(servers) => Some(servers),
                Err(message) => {
                    let at = format!("{}:{}", s.referenced.line(), s.referenced.column());
                    errors.push(error(at, EquivalentErrorKind::Servers { mutant: id, message }));
                    continue;
                }
            },
        };
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
        let declaration = Declaration { reason: e.reason, servers, evidence: e.evidence };
        if declared.insert(id.clone(), declaration).is_some() {
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
            rows_to_differ: 2,
        }
    }

    fn entry(hash: &str, reason: &str) -> String {
        format!("# header\n- mutant: \"read_jobs: drop ORDER BY\"\n  statement: {hash}\n  reason: \"{reason}\"\n")
    }

    fn hash() -> String {
        statement_hash(&mutant().before)
    }

    fn checked(dialect: &str, text: &str) -> Result<BTreeMap<String, Declaration>, Vec<EquivalentError>> {
        check("x/equivalent-mutants.yaml", dialect, text, &[mutant()], &[])
    }

    fn server(text: &str) -> ServerVersion {
        ServerVersion::parse(text)
    }

    #[test]
    fn a_matching_declaration_is_kept_with_its_reason() {
        let got = checked("postgres", &entry(&hash(), "sorted anyway")).unwrap();
        let d = &got["read_jobs: drop ORDER BY"];
        assert_eq!(d.reason, "sorted anyway");
        assert_eq!((d.servers.clone(), d.evidence), (None, Evidence::Measured), "both optional");
        assert!(d.holds_on(&server("postgres 15.4")));
        assert!(check("f", "postgres", "", &[mutant()], &[]).unwrap().is_empty());
    }

    #[test]
    fn a_changed_statement_unknown_mutant_or_missing_reason_is_an_error_at_its_line_and_column() {
        let e = checked("postgres", &entry("0000000000000000", "r")).unwrap_err();
        assert!(
            e[0].to_string().starts_with(
                "x/equivalent-mutants.yaml:2:11: `read_jobs: drop ORDER BY` was declared for another text"
            ),
            "{}",
            e[0]
        );
        let e = checked("postgres", &entry(&hash(), " ")).unwrap_err();
        assert!(e[0].to_string().contains("has no reason"), "{}", e[0]);
        let e = check("f", "postgres", &entry("0", "r"), &[], &[]).unwrap_err();
        assert!(e[0].to_string().contains("f:2:11: no generated mutant `read_jobs: drop ORDER BY`"), "{}", e[0]);
        let twice = format!("{}{}", entry(&hash(), "r"), entry(&hash(), "r").replace("# header\n", ""));
        let e = check("f", "postgres", &twice, &[mutant()], &[]).unwrap_err();
        assert!(e[0].to_string().starts_with("f:5:11: `read_jobs: drop ORDER BY` is declared twice"), "{}", e[0]);
        let e = check("f", "postgres", "- mutant: x\n  nope: 1\n", &[mutant()], &[]).unwrap_err();
        assert!(e[0].to_string().starts_with("f:2:"), "{}", e[0]);
    }

    #[test]
    fn a_declaration_for_an_unparsed_statement_is_not_checked() {
        let unparsed =
            Unparsed { statement: "read_jobs".into(), origin: "x/readback.sql:3".into(), message: "m".into() };
        assert!(check("f", "postgres", &entry("0", "r"), &[], &[unparsed]).unwrap().is_empty());
    }

    #[test]
    fn the_hash_is_fnv1a() {
        assert_eq!(statement_hash(""), "cbf29ce484222325");
        assert_eq!(statement_hash("a"), "af63dc4c8601ec8c");
    }

    #[test]
    fn server_versions_are_read_from_every_products_text() {
        let mssql = "mssql Microsoft SQL Server 2019 (RTM-CU22) (KB5027702) - 15.0.4385.2 (X64)";
        assert_eq!(server(mssql), ServerVersion { product: "mssql".into(), numbers: vec![15, 0, 4385, 2] });
        assert_eq!(server(mssql).to_string(), "mssql 15.0.4385.2");
        assert_eq!(server("mariadb 10.11.6").numbers, [10, 11, 6]);
        assert_eq!(server("postgres 15.20").to_string(), "postgres 15.20");
        assert_eq!(server("sqlite 3.51.3").product, "sqlite");
        assert_eq!(server("mssql unknown").to_string(), "mssql");
    }

    #[test]
    fn servers_bounds_compare_as_many_numbers_as_written() {
        let s = |text: &str| Servers::parse(text, &["mssql"]).unwrap();
        let (v2019, v2022) = (server("mssql x - 15.0.4385.2"), server("mssql x - 16.0.4125.3"));
        assert!(s(">= 16").matches(&v2022) && !s(">= 16").matches(&v2019));
        assert!(s("< 16").matches(&v2019) && !s("< 16").matches(&v2022));
        assert!(s("16").matches(&v2022) && s("= 16").matches(&v2022) && !s("16").matches(&v2019));
        assert!(s("> 15").matches(&v2022) && !s("> 16").matches(&v2022) && s("<= 15").matches(&v2019));
        assert!(s("15, 16").matches(&v2019) && s("15, 16").matches(&v2022));
        assert!(s("mssql").matches(&v2019) && s("mssql >= 16.0.4125").matches(&v2022));
        assert!(!s(">= 16").matches(&server("mssql unreadable")), "a bound needs a version");
        let m = |text: &str| Servers::parse(text, &["mariadb", "mysql"]).unwrap();
        assert!(m("mariadb").matches(&server("mariadb 10.11.6")) && !m("mariadb").matches(&server("mysql 8.4.0")));
        assert!(
            m("mysql >= 8.4").matches(&server("mysql 8.4.0")) && !m("mysql >= 8.4").matches(&server("mysql 8.0.36"))
        );
    }

    #[test]
    fn servers_and_evidence_are_read_and_bad_values_refused_at_their_line_and_column() {
        let with = |extra: &str| format!("{}{extra}", entry(&hash(), "r"));
        let got = checked("mssql", &with("  servers: \">= 16\"\n  evidence: reasoned\n")).unwrap();
        let d = &got["read_jobs: drop ORDER BY"];
        assert_eq!(d.evidence, Evidence::Reasoned);
        assert!(d.holds_on(&server("mssql x - 16.0.1.1")) && !d.holds_on(&server("mssql x - 15.0.1.1")));
        let got = checked("mssql", &with("  evidence: measured\n")).unwrap();
        assert_eq!(got["read_jobs: drop ORDER BY"].evidence, Evidence::Measured);

        let e = checked("mysql", &with("  servers: \"postgres >= 16\"\n")).unwrap_err();
        assert!(
            e[0].to_string().starts_with("x/equivalent-mutants.yaml:5:12: `read_jobs: drop ORDER BY`: `postgres` in `servers` is not a server this dialect runs on: write `mariadb` or `mysql`"),
            "{}",
            e[0]
        );
        let e = checked("mssql", &with("  servers: \">= sixteen\"\n")).unwrap_err();
        assert!(e[0].to_string().starts_with("x/equivalent-mutants.yaml:5:12:"), "{}", e[0]);
        assert!(e[0].to_string().contains("is not a version bound: write an operator"), "{}", e[0]);
        let e = checked("mssql", &with("  servers: \"16,\"\n")).unwrap_err();
        assert!(e[0].to_string().contains("has an empty alternative"), "{}", e[0]);
        let e = checked("mssql", &with("  evidence: guessed\n")).unwrap_err();
        assert!(e[0].to_string().starts_with("x/equivalent-mutants.yaml:5:"), "{}", e[0]);
        assert!(e[0].to_string().contains("reasoned"), "{}", e[0]);
        let e = checked("mssql", &with("  server: \">= 16\"\n")).unwrap_err();
        assert!(e[0].to_string().starts_with("x/equivalent-mutants.yaml:5:"), "{}", e[0]);
        assert!(e[0].to_string().contains("servers"), "names the known keys: {}", e[0]);
    }
}
