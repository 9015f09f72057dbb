//! The end of a simulated run: each running container exits with the code and reason its [`Outcome`]
//! gives for its attempt, then the pod's `restartPolicy` decides per container, as a kubelet does.
//!
//! - `Always` restarts every container; `OnFailure` those that exited non-zero; `Never` none. A
//!   restarted container runs again (`restartCount` + 1, a new `containerID`, `lastState.terminated`);
//!   the others stay `terminated` (not ready).
//! - While any container runs the pod stays `Running` (`Ready` only when every container is). When none
//!   does, the pod ends: `Failed` when any container's last exit code is not 0, else `Succeeded`.
//!
//! A container's attempt is [`attempt_base`] (its pod's earlier failures of the same completion index)
//! plus its `restartCount`.

use serde_json::{Value, json};

use crate::api::subresources::set_condition;
use crate::sim::outcome::{Outcome, attempt_base, pod_completion_index};

/// How one container's run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ended {
    /// The container's name.
    pub container: String,
    /// Its exit code.
    pub code: i32,
    /// Its terminated state's reason.
    pub reason: String,
    /// Whether it runs again.
    pub restarted: bool,
}

/// What a run's end did to the pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RunEnd {
    /// Some containers run again; the pod's new [`runs`].
    Running(i64),
    /// No container runs any more: the pod is `Succeeded` or `Failed`.
    Ended,
}

/// The pod's containers: (name, image).
pub(crate) fn containers_of(pod: &Value) -> Vec<(String, String)> {
    pod.pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| {
            let field = |f: &str| c.get(f).and_then(Value::as_str).unwrap_or("").to_string();
            (field("name"), field("image"))
        })
        .collect()
}

/// The `containerID` of `container`'s run number `restarts` in the pod of `uid`.
pub(crate) fn container_id(uid: &str, container: &str, restarts: i64) -> String {
    format!("sim://{}-{container}-{restarts}", uid.split('-').next().unwrap_or(uid))
}

/// How many runs ended in restarts so far: the sum of the containers' `restartCount`s (a run's end
/// changes it, so a stale timer can tell it is stale).
pub(crate) fn runs(pod: &Value) -> i64 {
    pod.pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| s.get("restartCount").and_then(Value::as_i64))
        .sum()
}

/// Ends the run of every running container of `pod` (a `Running` pod) at `now`; returns what happened
/// and how each container's run ended.
pub(crate) fn end_run(pod: &mut Value, outcome: &Outcome, now: &str) -> (RunEnd, Vec<Ended>) {
    let uid = crate::meta::uid(pod).to_string();
    let policy = pod
        .pointer("/spec/restartPolicy")
        .and_then(Value::as_str)
        .unwrap_or("Always")
        .to_string();
    let index = pod_completion_index(pod);
    let base = attempt_base(pod);
    let specs = containers_of(pod);
    let old: Vec<Value> = pod
        .pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut ended = Vec::new();
    let mut statuses = Vec::new();
    for (name, image) in &specs {
        let previous = old
            .iter()
            .find(|s| s.get("name").and_then(Value::as_str) == Some(name.as_str()));
        let restarts = previous
            .and_then(|s| s.get("restartCount"))
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let Some(started) = previous
            .and_then(|s| s.pointer("/state/running"))
            .map(|r| r.get("startedAt").and_then(Value::as_str).unwrap_or(now).to_string())
        else {
            // Not running (done under OnFailure): as it was.
            if let Some(p) = previous {
                statuses.push(p.clone());
            }
            continue;
        };
        let attempt = base.saturating_add(u32::try_from(restarts).unwrap_or(u32::MAX));
        let (code, reason) = outcome.of(index, name, attempt);
        let id = container_id(&uid, name, restarts);
        let terminated = json!({"terminated": {
            "exitCode": code, "reason": reason, "startedAt": started, "finishedAt": now, "containerID": id,
        }});
        let restart = policy == "Always" || (policy == "OnFailure" && code != 0);
        let status = if restart {
            let next = restarts.saturating_add(1);
            json!({
                "name": name, "image": image, "imageID": format!("sim://{image}"),
                "containerID": container_id(&uid, name, next), "ready": true, "started": true,
                "restartCount": next, "state": {"running": {"startedAt": now}}, "lastState": terminated,
            })
        } else {
            let mut s = json!({
                "name": name, "image": image, "imageID": format!("sim://{image}"), "containerID": id,
                "ready": false, "started": false, "restartCount": restarts, "state": terminated,
            });
            if let Some(last) = previous.and_then(|p| p.get("lastState")) {
                s["lastState"] = last.clone();
            }
            s
        };
        statuses.push(status);
        ended.push(Ended {
            container: name.clone(),
            code,
            reason,
            restarted: restart,
        });
    }
    let unready: Vec<&str> = statuses
        .iter()
        .filter(|s| s.get("ready").and_then(Value::as_bool) != Some(true))
        .filter_map(|s| s.get("name").and_then(Value::as_str))
        .collect();
    let any_running = statuses.iter().any(|s| s.pointer("/state/running").is_some());
    let failed = statuses.iter().any(|s| {
        s.pointer("/state/terminated/exitCode")
            .and_then(Value::as_i64)
            .is_some_and(|c| c != 0)
    });
    let unready_message = format!("containers with unready status: [{}]", unready.join(" "));
    pod["status"]["containerStatuses"] = json!(statuses);
    if any_running {
        for c in ["Ready", "ContainersReady"] {
            if unready.is_empty() {
                set_condition(pod, c, "True", "", "");
            } else {
                set_condition(pod, c, "False", "ContainersNotReady", &unready_message);
            }
        }
        let runs = runs(pod);
        return (RunEnd::Running(runs), ended);
    }
    pod["status"]["phase"] = json!(if failed { "Failed" } else { "Succeeded" });
    let reason = if failed { "PodFailed" } else { "PodCompleted" };
    for c in ["Ready", "ContainersReady"] {
        set_condition(pod, c, "False", reason, "");
    }
    set_condition(pod, "PodReadyToStartContainers", "False", "", "");
    (RunEnd::Ended, ended)
}

#[cfg(test)]
#[path = "run_end_tests.rs"]
mod tests;
