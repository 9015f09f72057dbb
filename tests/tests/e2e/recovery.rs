//! A gang broken after binding: a node running one of its members goes down and is removed (as a cloud
//! provider removes a lost machine), so its replacement, pinned to the rack the survivor runs in, has no
//! room there. With the opt-in recovery policy (`kwas.dev/gang-recovery-seconds`) the scheduler evicts
//! the survivor with `DisruptionTarget` once the grace period passed, and the gang runs again whole in
//! another rack; the Job, whose pod failure policy ignores `DisruptionTarget`, counts none of it. Without
//! it the gang is reported below its minimum and left as it is.

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Event, Node, Pod};
use kube::api::{Patch, PatchParams};
use kwas_api_types::names::annotations::GANG_RECOVERY_SECONDS;
use kwas_api_types::names::conditions::{POD_GROUP_SATISFIED, REASON_BELOW_MIN_COUNT};
use kwas_api_types::names::labels::RACK;
use kwas_api_types::v1alpha3::PodGroup;
use kwas_tests::inspect::*;
use kwas_tests::*;
use serde_json::json;

use crate::grid;

/// A gang of two 3-cpu pods in one rack (one pod per 4-cpu node), running until deleted; its pods leave
/// a node that becomes unreachable at once and fail when evicted (they outlive their grace period); the
/// pod failure policy ignores disruptions; no failure is allowed.
fn trainer(recovery: Option<&str>) -> Job {
    let job = JobBuilder::new("train")
        .parallelism(2)
        .gang()
        .topology(RACK)
        .cpu("3")
        .run_for("1h")
        .shutdown_after("5s")
        .backoff_limit(0)
        .build()
        .unwrap();
    let mut v = serde_json::to_value(job).unwrap();
    if let Some(seconds) = recovery {
        v["metadata"]["annotations"] = json!({ GANG_RECOVERY_SECONDS: seconds });
    }
    v["spec"]["podFailurePolicy"] = json!({"rules": [
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}
    ]});
    v["spec"]["template"]["spec"]["tolerations"] = json!([
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 0},
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 0}
    ]);
    serde_json::from_value(v).unwrap()
}

fn rack_of(node: &str) -> &str {
    // `node-b<block>-r<rack>-n<node>`
    node.rsplit_once("-n").map_or(node, |(rack, _)| rack)
}

/// Starts the trainer, waits for both members to run in one rack, then loses the node of one of them:
/// down (its kubelet silent, the node tainted unreachable, the pod evicted but left terminating), then
/// removed. Returns the surviving pod's name and node.
async fn lose_a_member(e2e: &E2e, recovery: Option<&str>) -> (String, String) {
    e2e.create(&trainer(recovery)).await.unwrap();
    let pods = wait_bound(e2e, "train", 2).await.unwrap();
    let nodes: Vec<String> = pods.iter().filter_map(node_of).map(str::to_string).collect();
    assert_eq!(rack_of(&nodes[0]), rack_of(&nodes[1]), "{nodes:?}");
    eventually("both members running", || async {
        let pods = pods_of_job(&e2e.client(), "train").await?;
        check(pods.iter().filter(|p| phase(p) == "Running").count() == 2, || {
            format!("{:?}", pods.iter().map(phase).collect::<Vec<_>>())
        })
    })
    .await
    .unwrap();
    let (lost, survivor) = (&pods[0], &pods[1]);
    let lost_node = node_of(lost).unwrap().to_string();
    let node_api: kube::Api<Node> = kube::Api::all(e2e.client());
    node_api
        .patch(
            &lost_node,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"kwas.dev/sim-node-down": "true"}}})),
        )
        .await
        .unwrap();
    let lost_name = lost.metadata.name.clone().unwrap();
    eventually("the lost member evicted by the taint manager", || async {
        let pod = e2e.api::<Pod>().get(&lost_name).await?;
        check(terminating(&pod), || {
            format!("{} {:?}", phase(&pod), pod.metadata.deletion_timestamp)
        })
    })
    .await
    .unwrap();
    e2e.cluster().remove_node(&lost_node).unwrap();
    (
        survivor.metadata.name.clone().unwrap(),
        node_of(survivor).unwrap().to_string(),
    )
}

