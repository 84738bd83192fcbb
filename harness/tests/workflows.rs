//! The GitHub workflows: this project's matrix (`.github/workflows/`, with
//! its composite action `.github/actions/leg`) and the users' template
//! `ci/github-actions.yml` (what `reapcheck init` writes). Neither runs on
//! this machine, so what would break their first real run is checked here,
//! by reading them: SQL Server URLs that trust the container's self-signed
//! certificate, equivalence declarations that resolve on every dialect a
//! workflow mutates, SQL Server 2019 on an Ubuntu 22.04 host, uploads that a
//! re-run can repeat, step summaries, the merged matrix kept, and a template
//! that installs without repository variables (a fork's pull request).

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

/// upload-artifact v4 refuses a name already used in the workflow run, and
/// re-running a job is the same run: without `overwrite: true` the re-run
/// of a failed leg fails at its upload. (The leg action,
/// `.github/actions/leg/action.yml`, is not in this list: it belongs to
/// another change.)
#[test]
fn every_upload_can_be_repeated_by_a_re_run() {
    let mut uploads = 0;
    for file in [MATRIX, TEMPLATE] {
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
    assert!(uploads >= 6, "the template uploads the binary, four reports and the matrix; found {uploads}");
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

/// What the install job's script did: its exit code, its output, and the
/// arguments it gave `cargo` (none when it did not call it).
struct Install {
    code: Option<i32>,
    out: String,
    cargo: Option<String>,
}

/// Runs the template's install step, as the runner would without
/// repository variables, with `git` and `rev` as the workflow's env gives
/// them, the cache's `cache-hit` output, and a binary restored by the
/// cache's restore-keys or not. `cargo` is a stand-in that records its
/// arguments.
fn install(git: &str, rev: &str, cache_hit: &str, restored: bool) -> Install {
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
    let dir = std::env::temp_dir().join(format!(
        "reapcheck-workflows-install-{}-{restored}-{cache_hit}-{}",
        std::process::id(),
        git.len()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    let home = dir.join("home");
    let fake = dir.join("fake");
    std::fs::create_dir_all(home.join(".cargo/bin")).unwrap();
    std::fs::create_dir_all(&fake).unwrap();
    let record = dir.join("cargo-args");
    let cargo = format!("#!/bin/sh\necho \"$@\" > '{}'\n", record.display());
    write_executable(&fake.join("cargo"), &cargo);
    if restored {
        write_executable(&home.join(".cargo/bin/reapcheck"), "#!/bin/sh\necho 'reapcheck 0.0.1'\n");
    }
    let o = Command::new("bash")
        .args(["--noprofile", "--norc", "-e", "-o", "pipefail", "-c", run_of(step)])
        .env_clear()
        .env("PATH", format!("{}:/usr/bin:/bin", fake.display()))
        .env("HOME", &home)
        .env("REAPCHECK_GIT", git)
        .env("REAPCHECK_REF", rev)
        .envs(&env)
        .output()
        .unwrap();
    let result = Install {
        code: o.status.code(),
        out: format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr)),
        cargo: std::fs::read_to_string(&record).ok().map(|s| s.trim().to_owned()),
    };
    let _ = std::fs::remove_dir_all(&dir);
    result
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
