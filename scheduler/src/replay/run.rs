//! The replay: the engine driven as the live loop drives it, with simulated I/O and a fixed clock.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kwas_api_types::group::SchedulingGroup;
use kwas_api_types::names::conditions::POD_SCHEDULED;
use serde::Serialize;

use super::file::SchedulingSnapshot;
use crate::core::{GroupKey, PodKey, PodState, Snapshot};
use crate::runtime::actions::Action;
use crate::runtime::conditions::is_initially_scheduled;
use crate::runtime::informers::{InformerEvent, Kind, Object};
use crate::runtime::{BindResult, Engine, EngineSettings, Metrics, Now, RuntimeConfig};

/// How to replay.
#[derive(Debug, Clone)]
pub struct ReplayOptions {
    /// The scheduler's configuration (names, algorithm, profile, backoff, timeouts), as `kwas
    /// scheduler` builds it from its flags and `--config`.
    pub config: RuntimeConfig,
    /// At most this many scheduling attempts (one root unit popped from the queue each).
    pub max_cycles: u64,
    /// Simulated time after which the replay stops waiting for timers.
    pub horizon: Duration,
    /// The wall clock the replay starts at (condition times); default: the snapshot's `takenAt`, else
    /// the Unix epoch.
    pub clock: Option<Timestamp>,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        Self {
            config: RuntimeConfig::default(),
            max_cycles: 10_000,
            horizon: Duration::from_secs(60),
            clock: None,
        }
    }
}

/// Why the replay stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Stop {
    /// Nothing is ready and no timer is left.
    Quiet,
    /// Nothing is ready and the next timer lies beyond the horizon (typically unschedulable units,
    /// retried after `podMaxInUnschedulablePodsDuration` when nothing changes).
    Horizon,
    /// The cycle budget ran out with units still ready.
    MaxCycles,
}

/// A condition as the snapshot recorded it (the live scheduler's last write).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Recorded {
    /// True or False.
    pub status: String,
    /// Reason.
    pub reason: String,
    /// Message.
    pub message: String,
}

/// A pod bound to a node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Binding {
    /// `namespace/name`.
    pub pod: String,
    /// The node.
    pub node: String,
    /// Its PodGroup, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_group: Option<String>,
    /// The scheduling attempt that decided it (1-based).
    pub cycle: u64,
}

/// `status.nominatedNodeName` set (or cleared) on a pod.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Nomination {
    /// `namespace/name`.
    pub pod: String,
    /// The node; `None` clears the nomination.
    pub node: Option<String>,
    /// The attempt.
    pub cycle: u64,
}

/// A pod the scheduler deletes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Victim {
    /// `namespace/name`.
    pub pod: String,
    /// Its node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
}

/// Pods evicted together: a preemption's victims, or the bound pods of a gang released after it stayed
/// partially bound too long.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Preemption {
    /// The preemptor (`PodGroup ns/name`, `Pod ns/name`); `None` for a release or an eviction retry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preemptor: Option<String>,
    /// The event's action: `Preempting` or `Releasing`.
    pub action: String,
    /// The victims' `DisruptionTarget` message.
    pub message: String,
    /// The victims.
    pub victims: Vec<Victim>,
    /// The attempt.
    pub cycle: u64,
}

/// A condition written on a PodGroup or CompositePodGroup.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupConditionChange {
    /// `PodGroup ns/name` or `CompositePodGroup ns/name`.
    pub group: String,
    /// Condition type.
    #[serde(rename = "type")]
    pub type_: String,
    /// True or False.
    pub status: String,
    /// Reason.
    pub reason: String,
    /// Message.
    pub message: String,
    /// The attempt (0: before the first).
    pub cycle: u64,
    /// The condition of this type the snapshot recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub live: Option<Recorded>,
}

/// A condition written on a pod.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodConditionChange {
    /// `namespace/name`.
    pub pod: String,
    /// Condition type.
    #[serde(rename = "type")]
    pub type_: String,
    /// True or False.
    pub status: String,
    /// Reason.
    pub reason: String,
    /// Message.
    pub message: String,
    /// The attempt (0: before the first).
    pub cycle: u64,
    /// The condition of this type the snapshot recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub live: Option<Recorded>,
}

