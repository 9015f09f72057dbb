//! Writes from the HTTP handlers, with the cluster lock taken per step ([`crate::api::write`]'s table): the
//! work a request body can inflate (patch application, serialization for the size check, the no-op
//! comparison, managedFields, CEL rules) runs with the lock released, on a snapshot of the stored object,
//! and the commit re-checks that the object's resourceVersion is still the snapshot's. If another writer
//! got in between, the write is computed again against the new object (kube-apiserver's
//! `GuaranteedUpdate`), up to [`MAX_ATTEMPTS`] times, then answered 409 Conflict.
//!
//! HTTP writes of one object also take turns ([`WriteTurns`]): an update or patch waits, without the
//! cluster lock, for the one before it to finish. Without turns, a burst of writers of one object would
//! mostly compute against a snapshot another of them had just replaced; with them, only the in-process
//! writers (kubelet, controllers), which take the lock once for a whole write, can make a write start
//! again. These functions block (they take the lock and compute): the handlers call them on a blocking
//! thread when the body or the object is large ([`is_heavy`]), inline otherwise.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use super::Shared;
use crate::api::write::{self, PatchPlan, Step};
use crate::api::{PatchType, ns_of};
use crate::error::ApiError;
use crate::patch::json::go_json_size;
use crate::request::RequestContext;
use crate::resource::{ApiSettings, ResourceInfo};

pub(crate) use crate::api::write::MAX_ATTEMPTS;

/// The turns of the HTTP writes of each object: one at a time per object. An entry lives while a write
/// holds or waits for its turn.
#[derive(Debug, Default)]
pub(crate) struct WriteTurns {
    slots: Arc<parking_lot::Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>>,
}

/// A write's turn at one object; the next waiting write goes when it is dropped.
#[derive(Debug)]
pub(crate) struct WriteTurn {
    slots: Arc<parking_lot::Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>>,
    key: String,
    held: Option<tokio::sync::OwnedMutexGuard<()>>,
}

impl WriteTurns {
    /// Waits for the turn at object `name` of `res` in `namespace`.
    pub(crate) async fn take(&self, res: &ResourceInfo, namespace: &str, name: &str) -> WriteTurn {
        let key = format!("{}/{}/{name}", res.storage, ns_of(res, namespace));
        let slot = self.slots.lock().entry(key.clone()).or_default().clone();
        let held = slot.lock_owned().await;
        WriteTurn {
            slots: self.slots.clone(),
            key,
            held: Some(held),
        }
    }

    /// How many objects have a write holding or waiting for a turn.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.slots.lock().len()
    }
}

impl Drop for WriteTurn {
    fn drop(&mut self) {
        self.held.take();
        let mut slots = self.slots.lock();
        // Every other holder of the slot cloned it under this lock: none left, nobody waits.
        if slots.get(&self.key).is_some_and(|slot| Arc::strong_count(slot) == 1) {
            slots.remove(&self.key);
        }
    }
}

/// A write whose body or stored object is larger than this runs on a blocking thread; a smaller one runs
/// on the async worker that received it (a thread handoff per write halved the throughput of small
/// writes in `benches/load.rs`). Either way the cluster lock is released between the steps.
pub(crate) const INLINE_BYTES: u64 = 64 * 1024;

/// Whether a write is worth a blocking thread: its body, or the object `name` it changes, encodes to
/// more than [`INLINE_BYTES`] (each measured up to that size, so asking costs little).
pub(crate) fn is_heavy(shared: &Shared, res: &ResourceInfo, namespace: &str, name: Option<&str>, body: &Value) -> bool {
    let large = |v: &Value| go_json_size(v, INLINE_BYTES) > INLINE_BYTES;
    if large(body) {
        return true;
    }
    let Some(name) = name else { return false };
    let stored = shared.with(|s| s.store.get(&res.storage, ns_of(res, namespace), name));
    stored.is_some_and(|o| large(&o))
}

/// The conflict answered when every attempt found the object changed by another writer.
fn exhausted(res: &ResourceInfo, name: &str) -> ApiError {
    ApiError::stale(&res.group, &res.plural, name)
}

/// create.
pub(crate) fn create(
    shared: &Shared,
    res: &ResourceInfo,
    namespace: &str,
    body: Value,
    ctx: &mut RequestContext,
) -> Result<Arc<Value>, ApiError> {
    if res.strategy.ephemeral() {
        return shared.with(|s| s.create(res, namespace, body, ctx));
    }
    let new = write::new_object(res, namespace, body)?;
    let settings = shared.with(|s| s.settings.clone());
    let new = write::decode_new(res, new, &settings, ctx)?;
    let name = new.name().to_string();
    let manager = ctx.field_manager.clone();
    let warnings = ctx.warnings.clone();
    for _ in 0..MAX_ATTEMPTS {
        ctx.warnings.clone_from(&warnings);
        if let Some(stored) = create_once(shared, res, new.clone(), &manager, ctx)? {
            return Ok(stored);
        }
    }
    Err(ApiError::already_exists(&res.group, &res.plural, &name))
}

