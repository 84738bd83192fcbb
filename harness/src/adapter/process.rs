//! An adapter's child process: started with its configured command, fed
//! one request line at a time on stdin, read one reply line at a time on
//! stdout with a time limit, its stderr kept as a bounded tail.
//!
//! The child leads a process group of its own, so that a hung adapter and
//! whatever it started (a shell script's `python3`) are killed together:
//! on a timeout, on [`AdapterProcess::kill`], at the end of
//! [`AdapterProcess::close`] (stdin closed, then up to
//! [`CLOSE_GRACE`] to exit), and when the value is dropped. Tokio reaps a
//! killed child in the background, so none is left a zombie.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use super::protocol::MAX_LINE_BYTES;
use super::spin::SpinRead;

/// How many stderr lines are kept for a failure message.
pub const STDERR_LINES: usize = 40;

/// The longest stderr line kept, in bytes; the rest of it is cut.
const STDERR_LINE_BYTES: usize = 4096;

/// How long [`AdapterProcess::close`] waits for the adapter to exit after
/// its stdin is closed, before it kills it.
pub const CLOSE_GRACE: Duration = Duration::from_secs(2);

/// How to start an adapter.
#[derive(Clone, Debug)]
pub struct Spawn {
    /// The program and its arguments (non-empty).
    pub command: Vec<String>,
    /// The folder it runs in (the folder of `reapcheck.toml`); a relative
    /// program path with a `/` is taken relative to it.
    pub cwd: PathBuf,
    /// Variables added to reapcheck's own environment.
    pub env: Vec<(String, String)>,
    /// The value of `TZ` (the scenario's `app_time_zone`, else `UTC`).
    pub time_zone: String,
}

/// What went wrong with the child process itself.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    /// The command could not be started.
    #[error("cannot start `{command}`: {source}")]
    Start {
        /// The command, as configured, joined by spaces.
        command: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Stdout closed: the process ended (its status, when known within a
    /// moment).
    #[error("{}", ended(.0))]
    Ended(Option<ExitStatus>),
    /// No full line came within the time limit.
    #[error("no reply within {} s (timeout_seconds); the adapter was killed", .0.as_secs())]
    Timeout(Duration),
    /// A line longer than [`MAX_LINE_BYTES`].
    #[error("wrote a line over {MAX_LINE_BYTES} bytes (16 MiB), the protocol's limit; it begins `{0}`")]
    TooLong(String),
    /// A line that is not UTF-8.
    #[error("wrote a line that is not UTF-8: `{0}`")]
    NotUtf8(String),
    /// Writing the request or reading stdout failed.
    #[error("cannot talk to the adapter: {0}")]
    Io(#[from] std::io::Error),
}

fn ended(status: &Option<ExitStatus>) -> String {
    match status.map(|s| (s.code(), signal(&s))) {
        Some((Some(code), _)) => format!("exited with status {code}"),
        Some((None, Some(sig))) => format!("was killed by signal {sig}"),
        _ => "closed its stdout".to_owned(),
    }
}

#[cfg(unix)]
fn signal(status: &ExitStatus) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    status.signal()
}

#[cfg(not(unix))]
fn signal(_status: &ExitStatus) -> Option<i32> {
    None
}

/// The last [`STDERR_LINES`] lines of an adapter's stderr, shared with the
/// task that reads them.
#[derive(Clone, Debug, Default)]
pub struct StderrTail(Arc<Mutex<VecDeque<String>>>);

impl StderrTail {
    fn push(&self, line: String) {
        let mut lines = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if lines.len() == STDERR_LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    /// Forgets every line so far (a new scenario starts).
    pub fn clear(&self) {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clear();
    }

    /// The kept lines, oldest first.
    pub fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).iter().cloned().collect()
    }
}

/// A running adapter.
pub struct AdapterProcess {
    child: Child,
    stdin: Option<ChildStdin>,
    /// Polled for a moment before each sleep ([`SpinRead`]): a reply
    /// often comes within it.
    stdout: BufReader<SpinRead<ChildStdout>>,
    stderr: StderrTail,
    reader: Option<tokio::task::JoinHandle<()>>,
}

