//! Every validation rule with a passing and a failing case, asserting the error type and the field path.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use k8s_openapi::api::scheduling::v1alpha3::{
    CompositePodGroup, CompositePodGroupTemplate, PodGroup, PodGroupResourceClaim, PodGroupTemplate, Workload,
};
use workloadbuilder::FieldErrorType::{Duplicate, Forbidden, Invalid, NotSupported, Required, TooMany};
use workloadbuilder::messages::*;
use workloadbuilder::validation::*;
use workloadbuilder::*;

/// Assert that `errs` holds exactly the `(type, path)` pairs of `expected` (in any order).
#[track_caller]
fn assert_errors(errs: &FieldErrors, expected: &[(FieldErrorType, &str)]) {
    let mut got: Vec<(FieldErrorType, String)> = errs.iter().map(|e| (e.error_type, e.field.to_string())).collect();
    let mut want: Vec<(FieldErrorType, String)> = expected.iter().map(|(t, p)| (*t, p.to_string())).collect();
    got.sort_by(|a, b| a.1.cmp(&b.1).then(format!("{:?}", a.0).cmp(&format!("{:?}", b.0))));
    want.sort_by(|a, b| a.1.cmp(&b.1).then(format!("{:?}", a.0).cmp(&format!("{:?}", b.0))));
    assert_eq!(got, want, "errors: {errs}");
}

fn check(root: WorkloadItem) -> FieldErrors {
    match WorkloadBuilder::new(root).allow(allow_all()).validate() {
        Ok(_) => FieldErrors::new(),
        Err(e) => e,
    }
}

fn leaf(name: &str) -> WorkloadItem {
    WorkloadItem::new(name).with_default(SchedulingConfig::gang(Some(1)))
}

fn composite(name: &str, children: impl IntoIterator<Item = WorkloadItem>) -> WorkloadItem {
    WorkloadItem::new(name)
        .with_default(SchedulingConfig::gang(Some(1)))
        .with_children(children)
}

// ---------------------------------------------------------------------------------------------------------
// Tree shape.

#[test]
fn names_are_required_dns_labels() {
    assert_errors(&check(composite("root", [leaf("a-1")])), &[]);
    assert_errors(
        &check(composite("root", [leaf(""), leaf("Bad_Name")])),
        &[
            (Required, "spec.compositePodGroupTemplates[0].podGroupTemplates[0].name"),
            (Invalid, "spec.compositePodGroupTemplates[0].podGroupTemplates[1].name"),
        ],
    );
}

#[test]
fn names_are_unique_across_the_tree() {
    assert_errors(
        &check(composite("root", [composite("mid", [leaf("a")]), leaf("b")])),
        &[],
    );
    assert_errors(
        &check(composite("root", [composite("mid", [leaf("root")]), leaf("mid")])),
        &[
            (
                Duplicate,
                "spec.compositePodGroupTemplates[0].compositePodGroupTemplates[0].podGroupTemplates[0].name",
            ),
            (
                Duplicate,
                "spec.compositePodGroupTemplates[0].podGroupTemplates[0].name",
            ),
        ],
    );
}

#[test]
fn duplicate_names_are_found_in_a_large_tree_too() {
    // Past the first names validation switches from a list to a hash set: a duplicate of an early name,
    // and one of a late name, are both found, at the later item.
    let mut mids: Vec<WorkloadItem> = (0..7)
        .map(|i| composite(&format!("m{i}"), (0..3).map(|j| leaf(&format!("m{i}-l{j}")))))
        .collect();
    mids.push(composite("m7", [leaf("m0-l0"), leaf("m6-l2")]));
    let errs = check(composite("root", mids));
    let late = "spec.compositePodGroupTemplates[0].compositePodGroupTemplates[7].podGroupTemplates";
    assert_errors(
        &errs,
        &[
            (Duplicate, &format!("{late}[0].name")),
            (Duplicate, &format!("{late}[1].name")),
        ],
    );
}

#[test]
fn at_most_four_levels_as_the_apiserver_counts_them() {
    // Three composite levels plus leaves: allowed.
    let ok = composite("c1", [composite("c2", [composite("c3", [leaf("l")])])]);
    assert_errors(&check(ok), &[]);
    // A fourth composite level is rejected at that composite.
    let deep = composite(
        "c1",
        [composite("c2", [composite("c3", [composite("c4", [leaf("l")])])])],
    );
    assert_errors(
        &check(deep),
        &[(
            Invalid,
            "spec.compositePodGroupTemplates[0].compositePodGroupTemplates[0].compositePodGroupTemplates[0].compositePodGroupTemplates[0]",
        )],
    );
}

