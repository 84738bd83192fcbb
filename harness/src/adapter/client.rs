//! The request/reply side of the protocol over an [`AdapterProcess`]:
//! numbers each request (`seq` from 1), waits for its one reply within the
//! time limit, checks that the reply echoes the `seq`, and decodes it
//! strictly with the [`protocol`](super::protocol) types. Every exchange
//! is recorded for the failure trace, as it was sent and received, and its
//! credentials are redacted when the trace is read ([`Log::redacted`]).
//!
//! Every way an adapter can break the protocol is a [`ClientError`] of its
//! own [`ClientErrorKind`], whose message names the adapter, the request
//! (op and seq) and the offending line.

use std::collections::VecDeque;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use super::process::{AdapterProcess, ProcessError, Spawn, StderrTail};
use super::protocol::{
    self, Body, ErrorBody, ErrorKind, Handshake, HandshakeResult, MAX_LINE_BYTES, Op, OpResult, Reply, Request,
};
use crate::redact;

/// The hint for a stdout line that is not a reply.
pub const STDOUT_HINT: &str = "only protocol lines go to stdout: logs belong on stderr";

/// One request and the reply line it got (if any), both redacted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exchange {
    /// The request line sent.
    pub request: String,
    /// The line that came back, or `None` when none did.
    pub reply: Option<String>,
}

/// The exchanges of one stretch of a run ([`Client::take_log`]) with the
/// secrets they may hold, in [`Client::hide`]'s sense. Lines are kept as
/// they were sent and received; only [`Log::redacted`] lets them out, with
/// every credential hidden by the one redactor. A passing scenario's log is
/// never read, so it is never redacted: redacting each line as it came was
/// 7% of reapcheck's CPU samples in `run --db adapter:reference-sqlite`.
#[derive(Clone, Default)]
pub struct Log {
    exchanges: Vec<RawExchange>,
    secrets: Vec<String>,
}

/// Shows the count only: the lines are not redacted yet.
impl std::fmt::Debug for Log {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Log").field("exchanges", &self.exchanges.len()).finish_non_exhaustive()
    }
}

/// An exchange as it was sent and received: never shown as it is.
#[derive(Clone)]
struct RawExchange {
    request: String,
    reply: Option<String>,
}

impl Log {
    /// How many requests it holds.
    pub fn len(&self) -> usize {
        self.exchanges.len()
    }

    /// Whether it holds no request.
    pub fn is_empty(&self) -> bool {
        self.exchanges.is_empty()
    }

    /// Every exchange, in order, its credentials redacted.
    pub fn redacted(&self) -> Vec<Exchange> {
        let shown = |line: &str| hidden(&self.secrets, line);
        self.exchanges
            .iter()
            .map(|e| Exchange { request: shown(&e.request), reply: e.reply.as_deref().map(shown) })
            .collect()
    }
}

/// A decoded answer: the operation's result, or the adapter's error reply.
#[derive(Clone, Debug, PartialEq)]
pub enum Answer {
    /// `ok`, with the result decoded for the request's operation.
    Ok(OpResult),
    /// `error`, as the adapter sent it.
    Error(ErrorBody),
}

/// An adapter that broke the protocol, or could not be run, on one request.
#[derive(Debug, thiserror::Error)]
#[error("adapter {adapter}: {op} (seq {seq}): {kind}{}", offending(.line, .kind))]
pub struct ClientError {
    /// The adapter's configured name.
    pub adapter: String,
    /// The request's operation (`handshake`, `setup`, ...).
    pub op: &'static str,
    /// The request's `seq`.
    pub seq: u64,
    /// The offending line, redacted, when there was one.
    pub line: Option<String>,
    /// What went wrong.
    pub kind: ClientErrorKind,
}

fn offending(line: &Option<String>, kind: &ClientErrorKind) -> String {
    let hint = match kind {
        ClientErrorKind::NotProtocol(_) => format!(" ({STDOUT_HINT})"),
        _ => String::new(),
    };
    match line {
        Some(l) => format!("{hint}\n  the line: {}", shorten(l)),
        None => hint,
    }
}

