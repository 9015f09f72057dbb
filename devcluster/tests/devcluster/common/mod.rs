//! Shared helpers for the devcluster integration tests.
#![allow(dead_code)]

use std::path::PathBuf;
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

/// The toolkit's wait (polls a condition, reports what it last saw on timeout).
pub use kwas_test_tools::wait::eventually_within;

/// A python3 that has the `kubernetes` client 37, provisioned by `kwas-test-tools` when missing.
pub fn python_path() -> PathBuf {
    kwas_test_tools::python().unwrap_or_else(|e| panic!("the Kubernetes Python client 37 is not available: {e}"))
}

/// The output of one kubectl run.
pub use kwas_test_tools::run::Run as Out;

/// Runs kubectl 1.37 against a cluster with `stdin` as input.
pub fn kubectl_in(cluster: &DevCluster, args: &[&str], stdin: Option<&str>) -> Out {
    kwas_test_tools::run::kubectl(cluster.kubeconfig_path(), args, stdin)
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

/// One raw HTTP/1.0 request to the cluster, for what typed clients never send (forged tokens, hostile
/// headers and bodies). `Host` is the cluster's address unless `headers` sets one. Returns the status code
/// and the body; `None` when the connection failed or was dropped without an answer.
pub async fn raw(
    cluster: &DevCluster,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Option<(u16, String)> {
    let (code, bytes) = raw_bytes(cluster, method, path, headers, body).await?;
    Some((code, String::from_utf8_lossy(&bytes).to_string()))
}

/// [`raw`], with the body as bytes.
pub async fn raw_bytes(
    cluster: &DevCluster,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Option<(u16, Vec<u8>)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = cluster.base_url().trim_start_matches("http://").to_string();
    let mut stream = tokio::net::TcpStream::connect(&addr).await.ok()?;
    let mut req = format!("{method} {path} HTTP/1.0\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        req.push_str(&format!("Host: {addr}\r\n"));
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    stream.write_all(req.as_bytes()).await.ok()?;
    stream.write_all(body).await.ok()?;
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut out))
        .await
        .ok()?
        .ok()?;
    let split = out.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&out[..split]).to_string();
    let code = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((code, out[split + 4..].to_vec()))
}

pub async fn raw_status(cluster: &DevCluster, path: &str) -> Option<u16> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = cluster.base_url().trim_start_matches("http://").to_string();
    let mut stream = tokio::net::TcpStream::connect(&addr).await.ok()?;
    let req = format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n");
    stream.write_all(req.as_bytes()).await.ok()?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 256];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = tokio::time::timeout(Duration::from_secs(20), stream.read(&mut chunk))
            .await
            .ok()?
            .ok()?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    String::from_utf8_lossy(&buf).split_whitespace().nth(1)?.parse().ok()
}
