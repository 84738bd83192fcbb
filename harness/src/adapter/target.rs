//! An adapter as a target of `reapcheck run`: each scenario is played as
//! requests to the adapter (docs/adapter-protocol.md) and what its queue
//! holds afterwards is judged against the reference model under the policy
//! the adapter declares, with the same [`Verdict`] as a database target.
//!
//! One process serves scenario after scenario: it is handshaken once, and
//! started again after any failed scenario and, unless its handshake
//! declares `sets_app_time_zone`, when the next scenario's `app_time_zone`
//! differs (its `TZ`). Attempt labels are reapcheck's own,
//! counted as the driver counts them (`<job>/<n>` by successful claims, or
//! the step's `as`); the adapter's clocks are set after `setup` and after
//! every `advance`, and a clock that did not move fails the scenario.
//! After every scenario reapcheck drops its namespace itself on the
//! adapter's database, with the builtin dialect's `drop_namespace`.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use super::client::{Client, ClientError, ClientErrorKind, Exchange, Log};
use super::play::{Play, Stop, Window};
use super::process::Spawn;
use super::protocol::{Database, Empty, HandshakeResult, Op};
use crate::backend::{Connection, Server};
use crate::config::AdapterConfig;
use crate::dialect::{Dialect, Profile, Source};
use crate::driver;
use crate::feature;
use crate::outcome::{Outcome, StepResult};
use crate::reach::{self, Reach};
use crate::redact;
use crate::relax;
use crate::runner::{self, ModelRun, Verdict};
use crate::scenario::{LoadedScenario, Step};
use crate::sql::namespace_script;
use crate::target::Target;

/// The time zone of a scenario without `app_time_zone`.
pub const DEFAULT_TIME_ZONE: &str = "UTC";

/// A running adapter and what its handshake said.
struct Session {
    client: Client,
    handshake: HandshakeResult,
    profile: Profile,
    time_zone: String,
}

/// The adapter's database: its server (to drop namespaces on) and the
/// builtin dialect of its target; `None` for SQLite, whose namespace is a
/// file in the project root.
struct Store {
    server: Server,
    dialect: Dialect,
}

/// One scenario's run through an adapter: its verdict, and the compared
/// document of what the queue held (`None` when the run did not finish, or
/// when the adapter's profile is not the reference: only reference
/// documents are comparable across targets, as for a SQL target).
#[derive(Clone, Debug)]
pub struct AdapterRun {
    /// The verdict, as for a database target.
    pub verdict: Verdict,
    /// The outcome document (snapshot text) under the reference profile.
    pub document: Option<String>,
    /// The requests and replies, and the states read between steps.
    pub transcript: Transcript,
}

/// What one scenario's run through an adapter exchanged and read, for
/// `explain` (empty when the scenario was not played).
#[derive(Clone, Debug, Default)]
pub struct Transcript {
    /// Every request and its reply, in order, redacted when read
    /// ([`Transcript::exchanges`]).
    pub log: Log,
    /// `marks[i]`: how many exchanges came before step `i`; the last one
    /// counts those before `teardown`. Setup's are `..marks[0]`.
    pub marks: Vec<usize>,
    /// The adapter's state after setup (index 0) and after each step, as
    /// compared under its profile (short when the run stopped early).
    /// Rendered only when the scenario failed: empty when it passed (every
    /// state then agreed with the model's) or was skipped.
    pub states: Vec<String>,
    /// The model's, under the adapter's policy (empty unless it failed).
    pub model_states: Vec<String>,
}

impl Transcript {
    /// Every request and its reply, in order, credentials redacted.
    pub fn exchanges(&self) -> Vec<Exchange> {
        self.log.redacted()
    }

    /// Every exchange as `> request` and `< reply` lines (`--trace`).
    pub fn render(&self) -> String {
        trace(&self.exchanges(), &self.marks, None)
    }
}

