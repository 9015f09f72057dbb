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
//!   upstream's waiting message; unschedulable ones reason `Unschedulable`, or `PlacementNotGuaranteed`
//!   when the gang has inter-pod dependencies (KEP-4671), or `Unsupported` when a member uses what
//!   this scheduler cannot honour; pods of an invalid hierarchy and pods whose binding was rejected
//!   reason `SchedulerError`. Messages are upstream's FitError with its PostFilter part appended
//!   (`... preemption: not eligible due to preemptionPolicy=Never.`), and conditions carry the
//!   object's `observedGeneration`. `FailedScheduling` events are recorded when a pod's condition
//!   changes, not on every retry.
//! - **Delayed preemption** (KEP-4671, KEP-5710): victims get `DisruptionTarget` and are deleted; the
//!   preemptor's pods get `status.nominatedNodeName` and are *reserved* on those nodes in the snapshot
//!   (assumed, never bound) so no unit of lower priority takes the room while the victims terminate.
//!   The preemptor is not retried, and preempts nothing more, until every victim is gone (or
//!   `preemption_timeout` passes); then the reservation is dropped and the preemptor runs a normal
//!   cycle, which may pick any placement. A preemptor of higher priority may take a reservation: its
//!   holder loses it (and its nominations) instead of a pod being deleted.
//! - **Partially bound gangs** (a crash between a gang's bindings, the rest no longer fitting): the unit
//!   is retried first among equals; if it is still below its minimum `partial_gang_timeout` after it
//!   was first seen so, its bound pods are evicted (`DisruptionTarget`, retried until gone) so it never
//!   holds capacity forever. The release happens at the unit's first retry after the timeout (an event,
//!   or `max_unschedulable` without one), so within `partial_gang_timeout + max_unschedulable`.
//! - **Order**: priority, then units that already have placed pods (see [`super::scheduling_queue`]), then
//!   arrival.
//! - **Time** is an input: every entry point takes a [`Now`] (a monotonic instant for timers and a wall
//!   clock for condition times), so every decision is reproducible from its inputs; tests use fixed times.
//!
//! One file per concern: `ingest` (informer events mirrored into the snapshot and routed to units),
//! `gating` (PreEnqueue waiting and its message timing, the engine's timers), `binding` (bindings in
//! flight and their results), `preemption` (the delayed-preemption state machine, reservations, leadership
//! changes), `status` (which conditions, nominations and events to write); the cycle itself is here.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Pod, PodCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use k8s_openapi::jiff::Timestamp;
use kwas_api_types::names::conditions::{POD_SCHEDULED, REASON_SCHEDULED, REASON_SCHEDULER_ERROR};
use tracing::{debug, warn};

use crate::core::{CycleOutcome, GroupKey, PodKey, Readiness, Scheduler, SchedulerConfig, Snapshot, UnitKey, Verdict};
use crate::runtime::actions::Action;
use crate::runtime::config::{BackoffConfig, RuntimeConfig};
use crate::runtime::informers::{Kind, Object};
use crate::runtime::metrics::{Attempt, Metrics};
use crate::runtime::scheduling_queue::{Failure, QueueDepth, SchedulingQueue};

mod binding;
mod gating;
mod health;
mod ingest;
mod preemption;
mod release;
mod status;
#[cfg(test)]
mod tests;

