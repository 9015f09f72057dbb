//! Which cached Jobs are a JobSet's children, without scanning the whole Job cache per reconcile.
//!
//! [`ChildIndex`] maps (namespace, `jobset.sigs.k8s.io/jobset-name` label) to the names of the Jobs
//! carrying it. It is fed by the Job watch's inspector ([`crate::informers::Hub::inspect`]), which runs
//! after the cache applied an event and before any reconcile hears of it, so the index is never behind
//! the cache a reconcile reads. It only names candidates: [`ChildIndex::children`] reads each from the
//! cache and keeps those whose label (and, for the caller, controller owner) still match, so an entry the
//! index keeps too long (between a re-list's start and its end) is harmless. A re-list's end rebuilds the
//! index from the cache.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use k8s_openapi::api::batch::v1::Job;
use kube::ResourceExt;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use kwas_api_types::names::labels;

/// (namespace, JobSet name).
type Key = (String, String);

/// The cached Jobs by the JobSet named in their label (see the module docs).
#[derive(Default)]
pub struct ChildIndex {
    state: parking_lot::Mutex<State>,
}

#[derive(Default)]
struct State {
    /// (namespace, JobSet name) -> names of the Jobs labelled with it.
    by_jobset: HashMap<Key, BTreeSet<String>>,
    /// (namespace, Job name) -> the JobSet name of its label.
    of_job: HashMap<Key, String>,
}

impl std::fmt::Debug for ChildIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChildIndex")
            .field("jobs", &self.state.lock().of_job.len())
            .finish()
    }
}

fn job_key(job: &Job) -> Key {
    (job.namespace().unwrap_or_default(), job.name_any())
}

impl State {
    fn remove(&mut self, job: &Key) {
        let Some(jobset) = self.of_job.remove(job) else {
            return;
        };
        let key = (job.0.clone(), jobset);
        if let Some(names) = self.by_jobset.get_mut(&key) {
            names.remove(&job.1);
            if names.is_empty() {
                self.by_jobset.remove(&key);
            }
        }
    }

    fn put(&mut self, job: &Job) {
        let key = job_key(job);
        let jobset = job.labels().get(labels::JOBSET_NAME);
        if self.of_job.get(&key) == jobset {
            return;
        }
        self.remove(&key);
        if let Some(jobset) = jobset {
            self.by_jobset
                .entry((key.0.clone(), jobset.clone()))
                .or_default()
                .insert(key.1.clone());
            self.of_job.insert(key, jobset.clone());
        }
    }
}

impl ChildIndex {
    /// An index that follows `cache`'s watch events (pass it to the watch's inspector, [`ChildIndex::seen`]).
    pub fn new() -> Arc<Self> {
        Arc::default()
    }

    /// A watch event of Jobs, after `cache` applied it.
    pub fn seen(&self, event: &watcher::Event<Job>, cache: &Store<Job>) {
        let mut state = self.state.lock();
        match event {
            watcher::Event::Apply(job) | watcher::Event::InitApply(job) => state.put(job),
            watcher::Event::Delete(job) => state.remove(&job_key(job)),
            watcher::Event::Init => {}
            // The cache now holds the re-list's result: what it no longer has goes.
            watcher::Event::InitDone => {
                *state = State::default();
                for job in cache.state() {
                    state.put(&job);
                }
            }
        }
    }

    /// The cached Jobs of `namespace` labelled with JobSet `jobset`, in name order.
    pub fn children(&self, cache: &Store<Job>, namespace: &str, jobset: &str) -> Vec<Arc<Job>> {
        let names: Vec<String> = self
            .state
            .lock()
            .by_jobset
            .get(&(namespace.to_string(), jobset.to_string()))
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default();
        names
            .into_iter()
            .filter_map(|name| cache.get(&ObjectRef::new(&name).within(namespace)))
            .filter(|j| j.labels().get(labels::JOBSET_NAME).map(String::as_str) == Some(jobset))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::runtime::reflector;

    fn job(ns: &str, name: &str, jobset: Option<&str>) -> Job {
        let mut j = Job::default();
        j.metadata.namespace = Some(ns.into());
        j.metadata.name = Some(name.into());
        if let Some(js) = jobset {
            j.metadata.labels = Some([(labels::JOBSET_NAME.to_string(), js.to_string())].into());
        }
        j
    }

    fn names(jobs: Vec<Arc<Job>>) -> Vec<String> {
        jobs.iter().map(|j| j.name_any()).collect()
    }

    #[test]
    fn the_index_follows_creations_relabels_deletions_and_relists() {
        let (cache, mut writer) = reflector::store::<Job>();
        let index = ChildIndex::new();
        let mut feed = |e: watcher::Event<Job>| {
            writer.apply_watcher_event(&e);
            index.seen(&e, &cache);
        };
        feed(watcher::Event::Apply(job("ns", "a-1", Some("a"))));
        feed(watcher::Event::Apply(job("ns", "a-0", Some("a"))));
        feed(watcher::Event::Apply(job("other", "a-9", Some("a"))));
        feed(watcher::Event::Apply(job("ns", "b-0", Some("b"))));
        feed(watcher::Event::Apply(job("ns", "plain", None)));
        assert_eq!(names(index.children(&cache, "ns", "a")), ["a-0", "a-1"]);
        assert_eq!(names(index.children(&cache, "other", "a")), ["a-9"]);
        // Relabelled to another JobSet, then unlabelled.
        feed(watcher::Event::Apply(job("ns", "a-1", Some("b"))));
        assert_eq!(names(index.children(&cache, "ns", "a")), ["a-0"]);
        assert_eq!(names(index.children(&cache, "ns", "b")), ["a-1", "b-0"]);
        feed(watcher::Event::Apply(job("ns", "a-1", None)));
        assert_eq!(names(index.children(&cache, "ns", "b")), ["b-0"]);
        // Deleted.
        feed(watcher::Event::Delete(job("ns", "a-0", Some("a"))));
        assert!(index.children(&cache, "ns", "a").is_empty());
        // A re-list that no longer has b-0 (deleted while the watch was down) but has a new one.
        feed(watcher::Event::Init);
        feed(watcher::Event::InitApply(job("ns", "c-0", Some("c"))));
        feed(watcher::Event::InitApply(job("other", "a-9", Some("a"))));
        feed(watcher::Event::InitDone);
        assert!(index.children(&cache, "ns", "b").is_empty());
        assert_eq!(names(index.children(&cache, "ns", "c")), ["c-0"]);
        assert_eq!(names(index.children(&cache, "other", "a")), ["a-9"]);
        assert_eq!(index.state.lock().of_job.len(), 2);
    }
}
