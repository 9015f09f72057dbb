//! kube-apiserver's create and update rules for `scheduling.k8s.io/v1alpha3` Workload, PodGroup and
//! CompositePodGroup, so that an emulated API server can enforce them and controllers can check objects
//! before they write them.
//!
//! The rules are the declarative ones of the v1alpha3 types (unions, list limits, required fields, formats,
//! minimums, immutability) and the hand-written Workload checks of `pkg/apis/scheduling/validation` (template
//! names unique across the tree, depth at most 4, one priority across the tree, every composite template has a
//! child). Messages and paths follow upstream.
//!
//! Update rules: `gang.minCount` of a PodGroup and of a Workload's PodGroupTemplates is mutable; switching a
//! group between basic and gang is rejected; template lists keep their membership; every other spec field of
//! these objects is immutable (CompositePodGroup `minGroupCount` included, as in the alpha API).
//!
//! ```
//! use k8s_openapi::api::scheduling::v1alpha3::{PodGroupSchedulingPolicy, PodGroupTemplate, Workload, WorkloadSpec};
//! use workloadbuilder::validation::validate_workload;
//!
//! let mut workload = Workload::default();
//! workload.metadata.name = Some("train".into());
//! workload.metadata.namespace = Some("default".into());
//! workload.spec = WorkloadSpec {
//!     pod_group_templates: Some(vec![PodGroupTemplate { name: "workers".into(), ..Default::default() }]),
//!     ..Default::default()
//! };
//! let errs = validate_workload(&workload);
//! assert_eq!(
//!     errs.to_string(),
//!     "spec.podGroupTemplates[0].schedulingPolicy: Invalid value: \"\": must specify one of: `basic`, `gang`"
//! );
//! ```

use k8s_openapi::api::scheduling::v1alpha3::{
    CompositeDisruptionMode, CompositePodGroupSchedulingConstraints, CompositePodGroupSchedulingPolicy, DisruptionMode,
    PodGroupResourceClaim, PodGroupSchedulingConstraints, PodGroupSchedulingPolicy, WorkloadReference,
};
use kwas_api_types::names::HIGHEST_USER_DEFINABLE_PRIORITY;

use super::blocks::{DISRUPTION_REQUIRED, MIN_ONE, POLICY_REQUIRED, check_claims, check_topology};
use super::strings::{is_dns1123_label, is_dns1123_subdomain};
use crate::field::{FieldError, FieldErrors, FieldPath};
use crate::mapconfig::{DISRUPTION_UNION, POLICY_UNION};

/// The maximum number of templates in each template list.
pub const MAX_TEMPLATES_PER_LIST: usize = 8;
/// The maximum depth of the template hierarchy (a top-level composite template is depth 1).
pub const MAX_TEMPLATE_DEPTH: usize = 4;

mod groups;
mod workload;

pub use groups::{
    validate_composite_pod_group, validate_composite_pod_group_status_update, validate_composite_pod_group_update,
    validate_pod_group, validate_pod_group_status_update, validate_pod_group_update,
};
pub use workload::{validate_workload, validate_workload_update};

pub(super) const IMMUTABLE: &str = "field is immutable";
pub(super) const MEMBERSHIP_IMMUTABLE: &str = "templates cannot be added or removed after the workload is created";
pub(super) const PREEMPTION_POLICIES: [&str; 2] = ["Never", "PreemptLowerPriority"];

pub(super) fn metadata() -> FieldPath {
    FieldPath::new("metadata")
}

pub(super) fn spec() -> FieldPath {
    FieldPath::new("spec")
}

// ---------------------------------------------------------------------------------------------------------
// Shared field checks.

pub(super) fn check_count(value: i32, path: FieldPath, errs: &mut FieldErrors) {
    if value == 0 {
        errs.push(FieldError::required(path, ""));
    } else if value < 0 {
        errs.push(FieldError::invalid(path, value, MIN_ONE));
    }
}

pub(super) fn check_pod_group_policy(p: &PodGroupSchedulingPolicy, path: &FieldPath, errs: &mut FieldErrors) {
    match (&p.basic, &p.gang) {
        (None, None) => errs.push(FieldError::invalid(path.clone(), "", POLICY_REQUIRED)),
        (Some(_), Some(_)) => errs.push(FieldError::invalid(path.clone(), "{basic, gang}", POLICY_UNION)),
        (None, Some(g)) => check_count(g.min_count, path.child("gang").child("minCount"), errs),
        (Some(_), None) => {}
    }
}

pub(super) fn check_composite_policy(p: &CompositePodGroupSchedulingPolicy, path: &FieldPath, errs: &mut FieldErrors) {
    match (&p.basic, &p.gang) {
        (None, None) => errs.push(FieldError::invalid(path.clone(), "", POLICY_REQUIRED)),
        (Some(_), Some(_)) => errs.push(FieldError::invalid(path.clone(), "{basic, gang}", POLICY_UNION)),
        (None, Some(g)) => check_count(g.min_group_count, path.child("gang").child("minGroupCount"), errs),
        (Some(_), None) => {}
    }
}

