//! Discovery of a controller's scheduling objects without listing them on every reconcile.
//!
//! A reconcile has to find the Workloads whose `spec.controllerRef` names its object and the PodGroups
//! instantiated from a template of a Workload. Listing every Workload and PodGroup of the namespace per
//! reconcile makes the controllers' API traffic grow with the square of the number of Jobs, so the
//! controllers keep an informer cache of both ([`SchedulingIndex`]): it says *which names* to look at, and
//! it serves the objects themselves ([`crate::sync::get_cached`], [`crate::sync::find_workloads`],
//! [`crate::sync::find_pod_groups`]), falling back to a read from the API by name when it does not hold one
//! yet, together with the name the controller itself would have given the object (upstream's deterministic
//! names). So a cache that lags never makes a controller miss what it created: creating it again answers
//! AlreadyExists. A cached copy may be stale (a deletion not seen yet, an old minCount); every write made
//! from one is idempotent and the change it missed triggers the next reconcile, as with upstream's informers.
//!
//! A user-provided object with a name of its own is found once the cache has seen it (like upstream's
//! informer-indexed lookups); a Job blocked on a Workload it cannot find yet retries every 5 s.
//!
//! What the controller created itself is served before its cache shows it ([`SchedulingIndex::remember`]):
//! the object the create call returned, until the first watch event of that name reaches the cache
//! ([`SchedulingIndex::seen`], called by the watch before any controller hears of the event; from then on
//! the cache is authoritative, deletions included). Watches of different
//! kinds are not ordered with each other, so without it a Job's reconcile triggered by its new pods would
//! often not find the PodGroup created just before them and read it from the API.

use std::collections::HashMap;
use std::sync::Arc;

use kube::Resource;
use kube::runtime::watcher;

use k8s_openapi::api::scheduling::v1alpha3::{CompositePodGroup, PodGroup, Workload};
use kube::ResourceExt;
use kube::runtime::reflector::{self, Store};

/// Informer caches of Workloads and PodGroups, used to discover names (see the module docs). An empty
/// index ([`SchedulingIndex::empty`]) discovers nothing; lookups then rest on deterministic names only.
#[derive(Clone, Default)]
pub struct SchedulingIndex {
    workloads: Option<Store<Workload>>,
    pod_groups: Option<Store<PodGroup>>,
    composites: Option<Store<CompositePodGroup>>,
    recent: Arc<parking_lot::Mutex<Recent>>,
    /// Whether the stores are fed by the watches that trigger the controller's reconciles
    /// ([`SchedulingIndex::from_stores`]): only then may a reconcile read objects from them.
    serves_objects: bool,
}

impl std::fmt::Debug for SchedulingIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchedulingIndex")
            .field("running", &self.workloads.is_some())
            .finish()
    }
}

impl SchedulingIndex {
    /// An index that discovers nothing.
    pub fn empty() -> Self {
        Self::default()
    }

    /// An index over stores fed by watches that do not trigger the caller's reconciles: it names
    /// candidates, the objects are read by name.
    pub fn naming(workloads: Store<Workload>, pod_groups: Store<PodGroup>) -> Self {
        Self {
            workloads: Some(workloads),
            pod_groups: Some(pod_groups),
            composites: None,
            recent: Arc::default(),
            serves_objects: false,
        }
    }

    /// An index over stores the caller feeds (a controller whose watches trigger its reconciles only once
    /// the store holds the object they announce: `reflect` before the trigger).
    pub fn from_stores(workloads: Store<Workload>, pod_groups: Store<PodGroup>) -> Self {
        Self {
            workloads: Some(workloads),
            pod_groups: Some(pod_groups),
            composites: None,
            recent: Arc::default(),
            serves_objects: true,
        }
    }

    /// The index, also holding CompositePodGroups (fed like its other stores).
    pub fn with_composites(mut self, composites: Store<CompositePodGroup>) -> Self {
        self.composites = Some(composites);
        self
    }

    /// Whether reconciles may read objects from this index (not only names): true when its stores are fed
    /// by the watches that trigger the reconciles, so a trigger never finds an older object than the one
    /// it announces. An index built with [`SchedulingIndex::naming`] only names candidates.
    pub fn serves_objects(&self) -> bool {
        self.serves_objects && self.is_ready()
    }

