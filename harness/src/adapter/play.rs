//! One scenario played through an adapter: the driver's bookkeeping of
//! clocks and attempt labels turned into requests (`setup`, `clock`,
//! `read`, each step and its `read`, `teardown`), sent as far ahead of
//! their replies as the handshake allows (docs/adapter-protocol.md,
//! "Pipelined reads" and "Streamed requests"), and the replies taken in
//! order into step results and the states read between steps.

use std::collections::{BTreeMap, VecDeque};

use super::client::{Answer, Client, ClientError};
use super::protocol::{
    self, AttemptArgs, ClockArgs, Database, Empty, ErrorBody, ErrorKind, Op, OpResult, Setup, SetupJob, SetupLease,
    SetupSettings,
};
use crate::dialect::Profile;
use crate::driver;
use crate::outcome::{ClaimResult, Outcome, Status, StepResult, WorkerResult};
use crate::scenario::{AttemptRef, DEFAULT_REAPER, Scenario, Step};
use crate::time::Instant;

/// Why a scenario stopped before its read.
pub(super) enum Stop {
    /// Not judged: why (`unsupported`).
    Skip(String),
    /// Not played: reapcheck cannot send one of its requests (over the
    /// protocol's line limit); why.
    Unplayable(String),
    /// Ctrl-C or SIGTERM arrived mid-request: the signal. The process is
    /// killed (its request is unanswered) and the scenario is not judged.
    Interrupted(&'static str),
    /// Failed: why; the process is still answering.
    Fail(String),
    /// The adapter broke the protocol, exited, crashed or hung.
    Broken(ClientError),
}

/// How far ahead of their replies a scenario's requests are sent, as the
/// handshake allows (docs/adapter-protocol.md, "Pipelined reads" and
/// "Streamed requests").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Window {
    /// One request at a time: each waits for the reply before it.
    One,
    /// `pipelined`: the `read` after a `clock` or a step goes right behind it.
    ReadBehind,
    /// `streamed`: every request whose content is known goes at once. A
    /// claim of a job whose claim is unanswered, and a worker step on such
    /// a job's latest attempt, wait for that reply: their token follows
    /// from whether it claimed.
    Stream,
}

impl Window {
    pub(super) fn of(capabilities: &protocol::Capabilities) -> Window {
        if capabilities.streamed {
            Window::Stream
        } else if capabilities.pipelined {
            Window::ReadBehind
        } else {
            Window::One
        }
    }
}

/// The next request of a scenario to send: `setup`, `clock`, `read`, then
/// each step followed by a `read`, then `teardown`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Next {
    Setup,
    Clock,
    Read,
    Step(usize),
    Teardown,
    Done,
}

/// A request sent and not yet answered, or a step answered without one, in
/// the order their results are taken.
enum InFlight {
    Setup,
    /// A `clock` set to `now`; `step` when it is an `advance` step's.
    Clock {
        now: Instant,
        step: bool,
    },
    /// A `read` of the state at the clock `now`.
    Read {
        now: Instant,
    },
    /// A step's request, its reply to be read as this.
    Step(Asked),
    /// A worker step with no attempt label known: `fenced`, no request.
    Answered(StepResult),
    /// A step that could not be sent: the scenario stops there.
    Unsent(Stop),
    Teardown,
}

/// What a step's reply is read as.
enum Asked {
    Set,
    /// A `reap`: the rows changed.
    Reap,
    Scan,
    /// An `apply`: the rows changed.
    Apply,
    /// A claim of `job` as its successful claim `number`, labelled `token`.
    Claim {
        job: String,
        number: u64,
        token: String,
    },
    Heartbeat,
    /// A `complete` (true) or a `fail`.
    Finish(bool),
}

impl Asked {
    /// The request's operation.
    fn name(&self) -> &'static str {
        match self {
            Asked::Set => "set",
            Asked::Reap => "reap",
            Asked::Scan => "scan",
            Asked::Apply => "apply",
            Asked::Claim { .. } => "claim",
            Asked::Heartbeat => "heartbeat",
            Asked::Finish(true) => "complete",
            Asked::Finish(false) => "fail",
        }
    }
}

