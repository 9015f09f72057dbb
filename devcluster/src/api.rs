//! The API operations (get, list, create, update, patch, delete, deletecollection) over the store, with
//! kube-apiserver's semantics: resourceVersion preconditions, generateName, uid and timestamps, generation
//! bumps on spec changes only, status subresources, graceful pod deletion, finalizers, propagation
//! policies, and admission. Synchronous: the HTTP layer and the in-process components (kubelet, garbage
//! collector, node management) call these under the cluster lock.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::admission::{self, Operation};
use crate::apply;
use crate::error::{ApiError, FieldCause};
use crate::meta;
use crate::resources::{Builtin, GroupResource, Registry, ResourceInfo};
use crate::selectors::{FieldSelector, LabelSelector};
use crate::store::{ObjectRef, Store};

/// The finalizer the garbage collector uses for foreground deletion.
pub const FOREGROUND_FINALIZER: &str = "foregroundDeletion";
/// The finalizer the garbage collector uses for orphaning deletion.
pub const ORPHAN_FINALIZER: &str = "orphan";
/// The namespace finalizer (in `spec.finalizers`) the namespace controller removes.
pub const NAMESPACE_FINALIZER: &str = "kubernetes";
/// The CRD finalizer removed once all custom resources are gone.
pub const CRD_CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// How strictly unknown fields in a request body are treated (`fieldValidation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FieldValidation {
    /// Drop unknown fields silently.
    Ignore,
    /// Drop unknown fields and warn (the default).
    #[default]
    Warn,
    /// Reject requests with unknown fields.
    Strict,
}

/// The per-request context of a write: its options (`dryRun`, `fieldManager`, `fieldValidation`, `force`)
/// and what handling it produces besides the object (warnings for the `Warning` header). Every write takes
/// its own context, so nothing a request sets leaks into another (an in-process component such as the
/// kubelet or the garbage collector writes with [`RequestContext::manager`]).
#[derive(Debug, Clone, Default)]
pub struct RequestContext {
    /// `dryRun=All`: run everything, persist nothing.
    pub dry_run: bool,
    /// The field manager (`fieldManager`, or derived from the User-Agent).
    pub field_manager: String,
    /// `fieldValidation`.
    pub field_validation: FieldValidation,
    /// `force` for server-side apply.
    pub force: bool,
    /// Warnings collected while handling the request.
    pub warnings: Vec<String>,
}

impl RequestContext {
    /// Options for an in-process component writing as `manager`.
    pub fn manager(manager: &str) -> Self {
        RequestContext {
            field_manager: manager.to_string(),
            ..Default::default()
        }
    }
}

/// The deletion propagation policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Propagation {
    /// Dependents are deleted in the background after the owner.
    Background,
    /// The owner stays (with `foregroundDeletion`) until its blocking dependents are gone.
    Foreground,
    /// Dependents lose their ownerReference and stay.
    Orphan,
}

