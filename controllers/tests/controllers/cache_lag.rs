//! The Job controller's reconcile on lagging caches: a model of `job::reconcile_managed` (the same pure
//! steps, [`PodCache`] and its expectations, [`Written`]'s start and current-Job knowledge, the
//! resourceVersion checks) against a model API server whose
//! pod and Job events reach the caches late, in any interleaving with reconciles and pod outcomes. Under
//! every interleaving no pod is created twice (active pods never exceed what the Job wants) and, once the
//! caches catch up, the Job's counters equal the pods' terminal states.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::batch::v1::{Job, JobStatus};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::watcher;
use kwas_controllers::job::cache::PodCache;
use kwas_controllers::job::plan::{JobConfig, SchedulingDecision, flush, plan_with, track_with};
use kwas_controllers::job::pods::{PodOutcome, PodView};
use kwas_controllers::job::written::Written;
use proptest::prelude::*;
use serde_json::json;

const UID: &str = "job-uid";

#[derive(Clone, Copy, Debug)]
enum Op {
    /// One pod event reaches the cache.
    DeliverPod,
    /// The next stored version of the Job reaches the cache.
    DeliverJob,
    /// A running pod ends (the `usize` picks which; `bool`: succeeded).
    End(usize, bool),
    Reconcile,
    /// The pod watch restarts (a 410 Gone): a new list of what is stored begins; reconciles go on reading
    /// the previous pods until it completes.
    RelistBegin,
    /// The list that began completes.
    RelistEnd,
    /// A user edits the Job (a label, say): a new version with the same status, which makes the
    /// controller's conditional status write conflict.
    UserEdit,
    /// The controller restarts: what it remembered (its writes, its expectations) is lost, and its caches
    /// start from consistent lists of what is stored (kube-runtime's default list semantic).
    Restart,
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    proptest::collection::vec(
        prop_oneof![
            3 => Just(Op::DeliverPod),
            1 => Just(Op::DeliverJob),
            2 => (any::<usize>(), any::<bool>()).prop_map(|(i, s)| Op::End(i, s)),
            3 => Just(Op::Reconcile),
            1 => Just(Op::Restart),
            1 => Just(Op::UserEdit),
            1 => Just(Op::RelistBegin),
            1 => Just(Op::RelistEnd),
        ],
        0..80,
    )
}

#[derive(Clone, Debug)]
struct ApiPod {
    phase: &'static str,
    finalizer: bool,
}

struct Model {
    completions: i32,
    parallelism: i32,
    /// The stored Job's status and resourceVersion, and every version not yet delivered to the cache.
    status: JobStatus,
    rv: u64,
    job_versions: VecDeque<(JobStatus, u64)>,
    cached: (JobStatus, u64),
    pods: BTreeMap<String, ApiPod>,
    next_pod: u32,
    pod_events: VecDeque<watcher::Event<Pod>>,
    cache: PodCache,
    /// A pod list in progress: watch events wait for it.
    relisting: bool,
    written: Written,
    t0: Instant,
    /// Pods that ever ended, by how.
    ended: BTreeMap<String, bool>,
}

struct Stale;

impl Model {
    fn new(completions: i32, parallelism: i32) -> Self {
        let cache = PodCache::default();
        cache.apply(&watcher::Event::Init);
        cache.apply(&watcher::Event::InitDone);
        Model {
            completions,
            parallelism,
            status: JobStatus::default(),
            rv: 1,
            job_versions: VecDeque::new(),
            cached: (JobStatus::default(), 1),
            pods: BTreeMap::new(),
            next_pod: 0,
            pod_events: VecDeque::new(),
            cache,
            relisting: false,
            written: Written::default(),
            t0: Instant::now(),
            ended: BTreeMap::new(),
        }
    }

    fn job(&self, status: &JobStatus, rv: u64) -> Job {
        let mut job: Job = serde_json::from_value(json!({
            "metadata": {"name": "j", "namespace": "default", "uid": UID, "resourceVersion": rv.to_string()},
            "spec": {
                "completions": self.completions, "parallelism": self.parallelism, "backoffLimit": 1000,
                "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "i"}]}}
            }
        }))
        .unwrap();
        job.status = Some(status.clone());
        job
    }

