//! The simulated DRA driver [`DRA_DRIVER`] (`gpu.kwas.dev`): what a DRA driver's kubelet plugin publishes
//! on a real cluster (through `k8s.io/dynamic-resource-allocation/resourceslice`), for GPUs that exist only
//! in the simulation.
//!
//! - At start ([`bootstrap`]): the DeviceClass [`DRA_DEVICE_CLASS`] (`gpu.kwas.dev`), selecting the
//!   driver's devices (`device.driver == "gpu.kwas.dev"`), as a cluster admin installs with a driver.
//! - For every node with DRA GPUs (the [`SIM_DRA_GPUS`](crate::sim::topology::SIM_DRA_GPUS) annotation, which topology nodes get from their
//!   pool's `draGpus`), one ResourceSlice `<node>-gpu.kwas.dev`, owned by the Node: `spec.nodeName` set,
//!   a pool named after the node (one slice per pool), and the devices `gpu-0` .. `gpu-<n-1>`, each with
//!   the attributes [`DRA_ATTRIBUTE_MODEL`] (string, [`SIM_DRA_GPU_MODEL`](crate::sim::topology::SIM_DRA_GPU_MODEL)), [`DRA_ATTRIBUTE_INDEX`] (int) and
//!   [`DRA_ATTRIBUTE_INTERCONNECT_DOMAIN`] (string: the node's `kwas.dev/rack` label, else its name) and the
//!   capacity [`DRA_CAPACITY_MEMORY`] ([`SIM_DRA_GPU_MEMORY`](crate::sim::topology::SIM_DRA_GPU_MEMORY)). A CEL selector reads them as
//!   `device.attributes["gpu.kwas.dev"].model == "KW100"` and
//!   `device.capacity["gpu.kwas.dev"].memory.compareTo(quantity("40Gi")) >= 0`.
//! - The slices follow the nodes: a node added gets its slice, a node whose GPUs, model, memory or rack
//!   change gets its devices republished with the pool's `generation` bumped, a removed node (or one
//!   whose GPUs go to 0) loses its slice; a slice of this driver a client changed or deleted is put back,
//!   and one for no node is deleted.
//!
//! Nodes `DevCluster` adds or removes get their slice in the same step ([`sync_node`]), so a cluster
//! starts with every slice published. For the rest it runs as its own task, woken by node and slice
//! changes, and looks at the nodes and slices those changes name (all of them when it fell behind the
//! watch history): the work per change does not grow with the cluster.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::api::{DeleteOptions, State};
use crate::cluster::Shared;
use crate::kinds::dra::{GROUP, MAX_ATTRIBUTE_VALUE_LENGTH};
use crate::meta;
use crate::request::RequestContext;
use crate::sim::topology::{DraGpus, node_gpus};
use crate::store::{EventType, GroupResource};

/// The simulated DRA driver's name.
pub const DRA_DRIVER: &str = "gpu.kwas.dev";
/// The DeviceClass devcluster creates for the driver's devices.
pub const DRA_DEVICE_CLASS: &str = "gpu.kwas.dev";
/// The device attribute with the GPU model (a string).
pub const DRA_ATTRIBUTE_MODEL: &str = "model";
/// The device attribute with the GPU's index on its node (an int, 0 ..).
pub const DRA_ATTRIBUTE_INDEX: &str = "index";
pub use crate::sim::topology::DRA_ATTRIBUTE_INTERCONNECT_DOMAIN;
/// The device capacity with the GPU's memory (a quantity).
pub const DRA_CAPACITY_MEMORY: &str = "memory";

/// The field manager of the driver's writes (a kubelet plugin writes as its node).
const MANAGER: &str = "gpu.kwas.dev-kubelet-plugin";

fn nodes_gr() -> GroupResource {
    GroupResource::new("", "nodes")
}

fn slices_gr() -> GroupResource {
    GroupResource::new(GROUP, "resourceslices")
}

