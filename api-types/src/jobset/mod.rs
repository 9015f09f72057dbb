//! The JobSet-style custom resource (`jobsets.kwas.dev/v1alpha1`): a group of replicated batch/v1 Jobs,
//! scheduled as one hierarchy.
//!
//! Scheduling intent can be given both ways KEP-6089 describes:
//! - **Option A** (template delegation): the root block `spec.scheduling` for the whole JobSet, and each
//!   replicated job's own `template.spec.scheduling` (the Job API's block) for its Jobs;
//! - **Option B** (targeted policies): everything in `spec.scheduling`, with `replicatedJobPolicies` naming
//!   the replicated job each policy applies to.
//!
//! Setting both for one replicated job is rejected (KEP-6089 "Conflict Validation"), as is a policy whose
//! target names no replicated job. Those rules are CEL validations in the CRD schema and are checked again
//! by the controller with field paths.
//!
//! [`v1alpha2`] holds the JobSet project's own API (`jobset.x-k8s.io/v1alpha2`) with the same scheduling
//! block, and conversions between it and this one.
//!
//! ```
//! use kwas_api_types::jobset::JobSet;
//! let js: JobSet = serde_json::from_value(serde_json::json!({
//!     "apiVersion": "kwas.dev/v1alpha1",
//!     "kind": "JobSet",
//!     "metadata": {"name": "pretrain"},
//!     "spec": {
//!         "scheduling": {"schedulingPolicy": {"basic": {}}},
//!         "replicatedJobs": [{"name": "workers", "replicas": 2, "template": {"spec": {"template": {"spec": {"containers": []}}}}}]
//!     }
//! })).unwrap();
//! assert_eq!(js.spec.replicated_jobs[0].replicas, 2);
//! ```

use k8s_openapi::api::batch::v1::JobTemplateSpec;
use k8s_openapi::api::scheduling::v1alpha3::{
    WorkloadPodGroupDisruptionMode, WorkloadPodGroupResourceClaim, WorkloadPodGroupSchedulingConstraints,
    WorkloadPodGroupSchedulingPolicy,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::{CustomResource, KubeSchema};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

pub mod v1alpha2;

use crate::composite::{
    WorkloadCompositePodGroupDisruptionMode, WorkloadCompositePodGroupSchedulingConstraints,
    WorkloadCompositePodGroupSchedulingPolicy,
};

/// The most replicated jobs a JobSet may have (one PodGroupTemplate each, and a composite template holds at
/// most 8).
pub const MAX_REPLICATED_JOBS: usize = 8;

/// The name of the root template of a JobSet's Workload; no replicated job may use it.
pub const ROOT_TEMPLATE_NAME: &str = "jobset";

/// A set of replicated Jobs scheduled as one hierarchy: a root CompositePodGroup with one PodGroup per
/// child Job.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[kube(
    group = "kwas.dev",
    version = "v1alpha1",
    kind = "JobSet",
    namespaced,
    status = "JobSetStatus",
    shortname = "js",
    derive = "PartialEq",
    derive = "Default",
    doc = "A set of replicated Jobs scheduled as one workload hierarchy (KEP-6089 reference integration).",
    printcolumn = r#"{"name":"Completed","type":"string","jsonPath":".status.conditions[?(@.type==\"Completed\")].status"}"#,
    printcolumn = r#"{"name":"Restarts","type":"integer","jsonPath":".status.restarts"}"#,
    printcolumn = r#"{"name":"Suspended","type":"boolean","jsonPath":".spec.suspend"}"#,
    printcolumn = r#"{"name":"Workload","type":"string","jsonPath":".status.workloadName"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[cfg_attr(test, x_kube(cel))]
#[x_kube(
    validation = Rule::new("self.replicatedJobs.all(r, r.name != 'jobset')")
        .message("replicated job names may not be `jobset` (the name of the root template)")
        .field_path(".replicatedJobs"),
    validation = Rule::new("!has(self.scheduling) || !has(self.scheduling.replicatedJobPolicies) || self.scheduling.replicatedJobPolicies.all(p, self.replicatedJobs.exists(r, r.name == p.targetReplicatedJob))")
        .message("every targetReplicatedJob must name a replicated job")
        .field_path(".scheduling.replicatedJobPolicies"),
    validation = Rule::new("self.replicatedJobs.map(r, r.replicas).sum() <= 10000")
        .message("the replicated jobs' replicas may sum to at most 10000")
        .field_path(".replicatedJobs"),
    validation = Rule::new("!has(self.scheduling) || !has(self.scheduling.replicatedJobPolicies) || self.replicatedJobs.all(r, !has(r.template.spec.scheduling) || !self.scheduling.replicatedJobPolicies.exists(p, p.targetReplicatedJob == r.name))")
        .message("a replicated job's scheduling may be set in its Job template or in spec.scheduling.replicatedJobPolicies, not both")
        .field_path(".replicatedJobs"),
    validation = Rule::new("self.replicatedJobs.map(r, r.name) == oldSelf.replicatedJobs.map(r, r.name) && self.replicatedJobs.map(r, r.replicas) == oldSelf.replicatedJobs.map(r, r.replicas)")
        .message("the replicated jobs (their names, order and replicas) are immutable")
        .field_path(".replicatedJobs"),
    validation = Rule::new(scheduling_transition_rule())
        .message("spec.scheduling is immutable, except the gang minCount of a replicatedJobPolicies entry")
        .field_path(".scheduling")
)]
#[serde(rename_all = "camelCase")]
pub struct JobSetSpec {
    /// The replicated jobs: each is `replicas` Jobs from one template. Names are unique DNS labels, and none
    /// is `jobset` (the root template's name).
    #[schemars(length(min = 1, max = 8), extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub replicated_jobs: Vec<ReplicatedJob>,

