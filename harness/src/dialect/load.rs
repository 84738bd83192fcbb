//! Loading a dialect's files and checking them against the contract.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use include_dir::{Dir, include_dir};

use super::contract::{self, Shape};
use super::error::{DialectError, DialectErrorKind};
use super::profile::{self, Profile};
use super::text;
use crate::scenario::Schema;

/// The dialects shipped with reapcheck, embedded at build time.
static EMBEDDED: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/../dialects");

/// Where dialect folders are read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// The copy built into the binary.
    Embedded,
    /// A folder holding one sub-folder per dialect (`--dialects DIR`).
    Folder(PathBuf),
}

/// One named statement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Statement {
    /// Its name.
    pub name: String,
    /// `<file>:<line>` of its first line of SQL (the first line below its
    /// `-- name:` marker that is neither blank nor a `--` comment), for
    /// messages and traces (a blank statement: its marker); `<file>` as
    /// [`shown_file`] gives it.
    pub origin: String,
    /// Its SQL.
    pub sql: String,
    /// What the SQL path reads of `sql` on every call, derived once when
    /// the statement is made ([`Statement::new`]).
    derived: Derived,
}

/// What [`Statement`] derives from its SQL once: a setup of a thousand
/// rows logs a thousand calls of one statement, and parsing its text for
/// each was a tenth of a SQLite corpus run's instructions (issue 22).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Derived {
    /// [`text::parameters`] of the SQL.
    parameters: Vec<String>,
    /// [`text::prepare`] of the SQL in each [`text::Placeholders`] style,
    /// in [`style_index`] order.
    prepared: [text::Prepared; 3],
    /// Its single-row `VALUES` shape, when it has one ([`text::values_shape`]).
    values: Option<text::ValuesShape>,
}

/// The place of `style` in [`Derived::prepared`].
fn style_index(style: text::Placeholders) -> usize {
    match style {
        text::Placeholders::Dollar => 0,
        text::Placeholders::Question => 1,
        text::Placeholders::AtP => 2,
    }
}

impl Statement {
    /// The statement `name` at `origin` (`<file>:<line>`) with `sql`.
    pub fn new(name: String, origin: String, sql: String) -> Statement {
        use text::Placeholders::{AtP, Dollar, Question};
        let derived = Derived {
            parameters: text::parameters(&sql),
            prepared: [Dollar, Question, AtP].map(|style| text::prepare(&sql, style)),
            values: text::values_shape(&sql),
        };
        Statement { name, origin, sql, derived }
    }

    /// The parameters its SQL uses, each once, in order of first use
    /// ([`text::parameters`]).
    pub fn parameters(&self) -> &[String] {
        &self.derived.parameters
    }

    /// Its SQL with `style`'s bind markers ([`text::prepare`]).
    pub fn prepared(&self, style: text::Placeholders) -> &text::Prepared {
        &self.derived.prepared[style_index(style)]
    }

    /// Its SQL as one `INSERT ... VALUES (tuple)` that setup repeats for
    /// several rows ([`text::values_shape`]); `None` for another shape.
    pub fn values_shape(&self) -> Option<&text::ValuesShape> {
        self.derived.values.as_ref()
    }
}

/// A dialect whose files hold every statement of the contract for the
/// features its profile declares.
#[derive(Clone, Debug)]
pub struct Dialect {
    /// The folder name: `postgres`, `mysql`, ...
    pub name: String,
    /// Its `dialect.toml`, or the default (reference) profile.
    pub profile: Profile,
    /// Its pinned outcomes (`pinned/`), by scenario name; none when embedded.
    pub pins: std::collections::BTreeMap<String, super::pins::Pin>,
    /// Whose SQL this is: where it was read from and the hash of its files.
    pub provenance: Provenance,
    statements: BTreeMap<String, Statement>,
}

/// Where a dialect's SQL came from, for every report to say whose SQL ran
/// (docs/reports.md): the copy built into reapcheck, or a folder, and a
/// hash over its files, so two runs of "the same" dialect that read
/// different SQL are told apart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Provenance {
    /// `builtin`, or the dialect's folder as given (`my-dialects/postgres`).
    pub source: String,
    /// `sha256:<hex>` over each `.sql` file's name and text, sorted by name,
    /// then the `dialect.toml` text (empty when there is none).
    pub hash: String,
}

impl std::fmt::Display for Provenance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // 12 hex digits name it in a line; outcomes.json keeps all 64.
        let short = self.hash.strip_prefix("sha256:").map_or(self.hash.as_str(), |h| &h[..h.len().min(12)]);
        write!(f, "{} sha256:{short}", self.source)
    }
}

