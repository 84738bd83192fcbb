//! The GitHub workflows: this project's matrix (`.github/workflows/`, with
//! its composite action `.github/actions/leg`), its release
//! (`.github/workflows/release.yml`) and the users' template
//! `ci/github-actions.yml` (what `reapcheck init` writes). None runs on
//! this machine, so what would break their first real run is checked here,
//! by reading them and running their scripts with stand-in commands: SQL
//! Server URLs that trust the container's self-signed certificate,
//! equivalence declarations that resolve on every dialect a workflow
//! mutates, SQL Server 2019 on an Ubuntu 22.04 host, uploads that a re-run
//! can repeat, step summaries, the merged matrix kept, a template that
//! installs without repository variables (a fork's pull request), the
//! release's targets, permissions, archives and checksums, cargo binstall's
//! names for them, and the template's verified download of them.

mod common;
use common::Scratch;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use reapcheck::target::Target;
use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().expect("the workspace exists")
}

/// The users' template, relative to the root.
const TEMPLATE: &str = "ci/github-actions.yml";

/// This project's matrix, relative to the root.
const MATRIX: &str = ".github/workflows/matrix.yml";

/// Every file below `dir` (relative to the root), recursively.
fn files_below(dir: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![root().join(dir)];
    while let Some(d) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries {
            let path = e.unwrap().path();
            if path.is_dir() { todo.push(path) } else { out.push(path) }
        }
    }
    out.sort();
    out
}

/// The workflows: every `.github/workflows/*.yml` and the template.
fn workflows() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = files_below(".github/workflows")
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "yml" || e == "yaml"))
        .collect();
    out.push(root().join(TEMPLATE));
    out
}

fn yaml(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: not YAML: {e}", path.display()))
}

fn shown(path: &Path) -> String {
    path.strip_prefix(root()).unwrap_or(path).display().to_string()
}

/// `${{ NAME }}` (any spacing) in `text` replaced by `values[NAME]`.
fn substitute(text: &str, values: &BTreeMap<String, String>) -> String {
    let mut out = text.to_owned();
    for (name, value) in values {
        for pattern in [format!("${{{{ {name} }}}}"), format!("${{{{{name}}}}}")] {
            out = out.replace(&pattern, value);
        }
    }
    out
}

/// The value of a YAML scalar as the runner reads it (text, number, bool).
fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// One combination of a job's matrix as `matrix.<key>` -> value (one
/// empty combination for a job without a matrix; only `include` lists are
/// expanded, the form these workflows use).
fn combinations(job: &Value) -> Vec<BTreeMap<String, String>> {
    let Some(matrix) = job.pointer("/strategy/matrix") else { return vec![BTreeMap::new()] };
    let include = matrix.get("include").and_then(Value::as_array).expect("a matrix is an include list here");
    assert!(
        matrix.as_object().unwrap().keys().all(|k| k == "include"),
        "a matrix with more than `include` is not expanded by this test: {matrix}"
    );
    include
        .iter()
        .map(|entry| {
            entry
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (format!("matrix.{k}"), scalar(v).expect("a scalar matrix value")))
                .collect()
        })
        .collect()
}

/// A job's steps for one matrix combination, with `${{ matrix.* }}`
/// substituted, and a local composite action (`uses: ./...`) replaced by
/// its own steps with `${{ inputs.* }}` substituted from the step's `with`.
fn expanded_steps(job: &Value, matrix: &BTreeMap<String, String>) -> Vec<Value> {
    let text = substitute(&job["steps"].to_string(), &json_escaped(matrix));
    let steps: Vec<Value> = serde_json::from_str(&text).unwrap();
    let mut out = Vec::new();
    for step in steps {
        match step.get("uses").and_then(Value::as_str) {
            Some(local) if local.starts_with("./") => {
                let action = yaml(&root().join(local).join("action.yml"));
                let inputs: BTreeMap<String, String> = step
                    .get("with")
                    .and_then(Value::as_object)
                    .map(|w| w.iter().map(|(k, v)| (format!("inputs.{k}"), scalar(v).unwrap())).collect())
                    .unwrap_or_default();
                let text = substitute(&action["runs"]["steps"].to_string(), &json_escaped(&inputs));
                out.extend(serde_json::from_str::<Vec<Value>>(&text).unwrap());
            }
            _ => out.push(step),
        }
    }
    out
}

/// `values` escaped for substitution inside JSON text.
fn json_escaped(values: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    values
        .iter()
        .map(|(k, v)| {
            let quoted = serde_json::to_string(v).unwrap();
            (k.clone(), quoted[1..quoted.len() - 1].to_owned())
        })
        .collect()
}

fn jobs(workflow: &Value) -> Vec<(&String, &Value)> {
    workflow["jobs"].as_object().expect("jobs").iter().collect()
}

fn run_of(step: &Value) -> &str {
    step.get("run").and_then(Value::as_str).unwrap_or("")
}

fn uses_of(step: &Value) -> &str {
    step.get("uses").and_then(Value::as_str).unwrap_or("")
}

/// Whether a step's `if` lets it run after an earlier step failed.
fn runs_after_a_failure(step: &Value) -> bool {
    let condition = step.get("if").and_then(Value::as_str).unwrap_or("");
    ["always()", "failure()", "!cancelled()"].iter().any(|c| condition.contains(c))
}

/// The argument after `flag` in a shell command line, unquoted.
fn argument<'a>(line: &'a str, flag: &str) -> Option<&'a str> {
    let mut words = line.split_whitespace();
    words.find(|w| *w == flag)?;
    words.next().map(|w| w.trim_matches(|c| c == '"' || c == '\''))
}

// ---------------------------------------------------------------------------
// SQL Server URLs

/// Why a SQL Server URL would fail against a container's self-signed
/// certificate, or `None` when it names the certificate to trust (or any).
fn untrusting(url: &str) -> Option<String> {
    let parsed = match url::Url::parse(url) {
        Ok(u) => u,
        Err(e) => return Some(format!("not a URL ({e})")),
    };
    let trusts = parsed.query_pairs().any(|(k, v)| match k.to_ascii_lowercase().as_str() {
        "trustservercertificate" => ["true", "yes"].contains(&v.to_ascii_lowercase().as_str()),
        "trustservercertificateca" => !v.is_empty(),
        _ => false,
    });
    (!trusts).then(|| "no trustServerCertificate=true nor trustServerCertificateCA=<file>".to_owned())
}

/// Every `mssql://` URL in `text`, with its line number.
fn mssql_urls(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let mut rest = line;
        while let Some(at) = rest.find("mssql://") {
            let url: String =
                rest[at..].chars().take_while(|c| !c.is_whitespace() && !"\"'`<>)]".contains(*c)).collect();
            rest = &rest[at + url.len()..];
            out.push((n + 1, url));
        }
    }
    out
}

