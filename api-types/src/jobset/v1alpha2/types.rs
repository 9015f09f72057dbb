//! The `jobset.x-k8s.io/v1alpha2` types, field by field as `api/jobset/v1alpha2/jobset_types.go` of
//! kubernetes-sigs/jobset defines them, plus kwas' `spec.scheduling` block.

use k8s_openapi::api::batch::v1::JobTemplateSpec;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::{CustomResource, KubeSchema};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

use crate::jobset::{
    JobSetScheduling, job_template_schema_with_rules, scheduling_transition_rule, template_scheduling_transition_rule,
    v1alpha2_templates_transition_rule,
};

/// The message of upstream's `self == oldSelf` rules.
const IMMUTABLE: &str = "Value is immutable";

/// The desired state of a JobSet: a group of replicated batch/v1 Jobs.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[kube(
    group = "jobset.x-k8s.io",
    version = "v1alpha2",
    kind = "JobSet",
    namespaced,
    status = "JobSetStatus",
    derive = "PartialEq",
    derive = "Default",
    doc = "JobSet is the Schema for the jobsets API (kubernetes-sigs/jobset), with KEP-6089's `spec.scheduling`.",
    printcolumn = r#"{"name":"TerminalState","type":"string","description":"Final state of JobSet","jsonPath":".status.terminalState"}"#,
    printcolumn = r#"{"name":"Restarts","type":"string","description":"Number of restarts","jsonPath":".status.restarts"}"#,
    printcolumn = r#"{"name":"Completed","type":"string","jsonPath":".status.conditions[?(@.type==\"Completed\")].status"}"#,
    printcolumn = r#"{"name":"Suspended","type":"string","description":"JobSet suspended","jsonPath":".spec.suspend"}"#,
    printcolumn = r#"{"name":"Age","type":"date","description":"Time this JobSet was created","jsonPath":".metadata.creationTimestamp"}"#
)]
#[cfg_attr(test, x_kube(cel))]
#[x_kube(
    validation = Rule::new("!(has(self.startupPolicy) && self.startupPolicy.startupPolicyOrder == 'InOrder' && self.replicatedJobs.exists(x, has(x.dependsOn)))")
        .message("StartupPolicy and DependsOn APIs are mutually exclusive"),
    validation = Rule::new("!has(self.replicatedJobs) || self.replicatedJobs.map(r, r.replicas).sum() <= 10000")
        .message("the replicated jobs' replicas may sum to at most 10000")
        .field_path(".replicatedJobs"),
    validation = Rule::new("!has(self.replicatedJobs) || self.replicatedJobs.all(r, r.name != 'jobset')")
        .message("replicated job names may not be `jobset` (the name of the root template)")
        .field_path(".replicatedJobs"),
    validation = Rule::new("!has(self.scheduling) || !has(self.scheduling.replicatedJobPolicies) || self.scheduling.replicatedJobPolicies.all(p, has(self.replicatedJobs) && self.replicatedJobs.exists(r, r.name == p.targetReplicatedJob))")
        .message("every targetReplicatedJob must name a replicated job")
        .field_path(".scheduling.replicatedJobPolicies"),
    validation = Rule::new("!has(self.scheduling) || !has(self.scheduling.replicatedJobPolicies) || !has(self.replicatedJobs) || self.replicatedJobs.all(r, !has(r.template.spec.scheduling) || !self.scheduling.replicatedJobPolicies.exists(p, p.targetReplicatedJob == r.name))")
        .message("a replicated job's scheduling may be set in its Job template or in spec.scheduling.replicatedJobPolicies, not both")
        .field_path(".replicatedJobs"),
    validation = Rule::new("has(self.replicatedJobs) == has(oldSelf.replicatedJobs) && (!has(self.replicatedJobs) || (self.replicatedJobs.map(r, r.name) == oldSelf.replicatedJobs.map(r, r.name) && self.replicatedJobs.map(r, r.replicas) == oldSelf.replicatedJobs.map(r, r.replicas)))")
        .message("the replicated jobs (their names, order and replicas) are immutable")
        .field_path(".replicatedJobs"),
    validation = Rule::new(v1alpha2_templates_transition_rule())
        .message("the Job templates are immutable unless the JobSet is suspended (but a gang's minCount)")
        .field_path(".replicatedJobs"),
    validation = Rule::new("has(self.managedBy) == has(oldSelf.managedBy) && (!has(self.managedBy) || self.managedBy == oldSelf.managedBy)")
        .message("field is immutable")
        .field_path(".managedBy"),
    validation = Rule::new(scheduling_transition_rule())
        .message("spec.scheduling is immutable, except the gang minCount of a replicatedJobPolicies entry")
        .field_path(".scheduling")
)]
#[serde(rename_all = "camelCase")]
pub struct JobSetSpec {
    /// replicatedJobs is the group of jobs that will form the set. (kwas: at most 8, the PodGroupTemplates
    /// one CompositePodGroupTemplate holds; unbounded upstream.)
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 8), extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub replicated_jobs: Vec<ReplicatedJob>,

    /// network defines the networking options for the jobset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = Rule::new("self == oldSelf").message(IMMUTABLE))]
    pub network: Option<Network>,

    /// successPolicy configures when to declare the JobSet as succeeded. The JobSet is always declared
    /// succeeded if all jobs in the set finished with status complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = Rule::new("self == oldSelf").message(IMMUTABLE))]
    pub success_policy: Option<SuccessPolicy>,

    /// failurePolicy configures when to declare the JobSet as failed. The JobSet is always declared failed
    /// if any job in the set finished with status failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = Rule::new("self == oldSelf").message(IMMUTABLE))]
    pub failure_policy: Option<FailurePolicy>,

    /// startupPolicy configures in what order jobs must be started. Deprecated: StartupPolicy is
    /// deprecated, please use the DependsOn API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = Rule::new("self == oldSelf").message(IMMUTABLE))]
    pub startup_policy: Option<StartupPolicy>,

    /// suspend suspends all running child Jobs when set to true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,

    /// coordinator can be used to assign a specific pod as the coordinator for the JobSet. If defined, an
    /// annotation will be added to all Jobs and pods with coordinator pod, which contains the stable network
    /// endpoint where the coordinator pod can be reached:
    /// `jobset.sigs.k8s.io/coordinator=<pod hostname>.<headless service>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coordinator: Option<Coordinator>,

    /// managedBy is used to indicate the controller or entity that manages a JobSet. The built-in JobSet
    /// controller reconciles JobSets which don't have this field at all or the field value is the reserved
    /// string `jobset.sigs.k8s.io/jobset-controller`, but skips reconciling JobSets with a custom value for
    /// this field. The value must be a valid domain-prefixed path (e.g. acme.io/foo) of at most 63
    /// characters. The field is immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub managed_by: Option<String>,

    /// ttlSecondsAfterFinished limits the lifetime of a JobSet that has finished execution (either Complete
    /// or Failed). If set, the JobSet is eligible to be automatically deleted that many seconds after it
    /// finishes; if unset, it won't be automatically deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub ttl_seconds_after_finished: Option<i32>,

    /// volumeClaimPolicies is a list of policies for persistent volume claims that pods are allowed to
    /// reference. The JobSet controller automatically adds the required volume claims to the pod template.
    /// Every claim in this list must have at least one matching (by name) volumeMount in one container in
    /// the template.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 50), extend("x-kubernetes-list-type" = "atomic"))]
    #[x_kube(validation = Rule::new("self == oldSelf").message(IMMUTABLE))]
    pub volume_claim_policies: Vec<VolumeClaimPolicy>,

    /// kwas (KEP-6089): the scheduling intent of the whole JobSet (`schedulingPolicy`,
    /// `schedulingConstraints`, `disruptionMode`, `podGroupManagement`) and, Option B, of each replicated
    /// job (`replicatedJobPolicies`). Not part of upstream JobSet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduling: Option<JobSetScheduling>,
}

