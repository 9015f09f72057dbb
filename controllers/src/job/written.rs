//! What the controller knows of the Jobs whose status it writes, beyond its cache.
//!
//! The controller is the only writer of a managed Job's status (`spec.managedBy`, leader election), and
//! every status write is conditional on the resourceVersion the reconcile started from. Two facts follow:
//!
//! - After a write, the cache may still show a version the write superseded. [`Written::start`] then
//!   starts the next reconcile from the Job the write returned, not from a copy the controller's own
//!   writes made stale (which would only conflict and be read again).
//! - The caches start from consistent lists (kube-runtime's default `ListSemantic::MostRecent`, a quorum
//!   read, also on every re-list), taken once this process leads: no other instance writes after them.
//!   So the only status writes a cached Job can lag behind are this process's own, which the first point
//!   accounts for, and a cached Job is *current*: creating or deleting pods from it needs no read first
//!   (upstream's Job controller makes the same assumption, with its informers' expectations). Two events
//!   make a Job *doubtful*: a conflict (its cache held an older Job than the stored one, which was then
//!   read and acted on without remembering the writes), or more writes than this memory follows. A
//!   doubtful Job is read once before pods are created or deleted ([`Written::verify`] after the read
//!   found the version it started from).
//!
//! `tests/controllers/cache_lag.rs` drives this with the reconcile's steps over random interleavings of
//! cache lag: no pod is created twice.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use k8s_openapi::api::batch::v1::Job;

/// The versions a write superseded, and the Job it returned.
type WrittenJob = (Vec<String>, Arc<Job>);

/// Versions remembered per Job at most (a cache that lags more than this many writes is read again).
const MAX_WRITTEN_VERSIONS: usize = 16;

/// Jobs known current above which [`Written::prune`] drops those no longer cached.
const PRUNE_ABOVE: usize = 1024;

/// See the module docs.
#[derive(Debug, Default)]
pub struct Written(parking_lot::Mutex<State>);

#[derive(Debug, Default)]
struct State {
    /// Job uid -> the versions the cache may still show (the one the first write was based on and this
    /// controller's writes since) and the Job the last write returned.
    written: HashMap<String, WrittenJob>,
    /// Jobs whose cache may lag behind writes this memory no longer follows (see the module docs).
    doubtful: HashSet<String>,
    /// The size at which [`Written::prune`] next looks (twice what the last pruning kept).
    prune_at: usize,
}

/// Where a reconcile starts.
#[derive(Debug, Clone)]
pub struct Start {
    /// The Job to start from.
    pub job: Arc<Job>,
    /// Whether its status is known to be the stored one's (no read needed before creating pods).
    pub current: bool,
}

impl Written {
    /// The Job to start from: the one written last when the cache still shows a version it superseded,
    /// else the cached one.
    pub fn start(&self, cached: &Arc<Job>) -> Start {
        let (Some(uid), Some(rv)) = (
            cached.metadata.uid.as_deref(),
            cached.metadata.resource_version.as_deref(),
        ) else {
            return Start {
                job: cached.clone(),
                current: false,
            };
        };
        let mut state = self.0.lock();
        let current = !state.doubtful.contains(uid);
        let job = match state.written.get(uid) {
            Some((superseded, ours)) if superseded.iter().any(|v| v == rv) => ours.clone(),
            Some(_) => {
                // The cache caught up (or another writer went after us): it is the newest.
                state.written.remove(uid);
                cached.clone()
            }
            None => cached.clone(),
        };
        Start { job, current }
    }

    /// This controller wrote `job` (a conditional write, so the version it was based on was the stored
    /// one: the Job is no longer doubtful), starting from a reconcile whose cache showed `cache_rv`.
    pub fn remember(&self, cache_rv: &str, job: Job) {
        let Some(uid) = job.metadata.uid.clone() else { return };
        let mut state = self.0.lock();
        let job = Arc::new(job);
        match state.written.get_mut(&uid) {
            Some((superseded, ours)) => {
                if !superseded.iter().any(|v| v == cache_rv) {
                    superseded.clear();
                    superseded.push(cache_rv.to_string());
                }
                superseded.extend(ours.metadata.resource_version.clone());
                if superseded.len() > MAX_WRITTEN_VERSIONS {
                    // Too far behind to follow: read again before acting.
                    state.written.remove(&uid);
                    state.doubtful.insert(uid);
                    return;
                }
                *ours = job;
            }
            None => {
                state.written.insert(uid.clone(), (vec![cache_rv.to_string()], job));
            }
        }
        // The write was conditional on the version it started from: that version was the stored one.
        state.doubtful.remove(&uid);
    }