impl Recorded {
    /// True when `status`, `reason` and `message` are the recorded ones.
    pub fn same(&self, status: &str, reason: &str, message: &str) -> bool {
        self.status == status && self.reason == reason && self.message == message
    }
}

/// A pod of this scheduler still unbound when the replay stopped, with its last `PodScheduled`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingPod {
    /// `namespace/name`.
    pub pod: String,
    /// Reason of its `PodScheduled=False`, if the replay wrote one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Its message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// `status.nominatedNodeName` at the end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nominated_node: Option<String>,
}

/// What the snapshot held.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotSummary {
    /// `metadata.takenAt`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub taken_at: Option<String>,
    /// `metadata.serverVersion`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_version: Option<String>,
    /// Objects per kind.
    pub objects: BTreeMap<String, usize>,
    /// Pods bound to a node.
    pub bound_pods: usize,
    /// Unbound pods of the replayed scheduler names.
    pub pending_pods: usize,
    /// Unbound pods of other schedulers (left alone).
    pub other_schedulers_pods: usize,
}

/// What the scheduler would do with a snapshot, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplayReport {
    /// `kwas.dev/v1alpha1`.
    pub api_version: &'static str,
    /// `ReplayReport`.
    pub kind: &'static str,
    /// The input.
    pub snapshot: SnapshotSummary,
    /// The scheduler names replayed.
    pub scheduler_names: Vec<String>,
    /// The wall clock the replay started at.
    pub clock: String,
    /// Scheduling attempts made.
    pub cycles: u64,
    /// Simulated time that passed (timers waited for), in milliseconds.
    pub simulated_millis: u64,
    /// Why it stopped.
    pub stopped: Stop,
    /// The horizon, in seconds.
    pub horizon_seconds: u64,
    /// Bindings, in order.
    pub bindings: Vec<Binding>,
    /// Preemptions and releases, in order.
    pub preemptions: Vec<Preemption>,
    /// Nominations, in order.
    pub nominations: Vec<Nomination>,
    /// Group conditions written, in order.
    pub group_conditions: Vec<GroupConditionChange>,
    /// Pod conditions written, in order.
    pub pod_conditions: Vec<PodConditionChange>,
    /// Pods of this scheduler still unbound at the end.
    pub pending: Vec<PendingPod>,
    /// Units whose preemption still waits for victims at the end.
    pub waiting_on_preemption: Vec<String>,
    /// Objects the scheduler could not take, and similar notes.
    pub warnings: Vec<String>,
}

impl ReplayReport {
    /// The last condition change of each pod, in first-change order.
    pub fn last_pod_conditions(&self) -> Vec<&PodConditionChange> {
        let mut last: HashMap<&str, usize> = HashMap::new();
        for (i, c) in self.pod_conditions.iter().enumerate() {
            last.insert(c.pod.as_str(), i);
        }
        let mut idx: Vec<usize> = last.into_values().collect();
        idx.sort_unstable();
        idx.into_iter().filter_map(|i| self.pod_conditions.get(i)).collect()
    }

    /// The last change of each (group, condition type), in order.
    pub fn last_group_conditions(&self) -> Vec<&GroupConditionChange> {
        let mut last: HashMap<(&str, &str), usize> = HashMap::new();
        for (i, c) in self.group_conditions.iter().enumerate() {
            last.insert((c.group.as_str(), c.type_.as_str()), i);
        }
        let mut idx: Vec<usize> = last.into_values().collect();
        idx.sort_unstable();
        idx.into_iter().filter_map(|i| self.group_conditions.get(i)).collect()
    }
}

fn status_str(b: bool) -> &'static str {
    if b { "True" } else { "False" }
}

fn pod_key(p: &Pod) -> PodKey {
    PodKey::new(
        p.metadata.namespace.clone().unwrap_or_else(|| "default".to_string()),
        p.metadata.name.clone().unwrap_or_default(),
    )
}

