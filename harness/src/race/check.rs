//! The race checker: proves, from a recorded history and the final rows,
//! the five properties of `reapcheck race`. Each rule cites the section of
//! docs/reaper-spec.md it comes from. All instants are the ones bound to
//! the statements, so the rules hold whatever each task's clock said: the
//! store only ever compares what it was given.

use std::collections::BTreeMap;
use std::fmt;

use super::history::{Entry, Op, ReapKind, Res};
use crate::engine::JobState;
use crate::outcome::Status;
use crate::rules;
use crate::time::{Duration, Instant};

/// The settings a job ran under, in seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobWindows {
    /// The class's grace after resolution (spec "Derived values": `grace`).
    pub grace: i64,
    /// `claim_window(row_timeout)` of its attempts.
    pub claim_window: i64,
}

impl JobWindows {
    /// The window of an attempt that did (`has_beat`) or did not beat.
    pub fn window(self, has_beat: bool) -> Duration {
        Duration::from_secs(rules::window(has_beat, self.grace, self.claim_window))
    }
}

/// What the checker needs besides the history.
#[derive(Clone, Debug)]
pub struct Expectations {
    /// Every job the run inserted (all `pending`, 0 attempts), with its windows.
    pub jobs: BTreeMap<String, JobWindows>,
}

/// The properties `reapcheck race` proves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Rule {
    /// A reap changed an attempt whose claim or an accepted beat was not
    /// older than the reap's cutoff.
    LiveReclaimed,
    /// Two reaps ended the same attempt.
    ReclaimedTwice,
    /// A job's final row is not what its history leaves.
    Lost,
    /// A dead attempt outlived its window plus one poll: the reaper whose
    /// scan first saw it expired polled again before it was reclaimed.
    Late,
    /// A worker's write was accepted after its attempt had ended.
    Fencing,
}

impl Rule {
    /// The rule in words, with the spec section it comes from.
    pub fn describe(self) -> &'static str {
        match self {
            Rule::LiveReclaimed => {
                "a live attempt was reclaimed (spec \"reap\" step 4: the guard re-checks last_seen < cutoff)"
            }
            Rule::ReclaimedTwice => {
                "a death was reclaimed twice (spec \"reap\" step 4: two reapers racing, exactly one wins)"
            }
            Rule::Lost => "a job was lost (spec \"Operations\": every write leaves a status the history explains)",
            Rule::Late => {
                "a dead attempt was not reclaimed within its window plus one poll (spec \"Derived values\": window)"
            }
            Rule::Fencing => {
                "a worker wrote to a job it no longer owned (spec \"heartbeat\", \"complete / fail\": fenced by claim_token)"
            }
        }
    }
}

/// One broken property, on one job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The property.
    pub rule: Rule,
    /// The job.
    pub job: String,
    /// What happened, with the operations involved.
    pub detail: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: job {}: {}", self.rule.describe(), self.job, self.detail)
    }
}

/// One attempt as the history shows it.
struct Attempt<'h> {
    job: String,
    number: i64,
    claim: &'h Entry,
    beats: Vec<&'h Entry>,
    endings: Vec<&'h Entry>,
    died: Option<&'h Entry>,
}

impl Attempt<'_> {
    /// The bound instant of its last accepted claim or beat.
    fn last_seen(&self) -> Instant {
        self.beats.iter().filter_map(|b| b.op.now()).chain(self.claim.op.now()).max().expect("a claim binds now")
    }

    fn token(&self) -> &str {
        match &self.claim.op {
            Op::Claim { token, .. } => token,
            _ => "",
        }
    }
}

