//! The JobSet project's controller logic (`pkg/controllers/` of kubernetes-sigs/jobset: `jobset_controller.go`,
//! `failure_policy.go`, `success_policy.go`, `startup_policy.go`, `depends_on.go`,
//! `ttl_after_finished.go`) as pure functions of the JobSet (webhook defaults applied), its child Jobs and
//! the time. [`evaluate`] runs upstream's `reconcile` order; [`super::decide`] turns its outcome into the
//! reconcile's steps (and adds the scheduling objects). Functions keep upstream's names in Rust case, so
//! their tests name the upstream cases they port.
//!
//! One reconcile, as upstream:
//! 1. child Jobs are sorted into previous (their `jobset.sigs.k8s.io/restart-attempt` label is below
//!    `status.restarts`), active, successful and failed ([`get_child_jobs`]); `status.replicatedJobsStatus`
//!    is recomputed ([`calculate_replicated_job_statuses`]);
//! 2. a finished JobSet deletes its active Jobs and applies `ttlSecondsAfterFinished` ([`time_left`]);
//! 3. previous Jobs are deleted; when every Job is ready, `RestartingJobSet` turns False (`JobsReady`);
//! 4. a failed Job runs the failure policy ([`execute_failure_policy`]): no policy fails the JobSet
//!    (`FailedJobs`); otherwise the first rule (in order) that matches a failed Job (its failure reason,
//!    message pattern and replicated job; the earliest failure among the Jobs it matches) decides
//!    `FailJobSet`, `RestartJobSet` (counts towards `maxRestarts`; `ReachedMaxRestarts` when exhausted) or
//!    `RestartJobSetAndIgnoreMaxRestarts`, and no matching rule means `RestartJobSet`;
//! 5. successful Jobs run the success policy ([`execute_success_policy`]: `All` or `Any` over the targeted
//!    replicated jobs);
//! 6. Jobs are created replicated job by replicated job ([`construct_jobs_from_template`]), gated by
//!    `dependsOn` ([`dependency_reached_status`]) and the `InOrder` startup policy (a replicated job's Jobs
//!    only once the previous one's are all ready: `StartupPolicyInProgress`, then `StartupPolicyCompleted`);
//! 7. suspend and resume propagate to the active Jobs (resumed in dependency and startup order).
//!
//! Conditions change as upstream's `updateCondition` changes them (a new condition is added only when True;
//! the transition time moves only with the status; `StartupPolicyInProgress` and
//! `StartupPolicyCompleted` exclude each other), and every change is an event with the condition's
//! reason and message.
//!
//! Deviations, and why:
//! - **Both restart strategies block.** A new attempt's Jobs are created only when every Job of the
//!   previous attempt is gone (upstream's `BlockingRecreate`; with `Recreate` upstream creates each Job
//!   as soon as its predecessor of the same name is gone). Every attempt of a kwas JobSet is one gang
//!   hierarchy (a root CompositePodGroup over one PodGroup per Job): a gang of the new attempt cannot be
//!   placed beside the old attempt's pods, so its groups are created only once the old ones are gone
//!   ([`super::decide`]), and its Jobs with them.
//! - `RestartJob` / `RestartJobAndIgnoreMaxRestarts` (upstream's `RestartJob` feature gate, off by default)
//!   and the `InPlaceRestart` strategy (gate `InPlaceRestart`) are refused by validation, as upstream's
//!   webhook refuses them with the gates off; `jobRestarts` stay empty as upstream's do then.
//! - A Job whose restart-attempt label does not parse is treated as previous (deleted); upstream stops the
//!   reconcile with an error and retries forever.
//! - A failure message pattern that does not compile, or compiles beyond 1 MiB of program, matches nothing
//!   (upstream logs and skips patterns that do not compile).
//! - Resuming does not copy the replicated job's pod template node selectors and tolerations into the
//!   Job (upstream does so for Kueue's admission); kwas' scheduler places pods by their Workload.

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::{Job, JobCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kwas_api_types::jobset::v1alpha2::constants::{JOB_INDEX_KEY, REPLICATED_JOB_NAME_KEY, RESTARTS_KEY, reasons};
use kwas_api_types::jobset::{
    DependsOnStatus, FailurePolicyAction, FailurePolicyRule, JobSet, JobSetStatus, Operator, ReplicatedJob,
    ReplicatedJobStatus, conditions,
};
use kwas_api_types::names::conditions as job_conditions;

use super::children::{Child, RESTART_ATTEMPT_LABEL, children_of};
use crate::job::plan::PlannedEvent;

/// A JobSet's child Jobs of the current attempt by state, and those of earlier attempts
/// (upstream's `childJobs`).
#[derive(Clone, Debug, Default)]
pub struct ChildJobs<'a> {
    /// Not finished (running, waiting or suspended).
    pub active: Vec<&'a Job>,
    /// Completed.
    pub successful: Vec<&'a Job>,
    /// Failed.
    pub failed: Vec<&'a Job>,
    /// Of an earlier restart attempt: to be deleted.
    pub previous: Vec<&'a Job>,
}

