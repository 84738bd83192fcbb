//! Instants and signed durations, exact to the microsecond.
//!
//! Scenario files and outcomes speak in durations such as `-10m`, `+1h30m` or
//! `-0.000001s`. No published duration crate accepts a sign, fractional
//! seconds down to the microsecond *and* prints the canonical form the
//! scenario format requires (humantime has no sign and no fractions, and
//! prints spaces), so the grammar lives here, with property tests.

use std::fmt;

use chrono::{DateTime, SecondsFormat, Utc};

const MICROS_PER_SECOND: i64 = 1_000_000;
const UNITS: [(char, i64); 4] = [
    ('d', 86_400 * MICROS_PER_SECOND),
    ('h', 3_600 * MICROS_PER_SECOND),
    ('m', 60 * MICROS_PER_SECOND),
    ('s', MICROS_PER_SECOND),
];

/// A signed span of time in whole microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration {
    micros: i64,
}

impl Duration {
    /// No time at all.
    pub const ZERO: Duration = Duration { micros: 0 };

    /// A duration of `micros` microseconds.
    pub const fn from_micros(micros: i64) -> Self {
        Duration { micros }
    }

    /// A duration of `seconds` whole seconds, saturating at the ends of
    /// `i64` microseconds (about ±292,000 years); see
    /// [`Duration::checked_from_secs`].
    pub const fn from_secs(seconds: i64) -> Self {
        Duration { micros: seconds.saturating_mul(MICROS_PER_SECOND) }
    }

    /// The length in microseconds.
    pub const fn as_micros(self) -> i64 {
        self.micros
    }

    /// Parses the scenario syntax: an optional sign, then one or more
    /// `<number><unit>` parts with units `d h m s` largest first; only the
    /// seconds may carry a fraction, of at most six digits.
    pub fn parse(text: &str) -> Result<Self, DurationError> {
        let invalid = |why: &'static str| DurationError { text: text.to_owned(), why };
        let (negative, mut rest) = match text.as_bytes().first() {
            Some(b'-') => (true, &text[1..]),
            Some(b'+') => (false, &text[1..]),
            _ => (false, text),
        };
        if rest.is_empty() {
            return Err(invalid("it has no number"));
        }
        let mut total: i64 = 0;
        let mut last_unit = None;
        while !rest.is_empty() {
            let digits = rest.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(rest.len());
            let (number, after) = rest.split_at(digits);
            let unit = after.chars().next().ok_or_else(|| invalid("a number has no unit (d, h, m or s)"))?;
            let index = UNITS.iter().position(|(u, _)| *u == unit).ok_or_else(|| invalid("units are d, h, m and s"))?;
            if last_unit.is_some_and(|last| index <= last) {
                return Err(invalid("units must appear once each, largest first"));
            }
            last_unit = Some(index);
            let part = parse_part(number, UNITS[index].1, unit == 's').map_err(invalid)?;
            total = total.checked_add(part).ok_or_else(|| invalid("it is too large"))?;
            rest = &after[unit.len_utf8()..];
        }
        Ok(Duration { micros: if negative { -total } else { total } })
    }
}

fn parse_part(number: &str, unit_micros: i64, fraction_allowed: bool) -> Result<i64, &'static str> {
    let (whole, fraction) = match number.split_once('.') {
        Some((whole, fraction)) if fraction_allowed => (whole, Some(fraction)),
        Some(_) => return Err("only seconds may have a fraction"),
        None => (number, None),
    };
    if whole.is_empty() || !whole.bytes().all(|b| b.is_ascii_digit()) {
        return Err("each part needs a whole number before its unit");
    }
    let whole: i64 = whole.parse().map_err(|_| "it is too large")?;
    let mut micros = whole.checked_mul(unit_micros).ok_or("it is too large")?;
    if let Some(fraction) = fraction {
        if fraction.is_empty() || fraction.len() > 6 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
            return Err("a fraction of a second has one to six digits");
        }
        let padded = format!("{fraction:0<6}");
        let fraction = padded.parse::<i64>().map_err(|_| "bad fraction")?;
        micros = micros.checked_add(fraction).ok_or("it is too large")?;
    }
    Ok(micros)
}

