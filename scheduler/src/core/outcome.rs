//! What a cycle returns: the decision, the pod -> node assignments, per-group and per-pod outcomes and
//! the cycle's counters (the public result of [`Scheduler::schedule`](super::scheduler::Scheduler::schedule)).

use super::framework::ClaimReservation;
use super::model::{GroupKey, PodKey, UnitKey};
use super::status::Code;

/// Counters of one cycle, for tracing and benchmarks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CycleStats {
    /// Pod placement attempts.
    pub pods_tried: u64,
    /// Node evaluations (fit and score) made while placing pods.
    pub nodes_evaluated: u64,
    /// Topology placements simulated.
    pub placements_evaluated: u64,
    /// Topology placements found feasible.
    pub placements_feasible: u64,
    /// Backtracking steps taken.
    pub backtracks: u64,
    /// Subtrees skipped by the admissibility pre-check.
    pub subtrees_skipped: u64,
}

/// A pod -> node decision.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Assignment {
    /// The pod.
    pub pod: PodKey,
    /// The node it goes to.
    pub node: String,
}

/// A topology domain a group was placed in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopologyDomain {
    /// The node label key of the group's constraint.
    pub key: String,
    /// The chosen value.
    pub value: String,
}

/// Per-group result of a cycle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupOutcome {
    /// The group.
    pub group: GroupKey,
    /// Its PlacementFeasible result in the final attempt (`None`: not attempted, e.g. an extra child
    /// of a satisfied gang in a non-greedy pass, or a sibling after the parent aborted).
    pub code: Option<Code>,
    /// True when the whole hierarchy is scheduled and this group's requirement is met: the runtime sets
    /// `PodGroupInitiallyScheduled` / `CompositePodGroupInitiallyScheduled` to True.
    pub satisfied: bool,
    /// Pods of its subtree placed in this cycle.
    pub placed: u32,
    /// Pods of its subtree already placed (running or assumed) before this cycle.
    pub scheduled_before: u32,
    /// Chosen topology domain.
    pub domain: Option<TopologyDomain>,
    /// Human-readable status.
    pub message: String,
    /// Which reason the failure is reported with (see [`Rejection`]).
    pub rejection: Rejection,
}

/// How an unschedulable pod or group is reported; the worst over a group's subtree wins.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rejection {
    /// Reason `Unschedulable`: no placement exists now (preemption or more capacity may help).
    #[default]
    Unschedulable,
    /// Reason `PlacementNotGuaranteed`: the failure involves members with inter-pod affinity,
    /// anti-affinity or topology spread, for which the gang cycle does not guarantee finding a placement
    /// even when one exists (KEP-4671, "placement not guaranteed"), so autoscalers can tell it apart.
    NotGuaranteed,
    /// Reason `Unsupported`: a member uses something this scheduler cannot honour; it is never placed.
    Unsupported,
}

impl Rejection {
    /// The `PodScheduled` / group condition reason.
    pub fn reason(self) -> &'static str {
        use kwas_api_types::names::conditions as c;
        match self {
            Self::Unschedulable => c::REASON_UNSCHEDULABLE,
            Self::NotGuaranteed => c::REASON_PLACEMENT_NOT_GUARANTEED,
            Self::Unsupported => c::REASON_UNSUPPORTED,
        }
    }
}

/// A pending pod left unplaced, with the reason (for `PodScheduled=False` and `FailedScheduling`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodOutcome {
    /// The pod.
    pub pod: PodKey,
    /// Why it was not placed.
    pub message: String,
    /// As [`GroupOutcome::rejection`], for the pod's group (or the pod itself, when worse).
    pub rejection: Rejection,
}

/// The decision of a cycle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The hierarchy's requirements are met: bind every assignment (all or nothing).
    Scheduled,
    /// Not schedulable now. `code` is the root's PlacementFeasible status.
    Unschedulable {
        /// Unschedulable (preemption may help) or UnschedulableAndUnresolvable.
        code: Code,
        /// The root's message.
        message: String,
    },
    /// The hierarchy is invalid; mark every group with `reason` and do not schedule it.
    Invalid {
        /// `Invalid` or `SchedulerError`.
        reason: String,
        /// What is wrong.
        message: String,
    },
    /// The unit cannot be scheduled yet (not a root, a group missing, nothing pending).
    NotReady {
        /// Why.
        message: String,
    },
}

/// Everything one cycle decided.
#[derive(Debug, Clone, PartialEq)]
pub struct CycleOutcome {
    /// The unit.
    pub unit: UnitKey,
    /// The decision.
    pub verdict: Verdict,
    /// Pod -> node assignments (only with [`Verdict::Scheduled`]), in name order.
    pub assignments: Vec<Assignment>,
    /// What binding each assigned pod with ResourceClaims must write to them first (allocations the
    /// cycle made, reservations), in assignment order; pods without claims are left out.
    pub reservations: Vec<(PodKey, Vec<ClaimReservation>)>,
    /// Every group of the hierarchy, root first then depth-first in child order.
    pub groups: Vec<GroupOutcome>,
    /// Pending pods of the hierarchy that stay pending.
    pub unschedulable_pods: Vec<PodOutcome>,
    /// KEP-6012's preemption trigger: the root is Unschedulable, or it is satisfied, was already
    /// scheduled before, and some (gang) / all (basic) of its pending pods failed.
    pub preemption_may_help: bool,
    /// Counters.
    pub stats: CycleStats,
}

impl CycleOutcome {
    pub(crate) fn not_ready(unit: &UnitKey, message: String) -> Self {
        Self {
            unit: unit.clone(),
            verdict: Verdict::NotReady { message },
            assignments: Vec::new(),
            reservations: Vec::new(),
            groups: Vec::new(),
            unschedulable_pods: Vec::new(),
            preemption_may_help: false,
            stats: CycleStats::default(),
        }
    }

    /// True when the cycle produced a placement to bind.
    pub fn is_scheduled(&self) -> bool {
        self.verdict == Verdict::Scheduled
    }
}