/// Creates the driver's DeviceClass.
pub(crate) fn bootstrap(state: &mut State) {
    let Some(res) = state.builtin(GROUP, "deviceclasses") else {
        return;
    };
    let class = json!({
        "metadata": {"name": DRA_DEVICE_CLASS},
        "spec": {"selectors": [{"cel": {"expression": format!("device.driver == {DRA_DRIVER:?}")}}]},
    });
    if let Err(e) = state.create(&res, "", class, &mut RequestContext::manager("kube-apiserver")) {
        tracing::warn!(error = %e, "creating the DRA DeviceClass failed");
    }
}

/// The name of a node's slice: `<node>-gpu.kwas.dev`, the node part shortened (with a hash, so two long
/// names stay apart) when that would exceed a name's 253 bytes.
pub fn dra_slice_name(node: &str) -> String {
    let suffix = format!("-{DRA_DRIVER}");
    if node.len() + suffix.len() <= 253 {
        return format!("{node}{suffix}");
    }
    let hash = fnv(node);
    let keep = 253 - suffix.len() - 9;
    let prefix: String = node.chars().take(keep).collect();
    let prefix = prefix.trim_end_matches(['-', '.']);
    format!("{prefix}-{hash:08x}{suffix}")
}

fn fnv(s: &str) -> u32 {
    s.bytes()
        .fold(0x811c_9dc5_u32, |h, b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193))
}

/// A node's interconnect domain: its `kwas.dev/rack` label, else its name (shortened with a hash past an
/// attribute's 64 bytes).
fn interconnect_domain(node: &Value) -> String {
    let labels = meta::string_map(node, "labels");
    if let Some((_, rack)) = labels
        .iter()
        .find(|(k, v)| k == kwas_api_types::names::labels::RACK && !v.is_empty())
    {
        return rack.clone();
    }
    let name = meta::name(node);
    if name.len() <= MAX_ATTRIBUTE_VALUE_LENGTH {
        return name.to_string();
    }
    let keep: String = name.chars().take(MAX_ATTRIBUTE_VALUE_LENGTH - 9).collect();
    format!("{keep}-{:08x}", fnv(name))
}

/// The devices of a node's slice.
fn devices(node: &Value, gpus: &DraGpus) -> Value {
    let domain = interconnect_domain(node);
    Value::Array(
        (0..gpus.count)
            .map(|i| {
                json!({
                    "name": format!("gpu-{i}"),
                    "attributes": {
                        DRA_ATTRIBUTE_MODEL: {"string": gpus.model},
                        DRA_ATTRIBUTE_INDEX: {"int": i},
                        DRA_ATTRIBUTE_INTERCONNECT_DOMAIN: {"string": domain},
                    },
                    "capacity": {DRA_CAPACITY_MEMORY: {"value": gpus.memory}},
                })
            })
            .collect(),
    )
}

