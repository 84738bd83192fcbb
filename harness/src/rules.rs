//! The app-side rules of `docs/reaper-spec.md`: pure arithmetic on settings
//! and on values a query returned, never on timestamps read back.
//!
//! These are what the queue's Rust code decides (which grace applies, how
//! long a window is, which outcome a dead job gets, the backoff, the lease
//! name). The driver uses them for every target; what the targets differ in,
//! and what reapcheck tests, is how the database stores and compares time.

use crate::policy::{
    self, ClaimWindow, GiveUp, GraceFloor, GraceOff, GraceOverrides, NonIdempotent, Policy, Retry, RetryCount,
};
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

/// `timeout + max(60, timeout)`: 300 gives 600, 3600 gives 7200 (the
/// reference claim window; [`claim_window_under`] for any policy).
/// Saturates at `i64::MAX` (`check` bounds every timeout well below).
pub fn claim_window(timeout: i64) -> i64 {
    timeout.saturating_add(timeout.max(60))
}

/// The claim window in seconds under `policy` (docs/policy.md,
/// `claim_window`): the reference formula, the row timeout alone, or none
/// (`None`: only the heartbeat decides, the claim starting its clock).
pub fn claim_window_under(policy: &Policy, timeout: i64) -> Option<i64> {
    match policy.claim_window {
        ClaimWindow::TimeoutPlusMax60 => Some(claim_window(timeout)),
        ClaimWindow::Timeout => Some(timeout),
        ClaimWindow::None => None,
    }
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

    /// The grace in seconds under the reference policy: the class's own when
    /// set (0 included), else the app setting; <= 0 is off (0), 1 to 29 is
    /// raised to 30.
    pub fn grace(&self, app_grace: i64) -> i64 {
        self.grace_under(&Policy::default(), app_grace)
    }

    /// The grace in seconds under `policy` (docs/policy.md, the `grace_*`
    /// knobs): the class's own when overrides are per class and it sets
    /// one, else `app_grace`; <= 0 is off (0), or [`policy::DEFAULT_GRACE_SECONDS`]
    /// when the queue never turns it off; 1 to 29 raised to 30 with the floor.
    pub fn grace_under(&self, policy: &Policy, app_grace: i64) -> i64 {
        let configured = match policy.grace_overrides {
            GraceOverrides::PerClass => self.heartbeat_grace.unwrap_or(app_grace),
            GraceOverrides::AppOnly => app_grace,
        };
        let on = match (configured, policy.grace_off) {
            (g, GraceOff::Allowed) if g <= 0 => return 0,
            (g, GraceOff::Never) if g <= 0 => policy::DEFAULT_GRACE_SECONDS,
            (g, _) => g,
        };
        match policy.grace_floor {
            GraceFloor::ThirtySeconds => on.max(GRACE_FLOOR_SECONDS),
            GraceFloor::None => on,
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

/// [`window`] where the claim window may be none (docs/policy.md,
/// `claim_window = none`): then the grace alone decides, whether or not the
/// attempt beat (its claim started the heartbeat clock). A policy with no
/// claim window never has its grace off ([`Policy::contradiction`]).
pub fn window_under(has_beat: bool, grace: i64, claim_window: Option<i64>) -> i64 {
    match claim_window {
        Some(cw) => window(has_beat, grace, cw),
        None => grace,
    }
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

/// The first matching outcome for a dead job under the reference policy.
pub fn reap_action(class: &AppClass, attempts: i64, max_retries: i64) -> ReapAction {
    reap_action_under(&Policy::default(), class, attempts, max_retries)
}

/// Whether a job that ran `attempts` times has a retry left: `attempts <=
/// max_retries` (retries after the first run, reference) or `attempts <
/// max_retries` (`retry_count = max_attempts`).
pub fn has_retry_left(policy: &Policy, attempts: i64, max_retries: i64) -> bool {
    match policy.retry_count {
        RetryCount::AfterFirstRun => attempts <= max_retries,
        RetryCount::MaxAttempts => attempts < max_retries,
    }
}

/// The first matching outcome for a dead job under `policy` (docs/policy.md,
/// `non_idempotent`, `give_up`, `retry`, `retry_count`): interrupted when
/// the class is not idempotent and the queue interrupts; failed when the
/// retries are spent and the queue gives up, or when it never retries;
/// else a retry after the backoff, or at once.
pub fn reap_action_under(policy: &Policy, class: &AppClass, attempts: i64, max_retries: i64) -> ReapAction {
    if !class.idempotent && policy.non_idempotent == NonIdempotent::Interrupt {
        return ReapAction::Interrupt;
    }
    let spent = !has_retry_left(policy, attempts, max_retries);
    if (spent && policy.give_up == GiveUp::AfterRetries) || policy.retry == Retry::Never {
        return ReapAction::Fail;
    }
    match policy.retry {
        Retry::Backoff => ReapAction::Retry { delay: class.backoff(attempts) },
        Retry::Immediate | Retry::Never => ReapAction::Retry { delay: 0 },
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

    fn policy(f: impl FnOnce(&mut Policy)) -> Policy {
        let mut p = Policy::default();
        f(&mut p);
        p
    }

    #[rstest]
    #[case(None, 300, 300)]
    #[case(Some(1200), 300, 300)]
    fn app_only_grace_ignores_the_class(#[case] own: Option<i64>, #[case] app: i64, #[case] expected: i64) {
        let p = policy(|p| p.grace_overrides = GraceOverrides::AppOnly);
        assert_eq!(class(own).grace_under(&p, app), expected);
    }

    #[test]
    fn the_grace_knobs_change_the_floor_and_off() {
        let no_floor = policy(|p| p.grace_floor = GraceFloor::None);
        assert_eq!(class(None).grace_under(&no_floor, 5), 5);
        assert_eq!(class(None).grace_under(&no_floor, 0), 0);
        let never_off = policy(|p| p.grace_off = GraceOff::Never);
        assert_eq!(class(None).grace_under(&never_off, 0), 300);
        assert_eq!(class(Some(0)).grace_under(&never_off, 100), 300);
        assert_eq!(class(None).grace_under(&never_off, 10), 30);
        assert_eq!(class(None).grace_under(&Policy::default(), 10), class(None).grace(10));
    }

    #[test]
    fn the_claim_window_knob() {
        assert_eq!(claim_window_under(&Policy::default(), 300), Some(600));
        assert_eq!(claim_window_under(&policy(|p| p.claim_window = ClaimWindow::Timeout), 300), Some(300));
        assert_eq!(claim_window_under(&policy(|p| p.claim_window = ClaimWindow::None), 300), None);
        assert_eq!(window_under(false, 120, None), 120);
        assert_eq!(window_under(true, 120, Some(600)), 120);
        assert_eq!(window_under(false, 120, Some(600)), 600);
    }

    #[test]
    fn the_reap_knobs_change_the_action() {
        let c = class(None);
        let immediate = policy(|p| p.retry = Retry::Immediate);
        assert_eq!(reap_action_under(&immediate, &c, 1, 3), ReapAction::Retry { delay: 0 });
        assert_eq!(reap_action_under(&immediate, &c, 4, 3), ReapAction::Fail);
        let never_gives_up = policy(|p| p.give_up = GiveUp::Never);
        assert_eq!(reap_action_under(&never_gives_up, &c, 40, 3), ReapAction::Retry { delay: 3600 });
        let never_retries = policy(|p| p.retry = Retry::Never);
        assert_eq!(reap_action_under(&never_retries, &c, 1, 3), ReapAction::Fail);
        let attempts = policy(|p| p.retry_count = RetryCount::MaxAttempts);
        assert_eq!(reap_action_under(&attempts, &c, 3, 3), ReapAction::Fail);
        assert_eq!(reap_action_under(&attempts, &c, 2, 3), ReapAction::Retry { delay: 8 });
        let not_idempotent = AppClass { idempotent: false, ..c };
        let retried = policy(|p| p.non_idempotent = NonIdempotent::Retry);
        assert_eq!(reap_action_under(&retried, &not_idempotent, 1, 3), ReapAction::Retry { delay: 4 });
    }

    #[test]
    fn lease_renewal_follows_the_grace() {
        let c = class(None);
        assert_eq!(lease_renewal(&c, 100), Duration::from_secs(200));
        assert_eq!(lease_renewal(&c, 300), Duration::from_secs(600));
        assert_eq!(lease_renewal(&c, 0), Duration::from_secs(600));
    }
}
