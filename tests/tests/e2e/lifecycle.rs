//! Changes a user makes to running workloads: a gang's `minCount` edited on the Job is re-synced to its
//! Workload and PodGroup and the scheduler acts on it; deleting a JobSet removes everything below it and
//! frees its nodes, and nothing of another JobSet.

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::ResourceExt;
use kube::api::{DeleteParams, Patch, PatchParams};
use kwas_api_types::jobset::{JobSet, PodGroupManagement};
use kwas_api_types::names::conditions::{POD_GROUP_INITIALLY_SCHEDULED, POD_SCHEDULED, REASON_UNSCHEDULABLE};
use kwas_api_types::names::labels::{BLOCK, JOBSET_NAME, RACK};
use kwas_api_types::v1alpha3::{CompositePodGroup, PodGroup, Workload};
use kwas_tests::inspect::*;
use kwas_tests::*;
use serde_json::json;

use crate::grid;

/// (the Workload template's minCount, the PodGroup's minCount) of Job `job`, once both exist.
async fn min_counts(e2e: &E2e, job: &str) -> Result<(i32, i32), NotYet> {
    let client = e2e.client();
    let workloads: Vec<Workload> = list(&client).await?;
    let workload = workloads
        .iter()
        .find(|w| {
            w.spec
                .controller_ref
                .as_ref()
                .is_some_and(|r| r.kind == "Job" && r.name == job)
        })
        .ok_or_else(|| not_yet(format!("no Workload of {job}")))?;
    let groups: Vec<PodGroup> = list(&client).await?;
    let group = groups
        .iter()
        .find(|g| {
            g.spec
                .workload_ref
                .as_ref()
                .is_some_and(|r| r.workload_name == workload.name_any())
        })
        .ok_or_else(|| not_yet(format!("no PodGroup of {job}")))?;
    let w = workload
        .spec
        .pod_group_templates
        .as_ref()
        .and_then(|t| t.first()?.scheduling_policy.gang.as_ref())
        .map(|g| g.min_count);
    let g = group.spec.scheduling_policy.gang.as_ref().map(|g| g.min_count);
    match (w, g) {
        (Some(w), Some(g)) => Ok((w, g)),
        _ => Err(not_yet(format!("workload {w:?}, group {g:?}"))),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_min_count_edit_is_resynced_and_lets_the_gang_run() {
    // 8 cpu, 2 taken by a long-running pod: a gang of four 2-cpu pods does not fit, three would.
    let e2e = E2e::start(grid(1, 1, 2, "4")).await.unwrap();
    let client = e2e.client();
    let monitor = GangMonitor::start(&client).await.unwrap();
    e2e.create(&JobBuilder::new("blocker").cpu("2").build().unwrap())
        .await
        .unwrap();
    wait_bound(&e2e, "blocker", 1).await.unwrap();
    e2e.create(
        &JobBuilder::new("elastic")
            .parallelism(4)
            .gang()
            .cpu("2")
            .build()
            .unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(
        eventually("the gang's objects", || min_counts(&e2e, "elastic"))
            .await
            .unwrap(),
        (4, 4)
    );
    let gang_uids = || async {
        list::<PodGroup>(&client)
            .await
            .unwrap()
            .iter()
            .filter(|g| g.spec.scheduling_policy.gang.is_some())
            .filter_map(|g| g.uid())
            .collect::<Vec<_>>()
    };
    let before = gang_uids().await;
    assert_eq!(before.len(), 1);
    eventually("the gang unschedulable", || async {
        let groups: Vec<PodGroup> = list(&client).await?;
        let gang = groups.iter().find(|g| g.spec.scheduling_policy.gang.is_some());
        let told = gang
            .and_then(|g| g.status.as_ref())
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| {
                c.iter()
                    .any(|c| c.type_ == POD_GROUP_INITIALLY_SCHEDULED && c.reason == REASON_UNSCHEDULABLE)
            });
        check(told, || format!("{:?}", gang.map(|g| &g.status)))
    })
    .await
    .unwrap();
    assert_eq!(bound_count(&pods_of_job(&client, "elastic").await.unwrap()), 0);

    // A minCount above parallelism is refused, with the field's path.
    let jobs = e2e.api::<Job>();
    let err = jobs
        .patch(
            "elastic",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"scheduling": {"schedulingPolicy": {"gang": {"minCount": 5}}}}})),
        )
        .await
        .unwrap_err();
    let kube::Error::Api(status) = err else { panic!("{err}") };
    assert_eq!(status.code, 422);
    assert!(
        status.message.contains("spec.scheduling.schedulingPolicy.gang.minCount: Invalid value: 5: must be less than or equal to spec.parallelism (4)"),
        "{}",
        status.message
    );

    // The user lowers minCount to 3: the Workload and PodGroup follow, and three pods bind together.
    jobs.patch(
        "elastic",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"scheduling": {"schedulingPolicy": {"gang": {"minCount": 3}}}}})),
    )
    .await
    .unwrap();
    eventually("minCount 3 re-synced", || async {
        let counts = min_counts(&e2e, "elastic").await?;
        check(counts == (3, 3), || format!("{counts:?}"))
    })
    .await
    .unwrap();
    let pods = wait_bound(&e2e, "elastic", 3).await.unwrap();
    assert_eq!(bound_count(&pods), 3);
    let waiting: Vec<&Pod> = pods.iter().filter(|p| node_of(p).is_none()).collect();
    assert_eq!(waiting.len(), 1);
    eventually("the fourth pod told why it waits", || async {
        let p = e2e.api::<Pod>().get(&waiting[0].name_any()).await?;
        let c = pod_condition(&p, POD_SCHEDULED);
        check(c.as_ref().is_some_and(|c| c.1 == REASON_UNSCHEDULABLE), || {
            format!("{c:?}")
        })
    })
    .await
    .unwrap();

    // Capacity frees: the fourth joins its running gang.
    jobs.delete("blocker", &DeleteParams::background()).await.unwrap();
    wait_bound(&e2e, "elastic", 4).await.unwrap();
    assert_eq!(
        pods_of_job(&client, "elastic").await.unwrap().len(),
        4,
        "no pod was recreated"
    );
    assert_eq!(gang_uids().await, before, "the same PodGroup, edited in place");
    monitor.check_settled().await.unwrap();
    e2e.shutdown().await;
}

