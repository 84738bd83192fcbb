//! Running one mutant on a target: the scenarios that can see it
//! ([`super::select`]), cheap likely killers first ([`KillOrder`]), until the first whose outcome
//! differs from the model's or whose run errs. A run that errs because the
//! server refused to compile the mutated SQL, at the statement's first use,
//! does not kill: the mutant is not applicable on that server (a function
//! a later version adds, such as `GREATEST` before SQL Server 2022), and is
//! neither killed nor surviving. A run that hits the statement time limit
//! (`crate::deadline`: a mutant that loops forever, such as a recursive
//! CTE whose step no longer shrinks its input) kills, with that reason. A
//! signal (`crate::interrupt`) stops the mutant unjudged.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::Notify;

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
    /// What those runs cost, in statements executed
    /// ([`super::select::cost`] of each run's log).
    pub statements: u64,
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

/// The order the mutants of one target try their scenarios in: the most
/// kills per statement executed first, so a mutant usually stops after a
/// cheap run or two. A scenario's weight is
/// `(SIBLING_WEIGHT * siblings + kills + 1) / cost`: `kills` counts the
/// mutants it killed among the earlier turns (those certainly judged),
/// `siblings` those of them that changed one of the same statements as
/// this turn's mutant (a scenario that told one mutant of `reap_scan`
/// apart usually tells the next apart too), and `cost` is the statements
/// its unmutated run executed ([`super::select::cost`]); ties go to the
/// cheaper, then to the first by name. Before any kill that is cheapest
/// first; a scenario that kills often is tried first even when it costs
/// more, once its kills outweigh its cost.
///
/// The order is deterministic: turn `k` (the `k`-th mutant, counted from 0
/// across every stream of one target) sees the verdicts of turns
/// `0..=k - window` only, and waits for them, so which scenario kills, and
/// how many runs each mutant makes, does not depend on which mutant in
/// flight happened to finish first. With `window` the number of mutants in
/// flight at once and the turns started in order (`buffered`), those
/// turns are over before turn `k` starts, and it never waits.
pub struct KillOrder {
    /// Per scenario (by index), what its unmutated run cost, in statements
    /// executed; at least 1.
    costs: Vec<u64>,
    /// Per scenario, its name: the last tie-break. Empty: by index.
    names: Vec<String>,
    /// How many turns before its own a turn cannot see (at least 1).
    window: usize,
    /// The next turn [`KillOrder::turn`] hands out.
    next: AtomicUsize,
    /// Per turn, once judged: the scenario that killed it, if one did,
    /// and the statements its mutant changed.
    judged: Mutex<Vec<Option<Judged>>>,
    /// Woken when a turn is judged.
    recorded: Notify,
}

/// How much more a kill of a mutant of the same statement weighs than
/// any other kill, in [`KillOrder`]'s weights. Measured by the scenario
/// runs of `reapcheck mutate --db sqlite,postgres,mariadb` (its last line
/// per target).
pub const SIBLING_WEIGHT: u128 = 10;

/// A judged turn of a [`KillOrder`].
#[derive(Clone, Debug)]
struct Judged {
    /// The scenario that killed its mutant (an index), if one did.
    killer: Option<usize>,
    /// The statements its mutant changed.
    changed: Vec<String>,
}

/// What the turns a turn sees found, per scenario (by index).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Kills {
    /// Mutants killed.
    all: Vec<usize>,
    /// Mutants killed that changed one of the statements the turn's
    /// mutant changes.
    siblings: Vec<usize>,
}

/// One mutant's place in a [`KillOrder`]: taken with [`KillOrder::turn`],
/// in the order the mutants are started; judged by [`first_killer`]. A
/// turn dropped unjudged counts as judged without a kill, so later turns
/// never wait on it.
pub struct Turn<'a> {
    order: &'a KillOrder,
    index: usize,
    judged: bool,
}

impl<'a> From<&'a KillOrder> for Turn<'a> {
    /// The next turn of `order`.
    fn from(order: &'a KillOrder) -> Turn<'a> {
        order.turn()
    }
}

