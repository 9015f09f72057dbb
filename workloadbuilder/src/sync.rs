//! Re-syncing live scheduling objects to a desired Workload, as a pure plan (KEP-6089 "updating
//! `gang.minCount` triggers recompilation of the Workload and re-sync of the PodGroup"; KEP-5547 "Handling
//! Updates and Mutability").
//!
//! Once created, a Workload and its groups change in one way only: a leaf gang's `minCount` (in the
//! Workload's PodGroupTemplate and in each PodGroup made from it). [`plan_sync`] compares what a controller
//! wants with what is live and says:
//! - which templates of the live Workload get a new `minCount` ([`SyncPlan::workload`]), with the JSON patch
//!   that writes it guarded by the template's name;
//! - which PodGroups get a new `minCount` ([`SyncPlan::pod_groups`]), with the merge patch;
//! - which differences the API server would refuse ([`SyncPlan::impossible`]): the Workload's (kube-apiserver's
//!   Workload update rules between the desired spec and the live one) and each group's (its template against
//!   the group, with the PodGroup / CompositePodGroup update rules, so a CompositePodGroup's `minGroupCount`
//!   is among them). Every error has the origin stage [`Stage::Sync`];
//! - which groups it leaves alone ([`SyncPlan::unmatched`]): those of another Workload or of a template the
//!   target does not have;
//! - which templates of the target have no group among the given ones ([`SyncPlan::missing`]): create
//!   their groups (a controller that makes several groups per template checks its own names with
//!   [`SyncPlan::missing_groups`]);
//! - when the API would refuse the Workload's update, how to replace it ([`SyncPlan::replace`]): delete the
//!   listed PodGroups, then the CompositePodGroups, then the Workload, and create the desired ones (a
//!   Workload's spec is immutable except its gang counts, so replacing is the only way to change it).
//!
//! The target counts are the desired Workload's when the controller compiled the live one (it owns it), the
//! live Workload's own otherwise (`desired: None`: a Workload another controller owns is never patched, its
//! groups follow its templates). A count is only ever written when it is at least 1. The `minCount` patches
//! are valid on their own whatever else differs; whether to apply them while something is impossible is the
//! controller's choice (the JobSet controller applies nothing then, the Job controller still follows its gang
//! size).
//!
//! ```
//! use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
//! use workloadbuilder::sync::{plan_sync, SyncInput};
//! use workloadbuilder::{new_pod_group, AllowList, GroupName, PolicyOption, SchedulingConfig, WorkloadBuilder, WorkloadItem};
//!
//! let owner = OwnerReference {
//!     api_version: "batch/v1".into(), kind: "Job".into(), name: "train".into(), uid: "u".into(),
//!     controller: Some(true), block_owner_deletion: Some(true),
//! };
//! let build = |n| WorkloadBuilder::new(WorkloadItem::new("train-pgt-0").with_default(SchedulingConfig::gang(Some(n))))
//!     .allow(AllowList::new().policies([PolicyOption::Gang]))
//!     .build("train-wl", "ml", &owner)
//!     .unwrap();
//! let (live, desired) = (build(4), build(8)); // the user raised parallelism from 4 to 8
//! let group = new_pod_group(&live, "train-pgt-0", &GroupName::new("train-pg"), None, vec![]).unwrap();
//! let plan = plan_sync(SyncInput {
//!     desired: Some(&desired),
//!     live: &live,
//!     pod_groups: std::slice::from_ref(&group),
//!     composite_pod_groups: &[],
//! });
//! let patch: Vec<_> = plan.workload_patches().map(|p| (p.template.as_str(), p.live, p.desired)).collect();
//! assert_eq!(patch, [("train-pgt-0", 4, 8)]);
//! assert_eq!(plan.pod_group_patches().next().map(|g| g.desired), Some(8));
//! assert!(plan.impossible.is_empty());
//! ```

use k8s_openapi::api::scheduling::v1alpha3::{
    CompositePodGroup, CompositePodGroupTemplate, PodGroup, PodGroupTemplate, Workload,
};
use serde_json::{Value, json};

use crate::field::{ErrorOrigin, FieldErrors, Stage};
use crate::names::GroupName;
use crate::podgroup::{TemplateRef, find_template};
use crate::validation::api::{
    validate_composite_pod_group_update, validate_pod_group_update, validate_workload_update,
};

