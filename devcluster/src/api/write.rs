//! Writes: create, update (PUT) and patch of the main resource or its `status` subresource, with
//! admission, generation, managedFields, no-op detection and dry runs.
//!
//! # What runs under the cluster lock
//!
//! A write is split into steps, so that nothing a request body can inflate runs under the lock that
//! every other request waits for. The steps work on the stored object as it was read (a snapshot, an
//! `Arc` of the stored value) and the lock is taken only for the steps that read or write the store:
//!
//! | step | lock | what |
//! |---|---|---|
//! | read | yes | the stored object (update, patch) |
//! | prepare | no | the patch applied ([`plan_patch`]), a PUT's preconditions ([`update_change`]), the body merged with the stored object per subresource, system metadata kept, the finalizer rule ([`merge_change`]); a create's server-set metadata ([`new_object`]) |
//! | admit | yes | the object re-checked unchanged; namespace, name and existence (create); admission, whose steps read the store (priority classes, other objects): linear in a body capped at 3 MiB |
//! | finish | no | the custom resource's CEL rules ([`crate::admission::schema::check_rules`]), the generation bump, the size check, the no-op comparison, managedFields ([`finish_change`], [`finish_create`]) |
//! | commit | yes | the object re-checked unchanged (its resourceVersion), then stored; ResourceQuota for creates |
//!
//! When the object changed between the read and a locked step, the write starts again from the read
//! against the new object, as kube-apiserver's `GuaranteedUpdate` does; after [`MAX_ATTEMPTS`] attempts it
//! answers 409 Conflict. [`State::create`], [`State::update`] and [`State::patch`] run every step in one go
//! for callers that already hold the lock (the built-in controllers and the kubelet, whose writes are
//! small); [`crate::cluster::guaranteed`] runs them from the HTTP handlers, taking the lock per step.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{
    GENERATE_ALPHABET, PatchType, State, check_type, grace_is_zero, normalize_metadata, ns_of, same_ignoring_rv,
    spec_changed,
};
use crate::admission;
use crate::error::{ApiError, FieldCause};
use crate::meta;
use crate::patch::apply;
use crate::patch::json::{self as json_patch, JsonPatchError};
use crate::request::RequestContext;
use crate::resource::{AdmitContext, ApiSettings, Operation, ResourceInfo};
use crate::store::{GroupResource, Store};

/// How many times a write is computed against the stored object before a change by another writer
/// each time is answered 409 Conflict: once plus kube-apiserver's `MaxRetryWhenPatchConflicts` (5,
/// `pkg/endpoints/handlers/rest.go`).
pub(crate) const MAX_ATTEMPTS: usize = 6;

/// The largest object the store keeps (etcd's default request limit, which bounds what kube-apiserver can
/// store), so a patch or a merge cannot grow an object without bound.
pub(crate) const MAX_OBJECT_BYTES: usize = 1_572_864;

