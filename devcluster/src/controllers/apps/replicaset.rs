//! The ReplicaSet controller: keeps `spec.replicas` live pods from the template (creating at most a
//! batch per pass, deleting the least valuable extra pods first: unscheduled, then pending, then not
//! ready, then the newest) and reports `replicas`, `readyReplicas`, `availableReplicas`.

use serde_json::{Map, Value, json};

use super::{
    CREATE_BATCH, available, controller_ref, create_pod, delete_pod, int, list, owned_pods, ready, terminal,
    write_status,
};
use crate::api::State;
use crate::meta;

const MANAGER: &str = "replicaset-controller";

/// One pass over every ReplicaSet.
pub(crate) fn sync(state: &mut State, now: jiff::Timestamp) {
    for rs in list(state, "apps", "replicasets") {
        if !meta::is_deleting(&rs) {
            sync_one(state, &rs, now);
        }
    }
}

/// How much a pod is worth keeping when scaling down (lower goes first).
fn value(pod: &Value) -> (u8, std::cmp::Reverse<String>) {
    let rank = if pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .unwrap_or("")
        .is_empty()
    {
        0
    } else if super::phase(pod) == "Pending" {
        1
    } else if !ready(pod) {
        2
    } else {
        3
    };
    let created = meta::meta_str(pod, "creationTimestamp").unwrap_or("").to_string();
    (rank, std::cmp::Reverse(created))
}

fn sync_one(state: &mut State, rs: &Value, now: jiff::Timestamp) {
    let ns = meta::namespace(rs).to_string();
    let uid = meta::uid(rs).to_string();
    let Some(template) = rs.pointer("/spec/template").cloned() else {
        return;
    };
    let desired = int(rs, "/spec/replicas", 1).max(0);
    let mut active: Vec<_> = owned_pods(state, &ns, &uid)
        .into_iter()
        .filter(|p| !terminal(p))
        .collect();
    let count = i64::try_from(active.len()).unwrap_or(i64::MAX);
    if count < desired {
        let owner = controller_ref(rs, "apps/v1", "ReplicaSet");
        let missing = usize::try_from(desired - count).unwrap_or(usize::MAX).min(CREATE_BATCH);
        let prefix = format!("{}-", meta::name(rs));
        for _ in 0..missing {
            if !create_pod(
                state,
                &ns,
                &template,
                &owner,
                None,
                &prefix,
                &Map::new(),
                |_| {},
                MANAGER,
            ) {
                break;
            }
        }
    } else if count > desired {
        active.sort_by_key(|p| value(p));
        let extra = usize::try_from(count - desired).unwrap_or(0);
        for pod in active.iter().take(extra) {
            delete_pod(state, pod);
        }
    }
    let pods: Vec<_> = owned_pods(state, &ns, &uid)
        .into_iter()
        .filter(|p| !terminal(p))
        .collect();
    let min_ready = int(rs, "/spec/minReadySeconds", 0);
    let n = |f: &dyn Fn(&Value) -> bool| pods.iter().filter(|p| f(p)).count();
    let status = json!({
        "replicas": pods.len(),
        "fullyLabeledReplicas": pods.len(),
        "readyReplicas": n(&|p| ready(p)),
        "availableReplicas": n(&|p| available(p, min_ready, now)),
        "observedGeneration": int(rs, "/metadata/generation", 1),
    });
    let Some(current) = state.store.get(
        &crate::store::GroupResource::new("apps", "replicasets"),
        &ns,
        meta::name(rs),
    ) else {
        return;
    };
    write_status(state, "apps", "replicasets", &current, status, MANAGER);
}
