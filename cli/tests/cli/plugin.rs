//! `kubectl kwas` as an operator runs it: the `kwas` binary as `kubectl-kwas` on `PATH` (a symlink, as
//! `kubectl plugin list` finds it), driven through the real kubectl 1.37 against `kwas dev`: the tree of a
//! JobSet and of a gang Job (text and `-o json`, and `--watch` printing a tree per change when piped),
//! `why` for a GPU shortage and an anti-affinity conflict, `who-preempted` after a high-priority gang
//! evicted an `all` gang (examples/preemption/), and the tree of CompositePodGroups whose parents loop.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::BufRead;

use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::common::{Dev, eventually, jsonpath, ok, repo, start};
use serde_json::Value;

/// A folder holding `kubectl-kwas`, a symlink to the built `kwas`.
struct PluginDir {
    dir: tempfile::TempDir,
}

impl PluginDir {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_kwas"), dir.path().join("kubectl-kwas")).unwrap();
        Self { dir }
    }

    /// `PATH` with the plugin folder first.
    fn path(&self) -> String {
        format!(
            "{}:{}",
            self.dir.path().display(),
            std::env::var("PATH").unwrap_or_default()
        )
    }

    fn kubectl(&self, dev: &Dev, args: &[&str]) -> Command {
        let mut c = Command::new(kwas_test_tools::kubectl().expect("kubectl 1.37"));
        c.args(args)
            .env("KUBECONFIG", &dev.kubeconfig)
            .env("HOME", dev.kubeconfig.parent().unwrap())
            .env("PATH", self.path())
            .env_remove("NO_COLOR")
            .current_dir(repo())
            .stdin(Stdio::null());
        c
    }

    /// `kubectl <args>` with the plugin on `PATH`: (success, stdout, stderr).
    fn run(&self, dev: &Dev, args: &[&str]) -> (bool, String, String) {
        let out = self.kubectl(dev, args).output().unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// `kubectl kwas <args>` that must succeed; its stdout.
    fn kwas(&self, dev: &Dev, args: &[&str]) -> String {
        let mut all = vec!["kwas"];
        all.extend_from_slice(args);
        let (success, stdout, stderr) = self.run(dev, &all);
        assert!(success, "kubectl kwas {args:?}: {stderr}\n{stdout}");
        assert!(!stdout.contains('\x1b'), "no colours when piped: {stdout}");
        stdout
    }

    /// `kubectl kwas <args> -o json`.
    fn json(&self, dev: &Dev, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.extend_from_slice(&["-o", "json"]);
        let text = self.kwas(dev, &all);
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
    }
}

fn names(dev: &Dev, kind: &str, prefix: &str) -> Vec<String> {
    jsonpath(dev, &[kind], "{.items[*].metadata.name}")
        .split_whitespace()
        .filter(|n| n.starts_with(prefix))
        .map(str::to_string)
        .collect()
}

/// Every node of a `-o json` tree, depth first.
fn walk(v: &Value) -> Vec<&Value> {
    let mut out = vec![v];
    for c in v["children"].as_array().into_iter().flatten() {
        out.extend(walk(c));
    }
    out
}

fn of_kind<'a>(root: &'a Value, kind: &str) -> Vec<&'a Value> {
    walk(root).into_iter().filter(|n| n["kind"] == kind).collect()
}

