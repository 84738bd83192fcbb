//! The race's workload: worker and reaper tasks, each on its own
//! connection to one shared namespace, running the dialect's statements
//! through [`SqlEngine`] for a bounded time, every operation recorded.
//!
//! Time: each task binds as `:now` its own clock, `origin + elapsed *
//! scale + offset`, read from the real monotonic clock when the operation
//! starts and truncated to the dialect's `time_resolution`. `origin` is the
//! wall clock when the race started; `scale` (default 40) makes a 30 s
//! grace pass in 0.75 real seconds, so a short race sees many deaths and
//! reclaims (with `scale` 1 the bound instants are the wall clock itself).
//! All durations below are in the spec's seconds, the clock's units.

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use futures_util::future::join_all;

use super::check::{Expectations, JobWindows};
use super::history::{Entry, Op, ReapKind, Res, Scanned, Task};
use crate::backend::{self, BackendError, Connection, Server};
use crate::dialect::Dialect;
use crate::engine::{Call, Engine, EngineError, JobRow, JobState, ReapGuard, Reply};
use crate::feature::Feature;
use crate::outcome::Status;
use crate::rules::{self, AppClass, ReapAction};
use crate::scenario::Schema;
use crate::sql::{SqlEngine, namespace_script};
use crate::time::{Duration, Instant};

/// The grace of both race classes, seconds: the floor, so deaths are
/// reclaimed as soon as the spec allows.
pub const GRACE: i64 = rules::GRACE_FLOOR_SECONDS;
/// The class timeout, seconds: a claim window of 90 s.
pub const TIMEOUT: i64 = 30;
/// Retries after the first run.
pub const MAX_RETRIES: i64 = 2;
/// How long a worker sleeps after a claim that found nothing, seconds.
const IDLE: i64 = 1;

/// How a race runs.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Real seconds the workload runs before it stops by itself.
    pub seconds: f64,
    /// Worker tasks (connections).
    pub workers: u32,
    /// Reaper tasks (connections).
    pub reapers: u32,
    /// Jobs inserted at the start.
    pub jobs: u32,
    /// Seed of every task's choices.
    pub seed: u64,
    /// Clock seconds per real second.
    pub scale: u32,
    /// Each reaper polls every `poll` seconds (jittered down to half).
    pub poll: i64,
    /// Each reaper pauses up to this many seconds between its scan and its
    /// apply, so that other reapers and workers act in between.
    pub apply_delay: i64,
    /// Reaper 0's clock runs this many seconds ahead of every other task's:
    /// a host with a fast clock, the only way a reap can meet a later
    /// attempt old enough to pass its cutoff (spec "reap" step 4, the
    /// `attempts` guard).
    pub skew: i64,
}

impl Settings {
    /// What the checker must be told about these settings.
    pub fn expectations(&self) -> Expectations {
        expectations_of((0..self.jobs).map(job_id))
    }
}

/// What the checker must be told about a race that inserted `jobs`: each
/// with the race classes' windows.
pub(super) fn expectations_of(jobs: impl IntoIterator<Item = String>) -> Expectations {
    let windows = JobWindows { grace: GRACE, claim_window: rules::claim_window(TIMEOUT) };
    Expectations { jobs: jobs.into_iter().map(|id| (id, windows)).collect() }
}

pub(super) fn job_id(i: u32) -> String {
    format!("j{i:03}")
}

/// The class of job `i`: even jobs are idempotent (a death is retried, then
/// failed), odd ones are not (a death is interrupted).
pub(super) fn class_of(job: &str) -> (&'static str, AppClass) {
    let odd = job.bytes().last().is_some_and(|b| b % 2 == 1);
    let class = AppClass {
        heartbeat_grace: Some(GRACE),
        idempotent: !odd,
        base_delay: 1,
        max_delay: 4,
        timeout: TIMEOUT,
        concurrency_key: None,
        exclusive: false,
    };
    (if odd { "Once" } else { "Idem" }, class)
}

/// Where the race's connections come from.
pub enum Place<'s> {
    /// A server: every connection enters the same namespace.
    Server(&'s Server),
    /// A SQLite database file shared by every connection.
    SqliteFile(PathBuf),
}

/// What a race produced.
#[derive(Debug)]
pub struct Race {
    /// Every operation, in no particular order.
    pub history: Vec<Entry>,
    /// `read_jobs` at the end.
    pub rows: Vec<JobState>,
    /// Real seconds the workload ran.
    pub elapsed: f64,
}

