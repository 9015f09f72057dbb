//! `NodePorts` (filter): a pod's host ports must be free on the node. Two ports clash when protocol
//! and port are equal and their host IPs are equal or either is unspecified (`0.0.0.0` or empty), as
//! upstream's `HostPortInfo`. Dynamic: checked against the pods on the node now (including pods placed
//! earlier in the cycle). Failure is `Unschedulable`.

use k8s_openapi::api::core::v1::PodSpec;

/// One requested host port.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct HostPort {
    pub ip: String,
    pub protocol: String,
    pub port: i32,
}

impl HostPort {
    fn wildcard(&self) -> bool {
        self.ip.is_empty() || self.ip == "0.0.0.0" || self.ip == "::"
    }

    /// Whether two host ports cannot both be used on one node.
    pub(crate) fn clashes(&self, other: &HostPort) -> bool {
        self.port == other.port
            && self.protocol == other.protocol
            && (self.ip == other.ip || self.wildcard() || other.wildcard())
    }
}

/// The host ports of every container (init containers included, as upstream).
pub(crate) fn from_pod_spec(spec: &PodSpec) -> Vec<HostPort> {
    let mut out = Vec::new();
    for c in spec.containers.iter().chain(spec.init_containers.iter().flatten()) {
        for p in c.ports.iter().flatten() {
            if let Some(port) = p.host_port.filter(|p| *p > 0) {
                out.push(HostPort {
                    ip: p.host_ip.clone().unwrap_or_default(),
                    protocol: p.protocol.clone().unwrap_or_else(|| "TCP".into()),
                    port,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hp(ip: &str, protocol: &str, port: i32) -> HostPort {
        HostPort {
            ip: ip.into(),
            protocol: protocol.into(),
            port,
        }
    }

    #[test]
    fn clashes_like_upstream() {
        assert!(hp("", "TCP", 80).clashes(&hp("10.0.0.1", "TCP", 80)));
        assert!(hp("0.0.0.0", "TCP", 80).clashes(&hp("", "TCP", 80)));
        assert!(hp("10.0.0.1", "TCP", 80).clashes(&hp("10.0.0.1", "TCP", 80)));
        assert!(!hp("10.0.0.1", "TCP", 80).clashes(&hp("10.0.0.2", "TCP", 80)));
        assert!(!hp("", "TCP", 80).clashes(&hp("", "UDP", 80)));
        assert!(!hp("", "TCP", 80).clashes(&hp("", "TCP", 81)));
    }
}
