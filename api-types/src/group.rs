//! One view over the two runtime group kinds, PodGroup and CompositePodGroup: what a scheduler or a
//! controller reads of either (policy and minimum, parent, topology key, disruption mode, priority,
//! status conditions) without writing the same code twice.
//!
//! ```
//! use kwas_api_types::group::{GroupPolicy, SchedulingGroup};
//! use kwas_api_types::v1alpha3::{CompositePodGroup, PodGroup};
//!
//! let pg: PodGroup = serde_json::from_value(serde_json::json!({
//!     "metadata": {"name": "workers", "namespace": "ns"},
//!     "spec": {"parentCompositePodGroupName": "job", "schedulingPolicy": {"gang": {"minCount": 4}},
//!              "schedulingConstraints": {"topology": [{"key": "kwas.dev/rack"}]}}
//! })).unwrap();
//! let cpg: CompositePodGroup = serde_json::from_value(serde_json::json!({
//!     "metadata": {"name": "job", "namespace": "ns"},
//!     "spec": {"workloadRef": {"workloadName": "w"}, "schedulingPolicy": {"gang": {"minGroupCount": 2}},
//!              "disruptionMode": {"all": {}}}
//! })).unwrap();
//! assert_eq!(pg.policy(), GroupPolicy::Gang(4));
//! assert_eq!(pg.parent_name(), Some("job"));
//! assert_eq!(pg.topology_key(), Ok(Some("kwas.dev/rack")));
//! assert_eq!(cpg.policy(), GroupPolicy::Gang(2));
//! assert_eq!(<CompositePodGroup as SchedulingGroup>::MINIMUM_FIELD, "minGroupCount");
//! assert!(cpg.disrupts_all());
//! ```

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta};

use crate::names::conditions::{COMPOSITE_POD_GROUP_INITIALLY_SCHEDULED, POD_GROUP_INITIALLY_SCHEDULED};
use crate::v1alpha3::{CompositePodGroup, PodGroup, TopologyConstraint};

/// Which of the two runtime group kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SchedulingGroupKind {
    /// `scheduling.k8s.io/v1alpha3` PodGroup (a leaf: its members are pods).
    PodGroup,
    /// `scheduling.k8s.io/v1alpha3` CompositePodGroup (its members are groups).
    CompositePodGroup,
}

impl SchedulingGroupKind {
    /// The kind's name.
    pub fn kind(self) -> &'static str {
        match self {
            Self::PodGroup => "PodGroup",
            Self::CompositePodGroup => "CompositePodGroup",
        }
    }

    /// The plural resource name.
    pub fn plural(self) -> &'static str {
        match self {
            Self::PodGroup => "podgroups",
            Self::CompositePodGroup => "compositepodgroups",
        }
    }

    /// The condition the scheduler sets once the group was first scheduled (it never reverts).
    pub fn initially_scheduled_condition(self) -> &'static str {
        match self {
            Self::PodGroup => POD_GROUP_INITIALLY_SCHEDULED,
            Self::CompositePodGroup => COMPOSITE_POD_GROUP_INITIALLY_SCHEDULED,
        }
    }

    /// The gang minimum's field name (`minCount` / `minGroupCount`).
    pub fn minimum_field(self) -> &'static str {
        match self {
            Self::PodGroup => "minCount",
            Self::CompositePodGroup => "minGroupCount",
        }
    }
}

/// A group's `schedulingPolicy` union as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupPolicy {
    /// `basic: {}`.
    Basic,
    /// `gang: {minCount | minGroupCount}` with the minimum as written (not validated).
    Gang(i32),
    /// Neither member set (invalid; the API server rejects it).
    Unset,
    /// Both members set (invalid; the API server rejects it).
    Both,
}

/// What is common to PodGroup and CompositePodGroup.
pub trait SchedulingGroup {
    /// Which kind this is.
    const KIND: SchedulingGroupKind;
    /// The gang minimum's field name (`minCount` / `minGroupCount`).
    const MINIMUM_FIELD: &'static str;

    /// The object's metadata.
    fn meta(&self) -> &ObjectMeta;
    /// The `schedulingPolicy` union.
    fn policy(&self) -> GroupPolicy;
    /// `spec.parentCompositePodGroupName`, when set and not empty.
    fn parent_name(&self) -> Option<&str>;
    /// `spec.schedulingConstraints.topology`.
    fn topology(&self) -> &[TopologyConstraint];
    /// Whether `spec.disruptionMode` is `all` (the group is preempted as a whole).
    fn disrupts_all(&self) -> bool;
    /// `spec.priority`.
    fn priority(&self) -> Option<i32>;
    /// `spec.priorityClassName`, when set and not empty.
    fn priority_class_name(&self) -> Option<&str>;
    /// `spec.preemptionPolicy`.
    fn preemption_policy(&self) -> Option<&str>;
    /// The Workload the group was created from (`spec.workloadRef.workloadName`).
    fn workload_name(&self) -> Option<&str>;
    /// The template of that Workload it instantiates (`spec.workloadRef.templateName`).
    fn template_name(&self) -> Option<&str>;
    /// `status.conditions`.
    fn conditions(&self) -> &[Condition];

