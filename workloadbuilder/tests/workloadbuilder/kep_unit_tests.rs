//! KEP-6089 "Test Plan / Unit tests", one test per bullet, plus the reference integration test for
//! multi-level controllers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use k8s_openapi::api::scheduling::v1alpha3::{PodGroup, Workload};
use workloadbuilder::validation::*;
use workloadbuilder::*;

fn only_template(workload: &Workload) -> &k8s_openapi::api::scheduling::v1alpha3::PodGroupTemplate {
    let templates = workload.spec.pod_group_templates.as_ref().unwrap();
    assert_eq!(templates.len(), 1);
    assert!(workload.spec.composite_pod_group_templates.is_none());
    &templates[0]
}

fn build_leaf(cfg: SchedulingConfig) -> Workload {
    WorkloadBuilder::new(WorkloadItem::new("job-pgt-0").with_default(cfg))
        .allow(allow_all())
        .build("job-wl", "default", &owner("job"))
        .unwrap()
}

fn instantiate(workload: &Workload) -> PodGroup {
    let template = &only_template(workload).name;
    new_pod_group(workload, template, &GroupName::new("job-pg"), None, vec![owner("job")]).unwrap()
}

#[test]
fn compiles_a_basic_policy_into_the_expected_workload_and_pod_group() {
    let workload = build_leaf(SchedulingConfig::basic());
    let template = only_template(&workload);
    assert!(template.scheduling_policy.basic.is_some() && template.scheduling_policy.gang.is_none());
    let pg = instantiate(&workload);
    assert!(pg.spec.scheduling_policy.basic.is_some());
    assert!(pg.spec.parent_composite_pod_group_name.is_none());
    assert!(validate_pod_group(&pg).is_empty());
}

#[test]
fn compiles_a_gang_policy_into_the_expected_workload_and_pod_group() {
    let workload = build_leaf(SchedulingConfig::gang(Some(3)));
    assert_eq!(
        only_template(&workload)
            .scheduling_policy
            .gang
            .as_ref()
            .unwrap()
            .min_count,
        3
    );
    let pg = instantiate(&workload);
    assert_eq!(pg.spec.scheduling_policy.gang.unwrap().min_count, 3);
    let r = pg.spec.workload_ref.unwrap();
    assert_eq!(
        (r.workload_name.as_str(), r.template_name.as_str()),
        ("job-wl", "job-pgt-0")
    );
}

#[test]
fn maps_topology_constraints_disruption_mode_and_resource_claims() {
    let cfg = SchedulingConfig::gang(Some(2))
        .with_topology("topology.kubernetes.io/zone")
        .with_disruption_mode(Disruption::All)
        .with_resource_claim(ResourceClaim {
            name: "gpus".into(),
            resource_claim_name: None,
            resource_claim_template_name: Some("a100".into()),
        });
    let workload = build_leaf(cfg);
    let t = only_template(&workload);
    assert_eq!(
        t.scheduling_constraints.as_ref().unwrap().topology.as_ref().unwrap()[0].key,
        "topology.kubernetes.io/zone"
    );
    assert!(t.disruption_mode.as_ref().unwrap().all.is_some());
    assert_eq!(
        t.resource_claims.as_ref().unwrap()[0]
            .resource_claim_template_name
            .as_deref(),
        Some("a100")
    );
    let pg = instantiate(&workload);
    assert_eq!(pg.spec.scheduling_constraints, t.scheduling_constraints);
    assert_eq!(pg.spec.disruption_mode, t.disruption_mode);
    assert_eq!(pg.spec.resource_claims, t.resource_claims);
}

#[test]
fn merges_controller_defaults_with_user_overrides() {
    // The user's gang overrides the controller's default Basic; the default topology survives.
    let item = WorkloadItem::new("job-pgt-0")
        .with_default(SchedulingConfig::basic().with_topology("kwas.dev/rack"))
        .with_user_config(Some(SchedulingConfig::gang(Some(5))));
    let resolved = WorkloadBuilder::new(item).resolve();
    assert_eq!(resolved.config.gang_policy().unwrap().min_count, Some(5));
    assert_eq!(resolved.config.topology_key(), Some("kwas.dev/rack"));
}

