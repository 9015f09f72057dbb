//! Reading the cluster the way a user would check their workloads: pods of a Job, the nodes they landed on
//! and those nodes' topology labels, conditions, and object counts.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, ListParams};
use kube::{Client, Resource, ResourceExt};
use kwas_api_types::jobset::JobSet;
use kwas_api_types::names::labels::JOB_NAME;
use serde::de::DeserializeOwned;

use crate::error::{Error, Result};
use crate::harness::{E2e, NS, NotYet, eventually, not_yet};

/// Every object of kind `K` in [`NS`].
pub async fn list<K>(client: &Client) -> Result<Vec<K>>
where
    K: Resource<Scope = NamespaceResourceScope, DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
{
    Ok(Api::<K>::namespaced(client.clone(), NS)
        .list(&ListParams::default())
        .await?
        .items)
}

/// The pods of Job `job` (by the `batch.kubernetes.io/job-name` label).
pub async fn pods_of_job(client: &Client, job: &str) -> Result<Vec<Pod>> {
    Ok(Api::<Pod>::namespaced(client.clone(), NS)
        .list(&ListParams::default().labels(&format!("{JOB_NAME}={job}")))
        .await?
        .items)
}

/// The node a pod is bound to.
pub fn node_of(pod: &Pod) -> Option<&str> {
    pod.spec.as_ref()?.node_name.as_deref()
}

/// The pod's phase (`Pending` when it has none yet).
pub fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("Pending")
}

/// The PodGroup a pod names in `spec.schedulingGroup`.
pub fn group_of(pod: &Pod) -> Option<&str> {
    pod.spec.as_ref()?.scheduling_group.as_ref()?.pod_group_name.as_deref()
}

/// Whether the pod is being deleted.
pub fn terminating(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_some()
}

/// The pod's condition of `type_`: (status, reason, message).
pub fn pod_condition(pod: &Pod, type_: &str) -> Option<(String, String, String)> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| {
            (
                c.status.clone(),
                c.reason.clone().unwrap_or_default(),
                c.message.clone().unwrap_or_default(),
            )
        })
}

/// How many of `pods` are bound and not being deleted.
pub fn bound_count(pods: &[Pod]) -> usize {
    pods.iter().filter(|p| node_of(p).is_some() && !terminating(p)).count()
}

/// Every node's labels.
pub async fn node_labels(client: &Client) -> Result<BTreeMap<String, BTreeMap<String, String>>> {
    Ok(Api::<Node>::all(client.clone())
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .map(|n| (n.name_any(), n.metadata.labels.unwrap_or_default()))
        .collect())
}

/// The values of node label `key` over the nodes `pods` are bound to. Fails if a pod is unbound or its node
/// lacks the label.
pub fn domains(
    pods: &[Pod],
    labels: &BTreeMap<String, BTreeMap<String, String>>,
    key: &str,
) -> Result<BTreeSet<String>> {
    pods.iter()
        .map(|p| {
            let node = node_of(p).ok_or_else(|| Error::Unexpected(format!("pod {} is not bound", p.name_any())))?;
            labels
                .get(node)
                .and_then(|l| l.get(key))
                .cloned()
                .ok_or_else(|| Error::Unexpected(format!("node {node} has no label {key}")))
        })
        .collect()
}

/// The Job's condition of `type_` when it is True.
pub fn job_condition<'a>(job: &'a Job, type_: &str) -> Option<&'a k8s_openapi::api::batch::v1::JobCondition> {
    job.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_ && c.status == "True")
}

fn job_seen(job: &Job) -> String {
    let s = job.status.clone().unwrap_or_default();
    let conditions: Vec<String> = s
        .conditions
        .unwrap_or_default()
        .iter()
        .filter(|c| c.status == "True")
        .map(|c| c.type_.clone())
        .collect();
    format!(
        "active {} succeeded {} failed {} conditions {:?}",
        s.active.unwrap_or(0),
        s.succeeded.unwrap_or(0),
        s.failed.unwrap_or(0),
        conditions
    )
}

/// Waits until Job `name` has condition `type_` True; returns the Job.
pub async fn wait_job(e2e: &E2e, name: &str, type_: &str) -> Result<Job> {
    let jobs = e2e.api::<Job>();
    eventually(format!("Job {name} {type_}"), || async {
        let job = jobs.get(name).await?;
        if job_condition(&job, type_).is_some() {
            Ok(job)
        } else {
            Err(not_yet(job_seen(&job)))
        }
    })
    .await
}

/// The JobSet's condition of `type_` when it is True.
pub fn jobset_condition<'a>(
    js: &'a JobSet,
    type_: &str,
) -> Option<&'a k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition> {
    js.status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == type_ && c.status == "True")
}

/// Waits until JobSet `name` has condition `type_` True; returns the JobSet.
pub async fn wait_jobset(e2e: &E2e, name: &str, type_: &str) -> Result<JobSet> {
    let api = e2e.api::<JobSet>();
    eventually(format!("JobSet {name} {type_}"), || async {
        let js = api.get(name).await?;
        if jobset_condition(&js, type_).is_some() {
            Ok(js)
        } else {
            Err(NotYet(format!("status {:?}", js.status)))
        }
    })
    .await
}

/// Waits until `n` pods of Job `job` are bound (and not being deleted); returns all its pods.
pub async fn wait_bound(e2e: &E2e, job: &str, n: usize) -> Result<Vec<Pod>> {
    let client = e2e.client();
    eventually(format!("{n} pods of Job {job} bound"), || async {
        let pods = pods_of_job(&client, job).await?;
        let bound = bound_count(&pods);
        if bound >= n {
            Ok(pods)
        } else {
            Err(not_yet(format!("{bound} of {} bound", pods.len())))
        }
    })
    .await
}

/// The `Preempted` events the scheduler recorded: (uid of the victim pod, note).
pub async fn preempted_events(client: &Client) -> Result<Vec<(String, String)>> {
    let events: Vec<k8s_openapi::api::events::v1::Event> = list(client).await?;
    Ok(events
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some(kwas_api_types::names::events::PREEMPTED))
        .map(|e| {
            let uid = e.regarding.and_then(|r| r.uid).unwrap_or_default();
            (uid, e.note.unwrap_or_default())
        })
        .collect())
}