/// Every violation in `history` given the `final_rows` read back at the end.
/// Operations that failed with an error are taken as not applied.
pub fn check(history: &[Entry], final_rows: &[JobState], expected: &Expectations) -> Vec<Violation> {
    let mut violations = Vec::new();
    let mut by_end: Vec<&Entry> = history.iter().collect();
    by_end.sort_by_key(|e| e.end);
    // Attempts in the order their claims committed: attempt n of a job is
    // its n-th accepted claim (jobs start pending with 0 attempts).
    let mut attempts: Vec<Attempt> = Vec::new();
    let mut claims_per_job: BTreeMap<&str, i64> = BTreeMap::new();
    for e in by_end.iter().filter(|e| e.changed()) {
        if let Op::Claim { job, .. } = &e.op {
            let n = claims_per_job.entry(job).or_default();
            *n += 1;
            attempts.push(Attempt {
                job: job.clone(),
                number: *n,
                claim: e,
                beats: Vec::new(),
                endings: Vec::new(),
                died: None,
            });
        }
    }
    let find_token = |attempts: &[Attempt], token: &str| attempts.iter().position(|a| a.token() == token);
    for e in &by_end {
        let (job, token) = match &e.op {
            Op::Beat { job, token, .. }
            | Op::Complete { job, token, .. }
            | Op::Fail { job, token, .. }
            | Op::Die { job, token } => (job, token),
            Op::Reap { job, attempts: n, .. } if e.changed() => {
                match attempts.iter().position(|a| a.job == *job && a.number == *n) {
                    Some(i) => attempts[i].endings.push(e),
                    None => violations.push(Violation {
                        rule: Rule::ReclaimedTwice,
                        job: job.clone(),
                        detail: format!("{} changed attempt {n}, which no claim created", describe(e)),
                    }),
                }
                continue;
            }
            _ => continue,
        };
        let Some(i) = find_token(&attempts, token) else {
            if e.changed() {
                violations.push(Violation {
                    rule: Rule::Fencing,
                    job: job.clone(),
                    detail: format!("{} was accepted for token {token}, which no claim created", describe(e)),
                });
            }
            continue;
        };
        match &e.op {
            Op::Die { .. } => attempts[i].died = Some(e),
            Op::Beat { .. } if e.changed() => attempts[i].beats.push(e),
            Op::Complete { .. } | Op::Fail { .. } if e.changed() => attempts[i].endings.push(e),
            _ => {}
        }
    }
    for a in &attempts {
        check_attempt(a, history, expected, &mut violations);
    }
    check_final_rows(&attempts, final_rows, expected, &mut violations);
    violations
}

fn check_attempt(a: &Attempt, history: &[Entry], expected: &Expectations, out: &mut Vec<Violation>) {
    let violation = |rule, detail| Violation { rule, job: a.job.clone(), detail };
    let first_end = a.endings.first();
    // Ended twice: by two reaps, or by a worker after the attempt was gone.
    for later in a.endings.iter().skip(1) {
        let rule = if matches!(later.op, Op::Reap { .. }) { Rule::ReclaimedTwice } else { Rule::Fencing };
        let first = describe(first_end.expect("a second ending has a first"));
        out.push(violation(
            rule,
            format!("attempt {} ({}) ended by {first} and again by {}", a.number, a.token(), describe(later)),
        ));
    }
    // A beat accepted after the attempt ended.
    if let Some(end) = first_end {
        for b in a.beats.iter().filter(|b| b.start > end.end) {
            out.push(violation(
                Rule::Fencing,
                format!("{} was accepted after {} ended attempt {}", describe(b), describe(end), a.number),
            ));
        }
    }
    // No reap may change an attempt seen at or after its cutoff.
    for reap in &a.endings {
        let Op::Reap { cutoff, .. } = &reap.op else { continue };
        let seen = std::iter::once(a.claim).chain(a.beats.iter().copied().filter(|b| b.start < reap.end));
        for s in seen {
            if s.op.now().is_some_and(|t| t >= *cutoff) {
                out.push(violation(
                    Rule::LiveReclaimed,
                    format!(
                        "{} reclaimed attempt {} although {} is not older than its cutoff",
                        describe(reap),
                        a.number,
                        describe(s)
                    ),
                ));
            }
        }
    }
    // A dead attempt ends before the reaper whose scan first saw it past
    // its window polls again. Judged by real-time order, not by `now`, so a
    // reaper with a fast clock cannot excuse or blame another.
    let Some(died) = a.died else { return };
    let Some(windows) = expected.jobs.get(&a.job) else { return };
    let expiry = a.last_seen() + windows.window(!a.beats.is_empty());
    let last_activity = a.beats.iter().map(|b| b.end).chain([a.claim.end, died.start]).max().unwrap_or_default();
    let is_scan = |e: &&Entry| matches!(e.res, Res::Scanned(_)) && matches!(e.op, Op::Scan { .. });
    let first_scan = history
        .iter()
        .filter(is_scan)
        .filter(|e| e.start > last_activity && e.op.now().is_some_and(|now| now > expiry))
        .min_by_key(|e| e.start);
    let Some(scan) = first_scan else { return };
    let next_poll =
        history.iter().filter(is_scan).filter(|e| e.task == scan.task && e.start > scan.end).min_by_key(|e| e.start);
    let Some(next_poll) = next_poll else { return };
    let ended_in_time = first_end.is_some_and(|e| e.end < next_poll.start);
    if !ended_in_time {
        let how = match first_end {
            Some(e) => format!("it ended only with {}", describe(e)),
            None => "it never ended".to_owned(),
        };
        out.push(violation(
            Rule::Late,
            format!(
                "attempt {} died; its window ran out at {expiry}, {} saw it expired, and the same reaper polled again \
                 ({}) before it was reclaimed; {how}",
                a.number,
                describe(scan),
                describe(next_poll)
            ),
        ));
    }
}

