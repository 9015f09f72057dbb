//! Parsing of Kubernetes `resource.Quantity` strings into integers.
//!
//! The scheduler and devcluster's quota accounting need exact integers: CPU in millicores (`"500m"` -> 500, `"2"` -> 2000), memory and
//! storage in bytes (`"1Gi"`, `"512Mi"`, `"1e3"`, `"1k"`), extended resources such as `nvidia.com/gpu` as
//! plain counts. This is a small hand-written parser of the apimachinery grammar
//! (`<sign><digits>[.<digits>]<suffix>` with binary-SI `Ki..Ei`, decimal-SI `n u m "" k M G T P E` or a
//! decimal exponent `e<int>` / `E<int>`). It follows upstream's rounding: a value that does not land on a
//! whole unit rounds **up** (`Quantity.Value()` / `MilliValue()` semantics), so `"0.5"` bytes is 1 byte
//! and `"0.1m"` CPU is 1 millicore.
//!
//! No well-kept crate covers this exact grammar with integer-exact results and upstream's rounding, and
//! the grammar is small, so the parser lives here with its own tests.

/// Why a quantity string could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QuantityError {
    /// The string is empty.
    Empty,
    /// The string does not follow the quantity grammar.
    Syntax,
    /// The value is negative (resource requests and capacities cannot be).
    Negative,
    /// The value does not fit the integer range the scheduler works with.
    TooLarge,
}

impl std::fmt::Display for QuantityError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            QuantityError::Empty => "quantity is empty",
            QuantityError::Syntax => {
                "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
            }
            QuantityError::Negative => "must be greater than or equal to 0",
            QuantityError::TooLarge => "quantity is too large",
        })
    }
}

impl std::error::Error for QuantityError {}

/// Parses `s` and returns its value scaled by `10^scale`, rounded up.
///
/// `scale = 0` gives whole units (bytes, counts), `scale = 3` gives milli-units (CPU millicores).
///
/// ```
/// use kwas_api_types::quantity::parse_scaled;
/// assert_eq!(parse_scaled("500m", 3), Ok(500));
/// assert_eq!(parse_scaled("2", 3), Ok(2000));
/// assert_eq!(parse_scaled("1Gi", 0), Ok(1 << 30));
/// assert_eq!(parse_scaled("1e3", 0), Ok(1000));
/// ```
pub fn parse_scaled(s: &str, scale: i32) -> Result<i64, QuantityError> {
    let s = s.trim();
    if s.is_empty() {
        return Err(QuantityError::Empty);
    }
    let bytes = s.as_bytes();
    let mut i = 0;
    let mut negative = false;
    if bytes[0] == b'+' || bytes[0] == b'-' {
        negative = bytes[0] == b'-';
        i = 1;
    }
    // Mantissa: digits with at most one decimal point.
    let mut mantissa: u128 = 0;
    let mut frac_digits: i32 = 0;
    let mut seen_digit = false;
    let mut seen_point = false;
    let mut dropped_nonzero = false;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_digit() {
            seen_digit = true;
            if mantissa < 10u128.pow(30) {
                mantissa = mantissa * 10 + u128::from(c - b'0');
                if seen_point {
                    frac_digits += 1;
                }
            } else if !seen_point {
                return Err(QuantityError::TooLarge);
            } else if c != b'0' {
                // Digits beyond 30 significant ones only matter for rounding up.
                dropped_nonzero = true;
            }
        } else if c == b'.' && !seen_point {
            seen_point = true;
        } else {
            break;
        }
        i += 1;
    }
    if !seen_digit {
        return Err(QuantityError::Syntax);
    }
    let suffix = &s[i..];
    let (exp10, exp2) = parse_suffix(suffix)?;
    if negative && (mantissa != 0 || dropped_nonzero) {
        return Err(QuantityError::Negative);
    }
    // value = mantissa * 10^(exp10 - frac_digits + scale) * 2^exp2, rounded up.
    let mut value = mantissa;
    let mut remainder_nonzero = dropped_nonzero;
    let shift10 = exp10 - frac_digits + scale;
    if exp2 > 0 {
        value = value.checked_shl(exp2 as u32).ok_or(QuantityError::TooLarge)?;
        if value >> exp2 != mantissa {
            return Err(QuantityError::TooLarge);
        }
    }
    if shift10 >= 0 {
        for _ in 0..shift10 {
            value = value.checked_mul(10).ok_or(QuantityError::TooLarge)?;
        }
    } else {
        for _ in 0..(-shift10) {
            if !value.is_multiple_of(10) {
                remainder_nonzero = true;
            }
            value /= 10;
            if value == 0 {
                // Everything left is fraction; remember whether anything was there.
                if mantissa != 0 {
                    remainder_nonzero = true;
                }
                break;
            }
        }
    }
    if remainder_nonzero {
        value += 1;
    }
    i64::try_from(value).map_err(|_| QuantityError::TooLarge)
}

