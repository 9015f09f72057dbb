//! `jobset.x-k8s.io/v1`: the JobSet project's newer API version (kubernetes-sigs/jobset commit `8f2f5a24`,
//! "Add conversion webhook for v1"), served next to [`super::v1alpha2`] with the project's conversion.
//!
//! v1 is v1alpha2 without `spec.startupPolicy` (deprecated upstream in favour of `dependsOn`): converting
//! v1alpha2 to v1 moves a set `startupPolicy` into the annotation [`STARTUP_POLICY_ANNOTATION`] (its JSON,
//! base64-encoded), and converting v1 to v1alpha2 restores it from there, as upstream's
//! `api/jobset/v1alpha2/jobset_conversion.go` does. Everything else is the same type ([`JobSetSpec`] reuses
//! every v1alpha2 type under it), the same CRD rules (but the StartupPolicy/DependsOn exclusivity, which
//! has nothing to check in v1) and the same kwas `spec.scheduling` block.
//!
//! [`convert`] is the conversion on JSON objects (what a conversion webhook receives) and [`review`]
//! answers a `ConversionReview` as kube-apiserver sends it to a CRD's conversion webhook. kwas' controllers
//! serve [`review`] at `/convert` (`kwas controllers --webhook-addr`); devcluster calls it in-process.
//!
//! Deviations from upstream's conversion, and why:
//! - **Nothing is dropped.** Upstream's `ConvertTo`/`ConvertFrom` copy the fields one by one and miss some
//!   (`onJobFailureMessagePatterns`, `volumeClaimPolicies`, `replicatedJobsStatus` counts written into a
//!   nil slice); kwas converts the whole object and changes only `apiVersion`, `spec.startupPolicy` and the
//!   annotation, so a round trip through either version gives the object back.
//! - **A malformed annotation is an error with a field path**, not a panic of the webhook: a v1 object
//!   whose annotation is not base64 of a `StartupPolicy` fails conversion, so kube-apiserver refuses to
//!   store it.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use kube::core::Status;
use kube::core::conversion::{ConversionRequest, ConversionResponse, ConversionReview};
use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::v1alpha2::StartupPolicy;
pub use super::v1alpha2::{
    Coordinator, DependsOn, DependsOnStatus, FailurePolicy, FailurePolicyAction, FailurePolicyRule,
    JobSetRestartStrategy, JobSetStatus, Network, Operator, ReplicatedJob, ReplicatedJobStatus, SuccessPolicy,
    VolumeClaimPolicy,
};
use crate::jobset::{JobSetScheduling, scheduling_transition_rule, v1alpha2_templates_transition_rule};

/// The API group.
pub const GROUP: &str = "jobset.x-k8s.io";
/// The API version.
pub const VERSION: &str = "v1";
/// `apiVersion` of the kind.
pub const API_VERSION: &str = "jobset.x-k8s.io/v1";

/// The annotation that carries a v1alpha2 `spec.startupPolicy` on a v1 object (`StartupPolicyAnnotation`):
/// the policy's JSON, base64-encoded (standard alphabet, padded).
pub const STARTUP_POLICY_ANNOTATION: &str = "jobset.sigs.k8s.io/startup-policy";

/// The message of upstream's `self == oldSelf` rules.
const IMMUTABLE: &str = "Value is immutable";

/// The desired state of a JobSet: a group of replicated batch/v1 Jobs.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[kube(
    group = "jobset.x-k8s.io",
    version = "v1",
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

/// Why a JobSet could not be converted: the field at fault and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct ConversionError {
    /// The field path (`metadata.annotations[jobset.sigs.k8s.io/startup-policy]`, `apiVersion`, ...).
    pub field: String,
    /// What is wrong.
    pub message: String,
}

fn error(field: &str, message: impl Into<String>) -> ConversionError {
    ConversionError {
        field: field.to_string(),
        message: message.into(),
    }
}

