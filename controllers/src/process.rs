//! Running the controllers as a process on the `kwas-shell` shell: both controllers on one client, leader
//! election on a Lease, an admin server with `/healthz`, `/readyz` and `/metrics`, and supervision.
//!
//! With leader election, an instance waits until it holds the Lease, then runs the controllers; if it
//! loses the Lease (including when it cannot renew it before the renew deadline) it stops them and [`run`]
//! returns [`RunError::LeadershipLost`], so the process exits and is restarted (never two active
//! instances). A controller task that dies (a panic outside a reconcile, a stream that ends) fails
//! `/healthz` and makes [`run`] return [`RunError::Failed`], so the process exits non-zero. `/readyz`
//! answers 200 once the instance is either leading or waiting as a healthy follower.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use kube::Client;
use kwas_shell::{Health, Leadership, LeaseConfig, Shutdown, Supervisor, admin};
use prometheus_client::registry::Registry;
use tracing::info;

use crate::informers::Informers;
use crate::job::{self, JobControllerConfig};
use crate::jobset::{self, JobSetControllerConfig};
use crate::metrics::Metrics;

/// Every API call the controllers make, as `(group, resource, verbs)`: what `deploy/controllers/rbac.yaml`
/// grants, and nothing more (a test checks the manifest against this list).
pub const API_ACCESS: &[(&str, &str, &[&str])] = &[
    ("batch", "jobs", &["get", "list", "watch", "create", "patch", "delete"]),
    ("batch", "jobs/status", &["patch"]),
    ("", "pods", &["get", "list", "watch", "create", "patch", "delete"]),
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
    ("jobset.x-k8s.io", "jobsets", &["get", "list", "watch", "delete"]),
    ("jobset.x-k8s.io", "jobsets/status", &["patch"]),
    ("", "services", &["create"]),
    ("", "persistentvolumeclaims", &["create"]),
    ("events.k8s.io", "events", &["create", "patch"]),
    // The ResourceClaim controller (`--resource-claim-controller`).
    ("", "pods/status", &["patch"]),
    ("scheduling.k8s.io", "podgroups/status", &["patch"]),
    (
        "resource.k8s.io",
        "resourceclaims",
        &["get", "list", "watch", "create", "update", "delete"],
    ),
    ("resource.k8s.io", "resourceclaims/status", &["update"]),
    ("resource.k8s.io", "resourceclaimtemplates", &["get"]),
];

/// What to run.
#[derive(Clone, Debug)]
pub struct ControllersConfig {
    /// Run the Job controller with this configuration.
    pub job: Option<JobControllerConfig>,
    /// Run the JobSet controller with this configuration.
    pub jobset: Option<JobSetControllerConfig>,
    /// Run the ResourceClaim controller (clusters without kube-controller-manager's).
    pub resource_claims: bool,
    /// Elect a leader before running.
    pub leader_election: Option<LeaseConfig>,
    /// Serve `/healthz`, `/readyz` and `/metrics` here.
    pub admin_addr: Option<SocketAddr>,
    /// Serve the JobSet CRD's conversion webhook (`/convert`, HTTPS) with these settings, leader or not.
    pub webhook: Option<crate::webhook::WebhookConfig>,
}

