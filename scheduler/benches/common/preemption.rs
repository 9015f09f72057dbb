//! Workload-aware preemption at scale, named after upstream's `scheduler_perf` workloads of
//! kubernetes PR 140651 (`PreemptionPodGroupScaledCandidates`, `PreemptionPodGroupDisruptionMode`):
//! a cluster full of low-priority pods, then high-priority gangs that can only run by preempting.
//!
//! Each preemptor runs one preemption attempt (timed on its own: the latency that upstream reports as
//! P50 / P99), its victims are removed, and it is scheduled and committed (not timed). The gang attempt
//! these latencies are compared with is `GangScheduling` at the same node count, in the same process.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use kwas_scheduler::core::testing::{GroupBuilder, bound, node_with, pod_with, with_priority};
use kwas_scheduler::core::{GroupKey, PreemptionVerdict, Scheduler, SchedulerConfig, Snapshot, UnitKey};

use super::NS;

/// Latencies of one preemption workload.
#[derive(Debug, Clone)]
pub struct Latency {
    pub name: String,
    /// One preemption attempt per preemptor, in order.
    pub attempts: Vec<Duration>,
    /// Victim pods evicted over the run.
    pub victims: usize,
}

impl Latency {
    fn percentile(&self, q: f64) -> f64 {
        let mut v: Vec<f64> = self.attempts.iter().map(|d| d.as_secs_f64() * 1000.0).collect();
        v.sort_by(f64::total_cmp);
        if v.is_empty() {
            return 0.0;
        }
        // Nearest rank, as Prometheus-style summaries report it.
        let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
        v[rank - 1]
    }
    pub fn p50_ms(&self) -> f64 {
        self.percentile(0.50)
    }
    pub fn p99_ms(&self) -> f64 {
        self.percentile(0.99)
    }
}

fn nodes(snap: &mut Snapshot, count: usize) {
    for i in 0..count {
        let rack = format!("rack-{}", i / 16);
        let n = node_with(
            &format!("node-{i}"),
            &[("cpu", "4"), ("memory", "32Gi"), ("pods", "110")],
            &[
                ("kubernetes.io/hostname", &format!("node-{i}")),
                ("kwas.dev/rack", &rack),
            ],
        );
        snap.upsert_node(&n).unwrap();
    }
}

fn low_pod(snap: &mut Snapshot, name: &str, group: Option<&str>, cpu: &str, node: usize) {
    let p = with_priority(pod_with(NS, name, group, &[("cpu", cpu), ("memory", "100Mi")]), 10);
    snap.upsert_pod(&bound(p, &format!("node-{node}"))).unwrap();
}

fn preemptors(snap: &mut Snapshot, count: usize, per_gang: usize, cpu: &str) -> Vec<UnitKey> {
    (0..count)
        .map(|g| {
            let name = format!("high-{g}");
            snap.upsert_pod_group(
                &GroupBuilder::gang(NS, &name, per_gang as i32)
                    .priority(1000)
                    .pod_group(),
            )
            .unwrap();
            for j in 0..per_gang {
                let p = with_priority(
                    pod_with(
                        NS,
                        &format!("{name}-{j}"),
                        Some(&name),
                        &[("cpu", cpu), ("memory", "100Mi")],
                    ),
                    1000,
                );
                snap.upsert_pod(&p).unwrap();
            }
            UnitKey::Group(GroupKey::pod_group(NS, &name))
        })
        .collect()
}

/// Preempts for each unit in turn (timed), evicts the victims and schedules the unit (not timed).
fn run(snap: &mut Snapshot, name: String, units: &[UnitKey]) -> Latency {
    let sched = Scheduler::new(SchedulerConfig::default());
    let mut attempts = Vec::with_capacity(units.len());
    let mut victims = 0;
    for u in units {
        let start = Instant::now();
        let p = sched.preempt(snap, u);
        attempts.push(start.elapsed());
        assert_eq!(p.verdict, PreemptionVerdict::Preempt, "{u}: {}", p.message);
        victims += p.victims.len();
        for v in &p.victims {
            snap.remove_pod(&v.pod);
        }
        let out = sched.schedule(snap, u);
        assert!(out.is_scheduled(), "{u} after preemption: {out:?}");
        for a in &out.assignments {
            snap.assume(&a.pod, &a.node).unwrap();
        }
    }
    Latency {
        name,
        attempts,
        victims,
    }
}