/// [`Provenance::hash`] of `files` (name, text) and the profile's text.
fn provenance_hash(files: &[(String, String)], profile: Option<&str>) -> String {
    use sha2::{Digest, Sha256};
    let mut sorted: Vec<&(String, String)> = files.iter().collect();
    sorted.sort();
    let mut digest = Sha256::new();
    let mut part = |bytes: &[u8]| {
        digest.update((bytes.len() as u64).to_le_bytes());
        digest.update(bytes);
    };
    for (name, text) in sorted {
        part(name.as_bytes());
        part(text.as_bytes());
    }
    part(profile.unwrap_or_default().as_bytes());
    let hex: String = digest.finalize().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

impl Dialect {
    /// Loads and checks dialect `name` from `source`; every problem found
    /// in its files and its profile is returned, each once.
    pub fn load(source: &Source, name: &str) -> Result<Dialect, Vec<DialectError>> {
        let files = read_files(source, name).map_err(|e| vec![e])?;
        let profile_shown = shown_file(source, name, profile::FILE_NAME);
        let mut errors = Vec::new();
        let profile_text = read_extra(source, name, profile::FILE_NAME).map_err(|e| vec![e])?;
        let provenance = Provenance {
            source: match source {
                Source::Embedded => "builtin".to_owned(),
                Source::Folder(root) => root.join(name).display().to_string(),
            },
            hash: provenance_hash(&files, profile_text.as_deref()),
        };
        let profile = match profile_text {
            None => None,
            Some(text) => match Profile::parse(&text) {
                Ok(p) => Some(p),
                Err(e) => {
                    errors.push(DialectError {
                        file: profile_shown.clone(),
                        line: u32::try_from(e.line).ok(),
                        column: u32::try_from(e.column).ok(),
                        kind: DialectErrorKind::Profile(e.message),
                    });
                    None
                }
            },
        };
        let explicit = profile.is_some();
        // A refused dialect.toml says nothing of the features the queue has:
        // no statement is reported as belonging to, or missing from, one.
        let refused = errors.iter().any(|e| matches!(e.kind, DialectErrorKind::Profile(_)));
        let profile = profile.unwrap_or_default();
        let mut statements: BTreeMap<String, Statement> = BTreeMap::new();
        // Names already reported (rejected or duplicated), so that none is
        // also reported missing.
        let mut reported: Vec<String> = Vec::new();
        for (file, content) in files {
            let shown = shown_file(source, name, &file);
            let error = |line: usize, kind| DialectError {
                file: shown.clone(),
                line: u32::try_from(line).ok(),
                column: None,
                kind,
            };
            let blocks = match text::named_blocks(&content) {
                Ok(b) => b,
                Err((line, message)) => {
                    errors.push(error(line, DialectErrorKind::Layout(message)));
                    continue;
                }
            };
            for block in blocks {
                // Its first line of SQL; a blank statement's marker.
                let first = if text::is_blank(&block.sql) {
                    block.line
                } else {
                    block.line + 1 + text::leading_blank_lines(&block.sql)
                };
                let origin = format!("{shown}:{first}");
                if let Some(first) = statements.get(&block.name) {
                    let first = first.origin.clone();
                    errors.push(error(block.line, DialectErrorKind::Duplicate { name: block.name, first }));
                    continue;
                }
                if let Some(feature) = contract::feature_of(&block.name).filter(|f| !refused && !profile.has(*f)) {
                    let kind = DialectErrorKind::AbsentFeatureDefined {
                        name: block.name.clone(),
                        feature,
                        profile: profile_shown.clone(),
                    };
                    errors.push(error(block.line, kind));
                    reported.push(block.name);
                    continue;
                }
                if let Err(kind) = check(&block) {
                    errors.push(error(block.line, kind));
                    reported.push(block.name);
                    continue;
                }
                let sql = block.sql.trim_end().to_owned();
                statements.insert(block.name.clone(), Statement::new(block.name, origin, sql));
            }
        }
        for (required, feature) in contract::required() {
            if statements.contains_key(&required) || reported.contains(&required) {
                continue;
            }
            // A statement the policy never runs need not be written; under a
            // refused dialect.toml the policy is unknown, so none that some
            // policy never runs is asked for.
            let base = required.strip_prefix("legacy_").unwrap_or(&required);
            let never_run = if refused {
                crate::policy::MAY_NEVER_RUN.contains(&base)
            } else {
                profile.policy.never_runs_statement(&required)
            };
            if never_run {
                continue;
            }
            let doc = contract::spec(&required).map_or("", |s| s.doc);
            let kind = match feature {
                Some(f) if refused || !profile.has(f) => continue,
                Some(feature) => {
                    let profile = if explicit {
                        format!("{profile_shown} lists")
                    } else {
                        "a dialect without dialect.toml has".to_owned()
                    };
                    DialectErrorKind::MissingOfFeature { name: required, feature, profile, doc }
                }
                None => DialectErrorKind::Missing { name: required, doc },
            };
            errors.push(DialectError { file: name.to_owned(), line: None, column: None, kind });
        }
        let pins = match source {
            Source::Embedded => Default::default(),
            Source::Folder(root) => super::pins::load(&root.join(name)).unwrap_or_else(|mut e| {
                errors.append(&mut e);
                Default::default()
            }),
        };
        if !errors.is_empty() {
            return Err(errors);
        }
        let dialect = Dialect { name: name.to_owned(), profile, pins, provenance, statements };
        let forgotten = super::emptying::not_emptied(&dialect);
        if forgotten.is_empty() {
            return Ok(dialect);
        }
        Err(forgotten
            .into_iter()
            .map(|f| {
                let (file, line) = f
                    .origin
                    .rsplit_once(':')
                    .map_or((f.origin.as_str(), None), |(file, line)| (file, line.parse::<u32>().ok()));
                let kind = DialectErrorKind::NotEmptied { table: f.table, created_by: f.created_by };
                DialectError { file: file.to_owned(), line, column: None, kind }
            })
            .collect())
    }

    /// Whether the dialect defines statement `name` (optional ones, and
    /// those of features it lacks, may be absent).
    pub fn has_statement(&self, name: &str) -> bool {
        self.statements.contains_key(name)
    }

    /// The statement `name` as the scenario's schema needs it: its
    /// `legacy_` text on the legacy table, where the contract has one.
    /// Panics when the dialect lacks it: use [`Dialect::find`] for a
    /// statement of a feature or an optional one.
    pub fn statement(&self, name: &str, schema: Schema) -> &Statement {
        self.find(name, schema).expect("every required statement of the contract is loaded")
    }

    /// [`Dialect::statement`], or `None` when the dialect does not define it.
    pub fn find(&self, name: &str, schema: Schema) -> Option<&Statement> {
        let spec = contract::spec(name)?;
        let key = match schema {
            Schema::Legacy if spec.has_legacy => format!("legacy_{name}"),
            _ => name.to_owned(),
        };
        self.statements.get(&key)
    }

    /// Every statement, by name.
    pub fn statements(&self) -> impl Iterator<Item = &Statement> {
        self.statements.values()
    }

    /// A copy with one statement's SQL replaced (for mutation testing).
    pub fn with_sql(&self, name: &str, sql: String) -> Dialect {
        let mut copy = self.clone();
        if let Some(s) = copy.statements.get_mut(name) {
            *s = Statement::new(std::mem::take(&mut s.name), std::mem::take(&mut s.origin), sql);
        }
        copy
    }
}

/// The checks one statement passes on its own.
fn check(block: &text::NamedBlock) -> Result<(), DialectErrorKind> {
    let spec = contract::spec(&block.name).ok_or_else(|| DialectErrorKind::Unknown(block.name.clone()))?;
    if text::is_blank(&block.sql) {
        return if spec.may_be_blank { Ok(()) } else { Err(DialectErrorKind::Blank(block.name.clone())) };
    }
    if spec.shape != Shape::Script && text::commands(&block.sql).len() > 1 {
        return Err(DialectErrorKind::SeveralCommands(block.name.clone()));
    }
    for param in text::parameters(&block.sql) {
        if !spec.params.contains(&param.as_str()) {
            let supplied = if spec.params.is_empty() {
                "no parameters".to_owned()
            } else {
                spec.params.iter().map(|p| format!(":{p}")).collect::<Vec<_>>().join(", ")
            };
            return Err(DialectErrorKind::UnboundParameter { name: block.name.clone(), param, supplied });
        }
    }
    Ok(())
}

/// How `file` of dialect `name` is named in messages and traces: its path
/// relative to the current folder when below it, else absolute
/// ([`crate::input_file::shown_path`], as scenario files are shown), or
/// `builtin:<dialect>/<file>` for SQL built into reapcheck (`reapcheck init
/// --from <dialect>` writes a copy to read).
pub fn shown_file(source: &Source, name: &str, file: &str) -> String {
    match source {
        Source::Embedded => format!("builtin:{name}/{file}"),
        Source::Folder(root) => crate::input_file::shown_path(&root.join(name).join(file)),
    }
}

/// The `.sql` files of dialect `name`, sorted, as (file name, text).
fn read_files(source: &Source, name: &str) -> Result<Vec<(String, String)>, DialectError> {
    let not_found = |known: Vec<String>| DialectError {
        file: name.to_owned(),
        line: None,
        column: None,
        kind: DialectErrorKind::NotFound { name: name.to_owned(), known: known.join(", ") },
    };
    let mut files = match source {
        Source::Embedded => {
            let dir = EMBEDDED.get_dir(name).ok_or_else(|| not_found(dialect_names(source)))?;
            dir.files()
                .filter(|f| f.path().extension().is_some_and(|e| e == "sql"))
                .map(|f| {
                    let file = f.path().file_name().expect("files have names").to_string_lossy().into_owned();
                    (file, f.contents_utf8().unwrap_or_default().to_owned())
                })
                .collect::<Vec<_>>()
        }
        Source::Folder(root) => {
            let dir = root.join(name);
            if !dir.is_dir() {
                return Err(not_found(dialect_names(source)));
            }
            let read_error = |path: &Path, e: std::io::Error| DialectError {
                file: path.display().to_string(),
                line: None,
                column: None,
                kind: DialectErrorKind::Read(e.to_string()),
            };
            let mut files = Vec::new();
            for entry in std::fs::read_dir(&dir).map_err(|e| read_error(&dir, e))? {
                let path = entry.map_err(|e| read_error(&dir, e))?.path();
                if path.extension().is_some_and(|e| e == "sql") {
                    // Regular files of at most 8 MiB only: a FIFO must not hang `check`.
                    let content = crate::input_file::read_string(&path).map_err(|e| DialectError {
                        file: path.display().to_string(),
                        line: None,
                        column: None,
                        kind: DialectErrorKind::Read(e.to_string()),
                    })?;
                    files.push((path.file_name().expect("has a name").to_string_lossy().into_owned(), content));
                }
            }
            files
        }
    };
    files.sort();
    Ok(files)
}

/// The text of `file`, a file other than SQL in dialect `name`'s folder
/// (such as its equivalent-mutant declarations); `None` when absent.
pub fn read_extra(source: &Source, name: &str, file: &str) -> Result<Option<String>, DialectError> {
    match source {
        Source::Embedded => {
            Ok(EMBEDDED.get_file(format!("{name}/{file}")).map(|f| f.contents_utf8().unwrap_or_default().to_owned()))
        }
        Source::Folder(root) => {
            let path = root.join(name).join(file);
            // Absent is `None`; a folder, FIFO or device of that name is
            // refused (read_string), never silently taken for absent.
            if std::fs::metadata(&path).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound) {
                return Ok(None);
            }
            crate::input_file::read_string(&path).map(Some).map_err(|e| DialectError {
                file: path.display().to_string(),
                line: None,
                column: None,
                kind: DialectErrorKind::Read(e.to_string()),
            })
        }
    }
}

