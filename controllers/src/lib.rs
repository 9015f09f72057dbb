//! # kwas-controllers
//!
//! Reference controllers built on `workloadbuilder` and kube-runtime:
//!
//! - [`job`]: a batch/v1 Job controller integrated with workload-aware scheduling (single level,
//!   `JobSpec.scheduling`): Workload, PodGroup and pods in upstream's order, exact pod accounting with the
//!   tracking finalizer, upstream's conditions and events, `podFailurePolicy`, `backoffLimitPerIndex`,
//!   `successPolicy` and `podReplacementPolicy` (gang Jobs should ignore `DisruptionTarget` failures: see
//!   [`job`]);
//! - [`jobset`]: a JobSet-style multi-level controller (both KEP-6089 API options, centralized and delegated
//!   PodGroup management, the downward-mapping annotations);
//! - [`claims`]: the ResourceClaim controller upstream runs in kube-controller-manager (pod and PodGroup
//!   claims from templates, reservations released, claims deallocated), for clusters that have none;
//! - [`sync`]: the scheduling-object sync shared by the controllers, [`index`] its discovery cache,
//!   [`triggers`] which watch events re-run a reconcile (a pod's binding or a PodGroup's status does not),
//!   [`informers`] one watch and cache per kind shared by the controllers of a process;
//! - [`decode`]: watching a kind object by object, so one object that does not decode is reported on itself
//!   and never stops a controller;
//! - [`retry`]: per-object backoff after failures and panic containment (one bad object never stops a
//!   controller);
//! - [`metrics`]: Prometheus metrics; [`process`]: the controllers as a process on the `kwas-shell` shell (leader election, admin server,
//!   supervision).
//!
//! Decision logic is pure ([`job::mode`], [`job::plan`], [`job::pods`], [`jobset::decide`],
//! [`jobset::policy`]) and unit-tested; the reconcile loops only read what the decision needs and apply it.
#![warn(missing_docs)]

pub mod claims;
pub mod decode;
pub mod error;
pub mod index;
pub mod informers;
pub mod job;
pub mod jobset;
pub mod metrics;
pub mod process;
pub mod retry;
pub mod sync;
pub mod triggers;
pub mod webhook;

pub use error::{Error, Result};
pub use metrics::Metrics;
