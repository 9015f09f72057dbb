//! The JobSet-style controller: a multi-level composite controller on `workloadbuilder`, with both KEP-6089 API
//! options (nested Job-template scheduling and targeted `replicatedJobPolicies`) and both PodGroup management
//! strategies (centralized and delegated).
//!
//! One reconcile, in upstream's creation order:
//! 1. compile the Workload ([`compile`]); invalid intent fails the JobSet (`Failed`, reason
//!    `InvalidSchedulingConfiguration`) with a Warning event carrying the field paths, and creates nothing;
//! 2. ensure the Workload (owned by the JobSet), then the root CompositePodGroup;
//! 3. centralized: ensure each child Job's PodGroup, then the Job (its pod template names the PodGroup);
//!    delegated: create the Jobs with the downward-mapping annotations (the Job controller creates the
//!    PodGroups under the root);
//! 4. success, failure with restarts, suspend and resume, status ([`plan`]).
//!
//! A changed gang size (a replicated job's `minCount`, or its `parallelism` when `minCount` is unset) is
//! re-synced: written to the Workload's template (the one mutable field of its templates) and, centralized,
//! to the child PodGroups; delegated child Jobs' controller re-syncs their PodGroups from the template.
//! Other scheduling edits do not change groups that exist (their specs are immutable); they apply to the
//! groups of the next restart attempt only if the Workload is recreated, so make them on a new JobSet.
//!
//! Child Jobs, the root CompositePodGroup and centralized PodGroups are owned by the JobSet; deleting it lets
//! garbage collection remove everything below it, groups last (the PodGroup protection finalizer keeps each
//! group until nothing references it). A restart deletes the previous attempt's Jobs, PodGroups and root
//! group and waits until they are gone before recreating them.

pub mod children;
pub mod compile;
pub mod plan;

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::scheduling::v1alpha3::{CompositePodGroup, PodGroup};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PropagationPolicy};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use kwas_api::jobset::{JobSet, JobSetStatus, PodGroupManagement, conditions};
use kwas_api::names::{JOB_CONTROLLER_NAME, JOBSET_CONTROLLER_NAME, events as event_reasons, labels};
use serde_json::json;
use tracing::{Instrument, info_span, warn};

use crate::error::{Error, Result, is_not_found};
use crate::index::SchedulingIndex;
use crate::metrics::Metrics;
use crate::sync::{
    EventSink, create_composite_pod_group, create_or_get, create_pod_group, create_workload, find_workloads, get_opt,
    sync_pod_group_min_count, sync_workload_min_count,
};
use children::{
    ChildWiring, child_group_name, children, desired_child_group, desired_job, desired_root_group, root_group_name,
};
use compile::desired_workload;

/// Configuration of the JobSet controller.
#[derive(Clone, Debug)]
pub struct JobSetControllerConfig {
    /// The PodGroup management of JobSets that do not choose one.
    pub default_management: PodGroupManagement,
    /// The `spec.managedBy` of child Jobs: the Job controller that runs them (`None`: the cluster's default
    /// Job controller).
    pub job_managed_by: Option<String>,
}

impl Default for JobSetControllerConfig {
    fn default() -> Self {
        Self {
            default_management: PodGroupManagement::Centralized,
            job_managed_by: Some(JOB_CONTROLLER_NAME.to_string()),
        }
    }
}

/// Shared state of the controller's reconciles.
#[derive(Clone)]
pub struct Context {
    client: Client,
    recorder: Recorder,
    config: JobSetControllerConfig,
    metrics: Metrics,
    index: SchedulingIndex,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context").field("config", &self.config).finish()
    }
}

impl Context {
    /// A context for the controller.
    pub fn new(client: Client, config: JobSetControllerConfig, metrics: Metrics) -> Self {
        let recorder = Recorder::new(
            client.clone(),
            Reporter {
                controller: JOBSET_CONTROLLER_NAME.to_string(),
                instance: std::env::var("POD_NAME").ok(),
            },
        );
        Self {
            client,
            recorder,
            config,
            metrics,
            index: SchedulingIndex::empty(),
        }
    }
}