#[test]
fn at_most_eight_children_of_each_kind() {
    let eight = composite(
        "root",
        (0..8)
            .map(|i| leaf(&format!("l{i}")))
            .chain((0..8).map(|i| composite(&format!("c{i}"), [leaf(&format!("x{i}"))]))),
    );
    assert_errors(&check(eight), &[]);
    let nine = composite(
        "root",
        (0..9)
            .map(|i| leaf(&format!("l{i}")))
            .chain((0..9).map(|i| composite(&format!("c{i}"), [leaf(&format!("x{i}"))]))),
    );
    assert_errors(
        &check(nine),
        &[
            (TooMany, "spec.compositePodGroupTemplates[0].podGroupTemplates"),
            (TooMany, "spec.compositePodGroupTemplates[0].compositePodGroupTemplates"),
        ],
    );
}

#[test]
fn an_item_without_children_is_a_leaf_and_an_empty_composite_template_is_rejected_by_the_apiserver_rules() {
    // In the IR a composite always has a child: an item with no children compiles to a PodGroupTemplate.
    let workload = WorkloadBuilder::new(leaf("only"))
        .allow(allow_all())
        .build("w", "ns", &owner("j"))
        .unwrap();
    assert!(workload.spec.pod_group_templates.is_some());
    // A hand-written Workload with a childless composite template fails validate_workload.
    let mut w = workload_with_composites(vec![cpgt("root", vec![], vec![])]);
    assert_errors(
        &validate_workload(&w),
        &[(Invalid, "spec.compositePodGroupTemplates[0]")],
    );
    w.spec.composite_pod_group_templates = Some(vec![cpgt("root", vec![pgt("a", 1)], vec![])]);
    assert_errors(&validate_workload(&w), &[]);
}

// ---------------------------------------------------------------------------------------------------------
// Resolved configurations.

#[test]
fn gang_count_must_be_set_after_callbacks() {
    let defaulted = WorkloadItem::new("a")
        .with_default(SchedulingConfig::gang(None))
        .with_callback(|c| {
            c.default_gang_min_count(3);
        });
    assert_errors(&check(defaulted), &[]);
    assert_errors(
        &check(WorkloadItem::new("a").with_default(SchedulingConfig::gang(None))),
        &[(Required, "spec.podGroupTemplates[0].schedulingPolicy.gang.minCount")],
    );
    assert_errors(
        &check(
            WorkloadItem::new("r")
                .with_default(SchedulingConfig::gang(None))
                .with_child(leaf("a")),
        ),
        &[(
            Required,
            "spec.compositePodGroupTemplates[0].schedulingPolicy.gang.minGroupCount",
        )],
    );
}

#[test]
fn counts_are_at_least_one() {
    assert_errors(
        &check(WorkloadItem::new("a").with_default(SchedulingConfig::gang(Some(1)))),
        &[],
    );
    assert_errors(
        &check(
            WorkloadItem::new("r")
                .with_default(SchedulingConfig::gang(Some(0)))
                .with_child(WorkloadItem::new("a").with_default(SchedulingConfig::gang(Some(-2)))),
        ),
        &[
            (
                Invalid,
                "spec.compositePodGroupTemplates[0].schedulingPolicy.gang.minGroupCount",
            ),
            (
                Invalid,
                "spec.compositePodGroupTemplates[0].podGroupTemplates[0].schedulingPolicy.gang.minCount",
            ),
        ],
    );
}

#[test]
fn at_most_one_topology_constraint_with_a_valid_key() {
    assert_errors(
        &check(leaf("a").with_user_config(Some(SchedulingConfig::default().with_topology("kwas.dev/rack")))),
        &[],
    );
    let two = SchedulingConfig {
        constraints: Some(SchedulingConstraints {
            topology: vec![
                k8s_openapi::api::scheduling::v1alpha3::TopologyConstraint { key: "a".into() },
                k8s_openapi::api::scheduling::v1alpha3::TopologyConstraint {
                    key: "not a key".into(),
                },
            ],
        }),
        ..Default::default()
    };
    assert_errors(
        &check(leaf("a").with_user_config(Some(two))),
        &[
            (TooMany, "spec.podGroupTemplates[0].schedulingConstraints.topology"),
            (
                Invalid,
                "spec.podGroupTemplates[0].schedulingConstraints.topology[1].key",
            ),
        ],
    );
    assert_errors(
        &check(leaf("a").with_user_config(Some(SchedulingConfig::default().with_topology("")))),
        &[(
            Required,
            "spec.podGroupTemplates[0].schedulingConstraints.topology[0].key",
        )],
    );
}

