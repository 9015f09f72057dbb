//! Validation of the API building blocks a controller embeds in its own API, with the controller's
//! allow-lists (KEP-6089 "Controller Opt-In"), plus the field checks shared with the Workload rules.
//!
//! Controllers reach them through [`AllowList::validate_pod_group`](crate::AllowList::validate_pod_group) and
//! [`AllowList::validate_composite`](crate::AllowList::validate_composite).

use std::collections::BTreeSet;

use k8s_openapi::api::scheduling::v1alpha3::{
    TopologyConstraint, WorkloadPodGroupDisruptionMode, WorkloadPodGroupResourceClaim,
    WorkloadPodGroupSchedulingConstraints, WorkloadPodGroupSchedulingPolicy,
};
use kwas_api_types::{
    WorkloadCompositePodGroupDisruptionMode, WorkloadCompositePodGroupSchedulingConstraints,
    WorkloadCompositePodGroupSchedulingPolicy,
};

use super::strings::{is_dns1123_label, is_dns1123_subdomain, is_qualified_name};
use crate::field::{FieldError, FieldErrors, FieldPath};
use crate::mapconfig::{DISRUPTION_UNION, POLICY_UNION};
use crate::messages::{disruption_mode_not_supported, policy_not_supported};
use crate::types::{DisruptionModeOption, PolicyOption};

/// The API's limit on topology constraints per group.
pub const MAX_TOPOLOGY_CONSTRAINTS: usize = 1;
/// The API's limit on resource claims per PodGroup.
pub const MAX_RESOURCE_CLAIMS: usize = 4;

pub(crate) const MIN_ONE: &str = "must be greater than or equal to 1";
/// kube-apiserver's union rule for a policy block with no member.
pub(crate) const POLICY_REQUIRED: &str = "must specify one of: `basic`, `gang`";
/// kube-apiserver's union rule for a disruption-mode block with no member.
pub(crate) const DISRUPTION_REQUIRED: &str = "must specify one of: `single`, `all`";
pub(crate) const CLAIM_SOURCE_UNION: &str =
    "must specify exactly one of: `resourceClaimName`, `resourceClaimTemplateName`";

fn check_policy_members(
    basic: bool,
    gang_count: Option<Option<i32>>,
    count_field: &str,
    path: &FieldPath,
    allowed: &[PolicyOption],
) -> FieldErrors {
    let mut errs = FieldErrors::new();
    match (basic, gang_count) {
        (true, Some(_)) => errs.push(FieldError::invalid(path.clone(), "{basic, gang}", POLICY_UNION)),
        (true, None) => {
            if !allowed.contains(&PolicyOption::Basic) {
                errs.push(FieldError::forbidden(
                    path.clone(),
                    policy_not_supported(PolicyOption::Basic),
                ));
            }
        }
        (false, Some(count)) => {
            if !allowed.contains(&PolicyOption::Gang) {
                errs.push(FieldError::forbidden(
                    path.clone(),
                    policy_not_supported(PolicyOption::Gang),
                ));
            }
            if let Some(n) = count.filter(|n| *n < 1) {
                errs.push(FieldError::invalid(path.child("gang").child(count_field), n, MIN_ONE));
            }
        }
        (false, None) => errs.push(FieldError::invalid(path.clone(), "", POLICY_REQUIRED)),
    }
    errs
}

fn check_disruption_members(
    single: bool,
    all: bool,
    path: &FieldPath,
    allowed: &[DisruptionModeOption],
) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let chosen = match (single, all) {
        (true, true) => {
            errs.push(FieldError::invalid(path.clone(), "{single, all}", DISRUPTION_UNION));
            None
        }
        (true, false) => Some(DisruptionModeOption::Single),
        (false, true) => Some(DisruptionModeOption::All),
        (false, false) => {
            errs.push(FieldError::invalid(path.clone(), "", DISRUPTION_REQUIRED));
            None
        }
    };
    if let Some(option) = chosen.filter(|o| !allowed.contains(o)) {
        errs.push(FieldError::forbidden(
            path.clone(),
            disruption_mode_not_supported(option),
        ));
    }
    errs
}

/// `ValidateSchedulingPolicy`: a leaf policy block has at most one member, the member is allowed, and a set
/// `gang.minCount` is >= 1. An unset block is valid (the controller's default applies); an empty one
/// (`schedulingPolicy: {}`) is not, as kube-apiserver's union rule says ("must specify one of").
pub fn validate_scheduling_policy(
    policy: Option<&WorkloadPodGroupSchedulingPolicy>,
    path: &FieldPath,
    allowed: &[PolicyOption],
) -> FieldErrors {
    let Some(p) = policy else { return FieldErrors::new() };
    check_policy_members(
        p.basic.is_some(),
        p.gang.as_ref().map(|g| g.min_count),
        "minCount",
        path,
        allowed,
    )
}

