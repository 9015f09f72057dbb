//! Writes: create, update (PUT) and patch of the main resource or its `status` subresource, with
//! admission, generation, managedFields, no-op detection and dry runs.

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
use crate::resource::{AdmitContext, Operation, ResourceInfo};
use crate::store::GroupResource;

/// The largest object the store keeps (etcd's default request limit, which bounds what kube-apiserver can
/// store), so a patch or a merge cannot grow an object without bound.
pub(crate) const MAX_OBJECT_BYTES: usize = 1_572_864;

/// Refuses an object whose JSON encoding is larger than [`MAX_OBJECT_BYTES`]; counts without allocating.
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

impl State {
    // ----- create -----

    /// create.
    pub(crate) fn create(
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
        if res.strategy.ephemeral() {
            if res.namespaced {
                meta::metadata_mut(&mut obj).insert("namespace".into(), Value::String(namespace));
            }
            admission::admit(
                &mut AdmitContext {
                    request: ctx,
                    store: &self.store,
                    settings: &self.settings,
                    op: Operation::Create,
                    subresource: None,
                },
                res,
                None,
                &mut obj,
            )?;
            return Ok(Arc::new(obj));
        }
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
            if res.strategy.has_generation() {
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
            && !res.strategy.keeps_status_on_create()
            && let Some(m) = obj.as_object_mut()
        {
            m.remove("status");
        }
        admission::admit(
            &mut AdmitContext {
                request: ctx,
                store: &self.store,
                settings: &self.settings,
                op: Operation::Create,
                subresource: None,
            },
            res,
            None,
            &mut obj,
        )?;
        normalize_metadata(&mut obj);
        check_size(&obj)?;
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
        admission::admit(
            &mut AdmitContext {
                request: ctx,
                store: &self.store,
                settings: &self.settings,
                op: Operation::Update,
                subresource,
            },
            res,
            Some(&old),
            &mut new,
        )?;
        // The spec as admitted (defaults applied, as kube-apiserver defaults while decoding) decides
        // whether the generation moves: a client resending a spec without the defaults changes nothing.
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
            let view = res.present(&old);
            let new = apply::apply(res, &view, patch, &ctx.field_manager, ctx.force, subresource)?;
            let new = res.to_storage(new);
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
        let new = res.to_storage(view);
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