impl ChildJobs<'_> {
    fn contains(&self, name: &str) -> bool {
        [&self.active, &self.successful, &self.failed, &self.previous]
            .iter()
            .any(|jobs| jobs.iter().any(|j| j.metadata.name.as_deref() == Some(name)))
    }
}

/// How a Job finished (upstream's `JobFinished`): its `Complete` or `Failed` condition, if True.
pub fn job_finished(job: &Job) -> Option<&JobCondition> {
    job.status.iter().flat_map(|s| s.conditions.iter().flatten()).find(|c| {
        (c.type_ == job_conditions::JOB_COMPLETE || c.type_ == job_conditions::JOB_FAILED) && c.status == "True"
    })
}

/// The restart attempt a child Job belongs to: upstream's label, else kwas' earlier one; `None` when
/// neither parses.
pub fn restart_attempt(job: &Job) -> Option<i32> {
    let labels = job.labels();
    labels
        .get(RESTARTS_KEY)
        .or_else(|| labels.get(RESTART_ATTEMPT_LABEL))
        .and_then(|v| v.parse().ok())
}

/// Upstream's `getChildJobs`, on the Jobs the JobSet controls.
pub fn get_child_jobs<'a>(js: &JobSet, jobs: &'a [Job]) -> ChildJobs<'a> {
    let restarts = js.status.as_ref().map_or(0, |s| s.restarts);
    let mut owned = ChildJobs::default();
    for job in jobs {
        match restart_attempt(job) {
            Some(attempt) if attempt >= restarts => {}
            _ => {
                owned.previous.push(job);
                continue;
            }
        }
        match job_finished(job).map(|c| c.type_.as_str()) {
            None => owned.active.push(job),
            Some(job_conditions::JOB_FAILED) => owned.failed.push(job),
            Some(_) => owned.successful.push(job),
        }
    }
    owned
}

fn job_suspended(job: &Job) -> bool {
    job.spec.as_ref().and_then(|s| s.suspend) == Some(true)
}

fn replicated_job_name(job: &Job) -> Option<&str> {
    job.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(REPLICATED_JOB_NAME_KEY))
        .map(String::as_str)
        .filter(|n| !n.is_empty())
}

