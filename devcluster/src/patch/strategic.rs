//! Strategic merge patch, in time linear in the sizes of the object and the patch (expected, with
//! hashing).
//!
//! kube-apiserver's `strategicpatch` finds each patch entry of a merged list by scanning the list, sorts
//! with a comparator that scans the order list, and deduplicates with a nested loop: O(n·m) or worse,
//! bounded only by the 3 MiB body. Here every list operation goes through a hash index built once per
//! list: entries merged by key find their element through a `merge key value -> positions` index,
//! `$setElementOrder` finds each named element through a `(field, value) -> positions` index,
//! `$deleteFromPrimitiveList` and the union of primitive lists test membership through a `value ->
//! positions` index. Hashes are SipHash with a per-process random key (the standard library's
//! `RandomState`), so a client cannot pick values that collide, and every hash hit is confirmed by
//! comparing the values.
//!
//! The result is the same as the straightforward implementation's for every input (a property test in
//! `tests` compares the two); one case is bounded instead: `$setElementOrder` entries with several fields
//! (clients send one, the merge key) are matched by scanning the elements that share the entry's rarest
//! field, and a patch whose such scans would exceed a budget proportional to the list's and order's
//! sizes is refused.

use std::collections::hash_map::RandomState;
use std::collections::{BTreeSet, HashMap};
use std::hash::{BuildHasher, Hash, Hasher};

use serde_json::{Map, Value};

use super::{ListStrategy, PatchError, list_strategy};

/// Applies a strategic merge patch.
pub fn strategic_merge_patch(target: &mut Value, patch: &Value) -> Result<(), PatchError> {
    if !patch.is_object() {
        return Err(PatchError("a strategic merge patch must be a JSON object".into()));
    }
    let hashes = Hashes(RandomState::new());
    let mut path = Vec::new();
    merge_object(&hashes, target, patch, &mut path)
}

/// Hashes JSON values consistently with their equality (`1` and `1.0` differ, `0.0` and `-0.0` do not,
/// objects hash by sorted keys), with a per-process random key.
#[derive(Default)]
pub(super) struct Hashes(RandomState);

impl Hashes {
    pub(super) fn value(&self, v: &Value) -> u64 {
        let mut h = self.0.build_hasher();
        hash_value(v, &mut h);
        h.finish()
    }

    fn field(&self, k: &str, v: &Value) -> u64 {
        let mut h = self.0.build_hasher();
        k.hash(&mut h);
        hash_value(v, &mut h);
        h.finish()
    }
}

fn hash_value<H: Hasher>(v: &Value, h: &mut H) {
    match v {
        Value::Null => 0u8.hash(h),
        Value::Bool(b) => {
            1u8.hash(h);
            b.hash(h);
        }
        Value::Number(n) => {
            2u8.hash(h);
            if let Some(u) = n.as_u64() {
                0u8.hash(h);
                u.hash(h);
            } else if let Some(i) = n.as_i64() {
                1u8.hash(h);
                i.hash(h);
            } else {
                2u8.hash(h);
                let f = n.as_f64().unwrap_or(0.0);
                // `-0.0 == 0.0`.
                let f = if f == 0.0 { 0.0f64 } else { f };
                f.to_bits().hash(h);
            }
        }
        Value::String(s) => {
            3u8.hash(h);
            s.hash(h);
        }
        Value::Array(a) => {
            4u8.hash(h);
            a.len().hash(h);
            for x in a {
                hash_value(x, h);
            }
        }
        Value::Object(m) => {
            5u8.hash(h);
            m.len().hash(h);
            for (k, x) in m {
                k.hash(h);
                hash_value(x, h);
            }
        }
    }
}

/// Positions of values by hash: each bucket's positions ascend, and a cursor skips the ones already
/// used, so finding the first unused match is amortized O(1).
#[derive(Default)]
struct Buckets(HashMap<u64, (Vec<usize>, usize)>);

impl Buckets {
    fn push(&mut self, hash: u64, pos: usize) {
        self.0.entry(hash).or_default().0.push(pos);
    }

    /// The first position in the bucket that is not `used` and satisfies `is_match`; `examined` counts the
    /// positions looked at past the bucket's used prefix.
    fn first(
        &mut self,
        hash: u64,
        used: &[bool],
        examined: &mut usize,
        mut is_match: impl FnMut(usize) -> bool,
    ) -> Option<usize> {
        let (positions, cursor) = self.0.get_mut(&hash)?;
        while positions
            .get(*cursor)
            .is_some_and(|&p| used.get(p).copied().unwrap_or(true))
        {
            *cursor += 1;
        }
        positions.get(*cursor..)?.iter().copied().find(|&p| {
            *examined += 1;
            !used.get(p).copied().unwrap_or(true) && is_match(p)
        })
    }

