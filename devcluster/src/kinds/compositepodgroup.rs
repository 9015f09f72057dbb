//! scheduling.k8s.io/v1alpha3 CompositePodGroup: the same defaults, admission and columns as PodGroups
//! (see [`super::podgroup`]), with the composite validation rules.

use k8s_openapi::api::scheduling::v1alpha3::CompositePodGroup;
use serde_json::Value;

use super::podgroup::{admit_group, group_cells, group_columns, group_field, prepare_group};
use crate::admission::decode;
use crate::error::ApiError;
use crate::resource::{AdmitContext, ResourceInfo, Strategy};

/// The served resource.
pub(crate) fn resource() -> ResourceInfo {
    ResourceInfo::builtin(
        "scheduling.k8s.io",
        "v1alpha3",
        "CompositePodGroup",
        "compositepodgroups",
        true,
        CompositePodGroupStrategy,
    )
    .with_status()
}

#[derive(Debug)]
struct CompositePodGroupStrategy;

impl Strategy for CompositePodGroupStrategy {
    fn supports_field(&self, _res: &ResourceInfo, field: &str) -> bool {
        group_field(field)
    }

    #[cfg(test)]
    fn json_schema(&self) -> Option<schemars::Schema> {
        Some(schemars::schema_for!(CompositePodGroup))
    }

    fn decode(&self, cx: &mut AdmitContext<'_>, res: &ResourceInfo, obj: &mut Value) -> Result<(), ApiError> {
        decode::typed::<CompositePodGroup>(cx.request, res, obj)
    }

    fn prepare(
        &self,
        cx: &mut AdmitContext<'_>,
        _res: &ResourceInfo,
        _old: Option<&Value>,
        obj: &mut Value,
    ) -> Result<(), ApiError> {
        prepare_group(cx, obj);
        Ok(())
    }

    fn admit(
        &self,
        cx: &mut AdmitContext<'_>,
        res: &ResourceInfo,
        _old: Option<&Value>,
        obj: &mut Value,
    ) -> Result<(), ApiError> {
        admit_group(cx, res, obj)
    }

    fn validate(&self, _cx: &mut AdmitContext<'_>, res: &ResourceInfo, obj: &Value) -> Result<(), ApiError> {
        decode::check(
            workloadbuilder::validation::validate_composite_pod_group(&decode::parse(res, obj)?),
            res,
            obj,
        )
    }

    fn validate_update(
        &self,
        cx: &mut AdmitContext<'_>,
        res: &ResourceInfo,
        old: &Value,
        obj: &Value,
    ) -> Result<(), ApiError> {
        let (new, old) = (decode::parse(res, obj)?, decode::parse(res, old)?);
        let errors = if cx.status() {
            workloadbuilder::validation::validate_composite_pod_group_status_update(&new, &old)
        } else {
            workloadbuilder::validation::validate_composite_pod_group_update(&new, &old)
        };
        decode::check(errors, res, obj)
    }

    fn columns(&self, _res: &ResourceInfo) -> Vec<Value> {
        group_columns("The CompositePodGroupInitiallyScheduled condition.")
    }

    fn cells(&self, _res: &ResourceInfo, obj: &Value) -> Vec<Value> {
        group_cells(
            obj,
            kwas_api_types::names::conditions::COMPOSITE_POD_GROUP_INITIALLY_SCHEDULED,
        )
    }
}
