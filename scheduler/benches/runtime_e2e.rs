//! End-to-end throughput of the scheduler runtime on devcluster: pods/s from the first pod's
//! creation until every pod is bound, through the real API (informers, `pods/binding`, status
//! writes and events), for workloads named after upstream's scheduler_perf ones.
//!
//! ```sh
//! cargo bench -p kwas-scheduler --bench runtime_e2e            # all workloads
//! cargo bench -p kwas-scheduler --bench runtime_e2e -- Gang     # a subset
//! ```
//!
//! Everything runs in one process on this machine: the API server, the scheduler and the clients
//! creating the objects share its cores. The kubelet is off (as in scheduler_perf), so pods stay
//! bound and Pending.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kube::api::{Api, PostParams};
use kwas_api_types::v1alpha3::PodGroup;
use kwas_devcluster::{Capacity, DevCluster, DevClusterConfig, KubeletConfig, Topology};
use kwas_scheduler::core::testing::{GroupBuilder, pod_with};
use kwas_scheduler::runtime::{RuntimeConfig, SchedulerRuntime};

const NS: &str = "default";
const CREATORS: usize = 16;

struct Workload {
    name: &'static str,
    racks: u32,
    nodes_per_rack: u32,
    gangs: usize,
    gang_size: usize,
    topology: bool,
    upstream: &'static str,
}

struct Result {
    name: &'static str,
    pods: usize,
    created_s: f64,
    bound_s: f64,
    upstream: &'static str,
}

fn pod(name: &str, group: Option<&str>) -> Pod {
    let mut p = pod_with(NS, name, group, &[("cpu", "100m"), ("memory", "100Mi")]);
    let spec = p.spec.as_mut().unwrap();
    spec.scheduler_name = Some("kwas-scheduler".into());
    spec.containers[0].image = Some("registry.k8s.io/pause:3.10".into());
    p
}

async fn run(w: &Workload) -> Result {
    let cluster = DevCluster::start(DevClusterConfig {
        topology: Topology::grid(
            1,
            w.racks,
            w.nodes_per_rack,
            Capacity {
                cpu: "4".into(),
                memory: "32Gi".into(),
                pods: "110".into(),
                gpus: 0,
            },
        ),
        kubelet: KubeletConfig {
            enabled: false,
            ..Default::default()
        },
        ..Default::default()
    })
    .await
    .unwrap();
    let client: Client = cluster.client();
    let runtime = SchedulerRuntime::new(client.clone(), RuntimeConfig::default()).unwrap();
    let handle = runtime.handle();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(runtime.run(async move {
        let _ = stopped.await;
    }));
    while !handle.is_ready() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    let pods_total = if w.gang_size == 0 {
        w.gangs
    } else {
        w.gangs * w.gang_size
    };
    let start = Instant::now();
    // Groups first, then their pods (the controllers' order), CREATORS requests in flight.
    let groups: Api<PodGroup> = Api::namespaced(client.clone(), NS);
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    let mut objects: Vec<(Option<PodGroup>, Vec<Pod>)> = Vec::new();
    for g in 0..w.gangs {
        if w.gang_size == 0 {
            objects.push((None, vec![pod(&format!("pod-{g}"), None)]));
            continue;
        }
        let name = format!("gang-{g}");
        let mut b = GroupBuilder::gang(NS, &name, w.gang_size as i32);
        if w.topology {
            b = b.topology("kwas.dev/rack");
        }
        let members = (0..w.gang_size)
            .map(|i| pod(&format!("{name}-{i}"), Some(&name)))
            .collect();
        objects.push((Some(b.pod_group()), members));
    }
    futures::stream::iter(objects)
        .for_each_concurrent(CREATORS, |(group, members)| {
            let (groups, pods) = (groups.clone(), pods.clone());
            async move {
                if let Some(g) = group {
                    groups.create(&PostParams::default(), &g).await.unwrap();
                }
                for p in members {
                    pods.create(&PostParams::default(), &p).await.unwrap();
                }
            }
        })
        .await;
    let created_s = start.elapsed().as_secs_f64();
    let deadline = Instant::now() + Duration::from_secs(300);
    while (handle.metrics().pods_scheduled() as usize) < pods_total {
        assert!(Instant::now() < deadline, "{}: not all pods bound", w.name);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let bound_s = start.elapsed().as_secs_f64();
    let _ = stop.send(());
    task.await.unwrap().unwrap();
    cluster.shutdown().await;
    Result {
        name: w.name,
        pods: pods_total,
        created_s,
        bound_s,
        upstream: w.upstream,
    }
}

fn main() {
    let filter: Option<String> = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let workloads = [
        Workload {
            name: "GangScheduling/5000Nodes_1000Gangs_3000Pods",
            racks: 50,
            nodes_per_rack: 100,
            gangs: 1000,
            gang_size: 3,
            topology: false,
            upstream: "3.7 ms / gang attempt",
        },
        Workload {
            name: "TopologyAwareScheduling/5000Nodes_750Gangs_3000Pods",
            racks: 50,
            nodes_per_rack: 100,
            gangs: 750,
            gang_size: 4,
            topology: true,
            upstream: "562-630 pods/s",
        },
        Workload {
            name: "SchedulingBasic/5000Nodes_5000Pods",
            racks: 50,
            nodes_per_rack: 100,
            gangs: 5000,
            gang_size: 0,
            topology: false,
            upstream: "680-810 pods/s (floor)",
        },
    ];
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut results = Vec::new();
    for w in &workloads {
        if filter.as_ref().is_some_and(|f| !w.name.contains(f.as_str())) {
            continue;
        }
        let r = rt.block_on(run(w));
        eprintln!("{}: {} pods bound in {:.2}s", r.name, r.pods, r.bound_s);
        results.push(r);
    }
    println!("| workload | pods | created in | all bound after | pods/s (creation to bound) | upstream |");
    println!("| --- | ---: | ---: | ---: | ---: | --- |");
    for r in &results {
        println!(
            "| {} | {} | {:.2} s | {:.2} s | {:.0} | {} |",
            r.name,
            r.pods,
            r.created_s,
            r.bound_s,
            r.pods as f64 / r.bound_s,
            r.upstream
        );
    }
}
