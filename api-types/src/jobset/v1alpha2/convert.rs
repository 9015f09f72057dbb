//! Conversions between kwas' own `jobsets.kwas.dev/v1alpha1` ([`crate::jobset::kwas_v1alpha1`]) and
//! `jobset.x-k8s.io/v1alpha2`, so the controller can work on v1alpha2 while kwas.dev objects keep working.
//!
//! **kwas.dev/v1alpha1 → v1alpha2** loses nothing: every v1alpha1 field has a v1alpha2 counterpart
//! (`failurePolicy.maxRestarts` with no rules is upstream's default restart-the-JobSet behaviour;
//! `groupName` becomes `default`). The v1alpha2 fields v1alpha1 lacks stay unset, which
//! [`super::defaults::default_jobset`] then defaults as upstream's webhook would.
//!
//! **v1alpha2 → kwas.dev/v1alpha1** keeps the replicated jobs (name, replicas, template), `suspend`,
//! `successPolicy.targetReplicatedJobs`, `failurePolicy.maxRestarts`, `scheduling`, and the status counts,
//! conditions, restarts and kwas fields; it drops what v1alpha1 cannot say, which
//! [`v1alpha1_losses`] lists for a given spec:
//! - `network`, `startupPolicy`, `coordinator`, `managedBy`, `ttlSecondsAfterFinished`,
//!   `volumeClaimPolicies`;
//! - each replicated job's `groupName` (other than `default`) and `dependsOn`;
//! - `successPolicy.operator: Any` (v1alpha1 knows only `All`);
//! - `failurePolicy.restartStrategy` (other than `Recreate`) and `failurePolicy.rules`;
//! - status `restartsCountTowardsMax`, `terminalState`, `jobRestarts`, `jobRestartsCountTowardsMax` and
//!   the in-place restart attempts.
//!
//! A v1alpha2 JobSet within v1alpha1's bounds (at most 8 replicated jobs, at most 10,000 Jobs) converts to
//! a valid v1alpha1 one; beyond them the result is what the kwas.dev CRD would reject.

use crate::jobset::kwas_v1alpha1 as v1alpha1;

use super::{
    DEFAULT_GROUP_NAME, FailurePolicy, JobSet, JobSetRestartStrategy, JobSetSpec, JobSetStatus, Operator,
    ReplicatedJob, ReplicatedJobStatus, SuccessPolicy,
};

impl From<v1alpha1::JobSet> for JobSet {
    fn from(js: v1alpha1::JobSet) -> Self {
        JobSet {
            metadata: js.metadata,
            spec: js.spec.into(),
            status: js.status.map(Into::into),
        }
    }
}

impl From<v1alpha1::JobSetSpec> for JobSetSpec {
    fn from(spec: v1alpha1::JobSetSpec) -> Self {
        JobSetSpec {
            replicated_jobs: spec.replicated_jobs.into_iter().map(Into::into).collect(),
            suspend: spec.suspend,
            success_policy: spec.success_policy.map(|s| SuccessPolicy {
                operator: if s.operator == "Any" {
                    Operator::Any
                } else {
                    Operator::All
                },
                target_replicated_jobs: s.target_replicated_jobs,
            }),
            failure_policy: spec.failure_policy.map(|f| FailurePolicy {
                max_restarts: f.max_restarts,
                restart_strategy: JobSetRestartStrategy::Recreate,
                rules: Vec::new(),
            }),
            scheduling: spec.scheduling,
            ..Default::default()
        }
    }
}

impl From<v1alpha1::ReplicatedJob> for ReplicatedJob {
    fn from(r: v1alpha1::ReplicatedJob) -> Self {
        ReplicatedJob {
            name: r.name,
            group_name: DEFAULT_GROUP_NAME.to_string(),
            template: r.template,
            replicas: r.replicas,
            depends_on: Vec::new(),
        }
    }
}

impl From<v1alpha1::JobSetStatus> for JobSetStatus {
    fn from(s: v1alpha1::JobSetStatus) -> Self {
        JobSetStatus {
            conditions: s.conditions.unwrap_or_default(),
            restarts: s.restarts,
            replicated_jobs_status: s
                .replicated_jobs_status
                .into_iter()
                .map(|r| ReplicatedJobStatus {
                    name: r.name,
                    ready: r.ready,
                    succeeded: r.succeeded,
                    failed: r.failed,
                    active: r.active,
                    suspended: r.suspended,
                    ..Default::default()
                })
                .collect(),
            workload_name: s.workload_name,
            composite_pod_group_name: s.composite_pod_group_name,
            observed_generation: s.observed_generation,
            ..Default::default()
        }
    }
}

impl From<JobSet> for v1alpha1::JobSet {
    fn from(js: JobSet) -> Self {
        v1alpha1::JobSet {
            metadata: js.metadata,
            spec: js.spec.into(),
            status: js.status.map(Into::into),
        }
    }
}

impl From<JobSetSpec> for v1alpha1::JobSetSpec {
    fn from(spec: JobSetSpec) -> Self {
        v1alpha1::JobSetSpec {
            replicated_jobs: spec
                .replicated_jobs
                .into_iter()
                .map(|r| v1alpha1::ReplicatedJob {
                    name: r.name,
                    replicas: r.replicas,
                    template: r.template,
                })
                .collect(),
            suspend: spec.suspend,
            success_policy: spec.success_policy.map(|s| v1alpha1::SuccessPolicy {
                operator: "All".to_string(),
                target_replicated_jobs: s.target_replicated_jobs,
            }),
            failure_policy: spec.failure_policy.map(|f| v1alpha1::FailurePolicy {
                max_restarts: f.max_restarts,
            }),
            scheduling: spec.scheduling,
        }
    }
}

