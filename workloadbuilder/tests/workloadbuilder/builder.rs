//! The builder's contract beyond the KEP's test plan: names checked before callbacks, the owner's apiVersion,
//! item-aware callbacks, error origins, provenance of resolved values, flat compilation, existing Workloads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::common::*;
use workloadbuilder::FieldErrorType::{Invalid, Required};
use workloadbuilder::messages::*;
use workloadbuilder::validation::*;
use workloadbuilder::*;

fn counting(calls: &Arc<AtomicUsize>) -> impl Fn(&mut SchedulingConfig) + Send + Sync + 'static {
    let calls = Arc::clone(calls);
    move |cfg| {
        calls.fetch_add(1, Ordering::SeqCst);
        cfg.default_gang_min_count(1);
    }
}

// ---------------------------------------------------------------------------------------------------------
// Empty names fail before any callback runs.

#[test]
fn an_empty_name_at_any_depth_fails_before_callbacks_run() {
    let trees: Vec<(WorkloadItem, &str, Arc<AtomicUsize>)> = (0..3)
        .map(|depth| {
            let calls = Arc::new(AtomicUsize::new(0));
            let leaf_name = if depth == 2 { "" } else { "leaf" };
            let mid_name = if depth == 1 { "" } else { "mid" };
            let root_name = if depth == 0 { "" } else { "root" };
            let item = |name: &str| {
                WorkloadItem::new(name)
                    .with_default(SchedulingConfig::gang(None))
                    .with_callback(counting(&calls))
            };
            let tree = item(root_name).with_child(item(mid_name).with_child(item(leaf_name)));
            let path = match depth {
                0 => "spec.compositePodGroupTemplates[0].name",
                1 => "spec.compositePodGroupTemplates[0].compositePodGroupTemplates[0].name",
                _ => "spec.compositePodGroupTemplates[0].compositePodGroupTemplates[0].podGroupTemplates[0].name",
            };
            (tree, path, calls)
        })
        .collect();
    for (tree, path, calls) in trees {
        let builder = WorkloadBuilder::new(tree).allow(allow_all());
        let errs = builder.validate().unwrap_err();
        assert_eq!(errs.len(), 1, "{errs}");
        assert!(errs.contains(Required, path), "{errs}");
        let errs = builder.build("w", "default", &owner("j")).unwrap_err();
        assert!(errs.contains(Required, path), "{errs}");
        assert_eq!(
            calls.load(Ordering::SeqCst),
            0,
            "a callback ran on a tree with an empty name"
        );
    }
}

