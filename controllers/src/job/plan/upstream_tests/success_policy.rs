//! `TestSyncJobWithJobSuccessPolicy` (cases with the success policy feature on, as in v1.37 where it is GA)
//! and the rule semantics of `matchSuccessPolicy`.

use super::*;
use crate::job::plan::failure_policy::REASON_POD_FAILURE_POLICY;
use crate::job::plan::indexes::Indexes;
use crate::job::plan::success_rules::{REASON_SUCCESS_POLICY, match_success_policy};

const MATCHED: &str = "Matched rules at index 0";

fn success_job(parallelism: i32, completions: i32, backoff_limit: i32) -> Job {
    with_success_policy(
        indexed(job(parallelism, Some(completions), backoff_limit)),
        vec![(Some("0,1"), Some(1))],
    )
}

fn met() -> Vec<(String, String, String)> {
    vec![c(SUCCESS_CRITERIA_MET, REASON_SUCCESS_POLICY, MATCHED)]
}

fn met_and_complete() -> Vec<(String, String, String)> {
    vec![
        c(SUCCESS_CRITERIA_MET, REASON_SUCCESS_POLICY, MATCHED),
        c(COMPLETE, REASON_SUCCESS_POLICY, MATCHED),
    ]
}

fn met_status() -> JobStatus {
    JobStatus {
        conditions: Some(vec![condition(SUCCESS_CRITERIA_MET, REASON_SUCCESS_POLICY, MATCHED)]),
        ..JobStatus::default()
    }
}

/// TestSyncJobWithJobSuccessPolicy: "job with successPolicy; jobPodReplacementPolicy feature enabled; job
/// has SuccessCriteriaMet condition if job meets to successPolicy and some indexes fail". The remaining pods
/// are terminated; `Complete` follows once they are gone.
#[test]
fn success_criteria_met_while_some_indexes_fail() {
    let j = success_job(3, 3, i32::MAX);
    let pods = [
        pod(0, PodState::Failed).index(0),
        pod(1, PodState::Active).index(0),
        pod(2, PodState::Succeeded).index(1),
        pod(3, PodState::Active).index(2),
    ];
    let p = sync(&j, &pods);
    assert_eq!(counters(&p), (0, 1, 1, 2));
    assert_eq!(p.status.completed_indexes.as_deref(), Some("1"));
    assert_eq!(conditions(&p), met());
    assert_eq!(p.delete.len(), 2);
    assert_eq!(conditions(&settle(&j, &pods)), met_and_complete());
}

/// TestSyncJobWithJobSuccessPolicy: "job with podFailurePolicy and successPolicy; jobPodReplacementPolicy
/// feature enabled; job has SuccessCriteriaMet condition if job meets to successPolicy and doesn't meet to
/// podFailurePolicy".
#[test]
fn success_policy_met_and_pod_failure_policy_not() {
    let j = with_policy(
        success_job(2, 2, i32::MAX),
        vec![on_condition("FailJob", "DisruptionTarget")],
    );
    let pods = [
        pod(0, PodState::Failed).index(0),
        pod(1, PodState::Active).index(0),
        pod(2, PodState::Succeeded).index(1),
    ];
    let p = sync(&j, &pods);
    assert_eq!(counters(&p), (0, 1, 1, 1));
    assert_eq!(conditions(&p), met());
}

/// TestSyncJobWithJobSuccessPolicy: "job with backoffLimitPerIndex and successPolicy; jobPodReplacementPolicy
/// feature enabled; job has SuccessCriteriaMet condition if job meets to successPolicy and doesn't meet
/// backoffLimitPerIndex".
#[test]
fn success_policy_met_and_backoff_limit_per_index_not() {
    let mut j = success_job(2, 2, i32::MAX);
    spec(&mut j).backoff_limit_per_index = Some(2);
    let pods = [
        pod(0, PodState::Failed).index(0),
        pod(1, PodState::Active).index(0),
        pod(2, PodState::Succeeded).index(1),
    ];
    let p = sync(&j, &pods);
    assert_eq!(counters(&p), (0, 1, 1, 1));
    assert_eq!(p.status.failed_indexes.as_deref(), Some(""));
    assert_eq!(conditions(&p), met());
}

