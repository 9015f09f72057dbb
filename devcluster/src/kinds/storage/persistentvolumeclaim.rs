//! core/v1 PersistentVolumeClaim: API defaults (`volumeMode: Filesystem`, `status.phase: Pending`), the
//! DefaultStorageClass admission plugin (a claim that names no class gets the default one), the
//! `kubernetes.io/pvc-protection` finalizer (StorageObjectInUseProtection), kube-apiserver's validation
//! (access modes and a `storage` request greater than zero required, a valid class name, volume mode and
//! selector), the spec immutable except what upstream allows (the volume name once, the class once when it
//! was unset, `resources.requests` and `volumeAttributesClassName` of bound claims; the request never below
//! `status.capacity`), the PersistentVolumeClaimResize admission plugin (only bound claims of a class that
//! allows expansion may grow) and `kubectl get pvc`'s columns.

use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use serde_json::{Value, json};

use super::{
    BETA_STORAGE_CLASS, PVC_PROTECTION, access_modes_string, claim_class, claim_has_class, default_class, or_unset,
};
use crate::error::{ApiError, FieldCause};
use crate::kinds::print::{age, col, name, text_cell};
use crate::kinds::validate;
use crate::kinds::validate::invalid;
use crate::meta;
use crate::resource::decode;
use crate::resource::{AdmitContext, Facts, ResourceInfo, StatusStrategy, Strategy};
use crate::store::GroupResource;

/// The served resource.
pub(crate) fn resource() -> ResourceInfo {
    ResourceInfo::builtin(
        "",
        "v1",
        "PersistentVolumeClaim",
        "persistentvolumeclaims",
        true,
        PersistentVolumeClaimStrategy,
    )
    .short_names(&["pvc"])
    .with_status_strategy(ClaimStatus)
}

#[derive(Debug)]
struct PersistentVolumeClaimStrategy;

impl Strategy for PersistentVolumeClaimStrategy {
    type Object = PersistentVolumeClaim;

    fn facts(&self) -> Facts {
        Facts::NO_GENERATION
    }

    fn decode(&self, cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
        let res = cx.res;
        decode::normalize_quantities(obj);
        decode::typed::<PersistentVolumeClaim>(cx.request, res, obj)
    }

    fn prepare(&self, cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
        let spec = meta::ensure_object(meta::ensure_object(obj).entry("spec").or_insert(json!({})));
        spec.entry("volumeMode").or_insert(json!("Filesystem"));
        if cx.creating() {
            meta::ensure_object(obj).insert("status".into(), json!({"phase": "Pending"}));
        }
        Ok(())
    }

