//! Offline replay (`kwas_scheduler::replay`): snapshots built from objects and the recorded fixtures
//! of `tests/fixtures/replay/` replayed through the runtime's engine, and hostile snapshot files
//! refused with the item and field at fault.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{Pod, PodCondition, PodStatus};
use kwas_scheduler::core::testing::{GroupBuilder, bound, node, node_with, pod_with, with_priority};
use kwas_scheduler::replay::{Object, ReplayOptions, ReplayReport, SchedulingSnapshot, SnapshotMetadata, Stop, replay};
use kwas_scheduler::runtime::RuntimeConfig;
use proptest::prelude::*;

const NS: &str = "ns";
const RACK: &str = "kwas.dev/rack";
const SCHEDULER: &str = "kwas-scheduler";

fn ours(mut p: Pod) -> Pod {
    p.spec.as_mut().unwrap().scheduler_name = Some(SCHEDULER.into());
    p
}

fn snapshot(objects: Vec<Object>) -> SchedulingSnapshot {
    SchedulingSnapshot {
        metadata: SnapshotMetadata {
            taken_at: Some("2026-01-02T03:04:05Z".into()),
            server_version: Some("v1.37.0".into()),
            scheduler_names: vec![SCHEDULER.into()],
            absent_kinds: Vec::new(),
        },
        objects,
    }
}

fn run(s: &SchedulingSnapshot) -> ReplayReport {
    replay(s, &ReplayOptions::default())
}

fn racks(nodes_per_rack: usize, cpu: &str) -> Vec<Object> {
    let mut v = Vec::new();
    for r in 0..2 {
        for n in 0..nodes_per_rack {
            let rack = format!("r{r}");
            v.push(Object::Node(Box::new(node(
                &format!("node-r{r}-n{n}"),
                cpu,
                "64Gi",
                &[(RACK, rack.as_str())],
            ))));
        }
    }
    v
}

fn gang(name: &str, count: usize, requests: &[(&str, &str)], topology: bool) -> Vec<Object> {
    let mut g = GroupBuilder::gang(NS, name, i32::try_from(count).unwrap());
    if topology {
        g = g.topology(RACK);
    }
    let mut v = vec![Object::PodGroup(Box::new(g.pod_group()))];
    for i in 0..count {
        v.push(Object::Pod(Box::new(ours(pod_with(
            NS,
            &format!("{name}-{i}"),
            Some(name),
            requests,
        )))));
    }
    v
}

fn rack_of(node: &str) -> &str {
    node.split('-').nth(1).unwrap()
}

#[test]
fn a_gang_that_fits_is_bound_in_one_rack_and_a_gpu_gang_is_told_why() {
    let mut objects = racks(2, "4");
    objects.extend(gang("train", 4, &[("cpu", "2")], true));
    objects.extend(gang("gpu", 2, &[("nvidia.com/gpu", "1")], false));
    let report = run(&snapshot(objects));

    let bound: Vec<(&str, &str)> = report
        .bindings
        .iter()
        .map(|b| (b.pod.as_str(), b.node.as_str()))
        .collect();
    assert_eq!(bound.len(), 4, "{}", report.to_text());
    assert!(bound.iter().all(|(p, _)| p.starts_with("ns/train-")));
    let used: BTreeSet<&str> = bound.iter().map(|(_, n)| rack_of(n)).collect();
    assert_eq!(used.len(), 1, "one rack: {bound:?}");
    assert!(report.bindings.iter().all(|b| b.pod_group.as_deref() == Some("train")));

    let groups = report.last_group_conditions();
    let condition = |group: &str, type_: &str| {
        groups
            .iter()
            .find(|c| c.group == group && c.type_ == type_)
            .unwrap_or_else(|| panic!("no {type_} on {group}: {groups:#?}"))
    };
    let train = condition("PodGroup ns/train", "PodGroupInitiallyScheduled");
    assert_eq!((train.status.as_str(), train.reason.as_str()), ("True", "Scheduled"));
    // The live loop's gang health (KEP-6413) runs in the replay too.
    let health = condition("PodGroup ns/train", "PodGroupSatisfied");
    assert_eq!(
        (health.status.as_str(), health.reason.as_str(), health.message.as_str()),
        ("True", "MinCountSatisfied", "4 of 4 members scheduled")
    );
    assert!(
        !groups
            .iter()
            .any(|c| c.group == "PodGroup ns/gpu" && c.type_ == "PodGroupSatisfied"),
        "absent until the gang forms"
    );
    let gpu = condition("PodGroup ns/gpu", "PodGroupInitiallyScheduled");
    assert_eq!(
        (gpu.type_.as_str(), gpu.status.as_str(), gpu.reason.as_str()),
        ("PodGroupInitiallyScheduled", "False", "Unschedulable")
    );
    assert!(gpu.message.contains("Insufficient nvidia.com/gpu"), "{}", gpu.message);

    let pods = report.last_pod_conditions();
    assert_eq!(pods.len(), 2, "{pods:?}");
    for c in pods {
        assert!(c.pod.starts_with("ns/gpu-"));
        assert_eq!(c.reason, "Unschedulable");
        assert!(
            c.message
                .contains("0/4 nodes are available: 4 Insufficient nvidia.com/gpu."),
            "{}",
            c.message
        );
    }
    let pending: Vec<&str> = report.pending.iter().map(|p| p.pod.as_str()).collect();
    assert_eq!(pending, ["ns/gpu-0", "ns/gpu-1"]);
    assert_eq!(report.stopped, Stop::Horizon, "the GPU gang waits for a cluster change");
    assert_eq!(report.snapshot.pending_pods, 6);
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);

    let text = report.to_text();
    assert!(text.contains("Bindings (4):"), "{text}");
    assert!(
        text.contains("PodGroup ns/gpu: PodGroupInitiallyScheduled=False (Unschedulable)"),
        "{text}"
    );
    assert!(text.contains("Still pending (2):\n  ns/gpu-0, ns/gpu-1\n"), "{text}");
}

