//! The JobSet's success and failure policies, restarts and suspension, as a pure function of the JobSet, its
//! child Jobs and the time ([`super::decide`] turns the outcome into the reconcile's steps).
//!
//! - Success (default: every Job of the targeted replicated jobs, all of them when none is targeted,
//!   completes): `Completed`; Jobs still running are removed.
//! - A Job fails: while `restarts < failurePolicy.maxRestarts`, `status.restarts` is incremented (written
//!   first) and every Job of the previous attempt is removed and recreated (children are labelled with their
//!   restart attempt, so a restarted controller knows which ones are stale); otherwise `Failed` (reason
//!   `ReachedMaxRestarts`, or `FailedJobs` when no restart was allowed) and Jobs still running are removed.
//! - Suspend and resume propagate to every child Job (`Suspended` condition).

use std::collections::BTreeSet;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kwas_api_types::jobset::{JobSet, JobSetStatus, ReplicatedJobStatus, conditions};
use kwas_api_types::names::{conditions as job_conditions, labels};

use super::children::{Child, RESTART_ATTEMPT_LABEL, children};
use crate::job::plan::PlannedEvent;

/// The state of a child Job as the JobSet sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobState {
    /// Running (or waiting to run).
    Active,
    /// Suspended.
    Suspended,
    /// Completed.
    Complete,
    /// Failed.
    Failed,
}

fn has_condition(job: &Job, type_: &str) -> bool {
    job.status
        .iter()
        .flat_map(|s| s.conditions.iter().flatten())
        .any(|c| c.type_ == type_ && c.status == "True")
}

/// The state of `job`.
pub fn job_state(job: &Job) -> JobState {
    if has_condition(job, job_conditions::JOB_COMPLETE) {
        JobState::Complete
    } else if has_condition(job, job_conditions::JOB_FAILED) {
        JobState::Failed
    } else if job.spec.as_ref().and_then(|s| s.suspend) == Some(true) {
        JobState::Suspended
    } else {
        JobState::Active
    }
}

/// The restart attempt a child Job belongs to.
pub fn restart_attempt(job: &Job) -> i32 {
    job.labels()
        .get(RESTART_ATTEMPT_LABEL)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// What the success and failure policies, restarts and suspension decide for one reconcile.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PolicyOutcome {
    /// The desired status.
    pub status: JobSetStatus,
    /// Child Jobs to create.
    pub create: Vec<Child>,
    /// Child Jobs to delete.
    pub delete: Vec<String>,
    /// Child Jobs whose `spec.suspend` must change.
    pub set_suspend: Vec<(String, bool)>,
    /// Jobs of an earlier attempt are being removed: create nothing until they are gone.
    pub restarting: bool,
    /// `status.restarts` was incremented: write the status before acting on it.
    pub restart_started: bool,
    /// Events to record.
    pub events: Vec<PlannedEvent>,
}

pub(crate) fn find<'a>(status: &'a JobSetStatus, type_: &str) -> Option<&'a Condition> {
    status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == type_ && c.status == "True")
}

pub(crate) fn set_condition(
    status: &mut JobSetStatus,
    type_: &str,
    value: &str,
    reason: &str,
    message: &str,
    now: Timestamp,
    generation: Option<i64>,
) {
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    match conditions.iter_mut().find(|c| c.type_ == type_) {
        Some(c) => {
            if c.status != value {
                c.last_transition_time = Time(now);
            }
            c.status = value.into();
            c.reason = reason.into();
            c.message = message.into();
            c.observed_generation = generation;
        }
        None => conditions.push(Condition {
            type_: type_.into(),
            status: value.into(),
            reason: reason.into(),
            message: message.into(),
            last_transition_time: Time(now),
            observed_generation: generation,
        }),
    }
}

fn event(warning: bool, reason: &str, message: impl Into<String>) -> PlannedEvent {
    PlannedEvent {
        warning,
        reason: reason.into(),
        message: message.into(),
    }
}

