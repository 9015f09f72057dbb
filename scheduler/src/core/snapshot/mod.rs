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
//!
//! Layout: `arena` (the one slab nodes, pods and groups live in), `nodes`, `pods`, `groups`,
//! `priority` (PriorityClasses and resolution), `simulation` (what a cycle tries without committing:
//! simulated placements and removals, the static-filter and topology caches), `conversion` (reading
//! k8s-openapi objects, with field errors).

mod arena;
mod conversion;
pub(crate) mod dra;
mod groups;
mod nodes;
mod pods;
mod priority;
mod simulation;
mod volumes;
mod workloads;

use std::collections::{BTreeSet, HashMap};

use thiserror::Error;

use super::equivalence::ClassRegistry;
use super::filters::volumes::Storage;
use super::model::{GroupKey, PodKey, PodState};
use super::resources::ResourceNames;
use arena::Arena;
pub(crate) use groups::GroupInfo;
pub(crate) use nodes::NodeInfo;
pub(crate) use pods::PodInfo;
use priority::PriorityClassInfo;
pub(crate) use simulation::{DomainIndex, Eligible, Sim, TopologyIndex};

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

/// The cluster state one scheduler works on. See the module docs.
#[derive(Debug, Default)]
pub struct Snapshot {
    pub(crate) resources: ResourceNames,
    nodes: Arena<String, NodeInfo>,
    /// Nodes in name order (valid when `order_dirty` is false; see [`Snapshot::prepare`]).
    pub(crate) node_order: Vec<u32>,
    order_dirty: bool,
    /// Bumped when a node is added or removed or changes labels, taints or `unschedulable`.
    pub(crate) node_epoch: u64,
    pods: Arena<PodKey, PodInfo>,
    groups: Arena<GroupKey, GroupInfo>,
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
    /// PersistentVolumeClaims, PersistentVolumes, StorageClasses, CSINodes, namespace labels.
    pub(crate) storage: Storage,
    /// (label key, value) -> pods carrying it (any state), for selectors with an equality.
    pub(crate) pods_by_label: HashMap<(String, String), Vec<u32>>,
    /// Pods with inter-pod affinity terms (any state): the symmetric checks read their terms.
    pub(crate) affinity_pods: BTreeSet<u32>,
    /// Every topology key an inter-pod term has named (their domain indexes are kept).
    pub(crate) affinity_keys: BTreeSet<String>,
    /// One shared copy of each distinct dynamic spec (see `Snapshot::intern_dynamic`), and the size at
    /// which the copies no pod holds any more are dropped.
    dynamic_specs: std::collections::HashSet<std::sync::Arc<crate::core::filters::DynamicSpec>>,
    dynamic_specs_prune_at: usize,
    /// The cluster's default topology spread constraints (`None`: upstream's system defaults).
    pub(crate) default_spread: Option<Vec<crate::core::filters::pod_topology_spread::DefaultConstraint>>,
    /// `InterPodAffinityArgs`: (`hardPodAffinityWeight`, `ignorePreferredTermsOfExistingPods`).
    pub(crate) inter_pod_args: InterPodArgs,
    /// (namespace, Workload) -> its templates by name.
    pub(crate) workloads: HashMap<(String, String), HashMap<String, workloads::TemplateShape>>,
    /// DeviceClasses, ResourceSlices, ResourceClaims and PodGroups' claims.
    pub(crate) dra: crate::core::dra::DraState,
    /// ((device layout, node epoch), node id -> its node-local devices): `has_free_devices`' index.
    pub(crate) dra_node_devices: (Option<(u64, u64)>, Vec<Vec<u32>>),
    /// Topology key -> (node epoch, its domains), for spread constraints' PreFilter.
    pub(crate) spread_index: HashMap<String, (u64, std::sync::Arc<DomainIndex>)>,
    /// (static class, honor node affinity, honor taints) -> (node epoch, the nodes spread counts).
    pub(crate) spread_eligible: HashMap<(u32, bool, bool), (u64, std::sync::Arc<Eligible>)>,
    /// Namespace -> PodDisruptionBudgets: (selector, disruptions allowed).
    pub(crate) pdbs: HashMap<String, Vec<(String, crate::core::filters::pod_selector::PodSelector, i64)>>,
}

/// `InterPodAffinityArgs`: `hardPodAffinityWeight`, `ignorePreferredTermsOfExistingPods`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct InterPodArgs(pub i64, pub bool);

impl Default for InterPodArgs {
    fn default() -> Self {
        Self(1, false)
    }
}

impl Snapshot {
    /// An empty snapshot that schedules pending pods of every scheduler name.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `InterPodAffinityArgs`: the score weight of existing pods' required affinity terms towards
    /// the incoming pod (`hardPodAffinityWeight`, default 1) and whether existing pods' preferred terms
    /// are ignored (`ignorePreferredTermsOfExistingPods`, default false).
    pub fn set_inter_pod_affinity_args(
        &mut self,
        hard_pod_affinity_weight: i64,
        ignore_preferred_terms_of_existing_pods: bool,
    ) {
        self.inter_pod_args = InterPodArgs(hard_pod_affinity_weight, ignore_preferred_terms_of_existing_pods);
    }

    /// Restricts scheduling to pending pods whose `spec.schedulerName` (default `default-scheduler`) is
    /// one of `names`. Pods of other schedulers still count on their nodes.
    pub fn set_scheduler_names(&mut self, names: Vec<String>) {
        self.scheduler_names = Some(names);
    }

    /// Sets the cluster's default topology spread constraints (a profile's `defaultConstraints`); an
    /// empty list turns them off. Upstream's system defaults apply until this is called.
    pub fn set_default_spread_constraints(
        &mut self,
        constraints: Vec<crate::core::filters::pod_topology_spread::DefaultConstraint>,
    ) {
        self.default_spread = Some(constraints);
    }

    /// Sets `NodeResourcesFit`'s scored resources and weights (a profile's
    /// `scoringStrategy.resources`); `None` restores kwas' default (cpu and memory plus every extended
    /// resource the pod requests, weight 1 each).
    pub fn set_scoring_resources(&mut self, resources: Option<Vec<(String, i64)>>) {
        let resolved = resources.map(|list| {
            list.iter()
                .map(|(name, w)| (self.resources.intern(name), *w))
                .collect::<Vec<_>>()
        });
        self.classes.set_score_resources(resolved);
    }

    pub(crate) fn responsible_for(&self, scheduler_name: &str) -> bool {
        self.scheduler_names
            .as_ref()
            .is_none_or(|n| n.iter().any(|x| x == scheduler_name))
    }
}
