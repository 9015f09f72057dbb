//! Placement scoring (KEP-5732's `PodGroupPodsCount` + `NodeResourcesFit` over a topology domain): how
//! tightly a set of nodes is packed.

use super::MAX_SCORE;
use crate::core::config::ScoringStrategy;
use crate::core::resources::{CPU, MEMORY};
use crate::core::snapshot::Snapshot;

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
