//! The in-memory object store: JSON objects per stored resource, one global `resourceVersion` counter
//! (every write takes the next value), an owner index for garbage collection, a label index (so a list
//! selecting `key=value` reads only the matching objects, as controllers listing their children do on every
//! reconcile) and a bounded per-resource event history that watches read from.
//!
//! The history of each resource is bounded twice: by a number of events (like kube-apiserver's watch cache,
//! whose capacity is counted in events) and by their total size ([`DEFAULT_HISTORY_BYTES`]), which
//! kube-apiserver does not have: it keeps its history in etcd-sized objects, while here a client writing
//! 1.5 MiB objects in a loop would otherwise keep 10,000 of them (15 GiB). Each event counts once, at the
//! size of its watch line (the JSON every watcher is sent, shared by all of them); the objects an event
//! shares with the store or its neighbours are not counted again. The oldest events go first, and watches
//! from a version that fell out get `410 Expired` as before.
//!
//! The store is synchronous and knows nothing about HTTP or admission; the API layer holds it under one
//! lock, so each request's read-modify-write is atomic, and watchers wake on a per-resource channel.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::{Arc, OnceLock};

use serde_json::Value;

use crate::meta;

/// A stored resource: API group and plural resource name (version-independent), the store's key.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct GroupResource {
    /// The API group (`""` for core).
    pub group: String,
    /// The plural resource name.
    pub resource: String,
}

impl GroupResource {
    /// Builds a group resource.
    pub fn new(group: &str, resource: &str) -> Self {
        GroupResource {
            group: group.to_string(),
            resource: resource.to_string(),
        }
    }
}

impl std::fmt::Display for GroupResource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&crate::error::qualified(&self.group, &self.resource))
    }
}

/// The key of a stored object.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectRef {
    /// The stored resource.
    pub gr: GroupResource,
    /// Namespace (`""` for cluster-scoped objects).
    pub namespace: String,
    /// Name.
    pub name: String,
}

/// A watch event type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    /// The object was created.
    Added,
    /// The object changed.
    Modified,
    /// The object was removed.
    Deleted,
}

impl EventType {
    /// The wire name (`ADDED`, `MODIFIED`, `DELETED`).
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// How many bytes of events each resource's history keeps at most, by default (64 MiB): the size of each
/// event's watch line, counted once. About 13,000 events of a typical 5 KB Pod, so the 10,000-event bound
/// comes first for ordinary objects; objects near the 1.5 MiB limit keep about 40.
pub const DEFAULT_HISTORY_BYTES: usize = 64 * 1024 * 1024;

/// One change to one object, as kept in the watch history.
#[derive(Debug)]
pub struct StoredEvent {
    /// The resourceVersion of the change (the object's new resourceVersion).
    pub rv: u64,
    /// What happened.
    pub kind: EventType,
    /// The object after the change (for deletions: its last state, with the deletion's resourceVersion).
    pub object: Arc<Value>,
    /// The object before the change (for `MODIFIED` and `DELETED`), so selector watches can tell an
    /// object entering or leaving their selection.
    pub prev: Option<Arc<Value>>,
    /// The watch line for this event as stored (`{"type":...,"object":...}` and a newline), computed once
    /// and shared by every watcher that sends it unchanged.
    pub encoded: OnceLock<bytes::Bytes>,
    /// The length of that line, what the event counts against the history's byte budget.
    pub size: usize,
}

/// Counts the bytes written to it.
struct CountingWriter(usize);

impl std::io::Write for CountingWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 = self.0.saturating_add(buf.len());
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl StoredEvent {
    fn new(rv: u64, kind: EventType, object: Arc<Value>, prev: Option<Arc<Value>>) -> Self {
        let mut counter = CountingWriter(0);
        let _ = serde_json::to_writer(&mut counter, &*object);
        // `{"type":"` TYPE `","object":` OBJECT `}\n`, as [`StoredEvent::encoded_line`] writes it.
        let size = counter.0.saturating_add(kind.as_str().len() + 22);
        StoredEvent {
            rv,
            kind,
            object,
            prev,
            encoded: OnceLock::new(),
            size,
        }
    }

    /// The watch line of the event as stored, serialized once.
    pub fn encoded_line(&self) -> bytes::Bytes {
        self.encoded
            .get_or_init(|| {
                let object = serde_json::to_string(&*self.object).unwrap_or_default();
                let mut s = String::with_capacity(object.len() + 32);
                s.push_str("{\"type\":\"");
                s.push_str(self.kind.as_str());
                s.push_str("\",\"object\":");
                s.push_str(&object);
                s.push_str("}\n");
                bytes::Bytes::from(s)
            })
            .clone()
    }
}

/// One stored resource's objects and history.
#[derive(Debug)]
struct Table {
    objects: BTreeMap<(String, String), Arc<Value>>,
    /// (label key, label value) -> the objects carrying it, as (namespace, name).
    by_label: HashMap<(String, String), BTreeSet<(String, String)>>,
    history: VecDeque<Arc<StoredEvent>>,
    /// The total [`StoredEvent::size`] of `history`.
    history_bytes: usize,
    /// The resourceVersion of the last event dropped from the history (0 if none): watches may start at any
    /// resourceVersion >= this one; older ones get 410 Gone.
    compacted_rv: u64,
    notify: tokio::sync::watch::Sender<u64>,
}

impl Table {
    fn new(rv: u64) -> Self {
        let (notify, _) = tokio::sync::watch::channel(rv);
        // Nothing of a new resource's history was ever dropped: a watch may start anywhere.
        Table {
            objects: BTreeMap::new(),
            by_label: HashMap::new(),
            history: VecDeque::new(),
            history_bytes: 0,
            compacted_rv: 0,
            notify,
        }
    }
}

/// The history of a resource is older than the requested version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expired {
    /// The requested version.
    pub requested: u64,
    /// The oldest version a watch can start from.
    pub oldest: u64,
}

