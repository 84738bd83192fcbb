//! What can be wrong with a dialect.

use std::fmt;

/// A dialect that cannot be used, with the place to fix it.
#[derive(Debug, thiserror::Error)]
pub struct DialectError {
    /// The file (or folder) at fault, as shown to the user.
    pub file: String,
    /// The line in it, when known.
    pub line: Option<u32>,
    /// The column in that line, when known (profile errors).
    pub column: Option<u32>,
    /// What is wrong.
    #[source]
    pub kind: DialectErrorKind,
}

impl fmt::Display for DialectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.column) {
            (Some(line), Some(column)) => write!(f, "{}:{line}:{column}: {}", self.file, self.kind),
            (Some(line), None) => write!(f, "{}:{line}: {}", self.file, self.kind),
            _ => write!(f, "{}: {}", self.file, self.kind),
        }
    }
}

/// The kinds of dialect error.
#[derive(Debug, thiserror::Error)]
pub enum DialectErrorKind {
    /// No folder of that name.
    #[error("no dialect `{name}` here: the dialects are {known}")]
    NotFound {
        /// The dialect asked for.
        name: String,
        /// The dialects present.
        known: String,
    },
    /// A file or folder could not be read.
    #[error("cannot read it: {0}")]
    Read(String),
    /// A `-- name:` marker or the text around it is malformed.
    #[error("{0}")]
    Layout(String),
    /// `empty_namespace` leaves a table `schema` creates as it was.
    #[error(
        "`empty_namespace` does not empty table `{table}`, which `{created_by}` creates: the next scenario on \
         the connection would see this one's rows; add `DELETE FROM {table}` to it"
    )]
    NotEmptied {
        /// The table.
        table: String,
        /// The statement creating it.
        created_by: String,
    },
    /// A statement the contract does not have.
    #[error("unknown statement `{0}`: see the contract in ARCHITECTURE.md for the names")]
    Unknown(String),
    /// The same statement twice.
    #[error("statement `{name}` is defined twice (first at {first}): keep one")]
    Duplicate {
        /// The statement.
        name: String,
        /// Where it was first defined.
        first: String,
    },
    /// A statement of the contract is missing.
    #[error("missing statement `{name}`: add `-- name: {name}` to one of the files ({doc})")]
    Missing {
        /// The statement.
        name: String,
        /// What it must do.
        doc: &'static str,
    },
    /// The SQL uses a parameter the driver does not bind.
    #[error("statement `{name}` uses `:{param}`, which the driver does not bind: it binds {supplied}")]
    UnboundParameter {
        /// The statement.
        name: String,
        /// The parameter used.
        param: String,
        /// The parameters bound.
        supplied: String,
    },
    /// A statement of a feature the dialect's profile declares it lacks.
    #[error(
        "statement `{name}` belongs to feature `{feature}`, which {profile} declares absent: \
         remove the statement or add `{feature}` to `features`"
    )]
    AbsentFeatureDefined {
        /// The statement.
        name: String,
        /// Its feature.
        feature: crate::feature::Feature,
        /// The profile file, as shown.
        profile: String,
    },
    /// A statement of a feature the dialect has is missing.
    #[error(
        "missing statement `{name}` of feature `{feature}`, which {profile}: add `-- name: {name}` \
         to one of the files ({doc}), or leave `{feature}` out of `features` in dialect.toml"
    )]
    MissingOfFeature {
        /// The statement.
        name: String,
        /// Its feature.
        feature: crate::feature::Feature,
        /// Where the feature is declared present, in words.
        profile: String,
        /// What it must do.
        doc: &'static str,
    },
    /// The profile file is not valid.
    #[error("{0}")]
    Profile(String),
    /// A pinned outcome (`pinned/*.yaml`) is not valid.
    #[error("{0}")]
    Pin(String),
    /// A statement that must do something is blank.
    #[error("statement `{0}` is blank: it must hold SQL")]
    Blank(String),
    /// A one-command statement holds several.
    #[error("statement `{0}` holds several commands: only schema-like scripts may")]
    SeveralCommands(String),
}
