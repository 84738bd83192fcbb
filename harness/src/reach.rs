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

/// The filters of a test run (`cargo test FILTER --exact --skip S`), as
/// libtest applies them to test names.
#[derive(Clone, Debug, Default)]
pub struct TestFilter {
    /// Only names containing it (equal to it under `exact`).
    pub filter: Option<String>,
    /// Whether names must equal the filter and the skips.
    pub exact: bool,
    /// Names containing one of these (equal under `exact`) are left out.
    pub skip: Vec<String>,
}

impl TestFilter {
    /// Whether the test called `name` runs under these filters.
    pub fn selects(&self, name: &str) -> bool {
        let matches = |f: &String| if self.exact { name == f } else { name.contains(f.as_str()) };
        self.filter.as_ref().is_none_or(matches) && !self.skip.iter().any(matches)
    }
}

/// The test name of `scenario` on `target`, as `cargo test` lists it:
/// `grace/floor::postgres`.
pub fn test_name(scenario: &str, target: Target) -> String {
    format!("{scenario}::{target}")
}

/// The targets at least one test selected by `filter` runs on, of
/// `scenarios` (their names) on every target: the only ones whose database
/// is reached, so `cargo test grace/floor::postgres --features containers`
/// starts one container, not five.
pub fn needed_targets(scenarios: &[&str], filter: &TestFilter) -> Vec<Target> {
    Target::ALL.into_iter().filter(|t| scenarios.iter().any(|s| filter.selects(&test_name(s, *t)))).collect()
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

/// Connects to `target`'s server at `url` (SQLite ignores it, and is
/// embedded); the error is the backend's, which may hold the URL: redact it
/// ([`redact::message`]) before printing.
pub async fn connect(target: Target, url: &str) -> Result<Server, String> {
    // Every command reaches servers through here: a URL that cannot be
    // read as meant never connects (`run` refuses it earlier, as invalid
    // input).
    if let Some(why) = url_refused(target, url) {
        return Err(why);
    }
    let result = match target {
        Target::Sqlite => backend::sqlite().await,
        Target::Postgres => backend::postgres(url).await,
        Target::Cockroach => backend::cockroach(url).await,
        Target::Mariadb | Target::Mysql => backend::mysql(url).await,
        Target::Mssql => backend::mssql(url).await,
    };
    result.map_err(|e| e.to_string())
}

/// The refusal of `url` as the value of `target`'s variable, said as
/// `REAPCHECK_<TARGET>_URL: <why>` ([`url_refused`], without the driver's
/// own `invalid <variable>: ` in front), for `run` and `bench --compare`
/// to refuse before anything runs; `None` when the URL can be read.
pub fn url_variable_refused(target: Target, url: &str) -> Option<String> {
    let variable = target.url_variable();
    let why = url_refused(target, url)?;
    let why = why.strip_prefix(&format!("invalid {variable}: ")).unwrap_or(&why);
    Some(format!("{variable}: {why}"))
}

/// Why `url` cannot be `target`'s URL at all (not a URL, an option or value
/// its driver refuses), before anything connects: invalid input, where a
/// server that does not answer is a failure. Never the credential.
pub fn url_refused(target: Target, url: &str) -> Option<String> {
    // The parameters named may be pieces of a password with an unencoded
    // `&`: the message goes through the redactor knowing the URL.
    if let Some(why) = not_a_url(target, url).or_else(|| unread_part(target, url)) {
        return Some(redact::message(&why, url));
    }
    let form = match target {
        Target::Sqlite => return None,
        Target::Postgres | Target::Cockroach => backend::UrlForm::Postgres,
        Target::Mariadb | Target::Mysql => backend::UrlForm::MySql,
        Target::Mssql => backend::UrlForm::Mssql,
    };
    backend::check_url(form, url).err().map(|e| e.message)
}

/// The query parameters each driver reads (sqlx 0.9's URL parsers). Any
/// other is ignored by the driver, so a typo such as `sslmod=verify-full`
/// would leave TLS unverified without a word: refused instead.
const POSTGRES_PARAMETERS: [&str; 18] = [
    "application_name",
    "dbname",
    "host",
    "hostaddr",
    "options",
    "password",
    "port",
    "ssl-ca",
    "ssl-cert",
    "ssl-key",
    "ssl-mode",
    "ssl-root-cert",
    "sslcert",
    "sslkey",
    "sslmode",
    "sslrootcert",
    "statement-cache-capacity",
    "user",
];
const MYSQL_PARAMETERS: [&str; 14] = [
    "charset",
    "collation",
    "socket",
    "ssl-ca",
    "ssl-cert",
    "ssl-key",
    "ssl-mode",
    "sslca",
    "sslcert",
    "sslkey",
    "sslmode",
    "statement-cache-capacity",
    "time-zone",
    "timezone",
];

/// Why a URL for a PostgreSQL- or MySQL-protocol target has a scheme of
/// another product or a query parameter its driver would silently ignore;
/// `None` for other targets (the SQL Server parser refuses what it does
/// not read itself).
fn unread_part(target: Target, url: &str) -> Option<String> {
    let (schemes, known): (&[&str], &[&str]) = match target {
        Target::Postgres | Target::Cockroach => (&["postgres", "postgresql"], &POSTGRES_PARAMETERS),
        Target::Mariadb | Target::Mysql => (&["mysql", "mariadb"], &MYSQL_PARAMETERS),
        Target::Sqlite | Target::Mssql => return None,
    };
    let parsed = url::Url::parse(url).ok()?;
    if !schemes.contains(&parsed.scheme()) {
        return Some(format!(
            "the scheme `{}:` is not {target}'s: write {}://USER:PASSWORD@HOST:PORT/DATABASE",
            parsed.scheme(),
            schemes[0]
        ));
    }
    let unknown: Vec<String> = parsed
        .query_pairs()
        .map(|(k, _)| k.into_owned())
        .filter(|k| !known.contains(&k.as_str()) && !k.starts_with("options["))
        .collect();
    (!unknown.is_empty()).then(|| {
        format!(
            "the driver does not read the parameter{} {}, and would ignore {}: the parameters are {}",
            if unknown.len() == 1 { "" } else { "s" },
            unknown.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", "),
            if unknown.len() == 1 { "it" } else { "them" },
            known.join(", ")
        )
    })
}

