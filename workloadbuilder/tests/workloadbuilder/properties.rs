//! Property tests: building never panics on arbitrary trees and configs; a tree that passes validation
//! compiles to a Workload that passes `validate_workload` (and whose templates all instantiate into valid
//! groups); compilation is deterministic.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use k8s_openapi::api::scheduling::v1alpha3::{CompositePodGroupTemplate, Workload};
use proptest::prelude::*;
use workloadbuilder::validation::*;
use workloadbuilder::*;

fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => "[a-z][a-z0-9]{0,3}",
        1 => Just(String::new()),
        1 => "[A-Z_.-][a-z]{0,2}",
    ]
}

fn topology_key() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("kwas.dev/rack".to_string()),
        Just("kwas.dev/block".to_string()),
        Just("topology.kubernetes.io/zone".to_string()),
        Just("not a key".to_string()),
        Just(String::new()),
    ]
}

fn claim() -> impl Strategy<Value = ResourceClaim> {
    (
        name(),
        proptest::option::of("[a-z]{1,3}"),
        proptest::option::of("[a-z]{1,3}"),
    )
        .prop_map(|(name, c, t)| ResourceClaim {
            name,
            resource_claim_name: c,
            resource_claim_template_name: t,
        })
}

fn config() -> impl Strategy<Value = SchedulingConfig> {
    (
        proptest::option::of(prop_oneof![
            Just(SchedulingPolicy::Basic),
            proptest::option::of(-1i32..6).prop_map(|min_count| SchedulingPolicy::Gang(GangPolicy { min_count })),
        ]),
        proptest::option::of(proptest::collection::vec(topology_key(), 0..3)),
        proptest::option::of(prop_oneof![Just(Disruption::Single), Just(Disruption::All)]),
        proptest::collection::vec(claim(), 0..3),
        proptest::option::of(prop_oneof![
            Just(String::new()),
            Just("high".to_string()),
            Just("low".to_string())
        ]),
    )
        .prop_map(
            |(policy, topology, disruption_mode, resource_claims, priority_class_name)| SchedulingConfig {
                policy,
                constraints: topology.map(|keys| SchedulingConstraints {
                    topology: keys
                        .into_iter()
                        .map(|key| k8s_openapi::api::scheduling::v1alpha3::TopologyConstraint { key })
                        .collect(),
                }),
                disruption_mode,
                resource_claims,
                priority_class_name,
            },
        )
}

fn item_leaf() -> impl Strategy<Value = WorkloadItem> {
    (
        name(),
        proptest::option::of(config()),
        proptest::option::of(config()),
        any::<bool>(),
    )
        .prop_map(|(name, default, user, defaulting)| {
            let mut item = WorkloadItem::new(name).with_user_config(user);
            item.default_config = default;
            if defaulting {
                item = item.with_callback(|c| {
                    c.default_gang_min_count(2);
                });
            }
            item
        })
}

/// Trees up to 6 levels deep with up to 10 children per item: beyond every limit, so both valid and invalid
/// trees are generated.
fn tree() -> impl Strategy<Value = WorkloadItem> {
    item_leaf().prop_recursive(6, 96, 10, |inner| {
        (item_leaf(), proptest::collection::vec(inner, 0..10)).prop_map(|(item, children)| item.with_children(children))
    })
}

/// Trees that tend to be valid: DNS names made unique, gang counts set, no `all`, one priority class.
fn mostly_valid_tree() -> impl Strategy<Value = WorkloadItem> {
    let leaf = (
        proptest::option::of(1i32..5),
        proptest::option::of(prop_oneof![Just("kwas.dev/rack"), Just("kwas.dev/block")]),
    )
        .prop_map(|(min, key)| {
            let mut cfg = match min {
                Some(n) => SchedulingConfig::gang(Some(n)),
                None => SchedulingConfig::basic(),
            };
            if let Some(key) = key {
                cfg = cfg.with_topology(key);
            }
            WorkloadItem::new("x").with_default(cfg)
        });
    leaf.prop_recursive(4, 64, 6, |inner| {
        (1i32..4, proptest::collection::vec(inner, 1..6)).prop_map(|(n, children)| {
            WorkloadItem::new("x")
                .with_default(SchedulingConfig::gang(Some(n)))
                .with_children(children)
        })
    })
    .prop_map(|mut root| {
        let mut counter = 0;
        fn rename(item: &mut WorkloadItem, counter: &mut usize) {
            item.name = format!("t{counter}");
            *counter += 1;
            for c in &mut item.children {
                rename(c, counter);
            }
        }
        rename(&mut root, &mut counter);
        root
    })
}

fn build(root: WorkloadItem) -> Result<Workload, FieldErrors> {
    WorkloadBuilder::new(root)
        .allow(allow_all())
        .build("prop", "default", &owner("prop"))
}

