//! `reapcheck adapter check -- CMD ARGS...`: starts an adapter and drives it
//! through a short fixed script (handshake, setup of a one-job scenario on
//! SQLite, clock, claim, heartbeat, clock, reap, complete, read, teardown),
//! validating every reply line it writes:
//!
//! 1. it is JSON (a line that is not is, most often, a log line: logs
//!    belong on stderr);
//! 2. it holds to `docs/adapter-protocol/reply.schema.json` with the result
//!    of the operation it answers (draft 2020-12, embedded in reapcheck);
//! 3. its `seq` echoes the request's;
//! 4. it decodes as reapcheck's own types do ([`Reply::from_line`],
//!    [`OpResult::decode`]);
//! 5. the handshake picks a version reapcheck offered, and `clock` reads
//!    the instant it was set to.
//!
//! To an adapter whose handshake declares `streamed`, the requests after
//! the handshake are sent ahead of their replies as `run` sends them (the
//! heartbeat waits for the claim's reply), and the replies are checked in
//! turn as they come (docs/adapter-protocol.md, "Streamed requests").
//!
//! An `error` reply of kind `unsupported`, `refused` or `indefinite` is a
//! valid reply (the queue may not support a step), except to the handshake,
//! where nothing can follow it. An `exception` is not: the adapter's own
//! code failed on a step every queue has. A `setup` answered `unsupported`
//! ends the check as a violation too, since nothing after it would be
//! exercised: the adapter's queue needs its own database (`--db`). The first
//! violation ends the check: [`Violation`] names the request, the line of
//! the adapter's stdout and what is wrong. A reply that does not come
//! within the time limit, or an adapter that exits, is a violation too.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::LazyLock;
use std::time::Duration;

use serde_json::Value;

use super::process::{AdapterProcess, ProcessError, Spawn};
use super::protocol::{
    AttemptArgs, Body, ClockArgs, Database, Empty, ErrorKind, Handshake, Op, OpResult, ReapArgs, Reply, Request, Setup,
    SetupClass, SetupJob, SetupSettings, VERSIONS,
};
use crate::outcome::Status;
use crate::scenario::Schema;
use crate::time::Instant;

/// `docs/adapter-protocol/request.schema.json`.
pub const REQUEST_SCHEMA: &str = include_str!("../../../docs/adapter-protocol/request.schema.json");

/// `docs/adapter-protocol/reply.schema.json`.
pub const REPLY_SCHEMA: &str = include_str!("../../../docs/adapter-protocol/reply.schema.json");

/// The default time limit per request, in seconds.
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 10;

/// The compiled schemas: requests, replies to any operation, and replies
/// to each operation (by the name of its result in `$defs`).
struct Schemas {
    request: jsonschema::Validator,
    reply: jsonschema::Validator,
    per_result: BTreeMap<&'static str, jsonschema::Validator>,
}

/// The name in the reply schema's `$defs` of `op`'s result.
fn result_def(op: &Op) -> &'static str {
    match op {
        Op::Handshake(_) => "handshake_result",
        Op::Setup(_) | Op::Set(_) | Op::Teardown(_) => "empty_result",
        Op::Clock(_) => "clock_result",
        Op::Claim(_) => "claim_result",
        Op::Heartbeat(_) => "heartbeat_result",
        Op::Complete(_) | Op::Fail(_) => "finish_result",
        Op::Reap(_) | Op::Apply(_) => "changed_result",
        Op::Scan(_) => "scan_result",
        Op::Read(_) => "read_result",
    }
}

const RESULT_DEFS: [&str; 9] = [
    "handshake_result",
    "empty_result",
    "clock_result",
    "claim_result",
    "heartbeat_result",
    "finish_result",
    "changed_result",
    "scan_result",
    "read_result",
];

static SCHEMAS: LazyLock<Schemas> = LazyLock::new(|| {
    let parse = |text: &str| -> Value { serde_json::from_str(text).expect("the embedded schemas are JSON") };
    let compile = |schema: &Value| jsonschema::draft202012::new(schema).expect("the embedded schemas compile");
    let reply = parse(REPLY_SCHEMA);
    let per_result = RESULT_DEFS
        .into_iter()
        .map(|def| {
            let mut narrowed = reply.clone();
            narrowed["$defs"]["result"] = serde_json::json!({ "$ref": format!("#/$defs/{def}") });
            (def, compile(&narrowed))
        })
        .collect();
    Schemas { request: compile(&parse(REQUEST_SCHEMA)), reply: compile(&reply), per_result }
});

