//! Databases started in Docker through testcontainers, for targets without
//! a `REAPCHECK_<TARGET>_URL`. Built only with `--features containers`.
//!
//! - Each image is pinned to an exact release (no moving tag such as `16`
//!   or `8.4`), so a run's server version is stable.
//! - The URL's host and port come from the container handle, so a remote
//!   engine (`DOCKER_HOST=tcp://...`) works.
//! - testcontainers' watchdog is on (its `watchdog` feature): an interrupt
//!   (SIGINT, SIGTERM, SIGQUIT) stops and removes the started containers
//!   before the process ends.
//! - Only targets that will run start one: `run --db` names them, and the
//!   test suite reaches only targets with a selected test
//!   ([`crate::reach::needed_targets`]).
//!
//! SQL Server's image has a self-signed certificate: its URL says
//! `trustServerCertificate=true`, encrypting without checking it.
//!
//! A container may take [`startup_timeout`] to become ready, not
//! testcontainers' default 60 s: SQL Server's first start (system databases
//! upgraded, tempdb created) takes minutes on a shared CI runner or a busy
//! laptop, and a timed-out start fails the whole run.

use std::time::Duration;

use testcontainers_modules::testcontainers::core::IntoContainerPort;
use testcontainers_modules::testcontainers::runners::AsyncRunner;
use testcontainers_modules::testcontainers::{ContainerAsync, ContainerRequest, Image, ImageExt};
use testcontainers_modules::{cockroach_db, mariadb, mssql_server, mysql, postgres};

use crate::reach::Container;
use crate::target::Target;

/// The pinned image tag of each target's container.
pub fn pinned_tag(target: Target) -> Option<&'static str> {
    match target {
        Target::Postgres => Some("16.6-alpine"),
        Target::Mariadb => Some("11.4.4"),
        Target::Mysql => Some("8.4.3"),
        Target::Cockroach => Some("v24.2.4"),
        Target::Mssql => Some("2022-CU14-ubuntu-22.04"),
        Target::Sqlite => None,
    }
}

/// How long `target`'s container may take from its start to ready (the
/// image's wait conditions; pulling the image is not counted).
/// testcontainers gives 60 s, which SQL Server's first start can exceed on
/// a loaded machine such as a shared CI runner: 10 minutes for SQL Server,
/// 3 for the others. A container that never becomes ready still fails,
/// only later.
pub fn startup_timeout(target: Target) -> Duration {
    match target {
        Target::Mssql => Duration::from_secs(600),
        _ => Duration::from_secs(180),
    }
}

/// Starts `target`'s container; returns the URL to reach it and the handle
/// that keeps it running.
pub async fn start(target: Target) -> Result<(String, Container), String> {
    if target == Target::Sqlite {
        return Err("sqlite needs no container".into());
    }
    match target {
        Target::Postgres => {
            let c = run(request(postgres::Postgres::default(), Target::Postgres)).await?;
            let (host, port) = address(&c, 5432).await?;
            Ok((format!("postgres://postgres:postgres@{host}:{port}/postgres"), Box::new(c)))
        }
        Target::Mariadb => {
            let c = run(request(mariadb::Mariadb::default(), Target::Mariadb)).await?;
            let (host, port) = address(&c, 3306).await?;
            Ok((format!("mysql://root@{host}:{port}/test"), Box::new(c)))
        }
        Target::Mysql => {
            let c = run(request(mysql::Mysql::default(), Target::Mysql)).await?;
            let (host, port) = address(&c, 3306).await?;
            Ok((format!("mysql://root@{host}:{port}/test"), Box::new(c)))
        }
        Target::Cockroach => {
            let c = run(request(cockroach_db::CockroachDb::default(), Target::Cockroach)).await?;
            let (host, port) = address(&c, 26257).await?;
            Ok((format!("postgres://root@{host}:{port}/defaultdb?sslmode=disable"), Box::new(c)))
        }
        Target::Mssql => {
            let c = run(request(mssql_server::MssqlServer::default().with_accept_eula(), Target::Mssql)).await?;
            let (host, port) = address(&c, 1433).await?;
            let password = mssql_server::MssqlServer::DEFAULT_SA_PASSWORD;
            Ok((format!("mssql://sa:{password}@{host}:{port}/master?trustServerCertificate=true"), Box::new(c)))
        }
        Target::Sqlite => unreachable!("handled above"),
    }
}

