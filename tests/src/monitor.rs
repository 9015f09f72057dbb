//! [`GangMonitor`]: watches pods, PodGroups and CompositePodGroups through the API for the whole of a test and
//! feeds a [`GangLedger`], so "no partial gang binding" is checked at every moment, not only at the end.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource, ResourceExt};
use kwas_api_types::v1alpha3::{CompositePodGroup, PodGroup};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::error::{Error, Result};
use crate::harness::{NotYet, eventually, eventually_within, not_yet};
use crate::ledger::{GangLedger, Partial, Summary};

/// The default allowance for a binding burst (see [`crate::ledger`]): far above the milliseconds a burst
/// takes, far below the time a stuck gang would sit partially bound in a test.
pub const BURST: Duration = Duration::from_secs(5);

/// A running monitor. Dropping it stops its watches.
#[derive(Debug)]
pub struct GangMonitor {
    ledger: Arc<Mutex<GangLedger>>,
    burst: Duration,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for GangMonitor {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

fn lock(ledger: &Mutex<GangLedger>) -> MutexGuard<'_, GangLedger> {
    ledger.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// What one watch stream tells the ledger.
trait Tracked:
    Resource<DynamicType = ()> + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + Sync + 'static
{
    /// The key the stream knows the object by (to forget objects a relist no longer returns).
    fn key(&self) -> String;
    fn applied(&self, ledger: &mut GangLedger, now: Instant);
    fn deleted(&self, ledger: &mut GangLedger, now: Instant);
}

impl Tracked for Pod {
    fn key(&self) -> String {
        self.uid().unwrap_or_default()
    }
    fn applied(&self, ledger: &mut GangLedger, now: Instant) {
        let spec = self.spec.as_ref();
        let group = spec
            .and_then(|s| s.scheduling_group.as_ref())
            .and_then(|g| g.pod_group_name.as_deref());
        let bound = spec.and_then(|s| s.node_name.as_ref()).is_some() && self.metadata.deletion_timestamp.is_none();
        ledger.pod_applied(now, &self.namespace().unwrap_or_default(), &self.key(), group, bound);
    }
    fn deleted(&self, ledger: &mut GangLedger, now: Instant) {
        ledger.pod_deleted(now, &self.key());
    }
}

impl Tracked for PodGroup {
    fn key(&self) -> String {
        format!("{}/{}", self.namespace().unwrap_or_default(), self.name_any())
    }
    fn applied(&self, ledger: &mut GangLedger, now: Instant) {
        ledger.pod_group_applied(
            now,
            &self.namespace().unwrap_or_default(),
            &self.name_any(),
            &self.uid().unwrap_or_default(),
            self.spec.scheduling_policy.gang.as_ref().map(|g| g.min_count),
            self.spec.parent_composite_pod_group_name.as_deref(),
        );
    }
    fn deleted(&self, ledger: &mut GangLedger, now: Instant) {
        ledger.pod_group_deleted(now, &self.namespace().unwrap_or_default(), &self.name_any());
    }
}

impl Tracked for CompositePodGroup {
    fn key(&self) -> String {
        format!("{}/{}", self.namespace().unwrap_or_default(), self.name_any())
    }
    fn applied(&self, ledger: &mut GangLedger, now: Instant) {
        ledger.composite_applied(
            now,
            &self.namespace().unwrap_or_default(),
            &self.name_any(),
            &self.uid().unwrap_or_default(),
            self.spec.scheduling_policy.gang.as_ref().map(|g| g.min_group_count),
            self.spec.parent_composite_pod_group_name.as_deref(),
        );
    }
    fn deleted(&self, ledger: &mut GangLedger, now: Instant) {
        ledger.composite_deleted(now, &self.namespace().unwrap_or_default(), &self.name_any());
    }
}

/// Feed one kind's watch events to the ledger. A relist replaces what the stream knew: objects it no longer
/// returns count as deleted.
async fn follow<K: Tracked>(
    events: impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send,
    ledger: Arc<Mutex<GangLedger>>,
    synced: watch::Sender<bool>,
) {
    let mut events = std::pin::pin!(events);
    let mut known: std::collections::HashMap<String, K> = std::collections::HashMap::new();
    let mut relisted: std::collections::HashSet<String> = std::collections::HashSet::new();
    while let Some(event) = events.next().await {
        let Ok(event) = event else { continue };
        let now = Instant::now();
        let mut l = lock(&ledger);
        match event {
            watcher::Event::Init => relisted.clear(),
            watcher::Event::InitApply(o) => {
                relisted.insert(o.key());
                o.applied(&mut l, now);
                known.insert(o.key(), o);
            }
            watcher::Event::InitDone => {
                known.retain(|key, o| {
                    let keep = relisted.contains(key);
                    if !keep {
                        o.deleted(&mut l, now);
                    }
                    keep
                });
                drop(l);
                let _ = synced.send(true);
            }
            watcher::Event::Apply(o) => {
                o.applied(&mut l, now);
                known.insert(o.key(), o);
            }
            watcher::Event::Delete(o) => {
                o.deleted(&mut l, now);
                known.remove(&o.key());
            }
        }
    }
}

fn spawn_follow<K: Tracked>(
    client: &Client,
    ledger: &Arc<Mutex<GangLedger>>,
) -> (JoinHandle<()>, watch::Receiver<bool>) {
    let (tx, rx) = watch::channel(false);
    let events = watcher(Api::<K>::all(client.clone()), watcher::Config::default()).default_backoff();
    (tokio::spawn(follow(events, ledger.clone(), tx)), rx)
}

impl GangMonitor {
    /// Start watching every namespace, allowing bursts of [`BURST`]; returns once all three watches have
    /// listed the cluster (two where CompositePodGroups are not served).
    pub async fn start(client: &Client) -> Result<Self> {
        Self::start_with_burst(client, BURST).await
    }

    /// [`start`](Self::start) with another burst allowance.
    pub async fn start_with_burst(client: &Client, burst: Duration) -> Result<Self> {
        let ledger = Arc::new(Mutex::new(GangLedger::new(burst)));
        // Read the scheduling.k8s.io versions the cluster serves (v1beta1 where it is), as kwas' components
        // do; a cluster without the CompositePodGroup API has no composite gangs to follow.
        let (client, negotiation) = kwas_api_types::versioned::negotiated(client.clone()).await;
        let client = &client;
        let (pods, pods_synced) = spawn_follow::<Pod>(client, &ledger);
        let (groups, groups_synced) = spawn_follow::<PodGroup>(client, &ledger);
        let mut tasks = vec![pods, groups];
        let mut synced = vec![pods_synced, groups_synced];
        let composites_served = negotiation
            .served()
            .is_none_or(|s| s.version(kwas_api_types::served::Kind::CompositePodGroup).is_some());
        if composites_served {
            let (composites, composites_synced) = spawn_follow::<CompositePodGroup>(client, &ledger);
            tasks.push(composites);
            synced.push(composites_synced);
        }
        let monitor = Self { ledger, burst, tasks };
        eventually("the gang monitor's watches to list the cluster", || {
            let ready = synced.iter().all(|s| *s.borrow());
            async move { if ready { Ok(()) } else { Err(not_yet("not all listed")) } }
        })
        .await?;
        Ok(monitor)
    }

    /// Declare that the scheduler is stopped on purpose from now on.
    pub fn outage_begin(&self) {
        lock(&self.ledger).outage_begin(Instant::now());
    }

    /// Declare that the scheduler is back.
    pub fn outage_end(&self) {
        lock(&self.ledger).outage_end(Instant::now());
    }

    /// What the ledger saw so far.
    pub fn summary(&self) -> Summary {
        lock(&self.ledger).summary(Instant::now())
    }

    /// The gangs partially bound right now.
    pub fn partial_now(&self) -> Vec<Partial> {
        lock(&self.ledger).partial_now()
    }

    /// Fails if any gang sat partially bound for longer than its allowance so far.
    pub fn check_no_partial_binding(&self) -> Result<Summary> {
        let l = lock(&self.ledger);
        let now = Instant::now();
        let violations = l.violations(now);
        if violations.is_empty() {
            Ok(l.summary(now))
        } else {
            let list: Vec<String> = violations.iter().map(ToString::to_string).collect();
            Err(Error::Unexpected(format!("partial gang binding: {}", list.join("; "))))
        }
    }

    /// Waits (at most two bursts) until no gang is partially bound (each is satisfied or has nothing bound),
    /// then checks the intervals so far. Use once the system has settled (after restarts, at the end of a
    /// test).
    pub async fn check_settled(&self) -> Result<Summary> {
        eventually_within(self.burst * 2, "every gang to be bound whole or not at all", || {
            let partial = lock(&self.ledger).partial_now();
            async move {
                if partial.is_empty() {
                    Ok(())
                } else {
                    let list: Vec<String> = partial.iter().map(ToString::to_string).collect();
                    Err(NotYet(list.join("; ")))
                }
            }
        })
        .await?;
        self.check_no_partial_binding()
    }
}