/// TestSyncJobWithJobSuccessPolicy: "job with successPolicy; jobPodReplacementPolicy feature enabled; job has
/// both Complete and SuccessCriteriaMet condition when job meets to successPolicy and all pods have been
/// already removed".
#[test]
fn complete_once_all_pods_are_gone() {
    let mut j = with_status(success_job(2, 2, i32::MAX), met_status());
    spec(&mut j).backoff_limit_per_index = Some(2);
    let pods = [pod(0, PodState::Failed).index(0), pod(1, PodState::Succeeded).index(1)];
    let p = sync(&j, &pods);
    assert_eq!(counters(&p), (0, 1, 1, 0));
    assert_eq!(p.status.completed_indexes.as_deref(), Some("1"));
    assert_eq!(conditions(&p), met_and_complete());
    assert!(p.status.completion_time.is_some());
}

/// TestSyncJobWithJobSuccessPolicy: "job with successPolicy; jobPodReplacementPolicy feature enabled; job has
/// SuccessCriteriaMet condition when job meets to successPolicy and some pods still are running" (issue
/// 123775; also the "JobManagedBy feature enabled" variant).
#[test]
fn success_criteria_met_while_pods_still_run() {
    let mut j = with_status(
        with_success_policy(indexed(job(3, Some(3), i32::MAX)), vec![(Some("0,1"), Some(1))]),
        met_status(),
    );
    spec(&mut j).backoff_limit_per_index = Some(3);
    let pods = [
        pod(0, PodState::Failed).index(0),
        pod(1, PodState::Active).index(1),
        pod(2, PodState::Succeeded).index(1),
        pod(3, PodState::Active).index(2),
    ];
    let p = sync(&j, &pods);
    assert_eq!(counters(&p), (0, 1, 1, 2));
    assert_eq!(conditions(&p), met());
}

/// TestSyncJobWithJobSuccessPolicy: "job with successPolicy and podFailurePolicy; jobPodReplacementPolicy
/// feature enabled; job has a failed condition when job meets to both successPolicy and podFailurePolicy".
/// Deviation: upstream counts the running pod it deletes as failed (2); kwas releases it uncounted (1).
#[test]
fn pod_failure_policy_wins_over_success_policy() {
    let j = with_policy(
        success_job(2, 2, i32::MAX),
        vec![on_condition("FailJob", "DisruptionTarget")],
    );
    let pods = [
        pod(0, PodState::Failed).index(0).condition("DisruptionTarget"),
        pod(1, PodState::Active).index(0),
        pod(2, PodState::Succeeded).index(1),
    ];
    let p = sync(&j, &pods);
    assert_eq!(counters(&p), (0, 1, 1, 1));
    assert_eq!(
        conditions(&p),
        vec![c(
            FAILURE_TARGET,
            REASON_POD_FAILURE_POLICY,
            "Pod default/mypod-0 has condition DisruptionTarget matching FailJob rule at index 0"
        )]
    );
}

/// TestSyncJobWithJobSuccessPolicy: "job with successPolicy and backoffLimitPerIndex; jobPodReplacementPolicy
/// feature enabled; job has a failed condition when job meets to both successPolicy and
/// backoffLimitPerIndex".
#[test]
fn failed_indexes_win_over_success_policy() {
    let mut j = success_job(2, 2, i32::MAX);
    spec(&mut j).backoff_limit_per_index = Some(1);
    let pods = [
        pod(0, PodState::Failed).index(0).failure_count(1),
        pod(1, PodState::Succeeded).index(1),
    ];
    let p = sync(&j, &pods);
    assert_eq!(counters(&p), (0, 1, 1, 0));
    assert_eq!(p.status.failed_indexes.as_deref(), Some("0"));
    let msg = "Job has failed indexes";
    assert_eq!(
        conditions(&p),
        vec![c(FAILURE_TARGET, "FailedIndexes", msg), c(FAILED, "FailedIndexes", msg)]
    );
}

