//! The simulated kubelet: runs the pods bound to any existing Node.
//!
//! - A bound, pending pod becomes `Running` after [`KubeletConfig::start_delay`], with the conditions
//!   (`PodReadyToStartContainers`, `Initialized`, `Ready`, `ContainersReady`, `PodScheduled`),
//!   `containerStatuses`, `startTime`, host and pod IPs a real kubelet reports.
//! - With the [`SIM_RUN_DURATION`] annotation (a Go duration: `30s`, `1m30s`, `500ms`) its containers
//!   exit after that long; a pod owned by a Job (`batch/v1`) without it runs for
//!   [`KubeletConfig::job_pod_duration`] when that is set (as KWOK's default stages complete Job pods).
//!   Each container's exit code and reason come from [`SIM_EXIT_CODE`] and [`SIM_EXIT_REASON`], per
//!   container, completion index and attempt (the grammar is in [`outcome`](super::outcome)); without
//!   them the code is 0, or 1 when [`SIM_EXIT_PHASE`] is `Failed`, and the reason `Completed` or `Error`.
//!   Then the pod's `restartPolicy` decides per container like a kubelet ([`run_end`](super::run_end)):
//!   `Always` restarts every container, `OnFailure` those that failed (`restartCount` + 1,
//!   `lastState.terminated`); when no container runs any more the pod ends `Failed` (some container's
//!   last exit code is not 0) or `Succeeded`. Otherwise the pod runs until deleted. An invalid annotation
//!   is reported as a `Warning` event (`InvalidSimAnnotation`) and its default applies.
//! - A deleted pod (deletionTimestamp set) stops after [`SIM_SHUTDOWN_DURATION`] (default 0: the
//!   containers exit on SIGTERM), never later than its grace period; containers stopped by the grace
//!   period end with 137 and the pod `Failed`, others with 0 and `Succeeded`, but those of a disrupted pod
//!   (a `DisruptionTarget` condition: evicted by the taint manager, preempted) with 143 (SIGTERM) and the
//!   pod `Failed`, as workloads killed mid-run report. Then the kubelet deletes it with grace period 0, as
//!   a real kubelet does.
//! - A pod that mounts PersistentVolumeClaims starts only once each of them exists, is `Bound` and its
//!   volume's node affinity admits the node; until then it stays `Pending`, its containers
//!   `ContainerCreating`, with a `FailedMount` event saying why (the kubelet volume manager's reasons:
//!   claim not found, being deleted, not bound, volume not found, node affinity). It looks again whenever a
//!   claim or a volume changes.
//! - A pod with `spec.resourceClaims` (dynamic resource allocation) starts only once every claim it
//!   references resolves (`resourceClaimName`; for a template, the pod's `status.resourceClaimStatuses`, or
//!   for an entry it shares with its PodGroup, the PodGroup's), exists, was generated for the pod (or the
//!   PodGroup), is reserved for the pod (or, for a claim shared with the PodGroup, for the PodGroup) and
//!   is allocated with a node selector that admits the node; until then it stays `Pending`,
//!   `ContainerCreating`, with a `FailedPrepareDynamicResources` event giving the kubelet DRA manager's
//!   reason. It looks again whenever a ResourceClaim or a PodGroup changes.
//! - When a Node is removed, its non-terminal pods fail (`reason: NodeLost`, a `DisruptionTarget`
//!   condition with reason `DeletionByPodGC`); pods already being deleted there are removed, like the pod
//!   garbage collector does for pods on nodes that no longer exist. (A `NoExecute` taint evicts pods
//!   through the taint manager instead: `controllers::taint_eviction`.)
//!
//! [`SIM_EXIT_CODE`]: kwas_api_types::names::annotations::SIM_EXIT_CODE
//! [`SIM_EXIT_REASON`]: kwas_api_types::names::annotations::SIM_EXIT_REASON
//! [`SIM_EXIT_PHASE`]: kwas_api_types::names::annotations::SIM_EXIT_PHASE

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use kwas_api_types::claims::{self, ClaimName};
use kwas_api_types::duration::{format_go_duration, parse_go_duration};

use crate::api::State;
use crate::api::subresources::set_condition;
use crate::cluster::Shared;
use crate::meta;
use crate::recorder;
use crate::store::EventType;
use crate::store::GroupResource;

use crate::sim::admit::{self, Admitted, Rejection};
use crate::sim::outcome::{self, Outcome};
use crate::sim::pod_status::{container_statuses, containers_of, current, write_status};
use crate::sim::run_end::{self, Ended, RunEnd};
use crate::sim::stop;
use crate::sim::topology::node_down;

pub use kwas_api_types::names::annotations::SIM_RUN_DURATION;

/// How long a deleted pod's containers take to stop after SIGTERM (a Go duration, capped at the grace
/// period). Default `0s`.
pub const SIM_SHUTDOWN_DURATION: &str = "kwas.dev/sim-shutdown-duration";

