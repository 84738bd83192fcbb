//! The reaper at scale (`reapcheck bench --scale`): a table grown to each
//! of several sizes through the dialect's own `insert_job`, with the same
//! processing rows (and the same stale ones among them) at every size, and
//! at each size the time of `reap_scan`, of the guarded reap UPDATEs for
//! every stale row, and the plan the database chose for the scan.
//!
//! A reaper runs its scan on every poll of every worker, so the scan must
//! cost the same whatever the number of finished rows: the growth ratio
//! t(largest)/t(smallest) of the scan's median time should stay near 1.
//! [`judge`] flags a plan that reads the whole table or every processing
//! row, with the plan line that shows it.
//!
//! Everything runs in a namespace of its own, dropped afterwards; the reap
//! UPDATEs run in a transaction that is rolled back, so every size sees
//! the same stale rows.

pub mod judge;
pub mod rows;

use std::time::{Duration, Instant as Clock};

use crate::backend::{BackendError, Connection, PlanKind, Server};
use crate::dialect::Dialect;
use crate::engine::{Call, Engine, EngineError, EngineErrorKind, ReapGuard, Reply};
use crate::isolation;
use crate::scenario::Schema;
use crate::sql::SqlEngine;
use crate::time::Duration as Span;

pub use judge::{Flag, Planner, judge};
pub use rows::Shape;

/// Rows inserted per transaction while loading.
const BATCH: usize = 5_000;

/// What to measure.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Table sizes in rows, ascending; each is reached by adding rows.
    pub sizes: Vec<usize>,
    /// The processing and stale rows, the same at every size.
    pub shape: Shape,
    /// Timed scans per size (the median is reported); one untimed scan
    /// runs first.
    pub runs: usize,
}

/// One size's figures.
#[derive(Clone, Debug)]
pub struct SizeReport {
    /// Rows in `jobs`.
    pub rows: usize,
    /// Seconds the rows added for this size took to load.
    pub load: Duration,
    /// Median time of one `reap_scan`.
    pub scan: Duration,
    /// PostgreSQL: median time of one `reap_scan` under the generic plan
    /// (a prepared statement run more than five times may get it).
    pub scan_generic: Option<Duration>,
    /// Time of one guarded `reap_retry` per stale row, all of them, in
    /// one transaction (rolled back).
    pub apply: Duration,
    /// The scan's plan, one line per plan line.
    pub plan: Vec<String>,
    /// PostgreSQL: the generic plan.
    pub plan_generic: Option<Vec<String>>,
}

/// Everything measured on one target.
#[derive(Clone, Debug)]
pub struct ScaleReport {
    /// How the plans read.
    pub planner: Planner,
    /// Per size, ascending.
    pub sizes: Vec<SizeReport>,
}

impl ScaleReport {
    /// t(largest)/t(smallest) of the scan's median, `None` with fewer than
    /// two sizes or a zero time.
    pub fn growth(&self) -> Option<f64> {
        ratio(self.sizes.first()?.scan, self.sizes.last()?.scan, self.sizes.len())
    }

    /// The same for the generic plan (PostgreSQL).
    pub fn growth_generic(&self) -> Option<f64> {
        ratio(self.sizes.first()?.scan_generic?, self.sizes.last()?.scan_generic?, self.sizes.len())
    }
}

fn ratio(small: Duration, large: Duration, sizes: usize) -> Option<f64> {
    (sizes >= 2 && !small.is_zero()).then(|| large.as_secs_f64() / small.as_secs_f64())
}

/// Measures `dialect` on `server` (module docs). `each` is called after
/// each size with its report, for progress.
///
/// Errors: a statement failed (its name and the database's message), the
/// run was interrupted (its namespace is dropped first), or the scan did
/// not find exactly the stale rows (the dialect's SQL is
/// wrong before it is slow: run the corpus first).
pub async fn measure(
    server: &Server,
    dialect: &Dialect,
    settings: &Settings,
    mut each: impl FnMut(&SizeReport),
) -> Result<ScaleReport, EngineError> {
    let mut log = Vec::new();
    let mut acquired = isolation::acquire(server, dialect, Schema::Standard, &mut log).await?;
    // SIGINT or SIGTERM abandons the measurement; the namespace is still
    // dropped below (crate::interrupt).
    let result = tokio::select! {
        r = measure_in(&mut acquired, dialect, settings, &mut each) => r,
        signal = crate::interrupt::wait() => {
            Err(EngineError { statement: "run", kind: EngineErrorKind::Interrupted(signal) })
        }
    };
    // An interrupted or failed load may leave a batch's transaction open,
    // and a drop inside it would be rolled back when the connection
    // closes: end it first (an error here means there was none).
    if result.is_err() {
        let _ = acquired.lane.conn.rollback().await;
    }
    // The tables are full: never kept for another run.
    let released = isolation::release(server, dialect, acquired, false, &mut log).await;
    let report = result?;
    released?;
    Ok(report)
}

