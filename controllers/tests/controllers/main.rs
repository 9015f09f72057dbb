//! The controllers on the embedded API server (Job, Job policies, JobSet), property tests of their decisions
//! and a model of the Job reconcile on lagging caches.
//!
//! One test binary for the crate: each module was a test binary of its own, and each linked the whole
//! stack again.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cache_lag;
mod common;
mod job_devcluster;
mod job_policies_devcluster;
mod jobset_api_devcluster;
mod jobset_devcluster;
mod properties;