const MANAGER: &str = "kubelet";

/// Simulated kubelet settings.
#[derive(Debug, Clone)]
pub struct KubeletConfig {
    /// Whether the kubelet runs at all (without it pods stay Pending, as on nodes with no kubelet).
    pub enabled: bool,
    /// Delay between a pod being bound and it running.
    pub start_delay: Duration,
    /// How long a pod owned by a Job (`batch/v1`) without [`SIM_RUN_DURATION`] runs before its
    /// containers exit; `None` (the default) runs it until deleted. `kwas dev` sets one second.
    pub job_pod_duration: Option<Duration>,
}

impl Default for KubeletConfig {
    fn default() -> Self {
        KubeletConfig {
            enabled: true,
            start_delay: Duration::from_millis(100),
            job_pod_duration: None,
        }
    }
}

#[derive(Debug, Default)]
struct Track {
    started: bool,
    terminating: bool,
    /// Why the pod's volumes or resource claims keep it from starting, as last reported.
    blocked: Option<Waiting>,
}

/// Runs the kubelet until the cluster shuts down.
pub async fn run(shared: Arc<Shared>, cfg: KubeletConfig) {
    let pods = GroupResource::new("", "pods");
    let nodes = GroupResource::new("", "nodes");
    // What a pending pod may wait for: its volumes (claims and volumes) and its resource claims (the
    // claims, and the PodGroups that share theirs with the pod).
    let dependencies = [
        GroupResource::new("", "persistentvolumeclaims"),
        GroupResource::new("", "persistentvolumes"),
        GroupResource::new(crate::kinds::dra::GROUP, "resourceclaims"),
        GroupResource::new("scheduling.k8s.io", "podgroups"),
    ];
    let mut shutdown = shared.shutdown_signal();
    let (mut pod_sub, mut node_sub, mut dep_subs) = shared.with(|s| {
        (
            s.store.subscribe(&pods),
            s.store.subscribe(&nodes),
            dependencies.iter().map(|gr| s.store.subscribe(gr)).collect::<Vec<_>>(),
        )
    });
    let mut tracked: HashMap<String, Track> = HashMap::new();
    let mut admitted = Admitted::default();
    let mut ips: u32 = 0;
    let (mut last_pod, mut last_node, initial) =
        shared.with(|s| (s.store.current_rv(), s.store.current_rv(), s.store.list(&pods, None)));
    let mut last_dep = vec![last_pod; dependencies.len()];
    let mut waiters = ClaimWaiters::default();
    for p in initial {
        waiters.observe(&p, false);
        handle_pod(&shared, &cfg, &mut tracked, &mut admitted, &mut ips, &p, false);
    }
    loop {
        pod_sub.borrow_and_update();
        node_sub.borrow_and_update();
        for sub in &mut dep_subs {
            sub.borrow_and_update();
        }
        let batch = shared.with(|s| {
            let n = s.store.events_since(&nodes, last_node, 512);
            let p = s.store.events_since(&pods, last_pod, 512);
            (n, p, s.store.current_rv())
        });
        let (node_events, pod_events, now_rv) = batch;
        let mut idle = true;
        // A dependency changed: pods waiting for their volumes or resource claims look again.
        let dep_events: Vec<_> = shared.with(|s| {
            dependencies
                .iter()
                .zip(&last_dep)
                .map(|(gr, since)| s.store.events_since(gr, *since, 512))
                .collect()
        });
        let mut recheck = false;
        for (events, last) in dep_events.into_iter().zip(last_dep.iter_mut()) {
            match events {
                Ok(events) => {
                    if let Some(e) = events.last() {
                        *last = e.rv;
                        recheck = true;
                    }
                }
                Err(_) => {
                    *last = now_rv;
                    recheck = true;
                }
            }
        }
        if recheck {
            idle = false;
            // Only the pods known to wait (not every pod, under the cluster lock).
            let waiting: Vec<Arc<Value>> = shared.with(|s| {
                waiters
                    .pods()
                    .filter_map(|(ns, name)| s.store.get(&pods, ns, name))
                    .filter(|p| ClaimWaiters::waits(p))
                    .collect()
            });
            for p in waiting {
                if let Some(t) = tracked.get_mut(meta::uid(&p)) {
                    // A start that found its volumes or claims missing may try again (a start in flight is
                    // harmless: only one finds the pod still pending).
                    t.started = false;
                }
                handle_pod(&shared, &cfg, &mut tracked, &mut admitted, &mut ips, &p, false);
            }
        }
        match node_events {
            Ok(events) => {
                for e in &events {
                    idle = false;
                    last_node = e.rv;
                    let name = meta::name(&e.object).to_string();
                    match e.kind {
                        EventType::Deleted => shared.with(|s| stop::fail_pods_on_lost_node(s, &name)),
                        // Pods bound to a node before it existed start once it does; those that waited for
                        // a node back from `kwas.dev/sim-node-down` start too.
                        EventType::Added | EventType::Modified if !node_down(&e.object) => {
                            let added = e.kind == EventType::Added;
                            let waiting: Vec<_> = shared.with(|s| {
                                s.store
                                    .list(&pods, None)
                                    .into_iter()
                                    .filter(|p| {
                                        p.pointer("/spec/nodeName").and_then(Value::as_str) == Some(name.as_str())
                                            && (added
                                                || p.pointer("/status/phase")
                                                    .and_then(Value::as_str)
                                                    .unwrap_or("Pending")
                                                    == "Pending")
                                    })
                                    .collect()
                            });
                            for p in waiting {
                                handle_pod(&shared, &cfg, &mut tracked, &mut admitted, &mut ips, &p, false);
                            }
                        }
                        EventType::Added | EventType::Modified => {}
                    }
                }
            }
            Err(_) => last_node = now_rv,
        }
        match pod_events {
            Ok(events) => {
                for e in &events {
                    idle = false;
                    last_pod = e.rv;
                    waiters.observe(&e.object, e.kind == EventType::Deleted);
                    handle_pod(
                        &shared,
                        &cfg,
                        &mut tracked,
                        &mut admitted,
                        &mut ips,
                        &e.object,
                        e.kind == EventType::Deleted,
                    );
                }
            }
            Err(_) => {
                // Fell behind the history window: resynchronize from the current state.
                let (rv, all) = shared.with(|s| (s.store.current_rv(), s.store.list(&pods, None)));
                last_pod = rv;
                tracked.retain(|uid, _| all.iter().any(|p| meta::uid(p) == uid));
                admitted = Admitted::default();
                waiters = ClaimWaiters::default();
                for p in all {
                    waiters.observe(&p, false);
                    handle_pod(&shared, &cfg, &mut tracked, &mut admitted, &mut ips, &p, false);
                }
                idle = false;
            }
        }
        if idle {
            tokio::select! {
                r = pod_sub.changed() => if r.is_err() { return },
                r = node_sub.changed() => if r.is_err() { return },
                r = changed(&mut dep_subs) => if r.is_err() { return },
                _ = crate::cluster::stopped(&mut shutdown) => return,
            }
        }
    }
}

