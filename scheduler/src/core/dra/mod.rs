//! Dynamic resource allocation with structured parameters (`resource.k8s.io/v1`): the scheduler's
//! view of DeviceClasses, ResourceSlices and ResourceClaims, and the allocator, as upstream's
//! DynamicResources plugin does it, inside the gang cycle.
//!
//! - **Devices** come from ResourceSlices: per driver and pool only the slices of the newest
//!   `pool.generation` count, and a pool with fewer slices than its `resourceSliceCount` is incomplete
//!   and not used. A device is available on a node by the slice's (or, with `perDeviceNodeSelection`,
//!   the device's) `nodeName`, `nodeSelector` or `allNodes`. Devices with taints the request does not
//!   tolerate (`NoSchedule`, `NoExecute`), or using features this allocator does not model (shared
//!   counters, multiple allocations, binding conditions) are never allocated.
//! - **A device is in use** while a claim's allocation (in `status.allocation`, or made earlier in the
//!   running cycle) holds it.
//! - **Claims** of a pod: `resourceClaimName`, or the claim generated from `resourceClaimTemplateName`
//!   (named in the pod's `status.resourceClaimStatuses`); a pod claim equal in every field to one of
//!   its PodGroup's `spec.resourceClaims` is the group's claim (KEP-5729): one ResourceClaim shared by
//!   the group's pods, reserved for the PodGroup. A claim not created yet keeps the pod from being
//!   scheduled (UnschedulableAndUnresolvable, `waiting for resource claim ... to be created`).
//! - **Allocation** ([`allocator`]): when a pod is placed on a node, each of its claims not allocated
//!   yet is allocated from the devices available there: requests in order, `exactly` or the first
//!   `firstAvailable` alternative that fits, `ExactCount` (default 1) or `All`, the DeviceClass' and the
//!   request's CEL selectors ([`cel`]), constraints `matchAttribute` and `distinctAttribute`, by a
//!   depth-first search with backtracking (a budget of 100,000 steps per node). The result's node
//!   selector is upstream's: the node of a node-local device, else the slices' node selectors, else
//!   none. An allocated claim restricts every later consumer to its node selector. Allocations are
//!   journaled with the pod's placement and reverted with it, so a gang that does not fit allocates
//!   nothing.
//! - **Not modelled** (a claim using them is rejected as `Unsupported`): consumable capacity requests,
//!   `adminAccess`, derived attributes.

pub(crate) mod allocator;
pub(crate) mod cel;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use k8s_openapi::api::resource::v1::{
    AllocationResult, DeviceClass, DeviceRequest, ResourceClaim, ResourceClaimConsumerReference, ResourceSlice,
};
use k8s_openapi::api::scheduling::v1alpha3::PodGroup;

use self::cel::{Attr, Exprs, Sel};
use super::config::{DEFAULT_CYCLE_ALLOCATION_BUDGET, DEFAULT_POD_ALLOCATION_BUDGET};
use super::filters::volumes::NodeTerms;
use super::framework::NodeView;

/// `(driver, pool, device)`.
pub(crate) type DeviceKey = (String, String, String);

/// Where a device can be used.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Reach {
    Node(String),
    Selector(NodeTerms, Option<k8s_openapi::api::core::v1::NodeSelector>),
    All,
}

impl Reach {
    pub(crate) fn admits(&self, node: &NodeView<'_>) -> bool {
        match self {
            Reach::Node(n) => n == node.name,
            Reach::Selector(t, _) => t.matches(node),
            Reach::All => true,
        }
    }
}

/// One device of a complete pool.
#[derive(Debug, Clone)]
pub(crate) struct Device {
    pub key: DeviceKey,
    pub attributes: BTreeMap<String, Attr>,
    pub capacity: BTreeMap<String, String>,
    pub reach: Reach,
    /// `(key, value, effect)` of its taints.
    pub taints: Vec<(String, String, String)>,
    /// Uses something the allocator does not model: never allocated.
    pub unsupported: bool,
}

/// A request alternative (`exactly`, or one `firstAvailable` entry).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Alternative {
    /// The name in the allocation result: `req` or `req/sub`.
    pub name: String,
    pub class: String,
    pub selectors: Vec<Sel>,
    /// `None`: `All`.
    pub count: Option<u32>,
    /// `(key, operator, value, effect)`.
    pub tolerations: Vec<(String, String, String, String)>,
}

