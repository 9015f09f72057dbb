//! core/v1 ServiceAccount.

use k8s_openapi::api::core::v1::ServiceAccount;
use serde_json::Value;

use crate::admission::decode;
use crate::error::ApiError;
use crate::resource::{AdmitContext, ResourceInfo, Strategy};

/// The served resource.
pub(crate) fn resource() -> ResourceInfo {
    ResourceInfo::builtin(
        "",
        "v1",
        "ServiceAccount",
        "serviceaccounts",
        true,
        ServiceAccountStrategy,
    )
    .short_names(&["sa"])
}

#[derive(Debug)]
struct ServiceAccountStrategy;

impl Strategy for ServiceAccountStrategy {
    fn has_generation(&self) -> bool {
        false
    }

    #[cfg(test)]
    fn json_schema(&self) -> Option<schemars::Schema> {
        Some(schemars::schema_for!(ServiceAccount))
    }

    fn decode(&self, cx: &mut AdmitContext<'_>, res: &ResourceInfo, obj: &mut Value) -> Result<(), ApiError> {
        decode::typed::<ServiceAccount>(cx.request, res, obj)
    }
}
