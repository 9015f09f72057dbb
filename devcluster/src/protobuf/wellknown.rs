//! The values JSON and protobuf represent differently (meta/v1 `Time`, `MicroTime`, `Duration`,
//! `Quantity`, `IntOrString`, raw JSON, apiextensions' schema-or-X unions), converted the way
//! apimachinery's hand-written marshalers do.

use serde_json::Value;

use super::ProtoError;
use super::wire::{Reader, WireType, Writer};

/// Reads the varint / length-delimited fields of a small message by number.
pub(super) fn fields(bytes: &[u8]) -> Result<Vec<(u32, FieldValue<'_>)>, ProtoError> {
    let mut r = Reader::new(bytes);
    let mut out = Vec::new();
    while !r.is_empty() {
        let (n, wire) = r.tag()?;
        let v = match wire {
            WireType::Varint => FieldValue::Varint(r.varint()?),
            WireType::Len => FieldValue::Bytes(r.bytes()?),
            WireType::Fixed32 => FieldValue::Varint(u64::from(r.fixed32()?)),
            WireType::Fixed64 => FieldValue::Varint(r.fixed64()?),
        };
        out.push((n, v));
    }
    Ok(out)
}

/// A raw field value of a small message.
#[derive(Debug, Clone, Copy)]
pub(super) enum FieldValue<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
}

impl<'a> FieldValue<'a> {
    pub(super) fn varint(self) -> Result<u64, ProtoError> {
        match self {
            FieldValue::Varint(v) => Ok(v),
            FieldValue::Bytes(_) => Err(ProtoError::new("expected a varint")),
        }
    }

    pub(super) fn bytes(self) -> Result<&'a [u8], ProtoError> {
        match self {
            FieldValue::Bytes(b) => Ok(b),
            FieldValue::Varint(_) => Err(ProtoError::new("expected a length-delimited value")),
        }
    }

    pub(super) fn string(self) -> Result<String, ProtoError> {
        String::from_utf8(self.bytes()?.to_vec()).map_err(|_| ProtoError::new("string is not valid UTF-8"))
    }
}

/// `seconds` and `nanos` of a `Time` / `MicroTime`; `None` for the zero time (an empty message).
fn timestamp(bytes: &[u8]) -> Result<Option<(i64, i32)>, ProtoError> {
    if bytes.is_empty() {
        return Ok(None);
    }
    let (mut secs, mut nanos) = (0i64, 0i32);
    for (n, v) in fields(bytes)? {
        match n {
            1 => secs = v.varint()? as i64,
            2 => nanos = v.varint()? as i64 as i32,
            _ => {}
        }
    }
    Ok(Some((secs, nanos)))
}

/// meta/v1 `Time` to JSON: RFC 3339 in UTC, whole seconds (Go's `metav1.Time.MarshalJSON`).
pub(super) fn time_to_json(bytes: &[u8], micro: bool) -> Result<Option<Value>, ProtoError> {
    let Some((secs, nanos)) = timestamp(bytes)? else {
        return Ok(None);
    };
    let nanos = if micro { nanos.clamp(0, 999_999_999) } else { 0 };
    let ts = jiff::Timestamp::new(secs, nanos).map_err(|_| ProtoError::new(format!("time {secs}s is out of range")))?;
    let base = ts.strftime("%Y-%m-%dT%H:%M:%S").to_string();
    Ok(Some(Value::String(if micro {
        format!("{base}.{:06}Z", nanos / 1000)
    } else {
        format!("{base}Z")
    })))
}

/// JSON time (RFC 3339) to a `Time` / `MicroTime` message.
pub(super) fn time_from_json(v: &Value, micro: bool) -> Result<Vec<u8>, ProtoError> {
    let s = v.as_str().ok_or_else(|| ProtoError::new("expected a time string"))?;
    let ts: jiff::Timestamp = s
        .parse()
        .map_err(|e| ProtoError::new(format!("invalid time {s:?}: {e}")))?;
    let mut w = Writer::default();
    w.tag(1, WireType::Varint);
    w.varint(ts.as_second() as u64);
    let nanos = if micro { ts.subsec_nanosecond() / 1000 * 1000 } else { 0 };
    if nanos != 0 {
        w.tag(2, WireType::Varint);
        w.varint(i64::from(nanos) as u64);
    }
    Ok(w.buf)
}

/// Go's `time.Duration.String()` of `n` nanoseconds (`1h2m3.5s`, `300ms`, `1.5µs`, `0s`).
pub(super) fn go_duration(n: i64) -> String {
    let body = kwas_api_types::duration::format_go_duration(std::time::Duration::from_nanos(n.unsigned_abs()));
    if n < 0 { format!("-{body}") } else { body }
}

