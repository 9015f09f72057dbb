//! `TestSyncJobWithPodFailurePolicy` (upstream forces `podReplacementPolicy: Failed` when unset; a Job
//! with a pod failure policy behaves so anyway). `onExitCodeRules` is upstream's
//! `[Ignore In {1,2,3}, FailJob In {5,6,7}]`.

use super::*;
use crate::job::plan::failure_policy::REASON_POD_FAILURE_POLICY;

fn on_exit_code_rules() -> Vec<PodFailurePolicyRule> {
    vec![
        on_exit_codes("Ignore", None, "In", &[1, 2, 3]),
        on_exit_codes("FailJob", None, "In", &[5, 6, 7]),
    ]
}

fn fail_job(message: &str) -> Vec<(String, String, String)> {
    vec![
        c(FAILURE_TARGET, REASON_POD_FAILURE_POLICY, message),
        c(FAILED, REASON_POD_FAILURE_POLICY, message),
    ]
}

/// TestSyncJobWithPodFailurePolicy: "default handling for pod failure if the container matching the exit
/// codes does not match the containerName restriction".
#[test]
fn default_handling_when_container_name_does_not_match() {
    let j = with_policy(
        job(1, Some(1), 6),
        vec![
            on_exit_codes("Ignore", Some("main-container"), "In", &[1, 2, 3]),
            on_exit_codes("FailJob", Some("main-container"), "In", &[5, 6, 7]),
        ],
    );
    let pods = [pod(0, PodState::Failed)
        .exit("monitoring-container", 5)
        .exit("main-container", 42)];
    let p = sync(&j, &pods);
    assert_eq!(conditions(&p), vec![]);
    assert_eq!(counters(&p), (1, 0, 1, 0));
}

/// TestSyncJobWithPodFailurePolicy: "running pod should not result in job fail based on OnExitCodes".
#[test]
fn running_pod_does_not_fail_the_job() {
    let j = with_policy(job(1, Some(1), 6), on_exit_code_rules());
    let pods = [pod(0, PodState::Active).exit("main-container", 5)];
    let p = sync(&j, &pods);
    assert_eq!(conditions(&p), vec![]);
    assert_eq!(counters(&p), (1, 0, 0, 0));
}

/// TestSyncJobWithPodFailurePolicy: "fail job based on OnExitCodes".
#[test]
fn fail_job_based_on_on_exit_codes() {
    let j = with_policy(job(1, Some(1), 6), on_exit_code_rules());
    let pods = [pod(0, PodState::Failed).exit("main-container", 5)];
    let p = sync(&j, &pods);
    assert_eq!(
        conditions(&p),
        fail_job(
            "Container main-container for pod default/mypod-0 failed with exit code 5 matching FailJob rule at index 1"
        )
    );
    assert_eq!(counters(&p), (0, 0, 1, 0));
    // The failure is recorded on the Job as upstream records it: a warning event with the reason.
    assert!(
        p.events
            .iter()
            .any(|e| e.warning && e.reason == REASON_POD_FAILURE_POLICY),
        "{:?}",
        p.events
    );
}

/// TestSyncJobWithPodFailurePolicy: "job marked already as failure target with failed pod".
#[test]
fn already_failure_target_with_failed_pod() {
    let msg =
        "Container main-container for pod default/mypod-0 failed with exit code 5 matching FailJob rule at index 1";
    let j = with_status(
        with_policy(job(1, Some(1), 6), on_exit_code_rules()),
        JobStatus {
            conditions: Some(vec![condition(FAILURE_TARGET, REASON_POD_FAILURE_POLICY, msg)]),
            ..JobStatus::default()
        },
    );
    let pods = [pod(0, PodState::Failed).exit("main-container", 5)];
    let p = sync(&j, &pods);
    assert_eq!(conditions(&p), fail_job(msg));
    assert_eq!(counters(&p), (0, 0, 1, 0));
}

