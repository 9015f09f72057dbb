//! What the engine asks the I/O layer to do. Plain data: the engine decides, the writers execute.

use k8s_openapi::api::core::v1::{ObjectReference, PodCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

use super::conditions::DesiredCondition;
use crate::core::{GroupKey, GroupKind, PodKey};

/// One API operation the engine decided on.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// `POST pods/<name>/binding`, after the pod's `WaitForFirstConsumer` claims are taken care of
    /// (upstream's VolumeBinding PreBind: a static volume pre-bound, or the node selected for the
    /// provisioner); a failed claim step fails the binding.
    Bind {
        /// The pod.
        pod: PodKey,
        /// Its uid (the binding's precondition).
        uid: Option<String>,
        /// The node.
        node: String,
        /// PreBind steps for the pod's claims.
        claims: Vec<crate::core::ClaimAction>,
    },
    /// A status patch of a pod: a condition and / or `status.nominatedNodeName`.
    PodStatus(PodStatusUpdate),
    /// A status patch of a group: one condition.
    GroupStatus(GroupStatusUpdate),
    /// Preempt a victim: `DisruptionTarget` on its status, delete it, record `Preempted`.
    Evict {
        /// The victim.
        pod: PodKey,
        /// Its uid (the deletion's precondition).
        uid: Option<String>,
        /// The `DisruptionTarget` condition.
        condition: DesiredCondition,
        /// The `Preempted` event.
        event: EventRecord,
    },
    /// Record an event.
    Event(EventRecord),
}

/// A status patch of a pod.
#[derive(Debug, Clone, PartialEq)]
pub struct PodStatusUpdate {
    /// The pod.
    pub pod: PodKey,
    /// The condition wanted (re-decided on a fresh object after a conflict).
    pub desired: Option<DesiredCondition>,
    /// The condition as decided on the object the engine saw.
    pub prepared: Option<PodCondition>,
    /// `Some(Some(node))` sets `status.nominatedNodeName`, `Some(None)` clears it.
    pub nominated_node_name: Option<Option<String>>,
    /// The `resourceVersion` the decision was made on; the patch fails with a conflict if the pod
    /// changed since (then the writer decides again).
    pub precondition: Option<String>,
}

/// A status patch of a group.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupStatusUpdate {
    /// The group.
    pub group: GroupKey,
    /// The condition wanted.
    pub desired: DesiredCondition,
    /// The condition as decided on the object the engine saw.
    pub prepared: Condition,
    /// The `resourceVersion` the decision was made on (False conditions only).
    pub precondition: Option<String>,
}

/// An event to record (events.k8s.io/v1).
#[derive(Debug, Clone, PartialEq)]
pub struct EventRecord {
    /// The object the event is about.
    pub regarding: ObjectReference,
    /// A second object involved (the preemptor of a `Preempted` event).
    pub related: Option<ObjectReference>,
    /// Warning (else Normal).
    pub warning: bool,
    /// Reason (`Scheduled`, `FailedScheduling`, `Preempted`).
    pub reason: String,
    /// Action (`Binding`, `Scheduling`, `Preempting`).
    pub action: String,
    /// Message.
    pub note: String,
}

/// A reference to a pod.
pub fn pod_ref(pod: &PodKey, uid: Option<&str>) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        namespace: Some(pod.namespace.clone()),
        name: Some(pod.name.clone()),
        uid: uid.map(str::to_string),
        ..Default::default()
    }
}

/// A reference to a group.
pub fn group_ref(group: &GroupKey, uid: Option<&str>) -> ObjectReference {
    ObjectReference {
        api_version: Some(format!(
            "{}/{}",
            kwas_api_types::names::SCHEDULING_GROUP,
            kwas_api_types::names::SCHEDULING_VERSION
        )),
        kind: Some(
            match group.kind {
                GroupKind::PodGroup => "PodGroup",
                GroupKind::CompositePodGroup => "CompositePodGroup",
            }
            .into(),
        ),
        namespace: Some(group.namespace.clone()),
        name: Some(group.name.clone()),
        uid: uid.map(str::to_string),
        ..Default::default()
    }
}
