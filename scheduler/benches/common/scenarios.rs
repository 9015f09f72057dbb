//! Benchmark scenarios mirroring upstream `scheduler_perf` workloads (test/integration/scheduler_perf:
//! `podgroup/gangscheduling`, `podgroup/tas`, `cpg`), shared by the bench binary and a scaled-down
//! smoke test.
//!
//! Each scenario builds a snapshot (nodes like scheduler_perf's default node: 4 cpu, 32Gi, 110 pods;
//! pods request 100m / 100Mi), then plays the scheduler loop: for every root unit in creation order,
//! run a cycle and commit its assignments with `Snapshot::assume` (a bound pod, as far as the
//! algorithm is concerned). Only the loop is timed.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use kwas_scheduler::core::testing::{GroupBuilder, bound, node_with, pod_with, with_priority};
use kwas_scheduler::core::{
    GroupKey, PlacementLimit, PreemptionVerdict, Scheduler, SchedulerConfig, Snapshot, UnitKey, Verdict,
};

#[path = "dynamic.rs"]
pub mod dynamic;

#[path = "dra.rs"]
pub mod dra;

#[path = "preemption.rs"]
pub mod preemption;

pub const NS: &str = "perf";
pub const ZONE: &str = "topology.kubernetes.io/zone";
pub const RACK: &str = "topology.kubernetes.io/rack";

/// What one scenario run measured.
#[derive(Debug, Clone)]
pub struct Measurement {
    pub name: String,
    pub attempts: u64,
    pub scheduled_units: u64,
    pub pods: u64,
    pub elapsed: Duration,
    /// Upstream's figure for the same workload, as text, when there is one.
    pub upstream: Option<&'static str>,
    /// Upstream's average ms per group attempt, or pods/s, for the ratio.
    pub upstream_ms_per_attempt: Option<f64>,
    pub upstream_pods_per_s: Option<f64>,
}