    fn admit(&self, cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
        if !cx.creating() {
            return Ok(());
        }
        // DefaultStorageClass: a claim that names no class (not even "") gets the default one.
        if !claim_has_class(obj)
            && let Some(class) = default_class(cx.store)
        {
            let spec = meta::ensure_object(meta::ensure_object(obj).entry("spec").or_insert(json!({})));
            spec.insert("storageClassName".into(), json!(meta::name(&class)));
        }
        let mut f = meta::finalizers(obj);
        if !f.iter().any(|x| x == PVC_PROTECTION) {
            f.push(PVC_PROTECTION.into());
            meta::set_finalizers(obj, f);
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
        validate_spec_update(old, obj, &mut causes);
        invalid(res, obj, causes)?;
        check_resize(cx, res, old, obj)
    }

    fn columns(&self) -> Vec<Value> {
        vec![
            crate::resource::name_column(),
            col(
                "Status",
                "string",
                0,
                "phase represents the current phase of PersistentVolumeClaim.",
            ),
            col(
                "Volume",
                "string",
                0,
                "volumeName is the binding reference to the PersistentVolume backing this claim.",
            ),
            col(
                "Capacity",
                "string",
                0,
                "capacity represents the actual resources of the underlying volume.",
            ),
            col(
                "Access Modes",
                "string",
                0,
                "accessModes contains the actual access modes the volume backing the PVC has. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes-1",
            ),
            col("StorageClass", "string", 0, "StorageClass of the pvc"),
            col("VolumeAttributesClass", "string", 0, "VolumeAttributesClass of the pvc"),
            crate::resource::age_column(),
            col(
                "VolumeMode",
                "string",
                1,
                "volumeMode defines what type of volume is required by the claim. Value of Filesystem is implied when not included in claim spec.",
            ),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let phase = if meta::is_deleting(obj) {
            "Terminating"
        } else {
            obj.pointer("/status/phase").and_then(Value::as_str).unwrap_or("")
        };
        let volume = obj.pointer("/spec/volumeName").and_then(Value::as_str).unwrap_or("");
        let (capacity, modes) = if volume.is_empty() {
            (String::new(), String::new())
        } else {
            (
                obj.pointer("/status/capacity/storage")
                    .and_then(Value::as_str)
                    .unwrap_or("0")
                    .to_string(),
                access_modes_string(obj.pointer("/status/accessModes")),
            )
        };
        vec![
            name(obj),
            text_cell(phase),
            text_cell(volume),
            text_cell(capacity),
            text_cell(modes),
            text_cell(claim_class(obj)),
            text_cell(or_unset(obj.pointer("/spec/volumeAttributesClassName"))),
            age(obj),
            text_cell(or_unset(obj.pointer("/spec/volumeMode"))),
        ]
    }
}

/// Claims' status writes: the phase defaults to `Pending`.
#[derive(Debug)]
struct ClaimStatus;

impl StatusStrategy for ClaimStatus {
    fn prepare_for_update(&self, _cx: &mut AdmitContext<'_>, _old: &Value, obj: &mut Value) -> Result<(), ApiError> {
        let status = meta::ensure_object(meta::ensure_object(obj).entry("status").or_insert(json!({})));
        status.entry("phase").or_insert(json!("Pending"));
        Ok(())
    }
}

/// `ValidatePersistentVolumeClaimSpec`, for the fields that matter.
fn validate_spec(obj: &Value, causes: &mut Vec<FieldCause>) {
    let spec = obj.get("spec").cloned().unwrap_or(json!({}));
    validate::access_modes(
        spec.get("accessModes"),
        "spec.accessModes",
        "at least 1 access mode is required",
        causes,
    );
    validate::label_selector(spec.get("selector"), "spec.selector", causes);
    match spec.pointer("/resources/requests/storage") {
        None => causes.push(FieldCause::required("spec.resources[storage]", "")),
        Some(q) => validate::positive_quantity(q, "spec.resources[storage]", causes),
    }
    if let Some(class) = spec.get("storageClassName").and_then(Value::as_str)
        && !class.is_empty()
    {
        for msg in workloadbuilder::validation::strings::is_dns1123_subdomain(class) {
            causes.push(FieldCause::invalid("spec.storageClassName", &json!(class), &msg));
        }
    }
    validate::volume_mode(spec.get("volumeMode"), "spec.volumeMode", causes);
}

/// `ValidatePersistentVolumeClaimUpdate`: what may change in a claim's spec.
fn validate_spec_update(old: &Value, obj: &Value, causes: &mut Vec<FieldCause>) {
    let mut before = old.get("spec").cloned().unwrap_or(json!({}));
    let mut after = obj.get("spec").cloned().unwrap_or(json!({}));
    let unset = |v: &Value, f: &str| v.get(f).is_none_or(|x| x.is_null() || x == "");
    // The volume name may be set once (the PV controller binds with it).
    if unset(&before, "volumeName") {
        before["volumeName"] = after.get("volumeName").cloned().unwrap_or(Value::Null);
    }
    let old_beta = meta::annotation(old, BETA_STORAGE_CLASS);
    if old_beta != meta::annotation(obj, BETA_STORAGE_CLASS) {
        causes.push(FieldCause::immutable(
            format!("metadata.annotations[{BETA_STORAGE_CLASS}]"),
            &json!(meta::annotation(obj, BETA_STORAGE_CLASS).unwrap_or("")),
        ));
    }
    // The class may be set once when it was unset (retroactive default StorageClass assignment).
    if old_beta.is_none()
        && before.get("storageClassName").is_none_or(Value::is_null)
        && after.get("storageClassName").is_some_and(|v| !v.is_null())
        && let Some(m) = after.as_object_mut()
    {
        m.remove("storageClassName");
    }
    let bound = old.pointer("/status/phase").and_then(Value::as_str) == Some("Bound");
    if bound {
        if let Some(storage) = after.pointer_mut("/resources/requests/storage") {
            *storage = old
                .pointer("/spec/resources/requests/storage")
                .cloned()
                .unwrap_or(Value::Null);
        }
        if after.get("volumeAttributesClassName").is_some_and(|v| !v.is_null()) {
            after["volumeAttributesClassName"] =
                before.get("volumeAttributesClassName").cloned().unwrap_or(Value::Null);
        }
    }
    let normalize = |v: &Value| -> Value {
        match v {
            Value::Object(m) => Value::Object(
                m.iter()
                    .filter(|(_, v)| !v.is_null())
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            ),
            other => other.clone(),
        }
    };
    if normalize(&before) != normalize(&after) {
        causes.push(FieldCause::forbidden(
            "spec",
            "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
        ));
    }
    let size = |o: &Value, p: &str| validate::storage_bytes(o.pointer(p));
    let (old_size, new_size) = (
        size(old, "/spec/resources/requests/storage"),
        size(obj, "/spec/resources/requests/storage"),
    );
    if let (Some(o), Some(n)) = (old_size, new_size)
        && n < o
        && size(old, "/status/capacity/storage").is_some_and(|cap| n <= cap)
    {
        causes.push(FieldCause::forbidden(
            "spec.resources.requests.storage",
            "field can not be less than status.capacity",
        ));
    }
    if old.pointer("/spec/volumeMode") != obj.pointer("/spec/volumeMode") {
        causes.push(FieldCause::immutable(
            "volumeMode",
            obj.pointer("/spec/volumeMode").unwrap_or(&Value::Null),
        ));
    }
}

/// The PersistentVolumeClaimResize admission plugin: a growing request needs a bound claim whose class
/// allows volume expansion.
fn check_resize(cx: &AdmitContext<'_>, res: &ResourceInfo, old: &Value, obj: &Value) -> Result<(), ApiError> {
    let size = |o: &Value| validate::storage_bytes(o.pointer("/spec/resources/requests/storage"));
    if size(obj) <= size(old) {
        return Ok(());
    }
    let forbidden = |detail: &str| Err(ApiError::forbidden(&res.group, &res.plural, meta::name(obj), detail));
    if old.pointer("/status/phase").and_then(Value::as_str) != Some("Bound") {
        return forbidden("Only bound persistent volume claims can be expanded");
    }
    let (class, old_class) = (claim_class(obj), claim_class(old));
    let allowed = !class.is_empty()
        && class == old_class
        && cx
            .store
            .get(&GroupResource::new("storage.k8s.io", "storageclasses"), "", &class)
            .and_then(|sc| sc.get("allowVolumeExpansion").and_then(Value::as_bool))
            .unwrap_or(false);
    if !allowed {
        return forbidden(
            "only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize",
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::api::State;
    use crate::meta;
    use crate::request::RequestContext;

    fn create(state: &mut State, name: &str, spec: Value) -> Result<std::sync::Arc<Value>, String> {
        let res = state.builtin("", "persistentvolumeclaims").unwrap();
        state
            .create(
                &res,
                "default",
                json!({"metadata": {"name": name}, "spec": spec}),
                &mut RequestContext::manager("t"),
            )
            .map_err(|e| e.message().to_string())
    }

    fn class(state: &mut State, name: &str, default: bool, expansion: bool) {
        let res = state.builtin("storage.k8s.io", "storageclasses").unwrap();
        let annotations = if default {
            json!({"storageclass.kubernetes.io/is-default-class": "true"})
        } else {
            json!({})
        };
        state
            .create(
                &res,
                "",
                json!({"metadata": {"name": name, "annotations": annotations}, "provisioner": "p.example.com",
                    "allowVolumeExpansion": expansion}),
                &mut RequestContext::manager("t"),
            )
            .unwrap();
    }

    fn claim() -> Value {
        json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}})
    }

    #[test]
    fn defaults_default_class_and_protection() {
        let mut state = State::new(100, Default::default());
        let plain = create(&mut state, "plain", claim()).unwrap();
        assert!(plain["spec"].get("storageClassName").is_none(), "no default class yet");
        class(&mut state, "fast", true, false);
        let pvc = create(&mut state, "a", claim()).unwrap();
        assert_eq!(pvc["spec"]["storageClassName"], "fast");
        assert_eq!(pvc["spec"]["volumeMode"], "Filesystem");
        assert_eq!(pvc["status"], json!({"phase": "Pending"}));
        assert_eq!(meta::finalizers(&pvc), ["kubernetes.io/pvc-protection"]);
        let mut none = claim();
        none["storageClassName"] = json!("");
        let pvc = create(&mut state, "b", none).unwrap();
        assert_eq!(pvc["spec"]["storageClassName"], "", "an empty class asks for none");
        let res = state.builtin("", "persistentvolumeclaims").unwrap();
        let cells = res.strategy.cells(&res, &pvc);
        let text: Vec<&str> = cells.iter().map(|c| c.as_str().unwrap_or("")).collect();
        assert_eq!(&text[..7], ["b", "Pending", "", "", "", "", "<unset>"]);
    }

    #[test]
    fn validation() {
        let mut state = State::new(100, Default::default());
        let err = create(&mut state, "a", json!({})).unwrap_err();
        assert!(
            err.contains("spec.accessModes: Required value: at least 1 access mode is required")
                && err.contains("spec.resources[storage]: Required value"),
            "{err}"
        );
        let mut zero = claim();
        zero["resources"]["requests"]["storage"] = json!("0");
        assert!(
            create(&mut state, "b", zero)
                .unwrap_err()
                .contains("spec.resources[storage]: Invalid value: \"0\": must be greater than zero")
        );
        let mut mode = claim();
        mode["volumeMode"] = json!("Raw");
        assert!(
            create(&mut state, "c", mode)
                .unwrap_err()
                .contains("spec.volumeMode: Unsupported value")
        );
    }

    #[test]
    fn spec_is_immutable_except_what_upstream_allows() {
        let mut state = State::new(100, Default::default());
        class(&mut state, "grow", false, true);
        class(&mut state, "fixed", false, false);
        let res = state.builtin("", "persistentvolumeclaims").unwrap();
        let mut spec = claim();
        spec["storageClassName"] = json!("grow");
        let pvc = create(&mut state, "a", spec).unwrap();
        // Unbound: the request may not change.
        let mut bigger = (*pvc).clone();
        bigger["spec"]["resources"]["requests"]["storage"] = json!("2Gi");
        let err = state
            .update(
                &res,
                "default",
                "a",
                bigger.clone(),
                None,
                &mut RequestContext::manager("t"),
            )
            .unwrap_err();
        assert!(
            err.message()
                .contains("spec: Forbidden: spec is immutable after creation"),
            "{}",
            err.message()
        );
        // The volume name may be set once.
        let mut named = (*pvc).clone();
        named["spec"]["volumeName"] = json!("pv-1");
        let pvc = state
            .update(&res, "default", "a", named, None, &mut RequestContext::manager("t"))
            .unwrap();
        let mut renamed = (*pvc).clone();
        renamed["spec"]["volumeName"] = json!("pv-2");
        assert!(
            state
                .update(&res, "default", "a", renamed, None, &mut RequestContext::manager("t"))
                .is_err()
        );
        // Bound: it may grow, in a class that allows expansion.
        let mut bound = (*pvc).clone();
        bound["status"] = json!({"phase": "Bound", "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"]});
        let pvc = state
            .update(
                &res,
                "default",
                "a",
                bound,
                Some("status"),
                &mut RequestContext::manager("t"),
            )
            .unwrap();
        let mut bigger = (*pvc).clone();
        bigger["spec"]["resources"]["requests"]["storage"] = json!("2Gi");
        let pvc = state
            .update(&res, "default", "a", bigger, None, &mut RequestContext::manager("t"))
            .unwrap();
        let mut smaller = (*pvc).clone();
        smaller["spec"]["resources"]["requests"]["storage"] = json!("512Mi");
        let err = state
            .update(&res, "default", "a", smaller, None, &mut RequestContext::manager("t"))
            .unwrap_err();
        assert!(
            err.message().contains("field can not be less than status.capacity"),
            "{}",
            err.message()
        );

        let mut spec = claim();
        spec["storageClassName"] = json!("fixed");
        let pvc = create(&mut state, "b", spec).unwrap();
        let mut bound = (*pvc).clone();
        bound["status"] = json!({"phase": "Bound"});
        let pvc = state
            .update(
                &res,
                "default",
                "b",
                bound,
                Some("status"),
                &mut RequestContext::manager("t"),
            )
            .unwrap();
        let mut bigger = (*pvc).clone();
        bigger["spec"]["resources"]["requests"]["storage"] = json!("2Gi");
        let err = state
            .update(&res, "default", "b", bigger, None, &mut RequestContext::manager("t"))
            .unwrap_err();
        assert_eq!(err.code(), 403);
        assert_eq!(
            err.message(),
            "persistentvolumeclaims \"b\" is forbidden: only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize"
        );
        // A claim without a class may be given one (retroactive default class), once.
        let plain = create(&mut state, "c", claim()).unwrap();
        let mut classed = (*plain).clone();
        classed["spec"]["storageClassName"] = json!("fixed");
        let classed = state
            .update(&res, "default", "c", classed, None, &mut RequestContext::manager("t"))
            .unwrap();
        let mut again = (*classed).clone();
        again["spec"]["storageClassName"] = json!("grow");
        assert!(
            state
                .update(&res, "default", "c", again, None, &mut RequestContext::manager("t"))
                .is_err()
        );
    }
}
