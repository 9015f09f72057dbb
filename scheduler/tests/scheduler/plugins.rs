//! The kube-scheduler plugins beyond resources and node affinity, with upstream's edge cases, each
//! evaluated inside the gang cycle (members see each other's placements): NodePorts, InterPodAffinity,
//! PodTopologySpread, TaintToleration's `Gt` / `Lt` and `PreferNoSchedule`, preferred NodeAffinity,
//! NodeResourcesBalancedAllocation, VolumeBinding / VolumeZone / NodeVolumeLimits, pod-level
//! UnschedulableAndUnresolvable propagation and what the scheduler refuses to place.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use kwas_scheduler::core::testing::{GroupBuilder, bound, node_with, pod_with};
use kwas_scheduler::core::{
    ClaimAction, Code, CycleOutcome, GroupKey, PodKey, PreemptionVerdict, Scheduler, SchedulerConfig, Snapshot,
    UnitKey, Verdict,
};
use serde_json::{Value, json};

const NS: &str = "ns";

fn from<T: serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).unwrap()
}

/// Nodes `n0..` with 4 cpu, 16Gi and the given labels per node.
fn nodes(snap: &mut Snapshot, labels: &[&[(&str, &str)]]) {
    for (i, l) in labels.iter().enumerate() {
        let name = format!("n{i}");
        let mut all: Vec<(&str, &str)> = l.to_vec();
        all.push(("kubernetes.io/hostname", &name));
        snap.upsert_node(&node_with(
            &name,
            &[("cpu", "4"), ("memory", "16Gi"), ("pods", "110")],
            &all,
        ))
        .unwrap();
    }
}

/// A pending pod with labels and a spec fragment merged in.
fn pod(name: &str, group: Option<&str>, labels: &[(&str, &str)], spec: Value) -> Pod {
    let mut v = serde_json::to_value(pod_with(NS, name, group, &[("cpu", "100m"), ("memory", "128Mi")])).unwrap();
    let labels: BTreeMap<&str, &str> = labels.iter().copied().collect();
    v["metadata"]["labels"] = json!(labels);
    if let (Some(s), Some(extra)) = (v["spec"].as_object_mut(), spec.as_object()) {
        for (k, x) in extra {
            s.insert(k.clone(), x.clone());
        }
    }
    from(v)
}

fn one(snap: &mut Snapshot, cfg: SchedulerConfig, name: &str) -> CycleOutcome {
    Scheduler::new(cfg).schedule(snap, &UnitKey::Pod(PodKey::new(NS, name)))
}

fn gang(snap: &mut Snapshot, name: &str) -> CycleOutcome {
    Scheduler::new(SchedulerConfig::default()).schedule(snap, &UnitKey::Group(GroupKey::pod_group(NS, name)))
}

fn node_of(out: &CycleOutcome, pod: &str) -> String {
    out.assignments
        .iter()
        .find(|a| a.pod.name == pod)
        .map(|a| a.node.clone())
        .unwrap_or_else(|| panic!("{pod} not placed: {out:#?}"))
}

fn unschedulable(out: &CycleOutcome) -> (Code, String) {
    match &out.verdict {
        Verdict::Unschedulable { code, message } => (*code, message.clone()),
        v => panic!("expected Unschedulable, got {v:?}"),
    }
}

fn place(snap: &mut Snapshot, out: &CycleOutcome) {
    for a in &out.assignments {
        snap.assume(&a.pod, &a.node).unwrap();
    }
}

