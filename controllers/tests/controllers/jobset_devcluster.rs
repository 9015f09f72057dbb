//! The JobSet controller on devcluster with the Job controller: both PodGroup management strategies,
//! restarts of the controller, deletion and garbage collection, failure restarts, suspend, conflicting
//! configurations and invalid input.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use crate::common::*;
use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::scheduling::v1alpha3::{CompositePodGroup, PodGroup, Workload};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, CustomResourceExt, ResourceExt};
use kwas_api_types::jobset::{JobSet, PodGroupManagement};
use kwas_controllers::jobset::JobSetControllerConfig;
use serde_json::{Value, json};

pub(crate) const T: Duration = Duration::from_secs(20);

pub(crate) async fn install_crd(client: &Client) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &JobSet::crd()).await.unwrap();
    let api: Api<JobSet> = Api::namespaced(client.clone(), "default");
    eventually_within(T, "the JobSet resource served", || async {
        api.list(&ListParams::default()).await.ok().map(|_| ())
    })
    .await;
}

pub(crate) fn template(parallelism: i32, run: &str, exit: Option<&str>, scheduling: Option<Value>) -> Value {
    let mut annotations = json!({"kwas.dev/sim-run-duration": run});
    if let Some(e) = exit {
        annotations["kwas.dev/sim-exit-phase"] = json!(e);
    }
    let mut spec = json!({
        "parallelism": parallelism, "completions": parallelism, "backoffLimit": 0,
        "template": {"metadata": {"annotations": annotations}, "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}
    });
    if let Some(s) = scheduling {
        spec["scheduling"] = s;
    }
    json!({"spec": spec})
}

pub(crate) fn jobset(name: &str, spec: Value) -> JobSet {
    serde_json::from_value(json!({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": name, "namespace": "default"}, "spec": spec})).unwrap()
}

fn two_replicated_jobs(management: &str) -> Value {
    json!({
        "scheduling": {
            "podGroupManagement": management,
            "replicatedJobPolicies": [{"targetReplicatedJob": "workers", "schedulingPolicy": {"gang": {}}, "schedulingConstraints": {"topology": [{"key": "kwas.dev/rack"}]}}]
        },
        "replicatedJobs": [
            {"name": "driver", "replicas": 1, "template": template(1, "100ms", None, None)},
            {"name": "workers", "replicas": 2, "template": template(2, "100ms", None, None)}
        ]
    })
}

pub(crate) async fn list<K>(client: &Client) -> Vec<K>
where
    K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    Api::<K>::namespaced(client.clone(), "default")
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
}

pub(crate) async fn get_js(client: &Client, name: &str) -> JobSet {
    Api::<JobSet>::namespaced(client.clone(), "default")
        .get(name)
        .await
        .unwrap()
}

pub(crate) fn js_condition<'a>(
    js: &'a JobSet,
    type_: &str,
) -> Option<&'a k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition> {
    js.status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == type_ && c.status == "True")
}

pub(crate) async fn wait_js(client: &Client, name: &str, type_: &str) -> JobSet {
    eventually_within(T, format!("JobSet {name} {type_}"), || async {
        let js = get_js(client, name).await;
        js_condition(&js, type_).is_some().then_some(js)
    })
    .await
}

pub(crate) struct Env {
    pub(crate) cluster: kwas_devcluster::DevCluster,
    pub(crate) client: Client,
    _binder: Task,
    _jobs: Task,
    jobsets: Option<Task>,
}

pub(crate) async fn env(management: PodGroupManagement) -> Env {
    env_with(JobSetControllerConfig {
        default_management: management,
        ..Default::default()
    })
    .await
}

pub(crate) async fn env_with(config: JobSetControllerConfig) -> Env {
    let cluster = cluster().await;
    let client = cluster.client();
    install_crd(&client).await;
    let binder = start_binder(client.clone(), cluster.node_names());
    let jobs = start_job_controller(client.clone(), job_config());
    let jobsets = start_jobset_controller(client.clone(), config);
    Env {
        cluster,
        client,
        _binder: binder,
        _jobs: jobs,
        jobsets: Some(jobsets),
    }
}

fn group_parent(g: &PodGroup) -> Option<&str> {
    g.spec.parent_composite_pod_group_name.as_deref()
}

