//! The objects a JobSet owns at run time: the root CompositePodGroup, the child Jobs and, under centralized
//! management, one PodGroup per child Job.
//!
//! - Child Jobs are named `<jobset>-<replicated job>-<index>`, labelled with the JobSet, replicated job, index
//!   and restart attempt, owned by the JobSet, and carry the JobSet's `suspend`. They and their pods also
//!   carry the JobSet project's well-known labels and annotations ([`jobset_project_metadata`]), so tools
//!   written for jobset.x-k8s.io (selectors on `jobset.sigs.k8s.io/jobset-name`, `job-index`,
//!   `job-global-index`, ...) find them. Their `spec.scheduling` is
//!   stripped (the JobSet compiled it into its own Workload: KEP-6089 "Split-Brain" mitigation 1).
//! - DNS (`network.enableDNSHostnames`, true by the webhook's default): a headless Service named after the
//!   subdomain (`network.subdomain`, else the JobSet's name) selects the JobSet's pods ([`desired_service`],
//!   `publishNotReadyAddresses` as `network` says, true by default) and every pod gets the subdomain, so
//!   an Indexed child's pod is reachable as `<jobset>-<rjob>-<jobIdx>-<podIdx>.<subdomain>` (torchrun, MPI
//!   and JAX rendezvous). A subdomain that is not a DNS-1035 label (the rule for Service names) gets
//!   neither.
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
use kwas_api_types::jobset::v1alpha2::constants as k;
use kwas_api_types::jobset::{
    JobSet, MAX_CHILD_JOBS, PodGroupManagement, ROOT_TEMPLATE_NAME, ReplicatedJob, child_job_name,
};
use kwas_api_types::names::{JOBSET_CONTROLLER_NAME, labels};
use workloadbuilder::job::delegated_pod_group_name;
use workloadbuilder::{
    DownwardMapping, GroupName, InstantiateError, TemplateKey, generate_pod_group_name, new_composite_pod_group,
    new_pod_group,
};

use super::compile::jobset_owner;
use crate::sync::mark_managed;

/// kwas' earlier label with a child Job's restart attempt (read for Jobs created before kwas used the
/// JobSet project's `jobset.sigs.k8s.io/restart-attempt`).
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
    js.spec
        .replicated_jobs
        .iter()
        .flat_map(|r| children_of(js, r))
        .take(MAX_CHILD_JOBS as usize)
        .collect()
}

/// The child Jobs of one replicated job, in index order (at most [`MAX_CHILD_JOBS`]).
pub fn children_of(js: &JobSet, r: &ReplicatedJob) -> Vec<Child> {
    let name = js.name_any();
    (0..r.replicas.clamp(0, MAX_CHILD_JOBS))
        .map(|i| Child {
            replicated_job: r.name.clone(),
            index: i,
            name: child_job_name(&name, &r.name, i),
        })
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
    // The recovery policy of the replicated job's Job template, else the JobSet's.
    let template = js
        .spec
        .replicated_job(&child.replicated_job)
        .and_then(|r| r.template.metadata.as_ref())
        .and_then(|m| m.annotations.as_ref());
    crate::sync::copy_recovery_policy([template, js.metadata.annotations.as_ref()], &mut group.metadata);
    Ok(group)
}

/// The label that selects a JobSet's objects.
pub fn jobset_labels(js: &JobSet) -> BTreeMap<String, String> {
    BTreeMap::from([(labels::JOBSET_NAME.to_string(), js.name_any())])
}

