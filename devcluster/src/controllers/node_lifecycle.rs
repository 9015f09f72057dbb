//! The node lifecycle controller's health part (kube-controller-manager's `node-lifecycle-controller`,
//! `tryUpdateNodeHealth` and the tainting passes): a node whose kubelet stopped posting status for the
//! node monitor grace period gets its conditions `Unknown` (reason `NodeStatusUnknown`, message `Kubelet
//! stopped posting node status.`), the taints `node.kubernetes.io/unreachable` with effects `NoSchedule`
//! and `NoExecute` (the taint eviction controller then evicts its pods after their `tolerationSeconds`,
//! 300 s by default), a `NodeNotReady` event, and its pods' `Ready` condition `False` with a
//! `NodeNotReady` Warning event each (`MarkPodsNotReady`). When the kubelet posts again the conditions
//! are the kubelet's again, the taints go, and a `NodeReady` event is recorded.
//!
//! In devcluster a node's simulated kubelet is silent while the node carries
//! `kwas.dev/sim-node-down: "true"` ([`crate::sim::topology::SIM_NODE_DOWN`]); the grace period is
//! `ServerSettings::node_monitor_grace_period` (40 s, as upstream; the fast test configuration uses
//! 500 ms). Zone disruption states and rate-limited evictions are not emulated: every unreachable node is
//! tainted at once.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::{Value, json};

use crate::api::State;
use crate::api::subresources::set_condition;
use crate::meta;
use crate::recorder::{self, EventType};
use crate::request::RequestContext;
use crate::sim::topology::node_down;
use crate::store::GroupResource;

const MANAGER: &str = "node-lifecycle-controller";
/// The taint of a node whose kubelet stopped posting status.
pub(crate) const UNREACHABLE: &str = "node.kubernetes.io/unreachable";
const UNKNOWN_REASON: &str = "NodeStatusUnknown";
const UNKNOWN_MESSAGE: &str = "Kubelet stopped posting node status.";

/// The kubelet's own conditions, as the simulated kubelet posts them (restored when it posts again).
const KUBELET_CONDITIONS: [(&str, &str, &str, &str); 4] = [
    (
        "MemoryPressure",
        "False",
        "KubeletHasSufficientMemory",
        "kubelet has sufficient memory available",
    ),
    (
        "DiskPressure",
        "False",
        "KubeletHasNoDiskPressure",
        "kubelet has no disk pressure",
    ),
    (
        "PIDPressure",
        "False",
        "KubeletHasSufficientPID",
        "kubelet has sufficient PID available",
    ),
    ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
];

/// When each silent node's kubelet went silent (as this controller first saw it).
#[derive(Debug, Default)]
pub(crate) struct NodeLifecycle {
    silent_since: HashMap<String, jiff::Timestamp>,
}

/// A field of the node's `Ready` condition (`status`, `reason`).
fn ready<'a>(node: &'a Value, field: &str) -> Option<&'a str> {
    node.pointer("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"))?
        .get(field)
        .and_then(Value::as_str)
}

fn has_unreachable_taint(node: &Value) -> bool {
    node.pointer("/spec/taints")
        .and_then(Value::as_array)
        .is_some_and(|ts| {
            ts.iter()
                .any(|t| t.get("key").and_then(Value::as_str) == Some(UNREACHABLE))
        })
}

impl NodeLifecycle {
    /// One pass over the nodes.
    pub(crate) fn sync(&mut self, state: &mut State, now: jiff::Timestamp, grace: Duration) {
        let nodes = state.store.list(&GroupResource::new("", "nodes"), None);
        self.silent_since
            .retain(|name, _| nodes.iter().any(|n| meta::name(n) == name.as_str()));
        for node in nodes {
            let name = meta::name(&node).to_string();
            if node_down(&node) {
                let since = *self.silent_since.entry(name.clone()).or_insert(now);
                let due = jiff::SignedDuration::try_from(grace)
                    .ok()
                    .and_then(|g| since.checked_add(g).ok())
                    .is_none_or(|at| at <= now);
                if due && (ready(&node, "status") != Some("Unknown") || !has_unreachable_taint(&node)) {
                    mark_unreachable(state, &node, now);
                }
            } else {
                self.silent_since.remove(&name);
                // Only what this controller marked is restored (an `unreachable` taint added by hand to a
                // node whose kubelet posts stays, where upstream's controller would remove it).
                if ready(&node, "reason") == Some(UNKNOWN_REASON) {
                    mark_ready(state, &node);
                }
            }
        }
    }
}