impl Turn<'_> {
    /// Records that the mutant of this turn, which changed the
    /// statements `changed`, was killed by scenario `killer` (an index),
    /// or by none.
    fn judge(mut self, killer: Option<usize>, changed: &[String]) {
        self.judged = true;
        self.order.record(self.index, Judged { killer, changed: changed.to_vec() });
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        if !self.judged {
            self.order.record(self.index, Judged { killer: None, changed: Vec::new() });
        }
    }
}

impl KillOrder {
    /// The order for a corpus of `scenarios` scenarios that all cost the
    /// same, tried one mutant at a time: by kills, then by index.
    pub fn new(scenarios: usize) -> KillOrder {
        KillOrder::weighed(vec![1; scenarios], Vec::new(), 1)
    }

    /// The order for scenarios costing `costs` statements each (by index,
    /// from the unmutated run: [`super::select::cost`]), named `names`
    /// (the same length, or empty to break ties by index), with `window`
    /// mutants in flight at once.
    pub fn weighed(costs: Vec<u64>, names: Vec<String>, window: usize) -> KillOrder {
        assert!(names.is_empty() || names.len() == costs.len(), "a name per scenario");
        KillOrder {
            costs: costs.into_iter().map(|c| c.max(1)).collect(),
            names,
            window: window.max(1),
            next: AtomicUsize::new(0),
            judged: Mutex::new(Vec::new()),
            recorded: Notify::new(),
        }
    }

    /// The next mutant's turn. Take turns in the order the mutants start.
    pub fn turn(&self) -> Turn<'_> {
        Turn { order: self, index: self.next.fetch_add(1, Ordering::SeqCst), judged: false }
    }

    fn record(&self, turn: usize, verdict: Judged) {
        if let Ok(mut judged) = self.judged.lock() {
            if judged.len() <= turn {
                judged.resize(turn + 1, None);
            }
            judged[turn] = Some(verdict);
        }
        self.recorded.notify_waiters();
    }

    /// Per scenario, the kills among the turns before `turn - window + 1`,
    /// once all of them are judged; siblings of a mutant that changed
    /// `changed`.
    async fn kills_seen_by(&self, turn: usize, changed: &[String]) -> Kills {
        let seen = (turn + 1).saturating_sub(self.window);
        loop {
            let notified = self.recorded.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Some(kills) = self.kills_before(seen, changed) {
                return kills;
            }
            notified.await;
        }
    }

    /// Per scenario, the kills among turns `0..seen` (siblings: of a
    /// mutant that changed one of `changed`); `None` while one of them is
    /// not judged.
    fn kills_before(&self, seen: usize, changed: &[String]) -> Option<Kills> {
        let judged = self.judged.lock().ok()?;
        let mut kills = Kills { all: vec![0; self.costs.len()], siblings: vec![0; self.costs.len()] };
        for t in 0..seen {
            let turn = judged.get(t)?.as_ref()?;
            let Some(i) = turn.killer.filter(|i| *i < self.costs.len()) else { continue };
            kills.all[i] += 1;
            if turn.changed.iter().any(|c| changed.contains(c)) {
                kills.siblings[i] += 1;
            }
        }
        Some(kills)
    }

    /// `candidates` (scenario indices) in the order to try them, given
    /// each scenario's `kills` so far: most
    /// `(SIBLING_WEIGHT * siblings + kills + 1) / cost` first, then the
    /// cheaper, then by name.
    fn ranked(&self, candidates: &[usize], kills: &Kills) -> Vec<usize> {
        let mut v = candidates.to_vec();
        let count = |counts: &[usize], i: usize| counts.get(i).copied().unwrap_or(0) as u128;
        let weight = |i: usize| {
            let hits = SIBLING_WEIGHT * count(&kills.siblings, i) + count(&kills.all, i) + 1;
            (hits, u128::from(self.costs[i]))
        };
        v.sort_by(|&a, &b| {
            let ((ka, ca), (kb, cb)) = (weight(a), weight(b));
            // ka / ca > kb / cb, without division.
            (kb * ca).cmp(&(ka * cb)).then(ca.cmp(&cb)).then_with(|| match self.names.is_empty() {
                true => a.cmp(&b),
                false => self.names[a].cmp(&self.names[b]).then(a.cmp(&b)),
            })
        });
        v
    }

    /// `candidates` in the order `turn`, whose mutant changed `changed`,
    /// tries them.
    #[cfg(test)]
    async fn order(&self, turn: usize, changed: &[String], candidates: &[usize]) -> Vec<usize> {
        self.order_tiers(turn, changed, &[candidates.to_vec()]).await
    }

    /// Each of `tiers` in the order `turn` tries it, one tier after
    /// another.
    async fn order_tiers(&self, turn: usize, changed: &[String], tiers: &[Vec<usize>]) -> Vec<usize> {
        let kills = self.kills_seen_by(turn, changed).await;
        tiers.iter().flat_map(|tier| self.ranked(tier, &kills)).collect()
    }
}

