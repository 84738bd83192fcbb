//! Whether a scan's plan reads more than the stale rows: the whole table,
//! a whole index, or every processing row (an index used for `status`
//! alone, with the staleness comparison left as a filter on each row).
//! A reaper's scan that does any of these grows with the table, or with
//! the number of live jobs, instead of with the number of dead ones.
//!
//! Read from each product's plan text:
//! - PostgreSQL `EXPLAIN`: a `Seq Scan`; an index scan with no `Index
//!   Cond`, or whose `Index Cond` has no `<` (the staleness comparison).
//! - SQLite `EXPLAIN QUERY PLAN`: `SCAN jobs` (the table or a whole
//!   index); `SEARCH jobs USING ... INDEX` whose constraint has no `<`.
//! - MySQL and MariaDB (the summary of `crate::backend::summarise_json`):
//!   `access_type ALL` or `index`; any other access whose key parts are
//!   only `status` and `queue`.
//!
//! These are rules over plan text, not a proof: the growth ratio is the
//! measurement, and a flag says which line to look at.

/// A plan line that shows the scan reads too much.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Flag {
    /// The plan line, as the database printed it (trimmed).
    pub line: String,
    /// What it reads: `the whole table`, `a whole index`, `every
    /// processing row`.
    pub reads: &'static str,
}

/// The product a plan came from, by how its plan reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Planner {
    /// PostgreSQL and CockroachDB `EXPLAIN` text.
    Postgres,
    /// SQLite `EXPLAIN QUERY PLAN`.
    Sqlite,
    /// MySQL and MariaDB, summarised JSON.
    MySql,
    /// A product whose plan is not read (SQL Server).
    Unread,
}

/// The lines of `plan` that show the scan reads too much (module docs).
pub fn judge(planner: Planner, plan: &[String]) -> Vec<Flag> {
    match planner {
        Planner::Postgres => postgres(plan),
        Planner::Sqlite => sqlite(plan),
        Planner::MySql => mysql(plan),
        Planner::Unread => Vec::new(),
    }
}

fn flag(line: &str, reads: &'static str) -> Flag {
    Flag { line: line.trim().to_owned(), reads }
}

fn postgres(plan: &[String]) -> Vec<Flag> {
    let mut flags = Vec::new();
    for (i, line) in plan.iter().enumerate() {
        if line.contains("Seq Scan") {
            flags.push(flag(line, "the whole table"));
        } else if line.contains("Index Scan") || line.contains("Index Only Scan") {
            // The node's details: the lines after it up to the next node.
            let details = plan[i + 1..].iter().take_while(|l| !l.contains("->"));
            let conds: Vec<&String> = details.filter(|l| l.trim_start().starts_with("Index Cond:")).collect();
            if conds.is_empty() {
                flags.push(flag(line, "a whole index"));
            } else if !conds.iter().any(|c| c.contains('<')) {
                flags.push(flag(line, "every processing row"));
            }
        }
    }
    flags
}

fn sqlite(plan: &[String]) -> Vec<Flag> {
    let mut flags = Vec::new();
    for line in plan {
        let l = line.trim();
        if l.starts_with("SCAN ") && !l.contains("CONSTANT ROW") {
            flags.push(flag(l, if l.contains("INDEX") { "a whole index" } else { "the whole table" }));
        } else if l.starts_with("SEARCH ") && l.contains("INDEX") && !l.contains('<') && !l.contains('>') {
            flags.push(flag(l, "every processing row"));
        }
    }
    flags
}

