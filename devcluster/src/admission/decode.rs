//! Typed decoding: built-in kinds pass through their k8s-openapi model, so wrong types are a 400 like the
//! apiserver's decoding error and unknown fields are dropped and reported per the request's
//! `fieldValidation`. Numeric quantities are canonicalized first.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::ApiError;
use crate::request::{FieldValidation, RequestContext};
use crate::resource::ResourceInfo;

/// JSON numbers where Kubernetes expects a `Quantity` (`cpu: 1` in YAML arrives as a number): the apiserver
/// accepts them, so they become canonical quantity strings (`1`, `0.5` -> `500m`) before typed decoding.
pub(crate) fn normalize_quantities(v: &mut Value) {
    match v {
        Value::Object(m) => {
            for (k, child) in m.iter_mut() {
                let quantity_map = matches!(
                    k.as_str(),
                    "requests" | "limits" | "capacity" | "allocatable" | "overhead"
                );
                if let (true, Value::Object(q)) = (quantity_map, &mut *child) {
                    for value in q.values_mut() {
                        if let Value::Number(n) = value {
                            *value = Value::String(quantity_string(n));
                        }
                    }
                } else {
                    normalize_quantities(child);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(normalize_quantities),
        _ => {}
    }
}

fn quantity_string(n: &serde_json::Number) -> String {
    if n.is_i64() || n.is_u64() {
        return n.to_string();
    }
    let f = n.as_f64().unwrap_or(0.0);
    let milli = (f * 1000.0).round();
    if (milli - f * 1000.0).abs() < 1e-6 && milli.fract() == 0.0 {
        if milli % 1000.0 == 0.0 {
            format!("{}", milli / 1000.0)
        } else {
            format!("{milli}m")
        }
    } else {
        n.to_string()
    }
}

/// Decodes through the typed model and back: wrong types are a 400 like the apiserver's decoding error,
/// unknown fields are dropped and reported per the request's `fieldValidation`.
pub(crate) fn typed<T: DeserializeOwned + Serialize>(
    ctx: &mut RequestContext,
    res: &ResourceInfo,
    obj: &mut Value,
) -> Result<(), ApiError> {
    let typed: T = serde_json::from_value(obj.clone()).map_err(|e| {
        ApiError::bad_request(format!(
            "{} in version \"{}\" cannot be handled as a {}: {e}",
            res.kind, res.version, res.kind
        ))
    })?;
    let back = serde_json::to_value(&typed).map_err(|e| ApiError::internal(e.to_string()))?;
    let mut unknown = Vec::new();
    unknown_fields(obj, &back, "", &mut unknown);
    report_unknown(ctx, &unknown)?;
    *obj = back;
    Ok(())
}

/// Reports fields the decoding dropped per the request's `fieldValidation`: a 400 `strict decoding error`
/// under `Strict`, warnings under `Warn`, nothing under `Ignore`.
pub(crate) fn report_unknown(ctx: &mut RequestContext, unknown: &[String]) -> Result<(), ApiError> {
    if unknown.is_empty() {
        return Ok(());
    }
    let described = unknown.iter().map(|f| describe_unknown(f));
    match ctx.field_validation {
        FieldValidation::Strict => {
            let list = described.collect::<Vec<_>>().join(", ");
            Err(ApiError::bad_request(format!("strict decoding error: {list}")))
        }
        FieldValidation::Warn => {
            ctx.warnings.extend(described);
            Ok(())
        }
        FieldValidation::Ignore => Ok(()),
    }
}

/// The names of KEP-6089's drafts and the fields the API settled on: (draft, field, where it applies).
const DRAFT_NAMES: [(&str, &str, &str); 4] = [
    ("policy", "schedulingPolicy", "scheduling"),
    ("constraints", "schedulingConstraints", "scheduling"),
    ("disruption", "disruptionMode", "scheduling"),
    ("level", "key", "topology"),
];

/// `unknown field "<path>"`, with a hint when the field is a KEP-6089 draft name inside a scheduling block
/// (`unknown field "spec.scheduling.policy" (did you mean "spec.scheduling.schedulingPolicy"?)`).
pub(crate) fn describe_unknown(field: &str) -> String {
    let (parent, last) = field.rsplit_once('.').unwrap_or(("", field));
    // Workload templates hold the scheduling blocks directly (`spec.podGroupTemplates[0].policy`).
    let within = |scope: &str| parent.contains(scope) || (scope == "scheduling" && parent.contains("Templates["));
    let hint = DRAFT_NAMES
        .iter()
        .find(|(draft, _, scope)| *draft == last && within(scope))
        .map(|(_, name, _)| {
            let suggestion = if parent.is_empty() {
                (*name).to_string()
            } else {
                format!("{parent}.{name}")
            };
            format!(" (did you mean {suggestion:?}?)")
        })
        .unwrap_or_default();
    format!("unknown field {field:?}{hint}")
}

/// Fields present (non-null) in `input` but dropped by the typed round trip.
pub(crate) fn unknown_fields(input: &Value, typed: &Value, path: &str, out: &mut Vec<String>) {
    match (input, typed) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in a {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                match b.get(k) {
                    None if !v.is_null() && !is_empty_container(v) => out.push(p),
                    Some(tv) => unknown_fields(v, tv, &p, out),
                    None => {}
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            for (i, (x, y)) in a.iter().zip(b.iter()).enumerate() {
                unknown_fields(x, y, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

fn is_empty_container(v: &Value) -> bool {
    matches!(v, Value::Object(m) if m.is_empty()) || matches!(v, Value::Array(a) if a.is_empty())
}

/// The object as its typed model, for validation (a decoding error is the apiserver's 400).
pub(crate) fn parse<T: DeserializeOwned>(res: &ResourceInfo, v: &Value) -> Result<T, ApiError> {
    serde_json::from_value(v.clone()).map_err(|e| {
        ApiError::bad_request(format!(
            "{} in version \"{}\" cannot be handled as a {}: {e}",
            res.kind, res.version, res.kind
        ))
    })
}

/// `workloadbuilder`'s field errors as the 422 `Invalid` Status kube-apiserver returns, with a cause per
/// field; `Ok` when there are none.
pub(crate) fn check(errors: workloadbuilder::FieldErrors, res: &ResourceInfo, obj: &Value) -> Result<(), ApiError> {
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ApiError::from(errors.to_status(
            &res.group,
            &res.kind,
            crate::meta::name(obj),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numeric_quantities_become_strings() {
        let mut pod = json!({"spec": {"containers": [{"name": "c", "resources": {
            "requests": {"cpu": 0.5, "memory": "1Gi", "nvidia.com/gpu": 1}, "limits": {"cpu": 2}}}]}});
        normalize_quantities(&mut pod);
        assert_eq!(
            pod["spec"]["containers"][0]["resources"],
            json!({"requests": {"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": "1"}, "limits": {"cpu": "2"}})
        );
    }

    #[test]
    fn draft_names_get_a_hint_inside_scheduling_blocks_only() {
        assert_eq!(
            describe_unknown("spec.scheduling.policy"),
            "unknown field \"spec.scheduling.policy\" (did you mean \"spec.scheduling.schedulingPolicy\"?)"
        );
        assert_eq!(
            describe_unknown("spec.scheduling.schedulingConstraints.topology[0].level"),
            "unknown field \"spec.scheduling.schedulingConstraints.topology[0].level\" \
             (did you mean \"spec.scheduling.schedulingConstraints.topology[0].key\"?)"
        );
        assert_eq!(
            describe_unknown("spec.podGroupTemplates[0].constraints"),
            "unknown field \"spec.podGroupTemplates[0].constraints\" \
             (did you mean \"spec.podGroupTemplates[0].schedulingConstraints\"?)"
        );
        assert_eq!(describe_unknown("spec.policy"), "unknown field \"spec.policy\"");
        assert_eq!(describe_unknown("level"), "unknown field \"level\"");
    }
}
