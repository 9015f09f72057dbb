//! coordination.k8s.io/v1 Lease.

use k8s_openapi::api::coordination::v1::Lease;
use serde_json::Value;

use super::print::{age, col, name, str_at};
use crate::admission::decode;
use crate::error::ApiError;
use crate::resource::{AdmitContext, ResourceInfo, Strategy};

/// The served resource.
pub(crate) fn resource() -> ResourceInfo {
    ResourceInfo::builtin("coordination.k8s.io", "v1", "Lease", "leases", true, LeaseStrategy)
}

#[derive(Debug)]
struct LeaseStrategy;

impl Strategy for LeaseStrategy {
    fn has_generation(&self) -> bool {
        false
    }

    #[cfg(test)]
    fn json_schema(&self) -> Option<schemars::Schema> {
        Some(schemars::schema_for!(Lease))
    }

    fn decode(&self, cx: &mut AdmitContext<'_>, res: &ResourceInfo, obj: &mut Value) -> Result<(), ApiError> {
        decode::typed::<Lease>(cx.request, res, obj)
    }

    fn columns(&self, _res: &ResourceInfo) -> Vec<Value> {
        vec![
            crate::resource::name_column(),
            col("Holder", "string", 0, "The holder of the lease."),
            crate::resource::age_column(),
        ]
    }

    fn cells(&self, _res: &ResourceInfo, obj: &Value) -> Vec<Value> {
        vec![
            name(obj),
            super::print::text_cell(str_at(obj, "/spec/holderIdentity")),
            age(obj),
        ]
    }
}
