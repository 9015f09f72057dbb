//! The controllers kube-controller-manager runs that API semantics depend on: the garbage collector
//! (ownerReferences with background, foreground and orphan propagation, `blockOwnerDeletion`), the
//! namespace controller (deleting a namespace's content, then the namespace), CRD cleanup, the PodGroup
//! protection controller (the `scheduling.k8s.io/podgroup-protection` finalizer, so groups go away leaves
//! first), and event expiry.
//!
//! Work arrives through [`State::enqueue`]; [`process`] handles items synchronously, and [`sweep`] does
//! the periodic checks. The cluster runs both on a background task.

use std::time::Duration;

use serde_json::Value;

use crate::api::{
    CRD_CLEANUP_FINALIZER, DeleteOptions, FOREGROUND_FINALIZER, GcItem, NAMESPACE_FINALIZER, ORPHAN_FINALIZER,
    Propagation, RequestContext, State,
};
use crate::meta;
use crate::resources::GroupResource;
use crate::store::ObjectRef;

const MANAGER: &str = "generic-garbage-collector";

/// Processes up to `budget` queued items; returns how many were processed.
pub fn process(state: &mut State, budget: usize) -> usize {
    let mut n = 0;
    while n < budget {
        let Some(item) = state.next_gc_item() else { break };
        n += 1;
        match item {
            GcItem::OwnerGone(uid) => owner_gone(state, &uid),
            GcItem::Foreground(r) => foreground(state, &r),
            GcItem::Orphan(r) => orphan(state, &r),
            GcItem::Namespace(ns) => namespace(state, &ns),
            GcItem::CrdCleanup(name) => crd_cleanup(state, &name),
        }
    }
    n
}

fn delete_with(state: &mut State, r: &ObjectRef, propagation: Propagation) {
    let Some(res) = state.registry.by_group_resource(&r.gr) else {
        return;
    };
    let opts = DeleteOptions {
        propagation: Some(propagation),
        ..Default::default()
    };
    let _ = state.delete(&res, &r.namespace, &r.name, &opts);
}

fn owner_gone(state: &mut State, uid: &str) {
    for dep in state.store.dependents_of(uid) {
        let Some(obj) = state.store.get(&dep.gr, &dep.namespace, &dep.name) else {
            continue;
        };
        let owners = meta::owner_refs(&obj);
        // Like upstream, an owner whose kind is not served cannot be checked, so it keeps its dependents.
        let all_gone = owners.iter().all(|o| {
            state.registry.by_kind(&o.api_version, &o.kind).is_some() && state.store.get_by_uid(&o.uid).is_none()
        });
        if all_gone && !meta::is_deleting(&obj) {
            let policy = if !state.store.dependents_of(meta::uid(&obj)).is_empty()
                && meta::finalizers(&obj).iter().any(|f| f == FOREGROUND_FINALIZER)
            {
                Propagation::Foreground
            } else {
                Propagation::Background
            };
            delete_with(state, &dep, policy);
        }
    }
}

fn foreground(state: &mut State, r: &ObjectRef) {
    let Some(owner) = state.store.get(&r.gr, &r.namespace, &r.name) else {
        return;
    };
    if !meta::finalizers(&owner).iter().any(|f| f == FOREGROUND_FINALIZER) {
        return;
    }
    let uid = meta::uid(&owner).to_string();
    for dep in state.store.dependents_of(&uid) {
        let Some(obj) = state.store.get(&dep.gr, &dep.namespace, &dep.name) else {
            continue;
        };
        if !meta::owner_refs(&obj).iter().any(|o| o.uid == uid) {
            continue;
        }
        if !meta::is_deleting(&obj) {
            let policy = if state.store.dependents_of(meta::uid(&obj)).is_empty() {
                Propagation::Background
            } else {
                Propagation::Foreground
            };
            delete_with(state, &dep, policy);
        }
    }
    // Dependents deleted synchronously above no longer block.
    let still_blocking = state
        .store
        .dependents_of(&uid)
        .into_iter()
        .filter_map(|d| state.store.get(&d.gr, &d.namespace, &d.name))
        .filter(|o| {
            meta::owner_refs(o)
                .iter()
                .any(|x| x.uid == uid && x.block_owner_deletion)
        })
        .count();
    if still_blocking == 0 {
        remove_finalizer(state, r, FOREGROUND_FINALIZER);
    }
}

fn orphan(state: &mut State, r: &ObjectRef) {
    let Some(owner) = state.store.get(&r.gr, &r.namespace, &r.name) else {
        return;
    };
    if !meta::finalizers(&owner).iter().any(|f| f == ORPHAN_FINALIZER) {
        return;
    }
    let uid = meta::uid(&owner).to_string();
    for dep in state.store.dependents_of(&uid) {
        let Some(obj) = state.store.get(&dep.gr, &dep.namespace, &dep.name) else {
            continue;
        };
        let Some(res) = state.registry.by_group_resource(&dep.gr) else {
            continue;
        };
        let mut new = (*obj).clone();
        if let Some(refs) = meta::metadata_mut(&mut new)
            .get_mut("ownerReferences")
            .and_then(Value::as_array_mut)
        {
            refs.retain(|o| o.get("uid").and_then(Value::as_str) != Some(uid.as_str()));
        }
        let _ = state.update(
            &res,
            &dep.namespace,
            &dep.name,
            new,
            None,
            &mut RequestContext::manager(MANAGER),
        );
    }
    remove_finalizer(state, r, ORPHAN_FINALIZER);
}

