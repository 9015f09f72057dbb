//! The disruption controller (kube-controller-manager's, simplified): keeps each PodDisruptionBudget's
//! status as upstream's `trySync` computes it.
//!
//! - `expectedPods`: the pods of the budget's namespace its selector matches (an empty selector matches
//!   every pod, `null` none). Upstream counts the scale of the pods' controllers for percentages and for
//!   `maxUnavailable`; here it is always the number of matching pods.
//! - `desiredHealthy`: `minAvailable` (a percentage of `expectedPods`, rounded up), or `expectedPods -
//!   maxUnavailable` (rounded up too, never below 0); 0 when neither is set.
//! - `currentHealthy`: matching pods that are Ready, not being deleted and not in `disruptedPods`.
//! - `disruptionsAllowed`: `currentHealthy - desiredHealthy`, and 0 when that is negative or no pod
//!   matches.
//! - `disruptedPods`: the evictions the eviction subresource approved whose pods are not being deleted
//!   yet, kept for two minutes (`DeletionTimeout`); a pod still there after that gets a `NotDeleted`
//!   event and counts again.
//! - `observedGeneration` and the `DisruptionAllowed` condition (`SufficientPods` / `InsufficientPods`).
//!
//! A budget that selects no pod gets a `NoPods` event, as upstream.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::api::State;
use crate::kinds::validate::scaled_int_or_percent;
use crate::meta;
use crate::recorder::{self, EventType};
use crate::request::RequestContext;
use crate::selectors::LabelSelector;
use crate::store::GroupResource;
use crate::views::{self, with_condition};

const MANAGER: &str = "disruption-controller";
/// How long an approved eviction keeps its pod out of `currentHealthy` (upstream's `DeletionTimeout`).
const DELETION_TIMEOUT_SECONDS: i64 = 120;

/// One pass over every PodDisruptionBudget.
pub(crate) fn sync(state: &mut State, now: jiff::Timestamp) {
    let pdbs = state
        .store
        .list(&GroupResource::new("policy", "poddisruptionbudgets"), None);
    for pdb in pdbs {
        sync_one(state, &pdb, now);
    }
}

/// The pods a budget selects.
pub(crate) fn selected_pods(state: &State, pdb: &Value) -> Vec<Arc<Value>> {
    let Some(selector) = LabelSelector::from_api(pdb.pointer("/spec/selector")) else {
        return Vec::new();
    };
    state
        .store
        .list(&GroupResource::new("", "pods"), Some(meta::namespace(pdb)))
        .into_iter()
        .filter(|p| selector.matches(p))
        .collect()
}

/// `(expectedPods, desiredHealthy)` of a budget over `pods` matching pods.
fn expected_and_desired(pdb: &Value, pods: i64) -> (i64, i64) {
    let spec = pdb.get("spec");
    if let Some(max) = spec.and_then(|s| s.get("maxUnavailable")).filter(|v| !v.is_null()) {
        let unavailable = scaled_int_or_percent(max, pods, true).unwrap_or(0);
        return (pods, pods.saturating_sub(unavailable).max(0));
    }
    if let Some(min) = spec.and_then(|s| s.get("minAvailable")).filter(|v| !v.is_null()) {
        return (pods, scaled_int_or_percent(min, pods, true).unwrap_or(0).max(0));
    }
    (0, 0)
}

/// A status counter within the API's `int32`.
fn int32(n: i64) -> i64 {
    n.clamp(0, i64::from(i32::MAX))
}

