//! Workload-aware preemption through Jobs: a higher-priority gang takes an `all`-mode gang's place entirely,
//! and only what it needs from a `single`-mode one; in a cluster running both, one `single` pod goes rather
//! than the whole `all` gang.
//!
//! The first test's gangs are Jobs with `spec.scheduling` (the Job controller creates their Workload and
//! PodGroup, carrying the pod template's `priorityClassName`); the others use PodGroups the user creates
//! (with `priorityClassName` and `disruptionMode`) and Jobs whose pods join them
//! (`schedulingGroup.podGroupName`), the other way KEP-5547 lets a user form a gang.

use std::collections::BTreeSet;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, PostParams};
use kwas_api_types::names::conditions::{
    DISRUPTION_TARGET, POD_SCHEDULED, REASON_PREEMPTION_BY_SCHEDULER, REASON_UNSCHEDULABLE,
};
use kwas_api_types::v1alpha3::PodGroup;
use kwas_tests::inspect::*;
use kwas_tests::*;

use crate::{grid, group_attempts};

async fn priority_classes(e2e: &E2e) {
    let api: Api<PriorityClass> = Api::all(e2e.client());
    for (name, value) in [("low", 1), ("high", 100)] {
        api.create(&PostParams::default(), &priority_class(name, value))
            .await
            .unwrap();
    }
}

/// A gang PodGroup `name` of `size` in `class`, and a Job of the same name whose `size` pods of `cpu` join
/// it and run for `run` (until deleted when `None`). Its pods ignore SIGTERM, so a preempted pod ends
/// `Failed` (killed after its grace period) and the Job replaces it.
async fn gang(e2e: &E2e, name: &str, size: i32, all: bool, class: &str, cpu: &str, run: Option<&str>) {
    e2e.create(&gang_pod_group(name, size, all, Some(class)).unwrap())
        .await
        .unwrap();
    let mut job = JobBuilder::new(name)
        .parallelism(size)
        .cpu(cpu)
        .priority_class(class)
        .in_pod_group(name)
        .shutdown_after("1m")
        .backoff_limit(50);
    if let Some(r) = run {
        job = job.run_for(r);
    }
    e2e.create(&job.build().unwrap()).await.unwrap();
}

/// Like [`gang`], through the Job's own `spec.scheduling` (gang of `size`, `all` or `single`).
async fn scheduled_gang(e2e: &E2e, name: &str, size: i32, all: bool, class: &str, cpu: &str) {
    let job = JobBuilder::new(name)
        .parallelism(size)
        .gang()
        .cpu(cpu)
        .priority_class(class)
        .shutdown_after("1m")
        .backoff_limit(50);
    let job = if all {
        job.disruption_all()
    } else {
        job.disruption_single()
    };
    e2e.create(&job.build().unwrap()).await.unwrap();
}

/// The name of the PodGroup the Job controller created for Job `job`.
async fn group_of_job(e2e: &E2e, job: &str) -> String {
    let groups = e2e.api::<PodGroup>();
    eventually(format!("the PodGroup of Job {job}"), || async {
        let list = groups.list(&Default::default()).await?;
        let found = list
            .items
            .iter()
            .find(|g| g.owner_references().iter().any(|o| o.kind == "Job" && o.name == job));
        check(found.is_some(), || "none yet".to_string()).map(|()| found.map(|g| g.name_any()).unwrap_or_default())
    })
    .await
    .unwrap()
}

fn uids(pods: &[Pod]) -> BTreeSet<String> {
    pods.iter().filter_map(|p| p.uid()).collect()
}

/// The pods of `job` that are bound, not being deleted, and among `of`.
async fn still_bound(e2e: &E2e, job: &str, of: &BTreeSet<String>) -> BTreeSet<String> {
    pods_of_job(&e2e.client(), job)
        .await
        .unwrap()
        .iter()
        .filter(|p| node_of(p).is_some() && !terminating(p) && phase(p) == "Running")
        .filter_map(|p| p.uid())
        .filter(|u| of.contains(u))
        .collect()
}

/// Waits until `n` `Preempted` events name pods of `victims`; returns their notes.
async fn preempted(e2e: &E2e, victims: &BTreeSet<String>, n: usize) -> Vec<String> {
    let client = e2e.client();
    eventually(format!("{n} victims preempted"), || async {
        let notes: Vec<String> = preempted_events(&client)
            .await?
            .into_iter()
            .filter(|(uid, _)| victims.contains(uid))
            .map(|(_, note)| note)
            .collect();
        check(notes.len() >= n, || format!("{notes:?}")).map(|()| notes)
    })
    .await
    .unwrap()
}

