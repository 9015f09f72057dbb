//! `kwas controllers` as a process against devcluster: it serves its admin endpoints and reconciles Jobs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use kwas_test_tools::wait::eventually_within;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::scheduling::v1alpha3::Workload;
use kube::api::{Api, ListParams, PostParams};
use kwas_devcluster::{DevCluster, DevClusterConfig};

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.write_all(format!("GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").as_bytes())
        .ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    let code = out.split_whitespace().nth(1)?.parse().ok()?;
    Some((code, out.split("\r\n\r\n").nth(1).unwrap_or_default().to_string()))
}

/// How long a component has to come up and act.
const T: Duration = Duration::from_secs(20);

/// Polls `/metrics` until it contains `needle` (a 200 answer), failing with the last answer.
async fn wait_for_metric(port: u16, needle: &str) {
    eventually_within(T, format!("{needle} in /metrics"), || {
        let metrics = get(port, "/metrics");
        std::future::ready(match &metrics {
            Some((200, body)) if body.contains(needle) => Ok(()),
            _ => Err(format!("{metrics:?}")),
        })
    })
    .await
}

/// Polls `/readyz` until it answers 200.
async fn wait_ready(port: u16) {
    eventually_within(T, "/readyz to answer 200", || {
        std::future::ready(match get(port, "/readyz") {
            Some((200, _)) => Ok(()),
            other => Err(format!("{other:?}")),
        })
    })
    .await
}

#[tokio::test]
async fn controllers_serve_admin_endpoints_and_reconcile_jobs() {
    let cluster = DevCluster::start(DevClusterConfig::default()).await.unwrap();
    let port = free_port();
    let _proc = Killed(
        Command::new(env!("CARGO_BIN_EXE_kwas"))
            .args(["controllers", "--kubeconfig"])
            .arg(cluster.kubeconfig_path())
            .args(["--manage-unset-jobs", "--admin-addr", &format!("127.0.0.1:{port}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_ready(port).await;
    assert_eq!(get(port, "/healthz").unwrap().0, 200);
    let job: Job = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "j", "namespace": "default"},
        "spec": {"parallelism": 2, "scheduling": {"schedulingPolicy": {"gang": {}}}, "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}}
    }))
    .unwrap();
    Api::<Job>::namespaced(cluster.client(), "default")
        .create(&PostParams::default(), &job)
        .await
        .unwrap();
    let workloads: Api<Workload> = Api::namespaced(cluster.client(), "default");
    eventually_within(T, "the Job's Workload", || async {
        !workloads.list(&ListParams::default()).await.unwrap().items.is_empty()
    })
    .await;
    // The Workload exists before the reconcile that created it has finished and been counted: wait for
    // the count, not for a duration.
    let counted = "kwas_controller_reconciles_total{controller=\"job\",result=\"success\"}";
    wait_for_metric(port, counted).await;
    cluster.shutdown().await;
}

#[tokio::test]
async fn scheduler_serves_admin_endpoints_and_binds_pods() {
    use k8s_openapi::api::core::v1::Pod;
    let cluster = DevCluster::start(DevClusterConfig {
        topology: kwas_devcluster::Topology::grid(1, 1, 2, kwas_devcluster::Capacity::default()),
        ..Default::default()
    })
    .await
    .unwrap();
    let port = free_port();
    let _proc = Killed(
        Command::new(env!("CARGO_BIN_EXE_kwas"))
            .args(["scheduler", "--kubeconfig"])
            .arg(cluster.kubeconfig_path())
            .args(["--admin-addr", &format!("127.0.0.1:{port}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_ready(port).await;
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"schedulerName": "kwas-scheduler", "containers": [{"name": "c", "image": "i"}]}
    }))
    .unwrap();
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    pods.create(&PostParams::default(), &pod).await.unwrap();
    eventually_within(T, "the pod bound", || async {
        pods.get("p").await.unwrap().spec.unwrap().node_name.is_some()
    })
    .await;
    wait_for_metric(port, "kwas_scheduler_pods_scheduled_total 1").await;
    cluster.shutdown().await;
}
