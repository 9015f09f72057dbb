//! Syncing scheduling objects (Workloads, CompositePodGroups, PodGroups), shared by the Job and JobSet
//! controllers: discovery, idempotent creation with events, `minCount` re-sync and deletion.
//!
//! Discovery takes candidate names from the controller's cache ([`crate::index`]) and the controller's own
//! deterministic name, and reads the objects themselves from the API server, so a restarted controller sees
//! every object it created before it stopped; creation uses deterministic names, so a create racing with an earlier one fails with
//! `AlreadyExists` and the existing object is used. Objects are only updated or deleted when the controller
//! created them (the [`MANAGED_BY`] annotation) and is their controller owner.
//!
//! What to re-sync is decided by the library ([`workloadbuilder::sync`]: which `minCount`s change, what the
//! API would refuse); this module carries the decisions out.

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::scheduling::v1alpha3::{CompositePodGroup, PodGroup, Workload};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::events::{Event, EventType, Recorder};
use kube::{Client, Resource, ResourceExt};
use kwas_api_types::names::annotations::MANAGED_BY;
use kwas_api_types::names::events;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tracing::warn;
use workloadbuilder::sync::{GroupMinCount, TemplateMinCount};

use crate::error::{Error, Result, is_conflict, is_not_found};
use crate::index::SchedulingIndex;

/// The controller reference to `obj`, as `metav1.NewControllerRef` builds it (`controller` and
/// `blockOwnerDeletion` set), from kube's `Resource::controller_owner_ref`: `None` for an object without a
/// name or uid, so an owner with an empty uid cannot be built.
pub fn controller_ref<K: Resource<DynamicType = ()>>(obj: &K) -> Option<OwnerReference> {
    obj.controller_owner_ref(&()).map(|r| OwnerReference {
        block_owner_deletion: Some(true),
        ..r
    })
}

/// Mark `meta` as created by `controller`.
pub fn mark_managed(meta: &mut ObjectMeta, controller: &str) {
    meta.annotations
        .get_or_insert_with(Default::default)
        .insert(MANAGED_BY.to_string(), controller.to_string());
}

/// Copies the gang recovery policy (`kwas.dev/gang-recovery-seconds`, read by the scheduler on PodGroups)
/// from the first of `sources` that sets it (a Job's, then its JobSet's annotations) onto `meta`.
pub fn copy_recovery_policy<'a>(
    sources: impl IntoIterator<Item = Option<&'a std::collections::BTreeMap<String, String>>>,
    meta: &mut ObjectMeta,
) {
    let key = kwas_api_types::names::annotations::GANG_RECOVERY_SECONDS;
    if let Some(value) = sources.into_iter().flatten().find_map(|a| a.get(key)) {
        meta.annotations
            .get_or_insert_with(Default::default)
            .insert(key.to_string(), value.clone());
    }
}

/// True when `meta` was created by `controller`.
pub fn is_managed_by(meta: &ObjectMeta, controller: &str) -> bool {
    meta.annotations
        .as_ref()
        .and_then(|a| a.get(MANAGED_BY))
        .map(String::as_str)
        == Some(controller)
}

/// True when `meta`'s controller owner has uid `uid`.
pub fn is_controlled_by(meta: &ObjectMeta, uid: &str) -> bool {
    meta.owner_references
        .iter()
        .flatten()
        .any(|r| r.controller == Some(true) && r.uid == uid)
}

/// True when the object can be updated or deleted by `controller` on behalf of the owner `uid`.
pub fn is_owned(meta: &ObjectMeta, controller: &str, uid: &str) -> bool {
    is_managed_by(meta, controller) && is_controlled_by(meta, uid)
}

/// Records events on one object; failures to record are logged, never fatal.
#[derive(Clone)]
pub struct EventSink {
    recorder: Recorder,
    reference: ObjectReference,
}

impl std::fmt::Debug for EventSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventSink").field("reference", &self.reference).finish()
    }
}

impl EventSink {
    /// Events about `obj`, published by `recorder`.
    pub fn new<K: Resource<DynamicType = ()>>(recorder: Recorder, obj: &K) -> Self {
        Self {
            recorder,
            reference: obj.object_ref(&()),
        }
    }

    async fn publish(&self, type_: EventType, reason: &str, note: String, action: &str) {
        let event = Event {
            type_,
            reason: reason.to_string(),
            note: Some(note.chars().take(1024).collect()),
            action: action.to_string(),
            secondary: None,
        };
        if let Err(e) = self.recorder.publish(&event, &self.reference).await {
            warn!(error = %e, reason, "failed to record event");
        }
    }

