//! Server-side apply and `metadata.managedFields`.
//!
//! Field ownership is tracked per manager and operation (`Apply` / `Update`) as sets of field paths in
//! the `FieldsV1` encoding kube-apiserver uses (`f:<field>`, `k:{"name":"c"}` for elements of keyed
//! lists, `v:<value>` for set elements, `.` for an element itself).
//!
//! What is implemented: an apply merges the applied configuration into the live object (keyed lists
//! merged by key, set lists by value, other lists replaced whole); fields the applier set before and
//! dropped now are removed unless another manager owns them; changing a value another manager owns is a
//! 409 conflict naming the manager and field unless `force=true`, which transfers ownership; updates
//! (PUT and non-apply patches) take ownership of the fields they change.
//!
//! Simplifications against upstream's structured-merge-diff: list semantics of built-in kinds come from
//! the strategic-merge-patch key table (custom resources use `x-kubernetes-list-type` /
//! `x-kubernetes-list-map-keys` from their schema, default atomic); ownership is not tracked per API
//! version (conversion between versions never changes field paths here); and empty parent maps left
//! after a removal are kept.

use std::collections::{BTreeSet, HashMap};

use serde_json::{Map, Value, json};

use super::strategic::Hashes;
use super::{ListStrategy, list_strategy};
use crate::error::ApiError;
use crate::meta;
use crate::resource::ResourceInfo;

/// A set of owned field paths (each a list of FieldsV1 tokens).
pub type FieldSet = BTreeSet<Vec<String>>;

/// The list strategy for a path, from the CRD schema for custom resources or the built-in table.
fn strategy_for(res: &ResourceInfo, names: &[String]) -> Option<ListStrategy> {
    match &res.schema {
        Some(schema) => crd_list_strategy(schema, names),
        None => list_strategy(names),
    }
}

fn crd_list_strategy(schema: &Value, names: &[String]) -> Option<ListStrategy> {
    let mut cur = schema;
    for n in names {
        if cur.get("type").and_then(Value::as_str) == Some("array") {
            cur = cur.get("items")?;
        }
        cur = cur
            .get("properties")
            .and_then(|p| p.get(n))
            .or_else(|| cur.get("additionalProperties").filter(|a| a.is_object()))?;
    }
    match cur.get("x-kubernetes-list-type").and_then(Value::as_str) {
        Some("map") => {
            let keys = meta::string_list(cur.get("x-kubernetes-list-map-keys"));
            keys.first().map(|k| ListStrategy::MergeKey(k.clone()))
        }
        Some("set") => Some(ListStrategy::Primitive),
        _ => None,
    }
}

/// Collects the leaf paths of `value` (the fields a configuration or object sets).
fn collect(res: &ResourceInfo, value: &Value, tokens: &mut Vec<String>, names: &mut Vec<String>, out: &mut FieldSet) {
    match value {
        Value::Object(m) if !m.is_empty() => {
            for (k, v) in m {
                if tokens.is_empty() && matches!(k.as_str(), "apiVersion" | "kind") {
                    continue;
                }
                if tokens.len() == 1
                    && tokens[0] == "f:metadata"
                    && !matches!(k.as_str(), "labels" | "annotations" | "finalizers" | "ownerReferences")
                {
                    continue;
                }
                tokens.push(format!("f:{k}"));
                names.push(k.clone());
                collect(res, v, tokens, names, out);
                names.pop();
                tokens.pop();
            }
        }
        Value::Array(items) if !items.is_empty() => match strategy_for(res, names) {
            Some(ListStrategy::MergeKey(key)) => {
                for item in items {
                    let Some(kv) = item.get(&key) else {
                        out.insert(tokens.clone());
                        continue;
                    };
                    let tok = format!("k:{}", json!({key.clone(): kv}));
                    tokens.push(tok);
                    let mut dot = tokens.clone();
                    dot.push(".".into());
                    out.insert(dot);
                    collect(res, item, tokens, names, out);
                    tokens.pop();
                }
            }
            Some(ListStrategy::Primitive) => {
                for item in items {
                    let mut p = tokens.clone();
                    p.push(format!("v:{item}"));
                    out.insert(p);
                }
            }
            None => {
                out.insert(tokens.clone());
            }
        },
        _ => {
            if !tokens.is_empty() {
                out.insert(tokens.clone());
            }
        }
    }
}