/// The PodGroup management of `js`.
pub fn management(js: &JobSet, config: &JobSetControllerConfig) -> PodGroupManagement {
    js.spec
        .scheduling
        .as_ref()
        .and_then(|s| s.pod_group_management)
        .unwrap_or(config.default_management)
}

/// Run the controller until `shutdown` resolves.
pub async fn run(ctx: Context, shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static) {
    let client = ctx.client.clone();
    let jobsets: Api<JobSet> = Api::all(client.clone());
    let jobs: Api<Job> = Api::all(client.clone());
    let groups: Api<PodGroup> = Api::all(client.clone());
    let composites: Api<CompositePodGroup> = Api::all(client.clone());
    let owned = || watcher::Config::default().labels(labels::JOBSET_NAME);
    let mut ctx = ctx;
    let (index, _feeders) = SchedulingIndex::start(&client);
    index.ready().await;
    ctx.index = index;
    Controller::new(jobsets, watcher::Config::default())
        .owns(jobs, owned())
        .owns(groups, owned())
        .owns(composites, owned())
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy, Arc::new(ctx))
        .for_each(|result| async move {
            if let Err(e) = result {
                warn!(error = %e, "jobset reconcile failed");
            }
        })
        .await;
}

fn error_policy(_js: Arc<JobSet>, error: &Error, _ctx: Arc<Context>) -> Action {
    warn!(%error, "retrying jobset");
    Action::requeue(Duration::from_secs(2))
}

/// Reconcile one JobSet.
pub async fn reconcile(js: Arc<JobSet>, ctx: Arc<Context>) -> Result<Action> {
    let span = info_span!("reconcile", controller = "jobset", namespace = %js.namespace().unwrap_or_default(), jobset = %js.name_any());
    let timer = ctx.metrics.reconcile("jobset");
    let result = reconcile_inner(&js, &ctx).instrument(span).await;
    timer.finish(result.is_ok());
    result
}

async fn patch_status(api: &Api<JobSet>, name: &str, status: &JobSetStatus) -> Result<()> {
    api.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({ "status": status })),
    )
    .await?;
    Ok(())
}

fn is_finished(js: &JobSet) -> bool {
    js.status
        .iter()
        .flat_map(|s| s.conditions.iter().flatten())
        .any(|c| (c.type_ == conditions::COMPLETED || c.type_ == conditions::FAILED) && c.status == "True")
}

async fn list_children(client: &Client, js: &JobSet) -> Result<Vec<Job>> {
    let namespace = js.namespace().ok_or(Error::MissingField("metadata.namespace"))?;
    let uid = js.metadata.uid.clone().unwrap_or_default();
    let api: Api<Job> = Api::namespaced(client.clone(), &namespace);
    let selector = format!("{}={}", labels::JOBSET_NAME, js.name_any());
    Ok(api
        .list(&ListParams::default().labels(&selector))
        .await?
        .items
        .into_iter()
        .filter(|j| {
            j.owner_references()
                .iter()
                .any(|r| r.controller == Some(true) && r.uid == uid)
        })
        .collect())
}

