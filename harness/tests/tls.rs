//! TLS on this machine, end to end: a private PostgreSQL and a private
//! MariaDB, started by this test on loopback ports 55440-55449 with a CA and
//! a server certificate for 127.0.0.1/localhost made now by the `openssl`
//! CLI. PostgreSQL accepts only `hostssl` connections, MariaDB runs with
//! `require_secure_transport=ON`, so a run that passes was encrypted. Checked:
//!
//! - `run` passes a scenario subset with `sslmode=verify-full` and
//!   `ssl-mode=VERIFY_IDENTITY`, the certificate checked against the CA;
//! - the same URLs with another CA are refused (the check is real);
//! - `sslmode=disable` and `ssl-mode=DISABLED` are refused with a message
//!   that says the server requires encryption and which option turns it on;
//! - a named-zone scenario on a MariaDB without time zone tables fails with
//!   the line naming the command that loads them.
//!
//! The servers are stopped and their files removed when the test ends, pass
//! or fail. Without the server binaries (`initdb`, `mariadbd`) or `openssl`
//! the test says so and returns, except under `CI=true`, where it fails.
//! Takes about 15 s (two server starts dominate).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The subset of scenarios run over TLS: no named session time zone (the
/// private MariaDB has no zone tables), every reap path.
const SUBSET: &str = "windows/";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().expect("the workspace exists")
}

/// A scratch folder, servers included, removed when dropped.
struct Private {
    dir: PathBuf,
    pg_ctl: Option<PathBuf>,
    as_postgres: bool,
    mariadb: Option<Child>,
}

