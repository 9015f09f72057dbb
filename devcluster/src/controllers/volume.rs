//! kube-controller-manager's volume controllers, simplified: the PersistentVolume controller (binding,
//! phases, reclaiming, handing claims to their provisioner) and the PVC and PV protection controllers.
//!
//! - **Claims** (`syncClaim`): a claim that names no class gets the default one (retroactive default
//!   StorageClass assignment). An unbound claim binds to a volume pre-bound to it (`spec.volumeName` or the
//!   volume's `claimRef`), else to the smallest `Available` volume that matches (access modes, capacity,
//!   volume mode, class, selector, VolumeAttributesClass), preferring volumes with the fewest extra access
//!   modes. For a `WaitForFirstConsumer` class only pre-bound volumes bind until the claim carries
//!   `volume.kubernetes.io/selected-node`; then the node's choice is made as kube-scheduler's volume binder
//!   makes it (a matching volume whose node affinity admits the node), and without one the claim is
//!   provisioned. Waiting claims get `WaitForFirstConsumer` / `WaitForPodScheduled` events. Provisioning
//!   hands the claim to its class's provisioner (`volume.kubernetes.io/storage-provisioner`, an
//!   `ExternalProvisioning` event); `sim::csi` is the provisioner of `sim-disk.kwas.dev`. A bound claim
//!   whose volume is gone or taken is `Lost`.
//! - **Volumes** (`syncVolume`): `Available` without a claim (or pre-bound to one), `Bound` with it,
//!   `Released` when the claim is gone; then the reclaim policy: `Retain` keeps it, `Delete` leaves
//!   provisioned volumes to their provisioner and fails others (no in-tree deleter), `Recycle` fails (no
//!   recycler).
//! - **Binding** (`bind`): the volume's `claimRef` (and `pv.kubernetes.io/bound-by-controller` when the
//!   controller chose it), phase `Bound`; the claim's `volumeName`, `pv.kubernetes.io/bind-completed` and
//!   `bound-by-controller`, phase `Bound` with the volume's access modes and capacity.
//! - **Protection**: a deleting claim keeps `kubernetes.io/pvc-protection` while a scheduled pod that
//!   mounts it exists; a deleting volume keeps `kubernetes.io/pv-protection` while it is `Bound`.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::api::State;
use crate::kinds::storage::{
    BETA_STORAGE_PROVISIONER, BIND_COMPLETED, BOUND_BY_CONTROLLER, PROVISIONED_BY, PV_PROTECTION, PVC_PROTECTION,
    SELECTED_NODE, STORAGE_PROVISIONER, claim_class, claim_has_class, default_class, volume_class,
};
use crate::kinds::validate::storage_bytes;
use crate::meta;
use crate::recorder::{self, EventType};
use crate::request::RequestContext;
use crate::selectors::{LabelSelector, node_selector_matches};
use crate::store::{GroupResource, ObjectRef};
use crate::views::claim_ref;

const MANAGER: &str = "persistentvolume-controller";
const COMPONENT: &str = "persistentvolume-controller";

fn pvcs() -> GroupResource {
    GroupResource::new("", "persistentvolumeclaims")
}

fn pvs() -> GroupResource {
    GroupResource::new("", "persistentvolumes")
}

/// One pass over every claim and volume.
pub(crate) fn sync(state: &mut State) {
    sync_claims(state);
    for pv in state.store.list(&pvs(), None) {
        sync_volume(state, meta::name(&pv));
    }
    protect(state);
}

/// One pass over every claim.
pub(crate) fn sync_claims(state: &mut State) {
    for pvc in state.store.list(&pvcs(), None) {
        sync_claim(state, meta::namespace(&pvc), meta::name(&pvc));
    }
}

fn get_claim(state: &State, ns: &str, name: &str) -> Option<Arc<Value>> {
    state.store.get(&pvcs(), ns, name)
}

fn get_volume(state: &State, name: &str) -> Option<Arc<Value>> {
    state.store.get(&pvs(), "", name)
}

