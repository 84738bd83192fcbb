//! The statement contract: every named statement a dialect provides, the
//! parameters the driver binds to it, and the columns it returns.

use crate::engine::Kind;
use crate::feature::Feature;

/// What a statement does, and so how its result is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// One or more commands separated by `;`, results ignored.
    Script,
    /// One command; its count of changed rows is the result.
    Update,
    /// One command; its rows are the result, with these columns in order.
    Query(&'static [Column]),
}

/// A returned column: its name (documentation only; read by position), kind
/// and whether it may be NULL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Column {
    /// The column's name.
    pub name: &'static str,
    /// Its kind.
    pub kind: Kind,
    /// Whether NULL is allowed.
    pub nullable: bool,
}

const fn col(name: &'static str, kind: Kind) -> Column {
    Column { name, kind, nullable: false }
}

const fn opt(name: &'static str, kind: Kind) -> Column {
    Column { name, kind, nullable: true }
}

/// One statement of the contract.
#[derive(Clone, Copy, Debug)]
pub struct StatementSpec {
    /// Its name after `-- name:` in a dialect file.
    pub name: &'static str,
    /// The parameters the driver binds; the SQL may use any of them.
    pub params: &'static [&'static str],
    /// How it runs.
    pub shape: Shape,
    /// Whether the legacy schema needs its own text, named `legacy_<name>`.
    pub has_legacy: bool,
    /// Whether an engine without the feature may leave it blank (comments
    /// only), saying why.
    pub may_be_blank: bool,
    /// The queue feature it belongs to: a dialect whose profile declares
    /// the feature absent must not define it (docs/dialect-profile.md).
    /// `legacy_` texts belong to [`Feature::Legacy`] whatever this says.
    pub feature: Option<Feature>,
    /// Whether a dialect may leave it out entirely.
    pub optional: bool,
    /// What it must do, in one line.
    pub doc: &'static str,
}

use Kind::{Instant, Int, Text};

const JOB_COLUMNS: &[Column] = &[
    col("id", Text),
    col("status", Text),
    col("attempts", Int),
    opt("claim_token", Text),
    opt("heartbeat_at", Instant),
    col("run_at", Instant),
    col("updated_at", Instant),
    opt("failed_at", Instant),
    opt("completed_at", Instant),
    opt("last_error", Text),
];

