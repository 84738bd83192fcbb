//! The SQL engine: answers the contract by running a dialect's statements on
//! a database connection. It binds every value (nothing is formatted into
//! SQL text but the generated namespace identifier) and decodes results by
//! the contract's declared columns.

use crate::backend::{BackendError, Connection};
use crate::dialect::contract::{self, Column, NAMESPACE_MARKER, Shape};
use crate::dialect::text::{self, Prepared};
use crate::dialect::{Dialect, Statement};
use crate::engine::{Call, Candidate, Engine, EngineError, EngineErrorKind, JobState, LeaseRow, Phase, Reply, Value};
use crate::feature::Feature;
use crate::outcome::{LastError, Status};
use crate::policy::Policy;
use crate::scenario::Schema;
use crate::statement_log::{Executed, Returned};
use crate::time::Instant;

/// A dialect's statements on one connection, for one scenario's schema.
/// Every statement it runs is logged ([`SqlEngine::into_log`]).
pub struct SqlEngine<'a> {
    dialect: &'a Dialect,
    schema: Schema,
    conn: &'a mut Connection,
    phase: Phase,
    log: Vec<Executed>,
    /// The `now` the dialect's `set_clock` last set, if it has one.
    clock: Option<Instant>,
    /// `schema`'s tables are already there, emptied: `schema` is logged as
    /// kept instead of run (`crate::isolation`).
    tables_kept: bool,
    /// Whether setup rows are inserted in one transaction
    /// ([`SqlEngine::with_setup_transaction`]).
    setup_transaction: bool,
    /// Whether that transaction is open now.
    in_transaction: bool,
    /// Setup rows of one statement not sent yet: with the setup
    /// transaction they go as one multi-row INSERT ([`SqlEngine::flush`]).
    pending: Vec<Call>,
}

/// The most rows one setup INSERT carries: SQL Server's limit for a
/// `VALUES` list.
const MAX_BATCH_ROWS: usize = 1000;

/// The most bound values one setup INSERT carries: under SQL Server's 2,100
/// parameters (the lowest limit of the supported drivers; PostgreSQL and
/// MySQL take 65,535, SQLite 32,766).
const MAX_BATCH_BINDS: usize = 2000;

impl<'a> SqlEngine<'a> {
    /// An engine running `dialect` on `conn` for tables of `schema`.
    pub fn new(dialect: &'a Dialect, schema: Schema, conn: &'a mut Connection) -> Self {
        SqlEngine {
            dialect,
            schema,
            conn,
            phase: Phase::Setup,
            log: Vec::new(),
            clock: None,
            tables_kept: false,
            setup_transaction: false,
            in_transaction: false,
            pending: Vec::new(),
        }
    }

    /// The engine for a connection whose namespace already holds the
    /// tables, emptied (`tables_kept`): `schema` is then not run again.
    pub fn with_tables_kept(mut self, tables_kept: bool) -> Self {
        self.tables_kept = tables_kept;
        self
    }

    /// The engine that inserts a scenario's setup rows in one transaction:
    /// begun at the first `insert_job` or `insert_lease` of the setup
    /// phase, committed before the next other call (or by
    /// [`SqlEngine::settle`]). Without it every row is a commit of its own,
    /// which on PostgreSQL and MariaDB waits for the disk each time: a
    /// 1,001-row scenario took 500 ms instead of 100 ms. Within it,
    /// consecutive rows of one statement are sent as one multi-row INSERT
    /// when its SQL has the single-tuple shape ([`text::values_shape`]; at
    /// most [`MAX_BATCH_ROWS`] rows and [`MAX_BATCH_BINDS`] values each):
    /// one round trip instead of one per row; the log still has an entry
    /// per row. Only setup is grouped; every step runs as the queue would
    /// run it.
    pub fn with_setup_transaction(mut self) -> Self {
        self.setup_transaction = true;
        self
    }

