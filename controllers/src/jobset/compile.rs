//! From a JobSet to a Workload: validation of the scheduling intent and the documented mapping from the
//! JobSet's structure to a `WorkloadItem` tree.
//!
//! # Mapping
//! | JobSet | WorkloadItem | compiles to | runtime objects |
//! | --- | --- | --- | --- |
//! | the JobSet | composite root named `jobset` | CompositePodGroupTemplate `jobset` | one root CompositePodGroup |
//! | each replicated job | a leaf named after it | PodGroupTemplate `<replicated job>` | one PodGroup per child Job (`replicas` of them) |
//!
//! # Defaults (controller), user intent, callbacks
//! - Root: default a gang of gangs; a callback sets `minGroupCount` to the number of child groups (the sum of
//!   `replicas`) when the user did not. A JobSet whose startup is staged (`startupPolicyOrder: InOrder` or
//!   `dependsOn`) counts only the first stage's groups ([`first_stage_group_count`]), and a user's
//!   `minGroupCount` above that is refused (it would never schedule). The user's root block (`spec.scheduling`) replaces fields whole, so
//!   `schedulingPolicy: {basic: {}}` is the escape hatch that lets components start independently.
//! - Leaves: default Basic; with exclusive placement (`alpha.jobset.sigs.k8s.io/exclusive-topology` on the
//!   JobSet or the replicated job's template), Basic in one domain of that topology key (upstream's pod
//!   affinity as a topology constraint; the pods' anti-affinity keeps other Jobs out of the domain, see
//!   [`exclusive_topology`]). The user's intent comes from `spec.scheduling.replicatedJobPolicies` (Option B)
//!   or the replicated job's `template.spec.scheduling` (Option A), never both; a callback defaults a gang's
//!   `minCount` to the Job's `parallelism`.
//! - Allowed everywhere: Basic and Gang, Single and All.
//! - Priority: every template carries the Jobs' pod `priorityClassName` (KEP-5710: one priority across the
//!   hierarchy and its pods), so the replicated jobs' pod templates must name the same class (or none).
//!
//! Errors carry the path of the field the user wrote (`spec.scheduling...`,
//! `spec.scheduling.replicatedJobPolicies[i]...`, `spec.replicatedJobs[i].template.spec.scheduling...`).

use k8s_openapi::api::scheduling::v1alpha3::Workload;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::ResourceExt;
use kwas_api_types::jobset::{JobSet, MAX_CHILD_JOBS, ROOT_TEMPLATE_NAME};

use workloadbuilder::job::pod_template_priority_class;
use workloadbuilder::{
    AllowList, CompositeBlock, DisruptionModeOption, FieldError, FieldErrors, FieldPath, OwnerKey, PodGroupBlock,
    PolicyOption, SchedulingConfig, WorkloadBuilder, WorkloadItem, generate_workload_name,
};

/// Policies the JobSet controller supports at both levels.
pub const POLICIES: [PolicyOption; 2] = [PolicyOption::Basic, PolicyOption::Gang];
/// Disruption modes the JobSet controller supports at both levels.
pub const DISRUPTION_MODES: [DisruptionModeOption; 2] = [DisruptionModeOption::Single, DisruptionModeOption::All];

fn allow_list() -> AllowList {
    AllowList::new().policies(POLICIES).disruption_modes(DISRUPTION_MODES)
}

/// The controller reference of a JobSet (owner of its Workload, CompositePodGroup, PodGroups and Jobs);
/// `None` before the JobSet has a uid.
pub fn jobset_owner(js: &JobSet) -> Option<OwnerReference> {
    crate::sync::controller_ref(js)
}

/// The name of a JobSet's Workload (upstream's Workload naming on the JobSet's name and uid).
pub fn jobset_workload_name(js: &JobSet) -> String {
    let name = js.name_any();
    generate_workload_name(OwnerKey {
        name: &name,
        uid: js.metadata.uid.as_deref().unwrap_or_default(),
    })
}

/// The number of child groups of the root: one per child Job.
pub fn child_group_count(js: &JobSet) -> i32 {
    js.spec
        .replicated_jobs
        .iter()
        .fold(0i32, |sum, r| sum.saturating_add(r.replicas.max(0)))
}

