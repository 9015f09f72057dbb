//! # kwas-controllers
//!
//! Reference controllers built on `workloadbuilder`: a batch/v1 Job controller (single level,
//! `JobSpec.scheduling`) and a JobSet-style controller (multi-level). Filled in by the controller issues.
