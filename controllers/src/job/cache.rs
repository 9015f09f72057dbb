//! The Job controller's pod cache and expectations, as upstream's pod informer, `ControllerExpectations`
//! and `finalizerExpectations` (`pkg/controller/job`).
//!
//! The pods of every Job, indexed by the Job's uid (the pod's controller owner), are kept from the pod watch
//! ([`PodCache::apply`]), so a reconcile lists nothing. A cache lags behind the API server; two
//! expectations keep a lagging cache from misleading a reconcile:
//! - **creations**: before creating `n` pods the reconcile raises the Job's expected creations by `n`
//!   ([`PodCache::expect_creations`]); each pod the watch shows for the first time, and each creation that
//!   failed, lowers it. Until it is back to 0 (or [`EXPECTATIONS_TTL`] passed, upstream's 5 minutes, for a
//!   watch event lost in a relist) the reconcile creates and deletes nothing: the pods it just created may
//!   not be in the cache yet, and counting them missing would create them twice;
//! - **finalizer removals**: a pod whose tracking finalizer the reconcile removed counts as untracked until
//!   the watch shows it without the finalizer (or gone), so a stale copy that still carries the finalizer is
//!   never recorded as a new terminated pod (which would count it twice).
//!
//! Everything here is a synchronous function of the events applied and the time given.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::runtime::watcher;
use parking_lot::Mutex;

use super::pods::has_tracking_finalizer;

/// How long unmet creation expectations hold a Job's pod management (upstream's `ExpectationsTimeout`).
pub const EXPECTATIONS_TTL: Duration = Duration::from_secs(5 * 60);

/// The pods of every Job, and the expectations of the reconciles in flight.
#[derive(Debug, Default)]
pub struct PodCache {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Whether the first list completed.
    ready: bool,
    /// Pod uid -> (Job uid, pod).
    pods: HashMap<String, (String, Arc<Pod>)>,
    /// Job uid -> its pods' uids.
    by_job: HashMap<String, HashSet<String>>,
    /// The pods of a list in progress (after a watch restart), replacing `pods` when it completes.
    relist: Option<HashMap<String, (String, Arc<Pod>)>>,
    /// Job uid -> creations not yet seen, and since when.
    creations: HashMap<String, (i64, Instant)>,
    /// Pod uids whose tracking finalizer was removed and not yet seen removed.
    removing: HashSet<String>,
}

/// The uid of the Job that controls `pod`, if a Job does.
fn job_of(pod: &Pod) -> Option<String> {
    pod.metadata
        .owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true) && r.kind == "Job")
        .map(|r| r.uid.clone())
}

impl State {
    /// A pod seen: lowers its Job's creation expectation if it is new, settles its finalizer removal if it
    /// no longer carries the finalizer.
    fn observe(&mut self, uid: &str, job: &str, pod: &Pod, new: bool) {
        if new && let Some((n, _)) = self.creations.get_mut(job) {
            *n = n.saturating_sub(1);
        }
        if !has_tracking_finalizer(pod) {
            self.removing.remove(uid);
        }
    }

    fn insert(&mut self, uid: String, job: String, pod: Arc<Pod>) {
        if let Some((old_job, _)) = self.pods.get(&uid)
            && *old_job != job
            && let Some(set) = self.by_job.get_mut(old_job)
        {
            set.remove(&uid);
        }
        self.by_job.entry(job.clone()).or_default().insert(uid.clone());
        self.pods.insert(uid, (job, pod));
    }

    fn remove(&mut self, uid: &str) {
        if let Some((job, _)) = self.pods.remove(uid)
            && let Some(set) = self.by_job.get_mut(&job)
        {
            set.remove(uid);
            if set.is_empty() {
                self.by_job.remove(&job);
            }
        }
        self.removing.remove(uid);
    }

    /// See [`PodCache::pods_of`].
    fn pods_of(&self, job: &str) -> Vec<Arc<Pod>> {
        self.by_job
            .get(job)
            .into_iter()
            .flatten()
            .filter_map(|uid| self.pods.get(uid).map(|(_, p)| p.clone()))
            .collect()
    }

    /// See [`PodCache::creations_satisfied`].
    fn satisfied(&self, job: &str, now: Instant) -> bool {
        match self.creations.get(job) {
            None => true,
            Some((n, since)) => *n <= 0 || now.saturating_duration_since(*since) >= EXPECTATIONS_TTL,
        }
    }
}

