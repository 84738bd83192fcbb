//! Isolation of scenario runs on a database: every run starts in a
//! namespace of its own, with empty tables, and nothing it does reaches
//! another run.
//!
//! Making a namespace and its tables costs most of a short scenario's time
//! (78% on PostgreSQL and 81% on MariaDB when every run made its own,
//! measured for issue 13). So a run gives its connection back as a
//! [`Lane`]: the connection stays inside its namespace with the tables, and
//! the next run with the same tables ([`lane_key`]) only empties them with
//! the dialect's `empty_namespace`, whose completeness the dialect check
//! checks (`dialect::emptying`). Statements stay prepared across runs.
//!
//! A lane is reused only when nothing of the run can stay behind:
//! - the run finished without an error, or its error was a statement's
//!   (the server refused it, or its rows did not decode) after the tables
//!   were whole, and on PostgreSQL, CockroachDB, MySQL and MariaDB: the
//!   session is rolled back and kept (a lost connection, a time limit, an
//!   interrupt or a panic gives the lane up, and so does any error on
//!   SQLite and SQL Server);
//! - its session settings are back to their defaults: PostgreSQL and
//!   CockroachDB `RESET ALL` and enter the namespace again before each
//!   reuse; MySQL and MariaDB set `time_zone` back to the session's first
//!   value after a run that set one; on SQLite and SQL Server a run that
//!   set a session time zone gives its lane up;
//! - the dialect defines `empty_namespace` (a user's port without it gets
//!   a new namespace per run, as before).
//!
//! Otherwise the namespace is dropped at the end of the run, as it always
//! was. Idle lanes are dropped when their server closes
//! ([`Server::release_lanes`]); a process that dies leaves them to the
//! next run's sweep ([`crate::namespace`]).
//!
//! A namespace script that runs without an error is not trusted to have
//! done its job: after `create_namespace` and `drop_namespace` the catalog
//! must (not) list the namespace, and after `enter_namespace` the session
//! must resolve tables in it ([`NamespaceFault`]). Before the first run of
//! a dialect on a server, [`prove`] makes, enters, fills (`schema`) and
//! drops a namespace of its own with the dialect's scripts, so a no-op
//! `drop_namespace`, a `DROP SCHEMA` without `CASCADE` or a no-op
//! `enter_namespace` fails every run, naming the script and its
//! `file:line`, before any scenario makes a namespace it cannot remove.

use std::hash::{DefaultHasher, Hash, Hasher};

use crate::backend::{Connection, Lane, Server};
use crate::dialect::Dialect;
use crate::dialect::contract::NAMESPACE_MARKER;
use crate::dialect::text;
use crate::engine::{EngineError, EngineErrorKind, Phase};
use crate::namespace;
use crate::scenario::Schema;
use crate::sql::namespace_script_for;
use crate::statement_log::{Executed, Returned};

/// What a namespace script failed to do although it ran without an error,
/// as the catalog shows it afterwards.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NamespaceFault {
    /// After `create_namespace` the server lists no such schema or database.
    NotCreated {
        /// `<dialect>/<file>:<line>` of the script.
        origin: String,
        /// The namespace it was to create.
        namespace: String,
    },
    /// After `enter_namespace` the session resolves unqualified tables
    /// somewhere else.
    NotEntered {
        /// `<dialect>/<file>:<line>` of the script.
        origin: String,
        /// The namespace it was to enter.
        namespace: String,
        /// Where the session is instead (its schema and/or database).
        found: String,
    },
    /// After `drop_namespace` the server still lists the namespace.
    NotDropped {
        /// `<dialect>/<file>:<line>` of the script.
        origin: String,
        /// The namespace it was to drop.
        namespace: String,
    },
}

impl NamespaceFault {
    /// The script at fault.
    pub fn statement(&self) -> &'static str {
        match self {
            NamespaceFault::NotCreated { .. } => "create_namespace",
            NamespaceFault::NotEntered { .. } => "enter_namespace",
            NamespaceFault::NotDropped { .. } => "drop_namespace",
        }
    }
}

