//! Keeping credentials out of everything reapcheck prints or writes: the one
//! redactor. Every message, report line and panic that may hold a
//! connection string passes through [`text`] (or [`message`] when the
//! connection string is known, to also catch its password echoed on its
//! own); a connection string shown on its own goes through [`url`].
//!
//! Connection strings are read the way their drivers read them, so that no
//! syntax can move a password out of the part that is hidden:
//! - URL user info (`postgres://user:SECRET@host/db`): the user info ends at
//!   the **last** `@` of the authority and the password starts after the
//!   first `:` of it, as the `url` crate (WHATWG) that sqlx and the SQL
//!   Server backend parse with does. A password with an unencoded `/`, `?`
//!   or `#`, which the parser would cut at that character (and then refuse,
//!   or read as host, port and path), is hidden up to the last `@`, and so
//!   is one whose `@` the parser would take for the end of the user info
//!   (`user:p@ss/w@host`);
//! - URL query parameters whose key, **percent-decoded** as the driver
//!   decodes it (`pass%77ord=`, `%70assword=`), names a secret: any key
//!   holding `password`, `passwd`, `passphrase` or `pwd` (`password`,
//!   `sslpassword`, `ssl-key-password`, ...); an unencoded `&` or `#` in
//!   such a value stays in it unless `name=` follows the `&` (which the
//!   driver reads as an option of its own);
//! - libpq keyword strings: `host=h password=SECRET`, quoted values
//!   (`password='a b\' c'`, backslash escapes), spaces around `=`;
//! - JDBC strings: `jdbc:sqlserver://host;password={a;b}}c}` (properties
//!   after `;`, `{...}` values with `}}` for `}`, keys in any case) and the
//!   `jdbc:mysql://user:SECRET@host` forms, read as URLs;
//! - ADO.NET strings: `Server=h;Password="x;y";`, `Pwd='it''s'` (doubled
//!   quotes), unquoted values up to the next `;`.
//!
//! Each secret value is replaced by `***`; everything else (scheme, user,
//! host, port, database, other options) is kept, so messages stay useful.
//! When the connection string is known ([`message`]), its secrets are also
//! hidden wherever they appear alone: raw, unquoted, percent-decoded,
//! re-encoded as the URL parser or a driver would print them, JSON- or
//! HTML-escaped, and the pieces a driver would split an unencoded password
//! into. [`hide_environment_secrets`] registers the secrets of every
//! `REAPCHECK_*_URL` once at start, and [`text`] hides those everywhere
//! too, so a path that forgets to pass its URL still shows none.

use std::ops::Range;
use std::sync::RwLock;

/// What replaces a secret.
const HIDDEN: &str = "***";

/// What a hint writes in place of a password (`postgres://USER:PASSWORD@HOST`,
/// in any case), kept in messages.
const PLACEHOLDER: &str = "PASSWORD";

/// The secrets hidden by [`text`] wherever they appear, and the connection
/// strings they came from (shown only through [`url`]).
static REGISTERED: RwLock<Registered> = RwLock::new(Registered { connections: Vec::new(), secrets: Vec::new() });

struct Registered {
    connections: Vec<String>,
    secrets: Vec<String>,
}

/// How much of a text a connection string may take.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// The whole text is one connection string: a value may run to its end.
    Whole,
    /// A message that may hold connection strings among other words: a URL
    /// ends at a blank or a quote, a value at the end of its line.
    Text,
}

/// `text` with every credential in any recognised form replaced by `***`,
/// and the registered secrets ([`hide_environment_secrets`]) hidden
/// wherever they appear.
pub fn text(text: &str) -> String {
    let registered = REGISTERED.read().unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut out = text.to_owned();
    for connection in &registered.connections {
        if out.contains(connection.as_str()) {
            out = out.replace(connection.as_str(), &url(connection));
        }
    }
    out = hide_each(&out, &registered.secrets);
    drop(registered);
    let spans = spans(&out, Scope::Text);
    replace_spans(&out, &spans)
}

/// `connection` (one connection string, in any form) with its secrets
/// replaced by `***`, the rest as written.
pub fn url(connection: &str) -> String {
    replace_spans(connection, &spans(connection, Scope::Whole))
}

