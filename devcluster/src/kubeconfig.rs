//! The kubeconfig devcluster writes: one cluster, one context, one user with no credentials (the server
//! listens on loopback only and authorizes every request).

use std::path::Path;

use crate::error::{Error, Result};

/// The cluster, context and user name in the kubeconfig.
pub(crate) const CONTEXT_NAME: &str = "kwas-dev";

/// The first line of every kubeconfig devcluster writes; a file without it is never overwritten.
pub(crate) const MARKER: &str = "# Written by kwas devcluster, rewritten at every start; do not edit.";

/// The kubeconfig text for a server URL.
pub(crate) fn render(server: &str, namespace: &str) -> String {
    format!(
        "{MARKER}
apiVersion: v1
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

/// Writes the kubeconfig file (creating parent directories). An existing file that devcluster did not
/// write (no [`MARKER`] line) is left alone and is an error: it may be the user's own kubeconfig.
pub(crate) fn write(path: &Path, server: &str) -> Result<()> {
    let io = |source| Error::Io {
        path: path.display().to_string(),
        source,
    };
    match std::fs::read_to_string(path) {
        Ok(existing) if existing.lines().next() != Some(MARKER) => {
            return Err(Error::Config(format!(
                "refusing to overwrite {}: it was not written by devcluster (choose another kubeconfig path, or remove the file)",
                path.display()
            )));
        }
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            // Unreadable (a directory, no permission): whatever it is, it is not ours to replace.
            return Err(io(e));
        }
        _ => {}
    }
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

    #[test]
    fn only_its_own_kubeconfig_is_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let own = dir.path().join("kwas.kubeconfig");
        write(&own, "http://127.0.0.1:1").unwrap();
        write(&own, "http://127.0.0.1:2").unwrap();
        assert!(std::fs::read_to_string(&own).unwrap().contains("127.0.0.1:2"));

        let users = dir.path().join("config");
        std::fs::write(&users, "apiVersion: v1\nkind: Config\nclusters: []\n").unwrap();
        let err = write(&users, "http://127.0.0.1:3").unwrap_err();
        assert!(err.to_string().contains("refusing to overwrite"), "{err}");
        assert!(!std::fs::read_to_string(&users).unwrap().contains("127.0.0.1:3"));
    }
}
