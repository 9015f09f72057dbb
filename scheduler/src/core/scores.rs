//! Node scores and topology placement scores.
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

use super::config::ScoringStrategy;
use super::equivalence::ClassEntry;
use super::resources::{CPU, MEMORY};
use super::snapshot::{NodeInfo, Snapshot};

/// Maximum node score.
pub const MAX_SCORE: i64 = 1_000_000;

/// Scores `node` for a pod of `class`.
#[inline]
pub(crate) fn node_score(strategy: ScoringStrategy, class: &ClassEntry, node: &NodeInfo) -> i64 {
    let mut sum: i64 = 0;
    let mut count: i64 = 0;
    for &(r, v) in &class.score_requests {
        let alloc = node.allocatable.get(r as usize).copied().unwrap_or(0);
        if alloc <= 0 {
            continue;
        }
        let used = node
            .requested
            .get(r as usize)
            .copied()
            .unwrap_or(0)
            .saturating_add(v)
            .clamp(0, alloc);
        let part = match strategy {
            ScoringStrategy::MostAllocated => used,
            ScoringStrategy::LeastAllocated => alloc - used,
        };
        // part <= alloc, so the fraction is within 0..=MAX_SCORE; use i128 only when i64 would overflow.
        let frac = match part.checked_mul(MAX_SCORE) {
            Some(x) => x / alloc,
            None => (i128::from(part) * i128::from(MAX_SCORE) / i128::from(alloc)) as i64,
        };
        sum += frac;
        count += 1;
    }
    if count == 0 { 0 } else { sum / count }
}

/// Packing of a set of nodes: cpu and memory utilization over the whole set, 0..=MAX_SCORE, oriented so
/// that higher is better for `strategy`.
pub(crate) fn packing(strategy: ScoringStrategy, snap: &Snapshot, nodes: &[u32]) -> i64 {
    let (mut cpu_used, mut cpu_alloc, mut mem_used, mut mem_alloc) = (0i128, 0i128, 0i128, 0i128);
    for &n in nodes {
        let n = snap.node(n);
        cpu_used += i128::from(n.requested.get(CPU as usize).copied().unwrap_or(0));
        cpu_alloc += i128::from(n.allocatable.get(CPU as usize).copied().unwrap_or(0));
        mem_used += i128::from(n.requested.get(MEMORY as usize).copied().unwrap_or(0));
        mem_alloc += i128::from(n.allocatable.get(MEMORY as usize).copied().unwrap_or(0));
    }
    let mut total = 0i128;
    let mut count = 0i128;
    for (u, a) in [(cpu_used, cpu_alloc), (mem_used, mem_alloc)] {
        if a > 0 {
            total += u.clamp(0, a) * i128::from(MAX_SCORE) / a;
            count += 1;
        }
    }
    let util = if count == 0 { 0 } else { (total / count) as i64 };
    match strategy {
        ScoringStrategy::MostAllocated => util,
        ScoringStrategy::LeastAllocated => MAX_SCORE - util,
    }
}
