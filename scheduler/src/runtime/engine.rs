//! The engine: the runtime's decisions, without I/O.
//!
//! It owns the core's [`Snapshot`] and the [`SchedulingQueue`], takes informer events
//! ([`Engine::apply`]) and binding results ([`Engine::bind_finished`]), and for one root unit at a
//! time ([`Engine::schedule_one`]) runs the PreEnqueue check, the cycle and, when it may help,
//! preemption, returning the [`Action`]s to carry out. Informer events are applied between cycles,
//! so a cycle never sees a half-applied update.
//!
//! Choices where the KEPs leave room:
//!
//! - **Assumed pods** stay counted on their node from the cycle that placed them until the informer
//!   reports them bound (or deleted); a rejected binding forgets only that pod, which is retried with
//!   its unit after a backoff. A binding answered with a conflict (the pod is already bound or is being
//!   deleted) is left to the informer.
//! - **Waiting pods** (PreEnqueue) get `PodScheduled=False` with reason `SchedulingGated` and
//!   upstream's waiting message; unschedulable ones reason `Unschedulable`; pods of an invalid
//!   hierarchy and pods whose binding was rejected reason `SchedulerError`. `FailedScheduling` events
//!   are recorded when a pod's condition changes, not on every retry.
//! - **Delayed preemption** (KEP-4671, KEP-5710): victims get `DisruptionTarget` and are deleted; the
//!   preemptor's pods get `status.nominatedNodeName` and are *reserved* on those nodes in the snapshot
//!   (assumed, never bound) so no unit of lower priority takes the room while the victims terminate.
//!   The preemptor is not retried, and preempts nothing more, until every victim is gone (or
//!   `preemption_timeout` passes); then the reservation is dropped and the preemptor runs a normal
//!   cycle, which may pick any placement. A preemptor of higher priority may take a reservation: its
//!   holder loses it (and its nominations) instead of a pod being deleted.
//! - **Order**: priority, then units that already have placed pods (see [`super::scheduling_queue`]), then
//!   arrival.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Pod, PodCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use k8s_openapi::jiff::Timestamp;
use kwas_api::names::conditions::{
    COMPOSITE_POD_GROUP_INITIALLY_SCHEDULED, DISRUPTION_TARGET, POD_GROUP_INITIALLY_SCHEDULED, POD_SCHEDULED,
    REASON_PREEMPTION_BY_SCHEDULER, REASON_SCHEDULED, REASON_SCHEDULER_ERROR, REASON_UNSCHEDULABLE,
};
use kwas_api::names::events;
use tracing::{debug, info, warn};

use super::actions::{Action, EventRecord, GroupStatusUpdate, PodStatusUpdate, group_ref, pod_ref};
use super::conditions::{
    DesiredCondition, REASON_SCHEDULING_GATED, WAITING_FOR_PREEMPTION, group_condition_update, pod_condition_update,
};
use super::config::{BackoffConfig, RuntimeConfig};
use super::informers::{InformerEvent, Kind, Object};
use super::metrics::Metrics;
use super::scheduling_queue::{Failure, QueueDepth, QueueState, SchedulingQueue};
use crate::core::{
    CycleOutcome, GroupKey, GroupKind, PodKey, PodState, PreemptionVerdict, Readiness, Scheduler, SchedulerConfig,
    Snapshot, UnitKey, Verdict,
};

/// What the engine keeps of a pod besides the snapshot: what it needs to decide status writes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PodMeta {
    /// `metadata.uid`.
    pub uid: Option<String>,
    /// `metadata.resourceVersion`.
    pub resource_version: Option<String>,
    /// `spec.nodeName`.
    pub node_name: Option<String>,
    /// `spec.schedulingGroup.podGroupName`.
    pub group: Option<String>,
    /// `metadata.deletionTimestamp` is set.
    pub deleting: bool,
    /// The `PodScheduled` condition.
    pub pod_scheduled: Option<PodCondition>,
    /// `status.nominatedNodeName`.
    pub nominated_node_name: Option<String>,
    /// What scheduling depends on (generation, node, deletion, gates): a change that leaves it
    /// alone (a status write, say) does not touch the snapshot or wake the pod's unit.
    pub fingerprint: u64,
}

fn hash_of(v: impl std::hash::Hash) -> u64 {
    use std::hash::Hasher;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    v.hash(&mut h);
    h.finish()
}

impl PodMeta {
    fn from_pod(pod: &Pod) -> Self {
        let spec = pod.spec.as_ref();
        let status = pod.status.as_ref();
        Self {
            uid: pod.metadata.uid.clone(),
            resource_version: pod.metadata.resource_version.clone(),
            node_name: spec.and_then(|s| s.node_name.clone()).filter(|n| !n.is_empty()),
            group: spec
                .and_then(|s| s.scheduling_group.as_ref())
                .and_then(|g| g.pod_group_name.clone()),
            deleting: pod.metadata.deletion_timestamp.is_some(),
            pod_scheduled: status
                .and_then(|s| s.conditions.as_ref())
                .and_then(|c| c.iter().find(|c| c.type_ == POD_SCHEDULED).cloned()),
            nominated_node_name: status
                .and_then(|s| s.nominated_node_name.clone())
                .filter(|n| !n.is_empty()),
            fingerprint: hash_of((
                pod.metadata.generation,
                pod.metadata.deletion_timestamp.is_some(),
                spec.and_then(|s| s.node_name.as_deref()),
                spec.and_then(|s| s.scheduling_gates.as_ref()).map_or(0, Vec::len),
                spec.and_then(|s| s.priority),
                spec.and_then(|s| s.scheduler_name.as_deref()),
            )),
        }
    }
}

fn node_fingerprint(n: &k8s_openapi::api::core::v1::Node) -> u64 {
    let spec = n.spec.as_ref();
    let taints: Vec<(&str, Option<&str>, &str)> = spec
        .and_then(|s| s.taints.as_ref())
        .into_iter()
        .flatten()
        .map(|t| (t.key.as_str(), t.value.as_deref(), t.effect.as_str()))
        .collect();
    let status = n.status.as_ref();
    let alloc: Vec<(&String, &str)> = status
        .and_then(|s| s.allocatable.as_ref().or(s.capacity.as_ref()))
        .into_iter()
        .flatten()
        .map(|(k, q)| (k, q.0.as_str()))
        .collect();
    hash_of((&n.metadata.labels, taints, spec.and_then(|s| s.unschedulable), alloc))
}

/// What the engine keeps of a group besides the snapshot.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GroupMeta {
    /// `metadata.uid`.
    pub uid: Option<String>,
    /// `metadata.resourceVersion`.
    pub resource_version: Option<String>,
    /// `spec.parentCompositePodGroupName`.
    pub parent: Option<String>,
    /// `status.conditions`.
    pub conditions: Vec<Condition>,
    /// `metadata.generation` (spec changes bump it; status writes do not).
    pub generation: Option<i64>,
}

/// A preemption whose victims are terminating.
#[derive(Debug, Clone)]
struct Ongoing {
    victims: HashSet<PodKey>,
    reserved: Vec<PodKey>,
    deadline: Instant,
}

/// The result of a binding, as the engine needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BindResult {
    /// Bound.
    Bound,
    /// The API server said the pod is already bound or being deleted (409): the informer will tell.
    Conflict(String),
    /// Rejected for another reason.
    Failed(String),
}

/// Settings of the engine (from [`RuntimeConfig`]).
#[derive(Debug, Clone)]
pub struct EngineSettings {
    /// Scheduler names answered for.
    pub scheduler_names: Vec<String>,
    /// The name in events and messages.
    pub primary_name: String,
    /// The algorithm.
    pub core: SchedulerConfig,
    /// Retry timing.
    pub backoff: BackoffConfig,
    /// How long reservations of a preemptor last.
    pub preemption_timeout: Duration,
    /// How long a unit waits in PreEnqueue before its pods get the waiting message.
    pub waiting_message_delay: Duration,
}

impl From<&RuntimeConfig> for EngineSettings {
    fn from(c: &RuntimeConfig) -> Self {
        Self {
            scheduler_names: c.scheduler_names.clone(),
            primary_name: c.primary_name().to_string(),
            core: c.core,
            backoff: c.backoff,
            preemption_timeout: c.preemption_timeout,
            waiting_message_delay: c.waiting_message_delay,
        }
    }
}

