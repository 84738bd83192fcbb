//! TLS on every driver: the URL options that ask for it, and the one message
//! for a server that requires encryption when the URL turned it off.
//!
//! Both drivers are built with rustls on the aws-lc-rs crypto backend:
//! tiberius' `rustls` feature pulls in tokio-rustls with its default
//! backend, aws-lc-rs, so sqlx on ring would build a second crypto library
//! for nothing (README.md, "TLS", has the measured cost).
//!
//! - PostgreSQL and CockroachDB URLs take libpq's `sslmode` (`disable`,
//!   `allow`, `prefer`, the default, `require`, `verify-ca`, `verify-full`)
//!   and `sslrootcert=<CA file>`; MySQL and MariaDB URLs take `ssl-mode`
//!   (`DISABLED`, `PREFERRED`, the default, `REQUIRED`, `VERIFY_CA`,
//!   `VERIFY_IDENTITY`) and `ssl-ca=<CA file>`. sqlx reads both itself.
//! - SQL Server URLs take `encrypt` (`true`, the default, or `false`),
//!   `trustServerCertificate` (`true` accepts any certificate) and
//!   `trustServerCertificateCA=<CA file>`, read by [`MssqlTls::from_pairs`].
//!   With `encrypt=false` a server that requires encryption still gets it:
//!   the TDS prelogin lets the server demand it and tiberius then encrypts,
//!   so the login never crosses the wire in clear to such a server.
//!
//! When a PostgreSQL or MySQL server refuses a connection made with TLS
//! disabled, [`explain_pg_refusal`] and [`explain_mysql_refusal`] try once
//! more with TLS (unverified: no worse than the clear text the URL asked
//! for); if that one is let in, the server requires encryption, and the error
//! says so and names the option that turns it on.

use std::time::Duration;

use sqlx::mysql::{MySqlConnectOptions, MySqlSslMode};
use sqlx::postgres::{PgConnectOptions, PgSslMode};
use sqlx::{ConnectOptions, Connection};

use super::error::{BackendError, BackendErrorKind};

/// `e` explained when the PostgreSQL server refused it because the URL
/// says `sslmode=disable` and the server only accepts TLS; else `e`.
pub async fn explain_pg_refusal(e: BackendError, options: &PgConnectOptions, timeout: Duration) -> BackendError {
    if !matches!(options.get_ssl_mode(), PgSslMode::Disable) || e.kind != BackendErrorKind::Database {
        return e;
    }
    let encrypted = options.clone().ssl_mode(PgSslMode::Require);
    match tokio::time::timeout(timeout, encrypted.connect()).await {
        Ok(Ok(conn)) => {
            let _ = conn.close().await;
            requires_encryption(&e, "sslmode=disable", "sslmode=verify-full&sslrootcert=<CA file>")
        }
        _ => e,
    }
}

/// `e` explained when the MySQL or MariaDB server refused it because the
/// URL says `ssl-mode=DISABLED` and the server requires secure transport
/// (MariaDB answers that with error 1045, Oracle MySQL with 3159); else `e`.
pub async fn explain_mysql_refusal(e: BackendError, options: &MySqlConnectOptions, timeout: Duration) -> BackendError {
    if !matches!(options.get_ssl_mode(), MySqlSslMode::Disabled) || e.kind != BackendErrorKind::Database {
        return e;
    }
    let encrypted = options.clone().ssl_mode(MySqlSslMode::Required);
    match tokio::time::timeout(timeout, encrypted.connect()).await {
        Ok(Ok(conn)) => {
            let _ = conn.close().await;
            requires_encryption(&e, "ssl-mode=DISABLED", "ssl-mode=VERIFY_IDENTITY&ssl-ca=<CA file>")
        }
        _ => e,
    }
}

/// The error of a server that requires encryption, which the URL turned off
/// with `disabled`; `enable` is the option to put there instead.
fn requires_encryption(refused: &BackendError, disabled: &str, enable: &str) -> BackendError {
    let message = format!(
        "the server requires encryption and the url turns it off with `{disabled}`: replace it with `{enable}` \
         (the server's refusal: {})",
        refused.message
    );
    BackendError::new(BackendErrorKind::Connection, message)
}

/// How a SQL Server connection encrypts, from the URL's options.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MssqlTls {
    /// `encrypt=false`: no TLS unless the server requires it.
    pub plaintext: bool,
    /// How the server's certificate is checked.
    pub trust: MssqlTrust,
}

/// How a SQL Server certificate is checked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum MssqlTrust {
    /// Against the system's root certificates and the host name.
    #[default]
    System,
    /// Against this CA file (PEM or DER) and the host name.
    CaFile(String),
    /// Not at all (`trustServerCertificate=true`): a self-signed test server.
    Any,
}

