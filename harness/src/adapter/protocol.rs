//! The messages of the adapter protocol, version 1
//! (docs/adapter-protocol.md), as strict serde types.
//!
//! A request line is a [`Request`]: `seq` and an [`Op`] tagged by `op`. A
//! reply line is a [`Reply`]: `seq` and a [`Body`] tagged by `reply`; an
//! `ok` body carries the operation's `result` as JSON, decoded per
//! operation with [`OpResult::decode`]. Every struct refuses unknown
//! fields, so a misspelt field is an error that names it.
//!
//! Instants are RFC 3339 text in UTC with exactly six fractional digits
//! ([`instant`]); durations are whole seconds (integers).

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, DeserializeOwned, Deserializer};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::feature::Feature;
use crate::outcome::{
    ClaimResult, FailureEvent, JobOutcome, LastError, LeaseOutcome, Outcome, Status, StepResult, WorkerResult,
};
use crate::policy::{Field, Policy, PolicyError};
use crate::scenario::Schema;
use crate::time::{Duration, Instant};

/// The protocol versions this reapcheck speaks.
pub const VERSIONS: &[u32] = &[1];

/// The longest line either side may write, in bytes (16 MiB): a setup or
/// a `read` of a scenario at the row limits (10,000 jobs and 10,000
/// leases, docs/scenario-format.md) with ids of ordinary length is about
/// 3 MB. It was 1 MiB, which a scenario of about 3,700 rows passed.
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// One request line: its sequence number and operation.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    /// From 1, increasing by one per request of a process.
    pub seq: u64,
    /// The operation and its fields.
    pub op: Op,
}

/// An operation, tagged by `op` in the request.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    /// The first request of every process.
    Handshake(Handshake),
    /// Creates the queue's tables in a namespace and writes the rows.
    Setup(Setup),
    /// Sets the queue's clocks.
    Clock(ClockArgs),
    /// The queue's worker takes a job.
    Claim(AttemptArgs),
    /// An attempt beats.
    Heartbeat(AttemptArgs),
    /// An attempt finishes.
    Complete(AttemptArgs),
    /// An attempt's job raises.
    Fail(AttemptArgs),
    /// One full pass of the reaper.
    Reap(ReapArgs),
    /// The reaper's read only, remembered under a name.
    Scan(ScanArgs),
    /// The writes a scan decided.
    Apply(ApplyArgs),
    /// The app-wide grace changes.
    Set(SetArgs),
    /// The state, in the contract's vocabulary.
    Read(Empty),
    /// Closes the scenario's connections and drops what the adapter made.
    Teardown(Empty),
}

impl Op {
    /// The operation's name, its `op` tag.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Handshake(_) => "handshake",
            Op::Setup(_) => "setup",
            Op::Clock(_) => "clock",
            Op::Claim(_) => "claim",
            Op::Heartbeat(_) => "heartbeat",
            Op::Complete(_) => "complete",
            Op::Fail(_) => "fail",
            Op::Reap(_) => "reap",
            Op::Scan(_) => "scan",
            Op::Apply(_) => "apply",
            Op::Set(_) => "set",
            Op::Read(_) => "read",
            Op::Teardown(_) => "teardown",
        }
    }
}

/// An object with no fields (`{}`), refusing any.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Empty {}

/// `handshake`: the versions reapcheck offers and its own version.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Handshake {
    /// The protocol versions reapcheck speaks ([`VERSIONS`]).
    pub protocol_versions: Vec<u32>,
    /// reapcheck's version, such as `0.1.0`.
    pub reapcheck: String,
}

/// `setup`: the scenario's namespace, clock, classes and rows.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Setup {
    /// The scenario's name, such as `grace/floor` (for logs).
    pub scenario: String,
    /// The schema, database or SQLite file the adapter creates and uses.
    pub namespace: String,
    /// The database server; `null` for SQLite.
    pub database: Option<Database>,
    /// The starting clock.
    #[serde(with = "instant")]
    pub now: Instant,
    /// The application's IANA time zone (`UTC` by default).
    pub app_time_zone: String,
    /// A time zone to set on every connection, or `null`.
    pub session_time_zone: Option<String>,
    /// Which `jobs` table.
    pub schema: Schema,
    /// App-wide settings.
    pub settings: SetupSettings,
    /// Job classes by name.
    pub classes: BTreeMap<String, SetupClass>,
    /// The rows of `jobs`, one entry per row.
    pub jobs: Vec<SetupJob>,
    /// The rows of `job_leases`.
    pub leases: Vec<SetupLease>,
}

/// The database an adapter connects to.
#[derive(Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Database {
    /// The target's name, such as `postgres`.
    pub target: String,
    /// Its URL; may hold a password, so [`fmt::Debug`] hides it.
    pub url: String,
}

impl fmt::Debug for Database {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Database").field("target", &self.target).field("url", &"<hidden>").finish()
    }
}

/// App-wide settings at setup.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SetupSettings {
    /// Seconds of silence after a heartbeat before a job counts as dead.
    pub heartbeat_grace: i64,
}

/// A job class, every field given (the scenario's defaults filled in).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SetupClass {
    /// Seconds an attempt may run.
    pub timeout: i64,
    /// Whether a reaped job may simply run again.
    pub idempotent: bool,
    /// The class's own grace in seconds; `null` uses the app setting.
    pub heartbeat_grace: Option<i64>,
    /// Retries allowed after the first run.
    pub max_retries: i64,
    /// Backoff base, seconds.
    pub base_delay: i64,
    /// Backoff cap, seconds.
    pub max_delay: i64,
    /// At most one attempt of the class runs at once.
    pub exclusive: bool,
    /// The lease key shared by the class's jobs, or `null`.
    pub concurrency_key: Option<String>,
    /// False when the app cannot load the class.
    pub loadable: bool,
}

/// A scenario's class as `setup` sends it: the same fields, one for one.
impl From<&crate::scenario::Class> for SetupClass {
    fn from(c: &crate::scenario::Class) -> SetupClass {
        SetupClass {
            timeout: c.timeout,
            idempotent: c.idempotent,
            heartbeat_grace: c.heartbeat_grace,
            max_retries: c.max_retries,
            base_delay: c.base_delay,
            max_delay: c.max_delay,
            exclusive: c.exclusive,
            concurrency_key: c.concurrency_key.clone(),
            loadable: c.loadable,
        }
    }
}

