//! `devcluster`: runs an embedded Kubernetes API server with simulated nodes until interrupted, and writes
//! a kubeconfig for kubectl and other clients.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use kwas_devcluster::{CsiConfig, DevCluster, DevClusterConfig, FaultConfig, KubeletConfig, NodePoolArgs, Topology};

/// An embedded Kubernetes API server with simulated nodes and kubelet.
#[derive(Debug, Parser)]
#[command(name = "devcluster", version)]
struct Args {
    /// Address to listen on. Anything but loopback also needs --insecure-allow-remote-clients.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// Accept a non-loopback --host and requests addressed to any host name. devcluster has no
    /// authentication, authorization or TLS: anyone who can reach the port can do anything.
    #[arg(long)]
    insecure_allow_remote_clients: bool,
    /// Port to listen on (0 picks a free port).
    #[arg(long, default_value_t = 6443)]
    port: u16,
    /// Where to write the kubeconfig.
    #[arg(long, default_value = "kwas-dev.kubeconfig")]
    kubeconfig: PathBuf,
    /// A YAML topology file (pools of blocks x racks x nodes); overrides the grid flags.
    #[arg(long)]
    topology: Option<PathBuf>,
    #[command(flatten)]
    grid: NodePoolArgs,
    /// Delay between a pod being bound and it running (a Go duration).
    #[arg(long, default_value = "100ms")]
    pod_start_delay: String,
    /// A YAML or JSON fault-injection file (`seed`, `rules`).
    #[arg(long)]
    faults: Option<PathBuf>,
    /// Events expire after this long (a Go duration).
    #[arg(long, default_value = "1h")]
    event_ttl: String,
    /// How many volumes of the simulated CSI driver each node can use (its CSINode's allocatable count).
    #[arg(long, default_value_t = 16)]
    csi_attach_limit: u32,
    /// kube-apiserver's --runtime-config: turn off served group versions or resources
    /// (`scheduling.k8s.io/v1alpha3/compositepodgroups=false`), to run against a cluster shape that lacks them.
    #[arg(long, default_value = "")]
    runtime_config: String,
    /// The cluster shape: `alpha` (every scheduling version, the default), `stock-1.37` (the beta
    /// `scheduling.k8s.io/v1beta1` only, no alpha gates) or `no-composite` (alpha without
    /// CompositePodGroups). --runtime-config switches apply on top.
    #[arg(long, default_value = "alpha")]
    profile: String,
}

fn duration(s: &str, what: &str) -> anyhow::Result<Duration> {
    kwas_api_types::duration::parse_go_duration(s)
        .with_context(|| format!("--{what}: {s:?} is not a duration such as 500ms, 30s or 1m"))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let topology = match &args.topology {
        Some(path) => {
            let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
            Topology::from_yaml(&text)?
        }
        None => args.grid.topology()?,
    };
    let faults = match &args.faults {
        Some(path) => {
            let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
            serde_saphyr::from_str::<FaultConfig>(&text).with_context(|| format!("parsing {}", path.display()))?
        }
        None => FaultConfig::default(),
    };
    let mut config = DevClusterConfig {
        host: args.host.clone(),
        port: args.port,
        kubeconfig_path: Some(args.kubeconfig.clone()),
        topology,
        kubelet: KubeletConfig {
            start_delay: duration(&args.pod_start_delay, "pod-start-delay")?,
            ..Default::default()
        },
        faults,
        csi: CsiConfig {
            attach_limit: args.csi_attach_limit,
        },
        allow_remote_clients: args.insecure_allow_remote_clients,
        runtime_config: kwas_devcluster::parse_runtime_config(&args.runtime_config)?,
        ..Default::default()
    };
    config.server.event_ttl = duration(&args.event_ttl, "event-ttl")?;
    let mut config = kwas_devcluster::Profile::parse(&args.profile)?.apply(config);
    // kwas' JobSet CRD (crds/jobset.x-k8s.io_jobsets.yaml) converts v1alpha2 <-> v1 by webhook.
    config.conversion_webhooks.register_jobset();
    let cluster = DevCluster::start(config).await?;
    let nodes = cluster.node_names().len();
    eprintln!("devcluster listening on {} with {nodes} nodes", cluster.base_url());
    eprintln!("kubeconfig written to {}", cluster.kubeconfig_path().display());
    eprintln!("  export KUBECONFIG={}", cluster.kubeconfig_path().display());
    tokio::signal::ctrl_c().await.context("waiting for Ctrl-C")?;
    eprintln!("shutting down");
    cluster.shutdown().await;
    Ok(())
}