fn claim(name: &str, c: Option<&str>, t: Option<&str>) -> ResourceClaim {
    ResourceClaim {
        name: name.into(),
        resource_claim_name: c.map(Into::into),
        resource_claim_template_name: t.map(Into::into),
    }
}

#[test]
fn resource_claims_are_bounded_unique_with_one_source() {
    let ok = SchedulingConfig {
        resource_claims: vec![claim("a", Some("c"), None), claim("b", None, Some("t"))],
        ..Default::default()
    };
    assert_errors(&check(leaf("g").with_user_config(Some(ok))), &[]);
    let bad = SchedulingConfig {
        resource_claims: vec![
            claim("a", Some("c"), Some("t")),
            claim("a", None, None),
            claim("Bad", Some("c"), None),
            claim("d", Some("c"), None),
            claim("e", Some("c"), None),
        ],
        ..Default::default()
    };
    let p = "spec.podGroupTemplates[0].resourceClaims";
    assert_errors(
        &check(leaf("g").with_user_config(Some(bad))),
        &[
            (TooMany, p),
            (Invalid, &format!("{p}[0]")),
            (Duplicate, &format!("{p}[1].name")),
            (Invalid, &format!("{p}[1]")),
            (Invalid, &format!("{p}[2].name")),
        ],
    );
}

#[test]
fn resource_claims_only_on_leaves() {
    let claims = SchedulingConfig {
        resource_claims: vec![claim("a", Some("c"), None)],
        ..Default::default()
    };
    assert_errors(
        &check(composite("r", [leaf("a")]).with_user_config(Some(claims))),
        &[(Forbidden, "spec.compositePodGroupTemplates[0].resourceClaims")],
    );
}

#[test]
fn all_disruption_is_rejected_with_basic() {
    let all = SchedulingConfig::default().with_disruption_mode(Disruption::All);
    assert_errors(&check(leaf("a").with_user_config(Some(all.clone()))), &[]);
    assert_errors(
        &check(
            WorkloadItem::new("a")
                .with_default(SchedulingConfig::basic())
                .with_user_config(Some(all)),
        ),
        &[(Invalid, "spec.podGroupTemplates[0].disruptionMode")],
    );
}

#[test]
fn children_of_an_all_composite_are_all() {
    let all = |item: WorkloadItem| {
        item.with_user_config(Some(SchedulingConfig::default().with_disruption_mode(Disruption::All)))
    };
    assert_errors(
        &check(all(composite(
            "r",
            [all(leaf("a")), all(composite("m", [all(leaf("b"))]))],
        ))),
        &[],
    );
    let single = leaf("c").with_user_config(Some(
        SchedulingConfig::default().with_disruption_mode(Disruption::Single),
    ));
    assert_errors(
        &check(all(composite(
            "r",
            [leaf("a"), single, all(composite("m", [leaf("b")]))],
        ))),
        &[
            (
                Invalid,
                "spec.compositePodGroupTemplates[0].podGroupTemplates[0].disruptionMode",
            ),
            (
                Invalid,
                "spec.compositePodGroupTemplates[0].podGroupTemplates[1].disruptionMode",
            ),
            (
                Invalid,
                "spec.compositePodGroupTemplates[0].compositePodGroupTemplates[0].podGroupTemplates[0].disruptionMode",
            ),
        ],
    );
    // A single composite may hold all children.
    assert_errors(&check(composite("r", [all(leaf("a")), leaf("b")])), &[]);
}

#[test]
fn one_priority_class_across_the_tree() {
    let class = |item: WorkloadItem, c: &str| {
        item.with_user_config(Some(SchedulingConfig::default().with_priority_class_name(c)))
    };
    assert_errors(&check(class(composite("r", [class(leaf("a"), "high")]), "high")), &[]);
    assert_errors(
        &check(class(composite("r", [class(leaf("a"), "low"), leaf("b")]), "high")),
        &[
            (
                Invalid,
                "spec.compositePodGroupTemplates[0].podGroupTemplates[0].priorityClassName",
            ),
            (
                Invalid,
                "spec.compositePodGroupTemplates[0].podGroupTemplates[1].priorityClassName",
            ),
        ],
    );
    assert_errors(
        &check(class(leaf("a"), "Not_A_Name")),
        &[(Invalid, "spec.podGroupTemplates[0].priorityClassName")],
    );
}

