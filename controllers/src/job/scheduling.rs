//! The Job's scheduling objects: discover, create and re-sync the Workload and PodGroup for each management
//! mode, in upstream's order (Workload, then PodGroup, then pods), as KEP-5547 describes.
//!
//! - Root Job: the Workload whose `spec.controllerRef` names the Job is used; it must be the one this
//!   controller creates for the Job (its name is the Job's Workload name) and have exactly one
//!   PodGroupTemplate. It is created from `spec.scheduling` when there is none.
//! - Delegated Job: the parent's Workload (`spec.controllerRef` == the Job's controller owner, or the Job
//!   itself for a user-provided Workload) and the template the downward-mapping annotation names; a missing
//!   Workload or template blocks the Job (`SchedulingBlocked`, reasons `WorkloadNotFound` /
//!   `PodGroupTemplateNotFound`, event `SchedulingDependencyNotFound`) until it appears.
//! - In both modes the PodGroup is found by its name, KEP-5547's
//!   `GeneratePodGroupName(workloadName, templateName, job.UID)`
//!   ([`job_owned_pod_group_name`]); an object at that name that references another Workload or template
//!   blocks the Job (`UnsupportedWorkloadStructure`). Groups kwas named before the Job's uid was part of the
//!   name are still found (root: by reference to the Job's own Workload; delegated: by the old name).
//! - Unmanaged: nothing; pods keep the template's `schedulingGroup`.
//!
//! Objects are created only for a Job that has no pods yet (KEP-5547 "Controller Workflow"): a Job that
//! already has pods (created before the controller managed it, or by an earlier controller) only discovers
//! existing objects, and its pods keep being created without a `schedulingGroup` when there are none. The
//! choice kwas makes where the KEP is silent: a PodGroup may also be (re)created when all the Job's pods are
//! terminal (after a resume, or when every pod failed), since no running pod can end up outside the gang.
//!
//! While the Job is suspended its PodGroup is deleted (the Workload stays); a new one is created on resume.
//! A changed gang size (`minCount`, or `parallelism` when `minCount` is unset) is written to the
//! controller-owned Workload template and to the PodGroup the Job owns, as the library's re-sync plan
//! ([`workloadbuilder::sync::plan_sync`]) decides.

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::scheduling::v1alpha3::{PodGroup, Workload};
use kube::{Client, ResourceExt};
use kwas_api_types::names::conditions::{
    REASON_POD_GROUP_TEMPLATE_NOT_FOUND, REASON_UNSUPPORTED_WORKLOAD_STRUCTURE, REASON_WORKLOAD_NOT_FOUND,
};
use workloadbuilder::job::{
    build_job_workload, delegated_pod_group_name, job_controller_ref, job_owned_pod_group_name, job_pod_group_name,
};
use workloadbuilder::sync::{SyncInput, plan_sync};
use workloadbuilder::{DownwardMapping, ExistingWorkloadBuilder, TemplateKey, TemplateRef, find_template};

use super::mode::{ManagementMode, UnmanagedReason};
use super::plan::SchedulingDecision;
use crate::error::Result;
use crate::index::SchedulingIndex;
use crate::sync::{
    EventSink, Lookup, apply_pod_group_min_count, apply_workload_min_count, create_pod_group, create_workload, delete,
    find_pod_groups, find_workloads, get_cached_trusting, is_owned, mark_managed,
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
    let builder = job_controller_ref(job)
        .into_iter()
        .chain(kube::Resource::owner_ref(workload, &()))
        .fold(
            ExistingWorkloadBuilder::new(workload),
            ExistingWorkloadBuilder::with_owner,
        );
    let workload_name = workload.name_any();
    let key = TemplateKey {
        workload: &workload_name,
        template,
    };
    let name = job_owned_pod_group_name(job, key);
    let mut group = builder.new_pod_group(template, &name, None)?;
    mark_managed(&mut group.metadata, controller);
    crate::sync::copy_recovery_policy([job.metadata.annotations.as_ref()], &mut group.metadata);
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
    let workload_name = workload.name_any();
    let key = TemplateKey {
        workload: &workload_name,
        template: &mapping.group_template_name,
    };
    let name = job_owned_pod_group_name(job, key);
    let builder = job_controller_ref(job).into_iter().fold(
        ExistingWorkloadBuilder::new(workload),
        ExistingWorkloadBuilder::with_owner,
    );
    let mut group = builder.new_pod_group_from_mapping(&name, mapping)?;
    mark_managed(&mut group.metadata, controller);
    crate::sync::copy_recovery_policy([job.metadata.annotations.as_ref()], &mut group.metadata);
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

/// What the Job's pods tell the scheduling side (KEP-5547: objects are created only for a Job without pods).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PodPresence {
    /// The Job owns pods (active or terminal).
    pub any: bool,
    /// The Job owns pods that are not terminal.
    pub active: bool,
}

