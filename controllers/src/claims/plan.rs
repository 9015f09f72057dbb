//! The ResourceClaim controller's decisions, pure: which claim to create for a pod or a PodGroup, which
//! generated names to record, and how a claim's reservations, allocation, finalizer and life follow its
//! consumers.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::resource::v1::{ResourceClaim, ResourceClaimConsumerReference};
use k8s_openapi::api::scheduling::v1alpha3::PodGroup;

/// Annotation of a claim generated for a pod: the `pod.spec.resourceClaims[].name` (upstream's).
pub const POD_CLAIM_ANNOTATION: &str = "resource.kubernetes.io/pod-claim-name";
/// Annotation of a claim generated for a PodGroup: the `podgroup.spec.resourceClaims[].name` (KEP-5729).
pub const PODGROUP_CLAIM_ANNOTATION: &str = "resource.kubernetes.io/podgroup-claim-name";
/// The scheduler's finalizer on an allocated claim.
pub const DELETE_PROTECTION: &str = "resource.kubernetes.io/delete-protection";

/// Who a generated claim is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    /// A pod (claim owned by it, deleted when it is done).
    Pod {
        /// Name.
        name: String,
        /// Uid.
        uid: String,
    },
    /// A PodGroup (claim owned by it, garbage-collected with it).
    PodGroup {
        /// Name.
        name: String,
        /// Uid.
        uid: String,
    },
}

/// A claim to create from a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewClaim {
    /// Its owner.
    pub owner: Owner,
    /// The owner's claim entry name (`spec.resourceClaims[].name`).
    pub entry: String,
    /// The ResourceClaimTemplate.
    pub template: String,
    /// `metadata.generateName`.
    pub generate_name: String,
}

/// What a pod (or PodGroup) reconcile does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Create a claim, then record it.
    Create(NewClaim),
    /// Write `status.resourceClaimStatuses` (entry name -> claim name), the whole list.
    Record(Vec<(String, Option<String>)>),
    /// Wait for something another reconcile writes (the PodGroup, its claim's name).
    Wait(String),
    /// Nothing to do.
    Nothing,
}

/// Upstream's `generateName` for a generated claim: `<owner>-<entry>-`, each part cut to keep the
/// whole within 57 characters before the server's random suffix.
pub fn generate_name(owner: &str, entry: &str) -> String {
    let mut owner = owner.to_string();
    let mut entry = entry.to_string();
    if owner.len() + 1 + entry.len() > 57 {
        owner.truncate(owner.floor_char_boundary(28));
        entry.truncate(entry.floor_char_boundary(28));
    }
    format!("{owner}-{entry}-")
}

/// Whether a pod still needs its claims (upstream's `podNeedsClaims`): not terminal, not deleted
/// before being scheduled.
pub fn pod_needs_claims(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    if matches!(phase, Some("Succeeded" | "Failed")) {
        return false;
    }
    let scheduled = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .is_some_and(|n| !n.is_empty());
    pod.metadata.deletion_timestamp.is_none() || scheduled
}

/// The claim in `claims` generated for `owner_uid`'s entry `entry` (by its annotation `annotation` and
/// controller owner).
pub fn generated<'a>(
    claims: &'a [ResourceClaim],
    annotation: &str,
    owner_uid: &str,
    entry: &str,
) -> Option<&'a ResourceClaim> {
    claims.iter().find(|c| {
        c.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(annotation))
            .is_some_and(|v| v == entry)
            && c.metadata
                .owner_references
                .iter()
                .flatten()
                .any(|o| o.controller == Some(true) && o.uid == owner_uid)
    })
}

fn statuses(list: Option<&Vec<(String, Option<String>)>>) -> BTreeMap<String, Option<String>> {
    list.into_iter().flatten().cloned().collect()
}

/// The next step for a PodGroup: create the claim of each template entry it has none for, then record
/// the generated names in its status.
pub fn plan_group(group: &PodGroup, claims: &[ResourceClaim]) -> Step {
    if group.metadata.deletion_timestamp.is_some() {
        return Step::Nothing;
    }
    let name = group.metadata.name.clone().unwrap_or_default();
    let uid = group.metadata.uid.clone().unwrap_or_default();
    let recorded: Vec<(String, Option<String>)> = group
        .status
        .as_ref()
        .and_then(|s| s.resource_claim_statuses.as_ref())
        .into_iter()
        .flatten()
        .map(|s| (s.name.clone(), s.resource_claim_name.clone()))
        .collect();
    let mut want = statuses(Some(&recorded));
    for c in group.spec.resource_claims.iter().flatten() {
        let Some(template) = &c.resource_claim_template_name else {
            continue;
        };
        if want.get(&c.name).is_some_and(Option::is_some) {
            continue;
        }
        match generated(claims, PODGROUP_CLAIM_ANNOTATION, &uid, &c.name) {
            Some(found) => {
                want.insert(c.name.clone(), found.metadata.name.clone());
            }
            None => {
                return Step::Create(NewClaim {
                    owner: Owner::PodGroup {
                        name: name.clone(),
                        uid,
                    },
                    entry: c.name.clone(),
                    template: template.clone(),
                    generate_name: generate_name(&name, &c.name),
                });
            }
        }
    }
    let want: Vec<_> = want.into_iter().collect();
    let mut have = recorded;
    have.sort();
    if want == have {
        Step::Nothing
    } else {
        Step::Record(want)
    }
}

