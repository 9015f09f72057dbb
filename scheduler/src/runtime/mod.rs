//! The scheduler runtime: the [`crate::core`] algorithm wired to a cluster with kube-rs.
//!
//! [`SchedulerRuntime`] watches nodes, pods, PodGroups, CompositePodGroups and PriorityClasses,
//! keeps the core's snapshot in sync between cycles, queues root units with upstream's PreEnqueue
//! gating, backoff and event-driven requeue, runs one cycle per root unit, binds through
//! `pods/binding` with bounded concurrency, writes group and pod conditions and events, actuates
//! preemption, and optionally elects a leader on a Lease and serves `/healthz`, `/readyz` and
//! `/metrics`.
//!
//! ```no_run
//! use kwas_scheduler::runtime::{RuntimeConfig, SchedulerRuntime, scheduler_lease};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let client = kube::Client::try_default().await?; // kubeconfig or in-cluster config
//! let runtime = SchedulerRuntime::new(
//!     client,
//!     RuntimeConfig {
//!         scheduler_names: vec!["kwas-scheduler".into()],
//!         leader_election: Some(scheduler_lease("kwas-system", "kwas-scheduler-0")),
//!         admin_addr: Some("0.0.0.0:10259".parse()?),
//!         ..Default::default()
//!     },
//! )?;
//! let handle = runtime.handle(); // readiness, leadership and metrics while it runs
//! runtime
//!     .run(async {
//!         let _ = tokio::signal::ctrl_c().await;
//!     })
//!     .await?;
//! # let _ = handle;
//! # Ok(()) }
//! ```
//!
//! # Layers
//!
//! | module | role |
//! | --- | --- |
//! | `engine` | decisions without I/O: snapshot updates, PreEnqueue, cycles, preemption, status decisions; unit-tested |
//! | `scheduling_queue` | the scheduling queue: active, backoff, unschedulable, gated |
//! | `conditions` | which condition to write, never regressing, and the patches |
//! | `actions` | what the engine asks for: binds, status patches, evictions, events |
//! | `informers` | kube-runtime watchers merged into one event stream |
//! | `writer` | bindings, status patches, evictions and events against the API server |
//! | `metrics` | Prometheus metrics |
//! | `config` | [`RuntimeConfig`], [`LeaseConfig`] (the `kwas-shell` shell's), [`BackoffConfig`] |
//! | `profile` | KubeSchedulerConfiguration files (`--config`): profiles, score plugins and weights, plugin arguments |
//!
//! The admin server, health and leader election come from the `kwas-shell` shell crate, shared with
//! `kwas controllers`.
//!
//! # The loop
//!
//! One task owns the engine. Each turn it applies every informer event and binding result that has
//! arrived (so a cycle never sees a half-applied update), then, when it leads and every informer
//! has synced, pops one unit and hands the resulting actions to the writers; when no unit is ready
//! it sleeps until an event, a binding result, a backoff expiry or a leadership change. Bindings,
//! status writes and events run concurrently in the background.
//!
//! # Restarts and leadership
//!
//! Nothing the runtime needs survives only in memory: a restarted (or newly elected) instance lists
//! the cluster, counts bound pods on their nodes and towards their groups, and schedules what is
//! still pending. A gang interrupted mid-binding therefore has its remaining pods placed next to the
//! bound ones (such units go first among equal priorities), never bound twice (`pods/binding`
//! refuses a bound pod). A follower keeps its informers synced and reports ready, but decides and
//! writes nothing; an instance that loses the lease stops scheduling at once and drops the
//! reservations of its preemptions in progress.
//!
//! See `engine` for the choices where the KEPs leave room.

pub(crate) mod actions;
pub(crate) mod conditions;
pub(crate) mod config;
pub(crate) mod dra_writes;
pub(crate) mod engine;
pub(crate) mod error;
pub(crate) mod events;
pub(crate) mod informers;
pub(crate) mod metrics;
pub(crate) mod profile;
pub(crate) mod scheduling_queue;
pub(crate) mod writer;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use kube::Client;
use kwas_shell::{Leadership, admin};
use tokio::sync::{mpsc, watch};
use tracing::{error, info};

pub use conditions::REASON_SCHEDULING_GATED;
pub use config::{BackoffConfig, LeaseConfig, ProfileArgs, RuntimeConfig, scheduler_lease};
pub(crate) use engine::{BindResult, Engine, EngineSettings, Now};
pub use error::Error;
pub use kwas_shell::Health;
pub use metrics::{Attempt, Metrics};
pub use profile::{DEFAULT_SCHEDULER_NAME, ProfileError, SchedulerProfile};
pub use scheduling_queue::{ENTITY_TYPES, QUEUES, QueueDepth};