/// Why [`run`] stopped.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The Lease was lost: the process should exit so it restarts as a follower.
    #[error("leadership lost")]
    LeadershipLost,
    /// The leader election settings are unusable.
    #[error("{0}")]
    Config(String),
    /// The admin server could not start.
    #[error("admin server: {0}")]
    Admin(#[from] std::io::Error),
    /// The conversion webhook could not start.
    #[error("conversion webhook: {0}")]
    Webhook(#[from] crate::webhook::WebhookError),
    /// A controller task failed.
    #[error("{0}")]
    Failed(#[from] kwas_shell::TaskFailed),
}

/// How long shutdown waits to release the Lease.
const RELEASE_TIMEOUT: Duration = Duration::from_secs(5);

/// Run the configured controllers until `shutdown` resolves (or leadership is lost, or a controller
/// fails).
pub async fn run(
    client: Client,
    config: ControllersConfig,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), RunError> {
    let mut registry = Registry::default();
    let metrics = Metrics::new(&mut registry);
    let registry = Arc::new(registry);
    let health = Arc::new(Health::default());
    let stop = Shutdown::new();
    stop.fire_on(shutdown);
    if let Some(addr) = config.admin_addr {
        let encoder: admin::MetricsEncoder = Arc::new(move || {
            let mut text = String::new();
            prometheus_client::encoding::text::encode(&mut text, &registry).map(|()| text)
        });
        admin::serve(addr, health.clone(), encoder, stop.wait()).await?;
    }
    if let Some(webhook) = &config.webhook {
        crate::webhook::serve(webhook, stop.wait()).await?;
    }
    let Some(le) = config.leader_election.clone() else {
        health.set_ready(true);
        metrics.leader(true);
        return run_controllers(client, &config, metrics, health, stop).await;
    };
    le.validate().map_err(RunError::Config)?;
    let leadership = Leadership::start(client.clone(), le.clone());
    let mut leading = leadership.subscribe();
    health.set_ready(true);
    // Wait for the Lease or for shutdown.
    let acquired = tokio::select! {
        acquired = async { leading.wait_for(|l| *l).await.is_ok() } => acquired,
        _ = stop.wait() => {
            leadership.release(RELEASE_TIMEOUT).await;
            return Ok(());
        }
    };
    if !acquired {
        return Err(RunError::LeadershipLost);
    }
    info!(lease = %le.name, identity = %le.identity, "leading");
    health.set_leader(true);
    metrics.leader(true);
    // Lose the Lease: stop the controllers and report it.
    let lost = Shutdown::new();
    {
        let (lost, stop) = (lost.clone(), stop.clone());
        tokio::spawn(async move {
            tokio::select! {
                _ = async { leading.wait_for(|l| !*l).await.is_ok() } => lost.fire(),
                _ = stop.wait() => {}
            }
        });
    }
    let controllers_stop = Shutdown::new();
    controllers_stop.fire_on({
        let (a, b) = (stop.wait(), lost.wait());
        async move {
            tokio::select! {
                _ = a => {}
                _ = b => {}
            }
        }
    });
    let result = run_controllers(client, &config, metrics.clone(), health.clone(), controllers_stop).await;
    health.set_leader(false);
    metrics.leader(false);
    leadership.release(RELEASE_TIMEOUT).await;
    match result {
        Ok(()) if lost.fired() && !stop.fired() => Err(RunError::LeadershipLost),
        other => other,
    }
}

/// The controllers as supervised tasks, until `stop` fires or one of them fails.
async fn run_controllers(
    client: Client,
    config: &ControllersConfig,
    metrics: Metrics,
    health: Arc<Health>,
    stop: Shutdown,
) -> Result<(), RunError> {
    let mut supervisor = Supervisor::new(health, stop.clone());
    // Speak the scheduling.k8s.io versions the cluster serves (v1beta1 where it is), converting at the
    // edge: the controllers read and write the v1alpha3 types.
    let (client, negotiation) = kwas_api_types::versioned::negotiated(client).await;
    // One watch per kind for both controllers (see `informers`): they subscribe, then the watches start.
    let mut informers = Informers::new(&client);
    let composites = negotiation
        .served()
        .is_none_or(|s| s.version(kwas_api_types::served::Kind::CompositePodGroup).is_some());
    if !composites {
        tracing::warn!("the API server does not serve compositepodgroups: JobSets compile flat Workloads");
        informers = informers.without_composites();
    }
    if let Some(cfg) = &config.job {
        let ctx = job::Context::new(client.clone(), cfg.clone(), metrics.clone());
        let controller = job::run_on(ctx, &mut informers, stop.wait());
        supervisor.spawn("job controller", async move {
            controller.await;
            Ok::<(), std::convert::Infallible>(())
        });
    }
    if let Some(cfg) = &config.jobset {
        let ctx = jobset::Context::new(client.clone(), cfg.clone(), metrics.clone());
        let controller = jobset::run_on(ctx, &mut informers, stop.wait());
        supervisor.spawn("jobset controller", async move {
            controller.await;
            Ok::<(), std::convert::Infallible>(())
        });
    }
    for (kind, watch) in informers.start(|| stop.wait()) {
        supervisor.spawn(kind, async move {
            watch.await;
            Ok::<(), std::convert::Infallible>(())
        });
    }
    if config.resource_claims {
        let ctx = crate::claims::Context::new(client.clone());
        let stopped = stop.wait();
        supervisor.spawn("resourceclaim controller", async move {
            crate::claims::run(ctx, stopped).await;
            Ok::<(), std::convert::Infallible>(())
        });
    }
    info!("controllers running");
    supervisor.wait().await?;
    Ok(())
}
