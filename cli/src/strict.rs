//! Strict decoding of input manifests: fields the typed objects do not have are errors, as with kubectl's
//! server-side field validation (`--validate=strict`), instead of being dropped silently.
//!
//! A manifest is decoded into its type and serialized back; a field present in the input but absent from
//! the round trip is unknown to the type. Null values, and empty objects or lists under a name the round
//! trip lacks, carry nothing and are not reported (a known field left empty may serialize away), with one
//! exception: the KEP-6089 draft names below are reported whatever their value, with the API's name as a
//! hint. Under an unknown block, only draft names are looked for (the rest of its shape is unknown).
//!
//! | draft name (KEP-6089 text) | API name | where |
//! | --- | --- | --- |
//! | `policy` | `schedulingPolicy` | a scheduling block (`spec.scheduling`, a JobSet's `replicatedJobPolicies[]`, a Workload's templates) |
//! | `constraints` | `schedulingConstraints` | a scheduling block |
//! | `disruption` | `disruptionMode` | a scheduling block |
//! | `level` | `key` | a topology constraint (`topology[]`) |

use std::fmt;

use serde_json::Value;
use workloadbuilder::FieldPath;

/// The KEP-6089 draft names, the API names that replaced them, and the keys of the objects they appear in.
const DRAFT_NAMES: [(&str, &str, &[&str]); 4] = [
    ("policy", "schedulingPolicy", SCHEDULING_BLOCKS),
    ("constraints", "schedulingConstraints", SCHEDULING_BLOCKS),
    ("disruption", "disruptionMode", SCHEDULING_BLOCKS),
    ("level", "key", &["topology"]),
];

/// The keys under which objects holding the scheduling building blocks appear.
const SCHEDULING_BLOCKS: &[&str] = &[
    "scheduling",
    "replicatedJobPolicies",
    "podGroupTemplates",
    "compositePodGroupTemplates",
];

/// A field of the input that its type does not have.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownField {
    /// Where it is (`spec.scheduling.policy`).
    pub path: FieldPath,
    /// The API's name for it, when it is a KEP-6089 draft name.
    pub hint: Option<&'static str>,
}

impl fmt::Display for UnknownField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: unknown field", self.path)?;
        if let Some(api) = self.hint {
            let draft = self.path.as_str().rsplit('.').next().unwrap_or_default();
            write!(f, "; did you mean {api}? ({draft} is the KEP-6089 draft name)")?;
        }
        Ok(())
    }
}

/// The API name of `key` when it is a draft name in an object held under `parent`.
fn hint(key: &str, parent: Option<&str>) -> Option<&'static str> {
    DRAFT_NAMES
        .iter()
        .find(|(draft, _, parents)| *draft == key && parent.is_some_and(|p| parents.contains(&p)))
        .map(|(_, api, _)| *api)
}

