//! PreEnqueue-style gating: which root units are ready for a cycle.
//!
//! A pod with `spec.schedulingGroup` waits until its PodGroup is observed ("waiting for pods's pod group
//! %q to appear in scheduling queue"), then until every ancestor up to the root is observed. The root
//! unit is ready when its tree is admissible (KEP-6012 PreEnqueue): a gang PodGroup has at least
//! `minCount` pending or running pods, a composite has at least `minGroupCount` admissible children
//! (Basic: at least one pod / one admissible child); otherwise it waits ("waiting for minCount pods
//! from a gang to appear in scheduling queue"). A unit with nothing pending has nothing to do; an
//! invalid hierarchy is reported so the runtime can mark its groups.

use std::collections::HashMap;

use super::hierarchy::{Climb, HierarchyError, climb, validate_tree};
use super::model::{GroupKey, PodKey, UnitKey};
use super::snapshot::Snapshot;

/// Whether a unit can be scheduled now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Readiness {
    /// Run a cycle.
    Ready,
    /// Not yet; the message says what it waits for.
    Waiting(String),
    /// The hierarchy is invalid.
    Invalid(HierarchyError),
    /// No pending pod to place.
    NothingPending,
}

/// Upstream's message for a pod whose PodGroup is not observed.
pub fn waiting_for_group_message(group: &str) -> String {
    format!("waiting for pods's pod group {group:?} to appear in scheduling queue")
}

/// Upstream's message for a gang without enough pods.
pub const WAITING_FOR_MIN_COUNT: &str = "waiting for minCount pods from a gang to appear in scheduling queue";

/// What a runtime's queue needs to know about a unit (see [`Snapshot::unit_summary`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UnitSummary {
    /// The unit's queueing priority: the highest effective priority among its pending pods (a group's
    /// pods use their group's priority), 0 when nothing is pending.
    pub priority: i32,
    /// Pending pods of the unit's tree this scheduler places, in key order.
    pub pending: Vec<PodKey>,
    /// Pods of the unit's tree already placed (bound or assumed, not terminating).
    pub placed: u32,
}

impl Snapshot {
    /// The root unit a pod is scheduled with, or why it cannot be determined yet.
    pub fn unit_of(&self, pod: &PodKey) -> Result<UnitKey, Readiness> {
        let Some(pid) = self.pod_id(pod) else {
            return Err(Readiness::Waiting(format!("pod {pod} not found")));
        };
        let p = self.pod(pid);
        let Some(g) = p.group_name.as_ref() else {
            return Ok(UnitKey::Pod(pod.clone()));
        };
        let Some(gid) = self.group_id(&GroupKey::pod_group(pod.namespace.clone(), g.clone())) else {
            return Err(Readiness::Waiting(waiting_for_group_message(g)));
        };
        match climb(self, gid) {
            Climb::Root(r) => Ok(UnitKey::Group(self.group(r).key.clone())),
            Climb::Waiting(m) => Err(Readiness::Waiting(m)),
            Climb::Invalid(e) => Err(Readiness::Invalid(e)),
        }
    }

    /// The root unit of `group`'s hierarchy, or why it cannot be determined yet (the group or an
    /// ancestor is not observed, or the parent references are invalid).
    pub fn root_unit(&self, group: &GroupKey) -> Result<UnitKey, Readiness> {
        let Some(id) = self.group_id(group) else {
            return Err(Readiness::Waiting(format!("{group} not found")));
        };
        match climb(self, id) {
            Climb::Root(r) => Ok(UnitKey::Group(self.group(r).key.clone())),
            Climb::Waiting(m) => Err(Readiness::Waiting(m)),
            Climb::Invalid(e) => Err(Readiness::Invalid(e)),
        }
    }

    /// Priority, pending pods and placed pods of a unit: a plain pod, or the tree under a group (which
    /// need not be a root). Unknown units have an empty summary.
    pub fn unit_summary(&self, unit: &UnitKey) -> UnitSummary {
        let mut out = UnitSummary::default();
        let mut best: Option<i32> = None;
        let mut visit = |pid: u32, out: &mut UnitSummary| {
            let p = self.pod(pid);
            if p.terminating {
                return;
            }
            if p.node.is_some() {
                out.placed += 1;
            } else if p.schedulable_pending() && self.responsible_for(&p.scheduler_name) {
                out.pending.push(p.key.clone());
                let prio = self.effective_priority(pid);
                best = Some(best.map_or(prio, |b| b.max(prio)));
            }
        };
        match unit {
            UnitKey::Pod(key) => {
                if let Some(pid) = self.pod_id(key) {
                    visit(pid, &mut out);
                }
            }
            UnitKey::Group(key) => {
                let Some(id) = self.group_id(key) else {
                    return out;
                };
                let mut seen = std::collections::HashSet::new();
                let mut stack = vec![id];
                while let Some(g) = stack.pop() {
                    if !seen.insert(g) {
                        continue;
                    }
                    for &pid in self.members(g) {
                        visit(pid, &mut out);
                    }
                    stack.extend(self.children(g).iter().copied());
                }
            }
        }
        out.pending.sort();
        out.priority = best.unwrap_or(0);
        out
    }