/// The labels (and the same annotations) the JobSet project's controller puts on a child Job and its pods
/// (`labelAndAnnotateObject`): the JobSet's name and uid, the replicated job's name, the restart attempt,
/// the replicated job's and the JobSet's replica counts, the job index, its global index across replicated
/// jobs in spec order, the job key (the SHA-1 of `<namespace>/<job name>`), the group name, its replicas
/// and the Job's index in its group, and the coordinator's endpoint when `spec.coordinator` is set. The
/// exclusive-placement annotations (`alpha.jobset.sigs.k8s.io/exclusive-topology`, with
/// `alpha.jobset.sigs.k8s.io/node-selector`) of the JobSet or, overriding it, of the replicated job's
/// template are passed on as annotations only, as upstream does.
pub fn jobset_project_metadata(
    js: &JobSet,
    child: &Child,
    restart_attempt: i32,
) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
    let namespace = js.namespace().unwrap_or_default();
    let name = js.name_any();
    let rj = js.spec.replicated_job(&child.replicated_job);
    let group = rj.map_or(kwas_api_types::jobset::v1alpha2::DEFAULT_GROUP_NAME, |r| {
        r.group_name.as_str()
    });
    let mut pairs = vec![
        (k::JOBSET_NAME_KEY, name.clone()),
        (k::JOBSET_UID_KEY, js.metadata.uid.clone().unwrap_or_default()),
        (k::REPLICATED_JOB_NAME_KEY, child.replicated_job.clone()),
        (k::RESTARTS_KEY, restart_attempt.to_string()),
        (k::REPLICATED_JOB_REPLICAS, rj.map_or(0, |r| r.replicas).to_string()),
        (k::GLOBAL_REPLICAS_KEY, global_replicas(js).to_string()),
        (k::JOB_INDEX_KEY, child.index.to_string()),
        (k::JOB_KEY, job_key(&namespace, &child.name)),
        (
            k::JOB_GLOBAL_INDEX_KEY,
            global_job_index(js, &child.replicated_job, child.index).map_or(String::new(), |i| i.to_string()),
        ),
        (k::GROUP_NAME_KEY, group.to_string()),
        (k::GROUP_REPLICAS_KEY, group_replicas(js, group).to_string()),
        (
            k::JOB_GROUP_INDEX_KEY,
            group_job_index(js, group, &child.replicated_job, child.index).map_or(String::new(), |i| i.to_string()),
        ),
    ];
    if let Some(endpoint) = kwas_api_types::jobset::v1alpha2::coordinator_endpoint(&name, &js.spec) {
        pairs.push((k::COORDINATOR_KEY, endpoint));
    }
    let labels: BTreeMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
    let mut annotations = labels.clone();
    let mut exclusive = |from: Option<&BTreeMap<String, String>>| {
        if let Some(from) = from
            && let Some(topology) = from.get(k::EXCLUSIVE_KEY)
        {
            annotations.insert(k::EXCLUSIVE_KEY.to_string(), topology.clone());
            if let Some(strategy) = from.get(k::NODE_SELECTOR_STRATEGY_KEY) {
                annotations.insert(k::NODE_SELECTOR_STRATEGY_KEY.to_string(), strategy.clone());
            }
        }
    };
    exclusive(js.metadata.annotations.as_ref());
    exclusive(
        rj.and_then(|r| r.template.metadata.as_ref())
            .and_then(|m| m.annotations.as_ref()),
    );
    (labels, annotations)
}

/// The sum of every replicated job's replicas (upstream's `globalReplicas`).
pub fn global_replicas(js: &JobSet) -> i64 {
    js.spec.replicated_jobs.iter().map(|r| i64::from(r.replicas)).sum()
}

/// The index of a Job across all replicated jobs in spec order (upstream's `globalJobIndex`); `None` for
/// an unknown replicated job.
pub fn global_job_index(js: &JobSet, replicated_job: &str, index: i32) -> Option<i64> {
    let mut before = 0i64;
    for r in &js.spec.replicated_jobs {
        if r.name == replicated_job {
            return Some(before + i64::from(index));
        }
        before += i64::from(r.replicas);
    }
    None
}

/// The sum of the replicas of the replicated jobs of group `group` (upstream's `groupReplicas`).
pub fn group_replicas(js: &JobSet, group: &str) -> i64 {
    js.spec
        .replicated_jobs
        .iter()
        .filter(|r| r.group_name == group)
        .map(|r| i64::from(r.replicas))
        .sum()
}

/// The index of a Job among the Jobs of its group in spec order (upstream's `groupJobIndex`); `None` when
/// the replicated job is not in the group.
pub fn group_job_index(js: &JobSet, group: &str, replicated_job: &str, index: i32) -> Option<i64> {
    let mut before = 0i64;
    for r in js.spec.replicated_jobs.iter().filter(|r| r.group_name == group) {
        if r.name == replicated_job {
            return Some(before + i64::from(index));
        }
        before += i64::from(r.replicas);
    }
    None
}

