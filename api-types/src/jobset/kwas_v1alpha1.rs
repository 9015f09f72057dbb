//! kwas' earlier JobSet, `jobsets.kwas.dev/v1alpha1` (retired; see [`super`]): replicated jobs (name,
//! replicas, template), `successPolicy` (operator `All`), `failurePolicy.maxRestarts`, `suspend` and
//! `scheduling`. Kept for its conversion to `jobset.x-k8s.io/v1alpha2` ([`super::v1alpha2::convert`]),
//! which `kwas convert` applies to manifests; no component serves or reconciles it.

use k8s_openapi::api::batch::v1::JobTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::{CustomResource, KubeSchema};
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};

use super::{
    JobSetScheduling, job_template_schema_with_rules, same, scheduling_transition_rule,
    template_scheduling_transition_rule,
};

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

    /// How many Jobs to create from the template. Default 1; at most [`super::MAX_CHILD_JOBS`], and the sum over
    /// the replicated jobs too.
    #[serde(default = "one")]
    #[schemars(range(min = 0, max = 10000))]
    pub replicas: i32,

    /// The batch/v1 Job template. Its `spec.scheduling` is Option A's per-replicated-job intent.
    #[schemars(schema_with = "job_template_schema")]
    pub template: JobTemplateSpec,
}

fn one() -> i32 {
    1
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

/// A structural schema for the Job template that spells out the fields the JobSet's rules read
/// (`spec.scheduling`, `spec.parallelism`, `spec.completions`, ...) and preserves the rest unvalidated, so the
/// CRD stays small enough for client-side `kubectl apply`. The Job controller and the API server validate
/// the Jobs themselves when they are created.
fn job_template_schema(generator: &mut SchemaGenerator) -> Schema {
    job_template_schema_with_rules(generator, template_transition_rules())
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
        assert_eq!(
            super::super::child_job_name("pretrain", "workers", 3),
            "pretrain-workers-3"
        );
    }
}
