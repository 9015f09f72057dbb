//! insta snapshots of what the JobSet controller compiles and creates for KEP-6089's Option A and Option B
//! JobSets, under both PodGroup management strategies; and its validation of conflicting or invalid input.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use kube::ResourceExt;
use kwas_api_types::jobset::{JobSet, PodGroupManagement};
use kwas_controllers::jobset::children::{
    ChildWiring, children, desired_child_group, desired_job, desired_root_group, root_group_name,
};
use kwas_controllers::jobset::compile::{compile, desired_workload};
use serde_json::json;
use workloadbuilder::FieldErrorType;

fn fixture(name: &str) -> JobSet {
    let path = format!(
        "{}/../workloadbuilder/tests/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn objects(js: &JobSet, management: PodGroupManagement) -> serde_json::Value {
    let mut workload = desired_workload(js).unwrap();
    assert!(workloadbuilder::validation::validate_workload(&workload).is_empty());
    workload.metadata.uid = Some("workload-uid".into());
    let root = desired_root_group(js, &workload).unwrap();
    let wiring = ChildWiring {
        management,
        root_group: Some(root_group_name(&workload.name_any())),
        job_managed_by: Some("kwas.dev/job-controller".into()),
        restart_attempt: 0,
    };
    let kids = children(js);
    // The first Job of each replicated job (the others differ only by index).
    let firsts: Vec<_> = js
        .spec
        .replicated_jobs
        .iter()
        .map(|r| kids.iter().find(|c| c.replicated_job == r.name).unwrap().clone())
        .collect();
    let jobs: Vec<_> = firsts.iter().map(|c| desired_job(js, c, &wiring)).collect();
    let groups: Vec<_> = match management {
        PodGroupManagement::Centralized => firsts
            .iter()
            .map(|c| desired_child_group(js, &workload, c).unwrap())
            .collect(),
        PodGroupManagement::Delegated => Vec::new(),
    };
    json!({"workload": workload, "compositePodGroup": root, "podGroups": groups, "jobs": jobs, "childJobCount": kids.len()})
}

#[test]
fn option_a_centralized() {
    insta::assert_yaml_snapshot!(objects(
        &fixture("jobset-option-a.yaml"),
        PodGroupManagement::Centralized
    ));
}

#[test]
fn option_b_delegated() {
    insta::assert_yaml_snapshot!(objects(&fixture("jobset-option-b.yaml"), PodGroupManagement::Delegated));
}

#[test]
fn option_a_and_b_compile_to_the_same_workload() {
    assert_eq!(
        compile(&fixture("jobset-option-a.yaml")).unwrap(),
        compile(&fixture("jobset-option-b.yaml")).unwrap()
    );
}

#[test]
fn default_is_a_gang_of_gangs_over_every_child_job() {
    let mut js = fixture("jobset-option-b.yaml");
    js.spec.scheduling.as_mut().unwrap().scheduling_policy = None;
    let w = compile(&js).unwrap();
    let root = &w.spec.composite_pod_group_templates.as_ref().unwrap()[0];
    assert_eq!(root.scheduling_policy.gang.as_ref().unwrap().min_group_count, 17);
}

#[test]
fn both_options_for_one_replicated_job_are_rejected() {
    let mut js = fixture("jobset-option-b.yaml");
    let a = fixture("jobset-option-a.yaml");
    js.spec.replicated_jobs[1].template = a.spec.replicated_jobs[1].template.clone();
    let errs = compile(&js).unwrap_err();
    assert!(
        errs.contains(
            FieldErrorType::Forbidden,
            "spec.replicatedJobs[1].template.spec.scheduling"
        ),
        "{errs}"
    );
}

#[test]
fn a_policy_must_target_a_replicated_job() {
    let mut js = fixture("jobset-option-b.yaml");
    js.spec.scheduling.as_mut().unwrap().replicated_job_policies[0].target_replicated_job = "wrokers".into();
    let errs = compile(&js).unwrap_err();
    assert_eq!(
        errs.to_string(),
        "spec.scheduling.replicatedJobPolicies[0].targetReplicatedJob: Not found: \"wrokers\""
    );
}

#[test]
fn replicas_summing_past_the_bound_are_rejected() {
    // The CRD's rule refuses this at the API; the controller checks again for a CRD without the rule.
    let mut js = fixture("jobset-option-b.yaml");
    for r in &mut js.spec.replicated_jobs {
        r.replicas = 10_000;
    }
    let errs = compile(&js).unwrap_err();
    assert!(
        errs.to_string().contains(
            "spec.replicatedJobs: Invalid value: 20000: the replicated jobs' replicas may sum to at most 10000"
        ),
        "{errs}"
    );
}

#[test]
fn invalid_intent_reports_the_users_paths() {
    let mut js = fixture("jobset-option-a.yaml");
    let root = js.spec.scheduling.as_mut().unwrap();
    root.disruption_mode = Some(kwas_api_types::WorkloadCompositePodGroupDisruptionMode::all());
    let errs = compile(&js).unwrap_err();
    assert!(
        errs.contains(FieldErrorType::Invalid, "spec.scheduling.disruptionMode"),
        "{errs}"
    );
    let mut js = fixture("jobset-option-a.yaml");
    js.spec.replicated_jobs[1]
        .template
        .spec
        .as_mut()
        .unwrap()
        .scheduling
        .as_mut()
        .unwrap()
        .scheduling_policy = Some(
        k8s_openapi::api::scheduling::v1alpha3::WorkloadPodGroupSchedulingPolicy {
            basic: None,
            gang: Some(
                k8s_openapi::api::scheduling::v1alpha3::WorkloadPodGroupGangSchedulingPolicy { min_count: Some(0) },
            ),
        },
    );
    let errs = compile(&js).unwrap_err();
    assert_eq!(
        errs.to_string(),
        "spec.replicatedJobs[1].template.spec.scheduling.schedulingPolicy.gang.minCount: Invalid value: 0: must be greater than or equal to 1"
    );
}

fn set_priority_class(js: &mut JobSet, i: usize, class: &str) {
    js.spec.replicated_jobs[i]
        .template
        .spec
        .as_mut()
        .unwrap()
        .template
        .spec
        .get_or_insert_default()
        .priority_class_name = Some(class.into());
}

#[test]
fn every_group_carries_the_pods_priority_class_and_jobs_must_agree() {
    let mut js = fixture("jobset-option-b.yaml");
    for i in 0..js.spec.replicated_jobs.len() {
        set_priority_class(&mut js, i, "high");
    }
    let workload = compile(&js).unwrap();
    let root = &workload.spec.composite_pod_group_templates.as_ref().unwrap()[0];
    assert_eq!(root.priority_class_name.as_deref(), Some("high"));
    for leaf in root.pod_group_templates.as_deref().unwrap_or_default() {
        assert_eq!(leaf.priority_class_name.as_deref(), Some("high"), "{}", leaf.name);
    }
    let group = desired_child_group(&js, &workload, &children(&js)[0]).unwrap();
    assert_eq!(group.spec.priority_class_name.as_deref(), Some("high"));

    set_priority_class(&mut js, 1, "low");
    let errs = compile(&js).unwrap_err();
    assert_eq!(
        errs.to_string(),
        "spec.replicatedJobs[1].template.spec.template.spec.priorityClassName: Invalid value: \"low\": must equal spec.replicatedJobs[0]'s (\"high\"): all pods and groups of a JobSet share one priority"
    );
}