#[test]
fn bound_pods_stay_and_a_preemption_names_its_victims_then_binds_the_preemptor() {
    let mut objects = vec![Object::Node(Box::new(node("n1", "4", "64Gi", &[])))];
    for i in 0..2 {
        let low = bound(ours(pod_with(NS, &format!("low-{i}"), None, &[("cpu", "2")])), "n1");
        objects.push(Object::Pod(Box::new(low)));
    }
    objects.push(Object::PodGroup(Box::new(
        GroupBuilder::gang(NS, "urgent", 1).priority(1000).pod_group(),
    )));
    objects.push(Object::Pod(Box::new(with_priority(
        ours(pod_with(NS, "urgent-0", Some("urgent"), &[("cpu", "3")])),
        1000,
    ))));
    let report = run(&snapshot(objects));
    let text = report.to_text();

    assert_eq!(report.preemptions.len(), 1, "{text}");
    let p = &report.preemptions[0];
    assert_eq!(p.preemptor.as_deref(), Some("PodGroup ns/urgent"));
    assert_eq!(p.action, "Preempting");
    let victims: Vec<(&str, Option<&str>)> = p.victims.iter().map(|v| (v.pod.as_str(), v.node.as_deref())).collect();
    assert_eq!(victims.len(), 2, "{victims:?}");
    assert!(
        victims
            .iter()
            .all(|(p, n)| p.starts_with("ns/low-") && *n == Some("n1"))
    );
    assert!(
        p.message
            .contains("preempting to accommodate a higher priority podgroup"),
        "{}",
        p.message
    );
    assert_eq!(
        report.nominations.first().map(|n| (n.pod.as_str(), n.node.as_deref())),
        Some(("ns/urgent-0", Some("n1")))
    );
    // The victims are gone at once; the preemptor's next cycle binds it.
    assert_eq!(
        report
            .bindings
            .iter()
            .map(|b| (b.pod.as_str(), b.node.as_str()))
            .collect::<Vec<_>>(),
        [("ns/urgent-0", "n1")],
        "{text}"
    );
    assert!(report.bindings[0].cycle > p.cycle);
    let waiting = report
        .group_conditions
        .iter()
        .find(|c| c.reason == "Unschedulable")
        .unwrap();
    assert_eq!(
        waiting.message,
        "pod group is waiting for podgroup preemption to complete"
    );
    assert!(
        report
            .last_group_conditions()
            .iter()
            .any(|c| c.type_ == "PodGroupInitiallyScheduled" && c.status == "True")
    );
    assert!(report.pending.is_empty());
    assert!(text.contains("PodGroup ns/urgent preempts 2 pods:"), "{text}");
}