/// The field set of an object or configuration, restricted to the main resource or the status.
pub fn field_set(res: &ResourceInfo, obj: &Value, subresource: Option<&str>) -> FieldSet {
    let mut out = FieldSet::new();
    collect(res, obj, &mut Vec::new(), &mut Vec::new(), &mut out);
    let status_only = subresource == Some("status");
    out.retain(|p| {
        let is_status = p.first().is_some_and(|t| t == "f:status");
        if status_only {
            is_status
        } else {
            !(res.status_subresource && is_status)
        }
    });
    out
}

/// Encodes a field set as `FieldsV1`.
pub fn to_fields_v1(set: &FieldSet) -> Value {
    let mut root = Map::new();
    for path in set {
        let mut cur = &mut root;
        for tok in path {
            let entry = cur.entry(tok.clone()).or_insert_with(|| json!({}));
            cur = meta::ensure_object(entry);
        }
    }
    Value::Object(root)
}

/// Decodes `FieldsV1` into a field set.
pub fn from_fields_v1(v: &Value) -> FieldSet {
    fn walk(v: &Value, path: &mut Vec<String>, out: &mut FieldSet) {
        let Some(m) = v.as_object() else { return };
        for (k, child) in m {
            path.push(k.clone());
            if child.as_object().is_some_and(Map::is_empty) {
                out.insert(path.clone());
            } else {
                walk(child, path, out);
            }
            path.pop();
        }
    }
    let mut out = FieldSet::new();
    walk(v, &mut Vec::new(), &mut out);
    out
}

/// One `managedFields` entry.
#[derive(Debug, Clone, PartialEq)]
struct Entry {
    manager: String,
    operation: String,
    subresource: String,
    api_version: String,
    time: String,
    fields: FieldSet,
}

fn read_entries(obj: &Value) -> Vec<Entry> {
    meta::metadata(obj)
        .and_then(|m| m.get("managedFields"))
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|e| {
                    Some(Entry {
                        manager: e.get("manager")?.as_str()?.to_string(),
                        operation: e
                            .get("operation")
                            .and_then(Value::as_str)
                            .unwrap_or("Update")
                            .to_string(),
                        subresource: e.get("subresource").and_then(Value::as_str).unwrap_or("").to_string(),
                        api_version: e.get("apiVersion").and_then(Value::as_str).unwrap_or("").to_string(),
                        time: e.get("time").and_then(Value::as_str).unwrap_or("").to_string(),
                        fields: e.get("fieldsV1").map(from_fields_v1).unwrap_or_default(),
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

fn write_entries(obj: &mut Value, entries: Vec<Entry>) {
    let list: Vec<Value> = entries
        .into_iter()
        .filter(|e| !e.fields.is_empty())
        .map(|e| {
            let mut m = Map::new();
            m.insert("manager".into(), json!(e.manager));
            m.insert("operation".into(), json!(e.operation));
            m.insert("apiVersion".into(), json!(e.api_version));
            m.insert("time".into(), json!(e.time));
            m.insert("fieldsType".into(), json!("FieldsV1"));
            m.insert("fieldsV1".into(), to_fields_v1(&e.fields));
            if !e.subresource.is_empty() {
                m.insert("subresource".into(), json!(e.subresource));
            }
            Value::Object(m)
        })
        .collect();
    let m = meta::metadata_mut(obj);
    if list.is_empty() {
        m.remove("managedFields");
    } else {
        m.insert("managedFields".into(), Value::Array(list));
    }
}

/// Finds list elements by merge key (`k:` tokens) or by value (`v:` tokens) through a hash index built
/// once per list, so that looking up every field path of an object is linear in its size rather than
/// quadratic (a 75,000-entry `env` list would take billions of comparisons).
#[derive(Default)]
struct Finder {
    hashes: Hashes,
    /// (list, key field) -> the positions of the elements carrying each key value.
    keyed: HashMap<(*const Vec<Value>, String), Positions>,
    /// list -> the positions of the elements equal to each value.
    values: HashMap<*const Vec<Value>, Positions>,
}

/// Positions in a list by the hash of what they hold.
type Positions = HashMap<u64, Vec<usize>>;

impl Finder {
    /// The first element carrying each field of `km` with its value.
    fn keyed<'a>(&mut self, list: &'a Vec<Value>, km: &Map<String, Value>) -> Option<&'a Value> {
        let matches = |item: &Value| km.iter().all(|(kk, kv)| item.get(kk) == Some(kv));
        let mut fields = km.iter();
        let (Some((kk, kv)), None) = (fields.next(), fields.next()) else {
            // Paths name one key field; anything else is looked for directly.
            return list.iter().find(|item| matches(item));
        };
        let hashes = &self.hashes;
        let index = self
            .keyed
            .entry((std::ptr::from_ref(list), kk.clone()))
            .or_insert_with(|| {
                let mut index = Positions::new();
                for (p, item) in list.iter().enumerate() {
                    if let Some(v) = item.get(kk) {
                        index.entry(hashes.value(v)).or_default().push(p);
                    }
                }
                index
            });
        index
            .get(&hashes.value(kv))?
            .iter()
            .filter_map(|&p| list.get(p))
            .find(|item| matches(item))
    }

    /// The first element equal to `val`.
    fn value<'a>(&mut self, list: &'a Vec<Value>, val: &Value) -> Option<&'a Value> {
        let hashes = &self.hashes;
        let index = self.values.entry(std::ptr::from_ref(list)).or_insert_with(|| {
            let mut index = Positions::new();
            for (p, item) in list.iter().enumerate() {
                index.entry(hashes.value(item)).or_default().push(p);
            }
            index
        });
        index
            .get(&hashes.value(val))?
            .iter()
            .filter_map(|&p| list.get(p))
            .find(|item| *item == val)
    }
}