/// One scenario's requests, with the driver's bookkeeping of clocks and
/// attempt labels. Requests are sent as far ahead of their replies as the
/// [`Window`] allows and their replies taken in order; the bookkeeping
/// that follows from a reply (a claim's label) is done when it is taken.
pub(super) struct Play<'a> {
    scenario: &'a Scenario,
    client: &'a mut Client,
    profile: &'a Profile,
    /// The clock as of the last request sent.
    now: Instant,
    /// Each job's latest live attempt label, as of the replies taken.
    latest: BTreeMap<String, String>,
    /// Successful claims of each job, as of the replies taken.
    claims: BTreeMap<String, u64>,
    /// Claims of each job sent whose replies were not taken yet.
    claiming: BTreeMap<String, usize>,
    /// The step results so far.
    pub(super) steps: Vec<Option<StepResult>>,
    /// How many exchanges the log held when each step was sent, and then
    /// when `teardown` was.
    pub(super) marks: Vec<usize>,
    /// The state read after setup and after each step, for the invariants.
    pub(super) checkpoints: driver::Checkpoints,
    /// Requests sent.
    sent: usize,
    window: Window,
    in_flight: VecDeque<InFlight>,
    /// Steps sent (or answered without a request).
    stepped: usize,
    /// Whether `teardown` was sent.
    pub(super) torn_down: bool,
}

