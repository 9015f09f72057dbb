//! Running the controllers as a process: both controllers on one client, leader election on a Lease, and
//! an admin server with `/healthz`, `/readyz` and `/metrics`.
//!
//! With leader election, an instance waits until it holds the Lease, then runs the controllers; if it
//! loses the Lease it stops them and [`run`] returns [`RunError::LeadershipLost`], so the process exits and is
//! restarted (never two active instances). `/readyz` answers 200 once the instance is either leading or
//! waiting as a healthy follower.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::http::StatusCode;
use axum::routing::get;
use kube::Client;
use prometheus_client::registry::Registry;
use tokio::sync::watch;
use tracing::{info, warn};

use crate::job::{self, JobControllerConfig};
use crate::jobset::{self, JobSetControllerConfig};
use crate::metrics::Metrics;

/// Every API call the controllers make, as `(group, resource, verbs)`: what `deploy/controllers/rbac.yaml`
/// grants, and nothing more (a test checks the manifest against this list).
pub const API_ACCESS: &[(&str, &str, &[&str])] = &[
    ("batch", "jobs", &["get", "list", "watch", "create", "patch", "delete"]),
    ("batch", "jobs/status", &["patch"]),
    ("", "pods", &["list", "watch", "create", "patch", "delete"]),
    (
        "scheduling.k8s.io",
        "workloads",
        &["get", "list", "watch", "create", "patch"],
    ),
    (
        "scheduling.k8s.io",
        "podgroups",
        &["get", "list", "watch", "create", "patch", "delete"],
    ),
    (
        "scheduling.k8s.io",
        "compositepodgroups",
        &["get", "list", "watch", "create", "delete"],
    ),
    ("kwas.dev", "jobsets", &["get", "list", "watch"]),
    ("kwas.dev", "jobsets/status", &["patch"]),
    ("events.k8s.io", "events", &["create", "patch"]),
];

/// Leader election settings.
#[derive(Clone, Debug)]
pub struct LeaderElection {
    /// The Lease's name.
    pub lease_name: String,
    /// The Lease's namespace.
    pub namespace: String,
    /// This instance's identity (for example the pod name).
    pub identity: String,
    /// Lease duration in seconds.
    pub duration_seconds: u64,
}

/// What to run.
#[derive(Clone, Debug)]
pub struct ControllersConfig {
    /// Run the Job controller with this configuration.
    pub job: Option<JobControllerConfig>,
    /// Run the JobSet controller with this configuration.
    pub jobset: Option<JobSetControllerConfig>,
    /// Elect a leader before running.
    pub leader_election: Option<LeaderElection>,
    /// Serve `/healthz`, `/readyz` and `/metrics` here.
    pub admin_addr: Option<SocketAddr>,
}

