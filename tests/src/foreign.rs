//! A second scheduler next to kwas, as kube-scheduler runs on a real cluster: [`ForeignScheduler`] binds
//! the pods that name it (`spec.schedulerName`) and have no node, by its own simple rule and its own view
//! of the cluster, so a test can show kwas sharing nodes with another scheduler (and racing it).
//!
//! Its rule: a pod pinned to a node by required node affinity on `metadata.name` (a DaemonSet's pod) goes
//! there; any other pod goes to the first node, by name, whose allocatable cpu covers the pod's cpu
//! requests next to the non-terminal pods bound there. It does not reserve what it binds between passes
//! beyond what the API shows, and knows nothing of kwas' bindings in flight: like two real schedulers,
//! the two can race, and the kubelet rejects what does not fit (`OutOfcpu`).

use std::time::Duration;

use k8s_openapi::api::core::v1::{Binding, Node, ObjectReference, Pod};
use kube::api::{Api, ListParams, ObjectMeta, PostParams};
use kube::{Client, ResourceExt};
use tokio::task::JoinHandle;

/// A running stand-in scheduler; stops when dropped.
#[derive(Debug)]
pub struct ForeignScheduler {
    task: JoinHandle<()>,
}

impl Drop for ForeignScheduler {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn cpu_millis(pod: &Pod) -> i64 {
    pod.spec
        .as_ref()
        .map(|s| {
            s.containers
                .iter()
                .filter_map(|c| c.resources.as_ref()?.requests.as_ref()?.get("cpu"))
                .filter_map(|q| kwas_api_types::quantity::parse_cpu_millis(&q.0).ok())
                .fold(0i64, i64::saturating_add)
        })
        .unwrap_or(0)
}

fn pinned_node(pod: &Pod) -> Option<String> {
    let terms = &pod
        .spec
        .as_ref()?
        .affinity
        .as_ref()?
        .node_affinity
        .as_ref()?
        .required_during_scheduling_ignored_during_execution
        .as_ref()?
        .node_selector_terms;
    terms.iter().find_map(|t| {
        t.match_fields
            .as_ref()?
            .iter()
            .find(|r| r.key == "metadata.name" && r.operator == "In")?
            .values
            .as_ref()?
            .first()
            .cloned()
    })
}

fn terminal(pod: &Pod) -> bool {
    matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    )
}

/// The node for `pod`, if any.
fn choose(pod: &Pod, nodes: &[Node], pods: &[Pod]) -> Option<String> {
    if let Some(node) = pinned_node(pod) {
        return Some(node);
    }
    let want = cpu_millis(pod);
    let mut names: Vec<&Node> = nodes.iter().collect();
    names.sort_by_key(|n| n.name_any());
    names.into_iter().find_map(|n| {
        let name = n.name_any();
        let allocatable = n
            .status
            .as_ref()?
            .allocatable
            .as_ref()?
            .get("cpu")
            .and_then(|q| kwas_api_types::quantity::parse_cpu_millis(&q.0).ok())?;
        let used = pods
            .iter()
            .filter(|p| !terminal(p) && p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(name.as_str()))
            .map(cpu_millis)
            .fold(0i64, i64::saturating_add);
        (used.saturating_add(want) <= allocatable).then_some(name)
    })
}

impl ForeignScheduler {
    /// Binds the pods of `scheduler_name` in the default namespace's cluster of `client`, every 100 ms.
    pub fn start(client: Client, scheduler_name: &str) -> Self {
        let name = scheduler_name.to_string();
        let task = tokio::spawn(async move {
            let (nodes, pods): (Api<Node>, Api<Pod>) = (Api::all(client.clone()), Api::all(client.clone()));
            loop {
                if let (Ok(n), Ok(p)) = (
                    nodes.list(&ListParams::default()).await,
                    pods.list(&ListParams::default()).await,
                ) {
                    let mut all = p.items;
                    for i in 0..all.len() {
                        let pod = &all[i];
                        let spec = pod.spec.as_ref();
                        let mine = spec.and_then(|s| s.scheduler_name.as_deref()) == Some(name.as_str());
                        if !mine
                            || spec.and_then(|s| s.node_name.as_ref()).is_some()
                            || pod.metadata.deletion_timestamp.is_some()
                        {
                            continue;
                        }
                        let Some(node) = choose(pod, &n.items, &all) else {
                            continue;
                        };
                        let ns = pod.namespace().unwrap_or_default();
                        let binding = Binding {
                            metadata: ObjectMeta {
                                name: Some(pod.name_any()),
                                ..ObjectMeta::default()
                            },
                            target: ObjectReference {
                                kind: Some("Node".into()),
                                name: Some(node.clone()),
                                ..ObjectReference::default()
                            },
                        };
                        let api: Api<Pod> = Api::namespaced(client.clone(), &ns);
                        if api
                            .create_subresource::<Binding, serde_json::Value>(
                                "binding",
                                &pod.name_any(),
                                &PostParams::default(),
                                &binding,
                            )
                            .await
                            .is_ok()
                        {
                            // What it bound counts in the rest of this pass.
                            if let Some(s) = all[i].spec.as_mut() {
                                s.node_name = Some(node);
                            }
                        }
                    }
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        });
        ForeignScheduler { task }
    }
}
