//! The special subresources: `pods/binding` (what a scheduler calls), `pods/eviction` (without
//! PodDisruptionBudgets every eviction is allowed) and `namespaces/finalize`.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{DeleteOptions, State};
use crate::error::{ApiError, FieldCause};
use crate::meta;
use crate::request::RequestContext;
use crate::resource::ResourceInfo;

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

/// `POST pods/<name>/eviction`: marks the pod with a `DisruptionTarget` condition and deletes it with
/// the eviction's delete options.
pub(crate) fn evict(
    state: &mut State,
    res: &ResourceInfo,
    namespace: &str,
    name: &str,
    body: &Value,
) -> Result<(), ApiError> {
    let pod = state.get(res, namespace, name)?;
    let opts = match body.get("deleteOptions") {
        Some(d) if d.is_object() => DeleteOptions::from_body(d)?,
        _ => DeleteOptions::default(),
    };
    if !meta::is_deleting(&pod) {
        let mut new = (*pod).clone();
        set_condition(
            &mut new,
            kwas_api::names::conditions::DISRUPTION_TARGET,
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
