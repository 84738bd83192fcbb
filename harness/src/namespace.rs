//! Namespace names: who made a scenario's schema or database, and when.
//!
//! Each (scenario, target) run gets a namespace named
//! `rc_<host>_<pid>_<started>_<n>`: `host` is 16 hex digits, 8 of a hash
//! of the machine's host name and 8 of a hash of where the process id
//! means something ([`pid_space`]: the kernel's boot id and the inode of
//! the process's PID namespace), `pid` the reapcheck process, `started`
//! the second (Unix time, UTC) that process started, `n` a counter within
//! it. The owner travels in the name rather than in a marker table because
//! a name is readable from the catalog before anything was created inside
//! it, and a run killed between `CREATE` and its first table leaves a
//! namespace with no marker but still with its name. It is under 55
//! characters while the start time has 10 digits (until 2286) and the
//! counter fewer than 16, within PostgreSQL's 63, MySQL's 64 and SQL
//! Server's 128, and only lower case letters, digits and `_`, the one text
//! ever substituted into SQL.
//!
//! At start a run removes earlier runs' namespaces ([`is_stale`]): those
//! made in this PID namespace of this boot of this host by a process that
//! is gone, and any older than [`MAX_AGE`] whoever made them. Two
//! containers (or two CI jobs in their own PID namespaces) with one host
//! name have different tags, so neither reads the other's process ids as
//! its own: a process id that is free here may be a live run there.
//! Names of the release before this one (`rc_<8 hex of the host
//! name>_<pid>_<started>_<n>`) are still removed as before: by age, or when
//! their host name is this one's and their process is gone. Names of any
//! other shape (a test's `rc_pgtest_…`, an older release's
//! `rc_<pid>_<n>_<nanos>`) are never touched.

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
    /// 16 hex digits naming the host and its PID namespace: FNV-1a of its
    /// host name, then FNV-1a of [`pid_space`]. A name of the release
    /// before this one carries only the first 8.
    pub host: String,
    /// The process id of the reapcheck run that made it.
    pub pid: u32,
    /// When that process started, in seconds since the Unix epoch (UTC).
    pub started: u64,
}

/// `n` namespaces, in words: `1 namespace`, `3 namespaces`.
pub fn count(n: usize) -> String {
    if n == 1 { "1 namespace".to_owned() } else { format!("{n} namespaces") }
}

/// This process as an owner.
pub fn this_process() -> &'static Owner {
    static OWNER: OnceLock<Owner> = OnceLock::new();
    OWNER.get_or_init(|| {
        let host = format!("{}{}", host_tag(&host_name()), host_tag(&pid_space()));
        Owner { host, pid: std::process::id(), started: unix_seconds() }
    })
}

/// A namespace name no other run, in this process or another, is using.
pub fn fresh() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    name(this_process(), n)
}

/// The name of the `n`th namespace of `owner`.
pub fn name(owner: &Owner, n: u64) -> String {
    format!("{}{n}", prefix(owner))
}

/// What every namespace `owner` makes begins with: `rc_<host>_<pid>_<started>_`.
pub fn prefix(owner: &Owner) -> String {
    format!("rc_{}_{}_{}_", owner.host, owner.pid, owner.started)
}

