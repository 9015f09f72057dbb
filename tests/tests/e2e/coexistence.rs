//! The scheduler on a cluster it shares: a pod another party bound by `spec.nodeName` (running, as the
//! kubelet admitted it) takes its node's capacity, a cordoned node and a node whose kubelet went silent
//! (tainted `node.kubernetes.io/unreachable`) get no new pods; a gang goes where room is left, the next
//! waits without binding anything, and runs once a node is uncordoned.

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Patch, PatchParams};
use kwas_tests::inspect::*;
use kwas_tests::*;
use serde_json::json;

use crate::grid;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gangs_go_around_what_others_run_cordons_and_lost_nodes() {
    // Four nodes of 4 cpu.
    let e2e = E2e::start(grid(1, 2, 2, "4")).await.unwrap();
    let client = e2e.client();
    let monitor = GangMonitor::start(&client).await.unwrap();
    let nodes = e2e.cluster().node_names();
    let (busy, cordoned, lost, free) = (&nodes[0], &nodes[1], &nodes[2], &nodes[3]);

    // Someone else's pod, bound by nodeName, fills `busy`.
    let foreign: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "foreign"},
        "spec": {"nodeName": busy, "schedulerName": "someone-else",
            "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "4"}}}]}
    }))
    .unwrap();
    e2e.create(&foreign).await.unwrap();
    let node_api: kube::Api<Node> = kube::Api::all(client.clone());
    node_api
        .patch(
            cordoned,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"unschedulable": true}})),
        )
        .await
        .unwrap();
    node_api
        .patch(
            lost,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"kwas.dev/sim-node-down": "true"}}})),
        )
        .await
        .unwrap();
    eventually("foreign Running, the lost node tainted unreachable", || async {
        let pod = e2e.api::<Pod>().get("foreign").await?;
        let node = node_api.get(lost).await?;
        let tainted = node
            .spec
            .and_then(|s| s.taints)
            .is_some_and(|ts| ts.iter().any(|t| t.key == "node.kubernetes.io/unreachable"));
        check(phase(&pod) == "Running" && tainted, || {
            format!("{} {tainted}", phase(&pod))
        })
    })
    .await
    .unwrap();

    // A gang of two 2-cpu pods: only `free` has room.
    e2e.create(&JobBuilder::new("first").parallelism(2).gang().cpu("2").build().unwrap())
        .await
        .unwrap();
    let pods = wait_bound(&e2e, "first", 2).await.unwrap();
    assert!(
        pods.iter().all(|p| node_of(p) == Some(free.as_str())),
        "{:?}",
        pods.iter().map(node_of).collect::<Vec<_>>()
    );

    // A second gang finds no room and binds nothing; uncordoning gives it one.
    e2e.create(
        &JobBuilder::new("second")
            .parallelism(2)
            .gang()
            .cpu("2")
            .build()
            .unwrap(),
    )
    .await
    .unwrap();
    eventually("second reported unschedulable", || async {
        let pods = pods_of_job(&client, "second").await?;
        let told = pods.len() == 2
            && pods.iter().all(|p| {
                pod_condition(p, kwas_api_types::names::conditions::POD_SCHEDULED).is_some_and(|c| c.0 == "False")
            });
        check(told, || format!("{} pods", pods.len()))
    })
    .await
    .unwrap();
    assert_eq!(bound_count(&pods_of_job(&client, "second").await.unwrap()), 0);
    node_api
        .patch(
            cordoned,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"unschedulable": false}})),
        )
        .await
        .unwrap();
    let pods = wait_bound(&e2e, "second", 2).await.unwrap();
    assert!(pods.iter().all(|p| node_of(p) == Some(cordoned.as_str())));
    // Nothing ever went to the busy or the lost node, and no pod was rejected by a kubelet.
    for job in ["first", "second"] {
        for p in pods_of_job(&client, job).await.unwrap() {
            assert!(node_of(&p) != Some(busy.as_str()) && node_of(&p) != Some(lost.as_str()));
            assert!(
                p.status
                    .as_ref()
                    .and_then(|s| s.reason.as_deref())
                    .is_none_or(|r| !r.starts_with("OutOf"))
            );
        }
    }
    monitor.check_settled().await.unwrap();
    e2e.shutdown().await;
}