fn group_key_of<G: SchedulingGroup>(g: &G, composite: bool) -> GroupKey {
    let ns = g.meta().namespace.clone().unwrap_or_else(|| "default".to_string());
    let name = g.meta().name.clone().unwrap_or_default();
    if composite {
        GroupKey::composite(ns, name)
    } else {
        GroupKey::pod_group(ns, name)
    }
}

fn is_bound(p: &Pod) -> bool {
    p.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .is_some_and(|n| !n.is_empty())
}

fn is_finished(p: &Pod) -> bool {
    matches!(
        p.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded") | Some("Failed")
    )
}

fn scheduler_name(p: &Pod) -> &str {
    p.spec
        .as_ref()
        .and_then(|s| s.scheduler_name.as_deref())
        .unwrap_or(kwas_api_types::names::DEFAULT_SCHEDULER_NAME)
}

/// The objects in feeding order, with the scheduler's own status set aside.
struct Prepared {
    objects: Vec<Object>,
    pods: HashMap<PodKey, Pod>,
    live_pods: HashMap<PodKey, Recorded>,
    live_groups: HashMap<(GroupKey, String), Recorded>,
}

/// Kinds fed before the groups and pods, in this order.
const INFRASTRUCTURE: [Kind; 12] = [
    Kind::Namespace,
    Kind::PriorityClass,
    Kind::StorageClass,
    Kind::CSINode,
    Kind::PersistentVolume,
    Kind::PersistentVolumeClaim,
    Kind::PodDisruptionBudget,
    Kind::DeviceClass,
    Kind::ResourceSlice,
    Kind::ResourceClaim,
    Kind::Workload,
    Kind::Node,
];

fn set_aside_group_conditions(
    key: GroupKey,
    conditions: Option<&mut Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>>,
    live: &mut HashMap<(GroupKey, String), Recorded>,
) {
    let Some(conditions) = conditions else {
        return;
    };
    for c in conditions.iter() {
        live.insert(
            (key.clone(), c.type_.clone()),
            Recorded {
                status: c.status.clone(),
                reason: c.reason.clone(),
                message: c.message.clone(),
            },
        );
    }
    conditions.retain(|c| !(is_initially_scheduled(&c.type_) && c.status != "True"));
}

fn prepare(snapshot: &SchedulingSnapshot) -> Prepared {
    let mut infra: Vec<Object> = Vec::new();
    // (creationTimestamp, rank, file index, object)
    let mut workload: Vec<(Option<Timestamp>, u8, usize, Object)> = Vec::new();
    let mut pods = HashMap::new();
    let mut live_pods = HashMap::new();
    let mut live_groups = HashMap::new();
    for kind in INFRASTRUCTURE {
        infra.extend(snapshot.objects.iter().filter(|o| o.kind() == kind).cloned());
    }
    for (i, o) in snapshot.objects.iter().enumerate() {
        match o {
            Object::CompositePodGroup(g) => {
                let mut g = g.clone();
                let key = group_key_of(&*g, true);
                set_aside_group_conditions(
                    key,
                    g.status.as_mut().and_then(|s| s.conditions.as_mut()),
                    &mut live_groups,
                );
                let t = g.metadata.creation_timestamp.as_ref().map(|t| t.0);
                workload.push((t, 0, i, Object::CompositePodGroup(g)));
            }
            Object::PodGroup(g) => {
                let mut g = g.clone();
                let key = group_key_of(&*g, false);
                set_aside_group_conditions(
                    key,
                    g.status.as_mut().and_then(|s| s.conditions.as_mut()),
                    &mut live_groups,
                );
                let t = g.metadata.creation_timestamp.as_ref().map(|t| t.0);
                workload.push((t, 1, i, Object::PodGroup(g)));
            }
            Object::Pod(p) => {
                let mut p = p.clone();
                let key = pod_key(&p);
                if !is_bound(&p)
                    && let Some(conds) = p.status.as_mut().and_then(|s| s.conditions.as_mut())
                {
                    if let Some(c) = conds.iter().find(|c| c.type_ == POD_SCHEDULED) {
                        live_pods.insert(
                            key.clone(),
                            Recorded {
                                status: c.status.clone(),
                                reason: c.reason.clone().unwrap_or_default(),
                                message: c.message.clone().unwrap_or_default(),
                            },
                        );
                    }
                    conds.retain(|c| c.type_ != POD_SCHEDULED);
                }
                let t = p.metadata.creation_timestamp.as_ref().map(|t| t.0);
                pods.insert(key, (*p).clone());
                workload.push((t, 2, i, Object::Pod(p)));
            }
            _ => {}
        }
    }
    workload.sort_by_key(|a| (a.0, a.1, a.2));
    infra.extend(workload.into_iter().map(|(_, _, _, o)| o));
    Prepared {
        objects: infra,
        pods,
        live_pods,
        live_groups,
    }
}

