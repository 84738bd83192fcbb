//! A dialect's profile, `dialects/<name>/dialect.toml`: the queue's
//! deliberate, documented differences from the reference semantics, each
//! with a reason (docs/dialect-profile.md). Without the file a dialect has
//! the default profile: the reference semantics exactly.

use std::collections::BTreeSet;
use std::fmt;

use serde::Deserialize;
use toml::Spanned;

use crate::backend::InstantEncoding;
use crate::feature::Feature;
use crate::policy::{Policy, PolicyFile, StateFile};
use crate::resolution::Resolution;

/// The name of the profile file inside a dialect folder.
pub const FILE_NAME: &str = "dialect.toml";

/// Whether a queue clears `claim_token` when a row leaves `processing`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimTokens {
    /// Cleared on every finished row, as the model does (reference).
    #[default]
    Cleared,
    /// Kept on rows that are not `processing`; compared only on processing
    /// rows (harmless where every write also checks `status = 'processing'`).
    Kept,
}

/// The order a queue fires `on_failure` hooks in across jobs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookOrder {
    /// In order of job id, the reaper's scan order (reference).
    #[default]
    ById,
    /// Unspecified (table order): `on_failure` events, and the candidate
    /// lists of `scan` steps that decide their order, compare as multisets.
    Unordered,
}

/// The profile in effect for one dialect.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Profile {
    /// The queue's clock resolution; instants bound to it are truncated.
    pub time_resolution: Resolution,
    /// The features the queue has; scenarios that need another are skipped.
    pub features: BTreeSet<Feature>,
    /// Whether finished rows keep their claim token.
    pub claim_tokens: ClaimTokens,
    /// The order of hooks across jobs.
    pub hook_order: HookOrder,
    /// How the queue stores instants, and so how they are bound and read
    /// (docs/decode-types.md). It changes no outcome: a port that stores
    /// whole seconds also declares `time_resolution`.
    pub instants: InstantEncoding,
    /// The reaper policy: `[policy.*]` and `[state.*]` (docs/policy.md).
    pub policy: Policy,
    /// Each knob the file sets, with its reason, in file order: (knob, value, reason).
    pub declared: Vec<(&'static str, String, String)>,
}

impl Default for Profile {
    fn default() -> Self {
        Profile {
            time_resolution: Resolution::default(),
            features: Feature::ALL.into_iter().collect(),
            claim_tokens: ClaimTokens::default(),
            hook_order: HookOrder::default(),
            instants: InstantEncoding::default(),
            policy: Policy::default(),
            declared: Vec::new(),
        }
    }
}

impl Profile {
    /// True for the reference semantics: outcomes compare with the
    /// snapshots unchanged.
    pub fn is_reference(&self) -> bool {
        self.time_resolution == Resolution::Micro
            && self.claim_tokens == ClaimTokens::Cleared
            && self.hook_order == HookOrder::ById
            && self.policy.is_reference()
    }

    /// Whether the queue has `feature`.
    pub fn has(&self, feature: Feature) -> bool {
        self.features.contains(&feature)
    }

