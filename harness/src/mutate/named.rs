//! The fourteen named mutants, kept as regression cases: known-bad edits to
//! a dialect's SQL, each a real bug class, written as a regular expression
//! over the text of named statements. Each must apply to every shipped
//! dialect (a test checks it); on a user's port whose SQL is spelled
//! differently a named mutant may not apply, and is then reported as not
//! applicable and not counted (the generated mutants cover that SQL).

use regex::Regex;

use crate::dialect::Dialect;

/// One known-bad edit.
#[derive(Clone, Copy, Debug)]
pub struct Mutant {
    /// Short name.
    pub id: &'static str,
    /// The bug it plants.
    pub bug: &'static str,
    /// The statements it edits; it must match in each.
    pub statements: &'static [&'static str],
    /// What it looks for (a regular expression).
    pub pattern: &'static str,
    /// What it writes instead (`$1` names a group).
    pub replacement: &'static str,
}

const REAP_UPDATES: &[&str] = &["reap_retry", "reap_interrupt", "reap_fail"];
const REAP_ALL: &[&str] = &["reap_scan", "reap_retry", "reap_interrupt", "reap_fail"];
const LEGACY_REAP_UPDATES: &[&str] = &["legacy_reap_retry", "legacy_reap_interrupt", "legacy_reap_fail"];

/// The catalogue.
pub const MUTANTS: &[Mutant] = &[
    Mutant {
        id: "coalesce-swapped",
        bug: "COALESCE arguments swapped: the claim time hides every heartbeat",
        statements: REAP_ALL,
        // `last_seen`: a stored generated column of that COALESCE, which
        // the MySQL dialect's scan compares so its index serves it.
        pattern: r"COALESCE\(\s*heartbeat_at\s*,\s*updated_at\s*\)|\blast_seen\b",
        replacement: "COALESCE(updated_at, heartbeat_at)",
    },
    Mutant {
        id: "has-beat-inverted",
        bug: "has_beat inverted: the grace applies to jobs that never beat",
        statements: &["reap_scan"],
        pattern: r"WHEN\s+heartbeat_at\s+IS\s+NULL\s+THEN\s+0\s+ELSE\s+1",
        replacement: "WHEN heartbeat_at IS NULL THEN 1 ELSE 0",
    },
    Mutant {
        id: "grace-ignored",
        bug: "the grace ignored: has_beat always 0, so only the claim window reaps",
        statements: &["reap_scan"],
        pattern: r"WHEN\s+heartbeat_at\s+IS\s+NULL\s+THEN\s+0\s+ELSE\s+1",
        replacement: "WHEN heartbeat_at IS NULL THEN 0 ELSE 0",
    },
    Mutant {
        id: "guard-not-strict",
        bug: "`<` made `<=` in the staleness guard: a job exactly at the cutoff is reaped",
        statements: REAP_UPDATES,
        pattern: r"(COALESCE\(\s*heartbeat_at\s*,\s*updated_at\s*\)\s*)<(\s*:cutoff)",
        replacement: "$1<=$2",
    },
    Mutant {
        id: "floor-not-strict",
        bug: "`<` made `<=` in the scan floor: a job exactly 30 s silent is a candidate",
        statements: &["reap_scan"],
        pattern: r"((?:COALESCE\(\s*heartbeat_at\s*,\s*updated_at\s*\)|\blast_seen\b)\s*)<([^=])",
        replacement: "$1<=$2",
    },
    Mutant {
        id: "floor-60s",
        bug: "the scan floor moved from 30 to 60 s: short graces stop working",
        statements: &["reap_scan"],
        pattern: r"\b30(0{6})?\b",
        replacement: "60$1",
    },
    Mutant {
        id: "attempts-guard-dropped",
        bug: "the attempts guard dropped: a re-claimed job is reaped by a stale scan",
        statements: REAP_UPDATES,
        pattern: r"\s+AND\s+attempts\s*=\s*:attempts",
        replacement: "",
    },
    Mutant {
        id: "staleness-recheck-dropped",
        bug: "the UPDATE no longer re-checks staleness: a heartbeat after the scan is ignored",
        statements: REAP_UPDATES,
        pattern: r"\s+AND\s+COALESCE\(\s*heartbeat_at\s*,\s*updated_at\s*\)\s*<\s*:cutoff",
        replacement: "",
    },
    Mutant {
        id: "claim-keeps-heartbeat",
        bug: "the claim no longer clears heartbeat_at: the last attempt's beats count for the new one",
        statements: &["claim"],
        pattern: r",\s*heartbeat_at\s*=\s*NULL",
        replacement: "",
    },
    Mutant {
        id: "complete-unfenced",
        bug: "the token guard dropped from complete: a dead worker's late done lands",
        statements: &["complete"],
        pattern: r"\s+AND\s+claim_token\s*=\s*:token",
        replacement: "",
    },
    Mutant {
        id: "heartbeat-unfenced",
        bug: "the token guard dropped from heartbeat: a dead attempt keeps a re-claimed job alive",
        statements: &["heartbeat"],
        pattern: r"\s+AND\s+claim_token\s*=\s*:token",
        replacement: "",
    },
    Mutant {
        id: "legacy-guard-not-strict",
        bug: "`<` made `<=` in the legacy table's guard: a job exactly at the cutoff is reaped",
        statements: LEGACY_REAP_UPDATES,
        pattern: r"(updated_at\s*)<(\s*:cutoff)",
        replacement: "$1<=$2",
    },
    Mutant {
        id: "legacy-heartbeat-lost",
        bug: "a heartbeat on the legacy table writes nothing the reaper reads",
        statements: &["legacy_heartbeat"],
        pattern: r"updated_at\s*=\s*:now",
        replacement: "updated_at = updated_at",
    },
    Mutant {
        id: "takeover-ignores-expiry",
        bug: "the lease takeover ignores expiry: an exclusive job runs twice at once",
        statements: &["lease_takeover"],
        pattern: r"\s+AND\s+expires_at\s*<\s*:now",
        replacement: "",
    },
];

