//! Validation of `jobset.x-k8s.io/v1alpha2` JobSets as upstream's validating webhook does it
//! (`ValidateCreate`, `ValidateUpdate` in `pkg/webhooks/jobset_webhook.go`), as pure functions returning
//! [`FieldError`]s with upstream's field paths and messages, plus [`validate_scheduling`] for kwas'
//! scheduling block.
//!
//! Upstream's webhook reads its feature gates globally and the existing PVCs through a client; here they
//! are arguments ([`Features`], `existing_pvcs`).

use k8s_openapi::api::batch::v1::JobSpec;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

pub use super::field::{ErrorType, FieldError};
use super::field::{is_dns1035_label, is_dns1123_subdomain, is_domain_prefixed_path, is_valid_label_value};
use super::{
    COORDINATOR_KEY, FailurePolicyAction, JobSet, JobSetRestartStrategy, JobSetSpec, ReplicatedJob,
    RetentionPolicyType, coordinator_endpoint, gen_job_name, gen_pod_name, pvc_name,
};
use crate::jobset::{MAX_REPLICATED_JOBS, ROOT_TEMPLATE_NAME};

/// The feature gates of upstream's JobSet controller that change validation (all alpha, off by default).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Features {
    /// `InPlaceRestart`: the `InPlaceRestart` restart strategy.
    pub in_place_restart: bool,
    /// `RestartJob`: the `RestartJob` and `RestartJobAndIgnoreMaxRestarts` failure policy actions.
    pub restart_job: bool,
    /// `ElasticJobSet`: `parallelism` and `completions` of Indexed Jobs may change.
    pub elastic_jobset: bool,
}

/// The longest `managedBy`.
pub const MAX_MANAGED_BY_LENGTH: usize = 63;
/// The longest generated PVC name.
pub const MAX_VOLUME_CLAIM_LENGTH: usize = 63;
/// The most replicas of a replicated job when a rule restarts single Jobs (`jobRestarts` holds 1024).
pub const MAX_REPLICAS_PER_REPLICATED_JOB: i32 = 1024;
/// The job failure reasons a failure policy rule may name (batch/v1 Job condition reasons).
pub const VALID_ON_JOB_FAILURE_REASONS: [&str; 5] = [
    "BackoffLimitExceeded",
    "DeadlineExceeded",
    "FailedIndexes",
    "MaxFailedIndexesExceeded",
    "PodFailurePolicy",
];

const DNS1035_MAX_LENGTH_EXCEEDED: &str = "must be no more than 63 characters";
/// Upstream's message when a group name exceeds 63 characters.
pub const GROUP_NAME_TOO_LONG: &str = ".spec.replicatedJob[].groupName is too long, must be less than 63 characters";
/// Upstream's message when a generated Job name exceeds 63 characters.
pub const JOB_NAME_TOO_LONG: &str =
    "JobSet name is too long, job names generated for this JobSet will exceed 63 characters";
/// Upstream's message when a generated pod name exceeds 63 characters.
pub const POD_NAME_TOO_LONG: &str =
    "JobSet name is too long, pod names generated for this JobSet will exceed 63 characters";
/// Upstream's message when the subdomain exceeds 63 characters.
pub const SUBDOMAIN_TOO_LONG: &str = ".spec.network.subdomain is too long, must be less than 63 characters";

/// The name upstream validates generated names with: the name, else what the API server makes of
/// `generateName` (cut to 58 characters, plus 5 random ones; here a fixed `bcdfg`), else empty.
pub fn jobset_name_for_validation(meta: &ObjectMeta) -> String {
    match (meta.name.as_deref(), meta.generate_name.as_deref()) {
        (Some(name), _) if !name.is_empty() => name.to_string(),
        (_, Some(prefix)) if !prefix.is_empty() => {
            let cut: String = prefix.chars().take(58).collect();
            format!("{cut}bcdfg")
        }
        _ => String::new(),
    }
}

fn job_spec(r: &ReplicatedJob) -> Option<&JobSpec> {
    r.template.spec.as_ref()
}

fn pod_spec(r: &ReplicatedJob) -> Option<&PodSpec> {
    job_spec(r).and_then(|j| j.template.spec.as_ref())
}

fn is_indexed(job: Option<&JobSpec>) -> bool {
    job.and_then(|j| j.completion_mode.as_deref()) == Some("Indexed")
}

