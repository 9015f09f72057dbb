//! Patch types: JSON merge patch (RFC 7386), JSON patch (RFC 6902, [`json`]: kube-apiserver's limits on
//! operations and copies) and strategic merge patch.
//!
//! Strategic merge patch follows `k8s.io/apimachinery/pkg/util/strategicpatch` for the directives kubectl
//! sends (`$patch: replace|delete|merge`, `$setElementOrder/<list>`, `$retainKeys`,
//! `$deleteFromPrimitiveList/<list>`, `null` to delete a key). List merge keys come from a table of the
//! built-in fields kwas' components and kubectl touch ([`list_strategy`]); a `$setElementOrder/<list>`
//! directive in the patch also marks its list as merged, keyed by the one key its entries carry, because
//! kubectl only sends that directive for lists it merges.

pub(crate) mod apply;
pub(crate) mod json;

use serde_json::{Map, Value};

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

/// Applies a strategic merge patch.
pub fn strategic_merge_patch(target: &mut Value, patch: &Value) -> Result<(), PatchError> {
    if !patch.is_object() {
        return Err(PatchError("a strategic merge patch must be a JSON object".into()));
    }
    let mut path = Vec::new();
    merge_object(target, patch, &mut path)
}

fn merge_object(target: &mut Value, patch: &Value, path: &mut Vec<String>) -> Result<(), PatchError> {
    let Some(pmap) = patch.as_object() else {
        *target = patch.clone();
        return Ok(());
    };
    match pmap.get("$patch").and_then(Value::as_str) {
        Some("replace") => {
            *target = Value::Object(strip_directives(pmap));
            return Ok(());
        }
        Some("delete") => {
            *target = Value::Object(Map::new());
            return Ok(());
        }
        Some("merge") | None => {}
        Some(other) => return Err(PatchError(format!("unknown patch type: {other}"))),
    }
    let tmap = crate::meta::ensure_object(target);
    let mut order_directives = Vec::new();
    for (k, pv) in pmap {
        if k == "$patch" || k == "$retainKeys" {
            continue;
        }
        if let Some(field) = k.strip_prefix("$setElementOrder/") {
            order_directives.push((field.to_string(), pv.clone()));
            continue;
        }
        if let Some(field) = k.strip_prefix("$deleteFromPrimitiveList/") {
            if let (Some(Value::Array(list)), Some(remove)) = (tmap.get_mut(field), pv.as_array()) {
                list.retain(|v| !remove.contains(v));
            }
            continue;
        }
        if pv.is_null() {
            tmap.remove(k);
            continue;
        }
        path.push(k.clone());
        match pv {
            Value::Object(inner) => {
                if inner.get("$patch").and_then(Value::as_str) == Some("delete") {
                    tmap.remove(k);
                } else {
                    let entry = tmap.entry(k.clone()).or_insert_with(|| Value::Object(Map::new()));
                    if !entry.is_object() {
                        *entry = Value::Object(Map::new());
                    }
                    merge_object(entry, pv, path)?;
                }
            }
            Value::Array(items) => {
                let hinted = order_directives_hint(pmap, k);
                let strategy = hinted.or_else(|| list_strategy(path));
                let current = tmap.remove(k);
                let merged = merge_list(current, items, strategy.as_ref(), path)?;
                tmap.insert(k.clone(), merged);
            }
            scalar => {
                tmap.insert(k.clone(), scalar.clone());
            }
        }
        path.pop();
    }
    for (field, order) in order_directives {
        if let (Some(Value::Array(list)), Some(order)) = (tmap.get_mut(&field), order.as_array()) {
            reorder(list, order);
        }
    }
    if let Some(retain) = pmap.get("$retainKeys").and_then(Value::as_array) {
        let keep: Vec<&str> = retain.iter().filter_map(Value::as_str).collect();
        tmap.retain(|k, _| keep.contains(&k.as_str()));
    }
    Ok(())
}

/// The merge key a `$setElementOrder/<field>` directive implies for `field`.
fn order_directives_hint(pmap: &Map<String, Value>, field: &str) -> Option<ListStrategy> {
    let order = pmap.get(&format!("$setElementOrder/{field}"))?.as_array()?;
    let first = order.first()?;
    match first {
        Value::Object(m) if m.len() == 1 => m.keys().next().map(|k| ListStrategy::MergeKey(k.clone())),
        Value::Object(_) => None,
        _ => Some(ListStrategy::Primitive),
    }
}

fn strip_directives(m: &Map<String, Value>) -> Map<String, Value> {
    m.iter()
        .filter(|(k, _)| !k.starts_with('$'))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn merge_list(
    current: Option<Value>,
    items: &[Value],
    strategy: Option<&ListStrategy>,
    path: &mut Vec<String>,
) -> Result<Value, PatchError> {
    // A `{"$patch": "replace"}` element replaces the whole list with the other elements.
    if items
        .iter()
        .any(|i| i.get("$patch").and_then(Value::as_str) == Some("replace"))
    {
        let rest = items
            .iter()
            .filter(|i| i.get("$patch").is_none())
            .map(|i| {
                i.as_object()
                    .map_or_else(|| i.clone(), |m| Value::Object(strip_directives(m)))
            })
            .collect();
        return Ok(Value::Array(rest));
    }
    let mut list = match current {
        Some(Value::Array(a)) => a,
        _ => Vec::new(),
    };
    match strategy {
        None => Ok(Value::Array(items.iter().map(clean).collect())),
        Some(ListStrategy::Primitive) => {
            for i in items {
                if !list.contains(i) {
                    list.push(i.clone());
                }
            }
            Ok(Value::Array(list))
        }
        Some(ListStrategy::MergeKey(key)) => {
            for item in items {
                let Some(kv) = item.get(key) else {
                    return Err(PatchError(format!(
                        "map: {item} does not contain declared merge key: {key}"
                    )));
                };
                let pos = list.iter().position(|t| t.get(key) == Some(kv));
                let delete = item.get("$patch").and_then(Value::as_str) == Some("delete");
                match (pos, delete) {
                    (Some(p), true) => {
                        list.remove(p);
                    }
                    (None, true) => {}
                    (Some(p), false) => merge_object(&mut list[p], item, path)?,
                    (None, false) => {
                        let mut fresh = Value::Object(Map::new());
                        merge_object(&mut fresh, item, path)?;
                        list.push(fresh);
                    }
                }
            }
            Ok(Value::Array(list))
        }
    }
}

/// Removes directives from a value placed verbatim.
fn clean(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !k.starts_with('$'))
                .map(|(k, v)| (k.clone(), clean(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(clean).collect()),
        other => other.clone(),
    }
}

/// Orders `list` like `order` (entries matched on the fields `order`'s entries carry); entries `order` does
/// not mention keep their relative order after the ordered ones.
fn reorder(list: &mut Vec<Value>, order: &[Value]) {
    let matches = |item: &Value, o: &Value| match o {
        Value::Object(m) => m.iter().all(|(k, v)| item.get(k) == Some(v)),
        other => item == other,
    };
    let mut ordered = Vec::with_capacity(list.len());
    let mut rest: Vec<Value> = std::mem::take(list);
    for o in order {
        if let Some(p) = rest.iter().position(|i| matches(i, o)) {
            ordered.push(rest.remove(p));
        }
    }
    ordered.extend(rest);
    *list = ordered;
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