/// `PreemptionPodGroupScaledCandidates/{N}Nodes`: `nodes_n` nodes of 4 cpu, each running one
/// low-priority gang of 4 pods x 1 cpu (disruption mode `single`: every pod is a candidate), then
/// `preemptors` gangs of 4 pods x 1 cpu at a higher priority.
pub fn scaled_candidates(nodes_n: usize, preemptors_n: usize) -> Latency {
    let mut snap = Snapshot::new();
    nodes(&mut snap, nodes_n);
    for g in 0..nodes_n {
        let name = format!("low-{g}");
        snap.upsert_pod_group(&GroupBuilder::gang(NS, &name, 4).priority(10).pod_group())
            .unwrap();
        for j in 0..4 {
            low_pod(&mut snap, &format!("{name}-{j}"), Some(&name), "1", g);
        }
    }
    let units = preemptors(&mut snap, preemptors_n, 4, "1");
    run(
        &mut snap,
        format!("PreemptionPodGroupScaledCandidates/{nodes_n}Nodes"),
        &units,
    )
}

/// Whether the candidates are plain pods or pods of groups, and the groups' disruption mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Candidates {
    NoPodGroup,
    DisruptionSingle,
    DisruptionAll,
}

/// `PreemptionPodGroupDisruptionMode/{N}Nodes_{N}Candidates_{mode}`: `nodes_n` nodes of 4 cpu, each
/// filled by one low-priority candidate pod of 4 cpu (plain, or in groups of 4 on consecutive nodes),
/// then `preemptors` gangs of 4 pods x 4 cpu (each needs four whole nodes).
pub fn disruption_mode(nodes_n: usize, mode: Candidates, preemptors_n: usize) -> Latency {
    let mut snap = Snapshot::new();
    nodes(&mut snap, nodes_n);
    for i in 0..nodes_n {
        let group = match mode {
            Candidates::NoPodGroup => None,
            _ => Some(format!("low-{}", i / 4)),
        };
        if i % 4 == 0
            && let Some(g) = &group
        {
            let mut b = GroupBuilder::gang(NS, g, 4).priority(10);
            if mode == Candidates::DisruptionAll {
                b = b.all();
            }
            snap.upsert_pod_group(&b.pod_group()).unwrap();
        }
        low_pod(&mut snap, &format!("low-pod-{i}"), group.as_deref(), "4", i);
    }
    let units = preemptors(&mut snap, preemptors_n, 4, "4");
    run(
        &mut snap,
        format!("PreemptionPodGroupDisruptionMode/{nodes_n}Nodes_{nodes_n}Candidates_{mode:?}"),
        &units,
    )
}

/// A gang attempt at `nodes_n` nodes (`GangScheduling`'s shape: gangs of 4 pods x 100m), in ms: what
/// the preemption latencies are compared with.
pub fn gang_attempt_ms(nodes_n: usize, gangs: usize) -> f64 {
    super::gang_scheduling(nodes_n, gangs, 4, None).ms_per_attempt()
}

/// Markdown table: P50 / P99 per attempt and their ratios to the gang attempt.
pub fn table(ls: &[Latency], gang_ms: f64) -> String {
    let mut s = format!(
        "| workload | attempts | victims | P50 | P99 | P50 / gang attempt ({gang_ms:.3} ms) | P99 / P50 |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n"
    );
    for l in ls {
        s.push_str(&format!(
            "| {} | {} | {} | {:.3} ms | {:.3} ms | {:.1}x | {:.1}x |\n",
            l.name,
            l.attempts.len(),
            l.victims,
            l.p50_ms(),
            l.p99_ms(),
            l.p50_ms() / gang_ms.max(1e-9),
            l.p99_ms() / l.p50_ms().max(1e-9),
        ));
    }
    s
}