async fn measure_in(
    acquired: &mut isolation::Acquired,
    dialect: &Dialect,
    settings: &Settings,
    each: &mut impl FnMut(&SizeReport),
) -> Result<ScaleReport, EngineError> {
    // Each batch of rows is one transaction, committed by `settle`.
    let mut engine = SqlEngine::new(dialect, Schema::Standard, &mut acquired.lane.conn)
        .with_tables_kept(acquired.tables_kept)
        .with_setup_transaction();
    engine.call(Call::CreateSchema).await?;
    let now = rows::now();
    let scan = Call::ReapScan { now, queues: None };
    let (scan_sql, scan_values) = engine.prepared(&scan).ok_or_else(|| database("reap_scan", "not defined"))?;
    let mut loaded = 0;
    let mut sizes = Vec::new();
    for &size in &settings.sizes {
        let started = Clock::now();
        while loaded < size {
            let end = size.min(loaded + BATCH);
            for i in loaded..end {
                engine.call(Call::InsertJob(settings.shape.row(i, now))).await?;
            }
            engine.settle(true).await?;
            engine.clear_log();
            loaded = end;
        }
        engine.connection().analyze("jobs").await.map_err(|e| failed("reap_scan", e))?;
        let load = started.elapsed();

        let candidates = scan_once(&mut engine, &scan, settings.shape.stale).await?;
        let scan_time = timed(&mut engine, &scan, settings.runs).await?;
        let plan = engine
            .connection()
            .explain(&scan_sql, &scan_values, PlanKind::Custom)
            .await
            .map_err(|e| failed("reap_scan", e))?;
        let (scan_generic, plan_generic) = if matches!(engine.connection(), Connection::Postgres(_)) {
            engine.connection().force_generic_plans(true).await.map_err(|e| failed("reap_scan", e))?;
            let time = timed(&mut engine, &scan, settings.runs.max(1) + 1).await;
            engine.connection().force_generic_plans(false).await.map_err(|e| failed("reap_scan", e))?;
            let plan = engine
                .connection()
                .explain(&scan_sql, &scan_values, PlanKind::Generic)
                .await
                .map_err(|e| failed("reap_scan", e))?;
            (Some(time?), Some(plan))
        } else {
            (None, None)
        };
        let apply = apply_all(&mut engine, &candidates, now).await?;
        let report = SizeReport { rows: size, load, scan: scan_time, scan_generic, apply, plan, plan_generic };
        each(&report);
        sizes.push(report);
    }
    let planner = match engine.connection() {
        Connection::Postgres(_) => Planner::Postgres,
        Connection::Sqlite(_) => Planner::Sqlite,
        Connection::MySql(_) => Planner::MySql,
        Connection::Mssql(_) => Planner::Unread,
    };
    Ok(ScaleReport { planner, sizes })
}

/// One untimed scan; it must find exactly `stale` rows.
async fn scan_once(engine: &mut SqlEngine<'_>, scan: &Call, stale: usize) -> Result<Vec<ReapGuard>, EngineError> {
    let Reply::Candidates(found) = engine.call(scan.clone()).await? else {
        return Err(database("reap_scan", "did not answer with candidates"));
    };
    if found.len() != stale {
        let why = format!(
            "found {} candidates where {stale} rows are stale: the scan is wrong before it is slow (run the corpus \
             on this target first)",
            found.len()
        );
        return Err(database("reap_scan", &why));
    }
    let cutoff = rows::now() - Span::from_secs(rows::FLOOR_SECONDS);
    Ok(found.into_iter().map(|c| ReapGuard { id: c.id, attempts: c.attempts, cutoff }).collect())
}

/// The median of `runs` timed scans.
async fn timed(engine: &mut SqlEngine<'_>, scan: &Call, runs: usize) -> Result<Duration, EngineError> {
    let mut times = Vec::new();
    for _ in 0..runs.max(1) {
        let started = Clock::now();
        engine.call(scan.clone()).await?;
        times.push(started.elapsed());
    }
    times.sort();
    Ok(times[(times.len() - 1) / 2])
}

/// One guarded `reap_retry` per stale row in one transaction, rolled back;
/// each must change its row.
async fn apply_all(
    engine: &mut SqlEngine<'_>,
    guards: &[ReapGuard],
    now: crate::time::Instant,
) -> Result<Duration, EngineError> {
    engine.connection().begin().await.map_err(|e| failed("reap_retry", e))?;
    let started = Clock::now();
    let mut result = Ok(());
    for guard in guards {
        let call = Call::ReapRetry { guard: guard.clone(), now, run_at: now };
        match engine.call(call).await {
            Ok(Reply::Changed(1)) => {}
            Ok(other) => {
                result =
                    Err(database("reap_retry", &format!("changed {other:?} rows of stale job {}, not 1", guard.id)));
                break;
            }
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    let elapsed = started.elapsed();
    let rolled_back = engine.connection().rollback().await.map_err(|e| failed("reap_retry", e));
    result?;
    rolled_back?;
    Ok(elapsed)
}

fn failed(statement: &'static str, e: BackendError) -> EngineError {
    EngineError { statement, kind: e.into() }
}

fn database(statement: &'static str, why: &str) -> EngineError {
    EngineError { statement, kind: EngineErrorKind::Database(why.to_owned()) }
}
