//! Dynamic resource allocation next to extended resources: the same gangs of GPU pods, once asking
//! for `nvidia.com/gpu` and once through one ResourceClaim per pod from a DRA driver's slices.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use k8s_openapi::api::core::v1::Pod;
use kwas_scheduler::core::testing::{GroupBuilder, node_with, pod_with};
use kwas_scheduler::core::{GroupKey, SchedulerConfig, Snapshot, UnitKey};
use serde_json::json;

use super::{Measurement, play};

const DRIVER: &str = "gpu.kwas.dev";

fn nodes(snap: &mut Snapshot, count: usize, dra: bool) {
    for i in 0..count {
        let name = format!("node-{i}");
        let rack = format!("rack-{}", i / 16);
        let gpus = if dra { "0" } else { "8" };
        let n = node_with(
            &name,
            &[
                ("cpu", "64"),
                ("memory", "512Gi"),
                ("pods", "110"),
                ("nvidia.com/gpu", gpus),
            ],
            &[
                ("kubernetes.io/hostname", name.as_str()),
                ("kwas.dev/rack", rack.as_str()),
            ],
        );
        snap.upsert_node(&n).unwrap();
        if dra {
            let devices: Vec<_> = (0..8)
                .map(|d| {
                    json!({"name": format!("gpu-{d}"), "attributes": {
                    "model": {"string": "KW100"}, "index": {"int": d}, "interconnectDomain": {"string": rack}},
                    "capacity": {"memory": {"value": "80Gi"}}})
                })
                .collect();
            snap.upsert_resource_slice(
                &serde_json::from_value(json!({"metadata": {"name": format!("{name}-{DRIVER}")},
                    "spec": {"driver": DRIVER, "nodeName": name, "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                             "devices": devices}}))
                .unwrap(),
            );
        }
    }
    if dra {
        snap.upsert_device_class(
            &serde_json::from_value(json!({"metadata": {"name": DRIVER},
                "spec": {"selectors": [{"cel": {"expression": format!("device.driver == \"{DRIVER}\"")}}]}}))
            .unwrap(),
        );
    }
}

fn gpu_pod(name: &str, group: &str, dra: bool) -> Pod {
    if !dra {
        return pod_with(
            "perf",
            name,
            Some(group),
            &[("cpu", "1"), ("memory", "1Gi"), ("nvidia.com/gpu", "1")],
        );
    }
    let mut p = serde_json::to_value(pod_with("perf", name, Some(group), &[("cpu", "1"), ("memory", "1Gi")])).unwrap();
    p["metadata"]["uid"] = json!(format!("uid-{name}"));
    p["spec"]["resourceClaims"] = json!([{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]);
    p["status"] = json!({"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": format!("{name}-gpu")}]});
    serde_json::from_value(p).unwrap()
}

/// Gangs of `per_gang` pods needing one GPU each on `nodes_n` nodes of eight GPUs, as extended
/// resources (`dra` false) or DRA devices with one generated claim per pod (`dra` true).
pub fn gpu_gangs(nodes_n: usize, gangs: usize, per_gang: usize, dra: bool) -> Measurement {
    let mut snap = Snapshot::new();
    nodes(&mut snap, nodes_n, dra);
    let mut units = Vec::new();
    for g in 0..gangs {
        let group = format!("gang-{g}");
        snap.upsert_pod_group(&GroupBuilder::gang("perf", &group, per_gang as i32).pod_group())
            .unwrap();
        for j in 0..per_gang {
            let name = format!("{group}-{j}");
            if dra {
                snap.upsert_resource_claim(
                    &serde_json::from_value(json!({"metadata": {"namespace": "perf", "name": format!("{name}-gpu"), "uid": format!("c-{name}")},
                        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER}}]}}}))
                    .unwrap(),
                );
            }
            snap.upsert_pod(&gpu_pod(&name, &group, dra)).unwrap();
        }
        units.push(UnitKey::Group(GroupKey::pod_group("perf", &group)));
    }
    // One untimed init pod, as upstream's workloads start with init pods: the snapshot builds its node
    // order and device index on the first cycle after the slices arrive, not in every cycle.
    if dra {
        snap.upsert_resource_claim(
            &serde_json::from_value(
                json!({"metadata": {"namespace": "perf", "name": "init-gpu", "uid": "c-init"},
                "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER}}]}}}),
            )
            .unwrap(),
        );
    }
    snap.upsert_pod(&gpu_pod("init", "init", dra)).unwrap();
    snap.upsert_pod_group(&GroupBuilder::gang("perf", "init", 1).pod_group())
        .unwrap();
    play_committing_claims(&mut snap, &[UnitKey::Group(GroupKey::pod_group("perf", "init"))]);
    let (attempts, scheduled, placed, elapsed) = play_committing_claims(&mut snap, &units);
    assert_eq!(scheduled, gangs as u64, "every gang fits");
    let kind = if dra { "DRA" } else { "ExtendedResource" };
    Measurement {
        name: format!(
            "{kind}GangScheduling/{nodes_n}Nodes_{gangs}Gangs_{}Pods",
            gangs * per_gang
        ),
        attempts,
        scheduled_units: scheduled,
        pods: placed,
        elapsed,
        upstream: None,
        upstream_ms_per_attempt: None,
        upstream_pods_per_s: None,
    }
}

/// As `play`, also assuming the claims' allocations as the runtime does.
fn play_committing_claims(snap: &mut Snapshot, units: &[UnitKey]) -> (u64, u64, u64, std::time::Duration) {
    let sched = kwas_scheduler::core::Scheduler::new(SchedulerConfig::default());
    let (mut scheduled, mut placed) = (0, 0);
    let start = std::time::Instant::now();
    for u in units {
        if let Some(n) = schedule_commit(&sched, snap, u) {
            scheduled += 1;
            placed += n;
        }
    }
    let _ = play;
    (units.len() as u64, scheduled, placed, start.elapsed())
}

// ----- upstream's DRA workloads (test/integration/scheduler_perf/dra/performance-config.yaml) -----

/// Nodes of 8 cpu / 32Gi / 110 pods, each with `devices` devices of the test driver (DRA) or
/// `devices` of the `example.com/gpu` extended resource (the twin).
fn claim_nodes(snap: &mut Snapshot, count: usize, devices: usize, dra: bool) {
    for i in 0..count {
        let name = format!("node-{i}");
        let ext = if dra { "0".to_string() } else { devices.to_string() };
        let n = node_with(
            &name,
            &[
                ("cpu", "8"),
                ("memory", "32Gi"),
                ("pods", "110"),
                ("example.com/gpu", &ext),
            ],
            &[("kubernetes.io/hostname", name.as_str())],
        );
        snap.upsert_node(&n).unwrap();
        if dra {
            let devs: Vec<_> = (0..devices)
                .map(|d| json!({"name": format!("gpu-{d}"), "attributes": {"index": {"int": d}}}))
                .collect();
            snap.upsert_resource_slice(
                &serde_json::from_value(json!({"metadata": {"name": format!("{name}-test-driver")},
                    "spec": {"driver": "test-driver.cdi.k8s.io", "nodeName": name,
                             "pool": {"name": name, "generation": 1, "resourceSliceCount": 1}, "devices": devs}}))
                .unwrap(),
            );
        }
    }
    if dra {
        snap.upsert_device_class(
            &serde_json::from_value(json!({"metadata": {"name": "test-class"},
                "spec": {"selectors": [{"cel": {"expression": "device.driver == \"test-driver.cdi.k8s.io\""}}]}}))
            .unwrap(),
        );
    }
}

/// A plain pod (upstream's `pod-with-claim-template.yaml`: one claim from a template, generated and
/// named in the pod's status), or its twin asking for one `example.com/gpu`; with the claim object.
fn claim_pod(snap: &mut Snapshot, name: &str, group: Option<&str>, dra: bool) {
    if !dra {
        snap.upsert_pod(&pod_with(
            "perf",
            name,
            group,
            &[("cpu", "10m"), ("memory", "10Mi"), ("example.com/gpu", "1")],
        ))
        .unwrap();
        return;
    }
    snap.upsert_resource_claim(
        &serde_json::from_value(
            json!({"metadata": {"namespace": "perf", "name": format!("{name}-claim"), "uid": format!("c-{name}")},
            "spec": {"devices": {"requests": [{"name": "req-0", "exactly": {"deviceClassName": "test-class"}}]}}}),
        )
        .unwrap(),
    );
    let mut p = serde_json::to_value(pod_with("perf", name, group, &[("cpu", "10m"), ("memory", "10Mi")])).unwrap();
    p["metadata"]["uid"] = json!(format!("uid-{name}"));
    p["spec"]["resourceClaims"] = json!([{"name": "resource", "resourceClaimTemplateName": "test-claim-template"}]);
    p["status"] =
        json!({"resourceClaimStatuses": [{"name": "resource", "resourceClaimName": format!("{name}-claim")}]});
    snap.upsert_pod(&serde_json::from_value(p).unwrap()).unwrap();
}

/// Schedules `unit` and commits it (assumed pods and claim allocations, as the runtime does);
/// returns the pods placed.
fn schedule_commit(sched: &kwas_scheduler::core::Scheduler, snap: &mut Snapshot, unit: &UnitKey) -> Option<u64> {
    let out = sched.schedule(snap, unit);
    if !out.is_scheduled() {
        return None;
    }
    for a in &out.assignments {
        snap.assume(&a.pod, &a.node).unwrap();
    }
    for (_, rs) in &out.reservations {
        for r in rs {
            if let Some(a) = &r.allocation {
                snap.assume_claim_allocation(&r.namespace, &r.claim, a);
            }
        }
    }
    Some(out.assignments.len() as u64)
}

fn pod_unit(name: &str) -> UnitKey {
    UnitKey::Pod(kwas_scheduler::core::PodKey::new("perf", name))
}

fn measurement(name: String, attempts: u64, pods: u64, elapsed: std::time::Duration) -> Measurement {
    Measurement {
        name,
        attempts,
        scheduled_units: attempts,
        pods,
        elapsed,
        upstream: None,
        upstream_ms_per_attempt: None,
        upstream_pods_per_s: None,
    }
}

/// `SchedulingWithResourceClaimTemplate/{pods}pods_{nodes}nodes` (upstream: 500 nodes with 10
/// devices each, 2500 init pods then 2500 measured pods, one claim per pod from a template; CI
/// threshold 120 pods/s): init pods scheduled untimed, measured pods one cycle each, in order.
pub fn scheduling_with_claim_template(nodes_n: usize, init: usize, measure: usize, dra: bool) -> Measurement {
    let mut snap = Snapshot::new();
    claim_nodes(&mut snap, nodes_n, 10, dra);
    let sched = kwas_scheduler::core::Scheduler::new(SchedulerConfig::default());
    for i in 0..init {
        let name = format!("init-{i}");
        claim_pod(&mut snap, &name, None, dra);
        schedule_commit(&sched, &mut snap, &pod_unit(&name)).expect("init pod fits");
    }
    let names: Vec<String> = (0..measure).map(|i| format!("pod-{i}")).collect();
    for n in &names {
        claim_pod(&mut snap, n, None, dra);
    }
    let start = std::time::Instant::now();
    let mut placed = 0;
    for n in &names {
        placed += schedule_commit(&sched, &mut snap, &pod_unit(n)).expect("measured pod fits");
    }
    let elapsed = start.elapsed();
    let kind = if dra { "" } else { "ExtendedResource" };
    measurement(
        format!(
            "SchedulingWithResourceClaimTemplate{kind}/{}pods_{nodes_n}nodes",
            init + measure
        ),
        measure as u64,
        placed,
        elapsed,
    )
}

/// How full a steady-state cluster is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fill {
    Empty,
    Half,
    Full,
}