#[test]
fn a_bound_pod_keeps_its_node_and_counts_there() {
    // n1 is full with a pod already bound there; the new pod can only go to n2.
    let objects = vec![
        Object::Node(Box::new(node("n1", "2", "64Gi", &[]))),
        Object::Node(Box::new(node("n2", "2", "64Gi", &[]))),
        Object::Pod(Box::new(bound(ours(pod_with(NS, "old", None, &[("cpu", "2")])), "n1"))),
        Object::Pod(Box::new(ours(pod_with(NS, "new", None, &[("cpu", "2")])))),
    ];
    let report = run(&snapshot(objects));
    let bound: Vec<(&str, &str)> = report
        .bindings
        .iter()
        .map(|b| (b.pod.as_str(), b.node.as_str()))
        .collect();
    assert_eq!(bound, [("ns/new", "n2")]);
    assert_eq!(report.snapshot.bound_pods, 1);
    assert_eq!(report.stopped, Stop::Quiet);
}

fn with_condition(mut p: Pod, reason: &str, message: &str) -> Pod {
    p.status = Some(PodStatus {
        conditions: Some(vec![PodCondition {
            type_: "PodScheduled".into(),
            status: "False".into(),
            reason: Some(reason.into()),
            message: Some(message.into()),
            ..Default::default()
        }]),
        ..Default::default()
    });
    p
}

#[test]
fn the_live_scheduler_conditions_are_set_aside_and_compared() {
    let message = "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.";
    let objects = vec![
        Object::Node(Box::new(node("n1", "1", "64Gi", &[]))),
        Object::Pod(Box::new(with_condition(
            ours(pod_with(NS, "same", None, &[("cpu", "2")])),
            "Unschedulable",
            message,
        ))),
        Object::Pod(Box::new(with_condition(
            ours(pod_with(NS, "stale", None, &[("cpu", "2")])),
            "Unschedulable",
            "0/3 nodes are available: something else.",
        ))),
    ];
    let report = run(&snapshot(objects));
    let text = report.to_text();
    let by_pod = |name: &str| report.pod_conditions.iter().find(|c| c.pod == name).unwrap();
    let same = by_pod("ns/same");
    assert_eq!(same.message, message, "{text}");
    assert!(
        same.live
            .as_ref()
            .unwrap()
            .same(&same.status, &same.reason, &same.message)
    );
    let stale = by_pod("ns/stale");
    assert!(
        !stale
            .live
            .as_ref()
            .unwrap()
            .same(&stale.status, &stale.reason, &stale.message)
    );
    assert!(text.contains("(the same in the snapshot)"), "{text}");
    assert!(
        text.contains("(the snapshot says: False (Unschedulable): 0/3 nodes are available: something else.)"),
        "{text}"
    );
}

#[test]
fn pods_of_other_schedulers_are_left_alone_unless_named() {
    let objects = vec![
        Object::Node(Box::new(node("n1", "4", "64Gi", &[]))),
        Object::Pod(Box::new(pod_with(NS, "theirs", None, &[("cpu", "1")]))),
    ];
    let s = snapshot(objects);
    let report = run(&s);
    assert!(report.bindings.is_empty());
    assert_eq!(report.snapshot.other_schedulers_pods, 1);
    assert!(
        report.warnings[0].contains("another scheduler"),
        "{:?}",
        report.warnings
    );
    let options = ReplayOptions {
        config: RuntimeConfig {
            scheduler_names: vec!["default-scheduler".into()],
            ..RuntimeConfig::default()
        },
        ..ReplayOptions::default()
    };
    let report = replay(&s, &options);
    assert_eq!(report.bindings.len(), 1);
}

#[test]
fn a_gang_short_of_pods_waits_and_says_so_after_the_message_delay() {
    let mut objects = racks(1, "4");
    let mut g = gang("short", 3, &[("cpu", "1")], false);
    g.pop();
    objects.extend(g);
    let report = run(&snapshot(objects));
    assert!(report.bindings.is_empty());
    let pods = report.last_pod_conditions();
    assert_eq!(pods.len(), 2, "{}", report.to_text());
    assert!(pods.iter().all(|c| c.reason == "SchedulingGated"));
    assert!(report.simulated_millis >= 1000, "waited for the message delay");
    assert_eq!(report.stopped, Stop::Quiet);
}

