//! `TestSyncJobPastDeadline`, with v1.37's gates (`JobManagedBy`, `JobPodReplacementPolicy` on): a Job
//! past `activeDeadlineSeconds` gets `FailureTarget` (reason `DeadlineExceeded`), its pods are deleted,
//! then `Failed`. Each case: `(parallelism, completions, activeDeadlineSeconds, seconds since start,
//! backoffLimit)`, then the pods. kwas releases the pods it deletes uncounted (upstream counts them failed:
//! the deviation the module docs name), so the failed counter differs where upstream expects a deleted pod
//! counted.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::*;

const DEADLINE_MESSAGE: &str = "Job was active longer than specified deadline";

fn past_deadline(
    parallelism: i32,
    completions: i32,
    deadline: i64,
    started_ago: i64,
    backoff_limit: i32,
    suspend: bool,
) -> Job {
    let mut j = job(parallelism, Some(completions), backoff_limit);
    spec(&mut j).active_deadline_seconds = Some(deadline);
    spec(&mut j).suspend = Some(suspend);
    let start = Timestamp::from_second(now().as_second() - started_ago).unwrap();
    with_status(
        j,
        JobStatus {
            start_time: Some(Time(start)),
            ..JobStatus::default()
        },
    )
}

fn pods(active: usize, succeeded: usize, failed: usize) -> Vec<P> {
    let mut v = Vec::new();
    for _ in 0..active {
        v.push(pod(v.len(), PodState::Active));
    }
    for _ in 0..succeeded {
        v.push(pod(v.len(), PodState::Succeeded));
    }
    for _ in 0..failed {
        v.push(pod(v.len(), PodState::Failed));
    }
    v
}

/// "activeDeadlineSeconds less than single pod execution" (1.37: FailureTarget first).
#[test]
fn active_deadline_seconds_less_than_single_pod_execution() {
    let p = sync(&past_deadline(1, 1, 10, 15, 6, false), &pods(1, 0, 0));
    assert_eq!(p.delete.len(), 1);
    assert_eq!(
        conditions(&p),
        [c(FAILURE_TARGET, "DeadlineExceeded", DEADLINE_MESSAGE)]
    );
}

/// "activeDeadlineSeconds bigger than single pod execution" / "activeDeadlineSeconds exceeded;
/// JobManagedBy enabled": the succeeded pod is counted, the running one deleted (upstream: counted
/// failed; kwas: released uncounted).
#[test]
fn active_deadline_seconds_exceeded_job_managed_by_enabled() {
    let p = sync(&past_deadline(1, 2, 10, 15, 6, false), &pods(1, 1, 0));
    assert_eq!(p.delete.len(), 1);
    assert_eq!(counters(&p).1, 1, "succeeded");
    assert_eq!(
        conditions(&p),
        [c(FAILURE_TARGET, "DeadlineExceeded", DEADLINE_MESSAGE)]
    );
}

/// "activeDeadlineSeconds times-out before any pod starts": the deadline is reached exactly (upstream
/// compares with `>=`); with no pod to wait for, `Failed` follows.
#[test]
fn active_deadline_seconds_times_out_before_any_pod_starts() {
    let p = settle(&past_deadline(1, 1, 10, 10, 6, false), &[]);
    assert!(p.create.is_empty() && p.delete.is_empty());
    assert_eq!(
        conditions(&p),
        [
            c(FAILURE_TARGET, "DeadlineExceeded", DEADLINE_MESSAGE),
            c(FAILED, "DeadlineExceeded", DEADLINE_MESSAGE)
        ]
    );
}

/// "activeDeadlineSeconds exceeded and backofflimit reached; JobManagedBy enabled": the backoff limit is
/// checked first.
#[test]
fn active_deadline_seconds_exceeded_and_backoff_limit_reached() {
    let p = settle(&past_deadline(1, 1, 1, 10, 0, false), &pods(0, 0, 1));
    assert_eq!(counters(&p).2, 1, "failed");
    let message = "Job has reached the specified backoff limit";
    assert_eq!(
        conditions(&p),
        [
            c(FAILURE_TARGET, "BackoffLimitExceeded", message),
            c(FAILED, "BackoffLimitExceeded", message)
        ]
    );
}

/// "activeDeadlineSeconds is not triggered when Job is suspended".
#[test]
fn active_deadline_seconds_is_not_triggered_when_job_is_suspended() {
    let p = sync(&past_deadline(1, 2, 10, 15, 6, true), &[]);
    assert_eq!(conditions(&p), [c("Suspended", "JobSuspended", "Job suspended")]);
}