/// The engine. See the module docs.
#[derive(Debug)]
pub struct Engine {
    snap: Snapshot,
    scheduler: Scheduler,
    queue: SchedulingQueue,
    settings: EngineSettings,
    metrics: Metrics,
    pods: HashMap<PodKey, PodMeta>,
    groups: HashMap<GroupKey, GroupMeta>,
    priority_classes: HashSet<String>,
    /// Node name -> fingerprint of what scheduling reads from it.
    nodes: HashMap<String, u64>,
    /// Pods whose group (or an ancestor) is not observed, by namespace.
    orphans: HashMap<String, BTreeSet<PodKey>>,
    /// Bindings in flight: pod -> its unit.
    binding: HashMap<PodKey, UnitKey>,
    ongoing: HashMap<UnitKey, Ongoing>,
    victim_of: HashMap<PodKey, UnitKey>,
    reserved_by: HashMap<PodKey, UnitKey>,
    relist: HashMap<Kind, HashSet<String>>,
    /// Units waiting in PreEnqueue: since when, and whether their pods got the waiting message
    /// (after `waiting_message_delay`).
    gated: HashMap<UnitKey, (Instant, bool)>,
    /// When gated units' messages fall due (units whose pods have not got it yet).
    gated_due: BTreeSet<(Instant, UnitKey)>,
    /// When `gated` was last pruned of units that left the queue.
    gated_pruned: Option<Instant>,
    synced: HashSet<Kind>,
    capacity_changed: bool,
    /// Actions decided while applying informer events, for [`Engine::take_deferred`].
    deferred: Vec<Action>,
}

fn ns_name(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> (String, String) {
    (
        meta.namespace.clone().unwrap_or_else(|| "default".to_string()),
        meta.name.clone().unwrap_or_default(),
    )
}

fn initially_scheduled_type(kind: GroupKind) -> &'static str {
    match kind {
        GroupKind::PodGroup => POD_GROUP_INITIALLY_SCHEDULED,
        GroupKind::CompositePodGroup => COMPOSITE_POD_GROUP_INITIALLY_SCHEDULED,
    }
}

impl Engine {
    /// An engine with an empty snapshot.
    pub fn new(settings: EngineSettings, metrics: Metrics) -> Self {
        let mut snap = Snapshot::new();
        snap.set_scheduler_names(settings.scheduler_names.clone());
        Self {
            snap,
            scheduler: Scheduler::new(settings.core),
            queue: SchedulingQueue::new(settings.backoff),
            settings,
            metrics,
            pods: HashMap::new(),
            groups: HashMap::new(),
            priority_classes: HashSet::new(),
            nodes: HashMap::new(),
            orphans: HashMap::new(),
            binding: HashMap::new(),
            ongoing: HashMap::new(),
            victim_of: HashMap::new(),
            reserved_by: HashMap::new(),
            relist: HashMap::new(),
            gated: HashMap::new(),
            gated_due: BTreeSet::new(),
            gated_pruned: None,
            synced: HashSet::new(),
            capacity_changed: false,
            deferred: Vec::new(),
        }
    }

    /// The snapshot (read-only).
    pub fn snapshot(&self) -> &Snapshot {
        &self.snap
    }

    /// The queue (read-only).
    pub fn queue(&self) -> &SchedulingQueue {
        &self.queue
    }

    /// Units per queue state.
    pub fn queue_depth(&self) -> QueueDepth {
        self.queue.depth()
    }

    /// True once every kind has been listed once.
    pub fn synced(&self) -> bool {
        Kind::ALL.iter().all(|k| self.synced.contains(k))
    }

    /// Bindings in flight.
    pub fn bindings_in_flight(&self) -> usize {
        self.binding.len()
    }

    /// The units with a preemption in progress.
    pub fn preempting(&self) -> Vec<UnitKey> {
        let mut v: Vec<UnitKey> = self.ongoing.keys().cloned().collect();
        v.sort();
        v
    }

    /// What the engine knows of a pod.
    pub fn pod_meta(&self, pod: &PodKey) -> Option<&PodMeta> {
        self.pods.get(pod)
    }

    /// What the engine knows of a group.
    pub fn group_meta(&self, group: &GroupKey) -> Option<&GroupMeta> {
        self.groups.get(group)
    }

    // ---------------------------------------------------------------------------------------------
    // Informer events

    /// Applies one informer event to the snapshot and wakes the units it concerns. Call
    /// [`Engine::end_of_batch`] after a batch.
    pub fn apply(&mut self, event: InformerEvent, now: Instant) {
        match event {
            InformerEvent::Apply(o) => self.upsert(o, now),
            InformerEvent::Delete(o) => self.delete(o, now),
            InformerEvent::InitStart(kind) => {
                self.relist.insert(kind, HashSet::new());
            }
            InformerEvent::InitApply(o) => {
                let key = object_key(&o);
                let kind = o.kind();
                self.relist.entry(kind).or_default().insert(key);
                self.upsert(o, now);
            }
            InformerEvent::InitDone(kind) => {
                let seen = self.relist.remove(&kind).unwrap_or_default();
                self.remove_unlisted(kind, &seen, now);
                self.synced.insert(kind);
            }
            InformerEvent::Error(kind, e) => {
                self.metrics.api_error("watch");
                warn!(kind = kind.as_str(), error = %e, "watch failed; retrying");
            }
        }
    }

    /// Wakes unschedulable units after a batch that freed or added capacity, and preemptors whose
    /// victims are gone or whose reservation timed out.
    pub fn end_of_batch(&mut self, now: Instant) {
        if self.capacity_changed {
            self.capacity_changed = false;
            self.queue.move_all_unschedulable(now);
        }
        let due: Vec<UnitKey> = self
            .ongoing
            .iter()
            .filter(|(_, o)| o.victims.is_empty() || o.deadline <= now)
            .map(|(u, _)| u.clone())
            .collect();
        for u in due {
            if self.queue.state(&u).is_some() {
                self.queue.activate_now(&u, now);
            } else {
                // The preemptor is gone (deleted, or nothing left to place).
                self.release(&u);
            }
        }
        // Units gated long enough for their pods to get the waiting message.
        while let Some((t, _)) = self.gated_due.first() {
            if *t > now {
                break;
            }
            if let Some((_, u)) = self.gated_due.pop_first()
                && self.queue.state(&u) == Some(QueueState::Gated)
                && self.gated.get(&u).is_some_and(|(_, written)| !*written)
            {
                self.touch(&u, now);
            }
        }
        if self
            .gated_pruned
            .is_none_or(|t| now.duration_since(t) >= Duration::from_secs(10))
        {
            let queue = &self.queue;
            self.gated.retain(|u, _| queue.state(u).is_some());
            self.gated_pruned = Some(now);
        }
        self.metrics.queue_depth(self.queue.depth());
    }

    /// Actions decided while applying informer events (a condition on a pod the snapshot rejected).
    pub fn take_deferred(&mut self, out: &mut Vec<Action>) {
        out.append(&mut self.deferred);
    }

