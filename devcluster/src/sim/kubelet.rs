//! The simulated kubelet: runs the pods bound to any existing Node.
//!
//! - A bound, pending pod becomes `Running` after [`KubeletConfig::start_delay`], with the conditions
//!   (`PodReadyToStartContainers`, `Initialized`, `Ready`, `ContainersReady`, `PodScheduled`),
//!   `containerStatuses`, `startTime`, host and pod IPs a real kubelet reports.
//! - With the [`SIM_RUN_DURATION`] annotation (a Go duration: `30s`, `1m30s`, `500ms`) its containers
//!   exit after that long, with exit code 0 or, when [`SIM_EXIT_PHASE`] is `Failed`, 1. Then the pod's
//!   `restartPolicy` decides like a kubelet: `Never` (and `OnFailure` after a success) ends the pod in
//!   `Succeeded` / `Failed`; `Always` (and `OnFailure` after a failure) restarts the containers
//!   (`restartCount` + 1, `lastState.terminated`). Without the annotation the pod runs until deleted.
//! - A deleted pod (deletionTimestamp set) stops after [`SIM_SHUTDOWN_DURATION`] (default 0: the
//!   containers exit on SIGTERM), never later than its grace period; containers stopped by the grace
//!   period end with 137 and the pod `Failed`, others with 0 and `Succeeded`. Then the kubelet deletes it
//!   with grace period 0, as a real kubelet does.
//! - A pod that mounts PersistentVolumeClaims starts only once each of them exists, is `Bound` and its
//!   volume's node affinity admits the node; until then it stays `Pending`, its containers
//!   `ContainerCreating`, with a `FailedMount` event saying why (the kubelet volume manager's reasons:
//!   claim not found, being deleted, not bound, volume not found, node affinity). It looks again whenever a
//!   claim or a volume changes.
//! - When a Node is removed, its non-terminal pods fail (`reason: NodeLost`, a `DisruptionTarget`
//!   condition with reason `DeletionByPodGC`); pods already being deleted there are removed, like the pod
//!   garbage collector does for pods on nodes that no longer exist.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use kwas_api::duration::{format_go_duration, parse_go_duration};

use crate::api::subresources::set_condition;
use crate::api::{DeleteOptions, State};
use crate::meta;
use crate::recorder;
use crate::request::RequestContext;
use crate::server::Shared;
use crate::store::EventType;
use crate::store::GroupResource;

pub use kwas_api::names::annotations::{SIM_EXIT_PHASE, SIM_RUN_DURATION};

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
}

impl Default for KubeletConfig {
    fn default() -> Self {
        KubeletConfig {
            enabled: true,
            start_delay: Duration::from_millis(100),
        }
    }
}

#[derive(Debug, Default)]
struct Track {
    started: bool,
    terminating: bool,
    /// Why the pod's volumes keep it from starting, as last reported.
    blocked: Option<String>,
}

