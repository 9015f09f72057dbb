//! core/v1 ResourceQuota: validated like kube-apiserver (non-negative quantities of known shape), its
//! `status` kept by the quota controller (`controllers::quota`: `hard` from the spec, `used` counted
//! from the namespace) and enforced on creates by the quota admission plugin (`admission::quota`).

use k8s_openapi::api::core::v1::ResourceQuota;
use serde_json::{Value, json};

use super::print::{age, col, name, text_cell};
use crate::error::{ApiError, FieldCause};
use crate::meta;
use crate::resource::decode;
use crate::resource::{AdmitContext, Facts, ResourceInfo, Strategy};

/// The served resource.
pub(crate) fn resource() -> ResourceInfo {
    ResourceInfo::builtin("", "v1", "ResourceQuota", "resourcequotas", true, ResourceQuotaStrategy)
        .short_names(&["quota"])
        .with_status()
}

#[derive(Debug)]
struct ResourceQuotaStrategy;

impl Strategy for ResourceQuotaStrategy {
    type Object = ResourceQuota;

    fn facts(&self) -> Facts {
        Facts::NO_GENERATION
    }

    fn decode(&self, cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
        let res = cx.res;
        decode::normalize_quantities(obj);
        if let Some(hard) = obj.pointer_mut("/spec/hard").and_then(Value::as_object_mut) {
            for v in hard.values_mut() {
                if let Value::Number(n) = v {
                    *v = json!(n.to_string());
                }
            }
        }
        decode::typed::<ResourceQuota>(cx.request, res, obj)
    }

    fn validate(&self, cx: &mut AdmitContext<'_>, obj: &Value) -> Result<(), ApiError> {
        let res = cx.res;
        let mut causes = Vec::new();
        for (k, v) in obj
            .pointer("/spec/hard")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            let q = v.as_str().unwrap_or("");
            let parsed = if k == "cpu" || k.ends_with(".cpu") {
                kwas_api_types::quantity::parse_cpu_millis(q)
            } else {
                kwas_api_types::quantity::parse_units(q)
            };
            if let Err(e) = parsed {
                causes.push(FieldCause::invalid(format!("spec.hard[{k}]"), v, &e.to_string()));
            }
        }
        if causes.is_empty() {
            Ok(())
        } else {
            Err(ApiError::invalid(&res.group, &res.kind, meta::name(obj), causes))
        }
    }

    fn validate_update(&self, cx: &mut AdmitContext<'_>, _old: &Value, obj: &Value) -> Result<(), ApiError> {
        self.validate(cx, obj)
    }

    fn columns(&self) -> Vec<Value> {
        vec![
            crate::resource::name_column(),
            crate::resource::age_column(),
            col(
                "Request",
                "string",
                0,
                "Request represents a minimum amount of cpu/memory that a container may consume.",
            ),
            col(
                "Limit",
                "string",
                0,
                "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.",
            ),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let mut request = Vec::new();
        let mut limit = Vec::new();
        let used = obj.pointer("/status/used").and_then(Value::as_object);
        for (k, hard) in obj
            .pointer("/spec/hard")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            let u = used.and_then(|u| u.get(k)).and_then(Value::as_str).unwrap_or("0");
            let entry = format!("{k}: {u}/{}", hard.as_str().unwrap_or(""));
            if k.starts_with("limits.") {
                limit.push(entry);
            } else {
                request.push(entry);
            }
        }
        vec![
            name(obj),
            age(obj),
            text_cell(request.join(", ")),
            text_cell(limit.join(", ")),
        ]
    }
}
