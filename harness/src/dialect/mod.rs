//! Dialects: folders of SQL files holding the named statements of the
//! contract, loaded from the copy embedded in the binary or from a folder
//! given with `--dialects`, and checked against the contract.

pub mod contract;
pub mod emptying;
mod error;
mod load;
#[cfg(test)]
mod padding;
pub mod pins;
pub mod profile;
mod split;
pub mod text;

pub use error::{DialectError, DialectErrorKind};
pub use load::{Dialect, Provenance, Source, Statement, dialect_names, embedded_files, read_extra};
pub use profile::Profile;