pub(super) fn check_disruption(single: bool, all: bool, path: &FieldPath, errs: &mut FieldErrors) {
    match (single, all) {
        (false, false) => errs.push(FieldError::invalid(path.clone(), "", DISRUPTION_REQUIRED)),
        (true, true) => errs.push(FieldError::invalid(path.clone(), "{single, all}", DISRUPTION_UNION)),
        _ => {}
    }
}

pub(super) fn check_pod_group_disruption(m: Option<&DisruptionMode>, path: &FieldPath, errs: &mut FieldErrors) {
    if let Some(m) = m {
        check_disruption(m.single.is_some(), m.all.is_some(), path, errs);
    }
}

pub(super) fn check_composite_disruption(
    m: Option<&CompositeDisruptionMode>,
    path: &FieldPath,
    errs: &mut FieldErrors,
) {
    if let Some(m) = m {
        check_disruption(m.single.is_some(), m.all.is_some(), path, errs);
    }
}

pub(super) fn check_priority(
    priority: Option<i32>,
    class: Option<&str>,
    preemption_policy: Option<&str>,
    path: &FieldPath,
    errs: &mut FieldErrors,
) {
    if let Some(p) = priority.filter(|p| *p > HIGHEST_USER_DEFINABLE_PRIORITY) {
        errs.push(FieldError::invalid(
            path.child("priority"),
            p,
            format!("must be less than or equal to {HIGHEST_USER_DEFINABLE_PRIORITY}"),
        ));
    }
    if let Some(class) = class.filter(|c| !c.is_empty()) {
        for msg in is_dns1123_subdomain(class) {
            errs.push(FieldError::invalid(path.child("priorityClassName"), class, msg));
        }
    }
    if let Some(policy) = preemption_policy.filter(|p| !PREEMPTION_POLICIES.contains(p)) {
        errs.push(FieldError::not_supported(
            path.child("preemptionPolicy"),
            policy,
            &PREEMPTION_POLICIES,
        ));
    }
}

pub(super) fn check_claim_list(claims: Option<&Vec<PodGroupResourceClaim>>, path: &FieldPath, errs: &mut FieldErrors) {
    let claims = claims.map(Vec::as_slice).unwrap_or_default();
    errs.extend(check_claims(
        claims.iter().map(|c| {
            (
                c.name.as_str(),
                c.resource_claim_name.as_deref(),
                c.resource_claim_template_name.as_deref(),
            )
        }),
        path,
    ));
}

pub(super) fn check_template_name(name: &str, path: &FieldPath, errs: &mut FieldErrors) {
    if name.is_empty() {
        errs.push(FieldError::required(path.child("name"), ""));
    } else {
        for msg in is_dns1123_label(name) {
            errs.push(FieldError::invalid(path.child("name"), name, msg));
        }
    }
}

pub(super) fn check_workload_ref(r: &WorkloadReference, path: &FieldPath, errs: &mut FieldErrors) {
    if r.workload_name.is_empty() {
        errs.push(FieldError::required(path.child("workloadName"), ""));
    } else {
        for msg in is_dns1123_subdomain(&r.workload_name) {
            errs.push(FieldError::invalid(
                path.child("workloadName"),
                r.workload_name.as_str(),
                msg,
            ));
        }
    }
    if r.template_name.is_empty() {
        errs.push(FieldError::required(path.child("templateName"), ""));
    } else {
        for msg in is_dns1123_label(&r.template_name) {
            errs.push(FieldError::invalid(
                path.child("templateName"),
                r.template_name.as_str(),
                msg,
            ));
        }
    }
}

pub(super) fn check_parent(parent: Option<&str>, path: &FieldPath, errs: &mut FieldErrors) {
    if let Some(parent) = parent {
        if parent.is_empty() {
            errs.push(FieldError::required(path.clone(), ""));
        }
        for msg in is_dns1123_subdomain(parent).into_iter().filter(|_| !parent.is_empty()) {
            errs.push(FieldError::invalid(path.clone(), parent, msg));
        }
    }
}

pub(super) fn topology(
    list: Option<&Vec<k8s_openapi::api::scheduling::v1alpha3::TopologyConstraint>>,
) -> &[k8s_openapi::api::scheduling::v1alpha3::TopologyConstraint] {
    list.map(Vec::as_slice).unwrap_or_default()
}

pub(super) fn check_pod_group_constraints(
    c: Option<&PodGroupSchedulingConstraints>,
    path: &FieldPath,
    errs: &mut FieldErrors,
) {
    if let Some(c) = c {
        errs.extend(check_topology(topology(c.topology.as_ref()), &path.child("topology")));
    }
}

pub(super) fn check_composite_constraints(
    c: Option<&CompositePodGroupSchedulingConstraints>,
    path: &FieldPath,
    errs: &mut FieldErrors,
) {
    if let Some(c) = c {
        errs.extend(check_topology(topology(c.topology.as_ref()), &path.child("topology")));
    }
}
