//! The I/O edge: carries out the engine's [`Action`]s against the API server.
//!
//! - **Bindings** go through `pods/binding` (a `Binding` with the pod's uid as precondition), at most
//!   `bind_concurrency` at once; each result goes back to the scheduling loop. A binding whose answer is
//!   lost (a 5xx or none) is settled by reading the pod back: the same pod (its uid) bound to the node is
//!   Bound; bound elsewhere, gone, or re-created under its name with another uid is a Conflict; unbound
//!   is Failed.
//! - **Status patches, evictions** run at most `write_concurrency` at once, and in order per object
//!   (one write per object in flight), so an older decision never overtakes a newer one. A patch
//!   carrying a `resourceVersion` precondition that meets a conflict is decided again on the fresh
//!   object (it may no longer be needed: the pod got bound, the group turned True).
//! - **Fencing**: a binding or an eviction carries the leadership term it was decided in, and is dropped
//!   before its API call once that term has ended ([`Writers::set_leader`] on step-down): an instance
//!   that lost the lease sends no binding or eviction it had queued, so two schedulers never act at once
//!   (the lease's renew deadline makes a leader step down before another can acquire it).
//! - **Events** are buffered (bounded) and published by a few workers through the runtime's event
//!   recorder (`events`: client-go's series semantics, the note part of an event's identity); when the
//!   buffer is full, events are dropped and counted, as upstream's broadcaster does.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Binding, ObjectReference, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use kwas_api_types::names::conditions::POD_SCHEDULED;
use kwas_api_types::v1alpha3::{CompositePodGroup, PodGroup};
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinSet;
use tracing::{debug, warn};

use super::actions::{Action, EventRecord, GroupStatusUpdate, PodStatusUpdate};
use super::conditions::{group_condition_update, group_status_patch, pod_condition_update, pod_status_patch};
use super::engine::BindResult;
use super::error::is_status;
use super::metrics::Metrics;
use crate::core::{GroupKind, PodKey};

/// A finished binding.
#[derive(Debug)]
pub struct BindDone {
    /// The pod.
    pub pod: PodKey,
    /// The node.
    pub node: String,
    /// What the API server said.
    pub result: BindResult,
}

const MAX_WRITE_ATTEMPTS: u32 = 4;

/// Leadership as the writers see it: a term number that changes whenever leadership does.
#[derive(Debug, Default)]
pub struct Fence {
    term: AtomicU64,
    leading: AtomicBool,
}

impl Fence {
    /// Records whether this instance leads; a change starts a new term.
    pub fn set_leader(&self, leading: bool) {
        if self.leading.swap(leading, Ordering::SeqCst) != leading {
            self.term.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// The current term.
    pub fn term(&self) -> u64 {
        self.term.load(Ordering::SeqCst)
    }

    /// Whether this instance still leads in `term`.
    pub fn holds(&self, term: u64) -> bool {
        self.leading.load(Ordering::SeqCst) && self.term() == term
    }
}

/// The message of a binding dropped because leadership ended.
pub const NOT_LEADER: &str = "no longer the leader";

/// Carries out actions. See the module docs.
#[derive(Clone)]
pub struct Writers {
    io: Io,
    binds: Arc<Semaphore>,
    bind_done: mpsc::UnboundedSender<BindDone>,
    writes: mpsc::UnboundedSender<(Action, u64)>,
}

/// What the background writes need: the client and the event buffer (no handle on the write queue,
/// so the queue closes when the last [`Writers`] is dropped).
#[derive(Clone)]
struct Io {
    client: Client,
    metrics: Metrics,
    events: mpsc::Sender<EventRecord>,
    field_manager: String,
    fence: Arc<Fence>,
}

impl std::fmt::Debug for Writers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writers")
            .field("field_manager", &self.io.field_manager)
            .finish()
    }
}

