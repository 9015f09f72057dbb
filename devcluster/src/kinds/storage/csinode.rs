//! storage.k8s.io/v1 CSINode: the CSI drivers registered on a node (a kubelet writes one per node, named
//! after it and owned by its Node), validated like kube-apiserver (valid and unique driver names, a
//! `nodeID` of at most 192 characters, valid topology keys, a non-negative `allocatable.count`; a driver's
//! `nodeID` and topology keys immutable), and `kubectl get csinodes`' columns. devcluster's simulated
//! driver keeps one per node (`sim::csi`).

use std::collections::BTreeSet;

use k8s_openapi::api::storage::v1::CSINode;
use serde_json::{Value, json};

use super::validate_driver_name;
use crate::error::{ApiError, FieldCause};
use crate::kinds::print::{age, col, name};
use crate::kinds::validate;
use crate::kinds::validate::invalid;
use crate::meta;
use crate::resource::{AdmitContext, Facts, ResourceInfo, Strategy};

/// The served resource.
pub(crate) fn resource() -> ResourceInfo {
    ResourceInfo::builtin("storage.k8s.io", "v1", "CSINode", "csinodes", false, CSINodeStrategy)
}

const MAX_NODE_ID: usize = 192;

#[derive(Debug)]
struct CSINodeStrategy;

impl Strategy for CSINodeStrategy {
    type Object = CSINode;

    fn facts(&self) -> Facts {
        Facts::NO_GENERATION
    }

    fn validate(&self, cx: &mut AdmitContext<'_>, obj: &Value) -> Result<(), ApiError> {
        let res = cx.res;
        let mut causes = Vec::new();
        validate_drivers(obj, &mut causes);
        invalid(res, obj, causes)
    }

    fn validate_update(&self, cx: &mut AdmitContext<'_>, old: &Value, obj: &Value) -> Result<(), ApiError> {
        let res = cx.res;
        let mut causes = Vec::new();
        validate_drivers(obj, &mut causes);
        let drivers = |o: &Value| -> Vec<Value> {
            o.pointer("/spec/drivers")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        let before = drivers(old);
        for (i, d) in drivers(obj).iter().enumerate() {
            let Some(prev) = before.iter().find(|p| p.get("name") == d.get("name")) else {
                continue;
            };
            for f in ["nodeID", "topologyKeys"] {
                if prev.get(f) != d.get(f) {
                    causes.push(FieldCause::immutable(
                        format!("spec.drivers[{i}].{f}"),
                        d.get(f).unwrap_or(&Value::Null),
                    ));
                }
            }
        }
        invalid(res, obj, causes)
    }

    fn columns(&self) -> Vec<Value> {
        vec![
            crate::resource::name_column(),
            col(
                "Drivers",
                "integer",
                0,
                "Drivers indicates the number of CSI drivers registered on the node",
            ),
            crate::resource::age_column(),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let drivers = obj
            .pointer("/spec/drivers")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        vec![name(obj), json!(drivers), age(obj)]
    }
}

/// `ValidateCSINode`'s driver checks.
fn validate_drivers(obj: &Value, causes: &mut Vec<FieldCause>) {
    let mut names = BTreeSet::new();
    for (i, d) in obj
        .pointer("/spec/drivers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let p = format!("spec.drivers[{i}]");
        let name = d.get("name").and_then(Value::as_str).unwrap_or("");
        validate_driver_name(name, &format!("{p}.name"), causes);
        if !names.insert(name.to_string()) {
            causes.push(FieldCause::duplicate(format!("{p}.name"), &json!(name)));
        }
        let node_id = d.get("nodeID").and_then(Value::as_str).unwrap_or("");
        if node_id.is_empty() {
            causes.push(FieldCause::required(format!("{p}.nodeID"), ""));
        } else if node_id.len() > MAX_NODE_ID {
            causes.push(FieldCause::invalid(
                format!("{p}.nodeID"),
                &json!(node_id),
                &format!("must be {MAX_NODE_ID} characters or less"),
            ));
        }
        let mut keys = BTreeSet::new();
        for (j, k) in meta::string_list(d.get("topologyKeys")).iter().enumerate() {
            let kp = format!("{p}.topologyKeys[{j}]");
            if k.is_empty() {
                causes.push(FieldCause::required(kp.clone(), ""));
            }
            validate::label_name(k, &kp, causes);
            if !keys.insert(k.clone()) {
                causes.push(FieldCause::duplicate(kp, &json!(k)));
            }
        }
        if let Some(n) = d.pointer("/allocatable/count").and_then(Value::as_i64)
            && n < 0
        {
            causes.push(FieldCause::invalid(
                format!("{p}.allocatable.count"),
                &json!(n),
                "must be greater than or equal to 0",
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::api::State;
    use crate::request::RequestContext;

    #[test]
    fn drivers_are_validated_and_keep_their_identity() {
        let mut state = State::new(100, Default::default());
        let res = state.builtin("storage.k8s.io", "csinodes").unwrap();
        let node = state
            .create(
                &res,
                "",
                json!({"metadata": {"name": "n1"}, "spec": {"drivers": [
                    {"name": "disk.example.com", "nodeID": "n1", "topologyKeys": ["kubernetes.io/hostname"], "allocatable": {"count": 16}}]}}),
                &mut RequestContext::manager("t"),
            )
            .unwrap();
        assert_eq!(res.strategy.cells(&res, &node)[1], 1);
        let mut moved = (*node).clone();
        moved["spec"]["drivers"][0]["nodeID"] = json!("n2");
        moved["spec"]["drivers"][0]["allocatable"]["count"] = json!(8);
        let err = state
            .update(&res, "", "n1", moved, None, &mut RequestContext::manager("t"))
            .unwrap_err();
        assert!(
            err.message()
                .contains("spec.drivers[0].nodeID: Invalid value: \"n2\": field is immutable"),
            "{}",
            err.message()
        );
        let err = state
            .create(
                &res,
                "",
                json!({"metadata": {"name": "n2"}, "spec": {"drivers": [{"name": "a.b", "nodeID": ""}, {"name": "a.b", "nodeID": "x",
                    "allocatable": {"count": -1}}]}}),
                &mut RequestContext::manager("t"),
            )
            .unwrap_err();
        for want in [
            "spec.drivers[0].nodeID: Required value",
            "spec.drivers[1].name: Duplicate value",
            "spec.drivers[1].allocatable.count",
        ] {
            assert!(err.message().contains(want), "{want} missing from {}", err.message());
        }
    }
}
