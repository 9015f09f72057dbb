//! The shared runtime state of a running cluster and its background tasks (HTTP server, garbage
//! collector, kubelet).

pub(crate) mod guaranteed;

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, watch};

use crate::api::State;
use crate::faults::Faults;

/// Server behaviour settings.
#[derive(Debug, Clone)]
pub struct ServerSettings {
    /// How often watches with `allowWatchBookmarks` get a BOOKMARK while idle.
    pub bookmark_interval: Duration,
    /// How long a watch without `timeoutSeconds` stays open.
    pub watch_timeout: Duration,
    /// How long events live.
    pub event_ttl: Duration,
    /// How often the periodic controllers (PodGroup protection, event expiry) run.
    pub sweep_interval: Duration,
    /// How many bytes of events each resource keeps for watches (each event at the size of its watch
    /// line; see `store::DEFAULT_HISTORY_BYTES`); the event count is bounded separately.
    pub watch_history_bytes: usize,
    /// How many bytes may wait for one watcher's client, counting what its connection is still writing (a
    /// single larger event waits alone). A client that reads keeps taking them; the watch waits while it
    /// is full. 256 KiB by default: the kernel's socket buffers (several MiB on loopback) absorb a client's
    /// pauses first, and waiting costs a reading client nothing. Besides it, a watch holds the event it is
    /// encoding: with 1,000 open watches of small objects about 256 MiB wait in all at worst, and two
    /// events each for objects near the 1.5 MiB limit (JSON lines of stored objects are shared with the
    /// history and every watcher; protobuf and Table frames are each watcher's own).
    pub watch_buffer_bytes: usize,
    /// How long a watcher's client may take nothing while bytes wait for it before the server closes its
    /// connection (kube-apiserver closes a watcher whose buffer stays full past a dispatch budget of at
    /// most 100 ms; the stream ends and the client watches again). 30 s by default: only time the client
    /// takes nothing at all counts (an idle watch, or a client reading slowly, is never closed), and a busy
    /// local client on a loaded two-core machine pauses for far less than that. Must not be zero.
    pub watch_stall_timeout: Duration,
    /// How long a client may take to send a request's body once its headers arrived (kube-apiserver's
    /// `--request-timeout`, 60 s). Past it the request is answered 504 `Timeout`, and the in-flight slot
    /// it held is free again.
    pub request_timeout: Duration,
    /// How long a node's kubelet may stay silent before the node lifecycle controller marks the node
    /// `Unknown` and taints it unreachable (kube-controller-manager's `--node-monitor-grace-period`, 40 s);
    /// in devcluster a kubelet is silent while its node carries `kwas.dev/sim-node-down: "true"`.
    pub node_monitor_grace_period: Duration,
}

impl Default for ServerSettings {
    fn default() -> Self {
        ServerSettings {
            bookmark_interval: Duration::from_secs(1),
            watch_timeout: Duration::from_secs(1800),
            event_ttl: Duration::from_secs(3600),
            sweep_interval: Duration::from_millis(200),
            request_timeout: Duration::from_secs(60),
            watch_history_bytes: crate::store::DEFAULT_HISTORY_BYTES,
            watch_buffer_bytes: 256 * 1024,
            watch_stall_timeout: Duration::from_secs(30),
            node_monitor_grace_period: Duration::from_secs(40),
        }
    }
}

/// How many requests are served at once (kube-apiserver's `--max-requests-inflight` and
/// `--max-mutating-requests-inflight` defaults) and how many watches stay open; beyond that a request is
/// answered 429 with `Retry-After`, so memory stays bounded under a flood.
#[derive(Debug)]
pub struct InFlight {
    reads: Arc<Semaphore>,
    writes: Arc<Semaphore>,
    watches: Arc<Semaphore>,
}

const MAX_READS: usize = 400;
const MAX_WRITES: usize = 200;

