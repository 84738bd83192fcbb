//! Every TCP connection reapcheck opens to a database server has
//! `TCP_NODELAY` set. sqlx-core 0.9.0 never set it, so each TLS handshake
//! waited on the server's delayed ACK (about 87 ms per PostgreSQL
//! connection here, issue 22); `vendor/sqlx-core` is 0.9.0 with upstream's
//! fix (#4336), and this test fails without it (every socket reads 0).
//!
//! Deterministic, no timing: it opens connections through reapcheck's own
//! backend (the version probe's, kept for the first run, and a new one),
//! finds this process's sockets to the server's port (`/proc/self/fd`
//! against the inodes of `/proc/net/tcp` and `/proc/net/tcp6`) and reads
//! the option back with `getsockopt`. Skipped without
//! `REAPCHECK_POSTGRES_URL` / `REAPCHECK_MARIADB_URL`, failing when
//! `REAPCHECK_REQUIRE` names the target (`reach::test_url`). Linux only.
#![cfg(target_os = "linux")]

use std::collections::HashSet;
use std::os::fd::RawFd;

use reapcheck::backend::{Connection, Server};
use reapcheck::reach::test_url;
use reapcheck::target::Target;

/// The inodes of this network namespace's established TCP sockets whose
/// remote port is `port`.
fn socket_inodes_to(port: u16) -> HashSet<String> {
    let mut inodes = HashSet::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else { continue };
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
            let (Some(remote), Some(state), Some(inode)) = (fields.get(2), fields.get(3), fields.get(9)) else {
                continue;
            };
            let remote_port = remote.rsplit(':').next().and_then(|p| u16::from_str_radix(p, 16).ok());
            // 01: ESTABLISHED.
            if remote_port == Some(port) && *state == "01" {
                inodes.insert((*inode).to_owned());
            }
        }
    }
    inodes
}

/// This process's file descriptors that are TCP sockets connected to `port`.
fn sockets_to(port: u16) -> Vec<RawFd> {
    let inodes = socket_inodes_to(port);
    let mut fds = Vec::new();
    for entry in std::fs::read_dir("/proc/self/fd").expect("/proc/self/fd lists").flatten() {
        let Ok(target) = std::fs::read_link(entry.path()) else { continue };
        let target = target.to_string_lossy().into_owned();
        let inode = target.strip_prefix("socket:[").and_then(|t| t.strip_suffix(']'));
        if let (Some(inode), Ok(fd)) = (inode, entry.file_name().to_string_lossy().parse::<RawFd>())
            && inodes.contains(inode)
        {
            fds.push(fd);
        }
    }
    fds
}

/// `TCP_NODELAY` of socket `fd`, read back from the kernel.
fn nodelay(fd: RawFd) -> bool {
    let mut value: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `fd` is open (listed in /proc/self/fd and held by a live
    // connection), and `value`/`len` are a valid c_int buffer and its size.
    let rc =
        unsafe { libc::getsockopt(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, (&raw mut value).cast(), &raw mut len) };
    assert_eq!(rc, 0, "getsockopt(TCP_NODELAY) on fd {fd}: {}", std::io::Error::last_os_error());
    value != 0
}

fn port_of(url: &str, default: u16) -> u16 {
    url::Url::parse(url).expect("a URL").port().unwrap_or(default)
}

/// Opens two connections on `server` (the first is the version probe's
/// session, the second a new one) and checks every socket of this process
/// to `port`.
async fn every_socket_has_nodelay(server: Server, port: u16, target: &str) {
    let first = server.open().await.expect("a first connection");
    let second = server.open().await.expect("a second connection");
    let fds = sockets_to(port);
    assert!(fds.len() >= 2, "{target}: {} sockets to port {port} found, want at least 2", fds.len());
    let without: Vec<RawFd> = fds.iter().copied().filter(|fd| !nodelay(*fd)).collect();
    assert!(without.is_empty(), "{target}: sockets {without:?} of {fds:?} to port {port} lack TCP_NODELAY");
    for conn in [first, second] {
        Connection::close(conn).await;
    }
    server.close().await;
}

#[tokio::test]
async fn postgres_connections_set_tcp_nodelay() {
    let Some(url) = test_url(Target::Postgres) else { return };
    let server = reapcheck::backend::postgres(&url).await.expect("postgres is reachable");
    every_socket_has_nodelay(server, port_of(&url, 5432), "postgres").await;
}

#[tokio::test]
async fn mariadb_connections_set_tcp_nodelay() {
    let Some(url) = test_url(Target::Mariadb) else { return };
    let server = reapcheck::backend::mysql(&url).await.expect("mariadb is reachable");
    every_socket_has_nodelay(server, port_of(&url, 3306), "mariadb").await;
}