fn check_final_rows(attempts: &[Attempt], rows: &[JobState], expected: &Expectations, out: &mut Vec<Violation>) {
    for job in expected.jobs.keys() {
        let Some(row) = rows.iter().find(|r| r.id == *job) else {
            out.push(Violation { rule: Rule::Lost, job: job.clone(), detail: "its row is gone".to_owned() });
            continue;
        };
        let last = attempts.iter().filter(|a| a.job == *job).max_by_key(|a| a.number);
        let (status, number, token, why) = match last {
            None => (Status::Pending, 0, None, "no claim was accepted".to_owned()),
            Some(a) => match a.endings.last() {
                None => (Status::Processing, a.number, Some(a.token()), format!("attempt {} never ended", a.number)),
                Some(e) => {
                    (status_after(&e.op), a.number, None, format!("attempt {} ended with {}", a.number, describe(e)))
                }
            },
        };
        let token_ok = match token {
            Some(t) => row.claim_token.as_deref() == Some(t),
            None => true,
        };
        if row.status != status || row.attempts != number || !token_ok {
            out.push(Violation {
                rule: Rule::Lost,
                job: job.clone(),
                detail: format!(
                    "it ends {} with {} attempts (token {}), but {why}, which leaves it {} with {number}",
                    row.status.as_str(),
                    row.attempts,
                    row.claim_token.as_deref().unwrap_or("none"),
                    status.as_str()
                ),
            });
        }
    }
}

/// The status an ending operation leaves (spec "Operations").
fn status_after(op: &Op) -> Status {
    match op {
        Op::Complete { .. } => Status::Completed,
        Op::Fail { retry: true, .. } | Op::Reap { kind: ReapKind::Retry, .. } => Status::Pending,
        Op::Fail { retry: false, .. } | Op::Reap { kind: ReapKind::Fail, .. } => Status::Failed,
        Op::Reap { kind: ReapKind::Interrupt, .. } => Status::Interrupted,
        Op::Claim { .. } | Op::Beat { .. } | Op::Die { .. } | Op::Scan { .. } => Status::Processing,
    }
}

/// `reap_retry by reaper 1 at 2026-...Z (now) [#12..#14]`.
fn describe(e: &Entry) -> String {
    let who = match e.task {
        super::history::Task::Worker(n) => format!("worker {n}"),
        super::history::Task::Reaper(n) => format!("reaper {n}"),
    };
    let extra = match &e.op {
        Op::Reap { attempts, cutoff, .. } => format!(" (attempts {attempts}, cutoff {cutoff})"),
        _ => String::new(),
    };
    match e.op.now() {
        Some(now) => format!("{} by {who} at {now}{extra} [#{}..#{}]", e.op.name(), e.start, e.end),
        None => format!("{} of {who} [#{}]", e.op.name(), e.start),
    }
}