impl Default for InFlight {
    fn default() -> Self {
        InFlight {
            reads: Arc::new(Semaphore::new(MAX_READS)),
            writes: Arc::new(Semaphore::new(MAX_WRITES)),
            watches: Arc::new(Semaphore::new(1000)),
        }
    }
}

impl InFlight {
    /// A slot for one request, or `None` when the limit is reached.
    pub fn admit(&self, mutating: bool) -> Option<OwnedSemaphorePermit> {
        let pool = if mutating { &self.writes } else { &self.reads };
        pool.clone().try_acquire_owned().ok()
    }

    /// Requests being served now (open watches not counted).
    pub fn serving(&self) -> usize {
        (MAX_READS - self.reads.available_permits()) + (MAX_WRITES - self.writes.available_permits())
    }

    /// A slot for one open watch, or `None` when the limit is reached.
    pub fn watch(&self) -> Option<OwnedSemaphorePermit> {
        self.watches.clone().try_acquire_owned().ok()
    }
}

/// State shared by the HTTP handlers, the controllers and the handle.
#[derive(Debug)]
pub struct Shared {
    /// The cluster state, under one lock.
    pub state: Mutex<State>,
    /// Wakes the garbage collector.
    pub gc_notify: Notify,
    /// Fault injection.
    pub faults: Faults,
    /// Settings.
    pub settings: ServerSettings,
    /// `host:port` the server listens on.
    pub server_address: String,
    /// Whether requests from other hosts are answered (the `Host` / `Origin` checks are off).
    pub remote_clients: bool,
    /// Request and watch limits.
    pub in_flight: InFlight,
    /// What the supervisor recorded about the background tasks.
    pub restarts: Arc<crate::supervise::Restarts>,
    /// The simulated kubelet's container logs (`pods/log`).
    pub logs: Mutex<crate::logs::PodLogs>,
    /// The turns of HTTP writes to each object.
    pub(crate) write_turns: guaranteed::WriteTurns,
    /// Served requests by client, verb and resource.
    pub requests: crate::requests::RequestCounts,
    shutdown: watch::Sender<bool>,
}

impl Shared {
    /// Creates the shared state.
    pub fn new(
        state: State,
        faults: Faults,
        settings: ServerSettings,
        server_address: String,
        remote_clients: bool,
    ) -> Self {
        let (shutdown, _) = watch::channel(false);
        let mut state = state;
        state.store.set_history_byte_limit(settings.watch_history_bytes);
        Shared {
            state: Mutex::new(state),
            gc_notify: Notify::new(),
            faults,
            settings,
            server_address,
            remote_clients,
            in_flight: InFlight::default(),
            restarts: Default::default(),
            logs: Default::default(),
            write_turns: Default::default(),
            requests: Default::default(),
            shutdown,
        }
    }

    /// Runs `f` under the state lock, then wakes the garbage collector if it queued work.
    pub fn with<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        let (r, wake) = {
            let mut s = self.state.lock();
            let r = f(&mut s);
            (r, s.gc_pending())
        };
        if wake {
            self.gc_notify.notify_one();
        }
        r
    }

    /// A receiver that changes when the cluster shuts down.
    pub fn shutdown_signal(&self) -> watch::Receiver<bool> {
        self.shutdown.subscribe()
    }

    /// Signals shutdown to every task.
    pub fn signal_shutdown(&self) {
        self.shutdown.send_replace(true);
    }
}

/// A fresh cluster state for unit tests.
#[cfg(test)]
pub(crate) fn test_shared() -> Shared {
    let state = State::new(100, Default::default());
    Shared::new(
        state,
        Faults::new(Default::default()),
        ServerSettings::default(),
        "127.0.0.1:0".into(),
        false,
    )
}

/// Resolves once shutdown is signalled, including when it was signalled before the receiver subscribed.
pub async fn stopped(rx: &mut watch::Receiver<bool>) {
    let _ = rx.wait_for(|stop| *stop).await.map(|_| ());
}
