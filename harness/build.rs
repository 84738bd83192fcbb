//! Rebuilds the binary when the embedded dialect SQL changes, and tells the
//! live backend tests which servers exist: `cfg(live_postgres)` and friends
//! are set when `REAPCHECK_<TARGET>_URL` is set at build time, so a test
//! that needs a server is reported *ignored* (with its reason) rather than
//! passing without having checked anything.

fn main() {
    println!("cargo::rerun-if-changed=../dialects");
    for (cfg, variable) in [
        ("live_postgres", "REAPCHECK_POSTGRES_URL"),
        ("live_mariadb", "REAPCHECK_MARIADB_URL"),
        ("live_mssql", "REAPCHECK_MSSQL_URL"),
    ] {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
        println!("cargo::rerun-if-env-changed={variable}");
        if std::env::var(variable).is_ok_and(|v| !v.trim().is_empty()) {
            println!("cargo::rustc-cfg={cfg}");
        }
    }
}