/// Prints the canonical form: a sign on every non-zero value, units largest
/// first with no zero units, seconds with up to six decimals and no trailing
/// zeros, and `0s` for zero.
impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.micros == 0 {
            return f.write_str("0s");
        }
        f.write_str(if self.micros < 0 { "-" } else { "+" })?;
        let mut rest = self.micros.unsigned_abs();
        for (unit, size) in &UNITS[..3] {
            let size = *size as u64;
            if rest >= size {
                write!(f, "{}{unit}", rest / size)?;
                rest %= size;
            }
        }
        if rest > 0 {
            let seconds = rest / MICROS_PER_SECOND as u64;
            let fraction = rest % MICROS_PER_SECOND as u64;
            if fraction == 0 {
                write!(f, "{seconds}s")?;
            } else {
                let digits = format!("{fraction:06}");
                write!(f, "{seconds}.{}s", digits.trim_end_matches('0'))?;
            }
        }
        Ok(())
    }
}

impl Duration {
    /// `seconds` whole seconds, or `None` when that many microseconds do not
    /// fit in an `i64`.
    pub const fn checked_from_secs(seconds: i64) -> Option<Self> {
        match seconds.checked_mul(MICROS_PER_SECOND) {
            Some(micros) => Some(Duration { micros }),
            None => None,
        }
    }

    /// The sum, or `None` on overflow.
    pub const fn checked_add(self, other: Duration) -> Option<Duration> {
        match self.micros.checked_add(other.micros) {
            Some(micros) => Some(Duration { micros }),
            None => None,
        }
    }

    /// Whether no two instants of [`Instant::MIN`]..=[`Instant::MAX`] are
    /// further apart than this, in either direction.
    pub const fn within_range_span(self) -> bool {
        self.micros.unsigned_abs() <= RANGE_SPAN_MICROS
    }
}

/// [`Instant::MAX`] minus [`Instant::MIN`], in microseconds.
const RANGE_SPAN_MICROS: u64 = (Instant::MAX.micros - Instant::MIN.micros) as u64;

/// The longest span of the declared range in whole seconds, rounded up:
/// 284,012,524,800 s (about 9,000 years). No value in seconds a scenario
/// gives (a timeout, a grace, a backoff) may be longer than this, since
/// added to any instant of the range it would leave the range.
pub const MAX_SECONDS: i64 = (RANGE_SPAN_MICROS as i64) / MICROS_PER_SECOND + 1;

impl std::ops::Add for Duration {
    type Output = Duration;
    /// Saturates at the ends of `i64`; see [`Duration::checked_add`].
    fn add(self, other: Duration) -> Duration {
        Duration { micros: self.micros.saturating_add(other.micros) }
    }
}

impl std::ops::Neg for Duration {
    type Output = Duration;
    fn neg(self) -> Duration {
        Duration { micros: self.micros.saturating_neg() }
    }
}

/// A duration that does not follow the scenario syntax.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid duration `{text}`: {why}; write a signed number with units d, h, m, s such as `-10m`, `1h30m` or `-0.000001s`"
)]
pub struct DurationError {
    text: String,
    why: &'static str,
}

/// A point in time: microseconds since the Unix epoch, UTC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant {
    micros: i64,
}

impl Instant {
    /// The earliest instant a scenario may reach: 1000-01-01T00:00:00Z,
    /// the first a MySQL or MariaDB `DATETIME(6)` column holds (SQL Server's
    /// `datetime2` starts at year 1, PostgreSQL's `timestamptz` in 4713 BC,
    /// SQLite stores µs since the epoch in an `INTEGER`).
    pub const MIN: Instant = Instant { micros: -30_610_224_000 * MICROS_PER_SECOND };

