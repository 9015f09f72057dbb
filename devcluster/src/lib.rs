//! # kwas-devcluster
//!
//! An embedded Kubernetes API server on loopback with simulated nodes and a simulated kubelet, so kwas
//! runs and is tested on one machine with no cluster. Real HTTP with JSON and the Kubernetes protobuf
//! encoding: kube-rs, kubectl 1.37 (client-go) and the official Python client work against it unchanged,
//! through the kubeconfig it writes.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use k8s_openapi::api::core::v1::Node;
//! use kwas_devcluster::{Capacity, DevCluster, DevClusterConfig, Topology};
//!
//! let cluster = DevCluster::start(DevClusterConfig {
//!     topology: Topology::grid(2, 2, 4, Capacity { gpus: 8, ..Default::default() }),
//!     ..Default::default()
//! })
//! .await?;
//! let nodes: kube::Api<Node> = kube::Api::all(cluster.client());
//! assert_eq!(nodes.list(&Default::default()).await?.items.len(), 16);
//! println!("export KUBECONFIG={}", cluster.kubeconfig_path().display());
//! cluster.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! ## Module map
//!
//! Public: [`DevCluster`], [`DevClusterConfig`] and the configuration types, [`testing`]. Every other
//! module is private. The modules are layered like kube-apiserver (`apimachinery` and `apiserver` below
//! the kinds' registry, the HTTP handlers above it, controllers and kubelet as clients on top): a module
//! uses only modules of lower layers (`tests/devcluster/layering.rs` checks every `crate::` path against this table and
//! that there is no cycle). `lib` wires the layers together: it gives `api` the kinds' registry.
//!
//! | layer | module | role |
//! | --- | --- | --- |
//! | 13 | `testing` | the fast test configuration (public) |
//! | 12 | `http/` | routing, content negotiation, watch streams, discovery, Tables, OpenAPI, `scale` and `logs` |
//! | 11 | `controllers/` | garbage collector, namespace, CRD cleanup, PodGroup protection, events, `apps`, CronJobs, quotas, `disruption`, `endpointslice`, `node_lifecycle`, `taint_eviction`, `volume` |
//! | 10 | `sim/` | the simulated `kubelet` (its pod admission: `admit`; run outcomes: `outcome`, `run_end`; stopping pods: `stop`; the status both write: `pod_status`), nodes (`topology`), the CSI driver `csi`, the DRA driver `dra`, the `interconnect` driver |
//! | 9 | `recorder` | events written by the controllers and the kubelet, aggregated like client-go's recorder |
//! | 8 | `cluster/` | the shared runtime state (`Shared`: the API state under its lock, faults, settings, limits, logs, shutdown) and the lock-per-step HTTP write driver (`guaranteed`) |
//! | 7 | `api/` | get / list / create / update / patch / delete / deletecollection and subresources over an injected registry, generic over kinds |
//! | 6 | `kinds/` | one file per built-in kind: its resource, `Strategy` and status strategy; `apps/`, `storage/`, `dra/` (with its CEL compiler) group related kinds, `validate` holds shared validation, `print` Table cells |
//! | 6 | `protobuf/` | the Kubernetes protobuf wire format, driven by the v1.37 schema of every built-in kind |
//! | 5 | `admission/` | the admission pipeline and the plugins kinds share (`priority`, `quota`, CRD `schema`s and `rules`) |
//! | 5 | `patch/` | merge, JSON and strategic merge patches; server-side apply |
//! | 4 | `resource/` | `ResourceInfo`, the `Strategy` and `StatusStrategy` traits, typed `decode`, the `Registry` of served resources |
//! | 3 | `work` | the controllers' work queue items |
//! | 2 | `store` | JSON objects per resource, resourceVersions, owner and label indexes, watch history |
//! | 2 | `selectors` | label and field selectors |
//! | 2 | `views` | read-only views of built-in objects the layers share (pod readiness, conditions, `claimRef`) |
//! | 1 | `request` | the per-request context (dry run, field manager, field validation, warnings) |
//! | 1 | `requests` | the request counter (`apiserver_request_total` by client, verb and resource) |
//! | 1 | `meta` | object metadata accessors and timestamps |
//! | 1 | `cron` | cron schedules |
//! | 1 | `logs` | the simulated containers' logs (`pods/log`) |
//! | 1 | `faults` | fault injection |
//! | 1 | `kubeconfig` | the kubeconfig file |
//! | 1 | `supervise` | restarting background tasks that die |
//! | 0 | `error` | errors and the Kubernetes `Status` answers |
//!
//! See the crate README for what is emulated and what is not.

