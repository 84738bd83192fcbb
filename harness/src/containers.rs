//! Databases started in Docker through testcontainers, for targets without
//! a `REAPCHECK_<TARGET>_URL`. Built only with `--features containers`.
//! Each image is pinned to a tag, so a run's server version is stable.

use testcontainers_modules::testcontainers::core::IntoContainerPort;
use testcontainers_modules::testcontainers::runners::AsyncRunner;
use testcontainers_modules::testcontainers::{ContainerAsync, Image, ImageExt};
use testcontainers_modules::{cockroach_db, mariadb, mssql_server, mysql, postgres};

use crate::reach::Container;
use crate::target::Target;

/// The pinned image tag of each target's container.
pub fn pinned_tag(target: Target) -> Option<&'static str> {
    match target {
        Target::Postgres => Some("16-alpine"),
        Target::Mariadb => Some("11.4"),
        Target::Mysql => Some("8.4"),
        Target::Cockroach => Some("v24.2.4"),
        Target::Mssql => Some("2022-CU14-ubuntu-22.04"),
        Target::Sqlite => None,
    }
}

/// Starts `target`'s container; returns the URL to reach it and the handle
/// that keeps it running.
pub async fn start(target: Target) -> Result<(String, Container), String> {
    let tag = pinned_tag(target).ok_or("sqlite needs no container")?;
    match target {
        Target::Postgres => {
            let c = run(postgres::Postgres::default(), tag).await?;
            let port = port(&c, 5432).await?;
            Ok((format!("postgres://postgres:postgres@127.0.0.1:{port}/postgres"), Box::new(c)))
        }
        Target::Mariadb => {
            let c = run(mariadb::Mariadb::default(), tag).await?;
            let port = port(&c, 3306).await?;
            Ok((format!("mysql://root@127.0.0.1:{port}/test"), Box::new(c)))
        }
        Target::Mysql => {
            let c = run(mysql::Mysql::default(), tag).await?;
            let port = port(&c, 3306).await?;
            Ok((format!("mysql://root@127.0.0.1:{port}/test"), Box::new(c)))
        }
        Target::Cockroach => {
            let c = run(cockroach_db::CockroachDb::default(), tag).await?;
            let port = port(&c, 26257).await?;
            Ok((format!("postgres://root@127.0.0.1:{port}/defaultdb?sslmode=disable"), Box::new(c)))
        }
        Target::Mssql => {
            let c = run(mssql_server::MssqlServer::default().with_accept_eula(), tag).await?;
            let port = port(&c, 1433).await?;
            let password = mssql_server::MssqlServer::DEFAULT_SA_PASSWORD;
            Ok((format!("mssql://sa:{password}@127.0.0.1:{port}/master"), Box::new(c)))
        }
        Target::Sqlite => unreachable!("handled above"),
    }
}

async fn run<I: Image + 'static>(image: I, tag: &str) -> Result<ContainerAsync<I>, String> {
    image.with_tag(tag).start().await.map_err(|e| format!("cannot start a container: {e}"))
}

async fn port<I: Image>(c: &ContainerAsync<I>, inner: u16) -> Result<u16, String> {
    c.get_host_port_ipv4(inner.tcp()).await.map_err(|e| format!("container port {inner} is not mapped: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_server_target_has_a_pinned_image() {
        for t in Target::ALL {
            assert_eq!(pinned_tag(t).is_some(), t != Target::Sqlite, "{t}");
        }
        assert!(pinned_tag(Target::Postgres).is_some_and(|t| !t.contains("latest")));
    }
}
