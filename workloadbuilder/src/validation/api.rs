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
//! use workloadbuilder::validate_workload;
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

use std::collections::BTreeSet;

use k8s_openapi::api::scheduling::v1alpha3::{
    CompositeDisruptionMode, CompositePodGroup, CompositePodGroupSchedulingConstraints,
    CompositePodGroupSchedulingPolicy, CompositePodGroupTemplate, DisruptionMode, PodGroup, PodGroupResourceClaim,
    PodGroupSchedulingConstraints, PodGroupSchedulingPolicy, PodGroupTemplate, Workload, WorkloadReference,
    WorkloadSpec,
};
use kwas_api::names::HIGHEST_USER_DEFINABLE_PRIORITY;

use super::blocks::{MIN_ONE, check_claims, check_topology};
use super::meta::{NameFormat, validate_conditions, validate_object_meta, validate_object_meta_update};
use super::strings::{is_dns1123_label, is_dns1123_subdomain};
use crate::field::{BadValue, FieldError, FieldErrors, FieldPath};
use crate::mapconfig::{DISRUPTION_UNION, POLICY_UNION};

/// The maximum number of templates in each template list.
pub const MAX_TEMPLATES_PER_LIST: usize = 8;
/// The maximum depth of the template hierarchy (a top-level composite template is depth 1).
pub const MAX_TEMPLATE_DEPTH: usize = 4;

const IMMUTABLE: &str = "field is immutable";
const MEMBERSHIP_IMMUTABLE: &str = "templates cannot be added or removed after the workload is created";
const PREEMPTION_POLICIES: [&str; 2] = ["Never", "PreemptLowerPriority"];

fn metadata() -> FieldPath {
    FieldPath::new("metadata")
}

fn spec() -> FieldPath {
    FieldPath::new("spec")
}

// ---------------------------------------------------------------------------------------------------------
// Shared field checks.

fn check_count(value: i32, path: FieldPath, errs: &mut FieldErrors) {
    if value == 0 {
        errs.push(FieldError::required(path, ""));
    } else if value < 0 {
        errs.push(FieldError::invalid(path, value, MIN_ONE));
    }
}

fn check_pod_group_policy(p: &PodGroupSchedulingPolicy, path: &FieldPath, errs: &mut FieldErrors) {
    match (&p.basic, &p.gang) {
        (None, None) => errs.push(FieldError::invalid(
            path.clone(),
            "",
            "must specify one of: `basic`, `gang`",
        )),
        (Some(_), Some(_)) => errs.push(FieldError::invalid(path.clone(), "{basic, gang}", POLICY_UNION)),
        (None, Some(g)) => check_count(g.min_count, path.child("gang").child("minCount"), errs),
        (Some(_), None) => {}
    }
}

fn check_composite_policy(p: &CompositePodGroupSchedulingPolicy, path: &FieldPath, errs: &mut FieldErrors) {
    match (&p.basic, &p.gang) {
        (None, None) => errs.push(FieldError::invalid(
            path.clone(),
            "",
            "must specify one of: `basic`, `gang`",
        )),
        (Some(_), Some(_)) => errs.push(FieldError::invalid(path.clone(), "{basic, gang}", POLICY_UNION)),
        (None, Some(g)) => check_count(g.min_group_count, path.child("gang").child("minGroupCount"), errs),
        (Some(_), None) => {}
    }
}

fn check_disruption(single: bool, all: bool, path: &FieldPath, errs: &mut FieldErrors) {
    match (single, all) {
        (false, false) => errs.push(FieldError::invalid(
            path.clone(),
            "",
            "must specify one of: `single`, `all`",
        )),
        (true, true) => errs.push(FieldError::invalid(path.clone(), "{single, all}", DISRUPTION_UNION)),
        _ => {}
    }
}

fn check_pod_group_disruption(m: Option<&DisruptionMode>, path: &FieldPath, errs: &mut FieldErrors) {
    if let Some(m) = m {
        check_disruption(m.single.is_some(), m.all.is_some(), path, errs);
    }
}