/// `message` with every credential hidden, and the secrets of `connection`
/// hidden wherever they appear, even alone (see the module's comment for
/// the forms). A secret also visible in the redacted connection string
/// (a password equal to the user name, say) is not hidden elsewhere.
pub fn message(message: &str, connection: &str) -> String {
    let shown = url(connection);
    let mut out = if connection.is_empty() { message.to_owned() } else { message.replace(connection, &shown) };
    let secrets: Vec<String> = secrets(connection)
        .into_iter()
        .filter(|(s, piece)| s.chars().count() >= if *piece { 4 } else { 3 } && !shown.contains(s.as_str()))
        .map(|(s, _)| s)
        .collect();
    out = hide_each(&out, &secrets);
    text(&out)
}

/// Registers `connection` so that [`text`] shows it only redacted and
/// hides its secrets wherever they appear: those of six characters or
/// more (a shorter one would blank ordinary words of every report), whole
/// (the pieces a driver may split a password into are hidden by
/// [`message`], which knows where they come from).
pub fn register(connection: &str) {
    if connection.trim().is_empty() {
        return;
    }
    let shown = url(connection);
    let mut registered = REGISTERED.write().unwrap_or_else(std::sync::PoisonError::into_inner);
    if registered.connections.iter().any(|c| c == connection) {
        return;
    }
    registered.connections.push(connection.to_owned());
    registered.connections.sort_by_key(|c| std::cmp::Reverse(c.len()));
    for (secret, _) in secrets(connection).into_iter().filter(|(_, piece)| !piece) {
        if secret.chars().count() >= 6 && !shown.contains(secret.as_str()) && !registered.secrets.contains(&secret) {
            registered.secrets.push(secret);
        }
    }
    registered.secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
}

/// Registers ([`register`]) every `REAPCHECK_*_URL` of the environment:
/// called once at start, before anything can print.
pub fn hide_environment_secrets() {
    for (key, value) in std::env::vars_os() {
        let (Some(key), Some(value)) = (key.to_str(), value.to_str()) else { continue };
        if key.starts_with("REAPCHECK_") && key.ends_with("_URL") {
            register(value);
        }
    }
}

/// Installs a panic hook that prints the panic's message through [`text`],
/// so that a panic can never show a credential; the location is kept.
pub fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let thread = std::thread::current();
        eprintln!("{}", panic_report(thread.name().unwrap_or("<unnamed>"), info.location(), info.payload()));
    }));
}

/// What the panic hook prints: the thread, the location and the message,
/// the message redacted.
fn panic_report(
    thread: &str,
    location: Option<&std::panic::Location<'_>>,
    payload: &(dyn std::any::Any + Send),
) -> String {
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned());
    let at = location.map_or(String::new(), |l| format!(" at {}:{}:{}", l.file(), l.line(), l.column()));
    format!("thread '{thread}' panicked{at}:\n{}", text(&message))
}

/// `text` with each of `secrets` (longest first) replaced by `***`.
fn hide_each(text: &str, secrets: &[String]) -> String {
    let mut sorted: Vec<&String> = secrets.iter().filter(|s| !s.is_empty() && s.as_str() != HIDDEN).collect();
    sorted.sort_by_key(|s| std::cmp::Reverse(s.len()));
    let mut out = text.to_owned();
    for secret in sorted {
        if out.contains(secret.as_str()) {
            out = out.replace(secret.as_str(), HIDDEN);
        }
    }
    out
}

/// `text` with each byte range of `spans` (sorted, disjoint) replaced by
/// `***`.
fn replace_spans(text: &str, spans: &[Range<usize>]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for span in spans {
        out.push_str(&text[at..span.start]);
        out.push_str(HIDDEN);
        at = span.end;
    }
    out.push_str(&text[at..]);
    out
}