#![warn(missing_docs)]

mod admission;
mod api;
mod cluster;
mod controllers;
mod cron;
mod error;
mod faults;
mod http;
mod kinds;
mod kubeconfig;
mod logs;
mod meta;
mod patch;
mod protobuf;
mod recorder;
mod request;
mod requests;
mod resource;
mod selectors;
mod sim;
mod store;
mod supervise;
mod views;
mod work;

pub mod testing;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

pub use error::{ApiError, Error, Result};
pub use requests::RequestKey;
pub use resource::conversion::{ConversionHandler, ConversionWebhooks, WebhookAddress};
pub use supervise::TaskHealth;

/// The Kubernetes version devcluster reports (`/version`, the nodes' kubelet version).
pub const KUBE_VERSION: &str = "v1.37.0";
/// Its minor version.
pub const KUBE_MINOR: &str = "37";
pub use cluster::ServerSettings;
pub use faults::{FaultConfig, FaultRule, Faults, Verb};
pub use sim::csi::{CsiConfig, DEFAULT_STORAGE_CLASS, SIM_DISK_DRIVER};
pub use sim::dra::{
    DRA_ATTRIBUTE_INDEX, DRA_ATTRIBUTE_INTERCONNECT_DOMAIN, DRA_ATTRIBUTE_MODEL, DRA_CAPACITY_MEMORY, DRA_DEVICE_CLASS,
    DRA_DRIVER, dra_slice_name,
};
pub use sim::interconnect::{CHANNELS_PER_DOMAIN, INTERCONNECT_DEVICE_CLASS, INTERCONNECT_DRIVER, channel_slice_name};
pub use sim::kubelet::{KubeletConfig, SIM_SHUTDOWN_DURATION};
pub use sim::topology::{
    Capacity, DraGpus, NodePool, NodePoolArgs, NodeSpec, SIM_DRA_GPU_MEMORY, SIM_DRA_GPU_MODEL, SIM_DRA_GPUS,
    SIM_NODE_DOWN, Taint, Topology,
};

use api::{DeleteOptions, State};
use cluster::Shared;
use request::RequestContext;
use resource::{ApiSettings, GroupResource};

/// How a cluster is started.
#[derive(Debug, Clone)]
pub struct DevClusterConfig {
    /// Address to listen on (loopback by default). Any other address needs
    /// [`DevClusterConfig::allow_remote_clients`].
    pub host: String,
    /// Port; 0 picks a free one.
    pub port: u16,
    /// Where to write the kubeconfig; `None` writes it into a temporary directory removed at shutdown.
    pub kubeconfig_path: Option<PathBuf>,
    /// The simulated nodes.
    pub topology: Topology,
    /// The simulated kubelet.
    pub kubelet: KubeletConfig,
    /// The simulated CSI driver ([`SIM_DISK_DRIVER`]).
    pub csi: CsiConfig,
    /// Whether the simulated DRA driver [`DRA_DRIVER`] runs: its DeviceClass [`DRA_DEVICE_CLASS`] and a
    /// ResourceSlice for every node with DRA GPUs (on by default).
    pub dra_driver: bool,
    /// Fault injection (no rules by default).
    pub faults: FaultConfig,
    /// Watch, event and controller timing.
    pub server: ServerSettings,
    /// How many events each resource keeps for watches (older resourceVersions get 410 Gone).
    pub watch_history: usize,
    /// Whether PodGroups and CompositePodGroups get the PodGroup protection finalizer.
    pub podgroup_protection: bool,
    /// Whether Jobs' `spec.scheduling` is validated at admission, as kube-apiserver does with the
    /// WorkloadWithJob gate (on by default). Off emulates a server that stores any block, to see what the
    /// Job controller does with invalid input.
    pub job_scheduling_validation: bool,
    /// kube-apiserver's WorkloadWithJob feature gate (alpha in v1.37, on by default here): off, a Job's
    /// `spec.scheduling` is dropped on write, as a server without the gate does.
    pub workload_with_job: bool,
    /// Listen on a non-loopback address and answer requests addressed to any host. devcluster has no
    /// authentication, authorization or TLS, so this lets anyone who can reach the port do anything; off
    /// by default, and a warning is logged when on.
    pub allow_remote_clients: bool,
    /// kube-apiserver's `--runtime-config` switches, as (key, on): `("scheduling.k8s.io/v1alpha3", false)`,
    /// `("scheduling.k8s.io/v1alpha3/compositepodgroups", false)`; a key is `<group>/<version>` or
    /// `<group>/<version>/<resource>`. Off stops serving what it names (discovery, the API, OpenAPI), so
    /// tests can run against a cluster shape that lacks it; devcluster cannot serve more than it has, and a
    /// key naming nothing it serves fails the start. Empty by default (everything served).
    pub runtime_config: Vec<(String, bool)>,
    /// The CRD conversion webhooks devcluster calls in-process, by the address a CRD's
    /// `spec.conversion.webhook.clientConfig` names (devcluster dials no webhook; none by default).
    pub conversion_webhooks: ConversionWebhooks,
}

