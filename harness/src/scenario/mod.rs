//! Scenario files: their types, strict reading, validation and discovery.

mod bounds;
mod error;
mod load;
mod located;
mod seconds;
mod step_serde;
mod types;
mod validate;

pub use error::{ScenarioError, ScenarioErrorKind};
pub use load::{LoadedScenario, MAX_FILE_BYTES, discover, load_dir, parse_file, parse_named, parse_text, read_text};
pub use located::{Located, Position};
pub use seconds::MAX_COUNTER;
pub use types::*;