fn carries_nothing(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

/// The fields of `input` that `decoded` (the input decoded into its type and serialized back) lacks.
pub fn unknown_fields(input: &Value, decoded: &Value) -> Vec<UnknownField> {
    let mut out = Vec::new();
    walk(input, decoded, &FieldPath::root(), None, &mut out);
    out
}

fn walk(input: &Value, decoded: &Value, path: &FieldPath, parent: Option<&str>, out: &mut Vec<UnknownField>) {
    match (input, decoded) {
        (Value::Object(i), Value::Object(d)) => {
            for (key, value) in i {
                let here = path.child(key);
                match d.get(key) {
                    Some(back) => walk(value, back, &here, Some(key), out),
                    None => {
                        let hint = hint(key, parent);
                        if hint.is_some() || !carries_nothing(value) {
                            out.push(UnknownField {
                                path: here.clone(),
                                hint,
                            });
                        }
                        drafts(value, &here, Some(key), out);
                    }
                }
            }
        }
        (Value::Array(i), Value::Array(d)) => {
            for (n, (value, back)) in i.iter().zip(d).enumerate() {
                walk(value, back, &path.index(n), parent, out);
            }
        }
        _ => {}
    }
}

/// Draft names anywhere under an unknown block.
fn drafts(value: &Value, path: &FieldPath, parent: Option<&str>, out: &mut Vec<UnknownField>) {
    match value {
        Value::Object(m) => {
            for (key, v) in m {
                let here = path.child(key);
                if let Some(api) = hint(key, parent) {
                    out.push(UnknownField {
                        path: here.clone(),
                        hint: Some(api),
                    });
                }
                drafts(v, &here, Some(key), out);
            }
        }
        Value::Array(a) => {
            for (n, v) in a.iter().enumerate() {
                drafts(v, &path.index(n), parent, out);
            }
        }
        _ => {}
    }
}

/// The message for a manifest `kind` `name` with unknown fields, one line per field.
pub fn render(kind: &str, name: &str, fields: &[UnknownField]) -> String {
    let mut s = format!("The {kind} {name:?} is invalid: strict decoding found unknown fields:");
    for f in fields {
        s.push_str("\n* ");
        s.push_str(&f.to_string());
    }
    s
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn paths(fields: &[UnknownField]) -> Vec<(String, Option<&'static str>)> {
        fields.iter().map(|f| (f.path.to_string(), f.hint)).collect()
    }

    #[test]
    fn fields_missing_from_the_round_trip_are_unknown() {
        let input = json!({
            "spec": {
                "parallelism": 2,
                "typo": 3,
                "empty": {},
                "nothing": null,
                "list": [{"a": 1, "b": 2}, {"a": 1}],
            }
        });
        let decoded = json!({"spec": {"parallelism": 2, "list": [{"a": 1}, {"a": 1}]}});
        assert_eq!(
            paths(&unknown_fields(&input, &decoded)),
            [("spec.list[0].b".to_string(), None), ("spec.typo".to_string(), None)]
        );
        assert!(unknown_fields(&decoded, &decoded).is_empty());
    }

    #[test]
    fn draft_names_get_hints_in_scheduling_blocks_only() {
        let input = json!({
            "spec": {
                "scheduling": {
                    "policy": {"gang": {}},
                    "constraints": {"topology": [{"level": "zone"}]},
                    "disruption": {},
                },
                "policy": 1,
            }
        });
        let decoded = json!({"spec": {"scheduling": {}}});
        let got = unknown_fields(&input, &decoded);
        assert_eq!(
            paths(&got),
            [
                ("spec.policy".to_string(), None),
                ("spec.scheduling.constraints".to_string(), Some("schedulingConstraints")),
                ("spec.scheduling.constraints.topology[0].level".to_string(), Some("key")),
                ("spec.scheduling.disruption".to_string(), Some("disruptionMode")),
                ("spec.scheduling.policy".to_string(), Some("schedulingPolicy")),
            ]
        );
        assert_eq!(
            got[4].to_string(),
            "spec.scheduling.policy: unknown field; did you mean schedulingPolicy? (policy is the KEP-6089 draft name)"
        );
        assert_eq!(got[0].to_string(), "spec.policy: unknown field");
        // `level` in a known topology entry.
        let input = json!({"topology": [{"key": "a", "level": "b"}]});
        let decoded = json!({"topology": [{"key": "a"}]});
        assert_eq!(
            paths(&unknown_fields(&input, &decoded)),
            [("topology[0].level".to_string(), Some("key"))]
        );
    }

    #[test]
    fn rendering_lists_every_field() {
        let fields = [
            UnknownField {
                path: FieldPath::from("spec.a"),
                hint: None,
            },
            UnknownField {
                path: FieldPath::from("spec.scheduling.policy"),
                hint: Some("schedulingPolicy"),
            },
        ];
        assert_eq!(
            render("Job", "train", &fields),
            "The Job \"train\" is invalid: strict decoding found unknown fields:\n* spec.a: unknown field\n\
             * spec.scheduling.policy: unknown field; did you mean schedulingPolicy? (policy is the KEP-6089 draft name)"
        );
    }
}
