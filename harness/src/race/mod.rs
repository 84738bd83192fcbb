//! `reapcheck race`: the dialect's own statements under real concurrency.
//!
//! Worker tasks claim, beat, complete, fail or die, and reaper tasks scan
//! and reap, each on its own connection to one shared namespace, for a
//! bounded time ([`workload`]). Every operation is recorded ([`history`]),
//! and [`check`] proves the spec's guarantees from that history and the
//! rows left at the end. [`directed`] plays one fixed interleaving instead,
//! which exposes a reap guard missing its `status` or `attempts` check on
//! every run.

pub mod check;
pub mod directed;
pub mod history;
pub mod workload;

/// Ok when `url` names a server on this machine (`localhost`, `127.0.0.0/8`,
/// `::1`, or no host: a local socket); else why the race refuses it. The
/// race creates tables and hammers them for its whole bound, so it never
/// runs against a server elsewhere. The message shows no credential.
pub fn loopback_only(url: &str) -> Result<(), String> {
    let refuse =
        |why: String| Err(format!("{why}; `race` runs only on a server on this machine (127.0.0.1, ::1 or localhost)"));
    let parsed = match url::Url::parse(url) {
        Ok(u) => u,
        Err(e) => return refuse(format!("cannot read the host of {}: {e}", crate::redact::url(url))),
    };
    let local = match parsed.host() {
        None => true,
        // Hosts of `postgres:` and `mysql:` URLs are opaque to the URL
        // grammar: an address arrives here as text.
        Some(url::Host::Domain(d)) => {
            let bare = d.trim_start_matches('[').trim_end_matches(']');
            d.is_empty()
                || d.eq_ignore_ascii_case("localhost")
                || bare.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
        }
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
    };
    if local { Ok(()) } else { refuse(format!("{} is not a loopback address", crate::redact::url(url))) }
}

#[cfg(test)]
mod tests {
    use super::loopback_only;

    #[test]
    fn only_loopback_hosts_are_accepted() {
        for ok in [
            "postgres://u@127.0.0.1:5432/t",
            "mysql://root@localhost/t",
            "postgres://u@[::1]/t",
            "postgres://u@127.8.0.1/t",
        ] {
            assert_eq!(loopback_only(ok), Ok(()), "{ok}");
        }
        for far in ["postgres://u:hunter2@db.example:5432/t", "mysql://root@10.0.0.5/t", "postgres://u@[2001:db8::1]/t"]
        {
            let e = loopback_only(far).unwrap_err();
            assert!(e.contains("not a loopback address") && !e.contains("hunter2"), "{e}");
        }
    }
}
