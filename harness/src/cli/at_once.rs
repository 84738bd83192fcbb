//! Targets at once, for `run`, `fuzz` and `race`: each target's work runs
//! beside the others' when they are different servers, and one after
//! another, in target order, when they share one (the same
//! `REAPCHECK_<TARGET>_URL`: `mysql` and `mariadb`, or `postgres` and
//! `cockroach`, pointed at one server, whose catalogs would otherwise show
//! each other's namespaces in flight as left behind). SQLite is embedded,
//! so always a server of its own.
//!
//! Output stays grouped per target and in target order whatever finishes
//! first: each target writes its lines to its own [`Out`] of one [`Board`];
//! the first target not yet done prints live, the others' lines wait in
//! their buffer until every target before them is done.

use std::future::Future;
use std::sync::Mutex;

use futures_util::future::join_all;

use reapcheck::target::Target;

/// The server `target` runs on, as far as running at once is concerned:
/// `Some(url)` when `REAPCHECK_<TARGET>_URL` names one, `None` for a
/// server of its own (SQLite, or a target without a URL: a container of
/// its own, or not run at all).
pub fn server_of(target: Target) -> Option<String> {
    if target == Target::Sqlite {
        return None;
    }
    server_key(target, std::env::var(target.url_variable()).ok().as_deref())
}

/// [`server_of`] of each target, in their order: what [`run`] and
/// [`run_blocking`] take.
pub fn servers(targets: impl IntoIterator<Item = Target>) -> Vec<Option<String>> {
    targets.into_iter().map(server_of).collect()
}

/// [`server_of`] with the variable's value given: a blank URL names no
/// server, and SQLite never shares one.
pub fn server_key(target: Target, url: Option<&str>) -> Option<String> {
    let url = url.map(str::trim).filter(|u| !u.is_empty())?;
    (target != Target::Sqlite).then(|| url.to_owned())
}

/// The runs that go one after another: indices into `servers` (one entry
/// per target, in target order), each group in target order, the groups
/// ordered by their first target. `None` is a server of its own.
fn groups(servers: &[Option<String>]) -> Vec<Vec<usize>> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (i, server) in servers.iter().enumerate() {
        let shared = server.as_ref().and_then(|s| groups.iter().position(|g| servers[g[0]].as_ref() == Some(s)));
        match shared {
            Some(g) => groups[g].push(i),
            None => groups.push(vec![i]),
        }
    }
    groups
}

/// Where the targets' lines go: printed in target order, each target's
/// lines together.
pub struct Board<'p> {
    state: Mutex<State>,
    print: Box<dyn Fn(&str) + Send + Sync + 'p>,
}

struct State {
    /// The first target not done: its lines are printed as they come.
    head: usize,
    /// Lines of targets after the head, not printed yet.
    waiting: Vec<String>,
    done: Vec<bool>,
}

impl<'p> Board<'p> {
    /// A board for `targets` targets whose text goes to `print` (for
    /// example `print!` under a progress bar's `suspend`).
    pub fn new(targets: usize, print: impl Fn(&str) + Send + Sync + 'p) -> Board<'p> {
        let state = State { head: 0, waiting: vec![String::new(); targets], done: vec![false; targets] };
        Board { state: Mutex::new(state), print: Box::new(print) }
    }

    /// The output of target `index` (in target order).
    pub fn out(&self, index: usize) -> Out<'_, 'p> {
        Out { board: self, index }
    }

    fn write(&self, index: usize, text: &str) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if index == state.head {
            (self.print)(text);
        } else {
            state.waiting[index].push_str(text);
        }
    }

    /// Marks target `index` done: the next targets' waiting lines are
    /// printed, up to the first one still running.
    fn finish(&self, index: usize) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.done[index] = true;
        while state.head < state.done.len() && state.done[state.head] {
            state.head += 1;
            let head = state.head;
            if let Some(text) = state.waiting.get_mut(head).map(std::mem::take)
                && !text.is_empty()
            {
                (self.print)(&text);
            }
        }
    }
}

/// One target's output on a [`Board`].
#[derive(Clone, Copy)]
pub struct Out<'b, 'p> {
    board: &'b Board<'p>,
    index: usize,
}

impl Out<'_, '_> {
    /// Writes `text` as it is (lines end with their own `\n`).
    pub fn print(&self, text: &str) {
        if !text.is_empty() {
            self.board.write(self.index, text);
        }
    }

    /// Writes one line.
    pub fn line(&self, line: impl AsRef<str>) {
        self.print(&format!("{}\n", line.as_ref()));
    }
}

/// Awaits `runs` (one per target, in the order of `servers`, whose entry
/// is each target's [`server_of`]): runs of different servers at once,
/// runs of one server one after another in target order. Run `i` writes to
/// `board.out(i)`; it is marked done on `board` when it ends. Returns the
/// runs' results in target order.
pub async fn run<T, F: Future<Output = T>>(board: &Board<'_>, servers: &[Option<String>], runs: Vec<F>) -> Vec<T> {
    assert_eq!(servers.len(), runs.len(), "one server per run");
    let mut runs: Vec<Option<F>> = runs.into_iter().map(Some).collect();
    let groups = groups(servers).into_iter().map(|group| {
        let runs: Vec<(usize, F)> = group.into_iter().map(|i| (i, runs[i].take().expect("in one group"))).collect();
        async move {
            let mut results = Vec::with_capacity(runs.len());
            for (i, run) in runs {
                results.push((i, run.await));
                board.finish(i);
            }
            results
        }
    });
    in_order(join_all(groups).await.into_iter().flatten(), servers.len())
}

