//! `jobset.x-k8s.io/v1alpha2`: the JobSet API of the JobSet project (kubernetes-sigs/jobset), as of its
//! commit `08dfbdfd` ("add a KEP for mutable suspended job resources"), plus KEP-6089's `spec.scheduling`
//! block, so manifests written for JobSet (and KEP-6089's JobSet examples) apply to kwas unchanged.
//!
//! What mirrors what upstream:
//! - [`JobSet`], [`JobSetSpec`], [`JobSetStatus`] and the types under them mirror
//!   `api/jobset/v1alpha2/jobset_types.go`: the same JSON names, optionality (Go pointers are `Option`,
//!   `omitempty` values are skipped when empty) and kubebuilder defaults (`groupName: default`,
//!   `replicas: 1`, `restartStrategy: Recreate`, `whenDeleted: Delete`), which serde applies on reading
//!   and the CRD states as schema defaults;
//! - `JobSet::crd()` (`kube::CustomResourceExt`) mirrors `config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml`: group, names
//!   (no short name, as upstream), the status subresource, printer columns and every CEL rule with its
//!   message (the `self == oldSelf` immutability of `network`, `successPolicy`, `failurePolicy`,
//!   `startupPolicy`, `volumeClaimPolicies` and `dependsOn`, the StartupPolicy/DependsOn exclusivity, no
//!   namespace in PVC templates);
//! - [`constants`] mirrors the well-known labels, annotations and reasons (`jobset_types.go`,
//!   `pkg/constants/constants.go`);
//! - [`defaults::default_jobset`] mirrors the mutating webhook's `Default` and
//!   [`defaults::apply_schema_defaults`] the CRD's defaults; [`validation::validate_create`] and
//!   [`validation::validate_update`] mirror the validating webhook (`pkg/webhooks/jobset_webhook.go`) with
//!   its field paths and messages, feature gates as [`validation::Features`]. The webhook's test tables
//!   (`pkg/webhooks/jobset_webhook_test.go`) are ported as unit tests named after the upstream cases;
//! - [`convert`]: conversions from and to kwas' own `jobsets.kwas.dev/v1alpha1` ([`crate::jobset::kwas_v1alpha1`]).
//!
//! The scheduling block ([`JobSetScheduling`]) is kwas.dev/v1alpha1's, with the v1.37 field names
//! (`schedulingPolicy`, `schedulingConstraints`, `disruptionMode`, `podGroupManagement`,
//! `replicatedJobPolicies[].targetReplicatedJob`; KEP-6089's examples spell the first two `policy` and
//! `constraints`), Option A (a replicated job's `template.spec.scheduling`) and Option B
//! (`replicatedJobPolicies`) both accepted, with the kwas.dev CRD's rules: targets must exist, not both
//! options for one replicated job, `spec.scheduling` and each template's `spec.scheduling` immutable but
//! for a gang's `minCount`.
//!
//! Deviations from upstream, and why:
//! - **Job and PVC templates are not spelled out in the schema.** Upstream's CRD inlines the full batch/v1
//!   JobTemplateSpec and PersistentVolumeClaim schemas (10,000 lines); kwas' schema spells out the fields
//!   its rules read and preserves the rest unvalidated (as the kwas.dev CRD does), so the CRD stays small
//!   enough for client-side `kubectl apply`; the API server validates the Jobs and PVCs when the controller
//!   creates them.
//! - **kwas has no mutating or validating webhook.** The CRD therefore adds CEL rules for the parts of the
//!   webhook's update validation a rule can state cheaply (`managedBy` immutable; the replicated jobs'
//!   names, order and replicas immutable; their Job templates immutable unless the JobSet is or was
//!   suspended, where upstream's webhook lets only the pod templates' labels, annotations, node selector,
//!   tolerations and scheduling gates change) and makes a failure policy rule's `name` optional (upstream's
//!   schema requires it, its mutating webhook names unnamed rules first); the controller is to apply
//!   [`defaults::default_jobset`] to what it reads and reject what [`validation::validate_create`] /
//!   [`validation::validate_update`] reject.
//! - **kwas additions and bounds**: `spec.scheduling`; at most 8 replicated jobs (a JobSet is one Workload
//!   whose root CompositePodGroupTemplate holds at most 8 PodGroupTemplates; the bound also keeps the CEL
//!   rules within kube-apiserver's cost budgets); at most 10,000 replicas per replicated job and in all
//!   (one reconcile's work is bounded by the number of child Jobs); replicated job names at most 63 characters (implied
//!   upstream by the generated Job names) and not `jobset` (the Workload's root template name); status
//!   `workloadName`, `compositePodGroupName` and `observedGeneration`. [`validation::validate_scheduling`]
//!   checks these with field paths.
//! - **The PVC template rule reads `t.metadata.__namespace__`**: upstream's rule reads
//!   `t.metadata.namespace`, which kube-apiserver cannot compile (`namespace` is a CEL reserved word, so
//!   the property is escaped), and errs when `templates` or `metadata` is absent; kwas' rule escapes the
//!   name and checks presence first. (kube's client-side `validate_cel` does not escape, so unit tests
//!   cannot exercise this rule.)
//! - `replicas: 0` is serialized (Go's `omitempty` drops it, and the schema default then turns it into 1).
//! - `coordinator.jobIndex`/`podIndex` (Go `int`) are `i64`.
//! - Validation that needs the cluster (an existing PVC of a volume claim template) takes the existing PVC
//!   specs as an argument instead of a client.
//!
//! ```
//! use kwas_api_types::jobset::v1alpha2::JobSet;
//! let js: JobSet = serde_json::from_value(serde_json::json!({
//!     "apiVersion": "jobset.x-k8s.io/v1alpha2",
//!     "kind": "JobSet",
//!     "metadata": {"name": "pretrain"},
//!     "spec": {
//!         "scheduling": {"schedulingPolicy": {"basic": {}}},
//!         "replicatedJobs": [{"name": "workers", "template": {"spec": {"template": {"spec": {"containers": []}}}}}]
//!     }
//! })).unwrap();
//! let workers = &js.spec.replicated_jobs[0];
//! assert_eq!((workers.replicas, workers.group_name.as_str()), (1, "default"));
//! ```

