//! scheduling.k8s.io/v1 PriorityClass: the value limit for user classes, reserved `system-` names, one
//! global default, immutable value and preemption policy.

use k8s_openapi::api::scheduling::v1::PriorityClass;
use serde_json::{Value, json};

use super::print::{age, col, name, text_cell};
use crate::error::{ApiError, FieldCause};
use crate::meta;
use crate::resource::{AdmitContext, Operation, ResourceInfo, Strategy};
use crate::store::{GroupResource, Store};

/// The served resource.
pub(crate) fn resource() -> ResourceInfo {
    ResourceInfo::builtin(
        "scheduling.k8s.io",
        "v1",
        "PriorityClass",
        "priorityclasses",
        false,
        PriorityClassStrategy,
    )
    .short_names(&["pc"])
}

#[derive(Debug)]
struct PriorityClassStrategy;

impl Strategy for PriorityClassStrategy {
    type Object = PriorityClass;

    fn prepare(&self, _cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
        if let Some(m) = obj.as_object_mut() {
            m.entry("preemptionPolicy").or_insert(json!("PreemptLowerPriority"));
        }
        Ok(())
    }

    fn validate(&self, cx: &mut AdmitContext<'_>, obj: &Value) -> Result<(), ApiError> {
        let res = cx.res;
        check(cx.store, res, cx.op, None, obj)
    }

    fn validate_update(&self, cx: &mut AdmitContext<'_>, old: &Value, obj: &Value) -> Result<(), ApiError> {
        let res = cx.res;
        check(cx.store, res, cx.op, Some(old), obj)
    }

    fn columns(&self) -> Vec<Value> {
        let name = crate::resource::name_column();
        let age = crate::resource::age_column();
        vec![
            name,
            col("Value", "integer", 0, "The value of this priority class."),
            col(
                "Global-Default",
                "boolean",
                0,
                "Whether this is the default priority class.",
            ),
            age,
            col(
                "PreemptionPolicy",
                "string",
                0,
                "Preemption policy of pods with this priority class.",
            ),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        vec![
            name(obj),
            obj.get("value").cloned().unwrap_or(json!(0)),
            obj.get("globalDefault").cloned().unwrap_or(json!(false)),
            age(obj),
            text_cell(obj.get("preemptionPolicy").and_then(Value::as_str).unwrap_or("")),
        ]
    }
}

fn check(store: &Store, res: &ResourceInfo, op: Operation, old: Option<&Value>, obj: &Value) -> Result<(), ApiError> {
    let name = meta::name(obj).to_string();
    let value = obj.get("value").and_then(Value::as_i64);
    let mut causes = Vec::new();
    let system = name.starts_with("system-");
    match value {
        None => causes.push(FieldCause::required("value", "")),
        Some(v) if !system && v > i64::from(kwas_api_types::names::HIGHEST_USER_DEFINABLE_PRIORITY) => {
            causes.push(FieldCause::forbidden(
                "value",
                "maximum allowed value of a user defined priority is 1000000000",
            ))
        }
        _ => {}
    }
    if system && op == Operation::Create && !matches!(name.as_str(), "system-node-critical" | "system-cluster-critical")
    {
        causes.push(FieldCause::forbidden(
            "metadata.name",
            "priority class names with 'system-' prefix are reserved for system use only",
        ));
    }
    if let Some(p) = obj.get("preemptionPolicy").and_then(Value::as_str)
        && !matches!(p, "PreemptLowerPriority" | "Never")
    {
        causes.push(FieldCause::not_supported(
            "preemptionPolicy",
            &json!(p),
            &["Never", "PreemptLowerPriority"],
        ));
    }
    if let Some(old) = old {
        if old.get("value") != obj.get("value") {
            causes.push(FieldCause::forbidden("value", "may not be changed in an update."));
        }
        if old.get("preemptionPolicy") != obj.get("preemptionPolicy") {
            causes.push(FieldCause::immutable(
                "preemptionPolicy",
                obj.get("preemptionPolicy").unwrap_or(&Value::Null),
            ));
        }
    }
    if !causes.is_empty() {
        return Err(ApiError::invalid(&res.group, &res.kind, &name, causes));
    }
    if obj.get("globalDefault").and_then(Value::as_bool) == Some(true) {
        let pcs = GroupResource::new("scheduling.k8s.io", "priorityclasses");
        if let Some(other) = store
            .list(&pcs, None)
            .into_iter()
            .find(|pc| meta::name(pc) != name && pc.get("globalDefault").and_then(Value::as_bool) == Some(true))
        {
            return Err(ApiError::forbidden(
                &res.group,
                &res.plural,
                &name,
                &format!(
                    "PriorityClass {} is already marked as default. Only one default can exist",
                    meta::name(&other)
                ),
            ));
        }
    }
    Ok(())
}
