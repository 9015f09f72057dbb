//! DeviceClasses, ResourceSlices and ResourceClaims in the snapshot, a pod's claims resolved, claim
//! allocations assumed between the cycle that made them and the informer reporting them, and the
//! simulated release of victims' devices during preemption (see [`crate::core::dra`]).

use k8s_openapi::api::resource::v1::{
    AllocationResult, DeviceClass, ResourceClaim, ResourceClaimConsumerReference, ResourceSlice,
};

use kwas_api_types::claims::{ClaimName, ClaimStatus, claim_name, shared_with_group};

use super::Snapshot;
use crate::core::dra::allocator::{self, Failure};
use crate::core::dra::{Allocated, ClaimProblem, ResolvedClaim};
use crate::core::framework::ClaimReservation;
use crate::core::model::PodKey;

/// Upstream's `ResourceClaimReservedForMaxSize`.
pub(crate) const RESERVED_FOR_MAX: usize = 256;

impl Snapshot {
    /// Adds or updates a DeviceClass.
    pub fn upsert_device_class(&mut self, c: &DeviceClass) {
        self.dra.upsert_class(c);
    }

    /// Removes a DeviceClass.
    pub fn remove_device_class(&mut self, name: &str) {
        self.dra.remove_class(name);
    }

    /// Adds or updates a ResourceSlice.
    pub fn upsert_resource_slice(&mut self, s: &ResourceSlice) {
        self.dra.upsert_slice(s);
    }

    /// Removes a ResourceSlice.
    pub fn remove_resource_slice(&mut self, name: &str) {
        self.dra.remove_slice(name);
    }

    /// Adds or updates a ResourceClaim (its allocation replaces one the scheduler assumed).
    pub fn upsert_resource_claim(&mut self, c: &ResourceClaim) {
        self.dra.upsert_claim(c);
    }

    /// Removes a ResourceClaim.
    pub fn remove_resource_claim(&mut self, namespace: &str, name: &str) {
        self.dra.remove_claim(namespace, name);
    }

    /// Records an allocation a cycle made as if the claim's status said so, until the informer
    /// reports the claim (its write may still be in flight): no other cycle takes its devices.
    pub fn assume_claim_allocation(&mut self, namespace: &str, claim: &str, allocation: &AllocationResult) {
        let Some(id) = self.dra.claim_id(namespace, claim) else {
            return;
        };
        self.dra.assume_allocation(id, allocation);
    }

    /// Drops an allocation assumed with [`Snapshot::assume_claim_allocation`] that was not written.
    pub fn forget_claim_allocation(&mut self, namespace: &str, claim: &str) {
        let Some(id) = self.dra.claim_id(namespace, claim) else {
            return;
        };
        let Some(mut c) = self.dra.claim(id).cloned() else {
            return;
        };
        if !c.assumed {
            return;
        }
        if let Some(x) = self.dra.claim_mut(id) {
            x.assumed = false;
        }
        c.allocation = None;
        let api = to_api(&c);
        self.dra.upsert_claim(&api);
    }

