//! # kwas-scheduler
//!
//! The kwas scheduler: multi-level gang scheduling, multi-level topology-aware placement and
//! workload-aware preemption (KEP-4671, KEP-6012, KEP-5710).
//!
//! [`core`] is the algorithm library: pure and synchronous, over an in-memory snapshot built from
//! k8s-openapi objects. See its docs and the crate README for the design choices.
//!
//! `runtime` (cargo feature `runtime`, on by default) runs the core against a cluster with kube-rs:
//! informers, a PreEnqueue-gated queue with backoff, binding, group and pod conditions, events,
//! preemption actuation, leader election and `/healthz`, `/readyz`, `/metrics`.
//!
//! `replay` (with `runtime`) takes a snapshot of a cluster's scheduling inputs and replays the
//! runtime's decisions on it offline: `kwas snapshot`, `kwas replay`.

//!
//! # Layers
//!
//! Every module of the crate, lowest layer first. A module uses only modules above it in this table
//! (or its own descendants), never one below: the plugins (`filters`, `dra`, `scores`) read the views of
//! `framework` and the `snapshot`, never the cycle; the cycle's steps (`podgroup`, `topology`,
//! `composite`) sit between the cycle state (`cycle`) and the entry point (`scheduler`); `runtime` is
//! above `core` and `replay` above `runtime`. The shape test (`tests/scheduler/shape.rs`) reads every `crate::` path
//! and fails on an edge that goes the other way or on any cycle.
//!
//! | module | concern |
//! | --- | --- |
//! | `core` | the algorithm library: pure and synchronous; re-exports the public types below |
//! | `core::model` | keys and vocabulary: `PodKey`, `GroupKey`, `UnitKey`, policies, disruption modes, pod states |
//! | `core::status` | `Code`, `Counts` and KEP-6012's PlacementFeasible rules (M / S / R / U / UU) |
//! | `core::config` | `SchedulerConfig`: scoring strategy, score weights, the algorithm switches, DRA budget defaults |
//! | `core::resources` | resource vectors, pod requests with the init-container rule, node allocatable |
//! | `core::placement_message` | the topology placement failure message (`0/T KEY placements are available: ...`): format and parse |
//! | `core::framework` | the views every plugin and the snapshot share: `NodeView`, `NodeTaint`, `Reject`, `ConstraintError`, `ClaimReservation` |
//! | `core::outcome` | what a cycle returns: `CycleOutcome`, `Verdict`, `Assignment`, group and pod outcomes, `CycleStats` |
//! | `core::filters` | the filter plugins' shared specs (`StaticSpec`, `DynamicSpec`) and the FitError diagnosis |
//! | `core::filters::pod_selector` | label selectors and namespaces of pod affinity terms and disruption budgets |
//! | `core::filters::taint_toleration` | TaintToleration: tolerations, `NoSchedule` / `NoExecute` / `PreferNoSchedule` |
//! | `core::filters::node_unschedulable` | NodeUnschedulable |
//! | `core::filters::node_affinity` | NodeAffinity: node selector, required and preferred terms |
//! | `core::filters::node_ports` | NodePorts: host ports |
//! | `core::filters::node_resources_fit` | NodeResourcesFit: requests against allocatable |
//! | `core::filters::inter_pod_affinity` | InterPodAffinity: affinity, anti-affinity, existing pods' anti-affinity |
//! | `core::filters::pod_topology_spread` | PodTopologySpread: constraints, system default constraints |
//! | `core::filters::volumes` | VolumeBinding, VolumeZone, NodeVolumeLimits; the storage view; PreBind actions |
//! | `core::dra` | dynamic resource allocation: DeviceClasses, ResourceSlices, ResourceClaims, budgets |
//! | `core::dra::cel` | CEL device selectors, charged to the allocation budget |
//! | `core::dra::allocator` | the device allocator: requests, constraints, alternatives |
//! | `core::equivalence` | equivalence classes: cached static filter results and scores per class, ranked heaps |
//! | `core::snapshot` | the cluster state (`Snapshot`): one arena of nodes, pods and groups; assume / forget |
//! | `core::snapshot::arena` | the slab of nodes, pods and groups at stable `u32` ids |
//! | `core::snapshot::conversion` | reading API objects: field errors, the `schedulingPolicy` union, creation times |
//! | `core::snapshot::nodes` | nodes: upsert, remove, allocatable, taints |
//! | `core::snapshot::pods` | pods: upsert, remove, requests, specs, claims |
//! | `core::snapshot::groups` | PodGroups and CompositePodGroups |
//! | `core::snapshot::priority` | PriorityClasses, pods' and groups' priorities and preemption policies |
//! | `core::snapshot::volumes` | PersistentVolumeClaims, PersistentVolumes, StorageClasses, CSINodes, namespaces, disruption budgets |
//! | `core::snapshot::workloads` | Workloads (KEP-6012's template check) |
//! | `core::snapshot::dra` | DRA objects in the snapshot, claims resolved, allocations assumed and released |
//! | `core::snapshot::simulation` | simulated placements and removals, caches kept across cycles, topology indexes |
//! | `core::journal` | the assume / revert journal of a cycle |
//! | `core::scores` | score plugins' normalization and the static scores |
//! | `core::scores::node_resources_fit` | NodeResourcesFit scores: `MostAllocated` / `LeastAllocated` with weights |
//! | `core::scores::balanced_allocation` | NodeResourcesBalancedAllocation |
//! | `core::scores::placement` | placement scores: pods held, then packing |
//! | `core::hierarchy` | hierarchy checks: cycles, depth, Workloads, priorities, scheduler names, disruption nesting |
//! | `core::readiness` | PreEnqueue-style readiness of root units, upstream's waiting messages |
//! | `core::dynamic` | per-pod evaluation of the constraints that depend on other pods' placements |
//! | `core::cycle` | the state of one cycle: `Cycle`, `Domain`, a group's `Outcome` |
//! | `core::podgroup` | the PodGroup (leaf) cycle: placing pods, rankers, diagnoses |
//! | `core::topology` | multi-level topology placement: candidate domains, pinning, evaluation, adaptive cap |
//! | `core::composite` | the recursive CompositePodGroup cycle, admissibility pre-check, backtracking |
//! | `core::scheduler` | `Scheduler::schedule`: one cycle for one root unit, two-pass mode, the outcome |
//! | `core::preemption` | workload-aware preemption (`Scheduler::preempt`) |
//! | `core::testing` | builders for API objects (cargo feature `testing`) |
//! | `runtime` | the kube-rs runtime (`SchedulerRuntime`), its entry points and RBAC (`API_ACCESS`) |
//! | `runtime::error` | the runtime's `Error` |
//! | `runtime::config` | `RuntimeConfig`, `LeaseConfig`, `BackoffConfig`, `ProfileArgs` |
//! | `runtime::profile` | KubeSchedulerConfiguration files (`--config`): profiles, refusals with field paths |
//! | `runtime::profile::args` | plugin arguments: NodeResourcesFit, PodTopologySpread, InterPodAffinity |
//! | `runtime::profile::plugins` | score plugins and weights of a profile |
//! | `runtime::conditions` | which condition to write, never regressing, and the patches |
//! | `runtime::actions` | what the engine asks for: binds, status patches, evictions, events |
//! | `runtime::events` | `events.k8s.io/v1` Events published as client-go's broadcaster does |
//! | `runtime::informers` | kube-runtime watchers merged into one event stream; the objects watched |
//! | `runtime::scheduling_queue` | the scheduling queue: active, backoff, unschedulable, gated |
//! | `runtime::metrics` | Prometheus metrics |
//! | `runtime::dra_writes` | ResourceClaim writes before binding (finalizer, allocation, `reservedFor`) |
//! | `runtime::engine` | decisions without I/O: snapshot updates, cycles, preemption, status decisions |
//! | `runtime::engine::ingest` | informer events mirrored into the snapshot, re-lists reconciled, units woken |
//! | `runtime::engine::gating` | PreEnqueue gating and the timers: waiting messages, backoff expiry, preemption deadlines |
//! | `runtime::engine::binding` | bindings in flight: confirmed, conflicts, rejected ones forgotten and retried |
//! | `runtime::engine::status` | status decisions: `PodScheduled`, nominations, group conditions, events |
//! | `runtime::engine::health` | `PodGroupSatisfied`: a gang's live health, and the opt-in recovery of broken gangs |
//! | `runtime::engine::preemption` | the delayed-preemption state machine: victims, reservations, nominations |
//! | `runtime::engine::release` | gangs left partially bound, released after `partial_gang_timeout` |
//! | `runtime::writer` | bindings, status patches, evictions and events against the API server |
//! | `replay` | offline replay of a cluster's scheduling inputs (`kwas snapshot`, `kwas replay`) |
//! | `replay::file` | the snapshot file: format, limits, refusals with the item and field at fault |
//! | `replay::take` | taking a snapshot from a cluster |
//! | `replay::run` | replaying a snapshot through the runtime's engine |
//! | `replay::text` | the replay report for people |

#![warn(missing_docs)]

pub mod core;
#[cfg(feature = "runtime")]
pub mod replay;
#[cfg(feature = "runtime")]
pub mod runtime;
