//! Conversion between the stored form of an object and the version a client asked for: events are stored
//! as core/v1 Events and served as events.k8s.io/v1 Events too (the field mapping upstream's conversion
//! uses), and custom resources are served in every served version of their CRD (conversion strategy
//! `None`: only `apiVersion` changes).

use serde_json::{Map, Value};

use crate::resources::{Builtin, ResourceInfo};

/// core/v1 field name -> events.k8s.io/v1 field name.
const EVENT_FIELDS: &[(&str, &str)] = &[
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("source", "deprecatedSource"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
    ("reportingComponent", "reportingController"),
];

/// Whether serving `obj` through `res` needs a conversion.
pub fn needs_conversion(res: &ResourceInfo, obj: &Value) -> bool {
    res.builtin == Some(Builtin::EventV1)
        || obj
            .get("apiVersion")
            .and_then(Value::as_str)
            .is_none_or(|v| v != res.api_version())
        || obj.get("kind").and_then(Value::as_str).is_none_or(|k| k != res.kind)
}

/// The object as the client of `res` sees it.
pub fn present(res: &ResourceInfo, stored: &Value) -> Value {
    let mut out = stored.clone();
    if res.builtin == Some(Builtin::EventV1) {
        out = core_event_to_v1(&out);
    }
    set_type(res, &mut out);
    out
}

/// The object in storage form, from what a client of `res` sent.
pub fn to_storage(res: &ResourceInfo, obj: Value) -> Value {
    let mut out = obj;
    if res.builtin == Some(Builtin::EventV1) {
        out = v1_event_to_core(&out);
        if let Some(m) = out.as_object_mut() {
            m.insert("apiVersion".into(), Value::String("v1".into()));
            m.insert("kind".into(), Value::String("Event".into()));
        }
        return out;
    }
    set_type(res, &mut out);
    out
}

fn set_type(res: &ResourceInfo, obj: &mut Value) {
    if let Some(m) = obj.as_object_mut() {
        m.insert("apiVersion".into(), Value::String(res.api_version()));
        m.insert("kind".into(), Value::String(res.kind.clone()));
    }
}

fn rename(obj: &Value, pairs: impl Iterator<Item = (&'static str, &'static str)>) -> Value {
    let Some(m) = obj.as_object() else { return obj.clone() };
    let mut out = Map::new();
    let pairs: Vec<_> = pairs.collect();
    for (k, v) in m {
        let key = pairs
            .iter()
            .find(|(from, _)| from == k)
            .map_or(k.as_str(), |(_, to)| to);
        out.insert(key.to_string(), v.clone());
    }
    Value::Object(out)
}

/// core/v1 Event -> events.k8s.io/v1 Event.
pub fn core_event_to_v1(obj: &Value) -> Value {
    let mut out = rename(obj, EVENT_FIELDS.iter().copied());
    if let Some(m) = out.as_object_mut() {
        m.insert("apiVersion".into(), Value::String("events.k8s.io/v1".into()));
        m.insert("kind".into(), Value::String("Event".into()));
    }
    out
}

/// events.k8s.io/v1 Event -> core/v1 Event.
pub fn v1_event_to_core(obj: &Value) -> Value {
    rename(obj, EVENT_FIELDS.iter().map(|(a, b)| (*b, *a)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_round_trip_between_versions() {
        let v1 = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"},
            "regarding": {"kind": "Pod", "name": "p"}, "note": "hello", "reason": "Started",
            "reportingController": "kwas.dev/scheduler", "deprecatedCount": 2});
        let core = v1_event_to_core(&v1);
        assert_eq!(core["involvedObject"]["name"], "p");
        assert_eq!(core["message"], "hello");
        assert_eq!(core["reportingComponent"], "kwas.dev/scheduler");
        assert_eq!(core["count"], 2);
        let back = core_event_to_v1(&core);
        assert_eq!(back, v1);
    }
}
