//! What the controller knows of the JobSets whose status it writes, beyond its cache (the JobSet
//! counterpart of [`crate::job::written`]).
//!
//! The controller is the only writer of a JobSet's status, and every status write is conditional on the
//! resourceVersion the reconcile started from (a conflict re-reads the JobSet and runs the reconcile
//! again). A reconcile therefore starts from the cached JobSet, not a read, except:
//!
//! - after a write, while the cache still shows a version the write superseded: [`Written::start`] then
//!   starts from the JobSet the write returned (so decisions rest on the status this controller last
//!   wrote, `restarts` above all);
//! - after a conflict, or more writes than this memory follows, the JobSet is *doubtful*: it is read from
//!   the API until a read finds the cache at the stored version ([`Written::verify`]).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use kwas_api_types::jobset::JobSet;

/// The versions a write superseded, and the JobSet it returned.
type WrittenJobSet = (Vec<String>, Arc<JobSet>);

/// Versions remembered per JobSet at most (a cache that lags more than this many writes is read again).
const MAX_WRITTEN_VERSIONS: usize = 16;

/// JobSets remembered above which [`Written::prune`] drops those no longer cached.
const PRUNE_ABOVE: usize = 1024;

/// See the module docs.
#[derive(Debug, Default)]
pub struct Written(parking_lot::Mutex<State>);

#[derive(Debug, Default)]
struct State {
    /// JobSet uid -> the versions the cache may still show and the JobSet the last write returned.
    written: HashMap<String, WrittenJobSet>,
    /// JobSets to read from the API before acting (see the module docs).
    doubtful: HashSet<String>,
    /// The size at which [`Written::prune`] next looks.
    prune_at: usize,
}

/// Where a reconcile starts.
#[derive(Debug, Clone)]
pub struct Start {
    /// The JobSet to start from.
    pub jobset: Arc<JobSet>,
    /// Whether it is known to hold the stored status (else: read it first).
    pub current: bool,
}

impl Written {
    /// The JobSet to start from: the one written last when the cache still shows a version it superseded,
    /// else the cached one.
    pub fn start(&self, cached: &Arc<JobSet>) -> Start {
        let (Some(uid), Some(rv)) = (
            cached.metadata.uid.as_deref(),
            cached.metadata.resource_version.as_deref(),
        ) else {
            return Start {
                jobset: cached.clone(),
                current: false,
            };
        };
        let mut state = self.0.lock();
        let current = !state.doubtful.contains(uid);
        let jobset = match state.written.get(uid) {
            Some((superseded, ours)) if superseded.iter().any(|v| v == rv) => ours.clone(),
            Some(_) => {
                // The cache caught up (or another writer went after us): it is the newest.
                state.written.remove(uid);
                cached.clone()
            }
            None => cached.clone(),
        };
        Start { jobset, current }
    }

    /// This controller wrote `jobset` by a write conditional on `base_rv`, in a reconcile whose cache
    /// showed `cache_rv`.
    pub fn remember(&self, cache_rv: &str, jobset: JobSet) {
        let Some(uid) = jobset.metadata.uid.clone() else { return };
        let mut state = self.0.lock();
        if state.doubtful.contains(&uid) {
            // Started from a read: the cache may show versions this memory does not know.
            return;
        }
        let jobset = Arc::new(jobset);
        match state.written.get_mut(&uid) {
            Some((superseded, ours)) => {
                if !superseded.iter().any(|v| v == cache_rv) {
                    superseded.clear();
                    superseded.push(cache_rv.to_string());
                }
                superseded.extend(ours.metadata.resource_version.clone());
                if superseded.len() > MAX_WRITTEN_VERSIONS {
                    state.written.remove(&uid);
                    state.doubtful.insert(uid);
                    return;
                }
                *ours = jobset;
            }
            None => {
                state.written.insert(uid, (vec![cache_rv.to_string()], jobset));
            }
        }
    }

