//! Priorities: PriorityClasses, and the priority and preemption policy of pods and groups resolved from
//! them (KEP-5710: a group's priority is the one its pods are scheduled and preempted with).

use std::collections::HashMap;

use k8s_openapi::api::scheduling::v1::PriorityClass;

use super::Snapshot;
use crate::core::model::{GroupKey, PreemptionPolicy};

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
        match p.group_name.as_ref() {
            Some(g) => self
                .group_id(&GroupKey::pod_group(p.key.namespace.clone(), g.clone()))
                .map(|id| self.group(id).priority)
                .unwrap_or(p.priority),
            None => p.priority,
        }
    }
}
