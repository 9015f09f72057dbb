//! `TestSyncJobWithJobBackoffLimitPerIndex` (and the backoffLimitPerIndex cases of
//! `TestTrackJobStatusAndRemoveFinalizers` and `TestGetPodCreationInfoForIndependentIndexes`). kwas writes
//! `completedIndexes` runs of two as `a-b` where upstream writes `a,b` (both parse the same).

use std::time::Duration;

use k8s_openapi::jiff::SignedDuration;

use super::*;
use crate::job::plan::per_index::{REASON_FAILED_INDEXES, REASON_MAX_FAILED_INDEXES_EXCEEDED};
use crate::job::pods::{JOB_INDEX_FAILURE_COUNT, JOB_INDEX_IGNORED_FAILURE_COUNT};

fn per_index(parallelism: i32, completions: i32, backoff_limit: i32, per_index: i32) -> Job {
    let mut j = indexed(job(parallelism, Some(completions), backoff_limit));
    spec(&mut j).backoff_limit_per_index = Some(per_index);
    j
}

fn failed_indexes(p: &Plan) -> Option<&str> {
    p.status.failed_indexes.as_deref()
}

/// TestSyncJobWithJobBackoffLimitPerIndex: "successful job after a single failure within index".
#[test]
fn successful_job_after_a_single_failure_within_index() {
    let j = per_index(2, 2, i32::MAX, 1);
    let pods = [
        pod(0, PodState::Failed).index(0).failure_count(0),
        pod(1, PodState::Succeeded).index(0).failure_count(1),
        pod(2, PodState::Succeeded).index(1),
    ];
    let p = sync(&j, &pods);
    assert_eq!(counters(&p), (0, 2, 1, 0));
    assert_eq!(p.status.completed_indexes.as_deref(), Some("0-1"));
    assert_eq!(failed_indexes(&p), Some(""));
    let kinds: Vec<String> = conditions(&p).into_iter().map(|c| c.0).collect();
    assert_eq!(kinds, vec![SUCCESS_CRITERIA_MET.to_string(), COMPLETE.to_string()]);
}

/// TestSyncJobWithJobBackoffLimitPerIndex: "single failed pod, not counted as the replacement pod creation
/// is delayed": the failed pod keeps its finalizer until its replacement exists, which carries the next
/// failure count.
#[test]
fn single_failed_pod_not_counted_while_replacement_is_created() {
    let j = per_index(2, 2, i32::MAX, 1);
    let pods = [pod(0, PodState::Failed).index(0).failure_count(0)];
    let p = sync(&j, &pods);
    assert_eq!(counters(&p), (2, 0, 0, 0));
    assert_eq!(failed_indexes(&p), Some(""));
    assert_eq!(p.create, vec![Some(0), Some(1)]);
    assert_eq!(p.create_annotations[&0][JOB_INDEX_FAILURE_COUNT], "1");
    assert_eq!(p.create_annotations[&1][JOB_INDEX_FAILURE_COUNT], "0");
    // TestTrackJobStatusAndRemoveFinalizers "indexed job with a failed pod with delayed finalizer removal;
    // the pod is not counted".
    let t = track_with(&j, &[pods[0].view.clone()], &PodOutcomes::default(), now());
    assert!(t.remove_finalizers.is_empty());
}

/// TestSyncJobWithJobBackoffLimitPerIndex: "single failed pod replaced already" (and
/// TestTrackJobStatusAndRemoveFinalizers "indexed job with a failed pod which is recreated by a running pod;
/// the pod is counted").
#[test]
fn single_failed_pod_replaced_already() {
    let j = per_index(2, 2, i32::MAX, 1);
    let pods = [
        pod(0, PodState::Failed).index(0).failure_count(0),
        pod(1, PodState::Active).index(0).failure_count(1),
    ];
    let p = sync(&j, &pods);
    assert_eq!(counters(&p), (2, 0, 1, 0));
    assert_eq!(failed_indexes(&p), Some(""));
    assert_eq!(p.create, vec![Some(1)]);
}

/// TestSyncJobWithJobBackoffLimitPerIndex: "single failed index due to exceeding the backoff limit per
/// index, the job continues" (and TestTrackJobStatusAndRemoveFinalizers "indexed job with a failed pod for a
/// failed index; the pod is counted").
#[test]
fn single_failed_index_the_job_continues() {
    let j = per_index(2, 2, i32::MAX, 1);
    let pods = [pod(0, PodState::Failed).index(0).failure_count(1)];
    let p = sync(&j, &pods);
    assert_eq!(counters(&p), (1, 0, 1, 0));
    assert_eq!(failed_indexes(&p), Some("0"));
    assert_eq!(p.create, vec![Some(1)]);
    assert_eq!(conditions(&p), vec![]);
}