/// TestSyncJobWithPodFailurePolicy: "job marked already as failure target with failed pod, message based on
/// already deleted pod": the recorded message is kept.
#[test]
fn already_failure_target_message_of_a_deleted_pod() {
    let msg = "Container main-container for pod default/already-deleted-pod failed with exit code 5 matching FailJob rule at index 1";
    let j = with_status(
        with_policy(job(1, Some(1), 6), on_exit_code_rules()),
        JobStatus {
            conditions: Some(vec![condition(FAILURE_TARGET, REASON_POD_FAILURE_POLICY, msg)]),
            ..JobStatus::default()
        },
    );
    let pods = [pod(0, PodState::Failed).exit("main-container", 5)];
    let p = sync(&j, &pods);
    assert_eq!(conditions(&p), fail_job(msg));
    assert_eq!(counters(&p), (0, 0, 1, 0));
}

/// TestSyncJobWithPodFailurePolicy: "fail job with multiple pods". Deviation: upstream counts the running
/// pod it deletes as failed (failed 2) and, in that test's gate setting, writes `Failed` at once; kwas
/// releases the pods it deletes uncounted and writes `Failed` once they are gone (next reconcile).
#[test]
fn fail_job_with_multiple_pods() {
    let msg =
        "Container main-container for pod default/mypod-1 failed with exit code 5 matching FailJob rule at index 1";
    let j = with_policy(job(2, Some(2), 6), on_exit_code_rules());
    let pods = [
        pod(0, PodState::Active),
        pod(1, PodState::Failed).exit("main-container", 5),
    ];
    let p = sync(&j, &pods);
    assert_eq!(conditions(&p), vec![c(FAILURE_TARGET, REASON_POD_FAILURE_POLICY, msg)]);
    assert_eq!(p.delete, vec!["mypod-0".to_string()]);
    assert_eq!(counters(&p), (0, 0, 1, 1));
    let p = settle(&j, &pods);
    assert_eq!(conditions(&p), fail_job(msg));
    assert_eq!(counters(&p), (0, 0, 1, 0));
}

/// TestSyncJobWithPodFailurePolicy: "fail indexed job based on OnExitCodes".
#[test]
fn fail_indexed_job_based_on_on_exit_codes() {
    let j = with_policy(indexed(job(1, Some(1), 6)), on_exit_code_rules());
    let pods = [pod(0, PodState::Failed).index(0).exit("main-container", 5)];
    let p = sync(&j, &pods);
    assert_eq!(
        conditions(&p),
        fail_job(
            "Container main-container for pod default/mypod-0 failed with exit code 5 matching FailJob rule at index 1"
        )
    );
    assert_eq!(counters(&p), (0, 0, 1, 0));
}

/// TestSyncJobWithPodFailurePolicy: "fail job based on OnExitCodes with NotIn operator".
#[test]
fn fail_job_with_not_in_operator() {
    let j = with_policy(
        job(1, Some(1), 6),
        vec![on_exit_codes("FailJob", None, "NotIn", &[5, 6, 7])],
    );
    let pods = [pod(0, PodState::Failed).exit("main-container", 42)];
    let p = sync(&j, &pods);
    assert_eq!(
        conditions(&p),
        fail_job(
            "Container main-container for pod default/mypod-0 failed with exit code 42 matching FailJob rule at index 0"
        )
    );
    assert_eq!(counters(&p), (0, 0, 1, 0));
}

/// TestSyncJobWithPodFailurePolicy: "default handling job based on OnExitCodes with NotIn operator".
#[test]
fn default_handling_with_not_in_operator() {
    let j = with_policy(
        job(1, Some(1), 6),
        vec![on_exit_codes("FailJob", None, "NotIn", &[5, 6, 7])],
    );
    let pods = [pod(0, PodState::Failed).exit("main-container", 5)];
    let p = sync(&j, &pods);
    assert_eq!(conditions(&p), vec![]);
    assert_eq!(counters(&p), (1, 0, 1, 0));
}

