//! The garbage collector: dependents of removed owners, foreground deletion (dependents first, then the
//! owner), orphaning (dependents lose the ownerReference).

use serde_json::Value;

use super::{MANAGER, remove_finalizer};
use crate::api::{DeleteOptions, FOREGROUND_FINALIZER, ORPHAN_FINALIZER, State};
use crate::meta;
use crate::request::RequestContext;
use crate::resource::Propagation;
use crate::store::ObjectRef;

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

pub(super) fn owner_gone(state: &mut State, uid: &str) {
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

pub(super) fn foreground(state: &mut State, r: &ObjectRef) {
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

pub(super) fn orphan(state: &mut State, r: &ObjectRef) {
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