/// Refuses an object whose JSON encoding is larger than [`MAX_OBJECT_BYTES`]; counts without allocating
/// and stops at the limit.
fn check_size(obj: &Value) -> Result<(), ApiError> {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 = self.0.saturating_add(buf.len());
            if self.0 > MAX_OBJECT_BYTES {
                return Err(std::io::Error::other("too large"));
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    if serde_json::to_writer(&mut counter, obj).is_err() {
        return Err(ApiError::too_large(format!(
            "object is too large to store: more than {MAX_OBJECT_BYTES} bytes"
        )));
    }
    Ok(())
}

/// A step under the lock either went ahead, or found the stored object changed since it was read (and
/// hands its input back, to be dropped outside the lock).
#[derive(Debug)]
pub(crate) enum Step<T, U> {
    /// Went ahead.
    Done(T),
    /// The stored object changed (or a name was taken): start again.
    Stale(U),
}

// ----- create -----

/// A create, checked against the request alone, with the metadata the server sets.
#[derive(Debug, Clone)]
pub(crate) struct NewObject {
    obj: Value,
    namespace: String,
    /// Whether typed decoding ran already, without the lock ([`decode_new`]).
    typed: bool,
    /// Whether a name taken by the time of the write starts the write again (server-side apply creating
    /// an object: the next attempt applies to the one now there) instead of answering AlreadyExists.
    retry_if_taken: bool,
}

impl NewObject {
    /// The name the body asks for (empty when it is to be generated).
    pub(crate) fn name(&self) -> &str {
        meta::name(&self.obj)
    }
}

/// A create admitted under the lock.
#[derive(Debug)]
pub(crate) struct AdmittedCreate {
    obj: Value,
    generated: bool,
    retry_if_taken: bool,
}

/// A create finished outside the lock, ready to commit.
#[derive(Debug)]
pub(crate) struct ReadyCreate {
    obj: Value,
    generated: bool,
    retry_if_taken: bool,
    /// The size check's verdict, reported after ResourceQuota's as kube-apiserver's storage comes last.
    too_large: Option<ApiError>,
}

/// A body is an object of the resource's type.
fn check_body(res: &ResourceInfo, body: &Value) -> Result<(), ApiError> {
    if !body.is_object() {
        return Err(ApiError::bad_request("the body of the request must be a JSON object"));
    }
    check_type(res, body)
}

/// Create: what needs the request alone (no lock): the body's type and namespace, the metadata the
/// server sets, no status where a status subresource owns it.
pub(crate) fn new_object(res: &ResourceInfo, namespace: &str, body: Value) -> Result<NewObject, ApiError> {
    let mut obj = body;
    check_body(res, &obj)?;
    let namespace = ns_of(res, namespace).to_string();
    if res.namespaced {
        let body_ns = meta::namespace(&obj);
        if !body_ns.is_empty() && body_ns != namespace {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
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
        if res.strategy.has_generation() {
            m.insert("generation".into(), json!(1));
        } else {
            m.remove("generation");
        }
    }
    if res.status_subresource
        && !res.strategy.keeps_status_on_create()
        && let Some(m) = obj.as_object_mut()
    {
        m.remove("status");
    }
    Ok(NewObject {
        obj,
        namespace,
        typed: false,
        retry_if_taken: false,
    })
}

/// Create: the custom resource's CEL rules, the size check and managedFields (no lock). `manager` is
/// empty for a server-side apply, whose managedFields are already in the object.
pub(crate) fn finish_create(
    res: &ResourceInfo,
    admitted: AdmittedCreate,
    manager: &str,
) -> Result<ReadyCreate, ApiError> {
    let AdmittedCreate {
        mut obj,
        generated,
        retry_if_taken,
    } = admitted;
    admission::schema::check_rules(res, &obj, None)?;
    normalize_metadata(&mut obj);
    let too_large = check_size(&obj).err();
    if too_large.is_none() {
        apply::record_update(res, None, &mut obj, manager, None, "Update");
    }
    Ok(ReadyCreate {
        obj,
        generated,
        retry_if_taken,
        too_large,
    })
}

// ----- update and patch -----

/// An update or patch: the stored object it was computed against and the object it asks for.
#[derive(Debug)]
pub(crate) struct Change {
    old: Arc<Value>,
    new: Value,
    /// `Update`, or `Apply` for server-side apply (which computed managedFields itself).
    operation: &'static str,
    /// Whether admission's first steps ([`admission::decode`]) ran already.
    decoded: bool,
}

/// A change finished outside the lock.
#[derive(Debug)]
pub(crate) enum Finished {
    /// Nothing but resourceVersion and managedFields would change: the stored object is the answer.
    Unchanged(Arc<Value>),
    /// The object to store in place of `old`.
    Write {
        /// The object it was computed against.
        old: Arc<Value>,
        /// The object to store.
        new: Value,
    },
}

impl Finished {
    fn old(&self) -> &Arc<Value> {
        match self {
            Finished::Unchanged(old) | Finished::Write { old, .. } => old,
        }
    }
}

/// What a patch asks for.
#[derive(Debug)]
pub(crate) enum PatchPlan {
    /// A change of the stored object.
    Change(Change),
    /// A server-side apply creating the object (its managedFields set).
    Create(NewObject),
}

/// Update (PUT): what needs the request alone: the body's type and name.
pub(crate) fn check_update_body(res: &ResourceInfo, name: &str, body: &Value) -> Result<(), ApiError> {
    check_body(res, body)?;
    let body_name = meta::name(body);
    if !body_name.is_empty() && body_name != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({name})"
        )));
    }
    Ok(())
}

