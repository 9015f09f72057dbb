//! Task supervision for a process: each component runs as a task; one that fails (returns an error,
//! returns while it should still run, or panics) is never silent: the failure is logged and recorded in
//! [`Health`] (so `/healthz` fails), the whole process shuts down, and [`Supervisor::wait`] returns the
//! failure so the binary exits non-zero and Kubernetes restarts it (its Lease then moves to a standby).

use std::future::Future;
use std::sync::Arc;

use futures::FutureExt;
use futures::stream::{FuturesUnordered, StreamExt};
use tokio::task::JoinHandle;

use crate::health::Health;
use crate::shutdown::Shutdown;

/// Why a supervised process stopped.
#[derive(Debug, thiserror::Error)]
#[error("{task}: {reason}")]
pub struct TaskFailed {
    /// The task that failed.
    pub task: &'static str,
    /// What happened.
    pub reason: String,
}

/// The component tasks of one process.
#[derive(Debug)]
pub struct Supervisor {
    health: Arc<Health>,
    shutdown: Shutdown,
    tasks: Vec<(&'static str, JoinHandle<Result<(), String>>)>,
}

impl Supervisor {
    /// A supervisor recording into `health` and firing `shutdown` when a task fails.
    pub fn new(health: Arc<Health>, shutdown: Shutdown) -> Self {
        Supervisor {
            health,
            shutdown,
            tasks: Vec::new(),
        }
    }

    /// Starts a component. It should run until the shutdown signal fires; returning earlier (with `Ok`
    /// or an error) or panicking is a failure of the process.
    pub fn spawn<F, E>(&mut self, name: &'static str, task: F)
    where
        F: Future<Output = Result<(), E>> + Send + 'static,
        E: std::fmt::Display,
    {
        let handle = tokio::spawn(task.map(|r| r.map_err(|e| e.to_string())));
        self.tasks.push((name, handle));
    }

    /// Waits until every task has stopped. The first failure fires the shutdown signal (the other tasks
    /// then stop), marks the process unhealthy and is returned.
    pub async fn wait(self) -> Result<(), TaskFailed> {
        let Supervisor {
            health,
            shutdown,
            tasks,
        } = self;
        let mut running: FuturesUnordered<_> = tasks
            .into_iter()
            .map(|(name, handle)| handle.map(move |r| (name, r)))
            .collect();
        let mut first: Option<TaskFailed> = None;
        while let Some((task, result)) = running.next().await {
            let reason = match result {
                Ok(Ok(())) if shutdown.fired() => continue,
                Ok(Ok(())) => "stopped while the process should still run".to_string(),
                Ok(Err(e)) => e,
                Err(e) if e.is_panic() => {
                    let payload = e.into_panic();
                    let text = payload
                        .downcast_ref::<&str>()
                        .map(|s| (*s).to_string())
                        .or_else(|| payload.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "a panic".to_string());
                    format!("panicked: {text}")
                }
                Err(e) => e.to_string(),
            };
            tracing::error!(task, %reason, "a component failed; shutting the process down");
            health.fail(format!("{task}: {reason}"));
            shutdown.fire();
            if first.is_none() {
                first = Some(TaskFailed { task, reason });
            }
        }
        match first {
            Some(f) => Err(f),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_panicking_task_fails_the_process_and_stops_the_others() {
        let health = Arc::new(Health::default());
        let shutdown = Shutdown::new();
        let mut s = Supervisor::new(health.clone(), shutdown.clone());
        let stop = shutdown.wait();
        s.spawn("steady", async move {
            stop.await;
            Ok::<(), String>(())
        });
        s.spawn("broken", async move {
            if health_check_never_true() {
                return Ok::<(), String>(());
            }
            panic!("reconcile exploded")
        });
        let err = s.wait().await.unwrap_err();
        assert_eq!(err.task, "broken");
        assert_eq!(err.reason, "panicked: reconcile exploded");
        assert!(!health.healthy());
        assert!(shutdown.fired());
    }

    fn health_check_never_true() -> bool {
        false
    }

    #[tokio::test]
    async fn a_clean_shutdown_is_not_a_failure() {
        let health = Arc::new(Health::default());
        let shutdown = Shutdown::new();
        let mut s = Supervisor::new(health.clone(), shutdown.clone());
        let stop = shutdown.wait();
        s.spawn("steady", async move {
            stop.await;
            Ok::<(), String>(())
        });
        shutdown.fire();
        s.wait().await.unwrap();
        assert!(health.healthy());
    }
}
