//! The simulated CSI driver [`SIM_DISK_DRIVER`] (`sim-disk.kwas.dev`): what its node plugins, its
//! external-provisioner and its external-resizer do on a real cluster.
//!
//! - At start ([`bootstrap`]): its CSIDriver (no attach, persistent volumes) and the default StorageClass
//!   `standard` (`WaitForFirstConsumer`, reclaim policy `Delete`, expansion allowed).
//! - Node registration: a CSINode per Node (same name, owned by the Node, so it goes with it) listing the
//!   driver with its `nodeID`, topology keys (`kubernetes.io/hostname`, and `topology.kubernetes.io/zone`
//!   when the node has one) and `allocatable.count` ([`CsiConfig::attach_limit`]).
//! - Provisioning: a claim the PV controller handed to the driver (`volume.kubernetes.io/storage-provisioner`)
//!   gets a PersistentVolume `pvc-<claim uid>`: the claim's size, access modes and volume mode, the class's
//!   reclaim policy and mount options, a `csi` source, `claimRef` and `pv.kubernetes.io/provisioned-by`.
//!   With a selected node (`volume.kubernetes.io/selected-node`, required for `WaitForFirstConsumer`) the
//!   volume is pinned to it by node affinity (`kubernetes.io/hostname`), or, when the class has
//!   `allowedTopologies`, to the allowed topology values the node has; without one it is accessible wherever
//!   the class's `allowedTopologies` allow (everywhere without them). It is labelled with the node's zone.
//!   Events `Provisioning` and `ProvisioningSucceeded` / `ProvisioningFailed` as the external-provisioner
//!   writes them; a selected node that does not exist is removed from the claim so that it is scheduled
//!   again. The PV controller then binds the two.
//! - Deletion: a `Released` volume it provisioned with reclaim policy `Delete` is deleted.
//! - Expansion: a bound claim whose request grew past its capacity gets it: the volume's capacity and the
//!   claim's `status.capacity` (controller and node expansion at once), with `Resizing` and
//!   `VolumeResizeSuccessful` events.

use std::sync::{Arc, LazyLock};

use serde_json::{Map, Value, json};

use crate::api::{DeleteOptions, State};
use crate::kinds::storage::{
    BETA_STORAGE_PROVISIONER, DEFAULT_CLASS, PROVISIONED_BY, SELECTED_NODE, STORAGE_PROVISIONER, claim_class,
};
use crate::kinds::validate::storage_bytes;
use crate::meta;
use crate::recorder::{self, EventType};
use crate::request::RequestContext;
use crate::store::GroupResource;
use crate::views::claim_ref;

/// The simulated CSI driver's name (a CSI driver name is a DNS subdomain, so it cannot contain a `/`).
pub const SIM_DISK_DRIVER: &str = "sim-disk.kwas.dev";
/// The default StorageClass devcluster creates at start.
pub const DEFAULT_STORAGE_CLASS: &str = "standard";
/// The label carrying a node's hostname.
const HOSTNAME: &str = "kubernetes.io/hostname";
/// The label carrying a node's zone.
const ZONE: &str = "topology.kubernetes.io/zone";
const MANAGER: &str = "csi-provisioner";

/// Settings of the simulated CSI driver.
#[derive(Debug, Clone)]
pub struct CsiConfig {
    /// How many of the driver's volumes one node can use: each CSINode's `allocatable.count` (what
    /// kube-scheduler's NodeVolumeLimits counts against). 16 by default.
    pub attach_limit: u32,
}

impl Default for CsiConfig {
    fn default() -> Self {
        CsiConfig {
            attach_limit: crate::resource::DEFAULT_SIM_DISK_ATTACH_LIMIT,
        }
    }
}

/// The external-provisioner's identity (`<start time>-<random>-<driver>`), recorded on the volumes it
/// provisions.
static IDENTITY: LazyLock<String> = LazyLock::new(|| {
    format!(
        "{}-{}-{SIM_DISK_DRIVER}",
        jiff::Timestamp::now().as_millisecond(),
        fastrand::u32(..10_000)
    )
});

