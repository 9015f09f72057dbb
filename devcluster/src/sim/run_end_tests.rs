//! A run's end on pod JSON: per-container codes and restarts under each restart policy.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};

use super::*;
use kwas_api_types::names::annotations::{JOB_INDEX_FAILURE_COUNT, SIM_EXIT_CODE, SIM_EXIT_REASON};

fn running_pod(policy: &str, annotations: Value) -> Value {
    json!({
        "metadata": {"name": "p", "uid": "abcd-1234", "annotations": annotations},
        "spec": {"restartPolicy": policy, "containers": [{"name": "main", "image": "i"}, {"name": "side", "image": "i"}]},
        "status": {"phase": "Running", "containerStatuses": [
            {"name": "main", "restartCount": 0, "state": {"running": {"startedAt": "t0"}}},
            {"name": "side", "restartCount": 0, "state": {"running": {"startedAt": "t0"}}},
        ]},
    })
}

fn outcome_of(pod: &Value) -> Outcome {
    Outcome::from_annotations(|k| crate::meta::annotation(pod, k)).0
}

#[test]
fn never_ends_the_pod_failed_when_any_container_fails() {
    let mut pod = running_pod(
        "Never",
        json!({SIM_EXIT_CODE: "main=42", SIM_EXIT_REASON: "main=OOMKilled"}),
    );
    let o = outcome_of(&pod);
    let (end, ended) = end_run(&mut pod, &o, "t1");
    assert_eq!(end, RunEnd::Ended);
    assert_eq!(pod["status"]["phase"], "Failed");
    let main = &pod["status"]["containerStatuses"][0]["state"]["terminated"];
    assert_eq!(main["exitCode"], 42);
    assert_eq!(main["reason"], "OOMKilled");
    assert_eq!(main["startedAt"], "t0");
    assert_eq!(main["finishedAt"], "t1");
    assert_eq!(main["containerID"], "sim://abcd-main-0");
    assert_eq!(
        pod["status"]["containerStatuses"][1]["state"]["terminated"]["reason"],
        "Completed"
    );
    assert!(ended.iter().all(|e| !e.restarted));
}

#[test]
fn on_failure_restarts_only_failed_containers_until_their_attempts_succeed() {
    let mut pod = running_pod("OnFailure", json!({SIM_EXIT_CODE: "main=3/3/0"}));
    let o = outcome_of(&pod);
    let (end, _) = end_run(&mut pod, &o, "t1");
    assert_eq!(end, RunEnd::Running(1));
    let st = pod["status"]["containerStatuses"].clone();
    assert_eq!(st[0]["restartCount"], 1);
    assert_eq!(st[0]["lastState"]["terminated"]["exitCode"], 3);
    assert!(st[0]["state"]["running"].is_object());
    assert_eq!(st[1]["state"]["terminated"]["exitCode"], 0);
    assert_eq!(pod["status"]["phase"], "Running");
    assert_eq!(end_run(&mut pod, &o, "t2").0, RunEnd::Running(2));
    let (end, ended) = end_run(&mut pod, &o, "t3");
    assert_eq!(end, RunEnd::Ended);
    assert_eq!(ended.len(), 1, "only main was still running");
    assert_eq!(pod["status"]["phase"], "Succeeded");
    assert_eq!(pod["status"]["containerStatuses"][0]["restartCount"], 2);
}

#[test]
fn always_restarts_every_container_even_after_success() {
    let mut pod = running_pod("Always", json!({}));
    let o = outcome_of(&pod);
    assert_eq!(end_run(&mut pod, &o, "t1").0, RunEnd::Running(2));
    assert_eq!(
        pod["status"]["containerStatuses"][1]["containerID"],
        "sim://abcd-side-1"
    );
}

#[test]
fn a_replacement_pod_continues_the_sequence_of_its_index() {
    let mut pod = running_pod("Never", json!({SIM_EXIT_CODE: "42/42/0", JOB_INDEX_FAILURE_COUNT: "2"}));
    let o = outcome_of(&pod);
    end_run(&mut pod, &o, "t1");
    assert_eq!(pod["status"]["phase"], "Succeeded");
}
