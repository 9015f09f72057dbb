//! The scheduler runtime: kube-rs informers, queue, binding, status, events, preemption actuation,
//! leader election and metrics around the pure [`crate::core`].
pub mod actions;
pub mod conditions;
pub mod config;
pub mod engine;
pub mod error;
pub mod informers;
pub mod metrics;
pub mod queue;