/// The first schema error of `instance` under `validator`, with where it is
/// (a JSON pointer; the whole line when empty).
fn schema_error(validator: &jsonschema::Validator, instance: &Value) -> Option<String> {
    let error = validator.iter_errors(instance).next()?;
    let at = error.instance_path().to_string();
    let at = if at.is_empty() { "the reply".to_owned() } else { format!("`{at}`") };
    Some(format!("{at}: {error} (docs/adapter-protocol/reply.schema.json)"))
}

/// Validates a request line against `request.schema.json`; the first
/// error, with its JSON pointer.
pub fn check_request(line: &str) -> Result<(), String> {
    let value: Value = serde_json::from_str(line).map_err(|e| format!("not JSON: {e}"))?;
    match SCHEMAS.request.iter_errors(&value).next() {
        None => Ok(()),
        Some(e) => Err(format!("`{}`: {e}", e.instance_path())),
    }
}

/// Validates a reply line to any operation against `reply.schema.json`.
pub fn check_any_reply(line: &str) -> Result<(), String> {
    let value: Value = serde_json::from_str(line).map_err(|e| format!("not JSON: {e}"))?;
    schema_error(&SCHEMAS.reply, &value).map_or(Ok(()), Err)
}

/// Everything [`validate_reply`] holds a reply line to, in order; the
/// decoded reply, or what is wrong with the line.
pub fn validate_reply(request: &Request, line: &str) -> Result<Reply, String> {
    let value: Value = serde_json::from_str(line)
        .map_err(|e| format!("not a JSON reply ({e}); logs belong on stderr, only replies on stdout"))?;
    let narrowed = &SCHEMAS.per_result[result_def(&request.op)];
    if let Some(error) = schema_error(narrowed, &value) {
        return Err(error);
    }
    let reply = Reply::from_line(line).map_err(|e| format!("does not decode: {e}"))?;
    if reply.seq != request.seq {
        return Err(format!("`seq` is {}, but a reply must echo its request's seq {}", reply.seq, request.seq));
    }
    match &reply.body {
        Body::Ok(ok) => {
            let result = OpResult::decode(&request.op, ok.result.clone())
                .map_err(|e| format!("`result` does not decode as {}'s: {e}", request.op.name()))?;
            semantics(&request.op, &result)?;
        }
        Body::Error(e) if matches!(request.op, Op::Handshake(_)) => {
            let why = match e.kind {
                ErrorKind::Unsupported => format!(
                    "the adapter speaks none of the protocol versions reapcheck speaks ({VERSIONS:?}): {}",
                    e.message
                ),
                kind => format!("the handshake failed ({kind}): {}", e.message),
            };
            return Err(why);
        }
        Body::Error(_) => {}
    }
    Ok(reply)
}

/// The rules the schema cannot state: the version chosen was offered, and
/// a clock reads what it was set to.
fn semantics(op: &Op, result: &OpResult) -> Result<(), String> {
    match (op, result) {
        (Op::Handshake(h), OpResult::Handshake(r)) if !h.protocol_versions.contains(&r.protocol_version) => {
            Err(format!(
                "`protocol_version` {} is not one of the versions offered, {:?}",
                r.protocol_version, h.protocol_versions
            ))
        }
        (Op::Handshake(_), OpResult::Handshake(r)) => {
            r.policy().map(|_| ()).map_err(|e| format!("the declared policy cannot be used: {e}"))
        }
        (Op::Clock(c), OpResult::Clock(r)) if r.app != c.now => Err(format!(
            "the app clock reads {}, not the {} it was set to",
            super::protocol::instant::format(r.app),
            super::protocol::instant::format(c.now)
        )),
        (Op::Clock(c), OpResult::Clock(r)) if r.database.is_some_and(|d| d != c.now) => Err(format!(
            "the database clock reads {}, not the {} it was set to",
            super::protocol::instant::format(r.database.unwrap_or(c.now)),
            super::protocol::instant::format(c.now)
        )),
        _ => Ok(()),
    }
}

