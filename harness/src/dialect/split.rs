//! Splitting a script into the commands a driver runs one at a time.
//!
//! A driver takes one command per call and knows no `DELIMITER` or `GO`, so
//! the harness cuts a `Script` statement (`schema`, the namespace scripts)
//! at its top-level `;`. The text is read by sqlparser's tokenizer in the
//! grammar of the database, so a `;` inside a string literal, a quoted
//! identifier, a comment or a PostgreSQL dollar-quoted body (`$$ ... $$`,
//! `$body$ ... $body$`) never cuts. Neither does one inside the
//! `BEGIN ... END` body of a `CREATE TRIGGER`, `FUNCTION`, `PROCEDURE` or
//! `EVENT` (SQLite, MySQL/MariaDB, SQL Server, PostgreSQL's `BEGIN ATOMIC`):
//! in such a command, `BEGIN` (but `BEGIN TRANSACTION` and its kin) and
//! `CASE` open a block and `END` closes one; `END IF`, `END LOOP`,
//! `END WHILE` and `END REPEAT` close MySQL blocks whose openers are not
//! counted, and `END CASE` closes its `CASE`. Commands are slices of the
//! original text, so `:name` parameters, `{namespace}` markers and `::`
//! casts reach the driver as written.
//!
//! A MySQL client's `DELIMITER //` lines and SQL Server's `GO` are client
//! commands, not SQL: a port writes its trigger with plain `;` inside and
//! after it, and leaves them out.

use sqlparser::dialect::{Dialect, GenericDialect, MsSqlDialect, MySqlDialect, PostgreSqlDialect, SQLiteDialect};
use sqlparser::tokenizer::{Location, Token, TokenWithSpan, Tokenizer};

/// The lexical rules a script is read with: which quotes, comments and
/// bodies a database knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grammar {
    /// SQLite: `'...'`, `"..."`, `` `...` `` and `[...]` quotes.
    Sqlite,
    /// PostgreSQL and CockroachDB: dollar quoting, `E'...'` escapes, nested
    /// block comments.
    Postgres,
    /// MySQL and MariaDB: backslash escapes in strings, `` `...` `` identifiers,
    /// `#` comments.
    MySql,
    /// SQL Server: `[...]` identifiers, nested block comments.
    MsSql,
    /// Any database: standard quotes and comments, and dollar quoting; for
    /// checks made before a driver is known (the dialect lint).
    Generic,
}

impl Grammar {
    /// The grammar of dialect folder `name` (a target's `Target::dialect()`):
    /// `sqlite`, `postgres` and `cockroach`, `mysql`, `mssql`; any other
    /// name is read with the generic grammar.
    pub fn for_dialect(name: &str) -> Grammar {
        match name {
            "sqlite" => Grammar::Sqlite,
            "postgres" | "cockroach" => Grammar::Postgres,
            "mysql" => Grammar::MySql,
            "mssql" => Grammar::MsSql,
            _ => Grammar::Generic,
        }
    }

    /// sqlparser's dialect for this grammar: its tokenizer splits scripts,
    /// its parser reads statements for mutation.
    pub fn sqlparser(self) -> Box<dyn Dialect> {
        match self {
            Grammar::Sqlite => Box::new(SQLiteDialect {}),
            Grammar::Postgres => Box::new(PostgreSqlDialect {}),
            Grammar::MySql => Box::new(MySqlDialect {}),
            Grammar::MsSql => Box::new(MsSqlDialect {}),
            Grammar::Generic => Box::new(GenericDialect {}),
        }
    }
}

/// The commands of `sql`, cut at its top-level `;` as the module doc says,
/// each trimmed, blank ones (white space and comments only) dropped. Text
/// the tokenizer cannot read (an unterminated string or body) is kept whole
/// as one command, so that the database, not the splitter, reports the
/// mistake with its own message.
pub fn split(sql: &str, grammar: Grammar) -> Vec<String> {
    let dialect = grammar.sqlparser();
    let Ok(tokens) = Tokenizer::new(dialect.as_ref(), sql).tokenize_with_location() else {
        return if sql.trim().is_empty() { Vec::new() } else { vec![sql.trim().to_owned()] };
    };
    let lines = LineStarts::of(sql);
    let mut commands = Vec::new();
    let mut start = 0;
    let mut command = Command::default();
    let significant: Vec<&TokenWithSpan> = tokens.iter().filter(|t| !is_trivia(&t.token)).collect();
    for (i, t) in significant.iter().enumerate() {
        if t.token == Token::SemiColon && command.depth == 0 {
            let at = lines.offset(sql, t.span.start);
            push_command(&mut commands, &sql[start..at], command.has_code);
            start = at + 1;
            command = Command::default();
            continue;
        }
        command.see(&significant, i);
    }
    push_command(&mut commands, &sql[start..], command.has_code);
    commands
}

fn push_command(commands: &mut Vec<String>, text: &str, has_code: bool) {
    if has_code {
        commands.push(text.trim().to_owned());
    }
}

fn is_trivia(token: &Token) -> bool {
    matches!(token, Token::Whitespace(_) | Token::EOF)
}

