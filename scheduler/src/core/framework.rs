//! The views the plugins share, below every plugin and the snapshot (upstream's `framework` types): the
//! parts of a node the filters read ([`NodeView`], [`NodeTaint`]), why a node was rejected ([`Reject`],
//! with upstream's reason strings), an error in a pod's constraints ([`ConstraintError`]) and what binding
//! a pod must write to its ResourceClaims first ([`ClaimReservation`]).

use std::collections::BTreeMap;

use k8s_openapi::api::resource::v1::{AllocationResult, ResourceClaimConsumerReference};

/// An error in a pod's scheduling constraints, with its field path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConstraintError {
    /// Field path of the bad value.
    pub path: String,
    /// What is wrong.
    pub detail: String,
}

/// A node taint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NodeTaint {
    pub key: String,
    pub value: String,
    pub effect: String,
}

/// The parts of a node the static filters read.
#[derive(Debug)]
pub(crate) struct NodeView<'a> {
    pub name: &'a str,
    pub labels: &'a BTreeMap<String, String>,
    pub taints: &'a [NodeTaint],
    pub unschedulable: bool,
}

/// Why a node was rejected, for diagnostics.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Reject {
    Unschedulable,
    Affinity,
    Taint(String),
    NodePorts,
    Insufficient(String),
    TooManyPods,
    VolumeLimit,
    VolumeNodeAffinity,
    VolumeBind,
    VolumeZone,
    SpreadMissingLabel,
    Spread,
    PodAffinity,
    PodAntiAffinity,
    ExistingAntiAffinity,
    /// An allocated ResourceClaim's node selector excludes the node.
    ClaimNotAvailable,
    /// The pod's unallocated ResourceClaims do not fit the node's free devices.
    CannotAllocate,
    /// A request names a DeviceClass that does not exist.
    DeviceClassNotFound(String),
    /// A CEL selector failed on a device.
    Cel(String),
    /// A claim asks for more devices than an allocation may hold (the message is upstream's).
    DeviceLimit(String),
    /// The pod's or the cycle's device allocation budget is spent (the message names the claim).
    AllocationBudget(String),
}

impl Reject {
    pub(crate) fn message(&self) -> String {
        match self {
            Reject::Unschedulable => "node(s) were unschedulable".to_string(),
            Reject::Affinity => "node(s) didn't match Pod's node affinity/selector".to_string(),
            Reject::Taint(t) => format!("node(s) had untolerated taint {t}"),
            Reject::NodePorts => "node(s) didn't have free ports for the requested pod ports".to_string(),
            Reject::Insufficient(r) => format!("Insufficient {r}"),
            Reject::TooManyPods => "Too many pods".to_string(),
            Reject::VolumeLimit => "node(s) exceed max volume count".to_string(),
            Reject::VolumeNodeAffinity => "node(s) had volume node affinity conflict".to_string(),
            Reject::VolumeBind => "node(s) didn't find available persistent volumes to bind".to_string(),
            Reject::VolumeZone => "node(s) had no available volume zone".to_string(),
            Reject::SpreadMissingLabel => {
                "node(s) didn't match pod topology spread constraints (missing required label)".to_string()
            }
            Reject::Spread => "node(s) didn't match pod topology spread constraints".to_string(),
            Reject::PodAffinity => "node(s) didn't match pod affinity rules".to_string(),
            Reject::PodAntiAffinity => "node(s) didn't match pod anti-affinity rules".to_string(),
            Reject::ExistingAntiAffinity => "node(s) didn't satisfy existing pods anti-affinity rules".to_string(),
            Reject::ClaimNotAvailable => "resourceclaim not available on the node".to_string(),
            Reject::CannotAllocate => "cannot allocate all claims".to_string(),
            Reject::DeviceClassNotFound(c) => format!("device class {c} does not exist"),
            Reject::Cel(e) => format!("cannot allocate all claims: {e}"),
            Reject::DeviceLimit(m) | Reject::AllocationBudget(m) => m.clone(),
        }
    }

    /// Whether upstream's plugin answers UnschedulableAndUnresolvable (preemption cannot help).
    pub(crate) fn unresolvable(&self) -> bool {
        matches!(
            self,
            Reject::Unschedulable
                | Reject::Affinity
                | Reject::Taint(_)
                | Reject::VolumeNodeAffinity
                | Reject::VolumeBind
                | Reject::VolumeZone
                | Reject::SpreadMissingLabel
                | Reject::PodAffinity
                | Reject::ClaimNotAvailable
                | Reject::DeviceClassNotFound(_)
                | Reject::Cel(_)
                | Reject::DeviceLimit(_)
        )
    }
}

/// What binding a pod must write to one of its ResourceClaims first (upstream's DynamicResources
/// PreBind): the allocation when the cycle made it, and the pod (or its PodGroup) in
/// `status.reservedFor`.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimReservation {
    /// The claim's namespace.
    pub namespace: String,
    /// The claim.
    pub claim: String,
    /// Its uid (the write's precondition).
    pub uid: String,
    /// The allocation the cycle chose; `None` when the claim was allocated before.
    pub allocation: Option<AllocationResult>,
    /// The consumer to add to `status.reservedFor`.
    pub consumer: ResourceClaimConsumerReference,
}