impl Default for DevClusterConfig {
    fn default() -> Self {
        DevClusterConfig {
            host: "127.0.0.1".into(),
            port: 0,
            kubeconfig_path: None,
            topology: Topology::default(),
            kubelet: KubeletConfig::default(),
            csi: CsiConfig::default(),
            dra_driver: true,
            faults: FaultConfig::default(),
            server: ServerSettings::default(),
            watch_history: 10_000,
            podgroup_protection: true,
            job_scheduling_validation: true,
            workload_with_job: true,
            allow_remote_clients: false,
            conversion_webhooks: ConversionWebhooks::default(),
            runtime_config: Vec::new(),
        }
    }
}

/// A running cluster. Dropping it stops the server; [`DevCluster::shutdown`] also waits for it.
pub struct DevCluster {
    shared: Arc<Shared>,
    base_url: String,
    kubeconfig_path: PathBuf,
    client: kube::Client,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    node_index: AtomicUsize,
    dra_driver: bool,
    _tempdir: Option<tempfile::TempDir>,
}

const MANAGER: &str = "devcluster";

impl DevCluster {
    /// Starts a cluster: binds the port, starts the API server, the controllers and the kubelet, creates
    /// the topology's nodes and writes the kubeconfig.
    pub async fn start(config: DevClusterConfig) -> Result<DevCluster> {
        config.topology.validate()?;
        let loopback = config.host == "localhost"
            || config
                .host
                .trim_matches(|c| c == '[' || c == ']')
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback());
        if !loopback && !config.allow_remote_clients {
            return Err(Error::Config(format!(
                "refusing to listen on {:?}: devcluster has no authentication, authorization or TLS, so anyone who can reach a non-loopback address could do anything; allow it explicitly (--insecure-allow-remote-clients) if you mean it",
                config.host
            )));
        }
        if config.allow_remote_clients {
            tracing::warn!(
                host = %config.host,
                "devcluster answers remote clients: no authentication, authorization or TLS protect it"
            );
        }
        let addr = format!("{}:{}", config.host, config.port);
        let listener = tokio::net::TcpListener::bind(&addr)
            .await
            .map_err(|source| Error::Bind {
                addr: addr.clone(),
                source,
            })?;
        let local = listener.local_addr().map_err(|source| Error::Bind {
            addr: addr.clone(),
            source,
        })?;
        let server_address = local.to_string();
        let base_url = format!("http://{server_address}");
        let mut state = State::with_resources(
            config.watch_history,
            ApiSettings {
                podgroup_protection: config.podgroup_protection,
                job_scheduling_validation: config.job_scheduling_validation,
                workload_with_job: config.workload_with_job,
                sim_disk_attach_limit: config.csi.attach_limit,
                conversion_webhooks: config.conversion_webhooks.clone(),
            },
            kinds::served_resources(&config.runtime_config).map_err(Error::Config)?,
        );
        sim::csi::bootstrap(&mut state);
        if config.dra_driver {
            sim::dra::bootstrap(&mut state);
            sim::interconnect::bootstrap(&mut state);
        }
        let shared = Arc::new(Shared::new(
            state,
            Faults::new(config.faults.clone()),
            config.server.clone(),
            server_address,
            config.allow_remote_clients,
        ));