/// Options of a delete request (the `DeleteOptions` body and query parameters).
#[derive(Debug, Clone, Default)]
pub struct DeleteOptions {
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
    pub fn from_body(body: &Value) -> Result<Self, ApiError> {
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
pub fn parse_propagation(p: &str) -> Result<Propagation, ApiError> {
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
pub enum PatchType {
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
pub struct ListOptions {
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
pub struct ListResult {
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
pub enum Deleted {
    /// The object is gone; this was its last state.
    Removed(Arc<Value>),
    /// The object is being deleted (finalizers, graceful deletion, foreground); this is its current state.
    Pending(Arc<Value>),
}

impl Deleted {
    /// The object in either case.
    pub fn object(&self) -> &Arc<Value> {
        match self {
            Deleted::Removed(o) | Deleted::Pending(o) => o,
        }
    }
}

/// Work the garbage collector and namespace controller pick up.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum GcItem {
    /// An object with this uid is gone: its dependents may be orphaned.
    OwnerGone(String),
    /// An object being deleted in the foreground: delete its dependents, then drop the finalizer.
    Foreground(ObjectRef),
    /// An object being deleted with orphaning: release its dependents, then drop the finalizer.
    Orphan(ObjectRef),
    /// A namespace being deleted: delete its content, then the namespace.
    Namespace(String),
    /// A CRD being deleted: delete its custom resources, then the CRD.
    CrdCleanup(String),
}

/// Cached list snapshots for `continue` tokens.
#[derive(Debug, Default)]
struct ContinueCache {
    snapshots: HashMap<u64, (std::time::Instant, u64, Vec<Arc<Value>>)>,
    next_id: u64,
}

const CONTINUE_TTL: std::time::Duration = std::time::Duration::from_secs(300);
const CONTINUE_MAX: usize = 64;

/// Settings of the API behaviour.
#[derive(Debug, Clone)]
pub struct ApiSettings {
    /// Whether PodGroups and CompositePodGroups get the `scheduling.k8s.io/podgroup-protection` finalizer
    /// on create (and the protection controller removes it).
    pub podgroup_protection: bool,
    /// Whether a Job's `spec.scheduling` is validated on create and update (kube-apiserver with the
    /// WorkloadWithJob gate does). Off, any block is stored and the Job controller meets it.
    pub job_scheduling_validation: bool,
}

impl Default for ApiSettings {
    fn default() -> Self {
        ApiSettings {
            podgroup_protection: true,
            job_scheduling_validation: true,
        }
    }
}

/// The cluster state: store, registry and the controllers' work queue.
#[derive(Debug)]
pub struct State {
    /// The object store.
    pub store: Store,
    /// The served resources.
    pub registry: Registry,
    /// Work for the garbage collector (see [`State::enqueue`] and [`State::next_gc_item`]).
    gc_queue: VecDeque<GcItem>,
    gc_pending: HashSet<GcItem>,
    /// API behaviour settings.
    pub settings: ApiSettings,
    continues: ContinueCache,
    name_rng: fastrand::Rng,
}

const GENERATE_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

impl State {
    /// A fresh state with the default namespaces and system priority classes.
    pub fn new(history_limit: usize, settings: ApiSettings) -> Self {
        let mut s = State {
            store: Store::new(history_limit),
            registry: Registry::new(),
            gc_queue: VecDeque::new(),
            gc_pending: HashSet::new(),
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
    pub fn enqueue(&mut self, item: GcItem) {
        if self.gc_pending.insert(item.clone()) {
            self.gc_queue.push_back(item);
        }
    }

    /// The next queued garbage-collector item.
    pub fn next_gc_item(&mut self) -> Option<GcItem> {
        let item = self.gc_queue.pop_front()?;
        self.gc_pending.remove(&item);
        Some(item)
    }

    /// Whether garbage-collector work is waiting.
    pub fn gc_pending(&self) -> bool {
        !self.gc_queue.is_empty()
    }

    /// Looks up a served resource.
    pub fn resource(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceInfo>> {
        self.registry.get(group, version, plural)
    }

    /// Looks up a built-in resource by group and plural (its only version).
    pub fn builtin(&self, group: &str, plural: &str) -> Option<Arc<ResourceInfo>> {
        self.registry.by_group_resource(&GroupResource::new(group, plural))
    }

    // ----- reads -----

    /// get.
    pub fn get(&self, res: &ResourceInfo, namespace: &str, name: &str) -> Result<Arc<Value>, ApiError> {
        self.store
            .get(&res.storage, ns_of(res, namespace), name)
            .ok_or_else(|| ApiError::not_found(&res.group, &res.plural, name))
    }

    /// list, with selectors and limit/continue.
    pub fn list(
        &mut self,
        res: &ResourceInfo,
        namespace: Option<&str>,
        opts: &ListOptions,
    ) -> Result<ListResult, ApiError> {
        let (snapshot_rv, candidates, skip) = match &opts.continue_token {
            Some(token) if !token.is_empty() => {
                let (id, offset) = parse_continue(token)?;
                self.expire_continues();
                let Some((_, rv, items)) = self.continues.snapshots.get(&id) else {
                    return Err(ApiError::expired(
                        "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
                    ));
                };
                (*rv, items.clone(), offset)
            }
            _ => {
                if let (Some(rv), Some("Exact")) = (&opts.resource_version, opts.resource_version_match.as_deref()) {
                    let want: u64 = rv
                        .parse()
                        .map_err(|_| ApiError::bad_request(format!("invalid resource version: {rv}")))?;
                    if want != self.store.current_rv() {
                        return Err(ApiError::expired(format!(
                            "too old resource version: {want} ({})",
                            self.store.current_rv()
                        )));
                    }
                }
                let ns = namespace.map(|n| ns_of(res, n));
                // An equality requirement narrows the candidates through the label index.
                let base = match opts.label_selector.equality() {
                    Some((k, v)) => self.store.list_labeled(&res.storage, ns, k, v),
                    None => self.store.list(&res.storage, ns),
                };
                let all: Vec<Arc<Value>> = base
                    .into_iter()
                    .filter(|o| opts.label_selector.matches(o) && field_matches(res, &opts.field_selector, o))
                    .collect();
                (self.store.current_rv(), all, 0)
            }
        };
        let total = candidates.len();
        let end = if opts.limit > 0 {
            (skip + opts.limit).min(total)
        } else {
            total
        };
        let items = candidates[skip.min(total)..end].to_vec();
        let (continue_token, remaining) = if end < total {
            let id = match &opts.continue_token {
                Some(t) if !t.is_empty() => parse_continue(t)?.0,
                _ => {
                    self.continues.next_id += 1;
                    let id = self.continues.next_id;
                    if self.continues.snapshots.len() >= CONTINUE_MAX
                        && let Some(oldest) = self
                            .continues
                            .snapshots
                            .iter()
                            .min_by_key(|(_, (t, _, _))| *t)
                            .map(|(k, _)| *k)
                    {
                        self.continues.snapshots.remove(&oldest);
                    }
                    self.continues
                        .snapshots
                        .insert(id, (std::time::Instant::now(), snapshot_rv, candidates));
                    id
                }
            };
            (Some(format!("{id}-{end}")), Some(total - end))
        } else {
            (None, None)
        };
        Ok(ListResult {
            items,
            resource_version: snapshot_rv,
            continue_token,
            remaining,
        })
    }

    fn expire_continues(&mut self) {
        let now = std::time::Instant::now();
        self.continues
            .snapshots
            .retain(|_, (t, _, _)| now.duration_since(*t) < CONTINUE_TTL);
    }

    // ----- create -----

    /// create.
    pub fn create(
        &mut self,
        res: &ResourceInfo,
        namespace: &str,
        body: Value,
        ctx: &mut RequestContext,
    ) -> Result<Arc<Value>, ApiError> {
        let mut obj = body;
        if !obj.is_object() {
            return Err(ApiError::bad_request("the body of the request must be a JSON object"));
        }
        check_type(res, &obj)?;
        let namespace = ns_of(res, namespace).to_string();
        if res.namespaced {
            let body_ns = meta::namespace(&obj).to_string();
            if !body_ns.is_empty() && body_ns != namespace {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            self.check_namespace_open(res, &namespace, meta::name(&obj))?;
        }
        {
            let m = meta::metadata_mut(&mut obj);
            if res.namespaced {
                m.insert("namespace".into(), Value::String(namespace.clone()));
            } else {
                m.remove("namespace");
            }
            for k in [
                "uid",
                "resourceVersion",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "selfLink",
            ] {
                m.remove(k);
            }
            m.insert("uid".into(), Value::String(uuid::Uuid::new_v4().to_string()));
            m.insert("creationTimestamp".into(), Value::String(meta::now_rfc3339()));
            if has_generation(res) {
                m.insert("generation".into(), json!(1));
            } else {
                m.remove("generation");
            }
        }
        let name = meta::name(&obj).to_string();
        if name.is_empty() {
            let generate = meta::meta_str(&obj, "generateName").unwrap_or("").to_string();
            if generate.is_empty() {
                return Err(ApiError::invalid(
                    &res.group,
                    &res.kind,
                    "",
                    vec![FieldCause::required(
                        "metadata.name",
                        "name or generateName is required",
                    )],
                ));
            }
            let mut candidate;
            loop {
                let suffix: String = (0..5)
                    .map(|_| GENERATE_ALPHABET[self.name_rng.usize(..GENERATE_ALPHABET.len())] as char)
                    .collect();
                let base: String = generate.chars().take(58).collect();
                candidate = format!("{base}{suffix}");
                if self.store.get(&res.storage, &namespace, &candidate).is_none() {
                    break;
                }
            }
            meta::metadata_mut(&mut obj).insert("name".into(), Value::String(candidate));
        }
        let name = meta::name(&obj).to_string();
        if self.store.get(&res.storage, &namespace, &name).is_some() {
            return Err(ApiError::already_exists(&res.group, &res.plural, &name));
        }
        if res.status_subresource
            && !matches!(res.builtin, Some(Builtin::Node | Builtin::Namespace | Builtin::Crd))
            && let Some(m) = obj.as_object_mut()
        {
            m.remove("status");
        }
        admission::admit(self, ctx, res, Operation::Create, None, &mut obj, None)?;
        normalize_metadata(&mut obj);
        apply::record_update(res, None, &mut obj, &ctx.field_manager, None, "Update");
        if ctx.dry_run {
            return Ok(Arc::new(obj));
        }
        let stored = self.store.put(&res.storage, obj);
        self.after_write(res, None, &stored);
        Ok(stored)
    }

    /// Refuses writes into missing or terminating namespaces.
    fn check_namespace_open(&self, res: &ResourceInfo, namespace: &str, name: &str) -> Result<(), ApiError> {
        if namespace.is_empty() {
            return Err(ApiError::bad_request(
                "the server could not find the requested resource: a namespace is required",
            ));
        }
        let ns_gr = GroupResource::new("", "namespaces");
        match self.store.get(&ns_gr, "", namespace) {
            None => Err(ApiError::not_found("", "namespaces", namespace)),
            Some(ns) if meta::is_deleting(&ns) && res.builtin != Some(Builtin::Event) => Err(ApiError::forbidden(
                &res.group,
                &res.plural,
                name,
                &format!("unable to create new content in namespace {namespace} because it is being terminated"),
            )),
            Some(_) => Ok(()),
        }
    }

    // ----- update -----

    /// update (PUT), of the main resource or its `status` subresource.
    pub fn update(
        &mut self,
        res: &ResourceInfo,
        namespace: &str,
        name: &str,
        body: Value,
        subresource: Option<&str>,
        ctx: &mut RequestContext,
    ) -> Result<Arc<Value>, ApiError> {
        if !body.is_object() {
            return Err(ApiError::bad_request("the body of the request must be a JSON object"));
        }
        check_type(res, &body)?;
        let body_name = meta::name(&body);
        if !body_name.is_empty() && body_name != name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        let old = self.get(res, namespace, name)?;
        let body_rv = meta::resource_version(&body);
        if !body_rv.is_empty() && body_rv != meta::resource_version(&old) {
            return Err(ApiError::stale(&res.group, &res.plural, name));
        }
        let body_uid = meta::uid(&body);
        if !body_uid.is_empty() && body_uid != meta::uid(&old) {
            return Err(ApiError::conflict(
                &res.group,
                &res.plural,
                name,
                &format!(
                    "Precondition failed: UID in precondition: {body_uid}, UID in object meta: {}",
                    meta::uid(&old)
                ),
            ));
        }
        self.write_update(res, old, body, subresource, ctx, "Update")
    }

    /// The shared tail of update and patch: merges with the stored object according to the subresource,
    /// keeps system metadata, bumps generation on spec changes, admits, and writes (or removes an object
    /// whose last finalizer went away).
    fn write_update(
        &mut self,
        res: &ResourceInfo,
        old: Arc<Value>,
        body: Value,
        subresource: Option<&str>,
        ctx: &mut RequestContext,
        operation: &str,
    ) -> Result<Arc<Value>, ApiError> {
        let mut new = match subresource {
            Some("status") => {
                let mut n = (*old).clone();
                if let Some(m) = n.as_object_mut() {
                    match body.get("status") {
                        Some(s) => m.insert("status".into(), s.clone()),
                        None => m.remove("status"),
                    };
                }
                n
            }
            Some(other) => {
                return Err(ApiError::method_not_allowed(format!(
                    "subresource {other} does not support this verb"
                )));
            }
            None => {
                let mut n = body;
                if res.status_subresource
                    && let Some(m) = n.as_object_mut()
                {
                    match old.get("status") {
                        Some(s) => m.insert("status".into(), s.clone()),
                        None => m.remove("status"),
                    };
                }
                n
            }
        };
        // System-owned metadata always comes from the stored object.
        {
            let old_meta = meta::metadata(&old).cloned().unwrap_or_default();
            let m = meta::metadata_mut(&mut new);
            for k in [
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "generation",
                "namespace",
                "name",
                "generateName",
            ] {
                match old_meta.get(k) {
                    Some(v) => m.insert(k.into(), v.clone()),
                    None => m.remove(k),
                };
            }
            m.remove("selfLink");
            if subresource == Some("status") {
                // The status subresource changes nothing but status.
            }
            // A request may reset managedFields with `[{}]`; otherwise they are the stored ones.
            let reset = m.get("managedFields").is_some_and(|v| v == &json!([{}]));
            match (reset, old_meta.get("managedFields")) {
                // Server-side apply computed the new ownership itself.
                _ if operation == "Apply" => {}
                (true, _) => {
                    m.remove("managedFields");
                }
                (false, Some(mf)) => {
                    m.insert("managedFields".into(), mf.clone());
                }
                (false, None) => {
                    m.remove("managedFields");
                }
            }
        }
        if meta::is_deleting(&old) {
            // While deleting, finalizers may only be removed, not added.
            let old_f = meta::finalizers(&old);
            let new_f = meta::finalizers(&new);
            if let Some(added) = new_f.iter().find(|f| !old_f.contains(f)) {
                return Err(ApiError::invalid(
                    &res.group,
                    &res.kind,
                    meta::name(&old),
                    vec![FieldCause::forbidden(
                        "metadata.finalizers",
                        &format!(
                            "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{added:?}}}"
                        ),
                    )],
                ));
            }
        }
        if has_generation(res) && subresource.is_none() && spec_changed(&old, &new) {
            let g = meta::metadata(&old)
                .and_then(|m| m.get("generation"))
                .and_then(Value::as_i64)
                .unwrap_or(1);
            meta::metadata_mut(&mut new).insert("generation".into(), json!(g + 1));
        }
        admission::admit(self, ctx, res, Operation::Update, Some(&old), &mut new, subresource)?;
        normalize_metadata(&mut new);
        // No-op writes do not take a new resourceVersion.
        if same_ignoring_rv(&old, &new) {
            return Ok(old);
        }
        apply::record_update(res, Some(&old), &mut new, &ctx.field_manager, subresource, operation);
        if ctx.dry_run {
            return Ok(Arc::new(new));
        }
        if meta::is_deleting(&new) && meta::finalizers(&new).is_empty() && grace_is_zero(&new) {
            let removed = self.remove_now(res, meta::namespace(&new), meta::name(&new));
            return removed.ok_or_else(|| ApiError::not_found(&res.group, &res.plural, meta::name(&old)));
        }
        let stored = self.store.put(&res.storage, new);
        self.after_write(res, Some(&old), &stored);
        Ok(stored)
    }

    // ----- patch -----

    /// patch, of the main resource or its `status` subresource; server-side apply creates missing objects.
    #[allow(clippy::too_many_arguments)]
    pub fn patch(
        &mut self,
        res: &ResourceInfo,
        namespace: &str,
        name: &str,
        patch_type: PatchType,
        patch: &Value,
        subresource: Option<&str>,
        ctx: &mut RequestContext,
    ) -> Result<Arc<Value>, ApiError> {
        let existing = self.store.get(&res.storage, ns_of(res, namespace), name);
        if patch_type == PatchType::Apply {
            if ctx.field_manager.is_empty() {
                return Err(ApiError::bad_request(
                    "PATCH, application/apply-patch+yaml requires fieldManager to be set",
                ));
            }
            let Some(old) = existing else {
                if subresource.is_some() {
                    return Err(ApiError::not_found(&res.group, &res.plural, name));
                }
                let obj = apply::apply_create(res, namespace, name, patch, &ctx.field_manager)?;
                let manager = std::mem::take(&mut ctx.field_manager);
                let created = self.create(res, namespace, obj, ctx);
                ctx.field_manager = manager;
                return created;
            };
            let view = crate::convert::present(res, &old);
            let new = apply::apply(res, &view, patch, &ctx.field_manager, ctx.force, subresource)?;
            let new = crate::convert::to_storage(res, new);
            let manager = std::mem::take(&mut ctx.field_manager);
            let written = self.write_update(res, old, new, subresource, ctx, "Apply");
            ctx.field_manager = manager;
            return written;
        }
        let Some(old) = existing else {
            return Err(ApiError::not_found(&res.group, &res.plural, name));
        };
        if patch_type == PatchType::Strategic && res.schema.is_some() {
            return Err(ApiError::unsupported_media_type(
                "application/strategic-merge-patch+json",
            ));
        }
        let mut view = crate::convert::present(res, &old);
        let result = match patch_type {
            PatchType::Json => crate::patch::json_patch(&mut view, patch),
            PatchType::Merge => crate::patch::merge_patch(&mut view, patch),
            PatchType::Strategic => crate::patch::strategic_merge_patch(&mut view, patch),
            PatchType::Apply => Ok(()),
        };
        result.map_err(|e| {
            ApiError::new(
                422,
                "Invalid",
                format!(
                    "the server rejected our request due to an error in our request: {}",
                    e.0
                ),
                None,
            )
        })?;
        let new = crate::convert::to_storage(res, view);
        check_type(res, &new)?;
        if meta::name(&new) != name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({}) does not match the name on the URL ({name})",
                meta::name(&new)
            )));
        }
        // A resourceVersion in the patch is a precondition.
        let patched_rv = meta::resource_version(&new);
        if !patched_rv.is_empty() && patched_rv != meta::resource_version(&old) {
            return Err(ApiError::stale(&res.group, &res.plural, name));
        }
        if meta::uid(&new) != meta::uid(&old) {
            return Err(ApiError::conflict(
                &res.group,
                &res.plural,
                name,
                &format!(
                    "Precondition failed: UID in precondition: {}, UID in object meta: {}",
                    meta::uid(&new),
                    meta::uid(&old)
                ),
            ));
        }
        self.write_update(res, old, new, subresource, ctx, "Update")
    }

    // ----- delete -----

    /// delete, with preconditions, graceful deletion for pods, finalizers and propagation.
    pub fn delete(
        &mut self,
        res: &ResourceInfo,
        namespace: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Deleted, ApiError> {
        let old = self.get(res, namespace, name)?;
        if let Some(uid) = &opts.precondition_uid
            && uid != meta::uid(&old)
        {
            return Err(ApiError::conflict(
                &res.group,
                &res.plural,
                name,
                &format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                    meta::uid(&old)
                ),
            ));
        }
        if let Some(rv) = &opts.precondition_rv
            && rv != meta::resource_version(&old)
        {
            return Err(ApiError::conflict(
                &res.group,
                &res.plural,
                name,
                &format!(
                    "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                    meta::resource_version(&old)
                ),
            ));
        }
        if opts.dry_run {
            return Ok(Deleted::Pending(old));
        }
        let mut obj = (*old).clone();
        let ns = meta::namespace(&old).to_string();

        if res.builtin == Some(Builtin::Namespace) {
            if !meta::is_deleting(&obj) {
                let m = meta::metadata_mut(&mut obj);
                m.insert("deletionTimestamp".into(), Value::String(meta::now_rfc3339()));
                m.insert("deletionGracePeriodSeconds".into(), json!(0));
                obj["status"]["phase"] = json!("Terminating");
                let stored = self.store.put(&res.storage, obj);
                self.enqueue(GcItem::Namespace(name.to_string()));
                return Ok(Deleted::Pending(stored));
            }
            return Ok(Deleted::Pending(old));
        }
        if res.builtin == Some(Builtin::Crd) && !meta::is_deleting(&obj) {
            let mut f = meta::finalizers(&obj);
            if !f.iter().any(|x| x == CRD_CLEANUP_FINALIZER) {
                f.push(CRD_CLEANUP_FINALIZER.to_string());
            }
            meta::set_finalizers(&mut obj, f);
        }

        let propagation = opts.propagation.unwrap_or(default_propagation(res));
        let mut finalizers = meta::finalizers(&obj);
        let deleting = meta::is_deleting(&obj);
        match propagation {
            Propagation::Foreground if !deleting => {
                if !finalizers.iter().any(|f| f == FOREGROUND_FINALIZER) {
                    finalizers.push(FOREGROUND_FINALIZER.into());
                }
                finalizers.retain(|f| f != ORPHAN_FINALIZER);
            }
            Propagation::Orphan if !deleting => {
                if !finalizers.iter().any(|f| f == ORPHAN_FINALIZER) {
                    finalizers.push(ORPHAN_FINALIZER.into());
                }
                finalizers.retain(|f| f != FOREGROUND_FINALIZER);
            }
            _ => {}
        }
        meta::set_finalizers(&mut obj, finalizers.clone());

        // Graceful deletion: bound, non-terminal pods wait for the kubelet.
        let grace = if res.builtin == Some(Builtin::Pod) {
            pod_grace_period(&old, opts.grace_period_seconds)
        } else {
            0
        };
        let was_grace = meta::metadata(&old)
            .and_then(|m| m.get("deletionGracePeriodSeconds"))
            .and_then(Value::as_i64);
        if grace == 0 && finalizers.is_empty() {
            let removed = self
                .remove_now(res, &ns, name)
                .ok_or_else(|| ApiError::not_found(&res.group, &res.plural, name))?;
            return Ok(Deleted::Removed(removed));
        }
        let shorten = was_grace.is_none_or(|g| grace < g);
        if !deleting || shorten {
            let m = meta::metadata_mut(&mut obj);
            let when = jiff::Timestamp::now() + jiff::SignedDuration::from_secs(grace);
            if !deleting || shorten {
                m.insert("deletionTimestamp".into(), Value::String(meta::format_time(when)));
                m.insert("deletionGracePeriodSeconds".into(), json!(grace));
            }
        }
        if same_ignoring_rv(&old, &obj) {
            return Ok(Deleted::Pending(old));
        }
        let stored = self.store.put(&res.storage, obj);
        let oref = object_ref(res, &stored);
        if finalizers.iter().any(|f| f == FOREGROUND_FINALIZER) {
            self.enqueue(GcItem::Foreground(oref.clone()));
        }
        if finalizers.iter().any(|f| f == ORPHAN_FINALIZER) {
            self.enqueue(GcItem::Orphan(oref.clone()));
        }
        if res.builtin == Some(Builtin::Crd) {
            self.enqueue(GcItem::CrdCleanup(name.to_string()));
        }
        Ok(Deleted::Pending(stored))
    }

    /// deletecollection.
    pub fn delete_collection(
        &mut self,
        res: &ResourceInfo,
        namespace: Option<&str>,
        list: &ListOptions,
        opts: &DeleteOptions,
    ) -> Result<Vec<Arc<Value>>, ApiError> {
        let items = self
            .list(
                res,
                namespace,
                &ListOptions {
                    limit: 0,
                    continue_token: None,
                    ..list.clone()
                },
            )?
            .items;
        let mut out = Vec::new();
        for item in items {
            match self.delete(res, meta::namespace(&item), meta::name(&item), opts) {
                Ok(d) => out.push(d.object().clone()),
                Err(e) if e.code() == 404 => {}
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    /// Removes an object for good and queues the follow-up work (dependents, waiting owners, namespace
    /// and CRD cleanup).
    pub fn remove_now(&mut self, res: &ResourceInfo, namespace: &str, name: &str) -> Option<Arc<Value>> {
        let removed = self.store.remove(&res.storage, namespace, name)?;
        let uid = meta::uid(&removed).to_string();
        if !uid.is_empty() {
            self.enqueue(GcItem::OwnerGone(uid));
        }
        for owner in meta::owner_refs(&removed) {
            if let Some((oref, o)) = self.store.get_by_uid(&owner.uid)
                && meta::finalizers(&o).iter().any(|f| f == FOREGROUND_FINALIZER)
            {
                self.enqueue(GcItem::Foreground(oref));
            }
        }
        if !namespace.is_empty()
            && let Some(ns) = self.store.get(&GroupResource::new("", "namespaces"), "", namespace)
            && meta::is_deleting(&ns)
        {
            self.enqueue(GcItem::Namespace(namespace.to_string()));
        }
        if res.builtin == Some(Builtin::Crd) {
            crate::crd::unregister(self, &removed);
        }
        if let Some(crd) = crate::crd::owning_crd_name(self, res)
            && self.store.count(&res.storage) == 0
        {
            self.enqueue(GcItem::CrdCleanup(crd));
        }
        Some(removed)
    }

    fn after_write(&mut self, res: &ResourceInfo, old: Option<&Value>, stored: &Arc<Value>) {
        if res.builtin == Some(Builtin::Crd) {
            crate::crd::register(self, stored);
        }
        // A dependent whose owners are all gone by the time it is written is collected too.
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
pub fn ns_of<'a>(res: &ResourceInfo, namespace: &'a str) -> &'a str {
    if res.namespaced { namespace } else { "" }
}

/// The reference of a stored object.
pub fn object_ref(res: &ResourceInfo, obj: &Value) -> ObjectRef {
    ObjectRef {
        gr: res.storage.clone(),
        namespace: meta::namespace(obj).to_string(),
        name: meta::name(obj).to_string(),
    }
}

fn parse_continue(token: &str) -> Result<(u64, usize), ApiError> {
    let bad = || ApiError::bad_request(format!("continue key is not valid: {token}"));
    let (id, off) = token.split_once('-').ok_or_else(bad)?;
    Ok((id.parse().map_err(|_| bad())?, off.parse().map_err(|_| bad())?))
}

/// Whether the field selector matches, reading fields from the presented form (events.k8s.io events use
/// their own field names).
fn field_matches(res: &ResourceInfo, sel: &FieldSelector, obj: &Value) -> bool {
    if sel.0.is_empty() {
        return true;
    }
    if res.builtin == Some(Builtin::EventV1) {
        return sel.matches(&crate::convert::present(res, obj));
    }
    sel.matches(obj)
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
        && !(matches!(res.builtin, Some(Builtin::Event | Builtin::EventV1)) && av == "v1")
    {
        let (g, _) = crate::resources::split_api_version(av);
        if g != res.group {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({av}) does not match the expected API version ({})",
                res.api_version()
            )));
        }
    }
    Ok(())
}

/// Whether objects of this resource carry `metadata.generation`.
fn has_generation(res: &ResourceInfo) -> bool {
    !matches!(
        res.builtin,
        Some(
            Builtin::Event
                | Builtin::EventV1
                | Builtin::ConfigMap
                | Builtin::Secret
                | Builtin::ServiceAccount
                | Builtin::Lease
        )
    )
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

/// The default propagation of a resource when the request names none: batch/v1 Jobs orphan their pods
/// (as upstream keeps for compatibility), everything else deletes dependents in the background.
fn default_propagation(res: &ResourceInfo) -> Propagation {
    if res.builtin == Some(Builtin::Job) {
        Propagation::Orphan
    } else {
        Propagation::Background
    }
}

/// A pod's effective grace period: 0 for unbound or terminal pods, else the request's or the pod's.
fn pod_grace_period(pod: &Value, requested: Option<i64>) -> i64 {
    let node = pod.pointer("/spec/nodeName").and_then(Value::as_str).unwrap_or("");
    let phase = pod.pointer("/status/phase").and_then(Value::as_str).unwrap_or("");
    if node.is_empty() || phase == "Succeeded" || phase == "Failed" {
        return 0;
    }
    let own = pod
        .pointer("/spec/terminationGracePeriodSeconds")
        .and_then(Value::as_i64)
        .unwrap_or(30);
    requested.unwrap_or(own).max(0)
}