/// The pending pods with volume or resource claims, by uid: those a change of a claim, volume or PodGroup
/// may let start. Kept from the pod events, so a dependency's change looks at them, not at every pod.
#[derive(Debug, Default)]
struct ClaimWaiters(HashMap<String, (String, String)>);

impl ClaimWaiters {
    /// Whether `pod` waits for its claims: pending, not deleting, with a volume or resource claim.
    fn waits(pod: &Value) -> bool {
        !meta::is_deleting(pod)
            && pod
                .pointer("/status/phase")
                .and_then(Value::as_str)
                .unwrap_or("Pending")
                == "Pending"
            && (!crate::kinds::pod::claims(pod).is_empty() || !resource_claims(pod).is_empty())
    }

    /// A pod seen (or deleted).
    fn observe(&mut self, pod: &Value, deleted: bool) {
        let uid = meta::uid(pod);
        if !deleted && Self::waits(pod) {
            if !self.0.contains_key(uid) {
                let key = (meta::namespace(pod).to_string(), meta::name(pod).to_string());
                self.0.insert(uid.to_string(), key);
            }
        } else {
            self.0.remove(uid);
        }
    }

    /// The waiting pods' (namespace, name).
    fn pods(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.values().map(|(ns, name)| (ns.as_str(), name.as_str()))
    }
}