/// Instantiate every template of a valid Workload (parents from the tree) and validate the groups.
fn instantiate_all(workload: &Workload) {
    fn composites(list: &[CompositePodGroupTemplate], parent: Option<&GroupName>, workload: &Workload) {
        for t in list {
            let name = GroupName::new(format!("{}-0", t.name));
            let cpg = new_composite_pod_group(workload, &t.name, &name, parent, vec![]).unwrap();
            assert!(
                validate_composite_pod_group(&cpg).is_empty(),
                "{}",
                validate_composite_pod_group(&cpg)
            );
            for leaf in t.pod_group_templates.iter().flatten() {
                let pg = new_pod_group(
                    workload,
                    &leaf.name,
                    &GroupName::new(format!("{}-0", leaf.name)),
                    Some(&name),
                    vec![],
                )
                .unwrap();
                assert!(validate_pod_group(&pg).is_empty(), "{}", validate_pod_group(&pg));
            }
            composites(
                t.composite_pod_group_templates.as_deref().unwrap_or_default(),
                Some(&name),
                workload,
            );
        }
    }
    for leaf in workload.spec.pod_group_templates.iter().flatten() {
        let pg = new_pod_group(workload, &leaf.name, &GroupName::new("pg-0"), None, vec![]).unwrap();
        assert!(validate_pod_group(&pg).is_empty(), "{}", validate_pod_group(&pg));
    }
    composites(
        workload
            .spec
            .composite_pod_group_templates
            .as_deref()
            .unwrap_or_default(),
        None,
        workload,
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn building_never_panics_and_valid_trees_compile_to_valid_workloads(root in tree()) {
        let builder = WorkloadBuilder::new(root.clone()).allow(allow_all());
        let validated = builder.validate();
        match build(root) {
            Ok(workload) => {
                prop_assert!(validated.is_ok());
                let errs = validate_workload(&workload);
                prop_assert!(errs.is_empty(), "{}", errs);
                instantiate_all(&workload);
            }
            Err(errs) => {
                prop_assert!(!errs.is_empty());
                prop_assert!(validated.is_err());
                // Errors render without panicking, each with a path.
                prop_assert!(errs.iter().all(|e| !e.field.is_empty()));
                let _ = errs.to_status("scheduling.k8s.io", "Workload", "prop");
            }
        }
    }

    #[test]
    fn mostly_valid_trees_compile_to_valid_workloads(root in mostly_valid_tree()) {
        if let Ok(workload) = build(root) {
            let errs = validate_workload(&workload);
            prop_assert!(errs.is_empty(), "{}", errs);
            instantiate_all(&workload);
            // The Workload survives a JSON round trip unchanged.
            let json = serde_json::to_string(&workload).unwrap();
            prop_assert_eq!(serde_json::from_str::<Workload>(&json).unwrap(), workload);
        }
    }

    #[test]
    fn compilation_is_deterministic(root in tree()) {
        let a = build(root.clone());
        let b = build(root.clone());
        prop_assert_eq!(a, b);
        prop_assert_eq!(WorkloadBuilder::new(root.clone()).resolve(), WorkloadBuilder::new(root).resolve());
    }

    #[test]
    fn mapping_a_block_never_panics_and_succeeds_exactly_when_validation_accepts_it(
        basic in any::<bool>(), gang in proptest::option::of(proptest::option::of(-2i32..3)),
        single in any::<bool>(), all in any::<bool>(),
    ) {
        use k8s_openapi::api::scheduling::v1alpha3 as api;
        let policy = api::WorkloadPodGroupSchedulingPolicy {
            basic: basic.then(|| api::WorkloadPodGroupBasicSchedulingPolicy(serde_json::json!({}))),
            gang: gang.map(|min_count| api::WorkloadPodGroupGangSchedulingPolicy { min_count }),
        };
        let mode = api::WorkloadPodGroupDisruptionMode {
            single: single.then(|| api::WorkloadPodGroupSingleDisruptionMode(serde_json::json!({}))),
            all: all.then(|| api::WorkloadPodGroupAllDisruptionMode(serde_json::json!({}))),
        };
        let path = FieldPath::new("spec").child("scheduling");
        let block = PodGroupBlock {
            scheduling_policy: Some(&policy),
            disruption_mode: Some(&mode),
            ..PodGroupBlock::default()
        };
        let errs = allow_all().validate_pod_group(&block, &path);
        let mapped = allow_all().map_pod_group(Some(block), &path);
        let unions_ok = (basic != gang.is_some()) && (single != all);
        prop_assert_eq!(mapped.is_ok(), errs.is_empty());
        if !unions_ok {
            prop_assert!(mapped.is_err());
        }
    }
}

/// The generators are not vacuous: random trees are sometimes valid and often not; "mostly valid" trees
/// almost always are (so the valid-tree properties above really run).
#[test]
fn generators_cover_valid_and_invalid_trees() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let (mut random_ok, mut mostly_ok) = (0, 0);
    for _ in 0..500 {
        if build(tree().new_tree(&mut runner).unwrap().current()).is_ok() {
            random_ok += 1;
        }
        if build(mostly_valid_tree().new_tree(&mut runner).unwrap().current()).is_ok() {
            mostly_ok += 1;
        }
    }
    assert!((5..450).contains(&random_ok), "random trees valid: {random_ok}/500");
    assert!(mostly_ok > 400, "mostly-valid trees valid: {mostly_ok}/500");
}