#[tokio::test]
async fn centralized_management_creates_every_group_and_runs_to_completion() {
    let e = env(PodGroupManagement::Centralized).await;
    let c = &e.client;
    Api::<JobSet>::namespaced(c.clone(), "default")
        .create(
            &PostParams::default(),
            &jobset("pretrain", two_replicated_jobs("Centralized")),
        )
        .await
        .unwrap();
    let done = wait_js(c, "pretrain", "Completed").await;
    let status = done.status.unwrap();
    let counts: Vec<(String, i32)> = status
        .replicated_jobs_status
        .iter()
        .map(|r| (r.name.clone(), r.succeeded))
        .collect();
    assert_eq!(counts, [("driver".to_string(), 1), ("workers".to_string(), 2)]);
    let workloads: Vec<Workload> = list(c).await;
    assert_eq!(workloads.len(), 1);
    assert_eq!(workloads[0].owner_references()[0].kind, "JobSet");
    let roots: Vec<CompositePodGroup> = list(c).await;
    assert_eq!(roots.len(), 1);
    assert_eq!(
        roots[0].spec.scheduling_policy.gang.as_ref().unwrap().min_group_count,
        3
    );
    let groups: Vec<PodGroup> = list(c).await;
    assert_eq!(groups.len(), 3);
    for g in &groups {
        assert_eq!(group_parent(g), Some(roots[0].name_any().as_str()));
        assert_eq!(
            g.owner_references()[0].kind,
            "JobSet",
            "centralized groups are owned by the JobSet"
        );
    }
    let jobs: Vec<Job> = list(c).await;
    assert_eq!(jobs.len(), 3);
    for j in &jobs {
        let group = j
            .spec
            .as_ref()
            .unwrap()
            .template
            .spec
            .as_ref()
            .unwrap()
            .scheduling_group
            .as_ref()
            .unwrap()
            .pod_group_name
            .clone()
            .unwrap();
        assert!(groups.iter().any(|g| g.name_any() == group));
        assert!(
            j.spec.as_ref().unwrap().scheduling.is_none(),
            "the child's scheduling block is stripped"
        );
    }
    // Every pod carries its Job's group.
    let pods: Vec<Pod> = list(c).await;
    assert_eq!(pods.len(), 5);
    assert!(pods.iter().all(|p| p.spec.as_ref().unwrap().scheduling_group.is_some()));
    assert_eq!(status.workload_name, Some(workloads[0].name_any()));
    e.cluster.shutdown().await;
}

#[tokio::test]
async fn delegated_management_lets_the_job_controller_create_the_groups() {
    let e = env(PodGroupManagement::Centralized).await;
    let c = &e.client;
    Api::<JobSet>::namespaced(c.clone(), "default")
        .create(
            &PostParams::default(),
            &jobset("pretrain", two_replicated_jobs("Delegated")),
        )
        .await
        .unwrap();
    wait_js(c, "pretrain", "Completed").await;
    let roots: Vec<CompositePodGroup> = list(c).await;
    let groups: Vec<PodGroup> = list(c).await;
    assert_eq!(groups.len(), 3);
    for g in &groups {
        assert_eq!(group_parent(g), Some(roots[0].name_any().as_str()));
        assert_eq!(
            g.owner_references()[0].kind,
            "Job",
            "delegated groups are owned by their Job"
        );
    }
    for j in list::<Job>(c).await {
        let mapping = workloadbuilder::DownwardMapping::read(j.metadata.annotations.as_ref().unwrap())
            .unwrap()
            .unwrap();
        assert_eq!(
            mapping.parent_composite_pod_group.as_deref(),
            Some(roots[0].name_any().as_str())
        );
    }
    assert_eq!(list::<Workload>(c).await.len(), 1, "only the JobSet's Workload");
    e.cluster.shutdown().await;
}