/// TestSyncJobWithPodFailurePolicy: "fail job based on OnExitCodes for InitContainer".
#[test]
fn fail_job_based_on_an_init_container() {
    let j = with_policy(job(1, Some(1), 6), on_exit_code_rules());
    let pods = [pod(0, PodState::Failed)
        .init_exit("init-container", 5)
        .exit("main-container", 143)];
    let p = sync(&j, &pods);
    assert_eq!(
        conditions(&p),
        fail_job(
            "Container init-container for pod default/mypod-0 failed with exit code 5 matching FailJob rule at index 1"
        )
    );
    assert_eq!(counters(&p), (0, 0, 1, 0));
}

/// TestSyncJobWithPodFailurePolicy: "ignore pod failure; both rules are matching, the first is executed
/// only".
#[test]
fn ignore_when_both_rules_match_first_wins() {
    let j = with_policy(job(1, Some(1), 0), on_exit_code_rules());
    let pods = [pod(0, PodState::Failed).exit("container1", 2).exit("container2", 6)];
    let p = sync(&j, &pods);
    assert_eq!(conditions(&p), vec![]);
    assert_eq!(counters(&p), (1, 0, 0, 0));
}

/// TestSyncJobWithPodFailurePolicy: "ignore pod failure based on OnExitCodes".
#[test]
fn ignore_based_on_on_exit_codes() {
    let j = with_policy(job(1, Some(1), 0), on_exit_code_rules());
    let pods = [pod(0, PodState::Failed).exit("main-container", 1)];
    let p = sync(&j, &pods);
    assert_eq!(conditions(&p), vec![]);
    assert_eq!(counters(&p), (1, 0, 0, 0));
    assert_eq!(p.create.len(), 1);
}

/// TestSyncJobWithPodFailurePolicy: "default job based on OnExitCodes": no rule matches, the failure
/// counts, `backoffLimit: 0` fails the Job.
#[test]
fn default_job_based_on_on_exit_codes() {
    let j = with_policy(job(1, Some(1), 0), on_exit_code_rules());
    let pods = [pod(0, PodState::Failed).exit("main-container", 10)];
    let p = sync(&j, &pods);
    let msg = "Job has reached the specified backoff limit";
    assert_eq!(
        conditions(&p),
        vec![
            c(FAILURE_TARGET, "BackoffLimitExceeded", msg),
            c(FAILED, "BackoffLimitExceeded", msg)
        ]
    );
    assert_eq!(counters(&p), (0, 0, 1, 0));
}

/// TestSyncJobWithPodFailurePolicy: "count pod failure based on OnExitCodes; both rules are matching, the
/// first is executed only".
#[test]
fn count_based_on_on_exit_codes_first_rule_wins() {
    let j = with_policy(
        job(1, Some(1), 6),
        vec![
            on_exit_codes("Count", None, "In", &[1, 2]),
            on_exit_codes("Ignore", None, "In", &[2, 3]),
        ],
    );
    let pods = [pod(0, PodState::Failed).exit("main-container", 2)];
    let p = sync(&j, &pods);
    assert_eq!(conditions(&p), vec![]);
    assert_eq!(counters(&p), (1, 0, 1, 0));
}

/// TestSyncJobWithPodFailurePolicy: "count pod failure based on OnPodConditions; both rules are matching,
/// the first is executed only".
#[test]
fn count_based_on_on_pod_conditions_first_rule_wins() {
    let j = with_policy(
        job(1, Some(1), 6),
        vec![
            on_condition("Count", "ResourceLimitExceeded"),
            on_condition("Ignore", "DisruptionTarget"),
        ],
    );
    let pods = [pod(0, PodState::Failed)
        .condition("ResourceLimitExceeded")
        .condition("DisruptionTarget")
        .exit("main-container", 0)];
    let p = sync(&j, &pods);
    assert_eq!(conditions(&p), vec![]);
    assert_eq!(counters(&p), (1, 0, 1, 0));
}