    /// Suspend the JobSet: its Jobs are suspended (their pods deleted) until it is resumed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,

    /// When the JobSet succeeds. Default: all Jobs complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub success_policy: Option<SuccessPolicy>,

    /// What to do when a Job fails. Default: the JobSet fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_policy: Option<FailurePolicy>,

    /// Scheduling intent (KEP-6089 building blocks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduling: Option<JobSetScheduling>,
}

/// One replicated job.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplicatedJob {
    /// The name (a DNS label), used in the child Jobs' names `<jobset>-<name>-<index>`.
    #[schemars(length(min = 1, max = 63), regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"))]
    pub name: String,

    /// How many Jobs to create from the template. Default 1; at most [`MAX_CHILD_JOBS`], and the sum over
    /// the replicated jobs too.
    #[serde(default = "one")]
    #[schemars(range(min = 0, max = 10000))]
    pub replicas: i32,

    /// The batch/v1 Job template. Its `spec.scheduling` is Option A's per-replicated-job intent.
    #[schemars(schema_with = "job_template_schema")]
    pub template: JobTemplateSpec,
}

/// The most child Jobs one JobSet may have: each replicated job's `replicas` and their sum are bounded by it
/// (the schema, and the controller again), so a JobSet's reconcile does bounded work.
pub const MAX_CHILD_JOBS: i32 = 10_000;

fn one() -> i32 {
    1
}

/// `a.f` and `b.f` both unset, or both set and equal.
fn same(a: &str, b: &str, field: &str) -> String {
    format!("(has({a}.{field}) == has({b}.{field}) && (!has({a}.{field}) || {a}.{field} == {b}.{field}))")
}

/// Pod-group scheduling `a` (a Job's `spec.scheduling`, with `claims`, or a `replicatedJobPolicies`
/// entry, without) equals `b` except for its gang's `minCount`, the one field a Workload's
/// PodGroupTemplate lets change.
fn same_but_min_count(a: &str, b: &str, claims: bool) -> String {
    let (pa, pb) = (format!("{a}.schedulingPolicy"), format!("{b}.schedulingPolicy"));
    let claims = if claims {
        format!("{} && ", same(a, b, "resourceClaims"))
    } else {
        String::new()
    };
    format!(
        "{} && {} && {claims}has({pa}) == has({pb}) && (!has({pa}) || (has({pa}.basic) == has({pb}.basic) && has({pa}.gang) == has({pb}.gang)))",
        same(a, b, "schedulingConstraints"),
        same(a, b, "disruptionMode"),
    )
}

