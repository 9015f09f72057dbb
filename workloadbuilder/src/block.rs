//! The user's scheduling blocks, as a controller's API embeds them, validated and mapped in one call with
//! the controller's [`AllowList`] (KEP-6089 "Controller Opt-In" and the map helpers).
//!
//! A controller gathers the fields of one group's block into a [`PodGroupBlock`] (a leaf: policy,
//! constraints, disruption mode, resource claims) or a [`CompositeBlock`] (a composite: policy,
//! constraints, disruption mode), and calls [`AllowList::map_pod_group`] or [`AllowList::map_composite`]
//! with the path where the block lives in its API. The result is the item's user config, ready for
//! [`WorkloadItem::with_user_config`](crate::WorkloadItem::with_user_config); the same allow-list then goes
//! to [`WorkloadBuilder::allow`](crate::WorkloadBuilder::allow), so it is declared once.
//!
//! ## Empty blocks
//! KEP-6089 says of both unions "Exactly one ... must be set", and kube-apiserver rejects an empty union, so
//! an empty block (`schedulingPolicy: {}`, `disruptionMode: {}`) is **invalid** here too ("must specify one
//! of"). An omitted block (`None`) is what leaves the controller's default in place.
//!
//! ```
//! use k8s_openapi::api::scheduling::v1alpha3 as api;
//! use workloadbuilder::{AllowList, CompositeBlock, FieldPath, PolicyOption, SchedulingConfig};
//! use kwas_api_types::WorkloadCompositePodGroupSchedulingPolicy as Policy;
//!
//! let allow = AllowList::new().policies([PolicyOption::Basic, PolicyOption::Gang]);
//! let path = FieldPath::new("spec").child("scheduling");
//! let gang = Policy::gang(Some(2));
//! let block = CompositeBlock { scheduling_policy: Some(&gang), ..CompositeBlock::default() };
//! assert_eq!(allow.map_composite(Some(block), &path).unwrap(), Some(SchedulingConfig::gang(Some(2))));
//! assert_eq!(allow.map_composite(None, &path).unwrap(), None);
//! // An empty union is refused, at the user's field.
//! let empty = Policy::default();
//! let block = CompositeBlock { scheduling_policy: Some(&empty), ..CompositeBlock::default() };
//! assert_eq!(
//!     allow.map_composite(Some(block), &path).unwrap_err().to_string(),
//!     "spec.scheduling.schedulingPolicy: Invalid value: \"\": must specify one of: `basic`, `gang`"
//! );
//! // A leaf block, from a Job's `spec.scheduling`.
//! let job = k8s_openapi::api::batch::v1::JobSchedulingConfiguration::default();
//! assert_eq!(allow.map_pod_group(Some((&job).into()), &path).unwrap(), Some(SchedulingConfig::default()));
//! ```

use k8s_openapi::api::batch::v1::JobSchedulingConfiguration;
use k8s_openapi::api::scheduling::v1alpha3::{
    WorkloadPodGroupDisruptionMode, WorkloadPodGroupResourceClaim, WorkloadPodGroupSchedulingConstraints,
    WorkloadPodGroupSchedulingPolicy,
};
use kwas_api_types::{
    WorkloadCompositePodGroupDisruptionMode, WorkloadCompositePodGroupSchedulingConstraints,
    WorkloadCompositePodGroupSchedulingPolicy,
};

use crate::field::{FieldErrors, FieldPath};
use crate::mapconfig::{map_composite_group_config, map_pod_group_config};
use crate::types::{AllowList, SchedulingConfig};
use crate::validation::blocks::{
    validate_composite_disruption_mode, validate_composite_scheduling_constraints,
    validate_composite_scheduling_policy, validate_disruption_mode, validate_resource_claims,
    validate_scheduling_constraints, validate_scheduling_policy,
};

/// A leaf group's scheduling block (the fields of `JobSchedulingConfiguration`), borrowed from the
/// controller's API object. A `&JobSchedulingConfiguration` converts.
#[derive(Clone, Copy, Debug, Default)]
pub struct PodGroupBlock<'a> {
    /// `schedulingPolicy`.
    pub scheduling_policy: Option<&'a WorkloadPodGroupSchedulingPolicy>,
    /// `schedulingConstraints`.
    pub scheduling_constraints: Option<&'a WorkloadPodGroupSchedulingConstraints>,
    /// `disruptionMode`.
    pub disruption_mode: Option<&'a WorkloadPodGroupDisruptionMode>,
    /// `resourceClaims`.
    pub resource_claims: &'a [WorkloadPodGroupResourceClaim],
}