/// The object store.
#[derive(Debug)]
pub struct Store {
    rv: u64,
    tables: HashMap<GroupResource, Table>,
    uids: HashMap<String, ObjectRef>,
    dependents: HashMap<String, BTreeSet<ObjectRef>>,
    history_limit: usize,
    history_byte_limit: usize,
}

impl Store {
    /// An empty store keeping at most `history_limit` events per resource for watches, and at most
    /// [`DEFAULT_HISTORY_BYTES`] of them.
    pub fn new(history_limit: usize) -> Self {
        Store {
            rv: 1,
            tables: HashMap::new(),
            uids: HashMap::new(),
            dependents: HashMap::new(),
            history_limit,
            history_byte_limit: DEFAULT_HISTORY_BYTES,
        }
    }

    /// Sets how many bytes of events each resource's history keeps (the newest event is always kept).
    pub fn set_history_byte_limit(&mut self, bytes: usize) {
        self.history_byte_limit = bytes;
    }

    /// The latest resourceVersion.
    pub fn current_rv(&self) -> u64 {
        self.rv
    }

    fn table(&mut self, gr: &GroupResource) -> &mut Table {
        let rv = self.rv;
        self.tables.entry(gr.clone()).or_insert_with(|| Table::new(rv))
    }

    /// One object.
    pub fn get(&self, gr: &GroupResource, namespace: &str, name: &str) -> Option<Arc<Value>> {
        self.tables
            .get(gr)
            .and_then(|t| t.objects.get(&(namespace.to_string(), name.to_string())))
            .cloned()
    }

    /// The object with this uid, wherever it is stored.
    pub fn get_by_uid(&self, uid: &str) -> Option<(ObjectRef, Arc<Value>)> {
        let r = self.uids.get(uid)?;
        self.get(&r.gr, &r.namespace, &r.name).map(|o| (r.clone(), o))
    }

    /// The objects of a resource, in one namespace or all, ordered by namespace then name.
    pub fn list(&self, gr: &GroupResource, namespace: Option<&str>) -> Vec<Arc<Value>> {
        let Some(t) = self.tables.get(gr) else {
            return Vec::new();
        };
        match namespace {
            Some(ns) => t
                .objects
                .range((ns.to_string(), String::new())..)
                .take_while(|((n, _), _)| n == ns)
                .map(|(_, v)| v.clone())
                .collect(),
            None => t.objects.values().cloned().collect(),
        }
    }

