//! Go durations (`time.ParseDuration`: `300ms`, `1.5h`, `2h45m`), as Kubernetes writes them, parsed with
//! checked arithmetic.
//!
//! `kube::core::Duration` parses the same syntax but panics on values beyond `std::time::Duration`'s range
//! (its `mul_f64` and `+=`), and kwas parses durations that users set on objects (the simulated kubelet's
//! pod annotations), so this parser returns `None` instead: a hostile value is an error, never a crash.

use std::time::Duration;

/// Parses a non-negative Go duration; `None` for anything else (empty, negative, unknown unit, NaN,
/// overflow). `"0"` is zero, as in Go.
///
/// ```
/// use kwas_api::duration::parse_go_duration;
/// use std::time::Duration;
///
/// assert_eq!(parse_go_duration("1m30s"), Some(Duration::from_secs(90)));
/// assert_eq!(parse_go_duration("500ms"), Some(Duration::from_millis(500)));
/// assert_eq!(parse_go_duration("100000000000000000000s"), None);
/// ```
pub fn parse_go_duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    let s = s.strip_prefix('+').unwrap_or(s);
    if s == "0" {
        return Some(Duration::ZERO);
    }
    if s.is_empty() || s.starts_with('-') {
        return None;
    }
    let mut total = Duration::ZERO;
    let mut rest = s;
    while !rest.is_empty() {
        let num_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
        if num_end == 0 {
            return None;
        }
        let n: f64 = rest[..num_end].parse().ok()?;
        rest = &rest[num_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit_secs = match &rest[..unit_end] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "\u{00b5}s" | "\u{03bc}s" => 1e-6,
            "ns" => 1e-9,
            _ => return None,
        };
        let part = Duration::try_from_secs_f64(n * unit_secs).ok()?;
        total = total.checked_add(part)?;
        rest = &rest[unit_end..];
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_syntax_and_limits() {
        assert_eq!(parse_go_duration("0"), Some(Duration::ZERO));
        assert_eq!(parse_go_duration("30s"), Some(Duration::from_secs(30)));
        assert_eq!(parse_go_duration("1h30m"), Some(Duration::from_secs(5400)));
        assert_eq!(parse_go_duration("1.5s"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_go_duration("250us"), Some(Duration::from_micros(250)));
        for bad in [
            "",
            "-1s",
            "5",
            "s",
            "1x",
            "1e400s",
            "NaNs",
            "1..2s",
            "18446744073709551616h",
        ] {
            assert_eq!(parse_go_duration(bad), None, "{bad}");
        }
        // Each part fits but the sum does not.
        let near_max = format!("{}s", u64::MAX / 2 + 1);
        assert_eq!(parse_go_duration(&format!("{near_max}{near_max}")), None);
    }
}
