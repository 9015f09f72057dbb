//! Pods: their requests, equivalence class, priority, state (pending, assumed, bound), the node they count
//! on and the group they belong to; the assume / finish / forget protocol of bindings; and the
//! `Succeeded` members a gang keeps counting.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;

use super::conversion::invalid;
use super::{Snapshot, SnapshotError};
use crate::core::equivalence::ClassId;
use crate::core::filters::{DynamicSpec, StaticSpec};
use crate::core::model::{PodKey, PodState, PreemptionPolicy};
use crate::core::resources::{Requests, pod_requests};

#[derive(Debug)]
pub(crate) struct PodInfo {
    pub key: PodKey,
    pub group_name: Option<String>,
    /// The PodGroup `group_name` names, while it is in the snapshot (kept by the group's upsert and
    /// removal, so hot paths need no lookup by name).
    pub group: Option<u32>,
    pub state: PodState,
    /// The node the pod is counted on (assumed or bound), when that node is known.
    pub node: Option<u32>,
    /// The node name the pod is assumed or bound to (the node may not be known yet).
    pub node_name: Option<String>,
    /// Simulated placement of a pending pod in the running cycle.
    pub sim_node: Option<u32>,
    /// Simulated removal (preemption) of a placed pod in the running cycle.
    pub sim_removed: bool,
    pub terminating: bool,
    pub gated: bool,
    pub explicit_priority: Option<i32>,
    pub priority_class: Option<String>,
    pub priority: i32,
    pub preemption_policy: PreemptionPolicy,
    pub explicit_preemption_policy: bool,
    pub scheduler_name: String,
    pub requests: Requests,
    pub class: ClassId,
    pub seen: u64,
    pub labels: BTreeMap<String, String>,
    /// Constraints that depend on other pods or on storage (`None`: the fast path).
    pub dynamic: Option<Arc<DynamicSpec>>,
    /// `spec.resourceClaims` (dynamic resource allocation), with the generated claim names of
    /// `status.resourceClaimStatuses`.
    pub claims: Vec<crate::core::dra::PodClaimRef>,
    /// `metadata.uid` (a claim's `reservedFor` names it).
    pub uid: String,
}

impl PodInfo {
    /// The node the pod occupies in the current (possibly simulated) state.
    #[inline]
    pub(crate) fn placed_node(&self) -> Option<u32> {
        if self.sim_removed {
            None
        } else {
            self.node.or(self.sim_node)
        }
    }

    /// Pending for real (whatever the simulation did), not gated, not terminating.
    #[inline]
    pub(crate) fn waiting(&self) -> bool {
        self.state == PodState::Pending && !self.gated && !self.terminating
    }

    /// Pending, not gated, not terminating, not placed in the simulation.
    #[inline]
    pub(crate) fn schedulable_pending(&self) -> bool {
        self.state == PodState::Pending && !self.gated && !self.terminating && self.sim_node.is_none()
    }
}

impl Snapshot {
    /// The shared copy of dynamic spec `d`: pods of one template share one, so work keyed by the spec's
    /// address (which of an existing pod's terms select the pod being prepared, `prepare_dynamic`) is
    /// done once per template. Copies no pod holds any more are dropped whenever the table has doubled.
    fn intern_dynamic(&mut self, d: DynamicSpec) -> Arc<DynamicSpec> {
        if let Some(shared) = self.dynamic_specs.get(&d) {
            return shared.clone();
        }
        if self.dynamic_specs.len() >= self.dynamic_specs_prune_at {
            self.dynamic_specs.retain(|s| Arc::strong_count(s) > 1);
            self.dynamic_specs_prune_at = self.dynamic_specs.len().saturating_mul(2).max(64);
        }
        let shared = Arc::new(d);
        self.dynamic_specs.insert(shared.clone());
        shared
    }