#[test]
fn runs_callbacks_after_the_merge_and_defaults_min_count_from_parallelism() {
    let mut job = parse_job("job-example-1.yaml");
    let item = job_item(&job).unwrap();
    let resolved = WorkloadBuilder::new(item.clone()).resolve();
    assert_eq!(resolved.config.gang_policy().unwrap().min_count, Some(4));
    // An explicit minCount is not overwritten by the defaulting callback.
    job.spec
        .as_mut()
        .unwrap()
        .scheduling
        .as_mut()
        .unwrap()
        .scheduling_policy
        .as_mut()
        .unwrap()
        .gang =
        Some(k8s_openapi::api::scheduling::v1alpha3::WorkloadPodGroupGangSchedulingPolicy { min_count: Some(2) });
    let resolved = WorkloadBuilder::new(job_item(&job).unwrap()).resolve();
    assert_eq!(resolved.config.gang_policy().unwrap().min_count, Some(2));
    // The caller's tree is unchanged by resolution.
    assert_eq!(
        item.user_config,
        Some(
            SchedulingConfig::gang(None)
                .with_topology("topology.kubernetes.io/zone")
                .with_disruption_mode(Disruption::All)
        )
    );
}

#[test]
fn validate_rejects_semantically_invalid_configurations() {
    let item = WorkloadItem::new("job-pgt-0")
        .with_default(SchedulingConfig::basic())
        .with_user_config(Some(SchedulingConfig::default().with_disruption_mode(Disruption::All)))
        .with_config_path("spec.scheduling");
    let errs = WorkloadBuilder::new(item).allow(allow_all()).validate().unwrap_err();
    assert_eq!(
        errs.to_string(),
        "spec.scheduling.disruptionMode: Invalid value: \"\": the disruptionMode `all` is not supported with the Basic scheduling policy"
    );
    let gang_without_count = WorkloadItem::new("job-pgt-0").with_default(SchedulingConfig::gang(None));
    let errs = WorkloadBuilder::new(gang_without_count)
        .allow(allow_all())
        .validate()
        .unwrap_err();
    assert_eq!(
        errs.to_string(),
        "spec.podGroupTemplates[0].schedulingPolicy.gang.minCount: Required value: gang scheduling requires minCount to be set after resolution"
    );
}

#[test]
fn single_level_item_produces_a_leaf_pod_group_only() {
    let workload = compile_job(&parse_job("job-example-2.yaml")).unwrap();
    let t = only_template(&workload);
    assert_eq!(t.name, "process-pgt-0");
    assert!(t.scheduling_policy.basic.is_some());
    assert!(matches!(
        find_template(&workload, "process-pgt-0"),
        Some(TemplateRef::PodGroup(_, None))
    ));
}

#[test]
fn multi_level_tree_produces_a_composite_pod_group_with_parent_child_structure() {
    let item = three_level_item();
    let workload = WorkloadBuilder::new(item)
        .allow(allow_all())
        .build(
            "serving",
            "default",
            &owner_kind("example.com/v1", "ServingSet", "serving"),
        )
        .unwrap();
    assert!(workload.spec.pod_group_templates.is_none());
    let root = &workload.spec.composite_pod_group_templates.as_ref().unwrap()[0];
    assert_eq!(root.name, "serving");
    assert_eq!(root.scheduling_policy.gang.as_ref().unwrap().min_group_count, 2);
    let replicas = root.composite_pod_group_templates.as_ref().unwrap();
    assert_eq!(
        replicas.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(),
        ["replica-0", "replica-1"]
    );
    assert_eq!(root.pod_group_templates.as_ref().unwrap()[0].name, "frontend");
    let leaves: Vec<_> = replicas[1]
        .pod_group_templates
        .as_ref()
        .unwrap()
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(leaves, ["leader-1", "workers-1"]);
    assert!(matches!(
        find_template(&workload, "workers-1"),
        Some(TemplateRef::PodGroup(_, Some("replica-1")))
    ));
    assert!(matches!(
        find_template(&workload, "replica-0"),
        Some(TemplateRef::Composite(_, Some("serving")))
    ));
}

