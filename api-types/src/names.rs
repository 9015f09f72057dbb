//! Well-known names shared across kwas crates: annotation keys, labels, finalizers, condition types and
//! reasons, event reasons, field managers and component names.
//!
//! Upstream (Kubernetes v1.37) spellings are used wherever upstream defines the name, so our components and
//! upstream ones interoperate on one cluster. Names we own use the `kwas.dev/` prefix.

/// The API group of kwas' own custom resources.
pub const KWAS_GROUP: &str = "kwas.dev";
/// The version of kwas' own custom resources.
pub const KWAS_VERSION: &str = "v1alpha1";
/// The scheduling API group.
pub const SCHEDULING_GROUP: &str = "scheduling.k8s.io";
/// The scheduling API version that carries Workload, PodGroup and CompositePodGroup.
pub const SCHEDULING_VERSION: &str = "v1alpha3";

/// Annotation keys.
pub mod annotations {
    /// Set by a parent controller on a child object (for example a Job created by a JobSet): the name of the
    /// PodGroupTemplate or CompositePodGroupTemplate in the parent's Workload that the child's pods map to.
    pub const GROUP_TEMPLATE_NAME: &str = "scheduling.k8s.io/group-template-name";
    /// Set by a parent controller on a child object: the name of the parent CompositePodGroup instance the
    /// child's group attaches to. This is KEP-6089's spelling; kwas writes it and [`PARENT_COMPOSITE_POD_GROUP_ALT`].
    pub const PARENT_COMPOSITE_POD_GROUP: &str = "scheduling.k8s.io/parent-composite-podgroup";
    /// The spelling kube-apiserver's constants, KEP-5547 and LeaderWorkerSet use for
    /// [`PARENT_COMPOSITE_POD_GROUP`]; kwas writes both and reads either.
    pub const PARENT_COMPOSITE_POD_GROUP_ALT: &str = "scheduling.k8s.io/parent-compositepodgroup";
    /// The completion index of an Indexed Job's pod (also a label).
    pub const JOB_COMPLETION_INDEX: &str = "batch.kubernetes.io/job-completion-index";
    /// Set by kwas controllers on the Workloads, CompositePodGroups and PodGroups they create: the controller
    /// that created the object (`kwas.dev/job-controller`, `kwas.dev/jobset-controller`). Only objects a
    /// controller created are updated or deleted by it; objects brought by users are only read.
    pub const MANAGED_BY: &str = "kwas.dev/managed-by";
    /// On a PodGroup (the Job and JobSet controllers copy it from the Job or JobSet): the gang recovery
    /// policy (a kwas extension). A gang that once reached its `minCount` and then stayed below it
    /// (`PodGroupSatisfied=False`: a node lost, a member rejected by its kubelet or evicted) for this many
    /// seconds is scheduled again whole: the scheduler evicts its surviving members with
    /// `DisruptionTarget` (a Job's pod failure policy can ignore them), and the gang, all pending, is
    /// placed anew, in another domain if need be. Without it the scheduler leaves a broken gang and
    /// reports it. An integer from 0 to 604800; another value is ignored (a warning is logged).
    pub const GANG_RECOVERY_SECONDS: &str = "kwas.dev/gang-recovery-seconds";
    /// On the scheduler's leader-election Lease: the `spec.schedulerName`s the scheduler serves,
    /// comma-separated (`kwas snapshot` records them for the replay).
    pub const SCHEDULER_NAMES: &str = "kwas.dev/scheduler-names";
    /// Devcluster's simulated kubelet: how long a pod runs before it terminates (a Go duration such as
    /// `30s`, `1m30s`, `500ms`). Without it the pod runs until deleted.
    pub const SIM_RUN_DURATION: &str = "kwas.dev/sim-run-duration";
    /// On a JobSet (a kwas extension, opt-in): a child Job whose gang was scheduled once and has stayed
    /// below its `minCount` (`PodGroupSatisfied=False`) for this many seconds counts as failed, with reason
    /// [`super::conditions::REASON_POD_GROUP_BELOW_MIN_COUNT`], for the JobSet's failure policy.
    pub const UNSATISFIED_GANG_FAILURE_SECONDS: &str = "kwas.dev/unsatisfied-gang-failure-seconds";
    /// Devcluster's simulated kubelet: the phase a pod ends in after its run duration (`Succeeded`, the
    /// default, or `Failed`).
    pub const SIM_EXIT_PHASE: &str = "kwas.dev/sim-exit-phase";
    /// Devcluster's simulated kubelet: the exit codes containers end their runs with, per container,
    /// completion index and attempt (`42`, `main=42,sidecar=0`, `0:0,1:42`, `1:42/42/0`; the grammar is
    /// in devcluster's README). Overrides [`SIM_EXIT_PHASE`].
    pub const SIM_EXIT_CODE: &str = "kwas.dev/sim-exit-code";
    /// Devcluster's simulated kubelet: the `reason` of the containers' terminated state (`OOMKilled`,
    /// `Error`), with [`SIM_EXIT_CODE`]'s selectors. Default `Completed` for exit code 0, else `Error`.
    pub const SIM_EXIT_REASON: &str = "kwas.dev/sim-exit-reason";
    /// How many pods of a completion index failed before this one, set by the Job controller on pods of
    /// Jobs with `backoffLimitPerIndex`.
    pub const JOB_INDEX_FAILURE_COUNT: &str = "batch.kubernetes.io/job-index-failure-count";
    /// As [`JOB_INDEX_FAILURE_COUNT`], for failures a pod failure policy's `Ignore` rule did not count.
    pub const JOB_INDEX_IGNORED_FAILURE_COUNT: &str = "batch.kubernetes.io/job-index-ignored-failure-count";
}