fn shorten(line: &str) -> String {
    let cut: String = line.chars().take(500).collect();
    if cut.len() < line.len() { format!("{cut}...") } else { cut }
}

/// The kinds of [`ClientError`].
#[derive(Debug, thiserror::Error)]
pub enum ClientErrorKind {
    /// The command could not be started.
    #[error("{0}")]
    Start(String),
    /// The adapter exited (a status code, or closed stdout) mid-request.
    #[error("the adapter {0} before it replied")]
    Exited(String),
    /// The adapter was killed by a signal mid-request.
    #[error("the adapter crashed: it {0}")]
    Crashed(String),
    /// No reply within the time limit.
    #[error("the adapter hung: {0}")]
    Hung(String),
    /// A reply over the protocol's 16 MiB.
    #[error("{0}")]
    TooLong(String),
    /// A stdout line that is not a protocol reply (not JSON, or no `reply`).
    #[error("wrote a line on stdout that is not a reply: {0}")]
    NotProtocol(String),
    /// A reply whose `seq` is not the request's.
    #[error("the reply has seq {got}, not the request's {expected}: answer each request once, in order")]
    WrongSeq {
        /// The request's seq.
        expected: u64,
        /// The reply's.
        got: String,
    },
    /// A reply (or result) with a field the protocol does not have.
    #[error("{0}")]
    UnknownField(String),
    /// A reply with an unknown `reply`, error `kind` or result value.
    #[error("{0}")]
    UnknownKind(String),
    /// A reply that is otherwise malformed (a missing field, a wrong type,
    /// an instant not in the protocol's form).
    #[error("{0}")]
    Malformed(String),
    /// The handshake found no version both sides speak.
    #[error("no common protocol version: reapcheck speaks {offered:?}; {answer}")]
    NoCommonVersion {
        /// The versions offered.
        offered: Vec<u32>,
        /// What the adapter answered.
        answer: String,
    },
    /// The handshake was answered with an error other than `unsupported`.
    #[error("the handshake failed: {0}")]
    Handshake(String),
    /// Writing to or reading from the pipes failed.
    #[error("{0}")]
    Io(String),
}

/// A running adapter: requests are sent ([`Client::send`]) and their
/// replies taken ([`Client::receive`]) in order, one at a time
/// ([`Client::request`]) or, to an adapter that accepts it, several
/// sent ahead of their replies.
pub struct Client {
    name: String,
    process: AdapterProcess,
    seq: u64,
    timeout: Duration,
    secrets: Vec<String>,
    log: Vec<RawExchange>,
    /// The request lines sent and not yet written to the adapter.
    outgoing: Vec<u8>,
    /// The requests sent whose replies have not been taken, oldest first.
    pending: VecDeque<(Sent, Op)>,
}

/// A request sent: its `seq` and where its exchange is in the log.
#[derive(Clone, Copy, Debug)]
struct Sent {
    seq: u64,
    exchange: usize,
}

impl Client {
    /// Starts the adapter called `name` (its configured name) with `spawn`;
    /// every request waits at most `timeout` for its reply.
    ///
    /// # Errors
    ///
    /// [`ClientErrorKind::Start`], as the error of request 1 (`handshake`).
    pub fn start(name: &str, spawn: &Spawn, timeout: Duration) -> Result<Client, ClientError> {
        let process = AdapterProcess::spawn(spawn).map_err(|e| ClientError {
            adapter: name.to_owned(),
            op: "handshake",
            seq: 1,
            line: None,
            kind: ClientErrorKind::Start(e.to_string()),
        })?;
        Ok(Client {
            name: name.to_owned(),
            process,
            seq: 0,
            timeout,
            secrets: Vec::new(),
            log: Vec::new(),
            outgoing: Vec::new(),
            pending: VecDeque::new(),
        })
    }

    /// The adapter's configured name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Hides `secret` (a database URL sent in `setup`) in every recorded
    /// line and error.
    pub fn hide(&mut self, secret: &str) {
        if !secret.is_empty() && !self.secrets.iter().any(|s| s == secret) {
            self.secrets.push(secret.to_owned());
        }
    }

    /// `text` with credentials and the hidden secrets redacted.
    pub fn redact(&self, text: &str) -> String {
        hidden(&self.secrets, text)
    }