    /// Whether both stores completed their first list (true for an empty index).
    pub fn is_ready(&self) -> bool {
        use futures::FutureExt;
        [
            self.workloads
                .as_ref()
                .map(|s| s.wait_until_ready().now_or_never().is_some()),
            self.pod_groups
                .as_ref()
                .map(|s| s.wait_until_ready().now_or_never().is_some()),
            self.composites
                .as_ref()
                .map(|s| s.wait_until_ready().now_or_never().is_some()),
        ]
        .into_iter()
        .all(|r| r.unwrap_or(true))
    }

    /// Names of the cached Workloads in `namespace` whose `spec.controllerRef` is `(api_group, kind, name)`.
    pub fn workload_names(&self, namespace: &str, api_group: &str, kind: &str, name: &str) -> Vec<String> {
        let Some(store) = &self.workloads else {
            return Vec::new();
        };
        names(store.state(), namespace, |w: &Workload| {
            w.spec
                .controller_ref
                .as_ref()
                .is_some_and(|r| r.api_group.as_deref().unwrap_or("") == api_group && r.kind == kind && r.name == name)
        })
    }

    /// Names of the cached PodGroups in `namespace` instantiated from `template` of Workload `workload`.
    pub fn pod_group_names(&self, namespace: &str, workload: &str, template: &str) -> Vec<String> {
        self.pod_groups_of(namespace, workload)
            .iter()
            .filter(|g| {
                g.spec
                    .workload_ref
                    .as_ref()
                    .is_some_and(|r| r.template_name == template)
            })
            .map(|g| g.name_any())
            .collect()
    }

    /// The cached Workload `namespace/name`, if the cache holds it (it may lag behind the API server).
    pub fn workload(&self, namespace: &str, name: &str) -> Option<Arc<Workload>> {
        self.workloads
            .as_ref()?
            .get(&reflector::ObjectRef::new(name).within(namespace))
            .or_else(|| self.recent.lock().workloads.get(&key(namespace, name)).cloned())
    }

    /// The cached CompositePodGroup `namespace/name`, if the cache holds it (it may lag behind the API
    /// server).
    pub fn composite_pod_group(&self, namespace: &str, name: &str) -> Option<Arc<CompositePodGroup>> {
        self.composites
            .as_ref()?
            .get(&reflector::ObjectRef::new(name).within(namespace))
            .or_else(|| self.recent.lock().composites.get(&key(namespace, name)).cloned())
    }

    /// The cached PodGroup `namespace/name`, if the cache holds it (it may lag behind the API server).
    pub fn pod_group(&self, namespace: &str, name: &str) -> Option<Arc<PodGroup>> {
        self.pod_groups
            .as_ref()?
            .get(&reflector::ObjectRef::new(name).within(namespace))
            .or_else(|| self.recent.lock().pod_groups.get(&key(namespace, name)).cloned())
    }

    /// Serve `obj`, which this controller just created (or found at its name), until the first watch event
    /// of its name reaches [`SchedulingIndex::seen`] (see the module docs). Nothing is kept by an index that does not
    /// serve objects.
    pub fn remember<K: Recently>(&self, obj: &K) {
        if !self.serves_objects {
            return;
        }
        let meta = obj.meta();
        let k = key(
            meta.namespace.as_deref().unwrap_or_default(),
            meta.name.as_deref().unwrap_or_default(),
        );
        K::map(&mut self.recent.lock()).insert(k, Arc::new(obj.clone()));
    }

    /// A watch event of the kind reached the cache: what [`SchedulingIndex::remember`] kept of that name is
    /// dropped (the cache holds it now, or its deletion). Call it from the watch that fills the store, after
    /// the store applied the event and before any controller hears of it
    /// ([`crate::informers::Hub::inspect`]).
    pub fn seen<K: Recently>(&self, event: &watcher::Event<K>) {
        let (watcher::Event::Apply(o) | watcher::Event::InitApply(o) | watcher::Event::Delete(o)) = event else {
            return;
        };
        let m = o.meta();
        let k = key(
            m.namespace.as_deref().unwrap_or_default(),
            m.name.as_deref().unwrap_or_default(),
        );
        let mut recent = self.recent.lock();
        let map = K::map(&mut recent);
        if !map.is_empty() {
            map.remove(&k);
        }
    }

    /// How many created objects are served ahead of the caches (for tests).
    pub fn recent_len(&self) -> usize {
        let r = self.recent.lock();
        r.workloads.len() + r.pod_groups.len() + r.composites.len()
    }