fn sync_one(state: &mut State, pdb: &Value, now: jiff::Timestamp) {
    let pods = selected_pods(state, pdb);
    if pods.is_empty() {
        recorder::record(
            state,
            pdb,
            EventType::Normal,
            "NoPods",
            "No matching pods found",
            "controllermanager",
            None,
        );
    }
    let count = i64::try_from(pods.len()).unwrap_or(i64::MAX);
    let (expected, desired) = expected_and_desired(pdb, count);
    // The approved evictions that still stand (`buildDisruptedPodMap`).
    let recorded = pdb
        .pointer("/status/disruptedPods")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut disrupted: BTreeMap<String, Value> = BTreeMap::new();
    for pod in &pods {
        if meta::is_deleting(pod) {
            continue;
        }
        let Some(at) = recorded.get(meta::name(pod)) else {
            continue;
        };
        let when = at.as_str().and_then(meta::parse_time);
        let expired = when.is_none_or(|t| now.as_second().saturating_sub(t.as_second()) > DELETION_TIMEOUT_SECONDS);
        if expired {
            // Upstream's message names the namespace twice (`pdb.Namespace, pdb.Namespace`); so does this.
            let message = format!(
                "Pod was expected by PDB {ns}/{ns} to be deleted but it wasn't",
                ns = meta::namespace(pdb)
            );
            recorder::record(
                state,
                pod,
                EventType::Warning,
                "NotDeleted",
                &message,
                "controllermanager",
                None,
            );
        } else {
            disrupted.insert(meta::name(pod).to_string(), at.clone());
        }
    }
    let healthy = pods
        .iter()
        .filter(|p| !meta::is_deleting(p) && !disrupted.contains_key(meta::name(p)) && views::pod_is_ready(p))
        .count();
    let current = i64::try_from(healthy).unwrap_or(i64::MAX);
    let allowed = if expected <= 0 {
        0
    } else {
        current.saturating_sub(desired).max(0)
    };
    let generation = meta::metadata(pdb)
        .and_then(|m| m.get("generation"))
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let mut status = Map::new();
    status.insert("observedGeneration".into(), json!(generation));
    status.insert("disruptionsAllowed".into(), json!(int32(allowed)));
    status.insert("currentHealthy".into(), json!(int32(current)));
    status.insert("desiredHealthy".into(), json!(int32(desired)));
    status.insert("expectedPods".into(), json!(int32(expected)));
    if !disrupted.is_empty() {
        status.insert("disruptedPods".into(), json!(disrupted));
    }
    status.insert(
        "conditions".into(),
        with_condition(pdb.pointer("/status/conditions"), allowed > 0, generation),
    );
    let status = Value::Object(status);
    if pdb.get("status") == Some(&status) {
        return;
    }
    let Some(res) = state.builtin("policy", "poddisruptionbudgets") else {
        return;
    };
    let mut new = pdb.clone();
    new["status"] = status;
    if let Err(e) = state.update(
        &res,
        meta::namespace(pdb),
        meta::name(pdb),
        new,
        Some("status"),
        &mut RequestContext::manager(MANAGER),
    ) {
        tracing::debug!(pdb = %meta::name(pdb), error = %e, "budget status update failed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(state: &mut State, name: &str, labels: Value, ready: bool) {
        let res = state.builtin("", "pods").unwrap();
        let created = state
            .create(
                &res,
                "default",
                json!({"metadata": {"name": name, "labels": labels},
                    "spec": {"nodeName": "n", "containers": [{"name": "c", "image": "i"}]}}),
                &mut RequestContext::manager("t"),
            )
            .unwrap();
        let mut running = (*created).clone();
        running["status"]["phase"] = json!("Running");
        running["status"]["conditions"] = json!([{"type": "Ready", "status": if ready { "True" } else { "False" }}]);
        state
            .update(
                &res,
                "default",
                name,
                running,
                Some("status"),
                &mut RequestContext::manager("t"),
            )
            .unwrap();
    }

    fn budget(state: &mut State, spec: Value) -> Value {
        let res = state.builtin("policy", "poddisruptionbudgets").unwrap();
        state
            .create(
                &res,
                "default",
                json!({"metadata": {"name": "b"}, "spec": spec}),
                &mut RequestContext::manager("t"),
            )
            .unwrap();
        sync(state, jiff::Timestamp::now());
        (*state.store.get(&res.storage, "default", "b").unwrap()).clone()
    }

    #[test]
    fn status_counts_matching_ready_pods() {
        let mut state = State::new(1000, Default::default());
        for (name, ready) in [("a", true), ("b", true), ("c", true), ("d", false)] {
            pod(&mut state, name, json!({"app": "web"}), ready);
        }
        pod(&mut state, "other", json!({"app": "db"}), true);
        let b = budget(
            &mut state,
            json!({"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}}),
        );
        let st = &b["status"];
        assert_eq!(st["expectedPods"], 4);
        assert_eq!(st["currentHealthy"], 3);
        assert_eq!(st["desiredHealthy"], 2);
        assert_eq!(st["disruptionsAllowed"], 1);
        assert_eq!(st["observedGeneration"], 1);
        assert_eq!(st["conditions"][0]["type"], "DisruptionAllowed");
        assert_eq!(st["conditions"][0]["status"], "True");
        assert_eq!(st["conditions"][0]["reason"], "SufficientPods");
        // Nothing changes: no write.
        let rv = meta::resource_version(&b).to_string();
        sync(&mut state, jiff::Timestamp::now());
        let res = state.builtin("policy", "poddisruptionbudgets").unwrap();
        assert_eq!(
            meta::resource_version(&state.store.get(&res.storage, "default", "b").unwrap()),
            rv
        );
    }

    #[test]
    fn percentages_round_up_and_max_unavailable_subtracts() {
        let mut state = State::new(1000, Default::default());
        for name in ["a", "b", "c"] {
            pod(&mut state, name, json!({"app": "web"}), true);
        }
        let b = budget(&mut state, json!({"minAvailable": "50%", "selector": {}}));
        assert_eq!(b["status"]["desiredHealthy"], 2, "50% of 3 rounds up");
        assert_eq!(b["status"]["disruptionsAllowed"], 1);
        let res = state.builtin("policy", "poddisruptionbudgets").unwrap();
        state.delete(&res, "default", "b", &Default::default()).unwrap();
        let b = budget(
            &mut state,
            json!({"maxUnavailable": "10%", "selector": {"matchLabels": {"app": "web"}}}),
        );
        assert_eq!(b["status"]["desiredHealthy"], 2, "10% of 3 rounds up to 1 unavailable");
        assert_eq!(b["status"]["disruptionsAllowed"], 1);
    }

    #[test]
    fn no_pods_no_disruptions_and_an_event() {
        let mut state = State::new(1000, Default::default());
        let b = budget(
            &mut state,
            json!({"maxUnavailable": 5, "selector": {"matchLabels": {"app": "none"}}}),
        );
        assert_eq!(b["status"]["disruptionsAllowed"], 0);
        assert_eq!(b["status"]["conditions"][0]["reason"], "InsufficientPods");
        let events = recorder::events_about(&state, meta::uid(&b));
        assert_eq!(events, [("NoPods".to_string(), "No matching pods found".to_string())]);
    }

    #[test]
    fn disrupted_pods_do_not_count_until_they_expire() {
        let mut state = State::new(1000, Default::default());
        for name in ["a", "b"] {
            pod(&mut state, name, json!({"app": "web"}), true);
        }
        let b = budget(&mut state, json!({"minAvailable": 0, "selector": {}}));
        assert_eq!(b["status"]["disruptionsAllowed"], 2);
        let res = state.builtin("policy", "poddisruptionbudgets").unwrap();
        let mut marked = b.clone();
        marked["status"]["disruptedPods"] = json!({"a": meta::now_rfc3339()});
        state
            .update(
                &res,
                "default",
                "b",
                marked,
                Some("status"),
                &mut RequestContext::manager("t"),
            )
            .unwrap();
        sync(&mut state, jiff::Timestamp::now());
        let st = state.store.get(&res.storage, "default", "b").unwrap()["status"].clone();
        assert_eq!(st["currentHealthy"], 1);
        assert!(st["disruptedPods"]["a"].is_string());
        // Three minutes later the pod was not deleted: it counts again, with a NotDeleted event.
        let later = jiff::Timestamp::now() + jiff::SignedDuration::from_secs(180);
        sync(&mut state, later);
        let st = state.store.get(&res.storage, "default", "b").unwrap()["status"].clone();
        assert_eq!(st["currentHealthy"], 2);
        assert!(st.get("disruptedPods").is_none());
        let pod_a = state
            .store
            .get(&GroupResource::new("", "pods"), "default", "a")
            .unwrap();
        assert_eq!(recorder::events_about(&state, meta::uid(&pod_a))[0].0, "NotDeleted");
    }
}