/// Resolves once `node`'s kubelet is back (its node no longer `kwas.dev/sim-node-down`, or gone).
async fn wait_node_up(shared: &Shared, node: &str) {
    let nodes = GroupResource::new("", "nodes");
    while shared.with(|s| s.store.get(&nodes, "", node).is_some_and(|n| node_down(&n))) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Resolves once any of the receivers sees a change (or its sender is gone).
async fn changed(subs: &mut [tokio::sync::watch::Receiver<u64>]) -> Result<(), tokio::sync::watch::error::RecvError> {
    if subs.is_empty() {
        return std::future::pending().await;
    }
    futures::future::select_all(subs.iter_mut().map(|s| Box::pin(s.changed())))
        .await
        .0
}

fn handle_pod(
    shared: &Arc<Shared>,
    cfg: &KubeletConfig,
    tracked: &mut HashMap<String, Track>,
    admitted: &mut Admitted,
    ips: &mut u32,
    pod: &Value,
    deleted: bool,
) {
    let uid = meta::uid(pod).to_string();
    if deleted {
        tracked.remove(&uid);
        admitted.remove(&uid);
        shared.logs.lock().remove(&uid);
        return;
    }
    let node = pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if node.is_empty() {
        return;
    }
    let phase = pod
        .pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("Pending")
        .to_string();
    let (node_exists, node_is_down) = shared.with(|s| {
        let n = s.store.get(&GroupResource::new("", "nodes"), "", &node);
        (n.is_some(), n.is_some_and(|n| node_down(&n)))
    });
    // The ledger of what runs where: a pod that ended no longer counts; one running that the ledger lacks
    // (the kubelet started again) counts as it is.
    if matches!(phase.as_str(), "Succeeded" | "Failed") {
        admitted.remove(&uid);
    } else if phase == "Running" && !admitted.contains(&uid) {
        admitted.add(&uid, &node, admit::pod_requests(pod));
    }
    let track = tracked.entry(uid.clone()).or_default();
    let ns = meta::namespace(pod).to_string();
    let name = meta::name(pod).to_string();
    if meta::is_deleting(pod) {
        if track.terminating {
            return;
        }
        track.terminating = true;
        let grace = meta::metadata(pod)
            .and_then(|m| m.get("deletionGracePeriodSeconds"))
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let grace = Duration::from_secs(grace.max(0).unsigned_abs());
        let wanted = meta::annotation(pod, SIM_SHUTDOWN_DURATION)
            .and_then(parse_go_duration)
            .unwrap_or(Duration::ZERO);
        let (delay, killed) = if !node_exists {
            (Duration::ZERO, true)
        } else if wanted > grace {
            (grace, true)
        } else {
            (wanted, false)
        };
        let shared = shared.clone();
        let containers = containers_of(pod);
        let node = node.clone();
        tokio::spawn(async move {
            {
                let mut logs = shared.logs.lock();
                for (c, _) in &containers {
                    logs.write(
                        &uid,
                        c,
                        format!(
                            "received SIGTERM: the pod is being deleted (grace period {})",
                            format_go_duration(grace)
                        ),
                    );
                }
            }
            tokio::time::sleep(delay).await;
            // A silent kubelet confirms nothing: the pod stays terminating until its node is back.
            wait_node_up(&shared, &node).await;
            if let Some(code) = shared.with(|s| stop::terminate(s, &ns, &name, &uid, killed)) {
                let mut logs = shared.logs.lock();
                for (c, _) in &containers {
                    let how = if killed {
                        "killed at the end of the grace period"
                    } else {
                        "stopped"
                    };
                    logs.write(
                        &uid,
                        c,
                        format!("{how} after {}: exited with code {code}", format_go_duration(delay)),
                    );
                    logs.end(&uid, c);
                }
            }
        });
        return;
    }
    // A silent kubelet (its node `kwas.dev/sim-node-down`) starts nothing; it does once it is back.
    if phase == "Pending" && !track.started && node_exists && !node_is_down {
        // Volumes first: a pod whose claims are not bound (or whose volumes cannot reach this node) waits,
        // `ContainerCreating`, with a `FailedMount` event.
        // Then the resource claims: each resolved, reserved for the pod (or its PodGroup) and allocated
        // where the node is, else `FailedPrepareDynamicResources`.
        if let Some(wait) = shared.with(|s| not_ready(s, pod, &node)) {
            if track.blocked.as_ref() != Some(&wait) {
                shared.with(|s| report_waiting(s, &ns, &name, &uid, &node, &wait));
                track.blocked = Some(wait);
            }
            return;
        }
        track.blocked = None;
        track.started = true;
        // Admission: the pod must fit next to what runs on the node already, else it fails
        // `OutOf<resource>` (a racing scheduler, a pod created with `nodeName`).
        let requests = admit::pod_requests(pod);
        let verdict = shared.with(|s| {
            let node_obj = s.store.get(&GroupResource::new("", "nodes"), "", &node);
            let allocatable = node_obj
                .as_deref()
                .and_then(|n| n.pointer("/status/allocatable"))
                .and_then(Value::as_object);
            admitted.admit(&uid, &node, &requests, allocatable)
        });
        if let Err(rejection) = verdict {
            shared.with(|s| reject(s, &ns, &name, &uid, &node, &rejection));
            return;
        }
        admitted.add(&uid, &node, requests);
        *ips = ips.wrapping_add(1);
        let pod_ip = format!("10.244.{}.{}", (*ips >> 8) % 256, *ips % 256 + 1);
        let (run, outcome, problems) = run_plan(cfg, pod);
        if !problems.is_empty() {
            shared.with(|s| {
                for p in &problems {
                    recorder::record(
                        s,
                        pod,
                        recorder::EventType::Warning,
                        outcome::INVALID_REASON,
                        p,
                        MANAGER,
                        Some(&node),
                    );
                }
            });
        }
        let shared = shared.clone();
        let delay = cfg.start_delay;
        let containers = containers_of(pod);
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let started = shared.with(|s| start(s, &ns, &name, &uid, &node, &pod_ip));
            if started {
                log_start(&shared, &uid, &containers, &node, run);
            }
            let Some(run) = run.filter(|_| started) else { return };
            let mut runs = 0;
            loop {
                tokio::time::sleep(run).await;
                // Containers on a silent kubelet's node are not seen to end until it is back.
                wait_node_up(&shared, &node).await;
                let Some((end, ended)) = shared.with(|s| exit(s, &ns, &name, &uid, runs, &outcome)) else {
                    return;
                };
                log_ends(&shared, &uid, &containers, &node, run, &ended);
                match end {
                    RunEnd::Running(next) => runs = next,
                    RunEnd::Ended => return,
                }
            }
        });
    }
}