/// The options a SQL Server URL accepts, for messages.
pub const MSSQL_OPTIONS: &str =
    "encrypt=true|false, trustServerCertificate=true|false, trustServerCertificateCA=<CA file>";

impl MssqlTls {
    /// The TLS settings of a URL's `?name=value` pairs (names compared
    /// without case, as ADO.NET does); `Err` names the option that is
    /// unknown or has a wrong value, never quoting other parts of the URL.
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<MssqlTls, String> {
        let mut tls = MssqlTls::default();
        let mut trust_any = false;
        for (name, value) in pairs {
            match name.to_ascii_lowercase().as_str() {
                "encrypt" => tls.plaintext = !flag(name, value)?,
                "trustservercertificate" => trust_any = flag(name, value)?,
                "trustservercertificateca" if !value.is_empty() => tls.trust = MssqlTrust::CaFile(value.to_owned()),
                "trustservercertificateca" => return Err(format!("`{name}` needs a file name")),
                _ => return Err(format!("unknown option `{name}`: the url takes {MSSQL_OPTIONS}")),
            }
        }
        if trust_any {
            if tls.trust != MssqlTrust::System {
                return Err("`trustServerCertificate=true` and `trustServerCertificateCA` exclude each other".into());
            }
            tls.trust = MssqlTrust::Any;
        }
        Ok(tls)
    }

    /// Applies these settings to a tiberius configuration: `Required`
    /// encryption by default, `NotSupported` (plain unless the server
    /// requires TLS) under `encrypt=false`.
    pub fn apply(&self, config: &mut tiberius::Config) {
        let level =
            if self.plaintext { tiberius::EncryptionLevel::NotSupported } else { tiberius::EncryptionLevel::Required };
        config.encryption(level);
        match &self.trust {
            MssqlTrust::System => {}
            MssqlTrust::CaFile(path) => config.trust_cert_ca(path),
            MssqlTrust::Any => config.trust_cert(),
        }
    }

    /// A hint to append to a TLS failure: which option accepts the server's
    /// certificate.
    pub fn hint(&self) -> &'static str {
        match self.trust {
            MssqlTrust::System => {
                "; if the server's certificate is self-signed or from a private CA, add \
                 `trustServerCertificateCA=<CA file>` (or, for a test server, `trustServerCertificate=true`) to the url"
            }
            MssqlTrust::CaFile(_) => {
                "; check that `trustServerCertificateCA` names the CA that signed the server's certificate"
            }
            MssqlTrust::Any => "",
        }
    }
}

/// `true` or `false` (also `yes`/`no`, any case), else an error naming `name`.
fn flag(name: &str, value: &str) -> Result<bool, String> {
    match value.to_ascii_lowercase().as_str() {
        "true" | "yes" => Ok(true),
        "false" | "no" => Ok(false),
        _ => Err(format!("`{name}` must be true or false")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mssql_encrypts_and_checks_the_certificate_by_default() {
        assert_eq!(MssqlTls::from_pairs([]), Ok(MssqlTls { plaintext: false, trust: MssqlTrust::System }));
    }

    #[test]
    fn mssql_options_are_read_without_case() {
        let tls = MssqlTls::from_pairs([("Encrypt", "False"), ("TRUSTSERVERCERTIFICATE", "yes")]).unwrap();
        assert_eq!(tls, MssqlTls { plaintext: true, trust: MssqlTrust::Any });
        let tls = MssqlTls::from_pairs([("trustServerCertificateCA", "/ca.pem")]).unwrap();
        assert_eq!(tls.trust, MssqlTrust::CaFile("/ca.pem".into()));
    }

    #[test]
    fn bad_mssql_options_are_named() {
        let e = MssqlTls::from_pairs([("sslmode", "require")]).unwrap_err();
        assert!(e.contains("unknown option `sslmode`") && e.contains("trustServerCertificate"), "{e}");
        let e = MssqlTls::from_pairs([("encrypt", "strict")]).unwrap_err();
        assert_eq!(e, "`encrypt` must be true or false");
        let e = MssqlTls::from_pairs([("trustServerCertificate", "true"), ("trustServerCertificateCA", "x")]);
        assert!(e.unwrap_err().contains("exclude each other"));
    }

    #[test]
    fn the_refusal_names_the_option_to_remove_and_the_one_to_use() {
        let refused = BackendError::new(BackendErrorKind::Database, "no pg_hba.conf entry, no encryption");
        let e = requires_encryption(&refused, "sslmode=disable", "sslmode=verify-full&sslrootcert=<CA file>");
        assert_eq!(e.kind, BackendErrorKind::Connection);
        assert!(e.message.starts_with("the server requires encryption"), "{e}");
        assert!(e.message.contains("`sslmode=disable`") && e.message.contains("no pg_hba.conf entry"), "{e}");
    }
}