#[test]
fn named_trees_still_run_their_callbacks_once_per_resolution() {
    let calls = Arc::new(AtomicUsize::new(0));
    let tree = WorkloadItem::new("root")
        .with_default(SchedulingConfig::gang(None))
        .with_callback(counting(&calls))
        .with_child(
            WorkloadItem::new("leaf")
                .with_default(SchedulingConfig::gang(None))
                .with_callback(counting(&calls)),
        );
    WorkloadBuilder::new(tree)
        .allow(allow_all())
        .build("w", "default", &owner("j"))
        .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

#[test]
fn an_empty_name_is_reported_with_the_workloads_identity_errors() {
    let errs = WorkloadBuilder::new(WorkloadItem::new(""))
        .allow(allow_all())
        .build("", "default", &owner("j"))
        .unwrap_err();
    assert!(errs.contains(Required, "metadata.name"), "{errs}");
    assert!(errs.contains(Required, "spec.podGroupTemplates[0].name"), "{errs}");
}

// ---------------------------------------------------------------------------------------------------------
// The owner's apiVersion follows apimachinery's ParseGroupVersion.

fn build_owned_by(api_version: &str) -> Result<k8s_openapi::api::scheduling::v1alpha3::Workload, FieldErrors> {
    let mut owner = owner_kind(api_version, "Thing", "t");
    owner.api_version = api_version.to_string();
    WorkloadBuilder::new(WorkloadItem::new("t-pgt-0").with_default(SchedulingConfig::basic()))
        .allow(allow_all())
        .build("w", "default", &owner)
}

#[test]
fn malformed_owner_api_versions_are_field_errors() {
    for (api_version, detail) in [
        ("batch/v1/extra", "unexpected GroupVersion string: batch/v1/extra"),
        ("/v1", "the group before \"/\" is empty"),
        ("/", "the group before \"/\" is empty"),
        ("batch/", "the version after \"/\" is empty"),
        ("a/b/c/d", "unexpected GroupVersion string: a/b/c/d"),
    ] {
        let errs = build_owned_by(api_version).unwrap_err();
        assert_eq!(errs.len(), 1, "{api_version}: {errs}");
        let e = &errs.as_slice()[0];
        assert_eq!(
            (e.error_type, e.field.as_str()),
            (Invalid, "metadata.ownerReferences[0].apiVersion"),
            "{api_version}"
        );
        assert!(e.detail.contains(detail), "{api_version}: {e}");
        assert!(
            e.to_string().contains(&format!("Invalid value: \"{api_version}\"")),
            "{e}"
        );
    }
    let errs = build_owned_by("").unwrap_err();
    assert_eq!(errs.len(), 1, "{errs}");
    assert!(
        errs.contains(Required, "metadata.ownerReferences[0].apiVersion"),
        "{errs}"
    );
}

#[test]
fn well_formed_owner_api_versions_set_the_controller_ref_group() {
    for (api_version, group) in [
        ("batch/v1", Some("batch")),
        ("v1", None),
        ("kwas.dev/v1alpha1", Some("kwas.dev")),
    ] {
        let workload = build_owned_by(api_version).unwrap();
        let controller_ref = workload.spec.controller_ref.unwrap();
        assert_eq!(controller_ref.api_group.as_deref(), group, "{api_version}");
    }
}

#[test]
fn parse_group_version_mirrors_apimachinery() {
    let ok = |s| parse_group_version(s).map(|gv| (gv.group, gv.version));
    assert_eq!(ok(""), Ok(("", "")));
    assert_eq!(ok("v1"), Ok(("", "v1")));
    assert_eq!(ok("apps/v1"), Ok(("apps", "v1")));
    assert_eq!(
        parse_group_version("x/y/z"),
        Err(GroupVersionError::TooManySlashes("x/y/z".into()))
    );
    assert_eq!(api_group("batch/v1"), Ok("batch"));
    assert_eq!(api_group("v1"), Ok(""));
    assert!(api_group("batch/v1/extra").is_err());
}

#[test]
fn with_an_empty_name_every_name_error_is_reported_at_once() {
    let leaf = |name: &str| WorkloadItem::new(name).with_default(SchedulingConfig::gang(Some(1)));
    let tree = WorkloadItem::new("root")
        .with_default(SchedulingConfig::gang(Some(1)))
        .with_children([leaf(""), leaf("Bad_Name"), leaf("root")]);
    let errs = WorkloadBuilder::new(tree).allow(allow_all()).validate().unwrap_err();
    let got: Vec<(FieldErrorType, &str)> = errs.iter().map(|e| (e.error_type, e.field.as_str())).collect();
    assert_eq!(
        got,
        [
            (Required, "spec.compositePodGroupTemplates[0].podGroupTemplates[0].name"),
            (Invalid, "spec.compositePodGroupTemplates[0].podGroupTemplates[1].name"),
            (
                FieldErrorType::Duplicate,
                "spec.compositePodGroupTemplates[0].podGroupTemplates[2].name"
            ),
        ]
    );
}

// ---------------------------------------------------------------------------------------------------------
// Callbacks that see the item (KEP-6089's `func(*WorkloadItem)`).

#[test]
fn item_callbacks_see_the_item_and_its_place_in_the_tree() {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = |seen: &Arc<std::sync::Mutex<Vec<String>>>| {
        let seen = Arc::clone(seen);
        move |item: &ItemView<'_>, _: &mut SchedulingConfig| {
            seen.lock().unwrap().push(format!(
                "{} depth={} path={} children=[{}] leaf={} root={} config_path={} user={}",
                item.name(),
                item.depth(),
                item.path().join("/"),
                item.child_names().collect::<Vec<_>>().join(","),
                item.is_leaf(),
                item.is_root(),
                item.config_path().map_or("-", FieldPath::as_str),
                item.user_config().is_some(),
            ));
        }
    };
    let tree = WorkloadItem::new("root")
        .with_item_callback(record(&seen))
        .with_config_path("spec.scheduling")
        .with_child(
            WorkloadItem::new("mid").with_item_callback(record(&seen)).with_child(
                WorkloadItem::new("leaf")
                    .with_user_config(Some(SchedulingConfig::basic()))
                    .with_item_callback(record(&seen)),
            ),
        )
        .with_child(WorkloadItem::new("other").with_item_callback(record(&seen)));
    WorkloadBuilder::new(tree).resolve();
    assert_eq!(
        *seen.lock().unwrap(),
        [
            "root depth=0 path=root children=[mid,other] leaf=false root=true config_path=spec.scheduling user=false",
            "mid depth=1 path=root/mid children=[leaf] leaf=false root=false config_path=- user=false",
            "leaf depth=2 path=root/mid/leaf children=[] leaf=true root=false config_path=- user=true",
            "other depth=1 path=root/other children=[] leaf=true root=false config_path=- user=false",
        ]
    );
}

