//! Indexed completion: `completedIndexes` as upstream writes it, and which indexes need a pod.

use std::collections::BTreeSet;

use super::{Counts, Cx};
use crate::job::pods::{PodState, PodView};

/// Parse an `completedIndexes` interval list (`"1,3-5,7"`).
pub fn parse_indexes(s: &str) -> BTreeSet<i32> {
    let mut out = BTreeSet::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<i32>(), b.parse::<i32>()) {
                    out.extend(a..=b);
                }
            }
            None => {
                if let Ok(i) = part.parse() {
                    out.insert(i);
                }
            }
        }
    }
    out
}

/// Format indexes as upstream does: sorted, consecutive runs as `a-b`.
pub fn format_indexes(indexes: &BTreeSet<i32>) -> String {
    let mut parts = Vec::new();
    let mut iter = indexes.iter().copied().peekable();
    while let Some(start) = iter.next() {
        let mut end = start;
        while iter.peek() == Some(&(end + 1)) {
            end += 1;
            iter.next();
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
    }
    parts.join(",")
}

/// The pods of an Indexed Job: which active pods are in excess (duplicate, completed or out-of-range
/// indexes, or more than `parallelism`), and which indexes get a new pod.
pub(crate) fn desired<'a>(cx: &Cx<'a>, counts: &Counts) -> (Vec<&'a PodView>, Vec<Option<i32>>) {
    let parallelism = usize::try_from(super::parallelism(cx.job)).unwrap_or(0);
    let total = counts.total.unwrap_or(1);
    let completed = &counts.completed;
    let mut keep: Vec<&PodView> = Vec::new();
    let mut excess: Vec<&PodView> = Vec::new();
    let mut seen = BTreeSet::new();
    let mut ordered = cx.active.clone();
    ordered.sort_by(|a, b| a.created.cmp(&b.created).then(a.name.cmp(&b.name)));
    for p in ordered {
        match p.index {
            Some(i) if i < total && !completed.contains(&i) && seen.insert(i) => keep.push(p),
            _ => excess.push(p),
        }
    }
    let busy: BTreeSet<i32> = keep.iter().filter_map(|p| p.index).collect();
    // Indexes whose pod is still terminating are not re-created yet (no two pods per index).
    let terminating_idx: BTreeSet<i32> = cx
        .pods
        .iter()
        .filter(|p| p.state == PodState::Terminating)
        .filter_map(|p| p.index)
        .collect();
    let room = parallelism.saturating_sub(keep.len());
    if keep.len() > parallelism {
        let mut by_index = keep.clone();
        by_index.sort_by_key(|p| std::cmp::Reverse(p.index));
        let over = keep.len() - parallelism;
        excess.extend(by_index.into_iter().take(over));
    }
    let wanted = (0..total)
        .filter(|i| !completed.contains(i) && !busy.contains(i) && !terminating_idx.contains(i))
        .take(room.min(super::MAX_POD_CREATE_PER_SYNC + 1))
        .map(Some)
        .collect();
    (excess, wanted)
}
