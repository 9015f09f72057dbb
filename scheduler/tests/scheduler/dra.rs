//! Dynamic resource allocation in the scheduler core: requests, selectors, constraints, alternatives,
//! exhaustion, all-or-nothing gangs, claims shared by a PodGroup, allocated claims pinning their
//! consumers, what cannot be honoured, and preemption freeing the devices of victims' claims.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::resource::v1::{DeviceClass, ResourceClaim, ResourceSlice};
use k8s_openapi::api::scheduling::v1alpha3::PodGroup;
use kwas_scheduler::core::testing::{GroupBuilder, bound, node_with, pod_with, with_priority};
use kwas_scheduler::core::{
    Code, GroupKey, PodKey, PreemptionVerdict, Rejection, Scheduler, SchedulerConfig, Snapshot, UnitKey, Verdict,
};
use serde_json::{Value, json};

const DRIVER: &str = "gpu.kwas.dev";
const DOMAIN: &str = "gpu.kwas.dev/interconnectDomain";

fn node(name: &str, rack: &str) -> Node {
    node_with(
        name,
        &[("cpu", "32"), ("memory", "256Gi"), ("pods", "110")],
        &[("kubernetes.io/hostname", name), ("kwas.dev/rack", rack)],
    )
}

fn class() -> DeviceClass {
    serde_json::from_value(json!({
        "metadata": {"name": DRIVER},
        "spec": {"selectors": [{"cel": {"expression": format!("device.driver == \"{DRIVER}\"")}}]}
    }))
    .unwrap()
}

