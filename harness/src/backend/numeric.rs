//! Exact numerics read as the contract's 64-bit integers: a DECIMAL or
//! NUMERIC column decodes when its value is whole (any scale, `3.00`
//! included) and fits in 64 bits; a fraction is an error, never a rounding.
//! Each function returns a message for the caller to prefix with the
//! column's name.

/// A decimal as MySQL and MariaDB send it, `-123` or `123.000`.
pub fn integral_decimal_text(text: &str) -> Result<i64, String> {
    let not_whole = || format!("{text} is not a whole number");
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    if !fraction.bytes().all(|b| b == b'0') {
        return Err(not_whole());
    }
    let digits = whole.strip_prefix(['-', '+']).unwrap_or(whole);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("`{text}` is not a decimal number"));
    }
    whole.parse::<i64>().map_err(|_| format!("{text} does not fit in 64 bits"))
}

/// A PostgreSQL NUMERIC in its binary wire format: `ndigits`, `weight`,
/// `sign` and `dscale` as big-endian 16-bit numbers, then `ndigits` base
/// 10000 digits, the first worth 10000^weight.
pub fn integral_pg_numeric(bytes: &[u8]) -> Result<i64, String> {
    let word = |i: usize| -> Result<u16, String> {
        bytes
            .get(2 * i..2 * i + 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
            .ok_or_else(|| format!("a numeric of {} bytes is cut short", bytes.len()))
    };
    let (ndigits, weight, sign) = (usize::from(word(0)?), word(1)? as i16, word(2)?);
    const POSITIVE: u16 = 0x0000;
    const NEGATIVE: u16 = 0x4000;
    if sign != POSITIVE && sign != NEGATIVE {
        return Err("NaN or an infinity is not a whole number".to_owned());
    }
    let mut value: i128 = 0;
    for k in 0..ndigits {
        let digit = i128::from(word(4 + k)?);
        // The digit's power of 10000: weight - k. A negative power is a fraction.
        let power = i32::from(weight) - i32::try_from(k).unwrap_or(i32::MAX);
        if power < 0 {
            if digit != 0 {
                return Err("a numeric with a fraction is not a whole number".to_owned());
            }
            continue;
        }
        value = u32::try_from(power)
            .ok()
            .and_then(|p| 10_000_i128.checked_pow(p))
            .and_then(|scale| digit.checked_mul(scale))
            .and_then(|d| value.checked_add(d))
            .ok_or_else(|| "a numeric does not fit in 64 bits".to_owned())?;
    }
    let value = if sign == NEGATIVE { -value } else { value };
    i64::try_from(value).map_err(|_| format!("{value} does not fit in 64 bits"))
}

/// A scaled integer (SQL Server's DECIMAL/NUMERIC: `value` / 10^`scale`).
pub fn integral_scaled(value: i128, scale: u8) -> Result<i64, String> {
    let divisor = 10_i128.checked_pow(u32::from(scale)).ok_or_else(|| format!("a scale of {scale} is too large"))?;
    if value % divisor != 0 {
        return Err(format!("{value}e-{scale} is not a whole number"));
    }
    let whole = value / divisor;
    i64::try_from(whole).map_err(|_| format!("{whole} does not fit in 64 bits"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_text_is_whole_or_an_error() {
        assert_eq!(integral_decimal_text("42"), Ok(42));
        assert_eq!(integral_decimal_text("-42.000"), Ok(-42));
        assert_eq!(integral_decimal_text("9223372036854775807"), Ok(i64::MAX));
        assert!(integral_decimal_text("4.5").unwrap_err().contains("not a whole number"));
        assert!(integral_decimal_text("9223372036854775808").unwrap_err().contains("64 bits"));
        assert!(integral_decimal_text("").is_err());
        assert!(integral_decimal_text("1e3").is_err());
    }

    /// The wire form of a numeric: digits base 10000, the first worth 10000^weight.
    fn wire(weight: i16, sign: u16, dscale: u16, digits: &[u16]) -> Vec<u8> {
        let len = u16::try_from(digits.len()).expect("a few digits");
        let mut out = Vec::new();
        for w in [len, weight as u16, sign, dscale].iter().chain(digits) {
            out.extend_from_slice(&w.to_be_bytes());
        }
        out
    }

    #[test]
    fn pg_numerics_are_whole_or_an_error() {
        // 0, 7, 123456789 (1|2345|6789), -20000 (weight 1: 2 * 10000), 3.00 (dscale 2, no fraction digits).
        assert_eq!(integral_pg_numeric(&wire(0, 0, 0, &[])), Ok(0));
        assert_eq!(integral_pg_numeric(&wire(0, 0, 0, &[7])), Ok(7));
        assert_eq!(integral_pg_numeric(&wire(2, 0, 0, &[1, 2345, 6789])), Ok(123_456_789));
        assert_eq!(integral_pg_numeric(&wire(1, 0x4000, 0, &[2])), Ok(-20_000));
        assert_eq!(integral_pg_numeric(&wire(0, 0, 2, &[3, 0])), Ok(3));
        // 9223372036854775807 = 922|3372|0368|5477|5807
        assert_eq!(integral_pg_numeric(&wire(4, 0, 0, &[922, 3372, 368, 5477, 5807])), Ok(i64::MAX));
        assert!(integral_pg_numeric(&wire(4, 0, 0, &[922, 3372, 368, 5477, 5808])).unwrap_err().contains("64 bits"));
        assert!(integral_pg_numeric(&wire(0, 0, 1, &[3, 5000])).unwrap_err().contains("fraction"));
        assert!(integral_pg_numeric(&wire(-1, 0, 4, &[5000])).unwrap_err().contains("fraction"));
        assert!(integral_pg_numeric(&wire(0, 0xC000, 0, &[])).unwrap_err().contains("NaN"));
        assert!(integral_pg_numeric(&[0, 1]).unwrap_err().contains("cut short"));
        assert!(integral_pg_numeric(&wire(400, 0, 0, &[1])).unwrap_err().contains("64 bits"));
    }

    #[test]
    fn scaled_integers_are_whole_or_an_error() {
        assert_eq!(integral_scaled(300, 2), Ok(3));
        assert_eq!(integral_scaled(-7, 0), Ok(-7));
        assert!(integral_scaled(305, 2).unwrap_err().contains("not a whole number"));
        assert!(integral_scaled(i128::MAX, 0).unwrap_err().contains("64 bits"));
        assert!(integral_scaled(1, 60).unwrap_err().contains("too large"));
    }
}