/// A Go duration string to nanoseconds (checked: out of range is an error).
pub(super) fn parse_duration(s: &str) -> Result<i64, ProtoError> {
    let (neg, rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let d = kwas_api_types::duration::parse_go_duration(rest)
        .ok_or_else(|| ProtoError::new(format!("invalid duration {s:?}")))?;
    let n = i64::try_from(d.as_nanos()).map_err(|_| ProtoError::new(format!("duration {s:?} out of range")))?;
    Ok(if neg { -n } else { n })
}

/// meta/v1 `Duration` (`duration = 1`, nanoseconds) to JSON.
pub(super) fn duration_to_json(bytes: &[u8]) -> Result<Value, ProtoError> {
    let mut n = 0i64;
    for (f, v) in fields(bytes)? {
        if f == 1 {
            n = v.varint()? as i64;
        }
    }
    Ok(Value::String(go_duration(n)))
}

/// JSON duration to meta/v1 `Duration`.
pub(super) fn duration_from_json(v: &Value) -> Result<Vec<u8>, ProtoError> {
    let s = v
        .as_str()
        .ok_or_else(|| ProtoError::new("expected a duration string"))?;
    let mut w = Writer::default();
    w.tag(1, WireType::Varint);
    w.varint(parse_duration(s)? as u64);
    Ok(w.buf)
}

/// `Quantity` (`string = 1`) to JSON.
pub(super) fn quantity_to_json(bytes: &[u8]) -> Result<Value, ProtoError> {
    let mut s = String::from("0");
    for (f, v) in fields(bytes)? {
        if f == 1 {
            s = v.string()?;
        }
    }
    Ok(Value::String(s))
}

/// JSON quantity (a string, or a number as YAML writes `cpu: 1`) to `Quantity`.
pub(super) fn quantity_from_json(v: &Value) -> Result<Vec<u8>, ProtoError> {
    let s = match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => return Err(ProtoError::new("expected a quantity string")),
    };
    let mut w = Writer::default();
    w.bytes(1, s.as_bytes());
    Ok(w.buf)
}

/// `IntOrString` (`type = 1`, `intVal = 2`, `strVal = 3`) to a JSON number or string.
pub(super) fn int_or_string_to_json(bytes: &[u8]) -> Result<Value, ProtoError> {
    let (mut ty, mut int, mut s) = (0u64, 0i64, String::new());
    for (f, v) in fields(bytes)? {
        match f {
            1 => ty = v.varint()?,
            2 => int = i64::from(v.varint()? as i64 as i32),
            3 => s = v.string()?,
            _ => {}
        }
    }
    Ok(if ty == 1 { Value::String(s) } else { Value::from(int) })
}

/// A JSON number or string to `IntOrString`.
pub(super) fn int_or_string_from_json(v: &Value) -> Result<Vec<u8>, ProtoError> {
    let mut w = Writer::default();
    match v {
        Value::Number(n) => {
            let i = n
                .as_i64()
                .and_then(|i| i32::try_from(i).ok())
                .ok_or_else(|| ProtoError::new(format!("{n} is not an int32")))?;
            w.tag(1, WireType::Varint);
            w.varint(0);
            w.tag(2, WireType::Varint);
            w.varint(i64::from(i) as u64);
        }
        Value::String(s) => {
            w.tag(1, WireType::Varint);
            w.varint(1);
            w.bytes(3, s.as_bytes());
        }
        _ => return Err(ProtoError::new("expected an int or a string")),
    }
    Ok(w.buf)
}

/// The raw JSON bytes of field 1 (`FieldsV1`, apiextensions `JSON`, a `RawExtension` holding JSON).
pub(super) fn raw_field(bytes: &[u8]) -> Result<&[u8], ProtoError> {
    let mut raw: &[u8] = &[];
    for (f, v) in fields(bytes)? {
        if f == 1 {
            raw = v.bytes()?;
        }
    }
    Ok(raw)
}

/// Raw JSON bytes to a value; `None` when empty.
pub(super) fn raw_json(raw: &[u8]) -> Result<Option<Value>, ProtoError> {
    if raw.is_empty() {
        return Ok(None);
    }
    serde_json::from_slice(raw)
        .map(Some)
        .map_err(|e| ProtoError::new(format!("embedded JSON does not parse: {e}")))
}

/// A value as raw JSON in field 1.
pub(super) fn raw_json_message(v: &Value) -> Vec<u8> {
    let mut w = Writer::default();
    w.bytes(1, v.to_string().as_bytes());
    w.buf
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn durations_print_like_go() {
        for (n, s) in [
            (0, "0s"),
            (1, "1ns"),
            (1_500, "1.5\u{b5}s"),
            (300_000_000, "300ms"),
            (1_000_000_000, "1s"),
            (1_500_000_000, "1.5s"),
            (60_000_000_000, "1m0s"),
            (3_600_000_000_000, "1h0m0s"),
            (3_723_000_000_000, "1h2m3s"),
            (-90_000_000_000, "-1m30s"),
            (i64::MAX, "2562047h47m16.854775807s"),
            (i64::MIN, "-2562047h47m16.854775808s"),
        ] {
            assert_eq!(go_duration(n), s, "{n}");
        }
        assert_eq!(parse_duration("1h2m3s").unwrap(), 3_723_000_000_000);
        assert_eq!(parse_duration("-1m30s").unwrap(), -90_000_000_000);
        assert!(parse_duration("100000000000000000000s").is_err());
    }

    #[test]
    fn times_round_trip_in_their_precision() {
        let b = time_from_json(&json!("2026-11-24T12:00:00Z"), false).unwrap();
        assert_eq!(time_to_json(&b, false).unwrap(), Some(json!("2026-11-24T12:00:00Z")));
        let b = time_from_json(&json!("2026-11-24T12:00:00.123456Z"), true).unwrap();
        assert_eq!(
            time_to_json(&b, true).unwrap(),
            Some(json!("2026-11-24T12:00:00.123456Z"))
        );
        assert_eq!(time_to_json(&[], false).unwrap(), None);
        let mut w = Writer::default();
        w.tag(1, WireType::Varint);
        w.varint(i64::MAX as u64);
        assert!(time_to_json(&w.buf, false).is_err());
    }

    #[test]
    fn int_or_string_keeps_its_variant() {
        for v in [json!(8080), json!("http"), json!(-1), json!("25%")] {
            let b = int_or_string_from_json(&v).unwrap();
            assert_eq!(int_or_string_to_json(&b).unwrap(), v);
        }
        assert!(int_or_string_from_json(&json!(1u64 << 40)).is_err());
    }
}
