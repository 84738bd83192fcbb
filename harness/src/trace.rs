//! The SQL trace of a run on a target: the statements run for the steps up
//! to the first step where the target and the model part, each with its
//! name, `file:line`, bound values and result, then the difference at that
//! step. Printed under every failure on a database target and by
//! `run --trace`.
//!
//! The first differing step is found by reading the state back after setup
//! and after every step on both stores ([`driver::run_with`]) and comparing
//! the documents (under the dialect's profile: the model at its time
//! resolution, both sides normalized by its relaxations); the trace run is
//! a second run of the scenario in a fresh
//! namespace, so the checked run is never changed by tracing.

use std::fmt::Write as _;

use crate::backend::Server;
use crate::dialect::Dialect;
use crate::dialect::profile::Profile;
use crate::diff;
use crate::driver::{self, Checkpoints};
use crate::engine::Phase;
use crate::model::Model;
use crate::relax;
use crate::resolution::Resolved;
use crate::runner::run_logged;
use crate::scenario::LoadedScenario;
use crate::statement_log::Executed;

/// Where two stores' step-by-step states first differ.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Parting {
    /// The states differ right after setup (the rows as inserted).
    Setup,
    /// They differ after step `index` (0-based).
    Step(usize),
    /// The target stopped with an error at or before step `index` (or in
    /// setup, `None`).
    Error(Option<usize>),
    /// Every checkpoint agrees.
    Never,
}

/// Checkpoints (see [`driver::Checkpoints`]) as the documents compared under
/// `profile`: its relaxations applied, as `run` compares final outcomes.
pub fn documents(checkpoints: &Checkpoints, profile: &Profile) -> Vec<String> {
    checkpoints.iter().map(|o| relax::document(o.clone(), profile)).collect()
}

/// Compares checkpoint documents ([`documents`]): index 0 is after setup,
/// `i + 1` after step `i`. `target_failed` says the target's run stopped
/// with an error, so its list may be short.
pub fn parting(model: &[String], target: &[String], target_failed: bool) -> Parting {
    parting_by(model.len(), target.len(), |i| model[i] == target[i], target_failed)
}

/// [`parting`] of two runs' checkpoints under `profile`, rendering only
/// what it must: two checkpoints equal once normalized by the profile's
/// relaxations ([`relax::normalize`]) have equal documents, so only a pair
/// that differs there is rendered and compared as documents. On a passing
/// run nothing is rendered (the documents were a quarter of a SQLite
/// corpus run's instructions, measured with callgrind).
pub fn checkpoints_parting(
    model: &Checkpoints,
    target: &Checkpoints,
    profile: &Profile,
    target_failed: bool,
) -> Parting {
    let same = |i: usize| {
        let (m, t) = (&model[i], &target[i]);
        // Equal checkpoints are equal under any relaxation: nothing cloned.
        m == t
            || relax::normalize(m.clone(), profile) == relax::normalize(t.clone(), profile)
            || relax::document(m.clone(), profile) == relax::document(t.clone(), profile)
    };
    parting_by(model.len(), target.len(), same, target_failed)
}

/// The parting of `model_len` and `target_len` checkpoints where `same(i)`
/// says whether index `i` (present on both) agrees.
fn parting_by(model_len: usize, target_len: usize, same: impl Fn(usize) -> bool, target_failed: bool) -> Parting {
    for i in 0..model_len {
        match (i < target_len).then_some(i) {
            Some(i) if same(i) => continue,
            Some(_) if i == 0 => return Parting::Setup,
            Some(_) => return Parting::Step(i - 1),
            None if target_failed => return Parting::Error(i.checked_sub(1)),
            None => return Parting::Step(i.saturating_sub(1)),
        }
    }
    // Every state was read: the error came after the last step.
    if target_failed { Parting::Error(model_len.checked_sub(2)) } else { Parting::Never }
}

/// Runs `scenario` on the model and on `server` with checkpoints and
/// renders the trace up to the first step where they part, with the
/// difference there. `target` is the target's name, for labels.
pub async fn trace(server: &Server, dialect: &Dialect, scenario: &LoadedScenario, target: &str) -> String {
    let s = &scenario.scenario;
    let profile = &dialect.profile;
    let mut model_states = Checkpoints::new();
    let mut model = Resolved::new(Model::under(s.schema, &profile.policy), profile.time_resolution);
    // The model answers every call; an error here would be a bug in it.
    let model_run = driver::run_under(s, &profile.policy, &mut model, None, Some(&mut model_states)).await;
    let mut target_states = Checkpoints::new();
    let run = run_logged(server, dialect, scenario, Some(&mut target_states)).await;
    let (model_states, target_states) = (documents(&model_states, profile), documents(&target_states, profile));
    let parting = match model_run {
        Ok(_) => parting(&model_states, &target_states, run.outcome.is_err()),
        Err(_) => Parting::Never,
    };
    render(scenario, target, &run.log, &parting, &model_states, &target_states)
}