/// The transition rule of `spec.scheduling`: set or unset for good; its root blocks, management and the
/// targets of `replicatedJobPolicies` fixed; each policy fixed but for its gang's `minCount`. Every list it
/// walks is bounded (at most 8 policies) and read through its own field path, so kube-apiserver's cost
/// estimator sizes every comparison from the schema and the estimate stays small (a list read through a
/// conditional would lose its path and make each comparison of its items unbounded).
fn scheduling_transition_rule() -> String {
    let set = |x: &str| {
        format!("(has({x}.scheduling.replicatedJobPolicies) && size({x}.scheduling.replicatedJobPolicies) > 0)")
    };
    let (new, old) = (
        "self.scheduling.replicatedJobPolicies",
        "oldSelf.scheduling.replicatedJobPolicies",
    );
    format!(
        "has(self.scheduling) == has(oldSelf.scheduling) && (!has(self.scheduling) || ({} && {} && {} && {} && \
         {set_new} == {set_old} && (!{set_new} || ({new}.map(p, p.targetReplicatedJob) == {old}.map(p, p.targetReplicatedJob) && \
         {new}.all(p, {old}.exists(q, q.targetReplicatedJob == p.targetReplicatedJob && {}))))))",
        same("self.scheduling", "oldSelf.scheduling", "schedulingPolicy"),
        same("self.scheduling", "oldSelf.scheduling", "schedulingConstraints"),
        same("self.scheduling", "oldSelf.scheduling", "disruptionMode"),
        same("self.scheduling", "oldSelf.scheduling", "podGroupManagement"),
        same_but_min_count("p", "q", false),
        set_new = set("self"),
        set_old = set("oldSelf"),
    )
}

/// The transition rules of a replicated job's Job template: its metadata, pod template, `parallelism`,
/// `completions`, `completionMode` and `backoffLimit` are immutable, and its `spec.scheduling` is set or
/// unset for good and fixed but for the gang's `minCount`. (Other Job fields are preserved unvalidated; a
/// rule that walked them would be unbounded, and they apply to the Jobs of the next restart attempt.)
fn template_transition_rules() -> serde_json::Value {
    let spec_fields = ["parallelism", "completions", "completionMode", "backoffLimit"]
        .iter()
        .map(|f| same("self.spec", "oldSelf.spec", f))
        .collect::<Vec<_>>()
        .join(" && ");
    serde_json::json!([
        {"rule": same("self", "oldSelf", "metadata"), "message": "the Job template's metadata is immutable",
         "fieldPath": ".metadata"},
        {"rule": "self.spec.template == oldSelf.spec.template", "message": "the pod template is immutable",
         "fieldPath": ".spec.template"},
        {"rule": spec_fields, "message": "parallelism, completions, completionMode and backoffLimit are immutable",
         "fieldPath": ".spec"},
        template_scheduling_transition_rule(),
    ])
}

/// The transition rule of a Job template's `spec.scheduling`: set or unset for good, and fixed but for the
/// gang's `minCount`.
fn template_scheduling_transition_rule() -> serde_json::Value {
    serde_json::json!({
        "rule": format!(
            "has(self.spec.scheduling) == has(oldSelf.spec.scheduling) && (!has(self.spec.scheduling) || {})",
            same_but_min_count("self.spec.scheduling", "oldSelf.spec.scheduling", true)),
        "message": "spec.scheduling is immutable, except the gang's minCount",
        "fieldPath": ".spec.scheduling",
    })
}

/// A structural schema for the Job template that spells out the fields the JobSet's rules read
/// (`spec.scheduling`, `spec.parallelism`, `spec.completions`, ...) and preserves the rest unvalidated, so the
/// CRD stays small enough for client-side `kubectl apply`. The Job controller and the API server validate
/// the Jobs themselves when they are created.
fn job_template_schema(generator: &mut SchemaGenerator) -> Schema {
    job_template_schema_with_rules(generator, template_transition_rules())
}

/// [`job_template_schema`] with the given transition rules on the template.
fn job_template_schema_with_rules(generator: &mut SchemaGenerator, rules: serde_json::Value) -> Schema {
    let scheduling = generator.subschema_for::<JobSetJobSchedulingSchema>();
    json_schema!({
        "description": "The batch/v1 Job template of this replicated job.",
        "type": "object",
        "properties": {
            "metadata": {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": true
            },
            "spec": {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": true,
                "properties": {
                    "parallelism": {"type": "integer", "format": "int32", "minimum": 0},
                    "completions": {"type": "integer", "format": "int32", "minimum": 0},
                    "completionMode": {"type": "string", "enum": ["NonIndexed", "Indexed"]},
                    "backoffLimit": {"type": "integer", "format": "int32", "minimum": 0},
                    "scheduling": scheduling,
                    "template": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                },
                "required": ["template"]
            }
        },
        "required": ["spec"],
        "x-kubernetes-validations": rules
    })
}