impl<'a> From<&'a JobSchedulingConfiguration> for PodGroupBlock<'a> {
    fn from(s: &'a JobSchedulingConfiguration) -> Self {
        Self {
            scheduling_policy: s.scheduling_policy.as_ref(),
            scheduling_constraints: s.scheduling_constraints.as_ref(),
            disruption_mode: s.disruption_mode.as_ref(),
            resource_claims: s.resource_claims.as_deref().unwrap_or_default(),
        }
    }
}

/// A composite group's scheduling block, borrowed from the controller's API object.
#[derive(Clone, Copy, Debug, Default)]
pub struct CompositeBlock<'a> {
    /// `schedulingPolicy` (`gang.minGroupCount`).
    pub scheduling_policy: Option<&'a WorkloadCompositePodGroupSchedulingPolicy>,
    /// `schedulingConstraints`.
    pub scheduling_constraints: Option<&'a WorkloadCompositePodGroupSchedulingConstraints>,
    /// `disruptionMode`.
    pub disruption_mode: Option<&'a WorkloadCompositePodGroupDisruptionMode>,
}

impl<'a> CompositeBlock<'a> {
    /// A block from its three fields, in the API's order (each has its own type: they cannot be swapped);
    /// each is an `Option<&T>` or a `&Option<T>`, as a controller's struct holds it.
    pub fn new(
        scheduling_policy: impl Into<Option<&'a WorkloadCompositePodGroupSchedulingPolicy>>,
        scheduling_constraints: impl Into<Option<&'a WorkloadCompositePodGroupSchedulingConstraints>>,
        disruption_mode: impl Into<Option<&'a WorkloadCompositePodGroupDisruptionMode>>,
    ) -> Self {
        Self {
            scheduling_policy: scheduling_policy.into(),
            scheduling_constraints: scheduling_constraints.into(),
            disruption_mode: disruption_mode.into(),
        }
    }
}

impl AllowList {
    /// Every rule on a leaf block at `path`: each union has exactly one member, and that member is allowed
    /// by this list; a set `gang.minCount` is at least 1; at most one topology constraint with a valid key;
    /// at most 4 resource claims with unique DNS-label names and one source each. Errors in that order.
    pub fn validate_pod_group(&self, block: &PodGroupBlock<'_>, path: &FieldPath) -> FieldErrors {
        let mut errs =
            validate_scheduling_policy(block.scheduling_policy, &path.child("schedulingPolicy"), &self.policies);
        errs.extend(validate_disruption_mode(
            block.disruption_mode,
            &path.child("disruptionMode"),
            &self.disruption_modes,
        ));
        errs.extend(validate_scheduling_constraints(
            block.scheduling_constraints,
            &path.child("schedulingConstraints"),
        ));
        errs.extend(validate_resource_claims(
            block.resource_claims,
            &path.child("resourceClaims"),
        ));
        errs
    }

    /// Every rule on a composite block at `path`: the rules of [`validate_pod_group`](Self::validate_pod_group)
    /// without claims (`gang.minGroupCount` for the count).
    pub fn validate_composite(&self, block: &CompositeBlock<'_>, path: &FieldPath) -> FieldErrors {
        let mut errs = validate_composite_scheduling_policy(
            block.scheduling_policy,
            &path.child("schedulingPolicy"),
            &self.policies,
        );
        errs.extend(validate_composite_disruption_mode(
            block.disruption_mode,
            &path.child("disruptionMode"),
            &self.disruption_modes,
        ));
        errs.extend(validate_composite_scheduling_constraints(
            block.scheduling_constraints,
            &path.child("schedulingConstraints"),
        ));
        errs
    }

    /// Validate ([`validate_pod_group`](Self::validate_pod_group)) and map a leaf block at `path` to the
    /// item's user config; `None` (the block omitted) maps to `None`.
    pub fn map_pod_group(
        &self,
        block: Option<PodGroupBlock<'_>>,
        path: &FieldPath,
    ) -> Result<Option<SchedulingConfig>, FieldErrors> {
        let Some(block) = block else { return Ok(None) };
        self.validate_pod_group(&block, path).into_result(())?;
        map_pod_group_config(
            block.scheduling_policy,
            block.scheduling_constraints,
            block.disruption_mode,
            block.resource_claims,
        )
        .map(Some)
        .map_err(|e| e.under(path))
    }

    /// Validate ([`validate_composite`](Self::validate_composite)) and map a composite block at `path` to the
    /// item's user config; `None` (the block omitted) maps to `None`.
    pub fn map_composite(
        &self,
        block: Option<CompositeBlock<'_>>,
        path: &FieldPath,
    ) -> Result<Option<SchedulingConfig>, FieldErrors> {
        let Some(block) = block else { return Ok(None) };
        self.validate_composite(&block, path).into_result(())?;
        map_composite_group_config(
            block.scheduling_policy,
            block.scheduling_constraints,
            block.disruption_mode,
        )
        .map(Some)
        .map_err(|e| e.under(path))
    }
}