/// What the engine keeps of a pod besides the snapshot: what it needs to decide status writes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PodMeta {
    /// `metadata.uid`.
    pub uid: Option<String>,
    /// `metadata.resourceVersion`.
    pub resource_version: Option<String>,
    /// `metadata.generation` (the conditions' `observedGeneration`).
    pub generation: Option<i64>,
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
    /// A preemption victim: its `DisruptionTarget` condition is True with reason `PreemptionByScheduler`.
    pub victim: bool,
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
            generation: pod.metadata.generation,
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
            victim: status.and_then(|s| s.conditions.as_ref()).is_some_and(|c| {
                c.iter().any(|c| {
                    c.type_ == kwas_api_types::names::conditions::DISRUPTION_TARGET
                        && c.status == "True"
                        && c.reason.as_deref()
                            == Some(kwas_api_types::names::conditions::REASON_PREEMPTION_BY_SCHEDULER)
                })
            }),
            fingerprint: hash_of((
                pod.metadata.generation,
                pod.metadata.deletion_timestamp.is_some(),
                spec.and_then(|s| s.node_name.as_deref()),
                spec.and_then(|s| s.scheduling_gates.as_ref()).map_or(0, Vec::len),
                spec.and_then(|s| s.priority),
                spec.and_then(|s| s.scheduler_name.as_deref()),
                status.and_then(|s| s.resource_claim_statuses.as_ref()).map(|v| {
                    v.iter()
                        .map(|c| (c.name.as_str(), c.resource_claim_name.as_deref()))
                        .collect::<Vec<_>>()
                }),
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
    /// What else scheduling reads from the status (a PodGroup's `resourceClaimStatuses`), hashed.
    pub status_fingerprint: u64,
    /// The gang recovery policy (`kwas.dev/gang-recovery-seconds`): how long the gang may stay below its
    /// minimum before it is scheduled again whole; `None` leaves it and reports.
    pub recovery_after: Option<Duration>,
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
    /// See [`RuntimeConfig::partial_gang_timeout`].
    pub partial_gang_timeout: Duration,
    /// How long a unit waits in PreEnqueue before its pods get the waiting message.
    pub waiting_message_delay: Duration,
    /// The profile's plugin arguments.
    pub profile: crate::runtime::config::ProfileArgs,
}

impl From<&RuntimeConfig> for EngineSettings {
    fn from(c: &RuntimeConfig) -> Self {
        Self {
            scheduler_names: c.scheduler_names.clone(),
            primary_name: c.primary_name().to_string(),
            core: c.core,
            backoff: c.backoff,
            preemption_timeout: c.preemption_timeout,
            partial_gang_timeout: c.partial_gang_timeout,
            waiting_message_delay: c.waiting_message_delay,
            profile: c.profile.clone(),
        }
    }
}

/// The time an engine entry point runs at: a monotonic instant (timers, backoff, deadlines) and the wall
/// clock (condition transition times).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Now {
    /// Monotonic time.
    pub instant: Instant,
    /// Wall-clock time.
    pub wall: Timestamp,
}

