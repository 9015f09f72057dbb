//! Equivalence classes: pods with identical scheduling-relevant specs share their filter work.
//!
//! Two levels:
//!
//! - a **static class** is a pod's node selector, required node affinity and tolerations. Its result
//!   over all nodes (one boolean per node) is computed once and cached in the snapshot until a node is
//!   added, removed or changes labels, taints or `unschedulable` (the node epoch);
//! - a **class** is a static class plus the pod's requests. Within one placement attempt of one group in
//!   one domain, the first pod of a class ranks every statically feasible node of the domain once
//!   (resource fit and score) into a max-heap; every further pod of the class pops from that heap. An
//!   entry remembers the node's usage version; a stale entry (the node took a pod since) is rescored and
//!   pushed back, so the heap always yields exactly what a full scan would, at `O(log n)` per pod
//!   instead of `O(n)`. Once a class fails in an attempt, its later pods fail without any work (usage
//!   only grows within an attempt).
//!
//! A homogeneous gang of `k` pods on `n` nodes therefore costs `n + k log n` instead of `k * n`.
//!
//! Across attempts, a class keeps the node scores it computed (`ScoreCache`, tagged with each node's
//! usage version and keyed by the scoring configuration and node epoch): the next attempt rescores only
//! the nodes whose usage moved since, and just checks fit and heapifies for the rest. The
//! `MAX_SCORE_CACHES` (64) most recently ranked classes keep one.

use crate::core::config::{ScoreWeights, ScoringStrategy};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use super::filters::StaticSpec;
use super::resources::{CPU, DEFAULT_MEMORY_REQUEST, DEFAULT_MILLI_CPU_REQUEST, MEMORY, PODS, Requests, ResourceIdx};

/// Id of a static class.
pub(crate) type StaticId = u32;
/// Id of a class.
pub(crate) type ClassId = u32;

#[derive(Debug)]
pub(crate) struct StaticEntry {
    pub spec: StaticSpec,
    pub epoch: u64,
    pub feasible: Vec<bool>,
    /// Per node: the preferred node-affinity weight matched and the untolerated `PreferNoSchedule`
    /// taints (raw static scores).
    pub raw: Vec<(i64, i64)>,
    /// Their highest values over the feasible nodes (the normalization bases).
    pub max_raw: (i64, i64),
}

#[derive(Debug)]
pub(crate) struct ClassEntry {
    pub static_id: StaticId,
    pub requests: Requests,
    /// Resources used for scoring with upstream's non-zero defaults for cpu and memory.
    pub score_requests: Vec<(ResourceIdx, i64)>,
    /// The `NodeResourcesFit` weight of each of `score_requests`.
    pub score_weights: Vec<i64>,
    /// Every weight is 1 (a plain average: the fast path).
    pub uniform_weights: bool,
    /// Node scores of this class across cycles (see [`ScoreCache`]).
    pub score_cache: ScoreCache,
}

/// A class's node scores kept across cycles: per node slot, the node's version (plus one; 0 is empty)
/// the score was computed at. Valid for one scoring configuration and node set (`key`); a node whose
/// version moved (a pod assumed, bound or removed there) is scored again. Only the
/// [`MAX_SCORE_CACHES`] most recently ranked classes keep one.
#[derive(Debug, Default)]
pub(crate) struct ScoreCache {
    pub key: Option<(ScoringStrategy, ScoreWeights, u64)>,
    pub entries: Vec<(u64, i64)>,
}

/// How many classes keep a [`ScoreCache`] (at 5000 nodes, 80 KB each).
pub(crate) const MAX_SCORE_CACHES: usize = 64;

/// Interned classes of the snapshot.
#[derive(Debug, Default)]
pub(crate) struct ClassRegistry {
    pub statics: Vec<StaticEntry>,
    static_index: HashMap<StaticSpec, StaticId>,
    pub classes: Vec<ClassEntry>,
    class_index: HashMap<(StaticId, Requests), ClassId>,
    /// `NodeResourcesFit` `scoringStrategy.resources` (resource, weight); `None`: cpu and memory plus
    /// every extended resource the pod requests, weight 1 each.
    score_resources: Option<Vec<(ResourceIdx, i64)>>,
    /// Classes holding a score cache, least recently ranked first.
    cached: std::collections::VecDeque<ClassId>,
}

impl ClassRegistry {
    pub(crate) fn intern(&mut self, spec: StaticSpec, requests: Requests) -> ClassId {
        let static_id = match self.static_index.get(&spec) {
            Some(&id) => id,
            None => {
                let id = self.statics.len() as StaticId;
                self.static_index.insert(spec.clone(), id);
                self.statics.push(StaticEntry {
                    spec,
                    epoch: u64::MAX,
                    feasible: Vec::new(),
                    raw: Vec::new(),
                    max_raw: (0, 0),
                });
                id
            }
        };
        let key = (static_id, requests);
        if let Some(&id) = self.class_index.get(&key) {
            return id;
        }
        let id = self.classes.len() as ClassId;
        let requests = key.1.clone();
        let (score_requests, score_weights) = self.score_requests(&requests);
        self.classes.push(ClassEntry {
            static_id,
            requests,
            score_requests,
            uniform_weights: score_weights.iter().all(|w| *w == 1),
            score_weights,
            score_cache: ScoreCache::default(),
        });
        self.class_index.insert(key, id);
        id
    }

