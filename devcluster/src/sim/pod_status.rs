//! The pod status the simulated kubelet writes: its containers' statuses and the status update itself,
//! shared by the [`kubelet`](super::kubelet) (runs) and [`stop`](super::stop) (deleted pods, lost nodes).

use std::sync::Arc;

use serde_json::{Value, json};

use crate::api::State;
use crate::meta;
use crate::request::RequestContext;
use crate::sim::run_end;
use crate::store::GroupResource;

const MANAGER: &str = "kubelet";

pub(super) use run_end::containers_of;

/// The pods resource.
pub(super) fn pods_res(s: &State) -> Option<Arc<crate::resource::ResourceInfo>> {
    s.resource("", "v1", "pods")
}

/// The stored pod `ns/name` if it is still the one with `uid`.
pub(super) fn current(s: &State, ns: &str, name: &str, uid: &str) -> Option<Value> {
    let p = s.store.get(&GroupResource::new("", "pods"), ns, name)?;
    (meta::uid(&p) == uid).then(|| (*p).clone())
}

/// The pod's `containerStatuses`, each in the state `state_of(name, restarts)`.
pub(super) fn container_statuses(
    pod: &Value,
    state_of: impl Fn(&str, i64) -> Value,
    ready: bool,
    restarts: i64,
) -> Vec<Value> {
    let uid = meta::uid(pod);
    pod.pointer("/spec/containers")
        .and_then(Value::as_array)
        .map(|cs| {
            cs.iter()
                .map(|c| {
                    let name = c.get("name").and_then(Value::as_str).unwrap_or("");
                    let image = c.get("image").and_then(Value::as_str).unwrap_or("");
                    json!({
                        "name": name,
                        "image": image,
                        "imageID": format!("sim://{image}"),
                        "containerID": run_end::container_id(uid, name, restarts),
                        "ready": ready,
                        "started": ready,
                        "restartCount": restarts,
                        "state": state_of(name, restarts),
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Writes the pod's status as the kubelet (a failure is logged: the next change retries).
pub(super) fn write_status(s: &mut State, pod: Value) {
    let Some(res) = pods_res(s) else { return };
    let ns = meta::namespace(&pod).to_string();
    let name = meta::name(&pod).to_string();
    if let Err(e) = s.update(
        &res,
        &ns,
        &name,
        pod,
        Some("status"),
        &mut RequestContext::manager(MANAGER),
    ) {
        tracing::debug!(pod = %name, error = %e, "kubelet status update failed");
    }
}
