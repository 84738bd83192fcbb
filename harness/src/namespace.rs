//! Namespace names: who made a scenario's schema or database, and when.
//!
//! Each (scenario, target) run gets a namespace named
//! `rc_<host>_<pid>_<started>_<n>`: `host` is 8 hex digits of a hash of the
//! machine's host name, `pid` the reapcheck process, `started` the second
//! (Unix time, UTC) that process started, `n` a counter within it. The
//! owner travels in the name rather than in a marker table because a name
//! is readable from the catalog before anything was created inside it, and
//! a run killed between `CREATE` and its first table leaves a namespace
//! with no marker but still with its name. It is under 50 characters
//! while the start time has 10 digits (until 2286) and the counter fewer
//! than 16, within PostgreSQL's 63, MySQL's 64 and SQL Server's 128, and only lower
//! case letters, digits and `_`, the one text ever substituted into SQL.
//!
//! At start a run removes earlier runs' namespaces ([`is_stale`]): those
//! made on this host by a process that is gone, and any older than
//! [`MAX_AGE`] whoever made them. Names of any other shape (a test's
//! `rc_pgtest_…`, an older release's `rc_<pid>_<n>_<nanos>`) are never
//! touched.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

/// How old a namespace may be before any run removes it, even one made on
/// another host (whose processes cannot be checked): 24 hours. A full
/// `.ci/run` takes under 40 minutes, so no live run owns a namespace that
/// old.
pub const MAX_AGE: Duration = Duration::from_secs(24 * 3600);

/// Who made a namespace, and when, as read from its name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Owner {
    /// 8 hex digits naming the host (FNV-1a of its host name).
    pub host: String,
    /// The process id of the reapcheck run that made it.
    pub pid: u32,
    /// When that process started, in seconds since the Unix epoch (UTC).
    pub started: u64,
}

/// This process as an owner.
pub fn this_process() -> &'static Owner {
    static OWNER: OnceLock<Owner> = OnceLock::new();
    OWNER.get_or_init(|| Owner { host: host_tag(&host_name()), pid: std::process::id(), started: unix_seconds() })
}

/// A namespace name no other run, in this process or another, is using.
pub fn fresh() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    name(this_process(), n)
}

/// The name of the `n`th namespace of `owner`.
pub fn name(owner: &Owner, n: u64) -> String {
    format!("rc_{}_{}_{}_{n}", owner.host, owner.pid, owner.started)
}

/// The owner a name written by [`name`] carries; `None` for any other name.
pub fn parse(name: &str) -> Option<Owner> {
    let mut parts = name.strip_prefix("rc_")?.split('_');
    let host = parts.next().filter(|h| h.len() == 8 && h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))?;
    let pid = digits(parts.next())?.parse().ok()?;
    let started = digits(parts.next())?.parse().ok()?;
    digits(parts.next())?;
    if parts.next().is_some() {
        return None;
    }
    Some(Owner { host: host.to_owned(), pid, started })
}

/// `part` when it is one or more ASCII digits.
fn digits(part: Option<&str>) -> Option<&str> {
    part.filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
}

/// True when `name` was made by an earlier run that can no longer be using
/// it: made on this host (`me.host`) by a process other than `me` that
/// `alive` says is gone, or started more than [`MAX_AGE`] before `now`
/// (seconds since the Unix epoch). A reused process id keeps a namespace
/// until it is [`MAX_AGE`] old.
pub fn is_stale(name: &str, me: &Owner, now: u64, alive: impl Fn(u32) -> bool) -> bool {
    let Some(owner) = parse(name) else { return false };
    if owner == *me {
        return false;
    }
    let too_old = now.saturating_sub(owner.started) > MAX_AGE.as_secs();
    let gone = owner.host == me.host && (owner.pid != me.pid || owner.started != me.started) && !alive(owner.pid);
    too_old || gone
}