fn anti_affinity(key: &str, labels: Value) -> Value {
    json!({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": labels}, "topologyKey": key}]}}})
}

#[test]
fn node_ports_clash_on_one_node_only() {
    let mut snap = Snapshot::new();
    nodes(&mut snap, &[&[], &[]]);
    let ports = json!({"containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 8080}],
        "resources": {"requests": {"cpu": "100m"}}}]});
    snap.upsert_pod(&bound(pod("a", None, &[], ports.clone()), "n0"))
        .unwrap();
    snap.upsert_pod(&pod("b", None, &[], ports.clone())).unwrap();
    assert_eq!(node_of(&one(&mut snap, SchedulerConfig::default(), "b"), "b"), "n1");
    // UDP on the same port, or another host IP, does not clash.
    let udp =
        json!({"containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 8080, "protocol": "UDP"}]}]});
    snap.upsert_pod(&bound(pod("u", None, &[], udp), "n1")).unwrap();
    snap.upsert_pod(&bound(pod("t", None, &[], ports.clone()), "n1"))
        .unwrap();
    snap.upsert_pod(&pod("c", None, &[], ports)).unwrap();
    let (code, message) = unschedulable(&one(&mut snap, SchedulerConfig::default(), "c"));
    assert_eq!(code, Code::Unschedulable);
    assert_eq!(
        message,
        "0/2 nodes are available: 2 node(s) didn't have free ports for the requested pod ports."
    );
}

#[test]
fn a_gang_with_anti_affinity_among_its_members_spreads_one_per_node() {
    let mut snap = Snapshot::new();
    nodes(&mut snap, &[&[], &[], &[], &[]]);
    snap.upsert_pod_group(&GroupBuilder::gang(NS, "g", 4).pod_group())
        .unwrap();
    for i in 0..4 {
        let spec = anti_affinity("kubernetes.io/hostname", json!({"app": "train"}));
        snap.upsert_pod(&pod(&format!("p{i}"), Some("g"), &[("app", "train")], spec))
            .unwrap();
    }
    let out = gang(&mut snap, "g");
    assert!(out.is_scheduled(), "{out:#?}");
    let mut used: Vec<String> = (0..4).map(|i| node_of(&out, &format!("p{i}"))).collect();
    used.sort();
    used.dedup();
    assert_eq!(used.len(), 4, "one member per node");
    // Five members on four nodes: the gang fails as a whole, with the distinct not-guaranteed flag.
    let mut snap = Snapshot::new();
    nodes(&mut snap, &[&[], &[], &[], &[]]);
    snap.upsert_pod_group(&GroupBuilder::gang(NS, "g", 5).pod_group())
        .unwrap();
    for i in 0..5 {
        let spec = anti_affinity("kubernetes.io/hostname", json!({"app": "train"}));
        snap.upsert_pod(&pod(&format!("p{i}"), Some("g"), &[("app", "train")], spec))
            .unwrap();
    }
    let out = gang(&mut snap, "g");
    let (code, message) = unschedulable(&out);
    assert_eq!(code, Code::Unschedulable);
    assert!(
        message.contains("4 node(s) didn't match pod anti-affinity rules"),
        "{message}"
    );
    assert_eq!(out.groups[0].rejection, kwas_scheduler::core::Rejection::NotGuaranteed);
    assert!(
        out.unschedulable_pods
            .iter()
            .all(|p| p.rejection == kwas_scheduler::core::Rejection::NotGuaranteed)
    );
    assert!(out.assignments.is_empty());
}

#[test]
fn existing_pods_anti_affinity_is_symmetric() {
    let mut snap = Snapshot::new();
    nodes(&mut snap, &[&[("zone", "a")], &[("zone", "b")]]);
    snap.upsert_pod(&bound(
        pod("guard", None, &[], anti_affinity("zone", json!({"app": "web"}))),
        "n0",
    ))
    .unwrap();
    snap.upsert_pod(&pod("web", None, &[("app", "web")], json!({})))
        .unwrap();
    assert_eq!(node_of(&one(&mut snap, SchedulerConfig::default(), "web"), "web"), "n1");
    snap.upsert_pod(&bound(
        pod("guard2", None, &[], anti_affinity("zone", json!({"app": "web"}))),
        "n1",
    ))
    .unwrap();
    let (code, message) = unschedulable(&one(&mut snap, SchedulerConfig::default(), "web"));
    assert_eq!(code, Code::Unschedulable);
    assert!(
        message.contains("2 node(s) didn't satisfy existing pods anti-affinity rules"),
        "{message}"
    );
    // Another namespace is not matched unless the term selects it.
    let mut other = pod("web-x", None, &[("app", "web")], json!({}));
    other.metadata.namespace = Some("other".into());
    snap.upsert_pod(&other).unwrap();
    let out =
        Scheduler::new(SchedulerConfig::default()).schedule(&mut snap, &UnitKey::Pod(PodKey::new("other", "web-x")));
    assert!(out.is_scheduled());
}

#[test]
fn required_affinity_follows_matching_pods_and_waives_the_first_of_a_group() {
    let mut snap = Snapshot::new();
    nodes(&mut snap, &[&[("zone", "a")], &[("zone", "b")], &[("zone", "b")]]);
    let with_db = json!({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone"}]}}});
    snap.upsert_pod(&pod("api", None, &[("app", "api")], with_db.clone()))
        .unwrap();
    // No db pod anywhere and the pod does not match its own term: unresolvable.
    let (code, message) = unschedulable(&one(&mut snap, SchedulerConfig::default(), "api"));
    assert_eq!(code, Code::UnschedulableAndUnresolvable);
    assert!(
        message.contains("3 node(s) didn't match pod affinity rules"),
        "{message}"
    );
    snap.upsert_pod(&bound(pod("db", None, &[("app", "db")], json!({})), "n2"))
        .unwrap();
    let n = node_of(&one(&mut snap, SchedulerConfig::default(), "api"), "api");
    assert!(n == "n1" || n == "n2", "zone b: {n}");
    // A pod that matches its own term goes anywhere when nothing matches yet.
    let with_self = json!({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "solo"}}, "topologyKey": "zone"}]}}});
    snap.upsert_pod(&pod("solo", None, &[("app", "solo")], with_self))
        .unwrap();
    assert!(one(&mut snap, SchedulerConfig::default(), "solo").is_scheduled());
    // namespaceSelector {} reaches pods of every namespace.
    let mut db2 = bound(pod("db2", None, &[("app", "cache")], json!({})), "n0");
    db2.metadata.namespace = Some("infra".into());
    snap.upsert_pod(&db2).unwrap();
    snap.upsert_namespace(&from::<Namespace>(
        json!({"metadata": {"name": "infra", "labels": {"team": "infra"}}}),
    ));
    let cross = json!({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": "zone",
         "namespaceSelector": {"matchLabels": {"team": "infra"}}}]}}});
    snap.upsert_pod(&pod("x", None, &[], cross)).unwrap();
    assert_eq!(node_of(&one(&mut snap, SchedulerConfig::default(), "x"), "x"), "n0");
}