/// A failure to set the race up or read it back.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct RaceError(pub String);

impl From<EngineError> for RaceError {
    fn from(e: EngineError) -> Self {
        RaceError(e.to_string())
    }
}

impl From<BackendError> for RaceError {
    fn from(e: BackendError) -> Self {
        RaceError(e.to_string())
    }
}

/// Runs the workload on `place` with `dialect`'s statements and returns
/// its history and final rows. The namespace is dropped afterwards, also
/// when the race failed.
pub async fn run(place: Place<'_>, dialect: &Dialect, settings: &Settings) -> Result<Race, RaceError> {
    in_namespace(&place, dialect, async |admin, namespace| race_in(&place, dialect, settings, namespace, admin).await)
        .await
}

/// Runs `body` with an admin connection (not yet inside it) and the name
/// of a fresh namespace on `place`, which is dropped afterwards, also when
/// `body` failed: the frame of every race ([`run`],
/// [`super::directed::run`]).
pub(super) async fn in_namespace(
    place: &Place<'_>,
    dialect: &Dialect,
    body: impl AsyncFnOnce(&mut Connection, &str) -> Result<Race, RaceError>,
) -> Result<Race, RaceError> {
    let namespace = crate::namespace::fresh();
    let mut admin = open(place, dialect).await?;
    let result = match namespace_script(&mut admin, dialect, "create_namespace", &namespace).await {
        Ok(()) => body(&mut admin, &namespace).await,
        Err(e) => Err(e.into()),
    };
    let dropped = match namespace_script(&mut admin, dialect, "drop_namespace", &namespace).await {
        Ok(()) => crate::isolation::check_dropped(&mut admin, dialect, &namespace).await,
        failed => failed,
    };
    admin.close().await;
    let race = result?;
    dropped.map_err(|e| RaceError(format!("the race ran but its namespace {namespace} was not dropped: {e}")))?;
    Ok(race)
}

/// Enters `namespace` on `admin`, creates the tables and inserts `jobs`,
/// each pending at `at`.
pub(super) async fn set_up(
    admin: &mut Connection,
    dialect: &Dialect,
    namespace: &str,
    jobs: impl IntoIterator<Item = String>,
    at: Instant,
) -> Result<(), RaceError> {
    namespace_script(admin, dialect, "enter_namespace", namespace).await?;
    crate::isolation::check_entered(admin, dialect, Schema::Standard, namespace).await?;
    let mut engine = SqlEngine::new(dialect, Schema::Standard, admin);
    engine.call(Call::CreateSchema).await?;
    for id in jobs {
        let (class, _) = class_of(&id);
        engine.call(Call::InsertJob(pending(id, class, at))).await?;
    }
    Ok(())
}

/// `n` connections to `place`, each inside `namespace`: one per task.
pub(super) async fn task_connections(
    place: &Place<'_>,
    dialect: &Dialect,
    namespace: &str,
    n: u32,
) -> Result<Vec<Connection>, RaceError> {
    let mut conns = Vec::new();
    for _ in 0..n {
        let mut conn = open(place, dialect).await?;
        namespace_script(&mut conn, dialect, "enter_namespace", namespace).await?;
        conns.push(conn);
    }
    Ok(conns)
}

/// `read_jobs` on `admin`: the rows a race left.
pub(super) async fn final_rows(admin: &mut Connection, dialect: &Dialect) -> Result<Vec<JobState>, RaceError> {
    match SqlEngine::new(dialect, Schema::Standard, admin).call(Call::ReadJobs).await? {
        Reply::Jobs(rows) => Ok(rows),
        other => Err(RaceError(format!("read_jobs returned {other:?}"))),
    }
}

/// What a statement's reply is in the history.
pub(super) fn res_of(reply: Result<Reply, EngineError>) -> Res {
    match reply {
        Ok(Reply::Changed(n)) => Res::Changed(n),
        Ok(Reply::Candidates(rows)) => Res::Scanned(
            rows.into_iter().map(|c| Scanned { job: c.id, attempts: c.attempts, has_beat: c.has_beat }).collect(),
        ),
        Ok(other) => Res::Error(format!("unexpected reply {other:?}")),
        Err(e) => Res::Error(e.to_string()),
    }
}

