//! The scheduler runtime against devcluster: a real API server on loopback with simulated nodes
//! and kubelet. Every test starts its own cluster and scheduler.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use kwas_test_tools::wait::eventually_within;
use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kwas_api_types::names::conditions::{
    COMPOSITE_POD_GROUP_INITIALLY_SCHEDULED, DISRUPTION_TARGET, POD_GROUP_INITIALLY_SCHEDULED, POD_GROUP_SATISFIED,
    POD_SCHEDULED, REASON_BELOW_MIN_COUNT, REASON_MIN_COUNT_SATISFIED, REASON_PREEMPTION_BY_SCHEDULER,
    REASON_SCHEDULED, REASON_SCHEDULER_ERROR, REASON_UNSCHEDULABLE,
};
use kwas_api_types::v1alpha3::{CompositePodGroup, PodGroup};
use kwas_devcluster::{Capacity, DevCluster, DevClusterConfig, FaultConfig, FaultRule, Topology, Verb};
use kwas_scheduler::core::testing::{GroupBuilder, pod_with};
use kwas_scheduler::runtime::{
    BackoffConfig, REASON_SCHEDULING_GATED, RuntimeConfig, RuntimeHandle, SchedulerRuntime, scheduler_lease,
};
use tokio::sync::oneshot;

const NS: &str = "default";
const TIMEOUT: Duration = Duration::from_secs(20);

async fn cluster(blocks: u32, racks: u32, nodes: u32, cpu: &str) -> DevCluster {
    DevCluster::start(DevClusterConfig {
        topology: Topology::grid(
            blocks,
            racks,
            nodes,
            Capacity {
                cpu: cpu.into(),
                memory: "64Gi".into(),
                ..Default::default()
            },
        ),
        ..Default::default()
    })
    .await
    .unwrap()
}

fn config() -> RuntimeConfig {
    RuntimeConfig {
        backoff: BackoffConfig {
            initial: Duration::from_millis(100),
            max: Duration::from_millis(500),
            max_unschedulable: Duration::from_secs(5),
        },
        ..Default::default()
    }
}

struct Running {
    handle: RuntimeHandle,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<Result<(), kwas_scheduler::runtime::Error>>,
}

impl Running {
    async fn stop(mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        self.task.await.unwrap().unwrap();
    }
}

fn start(client: Client, config: RuntimeConfig) -> Running {
    let rt = SchedulerRuntime::new(client, config).unwrap();
    let handle = rt.handle();
    let (tx, rx) = oneshot::channel::<()>();
    let task = tokio::spawn(rt.run(async move {
        let _ = rx.await;
    }));
    Running {
        handle,
        stop: Some(tx),
        task,
    }
}

fn pod(name: &str, group: Option<&str>, cpu: &str) -> Pod {
    let mut p = pod_with(NS, name, group, &[("cpu", cpu), ("memory", "1Gi")]);
    let spec = p.spec.as_mut().unwrap();
    spec.scheduler_name = Some("kwas-scheduler".into());
    spec.containers[0].image = Some("registry.k8s.io/pause:3.10".into());
    p
}

/// The pod with `spec.priorityClassName` (admission resolves the priority).
fn in_class(mut p: Pod, class: &str) -> Pod {
    p.spec.as_mut().unwrap().priority_class_name = Some(class.into());
    p
}

async fn priority_class(client: &Client, name: &str, value: i32) {
    let pc = PriorityClass {
        metadata: kube::api::ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        value: Some(value),
        ..Default::default()
    };
    Api::<PriorityClass>::all(client.clone())
        .create(&PostParams::default(), &pc)
        .await
        .unwrap();
}

async fn create_group_in_class(client: &Client, g: &GroupBuilder, class: &str) {
    let mut pg = g.pod_group();
    pg.spec.priority_class_name = Some(class.into());
    Api::<PodGroup>::namespaced(client.clone(), NS)
        .create(&PostParams::default(), &pg)
        .await
        .unwrap();
}

async fn create_pod(client: &Client, p: Pod) {
    Api::<Pod>::namespaced(client.clone(), NS)
        .create(&PostParams::default(), &p)
        .await
        .unwrap();
}