/// Every secret of `connection` in every form it may be shown in, each
/// with whether it is only a piece of a secret (what a driver would split
/// an unencoded value into).
fn secrets(connection: &str) -> Vec<(String, bool)> {
    let mut out: Vec<(String, bool)> = Vec::new();
    let mut add = |s: String, piece: bool| {
        if !s.is_empty() && !out.iter().any(|(o, _)| *o == s) {
            out.push((s, piece));
        }
    };
    let mut values = raw_spans(connection, Scope::Whole);
    values.extend(spans(connection, Scope::Whole));
    for span in values {
        let raw = &connection[span];
        let mut whole = vec![raw.to_owned(), strip_quotes(raw), percent_decode(raw), form_decode(raw)];
        whole.extend(unquote(raw));
        whole.push(percent_decode(&strip_quotes(raw)));
        let decoded = whole.clone();
        for d in &decoded {
            whole.push(userinfo_encode(d));
            whole.push(encode_non_alphanumeric(d));
            whole.push(url::form_urlencoded::byte_serialize(d.as_bytes()).collect());
        }
        let plain = whole.clone();
        for s in &plain {
            let json = serde_json::to_string(s).unwrap_or_default();
            whole.push(json[1..json.len().saturating_sub(1).max(1)].to_owned());
            whole.push(html_escape::encode_text(s).into_owned());
            whole.push(html_escape::encode_double_quoted_attribute(s).into_owned());
        }
        for s in &decoded {
            for piece in s.split(|c: char| "/?#&=;@:".contains(c) || c.is_whitespace()) {
                if piece != s {
                    add(piece.to_owned(), true);
                }
            }
        }
        for s in whole {
            add(s, false);
        }
    }
    out
}

/// The byte ranges of every secret value in `text`, each as found (they
/// may overlap).
fn raw_spans(text: &str, scope: Scope) -> Vec<Range<usize>> {
    let mut found = userinfo_spans(text, scope);
    // A `key=` inside a URL's password is the password's.
    let keyed = keyed_spans(text, scope).into_iter().filter(|k| !found.iter().any(|u| u.contains(&k.start)));
    found.extend(keyed.collect::<Vec<_>>());
    // In a message, `USER:PASSWORD@HOST` is the form a hint asks for.
    found.retain(|r| r.start < r.end && (scope == Scope::Whole || !text[r.clone()].eq_ignore_ascii_case(PLACEHOLDER)));
    found
}

/// The byte ranges of every secret value in `text`, sorted and merged.
fn spans(text: &str, scope: Scope) -> Vec<Range<usize>> {
    let mut found = raw_spans(text, scope);
    found.sort_by_key(|r| (r.start, r.end));
    let mut merged: Vec<Range<usize>> = Vec::new();
    for r in found {
        match merged.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => merged.push(r),
        }
    }
    merged
}

/// Whether `c` may be part of a URL scheme.
fn is_scheme_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.')
}

/// Whether `c` ends a URL (or a value) inside a message: a blank or a
/// quoting character.
fn ends_in_text(c: u8) -> bool {
    c.is_ascii_whitespace() || matches!(c, b'"' | b'\'' | b'<' | b'>' | b'`')
}

/// Where the line holding `from` ends (`Text`), or the text's end (`Whole`).
fn line_end(text: &str, from: usize, scope: Scope) -> usize {
    match scope {
        Scope::Whole => text.len(),
        Scope::Text => text[from..].find(['\n', '\r']).map_or(text.len(), |i| from + i),
    }
}

