//! The reaper driver: plays a scenario's steps against any engine, as the
//! queue's workers and reapers would, and reads back the outcome.
//!
//! It owns the clock, the attempt labels and the app-side rules; every time
//! comparison happens in the engine (the model, or a dialect's SQL). The same
//! driver, unchanged, runs the model and every database.
//!
//! [`run`] and its variants play a whole scenario; a [`Session`] plays one
//! step at a time for a caller that holds the steps itself (the reference
//! adapter, `reapcheck adapter serve`).

use std::collections::BTreeMap;

use crate::engine::{
    Call, Candidate, Engine, EngineError, EngineErrorKind, JobRow, JobState, LeaseRow, Phase, ReapGuard, Reply,
};
use crate::outcome::{
    ClaimResult, FailureEvent, JobOutcome, LastError, LeaseOutcome, Outcome, StepResult, WorkerResult,
};
use crate::policy::Policy;
use crate::rules::{self, AppClass, ReapAction};
use crate::scenario::{AttemptRef, DEFAULT_REAPER, Job, Scenario, Step};
use crate::time::{Duration, Instant};

/// Runs `scenario` on `engine`. With `trace`, each step and each reaper
/// decision is described there in words (what `reapcheck explain` prints).
pub async fn run<E: Engine>(
    scenario: &Scenario,
    engine: &mut E,
    trace: Option<&mut Vec<String>>,
) -> Result<Outcome, EngineError> {
    run_with(scenario, engine, trace, None).await
}

/// The state after setup and after each step, as outcome documents
/// (instants relative to the clock at that point): index 0 is after setup,
/// index `i + 1` after step `i`. Comparing two stores' checkpoints finds
/// the first step where they part.
pub type Checkpoints = Vec<Outcome>;

/// [`run`], also reading the state back after setup and after every step
/// into `checkpoints` when given (trace mode: it adds a `read_jobs` and a
/// `read_leases` per step, marked [`Phase::Checkpoint`]). A checkpoint that
/// cannot be read ends the run with that error.
pub async fn run_with<E: Engine>(
    scenario: &Scenario,
    engine: &mut E,
    trace: Option<&mut Vec<String>>,
    checkpoints: Option<&mut Checkpoints>,
) -> Result<Outcome, EngineError> {
    run_under(scenario, &Policy::default(), engine, trace, checkpoints).await
}

/// [`run_with`], deciding as a queue with `policy` does (docs/policy.md):
/// its grace, claim window, reap action and retry count. The reference
/// policy is [`Policy::default`].
pub async fn run_under<E: Engine>(
    scenario: &Scenario,
    policy: &Policy,
    engine: &mut E,
    trace: Option<&mut Vec<String>>,
    mut checkpoints: Option<&mut Checkpoints>,
) -> Result<Outcome, EngineError> {
    let mut driver = Session::new(scenario, policy, engine, trace);
    driver.engine.mark(Phase::Setup);
    driver.setup().await?;
    let mut steps = Vec::with_capacity(scenario.steps.len());
    if let Some(c) = checkpoints.as_deref_mut() {
        c.push(driver.checkpoint(&steps).await?);
    }
    for (index, step) in scenario.steps.iter().enumerate() {
        driver.engine.mark(Phase::Step { index, now: driver.now });
        driver.note(format!("@ {} {}", driver.now, describe(step.value())));
        let result = driver.step(step.value()).await?;
        if let Some(r) = &result {
            driver.note(format!("  -> {}", serde_saphyr::to_string(r).unwrap_or_default().trim().replace('\n', ", ")));
        }
        steps.push(result);
        if let Some(c) = checkpoints.as_deref_mut() {
            c.push(driver.checkpoint(&steps).await?);
        }
    }
    driver.engine.mark(Phase::ReadBack);
    driver.outcome(steps).await
}

/// A reaper's candidate with the decision made at scan time.
struct Planned {
    guard: ReapGuard,
    action: ReapAction,
}