/// One device request of a claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Request {
    pub name: String,
    pub alternatives: Vec<Alternative>,
}

/// A claim constraint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Constraint {
    /// The requests it applies to (empty: all).
    pub requests: Vec<String>,
    pub attribute: String,
    /// `distinctAttribute` rather than `matchAttribute`.
    pub distinct: bool,
}

/// Devices chosen for one claim.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Allocated {
    /// (request result name, device index).
    pub devices: Vec<(String, u32)>,
    pub node_selector: Option<k8s_openapi::api::core::v1::NodeSelector>,
}

/// A ResourceClaim as the scheduler needs it.
#[derive(Debug, Clone)]
pub(crate) struct Claim {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub requests: Vec<Request>,
    pub constraints: Vec<Constraint>,
    /// Why the claim cannot be honoured, if it cannot.
    pub unsupported: Option<String>,
    /// A selector that does not compile: `(field path, error)`.
    pub invalid: Option<String>,
    /// Raw configuration to copy into an allocation result: (source, requests, opaque).
    pub config: Vec<k8s_openapi::api::resource::v1::DeviceAllocationConfiguration>,
    /// `status.allocation` as found.
    pub allocation: Option<AllocationResult>,
    /// The devices of that allocation (indices), when all are known.
    pub held: Vec<u32>,
    pub reserved_for: Vec<ResourceClaimConsumerReference>,
    pub deleting: bool,
    /// Made in the running cycle (journaled).
    pub sim: Option<Allocated>,
    /// Consumers simulated away (preemption) in the running cycle.
    pub sim_released: u32,
    /// `allocation` was assumed by the scheduler, not read from the API.
    pub assumed: bool,
    /// The object as last read (to re-ingest it with an assumed allocation).
    pub source: ResourceClaim,
}

impl Claim {
    /// Whether the claim holds devices now (allocated for real or in the cycle, not released by the
    /// preemption being simulated).
    pub(crate) fn allocated(&self) -> bool {
        self.sim.is_some() || self.allocation.is_some()
    }

    /// The node selector its allocation restricts consumers to.
    pub(crate) fn node_terms(&self) -> Option<NodeTerms> {
        if let Some(s) = &self.sim {
            return s.node_selector.as_ref().map(NodeTerms::from_selector);
        }
        self.allocation
            .as_ref()
            .and_then(|a| a.node_selector.as_ref())
            .map(NodeTerms::from_selector)
    }
}

/// One entry of a pod's `spec.resourceClaims`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PodClaimRef {
    pub name: String,
    pub claim_name: Option<String>,
    pub template: Option<String>,
    /// The pod's `status.resourceClaimStatuses` entry for it, if any: the claim generated for it, or
    /// `None` when none was needed.
    pub status: Option<Option<String>>,
}

impl PodClaimRef {
    pub(crate) fn from_pod(pod: &k8s_openapi::api::core::v1::Pod) -> Vec<Self> {
        let statuses: BTreeMap<&str, Option<&str>> = pod
            .status
            .as_ref()
            .and_then(|s| s.resource_claim_statuses.as_ref())
            .into_iter()
            .flatten()
            .map(|s| (s.name.as_str(), s.resource_claim_name.as_deref()))
            .collect();
        pod.spec
            .as_ref()
            .and_then(|s| s.resource_claims.as_ref())
            .into_iter()
            .flatten()
            .map(|c| PodClaimRef {
                name: c.name.clone(),
                claim_name: c.resource_claim_name.clone(),
                template: c.resource_claim_template_name.clone(),
                status: statuses.get(c.name.as_str()).map(|s| s.map(str::to_string)),
            })
            .collect()
    }
}

/// A pod's claim resolved to a ResourceClaim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ResolvedClaim {
    pub id: u32,
    /// Shared with the pod's PodGroup (reserved for the group).
    pub group: bool,
}

/// Why a pod's claims keep it from being scheduled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ClaimProblem {
    /// UnschedulableAndUnresolvable until the claim changes.
    Waiting(String),
    /// The claim uses what this scheduler cannot honour.
    Unsupported(String),
}

/// A PodGroup's `spec.resourceClaims` and `status.resourceClaimStatuses`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct GroupClaims {
    pub uid: String,
    /// (name, resourceClaimName, resourceClaimTemplateName).
    pub claims: Vec<(String, Option<String>, Option<String>)>,
    /// name -> generated claim name.
    pub statuses: BTreeMap<String, Option<String>>,
}