/// Label keys.
pub mod labels {
    /// The Job name on pods a Job controller creates.
    pub const JOB_NAME: &str = "batch.kubernetes.io/job-name";
    /// The legacy Job name label, still set by upstream for selectors of older clients.
    pub const LEGACY_JOB_NAME: &str = "job-name";
    /// The Job uid on pods a Job controller creates.
    pub const CONTROLLER_UID: &str = "batch.kubernetes.io/controller-uid";
    /// The legacy controller uid label.
    pub const LEGACY_CONTROLLER_UID: &str = "controller-uid";
    /// The completion index of an Indexed Job's pod.
    pub const JOB_COMPLETION_INDEX: &str = "batch.kubernetes.io/job-completion-index";
    /// The node's hostname.
    pub const HOSTNAME: &str = "kubernetes.io/hostname";
    /// The node's zone.
    pub const ZONE: &str = "topology.kubernetes.io/zone";
    /// The node's region.
    pub const REGION: &str = "topology.kubernetes.io/region";
    /// The block a node sits in (devcluster topologies and kwas examples).
    pub const BLOCK: &str = "kwas.dev/block";
    /// The rack a node sits in (devcluster topologies and kwas examples).
    pub const RACK: &str = "kwas.dev/rack";
    /// The JobSet that owns an object.
    pub const JOBSET_NAME: &str = "kwas.dev/jobset-name";
    /// The replicated job an object belongs to.
    pub const REPLICATED_JOB_NAME: &str = "kwas.dev/replicated-job-name";
    /// The replica index of a replicated job's Job.
    pub const JOB_INDEX: &str = "kwas.dev/job-index";
}

/// Finalizers.
pub mod finalizers {
    /// Upstream's PodGroup / CompositePodGroup protection finalizer (KEP-4671, KEP-6012): removed only when
    /// no non-terminal pod (PodGroup) or no child group (CompositePodGroup) references the group.
    pub const POD_GROUP_PROTECTION: &str = "scheduling.k8s.io/podgroup-protection";
    /// Upstream's Job pod tracking finalizer: kept on a Job's pods until the controller has counted them.
    pub const JOB_TRACKING: &str = "batch.kubernetes.io/job-tracking";
}