/// The guarded reap of a scanned `row` at `now` (spec "reap"): the
/// class's action, `cutoff = now - window`, as the operation to record
/// and the call to run.
pub(super) fn reap_of(row: &Scanned, now: Instant) -> (Op, Call) {
    let (_, class) = class_of(&row.job);
    let claim_window = rules::claim_window(rules::row_timeout(Some(TIMEOUT), rules::poll_timeout(None)));
    let window = rules::window(row.has_beat, class.grace(GRACE), claim_window);
    let guard = ReapGuard { id: row.job.clone(), attempts: row.attempts, cutoff: now + Duration::from_secs(-window) };
    let (kind, call) = match rules::reap_action(&class, row.attempts, MAX_RETRIES) {
        ReapAction::Interrupt => (ReapKind::Interrupt, Call::ReapInterrupt { guard: guard.clone(), now }),
        ReapAction::Fail => (ReapKind::Fail, Call::ReapFail { guard: guard.clone(), now }),
        ReapAction::Retry { delay } => {
            (ReapKind::Retry, Call::ReapRetry { guard: guard.clone(), now, run_at: now + Duration::from_secs(delay) })
        }
    };
    let op = Op::Reap { kind, job: row.job.clone(), attempts: row.attempts, cutoff: guard.cutoff, now };
    (op, call)
}

pub(super) async fn open(place: &Place<'_>, dialect: &Dialect) -> Result<Connection, RaceError> {
    let mut conn = match place {
        Place::Server(server) => server.open().await?,
        Place::SqliteFile(path) => backend::sqlite_file(path, std::time::Duration::from_secs(10)).await?,
    };
    conn.set_instant_encoding(dialect.profile.instants).await?;
    Ok(conn)
}

async fn race_in(
    place: &Place<'_>,
    dialect: &Dialect,
    settings: &Settings,
    namespace: &str,
    admin: &mut Connection,
) -> Result<Race, RaceError> {
    let origin = Instant::from_chrono(chrono::Utc::now());
    let started = std::time::Instant::now();
    let clock = Clock { origin, started, scale: i64::from(settings.scale.max(1)), offset: Duration::ZERO, dialect };
    set_up(admin, dialect, namespace, (0..settings.jobs).map(job_id), clock.now()).await?;
    let mut conns = task_connections(place, dialect, namespace, settings.workers + settings.reapers).await?;
    let recorder = Recorder { seq: AtomicU64::new(0), entries: Mutex::new(Vec::new()) };
    let deadline = started + std::time::Duration::from_secs_f64(settings.seconds);
    let shared = Shared { dialect, settings, recorder: &recorder, deadline };
    let mut tasks = Vec::new();
    for (i, conn) in conns.iter_mut().enumerate() {
        let i = u32::try_from(i).unwrap_or(u32::MAX);
        let (task, offset) = if i < settings.workers {
            (Task::Worker(i), Duration::ZERO)
        } else {
            let r = i - settings.workers;
            (Task::Reaper(r), Duration::from_secs(if r == 0 { settings.skew } else { 0 }))
        };
        let clock = Clock { offset, ..clock };
        let rng = Rng::new(settings.seed ^ (u64::from(i) + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let mut me =
            Actor { shared: &shared, task, clock, rng, engine: SqlEngine::new(dialect, Schema::Standard, conn) };
        tasks.push(async move {
            match task {
                Task::Worker(_) => me.work().await,
                Task::Reaper(_) => me.reap().await,
            }
        });
    }
    join_all(tasks).await;
    let elapsed = started.elapsed().as_secs_f64();
    for conn in conns {
        conn.close().await;
    }
    let rows = final_rows(admin, dialect).await?;
    let history = recorder.entries.into_inner().unwrap_or_else(|e| e.into_inner());
    Ok(Race { history, rows, elapsed })
}

pub(super) fn pending(id: String, class: &str, now: Instant) -> JobRow {
    JobRow {
        id,
        class: class.to_owned(),
        queue: "default".to_owned(),
        status: Status::Pending,
        attempts: 0,
        max_retries: MAX_RETRIES,
        claim_timeout: None,
        claim_token: None,
        heartbeat_at: None,
        run_at: now,
        updated_at: now,
        failed_at: None,
        completed_at: None,
        last_error: None,
    }
}

/// One task's clock.
#[derive(Clone, Copy)]
struct Clock<'d> {
    origin: Instant,
    started: std::time::Instant,
    scale: i64,
    offset: Duration,
    dialect: &'d Dialect,
}

impl Clock<'_> {
    /// Now, truncated to the dialect's resolution.
    fn now(&self) -> Instant {
        let elapsed = i64::try_from(self.started.elapsed().as_micros()).unwrap_or(i64::MAX);
        let at = self.origin + Duration::from_micros(elapsed.saturating_mul(self.scale)) + self.offset;
        self.dialect.profile.time_resolution.truncate(at)
    }

    /// The real time `seconds` clock seconds take.
    fn real(&self, micros: i64) -> std::time::Duration {
        std::time::Duration::from_micros(u64::try_from(micros / self.scale).unwrap_or(0))
    }
}