/// The events' source, as the external-provisioner names itself.
fn component() -> String {
    format!("{SIM_DISK_DRIVER}_devcluster")
}

/// Creates the driver's CSIDriver and the default StorageClass `standard`.
pub(crate) fn bootstrap(state: &mut State) {
    let mut ctx = RequestContext::manager("kube-apiserver");
    if let Some(res) = state.builtin("storage.k8s.io", "csidrivers") {
        let driver = json!({
            "metadata": {"name": SIM_DISK_DRIVER},
            "spec": {"attachRequired": false, "podInfoOnMount": false, "volumeLifecycleModes": ["Persistent"]},
        });
        let _ = state.create(&res, "", driver, &mut ctx);
    }
    if let Some(res) = state.builtin("storage.k8s.io", "storageclasses") {
        let class = json!({
            "metadata": {"name": DEFAULT_STORAGE_CLASS, "annotations": {DEFAULT_CLASS: "true"}},
            "provisioner": SIM_DISK_DRIVER,
            "reclaimPolicy": "Delete",
            "volumeBindingMode": "WaitForFirstConsumer",
            "allowVolumeExpansion": true,
        });
        let _ = state.create(&res, "", class, &mut ctx);
    }
}

/// What node registration remembers between passes: the store's resourceVersion after the last pass
/// that registered every node (`None`: none did). Registration reads only Nodes and CSINodes, so while
/// neither changed since, a pass would find every node registered and is skipped.
#[derive(Debug, Default)]
pub(crate) struct Registration {
    synced: Option<u64>,
}

impl Registration {
    /// Whether a Node or CSINode changed since the last complete pass (or none was made).
    fn needed(&self, state: &mut State) -> bool {
        let Some(since) = self.synced else {
            return true;
        };
        [
            GroupResource::new("", "nodes"),
            GroupResource::new("storage.k8s.io", "csinodes"),
        ]
        .iter()
        .any(|gr| !matches!(state.store.events_since(gr, since, 1), Ok(events) if events.is_empty()))
    }
}

/// One pass of the driver, registering nodes only when `registration` says Nodes or CSINodes changed;
/// returns how many volumes it provisioned (the PV controller binds them next).
pub(crate) fn sync_registering(state: &mut State, registration: &mut Registration) -> usize {
    if registration.needed(state) {
        // Its own writes are what it computed: the next pass starts after them. A failed one is retried.
        let complete = register_nodes(state);
        registration.synced = complete.then(|| state.store.current_rv());
    }
    let provisioned = provision_claims(state);
    expand(state);
    delete_released(state);
    provisioned
}

/// The driver's entry of a node's CSINode.
fn node_driver(node: &Value, limit: i64) -> Value {
    let labels = meta::metadata(node)
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object);
    let keys: Vec<&str> = [ZONE, HOSTNAME]
        .into_iter()
        .filter(|k| labels.is_some_and(|l| l.contains_key(*k)))
        .collect();
    json!({"name": SIM_DISK_DRIVER, "nodeID": meta::name(node), "topologyKeys": keys, "allocatable": {"count": limit}})
}

/// Registers the driver on every node that lacks it (creating the node's CSINode, owned by the Node).
/// False when a write failed.
fn register_nodes(state: &mut State) -> bool {
    let limit = i64::from(state.settings.sim_disk_attach_limit);
    let Some(res) = state.builtin("storage.k8s.io", "csinodes") else {
        return true;
    };
    let mut complete = true;
    for node in state.store.list(&GroupResource::new("", "nodes"), None) {
        if meta::is_deleting(&node) {
            continue;
        }
        let name = meta::name(&node).to_string();
        let mut ctx = RequestContext::manager("kubelet");
        match state.store.get(&res.storage, "", &name) {
            None => {
                let csinode = json!({
                    "metadata": {"name": name, "ownerReferences": [
                        {"apiVersion": "v1", "kind": "Node", "name": name, "uid": meta::uid(&node)}]},
                    "spec": {"drivers": [node_driver(&node, limit)]},
                });
                if let Err(e) = state.create(&res, "", csinode, &mut ctx) {
                    tracing::debug!(node = %name, error = %e, "registering the CSI driver failed");
                    complete = false;
                }
            }
            Some(existing) => {
                let drivers = existing
                    .pointer("/spec/drivers")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                if drivers
                    .iter()
                    .any(|d| d.get("name").and_then(Value::as_str) == Some(SIM_DISK_DRIVER))
                {
                    continue;
                }
                let mut new = (*existing).clone();
                let mut drivers = drivers;
                drivers.push(node_driver(&node, limit));
                new["spec"]["drivers"] = json!(drivers);
                if let Err(e) = state.update(&res, "", &name, new, None, &mut ctx) {
                    tracing::debug!(node = %name, error = %e, "registering the CSI driver failed");
                    complete = false;
                }
            }
        }
    }
    complete
}

