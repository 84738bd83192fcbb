//! The rows `bench --scale` loads: a fixed set of processing rows (some
//! stale) followed by as many finished and pending rows as a size needs,
//! so that every size holds the same processing and stale rows and only
//! the rows a reaper should never read grow.

use crate::engine::JobRow;
use crate::outcome::{LastError, Status};
use crate::time::{Duration, Instant};

/// The reaper's scan floor in seconds (reaper-spec.md: a candidate has
/// been silent at least 30 s).
pub const FLOOR_SECONDS: i64 = 30;

/// The processing rows of the table, the same at every size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Rows in `processing` (the first rows loaded).
    pub processing: usize,
    /// Of those, rows silent for an hour: the scan's candidates. The
    /// others beat 5 s ago, or were claimed 10 s ago and never beat.
    pub stale: usize,
}

impl Default for Shape {
    /// 10,000 processing rows, 1,000 of them stale (issue 13).
    fn default() -> Shape {
        Shape { processing: 10_000, stale: 1_000 }
    }
}

/// The clock of every scan: 2026-01-01T00:00:00Z.
pub fn now() -> Instant {
    Instant::from_unix_micros(1_767_225_600_000_000)
}

impl Shape {
    /// Row `i` (from 0) of the table, with `now` the scan's clock. Rows
    /// below `processing` are processing (below `stale`, stale; half of
    /// each with a heartbeat); the others are one pending row in ten (due
    /// in an hour), one failed in ten, and completed rows, all touched
    /// between one and 40 days before `now`.
    pub fn row(&self, i: usize, now: Instant) -> JobRow {
        let seconds = |s: i64| Duration::from_secs(s);
        let beats = i % 2 == 0;
        let mut row = JobRow {
            id: format!("job-{i:09}"),
            class: "scale".to_owned(),
            queue: if i % 3 == 0 { "mail".to_owned() } else { "default".to_owned() },
            status: Status::Processing,
            attempts: 1,
            max_retries: 3,
            claim_timeout: None,
            claim_token: Some(format!("token-{i}")),
            heartbeat_at: None,
            run_at: now - seconds(7_200),
            updated_at: now - seconds(3_600),
            failed_at: None,
            completed_at: None,
            last_error: None,
        };
        if i < self.stale {
            row.heartbeat_at = beats.then(|| now - seconds(3_000));
        } else if i < self.processing {
            row.updated_at = now - seconds(10);
            row.heartbeat_at = beats.then(|| now - seconds(5));
        } else {
            let touched = now - seconds(86_400 + (i as i64 % 40) * 86_400);
            row.claim_token = None;
            row.updated_at = touched;
            row.run_at = touched;
            match i % 10 {
                0 => {
                    row.status = Status::Pending;
                    row.attempts = 0;
                    row.run_at = now + seconds(3_600);
                }
                1 => {
                    row.status = Status::Failed;
                    row.attempts = 3;
                    row.failed_at = Some(touched);
                    row.last_error = Some(LastError::Failed);
                }
                _ => {
                    row.status = Status::Completed;
                    row.completed_at = Some(touched);
                }
            }
        }
        row
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_rows_are_processing_and_the_first_of_those_stale() {
        let shape = Shape { processing: 4, stale: 2 };
        let now = now();
        let floor = now - Duration::from_secs(FLOOR_SECONDS);
        let last_seen = |r: &JobRow| r.heartbeat_at.unwrap_or(r.updated_at);
        let rows: Vec<JobRow> = (0..30).map(|i| shape.row(i, now)).collect();
        let processing: Vec<&JobRow> = rows.iter().filter(|r| r.status == Status::Processing).collect();
        assert_eq!(processing.len(), 4);
        let stale: Vec<&str> = processing.iter().filter(|r| last_seen(r) < floor).map(|r| r.id.as_str()).collect();
        assert_eq!(stale, ["job-000000000", "job-000000001"]);
        assert!(rows[0].heartbeat_at.is_some() && rows[1].heartbeat_at.is_none(), "half of them beat");
        assert!(rows.iter().any(|r| r.status == Status::Pending) && rows.iter().any(|r| r.status == Status::Failed));
        assert!(rows.iter().skip(4).all(|r| r.status != Status::Processing && r.claim_token.is_none()));
    }
}