/// The union rules of a leaf block holding `schedulingPolicy` and `disruptionMode` (kube-apiserver's
/// declarative union validation of the v1alpha3 types: none set, or two set, is invalid).
fn leaf_union_rules() -> serde_json::Value {
    let mut rules = Vec::new();
    for (field, a, b) in [
        ("schedulingPolicy", "basic", "gang"),
        ("disruptionMode", "single", "all"),
    ] {
        rules.push(serde_json::json!({
            "rule": format!("!has(self.{field}) || has(self.{field}.{a}) || has(self.{field}.{b})"),
            "message": format!("must specify one of: `{a}`, `{b}`"),
            "fieldPath": format!(".{field}"),
        }));
        rules.push(serde_json::json!({
            "rule": format!("!has(self.{field}) || !(has(self.{field}.{a}) && has(self.{field}.{b}))"),
            "message": format!("must specify exactly one of: `{a}`, `{b}`"),
            "fieldPath": format!(".{field}"),
        }));
    }
    serde_json::Value::Array(rules)
}

/// The schema of a Job template's `spec.scheduling` (batch/v1 `JobSchedulingConfiguration`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = leaf_union_rules()))]
struct JobSetJobSchedulingSchema {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    scheduling_policy: Option<WorkloadPodGroupSchedulingPolicy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    scheduling_constraints: Option<WorkloadPodGroupSchedulingConstraints>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    disruption_mode: Option<WorkloadPodGroupDisruptionMode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    resource_claims: Option<Vec<WorkloadPodGroupResourceClaim>>,
}

/// When a JobSet succeeds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SuccessPolicy {
    /// `All`: the JobSet succeeds when every Job of the target replicated jobs (all of them when the list is
    /// empty) completes.
    #[serde(default = "all_operator")]
    #[schemars(extend("enum" = ["All"]))]
    pub operator: String,

    /// The replicated jobs whose Jobs must complete; empty means all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub target_replicated_jobs: Vec<String>,
}

fn all_operator() -> String {
    "All".to_string()
}

/// What to do when a Job fails.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FailurePolicy {
    /// How many times the JobSet recreates all its Jobs after one fails, before it fails. Default 0.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub max_restarts: i32,
}

/// Who creates the child Jobs' PodGroups.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum PodGroupManagement {
    /// The JobSet controller creates every PodGroup and sets `schedulingGroup.podGroupName` in the child
    /// Jobs' pod templates.
    #[default]
    Centralized,
    /// The child Jobs carry the downward-mapping annotations and the Job controller creates each PodGroup
    /// under the JobSet's CompositePodGroup.
    Delegated,
}

/// A JobSet's scheduling intent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobSetScheduling {
    /// The root's policy: by default a gang of gangs (every child Job's group); `basic: {}` lets components
    /// start independently.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduling_policy: Option<WorkloadCompositePodGroupSchedulingPolicy>,

    /// The root's topology constraint: the whole JobSet in one domain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduling_constraints: Option<WorkloadCompositePodGroupSchedulingConstraints>,

    /// The root's disruption mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disruption_mode: Option<WorkloadCompositePodGroupDisruptionMode>,

    /// Option B: per-replicated-job policies, each naming its target.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 8), extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["targetReplicatedJob"]))]
    pub replicated_job_policies: Vec<ReplicatedJobPolicy>,

    /// Who creates the child Jobs' PodGroups; the controller's default when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_group_management: Option<PodGroupManagement>,
}

/// Option B: the scheduling intent of one replicated job's Jobs, in the leaf building blocks.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = leaf_union_rules()))]
pub struct ReplicatedJobPolicy {
    /// The replicated job this policy applies to.
    #[schemars(length(min = 1, max = 63))]
    pub target_replicated_job: String,

    /// Basic or Gang for each of its Jobs' PodGroups (gang `minCount` defaults to the Job's parallelism).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduling_policy: Option<WorkloadPodGroupSchedulingPolicy>,

    /// Topology for each of its Jobs' PodGroups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduling_constraints: Option<WorkloadPodGroupSchedulingConstraints>,

    /// Disruption mode of each of its Jobs' PodGroups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disruption_mode: Option<WorkloadPodGroupDisruptionMode>,
}

