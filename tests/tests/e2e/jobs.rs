//! Jobs: a gang runs to completion; a gang that does not fit binds nothing until capacity frees; a Basic Job
//! schedules pod by pod; gang and Basic Jobs share a cluster.

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::scheduling::v1alpha3::{PodGroup, Workload};
use kube::ResourceExt;
use kube::api::DeleteParams;
use kwas_api_types::names::conditions::{
    POD_GROUP_INITIALLY_SCHEDULED, POD_SCHEDULED, REASON_SCHEDULED, REASON_UNSCHEDULABLE,
};
use kwas_api_types::names::labels::RACK;
use kwas_tests::inspect::*;
use kwas_tests::*;

use crate::{grid, group_attempts};

fn group_condition(g: &PodGroup, type_: &str) -> Option<(String, String, String)> {
    g.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gang_job_runs_to_completion_in_one_rack() {
    let e2e = E2e::start(grid(1, 2, 2, "4")).await.unwrap();
    let client = e2e.client();
    let monitor = GangMonitor::start(&client).await.unwrap();
    let job = JobBuilder::new("train")
        .parallelism(4)
        .gang()
        .topology(RACK)
        .disruption_all()
        .cpu("2")
        .run_for("300ms");
    e2e.create(&job.build().unwrap()).await.unwrap();

    let done = wait_job(&e2e, "train", "Complete").await.unwrap();
    let status = done.status.unwrap();
    assert_eq!((status.succeeded, status.failed.unwrap_or(0)), (Some(4), 0));
    let pods = pods_of_job(&client, "train").await.unwrap();
    assert_eq!(pods.len(), 4, "one pod per completion");
    assert!(pods.iter().all(|p| phase(p) == "Succeeded"));
    let racks = domains(&pods, &node_labels(&client).await.unwrap(), RACK).unwrap();
    assert_eq!(racks.len(), 1, "the gang in one rack: {racks:?}");

    // The Job's scheduling objects: one Workload and one gang PodGroup, which the scheduler marked.
    let workloads: Vec<Workload> = list(&client).await.unwrap();
    assert_eq!(workloads.len(), 1);
    let groups: Vec<PodGroup> = list(&client).await.unwrap();
    assert_eq!(groups.len(), 1);
    assert_eq!(groups[0].spec.scheduling_policy.gang.as_ref().unwrap().min_count, 4);
    assert!(pods.iter().all(|p| group_of(p) == Some(groups[0].name_any().as_str())));
    let (status, reason, _) = group_condition(&groups[0], POD_GROUP_INITIALLY_SCHEDULED).unwrap();
    assert_eq!((status.as_str(), reason.as_str()), ("True", REASON_SCHEDULED));

    let summary = monitor.check_settled().await.unwrap();
    assert_eq!((summary.gangs, summary.gangs_satisfied), (1, 1));
    e2e.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gang_that_does_not_fit_binds_nothing_until_capacity_frees_then_runs() {
    // Two nodes of 4 cpu; a long-running Basic Job takes one node.
    let e2e = E2e::start(grid(1, 1, 2, "4")).await.unwrap();
    let client = e2e.client();
    let monitor = GangMonitor::start(&client).await.unwrap();
    e2e.create(&JobBuilder::new("blocker").cpu("4").build().unwrap())
        .await
        .unwrap();
    wait_bound(&e2e, "blocker", 1).await.unwrap();

    // Three pods of 2 cpu: two would fit on the free node, the gang needs three.
    e2e.create(
        &JobBuilder::new("gang")
            .parallelism(3)
            .gang()
            .cpu("2")
            .run_for("200ms")
            .build()
            .unwrap(),
    )
    .await
    .unwrap();
    eventually("the gang reported unschedulable, pod and group", || async {
        let pods = pods_of_job(&client, "gang").await?;
        let groups: Vec<PodGroup> = list(&client).await?;
        let group = groups.iter().find(|g| g.spec.scheduling_policy.gang.is_some());
        // Every pod is told why: the one that does not fit, and the others that cannot make the gang alone.
        let conditions: Vec<_> = pods.iter().filter_map(|p| pod_condition(p, POD_SCHEDULED)).collect();
        let pods_told = pods.len() == 3
            && conditions.len() == 3
            && conditions.iter().all(|c| c.0 == "False" && c.1 == REASON_UNSCHEDULABLE)
            && conditions.iter().any(|c| {
                c.2.starts_with("0/2 nodes are available: 2 Insufficient cpu. preemption: ")
            })
            && conditions.iter().any(|c| {
                c.2.starts_with("minCount (3) cannot be satisfied: 2 scheduled, 0 remaining: ")
            });
        let group_told = group
            .and_then(|g| group_condition(g, POD_GROUP_INITIALLY_SCHEDULED))
            .is_some_and(|c| c.0 == "False" && c.1 == REASON_UNSCHEDULABLE);
        check(pods_told && group_told, || {
            let conds: Vec<_> = pods.iter().map(|p| pod_condition(p, POD_SCHEDULED)).collect();
            format!("pods {conds:?}, group {:?}", group.and_then(|g| g.status.clone()))
        })
    })
    .await
    .unwrap();
    // It keeps binding nothing while it waits: the scheduler retries it (twice, so one retry started after
    // the report above) and finds it unschedulable again, unless it binds something.
    let reported = group_attempts(&e2e, "unschedulable");
    eventually("the gang retried", || async {
        let bound = bound_count(&pods_of_job(&client, "gang").await?);
        let retried = group_attempts(&e2e, "unschedulable");
        check(retried >= reported + 2 || bound > 0, || {
            format!("{} retries, {bound} bound", retried - reported)
        })
    })
    .await
    .unwrap();
    assert_eq!(
        bound_count(&pods_of_job(&client, "gang").await.unwrap()),
        0,
        "all or nothing"
    );

    // The user deletes the blocker; its pod goes and the gang runs.
    e2e.api::<Job>()
        .delete("blocker", &DeleteParams::background())
        .await
        .unwrap();
    let done = wait_job(&e2e, "gang", "Complete").await.unwrap();
    assert_eq!(done.status.unwrap().succeeded, Some(3));
    assert_eq!(pods_of_job(&client, "gang").await.unwrap().len(), 3);
    monitor.check_settled().await.unwrap();
    e2e.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_basic_job_schedules_pod_by_pod() {
    // Room for two of its 3-cpu pods at a time.
    let e2e = E2e::start(grid(1, 1, 2, "4")).await.unwrap();
    let client = e2e.client();
    let monitor = GangMonitor::start(&client).await.unwrap();
    e2e.create(
        &JobBuilder::new("etl")
            .parallelism(4)
            .cpu("3")
            .run_for("1s")
            .build()
            .unwrap(),
    )
    .await
    .unwrap();
    // Two run while two wait: no gang, so no waiting for the others.
    eventually("two pods bound while two wait", || async {
        let pods = pods_of_job(&client, "etl").await?;
        let waiting = pods
            .iter()
            .filter(|p| {
                node_of(p).is_none() && pod_condition(p, POD_SCHEDULED).is_some_and(|c| c.1 == REASON_UNSCHEDULABLE)
            })
            .count();
        let bound = bound_count(&pods);
        check(bound == 2 && waiting == 2, || {
            format!("{bound} bound, {waiting} waiting of {}", pods.len())
        })
    })
    .await
    .unwrap();
    let done = wait_job(&e2e, "etl", "Complete").await.unwrap();
    assert_eq!(done.status.unwrap().succeeded, Some(4));
    let workloads: Vec<Workload> = list(&client).await.unwrap();
    let template = &workloads[0].spec.pod_group_templates.as_ref().unwrap()[0];
    assert!(template.scheduling_policy.basic.is_some(), "no scheduling block: Basic");
    let summary = monitor.check_settled().await.unwrap();
    assert_eq!(summary.gangs, 0);
    e2e.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gang_and_basic_jobs_share_the_cluster() {
    // 4 nodes of 4 cpu in 2 racks. Basic pods of 1 cpu and two rack-bound gangs of 4 x 2 cpu (a whole rack
    // each) contend; everything completes and no gang is ever partly bound.
    let e2e = E2e::start(grid(1, 2, 2, "4")).await.unwrap();
    let client = e2e.client();
    let monitor = GangMonitor::start(&client).await.unwrap();
    e2e.create(
        &JobBuilder::new("etl")
            .parallelism(6)
            .completions(12)
            .cpu("1")
            .run_for("300ms")
            .build()
            .unwrap(),
    )
    .await
    .unwrap();
    for name in ["train-a", "train-b"] {
        let job = JobBuilder::new(name)
            .parallelism(4)
            .gang()
            .topology(RACK)
            .cpu("2")
            .run_for("300ms");
        e2e.create(&job.build().unwrap()).await.unwrap();
    }
    let labels = node_labels(&client).await.unwrap();
    for name in ["etl", "train-a", "train-b"] {
        wait_job(&e2e, name, "Complete").await.unwrap();
    }
    for name in ["train-a", "train-b"] {
        let pods = pods_of_job(&client, name).await.unwrap();
        assert_eq!(pods.len(), 4);
        assert_eq!(domains(&pods, &labels, RACK).unwrap().len(), 1, "{name} in one rack");
    }
    assert_eq!(pods_of_job(&client, "etl").await.unwrap().len(), 12);
    let summary = monitor.check_settled().await.unwrap();
    assert_eq!((summary.gangs, summary.gangs_satisfied), (2, 2));
    e2e.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gang_job_whose_last_wave_is_smaller_than_its_gang_completes() {
    // Three pods at a time, four completions: after the first three succeed, one more pod runs.
    let e2e = E2e::start(grid(1, 2, 2, "4")).await.unwrap();
    let job = JobBuilder::new("tail")
        .parallelism(3)
        .completions(4)
        .gang()
        .cpu("1")
        .run_for("200ms");
    e2e.create(&job.build().unwrap()).await.unwrap();
    let done = wait_job(&e2e, "tail", "Complete").await.unwrap();
    assert_eq!(done.status.unwrap().succeeded, Some(4));
    e2e.shutdown().await;
}
