//! When a Job succeeds or fails: an invalid scheduling block, the backoff limit, the success criteria
//! (completions, or a work queue whose pods stopped after one succeeded), and the terminal condition
//! written once no pod is left running.

use std::time::Duration;

use k8s_openapi::api::batch::v1::JobStatus;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kwas_api_types::names::conditions::*;

use super::conditions::{find, remove_condition, set_condition};
use super::indexes::Indexes;
use super::tracking::uncounted;
use super::{
    Counts, Cx, Plan, PlannedEvent, SchedulingDecision, as_i32, backoff_limit, completions, delete_all_active,
    is_indexed, min_requeue, set_counts,
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
    Counts {
        succeeded_now,
        failed,
        uncounted: !uncounted_s.is_empty() || !uncounted_f.is_empty(),
        indexed,
        total: completions(cx.job),
        completed,
    }
}

/// The backoff limit and the success criteria set `FailureTarget` / `SuccessCriteriaMet`.
pub(crate) fn criteria(cx: &Cx<'_>, counts: &Counts, plan: &mut Plan) {
    if find(&plan.status, JOB_FAILURE_TARGET).is_some() || find(&plan.status, JOB_SUCCESS_CRITERIA_MET).is_some() {
        return;
    }
    if counts.failed > backoff_limit(cx.job) {
        let msg = "Job has reached the specified backoff limit";
        set_condition(
            &mut plan.status,
            JOB_FAILURE_TARGET,
            "True",
            REASON_BACKOFF_LIMIT_EXCEEDED,
            msg,
            cx.now,
        );
        plan.events
            .push(PlannedEvent::warning(REASON_BACKOFF_LIMIT_EXCEEDED, msg));
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
    if cx.active.is_empty() && cx.terminating == 0 && !counts.uncounted {
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
