//! core/v1 PersistentVolume: API defaults (`persistentVolumeReclaimPolicy: Retain`, `volumeMode:
//! Filesystem`), `status.phase: Pending` with `lastPhaseTransitionTime` on create and on every phase
//! change, the `kubernetes.io/pv-protection` finalizer (StorageObjectInUseProtection), kube-apiserver's
//! validation of the fields that matter (a `storage` capacity greater than zero, access modes, the
//! reclaim policy, exactly one volume source with its required fields for `csi`, `hostPath`, `local` and
//! `nfs`, `local` volumes need node affinity, a valid node affinity), the source, volume mode and a set
//! node affinity immutable, and `kubectl get pv`'s columns.

use k8s_openapi::api::core::v1::PersistentVolume;
use serde_json::{Value, json};

use super::{PV_PROTECTION, access_modes_string, or_unset, validate_driver_name, volume_class};
use crate::error::{ApiError, FieldCause};
use crate::kinds::print::{age, col, name, text_cell};
use crate::kinds::validate;
use crate::kinds::validate::invalid;
use crate::meta;
use crate::resource::decode;
use crate::resource::{AdmitContext, Facts, ResourceInfo, StatusStrategy, Strategy};

/// The served resource.
pub(crate) fn resource() -> ResourceInfo {
    ResourceInfo::builtin(
        "",
        "v1",
        "PersistentVolume",
        "persistentvolumes",
        false,
        PersistentVolumeStrategy,
    )
    .short_names(&["pv"])
    .with_status_strategy(VolumeStatus)
}

/// The volume sources of a PersistentVolume, in the order upstream's validation checks them.
const SOURCES: &[&str] = &[
    "hostPath",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "glusterfs",
    "flocker",
    "nfs",
    "rbd",
    "quobyte",
    "cephfs",
    "iscsi",
    "cinder",
    "fc",
    "flexVolume",
    "azureFile",
    "vsphereVolume",
    "photonPersistentDisk",
    "portworxVolume",
    "azureDisk",
    "scaleIO",
    "local",
    "storageos",
    "csi",
];

const RECLAIM_POLICIES: &[&str] = &["Delete", "Recycle", "Retain"];

#[derive(Debug)]
struct PersistentVolumeStrategy;

impl Strategy for PersistentVolumeStrategy {
    type Object = PersistentVolume;

    fn facts(&self) -> Facts {
        Facts::NO_GENERATION
    }

    fn decode(&self, cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
        let res = cx.res;
        decode::normalize_quantities(obj);
        decode::typed::<PersistentVolume>(cx.request, res, obj)
    }

    fn prepare(&self, cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
        let spec = meta::ensure_object(meta::ensure_object(obj).entry("spec").or_insert(json!({})));
        spec.entry("persistentVolumeReclaimPolicy").or_insert(json!("Retain"));
        spec.entry("volumeMode").or_insert(json!("Filesystem"));
        if cx.creating() {
            meta::ensure_object(obj).insert(
                "status".into(),
                json!({"phase": "Pending", "lastPhaseTransitionTime": meta::now_rfc3339()}),
            );
        }
        Ok(())
    }

    fn admit(&self, cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
        if cx.creating() {
            let mut f = meta::finalizers(obj);
            if !f.iter().any(|x| x == PV_PROTECTION) {
                f.push(PV_PROTECTION.into());
                meta::set_finalizers(obj, f);
            }
        }
        Ok(())
    }

    fn validate(&self, cx: &mut AdmitContext<'_>, obj: &Value) -> Result<(), ApiError> {
        let res = cx.res;
        let mut causes = Vec::new();
        validate_spec(obj, &mut causes);
        invalid(res, obj, causes)
    }