    fn len_of(&self, hash: u64) -> usize {
        self.0.get(&hash).map_or(0, |(positions, _)| positions.len())
    }
}

/// A set of values (membership by hash, confirmed by equality).
struct ValueSet<'a> {
    values: Vec<&'a Value>,
    index: HashMap<u64, Vec<usize>>,
}

impl<'a> ValueSet<'a> {
    fn new(hashes: &Hashes, values: impl IntoIterator<Item = &'a Value>) -> Self {
        let mut set = ValueSet {
            values: Vec::new(),
            index: HashMap::new(),
        };
        for v in values {
            let h = hashes.value(v);
            set.index.entry(h).or_default().push(set.values.len());
            set.values.push(v);
        }
        set
    }

    fn contains(&self, hashes: &Hashes, v: &Value) -> bool {
        self.index
            .get(&hashes.value(v))
            .is_some_and(|ps| ps.iter().any(|&p| self.values.get(p).is_some_and(|x| *x == v)))
    }
}

fn merge_object(hashes: &Hashes, target: &mut Value, patch: &Value, path: &mut Vec<String>) -> Result<(), PatchError> {
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
            order_directives.push((field, pv));
            continue;
        }
        if let Some(field) = k.strip_prefix("$deleteFromPrimitiveList/") {
            if let (Some(Value::Array(list)), Some(remove)) = (tmap.get_mut(field), pv.as_array()) {
                let remove = ValueSet::new(hashes, remove);
                list.retain(|v| !remove.contains(hashes, v));
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
                    merge_object(hashes, entry, pv, path)?;
                }
            }
            Value::Array(items) => {
                let hinted = order_directives_hint(pmap, k);
                let strategy = hinted.or_else(|| list_strategy(path));
                let current = tmap.remove(k);
                let merged = merge_list(hashes, current, items, strategy.as_ref(), path)?;
                tmap.insert(k.clone(), merged);
            }
            scalar => {
                tmap.insert(k.clone(), scalar.clone());
            }
        }
        path.pop();
    }
    for (field, order) in order_directives {
        if let (Some(Value::Array(list)), Some(order)) = (tmap.get_mut(field), order.as_array()) {
            reorder(hashes, list, order)?;
        }
    }
    if let Some(retain) = pmap.get("$retainKeys").and_then(Value::as_array) {
        let keep: std::collections::HashSet<&str> = retain.iter().filter_map(Value::as_str).collect();
        tmap.retain(|k, _| keep.contains(k.as_str()));
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

fn merge_list(
    hashes: &Hashes,
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
    let list = match current {
        Some(Value::Array(a)) => a,
        _ => Vec::new(),
    };
    match strategy {
        None => Ok(Value::Array(items.iter().map(clean).collect())),
        Some(ListStrategy::Primitive) => Ok(Value::Array(union(hashes, list, items))),
        Some(ListStrategy::MergeKey(key)) => merge_keyed(hashes, list, items, key, path).map(Value::Array),
    }
}

/// The list with the items it lacks appended, in order (a set union that keeps the list's duplicates).
fn union(hashes: &Hashes, mut list: Vec<Value>, items: &[Value]) -> Vec<Value> {
    let mut index: HashMap<u64, Vec<usize>> = HashMap::new();
    for (p, v) in list.iter().enumerate() {
        index.entry(hashes.value(v)).or_default().push(p);
    }
    for item in items {
        let h = hashes.value(item);
        let present = index
            .get(&h)
            .is_some_and(|ps| ps.iter().any(|&p| list.get(p).is_some_and(|v| v == item)));
        if !present {
            index.entry(h).or_default().push(list.len());
            list.push(item.clone());
        }
    }
    list
}

/// Merges patch entries into a list by `key`: an entry updates the first element with its key value,
/// `$patch: delete` removes it, and an entry matching none is appended.
fn merge_keyed(
    hashes: &Hashes,
    list: Vec<Value>,
    items: &[Value],
    key: &str,
    path: &mut Vec<String>,
) -> Result<Vec<Value>, PatchError> {
    let mut slots: Vec<Option<Value>> = list.into_iter().map(Some).collect();
    // Merge key value hash -> positions of the live elements carrying it.
    let mut index: HashMap<u64, BTreeSet<usize>> = HashMap::new();
    for (p, slot) in slots.iter().enumerate() {
        if let Some(kv) = slot.as_ref().and_then(|t| t.get(key)) {
            index.entry(hashes.value(kv)).or_default().insert(p);
        }
    }
    let key_at = |slots: &[Option<Value>], p: usize| -> Option<Value> {
        slots.get(p).and_then(Option::as_ref).and_then(|t| t.get(key)).cloned()
    };
    for item in items {
        let Some(kv) = item.get(key) else {
            return Err(PatchError(format!(
                "map: {item} does not contain declared merge key: {key}"
            )));
        };
        let h = hashes.value(kv);
        let pos = index.get(&h).and_then(|ps| {
            ps.iter().copied().find(|&p| {
                slots
                    .get(p)
                    .and_then(Option::as_ref)
                    .and_then(|t| t.get(key))
                    .is_some_and(|v| v == kv)
            })
        });
        let delete = item.get("$patch").and_then(Value::as_str) == Some("delete");
        match (pos, delete) {
            (Some(p), true) => {
                if let Some(ps) = index.get_mut(&h) {
                    ps.remove(&p);
                }
                if let Some(slot) = slots.get_mut(p) {
                    *slot = None;
                }
            }
            (None, true) => {}
            (Some(p), false) => {
                if let Some(Some(t)) = slots.get_mut(p) {
                    merge_object(hashes, t, item, path)?;
                }
                // The merge may change the element's own key value (`null`, directives inside it).
                let now = key_at(&slots, p);
                if now.as_ref() != Some(kv) {
                    if let Some(ps) = index.get_mut(&h) {
                        ps.remove(&p);
                    }
                    if let Some(now) = now {
                        index.entry(hashes.value(&now)).or_default().insert(p);
                    }
                }
            }
            (None, false) => {
                let mut fresh = Value::Object(Map::new());
                merge_object(hashes, &mut fresh, item, path)?;
                let p = slots.len();
                if let Some(kv) = fresh.get(key) {
                    index.entry(hashes.value(kv)).or_default().insert(p);
                }
                slots.push(Some(fresh));
            }
        }
    }
    Ok(slots.into_iter().flatten().collect())
}

/// Orders `list` like `order`: each entry of `order` takes the first element not yet taken that it
/// matches (an object entry matches an element holding each of its fields with the same value, another
/// entry an equal element); the elements no entry took follow, in their order.
fn reorder(hashes: &Hashes, list: &mut Vec<Value>, order: &[Value]) -> Result<(), PatchError> {
    let n = list.len();
    let mut used = vec![false; n];
    let mut taken: Vec<usize> = Vec::with_capacity(n.min(order.len()));
    let mut by_value: Option<Buckets> = None;
    let mut by_field: Option<Buckets> = None;
    let mut next_any = 0usize;
    // What scanning for entries with several fields may cost before the patch is refused.
    let mut scan_budget = n.saturating_add(order.len()).saturating_mul(8).saturating_add(4096);
    for o in order {
        if taken.len() == n {
            break;
        }
        let found = match o {
            Value::Object(m) if m.is_empty() => {
                while used.get(next_any).copied().unwrap_or(false) {
                    next_any += 1;
                }
                (next_any < n).then_some(next_any)
            }
            Value::Object(m) => {
                let index = by_field.get_or_insert_with(|| {
                    let mut b = Buckets::default();
                    for (p, item) in list.iter().enumerate() {
                        if let Value::Object(fields) = item {
                            for (k, v) in fields {
                                b.push(hashes.field(k, v), p);
                            }
                        }
                    }
                    b
                });
                // The entry's rarest field narrows the candidates most.
                let Some(h) = m
                    .iter()
                    .map(|(k, v)| hashes.field(k, v))
                    .min_by_key(|h| index.len_of(*h))
                else {
                    continue;
                };
                let mut scanned = 0usize;
                let found = index.first(h, &used, &mut scanned, |p| {
                    list.get(p)
                        .is_some_and(|item| m.iter().all(|(k, v)| item.get(k) == Some(v)))
                });
                if m.len() > 1 {
                    scan_budget = scan_budget.checked_sub(scanned).ok_or_else(|| {
                        PatchError(
                            "$setElementOrder: too many entries with several fields to match; entries name one field, the merge key"
                                .into(),
                        )
                    })?;
                }
                found
            }
            other => {
                let index = by_value.get_or_insert_with(|| {
                    let mut b = Buckets::default();
                    for (p, item) in list.iter().enumerate() {
                        b.push(hashes.value(item), p);
                    }
                    b
                });
                index.first(hashes.value(other), &used, &mut 0, |p| {
                    list.get(p).is_some_and(|item| item == other)
                })
            }
        };
        if let Some(p) = found
            && let Some(u) = used.get_mut(p)
        {
            *u = true;
            taken.push(p);
        }
    }
    let mut slots: Vec<Option<Value>> = std::mem::take(list).into_iter().map(Some).collect();
    let mut ordered = Vec::with_capacity(n);
    for p in taken {
        if let Some(v) = slots.get_mut(p).and_then(Option::take) {
            ordered.push(v);
        }
    }
    ordered.extend(slots.into_iter().flatten());
    *list = ordered;
    Ok(())
}

#[cfg(test)]
#[path = "strategic_tests.rs"]
mod tests;