fn check_composite_disruption(m: Option<&CompositeDisruptionMode>, path: &FieldPath, errs: &mut FieldErrors) {
    if let Some(m) = m {
        check_disruption(m.single.is_some(), m.all.is_some(), path, errs);
    }
}

fn check_priority(
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

fn check_claim_list(claims: Option<&Vec<PodGroupResourceClaim>>, path: &FieldPath, errs: &mut FieldErrors) {
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

fn check_template_name(name: &str, path: &FieldPath, errs: &mut FieldErrors) {
    if name.is_empty() {
        errs.push(FieldError::required(path.child("name"), ""));
    } else {
        for msg in is_dns1123_label(name) {
            errs.push(FieldError::invalid(path.child("name"), name, msg));
        }
    }
}

fn check_workload_ref(r: &WorkloadReference, path: &FieldPath, errs: &mut FieldErrors) {
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

fn check_parent(parent: Option<&str>, path: &FieldPath, errs: &mut FieldErrors) {
    if let Some(parent) = parent {
        if parent.is_empty() {
            errs.push(FieldError::required(path.clone(), ""));
        }
        for msg in is_dns1123_subdomain(parent).into_iter().filter(|_| !parent.is_empty()) {
            errs.push(FieldError::invalid(path.clone(), parent, msg));
        }
    }
}

fn topology(
    list: Option<&Vec<k8s_openapi::api::scheduling::v1alpha3::TopologyConstraint>>,
) -> &[k8s_openapi::api::scheduling::v1alpha3::TopologyConstraint] {
    list.map(Vec::as_slice).unwrap_or_default()
}

fn check_pod_group_constraints(c: Option<&PodGroupSchedulingConstraints>, path: &FieldPath, errs: &mut FieldErrors) {
    if let Some(c) = c {
        errs.extend(check_topology(topology(c.topology.as_ref()), &path.child("topology")));
    }
}

fn check_composite_constraints(
    c: Option<&CompositePodGroupSchedulingConstraints>,
    path: &FieldPath,
    errs: &mut FieldErrors,
) {
    if let Some(c) = c {
        errs.extend(check_topology(topology(c.topology.as_ref()), &path.child("topology")));
    }
}

// ---------------------------------------------------------------------------------------------------------
// Workload.

fn check_pod_group_template(t: &PodGroupTemplate, path: &FieldPath, errs: &mut FieldErrors) {
    check_template_name(&t.name, path, errs);
    check_pod_group_policy(&t.scheduling_policy, &path.child("schedulingPolicy"), errs);
    check_pod_group_constraints(
        t.scheduling_constraints.as_ref(),
        &path.child("schedulingConstraints"),
        errs,
    );
    check_pod_group_disruption(t.disruption_mode.as_ref(), &path.child("disruptionMode"), errs);
    check_claim_list(t.resource_claims.as_ref(), &path.child("resourceClaims"), errs);
    check_priority(
        t.priority,
        t.priority_class_name.as_deref(),
        t.preemption_policy.as_deref(),
        path,
        errs,
    );
}

fn check_list_names<'a>(names: impl Iterator<Item = &'a str>, path: &FieldPath, errs: &mut FieldErrors) {
    let mut seen = BTreeSet::new();
    for (i, name) in names.enumerate() {
        if !name.is_empty() && !seen.insert(name) {
            errs.push(FieldError::duplicate(path.index(i).child("name"), name));
        }
    }
}

fn check_pod_group_template_list(list: &[PodGroupTemplate], path: &FieldPath, errs: &mut FieldErrors) {
    if list.len() > MAX_TEMPLATES_PER_LIST {
        errs.push(FieldError::too_many(path.clone(), list.len(), MAX_TEMPLATES_PER_LIST));
    }
    check_list_names(list.iter().map(|t| t.name.as_str()), path, errs);
    for (i, t) in list.iter().enumerate() {
        check_pod_group_template(t, &path.index(i), errs);
    }
}

fn check_composite_template_list(
    list: &[CompositePodGroupTemplate],
    path: &FieldPath,
    depth: usize,
    errs: &mut FieldErrors,
) {
    if list.len() > MAX_TEMPLATES_PER_LIST {
        errs.push(FieldError::too_many(path.clone(), list.len(), MAX_TEMPLATES_PER_LIST));
    }
    check_list_names(list.iter().map(|t| t.name.as_str()), path, errs);
    for (i, t) in list.iter().enumerate() {
        let p = path.index(i);
        check_template_name(&t.name, &p, errs);
        check_composite_policy(&t.scheduling_policy, &p.child("schedulingPolicy"), errs);
        check_composite_constraints(
            t.scheduling_constraints.as_ref(),
            &p.child("schedulingConstraints"),
            errs,
        );
        check_composite_disruption(t.disruption_mode.as_ref(), &p.child("disruptionMode"), errs);
        check_priority(
            t.priority,
            t.priority_class_name.as_deref(),
            t.preemption_policy.as_deref(),
            &p,
            errs,
        );
        check_pod_group_template_list(
            t.pod_group_templates.as_deref().unwrap_or_default(),
            &p.child("podGroupTemplates"),
            errs,
        );
        // The depth rule reports trees that are too deep; stop descending well past the limit so that
        // adversarial nesting cannot drive the recursion.
        if depth <= MAX_TEMPLATE_DEPTH {
            check_composite_template_list(
                t.composite_pod_group_templates.as_deref().unwrap_or_default(),
                &p.child("compositePodGroupTemplates"),
                depth + 1,
                errs,
            );
        }
    }
}

/// Upstream's cross-list uniqueness walk (`validateWorkloadTemplateNamesUniqueness`): a name already used by
/// an earlier list in the tree is a `Duplicate` at the later path. Duplicates inside one list are reported by
/// the list rule.
fn check_names_unique(spec: &WorkloadSpec, path: &FieldPath, errs: &mut FieldErrors) {
    let mut names: BTreeSet<&str> = BTreeSet::new();
    for t in spec.pod_group_templates.iter().flatten() {
        names.insert(&t.name);
    }
    fn composite_list<'a>(
        list: &'a [CompositePodGroupTemplate],
        path: &FieldPath,
        names: &mut BTreeSet<&'a str>,
        depth: usize,
        errs: &mut FieldErrors,
    ) {
        let mut list_names = BTreeSet::new();
        for (i, t) in list.iter().enumerate() {
            if names.contains(t.name.as_str()) {
                errs.push(FieldError::duplicate(
                    path.child("compositePodGroupTemplates").index(i).child("name"),
                    t.name.as_str(),
                ));
            }
            list_names.insert(t.name.as_str());
        }
        names.extend(list_names);
        if depth > MAX_TEMPLATE_DEPTH + 1 {
            return;
        }
        for (i, t) in list.iter().enumerate() {
            let p = path.child("compositePodGroupTemplates").index(i);
            let mut leaf_names = BTreeSet::new();
            for (j, leaf) in t.pod_group_templates.iter().flatten().enumerate() {
                if names.contains(leaf.name.as_str()) {
                    errs.push(FieldError::duplicate(
                        p.child("podGroupTemplates").index(j).child("name"),
                        leaf.name.as_str(),
                    ));
                }
                leaf_names.insert(leaf.name.as_str());
            }
            names.extend(leaf_names);
            composite_list(
                t.composite_pod_group_templates.as_deref().unwrap_or_default(),
                &p,
                names,
                depth + 1,
                errs,
            );
        }
    }
    composite_list(
        spec.composite_pod_group_templates.as_deref().unwrap_or_default(),
        path,
        &mut names,
        1,
        errs,
    );
}

fn too_deep(t: &CompositePodGroupTemplate, depth: usize) -> bool {
    depth >= MAX_TEMPLATE_DEPTH
        || t.composite_pod_group_templates
            .iter()
            .flatten()
            .any(|c| too_deep(c, depth + 1))
}

fn check_depth(spec: &WorkloadSpec, path: &FieldPath, errs: &mut FieldErrors) {
    for (i, t) in spec.composite_pod_group_templates.iter().flatten().enumerate() {
        if too_deep(t, 1) {
            errs.push(FieldError::invalid(
                path.index(i),
                BadValue::Omitted,
                format!("maximum template hierarchy depth is {MAX_TEMPLATE_DEPTH}"),
            ));
        }
    }
}

fn check_workload_priority(spec: &WorkloadSpec, path: &FieldPath, errs: &mut FieldErrors) {
    type Pair<'a> = (&'a str, Option<i32>);
    fn pair(class: Option<&str>, priority: Option<i32>) -> Pair<'_> {
        (class.unwrap_or(""), priority)
    }
    fn walk<'a>(t: &'a CompositePodGroupTemplate, out: &mut Vec<Pair<'a>>, depth: usize) {
        out.push(pair(t.priority_class_name.as_deref(), t.priority));
        if depth <= MAX_TEMPLATE_DEPTH {
            for c in t.composite_pod_group_templates.iter().flatten() {
                walk(c, out, depth + 1);
            }
        }
        for p in t.pod_group_templates.iter().flatten() {
            out.push(pair(p.priority_class_name.as_deref(), p.priority));
        }
    }
    let leaves: Vec<Pair<'_>> = spec
        .pod_group_templates
        .iter()
        .flatten()
        .map(|t| pair(t.priority_class_name.as_deref(), t.priority))
        .collect();
    let first = leaves.first().copied();
    if leaves.iter().any(|p| Some(*p) != first) {
        errs.push(FieldError::invalid(
            path.clone(),
            BadValue::Null,
            "detected multiple priority configurations",
        ));
        return;
    }
    let mut composite = Vec::new();
    for t in spec.composite_pod_group_templates.iter().flatten() {
        walk(t, &mut composite, 1);
    }
    let first = first.or_else(|| composite.first().copied());
    if composite.iter().any(|p| Some(*p) != first) {
        errs.push(FieldError::invalid(
            path.clone(),
            BadValue::Null,
            "all priority and priorityClassName values must be identical, detected multiple values",
        ));
    }
}

