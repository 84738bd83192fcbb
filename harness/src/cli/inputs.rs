//! Loading what a command needs, reporting every problem at once.

use reapcheck::dialect::{Dialect, DialectError, Source};
use reapcheck::scenario::{LoadedScenario, ScenarioError, load_dir};

use super::Inputs;

impl Inputs {
    /// The dialect source these inputs name.
    pub fn source(&self) -> Source {
        self.dialects.clone().map_or(Source::Embedded, Source::Folder)
    }

    /// The scenarios whose names contain a filter (`exact`: equal one).
    pub fn scenarios(&self, filters: &[String], exact: bool) -> Result<Vec<LoadedScenario>, Vec<ScenarioError>> {
        let all = load_dir(&self.scenarios, &[])?;
        Ok(all
            .into_iter()
            .filter(|s| {
                filters.is_empty()
                    || filters.iter().any(|f| if exact { s.name == *f } else { s.name.contains(f.as_str()) })
            })
            .collect())
    }

    /// Dialects by name, all checked.
    pub fn dialects(&self, names: &[&str]) -> Result<Vec<Dialect>, Vec<DialectError>> {
        let source = self.source();
        let mut loaded = Vec::new();
        let mut errors = Vec::new();
        for name in names {
            match Dialect::load(&source, name) {
                Ok(d) => loaded.push(d),
                Err(mut e) => errors.append(&mut e),
            }
        }
        if errors.is_empty() { Ok(loaded) } else { Err(errors) }
    }
}

/// Prints each error on its own line to standard error.
pub fn report<E: std::fmt::Display>(errors: &[E]) {
    for e in errors {
        eprintln!("error: {e}");
    }
}