/// The DNS-1035 messages of `value`, the too-long one replaced by `too_long`.
fn dns1035_with(value: &str, too_long: &str) -> Vec<String> {
    is_dns1035_label(value)
        .into_iter()
        .map(|m| {
            if m.contains(DNS1035_MAX_LENGTH_EXCEEDED) {
                too_long.to_string()
            } else {
                m
            }
        })
        .collect()
}

/// `ValidateCreate`: what upstream's webhook rejects when a JobSet is created. `existing_pvcs` are the
/// PVCs of the JobSet's namespace (a volume claim template whose PVC exists must match it and retain it).
pub fn validate_create(js: &JobSet, features: &Features, existing_pvcs: &[PersistentVolumeClaim]) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let name = jobset_name_for_validation(&js.metadata);
    let spec = &js.spec;
    let restart_strategy = spec.failure_policy.as_ref().map(|f| f.restart_strategy);
    let in_place = restart_strategy == Some(JobSetRestartStrategy::InPlaceRestart);

    if !features.in_place_restart && in_place {
        errs.push(FieldError::internal(
            "InPlaceRestart restart strategy cannot be set when InPlaceRestart feature gate is disabled",
        ));
    }
    if spec.replicated_jobs.first().is_some_and(|r| !r.depends_on.is_empty()) {
        errs.push(FieldError::internal(
            "DependsOn can't be set for the first ReplicatedJob",
        ));
    }
    if let Some(subdomain) = spec
        .network
        .as_ref()
        .map(|n| n.subdomain.as_str())
        .filter(|s| !s.is_empty())
    {
        let path = "spec.network.subdomain";
        for m in is_dns1123_subdomain(subdomain) {
            errs.push(FieldError::invalid(path, subdomain, m));
        }
        for m in dns1035_with(subdomain, SUBDOMAIN_TOO_LONG) {
            errs.push(FieldError::invalid(path, subdomain, m));
        }
    }
    if let Some(manager) = &spec.managed_by {
        let path = "spec.managedBy";
        errs.extend(is_domain_prefixed_path(path, manager));
        if manager.len() > MAX_MANAGED_BY_LENGTH {
            errs.push(FieldError::too_long(path, manager, MAX_MANAGED_BY_LENGTH));
        }
    }

    let mut names: Vec<&str> = Vec::new();
    for (i, rjob) in spec.replicated_jobs.iter().enumerate() {
        let path = format!("spec.replicatedJobs[{i}]");
        names.push(&rjob.name);
        let job = job_spec(rjob);
        let parallelism = job.and_then(|j| j.parallelism).unwrap_or(1);
        if i64::from(parallelism) * i64::from(rjob.replicas) > i64::from(i32::MAX) {
            errs.push(FieldError::internal(format!(
                "the product of replicas and parallelism must not exceed {} for replicatedJob '{}'",
                i32::MAX,
                rjob.name
            )));
        }
        for m in dns1035_with(&rjob.group_name, GROUP_NAME_TOO_LONG) {
            errs.push(FieldError::invalid(format!("{path}.groupName"), &rjob.group_name, m));
        }
        let longest_job_name = gen_job_name(&name, &rjob.name, i64::from(rjob.replicas) - 1);
        for m in dns1035_with(&longest_job_name, JOB_NAME_TOO_LONG) {
            errs.push(FieldError::invalid(format!("{path}.name"), &longest_job_name, m));
        }
        if let (true, Some(completions)) = (is_indexed(job), job.and_then(|j| j.completions)) {
            let max_job = (i64::from(rjob.replicas) - 1).to_string();
            let max_pod = (i64::from(completions) - 1).to_string();
            let longest_pod_name = format!("{}-abcde", gen_pod_name(&name, &rjob.name, &max_job, &max_pod));
            for m in dns1035_with(&longest_pod_name, POD_NAME_TOO_LONG) {
                errs.push(FieldError::invalid(format!("{path}.name"), &longest_job_name, m));
            }
        }
        for dep in &rjob.depends_on {
            if !names.contains(&dep.name.as_str()) {
                errs.push(FieldError::internal(format!(
                    "replicatedJob: {} cannot depend on replicatedJob: {}",
                    rjob.name, dep.name
                )));
            }
        }
        if features.in_place_restart && in_place {
            validate_in_place_restart(&path, rjob, &mut errs);
        }
    }

    let target_jobs = spec.success_policy.iter().flat_map(|s| &s.target_replicated_jobs);
    for target in target_jobs {
        if !names.contains(&target.as_str()) {
            errs.push(FieldError::internal(format!(
                "invalid replicatedJob name '{target}' does not appear in .spec.ReplicatedJobs"
            )));
        }
    }
    validate_failure_policy(spec, &names, features, &mut errs);
    if spec.coordinator.is_some() {
        errs.extend(validate_coordinator(spec));
        errs.extend(validate_coordinator_label_value(&name, spec));
    }
    validate_volume_claim_policies(&js.metadata, spec, &name, existing_pvcs, &mut errs);
    errs
}

