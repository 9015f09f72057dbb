//! The JobSet-style controller: a multi-level composite controller on `workloadbuilder`, with both KEP-6089 API
//! options (nested Job-template scheduling and targeted `replicatedJobPolicies`) and both PodGroup management
//! strategies (centralized and delegated).
//!
//! One reconcile, in upstream's creation order:
//! 1. compile the Workload ([`compile`]); invalid intent on a JobSet without a Workload fails the JobSet
//!    (`Failed`, reason `InvalidSchedulingConfiguration`) with a Warning event carrying the field paths, and
//!    creates nothing;
//! 2. ensure the Workload (owned by the JobSet), then the root CompositePodGroup;
//! 3. centralized: ensure each child Job's PodGroup, then the Job (its pod template names the PodGroup);
//!    delegated: create the Jobs with the downward-mapping annotations (the Job controller creates the
//!    PodGroups under the root);
//! 4. success, failure with restarts, suspend and resume, status ([`policy`]).
//!
//! Edits after the Workload exists: the CRD's transition rules reject, at the API, edits to replicated jobs'
//! names, counts and Job templates and to `spec.scheduling` other than a gang's `minCount`. A changed gang
//! `minCount` (in a Job template or a `replicatedJobPolicies` entry) is re-synced when the JobSet owns the
//! Workload: written to the Workload's template (the one mutable field of its templates)
//! and, centralized, to the child PodGroups; delegated child Jobs' controller re-syncs their PodGroups from
//! the template. An edit the Workload cannot take (one that got past the API, say with the rules removed,
//! or an invalid compiled result) is checked with the library's Workload update validation and reported:
//! condition `SchedulingUpdateRejected` (reason `ImmutableSchedulingField` or
//! `InvalidSchedulingConfiguration`) and a Warning event with the field paths; the JobSet keeps running on
//! the scheduling objects it has and nothing else is changed until the edit is reverted.
//!
//! Child Jobs, the root CompositePodGroup and centralized PodGroups are owned by the JobSet; deleting it lets
//! garbage collection remove everything below it, groups last (the PodGroup protection finalizer keeps each
//! group until nothing references it). A restart deletes the previous attempt's Jobs, PodGroups and root
//! group and waits until they are gone before recreating them.

pub mod children;
pub mod compile;
pub mod decide;
pub mod gangs;
pub mod index;
pub mod policy;
pub mod written;

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::scheduling::v1alpha3::{CompositePodGroup, PodGroup, Workload};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PropagationPolicy};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use kwas_api_types::jobset::{JobSet, JobSetStatus, PodGroupManagement, conditions, v1alpha2};
use kwas_api_types::names::{JOB_CONTROLLER_NAME, JOBSET_CONTROLLER_NAME, events as event_reasons, labels};
use serde_json::json;
use tracing::{Instrument, info_span, warn};

use crate::error::{Error, Result, is_not_found};
use crate::index::SchedulingIndex;
use crate::informers::Informers;
use crate::metrics::Metrics;
use crate::sync::{
    EventSink, create_composite_pod_group, create_or_get, create_pod_group, create_workload, find_workloads,
    sync_pod_group_min_count, sync_workload_min_count,
};
use children::root_group_name;

/// Which JobSets the controller reconciles, by `spec.managedBy`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Install {
    /// kwas installed the JobSet CRD and is the cluster's JobSet controller: it reconciles JobSets
    /// without `managedBy`, with the JobSet project's controller name
    /// (`jobset.sigs.k8s.io/jobset-controller`) and with kwas' (`kwas.dev/jobset-controller`).
    #[default]
    Standalone,
    /// The JobSet project's controller runs too: kwas reconciles only JobSets whose `managedBy` is
    /// `kwas.dev/jobset-controller` (which the JobSet project's controller skips).
    Alongside,
}