    /// The latest instant a scenario may reach: 9999-12-31T23:59:59.999999Z,
    /// the last `DATETIME(6)` and `datetime2(6)` hold.
    pub const MAX: Instant = Instant { micros: 253_402_300_799 * MICROS_PER_SECOND + 999_999 };

    /// Whether this instant lies in [`Instant::MIN`]..=[`Instant::MAX`], the
    /// range every backend stores (docs/scenario-format.md, "Time range").
    pub const fn in_range(self) -> bool {
        self.micros >= Instant::MIN.micros && self.micros <= Instant::MAX.micros
    }

    /// `self + d` when it lies in the declared range; `None` when it leaves
    /// the range (or would overflow).
    pub const fn checked_add(self, d: Duration) -> Option<Instant> {
        match self.micros.checked_add(d.micros) {
            Some(micros) if (Instant { micros }).in_range() => Some(Instant { micros }),
            _ => None,
        }
    }

    /// `self - d` when it lies in the declared range; `None` otherwise.
    pub const fn checked_sub(self, d: Duration) -> Option<Instant> {
        match self.micros.checked_sub(d.micros) {
            Some(micros) if (Instant { micros }).in_range() => Some(Instant { micros }),
            _ => None,
        }
    }

    /// The instant `micros` microseconds after the Unix epoch.
    pub const fn from_unix_micros(micros: i64) -> Self {
        Instant { micros }
    }

    /// Microseconds since the Unix epoch.
    pub const fn unix_micros(self) -> i64 {
        self.micros
    }

    /// Parses an RFC 3339 instant; a finer fraction than microseconds is an
    /// error rather than a silent rounding.
    pub fn parse_rfc3339(text: &str) -> Result<Self, InstantError> {
        let parsed = DateTime::parse_from_rfc3339(text)
            .map_err(|e| InstantError { text: text.to_owned(), why: e.to_string() })?;
        if parsed.timestamp_subsec_nanos() % 1_000 != 0 {
            return Err(InstantError { text: text.to_owned(), why: "it is finer than a microsecond".to_owned() });
        }
        Ok(Instant { micros: parsed.timestamp_micros() })
    }

    /// The same instant as a chrono UTC date-time, for drivers that bind one.
    ///
    /// `check` keeps every instant a scenario reaches in
    /// [`Instant::MIN`]..=[`Instant::MAX`], well inside chrono's range, and
    /// the driver refuses to compute one outside it; an instant made some
    /// other way beyond chrono's ±262,000 years is clamped to chrono's ends
    /// rather than panicking.
    pub fn to_chrono(self) -> DateTime<Utc> {
        DateTime::from_timestamp_micros(self.micros).unwrap_or(if self.micros < 0 {
            DateTime::<Utc>::MIN_UTC
        } else {
            DateTime::<Utc>::MAX_UTC
        })
    }

    /// The instant of a chrono UTC date-time, truncated to the microsecond.
    pub fn from_chrono(value: DateTime<Utc>) -> Self {
        Instant { micros: value.timestamp_micros() }
    }

    /// The signed time from `earlier` to `self` (saturating at the ends of
    /// `i64`, which two instants of the declared range never reach).
    pub fn since(self, earlier: Instant) -> Duration {
        Duration::from_micros(self.micros.saturating_sub(earlier.micros))
    }
}

impl std::ops::Add<Duration> for Instant {
    type Output = Instant;
    /// Saturates at the ends of `i64`; scenarios use
    /// [`Instant::checked_add`], which also keeps to the declared range.
    fn add(self, d: Duration) -> Instant {
        Instant { micros: self.micros.saturating_add(d.as_micros()) }
    }
}

impl std::ops::Sub<Duration> for Instant {
    type Output = Instant;
    /// Saturates at the ends of `i64`, like `+`.
    fn sub(self, d: Duration) -> Instant {
        Instant { micros: self.micros.saturating_sub(d.as_micros()) }
    }
}

