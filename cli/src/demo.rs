//! `kwas demo`: devcluster with a default topology, the controllers and the scheduler; the bundled examples
//! applied; live progress; a placement tree per workload at the end.

use std::collections::BTreeMap;
use std::io::Write;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::resource::v1::{ResourceClaim, ResourceClaimTemplate};
use k8s_openapi::api::scheduling::v1alpha3::{CompositePodGroup, PodGroup};
use kube::api::{Api, ListParams, PostParams};
use kube::{Client, ResourceExt};
use kwas_api::jobset::JobSet;
use kwas_devcluster::{Capacity, DevClusterConfig, KubeletConfig, Topology};
use serde_json::Value;

use crate::placement::ClusterView;
use kwas_stack::{Stack, StackConfig};

/// The bundled examples, applied in this order.
pub const EXAMPLES: [(&str, &str); 6] = [
    (
        "examples/jobs/gang-job.yaml",
        include_str!("../../examples/jobs/gang-job.yaml"),
    ),
    (
        "examples/jobs/basic-job.yaml",
        include_str!("../../examples/jobs/basic-job.yaml"),
    ),
    (
        "examples/jobsets/option-a.yaml",
        include_str!("../../examples/jobsets/option-a.yaml"),
    ),
    (
        "examples/jobsets/option-b.yaml",
        include_str!("../../examples/jobsets/option-b.yaml"),
    ),
    (
        "examples/dra/gang-job.yaml",
        include_str!("../../examples/dra/gang-job.yaml"),
    ),
    (
        "examples/dra/jobset.yaml",
        include_str!("../../examples/dra/jobset.yaml"),
    ),
];

const NAMESPACE: &str = "default";

/// Demo settings.
#[derive(Debug, Clone)]
pub struct DemoOptions {
    /// The simulated cluster.
    pub topology: Topology,
    /// Override the examples' simulated run time (`kwas.dev/sim-run-duration`).
    pub pod_duration: Option<String>,
    /// Give up after this long.
    pub timeout: Duration,
}

impl Default for DemoOptions {
    fn default() -> Self {
        Self {
            topology: demo_topology(),
            pod_duration: None,
            timeout: Duration::from_secs(300),
        }
    }
}

/// 2 blocks x 2 racks x 4 nodes of 8 CPUs, 32 GiB and 4 GPUs.
pub fn demo_topology() -> Topology {
    Topology::grid(
        2,
        2,
        4,
        Capacity {
            cpu: "8".into(),
            memory: "32Gi".into(),
            gpus: 4,
            ..Capacity::default()
        },
    )
}

/// One workload the demo watches.
#[derive(Debug, Clone)]
enum Workload {
    Job(String),
    JobSet(String),
}

impl Workload {
    fn name(&self) -> &str {
        match self {
            Self::Job(n) | Self::JobSet(n) => n,
        }
    }
}

fn set_duration(template: &mut Value, duration: &str) {
    if let Some(meta) = template.get_mut("metadata").and_then(Value::as_object_mut)
        && let Some(a) = meta.get_mut("annotations").and_then(Value::as_object_mut)
        && a.contains_key(kwas_api::names::annotations::SIM_RUN_DURATION)
    {
        a.insert(
            kwas_api::names::annotations::SIM_RUN_DURATION.into(),
            Value::String(duration.into()),
        );
    }
}

