//! The objects a JobSet owns at run time: the root CompositePodGroup, the child Jobs and, under centralized
//! management, one PodGroup per child Job.
//!
//! - Child Jobs are named `<jobset>-<replicated job>-<index>`, labelled with the JobSet, replicated job, index
//!   and restart attempt, owned by the JobSet, and carry the JobSet's `suspend`. Their `spec.scheduling` is
//!   stripped (the JobSet compiled it into its own Workload: KEP-6089 "Split-Brain" mitigation 1).
//! - Centralized: the JobSet creates each child's PodGroup (`generate_pod_group_name(<job>, <template>)`, the
//!   same name the Job controller would give a delegated PodGroup) under the root CompositePodGroup, and sets
//!   `schedulingGroup.podGroupName` in the child's pod template, so the Job controller manages nothing.
//! - Delegated: the child carries the downward-mapping annotations (template = the replicated job's name,
//!   parent = the root instance) and the Job controller creates the PodGroup.

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::PodSchedulingGroup;
use k8s_openapi::api::scheduling::v1alpha3::{CompositePodGroup, PodGroup, Workload};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::ResourceExt;
use kwas_api_types::jobset::{JobSet, MAX_CHILD_JOBS, PodGroupManagement, ROOT_TEMPLATE_NAME, child_job_name};
use kwas_api_types::names::{JOBSET_CONTROLLER_NAME, labels};
use workloadbuilder::job::delegated_pod_group_name;
use workloadbuilder::{
    DownwardMapping, GroupName, InstantiateError, TemplateKey, generate_pod_group_name, new_composite_pod_group,
    new_pod_group,
};

use super::compile::jobset_owner;
use crate::sync::mark_managed;

/// The label with a child Job's restart attempt.
pub const RESTART_ATTEMPT_LABEL: &str = "kwas.dev/restart-attempt";

/// One child Job of a JobSet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Child {
    /// The replicated job it belongs to.
    pub replicated_job: String,
    /// Its index among the replicated job's Jobs.
    pub index: i32,
    /// Its name.
    pub name: String,
}

/// Every child Job the JobSet should have, in order.
///
/// At most [`MAX_CHILD_JOBS`] in all, whatever `replicas` say (validation rejects more; a JobSet stored
/// before the bound, or on a cluster without the schema, still costs bounded work).
pub fn children(js: &JobSet) -> Vec<Child> {
    let name = js.name_any();
    js.spec
        .replicated_jobs
        .iter()
        .flat_map(|r| {
            (0..r.replicas.clamp(0, MAX_CHILD_JOBS)).map(|i| Child {
                replicated_job: r.name.clone(),
                index: i,
                name: child_job_name(&name, &r.name, i),
            })
        })
        .take(MAX_CHILD_JOBS as usize)
        .collect()
}

/// The name of the JobSet's root CompositePodGroup.
pub fn root_group_name(workload_name: &str) -> String {
    generate_pod_group_name(TemplateKey {
        workload: workload_name,
        template: ROOT_TEMPLATE_NAME,
    })
    .into()
}

/// The name of a child Job's PodGroup (both management strategies give it the same name).
pub fn child_group_name(child: &Child) -> String {
    delegated_pod_group_name(&child.name, &child.replicated_job).into()
}

/// The root CompositePodGroup, owned by the JobSet.
pub fn desired_root_group(js: &JobSet, workload: &Workload) -> Result<CompositePodGroup, InstantiateError> {
    let name = GroupName::new(root_group_name(&workload.name_any()));
    let mut group = new_composite_pod_group(
        workload,
        ROOT_TEMPLATE_NAME,
        &name,
        None,
        jobset_owner(js).into_iter().collect(),
    )?;
    group.metadata.labels = Some(jobset_labels(js));
    mark_managed(&mut group.metadata, JOBSET_CONTROLLER_NAME);
    Ok(group)
}

/// A child's PodGroup under centralized management, owned by the JobSet, under the root CompositePodGroup.
pub fn desired_child_group(js: &JobSet, workload: &Workload, child: &Child) -> Result<PodGroup, InstantiateError> {
    let root = root_group_name(&workload.name_any());
    desired_child_group_under(js, workload, child, Some(&root))
}

/// A child's PodGroup under centralized management, owned by the JobSet, under `parent` (`None`: a root
/// PodGroup, as in a flat Workload whose templates are all top-level).
pub fn desired_child_group_under(
    js: &JobSet,
    workload: &Workload,
    child: &Child,
    parent: Option<&str>,
) -> Result<PodGroup, InstantiateError> {
    let parent = parent.map(GroupName::new);
    let mut group = new_pod_group(
        workload,
        &child.replicated_job,
        &GroupName::new(child_group_name(child)),
        parent.as_ref(),
        jobset_owner(js).into_iter().collect(),
    )?;
    let mut l = jobset_labels(js);
    l.insert(labels::REPLICATED_JOB_NAME.to_string(), child.replicated_job.clone());
    l.insert(labels::JOB_INDEX.to_string(), child.index.to_string());
    group.metadata.labels = Some(l);
    mark_managed(&mut group.metadata, JOBSET_CONTROLLER_NAME);
    Ok(group)
}

