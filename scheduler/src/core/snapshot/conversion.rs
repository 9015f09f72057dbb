//! Reading API objects: field errors rendered like the apiserver's, the `schedulingPolicy` union as a
//! [`Policy`], creation times.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kwas_api_types::group::GroupPolicy;

use super::SnapshotError;
use crate::core::model::Policy;

/// A field error of `object`.
pub(super) fn invalid(object: String, path: impl Into<String>, detail: impl Into<String>) -> SnapshotError {
    SnapshotError::Invalid {
        object,
        path: path.into(),
        detail: detail.into(),
    }
}

/// A group's policy from its `schedulingPolicy` union (`count_field`: `minCount` or `minGroupCount`).
pub(super) fn group_policy(object: &str, policy: GroupPolicy, count_field: &str) -> Result<Policy, SnapshotError> {
    match policy {
        GroupPolicy::Basic => Ok(Policy::Basic),
        GroupPolicy::Gang(min) if min >= 1 => Ok(Policy::Gang {
            min: min.unsigned_abs(),
        }),
        GroupPolicy::Gang(min) => Err(invalid(
            object.to_string(),
            format!("spec.schedulingPolicy.gang.{count_field}"),
            format!("Invalid value: {min}: must be greater than or equal to 1"),
        )),
        GroupPolicy::Both => Err(invalid(
            object.to_string(),
            "spec.schedulingPolicy",
            "Invalid value: must specify exactly one of: `basic`, `gang`",
        )),
        GroupPolicy::Unset => Err(invalid(
            object.to_string(),
            "spec.schedulingPolicy",
            "Required value: must specify one of: `basic`, `gang`",
        )),
    }
}

/// An object's creation time in seconds (0 when unset).
pub(super) fn timestamp(meta: &ObjectMeta) -> i64 {
    meta.creation_timestamp.as_ref().map(|t| t.0.as_second()).unwrap_or(0)
}