impl std::fmt::Display for NamespaceFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NamespaceFault::NotCreated { origin, namespace } => write!(
                f,
                "{origin}: create_namespace ran without an error but the server lists no {namespace}: make it \
                 create the schema or database {{namespace}}"
            ),
            NamespaceFault::NotEntered { origin, namespace, found } => write!(
                f,
                "{origin}: enter_namespace ran without an error but the session still resolves tables in \
                 {found}, not in {namespace}: make it switch this connection to {{namespace}} (PostgreSQL \
                 `SET search_path TO {{namespace}}`, MySQL `USE {{namespace}}`)"
            ),
            NamespaceFault::NotDropped { origin, namespace } => write!(
                f,
                "{origin}: drop_namespace ran without an error but {namespace} is still on the server: make it \
                 remove the namespace and everything in it (PostgreSQL `DROP SCHEMA {{namespace}} CASCADE`, MySQL \
                 `DROP DATABASE {{namespace}}`)"
            ),
        }
    }
}

impl From<NamespaceFault> for EngineError {
    fn from(fault: NamespaceFault) -> EngineError {
        EngineError { statement: fault.statement(), kind: EngineErrorKind::Namespace(fault.to_string()) }
    }
}

/// `<dialect>/<file>:<line>` of script `name`, for messages.
fn origin_of(dialect: &Dialect, name: &str, schema: Schema) -> String {
    dialect.find(name, schema).map(|s| s.origin.clone()).unwrap_or_else(|| format!("{}/?", dialect.name))
}

/// Whether `conn`'s namespaces are in a catalog: not on SQLite, where each
/// connection is a database of its own and the scripts may be blank.
fn has_catalog(conn: &Connection) -> bool {
    !matches!(conn, Connection::Sqlite(_))
}

fn catalog_failed(statement: &'static str) -> impl FnOnce(crate::backend::BackendError) -> EngineError {
    move |e| EngineError { statement, kind: e.into() }
}

/// After `create_namespace` ran on `conn`: the catalog lists `namespace`.
pub async fn check_created(
    conn: &mut Connection,
    dialect: &Dialect,
    schema: Schema,
    namespace: &str,
) -> Result<(), EngineError> {
    if !has_catalog(conn) || conn.namespace_exists(namespace).await.map_err(catalog_failed("create_namespace"))? {
        return Ok(());
    }
    Err(NamespaceFault::NotCreated {
        origin: origin_of(dialect, "create_namespace", schema),
        namespace: namespace.to_owned(),
    }
    .into())
}

/// After `enter_namespace` ran on `conn`: the session resolves unqualified
/// tables in `namespace` (PostgreSQL's `current_schema()`, CockroachDB's
/// `current_database()`, MySQL's `DATABASE()`, SQL Server's `DB_NAME()`).
pub async fn check_entered(
    conn: &mut Connection,
    dialect: &Dialect,
    schema: Schema,
    namespace: &str,
) -> Result<(), EngineError> {
    let found = conn.current_namespaces().await.map_err(catalog_failed("enter_namespace"))?;
    if found.is_empty() || found.iter().any(|f| f.as_deref() == Some(namespace)) {
        return Ok(());
    }
    let found = found.iter().map(|f| f.as_deref().unwrap_or("no schema")).collect::<Vec<_>>().join(" and ");
    let origin = origin_of(dialect, "enter_namespace", schema);
    Err(NamespaceFault::NotEntered { origin, namespace: namespace.to_owned(), found }.into())
}

/// After `drop_namespace` ran on `conn` without an error: the catalog no
/// longer lists `namespace`.
pub async fn check_dropped(conn: &mut Connection, dialect: &Dialect, namespace: &str) -> Result<(), EngineError> {
    if !conn.namespace_exists(namespace).await.map_err(catalog_failed("drop_namespace"))? {
        return Ok(());
    }
    Err(NamespaceFault::NotDropped {
        origin: origin_of(dialect, "drop_namespace", Schema::Standard),
        namespace: namespace.to_owned(),
    }
    .into())
}

/// Which dialects' proofs ([`prove`]) stand for each other: the same
/// dialect name, namespace scripts and table script.
fn proof_key(dialect: &Dialect) -> u64 {
    let mut hasher = DefaultHasher::new();
    dialect.name.hash(&mut hasher);
    for name in ["create_namespace", "enter_namespace", "drop_namespace", "schema"] {
        dialect.find(name, Schema::Standard).map(|s| &s.sql).hash(&mut hasher);
    }
    hasher.finish()
}

