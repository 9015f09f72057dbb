//! The Job controller's decisions, as pure functions of the Job, its observed pods, the state of its
//! scheduling objects and the time.
//!
//! A reconcile runs three steps, each persisted before the next, so that every terminated pod is counted
//! exactly once even if the controller stops between any two writes (upstream's tracking with finalizers):
//! 1. [`track`]: terminated pods that still carry the tracking finalizer are recorded in
//!    `status.uncountedTerminatedPods` (and, for Indexed Jobs, their index in `completedIndexes`);
//! 2. the finalizers of those pods are removed;
//! 3. [`flush`]: uncounted pods whose finalizer is gone are moved into `succeeded` / `failed`;
//!
//! then [`plan`] decides the pods to create and delete, the conditions and the rest of the status.

use std::collections::{BTreeSet, HashSet};
use std::time::Duration;

use k8s_openapi::api::batch::v1::{Job, JobCondition, JobStatus, UncountedTerminatedPods};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kwas_api::names::conditions::*;
use workloadbuilder::FieldErrors;

use super::pods::{PodState, PodView};

/// Tunables of the Job controller.
#[derive(Clone, Debug)]
pub struct JobConfig {
    /// The delay before re-creating pods after the first failure; doubles per failure (upstream: 10s).
    pub backoff_base: Duration,
    /// The cap of the failure backoff (upstream: 6 minutes).
    pub backoff_max: Duration,
}

impl Default for JobConfig {
    fn default() -> Self {
        Self {
            backoff_base: Duration::from_secs(10),
            backoff_max: Duration::from_secs(360),
        }
    }
}

/// What the scheduling side of the reconcile decided for the Job's pods.
#[derive(Clone, Debug, PartialEq)]
pub enum SchedulingDecision {
    /// Pods may be created; they carry this PodGroup name (or none).
    Group(Option<String>),
    /// Pod creation is blocked until the scheduling objects are repaired (`SchedulingBlocked=True`).
    Blocked {
        /// The condition reason (`WorkloadNotFound`, `PodGroupTemplateNotFound`, `UnsupportedWorkloadStructure`).
        reason: String,
        /// A human-readable explanation.
        message: String,
    },
    /// The objects are converging (for example an old PodGroup is still terminating): no pods yet, retry soon.
    Wait,
    /// `spec.scheduling` does not compile: the Job fails without pods.
    Invalid(FieldErrors),
}

/// An event the reconcile should record on the Job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedEvent {
    /// Warning (true) or Normal.
    pub warning: bool,
    /// The event reason.
    pub reason: String,
    /// The event message.
    pub message: String,
}

impl PlannedEvent {
    fn normal(reason: &str, message: impl Into<String>) -> Self {
        Self {
            warning: false,
            reason: reason.into(),
            message: message.into(),
        }
    }

    fn warning(reason: &str, message: impl Into<String>) -> Self {
        Self {
            warning: true,
            reason: reason.into(),
            message: message.into(),
        }
    }
}

/// The result of [`track`].
#[derive(Clone, Debug, PartialEq)]
pub struct Tracking {
    /// The status with newly terminated pods recorded as uncounted.
    pub status: JobStatus,
    /// True when `status` differs from the Job's and must be written before finalizers are removed.
    pub changed: bool,
    /// Pods whose tracking finalizer can be removed once `status` is written.
    pub remove_finalizers: Vec<String>,
}

/// The decision of one reconcile.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plan {
    /// The desired status.
    pub status: JobStatus,
    /// Pods to create: one entry per pod, with its completion index for Indexed Jobs.
    pub create: Vec<Option<i32>>,
    /// The PodGroup new pods belong to.
    pub pod_group: Option<String>,
    /// Pods to delete (by name). Their tracking finalizer is removed first: pods the controller removes on
    /// purpose (excess, suspend, a finished Job) are not counted as failures.
    pub delete: Vec<String>,
    /// Events to record.
    pub events: Vec<PlannedEvent>,
    /// Reconcile again after this long (backoff, deadline, TTL, waiting).
    pub requeue_after: Option<Duration>,
    /// The Job's TTL after finishing has passed: delete it.
    pub delete_job: bool,
}