/// Upstream's `calculateReplicatedJobStatuses`, in spec order: per replicated job, the active Jobs whose
/// ready plus succeeded pods reach `min(parallelism, completions)` (ready), those with active pods, the
/// suspended ones, and the successful and failed Jobs. Jobs without a known replicated job are not counted.
pub fn calculate_replicated_job_statuses(js: &JobSet, jobs: &ChildJobs<'_>) -> Vec<ReplicatedJobStatus> {
    let mut statuses: Vec<ReplicatedJobStatus> = js
        .spec
        .replicated_jobs
        .iter()
        .map(|r| ReplicatedJobStatus {
            name: r.name.clone(),
            ..ReplicatedJobStatus::default()
        })
        .collect();
    let index: BTreeMap<&str, usize> = js
        .spec
        .replicated_jobs
        .iter()
        .enumerate()
        .map(|(i, r)| (r.name.as_str(), i))
        .collect();
    let slot = |job: &Job| replicated_job_name(job).and_then(|n| index.get(n).copied());
    let bump = |v: &mut i32| *v = v.saturating_add(1);
    for job in &jobs.active {
        let Some(i) = slot(job) else { continue };
        let s = &mut statuses[i];
        if crate::triggers::job_counts_ready(job) {
            bump(&mut s.ready);
        }
        if job.status.as_ref().and_then(|st| st.active).unwrap_or(0) > 0 {
            bump(&mut s.active);
        }
        if job_suspended(job) {
            bump(&mut s.suspended);
        }
    }
    for job in &jobs.successful {
        if let Some(i) = slot(job) {
            bump(&mut statuses[i].succeeded);
        }
    }
    for job in &jobs.failed {
        if let Some(i) = slot(job) {
            bump(&mut statuses[i].failed);
        }
    }
    statuses
}

/// Upstream's `updateCondition`: whether `new` changes the conditions. A condition of a new type is added
/// only when True; an existing one changes when its status, reason or message differs, its transition time
/// moving only with its status; a True `StartupPolicyInProgress` / `StartupPolicyCompleted` turns the other
/// one False.
pub fn update_condition(status: &mut JobSetStatus, new: &Condition, now: Timestamp) -> bool {
    let mut found = false;
    let mut changed = false;
    let exclusive = |a: &str, b: &str| {
        (a == conditions::STARTUP_POLICY_IN_PROGRESS && b == conditions::STARTUP_POLICY_COMPLETED)
            || (a == conditions::STARTUP_POLICY_COMPLETED && b == conditions::STARTUP_POLICY_IN_PROGRESS)
    };
    for c in &mut status.conditions {
        if c.type_ == new.type_ {
            found = true;
            if c.status != new.status {
                *c = Condition {
                    last_transition_time: Time(now),
                    ..new.clone()
                };
                changed = true;
            } else if c.reason != new.reason || c.message != new.message {
                let since = c.last_transition_time.clone();
                *c = Condition {
                    last_transition_time: since,
                    ..new.clone()
                };
                changed = true;
            }
        } else if exclusive(&c.type_, &new.type_) && c.status == "True" && new.status == "True" {
            c.status = "False".into();
            changed = true;
        }
    }
    if !found && new.status == "True" {
        status.conditions.push(Condition {
            last_transition_time: Time(now),
            ..new.clone()
        });
        changed = true;
    }
    changed
}

/// The True condition of `type_`, if any.
pub(crate) fn find<'a>(status: &'a JobSetStatus, type_: &str) -> Option<&'a Condition> {
    status
        .conditions
        .iter()
        .find(|c| c.type_ == type_ && c.status == "True")
}

/// Sets a kwas condition (used for kwas' own condition types, which are replaced whole).
pub(crate) fn set_condition(
    status: &mut JobSetStatus,
    type_: &str,
    value: &str,
    reason: &str,
    message: &str,
    now: Timestamp,
    generation: Option<i64>,
) {
    match status.conditions.iter_mut().find(|c| c.type_ == type_) {
        Some(c) => {
            if c.status != value {
                c.last_transition_time = Time(now);
            }
            c.status = value.into();
            c.reason = reason.into();
            c.message = message.into();
            c.observed_generation = generation;
        }
        None => status.conditions.push(Condition {
            type_: type_.into(),
            status: value.into(),
            reason: reason.into(),
            message: message.into(),
            last_transition_time: Time(now),
            observed_generation: generation,
        }),
    }
}

fn condition(type_: &str, status: bool, reason: &str, message: &str) -> Condition {
    Condition {
        type_: type_.into(),
        status: if status { "True" } else { "False" }.into(),
        reason: reason.into(),
        message: message.into(),
        last_transition_time: Time(Timestamp::UNIX_EPOCH),
        observed_generation: None,
    }
}