/// Whether the JobSet starts its replicated jobs in order (`startupPolicyOrder: InOrder`).
pub fn in_order(js: &JobSet) -> bool {
    js.spec
        .startup_policy
        .as_ref()
        .is_some_and(|p| p.startup_policy_order == kwas_api_types::jobset::StartupPolicyOptions::InOrder)
}

/// What stages the JobSet's startup, if anything: `startupPolicyOrder: InOrder` or a replicated job's
/// `dependsOn`.
pub fn staged(js: &JobSet) -> Option<&'static str> {
    if in_order(js) {
        Some("startupPolicyOrder InOrder")
    } else if js.spec.replicated_jobs.iter().any(|r| !r.depends_on.is_empty()) {
        Some("dependsOn")
    } else {
        None
    }
}

/// The number of child groups that exist before any startup gate opens: with `InOrder`, the first
/// replicated job's Jobs (the first with replicas); with `dependsOn`, the Jobs of the replicated jobs that
/// depend on none; otherwise every child group. The root's default gang `minGroupCount` is this number: a
/// composite gang whose children appear in stages counts only the first stage, which is placed as one gang;
/// later stages' groups join the root as their Jobs are created and are placed by their own gang policies
/// (a root gang that waited for all stages would never schedule, as later stages wait for the first to run).
pub fn first_stage_group_count(js: &JobSet) -> i32 {
    if in_order(js) {
        return js
            .spec
            .replicated_jobs
            .iter()
            .map(|r| r.replicas.max(0))
            .find(|r| *r > 0)
            .unwrap_or(0);
    }
    js.spec
        .replicated_jobs
        .iter()
        .filter(|r| r.depends_on.is_empty())
        .fold(0i32, |sum, r| sum.saturating_add(r.replicas.max(0)))
}

/// The structural rules the CRD's CEL validations also express, checked again with field paths (so an API
/// server without CEL, or a JobSet read from a file, gets the same answers).
pub fn validate_structure(js: &JobSet) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let jobs = FieldPath::new("spec").child("replicatedJobs");
    if js.spec.replicated_jobs.is_empty() {
        errs.push(FieldError::required(
            jobs.clone(),
            "a JobSet needs at least one replicated job",
        ));
    }
    let mut seen = std::collections::BTreeSet::new();
    for (i, r) in js.spec.replicated_jobs.iter().enumerate() {
        let p = jobs.index(i).child("name");
        if r.name == ROOT_TEMPLATE_NAME {
            errs.push(FieldError::invalid(
                p.clone(),
                r.name.as_str(),
                "may not be `jobset` (the name of the root template)",
            ));
        }
        if !seen.insert(r.name.as_str()) {
            errs.push(FieldError::duplicate(p.clone(), r.name.as_str()));
        }
        for msg in workloadbuilder::validation::strings::is_dns1123_label(&r.name) {
            errs.push(FieldError::invalid(p.clone(), r.name.as_str(), msg));
        }
        if r.replicas < 0 {
            errs.push(FieldError::invalid(
                jobs.index(i).child("replicas"),
                r.replicas,
                "must be greater than or equal to 0",
            ));
        }
        if r.replicas > MAX_CHILD_JOBS {
            errs.push(FieldError::invalid(
                jobs.index(i).child("replicas"),
                r.replicas,
                format!("must be less than or equal to {MAX_CHILD_JOBS}"),
            ));
        }
    }
    let total = js
        .spec
        .replicated_jobs
        .iter()
        .fold(0i64, |sum, r| sum + i64::from(r.replicas.max(0)));
    if total > i64::from(MAX_CHILD_JOBS) {
        errs.push(FieldError::invalid(
            jobs.clone(),
            total,
            format!("the replicated jobs' replicas may sum to at most {MAX_CHILD_JOBS}"),
        ));
    }
    let class = |r: &kwas_api_types::jobset::ReplicatedJob| pod_template_priority_class(r.template.spec.as_ref());
    if let Some(first) = js.spec.replicated_jobs.first() {
        let want = class(first);
        for (i, r) in js.spec.replicated_jobs.iter().enumerate().skip(1) {
            let got = class(r);
            if got != want {
                errs.push(FieldError::invalid(
                    jobs.index(i)
                        .child("template")
                        .child("spec")
                        .child("template")
                        .child("spec")
                        .child("priorityClassName"),
                    got.unwrap_or_default(),
                    format!(
                        "must equal spec.replicatedJobs[0]'s ({:?}): all pods and groups of a JobSet share one priority",
                        want.clone().unwrap_or_default()
                    ),
                ));
            }
        }
    }
    if js.spec.replicated_jobs.len() > kwas_api_types::jobset::MAX_REPLICATED_JOBS {
        errs.push(FieldError::too_many(
            jobs.clone(),
            js.spec.replicated_jobs.len(),
            kwas_api_types::jobset::MAX_REPLICATED_JOBS,
        ));
    }
    if let Some(s) = &js.spec.scheduling {
        let policies = FieldPath::new("spec")
            .child("scheduling")
            .child("replicatedJobPolicies");
        let mut targets = std::collections::BTreeSet::new();
        for (i, p) in s.replicated_job_policies.iter().enumerate() {
            let path = policies.index(i).child("targetReplicatedJob");
            match js
                .spec
                .replicated_jobs
                .iter()
                .position(|r| r.name == p.target_replicated_job)
            {
                None => errs.push(FieldError::not_found(path.clone(), p.target_replicated_job.as_str())),
                Some(j) => {
                    let nested = js.spec.replicated_jobs[j]
                        .template
                        .spec
                        .as_ref()
                        .and_then(|s| s.scheduling.as_ref());
                    if nested.is_some() {
                        errs.push(FieldError::forbidden(
                            jobs.index(j).child("template").child("spec").child("scheduling"),
                            format!(
                                "may not be set when spec.scheduling.replicatedJobPolicies[{i}] targets replicated job {:?}",
                                p.target_replicated_job
                            ),
                        ));
                    }
                }
            }
            if !targets.insert(p.target_replicated_job.as_str()) {
                errs.push(FieldError::duplicate(path, p.target_replicated_job.as_str()));
            }
        }
    }
    errs
}

