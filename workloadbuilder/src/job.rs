//! The batch/v1 Job integration (KEP-6089 "Job Integration", KEP-5547): the Job's tree, its allow-lists and
//! the validation of `spec.scheduling`, shared by the Job controller (which compiles) and an API server (which
//! admits), so that what is accepted is exactly what compiles.
//!
//! - one leaf item named `<job>-pgt-0` (upstream's template name);
//! - controller default Basic; the user's `spec.scheduling` replaces fields whole;
//! - a callback defaults an unset gang `minCount` to `max(1, parallelism)`;
//! - the template carries the pod template's `priorityClassName` (KEP-5710: a group and its pods share one
//!   priority, so the group gets the class its pods get; unset on both means the global default or 0);
//! - allowed: Basic and Gang, Single and All;
//! - errors are reported under `spec.scheduling`.
//!
//! ```
//! use k8s_openapi::api::batch::v1::{Job, JobSpec};
//! use workloadbuilder::job::{build_job_workload, pod_group_template_name};
//!
//! let mut job = Job::default();
//! job.metadata.name = Some("etl".into());
//! job.metadata.namespace = Some("default".into());
//! job.metadata.uid = Some("uid-1".into());
//! job.spec = Some(JobSpec { parallelism: Some(10), ..Default::default() });
//! let workload = build_job_workload(&job).unwrap();
//! let template = &workload.spec.pod_group_templates.as_ref().unwrap()[0];
//! assert_eq!(template.name, pod_group_template_name("etl"));
//! assert!(template.scheduling_policy.basic.is_some()); // KEP-6089 Example 2: omitted block = Basic
//! ```

use k8s_openapi::api::batch::v1::{Job, JobSchedulingConfiguration, JobSpec};
use k8s_openapi::api::scheduling::v1alpha3::Workload;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

use crate::block::PodGroupBlock;
use crate::field::{FieldError, FieldErrors, FieldPath};
use crate::mapconfig::map_pod_group_config;
use crate::names::{GroupName, OwnerKey, TemplateKey, generate_pod_group_name_for_owner, generate_workload_name};
use crate::types::{AllowList, DisruptionModeOption, PolicyOption, SchedulingConfig, WorkloadItem};
use crate::{WorkloadBuilder, generate_pod_group_name};

/// The policies the Job integration supports.
pub const JOB_POLICIES: [PolicyOption; 2] = [PolicyOption::Basic, PolicyOption::Gang];
/// The disruption modes the Job integration supports.
pub const JOB_DISRUPTION_MODES: [DisruptionModeOption; 2] = [DisruptionModeOption::Single, DisruptionModeOption::All];

/// The Job integration's allow-list.
pub fn job_allow_list() -> AllowList {
    AllowList::new()
        .policies(JOB_POLICIES)
        .disruption_modes(JOB_DISRUPTION_MODES)
}

/// The name of the single PodGroupTemplate the Job integration compiles: `<job>-pgt-0`.
pub fn pod_group_template_name(job_name: &str) -> String {
    format!("{job_name}-pgt-0")
}

/// The name of the Workload the Job controller creates for a root Job.
pub fn job_workload_name(job: &Job) -> String {
    generate_workload_name(OwnerKey {
        name: job.metadata.name.as_deref().unwrap_or_default(),
        uid: job.metadata.uid.as_deref().unwrap_or_default(),
    })
}

/// The name of the PodGroup a Job creates from `template` of `workload` (its own or its parent's): KEP-5547's
/// `GeneratePodGroupName(workloadName, templateName, job.UID)` ([`generate_pod_group_name_for_owner`]), how
/// the Job controller finds its PodGroup in every management mode.
pub fn job_owned_pod_group_name(job: &Job, key: TemplateKey<'_>) -> GroupName {
    generate_pod_group_name_for_owner(key, job.metadata.uid.as_deref().unwrap_or_default())
}

/// The name kwas gave a root Job's PodGroup before KEP-5547 added the Job's uid:
/// `generate_pod_group_name(workload, template)`; still discovered so Jobs created then keep their group.
pub fn job_pod_group_name(key: TemplateKey<'_>) -> GroupName {
    generate_pod_group_name(key)
}