/// Per-replicated-job counts of the given (current) Jobs.
pub fn replicated_jobs_status(js: &JobSet, jobs: &[&Job]) -> Vec<ReplicatedJobStatus> {
    js.spec
        .replicated_jobs
        .iter()
        .map(|r| {
            let mine: Vec<&&Job> = jobs
                .iter()
                .filter(|j| j.labels().get(labels::REPLICATED_JOB_NAME) == Some(&r.name))
                .collect();
            let count =
                |s: JobState| i32::try_from(mine.iter().filter(|j| job_state(j) == s).count()).unwrap_or(i32::MAX);
            let ready = mine
                .iter()
                .filter(|j| {
                    let parallelism = j.spec.as_ref().and_then(|s| s.parallelism).unwrap_or(1);
                    let st = j.status.as_ref();
                    job_state(j) == JobState::Complete || st.and_then(|s| s.ready).unwrap_or(0) >= parallelism.max(1)
                })
                .count();
            ReplicatedJobStatus {
                name: r.name.clone(),
                ready: i32::try_from(ready).unwrap_or(i32::MAX),
                succeeded: count(JobState::Complete),
                failed: count(JobState::Failed),
                active: count(JobState::Active),
                suspended: count(JobState::Suspended),
            }
        })
        .collect()
}