impl Install {
    /// Whether a JobSet with this `spec.managedBy` is kwas' to reconcile.
    pub fn manages(self, managed_by: Option<&str>) -> bool {
        use kwas_api_types::jobset::v1alpha2::constants::JOBSET_CONTROLLER_NAME as UPSTREAM;
        matches!(
            (self, managed_by),
            (_, Some(JOBSET_CONTROLLER_NAME)) | (Install::Standalone, None | Some(UPSTREAM))
        )
    }
}

/// The `Failed` reason of a JobSet the JobSet project's validating webhook would have refused (kwas).
pub const INVALID_JOBSET: &str = "InvalidJobSet";

/// Configuration of the JobSet controller.
#[derive(Clone, Debug)]
pub struct JobSetControllerConfig {
    /// Which JobSets are kwas' (by `spec.managedBy`).
    pub install: Install,
    /// The PodGroup management of JobSets that do not choose one.
    pub default_management: PodGroupManagement,
    /// The `spec.managedBy` of child Jobs: the Job controller that runs them (`None`: the cluster's default
    /// Job controller).
    pub job_managed_by: Option<String>,
    /// JobSets reconciled at once (`kwas controllers --concurrent-jobset-syncs`; bounds the requests in
    /// flight, as [`crate::job::JobControllerConfig::concurrent_syncs`] does for Jobs).
    pub concurrent_syncs: u16,
}

