//! Conditions the runtime writes, decided purely from what the object carries now.
//!
//! - Groups: `PodGroupInitiallyScheduled` / `CompositePodGroupInitiallyScheduled` (reasons `Scheduled`,
//!   `Unschedulable`, `SchedulerError`, `Invalid`) and `DisruptionTarget` (reason
//!   `PreemptionByScheduler`). Once `*InitiallyScheduled` is True it never goes back to False
//!   (KEP-4671 "Alpha Status Transition Rules").
//! - Pods: `PodScheduled=False` with reason `Unschedulable` (a cycle's message), `SchedulerError` (an
//!   invalid hierarchy, a rejected binding) or `SchedulingGated` (waiting in PreEnqueue, with upstream's
//!   waiting messages), and `DisruptionTarget` on preemption victims.
//!
//! A condition is only written when its status, reason or message changes; `lastTransitionTime` moves
//! only when the status does. Writes are strategic merge patches of the status subresource keyed by
//! condition type, as upstream's scheduler does; a write that must not overtake a newer object (any
//! False condition) carries the `resourceVersion` it was decided on, so the API server rejects it with
//! a conflict if the object changed in between, and the writer decides again on the fresh object.

use k8s_openapi::api::core::v1::PodCondition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use kwas_api_types::names::conditions::{COMPOSITE_POD_GROUP_INITIALLY_SCHEDULED, POD_GROUP_INITIALLY_SCHEDULED};
use serde_json::{Value, json};

/// Upstream's `PodScheduled` reason for a pod held back before scheduling (`v1.PodReasonSchedulingGated`).
/// Used for pods whose unit waits in PreEnqueue (group not observed, too few pods), so cluster
/// autoscalers, which act on `Unschedulable`, leave them alone.
pub const REASON_SCHEDULING_GATED: &str = "SchedulingGated";

/// KEP-5710's message on a preemptor's groups while its victims terminate.
pub const WAITING_FOR_PREEMPTION: &str = "pod group is waiting for podgroup preemption to complete";

/// Longest message written (metav1.Condition's limit).
pub const MAX_MESSAGE_BYTES: usize = 32 * 1024;

/// A condition the runtime wants on an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DesiredCondition {
    /// Condition type.
    pub type_: String,
    /// True or False.
    pub status: bool,
    /// Reason (CamelCase).
    pub reason: String,
    /// Message.
    pub message: String,
    /// The object's `metadata.generation` the decision was made for (`observedGeneration`).
    pub observed_generation: Option<i64>,
}

impl DesiredCondition {
    /// A condition of `type_`.
    pub fn new(type_: &str, status: bool, reason: &str, message: impl Into<String>) -> Self {
        Self {
            type_: type_.to_string(),
            status,
            reason: reason.to_string(),
            message: truncate(message.into()),
            observed_generation: None,
        }
    }

    /// The same condition, recording the object generation it was decided for.
    pub fn observed(mut self, generation: Option<i64>) -> Self {
        self.observed_generation = generation;
        self
    }

    fn status_str(&self) -> &'static str {
        if self.status { "True" } else { "False" }
    }
}