impl PodCache {
    /// Apply one event of the pod watch.
    pub fn apply(&self, event: &watcher::Event<Pod>) {
        let mut s = self.state.lock();
        match event {
            watcher::Event::Init => s.relist = Some(HashMap::new()),
            watcher::Event::InitApply(pod) => {
                let (Some(uid), Some(job)) = (pod.metadata.uid.clone(), job_of(pod)) else {
                    return;
                };
                let pod = Arc::new(pod.clone());
                match &mut s.relist {
                    // Seen only when the list completes: until then reconciles read the previous pods, so
                    // a creation must not count as seen (its pod is not among them yet).
                    Some(relist) => {
                        relist.insert(uid, (job, pod));
                    }
                    None => {
                        let new = !s.pods.contains_key(&uid);
                        s.observe(&uid, &job, &pod, new);
                        s.insert(uid, job, pod);
                    }
                }
            }
            watcher::Event::InitDone => {
                if let Some(relist) = s.relist.take() {
                    let gone: Vec<String> = s.pods.keys().filter(|u| !relist.contains_key(*u)).cloned().collect();
                    for uid in gone {
                        s.remove(&uid);
                    }
                    for (uid, (job, pod)) in relist {
                        let new = !s.pods.contains_key(&uid);
                        s.observe(&uid, &job, &pod, new);
                        s.insert(uid, job, pod);
                    }
                }
                s.ready = true;
            }
            watcher::Event::Apply(pod) => {
                let (Some(uid), Some(job)) = (pod.metadata.uid.clone(), job_of(pod)) else {
                    return;
                };
                let new = !s.pods.contains_key(&uid);
                s.observe(&uid, &job, pod, new);
                s.insert(uid, job, Arc::new(pod.clone()));
            }
            watcher::Event::Delete(pod) => {
                if let Some(uid) = pod.metadata.uid.as_deref() {
                    // A pod created and deleted before the watch showed it still counts as seen.
                    if !s.pods.contains_key(uid)
                        && let Some(job) = job_of(pod)
                        && let Some((n, _)) = s.creations.get_mut(&job)
                    {
                        *n = n.saturating_sub(1);
                    }
                    s.remove(uid);
                }
            }
        }
    }

    /// Whether the first list of pods completed (before, the cache cannot say a Job has no pods).
    pub fn is_ready(&self) -> bool {
        self.state.lock().ready
    }

    /// The pods the cache holds for the Job with uid `job`.
    pub fn pods_of(&self, job: &str) -> Vec<Arc<Pod>> {
        self.state.lock().pods_of(job)
    }

    /// The pods the cache holds for Job `job` and whether every creation of it was seen (see
    /// [`creations_satisfied`](Self::creations_satisfied)), read together under one lock. Read apart, the
    /// last expected pod could arrive between the two reads: pods read first would lack it while the
    /// expectations read next count it seen, and the reconcile would create it again.
    pub fn pods_and_expectations(&self, job: &str, now: Instant) -> (Vec<Arc<Pod>>, bool) {
        let s = self.state.lock();
        (s.pods_of(job), s.satisfied(job, now))
    }

    /// The reconcile of Job `job` is about to create `n` pods.
    pub fn expect_creations(&self, job: &str, n: usize, now: Instant) {
        let mut s = self.state.lock();
        let n = i64::try_from(n).unwrap_or(i64::MAX);
        let entry = s.creations.entry(job.to_string()).or_insert((0, now));
        if entry.0 <= 0 {
            *entry = (0, now);
        }
        entry.0 = entry.0.saturating_add(n);
    }

    /// A creation announced by [`expect_creations`](Self::expect_creations) failed: it will never be seen.
    pub fn creation_failed(&self, job: &str) {
        if let Some((n, _)) = self.state.lock().creations.get_mut(job) {
            *n = n.saturating_sub(1);
        }
    }

    /// Whether every creation of Job `job` was seen (or the expectation expired at `now`): only then may
    /// the reconcile create or delete pods.
    pub fn creations_satisfied(&self, job: &str, now: Instant) -> bool {
        self.state.lock().satisfied(job, now)
    }

    /// The reconcile removed the tracking finalizer of pod `uid`.
    pub fn expect_finalizer_removal(&self, uid: &str) {
        self.state.lock().removing.insert(uid.to_string());
    }

    /// Whether pod `uid` counts as tracked: it carries the finalizer in the cache and no removal of it is
    /// pending.
    pub fn is_tracked(&self, pod: &Pod) -> bool {
        let pending = pod
            .metadata
            .uid
            .as_deref()
            .is_some_and(|u| self.state.lock().removing.contains(u));
        has_tracking_finalizer(pod) && !pending
    }

