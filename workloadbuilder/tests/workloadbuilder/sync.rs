//! The re-sync plan: which minCounts to patch in a live Workload and its groups, what the API would refuse.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use k8s_openapi::api::scheduling::v1alpha3::{CompositePodGroup, PodGroup, Workload};
use workloadbuilder::sync::*;
use workloadbuilder::*;

/// A JobSet-like Workload: root (gang of `root_count`) over `driver` (basic) and `workers` (gang of
/// `workers`), and a nested `stage` composite with `eval` (gang of 2).
fn workload(root_count: i32, workers: i32) -> Workload {
    let tree = WorkloadItem::new("root")
        .with_default(SchedulingConfig::gang(Some(root_count)))
        .with_child(WorkloadItem::new("driver").with_default(SchedulingConfig::basic()))
        .with_child(WorkloadItem::new("workers").with_default(SchedulingConfig::gang(Some(workers))))
        .with_child(
            WorkloadItem::new("stage")
                .with_default(SchedulingConfig::basic())
                .with_child(WorkloadItem::new("eval").with_default(SchedulingConfig::gang(Some(2)))),
        );
    WorkloadBuilder::new(tree)
        .allow(allow_all())
        .build("wl", "ml", &owner_kind("jobset.x-k8s.io/v1alpha2", "JobSet", "js"))
        .unwrap()
}

fn group(workload: &Workload, template: &str, name: &str, parent: Option<&str>) -> PodGroup {
    let parent = parent.map(GroupName::new);
    new_pod_group(workload, template, &GroupName::new(name), parent.as_ref(), vec![]).unwrap()
}

fn plan(desired: Option<&Workload>, live: &Workload, groups: &[PodGroup], cpgs: &[CompositePodGroup]) -> SyncPlan {
    plan_sync(SyncInput {
        desired,
        live,
        pod_groups: groups,
        composite_pod_groups: cpgs,
    })
}

#[test]
fn nothing_changes_when_desired_and_live_agree() {
    let live = workload(3, 4);
    let groups = [
        group(&live, "workers", "w-0", Some("root-0")),
        group(&live, "driver", "d-0", Some("root-0")),
    ];
    let p = plan(Some(&live), &live, &groups, &[]);
    assert!(p.is_noop(), "{p:?}");
    // Every gang leaf is listed with both counts, in pre-order; the basic driver is not.
    let templates: Vec<(&str, &str, i32, i32)> = p
        .workload
        .iter()
        .map(|t| (t.template.as_str(), t.pointer.as_str(), t.live, t.desired))
        .collect();
    assert_eq!(
        templates,
        [
            (
                "workers",
                "/spec/compositePodGroupTemplates/0/podGroupTemplates/1",
                4,
                4
            ),
            (
                "eval",
                "/spec/compositePodGroupTemplates/0/compositePodGroupTemplates/0/podGroupTemplates/0",
                2,
                2
            ),
        ]
    );
    assert_eq!(p.pod_groups.len(), 1);
    assert!(p.unmatched.is_empty());
}

#[test]
fn a_changed_min_count_patches_the_template_and_its_groups() {
    let live = workload(3, 4);
    let desired = workload(3, 6);
    let groups = [
        group(&live, "workers", "w-0", Some("root-0")),
        group(&live, "workers", "w-1", Some("root-0")),
        group(&live, "driver", "d-0", Some("root-0")),
    ];
    let p = plan(Some(&desired), &live, &groups, &[]);
    assert!(p.impossible.is_empty(), "{:?}", p.impossible);
    let patches: Vec<_> = p.workload_patches().collect();
    assert_eq!(patches.len(), 1);
    assert_eq!(
        (patches[0].template.as_str(), patches[0].live, patches[0].desired),
        ("workers", 4, 6)
    );
    assert_eq!(
        patches[0].json_patch(),
        serde_json::json!([
            {"op": "test", "path": "/spec/compositePodGroupTemplates/0/podGroupTemplates/1/name", "value": "workers"},
            {"op": "replace", "path": "/spec/compositePodGroupTemplates/0/podGroupTemplates/1/schedulingPolicy/gang/minCount", "value": 6},
        ])
    );
    let groups: Vec<(&str, i32, i32)> = p
        .pod_group_patches()
        .map(|g| (g.name.as_str(), g.live, g.desired))
        .collect();
    assert_eq!(groups, [("w-0", 4, 6), ("w-1", 4, 6)]);
    assert_eq!(
        p.pod_groups[0].merge_patch(),
        serde_json::json!({"spec": {"schedulingPolicy": {"gang": {"minCount": 6}}}})
    );
    // A group already at the new size is listed but not patched.
    let mut synced = groups_at(&live, 6);
    synced.truncate(1);
    let p = plan(Some(&desired), &live, &synced, &[]);
    assert_eq!(p.pod_groups.len(), 1);
    assert_eq!(p.pod_group_patches().count(), 0);
}

