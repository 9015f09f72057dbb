//! core/v1 ConfigMap.

use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::{Value, json};

use super::print::{age, col, name};
use crate::admission::decode;
use crate::error::ApiError;
use crate::resource::{AdmitContext, ResourceInfo, Strategy};

/// The served resource.
pub(crate) fn resource() -> ResourceInfo {
    ResourceInfo::builtin("", "v1", "ConfigMap", "configmaps", true, ConfigMapStrategy).short_names(&["cm"])
}

#[derive(Debug)]
struct ConfigMapStrategy;

impl Strategy for ConfigMapStrategy {
    fn has_generation(&self) -> bool {
        false
    }

    fn decode(&self, cx: &mut AdmitContext<'_>, res: &ResourceInfo, obj: &mut Value) -> Result<(), ApiError> {
        decode::typed::<ConfigMap>(cx.request, res, obj)
    }

    fn columns(&self, _res: &ResourceInfo) -> Vec<Value> {
        vec![
            crate::resource::name_column(),
            col("Data", "string", 0, "Number of keys."),
            crate::resource::age_column(),
        ]
    }

    fn cells(&self, _res: &ResourceInfo, obj: &Value) -> Vec<Value> {
        vec![
            name(obj),
            json!(obj.get("data").and_then(Value::as_object).map_or(0, |m| m.len())),
            age(obj),
        ]
    }
}