/// Brings one node's slice (`<node>-gpu.kwas.dev`) in line with the node; `node` is its name. Slices
/// of this driver under other names are [`sync_slice`]'s.
pub(crate) fn sync_node(state: &mut State, node: &str) {
    let Some(res) = state.builtin(GROUP, "resourceslices") else {
        return;
    };
    let name = dra_slice_name(node);
    let node_obj = state.store.get(&nodes_gr(), "", node).filter(|n| !meta::is_deleting(n));
    let gpus = node_obj.as_deref().map(node_gpus).unwrap_or_else(DraGpus::none);
    if gpus.count == 0 {
        if state.store.get(&res.storage, "", &name).is_some()
            && let Err(e) = state.delete(&res, "", &name, &DeleteOptions::default())
        {
            tracing::debug!(slice = %name, error = %e, "deleting a ResourceSlice failed");
        }
        return;
    }
    let Some(node_obj) = node_obj.filter(|_| gpus.count > 0) else {
        return;
    };
    let devices = devices(&node_obj, &gpus);
    let mut ctx = RequestContext::manager(MANAGER);
    match state.store.get(&res.storage, "", &name) {
        None => {
            let slice = json!({
                "metadata": {"name": name, "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": node,
                    "uid": meta::uid(&node_obj), "controller": true}]},
                "spec": {"driver": DRA_DRIVER, "nodeName": node,
                    "pool": {"name": node, "generation": 1, "resourceSliceCount": 1}, "devices": devices},
            });
            if let Err(e) = state.create(&res, "", slice, &mut ctx) {
                tracing::debug!(node, error = %e, "publishing a ResourceSlice failed");
            }
        }
        Some(existing) => {
            let current = |p: &str| existing.pointer(p).cloned().unwrap_or(Value::Null);
            let same = current("/spec/devices") == devices
                && current("/spec/driver") == json!(DRA_DRIVER)
                && current("/spec/nodeName") == json!(node)
                && current("/spec/pool/name") == json!(node)
                && current("/spec/pool/resourceSliceCount") == json!(1)
                && ["nodeSelector", "allNodes", "perDeviceNodeSelection", "sharedCounters"]
                    .iter()
                    .all(|f| existing.pointer(&format!("/spec/{f}")).is_none_or(Value::is_null));
            if same {
                return;
            }
            let generation = existing
                .pointer("/spec/pool/generation")
                .and_then(Value::as_i64)
                .unwrap_or(0)
                .saturating_add(1);
            let mut new = (*existing).clone();
            new["spec"] = json!({"driver": DRA_DRIVER, "nodeName": node,
                "pool": {"name": node, "generation": generation, "resourceSliceCount": 1}, "devices": devices});
            if existing.pointer("/spec/driver") != Some(&json!(DRA_DRIVER))
                || existing.pointer("/spec/nodeName") != Some(&json!(node))
                || existing.pointer("/spec/pool/name") != Some(&json!(node))
            {
                // Its identity is immutable: replace it.
                let _ = state.delete(&res, "", &name, &DeleteOptions::default());
                let owners = existing.pointer("/metadata/ownerReferences").cloned();
                new["metadata"] = json!({"name": name, "ownerReferences": owners.unwrap_or(json!([]))});
                if let Err(e) = state.create(&res, "", new, &mut ctx) {
                    tracing::debug!(node, error = %e, "republishing a ResourceSlice failed");
                }
                return;
            }
            if let Err(e) = state.update(&res, "", &name, new, None, &mut ctx) {
                tracing::debug!(node, error = %e, "updating a ResourceSlice failed");
            }
        }
    }
}

/// A slice of this driver that is not the one its node should have (another name, no node) is deleted;
/// the node's own slice is brought in line. Other drivers' slices are left alone. Returns the node the
/// slice is for, if any.
pub(crate) fn sync_slice(state: &mut State, slice: &Value) -> Option<String> {
    if slice.pointer("/spec/driver").and_then(Value::as_str) != Some(DRA_DRIVER) {
        return None;
    }
    let node = slice
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .map(str::to_string);
    let name = meta::name(slice);
    if node.as_deref().is_none_or(|n| dra_slice_name(n) != name)
        && let Some(res) = state.builtin(GROUP, "resourceslices")
        && state.store.get(&res.storage, "", name).is_some()
        && let Err(e) = state.delete(&res, "", name, &DeleteOptions::default())
    {
        tracing::debug!(slice = %name, error = %e, "deleting a stale ResourceSlice failed");
    }
    node
}

/// Every node's slice, and the driver's slices that no node should have.
pub(crate) fn resync(state: &mut State) {
    let mut nodes: BTreeSet<String> = state
        .store
        .list(&nodes_gr(), None)
        .iter()
        .map(|n| meta::name(n).to_string())
        .collect();
    for s in state.store.list(&slices_gr(), None) {
        nodes.extend(sync_slice(state, &s));
    }
    for n in nodes {
        sync_node(state, &n);
    }
    super::interconnect::sync(state);
}

