//! The plan's unit tests.

use super::*;
use k8s_openapi::api::batch::v1::JobSpec;
use std::collections::HashSet;

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
    let set = Indexes::parse("0-2,4,6-7", 100);
    assert_eq!(set.len(), 6);
    assert!(set.contains(4) && !set.contains(3) && !set.contains(8));
    assert_eq!(set.to_string(), "0-2,4,6-7");
    assert_eq!(Indexes::default().to_string(), "");
    // Out of range, malformed, overlapping and adjacent parts, as upstream parses them.
    let set = Indexes::parse("x,5-3,-1,9-12,1-2,3,0,2147483647", 11);
    assert_eq!(set.to_string(), "0-3,9-10");
    let mut set = Indexes::parse("0-2147483646", i32::MAX);
    assert_eq!(set.len(), 2_147_483_647);
    assert!(!set.insert(5));
    assert_eq!(set.missing(i32::MAX).next(), None);
    let mut set = Indexes::parse("1,3", 10);
    assert!(set.insert(2) && set.insert(0));
    assert_eq!(set.to_string(), "0-3");
    assert_eq!(set.missing(6).collect::<Vec<_>>(), [4, 5]);
    assert!(set.insert(i32::MAX) && set.insert(i32::MAX - 1));
    assert_eq!(set.to_string(), "0-3,2147483646-2147483647");
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
fn pods_without_a_group_keep_new_pods_ungrouped() {
    // KEP-5547: an active pod without a schedulingGroup (created before the Job's PodGroup existed) keeps
    // the next pods ungrouped, with a MixedSchedulingGroup warning, so a gang is never half-grouped.
    let mut ungrouped = pod("old", PodState::Active, None);
    ungrouped.pod_group = None;
    let p = run(&job(3, Some(5)), &[ungrouped]);
    assert_eq!(p.create.len(), 2);
    assert_eq!(p.pod_group, None);
    assert!(
        p.events.iter().any(|e| e.warning && e.reason == "MixedSchedulingGroup"),
        "{:?}",
        p.events
    );
    // Once every running pod has the group, new pods get it again.
    let mut grouped = pod("old", PodState::Active, None);
    grouped.pod_group = Some("pg".into());
    let p = run(&job(3, Some(5)), &[grouped]);
    assert_eq!(p.pod_group.as_deref(), Some("pg"));
    assert!(p.events.iter().all(|e| e.reason != "MixedSchedulingGroup"));
    // A terminal pod without a group does not matter.
    let done = pod("done", PodState::Failed, None);
    let p = run(&job(3, Some(5)), &[done]);
    assert_eq!(p.pod_group.as_deref(), Some("pg"));
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
    // KEP-5547: the event of a missing dependency is `SchedulingDependencyNotFound`.
    assert_eq!(p.events[0].reason, "SchedulingDependencyNotFound");
    assert!(p.events[0].warning);
    let j = with_status(j, p.status);
    // Blocked again for the same reason: no second event; for another reason: its own event.
    let p = plan(
        &j,
        j.status.clone().unwrap(),
        &[],
        &blocked,
        now(),
        &JobConfig::default(),
    );
    assert!(p.events.is_empty());
    let unsupported = SchedulingDecision::Blocked {
        reason: "UnsupportedWorkloadStructure".into(),
        message: "found 2 Workloads".into(),
    };
    let p = plan(
        &j,
        j.status.clone().unwrap(),
        &[],
        &unsupported,
        now(),
        &JobConfig::default(),
    );
    assert_eq!(p.events.len(), 1);
    assert_eq!(p.events[0].reason, "UnsupportedWorkloadStructure");
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
    let errs: FieldErrors = workloadbuilder::FieldError::invalid("spec.scheduling.disruptionMode", "", "bad").into();
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