fn annotations_has(obj: &Value, key: &str) -> bool {
    meta::annotation(obj, key).is_some()
}

fn phase(obj: &Value) -> &str {
    obj.pointer("/status/phase").and_then(Value::as_str).unwrap_or("")
}

/// `IsVolumeBoundToClaim`: the volume's `claimRef` names the claim (and its uid, when it has one).
pub(crate) fn bound_to_claim(pv: &Value, pvc: &Value) -> bool {
    let Some(r) = pv.pointer("/spec/claimRef").filter(|r| r.is_object()) else {
        return false;
    };
    let f = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
    f("name") == meta::name(pvc)
        && f("namespace") == meta::namespace(pvc)
        && (f("uid").is_empty() || f("uid") == meta::uid(pvc))
}

fn volume_mode(obj: &Value) -> &str {
    obj.pointer("/spec/volumeMode")
        .and_then(Value::as_str)
        .unwrap_or("Filesystem")
}

/// `CheckAccessModes`: the volume offers every mode the claim asks for.
fn access_modes_fit(pvc: &Value, pv: &Value) -> bool {
    let offered = meta::string_list(pv.pointer("/spec/accessModes"));
    meta::string_list(pvc.pointer("/spec/accessModes"))
        .iter()
        .all(|m| offered.contains(m))
}

fn is_delay_binding(state: &State, pvc: &Value) -> bool {
    let class = claim_class(pvc);
    !class.is_empty()
        && state
            .store
            .get(&GroupResource::new("storage.k8s.io", "storageclasses"), "", &class)
            .is_some_and(|sc| sc.get("volumeBindingMode").and_then(Value::as_str) == Some("WaitForFirstConsumer"))
}

/// `FindMatchingVolume` over the volumes whose access modes include the claim's, fewest extra modes first:
/// a volume pre-bound to the claim, else the smallest `Available` one that matches. With `node` (the
/// scheduler's path) the volume's node affinity must admit the node; without it a delayed claim only takes
/// pre-bound volumes.
pub(crate) fn find_match(state: &State, pvc: &Value, delay: bool, node: Option<&Value>) -> Option<Arc<Value>> {
    let requested = storage_bytes(pvc.pointer("/spec/resources/requests/storage")).unwrap_or(0);
    let class = claim_class(pvc);
    let vac = pvc
        .pointer("/spec/volumeAttributesClassName")
        .and_then(Value::as_str)
        .unwrap_or("");
    let selector = match pvc.pointer("/spec/selector").filter(|s| !s.is_null()) {
        Some(s) => Some(LabelSelector::from_api(Some(s))?),
        None => None,
    };
    let mut candidates: Vec<Arc<Value>> = state
        .store
        .list(&pvs(), None)
        .into_iter()
        .filter(|pv| access_modes_fit(pvc, pv))
        .collect();
    candidates.sort_by_key(|pv| meta::string_list(pv.pointer("/spec/accessModes")).len());
    let mut groups: Vec<Vec<Arc<Value>>> = Vec::new();
    for pv in candidates {
        let n = meta::string_list(pv.pointer("/spec/accessModes")).len();
        match groups.last_mut() {
            Some(g)
                if g.first()
                    .is_some_and(|f| meta::string_list(f.pointer("/spec/accessModes")).len() == n) =>
            {
                g.push(pv)
            }
            _ => groups.push(vec![pv]),
        }
    }
    for group in groups {
        let mut smallest: Option<(i64, Arc<Value>)> = None;
        for pv in group {
            if pv.pointer("/spec/claimRef").is_some_and(Value::is_object) && !bound_to_claim(&pv, pvc) {
                continue;
            }
            let size = storage_bytes(pv.pointer("/spec/capacity/storage")).unwrap_or(0);
            if size < requested || volume_mode(&pv) != volume_mode(pvc) || meta::is_deleting(&pv) {
                continue;
            }
            let node_ok = node.is_none_or(|n| {
                pv.pointer("/spec/nodeAffinity/required")
                    .filter(|r| !r.is_null())
                    .is_none_or(|r| node_selector_matches(r, n))
            });
            if bound_to_claim(&pv, pvc) {
                return node_ok.then_some(pv);
            }
            if node.is_none() && delay {
                continue;
            }
            if phase(&pv) != "Available"
                || selector.as_ref().is_some_and(|s| !s.matches(&pv))
                || volume_class(&pv) != class
                || pv
                    .pointer("/spec/volumeAttributesClassName")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    != vac
                || !node_ok
            {
                continue;
            }
            if smallest.as_ref().is_none_or(|(s, _)| size < *s) {
                smallest = Some((size, pv));
            }
        }
        if let Some((_, pv)) = smallest {
            return Some(pv);
        }
    }
    None
}