impl AdapterProcess {
    /// Starts the adapter with stdin, stdout and stderr piped.
    ///
    /// # Errors
    ///
    /// [`ProcessError::Start`]: the program does not exist or cannot run.
    pub fn spawn(spec: &Spawn) -> Result<AdapterProcess, ProcessError> {
        let shown = spec.command.join(" ");
        let start = |source| ProcessError::Start { command: shown.clone(), source };
        let Some(program) = spec.command.first() else {
            return Err(start(std::io::Error::new(std::io::ErrorKind::InvalidInput, "the command is empty")));
        };
        let mut command = Command::new(program_path(program, &spec.cwd));
        command
            .args(&spec.command[1..])
            .current_dir(&spec.cwd)
            .envs(spec.env.iter().map(|(k, v)| (k, v)))
            .env("TZ", &spec.time_zone)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        #[cfg(unix)]
        command.process_group(0);
        let mut child = command.spawn().map_err(start)?;
        let (Some(stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            unreachable!("stdin, stdout and stderr are piped")
        };
        let tail = StderrTail::default();
        let reader = tokio::spawn(keep_tail(stderr, tail.clone()));
        Ok(AdapterProcess {
            child,
            stdin: Some(stdin),
            stdout: BufReader::new(SpinRead::new(stdout)),
            stderr: tail,
            reader: Some(reader),
        })
    }

    /// The stderr tail (clear it when a scenario starts).
    pub fn stderr(&self) -> &StderrTail {
        &self.stderr
    }

    /// Reads one line from stdout (without its newline) within `limit`.
    /// On a timeout the process group is killed.
    ///
    /// # Errors
    ///
    /// [`ProcessError::Timeout`], [`ProcessError::Ended`] at end of output,
    /// [`ProcessError::TooLong`], [`ProcessError::NotUtf8`].
    pub async fn receive(&mut self, limit: Duration) -> Result<String, ProcessError> {
        self.exchange(&mut Vec::new(), limit).await
    }

    /// Writes `outgoing` (request lines, each ending in a newline) to
    /// stdin while it reads one line from stdout, both within `limit`; the
    /// line, without its newline. What was written is taken off the front
    /// of `outgoing`: a reply that comes before all of it was written
    /// leaves the rest for the next call. So many requests can be written
    /// ahead without a deadlock: no write waits on replies nobody reads,
    /// and no reply waits on a write. On a timeout the process group is
    /// killed.
    ///
    /// # Errors
    ///
    /// [`ProcessError::Timeout`], [`ProcessError::Ended`] at end of output
    /// or when stdin is closed (the adapter ended) with bytes still to
    /// write, [`ProcessError::TooLong`], [`ProcessError::NotUtf8`].
    pub async fn exchange(&mut self, outgoing: &mut Vec<u8>, limit: Duration) -> Result<String, ProcessError> {
        let (stdin, stdout) = (&mut self.stdin, &mut self.stdout);
        let mut written = 0;
        let work = async {
            let read = read_line(stdout);
            tokio::pin!(read);
            loop {
                tokio::select! {
                    biased;
                    w = write_some(stdin, &outgoing[written..]), if written < outgoing.len() => match w {
                        Ok(n) => written += n,
                        Err(e) => return Err(e),
                    },
                    line = &mut read => return line,
                }
            }
        };
        let result = tokio::time::timeout(limit, work).await;
        outgoing.drain(..written);
        match result {
            Err(_) => {
                self.kill().await;
                Err(ProcessError::Timeout(limit))
            }
            Ok(Ok(Some(line))) => Ok(line),
            Ok(Ok(None)) => Err(ProcessError::Ended(self.status_soon().await)),
            Ok(Err(ProcessError::Io(e))) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                Err(ProcessError::Ended(self.status_soon().await))
            }
            Ok(Err(e)) => Err(e),
        }
    }

    /// The exit status if the process ends within a moment (its stdout
    /// closed, so it is on its way out).
    async fn status_soon(&mut self) -> Option<ExitStatus> {
        tokio::time::timeout(Duration::from_millis(500), self.child.wait()).await.ok().and_then(Result::ok)
    }

    /// Kills the adapter's process group, waits for the adapter, and lets
    /// the stderr reader take in the last lines (up to half a second).
    pub async fn kill(&mut self) {
        self.kill_group();
        let _ = self.child.kill().await;
        if let Some(reader) = self.reader.take() {
            let _ = tokio::time::timeout(Duration::from_millis(500), reader).await;
        }
    }

    /// Closes stdin (the adapter's cue to exit), waits up to
    /// [`CLOSE_GRACE`], then kills what is left of its process group.
    /// Returns the exit status when it exited by itself.
    pub async fn close(mut self) -> Option<ExitStatus> {
        drop(self.stdin.take());
        let exited = tokio::time::timeout(CLOSE_GRACE, self.child.wait()).await.ok().and_then(Result::ok);
        self.kill().await;
        exited
    }

