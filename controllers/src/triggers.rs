//! Which watch events re-run a reconcile: only those that change what it computes.
//!
//! kube-runtime's `owns` re-runs the owner's reconcile on every event of a child; the scheduler's binding
//! of a pod or its write of a PodGroup's status would each re-run the Job's, for nothing (upstream's Job
//! controller filters its pod updates the same way: `updatePod` ignores updates that change no field it
//! reads). [`relevant`] keeps, per object, a hash of what the reconcile reads of it (its *projection*) and
//! passes an event only when that hash changed, the object is new, or it was deleted. Passing too much is
//! harmless (one more reconcile); the projections below include everything the reconciles read.
//!
//! The table of hashes loses an entry only on a deletion event; objects deleted while the watch was
//! disconnected keep theirs (a few bytes each) until the process restarts, as kube-runtime's
//! `predicate_filter` does.

use std::collections::{HashMap, HashSet};
use std::hash::{DefaultHasher, Hash, Hasher};

use futures::{Stream, StreamExt};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ContainerStatus, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use kube::runtime::watcher;

/// The events of `events` that change `projection` of their object (plus new and deleted objects), as the
/// objects a controller's `owns_stream` expects. An object that a relist (after a watch restart) no longer
/// holds was deleted while the watch was down: it is passed once as a stub carrying its identity and owner
/// references (what `owns_stream` maps to the owner), so its owner re-runs as it would on the deletion.
pub fn relevant<K>(
    events: impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send,
    projection: fn(&K) -> u64,
) -> impl Stream<Item = Result<K, watcher::Error>> + Send
where
    K: Resource + Default + Send,
{
    relevant_with(events, projection, stub_default::<K>)
}

fn stub_default<K: Resource + Default>(meta: ObjectMeta) -> K {
    let mut stub = K::default();
    *stub.meta_mut() = meta;
    stub
}

/// [`relevant`] for a kind without `Default`: `stub` builds the object passed for one gone while the
/// watch was down.
pub fn relevant_with<K>(
    events: impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send,
    projection: fn(&K) -> u64,
    stub: fn(ObjectMeta) -> K,
) -> impl Stream<Item = Result<K, watcher::Error>> + Send
where
    K: Resource + Send,
{
    // Object key -> (projection hash, identity and owners).
    let mut seen: HashMap<String, (u64, ObjectMeta)> = HashMap::new();
    // The keys listed by a list in progress.
    let mut listed: Option<HashSet<String>> = None;
    // Objects a list in progress changed, passed when it completes: the caches the reconciles read
    // (kube-runtime's reflector stores, the Job controller's pod cache) show a relist's objects only
    // from then on, so a reconcile run on one earlier would read the old object, find nothing new, and
    // never run again for this change (it is recorded as seen).
    let mut changed: Vec<K> = Vec::new();
    events
        .map(move |event| {
            let out: Vec<Result<K, watcher::Error>> = match event {
                Err(e) => vec![Err(e)],
                Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) => {
                    let k = key(&o);
                    if let Some(l) = listed.as_mut() {
                        l.insert(k.clone());
                    }
                    let p = projection(&o);
                    if seen.get(&k).is_some_and(|(old, _)| *old == p) {
                        // Unchanged projection: its owners (part of it) are the ones kept.
                        return futures::stream::iter(Vec::new());
                    }
                    seen.insert(k, (p, identity(o.meta())));
                    if listed.is_some() {
                        changed.push(o);
                        return futures::stream::iter(Vec::new());
                    }
                    vec![Ok(o)]
                }
                Ok(watcher::Event::Delete(o)) => {
                    seen.remove(&key(&o));
                    vec![Ok(o)]
                }
                Ok(watcher::Event::Init) => {
                    listed = Some(HashSet::new());
                    // A list restarted before the last completed: its changes come again in this one
                    // (their projections are recorded, so they would not): keep them.
                    Vec::new()
                }
                Ok(watcher::Event::InitDone) => {
                    let Some(l) = listed.take() else {
                        return futures::stream::iter(Vec::new());
                    };
                    let gone: Vec<String> = seen.keys().filter(|k| !l.contains(*k)).cloned().collect();
                    let gone = gone
                        .into_iter()
                        .filter_map(|k| seen.remove(&k))
                        .map(|(_, meta)| Ok(stub(meta)));
                    std::mem::take(&mut changed).into_iter().map(Ok).chain(gone).collect()
                }
            };
            futures::stream::iter(out)
        })
        .flatten()
}

