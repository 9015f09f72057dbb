//! Scores, one file per kube-scheduler plugin: node scores (`node_resources_fit`) and topology
//! placement scores (`placement`).
//!
//! Node score (upstream `NodeResourcesFit` scoring, at a finer scale of 0..=1,000,000): the average over
//! the scored resources of the node's utilization after the pod lands (`MostAllocated`, bin packing) or
//! of what stays free (`LeastAllocated`, spreading). Scored resources are cpu and memory, with upstream's
//! non-zero defaults (100m, 200Mi) for a pod that requests none, plus every extended resource the pod
//! requests (so GPU pods pack onto GPU nodes). Ties go to the node whose name sorts first.
//!
//! Placement score (KEP-5732 `PodGroupPodsCount` + `NodeResourcesFit` placement scoring): first the
//! number of pods the placement holds, then how tightly the domain is packed afterwards (cpu and memory
//! utilization over all its nodes; under `LeastAllocated` the emptiest domain wins instead). Ties go to
//! the domain whose label value sorts first.

pub(crate) mod node_resources_fit;
pub(crate) mod placement;

pub(crate) use node_resources_fit::node_score;
pub(crate) use placement::packing;

/// Maximum node score.
pub const MAX_SCORE: i64 = 1_000_000;