/// The value at a token path, if present.
fn value_at<'a>(obj: &'a Value, path: &[String], finder: &mut Finder) -> Option<&'a Value> {
    let mut cur = obj;
    for tok in path {
        if tok == "." {
            continue;
        }
        cur = if let Some(f) = tok.strip_prefix("f:") {
            cur.get(f)?
        } else if let Some(k) = tok.strip_prefix("k:") {
            let key: Value = serde_json::from_str(k).ok()?;
            finder.keyed(cur.as_array()?, key.as_object()?)?
        } else if let Some(v) = tok.strip_prefix("v:") {
            let val: Value = serde_json::from_str(v).ok()?;
            finder.value(cur.as_array()?, &val)?
        } else {
            return None;
        };
    }
    Some(cur)
}

/// Removes the field or element at a token path.
fn remove_at(obj: &mut Value, path: &[String]) {
    let path: Vec<&String> = path.iter().collect();
    let (last, parent_path) = match path.split_last() {
        Some((l, p)) => (*l, p),
        None => return,
    };
    // `.` removes the element its parent token names.
    if last == "." {
        if let Some((elem, grand)) = parent_path.split_last()
            && let Some(list) = navigate_mut(obj, grand)
        {
            remove_element(list, elem);
        }
        return;
    }
    let Some(parent) = navigate_mut(obj, parent_path) else {
        return;
    };
    if let Some(f) = last.strip_prefix("f:") {
        if let Some(m) = parent.as_object_mut() {
            m.remove(f);
        }
    } else {
        remove_element(parent, last);
    }
}

fn remove_element(list: &mut Value, tok: &str) {
    let Some(items) = list.as_array_mut() else { return };
    if let Some(k) = tok.strip_prefix("k:")
        && let Ok(Value::Object(km)) = serde_json::from_str::<Value>(k)
    {
        items.retain(|item| !km.iter().all(|(kk, kv)| item.get(kk) == Some(kv)));
    } else if let Some(v) = tok.strip_prefix("v:")
        && let Ok(val) = serde_json::from_str::<Value>(v)
    {
        items.retain(|item| *item != val);
    }
}

fn navigate_mut<'a>(obj: &'a mut Value, path: &[&String]) -> Option<&'a mut Value> {
    let mut cur = obj;
    for tok in path {
        if *tok == "." {
            continue;
        }
        cur = if let Some(f) = tok.strip_prefix("f:") {
            cur.get_mut(f)?
        } else if let Some(k) = tok.strip_prefix("k:") {
            let key: Value = serde_json::from_str(k).ok()?;
            let km = key.as_object()?.clone();
            cur.as_array_mut()?
                .iter_mut()
                .find(|item| km.iter().all(|(kk, kv)| item.get(kk) == Some(kv)))?
        } else {
            return None;
        };
    }
    Some(cur)
}