#[tokio::test]
async fn a_restarted_jobset_controller_creates_no_duplicates() {
    let mut e = env(PodGroupManagement::Centralized).await;
    let c = e.client.clone();
    let mut spec = two_replicated_jobs("Centralized");
    spec["replicatedJobs"][1]["replicas"] = json!(4);
    spec["replicatedJobs"][1]["template"] = template(2, "400ms", None, None);
    Api::<JobSet>::namespaced(c.clone(), "default")
        .create(&PostParams::default(), &jobset("pretrain", spec))
        .await
        .unwrap();
    eventually_within(T, "some child Jobs", || async {
        (!list::<Job>(&c).await.is_empty()).then_some(())
    })
    .await;
    e.jobsets.take().unwrap().stop().await;
    let _again = start_jobset_controller(c.clone(), JobSetControllerConfig::default());
    wait_js(&c, "pretrain", "Completed").await;
    assert_eq!(list::<Workload>(&c).await.len(), 1);
    assert_eq!(list::<CompositePodGroup>(&c).await.len(), 1);
    assert_eq!(list::<PodGroup>(&c).await.len(), 5);
    assert_eq!(list::<Job>(&c).await.len(), 5);
    e.cluster.shutdown().await;
}

/// The resourceVersions at which the first `expected` objects of kind `K` were deleted. Returns once the
/// watch has listed the kind, so no later deletion is missed.
async fn deletions<K>(client: &Client, expected: usize) -> tokio::task::JoinHandle<Vec<u64>>
where
    K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + 'static,
{
    let api: Api<K> = Api::namespaced(client.clone(), "default");
    let (listed, listed_rx) = tokio::sync::oneshot::channel();
    let handle = tokio::spawn(async move {
        let mut listed = Some(listed);
        let mut out = Vec::new();
        let mut stream = std::pin::pin!(kube::runtime::watcher(api, Default::default()));
        let deadline = tokio::time::Instant::now() + T;
        while let Ok(Some(event)) = tokio::time::timeout_at(deadline, stream.next()).await {
            if let Ok(kube::runtime::watcher::Event::InitDone) = event
                && let Some(l) = listed.take()
            {
                let _ = l.send(());
            }
            if let Ok(kube::runtime::watcher::Event::Delete(o)) = event {
                out.push(
                    o.meta()
                        .resource_version
                        .as_deref()
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(0),
                );
                if out.len() == expected {
                    break;
                }
            }
        }
        out
    });
    tokio::time::timeout(T, listed_rx)
        .await
        .expect("the watch lists the kind in time")
        .expect("the watch lists the kind");
    handle
}

#[tokio::test]
async fn deleting_a_jobset_removes_everything_below_it_groups_bottom_up() {
    let e = env(PodGroupManagement::Centralized).await;
    let c = &e.client;
    let mut spec = two_replicated_jobs("Centralized");
    spec["replicatedJobs"][0]["template"] = template(1, "1h", None, None);
    spec["replicatedJobs"][1]["template"] = template(2, "1h", None, None);
    Api::<JobSet>::namespaced(c.clone(), "default")
        .create(&PostParams::default(), &jobset("pretrain", spec))
        .await
        .unwrap();
    eventually_within(T, "running pods", || async {
        let pods: Vec<Pod> = list(c).await;
        (pods.len() == 5
            && pods
                .iter()
                .all(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")))
        .then_some(())
    })
    .await;
    let group_deletions = deletions::<PodGroup>(c, 3).await;
    let root_deletions = deletions::<CompositePodGroup>(c, 1).await;
    Api::<JobSet>::namespaced(c.clone(), "default")
        .delete("pretrain", &DeleteParams::background())
        .await
        .unwrap();
    eventually_within(T, "everything below the JobSet gone", || async {
        let gone = list::<Job>(c).await.is_empty()
            && list::<Pod>(c).await.is_empty()
            && list::<PodGroup>(c).await.is_empty()
            && list::<CompositePodGroup>(c).await.is_empty()
            && list::<Workload>(c).await.is_empty();
        gone.then_some(())
    })
    .await;
    let groups = group_deletions.await.unwrap();
    let root = root_deletions.await.unwrap();
    assert_eq!(groups.len(), 3);
    assert_eq!(root.len(), 1);
    assert!(
        groups.iter().all(|g| *g < root[0]),
        "PodGroups {groups:?} go before their CompositePodGroup {root:?}"
    );
    e.cluster.shutdown().await;
}

#[tokio::test]
async fn a_failed_job_restarts_the_jobset_until_max_restarts() {
    let e = env(PodGroupManagement::Centralized).await;
    let c = &e.client;
    let spec = json!({
        "failurePolicy": {"maxRestarts": 1},
        "replicatedJobs": [
            {"name": "ok", "replicas": 1, "template": template(1, "1h", None, None)},
            {"name": "broken", "replicas": 1, "template": template(1, "50ms", Some("Failed"), None)}
        ]
    });
    Api::<JobSet>::namespaced(c.clone(), "default")
        .create(&PostParams::default(), &jobset("flaky", spec))
        .await
        .unwrap();
    let failed = wait_js(c, "flaky", "Failed").await;
    assert_eq!(js_condition(&failed, "Failed").unwrap().reason, "ReachedMaxRestarts");
    assert_eq!(failed.status.as_ref().unwrap().restarts, 1);
    eventually_within(T, "the second attempt's Jobs removed after failing", || async {
        let jobs: Vec<Job> = list(c).await;
        let active = jobs
            .iter()
            .filter(|j| {
                j.status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .is_none_or(|c| c.is_empty())
            })
            .count();
        (active == 0
            && jobs
                .iter()
                .all(|j| j.labels()["jobset.sigs.k8s.io/restart-attempt"] == "1"))
        .then_some(())
    })
    .await;
    e.cluster.shutdown().await;
}

#[tokio::test]
async fn suspend_propagates_to_child_jobs() {
    let e = env(PodGroupManagement::Centralized).await;
    let c = &e.client;
    let mut spec = two_replicated_jobs("Centralized");
    spec["suspend"] = json!(true);
    Api::<JobSet>::namespaced(c.clone(), "default")
        .create(&PostParams::default(), &jobset("later", spec))
        .await
        .unwrap();
    wait_js(c, "later", "Suspended").await;
    eventually_within(T, "suspended child Jobs", || async {
        let jobs: Vec<Job> = list(c).await;
        (jobs.len() == 3 && jobs.iter().all(|j| j.spec.as_ref().unwrap().suspend == Some(true))).then_some(())
    })
    .await;
    assert!(list::<Pod>(c).await.is_empty());
    Api::<JobSet>::namespaced(c.clone(), "default")
        .patch(
            "later",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"suspend": false}})),
        )
        .await
        .unwrap();
    wait_js(c, "later", "Completed").await;
    e.cluster.shutdown().await;
}

