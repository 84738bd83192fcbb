//! Reaching each target's database: from `REAPCHECK_<TARGET>_URL`, else
//! (with the `containers` feature and a Docker engine) from a container,
//! else not at all, with the reason.

use crate::backend::{self, Server};
use crate::redact;
use crate::target::Target;

/// A running container; dropping it stops and removes the container.
pub type Container = Box<dyn std::any::Any + Send + Sync>;

/// Whatever must stay alive while a server is used: its container, if any.
pub type Keep = Option<Container>;

/// Whether a target can run.
pub enum Reach {
    /// Connected; ready to open isolated runs. Keep the second field alive
    /// as long as the server is used.
    Ready(Server, Keep),
    /// Not configured: the reason, shown as `skipped: <reason>`.
    Skipped(String),
    /// Configured but not reachable: the error, with no password in it.
    Unreachable(String),
}

impl Reach {
    /// Why the target is not ready (empty when it is).
    pub fn reason(self) -> String {
        match self {
            Reach::Ready(..) => String::new(),
            Reach::Skipped(r) | Reach::Unreachable(r) => r,
        }
    }
}

/// The environment variable listing targets whose skip is a failure.
pub const REQUIRE_VARIABLE: &str = "REAPCHECK_REQUIRE";

/// The targets named in `REAPCHECK_REQUIRE` (comma-separated), or the
/// unknown name.
pub fn required_targets() -> Result<Vec<Target>, String> {
    let Ok(list) = std::env::var(REQUIRE_VARIABLE) else { return Ok(Vec::new()) };
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|name| {
            Target::from_name(name).ok_or_else(|| {
                format!("{REQUIRE_VARIABLE} names unknown target `{name}`: the targets are {}", target_names())
            })
        })
        .collect()
}

/// For tests that need `target`'s server: its URL from the environment at
/// run time. Unset, the test is skipped (`None`, with a line on standard
/// error saying so), unless `REAPCHECK_REQUIRE` names the target: then it
/// panics, so a required server's tests never pass without running.
///
/// # Panics
///
/// The URL is unset and the target is required.
pub fn test_url(target: Target) -> Option<String> {
    let variable = target.url_variable();
    if let Ok(url) = std::env::var(&variable)
        && !url.trim().is_empty()
    {
        return Some(url);
    }
    let required = std::env::var(REQUIRE_VARIABLE).unwrap_or_default();
    if required.split(',').any(|n| n.trim() == target.name()) {
        panic!("{variable} is not set, and {REQUIRE_VARIABLE} requires {target}: set it to the server's URL");
    }
    eprintln!("skipped: this test needs {variable} (not set)");
    None
}

/// The target names, comma-separated.
pub fn target_names() -> String {
    Target::ALL.iter().map(|t| t.name()).collect::<Vec<_>>().join(", ")
}

/// Connects to `target`'s database, or says why not.
pub async fn reach(target: Target) -> Reach {
    if target == Target::Sqlite {
        return match backend::sqlite().await {
            Ok(s) => Reach::Ready(s, None),
            Err(e) => Reach::Unreachable(format!("embedded sqlite failed: {e}")),
        };
    }
    let variable = target.url_variable();
    match std::env::var(&variable) {
        Ok(url) if !url.trim().is_empty() => match connect(target, &url).await {
            Ok(server) => match wrong_server(target, server.version()) {
                None => Reach::Ready(server, None),
                Some(why) => {
                    server.close().await;
                    Reach::Unreachable(format!("{} (from {variable}): {why}", redact::url(&url)))
                }
            },
            Err(e) => Reach::Unreachable(format!(
                "cannot reach {} (from {variable}): {}",
                redact::url(&url),
                redact::message(&e, &url)
            )),
        },
        _ => from_container(target, &variable).await,
    }
}

/// Why the server that answered is not `target`'s kind: the `mysql` target
/// refuses MariaDB and `mariadb` refuses Oracle MySQL (they share a
/// protocol and a dialect, not their semantics), naming what answered.
pub fn wrong_server(target: Target, version: &str) -> Option<String> {
    let is_mariadb = version.to_lowercase().contains("mariadb");
    match target {
        Target::Mysql if is_mariadb => Some(format!(
            "answered as MariaDB ({version}), not MySQL: point REAPCHECK_MYSQL_URL at an Oracle MySQL server, \
             or run this server as `--db mariadb` with REAPCHECK_MARIADB_URL"
        )),
        Target::Mariadb if !is_mariadb => Some(format!(
            "answered as {version}, not MariaDB: point REAPCHECK_MARIADB_URL at a MariaDB server, \
             or run this server as `--db mysql` with REAPCHECK_MYSQL_URL"
        )),
        _ => None,
    }
}

async fn connect(target: Target, url: &str) -> Result<Server, String> {
    let result = match target {
        Target::Sqlite => backend::sqlite().await,
        Target::Postgres => backend::postgres(url).await,
        Target::Cockroach => backend::cockroach(url).await,
        Target::Mariadb | Target::Mysql => backend::mysql(url).await,
        Target::Mssql => backend::mssql(url).await,
    };
    result.map_err(|e| e.to_string())
}

#[cfg(not(feature = "containers"))]
async fn from_container(_target: Target, variable: &str) -> Reach {
    Reach::Skipped(format!("no {variable}, and this build has no `containers` feature to start one in Docker"))
}

#[cfg(feature = "containers")]
async fn from_container(target: Target, variable: &str) -> Reach {
    let (url, keep) = match crate::containers::start(target).await {
        Ok(started) => started,
        Err(reason) => return Reach::Skipped(format!("no {variable}, and no container: {reason}")),
    };
    match connect(target, &url).await {
        Ok(server) => Reach::Ready(server, Some(keep)),
        Err(e) => Reach::Unreachable(format!("the {target} container started but: {}", redact::message(&e, &url))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mysql_and_mariadb_refuse_each_others_server_naming_what_answered() {
        let why = wrong_server(Target::Mysql, "mariadb 10.11.19-MariaDB").unwrap();
        assert!(why.contains("answered as MariaDB (mariadb 10.11.19-MariaDB)"), "{why}");
        let why = wrong_server(Target::Mariadb, "mysql 8.4.3").unwrap();
        assert!(why.contains("answered as mysql 8.4.3, not MariaDB"), "{why}");
        assert_eq!(wrong_server(Target::Mariadb, "mariadb 10.11.19-MariaDB"), None);
        assert_eq!(wrong_server(Target::Mysql, "mysql 8.4.3"), None);
        assert_eq!(wrong_server(Target::Postgres, "postgres 15.20"), None);
    }
}
