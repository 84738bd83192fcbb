//! A pipe read that polls for a moment before it sleeps.
//!
//! reapcheck and an adapter take turns: a request goes one way, its reply
//! comes back a few microseconds of work later. When the reader sleeps in
//! the runtime's `epoll_wait` meanwhile, every turn pays a wake-up of a
//! process on another CPU, which on a virtual machine is a trip through
//! the host, longer than a small SQLite scenario's turn: those wake-ups
//! were most of what the adapter target added to SQL mode (README,
//! Performance: `bench --compare --adapter --db sqlite` before and after).
//!
//! [`SpinRead`] wraps a non-blocking pipe: when the inner read is pending
//! (so the runtime will wake the task when data comes, as usual), it
//! retries the `read` system call itself for up to [`SPIN`], yielding the
//! CPU between tries (`sched_yield`, so an adapter sharing the CPU still
//! runs), and returns what came. Past [`SPIN`] the task sleeps as before.
//! At most [`SPIN`] of CPU is spent per wait that would have slept, and no
//! wait is longer for it: the data that comes while it spins is returned
//! at once, and a later wake-up of the task finds nothing and sleeps
//! again (the runtime's edge-triggered readiness is only ever stale
//! towards "ready", which costs one empty read). The poll runs inside
//! `poll_read`, so it holds the runtime's thread for up to [`SPIN`] a
//! wait: another task on that thread (an adapter's stderr reader, a
//! signal) waits that long at most.
//!
//! Off Unix it is the inner reader unchanged.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, ReadBuf};

/// How long a read polls before it sleeps (200 microseconds of wall
/// time): longer than a reply to a SQLite request or the client's judging
/// between two scenarios takes on a 2-CPU machine, far shorter than a
/// scenario. Of 50, 200 and 1,000 microseconds, 200 gave the lowest
/// per-scenario ratio of `bench --compare --adapter --db sqlite` on the
/// machine of README's Performance section.
pub const SPIN: Duration = Duration::from_micros(200);

/// A reader that polls its pipe for up to [`SPIN`] before it sleeps; see
/// the module's documentation.
pub struct SpinRead<R> {
    inner: R,
    spin: Duration,
}

impl<R> SpinRead<R> {
    /// `inner`, polled for up to [`SPIN`] before each sleep.
    pub fn new(inner: R) -> SpinRead<R> {
        SpinRead { inner, spin: SPIN }
    }

    /// `inner`, polled for up to `spin` (zero: never).
    pub fn with_spin(inner: R, spin: Duration) -> SpinRead<R> {
        SpinRead { inner, spin }
    }

    /// The reader inside.
    pub fn get_ref(&self) -> &R {
        &self.inner
    }
}

#[cfg(unix)]
impl<R: AsyncRead + std::os::fd::AsRawFd + Unpin> AsyncRead for SpinRead<R> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Pending if !this.spin.is_zero() => poll_fd(this.inner.as_raw_fd(), buf, this.spin),
            other => other,
        }
    }
}

#[cfg(not(unix))]
impl<R: AsyncRead + Unpin> AsyncRead for SpinRead<R> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

