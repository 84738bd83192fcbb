//! Reading and writing steps: `reap` alone, or a one-key map such as
//! `claim: a` or `scan: { reaper: r2 }`.
//!
//! Hand-written rather than `serde(untagged)`, so that a bad step says which
//! step and what it takes instead of "did not match any variant".

use std::fmt;

use serde::de::value::MapAccessDeserializer;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};

use super::located::{Located, Position};
use super::types::{ApplyArgs, AttemptRef, ClaimArgs, ReapArgs, ScanArgs, SetArgs, Step};
use crate::time::Duration;

const STEPS: &[&str] = &["reap", "scan", "apply", "claim", "heartbeat", "complete", "fail", "advance", "set"];

impl<'de> Deserialize<'de> for Step {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(StepVisitor)
    }
}

struct StepVisitor;

impl<'de> Visitor<'de> for StepVisitor {
    type Value = Step;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a step: `reap`, `scan`, `apply`, or a one-key map such as `claim: a` or `advance: 5m`")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Step, E> {
        match v {
            "reap" => Ok(Step::Reap(ReapArgs::default())),
            "scan" => Ok(Step::Scan(ScanArgs::default())),
            "apply" => Ok(Step::Apply(ApplyArgs::default())),
            "claim" | "heartbeat" | "complete" | "fail" => {
                Err(E::custom(format!("`{v}` needs a job: write `{v}: <job id>`")))
            }
            "advance" => Err(E::custom("`advance` needs a duration: write `advance: 5m`")),
            "set" => Err(E::custom("`set` needs settings: write `set: { heartbeat_grace: 0 }`")),
            other => Err(E::unknown_variant(other, STEPS)),
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Step, A::Error> {
        let Some(key) = map.next_key::<String>()? else {
            return Err(de::Error::custom("a step map needs one key naming the step"));
        };
        let step = match key.as_str() {
            "reap" => Step::Reap(map.next_value::<Option<ReapArgs>>()?.unwrap_or_default()),
            "scan" => Step::Scan(map.next_value::<Option<ScanArgs>>()?.unwrap_or_default()),
            "apply" => Step::Apply(map.next_value::<Option<ApplyArgs>>()?.unwrap_or_default()),
            "claim" => Step::Claim(map.next_value::<ClaimArgs>()?),
            "heartbeat" => Step::Heartbeat(map.next_value::<AttemptRef>()?),
            "complete" => Step::Complete(map.next_value::<AttemptRef>()?),
            "fail" => Step::Fail(map.next_value::<AttemptRef>()?),
            "advance" => Step::Advance(map.next_value::<Duration>()?),
            "set" => Step::Set(map.next_value::<SetArgs>()?),
            other => return Err(de::Error::unknown_variant(other, STEPS)),
        };
        if let Some(extra) = map.next_key::<String>()? {
            return Err(de::Error::custom(format!(
                "a step has exactly one key; `{extra}` starts a second step: put it in its own list item"
            )));
        }
        Ok(step)
    }
}

/// Either a bare job name or a map, read without `serde(untagged)`.
enum Either<H> {
    Name(String),
    Map(H),
}

impl<'de, H: Deserialize<'de>> Deserialize<'de> for Either<H> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<H>(std::marker::PhantomData<H>);
        impl<'de, H: Deserialize<'de>> Visitor<'de> for V<H> {
            type Value = Either<H>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a job id, or a map with `job`")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Either<H>, E> {
                Ok(Either::Name(v.to_owned()))
            }
            // A plain `claim: 7` names job `7`, as `id: 7` does.
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Either<H>, E> {
                Ok(Either::Name(v.to_string()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Either<H>, E> {
                Ok(Either::Name(v.to_string()))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Either<H>, A::Error> {
                H::deserialize(MapAccessDeserializer::new(map)).map(Either::Map)
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// Reads `Either<H>` with its position, turning a bare name into a job.
fn job_or_map<'de, D: Deserializer<'de>, H: Deserialize<'de>>(d: D) -> Result<Result<H, Located<String>>, D::Error> {
    let spanned = serde_saphyr::Spanned::<Either<H>>::deserialize(d)?;
    Ok(match spanned.value {
        Either::Map(h) => Ok(h),
        Either::Name(name) => {
            let at = spanned.referenced;
            let position = (at.line() > 0).then(|| Position { line: at.line(), column: at.column() });
            Err(Located::at(name, position))
        }
    })
}

/// The map form of `claim`, derived so unknown keys are denied.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ClaimMap {
    job: Located<String>,
    #[serde(default, rename = "as")]
    label: Option<Located<String>>,
}

impl<'de> Deserialize<'de> for ClaimArgs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match job_or_map::<D, ClaimMap>(d)? {
            Ok(m) => ClaimArgs { job: m.job, label: m.label },
            Err(job) => ClaimArgs { job, label: None },
        })
    }
}

/// The map form of `heartbeat`, `complete` and `fail`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AttemptMap {
    job: Located<String>,
    #[serde(default)]
    attempt: Option<Located<String>>,
}

impl<'de> Deserialize<'de> for AttemptRef {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match job_or_map::<D, AttemptMap>(d)? {
            Ok(m) => AttemptRef { job: m.job, attempt: m.attempt },
            Err(job) => AttemptRef { job, attempt: None },
        })
    }
}

impl Serialize for Step {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        fn one<S: Serializer, V: Serialize + ?Sized>(s: S, key: &str, value: &V) -> Result<S::Ok, S::Error> {
            let mut map = s.serialize_map(Some(1))?;
            map.serialize_entry(key, value)?;
            map.end()
        }
        let key = self.keyword();
        match self {
            Step::Reap(a) if *a == ReapArgs::default() => s.serialize_str(key),
            Step::Scan(a) if *a == ScanArgs::default() => s.serialize_str(key),
            Step::Apply(a) if *a == ApplyArgs::default() => s.serialize_str(key),
            Step::Reap(a) => one(s, key, a),
            Step::Scan(a) => one(s, key, a),
            Step::Apply(a) => one(s, key, a),
            Step::Claim(a) if a.label.is_none() => one(s, key, a.job.as_str()),
            Step::Claim(a) => one(s, key, a),
            Step::Heartbeat(a) | Step::Complete(a) | Step::Fail(a) if a.attempt.is_none() => {
                one(s, key, a.job.as_str())
            }
            Step::Heartbeat(a) | Step::Complete(a) | Step::Fail(a) => one(s, key, a),
            Step::Advance(d) => one(s, key, d),
            Step::Set(a) => one(s, key, a),
        }
    }
}