fn check_has_child(t: &CompositePodGroupTemplate, path: &FieldPath, depth: usize, errs: &mut FieldErrors) {
    let leaves = t.pod_group_templates.as_deref().unwrap_or_default();
    let composites = t.composite_pod_group_templates.as_deref().unwrap_or_default();
    if leaves.is_empty() && composites.is_empty() {
        errs.push(FieldError::invalid(
            path.clone(),
            t.name.as_str(),
            "must have at least one child PodGroupTemplate or CompositePodGroupTemplate",
        ));
    }
    if depth <= MAX_TEMPLATE_DEPTH {
        for (i, c) in composites.iter().enumerate() {
            check_has_child(c, &path.child("compositePodGroupTemplates").index(i), depth + 1, errs);
        }
    }
}

fn check_workload_spec(spec: &WorkloadSpec, path: &FieldPath) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let leaves = spec.pod_group_templates.as_deref().unwrap_or_default();
    let composites = spec.composite_pod_group_templates.as_deref().unwrap_or_default();
    match (leaves.is_empty(), composites.is_empty()) {
        (true, true) => errs.push(FieldError::invalid(
            path.clone(),
            "",
            "must specify one of: `podGroupTemplates`, `compositePodGroupTemplates`",
        )),
        (false, false) => errs.push(FieldError::invalid(
            path.clone(),
            "{podGroupTemplates, compositePodGroupTemplates}",
            "must specify exactly one of: `podGroupTemplates`, `compositePodGroupTemplates`",
        )),
        _ => {}
    }
    check_pod_group_template_list(leaves, &path.child("podGroupTemplates"), &mut errs);
    check_composite_template_list(composites, &path.child("compositePodGroupTemplates"), 1, &mut errs);
    check_names_unique(spec, path, &mut errs);
    check_depth(spec, &path.child("compositePodGroupTemplates"), &mut errs);
    check_workload_priority(spec, path, &mut errs);
    for (i, t) in composites.iter().enumerate() {
        check_has_child(t, &path.child("compositePodGroupTemplates").index(i), 1, &mut errs);
    }
    if let Some(r) = &spec.controller_ref {
        let p = path.child("controllerRef");
        if r.kind.is_empty() {
            errs.push(FieldError::required(p.child("kind"), ""));
        }
        if r.name.is_empty() {
            errs.push(FieldError::required(p.child("name"), ""));
        }
        if let Some(group) = r.api_group.as_deref().filter(|g| !g.is_empty()) {
            for msg in is_dns1123_subdomain(group) {
                errs.push(FieldError::invalid(p.child("apiGroup"), group, msg));
            }
        }
    }
    errs
}

