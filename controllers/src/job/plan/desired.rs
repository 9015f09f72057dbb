//! The pods of a NonIndexed Job: `parallelism` capped by the completions still needed (a work queue
//! keeps what runs once one pod succeeded), excess pods deleted unscheduled first, then not ready, then
//! newest.

use super::{Counts, Cx, as_i32, deletion_order};
use crate::job::pods::PodView;

/// Which active pods are in excess, and how many new pods (without index) are wanted.
pub(crate) fn non_indexed<'a>(cx: &Cx<'a>, counts: &Counts) -> (Vec<&'a PodView>, Vec<Option<i32>>) {
    let parallelism = super::parallelism(cx.job);
    let want = match counts.total {
        Some(c) => parallelism.min(c.saturating_sub(counts.succeeded_now).max(0)),
        None if counts.succeeded_now > 0 => as_i32(cx.active.len()).min(parallelism),
        None => parallelism,
    };
    let want = usize::try_from(want).unwrap_or(0);
    // podReplacementPolicy Failed (and any Job with a pod failure policy): a pod still terminating keeps
    // its place until it is terminal.
    let terminating = if super::failure_policy::only_replace_failed_pods(cx.job) {
        cx.terminating
    } else {
        0
    };
    let mut excess = Vec::new();
    let mut wanted = Vec::new();
    if cx.active.len() > want {
        let mut ranked = cx.active.clone();
        deletion_order(&mut ranked);
        excess.extend(ranked.into_iter().take(cx.active.len() - want));
    } else {
        // Never materialize more than one sync creates: `parallelism` may be i32::MAX.
        let missing = want
            .saturating_sub(cx.active.len())
            .saturating_sub(terminating)
            .min(super::MAX_POD_CREATE_PER_SYNC + 1);
        wanted = vec![None; missing];
    }
    (excess, wanted)
}