/// Condition types and reasons.
pub mod conditions {
    /// PodGroup: the group's scheduling requirement has been met once. Never goes back to False.
    pub const POD_GROUP_INITIALLY_SCHEDULED: &str = "PodGroupInitiallyScheduled";
    /// CompositePodGroup: the subtree's scheduling requirement has been met once. Never goes back to False.
    pub const COMPOSITE_POD_GROUP_INITIALLY_SCHEDULED: &str = "CompositePodGroupInitiallyScheduled";
    /// PodGroup (KEP-6413): whether the gang currently has at least `minCount` scheduled members
    /// (assumed or bound, terminating ones until they are gone). Unlike
    /// [`POD_GROUP_INITIALLY_SCHEDULED`] it follows the gang both ways.
    pub const POD_GROUP_SATISFIED: &str = "PodGroupSatisfied";
    /// Reason of [`POD_GROUP_SATISFIED`] `True`.
    pub const REASON_MIN_COUNT_SATISFIED: &str = "MinCountSatisfied";
    /// Reason of [`POD_GROUP_SATISFIED`] `False`.
    pub const REASON_BELOW_MIN_COUNT: &str = "BelowMinCount";
    /// The reason of the failure a JobSet attributes to a child Job whose gang stayed below its `minCount`
    /// longer than [`super::annotations::UNSATISFIED_GANG_FAILURE_SECONDS`] (kwas).
    pub const REASON_POD_GROUP_BELOW_MIN_COUNT: &str = "PodGroupBelowMinCount";
    /// Pods and groups about to be terminated by a disruption such as preemption.
    pub const DISRUPTION_TARGET: &str = "DisruptionTarget";
    /// Pod condition: the pod has been scheduled.
    pub const POD_SCHEDULED: &str = "PodScheduled";

    /// Reason: the group's requirement is met.
    pub const REASON_SCHEDULED: &str = "Scheduled";
    /// Reason: the group could not be placed.
    pub const REASON_UNSCHEDULABLE: &str = "Unschedulable";
    /// Reason: the group could not be placed and involves inter-pod affinity, anti-affinity or topology
    /// spread, for which the gang cycle does not guarantee finding a placement (KEP-4671).
    pub const REASON_PLACEMENT_NOT_GUARANTEED: &str = "PlacementNotGuaranteed";
    /// Reason: a pod uses something the scheduler cannot honour; it is never placed.
    pub const REASON_UNSUPPORTED: &str = "Unsupported";
    /// Reason: an internal scheduler error.
    pub const REASON_SCHEDULER_ERROR: &str = "SchedulerError";
    /// Reason: the runtime hierarchy is invalid (cycle, too deep, several Workloads, mixed priorities).
    pub const REASON_INVALID: &str = "Invalid";
    /// Reason for [`DISRUPTION_TARGET`]: chosen as a preemption victim.
    pub const REASON_PREEMPTION_BY_SCHEDULER: &str = "PreemptionByScheduler";

    /// Job condition: the Job completed.
    pub const JOB_COMPLETE: &str = "Complete";
    /// Job condition: the Job failed.
    pub const JOB_FAILED: &str = "Failed";
    /// Job condition: the Job is suspended.
    pub const JOB_SUSPENDED: &str = "Suspended";
    /// Job condition: the Job is about to fail (terminating pods are being cleaned up).
    pub const JOB_FAILURE_TARGET: &str = "FailureTarget";
    /// Job condition: the Job met its success criteria (terminating pods are being cleaned up).
    pub const JOB_SUCCESS_CRITERIA_MET: &str = "SuccessCriteriaMet";
    /// Job condition: the Job's scheduling objects cannot be created (upstream's next step, KEP-5547).
    pub const JOB_SCHEDULING_BLOCKED: &str = "SchedulingBlocked";

    /// Job reason: the backoff limit was exceeded.
    pub const REASON_BACKOFF_LIMIT_EXCEEDED: &str = "BackoffLimitExceeded";
    /// Job reason: activeDeadlineSeconds passed.
    pub const REASON_DEADLINE_EXCEEDED: &str = "DeadlineExceeded";
    /// Job reason: the required completions were reached.
    pub const REASON_COMPLETIONS_REACHED: &str = "CompletionsReached";
    /// Job reason for the Suspended condition.
    pub const REASON_JOB_SUSPENDED: &str = "JobSuspended";
    /// Job reason for the Suspended condition turning False.
    pub const REASON_JOB_RESUMED: &str = "JobResumed";
    /// SchedulingBlocked reason: the parent's Workload was not found.
    pub const REASON_WORKLOAD_NOT_FOUND: &str = "WorkloadNotFound";
    /// SchedulingBlocked reason: the named template is not in the parent's Workload.
    pub const REASON_POD_GROUP_TEMPLATE_NOT_FOUND: &str = "PodGroupTemplateNotFound";
    /// SchedulingBlocked reason: the Workload's structure cannot be handled by this controller.
    pub const REASON_UNSUPPORTED_WORKLOAD_STRUCTURE: &str = "UnsupportedWorkloadStructure";
    /// SchedulingBlocked reason: the Job's scheduling block is invalid.
    pub const REASON_INVALID_SCHEDULING: &str = "InvalidSchedulingConfiguration";
}

