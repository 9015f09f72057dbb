//! core/v1 Node: `spec.unschedulable` kept in step with the `node.kubernetes.io/unschedulable:NoSchedule`
//! taint, as the node lifecycle controller does.

use k8s_openapi::api::core::v1::Node;
use serde_json::{Value, json};

use super::print::{age, col, condition_status, name, str_at, text_cell};
use crate::error::ApiError;
use crate::meta;
use crate::resource::decode;
use crate::resource::{AdmitContext, Facts, ResourceInfo, StatusStrategy, Strategy};

/// The served resource.
pub(crate) fn resource() -> ResourceInfo {
    ResourceInfo::builtin("", "v1", "Node", "nodes", false, NodeStrategy)
        .short_names(&["no"])
        .with_status_strategy(NodeStatus)
}

/// The taint the node lifecycle controller keeps in step with `spec.unschedulable`.
pub(crate) const UNSCHEDULABLE_TAINT: &str = "node.kubernetes.io/unschedulable";

#[derive(Debug)]
struct NodeStrategy;

impl Strategy for NodeStrategy {
    type Object = Node;

    fn facts(&self) -> Facts {
        Facts {
            keeps_status_on_create: true,
            ..Facts::PLAIN
        }
    }

    fn supports_field(&self, field: &str) -> bool {
        field == "spec.unschedulable"
    }

    fn decode(&self, cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
        let res = cx.res;
        decode::normalize_quantities(obj);
        decode::typed::<Node>(cx.request, res, obj)
    }

    fn prepare(&self, _cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
        sync_unschedulable_taint(obj);
        Ok(())
    }

    fn columns(&self) -> Vec<Value> {
        let name = crate::resource::name_column();
        let age = crate::resource::age_column();
        vec![
            name,
            col("Status", "string", 0, "The status of the node"),
            col("Roles", "string", 0, "The roles of the node"),
            age,
            col("Version", "string", 0, "Kubelet Version reported by the node."),
            col("Internal-IP", "string", 1, "List of addresses reachable to the node."),
            col("External-IP", "string", 1, "List of addresses reachable to the node."),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let (name, age) = (name(obj), age(obj));
        let str_at = |p: &str| str_at(obj, p);
        {
            // printNode: `Ready` when True, `NotReady` for False and Unknown, `Unknown` without the condition.
            let mut status = match condition_status(obj, "Ready") {
                Some("True") => "Ready".to_string(),
                Some(_) => "NotReady".to_string(),
                None => "Unknown".to_string(),
            };
            if obj.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true) {
                status.push_str(",SchedulingDisabled");
            }
            let roles: Vec<String> = meta::string_map(obj, "labels")
                .into_iter()
                .filter_map(|(k, _)| k.strip_prefix("node-role.kubernetes.io/").map(str::to_string))
                .collect();
            let ip = obj
                .pointer("/status/addresses")
                .and_then(Value::as_array)
                .and_then(|a| {
                    a.iter()
                        .find(|x| x.get("type").and_then(Value::as_str) == Some("InternalIP"))
                })
                .and_then(|x| x.get("address"))
                .and_then(Value::as_str)
                .unwrap_or("<none>");
            vec![
                name,
                text_cell(status),
                text_cell(if roles.is_empty() {
                    "<none>".to_string()
                } else {
                    roles.join(",")
                }),
                age,
                text_cell(str_at("/status/nodeInfo/kubeletVersion")),
                text_cell(ip),
                text_cell("<none>"),
            ]
        }
    }
}

/// Nodes' status writes: the unschedulable taint follows `spec.unschedulable`.
#[derive(Debug)]
struct NodeStatus;

impl StatusStrategy for NodeStatus {
    fn prepare_for_update(&self, _cx: &mut AdmitContext<'_>, _old: &Value, obj: &mut Value) -> Result<(), ApiError> {
        sync_unschedulable_taint(obj);
        Ok(())
    }
}

fn sync_unschedulable_taint(obj: &mut Value) {
    if obj.get("spec").is_none() {
        obj["spec"] = json!({});
    }
    let unschedulable = obj.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true);
    let spec = meta::ensure_object(&mut obj["spec"]);
    let mut taints = spec
        .get("taints")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let has = taints
        .iter()
        .any(|t| t.get("key").and_then(Value::as_str) == Some(UNSCHEDULABLE_TAINT));
    if unschedulable && !has {
        taints.push(json!({"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule", "timeAdded": meta::now_rfc3339()}));
    } else if !unschedulable && has {
        taints.retain(|t| t.get("key").and_then(Value::as_str) != Some(UNSCHEDULABLE_TAINT));
    }
    if taints.is_empty() {
        spec.remove("taints");
    } else {
        spec.insert("taints".into(), Value::Array(taints));
    }
}