/// The DRA part of the snapshot.
#[derive(Debug, Default)]
pub(crate) struct DraState {
    pub(crate) exprs: Exprs,
    /// DeviceClass name -> its selectors (compiled) and config.
    classes: HashMap<String, (Vec<Sel>, Vec<k8s_openapi::api::resource::v1::DeviceClassConfiguration>)>,
    slices: BTreeMap<String, ResourceSlice>,
    dirty: bool,
    pub(crate) devices: Vec<Device>,
    index: HashMap<DeviceKey, u32>,
    /// Node name -> its node-local devices; and the devices any node may reach by selector or
    /// `allNodes` (so a node's candidates are found without scanning every device).
    pub(crate) by_node: HashMap<String, Vec<u32>>,
    /// Bumped whenever `devices` / `by_node` are rebuilt (per-node caches key on it).
    pub(crate) layout: u64,
    pub(crate) shared: Vec<u32>,
    /// Claims holding each device (real or simulated), by device index.
    pub(crate) in_use: Vec<u32>,
    pub(crate) claims: Vec<Option<Claim>>,
    claim_index: HashMap<(String, String), u32>,
    /// (namespace, PodGroup) -> its claims.
    pub(crate) groups: HashMap<(String, String), GroupClaims>,
    /// Bumped whenever devices, classes or claims change (caches key on it).
    pub(crate) epoch: u64,
    /// What the running pod's allocation may still spend.
    pub(crate) budget: Budget,
}

/// The allocation work one pod (and one cycle) may do: allocator steps and selector cost units, one
/// unit each. The per-pod budget is shared across every node tried for the pod; the per-cycle one
/// across its pods. Both are counted in work, not wall time, so a replay of a snapshot reproduces a
/// live decision; a unit is roughly 0.1 to 0.3 microseconds on a 2-core machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Budget {
    pod_limit: u64,
    cycle_limit: u64,
    pod_left: u64,
    cycle_left: u64,
}

impl Default for Budget {
    fn default() -> Self {
        Budget::new(DEFAULT_POD_ALLOCATION_BUDGET, DEFAULT_CYCLE_ALLOCATION_BUDGET)
    }
}

impl Budget {
    pub(crate) fn new(pod: u64, cycle: u64) -> Self {
        Budget {
            pod_limit: pod,
            cycle_limit: cycle,
            pod_left: pod,
            cycle_left: cycle,
        }
    }

    /// A new cycle: both budgets full.
    pub(crate) fn start_cycle(&mut self, pod: u64, cycle: u64) {
        *self = Budget::new(pod, cycle);
    }

    /// A new pod in the running cycle.
    pub(crate) fn start_pod(&mut self) {
        self.pod_left = self.pod_limit;
    }

    /// What may still be spent.
    pub(crate) fn left(&self) -> u64 {
        self.pod_left.min(self.cycle_left)
    }

    /// Spends `n` units; false once either budget is spent.
    pub(crate) fn charge(&mut self, n: u64) -> bool {
        self.pod_left = self.pod_left.saturating_sub(n);
        self.cycle_left = self.cycle_left.saturating_sub(n);
        self.pod_left > 0 && self.cycle_left > 0
    }

    /// Whether the pod's or the cycle's budget is spent.
    #[cfg(test)]
    pub(crate) fn exhausted(&self) -> bool {
        self.left() == 0
    }

    /// Why the allocation of `claim` stopped.
    pub(crate) fn exhausted_message(&self, claim: &str) -> String {
        if self.cycle_left == 0 {
            format!(
                "claim {claim}: allocation stopped: this scheduling cycle spent its device allocation budget ({} steps)",
                self.cycle_limit
            )
        } else {
            format!(
                "claim {claim}: allocation exceeded the scheduler's device allocation budget for one pod ({} steps): \
                 its selectors are too costly or it allows too many combinations of devices",
                self.pod_limit
            )
        }
    }
}

impl DraState {
    // ----- objects in -----

    pub(crate) fn upsert_class(&mut self, c: &DeviceClass) {
        let name = c.metadata.name.clone().unwrap_or_default();
        let spec = c.spec.as_ref();
        let selectors = spec
            .and_then(|s| s.selectors.as_ref())
            .into_iter()
            .flatten()
            .filter_map(|s| s.cel.as_ref())
            .map(|s| self.exprs.intern(&s.expression))
            .collect();
        let config = spec.and_then(|s| s.config.clone()).unwrap_or_default();
        self.classes.insert(name, (selectors, config));
        self.epoch += 1;
    }