/// TestSyncJobWithJobSuccessPolicy: "job with successPolicy and backoffLimit; jobPodReplacementPolicy feature
/// enabled; job has a failed condition when job meets to both successPolicy and backoffLimit".
#[test]
fn backoff_limit_wins_over_success_policy() {
    let j = success_job(2, 2, 1);
    let pods = [
        pod(0, PodState::Failed).index(0),
        pod(1, PodState::Failed).index(0),
        pod(2, PodState::Succeeded).index(1),
    ];
    let p = sync(&j, &pods);
    assert_eq!(counters(&p), (0, 1, 2, 0));
    let msg = "Job has reached the specified backoff limit";
    assert_eq!(
        conditions(&p),
        vec![
            c(FAILURE_TARGET, "BackoffLimitExceeded", msg),
            c(FAILED, "BackoffLimitExceeded", msg)
        ]
    );
}

/// TestSyncJobWithJobSuccessPolicy: "job with successPolicy and podFailurePolicy; jobPodReplacementPolicy
/// feature enabled; job with SuccessCriteriaMet has never been transitioned to FailureTarget and Failed
/// even if job meets podFailurePolicy".
#[test]
fn success_criteria_met_is_never_failed_by_pod_failure_policy() {
    let mut status = met_status();
    status.succeeded = Some(1);
    status.completed_indexes = Some("1".into());
    let j = with_status(
        with_policy(
            with_success_policy(indexed(job(2, Some(2), i32::MAX)), vec![(None, Some(1))]),
            vec![on_condition("FailJob", "DisruptionTarget")],
        ),
        status,
    );
    let pods = [
        pod(0, PodState::Failed).index(0).condition("DisruptionTarget"),
        pod(1, PodState::Succeeded).index(1),
    ];
    let p = sync(&j, &pods);
    assert_eq!(counters(&p), (0, 1, 1, 0));
    assert_eq!(conditions(&p), met_and_complete());
}

/// TestSyncJobWithJobSuccessPolicy: "job with successPolicy and backoffLimitPerIndex; jobPodReplacementPolicy
/// feature enabled; job with SuccessCriteriaMet has never been transitioned to FailureTarget and Failed even
/// if job meet backoffLimitPerIndex".
#[test]
fn success_criteria_met_is_never_failed_by_failed_indexes() {
    let mut status = met_status();
    status.succeeded = Some(1);
    status.completed_indexes = Some("1".into());
    let mut j = with_status(
        with_success_policy(indexed(job(2, Some(2), i32::MAX)), vec![(Some("1"), None)]),
        status,
    );
    spec(&mut j).backoff_limit_per_index = Some(1);
    let pods = [
        pod(0, PodState::Failed).index(0).failure_count(1),
        pod(1, PodState::Succeeded).index(1),
    ];
    let p = sync(&j, &pods);
    assert_eq!(counters(&p), (0, 1, 1, 0));
    assert_eq!(p.status.failed_indexes.as_deref(), Some("0"));
    assert_eq!(conditions(&p), met_and_complete());
}

/// TestSyncJobWithJobSuccessPolicy: "job with successPolicy and backoffLimit; jobPodReplacementPolicy feature
/// enabled; job with SuccessCriteriaMet has never been transitioned to FailureTarget and Failed even if job
/// meets backoffLimit".
#[test]
fn success_criteria_met_is_never_failed_by_backoff_limit() {
    let mut status = met_status();
    status.succeeded = Some(1);
    status.completed_indexes = Some("1".into());
    let j = with_status(success_job(2, 2, 1), status);
    let pods = [pod(0, PodState::Failed).index(0), pod(1, PodState::Succeeded).index(1)];
    let p = sync(&j, &pods);
    assert_eq!(counters(&p), (0, 1, 1, 0));
    assert_eq!(conditions(&p), met_and_complete());
}