    /// The adapter's stderr tail.
    pub fn stderr(&self) -> &StderrTail {
        self.process.stderr()
    }

    /// The exchanges recorded since the last [`Client::take_log`] or
    /// [`Client::clear_log`], with the secrets that hide their credentials.
    pub fn take_log(&mut self) -> Log {
        Log { exchanges: std::mem::take(&mut self.log), secrets: self.secrets.clone() }
    }

    /// Forgets the exchanges recorded so far.
    pub fn clear_log(&mut self) {
        self.log.clear();
    }

    /// Sends `handshake` offering [`protocol::VERSIONS`]; the adapter's
    /// identity, capabilities and policy.
    ///
    /// # Errors
    ///
    /// Any protocol error; [`ClientErrorKind::NoCommonVersion`] when the
    /// adapter answers `unsupported` or picks a version not offered;
    /// [`ClientErrorKind::Handshake`] for another error reply.
    pub async fn handshake(&mut self) -> Result<HandshakeResult, ClientError> {
        let offered = protocol::VERSIONS.to_vec();
        let op = Op::Handshake(Handshake {
            protocol_versions: offered.clone(),
            reapcheck: env!("CARGO_PKG_VERSION").into(),
        });
        let (seq, adapter) = (self.seq + 1, self.name.clone());
        let fail = |kind, line| ClientError { adapter: adapter.clone(), op: "handshake", seq, line, kind };
        match self.request(op).await? {
            Answer::Ok(OpResult::Handshake(h)) if offered.contains(&h.protocol_version) => Ok(h),
            Answer::Ok(OpResult::Handshake(h)) => Err(fail(
                ClientErrorKind::NoCommonVersion {
                    offered,
                    answer: format!("the adapter chose version {}, which was not offered", h.protocol_version),
                },
                None,
            )),
            Answer::Ok(other) => unreachable!("a handshake decodes as a handshake result, not {other:?}"),
            Answer::Error(e) if e.kind == ErrorKind::Unsupported => Err(fail(
                ClientErrorKind::NoCommonVersion { offered, answer: format!("the adapter said: {}", e.message) },
                None,
            )),
            Answer::Error(e) => Err(fail(ClientErrorKind::Handshake(format!("{}: {}", e.kind, e.message)), None)),
        }
    }

    /// Sends `op` as the next request and waits for its reply, after
    /// taking (and checking) the replies to the requests sent before it.
    ///
    /// # Errors
    ///
    /// Every protocol violation, an exit, a crash or a hang, of `op` or
    /// of a request before it. The process is unusable afterwards: the
    /// caller starts a new one.
    pub async fn request(&mut self, op: Op) -> Result<Answer, ClientError> {
        self.drain().await?;
        self.send(op)?;
        self.receive().await
    }

    /// Sends `op` as the next request without waiting for any reply: its
    /// line is written with the next [`Client::receive`], together with
    /// every other line sent by then, and its reply is taken in turn.
    /// Only for what the adapter accepts ahead of its replies
    /// (docs/adapter-protocol.md, "Pipelined reads" and "Streamed
    /// requests").
    ///
    /// # Errors
    ///
    /// [`ClientErrorKind::TooLong`] when the line would be over the
    /// protocol's [`MAX_LINE_BYTES`]: nothing is sent, the `seq` is not
    /// used, and the process is still usable.
    pub fn send(&mut self, op: Op) -> Result<(), ClientError> {
        let seq = self.seq + 1;
        let line = Request::line_of(seq, &op);
        if line.len() > MAX_LINE_BYTES {
            let what = format!(
                "the request would be {} bytes, over the protocol's {MAX_LINE_BYTES} (16 MiB) a line; it was not sent",
                line.len()
            );
            return Err(self.error(&op, seq, ClientErrorKind::TooLong(what), None));
        }
        self.seq = seq;
        self.outgoing.extend_from_slice(line.as_bytes());
        self.outgoing.push(b'\n');
        self.log.push(RawExchange { request: line, reply: None });
        let sent = Sent { seq, exchange: self.log.len() - 1 };
        self.pending.push_back((sent, op));
        Ok(())
    }