/// Whether the JobSet has a True `Completed` or `Failed` condition (upstream's `jobSetFinished`).
pub fn job_set_finished(js: &JobSet) -> bool {
    js.status
        .as_ref()
        .is_some_and(|s| find(s, conditions::COMPLETED).is_some() || find(s, conditions::FAILED).is_some())
}

/// Upstream's `allJobsReady`: ready plus succeeded Jobs equal the replicas of all replicated jobs.
pub fn all_jobs_ready(js: &JobSet, statuses: &[ReplicatedJobStatus]) -> bool {
    let total: i64 = js.spec.replicated_jobs.iter().map(|r| i64::from(r.replicas)).sum();
    let ready: i64 = statuses
        .iter()
        .map(|s| i64::from(s.ready) + i64::from(s.succeeded))
        .sum();
    total == ready
}

/// Upstream's `inOrderStartupPolicy`.
pub fn in_order_startup_policy(js: &JobSet) -> bool {
    super::compile::in_order(js)
}

/// Upstream's `allReplicasStarted`: every Job of the replicated job is ready, succeeded or failed.
pub fn all_replicas_started(replicas: i32, status: Option<&ReplicatedJobStatus>) -> bool {
    let Some(s) = status else { return false };
    i64::from(replicas) == i64::from(s.failed) + i64::from(s.ready) + i64::from(s.succeeded)
}

/// Upstream's `dependencyReachedStatus`: every replicated job `rjob` depends on reached the status it
/// names (`Complete`: all its Jobs succeeded; `Ready`: all are ready, succeeded or failed). `replicas`
/// holds the replicas of the replicated jobs seen so far (a dependency must come earlier in the spec).
pub fn dependency_reached_status(
    rjob: &ReplicatedJob,
    replicas: &BTreeMap<&str, i32>,
    statuses: &[ReplicatedJobStatus],
) -> bool {
    rjob.depends_on.iter().all(|d| {
        let Some(actual) = statuses.iter().find(|s| s.name == d.name) else {
            return false;
        };
        let want = i64::from(replicas.get(d.name.as_str()).copied().unwrap_or(0));
        match d.status {
            DependsOnStatus::Complete => want == i64::from(actual.succeeded),
            DependsOnStatus::Ready => {
                want == i64::from(actual.failed) + i64::from(actual.ready) + i64::from(actual.succeeded)
            }
        }
    })
}

fn success_targets(js: &JobSet) -> &[String] {
    js.spec
        .success_policy
        .as_ref()
        .map_or(&[], |s| s.target_replicated_jobs.as_slice())
}

/// Upstream's `jobMatchesSuccessPolicy`.
pub fn job_matches_success_policy(js: &JobSet, job: &Job) -> bool {
    let targets = success_targets(js);
    targets.is_empty() || replicated_job_name(job).is_some_and(|n| targets.iter().any(|t| t == n))
}

/// Upstream's `replicatedJobMatchesSuccessPolicy`.
pub fn replicated_job_matches_success_policy(js: &JobSet, rjob: &ReplicatedJob) -> bool {
    let targets = success_targets(js);
    targets.is_empty() || targets.contains(&rjob.name)
}

/// Upstream's `numJobsMatchingSuccessPolicy`.
pub fn num_jobs_matching_success_policy(js: &JobSet, jobs: &[&Job]) -> i64 {
    jobs.iter().filter(|j| job_matches_success_policy(js, j)).count() as i64
}

/// Upstream's `numJobsExpectedToSucceed`: 1 for `Any`, the targeted replicated jobs' replicas for `All`.
pub fn num_jobs_expected_to_succeed(js: &JobSet) -> i64 {
    match js.spec.success_policy.as_ref().map(|s| s.operator) {
        Some(Operator::Any) => 1,
        _ => js
            .spec
            .replicated_jobs
            .iter()
            .filter(|r| replicated_job_matches_success_policy(js, r))
            .map(|r| i64::from(r.replicas))
            .sum(),
    }
}

fn failure_condition(job: &Job) -> Option<&JobCondition> {
    job.status
        .iter()
        .flat_map(|s| s.conditions.iter().flatten())
        .find(|c| c.type_ == job_conditions::JOB_FAILED && c.status == "True")
}

