//! Connecting to a cluster as kubectl does: `--kubeconfig`, else `KUBECONFIG` / `~/.kube/config`, else the
//! in-cluster service account; `--context` picks a context. The components that write (`kwas controllers`,
//! `kwas scheduler`) get clients that never resend a write the server may have acted on
//! ([`kwas_api_types::client`]); the read-only commands build theirs from [`config`] with kube's defaults.

use std::path::Path;

use anyhow::{Result, anyhow};
use kube::Client;
use kube::config::{KubeConfigOptions, Kubeconfig};

/// The configuration kubectl would use for `kubeconfig` (or the inferred one) and `context`.
pub async fn config(kubeconfig: Option<&Path>, context: Option<&str>) -> Result<kube::Config> {
    let options = KubeConfigOptions {
        context: context.map(str::to_string),
        ..KubeConfigOptions::default()
    };
    match (kubeconfig, context) {
        (Some(path), _) => {
            let kc = Kubeconfig::read_from(path).map_err(|e| anyhow!("reading {}: {e}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kc, &options)
                .await
                .map_err(|e| anyhow!("loading {}: {e}", path.display()))
        }
        (None, Some(c)) => kube::Config::from_kubeconfig(&options)
            .await
            .map_err(|e| anyhow!("loading the kubeconfig for context {c}: {e}")),
        (None, None) => kube::Config::infer().await.map_err(|e| {
            anyhow!("no kubeconfig ($KUBECONFIG, ~/.kube/config, --kubeconfig) and no in-cluster configuration: {e}")
        }),
    }
}

/// A client for the cluster of `kubeconfig` (or the inferred one) that never resends a write.
pub async fn client(kubeconfig: Option<&Path>) -> Result<Client> {
    Ok(kwas_api_types::client::client(config(kubeconfig, None).await?)?)
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