#[test]
fn url_check_accepts_only_urls_that_trust_the_certificate() {
    assert!(untrusting("mssql://sa:pw@127.0.0.1:1433/master").is_some());
    assert!(untrusting("mssql://sa:pw@h/master?encrypt=true&trustServerCertificate=false").is_some());
    assert!(untrusting("mssql://sa:pw@h/master?trustServerCertificate=true").is_none());
    assert!(untrusting("mssql://sa:pw@h/master?TrustServerCertificate=yes").is_none());
    assert!(untrusting("mssql://sa:pw@h/master?trustServerCertificateCA=/etc/ssl/ca.pem").is_none());
    assert_eq!(
        mssql_urls("A: mssql://sa:x@h:1/m?trustServerCertificate=true\n  \"mssql://u:p@h/db\" and `mssql://a:b@c`"),
        vec![
            (1, "mssql://sa:x@h:1/m?trustServerCertificate=true".to_owned()),
            (2, "mssql://u:p@h/db".to_owned()),
            (2, "mssql://a:b@c".to_owned()),
        ]
    );
}

/// tiberius (with rustls) checks the server's certificate against the
/// system roots unless the URL says otherwise, and a SQL Server container's
/// certificate is self-signed: such a URL fails with `UnknownIssuer` before
/// any SQL runs.
#[test]
fn every_sql_server_url_in_the_workflows_trusts_the_containers_certificate() {
    let mut seen = 0;
    let mut bad = Vec::new();
    for path in files_below(".github").into_iter().chain(files_below("ci")) {
        let Ok(text) = std::fs::read_to_string(&path) else { continue };
        for (line, url) in mssql_urls(&text) {
            seen += 1;
            if let Some(why) = untrusting(&url) {
                bad.push(format!("{}:{line}: {url}: {why}", shown(&path)));
            }
        }
    }
    assert!(seen >= 2, "the matrix and the template each give a SQL Server URL; found {seen}");
    assert!(bad.is_empty(), "SQL Server URLs that refuse a self-signed certificate:\n{}", bad.join("\n"));
}

// ---------------------------------------------------------------------------
// Equivalent mutants of the dialects a workflow mutates

/// Every target a workflow runs `reapcheck mutate` on, with where.
fn mutated_targets() -> BTreeMap<Target, BTreeSet<String>> {
    let mut out: BTreeMap<Target, BTreeSet<String>> = BTreeMap::new();
    for path in workflows() {
        let workflow = yaml(&path);
        for (name, job) in jobs(&workflow) {
            for matrix in combinations(job) {
                for step in expanded_steps(job, &matrix) {
                    for line in run_of(&step).lines().filter(|l| l.contains("reapcheck mutate")) {
                        let db = argument(line, "--db").unwrap_or("sqlite");
                        assert!(!db.contains("${{"), "{}: job {name}: unresolved `--db {db}`", shown(&path));
                        let targets: Vec<Target> = if db == "all" {
                            Target::ALL.to_vec()
                        } else {
                            db.split(',')
                                .map(|t| Target::from_name(t).unwrap_or_else(|| panic!("unknown target `{t}`")))
                                .collect()
                        };
                        for t in targets {
                            out.entry(t).or_default().insert(format!("{} ({name})", shown(&path)));
                        }
                    }
                }
            }
        }
    }
    out
}

#[derive(serde::Deserialize)]
struct Declaration {
    mutant: String,
    statement: String,
}

/// `mutate --db <target> --list` on the dialects on disk: (hash, id) pairs.
fn listed_mutants(target: Target) -> BTreeSet<(String, String)> {
    let o = Command::new(env!("CARGO_BIN_EXE_reapcheck"))
        .current_dir(root())
        .args(["mutate", "--db", target.name(), "--list", "--dialects"])
        .arg(root().join("dialects"))
        .env_remove("REAPCHECK_DIALECTS")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "mutate --db {target} --list: {out}{}", String::from_utf8_lossy(&o.stderr));
    out.lines()
        .map(|l| {
            let cols: Vec<&str> = l.splitn(5, '\t').collect();
            assert_eq!(cols.len(), 5, "a --list line: {l}");
            let id = cols[4].strip_suffix(" (declared equivalent)").unwrap_or(cols[4]);
            (cols[1].to_owned(), id.to_owned())
        })
        .collect()
}

/// A workflow leg that runs `mutate` fails with exit 2 on a stale or
/// unknown declaration, and fails on every equivalent mutant left
/// undeclared (the dialects with equivalent mutants have a file): each
/// dialect a workflow mutates has `equivalent-mutants.yaml`, and each of
/// its declarations names a mutant `--list` generates, by id and by its
/// statement's hash, on every target that runs that dialect.
#[test]
fn every_dialect_a_workflow_mutates_has_equivalence_declarations_that_resolve() {
    let targets = mutated_targets();
    assert!(targets.contains_key(&Target::Sqlite), "the matrix mutates sqlite at least: {targets:?}");
    let mut problems = Vec::new();
    let mut checked = BTreeMap::new();
    for (target, wheres) in &targets {
        let dialect = target.dialect();
        let file = root().join("dialects").join(dialect).join("equivalent-mutants.yaml");
        let Ok(text) = std::fs::read_to_string(&file) else {
            problems.push(format!("dialects/{dialect}/equivalent-mutants.yaml is missing (mutated by {wheres:?})"));
            continue;
        };
        let declared: Vec<Declaration> =
            serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("dialects/{dialect}/equivalent-mutants.yaml: {e}"));
        let listed = listed_mutants(*target);
        for d in &declared {
            if !listed.contains(&(d.statement.clone(), d.mutant.clone())) {
                let why =
                    if listed.iter().any(|(_, id)| *id == d.mutant) { "another statement hash" } else { "no such id" };
                problems.push(format!(
                    "dialects/{dialect}/equivalent-mutants.yaml: `{}` ({}) on {target}: {why}",
                    d.mutant, d.statement
                ));
            }
        }
        checked.insert(target.name(), declared.len());
    }
    println!("checked declarations per mutated target: {checked:?}");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

// ---------------------------------------------------------------------------
// Runners, uploads, summaries, the merged matrix

/// Every job and matrix combination whose images (services or `docker run`
/// lines) include SQL Server 2019, with the host it runs on.
fn sql_server_2019_hosts() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for path in workflows() {
        let workflow = yaml(&path);
        for (name, job) in jobs(&workflow) {
            for matrix in combinations(job) {
                // The job without its matrix (which lists every combination's image).
                let mut job = job.clone();
                job.as_object_mut().unwrap().remove("strategy");
                let job_text = substitute(&job.to_string(), &json_escaped(&matrix));
                if !job_text.contains("mssql/server:2019") {
                    continue;
                }
                let job: Value = serde_json::from_str(&job_text).unwrap();
                let host = scalar(&job["runs-on"]).unwrap_or_default();
                out.push((format!("{} job {name} {matrix:?}", shown(&path)), host));
            }
        }
    }
    out
}

