//! Workloads: the template tree (names, depth, children, priority) and its update rules.

use std::collections::BTreeSet;

use k8s_openapi::api::scheduling::v1alpha3::{
    CompositePodGroupSchedulingPolicy, CompositePodGroupTemplate, PodGroupSchedulingPolicy, PodGroupTemplate, Workload,
    WorkloadSpec,
};

use super::super::meta::{NameFormat, validate_object_meta, validate_object_meta_update};
use super::super::strings::is_dns1123_subdomain;
use crate::field::{BadValue, FieldError, FieldErrors, FieldPath};

use super::*;

// ---------------------------------------------------------------------------------------------------------
// Workload.

pub(super) fn check_pod_group_template(t: &PodGroupTemplate, path: &FieldPath, errs: &mut FieldErrors) {
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

pub(super) fn check_list_names<'a>(names: impl Iterator<Item = &'a str>, path: &FieldPath, errs: &mut FieldErrors) {
    let mut seen = BTreeSet::new();
    for (i, name) in names.enumerate() {
        if !name.is_empty() && !seen.insert(name) {
            errs.push(FieldError::duplicate(path.index(i).child("name"), name));
        }
    }
}

pub(super) fn check_pod_group_template_list(list: &[PodGroupTemplate], path: &FieldPath, errs: &mut FieldErrors) {
    if list.len() > MAX_TEMPLATES_PER_LIST {
        errs.push(FieldError::too_many(path.clone(), list.len(), MAX_TEMPLATES_PER_LIST));
    }
    check_list_names(list.iter().map(|t| t.name.as_str()), path, errs);
    for (i, t) in list.iter().enumerate() {
        check_pod_group_template(t, &path.index(i), errs);
    }
}

pub(super) fn check_composite_template_list(
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
pub(super) fn check_names_unique(spec: &WorkloadSpec, path: &FieldPath, errs: &mut FieldErrors) {
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

pub(super) fn too_deep(t: &CompositePodGroupTemplate, depth: usize) -> bool {
    depth >= MAX_TEMPLATE_DEPTH
        || t.composite_pod_group_templates
            .iter()
            .flatten()
            .any(|c| too_deep(c, depth + 1))
}

pub(super) fn check_depth(spec: &WorkloadSpec, path: &FieldPath, errs: &mut FieldErrors) {
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

pub(super) fn check_workload_priority(spec: &WorkloadSpec, path: &FieldPath, errs: &mut FieldErrors) {
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

pub(super) fn check_has_child(t: &CompositePodGroupTemplate, path: &FieldPath, depth: usize, errs: &mut FieldErrors) {
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

pub(super) fn check_workload_spec(spec: &WorkloadSpec, path: &FieldPath) -> FieldErrors {
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

pub(super) fn immutable<T: PartialEq>(new: &T, old: &T, path: FieldPath, errs: &mut FieldErrors) {
    if new != old {
        errs.push(FieldError::forbidden(path, IMMUTABLE));
    }
}

pub(super) fn pod_group_policy_update(
    new: &PodGroupSchedulingPolicy,
    old: &PodGroupSchedulingPolicy,
    path: &FieldPath,
    errs: &mut FieldErrors,
) {
    immutable(&new.basic.is_some(), &old.basic.is_some(), path.child("basic"), errs);
    immutable(&new.gang.is_some(), &old.gang.is_some(), path.child("gang"), errs);
}

pub(super) fn composite_policy_update(
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

pub(super) fn pod_group_template_update(
    new: &PodGroupTemplate,
    old: &PodGroupTemplate,
    path: &FieldPath,
    errs: &mut FieldErrors,
) {
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

pub(super) fn same_membership<'a>(new: impl Iterator<Item = &'a str>, old: impl Iterator<Item = &'a str>) -> bool {
    new.collect::<BTreeSet<_>>() == old.collect::<BTreeSet<_>>()
}

pub(super) fn pod_group_template_list_update(
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

pub(super) fn composite_template_list_update(
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
