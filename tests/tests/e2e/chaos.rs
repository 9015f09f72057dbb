//! Chaos: randomized runs in which two elected schedulers and two elected controller instances are killed
//! and replaced at random points while the API server injects faults (errors, responses lost after the
//! commit, dropped watches), nodes' kubelets go silent and come back (the node tainted unreachable
//! meanwhile), and a second scheduler binds pods of its own on the same nodes, with a gang monitor and a
//! capacity check watching throughout.
//!
//! Invariants: no gang sits partially bound beyond a binding burst (the time a killed leader's lease takes
//! to expire is excused), no node is ever overcommitted (whoever bound its pods), no object is duplicated,
//! every Job and JobSet finishes. The run is seeded: `KWAS_CHAOS_SEED` picks the first seed, `KWAS_CHAOS_ROUNDS` the number of
//! rounds (1 in CI), e.g. the longer run
//! `KWAS_CHAOS_ROUNDS=10 cargo test --release -p kwas-tests --test e2e chaos -- --nocapture`.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::{Client, ResourceExt};
use kwas_api_types::jobset::PodGroupManagement;
use kwas_api_types::names::labels::{BLOCK, JOB_NAME, RACK};
use kwas_api_types::v1alpha3::{CompositePodGroup, PodGroup, Workload};
use kwas_devcluster::{FaultConfig, FaultRule, Verb};
use kwas_scheduler::runtime::{LeaseConfig, RuntimeHandle, scheduler_lease};
use kwas_tests::inspect::*;
use kwas_tests::*;

use crate::grid;

const GANG_JOBS: usize = 8;
const BASIC_JOBS: usize = 2;
/// Chaos steps per round.
const STEPS: usize = 10;
/// The second scheduler's name (kwas serves `kwas-scheduler` and `default-scheduler`).
const FOREIGN: &str = "foreign-scheduler";

/// A pod for the second scheduler: one cpu for `run` (a Go duration), then done.
fn foreign_pod(name: &str, run: &str) -> Pod {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "annotations": {"kwas.dev/sim-run-duration": run}},
        "spec": {"schedulerName": FOREIGN, "restartPolicy": "Never", "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}
    }))
    .unwrap()
}

/// Sets or clears `kwas.dev/sim-node-down` on `node` (its kubelet silent or back).
async fn set_down(client: &Client, node: &str, down: bool) {
    let value = if down {
        serde_json::json!("true")
    } else {
        serde_json::Value::Null
    };
    kube::Api::<Node>::all(client.clone())
        .patch(
            node,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(
                serde_json::json!({"metadata": {"annotations": {"kwas.dev/sim-node-down": value}}}),
            ),
        )
        .await
        .unwrap();
}

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn lease(mut l: LeaseConfig) -> LeaseConfig {
    l.lease_duration = Duration::from_secs(4);
    l.renew_deadline = Duration::from_secs(3);
    l.retry_period = Duration::from_millis(500);
    l
}

fn faults(seed: u64) -> FaultConfig {
    let rule = |resources: &[&str], verbs: Vec<Verb>, error_rate: f64, lost_response_rate: f64| FaultRule {
        resources: resources.iter().map(|r| r.to_string()).collect(),
        verbs,
        error_rate,
        error_code: if seed.is_multiple_of(2) { 500 } else { 503 },
        lost_response_rate,
        ..Default::default()
    };
    FaultConfig {
        seed,
        rules: vec![
            // Pods: creations and deletions fail or lose their answer (bindings only lose it: a binding
            // that fails outright is a half-bound gang until its retry, which the monitor would count);
            // watches drop.
            FaultRule {
                subresources: vec![String::new()],
                drop_watch_rate: 0.002,
                ..rule(&["pods"], vec![Verb::Create, Verb::Delete, Verb::Watch], 0.03, 0.03)
            },
            FaultRule {
                subresources: vec!["binding".into()],
                ..rule(&["pods"], vec![Verb::Create], 0.0, 0.05)
            },
            rule(
                &["podgroups", "compositepodgroups", "workloads", "jobs"],
                vec![Verb::Create, Verb::Patch],
                0.05,
                0.05,
            ),
        ],
    }
}

