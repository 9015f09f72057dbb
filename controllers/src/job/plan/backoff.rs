//! Failure backoff: replacements of failed pods wait `backoff_base * 2^(failures-1)`, capped.

use std::time::Duration;

use k8s_openapi::jiff::SignedDuration;

use super::conditions::{later, since, to_duration};
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
    let last_failure = cx
        .pods
        .iter()
        .filter(|p| p.state == PodState::Failed)
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
