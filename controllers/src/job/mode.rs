//! The three management modes of the Job integration (KEP-5547, upstream-compat "Job controller integration").

use k8s_openapi::api::batch::v1::Job;
use workloadbuilder::{DownwardMapping, FieldErrors};

/// Why the controller manages no scheduling objects for a Job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UnmanagedReason {
    /// The pod template already names a PodGroup (`spec.template.spec.schedulingGroup`): the user's (or a
    /// parent's) PodGroup is authoritative and pods keep it.
    PodTemplateSchedulingGroup,
    /// A parent controller owns the Job and did not delegate the PodGroup: the parent manages both objects.
    ParentManaged,
}

/// How much of the scheduling tree the Job controller owns for a Job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ManagementMode {
    /// Create nothing; pods keep whatever `schedulingGroup` the template carries.
    None(UnmanagedReason),
    /// A root Job: compile and own the Workload, instantiate and own the PodGroup.
    Both,
    /// A delegated Job: the parent's Workload exists; instantiate the named template as the Job's PodGroup,
    /// under the parent CompositePodGroup instance when one is named.
    PodGroupOnly(DownwardMapping),
}

/// True when the Job's controller owner is a workload controller that compiles the Workload (anything but a
/// CronJob, whose Jobs are independent roots).
pub fn has_parent_workload_owner(job: &Job) -> bool {
    job.metadata
        .owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))
        .is_some_and(|r| {
            !(r.kind == "CronJob" && workloadbuilder::validation::api_group(&r.api_version).is_ok_and(|g| g == "batch"))
        })
}

/// Classify a Job. Malformed downward-mapping annotations are an error with their field path.
pub fn management_mode(job: &Job) -> Result<ManagementMode, FieldErrors> {
    let template_group = job
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|p| p.scheduling_group.as_ref());
    if template_group.is_some() {
        return Ok(ManagementMode::None(UnmanagedReason::PodTemplateSchedulingGroup));
    }
    let empty = Default::default();
    let annotations = job.metadata.annotations.as_ref().unwrap_or(&empty);
    if let Some(mapping) = DownwardMapping::read(annotations)? {
        return Ok(ManagementMode::PodGroupOnly(mapping));
    }
    if has_parent_workload_owner(job) {
        return Ok(ManagementMode::None(UnmanagedReason::ParentManaged));
    }
    Ok(ManagementMode::Both)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::batch::v1::JobSpec;
    use k8s_openapi::api::core::v1::{PodSchedulingGroup, PodSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
    use kwas_api_types::names::annotations::{GROUP_TEMPLATE_NAME, PARENT_COMPOSITE_POD_GROUP};

    fn owner(api_version: &str, kind: &str) -> OwnerReference {
        OwnerReference {
            api_version: api_version.into(),
            kind: kind.into(),
            name: "parent".into(),
            uid: "u".into(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }
    }

    fn job() -> Job {
        let mut job = Job::default();
        job.metadata.name = Some("j".into());
        job.spec = Some(JobSpec::default());
        job
    }

    #[test]
    fn root_jobs_manage_both() {
        assert_eq!(management_mode(&job()).unwrap(), ManagementMode::Both);
        let mut cron = job();
        cron.metadata.owner_references = Some(vec![owner("batch/v1", "CronJob")]);
        assert_eq!(management_mode(&cron).unwrap(), ManagementMode::Both);
    }

    #[test]
    fn parent_owned_jobs_manage_nothing_unless_delegated() {
        let mut child = job();
        child.metadata.owner_references = Some(vec![owner("jobset.x-k8s.io/v1alpha2", "JobSet")]);
        assert_eq!(
            management_mode(&child).unwrap(),
            ManagementMode::None(UnmanagedReason::ParentManaged)
        );
        child.metadata.annotations = Some(
            [
                (GROUP_TEMPLATE_NAME.to_string(), "workers".to_string()),
                (PARENT_COMPOSITE_POD_GROUP.to_string(), "root-x".to_string()),
            ]
            .into(),
        );
        assert_eq!(
            management_mode(&child).unwrap(),
            ManagementMode::PodGroupOnly(DownwardMapping::new("workers").with_parent("root-x"))
        );
    }

    #[test]
    fn template_scheduling_group_wins() {
        let mut byo = job();
        byo.spec.as_mut().unwrap().template.spec = Some(PodSpec {
            scheduling_group: Some(PodSchedulingGroup {
                pod_group_name: Some("mine".into()),
            }),
            ..Default::default()
        });
        byo.metadata.annotations = Some([(GROUP_TEMPLATE_NAME.to_string(), "workers".to_string())].into());
        assert_eq!(
            management_mode(&byo).unwrap(),
            ManagementMode::None(UnmanagedReason::PodTemplateSchedulingGroup)
        );
    }

    #[test]
    fn malformed_annotations_are_errors() {
        let mut bad = job();
        bad.metadata.annotations = Some([(GROUP_TEMPLATE_NAME.to_string(), "Not_A_Label".to_string())].into());
        assert!(management_mode(&bad).is_err());
    }
}
