//! apps/v1 StatefulSet: defaults (`replicas: 1`, `podManagementPolicy: OrderedReady`, RollingUpdate with
//! partition 0, `revisionHistoryLimit: 10`, Retain claims), validation, the `scale` subresource and
//! `kubectl get` columns.

use k8s_openapi::api::apps::v1::StatefulSet;
use serde_json::{Value, json};

use super::{SCALE, default_template, int, validate_workload, wide_cells};
use crate::error::{ApiError, FieldCause};
use crate::kinds::print::{age, col, name, text_cell};
use crate::meta;
use crate::resource::decode;
use crate::resource::{AdmitContext, Facts, ResourceInfo, Strategy};

/// The served resource.
pub(crate) fn resource() -> ResourceInfo {
    ResourceInfo::builtin("apps", "v1", "StatefulSet", "statefulsets", true, StatefulSetStrategy)
        .short_names(&["sts"])
        .in_all()
        .with_status()
}

#[derive(Debug)]
struct StatefulSetStrategy;

impl Strategy for StatefulSetStrategy {
    type Object = StatefulSet;

    fn facts(&self) -> Facts {
        Facts {
            subresources: &[SCALE],
            ..Facts::PLAIN
        }
    }

    fn decode(&self, cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
        let res = cx.res;
        decode::normalize_quantities(obj);
        decode::typed::<StatefulSet>(cx.request, res, obj)
    }

    fn prepare(&self, _cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
        let spec = meta::ensure_object(meta::ensure_object(obj).entry("spec").or_insert(json!({})));
        spec.entry("replicas").or_insert(json!(1));
        spec.entry("podManagementPolicy").or_insert(json!("OrderedReady"));
        spec.entry("revisionHistoryLimit").or_insert(json!(10));
        spec.entry("persistentVolumeClaimRetentionPolicy")
            .or_insert(json!({"whenDeleted": "Retain", "whenScaled": "Retain"}));
        let update = meta::ensure_object(spec.entry("updateStrategy").or_insert(json!({})));
        update.entry("type").or_insert(json!("RollingUpdate"));
        if update.get("type") == Some(&json!("RollingUpdate")) {
            meta::ensure_object(update.entry("rollingUpdate").or_insert(json!({})))
                .entry("partition")
                .or_insert(json!(0));
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
        // Only replicas, ordinals, template, updateStrategy, persistentVolumeClaimRetentionPolicy and
        // minReadySeconds may change.
        let frozen = ["serviceName", "podManagementPolicy", "volumeClaimTemplates"];
        for f in frozen {
            if old.pointer(&format!("/spec/{f}")) != obj.pointer(&format!("/spec/{f}")) {
                return Err(ApiError::invalid(
                    &res.group,
                    &res.kind,
                    meta::name(obj),
                    vec![FieldCause::forbidden(
                        "spec",
                        "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
                    )],
                ));
            }
        }
        validate_workload(res, Some(old), obj)
    }

    fn columns(&self) -> Vec<Value> {
        vec![
            crate::resource::name_column(),
            col("Ready", "string", 0, "Number of the pod with ready state"),
            crate::resource::age_column(),
            col("Containers", "string", 1, "Names of each container in the template."),
            col(
                "Images",
                "string",
                1,
                "Images referenced by each container in the template.",
            ),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let [containers, images, _] = wide_cells(obj);
        vec![
            name(obj),
            text_cell(format!(
                "{}/{}",
                int(obj, "/status/readyReplicas"),
                int(obj, "/spec/replicas")
            )),
            age(obj),
            containers,
            images,
        ]
    }
}
