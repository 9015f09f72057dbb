//! Events: core/v1 Event (the storage form) and events.k8s.io/v1 Event, stored as core/v1 Events and
//! converted field by field on the way in and out (the mapping upstream's conversion uses).

use k8s_openapi::api::core::v1::Event;
use serde_json::{Map, Value};

use super::print::{col, text_cell};
use crate::meta;
use crate::resource::{Facts, NameRule, ResourceInfo, Strategy};

/// core/v1 events.
pub(crate) fn core_resource() -> ResourceInfo {
    ResourceInfo::builtin("", "v1", "Event", "events", true, EventStrategy { v1: false }).short_names(&["ev"])
}

/// events.k8s.io/v1 events, stored with core/v1 events.
pub(crate) fn v1_resource() -> ResourceInfo {
    ResourceInfo::builtin(
        "events.k8s.io",
        "v1",
        "Event",
        "events",
        true,
        EventStrategy { v1: true },
    )
    .short_names(&["ev"])
    .stored_as("", "events")
}

/// Events of either API; `v1` is events.k8s.io/v1.
#[derive(Debug)]
struct EventStrategy {
    v1: bool,
}

impl EventStrategy {
    /// The regarding-object, message and last-seen field names of this API.
    fn fields(&self) -> (&'static str, &'static str, &'static str) {
        if self.v1 {
            ("regarding", "note", "deprecatedLastTimestamp")
        } else {
            ("involvedObject", "message", "lastTimestamp")
        }
    }
}

impl Strategy for EventStrategy {
    type Object = Event;

    fn facts(&self) -> Facts {
        Facts {
            has_generation: false,
            // core/v1 events may still be written into a terminating namespace (the namespace's own
            // deletion reports through them).
            allowed_in_terminating_namespace: !self.v1,
            name_rule: NameRule::Unchecked,
            converts_fields: self.v1,
            storage_type: Some(("v1", "Event")),
            also_accepts: Some("v1"),
            ..Facts::PLAIN
        }
    }

    fn supports_field(&self, field: &str) -> bool {
        if self.v1 {
            field.starts_with("regarding.")
                || matches!(field, "reason" | "reportingController" | "type" | "deprecatedSource")
        } else {
            field.starts_with("involvedObject.") || matches!(field, "reason" | "reportingComponent" | "source" | "type")
        }
    }

    fn fields_from_storage(&self, stored: &Value) -> Value {
        core_event_to_v1(stored)
    }

    fn fields_to_storage(&self, obj: Value) -> Value {
        v1_event_to_core(&obj)
    }

    #[cfg(test)]
    fn json_schema(&self) -> Option<schemars::Schema> {
        Some(if self.v1 {
            schemars::schema_for!(k8s_openapi::api::events::v1::Event)
        } else {
            schemars::schema_for!(Event)
        })
    }

    fn columns(&self) -> Vec<Value> {
        vec![
            col(
                "Last Seen",
                "string",
                0,
                "Time when last event from this source was observed.",
            ),
            col("Type", "string", 0, "Type of this event."),
            col(
                "Reason",
                "string",
                0,
                "Short, machine understandable string that describes the reason for the event.",
            ),
            col("Object", "string", 0, "Object this event is about."),
            col(
                "Message",
                "string",
                0,
                "A human-readable description of the status of this operation.",
            ),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let (inv, msg, last) = self.fields();
        let last_seen = obj
            .get(last)
            .and_then(Value::as_str)
            .or_else(|| obj.get("eventTime").and_then(Value::as_str))
            .or_else(|| meta::meta_str(obj, "creationTimestamp"));
        let kind = obj
            .pointer(&format!("/{inv}/kind"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_lowercase();
        let oname = obj
            .pointer(&format!("/{inv}/name"))
            .and_then(Value::as_str)
            .unwrap_or("");
        vec![
            text_cell(meta::age_of(last_seen)),
            text_cell(obj.get("type").and_then(Value::as_str).unwrap_or("")),
            text_cell(obj.get("reason").and_then(Value::as_str).unwrap_or("")),
            text_cell(format!("{kind}/{oname}")),
            text_cell(obj.get(msg).and_then(Value::as_str).unwrap_or("").trim()),
        ]
    }
}

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
pub(crate) fn core_event_to_v1(obj: &Value) -> Value {
    let mut out = rename(obj, EVENT_FIELDS.iter().copied());
    if let Some(m) = out.as_object_mut() {
        m.insert("apiVersion".into(), Value::String("events.k8s.io/v1".into()));
        m.insert("kind".into(), Value::String("Event".into()));
    }
    out
}

/// events.k8s.io/v1 Event -> core/v1 Event.
pub(crate) fn v1_event_to_core(obj: &Value) -> Value {
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