/// The next step for a pod: create its own template claims, then record every template claim's name
/// (its own, or its PodGroup's for a claim equal to one of the group's) in its status.
pub fn plan_pod(pod: &Pod, group: Option<&PodGroup>, claims: &[ResourceClaim]) -> Step {
    let Some(spec) = pod.spec.as_ref() else {
        return Step::Nothing;
    };
    let entries = spec.resource_claims.as_deref().unwrap_or_default();
    if entries.is_empty() || !pod_needs_claims(pod) || pod.metadata.deletion_timestamp.is_some() {
        return Step::Nothing;
    }
    let group_name = spec.scheduling_group.as_ref().and_then(|g| g.pod_group_name.as_deref());
    if group_name.is_some() && group.is_none() {
        return Step::Wait("waiting for the pod's PodGroup".into());
    }
    let name = pod.metadata.name.clone().unwrap_or_default();
    let uid = pod.metadata.uid.clone().unwrap_or_default();
    let recorded: Vec<(String, Option<String>)> = pod
        .status
        .as_ref()
        .and_then(|s| s.resource_claim_statuses.as_ref())
        .into_iter()
        .flatten()
        .map(|s| (s.name.clone(), s.resource_claim_name.clone()))
        .collect();
    let mut want = statuses(Some(&recorded));
    let group_statuses: BTreeMap<String, Option<String>> = group
        .and_then(|g| g.status.as_ref())
        .and_then(|s| s.resource_claim_statuses.as_ref())
        .into_iter()
        .flatten()
        .map(|s| (s.name.clone(), s.resource_claim_name.clone()))
        .collect();
    for c in entries {
        let Some(template) = &c.resource_claim_template_name else {
            continue;
        };
        let shared = group.is_some_and(|g| {
            g.spec.resource_claims.iter().flatten().any(|gc| {
                gc.name == c.name
                    && gc.resource_claim_name == c.resource_claim_name
                    && gc.resource_claim_template_name == c.resource_claim_template_name
            })
        });
        if shared {
            match group_statuses.get(&c.name).cloned().flatten() {
                Some(n) => {
                    want.insert(c.name.clone(), Some(n));
                }
                None => return Step::Wait(format!("waiting for PodGroup's resource claim {:?}", c.name)),
            }
            continue;
        }
        if want.get(&c.name).is_some_and(Option::is_some) {
            continue;
        }
        match generated(claims, POD_CLAIM_ANNOTATION, &uid, &c.name) {
            Some(found) => {
                want.insert(c.name.clone(), found.metadata.name.clone());
            }
            None => {
                return Step::Create(NewClaim {
                    owner: Owner::Pod {
                        name: name.clone(),
                        uid,
                    },
                    entry: c.name.clone(),
                    template: template.clone(),
                    generate_name: generate_name(&name, &c.name),
                });
            }
        }
    }
    let want: Vec<_> = want.into_iter().collect();
    let mut have = recorded;
    have.sort();
    if want == have {
        Step::Nothing
    } else {
        Step::Record(want)
    }
}

/// Whether a claim consumer still uses the claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Consumer {
    /// Keeps its reservation.
    Active,
    /// Gone (deleted, replaced, done): its reservation is removed.
    Gone,
}

/// What a claim reconcile writes next (upstream's `syncClaim`).
#[derive(Debug, Clone, PartialEq)]
pub enum ClaimStep {
    /// Write the status with these reservations (the allocation cleared when `deallocate`), then drop
    /// the scheduler's finalizer when `drop_finalizer` and the claim holds no allocation any more.
    Status {
        /// The reservations to keep.
        reserved_for: Vec<ResourceClaimConsumerReference>,
        /// Clear `status.allocation` (and `status.devices`).
        deallocate: bool,
        /// Remove the `delete-protection` finalizer afterwards.
        drop_finalizer: bool,
    },
    /// The claim is being deleted and nothing uses it: clear its allocation (when `deallocate`), then
    /// remove the finalizer so the deletion completes.
    Unblock {
        /// Clear `status.allocation` first.
        deallocate: bool,
    },
    /// Delete the claim (generated for a pod that is done or replaced).
    Delete,
    /// Nothing to do.
    Nothing,
}

/// The next step for `claim`, given each consumer's state and, for a claim generated for a pod,
/// whether that pod was found done or replaced (`owner_pod_done`; a pod not found is left to the
/// garbage collector, as upstream).
///
/// As upstream, a claim is deallocated only on the transition from used to unused (its last
/// reservation removed), never merely for being unreserved: the scheduler writes the finalizer, then
/// the allocation and reservation, and a claim between the two writes must be left alone.
pub fn plan_claim(
    claim: &ResourceClaim,
    consumer: impl Fn(&ResourceClaimConsumerReference) -> Consumer,
    owner_pod_done: bool,
) -> ClaimStep {
    let status = claim.status.as_ref();
    let reserved = status.and_then(|s| s.reserved_for.clone()).unwrap_or_default();
    let allocated = status.is_some_and(|s| s.allocation.is_some());
    let has_finalizer = claim
        .metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == DELETE_PROTECTION);
    let keep: Vec<_> = reserved
        .iter()
        .filter(|r| consumer(r) == Consumer::Active)
        .cloned()
        .collect();
    if keep.len() < reserved.len() {
        let unused = keep.is_empty() && has_finalizer;
        return ClaimStep::Status {
            reserved_for: keep,
            deallocate: unused && allocated,
            drop_finalizer: unused,
        };
    }
    if has_finalizer && claim.metadata.deletion_timestamp.is_some() && keep.is_empty() {
        return ClaimStep::Unblock { deallocate: allocated };
    }
    let generated_for_pod = claim
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(POD_CLAIM_ANNOTATION));
    if keep.is_empty() && generated_for_pod && owner_pod_done && claim.metadata.deletion_timestamp.is_none() {
        return ClaimStep::Delete;
    }
    ClaimStep::Nothing
}

#[cfg(test)]
mod tests;