        let mut tasks = Vec::new();
        let app = http::router(shared.clone());
        tasks.push(tokio::spawn(http::serve::serve(
            listener,
            app,
            shared.clone(),
            http::serve::Limits::default(),
        )));
        let s = shared.clone();
        tasks.push(tokio::spawn(supervise::supervise(
            shared.restarts.clone(),
            shared.shutdown_signal(),
            "controllers",
            move || controllers::run(s.clone()),
        )));
        if config.dra_driver {
            let s = shared.clone();
            tasks.push(tokio::spawn(supervise::supervise(
                shared.restarts.clone(),
                shared.shutdown_signal(),
                "dra-driver",
                move || sim::dra::run(s.clone()),
            )));
        }
        if config.kubelet.enabled {
            let (s, kubelet) = (shared.clone(), config.kubelet.clone());
            tasks.push(tokio::spawn(supervise::supervise(
                shared.restarts.clone(),
                shared.shutdown_signal(),
                "kubelet",
                move || sim::kubelet::run(s.clone(), kubelet.clone()),
            )));
        }

        let (kubeconfig_path, tempdir) = match &config.kubeconfig_path {
            Some(p) => (p.clone(), None),
            None => {
                let dir = tempfile::Builder::new()
                    .prefix("kwas-devcluster-")
                    .tempdir()
                    .map_err(|source| Error::Io {
                        path: "temporary directory".into(),
                        source,
                    })?;
                (dir.path().join("kubeconfig"), Some(dir))
            }
        };
        kubeconfig::write(&kubeconfig_path, &base_url)?;
        let client = client_for(&base_url, None)?;

