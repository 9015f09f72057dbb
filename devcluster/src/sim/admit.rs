//! The simulated kubelet's pod admission, as upstream's kubelet admits a pod bound to its node
//! (`lifecycle.PredicateAdmitHandler`, the resource part of `GeneralPredicates`): the pods it has admitted
//! and not seen end, plus this one, must fit the node's `status.allocatable` (the pod count first, then
//! `cpu`, `memory`, `ephemeral-storage` and every other resource the node has, in name order; an extended
//! resource the node does not have is not checked, as upstream's `removeMissingExtendedResources`). A pod
//! that does not fit is rejected: phase `Failed`, reason `OutOf<resource>` (`OutOfcpu`,
//! `OutOfnvidia.com/gpu`, `OutOfpods`), message `Pod was rejected: Node didn't have enough resource: cpu,
//! requested: 1000, used: 3500, capacity: 4000`, and a Warning event with that reason.
//!
//! A scheduler that keeps its books never meets this; another scheduler racing it, or a pod created with
//! `spec.nodeName`, does. Pure: [`Admitted`] is the kubelet's ledger, [`Admitted::admit`] the decision.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use crate::admission::quota::amount;

/// A pod's requests: resource name to amount (millicores for `cpu`, units otherwise).
pub(crate) type Requests = BTreeMap<String, i64>;

/// Why a pod was rejected: reason and message, as the kubelet writes them on the pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rejection {
    /// `OutOf<resource>`.
    pub reason: String,
    /// `Node didn't have enough resource: ...` (the pod's status message prefixes `Pod was rejected: `).
    pub message: String,
}

/// What the kubelet has admitted on each node and not yet seen end.
#[derive(Debug, Default)]
pub(crate) struct Admitted {
    by_node: HashMap<String, HashMap<String, Requests>>,
    node_of: HashMap<String, String>,
}

