//! The Job controller on devcluster: each management mode, completion modes, failure and backoff, suspend
//! and resume, deadlines, restarts of the controller, invalid input and minCount re-sync.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::time::Duration;

use crate::common::*;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::scheduling::v1alpha3::{CompositePodGroup, PodGroup, Workload};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use workloadbuilder::job::{job_owned_pod_group_name, job_workload_name};
use workloadbuilder::{GroupName, TemplateKey};

const T: Duration = Duration::from_secs(20);

fn pod_template(run: Option<&str>, exit: Option<&str>) -> Value {
    let mut annotations = serde_json::Map::new();
    if let Some(r) = run {
        annotations.insert("kwas.dev/sim-run-duration".into(), json!(r));
    }
    if let Some(e) = exit {
        annotations.insert("kwas.dev/sim-exit-phase".into(), json!(e));
    }
    json!({
        "metadata": {"annotations": annotations},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}
    })
}

async fn create(client: &Client, j: &Job) -> Job {
    Api::<Job>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), j)
        .await
        .unwrap()
}

fn condition<'a>(j: &'a Job, type_: &str) -> Option<&'a k8s_openapi::api::batch::v1::JobCondition> {
    j.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_ && c.status == "True")
}

async fn wait_condition(client: &Client, name: &str, type_: &str) -> Job {
    eventually_within(T, format!("Job {name} {type_}"), || async {
        let j = get(client, name).await;
        condition(&j, type_).is_some().then_some(j)
    })
    .await
}

async fn workloads(client: &Client) -> Vec<Workload> {
    Api::<Workload>::namespaced(client.clone(), "default")
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
}

async fn groups(client: &Client) -> Vec<PodGroup> {
    Api::<PodGroup>::namespaced(client.clone(), "default")
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
}

async fn event_reasons(client: &Client, name: &str) -> Vec<(String, String, String)> {
    Api::<Event>::namespaced(client.clone(), "default")
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name))
        .map(|e| {
            (
                e.type_.unwrap_or_default(),
                e.reason.unwrap_or_default(),
                e.note.unwrap_or_default(),
            )
        })
        .collect()
}

fn pod_group_of(p: &Pod) -> Option<String> {
    p.spec.as_ref()?.scheduling_group.as_ref()?.pod_group_name.clone()
}

/// The resourceVersion at which the first object of kind `K` appeared (resourceVersions are one global
/// counter, so they order creations across kinds). Returns once the watch has listed the kind, so nothing
/// created afterwards is missed.
async fn first_created<K>(client: &Client) -> tokio::task::JoinHandle<u64>
where
    K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + 'static,
{
    use futures::StreamExt;
    let api: Api<K> = Api::namespaced(client.clone(), "default");
    let (listed, listed_rx) = tokio::sync::oneshot::channel();
    let handle = tokio::spawn(async move {
        let mut listed = Some(listed);
        let mut stream = std::pin::pin!(kube::runtime::watcher(api, Default::default()));
        while let Some(event) = stream.next().await {
            match event {
                Ok(kube::runtime::watcher::Event::InitDone) => {
                    if let Some(l) = listed.take() {
                        let _ = l.send(());
                    }
                }
                Ok(kube::runtime::watcher::Event::Apply(o)) => {
                    return o
                        .meta()
                        .resource_version
                        .as_deref()
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(0);
                }
                _ => {}
            }
        }
        0
    });
    tokio::time::timeout(T, listed_rx)
        .await
        .expect("the watch lists the kind in time")
        .expect("the watch lists the kind");
    handle
}

#[tokio::test]
async fn root_gang_job_creates_workload_then_pod_group_then_pods_and_completes() {
    let c = cluster().await;
    let client = c.client();
    let order = (
        first_created::<Workload>(&client).await,
        first_created::<PodGroup>(&client).await,
        first_created::<Pod>(&client).await,
    );
    let _binder = start_binder(client.clone(), c.node_names());
    let _ctl = start_job_controller(client.clone(), job_config());
    let j = create(
        &client,
        &job(
            "train",
            json!({
                "parallelism": 4, "completions": 4,
                "scheduling": {
                    "schedulingPolicy": {"gang": {}},
                    "schedulingConstraints": {"topology": [{"key": "kwas.dev/rack"}]},
                    "disruptionMode": {"all": {}}
                },
                "template": pod_template(Some("100ms"), None)
            }),
        ),
    )
    .await;
    let done = wait_condition(&client, "train", "Complete").await;
    let status = done.status.unwrap();
    assert_eq!(
        (status.succeeded, status.failed.unwrap_or(0), status.active),
        (Some(4), 0, Some(0))
    );
    assert!(status.completion_time.is_some());

    let w = workloads(&client).await;
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].name_any(), job_workload_name(&j));
    let template = &w[0].spec.pod_group_templates.as_ref().unwrap()[0];
    assert_eq!(template.name, "train-pgt-0");
    assert_eq!(template.scheduling_policy.gang.as_ref().unwrap().min_count, 4);
    let g = groups(&client).await;
    assert_eq!(g.len(), 1);
    assert_eq!(
        g[0].name_any(),
        job_owned_pod_group_name(
            &j,
            TemplateKey {
                workload: &w[0].name_any(),
                template: "train-pgt-0"
            }
        )
        .as_str()
    );
    let owners: Vec<(String, Option<bool>)> = g[0]
        .owner_references()
        .iter()
        .map(|o| (o.kind.clone(), o.controller))
        .collect();
    assert_eq!(
        owners,
        [("Job".to_string(), Some(true)), ("Workload".to_string(), None)]
    );
    // Creation order: Workload, then PodGroup, then pods.
    let (w_rv, g_rv, p_rv) = (order.0.await.unwrap(), order.1.await.unwrap(), order.2.await.unwrap());
    assert!(0 < w_rv && w_rv < g_rv && g_rv < p_rv, "{w_rv} < {g_rv} < {p_rv}");
    let pods = pods_of(&client, "train").await;
    assert_eq!(pods.len(), 4);
    assert!(
        pods.iter()
            .all(|p| pod_group_of(p).as_deref() == Some(g[0].name_any().as_str()))
    );
    // Events are sent in the background (the reconcile does not wait for them): wait for all four.
    let wanted = ["WorkloadCreated", "PodGroupCreated", "SuccessfulCreate", "Completed"];
    eventually_within(T, "the Job's events", || async {
        let reasons: Vec<String> = event_reasons(&client, "train").await.into_iter().map(|e| e.1).collect();
        wanted.iter().all(|r| reasons.iter().any(|x| x == r)).then_some(())
    })
    .await;
    c.shutdown().await;
}