    pub(crate) fn remove_class(&mut self, name: &str) {
        self.classes.remove(name);
        self.epoch += 1;
    }

    pub(crate) fn class(
        &self,
        name: &str,
    ) -> Option<&(Vec<Sel>, Vec<k8s_openapi::api::resource::v1::DeviceClassConfiguration>)> {
        self.classes.get(name)
    }

    pub(crate) fn upsert_slice(&mut self, s: &ResourceSlice) {
        let name = s.metadata.name.clone().unwrap_or_default();
        self.slices.insert(name, s.clone());
        self.dirty = true;
        self.epoch += 1;
    }

    pub(crate) fn remove_slice(&mut self, name: &str) {
        if self.slices.remove(name).is_some() {
            self.dirty = true;
            self.epoch += 1;
        }
    }

    pub(crate) fn upsert_claim(&mut self, c: &ResourceClaim) {
        let namespace = c.metadata.namespace.clone().unwrap_or_else(|| "default".into());
        let name = c.metadata.name.clone().unwrap_or_default();
        let mut claim = self.parse_claim(c, namespace.clone(), name.clone());
        let key = (namespace, name);
        // An allocation the scheduler assumed stays until the API shows one (or the claim is replaced):
        // an update that does not carry it yet must not free its devices for another cycle.
        if claim.allocation.is_none()
            && let Some(prev) = self.claim_index.get(&key).and_then(|&i| self.claim(i))
            && prev.assumed
            && prev.uid == claim.uid
        {
            claim.allocation = prev.allocation.clone();
            claim.assumed = true;
        }
        match self.claim_index.get(&key) {
            Some(&i) => {
                self.release(i);
                if let Some(slot) = self.claims.get_mut(i as usize) {
                    *slot = Some(claim);
                }
                self.hold(i);
            }
            None => {
                let i = self.claims.len() as u32;
                self.claims.push(Some(claim));
                self.claim_index.insert(key, i);
                self.hold(i);
            }
        }
        self.epoch += 1;
    }

    /// Records `allocation` on claim `i` as if its status said so (the scheduler assumed it): what
    /// [`DraState::upsert_claim`] of the claim with that status does, without re-reading the object.
    pub(crate) fn assume_allocation(&mut self, i: u32, allocation: &AllocationResult) {
        match self.claim_mut(i) {
            Some(c) if c.allocation.is_none() => {
                c.allocation = Some(allocation.clone());
                c.assumed = true;
            }
            _ => return,
        }
        self.release(i);
        self.hold(i);
        self.epoch += 1;
    }

    pub(crate) fn remove_claim(&mut self, namespace: &str, name: &str) {
        if let Some(i) = self.claim_index.remove(&(namespace.to_string(), name.to_string())) {
            self.release(i);
            if let Some(slot) = self.claims.get_mut(i as usize) {
                *slot = None;
            }
            self.epoch += 1;
        }
    }

    pub(crate) fn set_group(&mut self, pg: &PodGroup) {
        let key = (
            pg.metadata.namespace.clone().unwrap_or_else(|| "default".into()),
            pg.metadata.name.clone().unwrap_or_default(),
        );
        let claims: Vec<_> = pg
            .spec
            .resource_claims
            .iter()
            .flatten()
            .map(|c| {
                (
                    c.name.clone(),
                    c.resource_claim_name.clone(),
                    c.resource_claim_template_name.clone(),
                )
            })
            .collect();
        if claims.is_empty() {
            self.groups.remove(&key);
            return;
        }
        let statuses = pg
            .status
            .as_ref()
            .and_then(|s| s.resource_claim_statuses.as_ref())
            .into_iter()
            .flatten()
            .map(|s| (s.name.clone(), s.resource_claim_name.clone()))
            .collect();
        self.groups.insert(
            key,
            GroupClaims {
                uid: pg.metadata.uid.clone().unwrap_or_default(),
                claims,
                statuses,
            },
        );
    }

    pub(crate) fn remove_group(&mut self, namespace: &str, name: &str) {
        self.groups.remove(&(namespace.to_string(), name.to_string()));
    }

    pub(crate) fn claim_id(&self, namespace: &str, name: &str) -> Option<u32> {
        self.claim_index
            .get(&(namespace.to_string(), name.to_string()))
            .copied()
    }

