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
