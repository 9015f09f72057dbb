//! # kwas-scheduler
//!
//! The kwas scheduler: multi-level gang scheduling, multi-level topology-aware placement and
//! workload-aware preemption (KEP-4671, KEP-6012, KEP-5710). Filled in by the scheduler issues; the crate
//! exists now so the workspace has its final shape.
