//! Shared helpers for the devcluster integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use kwas_devcluster::{DevCluster, DevClusterConfig};

/// A cluster tuned for tests: 4 nodes (2 racks x 2), fast kubelet, frequent bookmarks and sweeps.
pub async fn cluster() -> DevCluster {
    cluster_with(|_| {}).await
}

/// A test cluster with a configuration tweak.
pub async fn cluster_with(tweak: impl FnOnce(&mut DevClusterConfig)) -> DevCluster {
    let mut config = kwas_devcluster::testing::fast_config(kwas_devcluster::testing::small_topology());
    tweak(&mut config);
    DevCluster::start(config).await.expect("devcluster starts")
}

/// Polls `f` until it returns `Some`, or panics after `timeout` with `what`.
pub async fn eventually<T, F, Fut>(timeout: Duration, what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(v) = f().await {
            return v;
        }
        if tokio::time::Instant::now() > deadline {
            panic!("timed out after {timeout:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// kubectl 1.37, provisioned by `kwas-test-tools` when missing (a missing tool fails the test).
pub fn kubectl_path() -> PathBuf {
    kwas_test_tools::kubectl().unwrap_or_else(|e| panic!("kubectl 1.37 is not available: {e}"))
}

/// A python3 that has the `kubernetes` client 37, provisioned by `kwas-test-tools` when missing.
pub fn python_path() -> PathBuf {
    kwas_test_tools::python().unwrap_or_else(|e| panic!("the Kubernetes Python client 37 is not available: {e}"))
}

/// The output of one kubectl run.
#[derive(Debug)]
pub struct Out {
    pub ok: bool,
    pub stdout: String,
    pub stderr: String,
}

/// Runs kubectl against a cluster with `stdin` as input.
pub fn kubectl_in(cluster: &DevCluster, args: &[&str], stdin: Option<&str>) -> Out {
    use std::io::Write;
    let mut cmd = Command::new(kubectl_path());
    cmd.args(args)
        .env("KUBECONFIG", cluster.kubeconfig_path())
        .env("HOME", cluster.kubeconfig_path().parent().unwrap_or(Path::new("/tmp")))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().expect("kubectl runs");
    if let Some(input) = stdin {
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(input.as_bytes())
            .expect("write stdin");
    }
    drop(child.stdin.take());
    let out = child.wait_with_output().expect("kubectl finishes");
    Out {
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs kubectl and asserts it succeeded without printing warnings; returns stdout.
pub fn kubectl(cluster: &DevCluster, args: &[&str]) -> String {
    kubectl_ok(cluster, args, None)
}

/// Like [`kubectl`] with input.
pub fn kubectl_ok(cluster: &DevCluster, args: &[&str], stdin: Option<&str>) -> String {
    let out = kubectl_in(cluster, args, stdin);
    assert!(
        out.ok,
        "kubectl {args:?} failed:\nstdout: {}\nstderr: {}",
        out.stdout, out.stderr
    );
    assert!(
        !out.stderr.to_lowercase().contains("warning") && !out.stderr.contains("error"),
        "kubectl {args:?} printed to stderr: {}",
        out.stderr
    );
    out.stdout
}