/// The JobSet project's `jobHashKey`: the hex SHA-1 of `<namespace>/<job name>` (a label value of 40
/// characters whatever the names' lengths).
pub fn job_key(namespace: &str, job: &str) -> String {
    let digest = ring::digest::digest(
        &ring::digest::SHA1_FOR_LEGACY_USE_ONLY,
        format!("{namespace}/{job}").as_bytes(),
    );
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether the JobSet's pods get DNS hostnames (`network.enableDNSHostnames`; the webhook defaults it
/// to true, so an unset value counts as true).
pub fn dns_hostnames_enabled(js: &JobSet) -> bool {
    js.spec
        .network
        .as_ref()
        .and_then(|n| n.enable_dns_hostnames)
        .unwrap_or(true)
}

/// The name of the JobSet's headless Service and its pods' subdomain (`network.subdomain`, else the
/// JobSet's name: upstream's `GetSubdomain`), when DNS hostnames are enabled and the name can name a
/// Service (a DNS-1035 label: at most 63 lowercase letters, digits and '-', starting with a letter,
/// ending with a letter or digit).
pub fn subdomain(js: &JobSet) -> Option<String> {
    if !dns_hostnames_enabled(js) {
        return None;
    }
    let name = js.name_any();
    let name = kwas_api_types::jobset::v1alpha2::subdomain(&name, &js.spec).to_string();
    kwas_api_types::field::is_dns1035_label(&name)
        .is_empty()
        .then_some(name)
}

/// The JobSet project's headless Service (`createHeadlessSvcIfNecessary`): named after the subdomain,
/// `clusterIP: None`, selecting the JobSet's pods by `jobset.sigs.k8s.io/jobset-name`, publishing
/// not-ready addresses as `network.publishNotReadyAddresses` says (default true), controlled by the JobSet.
pub fn desired_service(js: &JobSet) -> Option<k8s_openapi::api::core::v1::Service> {
    use k8s_openapi::api::core::v1::{Service, ServiceSpec};
    let name = subdomain(js)?;
    let publish = js
        .spec
        .network
        .as_ref()
        .and_then(|n| n.publish_not_ready_addresses)
        .unwrap_or(true);
    Some(Service {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: js.namespace(),
            labels: Some(jobset_labels(js)),
            owner_references: jobset_owner(js).map(|o| vec![o]),
            ..ObjectMeta::default()
        },
        spec: Some(ServiceSpec {
            cluster_ip: Some("None".into()),
            selector: Some(BTreeMap::from([(k::JOBSET_NAME_KEY.to_string(), js.name_any())])),
            publish_not_ready_addresses: Some(publish),
            ..ServiceSpec::default()
        }),
        status: None,
    })
}

/// Upstream's exclusive anti-affinity term (`setExclusiveAffinities`): no pod of another Job with a job key
/// in the same `topology` domain, in any namespace.
pub fn exclusive_anti_affinity(job_key: &str, topology: &str) -> k8s_openapi::api::core::v1::PodAffinityTerm {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
    k8s_openapi::api::core::v1::PodAffinityTerm {
        label_selector: Some(LabelSelector {
            match_expressions: Some(vec![
                LabelSelectorRequirement {
                    key: k::JOB_KEY.into(),
                    operator: "Exists".into(),
                    values: None,
                },
                LabelSelectorRequirement {
                    key: k::JOB_KEY.into(),
                    operator: "NotIn".into(),
                    values: Some(vec![job_key.to_string()]),
                },
            ]),
            match_labels: None,
        }),
        namespace_selector: Some(LabelSelector::default()),
        topology_key: topology.to_string(),
        ..Default::default()
    }
}

/// The JobSet project's node-selector strategy of exclusive placement (`addNamespacedJobNodeSelector`,
/// `addTaintToleration`): with both `alpha.jobset.sigs.k8s.io/exclusive-topology` and
/// `alpha.jobset.sigs.k8s.io/node-selector`, the pods select nodes labelled
/// `alpha.jobset.sigs.k8s.io/namespaced-job: <namespace>_<job>` and tolerate the
/// `alpha.jobset.sigs.k8s.io/no-schedule` taint (the nodes are labelled and tainted by the user).
fn exclusive_node_selector(spec: &mut JobSpec, annotations: &BTreeMap<String, String>, namespace: &str, job: &str) {
    if !(annotations.contains_key(k::EXCLUSIVE_KEY) && annotations.contains_key(k::NODE_SELECTOR_STRATEGY_KEY)) {
        return;
    }
    let pod = spec.template.spec.get_or_insert_with(Default::default);
    pod.node_selector
        .get_or_insert_with(BTreeMap::new)
        .insert(k::NAMESPACED_JOB_KEY.to_string(), format!("{namespace}_{job}"));
    pod.tolerations
        .get_or_insert_with(Vec::new)
        .push(k8s_openapi::api::core::v1::Toleration {
            key: Some(k::NO_SCHEDULE_TAINT_KEY.to_string()),
            operator: Some("Exists".into()),
            effect: Some("NoSchedule".into()),
            ..Default::default()
        });
}

