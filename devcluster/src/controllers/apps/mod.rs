//! The apps/v1 controllers kube-controller-manager runs, simplified for a development cluster: the
//! ReplicaSet controller (pods from the template up to `replicas`), the Deployment controller (a
//! ReplicaSet per template, rollouts, revisions, `Available` / `Progressing`), the StatefulSet controller
//! (ordinal pods in order, rolling updates from the highest ordinal) and the DaemonSet controller (a pod
//! per eligible node). Each pass reads the cluster, so a restart loses nothing; each writes status only
//! when it changes. What is simplified is listed in the devcluster README.

pub(super) mod daemonset;
pub(super) mod deployment;
pub(super) mod replicaset;
pub(super) mod statefulset;

use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::api::{DeleteOptions, State};
use crate::meta;
use crate::request::RequestContext;
use crate::store::GroupResource;

/// At most this many pods are created per controller object and pass (upstream's slow start batches).
const CREATE_BATCH: usize = 100;

/// Runs every apps controller once.
pub(crate) fn sync(state: &mut State, now: jiff::Timestamp) {
    deployment::sync(state, now);
    replicaset::sync(state, now);
    statefulset::sync(state, now);
    daemonset::sync(state, now);
}

/// The objects of a resource, or none when it is not served.
fn list(state: &State, group: &str, plural: &str) -> Vec<Arc<Value>> {
    state.store.list(&GroupResource::new(group, plural), None)
}

/// The controller owner reference pointing at `owner`.
fn controller_ref(owner: &Value, api_version: &str, kind: &str) -> Value {
    json!({
        "apiVersion": api_version,
        "kind": kind,
        "name": meta::name(owner),
        "uid": meta::uid(owner),
        "controller": true,
        "blockOwnerDeletion": true,
    })
}

/// Whether `obj` is controlled by the object with this uid.
fn controlled_by(obj: &Value, uid: &str) -> bool {
    meta::owner_refs(obj).iter().any(|r| r.controller && r.uid == uid)
}

/// The live (not deleting) pods of `namespace` that `owner` controls.
fn owned_pods(state: &State, namespace: &str, owner_uid: &str) -> Vec<Arc<Value>> {
    state
        .store
        .list(&GroupResource::new("", "pods"), Some(namespace))
        .into_iter()
        .filter(|p| controlled_by(p, owner_uid) && !meta::is_deleting(p))
        .collect()
}

fn phase(pod: &Value) -> &str {
    pod.pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("Pending")
}

fn terminal(pod: &Value) -> bool {
    matches!(phase(pod), "Succeeded" | "Failed")
}

fn ready_since(pod: &Value) -> Option<jiff::Timestamp> {
    pod.pointer("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"))
        .filter(|c| c.get("status").and_then(Value::as_str) == Some("True"))
        .map(|c| {
            c.get("lastTransitionTime")
                .and_then(Value::as_str)
                .and_then(meta::parse_time)
                .unwrap_or(jiff::Timestamp::UNIX_EPOCH)
        })
}

fn ready(pod: &Value) -> bool {
    !terminal(pod) && ready_since(pod).is_some()
}

/// Ready for at least `min_ready_seconds`.
fn available(pod: &Value, min_ready_seconds: i64, now: jiff::Timestamp) -> bool {
    !terminal(pod)
        && ready_since(pod).is_some_and(|t| now.as_second().saturating_sub(t.as_second()) >= min_ready_seconds)
}

/// A template's hash (`pod-template-hash`, `controller-revision-hash`): FNV-1a of its JSON, safe-encoded.
fn template_hash(template: &Value, collision_count: i64) -> String {
    let text = template.to_string();
    workloadbuilder::safe_hash(&[text.as_bytes(), collision_count.to_string().as_bytes()])
}

/// A pod from `template`, controlled by `owner`, with extra labels; named `name` or generated from
/// `generate_name`.
#[allow(clippy::too_many_arguments)]
fn create_pod(
    state: &mut State,
    namespace: &str,
    template: &Value,
    owner_ref: &Value,
    name: Option<&str>,
    generate_name: &str,
    extra_labels: &Map<String, Value>,
    spec_patch: impl FnOnce(&mut Value),
    manager: &str,
) -> bool {
    let Some(res) = state.resource("", "v1", "pods") else {
        return false;
    };
    let mut labels = template
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    labels.extend(extra_labels.clone());
    let mut metadata = json!({
        "namespace": namespace,
        "labels": labels,
        "ownerReferences": [owner_ref],
    });
    match name {
        Some(n) => metadata["name"] = json!(n),
        None => metadata["generateName"] = json!(generate_name),
    }
    if let Some(a) = template.pointer("/metadata/annotations") {
        metadata["annotations"] = a.clone();
    }
    let mut spec = template.get("spec").cloned().unwrap_or(json!({}));
    spec_patch(&mut spec);
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec});
    match state.create(&res, namespace, pod, &mut RequestContext::manager(manager)) {
        Ok(_) => true,
        Err(e) => {
            tracing::warn!(%manager, error = %e, "creating a pod failed");
            false
        }
    }
}

fn delete_pod(state: &mut State, pod: &Value) {
    let Some(res) = state.resource("", "v1", "pods") else {
        return;
    };
    let opts = DeleteOptions {
        precondition_uid: Some(meta::uid(pod).to_string()),
        ..Default::default()
    };
    if let Err(e) = state.delete(&res, meta::namespace(pod), meta::name(pod), &opts) {
        tracing::debug!(pod = %meta::name(pod), error = %e, "deleting a pod failed");
    }
}

/// Writes `status` through the status subresource when it differs from the stored one.
fn write_status(state: &mut State, group: &str, plural: &str, obj: &Value, status: Value, manager: &str) {
    if obj.get("status") == Some(&status) {
        return;
    }
    let Some(res) = state.builtin(group, plural) else {
        return;
    };
    let mut new = obj.clone();
    new["status"] = status;
    if let Err(e) = state.update(
        &res,
        meta::namespace(obj),
        meta::name(obj),
        new,
        Some("status"),
        &mut RequestContext::manager(manager),
    ) {
        tracing::debug!(object = %meta::name(obj), error = %e, "status update failed");
    }
}

fn int(obj: &Value, pointer: &str, default: i64) -> i64 {
    obj.pointer(pointer).and_then(Value::as_i64).unwrap_or(default)
}

/// An int-or-percent of `total` (`25%` of 10 is 2 when rounding down, 3 when rounding up).
fn scaled(v: Option<&Value>, total: i64, round_up: bool, default: i64) -> i64 {
    match v {
        Some(Value::Number(n)) => n.as_i64().unwrap_or(default),
        Some(Value::String(s)) => match s.strip_suffix('%').and_then(|p| p.parse::<i64>().ok()) {
            Some(p) => {
                let x = total.saturating_mul(p);
                if round_up { (x + 99) / 100 } else { x / 100 }
            }
            None => default,
        },
        _ => default,
    }
}
