//! Reading SQL text: named statements in a file, the commands in a
//! statement, and its `:name` parameters, skipping strings, quoted
//! identifiers, comments, PostgreSQL dollar-quoted bodies and `::` casts.

pub use super::split::Grammar;

/// A piece of SQL text, as a tokenizer sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Piece<'a> {
    /// Ordinary text, copied as is.
    Code(&'a str),
    /// A string literal, quoted identifier or comment, copied as is.
    Opaque(&'a str),
    /// A `:name` parameter.
    Param(&'a str),
    /// A `;` between commands.
    Semicolon,
}

fn pieces<'a>(sql: &'a str) -> Vec<Piece<'a>> {
    let bytes = sql.as_bytes();
    let mut out = Vec::new();
    let (mut i, mut start) = (0, 0);
    let flush = |out: &mut Vec<Piece<'a>>, from: usize, to: usize| {
        if to > from {
            out.push(Piece::Code(&sql[from..to]));
        }
    };
    while i < bytes.len() {
        let end = match bytes[i] {
            b'\'' | b'"' | b'`' => closing(bytes, i + 1, bytes[i]),
            b'$' => match dollar_tag(&sql[i..]) {
                Some(tag) => sql[i + tag.len()..].find(tag).map_or(bytes.len(), |n| i + tag.len() + n + tag.len()),
                None => {
                    i += 1;
                    continue;
                }
            },
            b'-' if bytes.get(i + 1) == Some(&b'-') => sql[i..].find('\n').map_or(bytes.len(), |n| i + n),
            b'/' if bytes.get(i + 1) == Some(&b'*') => sql[i + 2..].find("*/").map_or(bytes.len(), |n| i + 2 + n + 2),
            b';' => {
                flush(&mut out, start, i);
                out.push(Piece::Semicolon);
                i += 1;
                start = i;
                continue;
            }
            b':' if bytes.get(i + 1) == Some(&b':') => {
                i += 2;
                continue;
            }
            b':' if bytes.get(i + 1).is_some_and(|b| b.is_ascii_lowercase() || *b == b'_') => {
                let len = bytes[i + 1..].iter().take_while(|b| b.is_ascii_alphanumeric() || **b == b'_').count();
                flush(&mut out, start, i);
                out.push(Piece::Param(&sql[i + 1..i + 1 + len]));
                i += 1 + len;
                start = i;
                continue;
            }
            _ => {
                i += 1;
                continue;
            }
        };
        flush(&mut out, start, i);
        out.push(Piece::Opaque(&sql[i..end]));
        i = end;
        start = i;
    }
    flush(&mut out, start, bytes.len());
    out
}

/// The opening tag of a PostgreSQL dollar-quoted string at the start of
/// `sql`: `$$` or `$name$`, where a name does not start with a digit (`$1`
/// is a bind marker).
fn dollar_tag(sql: &str) -> Option<&str> {
    let rest = sql.strip_prefix('$')?;
    let len = rest.bytes().take_while(|b| b.is_ascii_alphanumeric() || *b == b'_').count();
    let starts_with_digit = rest.as_bytes().first().is_some_and(u8::is_ascii_digit);
    (rest.as_bytes().get(len) == Some(&b'$') && !starts_with_digit).then(|| &sql[..len + 2])
}

