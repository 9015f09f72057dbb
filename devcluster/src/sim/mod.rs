//! The simulation: nodes from a topology ([`topology`]) and a kubelet that runs bound pods ([`kubelet`]).

pub(crate) mod kubelet;
pub(crate) mod topology;