/// What identifies an object and its owners, kept to re-run its owner if it disappears while the watch
/// is down.
fn identity(m: &ObjectMeta) -> ObjectMeta {
    ObjectMeta {
        name: m.name.clone(),
        namespace: m.namespace.clone(),
        uid: m.uid.clone(),
        owner_references: m.owner_references.clone(),
        ..ObjectMeta::default()
    }
}

fn key<K: Resource>(o: &K) -> String {
    let m = o.meta();
    match &m.uid {
        Some(uid) => uid.clone(),
        None => format!(
            "{}/{}",
            m.namespace.as_deref().unwrap_or(""),
            m.name.as_deref().unwrap_or("")
        ),
    }
}

/// What the Job reconcile reads of a pod: its phase, deletion, finalizers, labels, annotations and owners,
/// readiness, its containers' restarts and terminations, and (once terminal, for the pod failure policy)
/// its conditions. Not its node (a binding changes nothing the Job computes) nor the other conditions of a
/// running pod (`PodScheduled`, `Initialized`).
pub fn job_pod_projection(pod: &Pod) -> u64 {
    let mut h = DefaultHasher::new();
    hash_metadata(pod, &mut h);
    let status = pod.status.as_ref();
    let phase = status.and_then(|s| s.phase.as_deref()).unwrap_or("Pending");
    phase.hash(&mut h);
    let terminal = matches!(phase, "Succeeded" | "Failed");
    for c in status.and_then(|s| s.conditions.as_deref()).unwrap_or_default() {
        if terminal || c.type_ == "Ready" || c.type_ == "DisruptionTarget" {
            (&c.type_, &c.status).hash(&mut h);
        }
    }
    let containers = |list: Option<&Vec<ContainerStatus>>, h: &mut DefaultHasher| {
        for c in list.into_iter().flatten() {
            (&c.name, c.restart_count).hash(h);
            if let Some(t) = c.state.as_ref().and_then(|s| s.terminated.as_ref()) {
                (t.exit_code, &t.reason).hash(h);
            }
        }
    };
    containers(status.and_then(|s| s.container_statuses.as_ref()), &mut h);
    containers(status.and_then(|s| s.init_container_statuses.as_ref()), &mut h);
    h.finish()
}

/// What a reconcile reads of an object whose status it does not need to react to: its spec (its
/// generation), deletion, finalizers, labels, annotations and owners. For a scheduling object (Workload,
/// PodGroup) the status is the scheduler's; for the Job, the Job controller's own (its writes must not
/// re-run it).
pub fn spec_projection<K: Resource>(o: &K) -> u64 {
    let mut h = DefaultHasher::new();
    o.meta().generation.hash(&mut h);
    hash_metadata(o, &mut h);
    h.finish()
}

/// What the JobSet reconcile reads of a child's PodGroup: its spec and metadata, and whether its gang is
/// broken (placed once, below its `minCount` now: the opt-in gang health rule of
/// [`crate::jobset::gangs`]); not the scheduler's other status writes.
pub fn jobset_group_projection(group: &k8s_openapi::api::scheduling::v1alpha3::PodGroup) -> u64 {
    use kwas_api_types::names::conditions::{POD_GROUP_INITIALLY_SCHEDULED, POD_GROUP_SATISFIED};
    let conditions: Vec<_> = group
        .status
        .iter()
        .flat_map(|s| s.conditions.iter().flatten())
        .collect();
    let is = |type_: &str, status: &str| conditions.iter().any(|c| c.type_ == type_ && c.status == status);
    let broken = is(POD_GROUP_INITIALLY_SCHEDULED, "True") && is(POD_GROUP_SATISFIED, "False");
    let mut h = DefaultHasher::new();
    spec_projection(group).hash(&mut h);
    broken.hash(&mut h);
    h.finish()
}

