//! The stack under test and the suite's way of waiting for it.
//!
//! [`E2e`] starts [`kwas_stack::Stack`] (devcluster, the JobSet CRD, the Job and JobSet controllers, the
//! scheduler) with timing fit for tests: a kubelet that starts pods in 20 ms, controllers and a scheduler
//! that retry after 50-500 ms instead of upstream's seconds. Nothing else differs from `kwas dev`.
//!
//! Waiting is polling the API with a generous deadline ([`PATIENCE`]): the suite runs on a small, shared
//! machine, so no step relies on something happening within a tight time.

use std::fmt::Display;
use std::future::Future;
use std::time::Duration;

use k8s_openapi::NamespaceResourceScope;
use kube::api::{Api, PostParams};
use kube::{Client, Resource};
use kwas_controllers::job::plan::JobConfig;
use kwas_controllers::process::ControllersConfig;
use kwas_devcluster::{DevCluster, Topology};
use kwas_scheduler::runtime::{BackoffConfig, LeaseConfig, RuntimeConfig, RuntimeHandle, SchedulerRuntime};
use kwas_stack::{Stack, StackConfig};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::{Error, Result};

/// The namespace the suite works in.
pub const NS: &str = "default";

/// How long the suite waits for anything before it gives up. Generous: a step that normally takes
/// milliseconds may take seconds on a busy 2-core machine, and a timeout only ever fires on a real failure.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// The stack configuration the suite uses on `topology`: dev mode as `kwas dev` runs it, with a fast
/// kubelet (pods start 20 ms after binding), a Job failure backoff of 50-200 ms, and a scheduler backoff of
/// 100-500 ms that retries unschedulable units at least every 2 s.
pub fn test_config(topology: Topology) -> StackConfig {
    let mut config = StackConfig {
        cluster: kwas_devcluster::testing::fast_config(topology),
        ..StackConfig::default()
    };
    config.job.job = JobConfig {
        backoff_base: Duration::from_millis(50),
        backoff_max: Duration::from_millis(200),
    };
    config.scheduler.backoff = BackoffConfig {
        initial: Duration::from_millis(100),
        max: Duration::from_millis(500),
        max_unschedulable: Duration::from_secs(2),
    };
    config
}

/// A running stack and a client for it.
#[derive(Debug)]
pub struct E2e {
    stack: Stack,
    config: StackConfig,
}

impl E2e {
    /// Start the stack on `topology` with [`test_config`] and wait until the scheduler has listed the cluster.
    ///
    /// ```
    /// # #![allow(clippy::unwrap_used)]
    /// use kwas_devcluster::{Capacity, Topology};
    /// use kwas_tests::inspect::wait_job;
    /// use kwas_tests::{E2e, GangMonitor, JobBuilder};
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let e2e = E2e::start(Topology::grid(1, 1, 2, Capacity::default())).await.unwrap();
    /// let monitor = GangMonitor::start(&e2e.client()).await.unwrap();
    /// e2e.create(&JobBuilder::new("train").parallelism(2).gang().run_for("100ms").build().unwrap())
    ///     .await
    ///     .unwrap();
    /// wait_job(&e2e, "train", "Complete").await.unwrap();
    /// assert_eq!(monitor.check_settled().await.unwrap().gangs_satisfied, 1);
    /// e2e.shutdown().await;
    /// # });
    /// ```
    pub async fn start(topology: Topology) -> Result<Self> {
        Self::start_with(test_config(topology)).await
    }

    /// Start the stack with `config` and wait until the scheduler has listed the cluster.
    pub async fn start_with(config: StackConfig) -> Result<Self> {
        let stack = Stack::start(config.clone()).await.map_err(Error::Stack)?;
        stack.ready().await.map_err(Error::Stack)?;
        Ok(Self { stack, config })
    }

    /// A client for the cluster (namespace [`NS`]).
    pub fn client(&self) -> Client {
        self.stack.client()
    }

    /// The embedded cluster (nodes, faults).
    pub fn cluster(&self) -> &DevCluster {
        self.stack.cluster()
    }

    /// The stack, to read the scheduler's handle.
    pub fn stack(&self) -> &Stack {
        &self.stack
    }

    /// The stack, to stop and start its components.
    pub fn stack_mut(&mut self) -> &mut Stack {
        &mut self.stack
    }

    /// The API of a namespaced kind in [`NS`].
    pub fn api<K>(&self) -> Api<K>
    where
        K: Resource<Scope = NamespaceResourceScope, DynamicType = ()>,
    {
        Api::namespaced(self.client(), NS)
    }

    /// Create `object` in [`NS`], as a user would.
    pub async fn create<K>(&self, object: &K) -> Result<K>
    where
        K: Resource<Scope = NamespaceResourceScope, DynamicType = ()>
            + Clone
            + DeserializeOwned
            + Serialize
            + std::fmt::Debug,
    {
        Ok(self.api::<K>().create(&PostParams::default(), object).await?)
    }

    /// Restart the scheduler: stopped gracefully (it finishes the bindings it started), started again, and
    /// waited for until it has listed the cluster.
    pub async fn restart_scheduler(&mut self) -> Result<()> {
        self.stack.stop_scheduler().await;
        self.stack.start_scheduler().map_err(Error::Stack)?;
        self.stack.ready().await.map_err(Error::Stack)
    }

    /// The configuration the stack was started with.
    pub fn config(&self) -> &StackConfig {
        &self.config
    }

    /// Run a scheduler with `config` outside the stack, on a runtime and a client of its own, so that
    /// [`Detached::crash`] kills it mid-work like a killed process (the stack's own scheduler stops
    /// gracefully, finishing the bindings it started). Returns once it has listed the cluster.
    pub async fn detached_scheduler(&self, config: RuntimeConfig) -> Result<Detached> {
        Ok(self.detached_scheduler_with_handle(config).await?.0)
    }

