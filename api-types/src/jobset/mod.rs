//! JobSets: groups of replicated batch/v1 Jobs scheduled as one hierarchy.
//!
//! The JobSet kwas serves and reconciles is the JobSet project's own API, `jobset.x-k8s.io/v1alpha2`
//! ([`v1alpha2`], re-exported here: [`JobSet`] is `jobset.x-k8s.io/v1alpha2`'s), with KEP-6089's
//! `spec.scheduling` block. The CRD ([`crd`]) serves the project's newer `jobset.x-k8s.io/v1` ([`v1`]) too,
//! converted by webhook; v1alpha2 stays the storage version and the version the controller reads. Scheduling intent can be given both ways KEP-6089 describes:
//! - **Option A** (template delegation): the root block `spec.scheduling` for the whole JobSet, and each
//!   replicated job's own `template.spec.scheduling` (the Job API's block) for its Jobs;
//! - **Option B** (targeted policies): everything in `spec.scheduling`, with `replicatedJobPolicies` naming
//!   the replicated job each policy applies to.
//!
//! Setting both for one replicated job is rejected (KEP-6089 "Conflict Validation"), as is a policy whose
//! target names no replicated job. Those rules are CEL validations in the CRD schema and are checked again
//! by the controller with field paths.
//!
//! [`kwas_v1alpha1`] is kwas' earlier JobSet (`jobsets.kwas.dev/v1alpha1`, a subset of the fields). It is
//! retired: no kwas component serves or reconciles it any more, and its CRD is not installed. Its type
//! stays, with a lossless conversion to `jobset.x-k8s.io/v1alpha2`, so `kwas convert` can rewrite its
//! manifests. Why retired rather than kept served: two served groups with one kind and one plural make
//! `kubectl get jobsets` name only one of them, a controller for both would need two watches and two sets
//! of tests for one behaviour, and nothing outside kwas (Kueue, Kubeflow Trainer, the JobSet project's
//! tooling) speaks `kwas.dev`.
//!
//! ```
//! use kwas_api_types::jobset::JobSet;
//! let js: JobSet = serde_json::from_value(serde_json::json!({
//!     "apiVersion": "jobset.x-k8s.io/v1alpha2",
//!     "kind": "JobSet",
//!     "metadata": {"name": "pretrain"},
//!     "spec": {
//!         "scheduling": {"schedulingPolicy": {"basic": {}}},
//!         "replicatedJobs": [{"name": "workers", "replicas": 2, "template": {"spec": {"template": {"spec": {"containers": []}}}}}]
//!     }
//! })).unwrap();
//! assert_eq!(js.spec.replicated_jobs[0].replicas, 2);
//! ```

use k8s_openapi::api::scheduling::v1alpha3::{
    WorkloadPodGroupDisruptionMode, WorkloadPodGroupResourceClaim, WorkloadPodGroupSchedulingConstraints,
    WorkloadPodGroupSchedulingPolicy,
};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

pub mod kwas_v1alpha1;
pub mod v1;
pub mod v1alpha2;

pub use v1alpha2::{
    Coordinator, DependsOn, DependsOnStatus, FailurePolicy, FailurePolicyAction, FailurePolicyRule, JobSet,
    JobSetRestartStrategy, JobSetSpec, JobSetStatus, Network, Operator, ReplicatedJob, ReplicatedJobStatus,
    StartupPolicy, StartupPolicyOptions, SuccessPolicy,
};

use crate::composite::{
    WorkloadCompositePodGroupDisruptionMode, WorkloadCompositePodGroupSchedulingConstraints,
    WorkloadCompositePodGroupSchedulingPolicy,
};

/// The most replicated jobs a JobSet may have (one PodGroupTemplate each, and a composite template holds at
/// most 8).
pub const MAX_REPLICATED_JOBS: usize = 8;

/// The name of the root template of a JobSet's Workload; no replicated job may use it.
pub const ROOT_TEMPLATE_NAME: &str = "jobset";

/// The most child Jobs one JobSet may have: each replicated job's `replicas` and their sum are bounded by it
/// (the schema, and the controller again), so a JobSet's reconcile does bounded work.
pub const MAX_CHILD_JOBS: i32 = 10_000;

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

/// The transition rule of a Job template's `spec.scheduling`: set or unset for good, and fixed but for the
/// gang's `minCount`.
/// The `jobset.x-k8s.io/v1alpha2` rule for what upstream's webhook checks on update of the Job templates:
/// immutable (metadata, pod template, `parallelism`, `completions`, `completionMode`, `backoffLimit`)
/// unless the JobSet is or was suspended (upstream then lets Kueue change the pod templates).
fn v1alpha2_templates_transition_rule() -> String {
    let spec_fields = ["parallelism", "completions", "completionMode", "backoffLimit"]
        .iter()
        .map(|f| same("o.template.spec", "r.template.spec", f))
        .collect::<Vec<_>>()
        .join(" && ");
    format!(
        "(has(self.suspend) && self.suspend) || (has(oldSelf.suspend) && oldSelf.suspend) || \
         !has(self.replicatedJobs) || !has(oldSelf.replicatedJobs) || \
         self.replicatedJobs.all(r, oldSelf.replicatedJobs.exists(o, o.name == r.name && {} && \
         o.template.spec.template == r.template.spec.template && {spec_fields}))",
        same("o.template", "r.template", "metadata"),
    )
}