impl<'a> Play<'a> {
    pub(super) fn new(
        scenario: &'a Scenario,
        client: &'a mut Client,
        profile: &'a Profile,
        window: Window,
    ) -> Play<'a> {
        Play {
            scenario,
            client,
            profile,
            now: scenario.now,
            latest: BTreeMap::new(),
            claims: BTreeMap::new(),
            claiming: BTreeMap::new(),
            steps: Vec::new(),
            marks: Vec::new(),
            checkpoints: driver::Checkpoints::new(),
            sent: 0,
            window,
            in_flight: VecDeque::new(),
            stepped: 0,
            torn_down: false,
        }
    }

    pub(super) async fn run(
        &mut self,
        name: &str,
        namespace: &str,
        database: Option<Database>,
        time_zone: &str,
    ) -> Result<Outcome, Stop> {
        let mut setup = Some(self.setup(name, namespace, database, time_zone)?);
        // A processing row was claimed by its attempt 1, as the driver counts.
        for job in setup.iter().flat_map(|s| &s.jobs).filter(|j| j.status == Status::Processing) {
            self.claims.insert(job.id.clone(), 1);
            self.latest.insert(job.id.clone(), format!("{}/1", job.id));
        }
        let mut next = Next::Setup;
        loop {
            while next != Next::Done && self.may_send(next) {
                next = self.send(next, &mut setup);
            }
            let Some(item) = self.in_flight.pop_front() else { break };
            self.take(item).await?;
        }
        self.checkpoints.last().cloned().ok_or_else(|| Stop::Fail("no state was read".to_owned()))
    }

    /// Whether `next` may be sent now, under the window.
    fn may_send(&self, next: Next) -> bool {
        let waiting = self.in_flight.len();
        match self.window {
            Window::One => waiting == 0,
            Window::ReadBehind => waiting == 0 || (next == Next::Read && waiting == 1),
            Window::Stream => match next {
                Next::Step(i) => !self.waits_on_a_claim(self.scenario.steps[i].value()),
                _ => true,
            },
        }
    }

    /// Whether `step`'s request follows from the reply to a claim not yet
    /// taken: a claim's number and a worker step's latest attempt do.
    fn waits_on_a_claim(&self, step: &Step) -> bool {
        let job = match step {
            Step::Claim(c) => c.job.as_str(),
            Step::Heartbeat(r) | Step::Complete(r) | Step::Fail(r) if r.attempt.is_none() => r.job.as_str(),
            _ => return false,
        };
        self.claiming.get(job).is_some_and(|n| *n > 0)
    }

    /// Sends `next` (or notes a step answered without a request); what
    /// comes after it.
    fn send(&mut self, next: Next, setup: &mut Option<Setup>) -> Next {
        match next {
            Next::Setup => match setup.take() {
                Some(setup) => self.push(Some(Op::Setup(setup)), InFlight::Setup, Next::Clock),
                None => Next::Clock,
            },
            Next::Clock => {
                let now = self.now;
                self.push(Some(Op::Clock(ClockArgs { now })), InFlight::Clock { now, step: false }, Next::Read)
            }
            Next::Read => {
                let then =
                    if self.stepped < self.scenario.steps.len() { Next::Step(self.stepped) } else { Next::Teardown };
                self.push(Some(Op::Read(Empty {})), InFlight::Read { now: self.now }, then)
            }
            Next::Step(i) => {
                self.marks.push(self.sent);
                self.stepped += 1;
                match self.ask(self.scenario.steps[i].value()) {
                    Ok((op, item)) => self.push(op, item, Next::Read),
                    Err(stop) => self.push(None, InFlight::Unsent(stop), Next::Done),
                }
            }
            Next::Teardown => {
                self.marks.push(self.sent);
                let before = self.sent;
                let next = self.push(Some(Op::Teardown(Empty {})), InFlight::Teardown, Next::Done);
                self.torn_down = self.sent > before;
                next
            }
            Next::Done => Next::Done,
        }
    }

    /// Sends `op` (when there is one) and puts `item` in flight; `then`,
    /// or [`Next::Done`] when `op` cannot be sent (over the protocol's line
    /// limit): the scenario is not played on from there.
    fn push(&mut self, op: Option<Op>, item: InFlight, then: Next) -> Next {
        if let Some(op) = op {
            if let Err(e) = self.client.send(op) {
                let why = format!("not played: it cannot go through the protocol: {e}; play it on a SQL target");
                self.in_flight.push_back(InFlight::Unsent(Stop::Unplayable(why)));
                return Next::Done;
            }
            self.sent += 1;
        }
        self.in_flight.push_back(item);
        then
    }

    /// The request for `step` and what its reply is read as; `None` for a
    /// worker step with no attempt label known (answered `fenced`).
    fn ask(&mut self, step: &Step) -> Result<(Option<Op>, InFlight), Stop> {
        let asked = |op, asked| Ok((Some(op), InFlight::Step(asked)));
        match step {
            Step::Advance(d) => {
                self.now =
                    self.now.checked_add(*d).ok_or_else(|| Stop::Fail("the clock leaves the time range".into()))?;
                let now = self.now;
                Ok((Some(Op::Clock(ClockArgs { now })), InFlight::Clock { now, step: true }))
            }
            Step::Set(s) => asked(Op::Set(protocol::SetArgs { heartbeat_grace: s.heartbeat_grace }), Asked::Set),
            Step::Reap(a) => asked(
                Op::Reap(protocol::ReapArgs { timeout: a.timeout, queues: queues(a.queues.as_ref()) }),
                Asked::Reap,
            ),
            Step::Scan(a) => {
                let reaper = a.reaper.clone().unwrap_or_else(|| DEFAULT_REAPER.to_owned());
                let op = Op::Scan(protocol::ScanArgs { reaper, timeout: a.timeout, queues: queues(a.queues.as_ref()) });
                asked(op, Asked::Scan)
            }
            Step::Apply(a) => {
                let reaper = a.reaper.clone().unwrap_or_else(|| DEFAULT_REAPER.to_owned());
                asked(Op::Apply(protocol::ApplyArgs { reaper }), Asked::Apply)
            }
            Step::Claim(c) => {
                let id = c.job.to_string();
                let number = self.claims.get(&id).copied().unwrap_or(0) + 1;
                let token = c.label.as_ref().map_or_else(|| format!("{id}/{number}"), |l| l.to_string());
                *self.claiming.entry(id.clone()).or_default() += 1;
                let op = Op::Claim(AttemptArgs { job: id.clone(), token: token.clone() });
                asked(op, Asked::Claim { job: id, number, token })
            }
            Step::Heartbeat(r) => match self.attempt(r) {
                Some(args) => asked(Op::Heartbeat(args), Asked::Heartbeat),
                None => Ok((None, InFlight::Answered(StepResult::Heartbeat(WorkerResult::Fenced)))),
            },
            Step::Complete(r) => match self.attempt(r) {
                Some(args) => asked(Op::Complete(args), Asked::Finish(true)),
                None => Ok((None, InFlight::Answered(StepResult::Complete(WorkerResult::Fenced, false)))),
            },
            Step::Fail(r) => match self.attempt(r) {
                Some(args) => asked(Op::Fail(args), Asked::Finish(false)),
                None => Ok((None, InFlight::Answered(StepResult::Fail(WorkerResult::Fenced, false)))),
            },
        }
    }

    /// Takes the result of `item`, the oldest in flight: its reply, read
    /// as what was asked.
    async fn take(&mut self, item: InFlight) -> Result<(), Stop> {
        match item {
            InFlight::Setup => self.expect_empty("setup").await,
            InFlight::Teardown => self.expect_empty("teardown").await,
            InFlight::Clock { now, step } => {
                self.clock(now).await?;
                if step {
                    self.steps.push(None);
                }
                Ok(())
            }
            InFlight::Read { now } => {
                let outcome = self.read(now).await?;
                self.checkpoints.push(outcome);
                Ok(())
            }
            InFlight::Step(asked) => {
                let result = self.result(asked).await?;
                self.steps.push(result);
                Ok(())
            }
            InFlight::Answered(result) => {
                self.steps.push(Some(result));
                Ok(())
            }
            InFlight::Unsent(stop) => Err(stop),
        }
    }

    /// A `read`'s reply, as an outcome at the clock `now` with the step
    /// results so far: a checkpoint for the invariants, and after the last
    /// step what is judged.
    async fn read(&mut self, now: Instant) -> Result<Outcome, Stop> {
        let read = match self.receive().await? {
            Answer::Ok(OpResult::Read(r)) => r,
            Answer::Ok(other) => unreachable!("a read decodes as a read, not {other:?}"),
            Answer::Error(e) => return Err(error_stop("read", e)),
        };
        read.to_outcome(now, &self.profile.policy, self.steps.clone())
            .map_err(|e| Stop::Fail(format!("the `read` cannot be judged: {e}")))
    }

    /// The oldest reply not yet taken, or Ctrl-C or SIGTERM.
    async fn receive(&mut self) -> Result<Answer, Stop> {
        tokio::select! {
            answer = self.client.receive() => answer.map_err(Stop::Broken),
            signal = crate::interrupt::wait() => Err(Stop::Interrupted(signal)),
        }
    }

    /// The reply to `op`, whose `ok` result is `{}`; any error reply stops
    /// the scenario.
    async fn expect_empty(&mut self, op: &str) -> Result<(), Stop> {
        match self.receive().await? {
            Answer::Ok(_) => Ok(()),
            Answer::Error(e) => Err(error_stop(op, e)),
        }
    }

    /// The `setup` request: the scenario's rows as the driver inserts them.
    fn setup(&self, name: &str, namespace: &str, database: Option<Database>, zone: &str) -> Result<Setup, Stop> {
        let s = self.scenario;
        let now = s.now;
        let out_of_range = |what: &str| Stop::Fail(format!("the scenario's {what} leaves the time range"));
        let mut jobs = Vec::new();
        let policy = &self.profile.policy;
        for job in s.jobs.iter().filter(|j| policy.keeps(j.status)) {
            let class = &s.classes[job.class.as_str()];
            for id in job.ids() {
                let processing = job.status == Status::Processing;
                let claim_timeout = match job.claim_timeout {
                    Some(explicit) => explicit,
                    None => processing.then_some(class.timeout),
                };
                let heartbeat_at = match &job.heartbeat {
                    Some(t) => Some(t.checked_resolve(now).ok_or_else(|| out_of_range("heartbeat"))?),
                    None => None,
                };
                // As the driver writes it (Policy::setup_heartbeat).
                let claimed = job.claimed.checked_resolve(now).ok_or_else(|| out_of_range("claimed"))?;
                let heartbeat_at = policy.setup_heartbeat(s.schema, job.status, heartbeat_at, claimed);
                jobs.push(SetupJob {
                    id: id.clone(),
                    class: job.class.to_string(),
                    queue: job.queue.to_string(),
                    status: job.status,
                    attempts: job.attempts,
                    max_retries: job.max_retries.unwrap_or(class.max_retries),
                    claim_timeout,
                    claim_token: processing.then(|| format!("{id}/1")),
                    concurrency_key: job.concurrency_key.clone(),
                    heartbeat_at,
                    run_at: job.run_at.checked_resolve(now).ok_or_else(|| out_of_range("run_at"))?,
                    updated_at: job.claimed.checked_resolve(now).ok_or_else(|| out_of_range("claimed"))?,
                });
            }
        }
        let leases = s
            .leases
            .iter()
            .map(|l| {
                let expires_at = l.expires.checked_resolve(now).ok_or_else(|| out_of_range("expires"))?;
                Ok(SetupLease { name: l.name.to_string(), owner: l.owner.clone(), expires_at })
            })
            .collect::<Result<Vec<_>, Stop>>()?;
        let classes = s.classes.iter().map(|(n, c)| (n.clone(), c.into())).collect();
        Ok(Setup {
            scenario: name.to_owned(),
            namespace: namespace.to_owned(),
            database,
            now,
            app_time_zone: zone.to_owned(),
            session_time_zone: s.session_time_zone.as_ref().map(|z| z.to_string()),
            schema: s.schema,
            settings: SetupSettings { heartbeat_grace: s.settings.heartbeat_grace },
            classes,
            jobs,
            leases,
        })
    }

    /// The reply to a `clock` set to `now`, which must read it back.
    async fn clock(&mut self, now: Instant) -> Result<(), Stop> {
        let reply = match self.receive().await? {
            Answer::Ok(OpResult::Clock(c)) => c,
            Answer::Ok(other) => unreachable!("a clock decodes as a clock, not {other:?}"),
            Answer::Error(e) => return Err(error_stop("clock", e)),
        };
        let wanted = protocol::instant::format(now);
        if reply.app != now {
            let app = protocol::instant::format(reply.app);
            return Err(Stop::Fail(format!(
                "the clock did not move: `clock` asked for {wanted}, the app clock reads {app}"
            )));
        }
        if let Some(db) = reply.database.filter(|d| *d != now) {
            let db = protocol::instant::format(db);
            return Err(Stop::Fail(format!(
                "the clock did not move: `clock` asked for {wanted}, the database clock reads {db}"
            )));
        }
        Ok(())
    }

    /// The reply to a step's request, read as `asked`: the step's result
    /// (a `refused` reply is the no-op result of its step).
    async fn result(&mut self, asked: Asked) -> Result<Option<StepResult>, Stop> {
        let answer = self.receive().await?;
        let refused = matches!(&answer, Answer::Error(e) if e.kind == ErrorKind::Refused);
        Ok(Some(match (asked, answer) {
            (Asked::Set, Answer::Ok(_)) => return Ok(None),
            (Asked::Set, Answer::Error(e)) => return Err(error_stop("set", e)),
            (Asked::Reap, Answer::Ok(OpResult::Reap(c))) => StepResult::Reap(c.changed),
            (Asked::Reap, _) if refused => StepResult::Reap(0),
            (Asked::Apply, Answer::Ok(OpResult::Apply(c))) => StepResult::Apply(c.changed),
            (Asked::Apply, _) if refused => StepResult::Apply(0),
            (Asked::Scan, Answer::Ok(OpResult::Scan(s))) => StepResult::Scan(s.candidates),
            (Asked::Scan, _) if refused => StepResult::Scan(Vec::new()),
            (Asked::Claim { job, number, token }, answer) => {
                *self.claiming.entry(job.clone()).or_default() -= 1;
                let result = match answer {
                    Answer::Ok(OpResult::Claim(c)) => c.result,
                    _ if refused => ClaimResult::NotClaimable,
                    Answer::Ok(other) => unreachable!("a claim decodes as a claim, not {other:?}"),
                    Answer::Error(e) => return Err(error_stop("claim", e)),
                };
                if result == ClaimResult::Claimed {
                    self.claims.insert(job.clone(), number);
                    self.latest.insert(job, token);
                }
                StepResult::Claim(result)
            }
            (Asked::Heartbeat, Answer::Ok(OpResult::Heartbeat(h))) => StepResult::Heartbeat(h.result),
            (Asked::Heartbeat, _) if refused => StepResult::Heartbeat(WorkerResult::Fenced),
            (Asked::Finish(complete), Answer::Ok(OpResult::Complete(f) | OpResult::Fail(f))) => {
                if complete {
                    StepResult::Complete(f.result, f.lease_lost)
                } else {
                    StepResult::Fail(f.result, f.lease_lost)
                }
            }
            (Asked::Finish(complete), _) if refused => {
                if complete {
                    StepResult::Complete(WorkerResult::Fenced, false)
                } else {
                    StepResult::Fail(WorkerResult::Fenced, false)
                }
            }
            (asked, Answer::Error(e)) => return Err(error_stop(asked.name(), e)),
            (asked, Answer::Ok(other)) => unreachable!("a {} decodes as its own result, not {other:?}", asked.name()),
        }))
    }

    /// The attempt a worker step acts as: the named one, else the job's
    /// latest; `None` when no label is known (answered `fenced` at once).
    fn attempt(&self, r: &AttemptRef) -> Option<AttemptArgs> {
        let token = match &r.attempt {
            Some(a) => Some(a.to_string()),
            None => self.latest.get(r.job.as_str()).cloned(),
        }?;
        Some(AttemptArgs { job: r.job.to_string(), token })
    }
}