/// An adapter target, ready to play scenarios.
pub struct AdapterTarget {
    config: AdapterConfig,
    root: PathBuf,
    url: Option<String>,
    store: Option<Store>,
    session: Option<Session>,
    /// The last handshake's line (`saq 0.22.5, saq-adapter 1.0.0, over postgres`).
    label: String,
    /// The stderr tail of the last process that failed to start.
    last_tail: Vec<String>,
}

/// Why an adapter target did not open: one line (no password in it) and
/// whether the adapter ran and broke the protocol, which no `--allow-skip`
/// excuses, or could not run at all (its database unset or unreachable,
/// its command missing), which `--allow-skip` reports as skipped, like an
/// unreachable database.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotOpened {
    /// Why, one line, redacted; the adapter's stderr tail after it.
    pub reason: String,
    /// The adapter started and its handshake broke the protocol.
    pub broken: bool,
}

impl std::fmt::Display for NotOpened {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.reason)
    }
}

impl AdapterTarget {
    /// Reaches the adapter's database (its URL from
    /// `REAPCHECK_<TARGET>_URL`; nothing for SQLite), sweeps the namespaces
    /// earlier runs left there, starts the adapter in `root` (the folder of
    /// `reapcheck.toml`) and handshakes it.
    ///
    /// # Errors
    ///
    /// Why the target cannot run, one line (no password in it): the
    /// database is not configured or not reachable, the adapter cannot
    /// start, or its handshake failed.
    pub async fn open(config: &AdapterConfig, root: &Path) -> Result<AdapterTarget, NotOpened> {
        let unreachable = |reason: String| NotOpened { reason, broken: false };
        let database = config.database;
        let (url, store) = if database == Target::Sqlite {
            (None, None)
        } else {
            let variable = database.url_variable();
            let Some(url) = std::env::var(&variable).ok().filter(|u| !u.trim().is_empty()) else {
                return Err(unreachable(format!("adapter {} uses {database}, but {variable} is not set", config.name)));
            };
            let server = match reach::reach(database).await {
                Reach::Ready(server, _) => server,
                other => return Err(unreachable(format!("adapter {}'s database: {}", config.name, other.reason()))),
            };
            let dialect = Dialect::load(&Source::Embedded, database.dialect()).map_err(|e| {
                unreachable(format!("the builtin {} dialect does not load: {}", database.dialect(), e[0]))
            })?;
            let swept = runner::sweep(&server, &dialect).await;
            if !swept.removed.is_empty() {
                println!(
                    "removed {} left on {database} (adapter {}) by earlier runs (their process is gone, \
                     or they are over {} h old)",
                    crate::namespace::count(swept.removed.len()),
                    config.name,
                    crate::namespace::MAX_AGE.as_secs() / 3600
                );
            }
            swept.errors.iter().for_each(|e| eprintln!("warning: {database}: {e}"));
            (Some(url), Some(Store { server, dialect }))
        };
        let mut target = AdapterTarget {
            config: config.clone(),
            root: root.to_owned(),
            url,
            store,
            session: None,
            label: String::new(),
            last_tail: Vec::new(),
        };
        if let Err(e) = target.start(DEFAULT_TIME_ZONE).await {
            let broken = !matches!(e.kind, ClientErrorKind::Start(_));
            let reason = target.with_stderr(e.to_string(), None);
            target.close().await;
            return Err(NotOpened { reason, broken });
        }
        Ok(target)
    }

    /// The target's name, `adapter:<name>`.
    pub fn name(&self) -> String {
        self.config.target_name()
    }