/// The composite twin of [`validate_scheduling_policy`] (`gang.minGroupCount`).
pub fn validate_composite_scheduling_policy(
    policy: Option<&WorkloadCompositePodGroupSchedulingPolicy>,
    path: &FieldPath,
    allowed: &[PolicyOption],
) -> FieldErrors {
    let Some(p) = policy else { return FieldErrors::new() };
    check_policy_members(
        p.basic.is_some(),
        p.gang.as_ref().map(|g| g.min_group_count),
        "minGroupCount",
        path,
        allowed,
    )
}

/// `ValidateDisruptionMode`: exactly one member, and the member is allowed. Unset is valid; empty
/// (`disruptionMode: {}`) is not ("must specify one of"), as kube-apiserver says.
pub fn validate_disruption_mode(
    mode: Option<&WorkloadPodGroupDisruptionMode>,
    path: &FieldPath,
    allowed: &[DisruptionModeOption],
) -> FieldErrors {
    let Some(m) = mode else { return FieldErrors::new() };
    check_disruption_members(m.single.is_some(), m.all.is_some(), path, allowed)
}

/// The composite twin of [`validate_disruption_mode`].
pub fn validate_composite_disruption_mode(
    mode: Option<&WorkloadCompositePodGroupDisruptionMode>,
    path: &FieldPath,
    allowed: &[DisruptionModeOption],
) -> FieldErrors {
    let Some(m) = mode else { return FieldErrors::new() };
    check_disruption_members(m.single.is_some(), m.all.is_some(), path, allowed)
}

/// Leaf constraints: at most one topology constraint whose key is a valid label key.
pub fn validate_scheduling_constraints(
    constraints: Option<&WorkloadPodGroupSchedulingConstraints>,
    path: &FieldPath,
) -> FieldErrors {
    check_topology(
        constraints.and_then(|c| c.topology.as_deref()).unwrap_or_default(),
        &path.child("topology"),
    )
}

/// Composite constraints: at most one topology constraint whose key is a valid label key.
pub fn validate_composite_scheduling_constraints(
    constraints: Option<&WorkloadCompositePodGroupSchedulingConstraints>,
    path: &FieldPath,
) -> FieldErrors {
    check_topology(
        constraints.and_then(|c| c.topology.as_deref()).unwrap_or_default(),
        &path.child("topology"),
    )
}

/// Resource claims: at most 4, unique DNS-label names, exactly one source each.
pub fn validate_resource_claims(claims: &[WorkloadPodGroupResourceClaim], path: &FieldPath) -> FieldErrors {
    check_claims(
        claims.iter().map(|c| {
            (
                c.name.as_str(),
                c.resource_claim_name.as_deref(),
                c.resource_claim_template_name.as_deref(),
            )
        }),
        path,
    )
}

/// Topology list of a group at `path` (the `topology` field itself).
pub(crate) fn check_topology(topology: &[TopologyConstraint], path: &FieldPath) -> FieldErrors {
    let mut errs = FieldErrors::new();
    if topology.len() > MAX_TOPOLOGY_CONSTRAINTS {
        errs.push(FieldError::too_many(
            path.clone(),
            topology.len(),
            MAX_TOPOLOGY_CONSTRAINTS,
        ));
    }
    for (i, t) in topology.iter().enumerate() {
        let p = path.index(i).child("key");
        if t.key.is_empty() {
            errs.push(FieldError::required(p, ""));
        } else {
            for msg in is_qualified_name(&t.key) {
                errs.push(FieldError::invalid(p.clone(), t.key.as_str(), msg));
            }
        }
    }
    errs
}

