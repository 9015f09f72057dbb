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

use std::sync::Arc;

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

    /// Wait until both caches hold a complete list.
    pub async fn ready(&self) {
        if let Some(s) = &self.workloads {
            let _ = s.wait_until_ready().await;
        }
        if let Some(s) = &self.pod_groups {
            let _ = s.wait_until_ready().await;
        }
        if let Some(s) = &self.composites {
            let _ = s.wait_until_ready().await;
        }
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
    }

    /// The cached CompositePodGroup `namespace/name`, if the cache holds it (it may lag behind the API
    /// server).
    pub fn composite_pod_group(&self, namespace: &str, name: &str) -> Option<Arc<CompositePodGroup>> {
        self.composites
            .as_ref()?
            .get(&reflector::ObjectRef::new(name).within(namespace))
    }

    /// The cached PodGroup `namespace/name`, if the cache holds it (it may lag behind the API server).
    pub fn pod_group(&self, namespace: &str, name: &str) -> Option<Arc<PodGroup>> {
        self.pod_groups
            .as_ref()?
            .get(&reflector::ObjectRef::new(name).within(namespace))
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