#[tokio::test]
async fn conflicting_and_invalid_configurations_fail_with_field_paths_and_create_nothing() {
    let e = env(PodGroupManagement::Centralized).await;
    let c = &e.client;
    let api = Api::<JobSet>::namespaced(c.clone(), "default");
    // Option A and Option B for the same replicated job.
    let mut both = two_replicated_jobs("Centralized");
    both["replicatedJobs"][1]["template"] = template(2, "1s", None, Some(json!({"schedulingPolicy": {"gang": {}}})));
    // The CRD's rules refuse it at the API (the controller checks the same again, for clusters whose CRD
    // lacks them: see the decide tests).
    let err = api
        .create(&PostParams::default(), &jobset("both", both))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 422 && s.message.contains("spec.replicatedJobs: Invalid value: a replicated job's scheduling may be set in its Job template or in spec.scheduling.replicatedJobPolicies, not both")),
        "{err}"
    );
    // A policy naming no replicated job.
    let mut dangling = two_replicated_jobs("Centralized");
    dangling["scheduling"]["replicatedJobPolicies"][0]["targetReplicatedJob"] = json!("wrokers");
    let err = api
        .create(&PostParams::default(), &jobset("dangling", dangling))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 422 && s.message.contains("every targetReplicatedJob must name a replicated job")),
        "{err}"
    );
    // `all` disruption with the Basic escape hatch at the root.
    let mut all_basic = two_replicated_jobs("Centralized");
    all_basic["scheduling"]["schedulingPolicy"] = json!({"basic": {}});
    all_basic["scheduling"]["disruptionMode"] = json!({"all": {}});
    api.create(&PostParams::default(), &jobset("allbasic", all_basic))
        .await
        .unwrap();
    for (name, path) in [(
        "allbasic",
        "spec.scheduling.disruptionMode: Invalid value: \"\": the disruptionMode `all` is not supported with the Basic scheduling policy",
    )] {
        let failed = wait_js(c, name, "Failed").await;
        let cond = js_condition(&failed, "Failed").unwrap();
        assert_eq!(cond.reason, "InvalidSchedulingConfiguration");
        assert!(cond.message.contains(path), "{name}: {}", cond.message);
    }
    // The controller has reconciled the failed JobSet again since (it would create what it creates).
    let jobsets = e.jobsets.as_ref().unwrap();
    reconciled_after_now(jobsets, "jobset", |n| poke::<JobSet>(c, "allbasic", n)).await;
    assert!(list::<Workload>(c).await.is_empty());
    assert!(list::<Job>(c).await.is_empty());
    assert!(list::<CompositePodGroup>(c).await.is_empty());
    e.cluster.shutdown().await;
}