/// The index just past the quote closing one opened before `from`; a doubled
/// quote is an escaped one.
fn closing(bytes: &[u8], mut from: usize, quote: u8) -> usize {
    while from < bytes.len() {
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

/// The `:name` parameters a statement uses, each once, in order of first use.
pub fn parameters(sql: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for p in pieces(sql) {
        if let Piece::Param(name) = p
            && !names.iter().any(|n| n == name)
        {
            names.push(name.to_owned());
        }
    }
    names
}

/// The commands of a script, split at top-level `;`, blank ones dropped,
/// read with the generic grammar: for checks made before a driver is known.
/// A driver runs [`commands_in`] its own grammar.
pub fn commands(sql: &str) -> Vec<String> {
    commands_in(sql, Grammar::Generic)
}

/// The commands of a script as `grammar` reads it: split at top-level `;`,
/// never inside strings, comments, dollar-quoted bodies or the
/// `BEGIN ... END` body of a trigger, function or procedure (see
/// `dialect/split.rs`); blank ones dropped.
pub fn commands_in(sql: &str, grammar: Grammar) -> Vec<String> {
    super::split::split(sql, grammar)
}

/// `sql` with every comment replaced by a space; strings, quoted
/// identifiers and parameters kept as written.
pub fn strip_comments(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    for p in pieces(sql) {
        match p {
            Piece::Opaque(s) if s.starts_with("--") || s.starts_with("/*") => out.push(' '),
            Piece::Code(s) | Piece::Opaque(s) => out.push_str(s),
            Piece::Param(name) => {
                out.push(':');
                out.push_str(name);
            }
            Piece::Semicolon => out.push(';'),
        }
    }
    out
}

/// True when `sql` holds nothing but white space and comments.
pub fn is_blank(sql: &str) -> bool {
    pieces(sql).iter().all(|p| match p {
        Piece::Code(s) => s.trim().is_empty(),
        Piece::Opaque(s) => s.starts_with("--") || s.starts_with("/*"),
        Piece::Semicolon => true,
        Piece::Param(_) => false,
    })
}

/// How a driver writes its bind markers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placeholders {
    /// `$1`, `$2`, ... (PostgreSQL); a name used twice reuses its number.
    Dollar,
    /// `?` for each use, bound again each time (MySQL, MariaDB, SQLite).
    /// SQLite takes `?1`, `?2`, ... too, but sqlx then asks for each
    /// marker's name, which SQLite finds by walking its list of names:
    /// quadratic in a setup batch's markers, a tenth of a corpus run's
    /// instructions.
    Question,
    /// `@P1`, `@P2`, ... (SQL Server); a name used twice reuses its number.
    AtP,
}

/// A statement rewritten for one driver: its text and the parameter names
/// to bind, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prepared {
    /// The SQL with native bind markers.
    pub sql: String,
    /// Which parameter each bind position takes.
    pub binds: Vec<String>,
}

/// Rewrites `:name` markers into `style`'s. Linear in the markers: a
/// setup batch of a thousand rows has two thousand (a position lookup by
/// scanning `binds` made it quadratic, a sixth of a SQLite corpus run's
/// instructions).
pub fn prepare(sql: &str, style: Placeholders) -> Prepared {
    let mut out = String::with_capacity(sql.len());
    let mut binds: Vec<String> = Vec::new();
    let mut numbers: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for p in pieces(sql) {
        match p {
            Piece::Code(s) | Piece::Opaque(s) => out.push_str(s),
            Piece::Semicolon => out.push(';'),
            Piece::Param(name) => {
                let number = match style {
                    Placeholders::Question => {
                        binds.push(name.to_owned());
                        out.push('?');
                        continue;
                    }
                    _ => *numbers.entry(name).or_insert_with(|| {
                        binds.push(name.to_owned());
                        binds.len()
                    }),
                };
                use std::fmt::Write as _;
                let _ = match style {
                    Placeholders::Dollar => write!(out, "${number}"),
                    Placeholders::AtP => write!(out, "@P{number}"),
                    Placeholders::Question => unreachable!("handled above"),
                };
            }
        }
    }
    Prepared { sql: out, binds }
}

/// A `-- name:` block of a dialect file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamedBlock {
    /// The statement name.
    pub name: String,
    /// The line of its `-- name:` marker, from 1.
    pub line: usize,
    /// The SQL after the marker, up to the next marker.
    pub sql: String,
}

