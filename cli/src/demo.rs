//! `kwas demo`: devcluster with a default topology, the controllers and the scheduler; the bundled examples
//! applied; live progress and the `kubectl kwas tree` of every workload while they run (redrawn on a
//! terminal, a snapshot now and then when piped); a placement tree per workload; then a preemption scene
//! (examples/preemption/: a priority-1000 gang evicts a `disruptionMode: all` gang of priority 10, which
//! waits and runs again whole) told by `kubectl kwas who-preempted`.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::resource::v1::{ResourceClaim, ResourceClaimTemplate};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::api::scheduling::v1alpha3::{CompositePodGroup, PodGroup};
use kube::api::{Api, ListParams, PostParams};
use kube::{Client, ResourceExt};
use kwas_api_types::jobset::JobSet;
use kwas_devcluster::{Capacity, DevClusterConfig, KubeletConfig, Topology};
use serde_json::Value;

use crate::placement::ClusterView;
use crate::plugin::model::{Kind, ObjectRef};
use crate::plugin::render::{Style, TreeOptions};
use crate::plugin::{self, Events};
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

/// The preemption scene: the victim (a long-running gang, disrupted `all`, priority 10), then the
/// preemptor (a gang of priority 1000 that needs one rack).
pub const PREEMPTION: [(&str, &str); 2] = [
    (
        "examples/preemption/background.yaml",
        include_str!("../../examples/preemption/background.yaml"),
    ),
    (
        "examples/preemption/urgent.yaml",
        include_str!("../../examples/preemption/urgent.yaml"),
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
    /// Give up after this long (each of the two parts).
    pub timeout: Duration,
    /// Redraw the trees in place (a terminal); otherwise print a snapshot when they changed, at most
    /// every `snapshot_every`.
    pub live: bool,
    /// ANSI colours.
    pub color: bool,
    /// The least time between two snapshots of the trees when not live.
    pub snapshot_every: Duration,
}

impl Default for DemoOptions {
    fn default() -> Self {
        Self {
            topology: demo_topology(),
            pod_duration: None,
            timeout: Duration::from_secs(300),
            live: false,
            color: false,
            snapshot_every: Duration::from_secs(5),
        }
    }
}

impl DemoOptions {
    /// The defaults, live and coloured when stdout is a terminal (colours unless `NO_COLOR` is set).
    pub fn for_stdout() -> Self {
        Self {
            live: std::io::stdout().is_terminal(),
            color: crate::plugin::style_for_stdout().color,
            ..Self::default()
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
#[derive(Debug, Clone, PartialEq, Eq)]
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
        && a.contains_key(kwas_api_types::names::annotations::SIM_RUN_DURATION)
    {
        a.insert(
            kwas_api_types::names::annotations::SIM_RUN_DURATION.into(),
            Value::String(duration.into()),
        );
    }
}

/// Creates the objects of one manifest file; returns the Jobs and JobSets created.
async fn apply_file(client: &Client, file: &str, text: &str, pod_duration: Option<&str>) -> Result<Vec<Workload>> {
    let mut applied = Vec::new();
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
                let js: JobSet = serde_json::from_value(doc).with_context(|| format!("{file}: decoding the JobSet"))?;
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
            "PriorityClass" => {
                let pc: PriorityClass =
                    serde_json::from_value(doc).with_context(|| format!("{file}: decoding the PriorityClass"))?;
                match Api::<PriorityClass>::all(client.clone())
                    .create(&PostParams::default(), &pc)
                    .await
                {
                    Ok(_) => {}
                    Err(kube::Error::Api(e)) if e.code == 409 => {}
                    Err(e) => return Err(e.into()),
                }
            }
            other => {
                bail!("{file}: the demo applies Jobs, JobSets, ResourceClaimTemplates and PriorityClasses, not {other}")
            }
        }
    }
    Ok(applied)
}

async fn apply_examples(client: &Client, pod_duration: Option<&str>) -> Result<Vec<Workload>> {
    let mut applied = Vec::new();
    for (file, text) in EXAMPLES {
        applied.extend(apply_file(client, file, text, pod_duration).await?);
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
    let conditions = &js.status.as_ref()?.conditions;
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
        Workload::Job(n) => (kwas_api_types::names::labels::JOB_NAME, n),
        Workload::JobSet(n) => (kwas_api_types::names::labels::JOBSET_NAME, n),
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

/// What is shown while workloads run: the progress line and the `kubectl kwas tree` of each workload,
/// redrawn in place on a terminal (the output above stays), else the progress lines and a snapshot of the
/// trees when they changed, at most every `snapshot_every`.
struct Display {
    live: bool,
    style: Style,
    every: Duration,
    start: Instant,
    options: TreeOptions,
    last_line: String,
    last_trees: String,
    last_snapshot: Option<Instant>,
    /// Lines of the frame drawn last (live).
    drawn: usize,
}

impl Display {
    fn new(options: &DemoOptions, tree_options: TreeOptions) -> Self {
        Self {
            live: options.live,
            style: Style { color: options.color },
            every: options.snapshot_every,
            start: Instant::now(),
            options: tree_options,
            last_line: String::new(),
            last_trees: String::new(),
            last_snapshot: None,
            drawn: 0,
        }
    }

    /// The trees of `workloads` as the cluster shows them now.
    async fn trees(&self, client: &Client, workloads: &[Workload]) -> Result<String> {
        let snap = plugin::fetch(client, NAMESPACE, Events::None).await?;
        let mut text = String::new();
        for w in workloads {
            let target = match w {
                Workload::Job(n) => ObjectRef {
                    kind: Kind::Job,
                    name: n.clone(),
                },
                Workload::JobSet(n) => ObjectRef {
                    kind: Kind::JobSet,
                    name: n.clone(),
                },
            };
            let root = plugin::tree::tree(&snap, &target);
            text.push_str(&plugin::render::tree(self.style, &root, NAMESPACE, self.options));
        }
        Ok(text)
    }

    fn show(&mut self, out: &mut (impl Write + Send), line: &str, trees: &str) -> Result<()> {
        let elapsed = self.start.elapsed().as_secs_f64();
        if self.live {
            if line != self.last_line || trees != self.last_trees {
                let frame = format!("[{elapsed:>4.0}s] {line}\n\n{trees}");
                if self.drawn > 0 {
                    // Back to the frame's first line, cleared to the end of the screen.
                    write!(out, "\x1b[{}F\x1b[J", self.drawn)?;
                }
                write!(out, "{frame}")?;
                self.drawn = frame.lines().count();
            }
        } else {
            if line != self.last_line {
                writeln!(out, "[{elapsed:>4.0}s] {line}")?;
            }
            if trees != self.last_trees && self.last_snapshot.is_none_or(|t| t.elapsed() >= self.every) {
                writeln!(out, "\n{trees}")?;
                self.last_snapshot = Some(Instant::now());
            } else if trees != self.last_trees {
                // Shown with the next snapshot.
                out.flush()?;
                self.last_line = line.to_string();
                return Ok(());
            }
        }
        out.flush()?;
        self.last_line = line.to_string();
        self.last_trees = trees.to_string();
        Ok(())
    }

    /// Ends the live frame: what follows is written below it.
    fn finish(&mut self, out: &mut (impl Write + Send)) -> Result<()> {
        if self.live && self.drawn > 0 {
            writeln!(out)?;
        }
        self.drawn = 0;
        Ok(())
    }
}

async fn state_of(client: &Client, w: &Workload) -> Result<Option<&'static str>> {
    Ok(match w {
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
    })
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
    let mut display = Display::new(
        options,
        TreeOptions {
            max_pods: Some(0),
            conditions: false,
            ..TreeOptions::default()
        },
    );
    let mut states: BTreeMap<String, &'static str> = BTreeMap::new();
    // Devices are released as pods finish: what each consumer held is remembered for the tree.
    let mut devices = BTreeMap::new();
    loop {
        let v = view(&client).await?;
        devices.extend(v.devices.clone());
        for w in &workloads {
            if let Some(s) = state_of(&client, w).await? {
                states.insert(w.name().to_string(), s);
            }
        }
        let line = workloads
            .iter()
            .map(|w| progress(&v, w, states.get(w.name()).copied()))
            .collect::<Vec<_>>()
            .join(" · ");
        let trees = display.trees(&client, &workloads).await?;
        display.show(out, &line, &trees)?;
        if states.len() == workloads.len() {
            break;
        }
        if start.elapsed() > options.timeout {
            bail!("the examples did not finish within {:?}", options.timeout);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    display.finish(out)?;
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
    preemption_scene(&client, options, out).await
}

/// Pods of `w` bound to a node, running and not being deleted.
fn running(view: &ClusterView, w: &Workload) -> usize {
    pods_of(view, w)
        .iter()
        .filter(|p| {
            p.metadata.deletion_timestamp.is_none()
                && p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some()
                && p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
        })
        .count()
}

/// The victim's size (background.yaml's parallelism).
const BACKGROUND_PODS: usize = 16;

/// A priority-1000 gang evicts a `disruptionMode: all` gang of priority 10 that fills every node; the
/// victim's Job replaces its pods, which wait as a gang until the preemptor is done, then run again
/// whole. `kubectl kwas who-preempted` tells it.
async fn preemption_scene(client: &Client, options: &DemoOptions, out: &mut (impl Write + Send)) -> Result<()> {
    let (background_file, background_text) = PREEMPTION[0];
    let (urgent_file, urgent_text) = PREEMPTION[1];
    writeln!(
        out,
        "\nPreemption: {background_file} (priority 10, disruptionMode all) puts a pod of 6 CPUs on every node; \
         {urgent_file} (priority 1000) needs 4 pods of 4 CPUs in one rack and finds no room."
    )?;
    // The victim keeps its own run time: it must still run when the preemptor comes.
    let background = apply_file(client, background_file, background_text, None).await?;
    writeln!(out, "  applied {background_file}")?;
    // Two workloads: every change of their trees is shown.
    let mut display = Display::new(
        &DemoOptions {
            snapshot_every: Duration::ZERO,
            ..options.clone()
        },
        TreeOptions {
            max_pods: Some(0),
            ..TreeOptions::default()
        },
    );
    let start = Instant::now();
    let mut workloads = background.clone();
    let mut urgent_applied = false;
    loop {
        let v = view(client).await?;
        let mut states: BTreeMap<String, &'static str> = BTreeMap::new();
        for w in &workloads {
            if let Some(s) = state_of(client, w).await? {
                states.insert(w.name().to_string(), s);
            }
        }
        let line = workloads
            .iter()
            .map(|w| progress(&v, w, states.get(w.name()).copied()))
            .collect::<Vec<_>>()
            .join(" · ");
        let trees = display.trees(client, &workloads).await?;
        display.show(out, &line, &trees)?;
        let victims_running = background.iter().map(|w| running(&v, w)).sum::<usize>();
        if !urgent_applied && victims_running == BACKGROUND_PODS {
            display.finish(out)?;
            let urgent = apply_file(client, urgent_file, urgent_text, options.pod_duration.as_deref()).await?;
            writeln!(out, "  applied {urgent_file}")?;
            workloads.extend(urgent);
            urgent_applied = true;
            continue;
        }
        let urgent_done = urgent_applied
            && workloads
                .iter()
                .skip(background.len())
                .all(|w| states.get(w.name()).is_some_and(|s| *s == "Complete"));
        if urgent_done && victims_running == BACKGROUND_PODS {
            break;
        }
        if start.elapsed() > options.timeout {
            bail!("the preemption scene did not finish within {:?}", options.timeout);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    display.finish(out)?;
    let style = Style { color: options.color };
    let snap = plugin::fetch(client, NAMESPACE, Events::Preempted).await?;
    let told = plugin::render_preempted(
        &snap,
        "job/background",
        plugin::Output::Text,
        style,
        Some(k8s_openapi::jiff::Timestamp::now()),
    )?;
    writeln!(out, "\n$ kubectl kwas who-preempted job/background\n{told}")?;
    writeln!(
        out,
        "The preemptor is done and background's replacement pods run again, whole; background runs on (10m)."
    )?;
    Ok(())
}
