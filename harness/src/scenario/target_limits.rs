//! What each target can hold, so that a scenario a database cannot store is
//! refused by `check` (and by `run` before anything runs) as `outside
//! <target>'s limits: ...` at its `file:line:column`, instead of failing on
//! that database in a way that reads like a bug in its SQL.
//!
//! The limits come from where they are declared where such a place exists:
//! each text column's length from the dialect's own `schema` and
//! `legacy_schema` statements (`VARBINARY(255)`, `nvarchar(200)`), and
//! which columns are index keys from their `PRIMARY KEY` and `INDEX`
//! clauses. What no dialect file declares is the server's and named here
//! with its reason: PostgreSQL refuses NUL in `text` and btree index
//! entries over 2,704 bytes; MySQL's and MariaDB's offsets are bounded.
//! Zone names are checked against the IANA names of tzdata 2025b
//! (`zones.txt`), not against the server's own list: a server may know
//! fewer (MariaDB and MySQL know no named zone until their time zone tables
//! are loaded, `ci/mysql-timezones.sh`).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::load::LoadedScenario;
use super::located::Position;
use super::types::{Schema, Step};
use crate::dialect::Dialect;
use crate::target::Target;

/// PostgreSQL's largest btree index entry, in bytes (a third of an 8 KiB
/// page less overhead: "index row size exceeds btree version 4 maximum
/// 2704"). Longer texts are compressed first, but random text does not
/// shrink, so reapcheck refuses any longer key.
pub const POSTGRES_INDEX_KEY_BYTES: usize = 2_704;

/// The IANA zone names reapcheck knows without asking a server.
const ZONES: &str = include_str!("zones.txt");

/// How a column's declared length counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Unit {
    Bytes,
    Characters,
    Utf16,
}

/// One text column as a dialect's schema declares it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Column {
    /// The declared type, as written (`VARBINARY(255)`).
    declared: String,
    /// Its length and how it counts; `None`: unbounded.
    max: Option<(usize, Unit)>,
    /// Whether an index (the primary key among them) has it as a key.
    indexed: bool,
    /// Where it is declared (`mysql/schema.sql:84`, the statement's marker).
    origin: String,
}

/// `table.column` to its declaration, for one dialect and schema.
type Columns = BTreeMap<(String, String), Column>;

/// Every scenario of `scenarios` that a target of `targets` cannot hold, as
/// `file:line:column: outside <target>'s limits: ...` lines, in scenario
/// and file order.
pub fn outside_limits(scenarios: &[LoadedScenario], targets: &[(Target, &Dialect)]) -> Vec<String> {
    let mut found = Vec::new();
    for (target, dialect) in targets {
        let standard = columns(dialect, Schema::Standard);
        let legacy = columns(dialect, Schema::Legacy);
        for loaded in scenarios {
            let columns = if loaded.scenario.schema == Schema::Legacy { &legacy } else { &standard };
            for (position, why) in problems(loaded, *target, dialect, columns) {
                let at = position.map(|p| format!(":{}:{}", p.line, p.column)).unwrap_or_default();
                found.push(format!("{}{at}: outside {target}'s limits: {why}", loaded.path.display()));
            }
        }
    }
    found
}

/// [`outside_limits`] for each of `targets` whose dialect is among
/// `dialects` (a target whose dialect did not load is left out).
pub fn outside_limits_of(scenarios: &[LoadedScenario], targets: &[Target], dialects: &[Dialect]) -> Vec<String> {
    let paired: Vec<(Target, &Dialect)> =
        targets.iter().filter_map(|t| dialects.iter().find(|d| d.name == t.dialect()).map(|d| (*t, d))).collect();
    outside_limits(scenarios, &paired)
}

/// A text the scenario stores, with the place it is written.
struct Text<'a> {
    what: &'static str,
    table: &'static str,
    column: &'static str,
    text: std::borrow::Cow<'a, str>,
    position: Option<Position>,
}