    /// A read found the JobSet at the version its cache shows: the cache serves again.
    pub fn verify(&self, uid: &str) {
        self.0.lock().doubtful.remove(uid);
    }

    /// A write conflicted: what is remembered is dropped and the JobSet is read until the cache is found
    /// current.
    pub fn doubt(&self, uid: &str) {
        let mut state = self.0.lock();
        state.written.remove(uid);
        state.doubtful.insert(uid.to_string());
    }

    /// The JobSet is gone: nothing is kept of it.
    pub fn forget(&self, uid: &str) {
        let mut state = self.0.lock();
        state.written.remove(uid);
        state.doubtful.remove(uid);
    }

    /// Drop the JobSets not among `cached_uids`, once the memory doubled since it was last pruned.
    pub fn prune(&self, cached_uids: impl FnOnce() -> HashSet<String>) {
        let mut state = self.0.lock();
        let size = state.doubtful.len() + state.written.len();
        if size <= state.prune_at.max(PRUNE_ABOVE) {
            return;
        }
        let keep = cached_uids();
        state.doubtful.retain(|uid| keep.contains(uid));
        state.written.retain(|uid, _| keep.contains(uid));
        state.prune_at = 2 * (state.doubtful.len() + state.written.len());
    }

    /// How many JobSets are remembered (for tests).
    pub fn len(&self) -> usize {
        let state = self.0.lock();
        state.doubtful.len() + state.written.len()
    }

    /// Whether nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(rv: &str) -> Arc<JobSet> {
        let mut js = JobSet {
            metadata: Default::default(),
            spec: Default::default(),
            status: None,
        };
        js.metadata.uid = Some("u".into());
        js.metadata.resource_version = Some(rv.into());
        Arc::new(js)
    }

    fn rv(s: &Start) -> &str {
        s.jobset.metadata.resource_version.as_deref().unwrap()
    }

    #[test]
    fn a_reconcile_starts_from_its_own_writes_until_the_cache_shows_them() {
        let w = Written::default();
        let s = w.start(&at("1"));
        assert_eq!((rv(&s), s.current), ("1", true));
        w.remember("1", (*at("2")).clone());
        assert_eq!(rv(&w.start(&at("1"))), "2");
        w.remember("1", (*at("3")).clone());
        assert_eq!(rv(&w.start(&at("2"))), "3");
        assert_eq!(rv(&w.start(&at("1"))), "3");
        let s = w.start(&at("3"));
        assert_eq!((rv(&s), s.current), ("3", true));
        assert!(w.is_empty());
        // Another writer's later version wins.
        w.remember("3", (*at("4")).clone());
        assert_eq!(rv(&w.start(&at("7"))), "7");
    }

    #[test]
    fn a_conflict_makes_it_doubtful_until_a_read_finds_the_cache_current() {
        let w = Written::default();
        w.remember("1", (*at("2")).clone());
        w.doubt("u");
        let s = w.start(&at("1"));
        assert_eq!((rv(&s), s.current), ("1", false));
        // Writes from a read are not remembered while doubtful.
        w.remember("1", (*at("5")).clone());
        assert_eq!(rv(&w.start(&at("1"))), "1");
        w.verify("u");
        assert!(w.start(&at("5")).current);
        w.doubt("u");
        w.forget("u");
        assert!(w.is_empty());
    }

    #[test]
    fn a_cache_too_far_behind_is_read_again() {
        let w = Written::default();
        for v in 2..=(MAX_WRITTEN_VERSIONS as u64 + 2) {
            w.remember("1", (*at(&v.to_string())).clone());
        }
        let s = w.start(&at("1"));
        assert_eq!((rv(&s), s.current), ("1", false));
    }

    #[test]
    fn pruning_keeps_cached_jobsets() {
        let w = Written::default();
        for i in 0..=PRUNE_ABOVE {
            w.doubt(&format!("u{i}"));
        }
        w.prune(|| ["u7".to_string()].into());
        assert_eq!(w.len(), 1);
    }
}