/// `spec.completionMode == Indexed`.
pub fn is_indexed(job: &Job) -> bool {
    job.spec.as_ref().and_then(|s| s.completion_mode.as_deref()) == Some("Indexed")
}

/// `spec.parallelism`, defaulting to 1.
pub fn parallelism(job: &Job) -> i32 {
    job.spec.as_ref().and_then(|s| s.parallelism).unwrap_or(1).max(0)
}

/// `spec.completions`, defaulted as the API server does: 1 when neither completions nor parallelism is set
/// (and for Indexed Jobs, which require it), unset (a work queue) when only parallelism is.
pub fn completions(job: &Job) -> Option<i32> {
    let spec = job.spec.as_ref();
    match (spec.and_then(|s| s.completions), spec.and_then(|s| s.parallelism)) {
        (Some(c), _) => Some(c.max(0)),
        (None, None) => Some(1),
        (None, Some(_)) if is_indexed(job) => Some(1),
        (None, Some(_)) => None,
    }
}

fn backoff_limit(job: &Job) -> i32 {
    job.spec.as_ref().and_then(|s| s.backoff_limit).unwrap_or(6)
}

fn suspended(job: &Job) -> bool {
    job.spec.as_ref().and_then(|s| s.suspend).unwrap_or(false)
}

/// Parse an `completedIndexes` interval list (`"1,3-5,7"`).
pub fn parse_indexes(s: &str) -> BTreeSet<i32> {
    let mut out = BTreeSet::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<i32>(), b.parse::<i32>()) {
                    out.extend(a..=b);
                }
            }
            None => {
                if let Ok(i) = part.parse() {
                    out.insert(i);
                }
            }
        }
    }
    out
}

/// Format indexes as upstream does: sorted, consecutive runs as `a-b`.
pub fn format_indexes(indexes: &BTreeSet<i32>) -> String {
    let mut parts = Vec::new();
    let mut iter = indexes.iter().copied().peekable();
    while let Some(start) = iter.next() {
        let mut end = start;
        while iter.peek() == Some(&(end + 1)) {
            end += 1;
            iter.next();
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
    }
    parts.join(",")
}

fn uncounted(status: &JobStatus) -> (Vec<String>, Vec<String>) {
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

/// Step 1: record terminated pods that still carry the tracking finalizer.
pub fn track(job: &Job, pods: &[PodView]) -> Tracking {
    let mut status = job.status.clone().unwrap_or_default();
    let (mut succeeded, mut failed) = uncounted(&status);
    let indexed = is_indexed(job);
    let total = completions(job).unwrap_or(0);
    let mut completed = parse_indexes(status.completed_indexes.as_deref().unwrap_or(""));
    let before = (succeeded.len(), failed.len(), completed.len());
    let mut remove = Vec::new();
    for p in pods.iter().filter(|p| p.tracked) {
        match p.state {
            PodState::Active => continue,
            PodState::Succeeded if !failed.contains(&p.uid) => {
                if indexed {
                    // The completion index avoids recounting: no uid needed.
                    if let Some(i) = p.index.filter(|i| *i < total) {
                        completed.insert(i);
                    }
                } else if !succeeded.contains(&p.uid) {
                    succeeded.push(p.uid.clone());
                }
            }
            PodState::Succeeded => {}
            PodState::Failed | PodState::Terminating => {
                if !failed.contains(&p.uid) && !succeeded.contains(&p.uid) {
                    failed.push(p.uid.clone());
                }
            }
        }
        remove.push(p.name.clone());
    }
    let changed = (succeeded.len(), failed.len(), completed.len()) != before;
    if indexed {
        status.completed_indexes = (!completed.is_empty()).then(|| format_indexes(&completed));
    }
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
        let completed = parse_indexes(status.completed_indexes.as_deref().unwrap_or(""));
        let succeeded = as_i32(completed.len());
        let flushed = status.succeeded != Some(succeeded);
        status.succeeded = Some(succeeded);
        status.failed = Some(status.failed.unwrap_or(0) + as_i32(done_f.len()));
        set_uncounted(status, keep_s, keep_f);
        return changed || flushed;
    }
    status.succeeded = Some(status.succeeded.unwrap_or(0) + as_i32(done_s.len()));
    status.failed = Some(status.failed.unwrap_or(0) + as_i32(done_f.len()));
    set_uncounted(status, keep_s, keep_f);
    changed
}

fn find<'a>(status: &'a JobStatus, type_: &str) -> Option<&'a JobCondition> {
    status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == type_ && c.status == "True")
}