/// Prints RFC 3339 in UTC with microseconds, for example
/// `2026-01-15T12:00:00.000001Z`.
impl fmt::Display for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_chrono().to_rfc3339_opts(SecondsFormat::AutoSi, true))
    }
}

/// An instant that is not RFC 3339.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid instant `{text}`: {why}; write RFC 3339 such as `2026-01-15T12:00:00Z`")]
pub struct InstantError {
    text: String,
    why: String,
}

/// A time field of a scenario: relative to the scenario's clock or absolute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeSpec {
    /// So long before (negative) or after the current clock.
    Relative(Duration),
    /// A fixed instant.
    Absolute(Instant),
}

impl TimeSpec {
    /// Parses a duration, or else an RFC 3339 instant.
    pub fn parse(text: &str) -> Result<Self, String> {
        match Duration::parse(text) {
            Ok(d) => Ok(TimeSpec::Relative(d)),
            Err(duration_error) => match Instant::parse_rfc3339(text) {
                Ok(i) => Ok(TimeSpec::Absolute(i)),
                // A text that starts like a date was meant as an instant.
                Err(instant_error) if text.len() >= 10 && text.as_bytes()[4] == b'-' => Err(instant_error.to_string()),
                Err(_) => Err(duration_error.to_string()),
            },
        }
    }

    /// The instant this names when the clock reads `now`.
    pub fn resolve(self, now: Instant) -> Instant {
        match self {
            TimeSpec::Relative(d) => now + d,
            TimeSpec::Absolute(i) => i,
        }
    }

    /// [`TimeSpec::resolve`], or `None` when the instant leaves the
    /// declared range [`Instant::MIN`]..=[`Instant::MAX`].
    pub fn checked_resolve(self, now: Instant) -> Option<Instant> {
        match self {
            TimeSpec::Relative(d) => now.checked_add(d),
            TimeSpec::Absolute(i) => i.in_range().then_some(i),
        }
    }
}

impl fmt::Display for TimeSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TimeSpec::Relative(d) => d.fmt(f),
            TimeSpec::Absolute(i) => i.fmt(f),
        }
    }
}

/// Reads durations, instants and time specs from their text forms, so a bad
/// value is reported at its own line and column.
mod serde_text {
    use super::{Duration, Instant, TimeSpec};
    use serde::de::{self, Deserializer, Visitor};
    use serde::{Deserialize, Serialize, Serializer};
    use std::fmt;

