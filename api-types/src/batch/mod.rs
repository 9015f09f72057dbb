//! `batch/v1` Job vocabulary and upstream's API validation of the Job fields kwas' Job controller reads for
//! its failure and success policies ([`validation`]). The types are k8s-openapi's
//! (`k8s_openapi::api::batch::v1`).

pub mod validation;

pub use validation::{validate_indexes_format, validate_policies};

/// `podFailurePolicy` action `FailJob`.
pub const ACTION_FAIL_JOB: &str = "FailJob";
/// `podFailurePolicy` action `FailIndex`.
pub const ACTION_FAIL_INDEX: &str = "FailIndex";
/// `podFailurePolicy` action `Ignore`.
pub const ACTION_IGNORE: &str = "Ignore";
/// `podFailurePolicy` action `Count`.
pub const ACTION_COUNT: &str = "Count";
/// `podReplacementPolicy: Failed`.
pub const REPLACE_FAILED: &str = "Failed";
/// `podReplacementPolicy: TerminatingOrFailed`.
pub const REPLACE_TERMINATING_OR_FAILED: &str = "TerminatingOrFailed";