/// One attempt at a create; `None` when the name was taken meanwhile and the create is to start again.
fn create_once(
    shared: &Shared,
    res: &ResourceInfo,
    new: write::NewObject,
    manager: &str,
    ctx: &mut RequestContext,
) -> Result<Option<Arc<Value>>, ApiError> {
    let admitted = match shared.with(|s| s.admit_create(res, new, ctx))? {
        Step::Done(admitted) => admitted,
        Step::Stale(_) => return Ok(None),
    };
    let ready = write::finish_create(res, admitted, manager)?;
    match shared.with(|s| s.commit_create(res, ready, ctx))? {
        Step::Done(stored) => Ok(Some(stored)),
        Step::Stale(_) => Ok(None),
    }
}

/// update (PUT), of the main resource or its `status` subresource.
pub(crate) fn update(
    shared: &Shared,
    res: &ResourceInfo,
    namespace: &str,
    name: &str,
    body: Value,
    subresource: Option<&str>,
    ctx: &mut RequestContext,
) -> Result<Arc<Value>, ApiError> {
    write::check_update_body(res, name, &body)?;
    let warnings = ctx.warnings.clone();
    for _ in 0..MAX_ATTEMPTS {
        ctx.warnings.clone_from(&warnings);
        let (old, settings) = shared.with(|s| (s.get(res, namespace, name), s.settings.clone()));
        let change = write::update_change(res, old?, body.clone(), subresource)?;
        if let Some(stored) = change_once(shared, res, change, subresource, &settings, ctx)? {
            return Ok(stored);
        }
    }
    Err(exhausted(res, name))
}

/// patch, of the main resource or its `status` subresource; server-side apply creates missing objects.
#[allow(clippy::too_many_arguments)]
pub(crate) fn patch(
    shared: &Shared,
    res: &ResourceInfo,
    namespace: &str,
    name: &str,
    patch_type: PatchType,
    patch: &Value,
    subresource: Option<&str>,
    ctx: &mut RequestContext,
) -> Result<Arc<Value>, ApiError> {
    let warnings = ctx.warnings.clone();
    for _ in 0..MAX_ATTEMPTS {
        ctx.warnings.clone_from(&warnings);
        let (existing, settings) = shared.with(|s| {
            (
                s.store.get(&res.storage, ns_of(res, namespace), name),
                s.settings.clone(),
            )
        });
        let written = match write::plan_patch(res, existing, namespace, name, patch_type, patch, subresource, ctx)? {
            PatchPlan::Change(change) => change_once(shared, res, change, subresource, &settings, ctx)?,
            PatchPlan::Create(new) => create_once(shared, res, new, "", ctx)?,
        };
        if let Some(stored) = written {
            return Ok(stored);
        }
    }
    Err(exhausted(res, name))
}