/// The JobSet's PersistentVolumeClaims (`spec.volumeClaimPolicies`, upstream's `createPVCsIfNecessary`):
/// one per template, named `<template>-<jobset>`, labelled with the JobSet's name, controlled by the JobSet
/// when its retention policy is `Delete` (garbage-collected with it) and left behind when `Retain`.
pub fn desired_pvcs(js: &JobSet) -> Vec<k8s_openapi::api::core::v1::PersistentVolumeClaim> {
    use kwas_api_types::jobset::v1alpha2::{RetentionPolicyType, pvc_name};
    let name = js.name_any();
    js.spec
        .volume_claim_policies
        .iter()
        .flat_map(|policy| {
            let owned = policy
                .retention_policy
                .as_ref()
                .and_then(|r| r.when_deleted)
                .is_none_or(|w| w == RetentionPolicyType::Delete);
            let name = name.clone();
            policy.templates.iter().map(move |t| {
                let template = t.metadata.name.clone().unwrap_or_default();
                let mut labels = t.metadata.labels.clone().unwrap_or_default();
                labels.insert(k::JOBSET_NAME_KEY.to_string(), name.clone());
                k8s_openapi::api::core::v1::PersistentVolumeClaim {
                    metadata: ObjectMeta {
                        name: Some(pvc_name(&name, &template)),
                        namespace: js.namespace(),
                        labels: Some(labels),
                        annotations: t.metadata.annotations.clone(),
                        owner_references: owned.then(|| jobset_owner(js).map(|o| vec![o])).flatten(),
                        ..ObjectMeta::default()
                    },
                    spec: t.spec.clone(),
                    status: None,
                }
            })
        })
        .collect()
}

/// Upstream's `addVolumes`: a volume for each volume claim template that a container or init container of
/// the pod template mounts by the template's name, claiming the JobSet's PVC.
fn add_volumes(spec: &mut JobSpec, js: &JobSet) {
    use k8s_openapi::api::core::v1::{PersistentVolumeClaimVolumeSource, Volume};
    let Some(pod) = spec.template.spec.as_mut() else {
        return;
    };
    let name = js.name_any();
    for policy in &js.spec.volume_claim_policies {
        for t in &policy.templates {
            let template = t.metadata.name.clone().unwrap_or_default();
            let mounted = pod
                .containers
                .iter()
                .chain(pod.init_containers.iter().flatten())
                .flat_map(|c| c.volume_mounts.iter().flatten())
                .any(|m| m.name == template);
            if mounted {
                pod.volumes.get_or_insert_with(Vec::new).push(Volume {
                    name: template.clone(),
                    persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                        claim_name: kwas_api_types::jobset::v1alpha2::pvc_name(&name, &template),
                        read_only: None,
                    }),
                    ..Volume::default()
                });
            }
        }
    }
}

