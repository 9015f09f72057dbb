//! `TestJobBackoffForOnFailure`: under `restartPolicy: OnFailure` the restarts of the pods still pending
//! or running count against `backoffLimit` (upstream's `pastBackoffLimitOnFailure`). Each case is
//! `(parallelism, completions, backoffLimit, restart counts, phase)`; the pods have one container with that
//! restart count. Upstream then deletes the active pods and counts them failed; kwas deletes them too and
//! releases them uncounted (the deviation the module docs name), so a failing case asserts the
//! `FailureTarget` condition with upstream's reason and message and the deletion of every active pod.

use super::*;

fn on_failure(parallelism: i32, completions: i32, backoff_limit: i32, restarts: &[i64], pending: bool) -> Plan {
    let mut j = job(parallelism, Some(completions), backoff_limit);
    spec(&mut j).template.spec = Some(k8s_openapi::api::core::v1::PodSpec {
        restart_policy: Some("OnFailure".into()),
        ..Default::default()
    });
    let pods: Vec<P> = restarts
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let mut p = pod(i, PodState::Active);
            p.outcome.restarts = *r;
            p.view.scheduled = !pending;
            p
        })
        .collect();
    sync(&j, &pods)
}

fn exceeded(p: &Plan, active: usize) {
    assert_eq!(
        conditions(p),
        [c(
            FAILURE_TARGET,
            "BackoffLimitExceeded",
            "Job has reached the specified backoff limit"
        )]
    );
    assert_eq!(p.delete.len(), active, "every active pod is deleted");
    assert!(p.create.is_empty());
}

fn running_on(p: &Plan, active: i32) {
    assert_eq!(conditions(p), []);
    assert_eq!(counters(p).0, active);
    assert!(p.delete.is_empty());
}

/// "backoffLimit 0 should have 1 pod active".
#[test]
fn backoff_limit_0_should_have_1_pod_active() {
    running_on(&on_failure(1, 1, 0, &[0], false), 1);
}

/// "backoffLimit 1 with restartCount 0 should have 1 pod active".
#[test]
fn backoff_limit_1_with_restart_count_0_should_have_1_pod_active() {
    running_on(&on_failure(1, 1, 1, &[0], false), 1);
}

/// "backoffLimit 1 with restartCount 1 and podRunning should have 0 pod active".
#[test]
fn backoff_limit_1_with_restart_count_1_and_pod_running() {
    exceeded(&on_failure(1, 1, 1, &[1], false), 1);
}

/// "backoffLimit 1 with restartCount 1 and podPending should have 0 pod active".
#[test]
fn backoff_limit_1_with_restart_count_1_and_pod_pending() {
    exceeded(&on_failure(1, 1, 1, &[1], true), 1);
}

/// "too many job failures with podRunning - single pod".
#[test]
fn too_many_job_failures_with_pod_running_single_pod() {
    exceeded(&on_failure(1, 5, 2, &[2], false), 1);
}

/// "too many job failures with podPending - single pod".
#[test]
fn too_many_job_failures_with_pod_pending_single_pod() {
    exceeded(&on_failure(1, 5, 2, &[2], true), 1);
}

/// "too many job failures with podRunning - multiple pods".
#[test]
fn too_many_job_failures_with_pod_running_multiple_pods() {
    exceeded(&on_failure(2, 5, 2, &[1, 1], false), 2);
}

/// "too many job failures with podPending - multiple pods".
#[test]
fn too_many_job_failures_with_pod_pending_multiple_pods() {
    exceeded(&on_failure(2, 5, 2, &[1, 1], true), 2);
}

/// "not enough failures".
#[test]
fn not_enough_failures() {
    running_on(&on_failure(2, 5, 3, &[1, 1], false), 2);
}

/// Not in upstream's table: restarts under `restartPolicy: Never` do not count (a container does not
/// restart there; the field is ignored as upstream ignores it), nor do those of finished pods.
#[test]
fn restarts_count_only_under_on_failure_and_only_for_unfinished_pods() {
    let mut j = job(1, Some(5), 1);
    spec(&mut j).template.spec = Some(k8s_openapi::api::core::v1::PodSpec {
        restart_policy: Some("Never".into()),
        ..Default::default()
    });
    let mut p = pod(0, PodState::Active);
    p.outcome.restarts = 7;
    running_on(&sync(&j, &[p]), 1);
    let mut j = job(1, Some(5), 1);
    spec(&mut j).template.spec = Some(k8s_openapi::api::core::v1::PodSpec {
        restart_policy: Some("OnFailure".into()),
        ..Default::default()
    });
    let mut done = pod(0, PodState::Succeeded);
    done.outcome.restarts = 7;
    let plan = sync(&j, &[done, pod(1, PodState::Active)]);
    assert!(conditions(&plan).iter().all(|c| c.0 != FAILURE_TARGET));
}
