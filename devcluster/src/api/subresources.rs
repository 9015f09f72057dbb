//! The special subresources: `pods/binding` (what a scheduler calls), `pods/eviction` (honouring
//! PodDisruptionBudgets as kube-apiserver does) and `namespaces/finalize`.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{DeleteOptions, State};
use crate::error::{ApiError, FieldCause};
use crate::meta;
use crate::request::RequestContext;
use crate::resource::ResourceInfo;
use crate::selectors::LabelSelector;
use crate::store::GroupResource;

/// Sets or replaces a condition in `status.conditions` (keeping lastTransitionTime when the status does
/// not change).
pub(crate) fn set_condition(obj: &mut Value, ty: &str, status: &str, reason: &str, message: &str) {
    let now = meta::now_rfc3339();
    let Some(root) = obj.as_object_mut() else { return };
    let st = meta::ensure_object(root.entry("status").or_insert(json!({})));
    let conds = st.entry("conditions").or_insert(json!([]));
    let Some(list) = conds.as_array_mut() else { return };
    let mut c = json!({"type": ty, "status": status, "lastProbeTime": null, "lastTransitionTime": now});
    if !reason.is_empty() {
        c["reason"] = json!(reason);
    }
    if !message.is_empty() {
        c["message"] = json!(message);
    }
    match list
        .iter_mut()
        .find(|x| x.get("type").and_then(Value::as_str) == Some(ty))
    {
        Some(existing) => {
            if existing.get("status").and_then(Value::as_str) == Some(status)
                && let Some(t) = existing.get("lastTransitionTime").cloned()
            {
                c["lastTransitionTime"] = t;
            }
            *existing = c;
        }
        None => list.push(c),
    }
}

/// `POST pods/<name>/binding`: assigns the pod to the target node. A pod that is already bound is a
/// 409 Conflict, as in kube-apiserver.
pub(crate) fn bind(
    state: &mut State,
    res: &ResourceInfo,
    namespace: &str,
    name: &str,
    body: &Value,
) -> Result<Arc<Value>, ApiError> {
    let target = body.pointer("/target/name").and_then(Value::as_str).unwrap_or("");
    let mut causes = Vec::new();
    if target.is_empty() {
        causes.push(FieldCause::required("target.name", ""));
    } else {
        for msg in workloadbuilder::validation::strings::is_dns1123_subdomain(target) {
            causes.push(FieldCause::invalid("target.name", &json!(target), &msg));
        }
    }
    let target_kind = body.pointer("/target/kind").and_then(Value::as_str).unwrap_or("");
    if !target_kind.is_empty() && target_kind != "Node" {
        causes.push(FieldCause::not_supported("target.kind", &json!(target_kind), &["Node"]));
    }
    if !causes.is_empty() {
        return Err(ApiError::invalid("", "Binding", name, causes));
    }
    let body_name = meta::name(body);
    if !body_name.is_empty() && body_name != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({name})"
        )));
    }
    let pod = state.get(res, namespace, name)?;
    if meta::is_deleting(&pod) {
        return Err(ApiError::conflict(
            "",
            "pods/binding",
            name,
            "pod is being deleted, cannot be assigned to a host",
        ));
    }
    // The Binding's uid and resourceVersion are preconditions on the pod, as in kube-apiserver.
    let want_uid = meta::uid(body);
    if !want_uid.is_empty() && want_uid != meta::uid(&pod) {
        return Err(ApiError::conflict(
            "",
            "pods/binding",
            name,
            &format!(
                "Precondition failed: UID in precondition: {want_uid}, UID in object meta: {}",
                meta::uid(&pod)
            ),
        ));
    }
    let want_rv = meta::resource_version(body);
    if !want_rv.is_empty() && want_rv != meta::resource_version(&pod) {
        return Err(ApiError::conflict(
            "",
            "pods/binding",
            name,
            &format!(
                "Precondition failed: ResourceVersion in precondition: {want_rv}, ResourceVersion in object meta: {}",
                meta::resource_version(&pod)
            ),
        ));
    }
    let current = pod.pointer("/spec/nodeName").and_then(Value::as_str).unwrap_or("");
    if !current.is_empty() {
        return Err(ApiError::conflict(
            "",
            "pods/binding",
            name,
            &format!("pod {name} is already assigned to node {current:?}"),
        ));
    }
    let mut new = (*pod).clone();
    new["spec"]["nodeName"] = json!(target);
    set_condition(&mut new, "PodScheduled", "True", "", "");
    let annotations = body.pointer("/metadata/annotations");
    if let Some(a) = annotations
        && !a.is_null()
        && !a.as_object().is_some_and(|m| m.values().all(Value::is_string))
    {
        return Err(ApiError::bad_request(
            "Binding in version \"v1\" cannot be handled as a Binding: metadata.annotations must be a map of strings",
        ));
    }
    if let Some(anns) = annotations.and_then(Value::as_object) {
        let mut causes = Vec::new();
        for k in anns.keys() {
            for msg in workloadbuilder::validation::strings::is_qualified_name(k) {
                causes.push(FieldCause::invalid("metadata.annotations", &json!(k), &msg));
            }
        }
        if !causes.is_empty() {
            return Err(ApiError::invalid("", "Binding", name, causes));
        }
    }
    if let Some(anns) = annotations.and_then(Value::as_object) {
        let m = meta::metadata_mut(&mut new);
        let a = m.entry("annotations").or_insert(json!({}));
        if let Some(a) = a.as_object_mut() {
            for (k, v) in anns {
                a.insert(k.clone(), v.clone());
            }
        }
    }
    let stored = state.store.put(&res.storage, new);
    Ok(stored)
}