/// How long the pod's containers run (`None`: until deleted), how they end, and what was invalid.
fn run_plan(cfg: &KubeletConfig, pod: &Value) -> (Option<Duration>, Outcome, Vec<String>) {
    let (outcome, mut problems) = Outcome::from_annotations(|k| meta::annotation(pod, k));
    let job_pod = meta::owner_refs(pod)
        .iter()
        .any(|o| o.kind == "Job" && o.api_version == "batch/v1");
    let default = cfg.job_pod_duration.filter(|_| job_pod);
    let run = match meta::annotation(pod, SIM_RUN_DURATION) {
        None => default,
        Some(text) => parse_go_duration(text).or_else(|| {
            let fallback = match default {
                Some(d) => format!("running for {} as a Job's pod", format_go_duration(d)),
                None => "running until deleted".to_string(),
            };
            problems.push(format!(
                "invalid {SIM_RUN_DURATION} {:?}: not a Go duration such as 30s or 1m30s; {fallback}",
                text.chars().take(200).collect::<String>()
            ));
            default
        }),
    };
    (run, outcome, problems)
}

/// The end of a run, in the logs of the containers that ran; those that restart start again.
fn log_ends(shared: &Shared, uid: &str, containers: &[(String, String)], node: &str, run: Duration, ended: &[Ended]) {
    for e in ended {
        let mut logs = shared.logs.lock();
        logs.write(
            uid,
            &e.container,
            format!(
                "ran for {}: exited with code {} ({})",
                format_go_duration(run),
                e.code,
                e.reason
            ),
        );
        logs.end(uid, &e.container);
    }
    let restarted: Vec<(String, String)> = containers
        .iter()
        .filter(|(c, _)| ended.iter().any(|e| e.restarted && e.container == *c))
        .cloned()
        .collect();
    if !restarted.is_empty() {
        log_start(shared, uid, &restarted, node, Some(run));
    }
}

/// A new run of every container, in the logs.
fn log_start(shared: &Shared, uid: &str, containers: &[(String, String)], node: &str, run: Option<Duration>) {
    let mut logs = shared.logs.lock();
    for (c, image) in containers {
        logs.start(uid, c);
        logs.write(uid, c, format!("started container {c} (image {image}) on node {node}"));
        logs.write(
            uid,
            c,
            match run {
                Some(d) => format!("will run for {} ({SIM_RUN_DURATION})", format_go_duration(d)),
                None => "will run until the pod is deleted".to_string(),
            },
        );
    }
}

fn start(s: &mut State, ns: &str, name: &str, uid: &str, node: &str, pod_ip: &str) -> bool {
    let Some(mut pod) = pending_pod(s, ns, name, uid) else {
        return false;
    };
    if let Some(wait) = not_ready(s, &pod, node) {
        report_waiting(s, ns, name, uid, node, &wait);
        return false;
    }
    let Some(node_obj) = s.store.get(&GroupResource::new("", "nodes"), "", node) else {
        return false;
    };
    let host_ip = node_obj
        .pointer("/status/addresses")
        .and_then(Value::as_array)
        .and_then(|a| {
            a.iter()
                .find(|x| x.get("type").and_then(Value::as_str) == Some("InternalIP"))
        })
        .and_then(|x| x.get("address"))
        .and_then(Value::as_str)
        .unwrap_or("10.0.0.1")
        .to_string();
    let now = meta::now_rfc3339();
    let statuses = container_statuses(&pod, |_, _| json!({"running": {"startedAt": now}}), true, 0);
    {
        let st = meta::ensure_object(meta::ensure_object(&mut pod).entry("status").or_insert(json!({})));
        st.insert("phase".into(), json!("Running"));
        st.insert("hostIP".into(), json!(host_ip));
        st.insert("hostIPs".into(), json!([{"ip": host_ip}]));
        st.insert("podIP".into(), json!(pod_ip));
        st.insert("podIPs".into(), json!([{"ip": pod_ip}]));
        st.insert("startTime".into(), json!(now));
        st.insert("containerStatuses".into(), json!(statuses));
    }
    for c in [
        "PodReadyToStartContainers",
        "Initialized",
        "Ready",
        "ContainersReady",
        "PodScheduled",
    ] {
        set_condition(&mut pod, c, "True", "", "");
    }
    write_status(s, pod);
    true
}