#[test]
fn topology_spread_keeps_the_skew_and_honours_its_policies() {
    let spread = |skew: i32, extra: Value| {
        let mut c = json!({"maxSkew": skew, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}}});
        if let (Some(c), Some(e)) = (c.as_object_mut(), extra.as_object()) {
            for (k, v) in e {
                c.insert(k.clone(), v.clone());
            }
        }
        json!({"topologySpreadConstraints": [c]})
    };
    let mut snap = Snapshot::new();
    nodes(&mut snap, &[&[("zone", "a")], &[("zone", "a")], &[("zone", "b")], &[]]);
    snap.upsert_pod(&bound(pod("w0", None, &[("app", "web")], json!({})), "n0"))
        .unwrap();
    snap.upsert_pod(&pod("w1", None, &[("app", "web")], spread(1, json!({}))))
        .unwrap();
    assert_eq!(node_of(&one(&mut snap, SchedulerConfig::default(), "w1"), "w1"), "n2");
    snap.upsert_pod(&bound(pod("w2", None, &[("app", "web")], json!({})), "n2"))
        .unwrap();
    snap.upsert_pod(&bound(pod("w3", None, &[("app", "web")], json!({})), "n0"))
        .unwrap();
    // a has 2, b has 1: maxSkew 1 allows only b; the node without the zone label fails for good.
    snap.upsert_pod(&pod("w4", None, &[("app", "web")], spread(1, json!({}))))
        .unwrap();
    assert_eq!(node_of(&one(&mut snap, SchedulerConfig::default(), "w4"), "w4"), "n2");
    snap.upsert_pod(&bound(pod("w5", None, &[("app", "web")], json!({})), "n2"))
        .unwrap();
    // minDomains 3 with two domains: the global minimum counts as 0, so no zone with 2 may take more.
    snap.upsert_pod(&pod("w6", None, &[("app", "web")], spread(2, json!({"minDomains": 3}))))
        .unwrap();
    let (code, message) = unschedulable(&one(&mut snap, SchedulerConfig::default(), "w6"));
    assert_eq!(code, Code::Unschedulable);
    assert!(
        message.contains("3 node(s) didn't match pod topology spread constraints,"),
        "{message}"
    );
    assert!(
        message.contains("1 node(s) didn't match pod topology spread constraints (missing required label)"),
        "{message}"
    );
    // nodeAffinityPolicy Honor: zone a's nodes are excluded by the selector and their pods not counted.
    let honor = spread(1, json!({}));
    let mut p = pod("w7", None, &[("app", "web")], honor);
    p.spec.as_mut().unwrap().node_selector = Some([("zone".to_string(), "b".to_string())].into());
    snap.upsert_pod(&p).unwrap();
    assert_eq!(node_of(&one(&mut snap, SchedulerConfig::default(), "w7"), "w7"), "n2");
}

