//! storage.k8s.io/v1 StorageClass: API defaults (`reclaimPolicy: Delete`, `volumeBindingMode: Immediate`),
//! kube-apiserver's validation (a provisioner that is a qualified name, parameters with non-empty keys and
//! at most 512 entries and 256 KiB, a reclaim policy of `Delete` or `Retain`, a binding mode of
//! `Immediate` or `WaitForFirstConsumer`, valid `allowedTopologies`), immutable parameters, provisioner,
//! reclaim policy and binding mode, and `kubectl get sc`'s columns (` (default)` after the default
//! class's name).

use k8s_openapi::api::storage::v1::StorageClass;
use serde_json::{Value, json};

use super::is_default_class;
use crate::error::{ApiError, FieldCause};
use crate::kinds::print::{age, col, text_cell};
use crate::kinds::validate;
use crate::kinds::validate::invalid;
use crate::meta;
use crate::resource::{AdmitContext, Facts, ResourceInfo, Strategy};

/// The served resource.
pub(crate) fn resource() -> ResourceInfo {
    ResourceInfo::builtin(
        "storage.k8s.io",
        "v1",
        "StorageClass",
        "storageclasses",
        false,
        StorageClassStrategy,
    )
    .short_names(&["sc"])
}

const MAX_PARAMETERS: usize = 512;
const MAX_PARAMETER_BYTES: usize = 256 * 1024;
const RECLAIM_POLICIES: &[&str] = &["Delete", "Retain"];
const BINDING_MODES: &[&str] = &["Immediate", "WaitForFirstConsumer"];

#[derive(Debug)]
struct StorageClassStrategy;

impl Strategy for StorageClassStrategy {
    type Object = StorageClass;

    fn facts(&self) -> Facts {
        Facts::NO_GENERATION
    }

    fn prepare(&self, _cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
        let m = meta::ensure_object(obj);
        m.entry("reclaimPolicy").or_insert(json!("Delete"));
        m.entry("volumeBindingMode").or_insert(json!("Immediate"));
        Ok(())
    }

    fn validate(&self, cx: &mut AdmitContext<'_>, obj: &Value) -> Result<(), ApiError> {
        let res = cx.res;
        let mut causes = Vec::new();
        validate_class(obj, &mut causes);
        invalid(res, obj, causes)
    }

    fn validate_update(&self, cx: &mut AdmitContext<'_>, old: &Value, obj: &Value) -> Result<(), ApiError> {
        let res = cx.res;
        let mut causes = Vec::new();
        validate_class(obj, &mut causes);
        let field = |o: &Value, f: &str| o.get(f).filter(|v| !v.is_null()).cloned();
        let parameters = |o: &Value| field(o, "parameters").filter(|p| p.as_object().is_some_and(|m| !m.is_empty()));
        if parameters(old) != parameters(obj) {
            causes.push(FieldCause::forbidden(
                "parameters",
                "updates to parameters are forbidden.",
            ));
        }
        if field(old, "provisioner") != field(obj, "provisioner") {
            causes.push(FieldCause::forbidden(
                "provisioner",
                "updates to provisioner are forbidden.",
            ));
        }
        if field(old, "reclaimPolicy") != field(obj, "reclaimPolicy") {
            causes.push(FieldCause::forbidden(
                "reclaimPolicy",
                "updates to reclaimPolicy are forbidden.",
            ));
        }
        if field(old, "volumeBindingMode") != field(obj, "volumeBindingMode") {
            causes.push(FieldCause::immutable(
                "volumeBindingMode",
                obj.get("volumeBindingMode").unwrap_or(&Value::Null),
            ));
        }
        invalid(res, obj, causes)
    }