#[tokio::test]
async fn basic_indexed_job_completes_every_index_once() {
    let c = cluster().await;
    let client = c.client();
    let _binder = start_binder(client.clone(), c.node_names());
    let _ctl = start_job_controller(client.clone(), job_config());
    create(
        &client,
        &job("idx", json!({"parallelism": 2, "completions": 5, "completionMode": "Indexed", "template": pod_template(Some("50ms"), None)})),
    )
    .await;
    let done = wait_condition(&client, "idx", "Complete").await;
    let status = done.status.unwrap();
    assert_eq!(status.completed_indexes.as_deref(), Some("0-4"));
    assert_eq!(status.succeeded, Some(5));
    let pods = pods_of(&client, "idx").await;
    let indexes: BTreeSet<String> = pods
        .iter()
        .map(|p| p.annotations()["batch.kubernetes.io/job-completion-index"].clone())
        .collect();
    assert_eq!(indexes.len(), 5);
    assert_eq!(pods.len(), 5, "one pod per index, none duplicated");
    // KEP-6089 Example 2: no scheduling block, a Basic Workload.
    let w = workloads(&client).await;
    assert!(
        w[0].spec.pod_group_templates.as_ref().unwrap()[0]
            .scheduling_policy
            .basic
            .is_some()
    );
    c.shutdown().await;
}

#[tokio::test]
async fn non_indexed_job_counts_exactly() {
    let c = cluster().await;
    let client = c.client();
    let _binder = start_binder(client.clone(), c.node_names());
    let _ctl = start_job_controller(client.clone(), job_config());
    create(
        &client,
        &job(
            "many",
            json!({"parallelism": 3, "completions": 7, "template": pod_template(Some("30ms"), None)}),
        ),
    )
    .await;
    let done = wait_condition(&client, "many", "Complete").await;
    assert_eq!(done.status.as_ref().unwrap().succeeded, Some(7));
    assert_eq!(pods_of(&client, "many").await.len(), 7);
    // Every pod's tracking finalizer was released once it was counted.
    assert!(
        pods_of(&client, "many")
            .await
            .iter()
            .all(|p| !p.finalizers().iter().any(|f| f == "batch.kubernetes.io/job-tracking"))
    );
    c.shutdown().await;
}

#[tokio::test]
async fn failures_are_replaced_until_the_backoff_limit() {
    let c = cluster().await;
    let client = c.client();
    let _binder = start_binder(client.clone(), c.node_names());
    let _ctl = start_job_controller(client.clone(), job_config());
    create(
        &client,
        &job("flaky", json!({"parallelism": 1, "completions": 1, "backoffLimit": 2, "template": pod_template(Some("20ms"), Some("Failed"))})),
    )
    .await;
    let failed = wait_condition(&client, "flaky", "Failed").await;
    let status = failed.status.as_ref().unwrap();
    assert_eq!(
        condition(&failed, "Failed").unwrap().reason.as_deref(),
        Some("BackoffLimitExceeded")
    );
    assert_eq!(
        status.failed,
        Some(3),
        "backoffLimit 2: the third failure fails the Job"
    );
    assert_eq!(pods_of(&client, "flaky").await.len(), 3, "two replacements");
    assert!(
        event_reasons(&client, "flaky")
            .await
            .iter()
            .any(|e| e.0 == "Warning" && e.1 == "BackoffLimitExceeded")
    );
    c.shutdown().await;
}