#[test]
fn a_gang_spreads_across_racks_inside_the_cycle() {
    let mut snap = Snapshot::new();
    nodes(
        &mut snap,
        &[
            &[("rack", "r0")],
            &[("rack", "r0")],
            &[("rack", "r1")],
            &[("rack", "r1")],
        ],
    );
    snap.upsert_pod_group(&GroupBuilder::gang(NS, "g", 4).pod_group())
        .unwrap();
    for i in 0..4 {
        let spec = json!({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "rack",
            "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"job": "g"}}}]});
        snap.upsert_pod(&pod(&format!("p{i}"), Some("g"), &[("job", "g")], spec))
            .unwrap();
    }
    let out = gang(&mut snap, "g");
    assert!(out.is_scheduled(), "{out:#?}");
    let in_r0 = (0..4)
        .filter(|i| ["n0", "n1"].contains(&node_of(&out, &format!("p{i}")).as_str()))
        .count();
    assert_eq!(in_r0, 2, "two per rack");
}

#[test]
fn toleration_comparison_operators_and_soft_scores() {
    let mut snap = Snapshot::new();
    let generation = |name: &str, g: &str| {
        let mut n: Node = node_with(
            name,
            &[("cpu", "4"), ("memory", "16Gi"), ("pods", "110")],
            &[("kubernetes.io/hostname", name)],
        );
        n.spec = Some(from(
            json!({"taints": [{"key": "gpu-gen", "value": g, "effect": "NoSchedule"}]}),
        ));
        n
    };
    snap.upsert_node(&generation("old", "3")).unwrap();
    snap.upsert_node(&generation("new", "5")).unwrap();
    let newer = json!({"tolerations": [{"key": "gpu-gen", "operator": "Gt", "value": "4", "effect": "NoSchedule"}]});
    snap.upsert_pod(&pod("p", None, &[], newer)).unwrap();
    assert_eq!(node_of(&one(&mut snap, SchedulerConfig::default(), "p"), "p"), "new");
    let older = json!({"tolerations": [{"key": "gpu-gen", "operator": "Lt", "value": "4", "effect": "NoSchedule"}]});
    snap.upsert_pod(&pod("q", None, &[], older)).unwrap();
    assert_eq!(node_of(&one(&mut snap, SchedulerConfig::default(), "q"), "q"), "old");

    // Preferred node affinity and PreferNoSchedule taints decide between otherwise equal nodes.
    let mut snap = Snapshot::new();
    nodes(&mut snap, &[&[("disk", "hdd")], &[("disk", "ssd")], &[("disk", "ssd")]]);
    let mut tainted: Node = node_with(
        "n2",
        &[("cpu", "4"), ("memory", "16Gi"), ("pods", "110")],
        &[("disk", "ssd"), ("kubernetes.io/hostname", "n2")],
    );
    tainted.spec = Some(from(
        json!({"taints": [{"key": "noisy", "effect": "PreferNoSchedule"}]}),
    ));
    snap.upsert_node(&tainted).unwrap();
    let prefer_ssd = json!({"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 50, "preference": {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}}]}}});
    snap.upsert_pod(&pod("s", None, &[], prefer_ssd)).unwrap();
    assert_eq!(node_of(&one(&mut snap, SchedulerConfig::default(), "s"), "s"), "n1");

    // Preferred anti-affinity spreads replicas.
    let mut snap = Snapshot::new();
    nodes(&mut snap, &[&[], &[]]);
    snap.upsert_pod(&bound(pod("r0", None, &[("app", "r")], json!({})), "n0"))
        .unwrap();
    let soft = json!({"affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "r"}}, "topologyKey": "kubernetes.io/hostname"}}]}}});
    snap.upsert_pod(&pod("r1", None, &[("app", "r")], soft)).unwrap();
    assert_eq!(node_of(&one(&mut snap, SchedulerConfig::default(), "r1"), "r1"), "n1");
}

#[test]
fn balanced_allocation_is_part_of_upstreams_profile() {
    let mut snap = Snapshot::new();
    snap.upsert_node(&node_with(
        "a",
        &[("cpu", "4"), ("memory", "4Gi"), ("pods", "110")],
        &[],
    ))
    .unwrap();
    snap.upsert_node(&node_with(
        "b",
        &[("cpu", "4"), ("memory", "4Gi"), ("pods", "110")],
        &[],
    ))
    .unwrap();
    // a already has a memory-heavy pod: a cpu-heavy pod balances it.
    snap.upsert_pod(&bound(
        pod_with(NS, "m", None, &[("cpu", "100m"), ("memory", "3Gi")]),
        "a",
    ))
    .unwrap();
    snap.upsert_pod(&pod_with(NS, "c", None, &[("cpu", "3"), ("memory", "100Mi")]))
        .unwrap();
    let out = one(&mut snap, SchedulerConfig::upstream_default_profile(), "c");
    // LeastAllocated alone prefers the empty node b; with BalancedAllocation weight 1 the balance on a
    // does not outweigh it either, so the profile's sum decides: check both scores agree with upstream's.
    assert!(out.is_scheduled());
    let mut cfg = SchedulerConfig::upstream_default_profile();
    cfg.weights.node_resources_fit = 0;
    assert_eq!(
        node_of(&one(&mut snap, cfg, "c"), "c"),
        "a",
        "balance alone picks the node it evens out"
    );
}

fn storage(snap: &mut Snapshot, binding: &str) {
    snap.upsert_storage_class(&from::<StorageClass>(json!({"metadata": {"name": "fast"},
        "provisioner": "kwas.dev/sim-disk", "volumeBindingMode": binding})));
}

fn claim(snap: &mut Snapshot, name: &str, class: &str, volume: Option<&str>) {
    let mut c = json!({"metadata": {"name": name, "namespace": NS}, "spec": {"storageClassName": class,
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}});
    if let Some(v) = volume {
        c["spec"]["volumeName"] = json!(v);
        c["status"] = json!({"phase": "Bound"});
    }
    snap.upsert_persistent_volume_claim(&from::<PersistentVolumeClaim>(c));
}

fn with_claims(name: &str, claims: &[&str]) -> Pod {
    let volumes: Vec<Value> = claims
        .iter()
        .map(|c| json!({"name": c, "persistentVolumeClaim": {"claimName": c}}))
        .collect();
    pod(name, None, &[], json!({"volumes": volumes}))
}

#[test]
fn volumes_bind_where_the_volume_can_be() {
    let mut snap = Snapshot::new();
    nodes(
        &mut snap,
        &[
            &[("topology.kubernetes.io/zone", "a")],
            &[("topology.kubernetes.io/zone", "b")],
        ],
    );
    // WaitForFirstConsumer: schedulable; the runtime selects the node for the provisioner before binding.
    storage(&mut snap, "WaitForFirstConsumer");
    claim(&mut snap, "data", "fast", None);
    snap.upsert_pod(&with_claims("p", &["data"])).unwrap();
    let out = one(&mut snap, SchedulerConfig::default(), "p");
    let node = node_of(&out, "p");
    assert_eq!(
        snap.volume_prebind(&PodKey::new(NS, "p"), &node),
        vec![ClaimAction::SelectNode {
            namespace: NS.into(),
            claim: "data".into(),
            node: node.clone()
        }]
    );
    // A pre-created volume that fits is pre-bound instead.
    snap.upsert_persistent_volume(&from::<PersistentVolume>(json!({"metadata": {"name": "pv-b"},
        "spec": {"storageClassName": "fast", "capacity": {"storage": "2Gi"}, "accessModes": ["ReadWriteOnce"],
            "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["b"]}]}]}}},
        "status": {"phase": "Available"}})));
    assert_eq!(
        snap.volume_prebind(&PodKey::new(NS, "p"), "n1"),
        vec![ClaimAction::BindVolume {
            namespace: NS.into(),
            claim: "data".into(),
            volume: "pv-b".into()
        }]
    );
    // A bound claim pins the pod to where its volume is (node affinity and zone).
    snap.upsert_persistent_volume(&from::<PersistentVolume>(json!({"metadata": {"name": "pv-a",
        "labels": {"topology.kubernetes.io/zone": "a"}},
        "spec": {"storageClassName": "fast", "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"]},
        "status": {"phase": "Bound"}})));
    claim(&mut snap, "logs", "fast", Some("pv-a"));
    snap.upsert_pod(&with_claims("q", &["logs"])).unwrap();
    assert_eq!(node_of(&one(&mut snap, SchedulerConfig::default(), "q"), "q"), "n0");
    // An unbound Immediate claim: unresolvable, with upstream's message.
    storage(&mut snap, "Immediate");
    claim(&mut snap, "now", "fast", None);
    snap.upsert_pod(&with_claims("r", &["now"])).unwrap();
    let (code, message) = unschedulable(&one(&mut snap, SchedulerConfig::default(), "r"));
    assert_eq!(code, Code::UnschedulableAndUnresolvable);
    assert_eq!(message, "pod has unbound immediate PersistentVolumeClaims");
    // A missing claim.
    snap.upsert_pod(&with_claims("s", &["nope"])).unwrap();
    let (_, message) = unschedulable(&one(&mut snap, SchedulerConfig::default(), "s"));
    assert_eq!(message, "persistentvolumeclaim \"nope\" not found");
}

#[test]
fn csi_volume_limits_count_distinct_claims_per_node() {
    let mut snap = Snapshot::new();
    nodes(&mut snap, &[&[], &[]]);
    storage(&mut snap, "WaitForFirstConsumer");
    for n in ["n0", "n1"] {
        snap.upsert_csi_node(&from::<CSINode>(json!({"metadata": {"name": n},
            "spec": {"drivers": [{"name": "kwas.dev/sim-disk", "nodeID": n, "allocatable": {"count": 1}}]}})));
    }
    claim(&mut snap, "a", "fast", None);
    claim(&mut snap, "b", "fast", None);
    snap.upsert_pod(&bound(with_claims("pa", &["a"]), "n0")).unwrap();
    snap.upsert_pod(&with_claims("pb", &["b"])).unwrap();
    assert_eq!(node_of(&one(&mut snap, SchedulerConfig::default(), "pb"), "pb"), "n1");
    // The same claim again on n0 does not count twice.
    snap.upsert_pod(&with_claims("pa2", &["a"])).unwrap();
    let mut s2 = snap;
    s2.remove_node("n1");
    assert_eq!(node_of(&one(&mut s2, SchedulerConfig::default(), "pa2"), "pa2"), "n0");
    snap = s2;
    snap.upsert_pod(&with_claims("pc", &["b"])).unwrap();
    let (code, message) = unschedulable(&one(&mut snap, SchedulerConfig::default(), "pc"));
    assert_eq!(code, Code::Unschedulable);
    assert!(message.contains("node(s) exceed max volume count"), "{message}");
}

#[test]
fn unresolvable_members_stop_the_gang_and_preemption_is_not_attempted() {
    let mut snap = Snapshot::new();
    nodes(&mut snap, &[&[("zone", "a")], &[("zone", "a")]]);
    snap.upsert_pod_group(&GroupBuilder::gang(NS, "g", 2).priority(1000).pod_group())
        .unwrap();
    for i in 0..2 {
        let mut p = pod(&format!("p{i}"), Some("g"), &[], json!({}));
        p.spec.as_mut().unwrap().node_selector = Some([("zone".to_string(), "z".to_string())].into());
        p.spec.as_mut().unwrap().priority = Some(1000);
        snap.upsert_pod(&p).unwrap();
    }
    let out = gang(&mut snap, "g");
    let (code, message) = unschedulable(&out);
    assert_eq!(code, Code::UnschedulableAndUnresolvable, "{message}");
    assert!(
        message.contains("2 node(s) didn't match Pod's node affinity/selector"),
        "{message}"
    );
    let pre =
        Scheduler::new(SchedulerConfig::default()).preempt(&mut snap, &UnitKey::Group(GroupKey::pod_group(NS, "g")));
    assert_eq!(pre.verdict, PreemptionVerdict::NotHelpful);
    place(&mut snap, &out);
}

#[test]
fn a_claim_not_created_yet_keeps_the_pod_waiting() {
    let mut snap = Snapshot::new();
    nodes(&mut snap, &[&[]]);
    let claims = json!({"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]});
    snap.upsert_pod(&pod("dra", None, &[], claims)).unwrap();
    let (code, message) = unschedulable(&one(&mut snap, SchedulerConfig::default(), "dra"));
    assert_eq!(code, Code::UnschedulableAndUnresolvable);
    assert!(
        message.contains("waiting for resource claim \"gpu\" of pod ns/dra to be created"),
        "{message}"
    );
}