    /// What the adapter said it is, for result lines:
    /// `saq 0.22.5, saq-adapter 1.0.0, over postgres`.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The handshake's profile in words, when it declares anything (the
    /// run's opening line for this target).
    pub fn describe_policy(&self) -> Option<String> {
        let session = self.session.as_ref()?;
        let policy = &session.profile.policy;
        let absent: Vec<&str> =
            feature::Feature::ALL.iter().filter(|f| !session.profile.has(**f)).map(|f| f.as_str()).collect();
        let mut parts = Vec::new();
        if !policy.is_reference() {
            parts.push(format!("policy: {policy}"));
        }
        if !absent.is_empty() {
            parts.push(format!("declares no {}", absent.join(", ")));
        }
        if let Some(r) = session.handshake.capabilities.time_resolution {
            parts.push(format!("time_resolution = {r}"));
        }
        if !session.handshake.capabilities.split_reap {
            parts.push("no split_reap".to_owned());
        }
        (!parts.is_empty()).then(|| format!("{} ({}): {}", self.name(), self.label, parts.join("; ")))
    }

    /// Starts a new adapter process with `TZ=time_zone` and handshakes it.
    async fn start(&mut self, time_zone: &str) -> Result<(), ClientError> {
        if let Some(old) = self.session.take() {
            old.client.close().await;
        }
        let spawn = Spawn {
            command: self.config.command.clone(),
            cwd: self.root.clone(),
            env: self.config.env.clone(),
            time_zone: time_zone.to_owned(),
        };
        let mut client = Client::start(&self.config.name, &spawn, self.config.timeout)?;
        if let Some(url) = &self.url {
            client.hide(url);
        }
        let handshake = match client.handshake().await {
            Ok(h) => h,
            Err(e) => {
                self.last_tail = client.kill().await;
                return Err(e);
            }
        };
        let policy = match handshake.policy() {
            Ok(p) => p,
            Err(e) => {
                self.last_tail = client.kill().await;
                return Err(ClientError {
                    adapter: self.config.name.clone(),
                    op: "handshake",
                    seq: 1,
                    line: None,
                    kind: ClientErrorKind::Handshake(format!("its `policy` is not valid: {}", e.message)),
                });
            }
        };
        let profile = Profile {
            features: handshake.capabilities.features.iter().copied().collect(),
            policy,
            time_resolution: handshake.capabilities.time_resolution.unwrap_or_default(),
            ..Profile::default()
        };
        self.label = format!(
            "{} {}, {} {}, over {}",
            handshake.queue.name,
            handshake.queue.version,
            handshake.adapter.name,
            handshake.adapter.version,
            self.config.database
        );
        self.session = Some(Session { client, handshake, profile, time_zone: time_zone.to_owned() });
        Ok(())
    }

    /// `message` followed by the adapter's stderr tail, when it has one.
    fn with_stderr(&self, message: String, tail: Option<Vec<String>>) -> String {
        let tail = tail.unwrap_or_else(|| {
            self.session.as_ref().map(|s| s.client.stderr().lines()).unwrap_or_else(|| self.last_tail.clone())
        });
        if tail.is_empty() {
            return message;
        }
        let lines: String = tail.iter().map(|l| format!("\n  {}", self.redact(l))).collect();
        format!("{message}\nthe adapter's stderr (last {} lines):{lines}", tail.len())
    }

    fn redact(&self, text: &str) -> String {
        match &self.url {
            Some(url) => redact::message(text, url),
            None => redact::text(text),
        }
    }

    /// Plays `scenario` through the adapter and judges it against the
    /// model (`model`: the reference model's run of it, `None` when the
    /// model panicked), and the state read after setup and after every
    /// step against the invariants (docs/policy.md, "Invariants that hold
    /// for every queue"). The namespace is dropped afterwards whatever
    /// happened; after a failure the process is started again for the
    /// next scenario.
    pub async fn check(&mut self, scenario: &LoadedScenario, model: Option<&ModelRun>) -> AdapterRun {
        let mut transcript = Transcript::default();
        let (verdict, document) = self.play(scenario, model, &mut transcript).await;
        AdapterRun { verdict, document, transcript }
    }

    /// The profile the adapter's handshake declared (its features and
    /// policy), while a process is running.
    pub fn profile(&self) -> Option<&Profile> {
        self.session.as_ref().map(|s| &s.profile)
    }