/// Claims handed to this driver that wait for a volume.
fn provision_claims(state: &mut State) -> usize {
    let claims: Vec<Arc<Value>> = state
        .store
        .list(&GroupResource::new("", "persistentvolumeclaims"), None)
        .into_iter()
        .filter(|c| {
            !meta::is_deleting(c)
                && c.pointer("/spec/volumeName")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .is_empty()
                && (meta::annotation(c, STORAGE_PROVISIONER) == Some(SIM_DISK_DRIVER)
                    || meta::annotation(c, BETA_STORAGE_PROVISIONER) == Some(SIM_DISK_DRIVER))
        })
        .collect();
    claims.iter().filter(|c| provision(state, c)).count()
}

/// The node affinity a volume for `node` (if any) gets under the class's `allowedTopologies` (if any), and
/// the labels it carries; `Err` when the node is outside the allowed topologies.
fn topology(class: &Value, node: Option<&Value>) -> Result<(Option<Value>, Map<String, Value>), String> {
    let allowed = class
        .get("allowedTopologies")
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty());
    let mut labels = Map::new();
    let Some(node) = node else {
        let affinity = allowed.map(|terms| {
            let terms: Vec<Value> = terms
                .iter()
                .map(|t| {
                    let exprs: Vec<Value> = t
                        .get("matchLabelExpressions")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .map(|e| json!({"key": e.get("key").cloned().unwrap_or(json!("")), "operator": "In", "values": e.get("values").cloned().unwrap_or(json!([]))}))
                        .collect();
                    json!({"matchExpressions": exprs})
                })
                .collect();
            json!({"required": {"nodeSelectorTerms": terms}})
        });
        return Ok((affinity, labels));
    };
    let node_labels = meta::metadata(node)
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    if let Some(zone) = node_labels.get(ZONE) {
        labels.insert(ZONE.into(), zone.clone());
    }
    let terms: Vec<Value> = match allowed {
        None => {
            let host = node_labels
                .get(HOSTNAME)
                .and_then(Value::as_str)
                .unwrap_or(meta::name(node));
            vec![json!({"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": [host]}]})]
        }
        Some(allowed) => allowed
            .iter()
            .filter_map(|t| {
                let exprs: Option<Vec<Value>> = t
                    .get("matchLabelExpressions")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(|e| {
                        let key = e.get("key").and_then(Value::as_str)?;
                        let have = node_labels.get(key).and_then(Value::as_str)?;
                        meta::string_list(e.get("values"))
                            .iter()
                            .any(|v| v == have)
                            .then(|| json!({"key": key, "operator": "In", "values": [have]}))
                    })
                    .collect();
                exprs.filter(|e| !e.is_empty()).map(|e| json!({"matchExpressions": e}))
            })
            .collect(),
    };
    if terms.is_empty() {
        return Err(format!(
            "error generating accessibility requirements: selected node '{}' topology is not in allowed topologies",
            meta::name(node)
        ));
    }
    Ok((Some(json!({"required": {"nodeSelectorTerms": terms}})), labels))
}