    pub(crate) fn claim(&self, id: u32) -> Option<&Claim> {
        self.claims.get(id as usize).and_then(Option::as_ref)
    }

    /// Whether device `d` is free: known, honoured, and held by no claim.
    pub(crate) fn device_free(&self, d: u32) -> bool {
        self.in_use.get(d as usize).copied().unwrap_or(0) == 0
            && self.devices.get(d as usize).is_some_and(|x| !x.unsupported)
    }

    /// The free devices any node may reach (see `Snapshot::has_free_devices`).
    pub(crate) fn free_shared(&mut self) -> usize {
        self.prepare();
        self.shared.iter().filter(|d| self.device_free(**d)).count()
    }

    pub(crate) fn claim_mut(&mut self, id: u32) -> Option<&mut Claim> {
        self.claims.get_mut(id as usize).and_then(Option::as_mut)
    }

    // ----- devices -----

    /// Rebuilds the device list from the slices when they changed, keeping claims' holdings.
    pub(crate) fn prepare(&mut self) {
        if !self.dirty {
            return;
        }
        self.dirty = false;
        self.layout = self.layout.wrapping_add(1);
        // Newest generation per pool, and whether it is complete.
        let mut newest: BTreeMap<(String, String), (i64, i64, usize)> = BTreeMap::new();
        for s in self.slices.values() {
            let pool = (s.spec.driver.clone(), s.spec.pool.name.clone());
            let e = newest.entry(pool).or_insert((i64::MIN, 0, 0));
            if s.spec.pool.generation > e.0 {
                *e = (s.spec.pool.generation, s.spec.pool.resource_slice_count, 1);
            } else if s.spec.pool.generation == e.0 {
                e.2 += 1;
            }
        }
        let mut devices = Vec::new();
        for s in self.slices.values() {
            let pool = (s.spec.driver.clone(), s.spec.pool.name.clone());
            let Some(&(generation, count, seen)) = newest.get(&pool) else {
                continue;
            };
            let complete = usize::try_from(count).is_ok_and(|c| c == seen);
            if s.spec.pool.generation != generation || !complete {
                continue;
            }
            let slice_reach = reach(
                s.spec.node_name.as_deref(),
                s.spec.node_selector.as_ref(),
                s.spec.all_nodes.unwrap_or(false),
            );
            for d in s.spec.devices.iter().flatten() {
                let driver = &s.spec.driver;
                let device_reach = if s.spec.per_device_node_selection.unwrap_or(false) {
                    reach(
                        d.node_name.as_deref(),
                        d.node_selector.as_ref(),
                        d.all_nodes.unwrap_or(false),
                    )
                } else {
                    slice_reach.clone()
                };
                let Some(device_reach) = device_reach else { continue };
                let attributes = d
                    .attributes
                    .iter()
                    .flatten()
                    .filter_map(|(k, a)| attr(a).map(|v| (cel::qualify(k, driver), v)))
                    .collect();
                let capacity = d
                    .capacity
                    .iter()
                    .flatten()
                    .map(|(k, c)| (cel::qualify(k, driver), c.value.0.clone()))
                    .collect();
                let taints = d
                    .taints
                    .iter()
                    .flatten()
                    .map(|t| (t.key.clone(), t.value.clone().unwrap_or_default(), t.effect.clone()))
                    .collect();
                let unsupported = d.consumes_counters.as_ref().is_some_and(|c| !c.is_empty())
                    || d.allow_multiple_allocations.unwrap_or(false)
                    || d.binding_conditions.as_ref().is_some_and(|c| !c.is_empty());
                devices.push(Device {
                    key: (driver.clone(), s.spec.pool.name.clone(), d.name.clone()),
                    attributes,
                    capacity,
                    reach: device_reach,
                    taints,
                    unsupported,
                });
            }
        }
        devices.sort_by(|a, b| a.key.cmp(&b.key));
        devices.dedup_by(|a, b| a.key == b.key);
        self.index = devices
            .iter()
            .enumerate()
            .map(|(i, d)| (d.key.clone(), i as u32))
            .collect();
        self.by_node.clear();
        self.shared.clear();
        for (i, d) in devices.iter().enumerate() {
            match &d.reach {
                Reach::Node(n) => self.by_node.entry(n.clone()).or_default().push(i as u32),
                _ => self.shared.push(i as u32),
            }
        }
        self.devices = devices;
        self.in_use = vec![0; self.devices.len()];
        self.exprs.devices_changed();
        // Claims' holdings against the new indices.
        for i in 0..self.claims.len() as u32 {
            self.hold(i);
        }
    }