/// Update (PUT) against the stored object `old` (no lock): the body's resourceVersion and uid
/// preconditions, then the change.
pub(crate) fn update_change(
    res: &ResourceInfo,
    old: Arc<Value>,
    body: Value,
    subresource: Option<&str>,
) -> Result<Change, ApiError> {
    let name = meta::name(&old);
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
    merge_change(res, old, body, subresource, "Update")
}

/// Patch against the stored object (`None`: there is none) (no lock): the patch applied to a copy of
/// it, with the checks of the result; or, for a server-side apply of a missing object, the create.
#[allow(clippy::too_many_arguments)]
pub(crate) fn plan_patch(
    res: &ResourceInfo,
    existing: Option<Arc<Value>>,
    namespace: &str,
    name: &str,
    patch_type: PatchType,
    patch: &Value,
    subresource: Option<&str>,
    ctx: &RequestContext,
) -> Result<PatchPlan, ApiError> {
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
            let mut create = new_object(res, namespace, obj)?;
            create.retry_if_taken = true;
            return Ok(PatchPlan::Create(create));
        };
        let view = res.present(&old);
        let new = apply::apply(res, &view, patch, &ctx.field_manager, ctx.force, subresource)?;
        let new = res.to_storage(new)?;
        return merge_change(res, old, new, subresource, "Apply").map(PatchPlan::Change);
    }
    let Some(old) = existing else {
        return Err(ApiError::not_found(&res.group, &res.plural, name));
    };
    if patch_type == PatchType::Strategic && res.schema.is_some() {
        return Err(ApiError::unsupported_media_type(
            "application/strategic-merge-patch+json",
        ));
    }
    let mut view = res.present(&old);
    let invalid = |e: crate::patch::PatchError| {
        ApiError::new(
            422,
            "Invalid",
            format!(
                "the server rejected our request due to an error in our request: {}",
                e.0
            ),
            None,
        )
    };
    match patch_type {
        PatchType::Json => json_patch::apply(&mut view, patch).map_err(json_patch_error)?,
        PatchType::Merge => crate::patch::merge_patch(&mut view, patch).map_err(invalid)?,
        PatchType::Strategic => crate::patch::strategic_merge_patch(&mut view, patch).map_err(invalid)?,
        PatchType::Apply => {}
    }
    let new = res.to_storage(view)?;
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
    merge_change(res, old, new, subresource, "Update").map(PatchPlan::Change)
}

/// A JSON patch's error as kube-apiserver answers it: 400 for a body that is not a patch, 413 for too
/// many operations, and 422 with the generic message for an operation that failed (json-patch's words are
/// dropped, as upstream's `NewGenericServerResponse` drops them).
fn json_patch_error(e: JsonPatchError) -> ApiError {
    match e {
        JsonPatchError::Decode(message) => ApiError::bad_request(message),
        e @ JsonPatchError::TooManyOperations(_) => ApiError::too_large(format!("Request entity too large: {e}")),
        JsonPatchError::Apply(message) => {
            tracing::debug!(error = %message, "a JSON patch did not apply");
            ApiError::new(
                422,
                "Invalid",
                "the server rejected our request due to an error in our request",
                None,
            )
        }
    }
}

