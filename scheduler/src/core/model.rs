//! Public keys and small value types of the scheduler core.

use std::fmt;

/// A pod's key: namespace and name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PodKey {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
}

impl PodKey {
    /// Builds a key.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            namespace: namespace.into(),
            name: name.into(),
        }
    }
}

impl fmt::Display for PodKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// Whether a group is a leaf PodGroup or a CompositePodGroup.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GroupKind {
    /// A `PodGroup` (leaf: owns pods).
    PodGroup,
    /// A `CompositePodGroup` (owns child groups).
    CompositePodGroup,
}

impl GroupKind {
    /// The API kind name.
    pub fn as_str(&self) -> &'static str {
        self.api().kind()
    }

    /// The API's view of the kind (condition names, field names, resource names).
    pub fn api(self) -> kwas_api_types::group::SchedulingGroupKind {
        match self {
            GroupKind::PodGroup => kwas_api_types::group::SchedulingGroupKind::PodGroup,
            GroupKind::CompositePodGroup => kwas_api_types::group::SchedulingGroupKind::CompositePodGroup,
        }
    }
}

/// A group's key: kind, namespace and name (a PodGroup and a CompositePodGroup may share a name).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupKey {
    /// PodGroup or CompositePodGroup.
    pub kind: GroupKind,
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
}

impl GroupKey {
    /// A PodGroup key.
    pub fn pod_group(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            kind: GroupKind::PodGroup,
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    /// A CompositePodGroup key.
    pub fn composite(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            kind: GroupKind::CompositePodGroup,
            namespace: namespace.into(),
            name: name.into(),
        }
    }
}

impl fmt::Display for GroupKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}/{}", self.kind.as_str(), self.namespace, self.name)
    }
}

/// A root scheduling unit: what one scheduling cycle places.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum UnitKey {
    /// A pod that belongs to no group.
    Pod(PodKey),
    /// The root of a group hierarchy: a standalone PodGroup or a CompositePodGroup without a parent.
    Group(GroupKey),
}

impl fmt::Display for UnitKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UnitKey::Pod(p) => write!(f, "Pod {p}"),
            UnitKey::Group(g) => write!(f, "{g}"),
        }
    }
}

/// A group's scheduling policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Policy {
    /// Members are scheduled independently. The core treats a Basic group as satisfied once at least one
    /// member (pod or child group) is placed or running; see the crate docs.
    Basic,
    /// All-or-nothing: at least `min` members (pods for a PodGroup, child groups for a
    /// CompositePodGroup).
    Gang {
        /// `minCount` / `minGroupCount`.
        min: u32,
    },
}

impl Policy {
    /// The minimum `M` of KEP-6012's PlacementFeasible rules: the gang minimum, or 1 for Basic.
    pub fn minimum(&self) -> u32 {
        match self {
            Policy::Basic => 1,
            Policy::Gang { min } => *min,
        }
    }
}

/// A group's disruption mode (KEP-5710 / KEP-6012).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum DisruptionMode {
    /// Members may be disrupted independently (the API default).
    #[default]
    Single,
    /// Members may only be disrupted together.
    All,
}

/// Whether a preemptor may preempt lower-priority work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PreemptionPolicy {
    /// `PreemptLowerPriority` (the default).
    #[default]
    PreemptLowerPriority,
    /// `Never`.
    Never,
}

impl PreemptionPolicy {
    pub(crate) fn parse(s: Option<&str>) -> Self {
        match s {
            Some("Never") => PreemptionPolicy::Never,
            _ => PreemptionPolicy::PreemptLowerPriority,
        }
    }

    /// The API value.
    pub fn as_str(self) -> &'static str {
        match self {
            PreemptionPolicy::PreemptLowerPriority => "PreemptLowerPriority",
            PreemptionPolicy::Never => "Never",
        }
    }
}

/// Where a pod stands in the snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PodState {
    /// Not on a node; waiting to be scheduled.
    Pending,
    /// Placed by the scheduler, binding not confirmed yet (counts on its node).
    Assumed,
    /// `spec.nodeName` is set (counts on its node).
    Bound,
}
