//! The kubeconfig devcluster writes: one cluster, one context, one user with no credentials (the server
//! listens on loopback only and authorizes every request).

use std::path::Path;

use crate::error::{Error, Result};

/// The cluster, context and user name in the kubeconfig.
pub const CONTEXT_NAME: &str = "kwas-dev";

/// The kubeconfig text for a server URL.
pub fn render(server: &str, namespace: &str) -> String {
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: {CONTEXT_NAME}
  cluster:
    server: {server}
contexts:
- name: {CONTEXT_NAME}
  context:
    cluster: {CONTEXT_NAME}
    user: {CONTEXT_NAME}
    namespace: {namespace}
current-context: {CONTEXT_NAME}
users:
- name: {CONTEXT_NAME}
  user: {{}}
preferences: {{}}
"
    )
}

/// Writes the kubeconfig file (creating parent directories).
pub fn write(path: &Path, server: &str) -> Result<()> {
    let io = |source| Error::Io {
        path: path.display().to_string(),
        source,
    };
    if let Some(parent) = path.parent()
        && !parent.as_os_str().is_empty()
    {
        std::fs::create_dir_all(parent).map_err(io)?;
    }
    std::fs::write(path, render(server, "default")).map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kube_rs_reads_the_kubeconfig() {
        let text = render("http://127.0.0.1:1234", "default");
        let kc = kube::config::Kubeconfig::from_yaml(&text).unwrap();
        assert_eq!(kc.current_context.as_deref(), Some(CONTEXT_NAME));
        let cluster = kc.clusters[0].cluster.as_ref().unwrap();
        assert_eq!(cluster.server.as_deref(), Some("http://127.0.0.1:1234"));
    }
}
