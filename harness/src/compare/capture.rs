//! What `reapcheck bench --compare` replays: every statement a child
//! `reapcheck run` sent, with its bound values rendered as literals in the
//! product's syntax, one JSON line per event, written only when the
//! environment variable [`CAPTURE_ENV`] names a file (the child that
//! `bench --compare` starts; nothing else sets it). The backends call
//! [`sent`] after each command and query ([`crate::backend::Connection`]),
//! and each connection holds a [`Session`], which records its opening (just
//! before its first statement) and its closing; with the variable unset
//! both cost one load of an initialised `OnceLock`.

use std::io::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::backend::InstantEncoding;
use crate::dialect::text::{Grammar, Placeholders};
use crate::engine::{Kind, Value};

/// The environment variable naming the file a run writes its statements
/// to (JSON lines, [`Event`]).
pub const CAPTURE_ENV: &str = "REAPCHECK_CAPTURE_SQL";

/// One line of a capture file.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Event {
    /// The run's first line: the prefix of every namespace it made
    /// (`rc_<host>_<pid>_<started>_`, [`crate::namespace::prefix`]), which
    /// the replayed script names after the live `bench --compare` instead,
    /// so that another run's start-up sweep does not take the dead
    /// capturing run's namespaces for leftovers in the middle of a replay.
    Began {
        /// The capturing run's namespace prefix.
        namespace_prefix: String,
    },
    /// The backend opened a new session (SQLite: a new in-memory database).
    Session {
        /// The session's number, unique in the run, from 1.
        id: u64,
    },
    /// A statement, its values rendered as literals, and what it returned.
    Sql {
        /// The [`Event::Session`] it was sent on.
        session: u64,
        /// The SQL as the database's own client is to send it.
        sql: String,
        /// `changed N`, `rows N` or `failed`.
        returned: String,
    },
    /// The backend closed the session (SQLite: its database is gone).
    Closed {
        /// The [`Event::Session`] closed.
        id: u64,
    },
}

fn sink() -> Option<&'static Mutex<std::fs::File>> {
    static SINK: OnceLock<Option<Mutex<std::fs::File>>> = OnceLock::new();
    SINK.get_or_init(|| {
        let path = std::env::var_os(CAPTURE_ENV)?;
        let file = std::fs::OpenOptions::new().create(true).append(true).open(&path);
        let mut file = file.unwrap_or_else(|e| panic!("{CAPTURE_ENV}: cannot open {path:?}: {e}"));
        let began = Event::Began { namespace_prefix: crate::namespace::prefix(crate::namespace::this_process()) };
        let line = serde_json::to_string(&began).expect("an event serializes") + "\n";
        file.write_all(line.as_bytes()).unwrap_or_else(|e| panic!("{CAPTURE_ENV}: {e}"));
        Some(Mutex::new(file))
    })
    .as_ref()
}

fn write(event: &Event) {
    let Some(sink) = sink() else { return };
    let mut line = serde_json::to_string(event).expect("an event serializes");
    line.push('\n');
    let mut file = sink.lock().unwrap_or_else(|p| p.into_inner());
    file.write_all(line.as_bytes()).unwrap_or_else(|e| panic!("{CAPTURE_ENV}: {e}"));
}

/// One backend session as a capture names it: numbered when the
/// connection is opened, recorded ([`Event::Session`]) just before its
/// first statement, and closed ([`Event::Closed`]) when dropped, if it was
/// recorded. Number 0, and nothing recorded, when not capturing.
///
/// A session that sends nothing leaves nothing in the capture: one made
/// [`Session::unrecorded`] before its first statement (the start-up
/// sweep's, [`crate::backend::Connection::stop_recording`]) recorded its
/// opening and its closing when the opening was written at once, and the
/// replay opened a session (on SQLite, a database) for it.
#[derive(Debug)]
pub struct Session {
    id: u64,
    /// Its [`Event::Session`] is written.
    recorded: AtomicBool,
}

impl Session {
    /// A session whose statements are never recorded: the start-up sweep's
    /// (`crate::runner::sweep`), whose drops of earlier runs' leftovers
    /// are no part of the pass and fail when replayed, the leftovers gone,
    /// and the catalog listings of [`crate::backend::Server::namespaces`].
    pub fn unrecorded() -> Session {
        Session { id: 0, recorded: AtomicBool::new(false) }
    }

    /// A new session's number (0 when not capturing); its opening is
    /// recorded with its first statement.
    pub fn open() -> Session {
        if sink().is_none() {
            return Session::unrecorded();
        }
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Session { id: NEXT.fetch_add(1, Ordering::Relaxed), recorded: AtomicBool::new(false) }
    }