fn validate_in_place_restart(path: &str, rjob: &ReplicatedJob, errs: &mut Vec<FieldError>) {
    let job = job_spec(rjob);
    let backoff = job.and_then(|j| j.backoff_limit);
    if backoff != Some(i32::MAX) {
        errs.push(FieldError::invalid(
            format!("{path}.template.spec.backoffLimit"),
            backoff,
            format!(
                "replicatedJob {}: must be set to {} (MaxInt32) when in-place restart is enabled",
                rjob.name,
                i32::MAX
            ),
        ));
    }
    let replacement = job.and_then(|j| j.pod_replacement_policy.as_deref());
    if replacement != Some("Failed") {
        errs.push(FieldError::invalid(
            format!("{path}.template.spec.podReplacementPolicy"),
            replacement,
            format!(
                "replicatedJob {}: must be set to Failed when in-place restart is enabled",
                rjob.name
            ),
        ));
    }
    let (completions, parallelism) = (job.and_then(|j| j.completions), job.and_then(|j| j.parallelism));
    if completions.is_none() || parallelism.is_none() || completions != parallelism {
        errs.push(FieldError::invalid(
            format!("{path}.template.spec.completions"),
            completions,
            format!(
                "replicatedJob {}: completions and parallelism must be set and equal to each other when in-place restart is enabled",
                rjob.name
            ),
        ));
    }
}

/// A failure policy rule name: `^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`.
fn is_rule_name(name: &str) -> bool {
    let b = name.as_bytes();
    let Some((first, rest)) = b.split_first() else {
        return false;
    };
    first.is_ascii_alphabetic()
        && rest
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b',' | b':'))
        && rest.last().is_none_or(|c| c.is_ascii_alphanumeric() || *c == b'_')
}

fn validate_failure_policy(spec: &JobSetSpec, names: &[&str], features: &Features, errs: &mut Vec<FieldError>) {
    let Some(fp) = &spec.failure_policy else {
        return;
    };
    let restarts_jobs = fp.rules.iter().any(|r| {
        matches!(
            r.action,
            FailurePolicyAction::RestartJob | FailurePolicyAction::RestartJobAndIgnoreMaxRestarts
        )
    });
    if restarts_jobs {
        if !features.restart_job {
            errs.push(FieldError::internal(
                "RestartJob and RestartJobAndIgnoreMaxRestarts failure policy actions are not allowed when RestartJob feature gate is disabled",
            ));
            return;
        }
        if spec
            .replicated_jobs
            .iter()
            .any(|r| r.replicas > MAX_REPLICAS_PER_REPLICATED_JOB)
        {
            errs.push(FieldError::internal(format!(
                "JobSet cannot have a failure policy rule with RestartJob or RestartJobAndIgnoreMaxRestarts action and a replicated job with replicas > {MAX_REPLICAS_PER_REPLICATED_JOB}"
            )));
        }
    }
    let mut by_name: Vec<(&str, Vec<usize>)> = Vec::new();
    for (i, rule) in fp.rules.iter().enumerate() {
        let len = rule.name.len();
        if !(1..=128).contains(&len) {
            errs.push(FieldError::internal(format!(
                "invalid failure policy rule name of length {len}, the rule name must be at least 1 characters long and at most 128 characters long"
            )));
        }
        match by_name.iter_mut().find(|(n, _)| *n == rule.name) {
            Some((_, indices)) => indices.push(i),
            None => by_name.push((&rule.name, vec![i])),
        }
        if !is_rule_name(&rule.name) {
            errs.push(FieldError::internal(format!(
                "invalid failure policy rule name '{}', a failure policy rule name must start with an alphabetic character, optionally followed by a string of alphanumeric characters or '_,:', and must end with an alphanumeric character or '_'",
                rule.name
            )));
        }
        for target in &rule.target_replicated_jobs {
            if !names.contains(&target.as_str()) {
                errs.push(FieldError::internal(format!(
                    "invalid replicatedJob name '{target}' in failure policy does not appear in .spec.ReplicatedJobs"
                )));
            }
        }
        for reason in &rule.on_job_failure_reasons {
            if !VALID_ON_JOB_FAILURE_REASONS.contains(&reason.as_str()) {
                errs.push(FieldError::internal(format!(
                    "invalid job failure reason '{reason}' in failure policy is not a recognized job failure reason"
                )));
            }
        }
    }
    for (name, indices) in by_name.iter().filter(|(_, v)| v.len() > 1) {
        let list = indices.iter().map(ToString::to_string).collect::<Vec<_>>().join(" ");
        errs.push(FieldError::internal(format!(
            "rule names are not unique, rules with indices [{list}] all have the same name '{name}'"
        )));
    }
}

