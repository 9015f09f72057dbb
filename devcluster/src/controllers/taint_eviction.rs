//! The taint eviction controller (kube-controller-manager's `taint-eviction-controller`, the former
//! taint manager of the node lifecycle controller): evicts pods from nodes with `NoExecute` taints they
//! do not tolerate.
//!
//! For each non-terminal pod bound to a node with `NoExecute` taints, as upstream's
//! `processPodOnNode`:
//!
//! - a taint no toleration of the pod tolerates: the pod is evicted at once;
//! - every taint tolerated: of the tolerations used (for each taint, the first that tolerates it), the
//!   smallest `tolerationSeconds` is how long the pod may stay, counted from when this controller first
//!   saw it so (`0` or negative: at once); with no `tolerationSeconds` it stays. A taint or toleration
//!   change that makes the pod tolerate them for good cancels the pending eviction.
//!
//! Evicting adds the condition `DisruptionTarget` (status `True`, reason `DeletionByTaintManager`,
//! message `Taint manager: deleting due to NoExecute taint`) to the pod's status, records a `Normal`
//! event `TaintManagerEviction` (`Marking for deletion Pod <ns>/<name>`) and deletes the pod with its
//! default grace period, as upstream's `addConditionAndDeletePod`; the kubelet then stops its containers
//! (the pod ends `Failed`, as a disrupted pod). Pods already being deleted are left alone.
//!
//! The pass reads the nodes on every sweep and the pods only when some node has a `NoExecute` taint.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::Value;

use crate::api::subresources::set_condition;
use crate::api::{DeleteOptions, State};
use crate::meta;
use crate::recorder::{self, EventType};
use crate::request::RequestContext;
use crate::store::GroupResource;

const MANAGER: &str = "taint-eviction-controller";
/// The condition's reason (upstream's).
pub(crate) const REASON: &str = "DeletionByTaintManager";
/// The condition's message (upstream's).
pub(crate) const MESSAGE: &str = "Taint manager: deleting due to NoExecute taint";

/// Pending evictions: when each pod (by uid) was first seen tolerating its node's `NoExecute` taints
/// only for a while.
#[derive(Debug, Default)]
pub(crate) struct TaintEviction {
    since: HashMap<String, jiff::Timestamp>,
}

/// What a pod's tolerations say of a node's `NoExecute` taints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Some taint is not tolerated: evict now.
    Evict,
    /// Every taint is tolerated for this long (the smallest `tolerationSeconds`, at least 0).
    After(Duration),
    /// Every taint is tolerated for ever.
    Stay,
}

/// Whether `toleration` tolerates `taint` (upstream's `Toleration.ToleratesTaint`).
fn tolerates(toleration: &Value, taint: &Value) -> bool {
    let field = |v: &Value, f: &str| v.get(f).and_then(Value::as_str).unwrap_or("").to_string();
    let (t_effect, t_key, op) = (
        field(toleration, "effect"),
        field(toleration, "key"),
        field(toleration, "operator"),
    );
    if !t_effect.is_empty() && t_effect != field(taint, "effect") {
        return false;
    }
    if !t_key.is_empty() && t_key != field(taint, "key") {
        return false;
    }
    match op.as_str() {
        "Exists" => true,
        "" | "Equal" => field(toleration, "value") == field(taint, "value"),
        _ => false,
    }
}

/// What `tolerations` say of `taints` (the node's `NoExecute` taints, not empty).
pub(crate) fn verdict(taints: &[&Value], tolerations: &[Value]) -> Verdict {
    let mut min: Option<i64> = None;
    for taint in taints {
        let Some(used) = tolerations.iter().find(|t| tolerates(t, taint)) else {
            return Verdict::Evict;
        };
        if let Some(secs) = used.get("tolerationSeconds").and_then(Value::as_i64) {
            min = Some(min.map_or(secs, |m| m.min(secs)));
        }
    }
    match min {
        None => Verdict::Stay,
        Some(secs) => Verdict::After(Duration::from_secs(secs.max(0).unsigned_abs())),
    }
}

