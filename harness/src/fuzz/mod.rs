//! Differential property testing (`reapcheck fuzz`): generated scenarios,
//! valid by construction, played on the reference model and on a target;
//! the first difference is shrunk and saved as a scenario file.

mod case;
mod check;
mod save;
pub(crate) mod strategy;

#[cfg(test)]
mod extremes;
#[cfg(test)]
mod metamorphic;

pub use case::{Case, ClassCase, Edge, JobCase, LeaseCase, Offset, StepCase};
pub use check::{
    Compared, Failure, FuzzSettings, TargetFuzz, compare, fuzz_target, fuzz_with, load, model_outcome, rng,
    test_runner, to_yaml,
};
pub use save::{SaveError, SaveErrorKind, save};
pub use strategy::case;