    fn pod_object(&self, uid: &str, p: &ApiPod) -> Pod {
        let finalizers: Vec<&str> = if p.finalizer {
            vec!["batch.kubernetes.io/job-tracking"]
        } else {
            vec![]
        };
        serde_json::from_value(json!({
            "metadata": {
                "name": uid, "namespace": "default", "uid": uid, "finalizers": finalizers,
                "creationTimestamp": "2026-01-01T00:00:00Z",
                "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": UID, "controller": true}]
            },
            "status": {"phase": p.phase}
        }))
        .unwrap()
    }

    fn pod_changed(&mut self, uid: &str) {
        let event = match self.pods.get(uid) {
            Some(p) => watcher::Event::Apply(self.pod_object(uid, p)),
            None => watcher::Event::Delete(self.pod_object(
                uid,
                &ApiPod {
                    phase: "Running",
                    finalizer: false,
                },
            )),
        };
        self.pod_events.push_back(event);
    }

    fn write_status(&mut self, expected_rv: u64, status: JobStatus) -> Result<u64, Stale> {
        if expected_rv != self.rv {
            return Err(Stale);
        }
        self.rv += 1;
        self.status = status.clone();
        self.job_versions.push_back((status, self.rv));
        Ok(self.rv)
    }

    fn remove_finalizer(&mut self, pod: &Pod) {
        let uid = pod.metadata.uid.clone().unwrap();
        let cached_has = pod
            .metadata
            .finalizers
            .iter()
            .flatten()
            .any(|f| f == "batch.kubernetes.io/job-tracking");
        if !cached_has {
            return;
        }
        if let Some(p) = self.pods.get_mut(&uid)
            && p.finalizer
        {
            p.finalizer = false;
            self.pod_changed(&uid);
        }
        self.cache.expect_finalizer_removal(&uid);
    }

    /// `reconcile` and `reconcile_managed`, step for step (scheduling objects aside).
    fn reconcile(&mut self, fresh: bool) -> Result<(), Stale> {
        let (job, mut current, base) = if fresh {
            (self.job(&self.status, self.rv), false, None)
        } else {
            let cached = Arc::new(self.job(&self.cached.0, self.cached.1));
            let start = self.written.start(&cached);
            ((*start.job).clone(), start.current, Some(self.cached.1.to_string()))
        };
        let status = job.status.clone().unwrap_or_default();
        let mut rv: u64 = job.metadata.resource_version.as_deref().unwrap().parse().unwrap();
        let now = Timestamp::from_second(1_900_000_000).unwrap();
        if !self.cache.creations_satisfied(UID, self.t0) {
            return Ok(());
        }
        let pods: Vec<Pod> = self.cache.pods_of(UID).iter().map(|p| (**p).clone()).collect();
        let views: Vec<PodView> = pods
            .iter()
            .map(|p| PodView {
                tracked: self.cache.is_tracked(p),
                ..PodView::of(p)
            })
            .collect();
        let outcomes = PodOutcome::all(&pods);
        let tracking = track_with(&job, &views, &outcomes, now);
        let mut written = status.clone();
        if tracking.changed {
            rv = self.write_status(rv, tracking.status.clone())?;
            if let Some(base) = &base {
                self.written.remember(base, self.job(&tracking.status, rv));
                current = true;
            }
            written = tracking.status.clone();
        }
        let mut still_tracked: HashSet<String> = views.iter().filter(|p| p.tracked).map(|p| p.uid.clone()).collect();
        for pod in pods
            .iter()
            .filter(|p| tracking.remove_finalizers.contains(p.metadata.name.as_ref().unwrap()))
        {
            self.remove_finalizer(pod);
            still_tracked.remove(pod.metadata.uid.as_ref().unwrap());
        }
        let mut status = tracking.status;
        flush(&job, &mut status, &still_tracked);
        let config = JobConfig {
            backoff_base: Duration::ZERO,
            backoff_max: Duration::ZERO,
        };
        let decided = plan_with(
            &job,
            status,
            &views,
            &outcomes,
            &SchedulingDecision::Group(None),
            now,
            &config,
        );
        if !fresh && !current && (!decided.create.is_empty() || !decided.delete.is_empty()) {
            if self.rv != rv {
                return Err(Stale);
            }
            self.written.verify(UID);
        }
        for name in &decided.delete {
            if let Some(pod) = pods.iter().find(|p| p.metadata.name.as_deref() == Some(name.as_str())) {
                self.remove_finalizer(pod);
                if self.pods.remove(name).is_some() {
                    self.pod_changed(name);
                }
            }
        }
        self.cache.expect_creations(UID, decided.create.len(), self.t0);
        for _ in &decided.create {
            self.next_pod += 1;
            let uid = format!("p{}", self.next_pod);
            self.pods.insert(
                uid.clone(),
                ApiPod {
                    phase: "Running",
                    finalizer: true,
                },
            );
            self.pod_changed(&uid);
        }
        if decided.status != written {
            let rv = self.write_status(rv, decided.status.clone())?;
            if let Some(base) = &base {
                self.written.remember(base, self.job(&decided.status, rv));
            }
        }
        Ok(())
    }

    fn reconcile_with_retry(&mut self) {
        if self.reconcile(false).is_err() {
            // The controller reads the Job and runs once more; a second conflict waits for a retry.
            self.written.doubt(UID);
            let _ = self.reconcile(true);
        }
    }

    fn step(&mut self, op: Op) {
        match op {
            Op::DeliverPod => {
                if !self.relisting
                    && let Some(e) = self.pod_events.pop_front()
                {
                    self.cache.apply(&e);
                }
            }
            Op::RelistBegin => {
                if !self.relisting {
                    // The list holds what is stored now; the events before it are superseded.
                    self.pod_events.clear();
                    self.cache.apply(&watcher::Event::Init);
                    let pods: Vec<Pod> = self.pods.iter().map(|(uid, p)| self.pod_object(uid, p)).collect();
                    for p in pods {
                        self.cache.apply(&watcher::Event::InitApply(p));
                    }
                    self.relisting = true;
                }
            }
            Op::RelistEnd => {
                if self.relisting {
                    self.cache.apply(&watcher::Event::InitDone);
                    self.relisting = false;
                }
            }
            Op::DeliverJob => {
                if let Some(v) = self.job_versions.pop_front() {
                    self.cached = v;
                }
            }
            Op::End(i, succeeded) => {
                let running: Vec<String> = self
                    .pods
                    .iter()
                    .filter(|(_, p)| p.phase == "Running")
                    .map(|(u, _)| u.clone())
                    .collect();
                if !running.is_empty() {
                    let uid = running[i % running.len()].clone();
                    if let Some(p) = self.pods.get_mut(&uid) {
                        p.phase = if succeeded { "Succeeded" } else { "Failed" };
                    }
                    self.ended.insert(uid.clone(), succeeded);
                    self.pod_changed(&uid);
                }
            }
            Op::Reconcile => self.reconcile_with_retry(),
            Op::Restart => self.restart(),
            Op::UserEdit => {
                self.rv += 1;
                self.job_versions.push_back((self.status.clone(), self.rv));
            }
        }
    }

    /// A new process: fresh memory and expectations, caches listed from what is stored.
    fn restart(&mut self) {
        self.written = Written::default();
        self.cache = PodCache::default();
        self.cache.apply(&watcher::Event::Init);
        let pods: Vec<Pod> = self.pods.iter().map(|(uid, p)| self.pod_object(uid, p)).collect();
        for p in pods {
            self.cache.apply(&watcher::Event::InitApply(p));
        }
        self.cache.apply(&watcher::Event::InitDone);
        self.pod_events.clear();
        self.relisting = false;
        self.job_versions.clear();
        self.cached = (self.status.clone(), self.rv);
    }

    fn succeeded_pods(&self) -> i32 {
        self.ended.values().filter(|s| **s).count() as i32
    }

    /// No pod is created twice: running pods never exceed what the Job wants.
    fn check_no_excess(&self) -> Result<(), TestCaseError> {
        let running = self.pods.values().filter(|p| p.phase == "Running").count() as i32;
        let wanted = self.parallelism.min(self.completions - self.succeeded_pods()).max(0);
        prop_assert!(
            running <= wanted,
            "{running} pods running, the Job wants {wanted} ({} succeeded)",
            self.succeeded_pods()
        );
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn lagging_caches_never_create_a_pod_twice_nor_miscount(
        completions in 1..6i32,
        parallelism in 1..4i32,
        ops in ops(),
    ) {
        let mut m = Model::new(completions, parallelism);
        for op in ops {
            m.step(op);
            m.check_no_excess()?;
        }
        // The caches catch up and the controller settles.
        for _ in 0..50 {
            m.step(Op::RelistEnd);
            while let Some(e) = m.pod_events.pop_front() {
                m.cache.apply(&e);
            }
            if let Some(v) = m.job_versions.back().cloned() {
                m.job_versions.clear();
                m.cached = v;
            }
            m.reconcile_with_retry();
            m.check_no_excess()?;
        }
        let uncounted = m.status.uncounted_terminated_pods.clone().unwrap_or_default();
        prop_assert!(
            uncounted.succeeded.unwrap_or_default().is_empty() && uncounted.failed.unwrap_or_default().is_empty(),
            "pods left uncounted: {:?}", m.status.uncounted_terminated_pods
        );
        let failed = m.ended.values().filter(|s| !**s).count() as i32;
        prop_assert_eq!(m.status.succeeded.unwrap_or(0), m.succeeded_pods(), "succeeded");
        prop_assert_eq!(m.status.failed.unwrap_or(0), failed, "failed");
    }
}
