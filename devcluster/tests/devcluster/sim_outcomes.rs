//! The simulated kubelet plays the outcomes a real one reports: exit codes and reasons per container,
//! completion index and attempt (`kwas.dev/sim-exit-code`, `kwas.dev/sim-exit-reason`), restarts under
//! `OnFailure`, warnings for invalid annotations, the default run of Job pods, and evictions by the taint
//! manager (`kubectl taint ... :NoExecute`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Event, Pod};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::common::{cluster, cluster_with, eventually_within, kubectl};

const T: Duration = Duration::from_secs(20);
const NODE: &str = "node-b0-r0-n0";

/// A pod bound to `node` with `annotations`, its containers named `containers`.
fn pod(name: &str, node: &str, restart: &str, containers: &[&str], annotations: Value) -> Pod {
    let containers: Vec<Value> = containers
        .iter()
        .map(|c| json!({"name": c, "image": "busybox:1.36"}))
        .collect();
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {"nodeName": node, "restartPolicy": restart, "containers": containers},
    }))
    .unwrap()
}

async fn create(pods: &Api<Pod>, p: Pod) {
    pods.create(&PostParams::default(), &p).await.unwrap();
}

/// The pod as JSON once `check` holds for it.
async fn wait_for(pods: &Api<Pod>, name: &str, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    eventually_within(T, format!("{name}: {what}"), || async {
        let p = serde_json::to_value(pods.get(name).await.ok()?).ok()?;
        check(&p).then_some(p)
    })
    .await
}

fn phase_is(phase: &'static str) -> impl Fn(&Value) -> bool {
    move |p| p.pointer("/status/phase").and_then(Value::as_str) == Some(phase)
}

/// The container status of `container`.
fn status<'a>(p: &'a Value, container: &str) -> &'a Value {
    p.pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["name"] == container))
        .unwrap_or_else(|| panic!("no status of {container}: {p}"))
}

#[tokio::test]
async fn each_container_exits_with_its_own_code_and_reason_like_a_kubelet() {
    let c = cluster().await;
    let pods: Api<Pod> = Api::default_namespaced(c.client());
    create(
        &pods,
        pod(
            "oom",
            NODE,
            "Never",
            &["main", "sidecar"],
            json!({"kwas.dev/sim-run-duration": "50ms", "kwas.dev/sim-exit-code": "main=42, sidecar=0",
                "kwas.dev/sim-exit-reason": "main=OOMKilled"}),
        ),
    )
    .await;
    create(
        &pods,
        pod(
            "oom-default-code",
            NODE,
            "Never",
            &["main"],
            json!({"kwas.dev/sim-run-duration": "50ms", "kwas.dev/sim-exit-reason": "OOMKilled"}),
        ),
    )
    .await;
    let p = wait_for(&pods, "oom", "Failed", phase_is("Failed")).await;
    let main = &status(&p, "main")["state"]["terminated"];
    assert_eq!(main["exitCode"], 42);
    assert_eq!(main["reason"], "OOMKilled");
    for field in ["startedAt", "finishedAt", "containerID"] {
        assert!(main[field].as_str().is_some_and(|s| !s.is_empty()), "{field}: {main}");
    }
    assert_eq!(main["containerID"], status(&p, "main")["containerID"]);
    let sidecar = &status(&p, "sidecar")["state"]["terminated"];
    assert_eq!(
        (sidecar["exitCode"].as_i64(), sidecar["reason"].as_str()),
        (Some(0), Some("Completed"))
    );
    let p = wait_for(&pods, "oom-default-code", "Failed", phase_is("Failed")).await;
    assert_eq!(status(&p, "main")["state"]["terminated"]["exitCode"], 137);
    c.shutdown().await;
}

#[tokio::test]
async fn exit_codes_follow_the_completion_index_of_the_pod() {
    let c = cluster().await;
    let pods: Api<Pod> = Api::default_namespaced(c.client());
    for i in 0..3 {
        create(
            &pods,
            pod(
                &format!("indexed-{i}"),
                NODE,
                "Never",
                &["main"],
                json!({"kwas.dev/sim-run-duration": "50ms", "kwas.dev/sim-exit-code": "0:0,1:42,7",
                    "batch.kubernetes.io/job-completion-index": i.to_string()}),
            ),
        )
        .await;
    }
    let codes: Vec<i64> = futures::future::join_all((0..3).map(|i| {
        let pods = pods.clone();
        async move {
            let name = format!("indexed-{i}");
            let p = wait_for(&pods, &name, "ended", |p| {
                p.pointer("/status/containerStatuses/0/state/terminated").is_some()
            })
            .await;
            status(&p, "main")["state"]["terminated"]["exitCode"].as_i64().unwrap()
        }
    }))
    .await;
    assert_eq!(codes, [0, 42, 7]);
    c.shutdown().await;
}

