//! core/v1 Namespace: the `kubernetes.io/metadata.name` label, the `kubernetes` finalizer, `Terminating` on
//! delete (the namespace controller then deletes the content), and the `finalize` subresource.

use k8s_openapi::api::core::v1::Namespace;
use serde_json::{Value, json};

use super::print::{age, col, name, str_at, text_cell};
use crate::error::ApiError;
use crate::meta;
use crate::resource::{
    AdmitContext, Effect, Facts, NameRule, OnDelete, Operation, ResourceInfo, StatusStrategy, Strategy, Subresource,
    SubresourceOp,
};
use crate::work::GcItem;

/// The namespace finalizer (in `spec.finalizers`) the namespace controller removes.
pub(crate) const NAMESPACE_FINALIZER: &str = "kubernetes";

/// The served resource.
pub(crate) fn resource() -> ResourceInfo {
    ResourceInfo::builtin("", "v1", "Namespace", "namespaces", false, NamespaceStrategy)
        .short_names(&["ns"])
        .with_status_strategy(NamespaceStatus)
}

#[derive(Debug)]
struct NamespaceStrategy;

impl Strategy for NamespaceStrategy {
    type Object = Namespace;

    fn facts(&self) -> Facts {
        Facts {
            keeps_status_on_create: true,
            name_rule: NameRule::Label,
            subresources: &[Subresource {
                name: "finalize",
                kind: "",
                group: "",
                version: "",
                verbs: &["update"],
                op: SubresourceOp::NamespaceFinalize,
            }],
            ..Facts::PLAIN
        }
    }

    fn supports_field(&self, field: &str) -> bool {
        field == "status.phase"
    }

    fn prepare(&self, cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
        admit_namespace(cx.op, obj);
        Ok(())
    }

    fn on_delete(&self, obj: &mut Value, effects: &mut Vec<Effect>) -> OnDelete {
        if meta::is_deleting(obj) {
            return OnDelete::Unchanged;
        }
        let m = meta::metadata_mut(obj);
        m.insert("deletionTimestamp".into(), Value::String(meta::now_rfc3339()));
        m.insert("deletionGracePeriodSeconds".into(), json!(0));
        obj["status"]["phase"] = json!("Terminating");
        effects.push(Effect::Gc(GcItem::Namespace(meta::name(obj).to_string())));
        OnDelete::Store
    }

    fn columns(&self) -> Vec<Value> {
        vec![
            crate::resource::name_column(),
            col("Status", "string", 0, "The status of the namespace"),
            crate::resource::age_column(),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        vec![name(obj), text_cell(str_at(obj, "/status/phase")), age(obj)]
    }
}

/// Namespaces' status writes: the phase follows the deletion.
#[derive(Debug)]
struct NamespaceStatus;

impl StatusStrategy for NamespaceStatus {
    fn prepare_for_update(&self, cx: &mut AdmitContext<'_>, _old: &Value, obj: &mut Value) -> Result<(), ApiError> {
        admit_namespace(cx.op, obj);
        Ok(())
    }
}

fn admit_namespace(op: Operation, obj: &mut Value) {
    let name = meta::name(obj).to_string();
    let m = meta::metadata_mut(obj);
    let labels = m.entry("labels").or_insert_with(|| json!({}));
    if let Some(l) = labels.as_object_mut() {
        l.insert("kubernetes.io/metadata.name".into(), Value::String(name));
    }
    if op == Operation::Create {
        obj["spec"] = json!({"finalizers": [NAMESPACE_FINALIZER]});
        obj["status"] = json!({"phase": "Active"});
    }
}
