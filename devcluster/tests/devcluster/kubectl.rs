//! kubectl 1.37 against devcluster: apply (client-side and server-side), get -o yaml and -w, describe,
//! delete with cascade, wait, label, annotate, patch with each type, and the scheduling.k8s.io objects.
//!
//! kubectl 1.37 comes from `kwas-test-tools` (`$KWAS_KUBECTL`, the workspace `.venv`, or a cache it
//! installs from PyPI on first use); a tool that cannot be had fails the tests, never skips them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Duration;

use crate::common::{kubectl, kubectl_in, kubectl_ok};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::ResourceExt;
use kube::api::{Api, PostParams};
use serde_json::Value;

const POD: &str = "apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  nodeName: node-b0-r0-n0
  containers:
  - name: nginx
    image: nginx:1.27
    ports:
    - containerPort: 80
";

fn yaml(text: &str) -> Value {
    serde_saphyr::from_str(text).unwrap()
}

use kwas_test_tools::run::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_client_side_and_server_side() {
    let c = crate::common::cluster().await;
    assert_eq!(
        kubectl_ok(&c, &["apply", "-f", "-"], Some(POD)).trim(),
        "pod/web created"
    );
    assert_eq!(
        kubectl_ok(&c, &["apply", "-f", "-"], Some(POD)).trim(),
        "pod/web unchanged"
    );
    let changed = POD
        .replace("nginx:1.27", "nginx:1.28")
        .replace("app: web", "app: web, tier: front");
    assert_eq!(
        kubectl_ok(&c, &["apply", "-f", "-"], Some(&changed)).trim(),
        "pod/web configured"
    );
    let pod = json(&kubectl(&c, &["get", "pod", "web", "-o", "json"]));
    assert_eq!(pod["spec"]["containers"][0]["image"], "nginx:1.28");
    assert_eq!(pod["spec"]["containers"][0]["ports"][0]["containerPort"], 80);
    assert_eq!(pod["metadata"]["labels"]["tier"], "front");
    assert!(pod["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"].is_string());

    // Numeric quantities from YAML are accepted and canonicalized, as by kube-apiserver.
    let gpu = POD.replace("name: web", "name: gpu").replace(
        "    - containerPort: 80\n",
        "    - containerPort: 80\n    resources:\n      requests: {cpu: 0.5, memory: 64Mi, nvidia.com/gpu: 1}\n      limits: {nvidia.com/gpu: 1}\n",
    );
    kubectl_ok(&c, &["apply", "-f", "-"], Some(&gpu));
    let requests = json(&kubectl(
        &c,
        &[
            "get",
            "pod",
            "gpu",
            "-o",
            "jsonpath={.spec.containers[0].resources.requests}",
        ],
    ));
    assert_eq!(
        requests,
        serde_json::json!({"cpu": "500m", "memory": "64Mi", "nvidia.com/gpu": "1"})
    );

    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: fast\n  level: \"1\"\n";
    assert_eq!(
        kubectl_ok(&c, &["apply", "--server-side", "-f", "-"], Some(cm)).trim(),
        "configmap/settings serverside-applied"
    );
    let live = json(&kubectl(
        &c,
        &["get", "cm", "settings", "-o", "json", "--show-managed-fields"],
    ));
    assert_eq!(live["metadata"]["managedFields"][0]["manager"], "kubectl");
    assert_eq!(live["metadata"]["managedFields"][0]["operation"], "Apply");
    // Another manager takes a field; applying a different value conflicts until forced.
    kubectl(
        &c,
        &[
            "patch",
            "cm",
            "settings",
            "--type=merge",
            "-p",
            r#"{"data":{"mode":"slow"}}"#,
        ],
    );
    let out = kubectl_in(&c, &["apply", "--server-side", "-f", "-"], Some(cm));
    assert!(!out.ok);
    assert!(
        out.stderr
            .contains("Apply failed with 1 conflict: conflict with \"kubectl-patch\""),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains(".data.mode"), "{}", out.stderr);
    kubectl_ok(
        &c,
        &["apply", "--server-side", "--force-conflicts", "-f", "-"],
        Some(cm),
    );
    assert_eq!(
        kubectl(&c, &["get", "cm", "settings", "-o", "jsonpath={.data.mode}"]),
        "fast"
    );
    // Dropping a field from the applied configuration removes it.
    let smaller = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: fast\n";
    kubectl_ok(&c, &["apply", "--server-side", "-f", "-"], Some(smaller));
    let data = json(&kubectl(&c, &["get", "cm", "settings", "-o", "json"]))["data"].clone();
    assert_eq!(data, serde_json::json!({"mode": "fast"}));
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_yaml_tables_and_watch() {
    let c = crate::common::cluster().await;
    kubectl_ok(&c, &["apply", "-f", "-"], Some(POD));
    let table = kubectl(&c, &["get", "nodes"]);
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, vec!["NAME", "STATUS", "ROLES", "AGE", "VERSION"]);
    assert_eq!(table.lines().count(), 5);
    assert!(table.contains("node-b0-r0-n0   Ready"), "{table}");
    let wide = kubectl(&c, &["get", "pods", "-o", "wide"]);
    assert!(wide.lines().next().unwrap().contains("NODE"), "{wide}");

    let doc = yaml(&kubectl(&c, &["get", "pod", "web", "-o", "yaml"]));
    assert_eq!(doc["kind"], "Pod");
    assert_eq!(doc["metadata"]["name"], "web");
    assert_eq!(doc["spec"]["schedulerName"], "default-scheduler");
    assert!(doc["metadata"]["uid"].is_string());

    // `get -w` prints the existing pod, then changes as they happen.
    let mut child = kwas_test_tools::run::kubectl_command(c.kubeconfig_path())
        .args(["get", "pods", "-w", "--output-watch-events"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let first = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(first.contains("EVENT") && first.contains("NAME"), "{first}");
    let existing = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(existing.contains("ADDED") && existing.contains("web"), "{existing}");
    kubectl_ok(
        &c,
        &["apply", "-f", "-"],
        Some(&POD.replace("name: web", "name: second")),
    );
    let mut seen = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !seen
        .iter()
        .any(|l: &String| l.contains("second") && l.contains("Running"))
    {
        assert!(std::time::Instant::now() < deadline, "watch output so far: {seen:?}");
        if let Ok(l) = rx.recv_timeout(Duration::from_millis(200)) {
            seen.push(l);
        }
    }
    assert!(
        seen.iter().any(|l| l.starts_with("ADDED") && l.contains("second")),
        "{seen:?}"
    );
    assert!(
        seen.iter().any(|l| l.starts_with("MODIFIED") && l.contains("second")),
        "{seen:?}"
    );
    child.kill().unwrap();
    let _ = child.wait();
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn describe_shows_status_and_events() {
    let c = crate::common::cluster().await;
    kubectl_ok(&c, &["apply", "-f", "-"], Some(POD));
    let pods: Api<Pod> = Api::default_namespaced(c.client());
    crate::common::eventually_within(Duration::from_secs(10), "web running", || async {
        (pods.get("web").await.ok()?.status?.phase.as_deref()? == "Running").then_some(())
    })
    .await;
    let pod = pods.get("web").await.unwrap();
    let recorder = kube::runtime::events::Recorder::new(
        c.client(),
        kube::runtime::events::Reporter {
            controller: "kwas-scheduler".into(),
            instance: None,
        },
    );
    recorder
        .publish(
            &kube::runtime::events::Event {
                type_: kube::runtime::events::EventType::Normal,
                reason: "Scheduled".into(),
                note: Some("Successfully assigned default/web to node-b0-r0-n0".into()),
                action: "Binding".into(),
                secondary: None,
            },
            &kube::Resource::object_ref(&pod, &()),
        )
        .await
        .unwrap();
    let out = kubectl(&c, &["describe", "pod", "web"]);
    for want in [
        "Name:             web",
        "Node:             node-b0-r0-n0/",
        "Status:           Running",
        "Image:          nginx:1.27",
        "Ready:          True",
    ] {
        let norm = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            out.lines().any(|l| norm(l).starts_with(&norm(want))),
            "{want:?} missing from:\n{out}"
        );
    }
    assert!(
        out.contains("Scheduled") && out.contains("Successfully assigned default/web to node-b0-r0-n0"),
        "{out}"
    );
    let node = kubectl(&c, &["describe", "node", "node-b0-r0-n0"]);
    assert!(
        node.contains("kwas.dev/rack=b0-r0") && node.contains("nvidia.com/gpu:"),
        "{node}"
    );
    assert!(
        node.contains("default                     web"),
        "the node lists its pod:\n{node}"
    );
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_with_cascade_policies() {
    let c = crate::common::cluster().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(c.client());
    let make = |name: &str, owner: Option<&ConfigMap>| {
        let mut v = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}});
        if let Some(o) = owner {
            v["metadata"]["ownerReferences"] = serde_json::json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": o.name_any(),
                "uid": o.uid().unwrap(), "blockOwnerDeletion": true, "controller": true}]);
        }
        serde_json::from_value::<ConfigMap>(v).unwrap()
    };
    let owner = cms.create(&PostParams::default(), &make("owner", None)).await.unwrap();
    cms.create(&PostParams::default(), &make("child", Some(&owner)))
        .await
        .unwrap();
    let out = kubectl(&c, &["delete", "cm", "owner", "--cascade=orphan"]);
    assert_eq!(out.trim(), "configmap \"owner\" deleted from default namespace");
    let child = cms.get("child").await.unwrap();
    assert!(child.owner_references().is_empty(), "orphaned");

    let owner = cms.create(&PostParams::default(), &make("owner2", None)).await.unwrap();
    cms.create(&PostParams::default(), &make("child2", Some(&owner)))
        .await
        .unwrap();
    kubectl(&c, &["delete", "cm", "owner2", "--cascade=foreground"]);
    assert!(
        cms.get_opt("owner2").await.unwrap().is_none(),
        "kubectl waits for the foreground deletion"
    );
    assert!(cms.get_opt("child2").await.unwrap().is_none());

    let owner = cms.create(&PostParams::default(), &make("owner3", None)).await.unwrap();
    cms.create(&PostParams::default(), &make("child3", Some(&owner)))
        .await
        .unwrap();
    kubectl(&c, &["delete", "cm", "owner3"]);
    crate::common::eventually_within(Duration::from_secs(10), "background collection", || async {
        cms.get_opt("child3").await.ok()?.is_none().then_some(())
    })
    .await;
    let out = kubectl_in(&c, &["delete", "cm", "missing"], None);
    assert!(!out.ok);
    assert_eq!(
        out.stderr.trim(),
        "Error from server (NotFound): configmaps \"missing\" not found"
    );
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_for_conditions_and_deletion() {
    let c = crate::common::cluster().await;
    kubectl_ok(&c, &["apply", "-f", "-"], Some(POD));
    let out = kubectl(&c, &["wait", "--for=condition=Ready", "pod/web", "--timeout=20s"]);
    assert_eq!(out.trim(), "pod/web condition met");
    let out = kubectl(
        &c,
        &[
            "wait",
            "--for=jsonpath={.status.phase}=Running",
            "pod/web",
            "--timeout=20s",
        ],
    );
    assert_eq!(out.trim(), "pod/web condition met");
    let crd = kubectl(&c, &["get", "crd", "-o", "name"]);
    assert_eq!(crd.trim(), "");
    kubectl(&c, &["delete", "pod", "web", "--wait=false"]);
    let out = kubectl(&c, &["wait", "--for=delete", "pod/web", "--timeout=20s"]);
    assert!(out.trim() == "pod/web condition met" || out.trim().is_empty(), "{out}");
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn label_annotate_and_patch_with_each_type() {
    let c = crate::common::cluster().await;
    kubectl_ok(&c, &["apply", "-f", "-"], Some(POD));
    assert_eq!(
        kubectl(&c, &["label", "pod", "web", "tier=front"]).trim(),
        "pod/web labeled"
    );
    assert_eq!(
        kubectl(&c, &["label", "pod", "web", "app-"]).trim(),
        "pod/web unlabeled"
    );
    assert_eq!(
        kubectl(&c, &["annotate", "pod", "web", "owner=team-a"]).trim(),
        "pod/web annotated"
    );
    let out = kubectl_in(&c, &["label", "pod", "web", "tier=back"], None);
    assert!(
        !out.ok && out.stderr.contains("already has a value (front)"),
        "{}",
        out.stderr
    );
    kubectl(&c, &["label", "pod", "web", "tier=back", "--overwrite"]);

    kubectl(
        &c,
        &[
            "patch",
            "pod",
            "web",
            "--type=merge",
            "-p",
            r#"{"metadata":{"labels":{"merged":"yes"}}}"#,
        ],
    );
    kubectl(
        &c,
        &[
            "patch",
            "pod",
            "web",
            "--type=json",
            "-p",
            r#"[{"op":"add","path":"/metadata/labels/json","value":"yes"}]"#,
        ],
    );
    // Strategic merge: containers merge by name, so the image changes without touching the ports.
    kubectl(
        &c,
        &[
            "patch",
            "pod",
            "web",
            "-p",
            r#"{"spec":{"containers":[{"name":"nginx","image":"nginx:1.29"}]}}"#,
        ],
    );
    let pod = json(&kubectl(&c, &["get", "pod", "web", "-o", "json"]));
    let labels = &pod["metadata"]["labels"];
    assert_eq!(
        (
            labels["tier"].as_str(),
            labels["merged"].as_str(),
            labels["json"].as_str()
        ),
        (Some("back"), Some("yes"), Some("yes"))
    );
    assert!(labels.get("app").is_none());
    assert_eq!(pod["metadata"]["annotations"]["owner"], "team-a");
    assert_eq!(pod["spec"]["containers"][0]["image"], "nginx:1.29");
    assert_eq!(pod["spec"]["containers"][0]["ports"][0]["containerPort"], 80);
    let out = kubectl_in(
        &c,
        &["patch", "pod", "web", "-p", r#"{"spec":{"nodeName":"elsewhere"}}"#],
        None,
    );
    assert!(!out.ok);
    assert!(
        out.stderr
            .contains("The Pod \"web\" is invalid: spec: Forbidden: pod updates may not change fields"),
        "{}",
        out.stderr
    );
    c.shutdown().await;
}

const SCHEDULING: &str = "apiVersion: scheduling.k8s.io/v1alpha3
kind: Workload
metadata:
  name: training
spec:
  compositePodGroupTemplates:
  - name: job
    schedulingPolicy:
      gang:
        minGroupCount: 2
    podGroupTemplates:
    - name: workers
      schedulingPolicy:
        gang:
          minCount: 4
---
apiVersion: scheduling.k8s.io/v1alpha3
kind: CompositePodGroup
metadata:
  name: training-job
spec:
  workloadRef:
    workloadName: training
    templateName: job
  schedulingPolicy:
    gang:
      minGroupCount: 2
---
apiVersion: scheduling.k8s.io/v1alpha3
kind: PodGroup
metadata:
  name: training-workers-0
spec:
  workloadRef:
    workloadName: training
    templateName: workers
  parentCompositePodGroupName: training-job
  schedulingPolicy:
    gang:
      minCount: 4
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn creates_scheduling_objects_and_rejects_an_invalid_workload() {
    let c = crate::common::cluster().await;
    let out = kubectl_ok(&c, &["create", "-f", "-"], Some(SCHEDULING));
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        vec![
            "workload.scheduling.k8s.io/training created",
            "compositepodgroup.scheduling.k8s.io/training-job created",
            "podgroup.scheduling.k8s.io/training-workers-0 created",
        ]
    );
    let pg = json(&kubectl(&c, &["get", "podgroup", "training-workers-0", "-o", "json"]));
    assert_eq!(pg["spec"]["disruptionMode"], serde_json::json!({"single": {}}));
    assert_eq!(pg["metadata"]["finalizers"][0], "scheduling.k8s.io/podgroup-protection");
    let list = kubectl(&c, &["get", "podgroups,compositepodgroups,workloads"]);
    assert!(
        list.contains("podgroup.scheduling.k8s.io/training-workers-0") && list.contains("Gang"),
        "{list}"
    );

    let invalid = "apiVersion: scheduling.k8s.io/v1alpha3
kind: Workload
metadata:
  name: bad
spec:
  podGroupTemplates:
  - name: workers
    schedulingPolicy:
      gang:
        minCount: 0
";
    let out = kubectl_in(&c, &["create", "-f", "-"], Some(invalid));
    assert!(!out.ok);
    assert!(out.stderr.contains("The Workload \"bad\" is invalid"), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("spec.podGroupTemplates[0].schedulingPolicy.gang.minCount"),
        "{}",
        out.stderr
    );

    let out = kubectl_in(
        &c,
        &["create", "-f", "-"],
        Some(&invalid.replace("minCount: 0", "minCount: 1\n        bogusField: 1")),
    );
    assert!(!out.ok);
    assert!(
        out.stderr
            .contains("unknown field \"spec.podGroupTemplates[0].schedulingPolicy.gang.bogusField\""),
        "{}",
        out.stderr
    );
    c.shutdown().await;
}

/// Workload and PodGroup are served as `scheduling.k8s.io/v1beta1` and `v1alpha3` over one storage, as
/// kube-apiserver serves every enabled version of a resource: an object written through one version is
/// the same object (uid, resourceVersion) through the other, a watch through either sees writes through
/// both, a delete through one removes it from both; kubectl's default is the beta. The stock-1.37 profile
/// serves the beta alone and drops a Job's `spec.scheduling` (no WorkloadWithJob gate).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workloads_and_pod_groups_are_one_object_through_both_versions() {
    let c = crate::common::cluster().await;
    let beta = "apiVersion: scheduling.k8s.io/v1beta1
kind: Workload
metadata:
  name: trainer
spec:
  podGroupTemplates:
  - name: workers
    schedulingPolicy:
      gang:
        minCount: 2
---
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata:
  name: trainer-workers-0
spec:
  workloadRef: {workloadName: trainer, templateName: workers}
  schedulingPolicy:
    gang:
      minCount: 2
";
    let out = kubectl_ok(&c, &["apply", "--server-side", "-f", "-"], Some(beta));
    assert!(
        out.contains("podgroup.scheduling.k8s.io/trainer-workers-0 serverside-applied"),
        "{out}"
    );
    let as_beta = json(&kubectl(&c, &["get", "podgroup", "trainer-workers-0", "-o", "json"]));
    let as_alpha = json(&kubectl(
        &c,
        &[
            "get",
            "podgroups.v1alpha3.scheduling.k8s.io",
            "trainer-workers-0",
            "-o",
            "json",
        ],
    ));
    assert_eq!(as_beta["apiVersion"], "scheduling.k8s.io/v1beta1");
    assert_eq!(as_alpha["apiVersion"], "scheduling.k8s.io/v1alpha3");
    for field in ["uid", "resourceVersion", "creationTimestamp"] {
        assert_eq!(as_beta["metadata"][field], as_alpha["metadata"][field], "{field}");
    }
    assert_eq!(as_beta["spec"], as_alpha["spec"]);
    // A write through the alpha shows through the beta, with the admission of either (defaulting).
    assert_eq!(as_beta["spec"]["disruptionMode"], serde_json::json!({"single": {}}));
    kubectl_ok(
        &c,
        &["label", "workloads.v1alpha3.scheduling.k8s.io", "trainer", "team=ml"],
        None,
    );
    let workload = json(&kubectl(&c, &["get", "workload", "trainer", "-o", "json"]));
    assert_eq!(workload["apiVersion"], "scheduling.k8s.io/v1beta1");
    assert_eq!(workload["metadata"]["labels"]["team"], "ml");
    // Validation is the same through the beta.
    let out = kubectl_in(
        &c,
        &["create", "-f", "-"],
        Some(
            &beta
                .replace("minCount: 2\n---", "minCount: 0\n---")
                .replace("name: trainer\n", "name: bad\n"),
        ),
    );
    assert!(!out.ok);
    assert!(
        out.stderr
            .contains("spec.podGroupTemplates[0].schedulingPolicy.gang.minCount"),
        "{}",
        out.stderr
    );
    // Delete through the alpha: gone through the beta (the protection finalizer released: no pods).
    kubectl_ok(
        &c,
        &[
            "delete",
            "podgroups.v1alpha3.scheduling.k8s.io",
            "trainer-workers-0",
            "--wait=true",
        ],
        None,
    );
    let out = kubectl_in(&c, &["get", "podgroup", "trainer-workers-0"], None);
    assert!(!out.ok && out.stderr.contains("NotFound"), "{}", out.stderr);
    c.shutdown().await;

    // The stock-1.37 shape.
    let c = crate::common::cluster_with(|config| {
        *config = kwas_devcluster::Profile::Stock137.apply(std::mem::take(config));
    })
    .await;
    let out = kubectl_in(&c, &["get", "podgroups.v1alpha3.scheduling.k8s.io"], None);
    assert!(
        !out.ok && out.stderr.contains("doesn't have a resource type"),
        "{}",
        out.stderr
    );
    kubectl_ok(&c, &["apply", "-f", "-"], Some(beta));
    let job = "apiVersion: batch/v1
kind: Job
metadata:
  name: gang
spec:
  parallelism: 2
  scheduling:
    schedulingPolicy:
      gang: {}
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: c
        image: busybox
";
    kubectl_ok(&c, &["apply", "-f", "-"], Some(job));
    let stored = json(&kubectl(&c, &["get", "job", "gang", "-o", "json"]));
    assert!(stored["spec"].get("scheduling").is_none(), "{}", stored["spec"]);
    c.shutdown().await;
}