    /// A Normal event.
    pub async fn normal(&self, reason: &str, note: impl Into<String>) {
        self.publish(EventType::Normal, reason, note.into(), "Reconcile").await;
    }

    /// A Warning event.
    pub async fn warning(&self, reason: &str, note: impl Into<String>) {
        self.publish(EventType::Warning, reason, note.into(), "Reconcile").await;
    }

    /// Send an event in the background: the reconcile does not wait for the API server to record it (as
    /// client-go's recorder, whose broadcaster sends from its own goroutine). A failure is logged.
    pub fn emit(&self, warning: bool, reason: &str, note: impl Into<String>) {
        let sink = self.clone();
        let reason = reason.to_string();
        let note = note.into();
        let type_ = if warning { EventType::Warning } else { EventType::Normal };
        tokio::spawn(async move { sink.publish(type_, &reason, note, "Reconcile").await });
    }
}

/// Where to look for a controller's scheduling objects: the discovery cache and the name the controller
/// itself gives the object (see [`crate::index`]).
#[derive(Clone, Copy, Debug)]
pub struct Lookup<'a> {
    /// The discovery cache.
    pub index: &'a SchedulingIndex,
    /// The name the controller would create the object under, if it has one.
    pub own_name: Option<&'a str>,
    /// Take an object the cache does not hold as absent ([`get_cached_trusting`]).
    pub trust_misses: bool,
}

/// A kind the [`SchedulingIndex`] caches.
pub trait Indexed: Sized {
    /// The cached object `namespace/name`, if the cache holds it.
    fn cached(index: &SchedulingIndex, namespace: &str, name: &str) -> Option<Self>;
}

impl Indexed for Workload {
    fn cached(index: &SchedulingIndex, namespace: &str, name: &str) -> Option<Self> {
        index.workload(namespace, name).map(|w| (*w).clone())
    }
}

impl Indexed for CompositePodGroup {
    fn cached(index: &SchedulingIndex, namespace: &str, name: &str) -> Option<Self> {
        index.composite_pod_group(namespace, name).map(|g| (*g).clone())
    }
}

impl Indexed for PodGroup {
    fn cached(index: &SchedulingIndex, namespace: &str, name: &str) -> Option<Self> {
        index.pod_group(namespace, name).map(|g| (*g).clone())
    }
}

/// The object `namespace/name` from the cache, or from the API when the cache does not hold it (yet):
/// an informer read, as upstream's controllers do. A cached copy may be stale; every write made from it is
/// idempotent (creation by name answers AlreadyExists, patches are recomputed from the live object on the
/// next reconcile), so a stale read costs at most one more reconcile, never a duplicate.
pub async fn get_cached<K>(client: &Client, index: &SchedulingIndex, namespace: &str, name: &str) -> Result<Option<K>>
where
    K: Indexed
        + Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
{
    get_cached_trusting(client, index, namespace, name, false).await
}

/// Like [`get_cached`]; with `trust_miss`, an object the cache does not hold is taken as absent without a
/// read (for an object the caller is about to create: creating one the cache has not seen yet answers
/// AlreadyExists, and [`create_or_get`] then reads it).
pub async fn get_cached_trusting<K>(
    client: &Client,
    index: &SchedulingIndex,
    namespace: &str,
    name: &str,
    trust_miss: bool,
) -> Result<Option<K>>
where
    K: Indexed
        + Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
{
    if !index.serves_objects() {
        return get_opt(client, namespace, name).await;
    }
    match K::cached(index, namespace, name) {
        Some(o) => Ok(Some(o)),
        None if trust_miss => Ok(None),
        None => get_opt(client, namespace, name).await,
    }
}

/// Reads the candidate names (in name order) from the cache or the API, keeping those that exist and match.
async fn read_candidates<K>(
    client: &Client,
    index: &SchedulingIndex,
    trust_miss: bool,
    namespace: &str,
    mut names: Vec<String>,
    keep: impl Fn(&K) -> bool,
) -> Result<Vec<K>>
where
    K: Indexed
        + Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    names.sort();
    names.dedup();
    let mut out = Vec::new();
    for name in names {
        if let Some(o) = get_cached_trusting::<K>(client, index, namespace, &name, trust_miss).await?
            && keep(&o)
        {
            out.push(o);
        }
    }
    Ok(out)
}

