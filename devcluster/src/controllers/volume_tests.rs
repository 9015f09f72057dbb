//! Unit tests of the PV controller and PVC / PV protection (`super`: `controllers::volume`).

use serde_json::{Value, json};

use super::*;
use crate::sim::csi::SIM_DISK_DRIVER;
use crate::sim::topology::{NodeSpec, node_object};

fn ctx() -> RequestContext {
    RequestContext::manager("t")
}

fn cluster() -> State {
    let mut state = State::new(10_000, Default::default());
    crate::sim::csi::bootstrap(&mut state);
    let res = state.builtin("", "nodes").unwrap();
    for (i, (name, zone)) in [("n1", "zone-a"), ("n2", "zone-b")].iter().enumerate() {
        let mut spec = NodeSpec::new(name);
        spec.labels
            .insert("topology.kubernetes.io/zone".into(), zone.to_string());
        state.create(&res, "", node_object(&spec, i + 1), &mut ctx()).unwrap();
    }
    state
}

fn pass(state: &mut State) {
    for _ in 0..3 {
        super::super::sync_storage(state);
        while super::super::process(state, 1000) > 0 {}
    }
}

fn create(state: &mut State, plural: &str, ns: &str, body: Value) -> Arc<Value> {
    let res = state
        .registry
        .get(
            if plural.ends_with("classes") {
                "storage.k8s.io"
            } else {
                ""
            },
            "v1",
            plural,
        )
        .unwrap();
    state.create(&res, ns, body, &mut ctx()).unwrap()
}

fn claim(state: &mut State, name: &str, class: Option<&str>, size: &str) -> Arc<Value> {
    let mut spec = json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}});
    if let Some(c) = class {
        spec["storageClassName"] = json!(c);
    }
    create(
        state,
        "persistentvolumeclaims",
        "default",
        json!({"metadata": {"name": name}, "spec": spec}),
    )
}

fn volume(state: &mut State, name: &str, class: &str, size: &str, modes: Value, extra: Value) {
    let mut spec = json!({"capacity": {"storage": size}, "accessModes": modes, "storageClassName": class,
        "hostPath": {"path": format!("/data/{name}")}});
    if let (Some(s), Some(e)) = (spec.as_object_mut(), extra.as_object()) {
        s.extend(e.clone());
    }
    create(
        state,
        "persistentvolumes",
        "",
        json!({"metadata": {"name": name}, "spec": spec}),
    );
}

fn get(state: &State, plural: &str, ns: &str, name: &str) -> Option<Value> {
    state
        .store
        .get(&GroupResource::new("", plural), ns, name)
        .map(|o| (*o).clone())
}

fn set_annotation_on(state: &mut State, name: &str, key: &str, value: &str) {
    let res = state.builtin("", "persistentvolumeclaims").unwrap();
    let mut pvc = get(state, "persistentvolumeclaims", "default", name).unwrap();
    pvc["metadata"]["annotations"][key] = json!(value);
    state.update(&res, "default", name, pvc, None, &mut ctx()).unwrap();
}

fn reasons(state: &State, obj: &Value) -> Vec<String> {
    crate::recorder::events_about(state, meta::uid(obj))
        .into_iter()
        .map(|(r, _)| r)
        .collect()
}

fn class(state: &mut State, name: &str, provisioner: &str, mode: &str, extra: Value) {
    let mut body = json!({"metadata": {"name": name}, "provisioner": provisioner, "volumeBindingMode": mode});
    if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
        b.extend(e.clone());
    }
    create(state, "storageclasses", "", body);
}