/// A named mutant whose pattern is not in a statement it names.
#[derive(Debug, thiserror::Error)]
#[error(
    "named mutant `{mutant}` does not apply to {dialect}'s `{statement}` ({origin}): its SQL does not have the shape the mutant edits, so it is not counted"
)]
pub struct MutantError {
    /// The mutant.
    pub mutant: &'static str,
    /// The dialect.
    pub dialect: String,
    /// The statement that lacks the pattern.
    pub statement: &'static str,
    /// Where that statement is defined.
    pub origin: String,
}

/// `dialect` with `mutant` applied to each statement it names.
pub fn apply(dialect: &Dialect, mutant: &Mutant) -> Result<Dialect, MutantError> {
    // A pattern that does not compile applies nowhere; the catalogue test
    // applies every pattern, so this cannot happen in a shipped build.
    let Ok(pattern) = Regex::new(mutant.pattern) else {
        return Err(MutantError {
            mutant: mutant.id,
            dialect: dialect.name.clone(),
            statement: mutant.statements.first().copied().unwrap_or_default(),
            origin: "its pattern".to_owned(),
        });
    };
    let mut mutated = dialect.clone();
    for &name in mutant.statements {
        // A statement the policy never runs cannot be caught, and one of a
        // feature the profile declares absent is not there to edit: the
        // mutant does not apply.
        if dialect.profile.policy.never_runs_statement(name) {
            return Err(MutantError {
                mutant: mutant.id,
                dialect: dialect.name.clone(),
                statement: name,
                origin: "never run: the dialect's policy never runs it".to_owned(),
            });
        }
        let Some(statement) = dialect.find(name, crate::scenario::Schema::Standard) else {
            return Err(MutantError {
                mutant: mutant.id,
                dialect: dialect.name.clone(),
                statement: name,
                origin: "not defined: its feature is declared absent".to_owned(),
            });
        };
        let edited = pattern.replace_all(&statement.sql, mutant.replacement);
        if edited == statement.sql {
            return Err(MutantError {
                mutant: mutant.id,
                dialect: dialect.name.clone(),
                statement: name,
                origin: statement.origin.clone(),
            });
        }
        mutated = mutated.with_sql(name, edited.into_owned());
    }
    Ok(mutated)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::Source;

    #[test]
    fn every_mutant_applies_to_every_shipped_dialect() {
        for name in crate::dialect::dialect_names(&Source::Embedded) {
            let dialect = Dialect::load(&Source::Embedded, &name).unwrap();
            for m in MUTANTS {
                let mutated = apply(&dialect, m).unwrap_or_else(|e| panic!("{e}"));
                for s in m.statements {
                    let before = &dialect.statement(s, crate::scenario::Schema::Standard).sql;
                    let after = &mutated.statement(s, crate::scenario::Schema::Standard).sql;
                    assert_ne!(before, after, "{} left {name}/{s} unchanged", m.id);
                }
            }
        }
    }

    #[test]
    fn a_mutant_of_a_statement_whose_feature_is_absent_does_not_apply() {
        let ports = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ports/no-leases");
        let dialect = Dialect::load(&Source::Folder(ports), "sqlite").unwrap();
        let m = MUTANTS.iter().find(|m| m.id == "takeover-ignores-expiry").unwrap();
        let e = apply(&dialect, m).unwrap_err();
        assert_eq!(e.statement, "lease_takeover");
        assert!(e.to_string().contains("not defined: its feature is declared absent"), "{e}");
    }

    #[test]
    fn a_mutant_that_finds_nothing_is_an_error() {
        let dialect = Dialect::load(&Source::Embedded, "sqlite").unwrap();
        let m = Mutant { id: "x", bug: "x", statements: &["complete"], pattern: "NO SUCH TEXT", replacement: "" };
        let e = apply(&dialect, &m).unwrap_err();
        assert!(
            e.to_string()
                .contains("named mutant `x` does not apply to sqlite's `complete` (builtin:sqlite/worker.sql:"),
            "{e}"
        );
    }

    #[test]
    fn mutant_ids_are_unique() {
        let mut ids: Vec<_> = MUTANTS.iter().map(|m| m.id).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), MUTANTS.len());
    }
}
