//! coordination.k8s.io/v1 Lease.

use k8s_openapi::api::coordination::v1::Lease;
use serde_json::Value;

use super::print::{age, col, name, str_at};
use crate::resource::{Facts, ResourceInfo, Strategy};

/// The served resource.
pub(crate) fn resource() -> ResourceInfo {
    ResourceInfo::builtin("coordination.k8s.io", "v1", "Lease", "leases", true, LeaseStrategy)
}

#[derive(Debug)]
struct LeaseStrategy;

impl Strategy for LeaseStrategy {
    type Object = Lease;

    fn facts(&self) -> Facts {
        Facts::NO_GENERATION
    }

    fn columns(&self) -> Vec<Value> {
        vec![
            crate::resource::name_column(),
            col("Holder", "string", 0, "The holder of the lease."),
            crate::resource::age_column(),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        vec![
            name(obj),
            super::print::text_cell(str_at(obj, "/spec/holderIdentity")),
            age(obj),
        ]
    }
}
