//! JobSets: a gang of gangs with a rack constraint per Job and a block constraint at the root lands each Job
//! in one rack and all of them in one block, with either PodGroup management strategy.

use std::collections::BTreeSet;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kwas_api_types::jobset::PodGroupManagement;
use kwas_api_types::names::conditions::COMPOSITE_POD_GROUP_INITIALLY_SCHEDULED;
use kwas_api_types::names::labels::{BLOCK, JOBSET_NAME, RACK};
use kwas_api_types::v1alpha3::{CompositePodGroup, PodGroup, Workload};
use kwas_tests::inspect::*;
use kwas_tests::*;

use crate::grid;

/// A driver (one Basic pod of 1 cpu) and two worker Jobs, each a gang of three 2-cpu pods in one rack; the
/// whole JobSet in one block.
fn pretrain(name: &str, management: PodGroupManagement, intent: Intent) -> JobSetBuilder {
    JobSetBuilder::new(name)
        .management(management)
        .root_topology(BLOCK)
        .replicated(1, JobBuilder::new("driver").cpu("1").run_for("500ms"), intent)
        .replicated(
            2,
            JobBuilder::new("workers")
                .parallelism(3)
                .gang()
                .topology(RACK)
                .cpu("2")
                .run_for("500ms"),
            intent,
        )
}

async fn lands_in_one_rack_each_all_in_one_block(management: PodGroupManagement, intent: Intent) {
    // 2 blocks x 2 racks x 2 nodes of 4 cpu. A worker Job (6 cpu over two nodes) fits in a whole rack; with
    // one node of block 0 cordoned, block 0 can hold only one of them, so the JobSet must go to block 1.
    let e2e = E2e::start(grid(2, 2, 2, "4")).await.unwrap();
    let client = e2e.client();
    e2e.cluster().cordon("node-b0-r0-n0").unwrap();
    let monitor = GangMonitor::start(&client).await.unwrap();
    e2e.create(&pretrain("pretrain", management, intent).build().unwrap())
        .await
        .unwrap();

    // All seven pods bound (they run for half a second).
    let pods: Vec<Pod> = eventually("the JobSet's seven pods bound", || async {
        let pods: Vec<Pod> = list::<Pod>(&client)
            .await?
            .into_iter()
            .filter(|p| p.labels().get(JOBSET_NAME).map(String::as_str) == Some("pretrain"))
            .collect();
        let bound = bound_count(&pods);
        check(pods.len() == 7 && bound == 7, || {
            format!("{bound} of {} bound", pods.len())
        })
        .map(|()| pods)
    })
    .await
    .unwrap();
    let labels = node_labels(&client).await.unwrap();
    let blocks = domains(&pods, &labels, BLOCK).unwrap();
    assert_eq!(
        blocks,
        BTreeSet::from(["b1".to_string()]),
        "all in the block with room for both"
    );
    let mut racks = BTreeSet::new();
    for job in ["pretrain-workers-0", "pretrain-workers-1"] {
        let of_job: Vec<Pod> = pods
            .iter()
            .filter(|p| {
                p.labels()
                    .get(kwas_api_types::names::labels::JOB_NAME)
                    .map(String::as_str)
                    == Some(job)
            })
            .cloned()
            .collect();
        assert_eq!(of_job.len(), 3);
        let r = domains(&of_job, &labels, RACK).unwrap();
        assert_eq!(r.len(), 1, "{job} in one rack: {r:?}");
        racks.extend(r);
    }
    assert_eq!(racks.len(), 2, "a rack each");

    // The JobSet's scheduling objects: one Workload, a root gang of three groups, scheduled.
    let workloads: Vec<Workload> = list(&client).await.unwrap();
    assert_eq!(workloads.len(), 1, "only the JobSet's Workload");
    let roots: Vec<CompositePodGroup> = list(&client).await.unwrap();
    assert_eq!(roots.len(), 1);
    assert_eq!(
        roots[0].spec.scheduling_policy.gang.as_ref().unwrap().min_group_count,
        3
    );
    let root_condition = roots[0]
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == COMPOSITE_POD_GROUP_INITIALLY_SCHEDULED))
        .map(|c| c.status.clone());
    assert_eq!(root_condition.as_deref(), Some("True"));
    let groups: Vec<PodGroup> = list(&client).await.unwrap();
    assert_eq!(groups.len(), 3);
    let owner = match management {
        PodGroupManagement::Centralized => "JobSet",
        PodGroupManagement::Delegated => "Job",
    };
    for g in &groups {
        assert_eq!(
            g.spec.parent_composite_pod_group_name.as_deref(),
            Some(roots[0].name_any().as_str())
        );
        assert_eq!(
            g.owner_references()[0].kind,
            owner,
            "{management:?} groups are owned by the {owner}"
        );
    }

    let done = wait_jobset(&e2e, "pretrain", "Completed").await.unwrap();
    let counts: Vec<(String, i32)> = done
        .status
        .unwrap()
        .replicated_jobs_status
        .iter()
        .map(|r| (r.name.clone(), r.succeeded))
        .collect();
    assert_eq!(counts, [("driver".to_string(), 1), ("workers".to_string(), 2)]);
    assert_eq!(list::<Job>(&client).await.unwrap().len(), 3);
    let summary = monitor.check_settled().await.unwrap();
    assert_eq!(
        (summary.gangs_satisfied, summary.composites_satisfied),
        (2, 1),
        "{summary:?}"
    );
    e2e.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn centralized_jobset_lands_each_job_in_one_rack_all_in_one_block() {
    lands_in_one_rack_each_all_in_one_block(PodGroupManagement::Centralized, Intent::Template).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delegated_jobset_lands_each_job_in_one_rack_all_in_one_block() {
    lands_in_one_rack_each_all_in_one_block(PodGroupManagement::Delegated, Intent::Targeted).await;
}
