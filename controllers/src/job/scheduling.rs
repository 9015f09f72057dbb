//! The Job's scheduling objects: discover, create and re-sync the Workload and PodGroup for each management
//! mode, in upstream's order (Workload, then PodGroup, then pods).
//!
//! - Root Job: the Workload whose `spec.controllerRef` names the Job is used (created from
//!   `spec.scheduling` when there is none); exactly one PodGroupTemplate is expected. Its PodGroup is found by
//!   `spec.workloadRef` (created as `generate_pod_group_name(workload, template)` when missing), owned by
//!   the Job (controller) and the Workload.
//! - Delegated Job: the parent's Workload (`spec.controllerRef` == the Job's controller owner, or the Job
//!   itself for a user-provided Workload) and the named template; the PodGroup is found by its deterministic
//!   name ([`delegated_pod_group_name`]) and created under the parent CompositePodGroup, owned by the Job.
//! - Unmanaged: nothing; pods keep the template's `schedulingGroup`.
//!
//! While the Job is suspended its PodGroup is deleted (the Workload stays); a new one is created on resume.
//! A changed gang size (`minCount`, or `parallelism` when `minCount` is unset) is written to the
//! controller-owned Workload template and to the PodGroup.

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::scheduling::v1alpha3::{PodGroup, Workload};
use kube::{Client, ResourceExt};
use kwas_api::names::conditions::{
    REASON_POD_GROUP_TEMPLATE_NOT_FOUND, REASON_UNSUPPORTED_WORKLOAD_STRUCTURE, REASON_WORKLOAD_NOT_FOUND,
};
use workloadbuilder::job::{
    build_job_workload, delegated_pod_group_name, desired_gang_min_count, job_controller_ref, job_pod_group_name,
};
use workloadbuilder::{DownwardMapping, TemplateRef, find_template, new_pod_group};

use super::mode::ManagementMode;
use super::plan::SchedulingDecision;
use crate::error::Result;
use crate::index::SchedulingIndex;
use crate::sync::{
    EventSink, Lookup, create_pod_group, create_workload, delete, find_pod_groups, find_workloads, get_opt, is_owned,
    mark_managed, sync_pod_group_min_count, sync_workload_min_count, template_min_count,
};

fn blocked(reason: &str, message: impl Into<String>) -> SchedulingDecision {
    SchedulingDecision::Blocked {
        reason: reason.to_string(),
        message: message.into(),
    }
}

fn suspended(job: &Job) -> bool {
    job.spec.as_ref().and_then(|s| s.suspend).unwrap_or(false)
}

/// The Workload a root Job's controller creates: compiled from `spec.scheduling`, marked as managed by
/// `controller`.
pub fn desired_workload(job: &Job, controller: &str) -> Result<Workload, workloadbuilder::FieldErrors> {
    let mut workload = build_job_workload(job)?;
    mark_managed(&mut workload.metadata, controller);
    Ok(workload)
}

/// The PodGroup a root Job's controller creates from the single template `template` of its Workload: owned
/// by the Job (controller) and the Workload.
pub fn desired_root_pod_group(
    job: &Job,
    workload: &Workload,
    template: &str,
    controller: &str,
) -> std::result::Result<PodGroup, workloadbuilder::InstantiateError> {
    let owners = job_controller_ref(job)
        .into_iter()
        .chain(kube::Resource::owner_ref(workload, &()))
        .collect();
    let name = job_pod_group_name(&workload.name_any(), template);
    let mut group = new_pod_group(workload, template, &name, None, owners)?;
    mark_managed(&mut group.metadata, controller);
    Ok(group)
}

/// The PodGroup a delegated Job's controller creates from its parent's Workload: the template and parent
/// instance named by the downward-mapping annotations, owned by the Job only.
pub fn desired_delegated_pod_group(
    job: &Job,
    workload: &Workload,
    mapping: &DownwardMapping,
    controller: &str,
) -> std::result::Result<PodGroup, workloadbuilder::InstantiateError> {
    let template = mapping.group_template_name.as_str();
    let name = delegated_pod_group_name(&job.name_any(), template);
    let parent = mapping.parent_composite_pod_group.as_deref();
    let mut group = new_pod_group(
        workload,
        template,
        &name,
        parent,
        job_controller_ref(job).into_iter().collect(),
    )?;
    mark_managed(&mut group.metadata, controller);
    Ok(group)
}