    /// Marks the devices of claim `i`'s real allocation as in use (recomputing its `held`).
    fn hold(&mut self, i: u32) {
        let Some(Some(c)) = self.claims.get(i as usize) else {
            return;
        };
        let keys: Vec<DeviceKey> = c
            .allocation
            .as_ref()
            .and_then(|a| a.devices.as_ref())
            .and_then(|d| d.results.as_ref())
            .into_iter()
            .flatten()
            .map(|r| (r.driver.clone(), r.pool.clone(), r.device.clone()))
            .collect();
        let held: Vec<u32> = keys.iter().filter_map(|k| self.index.get(k).copied()).collect();
        for &d in &held {
            if let Some(u) = self.in_use.get_mut(d as usize) {
                *u += 1;
            }
        }
        if let Some(Some(c)) = self.claims.get_mut(i as usize) {
            c.held = held;
        }
    }

    fn release(&mut self, i: u32) {
        let Some(Some(c)) = self.claims.get_mut(i as usize) else {
            return;
        };
        let held = std::mem::take(&mut c.held);
        for d in held {
            if let Some(u) = self.in_use.get_mut(d as usize) {
                *u = u.saturating_sub(1);
            }
        }
    }

    /// Simulates claim `i` losing (`released`) or regaining a consumer that preemption takes away:
    /// when its last real consumer is gone its devices are free.
    pub(crate) fn simulate_release(&mut self, i: u32, released: bool) {
        let Some(Some(c)) = self.claims.get_mut(i as usize) else {
            return;
        };
        let consumers = c.reserved_for.len() as u32;
        let before = c.sim_released >= consumers && consumers > 0;
        if released {
            c.sim_released += 1;
        } else {
            c.sim_released = c.sim_released.saturating_sub(1);
        }
        let after = c.sim_released >= consumers && consumers > 0;
        if before == after {
            return;
        }
        let held = c.held.clone();
        for d in held {
            if let Some(u) = self.in_use.get_mut(d as usize) {
                if after {
                    *u = u.saturating_sub(1);
                } else {
                    *u += 1;
                }
            }
        }
    }

    /// Records a simulated allocation of claim `i` (journaled by the caller).
    pub(crate) fn allocate(&mut self, i: u32, a: Allocated) {
        for (_, d) in &a.devices {
            if let Some(u) = self.in_use.get_mut(*d as usize) {
                *u += 1;
            }
        }
        if let Some(c) = self.claim_mut(i) {
            c.sim = Some(a);
        }
    }

    /// Takes a simulated allocation back.
    pub(crate) fn unallocate(&mut self, i: u32) {
        let Some(a) = self.claim_mut(i).and_then(|c| c.sim.take()) else {
            return;
        };
        for (_, d) in &a.devices {
            if let Some(u) = self.in_use.get_mut(*d as usize) {
                *u = u.saturating_sub(1);
            }
        }
    }

    /// The API form of a simulated allocation of claim `i`.
    pub(crate) fn allocation_result(&self, i: u32) -> Option<AllocationResult> {
        use k8s_openapi::api::resource::v1::{DeviceAllocationResult, DeviceRequestAllocationResult};
        let c = self.claim(i)?;
        let a = c.sim.as_ref()?;
        let results = a
            .devices
            .iter()
            .filter_map(|(request, d)| {
                let dev = self.devices.get(*d as usize)?;
                Some(DeviceRequestAllocationResult {
                    request: request.clone(),
                    driver: dev.key.0.clone(),
                    pool: dev.key.1.clone(),
                    device: dev.key.2.clone(),
                    ..Default::default()
                })
            })
            .collect();
        // The classes' configuration first, then the claim's (upstream's order).
        let mut config = Vec::new();
        let mut seen_classes: BTreeSet<&str> = BTreeSet::new();
        for r in &c.requests {
            for alt in &r.alternatives {
                if !a.devices.iter().any(|(n, _)| *n == alt.name) || !seen_classes.insert(&alt.class) {
                    continue;
                }
                for cc in self.class(&alt.class).map(|x| &x.1).into_iter().flatten() {
                    config.push(k8s_openapi::api::resource::v1::DeviceAllocationConfiguration {
                        opaque: cc.opaque.clone(),
                        requests: Some(vec![alt.name.clone()]),
                        source: "FromClass".into(),
                    });
                }
            }
        }
        config.extend(c.config.iter().cloned());
        Some(AllocationResult {
            devices: Some(DeviceAllocationResult {
                results: Some(results),
                config: (!config.is_empty()).then_some(config),
            }),
            node_selector: a.node_selector.clone(),
            allocation_timestamp: None,
        })
    }

