//! The kwas Job controller: a batch/v1 Job controller integrated with workload-aware scheduling
//! (KEP-6089 "Job Integration", KEP-5547).
//!
//! It manages Jobs whose `spec.managedBy` is [`JOB_CONTROLLER_NAME`] (configurable), and, when told so (dev
//! clusters have no built-in Job controller), Jobs with no `managedBy`. For each Job, one reconcile:
//! 1. reads the Job's pods from its pod cache (label `batch.kubernetes.io/controller-uid`, controller owner);
//! 2. syncs its scheduling objects ([`scheduling`]): Workload, then PodGroup, per management mode ([`mode`]);
//! 3. counts terminated pods exactly once with the `batch.kubernetes.io/job-tracking` finalizer ([`plan::track`],
//!    [`plan::flush`]);
//! 4. creates and deletes pods and writes the status and conditions ([`plan::plan`]) by patch.
//!
//! Choices: the Job, its pods, its Workload and PodGroup are read from watch caches ([`cache`],
//! [`crate::index`]), never listed per reconcile; a lagging cache is covered as upstream covers it
//! (expectations of creations and finalizer removals, status writes conditional on the cached Job's
//! resourceVersion, one read of the Job before creating or deleting pods; see [`cache`]). A reconcile runs
//! only on events that change what it computes ([`crate::triggers`]: not on a pod's binding, a PodGroup's
//! status or the Job's own status write), writes the status only when it changed, and sends its events in the background. Pods the
//! controller deletes on purpose (excess, suspend, finished Jobs) have their tracking finalizer removed
//! first and are not counted as failures; an invalid `spec.scheduling` fails the Job (`Failed`, reason
//! `FailedWorkloadCompilation`) without creating pods, as upstream does.
//!
//! batch/v1's failure and success policies are followed as upstream implements them ([`plan::failure_policy`],
//! [`plan::per_index`], [`plan::success_rules`]): the pods' exit codes and conditions reach the plan as
//! [`pods::PodOutcome`]s. The crate's `README.md` lists every JobSpec and JobStatus field and the deviations.
//!
//! # Gang Jobs and preemption
//!
//! kwas's scheduler preempts whole gangs: the victims get the `DisruptionTarget` condition and fail. Without
//! a pod failure policy each of them counts against `backoffLimit`, so one preemption can fail the Job
//! (`BackoffLimitExceeded`). The recommended policy for gang Jobs ignores disruptions:
//!
//! ```yaml
//! podFailurePolicy:
//!   rules:
//!   - action: Ignore
//!     onPodConditions:
//!     - type: DisruptionTarget
//! ```
//!
//! Ignored failures are neither counted nor delay the replacements, and (as with any pod failure policy) a
//! pod being deleted keeps its place until it is terminal, so the gang is re-created only once its
//! preempted members are gone.

pub mod cache;
pub mod mode;
pub mod plan;
pub mod pods;
pub mod scheduling;
pub mod written;

use std::collections::HashSet;
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::batch::v1::{Job, JobStatus};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::scheduling::v1alpha3::{PodGroup, Workload};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, PropagationPolicy};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use kwas_api_types::names::{JOB_CONTROLLER_NAME, conditions, finalizers};
use serde_json::{Value, json};
use tracing::{Instrument, info, info_span, warn};

use crate::error::{Error, Result, is_not_found};
use crate::index::SchedulingIndex;
use crate::informers::Informers;
use crate::metrics::Metrics;
use crate::sync::EventSink;
use crate::triggers::{job_pod_projection, relevant, spec_projection};
use mode::{ManagementMode, management_mode};
use plan::{JobConfig, PlannedEvent, SchedulingDecision, flush, plan_with, track_with};
use pods::{PodOutcome, PodView, new_pod};
use scheduling::{PodPresence, SchedulingContext, sync_scheduling};
use written::Written;

