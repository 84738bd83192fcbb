//! How a dialect stores instants, and the conversions that encoding needs
//! on the way to and from the database.
//!
//! The contract's instants are UTC microseconds (see `crate::time`). A
//! queue may keep them in its database's date-time type or as a count since
//! the Unix epoch; a profile declares which, and the connection binds and
//! reads instants accordingly. Reading never depends on the setting but for
//! the epoch encodings: every backend decodes each of its date-time types
//! (see docs/decode-types.md), and a date-time without a zone is UTC.

use crate::dialect::contract::Column;
use crate::engine::{Kind, Value};
use crate::time::Instant;

/// How a dialect's instants are bound and stored. The default,
/// [`InstantEncoding::Native`], is what the embedded dialects use.
///
/// In a profile (`instants = { value = "naive_utc", reason = "..." }`) the
/// values are `native`, `naive_utc`, `epoch_seconds`, `epoch_millis` and
/// `epoch_micros`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InstantEncoding {
    /// The backend's own choice: `timestamptz` on PostgreSQL and
    /// CockroachDB, a `DATETIME(6)` holding UTC on MySQL and MariaDB,
    /// `datetime2` holding UTC on SQL Server, INTEGER microseconds since
    /// the Unix epoch on SQLite.
    #[default]
    Native,
    /// A date-time without a time zone holding UTC: PostgreSQL `timestamp`
    /// (bound as `timestamp`, so that comparing it with a `timestamp`
    /// column converts nothing through the session `TimeZone`); on SQLite,
    /// text `YYYY-MM-DD HH:MM:SS.ffffff`, which sorts as it compares; the
    /// same as `Native` on MySQL, MariaDB and SQL Server.
    NaiveUtc,
    /// Whole seconds since the Unix epoch, as a 64-bit integer; an instant
    /// is bound rounded down (towards the past) to its second.
    EpochSeconds,
    /// Whole milliseconds since the Unix epoch, as a 64-bit integer; an
    /// instant is bound rounded down to its millisecond.
    EpochMillis,
    /// Microseconds since the Unix epoch, as a 64-bit integer: exact.
    EpochMicros,
}

impl std::fmt::Display for InstantEncoding {
    /// The name a profile gives it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            InstantEncoding::Native => "native",
            InstantEncoding::NaiveUtc => "naive_utc",
            InstantEncoding::EpochSeconds => "epoch_seconds",
            InstantEncoding::EpochMillis => "epoch_millis",
            InstantEncoding::EpochMicros => "epoch_micros",
        })
    }
}

impl InstantEncoding {
    /// Microseconds in one stored unit of an epoch encoding that drops
    /// precision (seconds: 1 000 000, milliseconds: 1 000); `None` for the
    /// encodings that keep microseconds.
    pub fn whole_unit_micros(self) -> Option<i64> {
        self.micros_per_unit().filter(|unit| *unit > 1)
    }

    /// Microseconds in one unit of an epoch encoding; `None` for the
    /// date-time encodings.
    fn micros_per_unit(self) -> Option<i64> {
        match self {
            InstantEncoding::Native | InstantEncoding::NaiveUtc => None,
            InstantEncoding::EpochSeconds => Some(1_000_000),
            InstantEncoding::EpochMillis => Some(1_000),
            InstantEncoding::EpochMicros => Some(1),
        }
    }

    /// A bound value as this encoding stores it: an instant becomes its
    /// epoch count (a NULL instant an integer NULL) under the epoch
    /// encodings; anything else is unchanged.
    pub fn bind(self, value: &Value) -> Value {
        match (self.micros_per_unit(), value) {
            (Some(unit), Value::Instant(t)) => Value::Int(t.unix_micros().div_euclid(unit)),
            (Some(_), Value::Null(Kind::Instant)) => Value::Null(Kind::Int),
            _ => value.clone(),
        }
    }

    /// The columns a backend is asked to decode: an instant column is an
    /// integer one under the epoch encodings.
    pub fn read_columns(self, columns: &[Column]) -> Vec<Column> {
        columns
            .iter()
            .map(|c| match (self.micros_per_unit(), c.kind) {
                (Some(_), Kind::Instant) => Column { kind: Kind::Int, ..*c },
                _ => *c,
            })
            .collect()
    }