fn groups_at(live: &Workload, count: i32) -> Vec<PodGroup> {
    let mut g = group(live, "workers", "w-0", Some("root-0"));
    g.spec.scheduling_policy.gang.as_mut().unwrap().min_count = count;
    vec![g]
}

#[test]
fn without_a_desired_workload_groups_follow_the_live_templates_and_the_workload_is_left_alone() {
    let live = workload(3, 5);
    let groups = groups_at(&live, 2);
    let p = plan(None, &live, &groups, &[]);
    assert!(p.workload.is_empty());
    assert!(p.impossible.is_empty());
    let g: Vec<(i32, i32)> = p.pod_group_patches().map(|g| (g.live, g.desired)).collect();
    assert_eq!(g, [(2, 5)]);
}

#[test]
fn limits_i32_max_and_empty_lists() {
    let live = workload(3, 1);
    let desired = workload(3, i32::MAX);
    let p = plan(Some(&desired), &live, &groups_at(&live, 1), &[]);
    assert!(p.impossible.is_empty(), "{:?}", p.impossible);
    assert_eq!(p.workload_patches().map(|t| t.desired).collect::<Vec<_>>(), [i32::MAX]);
    assert_eq!(p.pod_group_patches().map(|g| g.desired).collect::<Vec<_>>(), [i32::MAX]);
    assert_eq!(p.workload_patches().next().unwrap().json_patch()[1]["value"], i32::MAX);
    // And back down to 1.
    let p = plan(Some(&live), &desired, &groups_at(&desired, i32::MAX), &[]);
    assert_eq!(
        p.workload_patches().map(|t| (t.live, t.desired)).collect::<Vec<_>>(),
        [(i32::MAX, 1)]
    );
    // No groups, no composite groups: only the Workload.
    let p = plan(Some(&desired), &live, &[], &[]);
    assert!(p.pod_groups.is_empty() && p.unmatched.is_empty());
    assert_eq!(p.workload_patches().count(), 1);
    // An empty Workload (no templates) on both sides: nothing to do, and the API's complaint about it.
    let empty = Workload::default();
    let p = plan(Some(&empty), &empty, &[], &[]);
    assert!(p.workload.is_empty() && p.pod_groups.is_empty());
    assert!(p.workload_rejection().is_some());
}

#[test]
fn a_count_below_one_is_never_written() {
    let live = workload(3, 4);
    let mut desired = live.clone();
    for t in desired.spec.composite_pod_group_templates.as_mut().unwrap()[0]
        .pod_group_templates
        .as_mut()
        .unwrap()
    {
        if let Some(g) = t.scheduling_policy.gang.as_mut() {
            g.min_count = 0;
        }
    }
    let p = plan(Some(&desired), &live, &groups_at(&live, 4), &[]);
    assert_eq!(p.workload_patches().count(), 0);
    assert_eq!(p.pod_group_patches().count(), 0);
    let errs = p.workload_rejection().unwrap();
    assert!(
        errs.contains(
            FieldErrorType::Required,
            "spec.compositePodGroupTemplates[0].podGroupTemplates[1].schedulingPolicy.gang.minCount"
        ),
        "{errs}"
    );
    assert!(errs.iter().all(|e| e.stage() == Some(Stage::Sync)));
    assert_eq!(workload_min_count_change(&live, "workers", 0), None);
    assert_eq!(pod_group_min_count_change(&groups_at(&live, 4)[0], -1), None);
}