/// Provisions a volume for one claim; whether it did.
fn provision(state: &mut State, pvc: &Value) -> bool {
    let class_name = claim_class(pvc);
    let Some(class) = state
        .store
        .get(&GroupResource::new("storage.k8s.io", "storageclasses"), "", &class_name)
        .filter(|c| c.get("provisioner").and_then(Value::as_str) == Some(SIM_DISK_DRIVER))
    else {
        return false;
    };
    let volume = format!("pvc-{}", meta::uid(pvc));
    if state
        .store
        .get(&GroupResource::new("", "persistentvolumes"), "", &volume)
        .is_some()
    {
        return false;
    }
    let wait_for_consumer = class.get("volumeBindingMode").and_then(Value::as_str) == Some("WaitForFirstConsumer");
    let selected = meta::annotation(pvc, SELECTED_NODE).map(str::to_string);
    if wait_for_consumer && selected.is_none() {
        return false;
    }
    let failed = |state: &mut State, why: &str| {
        recorder::record(
            state,
            pvc,
            EventType::Warning,
            "ProvisioningFailed",
            &format!("failed to provision volume with StorageClass {class_name:?}: {why}"),
            &component(),
            None,
        );
    };
    if pvc.pointer("/spec/selector").is_some_and(|s| !s.is_null()) {
        failed(state, "claim Selector is not supported");
        return false;
    }
    let node = match &selected {
        None => None,
        Some(n) => match state.store.get(&GroupResource::new("", "nodes"), "", n) {
            Some(node) => Some(node),
            None => {
                // The node is gone: let the scheduler choose again.
                failed(state, &format!("failed to get target node: node {n:?} not found"));
                let mut new = pvc.clone();
                if let Some(anns) = meta::metadata_mut(&mut new)
                    .get_mut("annotations")
                    .and_then(Value::as_object_mut)
                {
                    anns.remove(SELECTED_NODE);
                }
                if let Some(res) = state.builtin("", "persistentvolumeclaims") {
                    let _ = state.update(
                        &res,
                        meta::namespace(pvc),
                        meta::name(pvc),
                        new,
                        None,
                        &mut RequestContext::manager(MANAGER),
                    );
                }
                return false;
            }
        },
    };
    let (affinity, labels) = match topology(&class, node.as_deref()) {
        Ok(t) => t,
        Err(why) => {
            failed(state, &why);
            return false;
        }
    };
    recorder::record(
        state,
        pvc,
        EventType::Normal,
        "Provisioning",
        &format!(
            "External provisioner is provisioning volume for claim \"{}/{}\"",
            meta::namespace(pvc),
            meta::name(pvc)
        ),
        &component(),
        None,
    );
    let block = pvc.pointer("/spec/volumeMode").and_then(Value::as_str) == Some("Block");
    let mut csi = json!({
        "driver": SIM_DISK_DRIVER,
        "volumeHandle": uuid::Uuid::new_v4().to_string(),
        "volumeAttributes": {"storage.kubernetes.io/csiProvisionerIdentity": IDENTITY.as_str()},
    });
    if !block {
        csi["fsType"] = class
            .pointer("/parameters/csi.storage.k8s.io~1fstype")
            .cloned()
            .unwrap_or(json!("ext4"));
    }
    let mut spec = json!({
        "accessModes": pvc.pointer("/spec/accessModes").cloned().unwrap_or(json!([])),
        "capacity": {"storage": pvc.pointer("/spec/resources/requests/storage").cloned().unwrap_or(json!("0"))},
        "claimRef": claim_ref(pvc),
        "csi": csi,
        "persistentVolumeReclaimPolicy": class.get("reclaimPolicy").cloned().unwrap_or(json!("Delete")),
        "storageClassName": class_name,
        "volumeMode": pvc.pointer("/spec/volumeMode").cloned().unwrap_or(json!("Filesystem")),
    });
    if let Some(options) = class.get("mountOptions").filter(|o| !o.is_null()) {
        spec["mountOptions"] = options.clone();
    }
    if let Some(a) = affinity {
        spec["nodeAffinity"] = a;
    }
    let mut metadata = json!({"name": volume, "annotations": {PROVISIONED_BY: SIM_DISK_DRIVER}});
    if !labels.is_empty() {
        metadata["labels"] = Value::Object(labels);
    }
    let pv = json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": metadata, "spec": spec});
    let Some(res) = state.builtin("", "persistentvolumes") else {
        return false;
    };
    match state.create(&res, "", pv, &mut RequestContext::manager(MANAGER)) {
        Ok(_) => {
            recorder::record(
                state,
                pvc,
                EventType::Normal,
                "ProvisioningSucceeded",
                &format!("Successfully provisioned volume {volume}"),
                &component(),
                None,
            );
            true
        }
        Err(e) => {
            failed(state, e.message());
            false
        }
    }
}