/// Decide what to do with `js` given its child Jobs.
pub fn evaluate(js: &JobSet, jobs: &[Job], now: Timestamp) -> PolicyOutcome {
    let generation = js.metadata.generation;
    let mut p = PolicyOutcome {
        status: js.status.clone().unwrap_or_default(),
        ..PolicyOutcome::default()
    };
    p.status.observed_generation = generation;
    let attempt = p.status.restarts;
    let (current, stale): (Vec<&Job>, Vec<&Job>) = jobs.iter().partition(|j| restart_attempt(j) >= attempt);
    p.status.replicated_jobs_status = replicated_jobs_status(js, &current);
    let active_names = |jobs: &[&Job]| -> Vec<String> {
        jobs.iter()
            .filter(|j| matches!(job_state(j), JobState::Active | JobState::Suspended))
            .map(|j| j.name_any())
            .collect()
    };

    // Finished JobSets only clean up.
    if find(&p.status, conditions::COMPLETED).is_some() || find(&p.status, conditions::FAILED).is_some() {
        p.delete = active_names(&current);
        p.delete.extend(stale.iter().map(|j| j.name_any()));
        return p;
    }
    // Jobs of an earlier attempt go first.
    if !stale.is_empty() {
        p.restarting = true;
        p.delete = stale.iter().map(|j| j.name_any()).collect();
        return p;
    }

    // Failure and restarts.
    if let Some(failed) = current.iter().find(|j| job_state(j) == JobState::Failed) {
        let max = js.spec.failure_policy.as_ref().map_or(0, |f| f.max_restarts);
        if p.status.restarts < max {
            p.status.restarts += 1;
            p.restart_started = true;
            p.events.push(event(
                true,
                "Restarting",
                format!(
                    "Job {} failed: restarting the JobSet (attempt {} of {max})",
                    failed.name_any(),
                    p.status.restarts
                ),
            ));
        } else {
            let reason = if max > 0 {
                conditions::REASON_REACHED_MAX_RESTARTS
            } else {
                "FailedJobs"
            };
            let message = format!("jobset failed: Job {} failed", failed.name_any());
            set_condition(
                &mut p.status,
                conditions::FAILED,
                "True",
                reason,
                &message,
                now,
                generation,
            );
            p.events.push(event(true, reason, message));
            p.delete = active_names(&current);
        }
        return p;
    }

    // Success.
    let targets: BTreeSet<&str> = match js.spec.success_policy.as_ref().map(|s| &s.target_replicated_jobs) {
        Some(t) if !t.is_empty() => t.iter().map(String::as_str).collect(),
        _ => js.spec.replicated_jobs.iter().map(|r| r.name.as_str()).collect(),
    };
    let wanted = children(js);
    let all_done = wanted
        .iter()
        .filter(|c| targets.contains(c.replicated_job.as_str()))
        .all(|c| {
            current
                .iter()
                .any(|j| j.name_any() == c.name && job_state(j) == JobState::Complete)
        });
    if all_done {
        set_condition(
            &mut p.status,
            conditions::COMPLETED,
            "True",
            conditions::REASON_ALL_JOBS_COMPLETED,
            "jobset completed successfully",
            now,
            generation,
        );
        p.events
            .push(event(false, "Completed", "jobset completed successfully"));
        p.delete = active_names(&current);
        return p;
    }

    // Suspend and resume.
    let suspend = js.spec.suspend.unwrap_or(false);
    let was_suspended = find(&p.status, conditions::SUSPENDED).is_some();
    if suspend && !was_suspended {
        set_condition(
            &mut p.status,
            conditions::SUSPENDED,
            "True",
            conditions::REASON_SUSPENDED,
            "jobset is suspended",
            now,
            generation,
        );
        p.events.push(event(false, "Suspended", "jobset is suspended"));
    } else if !suspend && was_suspended {
        set_condition(
            &mut p.status,
            conditions::SUSPENDED,
            "False",
            conditions::REASON_RESUMED,
            "jobset is resumed",
            now,
            generation,
        );
        p.events.push(event(false, "Resumed", "jobset is resumed"));
    }
    for j in &current {
        let is = j.spec.as_ref().and_then(|s| s.suspend).unwrap_or(false);
        if is != suspend && matches!(job_state(j), JobState::Active | JobState::Suspended) {
            p.set_suspend.push((j.name_any(), suspend));
        }
    }

    // Missing children.
    p.create = wanted
        .into_iter()
        .filter(|c| !current.iter().any(|j| j.name_any() == c.name))
        .collect();
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::batch::v1::{JobCondition, JobStatus};
    use kwas_api_types::jobset::{FailurePolicy, JobSetSpec, ReplicatedJob};

    fn jobset(max_restarts: i32) -> JobSet {
        let mut js = JobSet::new(
            "js",
            JobSetSpec {
                replicated_jobs: vec![
                    ReplicatedJob {
                        name: "a".into(),
                        replicas: 1,
                        template: Default::default(),
                    },
                    ReplicatedJob {
                        name: "b".into(),
                        replicas: 2,
                        template: Default::default(),
                    },
                ],
                failure_policy: Some(FailurePolicy { max_restarts }),
                ..Default::default()
            },
        );
        js.metadata.namespace = Some("ns".into());
        js
    }

    fn job(name: &str, rj: &str, attempt: i32, condition: Option<&str>) -> Job {
        let mut job = Job::default();
        job.metadata.name = Some(name.into());
        job.metadata.labels = Some(
            [
                (labels::REPLICATED_JOB_NAME.to_string(), rj.to_string()),
                (RESTART_ATTEMPT_LABEL.to_string(), attempt.to_string()),
            ]
            .into(),
        );
        job.spec = Some(Default::default());
        job.status = condition.map(|c| JobStatus {
            conditions: Some(vec![JobCondition {
                type_: c.into(),
                status: "True".into(),
                ..Default::default()
            }]),
            ..Default::default()
        });
        job
    }

    fn now() -> Timestamp {
        Timestamp::from_second(1000).unwrap()
    }

    #[test]
    fn creates_missing_children() {
        let js = jobset(0);
        let p = evaluate(&js, &[job("js-a-0", "a", 0, None)], now());
        let names: Vec<_> = p.create.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["js-b-0", "js-b-1"]);
        assert_eq!(p.status.replicated_jobs_status[0].active, 1);
    }

    #[test]
    fn completes_when_every_job_completes() {
        let js = jobset(0);
        let jobs = [
            job("js-a-0", "a", 0, Some("Complete")),
            job("js-b-0", "b", 0, Some("Complete")),
            job("js-b-1", "b", 0, Some("Complete")),
        ];
        let p = evaluate(&js, &jobs, now());
        assert!(find(&p.status, conditions::COMPLETED).is_some());
        assert_eq!(p.status.replicated_jobs_status[1].succeeded, 2);
        assert!(p.create.is_empty());
    }

    #[test]
    fn restarts_then_fails() {
        let js = jobset(1);
        let jobs = [job("js-a-0", "a", 0, Some("Failed")), job("js-b-0", "b", 0, None)];
        let p = evaluate(&js, &jobs, now());
        assert!(p.restart_started);
        assert_eq!(p.status.restarts, 1);
        assert!(p.delete.is_empty(), "the restart is written before anything is deleted");
        let mut restarted = js.clone();
        restarted.status = Some(p.status);
        let p = evaluate(&restarted, &jobs, now());
        assert!(p.restarting);
        assert_eq!(p.delete, ["js-a-0", "js-b-0"]);
        assert!(p.create.is_empty());
        // Attempt 1 fails too: no restarts left.
        let jobs = [job("js-a-0", "a", 1, Some("Failed"))];
        let p = evaluate(&restarted, &jobs, now());
        let failed = find(&p.status, conditions::FAILED).unwrap();
        assert_eq!(failed.reason, conditions::REASON_REACHED_MAX_RESTARTS);
    }

    #[test]
    fn suspend_propagates() {
        let mut js = jobset(0);
        js.spec.suspend = Some(true);
        let p = evaluate(&js, &[job("js-a-0", "a", 0, None)], now());
        assert_eq!(p.set_suspend, [("js-a-0".to_string(), true)]);
        assert!(find(&p.status, conditions::SUSPENDED).is_some());
    }
}