/// `sql` taken apart as a single-row `INSERT ... VALUES (<tuple>)
/// [suffix]`, comments dropped. `None` when `sql` is not of that shape: no
/// single top-level `VALUES` followed by one parenthesised tuple, a
/// parameter outside the tuple (an `ON DUPLICATE KEY UPDATE owner = :owner`
/// would bind one row's value for all), or more than one command. For setup
/// rows sent in one statement (issue 22); a statement of another shape is
/// sent once per row.
pub fn values_shape(sql: &str) -> Option<ValuesShape> {
    let pieces: Vec<Piece> = pieces(sql)
        .into_iter()
        .filter(|p| !matches!(p, Piece::Opaque(s) if s.starts_with("--") || s.starts_with("/*")))
        .collect();
    // The piece and byte offset of the one top-level VALUES keyword.
    let mut keyword = None;
    for (index, piece) in pieces.iter().enumerate() {
        if let Piece::Code(code) = piece {
            for (at, _) in code.to_ascii_uppercase().match_indices("VALUES") {
                let word = |b: Option<&u8>| b.is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_');
                if !word(code.as_bytes().get(at + 6)) && (at == 0 || !word(code.as_bytes().get(at - 1))) {
                    if keyword.is_some() {
                        return None;
                    }
                    keyword = Some((index, at + 6));
                }
            }
        }
    }
    let (index, after) = keyword?;
    let Piece::Code(code) = pieces[index] else { return None };
    let mut prefix = String::new();
    for piece in &pieces[..index] {
        match piece {
            Piece::Code(s) | Piece::Opaque(s) => prefix.push_str(s),
            Piece::Param(_) | Piece::Semicolon => return None,
        }
    }
    prefix.push_str(&code[..after]);
    // The tuple: from the first `(` after VALUES to its matching `)`, as
    // pieces (the keyword's piece cut after the keyword).
    let mut tail: Vec<Piece> = vec![Piece::Code(&code[after..])];
    tail.extend_from_slice(&pieces[index + 1..]);
    let mut tuple: Vec<Piece> = Vec::new();
    let mut suffix = String::new();
    let mut depth = 0usize;
    let mut closed = false;
    for piece in tail {
        if closed {
            match piece {
                Piece::Code(s) | Piece::Opaque(s) => suffix.push_str(s),
                Piece::Param(_) => return None,
                Piece::Semicolon => suffix.push(';'),
            }
            continue;
        }
        let Piece::Code(s) = piece else {
            if depth == 0 {
                return None;
            }
            tuple.push(piece);
            continue;
        };
        let mut from = 0;
        for (i, c) in s.char_indices() {
            match c {
                '(' => depth += 1,
                ')' if depth == 1 => {
                    tuple.push(Piece::Code(&s[from..=i]));
                    suffix.push_str(&s[i + 1..]);
                    closed = true;
                    break;
                }
                ')' => depth = depth.checked_sub(1)?,
                c if depth == 0 && !c.is_whitespace() => return None,
                _ => {}
            }
            if depth == 0 {
                from = i + 1;
            }
        }
        if !closed && depth > 0 {
            tuple.push(Piece::Code(&s[from..]));
        }
    }
    if !closed || suffix.trim().trim_end_matches(';').contains(';') {
        return None;
    }
    let mut parts = Vec::with_capacity(tuple.len());
    for piece in tuple {
        parts.push(match piece {
            Piece::Code(s) | Piece::Opaque(s) => TuplePart::Text(s.to_owned()),
            Piece::Param(name) => TuplePart::Param(name.to_owned()),
            Piece::Semicolon => return None,
        });
    }
    let suffix = suffix.trim_end().trim_end_matches(';').to_owned();
    Some(ValuesShape { prefix: prefix.trim_start().to_owned(), tuple: parts, suffix })
}

/// `sql`, a single-row `INSERT ... VALUES (<tuple>) [suffix]`, rewritten to
/// insert `rows` rows: the tuple repeated, each copy's `:name` parameters
/// renamed `:name__<row>` (row from 0), comments dropped. `None` when `sql`
/// is not of that shape ([`values_shape`]) or `rows` is 0. The tests'
/// readable form of a batch, and the oracle of [`ValuesShape::prepare`],
/// which is what setup sends.
#[cfg(test)]
fn repeat_values(sql: &str, rows: usize) -> Option<String> {
    let shape = values_shape(sql)?;
    let mut out = shape.prefix.clone();
    for row in 0..rows {
        out.push_str(if row == 0 { " " } else { ",\n       " });
        for part in &shape.tuple {
            match part {
                TuplePart::Text(s) => out.push_str(s),
                TuplePart::Param(name) => out.push_str(&format!(":{name}__{row}")),
            }
        }
    }
    out.push_str(&shape.suffix);
    (rows > 0).then_some(out)
}

/// A single-row `INSERT ... VALUES (<tuple>) [suffix]` taken apart once, so
/// that a setup batch of any size is written without parsing again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValuesShape {
    /// Up to and including `VALUES`.
    prefix: String,
    /// The parenthesised tuple, parentheses included.
    tuple: Vec<TuplePart>,
    /// After the tuple, without a closing `;`.
    suffix: String,
}

/// A piece of [`ValuesShape::tuple`].
#[derive(Clone, Debug, PartialEq, Eq)]
enum TuplePart {
    /// SQL text, written as is.
    Text(String),
    /// A `:name` parameter.
    Param(String),
}

