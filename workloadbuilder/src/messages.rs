//! The messages of the errors this crate reports, for tools and tests that match on them (the rendered
//! errors are [`FieldError`](crate::FieldError)s; match on their type and path first).

use crate::types::{DisruptionModeOption, PolicyOption};

/// The error for a Workload whose owner is not its controller.
pub const OWNER_NOT_CONTROLLER: &str = "a Workload must be owned by its controller for garbage collection";

/// The Forbidden detail for a composite's gang policy in a flat Workload.
pub const FLAT_COMPOSITE_GANG: &str = "a gang of groups needs a CompositePodGroup: a flat Workload (podGroupTemplates only) \
     cannot express it; use the Basic policy at this level";

/// The Forbidden detail for a composite's topology constraint in a flat Workload.
pub const FLAT_COMPOSITE_TOPOLOGY: &str = "placing groups together needs a CompositePodGroup: a flat Workload \
     (podGroupTemplates only) cannot express a topology constraint at this level";

/// The Forbidden detail for a composite's disruption mode `all` in a flat Workload.
pub const FLAT_COMPOSITE_ALL: &str = "disrupting groups together needs a CompositePodGroup: a flat Workload \
     (podGroupTemplates only) cannot express the disruptionMode `all` at this level";

/// The error for a gang whose count no default, user value or callback set.
pub const GANG_MIN_COUNT_UNSET: &str = "gang scheduling requires minCount to be set after resolution";

/// The error for `all` disruption combined with the Basic policy.
pub const ALL_WITH_BASIC: &str = "the disruptionMode `all` is not supported with the Basic scheduling policy";

/// The error for a child that is not `all` under an `all` composite.
pub const ALL_PARENT_CHILD: &str =
    "a group whose parent has the disruptionMode `all` must have the disruptionMode `all` too";

/// The error for resource claims on a composite item.
pub const CLAIMS_ON_COMPOSITE: &str = "resource claims are only supported on PodGroup templates";

/// The error for differing priority classes in one tree.
pub const MIXED_PRIORITY: &str =
    "all priority and priorityClassName values must be identical, detected multiple values";

/// The Forbidden detail for a policy a controller does not allow.
pub fn policy_not_supported(option: PolicyOption) -> String {
    format!(
        "{} scheduling policy is not supported by this controller",
        option.as_str()
    )
}

/// The Forbidden detail for a disruption mode a controller does not allow.
pub fn disruption_mode_not_supported(option: DisruptionModeOption) -> String {
    format!(
        "the disruptionMode `{}` is not supported by this controller",
        option.as_str()
    )
}
