//! The simulation: nodes from a topology ([`topology`]), a kubelet that runs bound pods
//! ([`kubelet`]), and fault injection on the API ([`faults`]).

pub(crate) mod faults;
pub(crate) mod kubelet;
pub(crate) mod topology;