    /// Ends the setup transaction if it is still open: committed when
    /// `ok`, else rolled back (an error on the way already ended it).
    ///
    /// Errors: the commit failed.
    pub async fn settle(&mut self, ok: bool) -> Result<(), EngineError> {
        if ok {
            self.flush().await?;
        }
        self.pending.clear();
        if !std::mem::take(&mut self.in_transaction) {
            return Ok(());
        }
        if ok {
            self.conn.commit().await.map_err(|e| failed("insert_job", e))
        } else {
            let _ = self.conn.rollback().await;
            Ok(())
        }
    }

    /// Begins the setup transaction before the first setup row, and
    /// commits it before any other call.
    async fn group_setup(&mut self, call: &Call) -> Result<(), EngineError> {
        let row = matches!(call, Call::InsertJob(_) | Call::InsertLease(_)) && self.phase == Phase::Setup;
        if row && self.setup_transaction && !self.in_transaction {
            // Marked open before the BEGIN is sent: a run abandoned while it
            // is in flight still rolls back.
            self.in_transaction = true;
            if let Err(e) = self.conn.begin().await {
                self.in_transaction = false;
                return Err(failed("insert_job", e));
            }
        } else if !row && self.in_transaction {
            self.settle(true).await?;
        }
        Ok(())
    }

    /// The SQL `call`'s statement sends on this connection (placeholders
    /// in the driver's style) and its values in bind order; `None` when the
    /// dialect does not define it. For explaining its plan
    /// (`reapcheck bench --scale`).
    pub fn prepared(&self, call: &Call) -> Option<(String, Vec<Value>)> {
        let (name, params) = bindings(call);
        let statement = self.dialect.find(name, self.schema)?;
        let prepared = statement.prepared(self.conn.placeholders());
        let values = values_for(prepared, &params);
        Some((prepared.sql.clone(), values))
    }

    /// The connection the engine runs on (for the commands of
    /// [`crate::backend::PlanKind`]'s module: transactions, statistics,
    /// plans).
    pub fn connection(&mut self) -> &mut Connection {
        self.conn
    }

    /// Forgets the statements logged so far (a bulk load's million
    /// inserts need no log).
    pub fn clear_log(&mut self) {
        self.log.clear();
    }

    /// The statements run so far, in order.
    pub fn into_log(self) -> Vec<Executed> {
        self.log
    }

    async fn run(&mut self, call: &Call) -> Result<(Returned, Reply), EngineError> {
        let (name, params) = bindings(call);
        let spec = contract::spec(name).expect("bindings name contract statements");
        let Some(statement) = self.dialect.find(name, self.schema) else {
            // A queue without leases has no lease table: nothing to read.
            if matches!(call, Call::ReadLeases) && !self.dialect.profile.has(Feature::Leases) {
                return Ok((Returned::Rows(0), Reply::Leases(Vec::new())));
            }
            let why = format!("the dialect does not define `{name}`: its profile declares its feature absent");
            return Err(EngineError { statement: name, kind: EngineErrorKind::Database(why) });
        };
        if self.tables_kept && matches!(call, Call::CreateSchema) {
            return Ok((Returned::Kept, Reply::Done));
        }
        let style = self.conn.placeholders();
        match spec.shape {
            Shape::Script => {
                let mut cursor = 0;
                for command in text::commands_in(&statement.sql, self.conn.grammar()) {
                    let start = statement.sql[cursor..].find(command.trim_start()).map(|i| cursor + i);
                    if let Some(start) = start {
                        cursor = start + command.trim_start().len();
                    }
                    let prepared = text::prepare(&command, style);
                    let values = values_for(&prepared, &params);
                    self.conn.execute(&prepared.sql, &values).await.map_err(|mut e| {
                        if let Some(start) = start {
                            e.message = format!(
                                "{} (in the command at {})",
                                e.message,
                                command_origin(statement, &statement.sql, start)
                            );
                        }
                        failed(name, e)
                    })?;
                }
                Ok((Returned::Done, Reply::Done))
            }
            Shape::Update => {
                let prepared = statement.prepared(style);
                let values = values_for(prepared, &params);
                let n = self.conn.execute(&prepared.sql, &values).await.map_err(|e| failed(name, at(e, statement)))?;
                Ok(match call {
                    Call::InsertJob(_) | Call::InsertLease(_) => (Returned::Done, Reply::Done),
                    _ => (Returned::Changed(n), Reply::Changed(n)),
                })
            }
            Shape::Query(columns) => {
                let prepared = statement.prepared(style);
                let values = values_for(prepared, &params);
                let rows = self
                    .conn
                    .query(&prepared.sql, &values, columns)
                    .await
                    .map_err(|e| failed(name, at(e, statement)))?;
                check_nulls(columns, &rows, absent_columns(call, &self.dialect.profile.policy))
                    .map_err(|e| decode(name, e))?;
                let count = rows.len();
                let reply = rows_to_reply(call, rows).map_err(|e| decode(name, e))?;
                Ok((Returned::Rows(count), reply))
            }
        }
    }