#[test]
fn an_invalid_object_is_a_warning_and_its_pod_is_told() {
    let objects = vec![
        Object::Node(Box::new(node_with("bad", &[("cpu", "lots")], &[]))),
        Object::Node(Box::new(node("n1", "4", "64Gi", &[]))),
        Object::Pod(Box::new(ours(pod_with(NS, "odd", None, &[("cpu", "-1")])))),
    ];
    let report = run(&snapshot(objects));
    assert_eq!(report.warnings.len(), 2, "{:?}", report.warnings);
    assert!(report.warnings[0].contains("Node bad"), "{:?}", report.warnings);
    assert!(report.warnings[1].contains("Pod ns/odd"), "{:?}", report.warnings);
    let c = &report.pod_conditions[0];
    assert_eq!(
        (c.pod.as_str(), c.reason.as_str(), c.cycle),
        ("ns/odd", "SchedulerError", 0)
    );
}

#[test]
fn the_cycle_budget_is_honoured() {
    let mut objects = racks(1, "64");
    for i in 0..20 {
        objects.push(Object::Pod(Box::new(ours(pod_with(
            NS,
            &format!("p{i}"),
            None,
            &[("cpu", "1")],
        )))));
    }
    let options = ReplayOptions {
        max_cycles: 5,
        ..ReplayOptions::default()
    };
    let report = replay(&snapshot(objects), &options);
    assert_eq!((report.cycles, report.stopped), (5, Stop::MaxCycles));
    assert_eq!(report.bindings.len(), 5);
    assert_eq!(report.pending.len(), 15);
}

#[test]
fn a_replay_is_deterministic_and_survives_its_own_file() {
    let mut objects = racks(2, "4");
    objects.extend(gang("a", 3, &[("cpu", "2")], true));
    objects.extend(gang("b", 3, &[("cpu", "2")], true));
    objects.extend(gang("c", 2, &[("cpu", "3")], true));
    let s = snapshot(objects);
    let first = run(&s);
    assert_eq!(first, run(&s));
    for text in [s.to_yaml().unwrap(), s.to_json().unwrap()] {
        let back = SchedulingSnapshot::parse(&text).unwrap();
        assert_eq!(back.metadata, s.metadata);
        assert_eq!(back.counts(), s.counts());
        assert_eq!(run(&back), first);
    }
}

// --- hostile input ---

fn parse_err(text: &str) -> String {
    match SchedulingSnapshot::parse(text) {
        Ok(s) => panic!("accepted: {} objects", s.objects.len()),
        Err(e) => e.to_string(),
    }
}

const HEAD: &str =
    "apiVersion: kwas.dev/v1alpha1\nkind: SchedulingSnapshot\nmetadata: {takenAt: '2026-01-02T03:04:05Z'}\n";