/// The pod `ns/name` of `uid` while it is `Pending` and not being deleted (what the kubelet may still
/// start, report waiting or reject).
fn pending_pod(s: &State, ns: &str, name: &str, uid: &str) -> Option<Value> {
    let pod = current(s, ns, name, uid)?;
    let pending = pod
        .pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("Pending")
        == "Pending";
    (pending && !meta::is_deleting(&pod)).then_some(pod)
}

/// Fails a pod the kubelet cannot admit: phase `Failed`, the rejection's reason, `Pod was rejected: ` and
/// its message, and a Warning event (upstream's `rejectPod`).
fn reject(s: &mut State, ns: &str, name: &str, uid: &str, node: &str, rejection: &Rejection) {
    let Some(mut pod) = pending_pod(s, ns, name, uid) else {
        return;
    };
    {
        let st = meta::ensure_object(meta::ensure_object(&mut pod).entry("status").or_insert(json!({})));
        st.insert("phase".into(), json!("Failed"));
        st.insert("reason".into(), json!(rejection.reason));
        st.insert(
            "message".into(),
            json!(format!("Pod was rejected: {}", rejection.message)),
        );
    }
    recorder::record(
        s,
        &pod,
        recorder::EventType::Warning,
        &rejection.reason,
        &rejection.message,
        MANAGER,
        Some(node),
    );
    write_status(s, pod);
}

/// Why the pod's PersistentVolumeClaims keep it from starting on `node`, as the kubelet's volume manager
/// reports it; `None` when every claim exists, is bound, and its volume's node affinity admits the node.
fn volumes_not_ready(s: &State, pod: &Value, node: &str) -> Option<String> {
    let claims = crate::kinds::pod::claims(pod);
    if claims.is_empty() {
        return None;
    }
    let ns = meta::namespace(pod);
    let node_obj = s.store.get(&GroupResource::new("", "nodes"), "", node);
    for (volume, claim) in &claims {
        let failed = |detail: String| {
            Some(format!(
                "Unable to attach or mount volumes: unmounted volumes=[{volume}], failed to process volumes=[{volume}]: error processing PVC {ns}/{claim}: {detail}"
            ))
        };
        let Some(pvc) = s
            .store
            .get(&GroupResource::new("", "persistentvolumeclaims"), ns, claim)
        else {
            return failed(format!(
                "failed to fetch PVC from API server: persistentvolumeclaims {claim:?} not found"
            ));
        };
        if meta::is_deleting(&pvc) {
            return failed("PVC is being deleted".into());
        }
        if pvc.pointer("/status/phase").and_then(Value::as_str) != Some("Bound") {
            return failed("PVC is not bound".into());
        }
        let pv_name = pvc.pointer("/spec/volumeName").and_then(Value::as_str).unwrap_or("");
        if pv_name.is_empty() {
            return failed("PVC has empty pvc.Spec.VolumeName".into());
        }
        let Some(pv) = s.store.get(&GroupResource::new("", "persistentvolumes"), "", pv_name) else {
            return failed(format!(
                "failed to fetch PV {pv_name} from API server: persistentvolumes {pv_name:?} not found"
            ));
        };
        if let (Some(required), Some(n)) = (
            pv.pointer("/spec/nodeAffinity/required").filter(|r| !r.is_null()),
            node_obj.as_deref(),
        ) && !crate::selectors::node_selector_matches(required, n)
        {
            return Some(format!(
                "MountVolume.NodeAffinity check failed for volume {pv_name:?} : no matching NodeSelectorTerms"
            ));
        }
    }
    None
}

/// Why a bound pod cannot start yet: the event reason and message the kubelet reports.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Waiting {
    /// `FailedMount` or `FailedPrepareDynamicResources`.
    reason: &'static str,
    /// The event's message.
    message: String,
}

/// What keeps a pod from starting on `node`: its volumes first (the volume manager waits before the
/// runtime's sync), then its resource claims (the runtime prepares them before the pod sandbox).
fn not_ready(s: &State, pod: &Value, node: &str) -> Option<Waiting> {
    if let Some(why) = volumes_not_ready(s, pod, node) {
        return Some(Waiting {
            reason: "FailedMount",
            message: why,
        });
    }
    resource_claims_not_ready(s, pod, node).map(|why| Waiting {
        reason: "FailedPrepareDynamicResources",
        message: format!("Failed to prepare dynamic resources: {why}"),
    })
}

/// A pod's `spec.resourceClaims`.
fn resource_claims(pod: &Value) -> Vec<Value> {
    pod.pointer("/spec/resourceClaims")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// A `spec.resourceClaims` list as [`claims::ClaimEntry`]s.
fn claim_entries(list: &[Value]) -> Vec<claims::ClaimEntry<'_>> {
    list.iter()
        .map(|e| {
            let field = |f: &str| e.get(f).and_then(Value::as_str);
            (
                field("name").unwrap_or(""),
                field("resourceClaimName"),
                field("resourceClaimTemplateName"),
            )
        })
        .collect()
}