/// Upstream's answer when a pod is selected by more than one PodDisruptionBudget.
const MULTIPLE_BUDGETS: &str =
    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.";
/// Upstream's answer when a budget allows no disruption.
const BUDGET_VIOLATION: &str = "Cannot evict pod as it would violate the pod's disruption budget.";
/// At most this many approved evictions wait in a budget's `disruptedPods` (upstream's
/// `MaxDisruptedPodSize`).
const MAX_DISRUPTED_PODS: usize = 2000;

/// `POST pods/<name>/eviction`, as kube-apiserver's `EvictionREST.Create`: the Eviction must name the pod
/// of the URL; a pod that is `Pending`, `Succeeded`, `Failed` or already being deleted is deleted without
/// consulting budgets; otherwise the PodDisruptionBudgets of its namespace whose selector matches it
/// decide: none lets it go, more than one is a 500, and one must allow a disruption. A pod that is not
/// Ready does not spend the budget when the budget's `unhealthyPodEvictionPolicy` is `AlwaysAllow`, or
/// (`IfHealthyBudget`, the default) when the budget is met (`currentHealthy >= desiredHealthy > 0`);
/// otherwise the budget must have `disruptionsAllowed > 0` (else 429 `TooManyRequests` with a
/// `DisruptionBudget` cause), a status that observed its generation (else 429 too) and fewer than 2,000
/// unconfirmed evictions; the eviction spends one disruption and records the pod in `disruptedPods`, in the
/// same request. Then the pod gets the `DisruptionTarget` condition and is deleted with the eviction's
/// delete options. A dry run (`dryRun=All` on the request or in the delete options) checks everything and
/// changes nothing.
pub(crate) fn evict(
    state: &mut State,
    res: &ResourceInfo,
    namespace: &str,
    name: &str,
    body: &Value,
    dry_run: bool,
) -> Result<(), ApiError> {
    if meta::name(body) != name {
        return Err(ApiError::bad_request(
            "name in URL does not match name in Eviction object",
        ));
    }
    let pod = state.get(res, namespace, name)?;
    let mut opts = match body.get("deleteOptions") {
        Some(d) if d.is_object() => DeleteOptions::from_body(d)?,
        _ => DeleteOptions::default(),
    };
    opts.dry_run |= dry_run;
    let phase = pod.pointer("/status/phase").and_then(Value::as_str).unwrap_or("");
    let ignore_budgets = matches!(phase, "Succeeded" | "Failed" | "Pending") || meta::is_deleting(&pod);
    if !ignore_budgets {
        let budgets = budgets_of(state, &pod);
        if budgets.len() > 1 {
            return Err(ApiError::new(500, "", MULTIPLE_BUDGETS, None));
        }
        if let Some(pdb) = budgets.first()
            && !unhealthy_pod_may_go(pdb, &pod)
        {
            spend_budget(state, pdb, name, opts.dry_run)?;
        }
    }
    if opts.dry_run {
        return state.delete(res, namespace, name, &opts).map(|_| ());
    }
    // The preconditions are checked before the pod is marked (upstream's `addConditionAndDeletePod`; a
    // budget already spent stays spent, as upstream's does).
    if let Some(uid) = opts.precondition_uid.as_deref()
        && !uid.is_empty()
        && uid != meta::uid(&pod)
    {
        return Err(ApiError::conflict(
            "",
            "Pod",
            name,
            &format!(
                "the UID in the precondition ({uid}) does not match the UID in record ({}). The object might have been deleted and then recreated",
                meta::uid(&pod)
            ),
        ));
    }
    if let Some(rv) = opts.precondition_rv.as_deref()
        && !rv.is_empty()
        && rv != meta::resource_version(&pod)
    {
        return Err(ApiError::conflict(
            "",
            "Pod",
            name,
            &format!(
                "the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record ({}). The object might have been modified",
                meta::resource_version(&pod)
            ),
        ));
    }
    if !meta::is_deleting(&pod) {
        let mut new = (*pod).clone();
        set_condition(
            &mut new,
            kwas_api_types::names::conditions::DISRUPTION_TARGET,
            "True",
            "EvictionByEvictionAPI",
            "Eviction API: evicting",
        );
        state.update(
            res,
            namespace,
            name,
            new,
            Some("status"),
            &mut RequestContext::manager("kube-apiserver"),
        )?;
    }
    state.delete(res, namespace, name, &opts)?;
    Ok(())
}

