//! Progress bars on a terminal for `run`, `mutate`, `fuzz` and `bench`
//! (indicatif, drawn on stderr). Quiet when stderr is not a terminal or
//! under CI (`CI` set to anything but `false` or `0`), so logs and pipes
//! get the same lines as before and nothing else.

use std::io::IsTerminal;
use std::sync::OnceLock;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

/// Whether to draw progress: only on a terminal, and never under CI.
/// `ci` is the value of the `CI` variable, if set.
pub fn wanted(stderr_is_terminal: bool, ci: Option<&str>) -> bool {
    let under_ci = ci.is_some_and(|v| !matches!(v.trim(), "" | "false" | "0"));
    stderr_is_terminal && !under_ci
}

/// Every bar of this process is drawn through one [`MultiProgress`], so
/// that bars alive at once (`mutate` on several targets) stack instead of
/// overwriting each other's line.
fn bars() -> &'static MultiProgress {
    static BARS: OnceLock<MultiProgress> = OnceLock::new();
    BARS.get_or_init(MultiProgress::new)
}

/// A progress bar, or nothing when [`wanted`] says no.
pub struct Progress(Option<ProgressBar>);

impl Progress {
    /// A bar of `len` items labelled `what` (`run`, `mutate postgres`),
    /// shown only when this process's stderr and `CI` allow it.
    pub fn new(len: u64, what: &str) -> Progress {
        let ci = std::env::var("CI").ok();
        if !wanted(std::io::stderr().is_terminal(), ci.as_deref()) {
            return Progress(None);
        }
        let bar = bars().add(ProgressBar::new(len));
        let style = ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {elapsed} (eta {eta})")
            .expect("the template is valid")
            .progress_chars("=> ");
        bar.set_style(style);
        bar.set_prefix(what.to_owned());
        bar.enable_steady_tick(Duration::from_millis(200));
        Progress(Some(bar))
    }

    /// A spinner with the elapsed time, for work that cannot count its
    /// items (`fuzz`: proptest runs the cases), shown like [`Progress::new`].
    pub fn spinner(what: &str) -> Progress {
        let ci = std::env::var("CI").ok();
        if !wanted(std::io::stderr().is_terminal(), ci.as_deref()) {
            return Progress(None);
        }
        let bar = bars().add(ProgressBar::new_spinner());
        bar.set_style(ProgressStyle::with_template("{spinner} {prefix} {elapsed}").expect("the template is valid"));
        bar.set_prefix(what.to_owned());
        bar.enable_steady_tick(Duration::from_millis(200));
        Progress(Some(bar))
    }

    /// True when the bar is drawn.
    pub fn is_shown(&self) -> bool {
        self.0.is_some()
    }

    /// Counts `n` items done.
    pub fn inc(&self, n: u64) {
        if let Some(bar) = &self.0 {
            bar.inc(n);
        }
    }

    /// Runs `f` (which prints lines) with the bar hidden, so lines and bar
    /// do not interleave.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.0 {
            Some(bar) => bar.suspend(f),
            None => f(),
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(bar) = &self.0 {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_shows_only_on_a_terminal_outside_ci() {
        assert!(wanted(true, None));
        assert!(wanted(true, Some("false")));
        assert!(wanted(true, Some("0")));
        assert!(wanted(true, Some("")));
        assert!(!wanted(true, Some("true")));
        assert!(!wanted(true, Some("1")));
        assert!(!wanted(false, None));
        assert!(!wanted(false, Some("false")));
    }

    #[test]
    fn a_pipe_gets_no_bar() {
        // The test harness captures stderr: not a terminal here, or CI.
        if !std::io::stderr().is_terminal() || std::env::var("CI").as_deref() == Ok("true") {
            assert!(!Progress::new(3, "test").is_shown());
        }
    }
}