/// SQL Server 2019's images abort at start on Ubuntu 24.04 hosts (what
/// `ubuntu-latest` is): every job that starts one runs on ubuntu-22.04.
#[test]
fn sql_server_2019_runs_on_ubuntu_22_04() {
    let hosts = sql_server_2019_hosts();
    assert!(!hosts.is_empty(), "the matrix has a SQL Server 2019 leg");
    for (job, host) in hosts {
        assert_eq!(host, "ubuntu-22.04", "{job}");
    }
}

/// Every rust-cache step shares one key across legs (`shared-key`), and
/// the SQL Server 2019 leg runs on an older Ubuntu than the others: build
/// scripts and C objects from 24.04 would not run on 22.04's glibc, so the
/// runner image (`ImageOS`, written to the environment by the step before)
/// must be part of the key.
#[test]
fn the_build_cache_is_keyed_by_the_runner_image() {
    let mut caches = 0;
    let action = yaml(&root().join(".github/actions/leg/action.yml"));
    let leg_steps = action.pointer("/runs/steps").and_then(Value::as_array).expect("steps").clone();
    let workflow = yaml(&root().join(MATRIX));
    let mut all: Vec<(String, Vec<Value>)> = vec![(".github/actions/leg".to_owned(), leg_steps)];
    for (name, job) in jobs(&workflow) {
        all.push((format!("{MATRIX}: job {name}"), job["steps"].as_array().cloned().unwrap_or_default()));
    }
    for (place, steps) in all {
        for (i, step) in steps.iter().enumerate() {
            if !uses_of(step).starts_with("Swatinem/rust-cache@") {
                continue;
            }
            caches += 1;
            assert_eq!(
                step.pointer("/with/key").and_then(Value::as_str),
                Some("${{ env.REAPCHECK_IMAGE_OS }}"),
                "{place}"
            );
            let before = steps[..i].iter().any(|s| run_of(s).contains("REAPCHECK_IMAGE_OS=${ImageOS"));
            assert!(before, "{place}: a step before the cache writes REAPCHECK_IMAGE_OS from ImageOS");
        }
    }
    assert!(caches >= 2, "the leg action and the verdict job cache the build; found {caches}");
}

/// upload-artifact v4 refuses a name already used in the workflow run, and
/// re-running a job is the same run: without `overwrite: true` the re-run
/// of a failed leg fails at its upload; the leg action,
/// `.github/actions/leg/action.yml`, is read too.
#[test]
fn every_upload_can_be_repeated_by_a_re_run() {
    let mut uploads = 0;
    for file in [MATRIX, TEMPLATE, RELEASE] {
        let workflow = yaml(&root().join(file));
        for (name, job) in jobs(&workflow) {
            for step in job["steps"].as_array().unwrap() {
                if uses_of(step).starts_with("actions/upload-artifact@") {
                    uploads += 1;
                    assert_eq!(step.pointer("/with/overwrite"), Some(&Value::Bool(true)), "{file}: job {name}: {step}");
                }
            }
        }
    }
    assert!(uploads >= 7, "template: binary, four reports, matrix; release: archives; found {uploads}");
    // The composite action every leg of the matrix runs uploads its reports.
    let action = yaml(&root().join(".github/actions/leg/action.yml"));
    let steps = action.pointer("/runs/steps").and_then(Value::as_array).expect("a composite action's steps");
    let leg_uploads: Vec<&Value> =
        steps.iter().filter(|s| uses_of(s).starts_with("actions/upload-artifact@")).collect();
    assert!(!leg_uploads.is_empty(), "the leg action uploads its reports");
    for step in leg_uploads {
        assert_eq!(step.pointer("/with/overwrite"), Some(&Value::Bool(true)), ".github/actions/leg: {step}");
    }
}

/// The folder after `--report` (or `--out`) of a `reapcheck run` (or
/// `verdict`) line in `steps`, and the index of that step.
fn written_folder(steps: &[Value], command: &str, flag: &str) -> Option<(usize, String)> {
    steps.iter().enumerate().find_map(|(i, s)| {
        let line = run_of(s).lines().find(|l| l.contains(command))?;
        Some((i, argument(line, flag)?.trim_end_matches('/').to_owned()))
    })
}

/// Whether a step after `after` appends `file` to the job page, also after
/// a failure.
fn appends_to_summary(steps: &[Value], after: usize, file: &str) -> bool {
    steps[after + 1..].iter().any(|s| {
        let run = run_of(s);
        run.contains(file) && run.contains(">> \"$GITHUB_STEP_SUMMARY\"") && runs_after_a_failure(s)
    })
}

/// Each leg's `summary.md` (totals, then each failure with its rerun line)
/// and the verdict's `matrix.md` go on the job page, also when the leg or
/// the verdict failed, as the matrix does.
#[test]
fn every_leg_and_verdict_writes_its_markdown_to_the_job_page() {
    for file in [MATRIX, TEMPLATE] {
        let workflow = yaml(&root().join(file));
        let (mut legs, mut verdicts) = (0, 0);
        for (name, job) in jobs(&workflow) {
            for matrix in combinations(job) {
                let steps = expanded_steps(job, &matrix);
                if let Some((i, dir)) = written_folder(&steps, "reapcheck run", "--report") {
                    legs += 1;
                    let summary = format!("{dir}/summary.md");
                    assert!(appends_to_summary(&steps, i, &summary), "{file}: job {name} does not show {summary}");
                }
                if let Some((i, dir)) = written_folder(&steps, "reapcheck verdict", "--out") {
                    verdicts += 1;
                    let summary = format!("{dir}/matrix.md");
                    assert!(appends_to_summary(&steps, i, &summary), "{file}: job {name} does not show {summary}");
                }
            }
        }
        assert!(legs >= 4, "{file}: {legs} legs");
        assert_eq!(verdicts, 1, "{file}: one verdict job writing its matrix with --out");
    }
}

/// The merged matrix (matrix.html, .md, .json) is kept as an artifact, also
/// when the verdict failed (then it is what explains the failure).
#[test]
fn the_verdicts_merged_matrix_is_uploaded_even_when_it_failed() {
    for file in [MATRIX, TEMPLATE] {
        let workflow = yaml(&root().join(file));
        let verdict = jobs(&workflow)
            .into_iter()
            .find_map(|(_, job)| {
                let steps = job["steps"].as_array()?.clone();
                written_folder(&steps, "reapcheck verdict", "--out").map(|(i, dir)| (steps, i, dir))
            })
            .unwrap_or_else(|| panic!("{file}: no `reapcheck verdict --out` step"));
        let (steps, i, dir) = verdict;
        let uploaded = steps[i + 1..].iter().any(|s| {
            uses_of(s).starts_with("actions/upload-artifact@")
                && runs_after_a_failure(s)
                && s.pointer("/with/path").and_then(Value::as_str).map(|p| p.trim_end_matches('/')) == Some(&dir)
        });
        assert!(uploaded, "{file}: the verdict's {dir}/ is not uploaded after a failure");
    }
}

