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
//! then [`plan`] decides the pods to create and delete, the conditions and the rest of the status, in
//! the order of upstream's job controller, one concern per file: [`lifecycle`] (TTL after finishing,
//! suspend and resume, the active deadline), [`success_policy`] (backoff limit, success criteria, the
//! terminal conditions once no pod runs), [`indexes`] (Indexed completion), `desired` (how many pods of
//! a NonIndexed Job, and which to delete first), [`mod@backoff`] (failure backoff of replacements),
//! [`tracking`] (exact counting with finalizers) and `conditions` (Job conditions and time arithmetic,
//! saturating: no user-set duration can overflow).
//!
//! One reconcile creates at most [`MAX_POD_CREATE_PER_SYNC`] pods (upstream's `MaxPodCreateDeletePerSync`)
//! and asks to be requeued for the rest, so a Job with `parallelism: 2147483647` is accepted and worked
//! on in bounded steps.

pub mod backoff;
mod conditions;
mod desired;
pub mod failure_policy;
pub mod indexes;
pub mod lifecycle;
pub mod per_index;
pub mod success_policy;
pub mod success_rules;
#[cfg(test)]
mod tests;
pub mod tracking;
#[cfg(test)]
mod upstream_tests;

use std::time::Duration;

use k8s_openapi::api::batch::v1::{Job, JobStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kwas_api_types::names::conditions::*;
use workloadbuilder::FieldErrors;

use super::pods::{PodOutcomes, PodState, PodView};
pub use backoff::backoff;
use conditions::{find, remove_condition, set_condition};
pub use indexes::Indexes;
pub use tracking::{flush, track, track_with};

/// The most pods one reconcile creates (upstream's `MaxPodCreateDeletePerSync`); the rest follow on the
/// next reconcile, requeued at once.
pub const MAX_POD_CREATE_PER_SYNC: usize = 500;

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
    pub(crate) fn normal(reason: &str, message: impl Into<String>) -> Self {
        Self {
            warning: false,
            reason: reason.into(),
            message: message.into(),
        }
    }

    pub(crate) fn warning(reason: &str, message: impl Into<String>) -> Self {
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
    /// Annotations of the new pod of an index (`backoffLimitPerIndex`: the index's failure counts).
    pub create_annotations: std::collections::BTreeMap<i32, std::collections::BTreeMap<String, String>>,
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

/// `spec.backoffLimit`, defaulted as the API server does: `i32::MAX` with `backoffLimitPerIndex`, else 6.
pub(crate) fn backoff_limit(job: &Job) -> i32 {
    let spec = job.spec.as_ref();
    let default = if spec.and_then(|s| s.backoff_limit_per_index).is_some() {
        i32::MAX
    } else {
        6
    };
    spec.and_then(|s| s.backoff_limit).unwrap_or(default)
}

pub(crate) fn suspended(job: &Job) -> bool {
    job.spec.as_ref().and_then(|s| s.suspend).unwrap_or(false)
}

pub(crate) fn min_requeue(a: Option<Duration>, b: Duration) -> Option<Duration> {
    Some(a.map_or(b, |a| a.min(b)))
}

/// Rank pods for deletion: unscheduled first, then not ready, then newest.
pub(crate) fn deletion_order(pods: &mut [&PodView]) {
    pods.sort_by(|a, b| {
        a.scheduled
            .cmp(&b.scheduled)
            .then(a.ready.cmp(&b.ready))
            .then(b.created.cmp(&a.created))
            .then(a.name.cmp(&b.name))
    });
}

/// What every step of [`plan`] reads: the Job, its pods and the time.
pub(crate) struct Cx<'a> {
    pub job: &'a Job,
    pub pods: &'a [PodView],
    pub active: Vec<&'a PodView>,
    pub terminating: usize,
    pub now: Timestamp,
    pub config: &'a JobConfig,
    pub outcomes: &'a PodOutcomes,
}

/// The counts the terminal criteria and the desired pods are computed from.
pub(crate) struct Counts {
    pub succeeded_now: i32,
    pub failed: i32,
    pub uncounted: bool,
    pub indexed: bool,
    pub total: Option<i32>,
    pub completed: Indexes,
    /// The failed indexes (`backoffLimitPerIndex`), empty otherwise.
    pub failed_indexes: Indexes,
    /// Per index, the position in the pods of its last failed pod awaiting a replacement.
    pub delayed: std::collections::BTreeMap<i32, usize>,
}

pub(crate) fn as_i32(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// Sets `active`, `ready` and `terminating` from the pods that stay; pods this reconcile deletes count as
/// terminating (upstream adds its deletions to `status.terminating`).
pub(crate) fn set_counts(cx: &Cx<'_>, plan: &mut Plan, active: &[&PodView]) {
    plan.status.active = Some(as_i32(active.len()));
    plan.status.ready = Some(as_i32(active.iter().filter(|p| p.ready).count()));
    plan.status.terminating = Some(as_i32(cx.terminating.saturating_add(plan.delete.len())));
}

/// Deletes every active pod.
pub(crate) fn delete_all_active(cx: &Cx<'_>, plan: &mut Plan) {
    plan.delete = cx.active.iter().map(|p| p.name.clone()).collect();
}

/// The main decision, on a status that has been tracked and flushed, for pods whose exit codes and
/// conditions are unknown (see [`plan_with`]).
pub fn plan(
    job: &Job,
    status: JobStatus,
    pods: &[PodView],
    scheduling: &SchedulingDecision,
    now: Timestamp,
    config: &JobConfig,
) -> Plan {
    plan_with(job, status, pods, &PodOutcomes::default(), scheduling, now, config)
}

/// The main decision, on a status that has been tracked and flushed: dereference the counts, then each
/// concern in upstream's order; a concern that settles the reconcile ends it. `outcomes` holds the pods'
/// exit codes, conditions and index failure counts (by uid) the pod failure policy and
/// `backoffLimitPerIndex` read.
pub fn plan_with(
    job: &Job,
    status: JobStatus,
    pods: &[PodView],
    outcomes: &PodOutcomes,
    scheduling: &SchedulingDecision,
    now: Timestamp,
    config: &JobConfig,
) -> Plan {
    let mut plan = Plan {
        status,
        ..Plan::default()
    };
    let cx = Cx {
        job,
        pods,
        active: pods.iter().filter(|p| p.state == PodState::Active).collect(),
        terminating: pods.iter().filter(|p| p.state == PodState::Terminating).count(),
        now,
        config,
        outcomes,
    };
    if lifecycle::finished(&cx, &mut plan) {
        return plan;
    }
    success_policy::invalid_scheduling(&cx, scheduling, &mut plan);
    if lifecycle::suspend(&cx, &mut plan) {
        return plan;
    }
    let start = plan.status.start_time.get_or_insert(Time(now)).clone();
    let counts = success_policy::counts(&cx, &plan.status);
    if per_index::backoff_limit_per_index(job).is_some() {
        plan.status.failed_indexes = Some(counts.failed_indexes.to_string());
    }
    success_policy::criteria(&cx, &counts, start.0, &mut plan);
    if success_policy::ending(&cx, &counts, &mut plan) {
        return plan;
    }
    let Some(pod_group) = scheduling_gate(&cx, scheduling, &mut plan) else {
        return plan;
    };
    plan.pod_group = pod_group;

    // Desired pods.
    let (excess, mut wanted) = if counts.indexed {
        indexes::desired(&cx, &counts)
    } else {
        desired::non_indexed(&cx, &counts)
    };
    plan.delete = excess.iter().map(|p| p.name.clone()).collect();
    let remaining: Vec<&PodView> = cx
        .active
        .iter()
        .filter(|p| !plan.delete.contains(&p.name))
        .copied()
        .collect();
    if per_index::backoff_limit_per_index(job).is_some() {
        backoff::gate_indexes(&cx, &counts, &mut wanted, &mut plan);
    } else {
        backoff::gate_replacements(&cx, &counts, &mut wanted, &mut plan);
    }
    if wanted.len() > MAX_POD_CREATE_PER_SYNC {
        wanted.truncate(MAX_POD_CREATE_PER_SYNC);
        plan.requeue_after = min_requeue(plan.requeue_after, Duration::ZERO);
    }
    // KEP-5547: a gang is never half-grouped; while pods without a schedulingGroup run, new ones get none.
    if plan.pod_group.is_some() && remaining.iter().any(|p| p.pod_group.is_none()) {
        plan.pod_group = None;
        if !wanted.is_empty() {
            plan.events.push(PlannedEvent::warning(
                kwas_api_types::names::events::MIXED_SCHEDULING_GROUP,
                "Job has active pods without a schedulingGroup; new pods are created without one until they finish",
            ));
        }
    }
    plan.create = wanted;
    if per_index::backoff_limit_per_index(job).is_some() {
        for i in plan.create.iter().flatten() {
            let replaced = counts.delayed.get(i).and_then(|&k| pods.get(k));
            plan.create_annotations
                .insert(*i, per_index::index_annotations(job, replaced, outcomes));
        }
    }
    set_counts(&cx, &mut plan, &remaining);
    plan.status.active = Some(as_i32(remaining.len().saturating_add(plan.create.len())));
    plan
}

/// KEP-5547's event reason for a `SchedulingBlocked` condition reason: `SchedulingDependencyNotFound` for a
/// missing external Workload or template, the condition's reason otherwise (`UnsupportedWorkloadStructure`).
pub fn blocked_event_reason(condition_reason: &str) -> &str {
    match condition_reason {
        REASON_WORKLOAD_NOT_FOUND | REASON_POD_GROUP_TEMPLATE_NOT_FOUND => {
            kwas_api_types::names::events::SCHEDULING_DEPENDENCY_NOT_FOUND
        }
        other => other,
    }
}

/// The scheduling objects gate pod creation: `Some(group)` when pods may be created (with that PodGroup).
fn scheduling_gate(cx: &Cx<'_>, scheduling: &SchedulingDecision, plan: &mut Plan) -> Option<Option<String>> {
    match scheduling {
        SchedulingDecision::Group(group) => {
            remove_condition(&mut plan.status, JOB_SCHEDULING_BLOCKED);
            Some(group.clone())
        }
        SchedulingDecision::Blocked { reason, message } => {
            if find(&plan.status, JOB_SCHEDULING_BLOCKED)
                .is_none_or(|c| c.status != "True" || c.reason.as_deref() != Some(reason.as_str()))
            {
                plan.events
                    .push(PlannedEvent::warning(blocked_event_reason(reason), message.clone()));
            }
            set_condition(
                &mut plan.status,
                JOB_SCHEDULING_BLOCKED,
                "True",
                reason,
                message,
                cx.now,
            );
            set_counts(cx, plan, &cx.active);
            plan.requeue_after = min_requeue(plan.requeue_after, Duration::from_secs(5));
            None
        }
        SchedulingDecision::Wait | SchedulingDecision::Invalid(_) => {
            set_counts(cx, plan, &cx.active);
            plan.requeue_after = min_requeue(plan.requeue_after, Duration::from_secs(1));
            None
        }
    }
}