/// A node's slice: `gpus` devices of `model`, in the node's rack's interconnect domain.
fn slice(node: &str, rack: &str, gpus: usize, model: &str) -> ResourceSlice {
    let devices: Vec<Value> = (0..gpus)
        .map(|i| {
            json!({"name": format!("gpu-{i}"), "attributes": {
                "model": {"string": model}, "index": {"int": i}, "interconnectDomain": {"string": rack}},
                "capacity": {"memory": {"value": "80Gi"}}})
        })
        .collect();
    serde_json::from_value(json!({
        "metadata": {"name": format!("{node}-{DRIVER}")},
        "spec": {"driver": DRIVER, "nodeName": node, "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                 "devices": devices}
    }))
    .unwrap()
}

fn claim(ns: &str, name: &str, devices: Value) -> ResourceClaim {
    serde_json::from_value(json!({
        "metadata": {"namespace": ns, "name": name, "uid": format!("uid-{name}")},
        "spec": {"devices": devices}
    }))
    .unwrap()
}

fn gpus(count: u32) -> Value {
    json!({"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER, "count": count}}]})
}

/// A pending pod of `group` using claim `claim` (by name).
fn pod_with_claim(ns: &str, name: &str, group: Option<&str>, claim: &str) -> Pod {
    let mut p = serde_json::to_value(pod_with(ns, name, group, &[("cpu", "1"), ("memory", "1Gi")])).unwrap();
    p["metadata"]["uid"] = json!(format!("uid-{name}"));
    p["spec"]["resourceClaims"] = json!([{"name": "gpu", "resourceClaimName": claim}]);
    serde_json::from_value(p).unwrap()
}

fn cluster(nodes: &[(&str, &str, usize, &str)]) -> Snapshot {
    let mut snap = Snapshot::new();
    snap.upsert_device_class(&class());
    for (n, rack, count, model) in nodes {
        snap.upsert_node(&node(n, rack)).unwrap();
        snap.upsert_resource_slice(&slice(n, rack, *count, model));
    }
    snap
}

fn schedule(snap: &mut Snapshot, unit: &UnitKey) -> kwas_scheduler::core::CycleOutcome {
    Scheduler::new(SchedulerConfig::default()).schedule(snap, unit)
}

/// Commits a scheduled outcome as the runtime would: pods assumed, allocations assumed.
fn commit(snap: &mut Snapshot, out: &kwas_scheduler::core::CycleOutcome) {
    for a in &out.assignments {
        snap.assume(&a.pod, &a.node).unwrap();
    }
    for (_, rs) in &out.reservations {
        for r in rs {
            if let Some(al) = &r.allocation {
                snap.assume_claim_allocation(&r.namespace, &r.claim, al);
            }
        }
    }
}

fn devices_of(out: &kwas_scheduler::core::CycleOutcome, pod: &str) -> Vec<(String, String)> {
    out.reservations
        .iter()
        .filter(|(p, _)| p.name == pod)
        .flat_map(|(_, rs)| rs.iter())
        .filter_map(|r| r.allocation.as_ref())
        .flat_map(|a| a.devices.as_ref().unwrap().results.clone().unwrap())
        .map(|r| (r.pool, r.device))
        .collect()
}

fn pod_unit(name: &str) -> UnitKey {
    UnitKey::Pod(PodKey::new("ns", name))
}

#[test]
fn a_pod_gets_its_devices_on_the_node_it_lands_on() {
    let mut snap = cluster(&[("n1", "r1", 2, "KW100"), ("n2", "r1", 4, "KW100")]);
    snap.upsert_resource_claim(&claim("ns", "c", gpus(3)));
    snap.upsert_pod(&pod_with_claim("ns", "p", None, "c")).unwrap();
    let out = schedule(&mut snap, &pod_unit("p"));
    assert_eq!(out.verdict, Verdict::Scheduled, "{out:?}");
    assert_eq!(out.assignments[0].node, "n2", "only n2 has three free devices");
    let devices = devices_of(&out, "p");
    assert_eq!(devices.len(), 3);
    assert!(devices.iter().all(|(pool, _)| pool == "n2"));
    let r = &out.reservations[0].1[0];
    assert_eq!((r.consumer.resource.as_str(), r.consumer.name.as_str()), ("pods", "p"));
    let sel = r.allocation.as_ref().unwrap().node_selector.clone().unwrap();
    let f = &sel.node_selector_terms[0].match_fields.as_ref().unwrap()[0];
    assert_eq!(
        (f.key.as_str(), f.values.clone().unwrap()),
        ("metadata.name", vec!["n2".to_string()])
    );
    // The cycle changed nothing: the same pod schedules the same way again.
    let again = schedule(&mut snap, &pod_unit("p"));
    assert_eq!(devices_of(&again, "p"), devices);
}

#[test]
fn devices_are_exhausted_and_an_assumed_allocation_holds_them() {
    let mut snap = cluster(&[("n1", "r1", 2, "KW100")]);
    for c in ["a", "b"] {
        snap.upsert_resource_claim(&claim("ns", c, gpus(2)));
        snap.upsert_pod(&pod_with_claim("ns", c, None, c)).unwrap();
    }
    let first = schedule(&mut snap, &pod_unit("a"));
    assert!(first.is_scheduled());
    commit(&mut snap, &first);
    let second = schedule(&mut snap, &pod_unit("b"));
    let Verdict::Unschedulable { code, message } = &second.verdict else {
        panic!("{second:?}")
    };
    assert_eq!(*code, Code::Unschedulable, "preemption could free devices");
    assert_eq!(message, "0/1 nodes are available: 1 cannot allocate all claims.");
    // The assumed allocation is dropped when its write fails: the devices are free again.
    snap.forget_claim_allocation("ns", "a");
    assert!(schedule(&mut snap, &pod_unit("b")).is_scheduled());
}

#[test]
fn cel_selectors_pick_devices_by_attribute_and_capacity() {
    let mut snap = cluster(&[("n1", "r1", 2, "KW100"), ("n2", "r1", 2, "KW200")]);
    let devices = json!({"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER, "selectors": [
        {"cel": {"expression": "device.attributes[\"gpu.kwas.dev\"].model == \"KW200\" && device.capacity[\"gpu.kwas.dev\"].memory.compareTo(quantity(\"40Gi\")) >= 0"}}
    ]}}]});
    snap.upsert_resource_claim(&claim("ns", "c", devices));
    snap.upsert_pod(&pod_with_claim("ns", "p", None, "c")).unwrap();
    let out = schedule(&mut snap, &pod_unit("p"));
    assert_eq!(out.assignments[0].node, "n2", "{out:?}");
    // Nothing matches: the message says so.
    let devices = json!({"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER, "selectors": [
        {"cel": {"expression": "device.attributes[\"gpu.kwas.dev\"].model == \"KW300\""}}]}}]});
    snap.upsert_resource_claim(&claim("ns", "none", devices));
    snap.upsert_pod(&pod_with_claim("ns", "q", None, "none")).unwrap();
    let out = schedule(&mut snap, &pod_unit("q"));
    assert!(!out.is_scheduled());
    // A selector reading a missing attribute is a runtime error, reported.
    let devices = json!({"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER, "selectors": [
        {"cel": {"expression": "device.attributes[\"gpu.kwas.dev\"].missing == 1"}}]}}]});
    snap.upsert_resource_claim(&claim("ns", "err", devices));
    snap.upsert_pod(&pod_with_claim("ns", "r", None, "err")).unwrap();
    let out = schedule(&mut snap, &pod_unit("r"));
    let Verdict::Unschedulable { message, .. } = &out.verdict else {
        panic!()
    };
    assert!(message.contains("CEL runtime error"), "{message}");
}

