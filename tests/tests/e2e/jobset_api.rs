//! The JobSet project's startup order and restart strategy meeting gang scheduling, with the real
//! scheduler: a staged gang hierarchy starts stage by stage without deadlock, and `BlockingRecreate` binds
//! no pod of a new attempt while a pod of the previous one exists.

use std::collections::BTreeSet;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::runtime::watcher;
use kwas_api_types::jobset::{
    FailurePolicy, JobSetRestartStrategy, PodGroupManagement, StartupPolicy, StartupPolicyOptions,
};
use kwas_api_types::v1alpha3::CompositePodGroup;
use kwas_tests::inspect::*;
use kwas_tests::*;

use crate::grid;

/// `InOrder` with gangs at both levels: the root's default `minGroupCount` counts the first stage only (a
/// root gang waiting for every child group would never schedule, as the workers wait for the leader to be
/// ready), the leader's gang is placed, then the workers' gangs as their Jobs appear.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_staged_gang_hierarchy_starts_stage_by_stage_without_deadlock() {
    let e2e = E2e::start(grid(1, 2, 2, "4")).await.unwrap();
    let client = e2e.client();
    let monitor = GangMonitor::start(&client).await.unwrap();
    let mut js = JobSetBuilder::new("staged")
        .management(PodGroupManagement::Centralized)
        .replicated(
            1,
            JobBuilder::new("leader").parallelism(2).gang().cpu("1").run_for("2s"),
            Intent::Targeted,
        )
        .replicated(
            2,
            JobBuilder::new("workers")
                .parallelism(2)
                .gang()
                .cpu("1")
                .run_for("300ms"),
            Intent::Targeted,
        )
        .build()
        .unwrap();
    js.spec.startup_policy = Some(StartupPolicy {
        startup_policy_order: StartupPolicyOptions::InOrder,
    });
    e2e.create(&js).await.unwrap();
    let done = wait_jobset(&e2e, "staged", "Completed").await.unwrap();
    assert!(jobset_condition(&done, "StartupPolicyCompleted").is_some());
    let root: Vec<CompositePodGroup> = list(&client).await.unwrap();
    let min = root
        .iter()
        .find_map(|g| Some(g.spec.scheduling_policy.gang.as_ref()?.min_group_count));
    assert_eq!(min, Some(1), "the root gang counts the leader's one group");
    monitor.check_no_partial_binding().unwrap();
}

/// `BlockingRecreate` with gang Jobs: when a Job fails, every pod of the failed attempt is gone before any
/// pod of the next attempt is bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocking_recreate_binds_no_pod_of_the_next_attempt_while_one_of_the_previous_exists() {
    let e2e = E2e::start(grid(1, 2, 2, "4")).await.unwrap();
    let client = e2e.client();
    let monitor = GangMonitor::start(&client).await.unwrap();
    // Every pod event in the cluster's order: the attempt of each bound pod, and the live pods of each
    // attempt at that moment.
    let pods = kube::Api::<Pod>::namespaced(client.clone(), NS);
    let observer = tokio::spawn(async move {
        let mut live: BTreeSet<(String, String)> = BTreeSet::new();
        let mut bound: BTreeSet<String> = BTreeSet::new();
        let mut violations = Vec::new();
        let mut attempts = BTreeSet::new();
        let mut stream = watcher(pods, watcher::Config::default()).boxed();
        while let Some(event) = stream.next().await {
            let (pod, gone) = match event {
                Ok(watcher::Event::Apply(p) | watcher::Event::InitApply(p)) => (p, false),
                Ok(watcher::Event::Delete(p)) => (p, true),
                _ => continue,
            };
            let Some(attempt) = pod.labels().get("jobset.sigs.k8s.io/restart-attempt").cloned() else {
                continue;
            };
            let key = (attempt.clone(), pod.name_any());
            if gone {
                live.remove(&key);
                continue;
            }
            live.insert(key);
            attempts.insert(attempt.clone());
            let has_node = pod.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some();
            if has_node && bound.insert(pod.name_any()) {
                let older: Vec<_> = live.iter().filter(|(a, _)| *a < attempt).collect();
                if !older.is_empty() {
                    violations.push(format!("{} (attempt {attempt}) bound beside {older:?}", pod.name_any()));
                }
            }
            if attempts.contains("1") && live.iter().all(|(a, _)| a == "1") && bound.len() >= 8 {
                break;
            }
        }
        violations
    });
    let mut js = JobSetBuilder::new("blocking")
        .management(PodGroupManagement::Centralized)
        .replicated(
            2,
            JobBuilder::new("workers")
                .parallelism(2)
                .gang()
                .cpu("1")
                .run_for("1h")
                .shutdown_after("300ms"),
            Intent::Targeted,
        )
        .replicated(
            1,
            JobBuilder::new("broken")
                .parallelism(2)
                .gang()
                .cpu("1")
                .backoff_limit(0)
                .run_for("500ms")
                .failing(),
            Intent::Targeted,
        )
        .build()
        .unwrap();
    js.spec.failure_policy = Some(FailurePolicy {
        max_restarts: 1,
        restart_strategy: JobSetRestartStrategy::BlockingRecreate,
        rules: Vec::new(),
    });
    e2e.create(&js).await.unwrap();
    let failed = wait_jobset(&e2e, "blocking", "Failed").await.unwrap();
    assert_eq!(failed.status.as_ref().unwrap().restarts, 1);
    let violations = tokio::time::timeout(std::time::Duration::from_secs(60), observer)
        .await
        .expect("the second attempt's pods observed")
        .unwrap();
    assert!(violations.is_empty(), "{violations:#?}");
    monitor.check_no_partial_binding().unwrap();
}

