//! Defaulting of `jobset.x-k8s.io/v1alpha2` JobSets, as upstream's mutating webhook
//! (`jobSetWebhook.Default` in `pkg/webhooks/jobset_webhook.go`) and CRD schema defaults apply it.

use k8s_openapi::api::batch::v1::JobSpec;
use k8s_openapi::api::core::v1::PodSpec;

use super::{
    DEFAULT_GROUP_NAME, JobSet, JobSetSpec, Network, Operator, RetentionPolicyType, StartupPolicy,
    StartupPolicyOptions, SuccessPolicy, VolumeRetentionPolicy,
};

/// The Job completion mode the webhook defaults to.
pub const INDEXED_COMPLETION: &str = "Indexed";
/// The pod restart policy the webhook defaults to.
pub const RESTART_POLICY_ON_FAILURE: &str = "OnFailure";

/// The name the webhook gives the `index`-th failure policy rule when it has none.
pub fn default_rule_name(index: usize) -> String {
    format!("failurePolicyRule{index}")
}

/// Upstream's mutating webhook (`Default`), in place:
/// - `successPolicy`: operator `All` targeting all replicated jobs;
/// - `startupPolicy`: `AnyOrder`;
/// - each Job template: `completionMode: Indexed`, pod `restartPolicy: OnFailure`;
/// - `network.enableDNSHostnames` and `network.publishNotReadyAddresses`: true;
/// - failure policy rules without a name: `failurePolicyRule<index>`;
/// - volume claim policies without a retention policy: `whenDeleted: Delete`.
///
/// `managedBy` stays unset (the built-in controller reconciles JobSets without it).
pub fn default_jobset(js: &mut JobSet) {
    default_spec(&mut js.spec);
}

/// [`default_jobset`] on a spec.
pub fn default_spec(spec: &mut JobSetSpec) {
    if spec.success_policy.is_none() {
        spec.success_policy = Some(SuccessPolicy {
            operator: Operator::All,
            target_replicated_jobs: Vec::new(),
        });
    }
    if spec.startup_policy.is_none() {
        spec.startup_policy = Some(StartupPolicy {
            startup_policy_order: StartupPolicyOptions::AnyOrder,
        });
    }
    for rjob in &mut spec.replicated_jobs {
        let job = rjob.template.spec.get_or_insert_with(JobSpec::default);
        if job.completion_mode.is_none() {
            job.completion_mode = Some(INDEXED_COMPLETION.to_string());
        }
        let pod = job.template.spec.get_or_insert_with(PodSpec::default);
        if pod.restart_policy.as_deref().is_none_or(str::is_empty) {
            pod.restart_policy = Some(RESTART_POLICY_ON_FAILURE.to_string());
        }
    }
    let network = spec.network.get_or_insert_with(Network::default);
    network.enable_dns_hostnames.get_or_insert(true);
    network.publish_not_ready_addresses.get_or_insert(true);
    if let Some(fp) = &mut spec.failure_policy {
        for (i, rule) in fp.rules.iter_mut().enumerate() {
            if rule.name.is_empty() {
                rule.name = default_rule_name(i);
            }
        }
    }
    for policy in &mut spec.volume_claim_policies {
        if policy.retention_policy.is_none() {
            policy.retention_policy = Some(VolumeRetentionPolicy {
                when_deleted: Some(RetentionPolicyType::Delete),
            });
        }
    }
}

/// The CRD schema's defaults (kubebuilder `+default` markers) on a spec built in code: serde applies them
/// when a JobSet is read, but a `Default`-built [`JobSetSpec`] has an empty `groupName`, and a retention
/// policy built without `whenDeleted` lacks it. (`replicas: 1` and `restartStrategy: Recreate` are the
/// Rust defaults already.)
pub fn apply_schema_defaults(spec: &mut JobSetSpec) {
    for rjob in &mut spec.replicated_jobs {
        if rjob.group_name.is_empty() {
            rjob.group_name = DEFAULT_GROUP_NAME.to_string();
        }
    }
    for policy in &mut spec.volume_claim_policies {
        if let Some(rp) = &mut policy.retention_policy {
            rp.when_deleted.get_or_insert(RetentionPolicyType::Delete);
        }
    }
}