    /// Reads a profile from the text of a `dialect.toml`. An unknown key, an
    /// unknown value or feature, or a knob without a non-blank `reason` is
    /// an error at its line and column (both from 1).
    pub fn parse(text: &str) -> Result<Profile, ProfileError> {
        let file: ProfileFile = toml::from_str(text).map_err(|e| {
            let (line, column) = e.span().map_or((1, 1), |s| line_column(text, s.start));
            ProfileError { line, column, message: e.message().trim().to_owned() }
        })?;
        let mut profile = Profile::default();
        let mut declared = Vec::new();
        let mut note = |knob: &'static str, value: String, reason: &Spanned<String>| {
            if reason.get_ref().trim().is_empty() {
                let (line, column) = line_column(text, reason.span().start);
                return Err(ProfileError {
                    line,
                    column,
                    message: format!("`{knob}` has a blank reason: say why the queue differs"),
                });
            }
            declared.push((knob, value, reason.get_ref().trim().to_owned()));
            Ok(())
        };
        if let Some(k) = file.time_resolution {
            note("time_resolution", k.value.to_string(), &k.reason)?;
            profile.time_resolution = k.value;
        }
        if let Some(k) = file.features {
            let mut seen = BTreeSet::new();
            if let Some(twice) = k.value.iter().find(|f| !seen.insert(**f)) {
                let (line, column) = line_column(text, k.reason.span().start);
                return Err(ProfileError {
                    line,
                    column,
                    message: format!("`features` names `{twice}` twice: name each feature the queue has once"),
                });
            }
            let names: Vec<&str> = k.value.iter().map(|f| f.as_str()).collect();
            note("features", format!("[{}]", names.join(", ")), &k.reason)?;
            profile.features = k.value.into_iter().collect();
        }
        if let Some(k) = file.claim_token_on_finished_rows {
            note("claim_token_on_finished_rows", format!("{:?}", k.value).to_lowercase(), &k.reason)?;
            profile.claim_tokens = k.value;
        }
        if let Some(k) = file.hook_order {
            let value = match k.value {
                HookOrder::ById => "by_id",
                HookOrder::Unordered => "unordered",
            };
            note("hook_order", value.to_owned(), &k.reason)?;
            profile.hook_order = k.value;
        }
        let file_instants_reason = file.instants.as_ref().map(|k| k.reason.span().start);
        if let Some(k) = file.instants {
            note("instants", k.value.to_string(), &k.reason)?;
            profile.instants = k.value;
        }
        if let Some(step) = profile.instants.whole_unit_micros()
            && profile.time_resolution.micros() < step
        {
            let at = file_instants_reason.map_or((1, 1), |start| line_column(text, start));
            return Err(ProfileError {
                line: at.0,
                column: at.1,
                message: format!(
                    "`instants = {}` stores whole units, but `time_resolution` is {}: declare `time_resolution` \
                     of at least one unit (`1s` for epoch_seconds, `1ms` for epoch_millis)",
                    profile.instants, profile.time_resolution
                ),
            });
        }
        profile.policy = Policy::from_files(file.policy, file.state).map_err(|e| {
            let (line, column) = e.offset.map_or((1, 1), |o| line_column(text, o));
            ProfileError { line, column, message: e.message }
        })?;
        declared.extend(profile.policy.declared.iter().cloned());
        profile.declared = declared;
        Ok(profile)
    }
}

/// The profile in words, one knob a line, as `reapcheck check` prints it.
impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.declared.is_empty() {
            return f.write_str("reference semantics (no dialect.toml)");
        }
        for (i, (knob, value, reason)) in self.declared.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{knob} = {value} ({reason})")?;
        }
        Ok(())
    }
}

/// A `dialect.toml` that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ProfileError {
    /// Line of the offending text, from 1.
    pub line: usize,
    /// Column of the offending text, from 1 (in characters).
    pub column: usize,
    /// What is wrong and what to do.
    pub message: String,
}

/// One knob: its value and why the queue needs it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Knob<T> {
    value: T,
    reason: Spanned<String>,
}

/// The file as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileFile {
    time_resolution: Option<Knob<Resolution>>,
    features: Option<Knob<Vec<Feature>>>,
    claim_token_on_finished_rows: Option<Knob<ClaimTokens>>,
    hook_order: Option<Knob<HookOrder>>,
    instants: Option<Knob<InstantEncoding>>,
    policy: Option<PolicyFile<Spanned<String>>>,
    state: Option<StateFile<Spanned<String>>>,
}