/// `checkVolumeSatisfyClaim`: why a volume a claim asked for by name does not fit it.
fn unsatisfied(pv: &Value, pvc: &Value) -> Option<String> {
    if meta::is_deleting(pv) {
        return Some(format!("the volume is marked for deletion {:?}", meta::name(pv)));
    }
    let requested = storage_bytes(pvc.pointer("/spec/resources/requests/storage")).unwrap_or(0);
    if storage_bytes(pv.pointer("/spec/capacity/storage")).unwrap_or(0) < requested {
        return Some("requested PV is too small".into());
    }
    if volume_class(pv) != claim_class(pvc) {
        return Some("storageClassName does not match".into());
    }
    if volume_mode(pv) != volume_mode(pvc) {
        return Some("incompatible volumeMode".into());
    }
    if !access_modes_fit(pvc, pv) {
        return Some("incompatible accessMode".into());
    }
    None
}

fn write(state: &mut State, gr: &GroupResource, obj: Value, subresource: Option<&str>) -> Option<Arc<Value>> {
    let res = state.registry.by_group_resource(gr)?;
    let (ns, name) = (meta::namespace(&obj).to_string(), meta::name(&obj).to_string());
    match state.update(
        &res,
        &ns,
        &name,
        obj,
        subresource,
        &mut RequestContext::manager(MANAGER),
    ) {
        Ok(o) => Some(o),
        Err(e) => {
            tracing::debug!(object = %name, error = %e, "volume controller write failed");
            None
        }
    }
}

fn set_annotation(obj: &mut Value, key: &str, value: &str) {
    let m = meta::metadata_mut(obj);
    let anns = meta::ensure_object(m.entry("annotations").or_insert(json!({})));
    anns.insert(key.into(), json!(value));
}

/// `updateVolumePhase` (with a status message), when it changes.
fn set_volume_phase(state: &mut State, name: &str, new_phase: &str, message: &str) -> Option<Arc<Value>> {
    let pv = get_volume(state, name)?;
    let current_message = pv.pointer("/status/message").and_then(Value::as_str).unwrap_or("");
    if phase(&pv) == new_phase && current_message == message {
        return Some(pv);
    }
    let mut new = (*pv).clone();
    new["status"]["phase"] = json!(new_phase);
    if message.is_empty() {
        if let Some(st) = new.get_mut("status").and_then(Value::as_object_mut) {
            st.remove("message");
        }
    } else {
        new["status"]["message"] = json!(message);
    }
    write(state, &pvs(), new, Some("status"))
}

/// `updateClaimStatus`: the phase, and the volume's access modes and (when becoming bound) capacity.
fn set_claim_status(state: &mut State, ns: &str, name: &str, new_phase: &str, pv: Option<&Value>) {
    let Some(pvc) = get_claim(state, ns, name) else { return };
    let mut new = (*pvc).clone();
    let st = meta::ensure_object(meta::ensure_object(&mut new).entry("status").or_insert(json!({})));
    st.insert("phase".into(), json!(new_phase));
    match pv {
        None => {
            st.remove("accessModes");
            st.remove("capacity");
        }
        Some(pv) => {
            st.insert(
                "accessModes".into(),
                pv.pointer("/spec/accessModes").cloned().unwrap_or(json!([])),
            );
            if phase(&pvc) != new_phase
                && let Some(cap) = pv.pointer("/spec/capacity/storage")
            {
                st.insert("capacity".into(), json!({"storage": cap}));
            }
        }
    }
    if new.get("status") != pvc.get("status") {
        write(state, &pvcs(), new, Some("status"));
    }
}