/// `validateCoordinator`: the first problem of the coordinator reference, if any.
fn validate_coordinator(spec: &JobSetSpec) -> Option<FieldError> {
    let c = spec.coordinator.as_ref()?;
    let Some(rjob) = spec.replicated_job(&c.replicated_job) else {
        return Some(FieldError::internal(format!(
            "coordinator replicatedJob {} does not exist",
            c.replicated_job
        )));
    };
    if c.job_index < 0 || c.job_index >= i64::from(rjob.replicas) {
        return Some(FieldError::internal(format!(
            "coordinator job index {} is invalid for replicatedJob {}",
            c.job_index, rjob.name
        )));
    }
    let job = job_spec(rjob);
    let Some(completions) = job.and_then(|j| j.completions).filter(|_| is_indexed(job)) else {
        return Some(FieldError::internal(
            "job for coordinator pod must be indexed completion mode, and completions number must be set",
        ));
    };
    if c.pod_index < 0 || c.pod_index >= i64::from(completions) {
        return Some(FieldError::internal(format!(
            "coordinator pod index {} is invalid for replicatedJob {} job index {}",
            c.pod_index, c.replicated_job, c.job_index
        )));
    }
    None
}

/// `validateCoordinatorLabelValue`: the coordinator endpoint must be a valid label value.
fn validate_coordinator_label_value(name: &str, spec: &JobSetSpec) -> Option<FieldError> {
    let value = coordinator_endpoint(name, spec)?;
    let problems = is_valid_label_value(&value);
    (!problems.is_empty()).then(|| {
        FieldError::internal(format!(
            "spec will lead to invalid label value {value:?} for coordinator label {COORDINATOR_KEY:?} (long JobSet / ReplicatedJob / SubDomain name?): {}",
            problems.join(", ")
        ))
    })
}

fn validate_volume_claim_policies(
    meta: &ObjectMeta,
    spec: &JobSetSpec,
    name: &str,
    existing_pvcs: &[PersistentVolumeClaim],
    errs: &mut Vec<FieldError>,
) {
    let mut claim_names: Vec<&str> = Vec::new();
    for (pi, policy) in spec.volume_claim_policies.iter().enumerate() {
        let path = format!("spec.volumeClaimPolicies[{pi}]");
        for (ti, template) in policy.templates.iter().enumerate() {
            let tpath = format!("{path}.template[{ti}]");
            let tname = template.metadata.name.as_deref().unwrap_or_default();
            if claim_names.contains(&tname) {
                errs.push(FieldError::invalid(
                    format!("{tpath}.name"),
                    tname,
                    "names must be unique for VolumeClaimPolicies template",
                ));
            }
            for m in is_dns1123_subdomain(tname) {
                errs.push(FieldError::invalid(format!("{tpath}.name"), tname, m));
            }
            let pvc = pvc_name(name, tname);
            if pvc.len() > MAX_VOLUME_CLAIM_LENGTH {
                errs.push(FieldError::invalid(
                    format!("{tpath}.name"),
                    tname,
                    "VolumeClaimPolicies template name is too long",
                ));
            }
            validate_replicated_jobs_volume_claims(&spec.replicated_jobs, tname, errs);
            let existing = existing_pvcs.iter().find(|p| {
                p.metadata.name.as_deref() == Some(pvc.as_str())
                    && (p.metadata.namespace.is_none() || p.metadata.namespace == meta.namespace)
            });
            if let Some(existing) = existing {
                if existing.spec != template.spec {
                    errs.push(FieldError::invalid(
                        format!("{tpath}.spec"),
                        &template.spec,
                        format!(
                            "spec does not match existing PVC {pvc} in namespace {}",
                            meta.namespace.as_deref().unwrap_or_default()
                        ),
                    ));
                }
                let when_deleted = policy.retention_policy.as_ref().and_then(|r| r.when_deleted);
                if policy.retention_policy.is_some() && when_deleted != Some(RetentionPolicyType::Retain) {
                    errs.push(FieldError::invalid(
                        format!("{path}.retentionPolicy.whenDeleted"),
                        when_deleted,
                        "retentionPolicy must be retain when PVC exists",
                    ));
                }
            }
            claim_names.push(tname);
        }
    }
}