#[test]
fn unknown_templates_and_other_workloads_are_left_alone() {
    let live = workload(3, 4);
    let desired = workload(3, 6);
    let mut stray = group(&live, "workers", "stray", Some("root-0"));
    stray.spec.workload_ref.as_mut().unwrap().template_name = "gone".into();
    let mut foreign = group(&live, "workers", "foreign", Some("root-0"));
    foreign.spec.workload_ref.as_mut().unwrap().workload_name = "other-wl".into();
    let mut no_ref = group(&live, "workers", "no-ref", Some("root-0"));
    no_ref.spec.workload_ref = None;
    // A PodGroup naming a composite template.
    let mut wrong_kind = group(&live, "workers", "wrong-kind", Some("root-0"));
    wrong_kind.spec.workload_ref.as_mut().unwrap().template_name = "stage".into();
    let p = plan(Some(&desired), &live, &[stray, foreign, no_ref, wrong_kind], &[]);
    assert_eq!(p.unmatched, ["stray", "foreign", "no-ref", "wrong-kind"]);
    assert!(p.pod_groups.is_empty());
    // Template helpers on unknown names.
    assert_eq!(template_pointer(&live, "gone"), None);
    assert_eq!(template_min_count(&live, "gone"), None);
    assert_eq!(template_min_count(&live, "driver"), None);
    assert_eq!(template_min_count(&live, "stage"), None);
    assert_eq!(workload_min_count_change(&live, "gone", 3), None);
}

#[test]
fn immutable_differences_are_reported_per_object() {
    let live = workload(3, 4);
    // The desired Workload gives the workers a topology: the template is immutable but for minCount.
    let tree = WorkloadItem::new("root")
        .with_default(SchedulingConfig::gang(Some(5)))
        .with_child(WorkloadItem::new("driver").with_default(SchedulingConfig::basic()))
        .with_child(
            WorkloadItem::new("workers").with_default(SchedulingConfig::gang(Some(6)).with_topology("kwas.dev/rack")),
        )
        .with_child(
            WorkloadItem::new("stage")
                .with_default(SchedulingConfig::basic())
                .with_child(WorkloadItem::new("eval").with_default(SchedulingConfig::gang(Some(2)))),
        );
    let desired = WorkloadBuilder::new(tree)
        .allow(allow_all())
        .build("wl", "ml", &owner_kind("jobset.x-k8s.io/v1alpha2", "JobSet", "js"))
        .unwrap();
    let root = new_composite_pod_group(&live, "root", &GroupName::new("root-0"), None, vec![]).unwrap();
    let workers = group(&live, "workers", "w-0", Some("root-0"));
    let p = plan(
        Some(&desired),
        &live,
        std::slice::from_ref(&workers),
        std::slice::from_ref(&root),
    );
    let kinds: Vec<(&str, &str)> = p.impossible.iter().map(|r| (r.kind, r.name.as_str())).collect();
    assert_eq!(
        kinds,
        [("Workload", "wl"), ("PodGroup", "w-0"), ("CompositePodGroup", "root-0")]
    );
    let wl = p.workload_rejection().unwrap();
    assert_eq!(
        wl.to_string(),
        "[spec.compositePodGroupTemplates[0].schedulingPolicy.gang.minGroupCount: Forbidden: field is immutable, \
         spec.compositePodGroupTemplates[0].podGroupTemplates[1].schedulingConstraints: Forbidden: field is immutable]"
    );
    assert_eq!(
        p.impossible[1].errors.to_string(),
        "spec.schedulingConstraints: Forbidden: field is immutable"
    );
    // The root's minGroupCount 3 -> 5 is immutable on a CompositePodGroup.
    assert_eq!(
        p.impossible[2].errors.to_string(),
        "spec.schedulingPolicy.gang.minGroupCount: Forbidden: field is immutable"
    );
    assert!(
        p.impossible
            .iter()
            .flat_map(|r| r.errors.iter())
            .all(|e| e.stage() == Some(Stage::Sync))
    );
    // The minCount changes are still planned; applying them is the controller's choice.
    assert_eq!(p.workload_patches().map(|t| t.desired).collect::<Vec<_>>(), [6]);
    assert_eq!(p.pod_group_patches().map(|g| g.desired).collect::<Vec<_>>(), [6]);
    // A group switched from gang to basic cannot be re-synced either.
    let mut basic = workers.clone();
    basic.spec.scheduling_policy.gang = None;
    basic.spec.scheduling_policy.basic = Some(Default::default());
    let p = plan(None, &live, &[basic], &[]);
    assert_eq!(p.impossible.len(), 1);
    assert!(p.pod_groups.is_empty());
}

