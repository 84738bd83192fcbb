//! The reports people look at, as the binary writes them: `verdict` on leg
//! files from real runs (good, and each bad case failing with a message
//! that names the leg), and the HTML matrix opened in headless Chromium
//! (cell counts, one click, a screenshot kept in reports/matrix.png, and
//! where an opened failure shows at 1400x1000).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().expect("the workspace exists")
}

/// Runs the binary with no database configured.
fn reapcheck(args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_reapcheck"));
    cmd.args(args).current_dir(root()).env_remove("REAPCHECK_REQUIRE");
    for t in reapcheck::target::Target::ALL {
        cmd.env_remove(t.url_variable());
    }
    cmd.output().expect("the binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("reapcheck-reports-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// Leg folders from real runs, made once: `a` and `b` ran `grace/` on
/// sqlite, `claim` ran `claim/` on sqlite (another corpus), `mssql` ran
/// `grace/` on mssql with no URL (every case skipped).
fn legs() -> &'static Path {
    static LEGS: OnceLock<PathBuf> = OnceLock::new();
    LEGS.get_or_init(|| {
        let dir = scratch("legs");
        for (leg, db, filter) in
            [("a", "sqlite", "grace/"), ("claim", "sqlite", "claim/"), ("mssql", "mssql", "grace/")]
        {
            let out = dir.join(leg).display().to_string();
            // --allow-skip: the mssql leg has no server here and must still write
            // its (all skipped) outcome file; it exits 1, since nothing was
            // judged on a database.
            let o = reapcheck(&[
                "run",
                "--db",
                db,
                "--allow-skip",
                "--leg",
                leg,
                "--report",
                &out,
                "--coverage-min",
                "0",
                filter,
            ]);
            if db == "mssql" {
                assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
                assert!(stdout(&o).contains("every database target was skipped"), "{}", stdout(&o));
            } else {
                assert!(o.status.success(), "{}", stdout(&o));
            }
        }
        copy_leg(&dir, "a", "b", |_| {});
        dir
    })
}

/// Copies leg `from` to a leg named `to`, editing its outcome file.
fn copy_leg(dir: &Path, from: &str, to: &str, edit: impl FnOnce(&mut Value)) -> PathBuf {
    let text = std::fs::read_to_string(dir.join(from).join("outcomes.json")).unwrap();
    let mut json: Value = serde_json::from_str(&text).unwrap();
    json["leg"] = Value::from(to);
    edit(&mut json);
    let folder = dir.join(to);
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("outcomes.json"), serde_json::to_string_pretty(&json).unwrap()).unwrap();
    folder
}

/// `verdict` on the legs `names` with `--expect expect`.
fn verdict(names: &[&str], expect: &str) -> (Option<i32>, String) {
    let out = scratch(&format!("verdict-{}", names.join("-")));
    let mut args = vec!["verdict".to_owned(), "--out".to_owned(), out.display().to_string()];
    args.extend(names.iter().map(|n| legs().join(n).display().to_string()));
    if !expect.is_empty() {
        args.push(format!("--expect={expect}"));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = reapcheck(&args);
    let text = format!("{}{}", stdout(&o), String::from_utf8_lossy(&o.stderr));
    if o.status.code() != Some(2) {
        for file in ["matrix.json", "matrix.html", "matrix.md"] {
            assert!(out.join(file).exists(), "{file} not written: {text}");
        }
    }
    let _ = std::fs::remove_dir_all(&out);
    (o.status.code(), text)
}

#[test]
fn verdict_passes_legs_that_agree() {
    let (code, out) = verdict(&["a", "b"], "a,b");
    assert_eq!(code, Some(0), "{out}");
    assert!(out.ends_with("2 passed, 0 failed\n"), "{out}");
    assert!(!out.contains("FAIL"), "{out}");
}

#[test]
fn verdict_fails_a_missing_leg() {
    let (code, out) = verdict(&["a", "b"], "a,b,postgres-15");
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("FAIL     leg `postgres-15` is missing: no outcome file given has"), "{out}");
}

#[test]
fn verdict_fails_a_leg_that_ran_zero_scenarios() {
    let (code, out) = verdict(&["a", "mssql"], "");
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains(
            "FAIL     leg `mssql` ran zero scenarios on a database (every case was skipped: no REAPCHECK_MSSQL_URL"
        ),
        "{out}"
    );
    assert!(out.ends_with("1 passed, 1 failed\n"), "{out}");
}

