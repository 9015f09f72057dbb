//! kubectl's everyday commands against devcluster, each run with the real kubectl 1.37: the `create`
//! generators (which send protobuf, as client-go's typed clients do), `run`, `expose`, `scale`, `rollout
//! status|undo|history`, `auth can-i|whoami`, `logs` (current, previous, follow), `wait`, `top` (not
//! served: no metrics API) and the controllers behind them (Deployments, StatefulSets, CronJobs, quotas).
//! The devcluster README's command table names these tests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use crate::common::{kubectl, kubectl_in, kubectl_ok};
use serde_json::Value;

use kwas_test_tools::run::json;

fn get(c: &kwas_devcluster::DevCluster, what: &[&str]) -> Value {
    let mut args = vec!["get"];
    args.extend_from_slice(what);
    args.extend_from_slice(&["-o", "json"]);
    json(&kubectl(c, &args))
}

/// Polls kubectl until `pred` holds on `get <what> -o json`.
async fn until(c: &kwas_devcluster::DevCluster, what: &[&str], desc: &str, pred: impl Fn(&Value) -> bool) -> Value {
    crate::common::eventually_within(Duration::from_secs(30), desc, || {
        let mut args = vec!["get"];
        args.extend_from_slice(what);
        args.extend_from_slice(&["-o", "json"]);
        let out = kubectl_in(c, &args, None);
        let v = out.ok.then(|| json(&out.stdout)).filter(|v| pred(v));
        async move { v }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_generators_send_protobuf_and_every_kind_is_served() {
    let c = crate::common::cluster().await;
    // kubectl's generators use client-go's typed clients: protobuf both ways.
    let verbose = kubectl_in(&c, &["create", "namespace", "team-a", "-v=8"], None);
    assert!(verbose.ok, "{}", verbose.stderr);
    assert!(verbose.stdout.contains("namespace/team-a created"));
    assert!(
        verbose
            .stderr
            .contains("Content-Type: application/vnd.kubernetes.protobuf"),
        "{}",
        verbose.stderr
    );
    assert!(verbose.stderr.contains("201 Created"), "{}", verbose.stderr);

    let n = ["-n", "team-a"];
    let cases: &[(&[&str], &str)] = &[
        (
            &["create", "configmap", "cm", "--from-literal=a=b"],
            "configmap/cm created",
        ),
        (
            &["create", "secret", "generic", "s", "--from-literal=k=v"],
            "secret/s created",
        ),
        (&["create", "serviceaccount", "sa"], "serviceaccount/sa created"),
        (&["create", "job", "j", "--image=busybox"], "job.batch/j created"),
        (
            &["create", "cronjob", "cj", "--image=busybox", "--schedule=*/5 * * * *"],
            "cronjob.batch/cj created",
        ),
        (
            &["create", "role", "r", "--verb=get,list", "--resource=pods"],
            "role.rbac.authorization.k8s.io/r created",
        ),
        (
            &[
                "create",
                "rolebinding",
                "rb",
                "--role=r",
                "--user=alice",
                "--serviceaccount=team-a:sa",
            ],
            "rolebinding.rbac.authorization.k8s.io/rb created",
        ),
        (
            &["create", "quota", "q", "--hard=pods=10,count/configmaps=5"],
            "resourcequota/q created",
        ),
        (
            &["create", "deployment", "web", "--image=nginx", "--replicas=2"],
            "deployment.apps/web created",
        ),
    ];
    for (args, expect) in cases {
        let mut a = args.to_vec();
        a.extend_from_slice(&n);
        assert_eq!(kubectl(&c, &a).trim(), *expect, "{args:?}");
    }
    for (args, expect) in [
        (
            vec!["create", "priorityclass", "high", "--value=1000"],
            "priorityclass.scheduling.k8s.io/high created",
        ),
        (
            vec!["create", "clusterrole", "cr", "--verb=get", "--resource=nodes"],
            "clusterrole.rbac.authorization.k8s.io/cr created",
        ),
        (
            vec![
                "create",
                "clusterrolebinding",
                "crb",
                "--clusterrole=cr",
                "--group=devs",
            ],
            "clusterrolebinding.rbac.authorization.k8s.io/crb created",
        ),
    ] {
        assert_eq!(kubectl(&c, &args).trim(), expect, "{args:?}");
    }
    // What was created reads back as sent (through JSON this time).
    assert_eq!(get(&c, &["configmap", "cm", "-n", "team-a"])["data"]["a"], "b");
    assert_eq!(get(&c, &["secret", "s", "-n", "team-a"])["data"]["k"], "dg==");
    let job = get(&c, &["job", "j", "-n", "team-a"]);
    assert_eq!(job["spec"]["template"]["spec"]["containers"][0]["image"], "busybox");
    assert_eq!(job["spec"]["template"]["spec"]["restartPolicy"], "Never");
    let cj = get(&c, &["cronjob", "cj", "-n", "team-a"]);
    assert_eq!(cj["spec"]["schedule"], "*/5 * * * *");
    assert_eq!(cj["spec"]["concurrencyPolicy"], "Allow");
    let rb = get(&c, &["rolebinding", "rb", "-n", "team-a"]);
    assert_eq!(rb["roleRef"]["kind"], "Role");
    assert_eq!(rb["subjects"].as_array().unwrap().len(), 2);
    assert_eq!(get(&c, &["priorityclass", "high"])["value"], 1000);
    assert_eq!(get(&c, &["clusterrolebinding", "crb"])["subjects"][0]["kind"], "Group");
    let deploy = get(&c, &["deployment", "web", "-n", "team-a"]);
    assert_eq!(deploy["spec"]["strategy"]["rollingUpdate"]["maxSurge"], "25%");
    // The quota controller counts what the namespace holds.
    until(&c, &["quota", "q", "-n", "team-a"], "quota usage", |q| {
        q["status"]["used"]["count/configmaps"] == "1" && q["status"]["hard"]["pods"] == "10"
    })
    .await;
    // Tables show their data.
    let roles = kubectl(&c, &["get", "rolebinding", "rb", "-n", "team-a", "-o", "wide"]);
    assert!(
        roles.contains("Role/r") && roles.contains("alice") && roles.contains("team-a/sa"),
        "{roles}"
    );
    // A review is answered, never stored; validation reports field paths.
    let bad = kubectl_in(
        &c,
        &[
            "create",
            "cronjob",
            "bad",
            "--image=busybox",
            "--schedule=61 * * * *",
            "-n",
            "team-a",
        ],
        None,
    );
    assert!(
        !bad.ok && bad.stderr.contains("spec.schedule: Invalid value"),
        "{}",
        bad.stderr
    );
    let bad = kubectl_in(
        &c,
        &["create", "rolebinding", "bad", "--clusterrole=x", "-n", "team-a"],
        None,
    );
    assert!(bad.ok, "a binding without subjects is valid: {}", bad.stderr);
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_can_i_and_whoami_answer_for_a_cluster_without_authorization() {
    let c = crate::common::cluster().await;
    assert_eq!(kubectl(&c, &["auth", "can-i", "create", "pods"]).trim(), "yes");
    assert_eq!(
        kubectl(&c, &["auth", "can-i", "delete", "nodes", "--all-namespaces"]).trim(),
        "yes"
    );
    let list = kubectl(&c, &["auth", "can-i", "--list"]);
    assert!(list.contains("*.*") && list.contains("[*]"), "{list}");
    let who = kubectl(&c, &["auth", "whoami", "-o", "json"]);
    assert_eq!(json(&who)["status"]["userInfo"]["username"], "kwas-dev");
    // Reviews are create-only.
    let get = kubectl_in(&c, &["get", "selfsubjectaccessreviews"], None);
    assert!(!get.ok, "{}", get.stdout);
    c.shutdown().await;
}

const WEB: &str = "apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      nodeName: node-b0-r0-n0
      containers: [{name: nginx, image: 'nginx:1.27'}]
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deployments_roll_out_scale_undo_and_expose() {
    let c = crate::common::cluster().await;
    kubectl_ok(&c, &["apply", "-f", "-"], Some(WEB));
    let status = kubectl(&c, &["rollout", "status", "deployment/web", "--timeout=30s"]);
    assert!(status.contains("successfully rolled out"), "{status}");
    let rs = get(&c, &["replicasets", "-l", "app=web"]);
    assert_eq!(rs["items"].as_array().unwrap().len(), 1);
    assert_eq!(
        rs["items"][0]["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        "1"
    );

    kubectl(&c, &["set", "image", "deployment/web", "nginx=nginx:1.28"]);
    let status = kubectl(&c, &["rollout", "status", "deployment/web", "--timeout=30s"]);
    assert!(status.contains("successfully rolled out"), "{status}");
    let pods = get(&c, &["pods", "-l", "app=web"]);
    let images: Vec<_> = pods["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .map(|p| p["spec"]["containers"][0]["image"].as_str().unwrap().to_string())
        .collect();
    assert!(images.iter().all(|i| i == "nginx:1.28"), "{images:?}");
    let history = kubectl(&c, &["rollout", "history", "deployment/web"]);
    assert!(history.contains("1 ") && history.contains("2 "), "{history}");
    // kubectl warns that undo does not update the last-applied annotation, as on any cluster.
    let undo = kubectl_in(&c, &["rollout", "undo", "deployment/web"], None);
    assert!(undo.ok && undo.stdout.contains("rolled back"), "{}", undo.stderr);
    kubectl(&c, &["rollout", "status", "deployment/web", "--timeout=30s"]);
    let d = get(&c, &["deployment", "web"]);
    assert_eq!(d["spec"]["template"]["spec"]["containers"][0]["image"], "nginx:1.27");

    // scale goes through the scale subresource.
    assert_eq!(
        kubectl(&c, &["scale", "deployment/web", "--replicas=3"]).trim(),
        "deployment.apps/web scaled"
    );
    until(&c, &["deployment", "web"], "3 available", |d| {
        d["status"]["availableReplicas"] == 3
    })
    .await;
    let table = kubectl(&c, &["get", "deployment", "web"]);
    assert!(table.contains("3/3"), "{table}");

    // expose creates a Service with a cluster IP.
    assert_eq!(
        kubectl(&c, &["expose", "deployment", "web", "--port=80", "--target-port=8080"]).trim(),
        "service/web exposed"
    );
    let svc = get(&c, &["service", "web"]);
    assert!(
        svc["spec"]["clusterIP"].as_str().unwrap().starts_with("10.96."),
        "{svc}"
    );
    assert_eq!(svc["spec"]["selector"]["app"], "web");
    assert_eq!(svc["spec"]["ports"][0]["targetPort"], 8080);
    kubectl(
        &c,
        &[
            "expose",
            "deployment",
            "web",
            "--name=web-np",
            "--port=80",
            "--type=NodePort",
        ],
    );
    let np = get(&c, &["service", "web-np"]);
    let port = np["spec"]["ports"][0]["nodePort"].as_i64().unwrap();
    assert!((30000..=32767).contains(&port), "{np}");
    let services = kubectl(&c, &["get", "services"]);
    assert!(services.contains(&format!("80:{port}/TCP")), "{services}");

    // Deleting the Deployment collects its ReplicaSets and pods.
    kubectl(&c, &["delete", "deployment", "web", "--wait=true"]);
    until(&c, &["pods", "-l", "app=web"], "pods gone", |p| {
        p["items"].as_array().unwrap().is_empty()
    })
    .await;
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statefulsets_start_in_order_and_scale_down_from_the_top() {
    let c = crate::common::cluster().await;
    let sts = "apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 3
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      nodeName: node-b0-r1-n0
      containers: [{name: db, image: postgres}]
";
    kubectl_ok(&c, &["apply", "-f", "-"], Some(sts));
    let status = kubectl(&c, &["rollout", "status", "statefulset/db", "--timeout=30s"]);
    assert!(
        status.contains("rolling update complete") || status.contains("roll out complete"),
        "{status}"
    );
    let pods = get(&c, &["pods", "-l", "app=db"]);
    let mut names: Vec<_> = pods["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    names.sort();
    assert_eq!(names, ["db-0", "db-1", "db-2"]);
    assert_eq!(
        pods["items"][0]["spec"]["hostname"].as_str().unwrap(),
        pods["items"][0]["metadata"]["name"].as_str().unwrap()
    );
    kubectl(&c, &["scale", "statefulset/db", "--replicas=1"]);
    until(&c, &["pods", "-l", "app=db"], "db-1 and db-2 gone", |p| {
        let names: Vec<_> = p["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["metadata"]["name"].as_str().unwrap())
            .collect();
        names == ["db-0"]
    })
    .await;
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_tell_what_the_simulated_kubelet_ran() {
    let c = crate::common::cluster().await;
    let pod = "apiVersion: v1
kind: Pod
metadata:
  name: blink
  annotations: {kwas.dev/sim-run-duration: 300ms}
spec:
  nodeName: node-b0-r0-n1
  restartPolicy: Always
  containers: [{name: app, image: busybox}, {name: side, image: envoy}]
";
    kubectl_ok(&c, &["apply", "-f", "-"], Some(pod));
    kubectl(
        &c,
        &[
            "wait",
            "--for=jsonpath={.status.containerStatuses[0].restartCount}=1",
            "pod/blink",
            "--timeout=30s",
        ],
    );
    let logs = kubectl(&c, &["logs", "blink", "-c", "app"]);
    assert!(
        logs.contains("started container app (image busybox) on node node-b0-r0-n1"),
        "{logs}"
    );
    assert!(logs.contains("will run for 300ms"), "{logs}");
    let previous = kubectl(&c, &["logs", "blink", "-c", "app", "--previous"]);
    assert!(
        previous.contains("ran for 300ms: exited with code 0 (Completed)"),
        "{previous}"
    );
    let stamped = kubectl(&c, &["logs", "blink", "-c", "side", "--timestamps", "--tail=1"]);
    assert_eq!(stamped.lines().count(), 1, "{stamped}");
    assert!(stamped.starts_with("20"), "{stamped}");
    // Two containers and none named: kube-apiserver's error; kubectl picks the first one itself.
    let all = kubectl_in(&c, &["logs", "blink", "--all-containers"], None);
    assert!(all.ok && all.stdout.contains("container side"), "{}", all.stderr);

    // follow streams until the container exits.
    let once = "apiVersion: v1
kind: Pod
metadata:
  name: once
  annotations: {kwas.dev/sim-run-duration: 500ms}
spec:
  nodeName: node-b0-r0-n1
  restartPolicy: Never
  containers: [{name: app, image: busybox}]
";
    kubectl_ok(&c, &["apply", "-f", "-"], Some(once));
    kubectl(&c, &["wait", "--for=condition=Ready", "pod/once", "--timeout=30s"]);
    let followed = kubectl(&c, &["logs", "-f", "once"]);
    assert!(followed.contains("exited with code 0"), "{followed}");
    // A pod with no node: upstream's error.
    kubectl_ok(&c, &["run", "nowhere", "--image=busybox"], None);
    let none = kubectl_in(&c, &["logs", "nowhere"], None);
    assert!(
        !none.ok && none.stderr.contains("does not have a host assigned"),
        "{}",
        none.stderr
    );
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cronjobs_create_jobs_on_schedule_and_quotas_refuse_what_exceeds_them() {
    let c = crate::common::cluster().await;
    kubectl(
        &c,
        &["create", "cronjob", "tick", "--image=busybox", "--schedule=@every 1s"],
    );
    let cj = until(&c, &["cronjob", "tick"], "a scheduled Job", |cj| {
        !cj["status"]["lastScheduleTime"].is_null()
    })
    .await;
    assert!(cj["status"]["active"].as_array().is_some_and(|a| !a.is_empty()), "{cj}");
    let jobs = get(&c, &["jobs"]);
    let job = &jobs["items"][0];
    assert!(job["metadata"]["name"].as_str().unwrap().starts_with("tick-"));
    assert_eq!(job["metadata"]["ownerReferences"][0]["kind"], "CronJob");
    assert!(job["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"].is_string());

    kubectl(&c, &["create", "quota", "two", "--hard=pods=2"]);
    kubectl_ok(&c, &["run", "a", "--image=busybox"], None);
    kubectl_ok(&c, &["run", "b", "--image=busybox"], None);
    let third = kubectl_in(&c, &["run", "c", "--image=busybox"], None);
    assert!(
        !third.ok
            && third
                .stderr
                .contains("exceeded quota: two, requested: pods=1, used: pods=2, limited: pods=2"),
        "{}",
        third.stderr
    );
    kubectl(&c, &["create", "quota", "cpu", "--hard=requests.cpu=1"]);
    let unsized_pod = kubectl_in(&c, &["run", "d", "--image=busybox"], None);
    assert!(
        !unsized_pod.ok && unsized_pod.stderr.contains("must specify requests.cpu"),
        "{}",
        unsized_pod.stderr
    );
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_and_top() {
    let c = crate::common::cluster().await;
    kubectl_ok(
        &c,
        &[
            "run",
            "w",
            "--image=busybox",
            "--overrides={\"spec\":{\"nodeName\":\"node-b0-r0-n0\"}}",
        ],
        None,
    );
    assert!(kubectl(&c, &["wait", "--for=condition=Ready", "pod/w", "--timeout=30s"]).contains("condition met"));
    assert!(
        kubectl(
            &c,
            &[
                "wait",
                "--for=jsonpath={.status.phase}=Running",
                "pod/w",
                "--timeout=30s"
            ]
        )
        .contains("condition met")
    );
    kubectl(&c, &["delete", "pod", "w", "--wait=false"]);
    let gone = kubectl_in(&c, &["wait", "--for=delete", "pod/w", "--timeout=30s"], None);
    assert!(gone.ok, "{}", gone.stderr);
    assert!(kubectl_in(&c, &["get", "pod", "w"], None).stderr.contains("NotFound"));
    // No metrics API is served: kubectl says so.
    let top = kubectl_in(&c, &["top", "pods"], None);
    assert!(
        !top.ok && top.stderr.contains("Metrics API not available"),
        "{}",
        top.stderr
    );
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cordon_and_drain_evict_through_protobuf() {
    let c = crate::common::cluster().await;
    for i in 0..3 {
        let name = format!("p{i}");
        kubectl_ok(
            &c,
            &[
                "run",
                &name,
                "--image=busybox",
                "--overrides={\"spec\":{\"nodeName\":\"node-b0-r1-n1\"}}",
            ],
            None,
        );
    }
    assert_eq!(
        kubectl(&c, &["cordon", "node-b0-r1-n1"]).trim(),
        "node/node-b0-r1-n1 cordoned"
    );
    // drain lists pods and posts policy/v1 Evictions through client-go's typed clients (protobuf), then
    // polls until the pods are gone.
    let drain = kubectl_in(
        &c,
        &["drain", "node-b0-r1-n1", "--force", "--timeout=30s", "-v=6"],
        None,
    );
    assert!(drain.ok, "{}", drain.stderr);
    assert!(drain.stdout.contains("node/node-b0-r1-n1 drained"), "{}", drain.stdout);
    assert!(drain.stderr.contains("pods/p0/eviction"), "{}", drain.stderr);
    let left = get(&c, &["pods", "--field-selector", "spec.nodeName=node-b0-r1-n1"]);
    assert!(left["items"].as_array().unwrap().is_empty(), "{left}");
    assert_eq!(
        kubectl(&c, &["uncordon", "node-b0-r1-n1"]).trim(),
        "node/node-b0-r1-n1 uncordoned"
    );
    c.shutdown().await;
}

/// A protobuf watch, read raw: length-prefixed `WatchEvent` frames whose objects are `k8s\0` envelopes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_protobuf_watch_streams_length_prefixed_frames() {
    let c = crate::common::cluster().await;
    kubectl(&c, &["create", "configmap", "watched", "--from-literal=a=b"]);
    let accept = [("Accept", "application/vnd.kubernetes.protobuf")];
    let (code, body) = crate::common::raw_bytes(
        &c,
        "GET",
        "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1",
        &accept,
        b"",
    )
    .await
    .unwrap();
    assert_eq!(code, 200);
    let mut frames = Vec::new();
    let mut rest = &body[..];
    while rest.len() >= 4 {
        let len = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
        assert!(rest.len() >= 4 + len, "a truncated frame");
        frames.push(&rest[4..4 + len]);
        rest = &rest[4 + len..];
    }
    assert!(rest.is_empty());
    let added = frames
        .iter()
        .find(|f| f.windows(7).any(|w| w == b"watched"))
        .expect("the ConfigMap's event");
    assert!(added.windows(5).any(|w| w == b"ADDED"));
    assert!(added.windows(4).any(|w| w == b"k8s\0"), "the object is enveloped");
    // An error answers a protobuf Status.
    let (code, body) = crate::common::raw_bytes(&c, "GET", "/api/v1/namespaces/default/configmaps/nope", &accept, b"")
        .await
        .unwrap();
    assert_eq!(code, 404);
    assert!(body.starts_with(b"k8s\0") && body.windows(8).any(|w| w == b"NotFound"));
    c.shutdown().await;
}

const STORAGE: &str = "apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: fast}
provisioner: sim-disk.kwas.dev
volumeBindingMode: Immediate
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: manual-pv}
spec:
  capacity: {storage: 5Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: manual
  hostPath: {path: /data/manual}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: wait}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 2Gi}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: now}
spec:
  storageClassName: fast
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: static}
spec:
  storageClassName: manual
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 3Gi}}
";

/// The first line of a table, its columns separated by single spaces.
fn header(table: &str) -> String {
    table
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The cells of the table row whose first cell is `name`.
fn row(table: &str, name: &str) -> Vec<String> {
    table
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .unwrap_or_else(|| panic!("no row {name} in\n{table}"))
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn storage_classes_volumes_and_claims_bind_and_provision() {
    let c = crate::common::cluster().await;
    let sc = kubectl(&c, &["get", "sc"]);
    assert_eq!(
        header(&sc),
        "NAME PROVISIONER RECLAIMPOLICY VOLUMEBINDINGMODE ALLOWVOLUMEEXPANSION AGE"
    );
    assert!(
        sc.lines().any(|l| l.starts_with("standard (default)")
            && l.contains("sim-disk.kwas.dev")
            && l.contains("WaitForFirstConsumer")),
        "{sc}"
    );
    kubectl_ok(&c, &["apply", "-f", "-"], Some(STORAGE));
    // The Immediate class provisions at once; the static volume binds its claim; the default class waits.
    until(&c, &["pvc", "now"], "the immediate claim bound", |p| {
        p["status"]["phase"] == "Bound"
    })
    .await;
    let static_claim = until(&c, &["pvc", "static"], "the static claim bound", |p| {
        p["status"]["phase"] == "Bound"
    })
    .await;
    assert_eq!(static_claim["spec"]["volumeName"], "manual-pv");
    assert_eq!(static_claim["status"]["capacity"]["storage"], "5Gi");
    let pvc = kubectl(&c, &["get", "pvc"]);
    assert_eq!(
        header(&pvc),
        "NAME STATUS VOLUME CAPACITY ACCESS MODES STORAGECLASS VOLUMEATTRIBUTESCLASS AGE"
    );
    assert_eq!(
        row(&pvc, "static")[..7],
        ["static", "Bound", "manual-pv", "5Gi", "RWO", "manual", "<unset>"]
    );
    assert_eq!(row(&pvc, "wait")[..4], ["wait", "Pending", "standard", "<unset>"]);
    let events = kubectl(&c, &["get", "events", "--field-selector", "involvedObject.name=wait"]);
    assert!(
        events.contains("WaitForFirstConsumer")
            && events.contains("waiting for first consumer to be created before binding"),
        "{events}"
    );
    // A scheduler picks a node: the claim is provisioned there and bound.
    kubectl(
        &c,
        &[
            "annotate",
            "pvc",
            "wait",
            "volume.kubernetes.io/selected-node=node-b0-r1-n0",
        ],
    );
    let wait = until(&c, &["pvc", "wait"], "the delayed claim bound", |p| {
        p["status"]["phase"] == "Bound"
    })
    .await;
    let volume = wait["spec"]["volumeName"].as_str().unwrap().to_string();
    assert_eq!(volume, format!("pvc-{}", wait["metadata"]["uid"].as_str().unwrap()));
    assert_eq!(
        wait["metadata"]["annotations"]["pv.kubernetes.io/bind-completed"],
        "yes"
    );
    assert_eq!(
        wait["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"],
        "yes"
    );
    let pv = get(&c, &["pv", &volume]);
    assert_eq!(
        pv["metadata"]["annotations"]["pv.kubernetes.io/provisioned-by"],
        "sim-disk.kwas.dev"
    );
    assert_eq!(pv["spec"]["csi"]["driver"], "sim-disk.kwas.dev");
    assert_eq!(
        pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0],
        json(r#"{"key": "kubernetes.io/hostname", "operator": "In", "values": ["node-b0-r1-n0"]}"#)
    );
    assert_eq!(pv["metadata"]["labels"]["topology.kubernetes.io/zone"], "zone-0");
    let pvs = kubectl(&c, &["get", "pv"]);
    assert_eq!(
        header(&pvs),
        "NAME CAPACITY ACCESS MODES RECLAIM POLICY STATUS CLAIM STORAGECLASS VOLUMEATTRIBUTESCLASS REASON AGE"
    );
    assert_eq!(
        row(&pvs, &volume)[..7],
        [
            volume.as_str(),
            "2Gi",
            "RWO",
            "Delete",
            "Bound",
            "default/wait",
            "standard"
        ]
    );
    assert_eq!(
        row(&pvs, "manual-pv")[..6],
        ["manual-pv", "5Gi", "RWO", "Retain", "Bound", "default/static"]
    );
    let events = kubectl(&c, &["get", "events", "--field-selector", "involvedObject.name=wait"]);
    assert!(events.contains("ProvisioningSucceeded"), "{events}");
    // Everything at once, as `kubectl get` prints several kinds.
    let all = kubectl(&c, &["get", "sc,pv,pvc,pdb,csidrivers,csinodes"]);
    for want in [
        "storageclass.storage.k8s.io/standard",
        "persistentvolume/manual-pv",
        "persistentvolumeclaim/wait",
        "csidriver.storage.k8s.io/sim-disk.kwas.dev",
        "csinode.storage.k8s.io/node-b0-r0-n0",
    ] {
        assert!(all.contains(want), "{want} missing from\n{all}");
    }
    // Validation answers with field paths; a Retain volume outlives its claim as Released.
    let bad = kubectl_in(
        &c,
        &["apply", "-f", "-"],
        Some(
            "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: bad}\nspec: {resources: {requests: {storage: 1Gi}}}\n",
        ),
    );
    assert!(
        !bad.ok
            && bad
                .stderr
                .contains("spec.accessModes: Required value: at least 1 access mode is required"),
        "{}",
        bad.stderr
    );
    kubectl(&c, &["delete", "pvc", "static", "now"]);
    until(&c, &["pv", "manual-pv"], "the static volume released", |p| {
        p["status"]["phase"] == "Released"
    })
    .await;
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disruption_budgets_hold_drain_until_they_allow_it() {
    let c = crate::common::cluster().await;
    // `create pdb` sends protobuf, like every create generator.
    assert_eq!(
        kubectl(&c, &["create", "pdb", "web", "--selector=app=web", "--min-available=2"]).trim(),
        "poddisruptionbudget.policy/web created"
    );
    kubectl_ok(&c, &["apply", "-f", "-"], Some(WEB));
    kubectl(&c, &["rollout", "status", "deployment/web", "--timeout=30s"]);
    let pdb = until(&c, &["pdb", "web"], "the budget counting the pods", |b| {
        b["status"]["currentHealthy"] == 2 && b["status"]["observedGeneration"] == 1
    })
    .await;
    assert_eq!(pdb["status"]["disruptionsAllowed"], 0);
    assert_eq!(pdb["status"]["expectedPods"], 2);
    assert_eq!(pdb["status"]["conditions"][0]["reason"], "InsufficientPods");
    let table = kubectl(&c, &["get", "pdb"]);
    assert_eq!(
        header(&table),
        "NAME MIN AVAILABLE MAX UNAVAILABLE ALLOWED DISRUPTIONS AGE"
    );
    assert_eq!(row(&table, "web")[..4], ["web", "2", "N/A", "0"]);
    // drain is refused with 429 and retries until its timeout.
    let stuck = kubectl_in(&c, &["drain", "node-b0-r0-n0", "--timeout=7s"], None);
    assert!(!stuck.ok, "{}", stuck.stdout);
    assert!(
        stuck
            .stderr
            .contains("Cannot evict pod as it would violate the pod's disruption budget.")
            && stuck.stderr.contains("will retry after 5s"),
        "{}",
        stuck.stderr
    );
    assert_eq!(
        get(
            &c,
            &[
                "pods",
                "-l",
                "app=web",
                "--field-selector",
                "spec.nodeName=node-b0-r0-n0"
            ]
        )["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
            .count(),
        2
    );
    // With room for one disruption, drain evicts one pod, waits for its replacement, then the other.
    kubectl(
        &c,
        &[
            "patch",
            "pdb",
            "web",
            "--type=merge",
            "-p",
            r#"{"spec":{"minAvailable":1}}"#,
        ],
    );
    until(&c, &["pdb", "web"], "one disruption allowed", |b| {
        b["status"]["disruptionsAllowed"] == 1 && b["status"]["observedGeneration"] == 2
    })
    .await;
    let drain = kubectl_in(&c, &["drain", "node-b0-r0-n0", "--timeout=60s"], None);
    assert!(drain.ok, "{}", drain.stderr);
    assert!(drain.stdout.contains("node/node-b0-r0-n0 drained"), "{}", drain.stdout);
    c.shutdown().await;
}

/// The Job admission runs upstream's validation of the failure and success policies: `kubectl apply` of an
/// invalid policy is refused with every cause at its field path, a valid one is stored, and the policy
/// fields are immutable afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_policies_are_validated_as_kube_apiserver_does() {
    let c = crate::common::cluster().await;
    let job = |name: &str, extra: &str| {
        format!(
            "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {name}\nspec:\n{extra}  template:\n    spec:\n      \
             restartPolicy: Never\n      containers:\n      - name: main\n        image: busybox\n"
        )
    };
    let bad = job(
        "bad",
        "  podFailurePolicy:\n    rules:\n    - action: FailIndex\n      onExitCodes: {operator: In, values: [0, 2, 1]}\n    \
         - action: Ignore\n  successPolicy:\n    rules: [{succeededCount: 1}]\n",
    );
    let out = kubectl_in(&c, &["apply", "-f", "-"], Some(&bad));
    assert!(!out.ok, "an invalid Job was accepted: {}", out.stdout);
    for cause in [
        "spec.podFailurePolicy.rules[0].action: Invalid value: \"FailIndex\": requires the backoffLimitPerIndex to be set",
        "spec.podFailurePolicy.rules[0].onExitCodes.values[0]: Invalid value: 0: must not be 0 for the In operator",
        "spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value: \"[0, 2, 1]\": must be ordered",
        "spec.podFailurePolicy.rules[1]: Invalid value: specifying one of OnExitCodes and OnPodConditions is required",
        "spec.successPolicy: Invalid value: requires indexed completion mode",
    ] {
        assert!(out.stderr.contains(cause), "missing {cause:?} in:\n{}", out.stderr);
    }
    assert!(out.stderr.contains("is invalid"), "{}", out.stderr);

    let good = job(
        "good",
        "  podFailurePolicy:\n    rules:\n    - action: Ignore\n      onPodConditions: [{type: DisruptionTarget}]\n",
    );
    kubectl_ok(&c, &["apply", "-f", "-"], Some(&good));
    let patch = r#"{"spec":{"podFailurePolicy":{"rules":[{"action":"Count","onPodConditions":[{"type":"DisruptionTarget"}]}]}}}"#;
    let out = kubectl_in(&c, &["patch", "job", "good", "--type=merge", "-p", patch], None);
    assert!(!out.ok, "podFailurePolicy changed: {}", out.stdout);
    assert!(
        out.stderr.contains("spec.podFailurePolicy: Invalid value") && out.stderr.contains("field is immutable"),
        "{}",
        out.stderr
    );
}
