//! Supervision of the cluster's background tasks (the listener, the built-in controllers, the kubelet):
//! a task that panics is reported (logged, counted in [`crate::Health`]) and started again after a short
//! backoff, so one bad object never silently stops pods from starting or garbage from being collected.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::watch;

/// Restarts and the last failure of each supervised task.
#[derive(Debug, Default)]
pub(crate) struct Restarts {
    tasks: Mutex<Vec<TaskHealth>>,
}

/// One supervised task's record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskHealth {
    /// The task (`kubelet`, `controllers`, `server`).
    pub name: &'static str,
    /// How many times it died and was started again.
    pub restarts: u32,
    /// Why it died last.
    pub last_failure: Option<String>,
}

impl Restarts {
    fn record(&self, name: &'static str, failure: String) {
        let mut tasks = self.tasks.lock();
        match tasks.iter_mut().find(|t| t.name == name) {
            Some(t) => {
                t.restarts = t.restarts.saturating_add(1);
                t.last_failure = Some(failure);
            }
            None => tasks.push(TaskHealth {
                name,
                restarts: 1,
                last_failure: Some(failure),
            }),
        }
    }

    /// Every task that ever died.
    pub(crate) fn snapshot(&self) -> Vec<TaskHealth> {
        self.tasks.lock().clone()
    }
}

/// Runs `make()`'s task until the cluster shuts down, starting it again (after 100 ms, doubling up to 5 s)
/// whenever it panics or returns early.
pub(crate) async fn supervise<F, Fut>(
    restarts: Arc<Restarts>,
    mut stop: watch::Receiver<bool>,
    name: &'static str,
    make: F,
) where
    F: Fn() -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let mut backoff = Duration::from_millis(100);
    loop {
        let outcome = tokio::spawn(make()).await;
        if *stop.borrow() {
            return;
        }
        let failure = match outcome {
            Ok(()) => "stopped before shutdown".to_string(),
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
        tracing::error!(task = name, %failure, "a devcluster task died; starting it again");
        restarts.record(name, failure);
        tokio::select! {
            _ = tokio::time::sleep(backoff) => {}
            _ = stop.wait_for(|stop| *stop) => return,
        }
        backoff = (backoff * 2).min(Duration::from_secs(5));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[tokio::test]
    async fn a_task_that_panics_is_recorded_and_started_again() {
        let shared = Arc::new(crate::cluster::test_shared());
        let runs = Arc::new(AtomicU32::new(0));
        let r = runs.clone();
        let s = shared.clone();
        let task = tokio::spawn(supervise(
            shared.restarts.clone(),
            shared.shutdown_signal(),
            "flaky",
            move || {
                let r = r.clone();
                let s = s.clone();
                async move {
                    if r.fetch_add(1, Ordering::SeqCst) == 0 {
                        panic!("first run fails");
                    }
                    let mut stop = s.shutdown_signal();
                    crate::cluster::stopped(&mut stop).await;
                }
            },
        ));
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while runs.load(Ordering::SeqCst) < 2 {
            assert!(tokio::time::Instant::now() < deadline, "the task was not restarted");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let health = shared.restarts.snapshot();
        assert_eq!(health.len(), 1);
        assert_eq!(health[0].restarts, 1);
        assert_eq!(health[0].last_failure.as_deref(), Some("panicked: first run fails"));
        shared.signal_shutdown();
        task.await.unwrap();
    }
}
