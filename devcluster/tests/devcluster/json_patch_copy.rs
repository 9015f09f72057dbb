//! A JSON patch whose `copy` operations double a large value is refused before the copies are made:
//! kube-apiserver caps what the copies of one patch add at 3 MiB (json-patch's
//! `AccumulatedCopySizeLimit`, set from `JSONPatchMaxCopyBytes`). This test has its own binary because it
//! measures the process's memory (the server runs in it), which other tests would disturb.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

/// A field of `/proc/self/status` in KiB (`VmHWM`, `VmRSS`).
fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/self/status"))
}

/// The server answers a GET within a second and still creates objects.
async fn still_serving(c: &kwas_devcluster::DevCluster, tag: &str) {
    let cms: Api<ConfigMap> = Api::default_namespaced(c.client());
    let started = Instant::now();
    tokio::time::timeout(Duration::from_secs(1), cms.get("big"))
        .await
        .expect("a GET answered within one second")
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(1));
    let fresh: ConfigMap = serde_json::from_value(json!({"metadata": {"name": format!("after-{tag}")}})).unwrap();
    cms.create(&PostParams::default(), &fresh).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_json_patch_of_doubling_copies_on_a_1mb_configmap_is_refused_before_the_server_grows() {
    let c = crate::common::cluster().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(c.client());
    let big: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "big"}, "data": {"a": "x".repeat(1_000_000)}})).unwrap();
    cms.create(&PostParams::default(), &big).await.unwrap();
    // Each copy doubles `data`: unchecked, 12 of them make a 4 GiB object out of 638 bytes.
    let ops: Vec<Value> = (0..12)
        .map(|i| json!({"op": "copy", "from": "/data", "path": format!("/data/c{i}")}))
        .collect();
    let body = Value::Array(ops).to_string();
    assert!(body.len() < 700, "{}", body.len());
    let hwm_before = status_kib("VmHWM");
    let rss_before = status_kib("VmRSS");
    let started = Instant::now();
    let (code, text) = crate::common::raw(
        &c,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/big",
        &[("Content-Type", "application/json-patch+json")],
        body.as_bytes(),
    )
    .await
    .unwrap();
    let took = started.elapsed();
    let hwm_after = status_kib("VmHWM");
    let rss_after = status_kib("VmRSS");
    println!(
        "copy patch answered {code} in {took:?}; VmHWM {hwm_before} -> {hwm_after} KiB, VmRSS {rss_before} -> {rss_after} KiB"
    );
    assert_eq!(code, 422, "{text}");
    let status: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(status["reason"], "Invalid", "{text}");
    assert_eq!(
        status["message"], "the server rejected our request due to an error in our request",
        "{text}"
    );
    // The copies stop at 3 MiB, a few times the 1 MB object in all: far from the gigabytes unchecked.
    let grown_mib = hwm_after.saturating_sub(hwm_before) / 1024;
    assert!(grown_mib < 64, "the server's peak memory grew by {grown_mib} MiB");
    // Copies within the limit still apply.
    let (code, text) = crate::common::raw(
        &c,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/big",
        &[("Content-Type", "application/json-patch+json")],
        json!([{"op": "add", "path": "/data/small", "value": "s"},
               {"op": "copy", "from": "/data/small", "path": "/data/copied"}])
        .to_string()
        .as_bytes(),
    )
    .await
    .unwrap();
    assert_eq!(code, 200, "{text}");
    let stored = cms.get("big").await.unwrap();
    assert_eq!(stored.data.unwrap()["copied"], "s");
    still_serving(&c, "copies").await;
    c.shutdown().await;
}