/// The rendered trace; see the module docs.
pub fn render(
    scenario: &LoadedScenario,
    target: &str,
    log: &[Executed],
    parting: &Parting,
    model: &[String],
    states: &[String],
) -> String {
    let last_step = match parting {
        Parting::Setup | Parting::Error(None) => None,
        Parting::Step(i) | Parting::Error(Some(i)) => Some(*i),
        Parting::Never => scenario.scenario.steps.len().checked_sub(1),
    };
    let mut out = match parting {
        Parting::Setup => format!("trace on {target}: the rows differ right after setup\n"),
        Parting::Step(i) => {
            format!("trace on {target}: statements up to step {}, where {target} and the model part\n", i + 1)
        }
        Parting::Error(_) => format!("trace on {target}: statements up to the one that failed\n"),
        Parting::Never => format!("trace on {target}: every statement (the step-by-step states agree)\n"),
    };
    let mut header: Option<Option<usize>> = None;
    for e in log {
        let (clock, index) = match e.phase {
            Phase::Setup => (Some(scenario.scenario.now), None),
            Phase::Step { index, now } => (Some(now), Some(index)),
            // Read-backs are the harness's, not the scenario's: shown only
            // when one failed.
            Phase::Checkpoint | Phase::ReadBack | Phase::Teardown if e.failed() => (None, header.flatten()),
            Phase::Checkpoint | Phase::ReadBack | Phase::Teardown => continue,
        };
        if let Some(i) = index
            && last_step.is_none_or(|last| i > last)
        {
            break;
        }
        if header != Some(index) {
            header = Some(index);
            match index {
                None => out.push_str("  setup\n"),
                Some(i) => {
                    let step = scenario.scenario.steps[i].value();
                    let at = clock.map(|c| c.to_string()).unwrap_or_default();
                    let described = serde_saphyr::to_string(step).unwrap_or_default().trim().replace('\n', " ");
                    let _ = writeln!(out, "  step {} at {at}: {described}", i + 1);
                }
            }
        }
        let _ = writeln!(out, "    {}", e.render(clock));
    }
    let at = match parting {
        Parting::Setup => Some(0),
        Parting::Step(i) => Some(i + 1),
        _ => None,
    };
    if let Some(k) = at
        && let (Some(m), Some(t)) = (model.get(k), states.get(k))
        && let Some(d) = diff::render("model", m, target, t)
    {
        let when = if k == 0 { "after setup".to_owned() } else { format!("after step {k}") };
        let _ = writeln!(out, "  state {when} (instants relative to the clock then):");
        for line in d.lines() {
            let _ = writeln!(out, "    {line}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn states(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn the_first_differing_checkpoint_names_the_step() {
        let model = states(&["s", "a", "b", "c"]);
        assert_eq!(parting(&model, &states(&["s", "a", "b", "c"]), false), Parting::Never);
        assert_eq!(parting(&model, &states(&["x", "a", "b", "c"]), false), Parting::Setup);
        assert_eq!(parting(&model, &states(&["s", "a", "x", "c"]), false), Parting::Step(1));
        assert_eq!(parting(&model, &states(&["s", "a"]), true), Parting::Error(Some(1)));
        assert_eq!(parting(&model, &states(&[]), true), Parting::Error(None));
        assert_eq!(parting(&model, &states(&["s", "a", "b", "c"]), true), Parting::Error(Some(2)));
    }

    /// The model's checkpoints of a two-step scenario.
    async fn model_checkpoints(profile: &Profile) -> Checkpoints {
        let s = crate::scenario::parse_text(
            "description: x\nclasses: { C: {} }\n\
             jobs: [ { id: a, class: C, status: processing, attempts: 1, claimed: -20m } ]\n\
             steps: [ reap, { advance: 1m } ]\n",
        )
        .unwrap();
        let mut model = Resolved::new(Model::under(s.schema, &profile.policy), profile.time_resolution);
        let mut states = Checkpoints::new();
        driver::run_under(&s, &profile.policy, &mut model, None, Some(&mut states)).await.unwrap();
        states
    }

    #[tokio::test]
    async fn checkpoints_part_where_their_documents_do() {
        let profile = Profile::default();
        let model = model_checkpoints(&profile).await;
        let expected = |t: &Checkpoints| parting(&documents(&model, &profile), &documents(t, &profile), false);
        assert_eq!(checkpoints_parting(&model, &model, &profile, false), Parting::Never);
        let mut changed = model.clone();
        changed[2].jobs.get_mut("a").unwrap().attempts = 9;
        assert_eq!(checkpoints_parting(&model, &changed, &profile, false), Parting::Step(1));
        assert_eq!(expected(&changed), Parting::Step(1));
        assert_eq!(checkpoints_parting(&model, &changed[..1].to_vec(), &profile, true), Parting::Error(Some(0)));
        // A field the policy says the queue does not keep differs between
        // the outcomes but not between the documents: no parting.
        let absent = Profile {
            policy: crate::policy::Policy { absent: [crate::policy::Field::UpdatedAt].into(), ..Default::default() },
            ..Profile::default()
        };
        let mut unkept = model.clone();
        unkept[1].jobs.get_mut("a").unwrap().updated_at = crate::time::Duration::from_secs(7);
        assert_ne!(unkept, model);
        assert_eq!(checkpoints_parting(&model, &unkept, &absent, false), Parting::Never);
        assert_eq!(checkpoints_parting(&model, &unkept, &profile, false), Parting::Step(0));
    }
}