#[test]
fn both_kinds_of_callbacks_run_in_the_order_added() {
    // Each callback appends a digit to minCount: the order is visible in the result.
    let append = |digit: i32| {
        move |cfg: &mut SchedulingConfig| {
            if let Some(g) = cfg.gang_policy_mut() {
                g.min_count = Some(g.min_count.unwrap_or(0) * 10 + digit);
            }
        }
    };
    let item = WorkloadItem::new("job")
        .with_default(SchedulingConfig::gang(None))
        .with_callback(append(1))
        .with_item_callback(move |_, cfg| append(2)(cfg))
        .with_callback(append(3))
        .with_item_callback(move |item, cfg| {
            if item.name() == "job" {
                append(4)(cfg);
            }
        });
    let resolved = WorkloadBuilder::new(item).resolve();
    assert_eq!(resolved.config.gang_policy().unwrap().min_count, Some(1234));
}

#[test]
fn an_item_callback_defaults_a_composite_gang_to_its_child_count() {
    let tree = WorkloadItem::new("root")
        .with_default(SchedulingConfig::gang(None))
        .with_item_callback(|item, cfg| {
            cfg.default_gang_min_count(i32::try_from(item.child_count()).unwrap_or(i32::MAX));
        })
        .with_children(["a", "b", "c"].map(|n| WorkloadItem::new(n).with_default(SchedulingConfig::basic())));
    let workload = WorkloadBuilder::new(tree)
        .allow(allow_all())
        .build("w", "default", &owner("j"))
        .unwrap();
    let root = &workload.spec.composite_pod_group_templates.unwrap()[0];
    assert_eq!(root.scheduling_policy.gang.as_ref().unwrap().min_group_count, 3);
}

// ---------------------------------------------------------------------------------------------------------
// Field errors keep their origin: the stage and the item.

fn origin_of(errs: &FieldErrors, path: &str) -> (Option<Stage>, Vec<String>) {
    let e = errs
        .iter()
        .find(|e| e.field.as_str() == path)
        .unwrap_or_else(|| panic!("no error at {path}: {errs}"));
    (e.stage(), e.item_path().to_vec())
}

fn names(path: &[&str]) -> Vec<String> {
    path.iter().map(|s| s.to_string()).collect()
}

