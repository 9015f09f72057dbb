//! Status decisions: which `PodScheduled` condition, nomination, group condition and event to write,
//! never regressing a condition, skipping writes that change nothing.

use kwas_api_types::names::conditions::POD_SCHEDULED;
use kwas_api_types::names::events;

use crate::core::{GroupKey, PodKey};
use crate::runtime::actions::{Action, EventRecord, GroupStatusUpdate, PodStatusUpdate, pod_ref};
use crate::runtime::conditions::{DesiredCondition, group_condition_update, pod_condition_update};

use super::*;

impl Engine {
    /// `PodScheduled=False` with `reason` on a pending pod, unless it already says so. With `event`, a
    /// `FailedScheduling` warning goes with a changed condition.
    pub(super) fn pod_condition(
        &mut self,
        pod: &PodKey,
        reason: &str,
        message: &str,
        event: bool,
        out: &mut Vec<Action>,
    ) {
        let Some(meta) = self.pods.get_mut(pod) else {
            return;
        };
        if meta.node_name.is_some() || meta.deleting {
            return;
        }
        let desired = DesiredCondition::new(POD_SCHEDULED, false, reason, message).observed(meta.generation);
        let Some(prepared) = pod_condition_update(meta.pod_scheduled.as_ref(), &desired, self.wall) else {
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

    pub(super) fn nominate(&mut self, pod: &PodKey, node: Option<String>, out: &mut Vec<Action>) {
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

    pub(super) fn group_condition(
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
        let desired = DesiredCondition::new(type_, status, reason, message).observed(meta.generation);
        let Some(prepared) = group_condition_update(&meta.conditions, &desired, self.wall) else {
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