#[test]
fn match_attribute_keeps_a_claims_devices_in_one_interconnect_domain() {
    // One node with devices in two domains: 2 in d1, 3 in d2. Four devices in one domain cannot be
    // had; three can, all in d2.
    let mut snap = Snapshot::new();
    snap.upsert_device_class(&class());
    snap.upsert_node(&node("n1", "r1")).unwrap();
    let devices: Vec<Value> = (0..5)
        .map(|i| json!({"name": format!("gpu-{i}"), "attributes": {"interconnectDomain": {"string": if i < 2 {"d1"} else {"d2"}}}}))
        .collect();
    snap.upsert_resource_slice(
        &serde_json::from_value(
            json!({"metadata": {"name": "s"}, "spec": {"driver": DRIVER, "nodeName": "n1",
            "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1}, "devices": devices}}),
        )
        .unwrap(),
    );
    let constrained = |count: u32| {
        json!({"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER, "count": count}}],
               "constraints": [{"matchAttribute": DOMAIN}]})
    };
    snap.upsert_resource_claim(&claim("ns", "four", constrained(4)));
    snap.upsert_pod(&pod_with_claim("ns", "p4", None, "four")).unwrap();
    assert!(!schedule(&mut snap, &pod_unit("p4")).is_scheduled());
    snap.upsert_resource_claim(&claim("ns", "three", constrained(3)));
    snap.upsert_pod(&pod_with_claim("ns", "p3", None, "three")).unwrap();
    let out = schedule(&mut snap, &pod_unit("p3"));
    let mut d = devices_of(&out, "p3");
    d.sort();
    assert_eq!(
        d.into_iter().map(|(_, x)| x).collect::<Vec<_>>(),
        vec!["gpu-2", "gpu-3", "gpu-4"],
        "backtracking skips the d1 devices"
    );
    // distinctAttribute: two devices in different domains.
    snap.upsert_resource_claim(&claim(
        "ns",
        "apart",
        json!({"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER, "count": 2}}],
               "constraints": [{"distinctAttribute": DOMAIN}]}),
    ));
    snap.upsert_pod(&pod_with_claim("ns", "pa", None, "apart")).unwrap();
    let out = schedule(&mut snap, &pod_unit("pa"));
    let mut d: Vec<String> = devices_of(&out, "pa").into_iter().map(|(_, x)| x).collect();
    d.sort();
    assert_eq!(d, vec!["gpu-0", "gpu-2"]);
}

#[test]
fn first_available_and_all_mode() {
    let mut snap = cluster(&[("n1", "r1", 3, "KW100")]);
    snap.upsert_resource_claim(&claim(
        "ns",
        "alt",
        json!({"requests": [{"name": "gpu", "firstAvailable": [
            {"name": "big", "deviceClassName": DRIVER, "count": 4},
            {"name": "small", "deviceClassName": DRIVER, "count": 2}]}]}),
    ));
    snap.upsert_pod(&pod_with_claim("ns", "p", None, "alt")).unwrap();
    let out = schedule(&mut snap, &pod_unit("p"));
    let r = &out.reservations[0].1[0];
    let results = r
        .allocation
        .as_ref()
        .unwrap()
        .devices
        .as_ref()
        .unwrap()
        .results
        .clone()
        .unwrap();
    assert_eq!(results.len(), 2);
    assert!(results.iter().all(|x| x.request == "gpu/small"), "{results:?}");
    commit(&mut snap, &out);
    // `All` needs every matching device: one is left, two are taken.
    snap.upsert_resource_claim(&claim(
        "ns",
        "all",
        json!({"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER, "allocationMode": "All"}}]}),
    ));
    snap.upsert_pod(&pod_with_claim("ns", "q", None, "all")).unwrap();
    assert!(!schedule(&mut snap, &pod_unit("q")).is_scheduled());
}

#[test]
fn a_gang_that_does_not_fit_allocates_nothing() {
    let mut snap = cluster(&[("n1", "r1", 2, "KW100"), ("n2", "r1", 2, "KW100")]);
    snap.upsert_pod_group(&GroupBuilder::gang("ns", "g", 3).pod_group())
        .unwrap();
    for i in 0..3 {
        let c = format!("c{i}");
        snap.upsert_resource_claim(&claim("ns", &c, gpus(2)));
        snap.upsert_pod(&pod_with_claim("ns", &format!("p{i}"), Some("g"), &c))
            .unwrap();
    }
    let unit = UnitKey::Group(GroupKey::pod_group("ns", "g"));
    let out = schedule(&mut snap, &unit);
    assert!(!out.is_scheduled());
    assert!(out.reservations.is_empty());
    // Every device is still free: a gang of two fits now.
    snap.upsert_pod_group(&GroupBuilder::gang("ns", "h", 2).pod_group())
        .unwrap();
    for i in 0..2 {
        let c = format!("h{i}");
        snap.upsert_resource_claim(&claim("ns", &c, gpus(2)));
        snap.upsert_pod(&pod_with_claim("ns", &format!("q{i}"), Some("h"), &c))
            .unwrap();
    }
    let out = schedule(&mut snap, &UnitKey::Group(GroupKey::pod_group("ns", "h")));
    assert!(out.is_scheduled(), "{out:?}");
    assert_eq!(out.reservations.len(), 2);
}

#[test]
fn a_claim_shared_by_a_pod_group_pins_every_pod_to_its_domain() {
    // Interconnect channels: one per rack, published by a slice whose node selector is the rack.
    let mut snap = cluster(&[
        ("a1", "r1", 0, "KW100"),
        ("a2", "r1", 0, "KW100"),
        ("b1", "r2", 0, "KW100"),
        ("b2", "r2", 0, "KW100"),
    ]);
    let chan: DeviceClass = serde_json::from_value(json!({"metadata": {"name": "channel.kwas.dev"},
        "spec": {"selectors": [{"cel": {"expression": "device.driver == \"channel.kwas.dev\""}}]}}))
    .unwrap();
    snap.upsert_device_class(&chan);
    for rack in ["r1", "r2"] {
        let s: ResourceSlice = serde_json::from_value(json!({"metadata": {"name": format!("chan-{rack}")},
            "spec": {"driver": "channel.kwas.dev", "pool": {"name": rack, "generation": 1, "resourceSliceCount": 1},
                     "nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
                        {"key": "kwas.dev/rack", "operator": "In", "values": [rack]}]}]},
                     "devices": [{"name": "channel-0"}]}}))
        .unwrap();
        snap.upsert_resource_slice(&s);
    }
    // The group's claim (generated from a template) and three pods referencing it identically.
    let mut pg = serde_json::to_value(GroupBuilder::gang("ns", "g", 3).pod_group()).unwrap();
    pg["metadata"]["uid"] = json!("uid-g");
    pg["spec"]["resourceClaims"] = json!([{"name": "net", "resourceClaimTemplateName": "net"}]);
    pg["status"] = json!({"resourceClaimStatuses": [{"name": "net", "resourceClaimName": "g-net-x"}]});
    let pg: PodGroup = serde_json::from_value(pg).unwrap();
    snap.upsert_pod_group(&pg).unwrap();
    snap.upsert_resource_claim(&claim(
        "ns",
        "g-net-x",
        json!({"requests": [{"name": "channel", "exactly": {"deviceClassName": "channel.kwas.dev"}}]}),
    ));
    for i in 0..3 {
        let mut p = serde_json::to_value(pod_with("ns", &format!("p{i}"), Some("g"), &[("cpu", "20")])).unwrap();
        p["metadata"]["uid"] = json!(format!("uid-p{i}"));
        p["spec"]["resourceClaims"] = json!([{"name": "net", "resourceClaimTemplateName": "net"}]);
        snap.upsert_pod(&serde_json::from_value(p).unwrap()).unwrap();
    }
    // 20 cpu each on 32-cpu nodes: one pod per node, so three nodes; a rack has two. The shared
    // claim pins the gang to one rack: it cannot fit.
    let unit = UnitKey::Group(GroupKey::pod_group("ns", "g"));
    let out = schedule(&mut snap, &unit);
    assert!(!out.is_scheduled(), "{:?}", out.assignments);
    // With 10 cpu each it fits in one rack, one allocation, reserved for the PodGroup.
    snap.remove_pod(&PodKey::new("ns", "p2"));
    let mut pg2 = serde_json::to_value(&pg).unwrap();
    pg2["spec"]["schedulingPolicy"] = json!({"gang": {"minCount": 2}});
    snap.upsert_pod_group(&serde_json::from_value(pg2).unwrap()).unwrap();
    let out = schedule(&mut snap, &unit);
    assert!(out.is_scheduled(), "{out:?}");
    let racks: Vec<char> = out.assignments.iter().map(|a| a.node.chars().next().unwrap()).collect();
    assert!(
        racks.windows(2).all(|w| w[0] == w[1]),
        "one rack: {:?}",
        out.assignments
    );
    let allocations: Vec<_> = out
        .reservations
        .iter()
        .flat_map(|(_, rs)| rs.iter())
        .filter_map(|r| r.allocation.clone())
        .collect();
    assert_eq!(allocations.len(), 2, "both pods carry the one allocation");
    assert_eq!(allocations[0], allocations[1]);
    for (_, rs) in &out.reservations {
        assert_eq!(rs[0].consumer.resource, "podgroups");
        assert_eq!(rs[0].consumer.name, "g");
        assert_eq!(rs[0].consumer.uid, "uid-g");
    }
}

#[test]
fn an_allocated_claim_pins_its_consumers() {
    let mut snap = cluster(&[("n1", "r1", 2, "KW100"), ("n2", "r1", 2, "KW100")]);
    let mut c = serde_json::to_value(claim("ns", "c", gpus(1))).unwrap();
    c["status"] = json!({"allocation": {"devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": "n2", "device": "gpu-0"}]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}]}},
        "reservedFor": [{"resource": "pods", "name": "other", "uid": "uid-other"}]});
    snap.upsert_resource_claim(&serde_json::from_value(c).unwrap());
    snap.upsert_pod(&pod_with_claim("ns", "p", None, "c")).unwrap();
    let out = schedule(&mut snap, &pod_unit("p"));
    assert_eq!(out.assignments[0].node, "n2");
    let r = &out.reservations[0].1[0];
    assert!(
        r.allocation.is_none(),
        "already allocated: only the reservation is written"
    );
}