/// A `setup` class back as a scenario's class (the reference adapter).
impl From<&SetupClass> for crate::scenario::Class {
    fn from(c: &SetupClass) -> crate::scenario::Class {
        crate::scenario::Class {
            timeout: c.timeout,
            idempotent: c.idempotent,
            heartbeat_grace: c.heartbeat_grace,
            max_retries: c.max_retries,
            base_delay: c.base_delay,
            max_delay: c.max_delay,
            exclusive: c.exclusive,
            concurrency_key: c.concurrency_key.clone(),
            loadable: c.loadable,
        }
    }
}

/// A row of `jobs` at setup, as the contract's columns.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SetupJob {
    /// The job's id.
    pub id: String,
    /// Its class (a key of `classes`).
    pub class: String,
    /// Its queue.
    pub queue: String,
    /// Its status.
    pub status: Status,
    /// Claims so far.
    pub attempts: i64,
    /// Retries allowed.
    pub max_retries: i64,
    /// Seconds the live attempt may run, or `null`.
    pub claim_timeout: Option<i64>,
    /// The label of the attempt a processing row was claimed by, or `null`.
    pub claim_token: Option<String>,
    /// The job's own lease key, or `null`.
    pub concurrency_key: Option<String>,
    /// The last heartbeat, or `null`.
    #[serde(with = "instant::option")]
    pub heartbeat_at: Option<Instant>,
    /// When a pending job is due.
    #[serde(with = "instant")]
    pub run_at: Instant,
    /// The claim time.
    #[serde(with = "instant")]
    pub updated_at: Instant,
}

/// A row of `job_leases` at setup.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SetupLease {
    /// The lease name, such as `job:Report`.
    pub name: String,
    /// The attempt label that holds it.
    pub owner: String,
    /// When it lapses.
    #[serde(with = "instant")]
    pub expires_at: Instant,
}

/// `clock`: the instant the queue's clocks move to.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ClockArgs {
    /// The new clock.
    #[serde(with = "instant")]
    pub now: Instant,
}

/// `claim`, `heartbeat`, `complete`, `fail`: the job and the attempt label.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AttemptArgs {
    /// The job's id.
    pub job: String,
    /// The attempt's label, such as `a/2`.
    pub token: String,
}

/// `reap`: the poll timeout and the queues.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ReapArgs {
    /// The reaper's poll timeout in seconds, or `null` (300).
    pub timeout: Option<i64>,
    /// Only these queues, or `null` for all.
    pub queues: Option<Vec<String>>,
}

/// `scan`: the reaper's name, poll timeout and queues.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ScanArgs {
    /// The name the candidates are remembered under (the scenario's, `r`
    /// by default; reapcheck always sends it).
    pub reaper: String,
    /// The reaper's poll timeout in seconds, or `null` (300).
    pub timeout: Option<i64>,
    /// Only these queues, or `null` for all.
    pub queues: Option<Vec<String>>,
}

/// `apply`: which scan's writes.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ApplyArgs {
    /// The reaper named by an earlier `scan`.
    pub reaper: String,
}

/// `set`: the new app-wide grace.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SetArgs {
    /// Seconds.
    pub heartbeat_grace: i64,
}

/// One reply line: the request's `seq` and the answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Reply {
    /// The `seq` of the request answered.
    pub seq: u64,
    /// `ok` with a result, or `error`.
    pub body: Body,
}

/// The answer, tagged by `reply`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(tag = "reply", rename_all = "snake_case")]
pub enum Body {
    /// The operation's result, decoded per operation by [`OpResult::decode`].
    Ok(OkBody),
    /// The operation did not happen, or may have.
    Error(ErrorBody),
}

/// An `ok` reply's fields.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct OkBody {
    /// The operation's result object.
    pub result: Value,
}

/// An `error` reply's fields.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorBody {
    /// What kind of no.
    pub kind: ErrorKind,
    /// What happened, in words (required).
    pub message: String,
    /// The queue's traceback (text), only with `exception`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceback: Option<String>,
}

/// The kinds of error reply (docs/adapter-protocol.md, "Errors").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The queue cannot do this operation at all: the scenario is skipped.
    Unsupported,
    /// The queue's own guard said no; nothing was written.
    Refused,
    /// The adapter cannot tell whether the write happened.
    Indefinite,
    /// The queue raised.
    Exception,
}

impl ErrorKind {
    /// Its name in a reply.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::Refused => "refused",
            ErrorKind::Indefinite => "indefinite",
            ErrorKind::Exception => "exception",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Reply {
    /// An `ok` reply with `result` (any serializable result type).
    pub fn ok<T: Serialize>(seq: u64, result: &T) -> Reply {
        let result = serde_json::to_value(result).unwrap_or_else(|_| Value::Object(Map::new()));
        Reply { seq, body: Body::Ok(OkBody { result }) }
    }

    /// An `error` reply of `kind` with `message` and no traceback.
    pub fn error(seq: u64, kind: ErrorKind, message: impl Into<String>) -> Reply {
        Reply { seq, body: Body::Error(ErrorBody { kind, message: message.into(), traceback: None }) }
    }

    /// The reply as one line of JSON, without the newline.
    pub fn to_line(&self) -> String {
        line_with_seq(self.seq, &self.body)
    }

    /// Reads one reply line strictly: unknown fields, a missing field, a
    /// wrong tag, or a traceback outside `exception` is an error naming it.
    pub fn from_line(line: &str) -> Result<Reply, serde_json::Error> {
        serde_json::from_str(line)
    }
}

impl Request {
    /// The request as one line of JSON, without the newline.
    pub fn to_line(&self) -> String {
        line_with_seq(self.seq, &self.op)
    }

    /// The line of request `seq` of `op`, as [`Request::to_line`] writes
    /// it, without an owned request (a `setup` is not copied to be sent).
    pub fn line_of(seq: u64, op: &Op) -> String {
        line_with_seq(seq, op)
    }

