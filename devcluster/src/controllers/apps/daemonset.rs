//! The DaemonSet controller: one pod per eligible node (the template's `nodeSelector` matches and every
//! `NoSchedule` / `NoExecute` taint is tolerated), pinned there with required node affinity on
//! `metadata.name` as upstream does, so the scheduler places it; pods on nodes that are gone or no longer
//! eligible are removed; rolling updates replace `maxUnavailable` outdated pods at a time.

use serde_json::{Map, Value, json};

use super::{
    available, controller_ref, create_pod, delete_pod, int, list, owned_pods, ready, scaled, template_hash, terminal,
    write_status,
};
use crate::api::State;
use crate::meta;
use crate::store::GroupResource;

const MANAGER: &str = "daemon-set-controller";
const REVISION: &str = "controller-revision-hash";

/// The tolerations upstream adds to every daemon pod.
fn daemon_tolerations() -> Vec<Value> {
    let mut t: Vec<Value> = ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"]
        .iter()
        .map(|k| json!({"key": k, "operator": "Exists", "effect": "NoExecute"}))
        .collect();
    for k in [
        "node.kubernetes.io/disk-pressure",
        "node.kubernetes.io/memory-pressure",
        "node.kubernetes.io/pid-pressure",
        "node.kubernetes.io/unschedulable",
    ] {
        t.push(json!({"key": k, "operator": "Exists", "effect": "NoSchedule"}));
    }
    t
}

fn tolerates(tolerations: &[Value], taint: &Value) -> bool {
    let key = taint.get("key").and_then(Value::as_str).unwrap_or("");
    let value = taint.get("value").and_then(Value::as_str).unwrap_or("");
    let effect = taint.get("effect").and_then(Value::as_str).unwrap_or("");
    tolerations.iter().any(|t| {
        let t_effect = t.get("effect").and_then(Value::as_str).unwrap_or("");
        let t_key = t.get("key").and_then(Value::as_str).unwrap_or("");
        let exists = t.get("operator").and_then(Value::as_str) == Some("Exists");
        (t_effect.is_empty() || t_effect == effect)
            && (t_key.is_empty() && exists || t_key == key)
            && (exists || t.get("value").and_then(Value::as_str).unwrap_or("") == value)
    })
}

fn eligible(node: &Value, template: &Value, tolerations: &[Value]) -> bool {
    let labels = meta::metadata(node)
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object);
    let selector_ok = template
        .pointer("/spec/nodeSelector")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v));
    let taints_ok = node
        .pointer("/spec/taints")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|t| {
            matches!(
                t.get("effect").and_then(Value::as_str),
                Some("NoSchedule" | "NoExecute")
            )
        })
        .all(|t| tolerates(tolerations, t));
    selector_ok && taints_ok
}

/// The node a daemon pod is for.
fn node_of(pod: &Value) -> Option<String> {
    if let Some(n) = pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
    {
        return Some(n.to_string());
    }
    pod.pointer("/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/matchFields/0/values/0")
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// One pass over every DaemonSet.
pub(crate) fn sync(state: &mut State, now: jiff::Timestamp) {
    let daemonsets = list(state, "apps", "daemonsets");
    if daemonsets.is_empty() {
        return;
    }
    let nodes = state.store.list(&GroupResource::new("", "nodes"), None);
    for ds in daemonsets {
        if !meta::is_deleting(&ds) {
            sync_one(state, &ds, &nodes, now);
        }
    }
}

fn sync_one(state: &mut State, ds: &Value, nodes: &[std::sync::Arc<Value>], now: jiff::Timestamp) {
    let ns = meta::namespace(ds).to_string();
    let uid = meta::uid(ds).to_string();
    let Some(mut template) = ds.pointer("/spec/template").cloned() else {
        return;
    };
    let hash = template_hash(&template, 0);
    let mut tolerations = template
        .pointer("/spec/tolerations")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    tolerations.extend(daemon_tolerations());
    template["spec"]["tolerations"] = json!(tolerations);
    let eligible_nodes: Vec<String> = nodes
        .iter()
        .filter(|n| eligible(n, &template, &tolerations))
        .map(|n| meta::name(n).to_string())
        .collect();
    let pods = owned_pods(state, &ns, &uid);
    let revision_of = |p: &Value| {
        meta::string_map(p, "labels")
            .into_iter()
            .find(|(k, _)| k == REVISION)
            .map(|(_, v)| v)
    };
    // Pods on ineligible or missing nodes, failed pods, and duplicates go.
    let mut seen = std::collections::BTreeSet::new();
    for p in &pods {
        let node = node_of(p);
        let keep = !terminal(p)
            && node.as_ref().is_some_and(|n| eligible_nodes.contains(n))
            && node.as_ref().is_some_and(|n| seen.insert(n.clone()));
        if !keep {
            delete_pod(state, p);
        }
    }
    let owner = controller_ref(ds, "apps/v1", "DaemonSet");
    let mut labels = Map::new();
    labels.insert(REVISION.into(), json!(hash));
    let prefix = format!("{}-", meta::name(ds));
    for node in eligible_nodes
        .iter()
        .filter(|n| !seen.contains(*n))
        .take(super::CREATE_BATCH)
    {
        let node = node.clone();
        create_pod(
            state,
            &ns,
            &template,
            &owner,
            None,
            &prefix,
            &labels,
            |spec| {
                spec["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}}});
            },
            MANAGER,
        );
    }
    // Rolling update: replace up to maxUnavailable outdated pods while the others are available.
    let desired = i64::try_from(eligible_nodes.len()).unwrap_or(i64::MAX);
    let on_delete = ds.pointer("/spec/updateStrategy/type").and_then(Value::as_str) == Some("OnDelete");
    let live: Vec<_> = owned_pods(state, &ns, &uid)
        .into_iter()
        .filter(|p| !terminal(p))
        .collect();
    if !on_delete {
        let max_unavailable = scaled(
            ds.pointer("/spec/updateStrategy/rollingUpdate/maxUnavailable"),
            desired,
            false,
            1,
        )
        .max(1);
        let unavailable = live.iter().filter(|p| !ready(p)).count();
        let budget = usize::try_from(max_unavailable)
            .unwrap_or(1)
            .saturating_sub(unavailable);
        for p in live
            .iter()
            .filter(|p| revision_of(p).as_deref() != Some(hash.as_str()) && ready(p))
            .take(budget)
        {
            delete_pod(state, p);
        }
    }
    let live: Vec<_> = owned_pods(state, &ns, &uid)
        .into_iter()
        .filter(|p| !terminal(p))
        .collect();
    let min_ready = int(ds, "/spec/minReadySeconds", 0);
    let scheduled = live.iter().filter(|p| p.pointer("/spec/nodeName").is_some()).count();
    let avail = live.iter().filter(|p| available(p, min_ready, now)).count();
    let status = json!({
        "observedGeneration": int(ds, "/metadata/generation", 1),
        "desiredNumberScheduled": desired,
        "currentNumberScheduled": scheduled,
        "numberMisscheduled": 0,
        "numberReady": live.iter().filter(|p| ready(p)).count(),
        "updatedNumberScheduled": live.iter().filter(|p| revision_of(p).as_deref() == Some(hash.as_str())).count(),
        "numberAvailable": avail,
        "numberUnavailable": usize::try_from(desired).unwrap_or(0).saturating_sub(avail),
    });
    let Some(latest) = state
        .store
        .get(&GroupResource::new("apps", "daemonsets"), &ns, meta::name(ds))
    else {
        return;
    };
    write_status(state, "apps", "daemonsets", &latest, status, MANAGER);
}