/// The passwords of URL user info: `scheme://user:SECRET@host`, also in
/// `jdbc:...` strings.
fn userinfo_spans(text: &str, scope: Scope) -> Vec<Range<usize>> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(found) = text[from..].find("://") {
        let colon = from + found;
        let start = colon + 3;
        from = start;
        let mut scheme_start = colon;
        while scheme_start > 0 && is_scheme_byte(bytes[scheme_start - 1]) {
            scheme_start -= 1;
        }
        if scheme_start == colon {
            continue;
        }
        let scheme = text[scheme_start..colon].to_ascii_lowercase();
        // Microsoft's JDBC driver: `jdbc:sqlserver://host\instance:port;props`,
        // the server part ends at the first `;`, the properties are keyed.
        let jdbc_mssql = scheme == "sqlserver" && text[..scheme_start].to_ascii_lowercase().ends_with("jdbc:");
        let end = line_end(text, start, scope);
        let stops_authority = |c: u8| {
            (if jdbc_mssql { c == b';' } else { matches!(c, b'/' | b'?' | b'#') })
                || (scope == Scope::Text && ends_in_text(c))
        };
        let authority_end = (start..end).find(|&i| stops_authority(bytes[i])).unwrap_or(end);
        let authority = &text[start..authority_end];
        let last_at = authority.rfind('@');
        if let Some(at) = last_at
            && let Some(c) = authority[..at].find(':')
        {
            out.push(start + c + 1..start + at);
        }
        if jdbc_mssql {
            continue;
        }
        // The parser cut the password short (an unencoded `/`, `?`, `#`,
        // or a blank): an `@` after the authority, in the path, or an
        // authority whose port is no number, means the user info runs on.
        let path_end = (authority_end..end)
            .find(|&i| matches!(bytes[i], b'?' | b'#') || (scope == Scope::Text && ends_in_text(bytes[i])))
            .unwrap_or(end);
        let at_in_path = text[authority_end..path_end].contains('@');
        // `host:` and a port that is no number: `user:` and a password.
        let port_is_no_number = last_at.is_none()
            && authority.find(':').is_some_and(|c| {
                authority[c + 1..].is_empty() || !authority[c + 1..].bytes().all(|b| b.is_ascii_digit())
            });
        // An `@` further on that is not in an option's value
        // (`?application_name=x@y`).
        let rest_end = match scope {
            Scope::Whole => end,
            Scope::Text => (authority_end..end).find(|&i| ends_in_text(bytes[i])).unwrap_or(end),
        };
        let rest = &text[authority_end..rest_end];
        // A host no server has (none, `=`, `;`, non-ASCII...): the `@` before it
        // was the password's.
        let odd_host = last_at.is_some_and(|at| !is_plain_host(&authority[at + 1..]));
        // An empty password (`user:@host`): the `@` was the password's.
        let empty_password = last_at.is_some_and(|at| authority[..at].ends_with(':'));
        let at_further_on = authority.contains(':')
            && rest.find('@').is_some_and(|at| odd_host || empty_password || !starts_an_option(&rest[..at]));
        if !(at_in_path || port_is_no_number || at_further_on) {
            continue;
        }
        if let Some(at) = text[start..end].rfind('@') {
            let info = &text[start..start + at];
            if let Some(c) = info.find(':') {
                let user = &info[..c];
                if !user.contains(['/', '?', '#', '@']) && !user.contains(char::is_whitespace) {
                    out.push(start + c + 1..start + at);
                }
            }
        }
    }
    out
}

/// Whether `host` (with its port) is one a server may have: a name, an
/// address, a bracketed IPv6 address, percent-encoded bytes (a socket's
/// path).
fn is_plain_host(host: &str) -> bool {
    let bytes = host.as_bytes();
    !host.is_empty()
        && bytes.iter().enumerate().all(|(i, &b)| {
            b.is_ascii_alphanumeric()
                || b".-_[]:".contains(&b)
                || (b == b'%' && bytes.get(i + 1..i + 3).is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)))
                || (i >= 1 && bytes[i - 1] == b'%' && b.is_ascii_hexdigit())
                || (i >= 2 && bytes[i - 2] == b'%' && b.is_ascii_hexdigit())
        })
}

/// Whether `before` (what follows a URL's authority, up to an `@`) holds
/// a query whose first option is written `key=`, so that the `@` is in an
/// option's value.
fn starts_an_option(before: &str) -> bool {
    before.find('?').is_some_and(|q| {
        let query = &before[q + 1..];
        let key_end = query.find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '[' | ']')));
        key_end.is_some_and(|k| k > 0 && query[k..].starts_with('='))
    })
}

/// Whether `c` may be part of a key (`password`, `pass%77ord`,
/// `ssl-key-password`, `options[x]`).
fn is_key_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.' | b'%' | b'+' | b'[' | b']')
}

