//! The resource quota controller: keeps each ResourceQuota's `status.hard` (its `spec.hard`) and
//! `status.used` (what its namespace holds now, counted as admission counts it).

use serde_json::{Value, json};

use crate::admission::quota::usage;
use crate::api::State;
use crate::meta;
use crate::request::RequestContext;
use crate::store::GroupResource;

/// One pass over every ResourceQuota.
pub(super) fn sync(state: &mut State) {
    let gr = GroupResource::new("", "resourcequotas");
    let quotas = state.store.list(&gr, None);
    if quotas.is_empty() {
        return;
    }
    let Some(res) = state.builtin("", "resourcequotas") else {
        return;
    };
    for q in quotas {
        if meta::is_deleting(&q) {
            continue;
        }
        let hard = q
            .pointer("/spec/hard")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let status = json!({"hard": hard, "used": usage(&state.store, meta::namespace(&q), &hard)});
        if q.get("status") == Some(&status) {
            continue;
        }
        let mut new = (*q).clone();
        new["status"] = status;
        if let Err(e) = state.update(
            &res,
            meta::namespace(&q),
            meta::name(&q),
            new,
            Some("status"),
            &mut RequestContext::manager("resourcequota-controller"),
        ) {
            tracing::debug!(quota = %meta::name(&q), error = %e, "quota status update failed");
        }
    }
}