/// `image` at `target`'s pinned tag, with its [`startup_timeout`].
fn request<I: Image>(image: I, target: Target) -> ContainerRequest<I> {
    let tag = pinned_tag(target).expect("a server target");
    image.with_tag(tag).with_startup_timeout(startup_timeout(target))
}

async fn run<I: Image + 'static>(request: ContainerRequest<I>) -> Result<ContainerAsync<I>, String> {
    request.start().await.map_err(|e| format!("cannot start a container: {e}"))
}

/// The host and port where the container's `inner` port is reached, as the
/// engine reports them (bracketed when the host is an IPv6 address).
async fn address<I: Image>(c: &ContainerAsync<I>, inner: u16) -> Result<(String, u16), String> {
    let host = c.get_host().await.map_err(|e| format!("no host for the container: {e}"))?;
    let port =
        c.get_host_port_ipv4(inner.tcp()).await.map_err(|e| format!("container port {inner} is not mapped: {e}"))?;
    Ok((url_host(&host), port))
}

/// `host` as written in a URL's authority.
fn url_host(host: &url::Host) -> String {
    match host {
        url::Host::Ipv6(a) => format!("[{a}]"),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_server_target_has_a_pinned_image() {
        for t in Target::ALL {
            assert_eq!(pinned_tag(t).is_some(), t != Target::Sqlite, "{t}");
        }
    }

    #[test]
    fn every_tag_names_an_exact_release() {
        // A moving tag (`16-alpine`, `8.4`, `11.4`) follows new releases.
        // Exact: major.minor for PostgreSQL (its releases since 10),
        // major.minor.patch for the others, year and CU for SQL Server.
        let exact = |t: Target| match t {
            Target::Postgres => r"^\d+\.\d+-alpine$",
            Target::Mssql => r"^\d{4}-CU\d+-ubuntu-\d+\.\d+$",
            _ => r"^v?\d+\.\d+\.\d+$",
        };
        for t in Target::ALL {
            if let Some(tag) = pinned_tag(t) {
                assert!(regex::Regex::new(exact(t)).unwrap().is_match(tag), "{t}: `{tag}` is a moving tag");
            }
        }
        assert!(!regex::Regex::new(exact(Target::Postgres)).unwrap().is_match("16-alpine"));
        assert!(!regex::Regex::new(exact(Target::Mysql)).unwrap().is_match("8.4"));
    }

    #[test]
    fn containers_get_more_than_the_default_60_s_to_start() {
        let mssql = request(mssql_server::MssqlServer::default().with_accept_eula(), Target::Mssql);
        assert_eq!(mssql.startup_timeout(), Some(startup_timeout(Target::Mssql)));
        assert!(startup_timeout(Target::Mssql) >= Duration::from_secs(300), "SQL Server's first start takes minutes");
        let postgres = request(postgres::Postgres::default(), Target::Postgres);
        assert!(postgres.startup_timeout().is_some_and(|t| t > Duration::from_secs(60)));
        assert!(postgres.descriptor().ends_with(":16.6-alpine"), "{}", postgres.descriptor());
    }

    #[test]
    fn ipv6_hosts_are_bracketed_in_urls() {
        assert_eq!(url_host(&url::Host::Ipv6("::1".parse().unwrap())), "[::1]");
        assert_eq!(url_host(&url::Host::Domain("docker.internal".into())), "docker.internal");
        assert_eq!(url_host(&url::Host::Ipv4("10.0.0.2".parse().unwrap())), "10.0.0.2");
    }
}