#[test]
fn hostile_snapshots_are_refused_with_the_field() {
    let cases: &[(&str, String, &str)] = &[
        (
            "empty",
            String::new(),
            "Invalid value: null: expected a SchedulingSnapshot object",
        ),
        ("not an object", "[1, 2]".into(), "expected a SchedulingSnapshot object"),
        ("scalar", "hello".into(), "expected a SchedulingSnapshot object"),
        (
            "wrong apiVersion",
            "apiVersion: kwas.dev/v1\nkind: SchedulingSnapshot\nitems: []\n".into(),
            "apiVersion: Unsupported value: \"kwas.dev/v1\": supported values: \"kwas.dev/v1alpha1\"",
        ),
        (
            "other kind",
            "apiVersion: v1\nkind: Pod\n".into(),
            "kind: Unsupported value: \"Pod\"",
        ),
        (
            "unknown field",
            format!("{HEAD}itemz: []\n"),
            "itemz: Forbidden: unknown field",
        ),
        (
            "items not a list",
            format!("{HEAD}items: 3\n"),
            "items: Invalid value: 3: must be a list",
        ),
        (
            "unknown metadata",
            "apiVersion: kwas.dev/v1alpha1\nkind: SchedulingSnapshot\nmetadata: {owner: me}\n".into(),
            "metadata",
        ),
        (
            "bad takenAt",
            "apiVersion: kwas.dev/v1alpha1\nkind: SchedulingSnapshot\nmetadata: {takenAt: yesterday}\n".into(),
            "metadata.takenAt: Invalid value: \"yesterday\"",
        ),
        (
            "unknown item kind",
            format!("{HEAD}items:\n- {{apiVersion: v1, kind: Secret, metadata: {{name: s}}}}\nitemCount: 1\n"),
            "items[0].kind: Unsupported value: \"Secret\": a snapshot holds only what the scheduler reads",
        ),
        (
            "wrong item apiVersion",
            format!(
                "{HEAD}items:\n- {{apiVersion: policy/v1beta1, kind: PodDisruptionBudget, metadata: {{name: b}}}}\nitemCount: 1\n"
            ),
            "items[0].apiVersion: Unsupported value: \"policy/v1beta1\" for kind PodDisruptionBudget: supported values: \"policy/v1\"",
        ),
        (
            "item without kind",
            format!("{HEAD}items:\n- {{metadata: {{name: x}}}}\nitemCount: 1\n"),
            "items[0]: Required value: apiVersion and kind are required",
        ),
        (
            "item without name",
            format!("{HEAD}items:\n- {{apiVersion: v1, kind: Node, metadata: {{}}}}\nitemCount: 1\n"),
            "items[0].metadata.name: Required value",
        ),
        (
            "kind not a string",
            format!("{HEAD}items:\n- {{apiVersion: v1, kind: [Node]}}\nitemCount: 1\n"),
            "items[0].kind: Invalid value: [\"Node\"]: must be a string",
        ),
        (
            "huge integer",
            format!(
                "{HEAD}items:\n- apiVersion: v1\n  kind: Pod\n  metadata: {{name: p, namespace: ns}}\n  spec: {{priority: 99999999999999999999999999999, containers: []}}\nitemCount: 1\n"
            ),
            "items[0] (Pod ns/p): spec.priority",
        ),
        (
            "out of range integer",
            format!(
                "{HEAD}items:\n- apiVersion: v1\n  kind: Pod\n  metadata: {{name: p, namespace: ns}}\n  spec: {{priority: 4294967296, containers: []}}\nitemCount: 1\n"
            ),
            "items[0] (Pod ns/p): spec.priority",
        ),
        (
            "wrong type deep inside",
            format!(
                "{HEAD}items:\n- apiVersion: v1\n  kind: Node\n  metadata: {{name: n}}\n  status: {{allocatable: {{cpu: [4]}}}}\nitemCount: 1\n"
            ),
            "items[0] (Node n): status.allocatable.cpu",
        ),
        (
            "name not a string",
            format!("{HEAD}items:\n- {{apiVersion: v1, kind: Node, metadata: {{name: [n]}}}}\nitemCount: 1\n"),
            "items[0].metadata.name: Invalid value: [\"n\"]: must be a string",
        ),
        (
            "metadata not an object",
            format!("{HEAD}items:\n- {{apiVersion: v1, kind: Node, metadata: 7}}\nitemCount: 1\n"),
            "items[0].metadata: Invalid value: 7: expected an object",
        ),
        (
            "duplicate",
            format!(
                "{HEAD}items:\n- {{apiVersion: v1, kind: Node, metadata: {{name: n}}}}\n- {{apiVersion: v1, kind: Node, metadata: {{name: n}}}}\nitemCount: 2\n"
            ),
            "items[1]: Duplicate value: Node n (also items[0])",
        ),
        (
            "truncated YAML",
            format!("{HEAD}items:\n- apiVersion: v1\n  kind: Node\n  metadata: {{name: n, labels: {{a: b"),
            "invalid YAML",
        ),
        (
            "truncated JSON",
            "{\"apiVersion\": \"kwas.dev/v1alpha1\", \"kind\": \"Sched".into(),
            "invalid JSON",
        ),
        ("two documents", format!("{HEAD}---\n{HEAD}"), "invalid YAML"),
        (
            "no itemCount",
            format!("{HEAD}items: []\n"),
            "itemCount: Required value: the number of items, written last (is the file cut short?)",
        ),
        (
            "cut at the end of an item",
            format!(
                "{HEAD}items:\n- {{apiVersion: v1, kind: Node, metadata: {{name: a}}}}\n- {{apiVersion: v1, kind: Node, metadata: {{name: b}}}}\n"
            ),
            "itemCount: Required value",
        ),
        (
            "fewer items than counted",
            format!("{HEAD}items:\n- {{apiVersion: v1, kind: Node, metadata: {{name: a}}}}\nitemCount: 2\n"),
            "itemCount: Invalid value: 2: the file holds 1 items (is it cut short?)",
        ),
        (
            "itemCount not a count",
            format!("{HEAD}items: []\nitemCount: -1\n"),
            "itemCount: Invalid value: -1: must be a non-negative integer",
        ),
        (
            "itemCount huge",
            format!("{HEAD}items: []\nitemCount: 1e300\n"),
            "itemCount: Invalid value: 1e+300: must be a non-negative integer",
        ),
        (
            "deep nesting YAML",
            format!("{HEAD}items: {}{}\n", "[".repeat(5000), "]".repeat(5000)),
            "invalid YAML",
        ),
        (
            "deep nesting JSON",
            format!(
                "{{\"apiVersion\": \"kwas.dev/v1alpha1\", \"kind\": \"SchedulingSnapshot\", \"items\": {}{}}}",
                "[".repeat(5000),
                "]".repeat(5000)
            ),
            "invalid JSON",
        ),
    ];
    for (what, text, want) in cases {
        let e = parse_err(text);
        assert!(e.contains(want), "{what}: {e}");
    }
}