impl Measurement {
    pub fn ms_per_attempt(&self) -> f64 {
        self.elapsed.as_secs_f64() * 1000.0 / self.attempts.max(1) as f64
    }
    pub fn pods_per_s(&self) -> f64 {
        self.pods as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
    /// How many times faster than upstream (by its own metric).
    pub fn speedup(&self) -> Option<f64> {
        if let Some(ms) = self.upstream_ms_per_attempt {
            return Some(ms / self.ms_per_attempt());
        }
        self.upstream_pods_per_s.map(|p| self.pods_per_s() / p)
    }
}

fn nodes(snap: &mut Snapshot, count: usize, nodes_per_rack: usize, nodes_per_zone: usize) {
    for i in 0..count {
        let zone = format!("zone-{}", i / nodes_per_zone.max(1));
        let rack = format!("rack-{}", i / nodes_per_rack.max(1));
        let n = node_with(
            &format!("node-{i}"),
            &[("cpu", "4"), ("memory", "32Gi"), ("pods", "110")],
            &[(ZONE, zone.as_str()), (RACK, rack.as_str())],
        );
        snap.upsert_node(&n).unwrap();
    }
}

fn pods(snap: &mut Snapshot, group: &str, count: usize, cpu: &str, priority: Option<i32>) {
    for j in 0..count {
        let mut p = pod_with(
            NS,
            &format!("{group}-{j}"),
            Some(group),
            &[("cpu", cpu), ("memory", "100Mi")],
        );
        if let Some(prio) = priority {
            p = with_priority(p, prio);
        }
        snap.upsert_pod(&p).unwrap();
    }
}

/// Runs every unit once, committing successes; returns (attempts, scheduled units, pods placed, time).
pub fn play(snap: &mut Snapshot, cfg: SchedulerConfig, units: &[UnitKey]) -> (u64, u64, u64, Duration) {
    let sched = Scheduler::new(cfg);
    let mut scheduled = 0;
    let mut placed = 0;
    let start = Instant::now();
    for u in units {
        let out = sched.schedule(snap, u);
        if out.verdict == Verdict::Scheduled {
            scheduled += 1;
            placed += out.assignments.len() as u64;
            for a in &out.assignments {
                snap.assume(&a.pod, &a.node).unwrap();
            }
        }
        std::hint::black_box(&out);
    }
    (units.len() as u64, scheduled, placed, start.elapsed())
}

/// `GangScheduling/5000Nodes_{N}Gangs_{N*k}Pods`: standalone gangs of `k` pods.
pub fn gang_scheduling(
    nodes_n: usize,
    gangs: usize,
    per_gang: usize,
    upstream: Option<(&'static str, f64)>,
) -> Measurement {
    let mut snap = Snapshot::new();
    nodes(&mut snap, nodes_n, 100, 1000);
    let mut units = Vec::new();
    for g in 0..gangs {
        let name = format!("gang-{g}");
        snap.upsert_pod_group(&GroupBuilder::gang(NS, &name, per_gang as i32).pod_group())
            .unwrap();
        pods(&mut snap, &name, per_gang, "100m", None);
        units.push(UnitKey::Group(GroupKey::pod_group(NS, &name)));
    }
    let (attempts, scheduled, placed, elapsed) = play(&mut snap, SchedulerConfig::default(), &units);
    assert_eq!(scheduled, gangs as u64, "every gang fits");
    Measurement {
        name: format!("GangScheduling/{nodes_n}Nodes_{gangs}Gangs_{}Pods", gangs * per_gang),
        attempts,
        scheduled_units: scheduled,
        pods: placed,
        elapsed,
        upstream: upstream.map(|u| u.0),
        upstream_ms_per_attempt: upstream.map(|u| u.1),
        upstream_pods_per_s: None,
    }
}

/// `TopologyAwareScheduling/5000Nodes_{N}Gangs_{4N}Pods`: gangs of 4 with a rack constraint.
pub fn topology_aware(
    nodes_n: usize,
    racks: usize,
    gangs: usize,
    per_gang: usize,
    limit: PlacementLimit,
    upstream: Option<(&'static str, f64)>,
) -> Measurement {
    let mut snap = Snapshot::new();
    nodes(&mut snap, nodes_n, nodes_n / racks, 1000);
    let mut units = Vec::new();
    for g in 0..gangs {
        let name = format!("gang-{g}");
        snap.upsert_pod_group(
            &GroupBuilder::gang(NS, &name, per_gang as i32)
                .topology(RACK)
                .pod_group(),
        )
        .unwrap();
        pods(&mut snap, &name, per_gang, "100m", None);
        units.push(UnitKey::Group(GroupKey::pod_group(NS, &name)));
    }
    let cfg = SchedulerConfig {
        placement_limit: limit,
        ..SchedulerConfig::default()
    };
    let (attempts, scheduled, placed, elapsed) = play(&mut snap, cfg, &units);
    assert_eq!(scheduled, gangs as u64);
    let suffix = match limit {
        PlacementLimit::ScoreAll => "_ScoreAllPlacements",
        _ => "",
    };
    Measurement {
        name: format!(
            "TopologyAwareScheduling/{nodes_n}Nodes_{gangs}Gangs_{}Pods{suffix}",
            gangs * per_gang
        ),
        attempts,
        scheduled_units: scheduled,
        pods: placed,
        elapsed,
        upstream: upstream.map(|u| u.0),
        upstream_ms_per_attempt: None,
        upstream_pods_per_s: upstream.map(|u| u.1),
    }
}

/// `CPGTopologyAwareScheduling` extended to three levels: each root CPG (gang 2, zone) holds two
/// replica CPGs (gang 2, rack), each with a leader PodGroup (1 pod) and a workers PodGroup (gang 3).
pub fn cpg_three_level(nodes_n: usize, roots: usize) -> Measurement {
    let mut snap = Snapshot::new();
    nodes(&mut snap, nodes_n, 100, 500);
    let mut units = Vec::new();
    let mut t = 0;
    for r in 0..roots {
        let root = format!("root-{r}");
        t += 1;
        snap.upsert_composite_pod_group(&GroupBuilder::gang(NS, &root, 2).topology(ZONE).created(t).composite())
            .unwrap();
        for k in 0..2 {
            let rep = format!("{root}-rep{k}");
            t += 1;
            snap.upsert_composite_pod_group(
                &GroupBuilder::gang(NS, &rep, 2)
                    .parent(&root)
                    .topology(RACK)
                    .created(t)
                    .composite(),
            )
            .unwrap();
            for (leaf, n) in [("leader", 1), ("workers", 3)] {
                let name = format!("{rep}-{leaf}");
                t += 1;
                snap.upsert_pod_group(&GroupBuilder::gang(NS, &name, n).parent(&rep).created(t).pod_group())
                    .unwrap();
                pods(&mut snap, &name, n as usize, "100m", None);
            }
        }
        units.push(UnitKey::Group(GroupKey::composite(NS, &root)));
    }
    let (attempts, scheduled, placed, elapsed) = play(&mut snap, SchedulerConfig::default(), &units);
    assert_eq!(scheduled, roots as u64);
    Measurement {
        name: format!(
            "CPGThreeLevelTopology/{nodes_n}Nodes_{roots}RootCPGs_{}Groups_{}Pods",
            roots * 6,
            roots * 8
        ),
        attempts,
        scheduled_units: scheduled,
        pods: placed,
        elapsed,
        upstream: None,
        upstream_ms_per_attempt: None,
        upstream_pods_per_s: None,
    }
}

/// `CPGGangScheduling/5000Nodes_{N}CPGs_{2N}Groups_{6N}Pods`: root gang CPGs of two gangs of 3.
pub fn cpg_gang(nodes_n: usize, cpgs: usize) -> Measurement {
    let mut snap = Snapshot::new();
    nodes(&mut snap, nodes_n, 100, 1000);
    let mut units = Vec::new();
    for c in 0..cpgs {
        let root = format!("cpg-{c}");
        snap.upsert_composite_pod_group(&GroupBuilder::gang(NS, &root, 2).composite())
            .unwrap();
        for k in 0..2 {
            let name = format!("{root}-pg{k}");
            snap.upsert_pod_group(&GroupBuilder::gang(NS, &name, 3).parent(&root).created(k).pod_group())
                .unwrap();
            pods(&mut snap, &name, 3, "100m", None);
        }
        units.push(UnitKey::Group(GroupKey::composite(NS, &root)));
    }
    let (attempts, scheduled, placed, elapsed) = play(&mut snap, SchedulerConfig::default(), &units);
    assert_eq!(scheduled, cpgs as u64);
    Measurement {
        name: format!(
            "CPGGangScheduling/{nodes_n}Nodes_{cpgs}CPGs_{}Groups_{}Pods",
            cpgs * 2,
            cpgs * 6
        ),
        attempts,
        scheduled_units: scheduled,
        pods: placed,
        elapsed,
        upstream: None,
        upstream_ms_per_attempt: None,
        upstream_pods_per_s: None,
    }
}

/// Preemption: `nodes_n` nodes filled by `low_groups` low-priority gangs of `per_group` pods (half of
/// them with disruption mode `all`); then `preemptors` high-priority gangs of `per_group` pods each run
/// preemption, evict the victims and schedule. One attempt = preempt + schedule.
pub fn preemption(nodes_n: usize, low_groups: usize, per_group: usize, preemptors: usize) -> Measurement {
    let mut snap = Snapshot::new();
    nodes(&mut snap, nodes_n, 100, 1000);
    // Fill: each low pod takes cpu so that low_groups * per_group pods exactly fill the cluster.
    let total_pods = low_groups * per_group;
    let per_node = total_pods.div_ceil(nodes_n);
    let cpu_m = 4000 / per_node as i64;
    let cpu = format!("{cpu_m}m");
    let mut idx = 0;
    for g in 0..low_groups {
        let name = format!("low-{g}");
        let mut b = GroupBuilder::gang(NS, &name, per_group as i32).priority(10);
        if g % 2 == 0 {
            b = b.all();
        }
        snap.upsert_pod_group(&b.pod_group()).unwrap();
        for j in 0..per_group {
            let p = with_priority(
                pod_with(
                    NS,
                    &format!("{name}-{j}"),
                    Some(&name),
                    &[("cpu", &cpu), ("memory", "100Mi")],
                ),
                10,
            );
            snap.upsert_pod(&bound(p, &format!("node-{}", idx / per_node))).unwrap();
            idx += 1;
        }
    }
    let mut units = Vec::new();
    for g in 0..preemptors {
        let name = format!("high-{g}");
        snap.upsert_pod_group(
            &GroupBuilder::gang(NS, &name, per_group as i32)
                .priority(1000)
                .pod_group(),
        )
        .unwrap();
        pods(&mut snap, &name, per_group, &cpu, Some(1000));
        units.push(UnitKey::Group(GroupKey::pod_group(NS, &name)));
    }
    let sched = Scheduler::new(SchedulerConfig::default());
    let mut placed = 0;
    let mut scheduled = 0;
    let start = Instant::now();
    for u in &units {
        let p = sched.preempt(&mut snap, u);
        assert_eq!(p.verdict, PreemptionVerdict::Preempt, "{}", p.message);
        for v in &p.victims {
            snap.remove_pod(&v.pod);
        }
        let out = sched.schedule(&mut snap, u);
        assert!(out.is_scheduled());
        scheduled += 1;
        placed += out.assignments.len() as u64;
        for a in &out.assignments {
            snap.assume(&a.pod, &a.node).unwrap();
        }
    }
    let elapsed = start.elapsed();
    Measurement {
        name: format!("Preemption/{nodes_n}Nodes_{low_groups}LowPriorityGroupsOf{per_group}_{preemptors}Preemptors"),
        attempts: units.len() as u64,
        scheduled_units: scheduled,
        pods: placed,
        elapsed,
        upstream: None,
        upstream_ms_per_attempt: None,
        upstream_pods_per_s: None,
    }
}

/// `SchedulingBasic`-style plain pods (no group): one cycle per pod.
pub fn plain_pods(nodes_n: usize, pods_n: usize, upstream: Option<(&'static str, f64)>) -> Measurement {
    let mut snap = Snapshot::new();
    nodes(&mut snap, nodes_n, 100, 1000);
    let mut units = Vec::new();
    for i in 0..pods_n {
        let name = format!("pod-{i}");
        snap.upsert_pod(&pod_with(NS, &name, None, &[("cpu", "100m"), ("memory", "100Mi")]))
            .unwrap();
        units.push(UnitKey::Pod(kwas_scheduler::core::PodKey::new(NS, name)));
    }
    let (attempts, scheduled, placed, elapsed) = play(&mut snap, SchedulerConfig::default(), &units);
    assert_eq!(scheduled, pods_n as u64);
    Measurement {
        name: format!("SchedulingBasic/{nodes_n}Nodes_{pods_n}Pods"),
        attempts,
        scheduled_units: scheduled,
        pods: placed,
        elapsed,
        upstream: upstream.map(|u| u.0),
        upstream_ms_per_attempt: None,
        upstream_pods_per_s: upstream.map(|u| u.1),
    }
}

/// Markdown table of measurements.
pub fn table(ms: &[Measurement]) -> String {
    let mut s = String::from(
        "| workload | group attempts | pods placed | avg per group attempt | pods/s | upstream | vs upstream |\n| --- | ---: | ---: | ---: | ---: | --- | ---: |\n",
    );
    for m in ms {
        s.push_str(&format!(
            "| {} | {} | {} | {:.3} ms | {:.0} | {} | {} |\n",
            m.name,
            m.attempts,
            m.pods,
            m.ms_per_attempt(),
            m.pods_per_s(),
            m.upstream.unwrap_or("-"),
            m.speedup().map(|x| format!("{x:.0}x")).unwrap_or_else(|| "-".into()),
        ));
    }
    s
}