#[tokio::test]
async fn suspend_defers_the_pod_group_and_resume_runs_the_job() {
    let c = cluster().await;
    let client = c.client();
    let _binder = start_binder(client.clone(), c.node_names());
    let ctl = start_job_controller(client.clone(), job_config());
    create(
        &client,
        &job(
            "later",
            json!({"suspend": true, "parallelism": 2, "completions": 2, "scheduling": {"schedulingPolicy": {"gang": {}}}, "template": pod_template(Some("50ms"), None)}),
        ),
    )
    .await;
    let suspended = wait_condition(&client, "later", "Suspended").await;
    assert!(suspended.status.as_ref().unwrap().start_time.is_none());
    eventually_within(T, "the Workload of a suspended Job", || async {
        (workloads(&client).await.len() == 1).then_some(())
    })
    .await;
    // A reconcile that started once the Workload existed has finished (it saw the Workload, and would
    // have gone on to the PodGroup).
    reconciled_after_now(&ctl, "job", |n| poke::<Job>(&client, "later", n)).await;
    assert!(groups(&client).await.is_empty(), "no PodGroup while suspended");
    assert!(pods_of(&client, "later").await.is_empty());
    Api::<Job>::namespaced(client.clone(), "default")
        .patch(
            "later",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"suspend": false}})),
        )
        .await
        .unwrap();
    let done = wait_condition(&client, "later", "Complete").await;
    let resumed = done
        .status
        .unwrap()
        .conditions
        .unwrap()
        .into_iter()
        .find(|c| c.type_ == "Suspended")
        .unwrap();
    assert_eq!(
        (resumed.status.as_str(), resumed.reason.as_deref()),
        ("False", Some("JobResumed"))
    );
    assert_eq!(groups(&client).await.len(), 1);
    c.shutdown().await;
}

#[tokio::test]
async fn suspending_a_running_job_deletes_its_pods_and_pod_group() {
    let c = cluster().await;
    let client = c.client();
    let _binder = start_binder(client.clone(), c.node_names());
    let _ctl = start_job_controller(client.clone(), job_config());
    create(&client, &job("pause", json!({"parallelism": 2, "completions": 2, "scheduling": {"schedulingPolicy": {"gang": {}}}, "template": pod_template(None, None)}))).await;
    eventually_within(T, "running pods", || async {
        (pods_of(&client, "pause").await.len() == 2).then_some(())
    })
    .await;
    Api::<Job>::namespaced(client.clone(), "default")
        .patch(
            "pause",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"suspend": true}})),
        )
        .await
        .unwrap();
    wait_condition(&client, "pause", "Suspended").await;
    eventually_within(T, "pods and PodGroup gone", || async {
        (pods_of(&client, "pause").await.is_empty() && groups(&client).await.is_empty()).then_some(())
    })
    .await;
    let j = get(&client, "pause").await;
    assert_eq!(
        j.status.as_ref().unwrap().failed.unwrap_or(0),
        0,
        "pods removed on suspend are not failures"
    );
    c.shutdown().await;
}

#[tokio::test]
async fn deadline_fails_the_job_and_removes_its_pods() {
    let c = cluster().await;
    let client = c.client();
    let _binder = start_binder(client.clone(), c.node_names());
    let _ctl = start_job_controller(client.clone(), job_config());
    create(&client, &job("slow", json!({"parallelism": 2, "completions": 2, "activeDeadlineSeconds": 1, "template": pod_template(None, None)}))).await;
    let failed = wait_condition(&client, "slow", "Failed").await;
    assert_eq!(
        condition(&failed, "Failed").unwrap().reason.as_deref(),
        Some("DeadlineExceeded")
    );
    eventually_within(T, "pods removed", || async {
        pods_of(&client, "slow").await.is_empty().then_some(())
    })
    .await;
    c.shutdown().await;
}

#[tokio::test]
async fn values_at_their_limits_never_stop_the_controller() {
    let c = cluster().await;
    let client = c.client();
    let _binder = start_binder(client.clone(), c.node_names());
    let _ctl = start_job_controller(client.clone(), job_config());
    // The largest deadline and TTL kube-apiserver accepts (once a panic in the reconcile that left every
    // later Job without pods), and the largest parallelism on a suspended Job.
    create(
        &client,
        &job(
            "far",
            json!({"activeDeadlineSeconds": i64::MAX, "ttlSecondsAfterFinished": i32::MAX, "template": pod_template(Some("100ms"), None)}),
        ),
    )
    .await;
    create(&client, &job("wide", json!({"parallelism": i32::MAX, "suspend": true}))).await;
    create(&client, &job("indexed", json!({"completionMode": "Indexed", "completions": i32::MAX, "parallelism": 2, "template": pod_template(Some("100ms"), None)}))).await;
    create(
        &client,
        &job("next", json!({"template": pod_template(Some("100ms"), None)})),
    )
    .await;
    wait_condition(&client, "far", "Complete").await;
    wait_condition(&client, "next", "Complete").await;
    // The huge Indexed Job runs two pods at a time, whatever its completions.
    eventually_within(T, "indexed Job progressing", || async {
        let j = get(&client, "indexed").await;
        let s = j.status.unwrap_or_default();
        (s.succeeded.unwrap_or(0) >= 2 && s.active.unwrap_or(0) <= 2).then_some(())
    })
    .await;
    assert!(pods_of(&client, "wide").await.is_empty());
    c.shutdown().await;
}