/// The driver's volumes: `(volume, claim)` of bound claims whose volume it serves.
fn own_bound_claims(state: &State) -> Vec<(Arc<Value>, Arc<Value>)> {
    state
        .store
        .list(&GroupResource::new("", "persistentvolumeclaims"), None)
        .into_iter()
        .filter(|c| c.pointer("/status/phase").and_then(Value::as_str) == Some("Bound"))
        .filter_map(|c| {
            let name = c.pointer("/spec/volumeName").and_then(Value::as_str)?;
            let pv = state
                .store
                .get(&GroupResource::new("", "persistentvolumes"), "", name)?;
            (pv.pointer("/spec/csi/driver").and_then(Value::as_str) == Some(SIM_DISK_DRIVER)).then_some((pv, c))
        })
        .collect()
}

/// Expands volumes whose claims ask for more than they have.
fn expand(state: &mut State) {
    for (pv, pvc) in own_bound_claims(state) {
        let Some(requested) = pvc.pointer("/spec/resources/requests/storage").cloned() else {
            continue;
        };
        let want = storage_bytes(Some(&requested));
        let have = storage_bytes(pvc.pointer("/status/capacity/storage"));
        if want.is_none() || want <= have {
            continue;
        }
        let res_component = format!("external-resizer {SIM_DISK_DRIVER}");
        recorder::record(
            state,
            &pvc,
            EventType::Normal,
            "Resizing",
            &format!("External resizer is resizing volume {}", meta::name(&pv)),
            &res_component,
            None,
        );
        let (Some(pv_res), Some(pvc_res)) = (
            state.builtin("", "persistentvolumes"),
            state.builtin("", "persistentvolumeclaims"),
        ) else {
            return;
        };
        if storage_bytes(pv.pointer("/spec/capacity/storage")) < want {
            let mut new = (*pv).clone();
            new["spec"]["capacity"]["storage"] = requested.clone();
            if let Err(e) = state.update(
                &pv_res,
                "",
                meta::name(&pv),
                new,
                None,
                &mut RequestContext::manager(MANAGER),
            ) {
                tracing::debug!(volume = %meta::name(&pv), error = %e, "expanding a volume failed");
                continue;
            }
        }
        let mut new = (*pvc).clone();
        new["status"]["capacity"] = json!({"storage": requested});
        if let Err(e) = state.update(
            &pvc_res,
            meta::namespace(&pvc),
            meta::name(&pvc),
            new,
            Some("status"),
            &mut RequestContext::manager(MANAGER),
        ) {
            tracing::debug!(claim = %meta::name(&pvc), error = %e, "recording an expansion failed");
            continue;
        }
        recorder::record(
            state,
            &pvc,
            EventType::Normal,
            "VolumeResizeSuccessful",
            "Resize volume succeeded",
            &res_component,
            None,
        );
    }
}

/// Deletes released volumes this driver provisioned whose reclaim policy is `Delete`.
fn delete_released(state: &mut State) {
    let Some(res) = state.builtin("", "persistentvolumes") else {
        return;
    };
    let released: Vec<String> = state
        .store
        .list(&res.storage, None)
        .iter()
        .filter(|pv| {
            !meta::is_deleting(pv)
                && meta::annotation(pv, PROVISIONED_BY) == Some(SIM_DISK_DRIVER)
                && pv.pointer("/status/phase").and_then(Value::as_str) == Some("Released")
                && pv
                    .pointer("/spec/persistentVolumeReclaimPolicy")
                    .and_then(Value::as_str)
                    == Some("Delete")
        })
        .map(|pv| meta::name(pv).to_string())
        .collect();
    for name in released {
        if let Err(e) = state.delete(&res, "", &name, &DeleteOptions::default()) {
            tracing::debug!(volume = %name, error = %e, "deleting a released volume failed");
        }
    }
}