/// Renders a token path like upstream's conflict messages: `.spec.containers[name="c"].image`.
pub fn render_path(path: &[String]) -> String {
    let mut s = String::new();
    for tok in path {
        if let Some(f) = tok.strip_prefix("f:") {
            s.push('.');
            s.push_str(f);
        } else if let Some(k) = tok.strip_prefix("k:") {
            let inner = serde_json::from_str::<Value>(k)
                .ok()
                .and_then(|v| v.as_object().cloned())
                .map(|m| m.iter().map(|(a, b)| format!("{a}={b}")).collect::<Vec<_>>().join(","))
                .unwrap_or_default();
            s.push_str(&format!("[{inner}]"));
        } else if let Some(v) = tok.strip_prefix("v:") {
            s.push_str(&format!("[={v}]"));
        }
    }
    s
}

/// Merges an applied configuration into an object (keyed lists by key, sets by value, others replaced).
fn merge_config(res: &ResourceInfo, target: &mut Value, config: &Value, names: &mut Vec<String>) {
    match config {
        Value::Object(cm) => {
            let tm = meta::ensure_object(target);
            for (k, v) in cm {
                if v.is_null() {
                    continue;
                }
                names.push(k.clone());
                match v {
                    Value::Object(_) => {
                        let entry = tm.entry(k.clone()).or_insert_with(|| json!({}));
                        merge_config(res, entry, v, names);
                    }
                    Value::Array(items) => {
                        let strategy = strategy_for(res, names);
                        let entry = tm.entry(k.clone()).or_insert_with(|| json!([]));
                        match strategy {
                            Some(ListStrategy::MergeKey(key)) => {
                                if !entry.is_array() {
                                    *entry = json!([]);
                                }
                                if let Some(a) = entry.as_array_mut() {
                                    merge_keyed_config(res, a, items, &key, names);
                                }
                            }
                            Some(ListStrategy::Primitive) => {
                                if !entry.is_array() {
                                    *entry = json!([]);
                                }
                                if let Some(a) = entry.as_array_mut() {
                                    for item in items {
                                        if !a.contains(item) {
                                            a.push(item.clone());
                                        }
                                    }
                                }
                            }
                            None => *entry = v.clone(),
                        }
                    }
                    scalar => {
                        tm.insert(k.clone(), scalar.clone());
                    }
                }
                names.pop();
            }
        }
        other => *target = other.clone(),
    }
}

/// Merges an applied keyed list into a live one: each item merges into the first element with its key
/// value (found through a hash index), or is appended.
fn merge_keyed_config(res: &ResourceInfo, list: &mut Vec<Value>, items: &[Value], key: &str, names: &mut Vec<String>) {
    let hashes = Hashes::default();
    let mut index = Positions::new();
    for (p, t) in list.iter().enumerate() {
        if let Some(kv) = t.get(key) {
            index.entry(hashes.value(kv)).or_default().push(p);
        }
    }
    for item in items {
        let Some(kv) = item.get(key) else {
            list.push(item.clone());
            continue;
        };
        let h = hashes.value(kv);
        let pos = index.get(&h).and_then(|ps| {
            ps.iter()
                .copied()
                .find(|&p| list.get(p).and_then(|t| t.get(key)) == Some(kv))
        });
        match pos.and_then(|p| list.get_mut(p)) {
            // Merging an equal key value into the element leaves it equal: the index stays right.
            Some(t) => merge_config(res, t, item, names),
            None => {
                index.entry(h).or_default().push(list.len());
                list.push(item.clone());
            }
        }
    }
}