#[test]
fn claims_not_ready_or_not_honoured_are_explained() {
    let mut snap = cluster(&[("n1", "r1", 2, "KW100")]);
    // A template claim whose generated claim is not recorded yet.
    let mut p = serde_json::to_value(pod_with("ns", "waiting", None, &[("cpu", "1")])).unwrap();
    p["spec"]["resourceClaims"] = json!([{"name": "gpu", "resourceClaimTemplateName": "t"}]);
    snap.upsert_pod(&serde_json::from_value(p).unwrap()).unwrap();
    let out = schedule(&mut snap, &pod_unit("waiting"));
    let Verdict::Unschedulable { code, message } = &out.verdict else {
        panic!()
    };
    assert_eq!(*code, Code::UnschedulableAndUnresolvable);
    assert!(message.contains("waiting for resource claim \"gpu\""), "{message}");
    // A missing class.
    snap.upsert_resource_claim(&claim(
        "ns",
        "nc",
        json!({"requests": [{"name": "x", "exactly": {"deviceClassName": "nope"}}]}),
    ));
    snap.upsert_pod(&pod_with_claim("ns", "noclass", None, "nc")).unwrap();
    let out = schedule(&mut snap, &pod_unit("noclass"));
    let Verdict::Unschedulable { code, message } = &out.verdict else {
        panic!()
    };
    assert_eq!(*code, Code::UnschedulableAndUnresolvable);
    assert!(message.contains("device class nope does not exist"), "{message}");
    // adminAccess: not honoured, rejected distinctly.
    snap.upsert_resource_claim(&claim(
        "ns",
        "admin",
        json!({"requests": [{"name": "x", "exactly": {"deviceClassName": DRIVER, "adminAccess": true}}]}),
    ));
    snap.upsert_pod(&pod_with_claim("ns", "adm", None, "admin")).unwrap();
    let out = schedule(&mut snap, &pod_unit("adm"));
    assert_eq!(out.unschedulable_pods[0].rejection, Rejection::Unsupported);
    // A hostile selector: nested beyond the limit, never parsed.
    let deep = format!("{}true{}", "(".repeat(5000), ")".repeat(5000));
    snap.upsert_resource_claim(&claim(
        "ns",
        "deep",
        json!({"requests": [{"name": "x", "exactly": {"deviceClassName": DRIVER, "selectors": [{"cel": {"expression": deep}}]}}]}),
    ));
    snap.upsert_pod(&pod_with_claim("ns", "dp", None, "deep")).unwrap();
    let out = schedule(&mut snap, &pod_unit("dp"));
    let Verdict::Unschedulable { message, .. } = &out.verdict else {
        panic!()
    };
    assert!(message.contains("recursion limit exceeded"), "{message}");
}