/// Proves once per server that `dialect`'s namespace scripts do their
/// job, before any scenario makes a namespace with them: a namespace of
/// its own is made (`create_namespace`, then listed in the catalog),
/// entered (`enter_namespace`, then the session's schema or database
/// read back), given the tables (`schema`, so that a drop that leaves a
/// namespace with tables in it shows), and dropped (`drop_namespace`,
/// then no longer listed). The answer is kept on the server; a connection
/// that failed is not kept, so the next run tries again.
///
/// Errors: the first script that failed or did not do its job, its
/// `file:line` in the message; a namespace the proof made and could not
/// drop is left to the sweep.
pub async fn prove(server: &Server, dialect: &Dialect) -> Result<(), EngineError> {
    let key = proof_key(dialect);
    let mut proofs = server.proofs().lock().await;
    if let Some(proof) = proofs.get(&key) {
        return proof
            .clone()
            .map_err(|(statement, why)| EngineError { statement, kind: EngineErrorKind::Namespace(why) });
    }
    let result = prove_once(server, dialect).await;
    match &result {
        Ok(()) => {
            proofs.insert(key, Ok(()));
        }
        Err(e) if matches!(e.kind, EngineErrorKind::Connection(_) | EngineErrorKind::Interrupted(_)) => {}
        Err(e) => {
            proofs.insert(key, Err((e.statement, e.kind.to_string())));
        }
    }
    result
}

/// One proof (see [`prove`]) on a new connection, the namespace dropped
/// on another if the proof failed before its own drop did.
async fn prove_once(server: &Server, dialect: &Dialect) -> Result<(), EngineError> {
    let mut conn = server.open().await.map_err(catalog_failed("connect"))?;
    let ns = namespace::fresh();
    let result = prove_on(&mut conn, dialect, &ns).await;
    conn.close().await;
    if result.is_err()
        && let Ok(mut other) = server.open().await
    {
        let _ = namespace_script_for(&mut other, dialect, "drop_namespace", Schema::Standard, &ns).await;
        other.close().await;
    }
    result
}

/// The scripts of a proof on `conn`, each error given its script's
/// `file:line` and the note that reapcheck ran it to prove the scripts.
async fn prove_on(conn: &mut Connection, dialect: &Dialect, ns: &str) -> Result<(), EngineError> {
    let standard = Schema::Standard;
    let proved = |name: &'static str| {
        let origin = origin_of(dialect, name, standard);
        move |e: EngineError| match e.kind {
            EngineErrorKind::Connection(_) | EngineErrorKind::Interrupted(_) => e,
            why => EngineError {
                statement: e.statement,
                kind: EngineErrorKind::Namespace(format!(
                    "{origin}: {name} failed on a namespace reapcheck made to prove the namespace scripts, \
                     before any scenario: {why}"
                )),
            },
        }
    };
    namespace_script_for(conn, dialect, "create_namespace", standard, ns).await.map_err(proved("create_namespace"))?;
    check_created(conn, dialect, standard, ns).await?;
    namespace_script_for(conn, dialect, "enter_namespace", standard, ns).await.map_err(proved("enter_namespace"))?;
    check_entered(conn, dialect, standard, ns).await?;
    namespace_script_for(conn, dialect, "schema", standard, ns).await.map_err(proved("schema"))?;
    // As a run's teardown does: no transaction is left open around the drop.
    let _ = conn.rollback().await;
    namespace_script_for(conn, dialect, "drop_namespace", standard, ns).await.map_err(proved("drop_namespace"))?;
    check_dropped(conn, dialect, ns).await
}

/// A connection inside a namespace, ready for one run.
pub struct Acquired {
    /// The connection and its namespace.
    pub lane: Lane,
    /// True when `schema`'s tables are already there (made by an earlier
    /// run, emptied since): the run must not make them again.
    pub tables_kept: bool,
    /// The key it is kept under after the run, `None` when it cannot be
    /// kept (the dialect has no `empty_namespace`).
    pub key: Option<u64>,
}

