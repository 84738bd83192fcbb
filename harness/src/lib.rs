//! reapcheck: a conformance harness for the reapers of SQL-backed job queues.
//!
//! A scenario (YAML, [`scenario`]) is played by the [`driver`] against the
//! reference [`model`] and against each database [`target`] through its
//! dialect's SQL ([`dialect`], [`sql`], [`backend`]); every run yields an
//! [`outcome`], and all of them must equal the scenario's committed snapshot
//! ([`snapshot`]). [`runner`] ties these together for the CLI and the tests.

/// reapcheck's version and the commit it was built from:
/// `0.1.0 (commit 0123456789ab)`, or `(commit unknown)` when built outside
/// a git checkout. `--version` prints it and every `outcomes.json` records
/// it, so `verdict` refuses legs run by different builds.
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("REAPCHECK_COMMIT"), ")");

pub mod adapter;
pub mod backend;
pub mod compare;
pub mod config;
#[cfg(feature = "containers")]
pub mod containers;
pub mod corpus;
pub mod coverage;
pub mod deadline;
pub mod dialect;
pub mod diff;
pub mod driver;
pub mod engine;
pub mod expect;
pub mod feature;
pub mod fuzz;
pub mod input_file;
pub mod interrupt;
pub mod invariants;
pub mod isolation;
pub mod model;
pub mod mutate;
pub mod namespace;
pub mod outcome;
pub mod parallel;
pub mod policy;
pub mod progress;
pub mod race;
pub mod reach;
pub mod redact;
pub mod relax;
pub mod report;
pub mod resolution;
pub mod rules;
pub mod runner;
pub mod scale;
pub mod scenario;
pub mod snapshot;
pub mod sql;
pub mod statement_log;
pub mod target;
pub mod time;
pub mod trace;