// ---------------------------------------------------------------------------
// The template installs reapcheck without repository variables

/// The value `${{ vars.NAME || 'default' }}` takes without repository
/// variables (a fork's pull request): `None` when the expression is not of
/// that form (a bare `${{ vars.NAME }}` is empty there).
fn without_variables(expression: &str) -> Option<String> {
    let inner = expression.trim().strip_prefix("${{")?.strip_suffix("}}")?.trim();
    let (var, default) = inner.split_once("||")?;
    var.trim().strip_prefix("vars.")?;
    let default = default.trim();
    Some(default.strip_prefix('\'')?.strip_suffix('\'')?.to_owned())
}

#[test]
fn a_variable_default_is_read_as_the_runner_would() {
    assert_eq!(without_variables("${{ vars.REAPCHECK_GIT || '' }}"), Some(String::new()));
    assert_eq!(without_variables("${{ vars.X || 'v1.2' }}"), Some("v1.2".to_owned()));
    assert_eq!(without_variables("${{ vars.REAPCHECK_GIT }}"), None);
}

/// What the install job's script did: its exit code, its output, the
/// arguments it gave `cargo` (none when it did not call it), the URLs it
/// gave `curl`, and what `reapcheck --version` says of the binary left in
/// `~/.cargo/bin` (none when there is none).
struct Install {
    code: Option<i32>,
    out: String,
    cargo: Option<String>,
    curl: Vec<String>,
    installed: Option<String>,
}

/// Runs the template's install step, as the runner would without
/// repository variables, with `git` and `rev` as the workflow's env gives
/// them, the cache's `cache-hit` output, and a binary restored by the
/// cache's restore-keys or not, on a Linux x64 runner where no release
/// archive exists. `cargo` and `curl` are stand-ins that record their
/// arguments.
fn install(git: &str, rev: &str, cache_hit: &str, restored: bool) -> Install {
    install_on(git, rev, cache_hit, restored, ("Linux", "X64"), None)
}

/// [`install`] on a runner of `platform` (`RUNNER_OS`, `RUNNER_ARCH`), with
/// the stand-in `curl` serving the files of `served` by their name (any
/// URL whose last segment names one; a 404 otherwise, as `curl -f` fails).
fn install_on(
    git: &str,
    rev: &str,
    cache_hit: &str,
    restored: bool,
    platform: (&str, &str),
    served: Option<&Path>,
) -> Install {
    let workflow = yaml(&root().join(TEMPLATE));
    let steps = workflow["jobs"]["install"]["steps"].as_array().expect("an install job");
    let step = steps.iter().find(|s| run_of(s).contains("cargo install")).expect("an install step");
    assert!(
        step.get("if").is_none(),
        "the install step must decide itself (a restored binary has cache-hit false): {step}"
    );
    let mut env = BTreeMap::new();
    if let Some(e) = step.get("env").and_then(Value::as_object) {
        for (k, v) in e {
            let v = v.as_str().unwrap();
            let value = if v.contains("steps.cache.outputs.cache-hit") { cache_hit.to_owned() } else { v.to_owned() };
            env.insert(k.clone(), value);
        }
    }
    let scratch = Scratch::new("workflows", "install");
    let dir = &scratch.0;
    let home = dir.join("home");
    let fake = dir.join("fake");
    std::fs::create_dir_all(home.join(".cargo/bin")).unwrap();
    std::fs::create_dir_all(&fake).unwrap();
    let record = dir.join("cargo-args");
    let cargo = format!("#!/bin/sh\necho \"$@\" > '{}'\n", record.display());
    write_executable(&fake.join("cargo"), &cargo);
    let urls = dir.join("curl-urls");
    let empty = dir.join("nothing-served");
    std::fs::create_dir_all(&empty).unwrap();
    write_executable(&fake.join("curl"), &fake_curl(served.unwrap_or(&empty), &urls));
    let bin = home.join(".cargo/bin/reapcheck");
    if restored {
        write_executable(&bin, "#!/bin/sh\necho 'reapcheck 0.0.1'\n");
    }
    let o = Command::new("bash")
        .args(["--noprofile", "--norc", "-e", "-o", "pipefail", "-c", run_of(step)])
        .current_dir(dir)
        .env_clear()
        .env("PATH", format!("{}:/usr/bin:/bin", fake.display()))
        .env("HOME", &home)
        .env("RUNNER_OS", platform.0)
        .env("RUNNER_ARCH", platform.1)
        .env("REAPCHECK_GIT", git)
        .env("REAPCHECK_REF", rev)
        .envs(&env)
        .output()
        .unwrap();
    let installed = bin.exists().then(|| {
        let o = Command::new(&bin).arg("--version").output().unwrap();
        String::from_utf8_lossy(&o.stdout).trim().to_owned()
    });
    Install {
        code: o.status.code(),
        out: format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr)),
        cargo: std::fs::read_to_string(&record).ok().map(|s| s.trim().to_owned()),
        curl: std::fs::read_to_string(&urls).map(|s| s.lines().map(str::to_owned).collect()).unwrap_or_default(),
        installed,
    }
}

/// A stand-in `curl` (`curl [flags] -o FILE URL`): writes the file of
/// `served` named by the URL's last segment to FILE, else fails as
/// `curl -f` does on a 404; records each URL in `record`.
fn fake_curl(served: &Path, record: &Path) -> String {
    format!(
        r#"#!/bin/sh
out=; url=
while [ $# -gt 0 ]; do
  case "$1" in
    -o) out=$2; shift ;;
    -*) ;;
    *) url=$1 ;;
  esac
  shift
done
echo "$url" >> '{record}'
file='{served}'/"${{url##*/}}"
if [ -f "$file" ]; then cp "$file" "$out"; else echo "curl: (22) The requested URL returned error: 404" >&2; exit 22; fi
"#,
        record = record.display(),
        served = served.display()
    )
}