/// Which runs may share a lane: the same dialect name, instant encoding,
/// namespace scripts and table script for `schema`. `None` when the dialect
/// defines no `empty_namespace`. Mutants of other statements share their
/// original's lanes.
pub fn lane_key(dialect: &Dialect, schema: Schema) -> Option<u64> {
    let empty = dialect.find("empty_namespace", schema)?;
    let mut hasher = DefaultHasher::new();
    dialect.name.hash(&mut hasher);
    format!("{:?}", dialect.profile.instants).hash(&mut hasher);
    for name in ["create_namespace", "enter_namespace", "drop_namespace", "schema"] {
        dialect.find(name, schema).map(|s| &s.sql).hash(&mut hasher);
    }
    empty.sql.hash(&mut hasher);
    Some(hasher.finish())
}

/// A connection in a namespace for a run of a `schema` scenario on
/// `dialect`: a kept lane, emptied (and, where the product can, its session
/// reset and the namespace entered again), or else a new namespace made
/// and entered on a new connection. Every namespace script run is added to
/// `log` (phase setup).
///
/// Errors: the connection could not open (statement `connect`), or a
/// namespace script failed (the script's name); a namespace made before
/// the failure is dropped first.
pub async fn acquire(
    server: &Server,
    dialect: &Dialect,
    schema: Schema,
    log: &mut Vec<Executed>,
) -> Result<Acquired, EngineError> {
    prove(server, dialect).await?;
    let key = lane_key(dialect, schema);
    if let Some(key) = key {
        while let Some(mut lane) = server.take_lane(key) {
            let mut entries = Vec::new();
            match warm(&mut lane, dialect, schema, &mut entries).await {
                Ok(()) => {
                    log.extend(entries);
                    return Ok(Acquired { lane, tables_kept: true, key: Some(key) });
                }
                // The session died while it was idle (a server restart):
                // drop what can be dropped and try the next lane.
                Err(e) if matches!(e.kind, EngineErrorKind::Connection(_)) => {
                    let _ = drop_lane(server, dialect, lane, &mut Vec::new()).await;
                }
                Err(e) => {
                    log.extend(entries);
                    let _ = drop_lane(server, dialect, lane, log).await;
                    return Err(e);
                }
            }
        }
    }
    fresh(server, dialect, schema, key, log).await
}

/// After a run on `acquired`'s lane: keeps the lane when `reusable` (see
/// the module's rules), else drops its namespace (logged, phase teardown)
/// and closes the connection.
///
/// Errors: the namespace could not be dropped, checked on a new connection
/// first ([`confirm_dropped`]).
pub async fn release(
    server: &Server,
    dialect: &Dialect,
    acquired: Acquired,
    reusable: bool,
    log: &mut Vec<Executed>,
) -> Result<(), EngineError> {
    let Acquired { mut lane, key, .. } = acquired;
    if let (true, Some(key)) = (reusable, key) {
        lane.key = key;
        server.keep_lane(lane);
        return Ok(());
    }
    drop_lane(server, dialect, lane, log).await
}

/// How long dropping an abandoned run's namespace may take before it is
/// left to the next run's sweep.
pub const ABANDONED_TEARDOWN_LIMIT: std::time::Duration = std::time::Duration::from_secs(30);

/// Releases the lane of a run abandoned mid-statement (Ctrl-C or SIGTERM
/// while a request was in flight). Its connection may be in the middle of
/// a request, so nothing more is sent on it: it is dropped (the server ends
/// the session and rolls its transaction back), and the namespace is
/// dropped on a new connection, within [`ABANDONED_TEARDOWN_LIMIT`]; past
/// it the namespace is left to the next run's sweep. Never waits longer.
pub async fn release_abandoned(server: &Server, dialect: &Dialect, acquired: Acquired) -> Result<(), EngineError> {
    let Lane { conn, namespace, .. } = acquired.lane;
    drop(conn);
    let failed = |why: &str| EngineError {
        statement: "drop_namespace",
        kind: EngineErrorKind::Database(format!("{namespace} was not dropped after an interrupt: {why}")),
    };
    let dropped = confirm_dropped(server, dialect, &namespace, failed("the drop failed"));
    match tokio::time::timeout(ABANDONED_TEARDOWN_LIMIT, dropped).await {
        Ok(result) => result,
        Err(_) => {
            Err(failed(&format!("no answer within {} s; the next run removes it", ABANDONED_TEARDOWN_LIMIT.as_secs())))
        }
    }
}