    /// The entry for `call`: the statement, and the parameters its SQL
    /// uses in order of first use.
    fn entry(&self, call: &Call, returned: Returned) -> Executed {
        let (name, params) = bindings(call);
        let Some(statement) = self.dialect.find(name, self.schema) else {
            let origin = "not defined (absent feature)".to_owned();
            return Executed { phase: self.phase, statement: name.to_owned(), origin, binds: Vec::new(), returned };
        };
        let mut binds: Vec<(String, Value)> = Vec::new();
        for used in statement.parameters() {
            if let Some((_, v)) = params.iter().find(|(n, _)| n == used) {
                binds.push((used.clone(), v.clone()));
            }
        }
        let key = statement.name.clone();
        Executed { phase: self.phase, statement: key, origin: statement.origin.clone(), binds, returned }
    }

    /// Runs the dialect's optional `set_clock` with `now`, unless it already
    /// set that instant, so that SQL reading the database's own clock reads
    /// the scenario's (docs/dialect-profile.md).
    async fn set_clock(&mut self, now: Instant) -> Result<(), EngineError> {
        let Some(statement) = self.dialect.find("set_clock", self.schema) else { return Ok(()) };
        if self.clock == Some(now) {
            return Ok(());
        }
        let style = self.conn.placeholders();
        let mut result = Ok(());
        for command in text::commands_in(&statement.sql, self.conn.grammar()) {
            let prepared = text::prepare(&command, style);
            let values = values_for(&prepared, &[("now", Value::Instant(now))]);
            result = self.conn.execute(&prepared.sql, &values).await.map(|_| ()).map_err(|e| failed("set_clock", e));
            if result.is_err() {
                break;
            }
        }
        let returned = match &result {
            Ok(()) => Returned::Done,
            Err(e) => Returned::Failed(e.kind.to_string()),
        };
        let (statement, origin) = (statement.name.clone(), statement.origin.clone());
        let binds = vec![("now".to_owned(), Value::Instant(now))];
        self.log.push(Executed { phase: self.phase, statement, origin, binds, returned });
        result?;
        self.clock = Some(now);
        Ok(())
    }
}

/// `<file>:<line>` of the script command that starts `offset` bytes into
/// `sql`, `statement`'s SQL (or it with `{namespace}` filled in: the same
/// lines), whose first line of SQL is the line its origin names.
fn command_origin(statement: &Statement, sql: &str, offset: usize) -> String {
    let lines_before = sql[..offset.min(sql.len())].matches('\n').count();
    let below_first = lines_before.saturating_sub(text::leading_blank_lines(&statement.sql));
    match statement.origin.rsplit_once(':').and_then(|(file, line)| Some((file, line.parse::<usize>().ok()?))) {
        Some((file, first)) => format!("{file}:{}", first + below_first),
        None => statement.origin.clone(),
    }
}

