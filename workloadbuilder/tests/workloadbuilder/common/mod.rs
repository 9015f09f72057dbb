//! Shared fixtures: controller-style mappings of the KEP-6089 examples onto the library, as a Job controller
//! and a JobSet-style controller use it.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use k8s_openapi::api::batch::v1::{Job, JobSchedulingConfiguration, JobTemplateSpec};
use k8s_openapi::api::scheduling::v1alpha3::{
    Workload, WorkloadPodGroupDisruptionMode, WorkloadPodGroupSchedulingConstraints, WorkloadPodGroupSchedulingPolicy,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kwas_api_types::{
    WorkloadCompositePodGroupDisruptionMode, WorkloadCompositePodGroupSchedulingConstraints,
    WorkloadCompositePodGroupSchedulingPolicy,
};
use serde::Deserialize;
use workloadbuilder::*;

pub const POLICIES: [PolicyOption; 2] = [PolicyOption::Basic, PolicyOption::Gang];
pub const MODES: [DisruptionModeOption; 2] = [DisruptionModeOption::Single, DisruptionModeOption::All];

pub fn allow_all() -> AllowList {
    AllowList::new().policies(POLICIES).disruption_modes(MODES)
}

pub fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

pub fn owner_of(api_version: &str, kind: &str, meta: &ObjectMeta) -> OwnerReference {
    OwnerReference {
        api_version: api_version.into(),
        kind: kind.into(),
        name: meta.name.clone().unwrap(),
        uid: meta.uid.clone().unwrap(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

pub fn owner(name: &str) -> OwnerReference {
    owner_kind("batch/v1", "Job", name)
}

pub fn owner_kind(api_version: &str, kind: &str, name: &str) -> OwnerReference {
    OwnerReference {
        api_version: api_version.into(),
        kind: kind.into(),
        name: name.into(),
        uid: format!("{name}-uid"),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// A Job's scheduling block mapped to the IR with paths under `path`.
pub fn map_job_scheduling(
    scheduling: Option<&JobSchedulingConfiguration>,
    path: &FieldPath,
) -> Result<Option<SchedulingConfig>, FieldErrors> {
    allow_all().map_pod_group(scheduling.map(PodGroupBlock::from), path)
}

/// The Job controller's tree: one leaf `<job>-pgt-0`, Basic by default, gang minCount = parallelism.
pub fn job_item(job: &Job) -> Result<WorkloadItem, FieldErrors> {
    workloadbuilder::job::job_workload_item(job)
}

pub fn compile_job(job: &Job) -> Result<Workload, FieldErrors> {
    workloadbuilder::job::build_job_workload(job)
}

pub fn parse_job(fixture_name: &str) -> Job {
    serde_saphyr::from_str(&fixture(fixture_name)).unwrap()
}

// A minimal JobSet shape (jobset.x-k8s.io/v1alpha2) for the KEP's reference examples.

#[derive(Deserialize)]
pub struct JobSet {
    pub metadata: ObjectMeta,
    pub spec: JobSetSpec,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobSetSpec {
    pub scheduling: Option<JobSetScheduling>,
    pub replicated_jobs: Vec<ReplicatedJob>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct JobSetScheduling {
    pub scheduling_policy: Option<WorkloadCompositePodGroupSchedulingPolicy>,
    pub scheduling_constraints: Option<WorkloadCompositePodGroupSchedulingConstraints>,
    pub disruption_mode: Option<WorkloadCompositePodGroupDisruptionMode>,
    #[serde(default)]
    pub replicated_job_policies: Vec<ReplicatedJobPolicy>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplicatedJobPolicy {
    pub target_replicated_job: String,
    pub scheduling_policy: Option<WorkloadPodGroupSchedulingPolicy>,
    pub scheduling_constraints: Option<WorkloadPodGroupSchedulingConstraints>,
    pub disruption_mode: Option<WorkloadPodGroupDisruptionMode>,
}

#[derive(Deserialize)]
pub struct ReplicatedJob {
    pub name: String,
    pub replicas: i32,
    pub template: JobTemplateSpec,
}

pub fn parse_jobset(fixture_name: &str) -> JobSet {
    serde_saphyr::from_str(&fixture(fixture_name)).unwrap()
}

/// The JobSet-style mapping: a composite root named `jobset` (gang of gangs by default, minGroupCount =
/// number of child Jobs), one leaf per replicated job (Basic by default, gang minCount = parallelism), user
/// intent from the root block, `replicatedJobPolicies` (Option B) or the Job template (Option A).
pub fn jobset_item(js: &JobSet) -> Result<WorkloadItem, FieldErrors> {
    let root_path = FieldPath::new("spec").child("scheduling");
    let scheduling = js.spec.scheduling.as_ref();
    let root_user = allow_all().map_composite(
        scheduling.map(|s| CompositeBlock {
            scheduling_policy: s.scheduling_policy.as_ref(),
            scheduling_constraints: s.scheduling_constraints.as_ref(),
            disruption_mode: s.disruption_mode.as_ref(),
        }),
        &root_path,
    )?;
    let child_groups: i32 = js.spec.replicated_jobs.iter().map(|r| r.replicas).sum();
    let mut children = Vec::new();
    for (i, rj) in js.spec.replicated_jobs.iter().enumerate() {
        let parallelism = rj
            .template
            .spec
            .as_ref()
            .and_then(|s| s.parallelism)
            .unwrap_or(1)
            .max(1);
        let targeted = scheduling.and_then(|s| {
            s.replicated_job_policies
                .iter()
                .enumerate()
                .find(|(_, p)| p.target_replicated_job == rj.name)
        });
        let (user, path) = match targeted {
            Some((j, p)) => {
                let path = root_path.child("replicatedJobPolicies").index(j);
                let block = PodGroupBlock {
                    scheduling_policy: p.scheduling_policy.as_ref(),
                    scheduling_constraints: p.scheduling_constraints.as_ref(),
                    disruption_mode: p.disruption_mode.as_ref(),
                    resource_claims: &[],
                };
                (allow_all().map_pod_group(Some(block), &path)?, path)
            }
            None => {
                let path = FieldPath::new("spec")
                    .child("replicatedJobs")
                    .index(i)
                    .child("template")
                    .child("spec")
                    .child("scheduling");
                let scheduling = rj.template.spec.as_ref().and_then(|s| s.scheduling.as_ref());
                (map_job_scheduling(scheduling, &path)?, path)
            }
        };
        children.push(
            WorkloadItem::new(rj.name.clone())
                .with_default(SchedulingConfig::basic())
                .with_user_config(user)
                .with_callback(move |cfg| {
                    cfg.default_gang_min_count(parallelism);
                })
                .with_config_path(path),
        );
    }
    Ok(WorkloadItem::new("jobset")
        .with_default(SchedulingConfig::gang(None))
        .with_user_config(root_user)
        .with_callback(move |cfg| {
            cfg.default_gang_min_count(child_groups);
        })
        .with_config_path(root_path)
        .with_children(children))
}

pub fn compile_jobset(js: &JobSet) -> Result<Workload, FieldErrors> {
    let owner = owner_of("jobset.x-k8s.io/v1alpha2", "JobSet", &js.metadata);
    let name = generate_workload_name(&owner);
    WorkloadBuilder::new(jobset_item(js)?).allow(allow_all()).build(
        &name,
        js.metadata.namespace.as_deref().unwrap(),
        &owner,
    )
}

/// A 3-level disaggregated-serving tree (KEP-6012's LeaderWorkerSet story): a gang root over replicas in one
/// block, each replica a gang of a leader and workers in one rack, atomic disruption per replica.
pub fn three_level_item() -> WorkloadItem {
    let replica = |i: usize| {
        WorkloadItem::new(format!("replica-{i}"))
            .with_default(
                SchedulingConfig::gang(Some(2))
                    .with_topology("kwas.dev/rack")
                    .with_disruption_mode(Disruption::All),
            )
            .with_child(
                WorkloadItem::new(format!("leader-{i}"))
                    .with_default(SchedulingConfig::gang(Some(1)).with_disruption_mode(Disruption::All)),
            )
            .with_child(
                WorkloadItem::new(format!("workers-{i}"))
                    .with_default(SchedulingConfig::gang(Some(4)).with_disruption_mode(Disruption::All)),
            )
    };
    WorkloadItem::new("serving")
        .with_default(SchedulingConfig::gang(Some(2)).with_topology("kwas.dev/block"))
        .with_child(WorkloadItem::new("frontend").with_default(SchedulingConfig::basic()))
        .with_children((0..2).map(replica))
}

/// The largest tree the limits allow under one root: three composite levels, each composite with 8 composite
/// and 8 leaf children where depth permits (1 + 8 + 64 composites, 584 leaves).
pub fn largest_item() -> WorkloadItem {
    let leaf = |name: String| WorkloadItem::new(name).with_default(SchedulingConfig::gang(Some(2)));
    let level3 = |prefix: String| {
        WorkloadItem::new(prefix.clone())
            .with_default(SchedulingConfig::gang(Some(8)))
            .with_children((0..8).map(|k| leaf(format!("{prefix}-l{k}"))))
    };
    let level2 = |i: usize| {
        let prefix = format!("c{i}");
        WorkloadItem::new(prefix.clone())
            .with_default(SchedulingConfig::gang(Some(16)).with_topology("kwas.dev/rack"))
            .with_children((0..8).map(|j| level3(format!("{prefix}-c{j}"))))
            .with_children((0..8).map(|k| leaf(format!("{prefix}-l{k}"))))
    };
    WorkloadItem::new("root")
        .with_default(SchedulingConfig::gang(Some(16)).with_topology("kwas.dev/block"))
        .with_children((0..8).map(level2))
        .with_children((0..8).map(|k| leaf(format!("l{k}"))))
}
