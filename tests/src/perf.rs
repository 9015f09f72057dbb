//! The end-to-end benchmark: upstream scheduler_perf's gang workloads, submitted as Jobs and JobSets so the
//! controllers are in the loop, on devcluster.
//!
//! Each [`Scenario`] starts a fresh stack (devcluster, controllers, scheduler, in one process) with the
//! product's default timing and the kubelet off (as in scheduler_perf: pods stay bound and `Pending`), then
//! creates every Job (or JobSet) through the API with [`CLIENTS`] concurrent clients. It measures, on this
//! process's clock:
//!
//! - **creation to bound**: from the first pod's creation (the first pod a watch on pods reports) until the
//!   scheduler has bound the last pod (its bindings counter reaches the number of pods); pods/s over that
//!   span is the figure comparable to scheduler_perf, which creates the pods itself;
//! - **submission to bound**: from the first Job creation request until the last bind, which adds the Job
//!   (and JobSet) controllers' work: Workloads, PodGroups (and CompositePodGroups), then pods.
//!
//! Afterwards it checks that every pod is bound and, for topology-aware scenarios, that each Job landed in
//! one rack. Nodes have 4 cpu / 32Gi / 110 pods and pods ask for 100m / 100Mi, as upstream's.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, PostParams};
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use kwas_api_types::jobset::JobSet;
use kwas_api_types::names::labels::{JOB_NAME, RACK};
use kwas_devcluster::{Capacity, Topology};

use crate::error::{Error, Result};
use crate::harness::{E2e, NS};
use crate::inspect::{domains, node_labels, node_of};
use crate::objects::{Intent, JobBuilder, JobSetBuilder};

/// Concurrent clients creating the Jobs.
pub const CLIENTS: usize = 16;

/// How long a scenario may take before it is declared stuck.
pub const DEADLINE: Duration = Duration::from_secs(600);

/// What a scenario submits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Submission {
    /// `jobs` gang Jobs of `size` pods (minCount = parallelism), each in one rack when `rack`.
    GangJobs {
        /// How many Jobs.
        jobs: usize,
        /// Pods per Job.
        size: i32,
        /// A `kwas.dev/rack` topology constraint per Job.
        rack: bool,
    },
    /// `jobsets` JobSets, each a root gang of `groups` gang Jobs of `size` pods (centralized PodGroups).
    JobSets {
        /// How many JobSets.
        jobsets: usize,
        /// Gang Jobs per JobSet.
        groups: i32,
        /// Pods per Job.
        size: i32,
    },
    /// `jobs` Basic Jobs of `size` pods (pod-by-pod scheduling).
    BasicJobs {
        /// How many Jobs.
        jobs: usize,
        /// Pods per Job.
        size: i32,
    },
}

impl Submission {
    /// Pods in total.
    pub fn pods(&self) -> usize {
        match *self {
            Submission::GangJobs { jobs, size, .. } | Submission::BasicJobs { jobs, size } => {
                jobs * size.max(0) as usize
            }
            Submission::JobSets { jobsets, groups, size } => jobsets * (groups.max(0) * size.max(0)) as usize,
        }
    }

    /// Objects the user submits (Jobs or JobSets).
    pub fn objects(&self) -> usize {
        match *self {
            Submission::GangJobs { jobs, .. } | Submission::BasicJobs { jobs, .. } => jobs,
            Submission::JobSets { jobsets, .. } => jobsets,
        }
    }
}

/// One benchmark scenario.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scenario {
    /// Named after the upstream scheduler_perf workload it mirrors.
    pub name: String,
    /// Racks (of one block).
    pub racks: u32,
    /// Nodes per rack.
    pub nodes_per_rack: u32,
    /// What is submitted.
    pub submission: Submission,
    /// Upstream's figure for the workload (`-` when upstream-compat records none).
    pub upstream: &'static str,
}

impl Scenario {
    /// Nodes in total.
    pub fn nodes(&self) -> u32 {
        self.racks * self.nodes_per_rack
    }
}

