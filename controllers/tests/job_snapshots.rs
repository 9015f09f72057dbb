//! insta snapshots of what the Job controller creates: the Workload, the PodGroup and a pod, for KEP-6089's
//! Example 1 (gang, zone, all) and Example 2 (block omitted: Basic), and for a Job delegated by a parent.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kwas_api_types::names::JOB_CONTROLLER_NAME;
use kwas_controllers::job::mode::{ManagementMode, management_mode};
use kwas_controllers::job::pods::new_pod;
use kwas_controllers::job::scheduling::{desired_delegated_pod_group, desired_root_pod_group, desired_workload};
use serde_json::json;
use workloadbuilder::{AllowList, DownwardMapping, PolicyOption, SchedulingConfig, WorkloadBuilder, WorkloadItem};

fn fixture_job(name: &str) -> Job {
    let path = format!(
        "{}/../workloadbuilder/tests/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn root_objects(job: &Job) -> serde_json::Value {
    assert_eq!(management_mode(job).unwrap(), ManagementMode::Both);
    let mut workload = desired_workload(job, JOB_CONTROLLER_NAME).unwrap();
    workload.metadata.uid = Some("workload-uid".into());
    let template = workload.spec.pod_group_templates.as_ref().unwrap()[0].name.clone();
    let group = desired_root_pod_group(job, &workload, &template, JOB_CONTROLLER_NAME).unwrap();
    let index = (job.spec.as_ref().unwrap().completion_mode.as_deref() == Some("Indexed")).then_some(0);
    let pod = new_pod(job, index, group.metadata.name.as_deref());
    json!({"workload": workload, "podGroup": group, "pod": pod})
}

#[test]
fn kep_example_1_gang_zone_all() {
    insta::assert_yaml_snapshot!(root_objects(&fixture_job("job-example-1.yaml")));
}

#[test]
fn kep_example_2_basic() {
    insta::assert_yaml_snapshot!(root_objects(&fixture_job("job-example-2.yaml")));
}

#[test]
fn delegated_child_job() {
    // The parent (a JobSet) compiled a gang of gangs; it created the root CompositePodGroup and delegates
    // the PodGroups to the Job controller through the downward-mapping annotations.
    let jobset = OwnerReference {
        api_version: "jobset.x-k8s.io/v1alpha2".into(),
        kind: "JobSet".into(),
        name: "pretrain".into(),
        uid: "jobset-uid".into(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    };
    let root = WorkloadItem::new("jobset")
        .with_default(SchedulingConfig::gang(Some(17)).with_topology("kwas.dev/block"))
        .with_child(WorkloadItem::new("driver").with_default(SchedulingConfig::basic()))
        .with_child(
            WorkloadItem::new("workers").with_default(SchedulingConfig::gang(Some(4)).with_topology("kwas.dev/rack")),
        );
    let workload = WorkloadBuilder::new(root)
        .allow(AllowList::new().policies([PolicyOption::Basic, PolicyOption::Gang]))
        .build("pretrain-wl", "ml", &jobset)
        .unwrap();
    let job: Job = serde_json::from_value(json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "pretrain-workers-3",
            "namespace": "ml",
            "uid": "job-uid",
            "ownerReferences": [jobset],
            "annotations": {
                "scheduling.k8s.io/group-template-name": "workers",
                "scheduling.k8s.io/parent-composite-podgroup": "pretrain-wl-jobset-root"
            }
        },
        "spec": {
            "parallelism": 4,
            "completions": 4,
            "completionMode": "Indexed",
            "managedBy": "kwas.dev/job-controller",
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "worker", "image": "worker-image"}]}}
        }
    }))
    .unwrap();
    let ManagementMode::PodGroupOnly(mapping) = management_mode(&job).unwrap() else {
        panic!("delegated")
    };
    assert_eq!(
        mapping,
        DownwardMapping::new("workers").with_parent("pretrain-wl-jobset-root")
    );
    let group = desired_delegated_pod_group(&job, &workload, &mapping, JOB_CONTROLLER_NAME).unwrap();
    assert!(workloadbuilder::validation::validate_pod_group(&group).is_empty());
    let pod = new_pod(&job, Some(2), group.metadata.name.as_deref());
    insta::assert_yaml_snapshot!(json!({"podGroup": group, "pod": pod}));
}

/// The gang recovery policy on a Job reaches its PodGroup (the scheduler reads it there); a Job without
/// one gives its PodGroup none.
#[test]
fn the_recovery_policy_reaches_the_pod_group() {
    let key = kwas_api_types::names::annotations::GANG_RECOVERY_SECONDS;
    let mut job = fixture_job("job-example-1.yaml");
    let mut workload = desired_workload(&job, JOB_CONTROLLER_NAME).unwrap();
    workload.metadata.uid = Some("workload-uid".into());
    let template = workload.spec.pod_group_templates.as_ref().unwrap()[0].name.clone();
    let group = desired_root_pod_group(&job, &workload, &template, JOB_CONTROLLER_NAME).unwrap();
    assert!(!group.metadata.annotations.unwrap_or_default().contains_key(key));
    job.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(key.to_string(), "30".to_string());
    let group = desired_root_pod_group(&job, &workload, &template, JOB_CONTROLLER_NAME).unwrap();
    assert_eq!(
        group
            .metadata
            .annotations
            .unwrap_or_default()
            .get(key)
            .map(String::as_str),
        Some("30")
    );
}