/// The user's building blocks checked against the controller's allow-lists.
pub fn validate_blocks(js: &JobSet) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let allow = allow_list();
    let root = FieldPath::new("spec").child("scheduling");
    if let Some(s) = &js.spec.scheduling {
        errs.extend(allow.validate_composite(&composite_block(s), &root));
        for (i, p) in s.replicated_job_policies.iter().enumerate() {
            let path = root.child("replicatedJobPolicies").index(i);
            errs.extend(allow.validate_pod_group(&policy_block(p), &path));
        }
    }
    for (i, r) in js.spec.replicated_jobs.iter().enumerate() {
        let Some(s) = r.template.spec.as_ref().and_then(|s| s.scheduling.as_ref()) else {
            continue;
        };
        let path = FieldPath::new("spec")
            .child("replicatedJobs")
            .index(i)
            .child("template")
            .child("spec")
            .child("scheduling");
        errs.extend(allow.validate_pod_group(&PodGroupBlock::from(s), &path));
    }
    errs
}

/// The JobSet's root block.
fn composite_block(s: &kwas_api_types::jobset::JobSetScheduling) -> CompositeBlock<'_> {
    CompositeBlock {
        scheduling_policy: s.scheduling_policy.as_ref(),
        scheduling_constraints: s.scheduling_constraints.as_ref(),
        disruption_mode: s.disruption_mode.as_ref(),
    }
}

/// A replicated job's block in `replicatedJobPolicies` (no claims there).
fn policy_block(p: &kwas_api_types::jobset::ReplicatedJobPolicy) -> PodGroupBlock<'_> {
    PodGroupBlock {
        scheduling_policy: p.scheduling_policy.as_ref(),
        scheduling_constraints: p.scheduling_constraints.as_ref(),
        disruption_mode: p.disruption_mode.as_ref(),
        resource_claims: &[],
    }
}