    /// Forget the expectations of a Job that is gone.
    pub fn forget(&self, job: &str) {
        self.state.lock().creations.remove(job);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
    use kwas_api_types::names::finalizers;

    fn pod(uid: &str, job: &str, finalizer: bool) -> Pod {
        let mut p = Pod::default();
        p.metadata.uid = Some(uid.into());
        p.metadata.name = Some(uid.into());
        p.metadata.owner_references = Some(vec![OwnerReference {
            api_version: "batch/v1".into(),
            kind: "Job".into(),
            name: "j".into(),
            uid: job.into(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }]);
        if finalizer {
            p.metadata.finalizers = Some(vec![finalizers::JOB_TRACKING.into()]);
        }
        p
    }

    #[test]
    fn creations_hold_pod_management_until_seen() {
        let c = PodCache::default();
        let t = Instant::now();
        c.apply(&watcher::Event::Init);
        c.apply(&watcher::Event::InitDone);
        c.expect_creations("j1", 2, t);
        assert!(!c.creations_satisfied("j1", t));
        c.apply(&watcher::Event::Apply(pod("a", "j1", true)));
        assert!(!c.creations_satisfied("j1", t));
        // A second event of the same pod is not a second creation.
        c.apply(&watcher::Event::Apply(pod("a", "j1", true)));
        assert!(!c.creations_satisfied("j1", t));
        c.creation_failed("j1");
        assert!(c.creations_satisfied("j1", t));
        assert!(c.creations_satisfied("other", t));
        assert_eq!(c.pods_of("j1").len(), 1);
    }

    /// A creation seen in a relist counts only once the list completes: until then the reconciles read
    /// the previous pods, which lack it, and would create it again.
    #[test]
    fn a_creation_seen_during_a_relist_counts_when_the_list_completes() {
        let c = PodCache::default();
        let t = Instant::now();
        c.apply(&watcher::Event::Init);
        c.apply(&watcher::Event::InitDone);
        c.expect_creations("j1", 1, t);
        // The watch restarts (a 410 Gone): the new pod arrives in the relist.
        c.apply(&watcher::Event::Init);
        c.apply(&watcher::Event::InitApply(pod("p1", "j1", true)));
        assert!(!c.creations_satisfied("j1", t), "the reconciles cannot see p1 yet");
        assert!(c.pods_of("j1").is_empty());
        c.apply(&watcher::Event::InitDone);
        assert!(c.creations_satisfied("j1", t));
        assert_eq!(c.pods_of("j1").len(), 1);
    }

    /// The reconcile's read: pods and expectations agree (upstream reads the expectations before the
    /// pods for the same reason). Once the expectations are met, every expected pod is in the pods read.
    #[test]
    fn pods_and_expectations_are_read_together() {
        let c = PodCache::default();
        let t = Instant::now();
        c.apply(&watcher::Event::Init);
        c.apply(&watcher::Event::InitDone);
        c.expect_creations("j1", 2, t);
        for (i, uid) in ["a", "b"].into_iter().enumerate() {
            let (pods, satisfied) = c.pods_and_expectations("j1", t);
            assert_eq!((pods.len(), satisfied), (i, false));
            c.apply(&watcher::Event::Apply(pod(uid, "j1", true)));
        }
        let (pods, satisfied) = c.pods_and_expectations("j1", t);
        assert_eq!((pods.len(), satisfied), (2, true));
        assert_eq!(c.pods_and_expectations("other", t), (Vec::new(), true));
    }

    #[test]
    fn expectations_expire_like_upstreams() {
        let c = PodCache::default();
        let t = Instant::now();
        c.expect_creations("j1", 1, t);
        assert!(!c.creations_satisfied("j1", t + EXPECTATIONS_TTL - Duration::from_secs(1)));
        assert!(c.creations_satisfied("j1", t + EXPECTATIONS_TTL));
    }

    #[test]
    fn a_pod_deleted_before_it_was_seen_counts_as_seen() {
        let c = PodCache::default();
        let t = Instant::now();
        c.expect_creations("j1", 1, t);
        c.apply(&watcher::Event::Delete(pod("a", "j1", true)));
        assert!(c.creations_satisfied("j1", t));
    }

    #[test]
    fn a_removed_finalizer_counts_as_removed_until_the_cache_shows_it() {
        let c = PodCache::default();
        let stale = pod("a", "j1", true);
        c.apply(&watcher::Event::Apply(stale.clone()));
        assert!(c.is_tracked(&stale));
        c.expect_finalizer_removal("a");
        assert!(
            !c.is_tracked(&stale),
            "a stale copy with the finalizer is not tracked again"
        );
        c.apply(&watcher::Event::Apply(pod("a", "j1", false)));
        assert!(!c.is_tracked(&pod("a", "j1", false)));
        // Settled: a pod that really carries the finalizer again would be tracked.
        assert!(c.is_tracked(&stale));
    }

    #[test]
    fn a_relist_replaces_the_pods_and_drops_those_gone() {
        let c = PodCache::default();
        c.apply(&watcher::Event::Init);
        c.apply(&watcher::Event::InitApply(pod("a", "j1", true)));
        c.apply(&watcher::Event::InitApply(pod("b", "j1", true)));
        c.apply(&watcher::Event::InitDone);
        assert!(c.is_ready());
        assert_eq!(c.pods_of("j1").len(), 2);
        c.apply(&watcher::Event::Init);
        c.apply(&watcher::Event::InitApply(pod("b", "j1", true)));
        assert_eq!(
            c.pods_of("j1").len(),
            2,
            "the old pods serve reads until the list completes"
        );
        c.apply(&watcher::Event::InitDone);
        let left: Vec<_> = c
            .pods_of("j1")
            .iter()
            .map(|p| p.metadata.uid.clone().unwrap())
            .collect();
        assert_eq!(left, vec!["b".to_string()]);
    }
}