/// TestSyncJobWithPodFailurePolicy: "ignore pod failure based on OnPodConditions".
#[test]
fn ignore_based_on_on_pod_conditions() {
    let j = with_policy(job(1, Some(1), 0), vec![on_condition("Ignore", "DisruptionTarget")]);
    let pods = [pod(0, PodState::Failed).condition("DisruptionTarget")];
    let p = sync(&j, &pods);
    assert_eq!(conditions(&p), vec![]);
    assert_eq!(counters(&p), (1, 0, 0, 0));
}

/// TestSyncJobWithPodFailurePolicy: "ignore pod failure based on OnPodConditions, ignored failures delays
/// pod recreation". Deviation: upstream's in-memory backoff record counts ignored failures, so a gang
/// preempted at once (N pods) would wait up to 6 minutes before its pods are re-created; kwas applies no
/// backoff after an ignored failure, so the replacement is created at once.
#[test]
fn ignored_failures_do_not_delay_recreation() {
    let j = with_policy(job(1, Some(1), 0), vec![on_condition("Ignore", "DisruptionTarget")]);
    let pods = [pod(0, PodState::Failed).condition("DisruptionTarget").finished(now())];
    let p = sync(&j, &pods);
    assert_eq!(conditions(&p), vec![]);
    assert_eq!(counters(&p), (1, 0, 0, 0));
    assert_eq!(p.create.len(), 1);
    assert_eq!(p.requeue_after, None);
}

/// TestSyncJobWithPodFailurePolicy: "fail job based on OnPodConditions".
#[test]
fn fail_job_based_on_on_pod_conditions() {
    let j = with_policy(job(1, Some(1), 6), vec![on_condition("FailJob", "DisruptionTarget")]);
    let pods = [pod(0, PodState::Failed).condition("DisruptionTarget")];
    let p = sync(&j, &pods);
    assert_eq!(
        conditions(&p),
        fail_job("Pod default/mypod-0 has condition DisruptionTarget matching FailJob rule at index 0")
    );
    assert_eq!(counters(&p), (0, 0, 1, 0));
}

/// TestSyncJobWithPodFailurePolicy: "terminating Pod not considered failed when JobPodFailurePolicy is
/// enabled and used": the pod keeps its place and its finalizer until terminal.
#[test]
fn terminating_pod_not_considered_failed() {
    let j = with_policy(job(1, None, 0), vec![on_condition("Count", "DisruptionTarget")]);
    let pods = [pod(0, PodState::Terminating)];
    let p = sync(&j, &pods);
    assert_eq!(conditions(&p), vec![]);
    assert_eq!(counters(&p), (0, 0, 0, 1));
    assert!(p.create.is_empty());
    assert!(
        !track_with(&j, &[pods[0].view.clone()], &PodOutcomes::default(), now())
            .remove_finalizers
            .contains(&"mypod-0".to_string())
    );
}

/// The headline case of issue 23: a gang Job preempted once (every pod fails with `DisruptionTarget`)
/// with the recommended `Ignore` rule is neither failed nor charged, and its pods are re-created at once.
#[test]
fn preempted_gang_with_ignore_rule_is_recreated() {
    let j = with_policy(job(4, Some(4), 0), vec![on_condition("Ignore", "DisruptionTarget")]);
    let pods: Vec<P> = (0..4)
        .map(|i| {
            pod(i, PodState::Failed)
                .condition("DisruptionTarget")
                .exit("main", 137)
                .finished(now())
        })
        .collect();
    let p = settle(&j, &pods);
    assert_eq!(conditions(&p), vec![]);
    assert_eq!(counters(&p), (4, 0, 0, 0));
    assert_eq!(p.create.len(), 4);
    // Without the rule, the same preemption exceeds backoffLimit 0.
    let p = sync(&job(4, Some(4), 0), &pods);
    assert_eq!(conditions(&p)[0].1, "BackoffLimitExceeded");
}