#[tokio::test]
async fn a_restarted_controller_creates_no_duplicates_and_loses_no_count() {
    let c = cluster().await;
    let client = c.client();
    let _binder = start_binder(client.clone(), c.node_names());
    let first = start_job_controller(client.clone(), job_config());
    create(
        &client,
        &job("steady", json!({"parallelism": 4, "completions": 12, "scheduling": {"schedulingPolicy": {"gang": {"minCount": 2}}}, "template": pod_template(Some("150ms"), None)})),
    )
    .await;
    eventually_within(T, "some pods succeeded", || async {
        let n = pods_of(&client, "steady")
            .await
            .iter()
            .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Succeeded"))
            .count();
        (n >= 3).then_some(())
    })
    .await;
    first.stop().await;
    // The pods the first instance left run to their end with no controller watching, so the second
    // instance has completions to count that the first never saw.
    eventually_within(T, "the pods left by the first instance finished", || async {
        pods_of(&client, "steady")
            .await
            .iter()
            .all(|p| {
                matches!(
                    p.status.as_ref().and_then(|s| s.phase.as_deref()),
                    Some("Succeeded" | "Failed")
                )
            })
            .then_some(())
    })
    .await;
    let _second = start_job_controller(client.clone(), job_config());
    let done = wait_condition(&client, "steady", "Complete").await;
    assert_eq!(done.status.as_ref().unwrap().succeeded, Some(12));
    assert_eq!(
        pods_of(&client, "steady").await.len(),
        12,
        "no duplicate pods across the restart"
    );
    assert_eq!(workloads(&client).await.len(), 1);
    assert_eq!(groups(&client).await.len(), 1);
    c.shutdown().await;
}

fn delegated_parent_workload() -> Workload {
    use workloadbuilder::{AllowList, PolicyOption, SchedulingConfig, WorkloadBuilder, WorkloadItem};
    let trainer = k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
        api_version: "example.com/v1".into(),
        kind: "Trainer".into(),
        name: "trainer".into(),
        uid: "trainer-uid".into(),
        controller: Some(true),
        block_owner_deletion: None,
    };
    let root = WorkloadItem::new("root")
        .with_default(SchedulingConfig::gang(Some(2)))
        .with_child(
            WorkloadItem::new("workers").with_default(SchedulingConfig::gang(Some(2)).with_topology("kwas.dev/rack")),
        );
    WorkloadBuilder::new(root)
        .allow(AllowList::new().policies([PolicyOption::Gang]))
        .build("trainer-wl", "default", &trainer)
        .unwrap()
}

fn delegated_job(name: &str) -> Job {
    let mut j = job(
        name,
        json!({"parallelism": 2, "completions": 2, "template": pod_template(Some("50ms"), None)}),
    );
    j.metadata.owner_references = Some(vec![k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
        api_version: "example.com/v1".into(),
        kind: "Trainer".into(),
        name: "trainer".into(),
        uid: "trainer-uid".into(),
        controller: Some(true),
        block_owner_deletion: None,
    }]);
    j.metadata.annotations = Some(
        [
            (
                "scheduling.k8s.io/group-template-name".to_string(),
                "workers".to_string(),
            ),
            (
                "scheduling.k8s.io/parent-composite-podgroup".to_string(),
                "trainer-root".to_string(),
            ),
        ]
        .into(),
    );
    j
}

#[tokio::test]
async fn delegated_job_waits_for_the_parent_workload_then_creates_only_its_pod_group() {
    let c = cluster().await;
    let client = c.client();
    let _binder = start_binder(client.clone(), c.node_names());
    let _ctl = start_job_controller(client.clone(), job_config());
    create(&client, &delegated_job("trainer-workers-0")).await;
    let blocked = wait_condition(&client, "trainer-workers-0", "SchedulingBlocked").await;
    assert_eq!(
        condition(&blocked, "SchedulingBlocked").unwrap().reason.as_deref(),
        Some("WorkloadNotFound")
    );
    assert!(pods_of(&client, "trainer-workers-0").await.is_empty());
    let events = eventually_within(T, "the SchedulingDependencyNotFound event", || async {
        let events = event_reasons(&client, "trainer-workers-0").await;
        events
            .iter()
            .any(|e| e.0 == "Warning" && e.1 == "SchedulingDependencyNotFound")
            .then_some(events)
    })
    .await;
    assert!(events.iter().all(|e| e.1 != "WorkloadNotFound"), "{events:?}");
    // The parent shows up: its Workload and root CompositePodGroup.
    let parent = delegated_parent_workload();
    Api::<Workload>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &parent)
        .await
        .unwrap();
    let root = workloadbuilder::new_composite_pod_group(&parent, "root", &GroupName::new("trainer-root"), None, vec![])
        .unwrap();
    Api::<CompositePodGroup>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &root)
        .await
        .unwrap();
    // The second child carries only the spelling kube-apiserver's constants, KEP-5547 and LWS use.
    let mut alt = delegated_job("trainer-workers-1");
    let annotations = alt.metadata.annotations.as_mut().unwrap();
    let parent = annotations
        .remove("scheduling.k8s.io/parent-composite-podgroup")
        .unwrap();
    annotations.insert("scheduling.k8s.io/parent-compositepodgroup".into(), parent);
    create(&client, &alt).await;
    for name in ["trainer-workers-0", "trainer-workers-1"] {
        let done = wait_condition(&client, name, "Complete").await;
        assert!(condition(&done, "SchedulingBlocked").is_none(), "the block is cleared");
        // KEP-5547's name: the parent's Workload, the template and the Job's uid.
        let pg: PodGroup = Api::namespaced(client.clone(), "default")
            .get(&job_owned_pod_group_name(
                &done,
                TemplateKey {
                    workload: "trainer-wl",
                    template: "workers",
                },
            ))
            .await
            .unwrap();
        assert_eq!(pg.spec.parent_composite_pod_group_name.as_deref(), Some("trainer-root"));
        assert_eq!(pg.spec.workload_ref.as_ref().unwrap().workload_name, "trainer-wl");
        assert_eq!(pg.spec.scheduling_policy.gang.as_ref().unwrap().min_count, 2);
        let owners: Vec<&str> = pg.owner_references().iter().map(|o| o.kind.as_str()).collect();
        assert_eq!(owners, ["Job"]);
        assert!(
            pods_of(&client, name)
                .await
                .iter()
                .all(|p| pod_group_of(p).as_deref() == Some(pg.name_any().as_str()))
        );
    }
    assert_eq!(workloads(&client).await.len(), 1, "a delegated Job creates no Workload");
    c.shutdown().await;
}

