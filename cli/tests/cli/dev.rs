//! `kwas dev` as a newcomer meets it, driven with the real kubectl 1.37: with the default flags every
//! bundled example is scheduled and runs (the nodes have GPUs), node labels read `kwas.dev/block=b0`,
//! `kwas.dev/rack=b0-r1`, the group tables show their Workload, template and minimum, and the apps/v1
//! controllers run next to kwas' own (a DaemonSet rolls out through the scheduler; its pods' events are
//! listed by `kubectl events`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::{eventually, kubectl_stdin, ok, start as start_dev};

fn start() -> crate::common::Dev {
    start_dev(&[])
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
    assert!(jobsets.lines().next().unwrap().contains("TERMINALSTATE"), "{jobsets}");
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
    let (applied, _, stderr) = kubectl_stdin(&dev, &["apply", "-f", "-"], Some(ds));
    assert!(applied, "{stderr}");
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