    async fn play(
        &mut self,
        scenario: &LoadedScenario,
        model: Option<&ModelRun>,
        transcript: &mut Transcript,
    ) -> (Verdict, Option<String>) {
        let no_document = |verdict| (verdict, None);
        let Some(model) = model else {
            return no_document(Verdict::Fail("not run: the model panicked on this scenario".to_owned()));
        };
        let time_zone = scenario.scenario.app_time_zone.as_ref().map_or(DEFAULT_TIME_ZONE, |z| z.as_str()).to_owned();
        // An adapter that applies each setup's `app_time_zone` itself keeps
        // its process across zones; any other is started with `TZ` set.
        let restart = self
            .session
            .as_ref()
            .is_none_or(|s| s.time_zone != time_zone && !s.handshake.capabilities.sets_app_time_zone);
        if restart && let Err(e) = self.start(&time_zone).await {
            return no_document(Verdict::Fail(self.with_stderr(format!("the adapter did not start: {e}"), None)));
        }
        let Some(session) = self.session.as_mut() else {
            return no_document(Verdict::Fail("the adapter did not start".to_owned()));
        };
        session.client.stderr().clear();
        session.client.clear_log();
        let profile = session.profile.clone();
        // Under the reference profile the model's run is the one already
        // made, when it recorded its states (`run` asks it to); under any
        // other, or without them, it is run again under the adapter's.
        let (model_outcome, model_states) = match &model.states {
            Some(states) if profile.is_reference() => (Cow::Borrowed(&model.outcome), Cow::Borrowed(states)),
            _ => {
                let mut states = driver::Checkpoints::new();
                let outcome = runner::model_outcome_with_states(&scenario.scenario, &profile, Some(&mut states)).await;
                (Cow::Owned(outcome), Cow::Owned(states))
            }
        };
        // As for a SQL target (runner::check_target): under another policy
        // the features needed follow from the outcome under it, and the
        // scenario's `expect` (the reference claim) is set aside.
        let skip = if profile.policy.is_reference() {
            skip_reason(scenario, session, &model.outcome)
        } else {
            let mut judged = scenario.clone();
            judged.scenario.expect = None;
            skip_reason(&judged, session, &model_outcome)
        };
        if let Some(reason) = skip {
            return no_document(Verdict::Skipped(reason));
        }
        let namespace = crate::namespace::fresh();
        let adapter = session.handshake.adapter.name.clone();
        let database =
            self.url.as_ref().map(|url| Database { target: self.config.database.name().to_owned(), url: url.clone() });
        let window = Window::of(&session.handshake.capabilities);
        let mut play = Play::new(&scenario.scenario, &mut session.client, &profile, window);
        let mut played = play.run(&scenario.name, &namespace, database, &time_zone).await;
        let marks = std::mem::take(&mut play.marks);
        let steps = play.steps.clone();
        let checkpoints = std::mem::take(&mut play.checkpoints);
        let torn_down = play.torn_down;
        let broken = crate::invariants::check(&scenario.scenario, &profile.policy, &checkpoints);
        let alive = !matches!(played, Err(Stop::Broken(_) | Stop::Interrupted(_)));
        if alive && played.is_err() {
            // The scenario stopped early: the replies to what was sent
            // ahead are taken, and the adapter still closes what it made.
            // A protocol break there fails a skipped scenario, and is told
            // after a failed one's reason.
            let after = if torn_down {
                session.client.drain().await
            } else {
                session.client.request(Op::Teardown(Empty {})).await.map(drop)
            };
            if let Err(e) = after {
                played = match played {
                    Err(Stop::Fail(why)) => Err(Stop::Fail(format!("{why}\nand after it: {e}"))),
                    _ => Err(Stop::Broken(e)),
                };
            }
        }
        transcript.log = session.client.take_log();
        transcript.marks = marks.clone();
        let failed = !matches!(played, Ok(_) | Err(Stop::Skip(_) | Stop::Unplayable(_))) || !broken.is_empty();
        let tail = match (failed, self.session.take()) {
            // A failed scenario's process is not trusted again: killed now,
            // started anew for the next scenario.
            (true, Some(s)) => s.client.kill().await,
            (false, Some(s)) => {
                let tail = s.client.stderr().lines();
                self.session = Some(s);
                tail
            }
            (_, None) => Vec::new(),
        };
        let dropped = self.drop_namespace(&namespace).await;
        let mut document = None;
        let verdict = match played {
            Err(Stop::Skip(reason)) => Verdict::Skipped(format!("{adapter}: {reason}")),
            Err(Stop::Unplayable(reason)) => Verdict::Skipped(reason),
            Err(Stop::Interrupted(signal)) => match &dropped {
                Ok(()) => Verdict::Skipped(format!(
                    "interrupted by {signal} mid-run; its namespace was dropped ({namespace} is gone)"
                )),
                Err(e) => Verdict::Skipped(format!(
                    "interrupted by {signal} mid-run; its namespace {namespace} may still be on its database ({e}): \
                     the next `reapcheck run --db {}` removes it",
                    self.name()
                )),
            },
            Err(Stop::Fail(why)) => runner::with_invariants(Verdict::Fail(why), &broken),
            Err(Stop::Broken(e)) => Verdict::Fail(e.to_string()),
            Ok(outcome) => {
                // The reference model's own run has its document already.
                let known = matches!(model_states, Cow::Borrowed(_)).then_some(model.yaml.as_str());
                let (verdict, actual) = self.judge(&adapter, &profile, outcome, &model_outcome, known);
                // Every state read between steps is judged, not only the last.
                let parted = states_parting(&model_states, &checkpoints, &profile);
                let verdict = match (verdict, parted) {
                    (Verdict::Ok, Some(c)) => Verdict::Fail(format!(
                        "{} ends as the model does, but its state after {} is not the model's",
                        self.name(),
                        if c == 0 { "setup".to_owned() } else { format!("step {c}") }
                    )),
                    (verdict, _) => verdict,
                };
                document = if verdict == Verdict::Ok { actual } else { None };
                runner::with_invariants(verdict, &broken)
            }
        };
        if matches!(verdict, Verdict::Fail(_)) {
            // Rendered for a failure's message and for `explain` only: on a
            // passing run the documents were a third of the adapter target's
            // instructions (callgrind, SQLite corpus), for nothing.
            transcript.states = crate::trace::documents(&checkpoints, &profile);
            transcript.model_states = crate::trace::documents(&model_states, &profile);
        }
        let verdict = match (verdict, dropped) {
            (Verdict::Fail(why), _) => {
                let first = first_parting(&steps, &model_outcome.steps, &transcript.states, &transcript.model_states);
                let mut shown = format!("{why}\n{}", trace(&transcript.exchanges(), &marks, first));
                if let Some(d) = first.and_then(|c| self.state_difference(transcript, c)) {
                    shown.push_str(&format!("\nthe state there (instants relative to the clock):\n{d}"));
                }
                Verdict::Fail(self.with_stderr(shown, Some(tail)))
            }
            (v, Ok(())) => v,
            (Verdict::Skipped(r), Err(_)) => Verdict::Skipped(r),
            (_, Err(e)) => Verdict::Fail(format!("the run passed but its namespace {namespace} was not dropped: {e}")),
        };
        if verdict.is_failure()
            && let Some(s) = self.session.take()
        {
            s.client.kill().await;
        }
        // An adapter's own words (an exception's message and traceback, a
        // refusal) may echo the URL it was given: the one redactor sees
        // every line a verdict shows.
        let verdict = match verdict {
            Verdict::Fail(detail) => Verdict::Fail(self.redact(&detail)),
            Verdict::Skipped(reason) => Verdict::Skipped(self.redact(&reason)),
            Verdict::Diverged(reason) => Verdict::Diverged(self.redact(&reason)),
            other => other,
        };
        (verdict, document)
    }

