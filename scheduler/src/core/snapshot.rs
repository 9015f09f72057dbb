//! The in-memory cluster snapshot the scheduler core works on.
//!
//! A runtime feeds it k8s-openapi objects as its informers see them ([`Snapshot::upsert_node`],
//! [`Snapshot::upsert_pod`], [`Snapshot::upsert_pod_group`], [`Snapshot::upsert_composite_pod_group`],
//! [`Snapshot::upsert_priority_class`] and the `remove_*` twins), incrementally or rebuilt per cycle.
//! Bad input is rejected whole with a field path; nothing is half-applied.
//!
//! Pods move through [`PodState`]: `Pending` -> `Assumed` (the scheduler committed a placement with
//! [`Snapshot::assume`], binding in flight) -> `Bound` (the informer reports `spec.nodeName`, or
//! [`Snapshot::finish_binding`]). A failed binding is undone with [`Snapshot::forget`]. Pods in phase
//! `Succeeded` / `Failed` hold no resources and are dropped; a pod of a PodGroup that `Succeeded` is
//! remembered (until the pod is deleted) and keeps counting towards its gang's `minCount`: a gang that ran
//! and whose members finish stays satisfied, so the Job's later pods (more completions than parallelism)
//! are scheduled instead of waiting for `minCount` new pods forever. A `Failed` pod does not count: its
//! replacement has to secure the gang again together with the pods still running.
//!
//! Priorities: a pod's priority is `spec.priority`, else its PriorityClass' value, else the global
//! default class, else 0; a group's is resolved the same way from its own fields. Within a group the
//! group's priority is the one used for scheduling and preemption (KEP-5710).

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kwas_api::v1alpha3::{CompositePodGroup, PodGroup};
use thiserror::Error;

use super::equivalence::{ClassId, ClassRegistry, StaticId};
use super::filters::{NodeTaint, NodeView, StaticSpec};
use super::model::{DisruptionMode, GroupKey, GroupKind, PodKey, PodState, Policy, PreemptionPolicy};
use super::resources::{Requests, ResourceNames, node_allocatable, pod_requests};

/// An object the snapshot could not take.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SnapshotError {
    /// A field holds a value the scheduler cannot use; rendered like an apiserver field error.
    #[error("{object}: {path}: {detail}")]
    Invalid {
        /// The object, e.g. `Pod ns/name`.
        object: String,
        /// Field path, e.g. `spec.containers[0].resources.requests[cpu]`.
        path: String,
        /// `Invalid value: "x": reason`, `Required value: ...`, ...
        detail: String,
    },
    /// The named pod is not in the snapshot.
    #[error("pod {0} not found")]
    PodNotFound(PodKey),
    /// The named node is not in the snapshot.
    #[error("node {0:?} not found")]
    NodeNotFound(String),
    /// The pod is not in a state the operation applies to.
    #[error("pod {pod} is {state:?}, expected {expected}")]
    WrongState {
        /// The pod.
        pod: PodKey,
        /// Its state.
        state: PodState,
        /// What the operation needs.
        expected: &'static str,
    },
}

#[derive(Debug)]
pub(crate) struct NodeInfo {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub taints: Vec<NodeTaint>,
    pub unschedulable: bool,
    pub allocatable: Vec<i64>,
    pub requested: Vec<i64>,
    /// Bumped on every usage change (real or simulated).
    pub version: u64,
    /// Position in name order, for deterministic tie-breaks.
    pub rank: u32,
    /// Pods counted on this node (assumed or bound).
    pub pods: Vec<u32>,
}

impl NodeInfo {
    pub(crate) fn view(&self) -> NodeView<'_> {
        NodeView {
            name: &self.name,
            labels: &self.labels,
            taints: &self.taints,
            unschedulable: self.unschedulable,
        }
    }

    fn add(&mut self, r: &Requests, sign: i64) {
        for &(i, v) in &r.0 {
            let i = i as usize;
            if self.requested.len() <= i {
                self.requested.resize(i + 1, 0);
            }
            self.requested[i] = self.requested[i].saturating_add(sign * v);
        }
        self.version += 1;
    }
}