/// Converts a JobSet object (`jobset.x-k8s.io/v1alpha2` or `jobset.x-k8s.io/v1`) to `desired` (one of
/// the two). An object already in `desired` comes back unchanged; any other `apiVersion` or `kind`, or a
/// malformed startup policy, is an error.
pub fn convert(mut obj: Value, desired: &str) -> Result<Value, ConversionError> {
    let from = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("").to_string();
    if obj.get("kind").and_then(Value::as_str) != Some("JobSet") {
        return Err(error("kind", "must be JobSet"));
    }
    let served = [super::v1alpha2::API_VERSION, API_VERSION];
    if !served.contains(&from.as_str()) {
        return Err(error(
            "apiVersion",
            format!("unsupported version {from:?}: expected one of {served:?}"),
        ));
    }
    if !served.contains(&desired) {
        return Err(error(
            "desiredAPIVersion",
            format!("unsupported version {desired:?}: expected one of {served:?}"),
        ));
    }
    let Some(map) = obj.as_object_mut() else {
        return Err(error("", "must be an object"));
    };
    if from == desired {
        return Ok(obj);
    }
    if desired == API_VERSION {
        // v1alpha2 -> v1 (`ConvertTo`): a set startupPolicy moves into the annotation.
        let policy = map
            .get_mut("spec")
            .and_then(Value::as_object_mut)
            .and_then(|spec| spec.remove("startupPolicy"))
            .filter(|p| !p.is_null());
        if let Some(policy) = policy {
            let policy: StartupPolicy = serde_json::from_value(policy)
                .map_err(|e| error("spec.startupPolicy", format!("not a StartupPolicy: {e}")))?;
            let json = serde_json::to_string(&policy).map_err(|e| error("spec.startupPolicy", e.to_string()))?;
            let metadata = map
                .entry("metadata")
                .or_insert_with(|| Value::Object(Default::default()));
            let annotations = metadata
                .as_object_mut()
                .ok_or_else(|| error("metadata", "must be an object"))?
                .entry("annotations")
                .or_insert_with(|| Value::Object(Default::default()));
            annotations
                .as_object_mut()
                .ok_or_else(|| error("metadata.annotations", "must be an object"))?
                .insert(
                    STARTUP_POLICY_ANNOTATION.to_string(),
                    Value::String(STANDARD.encode(json)),
                );
        }
    } else {
        // v1 -> v1alpha2 (`ConvertFrom`): the annotation, when set, restores startupPolicy.
        let encoded = map
            .get("metadata")
            .and_then(|m| m.get("annotations"))
            .and_then(|a| a.get(STARTUP_POLICY_ANNOTATION))
            .and_then(Value::as_str)
            .unwrap_or("");
        if !encoded.is_empty() {
            let field = format!("metadata.annotations[{STARTUP_POLICY_ANNOTATION}]");
            let decoded = STANDARD
                .decode(encoded)
                .map_err(|e| error(&field, format!("not base64: {e}")))?;
            let policy: StartupPolicy = serde_json::from_slice(&decoded)
                .map_err(|e| error(&field, format!("not the JSON of a StartupPolicy: {e}")))?;
            let policy = serde_json::to_value(policy).map_err(|e| error(&field, e.to_string()))?;
            let spec = map.entry("spec").or_insert_with(|| Value::Object(Default::default()));
            spec.as_object_mut()
                .ok_or_else(|| error("spec", "must be an object"))?
                .insert("startupPolicy".to_string(), policy);
        }
    }
    map.insert("apiVersion".to_string(), Value::String(desired.to_string()));
    Ok(obj)
}

/// Answers a `ConversionReview` as a CRD's conversion webhook does: every object converted to the
/// request's `desiredAPIVersion`, in order, or a failure naming the first object that could not be (and
/// no objects). A review without a request gets a failure with an empty `uid`.
pub fn review(review: ConversionReview) -> ConversionReview {
    let request = match ConversionRequest::from_review(review) {
        Ok(r) => r,
        Err(e) => return ConversionResponse::invalid(Status::failure(&e.to_string(), "BadRequest")).into_review(),
    };
    let desired = request.desired_api_version.clone();
    let objects = request.objects.clone();
    let response = ConversionResponse::for_request(request);
    let mut converted = Vec::with_capacity(objects.len());
    for (i, obj) in objects.into_iter().enumerate() {
        let name = obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        match convert(obj, &desired) {
            Ok(o) => converted.push(o),
            Err(e) => {
                let message = format!("converting object {i} ({name:?}) to {desired}: {e}");
                return response.failure(Status::failure(&message, "Invalid")).into_review();
            }
        }
    }
    response.success(converted).into_review()
}

#[cfg(test)]
mod tests;