/// Handles of the background tasks of [`Writers`], to wait for them at shutdown.
#[derive(Debug)]
pub struct WriterTasks {
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl WriterTasks {
    /// Waits until queued writes and events are done (the [`Writers`] must be dropped first), at
    /// most `timeout`.
    pub async fn drain(self, timeout: Duration) {
        let all = futures::future::join_all(self.tasks);
        if tokio::time::timeout(timeout, all).await.is_err() {
            warn!("pending status writes and events were abandoned at shutdown");
        }
    }
}

impl Writers {
    /// Starts the writers. Binding results arrive on `bind_done`.
    pub fn start(
        client: Client,
        metrics: Metrics,
        scheduler_name: &str,
        bind_concurrency: usize,
        write_concurrency: usize,
        event_buffer: usize,
        bind_done: mpsc::UnboundedSender<BindDone>,
    ) -> (Self, WriterTasks) {
        let (writes, writes_rx) = mpsc::unbounded_channel();
        let (events, events_rx) = mpsc::channel(event_buffer.max(1));
        let recorder = super::events::EventRecorder::new(client.clone(), scheduler_name);
        let events_rx = Arc::new(tokio::sync::Mutex::new(events_rx));
        let mut tasks = Vec::new();
        for _ in 0..4 {
            tasks.push(tokio::spawn(publish_events(recorder.clone(), events_rx.clone())));
        }
        let io = Io {
            client,
            metrics,
            events,
            field_manager: scheduler_name.to_string(),
            fence: Arc::default(),
        };
        tasks.push(tokio::spawn(run_writes(
            io.clone(),
            writes_rx,
            write_concurrency.max(1),
        )));
        let writers = Self {
            io,
            binds: Arc::new(Semaphore::new(bind_concurrency.max(1))),
            bind_done,
            writes,
        };
        (writers, WriterTasks { tasks })
    }

    /// Records whether this instance leads: bindings and evictions of an ended term are dropped.
    pub fn set_leader(&self, leading: bool) {
        self.io.fence.set_leader(leading);
    }

    /// Carries out one action (without waiting for it).
    pub fn dispatch(&self, action: Action) {
        let term = self.io.fence.term();
        match action {
            Action::Bind { pod, uid, node, claims } => {
                let io = self.io.clone();
                let binds = self.binds.clone();
                let done = self.bind_done.clone();
                tokio::spawn(async move {
                    let result = match binds.acquire_owned().await {
                        Ok(_permit) if !io.fence.holds(term) => BindResult::Failed(NOT_LEADER.into()),
                        Ok(_permit) => match io.prebind(&claims).await {
                            Ok(()) => io.bind(&pod, uid, &node).await,
                            Err(e) => BindResult::Failed(e),
                        },
                        Err(_) => BindResult::Failed("scheduler shutting down".into()),
                    };
                    let _ = done.send(BindDone { pod, node, result });
                });
            }
            Action::Event(e) => self.io.event(e),
            other => {
                let _ = self.writes.send((other, term));
            }
        }
    }
}

impl Io {
    fn event(&self, e: EventRecord) {
        if self.events.try_send(e).is_err() {
            self.metrics.event_dropped();
        }
    }