// ---------------------------------------------------------------------------------------------------------
// Allow-lists.

#[test]
fn policies_outside_the_allow_list_are_forbidden() {
    let basic_only = AllowList::new()
        .policies([PolicyOption::Basic])
        .disruption_modes([DisruptionModeOption::Single]);
    let ok =
        WorkloadBuilder::new(WorkloadItem::new("a").with_default(SchedulingConfig::basic())).allow(basic_only.clone());
    assert!(ok.validate().is_ok());
    // An unset policy is Basic, and must be allowed as Basic.
    let gang_only = AllowList::new().policies([PolicyOption::Gang]);
    let errs = WorkloadBuilder::new(WorkloadItem::new("a"))
        .allow(gang_only)
        .validate()
        .unwrap_err();
    assert_errors(&errs, &[(Forbidden, "spec.podGroupTemplates[0].schedulingPolicy")]);
    assert_eq!(
        errs.to_string(),
        "spec.podGroupTemplates[0].schedulingPolicy: Forbidden: basic scheduling policy is not supported by this controller"
    );
    let errs = WorkloadBuilder::new(leaf("a"))
        .allow(basic_only)
        .validate()
        .unwrap_err();
    assert_eq!(
        errs.to_string(),
        "spec.podGroupTemplates[0].schedulingPolicy: Forbidden: gang scheduling policy is not supported by this controller"
    );
    // Nothing is allowed until the controller opts in.
    assert!(
        WorkloadBuilder::new(WorkloadItem::new("a").with_default(SchedulingConfig::basic()))
            .validate()
            .is_err()
    );
}

#[test]
fn disruption_modes_outside_the_allow_list_are_forbidden() {
    let single_only = AllowList::new()
        .policies([PolicyOption::Gang])
        .disruption_modes([DisruptionModeOption::Single]);
    let all = leaf("a").with_user_config(Some(SchedulingConfig::default().with_disruption_mode(Disruption::All)));
    let errs = WorkloadBuilder::new(all)
        .allow(single_only.clone())
        .validate()
        .unwrap_err();
    assert_eq!(
        errs.to_string(),
        "spec.podGroupTemplates[0].disruptionMode: Forbidden: the disruptionMode `all` is not supported by this controller"
    );
    // An unset mode is not checked (the API defaults it to single).
    assert!(
        WorkloadBuilder::new(leaf("a"))
            .allow(AllowList::new().policies([PolicyOption::Gang]))
            .validate()
            .is_ok()
    );
    let single = leaf("a").with_user_config(Some(
        SchedulingConfig::default().with_disruption_mode(Disruption::Single),
    ));
    assert!(WorkloadBuilder::new(single).allow(single_only).validate().is_ok());
}

#[test]
fn composite_items_have_their_own_allow_list() {
    let root = composite("r", [leaf("a")]);
    let leaves_gang = AllowList::new().policies([PolicyOption::Gang]);
    let composites_basic = AllowList::new().policies([PolicyOption::Basic]);
    let errs = WorkloadBuilder::new(root.clone())
        .allow(leaves_gang.clone())
        .allow_composite(composites_basic)
        .validate()
        .unwrap_err();
    assert_errors(
        &errs,
        &[(Forbidden, "spec.compositePodGroupTemplates[0].schedulingPolicy")],
    );
    assert!(WorkloadBuilder::new(root).allow(leaves_gang).validate().is_ok());
}

// ---------------------------------------------------------------------------------------------------------
// Paths, identity and ownership.

#[test]
fn config_errors_are_reported_at_the_users_path() {
    let item = leaf("a")
        .with_user_config(Some(SchedulingConfig::gang(Some(0))))
        .with_config_path("spec.replicatedJobs[1].template.spec.scheduling");
    assert_errors(
        &check(item),
        &[(
            Invalid,
            "spec.replicatedJobs[1].template.spec.scheduling.schedulingPolicy.gang.minCount",
        )],
    );
}