/// The exclusive-placement topology of a replicated job's Jobs (`alpha.jobset.sigs.k8s.io/exclusive-topology`
/// on its template, else on the JobSet), unless the node-selector strategy is asked for
/// (`alpha.jobset.sigs.k8s.io/node-selector`, where nodes are labelled per Job instead).
///
/// kwas maps exclusive placement onto its scheduling model instead of upstream's pod affinity: each such
/// Job's PodGroup is placed in one domain of the key (a topology constraint, the default of the replicated
/// job's PodGroupTemplate; a user's `schedulingConstraints` replace it), and its pods keep upstream's
/// required anti-affinity against pods of any other Job that carries a `jobset.sigs.k8s.io/job-key`
/// (`children::exclusive_anti_affinity`), so no two Jobs share a domain. Upstream's anti-affinity also matches
/// only pods of the same priority (`jobset.sigs.k8s.io/priority`, set by its pod webhook); kwas has no pod
/// webhook and keeps Jobs apart whatever their priority.
pub fn exclusive_topology(js: &JobSet, rj: &kwas_api_types::jobset::ReplicatedJob) -> Option<String> {
    let annotations = |m: Option<&std::collections::BTreeMap<String, String>>| m.cloned().unwrap_or_default();
    let template = annotations(rj.template.metadata.as_ref().and_then(|m| m.annotations.as_ref()));
    let jobset = annotations(js.metadata.annotations.as_ref());
    let (source, key) = match template.get(kwas_api_types::jobset::v1alpha2::EXCLUSIVE_KEY) {
        Some(key) => (&template, key),
        None => (&jobset, jobset.get(kwas_api_types::jobset::v1alpha2::EXCLUSIVE_KEY)?),
    };
    (!key.is_empty() && !source.contains_key(kwas_api_types::jobset::v1alpha2::NODE_SELECTOR_STRATEGY_KEY))
        .then(|| key.clone())
}

/// The JobSet's `WorkloadItem` tree (see the module docs), after the structural and block checks.
pub fn jobset_item(js: &JobSet) -> Result<WorkloadItem, FieldErrors> {
    let mut errs = validate_structure(js);
    errs.extend(validate_blocks(js));
    errs.into_result(())?;
    let root_path = FieldPath::new("spec").child("scheduling");
    let scheduling = js.spec.scheduling.as_ref();
    let root_user = allow_list().map_composite(scheduling.map(composite_block), &root_path)?;
    let mut children = Vec::new();
    for (i, rj) in js.spec.replicated_jobs.iter().enumerate() {
        let parallelism = rj
            .template
            .spec
            .as_ref()
            .and_then(|s| s.parallelism)
            .unwrap_or(1)
            .max(1);
        let targeted = scheduling.and_then(|s| {
            s.replicated_job_policies
                .iter()
                .enumerate()
                .find(|(_, p)| p.target_replicated_job == rj.name)
        });
        let (user, path) = match targeted {
            Some((j, p)) => {
                let path = root_path.child("replicatedJobPolicies").index(j);
                (allow_list().map_pod_group(Some(policy_block(p)), &path)?, path)
            }
            None => {
                let path = FieldPath::new("spec")
                    .child("replicatedJobs")
                    .index(i)
                    .child("template")
                    .child("spec")
                    .child("scheduling");
                let cfg = workloadbuilder::job::map_job_scheduling(
                    rj.template.spec.as_ref().and_then(|s| s.scheduling.as_ref()),
                    &path,
                )?;
                (cfg, path)
            }
        };
        let mut default = match exclusive_topology(js, rj) {
            Some(key) => SchedulingConfig::basic().with_topology(key),
            None => SchedulingConfig::basic(),
        };
        default.priority_class_name = pod_template_priority_class(rj.template.spec.as_ref());
        children.push(
            WorkloadItem::new(rj.name.clone())
                .with_default(default)
                .with_user_config(user)
                .with_callback(move |cfg| {
                    cfg.default_gang_min_count(parallelism);
                })
                .with_config_path(path),
        );
    }
    let groups = first_stage_group_count(js).max(1);
    if let Some(stage) = staged(js) {
        let user_min = scheduling
            .and_then(|s| s.scheduling_policy.as_ref())
            .and_then(|p| p.gang.as_ref())
            .and_then(|g| g.min_group_count);
        if let Some(min) = user_min
            && min > groups
        {
            let mut errs = FieldErrors::new();
            errs.push(FieldError::invalid(
                root_path.child("schedulingPolicy").child("gang").child("minGroupCount"),
                min,
                format!(
                    "must be at most {groups}: {stage} creates only {groups} child group(s) before the root gang must be placed, so a larger minimum never schedules"
                ),
            ));
            return Err(errs);
        }
    }
    let mut root_default = SchedulingConfig::gang(None);
    root_default.priority_class_name = js
        .spec
        .replicated_jobs
        .first()
        .and_then(|r| pod_template_priority_class(r.template.spec.as_ref()));
    Ok(WorkloadItem::new(ROOT_TEMPLATE_NAME)
        .with_default(root_default)
        .with_user_config(root_user)
        .with_callback(move |cfg| {
            cfg.default_gang_min_count(groups);
        })
        .with_config_path(root_path)
        .with_children(children))
}