impl Now {
    /// The current time.
    pub fn current() -> Self {
        Self {
            instant: Instant::now(),
            wall: Timestamp::now(),
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
    /// Claims whose allocation a binding in flight is to write: pod -> (namespace, claim).
    claim_allocations: HashMap<PodKey, Vec<(String, String)>>,
    ongoing: HashMap<UnitKey, Ongoing>,
    victim_of: HashMap<PodKey, UnitKey>,
    /// Victims the cluster shows marked but not deleted, and when to evict them again.
    evict_due: HashMap<PodKey, Instant>,
    /// Victims still present after their preemption timed out.
    lingering: HashSet<PodKey>,
    /// Group units seen partially bound (placed pods, minimum not reached), since when.
    partial_since: HashMap<UnitKey, Instant>,
    /// Broken gangs with a recovery policy, and when they are due to be scheduled again whole.
    recovery_due: HashMap<GroupKey, Instant>,
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
    /// Keys of the objects of the kinds the snapshot only reads (storage, budgets, namespaces,
    /// Workloads), for re-lists.
    aux_keys: HashMap<Kind, HashSet<String>>,
    capacity_changed: bool,
    /// Actions decided while applying informer events, for [`Engine::take_deferred`].
    deferred: Vec<Action>,
    /// PodGroups whose gang health may have changed since the last [`Engine::publish_health`].
    health_dirty: HashSet<GroupKey>,
    /// Every gang's health is looked at on the next [`Engine::publish_health`].
    health_all: bool,
    /// The wall clock of the entry point running now (condition times).
    wall: Timestamp,
}

fn ns_name(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> (String, String) {
    (
        meta.namespace.clone().unwrap_or_else(|| "default".to_string()),
        meta.name.clone().unwrap_or_default(),
    )
}

impl Engine {
    /// An engine with an empty snapshot.
    pub fn new(settings: EngineSettings, metrics: Metrics) -> Self {
        let mut snap = Snapshot::new();
        snap.set_scheduler_names(settings.scheduler_names.clone());
        let args = &settings.profile;
        snap.set_scoring_resources(args.scoring_resources.clone());
        if let Some(d) = &args.default_spread_constraints {
            snap.set_default_spread_constraints(d.clone());
        }
        snap.set_inter_pod_affinity_args(
            args.hard_pod_affinity_weight,
            args.ignore_preferred_terms_of_existing_pods,
        );
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
            claim_allocations: HashMap::new(),
            ongoing: HashMap::new(),
            victim_of: HashMap::new(),
            evict_due: HashMap::new(),
            lingering: HashSet::new(),
            partial_since: HashMap::new(),
            recovery_due: HashMap::new(),
            reserved_by: HashMap::new(),
            relist: HashMap::new(),
            gated: HashMap::new(),
            gated_due: BTreeSet::new(),
            gated_pruned: None,
            synced: HashSet::new(),
            aux_keys: HashMap::new(),
            capacity_changed: false,
            deferred: Vec::new(),
            health_dirty: HashSet::new(),
            health_all: true,
            wall: Timestamp::UNIX_EPOCH,
        }
    }

    /// The snapshot (read-only).
    pub fn snapshot(&self) -> &Snapshot {
        &self.snap
    }

    /// The queue (read-only).
    #[cfg(test)]
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

    /// Pops one unit and handles it. Returns false when no unit is ready.
    pub fn schedule_one(&mut self, now: Now, out: &mut Vec<Action>) -> bool {
        self.wall = now.wall;
        let now = now.instant;
        let Some(unit) = self.queue.pop(now) else {
            return false;
        };
        if let Some(o) = self.ongoing.get(&unit) {
            if !o.victims.is_empty() && o.deadline > now {
                self.queue.park(&unit, now);
                return true;
            }
            // Victims that outlived the timeout are not waited for again.
            self.lingering.extend(o.victims.iter().cloned());
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
            self.group_condition(
                g,
                g.kind.api().initially_scheduled_condition(),
                false,
                reason,
                message,
                out,
            );
        }
        for p in pods {
            self.pod_condition(&p, REASON_SCHEDULER_ERROR, message, true, out);
        }
        self.queue.failed(unit, Failure::Unschedulable, now);
    }

    fn cycle(&mut self, unit: &UnitKey, now: Instant, out: &mut Vec<Action>) {
        self.gated.remove(unit);
        let started = Instant::now();
        let outcome = self.scheduler.schedule(&mut self.snap, unit);
        let algorithm_seconds = started.elapsed().as_secs_f64();
        let result = match &outcome.verdict {
            Verdict::Scheduled => "scheduled",
            Verdict::Unschedulable { .. } => "unschedulable",
            Verdict::Invalid { .. } | Verdict::NotReady { .. } => "error",
        };
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
        // A unit whose attempt started a preemption waits for it (upstream's `waiting_on_preemption`).
        let result = if result != "error" && self.ongoing.contains_key(unit) {
            "waiting_on_preemption"
        } else {
            result
        };
        self.metrics.attempt(Attempt {
            group_type: match unit {
                UnitKey::Pod(_) => None,
                UnitKey::Group(g) => Some(match g.kind {
                    crate::core::model::GroupKind::PodGroup => "podgroup",
                    crate::core::model::GroupKind::CompositePodGroup => "compositepodgroup",
                }),
            },
            result,
            seconds: started.elapsed().as_secs_f64(),
            algorithm_seconds,
            placements_evaluated: outcome.stats.placements_evaluated,
            placements_feasible: outcome.stats.placements_feasible,
        });
    }

    fn scheduled(&mut self, unit: &UnitKey, outcome: &CycleOutcome, now: Instant, out: &mut Vec<Action>) {
        self.partial_since.remove(unit);
        for a in &outcome.assignments {
            if let Err(e) = self.snap.assume(&a.pod, &a.node) {
                warn!(pod = %a.pod, node = %a.node, error = %e, "cannot assume the placement");
                continue;
            }
            self.binding.insert(a.pod.clone(), unit.clone());
            self.pod_health_changed(&a.pod);
            let mut claims = self.snap.volume_prebind(&a.pod, &a.node);
            if let Some((_, reservations)) = outcome.reservations.iter().find(|(p, _)| *p == a.pod) {
                let mut allocated = Vec::new();
                for r in reservations {
                    if let Some(allocation) = &r.allocation {
                        // Held until the informer shows the claim: no other cycle takes its devices.
                        self.snap.assume_claim_allocation(&r.namespace, &r.claim, allocation);
                        allocated.push((r.namespace.clone(), r.claim.clone()));
                    }
                    claims.push(crate::core::ClaimAction::ReserveDevices(Box::new(r.clone())));
                }
                if !allocated.is_empty() {
                    self.claim_allocations.insert(a.pod.clone(), allocated);
                }
            }
            out.push(Action::Bind {
                pod: a.pod.clone(),
                uid: self.pods.get(&a.pod).and_then(|m| m.uid.clone()),
                node: a.node.clone(),
                claims,
            });
        }
        // Preemption first: its PostFilter message belongs in the pods' messages, and a preemption
        // that starts writes the groups' "waiting for preemption" itself.
        let mut suffix = String::new();
        let mut preempting = false;
        if outcome.preemption_may_help {
            match self.preempt(unit, now, out) {
                Ok(()) => preempting = true,
                Err(m) => suffix = m,
            }
        }
        for g in &outcome.groups {
            let ty = g.group.kind.api().initially_scheduled_condition();
            if g.satisfied {
                self.group_condition(&g.group, ty, true, REASON_SCHEDULED, &g.message, out);
                // A preemption victim whose replacements were placed is no longer about to be disrupted; the
                // message keeps what disrupted it (`kubectl kwas who-preempted` reads it).
                let disrupted = self.groups.get(&g.group).and_then(|m| {
                    m.conditions
                        .iter()
                        .find(|c| c.type_ == kwas_api_types::names::conditions::DISRUPTION_TARGET && c.status == "True")
                        .map(|c| c.message.clone())
                });
                if let Some(was) = disrupted {
                    self.group_condition(
                        &g.group,
                        kwas_api_types::names::conditions::DISRUPTION_TARGET,
                        false,
                        REASON_SCHEDULED,
                        &format!("scheduled again after its disruption ({was})"),
                        out,
                    );
                }
            } else if !preempting && g.code.is_some_and(|c| c != crate::core::Code::Success) {
                let message = with_postfilter(&g.message, &suffix);
                self.group_condition(&g.group, ty, false, g.rejection.reason(), &message, out);
            }
        }
        for p in &outcome.unschedulable_pods {
            let message = with_postfilter(&p.message, &suffix);
            self.pod_condition(&p.pod, p.rejection.reason(), &message, true, out);
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
        let code = match &outcome.verdict {
            Verdict::Unschedulable { code, .. } => Some(*code),
            _ => None,
        };
        let mut suffix = String::new();
        let mut preempting = false;
        if code == Some(crate::core::Code::UnschedulableAndUnresolvable) {
            suffix = self.not_helpful(unit);
        } else if outcome.preemption_may_help && code == Some(crate::core::Code::Unschedulable) {
            match self.preempt(unit, now, out) {
                Ok(()) => preempting = true,
                Err(m) => suffix = m,
            }
        }
        if !preempting {
            for g in &outcome.groups {
                let ty = g.group.kind.api().initially_scheduled_condition();
                let message = with_postfilter(&g.message, &suffix);
                self.group_condition(&g.group, ty, false, g.rejection.reason(), &message, out);
            }
        }
        for p in &outcome.unschedulable_pods {
            let message = with_postfilter(&p.message, &suffix);
            self.pod_condition(&p.pod, p.rejection.reason(), &message, true, out);
        }
        if preempting {
            return;
        }
        if self.release_if_stuck(unit, now, out) {
            return;
        }
        // KEP-4671 failure handling: nominations of a failed attempt are cleared.
        for p in self.snap.unit_summary(unit).pending {
            if self.pods.get(&p).is_some_and(|m| m.nominated_node_name.is_some()) {
                self.nominate(&p, None, out);
            }
        }
        self.queue.failed(unit, Failure::Unschedulable, now);
    }

    /// Upstream's PostFilter message for a unit no preemption can help (UnschedulableAndUnresolvable).
    fn not_helpful(&self, unit: &UnitKey) -> String {
        match unit {
            UnitKey::Pod(_) => {
                let n = self.snap.node_count();
                format!("preemption: 0/{n} nodes are available: {n} Preemption is not helpful for scheduling.")
            }
            UnitKey::Group(_) => "preemption: not helpful for scheduling.".to_string(),
        }
    }
}

/// `message` with upstream's PostFilter message appended (`<filter message> preemption: ...`).
fn with_postfilter(message: &str, postfilter: &str) -> String {
    if postfilter.is_empty() {
        return message.to_string();
    }
    let sep = if message.ends_with('.') { " " } else { ". " };
    format!("{message}{sep}{postfilter}")
}

/// The key a re-list compares by: `namespace/name`, or the name of a cluster-scoped object.
fn object_key(o: &Object) -> String {
    let meta = match o {
        Object::Node(n) => return n.metadata.name.clone().unwrap_or_default(),
        Object::PriorityClass(p) => return p.metadata.name.clone().unwrap_or_default(),
        Object::Pod(p) => &p.metadata,
        Object::PodGroup(g) => &g.metadata,
        Object::CompositePodGroup(g) => &g.metadata,
        other => return other.key(),
    };
    let (ns, name) = ns_name(meta);
    format!("{ns}/{name}")
}
