//! scheduling.k8s.io/v1alpha3 and v1beta1 Workload (one storage, see [`super::podgroup::beta`]), validated with kube-apiserver's rules as `workloadbuilder`
//! implements them.

use k8s_openapi::api::scheduling::v1alpha3::Workload;
use serde_json::Value;

use super::print::{age, col, name, text_cell};
use crate::error::ApiError;
use crate::resource::decode;
use crate::resource::{AdmitContext, Facts, ResourceInfo, Strategy};

/// The served resource.
pub(crate) fn resource() -> ResourceInfo {
    ResourceInfo::builtin(
        "scheduling.k8s.io",
        "v1alpha3",
        "Workload",
        "workloads",
        true,
        WorkloadStrategy { beta: false },
    )
}

/// The served `v1beta1` resource.
pub(crate) fn beta_resource() -> ResourceInfo {
    super::podgroup::beta(resource(), WorkloadStrategy { beta: true })
}

#[derive(Debug)]
struct WorkloadStrategy {
    beta: bool,
}

impl Strategy for WorkloadStrategy {
    type Object = Workload;

    fn facts(&self) -> Facts {
        if self.beta {
            super::podgroup::beta_facts("Workload")
        } else {
            Facts::PLAIN
        }
    }

    fn validate(&self, cx: &mut AdmitContext<'_>, obj: &Value) -> Result<(), ApiError> {
        let res = cx.res;
        decode::check(
            workloadbuilder::validation::validate_workload(&decode::parse(res, obj)?),
            res,
            obj,
        )
    }

    fn validate_update(&self, cx: &mut AdmitContext<'_>, old: &Value, obj: &Value) -> Result<(), ApiError> {
        let res = cx.res;
        let errors =
            workloadbuilder::validation::validate_workload_update(&decode::parse(res, obj)?, &decode::parse(res, old)?);
        decode::check(errors, res, obj)
    }

    fn columns(&self) -> Vec<Value> {
        vec![
            crate::resource::name_column(),
            col("Templates", "string", 0, "The top-level templates."),
            crate::resource::age_column(),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let (name, age) = (name(obj), age(obj));
        {
            let names: Vec<&str> = ["podGroupTemplates", "compositePodGroupTemplates"]
                .iter()
                .filter_map(|k| obj.pointer(&format!("/spec/{k}")).and_then(Value::as_array))
                .flatten()
                .filter_map(|t| t.get("name").and_then(Value::as_str))
                .collect();
            vec![name, text_cell(names.join(",")), age]
        }
    }
}