#[test]
fn strings_that_look_like_other_scalars_survive_the_file() {
    let values = [
        "y", "n", "yes", "no", "on", "off", "true", "False", "null", "~", "1", "0x10", "1e3", "0123", "1_000", "",
        " a", "a: b", "- x", "#c", "*x", "&y", "!t", "%p", "@a", "`b", "'q'", "\"d\"", "1:20", "0o7", ".inf", ".nan",
    ];
    let labels: Vec<(String, String)> = values
        .iter()
        .enumerate()
        .map(|(i, v)| (format!("l{i}"), v.to_string()))
        .collect();
    let refs: Vec<(&str, &str)> = labels.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let s = snapshot(vec![Object::Node(Box::new(node("n", "1", "1Gi", &refs)))]);
    for text in [s.to_yaml().unwrap(), s.to_json().unwrap()] {
        let back = SchedulingSnapshot::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let Object::Node(n) = &back.objects[0] else { panic!() };
        let got = n.metadata.labels.as_ref().unwrap();
        for (k, v) in &labels {
            assert_eq!(got.get(k), Some(v), "{k}");
        }
    }
}

/// A file cut short at any line (what a full disk or an interrupted copy leaves, and still YAML) is
/// refused, not read as a smaller cluster.
fn assert_every_line_cut_is_refused(text: &str) {
    let ends: Vec<usize> = text.match_indices('\n').map(|(i, _)| i + 1).collect();
    assert!(ends.len() > 10);
    for &end in &ends[..ends.len() - 1] {
        if let Ok(s) = SchedulingSnapshot::parse(&text[..end]) {
            panic!("cut after byte {end} read as {} objects", s.objects.len());
        }
    }
    SchedulingSnapshot::parse(text).unwrap();
}

#[test]
fn a_snapshot_cut_at_any_line_is_refused() {
    let mut objects = racks(1, "4");
    objects.extend(gang("a", 2, &[("cpu", "1")], true));
    assert_every_line_cut_is_refused(&snapshot(objects).to_yaml().unwrap());
}

#[test]
fn an_alias_bomb_is_refused() {
    let mut s = String::from(HEAD);
    s.push_str("x0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for i in 1..12 {
        let prev = i - 1;
        s.push_str(&format!(
            "x{i}: &a{i} [*a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}]\n"
        ));
    }
    let e = parse_err(&s);
    assert!(e.contains("invalid YAML"), "{e}");
}

#[test]
fn a_kubectl_list_is_read_too() {
    let text = "apiVersion: v1
kind: List
metadata: {resourceVersion: ''}
items:
- apiVersion: v1
  kind: Node
  metadata: {name: n1}
  status: {allocatable: {cpu: '4', memory: 8Gi, pods: '110'}}
- apiVersion: v1
  kind: Pod
  metadata: {name: p, namespace: ns}
  spec:
    schedulerName: kwas-scheduler
    containers: [{name: c, image: i, resources: {requests: {cpu: '1'}}}]
";
    let s = SchedulingSnapshot::parse(text).unwrap();
    let report = run(&s);
    assert_eq!(report.bindings.len(), 1);
    assert_eq!(report.clock, "1970-01-01T00:00:00Z", "no takenAt: the epoch");
}