/// Every file of the embedded dialect `name` (its SQL, `dialect.toml`,
/// declarations), as (file name, contents), sorted; empty for an unknown
/// name. `reapcheck init --from` copies these.
pub fn embedded_files(name: &str) -> Vec<(String, &'static [u8])> {
    let mut files: Vec<(String, &'static [u8])> = EMBEDDED
        .get_dir(name)
        .into_iter()
        .flat_map(|d| d.files())
        .map(|f| (f.path().file_name().expect("files have names").to_string_lossy().into_owned(), f.contents()))
        .collect();
    files.sort();
    files
}

/// The dialect folders present in `source`, sorted.
pub fn dialect_names(source: &Source) -> Vec<String> {
    let mut names: Vec<String> = match source {
        Source::Embedded => EMBEDDED.dirs().map(|d| d.path().to_string_lossy().into_owned()).collect(),
        Source::Folder(root) => std::fs::read_dir(root)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.path().is_dir())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect(),
    };
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A folder holding a copy of the embedded `sqlite` dialect, its
    /// `reaper.sql` passed through `edit`; removed when dropped.
    struct Copy(PathBuf);

    impl Copy {
        fn new(tag: &str, edit: impl Fn(&str) -> String) -> Copy {
            let root = std::env::temp_dir().join(format!("reapcheck-provenance-{tag}-{}", std::process::id()));
            let dir = root.join("sqlite");
            std::fs::create_dir_all(&dir).unwrap();
            for (file, text) in read_files(&Source::Embedded, "sqlite").unwrap() {
                let text = if file == "reaper.sql" { edit(&text) } else { text };
                std::fs::write(dir.join(file), text).unwrap();
            }
            Copy(root)
        }
    }

    impl Drop for Copy {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn a_statement_s_derived_forms_follow_its_sql_through_with_sql() {
        let dialect = Dialect::load(&Source::Embedded, "sqlite").expect("loads");
        let scan = dialect.find("reap_scan", Schema::Standard).expect("defined");
        assert_eq!(
            scan.prepared(text::Placeholders::Question),
            &text::prepare(&scan.sql, text::Placeholders::Question)
        );
        assert_eq!(scan.parameters(), text::parameters(&scan.sql).as_slice());
        assert!(dialect.find("insert_job", Schema::Standard).expect("defined").values_shape().is_some());
        let mutant = dialect.with_sql("reap_scan", "SELECT id FROM jobs WHERE queue = :queue".to_owned());
        let scan = mutant.find("reap_scan", Schema::Standard).expect("kept");
        assert_eq!(scan.prepared(text::Placeholders::Dollar).sql, "SELECT id FROM jobs WHERE queue = $1");
        assert_eq!(scan.parameters(), ["queue"]);
        assert!(scan.values_shape().is_none());
    }

    #[test]
    fn a_dialect_says_where_its_sql_came_from_and_hashes_what_it_read() {
        let builtin = Dialect::load(&Source::Embedded, "sqlite").unwrap();
        assert_eq!(builtin.provenance.source, "builtin");
        assert!(builtin.provenance.hash.starts_with("sha256:") && builtin.provenance.hash.len() == 71);
        let same = Copy::new("same", str::to_owned);
        let copied = Dialect::load(&Source::Folder(same.0.clone()), "sqlite").unwrap();
        assert_eq!(copied.provenance.source, same.0.join("sqlite").display().to_string());
        assert_eq!(copied.provenance.hash, builtin.provenance.hash, "the same files hash the same wherever they are");
        // One comment more: the same statements, but not the same files.
        let edited = Copy::new("edited", |t| format!("-- ported by us\n{t}"));
        let edited = Dialect::load(&Source::Folder(edited.0.clone()), "sqlite").unwrap();
        assert_ne!(edited.provenance.hash, builtin.provenance.hash);
        let shown = builtin.provenance.to_string();
        assert_eq!(shown, format!("builtin sha256:{}", &builtin.provenance.hash[7..19]));
    }

    #[test]
    fn an_origin_names_the_first_line_of_sql_in_a_path_that_opens() {
        // worker.sql: `-- name: claim` on line 4, a comment on 5, `UPDATE` on 6.
        let builtin = Dialect::load(&Source::Embedded, "sqlite").unwrap();
        assert_eq!(
            builtin.find("claim", crate::scenario::Schema::Standard).unwrap().origin,
            "builtin:sqlite/worker.sql:6"
        );
        // A blank statement (comments only) is named at its marker.
        let blank = builtin.find("create_namespace", crate::scenario::Schema::Standard).unwrap();
        assert_eq!(blank.origin, "builtin:sqlite/schema.sql:11");
        // A folder's files are shown as scenario files are: absolute here,
        // since the copy is not below the test's current folder.
        let copy = Copy::new("origin", str::to_owned);
        let copied = Dialect::load(&Source::Folder(copy.0.clone()), "sqlite").unwrap();
        let claim = &copied.find("claim", crate::scenario::Schema::Standard).unwrap().origin;
        assert_eq!(claim, &format!("{}:6", copy.0.join("sqlite").join("worker.sql").display()));
    }

    #[cfg(unix)]
    #[test]
    fn a_dialect_toml_that_is_a_folder_or_a_fifo_is_refused_not_ignored() {
        let made = Copy::new("profile-kind", str::to_owned);
        let profile = made.0.join("sqlite").join(profile::FILE_NAME);
        let source = Source::Folder(made.0.clone());
        assert!(Dialect::load(&source, "sqlite").is_ok(), "absent: the default profile");
        std::fs::create_dir(&profile).unwrap();
        let errors = Dialect::load(&source, "sqlite").unwrap_err();
        let shown = errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n");
        assert!(shown.contains("dialect.toml") && shown.contains("not a regular file"), "{shown}");
        std::fs::remove_dir(&profile).unwrap();
        assert!(std::process::Command::new("mkfifo").arg(&profile).status().unwrap().success());
        let errors = Dialect::load(&source, "sqlite").unwrap_err();
        assert!(errors.iter().any(|e| e.to_string().contains("not a regular file")), "{errors:?}");
    }
}