/// Why an object is missing from the engine's snapshot, in the snapshot's words.
fn not_taken(engine: &Engine, objects: &[Object]) -> Vec<String> {
    let snap = engine.snapshot();
    let nodes: std::collections::HashSet<&str> = snap.node_names().collect();
    let mut out = Vec::new();
    for o in objects {
        let error = match o {
            Object::Node(n) if !nodes.contains(n.metadata.name.as_deref().unwrap_or_default()) => {
                Some(Snapshot::new().upsert_node(n).err())
            }
            Object::Pod(p) if !is_finished(p) && snap.pod_state(&pod_key(p)).is_none() => {
                Some(Snapshot::new().upsert_pod(p).err())
            }
            Object::PodGroup(g) if !snap.has_group(&group_key_of(&**g, false)) => {
                Some(Snapshot::new().upsert_pod_group(g).err())
            }
            Object::CompositePodGroup(g) if !snap.has_group(&group_key_of(&**g, true)) => {
                Some(Snapshot::new().upsert_composite_pod_group(g).err())
            }
            _ => None,
        };
        match error {
            Some(Some(e)) => out.push(format!("not taken into the scheduler's snapshot: {e}")),
            Some(None) => out.push(format!(
                "not taken into the scheduler's snapshot: {} {}",
                o.kind().as_str(),
                o.key()
            )),
            None => {}
        }
    }
    out
}

/// What the replay has recorded so far, and the simulated API server.
struct Run<'a> {
    engine: Engine,
    pods: HashMap<PodKey, Pod>,
    prepared_live_pods: &'a HashMap<PodKey, Recorded>,
    prepared_live_groups: &'a HashMap<(GroupKey, String), Recorded>,
    feedback: Vec<InformerEvent>,
    binds: Vec<(PodKey, String)>,
    bindings: Vec<Binding>,
    preemptions: Vec<Preemption>,
    nominations: Vec<Nomination>,
    group_conditions: Vec<GroupConditionChange>,
    pod_conditions: Vec<PodConditionChange>,
}