/// Objects the snapshot refuses (absurd quantities, numbers at the edges) never panic the replay.
#[test]
fn absurd_values_are_refused_or_replayed_without_panic() {
    let quantities = [
        "1e400",
        "99999999999999999999999",
        "-1",
        "0.0000000001m",
        "1Ei",
        "9223372036854775807",
        "NaN",
        "",
    ];
    for q in quantities {
        let objects = vec![
            Object::Node(Box::new(node_with("n", &[("cpu", q), ("memory", q), ("pods", q)], &[]))),
            Object::Pod(Box::new(ours(pod_with(NS, "p", None, &[("cpu", q), ("memory", q)])))),
            Object::Pod(Box::new(with_priority(
                ours(pod_with(NS, "q", None, &[("cpu", "1")])),
                i32::MAX,
            ))),
            Object::Pod(Box::new(with_priority(
                ours(pod_with(NS, "r", None, &[("cpu", "1")])),
                i32::MIN,
            ))),
        ];
        let _ = run(&snapshot(objects)).to_text();
    }
}

/// Texts to mangle: a generated snapshot's YAML and JSON, and the recorded fixtures.
fn mangling_seeds() -> Vec<String> {
    let mut objects = racks(2, "4");
    objects.extend(gang("a", 3, &[("cpu", "2")], true));
    objects.push(Object::Pod(Box::new(bound(
        ours(pod_with(NS, "old", None, &[("cpu", "1")])),
        "node-r0-n0",
    ))));
    let s = snapshot(objects);
    let mut seeds = vec![s.to_yaml().unwrap(), s.to_json().unwrap()];
    seeds.extend(recorded_texts());
    seeds
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Cutting a snapshot file short or splicing junk into it gives an error or a replay, never a
    /// panic.
    #[test]
    fn mangled_snapshots_never_panic(seed in 0usize..16, cut in 0.0f64..1.0, at in 0.0f64..1.0, junk in "[ -~\n]{0,12}") {
        let seeds = mangling_seeds();
        let text = &seeds[seed % seeds.len()];
        let mut cut_at = (text.len() as f64 * cut) as usize;
        while !text.is_char_boundary(cut_at) { cut_at -= 1; }
        if let Ok(s) = SchedulingSnapshot::parse(&text[..cut_at]) {
            let _ = replay(&s, &ReplayOptions { max_cycles: 200, ..ReplayOptions::default() }).to_text();
        }
        let mut at_ = (text.len() as f64 * at) as usize;
        while !text.is_char_boundary(at_) { at_ -= 1; }
        let spliced = format!("{}{junk}{}", &text[..at_], &text[at_..]);
        if let Ok(s) = SchedulingSnapshot::parse(&spliced) {
            let _ = replay(&s, &ReplayOptions { max_cycles: 200, ..ReplayOptions::default() }).to_text();
        }
    }
}

// --- recorded fixtures ---

fn fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/replay");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "json"))
        .collect();
    v.sort();
    v
}

/// Every fixture replays to its `.replay.txt`. `KWAS_BLESS=1` rewrites them.
#[test]
fn recorded_fixtures_replay_as_expected() {
    let files = fixtures();
    assert!(!files.is_empty());
    let bless = std::env::var_os("KWAS_BLESS").is_some();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let s = SchedulingSnapshot::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let mut options = ReplayOptions::default();
        if !s.metadata.scheduler_names.is_empty() {
            options.config.scheduler_names = s.metadata.scheduler_names.clone();
        }
        let got = replay(&s, &options).to_text();
        let expected_path = file.with_extension("replay.txt");
        if bless {
            std::fs::write(&expected_path, &got).unwrap();
            continue;
        }
        let expected = std::fs::read_to_string(&expected_path)
            .unwrap_or_else(|e| panic!("{}: {e} (KWAS_BLESS=1 writes it)", expected_path.display()));
        assert_eq!(got, expected, "{}", file.display());
    }
}

#[test]
fn recorded_fixtures_cut_at_any_line_are_refused() {
    for text in recorded_texts() {
        assert_every_line_cut_is_refused(&text);
    }
}

fn recorded_texts() -> Vec<String> {
    fixtures().iter().map(|f| std::fs::read_to_string(f).unwrap()).collect()
}