/// The scenarios at `nodes` nodes (50 racks, as upstream's topology-aware workloads; `nodes` is rounded
/// down to a multiple of 50) with upstream's sizes divided by `divisor` (1 for upstream's: 1000 gangs of 3,
/// 750 rack-bound gangs of 4, 500 JobSets of two gangs of 3, 3000 pods in Basic Jobs of 3). Names follow
/// scheduler_perf's `<workload>/<nodes>Nodes_<groups>..._<pods>Pods`.
pub fn scenarios(nodes: u32, divisor: usize) -> Vec<Scenario> {
    let per_rack = (nodes / 50).max(1);
    let n = per_rack * 50;
    let d = divisor.max(1);
    let (gangs, tas, cpgs, basic) = (1000 / d, 750 / d, 500 / d, 1000 / d);
    vec![
        Scenario {
            name: format!("GangScheduling/{n}Nodes_{gangs}Gangs_{}Pods", gangs * 3),
            racks: 50,
            nodes_per_rack: per_rack,
            submission: Submission::GangJobs {
                jobs: gangs,
                size: 3,
                rack: false,
            },
            upstream: "3.7 ms / gang attempt (~810 pods/s), 5000 nodes, 1000 gangs",
        },
        Scenario {
            name: format!("TopologyAwareScheduling/{n}Nodes_{tas}Gangs_{}Pods", tas * 4),
            racks: 50,
            nodes_per_rack: per_rack,
            submission: Submission::GangJobs {
                jobs: tas,
                size: 4,
                rack: true,
            },
            upstream: "562-630 pods/s, 5000 nodes, 750 gangs",
        },
        Scenario {
            name: format!(
                "CPGGangScheduling/{n}Nodes_{cpgs}CPGs_{}Groups_{}Pods",
                cpgs * 2,
                cpgs * 6
            ),
            racks: 50,
            nodes_per_rack: per_rack,
            submission: Submission::JobSets {
                jobsets: cpgs,
                groups: 2,
                size: 3,
            },
            upstream: "-",
        },
        Scenario {
            name: format!("SchedulingBasic/{n}Nodes_{}Pods", basic * 3),
            racks: 50,
            nodes_per_rack: per_rack,
            submission: Submission::BasicJobs { jobs: basic, size: 3 },
            upstream: "680-810 pods/s (floor), 5000 nodes, 5000 pods",
        },
    ]
}

/// What one run measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Measurement {
    /// The scenario's name.
    pub name: String,
    /// Nodes.
    pub nodes: u32,
    /// Jobs or JobSets submitted.
    pub objects: usize,
    /// Pods bound.
    pub pods: usize,
    /// From the first creation request to the last one answered.
    pub submitted: Duration,
    /// From the first pod's creation to the last bind.
    pub creation_to_bound: Duration,
    /// From the first Job creation request until the last pod was created (the controllers' pace).
    pub pods_created: Duration,
    /// From the first Job creation request to the last bind.
    pub submission_to_bound: Duration,
    /// Upstream's figure.
    pub upstream: &'static str,
    /// API requests from the first Job submission to the last bind, per client (`kwas-controllers`,
    /// `kwas-scheduler`), verb and resource.
    pub requests: Vec<(kwas_devcluster::RequestKey, u64)>,
}

impl Measurement {
    /// API requests per pod bound made by `client` (a `User-Agent`, such as
    /// [`kwas_stack::CONTROLLERS_USER_AGENT`]).
    pub fn requests_per_pod(&self, client: &str) -> f64 {
        let n: u64 = self
            .requests
            .iter()
            .filter(|(k, _)| k.client == client)
            .map(|(_, n)| n)
            .sum();
        n as f64 / (self.pods.max(1) as f64)
    }

    /// `client`'s requests per pod by verb and resource (`PATCH jobs/status 0.50`), largest first.
    pub fn request_breakdown(&self, client: &str) -> Vec<String> {
        let mut rows: Vec<(&kwas_devcluster::RequestKey, u64)> = self
            .requests
            .iter()
            .filter(|(k, _)| k.client == client)
            .map(|(k, n)| (k, *n))
            .collect();
        rows.sort_by_key(|r| std::cmp::Reverse(r.1));
        rows.iter()
            .map(|(k, n)| {
                let sub = if k.subresource.is_empty() {
                    String::new()
                } else {
                    format!("/{}", k.subresource)
                };
                format!(
                    "{} {}{sub} {:.2}",
                    k.verb,
                    k.resource,
                    *n as f64 / self.pods.max(1) as f64
                )
            })
            .collect()
    }