#[tokio::test]
async fn a_job_that_already_has_pods_gets_no_new_scheduling_objects() {
    // KEP-5547 "Controller Workflow": objects are created only for a Job with no pods. A Job whose pod
    // exists before the controller manages it (created while the feature was off, say) keeps running
    // without a group, and its next pods are created without one.
    let c = cluster().await;
    let client = c.client();
    let j = create(
        &client,
        &job(
            "legacy",
            json!({"parallelism": 2, "completions": 2, "scheduling": {"schedulingPolicy": {"gang": {}}}, "template": pod_template(None, None)}),
        ),
    )
    .await;
    let uid = j.metadata.uid.clone().unwrap();
    let pod: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": "legacy-old", "namespace": "default",
            "labels": {"batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": "legacy",
                       "controller-uid": uid, "job-name": "legacy"},
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "legacy", "uid": uid,
                                 "controller": true, "blockOwnerDeletion": true}]
        },
        "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}
    }))
    .unwrap();
    Api::<Pod>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &pod)
        .await
        .unwrap();
    let _ctl = start_job_controller(client.clone(), job_config());
    let pods = eventually_within(T, "the Job's second pod", || async {
        let pods = pods_of(&client, "legacy").await;
        (pods.len() == 2).then_some(pods)
    })
    .await;
    assert!(pods.iter().all(|p| pod_group_of(p).is_none()), "{pods:?}");
    assert!(
        workloads(&client).await.is_empty(),
        "no Workload for a Job that had pods"
    );
    assert!(groups(&client).await.is_empty());
    // A Job without pods still gets its objects, from the same controller.
    create(
        &client,
        &job(
            "fresh",
            json!({"parallelism": 1, "completions": 1, "template": pod_template(None, None)}),
        ),
    )
    .await;
    eventually_within(T, "the fresh Job's PodGroup", || async {
        (groups(&client).await.len() == 1).then_some(())
    })
    .await;
    assert_eq!(workloads(&client).await.len(), 1);
    c.shutdown().await;
}

#[tokio::test]
async fn an_unrelated_pod_group_at_the_jobs_name_blocks_until_removed() {
    // KEP-5547: the PodGroup is discovered by name; an object there that references another Workload or
    // template blocks the Job (UnsupportedWorkloadStructure) until it is removed.
    let c = cluster().await;
    let client = c.client();
    let _binder = start_binder(client.clone(), c.node_names());
    let _ctl = start_job_controller(client.clone(), job_config());
    let j = create(
        &client,
        &job(
            "squat",
            json!({"suspend": true, "parallelism": 1, "completions": 1, "template": pod_template(Some("20ms"), None)}),
        ),
    )
    .await;
    let own = eventually_within(T, "the suspended Job's Workload", || async {
        workloads(&client).await.pop()
    })
    .await;
    // Someone else's Workload and a PodGroup of it, at the name the Job's group will have.
    let other: Workload = serde_json::from_value(json!({
        "apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "Workload",
        "metadata": {"name": "other", "namespace": "default"},
        "spec": {"controllerRef": {"apiGroup": "example.com", "kind": "Thing", "name": "x"},
                 "podGroupTemplates": [{"name": "t", "schedulingPolicy": {"basic": {}}}]}
    }))
    .unwrap();
    Api::<Workload>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &other)
        .await
        .unwrap();
    let squatter_name = job_owned_pod_group_name(
        &j,
        TemplateKey {
            workload: &own.name_any(),
            template: "squat-pgt-0",
        },
    );
    let squatter = workloadbuilder::new_pod_group(&other, "t", &squatter_name, None, vec![]).unwrap();
    let groups_api = Api::<PodGroup>::namespaced(client.clone(), "default");
    groups_api.create(&PostParams::default(), &squatter).await.unwrap();
    Api::<Job>::namespaced(client.clone(), "default")
        .patch(
            "squat",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"suspend": false}})),
        )
        .await
        .unwrap();
    let blocked = wait_condition(&client, "squat", "SchedulingBlocked").await;
    assert_eq!(
        condition(&blocked, "SchedulingBlocked").unwrap().reason.as_deref(),
        Some("UnsupportedWorkloadStructure")
    );
    assert!(pods_of(&client, "squat").await.is_empty());
    eventually_within(T, "the UnsupportedWorkloadStructure event", || async {
        event_reasons(&client, "squat")
            .await
            .iter()
            .any(|e| e.0 == "Warning" && e.1 == "UnsupportedWorkloadStructure")
            .then_some(())
    })
    .await;
    // Removing the squatter unblocks the Job: its own group, then its pods.
    groups_api.delete(&squatter_name, &Default::default()).await.unwrap();
    let done = wait_condition(&client, "squat", "Complete").await;
    assert!(condition(&done, "SchedulingBlocked").is_none());
    let mine = groups_api.get(&squatter_name).await.unwrap();
    assert_eq!(mine.spec.workload_ref.as_ref().unwrap().workload_name, own.name_any());
    c.shutdown().await;
}