/// Returns `(decimal exponent, binary exponent)` for a suffix.
fn parse_suffix(suffix: &str) -> Result<(i32, i32), QuantityError> {
    Ok(match suffix {
        "" => (0, 0),
        "n" => (-9, 0),
        "u" => (-6, 0),
        "m" => (-3, 0),
        "k" => (3, 0),
        "M" => (6, 0),
        "G" => (9, 0),
        "T" => (12, 0),
        "P" => (15, 0),
        "E" => (18, 0),
        "Ki" => (0, 10),
        "Mi" => (0, 20),
        "Gi" => (0, 30),
        "Ti" => (0, 40),
        "Pi" => (0, 50),
        "Ei" => (0, 60),
        _ => {
            let rest = suffix
                .strip_prefix('e')
                .or_else(|| suffix.strip_prefix('E'))
                .ok_or(QuantityError::Syntax)?;
            let digits = rest.strip_prefix(['+', '-']).unwrap_or(rest);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return Err(QuantityError::Syntax);
            }
            let exp: i32 = rest.parse().map_err(|_| QuantityError::TooLarge)?;
            if !(-100..=100).contains(&exp) {
                return Err(QuantityError::TooLarge);
            }
            (exp, 0)
        }
    })
}

/// CPU quantity in millicores.
pub fn parse_cpu_millis(s: &str) -> Result<i64, QuantityError> {
    parse_scaled(s, 3)
}

/// Any other quantity (memory, storage, extended resources, pod counts) in whole units.
pub fn parse_units(s: &str) -> Result<i64, QuantityError> {
    parse_scaled(s, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu() {
        assert_eq!(parse_cpu_millis("500m"), Ok(500));
        assert_eq!(parse_cpu_millis("2"), Ok(2000));
        assert_eq!(parse_cpu_millis("0.5"), Ok(500));
        assert_eq!(parse_cpu_millis("1.5"), Ok(1500));
        assert_eq!(parse_cpu_millis("100m"), Ok(100));
        assert_eq!(parse_cpu_millis("3970m"), Ok(3970));
        assert_eq!(parse_cpu_millis("0.1m"), Ok(1), "rounds up to a whole millicore");
        assert_eq!(parse_cpu_millis("1000000n"), Ok(1));
        assert_eq!(parse_cpu_millis("1u"), Ok(1));
        assert_eq!(parse_cpu_millis("+2"), Ok(2000));
        assert_eq!(parse_cpu_millis(".5"), Ok(500));
        assert_eq!(parse_cpu_millis("0"), Ok(0));
        assert_eq!(parse_cpu_millis("-0"), Ok(0));
    }

    #[test]
    fn memory() {
        assert_eq!(parse_units("1Gi"), Ok(1 << 30));
        assert_eq!(parse_units("512Mi"), Ok(512 << 20));
        assert_eq!(parse_units("32Gi"), Ok(32i64 << 30));
        assert_eq!(parse_units("1e3"), Ok(1000));
        assert_eq!(parse_units("1E3"), Ok(1000));
        assert_eq!(parse_units("1k"), Ok(1000));
        assert_eq!(parse_units("1Ki"), Ok(1024));
        assert_eq!(parse_units("1.5Gi"), Ok(3 << 29));
        assert_eq!(parse_units("129M"), Ok(129_000_000));
        assert_eq!(parse_units("12e6"), Ok(12_000_000));
        assert_eq!(parse_units("1e-3"), Ok(1), "rounds up");
        assert_eq!(parse_units("0.5"), Ok(1), "rounds up");
        assert_eq!(parse_units("1Ei"), Ok(1 << 60));
        assert_eq!(parse_units("8E"), Ok(8_000_000_000_000_000_000));
    }

    #[test]
    fn extended_counts() {
        assert_eq!(parse_units("8"), Ok(8));
        assert_eq!(parse_units("110"), Ok(110));
    }

    #[test]
    fn errors() {
        assert_eq!(parse_units(""), Err(QuantityError::Empty));
        assert_eq!(parse_units("abc"), Err(QuantityError::Syntax));
        assert_eq!(parse_units("1Qi"), Err(QuantityError::Syntax));
        assert_eq!(parse_units("1e"), Err(QuantityError::Syntax));
        assert_eq!(parse_units("1.2.3"), Err(QuantityError::Syntax));
        assert_eq!(parse_units("-1"), Err(QuantityError::Negative));
        assert_eq!(parse_units("10Ei"), Err(QuantityError::TooLarge));
        assert_eq!(parse_units("1e30"), Err(QuantityError::TooLarge));
        assert_eq!(parse_units("1e999"), Err(QuantityError::TooLarge));
    }
}
