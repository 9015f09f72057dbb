//! Deletes: preconditions, graceful deletion, finalizers, propagation policies, deletecollection, and the
//! final removal that queues the follow-up work.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{
    DeleteOptions, Deleted, FOREGROUND_FINALIZER, ListOptions, ORPHAN_FINALIZER, State, object_ref, same_ignoring_rv,
};
use crate::error::ApiError;
use crate::meta;
use crate::resource::{OnDelete, Propagation, ResourceInfo};
use crate::store::GroupResource;
use crate::work::GcItem;

impl State {
    // ----- delete -----

    /// delete, with preconditions, graceful deletion for pods, finalizers and propagation.
    pub(crate) fn delete(
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

        let mut effects = Vec::new();
        match res.strategy.on_delete(&mut obj, &mut effects) {
            OnDelete::Proceed => {}
            OnDelete::Unchanged => return Ok(Deleted::Pending(old)),
            OnDelete::Store => {
                let stored = self.store.put(&res.storage, obj);
                self.apply_effects(effects);
                return Ok(Deleted::Pending(stored));
            }
        }

        let propagation = opts.propagation.unwrap_or(res.strategy.default_propagation());
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

        // Graceful deletion (bound, non-terminal pods wait for the kubelet).
        let grace = res.strategy.grace_period(&old, opts.grace_period_seconds);
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
            // A request's grace period may be any i64: the deletion time saturates at the latest time.
            let when = jiff::Timestamp::now()
                .checked_add(jiff::SignedDuration::from_secs(grace))
                .unwrap_or(jiff::Timestamp::MAX);
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
        self.apply_effects(effects);
        Ok(Deleted::Pending(stored))
    }

    /// deletecollection.
    pub(crate) fn delete_collection(
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
    pub(crate) fn remove_now(&mut self, res: &ResourceInfo, namespace: &str, name: &str) -> Option<Arc<Value>> {
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
        let mut effects = Vec::new();
        res.strategy.after_remove(&removed, &mut effects);
        self.apply_effects(effects);
        if let Some(crd) = res.strategy.defining_crd(res)
            && self.store.count(&res.storage) == 0
        {
            self.enqueue(GcItem::CrdCleanup(crd));
        }
        Some(removed)
    }
}
