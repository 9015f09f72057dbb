//! Values: JSON to CEL with an OpenAPI schema (as kube-apiserver binds `self` and `oldSelf` of a CRD
//! rule), and the library values selectors compare against (quantities, semantic versions).

use std::collections::HashMap;
use std::sync::Arc;

use base64::Engine;
use kube_cel::cel::Value;
use kube_cel::cel::objects::{Key, Map};
use serde_json::Value as Json;

/// CEL's reserved words, escaped as `__word__` when they name a field.
const RESERVED: &[&str] = &[
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// A JSON property name as a CEL field name (apiserver's `model.Escape`): reserved words become
/// `__word__`; `_` `.` `-` `/` become `__` `__dot__` `__dash__` `__slash__`.
pub fn escape_field_name(name: &str) -> String {
    if RESERVED.contains(&name) {
        return format!("__{name}__");
    }
    if !name.contains(['_', '.', '-', '/']) {
        return name.to_string();
    }
    let mut out = String::with_capacity(name.len() * 2);
    for c in name.chars() {
        match c {
            '_' => out.push_str("__"),
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c => out.push(c),
        }
    }
    out
}

/// A quantity value (`quantity("80Gi")`), `None` when the text does not parse.
pub fn quantity(text: &str) -> Option<Value> {
    library("quantity", text)
}

/// A semantic version value (`semver("1.2.3")`), `None` when the text does not parse.
pub fn semver(text: &str) -> Option<Value> {
    library("semver", text)
}

fn library(function: &str, text: &str) -> Option<Value> {
    if text.len() > 256 {
        return None;
    }
    let program = crate::Program::compile(
        &format!("{function}(x)"),
        &crate::Env::new().with_var("x", crate::Decl::scalar(crate::Ty::String, 256)),
    )
    .ok()?;
    let vars = [("x", Value::String(Arc::new(text.to_string())))];
    program.evaluate(&vars, 10_000).result.ok()
}

/// JSON as CEL, shaped by `schema` (an OpenAPI v3 structural schema node, or `None`): object keys
/// that are declared properties are escaped field names, `additionalProperties` keys are kept as they
/// are; strings of format `date-time` are timestamps, `duration` durations, `byte` bytes (when they
/// parse); `x-kubernetes-embedded-resource` objects get `apiVersion`, `kind` and `metadata` when
/// missing. Numbers are ints when integral and in range, else doubles.
pub fn from_json(value: &Json, schema: Option<&Json>) -> Value {
    stacker::maybe_grow(64 * 1024, 2 * 1024 * 1024, || convert(value, schema))
}

fn convert(value: &Json, schema: Option<&Json>) -> Value {
    let format = schema.and_then(|s| s.get("format")).and_then(Json::as_str);
    let int_or_string = schema
        .and_then(|s| s.get("x-kubernetes-int-or-string"))
        .and_then(Json::as_bool)
        == Some(true);
    match value {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::Int(i)
            } else if let Some(u) = n.as_u64() {
                Value::UInt(u)
            } else {
                Value::Float(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        Json::String(s) => {
            if !int_or_string {
                match format {
                    Some("date-time") => {
                        if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
                            return Value::Timestamp(t);
                        }
                    }
                    Some("duration") => {
                        if let Some(d) = go_duration(s) {
                            return Value::Duration(d);
                        }
                    }
                    Some("byte") => {
                        if let Ok(b) = base64::engine::general_purpose::STANDARD.decode(s) {
                            return Value::Bytes(Arc::new(b));
                        }
                    }
                    _ => {}
                }
            }
            Value::String(Arc::new(s.clone()))
        }
        Json::Array(items) => {
            let item_schema = schema.and_then(|s| s.get("items"));
            Value::List(Arc::new(items.iter().map(|x| convert(x, item_schema)).collect()))
        }
        Json::Object(obj) => {
            let props = schema.and_then(|s| s.get("properties")).and_then(Json::as_object);
            let additional = schema.and_then(|s| s.get("additionalProperties"));
            let is_map = props.is_none() && matches!(additional, Some(Json::Object(_)) | Some(Json::Bool(true)));
            let mut map = HashMap::with_capacity(obj.len());
            for (k, v) in obj {
                let child = props
                    .and_then(|p| p.get(k))
                    .or_else(|| additional.filter(|a| a.is_object()));
                let key = if is_map { k.clone() } else { escape_field_name(k) };
                map.insert(Key::String(Arc::new(key)), convert(v, child));
            }
            if schema
                .and_then(|s| s.get("x-kubernetes-embedded-resource"))
                .and_then(Json::as_bool)
                == Some(true)
            {
                for k in ["apiVersion", "kind"] {
                    map.entry(Key::String(Arc::new(k.into())))
                        .or_insert_with(|| Value::String(Arc::new(String::new())));
                }
                map.entry(Key::String(Arc::new("metadata".into()))).or_insert_with(|| {
                    Value::Map(Map {
                        map: Arc::new(HashMap::new()),
                    })
                });
            }
            Value::Map(Map { map: Arc::new(map) })
        }
    }
}

/// A Go duration (`1h30m`, `-1.5s`, `300ms`), `None` when it does not parse or overflows.
pub fn go_duration(input: &str) -> Option<chrono::Duration> {
    let (mut rest, negative) = match input.strip_prefix('-') {
        Some(r) => (r, true),
        None => (input.strip_prefix('+').unwrap_or(input), false),
    };
    if rest == "0" {
        return Some(chrono::Duration::zero());
    }
    let mut total: i128 = 0;
    let mut any = false;
    while !rest.is_empty() {
        let end = rest
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(rest.len());
        if end == 0 {
            return None;
        }
        let number: f64 = rest[..end].parse().ok()?;
        rest = &rest[end..];
        let (unit, len): (i128, usize) = if rest.starts_with("ns") {
            (1, 2)
        } else if rest.starts_with("us") || rest.starts_with("µs") {
            (1_000, if rest.starts_with('u') { 2 } else { 3 })
        } else if rest.starts_with("ms") {
            (1_000_000, 2)
        } else if rest.starts_with('s') {
            (1_000_000_000, 1)
        } else if rest.starts_with('m') {
            (60_000_000_000, 1)
        } else if rest.starts_with('h') {
            (3_600_000_000_000, 1)
        } else {
            return None;
        };
        rest = &rest[len..];
        let nanos = number * unit as f64;
        if !nanos.is_finite() || nanos.abs() > i64::MAX as f64 {
            return None;
        }
        total = total.checked_add(nanos.trunc() as i128)?;
        any = true;
    }
    if !any {
        return None;
    }
    let total = i64::try_from(if negative { -total } else { total }).ok()?;
    Some(chrono::Duration::nanoseconds(total))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn field_names_are_escaped_like_the_apiserver() {
        assert_eq!(escape_field_name("namespace"), "__namespace__");
        assert_eq!(escape_field_name("a.b-c/d_e"), "a__dot__b__dash__c__slash__d__e");
        assert_eq!(escape_field_name("plain"), "plain");
    }

    #[test]
    fn json_follows_the_schema() {
        let schema = json!({"type": "object", "properties": {
            "when": {"type": "string", "format": "date-time"},
            "wait": {"type": "string", "format": "duration"},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "x-y": {"type": "integer"}}});
        let v = from_json(
            &json!({"when": "2026-01-01T00:00:00Z", "wait": "1h30m", "labels": {"a.b/c": "d"}, "x-y": 3}),
            Some(&schema),
        );
        let Value::Map(m) = v else { panic!("a map") };
        let get = |k: &str| m.map.get(&Key::String(Arc::new(k.into()))).cloned();
        assert!(matches!(get("when"), Some(Value::Timestamp(_))));
        assert_eq!(get("wait"), Some(Value::Duration(chrono::Duration::minutes(90))));
        assert_eq!(get("x__dash__y"), Some(Value::Int(3)));
        let Some(Value::Map(labels)) = get("labels") else {
            panic!("labels")
        };
        assert!(labels.map.contains_key(&Key::String(Arc::new("a.b/c".into()))));
    }

    #[test]
    fn hostile_durations_do_not_overflow() {
        assert_eq!(go_duration("99999999999999999999h"), None);
        assert_eq!(go_duration("1e400s"), None);
        assert_eq!(go_duration(""), None);
        assert_eq!(go_duration("5"), None);
        assert_eq!(go_duration("-1.5s"), Some(chrono::Duration::milliseconds(-1500)));
    }

    #[test]
    fn quantities_and_versions_parse_or_are_none() {
        assert!(quantity("80Gi").is_some());
        assert!(quantity("eighty").is_none());
        assert!(semver("1.2.3").is_some());
        assert!(semver("x").is_none());
    }
}
