//! Exact counting with the tracking finalizer: terminated pods are recorded as uncounted first, their
//! finalizer removed, then they move into the counters (upstream's tracking with finalizers).

use std::collections::HashSet;

use k8s_openapi::api::batch::v1::{Job, JobStatus, UncountedTerminatedPods};
use k8s_openapi::jiff::Timestamp;
use kwas_api_types::names::conditions::{JOB_FAILURE_TARGET, JOB_SUCCESS_CRITERIA_MET};

use super::conditions::{find, set_condition};
use super::failure_policy::{REASON_POD_FAILURE_POLICY, fail_job_message, is_pod_failed, match_policy, outcome_of};
use super::indexes::Indexes;
use super::per_index::{backoff_limit_per_index, delayed_pods, failed_indexes};
use super::{Tracking, completions, is_indexed};
use crate::job::pods::{PodOutcomes, PodState, PodView};

pub(crate) fn uncounted(status: &JobStatus) -> (Vec<String>, Vec<String>) {
    let u = status.uncounted_terminated_pods.as_ref();
    (
        u.and_then(|u| u.succeeded.clone()).unwrap_or_default(),
        u.and_then(|u| u.failed.clone()).unwrap_or_default(),
    )
}

fn set_uncounted(status: &mut JobStatus, succeeded: Vec<String>, failed: Vec<String>) {
    status.uncounted_terminated_pods = Some(UncountedTerminatedPods {
        succeeded: Some(succeeded),
        failed: Some(failed),
    });
}

/// Step 1: record terminated pods that still carry the tracking finalizer, for pods whose exit codes and
/// conditions are unknown (see [`track_with`]).
pub fn track(job: &Job, pods: &[PodView]) -> Tracking {
    track_with(job, pods, &PodOutcomes::default(), Timestamp::UNIX_EPOCH)
}

/// Step 1: record terminated pods that still carry the tracking finalizer, as upstream's
/// `trackJobStatusAndRemoveFinalizers`: a failure the pod failure policy ignores is not recorded (its
/// finalizer is still removed); a pod matching a `FailJob` rule sets `FailureTarget` in the same write, so
/// the reason survives the pod; with `backoffLimitPerIndex` the failed indexes are written too and the
/// last failed pod of an index awaiting its replacement keeps its finalizer. With `podReplacementPolicy:
/// Failed` (or a pod failure policy) a pod being deleted is recorded only once terminal, unless the Job
/// is already ending.
pub fn track_with(job: &Job, pods: &[PodView], outcomes: &PodOutcomes, now: Timestamp) -> Tracking {
    let mut status = job.status.clone().unwrap_or_default();
    let conditions_before = status.conditions.clone();
    let success_met = find(&status, JOB_SUCCESS_CRITERIA_MET).is_some();
    if !success_met
        && find(&status, JOB_FAILURE_TARGET).is_none()
        && let Some(message) = fail_job_message(job, pods, outcomes)
    {
        set_condition(
            &mut status,
            JOB_FAILURE_TARGET,
            "True",
            REASON_POD_FAILURE_POLICY,
            &message,
            now,
        );
    }
    let failing = find(&status, JOB_FAILURE_TARGET).is_some();
    let ending = failing || success_met;
    let (mut succeeded, mut failed) = uncounted(&status);
    let indexed = is_indexed(job);
    let total = completions(job).unwrap_or(0);
    let mut completed = Indexes::parse(status.completed_indexes.as_deref().unwrap_or(""), total);
    let before = (succeeded.len(), failed.len(), completed.len());
    let per_index = backoff_limit_per_index(job).is_some();
    // Succeeded indexes first: a pod of a completed index is never kept for a replacement.
    if indexed {
        for p in pods
            .iter()
            .filter(|p| p.tracked && p.state == PodState::Succeeded && !failed.contains(&p.uid))
        {
            if let Some(i) = p.index.filter(|i| (0..total).contains(i)) {
                completed.insert(i);
            }
        }
    }
    let failed_idx = if per_index {
        failed_indexes(job, &status, pods, outcomes)
    } else {
        Indexes::default()
    };
    let delayed: HashSet<usize> = if per_index && !ending {
        delayed_pods(job, pods, outcomes, &completed, &failed_idx)
            .into_values()
            .collect()
    } else {
        HashSet::new()
    };
    let mut remove = Vec::new();
    for (n, p) in pods.iter().enumerate().filter(|(_, p)| p.tracked) {
        let considered_failed = is_pod_failed(job, p);
        match p.state {
            PodState::Active => continue,
            // Kept until terminal (podReplacementPolicy Failed), unless the Job ends: then a pod still
            // terminating counts as failed if the Job fails, and not at all if it succeeds.
            PodState::Terminating if !considered_failed && !ending => continue,
            PodState::Terminating if !considered_failed && success_met => {}
            PodState::Failed | PodState::Terminating if delayed.contains(&n) => continue,
            PodState::Succeeded if !failed.contains(&p.uid) => {
                if indexed {
                    // The completion index avoids recounting: no uid needed.
                    if let Some(i) = p.index.filter(|i| (0..total).contains(i)) {
                        completed.insert(i);
                    }
                } else if !succeeded.contains(&p.uid) {
                    succeeded.push(p.uid.clone());
                }
            }
            PodState::Succeeded => {}
            PodState::Failed | PodState::Terminating => {
                if !failed.contains(&p.uid)
                    && !succeeded.contains(&p.uid)
                    && match_policy(job, p, outcome_of(outcomes, p)).counts
                {
                    failed.push(p.uid.clone());
                }
            }
        }
        remove.push(p.name.clone());
    }
    let mut changed = (succeeded.len(), failed.len(), completed.len()) != before;
    if indexed {
        status.completed_indexes = (!completed.is_empty()).then(|| completed.to_string());
    }
    if per_index {
        let s = Some(failed_idx.to_string());
        changed |= status.failed_indexes != s;
        status.failed_indexes = s;
    }
    changed |= status.conditions != conditions_before;
    set_uncounted(&mut status, succeeded, failed);
    Tracking {
        status,
        changed,
        remove_finalizers: remove,
    }
}

/// Step 3: move uncounted pods whose finalizer is gone (`still_tracked` holds the uids that still carry it)
/// into the counters. Returns true when the status changed.
pub fn flush(job: &Job, status: &mut JobStatus, still_tracked: &HashSet<String>) -> bool {
    let (succeeded, failed) = uncounted(status);
    let (done_s, keep_s): (Vec<_>, Vec<_>) = succeeded.into_iter().partition(|u| !still_tracked.contains(u));
    let (done_f, keep_f): (Vec<_>, Vec<_>) = failed.into_iter().partition(|u| !still_tracked.contains(u));
    let changed = !done_s.is_empty() || !done_f.is_empty();
    let as_i32 = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
    if is_indexed(job) {
        let completed = Indexes::parse(
            status.completed_indexes.as_deref().unwrap_or(""),
            completions(job).unwrap_or(0),
        );
        let succeeded = i32::try_from(completed.len()).unwrap_or(i32::MAX);
        let flushed = status.succeeded != Some(succeeded);
        status.succeeded = Some(succeeded);
        status.failed = Some(status.failed.unwrap_or(0).saturating_add(as_i32(done_f.len())));
        set_uncounted(status, keep_s, keep_f);
        return changed || flushed;
    }
    status.succeeded = Some(status.succeeded.unwrap_or(0).saturating_add(as_i32(done_s.len())));
    status.failed = Some(status.failed.unwrap_or(0).saturating_add(as_i32(done_f.len())));
    set_uncounted(status, keep_s, keep_f);
    changed
}