    fn validate_update(&self, cx: &mut AdmitContext<'_>, old: &Value, obj: &Value) -> Result<(), ApiError> {
        let res = cx.res;
        let mut causes = Vec::new();
        validate_spec(obj, &mut causes);
        let source = |o: &Value| -> Vec<(String, Value)> {
            SOURCES
                .iter()
                .filter_map(|k| {
                    o.pointer(&format!("/spec/{k}"))
                        .filter(|v| !v.is_null())
                        .map(|v| (k.to_string(), v.clone()))
                })
                .collect()
        };
        // A CSI source may gain a `controllerExpandSecretRef` it did not have.
        let mut new_source = source(obj);
        if old.pointer("/spec/csi/controllerExpandSecretRef").is_none() {
            for (k, v) in &mut new_source {
                if k == "csi"
                    && let Some(m) = v.as_object_mut()
                {
                    m.remove("controllerExpandSecretRef");
                }
            }
        }
        if new_source != source(old) {
            causes.push(FieldCause::forbidden(
                "spec.persistentvolumesource",
                "spec.persistentvolumesource is immutable after creation",
            ));
        }
        if old.pointer("/spec/volumeMode") != obj.pointer("/spec/volumeMode") {
            causes.push(FieldCause::immutable(
                "volumeMode",
                obj.pointer("/spec/volumeMode").unwrap_or(&Value::Null),
            ));
        }
        if let Some(before) = old.pointer("/spec/nodeAffinity").filter(|v| !v.is_null())
            && obj.pointer("/spec/nodeAffinity") != Some(before)
        {
            causes.push(FieldCause::immutable(
                "nodeAffinity",
                obj.pointer("/spec/nodeAffinity").unwrap_or(&Value::Null),
            ));
        }
        invalid(res, obj, causes)
    }