/// kube-apiserver's create validation of a Workload.
pub fn validate_workload(workload: &Workload) -> FieldErrors {
    let mut errs = validate_object_meta(&workload.metadata, true, NameFormat::Subdomain, &metadata());
    errs.extend(check_workload_spec(&workload.spec, &spec()));
    errs
}

fn immutable<T: PartialEq>(new: &T, old: &T, path: FieldPath, errs: &mut FieldErrors) {
    if new != old {
        errs.push(FieldError::forbidden(path, IMMUTABLE));
    }
}

fn pod_group_policy_update(
    new: &PodGroupSchedulingPolicy,
    old: &PodGroupSchedulingPolicy,
    path: &FieldPath,
    errs: &mut FieldErrors,
) {
    immutable(&new.basic.is_some(), &old.basic.is_some(), path.child("basic"), errs);
    immutable(&new.gang.is_some(), &old.gang.is_some(), path.child("gang"), errs);
}

fn composite_policy_update(
    new: &CompositePodGroupSchedulingPolicy,
    old: &CompositePodGroupSchedulingPolicy,
    path: &FieldPath,
    errs: &mut FieldErrors,
) {
    immutable(&new.basic.is_some(), &old.basic.is_some(), path.child("basic"), errs);
    immutable(&new.gang.is_some(), &old.gang.is_some(), path.child("gang"), errs);
    if let (Some(n), Some(o)) = (&new.gang, &old.gang) {
        immutable(
            &n.min_group_count,
            &o.min_group_count,
            path.child("gang").child("minGroupCount"),
            errs,
        );
    }
}