/// The 1-based line and character column of byte `offset` in `text`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_knob_is_the_reference() {
        let p = Profile::parse("").unwrap();
        assert!(p.is_reference());
        assert_eq!(p, Profile::default());
        assert!(Feature::ALL.iter().all(|f| p.has(*f)));
    }

    #[test]
    fn every_knob_reads_with_its_reason() {
        let p = Profile::parse(
            "time_resolution = { value = \"1s\", reason = \"whole seconds\" }\n\
             features = { value = [\"legacy\", \"hooks\"], reason = \"old version\" }\n\
             claim_token_on_finished_rows = { value = \"kept\", reason = \"writes check status\" }\n\
             [hook_order]\nvalue = \"unordered\"\nreason = \"table order\"\n",
        )
        .unwrap();
        assert_eq!(p.time_resolution, Resolution::Second);
        assert_eq!(p.features, BTreeSet::from([Feature::Legacy, Feature::Hooks]));
        assert_eq!((p.claim_tokens, p.hook_order), (ClaimTokens::Kept, HookOrder::Unordered));
        assert!(!p.is_reference());
        assert_eq!(
            p.to_string(),
            "time_resolution = 1s (whole seconds); features = [legacy, hooks] (old version); \
             claim_token_on_finished_rows = kept (writes check status); hook_order = unordered (table order)"
        );
    }

    fn error(text: &str) -> ProfileError {
        Profile::parse(text).unwrap_err()
    }

    #[test]
    fn an_unknown_key_is_an_error_at_its_place() {
        let e = error("# a port\ntime_zone = { value = \"1s\", reason = \"x\" }\n");
        assert_eq!((e.line, e.column), (2, 1), "{e}");
        assert!(e.message.contains("unknown field `time_zone`"), "{e}");
        let e = error("time_resolution = { value = \"1s\", reason = \"x\", why = \"y\" }\n");
        assert_eq!(e.line, 1, "{e}");
        assert!(e.message.contains("unknown field `why`"), "{e}");
    }

    #[test]
    fn an_unknown_feature_or_value_is_an_error_at_its_place() {
        let e = error("features = { value = [\"leases\", \"cron\"], reason = \"x\" }\n");
        assert_eq!((e.line, e.column), (1, 33), "{e}");
        assert!(e.message.contains("unknown variant `cron`"), "{e}");
        let e = error("\ntime_resolution = { value = \"2s\", reason = \"x\" }\n");
        assert_eq!((e.line, e.column), (2, 29), "{e}");
    }

    #[test]
    fn a_knob_without_a_reason_is_an_error() {
        let e = error("[time_resolution]\nvalue = \"1s\"\n");
        assert!(e.message.contains("missing field `reason`"), "{e}");
        assert_eq!(e.line, 1, "{e}");
        let e = error("hook_order = { value = \"unordered\", reason = \"  \" }\n");
        assert_eq!((e.line, e.column), (1, 46), "{e}");
        assert!(e.message.contains("blank reason"), "{e}");
    }

    #[test]
    fn the_instant_encoding_is_a_knob_that_keeps_the_reference_semantics() {
        let p = Profile::parse("instants = { value = \"naive_utc\", reason = \"timestamp columns\" }\n").unwrap();
        assert_eq!(p.instants, InstantEncoding::NaiveUtc);
        assert!(p.is_reference(), "how instants are stored changes no outcome");
        assert_eq!(p.to_string(), "instants = naive_utc (timestamp columns)");
        let e = error("instants = { value = \"epoch_hours\", reason = \"x\" }\n");
        assert!(e.message.contains("unknown variant `epoch_hours`"), "{e}");
    }

    #[test]
    fn an_epoch_encoding_finer_than_the_resolution_and_a_repeated_feature_are_errors() {
        let e = error("instants = { value = \"epoch_seconds\", reason = \"INTEGER seconds\" }\n");
        assert_eq!(e.line, 1, "{e}");
        assert!(e.message.contains("declare `time_resolution` of at least one unit"), "{e}");
        let ok = "time_resolution = { value = \"1s\", reason = \"s\" }\n\
                  instants = { value = \"epoch_seconds\", reason = \"INTEGER seconds\" }\n";
        assert!(Profile::parse(ok).is_ok());
        let ms = "time_resolution = { value = \"1ms\", reason = \"ms\" }\n\
                  instants = { value = \"epoch_millis\", reason = \"INTEGER ms\" }\n";
        assert!(Profile::parse(ms).is_ok());
        let e = error("features = { value = [\"legacy\", \"legacy\"], reason = \"x\" }\n");
        assert!(e.message.contains("names `legacy` twice"), "{e}");
    }

    #[test]
    fn policy_knobs_are_part_of_the_profile_and_its_errors_have_places() {
        let p = Profile::parse("[policy.retry]\nvalue = \"immediate\"\nreason = \"revived at once\"\n").unwrap();
        assert!(!p.is_reference());
        assert_eq!(p.policy.retry, crate::policy::Retry::Immediate);
        assert_eq!(p.to_string(), "retry = immediate (revived at once)");
        let e = error("\n[policy.retry]\nvalue = \"later\"\nreason = \"x\"\n");
        assert_eq!((e.line, e.column), (3, 9), "{e}");
        let e = error("[policy.claim_window]\nvalue = \"none\"\nreason = \"pick beats\"\n");
        assert_eq!(e.line, 3, "{e}");
        assert!(e.message.contains("could never be reclaimed"), "{e}");
        let e = error("[policy]\nwhy = 1\n");
        assert!(e.message.contains("unknown field `why`"), "{e}");
    }

    #[test]
    fn columns_count_characters() {
        assert_eq!(line_column("é\nab", 4), (2, 2));
        assert_eq!(line_column("éa", 2), (1, 2));
    }
}
