//! Connecting to a cluster: an explicit kubeconfig, else `KUBECONFIG` / `~/.kube/config`, else the
//! in-cluster service account (kube's inference). Requests are retried as client-go retries them
//! ([`kwas_api::client`]): a create whose response was lost is never sent twice.

use std::path::Path;

use anyhow::{Context, Result};
use kube::Client;
use kube::config::{KubeConfigOptions, Kubeconfig};

/// A client for the cluster of `kubeconfig` (or the inferred one).
pub async fn client(kubeconfig: Option<&Path>) -> Result<Client> {
    match kubeconfig {
        Some(path) => {
            let kc = Kubeconfig::read_from(path).with_context(|| format!("reading {}", path.display()))?;
            let config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
                .await
                .with_context(|| format!("loading {}", path.display()))?;
            Ok(kwas_api::client::client(config)?)
        }
        None => {
            let config = kube::Config::infer()
                .await
                .context("no kubeconfig and no in-cluster configuration")?;
            Ok(kwas_api::client::client(config)?)
        }
    }
}

/// This instance's identity for leader election: `POD_NAME`, else the host name, else a random one.
pub fn identity() -> String {
    std::env::var("POD_NAME")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|h| h.trim().to_string())
        })
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| format!("kwas-{}", std::process::id()))
}

/// The namespace for leader election Leases: `POD_NAMESPACE`, else `kwas-system`.
pub fn lease_namespace() -> String {
    std::env::var("POD_NAMESPACE").unwrap_or_else(|_| "kwas-system".to_string())
}