/// TestSyncJobWithJobBackoffLimitPerIndex: "single failed index due to FailIndex action, the job continues".
#[test]
fn single_failed_index_due_to_fail_index_action() {
    let j = with_policy(
        per_index(2, 2, i32::MAX, 1),
        vec![on_exit_codes("FailIndex", None, "In", &[3])],
    );
    let pods = [pod(0, PodState::Failed).index(0).exit("", 3).failure_count(0)];
    let p = sync(&j, &pods);
    assert_eq!(counters(&p), (1, 0, 1, 0));
    assert_eq!(failed_indexes(&p), Some("0"));
}

/// TestSyncJobWithJobBackoffLimitPerIndex: "job failed index due to FailJob action".
#[test]
fn job_failed_due_to_fail_job_action() {
    let j = with_policy(per_index(2, 2, 6, 1), vec![on_exit_codes("FailJob", None, "In", &[3])]);
    let pods = [pod(0, PodState::Failed).index(0).exit("x", 3).failure_count(0)];
    let p = sync(&j, &pods);
    let msg = "Container x for pod default/mypod-0 failed with exit code 3 matching FailJob rule at index 0";
    assert_eq!(
        conditions(&p),
        vec![
            c(FAILURE_TARGET, "PodFailurePolicy", msg),
            c(FAILED, "PodFailurePolicy", msg)
        ]
    );
    assert_eq!(counters(&p), (0, 0, 1, 0));
    assert_eq!(failed_indexes(&p), Some(""));
}

/// TestSyncJobWithJobBackoffLimitPerIndex: "job pod failure ignored due to matching Ignore action": the
/// replacement carries the ignored-failure count, not the failure count.
#[test]
fn pod_failure_ignored_due_to_ignore_action() {
    let j = with_policy(per_index(2, 2, 6, 1), vec![on_exit_codes("Ignore", None, "In", &[3])]);
    let pods = [pod(0, PodState::Failed).index(0).exit("x", 3).failure_count(0)];
    let p = sync(&j, &pods);
    assert_eq!(counters(&p), (2, 0, 0, 0));
    assert_eq!(failed_indexes(&p), Some(""));
    assert_eq!(p.create_annotations[&0][JOB_INDEX_FAILURE_COUNT], "0");
    assert_eq!(p.create_annotations[&0][JOB_INDEX_IGNORED_FAILURE_COUNT], "1");
}

/// TestSyncJobWithJobBackoffLimitPerIndex: "job failed due to exceeding backoffLimit before
/// backoffLimitPerIndex". kwas records the two kept pods on the next reconcile, then writes `Failed`.
#[test]
fn backoff_limit_before_backoff_limit_per_index() {
    let j = per_index(2, 2, 1, 1);
    let pods = [
        pod(0, PodState::Failed).index(0).failure_count(0),
        pod(1, PodState::Failed).index(1).failure_count(0),
    ];
    let msg = "Job has reached the specified backoff limit";
    let p = sync(&j, &pods);
    assert_eq!(conditions(&p), vec![c(FAILURE_TARGET, "BackoffLimitExceeded", msg)]);
    let p = settle(&j, &pods);
    assert_eq!(counters(&p), (0, 0, 2, 0));
    assert_eq!(failed_indexes(&p), Some(""));
    assert_eq!(
        conditions(&p),
        vec![
            c(FAILURE_TARGET, "BackoffLimitExceeded", msg),
            c(FAILED, "BackoffLimitExceeded", msg)
        ]
    );
}

/// TestSyncJobWithJobBackoffLimitPerIndex: "job failed due to failed indexes" (also "...; JobManagedBy
/// enabled").
#[test]
fn job_failed_due_to_failed_indexes() {
    let j = per_index(2, 2, i32::MAX, 1);
    let pods = [
        pod(0, PodState::Failed).index(0).failure_count(1),
        pod(1, PodState::Succeeded).index(1).failure_count(0),
    ];
    let p = sync(&j, &pods);
    assert_eq!(counters(&p), (0, 1, 1, 0));
    assert_eq!(failed_indexes(&p), Some("0"));
    assert_eq!(p.status.completed_indexes.as_deref(), Some("1"));
    let msg = "Job has failed indexes";
    assert_eq!(
        conditions(&p),
        vec![
            c(FAILURE_TARGET, REASON_FAILED_INDEXES, msg),
            c(FAILED, REASON_FAILED_INDEXES, msg)
        ]
    );
}