    /// A decoded row back in the contract's kinds: the epoch counts of
    /// `columns`' instant columns become instants. Fails, naming the
    /// column, on a count outside the instants' range (years 1 to 9999).
    pub fn read_row(self, columns: &[Column], row: Vec<Value>) -> Result<Vec<Value>, String> {
        let Some(unit) = self.micros_per_unit() else { return Ok(row) };
        row.into_iter()
            .enumerate()
            .map(|(i, v)| match (columns.get(i).map(|c| c.kind), v) {
                (Some(Kind::Instant), Value::Int(n)) => {
                    n.checked_mul(unit).and_then(within_years).map(Value::Instant).ok_or_else(|| {
                        format!("column `{}` holds {n}, not an instant of years 1 to 9999", columns[i].name)
                    })
                }
                (Some(Kind::Instant), Value::Null(_)) => Ok(Value::Null(Kind::Instant)),
                (_, v) => Ok(v),
            })
            .collect()
    }
}

/// The instant `micros` after the Unix epoch, if it falls in years 1 to
/// 9999, the range every backend's date-time type holds.
pub fn within_years(micros: i64) -> Option<Instant> {
    use chrono::Datelike;
    chrono::DateTime::from_timestamp_micros(micros)
        .filter(|t| (1..=9999).contains(&t.year()))
        .map(|_| Instant::from_unix_micros(micros))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Instant {
        Instant::parse_rfc3339(text).expect("a valid instant")
    }

    fn columns() -> Vec<Column> {
        vec![
            Column { name: "id", kind: Kind::Text, nullable: false },
            Column { name: "run_at", kind: Kind::Instant, nullable: false },
            Column { name: "failed_at", kind: Kind::Instant, nullable: true },
        ]
    }

    #[test]
    fn date_time_encodings_change_nothing() {
        let t = Value::Instant(at("2026-03-08T07:00:00.000001Z"));
        for e in [InstantEncoding::Native, InstantEncoding::NaiveUtc] {
            assert_eq!(e.bind(&t), t);
            assert_eq!(e.read_columns(&columns()), columns());
            let row = vec![Value::Text("a".into()), t.clone(), Value::Null(Kind::Instant)];
            assert_eq!(e.read_row(&columns(), row.clone()), Ok(row));
        }
    }

    #[test]
    fn epoch_encodings_bind_counts_rounded_towards_the_past() {
        let after = Value::Instant(at("2026-03-08T07:00:00.999999Z"));
        let before = Value::Instant(at("1969-12-31T23:59:59.999999Z"));
        let cases = [
            (InstantEncoding::EpochSeconds, 1_772_953_200, -1),
            (InstantEncoding::EpochMillis, 1_772_953_200_999, -1),
            (InstantEncoding::EpochMicros, 1_772_953_200_999_999, -1),
        ];
        for (e, after_count, before_count) in cases {
            assert_eq!(e.bind(&after), Value::Int(after_count), "{e:?}");
            assert_eq!(e.bind(&before), Value::Int(before_count), "{e:?}");
            assert_eq!(e.bind(&Value::Null(Kind::Instant)), Value::Null(Kind::Int), "{e:?}");
            assert_eq!(e.bind(&Value::Int(7)), Value::Int(7), "{e:?}");
            assert_eq!(e.bind(&Value::Text("x".into())), Value::Text("x".into()), "{e:?}");
        }
    }

    #[test]
    fn epoch_encodings_read_instant_columns_as_integers_and_back() {
        let cases = [
            (InstantEncoding::EpochSeconds, 1_772_953_200, "2026-03-08T07:00:00Z"),
            (InstantEncoding::EpochMillis, 1_772_953_200_123, "2026-03-08T07:00:00.123Z"),
            (InstantEncoding::EpochMicros, -1, "1969-12-31T23:59:59.999999Z"),
        ];
        for (e, count, instant) in cases {
            let kinds: Vec<Kind> = e.read_columns(&columns()).iter().map(|c| c.kind).collect();
            assert_eq!(kinds, vec![Kind::Text, Kind::Int, Kind::Int], "{e:?}");
            let row = vec![Value::Text("a".into()), Value::Int(count), Value::Null(Kind::Int)];
            let read = e.read_row(&columns(), row).expect("in range");
            assert_eq!(read, vec![Value::Text("a".into()), Value::Instant(at(instant)), Value::Null(Kind::Instant)]);
        }
    }

    #[test]
    fn an_epoch_count_out_of_range_names_its_column() {
        for e in [InstantEncoding::EpochSeconds, InstantEncoding::EpochMillis, InstantEncoding::EpochMicros] {
            let row = vec![Value::Text("a".into()), Value::Int(i64::MAX), Value::Null(Kind::Int)];
            let message = e.read_row(&columns(), row).expect_err("out of range");
            assert!(message.contains("`run_at`") && message.contains(&i64::MAX.to_string()), "{message}");
        }
    }
}