/// One replicated job: `replicas` Jobs from one template.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplicatedJob {
    /// name is the name of the entry and will be used as a suffix for the Job name.
    #[schemars(length(max = 63))]
    pub name: String,

    /// groupName defines the name of the group this ReplicatedJob belongs to. Defaults to "default".
    #[serde(default = "default_group_name", skip_serializing_if = "String::is_empty")]
    pub group_name: String,

    /// template defines the template of the Job that will be created.
    #[schemars(schema_with = "v1alpha2_job_template_schema")]
    pub template: JobTemplateSpec,

    /// replicas is the number of jobs that will be created from this ReplicatedJob's template. Jobs names
    /// will be in the format: `<jobSet.name>-<spec.replicatedJob.name>-<job-index>`.
    /// (kwas bound: at most 10,000, and 10,000 over all replicated jobs, so one reconcile does bounded work.)
    #[serde(default = "one")]
    #[schemars(range(min = 0, max = 10000))]
    pub replicas: i32,

    /// dependsOn is an optional list that specifies the preceding ReplicatedJobs upon which the current
    /// ReplicatedJob depends. If specified, the ReplicatedJob will be created only after the referenced
    /// ReplicatedJobs reach their desired state. The first ReplicatedJob in the slice cannot use the
    /// DependsOn API. This API is mutually exclusive with the StartupPolicy API.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 5), extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    #[x_kube(validation = Rule::new("self == oldSelf").message(IMMUTABLE))]
    pub depends_on: Vec<DependsOn>,
}