#[cfg(test)]
mod tests {
    use super::super::history::{Scanned, Task};
    use super::*;

    const T0: i64 = 1_800_000_000_000_000;

    fn at(seconds: i64) -> Instant {
        Instant::from_unix_micros(T0 + seconds * 1_000_000)
    }

    /// Builds histories: each `push` takes the next two positions.
    #[derive(Default)]
    struct H {
        entries: Vec<Entry>,
        seq: u64,
    }

    impl H {
        fn push(&mut self, task: Task, op: Op, res: Res) -> &mut Self {
            self.entries.push(Entry { task, start: self.seq, end: self.seq + 1, op, res });
            self.seq += 2;
            self
        }
        fn claim(&mut self, w: u32, token: &str, t: i64) -> &mut Self {
            let op = Op::Claim { job: "a".into(), token: token.into(), now: at(t) };
            self.push(Task::Worker(w), op, Res::Changed(1))
        }
        fn beat(&mut self, w: u32, token: &str, t: i64, changed: u64) -> &mut Self {
            let op = Op::Beat { job: "a".into(), token: token.into(), now: at(t) };
            self.push(Task::Worker(w), op, Res::Changed(changed))
        }
        fn complete(&mut self, w: u32, token: &str, t: i64, changed: u64) -> &mut Self {
            let op = Op::Complete { job: "a".into(), token: token.into(), now: at(t) };
            self.push(Task::Worker(w), op, Res::Changed(changed))
        }
        fn die(&mut self, w: u32, token: &str) -> &mut Self {
            self.push(Task::Worker(w), Op::Die { job: "a".into(), token: token.into() }, Res::Nothing)
        }
        fn scan(&mut self, r: u32, t: i64, found: &[i64]) -> &mut Self {
            let rows = found.iter().map(|&n| Scanned { job: "a".into(), attempts: n, has_beat: true }).collect();
            self.push(Task::Reaper(r), Op::Scan { now: at(t) }, Res::Scanned(rows))
        }
        fn reap(&mut self, r: u32, n: i64, t: i64, window: i64, changed: u64) -> &mut Self {
            let op =
                Op::Reap { kind: ReapKind::Retry, job: "a".into(), attempts: n, cutoff: at(t - window), now: at(t) };
            self.push(Task::Reaper(r), op, Res::Changed(changed))
        }
    }

    fn row(status: Status, attempts: i64, token: Option<&str>) -> Vec<JobState> {
        vec![JobState {
            id: "a".into(),
            status,
            attempts,
            claim_token: token.map(str::to_owned),
            heartbeat_at: None,
            run_at: at(0),
            updated_at: at(0),
            failed_at: None,
            completed_at: None,
            last_error: None,
        }]
    }

    fn expectations() -> Expectations {
        let jobs = [("a".to_owned(), JobWindows { grace: 30, claim_window: 90 })].into();
        Expectations { jobs }
    }

    fn rules(h: &H, rows: &[JobState]) -> Vec<Rule> {
        check(&h.entries, rows, &expectations()).into_iter().map(|v| v.rule).collect()
    }

    /// A worker beats, dies; one reaper reclaims it 31 s after the beat.
    fn good() -> H {
        let mut h = H::default();
        h.claim(0, "t1", 0).beat(0, "t1", 10, 1).die(0, "t1").scan(0, 41, &[1]).reap(0, 1, 41, 30, 1);
        h
    }

    #[test]
    fn a_clean_history_passes() {
        assert_eq!(rules(&good(), &row(Status::Pending, 1, None)), vec![]);
    }

    #[test]
    fn reclaiming_an_attempt_that_beat_after_the_cutoff_is_caught() {
        let mut h = H::default();
        h.claim(0, "t1", 0).beat(0, "t1", 20, 1).scan(0, 41, &[1]).reap(0, 1, 41, 30, 1);
        assert_eq!(rules(&h, &row(Status::Pending, 1, None)), vec![Rule::LiveReclaimed]);
    }

    #[test]
    fn a_second_reaper_reclaiming_the_same_death_is_caught() {
        let mut h = good();
        h.reap(1, 1, 42, 30, 1);
        assert_eq!(rules(&h, &row(Status::Pending, 1, None)), vec![Rule::ReclaimedTwice]);
    }