/// Configuration of the Job controller.
#[derive(Clone, Debug)]
pub struct JobControllerConfig {
    /// The `spec.managedBy` value this controller answers for.
    pub managed_by: String,
    /// Also manage Jobs with no `spec.managedBy` (dev clusters, which have no built-in Job controller).
    pub manage_unset: bool,
    /// Pod failure backoff.
    pub job: JobConfig,
    /// Pods created concurrently per reconcile.
    pub create_concurrency: usize,
    /// Jobs reconciled at once (`kwas controllers --concurrent-job-syncs`, kube-controller-manager's flag;
    /// 20 here, 5 there: these reconciles wait on the API server without holding a thread, and at 1000
    /// nodes 20 ran gang Jobs 1.2-1.3x faster than 5, measured). Bounds the requests in flight:
    /// unbounded, 1000 Jobs at once opened more connections than devcluster accepts (1024).
    pub concurrent_syncs: u16,
}

impl Default for JobControllerConfig {
    fn default() -> Self {
        Self {
            managed_by: JOB_CONTROLLER_NAME.to_string(),
            manage_unset: false,
            job: JobConfig::default(),
            create_concurrency: 16,
            concurrent_syncs: 20,
        }
    }
}

/// Shared state of the controller's reconciles.
#[derive(Clone)]
pub struct Context {
    client: Client,
    recorder: Recorder,
    config: JobControllerConfig,
    metrics: Metrics,
    index: SchedulingIndex,
    backoff: Arc<crate::retry::Backoff>,
    pods: Arc<cache::PodCache>,
    written: Arc<Written>,
    jobs: Option<Store<Job>>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context").field("config", &self.config).finish()
    }
}

impl Context {
    /// A context for the controller.
    pub fn new(client: Client, config: JobControllerConfig, metrics: Metrics) -> Self {
        let recorder = Recorder::new(
            client.clone(),
            Reporter {
                controller: config.managed_by.clone(),
                instance: std::env::var("POD_NAME").ok(),
            },
        );
        Self {
            client,
            recorder,
            config,
            metrics,
            index: SchedulingIndex::empty(),
            backoff: Arc::default(),
            pods: Arc::default(),
            written: Arc::default(),
            jobs: None,
        }
    }
}

/// True when this controller manages `job`.
pub fn is_managed(job: &Job, config: &JobControllerConfig) -> bool {
    match job.spec.as_ref().and_then(|s| s.managed_by.as_deref()) {
        Some(m) => m == config.managed_by,
        None => config.manage_unset,
    }
}

fn is_finished(job: &Job) -> bool {
    job.status
        .iter()
        .flat_map(|s| s.conditions.iter().flatten())
        .any(|c| (c.type_ == conditions::JOB_COMPLETE || c.type_ == conditions::JOB_FAILED) && c.status == "True")
}

/// Run the controller on its own watches until `shutdown` resolves (a process that runs several
/// controllers shares one [`Informers`] between them: [`run_on`]).
pub async fn run(ctx: Context, shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static) {
    let mut informers = Informers::new(&ctx.client);
    let controller = run_on(ctx, &mut informers, shutdown);
    let _hubs = informers.spawn();
    controller.await;
}

