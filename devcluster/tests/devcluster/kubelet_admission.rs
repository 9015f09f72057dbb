//! The simulated kubelet's admission with kubectl 1.37, as upstream's kubelet admits pods bound to its
//! node: pods created with `spec.nodeName` (no scheduler checked them) run while they fit the node's
//! allocatable; the one that does not fails at once, `OutOfcpu` / `OutOfnvidia.com/gpu` / `OutOfpods` with
//! upstream's message and a Warning event; what ended frees its share for the next.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use serde_json::Value;

use crate::common::{eventually_within, kubectl, kubectl_ok};

const T: Duration = Duration::from_secs(30);

fn pod(name: &str, node: &str, requests: &str, extra: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n{extra}spec:\n  nodeName: {node}\n  restartPolicy: Never\n  containers:\n  - name: main\n    image: busybox\n    resources:\n      requests: {requests}\n      limits: {requests}\n"
    )
}

fn phase(cluster: &kwas_devcluster::DevCluster, name: &str) -> Value {
    serde_json::from_str(&kubectl(cluster, &["get", "pod", name, "-o", "json"])).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_bound_past_the_nodes_allocatable_are_rejected_out_of_resource() {
    let cluster = crate::common::cluster_with(|c| {
        c.topology = kwas_devcluster::Topology::grid(
            1,
            1,
            1,
            kwas_devcluster::Capacity {
                cpu: "4".into(),
                pods: "3".into(),
                gpus: 2,
                ..Default::default()
            },
        );
    })
    .await;
    let node = cluster.node_names()[0].clone();
    // 3.5 CPUs run, for 2 s.
    kubectl_ok(
        &cluster,
        &["apply", "-f", "-"],
        Some(&pod(
            "big",
            &node,
            "{cpu: 3500m}",
            "  annotations: {kwas.dev/sim-run-duration: 2s}\n",
        )),
    );
    eventually_within(T, "big Running", || async {
        (phase(&cluster, "big")["status"]["phase"] == "Running").then_some(())
    })
    .await;
    // One more CPU does not fit: rejected at once, as the kubelet does.
    kubectl_ok(
        &cluster,
        &["apply", "-f", "-"],
        Some(&pod("late", &node, "{cpu: \"1\"}", "")),
    );
    let late = eventually_within(T, "late Failed", || async {
        let p = phase(&cluster, "late");
        (p["status"]["phase"] == "Failed").then_some(p)
    })
    .await;
    assert_eq!(late["status"]["reason"], "OutOfcpu");
    assert_eq!(
        late["status"]["message"],
        "Pod was rejected: Node didn't have enough resource: cpu, requested: 1000, used: 3500, capacity: 4000"
    );
    let table = kubectl(&cluster, &["get", "pod", "late"]);
    assert!(table.contains("OutOfcpu"), "{table}");
    let events = kubectl(
        &cluster,
        &[
            "get",
            "events",
            "--field-selector",
            "reason=OutOfcpu,involvedObject.name=late",
            "-o",
            "json",
        ],
    );
    let events: Value = serde_json::from_str(&events).unwrap();
    assert_eq!(events["items"][0]["type"], "Warning");
    assert_eq!(
        events["items"][0]["message"],
        "Node didn't have enough resource: cpu, requested: 1000, used: 3500, capacity: 4000"
    );
    // Half a CPU fits; GPUs beyond the node's 2 do not.
    kubectl_ok(
        &cluster,
        &["apply", "-f", "-"],
        Some(&pod("small", &node, "{cpu: 500m}", "")),
    );
    kubectl_ok(
        &cluster,
        &["apply", "-f", "-"],
        Some(&pod("gpus", &node, "{nvidia.com/gpu: \"3\"}", "")),
    );
    eventually_within(T, "small Running, gpus OutOfnvidia.com/gpu", || async {
        let (small, gpus) = (phase(&cluster, "small"), phase(&cluster, "gpus"));
        (small["status"]["phase"] == "Running" && gpus["status"]["reason"] == "OutOfnvidia.com/gpu").then_some(())
    })
    .await;
    // Once big has ended, its CPUs are free again.
    eventually_within(T, "big Succeeded", || async {
        (phase(&cluster, "big")["status"]["phase"] == "Succeeded").then_some(())
    })
    .await;
    kubectl_ok(
        &cluster,
        &["apply", "-f", "-"],
        Some(&pod("after", &node, "{cpu: \"3\"}", "")),
    );
    eventually_within(T, "after Running", || async {
        (phase(&cluster, "after")["status"]["phase"] == "Running").then_some(())
    })
    .await;
    // Two running (small, after) plus one makes the node's 3 pods; a fourth is OutOfpods.
    kubectl_ok(
        &cluster,
        &["apply", "-f", "-"],
        Some(&pod("third", &node, "{cpu: 100m}", "")),
    );
    kubectl_ok(
        &cluster,
        &["apply", "-f", "-"],
        Some(&pod("fourth", &node, "{cpu: 100m}", "")),
    );
    eventually_within(T, "third Running, fourth OutOfpods", || async {
        let (third, fourth) = (phase(&cluster, "third"), phase(&cluster, "fourth"));
        (third["status"]["phase"] == "Running" && fourth["status"]["reason"] == "OutOfpods").then_some(())
    })
    .await;
    assert_eq!(
        phase(&cluster, "fourth")["status"]["message"],
        "Pod was rejected: Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3"
    );
    cluster.shutdown().await;
}