/// The change an update or patch asks for (no lock): the body merged with the stored object according
/// to the subresource, system metadata kept from the stored object, and finalizers of an object being
/// deleted only removed.
pub(crate) fn merge_change(
    res: &ResourceInfo,
    old: Arc<Value>,
    body: Value,
    subresource: Option<&str>,
    operation: &'static str,
) -> Result<Change, ApiError> {
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
    Ok(Change {
        old,
        new,
        operation,
        decoded: false,
    })
}

/// Update or patch: admission's first steps, which read nothing but the object (storage form, name and
/// labels, typed decoding), run without the lock (with an empty store to read), before [`State::admit_change`].
/// A create's typed decoding, which reads nothing but the object, done without the lock (the rest of
/// admission runs under it, in [`State::admit_create`]).
pub(crate) fn decode_new(
    res: &ResourceInfo,
    new: NewObject,
    settings: &ApiSettings,
    ctx: &mut RequestContext,
) -> Result<NewObject, ApiError> {
    let nothing = Store::new(0);
    let mut new = new;
    admission::decode_typed(
        &mut AdmitContext {
            res,
            old: None,
            request: ctx,
            store: &nothing,
            settings,
            op: Operation::Create,
            subresource: None,
        },
        &mut new.obj,
    )?;
    new.typed = true;
    Ok(new)
}

pub(crate) fn decode_change(
    res: &ResourceInfo,
    change: Change,
    subresource: Option<&str>,
    settings: &ApiSettings,
    ctx: &mut RequestContext,
) -> Result<Change, ApiError> {
    let nothing = Store::new(0);
    let mut change = change;
    admission::decode(
        &mut AdmitContext {
            res,
            old: Some(&change.old),
            request: ctx,
            store: &nothing,
            settings,
            op: Operation::Update,
            subresource,
        },
        &mut change.new,
    )?;
    change.decoded = true;
    Ok(change)
}

/// Update or patch, after admission (no lock): the custom resource's CEL rules, the generation bump
/// (decided on the spec as admitted, with its defaults: a client resending a spec without them changes
/// nothing), the size check, the no-op comparison and managedFields.
pub(crate) fn finish_change(
    res: &ResourceInfo,
    change: Change,
    subresource: Option<&str>,
    ctx: &RequestContext,
) -> Result<Finished, ApiError> {
    let Change {
        old,
        mut new,
        operation,
        ..
    } = change;
    admission::schema::check_rules(res, &new, Some(&old))?;
    if res.strategy.has_generation() && subresource.is_none() && spec_changed(&old, &new) {
        let g = meta::metadata(&old)
            .and_then(|m| m.get("generation"))
            .and_then(Value::as_i64)
            .unwrap_or(1);
        meta::metadata_mut(&mut new).insert("generation".into(), json!(g.saturating_add(1)));
    }
    normalize_metadata(&mut new);
    check_size(&new)?;
    // No-op writes do not take a new resourceVersion.
    if same_ignoring_rv(&old, &new) {
        return Ok(Finished::Unchanged(old));
    }
    apply::record_update(res, Some(&old), &mut new, &ctx.field_manager, subresource, operation);
    Ok(Finished::Write { old, new })
}

impl State {
    /// Whether `old` is still the stored object (same resourceVersion).
    fn is_current(&self, res: &ResourceInfo, old: &Value) -> bool {
        self.store
            .get(&res.storage, meta::namespace(old), meta::name(old))
            .is_some_and(|current| meta::resource_version(&current) == meta::resource_version(old))
    }

    // ----- create -----

    /// create.
    pub(crate) fn create(
        &mut self,
        res: &ResourceInfo,
        namespace: &str,
        body: Value,
        ctx: &mut RequestContext,
    ) -> Result<Arc<Value>, ApiError> {
        if res.strategy.ephemeral() {
            return self.create_ephemeral(res, namespace, body, ctx);
        }
        let new = new_object(res, namespace, body)?;
        let manager = ctx.field_manager.clone();
        self.create_now(res, new, &manager, ctx)
    }

