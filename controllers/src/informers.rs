//! One watch per kind per process, shared by the controllers that run in it.
//!
//! kube-controller-manager runs its controllers on one `SharedInformerFactory`: one LIST+WATCH per kind, a
//! cache per kind, and every controller's event handlers fed from it. [`Informers`] is that factory for
//! kwas's controllers. Each kind has one [`Hub`]: a watcher (with kube-runtime's default backoff) whose
//! events are applied to the kind's reflector store first and then handed to every subscriber, in the
//! order the API server sent them. A subscriber therefore never hears of an object older than the one the
//! store holds (a reconcile triggered by an event finds at least that version in the cache), and two
//! controllers watching the same kind cost the API server one watch.
//!
//! Subscribers take what they need with [`Hub::subscribe`] (and [`Hub::store`]) before the hubs start
//! ([`Informers::start`]), so each sees the initial list. Delivery is bounded: each subscriber has a
//! queue of [`QUEUE`] events and a hub waits for the slowest (a subscriber that stopped, its controller
//! shut down, is dropped from the fan-out), as client-go's shared informer buffers per handler. So a
//! subscriber reads its events from the start and never waits on a hub's store before reading them
//! (that wait can stall the very watch it waits on).
//! Watch errors are logged by the hub (the watcher retries with backoff); subscribers see only events.

use std::future::Future;
use std::pin::Pin;

use futures::{Stream, StreamExt};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::scheduling::v1alpha3::{CompositePodGroup, PodGroup, Workload};
use kube::runtime::reflector::{self, Store, store::Writer};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource};
use kwas_api_types::names::labels;
use serde::de::DeserializeOwned;
use tokio::sync::mpsc;
use tracing::warn;

/// Events queued per subscriber before its hub waits for it.
pub const QUEUE: usize = 1024;

/// A subscriber's events: every watch event of the hub's kind, after the hub's store applied it.
pub type Events<K> = Pin<Box<dyn Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send>>;

/// One watch of one kind, its store and its subscribers.
pub struct Hub<K>
where
    K: Resource + Clone + 'static,
    K::DynamicType: std::hash::Hash + Eq + Clone,
{
    kind: &'static str,
    api: Api<K>,
    config: watcher::Config,
    store: Option<(Store<K>, Writer<K>)>,
    subscribers: Vec<mpsc::Sender<watcher::Event<K>>>,
    inspectors: Vec<Inspector<K>>,
}

/// A function a hub calls with each event, after its store applied it and before any subscriber hears of
/// it.
type Inspector<K> = Box<dyn Fn(&watcher::Event<K>) + Send + Sync>;

impl<K> Hub<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
{
    fn new(kind: &'static str, api: Api<K>, config: watcher::Config) -> Self {
        Self {
            kind,
            api,
            config,
            store: None,
            subscribers: Vec::new(),
            inspectors: Vec::new(),
        }
    }

    /// Call `f` with each event, after the store applied it and before any subscriber hears of it (keep
    /// it quick: the watch waits for it).
    pub fn inspect(&mut self, f: impl Fn(&watcher::Event<K>) + Send + Sync + 'static) {
        self.inspectors.push(Box::new(f));
    }

    /// The kind's cache, filled by this hub's watch before any subscriber hears of a change.
    pub fn store(&mut self) -> Store<K> {
        self.store.get_or_insert_with(|| reflector::store()).0.clone()
    }

    /// A new subscriber: every event of the watch from its first list on (take it before the hubs start).
    pub fn subscribe(&mut self) -> Events<K> {
        let (tx, rx) = mpsc::channel(QUEUE);
        self.subscribers.push(tx);
        Box::pin(futures::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|event| (Ok(event), rx))
        }))
    }

    /// Whether anything subscribed to or read this hub (a hub nobody uses is not started).
    fn used(&self) -> bool {
        self.store.is_some() || !self.subscribers.is_empty() || !self.inspectors.is_empty()
    }

    /// Watch until `stop` resolves, applying each event to the store, then handing it to every subscriber.
    async fn run(self, stop: impl Future<Output = ()> + Send) {
        let Hub {
            kind,
            api,
            config,
            store,
            mut subscribers,
            inspectors,
        } = self;
        let events = watcher::watcher(api, config).default_backoff();
        let mut events: Pin<Box<dyn Stream<Item = _> + Send>> = match store {
            Some((_, writer)) => Box::pin(events.reflect(writer)),
            None => Box::pin(events),
        };
        let mut stop = std::pin::pin!(stop);
        loop {
            let event = tokio::select! {
                event = events.next() => event,
                () = &mut stop => return,
            };
            match event {
                None => return,
                Some(Err(error)) => warn!(kind, %error, "watch failed; retrying"),
                Some(Ok(event)) => {
                    for f in &inspectors {
                        f(&event);
                    }
                    let mut gone = Vec::new();
                    for (i, tx) in subscribers.iter().enumerate() {
                        if tx.send(event.clone()).await.is_err() {
                            gone.push(i);
                        }
                    }
                    for i in gone.into_iter().rev() {
                        subscribers.swap_remove(i);
                    }
                }
            }
        }
    }
}

impl<K> std::fmt::Debug for Hub<K>
where
    K: Resource + Clone + 'static,
    K::DynamicType: std::hash::Hash + Eq + Clone,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub")
            .field("kind", &self.kind)
            .field("subscribers", &self.subscribers.len())
            .finish_non_exhaustive()
    }
}