/// The builder of the JobSet's Workload: its tree ([`jobset_item`]) with the controller's allow-list.
/// [`WorkloadBuilder::resolve`] on it shows what the JobSet resolves to.
pub fn jobset_builder(js: &JobSet) -> Result<WorkloadBuilder, FieldErrors> {
    Ok(WorkloadBuilder::new(jobset_item(js)?).allow(allow_list()))
}

/// Compile the JobSet's Workload: named [`jobset_workload_name`], owned by the JobSet.
pub fn compile(js: &JobSet) -> Result<Workload, FieldErrors> {
    jobset_builder(js)?.build(
        &jobset_workload_name(js),
        js.namespace().as_deref().unwrap_or_default(),
        // A JobSet without a uid gets an empty owner, which the builder rejects with field errors.
        &jobset_owner(js).unwrap_or_default(),
    )
}

/// The JobSet's Workload for a cluster without CompositePodGroups ([`WorkloadBuilder::build_flat`]): one
/// PodGroupTemplate per replicated job and no root template, so the root must be Basic (the escape hatch
/// `schedulingPolicy: {basic: {}}`) with no topology and not `all`. Marked as managed by the JobSet
/// controller. The controller itself creates nested Workloads; `kwas compile --flat` shows this one.
pub fn desired_flat_workload(js: &JobSet) -> Result<Workload, FieldErrors> {
    let mut workload = jobset_builder(js)?.build_flat(
        &jobset_workload_name(js),
        js.namespace().as_deref().unwrap_or_default(),
        &jobset_owner(js).unwrap_or_default(),
    )?;
    crate::sync::mark_managed(&mut workload.metadata, kwas_api_types::names::JOBSET_CONTROLLER_NAME);
    Ok(workload)
}

/// What the JobSet's root block (`spec.scheduling`) asks for that only a CompositePodGroup gives: a gang
/// of gangs (`schedulingPolicy.gang`), topology across the replicated jobs (`schedulingConstraints`),
/// disrupting them together (`disruptionMode.all`), as the paths the user wrote.
pub fn composite_only_fields(js: &JobSet) -> Vec<String> {
    let Some(s) = js.spec.scheduling.as_ref() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if s.scheduling_policy.as_ref().is_some_and(|p| p.gang.is_some()) {
        out.push("spec.scheduling.schedulingPolicy.gang".to_string());
    }
    if s.scheduling_constraints
        .as_ref()
        .is_some_and(|c| !c.topology.as_deref().unwrap_or_default().is_empty())
    {
        out.push("spec.scheduling.schedulingConstraints.topology".to_string());
    }
    if s.disruption_mode.as_ref().is_some_and(|d| d.all.is_some()) {
        out.push("spec.scheduling.disruptionMode.all".to_string());
    }
    out
}

/// The Workload for a cluster that serves no CompositePodGroups: the JobSet compiled flat
/// ([`desired_flat_workload`]) with its root Basic, so each replicated job's Jobs are gangs of their own
/// (their PodGroups have no parent) and nothing holds the replicated jobs together. The controller's
/// default gang of gangs is dropped; what the user asked of the root ([`composite_only_fields`]) is left
/// out and returned, for the JobSet's `FlatScheduling` condition to name.
pub fn desired_fallback_workload(js: &JobSet) -> Result<(Workload, Vec<String>), FieldErrors> {
    let refused = composite_only_fields(js);
    let mut flat = js.clone();
    let scheduling = flat.spec.scheduling.get_or_insert_with(Default::default);
    scheduling.scheduling_policy = Some(kwas_api_types::WorkloadCompositePodGroupSchedulingPolicy::basic());
    scheduling.scheduling_constraints = None;
    scheduling.disruption_mode = None;
    Ok((desired_flat_workload(&flat)?, refused))
}

/// The Workload the controller creates: [`compile`]d and marked as managed by the JobSet controller.
pub fn desired_workload(js: &JobSet) -> Result<Workload, FieldErrors> {
    let mut workload = compile(js)?;
    crate::sync::mark_managed(&mut workload.metadata, kwas_api_types::names::JOBSET_CONTROLLER_NAME);
    Ok(workload)
}
