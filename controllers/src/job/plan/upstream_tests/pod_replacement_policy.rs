//! The `podReplacementPolicy` cases of `TestControllerSyncJob` (upstream has no separate
//! `TestSyncJobWithPodReplacementPolicy`; its integration test `TestJobPodReplacementPolicy` exercises the
//! same rules). Terminating pods are pods with a deletionTimestamp that are not terminal; in upstream's
//! table they have no completion index.

use super::*;
use crate::job::plan::failure_policy::{REPLACE_FAILED, REPLACE_TERMINATING_OR_FAILED};

fn replacement(mut job: Job, policy: Option<&str>) -> Job {
    spec(&mut job).pod_replacement_policy = policy.map(str::to_string);
    job
}

fn pods(active: usize, failed: usize, terminating: usize) -> Vec<P> {
    let mut v = Vec::new();
    for _ in 0..active {
        v.push(pod(v.len(), PodState::Active));
    }
    for _ in 0..failed {
        v.push(pod(v.len(), PodState::Failed));
    }
    for _ in 0..terminating {
        v.push(pod(v.len(), PodState::Terminating));
    }
    v
}

/// TestControllerSyncJob: "WQ job: recreate pods when failed": the terminating pod keeps its place and is
/// not counted.
#[test]
fn wq_job_recreate_pods_when_failed() {
    let j = replacement(job(1, None, 6), Some(REPLACE_FAILED));
    let p = sync(&j, &pods(1, 1, 1));
    assert_eq!(counters(&p), (1, 0, 1, 1));
    assert!(p.create.is_empty());
}

/// TestControllerSyncJob: "WQ job: turn on PodReplacementPolicy but not set PodReplacementPolicy": unset
/// means TerminatingOrFailed: the terminating pod counts as failed at once.
#[test]
fn wq_job_policy_not_set() {
    let j = replacement(job(1, Some(1), 6), None);
    let p = sync(&j, &pods(1, 1, 1));
    assert_eq!(counters(&p), (1, 0, 2, 1));
}

/// TestControllerSyncJob: "WQ job: recreate pods when terminating or failed".
#[test]
fn wq_job_recreate_pods_when_terminating_or_failed() {
    let j = replacement(job(1, None, 6), Some(REPLACE_TERMINATING_OR_FAILED));
    let p = sync(&j, &pods(1, 1, 1));
    assert_eq!(counters(&p), (1, 0, 2, 1));
}

/// TestControllerSyncJob: "more terminating pods than parallelism".
#[test]
fn more_terminating_pods_than_parallelism() {
    let j = replacement(job(1, Some(1), 6), Some(REPLACE_FAILED));
    let p = sync(&j, &pods(2, 0, 4));
    assert_eq!(counters(&p), (1, 0, 0, 5));
    assert_eq!(p.delete.len(), 1);
    assert!(p.create.is_empty());
}

/// TestControllerSyncJob: "more terminating pods than parallelism; PodFailurePolicy used" (issue 122235):
/// a pod failure policy, even without rules, replaces only failed pods.
#[test]
fn more_terminating_pods_than_parallelism_with_pod_failure_policy() {
    let j = with_policy(job(1, Some(1), 6), vec![]);
    let p = sync(&j, &pods(2, 0, 4));
    assert_eq!(counters(&p), (1, 0, 0, 5));
    assert_eq!(p.delete.len(), 1);
    assert!(p.create.is_empty());
}

/// TestControllerSyncJob: "too many active pods; PodReplacementPolicy enabled": the deleted pod is
/// reported terminating.
#[test]
fn too_many_active_pods_reports_terminating() {
    let j = job(2, Some(5), 6);
    let p = sync(&j, &pods(3, 0, 0));
    assert_eq!(counters(&p), (2, 0, 0, 1));
    assert_eq!(p.delete.len(), 1);
}

/// TestControllerSyncJob: "indexed job with some pods deleted, podReplacementPolicy Failed".
#[test]
fn indexed_job_with_pods_deleted_policy_failed() {
    let j = replacement(indexed(job(2, Some(5), 6)), Some(REPLACE_FAILED));
    let p = sync(&j, &pods(0, 0, 1));
    assert_eq!(p.create, vec![Some(0)]);
    assert_eq!(counters(&p), (1, 0, 0, 1));
}

/// TestControllerSyncJob: "indexed job with some pods deleted, podReplacementPolicy TerminatingOrFailed".
#[test]
fn indexed_job_with_pods_deleted_policy_terminating_or_failed() {
    let j = replacement(indexed(job(2, Some(5), 6)), Some(REPLACE_TERMINATING_OR_FAILED));
    let p = sync(&j, &pods(0, 0, 1));
    assert_eq!(p.create, vec![Some(0), Some(1)]);
    assert_eq!(counters(&p), (2, 0, 1, 1));
}

/// With TerminatingOrFailed an index whose pod is terminating is re-created at once; with Failed it waits
/// for the pod to be terminal (upstream's `firstPendingIndexes`).
#[test]
fn terminating_index_is_recreated_per_policy() {
    let terminating = [pod(0, PodState::Terminating).index(0)];
    let j = replacement(indexed(job(1, Some(1), 6)), Some(REPLACE_TERMINATING_OR_FAILED));
    assert_eq!(sync(&j, &terminating).create, vec![Some(0)]);
    let j = replacement(indexed(job(1, Some(1), 6)), Some(REPLACE_FAILED));
    assert!(sync(&j, &terminating).create.is_empty());
}

/// TestControllerSyncJob: "count terminating pods when indexed job fails and PodReplacementPolicy enabled".
/// Deviation: upstream counts the running pod it deletes as failed (2); kwas releases it uncounted (1).
#[test]
fn count_terminating_pods_when_indexed_job_fails() {
    let j = indexed(job(2, Some(3), 0));
    let pods = [
        pod(0, PodState::Succeeded).index(0),
        pod(1, PodState::Failed).index(1),
        pod(2, PodState::Active).index(2),
    ];
    let p = sync(&j, &pods);
    assert_eq!(counters(&p), (0, 1, 1, 1));
    assert_eq!(p.status.completed_indexes.as_deref(), Some("0"));
    assert_eq!(p.delete, vec!["mypod-2".to_string()]);
    assert_eq!(
        conditions(&p),
        vec![c(
            FAILURE_TARGET,
            "BackoffLimitExceeded",
            "Job has reached the specified backoff limit"
        )]
    );
}