/// Every statement, in the order a scenario first uses them.
pub const CONTRACT: &[StatementSpec] = &[
    StatementSpec {
        name: "create_namespace",
        params: &[],
        shape: Shape::Script,
        has_legacy: false,
        may_be_blank: true,
        feature: None,
        optional: false,
        doc: "create the scenario's private schema or database `{namespace}` (blank where each run is a new database)",
    },
    StatementSpec {
        name: "enter_namespace",
        params: &[],
        shape: Shape::Script,
        has_legacy: false,
        may_be_blank: true,
        feature: None,
        optional: false,
        doc: "make `{namespace}` where unqualified table names resolve, on this connection",
    },
    StatementSpec {
        name: "drop_namespace",
        params: &[],
        shape: Shape::Script,
        has_legacy: false,
        may_be_blank: true,
        feature: None,
        optional: false,
        doc: "drop `{namespace}` and everything in it",
    },
    StatementSpec {
        name: "empty_namespace",
        params: &[],
        shape: Shape::Script,
        has_legacy: false,
        may_be_blank: false,
        feature: None,
        optional: true,
        doc: "optional: delete every row of every table `schema` and `legacy_schema` create, so that the next \
              scenario on this connection reuses the tables and starts from none (without it, each scenario \
              gets a new namespace)",
    },
    StatementSpec {
        name: "set_time_zone",
        params: &["zone"],
        shape: Shape::Script,
        has_legacy: false,
        may_be_blank: true,
        feature: None,
        optional: false,
        doc: "set the session time zone to :zone (an empty text where the engine has none)",
    },
    StatementSpec {
        name: "set_clock",
        params: &["now"],
        shape: Shape::Script,
        has_legacy: false,
        may_be_blank: false,
        feature: None,
        optional: true,
        doc: "optional: make the database's own clock read :now, run before each operation that binds :now",
    },
    StatementSpec {
        name: "schema",
        params: &[],
        shape: Shape::Script,
        has_legacy: true,
        may_be_blank: false,
        feature: None,
        optional: false,
        doc: "create jobs and job_leases, instants exact to the microsecond",
    },
    StatementSpec {
        name: "insert_job",
        params: &[
            "id",
            "class",
            "queue",
            "status",
            "attempts",
            "max_retries",
            "claim_timeout",
            "claim_token",
            "heartbeat_at",
            "run_at",
            "updated_at",
        ],
        shape: Shape::Update,
        has_legacy: true,
        may_be_blank: false,
        feature: None,
        optional: false,
        doc: "insert one job row at setup",
    },
    StatementSpec {
        name: "insert_lease",
        params: &["name", "owner", "expires_at"],
        shape: Shape::Update,
        has_legacy: false,
        may_be_blank: false,
        feature: Some(Feature::Leases),
        optional: false,
        doc: "insert one lease row at setup",
    },
    StatementSpec {
        name: "claim",
        params: &["id", "token", "claim_timeout", "now", "beat_cutoff", "claim_cutoff"],
        shape: Shape::Update,
        has_legacy: true,
        may_be_blank: false,
        feature: None,
        optional: false,
        doc: "pending and run_at <= now: processing, attempts + 1, updated_at, claim_timeout, token; clear heartbeat_at (:beat_cutoff, :claim_cutoff: NULL unless the policy recovers by the next claim)",
    },
    StatementSpec {
        name: "heartbeat",
        params: &["id", "token", "now"],
        shape: Shape::Update,
        has_legacy: true,
        may_be_blank: false,
        feature: None,
        optional: false,
        doc: "heartbeat_at = now (legacy: updated_at) where id, processing and token match",
    },
    StatementSpec {
        name: "complete",
        params: &["id", "token", "now"],
        shape: Shape::Update,
        has_legacy: false,
        may_be_blank: false,
        feature: None,
        optional: false,
        doc: "completed where id, processing and token match",
    },
    StatementSpec {
        name: "read_attempt",
        params: &["id", "token"],
        shape: Shape::Query(&[col("attempts", Int), col("max_retries", Int)]),
        has_legacy: false,
        may_be_blank: false,
        feature: Some(Feature::WorkerFail),
        optional: false,
        doc: "attempts and max_retries of the live attempt",
    },
    StatementSpec {
        name: "fail_retry",
        params: &["id", "token", "attempts", "now", "run_at"],
        shape: Shape::Update,
        has_legacy: false,
        may_be_blank: false,
        feature: Some(Feature::WorkerFail),
        optional: false,
        doc: "the worker's failure with retries left: back to pending at run_at",
    },
    StatementSpec {
        name: "fail_final",
        params: &["id", "token", "attempts", "now"],
        shape: Shape::Update,
        has_legacy: false,
        may_be_blank: false,
        feature: Some(Feature::WorkerFail),
        optional: false,
        doc: "the worker's failure with no retries left: failed",
    },
    StatementSpec {
        name: "reap_scan",
        params: &["now", "all_queues", "queues"],
        shape: Shape::Query(&[
            col("id", Text),
            col("class", Text),
            col("attempts", Int),
            col("max_retries", Int),
            opt("claim_timeout", Int),
            col("has_beat", Int),
        ]),
        has_legacy: true,
        may_be_blank: false,
        feature: None,
        optional: false,
        doc: "processing rows with last_seen < now - 30 s in the queues (:queues is comma-separated), by id",
    },
    StatementSpec {
        name: "reap_retry",
        params: &["id", "attempts", "cutoff", "now", "run_at"],
        shape: Shape::Update,
        has_legacy: true,
        may_be_blank: false,
        feature: None,
        optional: false,
        doc: "guarded by id, processing, attempts and last_seen < cutoff: back to pending at run_at",
    },
    StatementSpec {
        name: "reap_interrupt",
        params: &["id", "attempts", "cutoff", "now"],
        shape: Shape::Update,
        has_legacy: true,
        may_be_blank: false,
        feature: None,
        optional: false,
        doc: "guarded like reap_retry: interrupted",
    },
    StatementSpec {
        name: "reap_fail",
        params: &["id", "attempts", "cutoff", "now"],
        shape: Shape::Update,
        has_legacy: true,
        may_be_blank: false,
        feature: None,
        optional: false,
        doc: "guarded like reap_retry: failed",
    },
    StatementSpec {
        name: "lease_acquire",
        params: &["name", "token", "expires_at"],
        shape: Shape::Update,
        has_legacy: false,
        may_be_blank: false,
        feature: Some(Feature::Leases),
        optional: false,
        doc: "insert the lease unless a row of that name exists",
    },
    StatementSpec {
        name: "lease_takeover",
        params: &["name", "token", "now", "expires_at"],
        shape: Shape::Update,
        has_legacy: false,
        may_be_blank: false,
        feature: Some(Feature::Leases),
        optional: false,
        doc: "take the lease over where expires_at < now",
    },
    StatementSpec {
        name: "lease_defer",
        params: &["id", "token", "name", "now"],
        shape: Shape::Update,
        has_legacy: false,
        may_be_blank: false,
        feature: Some(Feature::Leases),
        optional: false,
        doc: "give the claim back: pending, attempts - 1, run_at = now + min(30, max(1, ceil(expires_at - now)))",
    },
    StatementSpec {
        name: "lease_renew",
        params: &["name", "token", "expires_at"],
        shape: Shape::Update,
        has_legacy: false,
        may_be_blank: false,
        feature: Some(Feature::Leases),
        optional: false,
        doc: "extend the lease where the owner is the token",
    },
    StatementSpec {
        name: "lease_release",
        params: &["name", "token"],
        shape: Shape::Update,
        has_legacy: false,
        may_be_blank: false,
        feature: Some(Feature::Leases),
        optional: false,
        doc: "delete the lease where the owner is the token",
    },
    StatementSpec {
        name: "read_jobs",
        params: &[],
        shape: Shape::Query(JOB_COLUMNS),
        has_legacy: true,
        may_be_blank: false,
        feature: None,
        optional: false,
        doc: "every job row by id (legacy: heartbeat_at NULL)",
    },
    StatementSpec {
        name: "read_leases",
        params: &[],
        shape: Shape::Query(&[col("name", Text), col("owner", Text), col("expires_at", Instant)]),
        has_legacy: false,
        may_be_blank: false,
        feature: Some(Feature::Leases),
        optional: false,
        doc: "every lease row by name",
    },
];