/// Resource claims given as `(name, resourceClaimName, resourceClaimTemplateName)` at `path` (the list).
pub(crate) fn check_claims<'a>(
    claims: impl ExactSizeIterator<Item = (&'a str, Option<&'a str>, Option<&'a str>)>,
    path: &FieldPath,
) -> FieldErrors {
    let mut errs = FieldErrors::new();
    if claims.len() > MAX_RESOURCE_CLAIMS {
        errs.push(FieldError::too_many(path.clone(), claims.len(), MAX_RESOURCE_CLAIMS));
    }
    let mut names = BTreeSet::new();
    for (i, (name, claim, template)) in claims.enumerate() {
        let p = path.index(i);
        if name.is_empty() {
            errs.push(FieldError::required(p.child("name"), ""));
        } else {
            for msg in is_dns1123_label(name) {
                errs.push(FieldError::invalid(p.child("name"), name, msg));
            }
            if !names.insert(name) {
                errs.push(FieldError::duplicate(p.child("name"), name));
            }
        }
        match (claim.filter(|s| !s.is_empty()), template.filter(|s| !s.is_empty())) {
            (None, None) => errs.push(FieldError::invalid(p.clone(), "", CLAIM_SOURCE_UNION)),
            (Some(_), Some(_)) => errs.push(FieldError::invalid(
                p.clone(),
                "{resourceClaimName, resourceClaimTemplateName}",
                CLAIM_SOURCE_UNION,
            )),
            (Some(c), None) => {
                for msg in is_dns1123_subdomain(c) {
                    errs.push(FieldError::invalid(p.child("resourceClaimName"), c, msg));
                }
            }
            (None, Some(t)) => {
                for msg in is_dns1123_subdomain(t) {
                    errs.push(FieldError::invalid(p.child("resourceClaimTemplateName"), t, msg));
                }
            }
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::FieldErrorType;
    use k8s_openapi::api::scheduling::v1alpha3 as api;
    use serde_json::json;

    const ALL_POLICIES: [PolicyOption; 2] = [PolicyOption::Basic, PolicyOption::Gang];
    const ALL_MODES: [DisruptionModeOption; 2] = [DisruptionModeOption::Single, DisruptionModeOption::All];

    fn basic() -> api::WorkloadPodGroupSchedulingPolicy {
        api::WorkloadPodGroupSchedulingPolicy {
            basic: Some(api::WorkloadPodGroupBasicSchedulingPolicy(json!({}))),
            gang: None,
        }
    }

    fn gang(n: Option<i32>) -> api::WorkloadPodGroupSchedulingPolicy {
        api::WorkloadPodGroupSchedulingPolicy {
            basic: None,
            gang: Some(api::WorkloadPodGroupGangSchedulingPolicy { min_count: n }),
        }
    }

    fn path() -> FieldPath {
        FieldPath::new("spec").child("scheduling").child("schedulingPolicy")
    }

    #[test]
    fn policy_allow_list() {
        assert!(validate_scheduling_policy(None, &path(), &[]).is_empty());
        // An empty block is kube-apiserver's union error, whatever the allow-list.
        assert_eq!(
            validate_scheduling_policy(Some(&Default::default()), &path(), &ALL_POLICIES).to_string(),
            "spec.scheduling.schedulingPolicy: Invalid value: \"\": must specify one of: `basic`, `gang`"
        );
        let mode = FieldPath::new("spec").child("scheduling").child("disruptionMode");
        assert_eq!(
            validate_disruption_mode(Some(&Default::default()), &mode, &[DisruptionModeOption::Single]).to_string(),
            "spec.scheduling.disruptionMode: Invalid value: \"\": must specify one of: `single`, `all`"
        );
        assert!(validate_scheduling_policy(Some(&basic()), &path(), &ALL_POLICIES).is_empty());
        assert!(validate_scheduling_policy(Some(&gang(None)), &path(), &ALL_POLICIES).is_empty());
        assert_eq!(
            validate_scheduling_policy(Some(&basic()), &path(), &[PolicyOption::Gang]).to_string(),
            "spec.scheduling.schedulingPolicy: Forbidden: basic scheduling policy is not supported by this controller"
        );
        let errs = validate_scheduling_policy(Some(&gang(Some(0))), &path(), &ALL_POLICIES);
        assert_eq!(
            errs.to_string(),
            "spec.scheduling.schedulingPolicy.gang.minCount: Invalid value: 0: must be greater than or equal to 1"
        );
        let mut both = basic();
        both.gang = gang(Some(1)).gang;
        let errs = validate_scheduling_policy(Some(&both), &path(), &ALL_POLICIES);
        assert!(errs.contains(FieldErrorType::Invalid, "spec.scheduling.schedulingPolicy"));
    }

    #[test]
    fn composite_policy_allow_list() {
        let p = FieldPath::new("spec").child("scheduling").child("schedulingPolicy");
        let gang = WorkloadCompositePodGroupSchedulingPolicy::gang(Some(-1));
        let errs = validate_composite_scheduling_policy(Some(&gang), &p, &[PolicyOption::Basic]);
        assert!(errs.contains(FieldErrorType::Forbidden, "spec.scheduling.schedulingPolicy"));
        assert!(errs.contains(
            FieldErrorType::Invalid,
            "spec.scheduling.schedulingPolicy.gang.minGroupCount"
        ));
        let ok = WorkloadCompositePodGroupSchedulingPolicy::basic();
        assert!(validate_composite_scheduling_policy(Some(&ok), &p, &[PolicyOption::Basic]).is_empty());
    }

    #[test]
    fn disruption_allow_list() {
        let p = FieldPath::new("spec").child("scheduling").child("disruptionMode");
        let all = api::WorkloadPodGroupDisruptionMode {
            all: Some(api::WorkloadPodGroupAllDisruptionMode(json!({}))),
            single: None,
        };
        assert!(validate_disruption_mode(Some(&all), &p, &ALL_MODES).is_empty());
        assert_eq!(
            validate_disruption_mode(Some(&all), &p, &[DisruptionModeOption::Single]).to_string(),
            "spec.scheduling.disruptionMode: Forbidden: the disruptionMode `all` is not supported by this controller"
        );
        let single = WorkloadCompositePodGroupDisruptionMode::single();
        assert_eq!(
            validate_composite_disruption_mode(Some(&single), &p, &[DisruptionModeOption::All]).to_string(),
            "spec.scheduling.disruptionMode: Forbidden: the disruptionMode `single` is not supported by this \
             controller"
        );
        let both = WorkloadCompositePodGroupDisruptionMode {
            single: single.single.clone(),
            all: WorkloadCompositePodGroupDisruptionMode::all().all,
        };
        assert!(
            validate_composite_disruption_mode(Some(&both), &p, &[DisruptionModeOption::All])
                .contains(FieldErrorType::Invalid, "spec.scheduling.disruptionMode")
        );
    }

    #[test]
    fn constraints() {
        let p = FieldPath::new("spec")
            .child("scheduling")
            .child("schedulingConstraints");
        let one = api::WorkloadPodGroupSchedulingConstraints {
            topology: Some(vec![TopologyConstraint {
                key: "kwas.dev/rack".into(),
            }]),
        };
        assert!(validate_scheduling_constraints(Some(&one), &p).is_empty());
        let bad = api::WorkloadPodGroupSchedulingConstraints {
            topology: Some(vec![
                TopologyConstraint { key: "".into() },
                TopologyConstraint { key: "bad key".into() },
            ]),
        };
        let errs = validate_scheduling_constraints(Some(&bad), &p);
        assert!(errs.contains(
            FieldErrorType::TooMany,
            "spec.scheduling.schedulingConstraints.topology"
        ));
        assert!(errs.contains(
            FieldErrorType::Required,
            "spec.scheduling.schedulingConstraints.topology[0].key"
        ));
        assert!(errs.contains(
            FieldErrorType::Invalid,
            "spec.scheduling.schedulingConstraints.topology[1].key"
        ));
        let composite = WorkloadCompositePodGroupSchedulingConstraints::topology("Bad/Prefix/x");
        assert!(
            validate_composite_scheduling_constraints(Some(&composite), &p).contains(
                FieldErrorType::Invalid,
                "spec.scheduling.schedulingConstraints.topology[0].key"
            )
        );
    }

    #[test]
    fn claims() {
        let p = FieldPath::new("spec").child("scheduling").child("resourceClaims");
        let claim = |name: &str, c: Option<&str>, t: Option<&str>| api::WorkloadPodGroupResourceClaim {
            name: name.into(),
            resource_claim_name: c.map(Into::into),
            resource_claim_template_name: t.map(Into::into),
        };
        assert!(validate_resource_claims(&[claim("gpu", Some("c"), None)], &p).is_empty());
        let errs = validate_resource_claims(
            &[
                claim("gpu", Some("c"), Some("t")),
                claim("gpu", None, None),
                claim("", Some("c"), None),
                claim("x", Some("c"), None),
                claim("y", Some("c"), None),
            ],
            &p,
        );
        assert!(errs.contains(FieldErrorType::TooMany, "spec.scheduling.resourceClaims"));
        assert!(errs.contains(FieldErrorType::Invalid, "spec.scheduling.resourceClaims[0]"));
        assert!(errs.contains(FieldErrorType::Duplicate, "spec.scheduling.resourceClaims[1].name"));
        assert!(errs.contains(FieldErrorType::Invalid, "spec.scheduling.resourceClaims[1]"));
        assert!(errs.contains(FieldErrorType::Required, "spec.scheduling.resourceClaims[2].name"));
    }
}