/// The PodDisruptionBudgets of the pod's namespace whose selector matches it (`null` matches nothing,
/// `{}` everything).
fn budgets_of(state: &State, pod: &Value) -> Vec<Arc<Value>> {
    state
        .store
        .list(
            &GroupResource::new("policy", "poddisruptionbudgets"),
            Some(meta::namespace(pod)),
        )
        .into_iter()
        .filter(|pdb| LabelSelector::from_api(pdb.pointer("/spec/selector")).is_some_and(|s| s.matches(pod)))
        .collect()
}

fn status_int(pdb: &Value, field: &str) -> i64 {
    pdb.pointer(&format!("/status/{field}"))
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

/// Whether a pod that is not Ready may go without spending the budget.
fn unhealthy_pod_may_go(pdb: &Value, pod: &Value) -> bool {
    if crate::views::pod_is_ready(pod) {
        return false;
    }
    if pdb.pointer("/spec/unhealthyPodEvictionPolicy").and_then(Value::as_str) == Some("AlwaysAllow") {
        return true;
    }
    let desired = status_int(pdb, "desiredHealthy");
    status_int(pdb, "currentHealthy") >= desired && desired > 0
}

/// Upstream's `checkAndDecrement`: refuses when the budget allows no disruption, else spends one and
/// records the pod in `disruptedPods` (not in a dry run).
fn spend_budget(state: &mut State, pdb: &Value, pod: &str, dry_run: bool) -> Result<(), ApiError> {
    let name = meta::name(pdb);
    let generation = meta::metadata(pdb)
        .and_then(|m| m.get("generation"))
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let observed = status_int(pdb, "observedGeneration");
    if observed < generation {
        return Err(ApiError::too_many_requests_because(
            BUDGET_VIOLATION,
            10,
            "DisruptionBudget",
            format!("The disruption budget {name} is still being processed by the server."),
        ));
    }
    let allowed = status_int(pdb, "disruptionsAllowed");
    if allowed < 0 {
        return Err(ApiError::forbidden(
            "policy",
            "poddisruptionbudget",
            name,
            "pdb disruptions allowed is negative",
        ));
    }
    let disrupted = pdb
        .pointer("/status/disruptedPods")
        .and_then(Value::as_object)
        .map_or(0, |m| m.len());
    if disrupted > MAX_DISRUPTED_PODS {
        return Err(ApiError::forbidden(
            "policy",
            "poddisruptionbudget",
            name,
            "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
        ));
    }
    if allowed == 0 {
        return Err(ApiError::too_many_requests_because(
            BUDGET_VIOLATION,
            0,
            "DisruptionBudget",
            format!(
                "The disruption budget {name} needs {} healthy pods and has {} currently",
                status_int(pdb, "desiredHealthy"),
                status_int(pdb, "currentHealthy")
            ),
        ));
    }
    if dry_run {
        return Ok(());
    }
    let mut new = pdb.clone();
    let left = allowed - 1;
    new["status"]["disruptionsAllowed"] = json!(left);
    if left == 0 {
        new["status"]["conditions"] = crate::views::with_condition(pdb.pointer("/status/conditions"), false, observed);
    }
    let entries = meta::ensure_object(&mut new["status"]);
    let map = meta::ensure_object(entries.entry("disruptedPods").or_insert(json!({})));
    map.insert(pod.to_string(), json!(meta::now_rfc3339()));
    let Some(res) = state.builtin("policy", "poddisruptionbudgets") else {
        return Err(ApiError::internal("poddisruptionbudgets are not served"));
    };
    state.update(
        &res,
        meta::namespace(pdb),
        name,
        new,
        Some("status"),
        &mut RequestContext::manager("kube-apiserver"),
    )?;
    Ok(())
}

/// `PUT namespaces/<name>/finalize`: replaces `spec.finalizers`, removing a deleting namespace whose
/// finalizers are all gone.
pub(crate) fn finalize_namespace(
    state: &mut State,
    res: &ResourceInfo,
    name: &str,
    body: &Value,
) -> Result<Arc<Value>, ApiError> {
    let ns = state.get(res, "", name)?;
    let mut new = (*ns).clone();
    new["spec"]["finalizers"] = body.pointer("/spec/finalizers").cloned().unwrap_or(json!([]));
    let empty = new
        .pointer("/spec/finalizers")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    if empty && meta::is_deleting(&new) && meta::finalizers(&new).is_empty() {
        return state
            .remove_now(res, "", name)
            .ok_or_else(|| ApiError::not_found("", "namespaces", name));
    }
    Ok(state.store.put(&res.storage, new))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn pod(state: &mut State, name: &str, phase: &str, ready: bool) {
        let res = state.builtin("", "pods").unwrap();
        let created = state
            .create(
                &res,
                "default",
                json!({"metadata": {"name": name, "labels": {"app": "web"}},
                    "spec": {"nodeName": "n", "containers": [{"name": "c", "image": "i"}]}}),
                &mut RequestContext::manager("t"),
            )
            .unwrap();
        let mut st = (*created).clone();
        st["status"]["phase"] = json!(phase);
        st["status"]["conditions"] = json!([{"type": "Ready", "status": if ready { "True" } else { "False" }}]);
        state
            .update(
                &res,
                "default",
                name,
                st,
                Some("status"),
                &mut RequestContext::manager("t"),
            )
            .unwrap();
    }

    fn budget(state: &mut State, name: &str, spec: Value) {
        let res = state.builtin("policy", "poddisruptionbudgets").unwrap();
        state
            .create(
                &res,
                "default",
                json!({"metadata": {"name": name}, "spec": spec}),
                &mut RequestContext::manager("t"),
            )
            .unwrap();
        crate::controllers::disruption::sync(state, jiff::Timestamp::now());
    }

    fn evict_pod(state: &mut State, name: &str, dry_run: bool) -> Result<(), ApiError> {
        let res = state.builtin("", "pods").unwrap();
        evict(
            state,
            &res,
            "default",
            name,
            &json!({"metadata": {"name": name}}),
            dry_run,
        )
    }

    fn pdb(state: &State, name: &str) -> Value {
        (*state
            .store
            .get(&GroupResource::new("policy", "poddisruptionbudgets"), "default", name)
            .unwrap())
        .clone()
    }

    fn deleting(state: &State, name: &str) -> bool {
        state
            .store
            .get(&GroupResource::new("", "pods"), "default", name)
            .is_none_or(|p| meta::is_deleting(&p))
    }

    #[test]
    fn a_budget_allows_what_it_can_spare_then_answers_429() {
        let mut state = State::new(1000, Default::default());
        for p in ["a", "b", "c"] {
            pod(&mut state, p, "Running", true);
        }
        budget(
            &mut state,
            "web",
            json!({"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}}),
        );
        assert_eq!(pdb(&state, "web")["status"]["disruptionsAllowed"], 1);
        // A dry run changes nothing.
        evict_pod(&mut state, "a", true).unwrap();
        assert!(!deleting(&state, "a"));
        assert_eq!(pdb(&state, "web")["status"]["disruptionsAllowed"], 1);

        evict_pod(&mut state, "a", false).unwrap();
        assert!(deleting(&state, "a"));
        let a = state
            .store
            .get(&GroupResource::new("", "pods"), "default", "a")
            .unwrap();
        assert_eq!(crate::views::condition_status(&a, "DisruptionTarget"), Some("True"));
        let st = pdb(&state, "web")["status"].clone();
        assert_eq!(st["disruptionsAllowed"], 0, "spent in the same request");
        assert!(st["disruptedPods"]["a"].is_string());
        assert_eq!(st["conditions"][0]["reason"], "InsufficientPods");

        let refused = evict_pod(&mut state, "b", false).unwrap_err();
        assert_eq!(refused.code(), 429);
        assert_eq!(refused.reason(), "TooManyRequests");
        assert_eq!(
            refused.message(),
            "Cannot evict pod as it would violate the pod's disruption budget."
        );
        let details = refused.0.details.clone().unwrap();
        assert_eq!(details.retry_after_seconds, None);
        let cause = &details.causes.unwrap()[0];
        assert_eq!(cause.reason.as_deref(), Some("DisruptionBudget"));
        // The eviction spent the budget; the controller counts the pods again on its next pass.
        assert_eq!(
            cause.message.as_deref(),
            Some("The disruption budget web needs 2 healthy pods and has 3 currently")
        );
        assert!(!deleting(&state, "b"));
        crate::controllers::disruption::sync(&mut state, jiff::Timestamp::now());
        let st = pdb(&state, "web")["status"].clone();
        assert_eq!(st["currentHealthy"], 2);
        assert_eq!(st["disruptionsAllowed"], 0);
        assert!(st.get("disruptedPods").is_none(), "a deleting pod leaves disruptedPods");
    }

    #[test]
    fn pods_that_are_not_running_go_without_consulting_budgets() {
        let mut state = State::new(1000, Default::default());
        pod(&mut state, "pending", "Pending", false);
        pod(&mut state, "done", "Succeeded", false);
        budget(&mut state, "all", json!({"maxUnavailable": 0, "selector": {}}));
        evict_pod(&mut state, "pending", false).unwrap();
        evict_pod(&mut state, "done", false).unwrap();
        assert!(deleting(&state, "pending") && deleting(&state, "done"));
        let bad = evict_pod(&mut state, "nope", false).unwrap_err();
        assert_eq!(bad.code(), 404);
        let res = state.builtin("", "pods").unwrap();
        let mismatch = evict(
            &mut state,
            &res,
            "default",
            "x",
            &json!({"metadata": {"name": "y"}}),
            false,
        )
        .unwrap_err();
        assert_eq!(mismatch.message(), "name in URL does not match name in Eviction object");
        pod(&mut state, "other", "Pending", false);
        let stale = json!({"metadata": {"name": "other"}, "deleteOptions": {"preconditions": {"uid": "not-it"}}});
        let conflict = evict(&mut state, &res, "default", "other", &stale, false).unwrap_err();
        assert_eq!(conflict.code(), 409);
        assert!(
            conflict
                .message()
                .starts_with("Operation cannot be fulfilled on Pod \"other\": the UID in the precondition (not-it)"),
            "{}",
            conflict.message()
        );
        assert!(!deleting(&state, "other"));
    }

    #[test]
    fn two_budgets_are_a_500_and_an_unobserved_budget_a_429() {
        let mut state = State::new(1000, Default::default());
        pod(&mut state, "a", "Running", true);
        budget(&mut state, "one", json!({"maxUnavailable": 1, "selector": {}}));
        budget(
            &mut state,
            "two",
            json!({"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}}),
        );
        let e = evict_pod(&mut state, "a", false).unwrap_err();
        assert_eq!(e.code(), 500);
        assert_eq!(e.reason(), "");
        assert_eq!(e.message(), MULTIPLE_BUDGETS);
        let res = state.builtin("policy", "poddisruptionbudgets").unwrap();
        state.delete(&res, "default", "two", &Default::default()).unwrap();
        // A spec change the controller has not observed yet.
        let mut one = pdb(&state, "one");
        one["spec"]["maxUnavailable"] = json!(2);
        state
            .update(&res, "default", "one", one, None, &mut RequestContext::manager("t"))
            .unwrap();
        let e = evict_pod(&mut state, "a", false).unwrap_err();
        assert_eq!(e.code(), 429);
        assert_eq!(e.0.details.as_ref().unwrap().retry_after_seconds, Some(10));
        crate::controllers::disruption::sync(&mut state, jiff::Timestamp::now());
        evict_pod(&mut state, "a", false).unwrap();
    }

    #[test]
    fn unready_pods_follow_the_unhealthy_pod_eviction_policy() {
        let mut state = State::new(1000, Default::default());
        pod(&mut state, "ready", "Running", true);
        pod(&mut state, "sick", "Running", false);
        // IfHealthyBudget: the budget is met (1 healthy, 1 desired), the unready pod goes for free.
        budget(&mut state, "b", json!({"minAvailable": 1, "selector": {}}));
        assert_eq!(pdb(&state, "b")["status"]["disruptionsAllowed"], 0);
        evict_pod(&mut state, "sick", false).unwrap();
        assert!(deleting(&state, "sick"));
        assert!(pdb(&state, "b")["status"].get("disruptedPods").is_none());

        let mut state = State::new(1000, Default::default());
        pod(&mut state, "ready", "Running", true);
        pod(&mut state, "sick", "Running", false);
        // Not met (2 desired): the unready pod needs a disruption too.
        budget(&mut state, "b", json!({"minAvailable": 2, "selector": {}}));
        assert_eq!(evict_pod(&mut state, "sick", false).unwrap_err().code(), 429);
        // AlwaysAllow lets it go.
        let res = state.builtin("policy", "poddisruptionbudgets").unwrap();
        let mut b = pdb(&state, "b");
        b["spec"]["unhealthyPodEvictionPolicy"] = json!("AlwaysAllow");
        state
            .update(&res, "default", "b", b, None, &mut RequestContext::manager("t"))
            .unwrap();
        crate::controllers::disruption::sync(&mut state, jiff::Timestamp::now());
        evict_pod(&mut state, "sick", false).unwrap();
        assert!(deleting(&state, "sick"));
        assert_eq!(evict_pod(&mut state, "ready", false).unwrap_err().code(), 429);
    }
}