/// Every task's records, with the real-time counter.
struct Recorder {
    seq: AtomicU64,
    entries: Mutex<Vec<Entry>>,
}

struct Shared<'a> {
    dialect: &'a Dialect,
    settings: &'a Settings,
    recorder: &'a Recorder,
    deadline: std::time::Instant,
}

/// SplitMix64: small, seeded, good enough to pick fates.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (0 when n is 0).
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }

    /// Uniform microseconds in `[0, seconds]`.
    fn micros_upto(&mut self, seconds: i64) -> i64 {
        let n = u64::try_from(seconds.max(0) * 1_000_000).unwrap_or(0);
        i64::try_from(self.below(n + 1)).unwrap_or(0)
    }
}

/// What a worker does with an attempt it claimed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fate {
    /// Beats until done, then `complete`.
    Complete,
    /// Beats until done, then the worker failure path.
    Fail,
    /// Stops beating at some point and never comes back.
    Die,
    /// Stops beating, sleeps past its window, then beats and completes
    /// (both must be fenced once the attempt was reclaimed).
    Zombie,
}

struct Actor<'a> {
    shared: &'a Shared<'a>,
    task: Task,
    clock: Clock<'a>,
    rng: Rng,
    engine: SqlEngine<'a>,
}

impl Actor<'_> {
    /// Until the deadline, or a signal (`crate::interrupt`): a task stops
    /// at its next operation then.
    fn running(&self) -> bool {
        std::time::Instant::now() < self.shared.deadline && crate::interrupt::interrupted().is_none()
    }

    /// Sleeps `micros` clock microseconds, or until the deadline; false when
    /// the deadline came first.
    async fn sleep(&self, micros: i64) -> bool {
        let until = std::time::Instant::now() + self.clock.real(micros);
        if until >= self.shared.deadline {
            tokio::time::sleep_until(self.shared.deadline.into()).await;
            return false;
        }
        tokio::time::sleep_until(until.into()).await;
        true
    }

    /// Runs `call` (built from this task's `now`) and records it as `op`.
    async fn record(&mut self, make: impl FnOnce(Instant) -> (Op, Call)) -> Res {
        let recorder = self.shared.recorder;
        let start = recorder.seq.fetch_add(1, Ordering::SeqCst);
        let (op, call) = make(self.clock.now());
        let res = res_of(self.engine.call(call).await);
        let end = recorder.seq.fetch_add(1, Ordering::SeqCst);
        let entry = Entry { task: self.task, start, end, op, res: res.clone() };
        recorder.entries.lock().unwrap_or_else(|e| e.into_inner()).push(entry);
        res
    }

    /// Records a step that runs no statement (a worker's death).
    fn note(&self, op: Op) {
        let recorder = self.shared.recorder;
        let start = recorder.seq.fetch_add(1, Ordering::SeqCst);
        let entry = Entry { task: self.task, start, end: start, op, res: Res::Nothing };
        recorder.entries.lock().unwrap_or_else(|e| e.into_inner()).push(entry);
    }

    /// A worker: claims a random job; runs it for up to 40 s beating every
    /// grace/3 (spec "heartbeat"); then completes it, fails it, dies or
    /// comes back as a zombie. At the deadline a live attempt completes.
    async fn work(&mut self) {
        let Task::Worker(me) = self.task else { return };
        let jobs = u64::from(self.shared.settings.jobs);
        let mut count = 0u64;
        let can_fail = self.shared.dialect.profile.has(Feature::WorkerFail);
        while self.running() {
            let id = job_id(u32::try_from(self.rng.below(jobs)).unwrap_or(0));
            count += 1;
            let token = format!("w{me}.{count}");
            let claimed = self
                .record(|now| {
                    let op = Op::Claim { job: id.clone(), token: token.clone(), now };
                    (
                        op,
                        Call::Claim { id: id.clone(), token: token.clone(), claim_timeout: TIMEOUT, now, retake: None },
                    )
                })
                .await;
            if claimed != Res::Changed(1) {
                let idle = self.rng.micros_upto(IDLE);
                self.sleep(idle).await;
                continue;
            }
            let fate = match self.rng.below(100) {
                0..55 => Fate::Complete,
                55..65 if can_fail => Fate::Fail,
                55..90 => Fate::Die,
                _ => Fate::Zombie,
            };
            self.attempt(&id, &token, fate).await;
        }
    }

    async fn attempt(&mut self, id: &str, token: &str, fate: Fate) {
        let interval = GRACE * 1_000_000 / 3;
        let mut left = self.rng.micros_upto(40);
        let mut fenced = false;
        while left > 0 && !fenced {
            let step = left.min(interval);
            left -= step;
            if !self.sleep(step).await {
                break;
            }
            if left > 0 || fate == Fate::Complete || fate == Fate::Fail {
                fenced = self.beat(id, token).await == Res::Changed(0);
            }
        }
        match fate {
            Fate::Complete => {
                self.complete(id, token).await;
            }
            Fate::Fail => self.fail(id, token).await,
            Fate::Die => self.note(Op::Die { job: id.to_owned(), token: token.to_owned() }),
            Fate::Zombie => {
                self.note(Op::Die { job: id.to_owned(), token: token.to_owned() });
                let poll = self.shared.settings.poll;
                let pause = rules::claim_window(TIMEOUT) * 1_000_000 + self.rng.micros_upto(2 * poll);
                if self.sleep(pause).await {
                    self.beat(id, token).await;
                    self.complete(id, token).await;
                }
            }
        }
    }

    async fn beat(&mut self, id: &str, token: &str) -> Res {
        let (id, token) = (id.to_owned(), token.to_owned());
        self.record(|now| (Op::Beat { job: id.clone(), token: token.clone(), now }, Call::Heartbeat { id, token, now }))
            .await
    }

    async fn complete(&mut self, id: &str, token: &str) -> Res {
        let (id, token) = (id.to_owned(), token.to_owned());
        self.record(|now| {
            (Op::Complete { job: id.clone(), token: token.clone(), now }, Call::Complete { id, token, now })
        })
        .await
    }

    /// The worker's failure path: `read_attempt`, then `fail_retry` with
    /// the class's backoff or `fail_final` (spec "complete / fail").
    async fn fail(&mut self, id: &str, token: &str) {
        let read = self.engine.call(Call::ReadAttempt { id: id.to_owned(), token: token.to_owned() }).await;
        let Ok(Reply::Attempt(Some((attempts, max_retries)))) = read else { return };
        let (_, class) = class_of(id);
        let (id, token) = (id.to_owned(), token.to_owned());
        let retry = attempts <= max_retries;
        let delay = Duration::from_secs(class.backoff(attempts));
        self.record(|now| {
            let op = Op::Fail { job: id.clone(), token: token.clone(), retry, now };
            let call = if retry {
                Call::FailRetry { id, token, attempts, now, run_at: now + delay }
            } else {
                Call::FailFinal { id, token, attempts, now }
            };
            (op, call)
        })
        .await;
    }

    /// A reaper: scans, pauses up to `apply_delay`, applies one guarded
    /// UPDATE per candidate with `cutoff = now - window` (spec "reap"),
    /// sleeps a jittered poll, again.
    async fn reap(&mut self) {
        let settings = self.shared.settings;
        while self.running() {
            let mut scanned_at = None;
            let res = self
                .record(|now| {
                    scanned_at = Some(now);
                    (Op::Scan { now }, Call::ReapScan { now, queues: None })
                })
                .await;
            let (Some(now), Res::Scanned(rows)) = (scanned_at, res) else {
                self.sleep(settings.poll * 1_000_000).await;
                continue;
            };
            if !rows.is_empty() && settings.apply_delay > 0 {
                let pause = self.rng.micros_upto(settings.apply_delay);
                self.sleep(pause).await;
            }
            for row in rows {
                let (op, call) = reap_of(&row, now);
                self.record(|_| (op, call)).await;
            }
            let poll = settings.poll * 1_000_000;
            let jitter = self.rng.micros_upto(settings.poll / 2);
            self.sleep(poll - jitter).await;
        }
    }
}
