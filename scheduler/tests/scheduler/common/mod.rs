//! Shared helpers for the integration tests: a small cluster DSL and invariant checks.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod reference;

use std::collections::{BTreeMap, HashMap};

use kwas_scheduler::core::testing::{GroupBuilder, node_with, pod_with};
use kwas_scheduler::core::{
    Assignment, CycleOutcome, GroupKey, PodKey, Scheduler, SchedulerConfig, Snapshot, UnitKey, Verdict,
};

pub const NS: &str = "ns";
pub const BLOCK: &str = "kwas.dev/block";
pub const RACK: &str = "kwas.dev/rack";

/// Adds `count` nodes named `{prefix}-{i}` with `cpu` and `pods` slots and labels.
pub fn add_nodes(snap: &mut Snapshot, prefix: &str, count: usize, cpu: &str, labels: &[(&str, &str)]) {
    for i in 0..count {
        let n = node_with(
            &format!("{prefix}-{i}"),
            &[("cpu", cpu), ("memory", "64Gi"), ("pods", "110")],
            labels,
        );
        snap.upsert_node(&n).unwrap();
    }
}

/// Adds `count` pending pods `{group}-{i}` of PodGroup `group` requesting `cpu`.
pub fn add_pods(snap: &mut Snapshot, group: &str, count: usize, cpu: &str) {
    for i in 0..count {
        snap.upsert_pod(&pod_with(NS, &format!("{group}-{i}"), Some(group), &[("cpu", cpu)]))
            .unwrap();
    }
}

pub fn pg(snap: &mut Snapshot, b: GroupBuilder) {
    snap.upsert_pod_group(&b.pod_group()).unwrap();
}

pub fn cpg(snap: &mut Snapshot, b: GroupBuilder) {
    snap.upsert_composite_pod_group(&b.composite()).unwrap();
}

pub fn group_unit(name: &str) -> UnitKey {
    UnitKey::Group(GroupKey::pod_group(NS, name))
}

pub fn composite_unit(name: &str) -> UnitKey {
    UnitKey::Group(GroupKey::composite(NS, name))
}

pub fn schedule(snap: &mut Snapshot, cfg: SchedulerConfig, unit: &UnitKey) -> CycleOutcome {
    Scheduler::new(cfg).schedule(snap, unit)
}

/// Commits a scheduled outcome into the snapshot (assume + finish binding).
pub fn commit(snap: &mut Snapshot, out: &CycleOutcome) {
    assert_eq!(out.verdict, Verdict::Scheduled, "{out:#?}");
    for a in &out.assignments {
        snap.assume(&a.pod, &a.node).unwrap();
        snap.finish_binding(&a.pod).unwrap();
    }
}

/// Node a pod went to.
pub fn node_of<'a>(out: &'a [Assignment], pod: &str) -> Option<&'a str> {
    out.iter()
        .find(|a| a.pod == PodKey::new(NS, pod))
        .map(|a| a.node.as_str())
}

/// Label values (by key) of the nodes the assignments of `group`'s pods use.
pub fn domains_of(snap: &Snapshot, out: &[Assignment], group_prefix: &str, key: &str) -> Vec<String> {
    let mut v: Vec<String> = out
        .iter()
        .filter(|a| a.pod.name.starts_with(&format!("{group_prefix}-")))
        .map(|a| snap.node_label(&a.node, key).unwrap_or("<none>").to_string())
        .collect();
    v.sort();
    v.dedup();
    v
}

/// Asserts that no node holds more than it can.
pub fn assert_no_overcommit(snap: &Snapshot) {
    for n in snap.node_names().map(str::to_string).collect::<Vec<_>>() {
        let alloc = snap.node_allocatable(&n).unwrap();
        let used = snap.node_requested(&n).unwrap();
        for (r, v) in &used {
            let a = alloc.get(r).copied().unwrap_or(0);
            assert!(*v <= a, "node {n} overcommitted on {r}: {v} > {a}");
        }
    }
}

/// Counts assignments per pod-name prefix (`{group}-`).
pub fn per_group(out: &[Assignment]) -> HashMap<String, usize> {
    let mut m = HashMap::new();
    for a in out {
        let g = a
            .pod
            .name
            .rsplit_once('-')
            .map(|(g, _)| g.to_string())
            .unwrap_or_default();
        *m.entry(g).or_insert(0) += 1;
    }
    m
}

pub fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}