impl Default for JobSetControllerConfig {
    fn default() -> Self {
        Self {
            install: Install::Standalone,
            default_management: PodGroupManagement::Centralized,
            job_managed_by: Some(JOB_CONTROLLER_NAME.to_string()),
            concurrent_syncs: 20,
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
    backoff: Arc<crate::retry::Backoff>,
    /// JobSets (uids) whose headless Service this process created or found.
    services: Arc<Seen>,
    /// JobSets (uids) whose PersistentVolumeClaims this process created or found.
    volumes: Arc<Seen>,
    /// The shared cache of Jobs (fed by the watch whose events trigger the reconciles), when running on
    /// [`Informers`].
    jobs: Option<kube::runtime::reflector::Store<Job>>,
    /// The cached Jobs by their JobSet label (fed by the same watch as `jobs`, see [`index`]).
    children: Option<Arc<index::ChildIndex>>,
    /// The cache of JobSets whose events trigger the reconciles, when running on [`run_on`]: a reconcile
    /// then starts from the cached JobSet (see [`written`]) instead of reading it.
    jobsets: Option<kube::runtime::reflector::Store<JobSet>>,
    /// The JobSets whose status this process wrote last (see [`written`]).
    written: Arc<written::Written>,
    /// Child Jobs this process created (or found) and the cache may not show yet, with when: read with the
    /// cache until it shows them (or for [`CREATED_MEMORY`]), so a reconcile soon after a creation does not
    /// create them again (each such attempt costs an AlreadyExists and a GET, and one of its PodGroup).
    created: Arc<parking_lot::Mutex<Created>>,
    /// Whether the cluster serves CompositePodGroups (from the shared [`Informers`]; true on its own
    /// watches): without them JobSets compile flat ([`decide::Observed::composite_served`]).
    composite_served: bool,
}

/// JobSets (uids) for which something done once per JobSet was done by this process. Deleted JobSets are
/// not tracked: past 100,000 the set is forgotten (at worst one AlreadyExists per JobSet).
#[derive(Debug, Default)]
struct Seen(parking_lot::Mutex<std::collections::HashSet<String>>);

impl Seen {
    fn contains(&self, uid: &str) -> bool {
        self.0.lock().contains(uid)
    }

    fn insert(&self, uid: String) {
        let mut seen = self.0.lock();
        if seen.len() > 100_000 {
            seen.clear();
        }
        seen.insert(uid);
    }
}

/// Child Jobs created by this process, by (namespace, JobSet name) then Job name, with when.
type Created =
    std::collections::HashMap<(String, String), std::collections::HashMap<String, (std::time::Instant, Job)>>;

/// How long a created child Job is remembered when the cache does not show it (a Job deleted before the
/// watch reported it is then looked for again).
pub const CREATED_MEMORY: Duration = Duration::from_secs(30);

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
            backoff: Arc::default(),
            services: Arc::default(),
            volumes: Arc::default(),
            jobs: None,
            children: None,
            jobsets: None,
            written: Arc::default(),
            created: Arc::default(),
            composite_served: true,
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

/// Run the controller on its own watches until `shutdown` resolves (a process that runs several
/// controllers shares one [`Informers`] between them: [`run_on`]).
pub async fn run(ctx: Context, shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static) {
    let mut informers = Informers::new(&ctx.client);
    let controller = run_on(ctx, &mut informers, shutdown);
    let _hubs = informers.spawn();
    controller.await;
}

/// The controller on `informers`' watches of Jobs, PodGroups, CompositePodGroups and Workloads (its own
/// watch of JobSets), until `shutdown` resolves. It subscribes now; start the informers once every
/// controller of the process subscribed.
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
    // The reconciles read Workloads, PodGroups and CompositePodGroups from the shared caches: each is also
    // a trigger below, so an event re-runs a reconcile only once the cache holds what it announces; a
    // miss is read from the API.
    ctx.composite_served = informers.composites_served();
    ctx.index = SchedulingIndex::from_stores(informers.workloads.store(), informers.pod_groups.store());
    if ctx.composite_served {
        ctx.index = ctx.index.with_composites(informers.composite_pod_groups.store());
    }
    ctx.jobs = Some(informers.jobs.store());
    let children = index::ChildIndex::new();
    ctx.children = Some(children.clone());
    let job_cache = informers.jobs.store();
    informers.jobs.inspect(move |e| children.seen(e, &job_cache));
    let index = ctx.index.clone();
    informers.workloads.inspect(move |e| index.seen(e));
    let index = ctx.index.clone();
    informers.pod_groups.inspect(move |e| index.seen(e));
    if ctx.composite_served {
        let index = ctx.index.clone();
        informers.composite_pod_groups.inspect(move |e| index.seen(e));
    }
    // Only the children the JobSet controller labelled re-run a JobSet's reconcile, and only when what it
    // reads of them changed: not a Job's pod counters, not the scheduler's writes of a group's status.
    use crate::informers::labelled;
    use crate::triggers::{jobset_job_projection, relevant, spec_projection};
    let jobs = relevant(
        labelled(informers.jobs.subscribe(), labels::JOBSET_NAME),
        jobset_job_projection,
    );
    let groups = relevant(
        labelled(informers.pod_groups.subscribe(), labels::JOBSET_NAME),
        crate::triggers::jobset_group_projection,
    );
    let composites = if ctx.composite_served {
        relevant(
            labelled(informers.composite_pod_groups.subscribe(), labels::JOBSET_NAME),
            spec_projection::<CompositePodGroup>,
        )
        .boxed()
    } else {
        futures::stream::pending().boxed()
    };
    // The JobSet's Workload (owned by it, not labelled).
    let workloads = relevant(informers.workloads.subscribe(), spec_projection::<Workload>);
    async move {
        let mut ctx = ctx;
        // No wait for the caches' first lists here: their watches hand this controller events through
        // bounded queues, which must be read from the start (a reconcile before the lists complete reads
        // from the API instead).
        let (reader, jobsets) = crate::decode::watch(
            client,
            watcher::Config::default(),
            ctx.recorder.clone(),
            |metadata| JobSet {
                metadata,
                spec: Default::default(),
                status: None,
            },
            spec_projection::<JobSet>,
        );
        ctx.jobsets = Some(reader.clone());
        Controller::for_stream(jobsets, reader)
            .owns_stream(jobs)
            .owns_stream(groups)
            .owns_stream(composites)
            .owns_stream(workloads)
            .with_config(kube::runtime::controller::Config::default().concurrency(ctx.config.concurrent_syncs))
            .graceful_shutdown_on(shutdown)
            .run(reconcile, error_policy, Arc::new(ctx))
            .for_each(|result| async move {
                if let Err(e) = result {
                    warn!(error = %e, "jobset reconcile failed");
                }
            })
            .await;
    }
}

fn error_policy(js: Arc<JobSet>, error: &Error, ctx: Arc<Context>) -> Action {
    let action = crate::retry::action(&ctx.backoff, crate::retry::key(&*js), error);
    warn!(%error, ?action, "retrying jobset");
    action
}

/// Reconcile one JobSet.
pub async fn reconcile(js: Arc<JobSet>, ctx: Arc<Context>) -> Result<Action> {
    let span = info_span!("reconcile", controller = "jobset", namespace = %js.namespace().unwrap_or_default(), jobset = %js.name_any());
    let timer = ctx.metrics.reconcile("jobset");
    let result = crate::retry::contain(reconcile_inner(&js, &ctx)).instrument(span).await;
    timer.finish(result.is_ok());
    match &result {
        Ok(_) => ctx.backoff.succeeded(&crate::retry::key(&*js)),
        Err(Error::Panic(message)) => {
            EventSink::new(ctx.recorder.clone(), &*js)
                .warning(event_reasons::RECONCILE_ERROR, format!("reconcile panicked: {message}"))
                .await;
        }
        Err(_) => {}
    }
    result
}

/// The version the reconcile's status writes are conditional on, and what to remember of them.
struct Base {
    /// The resourceVersion of the JobSet the reconcile started from, then of its last status write.
    rv: String,
    /// The version the cache showed when the reconcile started from it (or from this process's last
    /// write, see [`written`]); `None` for a JobSet read from the API while doubtful.
    cache_rv: Option<String>,
}

/// Writes the status, conditional on `base`'s version (a conflict: [`Error::StaleCache`]).
async fn patch_status(
    ctx: &Context,
    base: &mut Base,
    api: &Api<JobSet>,
    name: &str,
    status: &JobSetStatus,
) -> Result<()> {
    let patch = json!({ "metadata": { "resourceVersion": base.rv }, "status": status });
    let patched = match api
        .patch_status(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
    {
        Ok(js) => js,
        Err(e) if crate::error::is_conflict(&e) => return Err(Error::StaleCache),
        Err(e) => return Err(e.into()),
    };
    base.rv = patched.metadata.resource_version.clone().unwrap_or_default();
    if let Some(cache_rv) = &base.cache_rv {
        ctx.written.remember(cache_rv, patched);
    }
    Ok(())
}

/// The Jobs the JobSet controls: from the shared Job cache once it completed its first list (its watch
/// triggers the reconciles, so a trigger never finds an older Job than the one it announces; a Job created
/// a moment ago and not cached yet is found by its creation answering AlreadyExists), else listed by
/// label.
async fn list_children(ctx: &Context, js: &JobSet) -> Result<Vec<Job>> {
    use futures::FutureExt;
    let namespace = js.namespace().ok_or(Error::MissingField("metadata.namespace"))?;
    let uid = js.metadata.uid.clone().unwrap_or_default();
    let name = js.name_any();
    let controlled = |j: &Job| {
        j.owner_references()
            .iter()
            .any(|r| r.controller == Some(true) && r.uid == uid)
    };
    if let Some(store) = ctx
        .jobs
        .as_ref()
        .filter(|s| s.wait_until_ready().now_or_never().is_some())
    {
        let cached: Vec<Arc<Job>> = match &ctx.children {
            Some(children) => children.children(store, &namespace, &name),
            None => store
                .state()
                .into_iter()
                .filter(|j| {
                    j.metadata.namespace.as_deref() == Some(namespace.as_str())
                        && j.labels().get(labels::JOBSET_NAME) == Some(&name)
                })
                .collect(),
        };
        let mut jobs: Vec<Job> = cached
            .into_iter()
            .filter(|j| controlled(j))
            .map(|j| (*j).clone())
            .collect();
        // Created a moment ago, not cached yet: as created (forgotten once cached, or after a while).
        let mut created = ctx.created.lock();
        let key = (namespace.clone(), name.clone());
        if let Some(mine) = created.get_mut(&key) {
            mine.retain(|job, (at, _)| {
                let cached = jobs.iter().any(|j| j.metadata.name.as_deref() == Some(job.as_str()));
                !cached && at.elapsed() < CREATED_MEMORY
            });
            for remembered in mine.values().map(|(_, j)| j) {
                if remembered.labels().get(labels::JOBSET_NAME) == Some(&name) && controlled(remembered) {
                    jobs.push(remembered.clone());
                }
            }
            if mine.is_empty() {
                created.remove(&key);
            }
        }
        drop(created);
        jobs.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        return Ok(jobs);
    }
    let api: Api<Job> = Api::namespaced(ctx.client.clone(), &namespace);
    let selector = format!("{}={}", labels::JOBSET_NAME, name);
    Ok(api
        .list(&ListParams::default().labels(&selector))
        .await?
        .items
        .into_iter()
        .filter(controlled)
        .collect())
}

/// Forgets a child Job created by this process (it is being deleted).
fn forget_created(ctx: &Context, namespace: &str, jobset: &str, job: &str) {
    let mut created = ctx.created.lock();
    let key = (namespace.to_string(), jobset.to_string());
    if let Some(mine) = created.get_mut(&key) {
        mine.remove(job);
        if mine.is_empty() {
            created.remove(&key);
        }
    }
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

async fn fail_invalid(
    ctx: &Context,
    base: &mut Base,
    js: &JobSet,
    api: &Api<JobSet>,
    events: &EventSink,
    reason: &str,
    message: String,
) -> Result<Action> {
    let mut status = js.status.clone().unwrap_or_default();
    if !status.conditions.iter().any(|c| c.type_ == conditions::FAILED) {
        status.conditions.push(Condition {
            type_: conditions::FAILED.into(),
            status: "True".into(),
            reason: reason.into(),
            message: message.clone(),
            last_transition_time: Time(Timestamp::now()),
            observed_generation: js.metadata.generation,
        });
        events
            .warning(event_reasons::FAILED_WORKLOAD_COMPILATION, message)
            .await;
        patch_status(ctx, base, api, &js.name_any(), &status).await?;
    }
    // A failed JobSet with a TTL is reconciled again when it expires (status writes trigger nothing).
    Ok(match js.spec.ttl_seconds_after_finished {
        Some(ttl) => Action::requeue(decide::after_seconds(i64::from(ttl))),
        None => Action::await_change(),
    })
}

/// One reconcile of `cached`: from the cached JobSet (or the one this process wrote last, see
/// [`written`]) when it is known to hold the stored status, else (and after a status write conflicted)
/// from the JobSet read from the API.
async fn reconcile_inner(cached: &Arc<JobSet>, ctx: &Context) -> Result<Action> {
    let uid = cached.metadata.uid.clone().unwrap_or_default();
    let cache_rv = cached.metadata.resource_version.clone().unwrap_or_default();
    if let Some(store) = &ctx.jobsets {
        ctx.written
            .prune(|| store.state().iter().filter_map(|j| j.metadata.uid.clone()).collect());
        let start = ctx.written.start(cached);
        if start.current {
            match reconcile_from((*start.jobset).clone(), ctx, Some(cache_rv.clone())).await {
                Err(Error::StaleCache) => ctx.written.doubt(&uid),
                other => return other,
            }
        }
    }
    let namespace = cached.namespace().ok_or(Error::MissingField("metadata.namespace"))?;
    let jobsets: Api<JobSet> = Api::namespaced(ctx.client.clone(), &namespace);
    let Some(js) = jobsets.get_opt(&cached.name_any()).await? else {
        ctx.written.forget(&uid);
        return Ok(Action::await_change());
    };
    if js.metadata.uid != cached.metadata.uid {
        return Ok(Action::await_change());
    }
    // The cache holds the stored version: it serves the next reconciles again.
    let current = js.metadata.resource_version.as_deref() == Some(cache_rv.as_str());
    if current {
        ctx.written.verify(&uid);
    }
    match reconcile_from(js, ctx, current.then_some(cache_rv)).await {
        // Written to since the read: read again.
        Err(Error::StaleCache) => Ok(Action::requeue(Duration::ZERO)),
        other => other,
    }
}

/// One reconcile from `js` (see [`reconcile_inner`]; `cache_rv`: the version the cache showed, when
/// `js` came from it or from this process's last write).
async fn reconcile_from(mut js: JobSet, ctx: &Context, cache_rv: Option<String>) -> Result<Action> {
    let client = &ctx.client;
    let namespace = js.namespace().ok_or(Error::MissingField("metadata.namespace"))?;
    let name = js.name_any();
    let jobsets: Api<JobSet> = Api::namespaced(client.clone(), &namespace);
    if js.metadata.deletion_timestamp.is_some() {
        ctx.written.forget(js.metadata.uid.as_deref().unwrap_or_default());
        return Ok(Action::await_change());
    }
    let mut base = Base {
        rv: js.metadata.resource_version.clone().unwrap_or_default(),
        cache_rv,
    };
    // Another controller's JobSet (the JobSet project's, Kueue's MultiKueue, ...): not touched.
    if !ctx.config.install.manages(js.spec.managed_by.as_deref()) {
        return Ok(Action::await_change());
    }
    // The JobSet project's webhook defaults, applied to what is read (kwas has no mutating webhook; the
    // defaults are functions of the spec, so every reconcile sees the same values).
    let started = js.status.as_ref().is_some_and(|s| s.workload_name.is_some());
    v1alpha2::defaults::apply_schema_defaults(&mut js.spec);
    v1alpha2::defaults::default_jobset(&mut js);
    let js = &js;
    let events = EventSink::new(ctx.recorder.clone(), js);
    // What the JobSet project's validating webhook refuses, refused before anything is created.
    if !started && !decide::is_finished(js) {
        let errs = v1alpha2::validation::validate_create(js, &v1alpha2::validation::Features::default(), &[]);
        if !errs.is_empty() {
            let message = errs.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ");
            return fail_invalid(
                ctx,
                &mut base,
                js,
                &jobsets,
                &events,
                INVALID_JOBSET,
                format!("invalid JobSet: {message}"),
            )
            .await;
        }
    }
    let management = management(js, &ctx.config);
    let mut workloads = Vec::new();
    let mut root = None;
    let mut child_groups = Vec::new();
    if !decide::is_finished(js) {
        ensure_service(ctx, js, &events).await?;
        ensure_volume_claims(ctx, js, &events).await?;
        let own = compile::jobset_workload_name(js);
        let lookup = crate::sync::Lookup {
            index: &ctx.index,
            own_name: Some(&own),
            trust_misses: false,
        };
        workloads = find_workloads(client, lookup, &namespace, v1alpha2::GROUP, "JobSet", &name).await?;
        if let [workload] = workloads.as_slice() {
            let workload_name = workload.name_any();
            if !decide::is_flat(workload) {
                root = crate::sync::get_cached::<CompositePodGroup>(
                    client,
                    &ctx.index,
                    &namespace,
                    &root_group_name(&workload_name),
                )
                .await?;
            }
            // Centralized: the groups whose minCount the JobSet re-syncs; both: whose health the opt-in
            // of `gangs` reads.
            if management == PodGroupManagement::Centralized || gangs::grace_seconds(js).is_some() {
                child_groups = ctx
                    .index
                    .pod_groups_of(&namespace, &workload_name)
                    .into_iter()
                    .map(|g| (*g).clone())
                    .collect();
            }
        }
    }
    let jobs = list_children(ctx, js).await?;
    let mut observed = decide::Observed {
        js,
        workloads: &workloads,
        jobs: &jobs,
        root: root.as_ref(),
        child_groups: &child_groups,
        management,
        job_managed_by: ctx.config.job_managed_by.clone(),
        composite_served: ctx.composite_served,
        now: Timestamp::now(),
    };
    let mut decision = decide::decide(&observed);
    let created;
    if let [decide::Step::CreateWorkload(desired)] = decision.steps.as_slice() {
        let result = create_workload(client, &ctx.index, desired, &events).await;
        ctx.metrics.scheduling_sync("jobset", result.is_ok());
        created = [result?];
        observed.workloads = &created;
        decision = decide::decide(&observed);
    }
    for step in decision.steps {
        if let Some(action) = apply(js, ctx, &mut base, &jobsets, &events, step).await? {
            return Ok(action);
        }
    }
    Ok(match decision.then {
        decide::Then::AwaitChange => Action::await_change(),
        decide::Then::Requeue(after) => Action::requeue(after),
    })
}

/// Creates the JobSet's headless Service once per process (see [`children::desired_service`]); one that
/// exists already is kept, as the JobSet project's controller keeps it. A Service the API refuses is
/// reported once (Warning `HeadlessServiceCreationFailed`) and the JobSet runs without pod DNS names.
async fn ensure_service(ctx: &Context, js: &JobSet, events: &EventSink) -> Result<()> {
    let uid = js.metadata.uid.clone().unwrap_or_default();
    if ctx.services.contains(&uid) {
        return Ok(());
    }
    if let Some(svc) = children::desired_service(js) {
        let api: Api<k8s_openapi::api::core::v1::Service> =
            Api::namespaced(ctx.client.clone(), &js.namespace().unwrap_or_default());
        match api.create(&kube::api::PostParams::default(), &svc).await {
            Ok(_) => events.emit(
                false,
                "SuccessfulCreate",
                format!("Created service: {}", svc.name_any()),
            ),
            Err(e) if crate::error::is_conflict(&e) => {}
            Err(kube::Error::Api(status)) if status.code == 422 || status.code == 400 => {
                events.emit(
                    true,
                    v1alpha2::constants::reasons::HEADLESS_SERVICE_CREATION_FAILED,
                    status.message.clone(),
                );
            }
            Err(e) => return Err(e.into()),
        }
    }
    ctx.services.insert(uid);
    Ok(())
}

/// Creates the JobSet's PersistentVolumeClaims (`spec.volumeClaimPolicies`, [`children::desired_pvcs`])
/// once per process, before its Jobs; one that exists is kept, as upstream keeps it. A claim the API
/// refuses is reported (Warning `PVCCreationFailed`) and retried with backoff.
async fn ensure_volume_claims(ctx: &Context, js: &JobSet, events: &EventSink) -> Result<()> {
    let uid = js.metadata.uid.clone().unwrap_or_default();
    if js.spec.volume_claim_policies.is_empty() || ctx.volumes.contains(&uid) {
        return Ok(());
    }
    let api: Api<k8s_openapi::api::core::v1::PersistentVolumeClaim> =
        Api::namespaced(ctx.client.clone(), &js.namespace().unwrap_or_default());
    for pvc in children::desired_pvcs(js) {
        match api.create(&kube::api::PostParams::default(), &pvc).await {
            Ok(_) => events.emit(
                false,
                "SuccessfulCreate",
                format!("Created PersistentVolumeClaim: {}", pvc.name_any()),
            ),
            Err(e) if crate::error::is_conflict(&e) => {}
            Err(kube::Error::Api(status)) => {
                events.emit(
                    true,
                    v1alpha2::constants::reasons::PVC_CREATION_FAILED,
                    status.message.clone(),
                );
                return Err(kube::Error::Api(status).into());
            }
            Err(e) => return Err(e.into()),
        }
    }
    ctx.volumes.insert(uid);
    Ok(())
}

/// Carries out one step; `Some` ends the reconcile with that action.
async fn apply(
    js: &JobSet,
    ctx: &Context,
    base: &mut Base,
    jobsets: &Api<JobSet>,
    events: &EventSink,
    step: decide::Step,
) -> Result<Option<Action>> {
    use decide::Step;
    let client = &ctx.client;
    let namespace = js.namespace().ok_or(Error::MissingField("metadata.namespace"))?;
    let jobs_api: Api<Job> = Api::namespaced(client.clone(), &namespace);
    match step {
        Step::CreateWorkload(workload) => {
            let created = create_workload(client, &ctx.index, &workload, events).await;
            ctx.metrics.scheduling_sync("jobset", created.is_ok());
            created?;
            // The next reconcile (the Workload's creation triggers one) continues with it.
            return Ok(Some(Action::requeue(Duration::ZERO)));
        }
        Step::SyncWorkloadMinCount {
            workload,
            template,
            count,
        } => {
            sync_workload_min_count(client, &workload, &template, count).await?;
        }
        Step::DeleteJob(job) => {
            forget_created(ctx, &namespace, &js.name_any(), &job);
            delete_job(&jobs_api, &job).await?;
        }
        Step::DeletePodGroup(group) => crate::sync::delete::<PodGroup>(client, &namespace, &group).await?,
        Step::DeleteRootGroup(group) => crate::sync::delete::<CompositePodGroup>(client, &namespace, &group).await?,
        Step::CreateRootGroup(group) => {
            let created = create_composite_pod_group(client, &ctx.index, &group, events).await;
            ctx.metrics.scheduling_sync("jobset", created.is_ok());
            created?;
        }
        Step::SyncPodGroupMinCount { group, count } => {
            sync_pod_group_min_count(client, &group, count).await?;
        }
        Step::CreatePodGroup(group) => {
            let created = create_pod_group(client, &ctx.index, &group, events).await;
            ctx.metrics.scheduling_sync("jobset", created.is_ok());
            created?;
        }
        Step::CreateJob(job) => {
            let live = create_or_get(client, &*job, "Job", events, "SuccessfulCreate", Some("FailedCreate")).await?;
            if let Some(jobset) = live.labels().get(labels::JOBSET_NAME).cloned() {
                let mut created = ctx.created.lock();
                if created.len() > 100_000 {
                    created.clear();
                }
                created
                    .entry((namespace.clone(), jobset))
                    .or_default()
                    .insert(live.name_any(), (std::time::Instant::now(), live));
            }
        }
        Step::SetSuspend(job, suspend) => {
            let patch = json!({"spec": {"suspend": suspend}});
            match jobs_api
                .patch(&job, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => {}
                Err(e) if is_not_found(&e) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Step::Event(e) => {
            events.emit(e.warning, &e.reason, e.message);
        }
        // The reconcile started from the stored JobSet: an unchanged status is not written again.
        Step::PatchStatus(status) if js.status.as_ref() == Some(&*status) => {}
        Step::PatchStatus(status) => patch_status(ctx, base, jobsets, &js.name_any(), &status).await?,
        Step::Fail(message) => {
            return fail_invalid(
                ctx,
                base,
                js,
                jobsets,
                events,
                conditions::REASON_INVALID_SCHEDULING,
                message,
            )
            .await
            .map(Some);
        }
        Step::DeleteJobSet => {
            let dp = DeleteParams {
                propagation_policy: Some(PropagationPolicy::Foreground),
                ..DeleteParams::default()
            };
            match jobsets.delete(&js.name_any(), &dp).await {
                Ok(_) => {}
                Err(e) if is_not_found(&e) => {}
                Err(e) => return Err(e.into()),
            }
            return Ok(Some(Action::await_change()));
        }
    }
    Ok(None)
}