fn failure_time(job: &Job) -> Option<Timestamp> {
    failure_condition(job).and_then(|c| c.last_transition_time.as_ref().map(|t| t.0))
}

/// Upstream's `findFirstFailedJob`: the failed Job whose failure came first (ties: the earlier in the list).
pub fn find_first_failed_job<'a>(failed: &[&'a Job]) -> Option<&'a Job> {
    let mut first: Option<(&Job, Timestamp)> = None;
    for job in failed {
        if let Some(t) = failure_time(job)
            && first.is_none_or(|(_, at)| t < at)
        {
            first = Some((job, t));
        }
    }
    first.map(|(j, _)| j)
}

/// The largest compiled program of one `onJobFailureMessagePatterns` entry.
const PATTERN_SIZE_LIMIT: usize = 1 << 20;

fn any_match_found(patterns: &[String], message: &str) -> bool {
    patterns.iter().any(|p| {
        regex::RegexBuilder::new(p)
            .size_limit(PATTERN_SIZE_LIMIT)
            .build()
            .is_ok_and(|re| re.is_match(message))
    })
}

/// Upstream's `ruleIsApplicable`: the rule's failure reasons (if any) contain the Job's, one of its message
/// patterns (if any) matches the Job's failure message, and its target replicated jobs (if any) contain
/// the Job's.
pub fn rule_is_applicable(rule: &FailurePolicyRule, job: &Job, reason: &str, message: &str) -> bool {
    if !rule.on_job_failure_reasons.is_empty() && !rule.on_job_failure_reasons.iter().any(|r| r == reason) {
        return false;
    }
    if !rule.on_job_failure_message_patterns.is_empty()
        && !any_match_found(&rule.on_job_failure_message_patterns, message)
    {
        return false;
    }
    let Some(parent) = replicated_job_name(job) else {
        return false;
    };
    rule.target_replicated_jobs.is_empty() || rule.target_replicated_jobs.iter().any(|t| t == parent)
}

/// Upstream's `findFirstFailedPolicyRuleAndJob`: the first rule (in order) that applies to a failed Job,
/// with the earliest-failed Job it applies to.
pub fn find_first_failed_policy_rule_and_job<'r, 'j>(
    rules: &'r [FailurePolicyRule],
    failed: &[&'j Job],
) -> Option<(&'r FailurePolicyRule, &'j Job)> {
    for rule in rules {
        let mut matched: Option<(&Job, Option<Timestamp>)> = None;
        for job in failed {
            let Some(c) = failure_condition(job) else { continue };
            let at = c.last_transition_time.as_ref().map(|t| t.0);
            let earlier = match matched {
                None => true,
                Some((_, prev)) => matches!((at, prev), (Some(a), Some(b)) if a < b),
            };
            if earlier
                && rule_is_applicable(
                    rule,
                    job,
                    c.reason.as_deref().unwrap_or_default(),
                    c.message.as_deref().unwrap_or_default(),
                )
            {
                matched = Some((job, at));
            }
        }
        if let Some((job, _)) = matched {
            return Some((rule, job));
        }
    }
    None
}

/// Upstream's `messageWithFirstFailedJob`.
pub fn message_with_first_failed_job(message: &str, job: &str) -> String {
    format!("{message} (first failed job: {job})")
}

/// What the controller decides for one reconcile.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PolicyOutcome {
    /// The desired status.
    pub status: JobSetStatus,
    /// Child Jobs to create, in order.
    pub create: Vec<Child>,
    /// Child Jobs to delete.
    pub delete: Vec<String>,
    /// Child Jobs whose `spec.suspend` must change.
    pub set_suspend: Vec<(String, bool)>,
    /// Jobs of an earlier attempt are being removed: create nothing until they are gone.
    pub restarting: bool,
    /// `status.restarts` was incremented: write the status before acting on it.
    pub restart_started: bool,
    /// `ttlSecondsAfterFinished` expired: delete the JobSet (foreground).
    pub delete_jobset: bool,
    /// Reconcile again after this many seconds (the TTL's remaining time).
    pub requeue_after_seconds: Option<i64>,
    /// Events to record.
    pub events: Vec<PlannedEvent>,
}

