//! The scheduler and the controllers restarted mid-flight: killed while gangs are half bound and Jobs half
//! created, then restarted gracefully later on; everything converges, with no duplicate object and no gang
//! left partially bound.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kwas_api_types::jobset::PodGroupManagement;
use kwas_api_types::names::labels::{BLOCK, JOB_NAME, RACK};
use kwas_api_types::v1alpha3::{CompositePodGroup, PodGroup, Workload};
use kwas_devcluster::{FaultConfig, FaultRule, Verb};
use kwas_tests::inspect::*;
use kwas_tests::*;

use crate::grid;

const GANG_JOBS: usize = 12;
const BASIC_JOBS: usize = 3;
const PODS: usize = GANG_JOBS * 4 + BASIC_JOBS * 4 + 7;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarted_scheduler_and_controllers_converge_without_duplicates_or_partial_gangs() {
    // 16 nodes of 4 cpu in 2 blocks of 2 racks.
    let mut e2e = E2e::start(grid(2, 2, 4, "4")).await.unwrap();
    let client = e2e.client();
    let monitor = GangMonitor::start(&client).await.unwrap();

    // The first generation runs detached, so it can be killed like a process. Its scheduler binds one pod
    // at a time and every pod creation and binding takes 50 ms, so gangs spend a while half bound.
    e2e.stack_mut().stop_scheduler().await;
    e2e.stack_mut().stop_controllers().await;
    let mut slow = e2e.config().scheduler.clone();
    slow.bind_concurrency = 1;
    let scheduler = e2e.detached_scheduler(slow).await.unwrap();
    let controllers = e2e.detached_controllers().await.unwrap();
    e2e.cluster().faults().set(FaultConfig {
        seed: 7,
        rules: vec![FaultRule {
            resources: vec!["pods".into()],
            verbs: vec![Verb::Create],
            latency: Duration::from_millis(50),
            ..Default::default()
        }],
    });

    // 12 gangs of four 1-cpu pods (every other one in one rack), 3 Basic Jobs and a JobSet: 67 pods on 64
    // cpu. Gang pods run for 3 s (longer than a restart).
    let mut expected: BTreeMap<String, i32> = BTreeMap::new();
    for i in 0..GANG_JOBS {
        let mut job = JobBuilder::new(format!("gang-{i}"))
            .parallelism(4)
            .gang()
            .cpu("1")
            .run_for("3s");
        if i % 2 == 0 {
            job = job.topology(RACK);
        }
        e2e.create(&job.build().unwrap()).await.unwrap();
        expected.insert(job.name().to_string(), 4);
    }
    for i in 0..BASIC_JOBS {
        let job = JobBuilder::new(format!("basic-{i}"))
            .parallelism(2)
            .completions(4)
            .cpu("1")
            .run_for("500ms");
        e2e.create(&job.build().unwrap()).await.unwrap();
        expected.insert(job.name().to_string(), 4);
    }
    let js = JobSetBuilder::new("pretrain")
        .management(PodGroupManagement::Delegated)
        .root_topology(BLOCK)
        .replicated(1, JobBuilder::new("driver").cpu("1").run_for("3s"), Intent::Template)
        .replicated(
            2,
            JobBuilder::new("workers")
                .parallelism(3)
                .gang()
                .topology(RACK)
                .cpu("1")
                .run_for("3s"),
            Intent::Template,
        );
    e2e.create(&js.build().unwrap()).await.unwrap();
    expected.insert("pretrain-driver-0".into(), 1);
    expected.insert("pretrain-workers-0".into(), 3);
    expected.insert("pretrain-workers-1".into(), 3);

    // Mid-flight: a gang is at least two pods short right now (so the one binding in flight cannot complete
    // it) and not every pod exists. Both components are killed.
    eventually("a gang half bound", || async {
        let s = monitor.summary();
        let short = monitor.partial_now().iter().any(|p| p.bound + 2 <= p.minimum);
        check(s.gangs_satisfied >= 1 && short, || format!("{s:?}"))
    })
    .await
    .unwrap();
    monitor.outage_begin();
    scheduler.crash();
    controllers.crash();
    let pods_then = list::<Pod>(&client).await.unwrap().len();
    assert!(pods_then < PODS, "killed before every pod exists ({pods_then})");
    // What the killed components had sent is in (or cut off): the server answers nothing more.
    eventually("no request in flight", || async {
        let n = e2e.cluster().requests_in_flight();
        check(n == 0, || format!("{n} requests in flight"))
    })
    .await
    .unwrap();
    assert!(!monitor.partial_now().is_empty(), "the crash left a gang partly bound");

    // The stack's own scheduler and controllers take over.
    e2e.stack_mut().start_controllers();
    e2e.stack_mut().start_scheduler().unwrap();
    e2e.stack().ready().await.unwrap();
    monitor.outage_end();

    // Later, both restart again, gracefully, while the rest is still being scheduled.
    eventually("more gangs bound", || async {
        let s = monitor.summary();
        check(s.gangs_satisfied >= 8, || format!("{s:?}"))
    })
    .await
    .unwrap();
    monitor.outage_begin();
    e2e.stack_mut().stop_controllers().await;
    e2e.restart_scheduler().await.unwrap();
    e2e.stack_mut().start_controllers();
    monitor.outage_end();
    e2e.cluster().faults().clear();

    // Everything completes.
    for name in expected.keys() {
        wait_job(&e2e, name, "Complete").await.unwrap();
    }
    wait_jobset(&e2e, "pretrain", "Completed").await.unwrap();

    // No duplicates: one pod per completion, one Workload per root (each Job, the JobSet), one PodGroup per
    // Job, one root group.
    let pods = list::<Pod>(&client).await.unwrap();
    let mut per_job: BTreeMap<String, i32> = BTreeMap::new();
    for p in &pods {
        *per_job
            .entry(p.labels().get(JOB_NAME).cloned().unwrap_or_default())
            .or_default() += 1;
    }
    assert_eq!(per_job, expected, "pods per Job");
    for job in list::<Job>(&client).await.unwrap() {
        let name = job.name_any();
        let s = job.status.unwrap();
        assert_eq!(
            (s.succeeded, s.failed.unwrap_or(0)),
            (Some(expected[&name]), 0),
            "{name}"
        );
    }
    assert_eq!(
        list::<Workload>(&client).await.unwrap().len(),
        GANG_JOBS + BASIC_JOBS + 1
    );
    assert_eq!(
        list::<PodGroup>(&client).await.unwrap().len(),
        GANG_JOBS + BASIC_JOBS + 3
    );
    assert_eq!(list::<CompositePodGroup>(&client).await.unwrap().len(), 1);
    assert_eq!(list::<Job>(&client).await.unwrap().len(), GANG_JOBS + BASIC_JOBS + 3);

    // No gang sat partially bound beyond a burst, outages excused only for their own length; every gang
    // is whole.
    let summary = monitor.check_settled().await.unwrap();
    assert_eq!(summary.gangs_satisfied, GANG_JOBS + 2, "{summary:?}");
    assert_eq!(summary.composites_satisfied, 1, "{summary:?}");
    e2e.shutdown().await;
}