#[test]
fn map_helpers_translate_api_types_into_the_ir() {
    let js = parse_jobset("jobset-option-b.yaml");
    let s = js.spec.scheduling.as_ref().unwrap();
    let path = FieldPath::new("spec").child("scheduling");
    let block = CompositeBlock {
        scheduling_policy: s.scheduling_policy.as_ref(),
        scheduling_constraints: s.scheduling_constraints.as_ref(),
        disruption_mode: s.disruption_mode.as_ref(),
    };
    let root = allow_all().map_composite(Some(block), &path).unwrap().unwrap();
    assert_eq!(root, SchedulingConfig::basic());
    let p = &s.replicated_job_policies[0];
    let block = PodGroupBlock {
        scheduling_policy: p.scheduling_policy.as_ref(),
        scheduling_constraints: p.scheduling_constraints.as_ref(),
        disruption_mode: p.disruption_mode.as_ref(),
        resource_claims: &[],
    };
    let leaf = allow_all().map_pod_group(Some(block), &path).unwrap().unwrap();
    assert_eq!(
        leaf,
        SchedulingConfig {
            constraints: Some(SchedulingConstraints::topology("topology.kubernetes.io/rack")),
            ..Default::default()
        }
    );
}

#[test]
fn reference_multi_level_controller_produces_composite_and_child_pod_groups() {
    // A JobSet with the default gang of gangs: one CompositePodGroup, one PodGroup per child Job under it.
    let mut js = parse_jobset("jobset-option-b.yaml");
    js.spec.scheduling.as_mut().unwrap().scheduling_policy = None;
    let workload = compile_jobset(&js).unwrap();
    assert!(validate_workload(&workload).is_empty());
    let wl = workload.metadata.name.clone().unwrap();
    let root = workload.spec.composite_pod_group_templates.as_ref().unwrap()[0].clone();
    assert_eq!(
        root.scheduling_policy.gang.as_ref().unwrap().min_group_count,
        17,
        "1 driver + 16 workers"
    );

    let owner = owner_of("jobset.x-k8s.io/v1alpha2", "JobSet", &js.metadata);
    let root_name = generate_pod_group_name(TemplateKey {
        workload: &wl,
        template: "jobset",
    });
    let cpg = new_composite_pod_group(&workload, "jobset", &root_name, None, vec![owner.clone()]).unwrap();
    assert!(validate_composite_pod_group(&cpg).is_empty());
    assert!(cpg.spec.parent_composite_pod_group_name.is_none());
    let mut groups = Vec::new();
    for rj in &js.spec.replicated_jobs {
        for i in 0..rj.replicas {
            let name = generate_pod_group_name(TemplateKey {
                workload: &wl,
                template: &format!("pretrain-{}-{i}", rj.name),
            });
            let pg = new_pod_group(&workload, &rj.name, &name, Some(&root_name), vec![owner.clone()]).unwrap();
            assert!(validate_pod_group(&pg).is_empty(), "{}", validate_pod_group(&pg));
            groups.push(pg);
        }
    }
    assert_eq!(groups.len(), 17);
    assert!(
        groups
            .iter()
            .all(|g| g.spec.parent_composite_pod_group_name.as_deref() == Some(root_name.as_str()))
    );
    let names: std::collections::BTreeSet<_> = groups.iter().map(|g| g.metadata.name.clone()).collect();
    assert_eq!(names.len(), 17, "runtime names are distinct");
    // Instantiation errors are typed.
    assert!(matches!(
        new_pod_group(&workload, "workers", &GroupName::new("x"), None, vec![]),
        Err(InstantiateError::ParentRequired { .. })
    ));
    assert!(matches!(
        new_composite_pod_group(
            &workload,
            "jobset",
            &GroupName::new("x"),
            Some(&GroupName::new("p")),
            vec![]
        ),
        Err(InstantiateError::UnexpectedParent { .. })
    ));
    assert!(matches!(
        new_pod_group(&workload, "jobset", &GroupName::new("x"), None, vec![]),
        Err(InstantiateError::WrongKind { .. })
    ));
    assert!(matches!(
        new_pod_group(&workload, "nope", &GroupName::new("x"), None, vec![]),
        Err(InstantiateError::TemplateNotFound { .. })
    ));
}