/// What the plan is computed from.
#[derive(Clone, Copy, Debug)]
pub struct SyncInput<'a> {
    /// The Workload the controller compiles now, when it owns the live one; `None` when it does not (the
    /// live templates are then the target and the Workload is not patched).
    pub desired: Option<&'a Workload>,
    /// The live Workload.
    pub live: &'a Workload,
    /// Live PodGroups the controller manages (those of other Workloads or templates are left alone).
    pub pod_groups: &'a [PodGroup],
    /// Live CompositePodGroups the controller manages (checked only: their spec is immutable).
    pub composite_pod_groups: &'a [CompositePodGroup],
}

/// The `minCount` of one PodGroupTemplate of the live Workload, live and desired.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TemplateMinCount {
    /// The template's name.
    pub template: String,
    /// The JSON pointer of the template in the Workload (`/spec/compositePodGroupTemplates/0/podGroupTemplates/1`).
    pub pointer: String,
    /// The live count.
    pub live: i32,
    /// The desired count (at least 1).
    pub desired: i32,
}

impl TemplateMinCount {
    /// True when the live count differs from the desired one.
    pub fn is_change(&self) -> bool {
        self.live != self.desired
    }

    /// The JSON patch (RFC 6902) that writes the desired count, guarded by a test of the template's name so a
    /// concurrent change of the list cannot move the write to another template.
    pub fn json_patch(&self) -> Value {
        json!([
            {"op": "test", "path": format!("{}/name", self.pointer), "value": self.template},
            {"op": "replace", "path": format!("{}/schedulingPolicy/gang/minCount", self.pointer), "value": self.desired},
        ])
    }
}

/// The `minCount` of one live PodGroup, live and desired.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupMinCount {
    /// The PodGroup's name.
    pub name: String,
    /// The template it was made from.
    pub template: String,
    /// The live count.
    pub live: i32,
    /// The desired count (at least 1).
    pub desired: i32,
}

impl GroupMinCount {
    /// True when the live count differs from the desired one.
    pub fn is_change(&self) -> bool {
        self.live != self.desired
    }

    /// The merge patch (RFC 7386) that writes the desired count.
    pub fn merge_patch(&self) -> Value {
        json!({"spec": {"schedulingPolicy": {"gang": {"minCount": self.desired}}}})
    }
}

/// A change the API server would refuse, on one object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejection {
    /// `Workload`, `PodGroup` or `CompositePodGroup`.
    pub kind: &'static str,
    /// The object's name.
    pub name: String,
    /// What cannot change, as kube-apiserver reports it (origin stage [`Stage::Sync`]).
    pub errors: FieldErrors,
}

/// What re-syncing the live objects takes; see the [module docs](self).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SyncPlan {
    /// Every leaf gang template of the desired Workload that is a gang in the live one too, in pre-order
    /// (empty without a desired Workload). [`SyncPlan::workload_patches`] keeps those that change.
    pub workload: Vec<TemplateMinCount>,
    /// Every given PodGroup that is a gang made from a leaf gang template of the target, in the given
    /// order. [`SyncPlan::pod_group_patches`] keeps those that change.
    pub pod_groups: Vec<GroupMinCount>,
    /// Differences the API server would refuse.
    pub impossible: Vec<Rejection>,
    /// Names of the given groups the plan leaves alone: they reference another Workload, or a template the
    /// target does not have (or one of the other kind).
    pub unmatched: Vec<String>,
    /// Templates of the target (pre-order, composite and leaf) that no given group was made from.
    pub missing: Vec<String>,
    /// When the live Workload cannot take the desired spec ([`SyncPlan::workload_rejection`]): what to
    /// delete so that the desired Workload and its groups can be created in its place.
    pub replace: Option<Replacement>,
    /// Names of the given groups made from the target's templates (the others are [`unmatched`](Self::unmatched)).
    pub matched: Vec<String>,
}

