//! The Deployment controller: one ReplicaSet per pod template (named `<deployment>-<pod-template-hash>`,
//! the hash also in its selector and pods' labels), the `deployment.kubernetes.io/revision` annotation,
//! rollouts (`Recreate`: old pods gone first; `RollingUpdate`: the new ReplicaSet scaled to `replicas`
//! at once, old ones scaled to zero once the new one is available within `maxUnavailable`), history
//! trimmed to `revisionHistoryLimit`, and the `Available` and `Progressing` conditions `kubectl rollout
//! status` reads, including `ProgressDeadlineExceeded`.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{controlled_by, controller_ref, int, list, owned_pods, scaled, template_hash, terminal, write_status};
use crate::api::{DeleteOptions, State};
use crate::meta;
use crate::request::RequestContext;

const MANAGER: &str = "deployment-controller";
const REVISION: &str = "deployment.kubernetes.io/revision";
const HASH: &str = "pod-template-hash";

/// One pass over every Deployment.
pub(crate) fn sync(state: &mut State, now: jiff::Timestamp) {
    for d in list(state, "apps", "deployments") {
        if !meta::is_deleting(&d) {
            sync_one(state, &d, now);
        }
    }
}

fn revision(rs: &Value) -> i64 {
    meta::annotation(rs, REVISION).and_then(|r| r.parse().ok()).unwrap_or(0)
}

fn set_replicas(state: &mut State, rs: &Value, replicas: i64) {
    if int(rs, "/spec/replicas", 1) == replicas {
        return;
    }
    let Some(res) = state.builtin("apps", "replicasets") else {
        return;
    };
    let mut new = rs.clone();
    new["spec"]["replicas"] = json!(replicas);
    if let Err(e) = state.update(
        &res,
        meta::namespace(rs),
        meta::name(rs),
        new,
        None,
        &mut RequestContext::manager(MANAGER),
    ) {
        tracing::debug!(rs = %meta::name(rs), error = %e, "scaling a ReplicaSet failed");
    }
}

fn create_rs(state: &mut State, d: &Value, hash: &str, replicas: i64, revision: i64) -> Option<Arc<Value>> {
    let res = state.builtin("apps", "replicasets")?;
    let mut template = d.pointer("/spec/template").cloned().unwrap_or(json!({}));
    meta::ensure_object(meta::metadata_mut(&mut template).entry("labels").or_insert(json!({})))
        .insert(HASH.into(), json!(hash));
    let mut selector = d.pointer("/spec/selector").cloned().unwrap_or(json!({}));
    meta::ensure_object(
        meta::ensure_object(&mut selector)
            .entry("matchLabels")
            .or_insert(json!({})),
    )
    .insert(HASH.into(), json!(hash));
    let mut labels = template.pointer("/metadata/labels").cloned().unwrap_or(json!({}));
    meta::ensure_object(&mut labels).insert(HASH.into(), json!(hash));
    let rs = json!({
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": format!("{}-{hash}", meta::name(d)),
            "namespace": meta::namespace(d),
            "labels": labels,
            "annotations": {
                REVISION: revision.to_string(),
                "deployment.kubernetes.io/desired-replicas": int(d, "/spec/replicas", 1).to_string(),
            },
            "ownerReferences": [controller_ref(d, "apps/v1", "Deployment")],
        },
        "spec": {
            "replicas": replicas,
            "minReadySeconds": int(d, "/spec/minReadySeconds", 0),
            "selector": selector,
            "template": template,
        },
    });
    match state.create(&res, meta::namespace(d), rs, &mut RequestContext::manager(MANAGER)) {
        Ok(rs) => Some(rs),
        Err(e) => {
            tracing::warn!(deployment = %meta::name(d), error = %e, "creating a ReplicaSet failed");
            None
        }
    }
}

