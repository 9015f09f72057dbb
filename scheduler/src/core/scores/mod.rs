//! Scores, one file per kube-scheduler plugin: node scores (`node_resources_fit`,
//! `balanced_allocation`; the preferred node affinity and `PreferNoSchedule` taint scores are computed
//! with the static filters; inter-pod affinity and topology spread scores with the dynamic ones, see
//! `core::dynamic`) and topology placement scores (`placement`). A node's total is the sum of each
//! plugin's normalized score times its weight ([`ScoreWeights`](crate::core::ScoreWeights)).
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

use super::config::ScoreWeights;
use super::equivalence::StaticId;
use super::snapshot::Snapshot;

pub(crate) mod balanced_allocation;
pub(crate) mod node_resources_fit;
pub(crate) mod placement;

pub(crate) use node_resources_fit::node_score;
pub(crate) use placement::packing;

/// The weighted static scores (preferred node affinity, `PreferNoSchedule` taints) of a node for a
/// static class; [`Snapshot::ensure_static`] must have run.
pub(crate) fn static_score(snap: &Snapshot, sid: StaticId, node: u32, weights: &ScoreWeights) -> i64 {
    let Some(e) = snap.classes.statics.get(sid as usize) else {
        return 0;
    };
    if e.max_raw == (0, 0) {
        // No preferred term matched and no untolerated PreferNoSchedule taint anywhere: the same
        // score on every node, so it cannot change a ranking.
        return 0;
    }
    let (aff, taint) = e.raw.get(node as usize).copied().unwrap_or((0, 0));
    weights.node_affinity * normalize_node_affinity(aff, e.max_raw.0)
        + weights.taint_toleration * normalize_taints(taint, e.max_raw.1)
}

/// Normalizes a preferred node-affinity weight over the highest one among the candidates (upstream's
/// `NodeAffinity` NormalizeScore).
pub(crate) fn normalize_node_affinity(raw: i64, max: i64) -> i64 {
    if max <= 0 {
        0
    } else {
        raw.saturating_mul(MAX_SCORE) / max
    }
}

/// Normalizes a count of untolerated `PreferNoSchedule` taints, fewer being better (upstream's
/// `TaintToleration` NormalizeScore, reversed).
pub(crate) fn normalize_taints(raw: i64, max: i64) -> i64 {
    if max <= 0 {
        MAX_SCORE
    } else {
        MAX_SCORE - raw.saturating_mul(MAX_SCORE) / max
    }
}

/// Maximum node score.
pub const MAX_SCORE: i64 = 1_000_000;
