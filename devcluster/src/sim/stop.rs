//! How the simulated kubelet stops pods: a deleted pod's containers ([`terminate`]) and the pods of a
//! removed node ([`fail_pods_on_lost_node`]). The behaviour is described in [`kubelet`](super::kubelet).

use serde_json::{Value, json};

use crate::api::subresources::set_condition;
use crate::api::{DeleteOptions, State};
use crate::meta;
use crate::sim::pod_status::{container_statuses, containers_of, current, pods_res, write_status};
use crate::sim::run_end;

/// Stops a deleted pod's containers and removes it (grace period 0); the exit code of containers that
/// were still running.
pub(crate) fn terminate(s: &mut State, ns: &str, name: &str, uid: &str, killed: bool) -> Option<i32> {
    let mut pod = current(s, ns, name, uid)?;
    let phase = pod
        .pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("Pending")
        .to_string();
    let running = phase != "Succeeded" && phase != "Failed";
    let mut stopped_with = None;
    if running {
        let now = meta::now_rfc3339();
        let started = pod
            .pointer("/status/startTime")
            .and_then(Value::as_str)
            .unwrap_or(&now)
            .to_string();
        let disrupted = pod
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|c| {
                c.get("type").and_then(Value::as_str) == Some(kwas_api_types::names::conditions::DISRUPTION_TARGET)
                    && c.get("status").and_then(Value::as_str) == Some("True")
            });
        let (code, reason) = if killed {
            (137, "Error")
        } else if disrupted {
            (143, "Error")
        } else {
            (0, "Completed")
        };
        let previous: Vec<Value> = pod
            .pointer("/status/containerStatuses")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let restarts = |c: &str| {
            previous
                .iter()
                .find(|p| p.get("name").and_then(Value::as_str) == Some(c))
                .and_then(|p| p.get("restartCount"))
                .and_then(Value::as_i64)
                .unwrap_or(0)
        };
        let statuses: Vec<Value> = containers_of(&pod)
            .iter()
            .map(|(c, image)| {
                let before = previous
                    .iter()
                    .find(|p| p.get("name").and_then(Value::as_str) == Some(c.as_str()));
                // A container that already ended (under OnFailure) keeps its state.
                if let Some(done) = before.filter(|p| p.pointer("/state/terminated").is_some()) {
                    return done.clone();
                }
                let n = restarts(c);
                let id = run_end::container_id(uid, c, n);
                let mut st = json!({"name": c, "image": image, "imageID": format!("sim://{image}"), "containerID": id,
                    "ready": false, "started": false, "restartCount": n,
                    "state": {"terminated": {"exitCode": code, "reason": reason, "startedAt": started, "finishedAt": now, "containerID": id}}});
                if let Some(last) = before.and_then(|p| p.get("lastState")) {
                    st["lastState"] = last.clone();
                }
                st
            })
            .collect();
        let failed = statuses.iter().any(|st| {
            st.pointer("/state/terminated/exitCode")
                .and_then(Value::as_i64)
                .is_some_and(|c| c != 0)
        });
        pod["status"]["containerStatuses"] = json!(statuses);
        pod["status"]["phase"] = json!(if failed { "Failed" } else { "Succeeded" });
        for c in ["Ready", "ContainersReady"] {
            set_condition(&mut pod, c, "False", "PodCompleted", "");
        }
        write_status(s, pod);
        stopped_with = Some(code);
    }
    let res = pods_res(s)?;
    let opts = DeleteOptions {
        grace_period_seconds: Some(0),
        precondition_uid: Some(uid.to_string()),
        ..Default::default()
    };
    let _ = s.delete(&res, ns, name, &opts);
    stopped_with
}

/// A node was removed: its pods fail; pods already being deleted there are removed.
pub(crate) fn fail_pods_on_lost_node(s: &mut State, node: &str) {
    let Some(res) = pods_res(s) else { return };
    let on_node: Vec<_> = s
        .store
        .list(&res.storage, None)
        .into_iter()
        .filter(|p| p.pointer("/spec/nodeName").and_then(Value::as_str) == Some(node))
        .collect();
    for p in on_node {
        let ns = meta::namespace(&p).to_string();
        let name = meta::name(&p).to_string();
        if meta::is_deleting(&p) {
            let opts = DeleteOptions {
                grace_period_seconds: Some(0),
                ..Default::default()
            };
            let _ = s.delete(&res, &ns, &name, &opts);
            continue;
        }
        let phase = p.pointer("/status/phase").and_then(Value::as_str).unwrap_or("Pending");
        if phase == "Succeeded" || phase == "Failed" {
            continue;
        }
        let mut pod = (*p).clone();
        let now = meta::now_rfc3339();
        let restarts = pod
            .pointer("/status/containerStatuses/0/restartCount")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let statuses = container_statuses(
            &pod,
            |_, _| json!({"terminated": {"exitCode": 137, "reason": "Error", "finishedAt": now}}),
            false,
            restarts,
        );
        pod["status"]["containerStatuses"] = json!(statuses);
        pod["status"]["phase"] = json!("Failed");
        pod["status"]["reason"] = json!("NodeLost");
        pod["status"]["message"] = json!(format!("node {node:?} was removed"));
        for c in ["Ready", "ContainersReady"] {
            set_condition(&mut pod, c, "False", "PodFailed", "");
        }
        set_condition(
            &mut pod,
            kwas_api_types::names::conditions::DISRUPTION_TARGET,
            "True",
            "DeletionByPodGC",
            &format!("PodGC: node {node} no longer exists"),
        );
        write_status(s, pod);
    }
}