fn validate_replicated_jobs_volume_claims(rjobs: &[ReplicatedJob], claim: &str, errs: &mut Vec<FieldError>) {
    let mut has_mount = false;
    for (i, rjob) in rjobs.iter().enumerate() {
        let Some(pod) = pod_spec(rjob) else { continue };
        for (vi, volume) in pod.volumes.iter().flatten().enumerate() {
            if volume.name == claim {
                errs.push(FieldError::invalid(
                    format!("spec.replicatedJobs[{i}].template.spec.template.spec.volumes[{vi}].name"),
                    &volume.name,
                    format!("volume name conflicts with VolumeClaimPolicy template name: {claim}"),
                ));
            }
        }
        let containers = pod.init_containers.iter().flatten().chain(&pod.containers);
        has_mount |= containers
            .flat_map(|c| c.volume_mounts.iter().flatten())
            .any(|m| m.name == claim);
    }
    if !has_mount {
        errs.push(FieldError::invalid(
            "spec.replicatedJobs",
            rjobs.iter().map(|r| &r.name).collect::<Vec<_>>(),
            format!("replicatedJob containers don't have a matching volumeMount: {claim} from VolumeClaimPolicies"),
        ));
    }
}

/// kwas' rules on the scheduling block (the CRD's rules again, with field paths): at most
/// [`MAX_REPLICATED_JOBS`] replicated jobs, whose names are not `jobset` (the Workload's root template), every `targetReplicatedJob` names a replicated job,
/// and no replicated job has both a template `spec.scheduling` (Option A) and a policy (Option B).
pub fn validate_scheduling(spec: &JobSetSpec) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if spec.replicated_jobs.len() > MAX_REPLICATED_JOBS {
        errs.push(FieldError {
            kind: ErrorType::TooLong,
            field: "spec.replicatedJobs".to_string(),
            bad_value: None,
            detail: format!(
                "must have at most {MAX_REPLICATED_JOBS} items (the PodGroupTemplates one CompositePodGroupTemplate holds)"
            ),
        });
    }
    for (i, rjob) in spec.replicated_jobs.iter().enumerate() {
        if rjob.name == ROOT_TEMPLATE_NAME {
            errs.push(FieldError::invalid(
                format!("spec.replicatedJobs[{i}].name"),
                &rjob.name,
                "replicated job names may not be `jobset` (the name of the root template)",
            ));
        }
    }
    let policies = spec.scheduling.iter().flat_map(|s| &s.replicated_job_policies);
    for (i, policy) in policies.enumerate() {
        let path = format!("spec.scheduling.replicatedJobPolicies[{i}].targetReplicatedJob");
        match spec.replicated_jobs.iter().position(|r| r.name == policy.target_replicated_job) {
            None => errs.push(FieldError::invalid(
                path,
                &policy.target_replicated_job,
                "every targetReplicatedJob must name a replicated job",
            )),
            Some(r) if job_spec(&spec.replicated_jobs[r]).is_some_and(|j| j.scheduling.is_some()) => {
                errs.push(FieldError::invalid(
                    path,
                    &policy.target_replicated_job,
                    format!(
                        "a replicated job's scheduling may be set in its Job template (spec.replicatedJobs[{r}].template.spec.scheduling) or in spec.scheduling.replicatedJobPolicies, not both"
                    ),
                ))
            }
            Some(_) => {}
        }
    }
    errs
}

mod update;
pub use update::validate_update;
