//! `NodeResourcesFit` scoring (`MostAllocated` / `LeastAllocated`) at a scale of 0..=[`MAX_SCORE`].

use super::MAX_SCORE;
use crate::core::config::ScoringStrategy;
use crate::core::equivalence::ClassEntry;
use crate::core::snapshot::NodeInfo;

/// Scores `node` for a pod of `class`: the weighted average over the scored resources the node has.
#[inline(always)]
pub(crate) fn node_score(strategy: ScoringStrategy, class: &ClassEntry, node: &NodeInfo) -> i64 {
    let mut sum: i64 = 0;
    let mut count: i64 = 0;
    if class.uniform_weights {
        for &(r, v) in &class.score_requests {
            if let Some(frac) = fraction(strategy, node, r, v) {
                sum += frac;
                count += 1;
            }
        }
    } else {
        for (&(r, v), &w) in class.score_requests.iter().zip(&class.score_weights) {
            if let Some(frac) = fraction(strategy, node, r, v) {
                // Weights are validated to 1..=100 (upstream's range), so neither sum overflows.
                sum += frac * w;
                count += w;
            }
        }
    }
    if count == 0 { 0 } else { sum / count }
}

/// One resource's score in 0..=[`MAX_SCORE`]; `None` when the node has none of it.
#[inline(always)]
fn fraction(strategy: ScoringStrategy, node: &NodeInfo, r: crate::core::resources::ResourceIdx, v: i64) -> Option<i64> {
    let alloc = node.allocatable.get(r as usize).copied().unwrap_or(0);
    if alloc <= 0 {
        return None;
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
    Some(match part.checked_mul(MAX_SCORE) {
        Some(x) => x / alloc,
        None => (i128::from(part) * i128::from(MAX_SCORE) / i128::from(alloc)) as i64,
    })
}