fn pod_group_template_update(new: &PodGroupTemplate, old: &PodGroupTemplate, path: &FieldPath, errs: &mut FieldErrors) {
    pod_group_policy_update(
        &new.scheduling_policy,
        &old.scheduling_policy,
        &path.child("schedulingPolicy"),
        errs,
    );
    immutable(
        &new.scheduling_constraints,
        &old.scheduling_constraints,
        path.child("schedulingConstraints"),
        errs,
    );
    immutable(
        &new.disruption_mode,
        &old.disruption_mode,
        path.child("disruptionMode"),
        errs,
    );
    immutable(
        &new.resource_claims,
        &old.resource_claims,
        path.child("resourceClaims"),
        errs,
    );
    immutable(&new.priority, &old.priority, path.child("priority"), errs);
    immutable(
        &new.priority_class_name,
        &old.priority_class_name,
        path.child("priorityClassName"),
        errs,
    );
    immutable(
        &new.preemption_policy,
        &old.preemption_policy,
        path.child("preemptionPolicy"),
        errs,
    );
}

fn same_membership<'a>(new: impl Iterator<Item = &'a str>, old: impl Iterator<Item = &'a str>) -> bool {
    new.collect::<BTreeSet<_>>() == old.collect::<BTreeSet<_>>()
}

