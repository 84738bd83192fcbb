//! SQL Server through tiberius (TDS 7.3, TLS through rustls).
//!
//! `REAPCHECK_MSSQL_URL` is a URL,
//! `mssql://user:password@host:port/database?encrypt=true&trustServerCertificate=false`
//! (SQL Server authentication; port 1433 and database `master` when left
//! out; characters such as `@ : / %` in the user or password percent-encoded).
//! ADO connection strings are not accepted: one form, parsed here, keeps the
//! password out of every message and `Debug` output.
//!
//! The connection is encrypted unless the URL says `encrypt=false`, and
//! even then when the server requires it; the options are read by
//! [`super::tls::MssqlTls`], which says what each does.
//!
//! Values are bound with their types: text as `nvarchar`, integers as
//! `bigint`, instants as `datetime2` (a chrono `NaiveDateTime` holding UTC),
//! NULLs as typed NULLs of the same types. Columns are decoded by the kind
//! the contract declares; an instant must come back as `datetime2`, so a
//! dialect that stored `datetime` (rounded to about 3 ms) or
//! `datetimeoffset` fails loudly instead of comparing almost right.
//!
//! A statement with parameters travels through `sp_executesql`, and its
//! count of changed rows is the sum of the counts the server reports. A
//! command without parameters travels as a plain batch instead: inside
//! `sp_executesql` a `USE` lasts only until the call returns, and the
//! dialect's `enter_namespace` is a `USE`. Each connection starts with
//! `SET NOCOUNT OFF`, without which the server reports no counts at all and
//! every guarded UPDATE would read as "0 rows".

use std::fmt;
use std::time::Duration;

use chrono::{Datelike, NaiveDateTime};
use tiberius::{AuthMethod, Client, ColumnData, Config, FromSql, IntoSql, Query, Row};
use tokio::net::TcpStream;
use tokio_util::compat::{Compat, TokioAsyncWriteCompatExt};

use super::error::{BackendError, BackendErrorKind};
use super::instants::InstantEncoding;
use super::numeric;
use super::retry;
use super::tls::MssqlTls;
use crate::dialect::contract::Column;
use crate::engine::{Kind, Value};
use crate::time::Instant;

/// How long a connection attempt (TCP, login and session settings) may take
/// before the server counts as unreachable.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The port SQL Server listens on unless told otherwise.
const DEFAULT_PORT: u16 = 1433;

/// The database a login lands in when the URL names none; every login may
/// enter it, and scenarios run in databases of their own anyway.
const DEFAULT_DATABASE: &str = "master";

/// The form the URL must take, for messages.
const URL_FORM: &str =
    "write mssql://user:password@host:port/database, optionally with ?encrypt=false or ?trustServerCertificate=true";

/// Sent once per connection, as a plain batch so that it lasts. NOCOUNT OFF:
/// row counts are the result of every guarded UPDATE. IMPLICIT_TRANSACTIONS
/// OFF: each statement commits on its own (and CREATE DATABASE may not run
/// inside a transaction). ANSI_WARNINGS ON: a value too long for its column
/// is an error, not silently truncated.
const SESSION_SETTINGS: &str = "SET NOCOUNT OFF; SET IMPLICIT_TRANSACTIONS OFF; SET ANSI_WARNINGS ON";

/// Where and as whom to connect, parsed from `REAPCHECK_MSSQL_URL`. Its
/// `Debug` output hides the password.
#[derive(Clone, PartialEq, Eq)]
pub struct MssqlUrl {
    /// The server's host name or address.
    pub host: String,
    /// Its TCP port.
    pub port: u16,
    /// The database the login starts in.
    pub database: String,
    /// The SQL Server login.
    pub user: String,
    password: String,
    /// Encryption and certificate checks, from the URL's options.
    pub tls: MssqlTls,
}

impl fmt::Debug for MssqlUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MssqlUrl")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("database", &self.database)
            .field("user", &self.user)
            .field("password", &"***")
            .field("tls", &self.tls)
            .finish()
    }
}

impl MssqlUrl {
    /// Parses `mssql://user:password@host:port/database`. No message names
    /// the password, nor echoes the text it came in.
    pub fn parse(text: &str) -> Result<MssqlUrl, BackendError> {
        let url = url::Url::parse(text).map_err(|e| url_error(format!("{e}; {URL_FORM}")))?;
        if url.scheme() != "mssql" {
            // The scheme is not quoted: in `user:password@host` it is the user.
            return Err(url_error(format!("the url must start with mssql://; {URL_FORM}")));
        }
        if url.fragment().is_some() {
            return Err(url_error(format!("the url takes no `#` fragment; {URL_FORM}")));
        }
        let pairs: Vec<(String, String)> = url.query_pairs().map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
        let tls = MssqlTls::from_pairs(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str()))).map_err(url_error)?;
        let user = percent_decode(url.username(), "user")?;
        let password = percent_decode(url.password().unwrap_or_default(), "password")?;
        if user.is_empty() || password.is_empty() {
            return Err(url_error(format!("the url needs a user and a password; {URL_FORM}")));
        }
        Ok(MssqlUrl {
            host: host(&url)?,
            port: url.port().unwrap_or(DEFAULT_PORT),
            database: database(&url)?,
            user,
            password,
            tls,
        })
    }

    /// The tiberius settings for this server: SQL Server authentication,
    /// encryption as the URL's options say. (tiberius bounds the handshake
    /// at 15 s by itself; the caller's tighter bound covers the whole
    /// attempt.)
    fn config(&self) -> Config {
        let mut config = Config::new();
        config.host(&self.host);
        config.port(self.port);
        config.database(&self.database);
        config.authentication(AuthMethod::sql_server(&self.user, &self.password));
        self.tls.apply(&mut config);
        config.application_name("reapcheck");
        config
    }

    /// `e` with the password replaced, should a driver message ever quote it.
    fn redact(&self, mut e: BackendError) -> BackendError {
        e.message = e.message.replace(&self.password, "***");
        e
    }
}

/// A malformed `REAPCHECK_MSSQL_URL`, as a connection error.
fn url_error(message: String) -> BackendError {
    BackendError::new(BackendErrorKind::Connection, format!("invalid REAPCHECK_MSSQL_URL: {message}"))
}

/// The host, unbracketed when it is an IPv6 address.
fn host(url: &url::Url) -> Result<String, BackendError> {
    match url.host() {
        Some(url::Host::Domain(d)) if !d.is_empty() => percent_decode(d, "host"),
        Some(url::Host::Ipv4(a)) => Ok(a.to_string()),
        Some(url::Host::Ipv6(a)) => Ok(a.to_string()),
        _ => Err(url_error(format!("the url names no host; {URL_FORM}"))),
    }
}

/// The one path segment, or `master`.
fn database(url: &url::Url) -> Result<String, BackendError> {
    let name = percent_decode(url.path().trim_start_matches('/'), "database")?;
    if name.contains('/') {
        return Err(url_error(format!("the path must be one database name; {URL_FORM}")));
    }
    Ok(if name.is_empty() { DEFAULT_DATABASE.to_owned() } else { name })
}