    /// The objects of a resource carrying label `key=value`, in one namespace or all, ordered by namespace
    /// then name (the order of [`Store::list`]).
    pub fn list_labeled(&self, gr: &GroupResource, namespace: Option<&str>, key: &str, value: &str) -> Vec<Arc<Value>> {
        let Some(t) = self.tables.get(gr) else {
            return Vec::new();
        };
        let Some(set) = t.by_label.get(&(key.to_string(), value.to_string())) else {
            return Vec::new();
        };
        let keys: Box<dyn Iterator<Item = &(String, String)>> = match namespace {
            Some(ns) => Box::new(
                set.range((ns.to_string(), String::new())..)
                    .take_while(move |(n, _)| n == ns),
            ),
            None => Box::new(set.iter()),
        };
        keys.filter_map(|k| t.objects.get(k).cloned()).collect()
    }

    /// Number of objects of a resource.
    pub fn count(&self, gr: &GroupResource) -> usize {
        self.tables.get(gr).map_or(0, |t| t.objects.len())
    }

    /// Whether any object of the resource lives in the namespace.
    pub fn any_in_namespace(&self, gr: &GroupResource, namespace: &str) -> bool {
        self.tables.get(gr).is_some_and(|t| {
            t.objects
                .range((namespace.to_string(), String::new())..)
                .next()
                .is_some_and(|((n, _), _)| n == namespace)
        })
    }

