//! A node whose kubelet goes silent (`kwas.dev/sim-node-down: "true"`), with kubectl 1.37: after the node
//! monitor grace period the node lifecycle controller marks it `Unknown` (`kubectl get nodes`:
//! `NotReady`), taints it `node.kubernetes.io/unreachable` (`NoSchedule`, `NoExecute`) and its pods not
//! Ready; the taint eviction controller evicts the pods after their `tolerationSeconds` (they stay
//! `Terminating`: nobody confirms on a silent node) and keeps the pods that tolerate longer; a pod bound
//! there meanwhile stays `Pending`. When the kubelet is back the node is `Ready` and untainted, the
//! evicted pod's deletion completes, the pending pod runs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use serde_json::Value;

use crate::common::{eventually_within, kubectl, kubectl_ok};

const T: Duration = Duration::from_secs(30);

fn pod(name: &str, node: &str, toleration_seconds: Option<u32>) -> String {
    let tolerations = toleration_seconds
        .map(|s| {
            format!(
                "  tolerations:\n  - key: node.kubernetes.io/unreachable\n    operator: Exists\n    effect: NoExecute\n    tolerationSeconds: {s}\n"
            )
        })
        .unwrap_or_default();
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  nodeName: {node}\n{tolerations}  containers:\n  - name: main\n    image: busybox\n"
    )
}

fn get(cluster: &kwas_devcluster::DevCluster, what: &[&str]) -> Option<Value> {
    let mut args = vec!["get"];
    args.extend_from_slice(what);
    args.extend_from_slice(&["-o", "json", "--ignore-not-found"]);
    let out = kubectl(cluster, &args);
    (!out.trim().is_empty()).then(|| serde_json::from_str(&out).unwrap())
}

fn condition<'a>(obj: &'a Value, ty: &str) -> Option<&'a Value> {
    obj["status"]["conditions"].as_array()?.iter().find(|c| c["type"] == ty)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_kubelets_node_goes_unknown_tainted_and_its_pods_are_evicted() {
    let cluster = crate::common::cluster().await;
    let node = cluster.node_names()[0].clone();
    for (name, seconds) in [("short", Some(1)), ("patient", None)] {
        kubectl_ok(&cluster, &["apply", "-f", "-"], Some(&pod(name, &node, seconds)));
    }
    eventually_within(T, "both pods Running", || async {
        ["short", "patient"]
            .iter()
            .all(|p| get(&cluster, &["pod", p]).is_some_and(|p| p["status"]["phase"] == "Running"))
            .then_some(())
    })
    .await;

    kubectl_ok(
        &cluster,
        &["annotate", "node", &node, "kwas.dev/sim-node-down=true"],
        None,
    );
    let down = eventually_within(T, "the node Unknown and tainted", || async {
        let n = get(&cluster, &["node", &node]).unwrap();
        let tainted = n["spec"]["taints"].as_array().is_some_and(|ts| ts.len() == 2);
        (condition(&n, "Ready").is_some_and(|c| c["status"] == "Unknown") && tainted).then_some(n)
    })
    .await;
    let ready = condition(&down, "Ready").unwrap();
    assert_eq!(ready["reason"], "NodeStatusUnknown");
    assert_eq!(ready["message"], "Kubelet stopped posting node status.");
    let effects: Vec<&str> = down["spec"]["taints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            assert_eq!(t["key"], "node.kubernetes.io/unreachable");
            t["effect"].as_str().unwrap()
        })
        .collect();
    assert_eq!(effects, ["NoSchedule", "NoExecute"]);
    let table = kubectl(&cluster, &["get", "node", &node]);
    assert!(table.contains("NotReady"), "{table}");

    // The pods are not Ready; the one tolerating for 1 s is evicted and stays Terminating; the other
    // (the default 300 s toleration) stays.
    let short = eventually_within(T, "short evicted", || async {
        let p = get(&cluster, &["pod", "short"]).unwrap();
        p["metadata"]["deletionTimestamp"].is_string().then_some(p)
    })
    .await;
    assert_eq!(
        condition(&short, "DisruptionTarget").unwrap()["reason"],
        "DeletionByTaintManager"
    );
    assert_eq!(condition(&short, "Ready").unwrap()["status"], "False");
    let patient = get(&cluster, &["pod", "patient"]).unwrap();
    assert!(patient["metadata"]["deletionTimestamp"].is_null());
    assert_eq!(condition(&patient, "Ready").unwrap()["status"], "False");
    let events = kubectl(
        &cluster,
        &["get", "events", "--field-selector", "reason=NodeNotReady", "-o", "json"],
    );
    let events: Value = serde_json::from_str(&events).unwrap();
    assert!(events["items"].as_array().unwrap().len() >= 3, "{events}");
    // A pod bound to the silent node waits (it starts only once the node is Ready again, checked below).
    kubectl_ok(&cluster, &["apply", "-f", "-"], Some(&pod("late", &node, None)));
    assert_eq!(get(&cluster, &["pod", "late"]).unwrap()["status"]["phase"], "Pending");
    assert!(
        get(&cluster, &["pod", "short"]).is_some(),
        "nobody confirmed the evicted pod's end"
    );

    // The kubelet is back.
    kubectl_ok(&cluster, &["annotate", "node", &node, "kwas.dev/sim-node-down-"], None);
    eventually_within(T, "the node Ready and untainted, short gone, late Running", || async {
        let n = get(&cluster, &["node", &node]).unwrap();
        let ok = condition(&n, "Ready").is_some_and(|c| c["status"] == "True" && c["reason"] == "KubeletReady")
            && n["spec"]["taints"].as_array().is_none_or(Vec::is_empty)
            && get(&cluster, &["pod", "short"]).is_none()
            && get(&cluster, &["pod", "late"]).is_some_and(|p| p["status"]["phase"] == "Running");
        ok.then_some(())
    })
    .await;
    // It did not start while the kubelet was silent: its start comes after the node's return.
    let n = get(&cluster, &["node", &node]).unwrap();
    let back = condition(&n, "Ready").unwrap()["lastTransitionTime"]
        .as_str()
        .unwrap()
        .to_string();
    let started = get(&cluster, &["pod", "late"]).unwrap()["status"]["startTime"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        started >= back,
        "late started at {started}, the node was back at {back}"
    );
    cluster.shutdown().await;
}
