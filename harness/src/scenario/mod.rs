//! Scenario files: their types, strict reading, validation and discovery.

mod error;
mod load;
mod located;
mod step_serde;
mod types;
mod validate;

pub use error::{ScenarioError, ScenarioErrorKind};
pub use load::{LoadedScenario, discover, load_dir, parse_file, parse_named, parse_text};
pub use located::{Located, Position};
pub use types::*;