use informers::InformerEvent;
use writer::Writers;

/// Every API call the runtime makes, as `(API group, resource, verbs)`: the least-privilege RBAC
/// rules of `deploy/scheduler/rbac.yaml` (cluster-wide), which a test keeps in step. Leader
/// election adds `get`, `create` and `patch` on its Lease (a namespaced Role).
pub const API_ACCESS: &[(&str, &str, &[&str])] = &[
    ("", "nodes", &["list", "watch"]),
    ("scheduling.k8s.io", "priorityclasses", &["list", "watch"]),
    ("", "pods", &["get", "list", "watch", "delete"]),
    ("", "pods/binding", &["create"]),
    ("", "pods/status", &["patch"]),
    ("scheduling.k8s.io", "podgroups", &["get", "list", "watch"]),
    ("scheduling.k8s.io", "compositepodgroups", &["get", "list", "watch"]),
    ("scheduling.k8s.io", "podgroups/status", &["patch"]),
    ("scheduling.k8s.io", "compositepodgroups/status", &["patch"]),
    ("events.k8s.io", "events", &["create", "patch"]),
    ("", "namespaces", &["list", "watch"]),
    ("", "persistentvolumeclaims", &["list", "watch", "patch"]),
    ("", "persistentvolumes", &["list", "watch", "patch"]),
    ("storage.k8s.io", "storageclasses", &["list", "watch"]),
    ("storage.k8s.io", "csinodes", &["list", "watch"]),
    ("policy", "poddisruptionbudgets", &["list", "watch"]),
    ("scheduling.k8s.io", "workloads", &["list", "watch"]),
    ("resource.k8s.io", "deviceclasses", &["list", "watch"]),
    ("resource.k8s.io", "resourceslices", &["list", "watch"]),
    ("resource.k8s.io", "resourceclaims", &["get", "list", "watch", "update"]),
    ("resource.k8s.io", "resourceclaims/status", &["update"]),
];

/// Informer events applied in one go before the loop looks at the queue again.
const MAX_EVENTS_PER_TURN: usize = 10_000;
/// How long shutdown waits for queued status writes and events.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// A view of a running [`SchedulerRuntime`]: readiness, leadership and metrics.
#[derive(Clone, Debug)]
pub struct RuntimeHandle {
    health: Arc<Health>,
    metrics: Metrics,
}

impl RuntimeHandle {
    /// True once every informer has listed its kind (leader or follower).
    pub fn is_ready(&self) -> bool {
        self.health.ready()
    }

    /// True while this instance schedules.
    pub fn is_leader(&self) -> bool {
        self.health.leader()
    }

    /// The runtime's metrics.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Where the admin server listens, once it does.
    pub fn admin_addr(&self) -> Option<std::net::SocketAddr> {
        self.health.admin_addr()
    }
}

/// The scheduler runtime. See the module docs.
///
/// Against devcluster (an in-process API server with simulated nodes), a gang of three is bound:
///
/// ```
/// # #![allow(clippy::unwrap_used)]
/// use k8s_openapi::api::core::v1::Pod;
/// use kube::api::{Api, PostParams};
/// use kwas_api_types::v1alpha3::PodGroup;
/// use kwas_devcluster::{Capacity, DevCluster, DevClusterConfig, Topology};
/// use kwas_scheduler::core::testing::{GroupBuilder, pod_with};
/// use kwas_scheduler::runtime::{RuntimeConfig, SchedulerRuntime};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let cluster = DevCluster::start(DevClusterConfig {
///     topology: Topology::grid(1, 1, 2, Capacity::default()),
///     ..Default::default()
/// })
/// .await
/// .unwrap();
/// let client = cluster.client();
/// let runtime = SchedulerRuntime::new(client.clone(), RuntimeConfig::default()).unwrap();
/// let handle = runtime.handle();
/// let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
/// let task = tokio::spawn(runtime.run(async move {
///     let _ = stopped.await;
/// }));
///
/// let groups: Api<PodGroup> = Api::namespaced(client.clone(), "default");
/// groups.create(&PostParams::default(), &GroupBuilder::gang("default", "gang", 3).pod_group()).await.unwrap();
/// let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
/// for i in 0..3 {
///     let mut p = pod_with("default", &format!("gang-{i}"), Some("gang"), &[("cpu", "1")]);
///     let spec = p.spec.as_mut().unwrap();
///     spec.scheduler_name = Some("kwas-scheduler".into());
///     spec.containers[0].image = Some("registry.k8s.io/pause:3.10".into());
///     pods.create(&PostParams::default(), &p).await.unwrap();
/// }
/// while handle.metrics().pods_scheduled() < 3 {
///     tokio::time::sleep(std::time::Duration::from_millis(10)).await;
/// }
/// let bound = pods.list(&Default::default()).await.unwrap().items;
/// assert!(bound.iter().all(|p| p.spec.as_ref().unwrap().node_name.is_some()));
///
/// stop.send(()).unwrap();
/// task.await.unwrap().unwrap();
/// cluster.shutdown().await;
/// # });
/// ```
pub struct SchedulerRuntime {
    client: Client,
    config: RuntimeConfig,
    health: Arc<Health>,
    metrics: Metrics,
}

