//! The controllers on the embedded API server (Job, Job policies, JobSet) and property tests of their decisions.
//!
//! One test binary for the crate: each module was a test binary of its own, and each linked the whole
//! stack again.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod job_devcluster;
mod job_policies_devcluster;
mod jobset_devcluster;
mod properties;
