//! Scenario files: their types, strict reading, validation and discovery.

mod bounds;
mod error;
mod limits;
mod load;
mod located;
mod seconds;
mod step_serde;
mod target_limits;
mod types;
mod validate;

pub use error::{ScenarioError, ScenarioErrorKind};
pub use limits::{
    MAX_CHECKPOINT_BYTES, MAX_DESCRIPTION_BYTES, MAX_LEASE_ROWS, MAX_NAME_BYTES, MAX_ROWS, MAX_STEPS, checkpoint_bytes,
};
pub use load::{LoadedScenario, MAX_FILE_BYTES, discover, load_dir, parse_file, parse_named, parse_text, read_text};
pub use located::{Located, Position};
pub use seconds::MAX_COUNTER;
pub use target_limits::{POSTGRES_INDEX_KEY_BYTES, outside_limits, outside_limits_of};
pub use types::*;
