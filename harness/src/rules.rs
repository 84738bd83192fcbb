//! The app-side rules of `docs/reaper-spec.md`: pure arithmetic on settings
//! and on values a query returned, never on timestamps read back.
//!
//! These are what the queue's Rust code decides (which grace applies, how
//! long a window is, which outcome a dead job gets, the backoff, the lease
//! name). The driver uses them for every target; what the targets differ in,
//! and what reapcheck tests, is how the database stores and compares time.

use crate::scenario::{Class, DEFAULT_POLL_TIMEOUT, Job};
use crate::time::Duration;

/// Candidates are rows silent for longer than this: the smallest grace.
pub const SCAN_FLOOR_SECONDS: i64 = 30;

/// The smallest positive grace; 1 to 29 are raised to it.
pub const GRACE_FLOOR_SECONDS: i64 = 30;

/// The longest a busy lease defers a claim.
pub const MAX_DEFER_SECONDS: i64 = 30;

/// The reaper's poll timeout: a value <= 0 means 300.
pub fn poll_timeout(timeout: Option<i64>) -> i64 {
    match timeout {
        Some(t) if t > 0 => t,
        _ => DEFAULT_POLL_TIMEOUT,
    }
}

/// The timeout an attempt runs with: its `claim_timeout` when > 0, else the
/// reaper's poll timeout.
pub fn row_timeout(claim_timeout: Option<i64>, poll_timeout: i64) -> i64 {
    match claim_timeout {
        Some(t) if t > 0 => t,
        _ => poll_timeout,
    }
}

/// `timeout + max(60, timeout)`: 300 gives 600, 3600 gives 7200.
/// Saturates at `i64::MAX` (`check` bounds every timeout well below).
pub fn claim_window(timeout: i64) -> i64 {
    timeout.saturating_add(timeout.max(60))
}

/// What the app knows of a class: a class it cannot load falls back to the
/// app's grace, counts as idempotent and gets the default backoff.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AppClass {
    /// The class's own grace, when it sets one.
    pub heartbeat_grace: Option<i64>,
    /// Whether a dead attempt may simply run again.
    pub idempotent: bool,
    /// Backoff base, seconds.
    pub base_delay: i64,
    /// Backoff cap, seconds.
    pub max_delay: i64,
    /// The class timeout written at claim.
    pub timeout: i64,
    /// The class's lease key, when it has one.
    pub concurrency_key: Option<String>,
    /// Whether attempts of the class exclude each other.
    pub exclusive: bool,
}

impl AppClass {
    /// The app's view of `class`.
    pub fn of(class: &Class) -> AppClass {
        if !class.loadable {
            let defaults = Class::default();
            return AppClass {
                heartbeat_grace: None,
                idempotent: true,
                base_delay: defaults.base_delay,
                max_delay: defaults.max_delay,
                timeout: class.timeout,
                concurrency_key: class.concurrency_key.clone(),
                exclusive: class.exclusive,
            };
        }
        AppClass {
            heartbeat_grace: class.heartbeat_grace,
            idempotent: class.idempotent,
            base_delay: class.base_delay,
            max_delay: class.max_delay,
            timeout: class.timeout,
            concurrency_key: class.concurrency_key.clone(),
            exclusive: class.exclusive,
        }
    }

    /// The grace in seconds: the class's own when set (0 included), else the
    /// app setting; <= 0 is off (0), 1 to 29 is raised to 30.
    pub fn grace(&self, app_grace: i64) -> i64 {
        match self.heartbeat_grace.unwrap_or(app_grace) {
            g if g <= 0 => 0,
            g => g.max(GRACE_FLOOR_SECONDS),
        }
    }

    /// Seconds until retry number `attempts`: `min(base * 2^attempts, max)`.
    pub fn backoff(&self, attempts: i64) -> i64 {
        let factor = u32::try_from(attempts).ok().and_then(|a| 2i64.checked_pow(a)).unwrap_or(i64::MAX);
        self.base_delay.saturating_mul(factor).min(self.max_delay)
    }
}

/// The window after `last_seen` in which a job is still alive:
/// `min(claim_window, grace)` when it beat and the grace is on, else the
/// claim window. The grace can only shorten the window.
pub fn window(has_beat: bool, grace: i64, claim_window: i64) -> i64 {
    if has_beat && grace > 0 { claim_window.min(grace) } else { claim_window }
}

/// What the reaper does with a dead job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReapAction {
    /// Not idempotent: `interrupted`, final hook.
    Interrupt,
    /// Back to `pending` after this many seconds; no hook.
    Retry {
        /// Backoff seconds.
        delay: i64,
    },
    /// Retries used up: `failed`, final hook.
    Fail,
}

/// The first matching outcome for a dead job.
pub fn reap_action(class: &AppClass, attempts: i64, max_retries: i64) -> ReapAction {
    if !class.idempotent {
        ReapAction::Interrupt
    } else if attempts <= max_retries {
        ReapAction::Retry { delay: class.backoff(attempts) }
    } else {
        ReapAction::Fail
    }
}

/// The lease an attempt of `job` needs: the job's key, else the class's key,
/// else `job:<class>` for an exclusive class, else none.
pub fn lease_name(job: &Job, class: &AppClass) -> Option<String> {
    if let Some(key) = job.concurrency_key.as_ref().or(class.concurrency_key.as_ref()) {
        Some(format!("key:{key}"))
    } else if class.exclusive {
        Some(format!("job:{}", job.class.as_str()))
    } else {
        None
    }
}