impl From<JobSetStatus> for v1alpha1::JobSetStatus {
    fn from(s: JobSetStatus) -> Self {
        v1alpha1::JobSetStatus {
            conditions: (!s.conditions.is_empty()).then_some(s.conditions),
            restarts: s.restarts,
            replicated_jobs_status: s
                .replicated_jobs_status
                .into_iter()
                .map(|r| v1alpha1::ReplicatedJobStatus {
                    name: r.name,
                    ready: r.ready,
                    succeeded: r.succeeded,
                    failed: r.failed,
                    active: r.active,
                    suspended: r.suspended,
                })
                .collect(),
            workload_name: s.workload_name,
            composite_pod_group_name: s.composite_pod_group_name,
            observed_generation: s.observed_generation,
        }
    }
}

/// The spec fields (JSON paths) whose values converting `spec` to kwas.dev/v1alpha1 drops; empty when the
/// conversion keeps everything.
pub fn v1alpha1_losses(spec: &JobSetSpec) -> Vec<String> {
    let mut lost = Vec::new();
    let mut note = |set: bool, path: &str| {
        if set {
            lost.push(path.to_string());
        }
    };
    note(spec.network.is_some(), "spec.network");
    note(spec.startup_policy.is_some(), "spec.startupPolicy");
    note(spec.coordinator.is_some(), "spec.coordinator");
    note(spec.managed_by.is_some(), "spec.managedBy");
    note(
        spec.ttl_seconds_after_finished.is_some(),
        "spec.ttlSecondsAfterFinished",
    );
    note(!spec.volume_claim_policies.is_empty(), "spec.volumeClaimPolicies");
    let any = spec
        .success_policy
        .as_ref()
        .is_some_and(|s| s.operator == Operator::Any);
    note(any, "spec.successPolicy.operator");
    if let Some(fp) = &spec.failure_policy {
        note(
            fp.restart_strategy != JobSetRestartStrategy::Recreate,
            "spec.failurePolicy.restartStrategy",
        );
        note(!fp.rules.is_empty(), "spec.failurePolicy.rules");
    }
    for (i, r) in spec.replicated_jobs.iter().enumerate() {
        let grouped = !r.group_name.is_empty() && r.group_name != DEFAULT_GROUP_NAME;
        note(grouped, &format!("spec.replicatedJobs[{i}].groupName"));
        note(!r.depends_on.is_empty(), &format!("spec.replicatedJobs[{i}].dependsOn"));
    }
    lost
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobset::v1alpha2::{DependsOn, Network, StartupPolicy};
    use serde_json::json;

    fn kwas_dev() -> v1alpha1::JobSet {
        serde_json::from_value(json!({
            "apiVersion": "kwas.dev/v1alpha1",
            "kind": "JobSet",
            "metadata": {"name": "pretrain", "namespace": "ml"},
            "spec": {
                "suspend": true,
                "successPolicy": {"operator": "All", "targetReplicatedJobs": ["workers"]},
                "failurePolicy": {"maxRestarts": 3},
                "scheduling": {"schedulingPolicy": {"basic": {}},
                    "replicatedJobPolicies": [{"targetReplicatedJob": "workers", "schedulingPolicy": {"gang": {"minCount": 2}}}]},
                "replicatedJobs": [
                    {"name": "driver", "replicas": 1, "template": {"spec": {"template": {"spec": {"containers": []}}}}},
                    {"name": "workers", "replicas": 4, "template": {"spec": {"parallelism": 2, "template": {"spec": {"containers": []}}}}}
                ]
            },
            "status": {"restarts": 1, "workloadName": "pretrain", "compositePodGroupName": "pretrain-0",
                "observedGeneration": 2,
                "replicatedJobsStatus": [{"name": "workers", "ready": 1, "succeeded": 2, "failed": 0, "active": 3, "suspended": 0}]}
        }))
        .unwrap_or_default()
    }

    #[test]
    fn kwas_dev_round_trips_through_v1alpha2() {
        let old = kwas_dev();
        assert_eq!(old.spec.replicated_jobs.len(), 2);
        let new = JobSet::from(old.clone());
        assert!(
            v1alpha1_losses(&new.spec).is_empty(),
            "{:?}",
            v1alpha1_losses(&new.spec)
        );
        assert_eq!(new.spec.replicated_jobs[1].group_name, "default");
        assert_eq!(new.spec.failure_policy.as_ref().map(|f| f.max_restarts), Some(3));
        assert_eq!(
            new.status.as_ref().and_then(|s| s.workload_name.as_deref()),
            Some("pretrain")
        );
        assert_eq!(v1alpha1::JobSet::from(new), old);
    }

    #[test]
    fn what_kwas_dev_cannot_say_is_listed() {
        let mut js = JobSet::from(kwas_dev());
        js.spec.network = Some(Network::default());
        js.spec.startup_policy = Some(StartupPolicy::default());
        js.spec.managed_by = Some("example.com/x".to_string());
        js.spec.success_policy = Some(SuccessPolicy {
            operator: Operator::Any,
            target_replicated_jobs: Vec::new(),
        });
        js.spec.replicated_jobs[1].depends_on = vec![DependsOn {
            name: "driver".to_string(),
            status: crate::jobset::v1alpha2::DependsOnStatus::Ready,
        }];
        js.spec.replicated_jobs[1].group_name = "trainers".to_string();
        assert_eq!(
            v1alpha1_losses(&js.spec),
            [
                "spec.network",
                "spec.startupPolicy",
                "spec.managedBy",
                "spec.successPolicy.operator",
                "spec.replicatedJobs[1].groupName",
                "spec.replicatedJobs[1].dependsOn"
            ]
        );
        let old = v1alpha1::JobSet::from(js);
        assert_eq!(old.spec.success_policy.map(|s| s.operator).as_deref(), Some("All"));
    }
}
