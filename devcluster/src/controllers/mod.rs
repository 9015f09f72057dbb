//! The controllers kube-controller-manager runs that API semantics depend on, run by devcluster on a
//! background task: the garbage collector ([`gc`]: ownerReferences with background, foreground and orphan
//! propagation, `blockOwnerDeletion`), the namespace controller ([`namespace`]: deleting a namespace's
//! content, then the namespace), CRD cleanup ([`crd_cleanup`]), the PodGroup protection controller
//! ([`podgroup_protection`]: the `scheduling.k8s.io/podgroup-protection` finalizer, so groups go away leaves
//! first), event expiry ([`events`]), the apps/v1 workload controllers ([`apps`]: Deployments,
//! ReplicaSets, StatefulSets, DaemonSets), the CronJob controller ([`cronjob`]), the resource quota
//! controller ([`quota`]), the disruption controller ([`disruption`]: PodDisruptionBudget status), the
//! EndpointSlice controller ([`endpointslice`]: the discovery.k8s.io/v1 slices of Services with
//! selectors), the node lifecycle controller ([`node_lifecycle`]: nodes whose kubelet went silent marked
//! `Unknown` and tainted unreachable), the taint eviction controller ([`taint_eviction`]: pods on nodes with
//! `NoExecute` taints they do not tolerate) and the volume controllers ([`volume`]: the PersistentVolume controller, PVC and PV
//! protection).
//!
//! Work arrives through [`State::enqueue`](crate::api::State::enqueue); [`process`] handles queued items
//! synchronously, and [`sweep`] does the periodic checks.

mod apps;
mod crd_cleanup;
mod cronjob;
pub(crate) mod disruption;
mod endpointslice;
mod events;
mod gc;
mod namespace;
pub(crate) mod node_lifecycle;
mod podgroup_protection;
mod quota;
pub(crate) mod taint_eviction;
pub(crate) mod volume;

use std::sync::Arc;
use std::time::Duration;

use crate::api::State;
use crate::cluster::Shared;
use crate::meta;
use crate::request::RequestContext;
use crate::store::ObjectRef;
use crate::work::GcItem;

/// The field manager of the garbage collector's writes.
const MANAGER: &str = "generic-garbage-collector";

/// Runs the garbage collector and periodic controllers until shutdown.
pub(crate) async fn run(shared: Arc<Shared>) {
    let mut shutdown = shared.shutdown_signal();
    let mut tick = tokio::time::interval(shared.settings.sweep_interval);
    let mut passes = Passes::default();
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        // Drain in slices so API requests interleave with long cascades.
        loop {
            let n = shared.with(|s| process(s, 64));
            if n == 0 {
                break;
            }
            tokio::task::yield_now().await;
        }
        tokio::select! {
            _ = shared.gc_notify.notified() => {}
            _ = tick.tick() => {
                let ttl = shared.settings.event_ttl;
                let grace = shared.settings.node_monitor_grace_period;
                shared.with(|s| sweep(s, ttl, grace, &mut passes));
            }
            _ = crate::cluster::stopped(&mut shutdown) => return,
        }
    }
}

/// Processes up to `budget` queued items; returns how many were processed.
fn process(state: &mut State, budget: usize) -> usize {
    let mut n = 0;
    while n < budget {
        let Some(item) = state.next_gc_item() else { break };
        n += 1;
        match item {
            GcItem::OwnerGone(uid) => gc::owner_gone(state, &uid),
            GcItem::Foreground(r) => gc::foreground(state, &r),
            GcItem::Orphan(r) => gc::orphan(state, &r),
            GcItem::Namespace(ns) => namespace::finish(state, &ns),
            GcItem::CrdCleanup(name) => crd_cleanup::finish(state, &name),
        }
    }
    n
}

/// What the periodic passes remember between sweeps.
#[derive(Debug, Default)]
struct Passes {
    nodes: node_lifecycle::NodeLifecycle,
    taints: taint_eviction::TaintEviction,
    expiry: events::Expiry,
    slices: endpointslice::EndpointSlices,
    csi: crate::sim::csi::Registration,
}

/// Periodic checks: PodGroup protection, event expiry, and the workload controllers (apps, CronJobs,
/// quotas, disruption budgets, EndpointSlices, taint evictions, volumes and the simulated CSI driver), which
/// read the whole cluster on every pass (EndpointSlices and the CSI driver's node registration only what
/// changed since the last one).
fn sweep(state: &mut State, event_ttl: Duration, node_grace: Duration, passes: &mut Passes) {
    let now = jiff::Timestamp::now();
    passes.nodes.sync(state, now, node_grace);
    podgroup_protection::sweep(state);
    passes.expiry.sweep(state, event_ttl, std::time::Instant::now());
    apps::sync(state, now);
    cronjob::sync(state, now);
    quota::sync(state);
    disruption::sync(state, now);
    passes.slices.sync(state);
    passes.taints.sync(state, now);
    sync_storage_registering(state, &mut passes.csi);
}

/// [`sync_storage_registering`], every node's registration checked.
#[cfg(test)]
pub(crate) fn sync_storage(state: &mut State) {
    sync_storage_registering(state, &mut crate::sim::csi::Registration::default());
}

/// The volume controllers and the simulated CSI driver, in one pass's order: the PV controller binds and
/// hands claims to provisioners, the driver provisions (and registers nodes, when `csi` says Nodes or
/// CSINodes changed; expands, deletes), and the volumes it provisioned bind at once.
fn sync_storage_registering(state: &mut State, csi: &mut crate::sim::csi::Registration) {
    volume::sync(state);
    if crate::sim::csi::sync_registering(state, csi) > 0 {
        volume::sync_claims(state);
    }
}

/// Removes one finalizer (completing the deletion when it was the last one).
pub(crate) fn remove_finalizer(state: &mut State, r: &ObjectRef, finalizer: &str) {
    let Some(obj) = state.store.get(&r.gr, &r.namespace, &r.name) else {
        return;
    };
    let Some(res) = state.registry.by_group_resource(&r.gr) else {
        return;
    };
    let mut new = (*obj).clone();
    let mut f = meta::finalizers(&new);
    let before = f.len();
    f.retain(|x| x != finalizer);
    if f.len() == before {
        return;
    }
    meta::set_finalizers(&mut new, f);
    let manager = match finalizer {
        kwas_api_types::names::finalizers::POD_GROUP_PROTECTION => "podgroup-protection-controller",
        crate::kinds::storage::PVC_PROTECTION => "pvc-protection-controller",
        crate::kinds::storage::PV_PROTECTION => "pv-protection-controller",
        _ => MANAGER,
    };
    if let Err(e) = state.update(
        &res,
        &r.namespace,
        &r.name,
        new,
        None,
        &mut RequestContext::manager(manager),
    ) {
        tracing::warn!(object = %r.name, error = %e, "removing finalizer failed");
    }
}