    struct TextVisitor<F>(&'static str, F);

    impl<'de, T, F: FnOnce(&str) -> Result<T, String>> Visitor<'de> for TextVisitor<F> {
        type Value = T;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.0)
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
            (self.1)(v).map_err(E::custom)
        }
        // `0` and `30` parse as integers in YAML; name the missing unit.
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
            Err(E::custom(format!("`{v}` has no unit; write `{v}s` or another unit (d, h, m, s)")))
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
            Err(E::custom(format!("`{v}` has no unit; write `{v}s` or another unit (d, h, m, s)")))
        }
    }

    /// `d` when it is no longer than the declared range: a longer one,
    /// added to any instant of the range, leaves it.
    fn within_span(d: Duration) -> Result<Duration, String> {
        if d.within_range_span() {
            Ok(d)
        } else {
            Err(format!(
                "duration `{d}` is longer than the range every backend stores ({} to {}): use a shorter one",
                Instant::MIN,
                Instant::MAX
            ))
        }
    }

    /// `i` when it lies in the declared range.
    fn in_range(i: Instant) -> Result<Instant, String> {
        if i.in_range() {
            Ok(i)
        } else {
            Err(format!(
                "instant `{i}` is outside the range every backend stores: use one from {} to {}",
                Instant::MIN,
                Instant::MAX
            ))
        }
    }

    impl<'de> Deserialize<'de> for Duration {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            d.deserialize_str(TextVisitor("a duration such as `-10m` or `+4s`", |s: &str| {
                Duration::parse(s).map_err(|e| e.to_string()).and_then(within_span)
            }))
        }
    }

    impl<'de> Deserialize<'de> for Instant {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            d.deserialize_str(TextVisitor("an RFC 3339 instant such as `2026-01-15T12:00:00Z`", |s: &str| {
                Instant::parse_rfc3339(s).map_err(|e| e.to_string()).and_then(in_range)
            }))
        }
    }

    impl<'de> Deserialize<'de> for TimeSpec {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            d.deserialize_str(TextVisitor("a duration such as `-10m` or an RFC 3339 instant", |s: &str| {
                match TimeSpec::parse(s)? {
                    TimeSpec::Relative(d) => within_span(d).map(TimeSpec::Relative),
                    TimeSpec::Absolute(i) => in_range(i).map(TimeSpec::Absolute),
                }
            }))
        }
    }

    impl Serialize for Duration {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.collect_str(self)
        }
    }

    impl Serialize for Instant {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.collect_str(self)
        }
    }

    impl Serialize for TimeSpec {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.collect_str(self)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rstest::rstest;

    #[rstest]
    #[case("90s", 90_000_000)]
    #[case("-10m", -600_000_000)]
    #[case("1h30m", 5_400_000_000)]
    #[case("-0.000001s", -1)]
    #[case("+2d", 172_800_000_000)]
    #[case("0s", 0)]
    #[case("1.5s", 1_500_000)]
    fn parses_the_documented_examples(#[case] text: &str, #[case] micros: i64) {
        assert_eq!(Duration::parse(text).unwrap().as_micros(), micros);
    }

    #[rstest]
    #[case("")]
    #[case("10")]
    #[case("5x")]
    #[case("1m1h")]
    #[case("1m1m")]
    #[case("1.5m")]
    #[case("0.0000001s")]
    #[case("1 m")]
    #[case("-")]
    #[case(".5s")]
    fn rejects_malformed_durations(#[case] text: &str) {
        assert!(Duration::parse(text).is_err(), "{text:?} parsed");
    }

    #[rstest]
    #[case(4_000_000, "+4s")]
    #[case(-600_000_000, "-10m")]
    #[case(5_400_000_000, "+1h30m")]
    #[case(-29_999_999, "-29.999999s")]
    #[case(236_000_000, "+3m56s")]
    #[case(0, "0s")]
    #[case(86_400_000_001, "+1d0.000001s")]
    fn prints_the_canonical_form(#[case] micros: i64, #[case] text: &str) {
        assert_eq!(Duration::from_micros(micros).to_string(), text);
    }

    proptest! {
        #[test]
        fn canonical_form_parses_back(micros in -10_000_000_000_000i64..10_000_000_000_000) {
            let d = Duration::from_micros(micros);
            prop_assert_eq!(Duration::parse(&d.to_string()).unwrap(), d);
        }

        #[test]
        fn instants_print_and_parse_back(micros in -2_000_000_000_000_000i64..4_000_000_000_000_000) {
            let i = Instant::from_unix_micros(micros);
            prop_assert_eq!(Instant::parse_rfc3339(&i.to_string()).unwrap(), i);
        }
    }

    #[test]
    fn time_specs_are_relative_or_absolute() {
        let now = Instant::parse_rfc3339("2026-01-15T12:00:00Z").unwrap();
        assert_eq!(TimeSpec::parse("-10m").unwrap().resolve(now), now - Duration::from_secs(600));
        assert_eq!(TimeSpec::parse("2026-01-15T12:00:00+01:00").unwrap().resolve(now), now - Duration::from_secs(3600));
        let err = TimeSpec::parse("2026-13-15T11:00:00Z").unwrap_err();
        assert!(err.contains("invalid instant"), "{err}");
        assert!(TimeSpec::parse("2026-01-15T12:00:00.0000001Z").is_err());
    }
}