/// The name of the PodGroup a parent that manages its children's PodGroups itself (centralized management)
/// gives the group of its child Job `job_name`: unique per child, so sibling Jobs that map to the same
/// template (replicas of a replicated job) get distinct groups, and known before the Job exists (the parent
/// creates the group first). Delegated Jobs created their groups under this name before KEP-5547 added the
/// Job's uid ([`job_owned_pod_group_name`]); the Job controller still finds them.
pub fn delegated_pod_group_name(job_name: &str, template_name: &str) -> GroupName {
    generate_pod_group_name(TemplateKey {
        workload: job_name,
        template: template_name,
    })
}

/// The controller reference a Job's scheduling objects carry (`metav1.NewControllerRef`: `controller` and
/// `blockOwnerDeletion` set); `None` for a Job without a name or uid (one not read from the API server), so an
/// owner with an empty uid cannot be built.
pub fn job_controller_ref(job: &Job) -> Option<OwnerReference> {
    use k8s_openapi::Resource as _;
    Some(OwnerReference {
        api_version: Job::API_VERSION.into(),
        kind: Job::KIND.into(),
        name: job.metadata.name.clone()?,
        uid: job.metadata.uid.clone()?,
        controller: Some(true),
        block_owner_deletion: Some(true),
    })
}

fn scheduling_path() -> FieldPath {
    FieldPath::new("spec").child("scheduling")
}

fn parallelism(job: &Job) -> i32 {
    job.spec.as_ref().and_then(|s| s.parallelism).unwrap_or(1)
}

/// The `priorityClassName` of a Job's pod template (`None` when unset or empty): the class the Job's
/// scheduling groups carry, so that they and their pods resolve to the same priority.
pub fn pod_template_priority_class(spec: Option<&JobSpec>) -> Option<String> {
    spec.and_then(|s| s.template.spec.as_ref())
        .and_then(|p| p.priority_class_name.clone())
        .filter(|c| !c.is_empty())
}

/// Check a Job's `spec.scheduling` blocks against the Job integration's allow-lists and the building-block
/// rules, and the Job-level rules: a gang `minCount` no larger than `parallelism`, and no `spec.scheduling`
/// together with `spec.template.spec.schedulingGroup` (the user's PodGroup is authoritative).
pub fn validate_job_scheduling_blocks(job: &Job) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let Some(spec) = job.spec.as_ref() else { return errs };
    let Some(s) = spec.scheduling.as_ref() else { return errs };
    let path = scheduling_path();
    errs.extend(job_allow_list().validate_pod_group(&PodGroupBlock::from(s), &path));
    if let Some(min) = s
        .scheduling_policy
        .as_ref()
        .and_then(|p| p.gang.as_ref())
        .and_then(|g| g.min_count)
    {
        let parallelism = parallelism(job);
        if min > parallelism {
            errs.push(FieldError::invalid(
                path.child("schedulingPolicy").child("gang").child("minCount"),
                min,
                format!("must be less than or equal to spec.parallelism ({parallelism})"),
            ));
        }
    }
    let template_group = spec.template.spec.as_ref().and_then(|p| p.scheduling_group.as_ref());
    if template_group.is_some() {
        errs.push(FieldError::forbidden(
            path,
            "may not be set when spec.template.spec.schedulingGroup is set",
        ));
    }
    errs
}

/// A Job's scheduling block in the IR (`None` when the block is omitted), with errors under `path` (where
/// the block is: `spec.scheduling` for a Job, `spec.replicatedJobs[i].template.spec.scheduling` in a JobSet).
pub fn map_job_scheduling(
    scheduling: Option<&JobSchedulingConfiguration>,
    path: &FieldPath,
) -> Result<Option<SchedulingConfig>, FieldErrors> {
    scheduling
        .map(|s| {
            map_pod_group_config(
                s.scheduling_policy.as_ref(),
                s.scheduling_constraints.as_ref(),
                s.disruption_mode.as_ref(),
                s.resource_claims.as_deref().unwrap_or_default(),
            )
        })
        .transpose()
        .map_err(|e| e.under(path))
}