pub mod constants;
pub mod convert;
pub mod defaults;
pub(crate) use crate::field;
mod types;
pub mod validation;

pub use crate::jobset::{JobSetScheduling, PodGroupManagement, ReplicatedJobPolicy};
pub use constants::*;
pub use types::*;

/// The API group.
pub const GROUP: &str = "jobset.x-k8s.io";
/// The API version.
pub const VERSION: &str = "v1alpha2";
/// `apiVersion` of the kind.
pub const API_VERSION: &str = "jobset.x-k8s.io/v1alpha2";

impl JobSetSpec {
    /// The replicated job named `name`.
    pub fn replicated_job(&self, name: &str) -> Option<&ReplicatedJob> {
        self.replicated_jobs.iter().find(|r| r.name == name)
    }
}

/// The name of the `index`-th Job of replicated job `replicated_job` of JobSet `jobset`
/// (`placement.GenJobName`).
pub fn gen_job_name(jobset: &str, replicated_job: &str, index: i64) -> String {
    format!("{jobset}-{replicated_job}-{index}")
}

/// The name prefix of the pods of a Job (`placement.GenPodName`); the Job controller appends a random
/// 5-character suffix.
pub fn gen_pod_name(jobset: &str, replicated_job: &str, job_index: &str, pod_index: &str) -> String {
    format!("{jobset}-{replicated_job}-{job_index}-{pod_index}")
}

/// The subdomain (headless Service name) of a JobSet's pods: `spec.network.subdomain`, else the JobSet's
/// name (`controllers.GetSubdomain`).
pub fn subdomain<'a>(name: &'a str, spec: &'a JobSetSpec) -> &'a str {
    match &spec.network {
        Some(n) if !n.subdomain.is_empty() => &n.subdomain,
        _ => name,
    }
}

/// The stable network endpoint of the coordinator pod, the value of [`COORDINATOR_KEY`]
/// (`controllers.CoordinatorEndpoint`); `None` without a coordinator.
pub fn coordinator_endpoint(name: &str, spec: &JobSetSpec) -> Option<String> {
    let c = spec.coordinator.as_ref()?;
    Some(format!(
        "{name}-{}-{}-{}.{}",
        c.replicated_job,
        c.job_index,
        c.pod_index,
        subdomain(name, spec)
    ))
}

/// The name of the PVC created from a volume claim template (`controllers.GeneratePVCName`).
pub fn pvc_name(jobset: &str, template: &str) -> String {
    format!("{template}-{jobset}")
}

#[cfg(test)]
mod tests;