#[test]
fn preemption_counts_the_devices_victims_free() {
    let mut snap = cluster(&[("n1", "r1", 2, "KW100")]);
    // A low-priority pod holds both devices.
    let mut c = serde_json::to_value(claim("ns", "low", gpus(2))).unwrap();
    c["status"] = json!({"allocation": {"devices": {"results": [
            {"request": "gpu", "driver": DRIVER, "pool": "n1", "device": "gpu-0"},
            {"request": "gpu", "driver": DRIVER, "pool": "n1", "device": "gpu-1"}]}},
        "reservedFor": [{"resource": "pods", "name": "low", "uid": "uid-low"}]});
    snap.upsert_resource_claim(&serde_json::from_value(c).unwrap());
    snap.upsert_pod(&bound(with_priority(pod_with_claim("ns", "low", None, "low"), 1), "n1"))
        .unwrap();
    snap.upsert_resource_claim(&claim("ns", "high", gpus(1)));
    snap.upsert_pod(&with_priority(pod_with_claim("ns", "high", None, "high"), 100))
        .unwrap();
    let sched = Scheduler::new(SchedulerConfig::default());
    let out = sched.schedule(&mut snap, &pod_unit("high"));
    assert!(!out.is_scheduled());
    let p = sched.preempt(&mut snap, &pod_unit("high"));
    assert_eq!(p.verdict, PreemptionVerdict::Preempt, "{}", p.message);
    assert_eq!(p.victims.len(), 1);
    assert_eq!(p.victims[0].pod.name, "low");
    // Nothing left changed by the simulation.
    assert!(!sched.schedule(&mut snap, &pod_unit("high")).is_scheduled());
}

