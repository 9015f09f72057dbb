//! The scheduler on a cluster it shares: a pod another party bound by `spec.nodeName` (running, as the
//! kubelet admitted it) takes its node's capacity, a cordoned node and a node whose kubelet went silent
//! (tainted `node.kubernetes.io/unreachable`) get no new pods; a gang goes where room is left, the next
//! waits without binding anything, and runs once a node is uncordoned; a pod being deleted holds its node
//! until it is gone; a gang Job runs where CompositePodGroups are not served.

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Patch, PatchParams};
use kwas_tests::inspect::*;
use kwas_tests::*;
use serde_json::json;

use crate::grid;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gangs_go_around_what_others_run_cordons_and_lost_nodes() {
    // Four nodes of 4 cpu.
    let e2e = E2e::start(grid(1, 2, 2, "4")).await.unwrap();
    let client = e2e.client();
    let monitor = GangMonitor::start(&client).await.unwrap();
    let nodes = e2e.cluster().node_names();
    let (busy, cordoned, lost, free) = (&nodes[0], &nodes[1], &nodes[2], &nodes[3]);

    // Someone else's pod, bound by nodeName, fills `busy`.
    let foreign: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "foreign"},
        "spec": {"nodeName": busy, "schedulerName": "someone-else",
            "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "4"}}}]}
    }))
    .unwrap();
    e2e.create(&foreign).await.unwrap();
    let node_api: kube::Api<Node> = kube::Api::all(client.clone());
    node_api
        .patch(
            cordoned,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"unschedulable": true}})),
        )
        .await
        .unwrap();
    node_api
        .patch(
            lost,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"kwas.dev/sim-node-down": "true"}}})),
        )
        .await
        .unwrap();
    eventually("foreign Running, the lost node tainted unreachable", || async {
        let pod = e2e.api::<Pod>().get("foreign").await?;
        let node = node_api.get(lost).await?;
        let tainted = node
            .spec
            .and_then(|s| s.taints)
            .is_some_and(|ts| ts.iter().any(|t| t.key == "node.kubernetes.io/unreachable"));
        check(phase(&pod) == "Running" && tainted, || {
            format!("{} {tainted}", phase(&pod))
        })
    })
    .await
    .unwrap();

    // A gang of two 2-cpu pods: only `free` has room.
    e2e.create(&JobBuilder::new("first").parallelism(2).gang().cpu("2").build().unwrap())
        .await
        .unwrap();
    let pods = wait_bound(&e2e, "first", 2).await.unwrap();
    assert!(
        pods.iter().all(|p| node_of(p) == Some(free.as_str())),
        "{:?}",
        pods.iter().map(node_of).collect::<Vec<_>>()
    );

    // A second gang finds no room and binds nothing; uncordoning gives it one.
    e2e.create(
        &JobBuilder::new("second")
            .parallelism(2)
            .gang()
            .cpu("2")
            .build()
            .unwrap(),
    )
    .await
    .unwrap();
    eventually("second reported unschedulable", || async {
        let pods = pods_of_job(&client, "second").await?;
        let told = pods.len() == 2
            && pods.iter().all(|p| {
                pod_condition(p, kwas_api_types::names::conditions::POD_SCHEDULED).is_some_and(|c| c.0 == "False")
            });
        check(told, || format!("{} pods", pods.len()))
    })
    .await
    .unwrap();
    assert_eq!(bound_count(&pods_of_job(&client, "second").await.unwrap()), 0);
    node_api
        .patch(
            cordoned,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"unschedulable": false}})),
        )
        .await
        .unwrap();
    let pods = wait_bound(&e2e, "second", 2).await.unwrap();
    assert!(pods.iter().all(|p| node_of(p) == Some(cordoned.as_str())));
    // Nothing ever went to the busy or the lost node, and no pod was rejected by a kubelet.
    for job in ["first", "second"] {
        for p in pods_of_job(&client, job).await.unwrap() {
            assert!(node_of(&p) != Some(busy.as_str()) && node_of(&p) != Some(lost.as_str()));
            assert!(
                p.status
                    .as_ref()
                    .and_then(|s| s.reason.as_deref())
                    .is_none_or(|r| !r.starts_with("OutOf"))
            );
        }
    }
    monitor.check_settled().await.unwrap();
    e2e.shutdown().await;
}