/// The Job's `WorkloadItem` tree (one leaf), after checking the user's blocks.
pub fn job_workload_item(job: &Job) -> Result<WorkloadItem, FieldErrors> {
    validate_job_scheduling_blocks(job).into_result(())?;
    let user = map_job_scheduling(
        job.spec.as_ref().and_then(|s| s.scheduling.as_ref()),
        &scheduling_path(),
    )?;
    let parallelism = parallelism(job).max(1);
    let mut default = SchedulingConfig::basic();
    default.priority_class_name = pod_template_priority_class(job.spec.as_ref());
    Ok(WorkloadItem::new(pod_group_template_name(
        job.metadata.name.as_deref().unwrap_or_default(),
    ))
    .with_default(default)
    .with_user_config(user)
    .with_callback(move |cfg| {
        cfg.default_gang_min_count(parallelism);
    })
    .with_config_path(scheduling_path()))
}

/// The builder of a Job's Workload: its tree ([`job_workload_item`]) with the Job integration's allow-list.
/// [`WorkloadBuilder::resolve`] on it shows what the Job resolves to, [`WorkloadBuilder::build`] compiles it.
pub fn job_workload_builder(job: &Job) -> Result<WorkloadBuilder, FieldErrors> {
    Ok(WorkloadBuilder::new(job_workload_item(job)?).allow(job_allow_list()))
}

/// Every rule the Job integration applies to `spec.scheduling` at admission: the block checks and the
/// resolved-tree checks (for example `all` disruption with the Basic policy).
pub fn validate_job_scheduling(job: &Job) -> FieldErrors {
    let builder = match job_workload_builder(job) {
        Ok(builder) => builder,
        Err(errs) => return errs,
    };
    match builder.validate() {
        Ok(_) => FieldErrors::new(),
        Err(errs) => errs,
    }
}

/// The update rule of `spec.scheduling`: immutable, including whether it is set at all, except
/// `schedulingPolicy.gang.minCount`.
pub fn validate_job_scheduling_update(new: &Job, old: &Job) -> FieldErrors {
    let mut errs = validate_job_scheduling(new);
    let n = new.spec.as_ref().and_then(|s| s.scheduling.as_ref());
    let o = old.spec.as_ref().and_then(|s| s.scheduling.as_ref());
    let path = scheduling_path();
    let without_count = |s: Option<&JobSchedulingConfiguration>| {
        s.cloned().map(|mut s| {
            if let Some(g) = s.scheduling_policy.as_mut().and_then(|p| p.gang.as_mut()) {
                g.min_count = None;
            }
            s
        })
    };
    if without_count(n) != without_count(o) {
        errs.push(FieldError::forbidden(
            path,
            "field is immutable except schedulingPolicy.gang.minCount",
        ));
    }
    errs
}

/// Compile a root Job's Workload (named [`job_workload_name`], owned by the Job).
pub fn build_job_workload(job: &Job) -> Result<Workload, FieldErrors> {
    job_workload_builder(job)?.build(
        &job_workload_name(job),
        job.metadata.namespace.as_deref().unwrap_or_default(),
        // A Job without a uid gets an empty owner, which the builder rejects with field errors.
        &job_controller_ref(job).unwrap_or_default(),
    )
}