#[tokio::test]
async fn unmanaged_modes_create_no_scheduling_objects() {
    let c = cluster().await;
    let client = c.client();
    let _binder = start_binder(client.clone(), c.node_names());
    let _ctl = start_job_controller(client.clone(), job_config());
    // The pod template names a user's PodGroup.
    let mut byo = pod_template(Some("20ms"), None);
    byo["spec"]["schedulingGroup"] = json!({"podGroupName": "mine"});
    create(
        &client,
        &job("byo", json!({"parallelism": 1, "completions": 1, "template": byo})),
    )
    .await;
    // A parent-owned Job without the downward annotation; its own scheduling block is not used, and an
    // event says so.
    let mut child = delegated_job("child");
    child.metadata.annotations = None;
    child.spec.as_mut().unwrap().scheduling =
        Some(serde_json::from_value(json!({"schedulingPolicy": {"gang": {"minCount": 2}}})).unwrap());
    create(&client, &child).await;
    wait_condition(&client, "child", "Complete").await;
    let ignored = eventually_within(T, "the SchedulingIgnored event", || async {
        event_reasons(&client, "child")
            .await
            .into_iter()
            .find(|(_, reason, _)| reason == "SchedulingIgnored")
    })
    .await;
    assert_eq!(ignored.0, "Warning");
    assert!(ignored.2.contains("Trainer trainer controls this Job"), "{}", ignored.2);
    eventually_within(T, "the BYO Job's pod", || async {
        pods_of(&client, "byo").await.first().cloned()
    })
    .await;
    assert_eq!(pod_group_of(&pods_of(&client, "byo").await[0]).as_deref(), Some("mine"));
    assert!(
        pods_of(&client, "child")
            .await
            .iter()
            .all(|p| pod_group_of(p).is_none())
    );
    assert!(workloads(&client).await.is_empty());
    assert!(groups(&client).await.is_empty());
    c.shutdown().await;
}

#[tokio::test]
async fn invalid_scheduling_is_rejected_by_the_api_with_its_field_path() {
    let c = cluster().await;
    let client = c.client();
    let bad = job(
        "bad",
        json!({"parallelism": 2, "scheduling": {"disruptionMode": {"all": {}}}}),
    );
    let err = Api::<Job>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &bad)
        .await
        .unwrap_err();
    let kube::Error::Api(status) = err else { panic!("{err}") };
    assert_eq!(status.code, 422);
    assert!(
        status.message.contains("spec.scheduling.disruptionMode"),
        "{}",
        status.message
    );
    c.shutdown().await;
}

#[tokio::test]
async fn invalid_scheduling_fails_the_job_without_pods_or_groups() {
    // A server that stores any scheduling block: the controller is the last line of defense.
    let c = cluster_with(|cfg| cfg.job_scheduling_validation = false).await;
    let client = c.client();
    let _binder = start_binder(client.clone(), c.node_names());
    let _ctl = start_job_controller(client.clone(), job_config());
    create(
        &client,
        &job(
            "bad",
            json!({"parallelism": 2, "scheduling": {"disruptionMode": {"all": {}}}}),
        ),
    )
    .await;
    let failed = wait_condition(&client, "bad", "Failed").await;
    let cond = condition(&failed, "Failed").unwrap();
    assert_eq!(cond.reason.as_deref(), Some("FailedWorkloadCompilation"));
    assert!(cond.message.as_deref().unwrap().contains("spec.scheduling.disruptionMode: Invalid value: \"\": the disruptionMode `all` is not supported with the Basic scheduling policy"));
    // Events are sent in the background: wait for it.
    eventually_within(T, "the FailedWorkloadCompilation event", || async {
        let events = event_reasons(&client, "bad").await;
        events
            .iter()
            .any(|e| {
                e.0 == "Warning" && e.1 == "FailedWorkloadCompilation" && e.2.contains("spec.scheduling.disruptionMode")
            })
            .then_some(())
    })
    .await;
    assert!(pods_of(&client, "bad").await.is_empty());
    assert!(workloads(&client).await.is_empty() && groups(&client).await.is_empty());
    c.shutdown().await;
}

