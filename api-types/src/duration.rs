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
/// use kwas_api_types::duration::parse_go_duration;
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

/// Formats a duration as Go's `time.Duration.String()` does (`1h2m3.5s`, `300ms`, `1.5µs`, `0s`).
///
/// ```
/// use kwas_api_types::duration::format_go_duration;
/// use std::time::Duration;
///
/// assert_eq!(format_go_duration(Duration::from_secs(90)), "1m30s");
/// assert_eq!(format_go_duration(Duration::from_millis(1500)), "1.5s");
/// ```
pub fn format_go_duration(d: Duration) -> String {
    fn frac(u: u128, div: u128, digits: usize) -> String {
        let (int, rem) = (u / div, u % div);
        if rem == 0 {
            return int.to_string();
        }
        let f = format!("{rem:0digits$}");
        format!("{int}.{}", f.trim_end_matches('0'))
    }
    let u = d.as_nanos();
    if u == 0 {
        "0s".to_string()
    } else if u < 1_000 {
        format!("{u}ns")
    } else if u < 1_000_000 {
        format!("{}\u{b5}s", frac(u, 1_000, 3))
    } else if u < 1_000_000_000 {
        format!("{}ms", frac(u, 1_000_000, 6))
    } else {
        let secs = u / 1_000_000_000;
        let sub = u % 1_000_000_000;
        let (h, m, s) = (secs / 3600, (secs / 60) % 60, secs % 60);
        let s = frac(s * 1_000_000_000 + sub, 1_000_000_000, 9);
        if h > 0 {
            format!("{h}h{m}m{s}s")
        } else if m > 0 {
            format!("{m}m{s}s")
        } else {
            format!("{s}s")
        }
    }
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