/// Whether the key `raw`, decoded as a URL query's keys are, names a
/// secret.
fn is_secret_key(raw: &str) -> bool {
    let key: String =
        form_decode(raw).to_lowercase().chars().filter(|c| !matches!(c, '-' | '_' | '.' | ' ' | '[' | ']')).collect();
    ["password", "passwd", "passphrase"].iter().any(|k| key.contains(k)) || key.ends_with("pwd") || key == "pass"
}

/// How a value's end is found.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Style {
    /// `?key=value&...`: up to `&` or `#`.
    Query,
    /// `key=value;...` (ADO.NET, JDBC): up to `;`.
    Semicolon,
    /// `key=value key=value` (libpq): up to a blank, `\` escaping.
    Keyword,
}

/// The values of secret keys: `password=SECRET` in URL query, libpq,
/// ADO.NET or JDBC form.
fn keyed_spans(text: &str, scope: Scope) -> Vec<Range<usize>> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    for (eq, _) in text.match_indices('=') {
        let mut key_end = eq;
        while key_end > 0 && bytes[key_end - 1] == b' ' {
            key_end -= 1;
        }
        let mut key_start = key_end;
        while key_start > 0 && is_key_byte(bytes[key_start - 1]) {
            key_start -= 1;
        }
        if key_start == key_end || !is_secret_key(&text[key_start..key_end]) {
            continue;
        }
        let mut before = key_start;
        while before > 0 && matches!(bytes[before - 1], b' ' | b'\t') {
            before -= 1;
        }
        let style = match before.checked_sub(1).map(|i| bytes[i]) {
            Some(b'?' | b'&') => Style::Query,
            Some(b';') => Style::Semicolon,
            _ => start_style(text, before, eq, scope),
        };
        let mut value_start = eq + 1;
        while value_start < bytes.len() && matches!(bytes[value_start], b' ' | b'\t') && style != Style::Query {
            value_start += 1;
        }
        if value_start >= bytes.len() {
            continue;
        }
        // Every reading of the value: the union is hidden, and each is a
        // secret that may be echoed alone.
        for end in value_ends(text, value_start, style, scope) {
            out.push(value_start..end);
        }
    }
    out
}

/// Whether a key at the start of a text, or after a blank, is in a
/// `;`-separated string (ADO.NET) or a libpq one: libpq when a `key=value`
/// pair precedes it on the line after a blank, else ADO.NET when a `;`
/// follows on the line.
fn start_style(text: &str, before: usize, eq: usize, scope: Scope) -> Style {
    let line_start = text[..before].rfind(['\n', '\r']).map_or(0, |i| i + 1);
    let previous = text[line_start..before].split_whitespace().next_back();
    if previous.is_some_and(|w| w.contains('=') && !w.ends_with(';')) {
        return Style::Keyword;
    }
    if text[eq..line_end(text, eq, scope)].contains(';') { Style::Semicolon } else { Style::Keyword }
}

/// Where the value starting at `start` may end, one end per reading: a
/// quoted or braced value read with each syntax's escapes, and the same
/// text read as unquoted (a value that only starts with a quote), the
/// longest last.
fn value_ends(text: &str, start: usize, style: Style, scope: Scope) -> Vec<usize> {
    let bytes = text.as_bytes();
    let end = line_end(text, start, scope);
    // Already redacted (text passed through here twice): only `***`.
    if scope == Scope::Text
        && text[start..].starts_with(HIDDEN)
        && bytes
            .get(start + 3)
            .is_none_or(|&c| c.is_ascii_whitespace() || matches!(c, b';' | b'&' | b')' | b',' | b':' | b'"' | b'\''))
    {
        return vec![start + 3];
    }
    let plain = match style {
        Style::Query => query_value_end(text, start, end, scope),
        Style::Semicolon => text[start..end].find(';').map_or(end, |i| start + i),
        Style::Keyword => {
            let mut i = start;
            while i < end && !bytes[i].is_ascii_whitespace() {
                i += if bytes[i] == b'\\' { 2 } else { 1 };
            }
            i.min(end)
        }
    };
    let close = match (style, bytes[start]) {
        (Style::Query, _) => None,
        (_, b'\'') => Some(b'\''),
        (Style::Semicolon, b'"') => Some(b'"'),
        (Style::Semicolon, b'{') => Some(b'}'),
        _ => None,
    };
    let mut ends = vec![plain];
    if let Some(close) = close {
        // Quoted: up to the closing character, a doubled one (ADO.NET, JDBC
        // braces) taken as an escape; for quotes also with `\x` (libpq).
        ends.push(quoted_end(bytes, start, end, close, false));
        if close != b'}' {
            ends.push(quoted_end(bytes, start, end, close, true));
        }
    }
    ends.sort_unstable();
    ends.dedup();
    ends
}

