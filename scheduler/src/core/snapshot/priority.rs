//! Priorities: PriorityClasses, and the priority and preemption policy of pods and groups resolved from
//! them (KEP-5710: a group's priority is the one its pods are scheduled and preempted with).

use std::collections::HashMap;

use k8s_openapi::api::scheduling::v1::PriorityClass;

use super::Snapshot;
use crate::core::model::PreemptionPolicy;

#[derive(Debug, Clone)]
pub(super) struct PriorityClassInfo {
    value: i32,
    global_default: bool,
    preemption_policy: PreemptionPolicy,
}

fn resolve(
    classes: &HashMap<String, PriorityClassInfo>,
    explicit: Option<i32>,
    class: Option<&str>,
) -> (i32, PreemptionPolicy) {
    let class_info = match class {
        Some(c) => classes.get(c),
        None => classes
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

impl Snapshot {
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

    /// The priority and preemption policy of an object with an explicit `priority` and / or a
    /// `priorityClassName` (the global default class when it names none).
    pub(super) fn resolve_priority(&self, explicit: Option<i32>, class: Option<&str>) -> (i32, PreemptionPolicy) {
        resolve(&self.priority_classes, explicit, class)
    }

    fn reresolve_priorities(&mut self) {
        let classes = &self.priority_classes;
        for p in self.pods.values_mut() {
            let (prio, pol) = resolve(classes, p.explicit_priority, p.priority_class.as_deref());
            p.priority = prio;
            if !p.explicit_preemption_policy {
                p.preemption_policy = pol;
            }
        }
        for g in self.groups.values_mut() {
            g.priority = resolve(classes, g.explicit_priority, g.priority_class.as_deref()).0;
        }
    }

    /// The scheduling priority of a pod: its group's when it has one, its own otherwise.
    pub(crate) fn effective_priority(&self, pod: u32) -> i32 {
        let p = self.pod(pod);
        match p.group {
            Some(id) => self.group(id).priority,
            None => p.priority,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::core::model::GroupKey;
    use crate::core::snapshot::Snapshot;
    use crate::core::testing::{GroupBuilder, pod_with};

    /// A pod's cached group follows the group: created before or after the pod, updated, removed, and
    /// created again (possibly at another id).
    #[test]
    fn a_pods_group_and_priority_follow_the_group() {
        let mut snap = Snapshot::new();
        snap.upsert_pod(&pod_with("ns", "p", Some("g"), &[("cpu", "1")]))
            .unwrap();
        let pid = snap.pod_id(&crate::core::model::PodKey::new("ns", "p")).unwrap();
        assert_eq!(snap.pod(pid).group, None);
        assert_eq!(snap.effective_priority(pid), 0);
        snap.upsert_pod_group(&GroupBuilder::gang("ns", "other", 1).priority(1).pod_group())
            .unwrap();
        snap.upsert_pod_group(&GroupBuilder::gang("ns", "g", 1).priority(7).pod_group())
            .unwrap();
        let g = snap.group_id(&GroupKey::pod_group("ns", "g"));
        assert_eq!(snap.pod(pid).group, g);
        assert_eq!(snap.effective_priority(pid), 7);
        snap.upsert_pod_group(&GroupBuilder::gang("ns", "g", 1).priority(9).pod_group())
            .unwrap();
        assert_eq!(snap.effective_priority(pid), 9);
        assert!(snap.remove_group(&GroupKey::pod_group("ns", "g")));
        assert_eq!(snap.pod(pid).group, None);
        assert!(snap.remove_group(&GroupKey::pod_group("ns", "other")));
        // The freed ids are reused by other groups; the pod is not theirs.
        snap.upsert_pod_group(&GroupBuilder::gang("ns", "x", 1).priority(3).pod_group())
            .unwrap();
        assert_eq!(snap.pod(pid).group, None);
        assert_eq!(snap.effective_priority(pid), 0);
        snap.upsert_pod_group(&GroupBuilder::gang("ns", "g", 1).priority(5).pod_group())
            .unwrap();
        assert_eq!(snap.pod(pid).group, snap.group_id(&GroupKey::pod_group("ns", "g")));
        assert_eq!(snap.effective_priority(pid), 5);
        // A pod updated keeps its group; one moved to another group follows it.
        snap.upsert_pod(&pod_with("ns", "p", Some("x"), &[("cpu", "1")]))
            .unwrap();
        assert_eq!(snap.effective_priority(pid), 3);
    }
}