/// One scenario being played: its clock, attempt labels, reapers' plans
/// and hook calls so far, over `engine`. [`Session::setup`] first, then
/// [`Session::step`] per step, then [`Session::read_outcome`] (or
/// [`Session::read_state`]) whenever the state is wanted.
///
/// The scenario must be valid (`reapcheck check`): a step naming a job the
/// scenario does not declare, or a job of an undeclared class, panics.
pub struct Session<'a, E> {
    scenario: &'a Scenario,
    policy: &'a Policy,
    engine: &'a mut E,
    trace: Option<&'a mut Vec<String>>,
    now: Instant,
    app_grace: i64,
    /// Each job's latest live attempt label, if any.
    latest: BTreeMap<String, String>,
    /// Successful claims of each job so far (numbers `<job>/<n>`).
    claims: BTreeMap<String, u64>,
    /// Each reaper's planned updates between `scan` and `apply`, with the
    /// clock of its scan.
    reapers: BTreeMap<String, (Instant, Vec<Planned>)>,
    events: Vec<FailureEvent>,
}

/// The store's state at the session's clock, instants absolute.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct State {
    /// Every job row, in order of id.
    pub jobs: Vec<JobState>,
    /// Every lease row, in order of name.
    pub leases: Vec<LeaseRow>,
    /// The `on_failure` hook calls so far, in order.
    pub hooks: Vec<FailureEvent>,
}

impl<'a, E: Engine> Session<'a, E> {
    /// A session of `scenario` on `engine`, deciding under `policy`, its
    /// clock at the scenario's `now`. With `trace`, each reaper decision is
    /// described there in words.
    pub fn new(
        scenario: &'a Scenario,
        policy: &'a Policy,
        engine: &'a mut E,
        trace: Option<&'a mut Vec<String>>,
    ) -> Self {
        Session {
            scenario,
            policy,
            engine,
            trace,
            now: scenario.now,
            app_grace: scenario.settings.heartbeat_grace,
            latest: BTreeMap::new(),
            claims: BTreeMap::new(),
            reapers: BTreeMap::new(),
            events: Vec::new(),
        }
    }

    /// The session's clock.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// The engine, to mark phases on (or to reach its connection).
    pub fn engine(&mut self) -> &mut E {
        self.engine
    }

    fn note(&mut self, line: String) {
        if let Some(trace) = self.trace.as_deref_mut() {
            trace.push(line);
        }
    }

