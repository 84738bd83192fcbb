//! A value with the place in its file where it was written.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A line and column in a scenario file, both counted from 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Position {
    /// The line.
    pub line: u64,
    /// The column.
    pub column: u64,
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// A value and, when it came from a file, where.
///
/// Equality, ordering and hashing look at the value alone, so a scenario
/// written back to YAML and parsed again compares equal to the original.
#[derive(Clone, Debug)]
pub struct Located<T> {
    value: T,
    position: Option<Position>,
}

impl<T> Located<T> {
    /// A value made in code, with no position.
    pub fn new(value: T) -> Self {
        Located { value, position: None }
    }

    /// A value read at `position`.
    pub fn at(value: T, position: Option<Position>) -> Self {
        Located { value, position }
    }

    /// Where the value was written, when known.
    pub fn position(&self) -> Option<Position> {
        self.position
    }

    /// The value itself.
    pub fn value(&self) -> &T {
        &self.value
    }
}

impl<T> Deref for Located<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

impl Borrow<str> for Located<String> {
    fn borrow(&self) -> &str {
        &self.value
    }
}

impl<T: PartialEq> PartialEq for Located<T> {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

impl<T: Eq> Eq for Located<T> {}

impl<T: Ord> PartialOrd for Located<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<T: Ord> Ord for Located<T> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.value.cmp(&other.value)
    }
}

impl<T: Hash> Hash for Located<T> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.value.hash(state)
    }
}

impl<T: fmt::Display> fmt::Display for Located<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.value.fmt(f)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Located<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let spanned = serde_saphyr::Spanned::<T>::deserialize(d)?;
        let at = spanned.referenced;
        let position = (at.line() > 0).then(|| Position { line: at.line(), column: at.column() });
        Ok(Located { value: spanned.value, position })
    }
}

impl<T: Serialize> Serialize for Located<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.value.serialize(s)
    }
}
