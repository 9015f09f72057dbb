//! The well-known labels, annotations, condition types and reasons of `jobset.x-k8s.io/v1alpha2`
//! (`api/jobset/v1alpha2/jobset_types.go` and `pkg/constants/constants.go` of kubernetes-sigs/jobset),
//! named as upstream in Rust case (`JobSetNameKey` is [`JOBSET_NAME_KEY`]).

/// Label/annotation: the name of the owning JobSet.
pub const JOBSET_NAME_KEY: &str = "jobset.sigs.k8s.io/jobset-name";
/// Label/annotation: the UID of the owning JobSet.
pub const JOBSET_UID_KEY: &str = "jobset.sigs.k8s.io/jobset-uid";
/// Label/annotation: the replicas of the parent replicated job.
pub const REPLICATED_JOB_REPLICAS: &str = "jobset.sigs.k8s.io/replicatedjob-replicas";
/// Label/annotation: the sum of `replicas` over the replicated jobs.
pub const GLOBAL_REPLICAS_KEY: &str = "jobset.sigs.k8s.io/global-replicas";
/// Label/annotation: the name of the parent replicated job.
pub const REPLICATED_JOB_NAME_KEY: &str = "jobset.sigs.k8s.io/replicatedjob-name";
/// Label/annotation: the index of the Job within its replicated job (0 to replicas-1).
pub const JOB_INDEX_KEY: &str = "jobset.sigs.k8s.io/job-index";
/// Label/annotation: the index of the Job within the JobSet (0 to N-1 over all replicated jobs in order).
pub const JOB_GLOBAL_INDEX_KEY: &str = "jobset.sigs.k8s.io/job-global-index";
/// Label/annotation: the SHA256 hash of the namespaced Job name.
pub const JOB_KEY: &str = "jobset.sigs.k8s.io/job-key";
/// Annotation (JobSet or replicated job template): exclusive Job placement per topology domain (the value
/// is the topology label key).
pub const EXCLUSIVE_KEY: &str = "alpha.jobset.sigs.k8s.io/exclusive-topology";
/// Annotation flag: enforce exclusive placement with nodeSelectors instead of pod (anti-)affinities.
pub const NODE_SELECTOR_STRATEGY_KEY: &str = "alpha.jobset.sigs.k8s.io/node-selector";
/// Label: the namespaced Job name (the nodeSelector exclusive placement strategy).
pub const NAMESPACED_JOB_KEY: &str = "alpha.jobset.sigs.k8s.io/namespaced-job";
/// Taint key of the nodeSelector exclusive placement strategy.
pub const NO_SCHEDULE_TAINT_KEY: &str = "alpha.jobset.sigs.k8s.io/no-schedule";
/// The reserved `spec.managedBy` value of the built-in JobSet controller.
pub const JOBSET_CONTROLLER_NAME: &str = "jobset.sigs.k8s.io/jobset-controller";
/// Label/annotation on Jobs and pods: the stable network endpoint of the coordinator pod.
pub const COORDINATOR_KEY: &str = "jobset.sigs.k8s.io/coordinator";
/// Label/annotation: the group name of the replicated job.
pub const GROUP_NAME_KEY: &str = "jobset.sigs.k8s.io/group-name";
/// Label/annotation: the total replicas of the replicated jobs of the group.
pub const GROUP_REPLICAS_KEY: &str = "jobset.sigs.k8s.io/group-replicas";
/// Label/annotation: the index of the Job within its group.
pub const JOB_GROUP_INDEX_KEY: &str = "jobset.sigs.k8s.io/job-group-index";
/// Annotation on pods, written by the in-place restart agent: its restart attempt.
pub const IN_PLACE_RESTART_ATTEMPT_KEY: &str = "jobset.sigs.k8s.io/in-place-restart-attempt";
/// Annotation on the JobSet: the in-place restart agent skips its barrier.
pub const DISABLE_IN_PLACE_RESTART_KEY: &str = "jobset.sigs.k8s.io/disable-in-place-restart";
/// Label/annotation: the global restart attempt a Job belongs to (`status.restarts`).
pub const RESTARTS_KEY: &str = "jobset.sigs.k8s.io/restart-attempt";
/// Label/annotation: the individual restart attempt of a Job (`jobRestarts[jobIndex]`).
pub const JOB_RESTART_ATTEMPT_KEY: &str = "jobset.sigs.k8s.io/job-restart-attempt";
/// Label: the pod priority (exclusive placement applies within a priority).
pub const PRIORITY_KEY: &str = "jobset.sigs.k8s.io/priority";

