//! # kwas-stack
//!
//! The whole of kwas in one process: devcluster, the JobSet CRD, the Job and JobSet controllers and the
//! scheduler, wired as `kwas dev` and `kwas demo` run them and as the end-to-end suite (`kwas-tests`) tests
//! them. Each component can be stopped and started again on its own, as if its process died.
//!
//! In this dev mode the Job controller also manages Jobs with no `spec.managedBy` (devcluster has no other
//! Job controller) and the scheduler answers for both `kwas-scheduler` and `default-scheduler`.
//!
//! This is a crate of its own rather than part of `kwas-devcluster` because it depends on the controllers
//! and the scheduler, which depend on devcluster for their tests: keeping it apart keeps every arrow
//! between the workspace's crates pointing one way.
//!
//! ```no_run
//! # async fn demo() -> Result<(), kwas_stack::Error> {
//! use kwas_stack::{Stack, StackConfig};
//!
//! let stack = Stack::start(StackConfig::default()).await?;
//! stack.ready().await?;
//! println!("export KUBECONFIG={}", stack.cluster().kubeconfig_path().display());
//! stack.shutdown().await;
//! # Ok(()) }
//! ```
#![warn(missing_docs)]

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, ListParams, PostParams};
use kwas_api_types::jobset::{JobSet, PodGroupManagement};
use kwas_api_types::names::{DEFAULT_SCHEDULER_NAME, SCHEDULER_NAME};
use kwas_controllers::job::JobControllerConfig;
use kwas_controllers::jobset::JobSetControllerConfig;
use kwas_controllers::process::ControllersConfig;
use kwas_devcluster::{DevCluster, DevClusterConfig};
use kwas_scheduler::runtime::{RuntimeConfig, RuntimeHandle, SchedulerRuntime};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Why the stack could not start or get ready.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// devcluster did not start.
    #[error("starting devcluster: {0}")]
    Cluster(#[from] kwas_devcluster::Error),
    /// An API request failed.
    #[error("{what}: {source}")]
    Api {
        /// What the request was for.
        what: &'static str,
        /// The client's error.
        source: kube::Error,
    },
    /// The scheduler runtime could not be created.
    #[error("starting the scheduler: {0}")]
    Scheduler(#[from] kwas_scheduler::runtime::Error),
    /// Something did not become ready in time.
    #[error("{0} in time")]
    NotReady(&'static str),
}

/// The stack's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What to run.
#[derive(Debug, Clone)]
pub struct StackConfig {
    /// The embedded cluster (default: 1 block x 2 racks x 2 nodes).
    pub cluster: DevClusterConfig,
    /// The Job controller (dev mode: manages Jobs with no `managedBy`).
    pub job: JobControllerConfig,
    /// The JobSet controller.
    pub jobset: JobSetControllerConfig,
    /// The scheduler (dev mode: answers for `kwas-scheduler` and `default-scheduler`).
    pub scheduler: RuntimeConfig,
}

impl Default for StackConfig {
    fn default() -> Self {
        Self {
            cluster: DevClusterConfig {
                topology: kwas_devcluster::Topology::grid(1, 2, 2, kwas_devcluster::Capacity::default()),
                ..DevClusterConfig::default()
            },
            job: JobControllerConfig {
                manage_unset: true,
                ..JobControllerConfig::default()
            },
            jobset: JobSetControllerConfig {
                default_management: PodGroupManagement::Centralized,
                ..JobSetControllerConfig::default()
            },
            scheduler: RuntimeConfig {
                scheduler_names: vec![SCHEDULER_NAME.to_string(), DEFAULT_SCHEDULER_NAME.to_string()],
                ..RuntimeConfig::default()
            },
        }
    }
}

/// A component that can be stopped (and started again) on its own.
#[derive(Debug)]
struct Component {
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Component {
    async fn stop(self) {
        let _ = self.stop.send(true);
        if tokio::time::timeout(Duration::from_secs(15), self.task).await.is_err() {
            tracing::warn!("component did not stop in time");
        }
    }
}

fn stopper() -> (
    watch::Sender<bool>,
    impl std::future::Future<Output = ()> + Send + Sync + 'static,
) {
    let (tx, mut rx) = watch::channel(false);
    (tx, async move {
        let _ = rx.wait_for(|s| *s).await;
    })
}

/// The running stack.
#[derive(Debug)]
pub struct Stack {
    cluster: DevCluster,
    config: StackConfig,
    controllers: Option<Component>,
    scheduler: Option<Component>,
    scheduler_handle: Option<RuntimeHandle>,
}

/// Install the JobSet CRD (`jobset.x-k8s.io` v1alpha2 and v1, [`kwas_api_types::jobset::crd`]) and wait
/// until it is served.
pub async fn install_crds(client: &Client) -> Result<()> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    match crds
        .create(&PostParams::default(), &kwas_api_types::jobset::crd())
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(source) => {
            return Err(Error::Api {
                what: "installing the JobSet CRD",
                source,
            });
        }
    }
    let jobsets: Api<JobSet> = Api::all(client.clone());
    for _ in 0..200 {
        if jobsets.list(&ListParams::default().limit(1)).await.is_ok() {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    Err(Error::NotReady("the JobSet resource was not served"))
}

/// The `User-Agent` of the controllers' client (the Job, JobSet and ResourceClaim controllers).
pub const CONTROLLERS_USER_AGENT: &str = "kwas-controllers";
/// The `User-Agent` of the scheduler's client.
pub const SCHEDULER_USER_AGENT: &str = "kwas-scheduler";

impl Stack {
    /// Start the cluster, install the CRDs, then start the controllers and the scheduler.
    pub async fn start(config: StackConfig) -> Result<Self> {
        // devcluster answers the JobSet CRD's conversion webhook in-process with the conversion the
        // controllers serve at /convert on a real cluster (devcluster dials no webhook), whether or
        // not the controllers run.
        let mut cluster_config = config.cluster.clone();
        cluster_config.conversion_webhooks.register_jobset();
        let cluster = DevCluster::start(cluster_config).await?;
        install_crds(&cluster.client()).await?;
        let mut stack = Self {
            cluster,
            config,
            controllers: None,
            scheduler: None,
            scheduler_handle: None,
        };
        stack.start_controllers();
        stack.start_scheduler()?;
        Ok(stack)
    }

    /// The embedded cluster.
    pub fn cluster(&self) -> &DevCluster {
        &self.cluster
    }

    /// A client for the embedded cluster.
    pub fn client(&self) -> Client {
        self.cluster().client()
    }

    /// The scheduler's handle (readiness, metrics), while it runs.
    pub fn scheduler(&self) -> Option<&RuntimeHandle> {
        self.scheduler_handle.as_ref()
    }

    /// Start the Job and JobSet controllers (if they are not running).
    pub fn start_controllers(&mut self) {
        if self.controllers.is_some() {
            return;
        }
        let (stop, stopped) = stopper();
        let config = ControllersConfig {
            job: Some(self.config.job.clone()),
            jobset: Some(self.config.jobset.clone()),
            leader_election: None,
            admin_addr: None,
            // devcluster answers the conversion webhook in-process (`Stack::start`).
            webhook: None,
            // devcluster has no kube-controller-manager: the stack runs the ResourceClaim controller.
            resource_claims: true,
        };
        // Named, so that the cluster's request counts tell the components apart.
        let client = self
            .cluster
            .client_as(CONTROLLERS_USER_AGENT)
            .unwrap_or_else(|_| self.client());
        let task = tokio::spawn(async move {
            if let Err(e) = kwas_controllers::process::run(client, config, stopped).await {
                tracing::error!(error = %e, "controllers stopped");
            }
        });
        self.controllers = Some(Component { stop, task });
    }

    /// Stop the controllers (as if their process died).
    pub async fn stop_controllers(&mut self) {
        if let Some(c) = self.controllers.take() {
            c.stop().await;
        }
    }

    /// Start the scheduler (if it is not running).
    pub fn start_scheduler(&mut self) -> Result<()> {
        if self.scheduler.is_some() {
            return Ok(());
        }
        let client = self
            .cluster
            .client_as(SCHEDULER_USER_AGENT)
            .unwrap_or_else(|_| self.client());
        let runtime = SchedulerRuntime::new(client, self.config.scheduler.clone())?;
        self.scheduler_handle = Some(runtime.handle());
        let (stop, stopped) = stopper();
        let task = tokio::spawn(async move {
            if let Err(e) = runtime.run(stopped).await {
                tracing::error!(error = %e, "scheduler stopped");
            }
        });
        self.scheduler = Some(Component { stop, task });
        Ok(())
    }

    /// Stop the scheduler (as if its process died).
    pub async fn stop_scheduler(&mut self) {
        if let Some(c) = self.scheduler.take() {
            c.stop().await;
        }
        self.scheduler_handle = None;
    }

    /// Wait until the scheduler has listed the cluster.
    pub async fn ready(&self) -> Result<()> {
        for _ in 0..400 {
            if self.scheduler_handle.as_ref().is_some_and(RuntimeHandle::is_ready) {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        Err(Error::NotReady("the scheduler did not become ready"))
    }

    /// Stop everything and the cluster.
    pub async fn shutdown(mut self) {
        self.stop_scheduler().await;
        self.stop_controllers().await;
        self.cluster.shutdown().await;
    }
}