fn set_condition(status: &mut JobStatus, type_: &str, value: &str, reason: &str, message: &str, now: Timestamp) {
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    let time = Some(Time(now));
    match conditions.iter_mut().find(|c| c.type_ == type_) {
        Some(c) => {
            if c.status != value {
                c.last_transition_time = time.clone();
            }
            c.status = value.into();
            c.reason = Some(reason.into());
            c.message = Some(message.into());
            c.last_probe_time = time;
        }
        None => conditions.push(JobCondition {
            type_: type_.into(),
            status: value.into(),
            reason: Some(reason.into()),
            message: Some(message.into()),
            last_probe_time: time.clone(),
            last_transition_time: time,
        }),
    }
}

fn remove_condition(status: &mut JobStatus, type_: &str) {
    if let Some(c) = status.conditions.as_mut() {
        c.retain(|c| c.type_ != type_);
    }
}

fn to_duration(d: SignedDuration) -> Duration {
    Duration::try_from(d).unwrap_or_default()
}

fn since(now: Timestamp, then: Timestamp) -> SignedDuration {
    now.duration_since(then)
}

/// The failure backoff after `failures` failed pods.
pub fn backoff(config: &JobConfig, failures: i32) -> Duration {
    if failures <= 0 {
        return Duration::ZERO;
    }
    let exp = u32::try_from(failures - 1).unwrap_or(u32::MAX).min(30);
    config.backoff_base.saturating_mul(1u32 << exp).min(config.backoff_max)
}

fn min_requeue(a: Option<Duration>, b: Duration) -> Option<Duration> {
    Some(a.map_or(b, |a| a.min(b)))
}

/// Rank pods for deletion: unscheduled first, then not ready, then newest.
fn deletion_order(pods: &mut [&PodView]) {
    pods.sort_by(|a, b| {
        a.scheduled
            .cmp(&b.scheduled)
            .then(a.ready.cmp(&b.ready))
            .then(b.created.cmp(&a.created))
            .then(a.name.cmp(&b.name))
    });
}