impl std::fmt::Debug for SchedulerRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchedulerRuntime")
            .field("config", &self.config)
            .finish()
    }
}

impl SchedulerRuntime {
    /// A runtime for the cluster `client` talks to. Fails on an unusable configuration.
    pub fn new(client: Client, config: RuntimeConfig) -> Result<Self, Error> {
        if config.scheduler_names.is_empty() || config.scheduler_names.iter().any(String::is_empty) {
            return Err(Error::Config(
                "scheduler_names: Required value: at least one non-empty name".into(),
            ));
        }
        if config.bind_concurrency == 0 || config.write_concurrency == 0 {
            return Err(Error::Config(
                "bind_concurrency, write_concurrency: Invalid value: 0: must be at least 1".into(),
            ));
        }
        if let Some(l) = &config.leader_election {
            l.validate().map_err(Error::Config)?;
        }
        let metrics = Metrics::with_profile(config.primary_name());
        Ok(Self {
            client,
            config,
            health: Arc::new(Health::default()),
            metrics,
        })
    }

    /// A handle to watch the runtime while [`run`](Self::run) consumes it.
    pub fn handle(&self) -> RuntimeHandle {
        RuntimeHandle {
            health: self.health.clone(),
            metrics: self.metrics.clone(),
        }
    }

    /// The runtime's metrics.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Runs until `shutdown` resolves: then stops scheduling, lets queued writes finish (briefly),
    /// releases the lease and stops the admin server.
    pub async fn run(self, shutdown: impl Future<Output = ()> + Send) -> Result<(), Error> {
        let Self {
            client,
            config,
            health,
            metrics,
        } = self;
        health.beat();

        // Admin server.
        let (admin_stop, admin_stop_rx) = watch::channel(false);
        let admin_task = match config.admin_addr {
            Some(addr) => {
                let encoder: admin::MetricsEncoder = {
                    let metrics = metrics.clone();
                    Arc::new(move || Ok(metrics.encode()))
                };
                let mut stop = admin_stop_rx.clone();
                let stopped = async move {
                    let _ = stop.wait_for(|s| *s).await;
                };
                let (_, task) = admin::serve(addr, health.clone(), encoder, stopped)
                    .await
                    .map_err(|source| Error::Admin { addr, source })?;
                Some(task)
            }
            None => None,
        };

        // Leadership: without election, this instance always leads.
        let (_always_leader, mut leader_rx, leadership) = match &config.leader_election {
            Some(l) => {
                // The Lease says which scheduler names this scheduler serves (`kwas snapshot` reads it).
                let mut l = l.clone();
                l.annotations.insert(
                    kwas_api_types::names::annotations::SCHEDULER_NAMES.to_string(),
                    config.scheduler_names.join(","),
                );
                let leadership = Leadership::start(client.clone(), l);
                (None, leadership.subscribe(), Some(leadership))
            }
            None => {
                let (tx, rx) = watch::channel(true);
                (Some(tx), rx, None)
            }
        };

        // Speak the scheduling.k8s.io versions the cluster serves (v1beta1 where it is), converting at
        // the edge: everything below reads and writes the v1alpha3 types.
        let (client, negotiation) = kwas_api_types::versioned::negotiated(client).await;
        let (bind_tx, mut bind_rx) = mpsc::unbounded_channel();
        let (writers, writer_tasks) = Writers::start(
            client.clone(),
            metrics.clone(),
            config.primary_name(),
            config.bind_concurrency,
            config.write_concurrency,
            config.event_buffer,
            bind_tx,
        );
        let mut engine = Engine::new(EngineSettings::from(&config), metrics.clone());
        let dra = informers::dra_served(&client).await;
        if !dra {
            tracing::warn!("the API server does not serve resource.k8s.io/v1: pods with ResourceClaims will wait");
        }
        let composite = match negotiation.served() {
            Some(served) => served
                .version(kwas_api_types::served::Kind::CompositePodGroup)
                .is_some(),
            None => informers::composite_served(&client).await,
        };
        if !composite {
            tracing::warn!(
                "the API server does not serve compositepodgroups: gangs are flat (PodGroups without a parent); a PodGroup naming a parent waits for it"
            );
        }
        let mut informers = informers::informers(&client, dra, composite);
        let mut leader = *leader_rx.borrow_and_update();
        writers.set_leader(leader);
        health.set_leader(leader);
        metrics.leader(leader);
        info!(names = ?config.scheduler_names, leader, "scheduler runtime started");

        let mut shutdown = std::pin::pin!(shutdown.fuse());
        let mut actions = Vec::new();
        let mut heartbeat = tokio::time::interval(Duration::from_secs(1));
        loop {
            let now = Now::current();
            let mut applied = 0;
            while applied < MAX_EVENTS_PER_TURN {
                match informers.next().now_or_never() {
                    Some(Some(ev)) => {
                        engine.apply(ev, now);
                        applied += 1;
                    }
                    _ => break,
                }
            }
            while let Ok(done) = bind_rx.try_recv() {
                engine.bind_finished(&done.pod, &done.node, done.result, now, &mut actions);
            }
            if leader_rx.has_changed().unwrap_or(false) {
                leader = on_leadership(&mut engine, &writers, *leader_rx.borrow_and_update(), &health, &metrics);
            }
            let worked = engine.turn(now, leader && engine.synced(), true, &mut actions);
            health.set_ready(engine.synced());
            health.beat();
            if leader {
                for a in actions.drain(..) {
                    writers.dispatch(a);
                }
            } else {
                // A follower publishes nothing but the events of bindings it had started.
                for a in actions.drain(..) {
                    if matches!(a, actions::Action::Event(_)) {
                        writers.dispatch(a);
                    }
                }
            }
            if worked {
                tokio::task::yield_now().await;
                continue;
            }

            // Only a scheduling leader has timers to honour (a follower never pops its queue).
            let wake = if leader && engine.synced() {
                engine.next_wakeup()
            } else {
                None
            };
            let sleep = async {
                match wake {
                    Some(t) => tokio::time::sleep_until(t.into()).await,
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                biased;
                _ = &mut shutdown => break,
                changed = leader_rx.changed() => {
                    match changed {
                        Ok(()) => {
                            leader = on_leadership(&mut engine, &writers, *leader_rx.borrow_and_update(), &health, &metrics);
                        }
                        Err(_) => {
                            // The lease manager stopped: never schedule without a lease.
                            if leader {
                                leader = on_leadership(&mut engine, &writers, false, &health, &metrics);
                            }
                            error!("leader election stopped; this instance no longer schedules");
                            leader_rx = watch::channel(false).1;
                        }
                    }
                }
                ev = informers.next() => match ev {
                    Some(ev) => engine.apply(ev, Now::current()),
                    None => {
                        error!("informers ended");
                        break;
                    }
                },
                Some(done) = bind_rx.recv() => {
                    engine.bind_finished(&done.pod, &done.node, done.result, Now::current(), &mut actions);
                }
                _ = sleep => {}
                _ = heartbeat.tick() => {}
            }
        }

        info!(
            bindings_in_flight = engine.bindings_in_flight(),
            "scheduler runtime stopping"
        );
        health.stopped();
        metrics.leader(false);
        drop(writers);
        writer_tasks.drain(DRAIN_TIMEOUT).await;
        drop(leader_rx);
        if let Some(leadership) = leadership {
            leadership.release(DRAIN_TIMEOUT).await;
        }
        let _ = admin_stop.send(true);
        if let Some(task) = admin_task {
            let _ = task.await;
        }
        Ok(())
    }
}

fn on_leadership(engine: &mut Engine, writers: &Writers, leader: bool, health: &Health, metrics: &Metrics) -> bool {
    // Fence first: bindings and evictions queued in the ending term are dropped.
    writers.set_leader(leader);
    if leader {
        info!("became the leader; scheduling");
    } else {
        info!("not the leader; standing by");
        engine.step_down();
    }
    health.set_leader(leader);
    metrics.leader(leader);
    leader
}

#[allow(dead_code)]
fn assert_send() {
    fn is_send<T: Send>(_: &T) {}
    let e = Engine::new(EngineSettings::from(&RuntimeConfig::default()), Metrics::new());
    is_send(&e);
    let _ = InformerEvent::InitDone(informers::Kind::Pod);
}