/// Removes one finalizer (completing the deletion when it was the last one).
pub fn remove_finalizer(state: &mut State, r: &ObjectRef, finalizer: &str) {
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
    let manager = if finalizer == kwas_api::names::finalizers::POD_GROUP_PROTECTION {
        "podgroup-protection-controller"
    } else {
        MANAGER
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

fn namespace(state: &mut State, ns: &str) {
    let ns_gr = GroupResource::new("", "namespaces");
    let Some(obj) = state.store.get(&ns_gr, "", ns) else {
        return;
    };
    if !meta::is_deleting(&obj) {
        return;
    }
    for res in state.registry.stored_resources() {
        if !res.namespaced {
            continue;
        }
        for item in state.store.list(&res.storage, Some(ns)) {
            if !meta::is_deleting(&item) {
                let opts = DeleteOptions {
                    propagation: Some(Propagation::Background),
                    ..Default::default()
                };
                let _ = state.delete(&res, ns, meta::name(&item), &opts);
            }
        }
    }
    let left = state
        .registry
        .stored_resources()
        .iter()
        .filter(|r| r.namespaced)
        .any(|r| state.store.any_in_namespace(&r.storage, ns));
    if left {
        return;
    }
    let Some(obj) = state.store.get(&ns_gr, "", ns) else {
        return;
    };
    let mut new = (*obj).clone();
    if let Some(f) = new.pointer_mut("/spec/finalizers").and_then(Value::as_array_mut) {
        f.retain(|x| x != NAMESPACE_FINALIZER);
    }
    let Some(res) = state.registry.by_group_resource(&ns_gr) else {
        return;
    };
    let spec_empty = new
        .pointer("/spec/finalizers")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    if spec_empty && meta::finalizers(&new).is_empty() {
        state.remove_now(&res, "", ns);
    } else {
        // Only the namespace finalizer is ours; other spec finalizers keep the namespace.
        let _ = state.store.put(&ns_gr, new);
    }
}

fn crd_cleanup(state: &mut State, name: &str) {
    let crd_gr = GroupResource::new("apiextensions.k8s.io", "customresourcedefinitions");
    let Some(crd) = state.store.get(&crd_gr, "", name) else {
        return;
    };
    if !meta::is_deleting(&crd) {
        return;
    }
    let group = crd
        .pointer("/spec/group")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let plural = crd
        .pointer("/spec/names/plural")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let gr = GroupResource::new(&group, &plural);
    if let Some(res) = state.registry.by_group_resource(&gr) {
        for item in state.store.list(&gr, None) {
            if !meta::is_deleting(&item) {
                let _ = state.delete(
                    &res,
                    meta::namespace(&item),
                    meta::name(&item),
                    &DeleteOptions::default(),
                );
            }
        }
    }
    if state.store.count(&gr) == 0 {
        let r = ObjectRef {
            gr: crd_gr,
            namespace: String::new(),
            name: name.to_string(),
        };
        remove_finalizer(state, &r, CRD_CLEANUP_FINALIZER);
    }
}

/// Periodic checks: releases deleting PodGroups no non-terminal pod references and deleting
/// CompositePodGroups no child group references (PodGroup protection), and expires events older than
/// `event_ttl`.
pub fn sweep(state: &mut State, event_ttl: Duration) {
    let protection = kwas_api::names::finalizers::POD_GROUP_PROTECTION;
    let pods = GroupResource::new("", "pods");
    let pgs = GroupResource::new("scheduling.k8s.io", "podgroups");
    let cpgs = GroupResource::new("scheduling.k8s.io", "compositepodgroups");
    for gr in [&pgs, &cpgs] {
        let deleting: Vec<_> = state
            .store
            .list(gr, None)
            .into_iter()
            .filter(|g| meta::is_deleting(g) && meta::finalizers(g).iter().any(|f| f == protection))
            .collect();
        for g in deleting {
            let ns = meta::namespace(&g).to_string();
            let name = meta::name(&g).to_string();
            let referenced = if *gr == pgs {
                state.store.list(&pods, Some(&ns)).iter().any(|p| {
                    p.pointer("/spec/schedulingGroup/podGroupName").and_then(Value::as_str) == Some(name.as_str())
                        && !matches!(
                            p.pointer("/status/phase").and_then(Value::as_str),
                            Some("Succeeded" | "Failed")
                        )
                })
            } else {
                [&pgs, &cpgs].iter().any(|child_gr| {
                    state.store.list(child_gr, Some(&ns)).iter().any(|c| {
                        c.pointer("/spec/parentCompositePodGroupName").and_then(Value::as_str) == Some(name.as_str())
                    })
                })
            };
            if !referenced {
                let r = ObjectRef {
                    gr: gr.clone(),
                    namespace: ns,
                    name,
                };
                remove_finalizer(state, &r, protection);
            }
        }
    }
    let events = GroupResource::new("", "events");
    let cutoff = jiff::Timestamp::now()
        - jiff::SignedDuration::from_secs(i64::try_from(event_ttl.as_secs()).unwrap_or(i64::MAX / 2));
    let expired: Vec<_> = state
        .store
        .list(&events, None)
        .into_iter()
        .filter(|e| {
            let last = e
                .get("lastTimestamp")
                .and_then(Value::as_str)
                .or_else(|| e.pointer("/series/lastObservedTime").and_then(Value::as_str))
                .or_else(|| e.get("eventTime").and_then(Value::as_str))
                .or_else(|| meta::meta_str(e, "creationTimestamp"));
            last.and_then(meta::parse_time).is_some_and(|t| t < cutoff)
        })
        .collect();
    if let Some(res) = state.registry.get("", "v1", "events") {
        for e in expired {
            state.remove_now(&res, meta::namespace(&e), meta::name(&e));
        }
    }
}
