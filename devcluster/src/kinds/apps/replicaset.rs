//! apps/v1 ReplicaSet: `replicas: 1` by default, validation, the `scale` subresource and `kubectl get`
//! columns.

use k8s_openapi::api::apps::v1::ReplicaSet;
use serde_json::{Value, json};

use super::{SCALE, default_template, int, validate_workload, wide_cells};
use crate::error::ApiError;
use crate::kinds::print::{age, col, name};
use crate::meta;
use crate::resource::decode;
use crate::resource::{AdmitContext, Facts, ResourceInfo, Strategy};

/// The served resource.
pub(crate) fn resource() -> ResourceInfo {
    ResourceInfo::builtin("apps", "v1", "ReplicaSet", "replicasets", true, ReplicaSetStrategy)
        .short_names(&["rs"])
        .in_all()
        .with_status()
}

#[derive(Debug)]
struct ReplicaSetStrategy;

impl Strategy for ReplicaSetStrategy {
    type Object = ReplicaSet;

    fn facts(&self) -> Facts {
        Facts {
            subresources: &[SCALE],
            ..Facts::PLAIN
        }
    }

    fn decode(&self, cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
        let res = cx.res;
        decode::normalize_quantities(obj);
        decode::typed::<ReplicaSet>(cx.request, res, obj)
    }

    fn prepare(&self, _cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
        let spec = meta::ensure_object(meta::ensure_object(obj).entry("spec").or_insert(json!({})));
        spec.entry("replicas").or_insert(json!(1));
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
            col("Desired", "integer", 0, "Number of desired pods."),
            col("Current", "integer", 0, "Number of actual pods."),
            col("Ready", "integer", 0, "Number of ready pods."),
            crate::resource::age_column(),
            col("Containers", "string", 1, "Names of each container in the template."),
            col(
                "Images",
                "string",
                1,
                "Images referenced by each container in the template.",
            ),
            col("Selector", "string", 1, "Label selector for pods."),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let [containers, images, selector] = wide_cells(obj);
        vec![
            name(obj),
            json!(int(obj, "/spec/replicas")),
            json!(int(obj, "/status/replicas")),
            json!(int(obj, "/status/readyReplicas")),
            age(obj),
            containers,
            images,
            selector,
        ]
    }
}