/// Runs one of the namespace scripts (`create_namespace`, `enter_namespace`,
/// `drop_namespace`) with `namespace` in place of `{namespace}`.
pub async fn namespace_script(
    conn: &mut Connection,
    dialect: &Dialect,
    name: &'static str,
    namespace: &str,
) -> Result<(), EngineError> {
    namespace_script_for(conn, dialect, name, Schema::Standard, namespace).await
}

/// Runs one of the namespace scripts (`create_namespace`, `enter_namespace`,
/// `empty_namespace`, `drop_namespace`; see `contract::NAMESPACE_SCRIPTS`),
/// as `schema`'s tables need it, with `namespace` in place of
/// `{namespace}`. A script the dialect does not define (the optional
/// `empty_namespace`) is an error.
pub async fn namespace_script_for(
    conn: &mut Connection,
    dialect: &Dialect,
    name: &'static str,
    schema: Schema,
    namespace: &str,
) -> Result<(), EngineError> {
    assert!(
        namespace.starts_with("rc_")
            && namespace.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
        "namespaces are generated identifiers"
    );
    let Some(statement) = dialect.find(name, schema) else {
        let why = format!("the dialect does not define `{name}`");
        return Err(EngineError { statement: name, kind: EngineErrorKind::Database(why) });
    };
    let sql = statement.sql.replace(NAMESPACE_MARKER, namespace);
    let mut cursor = 0;
    for command in text::commands_in(&sql, conn.grammar()) {
        let start = sql[cursor..].find(command.trim_start()).map(|i| cursor + i);
        if let Some(start) = start {
            cursor = start + command.trim_start().len();
        }
        let prepared = text::prepare(&command, conn.placeholders());
        conn.execute(&prepared.sql, &[]).await.map_err(|mut e| {
            if let Some(start) = start {
                e.message = format!("{} (in the command at {})", e.message, command_origin(statement, &sql, start));
            }
            failed(name, e)
        })?;
    }
    Ok(())
}

/// `e` naming where `statement` is (`<dialect>/<file>:<line>`) when it
/// timed out: which statement ran past the limit is the whole story.
fn at(mut e: BackendError, statement: &Statement) -> BackendError {
    if e.kind == crate::backend::BackendErrorKind::TimedOut {
        e.message = format!("{} at {}", e.message, statement.origin);
    }
    e
}

fn failed(statement: &'static str, e: BackendError) -> EngineError {
    EngineError { statement, kind: e.into() }
}

