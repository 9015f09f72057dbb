//! Shutdown: one signal every part of a process waits on, fired by SIGINT / SIGTERM or by a failing task.

use tokio::sync::watch;

/// A shutdown signal that can be fired once and awaited from anywhere.
#[derive(Debug, Clone)]
pub struct Shutdown {
    tx: watch::Sender<bool>,
}

impl Default for Shutdown {
    fn default() -> Self {
        Self::new()
    }
}

impl Shutdown {
    /// A signal that has not fired.
    pub fn new() -> Self {
        let (tx, _) = watch::channel(false);
        Shutdown { tx }
    }

    /// Fires the signal.
    pub fn fire(&self) {
        self.tx.send_replace(true);
    }

    /// Whether it fired.
    pub fn fired(&self) -> bool {
        *self.tx.borrow()
    }

    /// A future that resolves once the signal fired (also if it fired before).
    pub fn wait(&self) -> impl std::future::Future<Output = ()> + Send + Sync + 'static {
        let mut rx = self.tx.subscribe();
        async move {
            let _ = rx.wait_for(|fired| *fired).await;
        }
    }

    /// Fires the signal when `fut` resolves (for example on Ctrl-C), in the background.
    pub fn fire_on(&self, fut: impl std::future::Future<Output = ()> + Send + 'static) {
        let this = self.clone();
        tokio::spawn(async move {
            fut.await;
            this.fire();
        });
    }
}

/// Resolves on SIGINT (Ctrl-C) or SIGTERM (what Kubernetes sends a pod it stops).
pub async fn os_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