    fn columns(&self) -> Vec<Value> {
        vec![
            crate::resource::name_column(),
            col(
                "Provisioner",
                "string",
                0,
                "provisioner indicates the type of the provisioner.",
            ),
            col(
                "ReclaimPolicy",
                "string",
                0,
                "reclaimPolicy controls the reclaimPolicy for dynamically provisioned PersistentVolumes of this storage class. Defaults to Delete.",
            ),
            col(
                "VolumeBindingMode",
                "string",
                0,
                "volumeBindingMode indicates how PersistentVolumeClaims should be provisioned and bound.  When unset, VolumeBindingImmediate is used. This field is only honored by servers that enable the VolumeScheduling feature.",
            ),
            col(
                "AllowVolumeExpansion",
                "string",
                0,
                "allowVolumeExpansion shows whether the storage class allow volume expand.",
            ),
            crate::resource::age_column(),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let mut name = meta::name(obj).to_string();
        if is_default_class(obj) {
            name.push_str(" (default)");
        }
        let str_or = |f: &str, d: &str| obj.get(f).and_then(Value::as_str).unwrap_or(d).to_string();
        vec![
            text_cell(name),
            text_cell(str_or("provisioner", "")),
            text_cell(str_or("reclaimPolicy", "Delete")),
            text_cell(str_or("volumeBindingMode", "Immediate")),
            json!(
                obj.get("allowVolumeExpansion")
                    .and_then(Value::as_bool)
                    .unwrap_or(false)
            ),
            age(obj),
        ]
    }
}

/// `ValidateStorageClass`.
fn validate_class(obj: &Value, causes: &mut Vec<FieldCause>) {
    let provisioner = obj.get("provisioner").and_then(Value::as_str).unwrap_or("");
    if provisioner.is_empty() {
        causes.push(FieldCause::required("provisioner", ""));
    } else {
        for msg in workloadbuilder::validation::strings::is_qualified_name(&provisioner.to_lowercase()) {
            causes.push(FieldCause::invalid("provisioner", &json!(provisioner), &msg));
        }
    }
    let parameters = obj.get("parameters").and_then(Value::as_object);
    if let Some(params) = parameters {
        if params.len() > MAX_PARAMETERS {
            causes.push(FieldCause::too_long("parameters", MAX_PARAMETERS));
        } else {
            let mut total = 0usize;
            for (k, v) in params {
                if k.is_empty() {
                    causes.push(FieldCause::invalid("parameters", &json!(k), "field can not be empty."));
                }
                total = total
                    .saturating_add(k.len())
                    .saturating_add(v.as_str().map_or(0, str::len));
            }
            if total > MAX_PARAMETER_BYTES {
                causes.push(FieldCause::too_long("parameters", MAX_PARAMETER_BYTES));
            }
        }
    }
    if let Some(p) = obj.get("reclaimPolicy").filter(|v| !v.is_null())
        && !p
            .as_str()
            .is_some_and(|p| p.is_empty() || RECLAIM_POLICIES.contains(&p))
    {
        causes.push(FieldCause::not_supported("reclaimPolicy", p, RECLAIM_POLICIES));
    }
    match obj.get("volumeBindingMode").filter(|v| !v.is_null()) {
        None => causes.push(FieldCause::required("volumeBindingMode", "")),
        Some(m) if !m.as_str().is_some_and(|m| BINDING_MODES.contains(&m)) => {
            causes.push(FieldCause::not_supported("volumeBindingMode", m, BINDING_MODES));
        }
        Some(_) => {}
    }
    if let Some(terms) = obj.get("allowedTopologies").and_then(Value::as_array) {
        validate::topology_terms(terms, "allowedTopologies", causes);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::api::State;
    use crate::request::RequestContext;

    fn create(state: &mut State, body: Value) -> Result<std::sync::Arc<Value>, String> {
        let res = state.builtin("storage.k8s.io", "storageclasses").unwrap();
        state
            .create(&res, "", body, &mut RequestContext::manager("t"))
            .map_err(|e| e.message().to_string())
    }

    #[test]
    fn defaults_validation_and_immutability() {
        let mut state = State::new(100, Default::default());
        let sc = create(
            &mut state,
            json!({"metadata": {"name": "fast", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
                "provisioner": "disk.example.com", "parameters": {"type": "ssd"}}),
        )
        .unwrap();
        assert_eq!(sc["reclaimPolicy"], "Delete");
        assert_eq!(sc["volumeBindingMode"], "Immediate");
        let res = state.builtin("storage.k8s.io", "storageclasses").unwrap();
        let cells = res.strategy.cells(&res, &sc);
        assert_eq!(
            cells[..5],
            [
                json!("fast (default)"),
                json!("disk.example.com"),
                json!("Delete"),
                json!("Immediate"),
                json!(false)
            ]
        );

        let err = create(
            &mut state,
            json!({"metadata": {"name": "bad"}, "volumeBindingMode": "Later", "reclaimPolicy": "Recycle",
            "allowedTopologies": [{}]}),
        )
        .unwrap_err();
        for want in [
            "provisioner: Required value",
            "reclaimPolicy: Unsupported value: \"Recycle\"",
            "volumeBindingMode: Unsupported value: \"Later\"",
            "allowedTopologies[0]: Required value",
        ] {
            assert!(err.contains(want), "{want} missing from {err}");
        }

        let mut changed = (*sc).clone();
        changed["parameters"] = json!({"type": "hdd"});
        changed["volumeBindingMode"] = json!("WaitForFirstConsumer");
        changed["allowVolumeExpansion"] = json!(true);
        let err = state
            .update(&res, "", "fast", changed, None, &mut RequestContext::manager("t"))
            .unwrap_err();
        assert!(
            err.message()
                .contains("parameters: Forbidden: updates to parameters are forbidden."),
            "{}",
            err.message()
        );
        assert!(
            err.message().contains("volumeBindingMode: Invalid value"),
            "{}",
            err.message()
        );
        let mut expandable = (*sc).clone();
        expandable["allowVolumeExpansion"] = json!(true);
        state
            .update(&res, "", "fast", expandable, None, &mut RequestContext::manager("t"))
            .unwrap();
    }
}