/// Workloads in `namespace` whose `spec.controllerRef` names `(api_group, kind, name)`, read from the cache
/// or the API ([`get_cached`]).
pub async fn find_workloads(
    client: &Client,
    lookup: Lookup<'_>,
    namespace: &str,
    api_group: &str,
    kind: &str,
    name: &str,
) -> Result<Vec<Workload>> {
    let mut names = lookup.index.workload_names(namespace, api_group, kind, name);
    names.extend(lookup.own_name.map(str::to_string));
    read_candidates(
        client,
        lookup.index,
        lookup.trust_misses,
        namespace,
        names,
        |w: &Workload| {
            w.spec
                .controller_ref
                .as_ref()
                .is_some_and(|r| r.api_group.as_deref().unwrap_or("") == api_group && r.kind == kind && r.name == name)
        },
    )
    .await
}

/// PodGroups in `namespace` instantiated from template `template` of Workload `workload`, read from the
/// cache or the API ([`get_cached`]).
pub async fn find_pod_groups(
    client: &Client,
    lookup: Lookup<'_>,
    namespace: &str,
    workload: &str,
    template: &str,
) -> Result<Vec<PodGroup>> {
    let mut names = lookup.index.pod_group_names(namespace, workload, template);
    names.extend(lookup.own_name.map(str::to_string));
    read_candidates(
        client,
        lookup.index,
        lookup.trust_misses,
        namespace,
        names,
        |pg: &PodGroup| {
            pg.spec
                .workload_ref
                .as_ref()
                .is_some_and(|r| r.workload_name == workload && r.template_name == template)
        },
    )
    .await
}

/// Get an object by name, `None` when it does not exist.
pub async fn get_opt<K>(client: &Client, namespace: &str, name: &str) -> Result<Option<K>>
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
{
    let api: Api<K> = Api::namespaced(client.clone(), namespace);
    Ok(api.get_opt(name).await?)
}

/// Create `obj` (named deterministically), or return the object already there under that name. Records
/// `created_reason` on success and, on failure, `failed_reason` (when given) before returning the error.
pub async fn create_or_get<K>(
    client: &Client,
    obj: &K,
    kind: &'static str,
    events: &EventSink,
    created_reason: &str,
    failed_reason: Option<&str>,
) -> Result<K>
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + Serialize
        + std::fmt::Debug,
{
    let namespace = obj.namespace().unwrap_or_default();
    let name = obj.name_any();
    let api: Api<K> = Api::namespaced(client.clone(), &namespace);
    match api.create(&PostParams::default(), obj).await {
        Ok(created) => {
            events.emit(false, created_reason, format!("Created {kind} {name}"));
            Ok(created)
        }
        Err(e) if is_conflict(&e) => Ok(api.get(&name).await?),
        Err(source) => {
            if let Some(reason) = failed_reason {
                events
                    .warning(reason, format!("Failed to create {kind} {name}: {source}"))
                    .await;
            }
            Err(Error::Create { kind, name, source })
        }
    }
}

/// Create a Workload (events `WorkloadCreated` / `FailedWorkloadCreate`); `index` serves it until its cache
/// shows it.
pub async fn create_workload(
    client: &Client,
    index: &SchedulingIndex,
    workload: &Workload,
    events: &EventSink,
) -> Result<Workload> {
    let created = create_or_get(
        client,
        workload,
        "Workload",
        events,
        events::WORKLOAD_CREATED,
        Some(events::FAILED_WORKLOAD_CREATE),
    )
    .await?;
    index.remember(&created);
    Ok(created)
}

/// Create a PodGroup (event `PodGroupCreated`); `index` serves it until its cache shows it.
pub async fn create_pod_group(
    client: &Client,
    index: &SchedulingIndex,
    group: &PodGroup,
    events: &EventSink,
) -> Result<PodGroup> {
    let created = create_or_get(client, group, "PodGroup", events, events::POD_GROUP_CREATED, None).await?;
    index.remember(&created);
    Ok(created)
}

/// Create a CompositePodGroup (event `CompositePodGroupCreated`); `index` serves it until its cache shows
/// it.
pub async fn create_composite_pod_group(
    client: &Client,
    index: &SchedulingIndex,
    group: &CompositePodGroup,
    events: &EventSink,
) -> Result<CompositePodGroup> {
    let created = create_or_get(
        client,
        group,
        "CompositePodGroup",
        events,
        events::COMPOSITE_POD_GROUP_CREATED,
        None,
    )
    .await?;
    index.remember(&created);
    Ok(created)
}

pub use workloadbuilder::sync::{template_min_count, template_pointer};