#[tokio::test]
async fn min_count_follows_parallelism_and_explicit_edits() {
    let c = cluster().await;
    let client = c.client();
    let _binder = start_binder(client.clone(), c.node_names());
    let _ctl = start_job_controller(client.clone(), job_config());
    create(&client, &job("elastic", json!({"parallelism": 4, "completions": 4, "scheduling": {"schedulingPolicy": {"gang": {}}}, "template": pod_template(None, None)}))).await;
    let counts = || async {
        let w = workloads(&client).await;
        let g = groups(&client).await;
        let wc = w.first()?.spec.pod_group_templates.as_ref()?[0]
            .scheduling_policy
            .gang
            .as_ref()?
            .min_count;
        let gc = g.first()?.spec.scheduling_policy.gang.as_ref()?.min_count;
        Some((wc, gc))
    };
    assert_eq!(
        eventually_within(T, "groups", || async { counts().await }).await,
        (4, 4)
    );
    let jobs = Api::<Job>::namespaced(client.clone(), "default");
    jobs.patch(
        "elastic",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"parallelism": 2}})),
    )
    .await
    .unwrap();
    eventually_within(T, "minCount 2 from parallelism", || async {
        (counts().await == Some((2, 2))).then_some(())
    })
    .await;
    jobs.patch(
        "elastic",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"scheduling": {"schedulingPolicy": {"gang": {"minCount": 1}}}}})),
    )
    .await
    .unwrap();
    eventually_within(T, "minCount 1 from the explicit edit", || async {
        (counts().await == Some((1, 1))).then_some(())
    })
    .await;
    c.shutdown().await;
}

#[tokio::test]
async fn finished_jobs_are_deleted_after_their_ttl() {
    let c = cluster().await;
    let client = c.client();
    let _binder = start_binder(client.clone(), c.node_names());
    let _ctl = start_job_controller(client.clone(), job_config());
    create(&client, &job("short", json!({"parallelism": 1, "completions": 1, "ttlSecondsAfterFinished": 0, "template": pod_template(Some("20ms"), None)}))).await;
    let jobs = Api::<Job>::namespaced(client.clone(), "default");
    eventually_within(T, "the Job deleted after its TTL", || async {
        jobs.get_opt("short").await.unwrap().is_none().then_some(())
    })
    .await;
    c.shutdown().await;
}

#[tokio::test]
async fn jobs_managed_by_another_controller_are_left_alone() {
    let c = cluster().await;
    let client = c.client();
    let ctl = start_job_controller(client.clone(), job_config());
    create(&client, &job("theirs", json!({"managedBy": "kubernetes.io/job-controller", "parallelism": 1, "template": pod_template(None, None)}))).await;
    // The controller has looked at the Job (after it existed) and left it alone.
    reconciled_after_now(&ctl, "job", |n| poke::<Job>(&client, "theirs", n)).await;
    assert!(pods_of(&client, "theirs").await.is_empty());
    assert!(
        get(&client, "theirs")
            .await
            .status
            .is_none_or(|s| s.conditions.is_none())
    );
    assert_eq!(
        ctl.metrics().reconciles("job", "success"),
        0,
        "every reconcile of the Job skipped it"
    );
    c.shutdown().await;
}

#[tokio::test]
async fn a_pod_create_whose_answer_is_lost_is_not_sent_again() {
    // Every pod creation takes effect but its answer is lost (a 504 after the commit). kube's default
    // client resends 504s, so each create with generateName would make a second pod; our clients never
    // resend, and the next reconcile finds the pods that exist.
    let c = cluster().await;
    let client = c.client();
    c.faults().set(kwas_devcluster::FaultConfig {
        seed: 7,
        rules: vec![kwas_devcluster::FaultRule {
            resources: vec!["pods".into()],
            verbs: vec![kwas_devcluster::Verb::Create],
            subresources: vec![String::new()],
            lost_response_rate: 1.0,
            ..Default::default()
        }],
    });
    let _binder = start_binder(client.clone(), c.node_names());
    let _ctl = start_job_controller(client.clone(), job_config());
    create(
        &client,
        &job(
            "lossy",
            json!({"parallelism": 4, "completions": 4, "template": pod_template(Some("50ms"), None)}),
        ),
    )
    .await;
    let done = wait_condition(&client, "lossy", "Complete").await;
    let status = done.status.unwrap();
    assert_eq!((status.succeeded, status.failed.unwrap_or(0)), (Some(4), 0));
    assert_eq!(pods_of(&client, "lossy").await.len(), 4, "no pod was created twice");
    assert!(c.faults().injected() >= 4, "every creation lost its answer");
    c.shutdown().await;
}

/// The active completion indexes of Job `name`'s pods that are not being deleted.
async fn active_indexes(client: &Client, name: &str) -> BTreeSet<String> {
    pods_of(client, name)
        .await
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter(|p| {
            let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
            !matches!(phase, Some("Succeeded" | "Failed"))
        })
        .map(|p| p.annotations()["batch.kubernetes.io/job-completion-index"].clone())
        .collect()
}