    /// The one topology key of `spec.schedulingConstraints.topology`, if any; more than one entry or an
    /// empty key is an error with the field path and upstream's message.
    fn topology_key(&self) -> Result<Option<&str>, (String, String)> {
        match self.topology() {
            [] => Ok(None),
            [one] if one.key.is_empty() => Err((
                "spec.schedulingConstraints.topology[0].key".into(),
                "Required value".into(),
            )),
            [one] => Ok(Some(one.key.as_str())),
            many => Err((
                "spec.schedulingConstraints.topology".into(),
                format!("Too many: {}: must have at most 1 items", many.len()),
            )),
        }
    }
}

fn non_empty(s: &Option<String>) -> Option<&str> {
    s.as_deref().filter(|s| !s.is_empty())
}

fn union(basic: bool, gang: Option<i32>) -> GroupPolicy {
    match (basic, gang) {
        (true, None) => GroupPolicy::Basic,
        (false, Some(n)) => GroupPolicy::Gang(n),
        (false, None) => GroupPolicy::Unset,
        (true, Some(_)) => GroupPolicy::Both,
    }
}

impl SchedulingGroup for PodGroup {
    const KIND: SchedulingGroupKind = SchedulingGroupKind::PodGroup;
    const MINIMUM_FIELD: &'static str = "minCount";

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn policy(&self) -> GroupPolicy {
        let p = &self.spec.scheduling_policy;
        union(p.basic.is_some(), p.gang.as_ref().map(|g| g.min_count))
    }
    fn parent_name(&self) -> Option<&str> {
        non_empty(&self.spec.parent_composite_pod_group_name)
    }
    fn topology(&self) -> &[TopologyConstraint] {
        self.spec
            .scheduling_constraints
            .as_ref()
            .and_then(|c| c.topology.as_deref())
            .unwrap_or_default()
    }
    fn disrupts_all(&self) -> bool {
        self.spec.disruption_mode.as_ref().is_some_and(|d| d.all.is_some())
    }
    fn priority(&self) -> Option<i32> {
        self.spec.priority
    }
    fn priority_class_name(&self) -> Option<&str> {
        non_empty(&self.spec.priority_class_name)
    }
    fn preemption_policy(&self) -> Option<&str> {
        self.spec.preemption_policy.as_deref()
    }
    fn workload_name(&self) -> Option<&str> {
        self.spec.workload_ref.as_ref().map(|w| w.workload_name.as_str())
    }
    fn template_name(&self) -> Option<&str> {
        self.spec
            .workload_ref
            .as_ref()
            .map(|w| w.template_name.as_str())
            .filter(|t| !t.is_empty())
    }
    fn conditions(&self) -> &[Condition] {
        self.status
            .as_ref()
            .and_then(|s| s.conditions.as_deref())
            .unwrap_or_default()
    }
}

impl SchedulingGroup for CompositePodGroup {
    const KIND: SchedulingGroupKind = SchedulingGroupKind::CompositePodGroup;
    const MINIMUM_FIELD: &'static str = "minGroupCount";

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn policy(&self) -> GroupPolicy {
        let p = &self.spec.scheduling_policy;
        union(p.basic.is_some(), p.gang.as_ref().map(|g| g.min_group_count))
    }
    fn parent_name(&self) -> Option<&str> {
        non_empty(&self.spec.parent_composite_pod_group_name)
    }
    fn topology(&self) -> &[TopologyConstraint] {
        self.spec
            .scheduling_constraints
            .as_ref()
            .and_then(|c| c.topology.as_deref())
            .unwrap_or_default()
    }
    fn disrupts_all(&self) -> bool {
        self.spec.disruption_mode.as_ref().is_some_and(|d| d.all.is_some())
    }
    fn priority(&self) -> Option<i32> {
        self.spec.priority
    }
    fn priority_class_name(&self) -> Option<&str> {
        non_empty(&self.spec.priority_class_name)
    }
    fn preemption_policy(&self) -> Option<&str> {
        self.spec.preemption_policy.as_deref()
    }
    fn workload_name(&self) -> Option<&str> {
        Some(self.spec.workload_ref.workload_name.as_str())
    }
    fn template_name(&self) -> Option<&str> {
        Some(self.spec.workload_ref.template_name.as_str()).filter(|t| !t.is_empty())
    }
    fn conditions(&self) -> &[Condition] {
        self.status
            .as_ref()
            .and_then(|s| s.conditions.as_deref())
            .unwrap_or_default()
    }
}