/// Whether `o` carries JobSet `name`'s label.
fn labelled<K: ResourceExt>(o: &K, name: &str) -> bool {
    o.labels().get(JOBSET_NAME).map(String::as_str) == Some(name)
}

/// The objects of JobSet `name`: (Jobs, pods, PodGroups, CompositePodGroups, Workloads). Jobs and pods carry
/// its label; its groups and Workload are named after it.
async fn objects_of(client: &kube::Client, name: &str) -> Result<(usize, usize, usize, usize, usize)> {
    let prefix = format!("{name}-");
    let named = |n: String| n.starts_with(&prefix);
    let jobs = list::<Job>(client).await?.iter().filter(|j| labelled(*j, name)).count();
    let pods = list::<Pod>(client).await?.iter().filter(|p| labelled(*p, name)).count();
    let groups = list::<PodGroup>(client)
        .await?
        .into_iter()
        .filter(|g| named(g.name_any()))
        .count();
    let roots = list::<CompositePodGroup>(client)
        .await?
        .into_iter()
        .filter(|g| named(g.name_any()))
        .count();
    let workloads = list::<Workload>(client)
        .await?
        .into_iter()
        .filter(|w| named(w.name_any()))
        .count();
    Ok((jobs, pods, groups, roots, workloads))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_jobset_cleans_up_everything_below_it_and_nothing_else() {
    // Two JobSets (one per management strategy) of long-running pods, 2 x 4 pods of 2 cpu each: together
    // they fill the cluster.
    let e2e = E2e::start(grid(2, 2, 2, "4")).await.unwrap();
    let client = e2e.client();
    let monitor = GangMonitor::start(&client).await.unwrap();
    for (name, management) in [
        ("keep", PodGroupManagement::Centralized),
        ("drop", PodGroupManagement::Delegated),
    ] {
        let js = JobSetBuilder::new(name)
            .management(management)
            .root_topology(BLOCK)
            .replicated(
                2,
                JobBuilder::new("workers").parallelism(4).gang().topology(RACK).cpu("2"),
                Intent::Targeted,
            );
        e2e.create(&js.build().unwrap()).await.unwrap();
    }
    for name in ["keep", "drop"] {
        eventually(format!("JobSet {name} running with all its objects"), || async {
            let counts = objects_of(&client, name).await?;
            let running = list::<Pod>(&client)
                .await?
                .iter()
                .filter(|p| labelled(*p, name) && phase(p) == "Running")
                .count();
            // Jobs, pods, PodGroups, root, Workload.
            check(running == 8 && counts == (2, 8, 2, 1, 1), || {
                format!("{running} running, objects {counts:?}")
            })
        })
        .await
        .unwrap();
    }

    // As `kubectl delete jobset drop` does (background propagation).
    e2e.api::<JobSet>()
        .delete("drop", &DeleteParams::background())
        .await
        .unwrap();
    eventually("everything below the deleted JobSet gone", || async {
        let counts = objects_of(&client, "drop").await?;
        check(counts == (0, 0, 0, 0, 0), || format!("{counts:?}"))
    })
    .await
    .unwrap();
    // The garbage collector has worked through the cascade: it works its queue in order, and the
    // dependent of an owner deleted now is collected after everything queued before.
    let cms = e2e.api::<ConfigMap>();
    let owner = e2e.create(&config_map("gc-barrier", json!([]))).await.unwrap();
    let owner_ref =
        json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "gc-barrier", "uid": owner.uid().unwrap()}]);
    e2e.create(&config_map("gc-barrier-dep", owner_ref)).await.unwrap();
    cms.delete("gc-barrier", &DeleteParams::background()).await.unwrap();
    eventually("the garbage collector caught up", || async {
        let left = cms.get_opt("gc-barrier-dep").await?;
        check(left.is_none(), || "the barrier's dependent is still there".into())
    })
    .await
    .unwrap();
    assert_eq!(
        objects_of(&client, "keep").await.unwrap(),
        (2, 8, 2, 1, 1),
        "the other JobSet is untouched"
    );

    // Its nodes are free again: a gang that needs a whole block runs.
    e2e.create(
        &JobBuilder::new("after")
            .parallelism(8)
            .gang()
            .topology(BLOCK)
            .cpu("2")
            .run_for("200ms")
            .build()
            .unwrap(),
    )
    .await
    .unwrap();
    wait_job(&e2e, "after", "Complete").await.unwrap();
    monitor.check_settled().await.unwrap();
    e2e.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jobset_min_count_edit_is_resynced() {
    // A worker gang of three that cannot fit (2 cpu pods, room for two), then lowered to two.
    let e2e = E2e::start(grid(1, 1, 1, "4")).await.unwrap();
    let client = e2e.client();
    let js = JobSetBuilder::new("js")
        .management(PodGroupManagement::Delegated)
        .replicated(
            1,
            JobBuilder::new("workers").parallelism(3).gang_min(3).cpu("2"),
            Intent::Targeted,
        );
    e2e.create(&js.build().unwrap()).await.unwrap();
    eventually("the worker gang's PodGroup", || async {
        let groups = list::<PodGroup>(&client).await?;
        check(groups.len() == 1, || format!("{} groups", groups.len()))
    })
    .await
    .unwrap();
    e2e.api::<JobSet>()
        .patch(
            "js",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"scheduling": {"replicatedJobPolicies": [
                {"targetReplicatedJob": "workers", "schedulingPolicy": {"gang": {"minCount": 2}}}
            ]}}})),
        )
        .await
        .unwrap();
    eventually("minCount 2 on the PodGroup", || async {
        let groups = list::<PodGroup>(&client).await?;
        let min = groups[0].spec.scheduling_policy.gang.as_ref().map(|g| g.min_count);
        check(min == Some(2), || format!("{min:?}"))
    })
    .await
    .unwrap();
    wait_bound(&e2e, "js-workers-0", 2).await.unwrap();
    e2e.shutdown().await;
}

/// A ConfigMap `name` with `owners` as its ownerReferences.
fn config_map(name: &str, owners: serde_json::Value) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name, "ownerReferences": owners}})).unwrap()
}
