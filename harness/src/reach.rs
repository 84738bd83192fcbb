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
            Ok(server) => Reach::Ready(server, None),
            Err(e) => Reach::Unreachable(format!(
                "cannot reach {} (from {variable}): {}",
                redact::url(&url),
                redact::message(&e, &url)
            )),
        },
        _ => from_container(target, &variable).await,
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