    /// Adds or updates a pod. A pod with `spec.nodeName` is `Bound` there; one without stays `Pending`
    /// (or keeps a placement the scheduler assumed). Pods in phase `Succeeded` / `Failed` leave the
    /// cluster state; a `Succeeded` member of a PodGroup is remembered for its gang (see the module docs).
    pub fn upsert_pod(&mut self, pod: &Pod) -> Result<(), SnapshotError> {
        let key = PodKey::new(
            pod.metadata.namespace.clone().unwrap_or_else(|| "default".to_string()),
            pod.metadata.name.clone().unwrap_or_default(),
        );
        let object = format!("Pod {key}");
        if key.name.is_empty() {
            return Err(invalid(object, "metadata.name", "Required value: name is required"));
        }
        let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
        if matches!(phase, Some("Succeeded") | Some("Failed")) {
            self.drop_live_pod(&key);
            let group = pod
                .spec
                .as_ref()
                .and_then(|s| s.scheduling_group.as_ref())
                .and_then(|g| g.pod_group_name.clone());
            match group {
                Some(g) if phase == Some("Succeeded") => self.record_succeeded(key, g),
                _ => {
                    self.forget_succeeded(&key);
                }
            }
            return Ok(());
        }
        let Some(spec) = pod.spec.as_ref() else {
            return Err(invalid(object, "spec", "Required value: spec is required"));
        };
        let requests = pod_requests(&mut self.resources, spec).map_err(|e| {
            invalid(
                object.clone(),
                e.path,
                format!("Invalid value: \"{}\": {}", e.value, e.error),
            )
        })?;
        let static_spec = StaticSpec::from_pod_spec(spec).map_err(|e| invalid(object.clone(), e.path, e.detail))?;
        let labels = pod.metadata.labels.clone().unwrap_or_default();
        let dynamic = DynamicSpec::from_pod(pod, spec, &labels)
            .map_err(|e| invalid(object.clone(), e.path, e.detail))?
            .map(|d| self.intern_dynamic(d));
        let claims = crate::core::dra::PodClaimRef::from_pod(pod);
        let class = self.classes.intern(static_spec, requests.clone());
        let group_name = spec.scheduling_group.as_ref().and_then(|g| g.pod_group_name.clone());
        let priority_class = spec.priority_class_name.clone().filter(|s| !s.is_empty());
        let (priority, class_policy) = self.resolve_priority(spec.priority, priority_class.as_deref());
        let explicit_preemption_policy = spec.preemption_policy.is_some();
        let preemption_policy = if explicit_preemption_policy {
            PreemptionPolicy::parse(spec.preemption_policy.as_deref())
        } else {
            class_policy
        };
        let node_name = spec.node_name.clone().filter(|s| !s.is_empty());
        let terminating = pod.metadata.deletion_timestamp.is_some();
        let gated = spec.scheduling_gates.as_ref().is_some_and(|g| !g.is_empty());
        let scheduler_name = spec
            .scheduler_name
            .clone()
            .unwrap_or_else(|| "default-scheduler".to_string());

        // Keep an assumed placement when the informer still shows the pod unbound.
        let previous = self.pods.id(&key);
        let (state, node_name) = match (node_name, previous.and_then(|id| self.pods.get(id))) {
            (Some(n), _) => (PodState::Bound, Some(n)),
            (None, Some(p)) if p.state == PodState::Assumed => (PodState::Assumed, p.node_name.clone()),
            (None, _) => (PodState::Pending, None),
        };
        let seen = match previous.and_then(|id| self.pods.get(id)) {
            Some(p) => p.seen,
            None => {
                self.seen_seq += 1;
                self.seen_seq
            }
        };
        if let Some(id) = previous {
            self.detach_pod(id);
        }
        let info = PodInfo {
            key: key.clone(),
            group_name,
            group: None,
            state,
            node: None,
            node_name,
            sim_node: None,
            sim_removed: false,
            terminating,
            gated,
            explicit_priority: spec.priority,
            priority_class,
            priority,
            preemption_policy,
            explicit_preemption_policy,
            scheduler_name,
            requests,
            class,
            seen,
            labels,
            dynamic,
            claims,
            uid: pod.metadata.uid.clone().unwrap_or_default(),
        };
        let id = self.pods.insert(key, info);
        self.attach_pod(id);
        Ok(())
    }

    /// Removes a deleted pod, and its `Succeeded` record if any. Returns whether it was known.
    pub fn remove_pod(&mut self, key: &PodKey) -> bool {
        let recorded = self.forget_succeeded(key);
        self.drop_live_pod(key) || recorded
    }