/// The texts `loaded` binds to columns: each job's ids, class, queue and
/// attempt labels, each lease's name and owner, and the lease names its
/// claims take.
fn texts(loaded: &LoadedScenario) -> Vec<Text<'_>> {
    let s = &loaded.scenario;
    let mut out = Vec::new();
    let mut push = |what, table, column, text, position| out.push(Text { what, table, column, text, position });
    // A job's claims number its attempts: at most one more than the steps.
    let claims = s.steps.len() as u64 + 1;
    for job in &s.jobs {
        let at = job.id.position();
        // The longest id of the entry: the prefix and the most digits.
        let id = match job.count.as_deref() {
            Some(n) => format!("{}{}", job.id.as_str(), "9".repeat(n.to_string().len())),
            None => job.id.to_string(),
        };
        let label = format!("{id}/{claims}");
        push("job id", "jobs", "id", id.into(), at);
        push("class name", "jobs", "class", job.class.as_str().into(), job.class.position());
        push("queue", "jobs", "queue", job.queue.as_str().into(), job.queue.position());
        push("attempt label", "jobs", "claim_token", label.clone().into(), at);
        let class = s.classes.get(job.class.as_str());
        let key = job.concurrency_key.as_ref().or(class.and_then(|c| c.concurrency_key.as_ref()));
        let lease = match key {
            Some(key) => Some(format!("key:{key}")),
            None if class.is_some_and(|c| c.exclusive) => Some(format!("job:{}", job.class.as_str())),
            None => None,
        };
        if let Some(name) = lease {
            push("lease name", "job_leases", "name", name.into(), at);
            push("lease owner", "job_leases", "owner", label.into(), at);
        }
    }
    for lease in &s.leases {
        push("lease name", "job_leases", "name", lease.name.as_str().into(), lease.name.position());
        push("lease owner", "job_leases", "owner", lease.owner.as_str().into(), lease.name.position());
    }
    for step in &s.steps {
        let label = match step.value() {
            Step::Claim(c) => c.label.as_ref(),
            Step::Heartbeat(r) | Step::Complete(r) | Step::Fail(r) => r.attempt.as_ref(),
            _ => None,
        };
        if let Some(label) = label {
            push("attempt label", "jobs", "claim_token", label.as_str().into(), label.position());
            push("lease owner", "job_leases", "owner", label.as_str().into(), label.position());
        }
    }
    out
}

fn problems(
    loaded: &LoadedScenario,
    target: Target,
    dialect: &Dialect,
    columns: &Columns,
) -> Vec<(Option<Position>, String)> {
    let mut out = Vec::new();
    let ignores = dialect
        .find("lease_acquire", loaded.scenario.schema)
        .is_some_and(|s| crate::dialect::text::strip_comments(&s.sql).to_ascii_uppercase().contains("INSERT IGNORE"));
    let mut seen = std::collections::BTreeSet::new();
    for t in texts(loaded) {
        let shown = shown(&t.text);
        // One problem per place: an attempt label made from a job id that
        // is too long is the id's problem.
        let mut report = |why: String| {
            if seen.insert(t.position) {
                out.push((t.position, why));
            }
        };
        if target == Target::Postgres && t.text.contains('\0') {
            report(format!(
                "the {} `{shown}` holds a NUL character, which PostgreSQL's text cannot store: remove it",
                t.what
            ));
        }
        let Some(column) = columns.get(&(t.table.to_owned(), t.column.to_owned())) else { continue };
        if let Some((max, unit)) = column.max {
            let length = match unit {
                Unit::Bytes => t.text.len(),
                Unit::Characters => t.text.chars().count(),
                Unit::Utf16 => t.text.encode_utf16().count(),
            };
            if length > max {
                let unit = match unit {
                    Unit::Bytes => "bytes",
                    Unit::Characters => "characters",
                    Unit::Utf16 => "UTF-16 code units",
                };
                let mut why = format!(
                    "the {} `{shown}` has {length} {unit}, more than {}.{} holds ({max}, {} at {})",
                    t.what, t.table, t.column, column.declared, column.origin
                );
                if ignores && t.table == "job_leases" {
                    let _ = write!(
                        why,
                        "; its lease_acquire's INSERT IGNORE would cut it to {max} {unit} silently instead of refusing it"
                    );
                }
                why.push_str(": shorten it");
                report(why);
            }
        }
        if target == Target::Postgres && column.indexed && t.text.len() > POSTGRES_INDEX_KEY_BYTES {
            report(format!(
                "the {} `{shown}` has {} bytes, more than the {POSTGRES_INDEX_KEY_BYTES} a PostgreSQL btree index \
                 entry holds ({}.{} is an index key, {}): shorten it",
                t.what,
                t.text.len(),
                t.table,
                t.column,
                column.origin
            ));
        }
    }
    // A dialect whose set_time_zone is blank (SQLite's, SQL Server's) sets
    // no zone, so any zone fits it.
    let sets_zone =
        dialect.find("set_time_zone", loaded.scenario.schema).is_some_and(|s| !crate::dialect::text::is_blank(&s.sql));
    if let Some(zone) = &loaded.scenario.session_time_zone
        && sets_zone
        && let Some(why) = unknown_zone(target, zone)
    {
        out.push((zone.position(), why));
    }
    out
}