#[tokio::test]
async fn on_failure_restarts_walk_the_attempts_until_one_succeeds() {
    let c = cluster().await;
    let pods: Api<Pod> = Api::default_namespaced(c.client());
    create(
        &pods,
        pod(
            "retries",
            NODE,
            "OnFailure",
            &["main"],
            json!({"kwas.dev/sim-run-duration": "50ms", "kwas.dev/sim-exit-code": "3/3/0"}),
        ),
    )
    .await;
    let p = wait_for(&pods, "retries", "Succeeded", phase_is("Succeeded")).await;
    let main = status(&p, "main");
    assert_eq!(main["restartCount"], 2);
    assert_eq!(main["lastState"]["terminated"]["exitCode"], 3);
    assert_eq!(main["lastState"]["terminated"]["reason"], "Error");
    assert_eq!(main["state"]["terminated"]["exitCode"], 0);
    assert_ne!(
        main["lastState"]["terminated"]["containerID"], main["state"]["terminated"]["containerID"],
        "each run has its own container ID"
    );
    c.shutdown().await;
}

#[tokio::test]
async fn a_replacement_pod_continues_its_index_sequence_from_the_failure_count() {
    let c = cluster().await;
    let pods: Api<Pod> = Api::default_namespaced(c.client());
    for (name, failures, phase) in [("first", "0", "Failed"), ("third", "2", "Succeeded")] {
        create(
            &pods,
            pod(
                name,
                NODE,
                "Never",
                &["main"],
                json!({"kwas.dev/sim-run-duration": "50ms", "kwas.dev/sim-exit-code": "1:42/42/0",
                    "batch.kubernetes.io/job-completion-index": "1",
                    "batch.kubernetes.io/job-index-failure-count": failures}),
            ),
        )
        .await;
        wait_for(&pods, name, phase, phase_is(phase)).await;
    }
    c.shutdown().await;
}

#[tokio::test]
async fn an_invalid_annotation_is_a_warning_event_and_its_default_applies() {
    let c = cluster().await;
    let pods: Api<Pod> = Api::default_namespaced(c.client());
    create(
        &pods,
        pod(
            "garbage",
            NODE,
            "Never",
            &["main"],
            json!({"kwas.dev/sim-run-duration": "50ms", "kwas.dev/sim-exit-code": "300",
                "kwas.dev/sim-exit-phase": "Failed"}),
        ),
    )
    .await;
    let p = wait_for(&pods, "garbage", "Failed", phase_is("Failed")).await;
    assert_eq!(status(&p, "main")["state"]["terminated"]["exitCode"], 1);
    let events: Api<Event> = Api::default_namespaced(c.client());
    let warning = eventually_within(T, "the InvalidSimAnnotation event", || async {
        let list = events.list(&ListParams::default()).await.ok()?;
        list.items.into_iter().find(|e| {
            e.reason.as_deref() == Some("InvalidSimAnnotation") && e.involved_object.name.as_deref() == Some("garbage")
        })
    })
    .await;
    assert_eq!(warning.type_.as_deref(), Some("Warning"));
    let message = warning.message.unwrap_or_default();
    assert!(
        message.contains("kwas.dev/sim-exit-code") && message.contains("\"300\""),
        "{message}"
    );
    c.shutdown().await;
}