    /// When the engine next has something to do without an event.
    pub fn next_wakeup(&self) -> Option<Instant> {
        let messages = self.gated_due.first().map(|(t, _)| *t);
        let deadline = self.ongoing.values().map(|o| o.deadline).chain(messages).min();
        match (self.queue.next_wakeup(), deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn remove_unlisted(&mut self, kind: Kind, seen: &HashSet<String>, now: Instant) {
        match kind {
            Kind::Node => {
                let gone: Vec<String> = self
                    .snap
                    .node_names()
                    .filter(|n| !seen.contains(*n))
                    .map(str::to_string)
                    .collect();
                for n in gone {
                    self.nodes.remove(&n);
                    self.snap.remove_node(&n);
                }
            }
            Kind::PriorityClass => {
                let gone: Vec<String> = self
                    .priority_classes
                    .iter()
                    .filter(|n| !seen.contains(*n))
                    .cloned()
                    .collect();
                for n in gone {
                    self.priority_classes.remove(&n);
                    self.snap.remove_priority_class(&n);
                    self.capacity_changed = true;
                }
            }
            Kind::Pod => {
                let gone: Vec<PodKey> = self
                    .pods
                    .keys()
                    .filter(|k| !seen.contains(&format!("{}/{}", k.namespace, k.name)))
                    .cloned()
                    .collect();
                for k in gone {
                    self.pod_gone(&k, now);
                }
                // Finished gang members deleted while the watch was down.
                let finished: Vec<PodKey> = self
                    .snap
                    .succeeded_pods()
                    .filter(|k| !seen.contains(&format!("{}/{}", k.namespace, k.name)))
                    .cloned()
                    .collect();
                for k in finished {
                    self.snap.remove_pod(&k);
                }
            }
            Kind::PodGroup | Kind::CompositePodGroup => {
                let want = if kind == Kind::PodGroup {
                    GroupKind::PodGroup
                } else {
                    GroupKind::CompositePodGroup
                };
                let gone: Vec<GroupKey> = self
                    .groups
                    .keys()
                    .filter(|k| k.kind == want && !seen.contains(&format!("{}/{}", k.namespace, k.name)))
                    .cloned()
                    .collect();
                for k in gone {
                    self.group_gone(&k, now);
                }
            }
        }
    }

    fn upsert(&mut self, o: Object, now: Instant) {
        match o {
            Object::Node(n) => {
                let name = n.metadata.name.clone().unwrap_or_default();
                let fp = node_fingerprint(&n);
                if self.nodes.get(&name) == Some(&fp) {
                    return;
                }
                match self.snap.upsert_node(&n) {
                    Ok(()) => {
                        self.nodes.insert(name, fp);
                        self.capacity_changed = true;
                    }
                    Err(e) => {
                        self.metrics.invalid_object("Node");
                        warn!(error = %e, "node not taken into the snapshot");
                    }
                }
            }
            Object::PriorityClass(pc) => {
                self.priority_classes
                    .insert(pc.metadata.name.clone().unwrap_or_default());
                self.snap.upsert_priority_class(&pc);
                self.capacity_changed = true;
            }
            Object::Pod(p) => self.upsert_pod(&p, now),
            Object::PodGroup(pg) => {
                let (ns, name) = ns_name(&pg.metadata);
                let key = GroupKey::pod_group(ns, name);
                let meta = GroupMeta {
                    uid: pg.metadata.uid.clone(),
                    resource_version: pg.metadata.resource_version.clone(),
                    parent: pg
                        .spec
                        .parent_composite_pod_group_name
                        .clone()
                        .filter(|s| !s.is_empty()),
                    conditions: pg
                        .status
                        .as_ref()
                        .and_then(|s| s.conditions.clone())
                        .unwrap_or_default(),
                    generation: pg.metadata.generation,
                };
                if self.unchanged_group(&key, &meta) {
                    self.groups.insert(key, meta);
                    return;
                }
                let result = self.snap.upsert_pod_group(&pg);
                self.group_changed(key, meta, result.map_err(|e| e.to_string()), now);
            }
            Object::CompositePodGroup(cpg) => {
                let (ns, name) = ns_name(&cpg.metadata);
                let key = GroupKey::composite(ns, name);
                let meta = GroupMeta {
                    uid: cpg.metadata.uid.clone(),
                    resource_version: cpg.metadata.resource_version.clone(),
                    parent: cpg
                        .spec
                        .parent_composite_pod_group_name
                        .clone()
                        .filter(|s| !s.is_empty()),
                    conditions: cpg
                        .status
                        .as_ref()
                        .and_then(|s| s.conditions.clone())
                        .unwrap_or_default(),
                    generation: cpg.metadata.generation,
                };
                if self.unchanged_group(&key, &meta) {
                    self.groups.insert(key, meta);
                    return;
                }
                let result = self.snap.upsert_composite_pod_group(&cpg);
                self.group_changed(key, meta, result.map_err(|e| e.to_string()), now);
            }
        }
    }

    fn delete(&mut self, o: Object, now: Instant) {
        match o {
            Object::Node(n) => {
                let name = n.metadata.name.clone().unwrap_or_default();
                self.nodes.remove(&name);
                self.snap.remove_node(&name);
            }
            Object::PriorityClass(pc) => {
                let name = pc.metadata.name.clone().unwrap_or_default();
                self.priority_classes.remove(&name);
                self.snap.remove_priority_class(&name);
                self.capacity_changed = true;
            }
            Object::Pod(p) => {
                let (ns, name) = ns_name(&p.metadata);
                self.pod_gone(&PodKey::new(ns, name), now);
            }
            Object::PodGroup(pg) => {
                let (ns, name) = ns_name(&pg.metadata);
                self.group_gone(&GroupKey::pod_group(ns, name), now);
            }
            Object::CompositePodGroup(cpg) => {
                let (ns, name) = ns_name(&cpg.metadata);
                self.group_gone(&GroupKey::composite(ns, name), now);
            }
        }
    }

    fn upsert_pod(&mut self, pod: &Pod, now: Instant) {
        let (ns, name) = ns_name(&pod.metadata);
        let key = PodKey::new(ns, name);
        let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
        if matches!(phase, Some("Succeeded") | Some("Failed")) {
            // The snapshot drops the pod and remembers a Succeeded gang member (see `Snapshot`).
            let placed = matches!(
                self.snap.pod_state(&key),
                Some((PodState::Bound | PodState::Assumed, _))
            );
            let _ = self.snap.upsert_pod(pod);
            self.pod_left(&key, placed, now);
            return;
        }
        let meta = PodMeta::from_pod(pod);
        if self.pods.get(&key).is_some_and(|m| m.fingerprint == meta.fingerprint) {
            // A status change (often our own write): nothing scheduling reads.
            self.pods.insert(key, meta);
            return;
        }
        if let Err(e) = self.snap.upsert_pod(pod) {
            self.metrics.invalid_object("Pod");
            warn!(pod = %key, error = %e, "pod not taken into the snapshot");
            // A pending pod of ours learns why it is never scheduled.
            let spec = pod.spec.as_ref();
            let scheduler = spec
                .and_then(|s| s.scheduler_name.as_deref())
                .unwrap_or(kwas_api::names::DEFAULT_SCHEDULER_NAME);
            let pending = spec.and_then(|s| s.node_name.as_ref()).is_none_or(|n| n.is_empty());
            if pending && self.settings.scheduler_names.iter().any(|n| n == scheduler) {
                let known = self.pods.contains_key(&key);
                self.pods.insert(key.clone(), meta);
                let mut out = std::mem::take(&mut self.deferred);
                self.pod_condition(&key, REASON_SCHEDULER_ERROR, &e.to_string(), true, &mut out);
                self.deferred = out;
                if !known {
                    // Not in the snapshot: forget it again so a fixed version is taken in full.
                    if let Some(m) = self.pods.get_mut(&key) {
                        m.fingerprint = 0;
                    }
                }
            }
            return;
        }
        self.pods.insert(key.clone(), meta);
        self.route(&key, now);
    }

    /// A pod was deleted.
    fn pod_gone(&mut self, key: &PodKey, now: Instant) {
        let placed = matches!(self.snap.pod_state(key), Some((PodState::Bound | PodState::Assumed, _)));
        self.snap.remove_pod(key);
        self.pod_left(key, placed, now);
    }

    /// A pod left the snapshot (deleted or finished): requeue its unit, release what it held.
    fn pod_left(&mut self, key: &PodKey, placed: bool, now: Instant) {
        if let Some(meta) = self.pods.remove(key)
            && let Some(g) = meta.group
            && let Ok(unit) = self.snap.root_unit(&GroupKey::pod_group(key.namespace.clone(), g))
            && self.queue.state(&unit).is_some()
        {
            // The unit's readiness may have changed (fewer pods).
            self.touch(&unit, now);
        }
        if let Some(set) = self.orphans.get_mut(&key.namespace) {
            set.remove(key);
        }
        self.queue.remove(&UnitKey::Pod(key.clone()));
        if placed {
            self.capacity_changed = true;
        }
        if let Some(unit) = self.victim_of.remove(key)
            && let Some(o) = self.ongoing.get_mut(&unit)
        {
            o.victims.remove(key);
        }
        self.reserved_by.remove(key);
    }

    /// True when `meta` is the group already known with the same spec (a status write).
    fn unchanged_group(&self, key: &GroupKey, meta: &GroupMeta) -> bool {
        meta.generation.is_some()
            && self
                .groups
                .get(key)
                .is_some_and(|m| m.generation == meta.generation && self.snap.has_group(key))
    }

    fn group_changed(&mut self, key: GroupKey, meta: GroupMeta, result: Result<(), String>, now: Instant) {
        if let Err(e) = result {
            self.metrics.invalid_object(key.kind.as_str());
            warn!(group = %key, error = %e, "group not taken into the snapshot");
            return;
        }
        let is_new = !self.groups.contains_key(&key);
        self.groups.insert(key.clone(), meta);
        if let Ok(unit) = self.snap.root_unit(&key) {
            self.touch(&unit, now);
        }
        if is_new {
            self.reroute_orphans(&key.namespace, now);
        }
    }

    fn group_gone(&mut self, key: &GroupKey, now: Instant) {
        let root = self.snap.root_unit(key).ok();
        // Pending pods below the group lose their unit: they wait for the group again.
        let mut pods: Vec<PodKey> = Vec::new();
        for g in self.snap.hierarchy_members(key) {
            if g.kind == GroupKind::PodGroup {
                pods.extend(self.snap.unit_summary(&UnitKey::Group(g)).pending);
            }
        }
        self.snap.remove_group(key);
        self.groups.remove(key);
        if let Some(u) = root {
            self.queue.remove(&u);
            if let UnitKey::Group(g) = &u
                && self.snap.has_group(g)
                && let Ok(unit) = self.snap.root_unit(g)
            {
                self.touch(&unit, now);
            }
        }
        for p in pods {
            self.route(&p, now);
        }
    }

    fn reroute_orphans(&mut self, namespace: &str, now: Instant) {
        let Some(set) = self.orphans.get(namespace) else {
            return;
        };
        let pods: Vec<PodKey> = set.iter().cloned().collect();
        for p in pods {
            self.route(&p, now);
        }
    }

    /// Puts a pending pod's unit in the queue (or the pod itself, gated, while its hierarchy is not
    /// observed).
    fn route(&mut self, pod: &PodKey, now: Instant) {
        let pending = !self.snap.unit_summary(&UnitKey::Pod(pod.clone())).pending.is_empty();
        let has_group = self.pods.get(pod).is_some_and(|m| m.group.is_some());
        if !pending {
            if let Some(set) = self.orphans.get_mut(&pod.namespace) {
                set.remove(pod);
            }
            self.queue.remove(&UnitKey::Pod(pod.clone()));
            return;
        }
        if !has_group {
            self.touch(&UnitKey::Pod(pod.clone()), now);
            return;
        }
        match self.snap.unit_of(pod) {
            Ok(unit) => {
                if let Some(set) = self.orphans.get_mut(&pod.namespace) {
                    set.remove(pod);
                }
                self.queue.remove(&UnitKey::Pod(pod.clone()));
                self.touch(&unit, now);
            }
            Err(_) => {
                self.orphans
                    .entry(pod.namespace.clone())
                    .or_default()
                    .insert(pod.clone());
                self.touch(&UnitKey::Pod(pod.clone()), now);
            }
        }
    }

    fn touch(&mut self, unit: &UnitKey, now: Instant) {
        let s = self.snap.unit_summary(unit);
        self.queue.touch(unit, s.priority, s.placed > 0, now);
    }

    // ---------------------------------------------------------------------------------------------
    // Leadership

    /// This instance stops scheduling: preemptions in progress drop their reservations (the next
    /// leader decides anew). Queue and snapshot stay warm.
    pub fn step_down(&mut self) {
        let units: Vec<UnitKey> = self.ongoing.keys().cloned().collect();
        for u in units {
            self.release(&u);
        }
    }

    fn release(&mut self, unit: &UnitKey) {
        let Some(o) = self.ongoing.remove(unit) else {
            return;
        };
        for p in &o.reserved {
            self.reserved_by.remove(p);
            if matches!(self.snap.pod_state(p), Some((PodState::Assumed, _))) {
                let _ = self.snap.forget(p);
            }
        }
        for v in &o.victims {
            self.victim_of.remove(v);
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Binding results

    /// A binding finished.
    pub fn bind_finished(&mut self, pod: &PodKey, node: &str, result: BindResult, now: Instant, out: &mut Vec<Action>) {
        let unit = self.binding.remove(pod);
        let uid = self.pods.get(pod).and_then(|m| m.uid.clone());
        match result {
            BindResult::Bound => {
                self.metrics.pod_scheduled();
                out.push(Action::Event(EventRecord {
                    regarding: pod_ref(pod, uid.as_deref()),
                    related: None,
                    warning: false,
                    reason: events::SCHEDULED.into(),
                    action: "Binding".into(),
                    note: format!("Successfully assigned {}/{} to {node}", pod.namespace, pod.name),
                }));
            }
            BindResult::Conflict(e) => {
                debug!(pod = %pod, error = %e, "binding conflict; waiting for the informer");
            }
            BindResult::Failed(e) => {
                self.metrics.binding_failure();
                warn!(pod = %pod, node, error = %e, "binding rejected");
                if matches!(self.snap.pod_state(pod), Some((PodState::Assumed, _))) {
                    let _ = self.snap.forget(pod);
                }
                let message = format!("Binding rejected: {e}");
                self.pod_condition(pod, REASON_SCHEDULER_ERROR, &message, true, out);
                if let Some(unit) = unit {
                    if self.queue.state(&unit).is_none() {
                        self.touch(&unit, now);
                    }
                    self.queue.failed(&unit, Failure::Error, now);
                }
            }
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Scheduling

    /// Pops one unit and handles it. Returns false when no unit is ready.
    pub fn schedule_one(&mut self, now: Instant, out: &mut Vec<Action>) -> bool {
        let Some(unit) = self.queue.pop(now) else {
            return false;
        };
        if let Some(o) = self.ongoing.get(&unit) {
            if !o.victims.is_empty() && o.deadline > now {
                self.queue.park(&unit, now);
                return true;
            }
            self.release(&unit);
        }
        // A pod of a group whose hierarchy was not observed yet.
        if let UnitKey::Pod(p) = &unit
            && self.pods.get(p).is_some_and(|m| m.group.is_some())
        {
            match self.snap.unit_of(p) {
                Ok(root) => {
                    self.queue.remove(&unit);
                    if let Some(set) = self.orphans.get_mut(&p.namespace) {
                        set.remove(p);
                    }
                    self.touch(&root, now);
                }
                Err(Readiness::Invalid(e)) => {
                    let group = self.pods.get(p).and_then(|m| m.group.clone()).unwrap_or_default();
                    let groups = self
                        .snap
                        .hierarchy_members(&GroupKey::pod_group(p.namespace.clone(), group));
                    self.invalid(&unit, e.reason(), &e.to_string(), &groups, vec![p.clone()], now, out);
                }
                Err(Readiness::Waiting(m)) => self.gate(&unit, &m, vec![p.clone()], now, out),
                Err(_) => self.queue.remove(&unit),
            }
            return true;
        }
        match self.snap.readiness(&unit) {
            Readiness::NothingPending => self.queue.remove(&unit),
            Readiness::Waiting(m) => {
                let pending = self.snap.unit_summary(&unit).pending;
                if pending.is_empty() {
                    self.queue.remove(&unit);
                } else {
                    self.gate(&unit, &m, pending, now, out);
                }
            }
            Readiness::Invalid(e) => {
                let groups = match &unit {
                    UnitKey::Group(g) => self.snap.hierarchy_members(g),
                    UnitKey::Pod(_) => Vec::new(),
                };
                let pending = self.snap.unit_summary(&unit).pending;
                self.invalid(&unit, e.reason(), &e.to_string(), &groups, pending, now, out);
            }
            Readiness::Ready => self.cycle(&unit, now, out),
        }
        true
    }

    fn gate(&mut self, unit: &UnitKey, message: &str, pods: Vec<PodKey>, now: Instant, out: &mut Vec<Action>) {
        debug!(unit = %unit, message, "unit waits in PreEnqueue");
        self.queue.gate(unit, now);
        let delay = self.settings.waiting_message_delay;
        let entry = self.gated.entry(unit.clone()).or_insert_with(|| {
            self.gated_due.insert((now + delay, unit.clone()));
            (now, false)
        });
        if !entry.1 && now.duration_since(entry.0) < delay {
            return;
        }
        entry.1 = true;
        for p in pods {
            self.pod_condition(&p, REASON_SCHEDULING_GATED, message, false, out);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn invalid(
        &mut self,
        unit: &UnitKey,
        reason: &str,
        message: &str,
        groups: &[GroupKey],
        pods: Vec<PodKey>,
        now: Instant,
        out: &mut Vec<Action>,
    ) {
        warn!(unit = %unit, reason, message, "invalid group hierarchy");
        for g in groups {
            self.group_condition(g, initially_scheduled_type(g.kind), false, reason, message, out);
        }
        for p in pods {
            self.pod_condition(&p, REASON_SCHEDULER_ERROR, message, true, out);
        }
        self.queue.failed(unit, Failure::Unschedulable, now);
    }

    fn cycle(&mut self, unit: &UnitKey, now: Instant, out: &mut Vec<Action>) {
        self.gated.remove(unit);
        let is_group = matches!(unit, UnitKey::Group(_));
        let started = Instant::now();
        let outcome = self.scheduler.schedule(&mut self.snap, unit);
        let result = match &outcome.verdict {
            Verdict::Scheduled => "scheduled",
            Verdict::Unschedulable { .. } => "unschedulable",
            Verdict::Invalid { .. } | Verdict::NotReady { .. } => "error",
        };
        self.metrics.attempt(is_group, result, started.elapsed().as_secs_f64());
        debug!(
            unit = %unit,
            result,
            assignments = outcome.assignments.len(),
            pods_tried = outcome.stats.pods_tried,
            "scheduling cycle"
        );
        match outcome.verdict.clone() {
            Verdict::Scheduled => self.scheduled(unit, &outcome, now, out),
            Verdict::Unschedulable { .. } => self.unschedulable(unit, &outcome, now, out),
            Verdict::Invalid { reason, message } => {
                let groups: Vec<GroupKey> = outcome.groups.iter().map(|g| g.group.clone()).collect();
                let pending = self.snap.unit_summary(unit).pending;
                self.invalid(unit, &reason, &message, &groups, pending, now, out);
            }
            Verdict::NotReady { message } => {
                let pending = self.snap.unit_summary(unit).pending;
                if pending.is_empty() {
                    self.queue.remove(unit);
                } else {
                    self.gate(unit, &message, pending, now, out);
                }
            }
        }
    }

    fn scheduled(&mut self, unit: &UnitKey, outcome: &CycleOutcome, now: Instant, out: &mut Vec<Action>) {
        for a in &outcome.assignments {
            if let Err(e) = self.snap.assume(&a.pod, &a.node) {
                warn!(pod = %a.pod, node = %a.node, error = %e, "cannot assume the placement");
                continue;
            }
            self.binding.insert(a.pod.clone(), unit.clone());
            out.push(Action::Bind {
                pod: a.pod.clone(),
                uid: self.pods.get(&a.pod).and_then(|m| m.uid.clone()),
                node: a.node.clone(),
            });
        }
        for g in &outcome.groups {
            let ty = initially_scheduled_type(g.group.kind);
            if g.satisfied {
                self.group_condition(&g.group, ty, true, REASON_SCHEDULED, &g.message, out);
            } else if g.code.is_some_and(|c| c != crate::core::Code::Success) {
                self.group_condition(&g.group, ty, false, REASON_UNSCHEDULABLE, &g.message, out);
            }
        }
        for p in &outcome.unschedulable_pods {
            self.pod_condition(&p.pod, REASON_UNSCHEDULABLE, &p.message, true, out);
        }
        let mut preempting = false;
        if outcome.preemption_may_help {
            preempting = self.preempt(unit, now, out);
        }
        if preempting {
            return;
        }
        if outcome.unschedulable_pods.is_empty() {
            self.queue.done(unit);
        } else {
            self.queue.failed(unit, Failure::Unschedulable, now);
        }
    }

    fn unschedulable(&mut self, unit: &UnitKey, outcome: &CycleOutcome, now: Instant, out: &mut Vec<Action>) {
        for g in &outcome.groups {
            let ty = initially_scheduled_type(g.group.kind);
            self.group_condition(&g.group, ty, false, REASON_UNSCHEDULABLE, &g.message, out);
        }
        for p in &outcome.unschedulable_pods {
            self.pod_condition(&p.pod, REASON_UNSCHEDULABLE, &p.message, true, out);
        }
        let code = match &outcome.verdict {
            Verdict::Unschedulable { code, .. } => Some(*code),
            _ => None,
        };
        let preempting = outcome.preemption_may_help
            && code == Some(crate::core::Code::Unschedulable)
            && self.preempt(unit, now, out);
        if !preempting {
            // KEP-4671 failure handling: nominations of a failed attempt are cleared.
            for p in self.snap.unit_summary(unit).pending {
                if self.pods.get(&p).is_some_and(|m| m.nominated_node_name.is_some()) {
                    self.nominate(&p, None, out);
                }
            }
            self.queue.failed(unit, Failure::Unschedulable, now);
        }
    }

    /// Runs preemption for `unit`; on success actuates it and parks the unit. Returns whether it did.
    fn preempt(&mut self, unit: &UnitKey, now: Instant, out: &mut Vec<Action>) -> bool {
        let p = self.scheduler.preempt(&mut self.snap, unit);
        let result = match p.verdict {
            PreemptionVerdict::Preempt => "preempt",
            PreemptionVerdict::NotNeeded => "not_needed",
            PreemptionVerdict::NotAllowed => "not_allowed",
            PreemptionVerdict::NotHelpful => "not_helpful",
            PreemptionVerdict::NotReady => "not_ready",
        };
        self.metrics.preemption_attempt(result);
        if p.verdict != PreemptionVerdict::Preempt {
            debug!(unit = %unit, result, message = %p.message, "no preemption");
            return false;
        }
        info!(unit = %unit, victims = p.victims.len(), message = %p.message, "preempting");
        let (preemptor_kind, preemptor_ref, preemptor_name) = match unit {
            UnitKey::Group(g) => (
                "podgroup",
                group_ref(g, self.groups.get(g).and_then(|m| m.uid.as_deref())),
                format!("{}/{}", g.namespace, g.name),
            ),
            UnitKey::Pod(k) => {
                let uid = self.pods.get(k).and_then(|m| m.uid.clone());
                (
                    "pod",
                    pod_ref(k, uid.as_deref()),
                    uid.unwrap_or_else(|| format!("{}/{}", k.namespace, k.name)),
                )
            }
        };
        let disruption = format!(
            "{}: preempting to accommodate a higher priority {preemptor_kind}",
            self.settings.primary_name
        );
        let mut victims = HashSet::new();
        let mut cancelled: Vec<UnitKey> = Vec::new();
        for v in &p.victims {
            if let Some(holder) = self.reserved_by.get(&v.pod) {
                // A reservation of a lower-priority preemptor: it loses the reservation instead.
                if !cancelled.contains(holder) {
                    cancelled.push(holder.clone());
                }
                continue;
            }
            victims.insert(v.pod.clone());
            let uid = self.pods.get(&v.pod).and_then(|m| m.uid.clone());
            out.push(Action::Evict {
                pod: v.pod.clone(),
                uid: uid.clone(),
                condition: DesiredCondition::new(DISRUPTION_TARGET, true, REASON_PREEMPTION_BY_SCHEDULER, &disruption),
                event: EventRecord {
                    regarding: pod_ref(&v.pod, uid.as_deref()),
                    related: Some(preemptor_ref.clone()),
                    warning: false,
                    reason: events::PREEMPTED.into(),
                    action: "Preempting".into(),
                    note: format!("Preempted by {preemptor_kind} {preemptor_name} on node {}", v.node),
                },
            });
        }
        for holder in cancelled {
            let pods = self
                .ongoing
                .get(&holder)
                .map(|o| o.reserved.clone())
                .unwrap_or_default();
            self.release(&holder);
            for pod in pods {
                self.nominate(&pod, None, out);
            }
            self.queue.activate_now(&holder, now);
        }
        self.metrics.preemption_victims(p.victims.len());
        for g in &p.victim_groups {
            self.group_condition(
                g,
                DISRUPTION_TARGET,
                true,
                REASON_PREEMPTION_BY_SCHEDULER,
                &disruption,
                out,
            );
        }
        // Reserve the nominated nodes and tell the pods.
        let mut reserved = Vec::new();
        for a in &p.nominations {
            if self.snap.assume(&a.pod, &a.node).is_ok() {
                reserved.push(a.pod.clone());
                self.reserved_by.insert(a.pod.clone(), unit.clone());
            }
            self.nominate(&a.pod, Some(a.node.clone()), out);
        }
        if let UnitKey::Group(root) = unit {
            for g in self.snap.hierarchy_members(root) {
                let ty = initially_scheduled_type(g.kind);
                self.group_condition(&g, ty, false, REASON_UNSCHEDULABLE, WAITING_FOR_PREEMPTION, out);
            }
        }
        for v in &victims {
            self.victim_of.insert(v.clone(), unit.clone());
        }
        self.ongoing.insert(
            unit.clone(),
            Ongoing {
                victims,
                reserved,
                deadline: now + self.settings.preemption_timeout,
            },
        );
        self.queue.park(unit, now);
        true
    }

    // ---------------------------------------------------------------------------------------------
    // Status decisions

    /// `PodScheduled=False` with `reason` on a pending pod, unless it already says so. With `event`, a
    /// `FailedScheduling` warning goes with a changed condition.
    fn pod_condition(&mut self, pod: &PodKey, reason: &str, message: &str, event: bool, out: &mut Vec<Action>) {
        let Some(meta) = self.pods.get_mut(pod) else {
            return;
        };
        if meta.node_name.is_some() || meta.deleting {
            return;
        }
        let desired = DesiredCondition::new(POD_SCHEDULED, false, reason, message);
        let Some(prepared) = pod_condition_update(meta.pod_scheduled.as_ref(), &desired, Timestamp::now()) else {
            return;
        };
        meta.pod_scheduled = Some(prepared.clone());
        let uid = meta.uid.clone();
        out.push(Action::PodStatus(PodStatusUpdate {
            pod: pod.clone(),
            desired: Some(desired.clone()),
            prepared: Some(prepared),
            nominated_node_name: None,
            precondition: meta.resource_version.clone(),
        }));
        if event {
            out.push(Action::Event(EventRecord {
                regarding: pod_ref(pod, uid.as_deref()),
                related: None,
                warning: true,
                reason: events::FAILED_SCHEDULING.into(),
                action: "Scheduling".into(),
                note: desired.message,
            }));
        }
    }

    fn nominate(&mut self, pod: &PodKey, node: Option<String>, out: &mut Vec<Action>) {
        let Some(meta) = self.pods.get_mut(pod) else {
            return;
        };
        if meta.nominated_node_name == node || meta.node_name.is_some() {
            return;
        }
        meta.nominated_node_name = node.clone();
        out.push(Action::PodStatus(PodStatusUpdate {
            pod: pod.clone(),
            desired: None,
            prepared: None,
            nominated_node_name: Some(node),
            precondition: meta.resource_version.clone(),
        }));
    }

    fn group_condition(
        &mut self,
        group: &GroupKey,
        type_: &str,
        status: bool,
        reason: &str,
        message: &str,
        out: &mut Vec<Action>,
    ) {
        let Some(meta) = self.groups.get_mut(group) else {
            return;
        };
        let desired = DesiredCondition::new(type_, status, reason, message);
        let Some(prepared) = group_condition_update(&meta.conditions, &desired, Timestamp::now()) else {
            return;
        };
        meta.conditions.retain(|c| c.type_ != prepared.type_);
        meta.conditions.push(prepared.clone());
        out.push(Action::GroupStatus(GroupStatusUpdate {
            group: group.clone(),
            desired,
            prepared,
            precondition: if status { None } else { meta.resource_version.clone() },
        }));
    }
}

/// The key a re-list compares by: `namespace/name`, or the name of a cluster-scoped object.
fn object_key(o: &Object) -> String {
    let meta = match o {
        Object::Node(n) => return n.metadata.name.clone().unwrap_or_default(),
        Object::PriorityClass(p) => return p.metadata.name.clone().unwrap_or_default(),
        Object::Pod(p) => &p.metadata,
        Object::PodGroup(g) => &g.metadata,
        Object::CompositePodGroup(g) => &g.metadata,
    };
    let (ns, name) = ns_name(meta);
    format!("{ns}/{name}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::testing::{GroupBuilder, bound, node, pod, pod_in_group, with_priority};
    use k8s_openapi::api::core::v1::PodStatus;
    use kwas_api::names::conditions::REASON_INVALID;

    struct Harness {
        e: Engine,
        now: Instant,
    }

    fn settings() -> EngineSettings {
        EngineSettings {
            scheduler_names: vec!["default-scheduler".into()],
            primary_name: "kwas-scheduler".into(),
            core: SchedulerConfig::default(),
            backoff: BackoffConfig::default(),
            preemption_timeout: Duration::from_secs(60),
            waiting_message_delay: Duration::from_secs(1),
        }
    }

    impl Harness {
        fn new() -> Self {
            let mut e = Engine::new(settings(), Metrics::new());
            let now = Instant::now();
            for k in Kind::ALL {
                e.apply(InformerEvent::InitStart(k), now);
                e.apply(InformerEvent::InitDone(k), now);
            }
            Self { e, now }
        }

        fn apply(&mut self, o: Object) {
            self.e.apply(InformerEvent::Apply(o), self.now);
            self.e.end_of_batch(self.now);
        }

        fn delete(&mut self, o: Object) {
            self.e.apply(InformerEvent::Delete(o), self.now);
            self.e.end_of_batch(self.now);
        }

        fn node(&mut self, name: &str, cpu: &str) {
            self.apply(Object::Node(Box::new(node(name, cpu, "64Gi", &[]))));
        }

        fn pod(&mut self, p: Pod) {
            self.apply(Object::Pod(Box::new(p)));
        }

        fn group(&mut self, g: GroupBuilder) {
            self.apply(Object::PodGroup(Box::new(g.pod_group())));
        }

        /// Runs every ready unit.
        fn run(&mut self) -> Vec<Action> {
            let mut out = Vec::new();
            while self.e.schedule_one(self.now, &mut out) {}
            out
        }

        fn advance(&mut self, d: Duration) {
            self.now += d;
        }

        /// Confirms every binding in `actions` as the API server and informer would.
        fn confirm_binds(&mut self, actions: &[Action]) -> Vec<Action> {
            let mut out = Vec::new();
            for a in actions {
                if let Action::Bind { pod, node, .. } = a {
                    self.e.bind_finished(pod, node, BindResult::Bound, self.now, &mut out);
                }
            }
            out
        }
    }

    fn binds(actions: &[Action]) -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = actions
            .iter()
            .filter_map(|a| match a {
                Action::Bind { pod, node, .. } => Some((pod.name.clone(), node.clone())),
                _ => None,
            })
            .collect();
        v.sort();
        v
    }

    fn pod_reasons(actions: &[Action]) -> Vec<(String, String, String)> {
        actions
            .iter()
            .filter_map(|a| match a {
                Action::PodStatus(PodStatusUpdate {
                    pod, desired: Some(d), ..
                }) => Some((pod.name.clone(), d.reason.clone(), d.message.clone())),
                _ => None,
            })
            .collect()
    }

    fn group_conditions(actions: &[Action]) -> Vec<(String, String, bool, String)> {
        actions
            .iter()
            .filter_map(|a| match a {
                Action::GroupStatus(g) => Some((
                    g.group.name.clone(),
                    g.desired.type_.clone(),
                    g.desired.status,
                    g.desired.reason.clone(),
                )),
                _ => None,
            })
            .collect()
    }

    fn event_reasons(actions: &[Action]) -> Vec<String> {
        actions
            .iter()
            .filter_map(|a| match a {
                Action::Event(e) => Some(e.reason.clone()),
                _ => None,
            })
            .collect()
    }

    fn gang_unit(name: &str) -> UnitKey {
        UnitKey::Group(GroupKey::pod_group("ns", name))
    }

    #[test]
    fn a_gang_waits_for_min_count_then_binds_all_or_nothing() {
        let mut h = Harness::new();
        h.node("n1", "4");
        h.group(GroupBuilder::gang("ns", "g", 3));
        h.pod(pod_in_group("ns", "g-0", "g", "1", "1Gi"));
        h.pod(pod_in_group("ns", "g-1", "g", "1", "1Gi"));
        let out = h.run();
        assert!(out.is_empty(), "no message before the delay: {out:?}");
        assert_eq!(h.e.next_wakeup(), Some(h.now + Duration::from_secs(1)));
        h.advance(Duration::from_secs(1));
        h.e.end_of_batch(h.now);
        let out = h.run();
        assert!(binds(&out).is_empty());
        let reasons = pod_reasons(&out);
        assert_eq!(reasons.len(), 2, "{reasons:?}");
        for (_, reason, message) in &reasons {
            assert_eq!(reason, REASON_SCHEDULING_GATED);
            assert_eq!(message, crate::core::readiness::WAITING_FOR_MIN_COUNT);
        }
        assert!(event_reasons(&out).is_empty(), "waiting is not a scheduling failure");
        assert_eq!(h.e.queue().state(&gang_unit("g")), Some(QueueState::Gated));
        // Nothing new is written while nothing changes.
        h.group(GroupBuilder::gang("ns", "g", 3));
        assert!(pod_reasons(&h.run()).is_empty());

        h.pod(pod_in_group("ns", "g-2", "g", "1", "1Gi"));
        let out = h.run();
        assert_eq!(
            binds(&out),
            vec![
                ("g-0".into(), "n1".into()),
                ("g-1".into(), "n1".into()),
                ("g-2".into(), "n1".into())
            ]
        );
        assert_eq!(
            group_conditions(&out),
            vec![(
                "g".into(),
                POD_GROUP_INITIALLY_SCHEDULED.into(),
                true,
                REASON_SCHEDULED.into()
            )]
        );
        assert_eq!(h.e.queue().state(&gang_unit("g")), None);
        assert_eq!(h.e.bindings_in_flight(), 3);
        let events = h.confirm_binds(&out);
        assert_eq!(event_reasons(&events), vec!["Scheduled"; 3]);
        assert_eq!(h.e.bindings_in_flight(), 0);
        // The assumed pods hold their node until the informer reports them bound.
        assert_eq!(h.e.snapshot().node_requested("n1").unwrap()["cpu"], 3000);
        h.pod(bound(pod_in_group("ns", "g-0", "g", "1", "1Gi"), "n1"));
        assert_eq!(h.e.snapshot().node_requested("n1").unwrap()["cpu"], 3000);
        assert!(h.run().is_empty());
    }

    #[test]
    fn a_pod_waits_for_its_pod_group_with_upstreams_message() {
        let mut h = Harness::new();
        h.node("n1", "4");
        h.pod(pod_in_group("ns", "p", "late", "1", "1Gi"));
        assert!(h.run().is_empty());
        h.advance(Duration::from_secs(2));
        h.e.end_of_batch(h.now);
        let out = h.run();
        assert_eq!(
            pod_reasons(&out),
            vec![(
                "p".into(),
                REASON_SCHEDULING_GATED.into(),
                "waiting for pods's pod group \"late\" to appear in scheduling queue".into()
            )]
        );
        h.group(GroupBuilder::gang("ns", "late", 1));
        assert_eq!(binds(&h.run()), vec![("p".into(), "n1".into())]);
    }

    #[test]
    fn a_gang_that_does_not_fit_binds_nothing_until_capacity_frees() {
        let mut h = Harness::new();
        h.node("n1", "2");
        h.group(GroupBuilder::gang("ns", "g", 3));
        for i in 0..3 {
            h.pod(pod_in_group("ns", &format!("g-{i}"), "g", "1", "1Gi"));
        }
        let out = h.run();
        assert!(binds(&out).is_empty());
        assert_eq!(
            group_conditions(&out),
            vec![(
                "g".into(),
                POD_GROUP_INITIALLY_SCHEDULED.into(),
                false,
                REASON_UNSCHEDULABLE.into()
            )]
        );
        let reasons = pod_reasons(&out);
        assert_eq!(reasons.len(), 3);
        assert!(reasons.iter().all(|(_, r, _)| r == REASON_UNSCHEDULABLE), "{reasons:?}");
        assert_eq!(event_reasons(&out), vec!["FailedScheduling"; 3]);
        assert_eq!(h.e.queue().state(&gang_unit("g")), Some(QueueState::Unschedulable));
        // A retry with the same outcome writes nothing new.
        h.node("n1", "2");
        h.advance(Duration::from_secs(2));
        let out = h.run();
        assert!(out.is_empty(), "{out:?}");
        // A second node frees enough room: the gang binds.
        h.node("n2", "2");
        h.advance(Duration::from_secs(10));
        let out = h.run();
        assert_eq!(binds(&out).len(), 3);
    }

    #[test]
    fn plain_pods_are_scheduled_one_by_one() {
        let mut h = Harness::new();
        h.node("n1", "2");
        for i in 0..3 {
            h.pod(pod("ns", &format!("p{i}"), "1", "1Gi"));
        }
        let out = h.run();
        assert_eq!(
            binds(&out),
            vec![("p0".into(), "n1".into()), ("p1".into(), "n1".into())]
        );
        assert_eq!(pod_reasons(&out).len(), 1);
        assert_eq!(
            h.e.queue().state(&UnitKey::Pod(PodKey::new("ns", "p2"))),
            Some(QueueState::Unschedulable)
        );
    }

    #[test]
    fn pods_of_other_schedulers_are_left_alone_but_count() {
        let mut h = Harness::new();
        h.node("n1", "2");
        let mut other = pod("ns", "other", "1", "1Gi");
        other.spec.as_mut().unwrap().scheduler_name = Some("someone-else".into());
        h.pod(other.clone());
        assert!(h.run().is_empty());
        h.pod(bound(other, "n1"));
        h.pod(pod("ns", "mine", "2", "1Gi"));
        let out = h.run();
        assert!(binds(&out).is_empty());
        assert_eq!(pod_reasons(&out)[0].1, REASON_UNSCHEDULABLE);
    }

    #[test]
    fn a_rejected_binding_releases_the_pod_and_backs_off() {
        let mut h = Harness::new();
        h.node("n1", "2");
        h.group(GroupBuilder::gang("ns", "g", 2));
        h.pod(pod_in_group("ns", "g-0", "g", "1", "1Gi"));
        h.pod(pod_in_group("ns", "g-1", "g", "1", "1Gi"));
        let out = h.run();
        assert_eq!(binds(&out).len(), 2);
        let mut after = Vec::new();
        let key = PodKey::new("ns", "g-1");
        h.e.bind_finished(&PodKey::new("ns", "g-0"), "n1", BindResult::Bound, h.now, &mut after);
        h.e.bind_finished(&key, "n1", BindResult::Failed("boom".into()), h.now, &mut after);
        assert_eq!(h.e.snapshot().pod_state(&key), Some((PodState::Pending, None)));
        assert_eq!(
            pod_reasons(&after),
            vec![(
                "g-1".into(),
                REASON_SCHEDULER_ERROR.into(),
                "Binding rejected: boom".into()
            )]
        );
        assert_eq!(h.e.queue().state(&gang_unit("g")), Some(QueueState::Backoff));
        assert!(h.run().is_empty(), "nothing before the backoff expires");
        h.advance(Duration::from_secs(1));
        // The bound pod counts towards the gang; only the released one is bound again.
        let out = h.run();
        assert_eq!(binds(&out), vec![("g-1".into(), "n1".into())]);
    }

    #[test]
    fn a_binding_conflict_is_left_to_the_informer() {
        let mut h = Harness::new();
        h.node("n1", "2");
        h.pod(pod("ns", "p", "1", "1Gi"));
        let out = h.run();
        assert_eq!(binds(&out).len(), 1);
        let mut after = Vec::new();
        let key = PodKey::new("ns", "p");
        h.e.bind_finished(
            &key,
            "n1",
            BindResult::Conflict("already assigned".into()),
            h.now,
            &mut after,
        );
        assert!(after.is_empty());
        assert_eq!(h.e.snapshot().pod_state(&key).map(|s| s.0), Some(PodState::Assumed));
    }

    #[test]
    fn group_conditions_never_regress_from_true() {
        let mut h = Harness::new();
        h.node("n1", "2");
        let mut pg = GroupBuilder::gang("ns", "g", 1).pod_group();
        pg.status = Some(kwas_api::v1alpha3::PodGroupStatus {
            conditions: Some(vec![Condition {
                type_: POD_GROUP_INITIALLY_SCHEDULED.into(),
                status: "True".into(),
                reason: REASON_SCHEDULED.into(),
                message: "minCount (1) satisfied: 1 scheduled".into(),
                last_transition_time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(Timestamp::now()),
                observed_generation: None,
            }]),
            ..Default::default()
        });
        h.apply(Object::PodGroup(Box::new(pg)));
        h.pod(bound(pod_in_group("ns", "g-0", "g", "2", "1Gi"), "n1"));
        // An extra pod that does not fit: the group stays True, the pod is Unschedulable.
        h.pod(pod_in_group("ns", "g-1", "g", "2", "1Gi"));
        let out = h.run();
        assert!(binds(&out).is_empty());
        assert!(group_conditions(&out).is_empty(), "{out:?}");
        assert_eq!(pod_reasons(&out)[0].1, REASON_UNSCHEDULABLE);
    }

    #[test]
    fn an_invalid_hierarchy_marks_its_groups_and_pods() {
        let mut h = Harness::new();
        h.node("n1", "4");
        h.apply(Object::CompositePodGroup(Box::new(
            GroupBuilder::gang("ns", "root", 1).all().composite(),
        )));
        h.group(GroupBuilder::gang("ns", "leaf", 1).parent("root"));
        h.pod(pod_in_group("ns", "p", "leaf", "1", "1Gi"));
        let out = h.run();
        assert!(binds(&out).is_empty());
        let mut gc = group_conditions(&out);
        gc.sort();
        assert_eq!(
            gc,
            vec![
                (
                    "leaf".into(),
                    POD_GROUP_INITIALLY_SCHEDULED.into(),
                    false,
                    REASON_INVALID.into()
                ),
                (
                    "root".into(),
                    COMPOSITE_POD_GROUP_INITIALLY_SCHEDULED.into(),
                    false,
                    REASON_INVALID.into()
                ),
            ]
        );
        assert_eq!(pod_reasons(&out)[0].1, REASON_SCHEDULER_ERROR);
    }

    #[test]
    fn preemption_evicts_whole_all_units_reserves_and_then_binds() {
        let mut h = Harness::new();
        h.node("n1", "4");
        h.group(GroupBuilder::gang("ns", "low", 2).all().priority(1));
        for i in 0..2 {
            h.pod(bound(
                with_priority(pod_in_group("ns", &format!("low-{i}"), "low", "2", "1Gi"), 1),
                "n1",
            ));
        }
        h.group(GroupBuilder::gang("ns", "high", 1).priority(100));
        h.pod(with_priority(pod_in_group("ns", "high-0", "high", "1", "1Gi"), 100));
        let out = h.run();
        assert!(binds(&out).is_empty());
        let evicted: Vec<String> = out
            .iter()
            .filter_map(|a| match a {
                Action::Evict {
                    pod, condition, event, ..
                } => {
                    assert_eq!(condition.reason, REASON_PREEMPTION_BY_SCHEDULER);
                    assert_eq!(
                        condition.message,
                        "kwas-scheduler: preempting to accommodate a higher priority podgroup"
                    );
                    assert_eq!(event.note, "Preempted by podgroup ns/high on node n1");
                    Some(pod.name.clone())
                }
                _ => None,
            })
            .collect();
        assert_eq!(evicted, vec!["low-0", "low-1"], "an `all` unit goes whole");
        let gc = group_conditions(&out);
        assert!(gc.contains(&(
            "low".into(),
            DISRUPTION_TARGET.into(),
            true,
            REASON_PREEMPTION_BY_SCHEDULER.into()
        )));
        assert!(gc.contains(&(
            "high".into(),
            POD_GROUP_INITIALLY_SCHEDULED.into(),
            false,
            REASON_UNSCHEDULABLE.into()
        )));
        let nominated: Vec<_> = out
            .iter()
            .filter_map(|a| match a {
                Action::PodStatus(PodStatusUpdate {
                    pod,
                    nominated_node_name: Some(n),
                    ..
                }) => Some((pod.name.clone(), n.clone())),
                _ => None,
            })
            .collect();
        assert_eq!(nominated, vec![("high-0".to_string(), Some("n1".to_string()))]);
        assert_eq!(h.e.preempting(), vec![gang_unit("high")]);

        // A lower-priority newcomer cannot take the reserved room while the victims terminate.
        h.pod(pod("ns", "small", "1", "1Gi"));
        h.advance(Duration::from_secs(30));
        let out = h.run();
        assert!(binds(&out).is_empty(), "{out:?}");

        // The victims go: the preemptor runs right away and binds where it was nominated.
        for i in 0..2 {
            h.delete(Object::Pod(Box::new(pod_in_group(
                "ns",
                &format!("low-{i}"),
                "low",
                "2",
                "1Gi",
            ))));
        }
        let out = h.run();
        let b = binds(&out);
        assert!(b.contains(&("high-0".into(), "n1".into())), "{b:?}");
        assert!(h.e.preempting().is_empty());
        assert_eq!(h.e.metrics.victims(), 2);
    }

    #[test]
    fn a_preemptor_whose_victims_linger_is_retried_after_the_timeout() {
        let mut h = Harness::new();
        h.node("n1", "2");
        let low = bound(with_priority(pod("ns", "low", "2", "1Gi"), 1), "n1");
        h.pod(low.clone());
        h.pod(with_priority(pod("ns", "high", "2", "1Gi"), 10));
        let out = h.run();
        assert_eq!(out.iter().filter(|a| matches!(a, Action::Evict { .. })).count(), 1);
        assert_eq!(h.e.next_wakeup(), Some(h.now + Duration::from_secs(60)));
        // The victim is observed terminating, but never goes away.
        let mut terminating = low;
        terminating.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(Timestamp::now()));
        h.pod(terminating);
        h.advance(Duration::from_secs(30));
        assert!(h.run().is_empty(), "nothing happens before the timeout");
        h.advance(Duration::from_secs(31));
        h.e.end_of_batch(h.now);
        let out = h.run();
        // The reservation is dropped and the preemptor tries again; a terminating pod is never a
        // victim again, so nothing more is evicted.
        assert!(h.e.preempting().is_empty());
        assert!(binds(&out).is_empty());
        assert!(!out.iter().any(|a| matches!(a, Action::Evict { .. })), "{out:?}");
        assert_eq!(
            h.e.queue().state(&UnitKey::Pod(PodKey::new("ns", "high"))),
            Some(QueueState::Unschedulable)
        );
    }

    #[test]
    fn a_relist_drops_objects_deleted_while_disconnected() {
        let mut h = Harness::new();
        h.node("n1", "2");
        h.node("n2", "2");
        h.pod(bound(pod("ns", "p", "1", "1Gi"), "n1"));
        let now = h.now;
        h.e.apply(InformerEvent::InitStart(Kind::Node), now);
        h.e.apply(
            InformerEvent::InitApply(Object::Node(Box::new(node("n2", "2", "64Gi", &[])))),
            now,
        );
        h.e.apply(InformerEvent::InitDone(Kind::Node), now);
        h.e.apply(InformerEvent::InitStart(Kind::Pod), now);
        h.e.apply(InformerEvent::InitDone(Kind::Pod), now);
        assert_eq!(h.e.snapshot().node_names().collect::<Vec<_>>(), vec!["n2"]);
        assert_eq!(h.e.snapshot().pod_count(), 0);
        assert!(h.e.pod_meta(&PodKey::new("ns", "p")).is_none());
    }

    #[test]
    fn a_restarted_scheduler_completes_a_half_bound_gang_first() {
        let mut h = Harness::new();
        h.node("n1", "4");
        // Another gang of the same priority arrived first and would take the room.
        h.group(GroupBuilder::gang("ns", "other", 2));
        for i in 0..2 {
            h.pod(pod_in_group("ns", &format!("other-{i}"), "other", "1", "1Gi"));
        }
        // The gang a previous instance was binding when it died: two of four bound.
        h.group(GroupBuilder::gang("ns", "g", 4));
        for i in 0..4 {
            let p = pod_in_group("ns", &format!("g-{i}"), "g", "1", "1Gi");
            h.pod(if i < 2 { bound(p, "n1") } else { p });
        }
        let out = h.run();
        let b = binds(&out);
        assert_eq!(
            b,
            vec![("g-2".into(), "n1".into()), ("g-3".into(), "n1".into())],
            "{b:?}"
        );
    }

    #[test]
    fn status_writes_do_not_wake_an_unschedulable_unit() {
        let mut h = Harness::new();
        h.node("n1", "1");
        let mut p = pod("ns", "big", "2", "1Gi");
        p.metadata.generation = Some(1);
        h.pod(p.clone());
        let out = h.run();
        assert_eq!(pod_reasons(&out).len(), 1);
        let unit = UnitKey::Pod(PodKey::new("ns", "big"));
        assert_eq!(h.e.queue().state(&unit), Some(QueueState::Unschedulable));
        // The echo of our own status write.
        let written = match &out[0] {
            Action::PodStatus(u) => u.prepared.clone().unwrap(),
            other => panic!("{other:?}"),
        };
        p.status = Some(PodStatus {
            conditions: Some(vec![written]),
            ..Default::default()
        });
        p.metadata.resource_version = Some("2".into());
        h.pod(p);
        assert_eq!(h.e.queue().state(&unit), Some(QueueState::Unschedulable));
        assert_eq!(
            h.e.pod_meta(&PodKey::new("ns", "big"))
                .unwrap()
                .resource_version
                .as_deref(),
            Some("2")
        );
        // Nor do node status updates that change nothing scheduling reads.
        h.node("n1", "1");
        assert_eq!(h.e.queue().state(&unit), Some(QueueState::Unschedulable));
        h.node("n1", "4");
        assert_ne!(h.e.queue().state(&unit), Some(QueueState::Unschedulable));
    }

    #[test]
    fn a_pod_the_snapshot_rejects_is_told_why() {
        let mut h = Harness::new();
        h.node("n1", "2");
        h.pod(pod("ns", "bad", "lots", "1Gi"));
        let mut out = Vec::new();
        h.e.take_deferred(&mut out);
        let reasons = pod_reasons(&out);
        assert_eq!(reasons.len(), 1, "{out:?}");
        assert_eq!(reasons[0].1, REASON_SCHEDULER_ERROR);
        assert!(
            reasons[0].2.contains("spec.containers[0].resources.requests[cpu]"),
            "{}",
            reasons[0].2
        );
        assert_eq!(event_reasons(&out), vec!["FailedScheduling"]);
        assert!(h.run().is_empty());
        // Fixed (a new version), it is scheduled.
        let mut fixed = pod("ns", "bad", "1", "1Gi");
        fixed.metadata.generation = Some(2);
        h.pod(fixed);
        assert_eq!(binds(&h.run()), vec![("bad".into(), "n1".into())]);
    }

    #[test]
    fn a_deleted_preemptor_drops_its_reservation() {
        let mut h = Harness::new();
        h.node("n1", "2");
        h.pod(bound(with_priority(pod("ns", "low", "2", "1Gi"), 1), "n1"));
        let high = with_priority(pod("ns", "high", "2", "1Gi"), 10);
        h.pod(high.clone());
        h.run();
        assert_eq!(h.e.preempting().len(), 1);
        h.delete(Object::Pod(Box::new(high)));
        h.advance(Duration::from_secs(61));
        h.e.end_of_batch(h.now);
        assert!(h.e.preempting().is_empty());
        assert!(h.e.next_wakeup().is_none_or(|t| t > h.now), "no timer left in the past");
    }

    #[test]
    fn terminal_pods_free_their_node() {
        let mut h = Harness::new();
        h.node("n1", "2");
        let running = bound(pod("ns", "done", "2", "1Gi"), "n1");
        h.pod(running.clone());
        h.pod(pod("ns", "next", "2", "1Gi"));
        assert!(binds(&h.run()).is_empty());
        let mut finished = running;
        finished.status = Some(PodStatus {
            phase: Some("Succeeded".into()),
            ..Default::default()
        });
        h.pod(finished);
        h.advance(Duration::from_secs(1));
        assert_eq!(binds(&h.run()), vec![("next".into(), "n1".into())]);
    }
}