/// Set the gang `minCount` of `template` in `workload` to `count` when the library's re-sync decision
/// ([`workloadbuilder::sync::workload_min_count_change`]) says it changes. Returns true when it wrote.
pub async fn sync_workload_min_count(client: &Client, workload: &Workload, template: &str, count: i32) -> Result<bool> {
    match workloadbuilder::sync::workload_min_count_change(workload, template, count) {
        Some(change) => apply_workload_min_count(client, workload, &change).await.map(|()| true),
        None => Ok(false),
    }
}

/// Write one planned template `minCount` into `workload` (the plan's JSON patch, guarded by a test of the
/// template's name, so a concurrent change of the list cannot move the write to another template).
pub async fn apply_workload_min_count(client: &Client, workload: &Workload, change: &TemplateMinCount) -> Result<()> {
    let patch: json_patch::Patch = serde_json::from_value(change.json_patch())?;
    let api: Api<Workload> = Api::namespaced(client.clone(), &workload.namespace().unwrap_or_default());
    api.patch(&workload.name_any(), &PatchParams::default(), &Patch::Json::<()>(patch))
        .await?;
    Ok(())
}

/// Set the gang `minCount` of a PodGroup (the one mutable field of its spec) when the library's re-sync
/// decision ([`workloadbuilder::sync::pod_group_min_count_change`]) says it changes. Returns true when it
/// wrote.
pub async fn sync_pod_group_min_count(client: &Client, group: &PodGroup, count: i32) -> Result<bool> {
    match workloadbuilder::sync::pod_group_min_count_change(group, count) {
        Some(change) => apply_pod_group_min_count(client, group, &change).await.map(|()| true),
        None => Ok(false),
    }
}

/// Write one planned PodGroup `minCount` (the plan's merge patch).
pub async fn apply_pod_group_min_count(client: &Client, group: &PodGroup, change: &GroupMinCount) -> Result<()> {
    let api: Api<PodGroup> = Api::namespaced(client.clone(), &group.namespace().unwrap_or_default());
    api.patch(
        &group.name_any(),
        &PatchParams::default(),
        &Patch::Merge(&change.merge_patch()),
    )
    .await?;
    Ok(())
}

/// Delete a namespaced object by name (background propagation); a missing object is not an error.
pub async fn delete<K>(client: &Client, namespace: &str, name: &str) -> Result<()>
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
{
    let api: Api<K> = Api::namespaced(client.clone(), namespace);
    match api.delete(name, &DeleteParams::background()).await {
        Ok(_) => Ok(()),
        Err(e) if is_not_found(&e) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
    use workloadbuilder::{AllowList, PolicyOption, SchedulingConfig, WorkloadBuilder, WorkloadItem};

    #[test]
    fn template_pointers() {
        let owner = OwnerReference {
            api_version: "jobset.x-k8s.io/v1alpha2".into(),
            kind: "JobSet".into(),
            name: "js".into(),
            uid: "u".into(),
            controller: Some(true),
            block_owner_deletion: None,
        };
        let root = WorkloadItem::new("root")
            .with_default(SchedulingConfig::basic())
            .with_child(WorkloadItem::new("a").with_default(SchedulingConfig::gang(Some(2))))
            .with_child(
                WorkloadItem::new("mid")
                    .with_default(SchedulingConfig::basic())
                    .with_child(WorkloadItem::new("b").with_default(SchedulingConfig::gang(Some(3)))),
            );
        let wl = WorkloadBuilder::new(root)
            .allow(AllowList::new().policies([PolicyOption::Basic, PolicyOption::Gang]))
            .build("w", "ns", &owner)
            .unwrap();
        assert_eq!(
            template_pointer(&wl, "a").as_deref(),
            Some("/spec/compositePodGroupTemplates/0/podGroupTemplates/0")
        );
        assert_eq!(
            template_pointer(&wl, "b").as_deref(),
            Some("/spec/compositePodGroupTemplates/0/compositePodGroupTemplates/0/podGroupTemplates/0")
        );
        assert_eq!(template_pointer(&wl, "nope"), None);
        assert_eq!(template_min_count(&wl, "b"), Some(3));
    }

    #[test]
    fn ownership_checks() {
        let mut meta = ObjectMeta::default();
        mark_managed(&mut meta, "kwas.dev/job-controller");
        assert!(is_managed_by(&meta, "kwas.dev/job-controller"));
        assert!(!is_owned(&meta, "kwas.dev/job-controller", "u"));
        meta.owner_references = Some(vec![OwnerReference {
            api_version: "batch/v1".into(),
            kind: "Job".into(),
            name: "j".into(),
            uid: "u".into(),
            controller: Some(true),
            block_owner_deletion: None,
        }]);
        assert!(is_owned(&meta, "kwas.dev/job-controller", "u"));
    }
}