fn mysql(plan: &[String]) -> Vec<Flag> {
    let mut flags = Vec::new();
    for line in plan {
        let field = |key: &str| line.split(", ").find_map(|part| part.strip_prefix(key).map(|v| v.trim().to_owned()));
        let Some(access) =
            line.split_once("access_type ").map(|(_, rest)| rest.split(',').next().unwrap_or("").trim().to_owned())
        else {
            continue;
        };
        match access.as_str() {
            "ALL" => flags.push(flag(line, "the whole table")),
            "index" => flags.push(flag(line, "a whole index")),
            _ => {
                let parts = field("used_key_parts ").unwrap_or_default();
                let names: Vec<&str> =
                    parts.trim_matches(|c| c == '[' || c == ']').split(',').map(|p| p.trim_matches('"')).collect();
                if names.iter().all(|n| matches!(*n, "status" | "queue" | "")) {
                    flags.push(flag(line, "every processing row"));
                }
            }
        }
    }
    flags
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_owned).collect()
    }

    #[test]
    fn postgres_flags_a_seq_scan_and_an_index_used_for_status_alone() {
        let good = lines(
            "Sort  (cost=1.1..1.2 rows=1 width=64)\n  Sort Key: id COLLATE \"C\"\n  ->  Index Scan using jobs_stale on jobs  (cost=0.29..8.3 rows=1 width=64)\n        Index Cond: (COALESCE(heartbeat_at, updated_at) < ($1 - '00:00:30'::interval))\n        Filter: (($2 = 1) OR (queue = ANY (string_to_array($3, ','::text))))",
        );
        assert!(judge(Planner::Postgres, &good).is_empty());
        let seq = lines(
            "Sort\n  ->  Seq Scan on jobs  (cost=0.00..2.0 rows=1 width=64)\n        Filter: (status = 'processing'::text)",
        );
        assert_eq!(
            judge(Planner::Postgres, &seq),
            [flag("->  Seq Scan on jobs  (cost=0.00..2.0 rows=1 width=64)", "the whole table")]
        );
        let status_only = lines(
            "Sort\n  ->  Bitmap Heap Scan on jobs\n        Recheck Cond: (status = 'processing'::text)\n        ->  Bitmap Index Scan on jobs_reap\n              Index Cond: (status = 'processing'::text)",
        );
        assert_eq!(judge(Planner::Postgres, &status_only)[0].reads, "every processing row");
        let whole_index = lines(
            "Index Scan using jobs_pkey on jobs\n  Filter: ((status = 'processing'::text) AND (COALESCE(heartbeat_at, updated_at) < $1))",
        );
        assert_eq!(judge(Planner::Postgres, &whole_index)[0].reads, "a whole index");
    }

    #[test]
    fn sqlite_flags_a_scan_and_a_search_on_status_alone() {
        assert!(
            judge(
                Planner::Sqlite,
                &lines("SEARCH jobs USING INDEX jobs_stale (<expr><?)\nUSE TEMP B-TREE FOR ORDER BY")
            )
            .is_empty()
        );
        assert_eq!(judge(Planner::Sqlite, &lines("SCAN jobs"))[0].reads, "the whole table");
        assert_eq!(
            judge(Planner::Sqlite, &lines("SCAN jobs USING INDEX sqlite_autoindex_jobs_1"))[0].reads,
            "a whole index"
        );
        assert_eq!(
            judge(Planner::Sqlite, &lines("SEARCH jobs USING INDEX jobs_reap (status=?)"))[0].reads,
            "every processing row"
        );
    }

    #[test]
    fn mysql_flags_a_full_read_and_a_key_on_status_alone() {
        let good =
            lines(r#"table jobs: access_type range, key jobs_stale, used_key_parts ["status","last_seen"], rows 1000"#);
        assert!(judge(Planner::MySql, &good).is_empty());
        let all = lines("table jobs: access_type ALL, rows 1000000");
        assert_eq!(judge(Planner::MySql, &all)[0].reads, "the whole table");
        let pk = lines("table jobs: access_type index, key PRIMARY, rows 1000000");
        assert_eq!(judge(Planner::MySql, &pk)[0].reads, "a whole index");
        let status = lines(r#"table jobs: access_type ref, key jobs_reap, used_key_parts ["status"], rows 10000"#);
        assert_eq!(judge(Planner::MySql, &status)[0].reads, "every processing row");
        assert!(judge(Planner::Unread, &all).is_empty());
    }
}