/// The observed state of a JobSet.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobSetStatus {
    /// Conditions: `Completed`, `Failed`, `Suspended`, `SchedulingBlocked`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Option<Vec<Condition>>,

    /// How many times the Jobs were recreated after a failure.
    #[serde(default)]
    pub restarts: i32,

    /// Counts per replicated job.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub replicated_jobs_status: Vec<ReplicatedJobStatus>,

    /// The Workload compiled for this JobSet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload_name: Option<String>,

    /// The root CompositePodGroup of this JobSet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub composite_pod_group_name: Option<String>,

    /// The generation the status reflects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// Job counts of one replicated job.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplicatedJobStatus {
    /// The replicated job.
    pub name: String,
    /// Jobs with at least `parallelism` ready pods.
    pub ready: i32,
    /// Completed Jobs.
    pub succeeded: i32,
    /// Failed Jobs.
    pub failed: i32,
    /// Jobs still running.
    pub active: i32,
    /// Suspended Jobs.
    pub suspended: i32,
}

impl JobSetSpec {
    /// The replicated job named `name`.
    pub fn replicated_job(&self, name: &str) -> Option<&ReplicatedJob> {
        self.replicated_jobs.iter().find(|r| r.name == name)
    }
}

/// The name of the `index`-th Job of replicated job `replicated_job` of JobSet `jobset`.
pub fn child_job_name(jobset: &str, replicated_job: &str, index: i32) -> String {
    format!("{jobset}-{replicated_job}-{index}")
}

/// Condition types of a JobSet.
pub mod conditions {
    /// Every targeted Job completed.
    pub const COMPLETED: &str = "Completed";
    /// The JobSet failed (a Job failed and no restarts remain).
    pub const FAILED: &str = "Failed";
    /// The JobSet is suspended.
    pub const SUSPENDED: &str = "Suspended";
    /// The JobSet's scheduling configuration is invalid or its objects cannot be created.
    pub const SCHEDULING_BLOCKED: &str = "SchedulingBlocked";
    /// Reason: all targeted Jobs completed.
    pub const REASON_ALL_JOBS_COMPLETED: &str = "AllJobsCompleted";
    /// Reason: a Job failed and no restarts remain.
    pub const REASON_REACHED_MAX_RESTARTS: &str = "ReachedMaxRestarts";
    /// Reason: the JobSet is suspended.
    pub const REASON_SUSPENDED: &str = "SuspendedJobs";
    /// Reason: the JobSet was resumed.
    pub const REASON_RESUMED: &str = "ResumedJobs";
    /// Reason: the scheduling configuration is invalid.
    pub const REASON_INVALID_SCHEDULING: &str = "InvalidSchedulingConfiguration";
    /// The last edit of a running JobSet changes what its Workload cannot change (anything but a gang
    /// `minCount`) or does not compile: it is not applied, nothing is created or deleted, and the JobSet's
    /// Jobs keep running until the edit is reverted. Admission rejects such edits (the CRD's transition
    /// rules); this condition covers a cluster whose CRD lacks them.
    pub const SCHEDULING_UPDATE_REJECTED: &str = "SchedulingUpdateRejected";
    /// Reason: the edit changes a field of the Workload that is immutable.
    pub const REASON_IMMUTABLE_FIELD: &str = "ImmutableSchedulingField";
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(scheduling: serde_json::Value, template_scheduling: Option<serde_json::Value>) -> serde_json::Value {
        let mut workers = json!({"name": "workers", "replicas": 2, "template": {"spec": {"template": {}}}});
        if let Some(s) = template_scheduling {
            workers["template"]["spec"]["scheduling"] = s;
        }
        json!({
            "replicatedJobs": [{"name": "driver", "replicas": 1, "template": {"spec": {"template": {}}}}, workers],
            "scheduling": scheduling,
        })
    }

    #[test]
    fn option_a_and_option_b_each_pass() {
        let rack = json!({"schedulingConstraints": {"topology": [{"key": "kwas.dev/rack"}]}});
        let a = spec(json!({"schedulingPolicy": {"basic": {}}}), Some(rack.clone()));
        assert!(JobSetSpec::validate_cel(&a, None).is_ok());
        let mut policy = rack;
        policy["targetReplicatedJob"] = json!("workers");
        let b = spec(json!({"replicatedJobPolicies": [policy]}), None);
        assert!(JobSetSpec::validate_cel(&b, None).is_ok());
    }

