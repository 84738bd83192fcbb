//! The HTML matrix: one self-contained file (inline CSS and script, no
//! network) with scenarios as rows grouped by concern, one column per leg
//! and target with its server and version, and a cell per case (pass,
//! FAIL, divergence, skipped, new). Clicking a cell shows its details in a
//! panel fixed at the right of the window (so they show without scrolling,
//! however far down the cell is): the diff with its `-` and `+` lines
//! coloured, the SQL trace (long lines wrap) and the rerun command of a
//! failure, the reason of a skip or divergence. Scenarios at the root of
//! the scenarios folder are grouped under `(top level)`. Rows filter by
//! status and by name. Every text from the outcome files is escaped by
//! `html-escape`. Without JavaScript the page is the plain matrix, laid
//! out as before the panel (the panel's layout is switched on by the
//! script).
//!
//! Opening the file with `#open=<cell id>` (`#open=c-0-1`: row 0, column 1)
//! scrolls to that cell and clicks it once loaded, and `#status=fail&name=grace` sets the
//! filters, so a link (or a headless browser) can show a case's details or
//! a filtered view directly.

use std::fmt::Write as _;

use html_escape::{encode_double_quoted_attribute as attr, encode_text as text};

use super::matrix::{Matrix, Row};
use super::outcomes::{CaseOutcome, CaseResult, Counts};
use super::verdict::Problem;