    /// Resolves pod `pid`'s claims; a claim not created yet, missing or being deleted keeps the pod
    /// waiting, one using what cannot be honoured makes it unsupported.
    pub(crate) fn resolve_claims(&self, pid: u32) -> Result<Vec<ResolvedClaim>, ClaimProblem> {
        let p = self.pod(pid);
        let ns = &p.key.namespace;
        let group = p
            .group_name
            .as_ref()
            .filter(|_| !self.dra.groups.is_empty())
            .and_then(|g| self.dra.groups.get(&(ns.clone(), g.clone())));
        let mut out: Vec<ResolvedClaim> = Vec::new();
        for c in &p.claims {
            // KEP-5729: a pod claim equal to one of its PodGroup's is the group's claim; which claim an
            // entry stands for is `kwas_api_types::claims`' rule, shared with the controllers.
            let entry = (c.name.as_str(), c.claim_name.as_deref(), c.template.as_deref());
            let shared = group.filter(|g| {
                g.claims
                    .iter()
                    .any(|(n, name, template)| shared_with_group(entry, &[(n, name.as_deref(), template.as_deref())]))
            });
            let pod_status: Option<ClaimStatus<'_>> = c.status.as_ref().map(|s| (c.name.as_str(), s.as_deref()));
            let group_status: Option<ClaimStatus<'_>> = shared
                .and_then(|g| g.statuses.get(&c.name))
                .map(|s| (c.name.as_str(), s.as_deref()));
            let name = match claim_name(entry, pod_status.as_slice(), shared.map(|_| group_status.as_slice())) {
                ClaimName::Named { name, .. } => Some(name),
                // A template whose claim is not needed, not generated yet, or an entry naming neither:
                // the pod waits (as before the rule was shared).
                ClaimName::NotNeeded | ClaimName::NotCreatedYet | ClaimName::Unset => None,
            };
            let Some(name) = name else {
                return Err(ClaimProblem::Waiting(format!(
                    "waiting for resource claim {:?} of pod {} to be created",
                    c.name, p.key
                )));
            };
            let Some(id) = self.dra.claim_id(ns, &name) else {
                return Err(ClaimProblem::Waiting(format!("resourceclaim \"{name}\" not found")));
            };
            let Some(claim) = self.dra.claim(id) else {
                return Err(ClaimProblem::Waiting(format!("resourceclaim \"{name}\" not found")));
            };
            if claim.deleting {
                return Err(ClaimProblem::Waiting(format!(
                    "resourceclaim \"{name}\" is being deleted"
                )));
            }
            if let Some(m) = &claim.unsupported {
                return Err(ClaimProblem::Unsupported(format!("resourceclaim \"{name}\": {m}")));
            }
            if let Some(m) = &claim.invalid {
                return Err(ClaimProblem::Waiting(format!("resourceclaim \"{name}\": {m}")));
            }
            let consumer_uid = if shared.is_some() {
                group.map(|g| g.uid.as_str()).unwrap_or("")
            } else {
                p.uid.as_str()
            };
            if claim.reserved_for.len() >= RESERVED_FOR_MAX && !claim.reserved_for.iter().any(|r| r.uid == consumer_uid)
            {
                return Err(ClaimProblem::Waiting(format!(
                    "resourceclaim \"{name}\" is reserved for {RESERVED_FOR_MAX} consumers, the maximum"
                )));
            }
            if !out.iter().any(|r| r.id == id) {
                out.push(ResolvedClaim {
                    id,
                    group: shared.is_some(),
                });
            }
        }
        Ok(out)
    }

    /// Whether node `node` has at least `need` free devices: its node-local devices no claim holds,
    /// plus `shared` (the free devices any node may reach, `DraState::free_shared`). An upper bound of
    /// what an allocation there can take: classes, selectors and constraints are the allocator's to
    /// decide. The node's devices are looked up by node id (an index rebuilt only when slices or
    /// nodes change), and the count stops at `need`.
    pub(crate) fn has_free_devices(&mut self, node: u32, need: usize, shared: usize) -> bool {
        if shared >= need {
            return true;
        }
        self.dra.prepare();
        let key = (self.dra.layout, self.node_epoch);
        if self.dra_node_devices.0 != Some(key) {
            let mut by_id = vec![Vec::new(); self.nodes.capacity()];
            for (id, n) in self.nodes.iter() {
                if let (Some(slot), Some(ds)) = (by_id.get_mut(id as usize), self.dra.by_node.get(&n.name)) {
                    *slot = ds.clone();
                }
            }
            self.dra_node_devices = (Some(key), by_id);
        }
        let want = need - shared;
        self.dra_node_devices.1.get(node as usize).is_some_and(|ds| {
            ds.len() >= want && ds.iter().filter(|d| self.dra.device_free(**d)).take(want).count() == want
        })
    }

    /// Whether pod `pid` can use its allocated claims on `node`, and the allocations its unallocated
    /// ones would get there.
    pub(crate) fn dra_fit(&mut self, claims: &[ResolvedClaim], node: u32) -> Result<Vec<(u32, Allocated)>, DraReject> {
        let Snapshot { nodes, dra, .. } = self;
        let Some(n) = nodes.get(node) else {
            return Err(DraReject::NotAvailable);
        };
        let view = n.view();
        let mut pending = Vec::new();
        for r in claims {
            let Some(c) = dra.claim(r.id) else {
                return Err(DraReject::NotAvailable);
            };
            if c.allocated() {
                if let Some(t) = c.node_terms()
                    && !t.matches(&view)
                {
                    return Err(DraReject::NotAvailable);
                }
            } else {
                pending.push(r.id);
            }
        }
        if pending.is_empty() {
            return Ok(Vec::new());
        }
        match allocator::allocate(dra, &pending, &view) {
            Ok(a) => Ok(pending.into_iter().zip(a).collect()),
            Err(Failure::CannotAllocate) => Err(DraReject::CannotAllocate),
            Err(Failure::ClassNotFound(c)) => Err(DraReject::ClassNotFound(c)),
            Err(Failure::Cel(e)) => Err(DraReject::Cel(e)),
            Err(Failure::TooMany(m)) => Err(DraReject::TooMany(m)),
            Err(Failure::Budget(m)) => Err(DraReject::Budget(m)),
        }
    }

