//! insta YAML snapshots of compiled Workloads (and the runtime groups of the JobSet examples): what a user
//! would look at. Review changes with `cargo insta review` (or `INSTA_UPDATE=always` and `git diff`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "workloadbuilder/common/mod.rs"]
mod common;

use common::*;
use workloadbuilder::validation::*;
use workloadbuilder::*;

fn build(item: WorkloadItem, name: &str) -> k8s_openapi::api::scheduling::v1alpha3::Workload {
    let owner = owner_kind("example.com/v1", "ServingSet", name);
    WorkloadBuilder::new(item)
        .allow(allow_all())
        .build(name, "default", &owner)
        .unwrap()
}

#[test]
fn job_example_1_gang_zone_all() {
    let workload = compile_job(&parse_job("job-example-1.yaml")).unwrap();
    assert!(validate_workload(&workload).is_empty());
    insta::assert_yaml_snapshot!(workload);
}

#[test]
fn job_example_2_omitted_block_is_basic() {
    let workload = compile_job(&parse_job("job-example-2.yaml")).unwrap();
    assert!(validate_workload(&workload).is_empty());
    insta::assert_yaml_snapshot!(workload);
}

fn jobset_runtime(js: &JobSet, workload: &k8s_openapi::api::scheduling::v1alpha3::Workload) -> serde_json::Value {
    let owner = owner_of("jobset.x-k8s.io/v1alpha2", "JobSet", &js.metadata);
    let wl = workload.metadata.name.as_deref().unwrap();
    let root_name = generate_pod_group_name(TemplateKey {
        workload: wl,
        template: "jobset",
    });
    let root = new_composite_pod_group(workload, "jobset", &root_name, None, vec![owner.clone()]).unwrap();
    // One PodGroup per child Job; show the first replica of each replicated job.
    let groups: Vec<_> = js
        .spec
        .replicated_jobs
        .iter()
        .map(|rj| {
            let job_name = format!("{}-{}-0", js.metadata.name.as_deref().unwrap(), rj.name);
            let name = generate_pod_group_name(TemplateKey {
                workload: wl,
                template: &job_name,
            });
            new_pod_group(workload, &rj.name, &name, Some(&root_name), vec![owner.clone()]).unwrap()
        })
        .collect();
    serde_json::json!({ "compositePodGroup": root, "podGroups": groups })
}

#[test]
fn jobset_option_a_nested_configuration() {
    let js = parse_jobset("jobset-option-a.yaml");
    let workload = compile_jobset(&js).unwrap();
    assert!(validate_workload(&workload).is_empty());
    insta::assert_yaml_snapshot!("jobset_option_a_workload", workload);
    insta::assert_yaml_snapshot!("jobset_option_a_runtime", jobset_runtime(&js, &workload));
}

#[test]
fn jobset_option_b_targeted_policies() {
    let js = parse_jobset("jobset-option-b.yaml");
    let workload = compile_jobset(&js).unwrap();
    assert!(validate_workload(&workload).is_empty());
    insta::assert_yaml_snapshot!("jobset_option_b_workload", workload);
    insta::assert_yaml_snapshot!("jobset_option_b_runtime", jobset_runtime(&js, &workload));
}

#[test]
fn option_a_and_option_b_compile_to_the_same_workload() {
    let a = compile_jobset(&parse_jobset("jobset-option-a.yaml")).unwrap();
    let b = compile_jobset(&parse_jobset("jobset-option-b.yaml")).unwrap();
    assert_eq!(a, b);
}

#[test]
fn three_level_composite_tree() {
    let workload = build(three_level_item(), "serving");
    assert!(validate_workload(&workload).is_empty());
    insta::assert_yaml_snapshot!(workload);
}

#[test]
fn largest_allowed_tree() {
    let workload = build(largest_item(), "largest");
    assert!(validate_workload(&workload).is_empty());
    let root = &workload.spec.composite_pod_group_templates.as_ref().unwrap()[0];
    assert_eq!(root.composite_pod_group_templates.as_ref().unwrap().len(), 8);
    assert_eq!(root.pod_group_templates.as_ref().unwrap().len(), 8);
    insta::assert_yaml_snapshot!(workload);
}