    /// The objects that name `owner_uid` in their ownerReferences.
    pub fn dependents_of(&self, owner_uid: &str) -> Vec<ObjectRef> {
        self.dependents
            .get(owner_uid)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Writes an object (create or replace), stamping the next resourceVersion. Returns the stored object.
    pub fn put(&mut self, gr: &GroupResource, mut obj: Value) -> Arc<Value> {
        self.rv += 1;
        let rv = self.rv;
        meta::metadata_mut(&mut obj).insert("resourceVersion".into(), Value::String(rv.to_string()));
        let namespace = meta::namespace(&obj).to_string();
        let name = meta::name(&obj).to_string();
        let key = ObjectRef {
            gr: gr.clone(),
            namespace: namespace.clone(),
            name: name.clone(),
        };
        let obj = Arc::new(obj);
        let prev = self.table(gr).objects.insert((namespace, name), obj.clone());
        if let Some(p) = &prev {
            self.unindex(&key, p);
        }
        self.index(&key, &obj);
        let kind = if prev.is_some() {
            EventType::Modified
        } else {
            EventType::Added
        };
        self.record(gr, StoredEvent::new(rv, kind, obj.clone(), prev));
        obj
    }

    /// Removes an object, recording a `DELETED` event whose object carries the deletion's resourceVersion.
    pub fn remove(&mut self, gr: &GroupResource, namespace: &str, name: &str) -> Option<Arc<Value>> {
        let prev = self
            .table(gr)
            .objects
            .remove(&(namespace.to_string(), name.to_string()))?;
        let key = ObjectRef {
            gr: gr.clone(),
            namespace: namespace.to_string(),
            name: name.to_string(),
        };
        self.unindex(&key, &prev);
        self.rv += 1;
        let rv = self.rv;
        let mut last = (*prev).clone();
        meta::metadata_mut(&mut last).insert("resourceVersion".into(), Value::String(rv.to_string()));
        let last = Arc::new(last);
        self.record(gr, StoredEvent::new(rv, EventType::Deleted, last.clone(), Some(prev)));
        Some(last)
    }

    /// Drops a whole resource (a deleted CRD's objects), recording their deletions.
    pub fn drop_resource(&mut self, gr: &GroupResource) -> Vec<Arc<Value>> {
        let keys: Vec<(String, String)> = self
            .tables
            .get(gr)
            .map(|t| t.objects.keys().cloned().collect())
            .unwrap_or_default();
        keys.into_iter()
            .filter_map(|(ns, name)| self.remove(gr, &ns, &name))
            .collect()
    }

    fn index(&mut self, key: &ObjectRef, obj: &Value) {
        let uid = meta::uid(obj);
        if !uid.is_empty() {
            self.uids.insert(uid.to_string(), key.clone());
        }
        for owner in meta::owner_refs(obj) {
            self.dependents.entry(owner.uid).or_default().insert(key.clone());
        }
        let labels = object_labels(obj);
        let at = (key.namespace.clone(), key.name.clone());
        let table = self.table(&key.gr);
        for label in labels {
            table.by_label.entry(label).or_default().insert(at.clone());
        }
    }

    fn unindex(&mut self, key: &ObjectRef, obj: &Value) {
        let labels = object_labels(obj);
        let at = (key.namespace.clone(), key.name.clone());
        let table = self.table(&key.gr);
        for label in labels {
            if let Some(set) = table.by_label.get_mut(&label) {
                set.remove(&at);
                if set.is_empty() {
                    table.by_label.remove(&label);
                }
            }
        }
        let uid = meta::uid(obj);
        if self.uids.get(uid) == Some(key) {
            self.uids.remove(uid);
        }
        for owner in meta::owner_refs(obj) {
            if let Some(set) = self.dependents.get_mut(&owner.uid) {
                set.remove(key);
                if set.is_empty() {
                    self.dependents.remove(&owner.uid);
                }
            }
        }
    }

    /// Appends an event to the resource's history, dropping the oldest ones past the event count or the
    /// byte budget (never the new one).
    fn record(&mut self, gr: &GroupResource, event: StoredEvent) {
        let limit = self.history_limit.max(1);
        let byte_limit = self.history_byte_limit;
        let rv = event.rv;
        let table = self.table(gr);
        table.history_bytes = table.history_bytes.saturating_add(event.size);
        table.history.push_back(Arc::new(event));
        while table.history.len() > limit || (table.history_bytes > byte_limit && table.history.len() > 1) {
            let Some(old) = table.history.pop_front() else { break };
            table.history_bytes = table.history_bytes.saturating_sub(old.size);
            table.compacted_rv = old.rv;
        }
        table.notify.send_replace(rv);
    }

    /// A receiver that changes whenever the resource changes.
    pub fn subscribe(&mut self, gr: &GroupResource) -> tokio::sync::watch::Receiver<u64> {
        self.table(gr).notify.subscribe()
    }

    /// The events of a resource with resourceVersion greater than `since`, at most `max` of them.
    pub fn events_since(
        &mut self,
        gr: &GroupResource,
        since: u64,
        max: usize,
    ) -> Result<Vec<Arc<StoredEvent>>, Expired> {
        let table = self.table(gr);
        if since < table.compacted_rv {
            return Err(Expired {
                requested: since,
                oldest: table.compacted_rv,
            });
        }
        let start = table.history.partition_point(|e| e.rv <= since);
        Ok(table.history.iter().skip(start).take(max).cloned().collect())
    }
}

/// An object's labels as (key, value) pairs (values that are not strings are not indexed; admission
/// rejects them anyway).
fn object_labels(obj: &Value) -> Vec<(String, String)> {
    obj.get("metadata")
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
        .map(|l| {
            l.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn gr() -> GroupResource {
        GroupResource::new("", "configmaps")
    }

    #[test]
    fn the_label_index_follows_relabels_and_removals() {
        let mut s = Store::new(100);
        let obj = |ns: &str, name: &str, app: &str| json!({"metadata": {"name": name, "namespace": ns, "labels": {"app": app, "tier": "x"}}});
        s.put(&gr(), obj("b", "p2", "web"));
        s.put(&gr(), obj("a", "p1", "web"));
        s.put(&gr(), obj("a", "p0", "web"));
        s.put(&gr(), obj("a", "q", "db"));
        let names = |v: Vec<Arc<Value>>| v.iter().map(|o| meta::name(o).to_string()).collect::<Vec<_>>();
        assert_eq!(names(s.list_labeled(&gr(), None, "app", "web")), ["p0", "p1", "p2"]);
        assert_eq!(names(s.list_labeled(&gr(), Some("a"), "app", "web")), ["p0", "p1"]);
        s.put(&gr(), obj("a", "p1", "db"));
        assert_eq!(names(s.list_labeled(&gr(), Some("a"), "app", "web")), ["p0"]);
        assert_eq!(names(s.list_labeled(&gr(), Some("a"), "app", "db")), ["p1", "q"]);
        s.remove(&gr(), "a", "q");
        assert_eq!(names(s.list_labeled(&gr(), Some("a"), "app", "db")), ["p1"]);
        assert!(s.list_labeled(&gr(), None, "app", "cache").is_empty());
        assert_eq!(s.list_labeled(&gr(), None, "tier", "x").len(), 3);
    }

    #[test]
    fn every_write_takes_the_next_resource_version_and_is_recorded() {
        let mut s = Store::new(100);
        let a = s.put(
            &gr(),
            json!({"metadata": {"name": "a", "namespace": "ns", "uid": "u1"}}),
        );
        let b = s.put(
            &gr(),
            json!({"metadata": {"name": "a", "namespace": "ns", "uid": "u1"}, "data": {"k": "v"}}),
        );
        let rv_a: u64 = meta::resource_version(&a).parse().unwrap();
        let rv_b: u64 = meta::resource_version(&b).parse().unwrap();
        assert_eq!(rv_b, rv_a + 1);
        let events = s.events_since(&gr(), rv_a - 1, 10).unwrap();
        assert_eq!(
            events.iter().map(|e| e.kind).collect::<Vec<_>>(),
            vec![EventType::Added, EventType::Modified]
        );
        assert!(events[1].prev.is_some());
        let gone = s.remove(&gr(), "ns", "a").unwrap();
        assert_eq!(meta::resource_version(&gone), (rv_b + 1).to_string());
        assert!(s.get(&gr(), "ns", "a").is_none());
        assert!(s.get_by_uid("u1").is_none());
    }

    #[test]
    fn history_is_a_window_and_older_versions_expire() {
        let mut s = Store::new(3);
        for i in 0..10 {
            s.put(&gr(), json!({"metadata": {"name": format!("o{i}"), "namespace": "ns"}}));
        }
        let now = s.current_rv();
        assert_eq!(s.events_since(&gr(), now - 3, 100).unwrap().len(), 3);
        let err = s.events_since(&gr(), now - 5, 100).unwrap_err();
        assert_eq!(err.requested, now - 5);
        assert_eq!(err.oldest, now - 3);
    }

    #[test]
    fn history_is_bounded_in_bytes_and_older_versions_expire() {
        let mut s = Store::new(1000);
        let big = |i: usize| json!({"metadata": {"name": format!("o{i}"), "namespace": "ns"}, "data": {"a": "x".repeat(1000)}});
        let first = s.put(&gr(), big(0));
        let size = s.events_since(&gr(), 0, 1).unwrap()[0].size;
        assert_eq!(
            size,
            StoredEvent::new(0, EventType::Added, first.clone(), None)
                .encoded_line()
                .len()
        );
        s.set_history_byte_limit(size * 3 + size / 2);
        for i in 1..10 {
            s.put(&gr(), big(i));
        }
        let now = s.current_rv();
        let kept = s.events_since(&gr(), now - 3, 100).unwrap();
        assert_eq!(kept.len(), 3);
        assert_eq!(
            s.tables[&gr()].history_bytes,
            kept.iter().map(|e| e.size).sum::<usize>()
        );
        let err = s.events_since(&gr(), now - 4, 100).unwrap_err();
        assert_eq!(err.oldest, now - 3);
        // An event larger than the whole budget is still kept (alone).
        s.set_history_byte_limit(10);
        s.put(&gr(), big(99));
        let now = s.current_rv();
        assert_eq!(s.events_since(&gr(), now - 1, 100).unwrap().len(), 1);
        assert!(s.events_since(&gr(), now - 2, 100).is_err());
    }

    #[test]
    fn owner_index_follows_owner_references() {
        let mut s = Store::new(10);
        let child = json!({"metadata": {"name": "c", "namespace": "ns", "uid": "c1",
            "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "p", "uid": "p1"}]}});
        s.put(&gr(), child);
        assert_eq!(s.dependents_of("p1").len(), 1);
        s.put(
            &gr(),
            json!({"metadata": {"name": "c", "namespace": "ns", "uid": "c1"}}),
        );
        assert!(s.dependents_of("p1").is_empty());
    }

    #[test]
    fn list_is_scoped_to_a_namespace() {
        let mut s = Store::new(10);
        for (ns, n) in [("a", "x"), ("b", "y"), ("a", "z"), ("ab", "w")] {
            s.put(&gr(), json!({"metadata": {"name": n, "namespace": ns}}));
        }
        let names: Vec<_> = s
            .list(&gr(), Some("a"))
            .iter()
            .map(|o| meta::name(o).to_string())
            .collect();
        assert_eq!(names, vec!["x", "z"]);
        assert_eq!(s.list(&gr(), None).len(), 4);
        assert!(s.any_in_namespace(&gr(), "ab"));
        assert!(!s.any_in_namespace(&gr(), "c"));
    }
}
