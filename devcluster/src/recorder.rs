//! Events the built-in controllers and the simulated kubelet write about objects (core/v1 Events as
//! client-go's event recorder writes them: `involvedObject`, `source`, `reportingComponent`, first and last
//! timestamps, `count`), aggregated like client-go's event correlator: the same event about the same object
//! again bumps `count` and `lastTimestamp` of the one Event rather than writing a new one. Controllers that
//! re-evaluate every pass would repeat themselves every sweep, so a repeat is recorded at most once per
//! [`REPEAT_INTERVAL`] (kube-controller-manager's controllers repeat theirs on their resync period).

use std::time::Duration;

use serde_json::{Value, json};

use crate::api::State;
use crate::meta;
use crate::request::RequestContext;
use crate::store::GroupResource;

/// How often a repeated event is counted again.
pub(crate) const REPEAT_INTERVAL: Duration = Duration::from_secs(15);

/// `Normal` or `Warning`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventType {
    /// `Normal`.
    Normal,
    /// `Warning`.
    Warning,
}

impl EventType {
    fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// FNV-1a of the parts, so the same event about the same object always has the same name.
fn fingerprint(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.bytes().chain(std::iter::once(0)) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// Records an event about `object` (a stored object: it carries `apiVersion`, `kind` and metadata) from
/// `component` (the event's `source.component` and `reportingComponent`; `host` is `source.host`, the
/// kubelet's node). Events about cluster-scoped objects go to the `default` namespace, as client-go puts
/// them. Failures are logged, never returned: an event is never worth failing the work it reports.
pub(crate) fn record(
    state: &mut State,
    object: &Value,
    ty: EventType,
    reason: &str,
    message: &str,
    component: &str,
    host: Option<&str>,
) {
    let Some(res) = state.resource("", "v1", "events") else {
        return;
    };
    let namespace = match meta::namespace(object) {
        "" => "default",
        ns => ns,
    };
    let uid = meta::uid(object);
    let name = format!(
        "{}.{:016x}",
        meta::name(object),
        fingerprint(&[uid, ty.as_str(), reason, message, component])
    );
    let now = jiff::Timestamp::now();
    let stamp = meta::format_time(now);
    if let Some(existing) = state.store.get(&GroupResource::new("", "events"), namespace, &name) {
        let last = existing
            .get("lastTimestamp")
            .and_then(Value::as_str)
            .and_then(meta::parse_time);
        let due = last.is_none_or(|t| {
            now.as_second().saturating_sub(t.as_second())
                >= i64::try_from(REPEAT_INTERVAL.as_secs()).unwrap_or(i64::MAX)
        });
        if !due {
            return;
        }
        let mut bumped = (*existing).clone();
        let count = existing.get("count").and_then(Value::as_i64).unwrap_or(1);
        bumped["count"] = json!(count.saturating_add(1).min(i64::from(i32::MAX)));
        bumped["lastTimestamp"] = json!(stamp);
        if let Err(e) = state.update(
            &res,
            namespace,
            &name,
            bumped,
            None,
            &mut RequestContext::manager(component),
        ) {
            tracing::debug!(event = %name, error = %e, "updating an event failed");
        }
        return;
    }
    let mut involved = json!({
        "kind": object.get("kind").cloned().unwrap_or(json!("")),
        "name": meta::name(object),
        "uid": uid,
        "apiVersion": object.get("apiVersion").cloned().unwrap_or(json!("")),
        "resourceVersion": meta::resource_version(object),
    });
    if !meta::namespace(object).is_empty() {
        involved["namespace"] = json!(meta::namespace(object));
    }
    let mut source = json!({"component": component});
    if let Some(h) = host {
        source["host"] = json!(h);
    }
    let event = json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": namespace},
        "involvedObject": involved,
        "reason": reason,
        "message": message,
        "source": source,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
        "type": ty.as_str(),
        "eventTime": null,
        "reportingComponent": component,
        "reportingInstance": host.unwrap_or(""),
    });
    if let Err(e) = state.create(&res, namespace, event, &mut RequestContext::manager(component)) {
        tracing::debug!(event = %name, error = %e, "recording an event failed");
    }
}

/// The events recorded about the object with `uid`, as `(reason, message)`, oldest first (for tests).
#[cfg(test)]
pub(crate) fn events_about(state: &State, uid: &str) -> Vec<(String, String)> {
    let mut evs: Vec<_> = state
        .store
        .list(&GroupResource::new("", "events"), None)
        .into_iter()
        .filter(|e| e.pointer("/involvedObject/uid").and_then(Value::as_str) == Some(uid))
        .collect();
    evs.sort_by_key(|e| meta::resource_version(e).parse::<u64>().unwrap_or(0));
    evs.iter()
        .map(|e| {
            let f = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            (f("reason"), f("message"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_are_one_event_with_a_count() {
        let mut state = State::new(100, Default::default());
        let pod =
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default", "uid": "u1"}});
        record(
            &mut state,
            &pod,
            EventType::Warning,
            "FailedMount",
            "m",
            "kubelet",
            Some("n1"),
        );
        record(
            &mut state,
            &pod,
            EventType::Warning,
            "FailedMount",
            "m",
            "kubelet",
            Some("n1"),
        );
        record(
            &mut state,
            &pod,
            EventType::Warning,
            "FailedMount",
            "other",
            "kubelet",
            Some("n1"),
        );
        let events = state.store.list(&GroupResource::new("", "events"), Some("default"));
        assert_eq!(events.len(), 2);
        let first = events.iter().find(|e| e["message"] == "m").unwrap();
        assert_eq!(first["count"], 1, "a repeat within the interval is not counted yet");
        assert_eq!(first["involvedObject"]["kind"], "Pod");
        assert_eq!(first["source"], json!({"component": "kubelet", "host": "n1"}));
        assert_eq!(events_about(&state, "u1").len(), 2);
        // Cluster-scoped objects' events go to `default`.
        let pv = json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "v", "uid": "u2"}});
        record(&mut state, &pv, EventType::Normal, "R", "m", "c", None);
        let events = state.store.list(&GroupResource::new("", "events"), Some("default"));
        let ev = events.iter().find(|e| e["reason"] == "R").unwrap();
        assert!(ev["involvedObject"].get("namespace").is_none());
    }
}
