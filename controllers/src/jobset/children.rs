//! The objects a JobSet owns at run time: the root CompositePodGroup, the child Jobs and, under centralized
//! management, one PodGroup per child Job.
//!
//! - Child Jobs are named `<jobset>-<replicated job>-<index>`, labelled with the JobSet, replicated job, index
//!   and restart attempt, owned by the JobSet, and carry the JobSet's `suspend`. They and their pods also
//!   carry the JobSet project's well-known labels and annotations ([`jobset_project_metadata`]), so tools
//!   written for jobset.x-k8s.io (selectors on `jobset.sigs.k8s.io/jobset-name`, `job-index`,
//!   `job-global-index`, ...) find them. Their `spec.scheduling` is
//!   stripped (the JobSet compiled it into its own Workload: KEP-6089 "Split-Brain" mitigation 1).
//! - DNS (the JobSet project's default `network.enableDNSHostnames: true`): a headless Service named after
//!   the JobSet selects its pods ([`desired_service`], `publishNotReadyAddresses: true`) and every pod gets
//!   the JobSet's name as `subdomain`, so an Indexed child's pod is reachable as
//!   `<job>-<index>.<jobset>` (torchrun, MPI and JAX rendezvous). A JobSet whose name is not a DNS-1035 label
//!   (the rule for Service names) gets neither.
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

/// The labels (and the same annotations) the JobSet project's controller puts on a child Job and its pods
/// (`labelAndAnnotateObject`): the JobSet's and replicated job's names, the restart attempt, the replicated
/// job's and the JobSet's replica counts, the job index, its global index across replicated jobs in spec
/// order, and the job key (the SHA-1 of `<namespace>/<job name>`). The exclusive-placement annotation
/// (`alpha.jobset.sigs.k8s.io/exclusive-topology`) of the JobSet or of the replicated job's template is
/// passed on as an annotation only, as upstream does.
pub fn jobset_project_metadata(
    js: &JobSet,
    child: &Child,
    restart_attempt: i32,
) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
    use kwas_api_types::jobset::v1alpha2::constants as k;
    let namespace = js.namespace().unwrap_or_default();
    let replicas = |r: &kwas_api_types::jobset::ReplicatedJob| i64::from(r.replicas.max(0));
    let global_replicas: i64 = js.spec.replicated_jobs.iter().map(replicas).sum();
    let mut before: i64 = 0;
    let mut replicated_job_replicas = 0;
    let mut exclusive_rj = None;
    for r in &js.spec.replicated_jobs {
        if r.name == child.replicated_job {
            replicated_job_replicas = replicas(r);
            exclusive_rj = r
                .template
                .metadata
                .as_ref()
                .and_then(|m| m.annotations.as_ref())
                .and_then(|a| a.get(k::EXCLUSIVE_KEY))
                .cloned();
            break;
        }
        before += replicas(r);
    }
    let pairs = [
        (k::JOBSET_NAME_KEY, js.name_any()),
        (k::REPLICATED_JOB_NAME_KEY, child.replicated_job.clone()),
        (k::RESTARTS_KEY, restart_attempt.to_string()),
        (k::REPLICATED_JOB_REPLICAS, replicated_job_replicas.to_string()),
        (k::GLOBAL_REPLICAS_KEY, global_replicas.to_string()),
        (k::JOB_INDEX_KEY, child.index.to_string()),
        (k::JOB_KEY, job_key(&namespace, &child.name)),
        (k::JOB_GLOBAL_INDEX_KEY, (before + i64::from(child.index)).to_string()),
    ];
    let labels: BTreeMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
    let mut annotations = labels.clone();
    let exclusive = js.annotations().get(k::EXCLUSIVE_KEY).cloned();
    if let Some(topology) = exclusive_rj.or(exclusive) {
        annotations.insert(k::EXCLUSIVE_KEY.to_string(), topology);
    }
    (labels, annotations)
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

/// The name of the JobSet's headless Service and its pods' subdomain (the JobSet's name), if the name can
/// name a Service (a DNS-1035 label: at most 63 lowercase letters, digits and '-', starting with a letter,
/// ending with a letter or digit).
pub fn subdomain(js: &JobSet) -> Option<String> {
    let name = js.name_any();
    let b = name.as_bytes();
    let ok = !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_lowercase()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[b.len() - 1] != b'-';
    ok.then_some(name)
}

/// The JobSet project's headless Service (`createHeadlessSvcIfNecessary`): `clusterIP: None`, selecting
/// the JobSet's pods by `jobset.sigs.k8s.io/jobset-name`, publishing not-ready addresses (the default of
/// `network.publishNotReadyAddresses`), controlled by the JobSet.
pub fn desired_service(js: &JobSet) -> Option<k8s_openapi::api::core::v1::Service> {
    use k8s_openapi::api::core::v1::{Service, ServiceSpec};
    let name = subdomain(js)?;
    Some(Service {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: js.namespace(),
            labels: Some(jobset_labels(js)),
            owner_references: jobset_owner(js).map(|o| vec![o]),
            ..ObjectMeta::default()
        },
        spec: Some(ServiceSpec {
            cluster_ip: Some("None".into()),
            selector: Some(BTreeMap::from([(
                kwas_api_types::jobset::v1alpha2::constants::JOBSET_NAME_KEY.to_string(),
                name,
            )])),
            publish_not_ready_addresses: Some(true),
            ..ServiceSpec::default()
        }),
        status: None,
    })
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
    let (project_labels, project_annotations) = jobset_project_metadata(js, child, wiring.restart_attempt);
    job_labels.extend(project_labels.clone());
    let mut annotations = template_meta.annotations.unwrap_or_default();
    annotations.extend(project_annotations.clone());
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
    pod_labels.extend(project_labels);
    pod_meta
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .extend(project_annotations);
    if let Some(subdomain) = subdomain(js) {
        spec.template.spec.get_or_insert_with(Default::default).subdomain = Some(subdomain);
    }
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
            root_group: "root".into(),
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
            root_group: "root".into(),
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
        // Centralized: no downward mapping (the annotations are the JobSet project's only).
        let annotations = job.metadata.annotations.as_ref().unwrap();
        assert_eq!(DownwardMapping::read(annotations).unwrap(), None);
        assert!(annotations.keys().all(|k| k.starts_with("jobset.sigs.k8s.io/")));
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