impl PolicyOutcome {
    /// Upstream's `setCondition`: updates the condition and, when it changed, records an event with the
    /// condition's reason and message.
    fn set(&mut self, new: Condition, warning: bool, now: Timestamp) {
        if update_condition(&mut self.status, &new, now) {
            self.events.push(PlannedEvent {
                warning,
                reason: new.reason.clone(),
                message: new.message.clone(),
            });
        }
    }

    fn fail(&mut self, reason: &str, message: String, now: Timestamp) {
        self.set(condition(conditions::FAILED, true, reason, &message), true, now);
        self.set(
            condition(
                conditions::RESTARTING,
                false,
                reasons::RESTARTING_JOBSET_FAILED,
                "jobset failed",
            ),
            false,
            now,
        );
        self.status.terminal_state = conditions::FAILED.into();
    }

    fn restart(
        &mut self,
        count: bool,
        rule: Option<&FailurePolicyRule>,
        reason: &str,
        message: String,
        now: Timestamp,
    ) {
        self.status.restarts = self.status.restarts.saturating_add(1);
        if count {
            self.status.restarts_count_towards_max = self.status.restarts_count_towards_max.saturating_add(1);
        }
        self.restart_started = true;
        let condition_reason = match rule {
            Some(r) => format!("{}{}", reasons::RESTARTING_FAILURE_POLICY_PREFIX, r.name),
            None => reasons::RESTARTING_DEFAULT_FAILURE_POLICY.to_string(),
        };
        self.set(
            condition(conditions::RESTARTING, true, &condition_reason, &message),
            true,
            now,
        );
        self.events.push(PlannedEvent {
            warning: true,
            reason: reason.into(),
            message,
        });
    }
}

/// Upstream's `executeFailurePolicy` (with `applyFailurePolicyRuleAction`).
pub fn execute_failure_policy(js: &JobSet, failed: &[&Job], out: &mut PolicyOutcome, now: Timestamp) {
    let Some(policy) = js.spec.failure_policy.as_ref() else {
        let first = find_first_failed_job(failed)
            .map(ResourceExt::name_any)
            .unwrap_or_default();
        out.fail(
            reasons::FAILED_JOBS,
            message_with_first_failed_job(reasons::FAILED_JOBS_MESSAGE, &first),
            now,
        );
        return;
    };
    let (rule, job) = match find_first_failed_policy_rule_and_job(&policy.rules, failed) {
        Some((rule, job)) => (Some(rule), Some(job)),
        None => (None, find_first_failed_job(failed)),
    };
    let job = job.map(ResourceExt::name_any).unwrap_or_default();
    let action = rule.map_or(FailurePolicyAction::RestartJobSet, |r| r.action);
    match action {
        FailurePolicyAction::FailJobSet => out.fail(
            reasons::FAIL_JOBSET_ACTION,
            message_with_first_failed_job("applying FailJobSet failure policy action", &job),
            now,
        ),
        FailurePolicyAction::RestartJobSetAndIgnoreMaxRestarts => out.restart(
            false,
            rule,
            reasons::RESTART_JOBSET_AND_IGNORE_MAX_RESTARTS_ACTION,
            message_with_first_failed_job("applying RestartJobSetAndIgnoreMaxRestarts failure policy action", &job),
            now,
        ),
        // RestartJob and RestartJobAndIgnoreMaxRestarts are refused by validation (feature gate off).
        FailurePolicyAction::RestartJobSet
        | FailurePolicyAction::RestartJob
        | FailurePolicyAction::RestartJobAndIgnoreMaxRestarts => {
            if out.status.restarts_count_towards_max >= policy.max_restarts {
                out.fail(
                    reasons::REACHED_MAX_RESTARTS,
                    message_with_first_failed_job(reasons::REACHED_MAX_RESTARTS_MESSAGE, &job),
                    now,
                );
            } else {
                out.restart(
                    true,
                    rule,
                    reasons::RESTART_JOBSET_ACTION,
                    message_with_first_failed_job("applying RestartJobSet failure policy action", &job),
                    now,
                );
            }
        }
    }
}

