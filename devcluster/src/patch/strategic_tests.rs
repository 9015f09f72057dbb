//! The linear strategic merge patch against the straightforward one it replaced (kept here, as
//! `reference`, verbatim but for its name): the same result on random small inputs, and a 200,000-item
//! patch in well under a second of work per list operation kind.

use proptest::prelude::*;
use serde_json::{Map, Value, json};

use super::strategic_merge_patch;
use crate::patch::PatchError;

/// The strategic merge patch before the hash indexes: every list operation scans the list.
mod reference {
    use serde_json::{Map, Value};

    use crate::patch::{ListStrategy, PatchError, list_strategy};

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
}

// ----- random small inputs -----

/// Field names: ones the built-in list table merges (`containers` by `name`, `finalizers` as a set,
/// `conditions` under `status` by `type`), ones it does not, and merge keys.
const FIELDS: &[&str] = &[
    "name",
    "type",
    "k",
    "items",
    "containers",
    "finalizers",
    "metadata",
    "status",
    "conditions",
];

fn field() -> impl Strategy<Value = String> {
    prop::sample::select(FIELDS).prop_map(str::to_string)
}

fn leaf() -> BoxedStrategy<Value> {
    prop_oneof![
        1 => Just(Value::Null),
        1 => any::<bool>().prop_map(Value::Bool),
        3 => (0i64..3).prop_map(|n| json!(n)),
        1 => Just(json!(1.0)),
        3 => prop::sample::select(&["a", "b", "c"][..]).prop_map(|s| json!(s)),
    ]
    .boxed()
}

/// An element of a keyed list: a few of the merge keys, sometimes a `$patch` directive.
fn keyed(inner: BoxedStrategy<Value>) -> BoxedStrategy<Value> {
    let key = prop::sample::select(&["name", "type", "k", "v"][..]).prop_map(str::to_string);
    (
        prop::collection::btree_map(key, prop_oneof![4 => leaf(), 1 => inner], 0..3),
        prop::option::weighted(0.2, prop::sample::select(&["delete", "replace", "merge"][..])),
    )
        .prop_map(
            |(fields, directive): (std::collections::BTreeMap<String, Value>, Option<&str>)| {
                let mut m: Map<String, Value> = fields.into_iter().collect();
                if let Some(d) = directive {
                    m.insert("$patch".into(), json!(d));
                }
                Value::Object(m)
            },
        )
        .boxed()
}

/// A `$setElementOrder` list: entries naming one field (what clients send), none, several, or scalars.
fn order_list() -> BoxedStrategy<Value> {
    let entry = prop_oneof![
        4 => (prop::sample::select(&["name", "type", "k"][..]), leaf()).prop_map(|(k, v)| json!({k: v})),
        1 => Just(json!({})),
        1 => (leaf(), leaf()).prop_map(|(a, b)| json!({"name": a, "k": b})),
        2 => leaf(),
    ];
    prop::collection::vec(entry, 0..6).prop_map(Value::Array).boxed()
}

fn value(directives: bool) -> BoxedStrategy<Value> {
    leaf()
        .prop_recursive(3, 40, 6, move |inner| {
            let list = prop::collection::vec(
                prop_oneof![3 => keyed(inner.clone()), 2 => leaf(), 1 => inner.clone()],
                0..6,
            )
            .prop_map(Value::Array);
            prop_oneof![list, object(inner, directives)]
        })
        .boxed()
}

fn object(inner: BoxedStrategy<Value>, directives: bool) -> BoxedStrategy<Value> {
    let plain = (field(), inner.clone());
    let entry = if directives {
        prop_oneof![
            8 => plain,
            2 => (field().prop_map(|f| format!("$setElementOrder/{f}")), order_list()),
            1 => (
                field().prop_map(|f| format!("$deleteFromPrimitiveList/{f}")),
                prop::collection::vec(leaf(), 0..4).prop_map(Value::Array)
            ),
            1 => (
                Just("$patch".to_string()),
                prop::sample::select(&["replace", "delete", "merge", "bogus"][..]).prop_map(|s| json!(s))
            ),
            1 => (
                Just("$retainKeys".to_string()),
                prop::collection::vec(field().prop_map(Value::String), 0..4).prop_map(Value::Array)
            ),
        ]
        .boxed()
    } else {
        plain.boxed()
    };
    prop::collection::vec(entry, 0..6)
        .prop_map(|kv| Value::Object(kv.into_iter().collect()))
        .boxed()
}

fn patched(
    f: fn(&mut Value, &Value) -> Result<(), PatchError>,
    mut target: Value,
    patch: &Value,
) -> Result<Value, PatchError> {
    f(&mut target, patch).map(|()| target)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn the_indexed_merge_gives_what_the_scanning_merge_gave(
        target in object(value(false), false),
        patch in object(value(true), true),
    ) {
        let fast = patched(strategic_merge_patch, target.clone(), &patch);
        let slow = patched(reference::strategic_merge_patch, target, &patch);
        prop_assert_eq!(fast, slow);
    }
}