async fn create_group(client: &Client, g: &GroupBuilder) {
    Api::<PodGroup>::namespaced(client.clone(), NS)
        .create(&PostParams::default(), &g.pod_group())
        .await
        .unwrap();
}

async fn create_composite(client: &Client, g: &GroupBuilder) {
    Api::<CompositePodGroup>::namespaced(client.clone(), NS)
        .create(&PostParams::default(), &g.composite())
        .await
        .unwrap();
}

async fn pods(client: &Client) -> Vec<Pod> {
    Api::<Pod>::namespaced(client.clone(), NS)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
}

fn node_of(p: &Pod) -> Option<String> {
    p.spec.as_ref().and_then(|s| s.node_name.clone())
}

fn name_of(p: &Pod) -> String {
    p.metadata.name.clone().unwrap_or_default()
}

/// Pod name -> node, for bound pods whose name starts with `prefix`.
async fn bound(client: &Client, prefix: &str) -> BTreeMap<String, String> {
    pods(client)
        .await
        .iter()
        .filter(|p| name_of(p).starts_with(prefix))
        .filter_map(|p| node_of(p).map(|n| (name_of(p), n)))
        .collect()
}

fn pod_condition(p: &Pod, type_: &str) -> Option<(String, String, String)> {
    p.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| {
            (
                c.status.clone(),
                c.reason.clone().unwrap_or_default(),
                c.message.clone().unwrap_or_default(),
            )
        })
}

async fn get_pod(client: &Client, name: &str) -> Option<Pod> {
    Api::<Pod>::namespaced(client.clone(), NS).get_opt(name).await.unwrap()
}

async fn group_condition(client: &Client, name: &str, type_: &str) -> Option<(String, String, String)> {
    let g = Api::<PodGroup>::namespaced(client.clone(), NS).get(name).await.ok()?;
    g.status?
        .conditions?
        .into_iter()
        .find(|c| c.type_ == type_)
        .map(|c| (c.status, c.reason, c.message))
}

async fn composite_condition(client: &Client, name: &str, type_: &str) -> Option<(String, String, String)> {
    let g = Api::<CompositePodGroup>::namespaced(client.clone(), NS)
        .get(name)
        .await
        .ok()?;
    g.status?
        .conditions?
        .into_iter()
        .find(|c| c.type_ == type_)
        .map(|c| (c.status, c.reason, c.message))
}