/// Exclusive placement (`alpha.jobset.sigs.k8s.io/exclusive-topology: <rack key>`) as topology constraints:
/// each Job's pods in one rack and no two Jobs in one rack, where packing would put both Jobs (4 cpu) in
/// one rack of 8; a third Job of another exclusive JobSet has no rack left and waits until one frees up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exclusive_placement_gives_each_job_a_rack_of_its_own() {
    use kwas_api_types::names::labels::{JOB_NAME, RACK};
    let e2e = E2e::start(grid(1, 2, 2, "4")).await.unwrap();
    let client = e2e.client();
    let monitor = GangMonitor::start(&client).await.unwrap();
    let exclusive = |name: &str, replicas: i32, run: &str| {
        let mut js = JobSetBuilder::new(name)
            .management(PodGroupManagement::Centralized)
            .replicated(
                replicas,
                JobBuilder::new("workers").parallelism(2).gang().cpu("1").run_for(run),
                Intent::Targeted,
            )
            .build()
            .unwrap();
        js.metadata.annotations = Some(
            [(
                "alpha.jobset.sigs.k8s.io/exclusive-topology".to_string(),
                RACK.to_string(),
            )]
            .into(),
        );
        js
    };
    e2e.create(&exclusive("first", 2, "4s")).await.unwrap();
    let pods: Vec<Pod> = eventually("the four pods of the first JobSet bound", || async {
        let pods: Vec<Pod> = list::<Pod>(&client)
            .await?
            .into_iter()
            .filter(|p| p.labels().get("jobset.sigs.k8s.io/jobset-name").map(String::as_str) == Some("first"))
            .collect();
        check(bound_count(&pods) == 4, || format!("{} bound", bound_count(&pods))).map(|()| pods)
    })
    .await
    .unwrap();
    let labels = node_labels(&client).await.unwrap();
    let rack_of = |p: &Pod| labels[node_of(p).unwrap()][RACK].clone();
    let mut racks = BTreeSet::new();
    for job in ["first-workers-0", "first-workers-1"] {
        let of_job: BTreeSet<String> = pods
            .iter()
            .filter(|p| p.labels().get(JOB_NAME).map(String::as_str) == Some(job))
            .map(rack_of)
            .collect();
        assert_eq!(of_job.len(), 1, "{job} in one rack: {of_job:?}");
        racks.extend(of_job);
    }
    assert_eq!(racks.len(), 2, "each Job a rack of its own");
    // Both racks are taken: the late Job waits until a Job of the first JobSet finished (its rack is
    // free), so its pods start no earlier than the first Job completion (times to the second).
    e2e.create(&exclusive("late", 1, "200ms")).await.unwrap();
    wait_jobset(&e2e, "late", "Completed").await.unwrap();
    wait_jobset(&e2e, "first", "Completed").await.unwrap();
    let jobs: Vec<k8s_openapi::api::batch::v1::Job> = list(&client).await.unwrap();
    let first_done = jobs
        .iter()
        .filter(|j| j.labels().get("jobset.sigs.k8s.io/jobset-name").map(String::as_str) == Some("first"))
        .filter_map(|j| j.status.as_ref()?.completion_time.as_ref().map(|t| t.0))
        .min()
        .unwrap();
    let late_pods: Vec<Pod> = list::<Pod>(&client)
        .await
        .unwrap()
        .into_iter()
        .filter(|p| p.labels().get("jobset.sigs.k8s.io/jobset-name").map(String::as_str) == Some("late"))
        .collect();
    assert!(!late_pods.is_empty());
    for p in &late_pods {
        let started = p.status.as_ref().and_then(|s| s.start_time.as_ref()).unwrap().0;
        assert!(
            started >= first_done,
            "{} started at {started}, before the first JobSet freed a rack at {first_done}",
            p.metadata.name.as_deref().unwrap_or_default()
        );
    }
    monitor.check_no_partial_binding().unwrap();
}