/// How a child Job is wired to scheduling.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChildWiring {
    /// Centralized or delegated.
    pub management: PodGroupManagement,
    /// The root CompositePodGroup instance (`None` for a flat Workload: the Jobs' PodGroups have no
    /// parent).
    pub root_group: Option<String>,
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
    let (project_labels, project_annotations) = jobset_project_metadata(js, child, wiring.restart_attempt);
    job_labels.extend(project_labels.clone());
    let mut annotations = template_meta.annotations.unwrap_or_default();
    annotations.extend(project_annotations.clone());
    // The JobSet's gang recovery policy reaches the Jobs (whose controller copies it to their PodGroups)
    // unless the Job template sets its own.
    let key = kwas_api_types::names::annotations::GANG_RECOVERY_SECONDS;
    if let Some(v) = js.metadata.annotations.as_ref().and_then(|a| a.get(key)) {
        annotations.entry(key.to_string()).or_insert_with(|| v.clone());
    }
    let mut spec: JobSpec = rj.template.spec.clone().unwrap_or_default();
    spec.scheduling = None;
    spec.suspend = Some(js.spec.suspend.unwrap_or(false));
    exclusive_node_selector(
        &mut spec,
        &annotations,
        &js.namespace().unwrap_or_default(),
        &child.name,
    );
    add_volumes(&mut spec, js);
    if let Some(m) = &wiring.job_managed_by {
        spec.managed_by = Some(m.clone());
    }
    let pod_meta = spec.template.metadata.get_or_insert_with(ObjectMeta::default);
    let pod_labels = pod_meta.labels.get_or_insert_with(BTreeMap::new);
    pod_labels.extend(jobset_labels(js));
    pod_labels.insert(labels::REPLICATED_JOB_NAME.to_string(), child.replicated_job.clone());
    pod_labels.insert(labels::JOB_INDEX.to_string(), child.index.to_string());
    pod_labels.extend(project_labels);
    pod_meta
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .extend(project_annotations);
    if let Some(subdomain) = subdomain(js) {
        spec.template.spec.get_or_insert_with(Default::default).subdomain = Some(subdomain);
    }
    if let Some(topology) = super::compile::exclusive_topology(js, &rj) {
        let key = job_key(&js.namespace().unwrap_or_default(), &child.name);
        let pod = spec.template.spec.get_or_insert_with(Default::default);
        let affinity = pod.affinity.get_or_insert_with(Default::default);
        affinity
            .pod_anti_affinity
            .get_or_insert_with(Default::default)
            .required_during_scheduling_ignored_during_execution
            .get_or_insert_with(Vec::new)
            .push(exclusive_anti_affinity(&key, &topology));
    }
    match wiring.management {
        PodGroupManagement::Centralized => {
            spec.template.spec.get_or_insert_with(Default::default).scheduling_group = Some(PodSchedulingGroup {
                pod_group_name: Some(child_group_name(child)),
            });
        }
        PodGroupManagement::Delegated => {
            let mapping = DownwardMapping::new(child.replicated_job.clone());
            match &wiring.root_group {
                Some(root) => mapping.with_parent(root.clone()),
                None => mapping,
            }
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
                        group_name: "default".into(),
                        ..Default::default()
                    },
                    ReplicatedJob {
                        name: "workers".into(),
                        replicas: 2,
                        group_name: "default".into(),
                        ..Default::default()
                    },
                ],
                ..Default::default()
            },
        );
        js.metadata.namespace = Some("ml".into());
        js.metadata.uid = Some("js-uid".into());
        js
    }

    /// The JobSet project's labels (its `TestConstructJobsFromTemplate` expectations): global index in spec
    /// order, replica counts, restart attempt, the SHA-1 job key; the same as annotations, plus the
    /// exclusive-placement annotation.
    #[test]
    fn child_jobs_and_pods_carry_the_jobset_projects_labels() {
        let mut js = jobset();
        js.metadata.annotations = Some(
            [(
                "alpha.jobset.sigs.k8s.io/exclusive-topology".to_string(),
                "kwas.dev/rack".to_string(),
            )]
            .into(),
        );
        let workers_1 = children(&js).into_iter().nth(2).unwrap();
        let wiring = ChildWiring {
            management: PodGroupManagement::Delegated,
            root_group: Some("root".into()),
            job_managed_by: None,
            restart_attempt: 3,
        };
        let job = desired_job(&js, &workers_1, &wiring);
        let want = [
            ("jobset.sigs.k8s.io/jobset-name", "pretrain"),
            ("jobset.sigs.k8s.io/replicatedjob-name", "workers"),
            ("jobset.sigs.k8s.io/restart-attempt", "3"),
            ("jobset.sigs.k8s.io/replicatedjob-replicas", "2"),
            ("jobset.sigs.k8s.io/global-replicas", "3"),
            ("jobset.sigs.k8s.io/job-index", "1"),
            ("jobset.sigs.k8s.io/job-global-index", "2"),
            // sha1("ml/pretrain-workers-1")
            ("jobset.sigs.k8s.io/job-key", "459db28d3e27e43a37ba179ac88d806ef77ad9ed"),
        ];
        let pod = job.spec.as_ref().unwrap().template.metadata.as_ref().unwrap();
        for (k, v) in want {
            for (what, map) in [
                ("job labels", job.metadata.labels.as_ref()),
                ("job annotations", job.metadata.annotations.as_ref()),
                ("pod labels", pod.labels.as_ref()),
                ("pod annotations", pod.annotations.as_ref()),
            ] {
                assert_eq!(map.unwrap().get(k).map(String::as_str), Some(v), "{what}: {k}");
            }
        }
        let exclusive = "alpha.jobset.sigs.k8s.io/exclusive-topology";
        assert_eq!(pod.annotations.as_ref().unwrap()[exclusive], "kwas.dev/rack");
        assert!(
            !pod.labels.as_ref().unwrap().contains_key(exclusive),
            "an annotation only"
        );
    }

    #[test]
    fn the_headless_service_selects_the_jobsets_pods_and_names_their_subdomain() {
        let js = jobset();
        let svc = desired_service(&js).unwrap();
        let spec = svc.spec.as_ref().unwrap();
        assert_eq!(svc.metadata.name.as_deref(), Some("pretrain"));
        assert_eq!(spec.cluster_ip.as_deref(), Some("None"));
        assert_eq!(spec.publish_not_ready_addresses, Some(true));
        assert_eq!(
            spec.selector.as_ref().unwrap()["jobset.sigs.k8s.io/jobset-name"],
            "pretrain"
        );
        assert_eq!(svc.metadata.owner_references.as_ref().unwrap()[0].kind, "JobSet");
        let child = &children(&js)[0];
        let wiring = ChildWiring {
            management: PodGroupManagement::Delegated,
            root_group: Some("root".into()),
            job_managed_by: None,
            restart_attempt: 0,
        };
        let job = desired_job(&js, child, &wiring);
        let pod_spec = job.spec.unwrap().template.spec.unwrap();
        assert_eq!(pod_spec.subdomain.as_deref(), Some("pretrain"));
        // A name that cannot name a Service: no Service, no subdomain.
        for bad in ["9lives", "a.b", &"x".repeat(64)] {
            let mut other = jobset();
            other.metadata.name = Some(bad.to_string());
            assert!(desired_service(&other).is_none(), "{bad}");
            assert!(subdomain(&other).is_none(), "{bad}");
        }
    }

    /// Upstream's node-selector strategy of exclusive placement (`TestConstructJobsFromTemplate` "node
    /// selector exclusive placement strategy enabled"): the namespaced job name as node selector and the
    /// no-schedule taint tolerated, only with both annotations.
    #[test]
    fn the_node_selector_strategy_of_exclusive_placement() {
        let mut js = jobset();
        let wiring = ChildWiring {
            management: PodGroupManagement::Centralized,
            root_group: Some("root".into()),
            job_managed_by: None,
            restart_attempt: 0,
        };
        let child = &children(&js)[0];
        let exclusive = (
            "alpha.jobset.sigs.k8s.io/exclusive-topology".to_string(),
            "rack".to_string(),
        );
        js.metadata.annotations = Some([exclusive.clone()].into());
        let pod = desired_job(&js, child, &wiring).spec.unwrap().template.spec.unwrap();
        assert!(pod.node_selector.is_none() && pod.tolerations.is_none());
        js.metadata.annotations = Some(
            [
                exclusive,
                ("alpha.jobset.sigs.k8s.io/node-selector".to_string(), "true".to_string()),
            ]
            .into(),
        );
        let pod = desired_job(&js, child, &wiring).spec.unwrap().template.spec.unwrap();
        assert_eq!(
            pod.node_selector.unwrap()["alpha.jobset.sigs.k8s.io/namespaced-job"],
            "ml_pretrain-driver-0"
        );
        let t = &pod.tolerations.unwrap()[0];
        assert_eq!(
            (t.key.as_deref(), t.operator.as_deref(), t.effect.as_deref()),
            (
                Some("alpha.jobset.sigs.k8s.io/no-schedule"),
                Some("Exists"),
                Some("NoSchedule")
            )
        );
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
            root_group: Some("root-x".into()),
            job_managed_by: Some("kwas.dev/job-controller".into()),
            restart_attempt: 2,
        };
        let job = desired_job(&js, child, &wiring);
        let spec = job.spec.as_ref().unwrap();
        assert_eq!(spec.managed_by.as_deref(), Some("kwas.dev/job-controller"));
        let group = spec.template.spec.as_ref().unwrap().scheduling_group.as_ref().unwrap();
        assert_eq!(group.pod_group_name.as_deref(), Some(child_group_name(child).as_str()));
        // Centralized: no downward mapping (the annotations are the JobSet project's only).
        let annotations = job.metadata.annotations.as_ref().unwrap();
        assert_eq!(DownwardMapping::read(annotations).unwrap(), None);
        assert!(annotations.keys().all(|k| k.starts_with("jobset.sigs.k8s.io/")));
        assert_eq!(
            job.metadata.labels.as_ref().unwrap()["jobset.sigs.k8s.io/restart-attempt"],
            "2"
        );
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