    /// Reads one request line strictly.
    ///
    /// A line whose keys begin `seq`, `op` (as reapcheck writes them) is
    /// read straight into its operation; any other line, and any line the
    /// straight read refuses, is read through a `serde_json::Value`, whose
    /// errors are the ones reported. Reading every line that second way was
    /// a sixth of the reference adapter's instructions (callgrind, SQLite
    /// corpus).
    pub fn from_line(line: &str) -> Result<Request, serde_json::Error> {
        if let Ok(Some(request)) = serde_json::from_str::<InOrder>(line).map(|r| r.0) {
            return Ok(request);
        }
        serde_json::from_str(line)
    }
}

/// The line of `inner` (an internally tagged enum, whose JSON is an object
/// that begins with its tag) with `seq` put first: `{"seq":4,"op":...}`,
/// the rest as serde writes it, in the fields' declared order. Written
/// straight to text: going through a `serde_json::Value` as
/// [`serialize_with_seq`] does was most of the cost of sending a request
/// (callgrind, SQLite corpus).
fn line_with_seq<T: Serialize>(seq: u64, inner: &T) -> String {
    let body = serde_json::to_string(inner).expect("a protocol message always serializes");
    let fields = body.strip_prefix('{').expect("an internally tagged message serializes to an object");
    let comma = if fields == "}" { "" } else { "," };
    format!("{{\"seq\":{seq}{comma}{fields}")
}

/// Writes `seq`, then the tag and fields of `inner` (an internally tagged
/// enum, which serializes to an object), so a line reads `{"seq":4,"op":...}`.
fn serialize_with_seq<S: Serializer, T: Serialize>(s: S, seq: u64, tag: &str, inner: &T) -> Result<S::Ok, S::Error> {
    let Value::Object(fields) = serde_json::to_value(inner).map_err(serde::ser::Error::custom)? else {
        return Err(serde::ser::Error::custom("an internally tagged message serializes to an object"));
    };
    let mut map = s.serialize_map(Some(fields.len() + 1))?;
    map.serialize_entry("seq", &seq)?;
    if let Some(t) = fields.get(tag) {
        map.serialize_entry(tag, t)?;
    }
    for (k, v) in fields.iter().filter(|(k, _)| k.as_str() != tag) {
        map.serialize_entry(k, v)?;
    }
    map.end()
}

/// A request read in one pass when its first keys are `seq` and `op`;
/// `None` (or an error) for any other line, which [`Request::from_line`]
/// then reads the general way.
struct InOrder(Option<Request>);

impl<'de> Deserialize<'de> for InOrder {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(InOrderVisitor)
    }
}

struct InOrderVisitor;

impl<'de> de::Visitor<'de> for InOrderVisitor {
    type Value = InOrder;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a request object whose first keys are `seq` and `op`")
    }

    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<InOrder, A::Error> {
        if map.next_key::<&str>()? != Some("seq") {
            return Ok(InOrder(None));
        }
        let seq: u64 = map.next_value()?;
        if map.next_key::<&str>()? != Some("op") {
            return Ok(InOrder(None));
        }
        let name: &str = map.next_value()?;
        let rest = de::value::MapAccessDeserializer::new(map);
        let op = match name {
            "handshake" => Op::Handshake(Handshake::deserialize(rest)?),
            "setup" => Op::Setup(Setup::deserialize(rest)?),
            "clock" => Op::Clock(ClockArgs::deserialize(rest)?),
            "claim" => Op::Claim(AttemptArgs::deserialize(rest)?),
            "heartbeat" => Op::Heartbeat(AttemptArgs::deserialize(rest)?),
            "complete" => Op::Complete(AttemptArgs::deserialize(rest)?),
            "fail" => Op::Fail(AttemptArgs::deserialize(rest)?),
            "reap" => Op::Reap(ReapArgs::deserialize(rest)?),
            "scan" => Op::Scan(ScanArgs::deserialize(rest)?),
            "apply" => Op::Apply(ApplyArgs::deserialize(rest)?),
            "set" => Op::Set(SetArgs::deserialize(rest)?),
            "read" => Op::Read(Empty::deserialize(rest)?),
            "teardown" => Op::Teardown(Empty::deserialize(rest)?),
            _ => return Ok(InOrder(None)),
        };
        Ok(InOrder(Some(Request { seq, op })))
    }
}

/// Splits `seq` off a message object; the rest is for the tagged enum.
fn take_seq<E: de::Error>(mut fields: Map<String, Value>) -> Result<(u64, Value), E> {
    let seq = match fields.remove("seq") {
        None => return Err(E::missing_field("seq")),
        Some(v) => v.as_u64().ok_or_else(|| E::custom(format!("`seq` must be a non-negative integer, not {v}")))?,
    };
    Ok((seq, Value::Object(fields)))
}

impl Serialize for Request {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        serialize_with_seq(s, self.seq, "op", &self.op)
    }
}

impl<'de> Deserialize<'de> for Request {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let (seq, rest) = take_seq(Map::deserialize(d)?)?;
        let op = Op::deserialize(rest).map_err(de::Error::custom)?;
        Ok(Request { seq, op })
    }
}

impl Serialize for Reply {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        serialize_with_seq(s, self.seq, "reply", &self.body)
    }
}

impl<'de> Deserialize<'de> for Reply {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let (seq, rest) = take_seq(Map::deserialize(d)?)?;
        let body = Body::deserialize(rest).map_err(de::Error::custom)?;
        if let Body::Error(ErrorBody { kind, traceback: Some(_), .. }) = &body
            && *kind != ErrorKind::Exception
        {
            return Err(de::Error::custom(format!(
                "`traceback` is allowed only with kind `exception`, not `{kind}`: put it in `message` or drop it"
            )));
        }
        Ok(Reply { seq, body })
    }
}

/// `handshake`'s result: the version chosen, who the adapter is, what it can
/// do, and where its queue differs from the reference on purpose.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HandshakeResult {
    /// One of the versions reapcheck offered.
    pub protocol_version: u32,
    /// The adapter program.
    pub adapter: AdapterInfo,
    /// The queue it drives.
    pub queue: QueueInfo,
    /// What it can do.
    pub capabilities: Capabilities,
    /// Policy knobs (`{"<knob>": {"value", "reason"}}`, as `[policy]` of
    /// `dialect.toml`), or absent for the reference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<Value>,
    /// State knobs (`absent`, `finished_rows`, as `[state]` of
    /// `dialect.toml`), or absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<Value>,
}