fn queues(queues: Option<&Vec<crate::scenario::Located<String>>>) -> Option<Vec<String>> {
    queues.map(|q| q.iter().map(|s| s.to_string()).collect())
}

/// What an error reply to `op` (one that has no no-op result) does to the
/// scenario: `unsupported` skips it; the others fail it.
fn error_stop(op: &str, e: ErrorBody) -> Stop {
    match e.kind {
        ErrorKind::Unsupported => Stop::Skip(e.message),
        ErrorKind::Refused => Stop::Fail(format!("`{op}` was refused: {}", e.message)),
        ErrorKind::Indefinite => Stop::Fail(format!(
            "`{op}` may or may not have happened (indefinite), so it cannot be judged: {}",
            e.message
        )),
        ErrorKind::Exception => match e.traceback {
            Some(t) => Stop::Fail(format!("`{op}` raised: {}\n{}", e.message, t.trim_end())),
            None => Stop::Fail(format!("`{op}` raised: {}", e.message)),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_replies_skip_or_fail() {
        let body = |kind, traceback: Option<&str>| ErrorBody {
            kind,
            message: "m".into(),
            traceback: traceback.map(Into::into),
        };
        assert!(matches!(error_stop("reap", body(ErrorKind::Unsupported, None)), Stop::Skip(m) if m == "m"));
        let Stop::Fail(f) = error_stop("reap", body(ErrorKind::Exception, Some("Traceback\n  line"))) else { panic!() };
        assert_eq!(f, "`reap` raised: m\nTraceback\n  line");
        let Stop::Fail(f) = error_stop("claim", body(ErrorKind::Indefinite, None)) else { panic!() };
        assert!(f.contains("cannot be judged"), "{f}");
    }
}
