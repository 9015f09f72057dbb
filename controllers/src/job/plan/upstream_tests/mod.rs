//! Upstream's table-driven cases of `pkg/controller/job/job_controller_test.go` (kube-controller-manager),
//! ported as pure tests of the plan: each test names the upstream test function and case. Upstream's
//! `syncJob` is one call; here one reconcile is [`track_with`], the finalizer removals, [`flush`] and
//! [`plan_with`] ([`sync`]). Pods are named `mypod-<i>` in namespace `default`, as upstream's tests name
//! them. Where kwas deliberately differs (pods the controller deletes are released uncounted; a
//! Job's terminal condition waits for the pods it deleted), the case says so and asserts kwas's result.

mod backoff_limit_per_index;
mod backoff_on_failure;
mod past_deadline;
mod pod_failure_policy;
mod pod_replacement_policy;
mod properties;
mod success_policy;

use std::collections::HashSet;

use k8s_openapi::api::batch::v1::{
    Job, JobCondition, JobSpec, JobStatus, PodFailurePolicy, PodFailurePolicyOnExitCodesRequirement,
    PodFailurePolicyOnPodConditionsPattern, PodFailurePolicyRule, SuccessPolicy, SuccessPolicyRule,
};
use k8s_openapi::jiff::Timestamp;

use super::{JobConfig, Plan, SchedulingDecision, flush, plan_with, track_with};
use crate::job::pods::{ContainerExit, PodOutcome, PodOutcomes, PodState, PodView};

pub(super) fn now() -> Timestamp {
    Timestamp::from_second(1_000_000).unwrap_or(Timestamp::UNIX_EPOCH)
}

/// A pod of a case: its view and its outcome.
#[derive(Clone, Debug)]
pub(super) struct P {
    pub view: PodView,
    pub outcome: PodOutcome,
}

/// `mypod-<i>` (uid `uid-<i>`), tracked, in `state`; no finish time (upstream's test pods finished long
/// ago: no backoff is pending).
pub(super) fn pod(i: usize, state: PodState) -> P {
    P {
        view: PodView {
            name: format!("mypod-{i}"),
            uid: format!("uid-{i}"),
            state,
            tracked: true,
            ready: false,
            index: None,
            created: None,
            finished: None,
            pod_group: None,
            scheduled: true,
        },
        outcome: PodOutcome {
            namespace: "default".into(),
            ..PodOutcome::default()
        },
    }
}

impl P {
    pub fn index(mut self, i: i32) -> Self {
        self.view.index = Some(i);
        self
    }
    pub fn exit(mut self, name: &str, code: i32) -> Self {
        self.outcome.containers.push(ContainerExit {
            name: name.into(),
            exit_code: code,
        });
        self
    }
    pub fn init_exit(mut self, name: &str, code: i32) -> Self {
        self.outcome.init_containers.push(ContainerExit {
            name: name.into(),
            exit_code: code,
        });
        self
    }
    pub fn condition(mut self, type_: &str) -> Self {
        self.outcome.conditions.push((type_.into(), "True".into()));
        self
    }
    pub fn failure_count(mut self, n: i32) -> Self {
        self.outcome.index_failure_count = n;
        self
    }
    pub fn untracked(mut self) -> Self {
        self.view.tracked = false;
        self
    }
    pub fn finished(mut self, t: Timestamp) -> Self {
        self.view.finished = Some(t);
        self
    }
}

/// A Job `foobar` in `default` with `parallelism`, `completions` and `backoffLimit`.
pub(super) fn job(parallelism: i32, completions: Option<i32>, backoff_limit: i32) -> Job {
    let mut job = Job::default();
    job.metadata.name = Some("foobar".into());
    job.metadata.namespace = Some("default".into());
    job.metadata.uid = Some("job-uid".into());
    job.spec = Some(JobSpec {
        parallelism: Some(parallelism),
        completions,
        backoff_limit: Some(backoff_limit),
        ..JobSpec::default()
    });
    job
}

pub(super) fn spec(job: &mut Job) -> &mut JobSpec {
    job.spec.get_or_insert_with(JobSpec::default)
}

pub(super) fn indexed(mut job: Job) -> Job {
    spec(&mut job).completion_mode = Some("Indexed".into());
    job
}

pub(super) fn with_policy(mut job: Job, rules: Vec<PodFailurePolicyRule>) -> Job {
    spec(&mut job).pod_failure_policy = Some(PodFailurePolicy { rules });
    job
}

pub(super) fn with_status(mut job: Job, status: JobStatus) -> Job {
    job.status = Some(status);
    job
}

