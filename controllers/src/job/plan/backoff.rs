//! Failure backoff: replacements of failed pods wait `backoff_base * 2^(failures-1)`, capped.

use std::time::Duration;

use k8s_openapi::jiff::SignedDuration;

use super::conditions::{later, since, to_duration};
use super::failure_policy::{match_policy, outcome_of};
use super::per_index::remaining_time;
use super::{Counts, Cx, JobConfig, Plan, min_requeue};
use crate::job::pods::PodState;

/// The failure backoff after `failures` failed pods.
pub fn backoff(config: &JobConfig, failures: i32) -> Duration {
    if failures <= 0 {
        return Duration::ZERO;
    }
    let exp = u32::try_from(failures - 1).unwrap_or(u32::MAX).min(30);
    config.backoff_base.saturating_mul(1u32 << exp).min(config.backoff_max)
}

/// Holds back new pods until the backoff after the last failure has passed.
pub(crate) fn gate_replacements(cx: &Cx<'_>, counts: &Counts, wanted: &mut Vec<Option<i32>>, plan: &mut Plan) {
    if wanted.is_empty() || counts.failed <= 0 {
        return;
    }
    // Failures the pod failure policy ignores do not delay replacements.
    let last_failure = cx
        .pods
        .iter()
        .filter(|p| p.state == PodState::Failed)
        .filter(|p| match_policy(cx.job, p, outcome_of(cx.outcomes, p)).counts)
        .filter_map(|p| p.finished)
        .max();
    if let Some(t) = last_failure {
        let delay = SignedDuration::try_from(backoff(cx.config, counts.failed)).unwrap_or(SignedDuration::ZERO);
        let Some(ready_at) = later(t, delay) else {
            wanted.clear();
            return;
        };
        if cx.now < ready_at {
            plan.requeue_after = min_requeue(plan.requeue_after, to_duration(since(ready_at, cx.now)));
            wanted.clear();
        }
    }
}

/// `backoffLimitPerIndex`: each index waits the backoff of its own failures (upstream's
/// `getPodCreationInfoForIndependentIndexes`): the indexes whose backoff passed are created; when none has,
/// the reconcile is requeued for the soonest.
pub(crate) fn gate_indexes(cx: &Cx<'_>, counts: &Counts, wanted: &mut Vec<Option<i32>>, plan: &mut Plan) {
    let mut soonest: Option<Duration> = None;
    let mut now = Vec::new();
    for i in wanted.iter().copied() {
        let last = i.and_then(|i| counts.delayed.get(&i)).and_then(|&k| cx.pods.get(k));
        let remaining = last.map_or(Duration::ZERO, |p| remaining_time(cx.config, p, cx.outcomes, cx.now));
        if remaining.is_zero() {
            now.push(i);
        } else {
            soonest = Some(soonest.map_or(remaining, |s| s.min(remaining)));
        }
    }
    if now.is_empty()
        && let Some(d) = soonest
    {
        plan.requeue_after = min_requeue(plan.requeue_after, d);
    }
    *wanted = now;
}
