//! `NodeResourcesBalancedAllocation` (score): prefers nodes whose cpu and memory utilization, after
//! the pod lands, are close to each other: `(1 - std) * MAX` over the two fractions, as upstream.

use super::MAX_SCORE;
use crate::core::equivalence::ClassEntry;
use crate::core::resources::{CPU, MEMORY};
use crate::core::snapshot::NodeInfo;

/// The score of `node` for a pod of `class`.
pub(crate) fn balanced(class: &ClassEntry, node: &NodeInfo) -> i64 {
    let mut fractions = [0f64; 2];
    let mut n = 0;
    for (i, r) in [CPU, MEMORY].into_iter().enumerate() {
        let alloc = node.allocatable.get(r as usize).copied().unwrap_or(0);
        if alloc <= 0 {
            continue;
        }
        let req = class
            .score_requests
            .iter()
            .find(|(x, _)| *x == r)
            .map_or(0, |(_, v)| *v);
        let used = node.requested.get(r as usize).copied().unwrap_or(0).saturating_add(req);
        fractions[i] = (used as f64 / alloc as f64).min(1.0);
        n += 1;
    }
    if n < 2 {
        return MAX_SCORE;
    }
    let std = (fractions[0] - fractions[1]).abs() / 2.0;
    ((1.0 - std) * MAX_SCORE as f64).round() as i64
}