impl HandshakeResult {
    /// The policy the adapter declares, read as `dialect.toml`'s knobs are.
    pub fn policy(&self) -> Result<Policy, PolicyError> {
        Policy::from_json(self.policy.as_ref(), self.state.as_ref())
    }
}

/// The adapter program's name, version and language.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AdapterInfo {
    /// Such as `saq-adapter`.
    pub name: String,
    /// Such as `1.0.0`.
    pub version: String,
    /// Such as `python 3.11`.
    pub language: String,
}

/// The queue's name and version.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct QueueInfo {
    /// Such as `saq`.
    pub name: String,
    /// Such as `0.22.5`.
    pub version: String,
}

/// What an adapter can do.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Capabilities {
    /// The optional parts its queue has (`leases`, `legacy`, `worker_fail`,
    /// `hooks`).
    #[serde(serialize_with = "features")]
    pub features: Vec<Feature>,
    /// Whether `scan` and `apply` may be separate requests.
    pub split_reap: bool,
    /// Which clocks `clock` sets.
    pub clocks: Vec<Clock>,
    /// How finely the queue counts time: `1us` (the default), `1ms` or
    /// `1s`, as `time_resolution` in a dialect profile
    /// (docs/dialect-profile.md). The model is run at it, every instant it
    /// binds truncated toward the past.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_resolution: Option<crate::resolution::Resolution>,
    /// Whether reapcheck may send the `read` that follows a `clock` or a
    /// step right behind it, before that request's reply (default false:
    /// every request waits for the reply before it;
    /// docs/adapter-protocol.md, "Pipelined reads").
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pipelined: bool,
    /// Whether reapcheck may send every request of a scenario whose
    /// content it knows before the replies to the ones before it (default
    /// false; implies `pipelined`; docs/adapter-protocol.md, "Streamed
    /// requests").
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub streamed: bool,
    /// Whether the adapter sets its queue's time zone from each `setup`'s
    /// `app_time_zone` itself (default false: reapcheck starts the process
    /// with `TZ` set to it, and a new process when the next scenario needs
    /// another zone; docs/adapter-protocol.md, "Transport").
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sets_app_time_zone: bool,
}

fn features<S: Serializer>(features: &[Feature], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(features.iter().map(|f| f.as_str()))
}

/// A clock an adapter sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Clock {
    /// The queue's application clock.
    App,
    /// The database session's `now()`.
    Database,
}

/// `clock`'s result: what each clock reads now.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ClockResult {
    /// The application clock.
    #[serde(with = "instant")]
    pub app: Instant,
    /// The database session's clock, `null` when the adapter does not set it.
    #[serde(with = "instant::option")]
    pub database: Option<Instant>,
}

/// `claim`'s result.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimReply {
    /// `claimed`, `deferred` or `not_claimable`.
    pub result: ClaimResult,
}

/// `heartbeat`'s result.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HeartbeatReply {
    /// `ok` or `fenced`.
    pub result: WorkerResult,
}

/// `complete`'s and `fail`'s result.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FinishReply {
    /// `ok` or `fenced`.
    pub result: WorkerResult,
    /// True when the attempt's lease had passed to another owner.
    pub lease_lost: bool,
}

/// `reap`'s and `apply`'s result.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChangedReply {
    /// The jobs reclaimed.
    pub changed: u64,
}

/// `scan`'s result.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ScanReply {
    /// The candidates' ids, in order of id.
    pub candidates: Vec<String>,
}

/// `read`'s result: the state, in the contract's vocabulary, instants absolute.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ReadResult {
    /// Every job the queue holds.
    pub jobs: Vec<ReadJob>,
    /// Every lease row.
    pub leases: Vec<ReadLease>,
    /// The failure hooks fired so far, in order.
    pub hooks: Vec<FailureEvent>,
}

/// A job as `read` reports it. A field the policy declares absent may be
/// `null` even where the contract has a value.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ReadJob {
    /// The job's id.
    pub id: String,
    /// Its status.
    pub status: Status,
    /// Claims so far (`null` only when declared absent).
    pub attempts: Option<i64>,
    /// The live attempt's label, else `null`.
    pub claim_token: Option<String>,
    /// The last heartbeat.
    #[serde(with = "instant::option")]
    pub heartbeat_at: Option<Instant>,
    /// When it is due (`null` only when declared absent).
    #[serde(with = "instant::option")]
    pub run_at: Option<Instant>,
    /// The last write (`null` only when declared absent).
    #[serde(with = "instant::option")]
    pub updated_at: Option<Instant>,
    /// When it failed for good.
    #[serde(with = "instant::option")]
    pub failed_at: Option<Instant>,
    /// When it completed.
    #[serde(with = "instant::option")]
    pub completed_at: Option<Instant>,
    /// `timeout`, `failed` or `null`.
    pub last_error: Option<LastError>,
    /// The queue's own row, shown in traces and never compared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<Value>,
}

/// A lease as `read` reports it.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ReadLease {
    /// The lease name.
    pub name: String,
    /// The owning attempt label.
    pub owner: String,
    /// When it lapses.
    #[serde(with = "instant")]
    pub expires_at: Instant,
}