/// Why [`run`] stopped.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The Lease was lost: the process should exit so it restarts as a follower.
    #[error("leadership lost")]
    LeadershipLost,
    /// Leader election failed.
    #[error("leader election: {0}")]
    Lease(#[from] kube_lease_manager::LeaseManagerError),
    /// The admin server could not start.
    #[error("admin server: {0}")]
    Admin(#[from] std::io::Error),
}

/// Serve the admin endpoints on `addr` until `shutdown` changes to true.
pub async fn serve_admin(
    addr: SocketAddr,
    registry: Arc<Registry>,
    ready: Arc<AtomicBool>,
    mut shutdown: watch::Receiver<bool>,
) -> std::io::Result<SocketAddr> {
    let app = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route(
            "/readyz",
            get(move || {
                let ready = ready.clone();
                async move {
                    if ready.load(Ordering::SeqCst) {
                        (StatusCode::OK, "ok")
                    } else {
                        (StatusCode::SERVICE_UNAVAILABLE, "not ready")
                    }
                }
            }),
        )
        .route(
            "/metrics",
            get(move || {
                let registry = registry.clone();
                async move {
                    let mut text = String::new();
                    match prometheus_client::encoding::text::encode(&mut text, &registry) {
                        Ok(()) => (StatusCode::OK, text),
                        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
                    }
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    tokio::spawn(async move {
        let stop = async move {
            while !*shutdown.borrow() {
                if shutdown.changed().await.is_err() {
                    break;
                }
            }
        };
        if let Err(e) = axum::serve(listener, app).with_graceful_shutdown(stop).await {
            warn!(error = %e, "admin server");
        }
    });
    Ok(bound)
}

async fn run_controllers(client: Client, config: &ControllersConfig, metrics: Metrics, stop: watch::Receiver<bool>) {
    let mut tasks = Vec::new();
    let wait = move |mut rx: watch::Receiver<bool>| async move {
        while !*rx.borrow() {
            if rx.changed().await.is_err() {
                break;
            }
        }
    };
    if let Some(cfg) = &config.job {
        let ctx = job::Context::new(client.clone(), cfg.clone(), metrics.clone());
        tasks.push(tokio::spawn(job::run(ctx, wait(stop.clone()))));
    }
    if let Some(cfg) = &config.jobset {
        let ctx = jobset::Context::new(client.clone(), cfg.clone(), metrics.clone());
        tasks.push(tokio::spawn(jobset::run(ctx, wait(stop.clone()))));
    }
    info!(controllers = tasks.len(), "controllers running");
    for t in tasks {
        let _ = t.await;
    }
}

/// Run the configured controllers until `shutdown` resolves (or leadership is lost).
pub async fn run(
    client: Client,
    config: ControllersConfig,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), RunError> {
    let mut registry = Registry::default();
    let metrics = Metrics::new(&mut registry);
    let registry = Arc::new(registry);
    let ready = Arc::new(AtomicBool::new(false));
    let (stop_tx, stop_rx) = watch::channel(false);
    let stop_on_shutdown = stop_tx.clone();
    tokio::spawn(async move {
        shutdown.await;
        let _ = stop_on_shutdown.send(true);
    });
    if let Some(addr) = config.admin_addr {
        let bound = serve_admin(addr, registry.clone(), ready.clone(), stop_rx.clone()).await?;
        info!(%bound, "admin server listening");
    }
    let Some(le) = config.leader_election.clone() else {
        ready.store(true, Ordering::SeqCst);
        run_controllers(client, &config, metrics, stop_rx).await;
        return Ok(());
    };
    let manager = kube_lease_manager::LeaseManagerBuilder::new(client.clone(), le.lease_name.clone())
        .with_namespace(le.namespace.clone())
        .with_identity(le.identity.clone())
        .with_duration(le.duration_seconds)
        .with_grace(le.duration_seconds.div_ceil(3).max(1))
        .build()
        .await?;
    let (mut leading, lease_task) = manager.watch().await;
    ready.store(true, Ordering::SeqCst);
    let mut stop = stop_rx.clone();
    // Wait for the Lease or for shutdown.
    loop {
        if *leading.borrow_and_update() {
            break;
        }
        tokio::select! {
            changed = leading.changed() => if changed.is_err() { return Err(RunError::LeadershipLost) },
            _ = stop.changed() => if *stop.borrow() { drop(leading); let _ = lease_task.await; return Ok(()) },
        }
    }
    info!(lease = %le.lease_name, identity = %le.identity, "leading");
    let (run_stop_tx, run_stop_rx) = watch::channel(false);
    let controllers = tokio::spawn({
        let config = config.clone();
        async move { run_controllers(client, &config, metrics, run_stop_rx).await }
    });
    let lost = loop {
        tokio::select! {
            changed = leading.changed() => {
                if changed.is_err() || !*leading.borrow() { break true; }
            }
            _ = stop.changed() => if *stop.borrow() { break false; },
        }
    };
    let _ = run_stop_tx.send(true);
    let _ = controllers.await;
    drop(leading);
    if let Ok(Ok(manager)) = lease_task.await {
        let _ = manager.release().await;
    }
    if lost { Err(RunError::LeadershipLost) } else { Ok(()) }
}