/// Where the value quoted from `start` by `close` ends (after its closing
/// character): a doubled closing character is one of the value, and with
/// `backslash` so is the character after a `\`.
fn quoted_end(bytes: &[u8], start: usize, end: usize, close: u8, backslash: bool) -> usize {
    let mut i = start + 1;
    while i < end {
        if backslash && bytes[i] == b'\\' {
            i += 2;
            continue;
        }
        if bytes[i] == close {
            if i + 1 < end && bytes[i + 1] == close {
                i += 2;
                continue;
            }
            return i + 1;
        }
        i += 1;
    }
    end
}

/// Where an unquoted URL query value ends: at an `&` that starts another
/// option (`&name=`, the name percent-decoded: what the driver reads as
/// one); an unencoded `&` or `#` otherwise stays in the value. In a
/// message also at a blank or a quote.
fn query_value_end(text: &str, start: usize, end: usize, scope: Scope) -> usize {
    let bytes = text.as_bytes();
    let mut i = start;
    while i < end {
        let c = bytes[i];
        if scope == Scope::Text && ends_in_text(c) {
            return i;
        }
        if c == b'&' {
            let segment_end = (i + 1..end).find(|&j| matches!(bytes[j], b'&' | b'=')).unwrap_or(end);
            if segment_end < end
                && bytes[segment_end] == b'='
                && is_option_name(&form_decode(&text[i + 1..segment_end]))
            {
                return i;
            }
        }
        i += 1;
    }
    end
}

/// Whether `name` reads as an option's name: a letter or `_`, then
/// letters, digits and `_ - . [ ]`.
fn is_option_name(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '[' | ']'))
}

/// A value without its surrounding quotes or braces, escapes kept.
fn strip_quotes(value: &str) -> String {
    for (open, close) in [('\'', '\''), ('"', '"'), ('{', '}')] {
        if let Some(v) = value.strip_prefix(open) {
            return v.strip_suffix(close).unwrap_or(v).to_owned();
        }
    }
    value.to_owned()
}

/// The readings of a value without its quotes or braces and their escapes
/// undone: libpq's (`\x`), ADO.NET's (doubled quotes), JDBC's (`}}`).
fn unquote(value: &str) -> Vec<String> {
    let inner = strip_quotes(value);
    let undoubled = match value.chars().next() {
        Some('\'') => inner.replace("''", "'"),
        Some('"') => inner.replace("\"\"", "\""),
        Some('{') => inner.replace("}}", "}"),
        _ => inner.clone(),
    };
    vec![unescape(&inner), undoubled.clone(), unescape(&undoubled)]
}

/// `\x` read as `x`, as libpq reads its values.
fn unescape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        out.push(if c == '\\' { chars.next().unwrap_or(c) } else { c });
    }
    out
}

