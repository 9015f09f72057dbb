//! PodGroups and CompositePodGroups: create, update and status-update validation.

use k8s_openapi::api::scheduling::v1alpha3::{CompositePodGroup, PodGroup};

use super::super::meta::{NameFormat, validate_conditions, validate_object_meta, validate_object_meta_update};
use crate::field::{FieldError, FieldErrors, FieldPath};

use super::workload::*;
use super::*;

// ---------------------------------------------------------------------------------------------------------
// PodGroup.

/// kube-apiserver's create validation of a PodGroup.
pub fn validate_pod_group(pod_group: &PodGroup) -> FieldErrors {
    let mut errs = validate_object_meta(&pod_group.metadata, true, NameFormat::Subdomain, &metadata());
    let s = spec();
    let sp = &pod_group.spec;
    if let Some(r) = &sp.workload_ref {
        check_workload_ref(r, &s.child("workloadRef"), &mut errs);
    }
    check_parent(
        sp.parent_composite_pod_group_name.as_deref(),
        &s.child("parentCompositePodGroupName"),
        &mut errs,
    );
    if sp.parent_composite_pod_group_name.is_some() && sp.workload_ref.is_none() {
        errs.push(FieldError::required(
            s.child("workloadRef"),
            "must be set when `parentCompositePodGroupName` is set",
        ));
    }
    check_pod_group_policy(&sp.scheduling_policy, &s.child("schedulingPolicy"), &mut errs);
    check_pod_group_constraints(
        sp.scheduling_constraints.as_ref(),
        &s.child("schedulingConstraints"),
        &mut errs,
    );
    check_pod_group_disruption(sp.disruption_mode.as_ref(), &s.child("disruptionMode"), &mut errs);
    check_claim_list(sp.resource_claims.as_ref(), &s.child("resourceClaims"), &mut errs);
    check_priority(
        sp.priority,
        sp.priority_class_name.as_deref(),
        sp.preemption_policy.as_deref(),
        &s,
        &mut errs,
    );
    errs
}

/// kube-apiserver's update validation of a PodGroup: only `schedulingPolicy.gang.minCount` may change.
pub fn validate_pod_group_update(new: &PodGroup, old: &PodGroup) -> FieldErrors {
    let mut errs = validate_object_meta_update(&new.metadata, &old.metadata, true, NameFormat::Subdomain, &metadata());
    errs.extend(
        validate_pod_group(new)
            .into_iter()
            .filter(|e| !e.field.as_str().starts_with("metadata.")),
    );
    let s = spec();
    let (n, o) = (&new.spec, &old.spec);
    immutable(&n.workload_ref, &o.workload_ref, s.child("workloadRef"), &mut errs);
    immutable(
        &n.parent_composite_pod_group_name,
        &o.parent_composite_pod_group_name,
        s.child("parentCompositePodGroupName"),
        &mut errs,
    );
    pod_group_policy_update(
        &n.scheduling_policy,
        &o.scheduling_policy,
        &s.child("schedulingPolicy"),
        &mut errs,
    );
    immutable(
        &n.scheduling_constraints,
        &o.scheduling_constraints,
        s.child("schedulingConstraints"),
        &mut errs,
    );
    immutable(
        &n.disruption_mode,
        &o.disruption_mode,
        s.child("disruptionMode"),
        &mut errs,
    );
    immutable(
        &n.resource_claims,
        &o.resource_claims,
        s.child("resourceClaims"),
        &mut errs,
    );
    immutable(&n.priority, &o.priority, s.child("priority"), &mut errs);
    immutable(
        &n.priority_class_name,
        &o.priority_class_name,
        s.child("priorityClassName"),
        &mut errs,
    );
    immutable(
        &n.preemption_policy,
        &o.preemption_policy,
        s.child("preemptionPolicy"),
        &mut errs,
    );
    errs
}