    fn parse_claim(&mut self, c: &ResourceClaim, namespace: String, name: String) -> Claim {
        let mut unsupported = None;
        let mut invalid = None;
        let mut requests = Vec::new();
        let default_spec = Default::default();
        let spec: &k8s_openapi::api::resource::v1::ResourceClaimSpec = c.spec.as_ref().unwrap_or(&default_spec);
        for (i, r) in spec
            .devices
            .as_ref()
            .and_then(|d| d.requests.as_ref())
            .into_iter()
            .flatten()
            .enumerate()
        {
            match self.parse_request(r, i) {
                Ok(req) => requests.push(req),
                Err(ParseError::Unsupported(m)) => {
                    unsupported.get_or_insert(m);
                }
                Err(ParseError::Invalid(m)) => {
                    invalid.get_or_insert(m);
                }
            }
        }
        let constraints = spec
            .devices
            .as_ref()
            .and_then(|d| d.constraints.as_ref())
            .into_iter()
            .flatten()
            .filter_map(|k| {
                let (attribute, distinct) = match (&k.match_attribute, &k.distinct_attribute) {
                    (Some(a), _) => (a.clone(), false),
                    (None, Some(a)) => (a.clone(), true),
                    (None, None) => return None,
                };
                Some(Constraint {
                    requests: k.requests.clone().unwrap_or_default(),
                    attribute,
                    distinct,
                })
            })
            .collect();
        let config = spec
            .devices
            .as_ref()
            .and_then(|d| d.config.as_ref())
            .into_iter()
            .flatten()
            .map(|k| k8s_openapi::api::resource::v1::DeviceAllocationConfiguration {
                opaque: k.opaque.clone(),
                requests: k.requests.clone(),
                source: "FromClaim".into(),
            })
            .collect();
        let status = c.status.as_ref();
        Claim {
            namespace,
            name,
            uid: c.metadata.uid.clone().unwrap_or_default(),
            requests,
            constraints,
            unsupported,
            invalid,
            config,
            allocation: status.and_then(|s| s.allocation.clone()),
            held: Vec::new(),
            reserved_for: status.and_then(|s| s.reserved_for.clone()).unwrap_or_default(),
            deleting: c.metadata.deletion_timestamp.is_some(),
            sim: None,
            sim_released: 0,
            assumed: false,
            source: ResourceClaim {
                metadata: c.metadata.clone(),
                spec: c.spec.clone(),
                status: None,
            },
        }
    }