/// The controller on `informers`' watches (Jobs, Job pods, Workloads, PodGroups), until `shutdown`
/// resolves. It subscribes now; start the informers once every controller of the process subscribed.
pub fn run_on<S>(
    ctx: Context,
    informers: &mut Informers,
    shutdown: S,
) -> impl std::future::Future<Output = ()> + Send + use<S>
where
    S: std::future::Future<Output = ()> + Send + Sync + 'static,
{
    let client = ctx.client.clone();
    let mut ctx = ctx;
    // The Workloads and PodGroups the reconciles read, kept by the same watches that trigger them: an
    // event re-runs a reconcile only after the cache holds the object it announces.
    ctx.index = SchedulingIndex::from_stores(informers.workloads.store(), informers.pod_groups.store());
    let index = ctx.index.clone();
    informers.workloads.inspect(move |e| index.seen(e));
    let index = ctx.index.clone();
    informers.pod_groups.inspect(move |e| index.seen(e));
    let store = informers.jobs.store();
    ctx.jobs = Some(store.clone());
    // A Job's own status (which this controller writes) does not re-run its reconcile; its spec, metadata
    // and deletion do.
    let job_events = relevant(informers.jobs.subscribe(), spec_projection::<Job>);
    // Only events that change what the reconcile computes re-run it: not a pod's binding, not the
    // scheduler's writes of a PodGroup's status.
    let pod_cache = ctx.pods.clone();
    let pod_events = relevant(
        informers.job_pods.subscribe().inspect(move |e| {
            if let Ok(e) = e {
                pod_cache.apply(e);
            }
        }),
        job_pod_projection,
    );
    let group_events = relevant(informers.pod_groups.subscribe(), spec_projection::<PodGroup>);
    let workload_events = relevant(informers.workloads.subscribe(), spec_projection::<Workload>);
    let orphans = informers.job_pods.subscribe();
    let ctx = Arc::new(ctx);
    async move {
        // Aborted when the controller stops or is dropped.
        let _sweeper = AbortOnDrop(tokio::spawn(sweep_orphan_pods(client, orphans, store.clone())));
        let controller = Controller::for_stream(job_events, store.clone());
        controller
            .owns_stream(pod_events)
            .owns_stream(group_events)
            // A Workload re-runs the Job that owns it and, as a parent's Workload, its delegated child Jobs
            // (its appearance unblocks them; its templates' counts are theirs).
            .watches_stream(workload_events, move |w: Workload| {
                let namespace = w.namespace();
                let mut jobs: Vec<ObjectRef<Job>> = w
                    .owner_references()
                    .iter()
                    .filter(|o| o.controller == Some(true) && o.kind == "Job")
                    .map(|o| ObjectRef::new(&o.name).within(namespace.as_deref().unwrap_or_default()))
                    .collect();
                if let Some(r) = w.spec.controller_ref.clone() {
                    jobs.extend(
                        store
                            .state()
                            .into_iter()
                            .filter(|j| j.namespace() == namespace)
                            .filter(|j| {
                                j.owner_references()
                                    .iter()
                                    .any(|o| o.controller == Some(true) && o.kind == r.kind && o.name == r.name)
                            })
                            .map(|j| ObjectRef::from_obj(&*j)),
                    );
                }
                jobs
            })
            .with_config(kube::runtime::controller::Config::default().concurrency(ctx.config.concurrent_syncs))
            .graceful_shutdown_on(shutdown)
            .run(reconcile, error_policy, ctx)
            .for_each(|result| async move {
                if let Err(e) = result {
                    warn!(error = %e, "job reconcile failed");
                }
            })
            .await;
    }
}

/// Aborts a background task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn error_policy(job: Arc<Job>, error: &Error, ctx: Arc<Context>) -> Action {
    let action = crate::retry::action(&ctx.backoff, crate::retry::key(&*job), error);
    warn!(%error, ?action, "retrying job");
    action
}

/// Reconcile one Job.
pub async fn reconcile(job: Arc<Job>, ctx: Arc<Context>) -> Result<Action> {
    if !is_managed(&job, &ctx.config) {
        ctx.metrics.skipped("job");
        return Ok(Action::await_change());
    }
    let span = info_span!("reconcile", controller = "job", namespace = %job.namespace().unwrap_or_default(), job = %job.name_any());
    let timer = ctx.metrics.reconcile("job");
    let result = crate::retry::contain(async {
        let cache_rv = job.metadata.resource_version.clone().unwrap_or_default();
        if let Some(jobs) = &ctx.jobs {
            ctx.written
                .prune(|| jobs.state().iter().filter_map(|j| j.metadata.uid.clone()).collect());
        }
        let start = ctx.written.start(&job);
        match reconcile_managed(&start.job, &ctx, Some(&cache_rv), start.current).await {
            // The cached Job was older than the one stored: read it and run once more.
            Err(Error::StaleCache) => {
                ctx.written.doubt(job.metadata.uid.as_deref().unwrap_or_default());
                match fresh_job(&ctx.client, &job).await? {
                    Some(fresh) => reconcile_managed(&fresh, &ctx, None, false).await,
                    None => Ok(Action::await_change()),
                }
            }
            other => other,
        }
    })
    .instrument(span)
    .await;
    timer.finish(result.is_ok());
    match &result {
        Ok(_) => ctx.backoff.succeeded(&crate::retry::key(&*job)),
        Err(Error::Panic(message)) => {
            EventSink::new(ctx.recorder.clone(), &*job)
                .warning(
                    kwas_api_types::names::events::RECONCILE_ERROR,
                    format!("reconcile panicked: {message}"),
                )
                .await;
        }
        Err(_) => {}
    }
    result
}