#[test]
fn verdict_fails_an_undeclared_divergence() {
    let dir = legs();
    copy_leg(dir, "a", "differs", |json| {
        let case = json["cases"].as_array_mut().unwrap().iter_mut().find(|c| c["target"] == "sqlite").unwrap();
        case["outcome_hash"] = Value::from("sha256:0000");
    });
    let (code, out) = verdict(&["a", "differs"], "a,differs");
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("FAIL     leg `differs`: grace/")
            && out.contains("has outcome sha256:0000 but leg `a` has sha256:"),
        "{out}"
    );
    assert!(out.contains("and no divergence is declared"), "{out}");
}

#[test]
fn verdict_fails_legs_that_ran_different_corpora() {
    let (code, out) = verdict(&["a", "claim"], "");
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("FAIL     leg `claim` ran corpus sha256:") && out.contains("but leg `a` ran sha256:"),
        "{out}"
    );
}

#[test]
fn verdict_fails_a_failed_case_and_an_interrupted_leg() {
    let dir = legs();
    copy_leg(dir, "a", "stopped", |json| {
        json["interrupted"] = Value::from(true);
        let case = json["cases"].as_array_mut().unwrap().iter_mut().find(|c| c["target"] == "sqlite").unwrap();
        case["result"] = Value::from("fail");
        case["rerun"] = Value::from("reapcheck run --db sqlite --exact grace/x");
    });
    let (code, out) = verdict(&["a", "stopped"], "");
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("FAIL     leg `stopped` was interrupted before it finished"), "{out}");
    assert!(out.contains("on sqlite; rerun: reapcheck run --db sqlite --exact grace/x"), "{out}");
}

