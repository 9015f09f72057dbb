//! The API operations (get, list, create, update, patch, delete, deletecollection) over the store, with
//! kube-apiserver's semantics: resourceVersion preconditions, generateName, uid and timestamps, generation
//! bumps on spec changes only, status subresources, graceful pod deletion, finalizers, propagation
//! policies, and admission. Synchronous: the in-process components (kubelet, garbage collector, node
//! management) call these under the cluster lock; the HTTP layer writes through [`guaranteed`](crate::cluster::guaranteed), which
//! takes the lock only for the steps that read or change the store (see [`write`]).

mod delete;
mod read;
pub(crate) mod subresources;
pub(crate) mod write;

use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::error::ApiError;
use crate::meta;
use crate::request::RequestContext;
use crate::resource::{ApiSettings, Effect, GroupResource, Propagation, Registry, ResourceInfo};
use crate::selectors::{FieldSelector, LabelSelector};
use crate::store::{ObjectRef, Store};
use crate::work::{GcItem, WorkQueue};

use read::ContinueCache;

/// The finalizer the garbage collector uses for foreground deletion.
pub(crate) const FOREGROUND_FINALIZER: &str = "foregroundDeletion";
/// The finalizer the garbage collector uses for orphaning deletion.
pub(crate) const ORPHAN_FINALIZER: &str = "orphan";
/// Options of a delete request (the `DeleteOptions` body and query parameters).
#[derive(Debug, Clone, Default)]
pub(crate) struct DeleteOptions {
    /// `gracePeriodSeconds`.
    pub grace_period_seconds: Option<i64>,
    /// `propagationPolicy` (or the deprecated `orphanDependents`).
    pub propagation: Option<Propagation>,
    /// `preconditions.uid`.
    pub precondition_uid: Option<String>,
    /// `preconditions.resourceVersion`.
    pub precondition_rv: Option<String>,
    /// `dryRun=All`.
    pub dry_run: bool,
}

impl DeleteOptions {
    /// Reads a `DeleteOptions` JSON body (missing fields stay unset).
    pub(crate) fn from_body(body: &Value) -> Result<Self, ApiError> {
        let mut o = DeleteOptions::default();
        if let Some(g) = body.get("gracePeriodSeconds").and_then(Value::as_i64) {
            o.grace_period_seconds = Some(g);
        }
        if let Some(p) = body.get("propagationPolicy").and_then(Value::as_str) {
            o.propagation = Some(parse_propagation(p)?);
        } else if let Some(orphan) = body.get("orphanDependents").and_then(Value::as_bool) {
            o.propagation = Some(if orphan {
                Propagation::Orphan
            } else {
                Propagation::Background
            });
        }
        if let Some(pre) = body.get("preconditions") {
            o.precondition_uid = pre.get("uid").and_then(Value::as_str).map(str::to_string);
            o.precondition_rv = pre.get("resourceVersion").and_then(Value::as_str).map(str::to_string);
        }
        if let Some(d) = body.get("dryRun").and_then(Value::as_array) {
            o.dry_run = d.iter().any(|v| v == "All");
        }
        Ok(o)
    }
}

/// Parses a propagation policy name.
pub(crate) fn parse_propagation(p: &str) -> Result<Propagation, ApiError> {
    match p {
        "Background" => Ok(Propagation::Background),
        "Foreground" => Ok(Propagation::Foreground),
        "Orphan" => Ok(Propagation::Orphan),
        other => Err(ApiError::bad_request(format!(
            "propagationPolicy: Unsupported value: {other:?}: supported values: \"Foreground\", \"Background\", \"Orphan\""
        ))),
    }
}

/// The patch types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PatchType {
    /// `application/json-patch+json`.
    Json,
    /// `application/merge-patch+json`.
    Merge,
    /// `application/strategic-merge-patch+json`.
    Strategic,
    /// `application/apply-patch+yaml` (server-side apply).
    Apply,
}

/// A list request's parameters.
#[derive(Debug, Clone, Default)]
pub(crate) struct ListOptions {
    /// `labelSelector`.
    pub label_selector: LabelSelector,
    /// `fieldSelector`.
    pub field_selector: FieldSelector,
    /// `limit` (0 = no limit).
    pub limit: usize,
    /// `continue`.
    pub continue_token: Option<String>,
    /// `resourceVersion`.
    pub resource_version: Option<String>,
    /// `resourceVersionMatch`.
    pub resource_version_match: Option<String>,
}