fn check_config(res: &ResourceInfo, config: &Value, namespace: &str, name: &str) -> Result<(), ApiError> {
    let av = config.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = config.get("kind").and_then(Value::as_str).unwrap_or("");
    if av.is_empty() || kind.is_empty() {
        return Err(ApiError::bad_request(
            "apiVersion and kind must be set in an applied configuration",
        ));
    }
    if kind != res.kind {
        return Err(ApiError::bad_request(format!(
            "the kind in the data ({kind}) does not match the expected kind ({})",
            res.kind
        )));
    }
    let cname = meta::name(config);
    if !cname.is_empty() && cname != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({cname}) does not match the name on the URL ({name})"
        )));
    }
    let cns = meta::namespace(config);
    if res.namespaced && !cns.is_empty() && cns != namespace {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    Ok(())
}

/// Server-side apply creating the object: the configuration becomes the object, owned by `manager`.
pub fn apply_create(
    res: &ResourceInfo,
    namespace: &str,
    name: &str,
    config: &Value,
    manager: &str,
) -> Result<Value, ApiError> {
    check_config(res, config, namespace, name)?;
    let mut obj = config.clone();
    meta::metadata_mut(&mut obj).insert("name".into(), json!(name));
    let set = field_set(res, config, None);
    write_entries(
        &mut obj,
        vec![Entry {
            manager: manager.to_string(),
            operation: "Apply".into(),
            subresource: String::new(),
            api_version: res.api_version(),
            time: meta::now_rfc3339(),
            fields: set,
        }],
    );
    Ok(obj)
}

/// Server-side apply onto a live object (in the client's version). Returns the new object with updated
/// managedFields, or a 409 Conflict listing the fields other managers own.
pub fn apply(
    res: &ResourceInfo,
    live: &Value,
    config: &Value,
    manager: &str,
    force: bool,
    subresource: Option<&str>,
) -> Result<Value, ApiError> {
    check_config(res, config, meta::namespace(live), meta::name(live))?;
    let sub = subresource.unwrap_or("");
    let new_set = field_set(res, config, subresource);
    let mut entries = read_entries(live);
    let mine = |e: &Entry| e.manager == manager && e.operation == "Apply" && e.subresource == sub;
    let old_set = entries
        .iter()
        .find(|e| mine(e))
        .map(|e| e.fields.clone())
        .unwrap_or_default();

    // Conflicts: a value this apply changes that another manager owns.
    let mut conflicts: Vec<(String, Vec<String>)> = Vec::new();
    let (mut in_config, mut in_live) = (Finder::default(), Finder::default());
    for path in &new_set {
        if path.last().is_some_and(|t| t == ".") {
            continue;
        }
        let (Some(want), Some(have)) = (
            value_at(config, path, &mut in_config),
            value_at(live, path, &mut in_live),
        ) else {
            continue;
        };
        if want == have {
            continue;
        }
        for e in entries.iter().filter(|e| !mine(e) && e.subresource == sub) {
            if e.fields.contains(path) {
                conflicts.push((e.manager.clone(), path.clone()));
            }
        }
    }
    if !conflicts.is_empty() && !force {
        return Err(conflict_error(res, meta::name(live), &conflicts));
    }
    if force {
        for (_, path) in &conflicts {
            for e in entries.iter_mut().filter(|e| !mine(e)) {
                e.fields.remove(path);
            }
        }
    }

    let mut result = live.clone();
    // Fields this manager applied before and dropped now go away unless someone else owns them.
    for path in old_set.difference(&new_set) {
        let owned_elsewhere = entries.iter().filter(|e| !mine(e)).any(|e| e.fields.contains(path));
        if !owned_elsewhere {
            remove_at(&mut result, path);
        }
    }
    let mut names = Vec::new();
    let mut scoped = config.clone();
    if let Some(m) = scoped.as_object_mut() {
        m.remove("apiVersion");
        m.remove("kind");
        if subresource == Some("status") {
            m.retain(|k, _| k == "status");
        } else if res.status_subresource {
            m.remove("status");
        }
        if let Some(md) = m.get_mut("metadata").and_then(Value::as_object_mut) {
            md.retain(|k, _| matches!(k.as_str(), "labels" | "annotations" | "finalizers" | "ownerReferences"));
        }
    }
    merge_config(res, &mut result, &scoped, &mut names);

    let now = meta::now_rfc3339();
    match entries.iter_mut().find(|e| mine(e)) {
        Some(e) => {
            e.fields = new_set;
            e.time = now;
        }
        None => entries.push(Entry {
            manager: manager.to_string(),
            operation: "Apply".into(),
            subresource: sub.to_string(),
            api_version: res.api_version(),
            time: now,
            fields: new_set,
        }),
    }
    write_entries(&mut result, entries);
    Ok(result)
}