    /// Pods per second from the first pod's creation to the last bind.
    pub fn pods_per_s(&self) -> f64 {
        self.pods as f64 / self.creation_to_bound.as_secs_f64().max(f64::EPSILON)
    }

    /// Pods per second from the first Job submission to the last bind.
    pub fn pods_per_s_from_submission(&self) -> f64 {
        self.pods as f64 / self.submission_to_bound.as_secs_f64().max(f64::EPSILON)
    }
}

/// The results as a markdown table.
pub fn markdown(results: &[Measurement]) -> String {
    let mut out = String::from(
        "| workload | Jobs | pods | submitted in | all pods created after | first pod created -> last bind | pods/s (creation to bound) | Job submission -> last bind | pods/s (submission to bound) | API requests per pod: controllers / scheduler | upstream (scheduler_perf) |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n",
    );
    for r in results {
        out.push_str(&format!(
            "| {} | {} | {} | {:.2} s | {:.2} s | {:.2} s | {:.0} | {:.2} s | {:.0} | {:.2} / {:.2} | {} |\n",
            r.name,
            r.objects,
            r.pods,
            r.submitted.as_secs_f64(),
            r.pods_created.as_secs_f64(),
            r.creation_to_bound.as_secs_f64(),
            r.pods_per_s(),
            r.submission_to_bound.as_secs_f64(),
            r.pods_per_s_from_submission(),
            r.requests_per_pod(kwas_stack::CONTROLLERS_USER_AGENT),
            r.requests_per_pod(kwas_stack::SCHEDULER_USER_AGENT),
            r.upstream
        ));
    }
    out
}

/// The objects a scenario submits, as JSON-built API objects.
enum Object {
    Job(Box<k8s_openapi::api::batch::v1::Job>),
    JobSet(Box<JobSet>),
}

fn objects(s: &Scenario) -> Result<Vec<Object>> {
    let pod = |name: String| JobBuilder::new(name).cpu("100m").memory("100Mi");
    let mut out = Vec::new();
    match s.submission {
        Submission::GangJobs { jobs, size, rack } => {
            for i in 0..jobs {
                let mut job = pod(format!("gang-{i}")).parallelism(size).gang();
                if rack {
                    job = job.topology(RACK);
                }
                out.push(Object::Job(Box::new(job.build()?)));
            }
        }
        Submission::BasicJobs { jobs, size } => {
            for i in 0..jobs {
                out.push(Object::Job(Box::new(
                    pod(format!("basic-{i}")).parallelism(size).build()?,
                )));
            }
        }
        Submission::JobSets { jobsets, groups, size } => {
            for i in 0..jobsets {
                let js = JobSetBuilder::new(format!("cpg-{i}")).replicated(
                    groups,
                    pod("workers".into()).parallelism(size).gang(),
                    Intent::Template,
                );
                out.push(Object::JobSet(Box::new(js.build()?)));
            }
        }
    }
    Ok(out)
}

/// The stack configuration of a benchmark run: the product's defaults (dev mode), the kubelet off.
pub fn bench_config(s: &Scenario) -> kwas_stack::StackConfig {
    let mut config = kwas_stack::StackConfig::default();
    config.cluster.topology = Topology::grid(
        1,
        s.racks,
        s.nodes_per_rack,
        Capacity {
            cpu: "4".into(),
            memory: "32Gi".into(),
            pods: "110".into(),
            gpus: 0,
        },
    );
    config.cluster.kubelet.enabled = false;
    config
}

/// When pods appeared: the first one, and the `total`-th.
#[derive(Debug, Default, Clone, Copy)]
struct Creations {
    first: Option<Instant>,
    last: Option<Instant>,
    seen: usize,
}

