//! Scenarios with inter-pod constraints and volumes, mirroring upstream `scheduler_perf`'s
//! `affinity/`, `topology_spreading/` and `PreemptionPVs` workloads (same pod templates: 100m / 500Mi,
//! `color` labels, two namespaces), plus gang variants: the init pods are placed untimed, then every
//! measured unit runs one cycle.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use k8s_openapi::api::core::v1::{Namespace, PersistentVolume, PersistentVolumeClaim, Pod};
use kwas_scheduler::core::testing::{GroupBuilder, bound, node_with, pod_with, with_priority};
use kwas_scheduler::core::{GroupKey, PodKey, PreemptionVerdict, Scheduler, SchedulerConfig, Snapshot, UnitKey};
use serde_json::{Value, json};

use super::{Measurement, ZONE, play};

const HOSTNAME: &str = "kubernetes.io/hostname";

/// Adds `labels` to the pod's and replaces the top-level `spec` fields `spec` names.
fn patch(pod: Pod, spec: Value, labels: Value) -> Pod {
    let mut v = serde_json::to_value(pod).unwrap();
    for (k, x) in spec.as_object().unwrap() {
        v["spec"][k] = x.clone();
    }
    if v["metadata"]["labels"].is_null() {
        v["metadata"]["labels"] = json!({});
    }
    for (k, x) in labels.as_object().unwrap() {
        v["metadata"]["labels"][k] = x.clone();
    }
    serde_json::from_value(v).unwrap()
}

/// Nodes like scheduler_perf's `node-default.yaml` (4 cpu, 32Gi, 110 pods) with a hostname label and
/// `zone` drawn round-robin from `zones`.
fn nodes(snap: &mut Snapshot, count: usize, zones: &[&str]) {
    for i in 0..count {
        let name = format!("node-{i}");
        let zone = zones[i % zones.len()];
        let n = node_with(
            &name,
            &[("cpu", "4"), ("memory", "32Gi"), ("pods", "110")],
            &[(HOSTNAME, name.as_str()), (ZONE, zone)],
        );
        snap.upsert_node(&n).unwrap();
    }
    for ns in ["sched-0", "sched-1"] {
        let n: Namespace =
            serde_json::from_value(json!({"metadata": {"name": ns, "labels": {"kubernetes.io/metadata.name": ns}}}))
                .unwrap();
        snap.upsert_namespace(&n);
    }
}

/// `pod-with-pod-anti-affinity.yaml`: `color: green`, required anti-affinity to green pods of both
/// namespaces per hostname.
fn anti_affinity_pod(ns: &str, name: &str, group: Option<&str>) -> Pod {
    patch(
        pod_with(ns, name, group, &[("cpu", "100m"), ("memory", "500Mi")]),
        json!({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"color": "green"}}, "topologyKey": HOSTNAME, "namespaces": ["sched-1", "sched-0"]}
        ]}}}),
        json!({"color": "green"}),
    )
}

/// `pod-with-pod-affinity.yaml`: `color: blue`, required affinity to blue pods per zone.
fn affinity_pod(ns: &str, name: &str) -> Pod {
    patch(
        pod_with(ns, name, None, &[("cpu", "100m"), ("memory", "500Mi")]),
        json!({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"color": "blue"}}, "topologyKey": ZONE, "namespaces": ["sched-1", "sched-0"]}
        ]}}}),
        json!({"color": "blue"}),
    )
}

/// `pod-with-topology-spreading.yaml`: `color: blue`, maxSkew 5 per zone, DoNotSchedule.
fn spreading_pod(ns: &str, name: &str, group: Option<&str>, key: &str, skew: i32) -> Pod {
    patch(
        pod_with(ns, name, group, &[("cpu", "100m"), ("memory", "500Mi")]),
        json!({"topologySpreadConstraints": [
            {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"color": "blue"}}}
        ]}),
        json!({"color": "blue"}),
    )
}

/// Adds `pods` as plain units, places them untimed if `init`, and returns their units.
fn add_plain(snap: &mut Snapshot, pods: Vec<Pod>, init: bool) -> Vec<UnitKey> {
    let mut units = Vec::new();
    for p in pods {
        let key = PodKey::new(p.metadata.namespace.clone().unwrap(), p.metadata.name.clone().unwrap());
        snap.upsert_pod(&p).unwrap();
        units.push(UnitKey::Pod(key));
    }
    if init {
        let (_, scheduled, ..) = play(snap, SchedulerConfig::default(), &units);
        assert_eq!(scheduled, units.len() as u64, "every init pod fits");
    }
    units
}