#[test]
fn the_workload_needs_a_valid_name_namespace_and_controller_owner() {
    let b = WorkloadBuilder::new(leaf("a")).allow(allow_all());
    assert!(b.build("w", "ns", &owner("j")).is_ok());
    let mut not_controller = owner("j");
    not_controller.controller = None;
    let errs = b.build("Bad.Name-", "", &not_controller).unwrap_err();
    assert_errors(
        &errs,
        &[
            (Invalid, "metadata.name"),
            (Required, "metadata.namespace"),
            (Invalid, "metadata.ownerReferences[0].controller"),
        ],
    );
    assert!(errs.to_string().contains(OWNER_NOT_CONTROLLER));
    let mut no_uid = owner("j");
    no_uid.uid = String::new();
    assert_errors(
        &b.build("w", "ns", &no_uid).unwrap_err(),
        &[(Required, "metadata.ownerReferences[0].uid")],
    );
}

#[test]
fn all_errors_are_collected_at_once() {
    let item = composite(
        "r",
        [
            WorkloadItem::new("a").with_default(SchedulingConfig::gang(None)),
            leaf("a"),
            WorkloadItem::new("b").with_default(SchedulingConfig::basic().with_disruption_mode(Disruption::All)),
        ],
    );
    assert_eq!(check(item).len(), 3);
}

// ---------------------------------------------------------------------------------------------------------
// kube-apiserver rules: Workload.

fn pgt(name: &str, min: i32) -> PodGroupTemplate {
    PodGroupTemplate {
        name: name.into(),
        scheduling_policy: k8s_openapi::api::scheduling::v1alpha3::PodGroupSchedulingPolicy {
            basic: None,
            gang: Some(k8s_openapi::api::scheduling::v1alpha3::GangSchedulingPolicy { min_count: min }),
        },
        ..Default::default()
    }
}

fn cpgt(
    name: &str,
    leaves: Vec<PodGroupTemplate>,
    composites: Vec<CompositePodGroupTemplate>,
) -> CompositePodGroupTemplate {
    CompositePodGroupTemplate {
        name: name.into(),
        scheduling_policy: k8s_openapi::api::scheduling::v1alpha3::CompositePodGroupSchedulingPolicy {
            basic: None,
            gang: Some(k8s_openapi::api::scheduling::v1alpha3::CompositeGangSchedulingPolicy { min_group_count: 1 }),
        },
        pod_group_templates: (!leaves.is_empty()).then_some(leaves),
        composite_pod_group_templates: (!composites.is_empty()).then_some(composites),
        ..Default::default()
    }
}

fn workload_with(leaves: Vec<PodGroupTemplate>) -> Workload {
    let mut w = Workload::default();
    w.metadata.name = Some("w".into());
    w.metadata.namespace = Some("ns".into());
    w.spec.pod_group_templates = Some(leaves);
    w
}

fn workload_with_composites(composites: Vec<CompositePodGroupTemplate>) -> Workload {
    let mut w = workload_with(vec![]);
    w.spec.pod_group_templates = None;
    w.spec.composite_pod_group_templates = Some(composites);
    w
}

#[test]
fn workload_template_lists_are_a_union() {
    assert_errors(&validate_workload(&workload_with(vec![pgt("a", 1)])), &[]);
    assert_errors(&validate_workload(&workload_with(vec![])), &[(Invalid, "spec")]);
    let mut both = workload_with(vec![pgt("a", 1)]);
    both.spec.composite_pod_group_templates = Some(vec![cpgt("c", vec![pgt("b", 1)], vec![])]);
    let errs = validate_workload(&both);
    assert_errors(&errs, &[(Invalid, "spec")]);
    assert!(
        errs.to_string()
            .contains("must specify exactly one of: `podGroupTemplates`, `compositePodGroupTemplates`")
    );
}

#[test]
fn workload_lists_hold_at_most_eight_templates() {
    assert_errors(
        &validate_workload(&workload_with((0..8).map(|i| pgt(&format!("t{i}"), 1)).collect())),
        &[],
    );
    assert_errors(
        &validate_workload(&workload_with((0..9).map(|i| pgt(&format!("t{i}"), 1)).collect())),
        &[(TooMany, "spec.podGroupTemplates")],
    );
}