/// Runs the kubelet until the cluster shuts down.
pub async fn run(shared: Arc<Shared>, cfg: KubeletConfig) {
    let pods = GroupResource::new("", "pods");
    let nodes = GroupResource::new("", "nodes");
    let claims = GroupResource::new("", "persistentvolumeclaims");
    let volumes = GroupResource::new("", "persistentvolumes");
    let mut shutdown = shared.shutdown_signal();
    let (mut pod_sub, mut node_sub, mut claim_sub, mut volume_sub) = shared.with(|s| {
        (
            s.store.subscribe(&pods),
            s.store.subscribe(&nodes),
            s.store.subscribe(&claims),
            s.store.subscribe(&volumes),
        )
    });
    let mut tracked: HashMap<String, Track> = HashMap::new();
    let mut ips: u32 = 0;
    let (mut last_pod, mut last_node, initial) =
        shared.with(|s| (s.store.current_rv(), s.store.current_rv(), s.store.list(&pods, None)));
    let (mut last_claim, mut last_volume) = (last_pod, last_pod);
    for p in initial {
        handle_pod(&shared, &cfg, &mut tracked, &mut ips, &p, false);
    }
    loop {
        pod_sub.borrow_and_update();
        node_sub.borrow_and_update();
        claim_sub.borrow_and_update();
        volume_sub.borrow_and_update();
        let batch = shared.with(|s| {
            let n = s.store.events_since(&nodes, last_node, 512);
            let p = s.store.events_since(&pods, last_pod, 512);
            (n, p, s.store.current_rv())
        });
        let (node_events, pod_events, now_rv) = batch;
        let mut idle = true;
        // Claims and volumes changed: pods waiting for their volumes look again.
        let (claim_events, volume_events) = shared.with(|s| {
            (
                s.store.events_since(&claims, last_claim, 512),
                s.store.events_since(&volumes, last_volume, 512),
            )
        });
        let mut recheck = false;
        match claim_events {
            Ok(events) => {
                if let Some(e) = events.last() {
                    last_claim = e.rv;
                    recheck = true;
                }
            }
            Err(_) => {
                last_claim = now_rv;
                recheck = true;
            }
        }
        match volume_events {
            Ok(events) => {
                if let Some(e) = events.last() {
                    last_volume = e.rv;
                    recheck = true;
                }
            }
            Err(_) => {
                last_volume = now_rv;
                recheck = true;
            }
        }
        if recheck {
            idle = false;
            let waiting: Vec<Arc<Value>> = shared.with(|s| {
                s.store
                    .list(&pods, None)
                    .into_iter()
                    .filter(|p| {
                        !meta::is_deleting(p)
                            && p.pointer("/status/phase").and_then(Value::as_str).unwrap_or("Pending") == "Pending"
                            && !crate::kinds::pod::claims(p).is_empty()
                    })
                    .collect()
            });
            for p in waiting {
                if let Some(t) = tracked.get_mut(meta::uid(&p)) {
                    // A start that found its volumes missing may try again (a start in flight is harmless:
                    // only one finds the pod still pending).
                    t.started = false;
                }
                handle_pod(&shared, &cfg, &mut tracked, &mut ips, &p, false);
            }
        }
        match node_events {
            Ok(events) => {
                for e in &events {
                    idle = false;
                    last_node = e.rv;
                    let name = meta::name(&e.object).to_string();
                    match e.kind {
                        EventType::Deleted => shared.with(|s| fail_pods_on_lost_node(s, &name)),
                        EventType::Added => {
                            // Pods bound to a node before it existed start once it does.
                            let waiting: Vec<_> = shared.with(|s| {
                                s.store
                                    .list(&pods, None)
                                    .into_iter()
                                    .filter(|p| {
                                        p.pointer("/spec/nodeName").and_then(Value::as_str) == Some(name.as_str())
                                    })
                                    .collect()
                            });
                            for p in waiting {
                                handle_pod(&shared, &cfg, &mut tracked, &mut ips, &p, false);
                            }
                        }
                        EventType::Modified => {}
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
                    handle_pod(
                        &shared,
                        &cfg,
                        &mut tracked,
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
                for p in all {
                    handle_pod(&shared, &cfg, &mut tracked, &mut ips, &p, false);
                }
                idle = false;
            }
        }
        if idle {
            tokio::select! {
                r = pod_sub.changed() => if r.is_err() { return },
                r = node_sub.changed() => if r.is_err() { return },
                r = claim_sub.changed() => if r.is_err() { return },
                r = volume_sub.changed() => if r.is_err() { return },
                _ = crate::server::stopped(&mut shutdown) => return,
            }
        }
    }
}

fn handle_pod(
    shared: &Arc<Shared>,
    cfg: &KubeletConfig,
    tracked: &mut HashMap<String, Track>,
    ips: &mut u32,
    pod: &Value,
    deleted: bool,
) {
    let uid = meta::uid(pod).to_string();
    if deleted {
        tracked.remove(&uid);
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
    let node_exists = shared.with(|s| s.store.get(&GroupResource::new("", "nodes"), "", &node).is_some());
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
            if let Some(code) = shared.with(|s| terminate(s, &ns, &name, &uid, killed)) {
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
    if phase == "Pending" && !track.started && node_exists {
        // Volumes first: a pod whose claims are not bound (or whose volumes cannot reach this node) waits,
        // `ContainerCreating`, with a `FailedMount` event.
        if let Some(why) = shared.with(|s| volumes_not_ready(s, pod, &node)) {
            if track.blocked.as_deref() != Some(why.as_str()) {
                shared.with(|s| report_waiting_for_volumes(s, &ns, &name, &uid, &node, &why));
                track.blocked = Some(why);
            }
            return;
        }
        track.blocked = None;
        track.started = true;
        *ips = ips.wrapping_add(1);
        let pod_ip = format!("10.244.{}.{}", (*ips >> 8) % 256, *ips % 256 + 1);
        let run = meta::annotation(pod, SIM_RUN_DURATION).and_then(parse_go_duration);
        let fail = meta::annotation(pod, SIM_EXIT_PHASE) == Some("Failed");
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
            let mut restarts = 0;
            loop {
                tokio::time::sleep(run).await;
                let exit = shared.with(|s| exit(s, &ns, &name, &uid, restarts, fail));
                let code = i32::from(fail);
                let reason = if fail { "Error" } else { "Completed" };
                if !matches!(exit, Exit::Gone) {
                    let mut logs = shared.logs.lock();
                    for (c, _) in &containers {
                        logs.write(
                            &uid,
                            c,
                            format!(
                                "ran for {}: exited with code {code} ({reason})",
                                format_go_duration(run)
                            ),
                        );
                        logs.end(&uid, c);
                    }
                }
                match exit {
                    Exit::Restarted(next) => {
                        restarts = next;
                        log_start(&shared, &uid, &containers, &node, Some(run));
                    }
                    Exit::Ended | Exit::Gone => return,
                }
            }
        });
    }
}

/// The pod's containers: (name, image).
fn containers_of(pod: &Value) -> Vec<(String, String)> {
    pod.pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| {
            let field = |f: &str| c.get(f).and_then(Value::as_str).unwrap_or("").to_string();
            (field("name"), field("image"))
        })
        .collect()
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

fn pods_res(s: &State) -> Option<Arc<crate::resource::ResourceInfo>> {
    s.resource("", "v1", "pods")
}

fn current(s: &State, ns: &str, name: &str, uid: &str) -> Option<Value> {
    let p = s.store.get(&GroupResource::new("", "pods"), ns, name)?;
    (meta::uid(&p) == uid).then(|| (*p).clone())
}

fn container_statuses(pod: &Value, state_of: impl Fn(&str, i64) -> Value, ready: bool, restarts: i64) -> Vec<Value> {
    let uid = meta::uid(pod);
    pod.pointer("/spec/containers")
        .and_then(Value::as_array)
        .map(|cs| {
            cs.iter()
                .map(|c| {
                    let name = c.get("name").and_then(Value::as_str).unwrap_or("");
                    let image = c.get("image").and_then(Value::as_str).unwrap_or("");
                    json!({
                        "name": name,
                        "image": image,
                        "imageID": format!("sim://{image}"),
                        "containerID": format!("sim://{}-{name}-{restarts}", uid.split('-').next().unwrap_or(uid)),
                        "ready": ready,
                        "started": ready,
                        "restartCount": restarts,
                        "state": state_of(name, restarts),
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

fn write_status(s: &mut State, pod: Value) {
    let Some(res) = pods_res(s) else { return };
    let ns = meta::namespace(&pod).to_string();
    let name = meta::name(&pod).to_string();
    if let Err(e) = s.update(
        &res,
        &ns,
        &name,
        pod,
        Some("status"),
        &mut RequestContext::manager(MANAGER),
    ) {
        tracing::debug!(pod = %name, error = %e, "kubelet status update failed");
    }
}

fn start(s: &mut State, ns: &str, name: &str, uid: &str, node: &str, pod_ip: &str) -> bool {
    let Some(mut pod) = current(s, ns, name, uid) else {
        return false;
    };
    if meta::is_deleting(&pod)
        || pod
            .pointer("/status/phase")
            .and_then(Value::as_str)
            .unwrap_or("Pending")
            != "Pending"
    {
        return false;
    }
    if let Some(why) = volumes_not_ready(s, &pod, node) {
        report_waiting_for_volumes(s, ns, name, uid, node, &why);
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

/// A pod waiting for its volumes: `Pending` with its containers `ContainerCreating` (not ready), and a
/// `FailedMount` event saying why.
fn report_waiting_for_volumes(s: &mut State, ns: &str, name: &str, uid: &str, node: &str, why: &str) {
    let Some(mut pod) = current(s, ns, name, uid) else {
        return;
    };
    if meta::is_deleting(&pod)
        || pod
            .pointer("/status/phase")
            .and_then(Value::as_str)
            .unwrap_or("Pending")
            != "Pending"
    {
        return;
    }
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
        "FailedMount",
        why,
        MANAGER,
        Some(node),
    );
}

/// What a container run's end did.
enum Exit {
    /// The containers restarted; their new restart count.
    Restarted(i64),
    /// The pod ended (Succeeded or Failed).
    Ended,
    /// The pod was gone, deleting or no longer this run: nothing happened.
    Gone,
}

/// A container run ended: restart (returning the new restart count) or end the pod.
fn exit(s: &mut State, ns: &str, name: &str, uid: &str, restarts: i64, fail: bool) -> Exit {
    let Some(mut pod) = current(s, ns, name, uid) else {
        return Exit::Gone;
    };
    if meta::is_deleting(&pod) || pod.pointer("/status/phase").and_then(Value::as_str) != Some("Running") {
        return Exit::Gone;
    }
    let seen = pod
        .pointer("/status/containerStatuses/0/restartCount")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if seen != restarts {
        return Exit::Gone;
    }
    let policy = pod
        .pointer("/spec/restartPolicy")
        .and_then(Value::as_str)
        .unwrap_or("Always")
        .to_string();
    let restart = policy == "Always" || (policy == "OnFailure" && fail);
    let started = pod
        .pointer("/status/containerStatuses/0/state/running/startedAt")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let now = meta::now_rfc3339();
    let (code, reason) = if fail { (1, "Error") } else { (0, "Completed") };
    let terminated =
        json!({"terminated": {"exitCode": code, "reason": reason, "startedAt": started, "finishedAt": now}});
    if restart {
        let next = restarts + 1;
        let mut statuses = container_statuses(&pod, |_, _| json!({"running": {"startedAt": now}}), true, next);
        for st in &mut statuses {
            st["lastState"] = terminated.clone();
        }
        pod["status"]["containerStatuses"] = json!(statuses);
        write_status(s, pod);
        return Exit::Restarted(next);
    }
    let statuses = container_statuses(&pod, |_, _| terminated.clone(), false, restarts);
    pod["status"]["containerStatuses"] = json!(statuses);
    let phase = if fail { "Failed" } else { "Succeeded" };
    pod["status"]["phase"] = json!(phase);
    let reason = if fail { "PodFailed" } else { "PodCompleted" };
    for c in ["Ready", "ContainersReady"] {
        set_condition(&mut pod, c, "False", reason, "");
    }
    set_condition(&mut pod, "PodReadyToStartContainers", "False", "", "");
    write_status(s, pod);
    Exit::Ended
}

/// Stops a deleted pod's containers and removes it (grace period 0); the exit code of containers that
/// were still running.
fn terminate(s: &mut State, ns: &str, name: &str, uid: &str, killed: bool) -> Option<i32> {
    let mut pod = current(s, ns, name, uid)?;
    let phase = pod
        .pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("Pending")
        .to_string();
    let running = phase != "Succeeded" && phase != "Failed";
    if running {
        let now = meta::now_rfc3339();
        let started = pod
            .pointer("/status/startTime")
            .and_then(Value::as_str)
            .unwrap_or(&now)
            .to_string();
        let (code, reason) = if killed { (137, "Error") } else { (0, "Completed") };
        let restarts = pod
            .pointer("/status/containerStatuses/0/restartCount")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let statuses = container_statuses(
            &pod,
            |_, _| json!({"terminated": {"exitCode": code, "reason": reason, "startedAt": started, "finishedAt": now}}),
            false,
            restarts,
        );
        pod["status"]["containerStatuses"] = json!(statuses);
        pod["status"]["phase"] = json!(if killed { "Failed" } else { "Succeeded" });
        for c in ["Ready", "ContainersReady"] {
            set_condition(&mut pod, c, "False", "PodCompleted", "");
        }
        write_status(s, pod);
    }
    let res = pods_res(s)?;
    let opts = DeleteOptions {
        grace_period_seconds: Some(0),
        precondition_uid: Some(uid.to_string()),
        ..Default::default()
    };
    let _ = s.delete(&res, ns, name, &opts);
    running.then_some(if killed { 137 } else { 0 })
}

/// A node was removed: its pods fail; pods already being deleted there are removed.
pub fn fail_pods_on_lost_node(s: &mut State, node: &str) {
    let Some(res) = pods_res(s) else { return };
    let on_node: Vec<_> = s
        .store
        .list(&res.storage, None)
        .into_iter()
        .filter(|p| p.pointer("/spec/nodeName").and_then(Value::as_str) == Some(node))
        .collect();
    for p in on_node {
        let ns = meta::namespace(&p).to_string();
        let name = meta::name(&p).to_string();
        if meta::is_deleting(&p) {
            let opts = DeleteOptions {
                grace_period_seconds: Some(0),
                ..Default::default()
            };
            let _ = s.delete(&res, &ns, &name, &opts);
            continue;
        }
        let phase = p.pointer("/status/phase").and_then(Value::as_str).unwrap_or("Pending");
        if phase == "Succeeded" || phase == "Failed" {
            continue;
        }
        let mut pod = (*p).clone();
        let now = meta::now_rfc3339();
        let restarts = pod
            .pointer("/status/containerStatuses/0/restartCount")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let statuses = container_statuses(
            &pod,
            |_, _| json!({"terminated": {"exitCode": 137, "reason": "Error", "finishedAt": now}}),
            false,
            restarts,
        );
        pod["status"]["containerStatuses"] = json!(statuses);
        pod["status"]["phase"] = json!("Failed");
        pod["status"]["reason"] = json!("NodeLost");
        pod["status"]["message"] = json!(format!("node {node:?} was removed"));
        for c in ["Ready", "ContainersReady"] {
            set_condition(&mut pod, c, "False", "PodFailed", "");
        }
        set_condition(
            &mut pod,
            kwas_api::names::conditions::DISRUPTION_TARGET,
            "True",
            "DeletionByPodGC",
            &format!("PodGC: node {node} no longer exists"),
        );
        write_status(s, pod);
    }
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
}