    #[test]
    fn both_options_for_one_replicated_job_are_rejected() {
        let rack = json!({"schedulingConstraints": {"topology": [{"key": "kwas.dev/rack"}]}});
        let mut policy = rack.clone();
        policy["targetReplicatedJob"] = json!("workers");
        let both = spec(json!({"replicatedJobPolicies": [policy]}), Some(rack));
        let err = JobSetSpec::validate_cel(&both, None).unwrap_err();
        assert!(format!("{err:?}").contains("not both"), "{err:?}");
    }

    #[test]
    fn targets_must_exist_and_root_name_is_reserved() {
        let dangling = spec(
            json!({"replicatedJobPolicies": [{"targetReplicatedJob": "nope"}]}),
            None,
        );
        let err = JobSetSpec::validate_cel(&dangling, None).unwrap_err();
        assert!(format!("{err:?}").contains("must name a replicated job"), "{err:?}");
        let reserved =
            json!({"replicatedJobs": [{"name": "jobset", "replicas": 1, "template": {"spec": {"template": {}}}}]});
        assert!(JobSetSpec::validate_cel(&reserved, None).is_err());
    }

    fn gang(min: i32) -> serde_json::Value {
        json!({"schedulingPolicy": {"gang": {"minCount": min}}})
    }

    fn rejected(new: &serde_json::Value, old: &serde_json::Value, expected: &str) {
        let err = JobSetSpec::validate_cel(new, Some(old)).expect_err(expected);
        assert!(format!("{err:?}").contains(expected), "{err:?}");
    }

    #[test]
    fn a_gang_min_count_may_change_after_creation() {
        let old = spec(json!({"schedulingPolicy": {"basic": {}}}), Some(gang(2)));
        assert!(JobSetSpec::validate_cel(&old, Some(&old)).is_ok());
        let new = spec(json!({"schedulingPolicy": {"basic": {}}}), Some(gang(1)));
        assert!(JobSetSpec::validate_cel(&new, Some(&old)).is_ok());
        let mut policy = gang(2);
        policy["targetReplicatedJob"] = json!("workers");
        let old_b = spec(json!({"replicatedJobPolicies": [policy.clone()]}), None);
        policy["schedulingPolicy"]["gang"]["minCount"] = json!(1);
        let new_b = spec(json!({"replicatedJobPolicies": [policy]}), None);
        assert!(JobSetSpec::validate_cel(&new_b, Some(&old_b)).is_ok());
        // A transition rule does not hold back creation.
        assert!(JobSetSpec::validate_cel(&new_b, None).is_ok());
    }

    #[test]
    fn other_edits_after_creation_are_rejected() {
        let old = spec(json!({"schedulingPolicy": {"basic": {}}}), Some(gang(2)));
        let mut more = old.clone();
        more["replicatedJobs"][1]["replicas"] = json!(3);
        rejected(&more, &old, "names, order and replicas");
        let mut renamed = old.clone();
        renamed["replicatedJobs"][1]["name"] = json!("trainers");
        rejected(&renamed, &old, "names, order and replicas");
        let mut image = old.clone();
        image["replicatedJobs"][1]["template"]["spec"]["template"] = json!({"spec": {"containers": [{"name": "c"}]}});
        rejected(&image, &old, "pod template is immutable");
        let mut wider = old.clone();
        wider["replicatedJobs"][1]["template"]["spec"]["parallelism"] = json!(4);
        rejected(&wider, &old, "parallelism");
        let basic = spec(
            json!({"schedulingPolicy": {"basic": {}}}),
            Some(json!({"schedulingPolicy": {"basic": {}}})),
        );
        rejected(&basic, &old, "except the gang's minCount");
        let racked = spec(
            json!({"schedulingPolicy": {"basic": {}}}),
            Some(json!({"schedulingPolicy": {"gang": {"minCount": 2}},
                "schedulingConstraints": {"topology": [{"key": "kwas.dev/rack"}]}})),
        );
        rejected(&racked, &old, "except the gang's minCount");
        let root_gang = spec(
            json!({"schedulingPolicy": {"gang": {"minGroupCount": 2}}}),
            Some(gang(2)),
        );
        rejected(&root_gang, &old, "spec.scheduling is immutable");
        let unset = spec(json!(null), Some(gang(2)));
        let mut unset = unset;
        unset.as_object_mut().unwrap().remove("scheduling");
        rejected(&unset, &old, "spec.scheduling is immutable");
    }

    #[test]
    fn child_names() {
        assert_eq!(child_job_name("pretrain", "workers", 3), "pretrain-workers-3");
    }
}
