//! The scheduler core: pure, synchronous scheduling algorithms over an in-memory [`Snapshot`].
//!
//! No client, no async, no I/O. A runtime keeps a [`Snapshot`] in sync with its informers, asks which
//! units are ready ([`Snapshot::pending_units`], [`Snapshot::readiness`]), runs
//! [`Scheduler::schedule`] for one root unit at a time, binds the returned assignments and records them
//! with [`Snapshot::assume`] (undoing a failed binding with [`Snapshot::forget`]), and calls
//! [`Scheduler::preempt`] when a cycle says preemption may help.
//!
//! Module map (one file per concern):
//!
//! | module | concern |
//! | --- | --- |
//! | [`quantity`] | `resource.Quantity` parsing |
//! | [`resources`] | resource vectors, pod requests with the init-container rule |
//! | [`snapshot`] | nodes, pods, groups, priority classes; building from k8s-openapi objects; assume / forget |
//! | [`journal`] | the assume/revert journal |
//! | [`filters`] | node filters (resources, selector and affinity, taints, cordon, pod count) |
//! | [`scores`] | node scores (bin packing / spreading) and placement scores |
//! | [`equivalence`] | equivalence classes sharing filter and scoring work |
//! | [`status`] | status codes and PlacementFeasible (M / S / R / U / UU) |
//! | [`podgroup`] | the PodGroup (leaf) cycle |
//! | [`composite`] | the recursive CompositePodGroup cycle, admissibility pre-check, backtracking |
//! | [`topology`] | multi-level topology placement: domains, pinning, evaluation, adaptive cap |
//! | [`cycle`] | one cycle for one root unit, two-pass mode, results |
//! | [`preemption`] | workload-aware preemption |
//! | [`hierarchy`] | runtime hierarchy checks |
//! | [`queue`] | PreEnqueue-style readiness of root units |
//! | [`config`] | scoring and the algorithm switches |
//! | [`testing`] | builders for API objects |

pub mod composite;
pub mod config;
pub mod cycle;
pub mod equivalence;
pub mod filters;
pub mod hierarchy;
pub mod journal;
pub mod model;
pub mod podgroup;
pub mod preemption;
pub mod quantity;
pub mod queue;
pub mod resources;
pub mod scores;
pub mod snapshot;
pub mod status;
pub mod testing;
pub mod topology;

pub use config::{PlacementLimit, SchedulerConfig, ScoringStrategy};
pub use cycle::{Assignment, CycleOutcome, CycleStats, GroupStatus, PodStatus, Scheduler, TopologyDomain, Verdict};
pub use hierarchy::{HierarchyError, MAX_DEPTH};
pub use journal::{Journal, Mark};
pub use model::{DisruptionMode, GroupKey, GroupKind, PodKey, PodState, Policy, PreemptionPolicy, UnitKey};
pub use preemption::{PreemptionOutcome, PreemptionVerdict, Victim, VictimUnit};
pub use queue::Readiness;
pub use snapshot::{Snapshot, SnapshotError};
pub use status::{Code, Counts, placement_feasible};