impl PodPresence {
    /// The presence of `pods`, with `terminal` telling terminal pods apart.
    pub fn of<P>(pods: &[P], terminal: impl Fn(&P) -> bool) -> Self {
        Self {
            any: !pods.is_empty(),
            active: pods.iter().any(|p| !terminal(p)),
        }
    }
}

/// Bring the Job's scheduling objects to their desired state and say what its pods should carry.
pub async fn sync_scheduling(
    cx: SchedulingContext<'_>,
    job: &Job,
    mode: &ManagementMode,
    pods: PodPresence,
) -> Result<SchedulingDecision> {
    match mode {
        ManagementMode::None(reason) => {
            if matches!(reason, UnmanagedReason::ParentManaged)
                && job.spec.as_ref().is_some_and(|s| s.scheduling.is_some())
            {
                // Said, not silently dropped: the owner manages this Job's scheduling.
                let owner = job
                    .metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .find(|r| r.controller == Some(true))
                    .map(|r| format!("{} {}", r.kind, r.name))
                    .unwrap_or_default();
                cx.events.emit(
                    true,
                    kwas_api_types::names::events::SCHEDULING_IGNORED,
                    format!(
                        "spec.scheduling is not used: {owner} controls this Job and manages its Workload and \
                         PodGroup (KEP-6089); set the scheduling on {owner}"
                    ),
                );
            }
            Ok(SchedulingDecision::Group(None))
        }
        ManagementMode::Both => sync_root(cx, job, pods).await,
        ManagementMode::PodGroupOnly(mapping) => sync_delegated(cx, job, mapping, pods).await,
    }
}

async fn delete_owned_pod_group(cx: SchedulingContext<'_>, job: &Job, group: &PodGroup) -> Result<()> {
    let uid = job.metadata.uid.as_deref().unwrap_or_default();
    if is_owned(&group.metadata, cx.controller, uid) && group.metadata.deletion_timestamp.is_none() {
        delete::<PodGroup>(cx.client, &job.namespace().unwrap_or_default(), &group.name_any()).await?;
        cx.events.emit(
            false,
            kwas_api_types::names::events::POD_GROUP_DELETED,
            format!("Deleted PodGroup {} of suspended Job", group.name_any()),
        );
    }
    Ok(())
}

/// The object at a PodGroup's name is usable when it references `workload`'s `template`.
fn references(group: &PodGroup, workload: &str, template: &str) -> bool {
    group
        .spec
        .workload_ref
        .as_ref()
        .is_some_and(|r| r.workload_name == workload && r.template_name == template)
}