fn write_executable(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// On a pull request from a fork, repository variables are empty: the
/// template's install must not depend on them alone. Its env has a default
/// after `||` (the values a user writes in the file), the cache restores
/// the default branch's binary by prefix when the key misses, and the
/// install step uses that binary with a warning, or fails with one
/// `::error::` line that says what to write where.
#[test]
fn the_template_installs_without_repository_variables() {
    let workflow = yaml(&root().join(TEMPLATE));
    let mut defaults = BTreeMap::new();
    for name in ["REAPCHECK_GIT", "REAPCHECK_REF"] {
        let expression = workflow["env"][name].as_str().unwrap_or_else(|| panic!("env.{name}"));
        let default = without_variables(expression)
            .unwrap_or_else(|| panic!("env.{name} is `{expression}`: empty on a fork's pull request, give `|| '...'`"));
        defaults.insert(name, default);
    }
    let cache = workflow["jobs"]["install"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| uses_of(s).starts_with("actions/cache@"))
        .expect("the install job caches the binary");
    let key = cache.pointer("/with/key").and_then(Value::as_str).unwrap();
    assert!(!key.contains("vars."), "the cache key must follow the values in use (env), not the variables: {key}");
    let restore = cache.pointer("/with/restore-keys").and_then(Value::as_str).expect("restore-keys");
    assert!(key.starts_with(restore.trim()), "restore-keys `{restore}` is a prefix of the key `{key}`");

    let (git, rev) = (&defaults["REAPCHECK_GIT"], &defaults["REAPCHECK_REF"]);
    // A fork's pull request, the default branch having cached a binary.
    let fork = install(git, rev, "false", true);
    if git.is_empty() || rev.is_empty() {
        assert_eq!(fork.code, Some(0), "a restored binary is used: {}", fork.out);
        assert!(fork.out.contains("::warning::") && fork.out.contains("reapcheck 0.0.1"), "{}", fork.out);
        assert_eq!(fork.cargo, None);
        // Nothing cached either: one clear error naming what to set, where.
        let none = install(git, rev, "", false);
        assert_eq!(none.code, Some(1), "{}", none.out);
        let error = none.out.lines().find(|l| l.starts_with("::error::")).expect("an ::error:: line");
        for needed in ["REAPCHECK_GIT", "REAPCHECK_REF", ".github/workflows/reapcheck.yml", "fork"] {
            assert!(error.contains(needed), "the error names {needed}: {error}");
        }
        assert_eq!(none.cargo, None);
    }
    // Values given (variables or the file): installed from them, over a
    // binary the restore-keys brought.
    let given = install("https://example.invalid/reapcheck.git", "v9.9.9", "false", true);
    assert_eq!(given.code, Some(0), "{}", given.out);
    assert_eq!(
        given.cargo.as_deref(),
        Some("install --locked --force --git https://example.invalid/reapcheck.git --rev v9.9.9 reapcheck")
    );
    // An exact cache hit installs nothing.
    let hit = install("https://example.invalid/reapcheck.git", "v9.9.9", "true", true);
    assert_eq!((hit.code, hit.cargo), (Some(0), None), "{}", hit.out);
}

// ---------------------------------------------------------------------------
// The release: prebuilt archives, their checksums, binstall, the template's
// download

/// The release workflow, relative to the root.
const RELEASE: &str = ".github/workflows/release.yml";

/// The targets the release promises a prebuilt binary for (the issue that
/// asked for it: Linux x86_64 and aarch64 with glibc, macOS on both).
const PROMISED: [&str; 4] =
    ["x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu", "aarch64-apple-darwin", "x86_64-apple-darwin"];

/// The job of `workflow` with a step whose `run` contains `command`, and
/// its name.
fn job_running<'a>(workflow: &'a Value, command: &str) -> (&'a String, &'a Value) {
    jobs(workflow)
        .into_iter()
        .find(|(_, job)| job["steps"].as_array().is_some_and(|s| s.iter().any(|s| run_of(s).contains(command))))
        .unwrap_or_else(|| panic!("no job runs `{command}`"))
}

/// The first step in `steps` whose `run` contains `command`, and its index.
fn step_running<'a>(steps: &'a [Value], command: &str) -> (usize, &'a Value) {
    steps.iter().enumerate().find(|(_, s)| run_of(s).contains(command)).unwrap_or_else(|| panic!("no `{command}` step"))
}

/// Runs a step's `run` script as the runner's bash does (`-e -o pipefail`)
/// in `cwd`, with its `env:` (an expression such as `${{ github.token }}`
/// becomes a stand-in value), then `env`, and a PATH of `fake` (stand-in
/// commands) before the system's. Its exit code and output.
fn run_step(step: &Value, cwd: &Path, fake: &Path, env: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut command = Command::new("bash");
    command
        .args(["--noprofile", "--norc", "-e", "-o", "pipefail", "-c", run_of(step)])
        .current_dir(cwd)
        .env_clear()
        .env("PATH", format!("{}:/usr/bin:/bin", fake.display()));
    if let Some(e) = step.get("env").and_then(Value::as_object) {
        for (k, v) in e {
            let v = scalar(v).unwrap();
            command.env(k, if v.contains("${{") { "stand-in" } else { v.as_str() });
        }
    }
    let o = command.envs(env.iter().copied()).output().unwrap();
    (o.status.code(), format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr)))
}

/// The files of `dir` whose name matches `pattern` (`*` once, as in
/// `reapcheck-*.tar.gz`), sorted.
fn matching(dir: &Path, pattern: &str) -> Vec<PathBuf> {
    let (head, tail) = pattern.split_once('*').unwrap_or((pattern, ""));
    let mut out: Vec<PathBuf> =
        std::fs::read_dir(dir).map(|entries| entries.map(|e| e.unwrap().path()).collect()).unwrap_or_default();
    out.retain(|p| {
        let name = p.file_name().unwrap().to_string_lossy();
        name.len() >= head.len() + tail.len() && name.starts_with(head) && name.ends_with(tail)
    });
    out.sort();
    out
}

fn sha256_hex(path: &Path) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(std::fs::read(path).unwrap());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// The paths inside a `.tar.gz`.
fn tar_listing(archive: &Path) -> Vec<String> {
    let o = Command::new("tar").arg("-tzf").arg(archive).output().unwrap();
    assert!(o.status.success(), "{}: not a gzip tar: {}", archive.display(), String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).lines().map(|l| l.trim_end_matches('/').to_owned()).collect()
}

/// The release's files for `tag`, made as its workflow makes them: each
/// build combination's package step run on a stand-in binary at cargo's
/// `target/<target>/release/reapcheck` (a script printing `reapcheck <tag>
/// prebuilt for <target>`, or `binary`), its upload gathered as the
/// publish job's download step does, then the publish step run with a
/// stand-in `gh` that finds the release (a re-run) or not.
struct Release {
    _scratch: Scratch,
    /// The folder the publish step publishes from.
    published: PathBuf,
    /// Each build's target and the archive its upload step took.
    archives: Vec<(String, PathBuf)>,
    /// The arguments of each `gh` call.
    gh: Vec<String>,
    code: Option<i32>,
    out: String,
}

