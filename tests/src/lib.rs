//! # kwas-e2e
//!
//! End-to-end suites that run devcluster, the controllers and the scheduler in one process
//! ([`kwas::stack::Stack`]), the way a user runs them: Jobs and JobSets are created through the API with
//! kube-rs, and every assertion reads the API.
#![warn(missing_docs)]

pub mod error;
pub mod harness;
pub mod inspect;
pub mod ledger;
pub mod monitor;
pub mod objects;
pub mod perf;

pub use error::{Error, Result};
pub use harness::{E2e, NS, NotYet, PATIENCE, check, eventually, eventually_within, not_yet, test_config};
pub use monitor::GangMonitor;
pub use objects::{Intent, JobBuilder, JobSetBuilder, gang_pod_group, priority_class};