    fn columns(&self) -> Vec<Value> {
        vec![
            crate::resource::name_column(),
            col(
                "Capacity",
                "string",
                0,
                "capacity is the description of the persistent volume's resources and capacity. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#capacity",
            ),
            col(
                "Access Modes",
                "string",
                0,
                "accessModes contains all ways the volume can be mounted. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes",
            ),
            col(
                "Reclaim Policy",
                "string",
                0,
                "persistentVolumeReclaimPolicy defines what happens to a persistent volume when released from its claim. Valid options are Retain (default for manually created PersistentVolumes), Delete (default for dynamically provisioned PersistentVolumes), and Recycle (deprecated). Recycle must be supported by the volume plugin underlying this PersistentVolume. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#reclaiming",
            ),
            col(
                "Status",
                "string",
                0,
                "phase indicates if a volume is available, bound to a claim, or released by a claim. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#phase",
            ),
            col(
                "Claim",
                "string",
                0,
                "claimRef is part of a bi-directional binding between PersistentVolume and PersistentVolumeClaim. Expected to be non-nil when bound. claim.VolumeName is the authoritative bind between PV and PVC. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#binding",
            ),
            col("StorageClass", "string", 0, "StorageClass of the pv"),
            col("VolumeAttributesClass", "string", 0, "VolumeAttributesClass of the pv"),
            col(
                "Reason",
                "string",
                0,
                "reason is a brief CamelCase string that describes any failure and is meant for machine parsing and tidy display in the CLI.",
            ),
            crate::resource::age_column(),
            col(
                "VolumeMode",
                "string",
                1,
                "volumeMode defines if a volume is intended to be used with a formatted filesystem or to remain in raw block state. Value of Filesystem is implied when not included in spec.",
            ),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let claim = match obj.pointer("/spec/claimRef") {
            Some(r) if r.is_object() => format!(
                "{}/{}",
                r.get("namespace").and_then(Value::as_str).unwrap_or(""),
                r.get("name").and_then(Value::as_str).unwrap_or("")
            ),
            _ => String::new(),
        };
        let phase = if meta::is_deleting(obj) {
            "Terminating"
        } else {
            obj.pointer("/status/phase").and_then(Value::as_str).unwrap_or("")
        };
        vec![
            name(obj),
            text_cell(
                obj.pointer("/spec/capacity/storage")
                    .and_then(Value::as_str)
                    .unwrap_or("0"),
            ),
            text_cell(access_modes_string(obj.pointer("/spec/accessModes"))),
            text_cell(
                obj.pointer("/spec/persistentVolumeReclaimPolicy")
                    .and_then(Value::as_str)
                    .unwrap_or(""),
            ),
            text_cell(phase),
            text_cell(claim),
            text_cell(volume_class(obj)),
            text_cell(or_unset(obj.pointer("/spec/volumeAttributesClassName"))),
            text_cell(obj.pointer("/status/reason").and_then(Value::as_str).unwrap_or("")),
            age(obj),
            text_cell(or_unset(obj.pointer("/spec/volumeMode"))),
        ]
    }
}

/// Volumes' status writes: a phase change stamps `lastPhaseTransitionTime`.
#[derive(Debug)]
struct VolumeStatus;

impl StatusStrategy for VolumeStatus {
    fn prepare_for_update(&self, _cx: &mut AdmitContext<'_>, old: &Value, obj: &mut Value) -> Result<(), ApiError> {
        stamp_phase_transition(Some(old), obj);
        Ok(())
    }
}

/// `status.lastPhaseTransitionTime` on a status write: kept while the phase stays, now when it changes
/// and the writer did not set a new time.
fn stamp_phase_transition(old: Option<&Value>, obj: &mut Value) {
    let old_phase = old.and_then(|o| o.pointer("/status/phase")).cloned();
    let old_time = old.and_then(|o| o.pointer("/status/lastPhaseTransitionTime")).cloned();
    let new_phase = obj.pointer("/status/phase").cloned();
    let new_time = obj
        .pointer("/status/lastPhaseTransitionTime")
        .filter(|v| !v.is_null())
        .cloned();
    let status = meta::ensure_object(meta::ensure_object(obj).entry("status").or_insert(json!({})));
    if old_phase == new_phase {
        if new_time.is_none()
            && let Some(t) = old_time
        {
            status.insert("lastPhaseTransitionTime".into(), t);
        }
    } else if new_time.is_none() || new_time == old_time {
        status.insert("lastPhaseTransitionTime".into(), json!(meta::now_rfc3339()));
    }
}

/// `ValidatePersistentVolumeSpec`, for the fields that matter.
fn validate_spec(obj: &Value, causes: &mut Vec<FieldCause>) {
    let spec = obj.get("spec").cloned().unwrap_or(json!({}));
    let capacity = spec
        .get("capacity")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    if capacity.is_empty() {
        causes.push(FieldCause::required("spec.capacity", ""));
    }
    if !capacity.contains_key("storage") || capacity.len() > 1 {
        causes.push(FieldCause::not_supported(
            "spec.capacity",
            &Value::Object(capacity.clone()),
            &["storage"],
        ));
    }
    for (k, q) in &capacity {
        validate::positive_quantity(q, &format!("spec.capacity[{k}]"), causes);
    }
    validate::access_modes(spec.get("accessModes"), "spec.accessModes", "", causes);
    if let Some(p) = spec.get("persistentVolumeReclaimPolicy").and_then(Value::as_str)
        && !p.is_empty()
        && !RECLAIM_POLICIES.contains(&p)
    {
        causes.push(FieldCause::not_supported(
            "spec.persistentVolumeReclaimPolicy",
            &json!(p),
            RECLAIM_POLICIES,
        ));
    }
    if let Some(class) = spec.get("storageClassName").and_then(Value::as_str)
        && !class.is_empty()
    {
        for msg in workloadbuilder::validation::strings::is_dns1123_subdomain(class) {
            causes.push(FieldCause::invalid("spec.storageClassName", &json!(class), &msg));
        }
    }
    validate::volume_mode(spec.get("volumeMode"), "spec.volumeMode", causes);
    let affinity = spec.get("nodeAffinity").filter(|v| !v.is_null());
    if let Some(a) = affinity {
        match a.get("required").filter(|v| !v.is_null()) {
            Some(r) => validate::node_selector(r, "spec.nodeAffinity.required", causes),
            None => causes.push(FieldCause::required(
                "spec.nodeAffinity.required",
                "must specify required node constraints",
            )),
        }
    }
    let mut sources = 0;
    for k in SOURCES {
        let Some(src) = spec.get(*k).filter(|v| !v.is_null()) else {
            continue;
        };
        let path = format!("spec.{k}");
        if sources > 0 {
            causes.push(FieldCause::forbidden(path, "may not specify more than 1 volume type"));
            continue;
        }
        sources += 1;
        let field = |f: &str| src.get(f).and_then(Value::as_str).unwrap_or("");
        match *k {
            "csi" => {
                validate_driver_name(field("driver"), &format!("{path}.driver"), causes);
                if field("volumeHandle").is_empty() {
                    causes.push(FieldCause::required(format!("{path}.volumeHandle"), ""));
                }
            }
            "hostPath" | "local" => {
                if field("path").is_empty() {
                    causes.push(FieldCause::required(format!("{path}.path"), ""));
                }
                if *k == "local" && affinity.is_none() {
                    causes.push(FieldCause::required(
                        "spec.nodeAffinity",
                        "Local volume requires node affinity",
                    ));
                }
            }
            "nfs" => {
                if field("server").is_empty() {
                    causes.push(FieldCause::required(format!("{path}.server"), ""));
                }
                if field("path").is_empty() {
                    causes.push(FieldCause::required(format!("{path}.path"), ""));
                } else if !field("path").starts_with('/') {
                    causes.push(FieldCause::invalid(
                        format!("{path}.path"),
                        &json!(field("path")),
                        "must be an absolute path",
                    ));
                }
            }
            _ => {}
        }
    }
    if sources == 0 {
        causes.push(FieldCause::required("spec", "must specify a volume type"));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::api::State;
    use crate::meta;
    use crate::request::RequestContext;

    fn create(state: &mut State, name: &str, spec: Value) -> Result<std::sync::Arc<Value>, String> {
        let res = state.builtin("", "persistentvolumes").unwrap();
        state
            .create(
                &res,
                "",
                json!({"metadata": {"name": name}, "spec": spec}),
                &mut RequestContext::manager("t"),
            )
            .map_err(|e| e.message().to_string())
    }

    fn hostpath() -> Value {
        json!({"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/data"}})
    }

    #[test]
    fn defaults_phase_and_protection() {
        let mut state = State::new(100, Default::default());
        let pv = create(&mut state, "v", hostpath()).unwrap();
        assert_eq!(pv["spec"]["persistentVolumeReclaimPolicy"], "Retain");
        assert_eq!(pv["spec"]["volumeMode"], "Filesystem");
        assert_eq!(pv["status"]["phase"], "Pending");
        assert!(pv["status"]["lastPhaseTransitionTime"].is_string());
        assert_eq!(meta::finalizers(&pv), ["kubernetes.io/pv-protection"]);
        assert!(pv["metadata"].get("generation").is_none());
        let res = state.builtin("", "persistentvolumes").unwrap();
        let cells = res.strategy.cells(&res, &pv);
        let text: Vec<&str> = cells.iter().map(|c| c.as_str().unwrap_or("")).collect();
        assert_eq!(
            &text[..9],
            ["v", "1Gi", "RWO", "Retain", "Pending", "", "", "<unset>", ""]
        );
        assert_eq!(text[10], "Filesystem");
    }

    #[test]
    fn validation_of_capacity_modes_and_sources() {
        let mut state = State::new(100, Default::default());
        let none = create(&mut state, "a", json!({})).unwrap_err();
        for want in [
            "spec.capacity: Required value",
            "spec.accessModes: Required value",
            "spec: Required value: must specify a volume type",
        ] {
            assert!(none.contains(want), "{want} missing from {none}");
        }
        let mut two = hostpath();
        two["nfs"] = json!({"server": "s", "path": "/x"});
        let two = create(&mut state, "b", two).unwrap_err();
        assert!(
            two.contains("spec.nfs: Forbidden: may not specify more than 1 volume type"),
            "{two}"
        );
        let mut zero = hostpath();
        zero["capacity"] = json!({"storage": "0"});
        assert!(
            create(&mut state, "c", zero)
                .unwrap_err()
                .contains("must be greater than zero")
        );
        let local =
            json!({"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "local": {"path": "/mnt"}});
        assert!(
            create(&mut state, "d", local)
                .unwrap_err()
                .contains("spec.nodeAffinity: Required value: Local volume requires node affinity")
        );
        let csi = json!({"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "csi": {"driver": "a/b"}});
        let csi = create(&mut state, "e", csi).unwrap_err();
        assert!(
            csi.contains("spec.csi.driver: Invalid value") && csi.contains("spec.csi.volumeHandle: Required value"),
            "{csi}"
        );
    }

    #[test]
    fn source_and_node_affinity_are_immutable() {
        let mut state = State::new(100, Default::default());
        let mut spec = hostpath();
        spec["nodeAffinity"] = json!({"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}]}]}});
        let pv = create(&mut state, "v", spec).unwrap();
        let res = state.builtin("", "persistentvolumes").unwrap();
        let mut moved = (*pv).clone();
        moved["spec"]["hostPath"]["path"] = json!("/elsewhere");
        moved["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] =
            json!(["n2"]);
        let err = state
            .update(&res, "", "v", moved, None, &mut RequestContext::manager("t"))
            .unwrap_err();
        assert!(
            err.message().contains("spec.persistentvolumesource: Forbidden"),
            "{}",
            err.message()
        );
        assert!(
            err.message().contains("nodeAffinity: Invalid value"),
            "{}",
            err.message()
        );
        // The phase transition time moves with the phase.
        let mut available = (*pv).clone();
        available["status"]["phase"] = json!("Available");
        available["status"]["lastPhaseTransitionTime"] = Value::Null;
        let stored = state
            .update(
                &res,
                "",
                "v",
                available,
                Some("status"),
                &mut RequestContext::manager("t"),
            )
            .unwrap();
        assert!(stored["status"]["lastPhaseTransitionTime"].is_string());
    }
}