#[test]
fn workload_names_unique_across_the_tree_like_upstream() {
    // Upstream's "duplicate names deep in tree" and "duplicate names in tree" vectors.
    let deep = workload_with_composites(vec![cpgt(
        "main",
        vec![],
        vec![cpgt("main", vec![pgt("leaf", 1)], vec![])],
    )]);
    assert_errors(
        &validate_workload(&deep),
        &[(
            Duplicate,
            "spec.compositePodGroupTemplates[0].compositePodGroupTemplates[0].name",
        )],
    );
    let tree = workload_with_composites(vec![cpgt(
        "cpg1",
        vec![pgt("group1", 1)],
        vec![cpgt("cpg2", vec![pgt("group1", 1)], vec![])],
    )]);
    assert_errors(
        &validate_workload(&tree),
        &[(
            Duplicate,
            "spec.compositePodGroupTemplates[0].compositePodGroupTemplates[0].podGroupTemplates[0].name",
        )],
    );
    assert_errors(
        &validate_workload(&workload_with(vec![pgt("a", 1), pgt("a", 1)])),
        &[(Duplicate, "spec.podGroupTemplates[1].name")],
    );
}

#[test]
fn workload_depth_like_upstream() {
    let ok = workload_with_composites(vec![cpgt(
        "c1",
        vec![],
        vec![cpgt("c2", vec![], vec![cpgt("c3", vec![pgt("l", 1)], vec![])])],
    )]);
    assert_errors(&validate_workload(&ok), &[]);
    let deep = workload_with_composites(vec![cpgt(
        "c1",
        vec![],
        vec![cpgt(
            "c2",
            vec![],
            vec![cpgt("c3", vec![], vec![cpgt("c4", vec![pgt("l", 1)], vec![])])],
        )],
    )]);
    let errs = validate_workload(&deep);
    assert_errors(&errs, &[(Invalid, "spec.compositePodGroupTemplates[0]")]);
    assert!(errs.to_string().contains("maximum template hierarchy depth is 4"));
}

#[test]
fn workload_priority_is_identical_across_the_tree() {
    let mut a = pgt("a", 1);
    a.priority_class_name = Some("high".into());
    let mut b = pgt("b", 1);
    b.priority_class_name = Some("high".into());
    assert_errors(&validate_workload(&workload_with(vec![a.clone(), b.clone()])), &[]);
    b.priority_class_name = Some("low".into());
    assert_errors(
        &validate_workload(&workload_with(vec![a.clone(), b.clone()])),
        &[(Invalid, "spec")],
    );
    let mut root = cpgt("r", vec![a], vec![]);
    root.priority = Some(10);
    let errs = validate_workload(&workload_with_composites(vec![root]));
    assert_errors(&errs, &[(Invalid, "spec")]);
    assert!(
        errs.to_string()
            .contains("all priority and priorityClassName values must be identical")
    );
}

#[test]
fn workload_template_fields() {
    let mut t = pgt("a", 0);
    t.scheduling_constraints = Some(k8s_openapi::api::scheduling::v1alpha3::PodGroupSchedulingConstraints {
        topology: Some(vec![k8s_openapi::api::scheduling::v1alpha3::TopologyConstraint {
            key: "bad key".into(),
        }]),
    });
    t.disruption_mode = Some(Default::default());
    t.priority = Some(2_000_000_000);
    t.preemption_policy = Some("Sometimes".into());
    t.resource_claims = Some(vec![PodGroupResourceClaim {
        name: "c".into(),
        resource_claim_name: None,
        resource_claim_template_name: None,
    }]);
    let p = "spec.podGroupTemplates[0]";
    assert_errors(
        &validate_workload(&workload_with(vec![t])),
        &[
            (Required, &format!("{p}.schedulingPolicy.gang.minCount")),
            (Invalid, &format!("{p}.schedulingConstraints.topology[0].key")),
            (Invalid, &format!("{p}.disruptionMode")),
            (Invalid, &format!("{p}.priority")),
            (NotSupported, &format!("{p}.preemptionPolicy")),
            (Invalid, &format!("{p}.resourceClaims[0]")),
        ],
    );
    assert_errors(
        &validate_workload(&workload_with(vec![pgt("a", -1)])),
        &[(Invalid, "spec.podGroupTemplates[0].schedulingPolicy.gang.minCount")],
    );
    let mut no_policy = pgt("a", 1);
    no_policy.scheduling_policy.gang = None;
    assert_errors(
        &validate_workload(&workload_with(vec![no_policy])),
        &[(Invalid, "spec.podGroupTemplates[0].schedulingPolicy")],
    );
    let mut c = cpgt("c", vec![pgt("l", 1)], vec![]);
    c.scheduling_policy.gang.as_mut().unwrap().min_group_count = 0;
    assert_errors(
        &validate_workload(&workload_with_composites(vec![c])),
        &[(
            Required,
            "spec.compositePodGroupTemplates[0].schedulingPolicy.gang.minGroupCount",
        )],
    );
}

