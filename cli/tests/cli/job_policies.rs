//! Issue 23's Job policies as users meet them: the real `kwas` binary (`kwas dev`, default flags) and
//! the real kubectl 1.37, the outcomes played by the simulated kubelet from the pod template's
//! annotations (`kwas.dev/sim-exit-code`, `kwas.dev/sim-run-duration`, `kwas.dev/sim-shutdown-duration`).
//! A `FailJob` rule on exit code 42, `backoffLimitPerIndex` with an index failing twice then succeeding,
//! a `successPolicy` ending an indexed Job early, `podReplacementPolicy: Failed` waiting for a
//! terminating pod, `kubectl create job` completing thanks to the default Job pod duration, and the
//! preemption example's gang Job surviving three preemptions with its `Ignore` rule.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use kwas_test_tools::wait::blocking::eventually_within;
use serde_json::Value;

use crate::common::{Dev, apply, get_json, items, ok, start};

/// Retries of failed pods back off 10 s, then 20 s (the Job controller's defaults under `kwas dev`).
const PATIENCE: Duration = Duration::from_secs(120);

/// The Job's condition of `type_` with status True, as (reason, lastTransitionTime).
fn condition(job: &Value, type_: &str) -> Option<(String, String)> {
    job["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_ && c["status"] == "True")
        .map(|c| {
            (
                c["reason"].as_str().unwrap_or_default().to_string(),
                c["lastTransitionTime"].as_str().unwrap_or_default().to_string(),
            )
        })
}

/// The Job once it has the condition `type_` (True).
fn wait_condition(dev: &Dev, name: &str, type_: &str) -> Value {
    eventually_within(PATIENCE, format!("Job {name} {type_}"), || {
        let job = get_json(dev, &["job", name]);
        condition(&job, type_).is_some().then_some(job)
    })
}

fn pods_of(dev: &Dev, job: &str) -> Vec<Value> {
    items(&get_json(
        dev,
        &["pods", "-l", &format!("batch.kubernetes.io/job-name={job}")],
    ))
}

#[test]
fn kubectl_create_job_completes_on_a_default_kwas_dev() {
    let dev = start(&[]);
    ok(&dev, &["create", "job", "hello", "--image=busybox"]);
    let waited = ok(
        &dev,
        &["wait", "--for=condition=complete", "job/hello", "--timeout=60s"],
    );
    assert!(waited.contains("condition met"), "{waited}");
    let job = get_json(&dev, &["job", "hello"]);
    assert_eq!(job["status"]["succeeded"], 1);
    let pods = pods_of(&dev, "hello");
    assert_eq!(pods.len(), 1);
    let main = &pods[0]["status"]["containerStatuses"][0]["state"]["terminated"];
    assert_eq!(
        (main["exitCode"].as_i64(), main["reason"].as_str()),
        (Some(0), Some("Completed"))
    );
}

#[test]
fn a_fail_job_rule_on_exit_code_42_fails_the_job_with_reason_pod_failure_policy() {
    let dev = start(&[]);
    apply(
        &dev,
        r#"apiVersion: batch/v1
kind: Job
metadata: {name: fail-on-42}
spec:
  backoffLimit: 6
  podFailurePolicy:
    rules:
    - action: FailJob
      onExitCodes: {containerName: main, operator: In, values: [42]}
  template:
    metadata:
      annotations: {kwas.dev/sim-exit-code: "42"}
    spec:
      restartPolicy: Never
      containers: [{name: main, image: busybox}]
"#,
    );
    let job = wait_condition(&dev, "fail-on-42", "Failed");
    let (reason, _) = condition(&job, "Failed").unwrap();
    assert_eq!(reason, "PodFailurePolicy");
    let message = job["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Failed")
        .and_then(|c| c["message"].as_str())
        .unwrap_or_default()
        .to_string();
    assert!(message.contains("exit code 42"), "{message}");
    assert_eq!(
        job["status"]["failed"], 1,
        "failed at the first failure, well before backoffLimit"
    );
    assert_eq!(pods_of(&dev, "fail-on-42").len(), 1, "no retry");
}

#[test]
fn backoff_limit_per_index_lets_an_index_fail_twice_then_succeed() {
    let dev = start(&[]);
    apply(
        &dev,
        r#"apiVersion: batch/v1
kind: Job
metadata: {name: per-index}
spec:
  completionMode: Indexed
  completions: 3
  parallelism: 3
  backoffLimitPerIndex: 2
  template:
    metadata:
      annotations: {kwas.dev/sim-exit-code: "1:42/42/0"}
    spec:
      restartPolicy: Never
      containers: [{name: main, image: busybox}]
"#,
    );
    let job = wait_condition(&dev, "per-index", "Complete");
    assert_eq!(job["status"]["succeeded"], 3);
    assert_eq!(job["status"]["failed"], 2);
    assert!(
        job["status"]["failedIndexes"].as_str().unwrap_or("").is_empty(),
        "{job}"
    );
    let mut index_1: Vec<(i64, String)> = pods_of(&dev, "per-index")
        .iter()
        .filter(|p| p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] == "1")
        .map(|p| {
            (
                p["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"]
                    .as_i64()
                    .unwrap_or(-1),
                p["metadata"]["annotations"]["batch.kubernetes.io/job-index-failure-count"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
            )
        })
        .collect();
    index_1.sort_by(|a, b| a.1.cmp(&b.1));
    assert_eq!(
        index_1,
        [(42, "0".to_string()), (42, "1".to_string()), (0, "2".to_string())]
    );
}

#[test]
fn a_success_policy_ends_an_indexed_job_early_and_terminates_the_rest() {
    let dev = start(&[]);
    // Index 0 succeeds after the default second; indexes 1 and 2 fail and restart in place (OnFailure)
    // until the Job ends.
    apply(
        &dev,
        r#"apiVersion: batch/v1
kind: Job
metadata: {name: leader-done}
spec:
  completionMode: Indexed
  completions: 3
  parallelism: 3
  backoffLimit: 100
  successPolicy:
    rules:
    - succeededIndexes: "0"
  template:
    metadata:
      annotations: {kwas.dev/sim-exit-code: "1:1,2:1"}
    spec:
      restartPolicy: OnFailure
      containers: [{name: main, image: busybox}]
"#,
    );
    let job = wait_condition(&dev, "leader-done", "Complete");
    let (met_reason, met_at) = condition(&job, "SuccessCriteriaMet").expect("SuccessCriteriaMet");
    let (complete_reason, complete_at) = condition(&job, "Complete").unwrap();
    assert_eq!(met_reason, "SuccessPolicy");
    assert_eq!(complete_reason, "SuccessPolicy");
    assert!(met_at <= complete_at, "{met_at} then {complete_at}");
    assert_eq!(job["status"]["completedIndexes"], "0");
    assert_eq!(job["status"]["succeeded"], 1);
    eventually_within(PATIENCE, "the other indexes' pods terminated", || {
        let left: Vec<String> = pods_of(&dev, "leader-done")
            .iter()
            .filter(|p| p["status"]["phase"] == "Running" || p["status"]["phase"] == "Pending")
            .filter_map(|p| p["metadata"]["name"].as_str().map(str::to_string))
            .collect();
        left.is_empty().then_some(()).ok_or(format!("still running: {left:?}"))
    });
    assert_eq!(job["status"]["active"].as_i64().unwrap_or(0), 0, "{job}");
}

#[test]
fn pod_replacement_policy_failed_waits_for_the_terminating_pod_to_fail() {
    let dev = start(&[]);
    // The pod runs for an hour and ignores SIGTERM for an hour: deleted with a 3 s grace period, it is
    // killed at its end (137, Failed).
    apply(
        &dev,
        r#"apiVersion: batch/v1
kind: Job
metadata: {name: replace-failed}
spec:
  backoffLimit: 3
  podReplacementPolicy: Failed
  template:
    metadata:
      annotations: {kwas.dev/sim-run-duration: 1h, kwas.dev/sim-shutdown-duration: 1h}
    spec:
      restartPolicy: Never
      containers: [{name: main, image: busybox}]
"#,
    );
    let first = eventually_within(PATIENCE, "the first pod running", || {
        let pods = pods_of(&dev, "replace-failed");
        pods.iter()
            .find(|p| p["status"]["phase"] == "Running")
            .and_then(|p| p["metadata"]["name"].as_str().map(str::to_string))
    });
    ok(&dev, &["delete", "pod", &first, "--grace-period=3", "--wait=false"]);
    let (mut saw_terminating, mut counted_terminating) = (false, false);
    let replacement = eventually_within(PATIENCE, "a replacement once the first pod failed", || {
        let pods = pods_of(&dev, "replace-failed");
        let old = pods.iter().find(|p| p["metadata"]["name"] == first.as_str());
        let others: Vec<&Value> = pods
            .iter()
            .filter(|p| p["metadata"]["name"] != first.as_str())
            .collect();
        if let Some(old) = old.filter(|o| o["metadata"]["deletionTimestamp"].is_string())
            && !matches!(old["status"]["phase"].as_str(), Some("Failed" | "Succeeded"))
        {
            saw_terminating = true;
            assert!(
                others.is_empty(),
                "a replacement while {first} is terminating: {others:?}"
            );
            let job = get_json(&dev, &["job", "replace-failed"]);
            counted_terminating |= job["status"]["terminating"] == 1;
            return None;
        }
        others
            .first()
            .and_then(|p| p["metadata"]["name"].as_str().map(str::to_string))
    });
    assert!(saw_terminating, "the first pod was seen terminating");
    assert!(counted_terminating, "the Job counted the terminating pod");
    assert_ne!(replacement, first);
    let job = eventually_within(PATIENCE, "the failure counted", || {
        let job = get_json(&dev, &["job", "replace-failed"]);
        (job["status"]["failed"] == 1).then_some(job)
    });
    assert!(condition(&job, "Failed").is_none(), "{job}");
}

/// The project's preemption scene three times over: `examples/preemption/background.yaml` (a gang Job of
/// 16 with the recommended rule, `Ignore` on `DisruptionTarget`, and the default `backoffLimit` of 6) is
/// preempted whole by three urgent gangs in turn (each needs the room of a rack of background's pods, so it
/// can only run once they are gone). Each time background's 16 pods are evicted with `DisruptionTarget`,
/// replaced without being counted, and run again as a gang: 48 failures in all against a `backoffLimit` of
/// 6, and `status.failed` stays 0, no `FailureTarget` or `Failed` condition.
#[test]
fn an_ignore_rule_keeps_a_gang_job_through_three_preemptions() {
    let dev = start(&[
        "--blocks",
        "2",
        "--racks-per-block",
        "2",
        "--nodes-per-rack",
        "4",
        "--cpu",
        "8",
        "--memory",
        "32Gi",
        "--gpus",
        "4",
    ]);
    let read = |file: &str| std::fs::read_to_string(crate::common::repo().join(file)).unwrap();
    apply(&dev, &read("examples/preemption/background.yaml"));
    // The uids of background's running pods, once all 16 run.
    let running = |dev: &Dev| -> Option<Vec<String>> {
        let uids: Vec<String> = pods_of(dev, "background")
            .iter()
            .filter(|p| p["status"]["phase"] == "Running" && p["metadata"]["deletionTimestamp"].is_null())
            .map(|p| p["metadata"]["uid"].as_str().unwrap_or_default().to_string())
            .collect();
        (uids.len() == 16).then_some(uids)
    };
    let mut before = eventually_within(PATIENCE, "background's 16 pods running", || running(&dev));
    let urgent = read("examples/preemption/urgent.yaml");
    for round in 1..=3 {
        let name = format!("urgent-{round}");
        apply(
            &dev,
            &urgent
                .replace("name: urgent", &format!("name: {name}"))
                .replace("kwas.dev/sim-run-duration: 20s", "kwas.dev/sim-run-duration: 2s"),
        );
        wait_condition(&dev, &name, "Complete");
        let after = eventually_within(PATIENCE, format!("round {round}: 16 replacement pods running"), || {
            running(&dev).filter(|uids| uids.iter().all(|u| !before.contains(u)))
        });
        let job = get_json(&dev, &["job", "background"]);
        assert_eq!(
            job["status"]["failed"].as_i64().unwrap_or(0),
            0,
            "round {round}: {}",
            job["status"]
        );
        assert!(condition(&job, "Failed").is_none(), "round {round}: {}", job["status"]);
        assert!(
            condition(&job, "FailureTarget").is_none(),
            "round {round}: {}",
            job["status"]
        );
        before = after;
    }
}