/// `SteadyStateClusterResourceClaimTemplate/{empty,half,full}_{nodes}nodes`: 500 nodes of 10
/// devices; the cluster is filled to 0 %, 50 % or 99 % of its devices by running pods (untimed),
/// then `measure` pods are created, scheduled (timed) and deleted with their claims (untimed) one by
/// one, so the fill stays where it is. Upstream's figure: the cost per pod stays flat as the cluster
/// fills (empty, half and full within ~1.05x of each other).
pub fn steady_state(nodes_n: usize, fill: Fill, measure: usize, dra: bool) -> Measurement {
    let mut snap = Snapshot::new();
    claim_nodes(&mut snap, nodes_n, 10, dra);
    let sched = kwas_scheduler::core::Scheduler::new(SchedulerConfig::default());
    let total = nodes_n * 10;
    let running = match fill {
        Fill::Empty => 0,
        Fill::Half => total / 2,
        Fill::Full => total - total / 100,
    };
    for i in 0..running {
        let name = format!("running-{i}");
        claim_pod(&mut snap, &name, None, dra);
        schedule_commit(&sched, &mut snap, &pod_unit(&name)).expect("running pod fits");
    }
    let mut elapsed = std::time::Duration::ZERO;
    let mut placed = 0;
    for i in 0..measure {
        let name = format!("pod-{i}");
        claim_pod(&mut snap, &name, None, dra);
        let start = std::time::Instant::now();
        placed += schedule_commit(&sched, &mut snap, &pod_unit(&name)).expect("measured pod fits");
        elapsed += start.elapsed();
        snap.remove_pod(&kwas_scheduler::core::PodKey::new("perf", &name));
        if dra {
            snap.remove_resource_claim("perf", &format!("{name}-claim"));
        }
    }
    let kind = if dra { "" } else { "ExtendedResource" };
    let fill = format!("{fill:?}").to_lowercase();
    measurement(
        format!("SteadyStateClusterResourceClaimTemplate{kind}/{fill}_{nodes_n}nodes"),
        measure as u64,
        placed,
        elapsed,
    )
}