impl SqlEngine<'_> {
    /// Whether `call` waits in [`SqlEngine::pending`]: a setup row of a
    /// defined statement, inside the setup transaction.
    fn defers(&self, call: &Call) -> bool {
        matches!(call, Call::InsertJob(_) | Call::InsertLease(_))
            && self.phase == Phase::Setup
            && self.setup_transaction
            && self.dialect.find(bindings(call).0, self.schema).is_some()
    }

    /// Sends the pending setup rows: one multi-row INSERT per
    /// [`MAX_BATCH_ROWS`] / [`MAX_BATCH_BINDS`] when the statement's SQL
    /// can be repeated ([`text::ValuesShape::prepare`]), else one INSERT per row.
    /// Each row is logged as sent; a failed batch logs each of its rows
    /// failed, ends the transaction and returns the error.
    async fn flush(&mut self) -> Result<(), EngineError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        // Every deferred row was a setup row, whatever phase has been
        // marked since: logged as such (coverage skips checkpoint reads).
        let phase = std::mem::replace(&mut self.phase, Phase::Setup);
        let sent = self.send_pending().await;
        self.phase = phase;
        sent
    }

    /// [`SqlEngine::flush`]'s work, in the setup phase.
    async fn send_pending(&mut self) -> Result<(), EngineError> {
        let calls = std::mem::take(&mut self.pending);
        let Some(first) = calls.first() else { return Ok(()) };
        let name = bindings(first).0;
        let statement = self.dialect.find(name, self.schema).expect("deferred calls have a statement");
        let per_row = statement.parameters().len().max(1);
        let size = MAX_BATCH_ROWS.min(MAX_BATCH_BINDS / per_row).max(1);
        let shape = statement.values_shape();
        for chunk in calls.chunks(if shape.is_some() { size } else { 1 }) {
            let result = match shape {
                Some(shape) if chunk.len() > 1 => {
                    let (sql, binds) = shape.prepare(chunk.len(), self.conn.placeholders());
                    let rows: Vec<_> = chunk.iter().map(|c| bindings(c).1).collect();
                    let values: Vec<Value> = binds
                        .iter()
                        .map(|(row, param)| {
                            let value = rows[*row].iter().find(|(n, _)| n == param).map(|(_, v)| v.clone());
                            value.expect("a bound parameter")
                        })
                        .collect();
                    self.conn.execute(&sql, &values).await.map(|_| ()).map_err(|e| failed(name, at(e, statement)))
                }
                _ => self.run(&chunk[0]).await.map(|_| ()),
            };
            if let Err(e) = result {
                for call in chunk {
                    let entry = self.entry(call, Returned::Failed(e.kind.to_string()));
                    self.log.push(entry);
                }
                // The transaction is over (`settle(false)`, without its
                // flush): the rows after this chunk are never sent.
                if std::mem::take(&mut self.in_transaction) {
                    let _ = self.conn.rollback().await;
                }
                return Err(e);
            }
            for call in chunk {
                let entry = self.entry(call, Returned::Done);
                self.log.push(entry);
            }
        }
        Ok(())
    }
}

impl Engine for SqlEngine<'_> {
    async fn call(&mut self, call: Call) -> Result<Reply, EngineError> {
        if self.defers(&call) {
            if self.pending.first().is_some_and(|p| bindings(p).0 != bindings(&call).0) {
                self.flush().await?;
            }
            self.group_setup(&call).await?;
            self.pending.push(call);
            return Ok(Reply::Done);
        }
        self.flush().await?;
        self.group_setup(&call).await?;
        if let Some(now) = call.now() {
            self.set_clock(now).await?;
        }
        match self.run(&call).await {
            Ok((returned, reply)) => {
                // A statement of an absent feature ran no SQL: nothing to log.
                if self.dialect.find(bindings(&call).0, self.schema).is_some() {
                    let entry = self.entry(&call, returned);
                    self.log.push(entry);
                }
                Ok(reply)
            }
            Err(e) => {
                let entry = self.entry(&call, Returned::Failed(e.kind.to_string()));
                self.log.push(entry);
                self.settle(false).await?;
                Err(e)
            }
        }
    }

    fn mark(&mut self, phase: Phase) {
        self.phase = phase;
    }

    async fn end_setup(&mut self) -> Result<(), EngineError> {
        self.settle(true).await
    }
}

fn decode(statement: &'static str, message: String) -> EngineError {
    EngineError { statement, kind: EngineErrorKind::Decode(message) }
}