/// Binds a volume and a claim both ways (`bind`).
pub(crate) fn bind(state: &mut State, pv_name: &str, ns: &str, claim: &str) {
    let (Some(pv), Some(pvc)) = (get_volume(state, pv_name), get_claim(state, ns, claim)) else {
        return;
    };
    // The volume side.
    let mut new = (*pv).clone();
    let chosen_by_controller = !bound_to_claim(&pv, &pvc);
    let r = pv.pointer("/spec/claimRef");
    let same = |k: &str, v: &str| r.and_then(|r| r.get(k)).and_then(Value::as_str) == Some(v);
    if !(same("name", meta::name(&pvc)) && same("namespace", ns) && same("uid", meta::uid(&pvc))) {
        new["spec"]["claimRef"] = claim_ref(&pvc);
    }
    if chosen_by_controller && !annotations_has(&new, BOUND_BY_CONTROLLER) {
        set_annotation(&mut new, BOUND_BY_CONTROLLER, "yes");
    }
    let pv = if new == *pv {
        Some(pv)
    } else {
        write(state, &pvs(), new, None)
    };
    let Some(pv) = pv else { return };
    let Some(pv) = set_volume_phase(state, meta::name(&pv), "Bound", "") else {
        return;
    };
    // The claim side.
    let Some(pvc) = get_claim(state, ns, claim) else { return };
    let mut new = (*pvc).clone();
    if pvc.pointer("/spec/volumeName").and_then(Value::as_str) != Some(meta::name(&pv)) {
        new["spec"]["volumeName"] = json!(meta::name(&pv));
        if !annotations_has(&new, BOUND_BY_CONTROLLER) {
            set_annotation(&mut new, BOUND_BY_CONTROLLER, "yes");
        }
    }
    if !annotations_has(&new, BIND_COMPLETED) {
        set_annotation(&mut new, BIND_COMPLETED, "yes");
    }
    if new != *pvc && write(state, &pvcs(), new, None).is_none() {
        return;
    }
    set_claim_status(state, ns, claim, "Bound", Some(&pv));
}

fn sync_claim(state: &mut State, ns: &str, name: &str) {
    let Some(pvc) = get_claim(state, ns, name) else { return };
    if annotations_has(&pvc, BIND_COMPLETED) {
        sync_bound_claim(state, &pvc);
    } else {
        sync_unbound_claim(state, &pvc);
    }
}

fn sync_bound_claim(state: &mut State, pvc: &Value) {
    let (ns, name) = (meta::namespace(pvc), meta::name(pvc));
    let volume = pvc.pointer("/spec/volumeName").and_then(Value::as_str).unwrap_or("");
    let lost = |state: &mut State, reason: &str, message: &str| {
        if phase(pvc) != "Lost" {
            set_claim_status(state, ns, name, "Lost", None);
            recorder::record(state, pvc, EventType::Warning, reason, message, COMPONENT, None);
        }
    };
    if volume.is_empty() {
        return lost(
            state,
            "ClaimLost",
            "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!",
        );
    }
    let Some(pv) = get_volume(state, volume) else {
        return lost(
            state,
            "ClaimLost",
            "Bound claim has lost its PersistentVolume. Data on the volume is lost!",
        );
    };
    let ref_uid = pv.pointer("/spec/claimRef/uid").and_then(Value::as_str);
    match ref_uid {
        None => bind(state, volume, ns, name),
        Some(uid) if uid == meta::uid(pvc) => bind(state, volume, ns, name),
        Some(_) => lost(
            state,
            "ClaimMisbound",
            "Two claims are bound to the same volume, this one is bound incorrectly",
        ),
    }
}