pub(super) fn with_success_policy(mut job: Job, rules: Vec<(Option<&str>, Option<i32>)>) -> Job {
    spec(&mut job).success_policy = Some(SuccessPolicy {
        rules: rules
            .into_iter()
            .map(|(i, c)| SuccessPolicyRule {
                succeeded_indexes: i.map(str::to_string),
                succeeded_count: c,
            })
            .collect(),
    });
    job
}

pub(super) fn on_exit_codes(
    action: &str,
    container: Option<&str>,
    operator: &str,
    values: &[i32],
) -> PodFailurePolicyRule {
    PodFailurePolicyRule {
        action: action.into(),
        on_exit_codes: Some(PodFailurePolicyOnExitCodesRequirement {
            container_name: container.map(str::to_string),
            operator: operator.into(),
            values: values.to_vec(),
        }),
        on_pod_conditions: None,
    }
}

pub(super) fn on_condition(action: &str, type_: &str) -> PodFailurePolicyRule {
    PodFailurePolicyRule {
        action: action.into(),
        on_exit_codes: None,
        on_pod_conditions: Some(vec![PodFailurePolicyOnPodConditionsPattern {
            type_: type_.into(),
            status: Some("True".into()),
        }]),
    }
}

/// A True condition as a Job status holds it.
pub(super) fn condition(type_: &str, reason: &str, message: &str) -> JobCondition {
    JobCondition {
        type_: type_.into(),
        status: "True".into(),
        reason: Some(reason.into()),
        message: Some(message.into()),
        ..JobCondition::default()
    }
}

/// One reconcile: track, remove the finalizers the tracking step released, flush, plan.
pub(super) fn sync(job: &Job, pods: &[P]) -> Plan {
    let views: Vec<PodView> = pods.iter().map(|p| p.view.clone()).collect();
    let outcomes: PodOutcomes = pods.iter().map(|p| (p.view.uid.clone(), p.outcome.clone())).collect();
    let t = track_with(job, &views, &outcomes, now());
    let still: HashSet<String> = views
        .iter()
        .filter(|p| p.tracked && !t.remove_finalizers.contains(&p.name))
        .map(|p| p.uid.clone())
        .collect();
    let mut status = t.status;
    flush(job, &mut status, &still);
    plan_with(
        job,
        status,
        &views,
        &outcomes,
        &SchedulingDecision::Group(None),
        now(),
        &JobConfig::default(),
    )
}

/// Reconciles until the status settles (at most 4 times), as the controller does: finalizers released are
/// gone, deleted pods are gone (their finalizer was removed first), created pods are not added.
pub(super) fn settle(job: &Job, pods: &[P]) -> Plan {
    let mut job = job.clone();
    let mut pods = pods.to_vec();
    let mut last = sync(&job, &pods);
    for _ in 0..3 {
        let views: Vec<PodView> = pods.iter().map(|p| p.view.clone()).collect();
        let outcomes: PodOutcomes = pods.iter().map(|p| (p.view.uid.clone(), p.outcome.clone())).collect();
        let released = track_with(&job, &views, &outcomes, now()).remove_finalizers;
        pods.retain(|p| !last.delete.contains(&p.view.name));
        for p in &mut pods {
            if released.contains(&p.view.name) {
                p.view.tracked = false;
            }
        }
        job.status = Some(last.status.clone());
        let next = sync(&job, &pods);
        if next.status == last.status {
            return next;
        }
        last = next;
    }
    last
}

/// The True conditions as (type, reason, message).
pub(super) fn conditions(plan: &Plan) -> Vec<(String, String, String)> {
    plan.status
        .conditions
        .iter()
        .flatten()
        .filter(|c| c.status == "True")
        .map(|c| {
            (
                c.type_.clone(),
                c.reason.clone().unwrap_or_default(),
                c.message.clone().unwrap_or_default(),
            )
        })
        .collect()
}

pub(super) fn c(type_: &str, reason: &str, message: &str) -> (String, String, String) {
    (type_.into(), reason.into(), message.into())
}

/// `(active, succeeded, failed, terminating)`.
pub(super) fn counters(plan: &Plan) -> (i32, i32, i32, i32) {
    let s = &plan.status;
    (
        s.active.unwrap_or(0),
        s.succeeded.unwrap_or(0),
        s.failed.unwrap_or(0),
        s.terminating.unwrap_or(0),
    )
}

pub(super) const FAILURE_TARGET: &str = "FailureTarget";
pub(super) const FAILED: &str = "Failed";
pub(super) const COMPLETE: &str = "Complete";
pub(super) const SUCCESS_CRITERIA_MET: &str = "SuccessCriteriaMet";