fn released(tag: &str, binary: Option<&str>, release_exists: bool) -> Release {
    let workflow = yaml(&root().join(RELEASE));
    let scratch = Scratch::new("workflows", "release");
    let (build_name, build) = job_running(&workflow, "cargo build");
    let (publish_name, publish) = job_running(&workflow, "gh release");
    let publish_steps = publish["steps"].as_array().unwrap();
    let (gh_at, gh_step) = step_running(publish_steps, "gh release");
    let download = publish_steps[..gh_at]
        .iter()
        .find(|s| uses_of(s).starts_with("actions/download-artifact@"))
        .unwrap_or_else(|| panic!("{RELEASE}: job {publish_name} downloads no artifact before publishing"));
    let wanted = download.pointer("/with/pattern").and_then(Value::as_str).expect("the download's pattern");
    assert_eq!(
        download.pointer("/with/merge-multiple"),
        Some(&Value::Bool(true)),
        "{RELEASE}: the archives of every build go into one folder"
    );
    let publish_dir = scratch.0.join("publish");
    let published = publish_dir.join(download.pointer("/with/path").and_then(Value::as_str).expect("its path"));
    std::fs::create_dir_all(&published).unwrap();
    let fake = scratch.0.join("fake");
    std::fs::create_dir_all(&fake).unwrap();

    let mut archives = Vec::new();
    for matrix in combinations(build) {
        let target = matrix.get("matrix.target").unwrap_or_else(|| panic!("job {build_name}: matrix.target"));
        let steps = expanded_steps(build, &matrix);
        let (at, package) = step_running(&steps, "tar ");
        let upload = steps[at + 1..]
            .iter()
            .find(|s| uses_of(s).starts_with("actions/upload-artifact@"))
            .unwrap_or_else(|| panic!("{RELEASE}: job {build_name} ({target}) uploads nothing after packaging"));
        let name = upload.pointer("/with/name").and_then(Value::as_str).unwrap();
        assert!(
            !matching_name(name, wanted).is_empty(),
            "{RELEASE}: the upload `{name}` is not downloaded by `{wanted}`"
        );
        let path = upload.pointer("/with/path").and_then(Value::as_str).unwrap();
        let (folder, pattern) = path.rsplit_once('/').unwrap_or((".", path));
        let workspace = scratch.0.join(format!("build-{target}"));
        let built = workspace.join("target").join(target).join("release");
        std::fs::create_dir_all(&built).unwrap();
        let stand_in =
            binary.map(str::to_owned).unwrap_or(format!("#!/bin/sh\necho 'reapcheck {tag} prebuilt for {target}'\n"));
        write_executable(&built.join("reapcheck"), &stand_in);
        let (code, out) = run_step(package, &workspace, &fake, &[("GITHUB_REF_NAME", tag)]);
        assert_eq!(code, Some(0), "{RELEASE}: the package step for {target}: {out}");
        let uploaded = matching(&workspace.join(folder), pattern);
        assert_eq!(uploaded.len(), 1, "{RELEASE}: {target} uploads one archive, not {uploaded:?} ({out})");
        let archive = published.join(uploaded[0].file_name().unwrap());
        std::fs::copy(&uploaded[0], &archive).unwrap();
        archives.push((target.clone(), archive));
    }

    let record = scratch.0.join("gh-args");
    let view = if release_exists { 0 } else { 1 };
    write_executable(
        &fake.join("gh"),
        &format!(
            "#!/bin/sh\necho \"$@\" >> '{}'\nif [ \"$1 $2\" = 'release view' ]; then exit {view}; fi\n",
            record.display()
        ),
    );
    let (code, out) =
        run_step(gh_step, &publish_dir, &fake, &[("GITHUB_REF_NAME", tag), ("GITHUB_REPOSITORY", "example/reapcheck")]);
    let gh = std::fs::read_to_string(&record).map(|s| s.lines().map(str::to_owned).collect()).unwrap_or_default();
    Release { _scratch: scratch, published, archives, gh, code, out }
}

/// `name` if it matches the artifact `pattern` (a `*` once), else empty.
fn matching_name<'a>(name: &'a str, pattern: &str) -> &'a str {
    let (head, tail) = pattern.split_once('*').unwrap_or((pattern, ""));
    if name.len() >= head.len() + tail.len() && name.starts_with(head) && name.ends_with(tail) { name } else { "" }
}

/// Every promised target is built, in release mode and for that target,
/// from a git checkout (build.rs runs `git rev-parse`, and the crate embeds
/// ../dialects and ../scenarios), with the target's standard library
/// installed, on a runner of its operating system; the Linux binaries on
/// Ubuntu 22.04, so that they also run on the 22.04 hosts of SQL Server
/// 2019 legs (a binary linked on 24.04 needs glibc 2.39); and the publish
/// job waits for every build.
#[test]
fn the_release_builds_every_promised_target() {
    let workflow = yaml(&root().join(RELEASE));
    let tags = workflow.pointer("/on/push/tags").and_then(Value::as_array).expect("on: push: tags:");
    assert_eq!(tags, &vec![Value::String("v*".to_owned())], "{RELEASE}: runs on a pushed tag v*");
    let (build_name, build) = job_running(&workflow, "cargo build");
    let mut built = BTreeSet::new();
    for matrix in combinations(build) {
        let target = matrix["matrix.target"].clone();
        assert!(built.insert(target.clone()), "{RELEASE}: {target} is built twice");
        let runner = substitute(&scalar(&build["runs-on"]).unwrap(), &matrix);
        if target.ends_with("-linux-gnu") {
            assert!(runner.starts_with("ubuntu-22.04"), "{RELEASE}: {target} on {runner}, not an Ubuntu 22.04 host");
        } else if target.ends_with("-apple-darwin") {
            assert!(runner.starts_with("macos-"), "{RELEASE}: {target} on {runner}, not a macOS host");
        }
        if target.starts_with("aarch64-") && target.ends_with("-linux-gnu") {
            // Built natively (no cross C toolchain for aws-lc-sys and SQLite).
            assert!(runner.ends_with("-arm"), "{RELEASE}: {target} on {runner}, not GitHub's arm64 runner");
        }
        let steps = expanded_steps(build, &matrix);
        let (at, cargo) = step_running(&steps, "cargo build");
        let mut command = run_of(cargo).to_owned();
        if let Some(env) = cargo.get("env").and_then(Value::as_object) {
            for (k, v) in env {
                let v = scalar(v).unwrap();
                command = command.replace(&format!("\"${k}\""), &v).replace(&format!("${k}"), &v);
            }
        }
        for needed in ["--release", "--locked", &format!("--target {target}"), "--bin reapcheck"] {
            assert!(command.contains(needed), "{RELEASE}: {target}: `{command}` lacks {needed}");
        }
        let checkout = steps[..at].iter().position(|s| uses_of(s).starts_with("actions/checkout@"));
        assert!(checkout.is_some(), "{RELEASE}: {target}: no git checkout before the build");
        let toolchain = steps[..at]
            .iter()
            .find(|s| uses_of(s).starts_with("dtolnay/rust-toolchain@"))
            .unwrap_or_else(|| panic!("{RELEASE}: {target}: no Rust toolchain step"));
        let std_for = toolchain.pointer("/with/targets").and_then(Value::as_str).unwrap_or("");
        assert!(std_for.split(',').any(|t| t.trim() == target), "{RELEASE}: {target}: its std is not installed");
    }
    let promised: BTreeSet<String> = PROMISED.iter().map(|t| t.to_string()).collect();
    assert_eq!(built, promised, "{RELEASE}: the targets built");
    let (publish_name, publish) = job_running(&workflow, "gh release");
    let needs: Vec<String> = match &publish["needs"] {
        Value::Array(a) => a.iter().filter_map(scalar).collect(),
        other => scalar(other).into_iter().collect(),
    };
    assert!(needs.contains(build_name), "{RELEASE}: job {publish_name} does not wait for {build_name}: {needs:?}");
}