async fn apply_examples(client: &Client, pod_duration: Option<&str>) -> Result<Vec<Workload>> {
    let mut applied = Vec::new();
    for (file, text) in EXAMPLES {
        for mut doc in crate::compile::documents(text)? {
            let kind = doc.get("kind").and_then(Value::as_str).unwrap_or_default().to_string();
            match kind.as_str() {
                "Job" => {
                    if let Some(d) = pod_duration {
                        set_duration(&mut doc["spec"]["template"], d);
                    }
                    let job: Job = serde_json::from_value(doc).with_context(|| format!("{file}: decoding the Job"))?;
                    let created = Api::<Job>::namespaced(client.clone(), NAMESPACE)
                        .create(&PostParams::default(), &job)
                        .await?;
                    applied.push(Workload::Job(created.name_any()));
                }
                "JobSet" => {
                    if let (Some(d), Some(jobs)) = (pod_duration, doc["spec"]["replicatedJobs"].as_array_mut()) {
                        for rj in jobs {
                            set_duration(&mut rj["template"]["spec"]["template"], d);
                        }
                    }
                    let js: JobSet =
                        serde_json::from_value(doc).with_context(|| format!("{file}: decoding the JobSet"))?;
                    let created = Api::<JobSet>::namespaced(client.clone(), NAMESPACE)
                        .create(&PostParams::default(), &js)
                        .await?;
                    applied.push(Workload::JobSet(created.name_any()));
                }
                "ResourceClaimTemplate" => {
                    let t: ResourceClaimTemplate = serde_json::from_value(doc)
                        .with_context(|| format!("{file}: decoding the ResourceClaimTemplate"))?;
                    Api::<ResourceClaimTemplate>::namespaced(client.clone(), NAMESPACE)
                        .create(&PostParams::default(), &t)
                        .await?;
                }
                other => bail!("{file}: the demo applies Jobs, JobSets and ResourceClaimTemplates, not {other}"),
            }
        }
    }
    Ok(applied)
}

async fn view(client: &Client) -> Result<ClusterView> {
    let lp = ListParams::default();
    let mut v = ClusterView {
        pods: Api::<Pod>::namespaced(client.clone(), NAMESPACE).list(&lp).await?.items,
        groups: Api::<PodGroup>::namespaced(client.clone(), NAMESPACE)
            .list(&lp)
            .await?
            .items,
        composites: Api::<CompositePodGroup>::namespaced(client.clone(), NAMESPACE)
            .list(&lp)
            .await?
            .items,
        nodes: Api::<Node>::all(client.clone()).list(&lp).await?.items,
        devices: BTreeMap::new(),
    };
    let claims = Api::<ResourceClaim>::namespaced(client.clone(), NAMESPACE)
        .list(&lp)
        .await?
        .items;
    v.record_devices(&claims);
    Ok(v)
}

fn job_done(job: &Job) -> Option<&'static str> {
    let conditions = job.status.as_ref()?.conditions.as_ref()?;
    conditions
        .iter()
        .filter(|c| c.status == "True")
        .find_map(|c| match c.type_.as_str() {
            "Complete" => Some("Complete"),
            "Failed" => Some("Failed"),
            _ => None,
        })
}

fn jobset_done(js: &JobSet) -> Option<&'static str> {
    let conditions = js.status.as_ref()?.conditions.as_ref()?;
    conditions
        .iter()
        .filter(|c| c.status == "True")
        .find_map(|c| match c.type_.as_str() {
            "Completed" => Some("Completed"),
            "Failed" => Some("Failed"),
            _ => None,
        })
}

fn pods_of<'a>(view: &'a ClusterView, w: &Workload) -> Vec<&'a Pod> {
    let (key, name) = match w {
        Workload::Job(n) => (kwas_api::names::labels::JOB_NAME, n),
        Workload::JobSet(n) => (kwas_api::names::labels::JOBSET_NAME, n),
    };
    view.pods.iter().filter(|p| p.labels().get(key) == Some(name)).collect()
}

fn progress(view: &ClusterView, w: &Workload, state: Option<&str>) -> String {
    let pods = pods_of(view, w);
    let phase = |p: &&Pod| p.status.as_ref().and_then(|s| s.phase.clone()).unwrap_or_default();
    let bound = pods
        .iter()
        .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some())
        .count();
    let done = pods.iter().filter(|p| phase(p) == "Succeeded").count();
    match state {
        Some(s) => format!("{} {s}", w.name()),
        None if pods.is_empty() => format!("{} waiting", w.name()),
        None => format!("{} {bound}/{} bound, {done} done", w.name(), pods.len()),
    }
}