impl Drop for Private {
    fn drop(&mut self) {
        if let Some(pg_ctl) = &self.pg_ctl {
            let data = self.dir.join("pg");
            let _ = command(self.as_postgres, pg_ctl)
                .args(["-D".as_ref(), data.as_os_str(), "-m".as_ref(), "immediate".as_ref(), "stop".as_ref()])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
        if let Some(mut child) = self.mariadb.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `program`, run as the `postgres` user when `as_postgres` (initdb and the
/// server refuse to run as root).
fn command(as_postgres: bool, program: &Path) -> Command {
    if as_postgres {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    }
}

/// Runs `cmd`; `Err` with its output when it fails.
fn run(cmd: &mut Command, what: &str) -> Result<Output, String> {
    let out = cmd.output().map_err(|e| format!("cannot run {what}: {e}"))?;
    if !out.status.success() {
        let (o, e) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        return Err(format!("{what} failed ({}): {o}{e}", out.status));
    }
    Ok(out)
}

/// A loopback port of the given range nobody listens on.
fn free_port(range: std::ops::Range<u16>) -> Result<u16, String> {
    range
        .into_iter()
        .find(|p| TcpListener::bind(("127.0.0.1", *p)).is_ok())
        .ok_or_else(|| "no free port in 55440-55449".into())
}

fn postgres_bin() -> Option<PathBuf> {
    let mut versions: Vec<PathBuf> =
        std::fs::read_dir("/usr/lib/postgresql").ok()?.filter_map(|e| e.ok().map(|e| e.path())).collect();
    versions.sort();
    versions.into_iter().rev().map(|v| v.join("bin")).find(|b| b.join("initdb").exists())
}

/// Waits until `ready` holds, up to 30 s.
fn wait_for(what: &str, mut ready: impl FnMut() -> bool) -> Result<(), String> {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(30) {
        if ready() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    Err(format!("{what} did not start within 30 s"))
}

/// A CA (`<name>.pem`) in `dir`; with `server`, also `server.pem` and
/// `server.key`, signed by it, for 127.0.0.1 and localhost.
fn certificates(dir: &Path, name: &str, server: bool) -> Result<(), String> {
    let openssl = |args: &[&str]| run(Command::new("openssl").args(args).current_dir(dir), "openssl");
    let (key, pem) = (format!("{name}.key"), format!("{name}.pem"));
    let subject = format!("/CN=reapcheck test {name}");
    openssl(&[
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", &key, "-out", &pem, "-days", "2", "-subj", &subject,
    ])?;
    if server {
        openssl(&[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=localhost",
        ])?;
        let ext = "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n";
        std::fs::write(dir.join("server.ext"), ext).map_err(|e| e.to_string())?;
        openssl(&[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            &pem,
            "-CAkey",
            &key,
            "-CAcreateserial",
            "-out",
            "server.pem",
            "-days",
            "2",
            "-extfile",
            "server.ext",
        ])?;
    }
    Ok(())
}

/// Ports of the two servers.
struct Ports {
    pg: u16,
    my: u16,
}

/// Starts both servers, or says why not.
fn start(private: &mut Private) -> Result<Ports, String> {
    let dir = private.dir.clone();
    let bin = postgres_bin().ok_or("no PostgreSQL server binaries under /usr/lib/postgresql")?;
    let mariadbd = Path::new("/usr/sbin/mariadbd");
    if !mariadbd.exists() {
        return Err("no /usr/sbin/mariadbd".into());
    }
    certificates(&dir, "ca", true)?;
    certificates(&dir, "other-ca", false)?;
    private.as_postgres = unsafe_is_root();
    if private.as_postgres {
        run(Command::new("chown").args(["-R", "postgres"]).arg(&dir), "chown")?;
    }
    run(Command::new("chmod").args(["600"]).arg(dir.join("server.key")), "chmod")?;
    run(Command::new("chmod").args(["755"]).arg(&dir), "chmod")?;

    // PostgreSQL: TLS only (`hostssl`), no password (trust): what matters
    // is that a plain connection is refused.
    let pg = free_port(55440..55445)?;
    let data = dir.join("pg");
    run(
        command(private.as_postgres, &bin.join("initdb")).args([
            "-D".as_ref(),
            data.as_os_str(),
            "-U".as_ref(),
            "postgres".as_ref(),
            "--auth=trust".as_ref(),
        ]),
        "initdb",
    )?;
    let d = dir.display();
    let conf = format!(
        "port = {pg}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{d}'\nssl = on\n\
         ssl_cert_file = '{d}/server.pem'\nssl_key_file = '{d}/server.key'\nfsync = off\n"
    );
    append(&data.join("postgresql.conf"), &conf)?;
    std::fs::write(data.join("pg_hba.conf"), "local all all trust\nhostssl all all 127.0.0.1/32 trust\n")
        .map_err(|e| e.to_string())?;
    private.pg_ctl = Some(bin.join("pg_ctl"));
    let log = dir.join("pg.log");
    run(
        command(private.as_postgres, &bin.join("pg_ctl")).args([
            "-D".as_ref(),
            data.as_os_str(),
            "-l".as_ref(),
            log.as_os_str(),
            "-w".as_ref(),
            "start".as_ref(),
        ]),
        "pg_ctl start",
    )?;

    // MariaDB: require_secure_transport, and a `test` database.
    let my = free_port(55445..55450)?;
    let my_data = dir.join("my");
    // Temporary tables in a folder of its own, not the shared /tmp, whose
    // files are named after the server's pid (interrupt.rs says why).
    let my_tmp = dir.join("my-tmp");
    std::fs::create_dir_all(&my_tmp).map_err(|e| format!("{}: {e}", my_tmp.display()))?;
    run(
        Command::new("mariadb-install-db")
            .arg("--no-defaults")
            .arg(format!("--datadir={}", my_data.display()))
            .arg(format!("--tmpdir={}", my_tmp.display()))
            .args(["--user=root", "--auth-root-authentication-method=normal", "--skip-test-db"]),
        "mariadb-install-db",
    )?;
    let socket = dir.join("my.sock");
    let child = Command::new(mariadbd)
        .arg("--no-defaults")
        .arg(format!("--datadir={}", my_data.display()))
        .arg(format!("--tmpdir={}", my_tmp.display()))
        .arg(format!("--socket={}", socket.display()))
        .arg(format!("--port={my}"))
        .arg(format!("--pid-file={d}/my.pid"))
        .arg(format!("--ssl-cert={d}/server.pem"))
        .arg(format!("--ssl-key={d}/server.key"))
        .arg(format!("--ssl-ca={d}/ca.pem"))
        .args(["--bind-address=127.0.0.1", "--user=root", "--require-secure-transport=ON", "--skip-log-bin"])
        .args(["--innodb-buffer-pool-size=16M", "--skip-name-resolve"])
        .arg(format!("--log-error={d}/my.err"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start mariadbd: {e}"))?;
    private.mariadb = Some(child);
    let create = || {
        Command::new("mariadb")
            .arg("--no-defaults")
            .arg(format!("--socket={}", socket.display()))
            .args(["-u", "root", "-e", "CREATE DATABASE IF NOT EXISTS test"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    wait_for("mariadbd", create)?;
    Ok(Ports { pg, my })
}

fn append(path: &Path, text: &str) -> Result<(), String> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().append(true).open(path).map_err(|e| e.to_string())?;
    f.write_all(text.as_bytes()).map_err(|e| e.to_string())
}

fn unsafe_is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// `reapcheck args` with only `env` configuring targets; stdout and stderr
/// together, and whether it exited 0.
fn reapcheck(args: &[&str], env: &[(&str, String)]) -> (bool, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_reapcheck"));
    cmd.args(args).current_dir(root()).env_remove("REAPCHECK_REQUIRE");
    for t in reapcheck::target::Target::ALL {
        cmd.env_remove(t.url_variable());
    }
    let out = cmd.envs(env.iter().map(|(k, v)| (*k, v.as_str()))).output().expect("the binary runs");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

#[test]
fn tls_connections_are_verified_and_a_server_requiring_tls_explains_its_refusal() {
    let dir = std::env::temp_dir().join(format!("reapcheck-tls-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let mut private = Private { dir: dir.clone(), pg_ctl: None, as_postgres: false, mariadb: None };
    let ports = match start(&mut private) {
        Ok(ports) => ports,
        Err(why) if std::env::var("CI").is_ok_and(|v| v == "true") => panic!("CI=true and no private servers: {why}"),
        Err(why) => {
            eprintln!("skipped: cannot start private TLS servers here: {why}");
            return;
        }
    };
    let ca = dir.join("ca.pem").display().to_string();
    let other = dir.join("other-ca.pem").display().to_string();
    let pg = |options: &str| format!("postgres://postgres@127.0.0.1:{}/postgres?{options}", ports.pg);
    let my = |options: &str| format!("mysql://root@127.0.0.1:{}/test?{options}", ports.my);

    // Verified connections: the subset passes on both servers.
    let env = [
        ("REAPCHECK_POSTGRES_URL", pg(&format!("sslmode=verify-full&sslrootcert={ca}"))),
        ("REAPCHECK_MARIADB_URL", my(&format!("ssl-mode=VERIFY_IDENTITY&ssl-ca={ca}"))),
        ("REAPCHECK_REQUIRE", "postgres,mariadb".to_owned()),
    ];
    let (ok, out) = reapcheck(&["run", "--db", "postgres,mariadb", SUBSET], &env);
    assert!(ok, "the verified run failed:\n{out}");
    assert!(out.contains("on postgres [postgres ") && out.contains("on mariadb [mariadb "), "{out}");
    assert!(out.contains(" passed, 0 failed, 0 skipped"), "{out}");

    // Another CA: the certificate check refuses both servers.
    for (target, url) in [
        ("postgres", ("REAPCHECK_POSTGRES_URL", pg(&format!("sslmode=verify-full&sslrootcert={other}")))),
        ("mariadb", ("REAPCHECK_MARIADB_URL", my(&format!("ssl-mode=VERIFY_IDENTITY&ssl-ca={other}")))),
    ] {
        let (ok, out) = reapcheck(&["run", "--db", target, "windows/queue-names-exact"], &[url]);
        assert!(!ok, "{target} accepted a certificate of another CA:\n{out}");
        assert!(out.contains("cannot reach") && out.contains("certificate"), "{target}:\n{out}");
    }

    // TLS turned off: refused, with the reason and the option to use.
    for (target, url, enable) in [
        ("postgres", ("REAPCHECK_POSTGRES_URL", pg("sslmode=disable")), "`sslmode=verify-full&sslrootcert=<CA file>`"),
        ("mariadb", ("REAPCHECK_MARIADB_URL", my("ssl-mode=DISABLED")), "`ssl-mode=VERIFY_IDENTITY&ssl-ca=<CA file>`"),
    ] {
        let (ok, out) = reapcheck(&["run", "--db", target, "windows/queue-names-exact"], &[url]);
        assert!(!ok, "{target} ran without TLS:\n{out}");
        assert!(out.contains("the server requires encryption and the url turns it off"), "{target}:\n{out}");
        assert!(out.contains(enable), "{target}:\n{out}");
        let line = out.lines().find(|l| l.contains("requires encryption")).unwrap_or_default();
        eprintln!("{target} refused as expected: {line}");
    }

    // The private MariaDB has no time zone tables (a plain
    // mariadb-install-db): a named-zone scenario fails with the one line
    // naming the loader, not error 1298 alone.
    let url = ("REAPCHECK_MARIADB_URL", my(&format!("ssl-mode=VERIFY_IDENTITY&ssl-ca={ca}")));
    let (ok, out) = reapcheck(&["run", "--db", "mariadb", "time/dst-spring-forward-gap"], &[url]);
    assert!(!ok, "a named zone ran without zone tables:\n{out}");
    assert!(out.contains("the server has no time zone tables"), "{out}");
    assert!(out.contains("sh ci/mysql-timezones.sh") && out.contains("mysql_tzinfo_to_sql"), "{out}");
}