#[test]
fn a_topology_constrained_gang_allocates_in_the_placement_it_chooses() {
    // Two racks of two nodes with four GPUs; a gang of four pods needing two GPUs each, in one rack:
    // the placement search tries both racks and replays the chosen one, allocations included.
    let mut snap = cluster(&[
        ("a1", "r1", 4, "KW100"),
        ("a2", "r1", 4, "KW100"),
        ("b1", "r2", 4, "KW100"),
        ("b2", "r2", 4, "KW100"),
    ]);
    snap.upsert_pod_group(&GroupBuilder::gang("ns", "g", 4).topology("kwas.dev/rack").pod_group())
        .unwrap();
    for i in 0..4 {
        let c = format!("c{i}");
        snap.upsert_resource_claim(&claim("ns", &c, gpus(2)));
        snap.upsert_pod(&pod_with_claim("ns", &format!("p{i}"), Some("g"), &c))
            .unwrap();
    }
    let out = schedule(&mut snap, &UnitKey::Group(GroupKey::pod_group("ns", "g")));
    assert!(out.is_scheduled(), "{out:?}");
    let racks: std::collections::BTreeSet<char> =
        out.assignments.iter().map(|a| a.node.chars().next().unwrap()).collect();
    assert_eq!(racks.len(), 1, "{:?}", out.assignments);
    let mut devices = Vec::new();
    for i in 0..4 {
        let d = devices_of(&out, &format!("p{i}"));
        assert_eq!(d.len(), 2, "p{i} has its allocation: {:?}", out.reservations);
        devices.extend(d);
    }
    devices.sort();
    devices.dedup();
    assert_eq!(devices.len(), 8, "no device given twice");
    // Committed, the next gang of the same shape takes the other rack.
    commit(&mut snap, &out);
    snap.upsert_pod_group(&GroupBuilder::gang("ns", "h", 4).topology("kwas.dev/rack").pod_group())
        .unwrap();
    for i in 0..4 {
        let c = format!("d{i}");
        snap.upsert_resource_claim(&claim("ns", &c, gpus(2)));
        snap.upsert_pod(&pod_with_claim("ns", &format!("q{i}"), Some("h"), &c))
            .unwrap();
    }
    let next = schedule(&mut snap, &UnitKey::Group(GroupKey::pod_group("ns", "h")));
    assert!(next.is_scheduled(), "{next:?}");
    let other: std::collections::BTreeSet<char> = next
        .assignments
        .iter()
        .map(|a| a.node.chars().next().unwrap())
        .collect();
    assert_eq!(other.len(), 1);
    assert_ne!(other, racks);
}

// ----- hostile claims: one user's claim costs its own pod at most one budget -----