/// Each archive is reapcheck-<tag>-<target>.tar.gz holding
/// reapcheck-<tag>-<target>/reapcheck, the built binary; the publish step
/// writes <archive>.sha256 next to each (sha256sum's line, so `sha256sum
/// -c` checks it) and gives every archive and every checksum to the
/// release, created, or on a re-run updated (`--clobber`).
#[test]
fn the_release_publishes_each_archive_with_its_sha256() {
    for exists in [false, true] {
        let release = released("v9.9.9", None, exists);
        assert_eq!(release.code, Some(0), "{RELEASE}: the publish step: {}", release.out);
        let built: BTreeSet<&str> = release.archives.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(built, PROMISED.iter().copied().collect(), "an archive per promised target");
        let mut expected = BTreeSet::new();
        for (target, archive) in &release.archives {
            let name = format!("reapcheck-v9.9.9-{target}");
            assert_eq!(archive.file_name().unwrap().to_string_lossy(), format!("{name}.tar.gz"));
            assert!(tar_listing(archive).contains(&format!("{name}/reapcheck")), "{}", archive.display());
            let checksum = release.published.join(format!("{name}.tar.gz.sha256"));
            let line = std::fs::read_to_string(&checksum)
                .unwrap_or_else(|_| panic!("{RELEASE}: no {name}.tar.gz.sha256 next to the archive"));
            assert_eq!(line, format!("{}  {name}.tar.gz\n", sha256_hex(archive)), "{}", checksum.display());
            expected.insert(format!("{name}.tar.gz"));
            expected.insert(format!("{name}.tar.gz.sha256"));
        }
        let (verb, flag) = if exists { ("release upload", "--clobber") } else { ("release create", "--verify-tag") };
        let call = release
            .gh
            .iter()
            .find(|c| c.starts_with(verb))
            .unwrap_or_else(|| panic!("{RELEASE}: no `gh {verb}` (release exists: {exists}): {:?}", release.gh));
        assert!(call.contains("v9.9.9") && call.contains(flag), "{call}");
        let given: BTreeSet<String> = call
            .split_whitespace()
            .filter(|w| w.ends_with(".tar.gz") || w.ends_with(".sha256"))
            .map(|w| w.trim_start_matches("./").to_owned())
            .collect();
        assert_eq!(given, expected, "{RELEASE}: the files given to `gh {verb}`");
    }
}

/// The token can write only where it must: the workflow's default is
/// read-only, only the publishing job has `contents: write` (and nothing
/// more), and that job checks out and builds nothing, so no build script
/// or dependency runs with a token that can write the repository.
#[test]
fn the_release_has_least_privilege_permissions() {
    let workflow = yaml(&root().join(RELEASE));
    let read_only = |p: &Value| match p {
        Value::Object(m) => m.values().all(|v| matches!(v.as_str(), Some("read" | "none"))),
        Value::String(s) => s == "read-all",
        _ => false,
    };
    let top = workflow.get("permissions").unwrap_or_else(|| panic!("{RELEASE}: no top-level permissions"));
    assert!(read_only(top), "{RELEASE}: top-level permissions {top} are not read-only");
    let (publish_name, _) = job_running(&workflow, "gh release");
    for (name, job) in jobs(&workflow) {
        let permissions = job.get("permissions");
        if name == publish_name {
            let expected: Value = serde_json::json!({ "contents": "write" });
            assert_eq!(permissions, Some(&expected), "{RELEASE}: job {name}");
            for step in job["steps"].as_array().unwrap() {
                assert!(!uses_of(step).starts_with("actions/checkout@"), "{RELEASE}: job {name} checks out: {step}");
                assert!(!run_of(step).contains("cargo"), "{RELEASE}: job {name} runs cargo: {step}");
            }
        } else {
            assert!(permissions.is_none_or(read_only), "{RELEASE}: job {name} asks for {permissions:?}");
            assert!(
                !job.to_string().contains("github.token") && !job.to_string().contains("secrets."),
                "{RELEASE}: job {name} uses a token"
            );
        }
    }
}

/// `{ var }` in a cargo-binstall template replaced by `values` (panics on
/// a variable it does not know).
fn binstall_render(template: &str, values: &BTreeMap<&str, String>) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let close = rest[open..].find('}').expect("a closed { var }") + open;
        let var = rest[open + 1..close].trim();
        out.push_str(values.get(var).unwrap_or_else(|| panic!("binstall variable `{var}` in {template}")));
        rest = &rest[close + 1..];
    }
    out + rest
}

/// `cargo binstall` finds the archives the release publishes: for each
/// built target, `pkg-url` rendered with the crate's name and version
/// names the release of tag v<version> and exactly the archive the release
/// job made for that tag, `bin-dir` names the binary inside it, `pkg-fmt`
/// is a gzip tar; and the release refuses a tag other than v<version>
/// (binstall would never find its archives).
#[test]
fn binstall_metadata_names_the_archives_the_release_publishes() {
    let manifest_path = root().join("harness/Cargo.toml");
    let manifest: Value = toml::from_str(&std::fs::read_to_string(&manifest_path).unwrap()).unwrap();
    let package = &manifest["package"];
    let meta = package.pointer("/metadata/binstall").expect("[package.metadata.binstall] in harness/Cargo.toml");
    let version = package["version"].as_str().expect("a literal version").to_owned();
    let bins: Vec<&str> = manifest["bin"].as_array().unwrap().iter().filter_map(|b| b["name"].as_str()).collect();
    assert_eq!(bins, ["reapcheck"]);
    assert_eq!(meta["pkg-fmt"].as_str(), Some("tgz"), "the archives are .tar.gz");
    let repo = "https://github.com/example/reapcheck".to_owned();
    let tag = format!("v{version}");
    let release = released(&tag, None, false);
    assert_eq!(release.code, Some(0), "{}", release.out);
    for (target, archive) in &release.archives {
        let values: BTreeMap<&str, String> = [
            ("name", package["name"].as_str().unwrap().to_owned()),
            ("version", version.clone()),
            ("repo", repo.clone()),
            ("target", target.clone()),
            ("bin", bins[0].to_owned()),
            ("binary-ext", String::new()),
        ]
        .into_iter()
        .collect();
        let url = binstall_render(meta["pkg-url"].as_str().expect("pkg-url"), &values);
        let file = archive.file_name().unwrap().to_string_lossy();
        assert_eq!(url, format!("{repo}/releases/download/{tag}/{file}"), "pkg-url for {target}");
        let bin_dir = binstall_render(meta["bin-dir"].as_str().expect("bin-dir"), &values);
        assert!(tar_listing(archive).contains(&bin_dir), "bin-dir {bin_dir} is not in {file}");
    }
    // The version job: the tag must be v<version>.
    let workflow = yaml(&root().join(RELEASE));
    let (_, job) = job_running(&workflow, "harness/Cargo.toml");
    let (_, check) = step_running(job["steps"].as_array().unwrap(), "harness/Cargo.toml");
    let cargo_dir = Path::new(env!("CARGO")).parent().unwrap().to_owned();
    let ok = run_step(check, &root(), &cargo_dir, &[("GITHUB_REF_NAME", &tag)]);
    assert_eq!(ok.0, Some(0), "tag {tag}: {}", ok.1);
    let other = format!("{tag}.1");
    let bad = run_step(check, &root(), &cargo_dir, &[("GITHUB_REF_NAME", &other)]);
    assert_eq!(bad.0, Some(1), "tag {other} on version {version}: {}", bad.1);
    let error = bad.1.lines().find(|l| l.starts_with("::error::")).expect("an ::error:: line");
    assert!(error.contains(&other) && error.contains(&format!("v{version}")), "{error}");
}