/// A pod being deleted holds its node's capacity until it is gone: a gang that needs the node binds only
/// then. The kubelet's admission is the referee: a member bound early would be rejected `OutOfcpu`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminating_pod_holds_its_node_until_gone() {
    let e2e = E2e::start(grid(1, 1, 1, "4")).await.unwrap();
    let client = e2e.client();
    let monitor = GangMonitor::start(&client).await.unwrap();
    let node = e2e.cluster().node_names()[0].clone();
    let foreign: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "slow-to-stop", "annotations": {"kwas.dev/sim-shutdown-duration": "2s"}},
        "spec": {"nodeName": node, "schedulerName": "someone-else", "terminationGracePeriodSeconds": 30,
            "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "4"}}}]}
    }))
    .unwrap();
    e2e.create(&foreign).await.unwrap();
    eventually("slow-to-stop Running", || async {
        let pod = e2e.api::<Pod>().get("slow-to-stop").await?;
        check(phase(&pod) == "Running", || phase(&pod).to_string())
    })
    .await
    .unwrap();
    e2e.api::<Pod>()
        .delete("slow-to-stop", &Default::default())
        .await
        .unwrap();
    e2e.create(&JobBuilder::new("gang").parallelism(2).gang().cpu("2").build().unwrap())
        .await
        .unwrap();
    let pods = wait_bound(&e2e, "gang", 2).await.unwrap();
    assert!(pods.iter().all(|p| node_of(p) == Some(node.as_str())));
    eventually("the gang Running, none rejected", || async {
        let pods = pods_of_job(&client, "gang").await?;
        let rejected: Vec<_> = pods
            .iter()
            .filter_map(|p| p.status.as_ref()?.reason.clone())
            .filter(|r| r.starts_with("OutOf"))
            .collect();
        assert!(
            rejected.is_empty(),
            "a member bound before the terminating pod was gone: {rejected:?}"
        );
        check(pods.len() == 2 && pods.iter().all(|p| phase(p) == "Running"), || {
            format!("{:?}", pods.iter().map(phase).collect::<Vec<_>>())
        })
    })
    .await
    .unwrap();
    assert!(
        e2e.api::<Pod>().get_opt("slow-to-stop").await.unwrap().is_none(),
        "the gang runs only once the terminating pod is gone"
    );
    monitor.check_settled().await.unwrap();
    e2e.shutdown().await;
}

/// kwas serving only `kwas-scheduler`, and a second scheduler binding `default-scheduler`'s pods: a
/// DaemonSet's pod on every node and a plain pod; kwas' gang is placed around them (the kubelet would reject
/// a member bound past a node's allocatable).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gang_goes_around_what_another_scheduler_placed() {
    let mut config = test_config(grid(1, 1, 2, "4"));
    config.scheduler.scheduler_names = vec![kwas_api_types::names::SCHEDULER_NAME.to_string()];
    let e2e = E2e::start_with(config).await.unwrap();
    let client = e2e.client();
    let monitor = GangMonitor::start(&client).await.unwrap();
    let _other = ForeignScheduler::start(client.clone(), "default-scheduler");
    let nodes = e2e.cluster().node_names();
    let daemonset: k8s_openapi::api::apps::v1::DaemonSet = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "agent"},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "template": {"metadata": {"labels": {"app": "agent"}},
                "spec": {"containers": [{"name": "agent", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}
        }
    }))
    .unwrap();
    e2e.create(&daemonset).await.unwrap();
    // The other scheduler's plain pod lands on the first node (by name): 1 + 2 of its 4 cpu are taken.
    let other: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "theirs"},
        "spec": {"containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "2"}}}]}
    }))
    .unwrap();
    e2e.create(&other).await.unwrap();
    eventually("the DaemonSet's pods and theirs Running", || async {
        let pods = e2e.api::<Pod>().list(&Default::default()).await?.items;
        let running = pods.iter().filter(|p| phase(p) == "Running").count();
        check(pods.len() == 3 && running == 3, || {
            format!("{running}/{} running", pods.len())
        })
    })
    .await
    .unwrap();
    assert_eq!(
        node_of(&e2e.api::<Pod>().get("theirs").await.unwrap()),
        Some(nodes[0].as_str())
    );

    // Two 1500m members: the first node has 1 cpu left, the second 3: both go to the second.
    e2e.create(
        &JobBuilder::new("gang")
            .parallelism(2)
            .gang()
            .cpu("1500m")
            .build()
            .unwrap(),
    )
    .await
    .unwrap();
    let pods = wait_bound(&e2e, "gang", 2).await.unwrap();
    assert!(pods.iter().all(|p| node_of(p) == Some(nodes[1].as_str())));
    eventually("the gang Running, none rejected", || async {
        let pods = pods_of_job(&client, "gang").await?;
        assert!(pods.iter().all(|p| {
            p.status
                .as_ref()
                .and_then(|s| s.reason.as_deref())
                .is_none_or(|r| !r.starts_with("OutOf"))
        }));
        check(pods.iter().all(|p| phase(p) == "Running"), || {
            format!("{:?}", pods.iter().map(phase).collect::<Vec<_>>())
        })
    })
    .await
    .unwrap();
    monitor.check_settled().await.unwrap();
    e2e.shutdown().await;
}

/// A cluster without CompositePodGroups (`--runtime-config` turns them off): a gang Job (one Workload, one
/// PodGroup, no parent) runs to completion with the controllers and the scheduler as they are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gang_job_runs_where_composite_pod_groups_are_not_served() {
    let mut config = test_config(grid(1, 1, 2, "4"));
    config.cluster.runtime_config = vec![("scheduling.k8s.io/v1alpha3/compositepodgroups".into(), false)];
    let e2e = E2e::start_with(config).await.unwrap();
    let monitor = GangMonitor::start(&e2e.client()).await.unwrap();
    e2e.create(
        &JobBuilder::new("flat")
            .parallelism(3)
            .gang()
            .cpu("1")
            .run_for("300ms")
            .build()
            .unwrap(),
    )
    .await
    .unwrap();
    let done = wait_job(&e2e, "flat", "Complete").await.unwrap();
    assert_eq!(done.status.unwrap().succeeded, Some(3));
    let summary = monitor.check_settled().await.unwrap();
    assert_eq!((summary.gangs, summary.gangs_satisfied), (1, 1));
    e2e.shutdown().await;
}
