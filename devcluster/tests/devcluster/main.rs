//! devcluster against real clients and hostile input: kube-rs, kubectl 1.37, the Python client 37 and
//! raw HTTP; API semantics, storage, DRA, request and decoding limits, and the crate's layering.
//!
//! One test binary for the crate: each module was a test binary of its own, and each linked the whole
//! stack again.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod crd_conversion;
mod dra;
mod endpointslices;
mod exhaustion;
mod fuzz;
mod hardening;
mod json_patch_copy;
mod kube_rs;
mod kubectl;
mod kubectl_commands;
mod kubelet_admission;
mod layering;
mod node_failure;
mod python;
mod semantics;
mod sim_outcomes;
mod storage;
mod write_contention;
