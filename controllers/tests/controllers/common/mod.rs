//! Shared helpers for the controllers' devcluster tests: a cluster, a stand-in binder (these tests do not
//! need the scheduler; they bind pods through the binding subresource themselves), controllers that can be
//! stopped and restarted, and polling.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Binding, ObjectReference, Pod};
use kube::api::{Api, ListParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use kwas_controllers::job::plan::JobConfig;
use kwas_controllers::job::{self, JobControllerConfig};
use kwas_controllers::jobset::{self, JobSetControllerConfig};
use kwas_controllers::metrics::Metrics;
use kwas_devcluster::{DevCluster, DevClusterConfig};
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A small cluster (2 racks x 2 nodes), fast kubelet and controllers of the API server.
pub async fn cluster_with(tweak: impl FnOnce(&mut DevClusterConfig)) -> DevCluster {
    let mut config = kwas_devcluster::testing::fast_config(kwas_devcluster::testing::small_topology());
    tweak(&mut config);
    DevCluster::start(config).await.expect("devcluster starts")
}

/// The default test cluster.
pub async fn cluster() -> DevCluster {
    cluster_with(|_| {}).await
}

/// A background task that stops when dropped or stopped; a controller's task also keeps the controller's
/// metrics, so a test can tell that the controller has processed something.
pub struct Task {
    stop: Option<oneshot::Sender<()>>,
    handle: JoinHandle<()>,
    metrics: Option<Metrics>,
}

impl Task {
    /// The metrics of the controller this task runs.
    pub fn metrics(&self) -> &Metrics {
        self.metrics.as_ref().expect("a controller task")
    }

    /// Reconciles of `controller` so far, whatever their result.
    pub fn reconciles(&self, controller: &str) -> u64 {
        ["success", "error", "skipped"]
            .iter()
            .map(|r| self.metrics().reconciles(controller, r))
            .sum()
    }

    /// Stop the task and wait for it (a controller "crash": no more reconciles from this instance).
    pub async fn stop(mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        self.handle.abort();
        let _ = (&mut self.handle).await;
    }
}

impl Drop for Task {
    fn drop(&mut self) {
        self.handle.abort();
    }
}

fn spawn<F>(f: impl FnOnce(oneshot::Receiver<()>) -> F) -> Task
where
    F: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = oneshot::channel();
    Task {
        stop: Some(tx),
        handle: tokio::spawn(f(rx)),
        metrics: None,
    }
}

/// Job controller settings for tests: manages Jobs with no `managedBy`, short failure backoff.
pub fn job_config() -> JobControllerConfig {
    JobControllerConfig {
        manage_unset: true,
        job: JobConfig {
            backoff_base: Duration::from_millis(50),
            backoff_max: Duration::from_millis(200),
        },
        ..Default::default()
    }
}

/// Start the Job controller.
pub fn start_job_controller(client: Client, config: JobControllerConfig) -> Task {
    let metrics = Metrics::unregistered();
    let kept = metrics.clone();
    let mut task = spawn(move |rx| async move {
        let ctx = job::Context::new(client, config, metrics);
        job::run(ctx, async move {
            let _ = rx.await;
        })
        .await;
    });
    task.metrics = Some(kept);
    task
}

/// Start the JobSet controller.
pub fn start_jobset_controller(client: Client, config: JobSetControllerConfig) -> Task {
    let metrics = Metrics::unregistered();
    let kept = metrics.clone();
    let mut task = spawn(move |rx| async move {
        let ctx = jobset::Context::new(client, config, metrics);
        jobset::run(ctx, async move {
            let _ = rx.await;
        })
        .await;
    });
    task.metrics = Some(kept);
    task
}

/// A stand-in scheduler: binds every pending pod to the nodes in turn, through `pods/binding`.
pub fn start_binder(client: Client, nodes: Vec<String>) -> Task {
    spawn(move |_rx| async move {
        let pods: Api<Pod> = Api::all(client.clone());
        let mut stream = std::pin::pin!(
            watcher(pods, watcher::Config::default().fields("spec.nodeName="))
                .applied_objects()
                .default_backoff()
        );
        let mut bound = BTreeSet::new();
        let mut next = 0usize;
        while let Some(Ok(pod)) = stream.next().await {
            let uid = pod.uid().unwrap_or_default();
            if pod.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some()
                || pod.metadata.deletion_timestamp.is_some()
                || !bound.insert(uid)
            {
                continue;
            }
            let node = nodes[next % nodes.len()].clone();
            next += 1;
            let binding = Binding {
                metadata: kube::api::ObjectMeta {
                    name: Some(pod.name_any()),
                    namespace: pod.namespace(),
                    ..Default::default()
                },
                target: ObjectReference {
                    api_version: Some("v1".into()),
                    kind: Some("Node".into()),
                    name: Some(node),
                    ..Default::default()
                },
            };
            let api: Api<Pod> = Api::namespaced(client.clone(), &pod.namespace().unwrap_or_default());
            let _ = api
                .create_subresource::<Binding, Binding>("binding", &pod.name_any(), &PostParams::default(), &binding)
                .await;
        }
    })
}

/// The toolkit's wait (polls a condition, reports what it last saw on timeout).
pub use kwas_test_tools::wait::eventually_within;
/// Waits until `controller` (run by `task`) has finished a reconcile that started after this call: the
/// positive signal that must come before asserting that the controller did *not* do something. Twice, it
/// calls `poke` (which must change the object, e.g. bump an annotation, so that the controller reconciles
/// it) and waits for the reconcile count to rise. One rise may come from a reconcile already running when
/// this was called; the reconcile that raises the count after the second poke started after that one
/// ended (a controller never reconciles one object twice at once), or after the second poke. The object
/// poked should be the only one the controller reconciles meanwhile.
pub async fn reconciled_after_now<F, Fut>(task: &Task, controller: &str, mut poke: F)
where
    F: FnMut(u32) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    for round in 0..2 {
        let before = task.reconciles(controller);
        poke(round).await;
        eventually_within(
            Duration::from_secs(20),
            format!("a {controller} reconcile after poke {round}"),
            || async { (task.reconciles(controller) > before).then_some(()) },
        )
        .await;
    }
}

/// Sets annotation `kwas.test/poke` on the namespaced object `name` to `value` (a change that makes its
/// controller reconcile it, and that no controller reads).
pub async fn poke<K>(client: &Client, name: &str, value: u32)
where
    K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    Api::<K>::namespaced(client.clone(), "default")
        .patch(
            name,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(serde_json::json!({
                "metadata": {"annotations": {"kwas.test/poke": value.to_string()}}
            })),
        )
        .await
        .expect("poke");
}

/// A Job in `default` with `spec` (a one-container template when `spec` has none).
pub fn job(name: &str, spec: Value) -> Job {
    let mut spec = spec;
    if spec.get("template").is_none() {
        spec["template"] =
            json!({"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}});
    }
    serde_json::from_value(json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": "default"}, "spec": spec}))
        .unwrap()
}

/// The Job `name` in `default`.
pub async fn get(client: &Client, name: &str) -> Job {
    Api::<Job>::namespaced(client.clone(), "default")
        .get(name)
        .await
        .unwrap()
}

/// The pods of Job `job` in `default`, by its job-name label.
pub async fn pods_of(client: &Client, job: &str) -> Vec<Pod> {
    Api::<Pod>::namespaced(client.clone(), "default")
        .list(&ListParams::default().labels(&format!("batch.kubernetes.io/job-name={job}")))
        .await
        .unwrap()
        .items
}