#[test]
fn builder_errors_name_their_stage_and_item() {
    let tree = WorkloadItem::new("trainer")
        .with_default(SchedulingConfig::gang(None))
        .with_config_path("spec.scheduling")
        .with_item_callback(|item, cfg| {
            cfg.default_gang_min_count(i32::try_from(item.child_count()).unwrap_or(i32::MAX));
        })
        .with_child(
            WorkloadItem::new("workers")
                .with_default(SchedulingConfig::gang(None))
                .with_config_path("spec.scheduling.replicatedJobPolicies[0]"),
        )
        .with_child(
            WorkloadItem::new("mid")
                .with_default(SchedulingConfig::basic().with_disruption_mode(Disruption::All))
                .with_child(WorkloadItem::new("Bad_Leaf").with_default(SchedulingConfig::basic())),
        );
    // Only Basic and Single allowed: the root's gang and the mid's `all` are allow-list errors.
    let allow = AllowList::new()
        .policies([PolicyOption::Basic])
        .disruption_modes([DisruptionModeOption::Single]);
    let mut bad_owner = owner("j");
    bad_owner.api_version = "batch/v1/x".into();
    let errs = WorkloadBuilder::new(tree)
        .allow(allow)
        .build("w", "default", &bad_owner)
        .unwrap_err();
    assert_eq!(
        origin_of(&errs, "spec.scheduling.schedulingPolicy"),
        (Some(Stage::Allowlist), names(&["trainer"]))
    );
    assert_eq!(
        origin_of(
            &errs,
            "spec.scheduling.replicatedJobPolicies[0].schedulingPolicy.gang.minCount"
        ),
        (Some(Stage::Validation), names(&["trainer", "workers"]))
    );
    let mid = "spec.compositePodGroupTemplates[0].compositePodGroupTemplates[0]";
    let mid_mode = errs
        .iter()
        .filter(|e| e.field.as_str() == format!("{mid}.disruptionMode"))
        .map(|e| (e.stage(), e.item().map(str::to_string)))
        .collect::<Vec<_>>();
    // `all` is not allowed (allow-list), and not with Basic (validation).
    assert!(
        mid_mode.contains(&(Some(Stage::Allowlist), Some("mid".into()))),
        "{mid_mode:?}"
    );
    assert!(
        mid_mode.contains(&(Some(Stage::Validation), Some("mid".into()))),
        "{mid_mode:?}"
    );
    assert_eq!(
        origin_of(&errs, &format!("{mid}.podGroupTemplates[0].name")),
        (Some(Stage::Validation), names(&["trainer", "mid", "Bad_Leaf"]))
    );
    assert_eq!(
        origin_of(&errs, "metadata.ownerReferences[0].apiVersion"),
        (Some(Stage::Compile), vec![])
    );
    // Every error the builder reports has an origin; the rendering is the upstream one.
    assert!(errs.iter().all(|e| e.origin().is_some()), "{errs:?}");
    assert!(
        errs.to_string().contains(
            "spec.scheduling.schedulingPolicy: Forbidden: gang scheduling policy is not supported by this controller"
        ),
        "{errs}"
    );
}

#[test]
fn name_errors_found_before_resolution_have_the_resolve_stage() {
    let tree = WorkloadItem::new("root").with_child(WorkloadItem::new(""));
    let errs = WorkloadBuilder::new(tree).allow(allow_all()).validate().unwrap_err();
    assert_eq!(
        origin_of(&errs, "spec.compositePodGroupTemplates[0].podGroupTemplates[0].name"),
        (Some(Stage::Resolve), names(&["root", ""]))
    );
}

#[test]
fn field_errors_serialize_with_their_origin() {
    let errs = WorkloadBuilder::new(WorkloadItem::new("job").with_default(SchedulingConfig::gang(None)))
        .allow(allow_all())
        .validate()
        .unwrap_err();
    let json = serde_json::to_value(&errs).unwrap();
    assert_eq!(
        json,
        serde_json::json!([{
            "type": "FieldValueRequired",
            "field": "spec.podGroupTemplates[0].schedulingPolicy.gang.minCount",
            "detail": "gang scheduling requires minCount to be set after resolution",
            "message": "spec.podGroupTemplates[0].schedulingPolicy.gang.minCount: Required value: gang scheduling requires minCount to be set after resolution",
            "origin": {"stage": "validation", "item": ["job"]},
        }])
    );
}

// ---------------------------------------------------------------------------------------------------------
// Flat compilation for clusters without CompositePodGroup.

fn basic(name: &str) -> WorkloadItem {
    WorkloadItem::new(name).with_default(SchedulingConfig::basic())
}

fn gang_leaf(name: &str, n: i32) -> WorkloadItem {
    WorkloadItem::new(name).with_default(SchedulingConfig::gang(Some(n)))
}

fn flat(tree: WorkloadItem) -> Result<k8s_openapi::api::scheduling::v1alpha3::Workload, FieldErrors> {
    WorkloadBuilder::new(tree).allow(allow_all()).build_flat(
        "w",
        "default",
        &owner_kind("jobset.x-k8s.io/v1alpha2", "JobSet", "js"),
    )
}