    /// Pods remembered as `Succeeded` members of a PodGroup (a runtime that relists uses these to find
    /// the ones deleted meanwhile).
    pub fn succeeded_pods(&self) -> impl Iterator<Item = &PodKey> + '_ {
        self.succeeded.keys()
    }

    /// How many pods of the PodGroup `namespace/name` ran to `Succeeded` (and are not deleted).
    pub fn succeeded_count(&self, namespace: &str, name: &str) -> u32 {
        self.succeeded_of
            .get(&(namespace.to_string(), name.to_string()))
            .copied()
            .unwrap_or(0)
    }

    fn record_succeeded(&mut self, key: PodKey, group: String) {
        if self.succeeded.contains_key(&key) {
            return;
        }
        *self
            .succeeded_of
            .entry((key.namespace.clone(), group.clone()))
            .or_default() += 1;
        self.succeeded.insert(key, group);
    }

    fn forget_succeeded(&mut self, key: &PodKey) -> bool {
        let Some(group) = self.succeeded.remove(key) else {
            return false;
        };
        let entry = (key.namespace.clone(), group);
        if let Some(n) = self.succeeded_of.get_mut(&entry) {
            *n -= 1;
            if *n == 0 {
                self.succeeded_of.remove(&entry);
            }
        }
        true
    }

    /// Drops a pod's live state (it finished or was deleted). Returns whether it was known.
    fn drop_live_pod(&mut self, key: &PodKey) -> bool {
        let Some(id) = self.pods.id(key) else {
            return false;
        };
        self.detach_pod(id);
        self.pods.remove(key);
        true
    }

    /// Counts the pod on its node and in its group's member list.
    fn attach_pod(&mut self, id: u32) {
        let Some(p) = self.pods.get_mut(id) else {
            return;
        };
        if let Some(name) = p.node_name.as_ref() {
            match self
                .nodes
                .id(name.as_str())
                .and_then(|nid| Some((nid, self.nodes.get_mut(nid)?)))
            {
                Some((nid, n)) => {
                    p.node = Some(nid);
                    n.add(&p.requests, 1);
                    n.pods.push(id);
                }
                None => self.orphans.entry(name.clone()).or_default().push(id),
            }
        }
        if let Some(g) = p.group_name.clone() {
            let key = (p.key.namespace.clone(), g);
            p.group = self
                .groups
                .id(&crate::core::model::GroupKey::pod_group(key.0.clone(), key.1.clone()));
            self.members_of.entry(key).or_default().push(id);
        }
        for (k, v) in &p.labels {
            self.pods_by_label.entry((k.clone(), v.clone())).or_default().push(id);
        }
        if let Some(d) = p.dynamic.as_ref().filter(|d| !d.affinity.is_empty()) {
            self.affinity_pods.insert(id);
            for t in d.affinity.terms() {
                if !self.affinity_keys.contains(&t.key) {
                    self.affinity_keys.insert(t.key.clone());
                }
            }
        }
    }

    fn detach_pod(&mut self, id: u32) {
        let Some(p) = self.pods.get_mut(id) else {
            return;
        };
        if let Some(nid) = p.node.take()
            && let Some(n) = self.nodes.get_mut(nid)
        {
            n.add(&p.requests, -1);
            n.pods.retain(|x| *x != id);
        } else if let Some(name) = p.node_name.as_ref()
            && let Some(v) = self.orphans.get_mut(name)
        {
            v.retain(|x| *x != id);
            if v.is_empty() {
                self.orphans.remove(name);
            }
        }
        if let Some(g) = p.group_name.as_ref() {
            let k = (p.key.namespace.clone(), g.clone());
            if let Some(v) = self.members_of.get_mut(&k) {
                v.retain(|x| *x != id);
                if v.is_empty() {
                    self.members_of.remove(&k);
                }
            }
        }
        for (k, v) in &p.labels {
            let key = (k.clone(), v.clone());
            if let Some(list) = self.pods_by_label.get_mut(&key) {
                list.retain(|x| *x != id);
                if list.is_empty() {
                    self.pods_by_label.remove(&key);
                }
            }
        }
        self.affinity_pods.remove(&id);
    }

    pub(crate) fn pod(&self, id: u32) -> &PodInfo {
        match self.pods.get(id) {
            Some(p) => p,
            None => unreachable_pod(),
        }
    }

    pub(crate) fn pod_id(&self, key: &PodKey) -> Option<u32> {
        self.pods.id(key)
    }

    /// A pod's state and node, if known.
    pub fn pod_state(&self, key: &PodKey) -> Option<(PodState, Option<&str>)> {
        let p = self.pod(self.pod_id(key)?);
        Some((p.state, p.node_name.as_deref()))
    }

    /// Number of pods.
    pub fn pod_count(&self) -> usize {
        self.pods.len()
    }

    /// Marks a pending pod as assumed on `node`: it counts there from now on, across cycles, until the
    /// binding is confirmed ([`Snapshot::finish_binding`] or an informer update with `spec.nodeName`) or
    /// undone ([`Snapshot::forget`]).
    pub fn assume(&mut self, key: &PodKey, node: &str) -> Result<(), SnapshotError> {
        let id = self
            .pod_id(key)
            .ok_or_else(|| SnapshotError::PodNotFound(key.clone()))?;
        if self.nodes.id(node).is_none() {
            return Err(SnapshotError::NodeNotFound(node.to_string()));
        }
        let p = self.pod(id);
        if p.state != PodState::Pending {
            return Err(SnapshotError::WrongState {
                pod: key.clone(),
                state: p.state,
                expected: "Pending",
            });
        }
        self.detach_pod(id);
        if let Some(p) = self.pods.get_mut(id) {
            p.state = PodState::Assumed;
            p.node_name = Some(node.to_string());
        }
        self.attach_pod(id);
        Ok(())
    }

    /// Confirms an assumed pod's binding.
    pub fn finish_binding(&mut self, key: &PodKey) -> Result<(), SnapshotError> {
        let id = self
            .pod_id(key)
            .ok_or_else(|| SnapshotError::PodNotFound(key.clone()))?;
        match self.pods.get_mut(id) {
            Some(p) if p.state == PodState::Assumed => {
                p.state = PodState::Bound;
                Ok(())
            }
            Some(p) => Err(SnapshotError::WrongState {
                pod: key.clone(),
                state: p.state,
                expected: "Assumed",
            }),
            None => Err(SnapshotError::PodNotFound(key.clone())),
        }
    }

    /// Undoes an assumed placement (the binding failed): the pod is pending again and its node is freed.
    pub fn forget(&mut self, key: &PodKey) -> Result<(), SnapshotError> {
        let id = self
            .pod_id(key)
            .ok_or_else(|| SnapshotError::PodNotFound(key.clone()))?;
        let p = self.pod(id);
        if p.state != PodState::Assumed {
            return Err(SnapshotError::WrongState {
                pod: key.clone(),
                state: p.state,
                expected: "Assumed",
            });
        }
        self.detach_pod(id);
        if let Some(p) = self.pods.get_mut(id) {
            p.state = PodState::Pending;
            p.node_name = None;
        }
        self.attach_pod(id);
        Ok(())
    }

    /// The ids of every pod.
    pub(crate) fn pod_ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.pods.ids()
    }
}