    /// A read found the Job at the version the reconcile started from: it is current.
    pub fn verify(&self, uid: &str) {
        self.0.lock().doubtful.remove(uid);
    }

    /// A write conflicted or the cache held an older Job than the stored one: what is remembered is
    /// dropped and the Job is doubtful until a read finds its cache current.
    pub fn doubt(&self, uid: &str) {
        let mut state = self.0.lock();
        state.written.remove(uid);
        state.doubtful.insert(uid.to_string());
    }

    /// The Job is gone: nothing is kept of it.
    pub fn forget(&self, uid: &str) {
        let mut state = self.0.lock();
        state.written.remove(uid);
        state.doubtful.remove(uid);
    }

    /// Drop the Jobs not among `cached_uids` (deleted Jobs), once the memory doubled since it was last
    /// pruned (and holds more than a few): amortized, a constant cost per remembered Job.
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

    /// How many Jobs are remembered (for tests).
    pub fn len(&self) -> usize {
        let state = self.0.lock();
        state.doubtful.len().max(state.written.len())
    }

    /// Whether nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job_at(rv: &str) -> Arc<Job> {
        let mut j = Job::default();
        j.metadata.uid = Some("u".into());
        j.metadata.resource_version = Some(rv.into());
        Arc::new(j)
    }

    fn rv(s: &Start) -> &str {
        s.job.metadata.resource_version.as_deref().unwrap()
    }

    #[test]
    fn a_reconcile_starts_from_its_own_writes_until_the_cache_shows_them() {
        let w = Written::default();
        let cached = job_at("1");
        let s = w.start(&cached);
        assert_eq!((rv(&s), s.current), ("1", true));
        // Two writes while the cache still shows 1: 1 -> 2 -> 3.
        w.remember("1", (*job_at("2")).clone());
        let s = w.start(&cached);
        assert_eq!((rv(&s), s.current), ("2", true));
        w.remember("1", (*job_at("3")).clone());
        // The cache shows the first write: 3 is still the newest.
        assert_eq!(rv(&w.start(&job_at("2"))), "3");
        assert_eq!(rv(&w.start(&job_at("1"))), "3");
        // The cache caught up: it serves again, still current.
        let s = w.start(&job_at("3"));
        assert_eq!((rv(&s), s.current), ("3", true));
    }

    #[test]
    fn another_writers_version_wins_over_this_controllers_writes() {
        let w = Written::default();
        w.remember("1", (*job_at("2")).clone());
        assert_eq!(rv(&w.start(&job_at("7"))), "7");
    }

    #[test]
    fn a_job_is_doubtful_after_a_conflict_until_a_read() {
        let w = Written::default();
        assert!(w.start(&job_at("1")).current);
        w.remember("1", (*job_at("2")).clone());
        w.doubt("u");
        let s = w.start(&job_at("1"));
        assert_eq!((rv(&s), s.current), ("1", false));
        w.verify("u");
        assert!(w.start(&job_at("1")).current);
        w.doubt("u");
        w.forget("u");
        assert!(w.is_empty());
    }

    #[test]
    fn a_cache_too_far_behind_is_read_again() {
        let w = Written::default();
        for v in 2..=(MAX_WRITTEN_VERSIONS as u64 + 2) {
            w.remember("1", (*job_at(&v.to_string())).clone());
        }
        let s = w.start(&job_at("1"));
        assert_eq!((rv(&s), s.current), ("1", false));
    }

    #[test]
    fn pruning_keeps_cached_jobs() {
        let w = Written::default();
        for i in 0..=PRUNE_ABOVE {
            w.doubt(&format!("u{i}"));
        }
        w.prune(|| ["u7".to_string()].into());
        assert_eq!(w.len(), 1);
        assert!(w.0.lock().doubtful.contains("u7"));
    }
}