/// The result of a list.
#[derive(Debug, Clone)]
pub(crate) struct ListResult {
    /// The matching objects, in storage form.
    pub items: Vec<Arc<Value>>,
    /// The list's resourceVersion.
    pub resource_version: u64,
    /// The continue token, when more items remain.
    pub continue_token: Option<String>,
    /// `remainingItemCount`, when known.
    pub remaining: Option<usize>,
}

/// What kind of deletion happened.
#[derive(Debug, Clone)]
pub(crate) enum Deleted {
    /// The object is gone; this was its last state.
    Removed(Arc<Value>),
    /// The object is being deleted (finalizers, graceful deletion, foreground); this is its current state.
    Pending(Arc<Value>),
}

impl Deleted {
    /// The object in either case.
    pub(crate) fn object(&self) -> &Arc<Value> {
        match self {
            Deleted::Removed(o) | Deleted::Pending(o) => o,
        }
    }
}

/// The cluster state: store, registry and the controllers' work queue.
#[derive(Debug)]
pub(crate) struct State {
    /// The object store.
    pub store: Store,
    /// The served resources.
    pub registry: Registry,
    /// Work for the built-in controllers (see [`State::enqueue`] and [`State::next_gc_item`]).
    work: WorkQueue,
    /// API behaviour settings.
    pub settings: ApiSettings,
    continues: ContinueCache,
    name_rng: fastrand::Rng,
}

pub(crate) const GENERATE_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// The unit tests' state: wired with every built-in kind, as `DevCluster::start` wires it.
#[cfg(test)]
impl State {
    /// A fresh state serving every built-in kind.
    pub(crate) fn new(history_limit: usize, settings: ApiSettings) -> Self {
        Self::with_resources(history_limit, settings, crate::kinds::builtin_resources())
    }
}

impl State {
    /// A fresh state serving `resources` (the kinds' registry, injected: this layer knows no kind), with
    /// the default namespaces and system priority classes.
    pub(crate) fn with_resources(history_limit: usize, settings: ApiSettings, resources: Vec<ResourceInfo>) -> Self {
        let mut s = State {
            store: Store::new(history_limit),
            registry: Registry::new(resources),
            work: WorkQueue::default(),
            settings,
            continues: ContinueCache::default(),
            name_rng: fastrand::Rng::new(),
        };
        s.bootstrap();
        s
    }

    fn bootstrap(&mut self) {
        let mut ctx = RequestContext::manager("kube-apiserver");
        let Some(ns_res) = self.registry.get("", "v1", "namespaces") else {
            return;
        };
        for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
            let _ = self.create(&ns_res, "", json!({"metadata": {"name": ns}}), &mut ctx);
        }
        let Some(pc) = self.registry.get("scheduling.k8s.io", "v1", "priorityclasses") else {
            return;
        };
        for (name, value, desc) in [
            (
                "system-node-critical",
                2_000_001_000,
                "Used for system critical pods that must not be moved from their current node.",
            ),
            (
                "system-cluster-critical",
                2_000_000_000,
                "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
            ),
        ] {
            let _ = self.create(
                &pc,
                "",
                json!({"metadata": {"name": name}, "value": value, "description": desc, "preemptionPolicy": "PreemptLowerPriority"}),
                &mut ctx,
            );
        }
    }

    /// Queues work for the garbage collector; an item already waiting is not queued twice.
    pub(crate) fn enqueue(&mut self, item: GcItem) {
        self.work.push(item);
    }

    /// The next queued garbage-collector item.
    pub(crate) fn next_gc_item(&mut self) -> Option<GcItem> {
        self.work.pop()
    }

    /// Whether garbage-collector work is waiting.
    pub(crate) fn gc_pending(&self) -> bool {
        !self.work.is_empty()
    }

    /// Looks up a served resource.
    pub(crate) fn resource(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceInfo>> {
        self.registry.get(group, version, plural)
    }

    /// Looks up a built-in resource by group and plural (its only version).
    pub(crate) fn builtin(&self, group: &str, plural: &str) -> Option<Arc<ResourceInfo>> {
        self.registry.by_group_resource(&GroupResource::new(group, plural))
    }

    /// Carries out what a kind's hooks asked for.
    fn apply_effects(&mut self, effects: Vec<Effect>) {
        for effect in effects {
            match effect {
                Effect::Gc(item) => self.enqueue(item),
                Effect::ServeCustom {
                    group,
                    plural,
                    mut infos,
                    preferred,
                } => {
                    // A version converted by webhook reaches the handler registered for its address.
                    for info in &mut infos {
                        if let Some(c) = &mut info.conversion {
                            let handler = self.settings.conversion_webhooks.find(&c.address);
                            Arc::make_mut(c).handler = handler;
                        }
                    }
                    let stop = infos.is_empty();
                    let changed = self.registry.set_custom(&group, &plural, infos, preferred.as_deref());
                    if stop && changed {
                        self.store.drop_resource(&GroupResource::new(&group, &plural));
                    }
                }
            }
        }
    }

    /// After a write: the kind's hook, and a dependent whose owners are all gone by the time it is
    /// written is collected too.
    fn after_write(&mut self, res: &ResourceInfo, old: Option<&Value>, stored: &Arc<Value>) {
        let mut effects = Vec::new();
        res.strategy.after_write(stored, &mut effects);
        self.apply_effects(effects);
        if old.is_none() || old.is_some_and(|o| meta::owner_refs(o) != meta::owner_refs(stored)) {
            for owner in meta::owner_refs(stored) {
                if self.store.get_by_uid(&owner.uid).is_none() {
                    self.enqueue(GcItem::OwnerGone(owner.uid));
                }
            }
        }
    }
}