impl ReadResult {
    /// The outcome document of this state at the final clock `now`: every
    /// instant relative to it, as the driver's own read-back does. `steps`
    /// are the step results so far; `on_failure` is the `hooks` list.
    ///
    /// A `null` where the outcome has no null (`attempts`, `run_at`,
    /// `updated_at`) is an error unless `policy` declares the field absent;
    /// an absent field is not compared, so it reads as zero. Two jobs or
    /// leases with one id are an error.
    pub fn to_outcome(&self, now: Instant, policy: &Policy, steps: Vec<Option<StepResult>>) -> Result<Outcome, String> {
        let rel = |i: Instant| i.since(now);
        let mut outcome = Outcome { steps, on_failure: self.hooks.clone(), ..Outcome::default() };
        for job in &self.jobs {
            let required = |field: Field, value: Option<Instant>| -> Result<Duration, String> {
                match value {
                    Some(i) => Ok(rel(i)),
                    None if policy.absent.contains(&field) => Ok(Duration::ZERO),
                    None => Err(null_not_absent(&job.id, field)),
                }
            };
            let attempts = match job.attempts {
                Some(n) => n,
                None if policy.absent.contains(&Field::Attempts) => 0,
                None => return Err(null_not_absent(&job.id, Field::Attempts)),
            };
            let row = JobOutcome {
                status: job.status,
                attempts,
                claim_token: job.claim_token.clone(),
                heartbeat_at: job.heartbeat_at.map(rel),
                run_at: required(Field::RunAt, job.run_at)?,
                updated_at: required(Field::UpdatedAt, job.updated_at)?,
                failed_at: job.failed_at.map(rel),
                completed_at: job.completed_at.map(rel),
                last_error: job.last_error,
            };
            if outcome.jobs.insert(job.id.clone(), row).is_some() {
                return Err(format!("`read` lists job `{}` twice: list each job once", job.id));
            }
        }
        for lease in &self.leases {
            let row = LeaseOutcome { owner: lease.owner.clone(), expires_at: rel(lease.expires_at) };
            if outcome.leases.insert(lease.name.clone(), row).is_some() {
                return Err(format!("`read` lists lease `{}` twice: list each lease once", lease.name));
            }
        }
        Ok(outcome)
    }
}

fn null_not_absent(job: &str, field: Field) -> String {
    format!(
        "`{field}` of job `{job}` is null, but the policy does not declare it absent: read it, or declare it in `state.absent`"
    )
}

/// An `ok` reply's result, decoded for the operation it answers.
#[derive(Clone, Debug, PartialEq)]
#[allow(missing_docs)]
pub enum OpResult {
    Handshake(HandshakeResult),
    Setup,
    Clock(ClockResult),
    Claim(ClaimReply),
    Heartbeat(HeartbeatReply),
    Complete(FinishReply),
    Fail(FinishReply),
    Reap(ChangedReply),
    Scan(ScanReply),
    Apply(ChangedReply),
    Set,
    Read(ReadResult),
    Teardown,
}

impl OpResult {
    /// Decodes `result` as the result of `op`; the error names the field.
    pub fn decode(op: &Op, result: Value) -> Result<OpResult, serde_json::Error> {
        fn d<T: DeserializeOwned>(v: Value) -> Result<T, serde_json::Error> {
            serde_json::from_value(v)
        }
        Ok(match op {
            Op::Handshake(_) => OpResult::Handshake(d(result)?),
            Op::Setup(_) => d::<Empty>(result).map(|_| OpResult::Setup)?,
            Op::Clock(_) => OpResult::Clock(d(result)?),
            Op::Claim(_) => OpResult::Claim(d(result)?),
            Op::Heartbeat(_) => OpResult::Heartbeat(d(result)?),
            Op::Complete(_) => OpResult::Complete(d(result)?),
            Op::Fail(_) => OpResult::Fail(d(result)?),
            Op::Reap(_) => OpResult::Reap(d(result)?),
            Op::Scan(_) => OpResult::Scan(d(result)?),
            Op::Apply(_) => OpResult::Apply(d(result)?),
            Op::Set(_) => d::<Empty>(result).map(|_| OpResult::Set)?,
            Op::Read(_) => OpResult::Read(d(result)?),
            Op::Teardown(_) => d::<Empty>(result).map(|_| OpResult::Teardown)?,
        })
    }
}

impl OpResult {
    /// Reads `line` in one pass as an `ok` reply to request `seq` of `op`
    /// that holds exactly `seq`, `reply` and `result`, its result straight
    /// into the operation's type; `None` for any other line (an error
    /// reply, another `seq`, a field too many or missing, a duplicate, a
    /// value of the wrong type), which [`Reply::from_line`] and
    /// [`OpResult::decode`] then read and, where it is wrong, say why.
    /// Whatever this reads, they read alike; it only skips building the
    /// reply as a JSON value, then its result as another, first (parsing
    /// was the most of what reapcheck did with an adapter's `read`).
    pub fn from_ok_line(op: &Op, seq: u64, line: &str) -> Option<OpResult> {
        #[derive(Deserialize)]
        #[serde(rename_all = "snake_case")]
        enum OkTag {
            Ok,
        }
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct OkLine<T> {
            seq: u64,
            #[allow(dead_code)]
            reply: OkTag,
            result: T,
        }
        fn read<T: DeserializeOwned>(seq: u64, line: &str) -> Option<T> {
            let ok: OkLine<T> = serde_json::from_str(line).ok()?;
            (ok.seq == seq).then_some(ok.result)
        }
        Some(match op {
            Op::Handshake(_) => OpResult::Handshake(read(seq, line)?),
            Op::Setup(_) => read::<Empty>(seq, line).map(|_| OpResult::Setup)?,
            Op::Clock(_) => OpResult::Clock(read(seq, line)?),
            Op::Claim(_) => OpResult::Claim(read(seq, line)?),
            Op::Heartbeat(_) => OpResult::Heartbeat(read(seq, line)?),
            Op::Complete(_) => OpResult::Complete(read(seq, line)?),
            Op::Fail(_) => OpResult::Fail(read(seq, line)?),
            Op::Reap(_) => OpResult::Reap(read(seq, line)?),
            Op::Scan(_) => OpResult::Scan(read(seq, line)?),
            Op::Apply(_) => OpResult::Apply(read(seq, line)?),
            Op::Set(_) => read::<Empty>(seq, line).map(|_| OpResult::Set)?,
            Op::Read(_) => OpResult::Read(read(seq, line)?),
            Op::Teardown(_) => read::<Empty>(seq, line).map(|_| OpResult::Teardown)?,
        })
    }
}

/// An `ok` reply line to request `seq` with `result` (without the
/// newline), written in one pass: `{"seq":N,"reply":"ok","result":{...}}`,
/// the result's fields in their declared order. The same reply as
/// [`Reply::ok`] and [`Reply::to_line`], which build it as a JSON value
/// first (and write each object's keys sorted).
pub fn ok_line<T: Serialize>(seq: u64, result: &T) -> String {
    let mut line = format!("{{\"seq\":{seq},\"reply\":\"ok\",\"result\":").into_bytes();
    if serde_json::to_writer(&mut line, result).is_err() {
        line.extend_from_slice(b"{}");
    }
    line.push(b'}');
    String::from_utf8(line).expect("JSON is UTF-8")
}