fn sync_unbound_claim(state: &mut State, pvc: &Value) {
    let (ns, name) = (meta::namespace(pvc), meta::name(pvc));
    let volume_name = pvc.pointer("/spec/volumeName").and_then(Value::as_str).unwrap_or("");
    if !volume_name.is_empty() {
        // The claim asked for a volume by name.
        let Some(pv) = get_volume(state, volume_name) else {
            return set_claim_status(state, ns, name, "Pending", None);
        };
        if pv.pointer("/spec/claimRef").is_none_or(|r| !r.is_object()) {
            match unsatisfied(&pv, pvc) {
                Some(why) => {
                    recorder::record(
                        state,
                        pvc,
                        EventType::Warning,
                        "VolumeMismatch",
                        &format!("Cannot bind to requested volume {volume_name}: {why}"),
                        COMPONENT,
                        None,
                    );
                    set_claim_status(state, ns, name, "Pending", None);
                }
                None => bind(state, volume_name, ns, name),
            }
        } else if bound_to_claim(&pv, pvc) {
            bind(state, volume_name, ns, name);
        } else if !annotations_has(pvc, BOUND_BY_CONTROLLER) {
            set_claim_status(state, ns, name, "Pending", None);
        } else {
            recorder::record(
                state,
                pvc,
                EventType::Warning,
                "ClaimMisbound",
                "Two claims are bound to the same volume, this one is bound incorrectly",
                COMPONENT,
                None,
            );
        }
        return;
    }
    // Retroactive default StorageClass assignment.
    if !claim_has_class(pvc)
        && let Some(class) = default_class(&state.store)
    {
        let mut new = pvc.clone();
        new["spec"]["storageClassName"] = json!(meta::name(&class));
        write(state, &pvcs(), new, None);
        return;
    }
    let delay = is_delay_binding(state, pvc);
    let selected = meta::annotation(pvc, SELECTED_NODE).map(str::to_string);
    // With a selected node, the choice kube-scheduler's volume binder makes for it.
    let node = selected
        .as_deref()
        .filter(|_| delay)
        .and_then(|n| state.store.get(&GroupResource::new("", "nodes"), "", n));
    if let Some(pv) = find_match(state, pvc, delay, node.as_deref()) {
        return bind(state, meta::name(&pv), ns, name);
    }
    if delay && selected.is_none() {
        wait_for_first_consumer(state, pvc);
    } else if !claim_class(pvc).is_empty() {
        return provision(state, pvc);
    } else {
        recorder::record(
            state,
            pvc,
            EventType::Normal,
            "FailedBinding",
            "no persistent volumes available for this claim and no storage class is set",
            COMPONENT,
            None,
        );
    }
    set_claim_status(state, ns, name, "Pending", None);
}

/// `emitEventForUnboundDelayBindingClaim`.
fn wait_for_first_consumer(state: &mut State, pvc: &Value) {
    let waiting: Vec<String> = state
        .store
        .list(&GroupResource::new("", "pods"), Some(meta::namespace(pvc)))
        .iter()
        .filter(|p| {
            p.pointer("/spec/nodeName")
                .and_then(Value::as_str)
                .unwrap_or("")
                .is_empty()
        })
        .filter(|p| crate::kinds::pod::claims(p).iter().any(|(_, c)| c == meta::name(pvc)))
        .map(|p| meta::name(p).to_string())
        .collect();
    let (reason, message) = match waiting.as_slice() {
        [] => (
            "WaitForFirstConsumer",
            "waiting for first consumer to be created before binding".to_string(),
        ),
        [one] => ("WaitForPodScheduled", format!("waiting for pod {one} to be scheduled")),
        many => (
            "WaitForPodScheduled",
            format!("waiting for pods {} to be scheduled", many.join(",")),
        ),
    };
    recorder::record(state, pvc, EventType::Normal, reason, &message, COMPONENT, None);
}

