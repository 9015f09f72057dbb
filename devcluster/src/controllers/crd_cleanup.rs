//! CRD cleanup: a deleting CRD's custom resources are deleted, then its cleanup finalizer is removed.

use serde_json::Value;

use super::remove_finalizer;
use crate::api::{DeleteOptions, State};
use crate::kinds::customresourcedefinition::CRD_CLEANUP_FINALIZER;
use crate::meta;
use crate::store::{GroupResource, ObjectRef};

/// Deletes the custom resources of CRD `name` if it is being deleted, then releases the CRD.
pub(super) fn finish(state: &mut State, name: &str) {
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