/// Serde for instants as the protocol writes them: RFC 3339 in UTC with
/// exactly six fractional digits (`2026-01-15T12:00:00.000000Z`). Reading
/// refuses any other shape (an offset, fewer or more digits), and an
/// instant outside [`Instant::MIN`]..=[`Instant::MAX`].
pub mod instant {
    use serde::{Deserializer, Serializer};

    use crate::time::Instant;

    /// The protocol's text of `at`: what chrono's `to_rfc3339_opts(Micros,
    /// true)` writes, digit by digit for a four-digit year (every instant
    /// of the declared range), where chrono's formatter was a twentieth of
    /// the reference adapter's instructions (callgrind, SQLite corpus).
    pub fn format(at: Instant) -> String {
        use chrono::{Datelike, Timelike};
        let t = at.to_chrono().naive_utc();
        // Outside four-digit years, and in a leap second (nanoseconds past
        // 10^9), chrono's own text, which no instant of the range needs.
        if !(0..=9999).contains(&t.year()) || t.nanosecond() >= 1_000_000_000 {
            return at.to_chrono().to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
        }
        let mut b = *b"0000-00-00T00:00:00.000000Z";
        let mut put = |at: usize, width: usize, mut value: u32| {
            for i in (at..at + width).rev() {
                b[i] = b'0' + (value % 10) as u8;
                value /= 10;
            }
        };
        put(0, 4, t.year() as u32);
        put(5, 2, t.month());
        put(8, 2, t.day());
        put(11, 2, t.hour());
        put(14, 2, t.minute());
        put(17, 2, t.second());
        put(20, 6, t.nanosecond() / 1_000);
        String::from_utf8(b.to_vec()).expect("ASCII digits")
    }

    /// Reads the protocol's text of an instant; the error says what to write.
    pub fn parse(text: &str) -> Result<Instant, String> {
        let b = text.as_bytes();
        let digits = |r: std::ops::Range<usize>| b.get(r).is_some_and(|s| s.iter().all(u8::is_ascii_digit));
        let shaped = b.len() == 27
            && digits(0..4)
            && b[4] == b'-'
            && digits(5..7)
            && b[7] == b'-'
            && digits(8..10)
            && b[10] == b'T'
            && digits(11..13)
            && b[13] == b':'
            && digits(14..16)
            && b[16] == b':'
            && digits(17..19)
            && b[19] == b'.'
            && digits(20..26)
            && b[26] == b'Z';
        let wanted = "write RFC 3339 in UTC with six fractional digits, such as `2026-01-15T12:00:00.000000Z`";
        if !shaped {
            return Err(format!("instant `{text}` is not in the protocol's form: {wanted}"));
        }
        // Read field by field; only a text that is no such date-time (or a
        // leap second, which chrono reads) goes through chrono's parser.
        let field = |r: std::ops::Range<usize>| b[r].iter().fold(0u32, |n, d| n * 10 + u32::from(d - b'0'));
        let fast = chrono::NaiveDate::from_ymd_opt(field(0..4) as i32, field(5..7), field(8..10))
            .and_then(|date| date.and_hms_micro_opt(field(11..13), field(14..16), field(17..19), field(20..26)))
            .map(|t| Instant::from_chrono(t.and_utc()));
        let at = match fast {
            Some(at) => at,
            None => Instant::parse_rfc3339(text).map_err(|e| format!("instant `{text}`: {e}"))?,
        };
        if !at.in_range() {
            return Err(format!("instant `{text}` is outside {} to {}", Instant::MIN, Instant::MAX));
        }
        Ok(at)
    }