/// The fixed script: one pending job `a` of class `Check` (timeout 60 s),
/// claimed as `a/1`, beating once, silent for ten minutes, reaped,
/// completed too late, read, torn down. `namespace` is the setup's.
pub fn script(namespace: &str, database: Option<Database>) -> Vec<Request> {
    let start = Instant::parse_rfc3339("2026-01-15T12:00:00Z").expect("a valid instant");
    let later = start + crate::time::Duration::from_secs(600);
    let class = SetupClass {
        timeout: 60,
        idempotent: true,
        heartbeat_grace: None,
        max_retries: 3,
        base_delay: 2,
        max_delay: 3600,
        exclusive: false,
        concurrency_key: None,
        loadable: true,
    };
    let job = SetupJob {
        id: "a".to_owned(),
        class: "Check".to_owned(),
        queue: "default".to_owned(),
        status: Status::Pending,
        attempts: 0,
        max_retries: 3,
        claim_timeout: None,
        claim_token: None,
        concurrency_key: None,
        heartbeat_at: None,
        run_at: start,
        updated_at: start,
    };
    let setup = Setup {
        scenario: "adapter-check".to_owned(),
        namespace: namespace.to_owned(),
        database,
        now: start,
        app_time_zone: "UTC".to_owned(),
        session_time_zone: None,
        schema: Schema::Standard,
        settings: SetupSettings { heartbeat_grace: 300 },
        classes: BTreeMap::from([("Check".to_owned(), class)]),
        jobs: vec![job],
        leases: Vec::new(),
    };
    let attempt = || AttemptArgs { job: "a".to_owned(), token: "a/1".to_owned() };
    let ops = vec![
        Op::Handshake(Handshake {
            protocol_versions: VERSIONS.to_vec(),
            reapcheck: env!("CARGO_PKG_VERSION").to_owned(),
        }),
        Op::Setup(setup),
        Op::Clock(ClockArgs { now: start }),
        Op::Claim(attempt()),
        Op::Heartbeat(attempt()),
        Op::Clock(ClockArgs { now: later }),
        Op::Reap(ReapArgs { timeout: None, queues: None }),
        Op::Complete(attempt()),
        Op::Read(Empty {}),
        Op::Teardown(Empty {}),
    ];
    ops.into_iter().enumerate().map(|(i, op)| Request { seq: i as u64 + 1, op }).collect()
}

/// The first broken rule: which request, which line of the adapter's
/// stdout (from 1), what is wrong, and the line itself when there is one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The operation of the request answered.
    pub op: &'static str,
    /// Its `seq`.
    pub seq: u64,
    /// The line of the adapter's stdout, from 1 (the one expected, when
    /// none came).
    pub line_number: u64,
    /// What is wrong, and what to do.
    pub what: String,
    /// The offending line, when one came.
    pub line: Option<String>,
    /// The adapter's last stderr lines.
    pub stderr: Vec<String>,
}

impl Violation {
    /// The report: `error: <cmd>: reply to <op> (seq N), line L: <what>`,
    /// then the offending line and the stderr tail, indented.
    pub fn render(&self, command: &str) -> String {
        let mut text = format!(
            "error: {command}: reply to {} (seq {}), line {}: {}\n",
            self.op, self.seq, self.line_number, self.what
        );
        if let Some(line) = &self.line {
            text.push_str(&format!("  offending line: {line}\n"));
        }
        if !self.stderr.is_empty() {
            text.push_str("  stderr (last lines):\n");
            for l in &self.stderr {
                text.push_str(&format!("    {l}\n"));
            }
        }
        text
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "reply to {} (seq {}), line {}: {}", self.op, self.seq, self.line_number, self.what)
    }
}