#[tokio::test]
async fn a_min_count_edit_is_resynced_to_the_workload_and_every_worker_group_under_both_strategies() {
    let e = env(PodGroupManagement::Centralized).await;
    let c = &e.client;
    let api = Api::<JobSet>::namespaced(c.clone(), "default");
    for management in ["Centralized", "Delegated"] {
        let name = format!("resize-{}", management.to_lowercase());
        let mut spec = two_replicated_jobs(management);
        spec["replicatedJobs"][1]["template"] = template(3, "1h", None, None);
        api.create(&PostParams::default(), &jobset(&name, spec)).await.unwrap();
        let worker_groups = || async {
            list::<PodGroup>(c)
                .await
                .into_iter()
                .filter(|g| {
                    g.spec
                        .workload_ref
                        .as_ref()
                        .is_some_and(|r| r.template_name == "workers" && r.workload_name.starts_with(&name))
                })
                .collect::<Vec<_>>()
        };
        let min_counts = |groups: &[PodGroup]| {
            groups
                .iter()
                .map(|g| g.spec.scheduling_policy.gang.as_ref().map(|x| x.min_count))
                .collect::<Vec<_>>()
        };
        eventually_within(T, "two worker groups, gangs of 3 (parallelism)", || async {
            let g = worker_groups().await;
            (min_counts(&g) == vec![Some(3), Some(3)]).then_some(())
        })
        .await;
        api.patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"scheduling": {"replicatedJobPolicies": [
                {"targetReplicatedJob": "workers", "schedulingPolicy": {"gang": {"minCount": 2}},
                 "schedulingConstraints": {"topology": [{"key": "kwas.dev/rack"}]}}
            ]}}})),
        )
        .await
        .unwrap();
        eventually_within(T, format!("{management}: minCount 2 everywhere"), || async {
            let workload = list::<Workload>(c)
                .await
                .into_iter()
                .find(|w| w.name_any().starts_with(&name))?;
            let template = kwas_controllers::sync::template_min_count(&workload, "workers");
            let g = worker_groups().await;
            (template == Some(2) && min_counts(&g) == vec![Some(2), Some(2)]).then_some(())
        })
        .await;
    }
    e.cluster.shutdown().await;
}

#[tokio::test]
async fn an_undecodable_or_oversized_jobset_is_reported_on_itself_and_the_others_run() {
    let e = env(PodGroupManagement::Centralized).await;
    let c = &e.client;
    // A JobSet whose Job template holds a number where the pod spec has a list (the CRD preserves the
    // template's unknown fields, so the API server accepts it). A typed watch would fail on it for good.
    let resource = kube::api::ApiResource::erase::<JobSet>(&());
    let dynamic: Api<kube::api::DynamicObject> = Api::namespaced_with(c.clone(), "default", &resource);
    let mut bad = two_replicated_jobs("Centralized");
    bad["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"] = json!(5);
    let bad: kube::api::DynamicObject = serde_json::from_value(json!({
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": "undecodable", "namespace": "default"}, "spec": bad
    }))
    .unwrap();
    dynamic.create(&PostParams::default(), &bad).await.unwrap();
    // Replicas within the per-job bound whose sum is not.
    let mut wide = two_replicated_jobs("Centralized");
    wide["replicatedJobs"][0]["replicas"] = json!(10000);
    wide["replicatedJobs"][1]["replicas"] = json!(10000);
    let api = Api::<JobSet>::namespaced(c.clone(), "default");
    let err = api
        .create(&PostParams::default(), &jobset("wide", wide))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 422 && s.message.contains("the replicated jobs' replicas may sum to at most 10000")),
        "{err}"
    );
    // More than the per-job bound is refused by the schema.
    let mut huge = two_replicated_jobs("Centralized");
    huge["replicatedJobs"][1]["replicas"] = json!(i32::MAX);
    let err = api
        .create(&PostParams::default(), &jobset("huge", huge))
        .await
        .unwrap_err();
    assert!(matches!(&err, kube::Error::Api(s) if s.code == 422), "{err}");
    api.create(
        &PostParams::default(),
        &jobset("fine", two_replicated_jobs("Centralized")),
    )
    .await
    .unwrap();

    wait_js(c, "fine", "Completed").await;
    let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(c.clone(), "default");
    let note = eventually_within(T, "a DecodeError event on the undecodable JobSet", || async {
        events
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .find(|e| {
                e.reason.as_deref() == Some("DecodeError")
                    && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("undecodable")
            })
            .and_then(|e| e.note)
    })
    .await;
    assert!(note.contains("invalid type"), "{note}");
    // Nothing was created for the two rejected JobSets.
    let jobs = list::<Job>(c).await;
    assert!(jobs.iter().all(|j| j.name_any().starts_with("fine-")), "{jobs:?}");
    e.cluster.shutdown().await;
}

