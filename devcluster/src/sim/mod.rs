//! The simulation: nodes from a topology ([`topology`]), a kubelet that runs bound pods ([`kubelet`]; how
//! runs end: [`outcome`], [`run_end`]; how pods stop: [`stop`]; the status both write: [`pod_status`]), a CSI driver with its provisioner and
//! resizer ([`csi`]) and a DRA driver publishing GPUs ([`dra`]).

pub(crate) mod admit;
pub(crate) mod csi;
pub(crate) mod dra;
pub(crate) mod interconnect;
pub(crate) mod kubelet;
pub(crate) mod outcome;
pub(crate) mod pod_status;
pub(crate) mod run_end;
pub(crate) mod stop;
pub(crate) mod topology;