    fn kill_group(&self) {
        #[cfg(unix)]
        if let Some(pid) = self.child.id().and_then(|p| i32::try_from(p).ok()) {
            // SAFETY: killpg only sends a signal; the group is the child's
            // own (process_group(0)), led by a process not yet reaped.
            unsafe {
                libc::killpg(pid, libc::SIGKILL);
            }
        }
    }
}

impl Drop for AdapterProcess {
    fn drop(&mut self) {
        self.kill_group();
        if let Some(reader) = &self.reader {
            reader.abort();
        }
    }
}

/// `program` as the child is started with: a relative path with a `/`
/// (`examples/adapters/saq/adapter.py`) is joined to `cwd`; a bare name is
/// looked up on `PATH`.
fn program_path(program: &str, cwd: &Path) -> PathBuf {
    let path = Path::new(program);
    if path.is_relative() && program.contains('/') { cwd.join(path) } else { path.to_owned() }
}

/// One write of (a prefix of) `bytes` to `stdin`: how many went.
///
/// # Errors
///
/// [`ProcessError::Ended`] when stdin is closed; a broken pipe (the
/// adapter ended) as an [`std::io::ErrorKind::BrokenPipe`] I/O error.
async fn write_some(stdin: &mut Option<ChildStdin>, bytes: &[u8]) -> Result<usize, ProcessError> {
    let Some(stdin) = stdin.as_mut() else { return Err(ProcessError::Ended(None)) };
    match stdin.write(bytes).await? {
        0 => Err(std::io::Error::from(std::io::ErrorKind::BrokenPipe).into()),
        n => Ok(n),
    }
}

/// Reads one `\n`-terminated line of at most [`MAX_LINE_BYTES`]; `None` at
/// the end of output before any byte (a last line without a newline is
/// still a line).
async fn read_line<R: tokio::io::AsyncBufRead + Unpin>(reader: &mut R) -> Result<Option<String>, ProcessError> {
    let mut line = Vec::new();
    loop {
        let buf = reader.fill_buf().await?;
        if buf.is_empty() {
            if line.is_empty() {
                return Ok(None);
            }
            break;
        }
        let (take, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        line.extend_from_slice(&buf[..take]);
        reader.consume(take);
        if line.len() > MAX_LINE_BYTES + 1 {
            return Err(ProcessError::TooLong(preview(&line)));
        }
        if done {
            break;
        }
    }
    if line.last() == Some(&b'\n') {
        line.pop();
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    if line.len() > MAX_LINE_BYTES {
        return Err(ProcessError::TooLong(preview(&line)));
    }
    String::from_utf8(line).map(Some).map_err(|e| ProcessError::NotUtf8(preview(e.as_bytes())))
}

/// The first 200 characters of `bytes`, lossily decoded.
fn preview(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(800)]);
    let cut: String = text.chars().take(200).collect();
    if cut.len() < bytes.len() { format!("{cut}...") } else { cut }
}

/// Reads `stderr` until it closes, keeping its last lines in `tail` (each
/// cut at [`STDERR_LINE_BYTES`]).
async fn keep_tail<R: tokio::io::AsyncRead + Unpin>(mut stderr: R, tail: StderrTail) {
    let mut buf = [0u8; 8192];
    let mut line: Vec<u8> = Vec::new();
    let mut cut = false;
    loop {
        let n = match stderr.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        for &b in &buf[..n] {
            if b == b'\n' {
                tail.push(finish(&mut line, cut));
                cut = false;
            } else if line.len() < STDERR_LINE_BYTES {
                line.push(b);
            } else {
                cut = true;
            }
        }
    }
    if !line.is_empty() {
        tail.push(finish(&mut line, cut));
    }
}

