//! Map helpers: the API building blocks (`scheduling.k8s.io/v1alpha3`) to the IR.
//!
//! An empty block (`schedulingPolicy: {}`, `schedulingConstraints: {}` or an empty `topology`,
//! `disruptionMode: {}`) maps to "unset", so the controller's default survives resolution. A union block with
//! more than one member set cannot be represented in the IR: mapping it fails with the same error
//! the block validation reports. Controllers call them through [`AllowList::map_pod_group`](crate::AllowList::map_pod_group)
//! and [`AllowList::map_composite`](crate::AllowList::map_composite), which validate first (so an empty block never
//! reaches them from there). Error paths are relative to the block that holds the building blocks, using the upstream member
//! names (`schedulingPolicy`, `disruptionMode`); re-root them with [`FieldErrors::under`].
//!

use k8s_openapi::api::scheduling::v1alpha3::{
    TopologyConstraint, WorkloadPodGroupDisruptionMode, WorkloadPodGroupResourceClaim,
    WorkloadPodGroupSchedulingConstraints, WorkloadPodGroupSchedulingPolicy,
};
use kwas_api_types::{
    WorkloadCompositePodGroupDisruptionMode, WorkloadCompositePodGroupSchedulingConstraints,
    WorkloadCompositePodGroupSchedulingPolicy,
};

use crate::field::{FieldError, FieldErrors, FieldPath};
use crate::types::{Disruption, GangPolicy, ResourceClaim, SchedulingConfig, SchedulingConstraints, SchedulingPolicy};

pub(crate) const POLICY_UNION: &str = "must specify exactly one of: `basic`, `gang`";
pub(crate) const DISRUPTION_UNION: &str = "must specify exactly one of: `single`, `all`";

fn map_policy(basic: bool, gang: Option<Option<i32>>, errs: &mut FieldErrors) -> Option<SchedulingPolicy> {
    match (basic, gang) {
        (false, None) => None,
        (true, None) => Some(SchedulingPolicy::Basic),
        (false, Some(min_count)) => Some(SchedulingPolicy::Gang(GangPolicy { min_count })),
        (true, Some(_)) => {
            errs.push(FieldError::invalid(
                FieldPath::new("schedulingPolicy"),
                "{basic, gang}",
                POLICY_UNION,
            ));
            None
        }
    }
}

fn map_disruption(single: bool, all: bool, errs: &mut FieldErrors) -> Option<Disruption> {
    match (single, all) {
        (false, false) => None,
        (true, false) => Some(Disruption::Single),
        (false, true) => Some(Disruption::All),
        (true, true) => {
            errs.push(FieldError::invalid(
                FieldPath::new("disruptionMode"),
                "{single, all}",
                DISRUPTION_UNION,
            ));
            None
        }
    }
}

fn map_topology(topology: Option<&Vec<TopologyConstraint>>) -> Option<SchedulingConstraints> {
    topology
        .filter(|t| !t.is_empty())
        .map(|t| SchedulingConstraints { topology: t.clone() })
}

/// `MapPodGroupConfig`: leaf building blocks (as in `JobSpec.scheduling`) to the IR.
pub fn map_pod_group_config(
    policy: Option<&WorkloadPodGroupSchedulingPolicy>,
    constraints: Option<&WorkloadPodGroupSchedulingConstraints>,
    disruption: Option<&WorkloadPodGroupDisruptionMode>,
    claims: &[WorkloadPodGroupResourceClaim],
) -> Result<SchedulingConfig, FieldErrors> {
    let mut errs = FieldErrors::new();
    let policy = policy.and_then(|p| map_policy(p.basic.is_some(), p.gang.as_ref().map(|g| g.min_count), &mut errs));
    let disruption_mode = disruption.and_then(|d| map_disruption(d.single.is_some(), d.all.is_some(), &mut errs));
    let config = SchedulingConfig {
        policy,
        constraints: constraints.and_then(|c| map_topology(c.topology.as_ref())),
        disruption_mode,
        resource_claims: claims
            .iter()
            .map(|c| ResourceClaim {
                name: c.name.clone(),
                resource_claim_name: c.resource_claim_name.clone(),
                resource_claim_template_name: c.resource_claim_template_name.clone(),
            })
            .collect(),
        priority_class_name: None,
    };
    errs.into_result(config)
}