/// Whether a process `pid` exists on this host (signal 0 reaches it, or
/// exists but belongs to another user). Off Unix every process counts as
/// alive, so only [`MAX_AGE`] removes anything.
pub fn process_alive(pid: u32) -> bool {
    #[cfg(unix)]
    {
        let Ok(pid) = libc::pid_t::try_from(pid) else { return false };
        // SAFETY: kill with signal 0 sends nothing; it only checks the pid.
        let answered = unsafe { libc::kill(pid, 0) } == 0;
        answered || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

/// Now, in seconds since the Unix epoch.
pub fn unix_seconds() -> u64 {
    SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

fn host_name() -> String {
    #[cfg(unix)]
    {
        let mut buf = [0u8; 256];
        // SAFETY: the buffer is writable for its whole length.
        if unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } == 0 {
            let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
            return String::from_utf8_lossy(&buf[..end]).into_owned();
        }
    }
    std::env::var("COMPUTERNAME").unwrap_or_default()
}

/// 8 lower-case hex digits of the FNV-1a hash of `host`.
fn host_tag(host: &str) -> String {
    let hash = host.bytes().fold(0x811c_9dc5_u32, |h, b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193));
    format!("{hash:08x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(host: &str, pid: u32, started: u64) -> Owner {
        Owner { host: host.into(), pid, started }
    }

    #[test]
    fn names_carry_their_owner_and_read_back() {
        let me = this_process();
        let (a, b) = (fresh(), fresh());
        assert_ne!(a, b);
        assert_eq!(parse(&a).as_ref(), Some(me));
        assert!(a.len() <= 45 && a.bytes().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_'), "{a}");
        assert_eq!(name(&owner("0badcafe", 7, 1_700_000_000), 3), "rc_0badcafe_7_1700000000_3");
        assert_eq!(host_tag("a"), "e40c292c", "FNV-1a 32 of `a`");
    }

    #[test]
    fn names_of_other_shapes_have_no_owner() {
        for other in [
            "rc_pgtest_12_0",
            "rc_mysqltest_12_3",
            "rc_123_4_567890",
            "rc_0BADCAFE_1_2_3",
            "rc_0badcafe_1_2_3_4",
            "rc_0badcafe_1_2_",
            "rc_0badcafe__2_3",
            "public",
            "rc_0badcaf_1_2_3",
        ] {
            assert_eq!(parse(other), None, "{other}");
        }
    }

    #[test]
    fn stale_means_gone_on_this_host_or_older_than_a_day() {
        let me = owner("0badcafe", 100, 1_000_000);
        let now = 1_000_100;
        let alive = |pid| pid == 200;
        let day = MAX_AGE.as_secs();
        // Gone on this host.
        assert!(is_stale(&name(&owner("0badcafe", 300, 999_000), 0), &me, now, alive));
        // Alive on this host, and recent.
        assert!(!is_stale(&name(&owner("0badcafe", 200, 999_000), 0), &me, now, alive));
        // Mine.
        assert!(!is_stale(&name(&me, 5), &me, now, |_| false));
        // Another host: its processes cannot be checked, so only age counts.
        assert!(!is_stale(&name(&owner("12345678", 300, 999_000), 0), &me, now, alive));
        assert!(is_stale(&name(&owner("12345678", 300, now - day - 1), 0), &me, now, alive));
        assert!(!is_stale(&name(&owner("12345678", 300, now - day), 0), &me, now, alive));
        // Older than a day even though its pid is alive (reused).
        assert!(is_stale(&name(&owner("0badcafe", 200, now - day - 1), 0), &me, now, alive));
        // My pid but an earlier process (pid reused after a crash): gone.
        assert!(is_stale(&name(&owner("0badcafe", 100, 999_000), 0), &me, now, |_| false));
        // Names of other shapes are never stale.
        assert!(!is_stale("rc_pgtest_300_0", &me, now, |_| false));
    }

    #[test]
    fn this_process_is_alive_and_a_free_pid_is_not() {
        assert!(process_alive(std::process::id()));
        assert!(!process_alive(u32::MAX), "pid_t cannot hold it");
    }
}