/// The text replaced by the scenario's namespace, an identifier reapcheck
/// generates (`rc_` and lowercase letters, digits and underscores), never a
/// value from a scenario.
pub const NAMESPACE_MARKER: &str = "{namespace}";

/// The statements that make, enter, empty and drop a namespace: run by the
/// harness around scenarios to isolate them, never by the driver for a
/// scenario's steps, so statement coverage does not judge them.
pub const NAMESPACE_SCRIPTS: [&str; 4] = ["create_namespace", "enter_namespace", "empty_namespace", "drop_namespace"];

/// The feature statement `name` belongs to, if any (`legacy_` texts: legacy).
pub fn feature_of(name: &str) -> Option<Feature> {
    if name.starts_with("legacy_") { Some(Feature::Legacy) } else { spec(name).and_then(|s| s.feature) }
}

/// The statement called `name` (a `legacy_` prefix names the same spec).
pub fn spec(name: &str) -> Option<&'static StatementSpec> {
    let base = name.strip_prefix("legacy_").unwrap_or(name);
    CONTRACT.iter().find(|s| s.name == base && (base == name || s.has_legacy))
}

/// Every statement name a complete dialect with every feature defines
/// (optional statements left out).
pub fn required_names() -> impl Iterator<Item = String> {
    required().map(|(name, _)| name)
}

/// [`required_names`], each with the feature it belongs to.
pub fn required() -> impl Iterator<Item = (String, Option<Feature>)> {
    CONTRACT.iter().filter(|s| !s.optional).flat_map(|s| {
        let legacy = s.has_legacy.then(|| (format!("legacy_{}", s.name), Some(Feature::Legacy)));
        std::iter::once((s.name.to_owned(), s.feature)).chain(legacy)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_names_exist_only_where_the_schema_matters() {
        assert!(spec("legacy_claim").is_some());
        assert!(spec("legacy_complete").is_none());
        assert!(spec("claim").is_some());
        assert!(spec("nope").is_none());
        assert_eq!(required_names().filter(|n| n.starts_with("legacy_")).count(), 9);
    }

    #[test]
    fn statements_belong_to_their_features_and_set_clock_is_optional() {
        assert_eq!(feature_of("legacy_claim"), Some(Feature::Legacy));
        assert_eq!(feature_of("lease_defer"), Some(Feature::Leases));
        assert_eq!(feature_of("read_leases"), Some(Feature::Leases));
        assert_eq!(feature_of("fail_final"), Some(Feature::WorkerFail));
        assert_eq!(feature_of("claim"), None);
        assert!(spec("set_clock").is_some_and(|s| s.optional));
        assert!(required_names().all(|n| n != "set_clock"));
    }

    #[test]
    fn architecture_md_lists_every_statement_with_its_parameters() {
        let doc = include_str!("../../../ARCHITECTURE.md");
        for s in CONTRACT {
            let row = doc
                .lines()
                .find(|l| l.starts_with(&format!("| `{}`", s.name)))
                .unwrap_or_else(|| panic!("ARCHITECTURE.md has no row for `{}`", s.name));
            for p in s.params {
                assert!(row.contains(&format!(":{p}")), "ARCHITECTURE.md's `{}` row lacks :{p}", s.name);
            }
            assert_eq!(row.contains("(+ `legacy_`)"), s.has_legacy, "legacy marker of `{}`", s.name);
        }
    }
}