#[test]
fn workload_metadata() {
    let mut w = workload_with(vec![pgt("a", 1)]);
    w.metadata.name = Some(".workload".into());
    w.metadata.namespace = None;
    assert_errors(
        &validate_workload(&w),
        &[(Invalid, "metadata.name"), (Required, "metadata.namespace")],
    );
}

#[test]
fn workload_updates() {
    let old = workload_with(vec![pgt("a", 2), pgt("b", 2)]);
    // minCount is mutable.
    let mut new = workload_with(vec![pgt("a", 5), pgt("b", 2)]);
    assert_errors(&validate_workload_update(&new, &old), &[]);
    // basic <-> gang is rejected.
    new.spec.pod_group_templates.as_mut().unwrap()[1].scheduling_policy =
        k8s_openapi::api::scheduling::v1alpha3::PodGroupSchedulingPolicy {
            basic: Some(k8s_openapi::api::scheduling::v1alpha3::BasicSchedulingPolicy(
                serde_json::json!({}),
            )),
            gang: None,
        };
    assert_errors(
        &validate_workload_update(&new, &old),
        &[
            (Forbidden, "spec.podGroupTemplates[1].schedulingPolicy.basic"),
            (Forbidden, "spec.podGroupTemplates[1].schedulingPolicy.gang"),
        ],
    );
    // Membership is immutable.
    let added = workload_with(vec![pgt("a", 2), pgt("b", 2), pgt("c", 2)]);
    assert_errors(
        &validate_workload_update(&added, &old),
        &[(Forbidden, "spec.podGroupTemplates")],
    );
    // Other fields are immutable.
    let mut topo = old.clone();
    topo.spec.pod_group_templates.as_mut().unwrap()[0].scheduling_constraints =
        Some(k8s_openapi::api::scheduling::v1alpha3::PodGroupSchedulingConstraints {
            topology: Some(vec![k8s_openapi::api::scheduling::v1alpha3::TopologyConstraint {
                key: "k".into(),
            }]),
        });
    assert_errors(
        &validate_workload_update(&topo, &old),
        &[(Forbidden, "spec.podGroupTemplates[0].schedulingConstraints")],
    );
    let mut reref = old.clone();
    reref.spec.controller_ref = Some(k8s_openapi::api::scheduling::v1alpha3::TypedLocalObjectReference {
        api_group: None,
        kind: "Job".into(),
        name: "x".into(),
    });
    assert_errors(
        &validate_workload_update(&reref, &old),
        &[(Forbidden, "spec.controllerRef")],
    );
    // Composite templates: minGroupCount is immutable, leaf minCount is mutable.
    let cold = workload_with_composites(vec![cpgt("r", vec![pgt("l", 1)], vec![])]);
    let mut cnew = cold.clone();
    cnew.spec.composite_pod_group_templates.as_mut().unwrap()[0]
        .pod_group_templates
        .as_mut()
        .unwrap()[0] = pgt("l", 3);
    assert_errors(&validate_workload_update(&cnew, &cold), &[]);
    cnew.spec.composite_pod_group_templates.as_mut().unwrap()[0]
        .scheduling_policy
        .gang
        .as_mut()
        .unwrap()
        .min_group_count = 2;
    assert_errors(
        &validate_workload_update(&cnew, &cold),
        &[(
            Forbidden,
            "spec.compositePodGroupTemplates[0].schedulingPolicy.gang.minGroupCount",
        )],
    );
}

// ---------------------------------------------------------------------------------------------------------
// kube-apiserver rules: PodGroup and CompositePodGroup.

fn workload() -> Workload {
    compile_jobset(&parse_jobset("jobset-option-b.yaml")).unwrap()
}

fn pod_group() -> PodGroup {
    let w = workload();
    new_pod_group(
        &w,
        "workers",
        &GroupName::new("pg"),
        Some(&GroupName::new("root")),
        vec![],
    )
    .unwrap()
}

fn composite_group() -> CompositePodGroup {
    new_composite_pod_group(&workload(), "jobset", &GroupName::new("root"), None, vec![]).unwrap()
}

