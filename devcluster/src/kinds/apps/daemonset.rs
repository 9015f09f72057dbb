//! apps/v1 DaemonSet: defaults (RollingUpdate with `maxUnavailable: 1`, `maxSurge: 0`,
//! `revisionHistoryLimit: 10`), validation and `kubectl get` columns.

use k8s_openapi::api::apps::v1::DaemonSet;
use serde_json::{Value, json};

use super::{default_template, int, validate_workload, wide_cells};
use crate::error::ApiError;
use crate::kinds::print::{age, col, name, text_cell};
use crate::meta;
use crate::resource::decode;
use crate::resource::{AdmitContext, ResourceInfo, Strategy};

/// The served resource.
pub(crate) fn resource() -> ResourceInfo {
    ResourceInfo::builtin("apps", "v1", "DaemonSet", "daemonsets", true, DaemonSetStrategy)
        .short_names(&["ds"])
        .in_all()
        .with_status()
}

#[derive(Debug)]
struct DaemonSetStrategy;

impl Strategy for DaemonSetStrategy {
    type Object = DaemonSet;

    fn decode(&self, cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
        let res = cx.res;
        decode::normalize_quantities(obj);
        decode::typed::<DaemonSet>(cx.request, res, obj)
    }

    fn prepare(&self, _cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
        let spec = meta::ensure_object(meta::ensure_object(obj).entry("spec").or_insert(json!({})));
        spec.entry("revisionHistoryLimit").or_insert(json!(10));
        let update = meta::ensure_object(spec.entry("updateStrategy").or_insert(json!({})));
        update.entry("type").or_insert(json!("RollingUpdate"));
        if update.get("type") == Some(&json!("RollingUpdate")) {
            let rolling = meta::ensure_object(update.entry("rollingUpdate").or_insert(json!({})));
            rolling.entry("maxUnavailable").or_insert(json!(1));
            rolling.entry("maxSurge").or_insert(json!(0));
        }
        default_template(obj);
        Ok(())
    }

    fn validate(&self, cx: &mut AdmitContext<'_>, obj: &Value) -> Result<(), ApiError> {
        let res = cx.res;
        validate_workload(res, None, obj)
    }

    fn validate_update(&self, cx: &mut AdmitContext<'_>, old: &Value, obj: &Value) -> Result<(), ApiError> {
        let res = cx.res;
        validate_workload(res, Some(old), obj)
    }

    fn columns(&self) -> Vec<Value> {
        vec![
            crate::resource::name_column(),
            col(
                "Desired",
                "integer",
                0,
                "The total number of nodes that should be running the daemon pod.",
            ),
            col(
                "Current",
                "integer",
                0,
                "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod.",
            ),
            col(
                "Ready",
                "integer",
                0,
                "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and ready.",
            ),
            col(
                "Up-to-date",
                "integer",
                0,
                "The total number of nodes that are running updated daemon pod",
            ),
            col(
                "Available",
                "integer",
                0,
                "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available.",
            ),
            col(
                "Node Selector",
                "string",
                0,
                "NodeSelector is a selector which must be true for the pod to fit on a node.",
            ),
            crate::resource::age_column(),
            col("Containers", "string", 1, "Names of each container in the template."),
            col(
                "Images",
                "string",
                1,
                "Images referenced by each container in the template.",
            ),
            col(
                "Selector",
                "string",
                1,
                "A label query over pods that are managed by the daemon set.",
            ),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let [containers, images, selector] = wide_cells(obj);
        let node_selector: Vec<String> = obj
            .pointer("/spec/template/spec/nodeSelector")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
            .collect();
        vec![
            name(obj),
            json!(int(obj, "/status/desiredNumberScheduled")),
            json!(int(obj, "/status/currentNumberScheduled")),
            json!(int(obj, "/status/numberReady")),
            json!(int(obj, "/status/updatedNumberScheduled")),
            json!(int(obj, "/status/numberAvailable")),
            text_cell(if node_selector.is_empty() {
                "<none>".to_string()
            } else {
                node_selector.join(",")
            }),
            age(obj),
            containers,
            images,
            selector,
        ]
    }
}
