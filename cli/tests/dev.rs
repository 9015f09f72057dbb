//! `kwas dev` as a newcomer meets it, driven with the real kubectl 1.37: with the default flags every
//! bundled example is scheduled and runs (the nodes have GPUs), node labels read `kwas.dev/block=b0`,
//! `kwas.dev/rack=b0-r1`, the group tables show their Workload, template and minimum, and the apps/v1
//! controllers run next to kwas' own (a DaemonSet rolls out through the scheduler; its pods' events are
//! listed by `kubectl events`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Dev {
    child: Child,
    kubeconfig: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Dev {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn kubectl(dev: &Dev, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(kwas_test_tools::kubectl().expect("kubectl 1.37"))
        .args(args)
        .env("KUBECONFIG", &dev.kubeconfig)
        .env("HOME", dev.kubeconfig.parent().unwrap())
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn ok(dev: &Dev, args: &[&str]) -> String {
    let (success, stdout, stderr) = kubectl(dev, args);
    assert!(success, "kubectl {args:?}: {stderr}");
    stdout
}

/// Waits for `f` (polled every 100 ms) for up to a minute.
fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn start() -> Dev {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kwas-dev.kubeconfig");
    let child = Command::new(env!("CARGO_BIN_EXE_kwas"))
        .args(["dev", "--port", "0", "--kubeconfig"])
        .arg(&kubeconfig)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let dev = Dev {
        child,
        kubeconfig,
        _dir: dir,
    };
    eventually("kwas dev to answer", || {
        dev.kubeconfig.exists() && kubectl(&dev, &["get", "--raw", "/readyz"]).0
    });
    dev
}

#[test]
fn every_bundled_example_runs_under_the_defaults() {
    let dev = start();
    let nodes = ok(
        &dev,
        &["get", "nodes", "-L", "kwas.dev/block,kwas.dev/rack", "--no-headers"],
    );
    assert!(
        nodes
            .lines()
            .any(|l| l.starts_with("node-b0-r1-n0") && l.contains(" b0 ") && l.ends_with("b0-r1")),
        "{nodes}"
    );
    let gpus = ok(
        &dev,
        &[
            "get",
            "node",
            "node-b0-r0-n0",
            "-o",
            "jsonpath={.status.allocatable.nvidia\\.com/gpu}",
        ],
    );
    assert_eq!(gpus, "8");
    ok(&dev, &["apply", "-f", "examples/jobs/", "-f", "examples/jobsets/"]);
    eventually("every example's pods to run", || {
        let pods = ok(
            &dev,
            &[
                "get",
                "pods",
                "-o",
                "jsonpath={range .items[*]}{.status.phase}{\"\\n\"}{end}",
            ],
        );
        let phases: Vec<&str> = pods.lines().collect();
        // 4 (gang Job) + 10 (basic Job, parallelism 5: at least 5 at once) + 2 x (1 + 8) (JobSets).
        phases.len() >= 4 + 5 + 18 && phases.iter().all(|p| *p == "Running" || *p == "Succeeded")
    });
    let groups = ok(&dev, &["get", "podgroups", "-o", "wide"]);
    let header: Vec<&str> = groups.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        [
            "NAME",
            "POLICY",
            "MIN",
            "SCHEDULED",
            "AGE",
            "WORKLOAD",
            "TEMPLATE",
            "PARENT"
        ]
    );
    let train = groups.lines().find(|l| l.starts_with("train-")).unwrap();
    assert!(
        train.contains("Gang") && train.contains(" 4 ") && train.contains("train-pgt-0"),
        "{groups}"
    );
    let jobsets = ok(&dev, &["get", "jobsets"]);
    assert!(jobsets.lines().next().unwrap().contains("WORKLOAD"), "{jobsets}");
}

#[test]
fn apps_workloads_roll_out_through_the_scheduler_and_events_are_listed() {
    let dev = start();
    let ds = "apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: agent, image: busybox}]}
";
    let mut apply = Command::new(kwas_test_tools::kubectl().unwrap())
        .args(["apply", "-f", "-"])
        .env("KUBECONFIG", &dev.kubeconfig)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    std::io::Write::write_all(apply.stdin.as_mut().unwrap(), ds.as_bytes()).unwrap();
    drop(apply.stdin.take());
    assert!(apply.wait().unwrap().success());
    let status = ok(&dev, &["rollout", "status", "daemonset/agent", "--timeout=60s"]);
    assert!(status.contains("successfully rolled out"), "{status}");
    let nodes = ok(&dev, &["get", "nodes", "--no-headers"]).lines().count();
    let pods = ok(
        &dev,
        &[
            "get",
            "pods",
            "-l",
            "app=agent",
            "-o",
            "jsonpath={.items[*].spec.nodeName}",
        ],
    );
    let mut on: Vec<&str> = pods.split_whitespace().collect();
    on.sort();
    on.dedup();
    assert_eq!(on.len(), nodes, "one daemon pod per node: {pods}");
    ok(&dev, &["create", "deployment", "web", "--image=nginx", "--replicas=3"]);
    let status = ok(&dev, &["rollout", "status", "deployment/web", "--timeout=60s"]);
    assert!(status.contains("successfully rolled out"), "{status}");
    let all = ok(&dev, &["events"]);
    assert!(
        all.contains("Scheduled") && all.contains("Successfully assigned default/agent-"),
        "{all}"
    );
}
