//! The parts of a queue a dialect may declare absent in its profile
//! (`dialect.toml`, see docs/dialect-profile.md), and which of them a
//! scenario needs, derived from the scenario itself.

use std::collections::BTreeSet;
use std::fmt;

use serde::Deserialize;

use crate::outcome::Outcome;
use crate::rules::{self, AppClass};
use crate::scenario::{Scenario, Schema, Step};

/// A part of the reference semantics a real queue may not have.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Feature {
    /// Exclusive jobs and their leases (spec: "Exclusive jobs and leases");
    /// statements `insert_lease`, `lease_*` and `read_leases`.
    Leases,
    /// The legacy table without `heartbeat_at` (spec: "Tables"); every
    /// `legacy_` statement.
    Legacy,
    /// The worker's own failure path (spec: "complete(attempt) / fail(attempt)");
    /// statements `read_attempt`, `fail_retry`, `fail_final`.
    WorkerFail,
    /// `on_failure` hooks (spec: "Hooks"); fired by the app, so no statement.
    Hooks,
}

impl Feature {
    /// Every feature, in the order the profile documents them.
    pub const ALL: [Feature; 4] = [Feature::Leases, Feature::Legacy, Feature::WorkerFail, Feature::Hooks];

    /// Its name in `dialect.toml`.
    pub fn as_str(self) -> &'static str {
        match self {
            Feature::Leases => "leases",
            Feature::Legacy => "legacy",
            Feature::WorkerFail => "worker_fail",
            Feature::Hooks => "hooks",
        }
    }
}

impl fmt::Display for Feature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The features `scenario` needs, judged from the file alone, and, for
/// hooks, from the model's outcome of it (`model`): leases when a job has a
/// lease name (a class `exclusive` or a `concurrency_key`) or the setup has
/// `leases:` rows; legacy with `schema: legacy`; the worker fail path with a
/// `fail` step; hooks when the outcome or `expect` holds an `on_failure`
/// event.
pub fn needed(scenario: &Scenario, model: &Outcome) -> BTreeSet<Feature> {
    let mut needed = BTreeSet::new();
    let has_lease = scenario.jobs.iter().any(|job| {
        scenario
            .classes
            .get(job.class.as_str())
            .is_some_and(|class| rules::lease_name(job, &AppClass::of(class)).is_some())
    });
    if has_lease || !scenario.leases.is_empty() {
        needed.insert(Feature::Leases);
    }
    if scenario.schema == Schema::Legacy {
        needed.insert(Feature::Legacy);
    }
    if scenario.steps.iter().any(|s| matches!(s.value(), Step::Fail(_))) {
        needed.insert(Feature::WorkerFail);
    }
    let expected_hooks = scenario.expect.as_ref().and_then(|e| e.on_failure.as_ref()).is_some_and(|e| !e.is_empty());
    if expected_hooks || !model.on_failure.is_empty() {
        needed.insert(Feature::Hooks);
    }
    needed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::{FailureEvent, LastError};

    fn scenario(yaml: &str) -> Scenario {
        serde_saphyr::from_str(yaml).unwrap()
    }

    const PLAIN: &str = "description: d\nclasses: { C: {} }\njobs: [ { id: a, class: C } ]\nsteps: [ reap ]\n";

    #[test]
    fn a_plain_scenario_needs_nothing() {
        assert!(needed(&scenario(PLAIN), &Outcome::default()).is_empty());
    }

    #[test]
    fn leases_come_from_exclusive_classes_keys_and_lease_rows() {
        let exclusive = PLAIN.replace("C: {}", "C: { exclusive: true }");
        let class_key = PLAIN.replace("C: {}", "C: { concurrency_key: k }");
        let job_key = PLAIN.replace("class: C }", "class: C, concurrency_key: k }");
        let rows = format!("{PLAIN}leases: [ {{ name: 'job:C', owner: a/1, expires: +1m }} ]\n");
        for yaml in [exclusive, class_key, job_key, rows] {
            assert_eq!(needed(&scenario(&yaml), &Outcome::default()), BTreeSet::from([Feature::Leases]), "{yaml}");
        }
    }

    #[test]
    fn legacy_fail_steps_and_hooks_are_each_their_own_feature() {
        let legacy = format!("schema: legacy\n{PLAIN}");
        assert_eq!(needed(&scenario(&legacy), &Outcome::default()), BTreeSet::from([Feature::Legacy]));
        let fail = PLAIN.replace("steps: [ reap ]", "steps: [ { claim: a }, { fail: a } ]");
        assert_eq!(needed(&scenario(&fail), &Outcome::default()), BTreeSet::from([Feature::WorkerFail]));
        let hook = FailureEvent { job: "a".into(), attempt: 1, is_final: true, error: LastError::Timeout };
        let fired = Outcome { on_failure: vec![hook], ..Outcome::default() };
        assert_eq!(needed(&scenario(PLAIN), &fired), BTreeSet::from([Feature::Hooks]));
    }
}
