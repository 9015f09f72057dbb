//! apps/v1 Deployment: defaults (`replicas: 1`, RollingUpdate 25% / 25%, `revisionHistoryLimit: 10`,
//! `progressDeadlineSeconds: 600`), validation, the `scale` subresource and `kubectl get` columns.

use k8s_openapi::api::apps::v1::Deployment;
use serde_json::{Value, json};

use super::{SCALE, default_template, int, validate_workload, wide_cells};
use crate::error::ApiError;
use crate::kinds::print::{age, col, name, text_cell};
use crate::meta;
use crate::resource::decode;
use crate::resource::{AdmitContext, Facts, ResourceInfo, Strategy};

/// The served resource.
pub(crate) fn resource() -> ResourceInfo {
    ResourceInfo::builtin("apps", "v1", "Deployment", "deployments", true, DeploymentStrategy)
        .short_names(&["deploy"])
        .in_all()
        .with_status()
}

#[derive(Debug)]
struct DeploymentStrategy;

impl Strategy for DeploymentStrategy {
    type Object = Deployment;

    fn facts(&self) -> Facts {
        Facts {
            subresources: &[SCALE],
            ..Facts::PLAIN
        }
    }

    fn decode(&self, cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
        let res = cx.res;
        decode::normalize_quantities(obj);
        decode::typed::<Deployment>(cx.request, res, obj)
    }

    fn prepare(&self, _cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
        let spec = meta::ensure_object(meta::ensure_object(obj).entry("spec").or_insert(json!({})));
        spec.entry("replicas").or_insert(json!(1));
        spec.entry("revisionHistoryLimit").or_insert(json!(10));
        spec.entry("progressDeadlineSeconds").or_insert(json!(600));
        let strategy = meta::ensure_object(spec.entry("strategy").or_insert(json!({})));
        strategy.entry("type").or_insert(json!("RollingUpdate"));
        if strategy.get("type") == Some(&json!("RollingUpdate")) {
            let rolling = meta::ensure_object(strategy.entry("rollingUpdate").or_insert(json!({})));
            rolling.entry("maxUnavailable").or_insert(json!("25%"));
            rolling.entry("maxSurge").or_insert(json!("25%"));
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
            col("Ready", "string", 0, "Number of the pod with ready state"),
            col(
                "Up-to-date",
                "string",
                0,
                "Total number of non-terminated pods targeted by this deployment that have the desired template spec.",
            ),
            col(
                "Available",
                "string",
                0,
                "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.",
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
                "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment.",
            ),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let [containers, images, selector] = wide_cells(obj);
        vec![
            name(obj),
            text_cell(format!(
                "{}/{}",
                int(obj, "/status/readyReplicas"),
                int(obj, "/spec/replicas")
            )),
            json!(int(obj, "/status/updatedReplicas")),
            json!(int(obj, "/status/availableReplicas")),
            age(obj),
            containers,
            images,
            selector,
        ]
    }
}