/// Whether a run that ended with `failure` (`None`: it passed), and did or
/// did not set a session time zone, leaves `acquired`'s lane fit for
/// another run (module rules), after undoing what it can
/// ([`Lane::restore`]: a rollback, the session's zone). A statement error
/// keeps the lane once the tables are whole (kept, or made by a `schema`
/// that ran; `log` is the run's); a lost connection, a time limit, an
/// interrupt or a panic never does.
pub async fn reusable(
    acquired: &mut Acquired,
    failure: Option<&EngineErrorKind>,
    set_time_zone: bool,
    log: &[Executed],
) -> bool {
    let tables_whole = || {
        acquired.tables_kept
            || log.iter().any(|e| matches!(e.statement.as_str(), "schema" | "legacy_schema") && !e.failed())
    };
    let failed = match failure {
        None => false,
        Some(EngineErrorKind::Database(_) | EngineErrorKind::Decode(_) | EngineErrorKind::OutOfRange(_))
            if tables_whole() =>
        {
            true
        }
        Some(_) => return false,
    };
    acquired.lane.restore(failed, set_time_zone).await
}

/// Makes the lane ready for another run: the session reset where it can
/// be, the namespace entered again after it, the tables emptied.
async fn warm(lane: &mut Lane, dialect: &Dialect, schema: Schema, log: &mut Vec<Executed>) -> Result<(), EngineError> {
    let reset = lane.conn.reset_settings().await.map_err(|e| EngineError { statement: "connect", kind: e.into() })?;
    if reset {
        scripted(&mut lane.conn, dialect, "enter_namespace", schema, &lane.namespace, Phase::Setup, log).await?;
    }
    scripted(&mut lane.conn, dialect, "empty_namespace", schema, &lane.namespace, Phase::Setup, log).await
}

/// A new namespace, made and entered on a new connection.
async fn fresh(
    server: &Server,
    dialect: &Dialect,
    schema: Schema,
    key: Option<u64>,
    log: &mut Vec<Executed>,
) -> Result<Acquired, EngineError> {
    let connect_failed = |e: crate::backend::BackendError| EngineError { statement: "connect", kind: e.into() };
    let mut conn = server.open().await.map_err(connect_failed)?;
    if let Err(e) = conn.set_instant_encoding(dialect.profile.instants).await {
        conn.close().await;
        return Err(connect_failed(e));
    }
    let namespace = namespace::fresh();
    let drop = drop_commands(dialect, &conn, &namespace);
    let mut lane = Lane { conn, namespace, key: key.unwrap_or_default(), drop };
    let ns = lane.namespace.clone();
    let mut made = scripted(&mut lane.conn, dialect, "create_namespace", schema, &ns, Phase::Setup, log).await;
    if made.is_ok() {
        made = checked(check_created(&mut lane.conn, dialect, schema, &ns).await, log);
    }
    if made.is_ok() {
        made = scripted(&mut lane.conn, dialect, "enter_namespace", schema, &ns, Phase::Setup, log).await;
    }
    if made.is_ok() {
        made = checked(check_entered(&mut lane.conn, dialect, schema, &ns).await, log);
    }
    match made {
        Ok(()) => Ok(Acquired { lane, tables_kept: false, key }),
        Err(e) => {
            // As a run always did: the drop is tried (and logged) even when
            // the namespace may not exist, and its error is not the one
            // reported.
            let _ = drop_lane(server, dialect, lane, log).await;
            Err(e)
        }
    }
}