    /// The reservations binding pod `key` needs (empty for a pod without claims). Call while the
    /// cycle's simulated allocations are still in the snapshot.
    pub(crate) fn claim_reservations(&self, pid: u32) -> Vec<ClaimReservation> {
        let Ok(resolved) = self.resolve_claims(pid) else {
            return Vec::new();
        };
        let p = self.pod(pid);
        resolved
            .iter()
            .filter_map(|r| {
                let c = self.dra.claim(r.id)?;
                let consumer = if r.group {
                    let group = p.group_name.clone().unwrap_or_default();
                    let uid = self
                        .dra
                        .groups
                        .get(&(p.key.namespace.clone(), group.clone()))
                        .map(|g| g.uid.clone())
                        .unwrap_or_default();
                    ResourceClaimConsumerReference {
                        api_group: Some("scheduling.k8s.io".into()),
                        resource: "podgroups".into(),
                        name: group,
                        uid,
                    }
                } else {
                    ResourceClaimConsumerReference {
                        api_group: None,
                        resource: "pods".into(),
                        name: p.key.name.clone(),
                        uid: p.uid.clone(),
                    }
                };
                Some(ClaimReservation {
                    namespace: c.namespace.clone(),
                    claim: c.name.clone(),
                    uid: c.uid.clone(),
                    allocation: self.dra.allocation_result(r.id),
                    consumer,
                })
            })
            .collect()
    }

    /// What binding pod `key` must write to its ResourceClaims first (see [`ClaimReservation`]), while a
    /// cycle's simulated allocations are still in the snapshot.
    pub fn claim_reservations_of(&self, key: &PodKey) -> Vec<ClaimReservation> {
        self.pod_id(key)
            .map(|pid| self.claim_reservations(pid))
            .unwrap_or_default()
    }

    /// During a preemption simulation: whether putting pod `pid` back would find the devices of the
    /// claims its removal freed still free (the preemptor may have taken them).
    pub(crate) fn claims_fit_back(&self, pid: u32) -> bool {
        let p = self.pod(pid);
        if p.claims.is_empty() {
            return true;
        }
        let Ok(resolved) = self.resolve_claims(pid) else {
            return true;
        };
        resolved.iter().all(|r| {
            let Some(c) = self.dra.claim(r.id) else { return true };
            let consumers = c.reserved_for.len() as u32;
            let released = consumers > 0 && c.sim_released >= consumers;
            !released
                || c.held
                    .iter()
                    .all(|d| self.dra.in_use.get(*d as usize).copied().unwrap_or(0) == 0)
        })
    }

    /// During a preemption simulation, pod `pid` was taken off (`removed`) or put back: the claims it
    /// alone consumes (its own, or its group's once every placed pod of the group is off) free or hold
    /// their devices again.
    pub(crate) fn simulate_claims(&mut self, pid: u32, removed: bool) {
        let Some(p) = self.pods.get(pid) else { return };
        if p.claims.is_empty() {
            return;
        }
        let Ok(resolved) = self.resolve_claims(pid) else { return };
        let group = p.group_name.clone().map(|g| (p.key.namespace.clone(), g));
        for r in resolved {
            if r.group {
                // The group's claim goes when the last placed member goes, comes back with the first.
                let placed = group
                    .as_ref()
                    .and_then(|g| self.members_of.get(g))
                    .into_iter()
                    .flatten()
                    .filter(|&&q| q != pid && self.pods.get(q).is_some_and(|x| x.placed_node().is_some()))
                    .count();
                if placed > 0 {
                    continue;
                }
            }
            self.dra.simulate_release(r.id, removed);
        }
    }
}

/// Why a node cannot serve a pod's claims.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DraReject {
    /// An allocated claim's node selector excludes the node.
    NotAvailable,
    /// The unallocated claims do not fit the node's free devices.
    CannotAllocate,
    ClassNotFound(String),
    Cel(String),
    /// A claim asks for more devices than an allocation may hold.
    TooMany(String),
    /// The pod's or the cycle's allocation budget is spent.
    Budget(String),
}

/// The API object form of a claim the snapshot holds (for re-ingesting it with a new allocation).
fn to_api(c: &crate::core::dra::Claim) -> ResourceClaim {
    use k8s_openapi::api::resource::v1::ResourceClaimStatus;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    let mut claim = c.source.clone();
    claim.metadata = ObjectMeta {
        namespace: Some(c.namespace.clone()),
        name: Some(c.name.clone()),
        uid: Some(c.uid.clone()),
        deletion_timestamp: claim.metadata.deletion_timestamp.clone(),
        ..Default::default()
    };
    claim.status = Some(ResourceClaimStatus {
        allocation: c.allocation.clone(),
        reserved_for: (!c.reserved_for.is_empty()).then(|| c.reserved_for.clone()),
        devices: None,
    });
    claim
}