/// The opt-in gang health rule (kwas extension `kwas.dev/unsatisfied-gang-failure-seconds`): a gang that
/// was placed and then lost a member it cannot get back (its node cordoned, the other full) stays below
/// its `minCount`; past the grace period the JobSet counts its Job as failed and the failure policy
/// restarts the JobSet; the new attempt runs once there is room.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gang_broken_past_its_grace_period_restarts_the_jobset() {
    use kwas_api_types::names::labels::JOB_NAME;
    let e2e = E2e::start(grid(1, 1, 2, "2")).await.unwrap();
    let client = e2e.client();
    let mut js = JobSetBuilder::new("fragile")
        .management(PodGroupManagement::Centralized)
        .replicated(
            1,
            // Long enough that the surviving member still runs when the grace period ends, even on a
            // loaded machine (a member that succeeded counts towards the gang, and its node would take the
            // replacement); a deleted member is killed (exit 137, Failed), so its index needs a
            // replacement.
            JobBuilder::new("workers")
                .parallelism(2)
                .gang()
                .cpu("2")
                .run_for("20s")
                .shutdown_after("5s"),
            Intent::Targeted,
        )
        .build()
        .unwrap();
    js.metadata.annotations = Some([("kwas.dev/unsatisfied-gang-failure-seconds".to_string(), "1".to_string())].into());
    js.spec.failure_policy = Some(FailurePolicy {
        max_restarts: 1,
        ..Default::default()
    });
    e2e.create(&js).await.unwrap();
    let pods = wait_bound(&e2e, "fragile-workers-0", 2).await.unwrap();
    let victim = pods.iter().find(|p| node_of(p).is_some()).unwrap();
    let node = node_of(victim).unwrap().to_string();
    e2e.cluster().cordon(&node).unwrap();
    kube::Api::<Pod>::namespaced(client.clone(), NS)
        .delete(&victim.name_any(), &Default::default())
        .await
        .unwrap();
    let restarted = eventually("the JobSet restarted", || async {
        let js = e2e.api::<kwas_api_types::jobset::JobSet>().get("fragile").await?;
        let restarts = js.status.as_ref().map_or(0, |s| s.restarts);
        check(restarts == 1, || format!("restarts {restarts}: {:?}", js.status)).map(|()| js)
    })
    .await
    .unwrap();
    let restarting = restarted
        .status
        .as_ref()
        .unwrap()
        .conditions
        .iter()
        .find(|c| c.type_ == "RestartingJobSet")
        .unwrap();
    assert_eq!(restarting.reason, "DefaultFailurePolicy");
    assert!(
        restarting.message.contains("first failed job: fragile-workers-0"),
        "{}",
        restarting.message
    );
    e2e.cluster().uncordon(&node).unwrap();
    let done = wait_jobset(&e2e, "fragile", "Completed").await.unwrap();
    assert_eq!(done.status.as_ref().unwrap().restarts, 1);
    let pods: Vec<Pod> = list(&client).await.unwrap();
    assert!(
        pods.iter()
            .filter(|p| p.labels().get(JOB_NAME).map(String::as_str) == Some("fragile-workers-0"))
            .all(|p| p.labels()["jobset.sigs.k8s.io/restart-attempt"] == "1"),
        "the first attempt's pods are gone"
    );
}