/// Whether an active Job counts as ready in a JobSet's `replicatedJobsStatus` (the JobSet's policy reads it
/// too): its ready and succeeded pods reach
/// `min(parallelism, completions)` (parallelism 1 when unset, as the API defaults it).
pub fn job_counts_ready(job: &Job) -> bool {
    let spec = job.spec.as_ref();
    let mut pods = spec.and_then(|s| s.parallelism).unwrap_or(1);
    if let Some(c) = spec.and_then(|s| s.completions) {
        pods = pods.min(c);
    }
    let status = job.status.as_ref();
    let done = status.map_or(0, |s| {
        i64::from(s.ready.unwrap_or(0)) + i64::from(s.succeeded.unwrap_or(0))
    });
    done >= i64::from(pods)
}

/// What the JobSet reconcile reads of a child Job: its spec (generation), metadata, conditions, whether its
/// ready and succeeded pods reach its parallelism and whether any pod is active. Not the counters
/// themselves, which the Job controller rewrites as each pod starts and ends.
pub fn jobset_job_projection(job: &Job) -> u64 {
    let mut h = DefaultHasher::new();
    job.metadata.generation.hash(&mut h);
    hash_metadata(job, &mut h);
    let status = job.status.as_ref();
    // `replicatedJobsStatus` counts whether a Job is ready and whether any of its pods is active: those two
    // facts, not the counts.
    job_counts_ready(job).hash(&mut h);
    status.and_then(|s| s.active).is_some_and(|a| a > 0).hash(&mut h);
    for c in status.and_then(|s| s.conditions.as_ref()).into_iter().flatten() {
        (&c.type_, &c.status).hash(&mut h);
    }
    h.finish()
}