#[test]
fn a_flat_workload_has_one_pod_group_template_per_leaf_in_pre_order() {
    let tree = basic("root")
        .with_child(gang_leaf("driver", 1))
        .with_child(
            basic("stage")
                .with_disruption_mode_default(Disruption::Single)
                .with_child(gang_leaf("a", 2))
                .with_child(
                    WorkloadItem::new("b").with_default(SchedulingConfig::gang(Some(3)).with_topology("kwas.dev/rack")),
                ),
        )
        .with_child(WorkloadItem::new("tail"));
    let workload = flat(tree.clone()).unwrap();
    assert!(workload.spec.composite_pod_group_templates.is_none());
    let templates = workload.spec.pod_group_templates.as_ref().unwrap();
    let names: Vec<&str> = templates.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["driver", "a", "b", "tail"]);
    assert_eq!(templates[2].scheduling_policy.gang.as_ref().unwrap().min_count, 3);
    assert_eq!(
        templates[2]
            .scheduling_constraints
            .as_ref()
            .unwrap()
            .topology
            .as_ref()
            .unwrap()[0]
            .key,
        "kwas.dev/rack"
    );
    // An unset policy compiles to Basic, as in the nested Workload.
    assert!(templates[3].scheduling_policy.basic.is_some());
    assert!(
        validate_workload(&workload).is_empty(),
        "{}",
        validate_workload(&workload)
    );
    // Identity as in `build`.
    let nested = WorkloadBuilder::new(tree)
        .allow(allow_all())
        .build("w", "default", &owner_kind("jobset.x-k8s.io/v1alpha2", "JobSet", "js"))
        .unwrap();
    assert_eq!(workload.metadata, nested.metadata);
    assert_eq!(workload.spec.controller_ref, nested.spec.controller_ref);
    // Its runtime groups are roots.
    let pg = new_pod_group(&workload, "b", &GroupName::new("w-b-0"), None, vec![]).unwrap();
    assert_eq!(pg.spec.parent_composite_pod_group_name, None);
    assert!(
        new_pod_group(
            &workload,
            "b",
            &GroupName::new("w-b-0"),
            Some(&GroupName::new("parent")),
            vec![]
        )
        .is_err()
    );
    // A single leaf compiles as `build` compiles it.
    let leaf = gang_leaf("job-pgt-0", 4);
    assert_eq!(
        flat(leaf.clone()).unwrap(),
        WorkloadBuilder::new(leaf)
            .allow(allow_all())
            .build("w", "default", &owner_kind("jobset.x-k8s.io/v1alpha2", "JobSet", "js"))
            .unwrap()
    );
}

trait DefaultMode {
    fn with_disruption_mode_default(self, mode: Disruption) -> Self;
}

impl DefaultMode for WorkloadItem {
    fn with_disruption_mode_default(mut self, mode: Disruption) -> Self {
        let cfg = self.default_config.take().unwrap_or_default();
        self.default_config = Some(cfg.with_disruption_mode(mode));
        self
    }
}

#[test]
fn composite_levels_that_a_flat_workload_cannot_express_are_refused() {
    let root = "spec.compositePodGroupTemplates[0]";
    let mid = "spec.compositePodGroupTemplates[0].compositePodGroupTemplates[0]";
    for (root_cfg, mid_cfg, expected) in [
        (
            SchedulingConfig::gang(Some(1)),
            SchedulingConfig::basic(),
            vec![(format!("{root}.schedulingPolicy"), vec!["root"], FLAT_COMPOSITE_GANG)],
        ),
        (
            SchedulingConfig::basic(),
            SchedulingConfig::basic().with_topology("kwas.dev/block"),
            vec![(
                format!("{mid}.schedulingConstraints.topology"),
                vec!["root", "mid"],
                FLAT_COMPOSITE_TOPOLOGY,
            )],
        ),
        (
            SchedulingConfig::gang(Some(1)).with_disruption_mode(Disruption::All),
            SchedulingConfig::gang(Some(1)).with_disruption_mode(Disruption::All),
            vec![
                (format!("{root}.schedulingPolicy"), vec!["root"], FLAT_COMPOSITE_GANG),
                (format!("{root}.disruptionMode"), vec!["root"], FLAT_COMPOSITE_ALL),
                (
                    format!("{mid}.schedulingPolicy"),
                    vec!["root", "mid"],
                    FLAT_COMPOSITE_GANG,
                ),
                (format!("{mid}.disruptionMode"), vec!["root", "mid"], FLAT_COMPOSITE_ALL),
            ],
        ),
    ] {
        let leaf = WorkloadItem::new("leaf")
            .with_default(SchedulingConfig::gang(Some(2)).with_disruption_mode(Disruption::All));
        let tree = WorkloadItem::new("root")
            .with_default(root_cfg)
            .with_child(WorkloadItem::new("mid").with_default(mid_cfg).with_child(leaf));
        // The nested Workload takes it ...
        WorkloadBuilder::new(tree.clone())
            .allow(allow_all())
            .build("w", "default", &owner("j"))
            .unwrap();
        // ... the flat one refuses it, at the composite's configuration.
        let errs = flat(tree).unwrap_err();
        let got: Vec<(String, Vec<String>, &str)> = errs
            .iter()
            .map(|e| {
                assert_eq!(e.error_type, FieldErrorType::Forbidden, "{e}");
                assert_eq!(e.stage(), Some(Stage::Compile), "{e}");
                (e.field.to_string(), e.item_path().to_vec(), e.detail.as_str())
            })
            .collect();
        let want: Vec<(String, Vec<String>, &str)> =
            expected.into_iter().map(|(p, item, d)| (p, names(&item), d)).collect();
        assert_eq!(got, want);
    }
}