impl ValuesShape {
    /// The tuple repeated for `rows` rows, each copy's parameters its own,
    /// with `style`'s bind markers (as [`prepare`] writes them), in one
    /// pass: the SQL and, per bind position, the row (from 0) and the
    /// parameter it takes. In the numbered styles a name used twice in a
    /// row reuses its number, as [`prepare`] does.
    pub fn prepare(&self, rows: usize, style: Placeholders) -> (String, Vec<(usize, &str)>) {
        use std::fmt::Write as _;
        let mut out = self.prefix.clone();
        let mut binds: Vec<(usize, &str)> = Vec::new();
        for row in 0..rows {
            out.push_str(if row == 0 { " " } else { ",\n       " });
            let first = binds.len();
            for part in &self.tuple {
                let name = match part {
                    TuplePart::Text(s) => {
                        out.push_str(s);
                        continue;
                    }
                    TuplePart::Param(name) => name.as_str(),
                };
                if style == Placeholders::Question {
                    binds.push((row, name));
                    out.push('?');
                    continue;
                }
                let number = match binds[first..].iter().position(|(_, n)| *n == name) {
                    Some(at) => first + at + 1,
                    None => {
                        binds.push((row, name));
                        binds.len()
                    }
                };
                let _ = match style {
                    Placeholders::Dollar => write!(out, "${number}"),
                    _ => write!(out, "@P{number}"),
                };
            }
        }
        out.push_str(&self.suffix);
        (out, binds)
    }
}

/// How many whole lines at the start of `sql` hold no SQL (blank, or a
/// `--` comment): a statement's first line of SQL is that many lines after
/// the one below its `-- name:` marker.
pub fn leading_blank_lines(sql: &str) -> usize {
    sql.lines().take_while(|l| l.trim().is_empty() || l.trim_start().starts_with("--")).count()
}