/// TestSyncJobWithJobBackoffLimitPerIndex: "job failed due to exceeding max failed indexes" (also "...;
/// JobManagedBy enabled"). Deviation: upstream counts the running pod it deletes as failed (3); kwas
/// releases it uncounted (2).
#[test]
fn job_failed_due_to_exceeding_max_failed_indexes() {
    let mut j = per_index(4, 4, i32::MAX, 1);
    spec(&mut j).max_failed_indexes = Some(1);
    let pods = [
        pod(0, PodState::Failed).index(0).failure_count(1),
        pod(1, PodState::Succeeded).index(1),
        pod(2, PodState::Failed).index(2).failure_count(1),
        pod(3, PodState::Active).index(3),
    ];
    let p = sync(&j, &pods);
    assert_eq!(counters(&p), (0, 1, 2, 1));
    assert_eq!(failed_indexes(&p), Some("0,2"));
    assert_eq!(p.delete, vec!["mypod-3".to_string()]);
    assert_eq!(
        conditions(&p),
        vec![c(
            FAILURE_TARGET,
            REASON_MAX_FAILED_INDEXES_EXCEEDED,
            "Job has exceeded the specified maximal number of failed indexes"
        )]
    );
}

/// TestGetPodCreationInfoForIndependentIndexes: "subset of indexes can be recreated now" and "no indexes
/// can be recreated now, need to wait default pod failure backoff" / "... but 1s already passed".
#[test]
fn per_index_backoff() {
    let j = per_index(3, 4, i32::MAX, 5);
    // Index 1 failed just now (its first failure): 10s backoff; index 3 has no pod yet.
    let pods = [pod(0, PodState::Failed).index(1).failure_count(0).finished(now())];
    let p = sync(&j, &pods);
    assert_eq!(p.create, vec![Some(0), Some(2)]);
    // Every missing index waits: the soonest decides the requeue (failure counts 1, 0 and 2: 20s, 10s, 40s).
    let j = per_index(3, 3, i32::MAX, 5);
    let second_ago = now().checked_sub(SignedDuration::from_secs(1)).unwrap();
    let pods = [
        pod(0, PodState::Failed).index(0).failure_count(1).finished(second_ago),
        pod(1, PodState::Failed).index(1).failure_count(0).finished(second_ago),
        pod(2, PodState::Failed).index(2).failure_count(2).finished(second_ago),
    ];
    let p = sync(&j, &pods);
    assert!(p.create.is_empty());
    assert_eq!(p.requeue_after, Some(Duration::from_secs(9)));
}

/// Values at their limits: `completions`, `backoffLimitPerIndex` and `maxFailedIndexes` at `i32::MAX` and a
/// failure count annotation at `i32::MAX` neither overflow nor panic; the count saturates.
#[test]
fn extreme_values_saturate() {
    let mut j = per_index(3, 3, i32::MAX, i32::MAX);
    spec(&mut j).max_failed_indexes = Some(i32::MAX);
    let pods = [
        pod(0, PodState::Failed).index(0).failure_count(i32::MAX - 1),
        pod(1, PodState::Failed).index(1).failure_count(i32::MAX),
    ];
    let p = sync(&j, &pods);
    // Index 1 exhausted its budget (count >= limit); index 0 gets a replacement counting i32::MAX.
    assert_eq!(failed_indexes(&p), Some("1"));
    assert_eq!(p.create, vec![Some(0), Some(2)]);
    assert_eq!(p.create_annotations[&0][JOB_INDEX_FAILURE_COUNT], "2147483647");
    // completions i32::MAX: a failed index near the top is recorded, the first indexes are created.
    let j = per_index(3, i32::MAX, i32::MAX, 0);
    let pods = [pod(0, PodState::Failed).index(i32::MAX - 1)];
    let p = sync(&j, &pods);
    assert_eq!(failed_indexes(&p), Some("2147483646"));
    assert_eq!(p.create, vec![Some(0), Some(1), Some(2)]);
    let j = with_policy(
        per_index(1, 1, i32::MAX, 0),
        vec![on_exit_codes("Ignore", None, "In", &[1])],
    );
    let mut ignored = pod(0, PodState::Failed).index(0).exit("main", 1);
    ignored.outcome.index_ignored_failure_count = i32::MAX;
    let p = sync(&j, &[ignored]);
    assert_eq!(p.create_annotations[&0][JOB_INDEX_IGNORED_FAILURE_COUNT], "2147483647");
}
