//! The namespace controller: a deleting namespace's content is deleted, then its `kubernetes` finalizer
//! is removed and the namespace goes away.

use serde_json::Value;

use crate::api::{DeleteOptions, State};
use crate::kinds::namespace::NAMESPACE_FINALIZER;
use crate::meta;
use crate::resource::Propagation;
use crate::store::GroupResource;

/// Deletes the content of namespace `ns` if it is being deleted, and the namespace once it is empty.
pub(super) fn finish(state: &mut State, ns: &str) {
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