/// Why `target` would refuse `zone` as its session time zone, if it would.
fn unknown_zone(target: Target, zone: &str) -> Option<String> {
    let b = zone.as_bytes();
    if b.len() == 6 && (b[0] == b'+' || b[0] == b'-') {
        let number = |s: &[u8]| std::str::from_utf8(s).ok().and_then(|s| s.parse::<u32>().ok()).unwrap_or(99);
        let (hours, minutes) = (number(&b[1..3]), number(&b[4..6]));
        if minutes >= 60 {
            return Some(format!("the offset `{zone}` has {minutes} minutes: write minutes below 60"));
        }
        let total = hours * 60 + minutes;
        let (low, high, range) = match target {
            Target::Mariadb => (12 * 60 + 59, 13 * 60, "-12:59 to +13:00"),
            Target::Mysql => (13 * 60 + 59, 14 * 60, "-13:59 to +14:00"),
            _ => return None,
        };
        let bound = if b[0] == b'+' { high } else { low };
        return (total > bound)
            .then(|| format!("the offset `{zone}` is outside the {range} the server takes: use an offset inside it"));
    }
    let known = ZONES.lines().filter(|l| !l.starts_with('#')).any(|l| l.eq_ignore_ascii_case(zone));
    (!known).then(|| {
        format!(
            "the time zone `{zone}` is not an IANA zone name (checked against tzdata 2025b, not the server's own list), \
             so {target} would refuse it: write a name such as `America/New_York` or an offset such as `+05:30`"
        )
    })
}

/// `text` for a message: at most 40 characters, escaped.
fn shown(text: &str) -> String {
    let mut out: String = text.chars().take(40).collect::<String>().escape_debug().to_string();
    if text.chars().count() > 40 {
        out.push_str("...");
    }
    out
}

/// The text columns of `dialect`'s tables for `schema`, from its `schema`
/// (or `legacy_schema`) statement.
fn columns(dialect: &Dialect, schema: Schema) -> Columns {
    let Some(statement) = dialect.find("schema", schema) else { return Columns::new() };
    parse_columns(&crate::dialect::text::strip_comments(&statement.sql), &statement.origin)
}