fn measure(
    name: String,
    snap: &mut Snapshot,
    units: &[UnitKey],
    expect_all: bool,
    upstream: Option<(&'static str, f64)>,
) -> Measurement {
    let (attempts, scheduled, placed, elapsed) = play(snap, SchedulerConfig::default(), units);
    if expect_all {
        assert_eq!(scheduled, units.len() as u64, "{name}: every measured unit fits");
    }
    Measurement {
        name,
        attempts,
        scheduled_units: scheduled,
        pods: placed,
        elapsed,
        upstream: upstream.map(|u| u.0),
        upstream_ms_per_attempt: None,
        upstream_pods_per_s: upstream.map(|u| u.1),
    }
}

/// `SchedulingPodAntiAffinity/5000Nodes_2000Pods`: `init` anti-affinity pods in sched-0, then `measured`
/// in sched-1, one per node at most.
pub fn pod_anti_affinity(
    nodes_n: usize,
    init: usize,
    measured: usize,
    upstream: Option<(&'static str, f64)>,
) -> Measurement {
    let mut snap = Snapshot::new();
    nodes(&mut snap, nodes_n, &["zone1"]);
    add_plain(
        &mut snap,
        (0..init)
            .map(|i| anti_affinity_pod("sched-0", &format!("init-{i}"), None))
            .collect(),
        true,
    );
    let units = add_plain(
        &mut snap,
        (0..measured)
            .map(|i| anti_affinity_pod("sched-1", &format!("m-{i}"), None))
            .collect(),
        false,
    );
    measure(
        format!("SchedulingPodAntiAffinity/{nodes_n}Nodes_{measured}Pods"),
        &mut snap,
        &units,
        true,
        upstream,
    )
}

/// `SchedulingPodAffinity/5000Nodes_5000Pods`: every node in zone1; `init` affinity pods, then `measured`.
pub fn pod_affinity(
    nodes_n: usize,
    init: usize,
    measured: usize,
    upstream: Option<(&'static str, f64)>,
) -> Measurement {
    let mut snap = Snapshot::new();
    nodes(&mut snap, nodes_n, &["zone1"]);
    add_plain(
        &mut snap,
        (0..init)
            .map(|i| affinity_pod("sched-0", &format!("init-{i}")))
            .collect(),
        true,
    );
    let units = add_plain(
        &mut snap,
        (0..measured)
            .map(|i| affinity_pod("sched-1", &format!("m-{i}")))
            .collect(),
        false,
    );
    measure(
        format!("SchedulingPodAffinity/{nodes_n}Nodes_{measured}Pods"),
        &mut snap,
        &units,
        true,
        upstream,
    )
}

/// `TopologySpreading/5000Nodes_5000Pods`: nodes in zones moon-1..3, `init` default pods, then
/// `measured` pods spread per zone (maxSkew 5, DoNotSchedule).
pub fn topology_spreading(
    nodes_n: usize,
    init: usize,
    measured: usize,
    upstream: Option<(&'static str, f64)>,
) -> Measurement {
    let mut snap = Snapshot::new();
    nodes(&mut snap, nodes_n, &["moon-1", "moon-2", "moon-3"]);
    add_plain(
        &mut snap,
        (0..init)
            .map(|i| {
                pod_with(
                    "default",
                    &format!("init-{i}"),
                    None,
                    &[("cpu", "100m"), ("memory", "500Mi")],
                )
            })
            .collect(),
        true,
    );
    let units = add_plain(
        &mut snap,
        (0..measured)
            .map(|i| spreading_pod("default", &format!("m-{i}"), None, ZONE, 5))
            .collect(),
        false,
    );
    measure(
        format!("TopologySpreading/{nodes_n}Nodes_{measured}Pods"),
        &mut snap,
        &units,
        true,
        upstream,
    )
}

/// Gangs of `per_gang` anti-affinity pods (one per node, gang members avoiding each other and every
/// earlier gang): the gang cycle places each member against the others' placements.
pub fn gang_anti_affinity(nodes_n: usize, gangs: usize, per_gang: usize) -> Measurement {
    let mut snap = Snapshot::new();
    nodes(&mut snap, nodes_n, &["zone1"]);
    let mut units = Vec::new();
    for g in 0..gangs {
        let name = format!("gang-{g}");
        snap.upsert_pod_group(&GroupBuilder::gang("sched-1", &name, per_gang as i32).pod_group())
            .unwrap();
        for j in 0..per_gang {
            snap.upsert_pod(&anti_affinity_pod("sched-1", &format!("{name}-{j}"), Some(&name)))
                .unwrap();
        }
        units.push(UnitKey::Group(GroupKey::pod_group("sched-1", &name)));
    }
    measure(
        format!(
            "GangSchedulingPodAntiAffinity/{nodes_n}Nodes_{gangs}Gangs_{}Pods",
            gangs * per_gang
        ),
        &mut snap,
        &units,
        true,
        None,
    )
}

/// Gangs of `per_gang` pods spread evenly over `zones` zones (maxSkew 1 per zone among the gang's own
/// pods): the spread counts move as the gang's members are placed.
pub fn gang_topology_spreading(nodes_n: usize, gangs: usize, per_gang: usize) -> Measurement {
    let mut snap = Snapshot::new();
    nodes(&mut snap, nodes_n, &["moon-1", "moon-2", "moon-3"]);
    let mut units = Vec::new();
    for g in 0..gangs {
        let name = format!("gang-{g}");
        snap.upsert_pod_group(&GroupBuilder::gang("default", &name, per_gang as i32).pod_group())
            .unwrap();
        for j in 0..per_gang {
            let p = spreading_pod("default", &format!("{name}-{j}"), Some(&name), ZONE, 1);
            // Each gang spreads its own pods.
            let p = patch(
                p,
                json!({"topologySpreadConstraints": [
                    {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"gang": name}}}
                ]}),
                json!({"gang": name}),
            );
            snap.upsert_pod(&p).unwrap();
        }
        units.push(UnitKey::Group(GroupKey::pod_group("default", &name)));
    }
    measure(
        format!(
            "GangTopologySpreading/{nodes_n}Nodes_{gangs}Gangs_{}Pods",
            gangs * per_gang
        ),
        &mut snap,
        &units,
        true,
        None,
    )
}

/// `PreemptionPVs/500Nodes`: `init` low-priority pods (900m, four per node) fill the cluster; then
/// `measured` priority-10 pods (3 cpu), each with a PersistentVolumeClaim bound to its own volume,
/// preempt three of a node's four and are scheduled. One attempt = preempt + schedule.
pub fn preemption_pvs(nodes_n: usize, init: usize, measured: usize) -> Measurement {
    let mut snap = Snapshot::new();
    nodes(&mut snap, nodes_n, &["zone1"]);
    let per_node = init.div_ceil(nodes_n).max(1);
    for i in 0..init {
        let p = pod_with(
            "default",
            &format!("low-{i}"),
            None,
            &[("cpu", "900m"), ("memory", "500Mi")],
        );
        snap.upsert_pod(&bound(p, &format!("node-{}", i / per_node))).unwrap();
    }
    let mut units = Vec::new();
    for i in 0..measured {
        let pv: PersistentVolume = serde_json::from_value(json!({
            "metadata": {"name": format!("pv-{i}")},
            "spec": {"accessModes": ["ReadOnlyMany"], "capacity": {"storage": "1Gi"}, "persistentVolumeReclaimPolicy": "Retain",
                     "claimRef": {"namespace": "default", "name": format!("pvc-{i}")}, "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": format!("vol-{i}")}},
            "status": {"phase": "Bound"}
        }))
        .unwrap();
        let pvc: PersistentVolumeClaim = serde_json::from_value(json!({
            "metadata": {"name": format!("pvc-{i}"), "namespace": "default"},
            "spec": {"accessModes": ["ReadOnlyMany"], "resources": {"requests": {"storage": "1Gi"}}, "volumeName": format!("pv-{i}")},
            "status": {"phase": "Bound"}
        }))
        .unwrap();
        snap.upsert_persistent_volume(&pv);
        snap.upsert_persistent_volume_claim(&pvc);
        let p = patch(
            with_priority(
                pod_with(
                    "default",
                    &format!("high-{i}"),
                    None,
                    &[("cpu", "3000m"), ("memory", "500Mi")],
                ),
                10,
            ),
            json!({"volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": format!("pvc-{i}")}}]}),
            json!({}),
        );
        snap.upsert_pod(&p).unwrap();
        units.push(UnitKey::Pod(PodKey::new("default", format!("high-{i}"))));
    }
    let sched = Scheduler::new(SchedulerConfig::default());
    let mut placed = 0;
    let mut scheduled = 0;
    let start = Instant::now();
    for u in &units {
        let p = sched.preempt(&mut snap, u);
        assert_eq!(p.verdict, PreemptionVerdict::Preempt, "{}", p.message);
        for v in &p.victims {
            snap.remove_pod(&v.pod);
        }
        let out = sched.schedule(&mut snap, u);
        assert!(out.is_scheduled(), "{:?}", out.verdict);
        scheduled += 1;
        placed += out.assignments.len() as u64;
        for a in &out.assignments {
            snap.assume(&a.pod, &a.node).unwrap();
        }
    }
    let elapsed = start.elapsed();
    Measurement {
        name: format!("PreemptionPVs/{nodes_n}Nodes_{init}InitPods_{measured}Pods"),
        attempts: units.len() as u64,
        scheduled_units: scheduled,
        pods: placed,
        elapsed,
        upstream: None,
        upstream_ms_per_attempt: None,
        upstream_pods_per_s: None,
    }
}