/// Milli-cpu of a quantity as the jobs here write them (`"1"`, `"500m"`).
fn millis(q: &str) -> u64 {
    match q.strip_suffix('m') {
        Some(m) => m.parse().unwrap_or(u64::MAX),
        None => q.parse::<u64>().map_or(u64::MAX, |c| c * 1000),
    }
}

/// Fails when a node runs more cpu than it has, or when the pods bound to a node the second scheduler did not
/// also bind to (terminating ones included) request more than it has.
async fn check_capacity(client: &Client) -> usize {
    let nodes: BTreeMap<String, u64> = kube::Api::<Node>::all(client.clone())
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|n| {
            let cpu = n
                .status
                .and_then(|s| s.allocatable)
                .and_then(|a| a.get("cpu").map(|q| q.0.clone()));
            (n.metadata.name.unwrap_or_default(), millis(&cpu.unwrap_or_default()))
        })
        .collect();
    // Per node: what its kubelet admitted (Running), and everything bound and not finished. Where the
    // second scheduler bound a pod, a Pending pod may be one the kubelet is about to reject (`OutOfcpu`:
    // the two schedulers raced), so only what runs there must fit; elsewhere everything bound must.
    let mut running: BTreeMap<String, u64> = BTreeMap::new();
    let mut used: BTreeMap<String, u64> = BTreeMap::new();
    let mut raced: std::collections::BTreeSet<String> = Default::default();
    for p in list::<Pod>(client).await.unwrap() {
        let (Some(node), phase @ ("Pending" | "Running")) = (node_of(&p).map(str::to_string), phase(&p)) else {
            continue;
        };
        let cpu: u64 = p
            .spec
            .iter()
            .flat_map(|s| &s.containers)
            .filter_map(|c| c.resources.as_ref()?.requests.as_ref()?.get("cpu"))
            .map(|q| millis(&q.0))
            .sum();
        if p.spec.as_ref().and_then(|s| s.scheduler_name.as_deref()) == Some(FOREIGN) {
            raced.insert(node.clone());
        }
        if phase == "Running" {
            *running.entry(node.clone()).or_default() += cpu;
        }
        *used.entry(node).or_default() += cpu;
    }
    for (node, cpu) in &running {
        assert!(
            cpu <= &nodes[node],
            "node {node} runs more than it has: {cpu}m of {}m",
            nodes[node]
        );
    }
    for (node, cpu) in used.iter().filter(|(n, _)| !raced.contains(*n)) {
        assert!(
            cpu <= &nodes[node],
            "node {node} overcommitted: {cpu}m of {}m",
            nodes[node]
        );
    }
    used.len()
}

/// What one round survived.
#[derive(Debug, Default)]
struct Tally {
    restarts: usize,
    node_outages: usize,
    foreign_pods: usize,
    leader_changes: usize,
    faults: u64,
    capacity_checks: usize,
    jobs: usize,
}

struct Scheduler {
    _process: Detached,
    handle: RuntimeHandle,
}

async fn scheduler(e2e: &E2e, id: &str) -> Scheduler {
    let mut config = e2e.config().scheduler.clone();
    config.leader_election = Some(lease(scheduler_lease(NS, id)));
    let (process, handle) = e2e.detached_scheduler_with_handle(config).await.unwrap();
    Scheduler {
        _process: process,
        handle,
    }
}

async fn controllers(e2e: &E2e, id: &str) -> Detached {
    e2e.detached_controllers_with(Some(lease(LeaseConfig::new(NS, "kwas-controllers", id))))
        .await
        .unwrap()
}