/// The columns of every `CREATE TABLE` in `sql`, with the indexes of
/// `PRIMARY KEY`, inline `INDEX`/`KEY` items and `CREATE INDEX ... ON`.
fn parse_columns(sql: &str, origin: &str) -> Columns {
    let mut columns = Columns::new();
    let upper = sql.to_ascii_uppercase();
    let mut indexed: Vec<(String, String)> = Vec::new();
    let mut from = 0;
    while let Some(found) = upper[from..].find("CREATE TABLE") {
        let start = from + found + "CREATE TABLE".len();
        let Some(open) = sql[start..].find('(').map(|i| start + i) else { break };
        let table = identifier(sql[start..open].split_whitespace().last().unwrap_or_default());
        let Some(close) = matching(sql, open) else { break };
        for item in top_level_split(&sql[open + 1..close]) {
            let words: Vec<&str> = item.split_whitespace().collect();
            let Some(first) = words.first() else { continue };
            let head = first.to_ascii_uppercase();
            if ["INDEX", "KEY", "PRIMARY", "UNIQUE", "CONSTRAINT"].contains(&head.as_str()) {
                if let (Some(o), Some(c)) = (item.find('('), item.rfind(')')) {
                    for name in item[o + 1..c].split(',') {
                        indexed.push((table.clone(), identifier(name)));
                    }
                }
                continue;
            }
            let column = identifier(first);
            let declared = words.get(1).copied().unwrap_or_default();
            // `VARBINARY(255)` may be written `VARBINARY (255)`.
            let declared = match words.get(2) {
                Some(w) if w.starts_with('(') => format!("{declared}{w}"),
                _ => declared.to_owned(),
            };
            if item.to_ascii_uppercase().contains("PRIMARY KEY") {
                indexed.push((table.clone(), column.clone()));
            }
            if let Some(max) = length(&declared) {
                columns.insert(
                    (table.clone(), column),
                    Column { declared, max, indexed: false, origin: origin.to_owned() },
                );
            }
        }
        from = close;
    }
    // CREATE [UNIQUE] INDEX name ON table (columns).
    let mut from = 0;
    while let Some(found) = upper[from..].find(" INDEX ") {
        let start = from + found;
        let Some(on) = upper[start..].find(" ON ").map(|i| start + i + 4) else { break };
        let Some(open) = sql[on..].find('(').map(|i| on + i) else { break };
        let table = identifier(sql[on..open].trim());
        if let Some(close) = matching(sql, open) {
            for name in top_level_split(&sql[open + 1..close]) {
                indexed.push((table.clone(), identifier(&name)));
            }
        }
        from = open;
    }
    for key in indexed {
        if let Some(c) = columns.get_mut(&key) {
            c.indexed = true;
        }
    }
    columns
}

/// The declared length of a text type: `Some(None)` for unbounded text,
/// `None` for a type that is not text.
fn length(declared: &str) -> Option<Option<(usize, Unit)>> {
    let upper = declared.to_ascii_uppercase();
    let (name, size) = match upper.split_once('(') {
        Some((name, rest)) => (name.trim().to_owned(), rest.trim_end_matches(')').trim().parse::<usize>().ok()),
        None => (upper.clone(), None),
    };
    let unit = match name.as_str() {
        "VARBINARY" | "BINARY" | "BYTEA" | "BLOB" => Unit::Bytes,
        "NVARCHAR" | "NCHAR" => Unit::Utf16,
        "VARCHAR" | "CHAR" | "CHARACTER" | "STRING" | "TEXT" => Unit::Characters,
        _ => return None,
    };
    Some(size.map(|n| (n, unit)))
}

fn identifier(word: &str) -> String {
    word.trim().trim_matches(|c| c == '"' || c == '`' || c == '[' || c == ']').to_ascii_lowercase()
}

/// The index of the `)` matching the `(` at `open`.
fn matching(sql: &str, open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in sql[open..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(open + i);
                }
            }
            _ => {}
        }
    }
    None
}

