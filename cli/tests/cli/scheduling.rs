//! The scheduler on users' pod specs, driven the way users drive it: `kwas dev` and the real kubectl
//! 1.37 applying the manifests of `examples/scheduling/`. A gang with required anti-affinity lands
//! one pod per node (and one too many is rejected with the distinct reason and upstream's message),
//! a gang spreads evenly over racks, a WaitForFirstConsumer claim is provisioned on the node chosen
//! for its pod, a pod waiting for its ResourceClaim says so, preemption spares pods a
//! PodDisruptionBudget protects, a GPU shortage is explained on the pods and on every group level, and
//! a KubeSchedulerConfiguration file changes how nodes are scored.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::process::Command;

use crate::common::{Dev, apply, eventually, get_json, items, jsonpath, ok, start};

/// The nodes the pods selected by `selector` are bound to (unbound pods are left out).
fn nodes_of(dev: &Dev, selector: &str) -> Vec<String> {
    items(&get_json(dev, &["pods", "-l", selector]))
        .iter()
        .filter_map(|p| p["spec"]["nodeName"].as_str().map(str::to_string))
        .collect()
}

/// The condition of `type_` on the object `kind/name`, as (status, reason, message).
fn condition(dev: &Dev, kind: &str, name: &str, type_: &str) -> Option<(String, String, String)> {
    let o = get_json(dev, &[kind, name]);
    o["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
        .map(|c| {
            (
                c["status"].as_str().unwrap_or_default().to_string(),
                c["reason"].as_str().unwrap_or_default().to_string(),
                c["message"].as_str().unwrap_or_default().to_string(),
            )
        })
}

/// Names of `kind` objects whose name starts with `prefix`.
fn named(dev: &Dev, kind: &str, prefix: &str) -> Vec<String> {
    items(&get_json(dev, &[kind]))
        .iter()
        .filter_map(|o| o["metadata"]["name"].as_str().map(str::to_string))
        .filter(|n| n.starts_with(prefix))
        .collect()
}

/// `FailedScheduling` event notes about pods whose name starts with `prefix`.
fn failed_scheduling(dev: &Dev, prefix: &str) -> Vec<String> {
    items(&get_json(
        dev,
        &["events", "--field-selector", "reason=FailedScheduling"],
    ))
    .iter()
    .filter(|e| {
        e["involvedObject"]["name"]
            .as_str()
            .is_some_and(|n| n.starts_with(prefix))
    })
    .filter_map(|e| e["message"].as_str().map(str::to_string))
    .collect()
}

#[test]
fn users_pod_specs_are_honoured() {
    let dev = start(&[]);

    // Required anti-affinity among a gang's own pods: one per node.
    ok(&dev, &["apply", "-f", "examples/scheduling/anti-affinity-gang.yaml"]);
    eventually("the anti-affinity gang to be bound", || {
        nodes_of(&dev, "app=apart").len() == 8
    });
    let mut apart = nodes_of(&dev, "app=apart");
    apart.sort();
    apart.dedup();
    assert_eq!(apart.len(), 8, "one pod per node: {apart:?}");

    // One member too many: the gang is rejected whole, with the distinct reason, the pods saying why
    // in upstream's words and the group naming the member.
    let crowd = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/scheduling/anti-affinity-gang.yaml"),
    )
    .unwrap()
    .replace("name: apart", "name: crowd")
    .replace("app: apart", "app: crowd")
    .replace("parallelism: 8", "parallelism: 9")
    .replace("completions: 8", "completions: 9");
    apply(&dev, &crowd);
    eventually("the crowd's PodGroup to say why", || {
        named(&dev, "podgroups", "crowd").first().is_some_and(|g| {
            condition(&dev, "podgroup", g, "PodGroupInitiallyScheduled")
                .is_some_and(|(s, r, m)| s == "False" && r == "PlacementNotGuaranteed" && m.contains("anti-affinity"))
        })
    });
    let group = named(&dev, "podgroups", "crowd").remove(0);
    let (_, _, message) = condition(&dev, "podgroup", &group, "PodGroupInitiallyScheduled").unwrap();
    assert!(
        message.contains("node(s) didn't match pod anti-affinity rules"),
        "{message}"
    );
    assert!(nodes_of(&dev, "app=crowd").is_empty(), "nothing of the gang is bound");
    eventually("the crowd's pods to say why", || {
        let pods = named(&dev, "pods", "crowd-");
        pods.len() == 9
            && pods.iter().all(|p| {
                condition(&dev, "pod", p, "PodScheduled")
                    .is_some_and(|(s, r, _)| s == "False" && r == "PlacementNotGuaranteed")
            })
    });
    let notes = failed_scheduling(&dev, "crowd-");
    assert!(
        notes.iter().any(|n| n.starts_with("0/8 nodes are available: ")
            && n.contains("node(s) didn't match pod anti-affinity rules")
            && n.contains("preemption: ")),
        "{notes:#?}"
    );
    ok(&dev, &["delete", "job", "crowd", "--wait=false"]);

    // A gang spread evenly over the two racks.
    ok(&dev, &["apply", "-f", "examples/scheduling/rack-spread.yaml"]);
    eventually("the spread gang to be bound", || {
        nodes_of(&dev, "app=spread").len() == 6
    });
    let rack_of: BTreeMap<String, String> = items(&get_json(&dev, &["nodes"]))
        .iter()
        .map(|n| {
            (
                n["metadata"]["name"].as_str().unwrap().to_string(),
                n["metadata"]["labels"]["kwas.dev/rack"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let mut per_rack: BTreeMap<String, usize> = BTreeMap::new();
    for n in nodes_of(&dev, "app=spread") {
        *per_rack.entry(rack_of[&n].clone()).or_default() += 1;
    }
    assert_eq!(
        per_rack.values().copied().collect::<Vec<_>>(),
        vec![3, 3],
        "{per_rack:?}"
    );

    // A WaitForFirstConsumer claim: the scheduler selects the node, the volume is provisioned there.
    ok(&dev, &["apply", "-f", "examples/scheduling/volume.yaml"]);
    eventually("the claim to bind and its pod to run", || {
        jsonpath(&dev, &["pvc", "scratch"], "{.status.phase}") == "Bound"
            && jsonpath(
                &dev,
                &["pods", "-l", "batch.kubernetes.io/job-name=with-volume"],
                "{.items[*].status.phase}",
            ) == "Running"
    });
    let node = jsonpath(
        &dev,
        &["pods", "-l", "batch.kubernetes.io/job-name=with-volume"],
        "{.items[0].spec.nodeName}",
    );
    let selected = jsonpath(
        &dev,
        &["pvc", "scratch"],
        "{.metadata.annotations.volume\\.kubernetes\\.io/selected-node}",
    );
    assert_eq!(selected, node);
    let pv = jsonpath(&dev, &["pvc", "scratch"], "{.spec.volumeName}");
    let pv_nodes = jsonpath(
        &dev,
        &["pv", &pv],
        "{.spec.nodeAffinity.required.nodeSelectorTerms[*].matchExpressions[*].values[*]}",
    );
    assert!(pv_nodes.split_whitespace().any(|n| n == node), "{pv_nodes} / {node}");

    // A pod whose ResourceClaim does not exist waits, saying so in upstream's words.
    apply(
        &dev,
        "apiVersion: v1
kind: Pod
metadata: {name: needs-dra}
spec:
  schedulerName: kwas-scheduler
  resourceClaims: [{name: gpu, resourceClaimName: some-claim}]
  containers: [{name: main, image: app:v1, resources: {claims: [{name: gpu}]}}]
",
    );
    eventually("the pod waiting for its claim to say why", || {
        condition(&dev, "pod", "needs-dra", "PodScheduled").is_some_and(|(s, r, m)| {
            s == "False" && r == "Unschedulable" && m.contains("resourceclaim \"some-claim\" not found")
        })
    });
    assert!(
        failed_scheduling(&dev, "needs-dra")
            .iter()
            .any(|n| n.contains("some-claim"))
    );
    assert_eq!(jsonpath(&dev, &["pod", "needs-dra"], "{.spec.nodeName}"), "");
}

#[test]
fn preemption_spares_pods_a_disruption_budget_protects() {
    let dev = start(&[
        "--racks-per-block",
        "1",
        "--nodes-per-rack",
        "2",
        "--cpu",
        "4",
        "--gpus",
        "0",
    ]);
    ok(&dev, &["apply", "-f", "examples/scheduling/disruption-budget.yaml"]);
    eventually("the four low-priority pods to run", || {
        let phases = jsonpath(
            &dev,
            &["pods", "-l", "app in (protected,unprotected)"],
            "{.items[*].status.phase}",
        );
        phases.split_whitespace().filter(|p| *p == "Running").count() == 4
    });
    eventually("the budget to allow no disruption", || {
        jsonpath(
            &dev,
            &["pdb", "protected"],
            "{.status.currentHealthy}/{.status.disruptionsAllowed}",
        ) == "2/0"
    });
    let protected_before = named(&dev, "pods", "protected-");
    ok(&dev, &["apply", "-f", "examples/scheduling/urgent.yaml"]);
    eventually("the urgent pod to run on the unprotected node", || {
        jsonpath(&dev, &["pod", "urgent"], "{.spec.nodeName}/{.status.phase}") == "node-b0-r0-n1/Running"
    });
    let mut protected_after = named(&dev, "pods", "protected-");
    protected_after.sort();
    let mut before = protected_before.clone();
    before.sort();
    assert_eq!(before, protected_after, "no protected pod was touched");
    let preempted: Vec<String> = items(&get_json(&dev, &["events", "--field-selector", "reason=Preempted"]))
        .iter()
        .filter_map(|e| e["involvedObject"]["name"].as_str().map(str::to_string))
        .collect();
    assert_eq!(preempted.len(), 2, "{preempted:?}");
    assert!(preempted.iter().all(|p| p.starts_with("unprotected-")), "{preempted:?}");
}

#[test]
fn a_gpu_shortage_is_explained_on_the_pods_and_every_group() {
    let dev = start(&["--gpus", "0"]);
    ok(&dev, &["apply", "-f", "examples/jobsets/option-a.yaml"]);
    eventually("the root CompositePodGroup to name the resource", || {
        named(&dev, "compositepodgroups", "pretrain-a").iter().any(|g| {
            condition(&dev, "compositepodgroup", g, "CompositePodGroupInitiallyScheduled").is_some_and(|(s, r, m)| {
                s == "False" && r == "Unschedulable" && m.contains("Insufficient nvidia.com/gpu")
            })
        })
    });
    let roots: Vec<(String, String)> = named(&dev, "compositepodgroups", "pretrain-a")
        .into_iter()
        .filter_map(|g| {
            condition(&dev, "compositepodgroup", &g, "CompositePodGroupInitiallyScheduled").map(|c| (g, c.2))
        })
        .collect();
    for (g, m) in &roots {
        assert!(!m.contains("first placement status"), "{g}: {m}");
    }
    eventually("a worker PodGroup to name the resource", || {
        named(&dev, "podgroups", "pretrain-a").iter().any(|g| {
            condition(&dev, "podgroup", g, "PodGroupInitiallyScheduled")
                .is_some_and(|(s, _, m)| s == "False" && m.contains("Insufficient nvidia.com/gpu"))
        })
    });
    // Counted over the rack the gang was tried in (4 nodes), in upstream's form.
    eventually("the workers' events to say it in upstream's words", || {
        failed_scheduling(&dev, "pretrain-a-workers-")
            .iter()
            .any(|n| n.starts_with("0/4 nodes are available: 4 Insufficient nvidia.com/gpu. preemption: "))
    });
}

#[test]
fn a_scheduler_configuration_file_changes_the_scoring() {
    // Upstream's default profile scores LeastAllocated: two pods on an empty two-node cluster go to
    // different nodes, where kwas' bin packing would put them together.
    let dev = start(&[
        "--racks-per-block",
        "1",
        "--nodes-per-rack",
        "2",
        "--scheduler-config",
        "deploy/scheduler/profiles/upstream-default.yaml",
    ]);
    for name in ["first", "second"] {
        apply(
            &dev,
            &format!(
                "apiVersion: v1
kind: Pod
metadata: {{name: {name}, labels: {{app: scored}}}}
spec:
  schedulerName: kwas-scheduler
  containers: [{{name: main, image: app:v1, resources: {{requests: {{cpu: '1'}}}}}}]
"
            ),
        );
        eventually("the pod to be bound", || {
            !jsonpath(&dev, &["pod", name], "{.spec.nodeName}").is_empty()
        });
    }
    let mut nodes = nodes_of(&dev, "app=scored");
    nodes.sort();
    nodes.dedup();
    assert_eq!(nodes.len(), 2, "spread by LeastAllocated: {nodes:?}");
}

#[test]
fn a_bad_scheduler_configuration_is_refused_with_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.yaml");
    std::fs::write(
        &bad,
        "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: kwas-scheduler
  plugins:
    filter:
      disabled:
      - name: NodePorts
",
    )
    .unwrap();
    for args in [
        vec!["scheduler", "--config"],
        vec!["dev", "--port", "0", "--scheduler-config"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_kwas"))
            .args(&args)
            .arg(&bad)
            .arg("--kubeconfig")
            .arg(dir.path().join("kc"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert!(
            stderr.contains("profiles[0].plugins.filter.disabled[0].name") && stderr.contains("Forbidden"),
            "{args:?}: {stderr}"
        );
    }
}