/// The gang `minCount` the Job's Workload template should have now (`None` for Basic or invalid blocks):
/// the user's explicit count, else `max(1, parallelism)`.
pub fn desired_gang_min_count(job: &Job) -> Option<i32> {
    let item = job_workload_item(job).ok()?;
    let resolved = WorkloadBuilder::new(item).resolve();
    resolved.config.gang_policy().and_then(|g| g.min_count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::FieldErrorType;
    use k8s_openapi::api::batch::v1::JobSpec;
    use k8s_openapi::api::core::v1::{PodSchedulingGroup, PodSpec};
    use k8s_openapi::api::scheduling::v1alpha3 as api;
    use serde_json::json;

    fn job(parallelism: i32, scheduling: Option<JobSchedulingConfiguration>) -> Job {
        let mut job = Job::default();
        job.metadata.name = Some("train".into());
        job.metadata.namespace = Some("ml".into());
        job.metadata.uid = Some("uid-1".into());
        job.spec = Some(JobSpec {
            parallelism: Some(parallelism),
            scheduling,
            ..Default::default()
        });
        job
    }

    fn gang(min: Option<i32>) -> JobSchedulingConfiguration {
        JobSchedulingConfiguration {
            scheduling_policy: Some(api::WorkloadPodGroupSchedulingPolicy {
                basic: None,
                gang: Some(api::WorkloadPodGroupGangSchedulingPolicy { min_count: min }),
            }),
            ..Default::default()
        }
    }

    #[test]
    fn names_follow_upstream() {
        let j = job(2, None);
        assert_eq!(job_workload_name(&j), "train-647cf7d9");
        assert_eq!(pod_group_template_name("train"), "train-pgt-0");
        let w = build_job_workload(&j).unwrap();
        assert_eq!(w.metadata.name.as_deref(), Some("train-647cf7d9"));
    }

    #[test]
    fn the_template_carries_the_pods_priority_class() {
        let mut j = job(2, Some(gang(None)));
        let w = build_job_workload(&j).unwrap();
        assert_eq!(w.spec.pod_group_templates.unwrap()[0].priority_class_name, None);
        j.spec.as_mut().unwrap().template.spec = Some(PodSpec {
            priority_class_name: Some("high".into()),
            ..Default::default()
        });
        let w = build_job_workload(&j).unwrap();
        assert_eq!(
            w.spec.pod_group_templates.unwrap()[0].priority_class_name.as_deref(),
            Some("high")
        );
    }

    #[test]
    fn min_count_follows_parallelism_unless_set() {
        assert_eq!(desired_gang_min_count(&job(6, Some(gang(None)))), Some(6));
        assert_eq!(desired_gang_min_count(&job(6, Some(gang(Some(2))))), Some(2));
        assert_eq!(
            desired_gang_min_count(&job(0, Some(gang(None)))),
            Some(1),
            "clamped to 1"
        );
        assert_eq!(desired_gang_min_count(&job(6, None)), None);
    }

    #[test]
    fn job_level_rules() {
        let errs = validate_job_scheduling(&job(2, Some(gang(Some(3)))));
        assert!(
            errs.contains(
                FieldErrorType::Invalid,
                "spec.scheduling.schedulingPolicy.gang.minCount"
            ),
            "{errs}"
        );
        let mut byo = job(2, Some(gang(None)));
        byo.spec.as_mut().unwrap().template.spec = Some(PodSpec {
            scheduling_group: Some(PodSchedulingGroup {
                pod_group_name: Some("mine".into()),
            }),
            ..Default::default()
        });
        assert!(validate_job_scheduling(&byo).contains(FieldErrorType::Forbidden, "spec.scheduling"));
        let all_basic = JobSchedulingConfiguration {
            disruption_mode: Some(api::WorkloadPodGroupDisruptionMode {
                all: Some(api::WorkloadPodGroupAllDisruptionMode(json!({}))),
                single: None,
            }),
            ..Default::default()
        };
        let errs = validate_job_scheduling(&job(2, Some(all_basic)));
        assert_eq!(
            errs.to_string(),
            "spec.scheduling.disruptionMode: Invalid value: \"\": the disruptionMode `all` is not supported with the \
             Basic scheduling policy"
        );
        assert!(validate_job_scheduling(&job(2, Some(gang(None)))).is_empty());
    }

    #[test]
    fn updates_only_change_min_count() {
        let old = job(4, Some(gang(None)));
        assert!(validate_job_scheduling_update(&job(4, Some(gang(Some(3)))), &old).is_empty());
        assert!(validate_job_scheduling_update(&job(8, Some(gang(None))), &old).is_empty());
        let errs = validate_job_scheduling_update(&job(4, None), &old);
        assert!(errs.contains(FieldErrorType::Forbidden, "spec.scheduling"));
        let basic = JobSchedulingConfiguration {
            scheduling_policy: Some(api::WorkloadPodGroupSchedulingPolicy {
                basic: Some(api::WorkloadPodGroupBasicSchedulingPolicy(json!({}))),
                gang: None,
            }),
            ..Default::default()
        };
        assert!(
            validate_job_scheduling_update(&job(4, Some(basic)), &old)
                .contains(FieldErrorType::Forbidden, "spec.scheduling")
        );
    }
}