    fn job(&self, id: &str) -> &'a Job {
        self.scenario.jobs.iter().find(|j| j.has_row(id)).expect("validated: steps name declared jobs")
    }

    fn class(&self, name: &str) -> AppClass {
        AppClass::of(&self.scenario.classes[name])
    }

    async fn call(&mut self, call: Call) -> Result<Reply, EngineError> {
        self.engine.call(call).await
    }

    async fn changed(&mut self, call: Call) -> Result<u64, EngineError> {
        match self.call(call).await? {
            Reply::Changed(n) => Ok(n),
            other => Err(unexpected("a count of changed rows", other)),
        }
    }

    /// Sets the time zone if the scenario has one, creates the tables and
    /// inserts the scenario's rows, their times resolved at its `now`, and
    /// ends the setup ([`Engine::end_setup`]: rows held back are sent).
    ///
    /// Errors: the engine's, or a time out of range.
    pub async fn setup(&mut self) -> Result<(), EngineError> {
        if let Some(zone) = &self.scenario.session_time_zone {
            self.call(Call::SetTimeZone { zone: zone.to_string() }).await?;
        }
        self.call(Call::CreateSchema).await?;
        let now = self.now;
        // An entry with `count` stands for several rows, each inserted alone.
        for (job, id) in self.scenario.jobs.iter().flat_map(|j| j.ids().into_iter().map(move |id| (j, id))) {
            // Every store, the model and the SQL alike, gets the rows the
            // queue would hold under its policy.
            if !self.policy.keeps(job.status) {
                continue;
            }
            let declared = &self.scenario.classes[job.class.as_str()];
            let processing = job.status == crate::outcome::Status::Processing;
            let claim_timeout = match job.claim_timeout {
                Some(explicit) => explicit,
                None => processing.then_some(declared.timeout),
            };
            let token = processing.then(|| format!("{id}/1"));
            if let Some(t) = &token {
                self.latest.insert(id.clone(), t.clone());
                self.claims.insert(id.clone(), 1);
            }
            let row = JobRow {
                id,
                class: job.class.to_string(),
                queue: job.queue.to_string(),
                status: job.status,
                attempts: job.attempts,
                max_retries: job.max_retries.unwrap_or(declared.max_retries),
                claim_timeout,
                claim_token: token,
                heartbeat_at: self.policy.setup_heartbeat(
                    self.scenario.schema,
                    job.status,
                    job.heartbeat.as_ref().map(|t| resolve(t, now, "heartbeat")).transpose()?,
                    resolve(&job.claimed, now, "claimed")?,
                ),
                run_at: resolve(&job.run_at, now, "run_at")?,
                updated_at: resolve(&job.claimed, now, "claimed")?,
                failed_at: None,
                completed_at: None,
                last_error: None,
            };
            self.call(Call::InsertJob(row)).await?;
        }
        for lease in &self.scenario.leases {
            let row = LeaseRow {
                name: lease.name.to_string(),
                owner: lease.owner.clone(),
                expires_at: resolve(&lease.expires, now, "expires")?,
            };
            self.call(Call::InsertLease(row)).await?;
        }
        // Rows an engine held back are sent now: a failure among them is
        // the setup's, not the next request's.
        self.engine.end_setup().await
    }

    /// Plays one step at the session's clock; `None` for `advance` and
    /// `set`, which only change the session.
    ///
    /// Errors: the engine's, or a time out of range.
    pub async fn step(&mut self, step: &Step) -> Result<Option<StepResult>, EngineError> {
        Ok(Some(match step {
            Step::Reap(a) => {
                let planned = self.scan(a.timeout, a.queues.as_ref()).await?;
                StepResult::Reap(self.apply(self.now, planned).await?)
            }
            Step::Scan(a) => {
                let planned = self.scan(a.timeout, a.queues.as_ref()).await?;
                let ids = planned.iter().map(|p| p.guard.id.clone()).collect();
                let reaper = a.reaper.clone().unwrap_or_else(|| DEFAULT_REAPER.to_owned());
                self.reapers.insert(reaper, (self.now, planned));
                StepResult::Scan(ids)
            }
            Step::Apply(a) => {
                let reaper = a.reaper.as_deref().unwrap_or(DEFAULT_REAPER);
                let (at, planned) = self.reapers.remove(reaper).unwrap_or((self.now, Vec::new()));
                StepResult::Apply(self.apply(at, planned).await?)
            }
            Step::Claim(c) => {
                StepResult::Claim(self.claim(c.job.as_str(), c.label.as_ref().map(|l| l.to_string())).await?)
            }
            Step::Heartbeat(r) => StepResult::Heartbeat(self.heartbeat(r).await?),
            Step::Complete(r) => {
                let (result, lost) = self.complete(r).await?;
                StepResult::Complete(result, lost)
            }
            Step::Fail(r) => {
                let (result, lost) = self.fail(r).await?;
                StepResult::Fail(result, lost)
            }
            Step::Advance(d) => {
                self.now = shift(self.now, *d, "the clock after an advance")?;
                return Ok(None);
            }
            Step::Set(s) => {
                self.app_grace = s.heartbeat_grace;
                return Ok(None);
            }
        }))
    }

    /// Finds the candidates and decides, with this scan's clock, each one's
    /// cutoff and outcome.
    async fn scan(
        &mut self,
        timeout: Option<i64>,
        queues: Option<&Vec<crate::scenario::Located<String>>>,
    ) -> Result<Vec<Planned>, EngineError> {
        if self.policy.recovery == crate::policy::Recovery::NextClaim {
            // The queue has no reaper: the next claim recovers a dead attempt.
            self.note("  no reaper under recovery = next_claim: nothing scanned".to_owned());
            return Ok(Vec::new());
        }
        let poll = rules::poll_timeout(timeout);
        let queues = queues.map(|q| q.iter().map(|s| s.to_string()).collect());
        let candidates = match self.call(Call::ReapScan { now: self.now, queues }).await? {
            Reply::Candidates(c) => c,
            other => return Err(unexpected("candidate rows", other)),
        };
        let mut planned = Vec::with_capacity(candidates.len());
        for c in candidates {
            planned.push(self.plan(&c, poll)?);
        }
        Ok(planned)
    }

    /// Decides one candidate's cutoff and outcome. A candidate whose class
    /// the scenario does not declare (SQL that returns the wrong column, as
    /// a mutant may) is an error, not a panic.
    fn plan(&mut self, c: &Candidate, poll: i64) -> Result<Planned, EngineError> {
        if !self.scenario.classes.contains_key(c.class.as_str()) {
            let message = format!("candidate `{}` has class `{}`, which the scenario does not declare", c.id, c.class);
            return Err(EngineError { statement: "reap_scan", kind: EngineErrorKind::Decode(message) });
        }
        let class = self.class(&c.class);
        let policy = self.policy;
        let grace = class.grace_under(policy, self.app_grace);
        let timeout = rules::row_timeout(c.claim_timeout, poll);
        let claim_window = rules::claim_window_under(policy, timeout);
        let window = rules::window_under(c.has_beat, grace, claim_window);
        let cutoff = shift(self.now, -Duration::from_secs(window), "the reap's cutoff")?;
        let action = rules::reap_action_under(policy, &class, c.attempts, c.max_retries);
        if self.trace.is_some() {
            let last_seen = c.last_seen.map_or("(not read)".to_owned(), |l| format!("{l} ({})", l.since(self.now)));
            let (lt, ge) = match policy.staleness {
                crate::policy::Staleness::Strict => ("<", ">="),
                crate::policy::Staleness::Inclusive => ("<=", ">"),
            };
            // Explaining only: the decision to update is the store's guard.
            let state = match c.last_seen {
                Some(l) if policy.staleness.is_stale(l, cutoff) => format!("stale (last_seen {lt} cutoff), so "),
                Some(_) => format!("alive (last_seen {ge} cutoff), else "),
                None => String::new(),
            };
            let claim_window =
                claim_window.map_or("none (the claim starts the heartbeat clock)".to_owned(), |w| format!("{w}s"));
            let left =
                if rules::has_retry_left(policy, c.attempts, c.max_retries) { "retries left" } else { "retries spent" };
            self.note(format!(
                "  candidate {}: last_seen {last_seen}, has_beat {}, grace {grace}s, row timeout {timeout}s, \
                 claim window {claim_window}, window {window}s, cutoff {cutoff} ({}), {state}decision {}",
                c.id,
                u8::from(c.has_beat),
                cutoff.since(self.now),
                match action {
                    ReapAction::Interrupt => "interrupted (not idempotent)".to_owned(),
                    ReapAction::Retry { delay } =>
                        format!("retry in {delay}s (attempt {}, max_retries {}: {left})", c.attempts, c.max_retries),
                    ReapAction::Fail =>
                        format!("failed (attempt {}, max_retries {}: {left})", c.attempts, c.max_retries),
                },
            ));
        }
        Ok(Planned { guard: ReapGuard { id: c.id.clone(), attempts: c.attempts, cutoff }, action })
    }

    /// Runs each planned guarded UPDATE; returns the rows changed.
    async fn apply(&mut self, at: Instant, planned: Vec<Planned>) -> Result<u64, EngineError> {
        let mut count = 0;
        for Planned { guard, action } in planned {
            let (id, attempts) = (guard.id.clone(), guard.attempts);
            let call = match action {
                ReapAction::Interrupt => Call::ReapInterrupt { guard, now: at },
                ReapAction::Retry { delay } => {
                    let run_at = shift(at, Duration::from_secs(delay), "a retry's run_at")?;
                    Call::ReapRetry { guard, now: at, run_at }
                }
                ReapAction::Fail => Call::ReapFail { guard, now: at },
            };
            let n = self.changed(call).await?;
            self.note(format!(
                "  apply {id}: {}",
                if n > 0 { "reclaimed" } else { "does not match the guard; left alone" }
            ));
            count += n;
            if n > 0 && !matches!(action, ReapAction::Retry { .. }) {
                self.events.push(FailureEvent {
                    job: id,
                    attempt: attempts,
                    is_final: true,
                    error: LastError::Timeout,
                });
            }
        }
        Ok(count)
    }

    /// Under `recovery = next_claim` (docs/policy.md), the cutoffs a claim
    /// re-takes a stale attempt by: the class's windows (its timeout, the
    /// grace in effect) before `now`, for an attempt that beat and one that
    /// did not. `None` under the reference recovery, by a reaper.
    fn retake(&self, class: &AppClass) -> Result<Option<crate::engine::Retake>, EngineError> {
        if self.policy.recovery != crate::policy::Recovery::NextClaim {
            return Ok(None);
        }
        let grace = class.grace_under(self.policy, self.app_grace);
        let timeout = rules::row_timeout(Some(class.timeout), rules::poll_timeout(None));
        let claim_window = rules::claim_window_under(self.policy, timeout);
        let cutoff = |has_beat| {
            let window = rules::window_under(has_beat, grace, claim_window);
            shift(self.now, -Duration::from_secs(window), "the claim's re-take cutoff")
        };
        Ok(Some(crate::engine::Retake { beat_cutoff: cutoff(true)?, claim_cutoff: cutoff(false)? }))
    }

    async fn claim(&mut self, id: &str, label: Option<String>) -> Result<ClaimResult, EngineError> {
        let job = self.job(id);
        let class = self.class(job.class.as_str());
        let number = self.claims.get(id).copied().unwrap_or(0) + 1;
        let token = label.unwrap_or_else(|| format!("{id}/{number}"));
        let now = self.now;
        let retake = self.retake(&class)?;
        let claim = Call::Claim { id: id.to_owned(), token: token.clone(), claim_timeout: class.timeout, now, retake };
        if self.changed(claim).await? == 0 {
            return Ok(ClaimResult::NotClaimable);
        }
        if let Some(name) = rules::lease_name(job, &class) {
            let expires_at = shift(now, rules::lease_window(&class), "the lease expiry")?;
            let acquire = Call::LeaseAcquire { name: name.clone(), token: token.clone(), expires_at };
            let taken = self.changed(acquire).await? > 0
                || self
                    .changed(Call::LeaseTakeover { name: name.clone(), token: token.clone(), now, expires_at })
                    .await?
                    > 0;
            if !taken {
                self.changed(Call::LeaseDefer { id: id.to_owned(), token, name, now }).await?;
                return Ok(ClaimResult::Deferred);
            }
        }
        self.claims.insert(id.to_owned(), number);
        self.latest.insert(id.to_owned(), token);
        Ok(ClaimResult::Claimed)
    }

    /// The token a worker step acts with: the named attempt, else the latest.
    fn token(&self, r: &AttemptRef) -> Option<String> {
        match &r.attempt {
            Some(a) => Some(a.to_string()),
            None => self.latest.get(r.job.as_str()).cloned(),
        }
    }

    async fn heartbeat(&mut self, r: &AttemptRef) -> Result<WorkerResult, EngineError> {
        let Some(token) = self.token(r) else { return Ok(WorkerResult::Fenced) };
        let (id, now) = (r.job.to_string(), self.now);
        if self.changed(Call::Heartbeat { id: id.clone(), token: token.clone(), now }).await? == 0 {
            return Ok(WorkerResult::Fenced);
        }
        let job = self.job(&id);
        let class = self.class(job.class.as_str());
        if let Some(name) = rules::lease_name(job, &class) {
            let expires_at = shift(
                now,
                rules::lease_renewal(&class, class.grace_under(self.policy, self.app_grace)),
                "the lease renewal",
            )?;
            self.changed(Call::LeaseRenew { name, token, expires_at }).await?;
        }
        Ok(WorkerResult::Ok)
    }

    async fn complete(&mut self, r: &AttemptRef) -> Result<(WorkerResult, bool), EngineError> {
        let Some(token) = self.token(r) else { return Ok((WorkerResult::Fenced, false)) };
        let (id, now) = (r.job.to_string(), self.now);
        if self.changed(Call::Complete { id: id.clone(), token: token.clone(), now }).await? == 0 {
            return Ok((WorkerResult::Fenced, false));
        }
        Ok((WorkerResult::Ok, self.release(&id, token).await?))
    }

    async fn fail(&mut self, r: &AttemptRef) -> Result<(WorkerResult, bool), EngineError> {
        let Some(token) = self.token(r) else { return Ok((WorkerResult::Fenced, false)) };
        let (id, now) = (r.job.to_string(), self.now);
        let (attempts, max_retries) =
            match self.call(Call::ReadAttempt { id: id.clone(), token: token.clone() }).await? {
                Reply::Attempt(Some(a)) => a,
                Reply::Attempt(None) => return Ok((WorkerResult::Fenced, false)),
                other => return Err(unexpected("the attempt's counters", other)),
            };
        // The policy's `retry` decides for a raised job as for a dead one;
        // `give_up` is the reaper's alone (docs/policy.md).
        let is_final = !rules::has_retry_left(self.policy, attempts, max_retries)
            || self.policy.retry == crate::policy::Retry::Never;
        let call = if is_final {
            Call::FailFinal { id: id.clone(), token: token.clone(), attempts, now }
        } else {
            let class = self.class(self.job(&id).class.as_str());
            let delay = match self.policy.retry {
                crate::policy::Retry::Backoff => class.backoff(attempts),
                crate::policy::Retry::Immediate | crate::policy::Retry::Never => 0,
            };
            let run_at = shift(now, Duration::from_secs(delay), "the retry's run_at")?;
            Call::FailRetry { id: id.clone(), token: token.clone(), attempts, now, run_at }
        };
        if self.changed(call).await? == 0 {
            return Ok((WorkerResult::Fenced, false));
        }
        self.events.push(FailureEvent { job: id.clone(), attempt: attempts, is_final, error: LastError::Failed });
        Ok((WorkerResult::Ok, self.release(&id, token).await?))
    }

    /// Releases the attempt's lease, if the job has one; true when it had
    /// been lost to another owner.
    async fn release(&mut self, id: &str, token: String) -> Result<bool, EngineError> {
        let job = self.job(id);
        let class = self.class(job.class.as_str());
        let Some(name) = rules::lease_name(job, &class) else { return Ok(false) };
        Ok(self.changed(Call::LeaseRelease { name, token }).await? == 0)
    }

    /// The state now, as an outcome document, for step-by-step comparison.
    async fn checkpoint(&mut self, steps: &[Option<StepResult>]) -> Result<Outcome, EngineError> {
        self.engine.mark(Phase::Checkpoint);
        self.read_outcome(steps.to_vec(), self.events.clone()).await
    }

    async fn outcome(mut self, steps: Vec<Option<StepResult>>) -> Result<Outcome, EngineError> {
        let events = std::mem::take(&mut self.events);
        self.read_outcome(steps, events).await
    }

    /// The store's rows and the hooks so far (`read_jobs`, `read_leases`).
    ///
    /// Errors: the engine's.
    pub async fn read_state(&mut self) -> Result<State, EngineError> {
        let jobs = match self.call(Call::ReadJobs).await? {
            Reply::Jobs(rows) => rows,
            other => return Err(unexpected("job rows", other)),
        };
        let leases = match self.call(Call::ReadLeases).await? {
            Reply::Leases(rows) => rows,
            other => return Err(unexpected("lease rows", other)),
        };
        Ok(State { jobs, leases, hooks: self.events.clone() })
    }

    /// The state now as an outcome document with `steps` and the hook
    /// calls `on_failure`, every instant relative to the session's clock.
    ///
    /// Errors: the engine's.
    pub async fn read_outcome(
        &mut self,
        steps: Vec<Option<StepResult>>,
        on_failure: Vec<FailureEvent>,
    ) -> Result<Outcome, EngineError> {
        let now = self.now;
        let rel = |i: Instant| i.since(now);
        let State { jobs, leases, .. } = self.read_state().await?;
        Ok(Outcome {
            steps,
            jobs: jobs
                .into_iter()
                .map(|r| {
                    let outcome = JobOutcome {
                        status: r.status,
                        attempts: r.attempts,
                        claim_token: r.claim_token,
                        heartbeat_at: r.heartbeat_at.map(rel),
                        run_at: rel(r.run_at),
                        updated_at: rel(r.updated_at),
                        failed_at: r.failed_at.map(rel),
                        completed_at: r.completed_at.map(rel),
                        last_error: r.last_error,
                    };
                    (r.id, outcome)
                })
                .collect(),
            leases: leases
                .into_iter()
                .map(|l| (l.name, LeaseOutcome { owner: l.owner, expires_at: rel(l.expires_at) }))
                .collect(),
            on_failure,
        })
    }
}

