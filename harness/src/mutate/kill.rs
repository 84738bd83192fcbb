//! Running one mutant on a target: the scenarios that can see it
//! ([`super::select`]), best killers first, until the first whose outcome
//! differs from the model's or whose run errs. A run that errs because the
//! server refused to compile the mutated SQL, at the statement's first use,
//! does not kill: the mutant is not applicable on that server (a function
//! a later version adds, such as `GREATEST` before SQL Server 2022), and is
//! neither killed nor surviving. A run that hits the statement time limit
//! (`crate::deadline`: a mutant that loops forever, such as a recursive
//! CTE whose step no longer shrinks its input) kills, with that reason. A
//! signal (`crate::interrupt`) stops the mutant unjudged.

use std::sync::Mutex;

use crate::backend::{BackendErrorKind, Server};
use crate::dialect::Dialect;
use crate::dialect::text;
use crate::engine::{Call, Engine, EngineErrorKind};
use crate::isolation;
use crate::runner::{self, ModelRun};
use crate::scenario::{LoadedScenario, Schema};
use crate::sql::SqlEngine;
use crate::statement_log::Executed;

/// What running one mutant found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Found {
    /// A scenario's outcome differed from the model's, or its run erred
    /// otherwise than by the mutated SQL not compiling.
    Killed {
        /// The scenario.
        by: String,
        /// Why, when not an outcome that differs: the run's time-limit
        /// error, `timed out after N s at <file>:<line>`.
        reason: Option<String>,
    },
    /// The server refused to compile the mutated statement at its first
    /// use: the mutant does not exist on this server.
    NotApplicable {
        /// The statement that did not compile.
        statement: String,
        /// The scenario whose run found it.
        scenario: String,
        /// The server's message.
        message: String,
    },
    /// No scenario told it apart from the original.
    Survived,
    /// A signal stopped the command before the mutant was judged: neither
    /// killed nor surviving, and left out of the score.
    Interrupted,
}

/// What a run of one mutant found, and how many scenarios it ran.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// Killed, not applicable or survived.
    pub found: Found,
    /// How many scenarios it ran.
    pub runs: usize,
}

impl Verdict {
    /// The scenario that killed it, if one did.
    pub fn killer(&self) -> Option<&str> {
        match &self.found {
            Found::Killed { by, .. } => Some(by),
            _ => None,
        }
    }
}

/// The corpus order a mutant tries scenarios in: those that killed the
/// most mutants so far first, so a killed mutant usually stops after one
/// or two runs. Shared by the mutants in flight on one target.
pub struct KillOrder(Mutex<Vec<(usize, usize)>>);

impl KillOrder {
    /// The order for a corpus of `scenarios` scenarios, in corpus order.
    pub fn new(scenarios: usize) -> KillOrder {
        KillOrder(Mutex::new((0..scenarios).map(|i| (0, i)).collect()))
    }

    /// `candidates` (scenario indices), best killers first.
    fn order(&self, candidates: &[usize]) -> Vec<usize> {
        let mut v = self.0.lock().map(|v| v.clone()).unwrap_or_default();
        v.retain(|(_, i)| candidates.contains(i));
        v.sort_by_key(|&(kills, i)| (std::cmp::Reverse(kills), i));
        v.into_iter().map(|(_, i)| i).collect()
    }

    fn killed_by(&self, index: usize) {
        if let Ok(mut v) = self.0.lock()
            && let Some(entry) = v.iter_mut().find(|(_, i)| *i == index)
        {
            entry.0 += 1;
        }
    }
}