/// The metadata every reconcile reads: deletion, finalizers, labels, annotations and owners.
fn hash_metadata<K: Resource>(o: &K, h: &mut DefaultHasher) {
    let m = o.meta();
    m.deletion_timestamp.is_some().hash(h);
    m.finalizers.hash(h);
    m.labels.hash(h);
    m.annotations.hash(h);
    for r in m.owner_references.iter().flatten() {
        (&r.uid, r.controller).hash(h);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{PodCondition, PodSpec, PodStatus};
    use k8s_openapi::api::scheduling::v1alpha3::PodGroup;

    fn pod(phase: &str) -> Pod {
        let mut p = Pod::default();
        p.metadata.uid = Some("u1".into());
        p.status = Some(PodStatus {
            phase: Some(phase.into()),
            ..PodStatus::default()
        });
        p
    }

    async fn passed(events: Vec<watcher::Event<Pod>>) -> usize {
        let stream = futures::stream::iter(events.into_iter().map(Ok));
        relevant(stream, job_pod_projection).count().await
    }

    #[tokio::test]
    async fn a_binding_does_not_re_run_the_job_but_a_phase_change_and_a_deletion_do() {
        let created = pod("Pending");
        let mut bound = created.clone();
        bound.spec = Some(PodSpec {
            node_name: Some("n1".into()),
            ..PodSpec::default()
        });
        bound.status.as_mut().unwrap().conditions = Some(vec![PodCondition {
            type_: "PodScheduled".into(),
            status: "True".into(),
            ..PodCondition::default()
        }]);
        let running = pod("Running");
        let n = passed(vec![
            watcher::Event::Apply(created),
            watcher::Event::Apply(bound),
            watcher::Event::Apply(running.clone()),
            watcher::Event::Apply(running.clone()),
            watcher::Event::Delete(running),
        ])
        .await;
        assert_eq!(
            n, 3,
            "creation, Running and the deletion pass; the binding and the repeat do not"
        );
    }

    #[tokio::test]
    async fn an_object_gone_while_the_watch_was_down_re_runs_its_owner_once() {
        let mut owned = pod("Running");
        owned.metadata.owner_references = Some(vec![k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
            kind: "Job".into(),
            name: "j".into(),
            uid: "job-uid".into(),
            controller: Some(true),
            ..Default::default()
        }]);
        let mut kept = pod("Running");
        kept.metadata.uid = Some("u2".into());
        let events = vec![
            watcher::Event::Init,
            watcher::Event::InitApply(owned.clone()),
            watcher::Event::InitApply(kept.clone()),
            watcher::Event::InitDone,
            // The watch restarts; the relist no longer holds `owned`.
            watcher::Event::Init,
            watcher::Event::InitApply(kept),
            watcher::Event::InitDone,
        ];
        let out: Vec<Pod> = relevant(futures::stream::iter(events.into_iter().map(Ok)), job_pod_projection)
            .map(Result::unwrap)
            .collect()
            .await;
        assert_eq!(out.len(), 3, "two listed, then the one gone");
        let gone = &out[2];
        assert_eq!(gone.metadata.uid.as_deref(), Some("u1"));
        assert_eq!(gone.metadata.owner_references.as_ref().unwrap()[0].uid, "job-uid");
    }

    /// A pod that changed while the watch was down arrives in the relist; the caches the reconciles read
    /// show it only once the list completes, so it re-runs its owner then, not before (a reconcile run
    /// earlier would read the old pod and never run again for the change), and once even when the list
    /// restarted before completing.
    #[tokio::test]
    async fn a_change_seen_in_a_relist_passes_when_the_list_completes() {
        let mut other = pod("Running");
        other.metadata.uid = Some("u2".into());
        let mut events = vec![
            watcher::Event::Init,
            watcher::Event::InitApply(pod("Running")),
            watcher::Event::InitApply(other.clone()),
            watcher::Event::InitDone,
            watcher::Event::Init,
            watcher::Event::InitApply(pod("Succeeded")),
            watcher::Event::InitApply(other.clone()),
            watcher::Event::Init,
            watcher::Event::InitApply(pod("Succeeded")),
            watcher::Event::InitApply(other),
        ];
        let run = |events: Vec<watcher::Event<Pod>>| async move {
            relevant(futures::stream::iter(events.into_iter().map(Ok)), job_pod_projection)
                .map(Result::unwrap)
                .collect::<Vec<Pod>>()
                .await
        };
        assert_eq!(
            run(events.clone()).await.len(),
            2,
            "nothing passes before the relist completes"
        );
        events.push(watcher::Event::InitDone);
        let out = run(events).await;
        assert_eq!(out.len(), 3, "two listed, then the one that changed, once");
        assert_eq!(out[2].status.as_ref().unwrap().phase.as_deref(), Some("Succeeded"));
    }

    #[test]
    fn a_jobset_re_runs_on_a_childs_conditions_and_readiness_not_its_counters() {
        let mut job = Job {
            spec: Some(k8s_openapi::api::batch::v1::JobSpec {
                parallelism: Some(4),
                ..Default::default()
            }),
            status: Some(k8s_openapi::api::batch::v1::JobStatus {
                active: Some(1),
                ..Default::default()
            }),
            ..Job::default()
        };
        let base = jobset_job_projection(&job);
        let status = job.status.as_mut().unwrap();
        status.active = Some(3);
        status.ready = Some(1);
        status.succeeded = Some(1);
        assert_eq!(base, jobset_job_projection(&job), "counters are not read");
        job.status.as_mut().unwrap().ready = Some(3);
        let ready = jobset_job_projection(&job);
        assert_ne!(base, ready, "ready + succeeded reached parallelism");
        job.status.as_mut().unwrap().active = Some(0);
        let idle = jobset_job_projection(&job);
        assert_ne!(ready, idle, "no pod active any more");
        job.status.as_mut().unwrap().conditions = Some(vec![k8s_openapi::api::batch::v1::JobCondition {
            type_: "Complete".into(),
            status: "True".into(),
            ..Default::default()
        }]);
        assert_ne!(idle, jobset_job_projection(&job));
    }

    #[tokio::test]
    async fn a_terminal_pods_conditions_and_exit_codes_count() {
        let failed = pod("Failed");
        let mut disrupted = failed.clone();
        disrupted.status.as_mut().unwrap().conditions = Some(vec![PodCondition {
            type_: "ConfigIssue".into(),
            status: "True".into(),
            ..PodCondition::default()
        }]);
        assert_ne!(job_pod_projection(&failed), job_pod_projection(&disrupted));
        let mut running = pod("Running");
        let before = job_pod_projection(&running);
        running.status.as_mut().unwrap().conditions = disrupted.status.as_ref().unwrap().conditions.clone();
        assert_eq!(
            before,
            job_pod_projection(&running),
            "a running pod's other conditions are not read"
        );
    }

    #[test]
    fn a_status_write_leaves_a_groups_projection_unchanged() {
        let mut g = PodGroup::default();
        g.metadata.generation = Some(1);
        let before = spec_projection(&g);
        g.status = Some(Default::default());
        assert_eq!(before, spec_projection(&g));
        g.metadata.generation = Some(2);
        assert_ne!(before, spec_projection(&g));
    }
}