/// [`run`] for work that blocks its thread (`fuzz`: proptest's runner is
/// synchronous): each group of one server on a thread of its own.
pub fn run_blocking<T: Send, F: FnOnce() -> T + Send>(
    board: &Board<'_>,
    servers: &[Option<String>],
    runs: Vec<F>,
) -> Vec<T> {
    assert_eq!(servers.len(), runs.len(), "one server per run");
    let mut runs: Vec<Option<F>> = runs.into_iter().map(Some).collect();
    let groups: Vec<Vec<(usize, F)>> = groups(servers)
        .into_iter()
        .map(|group| group.into_iter().map(|i| (i, runs[i].take().expect("in one group"))).collect())
        .collect();
    let results = std::thread::scope(|scope| {
        let threads: Vec<_> = groups
            .into_iter()
            .map(|group| {
                scope.spawn(move || {
                    let mut results = Vec::with_capacity(group.len());
                    for (i, run) in group {
                        results.push((i, run()));
                        board.finish(i);
                    }
                    results
                })
            })
            .collect();
        let joined = threads.into_iter().map(|t| t.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)));
        joined.collect::<Vec<_>>()
    });
    in_order(results.into_iter().flatten(), servers.len())
}

/// The results, indexed by target, in target order.
fn in_order<T>(results: impl Iterator<Item = (usize, T)>, len: usize) -> Vec<T> {
    let mut slots: Vec<Option<T>> = (0..len).map(|_| None).collect();
    for (i, result) in results {
        slots[i] = Some(result);
    }
    slots.into_iter().map(|r| r.expect("every run ran")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::pin::pin;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::task::{Context, Poll, Waker};

    fn url(s: &str) -> Option<String> {
        Some(s.to_owned())
    }

    /// A run that records its start, then waits until `gate` opens (polled
    /// by hand, so no waker is needed), writes two lines and ends.
    async fn gated(out: Out<'_, '_>, name: &str, started: &AtomicUsize, gate: &AtomicBool) -> String {
        started.fetch_add(1, Ordering::SeqCst);
        out.line(format!("{name} 1"));
        std::future::poll_fn(|_| if gate.load(Ordering::SeqCst) { Poll::Ready(()) } else { Poll::Pending }).await;
        out.line(format!("{name} 2"));
        name.to_owned()
    }

    fn poll_once<F: Future>(f: std::pin::Pin<&mut F>) -> Poll<F::Output> {
        f.poll(&mut Context::from_waker(Waker::noop()))
    }

    #[test]
    fn same_url_is_one_server_and_sqlite_or_no_url_a_server_of_its_own() {
        let pg = "postgres://postgres@127.0.0.1:5432/test";
        assert_eq!(server_key(Target::Postgres, Some(pg)), url(pg));
        assert_eq!(server_key(Target::Cockroach, Some(&format!(" {pg} "))), url(pg));
        assert_eq!(server_key(Target::Mariadb, Some("  ")), None);
        assert_eq!(server_key(Target::Mysql, None), None);
        assert_eq!(server_key(Target::Sqlite, Some(pg)), None);
        assert_eq!(server_of(Target::Sqlite), None);
    }

    #[test]
    fn targets_of_one_url_are_grouped_in_target_order_and_the_others_alone() {
        let servers = [None, url("my"), url("pg"), None, url("my"), url("pg"), url("ms")];
        assert_eq!(groups(&servers), vec![vec![0], vec![1, 4], vec![2, 5], vec![3], vec![6]]);
        assert_eq!(groups(&[]), Vec::<Vec<usize>>::new());
    }

    #[test]
    fn runs_of_different_servers_are_in_flight_at_once() {
        let printed = Mutex::new(String::new());
        let board = Board::new(3, |t| printed.lock().unwrap().push_str(t));
        let (started, gate) = (AtomicUsize::new(0), AtomicBool::new(false));
        let runs = ["sqlite", "postgres", "mariadb"];
        let runs = runs.iter().enumerate().map(|(i, name)| gated(board.out(i), name, &started, &gate)).collect();
        let servers = [None, url("pg"), url("my")];
        let mut all = pin!(run(&board, &servers, runs));
        assert!(poll_once(all.as_mut()).is_pending());
        // One poll started all three: each waits on the gate, none has ended.
        assert_eq!(started.load(Ordering::SeqCst), 3);
        gate.store(true, Ordering::SeqCst);
        let Poll::Ready(results) = poll_once(all.as_mut()) else { panic!("the gate is open") };
        assert_eq!(results, ["sqlite", "postgres", "mariadb"]);
    }

    #[test]
    fn runs_of_one_url_go_one_after_another_in_target_order() {
        let printed = Mutex::new(String::new());
        let board = Board::new(3, |t| printed.lock().unwrap().push_str(t));
        let (started, gates) = (AtomicUsize::new(0), [AtomicBool::new(false), AtomicBool::new(false)]);
        let other = AtomicBool::new(true);
        let runs = vec![
            gated(board.out(0), "mysql", &started, &gates[0]),
            gated(board.out(1), "sqlite", &started, &other),
            gated(board.out(2), "mariadb", &started, &gates[1]),
        ];
        let servers = [url("my"), None, url("my")];
        let mut all = pin!(run(&board, &servers, runs));
        assert!(poll_once(all.as_mut()).is_pending());
        // mysql and sqlite started; mariadb waits for mysql, on its server.
        assert_eq!(started.load(Ordering::SeqCst), 2);
        assert!(poll_once(all.as_mut()).is_pending());
        assert_eq!(started.load(Ordering::SeqCst), 2);
        gates[0].store(true, Ordering::SeqCst);
        assert!(poll_once(all.as_mut()).is_pending());
        assert_eq!(started.load(Ordering::SeqCst), 3, "mariadb starts once mysql ended");
        gates[1].store(true, Ordering::SeqCst);
        let Poll::Ready(results) = poll_once(all.as_mut()) else { panic!("every gate is open") };
        assert_eq!(results, ["mysql", "sqlite", "mariadb"]);
        assert_eq!(*printed.lock().unwrap(), "mysql 1\nmysql 2\nsqlite 1\nsqlite 2\nmariadb 1\nmariadb 2\n");
    }

    #[test]
    fn output_is_grouped_in_target_order_whatever_finishes_first_and_the_first_prints_live() {
        let printed = Mutex::new(String::new());
        let board = Board::new(3, |t| printed.lock().unwrap().push_str(t));
        let started = AtomicUsize::new(0);
        let gates = [AtomicBool::new(false), AtomicBool::new(false), AtomicBool::new(false)];
        let runs = vec![
            gated(board.out(0), "sqlite", &started, &gates[0]),
            gated(board.out(1), "postgres", &started, &gates[1]),
            gated(board.out(2), "mariadb", &started, &gates[2]),
        ];
        let servers = [None, url("pg"), url("my")];
        let mut all = pin!(run(&board, &servers, runs));
        assert!(poll_once(all.as_mut()).is_pending());
        assert_eq!(*printed.lock().unwrap(), "sqlite 1\n", "the first target prints live, the others wait");
        // The last finishes first, then the first: the second's lines follow
        // the first's, the last's wait for the second.
        gates[2].store(true, Ordering::SeqCst);
        assert!(poll_once(all.as_mut()).is_pending());
        assert_eq!(*printed.lock().unwrap(), "sqlite 1\n");
        gates[0].store(true, Ordering::SeqCst);
        assert!(poll_once(all.as_mut()).is_pending());
        assert_eq!(*printed.lock().unwrap(), "sqlite 1\nsqlite 2\npostgres 1\n");
        gates[1].store(true, Ordering::SeqCst);
        let Poll::Ready(results) = poll_once(all.as_mut()) else { panic!("every gate is open") };
        assert_eq!(results, ["sqlite", "postgres", "mariadb"]);
        assert_eq!(*printed.lock().unwrap(), "sqlite 1\nsqlite 2\npostgres 1\npostgres 2\nmariadb 1\nmariadb 2\n");
    }

    #[test]
    fn blocking_runs_of_different_servers_overlap_and_of_one_server_do_not() {
        let printed = Mutex::new(String::new());
        let board = Board::new(3, |t| printed.lock().unwrap().push_str(t));
        // mysql ends only once sqlite has started, which only a thread of
        // its own allows (the wait is a guard against a hang, not a bound:
        // sqlite sends as soon as it starts). mariadb shares mysql's server,
        // so it must start after mysql ended.
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let mysql_done = AtomicBool::new(false);
        let (mysql, mariadb, sqlite) = (board.out(0), board.out(1), board.out(2));
        let done = &mysql_done;
        let runs: Vec<Box<dyn FnOnce() -> String + Send + '_>> = vec![
            Box::new(move || {
                let overlapped = rx.recv_timeout(std::time::Duration::from_secs(120)).is_ok();
                mysql.line("mysql");
                done.store(true, Ordering::SeqCst);
                format!("mysql overlapped sqlite: {overlapped}")
            }),
            Box::new(move || {
                mariadb.line("mariadb");
                format!("mariadb after mysql: {}", done.load(Ordering::SeqCst))
            }),
            Box::new(move || {
                tx.send(()).expect("mysql waits");
                sqlite.line("sqlite");
                "sqlite".to_owned()
            }),
        ];
        let results = run_blocking(&board, &[url("my"), url("my"), None], runs);
        assert_eq!(results, ["mysql overlapped sqlite: true", "mariadb after mysql: true", "sqlite"]);
        assert_eq!(*printed.lock().unwrap(), "mysql\nmariadb\nsqlite\n");
    }
}