    /// How many requests were sent whose replies have not been taken.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// The reply to the oldest request sent and not yet answered, checked
    /// and decoded, while the lines sent after it are written.
    ///
    /// # Errors
    ///
    /// As [`Client::request`]; [`ClientErrorKind::Io`] when nothing was
    /// sent that waits for a reply.
    pub async fn receive(&mut self) -> Result<Answer, ClientError> {
        let Some((sent, op)) = self.pending.pop_front() else {
            let kind = ClientErrorKind::Io("no request waits for a reply (reapcheck's own error)".into());
            return Err(ClientError { adapter: self.name.clone(), op: "(none)", seq: self.seq, line: None, kind });
        };
        let reply = match self.process.exchange(&mut self.outgoing, self.timeout).await {
            Ok(reply) => reply,
            Err(e) => return Err(self.error(&op, sent.seq, process_kind(e, self.timeout), None)),
        };
        let answer = decode(sent.seq, &op, &reply).map_err(|kind| self.error(&op, sent.seq, kind, Some(&reply)));
        if let Some(exchange) = self.log.get_mut(sent.exchange) {
            exchange.reply = Some(reply);
        }
        answer
    }

    /// Takes the replies to every request sent and not yet answered, each
    /// checked as any other (an error reply is an answer, not an error).
    ///
    /// # Errors
    ///
    /// As [`Client::receive`], for the first that breaks the protocol.
    pub async fn drain(&mut self) -> Result<(), ClientError> {
        while !self.pending.is_empty() {
            self.receive().await?;
        }
        Ok(())
    }

    fn error(&self, op: &Op, seq: u64, kind: ClientErrorKind, line: Option<&str>) -> ClientError {
        ClientError { adapter: self.name.clone(), op: op.name(), seq, line: line.map(|l| self.redact(l)), kind }
    }

    /// Closes the adapter: stdin closed, up to 2 s to exit, then killed.
    pub async fn close(self) {
        self.process.close().await;
    }

    /// Kills the adapter at once (after a failure); its stderr tail, with
    /// the lines written before it died.
    pub async fn kill(mut self) -> Vec<String> {
        self.process.kill().await;
        self.process.stderr().lines()
    }
}

/// `text` with every credential redacted, and each of `secrets` (URLs)
/// shown only in its redacted form, its password hidden even alone.
fn hidden(secrets: &[String], text: &str) -> String {
    secrets.iter().fold(redact::text(text), |t, s| redact::message(&t.replace(s.as_str(), &redact::url(s)), s))
}

/// A process failure as a client error kind.
fn process_kind(e: ProcessError, timeout: Duration) -> ClientErrorKind {
    match e {
        ProcessError::Start { .. } => ClientErrorKind::Start(e.to_string()),
        ProcessError::Ended(Some(status)) if status.code().is_none() => ClientErrorKind::Crashed(e.to_string()),
        ProcessError::Ended(_) => ClientErrorKind::Exited(e.to_string()),
        ProcessError::Timeout(_) => {
            ClientErrorKind::Hung(format!("no reply within {} s (timeout_seconds); it was killed", timeout.as_secs()))
        }
        ProcessError::TooLong(_) => ClientErrorKind::TooLong(e.to_string()),
        ProcessError::NotUtf8(_) => ClientErrorKind::NotProtocol(e.to_string()),
        ProcessError::Io(_) => ClientErrorKind::Io(e.to_string()),
    }
}

/// Decodes the reply `line` to request `seq` of `op`, strictly.
fn decode(seq: u64, op: &Op, line: &str) -> Result<Answer, ClientErrorKind> {
    if let Some(result) = OpResult::from_ok_line(op, seq, line) {
        return Ok(Answer::Ok(result));
    }
    let value: Value = serde_json::from_str(line).map_err(|e| ClientErrorKind::NotProtocol(e.to_string()))?;
    let Some(object) = value.as_object().filter(|o| o.contains_key("reply") || o.contains_key("seq")) else {
        return Err(ClientErrorKind::NotProtocol("it is JSON, but not an object with `seq` and `reply`".into()));
    };
    match object.get("seq") {
        Some(Value::Number(n)) if n.as_u64() == Some(seq) => {}
        Some(other) => return Err(ClientErrorKind::WrongSeq { expected: seq, got: other.to_string() }),
        None => return Err(ClientErrorKind::Malformed("the reply has no `seq`: echo the request's".into())),
    }
    // Parsed once here: the reply is read from the parsed value.
    let reply = Reply::deserialize(value).map_err(|e| classify(&e.to_string()))?;
    match reply.body {
        Body::Ok(ok) => OpResult::decode(op, ok.result)
            .map(Answer::Ok)
            .map_err(|e| classify(&format!("the `{}` result: {e}", op.name()))),
        Body::Error(e) => Ok(Answer::Error(e)),
    }
}