impl Run<'_> {
    fn record(&mut self, actions: Vec<Action>, cycle: u64) {
        for a in actions {
            match a {
                Action::Bind { pod, node, .. } => {
                    let group = self
                        .pods
                        .get(&pod)
                        .and_then(|p| p.spec.as_ref())
                        .and_then(|s| s.scheduling_group.as_ref())
                        .and_then(|g| g.pod_group_name.clone());
                    self.bindings.push(Binding {
                        pod: pod.to_string(),
                        node: node.clone(),
                        pod_group: group,
                        cycle,
                    });
                    // The API server binds; the informer then shows the pod on its node.
                    if let Some(p) = self.pods.get_mut(&pod) {
                        if let Some(spec) = p.spec.as_mut() {
                            spec.node_name = Some(node.clone());
                        }
                        self.feedback
                            .push(InformerEvent::Apply(Object::Pod(Box::new(p.clone()))));
                    }
                    self.binds.push((pod, node));
                }
                Action::PodStatus(u) => {
                    if let Some(d) = u.desired {
                        self.pod_conditions.push(PodConditionChange {
                            pod: u.pod.to_string(),
                            live: if d.type_ == POD_SCHEDULED {
                                self.prepared_live_pods.get(&u.pod).cloned()
                            } else {
                                None
                            },
                            type_: d.type_,
                            status: status_str(d.status).to_string(),
                            reason: d.reason,
                            message: d.message,
                            cycle,
                        });
                    }
                    if let Some(n) = u.nominated_node_name {
                        self.nominations.push(Nomination {
                            pod: u.pod.to_string(),
                            node: n,
                            cycle,
                        });
                    }
                }
                Action::GroupStatus(g) => {
                    let d = g.desired;
                    self.group_conditions.push(GroupConditionChange {
                        group: g.group.to_string(),
                        live: self
                            .prepared_live_groups
                            .get(&(g.group.clone(), d.type_.clone()))
                            .cloned(),
                        type_: d.type_,
                        status: status_str(d.status).to_string(),
                        reason: d.reason,
                        message: d.message,
                        cycle,
                    });
                }
                Action::Evict {
                    pod, condition, event, ..
                } => {
                    let node = self
                        .pods
                        .get(&pod)
                        .and_then(|p| p.spec.as_ref())
                        .and_then(|s| s.node_name.clone());
                    let preemptor = event.related.as_ref().map(|r| {
                        format!(
                            "{} {}/{}",
                            r.kind.as_deref().unwrap_or_default(),
                            r.namespace.as_deref().unwrap_or_default(),
                            r.name.as_deref().unwrap_or_default()
                        )
                    });
                    let victim = Victim {
                        pod: pod.to_string(),
                        node,
                    };
                    match self.preemptions.last_mut() {
                        Some(p) if p.cycle == cycle && p.preemptor == preemptor && p.action == event.action => {
                            p.victims.push(victim)
                        }
                        _ => self.preemptions.push(Preemption {
                            preemptor,
                            action: event.action.clone(),
                            message: condition.message.clone(),
                            victims: vec![victim],
                            cycle,
                        }),
                    }
                    // The victim is deleted at once.
                    if let Some(p) = self.pods.remove(&pod) {
                        self.feedback.push(InformerEvent::Delete(Object::Pod(Box::new(p))));
                    }
                }
                Action::Event(_) => {}
            }
        }
    }
}

