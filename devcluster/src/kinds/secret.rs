//! core/v1 Secret.

use k8s_openapi::api::core::v1::Secret;
use serde_json::{Value, json};

use super::print::{age, col, name, text_cell};
use crate::error::{ApiError, FieldCause};
use crate::resource::{AdmitContext, Facts, ResourceInfo, Strategy};

/// The served resource.
pub(crate) fn resource() -> ResourceInfo {
    ResourceInfo::builtin("", "v1", "Secret", "secrets", true, SecretStrategy)
}

#[derive(Debug)]
struct SecretStrategy;

impl Strategy for SecretStrategy {
    type Object = Secret;

    fn facts(&self) -> Facts {
        Facts::NO_GENERATION
    }

    fn supports_field(&self, field: &str) -> bool {
        field == "type"
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
            col("Type", "string", 0, "The type of the secret."),
            col("Data", "string", 0, "Number of keys."),
            crate::resource::age_column(),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        vec![
            name(obj),
            text_cell(obj.get("type").and_then(Value::as_str).unwrap_or("Opaque")),
            json!(obj.get("data").and_then(Value::as_object).map_or(0, |m| m.len())),
            age(obj),
        ]
    }
}

/// The most a Secret's data may hold in total (keys and values), as in kube-apiserver.
const MAX_DATA_BYTES: usize = 1024 * 1024;

fn check_data_size(res: &ResourceInfo, obj: &Value) -> Result<(), ApiError> {
    let mut total = 0usize;
    for field in ["data", "binaryData", "stringData"] {
        if let Some(m) = obj.get(field).and_then(Value::as_object) {
            for (k, v) in m {
                total = total
                    .saturating_add(k.len())
                    .saturating_add(v.as_str().map_or(0, |b| b.len() / 4 * 3));
            }
        }
    }
    if total > MAX_DATA_BYTES {
        return Err(ApiError::invalid(
            &res.group,
            &res.kind,
            crate::meta::name(obj),
            vec![FieldCause::too_long("data", MAX_DATA_BYTES)],
        ));
    }
    Ok(())
}