/// Decodes `%XX` escapes; `what` names the part for messages, which never
/// quote the text.
fn percent_decode(text: &str, what: &str) -> Result<String, BackendError> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'%' {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        let hex = bytes.get(i + 1..i + 3).filter(|h| h.iter().all(u8::is_ascii_hexdigit));
        let byte = hex.and_then(|h| u8::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok());
        let byte =
            byte.ok_or_else(|| url_error(format!("the {what} has a `%` that is not followed by two hex digits")))?;
        out.push(byte);
        i += 3;
    }
    String::from_utf8(out).map_err(|_| url_error(format!("the {what} is not UTF-8 once percent-decoded")))
}

/// One connection to SQL Server.
pub struct MssqlConn {
    client: Client<Compat<TcpStream>>,
    /// A statement was given up by the time limit (SQL Server has no
    /// session setting for one: the client-side limit of
    /// `crate::deadline` is its query timeout), or its future dropped: the
    /// connection is dropped, which ends the request on the server.
    busy: bool,
    /// Whether the server still answers: its server's, for a connection of
    /// a [`super::Server`] ([`MssqlConn::connect_watched`]). SQL Server has
    /// no cancel here, so only a connect that times out takes it as
    /// stopped; a statement past the limit may be a slow one.
    answering: super::cancel::Answering,
    /// How instants are bound; `NaiveUtc` is the same as `Native` here.
    pub(super) instants: InstantEncoding,
    /// What `bench --compare`'s capture calls this session.
    pub(super) capture: crate::compare::capture::Session,
}

impl MssqlConn {
    /// Connects and applies the session settings, within [`CONNECT_TIMEOUT`].
    pub async fn connect(url: &MssqlUrl) -> Result<Self, BackendError> {
        Self::connect_within(url, CONNECT_TIMEOUT, &super::cancel::Answering::default()).await
    }

    /// [`MssqlConn::connect`] to a server that may stop answering: refused
    /// once it has, and a connect that times out takes it as stopped.
    pub(super) async fn connect_watched(
        url: &MssqlUrl,
        answering: &super::cancel::Answering,
    ) -> Result<Self, BackendError> {
        Self::connect_within(url, CONNECT_TIMEOUT, answering).await
    }

    async fn connect_within(
        url: &MssqlUrl,
        timeout: Duration,
        answering: &super::cancel::Answering,
    ) -> Result<Self, BackendError> {
        let attempt = async {
            let tcp = TcpStream::connect((url.host.as_str(), url.port))
                .await
                .map_err(|e| BackendError::new(BackendErrorKind::Connection, e.to_string()))?;
            // Requests are small and answered one at a time: do not let
            // Nagle's algorithm hold them back.
            tcp.set_nodelay(true).map_err(|e| BackendError::new(BackendErrorKind::Connection, e.to_string()))?;
            let client = Client::connect(url.config(), tcp.compat_write()).await.map_err(|e| {
                let tls_failed = matches!(e, tiberius::error::Error::Tls(_));
                let mut e = error(e);
                if tls_failed {
                    e.message.push_str(url.tls.hint());
                }
                e
            })?;
            let mut conn = MssqlConn {
                client,
                busy: false,
                answering: answering.clone(),
                instants: InstantEncoding::default(),
                capture: crate::compare::capture::Session::open(),
            };
            conn.batch(SESSION_SETTINGS).await?;
            Ok(conn)
        };
        let silent = || BackendError::new(BackendErrorKind::Connection, format!("no answer within {timeout:?}"));
        let reached = super::cancel::connecting(answering, timeout, attempt, silent).await;
        reached.map_err(|e| {
            let e = url.redact(e);
            BackendError::new(
                e.kind,
                format!("cannot connect to SQL Server at {}:{}: {}", url.host, url.port, e.message),
            )
        })
    }

    /// Runs a plain batch (no parameters) and returns every result set;
    /// a lock race ([`retry::mssql_transient`]: 1807 while another
    /// `CREATE DATABASE` copies `model`, 3702 or 5061 while a drop waits for
    /// a session) runs it again after a short wait, a bounded number of times.
    async fn batch(&mut self, sql: &str) -> Result<Vec<Vec<Row>>, BackendError> {
        let client = &mut self.client;
        let transient = |e: &tiberius::error::Error| retry::may_retry(sql) && retry::mssql_transient(e);
        let running = retry::retrying(transient, async || client.simple_query(sql).await?.into_results().await);
        super::cancel::bounded_busy(&mut self.busy, None, &self.answering, async { running.await.map_err(error) }).await
    }

    /// Runs one command; returns the rows it changed (retried as
    /// [`MssqlConn::batch`] says).
    pub async fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, BackendError> {
        if sent_as_batch(params) {
            let results = self.batch(&with_row_count(sql)).await?;
            return row_count(&results);
        }
        let values = values(params)?;
        let client = &mut self.client;
        let running = retry::retrying(retry::mssql_transient, async || query_of(sql, &values).execute(client).await);
        let done =
            super::cancel::bounded_busy(&mut self.busy, None, &self.answering, async { running.await.map_err(error) })
                .await?;
        Ok(done.total())
    }

    /// Runs one query and decodes its rows as `columns` declare.
    pub async fn query(
        &mut self,
        sql: &str,
        params: &[Value],
        columns: &[Column],
    ) -> Result<Vec<Vec<Value>>, BackendError> {
        let query = bound(sql, params)?;
        let client = &mut self.client;
        let running = async { query.query(client).await.map_err(error)?.into_first_result().await.map_err(error) };
        let rows = super::cancel::bounded_busy(&mut self.busy, None, &self.answering, running).await?;
        rows.iter().map(|r| decode_row(r, columns)).collect()
    }

    /// Closes the connection.
    pub async fn close(self) {
        if self.busy {
            // Given up mid-reply: dropping it closes the socket.
            return;
        }
        let _ = self.client.close().await;
    }
}

/// The product and version of the server at `url`, such as
/// `mssql Microsoft SQL Server 2022 (RTM-CU12) (KB5033663) - 16.0.4125.3 (X64)`:
/// a trivial probe that also proves the login works.
pub async fn server_version(url: &MssqlUrl) -> Result<String, BackendError> {
    let mut conn = MssqlConn::connect(url).await?;
    let results = conn.batch("SELECT @@VERSION").await;
    conn.close().await;
    let row = results?.into_iter().next().and_then(|rows| rows.into_iter().next());
    let raw: Option<&str> = match &row {
        Some(r) => r.try_get(0).map_err(error)?,
        None => None,
    };
    let raw = raw.ok_or_else(|| BackendError::new(BackendErrorKind::Decode, "SELECT @@VERSION returned nothing"))?;
    Ok(version_label(raw))
}

