//! `kwas controllers` as a process against devcluster: it serves its admin endpoints and reconciles Jobs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

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

/// Polls `/metrics` until it contains `needle` (a 200 answer), failing with the last body at `deadline`.
async fn wait_for_metric(port: u16, needle: &str, deadline: Instant) {
    loop {
        let metrics = get(port, "/metrics");
        if let Some((200, body)) = &metrics
            && body.contains(needle)
        {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{needle} never appeared in /metrics: {metrics:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
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
    let deadline = Instant::now() + Duration::from_secs(20);
    while get(port, "/readyz").map(|r| r.0) != Some(200) {
        assert!(Instant::now() < deadline, "readyz");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
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
    while workloads.list(&ListParams::default()).await.unwrap().items.is_empty() {
        assert!(Instant::now() < deadline, "the Job's Workload");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The Workload exists before the reconcile that created it has finished and been counted: wait for
    // the count, not for a duration.
    let counted = "kwas_controller_reconciles_total{controller=\"job\",result=\"success\"}";
    wait_for_metric(port, counted, deadline).await;
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
    let deadline = Instant::now() + Duration::from_secs(20);
    while get(port, "/readyz").map(|r| r.0) != Some(200) {
        assert!(Instant::now() < deadline, "readyz");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"schedulerName": "kwas-scheduler", "containers": [{"name": "c", "image": "i"}]}
    }))
    .unwrap();
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    pods.create(&PostParams::default(), &pod).await.unwrap();
    while pods.get("p").await.unwrap().spec.unwrap().node_name.is_none() {
        assert!(Instant::now() < deadline, "the pod bound");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    wait_for_metric(port, "kwas_scheduler_pods_scheduled_total 1", deadline).await;
    cluster.shutdown().await;
}
