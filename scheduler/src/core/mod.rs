//! The scheduler core: pure, synchronous scheduling algorithms over an in-memory [`Snapshot`].
//!
//! No client, no async, no I/O. A runtime keeps a [`Snapshot`] in sync with its informers, asks which
//! units are ready ([`Snapshot::pending_units`], [`Snapshot::readiness`]), runs
//! [`Scheduler::schedule`] for one root unit at a time, binds the returned assignments and records them
//! with [`Snapshot::assume`] (undoing a failed binding with [`Snapshot::forget`]), and calls
//! [`Scheduler::preempt`] when a cycle says preemption may help.
//!
//! ```
//! use kwas_scheduler::core::testing::{GroupBuilder, node, pod_in_group};
//! use kwas_scheduler::core::{Readiness, Scheduler, SchedulerConfig, Snapshot, Verdict};
//!
//! // The runtime mirrors the cluster into a snapshot...
//! let mut snap = Snapshot::new();
//! for i in 0..4 {
//!     let rack = if i < 2 { "r1" } else { "r2" };
//!     snap.upsert_node(&node(&format!("n{i}"), "4", "16Gi", &[("kwas.dev/rack", rack)])).unwrap();
//! }
//! snap.upsert_composite_pod_group(&GroupBuilder::gang("ns", "job", 2).composite()).unwrap();
//! for (k, name) in ["workers-a", "workers-b"].iter().enumerate() {
//!     let pg = GroupBuilder::gang("ns", name, 2).parent("job").topology("kwas.dev/rack").created(k as i64);
//!     snap.upsert_pod_group(&pg.pod_group()).unwrap();
//!     for j in 0..2 {
//!         snap.upsert_pod(&pod_in_group("ns", &format!("{name}-{j}"), name, "3", "1Gi")).unwrap();
//!     }
//! }
//! // ... asks what is ready, runs a cycle, binds, and records the bindings.
//! let scheduler = Scheduler::new(SchedulerConfig::default());
//! for (unit, readiness) in snap.pending_units() {
//!     assert_eq!(readiness, Readiness::Ready);
//!     let out = scheduler.schedule(&mut snap, &unit);
//!     assert_eq!(out.verdict, Verdict::Scheduled);
//!     for a in &out.assignments {
//!         snap.assume(&a.pod, &a.node).unwrap(); // then bind; `forget` if the binding fails
//!     }
//!     // One gang per rack, all four pods placed.
//!     assert_eq!(out.assignments.len(), 4);
//! }
//! ```
//!
//! # Choices where the KEPs leave room
//!
//! - **Basic groups** (a choice KEP-6012 leaves open). A Basic group's minimum `M` is 1: a Basic
//!   PodGroup is satisfied once one of its pods is placed or running, a Basic CompositePodGroup once one
//!   of its children is satisfied. So under a **gang parent a Basic child counts towards
//!   `minGroupCount` as soon as it has one pod placed** ("start as soon as some data-downloaders are
//!   ready", KEP-6012's JobSet story); its other pods are best-effort extras. A Basic child with no
//!   placeable pod fails (Unschedulable; UnschedulableAndUnresolvable if it has no pods at all) and
//!   counts against the parent like any failed child. Because `M` = 1, PlacementFeasible keeps a Basic
//!   group in Wait until every member was tried, so members of a Basic group are scheduled independently
//!   (a failing one never aborts its siblings) and the group fails only when none succeeds.
//! - **Leaf failures** count as `U`, except that a pod no node could ever take (every node rejected it
//!   UnschedulableAndUnresolvable: a node selector nothing matches, an unbound claim, a volume zone)
//!   makes its PodGroup UnschedulableAndUnresolvable (KEP-6012's Beta plan), so no preemption is tried
//!   for it. A PodGroup is also UnschedulableAndUnresolvable when it has too few pods to ever reach its
//!   minimum.
//! - **Pods with inter-pod constraints** (inter-pod affinity or anti-affinity, topology spread, host
//!   ports, volumes) are filtered and scored per pod inside the gang cycle, against the cluster plus
//!   the placements made so far in the cycle (see `dynamic`), so gang members see each other; pods
//!   without them share equivalence-class work. A gang with inter-pod dependencies that fails is
//!   reported [`Rejection::NotGuaranteed`] (KEP-4671: the greedy cycle does not guarantee finding a
//!   placement that exists); a pod using something this scheduler cannot honour (today
//!   DRA claims asking for admin access, consumable capacity or derived attributes) is
//!   [`Rejection::Unsupported`] and never placed.
//! - **Failure messages** are upstream's (`0/8 nodes are available: 4 Insufficient nvidia.com/gpu, 4
//!   node(s) didn't match pod anti-affinity rules.`), counted over the nodes of the domain the group was
//!   tried in; a group's message names the placements tried by domain value and reason, aggregated, and
//!   the member group or pod that stopped it.
//! - **Pod order**: pods of a group are tried by priority, then first-seen time (upstream). Only the
//!   non-greedy first pass of [`SchedulerConfig::secure_minimums_first`] deviates: it secures a gang's
//!   minimum with its smallest pods, largest first, and leaves the rest to the greedy pass.
//! - **Already placed pods** (bound, assumed, or placed earlier in the same cycle) count towards `S`;
//!   terminating pods do not. They also pin their group's topology domain. Pods of a PodGroup that
//!   `Succeeded` keep counting towards `S` (not pinning anything) until deleted, so a gang Job's last,
//!   smaller wave is scheduled; `Failed` pods do not count (see `snapshot`).
//! - **Node scores** are upstream's score plugins with their weights ([`ScoreWeights`]):
//!   `NodeResourcesFit` (`MostAllocated`, kwas' default, bin packing; or `LeastAllocated`),
//!   `NodeResourcesBalancedAllocation` (weight 0 in kwas' profile, 1 in upstream's), preferred
//!   `NodeAffinity`, `TaintToleration` (`PreferNoSchedule`), preferred `InterPodAffinity` and
//!   `PodTopologySpread` (`ScheduleAnyway`, cluster default constraints), each normalized to a scale
//!   of 10^6 instead of 100 so near-equal nodes are told apart; ties go to the node whose name sorts
//!   first. The scored resources are cpu and memory plus any extended resource the pod requests, or a
//!   profile's weighted list ([`Snapshot::set_scoring_resources`]). **Placement scores** are the number
//!   of pods the placement holds, then how tightly the domain is packed afterwards; ties go to the
//!   label value that sorts first.
//! - **Priorities**: a group's priority is the priority of its pods (KEP-5710). All groups and pods of a
//!   tree must share one priority and pods one `schedulerName`, else the tree is rejected
//!   (`hierarchy`).
//! - **Preemption** for a hierarchy that is already satisfied (extra pods failed) succeeds when it lets
//!   more pending pods be placed than the cycle without preemption did. A unit's priority is the highest
//!   priority among its pods. Pods already terminating are never victims. Candidate domains are ranked
//!   as upstream: fewest PodDisruptionBudget violations, then the lowest highest victim priority, then
//!   the smallest priority sum, then the fewest victims; victims a budget protects are reprieved first.
//!   A group's pods share one `preemptionPolicy` (a mix is rejected).
//! - **Commit**: a cycle never leaves changes in the snapshot; the runtime records what it binds with
//!   [`Snapshot::assume`]. [`SchedulerConfig::alpha`] is the KEP's alpha algorithm;
//!   [`SchedulerConfig::default`] adds the four Beta-plan improvements, each of which has its own switch.
//!
//! # Not modelled
//!
//! Parts of DRA (see `dra`: admin access, consumable capacity, derived attributes, shared counters,
//! binding conditions), image locality, and in-tree
//! (non-CSI) volume limits. Nominated pods do not reserve capacity in the snapshot between a preemption
//! and the next cycle (the runtime reserves them itself and retries).
//!
//! The modules, one file or folder per concern, are listed lowest layer first in the crate docs (a
//! module uses only the ones above it there). The public surface is the re-exports below, and
//! [`placement_message`] and `testing` (cargo feature `testing`).