/// Watches pods being created.
fn creations_watch(client: &Client, total: usize) -> (Arc<Mutex<Creations>>, tokio::task::JoinHandle<()>) {
    let state: Arc<Mutex<Creations>> = Arc::new(Mutex::new(Creations::default()));
    let shared = state.clone();
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    let task = tokio::spawn(async move {
        let mut uids = std::collections::HashSet::new();
        let mut events = std::pin::pin!(watcher(pods, watcher::Config::default()));
        while let Some(event) = events.next().await {
            if let Ok(watcher::Event::Apply(p) | watcher::Event::InitApply(p)) = event
                && uids.insert(p.uid().unwrap_or_default())
            {
                let now = Instant::now();
                let mut c = shared.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                c.first.get_or_insert(now);
                c.seen = uids.len();
                if c.seen == total {
                    c.last = Some(now);
                    return;
                }
            }
        }
    });
    (state, task)
}

/// Run one scenario on a fresh stack.
pub async fn run(s: &Scenario) -> Result<Measurement> {
    let e2e = E2e::start_with(bench_config(s)).await?;
    let measured = measure(&e2e, s).await;
    e2e.shutdown().await;
    measured
}

async fn measure(e2e: &E2e, s: &Scenario) -> Result<Measurement> {
    let client = e2e.client();
    let total = s.submission.pods();
    let scheduler = e2e
        .stack()
        .scheduler()
        .ok_or_else(|| Error::Unexpected("the scheduler is not running".into()))?
        .clone();
    let (creations, watch_task) = creations_watch(&client, total);
    // Let the watch list (nothing) before the clock starts.
    tokio::time::sleep(Duration::from_millis(200)).await;

    let objects = objects(s)?;
    let cluster = e2e.stack().cluster();
    let before = cluster.request_counts();
    let start = Instant::now();
    let errors = futures::stream::iter(objects)
        .map(|o| {
            let client = client.clone();
            async move {
                let pp = PostParams::default();
                match o {
                    Object::Job(j) => Api::namespaced(client, NS).create(&pp, &*j).await.map(|_| ()),
                    Object::JobSet(j) => Api::namespaced(client, NS).create(&pp, &*j).await.map(|_| ()),
                }
            }
        })
        .buffer_unordered(CLIENTS)
        .filter_map(|r| async move { r.err() })
        .collect::<Vec<kube::Error>>()
        .await;
    if let Some(e) = errors.into_iter().next() {
        return Err(Error::Kube(e));
    }
    let submitted = start.elapsed();

    let deadline = start + DEADLINE;
    while (scheduler.metrics().pods_scheduled() as usize) < total {
        if Instant::now() > deadline {
            return Err(Error::Timeout {
                what: format!("{}: every pod bound", s.name),
                after: DEADLINE,
                last: Some(format!("{} of {total} bound", scheduler.metrics().pods_scheduled())),
            });
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let bound_at = Instant::now();
    let requests = requests_since(&before, cluster.request_counts());
    // For profiling: the scheduler's attempt counters (`KWAS_PERF_METRICS=1`), to tell failed attempts
    // and backoffs from CPU spent.
    if std::env::var_os("KWAS_PERF_METRICS").is_some() {
        for line in scheduler.metrics().encode().lines() {
            if !line.starts_with('#') && line.contains("attempts") && !line.contains("_bucket") {
                eprintln!("  {line}");
            }
        }
    }
    // The watch may lag the bindings: give it a moment to see the last creations.
    let mut c = Creations::default();
    for _ in 0..200 {
        c = *creations.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if c.last.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    watch_task.abort();
    let first = c
        .first
        .ok_or_else(|| Error::Unexpected("no pod was seen created".into()))?;
    let last = c
        .last
        .ok_or_else(|| Error::Unexpected(format!("only {} of {total} pods seen created", c.seen)))?;

    verify(&client, s, total).await?;
    Ok(Measurement {
        name: s.name.clone(),
        nodes: s.nodes(),
        objects: s.submission.objects(),
        pods: total,
        submitted,
        creation_to_bound: bound_at.saturating_duration_since(first),
        pods_created: last.saturating_duration_since(start),
        submission_to_bound: bound_at.saturating_duration_since(start),
        upstream: s.upstream,
        requests,
    })
}

/// The counts of `after` minus those of `before` (requests served in between), zero counts left out.
fn requests_since(
    before: &[(kwas_devcluster::RequestKey, u64)],
    after: Vec<(kwas_devcluster::RequestKey, u64)>,
) -> Vec<(kwas_devcluster::RequestKey, u64)> {
    after
        .into_iter()
        .filter_map(|(k, n)| {
            let was = before.iter().find(|(b, _)| *b == k).map_or(0, |(_, n)| *n);
            let d = n.saturating_sub(was);
            (d > 0).then_some((k, d))
        })
        .collect()
}

/// Every pod bound, exactly the expected number, and rack-bound Jobs in one rack each.
async fn verify(client: &Client, s: &Scenario, total: usize) -> Result<()> {
    let pods = Api::<Pod>::namespaced(client.clone(), NS)
        .list(&ListParams::default())
        .await?
        .items;
    let bound = pods.iter().filter(|p| node_of(p).is_some()).count();
    if pods.len() != total || bound != total {
        return Err(Error::Unexpected(format!(
            "{}: {} pods, {bound} bound, {total} expected",
            s.name,
            pods.len()
        )));
    }
    if let Submission::GangJobs { rack: true, .. } = s.submission {
        let labels = node_labels(client).await?;
        let mut per_job: BTreeMap<String, Vec<Pod>> = BTreeMap::new();
        for p in pods {
            per_job
                .entry(p.labels().get(JOB_NAME).cloned().unwrap_or_default())
                .or_default()
                .push(p);
        }
        for (job, pods) in per_job {
            let racks: BTreeSet<String> = domains(&pods, &labels, RACK)?;
            if racks.len() != 1 {
                return Err(Error::Unexpected(format!("{job} spans racks {racks:?}")));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenarios_mirror_upstreams_sizes() {
        let s = scenarios(1000, 1);
        assert_eq!(s[0].name, "GangScheduling/1000Nodes_1000Gangs_3000Pods");
        assert_eq!((s[0].nodes(), s[0].submission.pods()), (1000, 3000));
        assert_eq!(s[1].name, "TopologyAwareScheduling/1000Nodes_750Gangs_3000Pods");
        assert_eq!((s[1].racks, s[1].submission.pods()), (50, 3000));
        assert_eq!(s[2].name, "CPGGangScheduling/1000Nodes_500CPGs_1000Groups_3000Pods");
        assert_eq!((s[2].submission.objects(), s[2].submission.pods()), (500, 3000));
        assert_eq!(scenarios(5000, 1)[0].nodes(), 5000);
        let small = scenarios(100, 10);
        assert_eq!(small[1].name, "TopologyAwareScheduling/100Nodes_75Gangs_300Pods");
        assert_eq!((small[1].racks, small[1].nodes()), (50, 100));
    }

    #[test]
    fn the_table_has_one_row_per_result() {
        let m = Measurement {
            name: "GangScheduling/1000Nodes_1000Gangs_3000Pods".into(),
            nodes: 1000,
            objects: 1000,
            pods: 3000,
            submitted: Duration::from_secs(2),
            creation_to_bound: Duration::from_secs(3),
            pods_created: Duration::from_millis(2500),
            submission_to_bound: Duration::from_secs(4),
            upstream: "-",
            requests: vec![(
                kwas_devcluster::RequestKey {
                    client: kwas_stack::CONTROLLERS_USER_AGENT.into(),
                    verb: "POST",
                    group: String::new(),
                    resource: "pods".into(),
                    subresource: String::new(),
                },
                3000,
            )],
        };
        assert_eq!(
            m.request_breakdown(kwas_stack::CONTROLLERS_USER_AGENT),
            vec!["POST pods 1.00"]
        );
        let t = markdown(&[m]);
        assert!(t.contains("| GangScheduling/1000Nodes_1000Gangs_3000Pods | 1000 | 3000 | 2.00 s | 2.50 s | 3.00 s | 1000 | 4.00 s | 750 | 1.00 / 0.00 | - |"), "{t}");
        assert_eq!(t.lines().count(), 3);
    }
}