fn condition(ty: &str, status: &str, reason: &str, message: &str, now: &str, old: Option<&Value>) -> Value {
    let transition = old
        .filter(|o| o.get("status").and_then(Value::as_str) == Some(status))
        .and_then(|o| o.get("lastTransitionTime").cloned())
        .unwrap_or(json!(now));
    let update = old
        .filter(|o| {
            o.get("status").and_then(Value::as_str) == Some(status)
                && o.get("reason").and_then(Value::as_str) == Some(reason)
        })
        .and_then(|o| o.get("lastUpdateTime").cloned())
        .unwrap_or(json!(now));
    json!({"type": ty, "status": status, "reason": reason, "message": message,
           "lastUpdateTime": update, "lastTransitionTime": transition})
}

fn sync_one(state: &mut State, d: &Value, now: jiff::Timestamp) {
    let ns = meta::namespace(d).to_string();
    let uid = meta::uid(d).to_string();
    let desired = int(d, "/spec/replicas", 1).max(0);
    let Some(template) = d.pointer("/spec/template") else {
        return;
    };
    let hash = template_hash(template, int(d, "/status/collisionCount", 0));
    let owned: Vec<_> = state
        .store
        .list(&crate::store::GroupResource::new("apps", "replicasets"), Some(&ns))
        .into_iter()
        .filter(|rs| controlled_by(rs, &uid) && !meta::is_deleting(rs))
        .collect();
    let paused = d.pointer("/spec/paused").and_then(Value::as_bool) == Some(true);
    let mut new_rs = owned
        .iter()
        .find(|rs| {
            meta::string_map(rs, "labels")
                .iter()
                .any(|(k, v)| k == HASH && *v == hash)
        })
        .cloned();
    let old: Vec<_> = owned
        .iter()
        .filter(|rs| new_rs.as_ref().is_none_or(|n| meta::uid(n) != meta::uid(rs)))
        .cloned()
        .collect();
    let recreate = d.pointer("/spec/strategy/type").and_then(Value::as_str) == Some("Recreate");
    let old_pods_alive = old
        .iter()
        .any(|rs| owned_pods(state, &ns, meta::uid(rs)).iter().any(|p| !terminal(p)));
    if new_rs.is_none() && !paused {
        let next_revision = owned.iter().map(|rs| revision(rs)).max().unwrap_or(0) + 1;
        let initial = if recreate && old_pods_alive { 0 } else { desired };
        new_rs = create_rs(state, d, &hash, initial, next_revision);
    }
    let max_unavailable = scaled(
        d.pointer("/spec/strategy/rollingUpdate/maxUnavailable"),
        desired,
        false,
        0,
    );
    if let Some(new) = &new_rs
        && !paused
    {
        if recreate {
            for rs in &old {
                set_replicas(state, rs, 0);
            }
            if !old_pods_alive {
                set_replicas(state, new, desired);
            }
        } else {
            set_replicas(state, new, desired);
            let new_available = int(new, "/status/availableReplicas", 0);
            if new_available >= desired.saturating_sub(max_unavailable) {
                for rs in &old {
                    set_replicas(state, rs, 0);
                }
            }
        }
        // The Deployment carries the revision of its newest ReplicaSet.
        let rev = revision(new);
        if meta::annotation(d, REVISION) != Some(rev.to_string().as_str())
            && let Some(res) = state.builtin("apps", "deployments")
            && let Some(current) = state.store.get(&res.storage, &ns, meta::name(d))
        {
            let mut updated = (*current).clone();
            meta::ensure_object(
                meta::metadata_mut(&mut updated)
                    .entry("annotations")
                    .or_insert(json!({})),
            )
            .insert(REVISION.into(), json!(rev.to_string()));
            let _ = state.update(
                &res,
                &ns,
                meta::name(d),
                updated,
                None,
                &mut RequestContext::manager(MANAGER),
            );
        }
    }
    // History: scaled-down old ReplicaSets beyond revisionHistoryLimit go, oldest revision first.
    let limit = usize::try_from(int(d, "/spec/revisionHistoryLimit", 10).max(0)).unwrap_or(usize::MAX);
    let mut idle: Vec<_> = old
        .iter()
        .filter(|rs| int(rs, "/spec/replicas", 1) == 0 && int(rs, "/status/replicas", 0) == 0)
        .cloned()
        .collect();
    if idle.len() > limit {
        idle.sort_by_key(|rs| revision(rs));
        let drop = idle.len() - limit;
        if let Some(res) = state.builtin("apps", "replicasets") {
            for rs in idle.iter().take(drop) {
                let _ = state.delete(&res, &ns, meta::name(rs), &DeleteOptions::default());
            }
        }
    }
    // Status from the ReplicaSets as they are now.
    let Some(current) = state.store.get(
        &crate::store::GroupResource::new("apps", "deployments"),
        &ns,
        meta::name(d),
    ) else {
        return;
    };
    let all: Vec<_> = state
        .store
        .list(&crate::store::GroupResource::new("apps", "replicasets"), Some(&ns))
        .into_iter()
        .filter(|rs| controlled_by(rs, &uid))
        .collect();
    let sum = |f: &str| all.iter().map(|rs| int(rs, f, 0)).sum::<i64>();
    let new_now = new_rs
        .as_ref()
        .and_then(|n| all.iter().find(|rs| meta::uid(rs) == meta::uid(n)));
    let updated = new_now.map_or(0, |n| int(n, "/status/replicas", 0));
    let replicas = sum("/status/replicas");
    let available = sum("/status/availableReplicas");
    let stamp = meta::format_time(now);
    let old_conditions: Vec<Value> = current
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let old_of = |ty: &str| {
        old_conditions
            .iter()
            .find(|c| c.get("type").and_then(Value::as_str) == Some(ty))
    };
    let available_cond = if available >= desired.saturating_sub(max_unavailable) {
        condition(
            "Available",
            "True",
            "MinimumReplicasAvailable",
            "Deployment has minimum availability.",
            &stamp,
            old_of("Available"),
        )
    } else {
        condition(
            "Available",
            "False",
            "MinimumReplicasUnavailable",
            "Deployment does not have minimum availability.",
            &stamp,
            old_of("Available"),
        )
    };
    let rs_name = new_now.map_or_else(String::new, |n| meta::name(n).to_string());
    let complete = updated == desired && replicas == desired && available == desired;
    let progressing_old = old_of("Progressing");
    let progressing = if complete {
        condition(
            "Progressing",
            "True",
            "NewReplicaSetAvailable",
            &format!("ReplicaSet \"{rs_name}\" has successfully progressed."),
            &stamp,
            progressing_old,
        )
    } else {
        let since = progressing_old
            .and_then(|c| c.get("lastUpdateTime"))
            .and_then(Value::as_str)
            .and_then(meta::parse_time)
            .unwrap_or(now);
        let deadline = int(d, "/spec/progressDeadlineSeconds", 600);
        let stalled =
            progressing_old.and_then(|c| c.get("reason")).and_then(Value::as_str) == Some("ProgressDeadlineExceeded");
        if stalled || now.as_second().saturating_sub(since.as_second()) > deadline {
            condition(
                "Progressing",
                "False",
                "ProgressDeadlineExceeded",
                &format!("ReplicaSet \"{rs_name}\" has timed out progressing."),
                &stamp,
                progressing_old,
            )
        } else {
            condition(
                "Progressing",
                "True",
                "ReplicaSetUpdated",
                &format!("ReplicaSet \"{rs_name}\" is progressing."),
                &stamp,
                progressing_old,
            )
        }
    };
    let mut status = json!({
        "observedGeneration": int(&current, "/metadata/generation", 1),
        "replicas": replicas,
        "updatedReplicas": updated,
        "readyReplicas": sum("/status/readyReplicas"),
        "availableReplicas": available,
        "conditions": [available_cond, progressing],
    });
    if desired > available {
        status["unavailableReplicas"] = json!(desired - available);
    }
    write_status(state, "apps", "deployments", &current, status, MANAGER);
}