#[test]
fn a_run_that_ends_early_leaves_no_earlier_report() {
    let dir = scratch("early");
    for name in ["junit.xml", "summary.txt", "outcomes.json", "matrix.html", "summary.md"] {
        std::fs::write(dir.join(name), "from a passing run").unwrap();
    }
    let o = reapcheck(&["run", "--db", "oracle", "--report", &dir.display().to_string()]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "the previous run's reports are gone");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn verdict_refuses_a_folder_without_outcomes() {
    let empty = scratch("empty");
    let o = reapcheck(&["verdict", &empty.display().to_string()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("error: no outcomes.json in"), "{o:?}");
}

/// Chromium, or `None` with the reason printed; under `CI=true` a missing
/// Chromium fails the test (`.ci/run` installs Debian's `chromium`).
fn chromium() -> Option<PathBuf> {
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        let found = std::env::var_os("PATH")
            .into_iter()
            .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
            .map(|d| d.join(name))
            .find(|p| p.is_file());
        if found.is_some() {
            return found;
        }
    }
    assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true but no chromium on PATH: apt-get install chromium");
    println!("skipped: no chromium on PATH (apt-get install chromium); the HTML matrix was not opened");
    None
}

/// A copy of `dialects` in `dir/dialects`, the SQLite one with the reap's
/// COALESCE swapped: some grace/ scenarios (and others) fail on sqlite,
/// with a diff, a trace and a rerun.
fn broken_dialects(dir: &Path, dialects: &[&str]) -> PathBuf {
    let folder = dir.join("dialects");
    for dialect in dialects {
        std::fs::create_dir_all(folder.join(dialect)).unwrap();
        for entry in std::fs::read_dir(root().join("dialects").join(dialect)).unwrap() {
            let path = entry.unwrap().path();
            let mut text = std::fs::read_to_string(&path).unwrap();
            if *dialect == "sqlite" {
                text = text.replace("COALESCE(heartbeat_at, updated_at)", "COALESCE(updated_at, heartbeat_at)");
            }
            std::fs::write(folder.join(dialect).join(path.file_name().unwrap()), text).unwrap();
        }
    }
    folder
}

fn headless(chromium: &Path, extra: &[&str], url: &str) -> Output {
    Command::new(chromium)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars"])
        .args(extra)
        .arg(url)
        .output()
        .expect("chromium starts")
}

#[test]
fn the_html_matrix_opens_in_headless_chromium_and_a_click_shows_the_failure() {
    let Some(chromium) = chromium() else { return };
    let dir = scratch("html");
    let dialects = broken_dialects(&dir, &["sqlite", "mssql"]);
    let report = dir.join("report");
    let o = reapcheck(&[
        "run",
        "--db",
        "sqlite,mssql",
        "--allow-skip",
        "--dialects",
        &dialects.display().to_string(),
        "--report",
        &report.display().to_string(),
        "grace/",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    // The terminal's closing list of failures, then the closing line.
    let out = stdout(&o);
    let list = &out[out.rfind("\nfailures (").expect("a closing list of failures") + 1..];
    assert!(list.lines().nth(1).unwrap().starts_with("    grace/"), "{list}");
    assert!(list.lines().nth(1).unwrap().contains(" on sqlite: reapcheck run --db sqlite --dialects "), "{list}");
    assert!(list.lines().last().unwrap().ends_with(" failed, 11 skipped"), "{list}");
    let md = std::fs::read_to_string(report.join("summary.md")).unwrap();
    assert!(md.contains("\n| mssql | not run | 0 | 0 | 0 | 11 | 0 |") && md.contains("### Failures ("), "{md}");
    assert!(std::fs::read_to_string(report.join("junit.xml")).unwrap().contains("<failure"));
    let json: Value = serde_json::from_str(&std::fs::read_to_string(report.join("outcomes.json")).unwrap()).unwrap();
    let cases = json["cases"].as_array().unwrap();
    let count = |result: &str| cases.iter().filter(|c| c["result"] == result).count();
    assert!(count("fail") > 0 && count("skipped") > 0 && count("pass") > 0, "{json}");

    // The first failing cell: row and column as the matrix orders them.
    let html = std::fs::read_to_string(report.join("matrix.html")).unwrap();
    let fail_cell = "<td class=\"cell fail\" id=\"";
    let first_fail = html.find(fail_cell).expect("a failing cell") + fail_cell.len();
    let id: String = html[first_fail..].chars().take_while(|c| *c != '"').collect();
    let url = format!("file://{}#open={id}", report.join("matrix.html").display());

    let dom = headless(&chromium, &["--dump-dom"], &url);
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert_eq!(dom.matches("<td class=\"cell ").count(), cases.len(), "one cell per case");
    assert_eq!(dom.matches("<td class=\"cell fail").count(), count("fail"));
    assert_eq!(dom.matches("<td class=\"cell skipped").count(), count("skipped"));
    assert!(dom.contains(&format!("<td class=\"cell fail selected\" id=\"{id}\">FAIL</td>")), "the click selects");
    let shown = &dom[dom.find("<div id=\"detail\">").expect("the detail panel")..];
    let shown = &shown[..shown.find("</div>").unwrap()];
    assert!(
        shown.contains("on sqlite <small>(leg sqlite,mssql, sqlite 3.") && shown.contains(": FAIL</h2>"),
        "{shown}"
    );
    assert!(shown.contains("<h3>difference</h3>") && shown.contains("sqlite disagrees with the model"), "{shown}");
    assert!(shown.contains("<h3>SQL trace</h3><pre class=\"SQL-trace\">trace on sqlite:"), "{shown}");
    assert!(shown.contains("<h3>rerun</h3><pre class=\"rerun\">reapcheck run --db sqlite --dialects "), "{shown}");

    // The filters: by status, then by name as well.
    let filtered = |hash: &str| {
        let url = format!("file://{}#{hash}", report.join("matrix.html").display());
        let dom = headless(&chromium, &["--dump-dom"], &url);
        let dom = String::from_utf8_lossy(&dom.stdout).into_owned();
        let shown = dom.matches("<tr class=\"row\"").count();
        let hidden = dom.matches("<tr class=\"row hidden\"").count();
        (shown, hidden)
    };
    let failed_scenarios: std::collections::BTreeSet<&str> =
        cases.iter().filter(|c| c["result"] == "fail").map(|c| c["scenario"].as_str().unwrap()).collect();
    let rows = cases.iter().map(|c| c["scenario"].as_str().unwrap()).collect::<std::collections::BTreeSet<_>>().len();
    assert_eq!(filtered("status=fail"), (failed_scenarios.len(), rows - failed_scenarios.len()));
    let one = failed_scenarios.iter().next().unwrap();
    assert_eq!(filtered(&format!("status=fail&name={one}")), (1, rows - 1));
    assert_eq!(filtered("name=no-such-scenario"), (0, rows));

    // The screenshot CI keeps as an artifact.
    std::fs::create_dir_all(root().join("reports")).unwrap();
    let png = root().join("reports/matrix.png");
    let _ = std::fs::remove_file(&png);
    let shot = headless(&chromium, &["--window-size=1400,1000", &format!("--screenshot={}", png.display())], &url);
    let bytes = std::fs::read(&png).unwrap_or_default();
    assert!(bytes.starts_with(b"\x89PNG") && bytes.len() > 10_000, "no screenshot: {shot:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Measures the matrix once its script ran, as a user would see it: appended
/// after that script, it writes what it found as JSON into
/// `<script id="probe">` (kept verbatim by `--dump-dom`).
const PROBE: &str = r#"<script>(function(){
  var d=document.getElementById('detail'), diff=d.querySelector('pre.difference'), trace=d.querySelector('pre.SQL-trace');
  function box(e){var r=e.getBoundingClientRect(); return {top:r.top,bottom:r.bottom,left:r.left,right:r.right};}
  var ruler=document.createElement('span');
  ruler.style.whiteSpace='pre'; ruler.style.font=getComputedStyle(trace).font; document.body.appendChild(ruler);
  var widest=0;
  trace.textContent.split('\n').forEach(function(l){ruler.textContent=l; widest=Math.max(widest,ruler.getBoundingClientRect().width);});
  ruler.remove();
  function texts(sel){return Array.prototype.map.call(diff.querySelectorAll(sel),function(e){return e.textContent;});}
  var legs=document.querySelector('ul.legs');
  var out={width:innerWidth, height:innerHeight, legs:[legs.scrollWidth,legs.clientWidth], cell:box(document.querySelector('td.selected')), diff:box(diff),
    heading:d.querySelector('h2').textContent, trace:trace.textContent, widest:widest,
    traceClient:trace.clientWidth, traceScroll:trace.scrollWidth, del:texts('.del'), add:texts('.add')};
  var s=document.createElement('script'); s.id='probe'; s.type='application/json';
  s.textContent=JSON.stringify(out).replace(/</g,'\\u003c'); document.body.appendChild(s);
})();</script>"#;

/// The newcomer's view (1400x1000, the whole corpus, so the matrix is taller
/// than the window): the last FAIL cell opened by `#open=` shows its diff in
/// the window without scrolling, next to the cell; a trace line wider than
/// the pane wraps in it and the trace is whole; the diff's `-` and `+` lines
/// carry the classes that colour them.
#[test]
fn an_open_failure_shows_in_the_window_with_its_trace_whole_and_its_diff_coloured() {
    let Some(chromium) = chromium() else { return };
    let dir = scratch("html-open");
    let dialects = broken_dialects(&dir, &["sqlite"]);
    let report = dir.join("report");
    let o = reapcheck(&[
        "run",
        "--db",
        "sqlite",
        "--dialects",
        &dialects.display().to_string(),
        "--report",
        &report.display().to_string(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let html = std::fs::read_to_string(report.join("matrix.html")).unwrap();
    let fail_cell = "<td class=\"cell fail\" id=\"";
    let last_fail = html.rfind(fail_cell).expect("a failing cell") + fail_cell.len();
    let id: String = html[last_fail..].chars().take_while(|c| *c != '"').collect();
    let page = dir.join("probed.html");
    std::fs::write(&page, html.replace("</body>", &format!("{PROBE}</body>"))).unwrap();
    let url = format!("file://{}#open={id}", page.display());
    let num = |v: &Value| v.as_f64().unwrap();
    // The probe's findings in a window of `size`, and the page's width and
    // height, once the diff is checked to be in the page's view (its top and
    // at least 200 px of it).
    let probe = |size: &str| {
        let dom = headless(&chromium, &[&format!("--window-size={size}"), "--dump-dom"], &url);
        let dom = String::from_utf8_lossy(&dom.stdout);
        let start = "<script id=\"probe\" type=\"application/json\">";
        let json = &dom[dom.find(start).unwrap_or_else(|| panic!("the probe ran: {dom}")) + start.len()..];
        let p: Value = serde_json::from_str(&json[..json.find("</script>").unwrap()]).unwrap();
        let (width, height) = (num(&p["width"]), num(&p["height"]));
        let diff = &p["diff"];
        let shown = (num(&diff["bottom"]) - num(&diff["top"])).min(200.0);
        assert!(num(&diff["top"]) >= 0.0 && num(&diff["top"]) + shown <= height, "below the fold at {size}: {p}");
        assert!(num(&diff["left"]) >= 0.0 && num(&diff["right"]) <= width, "{p}");
        (p, width, height)
    };
    // `--dump-dom` gives the page a little less than the window's height.
    let (p, width, height) = probe("1400,1000");
    assert!(width == 1400.0 && (800.0..=1000.0).contains(&height), "{p}");
    // A window too narrow for the pane shows the details below the matrix,
    // scrolled to.
    let (narrow, width, _) = probe("700,900");
    assert_eq!(width, 700.0, "{narrow}");

    // With the pane at the side, the cell opened is in sight too, left of
    // the pane, and the header's legs (long hashes) wrap before the pane.
    let (smaller, _, smaller_height) = probe("1000,900");
    for (p, height) in [(&p, height), (&smaller, smaller_height)] {
        let (diff, cell) = (&p["diff"], &p["cell"]);
        assert!(num(&cell["top"]) >= 0.0 && num(&cell["bottom"]) <= height, "the opened cell is out of sight: {p}");
        assert!(num(&cell["right"]) <= num(&diff["left"]), "the pane covers the opened cell: {p}");
        assert!(num(&p["legs"][0]) <= num(&p["legs"][1]), "the legs run under the pane: {p}");
    }

    // The case shown, from the outcome file: its trace is whole in the pane,
    // a line of it is wider than the pane, and nothing is hidden to the right.
    let json: Value = serde_json::from_str(&std::fs::read_to_string(report.join("outcomes.json")).unwrap()).unwrap();
    let heading = p["heading"].as_str().unwrap();
    let scenario = heading.split(" on sqlite ").next().unwrap();
    let case = json["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["scenario"] == scenario && c["target"] == "sqlite")
        .unwrap_or_else(|| panic!("no case for {heading}"));
    assert_eq!(p["trace"], case["trace"], "the trace is cut");
    assert!(num(&p["widest"]) > num(&p["traceClient"]), "no trace line wider than the pane: {p}");
    assert!(num(&p["traceScroll"]) <= num(&p["traceClient"]), "a trace line runs out of the pane: {p}");

    // Every `-` line of the diff after its labels is a `del`, every `+` an `add`.
    let text = case["diff"].as_str().unwrap();
    let body: Vec<&str> = text[text.find("\n+++ ").unwrap() + 1..].lines().skip(1).collect();
    let lines = |sign: char| -> Vec<Value> {
        body.iter().filter(|l| l.starts_with(sign)).map(|l| Value::from(format!("{l}\n"))).collect()
    };
    assert!(!lines('-').is_empty() && !lines('+').is_empty(), "{text}");
    assert_eq!(p["del"].as_array().unwrap(), &lines('-'), "{p}");
    assert_eq!(p["add"].as_array().unwrap(), &lines('+'), "{p}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The users' workflow (`ci/github-actions.yml`, what `reapcheck init`
/// writes): its verdict expects exactly the legs the workflow runs, so a
/// leg whose job died before uploading a report fails the verdict instead of
/// being left out.
#[test]
fn the_users_workflow_verdict_expects_every_leg_it_runs() {
    let text = std::fs::read_to_string(root().join("ci/github-actions.yml")).unwrap();
    let legs: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split_once(" --leg ").map(|(_, rest)| rest.split_whitespace().next().unwrap()))
        .collect();
    assert!(legs.len() >= 2, "no `--leg` in the run lines: {legs:?}");
    let verdict = text.lines().find(|l| l.contains("reapcheck verdict")).expect("a verdict line");
    let expect = verdict.split_once("--expect ").expect("verdict names its expected legs").1;
    let mut expected: Vec<&str> = expect.split_whitespace().next().unwrap().split(',').collect();
    let mut ran = legs.clone();
    expected.sort_unstable();
    ran.sort_unstable();
    assert_eq!(expected, ran, "{verdict}");
}