/// `SharedPodGroupResourceClaim/{groups}podgroups_{pods}pods` (KEP-5729): gangs whose pods share
/// their PodGroup's claim, one device of a pool every node reaches (`allNodes`); the twin has the same
/// gangs without claims. One attempt per gang.
pub fn shared_pod_group_claim(nodes_n: usize, groups: usize, per_group: usize, dra: bool) -> Measurement {
    let mut snap = Snapshot::new();
    claim_nodes(&mut snap, nodes_n, 0, false);
    if dra {
        let devs: Vec<_> = (0..groups).map(|d| json!({"name": format!("channel-{d}")})).collect();
        snap.upsert_resource_slice(
            &serde_json::from_value(json!({"metadata": {"name": "fabric"},
                "spec": {"driver": "fabric.kwas.dev", "allNodes": true,
                         "pool": {"name": "fabric", "generation": 1, "resourceSliceCount": 1}, "devices": devs}}))
            .unwrap(),
        );
        snap.upsert_device_class(
            &serde_json::from_value(json!({"metadata": {"name": "fabric"},
                "spec": {"selectors": [{"cel": {"expression": "device.driver == \"fabric.kwas.dev\""}}]}}))
            .unwrap(),
        );
    }
    let mut units = Vec::new();
    for g in 0..groups {
        let group = format!("gang-{g}");
        let mut pg = serde_json::to_value(GroupBuilder::gang("perf", &group, per_group as i32).pod_group()).unwrap();
        if dra {
            pg["metadata"]["uid"] = json!(format!("uid-{group}"));
            pg["spec"]["resourceClaims"] = json!([{"name": "fabric", "resourceClaimTemplateName": "fabric"}]);
            pg["status"] =
                json!({"resourceClaimStatuses": [{"name": "fabric", "resourceClaimName": format!("{group}-fabric")}]});
            snap.upsert_resource_claim(
                &serde_json::from_value(json!({"metadata": {"namespace": "perf", "name": format!("{group}-fabric"), "uid": format!("c-{group}")},
                    "spec": {"devices": {"requests": [{"name": "channel", "exactly": {"deviceClassName": "fabric"}}]}}}))
                .unwrap(),
            );
        }
        snap.upsert_pod_group(&serde_json::from_value(pg).unwrap()).unwrap();
        for j in 0..per_group {
            let name = format!("{group}-{j}");
            let mut p = serde_json::to_value(pod_with(
                "perf",
                &name,
                Some(&group),
                &[("cpu", "10m"), ("memory", "10Mi")],
            ))
            .unwrap();
            if dra {
                p["metadata"]["uid"] = json!(format!("uid-{name}"));
                p["spec"]["resourceClaims"] = json!([{"name": "fabric", "resourceClaimTemplateName": "fabric"}]);
            }
            snap.upsert_pod(&serde_json::from_value(p).unwrap()).unwrap();
        }
        units.push(UnitKey::Group(GroupKey::pod_group("perf", &group)));
    }
    let sched = kwas_scheduler::core::Scheduler::new(SchedulerConfig::default());
    let start = std::time::Instant::now();
    let mut placed = 0;
    for u in &units {
        placed += schedule_commit(&sched, &mut snap, u).expect("gang fits");
    }
    let elapsed = start.elapsed();
    let kind = if dra { "" } else { "NoClaim" };
    measurement(
        format!(
            "SharedPodGroupResourceClaim{kind}/{groups}podgroups_{}pods",
            groups * per_group
        ),
        units.len() as u64,
        placed,
        elapsed,
    )
}