fn pod_group_template_list_update(
    new: &[PodGroupTemplate],
    old: &[PodGroupTemplate],
    path: &FieldPath,
    errs: &mut FieldErrors,
) {
    if !same_membership(new.iter().map(|t| t.name.as_str()), old.iter().map(|t| t.name.as_str())) {
        errs.push(FieldError::forbidden(path.clone(), MEMBERSHIP_IMMUTABLE));
        return;
    }
    for (i, n) in new.iter().enumerate() {
        if let Some(o) = old.iter().find(|o| o.name == n.name) {
            pod_group_template_update(n, o, &path.index(i), errs);
        }
    }
}

fn composite_template_list_update(
    new: &[CompositePodGroupTemplate],
    old: &[CompositePodGroupTemplate],
    path: &FieldPath,
    depth: usize,
    errs: &mut FieldErrors,
) {
    if !same_membership(new.iter().map(|t| t.name.as_str()), old.iter().map(|t| t.name.as_str())) {
        errs.push(FieldError::forbidden(path.clone(), MEMBERSHIP_IMMUTABLE));
        return;
    }
    for (i, n) in new.iter().enumerate() {
        let Some(o) = old.iter().find(|o| o.name == n.name) else {
            continue;
        };
        let p = path.index(i);
        composite_policy_update(
            &n.scheduling_policy,
            &o.scheduling_policy,
            &p.child("schedulingPolicy"),
            errs,
        );
        immutable(
            &n.scheduling_constraints,
            &o.scheduling_constraints,
            p.child("schedulingConstraints"),
            errs,
        );
        immutable(&n.disruption_mode, &o.disruption_mode, p.child("disruptionMode"), errs);
        immutable(&n.priority, &o.priority, p.child("priority"), errs);
        immutable(
            &n.priority_class_name,
            &o.priority_class_name,
            p.child("priorityClassName"),
            errs,
        );
        immutable(
            &n.preemption_policy,
            &o.preemption_policy,
            p.child("preemptionPolicy"),
            errs,
        );
        pod_group_template_list_update(
            n.pod_group_templates.as_deref().unwrap_or_default(),
            o.pod_group_templates.as_deref().unwrap_or_default(),
            &p.child("podGroupTemplates"),
            errs,
        );
        if depth <= MAX_TEMPLATE_DEPTH {
            composite_template_list_update(
                n.composite_pod_group_templates.as_deref().unwrap_or_default(),
                o.composite_pod_group_templates.as_deref().unwrap_or_default(),
                &p.child("compositePodGroupTemplates"),
                depth + 1,
                errs,
            );
        }
    }
}

/// kube-apiserver's update validation of a Workload: the new object is valid, template membership and every
/// template field but `gang.minCount` are unchanged, and `controllerRef` is unchanged.
pub fn validate_workload_update(new: &Workload, old: &Workload) -> FieldErrors {
    let mut errs = validate_object_meta_update(&new.metadata, &old.metadata, true, NameFormat::Subdomain, &metadata());
    errs.extend(check_workload_spec(&new.spec, &spec()));
    let s = spec();
    immutable(
        &new.spec.controller_ref,
        &old.spec.controller_ref,
        s.child("controllerRef"),
        &mut errs,
    );
    pod_group_template_list_update(
        new.spec.pod_group_templates.as_deref().unwrap_or_default(),
        old.spec.pod_group_templates.as_deref().unwrap_or_default(),
        &s.child("podGroupTemplates"),
        &mut errs,
    );
    composite_template_list_update(
        new.spec.composite_pod_group_templates.as_deref().unwrap_or_default(),
        old.spec.composite_pod_group_templates.as_deref().unwrap_or_default(),
        &s.child("compositePodGroupTemplates"),
        1,
        &mut errs,
    );
    errs
}

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