fn truncate(mut s: String) -> String {
    if s.len() > MAX_MESSAGE_BYTES {
        let mut end = MAX_MESSAGE_BYTES;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
    s
}

/// True for the `*InitiallyScheduled` condition types, which never regress from True.
pub fn is_initially_scheduled(type_: &str) -> bool {
    type_ == POD_GROUP_INITIALLY_SCHEDULED || type_ == COMPOSITE_POD_GROUP_INITIALLY_SCHEDULED
}

/// The condition to write on a group carrying `current`, or `None` when nothing needs writing
/// (unchanged, or a False that would regress a True `*InitiallyScheduled`).
pub fn group_condition_update(current: &[Condition], desired: &DesiredCondition, now: Timestamp) -> Option<Condition> {
    let existing = current.iter().find(|c| c.type_ == desired.type_);
    if let Some(e) = existing {
        if is_initially_scheduled(&desired.type_) && e.status == "True" && !desired.status {
            return None;
        }
        if e.status == desired.status_str()
            && e.reason == desired.reason
            && e.message == desired.message
            && e.observed_generation == desired.observed_generation
        {
            return None;
        }
    }
    let last_transition_time = match existing {
        Some(e) if e.status == desired.status_str() => e.last_transition_time.clone(),
        _ => Time(now),
    };
    Some(Condition {
        type_: desired.type_.clone(),
        status: desired.status_str().to_string(),
        reason: desired.reason.clone(),
        message: desired.message.clone(),
        last_transition_time,
        observed_generation: desired.observed_generation,
    })
}

/// The pod condition to write on a pod whose condition of that type is `current`, or `None` when it
/// is unchanged.
pub fn pod_condition_update(
    current: Option<&PodCondition>,
    desired: &DesiredCondition,
    now: Timestamp,
) -> Option<PodCondition> {
    if let Some(e) = current
        && e.status == desired.status_str()
        && e.reason.as_deref().unwrap_or("") == desired.reason
        && e.message.as_deref().unwrap_or("") == desired.message
        && e.observed_generation == desired.observed_generation
    {
        return None;
    }
    let last_transition_time = match current {
        Some(e) if e.status == desired.status_str() => e.last_transition_time.clone(),
        _ => Some(Time(now)),
    };
    Some(PodCondition {
        type_: desired.type_.clone(),
        status: desired.status_str().to_string(),
        reason: Some(desired.reason.clone()),
        message: Some(desired.message.clone()),
        last_transition_time,
        last_probe_time: None,
        observed_generation: desired.observed_generation,
    })
}

fn with_precondition(mut patch: Value, resource_version: Option<&str>) -> Value {
    if let Some(rv) = resource_version {
        patch["metadata"] = json!({ "resourceVersion": rv });
    }
    patch
}

/// The strategic merge patch of a group's status subresource that sets `condition`.
pub fn group_status_patch(condition: &Condition, resource_version: Option<&str>) -> Value {
    with_precondition(json!({ "status": { "conditions": [condition] } }), resource_version)
}

/// The strategic merge patch of a pod's status subresource that sets `condition` and / or
/// `status.nominatedNodeName` (`Some(None)` clears it).
pub fn pod_status_patch(
    condition: Option<&PodCondition>,
    nominated_node_name: Option<Option<&str>>,
    resource_version: Option<&str>,
) -> Value {
    let mut status = serde_json::Map::new();
    if let Some(c) = condition {
        status.insert("conditions".into(), json!([c]));
    }
    if let Some(n) = nominated_node_name {
        status.insert("nominatedNodeName".into(), json!(n));
    }
    with_precondition(json!({ "status": status }), resource_version)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kwas_api_types::names::conditions::{DISRUPTION_TARGET, POD_SCHEDULED, REASON_SCHEDULED, REASON_UNSCHEDULABLE};

    fn ts(s: i64) -> Timestamp {
        Timestamp::from_second(s).unwrap()
    }

    fn cond(type_: &str, status: &str, reason: &str, message: &str, at: i64) -> Condition {
        Condition {
            type_: type_.into(),
            status: status.into(),
            reason: reason.into(),
            message: message.into(),
            last_transition_time: Time(ts(at)),
            observed_generation: None,
        }
    }

    #[test]
    fn initially_scheduled_never_regresses() {
        let current = vec![cond(POD_GROUP_INITIALLY_SCHEDULED, "True", REASON_SCHEDULED, "ok", 1)];
        let unschedulable = DesiredCondition::new(POD_GROUP_INITIALLY_SCHEDULED, false, REASON_UNSCHEDULABLE, "no");
        assert_eq!(group_condition_update(&current, &unschedulable, ts(5)), None);
        let cpg = vec![cond(
            COMPOSITE_POD_GROUP_INITIALLY_SCHEDULED,
            "True",
            REASON_SCHEDULED,
            "ok",
            1,
        )];
        let d = DesiredCondition::new(COMPOSITE_POD_GROUP_INITIALLY_SCHEDULED, false, "Invalid", "cycle");
        assert_eq!(group_condition_update(&cpg, &d, ts(5)), None);
        // A True with a new message is written, keeping the transition time.
        let again = DesiredCondition::new(POD_GROUP_INITIALLY_SCHEDULED, true, REASON_SCHEDULED, "more");
        let c = group_condition_update(&current, &again, ts(5)).unwrap();
        assert_eq!((c.message.as_str(), c.last_transition_time.0), ("more", ts(1)));
    }

    #[test]
    fn group_conditions_are_written_only_on_change() {
        let d = DesiredCondition::new(POD_GROUP_INITIALLY_SCHEDULED, false, REASON_UNSCHEDULABLE, "no room");
        let first = group_condition_update(&[], &d, ts(3)).unwrap();
        assert_eq!((first.status.as_str(), first.last_transition_time.0), ("False", ts(3)));
        assert_eq!(group_condition_update(std::slice::from_ref(&first), &d, ts(9)), None);
        let other = DesiredCondition::new(POD_GROUP_INITIALLY_SCHEDULED, false, REASON_UNSCHEDULABLE, "still none");
        let c = group_condition_update(std::slice::from_ref(&first), &other, ts(9)).unwrap();
        assert_eq!(c.last_transition_time.0, ts(3), "same status keeps its transition time");
        let ok = DesiredCondition::new(POD_GROUP_INITIALLY_SCHEDULED, true, REASON_SCHEDULED, "done");
        let c = group_condition_update(&[first], &ok, ts(9)).unwrap();
        assert_eq!((c.status.as_str(), c.last_transition_time.0), ("True", ts(9)));
        // Other condition types are independent.
        let dt = DesiredCondition::new(DISRUPTION_TARGET, true, "PreemptionByScheduler", "x");
        assert!(group_condition_update(&[c], &dt, ts(9)).is_some());
    }

    #[test]
    fn pod_conditions_are_written_only_on_change() {
        let d = DesiredCondition::new(POD_SCHEDULED, false, REASON_SCHEDULING_GATED, "waiting");
        let c = pod_condition_update(None, &d, ts(2)).unwrap();
        assert_eq!(c.reason.as_deref(), Some(REASON_SCHEDULING_GATED));
        assert_eq!(pod_condition_update(Some(&c), &d, ts(3)), None);
        let u = DesiredCondition::new(POD_SCHEDULED, false, REASON_UNSCHEDULABLE, "0/3 nodes are available");
        let c2 = pod_condition_update(Some(&c), &u, ts(3)).unwrap();
        assert_eq!(c2.last_transition_time, Some(Time(ts(2))));
    }

    #[test]
    fn patches_carry_the_precondition_and_clear_nominations() {
        let c = cond(POD_GROUP_INITIALLY_SCHEDULED, "False", REASON_UNSCHEDULABLE, "m", 1);
        let p = group_status_patch(&c, Some("42"));
        assert_eq!(p["metadata"]["resourceVersion"], "42");
        assert_eq!(p["status"]["conditions"][0]["type"], POD_GROUP_INITIALLY_SCHEDULED);
        let p = pod_status_patch(None, Some(None), None);
        assert_eq!(p, json!({"status": {"nominatedNodeName": null}}));
        let p = pod_status_patch(None, Some(Some("n1")), Some("7"));
        assert_eq!(p["status"]["nominatedNodeName"], "n1");
        assert_eq!(p["metadata"]["resourceVersion"], "7");
    }

    #[test]
    fn long_messages_are_cut_on_a_char_boundary() {
        let d = DesiredCondition::new(POD_SCHEDULED, false, "x", "é".repeat(MAX_MESSAGE_BYTES));
        assert!(d.message.len() <= MAX_MESSAGE_BYTES);
        assert!(d.message.chars().all(|c| c == 'é'));
    }
}
