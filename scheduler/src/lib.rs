//! # kwas-scheduler
//!
//! The kwas scheduler: multi-level gang scheduling, multi-level topology-aware placement and
//! workload-aware preemption (KEP-4671, KEP-6012, KEP-5710).
//!
//! [`core`] is the algorithm library: pure and synchronous, over an in-memory snapshot built from
//! k8s-openapi objects. See its docs and the crate README for the design choices.
//!
//! `runtime` (cargo feature `runtime`, on by default) runs the core against a cluster with kube-rs:
//! informers, a PreEnqueue-gated queue with backoff, binding, group and pod conditions, events,
//! preemption actuation, leader election and `/healthz`, `/readyz`, `/metrics`.
//!
//! `replay` (with `runtime`) takes a snapshot of a cluster's scheduling inputs and replays the
//! runtime's decisions on it offline: `kwas snapshot`, `kwas replay`.

#![warn(missing_docs)]

pub mod core;
#[cfg(feature = "runtime")]
pub mod replay;
#[cfg(feature = "runtime")]
pub mod runtime;