/// The values in the prepared statement's bind order.
fn values_for(prepared: &Prepared, params: &[(&'static str, Value)]) -> Vec<Value> {
    prepared
        .binds
        .iter()
        .map(|b| {
            params
                .iter()
                .find(|(n, _)| n == b)
                .map(|(_, v)| v.clone())
                .expect("the dialect lint admits only parameters the driver binds")
        })
        .collect()
}

/// The statement a call runs and the parameters bound to it.
fn bindings(call: &Call) -> (&'static str, Vec<(&'static str, Value)>) {
    let text = |s: &str| Value::Text(s.to_owned());
    let at = Value::Instant;
    match call {
        Call::SetTimeZone { zone } => ("set_time_zone", vec![("zone", text(zone))]),
        Call::CreateSchema => ("schema", vec![]),
        Call::InsertJob(r) => (
            "insert_job",
            vec![
                ("id", text(&r.id)),
                ("class", text(&r.class)),
                ("queue", text(&r.queue)),
                ("status", text(r.status.as_str())),
                ("attempts", Value::Int(r.attempts)),
                ("max_retries", Value::Int(r.max_retries)),
                ("claim_timeout", Value::opt_int(r.claim_timeout)),
                ("claim_token", Value::opt_text(r.claim_token.as_deref())),
                ("heartbeat_at", Value::opt_instant(r.heartbeat_at)),
                ("run_at", at(r.run_at)),
                ("updated_at", at(r.updated_at)),
            ],
        ),
        Call::InsertLease(l) => {
            ("insert_lease", vec![("name", text(&l.name)), ("owner", text(&l.owner)), ("expires_at", at(l.expires_at))])
        }
        Call::Claim { id, token, claim_timeout, now, retake } => (
            "claim",
            vec![
                ("id", text(id)),
                ("token", text(token)),
                ("claim_timeout", Value::Int(*claim_timeout)),
                ("now", at(*now)),
                ("beat_cutoff", retake.map_or(Value::Null(crate::engine::Kind::Instant), |r| at(r.beat_cutoff))),
                ("claim_cutoff", retake.map_or(Value::Null(crate::engine::Kind::Instant), |r| at(r.claim_cutoff))),
            ],
        ),
        Call::Heartbeat { id, token, now } => {
            ("heartbeat", vec![("id", text(id)), ("token", text(token)), ("now", at(*now))])
        }
        Call::Complete { id, token, now } => {
            ("complete", vec![("id", text(id)), ("token", text(token)), ("now", at(*now))])
        }
        Call::ReadAttempt { id, token } => ("read_attempt", vec![("id", text(id)), ("token", text(token))]),
        Call::FailRetry { id, token, attempts, now, run_at } => (
            "fail_retry",
            vec![
                ("id", text(id)),
                ("token", text(token)),
                ("attempts", Value::Int(*attempts)),
                ("now", at(*now)),
                ("run_at", at(*run_at)),
            ],
        ),
        Call::FailFinal { id, token, attempts, now } => (
            "fail_final",
            vec![("id", text(id)), ("token", text(token)), ("attempts", Value::Int(*attempts)), ("now", at(*now))],
        ),
        Call::ReapScan { now, queues } => (
            "reap_scan",
            vec![
                ("now", at(*now)),
                ("all_queues", Value::Int(i64::from(queues.is_none()))),
                ("queues", text(&queues.as_deref().unwrap_or_default().join(","))),
            ],
        ),
        Call::ReapRetry { guard, now, run_at } => (
            "reap_retry",
            vec![
                ("id", text(&guard.id)),
                ("attempts", Value::Int(guard.attempts)),
                ("cutoff", at(guard.cutoff)),
                ("now", at(*now)),
                ("run_at", at(*run_at)),
            ],
        ),
        Call::ReapInterrupt { guard, now } => (
            "reap_interrupt",
            vec![
                ("id", text(&guard.id)),
                ("attempts", Value::Int(guard.attempts)),
                ("cutoff", at(guard.cutoff)),
                ("now", at(*now)),
            ],
        ),
        Call::ReapFail { guard, now } => (
            "reap_fail",
            vec![
                ("id", text(&guard.id)),
                ("attempts", Value::Int(guard.attempts)),
                ("cutoff", at(guard.cutoff)),
                ("now", at(*now)),
            ],
        ),
        Call::LeaseAcquire { name, token, expires_at } => {
            ("lease_acquire", vec![("name", text(name)), ("token", text(token)), ("expires_at", at(*expires_at))])
        }
        Call::LeaseTakeover { name, token, now, expires_at } => (
            "lease_takeover",
            vec![("name", text(name)), ("token", text(token)), ("now", at(*now)), ("expires_at", at(*expires_at))],
        ),
        Call::LeaseDefer { id, token, name, now } => {
            ("lease_defer", vec![("id", text(id)), ("token", text(token)), ("name", text(name)), ("now", at(*now))])
        }
        Call::LeaseRenew { name, token, expires_at } => {
            ("lease_renew", vec![("name", text(name)), ("token", text(token)), ("expires_at", at(*expires_at))])
        }
        Call::LeaseRelease { name, token } => ("lease_release", vec![("name", text(name)), ("token", text(token))]),
        Call::ReadJobs => ("read_jobs", vec![]),
        Call::ReadLeases => ("read_leases", vec![]),
    }
}

/// Fails on a NULL in a column the contract declares NOT NULL, or on a row
/// with fewer columns than it declares. Columns are read by position; a
/// row's extra columns after the contract's are ignored.
/// The columns of `call`'s rows that may be NULL although the contract
/// requires a value: under a policy that declares a job field absent
/// (docs/adapter-protocol.md, `read`), `read_jobs` may return NULL for it,
/// since the queue has no column to read it from.
fn absent_columns(call: &Call, policy: &Policy) -> Vec<&'static str> {
    match call {
        Call::ReadJobs => policy.absent.iter().map(|f| f.as_str()).collect(),
        _ => Vec::new(),
    }
}

