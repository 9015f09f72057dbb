//! Patch types: JSON merge patch (RFC 7386), JSON patch (RFC 6902, [`json`]: kube-apiserver's limits on
//! operations and copies) and strategic merge patch ([`strategic`]: linear-time list merges).
//!
//! Every patch is applied to a copy of the stored object, outside the cluster lock (see
//! [`crate::api`]); what a request body can make them cost is bounded here.
//!
//! Strategic merge patch follows `k8s.io/apimachinery/pkg/util/strategicpatch` for the directives kubectl
//! sends (`$patch: replace|delete|merge`, `$setElementOrder/<list>`, `$retainKeys`,
//! `$deleteFromPrimitiveList/<list>`, `null` to delete a key). List merge keys come from a table of the
//! built-in fields kwas' components and kubectl touch ([`list_strategy`]); a `$setElementOrder/<list>`
//! directive in the patch also marks its list as merged, keyed by the one key its entries carry, because
//! kubectl only sends that directive for lists it merges.

pub(crate) mod apply;
pub(crate) mod json;
mod strategic;

use serde_json::Value;

pub use strategic::strategic_merge_patch;

/// How a list is patched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListStrategy {
    /// Elements are objects merged by this key.
    MergeKey(String),
    /// Elements are scalars and the patch's values are added (a set union).
    Primitive,
}

/// The strategy of the list at `path` (field names from the object root, list elements not counted),
/// for the built-in kinds. `None` means the list is replaced whole.
pub fn list_strategy(path: &[String]) -> Option<ListStrategy> {
    let last = path.last()?.as_str();
    let parent = if path.len() >= 2 {
        path[path.len() - 2].as_str()
    } else {
        ""
    };
    let key = |k: &str| Some(ListStrategy::MergeKey(k.to_string()));
    match (parent, last) {
        ("metadata", "ownerReferences") => key("uid"),
        ("metadata", "finalizers") => Some(ListStrategy::Primitive),
        (_, "containers" | "initContainers" | "ephemeralContainers") if parent != "status" => key("name"),
        (_, "volumes" | "env" | "imagePullSecrets" | "schedulingGates") => key("name"),
        (_, "resourceClaims") => key("name"),
        ("containers" | "initContainers" | "ephemeralContainers", "ports") => key("containerPort"),
        (_, "volumeMounts") => key("mountPath"),
        (_, "volumeDevices") => key("devicePath"),
        (_, "hostAliases") => key("ip"),
        (_, "topologySpreadConstraints") => key("topologyKey"),
        ("status", "conditions") => key("type"),
        ("spec", "drivers") => key("name"),
        ("status", "addresses") => key("type"),
        ("spec", "podGroupTemplates" | "compositePodGroupTemplates") => key("name"),
        (_, "podGroupTemplates" | "compositePodGroupTemplates") => key("name"),
        _ => None,
    }
}

/// A patch could not be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PatchError(pub String);

/// Applies a JSON merge patch.
pub fn merge_patch(target: &mut Value, patch: &Value) -> Result<(), PatchError> {
    if !patch.is_object() {
        return Err(PatchError("a JSON merge patch must be a JSON object".into()));
    }
    json_patch::merge(target, patch);
    Ok(())
}

/// Applies a JSON patch (a list of operations); see [`json`] for the limits and the errors by status.
pub fn json_patch(target: &mut Value, patch: &Value) -> Result<(), PatchError> {
    json::apply(target, patch).map_err(|e| PatchError(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod() -> Value {
        json!({"metadata": {"name": "p", "labels": {"a": "1", "b": "2"}, "finalizers": ["x"]},
               "spec": {"containers": [{"name": "c1", "image": "i1"}, {"name": "c2", "image": "i2"}],
                        "tolerations": [{"key": "t1"}]}})
    }

    #[test]
    fn merges_lists_by_key_and_deletes_with_null() {
        let mut p = pod();
        strategic_merge_patch(
            &mut p,
            &json!({"metadata": {"labels": {"a": null, "c": "3"}, "finalizers": ["y"]},
                    "spec": {"containers": [{"name": "c2", "image": "new"}, {"name": "c3", "image": "i3"}],
                             "tolerations": [{"key": "t2"}]}}),
        )
        .unwrap();
        assert_eq!(p["metadata"]["labels"], json!({"b": "2", "c": "3"}));
        assert_eq!(p["metadata"]["finalizers"], json!(["x", "y"]));
        assert_eq!(
            p["spec"]["containers"],
            json!([{"name": "c1", "image": "i1"}, {"name": "c2", "image": "new"}, {"name": "c3", "image": "i3"}])
        );
        assert_eq!(
            p["spec"]["tolerations"],
            json!([{"key": "t2"}]),
            "lists without a merge key are replaced"
        );
    }

    #[test]
    fn directives_delete_replace_and_order() {
        let mut p = pod();
        strategic_merge_patch(
            &mut p,
            &json!({"spec": {
                "$setElementOrder/containers": [{"name": "c2"}, {"name": "c1"}],
                "containers": [{"name": "c1", "image": "z"}]},
                "metadata": {"$deleteFromPrimitiveList/finalizers": ["x"]}}),
        )
        .unwrap();
        assert_eq!(
            p["spec"]["containers"],
            json!([{"name": "c2", "image": "i2"}, {"name": "c1", "image": "z"}])
        );
        assert_eq!(p["metadata"].get("finalizers"), Some(&json!([])));
        strategic_merge_patch(
            &mut p,
            &json!({"spec": {"containers": [{"name": "c1", "$patch": "delete"}]}}),
        )
        .unwrap();
        assert_eq!(p["spec"]["containers"], json!([{"name": "c2", "image": "i2"}]));
        strategic_merge_patch(
            &mut p,
            &json!({"metadata": {"labels": {"$patch": "replace", "only": "1"}}}),
        )
        .unwrap();
        assert_eq!(p["metadata"]["labels"], json!({"only": "1"}));
    }

    #[test]
    fn set_element_order_marks_unknown_lists_as_merged() {
        let mut o = json!({"spec": {"items": [{"id": "a", "v": 1}, {"id": "b", "v": 2}]}});
        strategic_merge_patch(
            &mut o,
            &json!({"spec": {"$setElementOrder/items": [{"id": "a"}, {"id": "b"}], "items": [{"id": "b", "v": 3}]}}),
        )
        .unwrap();
        assert_eq!(o["spec"]["items"], json!([{"id": "a", "v": 1}, {"id": "b", "v": 3}]));
    }

    #[test]
    fn merge_and_json_patches() {
        let mut p = pod();
        merge_patch(&mut p, &json!({"spec": {"containers": [{"name": "only"}]}})).unwrap();
        assert_eq!(p["spec"]["containers"], json!([{"name": "only"}]));
        json_patch(
            &mut p,
            &json!([{"op": "replace", "path": "/metadata/name", "value": "q"}]),
        )
        .unwrap();
        assert_eq!(p["metadata"]["name"], "q");
        let err = json_patch(&mut p, &json!([{"op": "test", "path": "/metadata/name", "value": "z"}])).unwrap_err();
        assert!(!err.0.is_empty());
        assert!(merge_patch(&mut p, &json!([1])).is_err());
    }

    #[test]
    fn merge_key_missing_is_an_error() {
        let mut p = pod();
        let err = strategic_merge_patch(&mut p, &json!({"spec": {"containers": [{"image": "x"}]}})).unwrap_err();
        assert!(err.0.contains("does not contain declared merge key: name"), "{err}");
    }
}
