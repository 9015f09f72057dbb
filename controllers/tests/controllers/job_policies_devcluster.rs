//! The Job controller's failure and success policies on devcluster: the pods' exit codes and conditions
//! (`DisruptionTarget`) reach the pod failure policy through the reconcile. A Node removal stands in for a
//! disruption: the simulated kubelet fails its pods with `DisruptionTarget`, as a preemption does.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use crate::common::*;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};

const T: Duration = Duration::from_secs(30);

fn template(run: &str, exit: Option<&str>) -> Value {
    let mut annotations = serde_json::Map::new();
    annotations.insert("kwas.dev/sim-run-duration".into(), json!(run));
    if let Some(e) = exit {
        annotations.insert("kwas.dev/sim-exit-phase".into(), json!(e));
    }
    json!({
        "metadata": {"annotations": annotations},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}
    })
}

fn condition(j: &Job, type_: &str) -> Option<(String, String)> {
    j.status.as_ref()?.conditions.as_ref()?.iter().find_map(|c| {
        (c.type_ == type_ && c.status == "True").then(|| {
            (
                c.reason.clone().unwrap_or_default(),
                c.message.clone().unwrap_or_default(),
            )
        })
    })
}

async fn wait_finished(client: &Client, name: &str) -> Job {
    eventually_within(T, format!("Job {name} finished"), || async {
        let j = get(client, name).await;
        (condition(&j, "Complete").is_some() || condition(&j, "Failed").is_some()).then_some(j)
    })
    .await
}

fn phase(p: &Pod) -> &str {
    p.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("")
}

/// Runs a two-pod gang Job on one node, removes that node (its pods fail with `DisruptionTarget`), then
/// lets the replacements run on another node. Returns the finished Job.
async fn disrupted_gang(name: &str, policy: Option<Value>) -> Job {
    let c = cluster().await;
    let client = c.client();
    let nodes = c.node_names();
    let first = start_binder(client.clone(), vec![nodes[0].clone()]);
    let _ctl = start_job_controller(client.clone(), job_config());
    let mut spec = json!({"parallelism": 2, "completions": 2, "backoffLimit": 0, "template": template("2s", None)});
    if let Some(p) = policy {
        spec["podFailurePolicy"] = p;
    }
    Api::<Job>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &job(name, spec))
        .await
        .unwrap();
    eventually_within(T, "both pods running", || async {
        let pods = pods_of(&client, name).await;
        (pods.len() == 2 && pods.iter().all(|p| phase(p) == "Running")).then_some(())
    })
    .await;
    first.stop().await;
    Api::<Node>::all(client.clone())
        .delete(&nodes[0], &DeleteParams::default())
        .await
        .unwrap();
    let _second = start_binder(client.clone(), vec![nodes[1].clone()]);
    let finished = wait_finished(&client, name).await;
    let disrupted = pods_of(&client, name)
        .await
        .iter()
        .filter(|p| {
            p.status
                .iter()
                .flat_map(|s| s.conditions.iter().flatten())
                .any(|c| c.type_ == "DisruptionTarget" && c.status == "True")
        })
        .count();
    eprintln!("{name}: {disrupted} disrupted pods still listed");
    c.shutdown().await;
    finished
}

/// Issue 23's headline: with `Ignore` on `DisruptionTarget`, a gang Job whose pods are disrupted once is
/// neither failed nor charged; its replacements run and it completes.
#[tokio::test]
async fn ignored_disruption_neither_fails_nor_counts() {
    let policy = json!({"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]});
    let j = disrupted_gang("gang-ignore", Some(policy)).await;
    assert!(condition(&j, "Failed").is_none(), "{:?}", j.status);
    assert!(condition(&j, "Complete").is_some());
    let status = j.status.unwrap();
    assert_eq!(status.failed.unwrap_or(0), 0);
    assert_eq!(status.succeeded, Some(2));
}

/// The same disruption without a policy exceeds `backoffLimit: 0`.
#[tokio::test]
async fn disruption_without_a_policy_fails_the_job() {
    let j = disrupted_gang("gang-plain", None).await;
    let (reason, _) = condition(&j, "Failed").expect("Failed");
    assert_eq!(reason, "BackoffLimitExceeded");
    assert!(j.status.unwrap().failed.unwrap_or(0) >= 1);
}

/// A `FailJob` rule on the exit code the simulated kubelet reports (1 for a failed run) fails the Job with
/// upstream's reason and message at the first failure, well before `backoffLimit`.
#[tokio::test]
async fn fail_job_rule_on_an_exit_code() {
    let c = cluster().await;
    let client = c.client();
    let _binder = start_binder(client.clone(), c.node_names());
    let _ctl = start_job_controller(client.clone(), job_config());
    let spec = json!({
        "parallelism": 1, "completions": 1, "backoffLimit": 6,
        "template": template("20ms", Some("Failed")),
        "podFailurePolicy": {"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [1]}}]}
    });
    Api::<Job>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &job("exit-one", spec))
        .await
        .unwrap();
    let j = wait_finished(&client, "exit-one").await;
    let pods = pods_of(&client, "exit-one").await;
    assert_eq!(pods.len(), 1, "no replacement after a FailJob match");
    let (reason, message) = condition(&j, "Failed").expect("Failed");
    assert_eq!(reason, "PodFailurePolicy");
    assert_eq!(
        message,
        format!(
            "Container main for pod default/{} failed with exit code 1 matching FailJob rule at index 0",
            pods[0].name_any()
        )
    );
    assert_eq!(
        condition(&j, "FailureTarget").map(|c| c.0).as_deref(),
        Some("PodFailurePolicy")
    );
    assert_eq!(j.status.unwrap().failed, Some(1));
    c.shutdown().await;
}
