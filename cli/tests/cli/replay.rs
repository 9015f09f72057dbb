//! `kwas snapshot` against `kwas dev` and `kwas replay` on the file, offline: the replay reproduces what
//! the live scheduler decided (a gang that cannot get its GPUs, told why in the same words) and what it
//! decides next (a gang created under a scheduler name nobody serves is placed by the replay on the
//! nodes the live scheduler then picks for its twin); hostile files fail with the file and the field.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::{Dev, apply, eventually, get_json, items, start};
use serde_json::Value;

fn kwas(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kwas")).args(args).output().unwrap()
}

fn stdout_of(out: &Output) -> String {
    assert!(
        out.status.success(),
        "kwas failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn job(name: &str, scheduler: &str, parallelism: u32, requests: &str, rack: bool) -> String {
    let constraints = if rack {
        "    schedulingConstraints:\n      topology:\n        - key: kwas.dev/rack\n"
    } else {
        ""
    };
    format!(
        "apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
spec:
  managedBy: kwas.dev/job-controller
  parallelism: {parallelism}
  completions: {parallelism}
  scheduling:
    schedulingPolicy:
      gang: {{}}
{constraints}  template:
    metadata:
      labels: {{app: {name}}}
      annotations: {{kwas.dev/sim-run-duration: 1h}}
    spec:
      schedulerName: {scheduler}
      restartPolicy: Never
      containers:
      - name: main
        image: app:v1
        resources:
          requests: {requests}
"
    )
}

/// (status, reason, message) of the condition `type_` in `o`.
fn condition(o: &Value, type_: &str) -> Option<(String, String, String)> {
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

fn pods_of(dev: &Dev, app: &str) -> Vec<Value> {
    items(&get_json(dev, &["pods", "-l", &format!("app={app}")]))
}

fn nodes_of(dev: &Dev, app: &str) -> Vec<String> {
    let mut v: Vec<String> = pods_of(dev, app)
        .iter()
        .filter_map(|p| p["spec"]["nodeName"].as_str().map(str::to_string))
        .collect();
    v.sort();
    v
}

/// The PodGroup the pods of `app` belong to.
fn group_of(dev: &Dev, app: &str) -> Option<Value> {
    let pods = pods_of(dev, app);
    let name = pods.first()?["spec"]["schedulingGroup"]["podGroupName"]
        .as_str()?
        .to_string();
    Some(get_json(dev, &["podgroup", &name]))
}

#[test]
fn a_snapshot_replays_the_live_decisions_offline() {
    let dev = start(&["--gpus", "2", "--dra-gpus", "0"]);
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dev.kubeconfig.to_str().unwrap().to_string();

    // A rack gang that fits, and a gang that cannot get its GPUs (2 per node, 4 asked per pod).
    apply(&dev, &job("train", "kwas-scheduler", 4, "{cpu: '8'}", true));
    apply(
        &dev,
        &job("gpu", "kwas-scheduler", 3, "{cpu: '1', nvidia.com/gpu: '4'}", false),
    );
    // A gang under a scheduler name nobody serves: pending in the snapshot, for the replay to place.
    apply(&dev, &job("held", "what-if", 4, "{cpu: '8'}", true));
    eventually("the live scheduler to bind the rack gang", || {
        nodes_of(&dev, "train").len() == 4
    });
    eventually("the live scheduler to tell the GPU gang and its pods why", || {
        let pods = pods_of(&dev, "gpu");
        group_of(&dev, "gpu")
            .and_then(|g| condition(&g, "PodGroupInitiallyScheduled"))
            .is_some_and(|(s, _, m)| s == "False" && m.contains("Insufficient nvidia.com/gpu"))
            && pods.len() == 3
            && pods
                .iter()
                .all(|p| condition(p, "PodScheduled").is_some_and(|(s, r, _)| s == "False" && r == "Unschedulable"))
    });
    eventually("the held gang's pods and PodGroup to exist", || {
        pods_of(&dev, "held").len() == 4 && group_of(&dev, "held").is_some()
    });
    let live_group = condition(&group_of(&dev, "gpu").unwrap(), "PodGroupInitiallyScheduled").unwrap();
    let mut live_pod_messages: Vec<String> = pods_of(&dev, "gpu")
        .iter()
        .map(|p| condition(p, "PodScheduled").unwrap().2)
        .collect();
    live_pod_messages.sort();

    // The snapshot: the informers' kinds only, without managedFields.
    let file = dir.path().join("snapshot.yaml");
    let out = kwas(&[
        "snapshot",
        "--kubeconfig",
        &kubeconfig,
        "-o",
        file.to_str().unwrap(),
        "--scheduler-name",
        "kwas-scheduler",
        "--scheduler-name",
        "what-if",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: Value = serde_saphyr::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(doc["apiVersion"], "kwas.dev/v1alpha1");
    assert_eq!(doc["kind"], "SchedulingSnapshot");
    assert_eq!(
        doc["metadata"]["schedulerNames"],
        serde_json::json!(["kwas-scheduler", "what-if"])
    );
    assert!(doc["metadata"]["takenAt"].is_string() && doc["metadata"]["serverVersion"].is_string());
    let allowed = [
        "Node",
        "Pod",
        "PodGroup",
        "CompositePodGroup",
        "PriorityClass",
        "Namespace",
        "PersistentVolumeClaim",
        "PersistentVolume",
        "StorageClass",
        "CSINode",
        "PodDisruptionBudget",
        "Workload",
        "DeviceClass",
        "ResourceSlice",
        "ResourceClaim",
    ];
    for item in items(&doc) {
        let kind = item["kind"].as_str().unwrap();
        assert!(allowed.contains(&kind), "{kind} is not a scheduling input");
        assert!(
            item["metadata"].get("managedFields").is_none(),
            "{kind}: managedFields kept"
        );
    }
    let kinds: Vec<String> = items(&doc)
        .iter()
        .map(|i| i["kind"].as_str().unwrap().to_string())
        .collect();
    for k in ["Node", "Pod", "PodGroup", "Workload", "Namespace", "PriorityClass"] {
        assert!(kinds.iter().any(|x| x == k), "no {k} in the snapshot");
    }
    // Connecting the way kubectl does: a context that is not in the kubeconfig is an error.
    let bad = kwas(&["snapshot", "--kubeconfig", &kubeconfig, "--context", "no-such-context"]);
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("no-such-context"),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );

    // The replay, offline (the dev cluster is not asked anything: the file is all it reads).
    let report: Value =
        serde_json::from_str(&stdout_of(&kwas(&["replay", file.to_str().unwrap(), "-o", "json"]))).unwrap();
    assert_eq!(report["kind"], "ReplayReport");
    assert_eq!(
        report["schedulerNames"],
        serde_json::json!(["kwas-scheduler", "what-if"])
    );

    // The stuck gang: the same condition, in the same words, on the group and on its pods.
    let gpu_group = report["groupConditions"]
        .as_array()
        .unwrap()
        .iter()
        .rfind(|c| c["group"].as_str().unwrap().contains("/gpu-") && c["type"] == "PodGroupInitiallyScheduled")
        .expect("a condition on the GPU gang's PodGroup")
        .clone();
    assert_eq!(
        (
            gpu_group["status"].as_str().unwrap(),
            gpu_group["reason"].as_str().unwrap(),
            gpu_group["message"].as_str().unwrap()
        ),
        (live_group.0.as_str(), live_group.1.as_str(), live_group.2.as_str()),
        "the replay's group condition is the live one"
    );
    assert_eq!(gpu_group["live"]["message"], live_group.2.as_str());
    let mut replay_pod_messages: Vec<String> = report["pending"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["pod"].as_str().unwrap().starts_with("default/gpu-"))
        .map(|p| p["message"].as_str().unwrap().to_string())
        .collect();
    replay_pod_messages.sort();
    assert_eq!(replay_pod_messages, live_pod_messages);

    // Nothing of the live scheduler's is undone: the rack gang stays; the held gang is placed.
    let bindings = report["bindings"].as_array().unwrap();
    assert!(
        bindings
            .iter()
            .all(|b| b["pod"].as_str().unwrap().starts_with("default/held-")),
        "{bindings:?}"
    );
    let mut replay_nodes: Vec<String> = bindings
        .iter()
        .map(|b| b["node"].as_str().unwrap().to_string())
        .collect();
    replay_nodes.sort();
    assert_eq!(replay_nodes.len(), 4);

    // The same gang under the live scheduler's name now: placed where the replay said.
    apply(&dev, &job("twin", "kwas-scheduler", 4, "{cpu: '8'}", true));
    eventually("the live scheduler to bind the twin", || {
        nodes_of(&dev, "twin").len() == 4
    });
    let live_nodes = nodes_of(&dev, "twin");
    let rack = |n: &String| n.rsplit_once('-').unwrap().0.to_string();
    let racks: Vec<String> = replay_nodes.iter().map(rack).collect();
    assert!(racks.iter().all(|r| *r == racks[0]), "one rack: {replay_nodes:?}");
    assert_eq!(
        live_nodes.iter().map(rack).collect::<Vec<_>>(),
        racks,
        "the same rack: live {live_nodes:?}, replay {replay_nodes:?}"
    );
    assert_eq!(live_nodes, replay_nodes, "the same nodes (scoring is deterministic)");

    // The text report says it too.
    let text = stdout_of(&kwas(&["replay", file.to_str().unwrap()]));
    assert!(text.contains("Bindings (4):"), "{text}");
    assert!(text.contains("(the same in the snapshot)"), "{text}");
    assert!(text.contains(&live_group.2), "{text}");
}

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scheduler/tests/fixtures/replay/preemption-and-stuck-gang.yaml")
}

#[test]
fn the_recorded_fixture_replays_from_the_command_line() {
    let report: Value = serde_json::from_str(&stdout_of(&kwas(&[
        "replay",
        fixture().to_str().unwrap(),
        "-o",
        "json",
    ])))
    .unwrap();
    let preemption = &report["preemptions"][0];
    assert_eq!(preemption["preemptor"], "Pod default/urgent");
    let victims: Vec<&str> = preemption["victims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["pod"].as_str().unwrap())
        .collect();
    assert_eq!(victims.len(), 2);
    assert!(
        victims.iter().all(|v| v.starts_with("default/unprotected-")),
        "the budget is honoured: {victims:?}"
    );
    assert_eq!(report["bindings"][0]["pod"], "default/urgent");
    // Only the scheduler names given are replayed: without `what-if`, `urgent` is left alone.
    let report: Value = serde_json::from_str(&stdout_of(&kwas(&[
        "replay",
        fixture().to_str().unwrap(),
        "--scheduler-name",
        "kwas-scheduler",
        "-o",
        "json",
    ])))
    .unwrap();
    assert_eq!(report["bindings"], serde_json::json!([]));
    assert!(report["preemptions"].as_array().unwrap().is_empty());
}

#[test]
fn hostile_snapshot_files_fail_with_the_file_and_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let fixture_text = std::fs::read_to_string(fixture()).unwrap();
    let head = "apiVersion: kwas.dev/v1alpha1\nkind: SchedulingSnapshot\n";
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("truncated", fixture_text.as_bytes()[..fixture_text.len() / 2].to_vec(), ""),
        (
            "cut-at-a-line",
            fixture_text.as_bytes()[..fixture_text.len() / 2]
                .rsplitn(2, |b| *b == b'\n')
                .nth(1)
                .unwrap()
                .to_vec(),
            "itemCount: Required value",
        ),
        ("empty", Vec::new(), "expected a SchedulingSnapshot object"),
        (
            "unknown-kind",
            format!("{head}items:\n- {{apiVersion: v1, kind: Secret, metadata: {{name: s}}}}\nitemCount: 1\n").into_bytes(),
            "items[0].kind: Unsupported value: \"Secret\"",
        ),
        (
            "wrong-api-version",
            "apiVersion: kwas.dev/v2\nkind: SchedulingSnapshot\n".into(),
            "apiVersion: Unsupported value: \"kwas.dev/v2\"",
        ),
        (
            "huge-number",
            format!("{head}items:\n- {{apiVersion: v1, kind: Pod, metadata: {{name: p}}, spec: {{priority: 1e999, containers: []}}}}\nitemCount: 1\n")
                .into_bytes(),
            "non-finite float `1e999`",
        ),
        (
            "huge-integer",
            format!("{head}items:\n- {{apiVersion: v1, kind: Pod, metadata: {{name: p}}, spec: {{priority: 123456789012345678901234567890, containers: []}}}}\nitemCount: 1\n")
                .into_bytes(),
            "items[0] (Pod p): spec.priority",
        ),
        ("binary", vec![0xff, 0xfe, 0x00, 0x41, 0x80], "not UTF-8"),
    ];
    for (name, bytes, want) in cases {
        let path = dir.path().join(format!("{name}.yaml"));
        std::fs::write(&path, bytes).unwrap();
        let out = kwas(&["replay", path.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{name}: accepted");
        assert_eq!(out.status.code(), Some(1), "{name}: {stderr}");
        assert!(!stderr.contains("panicked"), "{name}: {stderr}");
        assert!(stderr.contains(path.to_str().unwrap()), "{name}: no path: {stderr}");
        assert!(stderr.contains(want), "{name}: {stderr}");
    }
    let missing = dir.path().join("missing.yaml");
    let out = kwas(&["replay", missing.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing.yaml"));
    let out = kwas(&["replay", dir.path().to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
    // A snapshot without a cluster to take it from.
    let out = kwas(&["snapshot", "--kubeconfig", missing.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing.yaml"));
}

/// A snapshot taken from a cluster that stored a hostile selector (a real cluster never would; a
/// hand-edited or corrupted file may): the replay finishes, and the pod is reported with the runtime
/// limit's error, as the live scheduler reports it.
#[test]
fn a_snapshot_with_a_hostile_selector_replays_to_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixture()).unwrap();
    let (items, count) = text.rsplit_once("itemCount: ").unwrap();
    let count: usize = count.trim().parse().unwrap();
    let devices: Vec<String> = (0..8)
        .map(|i| format!("    - name: gpu-{i}\n      attributes:\n        model: {{string: KW100}}\n"))
        .collect();
    let extra = format!(
        "- apiVersion: resource.k8s.io/v1
  kind: ResourceSlice
  metadata: {{name: node-b0-r0-n0-gpu, uid: slice-1}}
  spec:
    driver: gpu.kwas.dev
    nodeName: node-b0-r0-n0
    pool: {{name: node-b0-r0-n0, generation: 1, resourceSliceCount: 1}}
    devices:
{}- apiVersion: resource.k8s.io/v1
  kind: ResourceClaim
  metadata: {{name: hostile, namespace: default, uid: claim-1}}
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.kwas.dev
          selectors:
          - cel: {{expression: 'lists.range(1000000000000).size() > 0'}}
- apiVersion: v1
  kind: Pod
  metadata: {{name: hostile, namespace: default, uid: pod-1, creationTimestamp: '2026-11-24T23:47:50Z'}}
  spec:
    schedulerName: kwas-scheduler
    resourceClaims:
    - {{name: gpu, resourceClaimName: hostile}}
    containers:
    - name: c
      image: busybox
  status: {{phase: Pending}}
",
        devices.concat()
    );
    let path = dir.path().join("hostile.yaml");
    std::fs::write(&path, format!("{items}{extra}itemCount: {}\n", count + 3)).unwrap();
    let t = std::time::Instant::now();
    let out = kwas(&["replay", path.to_str().unwrap()]);
    let text = stdout_of(&out);
    assert!(t.elapsed() < std::time::Duration::from_secs(60), "{:?}", t.elapsed());
    assert!(
        text.contains("claim default/hostile: selector #0 on device gpu.kwas.dev/node-b0-r0-n0/gpu-0: CEL runtime error: operation cancelled: actual cost limit exceeded"),
        "{text}"
    );
}

/// A snapshot taken without `--scheduler-name` records the names the cluster's kwas scheduler serves (read
/// from its leader-election Lease: `kwas dev` serves `default-scheduler` too), and the replay places a
/// pending `default-scheduler` gang as the live scheduler would. On a stock v1.37 shape (the beta only)
/// the snapshot reads Workloads and PodGroups through v1beta1 and names CompositePodGroups absent.
#[test]
fn a_snapshot_records_the_scheduler_names_served_and_reads_each_version() {
    for (profile, absent) in [("alpha", false), ("stock-1.37", true)] {
        let dev = start(&["--profile", profile]);
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dev.kubeconfig.to_str().unwrap().to_string();
        apply(&dev, &job("train", "default-scheduler", 2, "{cpu: '1'}", false));
        eventually("the gang's PodGroup to exist", || group_of(&dev, "train").is_some());
        let file = dir.path().join("snapshot.json");
        let out = kwas(&["snapshot", "--kubeconfig", &kubeconfig, "-o", file.to_str().unwrap()]);
        assert!(
            out.status.success(),
            "{profile}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(
            doc["metadata"]["schedulerNames"],
            serde_json::json!(["kwas-scheduler", "default-scheduler"]),
            "{profile}"
        );
        let absent_kinds = doc["metadata"]["absentKinds"].as_array().cloned().unwrap_or_default();
        assert_eq!(
            absent_kinds.contains(&serde_json::json!("CompositePodGroup")),
            absent,
            "{profile}: {absent_kinds:?}"
        );
        let kinds: Vec<String> = items(&doc)
            .iter()
            .map(|o| o["kind"].as_str().unwrap_or_default().to_string())
            .collect();
        for k in ["PodGroup", "Workload"] {
            assert!(kinds.iter().any(|x| x == k), "{profile}: no {k} in {kinds:?}");
        }
        let report: Value =
            serde_json::from_str(&stdout_of(&kwas(&["replay", file.to_str().unwrap(), "-o", "json"]))).unwrap();
        assert_eq!(
            report["schedulerNames"],
            serde_json::json!(["kwas-scheduler", "default-scheduler"])
        );
        assert!(
            !stdout_of(&kwas(&["replay", file.to_str().unwrap()])).contains("name another scheduler"),
            "{profile}"
        );
    }
}