/// The owner a name written by [`name`] carries; `None` for any other name.
pub fn parse(name: &str) -> Option<Owner> {
    let mut parts = name.strip_prefix("rc_")?.split('_');
    let hex = |h: &&str| matches!(h.len(), 8 | 16) && h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    let host = parts.next().filter(hex)?;
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
/// it: made in this PID namespace of this host (`me.host`, all 16 digits)
/// by a process other than `me` that `alive` says is gone, or started more
/// than [`MAX_AGE`] before `now` (seconds since the Unix epoch). A name of
/// the release before this one, whose tag is the host name's 8 digits
/// alone, counts as this host's when those are `me`'s first 8. A reused
/// process id keeps a namespace until it is [`MAX_AGE`] old.
pub fn is_stale(name: &str, me: &Owner, now: u64, alive: impl Fn(u32) -> bool) -> bool {
    let Some(owner) = parse(name) else { return false };
    if owner == *me {
        return false;
    }
    let too_old = now.saturating_sub(owner.started) > MAX_AGE.as_secs();
    let here = owner.host == me.host || (owner.host.len() == 8 && me.host.starts_with(&owner.host));
    let gone = here && (owner.pid != me.pid || owner.started != me.started) && !alive(owner.pid);
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

/// Where this process's id is meaningful: the kernel's boot id and this
/// process's PID namespace (`pid:[<inode>]`), as Linux shows them. Two
/// containers with one host name differ here (their PID namespaces do),
/// and so do two boots. Empty parts where the system has no such files
/// (off Linux, where processes share one PID space per boot anyway).
pub fn pid_space() -> String {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
    let pids = std::fs::read_link("/proc/self/ns/pid").map(|p| p.display().to_string()).unwrap_or_default();
    format!("{}\n{pids}", boot.trim())
}

/// 8 lower-case hex digits of the FNV-1a hash of `host`.
fn host_tag(host: &str) -> String {
    let hash = host.bytes().fold(0x811c_9dc5_u32, |h, b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193));
    format!("{hash:08x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_namespace_is_said_in_the_singular() {
        assert_eq!([count(1), count(0), count(3)], ["1 namespace", "0 namespaces", "3 namespaces"]);
    }

    fn owner(host: &str, pid: u32, started: u64) -> Owner {
        Owner { host: host.into(), pid, started }
    }

    #[test]
    fn names_carry_their_owner_and_read_back() {
        let me = this_process();
        let (a, b) = (fresh(), fresh());
        assert_ne!(a, b);
        assert_eq!(parse(&a).as_ref(), Some(me));
        assert_eq!(me.host.len(), 16, "{a}");
        assert!(a.len() <= 55 && a.bytes().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_'), "{a}");
        assert_eq!(name(&owner("0badcafe", 7, 1_700_000_000), 3), "rc_0badcafe_7_1700000000_3");
        assert_eq!(host_tag("a"), "e40c292c", "FNV-1a 32 of `a`");
        // The release before this one wrote 8 hex digits: still read.
        assert_eq!(parse("rc_0badcafe_7_1700000000_3"), Some(owner("0badcafe", 7, 1_700_000_000)));
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
            "rc_0badcafe0badcaf_1_2_3",
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

    /// Two containers with one host name: the same first 8 digits, other
    /// PID namespaces. A pid that is free here may be a live run there, so
    /// only age removes the other's names; the release before this one's
    /// names (8 digits) from this host name are still removed when gone.
    #[test]
    fn another_pid_namespace_with_this_host_name_is_another_host() {
        let me = owner("0badcafe11111111", 100, 1_000_000);
        let sibling = owner("0badcafe22222222", 300, 999_000);
        let now = 1_000_100;
        assert!(!is_stale(&name(&sibling, 0), &me, now, |_| false), "a live run in another PID namespace");
        assert!(is_stale(&name(&owner("0badcafe11111111", 300, 999_000), 0), &me, now, |_| false));
        let old_sibling = owner("0badcafe22222222", 300, now - MAX_AGE.as_secs() - 1);
        assert!(is_stale(&name(&old_sibling, 0), &me, now, |_| true), "over a day old");
        assert!(is_stale(&name(&owner("0badcafe", 300, 999_000), 0), &me, now, |_| false), "older release");
        assert!(!is_stale(&name(&owner("0badcafe", 300, 999_000), 0), &me, now, |_| true), "alive");
        assert!(!is_stale(&name(&owner("12345678", 300, 999_000), 0), &me, now, |_| false), "other host name");
    }

    #[test]
    fn pid_space_names_the_boot_and_the_pid_namespace() {
        let here = pid_space();
        if cfg!(target_os = "linux") {
            assert!(here.contains("pid:["), "{here}");
            assert!(here.split('\n').next().is_some_and(|b| b.len() == 36), "a boot id: {here}");
        }
    }

    #[test]
    fn this_process_is_alive_and_a_free_pid_is_not() {
        assert!(process_alive(std::process::id()));
        assert!(!process_alive(u32::MAX), "pid_t cannot hold it");
    }
}