async fn sync_root(cx: SchedulingContext<'_>, job: &Job, pods: PodPresence) -> Result<SchedulingDecision> {
    let namespace = job.namespace().unwrap_or_default();
    let name = job.name_any();
    let uid = job.metadata.uid.clone().unwrap_or_default();
    let desired = match desired_workload(job, cx.controller) {
        Ok(w) => w,
        Err(errs) => return Ok(SchedulingDecision::Invalid(errs)),
    };
    let own = desired.name_any();
    // A new Job (no pods yet) takes a Workload its cache does not hold as absent: creating it again
    // answers AlreadyExists. A Job with pods confirms with a read (it would otherwise go on without a group).
    let lookup = Lookup {
        index: cx.index,
        own_name: Some(&own),
        trust_misses: !pods.any,
    };
    let found = find_workloads(cx.client, lookup, &namespace, "batch", "Job", &name).await?;
    let workload = match found.as_slice() {
        // KEP-5547: a Job that already has pods only discovers; its pods go on without a group.
        [] if pods.any => return Ok(SchedulingDecision::Group(None)),
        [] => create_workload(cx.client, cx.index, &desired, cx.events).await?,
        [one] if one.name_any() != own => {
            return Ok(blocked(
                REASON_UNSUPPORTED_WORKLOAD_STRUCTURE,
                format!(
                    "Workload {} references Job {namespace}/{name} but is not the Workload {own} the Job controller \
                     creates for it; select its template with the {} annotation to use it",
                    one.name_any(),
                    kwas_api_types::names::annotations::GROUP_TEMPLATE_NAME
                ),
            ));
        }
        [one] => one.clone(),
        many => {
            return Ok(blocked(
                REASON_UNSUPPORTED_WORKLOAD_STRUCTURE,
                format!("found {} Workloads referencing Job {namespace}/{name}", many.len()),
            ));
        }
    };
    let workload_name = workload.name_any();
    let template = match (
        workload.spec.pod_group_templates.as_deref(),
        &workload.spec.composite_pod_group_templates,
    ) {
        (Some([t]), None) => t.name.clone(),
        _ => {
            return Ok(blocked(
                REASON_UNSUPPORTED_WORKLOAD_STRUCTURE,
                format!("Workload {workload_name} must have exactly one PodGroupTemplate"),
            ));
        }
    };
    // The gang size follows the Job (its desired Workload) when the Job's controller created the Workload,
    // the Workload's template otherwise.
    let owns_workload = is_owned(&workload.metadata, cx.controller, &uid);
    let resync = |groups: &[PodGroup]| {
        plan_sync(SyncInput {
            desired: owns_workload.then_some(&desired),
            live: &workload,
            pod_groups: groups,
            composite_pod_groups: &[],
        })
    };
    for change in resync(&[]).workload_patches() {
        apply_workload_min_count(cx.client, &workload, change).await?;
    }
    let key = TemplateKey {
        workload: &workload_name,
        template: &template,
    };
    let group_name = job_owned_pod_group_name(job, key);
    let mut existing: Option<PodGroup> =
        get_cached_trusting(cx.client, cx.index, &namespace, &group_name, !pods.active).await?;
    if existing.is_none() {
        // A group created under the name kwas used before KEP-5547 added the Job's uid.
        let legacy = job_pod_group_name(key);
        let lookup = Lookup {
            index: cx.index,
            own_name: Some(&legacy),
            trust_misses: !pods.active,
        };
        existing = find_pod_groups(cx.client, lookup, &namespace, &workload_name, &template)
            .await?
            .into_iter()
            .find(|g| is_owned(&g.metadata, cx.controller, &uid));
    }
    if suspended(job) {
        if let Some(g) = &existing {
            delete_owned_pod_group(cx, job, g).await?;
        }
        return Ok(SchedulingDecision::Group(None));
    }
    let group = match existing {
        Some(g) if !references(&g, &workload_name, &template) => {
            return Ok(blocked(
                REASON_UNSUPPORTED_WORKLOAD_STRUCTURE,
                format!(
                    "PodGroup {} exists and does not reference template {template} of Workload {workload_name}",
                    g.name_any()
                ),
            ));
        }
        Some(g) => g,
        None if pods.active => return Ok(SchedulingDecision::Group(None)),
        None => match desired_root_pod_group(job, &workload, &template, cx.controller) {
            Ok(group) => create_pod_group(cx.client, cx.index, &group, cx.events).await?,
            Err(e) => return Ok(blocked(REASON_UNSUPPORTED_WORKLOAD_STRUCTURE, e.to_string())),
        },
    };
    if group.metadata.deletion_timestamp.is_some() {
        return Ok(SchedulingDecision::Wait);
    }
    if is_owned(&group.metadata, cx.controller, &uid) {
        for change in resync(std::slice::from_ref(&group)).pod_group_patches() {
            apply_pod_group_min_count(cx.client, &group, change).await?;
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
            // A malformed apiVersion names no group a Workload's controllerRef can match.
            workloadbuilder::validation::api_group(&r.api_version)
                .unwrap_or_default()
                .to_string(),
            r.kind.clone(),
            r.name.clone(),
            workloadbuilder::generate_workload_name(r),
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
        trust_misses: false,
    };
    Ok((
        find_workloads(cx.client, lookup, &namespace, &group, &kind, &name).await?,
        described,
    ))
}

async fn sync_delegated(
    cx: SchedulingContext<'_>,
    job: &Job,
    mapping: &DownwardMapping,
    pods: PodPresence,
) -> Result<SchedulingDecision> {
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
    let workload_name = workload.name_any();
    let template = mapping.group_template_name.as_str();
    match find_template(&workload, template) {
        Some(TemplateRef::PodGroup(..)) => {}
        Some(TemplateRef::Composite(..)) => {
            return Ok(blocked(
                REASON_UNSUPPORTED_WORKLOAD_STRUCTURE,
                format!("template {template} of Workload {workload_name} is a CompositePodGroupTemplate"),
            ));
        }
        None => {
            return Ok(blocked(
                REASON_POD_GROUP_TEMPLATE_NOT_FOUND,
                format!("PodGroupTemplate {template} not found in Workload {workload_name}"),
            ));
        }
    }
    let key = TemplateKey {
        workload: &workload_name,
        template,
    };
    let group_name = job_owned_pod_group_name(job, key);
    let mut existing: Option<PodGroup> =
        get_cached_trusting(cx.client, cx.index, &namespace, &group_name, !pods.active).await?;
    if existing.is_none() {
        // A group created under the name kwas used before KEP-5547 added the Job's uid.
        let legacy = delegated_pod_group_name(&job.name_any(), template);
        existing = get_cached_trusting::<PodGroup>(cx.client, cx.index, &namespace, &legacy, !pods.active)
            .await?
            .filter(|g| is_owned(&g.metadata, cx.controller, &uid));
    }
    if suspended(job) {
        if let Some(g) = &existing {
            delete_owned_pod_group(cx, job, g).await?;
        }
        return Ok(SchedulingDecision::Group(None));
    }
    let group = match existing {
        Some(g) if !references(&g, &workload_name, template) => {
            return Ok(blocked(
                REASON_UNSUPPORTED_WORKLOAD_STRUCTURE,
                format!(
                    "PodGroup {} exists and does not reference template {template} of Workload {workload_name}",
                    g.name_any()
                ),
            ));
        }
        Some(g) => g,
        None if pods.active => return Ok(SchedulingDecision::Group(None)),
        None => match desired_delegated_pod_group(job, &workload, mapping, cx.controller) {
            Ok(group) => create_pod_group(cx.client, cx.index, &group, cx.events).await?,
            Err(e) => return Ok(blocked(REASON_UNSUPPORTED_WORKLOAD_STRUCTURE, e.to_string())),
        },
    };
    if group.metadata.deletion_timestamp.is_some() {
        return Ok(SchedulingDecision::Wait);
    }
    if is_owned(&group.metadata, cx.controller, &uid) {
        // The parent's Workload is not the Job's: the group follows its template.
        let plan = plan_sync(SyncInput {
            desired: None,
            live: &workload,
            pod_groups: std::slice::from_ref(&group),
            composite_pod_groups: &[],
        });
        for change in plan.pod_group_patches() {
            apply_pod_group_min_count(cx.client, &group, change).await?;
        }
    }
    Ok(SchedulingDecision::Group(Some(group.name_any())))
}