    /// The adapter's outcome against the model's under its profile: the
    /// verdict, and the adapter's compared document when the verdict is `ok`
    /// and the profile the reference (the only documents hashed). Outcomes
    /// equal once normalized ([`relax::normalize`]) have equal documents,
    /// so only a pair that differs there is rendered and compared as text;
    /// an outcome equal to the model's under the reference profile is not
    /// rendered at all when the model's document is `known`.
    fn judge(
        &self,
        adapter: &str,
        profile: &Profile,
        outcome: Outcome,
        model: &Outcome,
        known: Option<&str>,
    ) -> (Verdict, Option<String>) {
        let reference = profile.is_reference();
        if reference
            && let Some(yaml) = known.filter(|y| !y.is_empty())
            && outcome == *model
        {
            return (Verdict::Ok, Some(yaml.to_owned()));
        }
        if relax::normalize(model.clone(), profile) == relax::normalize(outcome.clone(), profile) {
            return (Verdict::Ok, reference.then(|| runner::compared_document(outcome, profile)));
        }
        let expected = runner::compared_document(model.clone(), profile);
        let actual = runner::compared_document(outcome, profile);
        let label = if reference { "model".to_owned() } else { format!("model under {adapter}'s policy") };
        match crate::diff::render(&label, &expected, &self.name(), &actual) {
            None => (Verdict::Ok, reference.then_some(actual)),
            Some(d) => (Verdict::Fail(format!("{} disagrees with the {label}\n{d}", self.name())), None),
        }
    }

