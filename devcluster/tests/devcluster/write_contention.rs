//! Writes under contention: an expensive request body is worked on outside the cluster lock, so other
//! clients keep being served while it runs, and concurrent patches of one object each apply exactly once
//! (the write re-checks the object's resourceVersion when it commits and recomputes on a change, as
//! kube-apiserver's GuaranteedUpdate does).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kwas_devcluster::DevCluster;
use serde_json::{Value, json};

fn configmap(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"k": "v"}})).unwrap()
}

/// The server answers a GET within a second and still creates objects.
async fn still_serving(c: &DevCluster, tag: &str) {
    let cms: Api<ConfigMap> = Api::default_namespaced(c.client());
    let started = Instant::now();
    tokio::time::timeout(Duration::from_secs(1), cms.get("probe"))
        .await
        .expect("a GET answered within one second")
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(1));
    cms.create(&PostParams::default(), &configmap(&format!("after-{tag}")))
        .await
        .unwrap();
}

/// GETs `probe` in a loop until `stop`, recording the slowest answer (in microseconds) and the count.
fn probe_latency(
    c: &DevCluster,
    stop: Arc<AtomicBool>,
) -> (tokio::task::JoinHandle<()>, Arc<AtomicU64>, Arc<AtomicU64>) {
    let cms: Api<ConfigMap> = Api::default_namespaced(c.client());
    let slowest = Arc::new(AtomicU64::new(0));
    let answered = Arc::new(AtomicU64::new(0));
    let (s, a) = (slowest.clone(), answered.clone());
    let task = tokio::spawn(async move {
        while !stop.load(Ordering::SeqCst) {
            let started = Instant::now();
            cms.get("probe").await.unwrap();
            let micros = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
            s.fetch_max(micros, Ordering::SeqCst);
            a.fetch_add(1, Ordering::SeqCst);
        }
    });
    (task, slowest, answered)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_200000_item_strategic_merge_patch_does_not_hold_up_other_clients() {
    let c = crate::common::cluster().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(c.client());
    cms.create(&PostParams::default(), &configmap("probe")).await.unwrap();
    cms.create(&PostParams::default(), &configmap("target")).await.unwrap();
    // `$setElementOrder/x` makes `x` a list merged by `k`: 200,000 entries merged one by one.
    let items: Vec<Value> = (0..200_000).map(|i| json!({"k": i})).collect();
    let body = json!({"$setElementOrder/x": [{"k": 0}], "x": items}).to_string();
    assert!(body.len() < 3 * 1024 * 1024, "{}", body.len());
    let stop = Arc::new(AtomicBool::new(false));
    let (probe, slowest, answered) = probe_latency(&c, stop.clone());
    crate::common::eventually_within(Duration::from_secs(10), "the probe's first answer", || async {
        (answered.load(Ordering::SeqCst) > 0).then_some(())
    })
    .await;
    let before = answered.load(Ordering::SeqCst);
    let started = Instant::now();
    let (code, text) = crate::common::raw(
        &c,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/target",
        &[("Content-Type", "application/strategic-merge-patch+json")],
        body.as_bytes(),
    )
    .await
    .expect("the patch is answered");
    let took = started.elapsed();
    // The probe answered while the patch ran, then once more after it.
    let during = answered.load(Ordering::SeqCst) - before;
    crate::common::eventually_within(Duration::from_secs(10), "the probe's answer after the patch", || {
        let answered = answered.clone();
        async move { (answered.load(Ordering::SeqCst) > before + during).then_some(()) }
    })
    .await;
    stop.store(true, Ordering::SeqCst);
    probe.await.unwrap();
    let slowest = Duration::from_micros(slowest.load(Ordering::SeqCst));
    println!("the patch answered {code} in {took:?}; {during} GETs meanwhile, the slowest in {slowest:?}");
    assert!(
        code == 200 || (400..500).contains(&code),
        "{code}: {}",
        &text[..text.len().min(500)]
    );
    assert!(slowest < Duration::from_secs(1), "a GET waited {slowest:?}");
    still_serving(&c, "smp").await;
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_patches_of_one_object_each_apply_exactly_once() {
    let c = crate::common::cluster().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(c.client());
    cms.create(&PostParams::default(), &configmap("probe")).await.unwrap();
    let shared: ConfigMap = serde_json::from_value(
        json!({"metadata": {"name": "shared", "finalizers": ["example.com/keep"]}, "data": {"k": "v"}}),
    )
    .unwrap();
    let created = cms.create(&PostParams::default(), &shared).await.unwrap();
    let writers = 48;
    let mut tasks = Vec::new();
    for i in 0..writers {
        let cms = cms.clone();
        tasks.push(tokio::spawn(async move {
            // An append: applied twice, it would leave the finalizer twice; lost, not at all.
            let append = json!([{"op": "add", "path": "/metadata/finalizers/-", "value": format!("example.com/w{i}")}]);
            let appended = cms
                .patch(
                    "shared",
                    &PatchParams::default(),
                    &Patch::Json::<()>(serde_json::from_value(append).unwrap()),
                )
                .await
                .unwrap();
            // A label by strategic merge, one by merge patch: each must survive every other writer's.
            let label = json!({"metadata": {"labels": {format!("s{i}"): "x"}}});
            cms.patch("shared", &PatchParams::default(), &Patch::Strategic(label))
                .await
                .unwrap();
            let label = json!({"metadata": {"labels": {format!("m{i}"): "x"}}});
            cms.patch("shared", &PatchParams::default(), &Patch::Merge(label))
                .await
                .unwrap();
            appended.resource_version().unwrap()
        }));
    }
    let mut versions = BTreeSet::new();
    for t in tasks {
        versions.insert(t.await.unwrap());
    }
    assert_eq!(
        versions.len(),
        writers,
        "each append committed on its own resourceVersion"
    );
    let shared = cms.get("shared").await.unwrap();
    let finalizers = shared.finalizers().to_vec();
    assert_eq!(finalizers.len(), writers + 1, "{finalizers:?}");
    let distinct: BTreeSet<&String> = finalizers.iter().collect();
    assert_eq!(distinct.len(), writers + 1, "{finalizers:?}");
    let labels = shared.labels();
    for i in 0..writers {
        assert!(labels.contains_key(&format!("s{i}")), "{labels:?}");
        assert!(labels.contains_key(&format!("m{i}")), "{labels:?}");
    }
    let first: u64 = created.resource_version().unwrap().parse().unwrap();
    let last: u64 = shared.resource_version().unwrap().parse().unwrap();
    assert!(last >= first + 3 * writers as u64, "{first} -> {last}");
    still_serving(&c, "burst").await;
    c.shutdown().await;
}