    /// Sets the scored resources and their weights (see [`Self::score_resources`]) and rescores the
    /// classes interned so far.
    pub(crate) fn set_score_resources(&mut self, resources: Option<Vec<(ResourceIdx, i64)>>) {
        self.score_resources = resources;
        for i in 0..self.classes.len() {
            let (r, w) = self.score_requests(&self.classes[i].requests);
            self.classes[i].score_requests = r;
            self.classes[i].uniform_weights = w.iter().all(|x| *x == 1);
            self.classes[i].score_weights = w;
            self.classes[i].score_cache = ScoreCache::default();
        }
    }

    /// Takes `class`'s score cache for `key` (emptied if it was for another key), making the class the
    /// most recently ranked and dropping the cache of the least recent one beyond the limit. Give it
    /// back with [`Self::put_score_cache`].
    pub(crate) fn take_score_cache(
        &mut self,
        class: ClassId,
        key: (ScoringStrategy, ScoreWeights, u64),
        slots: usize,
    ) -> Vec<(u64, i64)> {
        if let Some(pos) = self.cached.iter().position(|c| *c == class) {
            self.cached.remove(pos);
        }
        self.cached.push_back(class);
        while self.cached.len() > MAX_SCORE_CACHES {
            if let Some(old) = self.cached.pop_front()
                && let Some(e) = self.classes.get_mut(old as usize)
            {
                e.score_cache = ScoreCache::default();
            }
        }
        let Some(e) = self.classes.get_mut(class as usize) else {
            return vec![(0, 0); slots];
        };
        if e.score_cache.key != Some(key) {
            e.score_cache.key = Some(key);
            e.score_cache.entries.clear();
        }
        let mut entries = std::mem::take(&mut e.score_cache.entries);
        if entries.len() < slots {
            entries.resize(slots, (0, 0));
        }
        entries
    }

    pub(crate) fn put_score_cache(&mut self, class: ClassId, entries: Vec<(u64, i64)>) {
        if let Some(e) = self.classes.get_mut(class as usize)
            && e.score_cache.key.is_some()
        {
            e.score_cache.entries = entries;
        }
    }

    fn score_requests(&self, requests: &Requests) -> (Vec<(ResourceIdx, i64)>, Vec<i64>) {
        let value = |r: ResourceIdx| match r {
            CPU => nonzero(requests.get(CPU), DEFAULT_MILLI_CPU_REQUEST),
            MEMORY => nonzero(requests.get(MEMORY), DEFAULT_MEMORY_REQUEST),
            other => requests.get(other),
        };
        match &self.score_resources {
            Some(list) => (
                list.iter().map(|&(r, _)| (r, value(r))).collect(),
                list.iter().map(|&(_, w)| w).collect(),
            ),
            None => {
                let mut out = vec![(CPU, value(CPU)), (MEMORY, value(MEMORY))];
                for &(i, v) in &requests.0 {
                    if i > PODS {
                        out.push((i, v));
                    }
                }
                let weights = vec![1; out.len()];
                (out, weights)
            }
        }
    }
}

fn nonzero(v: i64, default: i64) -> i64 {
    if v == 0 { default } else { v }
}

/// Heap entry: score, then lowest name rank first, then the node slot and the usage version the score
/// was computed at.
type Entry = (i64, Reverse<u32>, u32, u64);

/// Ranked candidate nodes of one class within one attempt (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct Ranker {
    heap: BinaryHeap<Entry>,
    pub failed: bool,
}

impl Ranker {
    pub(crate) fn push(&mut self, score: i64, rank: u32, node: u32, version: u64) {
        self.heap.push((score, Reverse(rank), node, version));
    }

    /// Pops the best entry; the caller checks its version and pushes a rescored entry back if stale.
    pub(crate) fn pop(&mut self) -> Option<(i64, u32, u32, u64)> {
        self.heap.pop().map(|(s, Reverse(r), n, v)| (s, r, n, v))
    }

    /// Builds a ranker from unordered entries in linear time.
    pub(crate) fn from_entries(entries: Vec<(i64, u32, u32, u64)>) -> Self {
        let v: Vec<Entry> = entries
            .into_iter()
            .map(|(s, r, n, ver)| (s, Reverse(r), n, ver))
            .collect();
        Self {
            heap: BinaryHeap::from(v),
            failed: false,
        }
    }
}