fn check_nulls(columns: &[Column], rows: &[Vec<Value>], absent: Vec<&'static str>) -> Result<(), String> {
    for row in rows {
        BackendError::check_width(row.len(), columns.len()).map_err(|e| e.to_string())?;
        for (c, v) in columns.iter().zip(row) {
            if !c.nullable && !absent.contains(&c.name) && matches!(v, Value::Null(_)) {
                return Err(format!("column `{}` is NULL but may not be", c.name));
            }
        }
    }
    Ok(())
}

fn rows_to_reply(call: &Call, rows: Vec<Vec<Value>>) -> Result<Reply, String> {
    Ok(match call {
        Call::ReadAttempt { .. } => match rows.as_slice() {
            [] => Reply::Attempt(None),
            [row] => Reply::Attempt(Some((int(&row[0])?, int(&row[1])?))),
            _ => return Err(format!("{} rows for one attempt", rows.len())),
        },
        Call::ReapScan { .. } => Reply::Candidates(
            rows.iter()
                .map(|r| {
                    Ok(Candidate {
                        id: string(&r[0])?,
                        class: string(&r[1])?,
                        attempts: int(&r[2])?,
                        max_retries: int(&r[3])?,
                        claim_timeout: opt(&r[4], int)?,
                        has_beat: match int(&r[5])? {
                            0 => false,
                            1 => true,
                            other => return Err(format!("has_beat is {other}, not 0 or 1")),
                        },
                        last_seen: None,
                    })
                })
                .collect::<Result<_, String>>()?,
        ),
        Call::ReadJobs => Reply::Jobs(
            rows.iter()
                .map(|r| {
                    Ok(JobState {
                        id: string(&r[0])?,
                        status: Status::from_column(&string(&r[1])?).ok_or("unknown status")?,
                        // NULL only where the policy declares the field
                        // absent (`check_nulls`): a placeholder no
                        // comparison reads (`relax::hide_state`).
                        attempts: opt(&r[2], int)?.unwrap_or(0),
                        claim_token: opt(&r[3], string)?,
                        heartbeat_at: opt(&r[4], instant)?,
                        run_at: opt(&r[5], instant)?.unwrap_or(ABSENT_INSTANT),
                        updated_at: opt(&r[6], instant)?.unwrap_or(ABSENT_INSTANT),
                        failed_at: opt(&r[7], instant)?,
                        completed_at: opt(&r[8], instant)?,
                        last_error: opt(&r[9], string)?
                            .map(|e| LastError::from_column(&e).ok_or(format!("unknown last_error `{e}`")))
                            .transpose()?,
                    })
                })
                .collect::<Result<_, String>>()?,
        ),
        Call::ReadLeases => Reply::Leases(
            rows.iter()
                .map(|r| Ok(LeaseRow { name: string(&r[0])?, owner: string(&r[1])?, expires_at: instant(&r[2])? }))
                .collect::<Result<_, String>>()?,
        ),
        other => return Err(format!("{other:?} returns no rows")),
    })
}