#[test]
fn single_change_helpers_match_the_plan() {
    let live = workload(3, 4);
    let change = workload_min_count_change(&live, "workers", 9).unwrap();
    assert_eq!((change.live, change.desired), (4, 9));
    assert_eq!(workload_min_count_change(&live, "workers", 4), None);
    let g = groups_at(&live, 4).remove(0);
    assert_eq!(pod_group_min_count_change(&g, 4), None);
    assert_eq!(
        pod_group_min_count_change(&g, 7).map(|c| (c.live, c.desired)),
        Some((4, 7))
    );
}

#[test]
fn templates_without_a_group_are_listed_as_missing_and_expected_names_are_checked() {
    let live = workload(3, 4);
    let root = new_composite_pod_group(&live, "root", &GroupName::new("root-0"), None, vec![]).unwrap();
    let groups = [group(&live, "workers", "w-0", Some("root-0"))];
    let p = plan(Some(&live), &live, &groups, std::slice::from_ref(&root));
    assert_eq!(p.missing, ["driver", "stage", "eval"]);
    assert_eq!(p.matched, ["w-0", "root-0"]);
    let expected = [GroupName::new("w-0"), GroupName::new("w-1"), GroupName::new("root-0")];
    assert_eq!(p.missing_groups(&expected), [GroupName::new("w-1")]);
    assert!(p.replace.is_none());
}

#[test]
fn a_workload_the_api_would_refuse_to_update_comes_with_a_replacement_plan() {
    let live = workload(3, 4);
    // Another shape: the stage is gone, which no update may do.
    let desired = WorkloadBuilder::new(
        WorkloadItem::new("root")
            .with_default(SchedulingConfig::gang(Some(2)))
            .with_child(WorkloadItem::new("driver").with_default(SchedulingConfig::basic()))
            .with_child(WorkloadItem::new("workers").with_default(SchedulingConfig::gang(Some(4)))),
    )
    .allow(allow_all())
    .build("wl", "ml", &owner_kind("jobset.x-k8s.io/v1alpha2", "JobSet", "js"))
    .unwrap();
    let root = new_composite_pod_group(&live, "root", &GroupName::new("root-0"), None, vec![]).unwrap();
    let stage = GroupName::new("stage-0");
    let stage_group = new_composite_pod_group(&live, "stage", &stage, Some(&GroupName::new("root-0")), vec![]).unwrap();
    let groups = [
        group(&live, "workers", "w-0", Some("root-0")),
        group(&live, "eval", "e-0", Some("stage-0")),
    ];
    let p = plan(Some(&desired), &live, &groups, &[root, stage_group]);
    assert!(p.workload_rejection().is_some());
    assert_eq!(
        p.replace,
        Some(Replacement {
            workload: "wl".into(),
            pod_groups: vec!["w-0".into(), "e-0".into()],
            composite_pod_groups: vec!["stage-0".into(), "root-0".into()],
        })
    );
}