/// `%XX` escapes decoded (invalid UTF-8 replaced).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = text.get(i + 1..i + 3)
            && let Ok(b) = u8::from_str_radix(hex, 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A URL query's component decoded as the drivers decode it: `+` is a
/// blank, then `%XX` escapes.
fn form_decode(text: &str) -> String {
    url::form_urlencoded::parse(format!("k={text}").as_bytes()).next().map(|(_, v)| v.into_owned()).unwrap_or_default()
}

/// `password` as the `url` crate writes it in user info.
fn userinfo_encode(password: &str) -> String {
    let Ok(mut u) = url::Url::parse("x://u@h") else { return String::new() };
    match u.set_password(Some(password)) {
        Ok(()) => u.password().unwrap_or_default().to_owned(),
        Err(()) => String::new(),
    }
}

/// Every byte but ASCII letters and digits as `%XX`, as sqlx writes a
/// password back into a URL.
fn encode_non_alphanumeric(text: &str) -> String {
    text.bytes()
        .map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[test]
    fn passwords_never_survive() {
        assert_eq!(url("postgres://app:s3cret@db:5432/test"), "postgres://app:***@db:5432/test");
        assert_eq!(url("postgres://app@db/test"), "postgres://app@db/test");
        let u = "mysql://root:p%40ss@h/test";
        let m = message("cannot log in to mysql://root:p%40ss@h/test as root with p@ss", u);
        assert!(!m.contains("p%40ss") && !m.contains("p@ss"), "{m}");
    }

    #[rstest]
    #[case::url_userinfo(
        "error: postgres://u:SECRET@127.0.0.1:1/test refused",
        "error: postgres://u:***@127.0.0.1:1/test refused"
    )]
    #[case::query(
        "postgres://127.0.0.1:5449/test?user=u&password=SECRET&x=1",
        "postgres://127.0.0.1:5449/test?user=u&password=***&x=1"
    )]
    #[case::sslpassword("postgres://h/db?sslpassword=SECRET", "postgres://h/db?sslpassword=***")]
    #[case::unencoded_slash(
        "cannot reach postgres://postgres:ab/cdSECRET@127.0.0.1:5432/test: invalid port number",
        "cannot reach postgres://postgres:***@127.0.0.1:5432/test: invalid port number"
    )]
    #[case::unencoded_hash_and_question_mark("mysql://root:a#b?cSECRET@h/test", "mysql://root:***@h/test")]
    #[case::unencoded_at_and_slash("postgres://u:p@ss/wSECRET@h:1/db", "postgres://u:***@h:1/db")]
    #[case::digits_then_slash(
        "cannot reach postgres://u:12/SECRET@h:1/db now",
        "cannot reach postgres://u:***@h:1/db now"
    )]
    #[case::at_in_a_query_is_not_a_password(
        "postgres://u@h:5432/db?application_name=x@y",
        "postgres://u@h:5432/db?application_name=x@y"
    )]
    #[case::percent_encoded_key("postgres://h/db?pass%77ord=SECRET&user=u", "postgres://h/db?pass%77ord=***&user=u")]
    #[case::percent_encoded_first_letter("postgres://h/db?%70assword=SECRET", "postgres://h/db?%70assword=***")]
    #[case::libpq(
        "host=127.0.0.1 port=1 password=SECRET dbname=test",
        "host=127.0.0.1 port=1 password=*** dbname=test"
    )]
    #[case::libpq_spaces("host=h password = SECRET user=u", "host=h password = *** user=u")]
    #[case::libpq_quoted("host=h password='SE CR\\'ET' user=u", "host=h password=*** user=u")]
    #[case::libpq_semicolon("host=h password=SE;CRET user=u", "host=h password=*** user=u")]
    #[case::ado(
        "Server=tcp:h,1;User Id=sa;Password=SE CRET;Encrypt=false",
        "Server=tcp:h,1;User Id=sa;Password=***;Encrypt=false"
    )]
    #[case::ado_pwd("server=h;uid=sa;PWD={SE;CRET};", "server=h;uid=sa;PWD=***;")]
    #[case::ado_quoted("Server=h;Password=\"SE;CRET\";", "Server=h;Password=***;")]
    #[case::ado_doubled_quotes("Server=h;Password=\"SE\"\";CRET\";x=1", "Server=h;Password=***;x=1")]
    #[case::ado_quote_inside("Server=h;Password=SE\"CRET;x=1", "Server=h;Password=***;x=1")]
    #[case::jdbc(
        "jdbc:sqlserver://h:1;user=sa;password=SECRET;encrypt=false",
        "jdbc:sqlserver://h:1;user=sa;password=***;encrypt=false"
    )]
    #[case::jdbc_at_in_password(
        "jdbc:sqlserver://127.0.0.1:1;password=p@ss:w/rd%SECRET",
        "jdbc:sqlserver://127.0.0.1:1;password=***"
    )]
    #[case::jdbc_braces(
        "jdbc:sqlserver://h;password={a;b}};cSECRET};user=sa",
        "jdbc:sqlserver://h;password=***;user=sa"
    )]
    #[case::jdbc_userinfo("jdbc:mysql://u:p@SECRET@h:1/db", "jdbc:mysql://u:***@h:1/db")]
    #[case::two("a postgres://u:S1@h and host=h password=S2", "a postgres://u:***@h and host=h password=***")]
    #[case::prose("the password is wrong; retry", "the password is wrong; retry")]
    #[case::hint(
        "write postgres://USER:PASSWORD@HOST:PORT/DATABASE",
        "write postgres://USER:PASSWORD@HOST:PORT/DATABASE"
    )]
    #[case::twice(
        "postgres://u:***@h:1/db (from X): password=*** (y)",
        "postgres://u:***@h:1/db (from X): password=*** (y)"
    )]
    fn every_form_is_redacted(#[case] input: &str, #[case] expected: &str) {
        assert_eq!(text(input), expected);
    }

    #[rstest]
    #[case::unencoded_ampersand(
        "postgres://h/db?password=a&bSECRET&sslmode=disable",
        "postgres://h/db?password=***&sslmode=disable"
    )]
    #[case::blank_in_userinfo("postgres://u:a b@cSECRET@h/db", "postgres://u:***@h/db")]
    #[case::quote_in_userinfo("mysql://u:a\"b'SECRET@h/db", "mysql://u:***@h/db")]
    #[case::blank_in_query("postgres://h/db?password=a bSECRET", "postgres://h/db?password=***")]
    fn a_whole_connection_string_is_read_to_its_end(#[case] input: &str, #[case] expected: &str) {
        assert_eq!(url(input), expected);
    }

    #[test]
    fn a_panic_message_is_printed_redacted() {
        let payload: Box<dyn std::any::Any + Send> =
            Box::new(format!("cannot bind for {}", "postgres://u:PLANTED@h/db?sslpassword=PLANTED2"));
        let report = panic_report("main", Some(std::panic::Location::caller()), payload.as_ref());
        assert!(!report.contains("PLANTED"), "{report}");
        assert!(report.starts_with("thread 'main' panicked at harness/src/redact.rs:"), "{report}");
        assert!(report.ends_with("cannot bind for postgres://u:***@h/db?sslpassword=***"), "{report}");
    }

    #[test]
    fn a_known_connection_strings_secret_is_hidden_even_alone() {
        let conn = "host=h password='p@ss word' user=u";
        let m = message("server said: wrong password p@ss word for u", conn);
        assert!(!m.contains("p@ss word"), "{m}");
        let m = message("x", "Server=h;Pwd=SECRET;");
        assert_eq!(m, "x");
        let m = message("login SECRET failed", "jdbc:sqlserver://h;password=SECRET");
        assert_eq!(m, "login *** failed");
        // Re-encoded as the URL parser writes user info, and JSON-escaped.
        let m = message("as a%20b%22c and a b\\\"c", "postgres://u:a b\"c@h/db");
        assert_eq!(m, "as *** and ***");
        // The pieces the parser cut an unencoded password into.
        let m = message("unknown parameter `wxyz@h:1/db`", "postgres://u:1?wxyz@h:1/db");
        assert!(!m.contains("wxyz"), "{m}");
    }

    #[test]
    fn a_password_shown_elsewhere_in_the_url_is_not_hidden_alone() {
        let m = message("password authentication failed for user \"postgres\"", "postgres://postgres:postgres@h/t");
        assert_eq!(m, "password authentication failed for user \"postgres\"");
    }

    #[test]
    fn a_registered_connections_secrets_are_hidden_in_any_text() {
        register("mssql://sa:Registered%2Fq7x@h:1/master");
        assert_eq!(text("login Registered/q7x failed"), "login *** failed");
        assert_eq!(text("Registered"), "Registered", "a piece is not hidden everywhere");
        assert_eq!(text("as Registered%2Fq7x"), "as ***");
        assert_eq!(text("mssql://sa:Registered%2Fq7x@h:1/master"), "mssql://sa:***@h:1/master");
    }
}