/// What the splitter knows of the command it is in.
#[derive(Default)]
struct Command {
    /// Whether anything but white space and comments was seen.
    has_code: bool,
    /// Whether the command's first word is `CREATE`.
    creates: bool,
    /// Whether the command defines a trigger, function, procedure or event,
    /// whose body may hold `;`.
    defines_routine: bool,
    /// How many `BEGIN`/`CASE` blocks are open.
    depth: usize,
    /// Whether the previous token was an `END` that closed a `CASE` block
    /// with `END CASE`, so the `CASE` after it opens nothing.
    skip_next_case: bool,
}

impl Command {
    fn see(&mut self, tokens: &[&TokenWithSpan], i: usize) {
        let next = tokens.get(i + 1).and_then(|t| keyword(&t.token));
        let next = next.as_deref();
        match keyword(&tokens[i].token).as_deref() {
            Some("CREATE") if !self.has_code => self.creates = true,
            Some("TRIGGER" | "FUNCTION" | "PROCEDURE" | "EVENT") if self.creates => {
                self.defines_routine = true;
            }
            Some("BEGIN") if (self.defines_routine || self.depth > 0) && opens_block(next) => self.depth += 1,
            Some("CASE") if std::mem::take(&mut self.skip_next_case) => {}
            Some("CASE") if self.defines_routine || self.depth > 0 => self.depth += 1,
            Some("END") if self.depth > 0 => match next {
                // MySQL's IF, LOOP, WHILE and REPEAT blocks: their openers are not counted.
                Some("IF" | "LOOP" | "WHILE" | "REPEAT") => {}
                Some("CASE") => {
                    self.depth -= 1;
                    self.skip_next_case = true;
                }
                _ => self.depth -= 1,
            },
            _ => {}
        }
        self.has_code = true;
    }
}

/// Whether a `BEGIN` followed by `next` opens a block rather than a
/// transaction (`BEGIN;`, `BEGIN TRANSACTION`, `BEGIN WORK`, SQLite's
/// `BEGIN IMMEDIATE`, SQL Server's `BEGIN TRAN` and `BEGIN DISTRIBUTED`).
fn opens_block(next: Option<&str>) -> bool {
    !matches!(
        next,
        Some("TRANSACTION" | "TRAN" | "WORK" | "DEFERRED" | "IMMEDIATE" | "EXCLUSIVE" | "DISTRIBUTED" | "ISOLATION")
    )
}

/// The upper-cased text of an unquoted word token: a keyword, whether
/// sqlparser's list has it (`BEGIN`) or not (MySQL's `LOOP`).
fn keyword(token: &Token) -> Option<String> {
    match token {
        Token::Word(w) if w.quote_style.is_none() => Some(w.value.to_ascii_uppercase()),
        _ => None,
    }
}

/// Byte offsets of the lines of a text, to turn the tokenizer's line and
/// column (from 1, in characters) into an index.
struct LineStarts(Vec<usize>);

impl LineStarts {
    fn of(text: &str) -> LineStarts {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        LineStarts(starts)
    }