/// A pod's effective requests (upstream's `PodRequests`): the larger of the containers' sum and each init
/// container, plus `spec.overhead`.
pub(crate) fn pod_requests(pod: &Value) -> Requests {
    let mut out = Requests::new();
    let requests_of = |c: &Value| -> Requests {
        c.pointer("/resources/requests")
            .and_then(Value::as_object)
            .map(|r| r.iter().map(|(k, v)| (k.clone(), amount(k, v))).collect())
            .unwrap_or_default()
    };
    let list = |f: &str| {
        pod.pointer(&format!("/spec/{f}"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    for c in list("containers") {
        for (k, v) in requests_of(&c) {
            let e = out.entry(k).or_insert(0);
            *e = e.saturating_add(v);
        }
    }
    for c in list("initContainers") {
        for (k, v) in requests_of(&c) {
            let e = out.entry(k).or_insert(0);
            *e = (*e).max(v);
        }
    }
    if let Some(overhead) = pod.pointer("/spec/overhead").and_then(Value::as_object) {
        for (k, v) in overhead {
            let e = out.entry(k.clone()).or_insert(0);
            *e = e.saturating_add(amount(k, v));
        }
    }
    out.retain(|_, v| *v != 0);
    out
}

impl Admitted {
    /// Records `uid` as running on `node` with `requests` (again: replaces).
    pub(crate) fn add(&mut self, uid: &str, node: &str, requests: Requests) {
        self.remove(uid);
        self.by_node
            .entry(node.to_string())
            .or_default()
            .insert(uid.to_string(), requests);
        self.node_of.insert(uid.to_string(), node.to_string());
    }

    /// Forgets `uid` (it ended or was deleted).
    pub(crate) fn remove(&mut self, uid: &str) {
        if let Some(node) = self.node_of.remove(uid)
            && let Some(pods) = self.by_node.get_mut(&node)
        {
            pods.remove(uid);
            if pods.is_empty() {
                self.by_node.remove(&node);
            }
        }
    }

    /// Whether `uid` is on the ledger.
    pub(crate) fn contains(&self, uid: &str) -> bool {
        self.node_of.contains_key(uid)
    }

    /// Whether a pod `uid` with `requests` fits `node` (whose `status.allocatable` is `allocatable`) next
    /// to the pods admitted there (itself excluded).
    pub(crate) fn admit(
        &self,
        uid: &str,
        node: &str,
        requests: &Requests,
        allocatable: Option<&serde_json::Map<String, Value>>,
    ) -> Result<(), Rejection> {
        let Some(allocatable) = allocatable else {
            return Ok(());
        };
        let others: Vec<&Requests> = self
            .by_node
            .get(node)
            .map(|pods| pods.iter().filter(|(u, _)| u.as_str() != uid).map(|(_, r)| r).collect())
            .unwrap_or_default();
        let reject = |resource: &str, requested: i64, used: i64, capacity: i64| Rejection {
            reason: format!("OutOf{resource}"),
            message: format!(
                "Node didn't have enough resource: {resource}, requested: {requested}, used: {used}, capacity: {capacity}"
            ),
        };
        if let Some(max) = allocatable.get("pods").map(|q| amount("pods", q)) {
            let used = i64::try_from(others.len()).unwrap_or(i64::MAX);
            if used.saturating_add(1) > max {
                return Err(reject("pods", 1, used, max));
            }
        }
        let order = ["cpu", "memory", "ephemeral-storage"];
        let mut names: Vec<&str> = order.iter().copied().filter(|r| requests.contains_key(*r)).collect();
        names.extend(
            requests
                .keys()
                .map(String::as_str)
                .filter(|r| !order.contains(r) && *r != "pods"),
        );
        for resource in names {
            let requested = requests.get(resource).copied().unwrap_or(0);
            let Some(capacity) = allocatable.get(resource).map(|q| amount(resource, q)) else {
                // Upstream checks cpu, memory and ephemeral storage against zero when the node lacks them,
                // and ignores extended resources the node does not have.
                if order.contains(&resource) && requested > 0 {
                    let used = others
                        .iter()
                        .map(|r| r.get(resource).copied().unwrap_or(0))
                        .fold(0i64, i64::saturating_add);
                    return Err(reject(resource, requested, used, 0));
                }
                continue;
            };
            let used = others
                .iter()
                .map(|r| r.get(resource).copied().unwrap_or(0))
                .fold(0i64, i64::saturating_add);
            if used.saturating_add(requested) > capacity {
                return Err(reject(resource, requested, used, capacity));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod(cpu: &str, extra: Value) -> Value {
        let mut p = json!({"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}});
        if let (Some(s), Some(e)) = (p["spec"].as_object_mut(), extra.as_object()) {
            s.extend(e.clone());
        }
        p
    }

    fn node(cpu: &str, pods: &str) -> serde_json::Map<String, Value> {
        json!({"cpu": cpu, "memory": "8Gi", "pods": pods, "nvidia.com/gpu": "2"})
            .as_object()
            .cloned()
            .unwrap_or_default()
    }

    #[test]
    fn requests_take_the_larger_of_containers_and_init_containers_plus_overhead() {
        let p = pod(
            "500m",
            json!({"initContainers": [{"name": "i", "resources": {"requests": {"cpu": "2", "memory": "1Gi"}}}],
                   "overhead": {"cpu": "100m"}}),
        );
        let r = pod_requests(&p);
        assert_eq!(r["cpu"], 2100);
        assert_eq!(r["memory"], 1 << 30);
    }

    /// `TestGeneralPredicates`-style cases: what fits, and the reason and message of what does not.
    #[test]
    fn admission_checks_pods_then_cpu_memory_then_extended_resources() {
        let n = node("4", "3");
        let mut a = Admitted::default();
        a.add("a", "n", pod_requests(&pod("3500m", json!({}))));
        assert_eq!(
            a.admit("b", "n", &pod_requests(&pod("500m", json!({}))), Some(&n)),
            Ok(())
        );
        let e = a
            .admit("b", "n", &pod_requests(&pod("1", json!({}))), Some(&n))
            .unwrap_err();
        assert_eq!(e.reason, "OutOfcpu");
        assert_eq!(
            e.message,
            "Node didn't have enough resource: cpu, requested: 1000, used: 3500, capacity: 4000"
        );
        // The pod itself is not counted twice (a retried admission).
        a.add("b", "n", pod_requests(&pod("500m", json!({}))));
        assert_eq!(
            a.admit("b", "n", &pod_requests(&pod("500m", json!({}))), Some(&n)),
            Ok(())
        );
        // Extended resources: checked where the node has them, ignored where it does not.
        let gpus = |k: &str, v: &str| {
            let mut p = pod("0", json!({}));
            p["spec"]["containers"][0]["resources"]["requests"][k] = json!(v);
            pod_requests(&p)
        };
        let e = a.admit("c", "n", &gpus("nvidia.com/gpu", "3"), Some(&n)).unwrap_err();
        assert_eq!(e.reason, "OutOfnvidia.com/gpu");
        assert_eq!(a.admit("c", "n", &gpus("example.com/fpga", "9"), Some(&n)), Ok(()));
        // The pod count comes first.
        a.add("c", "n", Requests::new());
        let e = a
            .admit("d", "n", &pod_requests(&pod("100", json!({}))), Some(&n))
            .unwrap_err();
        assert_eq!(
            (e.reason.as_str(), e.message.as_str()),
            (
                "OutOfpods",
                "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3"
            )
        );
        // What ended frees its share; another node's pods do not count.
        a.remove("a");
        a.remove("c");
        assert_eq!(a.admit("d", "n", &pod_requests(&pod("3", json!({}))), Some(&n)), Ok(()));
        a.add("x", "other", pod_requests(&pod("4", json!({}))));
        assert_eq!(
            a.admit("d", "n", &pod_requests(&pod("3500m", json!({}))), Some(&n)),
            Ok(())
        );
        // Hostile quantities count as the most, never as nothing.
        let e = a
            .admit(
                "d",
                "n",
                &pod_requests(&pod("99999999999999999999", json!({}))),
                Some(&n),
            )
            .unwrap_err();
        assert_eq!(e.reason, "OutOfcpu");
        // A node without allocatable (not reported yet) admits.
        assert_eq!(a.admit("d", "n", &pod_requests(&pod("100", json!({}))), None), Ok(()));
    }
}