/// Event reasons.
pub mod events {
    /// The Job controller does not use a Job's `spec.scheduling`: another controller owns the Job and
    /// manages its Workload and PodGroup (KEP-6089 leaves such Jobs to their owner).
    pub const SCHEDULING_IGNORED: &str = "SchedulingIgnored";
    /// A Job sets `spec.manualSelector`: the Job controller finds its pods by the
    /// `batch.kubernetes.io/controller-uid` label and its controller reference, and does not adopt
    /// orphan pods matching `spec.selector` (Warning, once, when the Job first creates pods).
    pub const MANUAL_SELECTOR_NOT_ADOPTING: &str = "ManualSelectorNotAdopting";
    /// A controller created a Workload.
    pub const WORKLOAD_CREATED: &str = "WorkloadCreated";
    /// A controller created a PodGroup.
    pub const POD_GROUP_CREATED: &str = "PodGroupCreated";
    /// A controller created a CompositePodGroup.
    pub const COMPOSITE_POD_GROUP_CREATED: &str = "CompositePodGroupCreated";
    /// A controller could not compile its scheduling configuration into a Workload.
    pub const FAILED_WORKLOAD_COMPILATION: &str = "FailedWorkloadCompilation";
    /// A controller could not create its Workload.
    pub const FAILED_WORKLOAD_CREATE: &str = "FailedWorkloadCreate";
    /// The scheduler bound a pod.
    pub const SCHEDULED: &str = "Scheduled";
    /// The scheduler could not place a pod or group.
    pub const FAILED_SCHEDULING: &str = "FailedScheduling";
    /// A pod or group was preempted.
    pub const PREEMPTED: &str = "Preempted";
    /// A controller's reconcile of the object failed unexpectedly (a contained panic); it is retried with
    /// backoff.
    pub const RECONCILE_ERROR: &str = "ReconcileError";
    /// A controller cannot decode the object into its type; it leaves the object out until it changes.
    pub const DECODE_ERROR: &str = "DecodeError";
    /// KEP-5547: a delegated Job's external Workload or PodGroupTemplate does not exist yet (the
    /// `SchedulingBlocked` condition carries `WorkloadNotFound` or `PodGroupTemplateNotFound`).
    pub const SCHEDULING_DEPENDENCY_NOT_FOUND: &str = "SchedulingDependencyNotFound";
    /// KEP-5547: the Job has active pods without a `schedulingGroup`, so new pods are created without one.
    pub const MIXED_SCHEDULING_GROUP: &str = "MixedSchedulingGroup";
    /// KEP-5547: a suspended Job's controller deleted its runtime PodGroup.
    pub const POD_GROUP_DELETED: &str = "PodGroupDeleted";
    /// A JobSet's edit changes scheduling fields that cannot change on a running JobSet; it is not applied.
    pub const SCHEDULING_UPDATE_REJECTED: &str = "SchedulingUpdateRejected";
}

/// The `spec.managedBy` value of Jobs the kwas Job controller manages.
pub const JOB_CONTROLLER_NAME: &str = "kwas.dev/job-controller";
/// The name of the kwas JobSet-style controller (its `kwas.dev/managed-by` value).
pub const JOBSET_CONTROLLER_NAME: &str = "kwas.dev/jobset-controller";
/// The upstream Job controller's `spec.managedBy` value.
pub const UPSTREAM_JOB_CONTROLLER_NAME: &str = "kubernetes.io/job-controller";
/// The default scheduler name kwas' scheduler answers for.
pub const SCHEDULER_NAME: &str = "kwas-scheduler";
/// The scheduler name pods get when they name none; kwas' scheduler also answers for it in dev mode.
pub const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";
/// Highest priority a user-defined PriorityClass may have.
pub const HIGHEST_USER_DEFINABLE_PRIORITY: i32 = 1_000_000_000;