/// The first of `candidates` (scenario indices: those that can see the
/// mutant, in tiers: the first tier tried before the second, each in its
/// turn's order) whose outcome on `mutant` (a dialect whose statements `changed`
/// differ from the original's) differs from the model's, in the order of
/// its `turn` ([`KillOrder`]: cheap likely killers first; a `&KillOrder`
/// takes its next turn); the rest are not run. A run that erred at the
/// first use of a changed statement, with an error the server gives a
/// statement it cannot compile ([`compile_refusal`]), makes the mutant not
/// applicable instead. Whether a mutant is killed does not depend on the
/// order; only which scenario is named as its killer does.
pub async fn first_killer<'t>(
    server: &Server,
    mutant: &Dialect,
    changed: &[String],
    candidates: &[Vec<usize>],
    scenarios: &[LoadedScenario],
    models: &[ModelRun],
    turn: impl Into<Turn<'t>>,
) -> Verdict {
    let turn = turn.into();
    let order = turn.order.order_tiers(turn.index, changed, candidates).await;
    let (verdict, killer) = try_in_order(server, mutant, changed, &order, scenarios, models).await;
    turn.judge(killer, changed);
    verdict
}

/// [`first_killer`]'s runs, in `order`; with the verdict, the index of the
/// scenario that killed the mutant.
async fn try_in_order(
    server: &Server,
    mutant: &Dialect,
    changed: &[String],
    order: &[usize],
    scenarios: &[LoadedScenario],
    models: &[ModelRun],
) -> (Verdict, Option<usize>) {
    let (mut runs, mut statements) = (0, 0);
    for &i in order {
        if crate::interrupt::interrupted().is_some() {
            return (Verdict { found: Found::Interrupted, runs, statements }, None);
        }
        runs += 1;
        let scenario = &scenarios[i];
        let run = runner::run_logged(server, mutant, scenario, None).await;
        statements += super::select::cost(&run.log);
        let mut reason = None;
        let killed = match run.outcome {
            // A run the signal stopped (or whose statements it cancelled) says nothing.
            _ if crate::interrupt::interrupted().is_some() => {
                return (Verdict { found: Found::Interrupted, runs, statements }, None);
            }
            Ok(outcome) => !runner::agrees_with_model(outcome, &mutant.profile, &models[i]),
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
                    return (Verdict { found, runs, statements }, None);
                }
                true
            }
        };
        if killed {
            let found = Found::Killed { by: scenario.name.clone(), reason };
            return (Verdict { found, runs, statements }, Some(i));
        }
    }
    (Verdict { found: Found::Survived, runs, statements }, None)
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

    fn names(names: &[&str]) -> Vec<String> {
        names.iter().map(|&n| n.to_owned()).collect()
    }

    #[tokio::test]
    async fn a_cheaper_scenario_is_tried_first() {
        // The corpus order (and the old order: most kills first, then by
        // index) puts the 300-row scenario first; its cost puts it last.
        let order = KillOrder::weighed(vec![306, 4, 9], names(&["a-heavy", "b-light", "c-middle"]), 4);
        assert_eq!(order.order(0, &[], &[0, 1, 2]).await, [1, 2, 0]);
        assert_eq!(order.order(0, &[], &[0, 2]).await, [2, 0], "only the candidates");
        // Equal costs: by name, whatever the index.
        let order = KillOrder::weighed(vec![5, 5], names(&["z", "a"]), 1);
        assert_eq!(order.order(0, &[], &[0, 1]).await, [1, 0]);
    }

    #[tokio::test]
    async fn kills_outweigh_cost_only_in_proportion() {
        let order = KillOrder::weighed(vec![30, 10, 10], names(&["a", "b", "c"]), 1);
        // Kills by the scenario costing 3x the others: one, (1 + 1) / 30,
        // is below (0 + 1) / 10; two make it equal, and the tie goes to the
        // cheaper; a third puts it first.
        for _ in 0..3 {
            order.turn().judge(Some(0), &[]);
        }
        assert_eq!(order.order(1, &[], &[0, 1, 2]).await, [1, 2, 0], "turn 1 saw one kill");
        assert_eq!(order.order(2, &[], &[0, 1, 2]).await, [1, 2, 0], "turn 2 saw two: a tie");
        assert_eq!(order.order(3, &[], &[0, 1, 2]).await, [0, 1, 2], "turn 3 saw three: (3 + 1) / 30 > 1 / 10");
        order.turn().judge(Some(1), &[]);
        assert_eq!(order.order(4, &[], &[0, 1, 2]).await, [1, 0, 2], "turn 4 saw b's kill: 2 / 10 > 4 / 30");
        // A turn dropped unjudged counts as no kill.
        drop(order.turn());
        assert_eq!(order.order(5, &[], &[0, 1, 2]).await, [1, 0, 2]);
    }

    #[tokio::test]
    async fn a_kill_of_a_mutant_of_the_same_statement_weighs_more_than_another() {
        let order = KillOrder::weighed(vec![20, 10], names(&["a", "b"]), 1);
        order.turn().judge(Some(0), &names(&["reap_scan"]));
        // A mutant of reap_scan: a's kill is a sibling's, (10 + 1 + 1) / 20 > 1 / 10.
        assert_eq!(order.order(1, &names(&["reap_scan"]), &[0, 1]).await, [0, 1]);
        // A mutant of another statement: (1 + 1) / 20 ties 1 / 10, and the tie goes to the cheaper.
        assert_eq!(order.order(1, &names(&["claim"]), &[0, 1]).await, [1, 0]);
        // A named mutant changing both counts it as a sibling's.
        assert_eq!(order.order(1, &names(&["claim", "reap_scan"]), &[0, 1]).await, [0, 1]);
    }

    #[tokio::test]
    async fn the_first_tier_is_tried_first_each_in_its_order() {
        // b is cheapest, but only a and c returned enough rows to show the mutant.
        let order = KillOrder::weighed(vec![300, 4, 9], names(&["a", "b", "c"]), 1);
        assert_eq!(order.order_tiers(0, &[], &[vec![0, 2], vec![1]]).await, [2, 0, 1]);
        assert_eq!(order.order_tiers(0, &[], &[vec![], vec![0, 1, 2]]).await, [1, 2, 0]);
    }

    #[tokio::test]
    async fn a_turn_sees_only_the_turns_a_window_before_it_and_waits_for_them() {
        let order = KillOrder::weighed(vec![10, 1], names(&["a", "b"]), 2);
        let (t0, t1, t2) = (order.turn(), order.turn(), order.turn());
        // Turn 1 sees nothing, so no turn in flight beside it changes its order.
        t1.judge(Some(0), &[]);
        assert_eq!(order.order(1, &[], &[0, 1]).await, [1, 0]);
        // Turn 2 sees turn 0 alone, and waits until it is judged, whenever
        // turn 1 ended.
        let waiting = order.order(2, &[], &[0, 1]);
        tokio::pin!(waiting);
        let mut context = std::task::Context::from_waker(std::task::Waker::noop());
        assert!(waiting.as_mut().poll(&mut context).is_pending(), "turn 0 is not judged yet");
        t0.judge(Some(0), &[]);
        drop(t2);
        // One kill by a scenario 10x the other's cost: still the cheaper first.
        assert_eq!(waiting.await, [1, 0]);
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