/// The twin of a DRA workload's name (`ExtendedResource` or `NoClaim` after the workload).
fn twin_of(name: &str) -> Option<String> {
    let (workload, rest) = name.split_once('/')?;
    let twin = match workload {
        "DRAGangScheduling" => return Some(format!("ExtendedResourceGangScheduling/{rest}")),
        "SharedPodGroupResourceClaim" => "NoClaim",
        "SchedulingWithResourceClaimTemplate" | "SteadyStateClusterResourceClaimTemplate" => "ExtendedResource",
        _ => return None,
    };
    Some(format!("{workload}{twin}/{rest}"))
}

/// Markdown table: each DRA workload's time per attempt against its twin's in the same run, and the
/// steady state's full against empty.
pub fn ratios(ms: &[Measurement]) -> String {
    let by_name = |n: &str| ms.iter().find(|m| m.name == n);
    let mut rows = String::new();
    for m in ms {
        if let Some(t) = twin_of(&m.name).and_then(|t| by_name(&t)) {
            rows.push_str(&format!(
                "| {} | {:.3} ms | {:.3} ms | {:.1}x |\n",
                m.name,
                m.ms_per_attempt(),
                t.ms_per_attempt(),
                m.ms_per_attempt() / t.ms_per_attempt().max(1e-9)
            ));
        }
    }
    for f in ms {
        let Some((workload, rest)) = f.name.split_once("/full_") else {
            continue;
        };
        if let Some(e) = by_name(&format!("{workload}/empty_{rest}")) {
            rows.push_str(&format!(
                "| {workload}/{{full / empty}}_{rest} | {:.3} ms | {:.3} ms | {:.2}x |\n",
                f.ms_per_attempt(),
                e.ms_per_attempt(),
                f.ms_per_attempt() / e.ms_per_attempt().max(1e-9)
            ));
        }
    }
    if rows.is_empty() {
        return rows;
    }
    format!("| DRA workload | per attempt | twin per attempt | ratio |\n| --- | ---: | ---: | ---: |\n{rows}")
}