async fn round(seed: u64) -> Tally {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut tally = Tally::default();
    let mut e2e = E2e::start(grid(2, 2, 4, "4")).await.unwrap();
    let client = e2e.client();
    let monitor = GangMonitor::start(&client).await.unwrap();
    e2e.stack_mut().stop_scheduler().await;
    e2e.stack_mut().stop_controllers().await;
    let mut generation = 0;
    let mut schedulers = Vec::new();
    let mut ctrls = Vec::new();
    for _ in 0..2 {
        generation += 1;
        schedulers.push(scheduler(&e2e, &format!("scheduler-{seed}-{generation}")).await);
        ctrls.push(controllers(&e2e, &format!("controllers-{seed}-{generation}")).await);
    }

    // Gangs (every other one in one rack), Basic Jobs and a JobSet of gangs in one block.
    let mut expected: BTreeMap<String, i32> = BTreeMap::new();
    for i in 0..GANG_JOBS {
        let mut job = JobBuilder::new(format!("gang-{i}"))
            .parallelism(4)
            .gang()
            .cpu("1")
            .run_for(format!("{}ms", 500 + rng.u64(0..1500)));
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
            .run_for("300ms");
        e2e.create(&job.build().unwrap()).await.unwrap();
        expected.insert(job.name().to_string(), 4);
    }
    let js = JobSetBuilder::new("pretrain")
        .management(PodGroupManagement::Delegated)
        .root_topology(BLOCK)
        .replicated(1, JobBuilder::new("driver").cpu("1").run_for("2s"), Intent::Template)
        .replicated(
            2,
            JobBuilder::new("workers")
                .parallelism(3)
                .gang()
                .topology(RACK)
                .cpu("1")
                .run_for("2s"),
            Intent::Template,
        );
    e2e.create(&js.build().unwrap()).await.unwrap();
    expected.insert("pretrain-driver-0".into(), 1);
    expected.insert("pretrain-workers-0".into(), 3);
    expected.insert("pretrain-workers-1".into(), 3);
    tally.jobs = expected.len();
    // A second scheduler with work of its own on the same nodes.
    let _foreign = ForeignScheduler::start(client.clone(), FOREIGN);
    for i in 0..4 {
        e2e.create(&foreign_pod(
            &format!("foreign-{i}"),
            &format!("{}ms", 500 + rng.u64(0..2000)),
        ))
        .await
        .unwrap();
        tally.foreign_pods += 1;
    }
    let nodes = e2e.cluster().node_names();
    let mut down: Option<String> = None;
    // Faults from now on (the user's own submissions above go through).
    e2e.cluster().faults().set(faults(seed));

    for _ in 0..STEPS {
        tokio::time::sleep(Duration::from_millis(200 + rng.u64(0..1000))).await;
        match rng.u8(0..6) {
            4 => {
                // A node's kubelet goes silent (the node is tainted unreachable: nothing new goes there,
                // what runs there waits), or the silent one comes back.
                match down.take() {
                    Some(node) => set_down(&client, &node, false).await,
                    None => {
                        let node = nodes[rng.usize(0..nodes.len())].clone();
                        set_down(&client, &node, true).await;
                        down = Some(node);
                        tally.node_outages += 1;
                    }
                }
            }
            5 => {
                // More work for the second scheduler.
                let name = format!("foreign-{}", tally.foreign_pods);
                let pod = foreign_pod(&name, &format!("{}ms", 500 + rng.u64(0..2000)));
                // Faults may refuse or lose the creation: the pod is there or not, either is fine.
                if e2e.create(&pod).await.is_ok() {
                    tally.foreign_pods += 1;
                }
            }
            0 => {
                // Kill the scheduling leader (if any) and replace it with a new standby.
                let Some(i) = schedulers.iter().position(|s| s.handle.is_leader()) else {
                    continue;
                };
                monitor.outage_begin();
                drop(schedulers.remove(i));
                generation += 1;
                schedulers.push(scheduler(&e2e, &format!("scheduler-{seed}-{generation}")).await);
                let started = Instant::now();
                eventually("a new scheduling leader", || {
                    let leading = schedulers.iter().any(|s| s.handle.is_leader());
                    async move { check(leading, || "no leader".into()) }
                })
                .await
                .unwrap();
                monitor.outage_end();
                tally.leader_changes += 1;
                tally.restarts += 1;
                tracing::info!(after = ?started.elapsed(), "scheduler leadership moved");
            }
            1 => {
                // Kill a controllers instance (the leader or the standby) and start another.
                let i = rng.usize(0..ctrls.len());
                ctrls.remove(i).crash();
                generation += 1;
                ctrls.push(controllers(&e2e, &format!("controllers-{seed}-{generation}")).await);
                tally.restarts += 1;
            }
            2 => {
                // Kill the standby scheduler.
                if let Some(i) = schedulers.iter().position(|s| !s.handle.is_leader()) {
                    drop(schedulers.remove(i));
                    generation += 1;
                    schedulers.push(scheduler(&e2e, &format!("scheduler-{seed}-{generation}")).await);
                    tally.restarts += 1;
                }
            }
            _ => {
                // Faults on or off.
                if e2e.cluster().faults().config().rules.is_empty() {
                    e2e.cluster().faults().set(faults(rng.u64(..)));
                } else {
                    e2e.cluster().faults().clear();
                }
            }
        }
        check_capacity(&client).await;
        tally.capacity_checks += 1;
        monitor.check_no_partial_binding().unwrap();
    }

    // Calm: faults off, every kubelet back, the survivors finish the work.
    e2e.cluster().faults().clear();
    if let Some(node) = down.take() {
        set_down(&client, &node, false).await;
    }
    tally.faults = e2e.cluster().faults().injected();
    for name in expected.keys() {
        wait_job(&e2e, name, "Complete").await.unwrap();
    }
    wait_jobset(&e2e, "pretrain", "Completed").await.unwrap();
    check_capacity(&client).await;
    tally.capacity_checks += 1;

    // No duplicates: one pod per completion, one Workload per root, one PodGroup per Job, one root group.
    let pods = list::<Pod>(&client).await.unwrap();
    let mut per_job: BTreeMap<String, i32> = BTreeMap::new();
    for p in &pods {
        *per_job
            .entry(p.labels().get(JOB_NAME).cloned().unwrap_or_default())
            .or_default() += 1;
    }
    for job in list::<Job>(&client).await.unwrap() {
        let name = job.name_any();
        let s = job.status.unwrap_or_default();
        assert_eq!(s.succeeded, Some(expected[&name]), "{name}");
        // A pod lost to an injected fault may fail and be replaced, never duplicated beyond its failures.
        assert_eq!(
            per_job[&name],
            expected[&name] + s.failed.unwrap_or(0),
            "pods of {name}"
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
    assert_eq!(list::<Job>(&client).await.unwrap().len(), expected.len());
    let summary = monitor.check_settled().await.unwrap();
    assert_eq!(summary.gangs_satisfied, GANG_JOBS + 2, "{summary:?}");
    drop(schedulers);
    for c in ctrls {
        c.crash();
    }
    e2e.shutdown().await;
    tally
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chaos_kills_leader_changes_and_api_faults_break_no_invariant() {
    let first = env_or("KWAS_CHAOS_SEED", 1);
    let rounds = env_or("KWAS_CHAOS_ROUNDS", 1);
    let started = Instant::now();
    let mut total = Tally::default();
    for seed in first..first + rounds {
        let t = round(seed).await;
        println!("chaos seed {seed}: {t:?}");
        total.restarts += t.restarts;
        total.leader_changes += t.leader_changes;
        total.node_outages += t.node_outages;
        total.foreign_pods += t.foreign_pods;
        total.faults += t.faults;
        total.capacity_checks += t.capacity_checks;
        total.jobs += t.jobs;
    }
    println!(
        "chaos: {rounds} rounds in {:.0?}: {} restarts survived ({} leader changes), {} node outages, {} pods of a second scheduler, {} faults injected, {} Jobs finished, {} capacity checks; invariant violations: 0",
        started.elapsed(),
        total.restarts,
        total.leader_changes,
        total.node_outages,
        total.foreign_pods,
        total.faults,
        total.jobs,
        total.capacity_checks
    );
}
