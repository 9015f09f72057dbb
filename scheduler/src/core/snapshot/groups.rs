//! Groups: PodGroups and CompositePodGroups read through the `SchedulingGroup` view (one code path for
//! both kinds), their policy, topology, disruption mode and priority, the parent / children links and the
//! member pods, and KEP-6012's admissibility.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kwas_api_types::group::SchedulingGroup;
use kwas_api_types::v1alpha3::{CompositePodGroup, PodGroup};

use super::conversion::{group_policy, invalid, timestamp};
use super::{Snapshot, SnapshotError};
use crate::core::model::{DisruptionMode, GroupKey, GroupKind, Policy, PreemptionPolicy};

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
    pub template: Option<String>,
    pub created: i64,
}

impl Snapshot {
    // ----- taking objects in -----

    /// Adds or updates a PodGroup.
    pub fn upsert_pod_group(&mut self, pg: &PodGroup) -> Result<(), SnapshotError> {
        self.upsert_group(pg, GroupKind::PodGroup)?;
        self.dra.set_group(pg);
        Ok(())
    }

    /// Adds or updates a CompositePodGroup.
    pub fn upsert_composite_pod_group(&mut self, cpg: &CompositePodGroup) -> Result<(), SnapshotError> {
        self.upsert_group(cpg, GroupKind::CompositePodGroup)
    }

    fn upsert_group<G: SchedulingGroup>(&mut self, g: &G, kind: GroupKind) -> Result<(), SnapshotError> {
        let meta: &ObjectMeta = g.meta();
        let key = GroupKey {
            kind,
            namespace: meta.namespace.clone().unwrap_or_else(|| "default".to_string()),
            name: meta.name.clone().unwrap_or_default(),
        };
        let object = format!("{} {}/{}", G::KIND.kind(), key.namespace, key.name);
        if key.name.is_empty() {
            return Err(invalid(object, "metadata.name", "Required value: name is required"));
        }
        let policy = group_policy(&object, g.policy(), G::MINIMUM_FIELD)?;
        let topology_key = g
            .topology_key()
            .map_err(|(path, detail)| invalid(object.clone(), path, detail))?
            .map(str::to_string);
        let disruption = if g.disrupts_all() {
            DisruptionMode::All
        } else {
            DisruptionMode::Single
        };
        let priority_class = g.priority_class_name().map(str::to_string);
        let (priority, class_policy) = self.resolve_priority(g.priority(), priority_class.as_deref());
        let info = GroupInfo {
            key,
            parent_name: g.parent_name().map(str::to_string),
            policy,
            topology_key,
            disruption,
            explicit_priority: g.priority(),
            priority_class,
            priority,
            preemption_policy: match g.preemption_policy() {
                Some(p) => PreemptionPolicy::parse(Some(p)),
                None => class_policy,
            },
            workload: g.workload_name().map(str::to_string),
            template: g.template_name().map(str::to_string),
            created: timestamp(meta),
        };
        let previous = self.groups.id(&info.key);
        if let Some(id) = previous {
            self.unlink_parent(id);
        }
        let id = self.groups.insert(info.key.clone(), info);
        self.link_parent(id);
        self.set_members_group(id, Some(id));
        Ok(())
    }

    // ----- links and lookups -----

    /// Points the pods of PodGroup `id` at `group` (its id, or `None` as it goes).
    fn set_members_group(&mut self, id: u32, group: Option<u32>) {
        let g = self.group(id);
        if g.key.kind != GroupKind::PodGroup {
            return;
        }
        let key = (g.key.namespace.clone(), g.key.name.clone());
        if let Some(pods) = self.members_of.get(&key) {
            for &p in pods {
                if let Some(pod) = self.pods.get_mut(p) {
                    pod.group = group;
                }
            }
        }
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
        let Some(id) = self.groups.id(key) else {
            return false;
        };
        self.unlink_parent(id);
        self.set_members_group(id, None);
        self.groups.remove(key);
        if key.kind == GroupKind::PodGroup {
            self.dra.remove_group(&key.namespace, &key.name);
        }
        true
    }

    pub(crate) fn group(&self, id: u32) -> &GroupInfo {
        match self.groups.get(id) {
            Some(g) => g,
            None => unreachable_group(),
        }
    }

    pub(crate) fn group_id(&self, key: &GroupKey) -> Option<u32> {
        self.groups.id(key)
    }

    /// Whether the group is in the snapshot.
    pub fn has_group(&self, key: &GroupKey) -> bool {
        self.groups.id(key).is_some()
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

    /// Group slots (ids are below this).
    pub(crate) fn group_slots(&self) -> usize {
        self.groups.capacity()
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

    /// For a gang PodGroup: its members scheduled now (assumed or bound; a terminating member counts
    /// until it is gone, a finished one does not) and its `minCount`. `None` for an unknown group, a
    /// CompositePodGroup or a Basic PodGroup (KEP-6413's condition covers gang PodGroups).
    pub fn gang_members_scheduled(&self, key: &GroupKey) -> Option<(u32, u32)> {
        let id = self.group_id(key)?;
        let group = self.group(id);
        let min = match (&group.key.kind, &group.policy) {
            (GroupKind::PodGroup, Policy::Gang { min, .. }) => *min,
            _ => return None,
        };
        let scheduled = self
            .members(id)
            .iter()
            .filter(|&&pid| {
                matches!(
                    self.pod(pid).state,
                    crate::core::model::PodState::Bound | crate::core::model::PodState::Assumed
                )
            })
            .count();
        Some((u32::try_from(scheduled).unwrap_or(u32::MAX), min))
    }

    /// For a gang PodGroup: its members that `Succeeded` (0 otherwise).
    pub fn gang_members_succeeded(&self, key: &GroupKey) -> u32 {
        self.group_id(key).map_or(0, |id| self.succeeded_members(id))
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
}

#[cold]
fn unreachable_group() -> ! {
    panic!("internal error: stale group id in the scheduler snapshot")
}