fn finish(line: &mut Vec<u8>, cut: bool) -> String {
    let mut text = String::from_utf8_lossy(line).trim_end_matches('\r').to_owned();
    if cut {
        text.push_str(" [cut]");
    }
    line.clear();
    text
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn sh(script: &str) -> Spawn {
        Spawn {
            command: vec!["sh".into(), "-c".into(), script.into()],
            cwd: std::env::temp_dir(),
            env: vec![("RC_TEST_VALUE".into(), "from-config".into())],
            time_zone: "America/New_York".into(),
        }
    }

    #[tokio::test]
    async fn a_line_goes_in_and_a_line_comes_out_with_env_and_tz() {
        let mut p = AdapterProcess::spawn(&sh("read l; echo \"$l $RC_TEST_VALUE $TZ\"; echo oops >&2")).unwrap();
        let mut outgoing = b"hello\n".to_vec();
        let line = p.exchange(&mut outgoing, Duration::from_secs(10)).await.unwrap();
        assert_eq!(line, "hello from-config America/New_York");
        let status = p.close().await;
        assert_eq!(status.and_then(|s| s.code()), Some(0));
    }

    #[tokio::test]
    async fn requests_written_ahead_past_the_pipes_do_not_wait_on_replies_nobody_reads() {
        // `cat` answers each line at once. 4 MiB of lines written before
        // any reply is read would fill both pipes (64 KiB each here) and
        // leave each side waiting on the other.
        let mut p = AdapterProcess::spawn(&sh("exec cat")).unwrap();
        let lines = 40_000;
        let mut outgoing = Vec::new();
        for i in 0..lines {
            outgoing.extend_from_slice(format!("{i:0>100}\n").as_bytes());
        }
        for i in 0..lines {
            let line = p.exchange(&mut outgoing, Duration::from_secs(120)).await.unwrap();
            assert_eq!(line, format!("{i:0>100}"));
        }
        assert!(outgoing.is_empty());
        p.kill().await;
    }

    #[tokio::test]
    async fn stderr_keeps_only_the_last_lines() {
        let mut p =
            AdapterProcess::spawn(&sh("i=0; while [ $i -lt 100 ]; do echo line$i >&2; i=$((i+1)); done; echo done"))
                .unwrap();
        assert_eq!(p.receive(Duration::from_secs(10)).await.unwrap(), "done");
        assert!(matches!(p.receive(Duration::from_secs(10)).await, Err(ProcessError::Ended(_))));
        p.kill().await;
        let lines = p.stderr().lines();
        assert_eq!(lines.len(), STDERR_LINES);
        assert_eq!((lines[0].as_str(), lines[39].as_str()), ("line60", "line99"));
        p.stderr().clear();
        assert!(p.stderr().lines().is_empty());
    }

    #[tokio::test]
    async fn a_silent_adapter_times_out_and_its_group_is_killed() {
        // The shell starts a child that would outlive it; the group kill ends both.
        let mut p = AdapterProcess::spawn(&sh("sleep 300 & echo $!; wait")).unwrap();
        let grandchild: i32 = p.receive(Duration::from_secs(10)).await.unwrap().parse().unwrap();
        let e = p.receive(Duration::from_millis(200)).await.unwrap_err();
        assert!(matches!(e, ProcessError::Timeout(_)), "{e}");
        assert!(e.to_string().contains("killed"), "{e}");
        let mut gone = false;
        for _ in 0..200 {
            // SAFETY: signal 0 only checks that the process exists.
            let alive = unsafe { libc::kill(grandchild, 0) } == 0;
            let zombie = std::fs::read_to_string(format!("/proc/{grandchild}/stat"))
                .map(|s| s.split_whitespace().nth(2) == Some("Z"))
                .unwrap_or(true);
            if !alive || zombie {
                gone = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(gone, "the adapter's own child {grandchild} survived the kill");
    }

    #[tokio::test]
    async fn an_exit_says_its_status_and_a_missing_program_cannot_start() {
        let mut p = AdapterProcess::spawn(&sh("exit 3")).unwrap();
        let e = p.receive(Duration::from_secs(10)).await.unwrap_err();
        assert_eq!(e.to_string(), "exited with status 3");
        let missing = Spawn { command: vec!["./no-such-adapter".into()], ..sh("") };
        let e = AdapterProcess::spawn(&missing).err().expect("cannot start");
        assert!(e.to_string().starts_with("cannot start `./no-such-adapter`"), "{e}");
    }

    #[tokio::test]
    async fn a_line_over_the_limit_is_refused() {
        let mut reader = BufReader::new(std::io::Cursor::new(vec![b'x'; MAX_LINE_BYTES + 10]));
        let e = read_line(&mut reader).await.unwrap_err();
        assert!(matches!(e, ProcessError::TooLong(_)), "{e}");
        let mut exact = vec![b'y'; MAX_LINE_BYTES];
        exact.push(b'\n');
        let mut reader = BufReader::new(std::io::Cursor::new(exact));
        assert_eq!(read_line(&mut reader).await.unwrap().map(|l| l.len()), Some(MAX_LINE_BYTES));
        assert_eq!(read_line(&mut reader).await.unwrap(), None);
    }

    #[tokio::test]
    async fn close_kills_an_adapter_that_ignores_the_end_of_its_input() {
        let p = AdapterProcess::spawn(&sh("trap '' TERM; while :; do sleep 1; done")).unwrap();
        assert_eq!(p.close().await, None, "it never exited by itself, so it was killed");
        let p = AdapterProcess::spawn(&sh("cat >/dev/null; exit 0")).unwrap();
        assert_eq!(p.close().await.and_then(|s| s.code()), Some(0), "it exits at the end of its input");
    }
}