    #[test]
    fn a_completion_after_the_reclaim_is_a_fencing_failure() {
        let mut h = good();
        h.complete(0, "t1", 45, 1);
        assert_eq!(rules(&h, &row(Status::Completed, 1, None)), vec![Rule::Fencing]);
        let mut fenced = good();
        fenced.complete(0, "t1", 45, 0);
        assert_eq!(rules(&fenced, &row(Status::Pending, 1, None)), vec![]);
    }

    #[test]
    fn a_beat_accepted_after_the_reclaim_is_a_fencing_failure() {
        let mut h = good();
        h.beat(0, "t1", 45, 1);
        assert_eq!(rules(&h, &row(Status::Pending, 1, None)), vec![Rule::Fencing]);
    }

    #[test]
    fn a_final_row_the_history_does_not_explain_is_lost() {
        assert_eq!(rules(&good(), &row(Status::Failed, 1, None)), vec![Rule::Lost]);
        assert_eq!(rules(&good(), &row(Status::Pending, 2, None)), vec![Rule::Lost]);
        let mut live = H::default();
        live.claim(0, "t1", 0).beat(0, "t1", 10, 1);
        assert_eq!(rules(&live, &row(Status::Processing, 1, Some("t1"))), vec![]);
        assert_eq!(rules(&live, &row(Status::Processing, 1, Some("t2"))), vec![Rule::Lost]);
        assert_eq!(check(&[], &[], &expectations())[0].rule, Rule::Lost);
    }

    #[test]
    fn a_death_left_past_its_window_and_one_poll_is_late() {
        let dead = || {
            let mut h = H::default();
            h.claim(0, "t1", 0).beat(0, "t1", 10, 1).die(0, "t1");
            h
        };
        // Expired at 40: the scan at 41 missed it, and its reaper polled again.
        let mut h = dead();
        h.scan(0, 41, &[]).scan(0, 46, &[1]);
        assert_eq!(rules(&h, &row(Status::Processing, 1, Some("t1"))), vec![Rule::Late]);
        // Reclaimed by that poll's apply, or by another reaper, in time.
        let mut ok = dead();
        ok.scan(0, 41, &[1]).reap(0, 1, 41, 30, 1).scan(0, 46, &[]);
        assert_eq!(rules(&ok, &row(Status::Pending, 1, None)), vec![]);
        let mut other = dead();
        other.scan(0, 41, &[1]).reap(1, 1, 43, 30, 1).reap(0, 1, 41, 30, 0).scan(0, 46, &[]);
        assert_eq!(rules(&other, &row(Status::Pending, 1, None)), vec![]);
        // Only after the next poll: late, whatever the reap's clock said.
        let mut late = dead();
        late.scan(0, 41, &[]).scan(0, 46, &[1]).reap(0, 1, 46, 30, 1);
        assert_eq!(rules(&late, &row(Status::Pending, 1, None)), vec![Rule::Late]);
        // Before any scan past the window nothing is owed, nor before its reaper polls again.
        let mut early = dead();
        early.scan(0, 39, &[]).scan(0, 44, &[]);
        assert_eq!(rules(&early, &row(Status::Processing, 1, Some("t1"))), vec![]);
        let mut last = dead();
        last.scan(0, 41, &[1]);
        assert_eq!(rules(&last, &row(Status::Processing, 1, Some("t1"))), vec![]);
    }

    #[test]
    fn a_reap_of_an_attempt_nobody_claimed_is_caught() {
        let mut h = good();
        h.reap(1, 2, 50, 30, 1);
        assert_eq!(rules(&h, &row(Status::Pending, 1, None)), vec![Rule::ReclaimedTwice]);
    }

    #[test]
    fn failed_operations_count_as_not_applied() {
        let mut h = good();
        h.push(Task::Reaper(1), h.entries[4].op.clone(), Res::Error("deadlock".into()));
        assert_eq!(rules(&h, &row(Status::Pending, 1, None)), vec![]);
    }
}