fn conflict_error(res: &ResourceInfo, name: &str, conflicts: &[(String, Vec<String>)]) -> ApiError {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{StatusCause, StatusDetails};
    let api_version = res.api_version();
    let message = if conflicts.len() == 1 {
        format!(
            "Apply failed with 1 conflict: conflict with {:?} using {api_version}: {}",
            conflicts[0].0,
            render_path(&conflicts[0].1)
        )
    } else {
        let mut s = format!("Apply failed with {} conflicts: ", conflicts.len());
        let managers: BTreeSet<&String> = conflicts.iter().map(|(m, _)| m).collect();
        let parts: Vec<String> = managers
            .into_iter()
            .map(|m| {
                let fields: Vec<String> = conflicts
                    .iter()
                    .filter(|(x, _)| x == m)
                    .map(|(_, p)| format!("- {}", render_path(p)))
                    .collect();
                format!("conflicts with {m:?} using {api_version}:\n{}", fields.join("\n"))
            })
            .collect();
        s.push_str(&parts.join("\n"));
        s
    };
    let causes = conflicts
        .iter()
        .map(|(m, p)| StatusCause {
            field: Some(render_path(p)),
            message: Some(format!("conflict with {m:?} using {api_version}")),
            reason: Some("FieldManagerConflict".into()),
        })
        .collect();
    let details = StatusDetails {
        causes: Some(causes),
        group: if res.group.is_empty() {
            None
        } else {
            Some(res.group.clone())
        },
        kind: Some(res.plural.clone()),
        name: Some(name.to_string()),
        ..Default::default()
    };
    ApiError::new(409, "Conflict", message, Some(details))
}