/// Splits a dialect file at its `-- name: <statement>` lines. Text before
/// the first marker is the file's header comment and must be blank.
pub fn named_blocks(text: &str) -> Result<Vec<NamedBlock>, (usize, String)> {
    let mut blocks: Vec<NamedBlock> = Vec::new();
    let mut header = String::new();
    for (index, line) in text.lines().enumerate() {
        if let Some(name) = line.trim().strip_prefix("-- name:") {
            let name = name.trim();
            if name.is_empty() || !name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_') {
                return Err((index + 1, format!("`-- name:` needs a statement name such as `claim`, got `{name}`")));
            }
            blocks.push(NamedBlock { name: name.to_owned(), line: index + 1, sql: String::new() });
        } else {
            let target = blocks.last_mut().map_or(&mut header, |b| &mut b.sql);
            target.push_str(line);
            target.push('\n');
        }
    }
    if !is_blank(&header) {
        return Err((1, "SQL before the first `-- name:` line belongs to no statement".to_owned()));
    }
    Ok(blocks)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SQL: &str =
        "SELECT ':not', \"a:b\", x::text -- :nor\n FROM t /* :neither */ WHERE a = :id AND b < :now AND c = :id";

    #[test]
    fn a_single_row_insert_repeats_its_tuple_with_a_name_per_row() {
        let sql = "-- the rows\nINSERT INTO t (a, b) -- why\nVALUES (:a, lower(:b)) ON CONFLICT DO NOTHING\n";
        assert_eq!(
            repeat_values(sql, 2).as_deref(),
            Some(
                "INSERT INTO t (a, b) \nVALUES (:a__0, lower(:b__0)),\n       (:a__1, lower(:b__1)) ON CONFLICT DO NOTHING"
            )
        );
        let repeated = repeat_values(sql, 3).unwrap();
        assert_eq!(parameters(&repeated).len(), 6, "{repeated}");
        // A string holding VALUES or a parenthesis is text, not structure.
        let quoted = "INSERT INTO t (a) VALUES (':x) VALUES (' || :a)";
        assert_eq!(
            repeat_values(quoted, 2).as_deref(),
            Some("INSERT INTO t (a) VALUES (':x) VALUES (' || :a__0),\n       (':x) VALUES (' || :a__1)")
        );
    }

    #[test]
    fn an_insert_of_another_shape_is_not_repeated() {
        // A parameter outside the tuple would bind one row's value for all.
        assert_eq!(repeat_values("INSERT INTO t (a) VALUES (:a) ON DUPLICATE KEY UPDATE a = :a", 2), None);
        assert_eq!(repeat_values("INSERT INTO t (a) SELECT :a WHERE NOT EXISTS (SELECT 1)", 2), None);
        assert_eq!(repeat_values("INSERT INTO t (a) VALUES (:a), (:a)", 2), None);
        assert_eq!(repeat_values("INSERT INTO t (a) VALUES (:a); INSERT INTO u VALUES (:a)", 2), None);
        assert_eq!(repeat_values("INSERT INTO t (a) VALUES (:a", 2), None);
        assert_eq!(repeat_values("INSERT INTO t (values_seen) VALUES (:a)", 2).map(|s| parameters(&s).len()), Some(2));
    }

    #[test]
    fn leading_blank_lines_counts_blank_and_comment_lines_only() {
        assert_eq!(leading_blank_lines("\n  -- why\nSELECT 1\n-- later\n"), 2);
        assert_eq!(leading_blank_lines("SELECT 1\n"), 0);
        assert_eq!(leading_blank_lines("/* not a line comment */ SELECT 1\n"), 0);
    }

    #[test]
    fn finds_parameters_outside_strings_comments_and_casts() {
        assert_eq!(parameters(SQL), vec!["id", "now"]);
    }

    #[test]
    fn a_values_shape_prepares_a_batch_as_repeating_then_preparing_would() {
        let sql = "-- rows\nINSERT INTO t (a, b, c) VALUES (:a, coalesce(:b, :a), ':x') ON CONFLICT DO NOTHING;\n";
        let shape = values_shape(sql).expect("the single-tuple shape");
        for style in [Placeholders::Question, Placeholders::Dollar, Placeholders::AtP] {
            let expected = prepare(&repeat_values(sql, 3).expect("repeats"), style);
            let (batch, binds) = shape.prepare(3, style);
            assert_eq!(batch, expected.sql, "{style:?}");
            let named: Vec<String> = binds.iter().map(|(row, name)| format!("{name}__{row}")).collect();
            assert_eq!(named, expected.binds, "{style:?}");
        }
        assert_eq!(shape.prepare(2, Placeholders::Dollar).0.matches("$3").count(), 2, "row 1 reuses its own `:a`");
        assert_eq!(values_shape("INSERT INTO t (a) VALUES (:a), (:a)"), None);
    }

    #[test]
    fn numbered_styles_reuse_a_repeated_name() {
        let p = prepare(SQL, Placeholders::Dollar);
        assert!(p.sql.ends_with("a = $1 AND b < $2 AND c = $1"), "{}", p.sql);
        assert!(p.sql.contains("':not'") && p.sql.contains("x::text") && p.sql.contains(":nor"));
        assert_eq!(p.binds, vec!["id", "now"]);
        assert!(prepare(SQL, Placeholders::AtP).sql.ends_with("a = @P1 AND b < @P2 AND c = @P1"));
    }

    #[test]
    fn positional_style_binds_every_use() {
        let p = prepare(SQL, Placeholders::Question);
        assert!(p.sql.ends_with("a = ? AND b < ? AND c = ?"));
        assert_eq!(p.binds, vec!["id", "now", "id"]);
    }

    #[test]
    fn dollar_quoted_bodies_hide_their_text() {
        let sql = "CREATE FUNCTION f() AS $$ it's :nope $$; SELECT $body$ :nor $$ $body$, :id, $1";
        assert_eq!(parameters(sql), vec!["id"]);
        assert_eq!(prepare(sql, Placeholders::Dollar).sql, sql.replace(":id", "$1"));
        assert_eq!(parameters("SELECT $$ open :x"), Vec::<String>::new());
    }

    #[test]
    fn scripts_split_at_top_level_semicolons() {
        let cmds = commands("CREATE TABLE a (x TEXT DEFAULT ';');\n-- done;\nCREATE INDEX i ON a (x);\n");
        assert_eq!(cmds, vec!["CREATE TABLE a (x TEXT DEFAULT ';')", "-- done;\nCREATE INDEX i ON a (x)"]);
        assert!(commands("-- nothing here\n").is_empty());
    }

    #[test]
    fn files_split_at_name_markers() {
        let blocks =
            named_blocks("-- header comment\n\n-- name: claim\nUPDATE jobs;\n-- name: heartbeat\nUPDATE x;\n").unwrap();
        assert_eq!(
            blocks.iter().map(|b| (b.name.as_str(), b.line)).collect::<Vec<_>>(),
            vec![("claim", 3), ("heartbeat", 5)]
        );
        assert_eq!(blocks[0].sql, "UPDATE jobs;\n");
        assert_eq!(named_blocks("SELECT 1;\n-- name: x\n").unwrap_err().0, 1);
        assert_eq!(named_blocks("-- name: Bad-Name\n").unwrap_err().0, 1);
    }
}