    /// Upstream's VolumeBinding PreBind for one pod's claims: pre-bind a static volume (its
    /// `spec.claimRef`) or select the node for the provisioner (the claim's
    /// `volume.kubernetes.io/selected-node`).
    async fn prebind(&self, claims: &[crate::core::ClaimAction]) -> Result<(), String> {
        use crate::core::ClaimAction;
        use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
        for c in claims {
            let result = match c {
                ClaimAction::SelectNode { namespace, claim, node } => {
                    let api: Api<PersistentVolumeClaim> = Api::namespaced(self.client.clone(), namespace);
                    let patch = serde_json::json!({"metadata": {"annotations": {
                        crate::core::filters::volumes::SELECTED_NODE: node}}});
                    api.patch(claim, &self.params(), &kube::api::Patch::Merge(&patch))
                        .await
                        .map(drop)
                }
                ClaimAction::BindVolume {
                    namespace,
                    claim,
                    volume,
                } => {
                    let api: Api<PersistentVolume> = Api::all(self.client.clone());
                    let patch = serde_json::json!({
                        "metadata": {"annotations": {"pv.kubernetes.io/bound-by-controller": "yes"}},
                        "spec": {"claimRef": {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                            "namespace": namespace, "name": claim}}});
                    api.patch(volume, &self.params(), &kube::api::Patch::Merge(&patch))
                        .await
                        .map(drop)
                }
                ClaimAction::ReserveDevices(r) => {
                    if let Err(e) = super::dra_writes::reserve(&self.client, &self.field_manager, r).await {
                        self.metrics.api_error("prebind");
                        return Err(format!("reserving resource claim {}/{}: {e}", r.namespace, r.claim));
                    }
                    Ok(())
                }
            };
            if let Err(e) = result {
                self.metrics.api_error("prebind");
                return Err(format!("binding volumes: {}", api_message(&e)));
            }
        }
        Ok(())
    }