/// One attempt at an update or patch from its change; `None` when the object changed meanwhile.
fn change_once(
    shared: &Shared,
    res: &ResourceInfo,
    change: write::Change,
    subresource: Option<&str>,
    settings: &ApiSettings,
    ctx: &mut RequestContext,
) -> Result<Option<Arc<Value>>, ApiError> {
    let change = write::decode_change(res, change, subresource, settings, ctx)?;
    let admitted = match shared.with(|s| s.admit_change(res, change, subresource, ctx))? {
        Step::Done(admitted) => admitted,
        Step::Stale(_) => return Ok(None),
    };
    let finished = write::finish_change(res, admitted, subresource, ctx)?;
    match shared.with(|s| s.commit_change(res, finished, ctx))? {
        Step::Done(stored) => Ok(Some(stored)),
        Step::Stale(_) => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::cluster::test_shared;

    fn configmaps(shared: &Shared) -> Arc<ResourceInfo> {
        shared.with(|s| s.builtin("", "configmaps")).unwrap()
    }

    #[test]
    fn a_change_computed_against_an_object_replaced_meanwhile_is_computed_again() {
        let shared = test_shared();
        let res = configmaps(&shared);
        let mut ctx = RequestContext::manager("t");
        create(
            &shared,
            &res,
            "default",
            json!({"metadata": {"name": "c"}, "data": {"a": "1"}}),
            &mut ctx,
        )
        .unwrap();
        // A change read from the object as it is now...
        let snapshot = shared.with(|s| s.store.get(&res.storage, "default", "c"));
        let patch = json!({"data": {"b": "2"}});
        let Ok(PatchPlan::Change(change)) =
            write::plan_patch(&res, snapshot, "default", "c", PatchType::Merge, &patch, None, &ctx)
        else {
            panic!("a change")
        };
        // ...goes stale when another writer gets in first.
        shared
            .with(|s| {
                s.patch(
                    &res,
                    "default",
                    "c",
                    PatchType::Merge,
                    &json!({"data": {"c": "3"}}),
                    None,
                    &mut ctx,
                )
            })
            .unwrap();
        let step = shared.with(|s| s.admit_change(&res, change, None, &mut ctx)).unwrap();
        assert!(matches!(step, Step::Stale(_)));
        // The guaranteed patch reads the object again and keeps both writes.
        let stored = super::patch(&shared, &res, "default", "c", PatchType::Merge, &patch, None, &mut ctx).unwrap();
        assert_eq!(stored["data"], json!({"a": "1", "b": "2", "c": "3"}));
    }

    #[test]
    fn no_op_patches_keep_the_resource_version_and_dry_runs_store_nothing() {
        let shared = test_shared();
        let res = configmaps(&shared);
        let mut ctx = RequestContext::manager("t");
        let created = create(
            &shared,
            &res,
            "default",
            json!({"metadata": {"name": "c"}, "data": {"a": "1"}}),
            &mut ctx,
        )
        .unwrap();
        let same = super::patch(
            &shared,
            &res,
            "default",
            "c",
            PatchType::Strategic,
            &json!({"data": {"a": "1"}}),
            None,
            &mut ctx,
        )
        .unwrap();
        assert!(Arc::ptr_eq(&same, &created));
        let mut dry = RequestContext {
            dry_run: true,
            ..RequestContext::manager("t")
        };
        let answered = super::patch(
            &shared,
            &res,
            "default",
            "c",
            PatchType::Json,
            &json!([{"op": "add", "path": "/data/b", "value": "2"}]),
            None,
            &mut dry,
        )
        .unwrap();
        assert_eq!(answered["data"]["b"], "2");
        let stored = shared.with(|s| s.store.get(&res.storage, "default", "c")).unwrap();
        assert!(Arc::ptr_eq(&stored, &created));
    }

    #[tokio::test]
    async fn writes_of_one_object_take_turns_and_leave_nothing_behind() {
        let shared = test_shared();
        let res = configmaps(&shared);
        let first = shared.write_turns.take(&res, "default", "c").await;
        let other = shared.write_turns.take(&res, "default", "other").await;
        assert_eq!(shared.write_turns.len(), 2);
        let shared = Arc::new(shared);
        let (s, r) = (shared.clone(), res.clone());
        let mut second = tokio::spawn(async move { s.write_turns.take(&r, "default", "c").await });
        assert!(
            tokio::time::timeout(Duration::from_millis(50), &mut second)
                .await
                .is_err(),
            "the second write waits for the first"
        );
        drop(first);
        let second = second.await.unwrap();
        drop(second);
        drop(other);
        assert_eq!(shared.write_turns.len(), 0);
    }

    #[test]
    fn custom_resources_rules_are_checked_on_create_and_transition_rules_on_patch() {
        let shared = test_shared();
        let mut ctx = RequestContext::manager("t");
        let crds = shared
            .with(|s| s.builtin("apiextensions.k8s.io", "customresourcedefinitions"))
            .unwrap();
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
            "x-kubernetes-validations": [
                {"rule": "self.size <= 10", "message": "size too big"},
                {"rule": "self.size >= oldSelf.size", "message": "size cannot shrink"}],
            "properties": {"size": {"type": "integer"}}}}});
        let crd = json!({"metadata": {"name": "widgets.example.com"}, "spec": {"group": "example.com",
            "scope": "Namespaced", "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
            "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": schema}}]}});
        create(&shared, &crds, "", crd, &mut ctx).unwrap();
        let res = shared.with(|s| s.resource("example.com", "v1", "widgets")).unwrap();
        let widget = |size: i64| json!({"metadata": {"name": "w"}, "spec": {"size": size}});
        let err = create(&shared, &res, "default", widget(20), &mut ctx).unwrap_err();
        assert_eq!(err.code(), 422);
        assert!(err.message().contains("size too big"), "{}", err.message());
        create(&shared, &res, "default", widget(5), &mut ctx).unwrap();
        let shrink = json!({"spec": {"size": 3}});
        let err = super::patch(&shared, &res, "default", "w", PatchType::Merge, &shrink, None, &mut ctx).unwrap_err();
        assert!(err.message().contains("size cannot shrink"), "{}", err.message());
        let grow = json!({"spec": {"size": 7}});
        let stored = super::patch(&shared, &res, "default", "w", PatchType::Merge, &grow, None, &mut ctx).unwrap();
        assert_eq!(stored["spec"]["size"], 7);
        // The in-process path checks them too.
        let err = shared
            .with(|s| s.patch(&res, "default", "w", PatchType::Merge, &shrink, None, &mut ctx))
            .unwrap_err();
        assert!(err.message().contains("size cannot shrink"), "{}", err.message());
    }
}
