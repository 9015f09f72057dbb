//! Read-only views of built-in objects that several layers share (upstream's `podutil`,
//! `apimeta.SetStatusCondition` and friends): whether a pod is ready, a condition's status, the
//! `DisruptionAllowed` condition of a PodDisruptionBudget, a claim's `claimRef`. They read JSON objects
//! and know nothing of the store, the registry or the kinds' strategies.

use serde_json::{Value, json};

use crate::meta;

/// The status of the condition of type `ty`.
pub(crate) fn condition_status<'a>(obj: &'a Value, ty: &str) -> Option<&'a str> {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c.get("type").and_then(Value::as_str) == Some(ty)))
        .and_then(|c| c.get("status"))
        .and_then(Value::as_str)
}

/// `podutil.IsPodReady`: the pod's `Ready` condition is `True`.
pub(crate) fn pod_is_ready(pod: &Value) -> bool {
    condition_status(pod, "Ready") == Some("True")
}

/// The PodDisruptionBudget condition the disruption controller and evictions maintain.
pub(crate) const DISRUPTION_ALLOWED: &str = "DisruptionAllowed";

/// The `DisruptionAllowed` condition list after `apimeta.SetStatusCondition`: the transition time moves
/// only when the status does.
pub(crate) fn with_condition(conditions: Option<&Value>, allowed: bool, observed_generation: i64) -> Value {
    let (status, reason) = if allowed {
        ("True", "SufficientPods")
    } else {
        ("False", "InsufficientPods")
    };
    let mut list: Vec<Value> = conditions.and_then(Value::as_array).cloned().unwrap_or_default();
    let now = meta::now_rfc3339();
    let existing = list
        .iter_mut()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(DISRUPTION_ALLOWED));
    let transition = match &existing {
        Some(c) if c.get("status").and_then(Value::as_str) == Some(status) => {
            c.get("lastTransitionTime").cloned().unwrap_or(json!(now))
        }
        _ => json!(now),
    };
    let cond = json!({
        "type": DISRUPTION_ALLOWED,
        "status": status,
        "observedGeneration": observed_generation,
        "lastTransitionTime": transition,
        "reason": reason,
        "message": "",
    });
    match existing {
        Some(c) => *c = cond,
        None => list.push(cond),
    }
    Value::Array(list)
}

/// A claim's reference as a volume's `claimRef` holds it.
pub(crate) fn claim_ref(pvc: &Value) -> Value {
    json!({
        "kind": "PersistentVolumeClaim",
        "namespace": meta::namespace(pvc),
        "name": meta::name(pvc),
        "uid": meta::uid(pvc),
        "apiVersion": "v1",
        "resourceVersion": meta::resource_version(pvc),
    })
}