/// Retries `read(fd)` into `buf` for up to `spin`: ready with what came
/// (nothing at the end of the input), or pending when nothing did (the
/// task is registered for a wake-up by the inner read that was pending).
#[cfg(unix)]
fn poll_fd(fd: std::os::fd::RawFd, buf: &mut ReadBuf<'_>, spin: Duration) -> Poll<std::io::Result<()>> {
    let started = std::time::Instant::now();
    loop {
        let free = buf.initialize_unfilled();
        // SAFETY: `free` is initialized memory of `free.len()` bytes that
        // nothing else borrows; `read` writes at most that many into it.
        let n = unsafe { libc::read(fd, free.as_mut_ptr().cast(), free.len()) };
        if n >= 0 {
            buf.advance(n.unsigned_abs());
            return Poll::Ready(Ok(()));
        }
        let error = std::io::Error::last_os_error();
        match error.kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted => {}
            _ => return Poll::Ready(Err(error)),
        }
        if started.elapsed() >= spin {
            return Poll::Pending;
        }
        std::thread::yield_now();
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Polls `reader` once with a waker that does nothing: what a single
    /// turn of the task gets, before any wake-up of the runtime.
    fn poll_once<R: AsyncRead + Unpin>(reader: &mut R, buf: &mut [u8]) -> Poll<std::io::Result<usize>> {
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let mut read = ReadBuf::new(buf);
        Pin::new(reader).poll_read(&mut cx, &mut read).map_ok(|()| read.filled().len())
    }

    /// A thread of its own writes `bytes` to `tx` after `after`.
    fn write_later(
        tx: tokio::net::unix::pipe::Sender,
        after: Duration,
        bytes: &'static [u8],
    ) -> std::thread::JoinHandle<()> {
        let file = std::fs::File::from(tx.into_blocking_fd().unwrap());
        std::thread::spawn(move || {
            std::thread::sleep(after);
            std::io::Write::write_all(&mut &file, bytes).unwrap();
        })
    }

    #[tokio::test(flavor = "current_thread")]
    async fn what_comes_while_it_spins_is_returned_in_the_same_turn() {
        let (tx, rx) = tokio::net::unix::pipe::pipe().unwrap();
        let writer = write_later(tx, Duration::from_millis(20), b"x");
        let mut reader = SpinRead::with_spin(rx, Duration::from_secs(30));
        let mut byte = [0u8; 1];
        assert!(matches!(poll_once(&mut reader, &mut byte), Poll::Ready(Ok(1))), "the spin did not see the byte");
        assert_eq!(byte[0], b'x');
        writer.join().unwrap();
        let mut rest = Vec::new();
        reader.read_to_end(&mut rest).await.unwrap();
        assert!(rest.is_empty(), "the end of the input reads as the end: {rest:?}");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn without_a_spin_the_same_turn_is_pending() {
        let (tx, rx) = tokio::net::unix::pipe::pipe().unwrap();
        let mut reader = SpinRead::with_spin(rx, Duration::ZERO);
        let mut byte = [0u8; 1];
        assert!(poll_once(&mut reader, &mut byte).is_pending());
        write_later(tx, Duration::ZERO, b"y").join().unwrap();
        assert_eq!(reader.read(&mut byte).await.unwrap(), 1, "the runtime's wake-up reads it");
        assert_eq!(byte[0], b'y');
    }

    #[tokio::test(flavor = "current_thread")]
    async fn past_its_spin_a_read_sleeps_and_the_runtime_wakes_it() {
        let (mut tx, rx) = tokio::net::unix::pipe::pipe().unwrap();
        let mut reader = SpinRead::with_spin(rx, Duration::from_micros(1));
        let writes = async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            tx.write_all(b"late\n").await.unwrap();
            drop(tx);
        };
        let mut got = Vec::new();
        let (read, ()) = tokio::join!(reader.read_to_end(&mut got), writes);
        read.unwrap();
        assert_eq!(got, b"late\n");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn an_error_of_the_read_is_returned() {
        let (tx, rx) = tokio::net::unix::pipe::pipe().unwrap();
        drop(tx);
        // A closed pipe reads as its end, through the inner read.
        let mut reader = SpinRead::new(rx);
        let mut got = Vec::new();
        assert_eq!(reader.read_to_end(&mut got).await.unwrap(), 0);
        // A descriptor that is not open is an error of the spin's read.
        let mut buf = [0u8; 4];
        let mut read = ReadBuf::new(&mut buf);
        match poll_fd(-1, &mut read, Duration::from_millis(1)) {
            Poll::Ready(Err(e)) => assert_eq!(e.raw_os_error(), Some(libc::EBADF)),
            other => panic!("expected EBADF, got {other:?}"),
        }
    }
}