/// Replays `snapshot`. See the module docs.
pub fn replay(snapshot: &SchedulingSnapshot, options: &ReplayOptions) -> ReplayReport {
    let config = &options.config;
    let names = config.scheduler_names.clone();
    let mut engine = Engine::new(
        EngineSettings::from(config),
        Metrics::with_profile(config.primary_name()),
    );
    let wall0 = options
        .clock
        .or_else(|| snapshot.metadata.taken_at.as_deref().and_then(|t| t.parse().ok()))
        .unwrap_or(Timestamp::UNIX_EPOCH);
    let base = Instant::now();
    let at = |offset: Duration| Now {
        instant: base.checked_add(offset).unwrap_or(base),
        wall: SignedDuration::try_from(offset)
            .ok()
            .and_then(|d| wall0.checked_add(d).ok())
            .unwrap_or(wall0),
    };

    let prepared = prepare(snapshot);
    let now = at(Duration::ZERO);
    for k in Kind::ALL {
        engine.apply(InformerEvent::InitStart(k), now);
    }
    for o in &prepared.objects {
        engine.apply(InformerEvent::InitApply(o.clone()), now);
    }
    for k in Kind::ALL {
        engine.apply(InformerEvent::InitDone(k), now);
    }
    let mut warnings = not_taken(&engine, &prepared.objects);

    let mut summary = SnapshotSummary {
        taken_at: snapshot.metadata.taken_at.clone(),
        server_version: snapshot.metadata.server_version.clone(),
        objects: snapshot
            .counts()
            .into_iter()
            .map(|(k, n)| (k.as_str().to_string(), n))
            .collect(),
        bound_pods: 0,
        pending_pods: 0,
        other_schedulers_pods: 0,
    };
    for p in prepared.pods.values() {
        if is_finished(p) {
            continue;
        }
        if is_bound(p) {
            summary.bound_pods += 1;
        } else if names.iter().any(|n| n == scheduler_name(p)) {
            summary.pending_pods += 1;
        } else {
            summary.other_schedulers_pods += 1;
        }
    }

    let mut run = Run {
        engine,
        pods: prepared.pods.clone(),
        prepared_live_pods: &prepared.live_pods,
        prepared_live_groups: &prepared.live_groups,
        feedback: Vec::new(),
        binds: Vec::new(),
        bindings: Vec::new(),
        preemptions: Vec::new(),
        nominations: Vec::new(),
        group_conditions: Vec::new(),
        pod_conditions: Vec::new(),
    };
    let mut offset = Duration::ZERO;
    let mut cycles: u64 = 0;
    let max_turns = options.max_cycles.saturating_mul(4).saturating_add(1_000);
    let mut turns: u64 = 0;
    let mut idle = 0u32;
    let stopped = loop {
        turns = turns.saturating_add(1);
        if turns > max_turns {
            break Stop::MaxCycles;
        }
        // One turn of the live loop (`SchedulerRuntime::run`, as the leader): informer events and binding
        // results, then the engine's `turn`.
        let now = at(offset);
        let mut actions = Vec::new();
        for ev in std::mem::take(&mut run.feedback) {
            run.engine.apply(ev, now);
        }
        for (pod, node) in std::mem::take(&mut run.binds) {
            run.engine
                .bind_finished(&pod, &node, BindResult::Bound, now, &mut actions);
        }
        let worked = run.engine.turn(now, true, cycles < options.max_cycles, &mut actions);
        if worked {
            cycles += 1;
        }
        run.record(actions, cycles);
        if worked || !run.feedback.is_empty() || !run.binds.is_empty() {
            idle = 0;
            continue;
        }
        if cycles >= options.max_cycles && run.engine.queue_depth().active > 0 {
            break Stop::MaxCycles;
        }
        match run.engine.next_wakeup() {
            None => break Stop::Quiet,
            Some(t) => {
                let due = t.saturating_duration_since(base);
                if due > options.horizon {
                    break Stop::Horizon;
                }
                if due > offset {
                    offset = due;
                    idle = 0;
                } else {
                    // A timer already due that produced nothing: give it one more turn.
                    idle += 1;
                    if idle > 2 {
                        break Stop::Quiet;
                    }
                }
            }
        }
    };

    let mut pending = Vec::new();
    let mut pod_keys: Vec<&PodKey> = run.pods.keys().collect();
    pod_keys.sort();
    for key in pod_keys {
        let Some(p) = run.pods.get(key) else { continue };
        if is_finished(p) || !names.iter().any(|n| n == scheduler_name(p)) {
            continue;
        }
        if !matches!(run.engine.snapshot().pod_state(key), Some((PodState::Pending, _))) {
            continue;
        }
        let meta = run.engine.pod_meta(key);
        let cond = meta.and_then(|m| m.pod_scheduled.as_ref());
        pending.push(PendingPod {
            pod: key.to_string(),
            reason: cond.and_then(|c| c.reason.clone()),
            message: cond.and_then(|c| c.message.clone()),
            nominated_node: meta.and_then(|m| m.nominated_node_name.clone()),
        });
    }
    if summary.other_schedulers_pods > 0 {
        warnings.push(format!(
            "{} unbound pod(s) name another scheduler than {}: left alone (see --scheduler-name)",
            summary.other_schedulers_pods,
            names.join(", ")
        ));
    }
    ReplayReport {
        api_version: super::file::API_VERSION,
        kind: "ReplayReport",
        snapshot: summary,
        scheduler_names: names,
        clock: wall0.to_string(),
        cycles,
        simulated_millis: u64::try_from(offset.as_millis()).unwrap_or(u64::MAX),
        stopped,
        horizon_seconds: options.horizon.as_secs(),
        bindings: run.bindings,
        preemptions: run.preemptions,
        nominations: run.nominations,
        group_conditions: run.group_conditions,
        pod_conditions: run.pod_conditions,
        pending,
        waiting_on_preemption: run.engine.preempting().iter().map(ToString::to_string).collect(),
        warnings,
    }
}