pub(crate) mod composite;
pub(crate) mod config;
pub(crate) mod cycle;
pub(crate) mod dra;
pub(crate) mod dynamic;
pub(crate) mod equivalence;
pub(crate) mod filters;
pub(crate) mod framework;
pub(crate) mod hierarchy;
pub(crate) mod journal;
pub(crate) mod model;
pub(crate) mod outcome;
pub mod placement_message;
pub(crate) mod podgroup;
pub(crate) mod preemption;
pub(crate) mod readiness;
pub(crate) mod resources;
pub(crate) mod scheduler;
pub(crate) mod scores;
pub(crate) mod snapshot;
pub(crate) mod status;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub(crate) mod topology;

pub use config::{PlacementLimit, SchedulerConfig, ScoreWeights, ScoringStrategy};
pub use filters::pod_topology_spread::DefaultConstraint;
pub use filters::volumes::ClaimAction;
pub use framework::ClaimReservation;
pub use hierarchy::HierarchyError;
pub use journal::{Journal, Mark};
pub use model::{GroupKey, GroupKind, PodKey, PodState, UnitKey};
pub use outcome::{Assignment, CycleOutcome, CycleStats, GroupOutcome, PodOutcome, Rejection, TopologyDomain, Verdict};
pub use preemption::{PreemptionOutcome, PreemptionVerdict, Victim, VictimUnit};
pub use readiness::{Readiness, UnitSummary};
pub use scheduler::Scheduler;
pub use snapshot::{Snapshot, SnapshotError};
pub use status::Code;