        let cluster = DevCluster {
            shared,
            base_url,
            kubeconfig_path,
            client,
            tasks,
            node_index: AtomicUsize::new(0),
            dra_driver: config.dra_driver,
            _tempdir: tempdir,
        };
        for spec in config.topology.nodes() {
            cluster.add_node(spec)?;
        }
        Ok(cluster)
    }

    /// A kube-rs client for the cluster (default namespace `default`).
    pub fn client(&self) -> kube::Client {
        self.client.clone()
    }

    /// A kube-rs client that names itself `user_agent` (its `User-Agent` header), so that the
    /// [request counts](Self::request_counts) tell its requests apart, as kube-apiserver's audit log and
    /// `apiserver_request_total` tell components apart.
    pub fn client_as(&self, user_agent: &str) -> Result<kube::Client> {
        client_for(&self.base_url, Some(user_agent))
    }

    /// Every resource request served so far, counted by client (`User-Agent`), verb, group, resource
    /// and subresource (kube-apiserver's `apiserver_request_total`).
    pub fn request_counts(&self) -> Vec<(RequestKey, u64)> {
        self.shared.requests.snapshot()
    }

    /// The server URL (`http://127.0.0.1:<port>`).
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The kubeconfig file kubectl and other clients can use.
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig_path
    }

    /// The fault injector: set or clear rules while the cluster runs.
    pub fn faults(&self) -> &Faults {
        &self.shared.faults
    }

    /// Adds a simulated node. When it returns, the node exists and so does its ResourceSlice of DRA GPUs
    /// (if it has any and the DRA driver runs).
    pub fn add_node(&self, spec: NodeSpec) -> Result<()> {
        let index = self.node_index.fetch_add(1, Ordering::Relaxed) + 1;
        let node = sim::topology::node_object(&spec, index);
        self.shared.with(|s| {
            let res = s.builtin("", "nodes").ok_or_else(ApiError::path_not_found)?;
            s.create(&res, "", node, &mut RequestContext::manager(MANAGER))?;
            if self.dra_driver {
                sim::dra::sync_node(s, &spec.name);
                sim::interconnect::ensure_for_node(s, &spec.name);
            }
            Ok::<(), ApiError>(())
        })?;
        Ok(())
    }

    /// Removes a node; its pods fail (the simulated kubelet marks them `NodeLost`) and its ResourceSlice goes.
    pub fn remove_node(&self, name: &str) -> Result<()> {
        self.shared.with(|s| {
            let res = s.builtin("", "nodes").ok_or_else(ApiError::path_not_found)?;
            s.delete(
                &res,
                "",
                name,
                &DeleteOptions {
                    grace_period_seconds: Some(0),
                    ..Default::default()
                },
            )?;
            if self.dra_driver {
                sim::dra::sync_node(s, name);
                sim::interconnect::sync(s);
            }
            Ok::<(), ApiError>(())
        })?;
        Ok(())
    }

    /// Marks a node unschedulable (like `kubectl cordon`; the node gets the
    /// `node.kubernetes.io/unschedulable:NoSchedule` taint).
    pub fn cordon(&self, name: &str) -> Result<()> {
        self.set_unschedulable(name, true)
    }

    /// Makes a cordoned node schedulable again.
    pub fn uncordon(&self, name: &str) -> Result<()> {
        self.set_unschedulable(name, false)
    }

    fn set_unschedulable(&self, name: &str, value: bool) -> Result<()> {
        self.shared.with(|s| {
            let res = s.builtin("", "nodes").ok_or_else(ApiError::path_not_found)?;
            let patch = json!({"spec": {"unschedulable": if value { Value::Bool(true) } else { Value::Null }}});
            s.patch(
                &res,
                "",
                name,
                api::PatchType::Merge,
                &patch,
                None,
                &mut RequestContext::manager(MANAGER),
            )
            .map(|_| ())
        })?;
        Ok(())
    }

    /// Names of the current nodes.
    pub fn node_names(&self) -> Vec<String> {
        self.shared.with(|s| {
            s.store
                .list(&GroupResource::new("", "nodes"), None)
                .iter()
                .map(|n| meta::name(n).to_string())
                .collect()
        })
    }

    /// Requests the server is answering right now, open watches not counted (what
    /// kube-apiserver's `apiserver_current_inflight_requests` shows). Zero once the answers to every
    /// request received so far are out, or their clients gone: after a client is killed, nothing it sent
    /// is still on its way into the cluster.
    pub fn requests_in_flight(&self) -> usize {
        self.shared.in_flight.serving()
    }

    /// The background tasks that died and were started again (empty while all is well).
    pub fn task_failures(&self) -> Vec<TaskHealth> {
        self.shared.restarts.snapshot()
    }

    /// Stops the server and the simulation, and waits for them.
    pub async fn shutdown(mut self) {
        self.shared.signal_shutdown();
        for t in std::mem::take(&mut self.tasks) {
            let _ = tokio::time::timeout(Duration::from_secs(5), t).await;
        }
    }
}

impl std::fmt::Debug for DevCluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DevCluster")
            .field("base_url", &self.base_url)
            .field("kubeconfig_path", &self.kubeconfig_path)
            .finish()
    }
}

impl Drop for DevCluster {
    fn drop(&mut self) {
        self.shared.signal_shutdown();
    }
}

/// A kube-rs client for the server at `base_url` (default namespace `default`), naming itself
/// `user_agent` when given.
fn client_for(base_url: &str, user_agent: Option<&str>) -> Result<kube::Client> {
    let uri: http_uri::Uri = base_url
        .parse()
        .map_err(|e: http_uri::InvalidUri| Error::Client(e.to_string()))?;
    let mut kcfg = kube::Config::new(uri);
    kcfg.default_namespace = "default".into();
    if let Some(agent) = user_agent {
        let value = axum::http::HeaderValue::from_str(agent).map_err(|e| Error::Client(e.to_string()))?;
        kcfg.headers.push((axum::http::header::USER_AGENT, value));
    }
    kwas_api_types::client::client(kcfg).map_err(|e| Error::Client(e.to_string()))
}

mod http_uri {
    pub use axum::http::Uri;
    pub use axum::http::uri::InvalidUri;
}