/// `body` cut at the commas outside parentheses.
fn top_level_split(body: &str) -> Vec<String> {
    let (mut items, mut current, mut depth) = (Vec::new(), String::new(), 0usize);
    for c in body.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                items.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    items.push(current);
    items
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::Source;
    use crate::scenario::parse_named;

    fn refused(text: &str, target: Target) -> Vec<String> {
        let loaded = parse_named("t", std::path::Path::new("t.yaml"), text).expect("valid scenario");
        let dialect = Dialect::load(&Source::Embedded, target.dialect()).expect("the builtin dialect loads");
        outside_limits(&[loaded], &[(target, &dialect)])
    }

    #[test]
    fn the_schemas_declare_the_lengths_and_keys() {
        let d = Dialect::load(&Source::Embedded, "mysql").unwrap();
        let c = columns(&d, Schema::Standard);
        let id = &c[&("jobs".to_owned(), "id".to_owned())];
        assert_eq!((id.max, id.indexed, id.declared.as_str()), (Some((255, Unit::Bytes)), true, "VARBINARY(255)"));
        assert!(c[&("jobs".to_owned(), "queue".to_owned())].indexed, "INDEX jobs_reap (status, queue)");
        let p = columns(&Dialect::load(&Source::Embedded, "postgres").unwrap(), Schema::Legacy);
        let name = &p[&("job_leases".to_owned(), "name".to_owned())];
        assert_eq!((name.max, name.indexed), (None, true));
        let m = columns(&Dialect::load(&Source::Embedded, "mssql").unwrap(), Schema::Standard);
        assert_eq!(m[&("jobs".to_owned(), "class".to_owned())].max, Some((200, Unit::Utf16)));
    }

    const LEASED: &str = "description: x\nclasses: { C: { exclusive: true } }\njobs:\n  - { id: a, class: C, concurrency_key: KEY }\nsteps: [ { claim: a } ]\n";

    #[test]
    fn a_300_byte_lease_name_is_refused_for_mariadb_with_the_limit() {
        let text = LEASED.replace("KEY", &"k".repeat(296));
        let found = refused(&text, Target::Mariadb);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].starts_with("t.yaml:4:11: outside mariadb's limits: the lease name `key:kkk"), "{found:?}");
        assert!(
            found[0].contains(
                "has 300 bytes, more than job_leases.name holds (255, VARBINARY(255) at builtin:mysql/schema.sql:"
            ),
            "{found:?}"
        );
        assert!(found[0].contains("INSERT IGNORE would cut it to 255 bytes silently"), "{found:?}");
        assert!(refused(&LEASED.replace("KEY", &"k".repeat(251)), Target::Mariadb).is_empty());
        assert!(refused(&text, Target::Sqlite).is_empty());
        assert!(refused(&text, Target::Postgres).is_empty());
        // SQL Server's nvarchar(200) holds less.
        assert!(refused(&text, Target::Mssql)[0].contains("more than job_leases.name holds (200, nvarchar(200)"));
    }

    #[test]
    fn nul_and_long_index_keys_are_refused_for_postgres() {
        let nul = "description: x\nclasses: { C: {} }\njobs:\n  - { id: \"a\\0b\", class: C }\nsteps: []\n";
        let found = refused(nul, Target::Postgres);
        assert_eq!(
            found,
            [
                "t.yaml:4:11: outside postgres's limits: the job id `a\\0b` holds a NUL character, which PostgreSQL's text cannot store: remove it"
            ]
        );
        assert!(refused(nul, Target::Sqlite).is_empty());
        let long = format!(
            "description: x\nclasses: {{ C: {{}} }}\njobs:\n  - {{ id: a, class: C, queue: {} }}\nsteps: []\n",
            "q".repeat(2_705)
        );
        let found = refused(&long, Target::Postgres);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].contains(
                "has 2705 bytes, more than the 2704 a PostgreSQL btree index entry holds (jobs.queue is an index key"
            ),
            "{found:?}"
        );
        // A lease's owner is no index key.
        let owner = format!(
            "description: x\nleases: [ {{ name: n, owner: {}, expires: +1m }} ]\nsteps: []\n",
            "o".repeat(3_000)
        );
        assert!(refused(&owner, Target::Postgres).is_empty());
    }

    #[test]
    fn unknown_zones_are_refused() {
        let text = |zone: &str| format!("description: x\nsession_time_zone: \"{zone}\"\nsteps: []\n");
        let found = refused(&text("Mars/Olympus_Mons"), Target::Postgres);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].starts_with(
                "t.yaml:2:20: outside postgres's limits: the time zone `Mars/Olympus_Mons` is not an IANA zone name"
            ),
            "{found:?}"
        );
        assert!(refused(&text("Mars/Olympus_Mons"), Target::Sqlite).is_empty());
        assert!(refused(&text("America/New_York"), Target::Mariadb).is_empty());
        assert!(refused(&text("Australia/Lord_Howe"), Target::Postgres).is_empty());
        assert!(refused(&text("+13:00"), Target::Mariadb).is_empty());
        assert!(refused(&text("+13:30"), Target::Mariadb)[0].contains("outside the -12:59 to +13:00"));
        assert!(refused(&text("+13:30"), Target::Mysql).is_empty());
        assert!(refused(&text("+05:75"), Target::Postgres)[0].contains("write minutes below 60"));
        // SQLite's and SQL Server's set_time_zone is blank: they set no zone.
        assert!(refused(&text("+05:75"), Target::Sqlite).is_empty());
        assert!(refused(&text("Mars/Olympus_Mons"), Target::Mssql).is_empty());
    }
}