async fn node_labels(client: &Client) -> BTreeMap<String, BTreeMap<String, String>> {
    Api::<Node>::all(client.clone())
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|n| (n.metadata.name.clone().unwrap(), n.metadata.labels.unwrap_or_default()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gang_binds_nothing_until_it_fits_then_everything() {
    let c = cluster(1, 1, 2, "2").await;
    let client = c.client();
    let s = start(client.clone(), config());
    // A blocker takes half the cluster.
    create_pod(&client, pod("blocker", None, "2")).await;
    eventually_within(TIMEOUT, "the blocker bound", || async {
        bound(&client, "blocker").await.len() == 1
    })
    .await;

    create_group(&client, &GroupBuilder::gang(NS, "gang", 3)).await;
    for i in 0..3 {
        create_pod(&client, pod(&format!("gang-{i}"), Some("gang"), "1")).await;
    }
    eventually_within(TIMEOUT, "the gang reported unschedulable", || async {
        group_condition(&client, "gang", POD_GROUP_INITIALLY_SCHEDULED)
            .await
            .is_some_and(|c| c.0 == "False" && c.1 == REASON_UNSCHEDULABLE)
    })
    .await;
    eventually_within(TIMEOUT, "the gang's pods reported unschedulable", || async {
        get_pod(&client, "gang-0")
            .await
            .and_then(|p| pod_condition(&p, POD_SCHEDULED))
            .is_some_and(|c| c.0 == "False" && c.1 == REASON_UNSCHEDULABLE && c.2.contains("nodes are available"))
    })
    .await;
    assert!(bound(&client, "gang").await.is_empty(), "all or nothing");

    Api::<Pod>::namespaced(client.clone(), NS)
        .delete("blocker", &DeleteParams::default())
        .await
        .unwrap();
    eventually_within(TIMEOUT, "the gang bound", || async {
        bound(&client, "gang").await.len() == 3
    })
    .await;
    eventually_within(TIMEOUT, "the gang's condition", || async {
        group_condition(&client, "gang", POD_GROUP_INITIALLY_SCHEDULED)
            .await
            .is_some_and(|c| c.0 == "True" && c.1 == REASON_SCHEDULED)
    })
    .await;
    // The metrics are counted after the writes the API shows: wait for them too.
    eventually_within(TIMEOUT, "the four pods counted as scheduled", || async {
        s.handle.metrics().pods_scheduled() >= 4
    })
    .await;
    let text = s.handle.metrics().encode();
    assert!(
        text.contains("kwas_scheduler_group_attempt_duration_seconds_count{result=\"scheduled\"}"),
        "{text}"
    );
    // kube-scheduler's series for the same attempt, and the queue by entity type.
    for needle in [
        "scheduler_podgroup_schedule_attempts_total{profile=\"kwas-scheduler\",result=\"scheduled\",type=\"podgroup\"}",
        "scheduler_podgroup_scheduling_attempt_duration_seconds_count{profile=\"kwas-scheduler\",result=\"scheduled\",type=\"podgroup\"}",
        "scheduler_queued_entities{queue=\"active\",type=\"podgroup\"}",
    ] {
        assert!(text.contains(needle), "missing {needle} in\n{text}");
    }
    s.stop().await;
    c.shutdown().await;
}

/// `GET path` on the admin server: (status code, body).
async fn http_get(addr: std::net::SocketAddr, path: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let code = response.split_whitespace().nth(1).unwrap().parse().unwrap();
    let body = response.split("\r\n\r\n").nth(1).unwrap_or_default().to_string();
    (code, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admin_server_serves_health_readiness_and_metrics() {
    let c = cluster(1, 1, 1, "4").await;
    let client = c.client();
    let s = start(
        client.clone(),
        RuntimeConfig {
            admin_addr: Some("127.0.0.1:0".parse().unwrap()),
            ..config()
        },
    );
    eventually_within(TIMEOUT, "ready", || async { s.handle.is_ready() }).await;
    let addr = s.handle.admin_addr().unwrap();
    assert_eq!(http_get(addr, "/healthz").await, (200, "ok".into()));
    assert_eq!(http_get(addr, "/readyz").await, (200, "ok".into()));
    create_pod(&client, pod("p", None, "1")).await;
    eventually_within(TIMEOUT, "bound", || async { bound(&client, "p").await.len() == 1 }).await;
    eventually_within(TIMEOUT, "counted", || async {
        s.handle.metrics().pods_scheduled() == 1
    })
    .await;
    let (code, text) = http_get(addr, "/metrics").await;
    assert_eq!(code, 200);
    for needle in [
        "kwas_scheduler_pods_scheduled_total 1",
        "kwas_scheduler_pod_attempt_duration_seconds_count{result=\"scheduled\"} 1",
        "kwas_scheduler_queue_depth{queue=\"active\"} 0",
        "kwas_scheduler_is_leader 1",
        "kwas_scheduler_preemption_victims_total 0",
    ] {
        assert!(text.contains(needle), "{needle} not in\n{text}");
    }
    s.stop().await;
    // Once stopped, nothing listens any more.
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_pods_are_scheduled_one_by_one_and_others_are_left_alone() {
    let c = cluster(1, 1, 2, "2").await;
    let client = c.client();
    let s = start(client.clone(), config());
    for i in 0..5 {
        create_pod(&client, pod(&format!("basic-{i}"), None, "1")).await;
    }
    let mut other = pod("other", None, "1");
    other.spec.as_mut().unwrap().scheduler_name = Some("someone-else".into());
    create_pod(&client, other).await;
    eventually_within(TIMEOUT, "four of five bound", || async {
        bound(&client, "basic").await.len() == 4
    })
    .await;
    eventually_within(TIMEOUT, "the fifth reported unschedulable", || async {
        let all = pods(&client).await;
        all.iter().any(|p| {
            name_of(p).starts_with("basic")
                && node_of(p).is_none()
                && pod_condition(p, POD_SCHEDULED).is_some_and(|c| c.1 == REASON_UNSCHEDULABLE)
        })
    })
    .await;
    let other = get_pod(&client, "other").await.unwrap();
    assert!(node_of(&other).is_none());
    assert!(
        pod_condition(&other, POD_SCHEDULED).is_none(),
        "another scheduler's pod is not touched"
    );
    s.stop().await;
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_pods_carry_upstreams_messages() {
    let c = cluster(1, 1, 2, "8").await;
    let client = c.client();
    let s = start(client.clone(), config());
    create_pod(&client, pod("orphan", Some("later"), "1")).await;
    create_group(&client, &GroupBuilder::gang(NS, "short", 3)).await;
    create_pod(&client, pod("short-0", Some("short"), "1")).await;
    eventually_within(TIMEOUT, "waiting messages", || async {
        let o = get_pod(&client, "orphan")
            .await
            .and_then(|p| pod_condition(&p, POD_SCHEDULED));
        let g = get_pod(&client, "short-0")
            .await
            .and_then(|p| pod_condition(&p, POD_SCHEDULED));
        o == Some((
            "False".into(),
            REASON_SCHEDULING_GATED.into(),
            "waiting for pods's pod group \"later\" to appear in scheduling queue".into(),
        )) && g
            == Some((
                "False".into(),
                REASON_SCHEDULING_GATED.into(),
                "waiting for minCount pods from a gang to appear in scheduling queue".into(),
            ))
    })
    .await;
    create_group(&client, &GroupBuilder::gang(NS, "later", 1)).await;
    eventually_within(TIMEOUT, "the orphan bound once its group exists", || async {
        bound(&client, "orphan").await.len() == 1
    })
    .await;
    assert!(bound(&client, "short").await.is_empty());
    s.stop().await;
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gang_of_gangs_lands_each_gang_in_one_rack_all_in_one_block() {
    // 2 blocks x 2 racks x 2 nodes of 4 cpu.
    let c = cluster(2, 2, 2, "4").await;
    let client = c.client();
    let s = start(client.clone(), config());
    create_composite(&client, &GroupBuilder::gang(NS, "jobset", 2).topology("kwas.dev/block")).await;
    for (k, job) in ["job-a", "job-b"].iter().enumerate() {
        create_group(
            &client,
            &GroupBuilder::gang(NS, job, 4)
                .parent("jobset")
                .topology("kwas.dev/rack")
                .created(k as i64),
        )
        .await;
        for i in 0..4 {
            create_pod(&client, pod(&format!("{job}-{i}"), Some(job), "2")).await;
        }
    }
    eventually_within(TIMEOUT, "both gangs bound", || async {
        bound(&client, "job-").await.len() == 8
    })
    .await;
    let labels = node_labels(&client).await;
    let placed = bound(&client, "job-").await;
    let label = |node: &str, key: &str| labels[node][key].clone();
    for job in ["job-a", "job-b"] {
        let racks: std::collections::BTreeSet<String> = placed
            .iter()
            .filter(|(p, _)| p.starts_with(job))
            .map(|(_, n)| label(n, "kwas.dev/rack"))
            .collect();
        assert_eq!(racks.len(), 1, "{job} in one rack: {placed:?}");
    }
    let blocks: std::collections::BTreeSet<String> = placed.values().map(|n| label(n, "kwas.dev/block")).collect();
    assert_eq!(blocks.len(), 1, "all in one block: {placed:?}");
    eventually_within(TIMEOUT, "the composite's condition", || async {
        composite_condition(&client, "jobset", COMPOSITE_POD_GROUP_INITIALLY_SCHEDULED)
            .await
            .is_some_and(|c| c.0 == "True")
    })
    .await;
    s.stop().await;
    c.shutdown().await;
}

/// Waits until `pod` is bound, recording the `DisruptionTarget` conditions seen on pods meanwhile
/// (victims carry it while they terminate) and the nominations the preemptor got.
async fn bound_after_preemption(
    client: &Client,
    pod: &str,
) -> (BTreeMap<String, (String, String, String)>, Option<String>) {
    let seen = std::cell::RefCell::new((BTreeMap::new(), None));
    eventually_within(TIMEOUT, format!("{pod} bound"), || async {
        let all = pods(client).await;
        let (victims, nominated) = &mut *seen.borrow_mut();
        for p in &all {
            if let Some(c) = pod_condition(p, DISRUPTION_TARGET) {
                victims.insert(name_of(p), c);
            }
            if name_of(p) == pod
                && let Some(n) = p.status.as_ref().and_then(|s| s.nominated_node_name.clone())
            {
                *nominated = Some(n);
            }
        }
        all.iter().any(|p| name_of(p) == pod && node_of(p).is_some())
    })
    .await;
    seen.into_inner()
}

/// Fills two 4-cpu nodes with a low-priority gang of four 2-cpu pods (disruption mode `all` or
/// `single`), then creates a 2-cpu high-priority gang; returns the victims seen, the preemptor's
/// nomination and node, and the low gang's pods left bound.
async fn preempt_one_gang(
    all: bool,
) -> (
    BTreeMap<String, (String, String, String)>,
    Option<String>,
    Option<String>,
    usize,
    DevCluster,
) {
    let c = cluster(1, 1, 2, "4").await;
    let client = c.client();
    let s = start(client.clone(), config());
    priority_class(&client, "low", 1).await;
    priority_class(&client, "high", 100).await;
    let b = GroupBuilder::gang(NS, "low", 4);
    create_group_in_class(&client, &if all { b.all() } else { b }, "low").await;
    for i in 0..4 {
        create_pod(&client, in_class(pod(&format!("low-{i}"), Some("low"), "2"), "low")).await;
    }
    eventually_within(TIMEOUT, "the low gang bound", || async {
        bound(&client, "low-").await.len() == 4
    })
    .await;
    create_group_in_class(&client, &GroupBuilder::gang(NS, "high", 1), "high").await;
    create_pod(&client, in_class(pod("high-0", Some("high"), "2"), "high")).await;
    let (victims, nominated) = bound_after_preemption(&client, "high-0").await;
    let node = node_of(&get_pod(&client, "high-0").await.unwrap());
    let left = bound(&client, "low-").await.len();
    let expected = if all { 4 } else { 1 };
    eventually_within(TIMEOUT, "victims counted", || async {
        s.handle.metrics().victims() == expected
    })
    .await;
    for (name, (status, reason, message)) in &victims {
        assert!(name.starts_with("low-"), "{name}");
        assert_eq!(
            (status.as_str(), reason.as_str()),
            ("True", REASON_PREEMPTION_BY_SCHEDULER)
        );
        assert!(
            message.starts_with("kwas-scheduler: preempting to accommodate a higher priority podgroup ")
                && message.contains(" (priority "),
            "{message}"
        );
    }
    s.stop().await;
    (victims, nominated, node, left, c)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preemption_takes_only_what_it_needs_from_a_single_gang() {
    let (victims, nominated, node, left, c) = preempt_one_gang(false).await;
    assert_eq!(left, 3, "one pod of the `single` gang goes");
    assert!(victims.len() <= 1, "{victims:?}");
    if let Some(n) = nominated {
        assert_eq!(Some(n), node, "bound where it was nominated");
    }
    let client = c.client();
    assert!(group_condition(&client, "low", DISRUPTION_TARGET).await.is_none());
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preemption_takes_an_all_gang_whole() {
    let (_, nominated, node, left, c) = preempt_one_gang(true).await;
    assert_eq!(
        left, 0,
        "the `all` gang goes whole, though one pod would have made room"
    );
    if let Some(n) = nominated {
        assert_eq!(Some(n), node, "bound where it was nominated");
    }
    let client = c.client();
    let dt = group_condition(&client, "low", DISRUPTION_TARGET).await.unwrap();
    assert_eq!((dt.0.as_str(), dt.1.as_str()), ("True", REASON_PREEMPTION_BY_SCHEDULER));
    assert!(
        dt.2.starts_with("kwas-scheduler: preempting to accommodate a higher priority podgroup default/")
            && dt.2.contains(" (priority "),
        "{}",
        dt.2
    );
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_hierarchy_is_marked_and_not_scheduled() {
    let c = cluster(1, 1, 1, "4").await;
    let client = c.client();
    let s = start(client.clone(), config());
    // A composite with disruption mode `all` over a `single` child: KEP-6012 forbids the nesting.
    create_composite(&client, &GroupBuilder::gang(NS, "root", 1).all()).await;
    create_group(&client, &GroupBuilder::gang(NS, "leaf", 1).parent("root")).await;
    create_pod(&client, pod("leaf-0", Some("leaf"), "1")).await;
    eventually_within(TIMEOUT, "the hierarchy marked invalid", || async {
        let root = composite_condition(&client, "root", COMPOSITE_POD_GROUP_INITIALLY_SCHEDULED).await;
        let leaf = group_condition(&client, "leaf", POD_GROUP_INITIALLY_SCHEDULED).await;
        root.is_some_and(|c| c.0 == "False" && c.1 == "Invalid" && c.2.contains("disruption mode `all`"))
            && leaf.is_some_and(|c| c.0 == "False" && c.1 == "Invalid")
    })
    .await;
    eventually_within(TIMEOUT, "the pod told why", || async {
        get_pod(&client, "leaf-0")
            .await
            .and_then(|p| pod_condition(&p, POD_SCHEDULED))
            .is_some_and(|c| c.1 == REASON_SCHEDULER_ERROR && c.2.starts_with("invalid group hierarchy"))
    })
    .await;
    assert!(bound(&client, "leaf").await.is_empty());
    s.stop().await;
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_binding_is_released_and_retried() {
    let c = cluster(1, 1, 1, "4").await;
    let client = c.client();
    create_group(&client, &GroupBuilder::gang(NS, "g", 2)).await;
    for i in 0..2 {
        create_pod(&client, pod(&format!("g-{i}"), Some("g"), "1")).await;
    }
    // Every binding fails until the fault is cleared.
    c.faults().set(FaultConfig {
        seed: 1,
        rules: vec![FaultRule {
            resources: vec!["pods".into()],
            verbs: vec![Verb::Create],
            error_rate: 1.0,
            error_code: 500,
            ..Default::default()
        }],
    });
    let s = start(client.clone(), config());
    eventually_within(TIMEOUT, "the rejection reported", || async {
        get_pod(&client, "g-0")
            .await
            .and_then(|p| pod_condition(&p, POD_SCHEDULED))
            .is_some_and(|c| c.1 == REASON_SCHEDULER_ERROR && c.2.starts_with("Binding rejected"))
    })
    .await;
    assert!(s.handle.metrics().binding_failures() >= 1);
    assert!(bound(&client, "g").await.is_empty());
    c.faults().clear();
    eventually_within(TIMEOUT, "the gang bound after the fault", || async {
        bound(&client, "g").await.len() == 2
    })
    .await;
    s.stop().await;
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_satisfied_group_never_regresses() {
    let c = cluster(1, 1, 1, "4").await;
    let client = c.client();
    let s = start(client.clone(), config());
    create_group(&client, &GroupBuilder::gang(NS, "g", 2)).await;
    for i in 0..2 {
        create_pod(&client, pod(&format!("g-{i}"), Some("g"), "2")).await;
    }
    eventually_within(TIMEOUT, "scheduled", || async {
        group_condition(&client, "g", POD_GROUP_INITIALLY_SCHEDULED)
            .await
            .is_some_and(|c| c.0 == "True")
    })
    .await;
    // An extra pod that cannot fit.
    create_pod(&client, pod("g-2", Some("g"), "2")).await;
    eventually_within(TIMEOUT, "the extra reported unschedulable", || async {
        get_pod(&client, "g-2")
            .await
            .and_then(|p| pod_condition(&p, POD_SCHEDULED))
            .is_some_and(|c| c.1 == REASON_UNSCHEDULABLE)
    })
    .await;
    // The attempt that reported the extra pod sent its group write (if any) with the pod's; stopping waits
    // for the scheduler's queued writes, so nothing it decided is still on its way.
    s.stop().await;
    let cond = group_condition(&client, "g", POD_GROUP_INITIALLY_SCHEDULED)
        .await
        .unwrap();
    assert_eq!((cond.0.as_str(), cond.1.as_str()), ("True", REASON_SCHEDULED));
    c.shutdown().await;
}

/// `PodGroupSatisfied` (KEP-6413) on group `name`, once it says `status` with `message`.
async fn wait_satisfied(client: &Client, name: &str, status: &str, reason: &str, message: &str) {
    eventually_within(
        TIMEOUT,
        format!("{name}: PodGroupSatisfied={status} {message}"),
        || async {
            group_condition(client, name, POD_GROUP_SATISFIED)
                .await
                .is_some_and(|c| c.0 == status && c.1 == reason && c.2 == message)
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gang_health_follows_the_gang_both_ways_across_restarts() {
    let c = cluster(1, 1, 1, "8").await;
    let client = c.client();
    let s = start(client.clone(), config());
    create_group(&client, &GroupBuilder::gang(NS, "h", 2)).await;
    create_pod(&client, pod("h-0", Some("h"), "1")).await;
    // Below its minimum before it ever formed: no condition yet.
    eventually_within(TIMEOUT, "the lone member reported waiting", || async {
        get_pod(&client, "h-0")
            .await
            .and_then(|p| pod_condition(&p, POD_SCHEDULED))
            .is_some()
    })
    .await;
    assert!(group_condition(&client, "h", POD_GROUP_SATISFIED).await.is_none());
    create_pod(&client, pod("h-1", Some("h"), "1")).await;
    wait_satisfied(
        &client,
        "h",
        "True",
        REASON_MIN_COUNT_SATISFIED,
        "2 of 2 members scheduled",
    )
    .await;

    // A member goes: the gang is below its minimum; the initial condition stays True.
    Api::<Pod>::namespaced(client.clone(), NS)
        .delete("h-0", &DeleteParams::default())
        .await
        .unwrap();
    wait_satisfied(
        &client,
        "h",
        "False",
        REASON_BELOW_MIN_COUNT,
        "1 of 2 members scheduled",
    )
    .await;
    let initial = group_condition(&client, "h", POD_GROUP_INITIALLY_SCHEDULED)
        .await
        .unwrap();
    assert_eq!(initial.0, "True");

    // Its replacement lands: satisfied again.
    create_pod(&client, pod("h-2", Some("h"), "1")).await;
    wait_satisfied(
        &client,
        "h",
        "True",
        REASON_MIN_COUNT_SATISFIED,
        "2 of 2 members scheduled",
    )
    .await;

    // minCount raised above the count: below, with no pod changing.
    Api::<PodGroup>::namespaced(client.clone(), NS)
        .patch(
            "h",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"schedulingPolicy": {"gang": {"minCount": 3}}}})),
        )
        .await
        .unwrap();
    wait_satisfied(
        &client,
        "h",
        "False",
        REASON_BELOW_MIN_COUNT,
        "2 of 3 members scheduled",
    )
    .await;

    // A new scheduler instance takes over from the cluster's state and keeps following the gang.
    s.stop().await;
    let s = start(client.clone(), config());
    create_pod(&client, pod("h-3", Some("h"), "1")).await;
    wait_satisfied(
        &client,
        "h",
        "True",
        REASON_MIN_COUNT_SATISFIED,
        "3 of 3 members scheduled",
    )
    .await;
    s.stop().await;
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_leader_binds_and_a_follower_takes_over() {
    let c = cluster(1, 1, 2, "8").await;
    let client = c.client();
    let lease = |id: &str| {
        let mut l = scheduler_lease(NS, id);
        l.lease_duration = Duration::from_secs(3);
        l.renew_deadline = Duration::from_secs(2);
        l.retry_period = Duration::from_millis(500);
        l
    };
    let a = start(
        client.clone(),
        RuntimeConfig {
            leader_election: Some(lease("a")),
            ..config()
        },
    );
    eventually_within(TIMEOUT, "a leads", || async { a.handle.is_leader() }).await;
    let b = start(
        client.clone(),
        RuntimeConfig {
            leader_election: Some(lease("b")),
            ..config()
        },
    );
    eventually_within(TIMEOUT, "b is a ready follower", || async { b.handle.is_ready() }).await;
    assert!(!b.handle.is_leader());
    for i in 0..4 {
        create_pod(&client, pod(&format!("p-{i}"), None, "1")).await;
    }
    eventually_within(TIMEOUT, "bound", || async { bound(&client, "p-").await.len() == 4 }).await;
    eventually_within(TIMEOUT, "a counted them", || async {
        a.handle.metrics().pods_scheduled() == 4
    })
    .await;
    assert_eq!(b.handle.metrics().pods_scheduled(), 0, "the follower binds nothing");

    // The leader stops and releases the lease: the follower takes over.
    a.stop().await;
    eventually_within(TIMEOUT, "b leads", || async { b.handle.is_leader() }).await;
    create_pod(&client, pod("q-0", None, "1")).await;
    eventually_within(TIMEOUT, "bound by b", || async {
        bound(&client, "q-").await.len() == 1
    })
    .await;
    eventually_within(TIMEOUT, "b counted it", || async {
        b.handle.metrics().pods_scheduled() == 1
    })
    .await;
    b.stop().await;
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scheduler_dying_mid_binding_leaves_no_partial_gang() {
    let c = cluster(1, 1, 2, "8").await;
    let client = c.client();
    create_group(&client, &GroupBuilder::gang(NS, "g", 6)).await;
    for i in 0..6 {
        create_pod(&client, pod(&format!("g-{i}"), Some("g"), "1")).await;
    }
    // Bindings are slow, so the first scheduler dies with some of them done and some not.
    c.faults().set(FaultConfig {
        seed: 1,
        rules: vec![FaultRule {
            resources: vec!["pods".into()],
            verbs: vec![Verb::Create],
            latency: Duration::from_millis(800),
            ..Default::default()
        }],
    });
    // The first scheduler runs on a runtime of its own, dropped mid-binding (a crash).
    let first = {
        let url = c.base_url().to_string();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .unwrap();
            let mut cfg = config();
            cfg.bind_concurrency = 2;
            // A client of its own, so its connections die with it.
            let client = rt
                .block_on(async { Client::try_from(kube::Config::new(url.parse().unwrap())) })
                .unwrap();
            let runtime = SchedulerRuntime::new(client, cfg).unwrap();
            rt.spawn(runtime.run(std::future::pending()));
            rt
        })
        .join()
        .unwrap()
    };
    eventually_within(TIMEOUT, "some of the gang bound", || async {
        !bound(&client, "g-").await.is_empty()
    })
    .await;
    first.shutdown_background();
    let partial = bound(&client, "g-").await.len();
    assert!(partial < 6, "the crash left the gang partly bound ({partial}/6)");
    c.faults().clear();
    // A competitor of the same priority arrives before the restart.
    create_group(&client, &GroupBuilder::gang(NS, "other", 2)).await;
    for i in 0..2 {
        create_pod(&client, pod(&format!("other-{i}"), Some("other"), "6")).await;
    }
    let s = start(client.clone(), config());
    eventually_within(TIMEOUT, "the gang completed", || async {
        bound(&client, "g-").await.len() == 6
    })
    .await;
    s.stop().await;
    c.shutdown().await;
}

/// A cluster without CompositePodGroups (kube-apiserver's `--runtime-config` turning them off): the
/// scheduler becomes ready without their informer and runs a flat gang; a PodGroup naming a parent waits
/// for it, gated, binding nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_composite_pod_groups_flat_gangs_run() {
    let c = DevCluster::start(DevClusterConfig {
        topology: Topology::grid(
            1,
            1,
            2,
            Capacity {
                cpu: "4".into(),
                memory: "64Gi".into(),
                ..Default::default()
            },
        ),
        runtime_config: vec![("scheduling.k8s.io/v1alpha3/compositepodgroups".into(), false)],
        ..Default::default()
    })
    .await
    .unwrap();
    let client = c.client();
    let s = start(client.clone(), config());
    eventually_within(TIMEOUT, "the scheduler ready", || async { s.handle.is_ready() }).await;
    create_group(&client, &GroupBuilder::gang(NS, "flat", 3)).await;
    for i in 0..3 {
        create_pod(&client, pod(&format!("flat-{i}"), Some("flat"), "1")).await;
    }
    eventually_within(TIMEOUT, "the flat gang bound", || async {
        bound(&client, "flat").await.len() == 3
    })
    .await;
    create_group(&client, &GroupBuilder::gang(NS, "child", 2).parent("jobset")).await;
    for i in 0..2 {
        create_pod(&client, pod(&format!("child-{i}"), Some("child"), "1")).await;
    }
    eventually_within(TIMEOUT, "the child's pods gated", || async {
        get_pod(&client, "child-0")
            .await
            .and_then(|p| pod_condition(&p, POD_SCHEDULED))
            .is_some_and(|c| c.1 == REASON_SCHEDULING_GATED)
    })
    .await;
    assert!(bound(&client, "child").await.is_empty());
    s.stop().await;
    c.shutdown().await;
}
