//! Event expiry (kube-apiserver's event TTL).

use std::time::Duration;

use serde_json::Value;

use crate::api::State;
use crate::meta;
use crate::store::GroupResource;

/// Deletes events older than `event_ttl`.
pub(super) fn expire(state: &mut State, event_ttl: Duration) {
    let events = GroupResource::new("", "events");
    let ttl = jiff::SignedDuration::from_secs(i64::try_from(event_ttl.as_secs()).unwrap_or(i64::MAX));
    let cutoff = jiff::Timestamp::now().checked_sub(ttl).unwrap_or(jiff::Timestamp::MIN);
    let expired: Vec<_> = state
        .store
        .list(&events, None)
        .into_iter()
        .filter(|e| {
            let last = e
                .get("lastTimestamp")
                .and_then(Value::as_str)
                .or_else(|| e.pointer("/series/lastObservedTime").and_then(Value::as_str))
                .or_else(|| e.get("eventTime").and_then(Value::as_str))
                .or_else(|| meta::meta_str(e, "creationTimestamp"));
            last.and_then(meta::parse_time).is_some_and(|t| t < cutoff)
        })
        .collect();
    if let Some(res) = state.registry.get("", "v1", "events") {
        for e in expired {
            state.remove_now(&res, meta::namespace(&e), meta::name(&e));
        }
    }
}