/// Runs the driver until the cluster shuts down.
pub(crate) async fn run(shared: Arc<Shared>) {
    let (nodes, slices) = (nodes_gr(), slices_gr());
    let mut shutdown = shared.shutdown_signal();
    let (mut node_sub, mut slice_sub, start) = shared.with(|s| {
        let subs = (s.store.subscribe(&nodes), s.store.subscribe(&slices));
        resync(s);
        (subs.0, subs.1, s.store.current_rv())
    });
    let (mut last_node, mut last_slice) = (start, start);
    loop {
        node_sub.borrow_and_update();
        slice_sub.borrow_and_update();
        let progressed = shared.with(|s| {
            let now = s.store.current_rv();
            let mut touched = BTreeSet::new();
            let mut everything = false;
            match s.store.events_since(&nodes, last_node, 512) {
                Ok(events) => {
                    for e in &events {
                        last_node = e.rv;
                        touched.insert(meta::name(&e.object).to_string());
                    }
                }
                Err(_) => {
                    last_node = now;
                    everything = true;
                }
            }
            match s.store.events_since(&slices, last_slice, 512) {
                Ok(events) => {
                    for e in &events {
                        last_slice = e.rv;
                        if e.kind != EventType::Deleted {
                            touched.extend(sync_slice(s, &e.object));
                        } else if e.object.pointer("/spec/driver").and_then(Value::as_str) == Some(DRA_DRIVER)
                            && let Some(n) = e.object.pointer("/spec/nodeName").and_then(Value::as_str)
                        {
                            touched.insert(n.to_string());
                        }
                    }
                }
                Err(_) => {
                    last_slice = now;
                    everything = true;
                }
            }
            if everything {
                resync(s);
                return true;
            }
            for n in &touched {
                sync_node(s, n);
            }
            if !touched.is_empty() {
                super::interconnect::sync(s);
            }
            !touched.is_empty()
        });
        if progressed {
            tokio::task::yield_now().await;
            continue;
        }
        tokio::select! {
            r = node_sub.changed() => if r.is_err() { return },
            r = slice_sub.changed() => if r.is_err() { return },
            _ = crate::cluster::stopped(&mut shutdown) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::dra::MAX_DEVICES;
    use crate::sim::topology::{NodeSpec, SIM_DRA_GPUS, node_object};

    fn state_with_node(spec: &NodeSpec) -> State {
        let mut state = State::new(1000, Default::default());
        bootstrap(&mut state);
        let res = state.builtin("", "nodes").unwrap();
        state
            .create(&res, "", node_object(spec, 1), &mut RequestContext::manager("t"))
            .unwrap();
        state
    }

    fn slice(state: &State, node: &str) -> Option<Arc<Value>> {
        state.store.get(&slices_gr(), "", &dra_slice_name(node))
    }

    #[test]
    fn a_node_gets_a_slice_that_follows_its_gpus_and_rack() {
        let mut spec = NodeSpec::new("n1");
        spec.labels.insert("kwas.dev/rack".into(), "b0-r1".into());
        let mut state = state_with_node(&spec);
        assert!(
            state
                .store
                .get(&GroupResource::new(GROUP, "deviceclasses"), "", DRA_DEVICE_CLASS)
                .is_some()
        );
        resync(&mut state);
        let s = slice(&state, "n1").expect("the node's slice");
        assert_eq!(s["metadata"]["name"], "n1-gpu.kwas.dev");
        assert_eq!(s["metadata"]["ownerReferences"][0]["kind"], "Node");
        assert_eq!(
            s["spec"]["pool"],
            json!({"name": "n1", "generation": 1, "resourceSliceCount": 1})
        );
        assert_eq!(s["spec"]["devices"].as_array().unwrap().len(), 8);
        assert_eq!(
            s["spec"]["devices"][3],
            json!({"name": "gpu-3", "attributes": {"model": {"string": "KW100"}, "index": {"int": 3},
                "interconnectDomain": {"string": "b0-r1"}}, "capacity": {"memory": {"value": "80Gi"}}})
        );
        // This driver's slices under other names go; another driver's stay.
        let slices = state.builtin(GROUP, "resourceslices").unwrap();
        for (name, driver) in [("stale", DRA_DRIVER), ("theirs", "other.example.com")] {
            let other = json!({"metadata": {"name": name}, "spec": {"driver": driver, "nodeName": "n1",
                "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1}, "devices": [{"name": "d"}]}});
            state
                .create(&slices, "", other, &mut RequestContext::manager("t"))
                .unwrap();
        }
        resync(&mut state);
        assert!(state.store.get(&slices_gr(), "", "stale").is_none());
        assert!(state.store.get(&slices_gr(), "", "theirs").is_some());
        // Nothing changed: no write.
        let rv = meta::resource_version(&s).to_string();
        sync_node(&mut state, "n1");
        assert_eq!(meta::resource_version(&slice(&state, "n1").unwrap()), rv);
        // Fewer GPUs: republished, generation bumped.
        let nodes = state.builtin("", "nodes").unwrap();
        let mut node = (*state.store.get(&nodes_gr(), "", "n1").unwrap()).clone();
        node["metadata"]["annotations"][SIM_DRA_GPUS] = json!("2");
        node["metadata"]["labels"]
            .as_object_mut()
            .unwrap()
            .remove("kwas.dev/rack");
        state
            .update(&nodes, "", "n1", node.clone(), None, &mut RequestContext::manager("t"))
            .unwrap();
        sync_node(&mut state, "n1");
        let s = slice(&state, "n1").unwrap();
        assert_eq!(s["spec"]["pool"]["generation"], 2);
        assert_eq!(s["spec"]["devices"].as_array().unwrap().len(), 2);
        assert_eq!(
            s["spec"]["devices"][0]["attributes"]["interconnectDomain"]["string"],
            "n1"
        );
        // No GPUs: no slice.
        let mut node = (*state.store.get(&nodes_gr(), "", "n1").unwrap()).clone();
        node["metadata"]["annotations"][SIM_DRA_GPUS] = json!("0");
        let node = state
            .update(&nodes, "", "n1", node, None, &mut RequestContext::manager("t"))
            .unwrap();
        sync_node(&mut state, "n1");
        assert!(slice(&state, "n1").is_none());
        // A hostile count is capped at one slice's devices.
        let mut node = (*node).clone();
        node["metadata"]["annotations"][SIM_DRA_GPUS] = json!("4294967295");
        state
            .update(&nodes, "", "n1", node, None, &mut RequestContext::manager("t"))
            .unwrap();
        sync_node(&mut state, "n1");
        assert_eq!(
            slice(&state, "n1").unwrap()["spec"]["devices"]
                .as_array()
                .unwrap()
                .len(),
            MAX_DEVICES
        );
        // The node goes: so does the slice.
        state
            .delete(
                &nodes,
                "",
                "n1",
                &DeleteOptions {
                    grace_period_seconds: Some(0),
                    ..Default::default()
                },
            )
            .unwrap();
        resync(&mut state);
        assert!(slice(&state, "n1").is_none());
    }

    #[test]
    fn long_node_names_get_valid_slice_names_and_domains() {
        let long = format!("{}.example.com", "a".repeat(240));
        let name = dra_slice_name(&long);
        assert!(name.len() <= 253, "{}", name.len());
        assert!(
            workloadbuilder::validation::strings::is_dns1123_subdomain(&name).is_empty(),
            "{name}"
        );
        assert_ne!(dra_slice_name(&format!("{long}x")), name);
        let mut state = State::new(1000, Default::default());
        let nodes = state.builtin("", "nodes").unwrap();
        let node = json!({"metadata": {"name": long, "annotations": {SIM_DRA_GPUS: "1"}}});
        state
            .create(&nodes, "", node, &mut RequestContext::manager("t"))
            .unwrap();
        resync(&mut state);
        let s = slice(&state, &long).expect("a slice for a long node name");
        let domain = s["spec"]["devices"][0]["attributes"]["interconnectDomain"]["string"]
            .as_str()
            .unwrap();
        assert!(domain.len() <= 64, "{domain}");
    }
}