/// A `status.resourceClaimStatuses` list as [`claims::ClaimStatus`]es.
fn claim_statuses(obj: &Value) -> Vec<claims::ClaimStatus<'_>> {
    obj.pointer("/status/resourceClaimStatuses")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|st| {
            (
                st.get("name").and_then(Value::as_str).unwrap_or(""),
                st.get("resourceClaimName").and_then(Value::as_str),
            )
        })
        .collect()
}

/// Why the pod's resource claims keep it from starting on `node`, as the kubelet's DRA manager
/// (`pkg/kubelet/cm/dra`, `PrepareResources`) reports it; `None` when every claim is ready.
///
/// Each `spec.resourceClaims` entry resolves to a claim name (`resourceClaimName`; for a template, the
/// pod's `status.resourceClaimStatuses`, or, for an entry the pod shares with its PodGroup, the PodGroup's
/// `status.resourceClaimStatuses`); the claim must exist, a generated one be controlled by the pod (or by
/// the PodGroup it was generated for), `status.reservedFor` must name the pod, or the PodGroup for a
/// claim the pod shares with it (KEP-5729: an entry equal in all fields to one of the PodGroup's
/// `spec.resourceClaims`), and the allocation's node selector must admit the node (what the driver's
/// `NodePrepareResources` needs: the devices are on that node).
fn resource_claims_not_ready(s: &State, pod: &Value, node: &str) -> Option<String> {
    let pod_claims = resource_claims(pod);
    if pod_claims.is_empty() {
        return None;
    }
    let (ns, pod_name, pod_uid) = (meta::namespace(pod), meta::name(pod), meta::uid(pod));
    let group = pod
        .pointer("/spec/schedulingGroup/podGroupName")
        .and_then(Value::as_str)
        .and_then(|g| {
            s.store
                .get(&GroupResource::new("scheduling.k8s.io", "podgroups"), ns, g)
        });
    let node_obj = s.store.get(&GroupResource::new("", "nodes"), "", node);
    let group_list: Vec<Value> = group
        .as_deref()
        .and_then(|g| g.pointer("/spec/resourceClaims"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let group_entries = claim_entries(&group_list);
    let pod_statuses = claim_statuses(pod);
    let group_statuses = group.as_deref().map(claim_statuses).unwrap_or_default();
    for entry in claim_entries(&pod_claims) {
        let name = entry.0;
        // Shared with the PodGroup when the group lists an equal entry.
        let shared_with = group
            .as_deref()
            .filter(|_| claims::shared_with_group(entry, &group_entries));
        let statuses = shared_with.map(|_| group_statuses.as_slice());
        let (claim_name, generated) = match claims::claim_name(entry, &pod_statuses, statuses) {
            ClaimName::Named { name, generated } => (name, generated),
            // No claim was needed for this entry.
            ClaimName::NotNeeded => continue,
            ClaimName::NotCreatedYet => {
                return Some(format!("pod \"{ns}/{pod_name}\": ResourceClaim not created yet"));
            }
            ClaimName::Unset => {
                return Some(format!(
                    "pod \"{ns}/{pod_name}\", spec.resourceClaim {name:?}: none of the supported fields are set"
                ));
            }
        };
        let Some(claim) = s.store.get(
            &GroupResource::new(crate::kinds::dra::GROUP, "resourceclaims"),
            ns,
            &claim_name,
        ) else {
            return Some(format!(
                "fetch ResourceClaim {claim_name}: resourceclaims.resource.k8s.io {claim_name:?} not found"
            ));
        };
        let claim_uid = meta::uid(&claim);
        if generated {
            let controller = meta::owner_refs(&claim).into_iter().find(|o| o.controller);
            let owned = controller.is_some_and(|o| {
                o.uid == pod_uid || shared_with.is_some_and(|g| o.kind == "PodGroup" && o.uid == meta::uid(g))
            });
            if !owned {
                return Some(format!(
                    "ResourceClaim {ns}/{claim_name} was not created for pod {ns}/{pod_name} (pod is not owner)"
                ));
            }
        }
        let reserved = claim
            .pointer("/status/reservedFor")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|r| {
                let field = |f: &str| r.get(f).and_then(Value::as_str).unwrap_or("");
                field("uid") == pod_uid
                    || shared_with.is_some_and(|g| {
                        field("apiGroup") == "scheduling.k8s.io"
                            && field("resource") == "podgroups"
                            && field("name") == meta::name(g)
                            && field("uid") == meta::uid(g)
                    })
            });
        if !reserved {
            return Some(format!(
                "pod {pod_name} ({pod_uid}) is not allowed to use ResourceClaim {claim_name} ({claim_uid})"
            ));
        }
        if let (Some(selector), Some(n)) = (
            claim
                .pointer("/status/allocation/nodeSelector")
                .filter(|v| !v.is_null()),
            node_obj.as_deref(),
        ) && !crate::selectors::node_selector_matches(selector, n)
        {
            return Some(format!(
                "prepare dynamic resources: NodePrepareResources: ResourceClaim {ns}/{claim_name} ({claim_uid}): its allocation's node selector does not admit node {node:?}"
            ));
        }
    }
    None
}

/// A pod waiting for its volumes or resource claims: `Pending` with its containers `ContainerCreating`
/// (not ready), and an event saying why (`FailedMount`, `FailedPrepareDynamicResources`).
fn report_waiting(s: &mut State, ns: &str, name: &str, uid: &str, node: &str, wait: &Waiting) {
    let Some(mut pod) = pending_pod(s, ns, name, uid) else {
        return;
    };
    let containers = containers_of(&pod);
    let statuses: Vec<Value> = containers
        .iter()
        .map(|(c, image)| {
            json!({"name": c, "image": image, "imageID": "", "ready": false, "started": false, "restartCount": 0,
                "state": {"waiting": {"reason": "ContainerCreating"}}})
        })
        .collect();
    let unready = format!(
        "containers with unready status: [{}]",
        containers.iter().map(|(c, _)| c.as_str()).collect::<Vec<_>>().join(" ")
    );
    let before = pod.get("status").cloned();
    {
        let st = meta::ensure_object(meta::ensure_object(&mut pod).entry("status").or_insert(json!({})));
        st.insert("containerStatuses".into(), json!(statuses));
        st.entry("startTime").or_insert(json!(meta::now_rfc3339()));
    }
    set_condition(&mut pod, "PodReadyToStartContainers", "False", "", "");
    set_condition(&mut pod, "Initialized", "True", "", "");
    set_condition(&mut pod, "Ready", "False", "ContainersNotReady", &unready);
    set_condition(&mut pod, "ContainersReady", "False", "ContainersNotReady", &unready);
    set_condition(&mut pod, "PodScheduled", "True", "", "");
    if pod.get("status") != before.as_ref() {
        write_status(s, pod.clone());
    }
    recorder::record(
        s,
        &pod,
        recorder::EventType::Warning,
        wait.reason,
        &wait.message,
        MANAGER,
        Some(node),
    );
}

/// A run ended: each running container exits (and restarts or not, per the pod's `restartPolicy`).
/// `None` when the pod is gone, being deleted, not running or past this run (`runs` is
/// [`run_end::runs`] when the run started).
fn exit(s: &mut State, ns: &str, name: &str, uid: &str, runs: i64, outcome: &Outcome) -> Option<(RunEnd, Vec<Ended>)> {
    let mut pod = current(s, ns, name, uid)?;
    if meta::is_deleting(&pod)
        || pod.pointer("/status/phase").and_then(Value::as_str) != Some("Running")
        || run_end::runs(&pod) != runs
    {
        return None;
    }
    let result = run_end::end_run(&mut pod, outcome, &meta::now_rfc3339());
    write_status(s, pod);
    Some(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        assert_eq!(parse_go_duration("30s"), Some(Duration::from_secs(30)));
        assert_eq!(parse_go_duration("1m30s"), Some(Duration::from_secs(90)));
        assert_eq!(parse_go_duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(parse_go_duration("1.5h"), Some(Duration::from_secs(5400)));
        assert_eq!(parse_go_duration("0"), Some(Duration::ZERO));
        assert_eq!(parse_go_duration("10"), None);
        assert_eq!(parse_go_duration("-1s"), None);
        assert_eq!(parse_go_duration("3 days"), None);
    }

    fn pod(uid: &str, phase: &str, claim: bool) -> Value {
        let mut p = json!({"metadata": {"namespace": "ns", "name": format!("p-{uid}"), "uid": uid},
            "spec": {"containers": [{"name": "c"}]}, "status": {"phase": phase}});
        if claim {
            p["spec"]["resourceClaims"] = json!([{"name": "gpu", "resourceClaimName": "c1"}]);
        }
        p
    }

    #[test]
    fn claim_waiters_follow_the_pod_events() {
        let mut w = ClaimWaiters::default();
        w.observe(&pod("a", "Pending", true), false);
        w.observe(&pod("b", "Pending", false), false);
        w.observe(&pod("c", "Pending", true), false);
        let mut names: Vec<_> = w.pods().map(|(_, n)| n.to_string()).collect();
        names.sort();
        assert_eq!(names, ["p-a", "p-c"], "only pending pods with claims");
        w.observe(&pod("a", "Running", true), false);
        w.observe(&pod("c", "Pending", true), true);
        assert_eq!(w.pods().count(), 0, "started or deleted: no longer waiting");
        let mut deleting = pod("d", "Pending", true);
        deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        w.observe(&deleting, false);
        assert_eq!(w.pods().count(), 0);
    }
}