#[tokio::test]
async fn job_pods_complete_after_the_default_job_pod_duration_and_others_keep_running() {
    let c = cluster_with(|cfg| cfg.kubelet.job_pod_duration = Some(Duration::from_millis(100))).await;
    let client = c.client();
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    let job: Job = serde_json::from_value(json!({
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "owner"},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}}},
    }))
    .unwrap();
    let job = jobs.create(&PostParams::default(), &job).await.unwrap();
    let owner = json!([{"apiVersion": "batch/v1", "kind": "Job", "name": "owner",
        "uid": job.metadata.uid.unwrap(), "controller": true}]);
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    for (name, annotations) in [
        ("job-pod", json!({})),
        ("failing-job-pod", json!({"kwas.dev/sim-exit-code": "42"})),
        ("plain-pod", json!({})),
    ] {
        let mut p = serde_json::to_value(pod(name, NODE, "Never", &["main"], annotations)).unwrap();
        if name != "plain-pod" {
            p["metadata"]["ownerReferences"] = owner.clone();
        }
        create(&pods, serde_json::from_value(p).unwrap()).await;
    }
    wait_for(&pods, "job-pod", "Succeeded", phase_is("Succeeded")).await;
    let failed = wait_for(&pods, "failing-job-pod", "Failed", phase_is("Failed")).await;
    assert_eq!(status(&failed, "main")["state"]["terminated"]["exitCode"], 42);
    let plain = serde_json::to_value(pods.get("plain-pod").await.unwrap()).unwrap();
    assert_eq!(
        plain["status"]["phase"], "Running",
        "a pod no Job owns runs until deleted"
    );
    c.shutdown().await;
}

/// The DisruptionTarget condition the taint manager adds, as (reason, message).
fn disruption(p: &Value) -> Option<(String, String)> {
    p.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == "DisruptionTarget" && c["status"] == "True")
        .map(|c| {
            (
                c["reason"].as_str().unwrap_or("").to_string(),
                c["message"].as_str().unwrap_or("").to_string(),
            )
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_no_execute_taint_evicts_the_pods_that_do_not_tolerate_it_like_the_taint_manager() {
    let c = cluster().await;
    let pods: Api<Pod> = Api::default_namespaced(c.client());
    let held = json!({"finalizers": ["kwas.dev/test-hold"]});
    let with = |name: &str, node: &str, tolerations: Value| {
        let mut p = serde_json::to_value(pod(name, node, "Never", &["main"], json!({}))).unwrap();
        p["metadata"]["finalizers"] = held["finalizers"].clone();
        p["spec"]["tolerations"] = tolerations;
        serde_json::from_value::<Pod>(p).unwrap()
    };
    let unreachable = |seconds: Option<i64>| {
        let mut t = json!({"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"});
        if let Some(s) = seconds {
            t["tolerationSeconds"] = json!(s);
        }
        json!([t])
    };
    create(&pods, with("short", NODE, unreachable(Some(1)))).await;
    create(&pods, with("forever", NODE, unreachable(None))).await;
    create(&pods, with("untolerated", "node-b0-r0-n1", json!([]))).await;
    for name in ["short", "forever", "untolerated"] {
        wait_for(&pods, name, "Running", phase_is("Running")).await;
    }
    kubectl(&c, &["taint", "node", NODE, "node.kubernetes.io/unreachable:NoExecute"]);
    kubectl(
        &c,
        &["taint", "node", "node-b0-r0-n1", "kwas.dev/maintenance=true:NoExecute"],
    );
    for name in ["untolerated", "short"] {
        let p = wait_for(&pods, name, "evicted and Failed", |p| {
            p.pointer("/metadata/deletionTimestamp").is_some() && phase_is("Failed")(p)
        })
        .await;
        assert_eq!(
            disruption(&p),
            Some((
                "DeletionByTaintManager".to_string(),
                "Taint manager: deleting due to NoExecute taint".to_string()
            ))
        );
        let main = &status(&p, "main")["state"]["terminated"];
        assert_eq!(
            (main["exitCode"].as_i64(), main["reason"].as_str()),
            (Some(143), Some("Error"))
        );
    }
    let forever = serde_json::to_value(pods.get("forever").await.unwrap()).unwrap();
    assert!(forever.pointer("/metadata/deletionTimestamp").is_none(), "{forever}");
    assert_eq!(disruption(&forever), None);
    let events: Api<Event> = Api::default_namespaced(c.client());
    let list = events.list(&ListParams::default()).await.unwrap();
    assert!(
        list.items
            .iter()
            .any(|e| e.reason.as_deref() == Some("TaintManagerEviction")
                && e.message.as_deref() == Some("Marking for deletion Pod default/short")),
        "{:?}",
        list.items.iter().map(|e| (&e.reason, &e.message)).collect::<Vec<_>>()
    );
    let release = json!({"metadata": {"finalizers": null}});
    for name in ["short", "untolerated", "forever"] {
        pods.patch(name, &PatchParams::default(), &Patch::Merge(&release))
            .await
            .unwrap();
    }
    c.shutdown().await;
}