    async fn bind(&self, pod: &PodKey, uid: Option<String>, node: &str) -> BindResult {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &pod.namespace);
        let binding = Binding {
            metadata: ObjectMeta {
                name: Some(pod.name.clone()),
                namespace: Some(pod.namespace.clone()),
                uid: uid.clone(),
                ..Default::default()
            },
            target: ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Node".into()),
                name: Some(node.to_string()),
                ..Default::default()
            },
        };
        match api
            .create_subresource::<Binding, serde_json::Value>("binding", &pod.name, &PostParams::default(), &binding)
            .await
        {
            Ok(_) => BindResult::Bound,
            Err(e) if is_status(&e, 409) || is_status(&e, 404) => BindResult::Conflict(e.to_string()),
            Err(e) if outcome_unknown(&e) => {
                // The binding may have taken effect (an answer lost after the commit): the pod says.
                self.metrics.api_error("bind");
                for attempt in 1..=MAX_WRITE_ATTEMPTS {
                    match api.get_opt(&pod.name).await {
                        Ok(p) => return settle_binding(p.as_ref(), uid.as_deref(), node, &api_message(&e)),
                        Err(_) => tokio::time::sleep(Duration::from_millis(100 * u64::from(attempt))).await,
                    }
                }
                BindResult::Failed(api_message(&e))
            }
            Err(e) => {
                self.metrics.api_error("bind");
                BindResult::Failed(api_message(&e))
            }
        }
    }

    fn params(&self) -> PatchParams {
        PatchParams {
            field_manager: Some(self.field_manager.clone()),
            ..Default::default()
        }
    }

    async fn write(&self, action: Action, term: u64) {
        match action {
            Action::PodStatus(u) => self.pod_status(u).await,
            Action::GroupStatus(u) => self.group_status(u).await,
            Action::Evict {
                pod,
                uid,
                condition,
                event,
            } => {
                if !self.fence.holds(term) {
                    debug!(pod = %pod, "eviction dropped: no longer the leader");
                    return;
                }
                let api: Api<Pod> = Api::namespaced(self.client.clone(), &pod.namespace);
                if let Some(c) = pod_condition_update(None, &condition, Timestamp::now()) {
                    let patch = pod_status_patch(Some(&c), None, None);
                    match api
                        .patch_status(&pod.name, &self.params(), &Patch::Strategic(patch))
                        .await
                    {
                        Ok(_) => {}
                        Err(e) if is_status(&e, 404) => return,
                        Err(e) => {
                            self.metrics.api_error("status");
                            warn!(pod = %pod, error = %e, "cannot mark the victim; deleting it anyway");
                        }
                    }
                }
                if !self.fence.holds(term) {
                    return;
                }
                let dp = DeleteParams {
                    preconditions: uid.map(|uid| Preconditions {
                        uid: Some(uid),
                        resource_version: None,
                    }),
                    ..Default::default()
                };
                match api.delete(&pod.name, &dp).await {
                    Ok(_) => self.event(event),
                    Err(e) if is_status(&e, 404) || is_status(&e, 409) => {}
                    Err(e) => {
                        self.metrics.api_error("delete");
                        warn!(pod = %pod, error = %e, "cannot delete the victim");
                    }
                }
            }
            Action::Bind { .. } | Action::Event(_) => {}
        }
    }

    async fn pod_status(&self, mut u: PodStatusUpdate) {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &u.pod.namespace);
        for attempt in 1..=MAX_WRITE_ATTEMPTS {
            let patch = pod_status_patch(
                u.prepared.as_ref(),
                u.nominated_node_name.as_ref().map(|n| n.as_deref()),
                u.precondition.as_deref(),
            );
            match api
                .patch_status(&u.pod.name, &self.params(), &Patch::Strategic(patch))
                .await
            {
                Ok(_) => return,
                Err(e) if is_status(&e, 404) => return,
                Err(e) if is_status(&e, 409) => {
                    // Decide again on the fresh pod.
                    let fresh = match api.get(&u.pod.name).await {
                        Ok(p) => p,
                        Err(_) => return,
                    };
                    let bound = fresh
                        .spec
                        .as_ref()
                        .and_then(|s| s.node_name.as_ref())
                        .is_some_and(|n| !n.is_empty());
                    if bound || fresh.metadata.deletion_timestamp.is_some() {
                        return;
                    }
                    let current = fresh
                        .status
                        .as_ref()
                        .and_then(|s| s.conditions.as_ref())
                        .and_then(|c| c.iter().find(|c| c.type_ == POD_SCHEDULED));
                    u.prepared = u
                        .desired
                        .as_ref()
                        .and_then(|d| pod_condition_update(current, d, Timestamp::now()));
                    let nominated_now = fresh.status.as_ref().and_then(|s| s.nominated_node_name.clone());
                    if u.nominated_node_name.as_ref() == Some(&nominated_now.filter(|n| !n.is_empty())) {
                        u.nominated_node_name = None;
                    }
                    if u.prepared.is_none() && u.nominated_node_name.is_none() {
                        return;
                    }
                    u.precondition = fresh.metadata.resource_version.clone();
                }
                Err(e) => {
                    self.metrics.api_error("status");
                    debug!(pod = %u.pod, attempt, error = %e, "pod status patch failed");
                    tokio::time::sleep(Duration::from_millis(100 * u64::from(attempt))).await;
                }
            }
        }
        warn!(pod = %u.pod, "pod status not written");
    }

    async fn group_status(&self, u: GroupStatusUpdate) {
        match u.group.kind {
            GroupKind::PodGroup => {
                let api: Api<PodGroup> = Api::namespaced(self.client.clone(), &u.group.namespace);
                self.group_status_with(api, u, |g: &PodGroup| {
                    g.status.as_ref().and_then(|s| s.conditions.clone()).unwrap_or_default()
                })
                .await
            }
            GroupKind::CompositePodGroup => {
                let api: Api<CompositePodGroup> = Api::namespaced(self.client.clone(), &u.group.namespace);
                self.group_status_with(api, u, |g: &CompositePodGroup| {
                    g.status.as_ref().and_then(|s| s.conditions.clone()).unwrap_or_default()
                })
                .await
            }
        }
    }

    async fn group_status_with<K>(
        &self,
        api: Api<K>,
        mut u: GroupStatusUpdate,
        conditions: fn(&K) -> Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>,
    ) where
        K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    {
        for attempt in 1..=MAX_WRITE_ATTEMPTS {
            let patch = group_status_patch(&u.prepared, u.precondition.as_deref());
            match api
                .patch_status(&u.group.name, &self.params(), &Patch::Strategic(patch))
                .await
            {
                Ok(_) => return,
                Err(e) if is_status(&e, 404) => return,
                Err(e) if is_status(&e, 409) => {
                    let fresh = match api.get(&u.group.name).await {
                        Ok(g) => g,
                        Err(_) => return,
                    };
                    match group_condition_update(&conditions(&fresh), &u.desired, Timestamp::now()) {
                        Some(c) => u.prepared = c,
                        None => return,
                    }
                    if u.precondition.is_some() {
                        u.precondition = fresh.meta().resource_version.clone();
                    }
                }
                Err(e) => {
                    self.metrics.api_error("status");
                    debug!(group = %u.group, attempt, error = %e, "group status patch failed");
                    tokio::time::sleep(Duration::from_millis(100 * u64::from(attempt))).await;
                }
            }
        }
        warn!(group = %u.group, "group status not written");
    }
}