/// The label that selects a JobSet's objects.
pub fn jobset_labels(js: &JobSet) -> BTreeMap<String, String> {
    BTreeMap::from([(labels::JOBSET_NAME.to_string(), js.name_any())])
}

/// How a child Job is wired to scheduling.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChildWiring {
    /// Centralized or delegated.
    pub management: PodGroupManagement,
    /// The root CompositePodGroup instance.
    pub root_group: String,
    /// The `spec.managedBy` of child Jobs (the Job controller that runs them), if any.
    pub job_managed_by: Option<String>,
    /// The restart attempt the Job belongs to.
    pub restart_attempt: i32,
}

/// A child Job.
pub fn desired_job(js: &JobSet, child: &Child, wiring: &ChildWiring) -> Job {
    let rj = js
        .spec
        .replicated_job(&child.replicated_job)
        .cloned()
        .unwrap_or_default();
    let template_meta = rj.template.metadata.clone().unwrap_or_default();
    let mut job_labels = template_meta.labels.unwrap_or_default();
    job_labels.extend(jobset_labels(js));
    job_labels.insert(labels::REPLICATED_JOB_NAME.to_string(), child.replicated_job.clone());
    job_labels.insert(labels::JOB_INDEX.to_string(), child.index.to_string());
    job_labels.insert(RESTART_ATTEMPT_LABEL.to_string(), wiring.restart_attempt.to_string());
    let mut annotations = template_meta.annotations.unwrap_or_default();
    let mut spec: JobSpec = rj.template.spec.clone().unwrap_or_default();
    spec.scheduling = None;
    spec.suspend = Some(js.spec.suspend.unwrap_or(false));
    if let Some(m) = &wiring.job_managed_by {
        spec.managed_by = Some(m.clone());
    }
    let pod_meta = spec.template.metadata.get_or_insert_with(ObjectMeta::default);
    let pod_labels = pod_meta.labels.get_or_insert_with(BTreeMap::new);
    pod_labels.extend(jobset_labels(js));
    pod_labels.insert(labels::REPLICATED_JOB_NAME.to_string(), child.replicated_job.clone());
    pod_labels.insert(labels::JOB_INDEX.to_string(), child.index.to_string());
    match wiring.management {
        PodGroupManagement::Centralized => {
            spec.template.spec.get_or_insert_with(Default::default).scheduling_group = Some(PodSchedulingGroup {
                pod_group_name: Some(child_group_name(child)),
            });
        }
        PodGroupManagement::Delegated => {
            DownwardMapping::new(child.replicated_job.clone())
                .with_parent(wiring.root_group.clone())
                .write(&mut annotations);
        }
    }
    Job {
        metadata: ObjectMeta {
            name: Some(child.name.clone()),
            namespace: js.namespace(),
            labels: Some(job_labels),
            annotations: (!annotations.is_empty()).then_some(annotations),
            owner_references: jobset_owner(js).map(|o| vec![o]),
            ..ObjectMeta::default()
        },
        spec: Some(spec),
        status: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kwas_api_types::jobset::{JobSetSpec, ReplicatedJob};

    fn jobset() -> JobSet {
        let mut js = JobSet::new(
            "pretrain",
            JobSetSpec {
                replicated_jobs: vec![
                    ReplicatedJob {
                        name: "driver".into(),
                        replicas: 1,
                        template: Default::default(),
                    },
                    ReplicatedJob {
                        name: "workers".into(),
                        replicas: 2,
                        template: Default::default(),
                    },
                ],
                ..Default::default()
            },
        );
        js.metadata.namespace = Some("ml".into());
        js.metadata.uid = Some("js-uid".into());
        js
    }

    #[test]
    fn one_child_per_replica() {
        let names: Vec<String> = children(&jobset()).into_iter().map(|c| c.name).collect();
        assert_eq!(names, ["pretrain-driver-0", "pretrain-workers-0", "pretrain-workers-1"]);
    }

    #[test]
    fn wiring_per_strategy() {
        let js = jobset();
        let child = &children(&js)[1];
        let mut wiring = ChildWiring {
            management: PodGroupManagement::Centralized,
            root_group: "root-x".into(),
            job_managed_by: Some("kwas.dev/job-controller".into()),
            restart_attempt: 2,
        };
        let job = desired_job(&js, child, &wiring);
        let spec = job.spec.as_ref().unwrap();
        assert_eq!(spec.managed_by.as_deref(), Some("kwas.dev/job-controller"));
        let group = spec.template.spec.as_ref().unwrap().scheduling_group.as_ref().unwrap();
        assert_eq!(group.pod_group_name.as_deref(), Some(child_group_name(child).as_str()));
        assert!(job.metadata.annotations.is_none());
        assert_eq!(job.metadata.labels.as_ref().unwrap()[RESTART_ATTEMPT_LABEL], "2");
        wiring.management = PodGroupManagement::Delegated;
        let job = desired_job(&js, child, &wiring);
        let mapping = DownwardMapping::read(job.metadata.annotations.as_ref().unwrap())
            .unwrap()
            .unwrap();
        assert_eq!(mapping, DownwardMapping::new("workers").with_parent("root-x"));
        assert!(
            job.spec
                .as_ref()
                .unwrap()
                .template
                .spec
                .as_ref()
                .is_none_or(|s| s.scheduling_group.is_none())
        );
    }
}