/// How to replace a Workload the API would refuse to update: delete the groups made from it (PodGroups
/// first, then CompositePodGroups, children before parents), then the Workload itself; then create the
/// desired Workload and instantiate its groups again.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Replacement {
    /// The live Workload's name.
    pub workload: String,
    /// The given PodGroups made from the live Workload, to delete first.
    pub pod_groups: Vec<String>,
    /// The given CompositePodGroups made from the live Workload, deepest first, to delete next.
    pub composite_pod_groups: Vec<String>,
}

impl SyncPlan {
    /// The Workload templates whose count changes.
    pub fn workload_patches(&self) -> impl Iterator<Item = &TemplateMinCount> {
        self.workload.iter().filter(|t| t.is_change())
    }

    /// The PodGroups whose count changes.
    pub fn pod_group_patches(&self) -> impl Iterator<Item = &GroupMinCount> {
        self.pod_groups.iter().filter(|g| g.is_change())
    }

    /// Why the live Workload cannot take the desired spec, if it cannot.
    pub fn workload_rejection(&self) -> Option<&FieldErrors> {
        self.impossible.iter().find(|r| r.kind == "Workload").map(|r| &r.errors)
    }

    /// The names in `expected` (the groups a controller wants, by its own naming rule) that are not among the
    /// given groups made from the target's templates.
    pub fn missing_groups<'n>(&self, expected: impl IntoIterator<Item = &'n GroupName>) -> Vec<GroupName> {
        expected
            .into_iter()
            .filter(|name| !self.matched.iter().any(|m| m.as_str() == name.as_str()))
            .cloned()
            .collect()
    }

    /// True when nothing changes and nothing is impossible (missing groups are not counted: see
    /// [`missing`](Self::missing)).
    pub fn is_noop(&self) -> bool {
        self.workload_patches().next().is_none()
            && self.pod_group_patches().next().is_none()
            && self.impossible.is_empty()
    }
}

/// The JSON pointer of the PodGroupTemplate `template` in `workload` (`/spec/podGroupTemplates/0`,
/// `/spec/compositePodGroupTemplates/0/podGroupTemplates/1`, ...); `None` when there is none by that name.
pub fn template_pointer(workload: &Workload, template: &str) -> Option<String> {
    fn composites(list: &[CompositePodGroupTemplate], prefix: &str, template: &str) -> Option<String> {
        for (i, c) in list.iter().enumerate() {
            let here = format!("{prefix}/compositePodGroupTemplates/{i}");
            if let Some(j) = c.pod_group_templates.iter().flatten().position(|t| t.name == template) {
                return Some(format!("{here}/podGroupTemplates/{j}"));
            }
            if let Some(found) = composites(
                c.composite_pod_group_templates.as_deref().unwrap_or_default(),
                &here,
                template,
            ) {
                return Some(found);
            }
        }
        None
    }
    if let Some(i) = workload
        .spec
        .pod_group_templates
        .iter()
        .flatten()
        .position(|t| t.name == template)
    {
        return Some(format!("/spec/podGroupTemplates/{i}"));
    }
    composites(
        workload
            .spec
            .composite_pod_group_templates
            .as_deref()
            .unwrap_or_default(),
        "/spec",
        template,
    )
}

/// The gang `minCount` of the PodGroupTemplate `template` in `workload`, if it is a gang.
pub fn template_min_count(workload: &Workload, template: &str) -> Option<i32> {
    match find_template(workload, template)? {
        TemplateRef::PodGroup(t, _) => t.scheduling_policy.gang.as_ref().map(|g| g.min_count),
        TemplateRef::Composite(..) => None,
    }
}

/// The change of `template`'s `minCount` in the live Workload to `count`: `None` when the template is not a
/// leaf gang of `live`, when it already has that count, or when `count` is below 1 (never written).
pub fn workload_min_count_change(live: &Workload, template: &str, count: i32) -> Option<TemplateMinCount> {
    let current = template_min_count(live, template)?;
    let change = min_count_entry(live, template, current, count)?;
    change.is_change().then_some(change)
}

fn min_count_entry(live: &Workload, template: &str, current: i32, desired: i32) -> Option<TemplateMinCount> {
    if desired < 1 {
        return None;
    }
    Some(TemplateMinCount {
        template: template.to_string(),
        pointer: template_pointer(live, template)?,
        live: current,
        desired,
    })
}

