//! Keeping credentials out of everything reapcheck prints or writes: the one
//! redactor. Every message, report line and panic that may hold a
//! connection string passes through [`text`] (or [`message`] when the
//! connection string is known, to also catch its password echoed on its
//! own).
//!
//! Forms recognised, each replaced by `***` (keys case-insensitive):
//! - URL user info: `postgres://user:SECRET@host/db`;
//! - URL query parameters `password=` and `sslpassword=`
//!   (`postgres://host/db?user=u&password=SECRET`);
//! - libpq keyword strings: `host=h password=SECRET`, quoted values too
//!   (`password='a b\' c'`), spaces around `=` allowed;
//! - ADO.NET strings: `Server=h;User Id=sa;Password=SECRET;` and `Pwd=`,
//!   quoted (`"..."`, `'...'`) or braced (`{...}`) values;
//! - JDBC strings for SQL Server: `jdbc:sqlserver://h;user=sa;password=SECRET`.

/// The keys whose value is a secret.
const KEYS: &[&str] = &["sslpassword", "password", "passwd", "pwd"];

/// `text` with every credential in any recognised form replaced by `***`.
pub fn text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        match next_secret(rest) {
            Some((start, end)) => {
                out.push_str(&rest[..start]);
                out.push_str("***");
                rest = &rest[end..];
            }
            None => {
                out.push_str(rest);
                break;
            }
        }
    }
    out
}

/// `url` with its password hidden, in whatever form it is written (kept
/// for callers that print a connection string).
pub fn url(url: &str) -> String {
    text(url)
}