#[test]
fn an_element_whose_key_value_a_merge_changed_is_found_by_its_new_value() {
    // Merging `{"a": null}` into an element keyed `{"a": null}` leaves it keyed `{}`: the next entry, keyed
    // `{}`, updates it rather than appending another element.
    let target = json!({"items": [{"k": {"a": null}, "v": 1}]});
    let patch = json!({"$setElementOrder/items": [{"k": {}}], "items": [{"k": {"a": null}}, {"k": {}, "v": 2}]});
    let fast = patched(strategic_merge_patch, target.clone(), &patch);
    assert_eq!(fast, Ok(json!({"items": [{"k": {}, "v": 2}]})));
    assert_eq!(fast, patched(reference::strategic_merge_patch, target, &patch));
}

// ----- scale -----

const N: usize = 200_000;

fn timed(what: &str, target: Value, patch: &Value) -> Value {
    let started = std::time::Instant::now();
    let out = patched(strategic_merge_patch, target, patch).unwrap();
    let took = started.elapsed();
    println!("{what}: {took:?}");
    // Unoptimized, on a shared machine; the scanning merge took minutes.
    assert!(took < std::time::Duration::from_secs(10), "{what} took {took:?}");
    out
}

#[test]
fn a_200000_item_patch_merges_in_linear_time() {
    let keyed = |range: std::ops::Range<usize>| -> Vec<Value> { range.map(|i| json!({"k": i, "v": i})).collect() };
    // Merged by key, half of it new, reordered in reverse by `$setElementOrder`.
    let target = json!({"x": keyed(0..N)});
    let order: Vec<Value> = (0..N + N / 2).rev().map(|i| json!({"k": i})).collect();
    let patch = json!({"$setElementOrder/x": order, "x": keyed(N / 2..N + N / 2)});
    let out = timed("keyed merge and reorder", target, &patch);
    let x = out["x"].as_array().unwrap();
    assert_eq!(x.len(), N + N / 2);
    assert_eq!(x[0], json!({"k": N + N / 2 - 1, "v": N + N / 2 - 1}));
    assert_eq!(x[x.len() - 1], json!({"k": 0, "v": 0}));
    // Deletions by key.
    let deletes: Vec<Value> = (0..N).map(|i| json!({"k": i, "$patch": "delete"})).collect();
    let out = timed(
        "keyed deletes",
        json!({"x": keyed(0..N)}),
        &json!({"$setElementOrder/x": [{"k": 0}], "x": deletes}),
    );
    assert_eq!(out["x"], json!([]));
    // A primitive union and `$deleteFromPrimitiveList`.
    let numbers = |range: std::ops::Range<usize>| -> Vec<Value> { range.map(|i| json!(i)).collect() };
    let target = json!({"metadata": {"finalizers": numbers(0..N)}});
    let patch = json!({"metadata": {"finalizers": numbers(N / 2..N + N / 2),
        "$deleteFromPrimitiveList/finalizers": numbers(0..N / 2)}});
    let out = timed("primitive union and delete", target, &patch);
    assert_eq!(out["metadata"]["finalizers"].as_array().unwrap().len(), N);
    // A primitive reorder.
    let target = json!({"y": numbers(0..N)});
    let patch = json!({"$setElementOrder/y": numbers(0..N).into_iter().rev().collect::<Vec<_>>(), "y": [0]});
    let out = timed("primitive reorder", target, &patch);
    assert_eq!(out["y"][0], json!(N - 1));
}

#[test]
fn order_entries_with_several_fields_are_matched_within_a_budget() {
    // Every element shares each field's value with half the others, but no element holds both.
    let items: Vec<Value> = (0..20_000).map(|i| json!({"a": i % 2, "b": i % 2})).collect();
    let order: Vec<Value> = (0..20_000).map(|_| json!({"a": 0, "b": 1})).collect();
    let patch = json!({"$setElementOrder/x": order});
    let started = std::time::Instant::now();
    let out = patched(strategic_merge_patch, json!({"x": items.clone()}), &patch);
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    assert!(out.is_err(), "refused instead of scanning 20,000 x 10,000 elements");
    // A few such entries are matched as before.
    let patch = json!({"$setElementOrder/x": [{"a": 1, "b": 1}, {"a": 0, "b": 1}]});
    let out = patched(strategic_merge_patch, json!({"x": items[..4].to_vec()}), &patch).unwrap();
    assert_eq!(
        out["x"],
        json!([{"a": 1, "b": 1}, {"a": 0, "b": 0}, {"a": 0, "b": 0}, {"a": 1, "b": 1}])
    );
}
