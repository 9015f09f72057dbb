//! When a Job succeeds or fails: an invalid scheduling block, the backoff limit, the success criteria
//! (completions, or a work queue whose pods stopped after one succeeded), and the terminal condition
//! written once no pod is left running.

use std::time::Duration;

use k8s_openapi::api::batch::v1::JobStatus;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kwas_api_types::names::conditions::*;

use k8s_openapi::jiff::Timestamp;

use super::conditions::{find, remove_condition, set_condition};
use super::failure_policy::{REASON_POD_FAILURE_POLICY, fail_job_message, match_policy, outcome_of};
use super::indexes::Indexes;
use super::per_index::{
    REASON_FAILED_INDEXES, REASON_MAX_FAILED_INDEXES_EXCEEDED, backoff_limit_per_index, delayed_pods, failed_indexes,
};
use super::success_rules::{REASON_SUCCESS_POLICY, match_success_policy};
use super::tracking::uncounted;
use super::{
    Counts, Cx, Plan, PlannedEvent, SchedulingDecision, as_i32, backoff_limit, completions, delete_all_active,
    is_indexed, lifecycle, min_requeue, set_counts,
};

/// An invalid scheduling block fails the Job before any pod exists.
pub(crate) fn invalid_scheduling(cx: &Cx<'_>, scheduling: &SchedulingDecision, plan: &mut Plan) {
    let SchedulingDecision::Invalid(errs) = scheduling else {
        return;
    };
    let message = format!(
        "Failed to compile Workload for Job {}: {errs}",
        cx.job.metadata.name.as_deref().unwrap_or("")
    );
    if find(&plan.status, JOB_FAILURE_TARGET).is_none() {
        set_condition(
            &mut plan.status,
            JOB_FAILURE_TARGET,
            "True",
            "FailedWorkloadCompilation",
            &message,
            cx.now,
        );
        plan.events.push(PlannedEvent::warning(
            kwas_api_types::names::events::FAILED_WORKLOAD_COMPILATION,
            message,
        ));
    }
}

/// The counts of a tracked and flushed status.
pub(crate) fn counts(cx: &Cx<'_>, status: &JobStatus) -> Counts {
    let succeeded = status.succeeded.unwrap_or(0);
    let (uncounted_s, uncounted_f) = uncounted(status);
    let failed = status.failed.unwrap_or(0).saturating_add(as_i32(uncounted_f.len()));
    let indexed = is_indexed(cx.job);
    let completed = Indexes::parse(
        status.completed_indexes.as_deref().unwrap_or(""),
        completions(cx.job).unwrap_or(0),
    );
    let succeeded_now = if indexed {
        i32::try_from(completed.len()).unwrap_or(i32::MAX)
    } else {
        succeeded.saturating_add(as_i32(uncounted_s.len()))
    };
    let (failed_indexes, delayed) = if backoff_limit_per_index(cx.job).is_some() {
        let failed_set = failed_indexes(cx.job, status, cx.pods, cx.outcomes);
        // Once the Job ends, the tracking step records every failed pod: none is kept any more.
        let ending = find(status, JOB_FAILURE_TARGET).is_some() || find(status, JOB_SUCCESS_CRITERIA_MET).is_some();
        let delayed = if ending {
            Default::default()
        } else {
            delayed_pods(cx.job, cx.pods, cx.outcomes, &completed, &failed_set)
        };
        (failed_set, delayed)
    } else {
        Default::default()
    };
    // Failed pods kept for their index's replacement are not recorded yet, but count (upstream's
    // `newFailedPods`), unless the pod failure policy ignores them.
    let pending = delayed
        .values()
        .filter_map(|&k| cx.pods.get(k))
        .filter(|p| match_policy(cx.job, p, outcome_of(cx.outcomes, p)).counts)
        .count();
    Counts {
        succeeded_now,
        failed: failed.saturating_add(as_i32(pending)),
        uncounted: !uncounted_s.is_empty() || !uncounted_f.is_empty(),
        indexed,
        total: completions(cx.job),
        completed,
        failed_indexes,
        delayed,
    }
}

fn fail(cx: &Cx<'_>, plan: &mut Plan, reason: &str, message: &str) {
    set_condition(&mut plan.status, JOB_FAILURE_TARGET, "True", reason, message, cx.now);
    plan.events.push(PlannedEvent::warning(reason, message));
}

/// A failed pod matching a `FailJob` rule sets `FailureTarget` (reason `PodFailurePolicy`); the tracking
/// step usually wrote it already, with the pods' counts. Its event is recorded once.
fn pod_failure_policy(cx: &Cx<'_>, plan: &mut Plan) {
    let recorded = |status: Option<&JobStatus>| {
        status
            .and_then(|s| find(s, JOB_FAILURE_TARGET))
            .is_some_and(|c| c.reason.as_deref() == Some(REASON_POD_FAILURE_POLICY))
    };
    if find(&plan.status, JOB_FAILURE_TARGET).is_some() {
        if recorded(Some(&plan.status)) && !recorded(cx.job.status.as_ref()) {
            let message = find(&plan.status, JOB_FAILURE_TARGET)
                .and_then(|c| c.message.clone())
                .unwrap_or_default();
            plan.events
                .push(PlannedEvent::warning(REASON_POD_FAILURE_POLICY, message));
        }
        return;
    }
    if let Some(message) = fail_job_message(cx.job, cx.pods, cx.outcomes) {
        fail(cx, plan, REASON_POD_FAILURE_POLICY, &message);
    }
}

