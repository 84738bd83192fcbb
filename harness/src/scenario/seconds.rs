//! Reading the scenario's whole-second settings (`timeout`,
//! `heartbeat_grace`, `base_delay`, `max_delay`, `claim_timeout`) and
//! counters (`attempts`, `max_retries`), each within a declared range, so
//! that `check` refuses a value the run could not compute or store (see
//! docs/scenario-format.md, "Time range"). A value with a unit (`30s`,
//! `5m`) is refused with the integer to write instead.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};

use crate::time::{Duration, MAX_SECONDS};

/// The largest `attempts` or `max_retries` magnitude: 2³¹ - 1, so counting
/// claims up or down never overflows a 64-bit column or the model.
pub const MAX_COUNTER: i64 = i32::MAX as i64;

/// An integer in `min..=max`, read from a YAML number.
struct Bounded<const KIND: u8>(i64);

/// Whole seconds, negative allowed (a timeout or grace <= 0 has a meaning).
const SIGNED_SECONDS: u8 = 0;
/// Whole seconds, zero or more (a backoff).
const NON_NEGATIVE_SECONDS: u8 = 1;
/// A count of attempts.
const COUNTER: u8 = 2;

impl<const KIND: u8> Bounded<KIND> {
    const MIN: i64 = match KIND {
        SIGNED_SECONDS => -MAX_SECONDS,
        NON_NEGATIVE_SECONDS => 0,
        _ => -MAX_COUNTER,
    };
    const MAX: i64 = match KIND {
        COUNTER => MAX_COUNTER,
        _ => MAX_SECONDS,
    };
    const WHAT: &'static str = match KIND {
        COUNTER => "a whole number",
        _ => "whole seconds as an integer",
    };
}

struct BoundedVisitor<const KIND: u8>;

impl<'de, const KIND: u8> Visitor<'de> for BoundedVisitor<KIND> {
    type Value = Bounded<KIND>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} from {} to {}", Bounded::<KIND>::WHAT, Bounded::<KIND>::MIN, Bounded::<KIND>::MAX)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        if (Bounded::<KIND>::MIN..=Bounded::<KIND>::MAX).contains(&v) {
            return Ok(Bounded(v));
        }
        let why = if KIND == COUNTER {
            "so that counting claims cannot overflow"
        } else {
            "the longest span of the range every backend stores"
        };
        Err(E::custom(format!(
            "`{v}` is out of range: this field takes {} from {} to {} ({why})",
            Bounded::<KIND>::WHAT,
            Bounded::<KIND>::MIN,
            Bounded::<KIND>::MAX
        )))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        self.visit_i64(i64::try_from(v).unwrap_or(i64::MAX))
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Self::Value, E> {
        self.visit_i64(i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX }))
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Self::Value, E> {
        self.visit_i64(i64::try_from(v).unwrap_or(i64::MAX))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Err(E::custom(format!("`{v}` is not whole: this field takes {}", Bounded::<KIND>::WHAT)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        if let Ok(n) = v.trim().parse::<i64>() {
            return self.visit_i64(n);
        }
        if KIND != COUNTER
            && let Ok(d) = Duration::parse(v.trim())
        {
            let micros = d.as_micros();
            let fix = if micros % 1_000_000 == 0 {
                format!("write `{}`", micros / 1_000_000)
            } else {
                "write a whole number of seconds".to_owned()
            };
            return Err(E::custom(format!(
                "`{v}` has a unit, but this field takes whole seconds as an integer with no unit: {fix}"
            )));
        }
        Err(E::custom(format!("`{v}` is not a number: this field takes {}", Bounded::<KIND>::WHAT)))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Err(E::custom(format!("`{v}` is not a number: this field takes {}", Bounded::<KIND>::WHAT)))
    }
}

impl<'de, const KIND: u8> Deserialize<'de> for Bounded<KIND> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(BoundedVisitor::<KIND>)
    }
}

macro_rules! readers {
    ($module:ident, $kind:expr, $doc:literal) => {
        #[doc = $doc]
        pub mod $module {
            use super::*;

            /// A required or defaulted value.
            pub fn plain<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
                Bounded::<{ $kind }>::deserialize(d).map(|b| b.0)
            }

            /// An optional value (`null` or absent is `None`).
            #[allow(dead_code, reason = "not every kind has an optional field")]
            pub fn option<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
                Option::<Bounded<{ $kind }>>::deserialize(d).map(|o| o.map(|b| b.0))
            }

            /// A value whose `null` differs from its absence.
            #[allow(dead_code, reason = "not every kind has such a field")]
            pub fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<i64>>, D::Error> {
                option(d).map(Some)
            }
        }
    };
}

readers!(signed, SIGNED_SECONDS, "Seconds from `-MAX_SECONDS` to `MAX_SECONDS`.");
readers!(non_negative, NON_NEGATIVE_SECONDS, "Seconds from 0 to `MAX_SECONDS`.");
readers!(counter, COUNTER, "Counters from `-MAX_COUNTER` to `MAX_COUNTER`.");