/// The process's hubs, one per kind the controllers watch.
pub struct Informers {
    /// Every Job.
    pub jobs: Hub<Job>,
    /// Pods created by a Job controller (those with the `batch.kubernetes.io/controller-uid` label).
    pub job_pods: Hub<Pod>,
    /// Every Workload.
    pub workloads: Hub<Workload>,
    /// Every PodGroup.
    pub pod_groups: Hub<PodGroup>,
    /// Every CompositePodGroup.
    pub composite_pod_groups: Hub<CompositePodGroup>,
    /// Whether the cluster serves CompositePodGroups (their hub is never started when it does not).
    composites_served: bool,
}

impl std::fmt::Debug for Informers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Informers").finish_non_exhaustive()
    }
}

/// A hub's watch, as a task to run.
pub type HubTask = Pin<Box<dyn Future<Output = ()> + Send>>;

impl Informers {
    /// Hubs over `client`, in every namespace; nothing is watched before [`Informers::start`].
    pub fn new(client: &Client) -> Self {
        let all = watcher::Config::default;
        Self {
            jobs: Hub::new("jobs", Api::all(client.clone()), all()),
            job_pods: Hub::new("pods", Api::all(client.clone()), all().labels(labels::CONTROLLER_UID)),
            workloads: Hub::new("workloads", Api::all(client.clone()), all()),
            pod_groups: Hub::new("podgroups", Api::all(client.clone()), all()),
            composite_pod_groups: Hub::new("compositepodgroups", Api::all(client.clone()), all()),
            composites_served: true,
        }
    }

    /// For a cluster that does not serve CompositePodGroups: their hub is never started (its store stays
    /// empty, its subscribers hear nothing), and controllers that ask [`Informers::composites_served`]
    /// compile flat Workloads.
    pub fn without_composites(mut self) -> Self {
        self.composites_served = false;
        self
    }

    /// Whether the cluster serves CompositePodGroups.
    pub fn composites_served(&self) -> bool {
        self.composites_served
    }

    /// The watches of the hubs something subscribed to or read, as `(kind, task)`; each runs until `stop`
    /// resolves. Run them all (a controller waits for its hubs' first lists).
    pub fn start<S>(self, stop: impl Fn() -> S) -> Vec<(&'static str, HubTask)>
    where
        S: Future<Output = ()> + Send + 'static,
    {
        let mut tasks: Vec<(&'static str, HubTask)> = Vec::new();
        macro_rules! add {
            ($hub:expr) => {
                if $hub.used() {
                    tasks.push(($hub.kind, Box::pin($hub.run(stop()))));
                }
            };
        }
        add!(self.jobs);
        add!(self.job_pods);
        add!(self.workloads);
        add!(self.pod_groups);
        if self.composites_served {
            add!(self.composite_pod_groups);
        }
        tasks
    }

    /// Start the hubs as background tasks that end when the returned guard is dropped.
    pub fn spawn(self) -> HubGuard {
        let tasks = self
            .start(futures::future::pending::<()>)
            .into_iter()
            .map(|(_, t)| tokio::spawn(t))
            .collect();
        HubGuard(tasks)
    }
}

/// Hubs running in the background (see [`Informers::spawn`]); aborted when dropped.
#[derive(Debug)]
pub struct HubGuard(Vec<tokio::task::JoinHandle<()>>);

impl Drop for HubGuard {
    fn drop(&mut self) {
        for t in &self.0 {
            t.abort();
        }
    }
}

/// The objects of `events` that carry the label `key`, as the objects a controller's `owns_stream`
/// expects; an object that lost the label is passed once as deleted would be (its owner re-runs).
pub fn labelled<K: Resource + Send + 'static>(
    events: Events<K>,
    key: &'static str,
) -> impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send {
    events.filter_map(move |e| {
        let has = |o: &K| o.meta().labels.as_ref().is_some_and(|l| l.contains_key(key));
        futures::future::ready(match e {
            Ok(watcher::Event::Apply(o)) if !has(&o) => Some(Ok(watcher::Event::Delete(o))),
            Ok(watcher::Event::InitApply(o)) if !has(&o) => None,
            other => Some(other),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(name: &str, label: bool) -> Job {
        let mut j = Job::default();
        j.metadata.name = Some(name.into());
        if label {
            j.metadata.labels = Some([(labels::JOBSET_NAME.to_string(), "js".to_string())].into());
        }
        j
    }

    #[tokio::test]
    async fn labelled_keeps_labelled_objects_and_reports_a_lost_label_as_a_deletion() {
        let events: Events<Job> = Box::pin(futures::stream::iter(vec![
            Ok(watcher::Event::Init),
            Ok(watcher::Event::InitApply(job("a", true))),
            Ok(watcher::Event::InitApply(job("b", false))),
            Ok(watcher::Event::InitDone),
            Ok(watcher::Event::Apply(job("a", false))),
            Ok(watcher::Event::Apply(job("c", true))),
        ]));
        let out: Vec<String> = labelled(events, labels::JOBSET_NAME)
            .map(|e| match e.unwrap() {
                watcher::Event::Init => "init".to_string(),
                watcher::Event::InitDone => "done".to_string(),
                watcher::Event::InitApply(j) => format!("list {}", j.metadata.name.unwrap()),
                watcher::Event::Apply(j) => format!("apply {}", j.metadata.name.unwrap()),
                watcher::Event::Delete(j) => format!("delete {}", j.metadata.name.unwrap()),
            })
            .collect()
            .await;
        assert_eq!(out, ["init", "list a", "done", "delete a", "apply c"]);
    }
}
