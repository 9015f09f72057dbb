//! `kwas controllers`: the Job and JobSet controllers against a cluster.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use clap::Args;
use kwas_api_types::jobset::PodGroupManagement;
use kwas_api_types::names::JOB_CONTROLLER_NAME;
use kwas_controllers::job::JobControllerConfig;
use kwas_controllers::job::plan::JobConfig;
use kwas_controllers::jobset::JobSetControllerConfig;
use kwas_controllers::process::{ControllersConfig, RunError};
use kwas_shell::LeaseConfig;
use kwas_shell::lease::unique_identity;
use kwas_shell::shutdown::os_signal;

use crate::Management;
use crate::kube_client::{client, identity, lease_namespace};

/// Flags of `kwas controllers`.
#[derive(Debug, Args)]
pub struct ControllersArgs {
    /// Kubeconfig to use (default: KUBECONFIG, ~/.kube/config, or the in-cluster service account).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// The `spec.managedBy` of the Jobs the Job controller manages.
    #[arg(long, default_value = JOB_CONTROLLER_NAME)]
    pub job_managed_by: String,
    /// Also manage Jobs with no `spec.managedBy` (only where no other Job controller runs).
    #[arg(long, num_args = 0..=1, default_value_t = false, default_missing_value = "true")]
    pub manage_unset_jobs: bool,
    /// Delay before re-creating pods after the first failure (doubles per failure, capped at 6m).
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub job_backoff: Duration,
    /// Jobs reconciled at once (kube-controller-manager's flag of the same name; see the controllers'
    /// README for the default).
    #[arg(long, default_value_t = kwas_controllers::job::JobControllerConfig::default().concurrent_syncs, value_parser = clap::value_parser!(u16).range(1..))]
    pub concurrent_job_syncs: u16,
    /// JobSets reconciled at once.
    #[arg(long, default_value_t = kwas_controllers::jobset::JobSetControllerConfig::default().concurrent_syncs, value_parser = clap::value_parser!(u16).range(1..))]
    pub concurrent_jobset_syncs: u16,
    /// PodGroup management of JobSets that do not choose one.
    #[arg(long, value_enum, default_value_t = Management::Centralized)]
    pub jobset_management: Management,
    /// Which JobSets to reconcile: `standalone` (kwas installed the JobSet CRD) or `alongside` (the JobSet
    /// project's controller runs too; only JobSets with `spec.managedBy: kwas.dev/jobset-controller`).
    #[arg(long, value_enum, default_value_t = crate::JobSetInstall::Standalone)]
    pub jobset_install: crate::JobSetInstall,
    /// `spec.managedBy` of the JobSets' child Jobs (empty: the cluster's default Job controller).
    #[arg(long, default_value = JOB_CONTROLLER_NAME)]
    pub child_jobs_managed_by: String,
    /// Do not run the Job controller.
    #[arg(long)]
    pub no_job_controller: bool,
    /// Do not run the JobSet controller.
    #[arg(long)]
    pub no_jobset_controller: bool,
    /// Also run a ResourceClaim controller (claims from pods' and PodGroups' templates, reservations
    /// released, claims deallocated): only for clusters whose kube-controller-manager does not run
    /// one, such as devcluster.
    #[arg(long, num_args = 0..=1, default_value_t = false, default_missing_value = "true")]
    pub resource_claim_controller: bool,
    /// Elect a leader on a Lease before running.
    #[arg(long, num_args = 0..=1, default_value_t = false, default_missing_value = "true")]
    pub leader_elect: bool,
    /// The leader election Lease.
    #[arg(long, default_value = "kwas-controllers")]
    pub lease_name: String,
    /// Serve /healthz, /readyz and /metrics here (loopback unless told otherwise; the deploy manifests
    /// listen on all addresses so the kubelet's probes and Prometheus reach it).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub admin_addr: SocketAddr,
    /// Serve the JobSet CRD's conversion webhook (jobset.x-k8s.io v1alpha2 <-> v1, HTTPS, path /convert)
    /// here; off unless set. The standalone deploy serves it on 0.0.0.0:9443 behind the Service the CRD
    /// names (kwas-system/kwas-controllers-webhook).
    #[arg(long)]
    pub webhook_addr: Option<SocketAddr>,
    /// The directory with the webhook's serving certificate (tls.crt, tls.key; a mounted
    /// kubernetes.io/tls Secret), read again when it changes.
    #[arg(long, default_value = "/tmp/k8s-webhook-server/serving-certs")]
    pub webhook_cert_dir: std::path::PathBuf,
}

/// Parse a Go-style duration (`500ms`, `10s`, `1m`).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    kwas_api_types::duration::parse_go_duration(s)
        .ok_or_else(|| format!("{s:?} is not a duration such as 500ms, 10s or 1m"))
}

impl ControllersArgs {
    /// The runtime configuration these flags describe.
    pub fn config(&self, admin: Option<SocketAddr>) -> ControllersConfig {
        ControllersConfig {
            job: (!self.no_job_controller).then(|| JobControllerConfig {
                managed_by: self.job_managed_by.clone(),
                manage_unset: self.manage_unset_jobs,
                job: JobConfig {
                    backoff_base: self.job_backoff,
                    ..JobConfig::default()
                },
                concurrent_syncs: self.concurrent_job_syncs,
                ..JobControllerConfig::default()
            }),
            jobset: (!self.no_jobset_controller).then(|| JobSetControllerConfig {
                install: self.jobset_install.into(),
                default_management: PodGroupManagement::from(self.jobset_management),
                job_managed_by: (!self.child_jobs_managed_by.is_empty()).then(|| self.child_jobs_managed_by.clone()),
                concurrent_syncs: self.concurrent_jobset_syncs,
            }),
            leader_election: self
                .leader_elect
                .then(|| LeaseConfig::new(lease_namespace(), self.lease_name.clone(), unique_identity(&identity()))),
            admin_addr: admin,
            webhook: self.webhook_addr.map(|addr| kwas_controllers::webhook::WebhookConfig {
                addr,
                cert_dir: self.webhook_cert_dir.clone(),
            }),
            resource_claims: self.resource_claim_controller,
        }
    }
}

/// Run until interrupted.
pub async fn run(args: ControllersArgs) -> Result<()> {
    let client = client(args.kubeconfig.as_deref()).await?;
    let config = args.config(Some(args.admin_addr));
    match kwas_controllers::process::run(client, config, os_signal()).await {
        Ok(()) => Ok(()),
        Err(RunError::LeadershipLost) => anyhow::bail!("leadership lost; exiting so a fresh instance takes over"),
        Err(e) => Err(e.into()),
    }
}