/// Condition types of a JobSet.
pub mod conditions {
    /// The JobSet completed.
    pub const COMPLETED: &str = "Completed";
    /// The JobSet failed.
    pub const FAILED: &str = "Failed";
    /// The JobSet is suspended.
    pub const SUSPENDED: &str = "Suspended";
    /// The JobSet is restarting.
    pub const RESTARTING: &str = "RestartingJobSet";
    /// The StartupPolicy is in progress.
    pub const STARTUP_POLICY_IN_PROGRESS: &str = "StartupPolicyInProgress";
    /// The StartupPolicy has completed.
    pub const STARTUP_POLICY_COMPLETED: &str = "StartupPolicyCompleted";
}

/// Condition and event reasons and messages (`pkg/constants/constants.go`).
pub mod reasons {
    /// The JobSet failed after reaching `maxRestarts`.
    pub const REACHED_MAX_RESTARTS: &str = "ReachedMaxRestarts";
    /// Message of [`REACHED_MAX_RESTARTS`].
    pub const REACHED_MAX_RESTARTS_MESSAGE: &str = "jobset failed due to reaching max number of restarts";
    /// The JobSet failed because a Job failed (no failure policy).
    pub const FAILED_JOBS: &str = "FailedJobs";
    /// Message of [`FAILED_JOBS`].
    pub const FAILED_JOBS_MESSAGE: &str = "jobset failed due to one or more job failures";
    /// The JobSet completed.
    pub const ALL_JOBS_COMPLETED: &str = "AllJobsCompleted";
    /// Message of [`ALL_JOBS_COMPLETED`].
    pub const ALL_JOBS_COMPLETED_MESSAGE: &str = "jobset completed successfully";
    /// A Job could not be created.
    pub const JOB_CREATION_FAILED: &str = "JobCreationFailed";
    /// The headless Service could not be created.
    pub const HEADLESS_SERVICE_CREATION_FAILED: &str = "HeadlessServiceCreationFailed";
    /// A pod violated the exclusive placement policy.
    pub const EXCLUSIVE_PLACEMENT_VIOLATION: &str = "ExclusivePlacementViolation";
    /// The InOrder startup policy is in progress.
    pub const IN_ORDER_STARTUP_POLICY_IN_PROGRESS: &str = "InOrderStartupPolicyInProgress";
    /// The InOrder startup policy has completed.
    pub const IN_ORDER_STARTUP_POLICY_COMPLETED: &str = "InOrderStartupPolicyCompleted";
    /// Event reason of a restart.
    pub const JOBSET_RESTART: &str = "Restarting";
    /// Restarting condition reason: the default failure policy.
    pub const RESTARTING_DEFAULT_FAILURE_POLICY: &str = "DefaultFailurePolicy";
    /// Restarting condition reason prefix of a failure policy rule (`FailurePolicy_<rule name>`).
    pub const RESTARTING_FAILURE_POLICY_PREFIX: &str = "FailurePolicy_";
    /// Restarting condition reason: all Jobs are ready.
    pub const RESTARTING_JOBS_READY: &str = "JobsReady";
    /// Restarting condition reason: the JobSet failed.
    pub const RESTARTING_JOBSET_FAILED: &str = "JobSetFailed";
    /// Restarting condition reason: the JobSet completed.
    pub const RESTARTING_JOBSET_COMPLETED: &str = "JobSetCompleted";
    /// Restarting condition reason: the JobSet was suspended.
    pub const RESTARTING_JOBSET_SUSPENDED: &str = "JobSetSuspended";
    /// The JobSet was suspended.
    pub const JOBSET_SUSPENDED: &str = "SuspendedJobs";
    /// Message of [`JOBSET_SUSPENDED`].
    pub const JOBSET_SUSPENDED_MESSAGE: &str = "jobset is suspended";
    /// The JobSet was resumed.
    pub const JOBSET_RESUMED: &str = "ResumeJobs";
    /// Message of [`JOBSET_RESUMED`].
    pub const JOBSET_RESUMED_MESSAGE: &str = "jobset is resumed";
    /// The FailJobSet action was applied.
    pub const FAIL_JOBSET_ACTION: &str = "FailJobSetFailurePolicyAction";
    /// The RestartJobSet action was applied.
    pub const RESTART_JOBSET_ACTION: &str = "RestartJobSetFailurePolicyAction";
    /// The RestartJobSetAndIgnoreMaxRestarts action was applied.
    pub const RESTART_JOBSET_AND_IGNORE_MAX_RESTARTS_ACTION: &str =
        "RestartJobSetAndIgnoreMaxRestartsFailurePolicyAction";
    /// The RestartJob action was applied.
    pub const RESTART_JOB_ACTION: &str = "RestartJobFailurePolicyAction";
    /// The RestartJobAndIgnoreMaxRestarts action was applied.
    pub const RESTART_JOB_AND_IGNORE_MAX_RESTARTS_ACTION: &str = "RestartJobAndIgnoreMaxRestartsFailurePolicyAction";
    /// A PVC could not be created.
    pub const PVC_CREATION_FAILED: &str = "PVCCreationFailed";
}