/// Starts `command` in the current folder and runs [`script`] through it,
/// `timeout` per request, printing each exchange to `out` as `> request`
/// and `< reply` lines. The adapter is closed (stdin closed, then killed
/// after a grace) or killed at the end.
///
/// Errors: the first [`Violation`]; a command that cannot start is one
/// too, on the handshake.
pub async fn check(
    command: &[String],
    timeout: Duration,
    namespace: &str,
    database: Option<Database>,
    out: &mut (dyn std::io::Write + Send),
) -> Result<(), Violation> {
    // The setup line carries the database's URL: shown only redacted.
    let hide = |line: &str| match &database {
        Some(d) => crate::redact::message(line, &d.url),
        None => crate::redact::text(line),
    };
    let on = database.as_ref().map_or_else(|| "sqlite".to_owned(), |d| d.target.clone());
    let spawn = Spawn {
        command: command.to_vec(),
        cwd: std::env::current_dir().unwrap_or_else(|_| ".".into()),
        env: Vec::new(),
        time_zone: "UTC".to_owned(),
    };
    let requests = script(namespace, database.clone());
    let fail = |request: &Request, line_number: u64, what: String, line: Option<String>, stderr: Vec<String>| {
        Violation { op: request.op.name(), seq: request.seq, line_number, what, line, stderr }
    };
    let mut process = match AdapterProcess::spawn(&spawn) {
        Ok(p) => p,
        Err(e) => return Err(fail(&requests[0], 1, e.to_string(), None, Vec::new())),
    };
    let mut line_number = 0;
    // The request lines not yet written. One request at a time, unless the
    // handshake declares `streamed`: then each goes as soon as `run` would
    // send it (only a heartbeat waits, for its claim's reply).
    let mut outgoing = Vec::new();
    let mut streamed = false;
    let mut queued = 0;
    for (index, request) in requests.iter().enumerate() {
        while queued < requests.len()
            && (queued == index || streamed && !waits_on_a_claim(&requests[queued], &requests[index..queued]))
        {
            outgoing.extend_from_slice(requests[queued].to_line().as_bytes());
            outgoing.push(b'\n');
            queued += 1;
        }
        let sent = request.to_line();
        let _ = writeln!(out, "> {}", hide(&sent));
        let _ = out.flush();
        line_number += 1;
        let line = match process.exchange(&mut outgoing, timeout).await {
            Ok(line) => line,
            Err(e) => {
                let what = match e {
                    ProcessError::Timeout(_) => {
                        format!("no reply within {} s (--timeout-seconds); the adapter was killed", timeout.as_secs())
                    }
                    ProcessError::Ended(_) => format!("no reply: the adapter {}", ended(&e)),
                    other => other.to_string(),
                };
                process.kill().await;
                return Err(fail(request, line_number, what, None, process.stderr().lines()));
            }
        };
        let _ = writeln!(out, "< {}", hide(&line));
        let _ = out.flush();
        let checked = validate_reply(request, &line).and_then(|reply| exercised(request, &reply, &on).map(|()| reply));
        let reply = match checked {
            Ok(reply) => reply,
            Err(what) => {
                process.kill().await;
                let stderr = process.stderr().lines().iter().map(|l| hide(l)).collect();
                return Err(fail(request, line_number, hide(&what), Some(hide(&line)), stderr));
            }
        };
        if index == 0 && declares_streamed(&reply) {
            streamed = true;
            let _ = writeln!(
                out,
                "(the handshake declares `streamed`: the requests after it are sent ahead of their replies as `run` \
                 sends them; the heartbeat waits for the claim's reply)"
            );
        }
    }
    process.close().await;
    Ok(())
}

/// What a valid reply must also be for the check to mean anything: not an
/// `exception` (the adapter's own code failed), and not a `setup` answered
/// `unsupported` (then nothing after it is exercised on `on`).
fn exercised(request: &Request, reply: &Reply, on: &str) -> Result<(), String> {
    let Body::Error(e) = &reply.body else { return Ok(()) };
    match (e.kind, &request.op) {
        (ErrorKind::Exception, op) => Err(format!(
            "the adapter raised on `{}`: {}; an adapter answers `unsupported` for what its queue cannot do, \
             and `exception` only when its own code failed (its traceback is in the reply or on stderr)",
            op.name(),
            e.message
        )),
        (ErrorKind::Unsupported, Op::Setup(_)) => Err(format!(
            "`setup` answered `unsupported` on {on} ({}), so nothing after it would be checked: give \
             `--db <target>` with the database the adapter's queue runs on (its URL from REAPCHECK_<TARGET>_URL)",
            e.message
        )),
        _ => Ok(()),
    }
}