/// The change of a live PodGroup's `minCount` to `count`: `None` when the group is not a gang, already has
/// that count, or `count` is below 1.
pub fn pod_group_min_count_change(group: &PodGroup, count: i32) -> Option<GroupMinCount> {
    let change = group_entry(group, count)?;
    change.is_change().then_some(change)
}

fn group_entry(group: &PodGroup, desired: i32) -> Option<GroupMinCount> {
    let live = group.spec.scheduling_policy.gang.as_ref()?.min_count;
    (desired >= 1).then(|| GroupMinCount {
        name: group.metadata.name.clone().unwrap_or_default(),
        template: group
            .spec
            .workload_ref
            .as_ref()
            .map(|r| r.template_name.clone())
            .unwrap_or_default(),
        live,
        desired,
    })
}

/// kube-apiserver's answer to updating `live` to `desired`'s spec (empty when it may).
pub fn workload_update_errors(desired: &Workload, live: &Workload) -> FieldErrors {
    let mut candidate = live.clone();
    candidate.spec = desired.spec.clone();
    validate_workload_update(&candidate, live)
}

/// The names of every template of `workload`, composite and leaf, in pre-order (top-level leaves first).
fn template_names(workload: &Workload) -> Vec<&str> {
    fn walk<'a>(list: &'a [CompositePodGroupTemplate], out: &mut Vec<&'a str>) {
        for c in list {
            out.push(&c.name);
            out.extend(c.pod_group_templates.iter().flatten().map(|t| t.name.as_str()));
            walk(c.composite_pod_group_templates.as_deref().unwrap_or_default(), out);
        }
    }
    let mut out: Vec<&str> = workload
        .spec
        .pod_group_templates
        .iter()
        .flatten()
        .map(|t| t.name.as_str())
        .collect();
    walk(
        workload
            .spec
            .composite_pod_group_templates
            .as_deref()
            .unwrap_or_default(),
        &mut out,
    );
    out
}

/// How many of `all` are above `group` (its parent, its parent's parent, ...), bounded by the list's size.
fn depth(group: &CompositePodGroup, all: &[CompositePodGroup]) -> usize {
    let mut depth = 0;
    let mut parent = group.spec.parent_composite_pod_group_name.as_deref();
    while let Some(name) = parent.filter(|_| depth < all.len()) {
        depth += 1;
        parent = all
            .iter()
            .find(|g| g.metadata.name.as_deref() == Some(name))
            .and_then(|g| g.spec.parent_composite_pod_group_name.as_deref());
    }
    depth
}

/// Every leaf template of `workload`, in pre-order.
fn leaves(workload: &Workload) -> Vec<&PodGroupTemplate> {
    fn walk<'a>(list: &'a [CompositePodGroupTemplate], out: &mut Vec<&'a PodGroupTemplate>) {
        for c in list {
            out.extend(c.pod_group_templates.iter().flatten());
            walk(c.composite_pod_group_templates.as_deref().unwrap_or_default(), out);
        }
    }
    let mut out: Vec<&PodGroupTemplate> = workload.spec.pod_group_templates.iter().flatten().collect();
    walk(
        workload
            .spec
            .composite_pod_group_templates
            .as_deref()
            .unwrap_or_default(),
        &mut out,
    );
    out
}

fn sync_errors(errs: FieldErrors) -> FieldErrors {
    errs.into_iter()
        .map(|e| e.or_origin(|| ErrorOrigin::stage(Stage::Sync)))
        .collect()
}

/// The group `(workload, template)` names, if it names `live`.
fn template_of<'a>(reference: Option<(&'a str, &'a str)>, live: &str) -> Option<&'a str> {
    reference.filter(|(w, _)| *w == live).map(|(_, t)| t)
}