/// The main decision, on a status that has been tracked and flushed.
pub fn plan(
    job: &Job,
    status: JobStatus,
    pods: &[PodView],
    scheduling: &SchedulingDecision,
    now: Timestamp,
    config: &JobConfig,
) -> Plan {
    let mut plan = Plan {
        status,
        ..Plan::default()
    };
    let active: Vec<&PodView> = pods.iter().filter(|p| p.state == PodState::Active).collect();
    let terminating = pods.iter().filter(|p| p.state == PodState::Terminating).count();
    let as_i32 = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
    let set_counts = |plan: &mut Plan, active: &[&PodView]| {
        plan.status.active = Some(as_i32(active.len()));
        plan.status.ready = Some(as_i32(active.iter().filter(|p| p.ready).count()));
        plan.status.terminating = Some(as_i32(terminating));
    };
    let delete_all_active = |plan: &mut Plan| {
        plan.delete = active.iter().map(|p| p.name.clone()).collect();
    };

    // A finished Job only waits for its TTL.
    let finished = find(&plan.status, JOB_COMPLETE)
        .or_else(|| find(&plan.status, JOB_FAILED))
        .and_then(|c| c.last_transition_time.as_ref().map(|t| t.0));
    if find(&plan.status, JOB_COMPLETE).is_some() || find(&plan.status, JOB_FAILED).is_some() {
        delete_all_active(&mut plan);
        set_counts(&mut plan, &[]);
        if let (Some(ttl), Some(at)) = (job.spec.as_ref().and_then(|s| s.ttl_seconds_after_finished), finished) {
            let expires = at + SignedDuration::from_secs(i64::from(ttl.max(0)));
            if now >= expires {
                plan.delete_job = true;
            } else {
                plan.requeue_after = Some(to_duration(since(expires, now)));
            }
        }
        return plan;
    }

    // An invalid scheduling block fails the Job before any pod exists.
    if let SchedulingDecision::Invalid(errs) = scheduling {
        let message = format!(
            "Failed to compile Workload for Job {}: {errs}",
            job.metadata.name.as_deref().unwrap_or("")
        );
        if find(&plan.status, JOB_FAILURE_TARGET).is_none() {
            set_condition(
                &mut plan.status,
                JOB_FAILURE_TARGET,
                "True",
                "FailedWorkloadCompilation",
                &message,
                now,
            );
            plan.events.push(PlannedEvent::warning(
                kwas_api::names::events::FAILED_WORKLOAD_COMPILATION,
                message,
            ));
        }
    }

    // Suspend and resume.
    let was_suspended = find(&plan.status, JOB_SUSPENDED).is_some();
    if suspended(job)
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
        delete_all_active(&mut plan);
        set_counts(&mut plan, &[]);
        return plan;
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
    let start = plan.status.start_time.get_or_insert(Time(now)).clone();

    let succeeded = plan.status.succeeded.unwrap_or(0);
    let (uncounted_s, uncounted_f) = uncounted(&plan.status);
    let failed = plan.status.failed.unwrap_or(0) + as_i32(uncounted_f.len());
    let indexed = is_indexed(job);
    let total = completions(job);
    let completed = parse_indexes(plan.status.completed_indexes.as_deref().unwrap_or(""));
    let succeeded_now = if indexed {
        as_i32(completed.len())
    } else {
        succeeded + as_i32(uncounted_s.len())
    };

    // Terminal criteria: deadline, backoff limit, success.
    if find(&plan.status, JOB_FAILURE_TARGET).is_none()
        && find(&plan.status, JOB_SUCCESS_CRITERIA_MET).is_none()
        && let Some(deadline) = job.spec.as_ref().and_then(|s| s.active_deadline_seconds)
    {
        let at = start.0 + SignedDuration::from_secs(deadline.max(0));
        if now >= at {
            let msg = "Job was active longer than specified deadline";
            set_condition(
                &mut plan.status,
                JOB_FAILURE_TARGET,
                "True",
                REASON_DEADLINE_EXCEEDED,
                msg,
                now,
            );
            plan.events.push(PlannedEvent::warning(REASON_DEADLINE_EXCEEDED, msg));
        } else {
            plan.requeue_after = min_requeue(plan.requeue_after, to_duration(since(at, now)));
        }
    }
    if find(&plan.status, JOB_FAILURE_TARGET).is_none() && find(&plan.status, JOB_SUCCESS_CRITERIA_MET).is_none() {
        if failed > backoff_limit(job) {
            let msg = "Job has reached the specified backoff limit";
            set_condition(
                &mut plan.status,
                JOB_FAILURE_TARGET,
                "True",
                REASON_BACKOFF_LIMIT_EXCEEDED,
                msg,
                now,
            );
            plan.events
                .push(PlannedEvent::warning(REASON_BACKOFF_LIMIT_EXCEEDED, msg));
        } else {
            let success = match total {
                Some(c) => succeeded_now >= c,
                // A work queue completes once a pod succeeded and no other pod is still running.
                None => succeeded_now > 0 && active.is_empty(),
            };
            if success {
                let msg = "Reached expected number of succeeded pods";
                set_condition(
                    &mut plan.status,
                    JOB_SUCCESS_CRITERIA_MET,
                    "True",
                    REASON_COMPLETIONS_REACHED,
                    msg,
                    now,
                );
            }
        }
    }

    // Ending: remove what is left, then the terminal condition once no pod is running.
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
    if let Some((terminal, reason, message)) = ending {
        delete_all_active(&mut plan);
        set_counts(&mut plan, &[]);
        if active.is_empty() && terminating == 0 && uncounted_s.is_empty() && uncounted_f.is_empty() {
            set_condition(&mut plan.status, terminal, "True", &reason, &message, now);
            if terminal == JOB_COMPLETE {
                plan.status.completion_time = Some(Time(now));
                plan.events.push(PlannedEvent::normal("Completed", "Job completed"));
            }
            remove_condition(&mut plan.status, JOB_SCHEDULING_BLOCKED);
        } else {
            plan.requeue_after = min_requeue(plan.requeue_after, Duration::from_secs(1));
        }
        return plan;
    }

    // Scheduling objects gate pod creation.
    let pod_group = match scheduling {
        SchedulingDecision::Group(group) => {
            remove_condition(&mut plan.status, JOB_SCHEDULING_BLOCKED);
            group.clone()
        }
        SchedulingDecision::Blocked { reason, message } => {
            if find(&plan.status, JOB_SCHEDULING_BLOCKED).is_none() {
                plan.events.push(PlannedEvent::warning(reason, message.clone()));
            }
            set_condition(&mut plan.status, JOB_SCHEDULING_BLOCKED, "True", reason, message, now);
            set_counts(&mut plan, &active);
            plan.requeue_after = min_requeue(plan.requeue_after, Duration::from_secs(5));
            return plan;
        }
        SchedulingDecision::Wait | SchedulingDecision::Invalid(_) => {
            set_counts(&mut plan, &active);
            plan.requeue_after = min_requeue(plan.requeue_after, Duration::from_secs(1));
            return plan;
        }
    };
    plan.pod_group = pod_group;

    // Desired pods.
    let parallelism = parallelism(job);
    let mut keep: Vec<&PodView> = Vec::new();
    let mut excess: Vec<&PodView> = Vec::new();
    let mut wanted: Vec<Option<i32>> = Vec::new();
    if indexed {
        let total = total.unwrap_or(1);
        let mut seen = BTreeSet::new();
        let mut ordered = active.clone();
        ordered.sort_by(|a, b| a.created.cmp(&b.created).then(a.name.cmp(&b.name)));
        for p in ordered {
            match p.index {
                Some(i) if i < total && !completed.contains(&i) && seen.insert(i) => keep.push(p),
                _ => excess.push(p),
            }
        }
        let busy: BTreeSet<i32> = keep.iter().filter_map(|p| p.index).collect();
        // Indexes whose pod is still terminating are not re-created yet (no two pods per index).
        let terminating_idx: BTreeSet<i32> = pods
            .iter()
            .filter(|p| p.state == PodState::Terminating)
            .filter_map(|p| p.index)
            .collect();
        let room = usize::try_from(parallelism).unwrap_or(0).saturating_sub(keep.len());
        if keep.len() > usize::try_from(parallelism).unwrap_or(0) {
            let mut by_index = keep.clone();
            by_index.sort_by_key(|p| std::cmp::Reverse(p.index));
            let over = keep.len() - usize::try_from(parallelism).unwrap_or(0);
            excess.extend(by_index.into_iter().take(over));
        }
        wanted = (0..total)
            .filter(|i| !completed.contains(i) && !busy.contains(i) && !terminating_idx.contains(i))
            .take(room)
            .map(Some)
            .collect();
    } else {
        let want = match total {
            Some(c) => parallelism.min((c - succeeded_now).max(0)),
            None if succeeded_now > 0 => as_i32(active.len()).min(parallelism),
            None => parallelism,
        };
        let want = usize::try_from(want).unwrap_or(0);
        if active.len() > want {
            let mut ranked = active.clone();
            deletion_order(&mut ranked);
            excess.extend(ranked.into_iter().take(active.len() - want));
        } else {
            wanted = vec![None; want - active.len()];
        }
    }
    plan.delete = excess.iter().map(|p| p.name.clone()).collect();
    let remaining: Vec<&PodView> = active
        .iter()
        .filter(|p| !plan.delete.contains(&p.name))
        .copied()
        .collect();

    // Failure backoff before creating replacements.
    if !wanted.is_empty() && failed > 0 {
        let last_failure = pods
            .iter()
            .filter(|p| p.state == PodState::Failed)
            .filter_map(|p| p.finished)
            .max();
        if let Some(t) = last_failure {
            let ready_at = t + SignedDuration::try_from(backoff(config, failed)).unwrap_or(SignedDuration::ZERO);
            if now < ready_at {
                plan.requeue_after = min_requeue(plan.requeue_after, to_duration(since(ready_at, now)));
                wanted.clear();
            }
        }
    }
    plan.create = wanted;
    set_counts(&mut plan, &remaining);
    plan.status.active = Some(as_i32(remaining.len() + plan.create.len()));
    plan
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::batch::v1::JobSpec;

    fn job(parallelism: i32, completions: Option<i32>) -> Job {
        let mut job = Job::default();
        job.metadata.name = Some("j".into());
        job.metadata.uid = Some("uid".into());
        job.spec = Some(JobSpec {
            parallelism: Some(parallelism),
            completions,
            ..Default::default()
        });
        job
    }

    fn pod(name: &str, state: PodState, index: Option<i32>) -> PodView {
        PodView {
            name: name.into(),
            uid: format!("uid-{name}"),
            state,
            tracked: true,
            ready: state == PodState::Active,
            index,
            created: Some(Timestamp::from_second(1000).unwrap()),
            finished: (state == PodState::Failed).then(|| Timestamp::from_second(1000).unwrap()),
            pod_group: None,
            scheduled: true,
        }
    }

    fn now() -> Timestamp {
        Timestamp::from_second(2000).unwrap()
    }

    fn run(job: &Job, pods: &[PodView]) -> Plan {
        let t = track(job, pods);
        let mut status = t.status;
        // Pretend the finalizers were removed.
        flush(job, &mut status, &HashSet::new());
        plan(
            job,
            status,
            pods,
            &SchedulingDecision::Group(Some("pg".into())),
            now(),
            &JobConfig::default(),
        )
    }

    fn with_status(mut job: Job, status: JobStatus) -> Job {
        job.status = Some(status);
        job
    }

    #[test]
    fn indexes_round_trip() {
        let set = parse_indexes("0-2,4,6-7");
        assert_eq!(set.iter().copied().collect::<Vec<_>>(), vec![0, 1, 2, 4, 6, 7]);
        assert_eq!(format_indexes(&set), "0-2,4,6-7");
        assert_eq!(format_indexes(&BTreeSet::new()), "");
    }

    #[test]
    fn creates_parallelism_pods_with_the_pod_group() {
        let p = run(&job(3, Some(5)), &[]);
        assert_eq!(p.create, vec![None, None, None]);
        assert_eq!(p.pod_group.as_deref(), Some("pg"));
        assert_eq!(p.status.active, Some(3));
        assert!(p.status.start_time.is_some());
    }

    #[test]
    fn counts_each_terminated_pod_once() {
        let j = job(2, Some(2));
        let pods = [pod("a", PodState::Succeeded, None), pod("b", PodState::Active, None)];
        let t = track(&j, &pods);
        assert!(t.changed);
        assert_eq!(t.remove_finalizers, vec!["a".to_string()]);
        // Tracking again with the same pods does not add the uid twice.
        let j2 = with_status(j.clone(), t.status.clone());
        let t2 = track(&j2, &pods);
        assert!(!t2.changed);
        // The finalizer of `a` is still there: nothing is flushed yet.
        let mut status = t2.status.clone();
        assert!(!flush(&j2, &mut status, &["uid-a".to_string()].into()));
        assert_eq!(status.succeeded, Some(0));
        // Once it is gone, `a` is counted exactly once.
        assert!(flush(&j2, &mut status, &HashSet::new()));
        assert_eq!(status.succeeded, Some(1));
        let j3 = with_status(j, status.clone());
        let mut again = status;
        assert!(!flush(&j3, &mut again, &HashSet::new()));
        assert_eq!(again.succeeded, Some(1));
    }

    #[test]
    fn completes_after_completions_and_running_pods_end() {
        let j = job(2, Some(2));
        let pods = [pod("a", PodState::Succeeded, None), pod("b", PodState::Succeeded, None)];
        let p = run(&j, &pods);
        assert!(find(&p.status, JOB_SUCCESS_CRITERIA_MET).is_some());
        assert!(find(&p.status, JOB_COMPLETE).is_some());
        assert!(p.status.completion_time.is_some());
        assert!(p.create.is_empty());
    }

    #[test]
    fn failures_are_replaced_after_backoff_then_fail_the_job() {
        let mut j = job(1, Some(1));
        j.spec.as_mut().unwrap().backoff_limit = Some(1);
        let first = run(&j, &[pod("a", PodState::Failed, None)]);
        assert_eq!(first.status.failed, Some(1));
        // Failure at t=1000, now 2000: the 10s backoff is over, a replacement is created.
        assert_eq!(first.create.len(), 1);
        let j = with_status(j, first.status);
        // `a` was counted: its finalizer is gone.
        let mut a = pod("a", PodState::Failed, None);
        a.tracked = false;
        let second = run(&j, &[a, pod("b", PodState::Failed, None)]);
        assert_eq!(second.status.failed, Some(2));
        assert_eq!(
            find(&second.status, JOB_FAILED).unwrap().reason.as_deref(),
            Some("BackoffLimitExceeded")
        );
        assert!(second.create.is_empty());
    }

    #[test]
    fn backoff_delays_replacements() {
        let j = job(1, Some(1));
        let mut failed = pod("a", PodState::Failed, None);
        failed.finished = Some(now());
        let p = run(&j, &[failed]);
        assert!(p.create.is_empty());
        assert_eq!(p.requeue_after, Some(Duration::from_secs(10)));
        assert_eq!(backoff(&JobConfig::default(), 3), Duration::from_secs(40));
        assert_eq!(backoff(&JobConfig::default(), 30), Duration::from_secs(360));
    }

    #[test]
    fn indexed_jobs_recreate_missing_indexes() {
        let mut j = job(2, Some(4));
        j.spec.as_mut().unwrap().completion_mode = Some("Indexed".into());
        let pods = [
            pod("p0", PodState::Succeeded, Some(0)),
            pod("p1", PodState::Active, Some(1)),
        ];
        let p = run(&j, &pods);
        assert_eq!(p.status.completed_indexes.as_deref(), Some("0"));
        assert_eq!(p.status.succeeded, Some(1));
        assert_eq!(p.create, vec![Some(2)]);
        // A duplicate active pod for an index is removed.
        let dup = [
            pod("p1", PodState::Active, Some(1)),
            pod("p1b", PodState::Active, Some(1)),
        ];
        assert_eq!(run(&j, &dup).delete.len(), 1);
    }

    #[test]
    fn suspend_deletes_pods_and_resume_restarts_the_clock() {
        let mut j = job(2, Some(2));
        j.spec.as_mut().unwrap().suspend = Some(true);
        let p = run(&j, &[pod("a", PodState::Active, None)]);
        assert_eq!(p.delete, vec!["a".to_string()]);
        assert!(find(&p.status, JOB_SUSPENDED).is_some());
        assert!(p.status.start_time.is_none());
        assert!(p.create.is_empty());
        let mut resumed = with_status(j, p.status);
        resumed.spec.as_mut().unwrap().suspend = Some(false);
        let p = run(&resumed, &[]);
        let c = p
            .status
            .conditions
            .as_ref()
            .unwrap()
            .iter()
            .find(|c| c.type_ == JOB_SUSPENDED)
            .unwrap();
        assert_eq!((c.status.as_str(), c.reason.as_deref()), ("False", Some("JobResumed")));
        assert_eq!(p.create.len(), 2);
        assert_eq!(p.status.start_time, Some(Time(now())));
    }

    #[test]
    fn deadline_fails_the_job_after_pods_are_gone() {
        let mut j = job(1, Some(1));
        j.spec.as_mut().unwrap().active_deadline_seconds = Some(10);
        let j = with_status(
            j,
            JobStatus {
                start_time: Some(Time(Timestamp::from_second(1000).unwrap())),
                ..Default::default()
            },
        );
        let p = run(&j, &[pod("a", PodState::Active, None)]);
        assert!(find(&p.status, JOB_FAILURE_TARGET).is_some());
        assert!(find(&p.status, JOB_FAILED).is_none(), "waits for the running pod");
        assert_eq!(p.delete, vec!["a".to_string()]);
        let j = with_status(j, p.status);
        let p = run(&j, &[]);
        assert_eq!(
            find(&p.status, JOB_FAILED).unwrap().reason.as_deref(),
            Some("DeadlineExceeded")
        );
    }

    #[test]
    fn blocked_scheduling_creates_no_pods() {
        let j = job(2, Some(2));
        let blocked = SchedulingDecision::Blocked {
            reason: "WorkloadNotFound".into(),
            message: "parent Workload not found".into(),
        };
        let p = plan(&j, JobStatus::default(), &[], &blocked, now(), &JobConfig::default());
        assert!(p.create.is_empty());
        assert_eq!(
            find(&p.status, JOB_SCHEDULING_BLOCKED).unwrap().reason.as_deref(),
            Some("WorkloadNotFound")
        );
        assert_eq!(p.events.len(), 1);
        let j = with_status(j, p.status);
        let p = plan(
            &j,
            j.status.clone().unwrap(),
            &[],
            &SchedulingDecision::Group(None),
            now(),
            &JobConfig::default(),
        );
        assert!(find(&p.status, JOB_SCHEDULING_BLOCKED).is_none());
        assert_eq!(p.create.len(), 2);
    }

    #[test]
    fn invalid_scheduling_fails_without_pods() {
        let j = job(2, Some(2));
        let errs: FieldErrors =
            workloadbuilder::FieldError::invalid("spec.scheduling.disruptionMode", "", "bad").into();
        let p = plan(
            &j,
            JobStatus::default(),
            &[],
            &SchedulingDecision::Invalid(errs),
            now(),
            &JobConfig::default(),
        );
        assert!(p.create.is_empty());
        let failed = find(&p.status, JOB_FAILED).unwrap();
        assert_eq!(failed.reason.as_deref(), Some("FailedWorkloadCompilation"));
        assert!(
            failed
                .message
                .as_deref()
                .unwrap()
                .contains("spec.scheduling.disruptionMode")
        );
        assert!(p.events[0].warning && p.events[0].message.contains("spec.scheduling.disruptionMode"));
    }

    #[test]
    fn ttl_deletes_finished_jobs() {
        let mut j = job(1, Some(1));
        j.spec.as_mut().unwrap().ttl_seconds_after_finished = Some(100);
        let mut status = JobStatus::default();
        set_condition(
            &mut status,
            JOB_COMPLETE,
            "True",
            "CompletionsReached",
            "",
            Timestamp::from_second(1950).unwrap(),
        );
        let j = with_status(j, status.clone());
        let p = plan(
            &j,
            status.clone(),
            &[],
            &SchedulingDecision::Group(None),
            now(),
            &JobConfig::default(),
        );
        assert!(!p.delete_job);
        assert_eq!(p.requeue_after, Some(Duration::from_secs(50)));
        let later = Timestamp::from_second(2100).unwrap();
        assert!(
            plan(
                &j,
                status,
                &[],
                &SchedulingDecision::Group(None),
                later,
                &JobConfig::default()
            )
            .delete_job
        );
    }

    #[test]
    fn work_queue_completes_when_one_succeeded_and_others_stopped() {
        let j = job(3, None);
        let p = run(
            &j,
            &[pod("a", PodState::Succeeded, None), pod("b", PodState::Active, None)],
        );
        assert!(p.create.is_empty(), "no new pods once one succeeded");
        assert!(find(&p.status, JOB_COMPLETE).is_none());
        let p = run(&j, &[pod("a", PodState::Succeeded, None)]);
        assert!(find(&p.status, JOB_COMPLETE).is_some());
    }

    #[test]
    fn scale_down_removes_unscheduled_pods_first() {
        let j = job(1, Some(5));
        let mut pending = pod("new", PodState::Active, None);
        pending.scheduled = false;
        let p = run(&j, &[pod("old", PodState::Active, None), pending]);
        assert_eq!(p.delete, vec!["new".to_string()]);
    }
}