#[test]
fn kubectl_kwas_trees_a_jobset_and_a_gang_job() {
    let dev = start(&[]);
    let plugin = PluginDir::new();
    let (_, listed, stderr) = plugin.run(&dev, &["plugin", "list"]);
    assert!(
        listed.contains(&format!("{}", plugin.dir.path().join("kubectl-kwas").display())),
        "kubectl plugin list: {listed}{stderr}"
    );

    // Watching a Job before it exists: an error line first, then a tree per change, one JSON document
    // per line.
    let mut watch = plugin
        .kubectl(
            &dev,
            &[
                "kwas",
                "tree",
                "job/train",
                "--watch",
                "--interval",
                "200ms",
                "-o",
                "json",
            ],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (tx, rx) = mpsc::channel::<String>();
    let stdout = watch.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let first: Value = serde_json::from_str(&rx.recv_timeout(Duration::from_secs(30)).unwrap()).unwrap();
    assert_eq!(first["kind"], "Error", "{first}");
    assert_eq!(first["message"], "job \"train\" not found in namespace default");

    // The examples with pods that run until the test ends.
    for file in ["examples/jobs/gang-job.yaml", "examples/jobsets/option-a.yaml"] {
        let text = std::fs::read_to_string(repo().join(file)).unwrap();
        crate::common::apply(
            &dev,
            &text
                .replace("sim-run-duration: 20s", "sim-run-duration: 10m")
                .replace("sim-run-duration: 30s", "sim-run-duration: 10m"),
        );
    }
    eventually("every pod of both to run", || {
        let phases = jsonpath(&dev, &["pods"], "{.items[*].status.phase}");
        let phases: Vec<&str> = phases.split_whitespace().collect();
        phases.len() == 4 + 9 && phases.iter().all(|p| *p == "Running")
    });

    // The watch saw the Job appear and its pods get bound.
    let mut bound = false;
    while let Ok(line) = rx.recv_timeout(Duration::from_secs(30)) {
        let doc: Value = serde_json::from_str(&line).unwrap();
        if doc["kind"] == "Tree" && doc["root"]["pods"]["bound"] == 4 {
            bound = true;
            break;
        }
    }
    let _ = watch.kill();
    let _ = watch.wait();
    assert!(bound, "the watch printed the bound gang");

    // The JobSet: Workload -> the root CompositePodGroup in one block -> a driver and two worker gangs,
    // each in one rack, every pod on a node of its rack.
    let doc = plugin.json(&dev, &["tree", "jobset/pretrain-a"]);
    assert_eq!(doc["kind"], "Tree");
    assert_eq!(
        doc["target"],
        serde_json::json!({"kind": "JobSet", "name": "pretrain-a"})
    );
    let root = &doc["root"];
    assert_eq!(root["kind"], "JobSet");
    assert_eq!(root["status"], "Active");
    assert_eq!(root["pods"]["total"], 9);
    assert_eq!(root["children"][0]["kind"], "Workload");
    let composites = of_kind(root, "CompositePodGroup");
    assert_eq!(composites.len(), 1);
    let cpg = composites[0];
    assert_eq!(cpg["policy"], serde_json::json!({"mode": "gang", "minGroupCount": 3}));
    assert_eq!(cpg["topology"][0]["key"], "kwas.dev/block");
    assert_eq!(cpg["topology"][0]["domains"], serde_json::json!(["b0"]));
    assert!(
        cpg["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["type"] == "CompositePodGroupInitiallyScheduled" && c["status"] == "True"),
        "{cpg}"
    );
    let groups = of_kind(cpg, "PodGroup");
    assert_eq!(groups.len(), 3);
    let workers: Vec<&&Value> = groups.iter().filter(|g| g["policy"]["mode"] == "gang").collect();
    assert_eq!(workers.len(), 2);
    for g in workers {
        assert_eq!(g["policy"]["minCount"], 4);
        let racks = g["topology"][0]["domains"].as_array().unwrap();
        assert_eq!(racks.len(), 1, "one rack per worker gang: {g}");
        let rack = racks[0].as_str().unwrap();
        for p in of_kind(g, "Pod") {
            let node = p["node"].as_str().unwrap();
            assert!(node.starts_with(&format!("node-{rack}-")), "{node} in {rack}");
            assert_eq!(p["phase"], "Running");
        }
    }

    // The gang Job as text, by bare name: Job -> Workload -> PodGroup (gang of 4, all, one rack) -> pods.
    let text = plugin.kwas(&dev, &["tree", "train"]);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("Job default/train  Active  4 pods: 4 bound"),
        "{text}"
    );
    assert!(lines[1].starts_with("└── Workload train-"), "{text}");
    let group = lines[2];
    assert!(
        group.starts_with("    └── PodGroup train-")
            && group.contains("  gang minCount=4  disruption all  priority 0  kwas.dev/rack=b0-r"),
        "{text}"
    );
    assert!(
        text.contains("PodGroupInitiallyScheduled=True Scheduled: minCount (4) satisfied: 4 scheduled"),
        "{text}"
    );
    assert_eq!(text.matches("── Pod train-").count(), 4, "{text}");
    assert_eq!(text.matches("  Running").count(), 4, "{text}");

    // Errors are messages with a failing exit code.
    for (args, says) in [
        (
            vec!["kwas", "tree", "job/missing"],
            "job \"missing\" not found in namespace default",
        ),
        (vec!["kwas", "tree", "deployment/x"], "unknown kind \"deployment\""),
        (
            vec!["kwas", "why", "nothing"],
            "no Pod, PodGroup, CompositePodGroup, Job, JobSet, Workload named",
        ),
    ] {
        let (success, _, stderr) = plugin.run(&dev, &args);
        assert!(!success, "{args:?}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}

/// A Workload whose CompositePodGroups name each other (`loop-a` and `loop-b`) or themselves
/// (`loop-self`) as parent, with a PodGroup under `loop-b`.
const LOOPS: &str = "apiVersion: scheduling.k8s.io/v1alpha3
kind: Workload
metadata:
  name: loops
spec:
  compositePodGroupTemplates:
  - name: outer
    schedulingPolicy:
      gang:
        minGroupCount: 1
    podGroupTemplates:
    - name: workers
      schedulingPolicy:
        gang:
          minCount: 1
---
apiVersion: scheduling.k8s.io/v1alpha3
kind: CompositePodGroup
metadata:
  name: loop-a
spec:
  workloadRef: {workloadName: loops, templateName: outer}
  parentCompositePodGroupName: loop-b
  schedulingPolicy: {gang: {minGroupCount: 1}}
---
apiVersion: scheduling.k8s.io/v1alpha3
kind: CompositePodGroup
metadata:
  name: loop-b
spec:
  workloadRef: {workloadName: loops, templateName: outer}
  parentCompositePodGroupName: loop-a
  schedulingPolicy: {gang: {minGroupCount: 1}}
---
apiVersion: scheduling.k8s.io/v1alpha3
kind: CompositePodGroup
metadata:
  name: loop-self
spec:
  workloadRef: {workloadName: loops, templateName: outer}
  parentCompositePodGroupName: loop-self
  schedulingPolicy: {gang: {minGroupCount: 1}}
---
apiVersion: scheduling.k8s.io/v1alpha3
kind: PodGroup
metadata:
  name: loop-b-workers
spec:
  workloadRef: {workloadName: loops, templateName: workers}
  parentCompositePodGroupName: loop-b
  schedulingPolicy: {gang: {minCount: 1}}
";

#[test]
fn kubectl_kwas_tree_shows_each_composite_pod_group_of_a_parent_loop_once() {
    let dev = start(&[]);
    let plugin = PluginDir::new();
    crate::common::apply(&dev, LOOPS);

    let text = plugin.kwas(&dev, &["tree", "workload/loops"]);
    for name in ["loop-a", "loop-b", "loop-self"] {
        assert_eq!(
            text.matches(&format!("── CompositePodGroup {name}  ")).count(),
            1,
            "{name} shown once:\n{text}"
        );
    }
    assert_eq!(text.matches("PodGroup loop-b-workers  ").count(), 1, "{text}");
    for name in ["loop-a", "loop-self"] {
        assert_eq!(
            text.matches(&format!("↻ CompositePodGroup {name} (cycle: already shown above)"))
                .count(),
            1,
            "{text}"
        );
    }
    assert_eq!(text.matches('↻').count(), 2, "{text}");

    let doc = plugin.json(&dev, &["tree", "workload/loops"]);
    let root = &doc["root"];
    let composites = of_kind(root, "CompositePodGroup");
    let marked: Vec<(&str, &str)> = composites
        .iter()
        .filter(|c| c.get("elided").is_some())
        .map(|c| (c["name"].as_str().unwrap(), c["elided"].as_str().unwrap()))
        .collect();
    assert_eq!(marked, [("loop-a", "cycle"), ("loop-self", "cycle")], "{root}");
    for c in composites.iter().filter(|c| c.get("elided").is_some()) {
        assert!(c.get("children").is_none() && c.get("pods").is_none(), "{c}");
    }
    assert_eq!(composites.len(), 5, "three groups and two markers: {root}");
}

fn crowd() -> String {
    std::fs::read_to_string(repo().join("examples/scheduling/anti-affinity-gang.yaml"))
        .unwrap()
        .replace("name: apart", "name: crowd")
        .replace("app: apart", "app: crowd")
        .replace("parallelism: 8", "parallelism: 9")
        .replace("completions: 8", "completions: 9")
}

fn causes(v: &Value) -> Vec<String> {
    v["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["reason"].as_str().unwrap().to_string())
        .collect()
}

fn advice(v: &Value) -> String {
    v["advice"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn why_explains_a_gpu_shortage_and_an_anti_affinity_conflict() {
    let dev = start(&["--gpus", "0"]);
    let plugin = PluginDir::new();
    ok(&dev, &["apply", "-f", "examples/jobsets/option-a.yaml"]);
    crate::common::apply(&dev, &crowd());
    eventually("the JobSet's worker gangs to be found unschedulable", || {
        plugin.json(&dev, &["why", "jobset/pretrain-a"])["causes"]
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c["reason"] == "Insufficient nvidia.com/gpu"))
    });
    let v = plugin.json(&dev, &["why", "jobset/pretrain-a"]);
    assert_eq!(v["kind"], "Why");
    assert_eq!(v["scheduled"], false);
    assert_eq!(v["podCount"], 9);
    assert_eq!(v["pendingCount"], 9);
    assert_eq!(v["groups"][0]["kind"], "CompositePodGroup", "root first");
    assert_eq!(causes(&v), ["Insufficient nvidia.com/gpu"]);
    assert_eq!(v["preemption"]["considered"], true);
    assert_eq!(v["preemption"]["outcome"], "noVictims");
    let advice_text = advice(&v);
    // No node has a GPU: each worker gang needs 4 of them in one rack.
    assert_eq!(
        advice_text
            .matches("4 more pods of 1 nvidia.com/gpu each must fit in one kwas.dev/rack domain")
            .count(),
        2,
        "{advice_text}"
    );
    assert!(
        advice_text.contains("free or add 4 nvidia.com/gpu there"),
        "{advice_text}"
    );
    let event = &v["lastFailedScheduling"];
    assert!(
        event["message"]
            .as_str()
            .unwrap()
            .contains("Insufficient nvidia.com/gpu"),
        "{event}"
    );
    // From one worker pod: its gang and the groups above it, the scheduler's words in the text.
    let worker = names(&dev, "pods", "pretrain-a-workers-0-").remove(0);
    let text = plugin.kwas(&dev, &["why", &format!("pod/{worker}")]);
    assert!(
        text.starts_with(&format!("pod/{worker}: 4 of 4 pods wait to be scheduled")),
        "{text}"
    );
    assert!(
        text.contains("0/4 nodes are available: 4 Insufficient nvidia.com/gpu."),
        "{text}"
    );
    assert!(text.contains("Preemption: considered"), "{text}");
    assert!(text.contains("What would have to change:"), "{text}");

    // Nine pods that must not share a node, on eight nodes.
    eventually("the crowd's gang to be found unschedulable", || {
        causes(&plugin.json(&dev, &["why", "job/crowd"]))
            .contains(&"node(s) didn't match pod anti-affinity rules".to_string())
    });
    let v = plugin.json(&dev, &["why", "job/crowd"]);
    assert_eq!(v["pendingCount"], 9);
    assert_eq!(
        v["shortfalls"],
        serde_json::json!([{"ofGroups": false, "min": 9, "scheduled": 8, "remaining": 0}])
    );
    let advice_text = advice(&v);
    assert!(
        advice_text.contains("anti-affinity keeps them on separate nodes") && advice_text.contains("add 1 node"),
        "{advice_text}"
    );
    assert!(advice_text.contains("lower minCount to 8"), "{advice_text}");
    let group = names(&dev, "podgroups", "crowd-").remove(0);
    let text = plugin.kwas(&dev, &["why", &format!("podgroup/{group}")]);
    assert!(
        text.contains("PodGroupInitiallyScheduled=False PlacementNotGuaranteed"),
        "{text}"
    );
    assert!(
        text.contains("8/8 nodes: node(s) didn't match pod anti-affinity rules"),
        "{text}"
    );
}

#[test]
fn who_preempted_names_the_gang_that_took_the_room() {
    // The demo's cluster: 16 nodes of 8 CPUs.
    let dev = start(&[
        "--blocks",
        "2",
        "--racks-per-block",
        "2",
        "--nodes-per-rack",
        "4",
        "--cpu",
        "8",
        "--memory",
        "32Gi",
        "--gpus",
        "4",
    ]);
    let plugin = PluginDir::new();
    ok(&dev, &["apply", "-f", "examples/preemption/background.yaml"]);
    eventually("the background gang to run", || {
        jsonpath(
            &dev,
            &["pods", "-l", "batch.kubernetes.io/job-name=background"],
            "{.items[*].status.phase}",
        )
        .split_whitespace()
        .filter(|p| *p == "Running")
        .count()
            == 16
    });
    let victims = names(&dev, "pods", "background-");
    let before = plugin.json(&dev, &["who-preempted", "job/background"]);
    assert_eq!(before["preempted"], false, "{before}");

    ok(&dev, &["apply", "-f", "examples/preemption/urgent.yaml"]);
    eventually("the urgent gang to be bound", || {
        jsonpath(
            &dev,
            &["pods", "-l", "batch.kubernetes.io/job-name=urgent"],
            "{.items[*].spec.nodeName}",
        )
        .split_whitespace()
        .count()
            == 4
    });
    eventually("a Preempted event for every victim", || {
        jsonpath(
            &dev,
            &["events", "--field-selector", "reason=Preempted"],
            "{.items[*].involvedObject.name}",
        )
        .split_whitespace()
        .filter(|n| victims.iter().any(|v| v == n))
        .count()
            == 16
    });
    let urgent = names(&dev, "podgroups", "urgent-").remove(0);
    let v = plugin.json(&dev, &["who-preempted", "job/background"]);
    assert_eq!(v["kind"], "WhoPreempted");
    assert_eq!(v["preempted"], true);
    let all = v["preemptions"].as_array().unwrap();
    let pods: Vec<&Value> = all.iter().filter(|p| p["victim"]["kind"] == "Pod").collect();
    assert_eq!(pods.len(), 16, "{v}");
    for p in &pods {
        assert!(victims.iter().any(|n| *n == p["victim"]["name"]), "{p}");
        assert_eq!(p["source"], "event");
        assert_eq!(p["victim"]["priority"], 10);
        assert!(p["time"].is_string());
        let who = &p["preemptor"];
        assert_eq!(who["kind"], "podgroup");
        assert_eq!(who["namespace"], "default");
        assert_eq!(who["name"], urgent.as_str());
        assert_eq!(who["priority"], 1000);
    }
    // The victims' PodGroup (disruption `all`) was marked as a whole.
    let group = all.iter().find(|p| p["victim"]["kind"] == "PodGroup").unwrap();
    assert_eq!(group["victim"]["priority"], 10);
    assert_eq!(group["preemptor"]["name"], urgent.as_str());
    assert_eq!(group["preemptor"]["priority"], 1000);

    let text = plugin.kwas(&dev, &["who-preempted", "job/background"]);
    assert!(
        text.starts_with(&format!(
            "job/background: 1 group and 16 pods preempted by podgroup default/{urgent} (priority 1000)"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "16 pods preempted by podgroup default/{urgent} (priority 1000) over priority 10:"
        )),
        "{text}"
    );
    // One victim by name, whether it is still terminating or gone.
    let one = plugin.json(&dev, &["who-preempted", &format!("pod/{}", victims[0])]);
    let entry = one["preemptions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["victim"]["name"] == victims[0].as_str())
        .unwrap();
    assert_eq!(entry["preemptor"]["name"], urgent.as_str());
    // The tree shows the victims' group marked.
    let tree = plugin.kwas(&dev, &["tree", "job/background"]);
    assert!(
        tree.contains(
            "DisruptionTarget=True PreemptionByScheduler: kwas-scheduler: preempting to accommodate a higher priority"
        ),
        "{tree}"
    );
}

/// On a stock v1.37 shape (`scheduling.k8s.io/v1beta1` only, no CompositePodGroups) the plugin reads the
/// beta: the JobSet of `examples/jobsets/option-a.yaml` runs flat, its tree a Workload with a PodGroup
/// per Job and no CompositePodGroup.
#[test]
fn kubectl_kwas_trees_a_flat_jobset_on_a_stock_cluster() {
    let dev = start(&["--profile", "stock-1.37"]);
    let plugin = PluginDir::new();
    let text = std::fs::read_to_string(repo().join("examples/jobsets/option-a.yaml")).unwrap();
    crate::common::apply(&dev, &text.replace("sim-run-duration: 30s", "sim-run-duration: 10m"));
    eventually("every pod of the JobSet to run", || {
        let phases = jsonpath(&dev, &["pods"], "{.items[*].status.phase}");
        let phases: Vec<&str> = phases.split_whitespace().collect();
        phases.len() == 9 && phases.iter().all(|p| *p == "Running")
    });
    let doc = plugin.json(&dev, &["tree", "jobset/pretrain-a"]);
    let root = &doc["root"];
    assert_eq!(root["kind"], "JobSet", "{doc}");
    assert_eq!(root["pods"]["total"], 9, "{doc}");
    assert_eq!(root["children"][0]["kind"], "Workload", "{doc}");
    assert!(of_kind(root, "CompositePodGroup").is_empty(), "{doc}");
    let groups = of_kind(root, "PodGroup");
    assert_eq!(groups.len(), 3, "{doc}");
    let text = plugin.kwas(&dev, &["tree", "jobset/pretrain-a"]);
    assert!(text.contains("PodGroup pretrain-a-workers-"), "{text}");
}