/// kube-apiserver's validation of a PodGroup status update: valid conditions, and resource claim statuses
/// that name claims of the spec.
pub fn validate_pod_group_status_update(new: &PodGroup, old: &PodGroup) -> FieldErrors {
    let mut errs = validate_object_meta_update(&new.metadata, &old.metadata, true, NameFormat::Subdomain, &metadata());
    let status = FieldPath::new("status");
    if let Some(st) = &new.status {
        errs.extend(validate_conditions(
            st.conditions.as_deref().unwrap_or_default(),
            &status.child("conditions"),
        ));
        let claims = new.spec.resource_claims.as_deref().unwrap_or_default();
        for (i, cs) in st.resource_claim_statuses.iter().flatten().enumerate() {
            if !claims.iter().any(|c| c.name == cs.name) {
                errs.push(FieldError::invalid(
                    status.child("resourceClaimStatuses").index(i).child("name"),
                    cs.name.as_str(),
                    "must match the name of an entry in `spec.resourceClaims`",
                ));
            }
        }
    }
    errs
}

// ---------------------------------------------------------------------------------------------------------
// CompositePodGroup.

/// kube-apiserver's create validation of a CompositePodGroup.
pub fn validate_composite_pod_group(group: &CompositePodGroup) -> FieldErrors {
    let mut errs = validate_object_meta(&group.metadata, true, NameFormat::Subdomain, &metadata());
    let s = spec();
    let sp = &group.spec;
    check_workload_ref(&sp.workload_ref, &s.child("workloadRef"), &mut errs);
    check_parent(
        sp.parent_composite_pod_group_name.as_deref(),
        &s.child("parentCompositePodGroupName"),
        &mut errs,
    );
    check_composite_policy(&sp.scheduling_policy, &s.child("schedulingPolicy"), &mut errs);
    check_composite_constraints(
        sp.scheduling_constraints.as_ref(),
        &s.child("schedulingConstraints"),
        &mut errs,
    );
    check_composite_disruption(sp.disruption_mode.as_ref(), &s.child("disruptionMode"), &mut errs);
    check_priority(
        sp.priority,
        sp.priority_class_name.as_deref(),
        sp.preemption_policy.as_deref(),
        &s,
        &mut errs,
    );
    errs
}

/// kube-apiserver's update validation of a CompositePodGroup: the whole spec is immutable.
pub fn validate_composite_pod_group_update(new: &CompositePodGroup, old: &CompositePodGroup) -> FieldErrors {
    let mut errs = validate_object_meta_update(&new.metadata, &old.metadata, true, NameFormat::Subdomain, &metadata());
    errs.extend(
        validate_composite_pod_group(new)
            .into_iter()
            .filter(|e| !e.field.as_str().starts_with("metadata.")),
    );
    let s = spec();
    let (n, o) = (&new.spec, &old.spec);
    immutable(&n.workload_ref, &o.workload_ref, s.child("workloadRef"), &mut errs);
    immutable(
        &n.parent_composite_pod_group_name,
        &o.parent_composite_pod_group_name,
        s.child("parentCompositePodGroupName"),
        &mut errs,
    );
    composite_policy_update(
        &n.scheduling_policy,
        &o.scheduling_policy,
        &s.child("schedulingPolicy"),
        &mut errs,
    );
    immutable(
        &n.scheduling_constraints,
        &o.scheduling_constraints,
        s.child("schedulingConstraints"),
        &mut errs,
    );
    immutable(
        &n.disruption_mode,
        &o.disruption_mode,
        s.child("disruptionMode"),
        &mut errs,
    );
    immutable(&n.priority, &o.priority, s.child("priority"), &mut errs);
    immutable(
        &n.priority_class_name,
        &o.priority_class_name,
        s.child("priorityClassName"),
        &mut errs,
    );
    immutable(
        &n.preemption_policy,
        &o.preemption_policy,
        s.child("preemptionPolicy"),
        &mut errs,
    );
    errs
}

/// kube-apiserver's validation of a CompositePodGroup status update: valid conditions.
pub fn validate_composite_pod_group_status_update(new: &CompositePodGroup, old: &CompositePodGroup) -> FieldErrors {
    let mut errs = validate_object_meta_update(&new.metadata, &old.metadata, true, NameFormat::Subdomain, &metadata());
    if let Some(st) = &new.status {
        errs.extend(validate_conditions(
            st.conditions.as_deref().unwrap_or_default(),
            &FieldPath::new("status").child("conditions"),
        ));
    }
    errs
}