/// `mssql` and the first line of `@@VERSION` (the rest is build date,
/// copyright and edition), white space collapsed.
fn version_label(raw: &str) -> String {
    let first = raw.lines().next().unwrap_or_default().split_whitespace().collect::<Vec<_>>().join(" ");
    format!("mssql {first}")
}

/// Whether a command goes as a plain batch rather than through
/// `sp_executesql`: when it has no parameters, so that a `USE` lasts.
fn sent_as_batch(params: &[Value]) -> bool {
    params.is_empty()
}

/// `sql` followed by a query of its row count, for commands sent as a plain
/// batch, whose counts tiberius does not return. The newline ends a trailing
/// `--` comment. (Not for statements that must be alone in their batch, such
/// as CREATE VIEW; the dialect has none.)
fn with_row_count(sql: &str) -> String {
    format!("{sql}\n;SELECT CAST(@@ROWCOUNT AS bigint)")
}

/// The count [`with_row_count`] appended: the last result set's one value.
fn row_count(results: &[Vec<Row>]) -> Result<u64, BackendError> {
    let missing = || BackendError::new(BackendErrorKind::Decode, "the batch returned no row count");
    let row = results.last().and_then(|rows| rows.first()).ok_or_else(missing)?;
    let count: i64 = row.try_get(0).map_err(error)?.ok_or_else(missing)?;
    u64::try_from(count).map_err(|_| BackendError::new(BackendErrorKind::Decode, format!("a row count of {count}")))
}

/// `sql` with `params` bound in order (`@P1`, `@P2`, ...).
fn bound(sql: &str, params: &[Value]) -> Result<Query<'static>, BackendError> {
    Ok(query_of(sql, &values(params)?))
}

/// What tiberius sends for each of `params`.
fn values(params: &[Value]) -> Result<Vec<ColumnData<'static>>, BackendError> {
    params.iter().map(column_data).collect()
}

