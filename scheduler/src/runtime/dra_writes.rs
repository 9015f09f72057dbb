//! Upstream's DynamicResources PreBind: before a pod with ResourceClaims is bound, each claim gets the
//! allocation the cycle chose (behind the `resource.kubernetes.io/delete-protection` finalizer) and the
//! pod, or its PodGroup for a claim shared by the group (KEP-5729), in `status.reservedFor`.
//!
//! The write is idempotent and safe against concurrent writers (several pods of a gang share a claim,
//! a restarted scheduler repeats a write): it reads the claim, and writes only what is missing with the
//! read `resourceVersion` as precondition, reading again after a conflict. A claim found allocated to
//! other devices, replaced (another uid), being deleted, or deallocated when the cycle expected it
//! allocated fails the pod's binding, which is retried from a new cycle.

use k8s_openapi::api::resource::v1::{AllocationResult, ResourceClaim};
use kube::Api;
use kube::api::PostParams;

use crate::core::ClaimReservation;
use crate::runtime::error::is_status;

/// The finalizer that keeps an allocated claim until it is deallocated.
pub const DELETE_PROTECTION: &str = "resource.kubernetes.io/delete-protection";

const ATTEMPTS: usize = 8;

/// Writes reservation `r`.
pub(crate) async fn reserve(client: &kube::Client, field_manager: &str, r: &ClaimReservation) -> Result<(), String> {
    let api: Api<ResourceClaim> = Api::namespaced(client.clone(), &r.namespace);
    let pp = PostParams {
        field_manager: Some(field_manager.to_string()),
        ..Default::default()
    };
    for _ in 0..ATTEMPTS {
        let mut claim = api.get(&r.claim).await.map_err(|e| e.to_string())?;
        match decide(&claim, r)? {
            Step::Done => return Ok(()),
            Step::AddFinalizer => {
                claim
                    .metadata
                    .finalizers
                    .get_or_insert_default()
                    .push(DELETE_PROTECTION.to_string());
                match api.replace(&r.claim, &pp, &claim).await {
                    Ok(_) => continue,
                    Err(e) if is_status(&e, 409) => continue,
                    Err(e) => return Err(e.to_string()),
                }
            }
            Step::WriteStatus => {
                let status = claim.status.get_or_insert_default();
                if status.allocation.is_none() {
                    status.allocation = r.allocation.clone();
                }
                let reserved = status.reserved_for.get_or_insert_default();
                if !reserved.iter().any(|c| c.uid == r.consumer.uid) {
                    reserved.push(r.consumer.clone());
                }
                match api.replace_status(&r.claim, &pp, &claim).await {
                    Ok(_) => return Ok(()),
                    Err(e) if is_status(&e, 409) => continue,
                    Err(e) => return Err(e.to_string()),
                }
            }
        }
    }
    Err(format!("still conflicting after {ATTEMPTS} attempts"))
}

/// The next write reservation `r` needs on `claim` as read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    Done,
    AddFinalizer,
    WriteStatus,
}

pub(crate) fn decide(claim: &ResourceClaim, r: &ClaimReservation) -> Result<Step, String> {
    if claim.metadata.uid.as_deref() != Some(r.uid.as_str()) {
        return Err("the claim was replaced".into());
    }
    if claim.metadata.deletion_timestamp.is_some() {
        return Err("the claim is being deleted".into());
    }
    let status = claim.status.as_ref();
    let have = status.and_then(|s| s.allocation.as_ref());
    let reserved = status
        .and_then(|s| s.reserved_for.as_ref())
        .is_some_and(|v| v.iter().any(|c| c.uid == r.consumer.uid));
    match (have, &r.allocation) {
        (Some(h), Some(w)) if !same_devices(h, w) => Err("the claim was allocated other devices meanwhile".into()),
        (None, None) => Err("the claim is no longer allocated".into()),
        (Some(_), _) if reserved => Ok(Step::Done),
        (None, Some(_))
            if !claim
                .metadata
                .finalizers
                .iter()
                .flatten()
                .any(|f| f == DELETE_PROTECTION) =>
        {
            Ok(Step::AddFinalizer)
        }
        _ => Ok(Step::WriteStatus),
    }
}

/// Whether two allocations hold the same devices for the same requests.
pub(crate) fn same_devices(a: &AllocationResult, b: &AllocationResult) -> bool {
    let key = |x: &AllocationResult| {
        let mut v: Vec<(String, String, String, String)> = x
            .devices
            .as_ref()
            .and_then(|d| d.results.as_ref())
            .into_iter()
            .flatten()
            .map(|r| (r.request.clone(), r.driver.clone(), r.pool.clone(), r.device.clone()))
            .collect();
        v.sort();
        v
    };
    key(a) == key(b)
}