#[test]
fn flat_refusals_are_reported_at_the_composites_config_path() {
    let tree = WorkloadItem::new("jobset")
        .with_default(SchedulingConfig::gang(Some(2)))
        .with_config_path("spec.scheduling")
        .with_children([gang_leaf("a", 1), gang_leaf("b", 1)]);
    let errs = flat(tree).unwrap_err();
    assert_eq!(
        errs.to_string(),
        format!("spec.scheduling.schedulingPolicy: Forbidden: {FLAT_COMPOSITE_GANG}")
    );
}

#[test]
fn a_flat_workload_holds_at_most_eight_templates() {
    let group = |g: usize| basic(&format!("g{g}")).with_children((0..5).map(|i| gang_leaf(&format!("g{g}-l{i}"), 1)));
    let tree = basic("root").with_children([group(0), group(1)]);
    let errs = flat(tree.clone()).unwrap_err();
    assert_eq!(errs.len(), 1, "{errs}");
    assert_eq!(
        errs.to_string(),
        "spec.podGroupTemplates: Too many: 10: must have at most 8 items"
    );
    // The nested Workload holds them (5 per list).
    WorkloadBuilder::new(tree)
        .allow(allow_all())
        .build("w", "default", &owner("j"))
        .unwrap();
}

#[test]
fn a_leafs_errors_are_reported_at_its_flat_template_path() {
    let tree = basic("root")
        .with_child(gang_leaf("first", 1))
        .with_child(basic("mid").with_child(WorkloadItem::new("deep").with_default(SchedulingConfig::gang(None))));
    let errs = flat(tree).unwrap_err();
    assert_eq!(errs.len(), 1, "{errs}");
    let e = &errs.as_slice()[0];
    assert_eq!(
        e.field.as_str(),
        "spec.podGroupTemplates[1].schedulingPolicy.gang.minCount"
    );
    assert_eq!(e.item_path(), ["root", "mid", "deep"]);
    assert_eq!(e.error_type, Required);
}

// ---------------------------------------------------------------------------------------------------------
// Building from an existing Workload (KEP-5547 NewBuilderFromExistingWorkload).

fn parent_workload() -> k8s_openapi::api::scheduling::v1alpha3::Workload {
    let tree = WorkloadItem::new("trainer")
        .with_default(SchedulingConfig::gang(Some(2)).with_topology("kwas.dev/block"))
        .with_child(gang_leaf("driver", 1))
        .with_child(basic("stage").with_child(gang_leaf("workers", 8)));
    WorkloadBuilder::new(tree)
        .allow(allow_all())
        .build(
            "trainer-wl",
            "ml",
            &owner_kind("jobset.x-k8s.io/v1alpha2", "JobSet", "trainer"),
        )
        .unwrap()
}

