//! core/v1 ServiceAccount.

use k8s_openapi::api::core::v1::ServiceAccount;

use crate::resource::{Facts, ResourceInfo, Strategy};

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
    type Object = ServiceAccount;

    fn facts(&self) -> Facts {
        Facts::NO_GENERATION
    }
}