fn template_scheduling_transition_rule() -> serde_json::Value {
    serde_json::json!({
        "rule": format!(
            "has(self.spec.scheduling) == has(oldSelf.spec.scheduling) && (!has(self.spec.scheduling) || {})",
            same_but_min_count("self.spec.scheduling", "oldSelf.spec.scheduling", true)),
        "message": "spec.scheduling is immutable, except the gang's minCount",
        "fieldPath": ".spec.scheduling",
    })
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

/// The name of the `index`-th Job of replicated job `replicated_job` of JobSet `jobset`.
pub fn child_job_name(jobset: &str, replicated_job: &str, index: i32) -> String {
    format!("{jobset}-{replicated_job}-{index}")
}

/// Condition types and reasons of a JobSet: the JobSet project's (re-exported from
/// [`v1alpha2::constants::conditions`]) and kwas' own.
pub mod conditions {
    pub use super::v1alpha2::constants::conditions::*;
    /// Reason (kwas): the scheduling configuration is invalid.
    pub const REASON_INVALID_SCHEDULING: &str = "InvalidSchedulingConfiguration";
    /// Condition type (kwas): the last edit of a running JobSet changes what its Workload cannot change
    /// (anything but a gang `minCount`) or does not compile: it is not applied, nothing is created or
    /// deleted, and the JobSet's Jobs keep running until the edit is reverted. Admission rejects such edits
    /// (the CRD's transition rules); this condition covers a cluster whose CRD lacks them.
    pub const SCHEDULING_UPDATE_REJECTED: &str = "SchedulingUpdateRejected";
    /// Reason (kwas): the edit changes a field of the Workload that is immutable.
    pub const REASON_IMMUTABLE_FIELD: &str = "ImmutableSchedulingField";
    /// Condition type (kwas): the cluster serves no CompositePodGroups, so the JobSet runs with flat gangs:
    /// each replicated job's Jobs are gangs of their own (PodGroups without a parent) and nothing holds
    /// the replicated jobs together; the message names what of `spec.scheduling` is not applied. Also
    /// the reason of the Warning event that says so.
    pub const FLAT_SCHEDULING: &str = "FlatScheduling";
    /// Reason (kwas) of [`FLAT_SCHEDULING`]: the API server does not serve
    /// `scheduling.k8s.io/compositepodgroups`.
    pub const REASON_COMPOSITE_NOT_SERVED: &str = "CompositePodGroupsNotServed";
}

/// The namespace, name, port and path of the Service in front of kwas' controllers' conversion webhook,
/// which [`crd`] names (`deploy/controllers/webhook.yaml` creates it).
pub const CONVERSION_WEBHOOK: (&str, &str, i32, &str) = ("kwas-system", "kwas-controllers-webhook", 443, "/convert");

/// The JobSet CRD kwas installs (standalone): `jobset.x-k8s.io/v1alpha2` (the storage version, as
/// upstream) and `jobset.x-k8s.io/v1`, both served, converted by kwas' controllers' webhook
/// ([`CONVERSION_WEBHOOK`], [`v1::review`]; `conversionReviewVersions: [v1]`). cert-manager's CA injector
/// fills in the webhook's `caBundle` from the Certificate named in the `cert-manager.io/inject-ca-from`
/// annotation (`deploy/controllers/webhook.yaml`).
pub fn crd() -> k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
        CustomResourceConversion, ServiceReference, WebhookClientConfig, WebhookConversion,
    };
    use kube::CustomResourceExt;
    let (namespace, name, port, path) = CONVERSION_WEBHOOK;
    let mut crd = match kube::core::crd::merge_crds(vec![v1alpha2::JobSet::crd(), v1::JobSet::crd()], v1alpha2::VERSION)
    {
        Ok(crd) => crd,
        // Both CRDs come from this crate's types with one group, kind and version each: merging cannot
        // fail; if it ever did, the storage version alone is still a working CRD.
        Err(_) => v1alpha2::JobSet::crd(),
    };
    crd.metadata
        .annotations
        .get_or_insert_default()
        .insert("cert-manager.io/inject-ca-from".into(), format!("{namespace}/{name}"));
    crd.spec.conversion = Some(CustomResourceConversion {
        strategy: "Webhook".into(),
        webhook: Some(WebhookConversion {
            client_config: Some(WebhookClientConfig {
                service: Some(ServiceReference {
                    namespace: namespace.into(),
                    name: name.into(),
                    port: Some(port),
                    path: Some(path.into()),
                }),
                ..WebhookClientConfig::default()
            }),
            conversion_review_versions: vec!["v1".into()],
        }),
    });
    crd
}
