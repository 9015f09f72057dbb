//! The shared runtime state of a running cluster and its background tasks (HTTP server, garbage
//! collector, kubelet).

use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::{Notify, watch};

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
}

impl Default for ServerSettings {
    fn default() -> Self {
        ServerSettings {
            bookmark_interval: Duration::from_secs(1),
            watch_timeout: Duration::from_secs(1800),
            event_ttl: Duration::from_secs(3600),
            sweep_interval: Duration::from_millis(200),
        }
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
    shutdown: watch::Sender<bool>,
}

impl Shared {
    /// Creates the shared state.
    pub fn new(state: State, faults: Faults, settings: ServerSettings, server_address: String) -> Self {
        let (shutdown, _) = watch::channel(false);
        Shared {
            state: Mutex::new(state),
            gc_notify: Notify::new(),
            faults,
            settings,
            server_address,
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

/// Resolves once shutdown is signalled, including when it was signalled before the receiver subscribed.
pub async fn stopped(rx: &mut watch::Receiver<bool>) {
    let _ = rx.wait_for(|stop| *stop).await.map(|_| ());
}