async fn group_disruption(e2e: &E2e, name: &str) -> Option<(String, String, String)> {
    let g = e2e.api::<PodGroup>().get(name).await.unwrap();
    g.status?
        .conditions?
        .into_iter()
        .find(|c| c.type_ == DISRUPTION_TARGET)
        .map(|c| (c.status, c.reason, c.message))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_higher_priority_gang_preempts_an_all_gang_entirely_which_then_reruns_whole() {
    // Two nodes of 4 cpu, full with an `all` gang of four 2-cpu pods.
    let e2e = E2e::start(grid(1, 1, 2, "4")).await.unwrap();
    let client = e2e.client();
    let monitor = GangMonitor::start(&client).await.unwrap();
    priority_classes(&e2e).await;
    scheduled_gang(&e2e, "low", 4, true, "low", "2").await;
    let victims = uids(&wait_bound(&e2e, "low", 4).await.unwrap());
    let low_group = group_of_job(&e2e, "low").await;

    // A 1-pod gang of higher priority needs one pod's room; the `all` gang goes whole.
    scheduled_gang(&e2e, "high", 1, false, "high", "2").await;
    let high = wait_bound(&e2e, "high", 1).await.unwrap();
    let high_group = group_of_job(&e2e, "high").await;
    let notes = preempted(&e2e, &victims, 4).await;
    let node = node_of(&high[0]).unwrap();
    let preempted_by = format!("Preempted by podgroup default/{high_group} on node ");
    assert!(notes.iter().all(|n| n.starts_with(&preempted_by)), "{notes:?}");
    assert!(
        notes.iter().any(|n| n.ends_with(node)),
        "one victim made room on {node}: {notes:?}"
    );
    let (status, reason, message) = group_disruption(&e2e, &low_group).await.unwrap();
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("True", REASON_PREEMPTION_BY_SCHEDULER)
    );
    assert!(
        message.starts_with("kwas-scheduler: preempting to accommodate a higher priority podgroup ")
            && message.contains(" (priority "),
        "{message}"
    );
    eventually("every victim gone", || async {
        let left = still_bound(&e2e, "low", &victims).await;
        check(left.is_empty(), || format!("{} victims still running", left.len()))
    })
    .await
    .unwrap();

    // The Job replaces its pods; three would fit beside the preemptor, the gang needs four: none binds while
    // the preemptor runs. Once the user deletes the preemptor's Job, all four bind.
    eventually("four replacement pods", || async {
        let n = pods_of_job(&client, "low")
            .await?
            .iter()
            .filter(|p| !terminating(p) && !p.uid().is_some_and(|u| victims.contains(&u)))
            .count();
        check(n == 4, || format!("{n} replacements"))
    })
    .await
    .unwrap();
    // The scheduler has tried the gang with all four: each replacement is bound or told it cannot be.
    eventually("every replacement tried", || async {
        let pods = pods_of_job(&client, "low").await?;
        let replacements: Vec<&Pod> = pods
            .iter()
            .filter(|p| !terminating(p) && !p.uid().is_some_and(|u| victims.contains(&u)))
            .collect();
        let tried = replacements
            .iter()
            .filter(|p| {
                node_of(p).is_some() || pod_condition(p, POD_SCHEDULED).is_some_and(|c| c.1 == REASON_UNSCHEDULABLE)
            })
            .count();
        check(tried == 4, || {
            format!("{tried} of {} replacements tried", replacements.len())
        })
    })
    .await
    .unwrap();
    assert_eq!(
        bound_count(&pods_of_job(&client, "low").await.unwrap()),
        0,
        "no replacement binds beside the preemptor"
    );
    e2e.api::<Job>()
        .delete("high", &DeleteParams::background())
        .await
        .unwrap();
    wait_bound(&e2e, "low", 4).await.unwrap();
    // Running again whole: no longer about to be disrupted.
    let disruption = eventually("the victim group's DisruptionTarget turned False", || async {
        let d = group_disruption(&e2e, &low_group).await;
        check(d.as_ref().is_some_and(|(s, _, _)| s == "False"), || format!("{d:?}")).map(|()| d)
    })
    .await
    .unwrap();
    let (_, reason, message) = disruption.unwrap();
    assert_eq!(reason, "Scheduled");
    assert!(
        message.starts_with("scheduled again after its disruption (kwas-scheduler: preempting to accommodate"),
        "the preemption it recovered from: {message}"
    );
    let summary = monitor.check_settled().await.unwrap();
    assert!(summary.gangs_satisfied >= 2, "{summary:?}");
    e2e.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_higher_priority_gang_takes_only_what_it_needs_from_a_single_gang() {
    let e2e = E2e::start(grid(1, 1, 2, "4")).await.unwrap();
    let client = e2e.client();
    let monitor = GangMonitor::start(&client).await.unwrap();
    priority_classes(&e2e).await;
    gang(&e2e, "low", 4, false, "low", "2", None).await;
    let victims = uids(&wait_bound(&e2e, "low", 4).await.unwrap());

    gang(&e2e, "high", 1, false, "high", "2", None).await;
    wait_bound(&e2e, "high", 1).await.unwrap();
    let notes = preempted(&e2e, &victims, 1).await;
    assert_eq!(notes.len(), 1, "{notes:?}");
    eventually("the victim gone", || async {
        let left = still_bound(&e2e, "low", &victims).await;
        check(left.len() == 3, || format!("{} of the low gang running", left.len()))
    })
    .await
    .unwrap();
    assert!(
        group_disruption(&e2e, "low").await.is_none(),
        "a `single` gang is not disrupted as a whole"
    );
    // The victim's replacement (once the killed victim has failed) waits for room; nothing else is taken
    // meanwhile.
    let replacement = eventually("the replacement told it waits", || async {
        let pods = pods_of_job(&client, "low").await?;
        let new: Vec<&Pod> = pods
            .iter()
            .filter(|p| !terminating(p) && !p.uid().is_some_and(|u| victims.contains(&u)))
            .collect();
        let waiting = new.len() == 1
            && node_of(new[0]).is_none()
            && pod_condition(new[0], POD_SCHEDULED).is_some_and(|c| c.1 == REASON_UNSCHEDULABLE);
        check(waiting, || format!("{} replacements", new.len())).map(|()| new[0].name_any())
    })
    .await
    .unwrap();
    // The scheduler retries it (twice, so one retry started after it was told) and takes nothing, unless
    // it binds it or preempts again; and every victim it chose has its event.
    let told = group_attempts(&e2e, "unschedulable");
    let scheduler = e2e.stack().scheduler().unwrap().metrics().clone();
    eventually("the replacement retried", || async {
        let retried = group_attempts(&e2e, "unschedulable") - told;
        let running = still_bound(&e2e, "low", &victims).await.len();
        let bound = e2e.api::<Pod>().get(&replacement).await?.spec.and_then(|s| s.node_name);
        let events = preempted_events(&client).await?.len() as u64;
        let chosen = scheduler.victims();
        check(
            (retried >= 2 || running != 3 || bound.is_some() || chosen > 1) && events >= chosen,
            || {
                format!(
                    "{retried} retries, {running} running, bound to {bound:?}, {events} of {chosen} victims' events"
                )
            },
        )
    })
    .await
    .unwrap();
    assert_eq!(still_bound(&e2e, "low", &victims).await.len(), 3);
    let replacement = e2e.api::<Pod>().get(&replacement).await.unwrap();
    assert!(node_of(&replacement).is_none(), "the replacement still waits");
    assert_eq!(
        preempted_events(&client).await.unwrap().len(),
        1,
        "exactly one preemption in the cluster"
    );
    monitor.check_settled().await.unwrap();
    e2e.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mixed_cluster_loses_one_single_pod_rather_than_a_whole_all_gang() {
    // Eight nodes of 1 cpu: an `all` gang of four and a `single` gang of four fill them.
    let e2e = E2e::start(grid(1, 1, 8, "1")).await.unwrap();
    let client = e2e.client();
    let monitor = GangMonitor::start(&client).await.unwrap();
    priority_classes(&e2e).await;
    gang(&e2e, "atomic", 4, true, "low", "1", None).await;
    gang(&e2e, "loose", 4, false, "low", "1", None).await;
    let atomic = uids(&wait_bound(&e2e, "atomic", 4).await.unwrap());
    let loose = uids(&wait_bound(&e2e, "loose", 4).await.unwrap());

    gang(&e2e, "high", 1, false, "high", "1", None).await;
    wait_bound(&e2e, "high", 1).await.unwrap();
    let all: BTreeSet<String> = atomic.union(&loose).cloned().collect();
    let notes = preempted(&e2e, &all, 1).await;
    assert_eq!(notes.len(), 1, "{notes:?}");
    // The preemptor is bound, so its preemption is decided: every victim the scheduler chose has its event.
    let chosen = e2e.stack().scheduler().unwrap().metrics().victims();
    eventually("every chosen victim's event", || async {
        let events = preempted_events(&client).await?.len() as u64;
        check(events >= chosen, || format!("{events} of {chosen}"))
    })
    .await
    .unwrap();
    let victims: Vec<String> = preempted_events(&client)
        .await
        .unwrap()
        .into_iter()
        .map(|(uid, _)| uid)
        .collect();
    assert_eq!(victims.len(), 1, "one victim in all: {victims:?}");
    assert!(loose.contains(&victims[0]), "the victim is a `single` pod");
    assert_eq!(
        still_bound(&e2e, "atomic", &atomic).await.len(),
        4,
        "the `all` gang keeps running whole"
    );
    assert!(group_disruption(&e2e, "atomic").await.is_none());
    assert_eq!(still_bound(&e2e, "loose", &loose).await.len(), 3);
    monitor.check_settled().await.unwrap();
    e2e.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_with_a_priority_class_is_scheduled() {
    let e2e = E2e::start(grid(1, 1, 2, "4")).await.unwrap();
    priority_classes(&e2e).await;
    let basic = JobBuilder::new("basic")
        .parallelism(2)
        .priority_class("high")
        .run_for("200ms");
    let gang = JobBuilder::new("gang")
        .parallelism(2)
        .gang()
        .priority_class("high")
        .run_for("200ms");
    e2e.create(&basic.build().unwrap()).await.unwrap();
    e2e.create(&gang.build().unwrap()).await.unwrap();
    for name in ["basic", "gang"] {
        wait_job(&e2e, name, "Complete").await.unwrap();
    }
    e2e.shutdown().await;
}
