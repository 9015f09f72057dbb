//! Status codes and KEP-6012's PlacementFeasible rules.

use std::fmt;

/// A scheduling status code, named as in the kube-scheduler framework.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Code {
    /// The constraints are satisfied.
    Success,
    /// Not satisfied yet, but the remaining members may still satisfy them with free capacity.
    Wait,
    /// Cannot be satisfied with free capacity; preemption may help.
    Unschedulable,
    /// Cannot be satisfied even with preemption.
    UnschedulableAndUnresolvable,
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Code::Success => "Success",
            Code::Wait => "Wait",
            Code::Unschedulable => "Unschedulable",
            Code::UnschedulableAndUnresolvable => "UnschedulableAndUnresolvable",
        })
    }
}

/// The counters PlacementFeasible is evaluated on (KEP-6012, "GangScheduling Plugin Changes").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    /// `M`: the required minimum (`minCount`, `minGroupCount`, or 1 for Basic).
    pub min: u32,
    /// `S`: members that succeeded (for a PodGroup: pods placed in this cycle or already running).
    pub success: u32,
    /// `R`: members not tried yet that may still succeed.
    pub remaining: u32,
    /// `U`: members that failed with Unschedulable.
    pub unschedulable: u32,
    /// `UU`: members that failed with UnschedulableAndUnresolvable.
    pub unresolvable: u32,
}

/// KEP-6012's status rules:
///
/// - Success: `S >= M`;
/// - Wait: `S < M` and `S + R >= M`;
/// - Unschedulable: `S + R < M` and `S + R + U >= M`;
/// - UnschedulableAndUnresolvable: `S + R + U < M`.
pub fn placement_feasible(c: Counts) -> Code {
    let (m, s, r, u) = (
        u64::from(c.min),
        u64::from(c.success),
        u64::from(c.remaining),
        u64::from(c.unschedulable),
    );
    if s >= m {
        Code::Success
    } else if s + r >= m {
        Code::Wait
    } else if s + r + u >= m {
        Code::Unschedulable
    } else {
        Code::UnschedulableAndUnresolvable
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(min: u32, success: u32, remaining: u32, unschedulable: u32, unresolvable: u32) -> Counts {
        Counts {
            min,
            success,
            remaining,
            unschedulable,
            unresolvable,
        }
    }

    #[test]
    fn rules() {
        assert_eq!(placement_feasible(c(3, 3, 0, 0, 0)), Code::Success);
        assert_eq!(placement_feasible(c(3, 4, 0, 2, 1)), Code::Success);
        assert_eq!(placement_feasible(c(3, 1, 2, 0, 0)), Code::Wait);
        assert_eq!(placement_feasible(c(3, 1, 1, 1, 0)), Code::Unschedulable);
        assert_eq!(placement_feasible(c(3, 1, 0, 1, 1)), Code::UnschedulableAndUnresolvable);
        // KEP-6012's inadmissible example: CPG-1 with one child of the two it needs.
        assert_eq!(placement_feasible(c(2, 1, 0, 0, 0)), Code::UnschedulableAndUnresolvable);
        // ... and its root afterwards: UU=1 but two siblings remain.
        assert_eq!(placement_feasible(c(2, 0, 2, 0, 1)), Code::Wait);
    }

    /// The example the function's docs gave while it was public.
    #[test]
    fn remaining_members_keep_a_group_waiting() {
        let c = Counts {
            min: 2,
            success: 0,
            remaining: 2,
            unschedulable: 0,
            unresolvable: 1,
        };
        assert_eq!(placement_feasible(c), Code::Wait);
    }
}
