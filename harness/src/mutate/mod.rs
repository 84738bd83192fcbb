//! The mutation self-test: known-bad edits to a dialect's SQL that the
//! corpus must catch. Two sources of mutants: the fourteen named regression
//! mutants ([`named`]) and mutants generated from each statement's syntax
//! tree ([`generate`]), which work on SQL reapcheck did not write. Generated
//! mutants that no scenario can kill are declared, with a reason, in
//! [`equivalent`]. A mutant the server cannot compile is not applicable
//! there ([`kill`]). A port whose declarations went stale when it renamed or
//! reordered its SQL gets them carried over to its own mutants ([`carry`]).

pub mod carry;
mod clauses;
pub mod equivalent;
mod exprs;
pub mod generate;
pub mod kill;
pub mod named;
pub mod parse;
pub mod select;
mod walk;

pub use generate::{GeneratedMutant, Generation, Operator, Unparsed, generate};
pub use named::{MUTANTS, Mutant, MutantError, apply};