/// The first of `candidates` (scenario indices: those that can see the
/// mutant) whose outcome on `mutant` (a dialect whose statements `changed`
/// differ from the original's) differs from the model's, best killers
/// first; the rest are not run. A run that erred at the first use of a
/// changed statement, with an error the server gives a statement it cannot
/// compile ([`compile_refusal`]), makes the mutant not applicable instead.
pub async fn first_killer(
    server: &Server,
    mutant: &Dialect,
    changed: &[String],
    candidates: &[usize],
    scenarios: &[LoadedScenario],
    models: &[ModelRun],
    order: &KillOrder,
) -> Verdict {
    let mut runs = 0;
    for i in order.order(candidates) {
        if crate::interrupt::interrupted().is_some() {
            return Verdict { found: Found::Interrupted, runs };
        }
        runs += 1;
        let scenario = &scenarios[i];
        let run = runner::run_logged(server, mutant, scenario, None).await;
        let mut reason = None;
        let killed = match run.outcome {
            // A run the signal stopped (or whose statements it cancelled) says nothing.
            _ if crate::interrupt::interrupted().is_some() => return Verdict { found: Found::Interrupted, runs },
            Ok(outcome) => runner::compared_document(outcome, &mutant.profile) != models[i].yaml,
            Err(e) if matches!(e.kind, EngineErrorKind::TimedOut(_)) => {
                reason = Some(e.to_string());
                true
            }
            Err(_) => {
                if let Some(first) = failed_first_use(&run.log, changed)
                    && let Some(message) = compile_refusal(server, mutant, scenario.scenario.schema, first).await
                {
                    let found = Found::NotApplicable {
                        statement: first.statement.clone(),
                        scenario: scenario.name.clone(),
                        message,
                    };
                    return Verdict { found, runs };
                }
                true
            }
        };
        if killed {
            order.killed_by(i);
            return Verdict { found: Found::Killed { by: scenario.name.clone(), reason }, runs };
        }
    }
    Verdict { found: Found::Survived, runs }
}

/// The first use in `log` of any statement in `changed`, when that use
/// failed. `None` when the first use passed (a later failure is a runtime
/// error, which kills) or no changed statement ran.
pub fn failed_first_use<'a>(log: &'a [Executed], changed: &[String]) -> Option<&'a Executed> {
    log.iter().find(|e| changed.contains(&e.statement)).filter(|e| e.failed())
}

/// The server's refusal to compile the statement `entry` ran, sent again
/// with the values bound to it then, in a namespace of its own whose tables
/// `schema` makes (empty, so a failure that depends on the rows cannot
/// recur): `Some(message)` when the server answers with an error of
/// [`BackendErrorKind::CannotCompile`], `None` when it runs it, refuses it
/// for another reason, or the namespace cannot be made (then the failure
/// counts as a kill, as it always did). The namespace is dropped afterwards.
pub async fn compile_refusal(server: &Server, dialect: &Dialect, schema: Schema, entry: &Executed) -> Option<String> {
    let statement = dialect.statements().find(|s| s.name == entry.statement)?;
    let mut log = Vec::new();
    let mut acquired = isolation::acquire(server, dialect, schema, &mut log).await.ok()?;
    let made = if acquired.tables_kept {
        Ok(())
    } else {
        SqlEngine::new(dialect, schema, &mut acquired.lane.conn).call(Call::CreateSchema).await.map(|_| ())
    };
    let conn = &mut acquired.lane.conn;
    let prepared = text::prepare(&statement.sql, conn.placeholders());
    let values: Option<Vec<_>> =
        prepared.binds.iter().map(|name| entry.binds.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone())).collect();
    let refusal = match (made, values) {
        (Ok(()), Some(values)) => match conn.execute(&prepared.sql, &values).await {
            Err(e) if e.kind == BackendErrorKind::CannotCompile => Some(e.message),
            _ => None,
        },
        _ => None,
    };
    // Whatever the statement did to the namespace, it is not kept.
    let _ = isolation::release(server, dialect, acquired, false, &mut log).await;
    refusal
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Phase;
    use crate::statement_log::Returned;

    fn entry(statement: &str, returned: Returned) -> Executed {
        Executed {
            phase: Phase::Setup,
            statement: statement.to_owned(),
            origin: String::new(),
            binds: Vec::new(),
            returned,
        }
    }

    #[test]
    fn only_a_failed_first_use_of_a_changed_statement_is_looked_at() {
        let changed = ["reap_scan".to_owned()];
        let failed = || Returned::Failed("no".into());
        let first_fails = [entry("insert_job", Returned::Done), entry("reap_scan", failed())];
        assert_eq!(failed_first_use(&first_fails, &changed).map(|e| e.statement.as_str()), Some("reap_scan"));
        // It ran once, then failed: a runtime failure, a kill.
        let later_fails = [entry("reap_scan", Returned::Rows(1)), entry("reap_scan", failed())];
        assert!(failed_first_use(&later_fails, &changed).is_none());
        // Another statement failed before the changed one ran.
        let other_fails = [entry("insert_job", failed())];
        assert!(failed_first_use(&other_fails, &changed).is_none());
    }
}