    /// The difference between the model's state and the adapter's at
    /// checkpoint `c`, when both were read and they differ.
    fn state_difference(&self, transcript: &Transcript, c: usize) -> Option<String> {
        let (model, ours) = (transcript.model_states.get(c)?, transcript.states.get(c)?);
        crate::diff::render("model", model, &self.name(), ours)
    }

    /// Drops `namespace` on the adapter's database when it is still there
    /// (the adapter's `teardown` may have dropped it); on SQLite removes
    /// `<namespace>.db` (and its `-wal`, `-shm`, `-journal`) from the root.
    async fn drop_namespace(&self, namespace: &str) -> Result<(), String> {
        let Some(store) = &self.store else {
            for suffix in [".db", ".db-wal", ".db-shm", ".db-journal"] {
                let file = self.root.join(format!("{namespace}{suffix}"));
                match std::fs::remove_file(&file) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                        return Err(format!("cannot remove {}: {e}", file.display()));
                    }
                    _ => {}
                }
            }
            return Ok(());
        };
        let names = store.server.namespaces().await.map_err(|e| self.redact(&e.to_string()))?;
        if !names.iter().any(|n| n == namespace) {
            return Ok(());
        }
        let mut conn = store.server.open().await.map_err(|e| self.redact(&e.to_string()))?;
        let mut dropped = namespace_script(&mut conn, &store.dialect, "drop_namespace", namespace).await;
        if dropped.is_ok() {
            // A script that ran is no proof: the catalog must no longer list it.
            dropped = crate::isolation::check_dropped(&mut conn, &store.dialect, namespace).await;
        }
        Connection::close(conn).await;
        dropped.map_err(|e| self.redact(&e.to_string()))
    }

    /// Closes the adapter (stdin closed, up to 2 s, then killed) and the
    /// database's server.
    pub async fn close(mut self) {
        if let Some(s) = self.session.take() {
            s.client.close().await;
        }
        if let Some(store) = self.store.take() {
            store.server.close().await;
        }
    }
}