/// Whether a request answered `err` may have taken effect anyway: a 5xx (a 504 is an answer lost after
/// the commit) or no answer at all. kube's clients no longer resend such writes (`kwas_api_types::client`), so a
/// binding that ends so is checked on the pod instead of being taken as rejected.
fn outcome_unknown(err: &kube::Error) -> bool {
    match err {
        kube::Error::Api(s) => s.code >= 500,
        _ => true,
    }
}

/// A binding of the pod with `uid` to `node` whose answer was lost, settled by the pod read back by
/// name (`None`: no pod has the name). A pod of that name with another uid was re-created after the one
/// being bound was deleted: the bound pod is gone, and the new one is not this binding's to claim.
fn settle_binding(read_back: Option<&Pod>, uid: Option<&str>, node: &str, error: &str) -> BindResult {
    let Some(pod) = read_back else {
        return BindResult::Conflict(format!("{error}; the pod is gone"));
    };
    let read_uid = pod.metadata.uid.as_deref();
    if let Some(uid) = uid
        && read_uid != Some(uid)
    {
        return BindResult::Conflict(format!(
            "{error}; the pod is gone (its name now belongs to uid {})",
            read_uid.unwrap_or("unknown")
        ));
    }
    match pod.spec.as_ref().and_then(|s| s.node_name.as_deref()) {
        Some(n) if n == node => BindResult::Bound,
        Some(n) => BindResult::Conflict(format!("{error}; the pod is bound to {n}")),
        None => BindResult::Failed(error.to_string()),
    }
}

fn api_message(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => s.message.clone(),
        other => other.to_string(),
    }
}

fn object_key(a: &Action) -> String {
    match a {
        Action::PodStatus(u) => format!("pod/{}", u.pod),
        Action::Evict { pod, .. } => format!("pod/{pod}"),
        Action::GroupStatus(u) => format!("group/{}", u.group),
        Action::Bind { pod, .. } => format!("pod/{pod}"),
        Action::Event(_) => String::new(),
    }
}

/// Runs status writes and evictions: per object in order, `concurrency` objects at once.
async fn run_writes(writers: Io, mut rx: mpsc::UnboundedReceiver<(Action, u64)>, concurrency: usize) {
    let mut pending: HashMap<String, VecDeque<(Action, u64)>> = HashMap::new();
    let mut ready: VecDeque<String> = VecDeque::new();
    let mut busy: HashSet<String> = HashSet::new();
    let mut running: JoinSet<String> = JoinSet::new();
    let mut open = true;
    loop {
        while running.len() < concurrency
            && let Some(key) = ready.pop_front()
        {
            let Some((action, term)) = pending.get_mut(&key).and_then(VecDeque::pop_front) else {
                continue;
            };
            if pending.get(&key).is_some_and(VecDeque::is_empty) {
                pending.remove(&key);
            }
            busy.insert(key.clone());
            let w = writers.clone();
            running.spawn(async move {
                w.write(action, term).await;
                key
            });
        }
        if !open && running.is_empty() && ready.is_empty() {
            break;
        }
        tokio::select! {
            a = rx.recv(), if open => match a {
                Some(a) => {
                    let key = object_key(&a.0);
                    let queue = pending.entry(key.clone()).or_default();
                    queue.push_back(a);
                    if queue.len() == 1 && !busy.contains(&key) {
                        ready.push_back(key);
                    }
                }
                None => open = false,
            },
            Some(done) = running.join_next(), if !running.is_empty() => {
                if let Ok(key) = done {
                    busy.remove(&key);
                    if pending.contains_key(&key) {
                        ready.push_back(key);
                    }
                }
            }
        }
    }
}