/// Sets a node condition: a new `lastTransitionTime` when the status changes, a new `lastHeartbeatTime`
/// only when the kubelet posted (`heartbeat`).
fn set_node_condition(node: &mut Value, ty: &str, status: &str, reason: &str, message: &str, heartbeat: bool) {
    let now = meta::now_rfc3339();
    let Some(list) = node.pointer_mut("/status/conditions").and_then(Value::as_array_mut) else {
        return;
    };
    let existing = list
        .iter_mut()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(ty));
    let Some(c) = existing else {
        list.push(
            json!({"type": ty, "status": status, "reason": reason, "message": message,
            "lastHeartbeatTime": now, "lastTransitionTime": now}),
        );
        return;
    };
    if c.get("status").and_then(Value::as_str) != Some(status) {
        c["lastTransitionTime"] = json!(now);
    }
    if heartbeat {
        c["lastHeartbeatTime"] = json!(now);
    }
    c["status"] = json!(status);
    c["reason"] = json!(reason);
    c["message"] = json!(message);
}

fn nodes_res(state: &State) -> Option<std::sync::Arc<crate::resource::ResourceInfo>> {
    state.resource("", "v1", "nodes")
}

fn write_node(state: &mut State, node: Value, subresource: Option<&str>) -> Option<Value> {
    let res = nodes_res(state)?;
    let name = meta::name(&node).to_string();
    match state.update(
        &res,
        "",
        &name,
        node,
        subresource,
        &mut RequestContext::manager(MANAGER),
    ) {
        Ok(v) => Some((*v).clone()),
        Err(e) => {
            tracing::debug!(node = %name, error = %e, "node lifecycle: update failed");
            None
        }
    }
}

/// Conditions `Unknown`, the unreachable taints, the pods not ready.
fn mark_unreachable(state: &mut State, node: &Value, now: jiff::Timestamp) {
    let name = meta::name(node).to_string();
    let mut status = node.clone();
    for (ty, ..) in KUBELET_CONDITIONS {
        set_node_condition(&mut status, ty, "Unknown", UNKNOWN_REASON, UNKNOWN_MESSAGE, false);
    }
    let Some(written) = write_node(state, status, Some("status")) else {
        return;
    };
    let mut tainted = written;
    let taints = meta::ensure_object(meta::ensure_object(&mut tainted).entry("spec").or_insert(json!({})))
        .entry("taints")
        .or_insert(json!([]));
    if let Some(list) = taints.as_array_mut() {
        list.retain(|t| t.get("key").and_then(Value::as_str) != Some(UNREACHABLE));
        list.push(json!({"key": UNREACHABLE, "effect": "NoSchedule"}));
        list.push(json!({"key": UNREACHABLE, "effect": "NoExecute", "timeAdded": now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()}));
    }
    let Some(written) = write_node(state, tainted, None) else {
        return;
    };
    recorder::record(
        state,
        &written,
        EventType::Normal,
        "NodeNotReady",
        &format!("Node {name} status is now: NodeNotReady"),
        MANAGER,
        None,
    );
    let Some(pods_res) = state.resource("", "v1", "pods") else {
        return;
    };
    let pods = state.store.list(&GroupResource::new("", "pods"), None);
    for pod in pods {
        if pod.pointer("/spec/nodeName").and_then(Value::as_str) != Some(name.as_str()) {
            continue;
        }
        let ready = pod
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .and_then(|cs| {
                cs.iter()
                    .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"))
            })
            .cloned();
        let Some(ready) = ready.filter(|c| c.get("status").and_then(Value::as_str) != Some("False")) else {
            continue;
        };
        let mut updated = (*pod).clone();
        let reason = ready.get("reason").and_then(Value::as_str).unwrap_or("");
        let message = ready.get("message").and_then(Value::as_str).unwrap_or("");
        set_condition(&mut updated, "Ready", "False", reason, message);
        recorder::record(
            state,
            &pod,
            EventType::Warning,
            "NodeNotReady",
            "Node is not ready",
            MANAGER,
            None,
        );
        let (ns, pod_name) = (meta::namespace(&pod).to_string(), meta::name(&pod).to_string());
        if let Err(e) = state.update(
            &pods_res,
            &ns,
            &pod_name,
            updated,
            Some("status"),
            &mut RequestContext::manager(MANAGER),
        ) {
            tracing::debug!(pod = %pod_name, error = %e, "node lifecycle: pod status update failed");
        }
    }
}

/// The kubelet posts again: its conditions back, the unreachable taints gone.
fn mark_ready(state: &mut State, node: &Value) {
    let name = meta::name(node).to_string();
    let mut status = node.clone();
    for (ty, st, reason, message) in KUBELET_CONDITIONS {
        set_node_condition(&mut status, ty, st, reason, message, true);
    }
    let Some(mut untainted) = write_node(state, status, Some("status")) else {
        return;
    };
    if let Some(list) = untainted.pointer_mut("/spec/taints").and_then(Value::as_array_mut) {
        list.retain(|t| t.get("key").and_then(Value::as_str) != Some(UNREACHABLE));
    }
    if let Some(written) = write_node(state, untainted, None) {
        recorder::record(
            state,
            &written,
            EventType::Normal,
            "NodeReady",
            &format!("Node {name} status is now: NodeReady"),
            MANAGER,
            None,
        );
    }
}