/// Drops `namespace` on `database` (a server target, its URL from
/// `REAPCHECK_<TARGET>_URL`) when it is there, with the builtin dialect's
/// `drop_namespace`: what `adapter check` leaves behind on a server.
///
/// # Errors
///
/// The server cannot be reached or refused the drop (one line, redacted).
pub async fn drop_namespace_on(database: Target, namespace: &str) -> Result<(), String> {
    let server = match reach::reach(database).await {
        Reach::Ready(server, _) => server,
        other => return Err(other.reason()),
    };
    let dialect = Dialect::load(&Source::Embedded, database.dialect()).map_err(|e| e[0].to_string())?;
    let result = async {
        let names = server.namespaces().await.map_err(|e| redact::text(&e.to_string()))?;
        if !names.iter().any(|n| n == namespace) {
            return Ok(());
        }
        let mut conn = server.open().await.map_err(|e| redact::text(&e.to_string()))?;
        let mut dropped = namespace_script(&mut conn, &dialect, "drop_namespace", namespace).await;
        if dropped.is_ok() {
            dropped = crate::isolation::check_dropped(&mut conn, &dialect, namespace).await;
        }
        Connection::close(conn).await;
        dropped.map_err(|e| redact::text(&e.to_string()))
    }
    .await;
    server.close().await;
    result
}

/// Why `scenario` is not judged through this adapter: a feature it needs
/// that the handshake does not declare, a policy that cannot judge it, or
/// `scan`/`apply` steps without `split_reap`.
fn skip_reason(scenario: &LoadedScenario, session: &Session, model: &Outcome) -> Option<String> {
    let name = &session.handshake.adapter.name;
    if let Some(why) = session.profile.policy.unjudgeable(&scenario.scenario) {
        return Some(format!("{name} {why}"));
    }
    if let Some(absent) = feature::needed(&scenario.scenario, model).into_iter().find(|f| !session.profile.has(*f)) {
        return Some(format!("{name} declares no {absent}"));
    }
    let split = scenario.scenario.steps.iter().any(|s| matches!(s.value(), Step::Scan(_) | Step::Apply(_)));
    if split && !session.handshake.capabilities.split_reap {
        return Some(format!("{name} declares no split_reap"));
    }
    None
}

/// The first checkpoint (0: after setup, `i + 1`: after step `i`) where
/// the adapter's state and the model's differ as compared under `profile`,
/// of those both have. Equal outcomes are equal once normalized
/// ([`relax::normalize`]), which means equal documents, so a pair is
/// normalized only when it is not equal, and rendered only when it is not
/// equal once normalized.
fn states_parting(model: &driver::Checkpoints, ours: &driver::Checkpoints, profile: &Profile) -> Option<usize> {
    model.iter().zip(ours.iter()).position(|(m, o)| {
        m != o
            && relax::normalize(m.clone(), profile) != relax::normalize(o.clone(), profile)
            && relax::document(m.clone(), profile) != relax::document(o.clone(), profile)
    })
}

/// The first checkpoint where the adapter and the model part (0: after
/// setup, `i + 1`: after step `i`): the earlier of the first step whose
/// result differs (`ours` possibly cut short) and the first state read
/// back that differs.
fn first_parting(
    ours: &[Option<StepResult>],
    model: &[Option<StepResult>],
    states: &[String],
    model_states: &[String],
) -> Option<usize> {
    let by_result = ours.iter().zip(model).position(|(a, b)| a != b).map(|i| i + 1);
    let by_state = states.iter().zip(model_states).position(|(a, b)| a != b);
    by_result.into_iter().chain(by_state).min()
}