    /// Serializes an instant.
    pub fn serialize<S: Serializer>(at: &Instant, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format(*at))
    }

    /// Deserializes an instant.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Instant, D::Error> {
        d.deserialize_str(Text)
    }

    /// Reads an instant from a string, borrowed or not, without copying it.
    struct Text;

    impl serde::de::Visitor<'_> for Text {
        type Value = Instant;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an instant in RFC 3339, such as `2026-01-15T12:00:00.000000Z`")
        }

        fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Instant, E> {
            parse(text).map_err(E::custom)
        }
    }

    /// The same for an instant or `null`. The field is required: a missing
    /// key is an error, not `null`.
    pub mod option {
        use serde::{Deserialize, Deserializer, Serializer};

        use crate::time::Instant;

        /// Serializes an instant or `null`.
        pub fn serialize<S: Serializer>(at: &Option<Instant>, s: S) -> Result<S::Ok, S::Error> {
            match at {
                Some(at) => s.serialize_str(&super::format(*at)),
                None => s.serialize_none(),
            }
        }

        /// Deserializes an instant or `null`.
        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Instant>, D::Error> {
            struct Parsed(Instant);
            impl<'de> Deserialize<'de> for Parsed {
                fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Parsed, D::Error> {
                    super::deserialize(d).map(Parsed)
                }
            }
            Ok(Option::<Parsed>::deserialize(d)?.map(|p| p.0))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Instant {
        instant::parse(text).unwrap()
    }

    fn setup() -> Setup {
        Setup {
            scenario: "grace/floor".into(),
            namespace: "rc_1".into(),
            database: Some(Database { target: "postgres".into(), url: "postgres://u:secret@h/db".into() }),
            now: at("2026-01-15T12:00:00.000000Z"),
            app_time_zone: "UTC".into(),
            session_time_zone: None,
            schema: Schema::Standard,
            settings: SetupSettings { heartbeat_grace: 300 },
            classes: BTreeMap::from([(
                "Report".into(),
                SetupClass {
                    timeout: 300,
                    idempotent: true,
                    heartbeat_grace: None,
                    max_retries: 3,
                    base_delay: 2,
                    max_delay: 3600,
                    exclusive: false,
                    concurrency_key: None,
                    loadable: true,
                },
            )]),
            jobs: vec![SetupJob {
                id: "a".into(),
                class: "Report".into(),
                queue: "default".into(),
                status: Status::Processing,
                attempts: 1,
                max_retries: 3,
                claim_timeout: Some(300),
                claim_token: Some("a/1".into()),
                concurrency_key: None,
                heartbeat_at: None,
                run_at: at("2026-01-15T12:00:00.000000Z"),
                updated_at: at("2026-01-15T11:50:00.000001Z"),
            }],
            leases: vec![SetupLease {
                name: "job:Report".into(),
                owner: "a/1".into(),
                expires_at: at("2026-01-15T12:05:00.000000Z"),
            }],
        }
    }

    fn requests() -> Vec<Request> {
        let attempt = AttemptArgs { job: "a".into(), token: "a/2".into() };
        [
            Op::Handshake(Handshake { protocol_versions: vec![1], reapcheck: "0.1.0".into() }),
            Op::Setup(setup()),
            Op::Clock(ClockArgs { now: at("2026-01-15T12:10:00.000000Z") }),
            Op::Claim(attempt.clone()),
            Op::Heartbeat(attempt.clone()),
            Op::Complete(attempt.clone()),
            Op::Fail(attempt),
            Op::Reap(ReapArgs { timeout: Some(60), queues: None }),
            Op::Scan(ScanArgs { reaper: "r".into(), timeout: None, queues: Some(vec!["default".into()]) }),
            Op::Apply(ApplyArgs { reaper: "r".into() }),
            Op::Set(SetArgs { heartbeat_grace: 0 }),
            Op::Read(Empty {}),
            Op::Teardown(Empty {}),
        ]
        .into_iter()
        .enumerate()
        .map(|(i, op)| Request { seq: i as u64 + 1, op })
        .collect()
    }

    #[test]
    fn every_request_round_trips_with_seq_first() {
        for r in requests() {
            let line = r.to_line();
            assert!(line.starts_with(&format!("{{\"seq\":{},\"op\":\"{}\"", r.seq, r.op.name())), "{line}");
            assert_eq!(Request::from_line(&line).unwrap(), r, "{line}");
        }
    }

    #[test]
    fn instants_are_written_with_six_digits_and_read_only_so() {
        assert_eq!(instant::format(at("2026-01-15T12:00:00.000000Z")), "2026-01-15T12:00:00.000000Z");
        for bad in ["2026-01-15T12:00:00Z", "2026-01-15T12:00:00.000000+00:00", "2026-01-15T12:00:00.0000001Z"] {
            let e = instant::parse(bad).unwrap_err();
            assert!(e.contains("six fractional digits"), "{bad}: {e}");
        }
        assert!(instant::parse("2026-13-15T12:00:00.000000Z").is_err());
    }

    #[test]
    fn instants_are_written_and_read_as_chrono_writes_and_reads_them() {
        let chrono_text = |at: Instant| at.to_chrono().to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
        let mut micros = vec![Instant::MIN.unix_micros(), Instant::MAX.unix_micros(), 0, -1, 1, 951_782_400_000_000];
        // Every few days across the range, at odd microseconds.
        let mut m = Instant::MIN.unix_micros();
        while m < Instant::MAX.unix_micros() {
            micros.push(m);
            m += 86_400_000_000 * 3 + 3_723_000_017;
        }
        for m in micros {
            let at = Instant::from_unix_micros(m);
            let text = instant::format(at);
            assert_eq!(text, chrono_text(at), "{m}");
            assert_eq!(instant::parse(&text), Ok(at), "{text}");
        }
        // Read field by field or not, a text chrono reads as an instant is
        // the same instant (a leap second included), and one it refuses is
        // refused.
        for text in ["2016-12-31T23:59:60.500000Z", "2024-02-29T00:00:00.000000Z"] {
            let chrono = Instant::parse_rfc3339(text).expect("chrono reads it");
            assert_eq!(instant::parse(text), Ok(chrono), "{text}");
        }
        for text in ["2023-02-29T00:00:00.000000Z", "2026-01-15T24:00:00.000000Z", "2026-01-15T12:61:00.000000Z"] {
            assert!(instant::parse(text).is_err(), "{text}");
        }
        assert!(instant::parse("0999-12-31T23:59:59.999999Z").unwrap_err().contains("outside"));
    }

    #[test]
    fn a_request_in_reapcheck_s_key_order_is_read_in_one_pass_as_the_general_way_reads_it() {
        for r in requests() {
            let line = r.to_line();
            let general: Request = serde_json::from_str(&line).unwrap();
            let in_order = serde_json::from_str::<InOrder>(&line).unwrap().0;
            assert_eq!(in_order.as_ref(), Some(&general), "{line}");
            assert_eq!(general, r, "{line}");
        }
        // Keys in another order are left to the general way.
        let swapped = r#"{"op":"claim","seq":4,"job":"a","token":"a/2"}"#;
        assert!(serde_json::from_str::<InOrder>(swapped).map_or(true, |r| r.0.is_none()));
        let claim = Op::Claim(AttemptArgs { job: "a".into(), token: "a/2".into() });
        assert_eq!(Request::from_line(swapped).unwrap(), Request { seq: 4, op: claim });
    }

    #[test]
    fn the_database_url_is_not_in_debug_output() {
        assert!(!format!("{:?}", setup()).contains("secret"));
    }

    #[test]
    fn an_unknown_field_in_a_request_is_refused_by_name() {
        let e = Request::from_line(r#"{"seq":4,"op":"claim","job":"a","token":"a/2","label":"x"}"#).unwrap_err();
        assert!(e.to_string().contains("unknown field `label`"), "{e}");
        let e = Request::from_line(r#"{"seq":9,"op":"read","all":true}"#).unwrap_err();
        assert!(e.to_string().contains("unknown field `all`"), "{e}");
        let e = Request::from_line(r#"{"op":"read"}"#).unwrap_err();
        assert!(e.to_string().contains("missing field `seq`"), "{e}");
    }

    #[test]
    fn a_wrong_tag_is_refused_by_name() {
        let e = Request::from_line(r#"{"seq":1,"op":"sweep"}"#).unwrap_err();
        assert!(e.to_string().contains("unknown variant `sweep`"), "{e}");
        let e = Reply::from_line(r#"{"seq":1,"reply":"maybe","result":{}}"#).unwrap_err();
        assert!(e.to_string().contains("unknown variant `maybe`"), "{e}");
        let e = Reply::from_line(r#"{"seq":1,"reply":"error","kind":"oops","message":"m"}"#).unwrap_err();
        assert!(e.to_string().contains("unknown variant `oops`"), "{e}");
    }

    #[test]
    fn replies_round_trip_and_refuse_unknown_fields() {
        let ok = Reply::ok(3, &ClockResult { app: at("2026-01-15T12:10:00.000000Z"), database: None });
        assert_eq!(
            ok.to_line(),
            r#"{"seq":3,"reply":"ok","result":{"app":"2026-01-15T12:10:00.000000Z","database":null}}"#
        );
        assert_eq!(Reply::from_line(&ok.to_line()).unwrap(), ok);
        let err = Reply::error(7, ErrorKind::Refused, "job a is not held by a/1");
        assert_eq!(Reply::from_line(&err.to_line()).unwrap(), err);
        let e = Reply::from_line(r#"{"seq":3,"reply":"ok","result":{},"note":"x"}"#).unwrap_err();
        assert!(e.to_string().contains("unknown field `note`"), "{e}");
        let e = Reply::from_line(r#"{"seq":3,"reply":"error","kind":"refused"}"#).unwrap_err();
        assert!(e.to_string().contains("missing field `message`"), "{e}");
    }

    #[test]
    fn a_traceback_belongs_only_to_an_exception() {
        assert!(
            Reply::from_line(r#"{"seq":1,"reply":"error","kind":"exception","message":"m","traceback":"t"}"#).is_ok()
        );
        let e = Reply::from_line(r#"{"seq":1,"reply":"error","kind":"refused","message":"m","traceback":"t"}"#)
            .unwrap_err();
        assert!(e.to_string().contains("only with kind `exception`"), "{e}");
    }

    #[test]
    fn results_decode_per_operation_and_name_the_wrong_field() {
        let reqs = requests();
        let claim = &reqs[3].op;
        assert_eq!(
            OpResult::decode(claim, serde_json::json!({"result": "claimed"})).unwrap(),
            OpResult::Claim(ClaimReply { result: ClaimResult::Claimed })
        );
        let e = OpResult::decode(claim, serde_json::json!({"result": "taken"})).unwrap_err();
        assert!(e.to_string().contains("unknown variant `taken`"), "{e}");
        let complete = &reqs[5].op;
        let e = OpResult::decode(complete, serde_json::json!({"result": "ok"})).unwrap_err();
        assert!(e.to_string().contains("missing field `lease_lost`"), "{e}");
        let e = OpResult::decode(&reqs[1].op, serde_json::json!({"ready": true})).unwrap_err();
        assert!(e.to_string().contains("unknown field `ready`"), "{e}");
        let e = OpResult::decode(&reqs[2].op, serde_json::json!({"app": "2026-01-15T12:10:00Z"})).unwrap_err();
        assert!(e.to_string().contains("six fractional digits"), "{e}");
    }

    #[test]
    fn a_handshake_result_reads_features_clocks_and_policy() {
        let v = serde_json::json!({
            "protocol_version": 1,
            "adapter": {"name": "x", "version": "1", "language": "rust"},
            "queue": {"name": "q", "version": "2"},
            "capabilities": {"features": ["worker_fail", "hooks"], "split_reap": false, "clocks": ["app", "database"]},
            "policy": {"retry": {"value": "immediate", "reason": "at once"}},
            "state": {"absent": {"value": ["updated_at"], "reason": "no column"}}
        });
        let OpResult::Handshake(h) = OpResult::decode(&requests()[0].op, v.clone()).unwrap() else { panic!() };
        assert_eq!(h.capabilities.features, vec![Feature::WorkerFail, Feature::Hooks]);
        assert_eq!(h.capabilities.clocks, vec![Clock::App, Clock::Database]);
        let p = h.policy().unwrap();
        assert_eq!(p.retry, crate::policy::Retry::Immediate);
        assert!(p.absent.contains(&Field::UpdatedAt));
        assert_eq!(serde_json::to_value(&h).unwrap(), v, "features serialize by name");
    }

    fn read_job(id: &str) -> ReadJob {
        ReadJob {
            id: id.into(),
            status: Status::Pending,
            attempts: Some(1),
            claim_token: None,
            heartbeat_at: None,
            run_at: Some(at("2026-01-15T12:10:04.000000Z")),
            updated_at: Some(at("2026-01-15T12:10:00.000000Z")),
            failed_at: None,
            completed_at: None,
            last_error: Some(LastError::Timeout),
            raw: Some(serde_json::json!({"key": "saq:job:default:a"})),
        }
    }

    #[test]
    fn a_read_becomes_an_outcome_relative_to_the_final_clock() {
        let now = at("2026-01-15T12:10:00.000000Z");
        let hook = FailureEvent { job: "a".into(), attempt: 1, is_final: true, error: LastError::Timeout };
        let read = ReadResult {
            jobs: vec![read_job("a")],
            leases: vec![ReadLease {
                name: "job:R".into(),
                owner: "a/1".into(),
                expires_at: at("2026-01-15T12:09:00.000000Z"),
            }],
            hooks: vec![hook.clone()],
        };
        let o = read.to_outcome(now, &Policy::default(), vec![Some(StepResult::Reap(1))]).unwrap();
        assert_eq!(o.steps, vec![Some(StepResult::Reap(1))]);
        assert_eq!(o.jobs["a"].run_at, Duration::from_secs(4));
        assert_eq!(o.jobs["a"].updated_at, Duration::ZERO);
        assert_eq!(o.leases["job:R"].expires_at, Duration::from_secs(-60));
        assert_eq!(o.on_failure, vec![hook]);
    }

    #[test]
    fn a_null_outside_the_declared_absent_fields_is_an_error() {
        let now = at("2026-01-15T12:10:00.000000Z");
        let read = ReadResult { jobs: vec![ReadJob { updated_at: None, ..read_job("a") }], ..ReadResult::default() };
        let e = read.to_outcome(now, &Policy::default(), vec![]).unwrap_err();
        assert!(e.contains("`updated_at` of job `a` is null"), "{e}");
        let policy = Policy { absent: [Field::UpdatedAt].into_iter().collect(), ..Policy::default() };
        assert!(read.to_outcome(now, &policy, vec![]).is_ok());
        let twice = ReadResult { jobs: vec![read_job("a"), read_job("a")], ..ReadResult::default() };
        assert!(twice.to_outcome(now, &Policy::default(), vec![]).unwrap_err().contains("twice"));
    }
}