    fn parse_request(&mut self, r: &DeviceRequest, i: usize) -> Result<Request, ParseError> {
        let path = format!("spec.devices.requests[{i}]");
        let mut alternatives = Vec::new();
        if let Some(e) = &r.exactly {
            if e.admin_access.unwrap_or(false) {
                return Err(ParseError::Unsupported(format!(
                    "{path}.exactly.adminAccess is not supported"
                )));
            }
            if e.capacity.is_some() {
                return Err(ParseError::Unsupported(format!(
                    "{path}.exactly.capacity (consumable capacity) is not supported"
                )));
            }
            if e.derived_attributes.as_ref().is_some_and(|d| !d.is_empty()) {
                return Err(ParseError::Unsupported(format!(
                    "{path}.exactly.derivedAttributes is not supported"
                )));
            }
            alternatives.push(self.alternative(
                r.name.clone(),
                &e.device_class_name,
                e.selectors.as_deref(),
                e.allocation_mode.as_deref(),
                e.count,
                e.tolerations.as_deref(),
                &format!("{path}.exactly"),
            )?);
        }
        for (j, s) in r.first_available.iter().flatten().enumerate() {
            let sub = format!("{path}.firstAvailable[{j}]");
            if s.capacity.is_some() {
                return Err(ParseError::Unsupported(format!(
                    "{sub}.capacity (consumable capacity) is not supported"
                )));
            }
            if s.derived_attributes.as_ref().is_some_and(|d| !d.is_empty()) {
                return Err(ParseError::Unsupported(format!(
                    "{sub}.derivedAttributes is not supported"
                )));
            }
            alternatives.push(self.alternative(
                format!("{}/{}", r.name, s.name),
                &s.device_class_name,
                s.selectors.as_deref(),
                s.allocation_mode.as_deref(),
                s.count,
                s.tolerations.as_deref(),
                &sub,
            )?);
        }
        if alternatives.is_empty() {
            return Err(ParseError::Invalid(format!(
                "{path}: Required value: exactly one of `exactly` or `firstAvailable` is required"
            )));
        }
        Ok(Request {
            name: r.name.clone(),
            alternatives,
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn alternative(
        &mut self,
        name: String,
        class: &str,
        selectors: Option<&[k8s_openapi::api::resource::v1::DeviceSelector]>,
        mode: Option<&str>,
        count: Option<i64>,
        tolerations: Option<&[k8s_openapi::api::resource::v1::DeviceToleration]>,
        path: &str,
    ) -> Result<Alternative, ParseError> {
        let mut ids = Vec::new();
        for (k, s) in selectors.into_iter().flatten().enumerate() {
            let Some(cel) = &s.cel else { continue };
            let sel = self.exprs.intern(&cel.expression);
            if let Some(e) = sel.error() {
                return Err(ParseError::Invalid(format!(
                    "{path}.selectors[{k}].cel.expression: Invalid value: {e}"
                )));
            }
            ids.push(sel);
        }
        let count = match mode.unwrap_or("ExactCount") {
            "All" => None,
            "ExactCount" => {
                let n = count.unwrap_or(1);
                // Upstream bounds a request by the devices a claim may hold (AllocationResultsMaxSize 32).
                if !(1..=32).contains(&n) {
                    return Err(ParseError::Invalid(format!(
                        "{path}.count: Invalid value: {n}: must be between 1 and 32"
                    )));
                }
                Some(n as u32)
            }
            other => {
                return Err(ParseError::Invalid(format!(
                    "{path}.allocationMode: Unsupported value: \"{other}\": supported values: \"All\", \"ExactCount\""
                )));
            }
        };
        let tolerations = tolerations
            .into_iter()
            .flatten()
            .map(|t| {
                (
                    t.key.clone().unwrap_or_default(),
                    t.operator.clone().unwrap_or_else(|| "Equal".into()),
                    t.value.clone().unwrap_or_default(),
                    t.effect.clone().unwrap_or_default(),
                )
            })
            .collect();
        Ok(Alternative {
            name,
            class: class.to_string(),
            selectors: ids,
            count,
            tolerations,
        })
    }
}

enum ParseError {
    Unsupported(String),
    Invalid(String),
}

fn reach(node: Option<&str>, selector: Option<&k8s_openapi::api::core::v1::NodeSelector>, all: bool) -> Option<Reach> {
    if let Some(n) = node.filter(|n| !n.is_empty()) {
        return Some(Reach::Node(n.to_string()));
    }
    if let Some(s) = selector {
        return Some(Reach::Selector(NodeTerms::from_selector(s), Some(s.clone())));
    }
    all.then_some(Reach::All)
}

fn attr(a: &k8s_openapi::api::resource::v1::DeviceAttribute) -> Option<Attr> {
    if let Some(b) = a.bool {
        return Some(Attr::Bool(b));
    }
    if let Some(i) = a.int {
        return Some(Attr::Int(i));
    }
    if let Some(s) = &a.string {
        return Some(Attr::String(s.clone()));
    }
    a.version.as_ref().map(|v| Attr::Version(v.clone()))
}

/// Whether `taints` are all tolerated by `tolerations` (only `NoSchedule` / `NoExecute` taints
/// matter for allocation).
pub(crate) fn tolerated(taints: &[(String, String, String)], tolerations: &[(String, String, String, String)]) -> bool {
    taints.iter().all(|(key, value, effect)| {
        if effect != "NoSchedule" && effect != "NoExecute" {
            return true;
        }
        tolerations.iter().any(|(tk, op, tv, te)| {
            (te.is_empty() || te == effect)
                && match op.as_str() {
                    "Exists" => tk.is_empty() || tk == key,
                    _ => tk == key && tv == value,
                }
        })
    })
}

#[cfg(test)]
mod tests;
