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
        let out = sched.schedule(snap, u);
        if out.is_scheduled() {
            scheduled += 1;
            placed += out.assignments.len() as u64;
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
        }
    }
    let _ = play;
    (units.len() as u64, scheduled, placed, start.elapsed())
}
