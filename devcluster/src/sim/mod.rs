//! The simulation: nodes from a topology ([`topology`]), a kubelet that runs bound pods ([`kubelet`]) and a
//! CSI driver with its provisioner and resizer ([`csi`]).

pub(crate) mod csi;
pub(crate) mod kubelet;
pub(crate) mod topology;