/// A normal pod of a normal gang still binds after a hostile claim was tried, and quickly.
fn a_normal_gang_still_binds(snap: &mut Snapshot, tag: &str) {
    snap.upsert_pod_group(&GroupBuilder::gang("ns", tag, 2).pod_group())
        .unwrap();
    for i in 0..2 {
        let c = format!("{tag}-c{i}");
        snap.upsert_resource_claim(&claim("ns", &c, gpus(1)));
        snap.upsert_pod(&pod_with_claim("ns", &format!("{tag}-p{i}"), Some(tag), &c))
            .unwrap();
    }
    let t = std::time::Instant::now();
    let out = schedule(snap, &UnitKey::Group(GroupKey::pod_group("ns", tag)));
    assert_eq!(out.verdict, Verdict::Scheduled, "{out:?}");
    assert_eq!(out.assignments.len(), 2);
    assert!(t.elapsed() < std::time::Duration::from_secs(1), "{:?}", t.elapsed());
}

fn selector_claim(name: &str, expression: &str) -> ResourceClaim {
    claim(
        "ns",
        name,
        json!({"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER,
            "selectors": [{"cel": {"expression": expression}}]}}]}),
    )
}

/// Prints what an attack cost (run with `--release -- --nocapture` for the figures of a release build).
fn measured(attack: &str, t: std::time::Instant) {
    eprintln!("attack {attack}: rejected in {:?}", t.elapsed());
}

fn unschedulable_message(out: &kwas_scheduler::core::CycleOutcome) -> String {
    match &out.verdict {
        Verdict::Unschedulable { message, .. } => message.clone(),
        other => panic!("expected unschedulable, got {other:?}"),
    }
}

#[test]
fn a_selector_asking_for_a_trillion_elements_fails_its_pod_without_allocating_them() {
    let mut snap = cluster(&[("n1", "r1", 8, "KW100"), ("n2", "r1", 8, "KW100")]);
    snap.upsert_resource_claim(&selector_claim("huge", "lists.range(1000000000000).size() > 0"));
    snap.upsert_pod(&pod_with_claim("ns", "hostile", None, "huge")).unwrap();
    let t = std::time::Instant::now();
    let out = schedule(&mut snap, &pod_unit("hostile"));
    measured("lists.range(1e12) selector", t);
    let message = unschedulable_message(&out);
    assert!(
        message.contains("claim ns/huge: selector #0 on device gpu.kwas.dev/n1/gpu-0: CEL runtime error: operation cancelled: actual cost limit exceeded"),
        "{message}"
    );
    assert!(t.elapsed() < std::time::Duration::from_secs(5), "{:?}", t.elapsed());
    a_normal_gang_still_binds(&mut snap, "after-huge");
}

#[test]
fn nested_comprehensions_cost_their_pod_one_budget_and_name_the_claim() {
    let mut snap = cluster(&[
        ("n1", "r1", 8, "KW100"),
        ("n2", "r1", 8, "KW100"),
        ("n3", "r2", 8, "KW100"),
    ]);
    snap.upsert_resource_claim(&selector_claim(
        "nested",
        "lists.range(100000).all(i, lists.range(100000).all(j, i + j >= 0))",
    ));
    snap.upsert_pod(&pod_with_claim("ns", "hostile", None, "nested"))
        .unwrap();
    let t = std::time::Instant::now();
    let out = schedule(&mut snap, &pod_unit("hostile"));
    measured("nested comprehensions selector", t);
    let message = unschedulable_message(&out);
    assert!(
        message.starts_with(
            "claim ns/nested: allocation exceeded the scheduler's device allocation budget for one pod (5000000 steps)"
        ),
        "{message}"
    );
    assert!(message.contains("actual cost limit exceeded"), "{message}");
    assert!(t.elapsed() < std::time::Duration::from_secs(10), "{:?}", t.elapsed());
    a_normal_gang_still_binds(&mut snap, "after-nested");
}