/// Upstream's `pastBackoffLimitOnFailure`: under `restartPolicy: OnFailure` a failing container restarts
/// in place rather than failing its pod, so the restarts of the pods not yet finished (phase Pending or
/// Running) count against `backoffLimit` (any restart when it is 0).
fn past_backoff_limit_on_failure(cx: &Cx<'_>) -> bool {
    let on_failure = cx
        .job
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|s| s.restart_policy.as_deref())
        == Some("OnFailure");
    if !on_failure {
        return false;
    }
    let restarts: i64 = cx
        .pods
        .iter()
        .filter(|p| !p.is_terminal())
        .filter_map(|p| cx.outcomes.get(&p.uid))
        .map(|o| o.restarts)
        .sum();
    match i64::from(backoff_limit(cx.job)) {
        0 => restarts > 0,
        limit => restarts >= limit,
    }
}

/// The terminal criteria in upstream's order set `FailureTarget` / `SuccessCriteriaMet`: a `FailJob` pod,
/// the backoff limit, the active deadline (from `start`), the failed indexes, the success policy, then the
/// completions.
pub(crate) fn criteria(cx: &Cx<'_>, counts: &Counts, start: Timestamp, plan: &mut Plan) {
    if find(&plan.status, JOB_SUCCESS_CRITERIA_MET).is_some() {
        return;
    }
    pod_failure_policy(cx, plan);
    if find(&plan.status, JOB_FAILURE_TARGET).is_some() {
        return;
    }
    if counts.failed > backoff_limit(cx.job) || past_backoff_limit_on_failure(cx) {
        fail(
            cx,
            plan,
            REASON_BACKOFF_LIMIT_EXCEEDED,
            "Job has reached the specified backoff limit",
        );
        return;
    }
    lifecycle::deadline(cx, start, plan);
    if find(&plan.status, JOB_FAILURE_TARGET).is_some() {
        return;
    }
    if backoff_limit_per_index(cx.job).is_some() {
        let failed = counts.failed_indexes.len();
        let max = cx.job.spec.as_ref().and_then(|s| s.max_failed_indexes);
        if max.is_some_and(|m| failed > u64::try_from(m).unwrap_or(0)) {
            fail(
                cx,
                plan,
                REASON_MAX_FAILED_INDEXES_EXCEEDED,
                "Job has exceeded the specified maximal number of failed indexes",
            );
            return;
        }
        let total = u64::try_from(counts.total.unwrap_or(0)).unwrap_or(0);
        if failed > 0 && failed.saturating_add(counts.completed.len()) >= total {
            fail(cx, plan, REASON_FAILED_INDEXES, "Job has failed indexes");
            return;
        }
    }
    if counts.indexed
        && let Some(msg) = match_success_policy(cx.job, counts.total.unwrap_or(0), &counts.completed)
    {
        set_condition(
            &mut plan.status,
            JOB_SUCCESS_CRITERIA_MET,
            "True",
            REASON_SUCCESS_POLICY,
            &msg,
            cx.now,
        );
        return;
    }
    let success = match counts.total {
        Some(c) => counts.succeeded_now >= c,
        // A work queue completes once a pod succeeded and no other pod is still running.
        None => counts.succeeded_now > 0 && cx.active.is_empty(),
    };
    if success {
        let msg = "Reached expected number of succeeded pods";
        set_condition(
            &mut plan.status,
            JOB_SUCCESS_CRITERIA_MET,
            "True",
            REASON_COMPLETIONS_REACHED,
            msg,
            cx.now,
        );
    }
}

/// Ending: remove what is left, then the terminal condition once no pod is running. Returns whether the
/// Job is ending.
pub(crate) fn ending(cx: &Cx<'_>, counts: &Counts, plan: &mut Plan) -> bool {
    let ending = find(&plan.status, JOB_FAILURE_TARGET)
        .map(|c| {
            (
                JOB_FAILED,
                c.reason.clone().unwrap_or_default(),
                c.message.clone().unwrap_or_default(),
            )
        })
        .or_else(|| {
            find(&plan.status, JOB_SUCCESS_CRITERIA_MET).map(|c| {
                (
                    JOB_COMPLETE,
                    c.reason.clone().unwrap_or_default(),
                    c.message.clone().unwrap_or_default(),
                )
            })
        });
    let Some((terminal, reason, message)) = ending else {
        return false;
    };
    delete_all_active(cx, plan);
    set_counts(cx, plan, &[]);
    // Failed pods kept for a replacement are recorded by the next tracking step, before the Job ends.
    if cx.active.is_empty() && cx.terminating == 0 && !counts.uncounted && counts.delayed.is_empty() {
        set_condition(&mut plan.status, terminal, "True", &reason, &message, cx.now);
        if terminal == JOB_COMPLETE {
            plan.status.completion_time = Some(Time(cx.now));
            plan.events.push(PlannedEvent::normal("Completed", "Job completed"));
        }
        remove_condition(&mut plan.status, JOB_SCHEDULING_BLOCKED);
    } else {
        plan.requeue_after = min_requeue(plan.requeue_after, Duration::from_secs(1));
    }
    true
}