    /// Whether `unit` is ready for a cycle (see the module docs).
    pub fn readiness(&self, unit: &UnitKey) -> Readiness {
        match unit {
            UnitKey::Pod(key) => match self.pod_id(key) {
                Some(p) => {
                    let pi = self.pod(p);
                    if pi.group_name.is_some() {
                        return Readiness::Waiting(format!("pod {key} is scheduled with its group"));
                    }
                    if pi.schedulable_pending() && self.responsible_for(&pi.scheduler_name) {
                        Readiness::Ready
                    } else {
                        Readiness::NothingPending
                    }
                }
                None => Readiness::Waiting(format!("pod {key} not found")),
            },
            UnitKey::Group(key) => {
                let Some(id) = self.group_id(key) else {
                    return Readiness::Waiting(format!("{key} not found"));
                };
                match climb(self, id) {
                    Climb::Root(r) if r == id => {}
                    Climb::Root(_) => return Readiness::Waiting(format!("{key} is not the root of its hierarchy")),
                    Climb::Waiting(m) => return Readiness::Waiting(m),
                    Climb::Invalid(e) => return Readiness::Invalid(e),
                }
                if let Err(e) = validate_tree(self, id) {
                    return Readiness::Invalid(e);
                }
                let mut pending = false;
                let mut stack = vec![id];
                while let Some(g) = stack.pop() {
                    for &p in self.members(g) {
                        let pi = self.pod(p);
                        pending |= pi.schedulable_pending() && self.responsible_for(&pi.scheduler_name);
                    }
                    stack.extend(self.children(g).iter().copied());
                }
                if !pending {
                    return Readiness::NothingPending;
                }
                if self.admissible(id) {
                    Readiness::Ready
                } else {
                    Readiness::Waiting(WAITING_FOR_MIN_COUNT.to_string())
                }
            }
        }
    }

    /// Every unit that has pending pods, with its readiness, highest priority first, then oldest.
    pub fn pending_units(&self) -> Vec<(UnitKey, Readiness)> {
        let mut units: HashMap<UnitKey, (std::cmp::Reverse<i32>, u64)> = HashMap::new();
        let mut waiting: Vec<(UnitKey, Readiness)> = Vec::new();
        let pods: Vec<u32> = self.pod_ids().collect();
        for pid in pods {
            let p = self.pod(pid);
            if !(p.schedulable_pending() && self.responsible_for(&p.scheduler_name)) {
                continue;
            }
            let key = p.key.clone();
            // Highest priority first; `Reverse`, not negation (-i32::MIN overflows).
            let order = (std::cmp::Reverse(self.effective_priority(pid)), p.seen);
            match self.unit_of(&key) {
                Ok(u) => {
                    let e = units.entry(u).or_insert(order);
                    if order < *e {
                        *e = order;
                    }
                }
                Err(r) => waiting.push((UnitKey::Pod(key), r)),
            }
        }
        let mut sorted: Vec<(UnitKey, (std::cmp::Reverse<i32>, u64))> = units.into_iter().collect();
        sorted.sort_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
        let mut out: Vec<(UnitKey, Readiness)> = Vec::new();
        for (u, _) in sorted {
            let r = self.readiness(&u);
            out.push((u, r));
        }
        waiting.sort_by(|a, b| a.0.cmp(&b.0));
        out.extend(waiting);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::testing::{GroupBuilder, bound, node, pod_in_group, with_priority};

    #[test]
    fn root_unit_and_summary_cover_the_whole_tree() {
        let mut snap = Snapshot::new();
        snap.set_scheduler_names(vec!["default-scheduler".into()]);
        snap.upsert_node(&node("n1", "8", "8Gi", &[])).unwrap();
        let leaf = GroupKey::pod_group("ns", "a");
        assert!(matches!(snap.root_unit(&leaf), Err(Readiness::Waiting(_))));
        snap.upsert_pod_group(&GroupBuilder::gang("ns", "a", 2).parent("job").priority(5).pod_group())
            .unwrap();
        match snap.root_unit(&leaf) {
            Err(Readiness::Waiting(m)) => assert!(m.contains("\"job\""), "{m}"),
            other => panic!("{other:?}"),
        }
        snap.upsert_composite_pod_group(&GroupBuilder::gang("ns", "job", 1).priority(5).composite())
            .unwrap();
        let root = UnitKey::Group(GroupKey::composite("ns", "job"));
        assert_eq!(snap.root_unit(&leaf), Ok(root.clone()));
        snap.upsert_pod(&with_priority(pod_in_group("ns", "a-1", "a", "1", "1Gi"), 5))
            .unwrap();
        snap.upsert_pod(&with_priority(pod_in_group("ns", "a-0", "a", "1", "1Gi"), 5))
            .unwrap();
        snap.upsert_pod(&bound(
            with_priority(pod_in_group("ns", "a-2", "a", "1", "1Gi"), 5),
            "n1",
        ))
        .unwrap();
        let s = snap.unit_summary(&root);
        assert_eq!(s.priority, 5);
        assert_eq!(s.pending, vec![PodKey::new("ns", "a-0"), PodKey::new("ns", "a-1")]);
        assert_eq!(s.placed, 1);
        assert_eq!(
            snap.unit_summary(&UnitKey::Group(GroupKey::pod_group("ns", "zz"))),
            UnitSummary::default()
        );
    }
}