/// The Job as stored now, `None` when it is gone or was replaced (another uid).
async fn fresh_job(client: &Client, cached: &Job) -> Result<Option<Job>> {
    let namespace = cached.namespace().ok_or(Error::MissingField("metadata.namespace"))?;
    let jobs: Api<Job> = Api::namespaced(client.clone(), &namespace);
    Ok(jobs
        .get_opt(&cached.name_any())
        .await?
        .filter(|j| j.metadata.uid == cached.metadata.uid))
}

/// Remove the tracking finalizer from `pod`, guarded by a test of the current finalizer list. Returns false
/// when the pod is gone or changed under us (the next reconcile retries).
async fn remove_tracking_finalizer(api: &Api<Pod>, cache: &cache::PodCache, pod: &Pod) -> Result<bool> {
    let removed = remove_finalizer(api, pod).await?;
    if removed && let Some(uid) = pod.metadata.uid.as_deref() {
        cache.expect_finalizer_removal(uid);
    }
    Ok(removed)
}

async fn remove_finalizer(api: &Api<Pod>, pod: &Pod) -> Result<bool> {
    let current = pod.metadata.finalizers.clone().unwrap_or_default();
    if !current.iter().any(|f| f == finalizers::JOB_TRACKING) {
        return Ok(true);
    }
    let kept: Vec<&String> = current.iter().filter(|f| *f != finalizers::JOB_TRACKING).collect();
    let patch: json_patch::Patch = serde_json::from_value(json!([
        {"op": "test", "path": "/metadata/finalizers", "value": current},
        {"op": "replace", "path": "/metadata/finalizers", "value": kept},
    ]))?;
    match api
        .patch(&pod.name_any(), &PatchParams::default(), &Patch::Json::<()>(patch))
        .await
    {
        Ok(_) => Ok(true),
        Err(e) if is_not_found(&e) => Ok(true),
        Err(kube::Error::Api(s)) if s.code == 422 || s.code == 409 => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// The status as a merge patch; fields that must be cleared are sent as null.
fn status_patch(status: &JobStatus) -> Result<Value> {
    let mut value = serde_json::to_value(status)?;
    if let Value::Object(map) = &mut value {
        for field in ["startTime", "completionTime", "completedIndexes", "failedIndexes"] {
            map.entry(field).or_insert(Value::Null);
        }
    }
    Ok(json!({ "status": value }))
}

/// Patch the status of the Job whose stored version is `resource_version` (a precondition: a cached copy
/// older than the stored one is refused with a conflict, [`Error::StaleCache`]). Returns the new
/// resourceVersion.
async fn patch_status(api: &Api<Job>, name: &str, resource_version: &str, status: &JobStatus) -> Result<Job> {
    let mut patch = status_patch(status)?;
    patch["metadata"] = json!({ "resourceVersion": resource_version });
    match api
        .patch_status(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
    {
        Ok(job) => Ok(job),
        Err(e) if crate::error::is_conflict(&e) => Err(Error::StaleCache),
        Err(e) => Err(e.into()),
    }
}

fn record(events: &EventSink, planned: &[PlannedEvent]) {
    for e in planned {
        events.emit(e.warning, &e.reason, e.message.clone());
    }
}

/// One reconcile of `cached`: a Job from the cache (`cache_rv` the version the cache holds, which the
/// Job may be newer than when it is this controller's last write) or, with `cache_rv` `None`, just read
/// from the API. `current`: the Job's status is known to be the stored one's (see [`written`]).
async fn reconcile_managed(cached: &Job, ctx: &Context, cache_rv: Option<&str>, current: bool) -> Result<Action> {
    let mut current = current;
    let fresh = cache_rv.is_none();
    let client = &ctx.client;
    let namespace = cached.namespace().ok_or(Error::MissingField("metadata.namespace"))?;
    let name = cached.name_any();
    let jobs: Api<Job> = Api::namespaced(client.clone(), &namespace);
    if !ctx.pods.is_ready() || !ctx.index.is_ready() {
        // Before the first lists the caches cannot tell a Job without pods or scheduling objects.
        return Ok(Action::requeue(std::time::Duration::from_millis(100)));
    }
    // The Job and its pods come from the caches. Every status write is conditional on the cached Job's
    // resourceVersion, so a Job older than the stored one is re-read and the reconcile run again
    // ([`Error::StaleCache`]); expectations (see [`cache`]) cover the pods.
    let job = cached;
    let uid = job.metadata.uid.clone().ok_or(Error::MissingField("metadata.uid"))?;
    let mut resource_version = job.metadata.resource_version.clone().unwrap_or_default();
    let pods_api: Api<Pod> = Api::namespaced(client.clone(), &namespace);
    let events = EventSink::new(ctx.recorder.clone(), job);
    // The pods and the creation expectations in one read (see `PodCache::pods_and_expectations`).
    let (pods, creations_satisfied) = ctx.pods.pods_and_expectations(&uid, std::time::Instant::now());
    let pods: Vec<Pod> = pods.iter().map(|p| (**p).clone()).collect();

    // A deleted Job releases its pods' finalizers so garbage collection can remove them.
    if job.metadata.deletion_timestamp.is_some() {
        for p in &pods {
            remove_tracking_finalizer(&pods_api, &ctx.pods, p).await?;
        }
        ctx.pods.forget(&uid);
        ctx.written.forget(&uid);
        return Ok(Action::await_change());
    }
    // Pods this controller created and the cache does not show yet: managing pods now would create them
    // again. Their watch events re-run the reconcile.
    if !creations_satisfied {
        return Ok(Action::requeue(std::time::Duration::from_secs(1)));
    }

    // 1. Scheduling objects (Workload, then PodGroup), unless the Job is done.
    let decision = if is_finished(job) {
        SchedulingDecision::Group(None)
    } else {
        match management_mode(job) {
            Ok(mode) => {
                let cx = SchedulingContext {
                    client,
                    controller: &ctx.config.managed_by,
                    events: &events,
                    index: &ctx.index,
                };
                let presence = PodPresence::of(&pods, |p| PodView::of(p).is_terminal());
                let result = sync_scheduling(cx, job, &mode, presence).await;
                if !matches!(mode, ManagementMode::None(_)) {
                    let ok = matches!(result, Ok(ref d) if !matches!(d, SchedulingDecision::Blocked { .. }));
                    ctx.metrics.scheduling_sync("job", ok);
                }
                result?
            }
            Err(errs) => SchedulingDecision::Blocked {
                reason: conditions::REASON_UNSUPPORTED_WORKLOAD_STRUCTURE.to_string(),
                message: format!("invalid downward-mapping annotations: {errs}"),
            },
        }
    };

    // 2. Count terminated pods exactly once: record them, then release their finalizers, then flush.
    // A pod whose finalizer removal the cache has not shown yet is no longer tracked.
    let views: Vec<PodView> = pods
        .iter()
        .map(|p| PodView {
            tracked: ctx.pods.is_tracked(p),
            ..PodView::of(p)
        })
        .collect();
    // Exit codes, conditions (DisruptionTarget) and index failure counts, for the pod failure policy and
    // backoffLimitPerIndex.
    let outcomes = PodOutcome::all(&pods);
    let tracking = track_with(job, &views, &outcomes, Timestamp::now());
    // The status as the API server holds it: written only when a step changes it.
    let mut written = job.status.clone().unwrap_or_default();
    if tracking.changed {
        let patched = patch_status(&jobs, &name, &resource_version, &tracking.status).await?;
        resource_version = patched.metadata.resource_version.clone().unwrap_or_default();
        if let Some(base) = cache_rv {
            // The write was conditional on the version started from: it was the stored one.
            ctx.written.remember(base, patched);
            current = true;
        }
        written = tracking.status.clone();
    }
    let mut still_tracked: HashSet<String> = views.iter().filter(|p| p.tracked).map(|p| p.uid.clone()).collect();
    for pod in pods
        .iter()
        .filter(|p| tracking.remove_finalizers.contains(&p.name_any()))
    {
        if remove_tracking_finalizer(&pods_api, &ctx.pods, pod).await?
            && let Some(uid) = &pod.metadata.uid
        {
            still_tracked.remove(uid);
        }
    }
    let mut status = tracking.status;
    flush(job, &mut status, &still_tracked);

    // 3. Pods, conditions and status.
    let decided = plan_with(
        job,
        status,
        &views,
        &outcomes,
        &decision,
        Timestamp::now(),
        &ctx.config.job,
    );
    // Creating or deleting pods rests on the counts of the status: a cached Job older than the stored one
    // (whose status counted pods this one does not) would create pods already run. Unless the Job is
    // known current (see [`written`]), one read settles it before acting; reconciles that only watch do
    // not pay it.
    if !fresh && !current && (!decided.create.is_empty() || !decided.delete.is_empty()) {
        let stored = fresh_job(client, job).await?.and_then(|j| j.metadata.resource_version);
        if stored.is_none_or(|stored| stored != resource_version) {
            return Err(Error::StaleCache);
        }
        ctx.written.verify(&uid);
    }
    for pod_name in &decided.delete {
        if let Some(pod) = pods.iter().find(|p| p.name_any() == *pod_name) {
            remove_tracking_finalizer(&pods_api, &ctx.pods, pod).await?;
            match pods_api.delete(pod_name, &DeleteParams::default()).await {
                Ok(_) => events.emit(false, "SuccessfulDelete", format!("Deleted pod: {pod_name}")),
                Err(e) if is_not_found(&e) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
    if !decided.create.is_empty()
        && job.status.as_ref().is_none_or(|s| s.start_time.is_none())
        && job.spec.as_ref().and_then(|s| s.manual_selector) == Some(true)
    {
        // Said, not silently dropped: upstream adopts orphans matching a manual selector; kwas does not.
        events.emit(
            true,
            kwas_api_types::names::events::MANUAL_SELECTOR_NOT_ADOPTING,
            "spec.manualSelector: pods are found by the batch.kubernetes.io/controller-uid label and the \
             controller reference; orphan pods matching spec.selector are not adopted"
                .to_string(),
        );
    }
    let created = create_pods(
        ctx,
        job,
        &pods_api,
        &decided.create,
        &decided.create_annotations,
        decided.pod_group.as_deref(),
        &events,
    )
    .await;
    let mut status = decided.status.clone();
    if let Err(failed) = &created {
        // Pods that could not be created are not active; the status reflects what exists.
        status.active = Some(status.active.unwrap_or(0) - failed.0);
    }
    record(&events, &decided.events);
    if status != written {
        let patched = patch_status(&jobs, &name, &resource_version, &status).await?;
        if let Some(base) = cache_rv {
            ctx.written.remember(base, patched);
        }
    }
    if let Err((_, e)) = created {
        return Err(e);
    }
    if decided.delete_job {
        info!("deleting finished Job after its TTL");
        let dp = DeleteParams {
            propagation_policy: Some(PropagationPolicy::Foreground),
            ..DeleteParams::default()
        };
        match jobs.delete(&name, &dp).await {
            Ok(_) => {}
            Err(e) if is_not_found(&e) => {}
            Err(e) => return Err(e.into()),
        }
        return Ok(Action::await_change());
    }
    Ok(match decided.requeue_after {
        Some(d) => Action::requeue(d),
        None => Action::await_change(),
    })
}

/// Create the planned pods with bounded concurrency. On failure returns how many were not created and the
/// first error.
async fn create_pods(
    ctx: &Context,
    job: &Job,
    api: &Api<Pod>,
    indexes: &[Option<i32>],
    annotations: &std::collections::BTreeMap<i32, std::collections::BTreeMap<String, String>>,
    pod_group: Option<&str>,
    events: &EventSink,
) -> std::result::Result<(), (i32, Error)> {
    // KEP-5729: the PodGroup's claims are shared by its pods; each pod names them identically.
    let group_claims = match pod_group {
        Some(g) if !indexes.is_empty() => {
            crate::sync::get_cached::<PodGroup>(&ctx.client, &ctx.index, &job.namespace().unwrap_or_default(), g)
                .await
                .map_err(|e| (indexes.len() as i32, e))?
                .and_then(|g| g.spec.resource_claims)
                .unwrap_or_default()
        }
        _ => Vec::new(),
    };
    let job_uid = job.metadata.uid.clone().unwrap_or_default();
    ctx.pods
        .expect_creations(&job_uid, indexes.len(), std::time::Instant::now());
    let results: Vec<std::result::Result<String, kube::Error>> = futures::stream::iter(indexes.iter().copied())
        .map(|index| {
            let mut pod = new_pod(job, index, pod_group);
            if let Some(extra) = index.and_then(|i| annotations.get(&i)) {
                pod.metadata
                    .annotations
                    .get_or_insert_with(Default::default)
                    .extend(extra.clone());
            }
            pods::share_group_claims(&mut pod, &group_claims);
            async move { api.create(&PostParams::default(), &pod).await.map(|p| p.name_any()) }
        })
        .buffer_unordered(ctx.config.create_concurrency.max(1))
        .collect()
        .await;
    let mut failed = 0;
    let mut first = None;
    for r in results {
        match r {
            Ok(name) => events.emit(false, "SuccessfulCreate", format!("Created pod: {name}")),
            Err(e) => {
                ctx.pods.creation_failed(&job_uid);
                failed += 1;
                if first.is_none() {
                    events.emit(true, "FailedCreate", format!("Error creating: {e}"));
                    first = Some(e);
                }
            }
        }
    }
    match first {
        None => Ok(()),
        Some(e) => Err((failed, e.into())),
    }
}

/// Remove the tracking finalizer from pods whose Job no longer exists (deleted in the background or with
/// orphan propagation), so they are not stuck. Runs for the controller's lifetime on the Job pods' events;
/// a pod whose Job the Job cache holds is not an orphan, so only a pod whose Job the cache lacks costs a
/// read (the cache may lag behind a Job just created).
async fn sweep_orphan_pods(client: Client, events: crate::informers::Events<Pod>, jobs: Store<Job>) {
    let mut stream = events;
    while let Some(event) = stream.next().await {
        let pod = match event {
            Ok(watcher::Event::Apply(p)) | Ok(watcher::Event::InitApply(p)) => p,
            Ok(_) => continue,
            Err(e) => {
                warn!(error = %e, "orphan pod watch");
                continue;
            }
        };
        if !pod.finalizers().iter().any(|f| f == finalizers::JOB_TRACKING) {
            continue;
        }
        let Some(namespace) = pod.metadata.namespace.clone() else {
            continue;
        };
        let owner = pod
            .owner_references()
            .iter()
            .find(|r| r.controller == Some(true) && r.kind == "Job")
            .cloned();
        let orphan = match &owner {
            None => true,
            Some(o) => {
                let cached = jobs
                    .get(&ObjectRef::new(&o.name).within(&namespace))
                    .is_some_and(|j| j.metadata.uid.as_deref() == Some(o.uid.as_str()));
                if cached {
                    false
                } else {
                    let api: Api<Job> = Api::namespaced(client.clone(), &namespace);
                    match api.get_opt(&o.name).await {
                        Ok(Some(j)) => j.metadata.uid.as_deref() != Some(o.uid.as_str()),
                        Ok(None) => true,
                        Err(_) => false,
                    }
                }
            }
        };
        if orphan {
            let api: Api<Pod> = Api::namespaced(client.clone(), &namespace);
            if let Err(e) = remove_finalizer(&api, &pod).await {
                warn!(error = %e, pod = %pod.name_any(), "releasing orphan pod");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::batch::v1::JobSpec;

    #[test]
    fn managed_by_selection() {
        let mut job = Job {
            spec: Some(JobSpec::default()),
            ..Job::default()
        };
        let mut config = JobControllerConfig::default();
        assert!(!is_managed(&job, &config));
        config.manage_unset = true;
        assert!(is_managed(&job, &config));
        job.spec.as_mut().unwrap().managed_by = Some("kubernetes.io/job-controller".into());
        assert!(!is_managed(&job, &config));
        job.spec.as_mut().unwrap().managed_by = Some(JOB_CONTROLLER_NAME.into());
        assert!(is_managed(&job, &config));
    }

    #[test]
    fn status_patch_clears_unset_fields() {
        let patch = status_patch(&JobStatus::default()).unwrap();
        assert_eq!(patch["status"]["startTime"], Value::Null);
        assert!(patch["status"].as_object().unwrap().contains_key("completionTime"));
    }
}