/// Drops the lane's namespace on its connection (logged, phase teardown),
/// closes the connection, and confirms a failed drop on a new one.
async fn drop_lane(server: &Server, dialect: &Dialect, lane: Lane, log: &mut Vec<Executed>) -> Result<(), EngineError> {
    let Lane { mut conn, namespace, .. } = lane;
    // A run abandoned mid-setup (an interrupt) may leave its setup
    // transaction open, and a drop inside it would be rolled back when the
    // connection closes: end it first (an error means there was none).
    let _ = conn.rollback().await;
    let mut dropped =
        scripted(&mut conn, dialect, "drop_namespace", Schema::Standard, &namespace, Phase::Teardown, log).await;
    if dropped.is_ok() {
        dropped = checked(check_dropped(&mut conn, dialect, &namespace).await, log);
    }
    conn.close().await;
    match dropped {
        Ok(()) => Ok(()),
        Err(e) => confirm_dropped(server, dialect, &namespace, e).await,
    }
}

/// The dialect's `drop_namespace` commands for `namespace`, prepared for
/// `conn`'s driver: what [`Server::release_lanes`] runs for an idle lane.
fn drop_commands(dialect: &Dialect, conn: &Connection, namespace: &str) -> Vec<String> {
    let sql = dialect.statement("drop_namespace", Schema::Standard).sql.replace(NAMESPACE_MARKER, namespace);
    text::commands_in(&sql, conn.grammar()).iter().map(|c| text::prepare(c, conn.placeholders()).sql).collect()
}

/// `check`, also written into the log entry of the script it checked (the
/// last one): a script that did not do its job is logged as failed.
fn checked(check: Result<(), EngineError>, log: &mut [Executed]) -> Result<(), EngineError> {
    if let (Err(e), Some(last)) = (&check, log.last_mut()) {
        last.returned = Returned::Failed(e.kind.to_string());
    }
    check
}

/// Runs namespace script `name` and logs it.
async fn scripted(
    conn: &mut Connection,
    dialect: &Dialect,
    name: &'static str,
    schema: Schema,
    namespace: &str,
    phase: Phase,
    log: &mut Vec<Executed>,
) -> Result<(), EngineError> {
    let result = namespace_script_for(conn, dialect, name, schema, namespace).await;
    let returned = match &result {
        Ok(()) => Returned::Done,
        Err(e) => Returned::Failed(e.kind.to_string()),
    };
    let (statement, origin) = match dialect.find(name, schema) {
        Some(s) => (s.name.clone(), s.origin.clone()),
        None => (name.to_owned(), String::new()),
    };
    log.push(Executed { phase, statement, origin, binds: Vec::new(), returned });
    result
}