impl TaintEviction {
    /// One pass: evicts the pods due.
    pub(crate) fn sync(&mut self, state: &mut State, now: jiff::Timestamp) {
        let nodes = state.store.list(&GroupResource::new("", "nodes"), None);
        let tainted: HashMap<&str, Vec<&Value>> = nodes
            .iter()
            .filter_map(|n| {
                let taints: Vec<&Value> = n
                    .pointer("/spec/taints")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter(|t| t.get("effect").and_then(Value::as_str) == Some("NoExecute"))
                    .collect();
                (!taints.is_empty()).then(|| (meta::name(n), taints))
            })
            .collect();
        if tainted.is_empty() {
            self.since.clear();
            return;
        }
        let pods = state.store.list(&GroupResource::new("", "pods"), None);
        let mut pending = HashMap::new();
        let mut due = Vec::new();
        for pod in &pods {
            let node = pod.pointer("/spec/nodeName").and_then(Value::as_str).unwrap_or("");
            let Some(taints) = tainted.get(node) else { continue };
            let phase = pod.pointer("/status/phase").and_then(Value::as_str).unwrap_or("");
            if meta::is_deleting(pod) || phase == "Succeeded" || phase == "Failed" {
                continue;
            }
            let tolerations: Vec<Value> = pod
                .pointer("/spec/tolerations")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let uid = meta::uid(pod).to_string();
            match verdict(taints, &tolerations) {
                Verdict::Stay => {}
                Verdict::Evict => due.push(pod.clone()),
                Verdict::After(d) => {
                    let since = self.since.get(&uid).copied().unwrap_or(now);
                    let deadline = jiff::SignedDuration::try_from(d)
                        .ok()
                        .and_then(|d| since.checked_add(d).ok());
                    if deadline.is_some_and(|at| at <= now) {
                        due.push(pod.clone());
                    } else {
                        pending.insert(uid, since);
                    }
                }
            }
        }
        // Pods no longer pending (tolerating for good, gone, untainted) forget their start.
        self.since = pending;
        for pod in due {
            evict(state, &pod);
        }
    }
}

/// Adds the `DisruptionTarget` condition and deletes the pod (its default grace period).
fn evict(state: &mut State, pod: &Value) {
    let Some(res) = state.resource("", "v1", "pods") else {
        return;
    };
    let (ns, name, uid) = (
        meta::namespace(pod).to_string(),
        meta::name(pod).to_string(),
        meta::uid(pod).to_string(),
    );
    recorder::record(
        state,
        pod,
        EventType::Normal,
        "TaintManagerEviction",
        &format!("Marking for deletion Pod {ns}/{name}"),
        MANAGER,
        None,
    );
    let mut updated = pod.clone();
    set_condition(
        &mut updated,
        kwas_api_types::names::conditions::DISRUPTION_TARGET,
        "True",
        REASON,
        MESSAGE,
    );
    if let Err(e) = state.update(
        &res,
        &ns,
        &name,
        updated,
        Some("status"),
        &mut RequestContext::manager(MANAGER),
    ) {
        tracing::debug!(pod = %name, error = %e, "taint eviction: condition update failed");
    }
    let opts = DeleteOptions {
        precondition_uid: Some(uid),
        ..Default::default()
    };
    if let Err(e) = state.delete(&res, &ns, &name, &opts) {
        tracing::debug!(pod = %name, error = %e, "taint eviction: delete failed");
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use serde_json::json;

    use super::*;

    fn unreachable() -> Value {
        json!({"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"})
    }

    #[test]
    fn an_untolerated_taint_evicts_at_once() {
        let drain = json!({"key": "drain", "value": "yes", "effect": "NoExecute"});
        assert_eq!(verdict(&[&drain], &[]), Verdict::Evict);
        let other_value = json!({"key": "drain", "operator": "Equal", "value": "no"});
        assert_eq!(verdict(&[&drain], &[other_value]), Verdict::Evict);
        let wrong_effect = json!({"key": "drain", "operator": "Exists", "effect": "NoSchedule"});
        assert_eq!(verdict(&[&drain], &[wrong_effect]), Verdict::Evict);
    }

    #[test]
    fn the_smallest_toleration_seconds_of_the_tolerations_used_wins() {
        let drain = json!({"key": "drain", "effect": "NoExecute"});
        let tolerations = [
            json!({"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}),
            json!({"key": "drain", "operator": "Exists", "tolerationSeconds": 5}),
        ];
        assert_eq!(
            verdict(&[&unreachable(), &drain], &tolerations),
            Verdict::After(Duration::from_secs(5))
        );
        assert_eq!(
            verdict(&[&unreachable()], &tolerations),
            Verdict::After(Duration::from_secs(300))
        );
    }

    #[test]
    fn tolerations_without_seconds_stay_and_negative_seconds_evict_at_once() {
        let forever = json!({"operator": "Exists"});
        assert_eq!(verdict(&[&unreachable()], &[forever]), Verdict::Stay);
        let negative = json!({"key": "node.kubernetes.io/unreachable", "operator": "Exists", "tolerationSeconds": -5});
        assert_eq!(verdict(&[&unreachable()], &[negative]), Verdict::After(Duration::ZERO));
    }
}