/// The groupName default.
pub const DEFAULT_GROUP_NAME: &str = "default";

fn default_group_name() -> String {
    DEFAULT_GROUP_NAME.to_string()
}

fn one() -> i32 {
    1
}

/// The Job template schema of a v1alpha2 replicated job: the kwas.dev one (the fields the rules read
/// spelled out, the rest preserved), whose only transition rule is the one of `spec.scheduling` (upstream
/// checks the template's immutability in its webhook, with exceptions while suspended: see
/// [`super::validation::validate_update`]).
fn v1alpha2_job_template_schema(generator: &mut SchemaGenerator) -> Schema {
    job_template_schema_with_rules(
        generator,
        serde_json::Value::Array(vec![template_scheduling_transition_rule()]),
    )
}

/// DependsOn defines the dependency on the previous ReplicatedJob status.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DependsOn {
    /// name of the previous ReplicatedJob.
    pub name: String,
    /// status defines the condition for the ReplicatedJob. Only Ready or Complete status can be set.
    pub status: DependsOnStatus,
}

/// The state a ReplicatedJob waits for in the one it depends on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum DependsOnStatus {
    /// The Ready + Succeeded + Failed counter equals the number of child Jobs of the dependant
    /// ReplicatedJob.
    #[default]
    Ready,
    /// The Succeeded counter equals the number of child Jobs of the dependant ReplicatedJob.
    Complete,
}

/// Networking options of a JobSet.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Network {
    /// enableDNSHostnames allows pods to be reached via their hostnames:
    /// `<jobSet.name>-<spec.replicatedJob.name>-<job-index>-<pod-index>.<subdomain>`.
    #[serde(rename = "enableDNSHostnames", default, skip_serializing_if = "Option::is_none")]
    pub enable_dns_hostnames: Option<bool>,

    /// subdomain is an explicit choice for a network subdomain name. When set, any replicated job in the
    /// set is added to this network. Defaults to `<jobSet.name>` if not set.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub subdomain: String,

    /// publishNotReadyAddresses indicates if DNS records of pods should be published before the pods are
    /// ready. Defaults to True.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub publish_not_ready_addresses: Option<bool>,
}

/// Operator defines the target of a SuccessPolicy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Operator {
    /// Applies to all jobs matching the selector.
    #[default]
    All,
    /// Applies to any single job matching the selector.
    Any,
}

/// When a JobSet succeeds.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SuccessPolicy {
    /// operator determines either All or Any of the selected jobs should succeed to consider the JobSet
    /// successful.
    pub operator: Operator,

    /// targetReplicatedJobs are the names of the replicated jobs the operator will apply to. A null or
    /// empty list will apply to all replicatedJobs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub target_replicated_jobs: Vec<String>,
}

/// The action the JobSet controller takes for a matching failure policy rule.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum FailurePolicyAction {
    /// Fail the JobSet immediately.
    FailJobSet,
    /// Restart the JobSet (recreate all Jobs) if restarts remain, otherwise fail it.
    #[default]
    RestartJobSet,
    /// Restart the JobSet without counting towards `maxRestarts`.
    RestartJobSetAndIgnoreMaxRestarts,
    /// Recreate only the failed Job if restarts remain, otherwise fail the JobSet (feature gate
    /// `RestartJob`; every `replicas` at most 1024).
    RestartJob,
    /// Recreate only the failed Job without counting towards `maxRestarts` (feature gate `RestartJob`).
    RestartJobAndIgnoreMaxRestarts,
}

