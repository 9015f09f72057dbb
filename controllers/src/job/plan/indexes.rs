//! Indexed completion: `completedIndexes` as upstream writes it, and which indexes need a pod.

use std::collections::BTreeSet;

use super::{Counts, Cx};
use crate::job::pods::{PodState, PodView};

/// A set of completion indexes, kept as upstream keeps `completedIndexes`: sorted, disjoint, non-adjacent
/// inclusive intervals. Memory and time follow the number of intervals, never the indexes' values, so a
/// Job with `completions: 2147483647` or a hostile `completedIndexes` costs no more than a small one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Indexes(Vec<(i32, i32)>);

impl Indexes {
    /// Parses an interval list (`"1,3-5,7"`) as upstream's `parseIndexesFromString`: malformed parts and
    /// indexes outside `[0, completions)` are dropped; overlapping and adjacent intervals merge.
    pub fn parse(s: &str, completions: i32) -> Self {
        let mut intervals = Vec::new();
        let last = completions.saturating_sub(1);
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let parsed = match part.split_once('-') {
                Some((a, b)) => a.parse::<i32>().ok().zip(b.parse::<i32>().ok()),
                None => part.parse::<i32>().ok().map(|i| (i, i)),
            };
            if let Some((a, b)) = parsed {
                let (a, b) = (a.max(0), b.min(last));
                if a <= b {
                    intervals.push((a, b));
                }
            }
        }
        intervals.sort_unstable();
        let mut merged: Vec<(i32, i32)> = Vec::with_capacity(intervals.len());
        for (a, b) in intervals {
            match merged.last_mut() {
                Some(last) if i64::from(a) <= i64::from(last.1) + 1 => last.1 = last.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        Indexes(merged)
    }

    /// Whether `i` is in the set.
    pub fn contains(&self, i: i32) -> bool {
        self.position(i).is_ok()
    }

    /// Ok(interval holding i) or Err(where an interval starting at i would go).
    fn position(&self, i: i32) -> Result<usize, usize> {
        match self.0.binary_search_by(|&(a, _)| a.cmp(&i)) {
            Ok(k) => Ok(k),
            Err(0) => Err(0),
            Err(k) if self.0[k - 1].1 >= i => Ok(k - 1),
            Err(k) => Err(k),
        }
    }

    /// Adds `i`; returns whether it was new.
    pub fn insert(&mut self, i: i32) -> bool {
        let Err(k) = self.position(i) else { return false };
        let joins_left = k > 0 && i64::from(self.0[k - 1].1) + 1 == i64::from(i);
        let joins_right = k < self.0.len() && i64::from(self.0[k].0) - 1 == i64::from(i);
        match (joins_left, joins_right) {
            (true, true) => {
                self.0[k - 1].1 = self.0[k].1;
                self.0.remove(k);
            }
            (true, false) => self.0[k - 1].1 = i,
            (false, true) => self.0[k].0 = i,
            (false, false) => self.0.insert(k, (i, i)),
        }
        true
    }

    /// How many indexes the set holds.
    pub fn len(&self) -> u64 {
        self.0
            .iter()
            .map(|&(a, b)| (i64::from(b) - i64::from(a) + 1) as u64)
            .sum()
    }

    /// How many indexes `self` and `other` have in common (upstream's `matchSucceededIndexesRule` walk:
    /// linear in the number of intervals).
    pub fn overlap(&self, other: &Indexes) -> u64 {
        let (mut i, mut j, mut n) = (0usize, 0usize, 0u64);
        while let (Some(&(a1, b1)), Some(&(a2, b2))) = (self.0.get(i), other.0.get(j)) {
            let lo = i64::from(a1.max(a2));
            let hi = i64::from(b1.min(b2));
            if hi >= lo {
                n = n.saturating_add((hi - lo + 1) as u64);
            }
            if b1 <= b2 {
                i += 1;
            }
            if b2 <= b1 {
                j += 1;
            }
        }
        n
    }

    /// Adds every index of `other`.
    pub fn extend(&mut self, other: &Indexes) {
        if other.is_empty() {
            return;
        }
        let mut all: Vec<(i32, i32)> = self.0.iter().chain(other.0.iter()).copied().collect();
        all.sort_unstable();
        let mut merged: Vec<(i32, i32)> = Vec::with_capacity(all.len());
        for (a, b) in all {
            match merged.last_mut() {
                Some(last) if i64::from(a) <= i64::from(last.1) + 1 => last.1 = last.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        self.0 = merged;
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The indexes in `[0, total)` not in the set, in order (lazily: skipping an interval is one step).
    pub fn missing(&self, total: i32) -> impl Iterator<Item = i32> + '_ {
        let mut next = 0i64;
        let mut k = 0usize;
        std::iter::from_fn(move || {
            while let Some(&(a, b)) = self.0.get(k) {
                if i64::from(b) < next {
                    k += 1;
                } else if i64::from(a) <= next {
                    next = i64::from(b) + 1;
                    k += 1;
                } else {
                    break;
                }
            }
            (next < i64::from(total)).then(|| {
                let i = next as i32;
                next += 1;
                i
            })
        })
    }
}

impl std::fmt::Display for Indexes {
    /// Upstream's format: sorted, consecutive runs as `a-b`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (n, &(a, b)) in self.0.iter().enumerate() {
            if n > 0 {
                f.write_str(",")?;
            }
            if a == b {
                write!(f, "{a}")?;
            } else {
                write!(f, "{a}-{b}")?;
            }
        }
        Ok(())
    }
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
            Some(i) if i >= 0 && i < total && !completed.contains(i) && seen.insert(i) => keep.push(p),
            _ => excess.push(p),
        }
    }
    let busy: BTreeSet<i32> = keep.iter().filter_map(|p| p.index).collect();
    // podReplacementPolicy Failed (and any Job with a pod failure policy): an index whose pod is still
    // terminating is not re-created until that pod is terminal (upstream's `firstPendingIndexes`).
    let terminating_idx: BTreeSet<i32> = if super::failure_policy::only_replace_failed_pods(cx.job) {
        cx.pods
            .iter()
            .filter(|p| p.state == PodState::Terminating)
            .filter_map(|p| p.index)
            .collect()
    } else {
        BTreeSet::new()
    };
    // With podReplacementPolicy Failed, terminating pods keep their place (upstream's
    // `wantActive - terminating - active`).
    let terminating = if super::failure_policy::only_replace_failed_pods(cx.job) {
        cx.terminating
    } else {
        0
    };
    let room = parallelism.saturating_sub(keep.len()).saturating_sub(terminating);
    if keep.len() > parallelism {
        let mut by_index = keep.clone();
        by_index.sort_by_key(|p| std::cmp::Reverse(p.index));
        let over = keep.len() - parallelism;
        excess.extend(by_index.into_iter().take(over));
    }
    let wanted = completed
        .missing(total)
        .filter(|i| !busy.contains(i) && !terminating_idx.contains(i) && !counts.failed_indexes.contains(*i))
        .take(room.min(super::MAX_POD_CREATE_PER_SYNC + 1))
        .map(Some)
        .collect();
    (excess, wanted)
}