/// `at + by`, or an error when it leaves the declared range.
fn shift(at: Instant, by: Duration, what: &str) -> Result<Instant, EngineError> {
    at.checked_add(by).ok_or_else(|| EngineError {
        statement: "driver",
        kind: EngineErrorKind::OutOfRange(format!("{what} ({at} {}{by})", if by == Duration::ZERO { "+" } else { "" })),
    })
}

/// A setup time field at clock `now`, or an error when it leaves the range.
fn resolve(
    spec: &crate::scenario::Located<crate::time::TimeSpec>,
    now: Instant,
    field: &str,
) -> Result<Instant, EngineError> {
    spec.checked_resolve(now).ok_or_else(|| EngineError {
        statement: "driver",
        kind: EngineErrorKind::OutOfRange(format!("`{field}: {}` at {now}", spec.value())),
    })
}

fn unexpected(wanted: &str, got: Reply) -> EngineError {
    EngineError { statement: "driver", kind: EngineErrorKind::Decode(format!("wanted {wanted}, got {got:?}")) }
}

/// A step in words, for traces.
fn describe(step: &Step) -> String {
    serde_saphyr::to_string(step).unwrap_or_default().trim().replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use crate::engine::EngineErrorKind;
    use crate::model::Model;
    use crate::scenario::parse_text;

    /// A scenario that skipped `check` (parsed, not validated) and leaves
    /// the range: the driver reports it instead of panicking or wrapping.
    #[tokio::test]
    async fn an_instant_out_of_range_is_an_error_not_a_panic() {
        let cases = [
            "now: 9999-12-31T23:59:00Z\nclasses: { C: {} }\njobs: [ { id: a, class: C } ]\nsteps: [ { advance: 1h } ]\n",
            "now: 1000-01-01T00:05:00Z\nclasses: { C: {} }\njobs: [ { id: a, class: C, status: processing, attempts: 1, claimed: -1m } ]\nsteps: [ reap ]\n",
            "now: 9999-12-31T23:59:00Z\nclasses: { C: {} }\njobs: [ { id: a, class: C, run_at: +1h } ]\nsteps: []\n",
        ];
        for yaml in cases {
            let scenario = parse_text(&format!("description: x\n{yaml}")).unwrap();
            let mut model = Model::new(scenario.schema);
            let error = super::run(&scenario, &mut model, None).await.unwrap_err();
            assert!(matches!(error.kind, EngineErrorKind::OutOfRange(_)), "{yaml}: {error}");
        }
    }
}