/// Compute the plan; see the [module docs](self).
pub fn plan_sync(input: SyncInput<'_>) -> SyncPlan {
    let SyncInput {
        desired,
        live,
        pod_groups,
        composite_pod_groups,
    } = input;
    let live_name = live.metadata.name.as_deref().unwrap_or_default();
    let target = desired.unwrap_or(live);
    let mut plan = SyncPlan::default();
    let mut made_from: Vec<&str> = Vec::new();

    if let Some(desired) = desired {
        let errs = workload_update_errors(desired, live);
        if !errs.is_empty() {
            plan.impossible.push(Rejection {
                kind: "Workload",
                name: live_name.to_string(),
                errors: sync_errors(errs),
            });
        }
        for t in leaves(desired) {
            let Some(g) = &t.scheduling_policy.gang else { continue };
            if let Some(current) = template_min_count(live, &t.name)
                && let Some(entry) = min_count_entry(live, &t.name, current, g.min_count)
            {
                plan.workload.push(entry);
            }
        }
    }

    for group in pod_groups {
        let name = group.metadata.name.clone().unwrap_or_default();
        let reference = group
            .spec
            .workload_ref
            .as_ref()
            .map(|r| (r.workload_name.as_str(), r.template_name.as_str()));
        let template = match template_of(reference, live_name).and_then(|t| find_template(target, t)) {
            Some(TemplateRef::PodGroup(t, _)) => t,
            _ => {
                plan.unmatched.push(name);
                continue;
            }
        };
        plan.matched.push(name.clone());
        made_from.push(template.name.as_str());
        let mut candidate = group.clone();
        candidate.spec.scheduling_policy = template.scheduling_policy.clone();
        candidate.spec.scheduling_constraints = template.scheduling_constraints.clone();
        candidate.spec.disruption_mode = template.disruption_mode.clone();
        candidate.spec.resource_claims = template.resource_claims.clone();
        candidate.spec.priority_class_name = template.priority_class_name.clone();
        candidate.spec.preemption_policy = template.preemption_policy.clone();
        let errs = validate_pod_group_update(&candidate, group);
        if !errs.is_empty() {
            plan.impossible.push(Rejection {
                kind: "PodGroup",
                name: name.clone(),
                errors: sync_errors(errs),
            });
        }
        if let Some(g) = &template.scheduling_policy.gang
            && let Some(entry) = group_entry(group, g.min_count)
        {
            plan.pod_groups.push(entry);
        }
    }

    for group in composite_pod_groups {
        let name = group.metadata.name.clone().unwrap_or_default();
        let r = &group.spec.workload_ref;
        let reference = Some((r.workload_name.as_str(), r.template_name.as_str()));
        let template = match template_of(reference, live_name).and_then(|t| find_template(target, t)) {
            Some(TemplateRef::Composite(t, _)) => t,
            _ => {
                plan.unmatched.push(name);
                continue;
            }
        };
        plan.matched.push(name.clone());
        made_from.push(template.name.as_str());
        let mut candidate = group.clone();
        candidate.spec.scheduling_policy = template.scheduling_policy.clone();
        candidate.spec.scheduling_constraints = template.scheduling_constraints.clone();
        candidate.spec.disruption_mode = template.disruption_mode.clone();
        candidate.spec.priority_class_name = template.priority_class_name.clone();
        candidate.spec.preemption_policy = template.preemption_policy.clone();
        let errs = validate_composite_pod_group_update(&candidate, group);
        if !errs.is_empty() {
            plan.impossible.push(Rejection {
                kind: "CompositePodGroup",
                name,
                errors: sync_errors(errs),
            });
        }
    }
    plan.missing = template_names(target)
        .into_iter()
        .filter(|t| !made_from.contains(t))
        .map(str::to_string)
        .collect();
    if plan.workload_rejection().is_some() {
        let of_live = |r: Option<&str>| r == Some(live_name);
        let pod_groups = pod_groups
            .iter()
            .filter(|g| of_live(g.spec.workload_ref.as_ref().map(|r| r.workload_name.as_str())))
            .filter_map(|g| g.metadata.name.clone())
            .collect();
        let mut composites: Vec<(usize, String)> = composite_pod_groups
            .iter()
            .filter(|g| of_live(Some(g.spec.workload_ref.workload_name.as_str())))
            .filter_map(|g| Some((depth(g, composite_pod_groups), g.metadata.name.clone()?)))
            .collect();
        composites.sort_by_key(|c| std::cmp::Reverse(c.0));
        plan.replace = Some(Replacement {
            workload: live_name.to_string(),
            pod_groups,
            composite_pod_groups: composites.into_iter().map(|(_, n)| n).collect(),
        });
    }
    plan
}