async fn publish_events(
    recorder: super::events::EventRecorder,
    rx: Arc<tokio::sync::Mutex<mpsc::Receiver<EventRecord>>>,
) {
    loop {
        let next = rx.lock().await.recv().await;
        let Some(e) = next else {
            return;
        };
        if let Err(err) = recorder.publish(&e).await {
            debug!(error = %err, reason = %e.reason, "event not recorded");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pod `p` with `uid`, bound to `node` when given.
    fn pod(uid: &str, node: Option<&str>) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "namespace": "default", "uid": uid},
            "spec": {"nodeName": node, "containers": []}
        }))
        .unwrap()
    }

    #[test]
    fn a_binding_whose_answer_was_lost_is_settled_by_the_pod() {
        let settle = |read_back: Option<&Pod>| settle_binding(read_back, Some("u1"), "n1", "504");
        assert_eq!(settle(Some(&pod("u1", Some("n1")))), BindResult::Bound);
        assert!(matches!(settle(Some(&pod("u1", Some("n2")))), BindResult::Conflict(m) if m.ends_with("bound to n2")));
        assert!(matches!(settle(None), BindResult::Conflict(m) if m.ends_with("the pod is gone")));
        assert_eq!(settle(Some(&pod("u1", None))), BindResult::Failed("504".into()));
        // Without a uid to compare (the informer had none), the name decides.
        assert_eq!(
            settle_binding(Some(&pod("u9", Some("n1"))), None, "n1", "504"),
            BindResult::Bound
        );
        let api_error = |code: u16| {
            let status: kube::core::Status =
                serde_json::from_value(serde_json::json!({"status": "Failure", "message": "m", "code": code})).unwrap();
            kube::Error::Api(status.into())
        };
        assert!(outcome_unknown(&api_error(504)));
        assert!(outcome_unknown(&api_error(500)));
        let rejected = api_error(403);
        assert!(!outcome_unknown(&rejected));
    }

    #[test]
    fn a_pod_deleted_and_re_created_under_its_name_is_gone_whatever_the_new_one_shows() {
        // Bound by someone else to the very node, unbound, or bound elsewhere: none is the pod being bound.
        for node in [Some("n1"), None, Some("n2")] {
            let recreated = pod("u2", node);
            assert!(
                matches!(
                    settle_binding(Some(&recreated), Some("u1"), "n1", "504"),
                    BindResult::Conflict(m) if m.contains("the pod is gone") && m.contains("uid u2")
                ),
                "re-created pod on {node:?}"
            );
        }
        let mut without_uid = pod("u2", Some("n1"));
        without_uid.metadata.uid = None;
        assert!(matches!(
            settle_binding(Some(&without_uid), Some("u1"), "n1", "504"),
            BindResult::Conflict(_)
        ));
    }

    #[test]
    fn a_term_ends_when_leadership_changes() {
        let fence = Fence::default();
        let t0 = fence.term();
        assert!(!fence.holds(t0), "a follower holds no term");
        fence.set_leader(true);
        let t1 = fence.term();
        assert!(fence.holds(t1) && !fence.holds(t0));
        fence.set_leader(true);
        assert!(fence.holds(t1), "renewals keep the term");
        fence.set_leader(false);
        assert!(!fence.holds(t1), "work of the ended term is dropped");
        fence.set_leader(true);
        assert!(!fence.holds(t1), "a new term does not revive the old one");
    }
}