/// The gang's PodGroup.
async fn group(e2e: &E2e) -> PodGroup {
    let pods = pods_of_job(&e2e.client(), "train").await.unwrap();
    let name = pods.iter().find_map(group_of).unwrap().to_string();
    e2e.api::<PodGroup>().get(&name).await.unwrap()
}

fn satisfied(g: &PodGroup) -> Option<(String, String, String)> {
    g.status
        .as_ref()?
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == POD_GROUP_SATISFIED)
        .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gang_that_lost_a_node_runs_again_whole_elsewhere_with_recovery_on() {
    let e2e = E2e::start(grid(1, 2, 2, "4")).await.unwrap();
    let monitor = GangMonitor::start(&e2e.client()).await.unwrap();
    let (survivor, survivor_node) = lose_a_member(&e2e, Some("1")).await;
    // The survivor is evicted by the recovery, and the gang runs whole in the other rack.
    let pods: Vec<Pod> = eventually("the gang running again whole in the other rack", || async {
        let pods: Vec<Pod> = pods_of_job(&e2e.client(), "train")
            .await?
            .into_iter()
            .filter(|p| !terminating(p) && matches!(phase(p), "Pending" | "Running"))
            .collect();
        let elsewhere = pods
            .iter()
            .filter(|p| node_of(p).is_some_and(|n| rack_of(n) != rack_of(&survivor_node)))
            .count();
        check(pods.len() == 2 && elsewhere == 2, || {
            format!("{:?}", pods.iter().map(|p| (node_of(p), phase(p))).collect::<Vec<_>>())
        })
        .map(|()| pods)
    })
    .await
    .unwrap();
    assert!(
        pods.iter()
            .all(|p| p.metadata.name.as_deref() != Some(survivor.as_str()))
    );
    // The survivor was evicted by the recovery, with DisruptionTarget, and the Job counted nothing.
    let events = e2e.api::<Event>().list(&Default::default()).await.unwrap();
    let recovered = events.items.iter().find(|e| {
        e.involved_object.name.as_deref() == Some(survivor.as_str())
            && e.message.as_deref().is_some_and(|m| m.contains(GANG_RECOVERY_SECONDS))
    });
    assert!(recovered.is_some(), "no recovery event on {survivor}");
    let job = e2e.api::<Job>().get("train").await.unwrap();
    let status = job.status.clone().unwrap_or_default();
    assert!(job_condition(&job, "Failed").is_none(), "{status:?}");
    assert_eq!(status.failed.unwrap_or(0), 0, "{status:?}");
    eventually("PodGroupSatisfied True again", || async {
        let g = group(&e2e).await;
        check(satisfied(&g).is_some_and(|(s, _, _)| s == "True"), || {
            format!("{:?}", satisfied(&g))
        })
    })
    .await
    .unwrap();
    monitor.check_settled().await.unwrap();
    e2e.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_recovery_a_broken_gang_is_reported_and_left() {
    let e2e = E2e::start(grid(1, 2, 2, "4")).await.unwrap();
    let (survivor, _) = lose_a_member(&e2e, None).await;
    let g = eventually("the gang reported below its minimum", || async {
        let g = group(&e2e).await;
        check(
            satisfied(&g).is_some_and(|(s, r, _)| s == "False" && r == REASON_BELOW_MIN_COUNT),
            || format!("{:?}", satisfied(&g)),
        )
        .map(|()| g)
    })
    .await
    .unwrap();
    assert_eq!(satisfied(&g).unwrap().2, "1 of 2 members scheduled");
    let pod = e2e.api::<Pod>().get(&survivor).await.unwrap();
    assert!(
        phase(&pod) == "Running" && !terminating(&pod),
        "the survivor is left running"
    );
    e2e.shutdown().await;
}