/// Upstream's `executeSuccessPolicy`: whether the JobSet completed (and the condition set).
pub fn execute_success_policy(js: &JobSet, successful: &[&Job], out: &mut PolicyOutcome, now: Timestamp) -> bool {
    if num_jobs_matching_success_policy(js, successful) < num_jobs_expected_to_succeed(js) {
        return false;
    }
    out.set(
        condition(
            conditions::COMPLETED,
            true,
            reasons::ALL_JOBS_COMPLETED,
            reasons::ALL_JOBS_COMPLETED_MESSAGE,
        ),
        false,
        now,
    );
    out.set(
        condition(
            conditions::RESTARTING,
            false,
            reasons::RESTARTING_JOBSET_COMPLETED,
            reasons::ALL_JOBS_COMPLETED_MESSAGE,
        ),
        false,
        now,
    );
    out.status.terminal_state = conditions::COMPLETED.into();
    true
}

/// The time a finished JobSet finished (upstream's `jobSetFinishTime`): its True `Completed` or `Failed`
/// condition's transition time.
pub fn job_set_finish_time(js: &JobSet) -> Option<Timestamp> {
    let status = js.status.as_ref()?;
    status
        .conditions
        .iter()
        .find(|c| (c.type_ == conditions::COMPLETED || c.type_ == conditions::FAILED) && c.status == "True")
        .map(|c| c.last_transition_time.0)
}

/// Upstream's `timeLeft`: seconds until a finished JobSet's `ttlSecondsAfterFinished` expires (negative or
/// zero: expired); `None` without a TTL or a finish time.
pub fn time_left(js: &JobSet, now: Timestamp) -> Option<i64> {
    let ttl = i64::from(js.spec.ttl_seconds_after_finished?.max(0));
    let finished = job_set_finish_time(js)?;
    Some(finished.as_second().saturating_add(ttl).saturating_sub(now.as_second()))
}

/// Upstream's `checkIfTTLExpired`.
pub fn check_if_ttl_expired(js: &JobSet, now: Timestamp) -> bool {
    js.metadata.deletion_timestamp.is_none() && time_left(js, now).is_some_and(|left| left <= 0)
}

/// The Jobs of `rjob` to create (upstream's `constructJobsFromTemplate`): none while Jobs of an earlier
/// attempt exist (see the module's deviations), else those not yet there.
pub fn construct_jobs_from_template(js: &JobSet, rjob: &ReplicatedJob, owned: &ChildJobs<'_>) -> Vec<Child> {
    if !owned.previous.is_empty() {
        return Vec::new();
    }
    children_of(js, rjob)
        .into_iter()
        .filter(|c| !owned.contains(&c.name))
        .collect()
}

fn suspended(js: &JobSet) -> bool {
    js.spec.suspend == Some(true)
}