/// Run the demo, writing progress and the placement trees to `out`.
pub async fn run(options: DemoOptions, out: &mut (impl Write + Send)) -> Result<()> {
    let config = StackConfig {
        cluster: DevClusterConfig {
            topology: options.topology.clone(),
            kubelet: KubeletConfig {
                start_delay: Duration::from_millis(200),
                ..KubeletConfig::default()
            },
            ..DevClusterConfig::default()
        },
        ..StackConfig::default()
    };
    let stack = Stack::start(config).await?;
    let result = demo(&stack, &options, out).await;
    stack.shutdown().await;
    result
}

async fn demo(stack: &Stack, options: &DemoOptions, out: &mut (impl Write + Send)) -> Result<()> {
    let client = stack.client();
    stack.ready().await?;
    let nodes = stack.cluster().node_names().len();
    writeln!(
        out,
        "kwas demo: devcluster at {} with {nodes} simulated nodes; Job and JobSet controllers and the scheduler running",
        stack.cluster().base_url()
    )?;
    let workloads = apply_examples(&client, options.pod_duration.as_deref()).await?;
    for (file, _) in EXAMPLES {
        writeln!(out, "  applied {file}")?;
    }
    let start = Instant::now();
    let mut last = String::new();
    let mut states: BTreeMap<String, &'static str> = BTreeMap::new();
    // Devices are released as pods finish: what each consumer held is remembered for the tree.
    let mut devices = BTreeMap::new();
    loop {
        let v = view(&client).await?;
        devices.extend(v.devices.clone());
        for w in &workloads {
            let state = match w {
                Workload::Job(n) => Api::<Job>::namespaced(client.clone(), NAMESPACE)
                    .get_opt(n)
                    .await?
                    .as_ref()
                    .and_then(job_done),
                Workload::JobSet(n) => Api::<JobSet>::namespaced(client.clone(), NAMESPACE)
                    .get_opt(n)
                    .await?
                    .as_ref()
                    .and_then(jobset_done),
            };
            if let Some(s) = state {
                states.insert(w.name().to_string(), s);
            }
        }
        let line = workloads
            .iter()
            .map(|w| progress(&v, w, states.get(w.name()).copied()))
            .collect::<Vec<_>>()
            .join(" · ");
        if line != last {
            writeln!(out, "[{:>4.0}s] {line}", start.elapsed().as_secs_f64())?;
            out.flush()?;
            last = line;
        }
        if states.len() == workloads.len() {
            break;
        }
        if start.elapsed() > options.timeout {
            bail!("the examples did not finish within {:?}", options.timeout);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    writeln!(
        out,
        "\nPlacements (group -> topology domain -> nodes, with their DRA devices):\n"
    )?;
    let mut v = view(&client).await?;
    devices.extend(std::mem::take(&mut v.devices));
    v.devices = devices;
    for w in &workloads {
        let state = states.get(w.name()).copied().unwrap_or("");
        match w {
            Workload::Job(name) => {
                let group = pods_of(&v, w)
                    .iter()
                    .find_map(|p| p.spec.as_ref()?.scheduling_group.as_ref()?.pod_group_name.clone());
                let title = format!("Job {NAMESPACE}/{name} ({state})");
                match group {
                    Some(g) => write!(out, "{}", v.pod_group_tree(&title, &g))?,
                    None => writeln!(out, "{title}\n└── (no PodGroup)")?,
                }
            }
            Workload::JobSet(name) => {
                let js = Api::<JobSet>::namespaced(client.clone(), NAMESPACE).get(name).await?;
                let root = js
                    .status
                    .as_ref()
                    .and_then(|s| s.composite_pod_group_name.clone())
                    .unwrap_or_default();
                write!(
                    out,
                    "{}",
                    v.composite_tree(&format!("JobSet {NAMESPACE}/{name} ({state})"), &root)
                )?;
            }
        }
        writeln!(out)?;
    }
    if let Some(h) = stack.scheduler() {
        writeln!(
            out,
            "scheduler: {} pods bound in {:.1}s",
            h.metrics().pods_scheduled(),
            start.elapsed().as_secs_f64()
        )?;
    }
    let failed: Vec<&String> = states.iter().filter(|(_, s)| **s == "Failed").map(|(n, _)| n).collect();
    if !failed.is_empty() {
        bail!("workloads failed: {failed:?}");
    }
    Ok(())
}