#[derive(Debug)]
pub(crate) struct PodInfo {
    pub key: PodKey,
    pub group_name: Option<String>,
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

#[derive(Debug)]
pub(crate) struct GroupInfo {
    pub key: GroupKey,
    pub parent_name: Option<String>,
    pub policy: Policy,
    pub topology_key: Option<String>,
    pub disruption: DisruptionMode,
    pub explicit_priority: Option<i32>,
    pub priority_class: Option<String>,
    pub priority: i32,
    pub preemption_policy: PreemptionPolicy,
    pub workload: Option<String>,
    pub created: i64,
}

#[derive(Debug, Clone)]
struct PriorityClassInfo {
    value: i32,
    global_default: bool,
    preemption_policy: PreemptionPolicy,
}

#[derive(Debug, Default)]
pub(crate) struct TopologyIndex {
    pub epoch: u64,
    /// Label value -> nodes with it, in name order. Nodes without the label are left out.
    pub domains: BTreeMap<String, Vec<u32>>,
}

/// The cluster state one scheduler works on. See the module docs.
#[derive(Debug, Default)]
pub struct Snapshot {
    pub(crate) resources: ResourceNames,
    pub(crate) nodes: Vec<Option<NodeInfo>>,
    node_free: Vec<u32>,
    node_index: HashMap<String, u32>,
    /// Nodes in name order (valid when `order_dirty` is false; see [`Snapshot::prepare`]).
    pub(crate) node_order: Vec<u32>,
    order_dirty: bool,
    /// Bumped when a node is added or removed or changes labels, taints or `unschedulable`.
    pub(crate) node_epoch: u64,
    pub(crate) pods: Vec<Option<PodInfo>>,
    pod_free: Vec<u32>,
    pod_index: HashMap<PodKey, u32>,
    pub(crate) groups: Vec<Option<GroupInfo>>,
    group_free: Vec<u32>,
    group_index: HashMap<GroupKey, u32>,
    /// Node name -> pods assumed or bound to it while the node is not in the snapshot.
    orphans: HashMap<String, Vec<u32>>,
    /// (namespace, PodGroup name) -> pods that name it, whether or not the group exists.
    members_of: HashMap<(String, String), Vec<u32>>,
    /// (namespace, CompositePodGroup name) -> groups that name it as parent, in creation order.
    children_of: HashMap<(String, String), Vec<u32>>,
    /// Pods of a PodGroup that ran to `Succeeded` -> their group's name (see the module docs).
    succeeded: HashMap<PodKey, String>,
    /// (namespace, PodGroup name) -> how many of its pods `Succeeded`.
    succeeded_of: HashMap<(String, String), u32>,
    priority_classes: HashMap<String, PriorityClassInfo>,
    pub(crate) classes: ClassRegistry,
    pub(crate) topology: HashMap<String, TopologyIndex>,
    scheduler_names: Option<Vec<String>>,
    seen_seq: u64,
}

fn invalid(object: String, path: impl Into<String>, detail: impl Into<String>) -> SnapshotError {
    SnapshotError::Invalid {
        object,
        path: path.into(),
        detail: detail.into(),
    }
}

/// A group's policy from its `schedulingPolicy` union (`count_field`: `minCount` or `minGroupCount`).
fn group_policy(object: &str, basic: bool, gang: Option<i32>, count_field: &str) -> Result<Policy, SnapshotError> {
    match (basic, gang) {
        (true, None) => Ok(Policy::Basic),
        (false, Some(min)) if min >= 1 => Ok(Policy::Gang { min: min as u32 }),
        (false, Some(min)) => Err(invalid(
            object.to_string(),
            format!("spec.schedulingPolicy.gang.{count_field}"),
            format!("Invalid value: {min}: must be greater than or equal to 1"),
        )),
        (true, Some(_)) => Err(invalid(
            object.to_string(),
            "spec.schedulingPolicy",
            "Invalid value: must specify exactly one of: `basic`, `gang`",
        )),
        (false, None) => Err(invalid(
            object.to_string(),
            "spec.schedulingPolicy",
            "Required value: must specify one of: `basic`, `gang`",
        )),
    }
}

fn timestamp(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> i64 {
    meta.creation_timestamp.as_ref().map(|t| t.0.as_second()).unwrap_or(0)
}

impl Snapshot {
    /// An empty snapshot that schedules pending pods of every scheduler name.
    pub fn new() -> Self {
        Self::default()
    }

    /// Restricts scheduling to pending pods whose `spec.schedulerName` (default `default-scheduler`) is
    /// one of `names`. Pods of other schedulers still count on their nodes.
    pub fn set_scheduler_names(&mut self, names: Vec<String>) {
        self.scheduler_names = Some(names);
    }

    pub(crate) fn responsible_for(&self, scheduler_name: &str) -> bool {
        self.scheduler_names
            .as_ref()
            .is_none_or(|n| n.iter().any(|x| x == scheduler_name))
    }

    // ----------------------------------------------------------------------------------------------
    // Nodes

    /// Adds or updates a node from its API object (labels, taints, `spec.unschedulable`,
    /// `status.allocatable`, falling back to `status.capacity`).
    pub fn upsert_node(&mut self, node: &Node) -> Result<(), SnapshotError> {
        let name = node.metadata.name.clone().unwrap_or_default();
        let object = format!("Node {name}");
        if name.is_empty() {
            return Err(invalid(object, "metadata.name", "Required value: name is required"));
        }
        let status = node.status.as_ref();
        let alloc_src = status.and_then(|s| s.allocatable.as_ref().or(s.capacity.as_ref()));
        let allocatable = node_allocatable(&mut self.resources, alloc_src).map_err(|e| {
            invalid(
                object.clone(),
                e.path,
                format!("Invalid value: \"{}\": {}", e.value, e.error),
            )
        })?;
        let labels = node.metadata.labels.clone().unwrap_or_default();
        let spec = node.spec.as_ref();
        let taints: Vec<NodeTaint> = spec
            .and_then(|s| s.taints.as_ref())
            .into_iter()
            .flatten()
            .map(|t| NodeTaint {
                key: t.key.clone(),
                value: t.value.clone().unwrap_or_default(),
                effect: t.effect.clone(),
            })
            .collect();
        let unschedulable = spec.and_then(|s| s.unschedulable).unwrap_or(false);
        if let Some(&id) = self.node_index.get(&name) {
            let mut changed = false;
            if let Some(n) = self.nodes[id as usize].as_mut() {
                changed = n.labels != labels || n.taints != taints || n.unschedulable != unschedulable;
                n.labels = labels;
                n.taints = taints;
                n.unschedulable = unschedulable;
                n.allocatable = allocatable;
                n.version += 1;
            }
            if changed {
                self.node_epoch += 1;
            }
            return Ok(());
        }
        let id = match self.node_free.pop() {
            Some(id) => id,
            None => {
                self.nodes.push(None);
                (self.nodes.len() - 1) as u32
            }
        };
        let mut info = NodeInfo {
            name: name.clone(),
            labels,
            taints,
            unschedulable,
            allocatable,
            requested: vec![0; self.resources.len()],
            version: 0,
            rank: 0,
            pods: Vec::new(),
        };
        // Attach pods already bound or assumed to this node name.
        for pid in self.orphans.remove(&name).unwrap_or_default() {
            if let Some(Some(p)) = self.pods.get_mut(pid as usize) {
                p.node = Some(id);
                info.add(&p.requests, 1);
                info.pods.push(pid);
            }
        }
        self.nodes[id as usize] = Some(info);
        self.node_index.insert(name, id);
        self.node_epoch += 1;
        self.order_dirty = true;
        Ok(())
    }

    /// Removes a node. Pods on it stay (they keep their node name) but no longer count anywhere.
    pub fn remove_node(&mut self, name: &str) -> bool {
        let Some(id) = self.node_index.remove(name) else {
            return false;
        };
        if let Some(n) = self.nodes[id as usize].take() {
            for pid in &n.pods {
                if let Some(Some(p)) = self.pods.get_mut(*pid as usize) {
                    p.node = None;
                }
            }
            self.orphans.insert(n.name, n.pods);
        }
        self.node_free.push(id);
        self.node_epoch += 1;
        self.order_dirty = true;
        true
    }

    /// Brings the name order of the nodes up to date (after nodes were added or removed). Every cycle
    /// starts with it; adding many nodes in a row costs one sort.
    pub(crate) fn prepare(&mut self) {
        if self.order_dirty {
            self.rebuild_node_order();
            self.order_dirty = false;
        }
    }

    fn rebuild_node_order(&mut self) {
        let mut order: Vec<u32> = self.node_index.values().copied().collect();
        order.sort_by(|a, b| self.node_name(*a).cmp(self.node_name(*b)));
        for (rank, id) in order.iter().enumerate() {
            if let Some(Some(n)) = self.nodes.get_mut(*id as usize) {
                n.rank = rank as u32;
            }
        }
        self.node_order = order;
    }

    pub(crate) fn node(&self, id: u32) -> &NodeInfo {
        // Ids handed out by the snapshot always point at a live node while a cycle runs.
        match self.nodes.get(id as usize) {
            Some(Some(n)) => n,
            _ => unreachable_node(),
        }
    }

    pub(crate) fn node_name(&self, id: u32) -> &str {
        self.nodes
            .get(id as usize)
            .and_then(|n| n.as_ref())
            .map(|n| n.name.as_str())
            .unwrap_or("")
    }

    /// Number of nodes.
    pub fn node_count(&self) -> usize {
        self.node_index.len()
    }

    /// What is requested on a node, by resource name (cpu in millicores, memory in bytes).
    pub fn node_requested(&self, name: &str) -> Option<BTreeMap<String, i64>> {
        let n = self.nodes[*self.node_index.get(name)? as usize].as_ref()?;
        Some(
            n.requested
                .iter()
                .enumerate()
                .filter(|(_, v)| **v != 0)
                .map(|(i, v)| (self.resources.name(i as u16).to_string(), *v))
                .collect(),
        )
    }

    /// What a node can hold, by resource name.
    pub fn node_allocatable(&self, name: &str) -> Option<BTreeMap<String, i64>> {
        let n = self.nodes[*self.node_index.get(name)? as usize].as_ref()?;
        Some(
            n.allocatable
                .iter()
                .enumerate()
                .filter(|(_, v)| **v != 0)
                .map(|(i, v)| (self.resources.name(i as u16).to_string(), *v))
                .collect(),
        )
    }

    /// Node names in name order.
    pub fn node_names(&self) -> impl Iterator<Item = &str> {
        let mut names: Vec<&str> = self.node_index.keys().map(String::as_str).collect();
        names.sort_unstable();
        names.into_iter()
    }

    /// A node's label value.
    pub fn node_label(&self, node: &str, key: &str) -> Option<&str> {
        let n = self.nodes[*self.node_index.get(node)? as usize].as_ref()?;
        n.labels.get(key).map(String::as_str)
    }

    // ----------------------------------------------------------------------------------------------
    // Pods

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
        let previous = self.pod_index.get(&key).copied();
        let (state, node_name) = match (node_name, previous.and_then(|id| self.pods[id as usize].as_ref())) {
            (Some(n), _) => (PodState::Bound, Some(n)),
            (None, Some(p)) if p.state == PodState::Assumed => (PodState::Assumed, p.node_name.clone()),
            (None, _) => (PodState::Pending, None),
        };
        let seen = match previous.and_then(|id| self.pods[id as usize].as_ref()) {
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
        };
        let id = match previous {
            Some(id) => id,
            None => match self.pod_free.pop() {
                Some(id) => id,
                None => {
                    self.pods.push(None);
                    (self.pods.len() - 1) as u32
                }
            },
        };
        self.pods[id as usize] = Some(info);
        self.pod_index.insert(key, id);
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
        let Some(id) = self.pod_index.remove(key) else {
            return false;
        };
        self.detach_pod(id);
        self.pods[id as usize] = None;
        self.pod_free.push(id);
        true
    }

    /// Counts the pod on its node and in its group's member list.
    fn attach_pod(&mut self, id: u32) {
        let Some(p) = self.pods[id as usize].as_mut() else {
            return;
        };
        if let Some(name) = p.node_name.as_ref() {
            match self
                .node_index
                .get(name)
                .and_then(|&nid| Some((nid, self.nodes[nid as usize].as_mut()?)))
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
            self.members_of
                .entry((p.key.namespace.clone(), g))
                .or_default()
                .push(id);
        }
    }

    fn detach_pod(&mut self, id: u32) {
        let Some(p) = self.pods[id as usize].as_mut() else {
            return;
        };
        if let Some(nid) = p.node.take()
            && let Some(n) = self.nodes[nid as usize].as_mut()
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
    }

    pub(crate) fn pod(&self, id: u32) -> &PodInfo {
        match self.pods.get(id as usize) {
            Some(Some(p)) => p,
            _ => unreachable_pod(),
        }
    }

    pub(crate) fn pod_id(&self, key: &PodKey) -> Option<u32> {
        self.pod_index.get(key).copied()
    }

    /// A pod's state and node, if known.
    pub fn pod_state(&self, key: &PodKey) -> Option<(PodState, Option<&str>)> {
        let p = self.pod(self.pod_id(key)?);
        Some((p.state, p.node_name.as_deref()))
    }

    /// Number of pods.
    pub fn pod_count(&self) -> usize {
        self.pod_index.len()
    }

    /// Marks a pending pod as assumed on `node`: it counts there from now on, across cycles, until the
    /// binding is confirmed ([`Snapshot::finish_binding`] or an informer update with `spec.nodeName`) or
    /// undone ([`Snapshot::forget`]).
    pub fn assume(&mut self, key: &PodKey, node: &str) -> Result<(), SnapshotError> {
        let id = self
            .pod_id(key)
            .ok_or_else(|| SnapshotError::PodNotFound(key.clone()))?;
        if !self.node_index.contains_key(node) {
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
        if let Some(p) = self.pods[id as usize].as_mut() {
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
        match self.pods[id as usize].as_mut() {
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
        if let Some(p) = self.pods[id as usize].as_mut() {
            p.state = PodState::Pending;
            p.node_name = None;
        }
        self.attach_pod(id);
        Ok(())
    }

    // ----------------------------------------------------------------------------------------------
    // Groups

    /// Adds or updates a PodGroup.
    pub fn upsert_pod_group(&mut self, pg: &PodGroup) -> Result<(), SnapshotError> {
        let key = GroupKey::pod_group(
            pg.metadata.namespace.clone().unwrap_or_else(|| "default".to_string()),
            pg.metadata.name.clone().unwrap_or_default(),
        );
        let object = format!("PodGroup {}/{}", key.namespace, key.name);
        if key.name.is_empty() {
            return Err(invalid(object, "metadata.name", "Required value: name is required"));
        }
        let spec = &pg.spec;
        let policy = group_policy(
            &object,
            spec.scheduling_policy.basic.is_some(),
            spec.scheduling_policy.gang.as_ref().map(|g| g.min_count),
            "minCount",
        )?;
        let topology = spec.scheduling_constraints.as_ref().and_then(|c| c.topology.as_ref());
        let topology_key = topology_key(topology, &object)?;
        let disruption = match spec.disruption_mode.as_ref() {
            Some(d) if d.all.is_some() => DisruptionMode::All,
            _ => DisruptionMode::Single,
        };
        let info = self.group_info(
            key,
            spec.parent_composite_pod_group_name.clone(),
            policy,
            topology_key,
            disruption,
            spec.priority,
            spec.priority_class_name.clone(),
            spec.preemption_policy.as_deref(),
            spec.workload_ref.as_ref().map(|w| w.workload_name.clone()),
            timestamp(&pg.metadata),
        );
        self.insert_group(info);
        Ok(())
    }

    /// Adds or updates a CompositePodGroup.
    pub fn upsert_composite_pod_group(&mut self, cpg: &CompositePodGroup) -> Result<(), SnapshotError> {
        let key = GroupKey::composite(
            cpg.metadata.namespace.clone().unwrap_or_else(|| "default".to_string()),
            cpg.metadata.name.clone().unwrap_or_default(),
        );
        let object = format!("CompositePodGroup {}/{}", key.namespace, key.name);
        if key.name.is_empty() {
            return Err(invalid(object, "metadata.name", "Required value: name is required"));
        }
        let spec = &cpg.spec;
        let policy = group_policy(
            &object,
            spec.scheduling_policy.basic.is_some(),
            spec.scheduling_policy.gang.as_ref().map(|g| g.min_group_count),
            "minGroupCount",
        )?;
        let topology = spec.scheduling_constraints.as_ref().and_then(|c| c.topology.as_ref());
        let topology_key = topology_key(topology, &object)?;
        let disruption = match spec.disruption_mode.as_ref() {
            Some(d) if d.all.is_some() => DisruptionMode::All,
            _ => DisruptionMode::Single,
        };
        let info = self.group_info(
            key,
            spec.parent_composite_pod_group_name.clone(),
            policy,
            topology_key,
            disruption,
            spec.priority,
            spec.priority_class_name.clone(),
            spec.preemption_policy.as_deref(),
            Some(spec.workload_ref.workload_name.clone()),
            timestamp(&cpg.metadata),
        );
        self.insert_group(info);
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn group_info(
        &self,
        key: GroupKey,
        parent_name: Option<String>,
        policy: Policy,
        topology_key: Option<String>,
        disruption: DisruptionMode,
        explicit_priority: Option<i32>,
        priority_class: Option<String>,
        preemption_policy: Option<&str>,
        workload: Option<String>,
        created: i64,
    ) -> GroupInfo {
        let priority_class = priority_class.filter(|s| !s.is_empty());
        let (priority, class_policy) = self.resolve_priority(explicit_priority, priority_class.as_deref());
        GroupInfo {
            key,
            parent_name: parent_name.filter(|s| !s.is_empty()),
            policy,
            topology_key,
            disruption,
            explicit_priority,
            priority_class,
            priority,
            preemption_policy: match preemption_policy {
                Some(p) => PreemptionPolicy::parse(Some(p)),
                None => class_policy,
            },
            workload,
            created,
        }
    }

    fn insert_group(&mut self, info: GroupInfo) {
        let key = info.key.clone();
        if let Some(&id) = self.group_index.get(&key) {
            self.unlink_parent(id);
            self.groups[id as usize] = Some(info);
            self.link_parent(id);
            return;
        }
        let id = match self.group_free.pop() {
            Some(id) => id,
            None => {
                self.groups.push(None);
                (self.groups.len() - 1) as u32
            }
        };
        self.groups[id as usize] = Some(info);
        self.group_index.insert(key, id);
        self.link_parent(id);
    }

    fn link_parent(&mut self, id: u32) {
        let g = self.group(id);
        let Some(parent) = g.parent_name.clone() else {
            return;
        };
        let k = (g.key.namespace.clone(), parent);
        let mut list = self.children_of.remove(&k).unwrap_or_default();
        list.push(id);
        list.sort_by(|a, b| {
            let (ga, gb) = (self.group(*a), self.group(*b));
            (ga.created, &ga.key.name, ga.key.kind).cmp(&(gb.created, &gb.key.name, gb.key.kind))
        });
        self.children_of.insert(k, list);
    }

    fn unlink_parent(&mut self, id: u32) {
        let g = self.group(id);
        let Some(parent) = g.parent_name.clone() else {
            return;
        };
        let k = (g.key.namespace.clone(), parent);
        if let Some(v) = self.children_of.get_mut(&k) {
            v.retain(|x| *x != id);
            if v.is_empty() {
                self.children_of.remove(&k);
            }
        }
    }

    /// Removes a group. Its pods and children stay and wait for it to come back.
    pub fn remove_group(&mut self, key: &GroupKey) -> bool {
        let Some(id) = self.group_index.remove(key) else {
            return false;
        };
        self.unlink_parent(id);
        self.groups[id as usize] = None;
        self.group_free.push(id);
        true
    }

    pub(crate) fn group(&self, id: u32) -> &GroupInfo {
        match self.groups.get(id as usize) {
            Some(Some(g)) => g,
            _ => unreachable_group(),
        }
    }

    pub(crate) fn group_id(&self, key: &GroupKey) -> Option<u32> {
        self.group_index.get(key).copied()
    }

    /// Whether the group is in the snapshot.
    pub fn has_group(&self, key: &GroupKey) -> bool {
        self.group_index.contains_key(key)
    }

    /// The parent CompositePodGroup of a group, if it names one and that group is observed.
    pub(crate) fn parent(&self, id: u32) -> Option<u32> {
        let g = self.group(id);
        let p = g.parent_name.as_ref()?;
        self.group_id(&GroupKey::composite(g.key.namespace.clone(), p.clone()))
    }

    /// Child groups of a CompositePodGroup, in creation order then name.
    pub(crate) fn children(&self, id: u32) -> &[u32] {
        let g = self.group(id);
        if g.key.kind != GroupKind::CompositePodGroup {
            return &[];
        }
        self.children_of
            .get(&(g.key.namespace.clone(), g.key.name.clone()))
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// Pods that name a PodGroup.
    pub(crate) fn members(&self, id: u32) -> &[u32] {
        let g = self.group(id);
        if g.key.kind != GroupKind::PodGroup {
            return &[];
        }
        self.members_of
            .get(&(g.key.namespace.clone(), g.key.name.clone()))
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    pub(crate) fn pod_ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.pod_index.values().copied()
    }

    /// Pods of PodGroup `g` that `Succeeded` (0 for a CompositePodGroup).
    pub(crate) fn succeeded_members(&self, g: u32) -> u32 {
        let group = self.group(g);
        if group.key.kind != GroupKind::PodGroup {
            return 0;
        }
        self.succeeded_count(&group.key.namespace, &group.key.name)
    }

    /// Admissibility (KEP-6012 PreEnqueue rules): a PodGroup has enough pending, placed or succeeded pods
    /// for its minimum, a CompositePodGroup enough admissible children for its.
    pub(crate) fn admissible(&self, g: u32) -> bool {
        let group = self.group(g);
        let min = group.policy.minimum();
        let mut n = 0;
        match group.key.kind {
            GroupKind::PodGroup => {
                n += self.succeeded_members(g);
                for &pid in self.members(g) {
                    let p = self.pod(pid);
                    if !p.terminating
                        && (p.placed_node().is_some()
                            || (p.schedulable_pending() && self.responsible_for(&p.scheduler_name)))
                    {
                        n += 1;
                    }
                }
            }
            GroupKind::CompositePodGroup => {
                for &c in self.children(g) {
                    if self.admissible(c) {
                        n += 1;
                    }
                }
            }
        }
        n >= min
    }

    /// Every group connected to `group` through parent references (up to the root, or around a cycle)
    /// and child lists, in key order. Empty if the group is unknown.
    pub fn hierarchy_members(&self, group: &GroupKey) -> Vec<GroupKey> {
        let Some(start) = self.group_id(group) else {
            return Vec::new();
        };
        let mut seen = std::collections::HashSet::new();
        let mut stack = vec![start];
        while let Some(g) = stack.pop() {
            if !seen.insert(g) {
                continue;
            }
            if let Some(p) = self.parent(g) {
                stack.push(p);
            }
            stack.extend(self.children(g).iter().copied());
        }
        let mut out: Vec<GroupKey> = seen.into_iter().map(|g| self.group(g).key.clone()).collect();
        out.sort();
        out
    }

    pub(crate) fn node_id(&self, name: &str) -> Option<u32> {
        self.node_index.get(name).copied()
    }

    /// The scheduling priority of a pod: its group's when it has one, its own otherwise.
    pub(crate) fn effective_priority(&self, pod: u32) -> i32 {
        let p = self.pod(pod);
        match p.group_name.as_ref() {
            Some(g) => self
                .group_id(&GroupKey::pod_group(p.key.namespace.clone(), g.clone()))
                .map(|id| self.group(id).priority)
                .unwrap_or(p.priority),
            None => p.priority,
        }
    }

    // ----------------------------------------------------------------------------------------------
    // Priority classes

    /// Adds or updates a PriorityClass; pods and groups naming it without an explicit priority are
    /// re-resolved.
    pub fn upsert_priority_class(&mut self, pc: &PriorityClass) {
        let name = pc.metadata.name.clone().unwrap_or_default();
        self.priority_classes.insert(
            name,
            PriorityClassInfo {
                value: pc.value.unwrap_or(0),
                global_default: pc.global_default.unwrap_or(false),
                preemption_policy: PreemptionPolicy::parse(pc.preemption_policy.as_deref()),
            },
        );
        self.reresolve_priorities();
    }

    /// Removes a PriorityClass.
    pub fn remove_priority_class(&mut self, name: &str) {
        self.priority_classes.remove(name);
        self.reresolve_priorities();
    }

    fn resolve_priority(&self, explicit: Option<i32>, class: Option<&str>) -> (i32, PreemptionPolicy) {
        let class_info = match class {
            Some(c) => self.priority_classes.get(c),
            None => self
                .priority_classes
                .iter()
                .filter(|(_, p)| p.global_default)
                .min_by_key(|(n, _)| n.as_str())
                .map(|(_, p)| p),
        };
        let policy = class_info.map(|c| c.preemption_policy).unwrap_or_default();
        match explicit {
            Some(v) => (v, policy),
            None => (class_info.map(|c| c.value).unwrap_or(0), policy),
        }
    }

    fn reresolve_priorities(&mut self) {
        for i in 0..self.pods.len() {
            if let Some(p) = self.pods[i].as_ref() {
                let (prio, pol) = self.resolve_priority(p.explicit_priority, p.priority_class.as_deref());
                let explicit_pol = p.explicit_preemption_policy;
                if let Some(p) = self.pods[i].as_mut() {
                    p.priority = prio;
                    if !explicit_pol {
                        p.preemption_policy = pol;
                    }
                }
            }
        }
        for i in 0..self.groups.len() {
            if let Some(g) = self.groups[i].as_ref() {
                let (prio, _) = self.resolve_priority(g.explicit_priority, g.priority_class.as_deref());
                if let Some(g) = self.groups[i].as_mut() {
                    g.priority = prio;
                }
            }
        }
    }

    // ----------------------------------------------------------------------------------------------
    // Caches used by the cycle

    /// Makes sure the static-filter result of a static class is current.
    pub(crate) fn ensure_static(&mut self, sid: StaticId) {
        let epoch = self.node_epoch;
        let Some(entry) = self.classes.statics.get(sid as usize) else {
            return;
        };
        if entry.epoch == epoch {
            return;
        }
        let mut feasible = vec![false; self.nodes.len()];
        for (i, n) in self.nodes.iter().enumerate() {
            if let Some(n) = n {
                feasible[i] = entry.spec.check(&n.view()).is_ok();
            }
        }
        if let Some(entry) = self.classes.statics.get_mut(sid as usize) {
            entry.feasible = feasible;
            entry.epoch = epoch;
        }
    }

    pub(crate) fn static_ok(&self, sid: StaticId, node: u32) -> bool {
        self.classes
            .statics
            .get(sid as usize)
            .and_then(|e| e.feasible.get(node as usize))
            .copied()
            .unwrap_or(false)
    }

    /// Makes sure the topology index for `key` is current.
    pub(crate) fn ensure_topology(&mut self, key: &str) {
        self.prepare();
        let epoch = self.node_epoch;
        if self.topology.get(key).is_some_and(|t| t.epoch == epoch) {
            return;
        }
        let mut domains: BTreeMap<String, Vec<u32>> = BTreeMap::new();
        for &id in &self.node_order {
            if let Some(v) = self.node(id).labels.get(key) {
                domains.entry(v.clone()).or_default().push(id);
            }
        }
        self.topology.insert(key.to_string(), TopologyIndex { epoch, domains });
    }

    // ----------------------------------------------------------------------------------------------
    // Simulation primitives (driven by the journal)

    pub(crate) fn sim_assume(&mut self, pod: u32, node: u32) {
        let req = match self.pods[pod as usize].as_mut() {
            Some(p) => {
                p.sim_node = Some(node);
                p.requests.clone()
            }
            None => return,
        };
        if let Some(n) = self.nodes[node as usize].as_mut() {
            n.add(&req, 1);
        }
    }

    pub(crate) fn sim_unassume(&mut self, pod: u32, node: u32) {
        let req = match self.pods[pod as usize].as_mut() {
            Some(p) => {
                p.sim_node = None;
                p.requests.clone()
            }
            None => return,
        };
        if let Some(n) = self.nodes[node as usize].as_mut() {
            n.add(&req, -1);
        }
    }

    pub(crate) fn sim_remove(&mut self, pod: u32, node: u32) {
        let req = match self.pods[pod as usize].as_mut() {
            Some(p) => {
                p.sim_removed = true;
                p.requests.clone()
            }
            None => return,
        };
        if let Some(n) = self.nodes[node as usize].as_mut() {
            n.add(&req, -1);
        }
    }

    pub(crate) fn sim_restore(&mut self, pod: u32, node: u32) {
        let req = match self.pods[pod as usize].as_mut() {
            Some(p) => {
                p.sim_removed = false;
                p.requests.clone()
            }
            None => return,
        };
        if let Some(n) = self.nodes[node as usize].as_mut() {
            n.add(&req, 1);
        }
    }
}

fn topology_key(
    topology: Option<&Vec<kwas_api::v1alpha3::TopologyConstraint>>,
    object: &str,
) -> Result<Option<String>, SnapshotError> {
    let Some(list) = topology else {
        return Ok(None);
    };
    if list.len() > 1 {
        return Err(invalid(
            object.to_string(),
            "spec.schedulingConstraints.topology",
            format!("Too many: {}: must have at most 1 items", list.len()),
        ));
    }
    match list.first() {
        Some(t) if t.key.is_empty() => Err(invalid(
            object.to_string(),
            "spec.schedulingConstraints.topology[0].key",
            "Required value",
        )),
        Some(t) => Ok(Some(t.key.clone())),
        None => Ok(None),
    }
}

#[cold]
fn unreachable_node() -> ! {
    panic!("internal error: stale node id in the scheduler snapshot")
}

#[cold]
fn unreachable_pod() -> ! {
    panic!("internal error: stale pod id in the scheduler snapshot")
}

#[cold]
fn unreachable_group() -> ! {
    panic!("internal error: stale group id in the scheduler snapshot")
}