async fn delete_job(api: &Api<Job>, name: &str) -> Result<()> {
    let dp = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Foreground),
        ..DeleteParams::default()
    };
    match api.delete(name, &dp).await {
        Ok(_) => Ok(()),
        Err(e) if is_not_found(&e) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

async fn fail_invalid(js: &JobSet, api: &Api<JobSet>, events: &EventSink, message: String) -> Result<Action> {
    let mut status = js.status.clone().unwrap_or_default();
    let conditions_list = status.conditions.get_or_insert_with(Vec::new);
    if !conditions_list.iter().any(|c| c.type_ == conditions::FAILED) {
        conditions_list.push(Condition {
            type_: conditions::FAILED.into(),
            status: "True".into(),
            reason: conditions::REASON_INVALID_SCHEDULING.into(),
            message: message.clone(),
            last_transition_time: Time(Timestamp::now()),
            observed_generation: js.metadata.generation,
        });
        events
            .warning(event_reasons::FAILED_WORKLOAD_COMPILATION, message)
            .await;
        patch_status(api, &js.name_any(), &status).await?;
    }
    Ok(Action::await_change())
}

async fn reconcile_inner(cached: &JobSet, ctx: &Context) -> Result<Action> {
    let client = &ctx.client;
    let namespace = cached.namespace().ok_or(Error::MissingField("metadata.namespace"))?;
    let name = cached.name_any();
    let jobsets: Api<JobSet> = Api::namespaced(client.clone(), &namespace);
    // Decisions rest on the status this controller last wrote (`restarts` above all), not a cached copy.
    let Some(js) = jobsets.get_opt(&name).await? else {
        return Ok(Action::await_change());
    };
    if js.metadata.uid != cached.metadata.uid || js.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let js = &js;
    let jobs_api: Api<Job> = Api::namespaced(client.clone(), &namespace);
    let events = EventSink::new(ctx.recorder.clone(), js);
    if is_finished(js) {
        // Clean up what a finished JobSet still runs.
        let jobs = list_children(client, js).await?;
        let decided = plan::plan(js, &jobs, Timestamp::now());
        for j in &decided.delete {
            delete_job(&jobs_api, j).await?;
        }
        return Ok(Action::await_change());
    }

    // 1. Compile.
    let desired = match desired_workload(js) {
        Ok(w) => w,
        Err(errs) => {
            return fail_invalid(
                js,
                &jobsets,
                &events,
                format!("Failed to compile Workload for JobSet {name}: {errs}"),
            )
            .await;
        }
    };

    // 2. Workload, then the root CompositePodGroup.
    let own = desired.name_any();
    let lookup = crate::sync::Lookup {
        index: &ctx.index,
        own_name: Some(&own),
    };
    let found = find_workloads(client, lookup, &namespace, kwas_api::names::KWAS_GROUP, "JobSet", &name).await?;
    let workload = match found.as_slice() {
        [] => {
            let created = create_workload(client, &desired, &events).await;
            ctx.metrics.scheduling_sync("jobset", created.is_ok());
            created?
        }
        [one] => one.clone(),
        many => {
            return fail_invalid(
                js,
                &jobsets,
                &events,
                format!("found {} Workloads referencing JobSet {name}", many.len()),
            )
            .await;
        }
    };
    let gang_sizes = leaf_min_counts(&desired);
    for (template, count) in &gang_sizes {
        sync_workload_min_count(client, &workload, template, *count).await?;
    }
    let jobs = list_children(client, js).await?;
    let decided = plan::plan(js, &jobs, Timestamp::now());
    let mut status = decided.status.clone();
    status.workload_name = Some(workload.name_any());
    let root_name = root_group_name(&workload.name_any());
    status.composite_pod_group_name = Some(root_name.clone());
    for e in &decided.events {
        if e.warning {
            events.warning(&e.reason, e.message.clone()).await;
        } else {
            events.normal(&e.reason, e.message.clone()).await;
        }
    }
    if decided.restart_started {
        patch_status(&jobsets, &name, &status).await?;
        return Ok(Action::requeue(Duration::ZERO));
    }
    if decided.restarting {
        // Tear down the previous attempt: its Jobs, their PodGroups and the root group.
        for j in &decided.delete {
            delete_job(&jobs_api, j).await?;
            let child = children(js).into_iter().find(|c| c.name == *j);
            if let Some(c) = child {
                crate::sync::delete::<PodGroup>(client, &namespace, &child_group_name(&c)).await?;
            }
        }
        crate::sync::delete::<CompositePodGroup>(client, &namespace, &root_name).await?;
        patch_status(&jobsets, &name, &status).await?;
        return Ok(Action::requeue(Duration::from_secs(1)));
    }
    for j in &decided.delete {
        delete_job(&jobs_api, j).await?;
    }
    if decided.delete.is_empty() || !is_terminal(&status) {
        // The root group, then (centralized) each child's PodGroup before its Job.
        let root: Option<CompositePodGroup> = get_opt(client, &namespace, &root_name).await?;
        match root {
            Some(r) if r.metadata.deletion_timestamp.is_some() => {
                patch_status(&jobsets, &name, &status).await?;
                return Ok(Action::requeue(Duration::from_secs(1)));
            }
            Some(_) => {}
            None => match desired_root_group(js, &workload) {
                Ok(group) => {
                    let created = create_composite_pod_group(client, &group, &events).await;
                    ctx.metrics.scheduling_sync("jobset", created.is_ok());
                    created?;
                }
                Err(e) => return fail_invalid(js, &jobsets, &events, e.to_string()).await,
            },
        }
        let wiring = ChildWiring {
            management: management(js, &ctx.config),
            root_group: root_name.clone(),
            job_managed_by: ctx.config.job_managed_by.clone(),
            restart_attempt: status.restarts,
        };
        if wiring.management == PodGroupManagement::Centralized {
            resync_child_groups(client, &ctx.index, js, &workload.name_any(), &gang_sizes).await?;
        }
        for child in &decided.create {
            if wiring.management == PodGroupManagement::Centralized {
                match desired_child_group(js, &workload, child) {
                    Ok(group) => {
                        let created = create_pod_group(client, &group, &events).await;
                        ctx.metrics.scheduling_sync("jobset", created.is_ok());
                        created?;
                    }
                    Err(e) => return fail_invalid(js, &jobsets, &events, e.to_string()).await,
                }
            }
            let job = desired_job(js, child, &wiring);
            create_or_get(client, &job, "Job", &events, "SuccessfulCreate", Some("FailedCreate")).await?;
        }
        for (job_name, suspend) in &decided.set_suspend {
            let patch = json!({"spec": {"suspend": suspend}});
            match jobs_api
                .patch(job_name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => {}
                Err(e) if is_not_found(&e) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
    patch_status(&jobsets, &name, &status).await?;
    Ok(Action::await_change())
}

/// Each leaf template's gang `minCount` in `workload` (leaves that are not gangs are left out).
fn leaf_min_counts(workload: &k8s_openapi::api::scheduling::v1alpha3::Workload) -> Vec<(String, i32)> {
    let mut out = Vec::new();
    let mut stack: Vec<&k8s_openapi::api::scheduling::v1alpha3::CompositePodGroupTemplate> =
        workload.spec.composite_pod_group_templates.iter().flatten().collect();
    let leaves = workload.spec.pod_group_templates.iter().flatten();
    let mut push = |t: &k8s_openapi::api::scheduling::v1alpha3::PodGroupTemplate| {
        if let Some(g) = &t.scheduling_policy.gang {
            out.push((t.name.clone(), g.min_count));
        }
    };
    leaves.for_each(&mut push);
    while let Some(c) = stack.pop() {
        c.pod_group_templates.iter().flatten().for_each(&mut push);
        stack.extend(c.composite_pod_group_templates.iter().flatten());
    }
    out
}

/// Centralized management: write each child PodGroup's gang `minCount` from its template's. The groups come
/// from the discovery cache (no LIST per reconcile): a lagging copy at worst repeats an idempotent patch,
/// and the change that made the copy stale triggers another reconcile.
async fn resync_child_groups(
    client: &Client,
    index: &SchedulingIndex,
    js: &JobSet,
    workload: &str,
    sizes: &[(String, i32)],
) -> Result<()> {
    if sizes.is_empty() {
        return Ok(());
    }
    let uid = js.metadata.uid.clone().unwrap_or_default();
    for group in index.pod_groups_of(&js.namespace().unwrap_or_default(), workload) {
        if group.metadata.deletion_timestamp.is_some() || !crate::sync::is_controlled_by(&group.metadata, &uid) {
            continue;
        }
        let template = group.spec.workload_ref.as_ref().map(|r| r.template_name.as_str());
        if let Some((_, count)) = sizes.iter().find(|(t, _)| Some(t.as_str()) == template) {
            sync_pod_group_min_count(client, &group, *count).await?;
        }
    }
    Ok(())
}

fn is_terminal(status: &JobSetStatus) -> bool {
    status
        .conditions
        .iter()
        .flatten()
        .any(|c| (c.type_ == conditions::COMPLETED || c.type_ == conditions::FAILED) && c.status == "True")
}