    /// The cached PodGroups in `namespace` instantiated from any template of Workload `workload`. The copies
    /// may lag behind the API: use them where acting on an old copy is harmless (an idempotent patch).
    pub fn pod_groups_of(&self, namespace: &str, workload: &str) -> Vec<Arc<PodGroup>> {
        let Some(store) = &self.pod_groups else {
            return Vec::new();
        };
        in_namespace(store.state(), namespace, |g: &PodGroup| {
            g.spec
                .workload_ref
                .as_ref()
                .is_some_and(|r| r.workload_name == workload)
        })
    }
}

fn in_namespace<K: kube::Resource>(objects: Vec<Arc<K>>, namespace: &str, keep: impl Fn(&K) -> bool) -> Vec<Arc<K>> {
    objects
        .into_iter()
        .filter(|o| o.meta().namespace.as_deref() == Some(namespace) && keep(o))
        .collect()
}

fn names<K: kube::Resource>(objects: Vec<Arc<K>>, namespace: &str, keep: impl Fn(&K) -> bool) -> Vec<String> {
    in_namespace(objects, namespace, keep)
        .iter()
        .map(|o| o.name_any())
        .collect()
}

type Key = (String, String);

fn key(namespace: &str, name: &str) -> Key {
    (namespace.to_string(), name.to_string())
}

/// Created objects the caches may not show yet, by kind.
#[derive(Default)]
struct Recent {
    workloads: HashMap<Key, Arc<Workload>>,
    pod_groups: HashMap<Key, Arc<PodGroup>>,
    composites: HashMap<Key, Arc<CompositePodGroup>>,
}

/// The kinds [`SchedulingIndex::remember`] keeps.
pub trait Recently: Resource + Clone + Send + Sync + 'static {
    #[doc(hidden)]
    #[allow(private_interfaces)]
    fn map(recent: &mut Recent) -> &mut HashMap<Key, Arc<Self>>;
}

impl Recently for Workload {
    #[allow(private_interfaces)]
    fn map(recent: &mut Recent) -> &mut HashMap<Key, Arc<Self>> {
        &mut recent.workloads
    }
}

impl Recently for PodGroup {
    #[allow(private_interfaces)]
    fn map(recent: &mut Recent) -> &mut HashMap<Key, Arc<Self>> {
        &mut recent.pod_groups
    }
}

impl Recently for CompositePodGroup {
    #[allow(private_interfaces)]
    fn map(recent: &mut Recent) -> &mut HashMap<Key, Arc<Self>> {
        &mut recent.composites
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(name: &str) -> PodGroup {
        let mut g = PodGroup::default();
        g.metadata.name = Some(name.into());
        g.metadata.namespace = Some("ns".into());
        g
    }

    #[test]
    fn a_created_object_is_served_until_its_first_watch_event_and_not_after_its_deletion() {
        let (workloads, _w) = reflector::store::<Workload>();
        let (groups, mut writer) = reflector::store::<PodGroup>();
        let index = SchedulingIndex::from_stores(workloads, groups);
        index.remember(&group("g"));
        assert!(index.pod_group("ns", "g").is_some(), "served before the cache has it");
        assert!(index.pod_group("ns", "other").is_none());
        // The creation event: the store holds it, the memory is dropped.
        let created = watcher::Event::Apply(group("g"));
        writer.apply_watcher_event(&created);
        index.seen(&created);
        assert_eq!(index.recent_len(), 0);
        assert!(index.pod_group("ns", "g").is_some());
        // Its deletion: neither serves it.
        let deleted = watcher::Event::Delete(group("g"));
        writer.apply_watcher_event(&deleted);
        index.seen(&deleted);
        assert!(index.pod_group("ns", "g").is_none());
        // Created again, then deleted before the cache saw either: the deletion event drops it too.
        index.remember(&group("g"));
        index.seen(&deleted);
        assert!(index.pod_group("ns", "g").is_none());
    }

    #[test]
    fn an_index_that_only_names_keeps_nothing() {
        let (workloads, _w) = reflector::store::<Workload>();
        let (groups, _g) = reflector::store::<PodGroup>();
        let index = SchedulingIndex::naming(workloads, groups);
        index.remember(&group("g"));
        assert_eq!(index.recent_len(), 0);
    }
}