#[test]
fn an_immediate_claim_binds_the_smallest_matching_volume() {
    let mut state = cluster();
    class(
        &mut state,
        "manual",
        "kubernetes.io/no-provisioner",
        "Immediate",
        json!({}),
    );
    volume(&mut state, "big", "manual", "5Gi", json!(["ReadWriteOnce"]), json!({}));
    volume(
        &mut state,
        "small",
        "manual",
        "2Gi",
        json!(["ReadWriteOnce", "ReadOnlyMany"]),
        json!({}),
    );
    volume(&mut state, "tiny", "manual", "1Gi", json!(["ReadWriteOnce"]), json!({}));
    volume(
        &mut state,
        "shared",
        "manual",
        "1Gi",
        json!(["ReadWriteMany"]),
        json!({}),
    );
    volume(&mut state, "other", "", "1Gi", json!(["ReadWriteOnce"]), json!({}));
    pass(&mut state);
    assert_eq!(
        get(&state, "persistentvolumes", "", "tiny").unwrap()["status"]["phase"],
        "Available"
    );
    claim(&mut state, "data", Some("manual"), "1500Mi");
    pass(&mut state);
    // Volumes with exactly the claim's access modes come first (upstream's index by access modes): the
    // smallest of them that is large enough.
    let pvc = get(&state, "persistentvolumeclaims", "default", "data").unwrap();
    assert_eq!(pvc["spec"]["volumeName"], "big", "{pvc:#}");
    assert_eq!(pvc["status"]["phase"], "Bound");
    assert_eq!(pvc["status"]["capacity"]["storage"], "5Gi");
    assert_eq!(pvc["status"]["accessModes"], json!(["ReadWriteOnce"]));
    // The next one takes the smallest volume with more modes.
    claim(&mut state, "more", Some("manual"), "1500Mi");
    pass(&mut state);
    let more = get(&state, "persistentvolumeclaims", "default", "more").unwrap();
    assert_eq!(more["spec"]["volumeName"], "small");
    assert_eq!(more["status"]["accessModes"], json!(["ReadWriteOnce", "ReadOnlyMany"]));
    assert_eq!(pvc["metadata"]["annotations"][BIND_COMPLETED], "yes");
    assert_eq!(pvc["metadata"]["annotations"][BOUND_BY_CONTROLLER], "yes");
    let pv = get(&state, "persistentvolumes", "", "big").unwrap();
    assert_eq!(pv["status"]["phase"], "Bound");
    assert_eq!(pv["spec"]["claimRef"]["name"], "data");
    assert_eq!(pv["spec"]["claimRef"]["uid"], pvc["metadata"]["uid"]);
    assert_eq!(pv["metadata"]["annotations"][BOUND_BY_CONTROLLER], "yes");
    // A claim that names no class and no volume fits gets FailedBinding.
    claim(&mut state, "classless", Some(""), "10Gi");
    pass(&mut state);
    let pvc = get(&state, "persistentvolumeclaims", "default", "classless").unwrap();
    assert_eq!(pvc["status"]["phase"], "Pending");
    assert_eq!(reasons(&state, &pvc), ["FailedBinding"]);
}