/// `provisionClaim`: hands the claim to its class's provisioner.
fn provision(state: &mut State, pvc: &Value) {
    let class = claim_class(pvc);
    let Some(sc) = state
        .store
        .get(&GroupResource::new("storage.k8s.io", "storageclasses"), "", &class)
    else {
        recorder::record(
            state,
            pvc,
            EventType::Warning,
            "ProvisioningFailed",
            &format!("storageclass.storage.k8s.io {class:?} not found"),
            COMPONENT,
            None,
        );
        return;
    };
    let provisioner = sc.get("provisioner").and_then(Value::as_str).unwrap_or("").to_string();
    if provisioner.starts_with("kubernetes.io/") {
        // No in-tree volume plugin provisions here.
        recorder::record(
            state,
            pvc,
            EventType::Warning,
            "ProvisioningFailed",
            "no provisionable volume plugin matched",
            COMPONENT,
            None,
        );
        return;
    }
    if meta::annotation(pvc, STORAGE_PROVISIONER) != Some(provisioner.as_str())
        || meta::annotation(pvc, BETA_STORAGE_PROVISIONER) != Some(provisioner.as_str())
    {
        let mut new = pvc.clone();
        set_annotation(&mut new, STORAGE_PROVISIONER, &provisioner);
        set_annotation(&mut new, BETA_STORAGE_PROVISIONER, &provisioner);
        write(state, &pvcs(), new, None);
    }
    let Some(pvc) = get_claim(state, meta::namespace(pvc), meta::name(pvc)) else {
        return;
    };
    recorder::record(
        state,
        &pvc,
        EventType::Normal,
        "ExternalProvisioning",
        &format!(
            "Waiting for a volume to be created either by the external provisioner '{provisioner}' or manually by the system administrator. If volume creation is delayed, please verify that the provisioner is running and correctly registered."
        ),
        COMPONENT,
        None,
    );
}

fn sync_volume(state: &mut State, name: &str) {
    let Some(pv) = get_volume(state, name) else { return };
    let Some(r) = pv.pointer("/spec/claimRef").filter(|r| r.is_object()) else {
        set_volume_phase(state, name, "Available", "");
        return;
    };
    let field = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let ref_uid = field("uid");
    if ref_uid.is_empty() {
        // Pre-bound to a claim that has not bound yet: the claim's sync binds it.
        set_volume_phase(state, name, "Available", "");
        return;
    }
    let claim = get_claim(state, &field("namespace"), &field("name")).filter(|c| meta::uid(c) == ref_uid);
    let Some(claim) = claim else {
        if !matches!(phase(&pv), "Released" | "Failed") {
            set_volume_phase(state, name, "Released", "");
        }
        return reclaim(state, name);
    };
    let bound_to = claim.pointer("/spec/volumeName").and_then(Value::as_str).unwrap_or("");
    if bound_to.is_empty() {
        if volume_mode(&pv) != volume_mode(&claim) {
            recorder::record(
                state,
                &pv,
                EventType::Warning,
                "VolumeMismatch",
                &format!(
                    "Cannot bind PersistentVolume to requested PersistentVolumeClaim {:?} due to incompatible volumeMode.",
                    meta::name(&claim)
                ),
                COMPONENT,
                None,
            );
            recorder::record(
                state,
                &claim,
                EventType::Warning,
                "VolumeMismatch",
                &format!(
                    "Cannot bind PersistentVolume {name:?} to requested PersistentVolumeClaim due to incompatible volumeMode."
                ),
                COMPONENT,
                None,
            );
        }
        // The claim's sync completes the binding.
        return;
    }
    if bound_to == name {
        set_volume_phase(state, name, "Bound", "");
        return;
    }
    // The claim is bound to another volume.
    if annotations_has(&pv, PROVISIONED_BY)
        && pv
            .pointer("/spec/persistentVolumeReclaimPolicy")
            .and_then(Value::as_str)
            == Some("Delete")
    {
        if !matches!(phase(&pv), "Released" | "Failed") {
            set_volume_phase(state, name, "Released", "");
        }
        return reclaim(state, name);
    }
    unbind(state, name);
}