    /// Every step of a create, under the lock the caller holds.
    fn create_now(
        &mut self,
        res: &ResourceInfo,
        new: NewObject,
        manager: &str,
        ctx: &mut RequestContext,
    ) -> Result<Arc<Value>, ApiError> {
        let name = meta::name(&new.obj).to_string();
        let taken = || ApiError::already_exists(&res.group, &res.plural, &name);
        let admitted = match self.admit_create(res, new, ctx)? {
            Step::Done(admitted) => admitted,
            Step::Stale(_) => return Err(taken()),
        };
        let ready = finish_create(res, admitted, manager)?;
        match self.commit_create(res, ready, ctx)? {
            Step::Done(stored) => Ok(stored),
            Step::Stale(_) => Err(taken()),
        }
    }

    /// A create of a kind that is never stored (the access reviews): the admitted object is the answer.
    fn create_ephemeral(
        &mut self,
        res: &ResourceInfo,
        namespace: &str,
        body: Value,
        ctx: &mut RequestContext,
    ) -> Result<Arc<Value>, ApiError> {
        let mut obj = body;
        check_body(res, &obj)?;
        if res.namespaced {
            meta::metadata_mut(&mut obj).insert("namespace".into(), Value::String(namespace.to_string()));
        }
        self.admit(res, Operation::Create, None, None, &mut obj, ctx)?;
        admission::schema::check_rules(res, &obj, None)?;
        admission::quota::check_create(&self.store, res, &obj)?;
        Ok(Arc::new(obj))
    }

    /// Admission (the steps that may read the store), as `op` of `old` through `subresource`.
    fn admit(
        &self,
        res: &ResourceInfo,
        op: Operation,
        old: Option<&Value>,
        subresource: Option<&str>,
        obj: &mut Value,
        ctx: &mut RequestContext,
    ) -> Result<(), ApiError> {
        admission::admit(
            &mut AdmitContext {
                res,
                old,
                request: ctx,
                store: &self.store,
                settings: &self.settings,
                op,
                subresource,
            },
            obj,
        )
    }

    /// Create, under the lock: the namespace is open, the name (generated from `generateName` if need
    /// be) is free, and admission. `Stale` when the name is taken and the create is to start again.
    pub(crate) fn admit_create(
        &mut self,
        res: &ResourceInfo,
        new: NewObject,
        ctx: &mut RequestContext,
    ) -> Result<Step<AdmittedCreate, NewObject>, ApiError> {
        if res.namespaced {
            self.check_namespace_open(res, &new.namespace, meta::name(&new.obj))?;
        }
        let NewObject {
            mut obj,
            namespace,
            typed,
            retry_if_taken,
        } = new;
        let mut generated = false;
        if meta::name(&obj).is_empty() {
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
            let base: String = generate.chars().take(58).collect();
            let mut candidate;
            loop {
                let suffix: String = (0..5)
                    .map(|_| GENERATE_ALPHABET[self.name_rng.usize(..GENERATE_ALPHABET.len())] as char)
                    .collect();
                candidate = format!("{base}{suffix}");
                if self.store.get(&res.storage, &namespace, &candidate).is_none() {
                    break;
                }
            }
            meta::metadata_mut(&mut obj).insert("name".into(), Value::String(candidate));
            generated = true;
        }
        let name = meta::name(&obj).to_string();
        if self.store.get(&res.storage, &namespace, &name).is_some() {
            if retry_if_taken {
                return Ok(Step::Stale(NewObject {
                    obj,
                    namespace,
                    typed,
                    retry_if_taken,
                }));
            }
            return Err(ApiError::already_exists(&res.group, &res.plural, &name));
        }
        if typed {
            admission::admit_typed(
                &mut AdmitContext {
                    res,
                    old: None,
                    request: ctx,
                    store: &self.store,
                    settings: &self.settings,
                    op: Operation::Create,
                    subresource: None,
                },
                &mut obj,
            )?;
        } else {
            self.admit(res, Operation::Create, None, None, &mut obj, ctx)?;
        }
        Ok(Step::Done(AdmittedCreate {
            obj,
            generated,
            retry_if_taken,
        }))
    }