#[cold]
fn unreachable_pod() -> ! {
    panic!("internal error: stale pod id in the scheduler snapshot")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::testing::pod_with;

    fn anti_pod(name: &str, app: &str) -> Pod {
        let mut p = serde_json::to_value(pod_with("ns", name, None, &[("cpu", "100m")])).unwrap();
        p["spec"]["affinity"] = serde_json::json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": "kubernetes.io/hostname"}]}});
        serde_json::from_value(p).unwrap()
    }

    /// Pods with equal constraints share one spec; specs no pod holds are dropped once the table has
    /// doubled, so a stream of distinct templates does not grow it without bound.
    #[test]
    fn equal_dynamic_specs_are_shared_and_unused_ones_dropped() {
        let mut snap = Snapshot::new();
        snap.upsert_pod(&anti_pod("a", "x")).unwrap();
        snap.upsert_pod(&anti_pod("b", "x")).unwrap();
        snap.upsert_pod(&anti_pod("c", "y")).unwrap();
        let spec = |snap: &Snapshot, n: &str| {
            snap.pod(snap.pod_id(&PodKey::new("ns", n)).unwrap())
                .dynamic
                .clone()
                .unwrap()
        };
        assert!(Arc::ptr_eq(&spec(&snap, "a"), &spec(&snap, "b")));
        assert!(!Arc::ptr_eq(&spec(&snap, "a"), &spec(&snap, "c")));
        for i in 0..1000 {
            let name = format!("t{i}");
            snap.upsert_pod(&anti_pod(&name, &name)).unwrap();
            snap.remove_pod(&PodKey::new("ns", &name));
        }
        assert!(
            snap.dynamic_specs.len() <= 128,
            "{} specs kept",
            snap.dynamic_specs.len()
        );
        assert!(Arc::ptr_eq(&spec(&snap, "a"), &spec(&snap, "b")));
        snap.upsert_pod(&anti_pod("d", "x")).unwrap();
        assert!(Arc::ptr_eq(&spec(&snap, "a"), &spec(&snap, "d")));
    }
}