/// Records an `Update` by `manager` (create, PUT, non-apply patch): the fields it changed become its own
/// and leave other managers' sets. `old` is `None` for a create.
pub fn record_update(
    res: &ResourceInfo,
    old: Option<&Value>,
    new: &mut Value,
    manager: &str,
    subresource: Option<&str>,
    operation: &str,
) {
    if manager.is_empty() || operation == "Apply" {
        return;
    }
    let new_set = field_set(res, new, subresource);
    let changed: FieldSet = match old {
        None => new_set,
        Some(old) => {
            let old_set = field_set(res, old, subresource);
            let (mut in_old, mut in_new) = (Finder::default(), Finder::default());
            new_set
                .iter()
                .filter(|p| !old_set.contains(*p) || value_at(old, p, &mut in_old) != value_at(new, p, &mut in_new))
                .cloned()
                .collect()
        }
    };
    let sub = subresource.unwrap_or("");
    let mut entries = read_entries(new);
    // Fields that disappeared are owned by nobody.
    let present = field_set(res, new, subresource);
    for e in entries.iter_mut().filter(|e| e.subresource == sub) {
        e.fields
            .retain(|p| present.contains(p) || p.last().is_some_and(|t| t == "."));
    }
    if changed.is_empty() {
        write_entries(new, entries);
        return;
    }
    for e in entries.iter_mut() {
        if !(e.manager == manager && e.operation == "Update" && e.subresource == sub) {
            for p in &changed {
                e.fields.remove(p);
            }
        }
    }
    let now = meta::now_rfc3339();
    match entries
        .iter_mut()
        .find(|e| e.manager == manager && e.operation == "Update" && e.subresource == sub)
    {
        Some(e) => {
            e.fields.extend(changed);
            e.time = now;
        }
        None => entries.push(Entry {
            manager: manager.to_string(),
            operation: "Update".into(),
            subresource: sub.to_string(),
            api_version: res.api_version(),
            time: now,
            fields: changed,
        }),
    }
    write_entries(new, entries);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::Registry;

    fn registry() -> Registry {
        Registry::new(crate::kinds::builtin_resources())
    }

    fn cm() -> std::sync::Arc<ResourceInfo> {
        registry().get("", "v1", "configmaps").unwrap()
    }

    fn pods() -> std::sync::Arc<ResourceInfo> {
        registry().get("", "v1", "pods").unwrap()
    }

    #[test]
    fn fields_v1_round_trips() {
        let res = pods();
        let obj = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a": "1"}},
            "spec": {"containers": [{"name": "c", "image": "i"}]}});
        let set = field_set(&res, &obj, None);
        let encoded = to_fields_v1(&set);
        assert_eq!(
            encoded,
            json!({"f:metadata": {"f:labels": {"f:a": {}}},
                   "f:spec": {"f:containers": {"k:{\"name\":\"c\"}": {".": {}, "f:image": {}, "f:name": {}}}}})
        );
        assert_eq!(from_fields_v1(&encoded), set);
    }

    #[test]
    fn apply_owns_fields_conflicts_and_force_transfers() {
        let res = cm();
        let cfg_a =
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "1", "b": "2"}});
        let live = apply_create(&res, "ns", "x", &cfg_a, "alice").unwrap();
        // bob changes a value alice owns: conflict.
        let cfg_b = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "9"}});
        let err = apply(&res, &live, &cfg_b, "bob", false, None).unwrap_err();
        assert_eq!(err.code(), 409);
        assert_eq!(
            err.message(),
            "Apply failed with 1 conflict: conflict with \"alice\" using v1: .data.a"
        );
        // Same value: shared ownership, no conflict.
        let same = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "1"}});
        assert!(apply(&res, &live, &same, "bob", false, None).is_ok());
        // force transfers ownership.
        let forced = apply(&res, &live, &cfg_b, "bob", true, None).unwrap();
        assert_eq!(forced["data"]["a"], "9");
        // alice drops b and no longer owns a: b goes away, a (now bob's) stays.
        let cfg_a2 = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {}});
        let after = apply(&res, &forced, &cfg_a2, "alice", false, None).unwrap();
        assert_eq!(after["data"], json!({"a": "9"}));
    }

    #[test]
    fn updates_take_ownership_of_changed_fields() {
        let res = cm();
        let cfg = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "1"}});
        let live = apply_create(&res, "ns", "x", &cfg, "alice").unwrap();
        let mut new = live.clone();
        new["data"]["a"] = json!("2");
        record_update(&res, Some(&live), &mut new, "kubectl-edit", None, "Update");
        let again = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "3"}});
        let err = apply(&res, &new, &again, "alice", false, None).unwrap_err();
        assert!(
            err.message().contains("conflict with \"kubectl-edit\""),
            "{}",
            err.message()
        );
    }

    #[test]
    fn keyed_lists_merge_and_drop_elements_the_applier_removed() {
        let res = pods();
        let cfg = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "2"}]}});
        let live = apply_create(&res, "ns", "p", &cfg, "m").unwrap();
        let cfg2 = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "a", "image": "3"}]}});
        let out = apply(&res, &live, &cfg2, "m", false, None).unwrap();
        assert_eq!(out["spec"]["containers"], json!([{"name": "a", "image": "3"}]));
    }

    #[test]
    fn managed_fields_of_a_long_keyed_list_take_linear_time() {
        let res = pods();
        let env: Vec<Value> = (0..40_000)
            .map(|i| json!({"name": format!("e{i}"), "value": "v"}))
            .collect();
        let cfg = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "i", "env": env}]}});
        let started = std::time::Instant::now();
        let live = apply_create(&res, "ns", "p", &cfg, "m").unwrap();
        let mut changed = live.clone();
        changed["spec"]["containers"][0]["env"][39_999]["value"] = json!("w");
        record_update(&res, Some(&live), &mut changed, "editor", None, "Update");
        let mine = &changed["metadata"]["managedFields"][1];
        assert_eq!(mine["manager"], "editor");
        assert_eq!(
            mine["fieldsV1"]["f:spec"]["f:containers"]["k:{\"name\":\"c\"}"]["f:env"],
            json!({"k:{\"name\":\"e39999\"}": {".": {}, "f:value": {}}})
        );
        // Another manager re-applying every entry merges them by key and finds the one conflict.
        let err = apply(&res, &changed, &cfg, "other", false, None).unwrap_err();
        assert!(err.message().contains(".value"), "{}", err.message());
        let took = started.elapsed();
        assert!(took < std::time::Duration::from_secs(20), "{took:?}");
    }
}