#[test]
fn pod_group_create() {
    assert_errors(&validate_pod_group(&pod_group()), &[]);
    let mut pg = pod_group();
    pg.spec.workload_ref = None;
    pg.spec.parent_composite_pod_group_name = Some("Bad!".into());
    assert_errors(
        &validate_pod_group(&pg),
        &[
            (Required, "spec.workloadRef"),
            (Invalid, "spec.parentCompositePodGroupName"),
        ],
    );
    let mut pg = pod_group();
    pg.spec.workload_ref.as_mut().unwrap().template_name = String::new();
    assert_errors(&validate_pod_group(&pg), &[(Required, "spec.workloadRef.templateName")]);
    // Standalone PodGroups (no workloadRef, no parent) are valid.
    let mut standalone = pod_group();
    standalone.spec.workload_ref = None;
    standalone.spec.parent_composite_pod_group_name = None;
    assert_errors(&validate_pod_group(&standalone), &[]);
}

#[test]
fn pod_group_update() {
    let mut old = pod_group();
    old.spec.scheduling_policy = k8s_openapi::api::scheduling::v1alpha3::PodGroupSchedulingPolicy {
        basic: None,
        gang: Some(k8s_openapi::api::scheduling::v1alpha3::GangSchedulingPolicy { min_count: 2 }),
    };
    let mut new = old.clone();
    new.spec.scheduling_policy.gang.as_mut().unwrap().min_count = 7;
    assert_errors(&validate_pod_group_update(&new, &old), &[]);
    new.spec.parent_composite_pod_group_name = Some("other".into());
    new.spec.scheduling_constraints = None;
    assert_errors(
        &validate_pod_group_update(&new, &old),
        &[
            (Forbidden, "spec.parentCompositePodGroupName"),
            (Forbidden, "spec.schedulingConstraints"),
        ],
    );
    let mut renamed = old.clone();
    renamed.metadata.name = Some("other".into());
    assert_errors(
        &validate_pod_group_update(&renamed, &old),
        &[(Invalid, "metadata.name")],
    );
}

fn condition(type_: &str, status: &str, reason: &str) -> k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
    k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
        type_: type_.into(),
        status: status.into(),
        reason: reason.into(),
        message: String::new(),
        observed_generation: None,
        last_transition_time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
        ),
    }
}

#[test]
fn group_status_updates() {
    let old = pod_group();
    let mut new = old.clone();
    new.status = Some(k8s_openapi::api::scheduling::v1alpha3::PodGroupStatus {
        conditions: Some(vec![condition("PodGroupInitiallyScheduled", "True", "Scheduled")]),
        resource_claim_statuses: None,
    });
    assert_errors(&validate_pod_group_status_update(&new, &old), &[]);
    new.status.as_mut().unwrap().conditions = Some(vec![condition("PodGroupInitiallyScheduled", "Yes", "")]);
    assert_errors(
        &validate_pod_group_status_update(&new, &old),
        &[
            (NotSupported, "status.conditions[0].status"),
            (Required, "status.conditions[0].reason"),
        ],
    );
    let old = composite_group();
    let mut new = old.clone();
    new.status = Some(k8s_openapi::api::scheduling::v1alpha3::CompositePodGroupStatus {
        conditions: Some(vec![condition(
            "CompositePodGroupInitiallyScheduled",
            "False",
            "Unschedulable",
        )]),
    });
    assert_errors(&validate_composite_pod_group_status_update(&new, &old), &[]);
    new.status
        .as_mut()
        .unwrap()
        .conditions
        .as_mut()
        .unwrap()
        .push(condition("CompositePodGroupInitiallyScheduled", "True", "Scheduled"));
    assert_errors(
        &validate_composite_pod_group_status_update(&new, &old),
        &[(Duplicate, "status.conditions[1].type")],
    );
}

#[test]
fn composite_pod_group_create_and_update() {
    assert_errors(&validate_composite_pod_group(&composite_group()), &[]);
    let mut c = composite_group();
    c.spec.workload_ref.workload_name = String::new();
    c.spec.scheduling_policy.basic = None;
    assert_errors(
        &validate_composite_pod_group(&c),
        &[
            (Required, "spec.workloadRef.workloadName"),
            (Invalid, "spec.schedulingPolicy"),
        ],
    );
    let old = composite_group();
    let mut new = old.clone();
    assert_errors(&validate_composite_pod_group_update(&new, &old), &[]);
    new.spec.priority_class_name = Some("high".into());
    assert_errors(
        &validate_composite_pod_group_update(&new, &old),
        &[(Forbidden, "spec.priorityClassName")],
    );
}
