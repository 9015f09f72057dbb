//! `kwas dev`: the whole stack on the embedded cluster, without the examples; writes a kubeconfig and says
//! how to use kubectl against it.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;
use kwas_api_types::jobset::PodGroupManagement;
use kwas_devcluster::{DevClusterConfig, KubeletConfig, NodePoolArgs, Topology};

use kwas_stack::{Stack, StackConfig};

/// Flags of `kwas dev`.
#[derive(Debug, Args)]
pub struct DevArgs {
    /// Port of the API server (0 picks a free one).
    #[arg(long, default_value_t = 6443)]
    pub port: u16,
    /// Where to write the kubeconfig.
    #[arg(long, default_value = "kwas-dev.kubeconfig")]
    pub kubeconfig: PathBuf,
    /// A YAML topology file (pools of blocks x racks x nodes); overrides the grid flags.
    #[arg(long)]
    pub topology: Option<PathBuf>,
    /// The simulated nodes.
    #[command(flatten)]
    pub grid: NodePoolArgs,
    /// PodGroup management of JobSets that do not choose one.
    #[arg(long, value_enum, default_value_t = crate::Management::Centralized)]
    pub jobset_management: crate::Management,
    /// A KubeSchedulerConfiguration file for the scheduler (as `kwas scheduler --config`); its
    /// profiles' names are answered for, and `default-scheduler` too (dev mode).
    #[arg(long)]
    pub scheduler_config: Option<PathBuf>,
    /// How long the simulated kubelet runs a pod owned by a Job that has no
    /// `kwas.dev/sim-run-duration` annotation before its containers exit (with code 0 unless
    /// `kwas.dev/sim-exit-code` says otherwise), as KWOK's default stages complete Job pods; other pods
    /// run until deleted. A Go duration; `0s` runs Job pods until deleted too. The default, one second,
    /// lets `kubectl create job` complete within seconds while its pods can still be seen Running.
    #[arg(long, default_value = "1s", value_parser = go_duration)]
    pub job_pod_duration: Duration,
    /// The shape of the v1.37 cluster to emulate: `alpha` (every scheduling version, the default),
    /// `stock-1.37` (the beta `scheduling.k8s.io/v1beta1` only, no alpha gates: flat gangs) or
    /// `no-composite` (the alpha without CompositePodGroups). See docs/deploying.md.
    #[arg(long, default_value = "alpha")]
    pub profile: String,
}

/// A Go duration (`1s`, `500ms`, `1m30s`).
fn go_duration(text: &str) -> std::result::Result<Duration, String> {
    kwas_api_types::duration::parse_go_duration(text)
        .ok_or_else(|| format!("{text:?} is not a Go duration such as 1s, 500ms or 1m30s"))
}

impl DevArgs {
    /// The topology the flags or file describe.
    pub fn topology(&self) -> Result<Topology> {
        match &self.topology {
            Some(path) => {
                let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
                Ok(Topology::from_yaml(&text)?)
            }
            None => Ok(self.grid.topology()?),
        }
    }
}

/// Run until interrupted.
pub async fn run(args: DevArgs) -> Result<()> {
    let mut config = StackConfig {
        cluster: DevClusterConfig {
            port: args.port,
            kubeconfig_path: Some(args.kubeconfig.clone()),
            topology: args.topology()?,
            kubelet: KubeletConfig {
                start_delay: Duration::from_millis(200),
                job_pod_duration: Some(args.job_pod_duration).filter(|d| !d.is_zero()),
                ..KubeletConfig::default()
            },
            ..DevClusterConfig::default()
        },
        ..StackConfig::default()
    };
    config.cluster = kwas_devcluster::Profile::parse(&args.profile)?.apply(config.cluster);
    config.jobset.default_management = PodGroupManagement::from(args.jobset_management);
    if let Some(path) = &args.scheduler_config {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let profile = kwas_scheduler::runtime::SchedulerProfile::from_yaml(&text)
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        for w in &profile.warnings {
            tracing::warn!(file = %path.display(), "{w}");
        }
        profile.apply(&mut config.scheduler);
        let dev_name = kwas_scheduler::runtime::DEFAULT_SCHEDULER_NAME.to_string();
        if !config.scheduler.scheduler_names.contains(&dev_name) {
            config.scheduler.scheduler_names.push(dev_name);
        }
    }
    // Leader election as a deployed scheduler runs it (one replica leads at once): its Lease in
    // kube-system names the scheduler names served, which `kwas snapshot` records for the replay.
    if config.scheduler.leader_election.is_none() {
        config.scheduler.leader_election = Some(kwas_scheduler::runtime::scheduler_lease(
            "kube-system",
            kwas_shell::lease::unique_identity("kwas-dev"),
        ));
    }
    let stack = Stack::start(config).await?;
    stack.ready().await?;
    let kubeconfig =
        std::fs::canonicalize(stack.cluster().kubeconfig_path()).unwrap_or_else(|_| args.kubeconfig.clone());
    eprintln!(
        "kwas dev: devcluster at {} with {} simulated nodes; the Job and JobSet controllers and the scheduler are running.",
        stack.cluster().base_url(),
        stack.cluster().node_names().len()
    );
    eprintln!("Use kubectl against it:\n");
    eprintln!("  export KUBECONFIG={}", kubeconfig.display());
    eprintln!("  kubectl get nodes -L kwas.dev/block,kwas.dev/rack");
    eprintln!("  kubectl apply -f examples/jobs/gang-job.yaml");
    eprintln!("  kubectl get jobs,workloads,podgroups,pods -o wide\n");
    eprintln!(
        "Jobs with no spec.managedBy are managed too, and pods of `default-scheduler` are scheduled (dev mode). Ctrl-C stops."
    );
    tokio::signal::ctrl_c().await.context("waiting for Ctrl-C")?;
    eprintln!("shutting down");
    stack.shutdown().await;
    Ok(())
}