const STYLE: &str = r#"
body{font:14px/1.4 system-ui,sans-serif;margin:1em;color:#222}
h1{font-size:1.3em;margin:0 0 .3em}
.counts span{margin-right:1em}
.legs{overflow-wrap:anywhere}
.problems{background:#fde8e8;border:1px solid #d33;padding:.5em 1em}
.bar{margin:.6em 0;display:flex;gap:1em;align-items:center;flex-wrap:wrap}
.wrap{overflow-x:auto;max-height:70vh;overflow-y:auto}
table{border-collapse:collapse}
th,td{border:1px solid #ccc;padding:2px 6px;white-space:nowrap}
thead th{position:sticky;top:0;background:#f4f4f4;font-weight:normal}
tr.concern th{text-align:left;background:#eef;font-weight:bold}
td.name{font-family:monospace}
td.cell{cursor:pointer;text-align:center}
td.pass,td.new{background:#dff5df}
td.fail{background:#f7c4c4;font-weight:bold}
td.divergence{background:#fbeec1}
td.skipped{background:#eee;color:#777}
td.none{background:#fff}
td.selected{outline:3px solid #225}
#detail{border:1px solid #888;margin-top:1em;padding:.5em 1em;min-height:2em}
body.js{margin-right:calc(var(--pane) + 2em);--pane:14em}body.js.open{--pane:min(38vw,640px)}
body.js #detail{position:fixed;top:0;right:0;bottom:0;width:var(--pane);box-sizing:border-box;margin:0;overflow:auto;background:#fff;box-shadow:-2px 0 6px #0003}
@media (max-width:800px){body.js{margin-right:1em}body.js #detail{position:static;width:auto;box-shadow:none}}
#detail h2{font-size:1.1em}
#detail pre{background:#f8f8f8;padding:.4em;white-space:pre-wrap;overflow-wrap:anywhere}
#detail .del{display:block;background:#fdd;color:#900}
#detail .add{display:block;background:#dfd;color:#060}
#detail .hd{display:block;font-weight:bold}
.hidden{display:none}
"#;

const SCRIPT: &str = r#"
(function(){
  var detail=document.getElementById('detail');
  document.body.classList.add('js');
  function show(cell){
    document.querySelectorAll('td.selected').forEach(function(c){c.classList.remove('selected');});
    cell.classList.add('selected');
    document.body.classList.add('open');
    var src=document.getElementById('d'+cell.id.slice(1));
    detail.innerHTML=src?src.innerHTML:'';
    detail.scrollTop=0;
    // A narrow window shows the panel below the matrix instead: bring it up.
    if(getComputedStyle(detail).position!=='fixed'){detail.scrollIntoView();}
  }
  document.querySelectorAll('td.cell').forEach(function(cell){
    cell.addEventListener('click',function(){show(cell);});
  });
  var status=document.getElementById('status'), name=document.getElementById('name');
  function filter(){
    var want=status.value, text=name.value.toLowerCase();
    document.querySelectorAll('tbody tr.row').forEach(function(row){
      var byName=row.dataset.scenario.toLowerCase().indexOf(text)>=0;
      var byStatus=want===''||row.querySelector('td.cell.'+want)!==null;
      row.classList.toggle('hidden',!(byName&&byStatus));
    });
    document.querySelectorAll('tbody tr.concern').forEach(function(head){
      var any=document.querySelector('tbody tr.row[data-concern="'+CSS.escape(head.dataset.concern)+'"]:not(.hidden)');
      head.classList.toggle('hidden',!any);
    });
  }
  status.addEventListener('change',filter);
  name.addEventListener('input',filter);
  var params=new URLSearchParams(location.hash.slice(1));
  if(params.has('status')){status.value=params.get('status');}
  if(params.has('name')){name.value=params.get('name');}
  filter();
  var open=params.get('open');
  if(open&&/^c-\d+-\d+$/.test(open)){
    var c=document.getElementById(open);
    if(c){c.scrollIntoView({block:'center'}); c.click();}
  }
})();
"#;

/// The HTML document of `matrix`, with `problems` (from `verdict`) listed
/// above it.
pub fn render(matrix: &Matrix, problems: &[Problem]) -> String {
    let mut out = String::new();
    let legs: Vec<&str> = matrix.legs.iter().map(|l| l.leg.as_str()).collect();
    let title = format!("reapcheck matrix: {}", legs.join(", "));
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head><body>\n",
        text(&title)
    );
    let _ = writeln!(out, "<h1>{}</h1>", text(&title));
    // The model's cases apart from the databases' (never added together).
    let (mut model, mut targets) = (Counts::default(), Counts::default());
    for (col, cell) in matrix.rows.iter().flat_map(|r| matrix.columns.iter().zip(&r.cells)) {
        if let Some(case) = cell {
            if col.target == "model" { &mut model } else { &mut targets }.add(case.result);
        }
    }
    let _ = writeln!(
        out,
        "<div class=\"counts\" id=\"counts\">targets: {} <small>model: {}</small></div>",
        counts(&targets),
        counts(&model)
    );
    out.push_str("<ul class=\"legs\">\n");
    for l in &matrix.legs {
        let servers: Vec<String> = matrix
            .columns
            .iter()
            .filter(|c| c.leg == l.leg)
            .map(|c| {
                let at = if c.target == c.server { c.target.clone() } else { format!("{} [{}]", c.target, c.server) };
                if c.code.is_empty() { at } else { format!("{at} ran {}", c.code) }
            })
            .collect();
        let interrupted = if l.interrupted { " <strong>interrupted</strong>" } else { "" };
        let _ = writeln!(
            out,
            "<li>leg <b>{}</b>{interrupted}: {}; reapcheck {}, corpus <code>{}</code></li>",
            text(&l.leg),
            text(&servers.join(", ")),
            text(&l.reapcheck_version),
            text(&l.corpus_hash)
        );
    }
    out.push_str("</ul>\n");
    if !problems.is_empty() {
        let _ =
            writeln!(out, "<div class=\"problems\" id=\"problems\"><b>verdict: {} problems</b><ul>", problems.len());
        for p in problems {
            let _ = writeln!(out, "<li>{}</li>", text(&p.message));
        }
        out.push_str("</ul></div>\n");
    }
    out.push_str(
        "<div class=\"bar\"><label>status <select id=\"status\"><option value=\"\">all</option>\
         <option value=\"fail\">FAIL</option><option value=\"divergence\">divergence</option>\
         <option value=\"skipped\">skipped</option><option value=\"pass\">pass</option>\
         <option value=\"new\">new</option></select></label>\
         <label>name <input id=\"name\" type=\"search\" placeholder=\"grace/\"></label></div>\n",
    );
    out.push_str("<div class=\"wrap\"><table id=\"matrix\"><thead><tr><th>scenario</th>");
    // One leg (a `run --report`): its name heads no column.
    let many = matrix.legs.len() > 1;
    for c in &matrix.columns {
        let _ = write!(
            out,
            "<th title=\"{}\">{}{}<br><small>{}</small></th>",
            attr(&if c.code.is_empty() {
                format!("{}: {}", c.leg, counts_plain(&c.counts))
            } else {
                format!("{}: {}; ran {}", c.leg, counts_plain(&c.counts), c.code)
            }),
            if many { format!("{}<br>", text(&c.leg)) } else { String::new() },
            text(&c.target),
            text(&c.server)
        );
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    let mut details = String::new();
    let mut concern: Option<&str> = None;
    for (i, row) in matrix.rows.iter().enumerate() {
        let group = group(row);
        if concern != Some(group) {
            concern = Some(group);
            let _ = writeln!(
                out,
                "<tr class=\"concern\" data-concern=\"{}\"><th colspan=\"{}\">{}</th></tr>",
                attr(group),
                matrix.columns.len() + 1,
                text(group)
            );
        }
        let _ = write!(
            out,
            "<tr class=\"row\" data-scenario=\"{}\" data-concern=\"{}\"><td class=\"name\">{}</td>",
            attr(&row.scenario),
            attr(group),
            text(&row.scenario)
        );
        for (j, (cell, col)) in row.cells.iter().zip(&matrix.columns).enumerate() {
            match cell {
                None => out.push_str("<td class=\"none\"></td>"),
                Some(c) => {
                    let class = class(c.result);
                    let _ = write!(out, "<td class=\"cell {class}\" id=\"c-{i}-{j}\">{}</td>", c.result.label());
                    let _ = writeln!(details, "<div id=\"d-{i}-{j}\">{}</div>", detail(c, &col.leg));
                }
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table></div>\n");
    out.push_str("<div id=\"detail\">click a cell to see its details</div>\n");
    let _ = writeln!(out, "<div id=\"details\" hidden>\n{details}</div>");
    let _ = writeln!(out, "<script>{SCRIPT}</script>\n</body></html>");
    out
}

/// The label the rows of a scenario at the root of the scenarios folder
/// (no folder in its name) are grouped under.
const TOP_LEVEL: &str = "(top level)";

/// The group `row` is shown under: its concern (folder), or [`TOP_LEVEL`]
/// for a scenario without a folder (whose concern the outcome file writes
/// as `-`).
fn group(row: &Row) -> &str {
    if row.scenario.contains('/') { &row.concern } else { TOP_LEVEL }
}

/// The CSS class (and status filter value) of a result.
fn class(result: CaseResult) -> &'static str {
    match result {
        CaseResult::Pass => "pass",
        CaseResult::New => "new",
        CaseResult::Divergence => "divergence",
        CaseResult::Skipped => "skipped",
        CaseResult::Fail => "fail",
    }
}

fn counts(c: &Counts) -> String {
    format!(
        "<span class=\"pass\">{} pass</span><span class=\"new\">{} new</span><span class=\"fail\">{} FAIL</span>\
         <span class=\"divergence\">{} divergence</span><span class=\"skipped\">{} skipped</span>",
        c.pass, c.new, c.fail, c.divergence, c.skipped
    )
}

fn counts_plain(c: &Counts) -> String {
    format!("{} pass, {} new, {} FAIL, {} divergence, {} skipped", c.pass, c.new, c.fail, c.divergence, c.skipped)
}

/// The details shown when a cell is clicked.
fn detail(c: &CaseOutcome, leg: &str) -> String {
    let mut out = format!(
        "<h2>{} on {} <small>(leg {}, {})</small>: {}</h2>",
        text(&c.scenario),
        text(&c.target),
        text(leg),
        text(&c.server),
        c.result.label()
    );
    if let Some(reason) = &c.reason {
        let _ = write!(out, "<p class=\"reason\">{}</p>", text(reason));
    }
    for (label, block) in [("difference", &c.diff), ("SQL trace", &c.trace), ("rerun", &c.rerun)] {
        if let Some(b) = block {
            let body = if label == "difference" { diff_lines(b) } else { text(b).into_owned() };
            let _ = write!(out, "<h3>{label}</h3><pre class=\"{}\">{body}</pre>", label.replace(' ', "-"));
        }
    }
    if let Some(h) = &c.outcome_hash {
        let _ = write!(out, "<p>outcome <code>{}</code></p>", text(h));
    }
    out
}

/// `diff` escaped, with its `-` (expected) lines in `<span class="del">`,
/// its `+` (actual) lines in `<span class="add">` and its `--- `/`+++ `
/// label pair in `<span class="hd">`. The explanation before that pair is
/// left plain (without the pair, every line is judged by its first sign).
fn diff_lines(diff: &str) -> String {
    let lines: Vec<&str> = diff.split_inclusive('\n').collect();
    let head = lines.windows(2).position(|w| w[0].starts_with("--- ") && w[1].starts_with("+++ "));
    let mut out = String::new();
    for (n, line) in lines.iter().enumerate() {
        let class = match head {
            Some(h) if n < h => None,
            Some(h) if n <= h + 1 => Some("hd"),
            _ if line.starts_with('-') => Some("del"),
            _ if line.starts_with('+') => Some("add"),
            _ => None,
        };
        match class {
            Some(class) => {
                let _ = write!(out, "<span class=\"{class}\">{}</span>", text(line));
            }
            None => out.push_str(&text(line)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::matrix::tests::leg;

    #[test]
    fn cells_details_and_filters_are_in_one_escaped_file() {
        use CaseResult::*;
        let l = leg(
            "pg <15>",
            &[
                ("grace/a", "model", Pass, "h"),
                ("grace/a", "postgres", Fail, ""),
                ("time/<b>", "postgres", Skipped, ""),
            ],
        );
        let html = render(&Matrix::new(&[l]), &[]);
        assert_eq!(html.matches("<td class=\"cell ").count(), 3, "{html}");
        assert!(html.contains("<td class=\"cell fail\" id=\"c-0-1\">FAIL</td>"), "{html}");
        assert!(html.contains("<div id=\"d-0-1\">"), "{html}");
        assert!(html.contains("+b &lt;tag&gt;"), "diffs are escaped: {html}");
        assert!(html.contains("time/&lt;b&gt;") && !html.contains("time/<b>"), "{html}");
        assert!(html.contains("pg &lt;15&gt;"), "{html}");
        assert!(html.contains("reapcheck run --db postgres --exact grace/a"), "{html}");
        assert!(!html.contains("http://") && !html.contains("https://"), "no network: {html}");
        assert!(html.contains("<select id=\"status\">") && html.contains("<input id=\"name\""));
        // The header counts the databases' cases apart from the model's.
        assert!(html.contains("targets: <span class=\"pass\">0 pass</span>"), "{html}");
        assert!(html.contains("<small>model: <span class=\"pass\">1 pass</span>"), "{html}");
        // One leg: its name heads no column; with two, every column names its leg.
        assert!(html.contains(">postgres<br><small>postgres 1.0</small></th>"), "{html}");
        let two =
            [leg("pg <15>", &[("grace/a", "postgres", Pass, "h")]), leg("lite", &[("grace/a", "sqlite", Pass, "h")])];
        let html = render(&Matrix::new(&two), &[]);
        assert!(html.contains(">pg &lt;15&gt;<br>postgres<br><small>postgres 1.0</small></th>"), "{html}");
    }

    #[test]
    fn a_scenario_without_a_folder_is_grouped_under_top_level() {
        use CaseResult::*;
        // A user's own `stopped-heartbeat.yaml` at the root of their
        // scenarios folder: its concern in the outcome file is `-`.
        let l = leg("pg", &[("stopped-heartbeat", "model", Pass, "h"), ("grace/a", "model", Pass, "h")]);
        assert_eq!(l.cases[0].concern, "-");
        let html = render(&Matrix::new(&[l]), &[]);
        assert!(
            html.contains("<tr class=\"concern\" data-concern=\"(top level)\"><th colspan=\"2\">(top level)</th></tr>"),
            "{html}"
        );
        assert!(
            html.contains("<tr class=\"row\" data-scenario=\"stopped-heartbeat\" data-concern=\"(top level)\">"),
            "{html}"
        );
        assert!(html.contains("<th colspan=\"2\">grace</th>"), "{html}");
        assert!(!html.contains("<th colspan=\"2\">-</th>"), "{html}");
    }

    #[test]
    fn diff_lines_carry_their_sign_s_class_and_stay_escaped() {
        let diff =
            "expect.status: expected a, got b\n-<x> explained\n--- model\n+++ pg\n same\n-old <a>\n+new & b\n...\n";
        assert_eq!(
            diff_lines(diff),
            "expect.status: expected a, got b\n-&lt;x&gt; explained\n<span class=\"hd\">--- model\n</span>\
             <span class=\"hd\">+++ pg\n</span> same\n<span class=\"del\">-old &lt;a&gt;\n</span>\
             <span class=\"add\">+new &amp; b\n</span>...\n"
        );
        assert_eq!(diff_lines("-a\n+b"), "<span class=\"del\">-a\n</span><span class=\"add\">+b</span>");
        let l = leg("pg", &[("grace/a", "postgres", CaseResult::Fail, "")]);
        let html = render(&Matrix::new(&[l]), &[]);
        assert!(html.contains("<pre class=\"difference\"><span class=\"hd\">--- model\n</span>"), "{html}");
        assert!(html.contains("<span class=\"add\">+b &lt;tag&gt;\n</span>"), "{html}");
    }
}
