//! `NodeResourcesFit` (filter): the pod's requests, including one `pods` slot, must fit in what is left
//! of the node's allocatable. Dynamic: evaluated per pod and node as placements change. A failure is
//! `Unschedulable` (preemption may free room).

use crate::core::framework::Reject;
use crate::core::resources::{PODS, Requests, ResourceNames};

/// Does `req` fit next to `requested` within `allocatable`?
#[inline]
pub(crate) fn fits(req: &Requests, allocatable: &[i64], requested: &[i64]) -> bool {
    req.0.iter().all(|&(i, v)| {
        let i = i as usize;
        let alloc = allocatable.get(i).copied().unwrap_or(0);
        let used = requested.get(i).copied().unwrap_or(0);
        used.saturating_add(v) <= alloc
    })
}

/// The first resource `req` does not fit, for diagnostics.
pub(crate) fn insufficient(
    req: &Requests,
    allocatable: &[i64],
    requested: &[i64],
    names: &ResourceNames,
) -> Option<Reject> {
    for &(i, v) in &req.0 {
        let alloc = allocatable.get(i as usize).copied().unwrap_or(0);
        let used = requested.get(i as usize).copied().unwrap_or(0);
        if used.saturating_add(v) > alloc {
            return Some(if i == PODS {
                Reject::TooManyPods
            } else {
                Reject::Insufficient(names.name(i).to_string())
            });
        }
    }
    None
}
