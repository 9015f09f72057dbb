//! The StatefulSet controller: pods `<name>-<ordinal>` (from `spec.ordinals.start`), created in order and
//! only once the previous one is ready (`OrderedReady`) or all at once (`Parallel`), removed from the
//! highest ordinal down, failed pods replaced, and rolling updates that replace pods of an old revision
//! from the highest ordinal down to the partition, one at a time. Revisions are
//! `<name>-<template hash>`, on each pod as `controller-revision-hash`; no ControllerRevision objects.

use serde_json::{Map, Value, json};

use super::{
    available, controller_ref, create_pod, delete_pod, int, list, owned_pods, ready, template_hash, terminal,
    write_status,
};
use crate::api::State;
use crate::meta;

const MANAGER: &str = "statefulset-controller";
const REVISION: &str = "controller-revision-hash";

/// One pass over every StatefulSet.
pub(crate) fn sync(state: &mut State, now: jiff::Timestamp) {
    for sts in list(state, "apps", "statefulsets") {
        if !meta::is_deleting(&sts) {
            sync_one(state, &sts, now);
        }
    }
}

fn ordinal(name: &str, base: &str) -> Option<i64> {
    name.strip_prefix(base)?.strip_prefix('-')?.parse().ok()
}

fn sync_one(state: &mut State, sts: &Value, now: jiff::Timestamp) {
    let ns = meta::namespace(sts).to_string();
    let uid = meta::uid(sts).to_string();
    let name = meta::name(sts).to_string();
    let Some(template) = sts.pointer("/spec/template").cloned() else {
        return;
    };
    let replicas = int(sts, "/spec/replicas", 1).max(0);
    let start = int(sts, "/spec/ordinals/start", 0).max(0);
    let end = start.saturating_add(replicas);
    let parallel = sts.pointer("/spec/podManagementPolicy").and_then(Value::as_str) == Some("Parallel");
    let on_delete = sts.pointer("/spec/updateStrategy/type").and_then(Value::as_str) == Some("OnDelete");
    let partition = int(sts, "/spec/updateStrategy/rollingUpdate/partition", 0);
    let revision = format!("{name}-{}", template_hash(&template, 0));
    let revision_of = |p: &Value| {
        meta::string_map(p, "labels")
            .into_iter()
            .find(|(k, _)| k == REVISION)
            .map(|(_, v)| v)
    };
    let pods = owned_pods(state, &ns, &uid);
    let by_ordinal = |o: i64| pods.iter().find(|p| ordinal(meta::name(p), &name) == Some(o)).cloned();

    // Failed or succeeded pods are replaced.
    for p in pods.iter().filter(|p| terminal(p)) {
        delete_pod(state, p);
    }
    // Scale up, in ordinal order.
    let owner = controller_ref(sts, "apps/v1", "StatefulSet");
    let mut created = 0;
    for o in start..end {
        match by_ordinal(o) {
            None => {
                let pod_name = format!("{name}-{o}");
                let mut labels = Map::new();
                labels.insert(REVISION.into(), json!(revision));
                labels.insert("statefulset.kubernetes.io/pod-name".into(), json!(pod_name));
                labels.insert("apps.kubernetes.io/pod-index".into(), json!(o.to_string()));
                let service = sts
                    .pointer("/spec/serviceName")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                let hostname = pod_name.clone();
                let ok = create_pod(
                    state,
                    &ns,
                    &template,
                    &owner,
                    Some(&pod_name),
                    "",
                    &labels,
                    |spec| {
                        let s = meta::ensure_object(spec);
                        s.insert("hostname".into(), json!(hostname));
                        if let Some(svc) = service.filter(|s| !s.is_empty()) {
                            s.insert("subdomain".into(), json!(svc));
                        }
                    },
                    MANAGER,
                );
                created += 1;
                if !ok || !parallel || created >= super::CREATE_BATCH {
                    break;
                }
            }
            Some(p) if !parallel && (!ready(&p) || terminal(&p)) => break,
            Some(_) => {}
        }
    }
    // Scale down, from the highest ordinal.
    let mut extra: Vec<_> = pods
        .iter()
        .filter(|p| ordinal(meta::name(p), &name).is_none_or(|o| o < start || o >= end))
        .cloned()
        .collect();
    extra.sort_by_key(|p| std::cmp::Reverse(ordinal(meta::name(p), &name).unwrap_or(i64::MAX)));
    let all_ready = pods.iter().all(|p| ready(p));
    if parallel {
        extra.iter().for_each(|p| delete_pod(state, p));
    } else if let Some(p) = extra.first()
        && all_ready
    {
        delete_pod(state, p);
    }
    // Rolling update: the highest ordinal at or above the partition with an old revision, once every
    // pod is ready.
    if extra.is_empty() && !on_delete && all_ready {
        let stale = (start.max(partition)..end)
            .rev()
            .filter_map(&by_ordinal)
            .find(|p| revision_of(p).as_deref() != Some(revision.as_str()));
        if let Some(p) = stale {
            delete_pod(state, &p);
        }
    }

    let pods: Vec<_> = owned_pods(state, &ns, &uid)
        .into_iter()
        .filter(|p| !terminal(p))
        .collect();
    let updated = pods
        .iter()
        .filter(|p| revision_of(p).as_deref() == Some(revision.as_str()))
        .count();
    let current_revision = if i64::try_from(updated).unwrap_or(0) == replicas {
        revision.clone()
    } else {
        sts.pointer("/status/currentRevision")
            .and_then(Value::as_str)
            .unwrap_or(&revision)
            .to_string()
    };
    let current = pods
        .iter()
        .filter(|p| revision_of(p).as_deref() == Some(current_revision.as_str()))
        .count();
    let min_ready = int(sts, "/spec/minReadySeconds", 0);
    let status = json!({
        "observedGeneration": int(sts, "/metadata/generation", 1),
        "replicas": pods.len(),
        "readyReplicas": pods.iter().filter(|p| ready(p)).count(),
        "availableReplicas": pods.iter().filter(|p| available(p, min_ready, now)).count(),
        "currentReplicas": current,
        "updatedReplicas": updated,
        "currentRevision": current_revision,
        "updateRevision": revision,
        "collisionCount": 0,
    });
    let Some(latest) = state
        .store
        .get(&crate::store::GroupResource::new("apps", "statefulsets"), &ns, &name)
    else {
        return;
    };
    write_status(state, "apps", "statefulsets", &latest, status, MANAGER);
}
