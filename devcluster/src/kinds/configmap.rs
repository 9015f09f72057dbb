//! core/v1 ConfigMap.

use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::{Value, json};

use super::print::{age, col, name};
use crate::error::{ApiError, FieldCause};
use crate::resource::{AdmitContext, Facts, ResourceInfo, Strategy};

/// The served resource.
pub(crate) fn resource() -> ResourceInfo {
    ResourceInfo::builtin("", "v1", "ConfigMap", "configmaps", true, ConfigMapStrategy).short_names(&["cm"])
}

#[derive(Debug)]
struct ConfigMapStrategy;

impl Strategy for ConfigMapStrategy {
    type Object = ConfigMap;

    fn facts(&self) -> Facts {
        Facts::NO_GENERATION
    }

    fn validate(&self, cx: &mut AdmitContext<'_>, obj: &Value) -> Result<(), ApiError> {
        let res = cx.res;
        check_data_size(res, obj)
    }

    fn validate_update(&self, cx: &mut AdmitContext<'_>, _old: &Value, obj: &Value) -> Result<(), ApiError> {
        let res = cx.res;
        check_data_size(res, obj)
    }

    fn columns(&self) -> Vec<Value> {
        vec![
            crate::resource::name_column(),
            col("Data", "string", 0, "Number of keys."),
            crate::resource::age_column(),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        vec![
            name(obj),
            json!(obj.get("data").and_then(Value::as_object).map_or(0, |m| m.len())),
            age(obj),
        ]
    }
}

/// The most a ConfigMap's data may hold in total (keys and values), as in kube-apiserver.
const MAX_DATA_BYTES: usize = 1024 * 1024;

fn check_data_size(res: &ResourceInfo, obj: &Value) -> Result<(), ApiError> {
    let mut total = 0usize;
    for field in ["data", "binaryData", "stringData"] {
        if let Some(m) = obj.get(field).and_then(Value::as_object) {
            for (k, v) in m {
                total = total
                    .saturating_add(k.len())
                    .saturating_add(v.as_str().map_or(0, str::len));
            }
        }
    }
    if total > MAX_DATA_BYTES {
        return Err(ApiError::invalid(
            &res.group,
            &res.kind,
            crate::meta::name(obj),
            vec![FieldCause::too_long("", MAX_DATA_BYTES)],
        ));
    }
    Ok(())
}