#[test]
fn a_delayed_claim_waits_for_its_node_then_binds_a_volume_the_node_can_reach() {
    let mut state = cluster();
    class(
        &mut state,
        "local",
        "kubernetes.io/no-provisioner",
        "WaitForFirstConsumer",
        json!({}),
    );
    let on_n2 = json!({"nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n2"]}]}]}}});
    volume(&mut state, "local-n2", "local", "10Gi", json!(["ReadWriteOnce"]), on_n2);
    let pvc = claim(&mut state, "data", Some("local"), "1Gi");
    pass(&mut state);
    assert_eq!(
        get(&state, "persistentvolumeclaims", "default", "data").unwrap()["status"]["phase"],
        "Pending"
    );
    assert_eq!(reasons(&state, &pvc), ["WaitForFirstConsumer"]);
    let res = state.builtin("", "pods").unwrap();
    state
        .create(
            &res,
            "default",
            json!({"metadata": {"name": "user"}, "spec": {"containers": [{"name": "c", "image": "i"}],
                "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]}}),
            &mut ctx(),
        )
        .unwrap();
    pass(&mut state);
    let events = crate::recorder::events_about(&state, meta::uid(&pvc));
    assert!(
        events.contains(&(
            "WaitForPodScheduled".into(),
            "waiting for pod user to be scheduled".into()
        )),
        "{events:?}"
    );
    // The node the scheduler chose cannot reach the volume and nothing provisions for this class.
    set_annotation_on(&mut state, "data", SELECTED_NODE, "n1");
    pass(&mut state);
    assert_eq!(
        get(&state, "persistentvolumeclaims", "default", "data").unwrap()["status"]["phase"],
        "Pending"
    );
    assert!(reasons(&state, &pvc).contains(&"ProvisioningFailed".to_string()));
    set_annotation_on(&mut state, "data", SELECTED_NODE, "n2");
    pass(&mut state);
    let bound = get(&state, "persistentvolumeclaims", "default", "data").unwrap();
    assert_eq!(bound["spec"]["volumeName"], "local-n2");
    assert_eq!(bound["status"]["phase"], "Bound");
}

#[test]
fn the_default_class_provisions_on_the_selected_node() {
    let mut state = cluster();
    let pvc = claim(&mut state, "data", None, "3Gi");
    assert_eq!(pvc["spec"]["storageClassName"], "standard", "the default class");
    pass(&mut state);
    assert_eq!(reasons(&state, &pvc), ["WaitForFirstConsumer"]);
    assert!(state.store.list(&pvs(), None).is_empty());
    set_annotation_on(&mut state, "data", SELECTED_NODE, "n2");
    pass(&mut state);
    let pvc = get(&state, "persistentvolumeclaims", "default", "data").unwrap();
    let pv_name = format!("pvc-{}", meta::uid(&pvc));
    assert_eq!(pvc["spec"]["volumeName"], pv_name.as_str());
    assert_eq!(pvc["status"]["phase"], "Bound");
    assert_eq!(pvc["status"]["capacity"]["storage"], "3Gi");
    let anns = &pvc["metadata"]["annotations"];
    assert_eq!(anns[STORAGE_PROVISIONER], SIM_DISK_DRIVER);
    assert_eq!(anns[BETA_STORAGE_PROVISIONER], SIM_DISK_DRIVER);
    assert_eq!(anns[BIND_COMPLETED], "yes");
    let pv = get(&state, "persistentvolumes", "", &pv_name).unwrap();
    assert_eq!(pv["status"]["phase"], "Bound");
    assert_eq!(pv["metadata"]["annotations"][PROVISIONED_BY], SIM_DISK_DRIVER);
    assert!(
        pv["metadata"]["annotations"].get(BOUND_BY_CONTROLLER).is_none(),
        "provisioned for this claim"
    );
    assert_eq!(pv["metadata"]["labels"]["topology.kubernetes.io/zone"], "zone-b");
    assert_eq!(pv["spec"]["csi"]["driver"], SIM_DISK_DRIVER);
    assert_eq!(pv["spec"]["csi"]["fsType"], "ext4");
    assert_eq!(pv["spec"]["persistentVolumeReclaimPolicy"], "Delete");
    assert_eq!(
        pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"],
        json!([{"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["n2"]}]}])
    );
    let events = reasons(&state, &pvc);
    for want in ["ExternalProvisioning", "Provisioning", "ProvisioningSucceeded"] {
        assert!(events.contains(&want.to_string()), "{want} missing from {events:?}");
    }
}

#[test]
fn immediate_classes_provision_at_once_within_their_allowed_topologies() {
    let mut state = cluster();
    class(
        &mut state,
        "zonal",
        SIM_DISK_DRIVER,
        "Immediate",
        json!({"allowedTopologies": [{"matchLabelExpressions": [{"key": "topology.kubernetes.io/zone", "values": ["zone-a"]}]}]}),
    );
    claim(&mut state, "now", Some("zonal"), "1Gi");
    pass(&mut state);
    let pvc = get(&state, "persistentvolumeclaims", "default", "now").unwrap();
    assert_eq!(pvc["status"]["phase"], "Bound");
    let pv = get(
        &state,
        "persistentvolumes",
        "",
        pvc["spec"]["volumeName"].as_str().unwrap(),
    )
    .unwrap();
    assert_eq!(
        pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0],
        json!({"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-a"]})
    );
    // A selected node outside the allowed zones cannot be provisioned for.
    class(
        &mut state,
        "zonal-late",
        SIM_DISK_DRIVER,
        "WaitForFirstConsumer",
        json!({"allowedTopologies": [{"matchLabelExpressions": [{"key": "topology.kubernetes.io/zone", "values": ["zone-a"]}]}]}),
    );
    let late = claim(&mut state, "late", Some("zonal-late"), "1Gi");
    set_annotation_on(&mut state, "late", SELECTED_NODE, "n2");
    pass(&mut state);
    assert!(reasons(&state, &late).contains(&"ProvisioningFailed".to_string()));
    set_annotation_on(&mut state, "late", SELECTED_NODE, "n1");
    pass(&mut state);
    let late = get(&state, "persistentvolumeclaims", "default", "late").unwrap();
    assert_eq!(late["status"]["phase"], "Bound");
    // A selected node that does not exist is given back to the scheduler.
    let gone = claim(&mut state, "gone", None, "1Gi");
    set_annotation_on(&mut state, "gone", SELECTED_NODE, "n9");
    pass(&mut state);
    let after = get(&state, "persistentvolumeclaims", "default", "gone").unwrap();
    assert!(meta::annotation(&after, SELECTED_NODE).is_none());
    assert!(reasons(&state, &gone).contains(&"ProvisioningFailed".to_string()));
}

#[test]
fn released_volumes_are_deleted_or_retained_and_protection_waits_for_pods() {
    let mut state = cluster();
    class(
        &mut state,
        "keep",
        SIM_DISK_DRIVER,
        "Immediate",
        json!({"reclaimPolicy": "Retain"}),
    );
    claim(&mut state, "kept", Some("keep"), "1Gi");
    claim(&mut state, "tmp", None, "1Gi");
    set_annotation_on(&mut state, "tmp", SELECTED_NODE, "n1");
    pass(&mut state);
    let kept_pv = get(&state, "persistentvolumeclaims", "default", "kept").unwrap()["spec"]["volumeName"]
        .as_str()
        .unwrap()
        .to_string();
    let tmp_pv = get(&state, "persistentvolumeclaims", "default", "tmp").unwrap()["spec"]["volumeName"]
        .as_str()
        .unwrap()
        .to_string();
    // A scheduled pod mounting `tmp` holds it.
    let pods = state.builtin("", "pods").unwrap();
    state
        .create(
            &pods,
            "default",
            json!({"metadata": {"name": "user"}, "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}],
                "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "tmp"}}]}}),
            &mut ctx(),
        )
        .unwrap();
    let claims = state.builtin("", "persistentvolumeclaims").unwrap();
    state.delete(&claims, "default", "tmp", &Default::default()).unwrap();
    state.delete(&claims, "default", "kept", &Default::default()).unwrap();
    pass(&mut state);
    let tmp = get(&state, "persistentvolumeclaims", "default", "tmp").unwrap();
    assert!(meta::is_deleting(&tmp) && meta::finalizers(&tmp) == [PVC_PROTECTION]);
    assert!(get(&state, "persistentvolumeclaims", "default", "kept").is_none());
    let kept = get(&state, "persistentvolumes", "", &kept_pv).unwrap();
    assert_eq!(kept["status"]["phase"], "Released", "Retain keeps it");
    state
        .delete(
            &pods,
            "default",
            "user",
            &crate::api::DeleteOptions {
                grace_period_seconds: Some(0),
                ..Default::default()
            },
        )
        .unwrap();
    pass(&mut state);
    assert!(get(&state, "persistentvolumeclaims", "default", "tmp").is_none());
    assert!(
        get(&state, "persistentvolumes", "", &tmp_pv).is_none(),
        "Delete deletes the provisioned volume"
    );
    assert_eq!(
        get(&state, "persistentvolumes", "", &kept_pv).unwrap()["status"]["phase"],
        "Released"
    );
    // A released volume nothing provisioned, with policy Delete, fails: no plugin deletes it.
    class(
        &mut state,
        "manual",
        "kubernetes.io/no-provisioner",
        "Immediate",
        json!({}),
    );
    volume(
        &mut state,
        "byhand",
        "manual",
        "1Gi",
        json!(["ReadWriteOnce"]),
        json!({"persistentVolumeReclaimPolicy": "Delete"}),
    );
    claim(&mut state, "h", Some("manual"), "1Gi");
    pass(&mut state);
    state.delete(&claims, "default", "h", &Default::default()).unwrap();
    pass(&mut state);
    let failed = get(&state, "persistentvolumes", "", "byhand").unwrap();
    assert_eq!(failed["status"]["phase"], "Failed");
    assert_eq!(failed["status"]["message"], "no deletable volume plugin matched");
    // A deleting volume stays while it is bound.
    claim(&mut state, "b", None, "1Gi");
    set_annotation_on(&mut state, "b", SELECTED_NODE, "n1");
    pass(&mut state);
    let b_pv = get(&state, "persistentvolumeclaims", "default", "b").unwrap()["spec"]["volumeName"]
        .as_str()
        .unwrap()
        .to_string();
    let volumes = state.builtin("", "persistentvolumes").unwrap();
    state.delete(&volumes, "", &b_pv, &Default::default()).unwrap();
    pass(&mut state);
    assert!(meta::is_deleting(&get(&state, "persistentvolumes", "", &b_pv).unwrap()));
}

#[test]
fn bound_claims_of_an_expandable_class_grow() {
    let mut state = cluster();
    claim(&mut state, "data", None, "1Gi");
    set_annotation_on(&mut state, "data", SELECTED_NODE, "n1");
    pass(&mut state);
    let res = state.builtin("", "persistentvolumeclaims").unwrap();
    let mut pvc = get(&state, "persistentvolumeclaims", "default", "data").unwrap();
    pvc["spec"]["resources"]["requests"]["storage"] = json!("4Gi");
    state.update(&res, "default", "data", pvc, None, &mut ctx()).unwrap();
    pass(&mut state);
    let pvc = get(&state, "persistentvolumeclaims", "default", "data").unwrap();
    assert_eq!(pvc["status"]["capacity"]["storage"], "4Gi");
    let pv = get(
        &state,
        "persistentvolumes",
        "",
        pvc["spec"]["volumeName"].as_str().unwrap(),
    )
    .unwrap();
    assert_eq!(pv["spec"]["capacity"]["storage"], "4Gi");
    assert!(reasons(&state, &pvc).contains(&"VolumeResizeSuccessful".to_string()));
}

#[test]
fn every_node_registers_the_driver_and_loses_it_with_the_node() {
    let mut state = cluster();
    pass(&mut state);
    let csinodes = GroupResource::new("storage.k8s.io", "csinodes");
    let n1 = state.store.get(&csinodes, "", "n1").unwrap();
    let d = &n1["spec"]["drivers"][0];
    assert_eq!(d["name"], SIM_DISK_DRIVER);
    assert_eq!(d["nodeID"], "n1");
    assert_eq!(d["allocatable"]["count"], 16);
    assert_eq!(
        d["topologyKeys"],
        json!(["topology.kubernetes.io/zone", "kubernetes.io/hostname"])
    );
    assert_eq!(n1["metadata"]["ownerReferences"][0]["kind"], "Node");
    let nodes = state.builtin("", "nodes").unwrap();
    state
        .delete(
            &nodes,
            "",
            "n2",
            &crate::api::DeleteOptions {
                grace_period_seconds: Some(0),
                ..Default::default()
            },
        )
        .unwrap();
    pass(&mut state);
    assert!(state.store.get(&csinodes, "", "n2").is_none());
    assert!(
        state
            .store
            .get(&GroupResource::new("storage.k8s.io", "csidrivers"), "", SIM_DISK_DRIVER)
            .is_some()
    );
}

#[test]
fn registration_runs_again_only_when_nodes_or_csinodes_change() {
    let mut state = cluster();
    let mut csi = crate::sim::csi::Registration::default();
    let csinodes = GroupResource::new("storage.k8s.io", "csinodes");
    let csinodes_res = state.builtin("storage.k8s.io", "csinodes").unwrap();
    let mut gated_pass = |state: &mut State| {
        super::super::sync_storage_registering(state, &mut csi);
        while super::super::process(state, 1000) > 0 {}
    };
    gated_pass(&mut state);
    assert!(state.store.get(&csinodes, "", "n1").is_some());
    // Nothing changed: nothing written.
    let rv = state.store.current_rv();
    gated_pass(&mut state);
    assert_eq!(state.store.current_rv(), rv);
    // A new node is registered.
    let nodes = state.builtin("", "nodes").unwrap();
    state
        .create(&nodes, "", node_object(&NodeSpec::new("n3"), 3), &mut ctx())
        .unwrap();
    gated_pass(&mut state);
    assert_eq!(
        state.store.get(&csinodes, "", "n3").unwrap()["spec"]["drivers"][0]["nodeID"],
        "n3"
    );
    // A CSINode deleted, or stripped of the driver, is put back.
    let now = crate::api::DeleteOptions {
        grace_period_seconds: Some(0),
        ..Default::default()
    };
    state.delete(&csinodes_res, "", "n1", &now).unwrap();
    gated_pass(&mut state);
    assert!(state.store.get(&csinodes, "", "n1").is_some());
    let mut n2 = (*state.store.get(&csinodes, "", "n2").unwrap()).clone();
    n2["spec"]["drivers"] = json!([]);
    state.update(&csinodes_res, "", "n2", n2, None, &mut ctx()).unwrap();
    gated_pass(&mut state);
    assert_eq!(
        state.store.get(&csinodes, "", "n2").unwrap()["spec"]["drivers"][0]["name"],
        SIM_DISK_DRIVER
    );
}