/// The namespace a request addresses: cluster-scoped resources ignore it.
pub(crate) fn ns_of<'a>(res: &ResourceInfo, namespace: &'a str) -> &'a str {
    if res.namespaced { namespace } else { "" }
}

/// The reference of a stored object.
pub(crate) fn object_ref(res: &ResourceInfo, obj: &Value) -> ObjectRef {
    ObjectRef {
        gr: res.storage.clone(),
        namespace: meta::namespace(obj).to_string(),
        name: meta::name(obj).to_string(),
    }
}

/// Whether the object's type matches the resource (kind and apiVersion, when the body sets them).
fn check_type(res: &ResourceInfo, obj: &Value) -> Result<(), ApiError> {
    if let Some(kind) = obj.get("kind").and_then(Value::as_str)
        && !kind.is_empty()
        && kind != res.kind
    {
        return Err(ApiError::bad_request(format!(
            "the kind in the data ({kind}) does not match the expected kind ({})",
            res.kind
        )));
    }
    if let Some(av) = obj.get("apiVersion").and_then(Value::as_str)
        && !av.is_empty()
        && av != res.api_version()
        && !res.strategy.accepts_api_version(av)
    {
        let (g, _) = crate::resource::split_api_version(av);
        if g != res.group {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({av}) does not match the expected API version ({})",
                res.api_version()
            )));
        }
    }
    // Every kind's metadata decodes as ObjectMeta (kube-apiserver decodes it for custom resources too), so
    // no typed client's informer is ever handed an object it cannot decode.
    if let Some(m) = obj.get("metadata")
        && let Err(e) =
            <k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta as serde::Deserialize>::deserialize(m)
    {
        return Err(ApiError::bad_request(format!(
            "{kind} in version \"{version}\" cannot be handled as a {kind}: metadata: {e}",
            kind = res.kind,
            version = res.version,
        )));
    }
    Ok(())
}

/// Whether anything but metadata and status changed.
fn spec_changed(old: &Value, new: &Value) -> bool {
    let strip = |v: &Value| -> Map<String, Value> {
        v.as_object()
            .map(|m| {
                m.iter()
                    .filter(|(k, _)| !matches!(k.as_str(), "metadata" | "status" | "apiVersion" | "kind"))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default()
    };
    strip(old) != strip(new)
}

/// Equal apart from resourceVersion and managedFields (a no-op write).
fn same_ignoring_rv(old: &Value, new: &Value) -> bool {
    let mut a = old.clone();
    let mut b = new.clone();
    for v in [&mut a, &mut b] {
        let m = meta::metadata_mut(v);
        m.remove("resourceVersion");
        m.remove("managedFields");
        if let Some(o) = v.as_object_mut() {
            o.remove("apiVersion");
            o.remove("kind");
        }
    }
    a == b
}

fn grace_is_zero(obj: &Value) -> bool {
    meta::metadata(obj)
        .and_then(|m| m.get("deletionGracePeriodSeconds"))
        .and_then(Value::as_i64)
        .unwrap_or(0)
        == 0
}

/// Drops empty metadata collections the way the apiserver's serializer omits them.
fn normalize_metadata(obj: &mut Value) {
    let m = meta::metadata_mut(obj);
    for k in [
        "labels",
        "annotations",
        "finalizers",
        "ownerReferences",
        "managedFields",
    ] {
        let empty = match m.get(k) {
            Some(Value::Object(o)) => o.is_empty(),
            Some(Value::Array(a)) => a.is_empty(),
            Some(Value::Null) => true,
            _ => false,
        };
        if empty {
            m.remove(k);
        }
    }
}
