//! Warm connections kept between scenario runs: each one is inside a
//! namespace whose tables an earlier scenario made, so the next scenario
//! with the same tables only has to empty them. The policy (which runs may
//! share a lane, how it is emptied) is `crate::isolation`'s; this is the
//! store, held by the [`super::Server`] the connections came from.

use std::sync::Mutex;

use tokio::sync::Notify;

use super::Connection;

/// A connection inside a namespace holding a dialect's tables.
pub struct Lane {
    /// The connection, its session inside [`Lane::namespace`].
    pub conn: Connection,
    /// The namespace's name ([`crate::namespace`]).
    pub namespace: String,
    /// Which runs may use it: equal keys mean the same namespace scripts,
    /// tables and instant encoding (`crate::isolation::lane_key`).
    pub key: u64,
    /// The dialect's `drop_namespace` commands with the namespace filled
    /// in, ready for this connection: run when the lane is evicted for
    /// another key or its server closes.
    pub drop: Vec<String>,
}

/// The idle lanes of one server.
#[derive(Default)]
pub(super) struct Lanes {
    idle: Mutex<Vec<Lane>>,
    /// Woken when a lane is kept, for an open waiting on a full pool.
    kept: Notify,
}

impl Lanes {
    /// An idle lane with `key`, if there is one.
    pub(super) fn take(&self, key: u64) -> Option<Lane> {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        let at = idle.iter().rposition(|l| l.key == key)?;
        Some(idle.swap_remove(at))
    }

    /// Any idle lane, the oldest first.
    pub(super) fn take_any(&self) -> Option<Lane> {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        (!idle.is_empty()).then(|| idle.remove(0))
    }

    /// Every idle lane.
    pub(super) fn take_all(&self) -> Vec<Lane> {
        std::mem::take(&mut *self.idle.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Keeps `lane` for a later run and wakes one waiting open.
    pub(super) fn keep(&self, lane: Lane) {
        self.idle.lock().unwrap_or_else(|p| p.into_inner()).push(lane);
        self.kept.notify_one();
    }

    /// Resolves after the next [`Lanes::keep`] (or at once if one happened
    /// since the last wait).
    pub(super) async fn kept(&self) {
        self.kept.notified().await;
    }
}

impl Lane {
    /// Undoes what a run may have left in this lane's session, so that the
    /// lane can be kept for the next run, and says whether it could: after
    /// a statement error (`failed`) the transaction it may have left open
    /// is rolled back; after a session time zone (`set_time_zone`) the
    /// zone goes back to the session's first one. PostgreSQL and
    /// CockroachDB restore the zone with every setting when the lane is
    /// taken again (`RESET ALL`, `crate::isolation`); MySQL and MariaDB set
    /// `time_zone` back here (they have no reset of all settings, and no
    /// other session setting is a scenario's). SQLite and SQL Server keep
    /// no lane after either (`false`): their connections are cheap or
    /// have no such reset.
    pub async fn restore(&mut self, failed: bool, set_time_zone: bool) -> bool {
        if matches!(self.conn, Connection::Sqlite(_) | Connection::Mssql(_)) {
            return !failed && !set_time_zone;
        }
        if failed && self.conn.rollback().await.is_err() {
            return false;
        }
        match &mut self.conn {
            Connection::MySql(c) if set_time_zone => c.reset_time_zone().await.is_ok(),
            _ => true,
        }
    }
}