/// `message` with every credential hidden, and the secrets of `connection`
/// (raw and percent-decoded) hidden wherever they appear, even alone.
pub fn message(message: &str, connection: &str) -> String {
    let mut secrets: Vec<String> = Vec::new();
    let mut rest = connection;
    while let Some((start, end)) = next_secret(rest) {
        let value = unquote(&rest[start..end]);
        secrets.push(percent_decode(value));
        secrets.push(value.to_owned());
        rest = &rest[end..];
    }
    let mut redacted = message.replace(connection, &text(connection));
    // Longest first, so that a secret containing another is hidden whole.
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    for secret in secrets.iter().filter(|s| s.len() >= 3 && s.as_str() != "***") {
        redacted = redacted.replace(secret.as_str(), "***");
    }
    text(&redacted)
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

/// The byte range of the first secret in `text`: a URL's user-info
/// password, or the value of a secret key.
fn next_secret(text: &str) -> Option<(usize, usize)> {
    [userinfo_password(text), keyed_value(text)].into_iter().flatten().min_by_key(|(start, _)| *start)
}

/// `scheme://user:SECRET@`: the range of SECRET.
fn userinfo_password(text: &str) -> Option<(usize, usize)> {
    let mut from = 0;
    while let Some(found) = text[from..].find("://") {
        let authority_start = from + found + 3;
        let authority_end = text[authority_start..]
            .find(|c: char| c == '/' || c == '?' || c == '#' || c.is_whitespace() || c == '"' || c == '\'')
            .map_or(text.len(), |i| authority_start + i);
        let authority = &text[authority_start..authority_end];
        if let Some(at) = authority.rfind('@')
            && let Some(colon) = authority[..at].find(':')
            && colon + 1 < at
        {
            return Some((authority_start + colon + 1, authority_start + at));
        }
        // A password with an unencoded `/`, `?` or `#` (which a URL parser
        // refuses, and echoes): `user:` with a plain user name, then
        // everything up to the last `@` before the next blank or quote.
        let word_end = text[authority_start..]
            .find(|c: char| c.is_whitespace() || c == '"' || c == '\'')
            .map_or(text.len(), |i| authority_start + i);
        let word = &text[authority_start..word_end];
        if let Some(colon) = word.find(':')
            && !word[..colon].contains(['/', '?', '#', '@'])
            && let Some(at) = word.rfind('@')
            && colon + 1 < at
        {
            return Some((authority_start + colon + 1, authority_start + at));
        }
        from = authority_start;
    }
    None
}

/// `password=SECRET` and the other keys, in URL query, libpq, ADO.NET or
/// JDBC form: the range of SECRET (quotes included).
fn keyed_value(text: &str) -> Option<(usize, usize)> {
    let lower = text.to_ascii_lowercase();
    let bytes = text.as_bytes();
    let mut best: Option<(usize, usize)> = None;
    for key in KEYS {
        let mut from = 0;
        while let Some(found) = lower[from..].find(key) {
            let key_start = from + found;
            from = key_start + key.len();
            // A key starts a word: `sslpassword` is not `password` inside it.
            if key_start > 0 && (bytes[key_start - 1].is_ascii_alphanumeric() || bytes[key_start - 1] == b'_') {
                continue;
            }
            let mut i = key_start + key.len();
            while i < bytes.len() && bytes[i] == b' ' {
                i += 1;
            }
            if i >= bytes.len() || bytes[i] != b'=' {
                continue;
            }
            i += 1;
            while i < bytes.len() && bytes[i] == b' ' {
                i += 1;
            }
            let semicolon_style = text[..key_start].trim_end().ends_with(';')
                || text[i..].lines().next().is_some_and(|line| line.contains(';'));
            let end = value_end(text, i, semicolon_style);
            if end > i && best.is_none_or(|(s, _)| i < s) {
                best = Some((i, end));
            }
            break;
        }
    }
    best
}

/// Where the value starting at `start` ends: after its closing quote or
/// brace, else at the first separator (`&`, `#`, a quote, a line end, and
/// `;`; whitespace too unless the string separates pairs with `;`).
fn value_end(text: &str, start: usize, semicolon_style: bool) -> usize {
    let bytes = text.as_bytes();
    let close = match bytes[start] {
        b'\'' => Some(b'\''),
        b'"' => Some(b'"'),
        b'{' => Some(b'}'),
        _ => None,
    };
    if let Some(close) = close {
        let mut i = start + 1;
        while i < bytes.len() {
            if bytes[i] == b'\\' && close == b'\'' {
                i += 2;
                continue;
            }
            if bytes[i] == close {
                // `''` and `""` and `}}` escape the closing character.
                if bytes.get(i + 1) == Some(&close) {
                    i += 2;
                    continue;
                }
                return i + 1;
            }
            i += 1;
        }
        return bytes.len();
    }
    text[start..]
        .find(|c: char| {
            matches!(c, '&' | '#' | '"' | '\'' | '\n' | '\r' | ';') || (!semicolon_style && c.is_whitespace())
        })
        .map_or(text.len(), |i| start + i)
}

/// A value without its surrounding quotes or braces.
fn unquote(value: &str) -> &str {
    for (open, close) in [('\'', '\''), ('"', '"'), ('{', '}')] {
        if let Some(inner) = value.strip_prefix(open).and_then(|v| v.strip_suffix(close)) {
            return inner;
        }
    }
    value
}

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
    #[case::at_in_a_query_is_not_a_password(
        "postgres://u@h:5432/db?application_name=x@y",
        "postgres://u@h:5432/db?application_name=x@y"
    )]
    #[case::libpq(
        "host=127.0.0.1 port=1 password=SECRET dbname=test",
        "host=127.0.0.1 port=1 password=*** dbname=test"
    )]
    #[case::libpq_spaces("host=h password = SECRET user=u", "host=h password = *** user=u")]
    #[case::libpq_quoted("host=h password='SE CR\\'ET' user=u", "host=h password=*** user=u")]
    #[case::ado(
        "Server=tcp:h,1;User Id=sa;Password=SE CRET;Encrypt=false",
        "Server=tcp:h,1;User Id=sa;Password=***;Encrypt=false"
    )]
    #[case::ado_pwd("server=h;uid=sa;PWD={SE;CRET};", "server=h;uid=sa;PWD=***;")]
    #[case::ado_quoted("Server=h;Password=\"SE;CRET\";", "Server=h;Password=***;")]
    #[case::jdbc(
        "jdbc:sqlserver://h:1;user=sa;password=SECRET;encrypt=false",
        "jdbc:sqlserver://h:1;user=sa;password=***;encrypt=false"
    )]
    #[case::two("a postgres://u:S1@h and host=h password=S2", "a postgres://u:***@h and host=h password=***")]
    #[case::prose("the password is wrong; retry", "the password is wrong; retry")]
    fn every_form_is_redacted(#[case] input: &str, #[case] expected: &str) {
        assert_eq!(text(input), expected);
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
    }
}
