//! The `kwas` binary as users run it: `kwas dev` as a child process, kubectl 1.37, the Python client
//! and raw HTTP against it, the packaging and deploy manifests.
//!
//! One test binary for the crate: each module was a test binary of its own, and each linked the whole
//! stack again.

mod common;
mod compile;
mod controllers;
mod demo;
mod deploy_manifests;
mod dev;
mod doctor;
mod dra;
mod hostile;
mod job_policies;
mod jobset_edits;
mod jobset_project;
mod observability;
mod packaging;
mod plugin;
mod replay;
mod scheduling;
mod strict_api;
