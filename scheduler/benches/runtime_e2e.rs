//! End-to-end throughput of the scheduler runtime on devcluster: pods/s from the first pod's
//! creation until every pod is bound, through the real API (informers, `pods/binding`, status
//! writes and events), for workloads named after upstream's scheduler_perf ones.
//!
//! ```sh
//! cargo bench -p kwas-scheduler --bench runtime_e2e            # all workloads
//! cargo bench -p kwas-scheduler --bench runtime_e2e -- Gang     # a subset
//! cargo bench -p kwas-scheduler --bench runtime_e2e -- --nodes 1000  # 1000 nodes (default 5000)
//! ```
//!
//! The gang, topology-aware and CPG workloads have the sizes and node shapes of kwas-tests'
//! `scheduler_perf_jobs` (which submits them as Jobs and JobSets through the controllers), so the
//! two benches at the same `--nodes` give the controllers' cost.
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
use kwas_api_types::v1alpha3::{CompositePodGroup, PodGroup};
use kwas_devcluster::{Capacity, DevCluster, DevClusterConfig, KubeletConfig, Topology};
use kwas_scheduler::core::testing::{GroupBuilder, pod_with};
use kwas_scheduler::runtime::{RuntimeConfig, SchedulerRuntime};

const NS: &str = "default";
const CREATORS: usize = 16;

struct Workload {
    name: String,
    racks: u32,
    nodes_per_rack: u32,
    gangs: usize,
    gang_size: usize,
    topology: bool,
    /// Gangs per CompositePodGroup (a gang of gangs, as the JobSet controller creates for a JobSet
    /// of gang Jobs); 0 for none.
    per_composite: usize,
    upstream: &'static str,
}

struct Result {
    name: String,
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
    let composites: Api<CompositePodGroup> = Api::namespaced(client.clone(), NS);
    let groups: Api<PodGroup> = Api::namespaced(client.clone(), NS);
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    // Per unit: its CompositePodGroup, then its PodGroups, then their pods.
    type Unit = (Option<CompositePodGroup>, Vec<PodGroup>, Vec<Pod>);
    let mut objects: Vec<Unit> = Vec::new();
    for g in 0..w.gangs {
        if w.gang_size == 0 {
            objects.push((None, vec![], vec![pod(&format!("pod-{g}"), None)]));
            continue;
        }
        let name = format!("gang-{g}");
        let mut b = GroupBuilder::gang(NS, &name, w.gang_size as i32);
        if w.topology {
            b = b.topology("kwas.dev/rack");
        }
        let members: Vec<Pod> = (0..w.gang_size)
            .map(|i| pod(&format!("{name}-{i}"), Some(&name)))
            .collect();
        if w.per_composite == 0 {
            objects.push((None, vec![b.pod_group()], members));
            continue;
        }
        let root = format!("cpg-{}", g / w.per_composite);
        if g % w.per_composite == 0 {
            let cpg = GroupBuilder::gang(NS, &root, w.per_composite as i32).composite();
            objects.push((Some(cpg), vec![], vec![]));
        }
        let unit = objects.last_mut().unwrap();
        unit.1.push(b.parent(&root).pod_group());
        unit.2.extend(members);
    }
    futures::stream::iter(objects)
        .for_each_concurrent(CREATORS, |(composite, members_groups, members)| {
            let (composites, groups, pods) = (composites.clone(), groups.clone(), pods.clone());
            async move {
                if let Some(c) = composite {
                    composites.create(&PostParams::default(), &c).await.unwrap();
                }
                for g in members_groups {
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
        name: w.name.clone(),
        pods: pods_total,
        created_s,
        bound_s,
        upstream: w.upstream,
    }
}

fn main() {
    let mut nodes: u32 = 5000;
    let mut filter: Option<String> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--nodes" => {
                nodes = args
                    .next()
                    .and_then(|n| n.parse().ok())
                    .expect("--nodes takes a number")
            }
            other if other.starts_with('-') => {}
            other => filter = Some(other.to_string()),
        }
    }
    // 50 racks, as upstream's topology-aware workloads (and scheduler_perf_jobs).
    let per_rack = (nodes / 50).max(1);
    let n = per_rack * 50;
    let workload = |name: String, gangs, gang_size, topology, per_composite, upstream| Workload {
        name,
        racks: 50,
        nodes_per_rack: per_rack,
        gangs,
        gang_size,
        topology,
        per_composite,
        upstream,
    };
    let workloads = [
        workload(
            format!("GangScheduling/{n}Nodes_1000Gangs_3000Pods"),
            1000,
            3,
            false,
            0,
            "3.7 ms / gang attempt",
        ),
        workload(
            format!("TopologyAwareScheduling/{n}Nodes_750Gangs_3000Pods"),
            750,
            4,
            true,
            0,
            "562-630 pods/s",
        ),
        workload(
            format!("CPGGangScheduling/{n}Nodes_500CPGs_1000Groups_3000Pods"),
            1000,
            3,
            false,
            2,
            "-",
        ),
        workload(
            format!("SchedulingBasic/{n}Nodes_5000Pods"),
            5000,
            0,
            false,
            0,
            "680-810 pods/s (floor)",
        ),
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