/// Why `url` cannot be `target`'s URL when it has no scheme: PostgreSQL,
/// CockroachDB, MySQL and MariaDB take only URLs, and a libpq keyword
/// string (`host=... user=... password=...`) would otherwise fail with the
/// URL parser's `relative URL without a base`. SQL Server also takes ADO.NET
/// and JDBC strings, SQLite no URL at all.
fn not_a_url(target: Target, url: &str) -> Option<String> {
    let scheme = match target {
        Target::Postgres | Target::Cockroach => "postgres",
        Target::Mariadb | Target::Mysql => "mysql",
        Target::Sqlite | Target::Mssql => return None,
    };
    (!url.contains("://")).then(|| {
        format!(
            "this is not a URL: give {scheme}://USER:PASSWORD@HOST:PORT/DATABASE (percent-encode reserved \
             characters in the password); a keyword string such as `host=... user=...` is not read"
        )
    })
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

    const SCENARIOS: [&str; 3] = ["grace/floor", "windows/queue-names-exact", "leases/renew"];

    fn filter(filter: Option<&str>, exact: bool, skip: &[&str]) -> TestFilter {
        TestFilter { filter: filter.map(str::to_owned), exact, skip: skip.iter().map(|s| s.to_string()).collect() }
    }

    #[test]
    fn a_url_its_driver_cannot_read_is_refused_before_connecting() {
        let bad = "mssql://sa:Sekrit-1@127.0.0.1:1433/master?trustServerCertificate=maybe";
        let why = url_refused(Target::Mssql, bad).expect("refused");
        assert!(!why.contains("Sekrit-1"), "{why}");
        let why = url_refused(Target::Postgres, "postgres://u:Sekrit-1@127.0.0.1:notaport/t").expect("refused");
        assert!(!why.contains("Sekrit-1"), "{why}");
        assert!(url_refused(Target::Postgres, "host=x password=Sekrit-1").is_some_and(|w| !w.contains("Sekrit")));
        assert_eq!(url_refused(Target::Postgres, "postgres://postgres@127.0.0.1:5432/test"), None);
        let typo = url_refused(Target::Postgres, "postgres://u@127.0.0.1/t?sslmod=verify-full").expect("refused");
        assert!(typo.starts_with("the driver does not read the parameter `sslmod`"), "{typo}");
        let typo = url_refused(Target::Mariadb, "mysql://root@127.0.0.1/t?ssl-mod=REQUIRED").expect("refused");
        assert!(typo.contains("`ssl-mod`") && typo.contains("ssl-mode"), "{typo}");
        // Said once as the variable's, whichever driver said it first.
        let said = url_variable_refused(Target::Mssql, bad).expect("refused");
        assert!(said.starts_with("REAPCHECK_MSSQL_URL: ") && !said.contains("invalid REAPCHECK_MSSQL_URL"), "{said}");
        let said = url_variable_refused(Target::Postgres, "not a url").expect("refused");
        assert!(said.starts_with("REAPCHECK_POSTGRES_URL: this is not a URL"), "{said}");
        assert_eq!(url_variable_refused(Target::Postgres, "postgres://postgres@127.0.0.1:5432/test"), None);
        let mode = url_refused(Target::Mariadb, "mysql://root:Sekrit-1@127.0.0.1/t?ssl-mode=ALWAYS").expect("refused");
        assert_eq!(
            mode, "the driver cannot read it: unknown value \"ALWAYS\" for `ssl_mode`",
            "said once, no password"
        );
        let other = url_refused(Target::Mariadb, "postgres://root@127.0.0.1:3306/test").expect("refused");
        assert!(other.starts_with("the scheme `postgres:` is not mariadb's"), "{other}");
        assert!(url_refused(Target::Postgres, "postgress://u@h/t").is_some());
        assert_eq!(url_refused(Target::Postgres, "postgresql://u@h/t?sslmode=verify-full&sslrootcert=ca.pem"), None);
        assert_eq!(url_refused(Target::Mysql, "mariadb://root@h/t?ssl-mode=REQUIRED"), None);
        assert_eq!(url_refused(Target::Mariadb, "mysql://root@127.0.0.1:3306/test"), None);
        assert_eq!(url_refused(Target::Mssql, "mssql://sa:x@127.0.0.1:1433/master?trustServerCertificate=true"), None);
    }

    #[tokio::test]
    async fn a_keyword_string_is_refused_as_not_a_url_without_its_password() {
        let keywords = "host=127.0.0.1 user=postgres password=sekrit dbname=test";
        let e = connect(Target::Postgres, keywords).await.err().expect("refused");
        assert!(e.starts_with("this is not a URL: give postgres://USER:PASSWORD@HOST:PORT/DATABASE"), "{e}");
        assert!(!e.contains("sekrit") && !e.contains("relative URL"), "{e}");
        // Whatever the command: a parameter the driver would ignore never connects.
        let e =
            connect(Target::Postgres, "postgres://u@127.0.0.1:1/t?sslmod=verify-full").await.err().expect("refused");
        assert!(e.starts_with("the driver does not read the parameter `sslmod`"), "{e}");
        assert!(not_a_url(Target::Mariadb, "root@localhost").is_some_and(|e| e.contains("mysql://")));
        assert_eq!(not_a_url(Target::Postgres, "postgres://u@127.0.0.1/t"), None);
        assert_eq!(not_a_url(Target::Mssql, "server=tcp:127.0.0.1,1433;user id=sa"), None);
    }

    #[test]
    fn without_a_filter_every_target_is_needed() {
        assert_eq!(needed_targets(&SCENARIOS, &TestFilter::default()), Target::ALL.to_vec());
    }

    #[test]
    fn a_filter_naming_one_target_needs_only_that_target() {
        let one = needed_targets(&SCENARIOS, &filter(Some("grace/floor::postgres"), false, &[]));
        assert_eq!(one, vec![Target::Postgres]);
        let suffix = needed_targets(&SCENARIOS, &filter(Some("::mariadb"), false, &[]));
        assert_eq!(suffix, vec![Target::Mariadb]);
        let exact = needed_targets(&SCENARIOS, &filter(Some("leases/renew::mssql"), true, &[]));
        assert_eq!(exact, vec![Target::Mssql]);
    }

    #[test]
    fn a_scenario_filter_needs_every_target_and_skips_remove_targets() {
        let all = needed_targets(&SCENARIOS, &filter(Some("windows/"), false, &[]));
        assert_eq!(all, Target::ALL.to_vec());
        let skipped = needed_targets(&SCENARIOS, &filter(Some("windows/"), false, &["::mssql", "::cockroach"]));
        assert_eq!(skipped, vec![Target::Sqlite, Target::Postgres, Target::Mariadb, Target::Mysql]);
        assert_eq!(needed_targets(&SCENARIOS, &filter(Some("no-such-scenario"), false, &[])), Vec::<Target>::new());
    }

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