/// How long a lease is taken for at claim: the class's claim window.
pub fn lease_window(class: &AppClass) -> Duration {
    Duration::from_secs(claim_window(row_timeout(Some(class.timeout), DEFAULT_POLL_TIMEOUT)))
}

/// How far a heartbeat renews a lease: `grace + max(60, grace)` when the
/// grace is on, else the lease's original window.
pub fn lease_renewal(class: &AppClass, grace: i64) -> Duration {
    if grace > 0 { Duration::from_secs(grace.saturating_add(grace.max(60))) } else { lease_window(class) }
}

/// Seconds a claim waits for a busy lease: `min(30, max(1, ceil(left)))`,
/// where `left` is the lease's remaining time in microseconds.
pub fn defer_seconds(left_micros: i64) -> i64 {
    let ceil = left_micros.div_euclid(1_000_000) + i64::from(left_micros.rem_euclid(1_000_000) != 0);
    ceil.clamp(1, MAX_DEFER_SECONDS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn class(grace: Option<i64>) -> AppClass {
        AppClass::of(&Class { heartbeat_grace: grace, ..Class::default() })
    }

    #[rstest]
    #[case(300, 600)]
    #[case(3600, 7200)]
    #[case(30, 90)]
    #[case(60, 120)]
    fn claim_window_is_timeout_plus_at_least_a_minute(#[case] timeout: i64, #[case] expected: i64) {
        assert_eq!(claim_window(timeout), expected);
    }

    #[rstest]
    #[case(None, 300, 300)]
    #[case(None, 0, 0)]
    #[case(None, -5, 0)]
    #[case(None, 5, 30)]
    #[case(None, 29, 30)]
    #[case(None, 30, 30)]
    #[case(Some(1200), 300, 1200)]
    #[case(Some(0), 300, 0)]
    #[case(Some(10), 0, 30)]
    fn grace_resolves_class_then_app_with_floor(#[case] own: Option<i64>, #[case] app: i64, #[case] expected: i64) {
        assert_eq!(class(own).grace(app), expected);
    }

    #[test]
    fn an_unloadable_class_uses_the_app_grace_and_defaults() {
        let c = AppClass::of(&Class {
            heartbeat_grace: Some(1200),
            idempotent: false,
            base_delay: 10,
            max_delay: 20,
            loadable: false,
            ..Class::default()
        });
        assert_eq!(c.grace(300), 300);
        assert!(c.idempotent);
        assert_eq!(c.backoff(1), 4);
    }

    #[rstest]
    #[case(false, 300, 600, 600)]
    #[case(true, 300, 600, 300)]
    #[case(true, 0, 600, 600)]
    #[case(true, 1200, 600, 600)]
    fn grace_only_shortens_the_window(#[case] beat: bool, #[case] grace: i64, #[case] cw: i64, #[case] expected: i64) {
        assert_eq!(window(beat, grace, cw), expected);
    }

    #[rstest]
    #[case(Some(3600), 300, 3600)]
    #[case(Some(0), 300, 300)]
    #[case(None, 120, 120)]
    #[case(Some(-1), 300, 300)]
    fn row_timeout_falls_back_to_the_poll_timeout(#[case] ct: Option<i64>, #[case] poll: i64, #[case] expected: i64) {
        assert_eq!(row_timeout(ct, poll), expected);
    }

    #[test]
    fn a_poll_timeout_of_zero_or_less_means_300() {
        assert_eq!(poll_timeout(None), 300);
        assert_eq!(poll_timeout(Some(0)), 300);
        assert_eq!(poll_timeout(Some(-1)), 300);
        assert_eq!(poll_timeout(Some(45)), 45);
    }

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let c = class(None);
        assert_eq!(c.backoff(1), 4);
        assert_eq!(c.backoff(3), 16);
        assert_eq!(c.backoff(11), 3600);
        assert_eq!(c.backoff(200), 3600);
    }

    #[test]
    fn reap_action_takes_the_first_match() {
        let c = class(None);
        assert_eq!(reap_action(&c, 1, 3), ReapAction::Retry { delay: 4 });
        assert_eq!(reap_action(&c, 3, 3), ReapAction::Retry { delay: 16 });
        assert_eq!(reap_action(&c, 4, 3), ReapAction::Fail);
        let not_idempotent = AppClass { idempotent: false, ..c };
        assert_eq!(reap_action(&not_idempotent, 1, 3), ReapAction::Interrupt);
    }

    #[rstest]
    #[case(1, 1)]
    #[case(1_000_000, 1)]
    #[case(1_000_001, 2)]
    #[case(0, 1)]
    #[case(-5_000_000, 1)]
    #[case(29_999_999, 30)]
    #[case(90_000_000, 30)]
    fn defer_is_the_ceiling_clamped_to_one_to_thirty(#[case] left: i64, #[case] expected: i64) {
        assert_eq!(defer_seconds(left), expected);
    }

    #[test]
    fn lease_renewal_follows_the_grace() {
        let c = class(None);
        assert_eq!(lease_renewal(&c, 100), Duration::from_secs(200));
        assert_eq!(lease_renewal(&c, 300), Duration::from_secs(600));
        assert_eq!(lease_renewal(&c, 0), Duration::from_secs(600));
    }
}