/// Both controllers in one process (`process::run`, as `kwas controllers` runs them) watch each kind once:
/// a delegated JobSet, which needs both, runs to completion on one watch per kind.
#[tokio::test]
async fn one_process_watches_each_kind_once_for_both_controllers() {
    let cluster = cluster().await;
    let client = cluster.client();
    install_crd(&client).await;
    let _binder = start_binder(client.clone(), cluster.node_names());
    let agent = "controllers-under-test";
    let config = kwas_controllers::process::ControllersConfig {
        job: Some(job_config()),
        jobset: Some(JobSetControllerConfig::default()),
        resource_claims: false,
        leader_election: None,
        admin_addr: None,
        webhook: None,
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let process = tokio::spawn(kwas_controllers::process::run(
        cluster.client_as(agent).unwrap(),
        config,
        async move {
            let _ = stopped.await;
        },
    ));
    Api::<JobSet>::namespaced(client.clone(), "default")
        .create(
            &PostParams::default(),
            &jobset("shared", two_replicated_jobs("Delegated")),
        )
        .await
        .unwrap();
    wait_js(&client, "shared", "Completed").await;
    let mut watches: Vec<(String, u64)> = cluster
        .request_counts()
        .into_iter()
        .filter(|(k, _)| k.client == agent && k.verb == "WATCH")
        .map(|(k, n)| (k.resource, n))
        .collect();
    watches.sort();
    let expected: Vec<(String, u64)> = [
        "compositepodgroups",
        "jobs",
        "jobsets",
        "pods",
        "podgroups",
        "workloads",
    ]
    .iter()
    .map(|r| (r.to_string(), 1))
    .collect();
    let mut expected = expected;
    expected.sort();
    assert_eq!(watches, expected);
    let _ = stop.send(());
    process.await.unwrap().unwrap();
    cluster.shutdown().await;
}

/// The JobSet project's DNS setup: a headless Service named after the JobSet selecting its pods, and the
/// pods' subdomain, so an Indexed child's pod resolves as `<job>-<index>.<jobset>`.
#[tokio::test]
async fn a_jobset_gets_a_headless_service_and_its_pods_a_subdomain() {
    let e = env(PodGroupManagement::Centralized).await;
    let c = &e.client;
    Api::<JobSet>::namespaced(c.clone(), "default")
        .create(
            &PostParams::default(),
            &jobset("dns", two_replicated_jobs("Centralized")),
        )
        .await
        .unwrap();
    wait_js(c, "dns", "Completed").await;
    let svc = Api::<k8s_openapi::api::core::v1::Service>::namespaced(c.clone(), "default")
        .get("dns")
        .await
        .unwrap();
    let spec = svc.spec.unwrap();
    assert_eq!(spec.cluster_ip.as_deref(), Some("None"));
    assert_eq!(spec.publish_not_ready_addresses, Some(true));
    assert_eq!(spec.selector.unwrap()["jobset.sigs.k8s.io/jobset-name"], "dns");
    assert_eq!(svc.metadata.owner_references.unwrap()[0].kind, "JobSet");
    let pods: Vec<Pod> = list(c).await;
    assert_eq!(pods.len(), 5);
    for p in &pods {
        assert_eq!(p.spec.as_ref().unwrap().subdomain.as_deref(), Some("dns"));
        assert_eq!(p.labels()["jobset.sigs.k8s.io/jobset-name"], "dns");
    }
    e.cluster.shutdown().await;
}
