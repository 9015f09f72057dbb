//! `spec.podFailurePolicy` and `spec.podReplacementPolicy`, as upstream's `pod_failure_policy.go` and
//! `isPodFailed` / `onlyReplaceFailedPods`: the rules are tried in order on a failed pod; the first that
//! matches decides: `FailJob` fails the Job (`FailureTarget`, reason `PodFailurePolicy`), `FailIndex` fails
//! the pod's index (with `backoffLimitPerIndex`), `Ignore` does not count the failure, `Count` counts it as
//! without a policy. A pod that matches no rule is counted.

use k8s_openapi::api::batch::v1::{
    Job, PodFailurePolicyOnExitCodesRequirement, PodFailurePolicyOnPodConditionsPattern,
};

use crate::job::pods::{ContainerExit, PodOutcome, PodOutcomes, PodState, PodView};

pub use kwas_api_types::batch::{
    ACTION_COUNT, ACTION_FAIL_INDEX, ACTION_FAIL_JOB, ACTION_IGNORE, REPLACE_FAILED, REPLACE_TERMINATING_OR_FAILED,
};

/// The Job reason of a `FailJob` match.
pub const REASON_POD_FAILURE_POLICY: &str = "PodFailurePolicy";

/// The action of the rule a failed pod matched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Fail the whole Job.
    FailJob,
    /// Fail the pod's index (`backoffLimitPerIndex`).
    FailIndex,
    /// Do not count the failure.
    Ignore,
    /// Count the failure.
    Count,
}

/// What matching a failed pod against the policy decided (upstream's `matchPodFailurePolicy`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyMatch {
    /// The Job failure message of a `FailJob` match.
    pub fail_job_message: Option<String>,
    /// Whether the failure counts towards `backoffLimit` and `backoffLimitPerIndex` (false for `Ignore`).
    pub counts: bool,
    /// The matched rule's action, if a rule matched.
    pub action: Option<Action>,
}

impl PolicyMatch {
    const COUNTED: PolicyMatch = PolicyMatch {
        fail_job_message: None,
        counts: true,
        action: None,
    };
}

/// Whether the Job has a pod failure policy.
pub fn has_policy(job: &Job) -> bool {
    job.spec.as_ref().and_then(|s| s.pod_failure_policy.as_ref()).is_some()
}

/// Upstream's `onlyReplaceFailedPods`: `podReplacementPolicy: Failed`, or any Job with a pod failure policy
/// (whose pods are kept until terminal so the policy sees their final state).
pub fn only_replace_failed_pods(job: &Job) -> bool {
    let spec = job.spec.as_ref();
    spec.and_then(|s| s.pod_replacement_policy.as_deref()) == Some(REPLACE_FAILED) || has_policy(job)
}

/// Upstream's `isPodFailed`: phase `Failed`, or (unless only failed pods are replaced) being deleted before
/// it succeeded.
pub fn is_pod_failed(job: &Job, pod: &PodView) -> bool {
    match pod.state {
        PodState::Failed => true,
        PodState::Terminating => !only_replace_failed_pods(job),
        PodState::Active | PodState::Succeeded => false,
    }
}

fn exit_code_matches(code: i32, req: &PodFailurePolicyOnExitCodesRequirement) -> bool {
    match req.operator.as_str() {
        "In" => req.values.contains(&code),
        "NotIn" => !req.values.contains(&code),
        _ => false,
    }
}

/// The first terminated container (regular, then init) whose non-zero exit code matches (upstream's
/// `matchOnExitCodes`; exit code 0 never matches).
fn match_exit_codes<'a>(
    outcome: &'a PodOutcome,
    req: &PodFailurePolicyOnExitCodesRequirement,
) -> Option<&'a ContainerExit> {
    let find = |list: &'a [ContainerExit]| {
        list.iter().find(|c| {
            req.container_name.as_ref().is_none_or(|n| *n == c.name)
                && c.exit_code != 0
                && exit_code_matches(c.exit_code, req)
        })
    };
    find(&outcome.containers).or_else(|| find(&outcome.init_containers))
}

/// The first pod condition matching a pattern (status defaults to `True`, as the API server defaults it).
fn match_conditions<'a>(
    outcome: &'a PodOutcome,
    patterns: &[PodFailurePolicyOnPodConditionsPattern],
) -> Option<&'a str> {
    outcome.conditions.iter().find_map(|(type_, status)| {
        patterns
            .iter()
            .any(|p| p.type_ == *type_ && p.status.as_deref().unwrap_or("True") == status)
            .then_some(type_.as_str())
    })
}

fn action_of(name: &str) -> Option<Action> {
    match name {
        ACTION_FAIL_JOB => Some(Action::FailJob),
        ACTION_FAIL_INDEX => Some(Action::FailIndex),
        ACTION_IGNORE => Some(Action::Ignore),
        ACTION_COUNT => Some(Action::Count),
        _ => None,
    }
}

/// Matches a failed pod against the Job's pod failure policy (upstream's `matchPodFailurePolicy`). Without a
/// policy, or when no rule matches, the failure is counted. A rule with an unknown action is skipped.
pub fn match_policy(job: &Job, pod: &PodView, outcome: Option<&PodOutcome>) -> PolicyMatch {
    let Some(policy) = job.spec.as_ref().and_then(|s| s.pod_failure_policy.as_ref()) else {
        return PolicyMatch::COUNTED;
    };
    let empty = PodOutcome::default();
    let outcome = outcome.unwrap_or(&empty);
    for (index, rule) in policy.rules.iter().enumerate() {
        let Some(action) = action_of(&rule.action) else {
            continue;
        };
        let message = if let Some(req) = &rule.on_exit_codes {
            let Some(c) = match_exit_codes(outcome, req) else {
                continue;
            };
            format!(
                "Container {} for pod {}/{} failed with exit code {} matching {} rule at index {index}",
                c.name, outcome.namespace, pod.name, c.exit_code, rule.action
            )
        } else if let Some(patterns) = &rule.on_pod_conditions {
            let Some(type_) = match_conditions(outcome, patterns) else {
                continue;
            };
            format!(
                "Pod {}/{} has condition {type_} matching {} rule at index {index}",
                outcome.namespace, pod.name, rule.action
            )
        } else {
            continue;
        };
        return PolicyMatch {
            fail_job_message: (action == Action::FailJob).then_some(message),
            counts: action != Action::Ignore,
            action: Some(action),
        };
    }
    PolicyMatch::COUNTED
}

/// The outcome of `pod` in `outcomes`.
pub(crate) fn outcome_of<'a>(outcomes: &'a PodOutcomes, pod: &PodView) -> Option<&'a PodOutcome> {
    outcomes.get(&pod.uid)
}

/// Upstream's `getFailJobMessage`: the message of the first failed pod matching a `FailJob` rule.
pub fn fail_job_message(job: &Job, pods: &[PodView], outcomes: &PodOutcomes) -> Option<String> {
    if !has_policy(job) {
        return None;
    }
    pods.iter()
        .filter(|p| is_pod_failed(job, p))
        .find_map(|p| match_policy(job, p, outcome_of(outcomes, p)).fail_job_message)
}
