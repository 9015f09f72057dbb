//! `spec.backoffLimitPerIndex` and `spec.maxFailedIndexes` (Indexed Jobs), as upstream's
//! `indexed_job_utils.go` and `backoff_utils.go`: each index has its own failure budget, counted on its
//! pods by the `batch.kubernetes.io/job-index-failure-count` annotation (the replacement of a failed pod
//! carries the failed pod's count plus one); an index whose pod fails past the budget (or matches a
//! `FailIndex` rule) is failed for good and listed in `status.failedIndexes`. The last failed pod of an
//! index keeps its tracking finalizer until its replacement exists, so the count is never lost.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use k8s_openapi::api::batch::v1::{Job, JobStatus};
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::failure_policy::{Action, is_pod_failed, match_policy, outcome_of};
use super::indexes::Indexes;
use super::{JobConfig, backoff, completions};
use crate::job::pods::{JOB_INDEX_FAILURE_COUNT, JOB_INDEX_IGNORED_FAILURE_COUNT, PodOutcomes, PodState, PodView};

/// The Job reason when more indexes failed than `maxFailedIndexes`.
pub const REASON_MAX_FAILED_INDEXES_EXCEEDED: &str = "MaxFailedIndexesExceeded";
/// The Job reason when every index finished and some failed.
pub const REASON_FAILED_INDEXES: &str = "FailedIndexes";

/// `spec.backoffLimitPerIndex` of an Indexed Job.
pub fn backoff_limit_per_index(job: &Job) -> Option<i32> {
    if !super::is_indexed(job) {
        return None;
    }
    job.spec.as_ref().and_then(|s| s.backoff_limit_per_index)
}

/// Upstream's `isIndexFailed`: the pod failed and matched `FailIndex`, or its counted failure exhausts the
/// index's budget.
pub fn is_index_failed(job: &Job, pod: &PodView, outcomes: &PodOutcomes) -> bool {
    let Some(limit) = backoff_limit_per_index(job) else {
        return false;
    };
    if !is_pod_failed(job, pod) {
        return false;
    }
    let m = match_policy(job, pod, outcome_of(outcomes, pod));
    if m.action == Some(Action::FailIndex) {
        return true;
    }
    let count = outcome_of(outcomes, pod).map_or(0, |o| o.index_failure_count);
    m.counts && count >= limit
}

fn valid_index(pod: &PodView, total: i32) -> Option<i32> {
    pod.index.filter(|i| (0..total).contains(i))
}

/// Upstream's `calculateFailedIndexes`: `status.failedIndexes` plus the indexes of tracked pods that failed
/// them.
pub fn failed_indexes(job: &Job, status: &JobStatus, pods: &[PodView], outcomes: &PodOutcomes) -> Indexes {
    let total = completions(job).unwrap_or(0);
    let mut set = Indexes::parse(status.failed_indexes.as_deref().unwrap_or(""), total);
    for p in pods.iter().filter(|p| p.tracked) {
        if let Some(i) = valid_index(p, total)
            && is_index_failed(job, p, outcomes)
        {
            set.insert(i);
        }
    }
    set
}

fn absolute_failures(pod: &PodView, outcomes: &PodOutcomes) -> i64 {
    outcome_of(outcomes, pod).map_or(0, |o| {
        i64::from(o.index_failure_count) + i64::from(o.index_ignored_failure_count)
    })
}

fn finished_at(pod: &PodView) -> Option<Timestamp> {
    pod.finished.or(pod.created)
}

/// Upstream's `getPodsWithDelayedDeletionPerIndex`: per index that is neither succeeded, failed nor active,
/// the tracked failed pod with the most failures (the latest on a tie): its finalizer stays until its
/// replacement is created with the next failure count. Values are positions in `pods`.
pub fn delayed_pods(
    job: &Job,
    pods: &[PodView],
    outcomes: &PodOutcomes,
    succeeded: &Indexes,
    failed: &Indexes,
) -> BTreeMap<i32, usize> {
    let mut delayed: BTreeMap<i32, usize> = BTreeMap::new();
    if backoff_limit_per_index(job).is_none() {
        return delayed;
    }
    let total = completions(job).unwrap_or(0);
    let active: BTreeSet<i32> = pods
        .iter()
        .filter(|p| p.state == PodState::Active)
        .filter_map(|p| p.index)
        .collect();
    for (n, p) in pods.iter().enumerate() {
        if !p.tracked || !is_pod_failed(job, p) {
            continue;
        }
        let Some(i) = valid_index(p, total) else { continue };
        if succeeded.contains(i) || failed.contains(i) || active.contains(&i) {
            continue;
        }
        match delayed.get(&i).and_then(|&k| pods.get(k)) {
            Some(last)
                if !(absolute_failures(last, outcomes) <= absolute_failures(p, outcomes)
                    && finished_at(p) >= finished_at(last)) => {}
            _ => {
                delayed.insert(i, n);
            }
        }
    }
    delayed
}

/// Upstream's `getNewIndexFailureCounts`: the failure counts of the pod replacing `replaced` (0, 0 for an
/// index's first pod). Saturating: a hostile annotation of `2147483647` stays there.
pub fn new_index_failure_counts(job: &Job, replaced: Option<&PodView>, outcomes: &PodOutcomes) -> (i32, i32) {
    let Some(p) = replaced else { return (0, 0) };
    let o = outcome_of(outcomes, p);
    let (count, ignored) = o.map_or((0, 0), |o| (o.index_failure_count, o.index_ignored_failure_count));
    if match_policy(job, p, o).counts {
        (count.saturating_add(1), ignored)
    } else {
        (count, ignored.saturating_add(1))
    }
}

/// The annotations of a new pod for an index whose last failed pod is `replaced`.
pub fn index_annotations(job: &Job, replaced: Option<&PodView>, outcomes: &PodOutcomes) -> BTreeMap<String, String> {
    let (count, ignored) = new_index_failure_counts(job, replaced, outcomes);
    let mut a = BTreeMap::from([(JOB_INDEX_FAILURE_COUNT.to_string(), count.to_string())]);
    if ignored > 0 {
        a.insert(JOB_INDEX_IGNORED_FAILURE_COUNT.to_string(), ignored.to_string());
    }
    a
}

/// Upstream's `getRemainingTimePerIndex`: how long the replacement of `last_failed` still waits (the
/// backoff after its index's absolute failure count plus one, from when it finished).
pub fn remaining_time(config: &JobConfig, last_failed: &PodView, outcomes: &PodOutcomes, now: Timestamp) -> Duration {
    let failures = i32::try_from(absolute_failures(last_failed, outcomes).saturating_add(1)).unwrap_or(i32::MAX);
    let delay = backoff(config, failures);
    let Some(at) = finished_at(last_failed) else {
        return Duration::ZERO;
    };
    let elapsed = now.duration_since(at);
    let delay = SignedDuration::try_from(delay).unwrap_or(SignedDuration::MAX);
    Duration::try_from(delay.saturating_sub(elapsed)).unwrap_or(Duration::ZERO)
}