    /// [`E2e::detached_scheduler`], also returning its handle (readiness, leadership, metrics).
    pub async fn detached_scheduler_with_handle(&self, config: RuntimeConfig) -> Result<(Detached, RuntimeHandle)> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let detached = Detached::start(self.cluster().base_url(), "scheduler", move |client| async move {
            match SchedulerRuntime::new(client, config) {
                Ok(runtime) => {
                    let _ = tx.send(Ok(runtime.handle()));
                    if let Err(e) = runtime.run(std::future::pending()).await {
                        tracing::error!(error = %e, "detached scheduler stopped");
                    }
                }
                Err(e) => {
                    let _ = tx.send(Err(e.to_string()));
                }
            }
        })
        .await?;
        let handle = rx
            .await
            .map_err(|_| Error::Unexpected("the detached scheduler did not start".into()))?
            .map_err(|e| Error::Unexpected(format!("the detached scheduler did not start: {e}")))?;
        eventually("the detached scheduler to list the cluster", || {
            let ready = handle.is_ready();
            async move { check(ready, || "not ready".into()) }
        })
        .await?;
        Ok((detached, handle))
    }

    /// Run the Job and JobSet controllers (the stack's configuration) outside the stack, on a runtime and
    /// a client of their own, so that [`Detached::crash`] kills them mid-work.
    pub async fn detached_controllers(&self) -> Result<Detached> {
        self.detached_controllers_with(None).await
    }

    /// [`E2e::detached_controllers`] electing a leader on `leader_election` first.
    pub async fn detached_controllers_with(&self, leader_election: Option<LeaseConfig>) -> Result<Detached> {
        let config = ControllersConfig {
            job: Some(self.config.job.clone()),
            jobset: Some(self.config.jobset.clone()),
            leader_election,
            admin_addr: None,
            webhook: None,
            // devcluster has no kube-controller-manager: the stack runs the ResourceClaim controller.
            resource_claims: true,
        };
        Detached::start(self.cluster().base_url(), "controllers", move |client| async move {
            if let Err(e) = kwas_controllers::process::run(client, config, std::future::pending()).await {
                tracing::error!(error = %e, "detached controllers stopped");
            }
        })
        .await
    }

    /// Stop everything.
    pub async fn shutdown(self) {
        self.stack.shutdown().await;
    }
}

/// A component running on a tokio runtime and a client of its own (see [`E2e::detached_scheduler`]).
/// Dropping it crashes it too.
pub struct Detached {
    what: &'static str,
    runtime: Option<tokio::runtime::Runtime>,
}

impl std::fmt::Debug for Detached {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Detached")
            .field("what", &self.what)
            .finish_non_exhaustive()
    }
}

impl Detached {
    async fn start<F, Fut>(base_url: &str, what: &'static str, run: F) -> Result<Self>
    where
        F: FnOnce(Client) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let mut config = kube::Config::new(
            base_url
                .parse()
                .map_err(|e| Error::Unexpected(format!("cluster URL {base_url}: {e}")))?,
        );
        config.default_namespace = NS.into();
        let runtime = tokio::task::spawn_blocking(move || -> Result<tokio::runtime::Runtime> {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name(format!("detached-{what}"))
                .enable_all()
                .build()
                .map_err(|e| Error::Unexpected(format!("a runtime for the {what}: {e}")))?;
            let client = runtime.block_on(async { kwas_api_types::client::client(config) })?;
            runtime.spawn(run(client));
            Ok(runtime)
        })
        .await
        .map_err(|e| Error::Unexpected(format!("starting the {what}: {e}")))??;
        Ok(Self {
            what,
            runtime: Some(runtime),
        })
    }

    /// Kill it: its tasks stop at their next suspension point and its connections close, with requests in
    /// flight cut off and nothing drained.
    pub fn crash(mut self) {
        if let Some(r) = self.runtime.take() {
            r.shutdown_background();
        }
    }
}

impl Drop for Detached {
    fn drop(&mut self) {
        if let Some(r) = self.runtime.take() {
            r.shutdown_background();
        }
    }
}

/// Why [`eventually`] looks again: what was seen instead of the awaited state.
#[derive(Debug)]
pub struct NotYet(pub String);

impl Display for NotYet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<kube::Error> for NotYet {
    fn from(e: kube::Error) -> Self {
        NotYet(format!("API error: {e}"))
    }
}

impl From<Error> for NotYet {
    fn from(e: Error) -> Self {
        NotYet(e.to_string())
    }
}

/// "Not yet", with what was seen.
pub fn not_yet(seen: impl Display) -> NotYet {
    NotYet(seen.to_string())
}

/// `Ok(())` when `holds`, else "not yet" with `seen`.
pub fn check(holds: bool, seen: impl FnOnce() -> String) -> Result<(), NotYet> {
    if holds { Ok(()) } else { Err(NotYet(seen())) }
}

/// Poll `look` until it returns `Ok`, for at most `timeout` (the toolkit's
/// [`kwas_test_tools::wait::try_eventually_within`]). API errors count as "not yet" (a component may be
/// restarting). The timeout error carries the last thing seen.
pub async fn eventually_within<T, F, Fut>(timeout: Duration, what: impl Into<String>, look: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, NotYet>>,
{
    kwas_test_tools::wait::try_eventually_within(timeout, what, look)
        .await
        .map_err(|t| Error::Timeout {
            what: t.what,
            after: t.after,
            last: t.last,
        })
}

/// [`eventually_within`] with the suite's [`PATIENCE`].
pub async fn eventually<T, F, Fut>(what: impl Into<String>, look: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, NotYet>>,
{
    eventually_within(PATIENCE, what, look).await
}