/// `sql` with `values` bound to `@P1`, `@P2`, ...
fn query_of(sql: &str, values: &[ColumnData<'static>]) -> Query<'static> {
    let mut query = Query::new(sql.to_owned());
    for v in values {
        query.bind(v.clone());
    }
    query
}

/// What tiberius sends for `value`.
fn column_data(value: &Value) -> Result<ColumnData<'static>, BackendError> {
    Ok(match value {
        Value::Text(s) => s.clone().into_sql(),
        Value::Int(i) => i.into_sql(),
        Value::Instant(t) => naive_utc(*t)?.into_sql(),
        Value::Null(Kind::Text) => None::<String>.into_sql(),
        Value::Null(Kind::Int) => None::<i64>.into_sql(),
        Value::Null(Kind::Instant) => None::<NaiveDateTime>.into_sql(),
    })
}

/// `t` as the UTC wall-clock time a `datetime2` holds, exact to the
/// microsecond; instants outside `datetime2`'s years 1 to 9999 are refused.
fn naive_utc(t: Instant) -> Result<NaiveDateTime, BackendError> {
    let naive = t.to_chrono().naive_utc();
    if !(1..=9999).contains(&naive.year()) {
        return Err(BackendError::new(BackendErrorKind::Decode, format!("{t} is outside datetime2's years 1 to 9999")));
    }
    Ok(naive)
}

/// A returned row: the declared columns first, in order; extras after them
/// are ignored.
fn decode_row(row: &Row, columns: &[Column]) -> Result<Vec<Value>, BackendError> {
    BackendError::check_width(row.len(), columns.len())?;
    row.cells().zip(columns).map(|((_, cell), c)| decode_cell(cell, c)).collect()
}

/// The value of one returned cell, read as `column` declares.
fn decode_cell(cell: &ColumnData<'static>, column: &Column) -> Result<Value, BackendError> {
    if is_null(cell) {
        return Ok(Value::Null(column.kind));
    }
    match (column.kind, cell) {
        (Kind::Text, ColumnData::String(Some(s))) => Ok(Value::Text(s.to_string())),
        (Kind::Int, ColumnData::I64(Some(v))) => Ok(Value::Int(*v)),
        (Kind::Int, ColumnData::I32(Some(v))) => Ok(Value::Int(i64::from(*v))),
        (Kind::Int, ColumnData::I16(Some(v))) => Ok(Value::Int(i64::from(*v))),
        (Kind::Int, ColumnData::U8(Some(v))) => Ok(Value::Int(i64::from(*v))),
        (Kind::Int, ColumnData::Bit(Some(v))) => Ok(Value::Int(i64::from(*v))),
        (Kind::Int, ColumnData::Numeric(Some(n))) => numeric::integral_scaled(n.value(), n.scale())
            .map(Value::Int)
            .map_err(|why| BackendError::new(BackendErrorKind::Decode, format!("column `{}`: {why}", column.name))),
        (Kind::Instant, ColumnData::DateTime2(Some(_))) => Ok(match NaiveDateTime::from_sql(cell).map_err(error)? {
            Some(naive) => Value::Instant(Instant::from_chrono(naive.and_utc())),
            None => Value::Null(Kind::Instant),
        }),
        (kind, other) => {
            let expected = match kind {
                Kind::Text => "nvarchar",
                Kind::Int => "an integer",
                Kind::Instant => "datetime2",
            };
            let message = format!("column `{}` should be {expected} but is {}", column.name, type_name(other));
            Err(BackendError::new(BackendErrorKind::Decode, message))
        }
    }
}

/// Whether `cell` is a NULL, of whatever type.
fn is_null(cell: &ColumnData<'_>) -> bool {
    match cell {
        ColumnData::U8(v) => v.is_none(),
        ColumnData::I16(v) => v.is_none(),
        ColumnData::I32(v) => v.is_none(),
        ColumnData::I64(v) => v.is_none(),
        ColumnData::F32(v) => v.is_none(),
        ColumnData::F64(v) => v.is_none(),
        ColumnData::Bit(v) => v.is_none(),
        ColumnData::String(v) => v.is_none(),
        ColumnData::Guid(v) => v.is_none(),
        ColumnData::Binary(v) => v.is_none(),
        ColumnData::Numeric(v) => v.is_none(),
        ColumnData::Xml(v) => v.is_none(),
        ColumnData::DateTime(v) => v.is_none(),
        ColumnData::SmallDateTime(v) => v.is_none(),
        ColumnData::Time(v) => v.is_none(),
        ColumnData::Date(v) => v.is_none(),
        ColumnData::DateTime2(v) => v.is_none(),
        ColumnData::DateTimeOffset(v) => v.is_none(),
    }
}

/// The SQL Server type a cell came as, for messages.
fn type_name(cell: &ColumnData<'_>) -> &'static str {
    match cell {
        ColumnData::U8(_) => "tinyint",
        ColumnData::I16(_) => "smallint",
        ColumnData::I32(_) => "int",
        ColumnData::I64(_) => "bigint",
        ColumnData::F32(_) => "real",
        ColumnData::F64(_) => "float",
        ColumnData::Bit(_) => "bit",
        ColumnData::String(_) => "a string",
        ColumnData::Guid(_) => "uniqueidentifier",
        ColumnData::Binary(_) => "binary",
        ColumnData::Numeric(_) => "decimal",
        ColumnData::Xml(_) => "xml",
        ColumnData::DateTime(_) => "datetime (rounded to 1/300 s)",
        ColumnData::SmallDateTime(_) => "smalldatetime (rounded to the minute)",
        ColumnData::Time(_) => "time",
        ColumnData::Date(_) => "date",
        ColumnData::DateTime2(_) => "datetime2",
        ColumnData::DateTimeOffset(_) => "datetimeoffset",
    }
}

/// A tiberius failure as a backend error, classified by its variant.
fn error(e: tiberius::error::Error) -> BackendError {
    let kind = kind_of(&e);
    let mut message = e.to_string();
    if kind == BackendErrorKind::TooManyConnections {
        message.push_str(": the server refused one more connection; lower --jobs or raise its user connections limit");
    }
    BackendError::new(kind, message)
}

/// The kind of a tiberius failure, by variant, never by message text.
fn kind_of(e: &tiberius::error::Error) -> BackendErrorKind {
    use tiberius::error::Error as E;
    match e {
        E::Server(t) => server_error_kind(t.code()),
        E::Conversion(_) | E::Encoding(_) | E::Utf8 | E::Utf16 | E::ParseInt(_) => BackendErrorKind::Decode,
        // Routing: Azure asks the client to reconnect elsewhere; not followed.
        E::Io { .. } | E::Protocol(_) | E::Tls(_) | E::Routing { .. } | E::BulkInput(_) => BackendErrorKind::Connection,
    }
}

/// The kind of a server error by its number: 17809, the server's `user
/// connections` limit reached; a statement the server cannot compile
/// ([`super::error::mssql_cannot_compile`], so that `mutate` reports a
/// mutant using what this version lacks as not applicable); else a
/// database error.
fn server_error_kind(number: u32) -> BackendErrorKind {
    match number {
        17809 => BackendErrorKind::TooManyConnections,
        n if super::error::mssql_cannot_compile(n) => BackendErrorKind::CannotCompile,
        _ => BackendErrorKind::Database,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{Connection, Server};

    #[test]
    fn server_errors_are_kinded_by_their_number() {
        // 195: `'GREATEST' is not a recognized built-in function name` (2019).
        assert_eq!(server_error_kind(195), BackendErrorKind::CannotCompile);
        assert_eq!(server_error_kind(102), BackendErrorKind::CannotCompile);
        assert_eq!(server_error_kind(17809), BackendErrorKind::TooManyConnections);
        // 245: a conversion failed at run time, a kill.
        assert_eq!(server_error_kind(245), BackendErrorKind::Database);
        assert_eq!(server_error_kind(2627), BackendErrorKind::Database);
    }
    use crate::dialect::contract::{self, Shape};
    use crate::dialect::text::{self, Placeholders};
    use crate::dialect::{Dialect, Source};
    use crate::engine::EngineError;
    use crate::model::Model;
    use crate::outcome::{Outcome, StepResult};
    use crate::scenario::{Scenario, Schema, parse_file};
    use crate::sql::{SqlEngine, namespace_script};
    use crate::time::Duration as Span;

    const PASSWORD: &str = "Sup3r-Secret";

    fn dialect() -> Dialect {
        Dialect::load(&Source::Embedded, "mssql").unwrap_or_else(|errors| {
            panic!("{}", errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))
        })
    }

    /// A statement's SQL without its `--` comments (no string in the
    /// dialect holds `--`).
    fn code(sql: &str) -> String {
        sql.lines().map(|l| l.split("--").next().unwrap_or_default()).collect::<Vec<_>>().join("\n")
    }

    fn sql(name: &str) -> String {
        let schema = if name.starts_with("legacy_") { Schema::Legacy } else { Schema::Standard };
        code(&dialect().statement(name.trim_start_matches("legacy_"), schema).sql)
    }

    fn at(text: &str) -> Instant {
        Instant::parse_rfc3339(text).unwrap()
    }

    fn url_to(host: &str, port: u16) -> MssqlUrl {
        MssqlUrl::parse(&format!("mssql://sa:{PASSWORD}@{host}:{port}/master")).unwrap()
    }

    // The dialect.

    #[test]
    fn the_dialect_loads_with_every_statement() {
        let d = dialect();
        let names: Vec<&str> = d.statements().map(|s| s.name.as_str()).collect();
        for required in contract::required_names() {
            assert!(names.contains(&required.as_str()), "mssql lacks `{required}`");
        }
        assert!(
            text::is_blank(&d.statement("set_time_zone", Schema::Standard).sql),
            "SQL Server has no session time zone"
        );
    }

    #[test]
    fn every_instant_column_is_datetime2_6() {
        for s in dialect().statements() {
            let lower = code(&s.sql).to_lowercase();
            for (i, _) in lower.match_indices("datetime") {
                assert!(
                    lower[i..].starts_with("datetime2(6)"),
                    "{}: an instant type other than datetime2(6)",
                    s.origin
                );
            }
        }
        assert_eq!(sql("schema").matches("datetime2(6)").count(), 6);
        assert_eq!(sql("legacy_schema").matches("datetime2(6)").count(), 5);
    }

    #[test]
    fn no_statement_measures_time_with_datediff() {
        for s in dialect().statements() {
            let upper = code(&s.sql).to_uppercase();
            assert!(!upper.contains("DATEDIFF("), "{}: DATEDIFF counts boundaries, not elapsed time", s.origin);
            assert!(
                !upper.contains("GETDATE") && !upper.contains("SYSDATETIME"),
                "{}: the harness owns the clock",
                s.origin
            );
        }
        let defer = sql("lease_defer");
        assert!(defer.contains("DATEDIFF_BIG(microsecond, :now, l.expires_at)"), "{defer}");
        assert!(defer.contains("+ 999999) / 1000000"), "{defer}");
        assert!(defer.contains("WHEN w.up < 1 THEN 1 WHEN w.up > 30 THEN 30 ELSE w.up END AS int"), "{defer}");
    }

    #[test]
    fn scans_use_the_floor_the_queue_filter_and_strict_comparisons() {
        let filter = "(:all_queues = 1 OR CHARINDEX(N',' + queue + N',', N',' + :queues + N',' COLLATE Latin1_General_BIN2) > 0)";
        assert!(sql("reap_scan").contains("COALESCE(heartbeat_at, updated_at) < DATEADD(second, -30, :now)"));
        assert!(sql("legacy_reap_scan").contains("updated_at < DATEADD(second, -30, :now)"));
        for scan in ["reap_scan", "legacy_reap_scan"] {
            assert!(sql(scan).contains(filter), "{scan}");
            assert!(sql(scan).trim_end().ends_with("ORDER BY id"), "{scan}");
        }
        for name in ["reap_retry", "reap_interrupt", "reap_fail"] {
            assert!(sql(name).contains("COALESCE(heartbeat_at, updated_at) < :cutoff"), "{name}");
            assert!(sql(&format!("legacy_{name}")).contains("updated_at < :cutoff"), "legacy_{name}");
        }
        assert!(sql("lease_takeover").contains("expires_at < :now"));
    }

    #[test]
    fn keys_and_tokens_compare_in_binary() {
        for schema in ["schema", "legacy_schema"] {
            let text = sql(schema);
            let columns: Vec<&str> = text.lines().filter(|l| l.contains("nvarchar")).collect();
            assert_eq!(columns.len(), 8, "{schema}");
            for line in columns {
                assert!(line.contains("COLLATE Latin1_General_BIN2"), "{schema}: {line}");
            }
        }
    }

    #[test]
    fn lease_acquire_inserts_only_when_absent() {
        let acquire = sql("lease_acquire");
        assert!(acquire.contains("WHERE NOT EXISTS (SELECT 1 FROM job_leases WITH (UPDLOCK, HOLDLOCK)"));
    }

    #[test]
    fn namespaces_are_databases_entered_by_a_plain_batch() {
        let d = dialect();
        let script = |name| code(&d.statement(name, Schema::Standard).sql).trim().to_owned();
        assert_eq!(script("create_namespace"), "CREATE DATABASE {namespace}");
        assert_eq!(script("enter_namespace"), "USE {namespace}");
        let drop = text::commands(&script("drop_namespace"));
        assert_eq!(drop.first().map(String::as_str), Some("USE master"));
        assert_eq!(drop.last().map(String::as_str), Some("DROP DATABASE {namespace}"));
        // No parameters: the backend sends them as plain batches, where USE lasts.
        for name in ["create_namespace", "enter_namespace", "drop_namespace"] {
            assert!(text::parameters(&script(name)).is_empty(), "{name}");
        }
    }

    #[test]
    fn every_counted_statement_travels_with_parameters() {
        // Counts come back from sp_executesql; a parameterless command would
        // travel as a batch and be counted by @@ROWCOUNT instead.
        let d = dialect();
        for s in d.statements() {
            let spec = contract::spec(&s.name).unwrap();
            let prepared = text::prepare(&s.sql, Placeholders::AtP);
            assert!(text::parameters(&prepared.sql).is_empty(), "{}: a `:name` survived", s.origin);
            for n in 1..=prepared.binds.len() {
                assert!(prepared.sql.contains(&format!("@P{n}")), "{}: @P{n} missing", s.origin);
            }
            if spec.shape == Shape::Update {
                assert!(!prepared.binds.is_empty(), "{}: an UPDATE without parameters", s.origin);
            }
        }
    }

    // The URL.

    #[test]
    fn a_full_url_parses() {
        let u = MssqlUrl::parse(&format!("mssql://sa:{PASSWORD}@db.internal:14330/reapcheck")).unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.database.as_str(), u.user.as_str()),
            ("db.internal", 14330, "reapcheck", "sa")
        );
        assert_eq!(u.password, PASSWORD);
    }

    #[test]
    fn port_and_database_have_defaults() {
        let u = MssqlUrl::parse("mssql://sa:pw@localhost").unwrap();
        assert_eq!((u.port, u.database.as_str()), (1433, "master"));
        assert_eq!(MssqlUrl::parse("mssql://sa:pw@localhost/").unwrap().database, "master");
    }

    #[test]
    fn user_and_password_are_percent_decoded() {
        let u = MssqlUrl::parse("mssql://app%40corp:p%40ss%3Aw%2Frd%25@[::1]:1433/jobs").unwrap();
        assert_eq!((u.user.as_str(), u.password.as_str(), u.host.as_str()), ("app@corp", "p@ss:w/rd%", "::1"));
    }

    #[test]
    fn bad_urls_are_refused_without_showing_the_password() {
        let cases = [
            format!("mssql://:{PASSWORD}@localhost/master"),
            "mssql://sa@localhost/master".to_owned(),
            "mssql://sa:@localhost/master".to_owned(),
            format!("mssql://sa:{PASSWORD}@/master"),
            format!("postgres://sa:{PASSWORD}@localhost/master"),
            format!("mssql://sa:{PASSWORD}@localhost:99999/master"),
            format!("mssql://sa:{PASSWORD}@localhost:1433/master?encrypt=maybe"),
            format!("mssql://sa:{PASSWORD}@localhost:1433/master?sslmode=require"),
            format!("mssql://sa:{PASSWORD}@localhost:1433/master#top"),
            format!("mssql://sa:{PASSWORD}%zz@localhost/master"),
            format!("mssql://sa:{PASSWORD}@localhost/a/b"),
            format!("sa:{PASSWORD}@localhost"),
        ];
        for case in cases {
            let e = MssqlUrl::parse(&case).expect_err(&case.replace(PASSWORD, "***"));
            assert_eq!(e.kind, BackendErrorKind::Connection);
            assert!(e.message.starts_with("invalid REAPCHECK_MSSQL_URL: "), "{}", e.message);
            assert!(!e.message.contains(PASSWORD) && !format!("{e:?}").contains(PASSWORD), "{}", e.message);
        }
    }

    #[test]
    fn tls_options_are_read_from_the_url() {
        use super::super::tls::MssqlTrust;
        assert_eq!(url_to("h", 1).tls, MssqlTls::default(), "encrypted and verified by default");
        let u = MssqlUrl::parse("mssql://sa:pw@h/db?encrypt=false&trustServerCertificate=true").unwrap();
        assert!(u.tls.plaintext);
        assert_eq!((u.tls.trust, u.database.as_str()), (MssqlTrust::Any, "db"));
        let u = MssqlUrl::parse("mssql://sa:pw@h?TrustServerCertificateCA=%2Fetc%2Fca.pem").unwrap();
        assert_eq!(u.tls.trust, MssqlTrust::CaFile("/etc/ca.pem".into()));
    }

    #[test]
    fn debug_output_hides_the_password() {
        let shown = format!("{:?}", url_to("localhost", 1433));
        assert!(!shown.contains(PASSWORD), "{shown}");
        assert!(shown.contains("localhost") && shown.contains("***"), "{shown}");
    }

    #[test]
    fn a_driver_message_quoting_the_password_is_redacted() {
        let e = BackendError::new(BackendErrorKind::Database, format!("login with '{PASSWORD}' failed"));
        assert_eq!(url_to("h", 1).redact(e).message, "login with '***' failed");
    }

    // Binding and decoding.

    #[test]
    fn values_are_bound_with_their_types() {
        assert_eq!(column_data(&Value::Text("a/1".into())).unwrap(), ColumnData::String(Some("a/1".into())));
        assert_eq!(column_data(&Value::Int(-5)).unwrap(), ColumnData::I64(Some(-5)));
        assert_eq!(column_data(&Value::Null(Kind::Text)).unwrap(), ColumnData::String(None));
        assert_eq!(column_data(&Value::Null(Kind::Int)).unwrap(), ColumnData::I64(None));
        assert_eq!(column_data(&Value::Null(Kind::Instant)).unwrap(), ColumnData::DateTime2(None));
        let params = [Value::Int(1), Value::Text("x".into()), Value::Null(Kind::Instant)];
        assert_eq!(bound("SELECT @P1, @P2, @P3", &params).unwrap().param_count(), 3);
    }

    #[test]
    fn an_instant_is_sent_as_datetime2_exact_to_the_microsecond() {
        let t = at("1969-07-20T20:17:40.000001Z");
        let ColumnData::DateTime2(Some(dt)) = column_data(&Value::Instant(t)).unwrap() else {
            panic!("not sent as datetime2")
        };
        let day = |y, m, d| chrono::NaiveDate::from_ymd_opt(y, m, d).unwrap();
        let days_since_year_1 = day(1969, 7, 20).signed_duration_since(day(1, 1, 1)).num_days();
        assert_eq!(i64::from(dt.date().days()), days_since_year_1);
        // Scale 7 counts 100 ns increments: ten per microsecond, none lost.
        assert_eq!(dt.time().scale(), 7);
        assert_eq!(dt.time().increments(), ((20 * 3600 + 17 * 60 + 40) * 1_000_000 + 1) * 10);
    }

    #[test]
    fn instants_convert_at_microsecond_precision_before_1970_and_after_2038() {
        let cases = [
            ("1901-12-13T20:45:51.999999Z", "1901-12-13 20:45:51.999999"),
            ("1969-12-31T23:59:59.999999Z", "1969-12-31 23:59:59.999999"),
            ("2038-01-19T03:14:08.000001Z", "2038-01-19 03:14:08.000001"),
            ("2100-02-28T23:59:59.000001Z", "2100-02-28 23:59:59.000001"),
            ("0001-01-01T00:00:00Z", "0001-01-01 00:00:00.000000"),
            ("9999-12-31T23:59:59.999999Z", "9999-12-31 23:59:59.999999"),
        ];
        for (text, wall_clock) in cases {
            let t = at(text);
            let naive = naive_utc(t).unwrap();
            assert_eq!(naive.format("%Y-%m-%d %H:%M:%S%.6f").to_string(), wall_clock);
            // Sent and read back through tiberius's own datetime2 conversion.
            let sent = column_data(&Value::Instant(t)).unwrap();
            assert_eq!(decode_cell(&sent, &column(Kind::Instant)).unwrap(), Value::Instant(t), "{text}");
        }
    }

    #[test]
    fn instants_outside_datetime2_are_refused() {
        let before = at("0001-01-01T00:00:00Z") - Span::from_micros(1);
        let after = at("9999-12-31T23:59:59.999999Z") + Span::from_micros(1);
        for t in [before, after] {
            let e = column_data(&Value::Instant(t)).unwrap_err();
            assert_eq!(e.kind, BackendErrorKind::Decode);
            assert!(e.message.contains("datetime2"), "{}", e.message);
        }
    }

    fn column(kind: Kind) -> Column {
        Column { name: "c", kind, nullable: true }
    }

    #[test]
    fn integers_of_every_width_decode_as_int() {
        let int = column(Kind::Int);
        assert_eq!(decode_cell(&ColumnData::I64(Some(i64::MIN)), &int).unwrap(), Value::Int(i64::MIN));
        assert_eq!(decode_cell(&ColumnData::I32(Some(-7)), &int).unwrap(), Value::Int(-7));
        assert_eq!(decode_cell(&ColumnData::I16(Some(300)), &int).unwrap(), Value::Int(300));
        assert_eq!(decode_cell(&ColumnData::U8(Some(255)), &int).unwrap(), Value::Int(255));
        assert_eq!(decode_cell(&ColumnData::Bit(Some(true)), &int).unwrap(), Value::Int(1));
    }

    #[test]
    fn whole_decimals_decode_as_int_and_fractions_name_their_column() {
        use tiberius::numeric::Numeric;
        let int = column(Kind::Int);
        let whole = ColumnData::Numeric(Some(Numeric::new_with_scale(-300, 2)));
        assert_eq!(decode_cell(&whole, &int).unwrap(), Value::Int(-3));
        let plain = ColumnData::Numeric(Some(Numeric::new_with_scale(42, 0)));
        assert_eq!(decode_cell(&plain, &int).unwrap(), Value::Int(42));
        let fraction = ColumnData::Numeric(Some(Numeric::new_with_scale(45, 1)));
        let e = decode_cell(&fraction, &int).unwrap_err();
        assert_eq!(e.kind, BackendErrorKind::Decode);
        assert!(
            e.message.contains(&format!("column `{}`", int.name)) && e.message.contains("not a whole number"),
            "{e}"
        );
    }

    #[test]
    fn nulls_decode_as_the_declared_kind() {
        assert_eq!(decode_cell(&ColumnData::String(None), &column(Kind::Text)).unwrap(), Value::Null(Kind::Text));
        assert_eq!(decode_cell(&ColumnData::I32(None), &column(Kind::Instant)).unwrap(), Value::Null(Kind::Instant));
        assert_eq!(
            decode_cell(&ColumnData::DateTime2(None), &column(Kind::Instant)).unwrap(),
            Value::Null(Kind::Instant)
        );
    }

    #[test]
    fn a_column_of_the_wrong_type_is_a_decode_error() {
        let rounded = tiberius::time::DateTime::new(45_000, 0);
        let cases = [
            (ColumnData::DateTime(Some(rounded)), Kind::Instant, "datetime (rounded"),
            (ColumnData::I64(Some(1)), Kind::Text, "bigint"),
            (ColumnData::String(Some("1".into())), Kind::Int, "a string"),
            (ColumnData::F64(Some(1.0)), Kind::Int, "float"),
        ];
        for (cell, kind, shown) in cases {
            let e = decode_cell(&cell, &column(kind)).unwrap_err();
            assert_eq!(e.kind, BackendErrorKind::Decode);
            assert!(e.message.contains(shown), "{}", e.message);
        }
        assert_eq!(
            decode_cell(&ColumnData::String(Some("ok".into())), &column(Kind::Text)).unwrap(),
            Value::Text("ok".into())
        );
    }

    #[test]
    fn server_errors_are_database_errors_and_the_rest_are_classified() {
        let io = tiberius::error::Error::Io { kind: std::io::ErrorKind::ConnectionReset, message: "reset".into() };
        assert_eq!(kind_of(&io), BackendErrorKind::Connection);
        assert_eq!(kind_of(&tiberius::error::Error::Conversion("x".into())), BackendErrorKind::Decode);
        assert_eq!(
            kind_of(&tiberius::error::Error::Routing { host: "h".into(), port: 1 }),
            BackendErrorKind::Connection
        );
    }

    #[test]
    fn the_version_is_the_first_line_of_at_at_version() {
        let raw = "Microsoft SQL Server 2022 (RTM-CU12) (KB5033663) - 16.0.4125.3 (X64) \n\tJan 19 2024 11:56:44 \n\tCopyright (C) 2022 Microsoft Corporation\n\tDeveloper Edition (64-bit) on Linux";
        assert_eq!(version_label(raw), "mssql Microsoft SQL Server 2022 (RTM-CU12) (KB5033663) - 16.0.4125.3 (X64)");
    }

    #[test]
    fn sessions_report_counts_and_parameterless_commands_go_as_batches() {
        assert!(SESSION_SETTINGS.contains("SET NOCOUNT OFF"));
        assert!(SESSION_SETTINGS.contains("SET IMPLICIT_TRANSACTIONS OFF"));
        assert!(sent_as_batch(&[]));
        assert!(!sent_as_batch(&[Value::Text("rc_x".into())]));
    }

    #[test]
    fn a_batch_counts_its_rows_after_a_trailing_comment() {
        assert_eq!(with_row_count("USE rc_x -- enter"), "USE rc_x -- enter\n;SELECT CAST(@@ROWCOUNT AS bigint)");
        assert_eq!(row_count(&[]).unwrap_err().kind, BackendErrorKind::Decode);
    }

    // Connecting.

    #[tokio::test]
    async fn a_closed_port_fails_fast_as_a_connection_error() {
        let started = std::time::Instant::now();
        let Err(e) = MssqlConn::connect(&url_to("127.0.0.1", 1)).await else { panic!("connected to port 1") };
        assert!(started.elapsed() < CONNECT_TIMEOUT + std::time::Duration::from_secs(1));
        assert_eq!(e.kind, BackendErrorKind::Connection);
        assert!(e.message.contains("127.0.0.1:1") && !e.message.contains(PASSWORD), "{}", e.message);
        let Err(e) = crate::backend::mssql(&format!("mssql://sa:{PASSWORD}@127.0.0.1:1/master")).await else {
            panic!("reached a server on port 1")
        };
        assert_eq!(e.kind, BackendErrorKind::Connection);
        assert!(!e.message.contains(PASSWORD), "{}", e.message);
    }

    #[tokio::test]
    async fn a_server_that_never_answers_times_out() {
        // The kernel completes the TCP handshake for the backlog; nobody
        // ever answers the login.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = silent.local_addr().unwrap().port();
        // The outer minute only turns a hang into a failure (no wall-clock
        // bound under load).
        let url = url_to("127.0.0.1", port);
        let answering = Default::default();
        let attempt = MssqlConn::connect_within(&url, Duration::from_millis(300), &answering);
        let Err(e) = tokio::time::timeout(Duration::from_secs(60), attempt).await.expect("timed out, not hung") else {
            panic!("a silent listener accepted the login")
        };
        assert_eq!(e.kind, BackendErrorKind::Connection);
        assert!(e.message.contains("no answer within 300ms"), "{}", e.message);
        assert!(!e.message.contains(PASSWORD), "{}", e.message);
    }

    /// What a stand-in SQL Server saw of one client that connected to it.
    #[derive(Debug)]
    struct Seen {
        /// The ENCRYPTION option of the client's PRELOGIN.
        asked: u8,
        /// Type and first payload byte of each packet after the PRELOGIN.
        then: Vec<(u8, u8)>,
    }

    /// A stand-in SQL Server on a free port that answers the PRELOGIN with
    /// ENCRYPT_REQ (it requires encryption) and records the packets that
    /// follow, until the client gives up.
    async fn requiring_server() -> (u16, tokio::task::JoinHandle<Seen>) {
        use tokio::io::AsyncReadExt;
        use tokio::io::AsyncWriteExt;
        async fn packet(s: &mut tokio::net::TcpStream) -> Option<(u8, Vec<u8>)> {
            let mut header = [0u8; 8];
            s.read_exact(&mut header).await.ok()?;
            let len = usize::from(u16::from_be_bytes([header[2], header[3]]));
            let mut payload = vec![0u8; len.checked_sub(8)?];
            s.read_exact(&mut payload).await.ok()?;
            Some((header[0], payload))
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let serve = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let (kind, prelogin) = packet(&mut s).await.expect("a prelogin packet");
            assert_eq!(kind, 0x12, "the first packet is a PRELOGIN");
            // The option table: (token, offset, length) until 0xff.
            let asked = prelogin
                .chunks(5)
                .take_while(|o| o[0] != 0xff)
                .find(|o| o[0] == 1)
                .map(|o| prelogin[usize::from(u16::from_be_bytes([o[1], o[2]]))])
                .expect("an ENCRYPTION option");
            // VERSION (6 bytes) and ENCRYPTION = 3, ENCRYPT_REQ.
            let body = [0u8, 0, 11, 0, 6, 1, 0, 17, 0, 1, 0xff, 16, 0, 0x10, 0, 0, 0, 3];
            let mut reply = vec![0x04, 0x01, 0, 8 + body.len() as u8, 0, 0, 1, 0];
            reply.extend_from_slice(&body);
            s.write_all(&reply).await.unwrap();
            let mut then = Vec::new();
            while let Ok(Some((kind, payload))) = tokio::time::timeout(Duration::from_secs(2), packet(&mut s)).await {
                then.push((kind, payload.first().copied().unwrap_or_default()));
                if then.len() == 4 {
                    break;
                }
            }
            Seen { asked, then }
        });
        (port, serve)
    }

    #[tokio::test]
    async fn a_server_that_requires_encryption_gets_tls_before_any_login() {
        for options in ["", "?encrypt=false"] {
            let (port, seen) = requiring_server().await;
            let url = MssqlUrl::parse(&format!("mssql://sa:{PASSWORD}@127.0.0.1:{port}/master{options}")).unwrap();
            let connected = MssqlConn::connect_within(&url, Duration::from_secs(3), &Default::default()).await;
            let seen = seen.await.unwrap();
            assert!(connected.is_err(), "{options}: the stand-in cannot finish a handshake");
            // 0x10 would be a LOGIN7 packet, the password in it.
            assert!(!seen.then.iter().any(|(kind, _)| *kind == 0x10), "{options}: a login in clear: {seen:?}");
            // A TLS handshake record (0x16) inside a PRELOGIN packet.
            assert_eq!(seen.then.first(), Some(&(0x12, 0x16)), "{options}: {seen:?}");
            // ENCRYPT_REQ by default; ENCRYPT_NOT_SUP under encrypt=false.
            assert_eq!(seen.asked, if options.is_empty() { 3 } else { 2 }, "{options}");
        }
    }

    // Scenarios, model against database.

    /// A scenario and the step results the model must give for it, so a
    /// scenario that stopped testing what it says fails too.
    struct Case {
        yaml: &'static str,
        steps: &'static str,
    }

    const CASES: &[Case] = &[
        Case {
            yaml: "
description: the grace reclaims a silent beater; a job that never beat waits for its claim window, and not a microsecond less
now: 2026-01-15T12:00:00.123456Z
session_time_zone: America/New_York
classes:
  Long: { timeout: 3600 }
  Short: { timeout: 300 }
jobs:
  - { id: beat-stopped, class: Long, status: processing, attempts: 1, claimed: -70m, heartbeat: -10m }
  - { id: never-beat, class: Short, status: processing, attempts: 1, claimed: -9m }
  - { id: at-cutoff, class: Short, status: processing, attempts: 1, claimed: -10m }
  - { id: just-past, class: Short, status: processing, attempts: 1, claimed: -10m0.000001s }
steps:
  - reap
",
            steps: "[{reap: 2}]",
        },
        Case {
            yaml: "
description: ids order by bytes, queues match exactly, and a heartbeat between scan and apply saves its job
classes:
  C: {}
jobs:
  - { id: Zed, class: C, status: processing, attempts: 1, claimed: -20m }
  - { id: alpha, class: C, status: processing, attempts: 1, claimed: -20m, heartbeat: -6m }
  - { id: b, class: C, queue: other, status: processing, attempts: 1, claimed: -20m }
  - { id: c, class: C, queue: Other, status: processing, attempts: 4, claimed: -20m }
steps:
  - scan: { queues: [default, other] }
  - heartbeat: alpha
  - apply
  - reap: { queues: [Other] }
",
            steps: "[{scan: [Zed, alpha, b]}, {heartbeat: ok}, {apply: 2}, {reap: 1}]",
        },
        Case {
            yaml: "
description: a busy lease defers a claim to its whole second, at most 30 s, even two hours away
classes:
  Report: { exclusive: true }
  Tenant: { concurrency_key: tenant }
jobs:
  - { id: r2, class: Report }
  - { id: t1, class: Tenant }
leases:
  - { name: 'job:Report', owner: r1/1, expires: +12.000001s }
  - { name: 'key:tenant', owner: t0/1, expires: +2h }
steps:
  - claim: r2
  - claim: t1
  - advance: 13s
  - claim: r2
  - complete: r2
  - claim: t1
",
            steps: "[{claim: deferred}, {claim: deferred}, null, {claim: claimed}, {complete: ok}, {claim: not_claimable}]",
        },
        Case {
            yaml: "
description: on the legacy table a heartbeat moves updated_at, before 1970 too
now: 1969-12-31T23:59:59.999999Z
schema: legacy
classes:
  C: {}
jobs:
  - { id: a, class: C, status: processing, attempts: 1, claimed: -20m }
  - { id: b, class: C, status: processing, attempts: 1, claimed: -20m }
steps:
  - heartbeat: a
  - reap
",
            steps: "[{heartbeat: ok}, {reap: 1}]",
        },
        Case {
            yaml: "
description: a reaped attempt is fenced once its job is claimed again; the worker's final failure
classes:
  C: {}
jobs:
  - { id: a, class: C, status: processing, attempts: 1, claimed: -20m }
  - { id: f, class: C, status: processing, attempts: 4, claimed: -1m }
steps:
  - reap
  - advance: 4s
  - claim: a
  - heartbeat: { job: a, attempt: a/1 }
  - complete: { job: a, attempt: a/1 }
  - fail: f
  - complete: a
",
            steps: "[{reap: 1}, null, {claim: claimed}, {heartbeat: fenced}, {complete: fenced}, {fail: ok}, {complete: ok}]",
        },
    ];

    /// Parses and validates a case through a file, as the runner would.
    fn scenario(index: usize, case: &Case) -> Scenario {
        let path = std::env::temp_dir().join(format!("reapcheck-mssql-{}-{index}.yaml", std::process::id()));
        std::fs::write(&path, case.yaml).unwrap();
        let loaded = parse_file("inline", &path);
        let _ = std::fs::remove_file(&path);
        match loaded {
            Ok(l) => l.scenario,
            Err(errors) => {
                panic!("case {index}: {}", errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))
            }
        }
    }

    /// The outcome of `scenario` on `server`, in a namespace that is dropped
    /// whether or not the run succeeded.
    async fn outcome_on(
        server: &Server,
        d: &Dialect,
        scenario: &Scenario,
        namespace: &str,
    ) -> Result<Outcome, EngineError> {
        let connect = |e: BackendError| EngineError { statement: "connect", kind: e.into() };
        let mut conn: Connection = server.open().await.map_err(connect)?;
        namespace_script(&mut conn, d, "create_namespace", namespace).await?;
        let run = async {
            namespace_script(&mut conn, d, "enter_namespace", namespace).await?;
            crate::driver::run(scenario, &mut SqlEngine::new(d, scenario.schema, &mut conn), None).await
        }
        .await;
        let dropped = namespace_script(&mut conn, d, "drop_namespace", namespace).await;
        conn.close().await;
        let outcome = run?;
        dropped?;
        Ok(outcome)
    }

    /// Plays every case on the model and on `server`; both must agree, and
    /// the model must give each case's step results.
    async fn cases_agree(server: &Server, d: &Dialect) {
        for (i, case) in CASES.iter().enumerate() {
            let s = scenario(i, case);
            let model = crate::driver::run(&s, &mut Model::new(s.schema), None).await.unwrap();
            let expected: Vec<Option<StepResult>> = serde_saphyr::from_str(case.steps).unwrap();
            assert_eq!(model.steps, expected, "case {i}: the model's steps\n{}", model.to_yaml());
            let namespace = format!("rc_mssql_unit_{}_{i}", std::process::id());
            let target = outcome_on(server, d, &s, &namespace).await.unwrap_or_else(|e| panic!("case {i}: {e}"));
            assert_eq!(target.to_yaml(), model.to_yaml(), "case {i} on {}: {}", server.version(), s.description);
        }
    }

    #[tokio::test]
    async fn the_cases_agree_on_sqlite() {
        // The same cases and plumbing as the live test below, on the
        // reference dialect, so a broken case fails here and not only on a
        // machine with a server.
        let server = crate::backend::sqlite().await.unwrap();
        let d = Dialect::load(&Source::Embedded, "sqlite").unwrap();
        cases_agree(&server, &d).await;
    }

    #[tokio::test]
    async fn a_live_server_agrees_with_the_model() {
        // Decided at run time: skipped without the URL, failing when
        // REAPCHECK_REQUIRE names mssql.
        let Some(url) = crate::reach::test_url(crate::target::Target::Mssql) else { return };
        let server = crate::backend::mssql(&url).await.unwrap_or_else(|e| panic!("{e}"));
        assert!(server.version().starts_with("mssql Microsoft SQL Server"), "{}", server.version());
        cases_agree(&server, &dialect()).await;
    }
}