/// A serde message as its kind: an unknown field, an unknown variant, or
/// anything else.
fn classify(message: &str) -> ClientErrorKind {
    if message.contains("unknown field") {
        ClientErrorKind::UnknownField(message.to_owned())
    } else if message.contains("unknown variant") {
        ClientErrorKind::UnknownKind(message.to_owned())
    } else {
        ClientErrorKind::Malformed(message.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapter::protocol::Empty;

    fn read() -> Op {
        Op::Read(Empty {})
    }

    #[test]
    fn each_violation_is_its_own_kind() {
        type Is = fn(&ClientErrorKind) -> bool;
        let cases: [(&str, Is); 7] = [
            ("starting worker...", |k| matches!(k, ClientErrorKind::NotProtocol(_))),
            ("[1, 2]", |k| matches!(k, ClientErrorKind::NotProtocol(_))),
            (r#"{"seq":2,"reply":"ok","result":{}}"#, |k| matches!(k, ClientErrorKind::WrongSeq { .. })),
            (r#"{"seq":1,"reply":"ok","result":{},"x":1}"#, |k| matches!(k, ClientErrorKind::UnknownField(_))),
            (r#"{"seq":1,"reply":"error","kind":"oops","message":"m"}"#, |k| {
                matches!(k, ClientErrorKind::UnknownKind(_))
            }),
            (r#"{"seq":1,"reply":"ok","result":{"jobs":[],"leases":[],"hooks":[],"more":1}}"#, |k| {
                matches!(k, ClientErrorKind::UnknownField(_))
            }),
            (r#"{"seq":1,"reply":"ok","result":{"jobs":[]}}"#, |k| matches!(k, ClientErrorKind::Malformed(_))),
        ];
        for (line, is) in cases {
            let kind = decode(1, &read(), line).unwrap_err();
            assert!(is(&kind), "{line}: {kind:?}");
        }
        let ok = decode(1, &read(), r#"{"seq":1,"reply":"ok","result":{"jobs":[],"leases":[],"hooks":[]}}"#);
        assert!(matches!(ok, Ok(Answer::Ok(OpResult::Read(_)))), "{ok:?}");
        let refused = decode(1, &read(), r#"{"seq":1,"reply":"error","kind":"refused","message":"no"}"#).unwrap();
        assert!(matches!(refused, Answer::Error(ErrorBody { kind: ErrorKind::Refused, .. })));
    }

    #[test]
    fn a_message_names_the_adapter_the_request_and_the_line_with_the_hint() {
        let e = ClientError {
            adapter: "saq".into(),
            op: "setup",
            seq: 2,
            line: Some("hello".into()),
            kind: decode(2, &read(), "hello").unwrap_err(),
        };
        let text = e.to_string();
        assert!(text.starts_with("adapter saq: setup (seq 2): wrote a line on stdout that is not a reply"), "{text}");
        assert!(text.contains(STDOUT_HINT) && text.contains("the line: hello"), "{text}");
    }

    fn sh(script: &str) -> Spawn {
        Spawn {
            command: vec!["sh".into(), "-c".into(), script.into()],
            cwd: std::env::temp_dir(),
            env: Vec::new(),
            time_zone: "UTC".into(),
        }
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_handshake_without_a_common_version_and_an_exit_are_their_own_kinds() {
        let unsupported = r#"read l; echo '{"seq":1,"reply":"error","kind":"unsupported","message":"I speak 2"}'"#;
        let mut c = Client::start("old", &sh(unsupported), Duration::from_secs(10)).unwrap();
        let e = c.handshake().await.unwrap_err();
        assert!(matches!(e.kind, ClientErrorKind::NoCommonVersion { .. }), "{e}");
        assert!(e.to_string().contains("I speak 2"), "{e}");
        c.kill().await;
        let mut c = Client::start("gone", &sh("read l; exit 4"), Duration::from_secs(10)).unwrap();
        let e = c.handshake().await.unwrap_err();
        assert!(matches!(e.kind, ClientErrorKind::Exited(_)), "{e}");
        assert!(e.to_string().starts_with("adapter gone: handshake (seq 1): the adapter exited with status 4"), "{e}");
        let mut c = Client::start("crash", &sh("read l; kill -9 $$"), Duration::from_secs(10)).unwrap();
        let e = c.handshake().await.unwrap_err();
        assert!(matches!(e.kind, ClientErrorKind::Crashed(_)), "{e}");
        let mut c = Client::start("hang", &sh("read l; sleep 30"), Duration::from_millis(300)).unwrap();
        let e = c.request(read()).await.unwrap_err();
        assert!(matches!(e.kind, ClientErrorKind::Hung(_)), "{e}");
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn requests_sent_together_go_in_one_write_and_are_answered_in_turn() {
        // This adapter reads two lines before it answers either: it only
        // answers when the read comes right behind the clock.
        let both = r#"read a; read b
echo '{"seq":1,"reply":"ok","result":{"app":"2026-01-15T12:00:00.000000Z","database":null}}'
echo '{"seq":2,"reply":"ok","result":{"jobs":[],"leases":[],"hooks":[]}}'
read c
echo '{"seq":3,"reply":"ok","result":{}}'"#;
        let mut c = Client::start("ahead", &sh(both), Duration::from_secs(5)).unwrap();
        let now = protocol::instant::parse("2026-01-15T12:00:00.000000Z").unwrap();
        c.send(Op::Clock(protocol::ClockArgs { now })).unwrap();
        c.send(read()).unwrap();
        assert_eq!(c.pending(), 2);
        let clock = c.receive().await.unwrap();
        assert!(matches!(clock, Answer::Ok(OpResult::Clock(_))), "{clock:?}");
        let read = c.receive().await.unwrap();
        assert!(matches!(read, Answer::Ok(OpResult::Read(_))), "{read:?}");
        assert_eq!(c.pending(), 0);
        let teardown = c.request(Op::Teardown(Empty {})).await.unwrap();
        assert_eq!(teardown, Answer::Ok(OpResult::Teardown));
        let log = c.take_log().redacted();
        let requests: Vec<&str> = log.iter().map(|e| e.request.as_str()).collect();
        assert!(requests[1].starts_with(r#"{"seq":2,"op":"read""#), "{requests:?}");
        assert!(log.iter().all(|e| e.reply.is_some()), "{log:?}");
        c.kill().await;
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_request_after_requests_sent_ahead_waits_for_and_checks_their_replies() {
        // The reply to the read sent ahead echoes the wrong seq: the next
        // request reports it, as the read's, before anything is sent.
        let wrong = r#"read a; read b
echo '{"seq":1,"reply":"ok","result":{"changed":0}}'
echo '{"seq":7,"reply":"ok","result":{"jobs":[],"leases":[],"hooks":[]}}'
read c; echo never"#;
        let mut c = Client::start("wrong", &sh(wrong), Duration::from_secs(5)).unwrap();
        let reap = Op::Reap(protocol::ReapArgs { timeout: None, queues: None });
        c.send(reap).unwrap();
        c.send(read()).unwrap();
        assert!(matches!(c.receive().await.unwrap(), Answer::Ok(OpResult::Reap(_))));
        let e = c.request(Op::Teardown(Empty {})).await.unwrap_err();
        assert!(matches!(e.kind, ClientErrorKind::WrongSeq { expected: 2, .. }), "{e}");
        assert_eq!((e.op, e.seq), ("read", 2), "{e}");
        c.kill().await;
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_request_over_the_line_limit_is_not_sent_and_takes_no_seq() {
        let mut c = Client::start("big", &sh("read l; echo \"$l\" | cut -c1-8 >&2"), Duration::from_secs(5)).unwrap();
        let job = "j".repeat(MAX_LINE_BYTES);
        let e = c.send(Op::Claim(protocol::AttemptArgs { job, token: "j/1".into() })).unwrap_err();
        assert!(matches!(e.kind, ClientErrorKind::TooLong(_)), "{e}");
        assert!(e.to_string().contains("it was not sent"), "{e}");
        assert_eq!((c.pending(), c.take_log().len()), (0, 0));
        c.send(read()).unwrap();
        assert!(c.take_log().redacted()[0].request.starts_with(r#"{"seq":1,"#), "the next request is seq 1");
        c.kill().await;
    }

    #[test]
    fn an_ok_line_read_in_one_pass_is_what_the_strict_way_reads() {
        let ops: Vec<(Op, &str)> = vec![
            (
                read(),
                r#"{"jobs":[{"id":"a","status":"pending","attempts":1,"claim_token":null,"heartbeat_at":null,"run_at":"2026-01-15T12:10:04.000000Z","updated_at":"2026-01-15T12:10:00.000000Z","failed_at":null,"completed_at":null,"last_error":"timeout","raw":{"k":[1,2]}}],"leases":[{"name":"l","owner":"a/1","expires_at":"2026-01-15T12:10:04.000000Z"}],"hooks":[{"job":"a","attempt":1,"final":true,"error":"timeout"}]}"#,
            ),
            (Op::Reap(protocol::ReapArgs { timeout: None, queues: None }), r#"{"changed":2}"#),
            (Op::Claim(protocol::AttemptArgs { job: "a".into(), token: "a/2".into() }), r#"{"result":"claimed"}"#),
            (Op::Teardown(Empty {}), "{}"),
        ];
        for (op, result) in ops {
            let line = format!(r#"{{"seq":3,"reply":"ok","result":{result}}}"#);
            let fast = OpResult::from_ok_line(&op, 3, &line).unwrap_or_else(|| panic!("{line}"));
            let strict = match Reply::from_line(&line).unwrap().body {
                Body::Ok(ok) => OpResult::decode(&op, ok.result).unwrap(),
                Body::Error(e) => panic!("{e:?}"),
            };
            assert_eq!(fast, strict, "{line}");
            assert_eq!(decode(3, &op, &line).unwrap(), Answer::Ok(strict));
        }
        // Anything else is left to the strict way, which says what is wrong.
        let teardown = Op::Teardown(Empty {});
        for line in [
            r#"{"seq":4,"reply":"ok","result":{}}"#,
            r#"{"seq":3,"reply":"ok","result":{},"x":1}"#,
            r#"{"seq":3,"seq":3,"reply":"ok","result":{}}"#,
            r#"{"seq":3,"reply":"error","kind":"refused","message":"no"}"#,
            r#"{"seq":3.0,"reply":"ok","result":{}}"#,
        ] {
            assert_eq!(OpResult::from_ok_line(&teardown, 3, line), None, "{line}");
        }
        assert!(matches!(
            decode(3, &teardown, r#"{"seq":3,"reply":"ok","result":{},"x":1}"#),
            Err(ClientErrorKind::UnknownField(_))
        ));
    }

    #[test]
    fn a_log_lets_its_lines_out_only_redacted() {
        let url = "postgres://u:s3cret@h/db";
        let log = Log {
            exchanges: vec![RawExchange {
                request: format!(r#"{{"seq":2,"op":"setup","database":{{"url":"{url}"}}}}"#),
                reply: Some(r#"{"seq":2,"reply":"error","kind":"exception","message":"login s3cret failed"}"#.into()),
            }],
            secrets: vec![url.to_owned()],
        };
        let shown = format!("{:?}", log.redacted());
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(shown.contains("postgres://u:***@h/db"), "{shown}");
        assert_eq!(log.len(), 1);
    }

    #[test]
    fn recorded_lines_hide_the_url() {
        let secrets = ["postgres://u:s3cret@h/db".to_owned()];
        let shown = hidden(&secrets, r#"{"url":"postgres://u:s3cret@h/db","echo":"s3cret"}"#);
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(shown.contains("postgres://u:***@h/db"), "{shown}");
    }
}
