//! `load`: the write-plus-watch-fan-out load of clusterloader2's "load" test, scaled to one machine: many
//! concurrent writers create and update ConfigMaps through kube-rs while 100 watches stream every change
//! of the resource.
//!
//! Reports writes/s and per-write latency percentiles, and checks that every watch received every event.
//!
//! ```sh
//! cargo bench -p kwas-devcluster --bench load
//! # knobs: LOAD_WRITES (default 20000), LOAD_WRITERS (32), LOAD_WATCHES (100)
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::AsyncBufReadExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kwas_devcluster::{DevCluster, DevClusterConfig, KubeletConfig};
use serde_json::json;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` would pass other flags: only run when benching.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(run());
}

async fn run() {
    let writes = env("LOAD_WRITES", 20_000);
    let writers = env("LOAD_WRITERS", 32);
    let watches = env("LOAD_WATCHES", 100);
    let cluster = DevCluster::start(DevClusterConfig {
        kubelet: KubeletConfig {
            enabled: false,
            ..Default::default()
        },
        watch_history: 50_000,
        ..Default::default()
    })
    .await
    .unwrap();
    let client = cluster.client();
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let rv = cms
        .list(&Default::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();

    // Watchers count event lines on the raw stream, so the measurement is the server's, not JSON decoding.
    let received: Arc<Vec<AtomicU64>> = Arc::new((0..watches).map(|_| AtomicU64::new(0)).collect());
    let mut watch_tasks = Vec::new();
    for i in 0..watches {
        let client = client.clone();
        let received = received.clone();
        let rv = rv.clone();
        watch_tasks.push(tokio::spawn(async move {
            let req = axum::http::Request::get(format!(
                "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={rv}&timeoutSeconds=600"
            ))
            .body(Vec::new())
            .unwrap();
            let mut lines = client.request_stream(req).await.unwrap().lines();
            use futures::StreamExt;
            while let Some(Ok(_)) = lines.next().await {
                received[i].fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;

    let per_writer = writes / writers;
    let owned = 32.min(per_writer).max(1);
    let total = per_writer * writers;
    let start = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..writers {
        let cms = cms.clone();
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::with_capacity(per_writer);
            for i in 0..per_writer {
                // Each writer creates its own objects, then keeps updating them.
                let name = format!("cm-{w}-{}", i % owned);
                let t = Instant::now();
                if i < owned {
                    let cm: ConfigMap =
                        serde_json::from_value(json!({"metadata": {"name": name}, "data": {"v": "0"}})).unwrap();
                    cms.create(&PostParams::default(), &cm).await.unwrap();
                } else {
                    cms.patch(
                        &name,
                        &PatchParams::default(),
                        &Patch::Merge(json!({"data": {"v": i.to_string()}})),
                    )
                    .await
                    .unwrap();
                }
                lat.push(t.elapsed());
            }
            lat
        }));
    }
    let mut latencies = Vec::with_capacity(total);
    for t in tasks {
        latencies.extend(t.await.unwrap());
    }
    let elapsed = start.elapsed();
    let deadline = Instant::now() + Duration::from_secs(60);
    while received.iter().any(|r| r.load(Ordering::Relaxed) < total as u64) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let fanout_done = start.elapsed();
    let min_received = received.iter().map(|r| r.load(Ordering::Relaxed)).min().unwrap_or(0);
    latencies.sort();
    println!("load: {total} writes by {writers} writers, {watches} watches");
    println!("  writes/s:        {:.0}", total as f64 / elapsed.as_secs_f64());
    println!(
        "  write latency:   p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        percentile(&latencies, 0.50).as_secs_f64() * 1e3,
        percentile(&latencies, 0.99).as_secs_f64() * 1e3,
        latencies.last().unwrap().as_secs_f64() * 1e3
    );
    println!(
        "  watch delivery:  every watch got {min_received}/{total} events; all delivered {:.2} s after the first write",
        fanout_done.as_secs_f64()
    );
    assert_eq!(min_received, total as u64, "a watch missed events");
    for t in watch_tasks {
        t.abort();
    }
    cluster.shutdown().await;
}
