//! The scheduler's integration tests: the core on built snapshots (scenarios, preemption, DRA, plugins,
//! limits, properties), replay, the runtime on devcluster, and the crate's shape (layers, public surface).
//!
//! One test binary for the crate: each module was a test binary of its own, and each linked the whole
//! stack again.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod dra;
mod limits;
mod perf_smoke;
mod plugins;
mod preemption;
mod properties;
mod quality_large;
mod replay;
mod runtime_devcluster;
mod scenarios;
mod shape;