/// After `drop_namespace` failed with `failed` on the run's connection:
/// `Ok` when the namespace is gone after all, else `failed` unless a drop
/// on a new connection succeeds. A failed drop is not proof of a namespace
/// left behind: MariaDB finishes a `DROP DATABASE` whose connection is
/// killed or cut mid-statement and only then reports the lost connection,
/// so the run's own connection cannot say whether the drop happened; the
/// catalog, read on a new one, can. A connection lost before the drop is
/// retried on a new one, so the namespace is not left behind either.
pub async fn confirm_dropped(
    server: &Server,
    dialect: &Dialect,
    namespace: &str,
    failed: EngineError,
) -> Result<(), EngineError> {
    if let Ok(names) = server.namespaces().await
        && !names.iter().any(|n| n == namespace)
    {
        return Ok(());
    }
    let Ok(mut conn) = server.open().await else { return Err(failed) };
    let mut again = namespace_script_for(&mut conn, dialect, "drop_namespace", Schema::Standard, namespace).await;
    if again.is_ok() {
        again = check_dropped(&mut conn, dialect, namespace).await;
    }
    conn.close().await;
    again.map_err(|_| failed)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::dialect::Source;
    use crate::reach::test_url;
    use crate::runner;
    use crate::scenario::{LoadedScenario, parse_named};
    use crate::target::Target;

    /// Leaves a stale processing row behind it.
    const LEAVES_A_ROW: &str = "
description: leaves a stale processing row in the table
classes: { Mail: { timeout: 60 } }
jobs:
  - { id: left, class: Mail, status: processing, attempts: 1, claimed: -121m }
steps: []
expect:
  jobs:
    left: { status: processing }
";

    /// Would reap `left` (reap: 1) and list it if it were still there.
    const FAILS_ON_LEFTOVERS: &str = "
description: a reap that finds nothing, in a table that must hold only its own row
classes: { Mail: { timeout: 3600 } }
jobs:
  - { id: fresh, class: Mail, status: processing, attempts: 1, claimed: -10m }
steps:
  - reap
expect:
  steps: [ { reap: 0 } ]
  jobs:
    fresh: { status: processing }
";

    fn scenario(name: &str, yaml: &str) -> LoadedScenario {
        parse_named(name, Path::new(name), yaml).unwrap_or_else(|e| panic!("{name}: {e:?}"))
    }

    /// Runs `LEAVES_A_ROW` then `FAILS_ON_LEFTOVERS` on `server` and returns
    /// whether the second matched the model and whether it reused the
    /// first's tables (its log shows `schema` kept).
    async fn second_after_first(server: &Server, dialect: &Dialect) -> (bool, bool) {
        let first = scenario("leaves-a-row.yaml", LEAVES_A_ROW);
        let second = scenario("fails-on-leftovers.yaml", FAILS_ON_LEFTOVERS);
        let run = runner::run_logged(server, dialect, &first, None).await;
        run.outcome.expect("the first scenario runs");
        let run = runner::run_logged(server, dialect, &second, None).await;
        let model = runner::model_document(&second.scenario, &dialect.profile).await;
        let matches = run.outcome.is_ok_and(|o| runner::compared_document(o, &dialect.profile) == model);
        let reused = run.log.iter().any(|e| e.statement == "schema" && e.returned == Returned::Kept);
        (matches, reused)
    }

    /// The shipped dialect's second run sees none of the first's rows,
    /// although it ran in the first's namespace and tables; a copy whose
    /// `empty_namespace` forgets `jobs` fails the same pair (so the check
    /// can fail).
    async fn no_leftovers(server: Server, name: &str) {
        let dialect = Dialect::load(&Source::Embedded, name).expect("a shipped dialect loads");
        assert_eq!(second_after_first(&server, &dialect).await, (true, true), "{name}: the shipped dialect");
        let forgetful = dialect.with_sql("empty_namespace", "DELETE FROM job_leases".to_owned());
        assert_eq!(second_after_first(&server, &forgetful).await, (false, true), "{name}: leftovers must show");
        assert!(server.release_lanes().await.is_empty(), "{name}: lanes dropped");
        server.close().await;
    }

    #[tokio::test]
    async fn a_scenario_never_sees_the_rows_of_the_one_before_on_sqlite() {
        no_leftovers(crate::backend::sqlite().await.expect("sqlite"), "sqlite").await;
    }

    #[tokio::test]
    async fn a_scenario_never_sees_the_rows_of_the_one_before_on_postgres() {
        let Some(url) = test_url(Target::Postgres) else { return };
        no_leftovers(crate::backend::postgres(&url).await.expect("postgres is reachable"), "postgres").await;
    }

    #[tokio::test]
    async fn a_scenario_never_sees_the_rows_of_the_one_before_on_mariadb() {
        let Some(url) = test_url(Target::Mariadb) else { return };
        no_leftovers(crate::backend::mysql(&url).await.expect("mariadb is reachable"), "mysql").await;
    }

    /// With one session allowed, runs on the standard and legacy tables
    /// alternate: each open finds the pool held by the other schema's idle
    /// lane and must evict it instead of waiting for ever.
    #[tokio::test]
    async fn one_session_serves_alternating_schemas_on_postgres() {
        let Some(url) = test_url(Target::Postgres) else { return };
        let mut server = crate::backend::postgres(&url).await.expect("postgres is reachable");
        server.limit_connections(1);
        let dialect = Dialect::load(&Source::Embedded, "postgres").expect("loads");
        let standard = scenario("standard.yaml", FAILS_ON_LEFTOVERS);
        let legacy = scenario("legacy.yaml", &format!("schema: legacy\n{FAILS_ON_LEFTOVERS}"));
        for s in [&standard, &legacy, &standard, &legacy] {
            let run = tokio::time::timeout(std::time::Duration::from_secs(60), runner::run_on(&server, &dialect, s));
            run.await.expect("no deadlock").expect("it runs");
        }
        assert!(server.release_lanes().await.is_empty());
        server.close().await;
    }
}
