//! apps/v1 workloads: Deployment, ReplicaSet, StatefulSet and DaemonSet. What they share lives here: the
//! pod template's defaults and validation (`restartPolicy: Always`, a selector that matches the
//! template's labels and never changes), the `scale` subresource (autoscaling/v1 `Scale`) and the
//! containers / images / selector cells of `kubectl get -o wide`. Their controllers run in
//! `controllers::apps`.

pub(crate) mod daemonset;
pub(crate) mod deployment;
pub(crate) mod replicaset;
pub(crate) mod statefulset;

use serde_json::{Value, json};

use super::pod::{default_pod_spec, validate_pod_spec};
use super::print::text_cell;
use crate::error::{ApiError, FieldCause};
use crate::meta;
use crate::resource::{ResourceInfo, Subresource, SubresourceOp};
use crate::selectors::LabelSelector;

/// The `scale` subresource of Deployments, ReplicaSets and StatefulSets.
pub(crate) const SCALE: Subresource = Subresource {
    name: "scale",
    kind: "Scale",
    group: "autoscaling",
    version: "v1",
    verbs: &["get", "patch", "update"],
    op: SubresourceOp::Scale,
};

/// Defaults of the pod template (`spec.template.spec`).
pub(crate) fn default_template(obj: &mut Value) {
    if let Some(tspec) = obj.pointer_mut("/spec/template/spec") {
        default_pod_spec(tspec);
    }
}

/// Validation every apps/v1 workload shares, with `old` on updates.
pub(crate) fn validate_workload(res: &ResourceInfo, old: Option<&Value>, obj: &Value) -> Result<(), ApiError> {
    let mut causes = Vec::new();
    let selector = obj.pointer("/spec/selector");
    match LabelSelector::from_api(selector) {
        None => causes.push(FieldCause::required("spec.selector", "")),
        Some(sel) if sel.0.is_empty() => causes.push(FieldCause::invalid(
            "spec.selector",
            selector.unwrap_or(&Value::Null),
            "empty selector is invalid for deployment",
        )),
        Some(sel) => {
            let labels = obj
                .pointer("/spec/template/metadata/labels")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            if !sel.matches_labels(&labels) {
                causes.push(FieldCause::invalid(
                    "spec.template.metadata.labels",
                    &Value::Object(labels),
                    "`selector` does not match template `labels`",
                ));
            }
        }
    }
    match obj.pointer("/spec/template/spec") {
        Some(tspec) => validate_pod_spec(tspec, "spec.template.spec", &mut causes, &["Always"]),
        None => causes.push(FieldCause::required("spec.template.spec", "")),
    }
    for f in [
        "replicas",
        "minReadySeconds",
        "revisionHistoryLimit",
        "progressDeadlineSeconds",
    ] {
        if let Some(v) = obj.pointer(&format!("/spec/{f}")).and_then(Value::as_i64)
            && v < 0
        {
            causes.push(FieldCause::invalid(
                format!("spec.{f}"),
                &json!(v),
                "must be greater than or equal to 0",
            ));
        }
    }
    if let Some(old) = old
        && old.pointer("/spec/selector") != selector
    {
        causes.push(FieldCause::immutable("spec.selector", selector.unwrap_or(&Value::Null)));
    }
    if causes.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid(&res.group, &res.kind, meta::name(obj), causes))
    }
}

/// The `Containers`, `Images` and `Selector` cells (`-o wide`).
pub(crate) fn wide_cells(obj: &Value) -> [Value; 3] {
    let containers = obj
        .pointer("/spec/template/spec/containers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let field = |f: &str| {
        containers
            .iter()
            .filter_map(|c| c.get(f).and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(",")
    };
    let selector = LabelSelector::from_api(obj.pointer("/spec/selector")).map_or_else(String::new, |s| s.to_string());
    [text_cell(field("name")), text_cell(field("image")), text_cell(selector)]
}

/// An integer at a JSON pointer, 0 when absent.
pub(crate) fn int(obj: &Value, pointer: &str) -> i64 {
    obj.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}