    /// Records its opening, once, before its first statement.
    fn announce(&self) {
        if !self.recorded.swap(true, Ordering::SeqCst) {
            write(&Event::Session { id: self.id });
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if self.id != 0 && *self.recorded.get_mut() {
            write(&Event::Closed { id: self.id });
        }
    }
}

/// What a statement returned, for [`sent`].
#[derive(Clone, Copy, Debug)]
pub enum Returned {
    /// A command changed (for an UPDATE on MySQL: matched) this many rows.
    Changed(u64),
    /// A query returned this many rows.
    Rows(usize),
    /// The database refused it.
    Failed,
}

/// Records a statement the backend sent on `session` with the values bound
/// to its markers (already in `encoding`'s stored form), when capturing:
/// the markers are `style`'s, the literals `grammar`'s product's.
pub fn sent(
    session: &Session,
    grammar: Grammar,
    style: Placeholders,
    encoding: InstantEncoding,
    sql: &str,
    params: &[Value],
    returned: Returned,
) {
    if session.id == 0 || sink().is_none() {
        return;
    }
    session.announce();
    let returned = match returned {
        Returned::Changed(n) => format!("changed {n}"),
        Returned::Rows(n) => format!("rows {n}"),
        Returned::Failed => "failed".to_owned(),
    };
    write(&Event::Sql { session: session.id, sql: render(grammar, style, encoding, sql, params), returned });
}

/// `sql` with each bind marker of `style` replaced by its value as a
/// literal of `grammar`'s product (markers inside strings, quoted
/// identifiers, comments and dollar-quoted bodies are left alone).
pub fn render(grammar: Grammar, style: Placeholders, encoding: InstantEncoding, sql: &str, params: &[Value]) -> String {
    let mysql = grammar == Grammar::MySql;
    let bytes = sql.as_bytes();
    let mut out = String::with_capacity(sql.len() + 16 * params.len());
    let (mut i, mut next) = (0, 0);
    while i < bytes.len() {
        let c = bytes[i];
        let end = match c {
            b'\'' | b'"' | b'`' => Some(closing(bytes, i + 1, c, mysql && c != b'`')),
            b'-' if bytes.get(i + 1) == Some(&b'-') => Some(sql[i..].find('\n').map_or(bytes.len(), |n| i + n)),
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                Some(sql[i + 2..].find("*/").map_or(bytes.len(), |n| i + 2 + n + 2))
            }
            b'$' if grammar == Grammar::Postgres && !bytes.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                dollar_body(sql, i)
            }
            _ => None,
        };
        if let Some(end) = end {
            out.push_str(&sql[i..end]);
            i = end;
            continue;
        }
        let marker = match (style, c) {
            (Placeholders::Question, b'?') => {
                next += 1;
                Some((next, 1))
            }
            (Placeholders::Dollar, b'$') => number(&sql[i + 1..]).map(|(n, len)| (n, len + 1)),
            (Placeholders::AtP, b'@') if bytes.get(i + 1) == Some(&b'P') => {
                number(&sql[i + 2..]).map(|(n, len)| (n, len + 2))
            }
            _ => None,
        };
        match marker.and_then(|(n, len)| params.get(n.wrapping_sub(1)).map(|v| (v, len))) {
            Some((value, len)) => {
                out.push_str(&literal(grammar, encoding, value));
                i += len;
            }
            None => {
                let ch = sql[i..].chars().next().expect("in bounds");
                out.push(ch);
                i += ch.len_utf8();
            }
        }
    }
    out
}

fn number(s: &str) -> Option<(usize, usize)> {
    let len = s.bytes().take_while(u8::is_ascii_digit).count();
    (len > 0).then(|| (s[..len].parse().ok(), len)).and_then(|(n, len)| n.map(|n| (n, len)))
}

/// The end of a dollar-quoted body opening at `at`, if one does.
fn dollar_body(sql: &str, at: usize) -> Option<usize> {
    let rest = &sql[at + 1..];
    let len = rest.bytes().take_while(|b| b.is_ascii_alphanumeric() || *b == b'_').count();
    if rest.as_bytes().get(len) != Some(&b'$') {
        return None;
    }
    let tag = &sql[at..at + len + 2];
    Some(sql[at + tag.len()..].find(tag).map_or(sql.len(), |n| at + tag.len() + n + tag.len()))
}

/// Just past the quote closing one opened before `from`: a doubled quote
/// is an escaped one, and so (MySQL) is one after a backslash.
fn closing(bytes: &[u8], mut from: usize, quote: u8, backslash: bool) -> usize {
    while from < bytes.len() {
        if backslash && bytes[from] == b'\\' {
            from += 2;
            continue;
        }
        if bytes[from] == quote {
            if bytes.get(from + 1) == Some(&quote) {
                from += 2;
                continue;
            }
            return from + 1;
        }
        from += 1;
    }
    bytes.len()
}