/// What the scheduling side needs from the controller.
#[derive(Clone, Copy)]
pub struct SchedulingContext<'a> {
    /// The API client.
    pub client: &'a Client,
    /// This controller's name (the `kwas.dev/managed-by` value).
    pub controller: &'a str,
    /// Where events about the Job go.
    pub events: &'a EventSink,
    /// The discovery cache.
    pub index: &'a SchedulingIndex,
}

impl std::fmt::Debug for SchedulingContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchedulingContext")
            .field("controller", &self.controller)
            .finish()
    }
}

/// Bring the Job's scheduling objects to their desired state and say what its pods should carry.
pub async fn sync_scheduling(
    cx: SchedulingContext<'_>,
    job: &Job,
    mode: &ManagementMode,
) -> Result<SchedulingDecision> {
    match mode {
        ManagementMode::None(_) => Ok(SchedulingDecision::Group(None)),
        ManagementMode::Both => sync_root(cx, job).await,
        ManagementMode::PodGroupOnly(mapping) => sync_delegated(cx, job, mapping).await,
    }
}

async fn delete_owned_pod_group(cx: SchedulingContext<'_>, job: &Job, group: &PodGroup) -> Result<()> {
    let uid = job.metadata.uid.as_deref().unwrap_or_default();
    if is_owned(&group.metadata, cx.controller, uid) && group.metadata.deletion_timestamp.is_none() {
        delete::<PodGroup>(cx.client, &job.namespace().unwrap_or_default(), &group.name_any()).await?;
        cx.events
            .normal(
                "PodGroupDeleted",
                format!("Deleted PodGroup {} of suspended Job", group.name_any()),
            )
            .await;
    }
    Ok(())
}

async fn sync_root(cx: SchedulingContext<'_>, job: &Job) -> Result<SchedulingDecision> {
    let namespace = job.namespace().unwrap_or_default();
    let name = job.name_any();
    let uid = job.metadata.uid.clone().unwrap_or_default();
    let desired = match desired_workload(job, cx.controller) {
        Ok(w) => w,
        Err(errs) => return Ok(SchedulingDecision::Invalid(errs)),
    };
    let own = desired.name_any();
    let lookup = Lookup {
        index: cx.index,
        own_name: Some(&own),
    };
    let found = find_workloads(cx.client, lookup, &namespace, "batch", "Job", &name).await?;
    let workload = match found.as_slice() {
        [] => create_workload(cx.client, &desired, cx.events).await?,
        [one] => one.clone(),
        many => {
            return Ok(blocked(
                REASON_UNSUPPORTED_WORKLOAD_STRUCTURE,
                format!("found {} Workloads referencing Job {namespace}/{name}", many.len()),
            ));
        }
    };
    let template = match (
        workload.spec.pod_group_templates.as_deref(),
        &workload.spec.composite_pod_group_templates,
    ) {
        (Some([t]), None) => t.name.clone(),
        _ => {
            return Ok(blocked(
                REASON_UNSUPPORTED_WORKLOAD_STRUCTURE,
                format!(
                    "Workload {} must have exactly one PodGroupTemplate",
                    workload.name_any()
                ),
            ));
        }
    };
    let desired_min = desired_gang_min_count(job);
    if is_owned(&workload.metadata, cx.controller, &uid)
        && let Some(count) = desired_min
    {
        sync_workload_min_count(cx.client, &workload, &template, count).await?;
    }
    let own = job_pod_group_name(&workload.name_any(), &template);
    let lookup = Lookup {
        index: cx.index,
        own_name: Some(&own),
    };
    let groups = find_pod_groups(cx.client, lookup, &namespace, &workload.name_any(), &template).await?;
    if suspended(job) {
        for g in &groups {
            delete_owned_pod_group(cx, job, g).await?;
        }
        return Ok(SchedulingDecision::Group(None));
    }
    let group = match groups.as_slice() {
        [] => match desired_root_pod_group(job, &workload, &template, cx.controller) {
            Ok(group) => create_pod_group(cx.client, &group, cx.events).await?,
            Err(e) => return Ok(blocked(REASON_UNSUPPORTED_WORKLOAD_STRUCTURE, e.to_string())),
        },
        [one] => one.clone(),
        many => {
            return Ok(blocked(
                REASON_UNSUPPORTED_WORKLOAD_STRUCTURE,
                format!(
                    "found {} PodGroups referencing Workload {}",
                    many.len(),
                    workload.name_any()
                ),
            ));
        }
    };
    if group.metadata.deletion_timestamp.is_some() {
        return Ok(SchedulingDecision::Wait);
    }
    if is_owned(&group.metadata, cx.controller, &uid) {
        let count = if is_owned(&workload.metadata, cx.controller, &uid) {
            desired_min
        } else {
            template_min_count(&workload, &template)
        };
        if let Some(count) = count {
            sync_pod_group_min_count(cx.client, &group, count).await?;
        }
    }
    Ok(SchedulingDecision::Group(Some(group.name_any())))
}