/// TestSyncJobWithJobSuccessPolicy: "job with successPolicy and podFailureTarget; jobPodReplacementPolicy
/// feature enabled; job with FailureTarget has never been transitioned to SuccessCriteriaMet even if job
/// meets successPolicy".
#[test]
fn failure_target_is_never_turned_into_success() {
    let msg = "Pod default/mypod-0 has condition DisruptionTarget matching FailJob rule at index 0";
    let j = with_status(
        with_policy(
            success_job(2, 2, i32::MAX),
            vec![on_condition("FailJob", "DisruptionTarget")],
        ),
        JobStatus {
            failed: Some(1),
            succeeded: Some(0),
            completed_indexes: Some("1".into()),
            conditions: Some(vec![condition(FAILURE_TARGET, REASON_POD_FAILURE_POLICY, msg)]),
            ..JobStatus::default()
        },
    );
    let pods = [
        pod(0, PodState::Failed)
            .index(0)
            .condition("DisruptionTarget")
            .untracked(),
        pod(1, PodState::Succeeded).index(1),
    ];
    let p = sync(&j, &pods);
    assert_eq!(counters(&p), (0, 1, 1, 0));
    assert_eq!(
        conditions(&p),
        vec![
            c(FAILURE_TARGET, REASON_POD_FAILURE_POLICY, msg),
            c(FAILED, REASON_POD_FAILURE_POLICY, msg)
        ]
    );
}

/// The rule semantics of upstream's `matchSuccessPolicy` (the kinds of case `TestMatchSuccessPolicy`
/// covers, written here rather than ported line by line): no policy; an empty succeeded set; succeededIndexes
/// only; succeededCount only; both; a rule that parses to nothing is skipped; the first matching rule names
/// the index.
#[test]
fn match_success_policy_cases() {
    let j = |rules| with_success_policy(indexed(job(10, Some(10), 6)), rules);
    let set = |s: &str| Indexes::parse(s, 10);
    assert_eq!(
        match_success_policy(&indexed(job(10, Some(10), 6)), 10, &set("0-9")),
        None
    );
    assert_eq!(match_success_policy(&j(vec![(None, Some(1))]), 10, &set("")), None);
    let rule = j(vec![(Some("0-2"), None)]);
    assert_eq!(match_success_policy(&rule, 10, &set("0-1")), None);
    assert_eq!(match_success_policy(&rule, 10, &set("0-3")).as_deref(), Some(MATCHED));
    let rule = j(vec![(None, Some(2))]);
    assert_eq!(match_success_policy(&rule, 10, &set("5")), None);
    assert_eq!(match_success_policy(&rule, 10, &set("5,7")).as_deref(), Some(MATCHED));
    let rule = j(vec![(Some("3-6"), Some(2))]);
    assert_eq!(match_success_policy(&rule, 10, &set("1,3")), None);
    assert_eq!(match_success_policy(&rule, 10, &set("1,3,6")).as_deref(), Some(MATCHED));
    let rule = j(vec![(Some("10-12"), None), (Some("x"), None), (Some("9"), Some(1))]);
    assert_eq!(
        match_success_policy(&rule, 10, &set("9")).as_deref(),
        Some("Matched rules at index 2")
    );
    // Huge indexes cost no more than small ones.
    let rule = j(vec![(Some("0-2147483646"), None)]);
    assert_eq!(
        match_success_policy(&rule, i32::MAX, &Indexes::parse("0-2147483646", i32::MAX)).as_deref(),
        Some(MATCHED)
    );
}