    fn offset(&self, text: &str, at: Location) -> usize {
        let line = usize::try_from(at.line).unwrap_or(usize::MAX).saturating_sub(1);
        let start = self.0.get(line).copied().unwrap_or(text.len());
        let column = usize::try_from(at.column).unwrap_or(usize::MAX).saturating_sub(1);
        text[start..].char_indices().nth(column).map_or(text.len(), |(i, _)| start + i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_grammars() -> [Grammar; 5] {
        [Grammar::Sqlite, Grammar::Postgres, Grammar::MySql, Grammar::MsSql, Grammar::Generic]
    }

    #[test]
    fn splits_at_top_level_semicolons_only() {
        let sql = "CREATE TABLE a (x TEXT DEFAULT ';'); -- a; comment\n/* b; */ CREATE INDEX \"i;\" ON a (x);\n\n";
        for g in all_grammars() {
            assert_eq!(
                split(sql, g),
                vec!["CREATE TABLE a (x TEXT DEFAULT ';')", "-- a; comment\n/* b; */ CREATE INDEX \"i;\" ON a (x)"],
                "{g:?}"
            );
        }
    }

    #[test]
    fn keeps_parameters_markers_and_casts_as_written() {
        let sql = "CREATE SCHEMA {namespace};\nSELECT x::text FROM t WHERE a = :id AND b = 'é;'";
        for g in all_grammars() {
            assert_eq!(
                split(sql, g),
                vec!["CREATE SCHEMA {namespace}", "SELECT x::text FROM t WHERE a = :id AND b = 'é;'"],
                "{g:?}"
            );
        }
    }

    #[test]
    fn blank_scripts_have_no_commands() {
        for g in all_grammars() {
            assert!(split("-- nothing here;\n ; /* nor; here */ ;\n", g).is_empty(), "{g:?}");
            assert!(split("", g).is_empty(), "{g:?}");
        }
    }

    #[test]
    fn unreadable_text_is_one_command() {
        assert_eq!(split("SELECT 'open; string", Grammar::Postgres), vec!["SELECT 'open; string"]);
        assert_eq!(split("SELECT $$ open; body", Grammar::Postgres), vec!["SELECT $$ open; body"]);
    }

    #[test]
    fn postgres_dollar_quoted_function_bodies_stay_whole() {
        let function = "CREATE FUNCTION touch() RETURNS trigger LANGUAGE plpgsql AS $$\nBEGIN\n  NEW.updated_at := NEW.run_at;\n  RETURN NEW;\nEND;\n$$";
        let tagged = "CREATE OR REPLACE FUNCTION f(x bigint) RETURNS bigint AS $body$\nDECLARE y bigint;\nBEGIN\n  y := x + 1; RETURN y; -- $$ is not the end\nEND\n$body$ LANGUAGE plpgsql";
        let trigger = "CREATE TRIGGER t BEFORE INSERT ON jobs FOR EACH ROW EXECUTE FUNCTION touch()";
        let sql = format!("{function};\n{tagged};\n{trigger};\n");
        assert_eq!(split(&sql, Grammar::Postgres), vec![function, tagged, trigger]);
    }

    #[test]
    fn postgres_begin_atomic_bodies_stay_whole() {
        let function = "CREATE FUNCTION one() RETURNS bigint LANGUAGE sql BEGIN ATOMIC SELECT 1; END";
        let sql = format!("{function};\nBEGIN;\nCOMMIT;");
        assert_eq!(split(&sql, Grammar::Postgres), vec![function, "BEGIN", "COMMIT"]);
    }

    #[test]
    fn sqlite_trigger_bodies_stay_whole() {
        let trigger = "CREATE TRIGGER jobs_touch AFTER UPDATE OF heartbeat_at ON jobs\nFOR EACH ROW WHEN NEW.heartbeat_at IS NOT NULL\nBEGIN\n  UPDATE jobs SET updated_at = CASE WHEN NEW.updated_at > 0 THEN NEW.updated_at ELSE 0 END WHERE id = NEW.id;\n  SELECT 1;\nEND";
        let sql = format!("CREATE TABLE jobs (id TEXT);\n{trigger};\nBEGIN TRANSACTION;\nCOMMIT;");
        assert_eq!(
            split(&sql, Grammar::Sqlite),
            vec!["CREATE TABLE jobs (id TEXT)", trigger, "BEGIN TRANSACTION", "COMMIT"]
        );
    }

    #[test]
    fn mysql_trigger_and_procedure_bodies_stay_whole_without_delimiter() {
        let trigger = "CREATE TRIGGER jobs_touch BEFORE UPDATE ON jobs FOR EACH ROW\nBEGIN\n  IF NEW.heartbeat_at IS NOT NULL THEN\n    SET NEW.updated_at = NEW.heartbeat_at;\n  END IF;\n  SET NEW.note = 'a;b\\';c';\nEND";
        let procedure = "CREATE DEFINER = CURRENT_USER PROCEDURE p()\nBEGIN\n  DECLARE n INT DEFAULT 0;\n  l: LOOP\n    SET n = n + 1;\n    CASE n WHEN 3 THEN LEAVE l; ELSE BEGIN END; END CASE;\n  END LOOP l;\n  WHILE n > 0 DO SET n = n - 1; END WHILE;\n  REPEAT SET n = n + 1; UNTIL n > 2 END REPEAT;\nEND";
        let sql = format!("{trigger};\n{procedure};\n# a comment; here\nSELECT 1;");
        assert_eq!(split(&sql, Grammar::MySql), vec![trigger, procedure, "# a comment; here\nSELECT 1"]);
    }

    #[test]
    fn mssql_trigger_bodies_stay_whole() {
        let trigger = "CREATE OR ALTER TRIGGER [jobs;touch] ON jobs AFTER UPDATE AS\nBEGIN\n  SET NOCOUNT ON;\n  BEGIN TRY\n    UPDATE j SET updated_at = i.heartbeat_at FROM jobs j JOIN inserted i ON i.id = j.id;\n  END TRY\n  BEGIN CATCH\n    THROW;\n  END CATCH;\nEND";
        let sql = format!("{trigger};\nBEGIN TRAN;\nCOMMIT;");
        assert_eq!(split(&sql, Grammar::MsSql), vec![trigger, "BEGIN TRAN", "COMMIT"]);
    }

    #[test]
    fn plain_case_expressions_do_not_hold_the_split() {
        let sql = "SELECT CASE WHEN a THEN 1 END FROM t; SELECT 2";
        for g in all_grammars() {
            assert_eq!(split(sql, g), vec!["SELECT CASE WHEN a THEN 1 END FROM t", "SELECT 2"], "{g:?}");
        }
    }

    #[test]
    fn offsets_count_characters_not_bytes() {
        let text = "é;\nñé;x";
        let lines = LineStarts::of(text);
        assert_eq!(lines.offset(text, Location::new(1, 2)), 2);
        assert_eq!(lines.offset(text, Location::new(2, 3)), 8);
        assert_eq!(&text[8..9], ";");
    }
}