/// `MapCompositeGroupConfig`: composite building blocks to the IR (`minGroupCount` becomes the gang count).
pub fn map_composite_group_config(
    policy: Option<&WorkloadCompositePodGroupSchedulingPolicy>,
    constraints: Option<&WorkloadCompositePodGroupSchedulingConstraints>,
    disruption: Option<&WorkloadCompositePodGroupDisruptionMode>,
) -> Result<SchedulingConfig, FieldErrors> {
    let mut errs = FieldErrors::new();
    let policy =
        policy.and_then(|p| map_policy(p.basic.is_some(), p.gang.as_ref().map(|g| g.min_group_count), &mut errs));
    let disruption_mode = disruption.and_then(|d| map_disruption(d.single.is_some(), d.all.is_some(), &mut errs));
    let config = SchedulingConfig {
        policy,
        constraints: constraints.and_then(|c| map_topology(c.topology.as_ref())),
        disruption_mode,
        resource_claims: Vec::new(),
        priority_class_name: None,
    };
    errs.into_result(config)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::scheduling::v1alpha3 as api;
    use serde_json::json;

    #[test]
    fn maps_every_leaf_block() {
        let policy = api::WorkloadPodGroupSchedulingPolicy {
            basic: None,
            gang: Some(api::WorkloadPodGroupGangSchedulingPolicy { min_count: Some(4) }),
        };
        let constraints = api::WorkloadPodGroupSchedulingConstraints {
            topology: Some(vec![TopologyConstraint {
                key: "topology.kubernetes.io/zone".into(),
            }]),
        };
        let disruption = api::WorkloadPodGroupDisruptionMode {
            all: Some(api::WorkloadPodGroupAllDisruptionMode(json!({}))),
            single: None,
        };
        let claims = vec![api::WorkloadPodGroupResourceClaim {
            name: "gpus".into(),
            resource_claim_name: None,
            resource_claim_template_name: Some("gpu-template".into()),
        }];
        let cfg = map_pod_group_config(Some(&policy), Some(&constraints), Some(&disruption), &claims).unwrap();
        assert_eq!(
            cfg,
            SchedulingConfig::gang(Some(4))
                .with_topology("topology.kubernetes.io/zone")
                .with_disruption_mode(Disruption::All)
                .with_resource_claim(ResourceClaim {
                    name: "gpus".into(),
                    resource_claim_name: None,
                    resource_claim_template_name: Some("gpu-template".into()),
                })
        );
    }

    #[test]
    fn empty_blocks_are_unset() {
        let cfg = map_pod_group_config(
            Some(&api::WorkloadPodGroupSchedulingPolicy::default()),
            Some(&api::WorkloadPodGroupSchedulingConstraints { topology: Some(vec![]) }),
            Some(&api::WorkloadPodGroupDisruptionMode::default()),
            &[],
        )
        .unwrap();
        assert_eq!(cfg, SchedulingConfig::default());
        let cfg = map_composite_group_config(
            Some(&WorkloadCompositePodGroupSchedulingPolicy::default()),
            Some(&WorkloadCompositePodGroupSchedulingConstraints::default()),
            Some(&WorkloadCompositePodGroupDisruptionMode::default()),
        )
        .unwrap();
        assert_eq!(cfg, SchedulingConfig::default());
    }

    #[test]
    fn maps_composite_blocks() {
        let cfg = map_composite_group_config(
            Some(&WorkloadCompositePodGroupSchedulingPolicy::gang(Some(3))),
            Some(&WorkloadCompositePodGroupSchedulingConstraints::topology(
                "kwas.dev/block",
            )),
            Some(&WorkloadCompositePodGroupDisruptionMode::single()),
        )
        .unwrap();
        assert_eq!(
            cfg,
            SchedulingConfig::gang(Some(3))
                .with_topology("kwas.dev/block")
                .with_disruption_mode(Disruption::Single)
        );
        let basic = map_composite_group_config(Some(&WorkloadCompositePodGroupSchedulingPolicy::basic()), None, None);
        assert_eq!(basic.unwrap(), SchedulingConfig::basic());
    }

    #[test]
    fn conflicting_unions_fail_with_paths() {
        let both = api::WorkloadPodGroupSchedulingPolicy {
            basic: Some(api::WorkloadPodGroupBasicSchedulingPolicy(json!({}))),
            gang: Some(api::WorkloadPodGroupGangSchedulingPolicy { min_count: None }),
        };
        let modes = api::WorkloadPodGroupDisruptionMode {
            all: Some(api::WorkloadPodGroupAllDisruptionMode(json!({}))),
            single: Some(api::WorkloadPodGroupSingleDisruptionMode(json!({}))),
        };
        let errs = map_pod_group_config(Some(&both), None, Some(&modes), &[]).unwrap_err();
        let errs = errs.under(&FieldPath::new("spec").child("scheduling"));
        assert_eq!(
            errs.to_string(),
            "[spec.scheduling.schedulingPolicy: Invalid value: \"{basic, gang}\": must specify exactly one of: \
             `basic`, `gang`, spec.scheduling.disruptionMode: Invalid value: \"{single, all}\": must specify \
             exactly one of: `single`, `all`]"
        );
    }
}