/// Decide what to do with `js` (webhook defaults applied) given its child Jobs, in upstream's order.
pub fn evaluate(js: &JobSet, jobs: &[Job], now: Timestamp) -> PolicyOutcome {
    let mut out = PolicyOutcome {
        status: js.status.clone().unwrap_or_default(),
        ..PolicyOutcome::default()
    };
    out.status.observed_generation = js.metadata.generation;
    let owned = get_child_jobs(js, jobs);
    let statuses = calculate_replicated_job_statuses(js, &owned);
    out.status.replicated_jobs_status = statuses.clone();
    let names = |jobs: &[&Job]| -> Vec<String> { jobs.iter().map(|j| j.name_any()).collect() };

    if job_set_finished(js) {
        out.delete = names(&owned.active);
        out.delete.extend(names(&owned.previous));
        if check_if_ttl_expired(js, now) {
            out.delete_jobset = true;
        } else if let Some(left) = time_left(js, now) {
            out.requeue_after_seconds = Some(left.max(1));
        }
        return out;
    }
    if !owned.previous.is_empty() {
        out.restarting = true;
        out.delete = names(&owned.previous);
    }
    if !suspended(js) && all_jobs_ready(js, &statuses) {
        out.set(
            condition(
                conditions::RESTARTING,
                false,
                reasons::RESTARTING_JOBS_READY,
                "all jobs are ready",
            ),
            false,
            now,
        );
    }
    if !owned.failed.is_empty() {
        execute_failure_policy(js, &owned.failed, &mut out, now);
        if find(&out.status, conditions::FAILED).is_some() {
            out.delete.extend(names(&owned.active));
        }
        return out;
    }
    if !owned.successful.is_empty() && execute_success_policy(js, &owned.successful, &mut out, now) {
        out.delete.extend(names(&owned.active));
        return out;
    }

    // reconcileReplicatedJobs.
    let in_order = in_order_startup_policy(js);
    let mut replicas: BTreeMap<&str, i32> = BTreeMap::new();
    let mut waiting = false;
    for (rjob, status) in js.spec.replicated_jobs.iter().zip(&statuses) {
        replicas.insert(rjob.name.as_str(), rjob.replicas);
        if !dependency_reached_status(rjob, &replicas, &statuses) {
            continue;
        }
        if !suspended(js) && in_order && all_replicas_started(rjob.replicas, Some(status)) {
            continue;
        }
        out.create.extend(construct_jobs_from_template(js, rjob, &owned));
        if !suspended(js) && in_order {
            waiting = true;
            break;
        }
    }
    if !suspended(js) && in_order {
        let c = if waiting {
            condition(
                conditions::STARTUP_POLICY_IN_PROGRESS,
                true,
                reasons::IN_ORDER_STARTUP_POLICY_IN_PROGRESS,
                "in order startup policy is in progress",
            )
        } else {
            condition(
                conditions::STARTUP_POLICY_COMPLETED,
                true,
                reasons::IN_ORDER_STARTUP_POLICY_COMPLETED,
                "in order startup policy has completed",
            )
        };
        out.set(c, false, now);
    }

    // suspendJobs / resumeJobsIfNecessary.
    if suspended(js) {
        for job in &owned.active {
            if !job_suspended(job) {
                out.set_suspend.push((job.name_any(), true));
            }
        }
        out.set(
            condition(
                conditions::SUSPENDED,
                true,
                reasons::JOBSET_SUSPENDED,
                reasons::JOBSET_SUSPENDED_MESSAGE,
            ),
            false,
            now,
        );
    } else {
        let mut replicas: BTreeMap<&str, i32> = BTreeMap::new();
        let mut resumed_all = true;
        for (rjob, status) in js.spec.replicated_jobs.iter().zip(&statuses) {
            replicas.insert(rjob.name.as_str(), rjob.replicas);
            if !dependency_reached_status(rjob, &replicas, &statuses) {
                continue;
            }
            if in_order && all_replicas_started(rjob.replicas, Some(status)) {
                continue;
            }
            for job in owned
                .active
                .iter()
                .filter(|j| replicated_job_name(j) == Some(rjob.name.as_str()) && job_suspended(j))
            {
                out.set_suspend.push((job.name_any(), false));
            }
            if in_order {
                out.set(
                    condition(
                        conditions::STARTUP_POLICY_IN_PROGRESS,
                        true,
                        reasons::IN_ORDER_STARTUP_POLICY_IN_PROGRESS,
                        "in order startup policy is in progress",
                    ),
                    false,
                    now,
                );
                resumed_all = false;
                break;
            }
        }
        if resumed_all {
            out.set(
                condition(
                    conditions::SUSPENDED,
                    false,
                    reasons::JOBSET_RESUMED,
                    reasons::JOBSET_RESUMED_MESSAGE,
                ),
                false,
                now,
            );
        }
    }
    out
}

/// The job index of a child Job (its `jobset.sigs.k8s.io/job-index` label).
pub fn job_index(job: &Job) -> Option<i64> {
    job.labels().get(JOB_INDEX_KEY).and_then(|v| v.parse().ok())
}

#[cfg(test)]
mod tests;
