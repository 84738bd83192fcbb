//! `reapcheck race`: the dialect's own statements under real concurrency.
//!
//! Worker tasks claim, beat, complete, fail or die, and reaper tasks scan
//! and reap, each on its own connection to one shared namespace, for a
//! bounded time ([`workload`]). Every operation is recorded ([`history`]),
//! and [`check`] proves the spec's guarantees from that history and the
//! rows left at the end.

pub mod check;
pub mod history;