/// The template installs the release binary of REAPCHECK_REF when the
/// release has one for the runner's platform, from the GitHub release of
/// the REAPCHECK_GIT repository, without building; its platforms are
/// exactly the release's targets (none promised and never downloaded, none
/// guessed that is never published).
#[test]
fn the_template_downloads_the_release_binary_for_its_platform() {
    let release = released("v9.9.9", None, false);
    assert_eq!(release.code, Some(0), "{}", release.out);
    let git = "https://github.com/example/reapcheck.git";
    let mut installed = BTreeSet::new();
    for platform in [("Linux", "X64"), ("Linux", "ARM64"), ("macOS", "ARM64"), ("macOS", "X64")] {
        let got = install_on(git, "v9.9.9", "false", true, platform, Some(&release.published));
        assert_eq!(got.code, Some(0), "{platform:?}: {}", got.out);
        assert_eq!(got.cargo, None, "{platform:?}: built although a release exists: {}", got.out);
        let version = got.installed.unwrap_or_default();
        let target = version
            .strip_prefix("reapcheck v9.9.9 prebuilt for ")
            .unwrap_or_else(|| panic!("{platform:?}: installed `{version}`: {}", got.out))
            .to_owned();
        let base = format!("https://github.com/example/reapcheck/releases/download/v9.9.9/reapcheck-v9.9.9-{target}");
        assert_eq!(got.curl, [format!("{base}.tar.gz"), format!("{base}.tar.gz.sha256")], "{platform:?}");
        assert!(got.out.contains("verified"), "{platform:?}: the log says the checksum was checked: {}", got.out);
        assert!(installed.insert(target.clone()), "{platform:?}: {target} again");
    }
    let published: BTreeSet<String> = release.archives.iter().map(|(t, _)| t.clone()).collect();
    assert_eq!(installed, published, "the template's platforms are the release's targets");
}

/// A downloaded archive that does not match its published sha256 fails the
/// install step with one `::error::` naming the archive and both hashes,
/// installs nothing (the binary the cache restored stays) and builds
/// nothing.
#[test]
fn the_template_refuses_a_release_archive_that_fails_its_checksum() {
    let release = released("v9.9.9", None, false);
    assert_eq!(release.code, Some(0), "{}", release.out);
    let archive = release.published.join("reapcheck-v9.9.9-x86_64-unknown-linux-gnu.tar.gz");
    let mut bytes = std::fs::read(&archive).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&archive, bytes).unwrap();
    let git = "https://github.com/example/reapcheck";
    let got = install_on(git, "v9.9.9", "false", true, ("Linux", "X64"), Some(&release.published));
    assert_eq!(got.code, Some(1), "{}", got.out);
    let error =
        got.out.lines().find(|l| l.starts_with("::error::")).unwrap_or_else(|| panic!("no ::error::: {}", got.out));
    assert!(error.contains("reapcheck-v9.9.9-x86_64-unknown-linux-gnu.tar.gz") && error.contains("sha256"), "{error}");
    assert!(error.contains(&sha256_hex(&archive)), "the error gives the downloaded archive's hash: {error}");
    assert_eq!(got.cargo, None, "{}", got.out);
    assert_eq!(got.installed.as_deref(), Some("reapcheck 0.0.1"), "the restored binary stays: {}", got.out);
}

/// Without a release archive for the reference (a commit, a tag without a
/// release, a private repository), on a platform the release has no
/// binary for, with a git URL that is not https, or with a prebuilt binary
/// that does not start on the runner, the install says so in a
/// `::notice::` or `::warning::` line and builds with `cargo install`, as
/// before.
#[test]
fn the_template_builds_with_cargo_when_no_release_binary_fits() {
    let cargo = "install --locked --force --git {git} --rev v9.9.9 reapcheck";
    let check = |what: &str, git: &str, got: Install, downloads: bool, level: &str| {
        assert_eq!(got.code, Some(0), "{what}: {}", got.out);
        assert_eq!(got.cargo.as_deref(), Some(cargo.replace("{git}", git).as_str()), "{what}: {}", got.out);
        assert_eq!(!got.curl.is_empty(), downloads, "{what}: curl {:?}", got.curl);
        let line =
            got.out.lines().find(|l| l.starts_with(level)).unwrap_or_else(|| panic!("{what}: no {level}: {}", got.out));
        assert!(line.contains("cargo install"), "{what}: {line}");
    };
    let git = "https://github.com/example/reapcheck.git";
    check("no release", git, install_on(git, "v9.9.9", "false", false, ("Linux", "X64"), None), true, "::notice::");
    let release = released("v9.9.9", None, false);
    let windows = install_on(git, "v9.9.9", "", false, ("Windows", "X64"), Some(&release.published));
    check("Windows", git, windows, false, "::notice::");
    let ssh = "git@github.com:example/reapcheck.git";
    check(
        "ssh",
        ssh,
        install_on(ssh, "v9.9.9", "", false, ("Linux", "X64"), Some(&release.published)),
        false,
        "::notice::",
    );
    let broken = released("v9.9.9", Some("#!/bin/sh\nexit 126\n"), false);
    let got = install_on(git, "v9.9.9", "false", true, ("Linux", "X64"), Some(&broken.published));
    check("a binary that does not start", git, got, true, "::warning::");
}
