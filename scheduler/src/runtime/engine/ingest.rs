//! Informer events: objects mirrored into the snapshot (rejected ones told why on the pod), re-lists
//! reconciled, and the units an event concerns woken or routed.

use std::collections::HashSet;
use std::time::Instant;

use k8s_openapi::api::core::v1::Pod;
use kwas_api_types::names::conditions::REASON_SCHEDULER_ERROR;
use tracing::warn;

use crate::core::{GroupKey, GroupKind, PodKey, PodState, UnitKey};
use crate::runtime::actions::Action;
use crate::runtime::informers::{InformerEvent, Kind, Object};

use super::*;
use kwas_api_types::group::SchedulingGroup;

impl Engine {
    /// Applies one informer event to the snapshot and wakes the units it concerns. Call
    /// [`Engine::end_of_batch`] after a batch.
    pub fn apply(&mut self, event: InformerEvent, now: Now) {
        self.wall = now.wall;
        let now = now.instant;
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

    /// Actions decided while applying informer events (a condition on a pod the snapshot rejected).
    pub fn take_deferred(&mut self, out: &mut Vec<Action>) {
        out.append(&mut self.deferred);
    }

    pub(super) fn remove_unlisted(&mut self, kind: Kind, seen: &HashSet<String>, now: Instant) {
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
            Kind::Namespace
            | Kind::PersistentVolumeClaim
            | Kind::PersistentVolume
            | Kind::StorageClass
            | Kind::CSINode
            | Kind::PodDisruptionBudget
            | Kind::Workload
            | Kind::DeviceClass
            | Kind::ResourceSlice
            | Kind::ResourceClaim => {
                let gone: Vec<String> = self
                    .aux_keys
                    .get(&kind)
                    .into_iter()
                    .flatten()
                    .filter(|k| !seen.contains(*k))
                    .cloned()
                    .collect();
                for k in gone {
                    self.aux_gone(kind, &k);
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

    pub(super) fn upsert(&mut self, o: Object, now: Instant) {
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
                let fp = super::hash_of(
                    pg.status
                        .as_ref()
                        .and_then(|s| s.resource_claim_statuses.as_ref())
                        .map(|v| {
                            v.iter()
                                .map(|c| (c.name.as_str(), c.resource_claim_name.as_deref()))
                                .collect::<Vec<_>>()
                        }),
                );
                self.upsert_group(key, &*pg, fp, |snap| snap.upsert_pod_group(&pg), now);
            }
            Object::CompositePodGroup(cpg) => {
                let (ns, name) = ns_name(&cpg.metadata);
                let key = GroupKey::composite(ns, name);
                self.upsert_group(key, &*cpg, 0, |snap| snap.upsert_composite_pod_group(&cpg), now);
            }
            aux => {
                let (kind, key) = (aux.kind(), aux.key());
                match &aux {
                    Object::Namespace(o) => self.snap.upsert_namespace(o),
                    Object::PersistentVolumeClaim(o) => self.snap.upsert_persistent_volume_claim(o),
                    Object::PersistentVolume(o) => self.snap.upsert_persistent_volume(o),
                    Object::StorageClass(o) => self.snap.upsert_storage_class(o),
                    Object::CSINode(o) => self.snap.upsert_csi_node(o),
                    Object::PodDisruptionBudget(o) => self.snap.upsert_pod_disruption_budget(o),
                    Object::Workload(o) => self.snap.upsert_workload(o),
                    Object::DeviceClass(o) => self.snap.upsert_device_class(o),
                    Object::ResourceSlice(o) => self.snap.upsert_resource_slice(o),
                    Object::ResourceClaim(o) => self.snap.upsert_resource_claim(o),
                    _ => {}
                }
                self.aux_keys.entry(kind).or_default().insert(key);
                // Storage, budgets and templates change what may fit: unschedulable units try again.
                self.capacity_changed = true;
            }
        }
    }

    /// An object of a kind the snapshot only reads is gone.
    fn aux_gone(&mut self, kind: Kind, key: &str) {
        let (ns, name) = key.split_once('/').unwrap_or(("", key));
        match kind {
            Kind::Namespace => self.snap.remove_namespace(name),
            Kind::PersistentVolumeClaim => self.snap.remove_persistent_volume_claim(ns, name),
            Kind::PersistentVolume => self.snap.remove_persistent_volume(name),
            Kind::StorageClass => self.snap.remove_storage_class(name),
            Kind::CSINode => self.snap.remove_csi_node(name),
            Kind::PodDisruptionBudget => self.snap.remove_pod_disruption_budget(ns, name),
            Kind::Workload => self.snap.remove_workload(ns, name),
            Kind::DeviceClass => self.snap.remove_device_class(name),
            Kind::ResourceSlice => self.snap.remove_resource_slice(name),
            Kind::ResourceClaim => self.snap.remove_resource_claim(ns, name),
            _ => {}
        }
        if let Some(keys) = self.aux_keys.get_mut(&kind) {
            keys.remove(key);
        }
        self.capacity_changed = true;
    }

    pub(super) fn delete(&mut self, o: Object, now: Instant) {
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
            aux => {
                let (kind, key) = (aux.kind(), aux.key());
                self.aux_gone(kind, &key);
            }
        }
    }

    pub(super) fn upsert_pod(&mut self, pod: &Pod, now: Instant) {
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
        self.track_victim(&key, &meta, now);
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
                .unwrap_or(kwas_api_types::names::DEFAULT_SCHEDULER_NAME);
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
        self.pod_health_changed(&key);
        self.route(&key, now);
    }

    /// A pod was deleted.
    pub(super) fn pod_gone(&mut self, key: &PodKey, now: Instant) {
        let placed = matches!(self.snap.pod_state(key), Some((PodState::Bound | PodState::Assumed, _)));
        self.snap.remove_pod(key);
        self.pod_left(key, placed, now);
    }

    /// A pod left the snapshot (deleted or finished): requeue its unit, release what it held.
    pub(super) fn pod_left(&mut self, key: &PodKey, placed: bool, now: Instant) {
        self.pod_health_changed(key);
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
        self.evict_due.remove(key);
        self.lingering.remove(key);
    }

    /// True when `meta` is the group already known with the same spec (a status write).
    pub(super) fn unchanged_group(&self, key: &GroupKey, meta: &GroupMeta) -> bool {
        meta.generation.is_some()
            && self.groups.get(key).is_some_and(|m| {
                m.generation == meta.generation
                    && m.status_fingerprint == meta.status_fingerprint
                    && self.snap.has_group(key)
            })
    }

    pub(super) fn group_changed(&mut self, key: GroupKey, meta: GroupMeta, result: Result<(), String>, now: Instant) {
        if let Err(e) = result {
            self.metrics.invalid_object(key.kind.as_str());
            warn!(group = %key, error = %e, "group not taken into the snapshot");
            return;
        }
        let is_new = !self.groups.contains_key(&key);
        if key.kind == GroupKind::PodGroup {
            self.health_dirty.insert(key.clone());
        }
        self.groups.insert(key.clone(), meta);
        if let Ok(unit) = self.snap.root_unit(&key) {
            self.touch(&unit, now);
        }
        if is_new {
            self.reroute_orphans(&key.namespace, now);
        }
    }

    pub(super) fn group_gone(&mut self, key: &GroupKey, now: Instant) {
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

    pub(super) fn reroute_orphans(&mut self, namespace: &str, now: Instant) {
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
    pub(super) fn route(&mut self, pod: &PodKey, now: Instant) {
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

    pub(super) fn touch(&mut self, unit: &UnitKey, now: Instant) {
        let s = self.snap.unit_summary(unit);
        self.queue.touch(unit, s.priority, s.placed > 0, now);
    }

    /// Mirrors a PodGroup or CompositePodGroup (read through the `SchedulingGroup` view): the engine's
    /// metadata always, the snapshot only when what scheduling reads changed.
    fn upsert_group<G: SchedulingGroup>(
        &mut self,
        key: GroupKey,
        g: &G,
        status_fingerprint: u64,
        upsert: impl FnOnce(&mut Snapshot) -> Result<(), crate::core::SnapshotError>,
        now: Instant,
    ) {
        let meta = GroupMeta {
            uid: g.meta().uid.clone(),
            resource_version: g.meta().resource_version.clone(),
            parent: g.parent_name().map(str::to_string),
            conditions: g.conditions().to_vec(),
            generation: g.meta().generation,
            status_fingerprint,
            recovery_after: recovery_policy(&key, g.meta()),
        };
        if self.unchanged_group(&key, &meta) {
            self.groups.insert(key, meta);
            return;
        }
        let result = upsert(&mut self.snap);
        self.group_changed(key, meta, result.map_err(|e| e.to_string()), now);
    }
}

/// The recovery policy of the group `key` with metadata `meta` (`kwas.dev/gang-recovery-seconds`, on
/// PodGroups only); a value that is not an integer from 0 to a week is ignored, with a warning.
pub(crate) fn recovery_policy(
    key: &GroupKey,
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> Option<Duration> {
    if key.kind != GroupKind::PodGroup {
        return None;
    }
    let value = meta
        .annotations
        .as_ref()?
        .get(kwas_api_types::names::annotations::GANG_RECOVERY_SECONDS)?;
    match value.trim().parse::<u64>() {
        Ok(s) if s <= MAX_RECOVERY_SECONDS => Some(Duration::from_secs(s)),
        _ => {
            tracing::warn!(group = %key, value, "{}: not an integer from 0 to {MAX_RECOVERY_SECONDS}; ignored", kwas_api_types::names::annotations::GANG_RECOVERY_SECONDS);
            None
        }
    }
}

/// The longest recovery grace period: a week.
pub const MAX_RECOVERY_SECONDS: u64 = 7 * 24 * 3600;

#[cfg(test)]
mod recovery_tests {
    use super::*;
    use kwas_api_types::names::annotations::GANG_RECOVERY_SECONDS;

    #[test]
    fn the_recovery_policy_is_read_from_pod_groups_within_its_limits() {
        let meta = |v: &str| k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            annotations: Some([(GANG_RECOVERY_SECONDS.to_string(), v.to_string())].into()),
            ..Default::default()
        };
        let pg = GroupKey::pod_group("ns", "g");
        assert_eq!(recovery_policy(&pg, &meta("0")), Some(Duration::ZERO));
        assert_eq!(recovery_policy(&pg, &meta(" 30 ")), Some(Duration::from_secs(30)));
        assert_eq!(
            recovery_policy(&pg, &meta("604800")),
            Some(Duration::from_secs(MAX_RECOVERY_SECONDS))
        );
        for bad in ["604801", "-1", "1.5", "", "30s", "18446744073709551616"] {
            assert_eq!(recovery_policy(&pg, &meta(bad)), None, "{bad:?}");
        }
        assert_eq!(recovery_policy(&pg, &Default::default()), None);
        let composite = GroupKey {
            kind: GroupKind::CompositePodGroup,
            ..pg
        };
        assert_eq!(recovery_policy(&composite, &meta("30")), None, "PodGroups only");
    }
}