/// The shapes of a v1.37 cluster devcluster can take (`--profile`), by what its admin enabled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    /// Every scheduling version devcluster has: `scheduling.k8s.io/v1beta1` and `v1alpha3` (Workload and
    /// PodGroup in both, over one storage; CompositePodGroup in `v1alpha3`) and the WorkloadWithJob gate.
    /// The default.
    Alpha,
    /// A stock v1.37 cluster with the beta enabled: `scheduling.k8s.io/v1beta1` only (no `v1alpha3`, so
    /// no CompositePodGroup) and no alpha gates (a Job's `spec.scheduling` is dropped).
    Stock137,
    /// [`Profile::Alpha`] without CompositePodGroups (`scheduling.k8s.io/v1alpha3/compositepodgroups=false`).
    NoComposite,
}

impl Profile {
    /// Every profile, by its `--profile` name.
    pub const ALL: [(&'static str, Profile); 3] = [
        ("alpha", Profile::Alpha),
        ("stock-1.37", Profile::Stock137),
        ("no-composite", Profile::NoComposite),
    ];

    /// The profile named `name`.
    pub fn parse(name: &str) -> Result<Profile> {
        Self::ALL
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, p)| *p)
            .ok_or_else(|| {
                let names: Vec<&str> = Self::ALL.iter().map(|(n, _)| *n).collect();
                Error::Config(format!("--profile {name:?}: expected one of {}", names.join(", ")))
            })
    }

    /// `config` in this shape: its `runtime_config` switches (added to any it has) and gates.
    pub fn apply(self, mut config: DevClusterConfig) -> DevClusterConfig {
        match self {
            Profile::Alpha => {}
            Profile::Stock137 => {
                config.runtime_config.push(("scheduling.k8s.io/v1alpha3".into(), false));
                config.workload_with_job = false;
            }
            Profile::NoComposite => {
                config
                    .runtime_config
                    .push(("scheduling.k8s.io/v1alpha3/compositepodgroups".into(), false));
            }
        }
        config
    }
}

/// Parses kube-apiserver's `--runtime-config` value (`key=bool,key=bool`; a bare key means `true`) into
/// [`DevClusterConfig::runtime_config`].
pub fn parse_runtime_config(value: &str) -> Result<Vec<(String, bool)>> {
    value
        .split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|entry| {
            let (key, on) = entry.split_once('=').unwrap_or((entry, "true"));
            let on = match on.trim() {
                "true" => true,
                "false" => false,
                other => {
                    return Err(Error::Config(format!(
                        "--runtime-config: {key}={other}: the value must be true or false"
                    )));
                }
            };
            Ok((key.trim().to_string(), on))
        })
        .collect()
}

#[cfg(test)]
mod runtime_config_parse_tests {
    #[test]
    fn runtime_config_values_parse_as_kube_apiserver_reads_them() {
        assert_eq!(
            super::parse_runtime_config("scheduling.k8s.io/v1alpha3=false, apps/v1").unwrap(),
            [
                ("scheduling.k8s.io/v1alpha3".to_string(), false),
                ("apps/v1".to_string(), true)
            ]
        );
        assert!(super::parse_runtime_config("").unwrap().is_empty());
        assert!(super::parse_runtime_config("apps/v1=maybe").is_err());
    }

    #[test]
    fn profiles_are_runtime_config_switches_and_gates() {
        use super::{DevClusterConfig, Profile};
        let stock = Profile::parse("stock-1.37").unwrap().apply(DevClusterConfig::default());
        assert_eq!(
            stock.runtime_config,
            [("scheduling.k8s.io/v1alpha3".to_string(), false)]
        );
        assert!(!stock.workload_with_job);
        let alpha = Profile::parse("alpha").unwrap().apply(DevClusterConfig::default());
        assert!(alpha.runtime_config.is_empty() && alpha.workload_with_job);
        let no_cpg = Profile::parse("no-composite")
            .unwrap()
            .apply(DevClusterConfig::default());
        assert_eq!(no_cpg.runtime_config.len(), 1);
        assert_eq!(
            Profile::parse("stock").unwrap_err().to_string(),
            "invalid configuration: --profile \"stock\": expected one of alpha, stock-1.37, no-composite"
        );
    }
}
