//! The Job's lifecycle around its pods: a finished Job waits for its TTL, a suspended one deletes its
//! pods (and resumes with a new start time), a Job active longer than `activeDeadlineSeconds` fails.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kwas_api_types::names::conditions::*;

use super::conditions::{find, later, set_condition, since, to_duration};
use super::{Cx, Plan, PlannedEvent, delete_all_active, min_requeue, set_counts, suspended};

/// A finished Job only waits for its TTL (then it is deleted). Returns whether the Job is finished.
pub(crate) fn finished(cx: &Cx<'_>, plan: &mut Plan) -> bool {
    let finished = find(&plan.status, JOB_COMPLETE)
        .or_else(|| find(&plan.status, JOB_FAILED))
        .and_then(|c| c.last_transition_time.as_ref().map(|t| t.0));
    if find(&plan.status, JOB_COMPLETE).is_none() && find(&plan.status, JOB_FAILED).is_none() {
        return false;
    }
    delete_all_active(cx, plan);
    set_counts(cx, plan, &[]);
    if let (Some(ttl), Some(at)) = (
        cx.job.spec.as_ref().and_then(|s| s.ttl_seconds_after_finished),
        finished,
    ) {
        match later(at, SignedDuration::from_secs(i64::from(ttl.max(0)))) {
            Some(expires) if cx.now >= expires => plan.delete_job = true,
            Some(expires) => plan.requeue_after = Some(to_duration(since(expires, cx.now))),
            None => {}
        }
    }
    true
}

/// Suspend and resume. Returns whether the Job is suspended (nothing more to do).
pub(crate) fn suspend(cx: &Cx<'_>, plan: &mut Plan) -> bool {
    let now = cx.now;
    let was_suspended = find(&plan.status, JOB_SUSPENDED).is_some();
    if suspended(cx.job)
        && find(&plan.status, JOB_FAILURE_TARGET).is_none()
        && find(&plan.status, JOB_SUCCESS_CRITERIA_MET).is_none()
    {
        if !was_suspended {
            set_condition(
                &mut plan.status,
                JOB_SUSPENDED,
                "True",
                REASON_JOB_SUSPENDED,
                "Job suspended",
                now,
            );
            plan.events.push(PlannedEvent::normal("Suspended", "Job suspended"));
        }
        plan.status.start_time = None;
        delete_all_active(cx, plan);
        set_counts(cx, plan, &[]);
        return true;
    }
    if was_suspended {
        set_condition(
            &mut plan.status,
            JOB_SUSPENDED,
            "False",
            REASON_JOB_RESUMED,
            "Job resumed",
            now,
        );
        plan.events.push(PlannedEvent::normal("Resumed", "Job resumed"));
        plan.status.start_time = Some(Time(now));
    }
    false
}

/// `activeDeadlineSeconds`: the Job fails once it was active that long after `start`. A deadline past the
/// latest representable time never comes.
pub(crate) fn deadline(cx: &Cx<'_>, start: Timestamp, plan: &mut Plan) {
    if find(&plan.status, JOB_FAILURE_TARGET).is_some() || find(&plan.status, JOB_SUCCESS_CRITERIA_MET).is_some() {
        return;
    }
    let Some(seconds) = cx.job.spec.as_ref().and_then(|s| s.active_deadline_seconds) else {
        return;
    };
    let Some(at) = later(start, SignedDuration::from_secs(seconds.max(0))) else {
        return;
    };
    if cx.now >= at {
        let msg = "Job was active longer than specified deadline";
        set_condition(
            &mut plan.status,
            JOB_FAILURE_TARGET,
            "True",
            REASON_DEADLINE_EXCEEDED,
            msg,
            cx.now,
        );
        plan.events.push(PlannedEvent::warning(REASON_DEADLINE_EXCEEDED, msg));
    } else {
        plan.requeue_after = min_requeue(plan.requeue_after, to_duration(since(at, cx.now)));
    }
}