/// What an absent instant reads as: the epoch, never compared.
const ABSENT_INSTANT: Instant = Instant::from_unix_micros(0);

fn int(v: &Value) -> Result<i64, String> {
    match v {
        Value::Int(i) => Ok(*i),
        other => Err(format!("expected an integer, got {other:?}")),
    }
}

fn string(v: &Value) -> Result<String, String> {
    match v {
        Value::Text(s) => Ok(s.clone()),
        other => Err(format!("expected text, got {other:?}")),
    }
}

fn instant(v: &Value) -> Result<Instant, String> {
    match v {
        Value::Instant(i) => Ok(*i),
        other => Err(format!("expected an instant, got {other:?}")),
    }
}

fn opt<T>(v: &Value, read: fn(&Value) -> Result<T, String>) -> Result<Option<T>, String> {
    match v {
        Value::Null(_) => Ok(None),
        other => read(other).map(Some),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Kind;
    use crate::policy::Field;

    fn job_columns() -> &'static [Column] {
        match contract::CONTRACT.iter().find(|s| s.name == "read_jobs").map(|s| s.shape) {
            Some(Shape::Query(columns)) => columns,
            other => panic!("read_jobs is a query: {other:?}"),
        }
    }

    /// A `read_jobs` row of a queue without `updated_at` and attempts.
    fn row() -> Vec<Value> {
        vec![
            Value::Text("a".into()),
            Value::Text("pending".into()),
            Value::Null(Kind::Int),
            Value::Null(Kind::Text),
            Value::Null(Kind::Instant),
            Value::Instant(Instant::from_unix_micros(5)),
            Value::Null(Kind::Instant),
            Value::Null(Kind::Instant),
            Value::Null(Kind::Instant),
            Value::Null(Kind::Text),
        ]
    }

    #[test]
    fn a_job_field_the_policy_declares_absent_may_be_null() {
        let rows = vec![row()];
        let reference = Policy::default();
        let e = check_nulls(job_columns(), &rows, absent_columns(&Call::ReadJobs, &reference)).unwrap_err();
        assert!(e.contains("`attempts` is NULL"), "{e}");
        let only_attempts = Policy { absent: [Field::Attempts].into_iter().collect(), ..Policy::default() };
        let e = check_nulls(job_columns(), &rows, absent_columns(&Call::ReadJobs, &only_attempts)).unwrap_err();
        assert!(e.contains("`updated_at` is NULL"), "{e}");
        let both = Policy { absent: [Field::Attempts, Field::UpdatedAt].into_iter().collect(), ..Policy::default() };
        check_nulls(job_columns(), &rows, absent_columns(&Call::ReadJobs, &both)).unwrap();
        let scan = Call::ReapScan { now: Instant::from_unix_micros(0), queues: None };
        assert!(absent_columns(&scan, &both).is_empty(), "only read_jobs reads the outcome's fields");
        match rows_to_reply(&Call::ReadJobs, rows).unwrap() {
            Reply::Jobs(jobs) => {
                assert_eq!((jobs[0].attempts, jobs[0].updated_at), (0, ABSENT_INSTANT));
                assert_eq!(jobs[0].run_at, Instant::from_unix_micros(5));
            }
            other => panic!("{other:?}"),
        }
    }
}