#[test]
fn an_existing_workload_instantiates_groups_like_the_free_functions() {
    let workload = parent_workload();
    let job = owner_kind("batch/v1", "Job", "trainer-workers-0");
    let builder = ExistingWorkloadBuilder::new(&workload).with_owner(job.clone());
    assert_eq!(builder.workload(), &workload);
    assert_eq!(builder.owners(), std::slice::from_ref(&job));
    assert!(matches!(
        builder.template("workers"),
        Some(TemplateRef::PodGroup(_, Some("stage")))
    ));
    assert!(builder.template("nope").is_none());
    // Root CompositePodGroup, nested CompositePodGroup, PodGroup: the same objects as the free functions.
    let root = builder
        .new_composite_pod_group("trainer", &GroupName::new("root-0"), None)
        .unwrap();
    assert_eq!(
        root,
        new_composite_pod_group(&workload, "trainer", &GroupName::new("root-0"), None, vec![job.clone()]).unwrap()
    );
    let stage = builder
        .new_composite_pod_group("stage", &GroupName::new("stage-0"), Some(&GroupName::new("root-0")))
        .unwrap();
    assert_eq!(stage.spec.parent_composite_pod_group_name.as_deref(), Some("root-0"));
    let group = builder
        .new_pod_group(
            "workers",
            &GroupName::new("workers-0"),
            Some(&GroupName::new("stage-0")),
        )
        .unwrap();
    assert_eq!(
        group,
        new_pod_group(
            &workload,
            "workers",
            &GroupName::new("workers-0"),
            Some(&GroupName::new("stage-0")),
            vec![job.clone()]
        )
        .unwrap()
    );
    assert_eq!(group.metadata.namespace.as_deref(), Some("ml"));
    assert_eq!(group.spec.scheduling_policy.gang.as_ref().unwrap().min_count, 8);
    assert!(validate_pod_group(&group).is_empty());
    // The same errors as the free functions.
    assert!(matches!(
        builder.new_pod_group("stage", &GroupName::new("x"), Some(&GroupName::new("root-0"))),
        Err(InstantiateError::WrongKind { .. })
    ));
    assert!(matches!(
        builder.new_pod_group("workers", &GroupName::new("x"), None),
        Err(InstantiateError::ParentRequired { .. })
    ));
    assert!(matches!(
        builder.new_composite_pod_group("missing", &GroupName::new("x"), None),
        Err(InstantiateError::TemplateNotFound { .. })
    ));
    // No owner: groups without ownerReferences.
    let unowned = ExistingWorkloadBuilder::new(&workload)
        .new_pod_group("driver", &GroupName::new("d"), Some(&GroupName::new("root-0")))
        .unwrap();
    assert!(unowned.metadata.owner_references.is_none());
}

#[test]
fn a_delegated_child_instantiates_its_group_from_its_downward_mapping() {
    let workload = parent_workload();
    let job = owner_kind("batch/v1", "Job", "trainer-workers-1");
    let builder = ExistingWorkloadBuilder::new(&workload).with_owner(job.clone());
    let mapping = DownwardMapping::new("workers").with_parent("stage-0");
    let name = builder.pod_group_name_for(&mapping, &job.uid);
    assert_eq!(
        name,
        generate_pod_group_name_for_owner(
            TemplateKey {
                workload: "trainer-wl",
                template: "workers"
            },
            &job.uid
        )
    );
    let group = builder.new_pod_group_from_mapping(&name, &mapping).unwrap();
    assert_eq!(group.metadata.name.as_deref(), Some(name.as_str()));
    assert_eq!(group.spec.parent_composite_pod_group_name.as_deref(), Some("stage-0"));
    let r = group.spec.workload_ref.as_ref().unwrap();
    assert_eq!(
        (r.workload_name.as_str(), r.template_name.as_str()),
        ("trainer-wl", "workers")
    );
    // A mapping that names a template the Workload does not have, or omits a required parent.
    assert!(matches!(
        builder.new_pod_group_from_mapping(
            &GroupName::new("x"),
            &DownwardMapping::new("wrokers").with_parent("stage-0")
        ),
        Err(InstantiateError::TemplateNotFound { .. })
    ));
    assert!(matches!(
        builder.new_pod_group_from_mapping(&GroupName::new("x"), &DownwardMapping::new("workers")),
        Err(InstantiateError::ParentRequired { .. })
    ));
}

#[test]
fn building_from_an_existing_workload_is_refused() {
    let workload = parent_workload();
    let builder = ExistingWorkloadBuilder::new(&workload);
    let errs = builder
        .build(
            "trainer-wl",
            "ml",
            &owner_kind("jobset.x-k8s.io/v1alpha2", "JobSet", "trainer"),
        )
        .unwrap_err();
    assert_eq!(errs.len(), 1);
    let e = &errs.as_slice()[0];
    assert_eq!(
        (e.error_type, e.field.as_str()),
        (FieldErrorType::Forbidden, "metadata.name")
    );
    assert_eq!(e.stage(), Some(Stage::Compile));
    assert_eq!(
        e.to_string(),
        "metadata.name: Forbidden: cannot build Workload ml/trainer-wl from a builder made from the existing \
         Workload ml/trainer-wl: it only instantiates that Workload's groups, and a Workload is never rebuilt over"
    );
}