/// A value as a literal of `grammar`'s product, typed as its driver binds
/// it: PostgreSQL's casts to the parameter types sqlx declares (`text`,
/// `int8`, `timestamptz` or, naive, `timestamp`); MySQL's instants and
/// NULLs cast to `DATETIME(6)`, `SIGNED` or `CHAR`; SQLite's (and SQL
/// Server's) as they are stored (integers, text, NULL).
pub fn literal(grammar: Grammar, encoding: InstantEncoding, value: &Value) -> String {
    let int = |i: i64| if i == i64::MIN { format!("({} - 1)", i64::MIN + 1) } else { i.to_string() };
    let stamp = |t: &crate::time::Instant| t.to_chrono().format("%Y-%m-%d %H:%M:%S%.6f").to_string();
    let naive = encoding == InstantEncoding::NaiveUtc;
    match grammar {
        Grammar::Postgres => {
            let (text, ty) = match value {
                Value::Text(t) => (quoted(t, false), "text"),
                Value::Int(i) => (int(*i), "int8"),
                Value::Instant(t) if naive => (format!("'{}'", stamp(t)), "timestamp"),
                Value::Instant(t) => (format!("'{}+00'", stamp(t)), "timestamptz"),
                Value::Null(Kind::Text) => ("NULL".into(), "text"),
                Value::Null(Kind::Int) => ("NULL".into(), "int8"),
                Value::Null(Kind::Instant) => ("NULL".into(), if naive { "timestamp" } else { "timestamptz" }),
            };
            format!("CAST({text} AS {ty})")
        }
        Grammar::MySql => match value {
            Value::Text(t) => quoted(t, true),
            Value::Int(i) => int(*i),
            Value::Instant(t) => format!("CAST('{}' AS DATETIME(6))", stamp(t)),
            Value::Null(Kind::Text) => "CAST(NULL AS CHAR)".into(),
            Value::Null(Kind::Int) => "CAST(NULL AS SIGNED)".into(),
            Value::Null(Kind::Instant) => "CAST(NULL AS DATETIME(6))".into(),
        },
        Grammar::Sqlite | Grammar::MsSql | Grammar::Generic => match value {
            Value::Text(t) if t.contains('\0') => {
                let hex: String = t.bytes().map(|b| format!("{b:02X}")).collect();
                format!("CAST(X'{hex}' AS TEXT)")
            }
            Value::Text(t) => quoted(t, false),
            Value::Int(i) => int(*i),
            Value::Instant(t) if naive => format!("'{}'", stamp(t)),
            Value::Instant(t) => t.unix_micros().to_string(),
            Value::Null(_) => "NULL".into(),
        },
    }
}

/// A string literal: quotes doubled; with `backslash` (MySQL, MariaDB
/// without `NO_BACKSLASH_ESCAPES`) backslashes and NULs escaped too.
fn quoted(text: &str, backslash: bool) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('\'');
    for ch in text.chars() {
        match ch {
            '\'' => out.push_str("''"),
            '\\' if backslash => out.push_str("\\\\"),
            '\0' if backslash => out.push_str("\\0"),
            _ => out.push(ch),
        }
    }
    out.push('\'');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Instant;

    fn at(text: &str) -> Value {
        Value::Instant(Instant::parse_rfc3339(text).unwrap())
    }

    #[test]
    fn markers_become_literals_outside_strings_and_comments() {
        let params = [Value::Text("o'k".into()), at("2026-01-15T12:00:00.000001Z"), Value::Null(Kind::Int)];
        let sql = "SELECT $1, '$2' -- $3\n, $2::text, $3, $$ $1 $$";
        assert_eq!(
            render(Grammar::Postgres, Placeholders::Dollar, InstantEncoding::Native, sql, &params),
            "SELECT CAST('o''k' AS text), '$2' -- $3\n, CAST('2026-01-15 12:00:00.000001+00' AS timestamptz)::text, \
             CAST(NULL AS int8), $$ $1 $$"
        );
        let my = [Value::Text("a\\'b".into()), Value::Int(i64::MIN), at("2026-01-15T12:00:00Z")];
        assert_eq!(
            render(
                Grammar::MySql,
                Placeholders::Question,
                InstantEncoding::Native,
                "UPDATE t SET a = ?, b = '?\\'?' WHERE c = ? AND d < ?",
                &my
            ),
            "UPDATE t SET a = 'a\\\\''b', b = '?\\'?' WHERE c = (-9223372036854775807 - 1) AND d < \
             CAST('2026-01-15 12:00:00.000000' AS DATETIME(6))"
        );
        let lite = [Value::Int(1_768_478_400_000_000), Value::Text("x".into())];
        assert_eq!(
            render(Grammar::Sqlite, Placeholders::Question, InstantEncoding::Native, "SELECT ?, '?', ?, ?", &lite),
            "SELECT 1768478400000000, '?', 'x', ?",
            "a backslash is no escape in SQLite's strings; a marker past the values is left"
        );
        assert_eq!(
            render(Grammar::Sqlite, Placeholders::Question, InstantEncoding::Native, "SELECT '\\', ?", &lite[..1]),
            "SELECT '\\', 1768478400000000"
        );
    }
}