#[test]
fn an_all_request_over_32_devices_is_refused_with_upstreams_message() {
    let mut snap = cluster(&[("n1", "r1", 40, "KW100")]);
    snap.upsert_resource_claim(&claim(
        "ns",
        "all",
        json!({"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER, "allocationMode": "All"}}]}),
    ));
    snap.upsert_pod(&pod_with_claim("ns", "greedy", None, "all")).unwrap();
    let out = schedule(&mut snap, &pod_unit("greedy"));
    let message = unschedulable_message(&out);
    assert!(
        message.contains("claim ns/all: number of requested devices 40 exceeds the claim limit of 32"),
        "{message}"
    );
    // Exactly 32 is fine, and the search does not recurse per device: a small stack suffices.
    let handle = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(|| {
            let mut snap = cluster(&[("n1", "r1", 32, "KW100")]);
            snap.upsert_resource_claim(&claim(
                "ns",
                "all",
                json!({"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER, "allocationMode": "All"}}]}),
            ));
            snap.upsert_pod(&pod_with_claim("ns", "p", None, "all")).unwrap();
            let out = schedule(&mut snap, &pod_unit("p"));
            assert_eq!(out.verdict, Verdict::Scheduled, "{out:?}");
            devices_of(&out, "p").len()
        })
        .unwrap();
    assert_eq!(handle.join().expect("no stack overflow"), 32);
    let mut snap = cluster(&[("n1", "r1", 8, "KW100")]);
    a_normal_gang_still_binds(&mut snap, "after-all");
}

#[test]
fn a_combinatorial_claim_stops_at_the_per_pod_budget_across_thousands_of_nodes() {
    // 2,000 nodes of 16 devices. Three requests of 4 and a fourth no device matches: a search over every
    // combination of the first three (63 million per node, 1.3e11 in all) before the budget; it now
    // stops at the pod's budget on the first node tried.
    let nodes: Vec<(String, String)> = (0..2000)
        .map(|i| (format!("n{i:04}"), format!("r{}", i / 16)))
        .collect();
    let spec: Vec<(&str, &str, usize, &str)> = nodes
        .iter()
        .map(|(n, r)| (n.as_str(), r.as_str(), 16, "KW100"))
        .collect();
    let mut snap = cluster(&spec);
    let four = |name: &str| json!({"name": name, "exactly": {"deviceClassName": DRIVER, "count": 4}});
    snap.upsert_resource_claim(&claim(
        "ns",
        "combo",
        json!({"requests": [four("a"), four("b"), four("c"),
            {"name": "none", "exactly": {"deviceClassName": DRIVER,
                "selectors": [{"cel": {"expression": format!("device.attributes[\"{DRIVER}\"].index > 100")}}]}}]}),
    ));
    snap.upsert_pod(&pod_with_claim("ns", "hostile", None, "combo"))
        .unwrap();
    let t = std::time::Instant::now();
    let out = schedule(&mut snap, &pod_unit("hostile"));
    measured("combinatorial claim on 2,000 nodes", t);
    let message = unschedulable_message(&out);
    assert!(
        message.starts_with("claim ns/combo: allocation exceeded the scheduler's device allocation budget for one pod"),
        "{message}"
    );
    assert!(t.elapsed() < std::time::Duration::from_secs(15), "{:?}", t.elapsed());
    a_normal_gang_still_binds(&mut snap, "after-combo");
}

#[test]
fn a_cycles_budget_stops_a_costly_gang_after_one_cycle_budget() {
    // Each pod's selector is affordable for the pod (8 devices x ~200,000) but the gang's together are
    // not: the cycle stops at its budget, naming the claim it was working on.
    let mut snap = cluster(&[("n1", "r1", 8, "KW100"), ("n2", "r1", 8, "KW100")]);
    snap.upsert_pod_group(&GroupBuilder::gang("ns", "g", 8).pod_group())
        .unwrap();
    for i in 0..8 {
        let c = format!("slow{i}");
        snap.upsert_resource_claim(&selector_claim(&c, &format!("lists.range(40000).all(i, i + {i} >= 0)")));
        snap.upsert_pod(&pod_with_claim("ns", &format!("g{i}"), Some("g"), &c))
            .unwrap();
    }
    let cfg = SchedulerConfig {
        dra_pod_budget: 5_000_000,
        dra_cycle_budget: 8_000_000,
        ..SchedulerConfig::default()
    };
    let t = std::time::Instant::now();
    let out = Scheduler::new(cfg).schedule(&mut snap, &UnitKey::Group(GroupKey::pod_group("ns", "g")));
    measured("gang of 8 costly claims, cycle budget 8,000,000", t);
    let message = unschedulable_message(&out);
    assert!(t.elapsed() < std::time::Duration::from_secs(20), "{:?}", t.elapsed());
    assert!(
        message
            .contains("allocation stopped: this scheduling cycle spent its device allocation budget (8000000 steps)"),
        "{message}"
    );
    a_normal_gang_still_binds(&mut snap, "after-cycle");
}