/// Elastic Indexed Jobs (upstream's `ElasticIndexedJob`, GA): `completions` changed together with
/// `parallelism` removes the pods of the indexes dropped, uncounted, and creates those added.
#[tokio::test]
async fn elastic_indexed_job_scales_down_and_up_with_completions() {
    let c = cluster().await;
    let client = c.client();
    let _binder = start_binder(client.clone(), c.node_names());
    let _ctl = start_job_controller(client.clone(), job_config());
    create(
        &client,
        &job(
            "elastic",
            json!({"parallelism": 4, "completions": 4, "completionMode": "Indexed", "template": pod_template(Some("1h"), None)}),
        ),
    )
    .await;
    let want = |ix: &[&str]| ix.iter().map(|s| s.to_string()).collect::<BTreeSet<String>>();
    eventually_within(T, "4 indexes running", || async {
        (active_indexes(&client, "elastic").await == want(&["0", "1", "2", "3"])).then_some(())
    })
    .await;
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    let scale = |n: i32| {
        let jobs = jobs.clone();
        async move {
            jobs.patch(
                "elastic",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"completions": n, "parallelism": n}})),
            )
            .await
        }
    };
    scale(2).await.unwrap();
    eventually_within(T, "indexes 2 and 3 removed", || async {
        (active_indexes(&client, "elastic").await == want(&["0", "1"])).then_some(())
    })
    .await;
    scale(3).await.unwrap();
    eventually_within(T, "index 2 back", || async {
        (active_indexes(&client, "elastic").await == want(&["0", "1", "2"])).then_some(())
    })
    .await;
    let status = get(&client, "elastic").await.status.unwrap_or_default();
    assert_eq!((status.failed.unwrap_or(0), status.succeeded.unwrap_or(0)), (0, 0));
    // Completions alone cannot change (the API refuses it, as kube-apiserver does).
    let refused = jobs
        .patch(
            "elastic",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"completions": 5}})),
        )
        .await
        .unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("can only be modified in tandem with spec.parallelism"),
        "{refused}"
    );
    c.shutdown().await;
}

/// A suspended Job that never started takes new scheduling directives (upstream's mutable scheduling
/// directives): its pods are created from the edited template on resume; other template fields stay
/// immutable.
#[tokio::test]
async fn a_suspended_job_takes_new_scheduling_directives_before_it_starts() {
    let c = cluster().await;
    let client = c.client();
    let _binder = start_binder(client.clone(), c.node_names());
    let _ctl = start_job_controller(client.clone(), job_config());
    create(
        &client,
        &job(
            "directed",
            json!({"suspend": true, "parallelism": 2, "completions": 2, "template": pod_template(Some("50ms"), None)}),
        ),
    )
    .await;
    wait_condition(&client, "directed", "Suspended").await;
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    let directives = json!({"spec": {"template": {
        "metadata": {"labels": {"team": "ml"}},
        "spec": {
            "nodeSelector": {"kwas.dev/rack": "b0-r0"},
            "tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]
        }
    }}});
    jobs.patch("directed", &PatchParams::default(), &Patch::Merge(directives))
        .await
        .unwrap();
    let image = json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "other"}]}}}});
    let refused = jobs
        .patch("directed", &PatchParams::default(), &Patch::Merge(image))
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("field is immutable"), "{refused}");
    jobs.patch(
        "directed",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"suspend": false}})),
    )
    .await
    .unwrap();
    wait_condition(&client, "directed", "Complete").await;
    let pods = pods_of(&client, "directed").await;
    assert_eq!(pods.len(), 2);
    for p in &pods {
        let spec = p.spec.as_ref().unwrap();
        assert_eq!(
            spec.node_selector
                .as_ref()
                .unwrap()
                .get("kwas.dev/rack")
                .map(String::as_str),
            Some("b0-r0")
        );
        assert_eq!(spec.tolerations.as_ref().unwrap()[0].key.as_deref(), Some("dedicated"));
        assert_eq!(p.labels().get("team").map(String::as_str), Some("ml"));
    }
    // Started now: the directives are fixed.
    let late = json!({"spec": {"suspend": true, "template": {"spec": {"nodeSelector": {"kwas.dev/rack": "b0-r1"}}}}});
    let refused = jobs
        .patch("directed", &PatchParams::default(), &Patch::Merge(late))
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("spec.template"), "{refused}");
    c.shutdown().await;
}

/// `manualSelector: true`: the API server requires a selector matching the template's labels; the
/// controller runs the Job (finding pods by its controller-uid label) and says, once, that it does not
/// adopt orphans matching the selector.
#[tokio::test]
async fn a_manual_selector_job_runs_and_is_flagged_once() {
    let c = cluster().await;
    let client = c.client();
    let _binder = start_binder(client.clone(), c.node_names());
    let _ctl = start_job_controller(client.clone(), job_config());
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    let mut template = pod_template(Some("50ms"), None);
    template["metadata"]["labels"] = json!({"app": "manual"});
    let mismatched = job(
        "manual",
        json!({"manualSelector": true, "selector": {"matchLabels": {"app": "other"}}, "completions": 2, "parallelism": 2, "template": template.clone()}),
    );
    let refused = jobs.create(&PostParams::default(), &mismatched).await.unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("`selector` does not match template `labels`"),
        "{refused}"
    );
    create(
        &client,
        &job(
            "manual",
            json!({"manualSelector": true, "selector": {"matchLabels": {"app": "manual"}}, "completions": 2, "parallelism": 2, "template": template}),
        ),
    )
    .await;
    let done = wait_condition(&client, "manual", "Complete").await;
    assert_eq!(done.status.unwrap().succeeded, Some(2));
    let flagged = eventually_within(T, "the ManualSelectorNotAdopting event", || async {
        let flagged: Vec<_> = event_reasons(&client, "manual")
            .await
            .into_iter()
            .filter(|(_, reason, _)| reason == "ManualSelectorNotAdopting")
            .collect();
        (!flagged.is_empty()).then_some(flagged)
    })
    .await;
    assert_eq!(flagged.len(), 1, "{flagged:?}");
    assert_eq!(flagged[0].0, "Warning");
    c.shutdown().await;
}