/// Whether `request` waits, under `streamed`, on one of `unanswered`: a
/// claim or a worker step on a job whose claim has no reply yet, as `run`
/// holds them (its label follows from that reply; docs/adapter-protocol.md,
/// "Streamed requests").
fn waits_on_a_claim(request: &Request, unanswered: &[Request]) -> bool {
    let job = match &request.op {
        Op::Claim(a) | Op::Heartbeat(a) | Op::Complete(a) | Op::Fail(a) => &a.job,
        _ => return false,
    };
    unanswered.iter().any(|u| matches!(&u.op, Op::Claim(c) if c.job == *job))
}

/// Whether a handshake's `ok` reply declares `capabilities.streamed`
/// (docs/adapter-protocol.md, "Streamed requests").
fn declares_streamed(reply: &Reply) -> bool {
    match &reply.body {
        Body::Ok(ok) => ok.result.pointer("/capabilities/streamed") == Some(&Value::Bool(true)),
        Body::Error(_) => false,
    }
}

fn ended(e: &ProcessError) -> String {
    match e {
        ProcessError::Ended(_) => e.to_string(),
        other => format!("failed: {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim() -> Request {
        script("rc_check_1", None).into_iter().nth(3).unwrap()
    }

    #[test]
    fn the_embedded_schemas_compile_and_the_script_holds_to_the_request_schema() {
        for request in script("rc_check_1", None) {
            check_request(&request.to_line()).unwrap_or_else(|e| panic!("{}: {e}", request.to_line()));
        }
        let e = check_request(r#"{"seq":1,"op":"claim","job":"a","token":"a/1","as":"x"}"#).unwrap_err();
        assert!(e.contains("as"), "{e}");
    }

    #[test]
    fn a_good_reply_validates_and_decodes() {
        let reply = validate_reply(&claim(), r#"{"seq":4,"reply":"ok","result":{"result":"claimed"}}"#).unwrap();
        assert_eq!(reply.seq, 4);
        let refused = r#"{"seq":4,"reply":"error","kind":"refused","message":"held by a/2"}"#;
        assert!(validate_reply(&claim(), refused).is_ok());
    }

    #[test]
    fn each_broken_rule_is_named() {
        let cases = [
            ("starting worker...", "logs belong on stderr"),
            (r#"{"seq":3,"reply":"ok","result":{"result":"claimed"}}"#, "must echo its request's seq 4"),
            (r#"{"seq":4,"reply":"ok","result":{"result":"claimed"},"note":1}"#, "note"),
            (r#"{"seq":4,"reply":"ok","result":{"result":"taken"}}"#, "`/result/result`"),
            (r#"{"seq":4,"reply":"maybe","result":{}}"#, "`/reply`"),
            (r#"{"seq":4,"reply":"error","kind":"oops","message":"m"}"#, "`/kind`"),
            (r#"{"seq":4,"reply":"error","kind":"refused","message":"m","traceback":"t"}"#, "the reply"),
            (r#"{"seq":4,"reply":"ok","result":{"changed":1}}"#, "`/result`"),
        ];
        for (line, wanted) in cases {
            let e = validate_reply(&claim(), line).unwrap_err();
            assert!(e.contains(wanted), "{line}: {e}");
        }
    }

    #[test]
    fn the_handshake_must_pick_an_offered_version_and_clocks_must_move() {
        let handshake = &script("rc_check_1", None)[0];
        let reply = |v: u32| {
            format!(
                r#"{{"seq":1,"reply":"ok","result":{{"protocol_version":{v},"adapter":{{"name":"x","version":"1","language":"l"}},"queue":{{"name":"q","version":"1"}},"capabilities":{{"features":[],"split_reap":false,"clocks":["app"]}}}}}}"#
            )
        };
        assert!(validate_reply(handshake, &reply(1)).is_ok());
        assert!(validate_reply(handshake, &reply(2)).unwrap_err().contains("not one of the versions offered"));
        let none = r#"{"seq":1,"reply":"error","kind":"unsupported","message":"v2 only"}"#;
        assert!(validate_reply(handshake, none).unwrap_err().contains("speaks none of the protocol versions"));
        let clock = &script("rc_check_1", None)[5];
        let stuck = r#"{"seq":6,"reply":"ok","result":{"app":"2026-01-15T12:00:00.000000Z","database":null}}"#;
        assert!(validate_reply(clock, stuck).unwrap_err().contains("not the 2026-01-15T12:10:00.000000Z"));
    }
}
