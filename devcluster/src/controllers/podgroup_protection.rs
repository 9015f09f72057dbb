//! The PodGroup protection controller: a deleting group keeps the `scheduling.k8s.io/podgroup-protection`
//! finalizer while it is still referenced, so hierarchies are collected leaves first.

use serde_json::Value;

use super::remove_finalizer;
use crate::api::State;
use crate::meta;
use crate::store::{GroupResource, ObjectRef};

/// Releases deleting PodGroups no non-terminal pod references and deleting CompositePodGroups no child
/// group references.
pub(super) fn sweep(state: &mut State) {
    let protection = kwas_api_types::names::finalizers::POD_GROUP_PROTECTION;
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
}