/// The exchanges up to checkpoint `first` (`marks[i]`: the log's length
/// when step `i` started, so checkpoint `c` ends at `marks[c]`), or all
/// of them when nothing parted.
fn trace(log: &[Exchange], marks: &[usize], first: Option<usize>) -> String {
    let end = first.and_then(|c| marks.get(c)).copied().unwrap_or(log.len()).min(log.len());
    let shown = match first {
        Some(0) => "the requests and replies of setup (where the adapter and the model part):".to_owned(),
        Some(c) => {
            format!("the requests and replies up to step {c} (the first where the adapter and the model part):")
        }
        None => "the requests and replies:".to_owned(),
    };
    let mut out = shown;
    for e in &log[..end] {
        out.push_str(&format!("\n  > {}", cut(&e.request)));
        match &e.reply {
            Some(r) => out.push_str(&format!("\n  < {}", cut(r))),
            None => out.push_str("\n  < (no reply)"),
        }
    }
    if end < log.len() {
        let more = log.len() - end;
        out.push_str(&format!("\n  ({more} more exchange{})", if more == 1 { "" } else { "s" }));
    }
    out
}

/// The longest line of an exchange a failure shows, in characters.
const SHOWN_LINE_CHARS: usize = 1000;

/// `line` cut to [`SHOWN_LINE_CHARS`], saying how much was left out.
fn cut(line: &str) -> String {
    match line.char_indices().nth(SHOWN_LINE_CHARS) {
        None => line.to_owned(),
        Some((at, _)) => format!("{}... ({} more bytes)", &line[..at], line.len() - at),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::ClaimResult;

    fn exchange(n: usize) -> Exchange {
        Exchange { request: format!("req{n}"), reply: Some(format!("rep{n}")) }
    }

    #[test]
    fn the_trace_stops_at_the_first_step_that_parts() {
        let log: Vec<Exchange> = (0..6).map(exchange).collect();
        // setup + clock, then steps starting at exchanges 2, 3 and 5.
        let marks = [2, 3, 5, 6];
        let t = trace(&log, &marks, Some(2));
        assert!(t.contains("up to step 2") && t.contains("req4") && !t.contains("req5"), "{t}");
        let setup = trace(&log, &marks, Some(0));
        assert!(setup.contains("of setup") && setup.contains("req1") && !setup.contains("req2"), "{setup}");
        assert!(t.ends_with("(1 more exchange)"), "{t}");
        let all = trace(&log, &marks, None);
        assert!(all.contains("req5") && !all.contains("more exchanges"), "{all}");
        let short = trace(&log[..3], &marks, Some(1));
        assert!(short.contains("req2"), "{short}");
        let long = [Exchange { request: "x".repeat(SHOWN_LINE_CHARS + 5), reply: None }];
        let t = trace(&long, &[], None);
        assert!(t.contains("... (5 more bytes)") && t.contains("< (no reply)"), "{t}");
    }

    #[test]
    fn runs_part_where_a_result_or_a_state_first_differs() {
        let a = [Some(StepResult::Reap(1)), None, Some(StepResult::Claim(ClaimResult::Claimed))];
        let b = [Some(StepResult::Reap(1)), None, Some(StepResult::Claim(ClaimResult::NotClaimable))];
        let same: Vec<String> = (0..4).map(|i| i.to_string()).collect();
        assert_eq!(first_parting(&a, &b, &same, &same), Some(3));
        assert_eq!(first_parting(&a[..2], &b, &same[..3], &same), None);
        let mut differs = same.clone();
        differs[1] = "x".into();
        assert_eq!(first_parting(&a, &b, &differs, &same), Some(1), "the state after step 1 parts first");
        differs[0] = "x".into();
        assert_eq!(first_parting(&a, &a, &differs, &same), Some(0), "setup wrote other rows");
    }

    #[test]
    fn states_part_at_the_first_checkpoint_that_differs_under_the_profile() {
        let profile = Profile::default();
        let state = |steps: usize| Outcome { steps: vec![None; steps], ..Outcome::default() };
        let model = vec![state(0), state(1), state(2)];
        assert_eq!(states_parting(&model, &model.clone(), &profile), None);
        assert_eq!(states_parting(&model, &model[..2].to_vec(), &profile), None, "only the states both have");
        let mut ours = model.clone();
        ours[1].steps = vec![Some(StepResult::Reap(1))];
        assert_eq!(states_parting(&model, &ours, &profile), Some(1));
    }
}