/// A FailurePolicyAction executed if a child job fails for a reason listed in `onJobFailureReasons` and a
/// message matching `onJobFailureMessagePatterns`. Rules are evaluated in order; the first match wins.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FailurePolicyRule {
    /// name of the failure policy rule; defaulted to `failurePolicyRuleN` where N is the index of the rule.
    /// It must match `^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`. (Optional in kwas' schema, required
    /// upstream whose mutating webhook names the rules before the schema is checked.)
    #[serde(default)]
    pub name: String,

    /// action to take if the rule is matched.
    pub action: FailurePolicyAction,

    /// onJobFailureReasons is a list of job failure reasons. An empty list matches any reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("uniqueItems" = true))]
    pub on_job_failure_reasons: Vec<String>,

    /// onJobFailureMessagePatterns is a list of RE2 regular expressions on the job failure message. An
    /// empty list matches any message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("uniqueItems" = true))]
    pub on_job_failure_message_patterns: Vec<String>,

    /// targetReplicatedJobs are the names of the replicated jobs the operator applies to. An empty list
    /// will apply to all replicatedJobs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub target_replicated_jobs: Vec<String>,
}

/// What to do when a Job fails.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FailurePolicy {
    /// maxRestarts defines the limit on the number of JobSet restarts.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub max_restarts: i32,

    /// restartStrategy defines the strategy to use when restarting the JobSet. Defaults to Recreate.
    #[serde(default)]
    pub restart_strategy: JobSetRestartStrategy,

    /// rules is a list of failure policy rules for this JobSet. For a given Job failure, the rules will be
    /// evaluated in order, and only the first matching rule will be executed. If no matching rule is found,
    /// the RestartJobSet action is applied.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<FailurePolicyRule>,
}

/// How a JobSet restarts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum JobSetRestartStrategy {
    /// Recreate all Jobs; each as soon as its previous iteration (and its Pods) is deleted.
    #[default]
    Recreate,
    /// Recreate all Jobs once all Jobs (and their Pods) of the previous iteration are deleted.
    BlockingRecreate,
    /// Restart healthy Pods in-place and recreate failed ones (feature gate `InPlaceRestart`).
    InPlaceRestart,
}

/// The startup order of the replicated jobs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum StartupPolicyOptions {
    /// Start the replicated jobs without any specific order (the default).
    #[default]
    AnyOrder,
    /// Start them as listed; one starts when all the jobs of the previous one are ready.
    InOrder,
}

/// In what order a JobSet's replicated jobs start. Deprecated upstream in favour of `dependsOn`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StartupPolicy {
    /// startupPolicyOrder determines the startup order of the ReplicatedJobs.
    pub startup_policy_order: StartupPolicyOptions,
}

/// Which pod is the coordinator of the JobSet.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Coordinator {
    /// replicatedJob is the name of the ReplicatedJob which contains the coordinator pod.
    pub replicated_job: String,

    /// jobIndex is the index of Job which contains the coordinator pod (0 to replicas-1).
    #[serde(default, skip_serializing_if = "is_zero_i64")]
    pub job_index: i64,

    /// podIndex is the Job completion index of the coordinator pod.
    #[serde(default, skip_serializing_if = "is_zero_i64")]
    pub pod_index: i64,
}

/// Volume claim templates and lifecycle management for shared PVCs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("!has(self.templates) || self.templates.all(t, !has(t.metadata) || !has(t.metadata.__namespace__) || size(t.metadata.__namespace__) == 0)")
    .message("namespace cannot be set for VolumeClaimPolicies templates"))]
pub struct VolumeClaimPolicy {
    /// templates is a list of shared PVC claims that ReplicatedJobs are allowed to reference. Generated PVC
    /// names are `<claim-name>-<jobset-name>`. A template must not set the namespace.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 50), extend("x-kubernetes-list-type" = "atomic"), schema_with = "pvc_templates_schema")]
    pub templates: Vec<PersistentVolumeClaim>,