/// `unbindVolume`: a volume the controller bound loses its `claimRef`; one a user pre-bound keeps it without
/// the uid.
fn unbind(state: &mut State, name: &str) {
    let Some(pv) = get_volume(state, name) else { return };
    let mut new = (*pv).clone();
    if annotations_has(&pv, BOUND_BY_CONTROLLER) {
        if let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) {
            spec.remove("claimRef");
        }
        if let Some(anns) = meta::metadata_mut(&mut new)
            .get_mut("annotations")
            .and_then(Value::as_object_mut)
        {
            anns.remove(BOUND_BY_CONTROLLER);
        }
    } else if let Some(r) = new.pointer_mut("/spec/claimRef").and_then(Value::as_object_mut) {
        r.insert("uid".into(), json!(""));
    }
    if write(state, &pvs(), new, None).is_some() {
        set_volume_phase(state, name, "Available", "");
    }
}

/// `reclaimVolume` of a released volume.
fn reclaim(state: &mut State, name: &str) {
    let Some(pv) = get_volume(state, name) else { return };
    if phase(&pv) == "Failed" {
        return;
    }
    let policy = pv
        .pointer("/spec/persistentVolumeReclaimPolicy")
        .and_then(Value::as_str)
        .unwrap_or("Retain");
    let (reason, message) = match policy {
        // Provisioned volumes are deleted by their provisioner (`sim::csi` for its own).
        "Delete" if annotations_has(&pv, PROVISIONED_BY) => return,
        "Delete" => ("VolumeFailedDelete", "no deletable volume plugin matched"),
        "Recycle" => ("VolumeFailedRecycle", "No recycler plugin found for the volume!"),
        _ => return,
    };
    if let Some(pv) = set_volume_phase(state, name, "Failed", message) {
        recorder::record(state, &pv, EventType::Warning, reason, message, COMPONENT, None);
    }
}

/// The PVC and PV protection controllers: release the finalizers of deleting objects no longer in use,
/// and put them back on live objects that lost them.
fn protect(state: &mut State) {
    for pvc in state.store.list(&pvcs(), None) {
        let has = meta::finalizers(&pvc).iter().any(|f| f == PVC_PROTECTION);
        if meta::is_deleting(&pvc) {
            if has && !claim_in_use(state, &pvc) {
                let r = ObjectRef {
                    gr: pvcs(),
                    namespace: meta::namespace(&pvc).to_string(),
                    name: meta::name(&pvc).to_string(),
                };
                super::remove_finalizer(state, &r, PVC_PROTECTION);
            }
        } else if !has {
            let mut new = (*pvc).clone();
            let mut f = meta::finalizers(&new);
            f.push(PVC_PROTECTION.into());
            meta::set_finalizers(&mut new, f);
            write(state, &pvcs(), new, None);
        }
    }
    for pv in state.store.list(&pvs(), None) {
        let has = meta::finalizers(&pv).iter().any(|f| f == PV_PROTECTION);
        if meta::is_deleting(&pv) {
            if has && phase(&pv) != "Bound" {
                let r = ObjectRef {
                    gr: pvs(),
                    namespace: String::new(),
                    name: meta::name(&pv).to_string(),
                };
                super::remove_finalizer(state, &r, PV_PROTECTION);
            }
        } else if !has {
            let mut new = (*pv).clone();
            let mut f = meta::finalizers(&new);
            f.push(PV_PROTECTION.into());
            meta::set_finalizers(&mut new, f);
            write(state, &pvs(), new, None);
        }
    }
}

/// `podUsesPVC`: a scheduled pod of the claim's namespace mounts it (whatever its phase: the pod object
/// still holds the claim until it is gone).
fn claim_in_use(state: &State, pvc: &Value) -> bool {
    state
        .store
        .list(&GroupResource::new("", "pods"), Some(meta::namespace(pvc)))
        .iter()
        .filter(|p| {
            !p.pointer("/spec/nodeName")
                .and_then(Value::as_str)
                .unwrap_or("")
                .is_empty()
        })
        .any(|p| crate::kinds::pod::claims(p).iter().any(|(_, c)| c == meta::name(pvc)))
}

#[cfg(test)]
#[path = "volume_tests.rs"]
mod tests;
