//! `kwas scheduler`: the scheduler against a cluster.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use kwas_api_types::names::SCHEDULER_NAME;
use kwas_scheduler::core::SchedulerConfig;
use kwas_scheduler::runtime::{LeaseConfig, RuntimeConfig, SchedulerProfile, SchedulerRuntime};
use kwas_shell::lease::unique_identity;
use kwas_shell::shutdown::os_signal;

use crate::kube_client::{client, identity, lease_namespace};

/// The placement algorithm.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Algorithm {
    /// KEP-6012's alpha algorithm plus the Beta improvements (admissibility pre-check, minimums first,
    /// bounded backtracking, adaptive placement cap).
    Default,
    /// KEP-6012's alpha greedy algorithm only.
    Alpha,
}

/// Flags of `kwas scheduler`.
#[derive(Debug, Args)]
pub struct SchedulerArgs {
    /// Kubeconfig to use (default: KUBECONFIG, ~/.kube/config, or the in-cluster service account).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// A `spec.schedulerName` to answer for (repeatable; the first is the one events carry).
    #[arg(long = "scheduler-name", default_values_t = [SCHEDULER_NAME.to_string()])]
    pub scheduler_names: Vec<String>,
    /// Elect a leader on a Lease (in POD_NAMESPACE, default kwas-system) before scheduling.
    #[arg(long, num_args = 0..=1, default_value_t = false, default_missing_value = "true")]
    pub leader_elect: bool,
    /// The leader election Lease.
    #[arg(long, default_value = SCHEDULER_NAME)]
    pub lease_name: String,
    /// Serve /healthz, /readyz and /metrics here (loopback unless told otherwise; the deploy manifests
    /// listen on all addresses so the kubelet's probes and Prometheus reach it).
    #[arg(long, default_value = "127.0.0.1:10259")]
    pub admin_addr: SocketAddr,
    /// Bindings in flight at once.
    #[arg(long, default_value_t = 64)]
    pub bind_concurrency: usize,
    /// The placement algorithm.
    #[arg(long, value_enum, default_value_t = Algorithm::Default)]
    pub algorithm: Algorithm,
    /// A KubeSchedulerConfiguration file (kubescheduler.config.k8s.io/v1), as kube-scheduler's
    /// `--config`: its profiles' scheduler names, score plugins, weights and plugin arguments replace
    /// kwas' bin-packing profile (a profile that sets nothing is upstream's default profile);
    /// `podInitialBackoffSeconds`, `podMaxBackoffSeconds` and `leaderElection` apply too.
    #[arg(long)]
    pub config: Option<PathBuf>,
}

impl SchedulerArgs {
    /// The runtime configuration these flags and the `--config` file describe.
    pub fn runtime_config(&self) -> Result<RuntimeConfig> {
        let mut config = self.config();
        if let Some(path) = &self.config {
            let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
            let profile = SchedulerProfile::from_yaml(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            for w in &profile.warnings {
                tracing::warn!(file = %path.display(), "{w}");
            }
            if profile.leader_election.as_ref().is_some_and(|l| l.leader_elect) && config.leader_election.is_none() {
                config.leader_election = Some(LeaseConfig::new(
                    lease_namespace(),
                    self.lease_name.clone(),
                    unique_identity(&identity()),
                ));
            }
            profile.apply(&mut config);
        }
        Ok(config)
    }

    /// The runtime configuration the flags alone describe.
    pub fn config(&self) -> RuntimeConfig {
        RuntimeConfig {
            scheduler_names: self.scheduler_names.clone(),
            leader_election: self
                .leader_elect
                .then(|| LeaseConfig::new(lease_namespace(), self.lease_name.clone(), unique_identity(&identity()))),
            admin_addr: Some(self.admin_addr),
            bind_concurrency: self.bind_concurrency,
            core: match self.algorithm {
                Algorithm::Default => SchedulerConfig::default(),
                Algorithm::Alpha => SchedulerConfig::alpha(),
            },
            ..RuntimeConfig::default()
        }
    }
}

/// Run until interrupted.
pub async fn run(args: SchedulerArgs) -> Result<()> {
    // The file first: a bad one fails before anything connects.
    let config = args.runtime_config()?;
    let client = client(args.kubeconfig.as_deref()).await?;
    let runtime = SchedulerRuntime::new(client, config)?;
    runtime.run(os_signal()).await?;
    Ok(())
}