    /// retentionPolicy describes the lifecycle of persistent volume claims created from the template. By
    /// default, all persistent volume claims are deleted once JobSet is deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retention_policy: Option<VolumeRetentionPolicy>,
}

/// The PVC templates: the metadata the rules read (`name`, `namespace`) spelled out, the rest preserved
/// unvalidated (the API server validates the PVCs when the controller creates them), as for Job templates.
fn pvc_templates_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "array",
        "maxItems": 50,
        "x-kubernetes-list-type": "atomic",
        "items": {
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": true,
            "properties": {
                "metadata": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": true,
                    "properties": {
                        "name": {"type": "string", "maxLength": 253},
                        "namespace": {"type": "string", "maxLength": 63}
                    }
                },
                "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
            }
        }
    })
}

/// The retention policy of PVCs created from a JobSet's VolumeClaimPolicies.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VolumeRetentionPolicy {
    /// whenDeleted specifies what happens to PVCs when JobSet is deleted. Defaults to Delete.
    #[serde(default = "delete_policy", skip_serializing_if = "Option::is_none")]
    pub when_deleted: Option<RetentionPolicyType>,
}

fn delete_policy() -> Option<RetentionPolicyType> {
    Some(RetentionPolicyType::Delete)
}

/// What happens to a JobSet's PVCs when it is deleted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum RetentionPolicyType {
    /// The PVCs are deleted (the default).
    #[default]
    Delete,
    /// The PVCs are kept.
    Retain,
}

/// The observed state of a JobSet.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobSetStatus {
    /// conditions track status.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,

    /// restarts tracks the number of times the JobSet has been globally restarted (RestartJobSet or
    /// RestartJobSetAndIgnoreMaxRestarts executed and all Jobs recreated).
    #[serde(default)]
    pub restarts: i32,

    /// restartsCountTowardsMax tracks the global restarts that count towards `maxRestarts` (RestartJobSet).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub restarts_count_towards_max: i32,

    /// terminalState tracks the state of the JobSet when it finishes execution: Completed or Failed;
    /// empty otherwise.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub terminal_state: String,

    /// replicatedJobsStatus tracks the number of JobsReady for each replicatedJob.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub replicated_jobs_status: Vec<ReplicatedJobStatus>,

    /// previousInPlaceRestartAttempt tracks the previous in-place restart attempt of the JobSet (feature
    /// gate `InPlaceRestart`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub previous_in_place_restart_attempt: Option<i32>,

    /// currentInPlaceRestartAttempt tracks the current in-place restart attempt of the JobSet (feature gate
    /// `InPlaceRestart`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub current_in_place_restart_attempt: Option<i32>,

    /// kwas: the Workload compiled for this JobSet. Not part of upstream JobSet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload_name: Option<String>,

    /// kwas: the root CompositePodGroup of this JobSet. Not part of upstream JobSet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub composite_pod_group_name: Option<String>,

    /// kwas: the generation the status reflects. Not part of upstream JobSet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// The observed Jobs of one ReplicatedJob.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplicatedJobStatus {
    /// name of the ReplicatedJob.
    pub name: String,
    /// ready is the number of child Jobs whose ready and completed pods reach the expected pod count.
    pub ready: i32,
    /// succeeded is the number of successfully completed child Jobs.
    pub succeeded: i32,
    /// failed is the number of failed child Jobs.
    pub failed: i32,
    /// active is the number of child Jobs with at least 1 pod running or pending and not being deleted.
    pub active: i32,
    /// suspended is the number of child Jobs which are in a suspended state.
    pub suspended: i32,
    /// `jobRestarts[jobIndex]` is the number of times the Job with that index was individually recreated
    /// (RestartJob or RestartJobAndIgnoreMaxRestarts).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 1024), extend("x-kubernetes-list-type" = "atomic"))]
    pub job_restarts: Vec<i32>,
    /// `jobRestartsCountTowardsMax[jobIndex]` is the number of individual restarts of that Job that count
    /// towards `maxRestarts` (RestartJob).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 1024), extend("x-kubernetes-list-type" = "atomic"))]
    pub job_restarts_count_towards_max: Vec<i32>,
}

fn is_zero(v: &i32) -> bool {
    *v == 0
}

fn is_zero_i64(v: &i64) -> bool {
    *v == 0
}