    /// Create, under the lock: the name still free and the namespace still open, ResourceQuota, then
    /// the object stored. `Stale` when a generated name (or the object a server-side apply was
    /// creating) was taken meanwhile.
    pub(crate) fn commit_create(
        &mut self,
        res: &ResourceInfo,
        ready: ReadyCreate,
        ctx: &RequestContext,
    ) -> Result<Step<Arc<Value>, ReadyCreate>, ApiError> {
        let namespace = meta::namespace(&ready.obj).to_string();
        let name = meta::name(&ready.obj).to_string();
        if self.store.get(&res.storage, &namespace, &name).is_some() {
            if ready.generated || ready.retry_if_taken {
                return Ok(Step::Stale(ready));
            }
            return Err(ApiError::already_exists(&res.group, &res.plural, &name));
        }
        if res.namespaced {
            self.check_namespace_open(res, &namespace, &name)?;
        }
        admission::quota::check_create(&self.store, res, &ready.obj)?;
        if let Some(e) = ready.too_large {
            return Err(e);
        }
        if ctx.dry_run {
            return Ok(Step::Done(Arc::new(ready.obj)));
        }
        let stored = self.store.put(&res.storage, ready.obj);
        self.after_write(res, None, &stored);
        Ok(Step::Done(stored))
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
            Some(ns) if meta::is_deleting(&ns) && !res.strategy.allowed_in_terminating_namespace() => {
                Err(ApiError::forbidden(
                    &res.group,
                    &res.plural,
                    name,
                    &format!("unable to create new content in namespace {namespace} because it is being terminated"),
                ))
            }
            Some(_) => Ok(()),
        }
    }

    // ----- update -----

    /// update (PUT), of the main resource or its `status` subresource.
    pub(crate) fn update(
        &mut self,
        res: &ResourceInfo,
        namespace: &str,
        name: &str,
        body: Value,
        subresource: Option<&str>,
        ctx: &mut RequestContext,
    ) -> Result<Arc<Value>, ApiError> {
        check_update_body(res, name, &body)?;
        let old = self.get(res, namespace, name)?;
        let change = update_change(res, old, body, subresource)?;
        self.change_now(res, change, subresource, ctx)
    }

    /// The locked steps of an update or patch and the finish between them, under the lock the caller
    /// holds.
    fn change_now(
        &mut self,
        res: &ResourceInfo,
        change: Change,
        subresource: Option<&str>,
        ctx: &mut RequestContext,
    ) -> Result<Arc<Value>, ApiError> {
        let stale = |c: &Arc<Value>| ApiError::stale(&res.group, &res.plural, meta::name(c));
        let admitted = match self.admit_change(res, change, subresource, ctx)? {
            Step::Done(admitted) => admitted,
            Step::Stale(c) => return Err(stale(&c.old)),
        };
        let finished = finish_change(res, admitted, subresource, ctx)?;
        match self.commit_change(res, finished, ctx)? {
            Step::Done(stored) => Ok(stored),
            Step::Stale(f) => Err(stale(f.old())),
        }
    }

    /// Update or patch, under the lock: the stored object unchanged since it was read, then admission.
    pub(crate) fn admit_change(
        &mut self,
        res: &ResourceInfo,
        change: Change,
        subresource: Option<&str>,
        ctx: &mut RequestContext,
    ) -> Result<Step<Change, Change>, ApiError> {
        if !self.is_current(res, &change.old) {
            return Ok(Step::Stale(change));
        }
        let Change {
            old,
            mut new,
            operation,
            decoded,
        } = change;
        let mut cx = AdmitContext {
            res,
            old: Some(&old),
            request: ctx,
            store: &self.store,
            settings: &self.settings,
            op: Operation::Update,
            subresource,
        };
        if !decoded {
            admission::decode(&mut cx, &mut new)?;
        }
        admission::admit_decoded(&mut cx, &mut new)?;
        Ok(Step::Done(Change {
            old,
            new,
            operation,
            decoded: true,
        }))
    }

    /// Update or patch, under the lock: the stored object unchanged since it was read, then the object
    /// written (or removed, when an object being deleted lost its last finalizer).
    pub(crate) fn commit_change(
        &mut self,
        res: &ResourceInfo,
        finished: Finished,
        ctx: &RequestContext,
    ) -> Result<Step<Arc<Value>, Finished>, ApiError> {
        if !self.is_current(res, finished.old()) {
            return Ok(Step::Stale(finished));
        }
        let (old, new) = match finished {
            Finished::Unchanged(old) => return Ok(Step::Done(old)),
            Finished::Write { old, new } => (old, new),
        };
        if ctx.dry_run {
            return Ok(Step::Done(Arc::new(new)));
        }
        if meta::is_deleting(&new) && meta::finalizers(&new).is_empty() && grace_is_zero(&new) {
            let removed = self.remove_now(res, meta::namespace(&new), meta::name(&new));
            return removed
                .map(Step::Done)
                .ok_or_else(|| ApiError::not_found(&res.group, &res.plural, meta::name(&old)));
        }
        let stored = self.store.put(&res.storage, new);
        self.after_write(res, Some(&old), &stored);
        Ok(Step::Done(stored))
    }

    // ----- patch -----

    /// patch, of the main resource or its `status` subresource; server-side apply creates missing objects.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn patch(
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
        match plan_patch(res, existing, namespace, name, patch_type, patch, subresource, ctx)? {
            PatchPlan::Change(change) => self.change_now(res, change, subresource, ctx),
            PatchPlan::Create(new) => self.create_now(res, new, "", ctx),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::api::State;
    use crate::request::RequestContext;

    /// kube-apiserver defaults while decoding, so a client resending a spec without the server's defaults
    /// (what `kubectl apply` does with atomic lists) neither moves the generation nor writes anything.
    #[test]
    fn a_spec_that_differs_only_by_defaults_is_no_change() {
        let mut state = State::new(100, Default::default());
        let res = state.builtin("apps", "deployments").unwrap();
        let deployment = json!({"metadata": {"name": "d"}, "spec": {"selector": {"matchLabels": {"app": "a"}},
            "template": {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}});
        let created = state
            .create(&res, "default", deployment.clone(), &mut RequestContext::manager("t"))
            .unwrap();
        assert_ne!(created["spec"], deployment["spec"], "the server defaulted the spec");
        let mut resent = deployment;
        resent["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"].clone();
        let updated = state
            .update(&res, "default", "d", resent, None, &mut RequestContext::manager("t"))
            .unwrap();
        assert_eq!(updated["metadata"]["generation"], 1);
        assert_eq!(
            updated["metadata"]["resourceVersion"],
            created["metadata"]["resourceVersion"]
        );
        let slices = state.builtin("resource.k8s.io", "resourceslices").unwrap();
        let spec = json!({"driver": "d.example.com", "allNodes": true,
            "pool": {"name": "p", "generation": 0, "resourceSliceCount": 1}, "devices": [{"name": "a"}]});
        let s = state
            .create(
                &slices,
                "",
                json!({"metadata": {"name": "s"}, "spec": spec}),
                &mut RequestContext::manager("t"),
            )
            .unwrap();
        let mut changed = (*s).clone();
        changed["spec"]["devices"][0]["name"] = json!("b");
        let s = state
            .update(&slices, "", "s", changed, None, &mut RequestContext::manager("t"))
            .unwrap();
        assert_eq!(s["metadata"]["generation"], 2, "a real spec change still counts");
    }
}