async fn parent_workloads(cx: SchedulingContext<'_>, job: &Job) -> Result<(Vec<Workload>, String)> {
    let namespace = job.namespace().unwrap_or_default();
    let owner = job
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true));
    // The name a parent built on workloadbuilder gives its Workload (upstream's naming on its name and uid).
    let (group, kind, name, own) = match owner {
        Some(r) => (
            workloadbuilder::api_group(&r.api_version).to_string(),
            r.kind.clone(),
            r.name.clone(),
            workloadbuilder::generate_workload_name(&r.name, &r.uid),
        ),
        None => (
            "batch".to_string(),
            "Job".to_string(),
            job.name_any(),
            workloadbuilder::job::job_workload_name(job),
        ),
    };
    let described = format!("{kind} {namespace}/{name}");
    let lookup = Lookup {
        index: cx.index,
        own_name: Some(&own),
    };
    Ok((
        find_workloads(cx.client, lookup, &namespace, &group, &kind, &name).await?,
        described,
    ))
}

async fn sync_delegated(cx: SchedulingContext<'_>, job: &Job, mapping: &DownwardMapping) -> Result<SchedulingDecision> {
    let namespace = job.namespace().unwrap_or_default();
    let uid = job.metadata.uid.clone().unwrap_or_default();
    let (found, owner) = parent_workloads(cx, job).await?;
    let workload = match found.as_slice() {
        [] => {
            return Ok(blocked(
                REASON_WORKLOAD_NOT_FOUND,
                format!("no Workload references {owner} yet"),
            ));
        }
        [one] => one.clone(),
        many => {
            return Ok(blocked(
                REASON_UNSUPPORTED_WORKLOAD_STRUCTURE,
                format!("found {} Workloads referencing {owner}", many.len()),
            ));
        }
    };
    let template = mapping.group_template_name.as_str();
    match find_template(&workload, template) {
        Some(TemplateRef::PodGroup(..)) => {}
        Some(TemplateRef::Composite(..)) => {
            return Ok(blocked(
                REASON_UNSUPPORTED_WORKLOAD_STRUCTURE,
                format!(
                    "template {template} of Workload {} is a CompositePodGroupTemplate",
                    workload.name_any()
                ),
            ));
        }
        None => {
            return Ok(blocked(
                REASON_POD_GROUP_TEMPLATE_NOT_FOUND,
                format!(
                    "PodGroupTemplate {template} not found in Workload {}",
                    workload.name_any()
                ),
            ));
        }
    }
    let group_name = delegated_pod_group_name(&job.name_any(), template);
    let existing: Option<PodGroup> = get_opt(cx.client, &namespace, &group_name).await?;
    if suspended(job) {
        if let Some(g) = &existing {
            delete_owned_pod_group(cx, job, g).await?;
        }
        return Ok(SchedulingDecision::Group(None));
    }
    let group = match existing {
        Some(g) => {
            let matches = g
                .spec
                .workload_ref
                .as_ref()
                .is_some_and(|r| r.workload_name == workload.name_any() && r.template_name == template);
            if !matches {
                return Ok(blocked(
                    REASON_UNSUPPORTED_WORKLOAD_STRUCTURE,
                    format!("PodGroup {group_name} exists and references a different Workload template"),
                ));
            }
            g
        }
        None => {
            let parent = mapping.parent_composite_pod_group.as_deref();
            let mut group = match new_pod_group(
                &workload,
                template,
                &group_name,
                parent,
                job_controller_ref(job).into_iter().collect(),
            ) {
                Ok(g) => g,
                Err(e) => return Ok(blocked(REASON_UNSUPPORTED_WORKLOAD_STRUCTURE, e.to_string())),
            };
            mark_managed(&mut group.metadata, cx.controller);
            create_pod_group(cx.client, &group, cx.events).await?
        }
    };
    if group.metadata.deletion_timestamp.is_some() {
        return Ok(SchedulingDecision::Wait);
    }
    if is_owned(&group.metadata, cx.controller, &uid)
        && let Some(count) = template_min_count(&workload, template)
    {
        sync_pod_group_min_count(cx.client, &group, count).await?;
    }
    Ok(SchedulingDecision::Group(Some(group_name)))
}
