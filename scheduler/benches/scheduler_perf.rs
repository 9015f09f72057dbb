//! Scheduler core benchmarks mirroring upstream scheduler_perf workloads.
//!
//! `cargo bench -p kwas-scheduler --bench scheduler_perf` runs everything; pass a substring to run a
//! subset (`cargo bench -p kwas-scheduler --bench scheduler_perf -- TopologyAware`). Prints a markdown
//! table with the average time per group attempt, pods/s, and upstream's figure where
//! upstream-compat.md records one.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/scenarios.rs"]
mod scenarios;

use kwas_scheduler::core::PlacementLimit;
use scenarios::*;

type Scenario = (&'static str, Box<dyn Fn() -> Measurement>);
type LatencyScenario = (&'static str, Box<dyn Fn() -> preemption::Latency>);

fn main() {
    let filter: Option<String> = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let scenarios: Vec<Scenario> = vec![
        (
            "GangScheduling 1000",
            Box::new(|| gang_scheduling(5000, 1000, 3, Some(("3.7 ms / attempt", 3.7)))),
        ),
        (
            "GangScheduling 2000",
            Box::new(|| gang_scheduling(5000, 2000, 3, Some(("5.0 ms / attempt", 5.0)))),
        ),
        (
            "GangScheduling 3000",
            Box::new(|| gang_scheduling(5000, 3000, 3, Some(("5.7 ms / attempt", 5.7)))),
        ),
        (
            "GangScheduling 10x5000",
            Box::new(|| gang_scheduling(5000, 10, 5000, None)),
        ),
        (
            "TopologyAware 750",
            Box::new(|| {
                topology_aware(
                    5000,
                    50,
                    750,
                    4,
                    PlacementLimit::Adaptive,
                    Some(("562-630 pods/s", 630.0)),
                )
            }),
        ),
        (
            "TopologyAware 1500",
            Box::new(|| {
                topology_aware(
                    5000,
                    50,
                    1500,
                    4,
                    PlacementLimit::Adaptive,
                    Some(("526-574 pods/s", 574.0)),
                )
            }),
        ),
        (
            "TopologyAware 2250",
            Box::new(|| {
                topology_aware(
                    5000,
                    50,
                    2250,
                    4,
                    PlacementLimit::Adaptive,
                    Some(("492-547 pods/s", 547.0)),
                )
            }),
        ),
        (
            "TopologyAware 750 ScoreAll",
            Box::new(|| {
                topology_aware(
                    5000,
                    50,
                    750,
                    4,
                    PlacementLimit::ScoreAll,
                    Some(("105-110 pods/s", 110.0)),
                )
            }),
        ),
        ("CPGGang 500", Box::new(|| cpg_gang(5000, 500))),
        ("CPGThreeLevel 500", Box::new(|| cpg_three_level(5000, 500))),
        (
            "SchedulingBasic 5000",
            Box::new(|| plain_pods(5000, 5000, Some(("680-810 pods/s (floor)", 810.0)))),
        ),
        ("Preemption 1000x10", Box::new(|| preemption(1000, 1000, 10, 100))),
        (
            "SchedulingPodAntiAffinity 2000",
            Box::new(|| dynamic::pod_anti_affinity(5000, 1000, 2000, Some(("60 pods/s (threshold)", 60.0)))),
        ),
        (
            "SchedulingPodAffinity 5000",
            Box::new(|| dynamic::pod_affinity(5000, 5000, 5000, Some(("35 pods/s (threshold)", 35.0)))),
        ),
        (
            "TopologySpreading 5000",
            Box::new(|| dynamic::topology_spreading(5000, 5000, 5000, Some(("460 pods/s (threshold)", 460.0)))),
        ),
        (
            "GangSchedulingPodAntiAffinity 500x4",
            Box::new(|| dynamic::gang_anti_affinity(5000, 500, 4)),
        ),
        (
            "GangTopologySpreading 500x6",
            Box::new(|| dynamic::gang_topology_spreading(5000, 500, 6)),
        ),
        (
            "PreemptionPVs 500",
            Box::new(|| dynamic::preemption_pvs(500, 2000, 500)),
        ),
        (
            "ExtendedResourceGangScheduling 1000",
            Box::new(|| dra::gpu_gangs(1000, 800, 8, false)),
        ),
        (
            "DRAGangScheduling 1000",
            Box::new(|| dra::gpu_gangs(1000, 800, 8, true)),
        ),
        (
            "SchedulingWithResourceClaimTemplateExtendedResource",
            Box::new(|| dra::scheduling_with_claim_template(500, 2500, 2500, false)),
        ),
        (
            "SchedulingWithResourceClaimTemplate",
            Box::new(|| dra::scheduling_with_claim_template(500, 2500, 2500, true)),
        ),
        (
            "SteadyStateClusterResourceClaimTemplateExtendedResource empty",
            Box::new(|| dra::steady_state(500, dra::Fill::Empty, 1000, false)),
        ),
        (
            "SteadyStateClusterResourceClaimTemplate empty",
            Box::new(|| dra::steady_state(500, dra::Fill::Empty, 1000, true)),
        ),
        (
            "SteadyStateClusterResourceClaimTemplateExtendedResource half",
            Box::new(|| dra::steady_state(500, dra::Fill::Half, 1000, false)),
        ),
        (
            "SteadyStateClusterResourceClaimTemplate half",
            Box::new(|| dra::steady_state(500, dra::Fill::Half, 1000, true)),
        ),
        (
            "SteadyStateClusterResourceClaimTemplateExtendedResource full",
            Box::new(|| dra::steady_state(500, dra::Fill::Full, 1000, false)),
        ),
        (
            "SteadyStateClusterResourceClaimTemplate full",
            Box::new(|| dra::steady_state(500, dra::Fill::Full, 1000, true)),
        ),
        (
            "SharedPodGroupResourceClaimNoClaim",
            Box::new(|| dra::shared_pod_group_claim(500, 100, 50, false)),
        ),
        (
            "SharedPodGroupResourceClaim",
            Box::new(|| dra::shared_pod_group_claim(500, 100, 50, true)),
        ),
    ];
    let mut results = Vec::new();
    for (name, run) in &scenarios {
        if filter.as_ref().is_some_and(|f| !name.contains(f.as_str())) {
            continue;
        }
        let m = run();
        eprintln!(
            "{}: {:.3} ms/attempt, {:.0} pods/s",
            m.name,
            m.ms_per_attempt(),
            m.pods_per_s()
        );
        results.push(m);
    }
    println!("{}", table(&results));
    let ratios = dra::ratios(&results);
    if !ratios.is_empty() {
        println!("{ratios}");
    }

    // Preemption latency per attempt (P50 / P99), against a gang attempt at the same node count.
    let latency: Vec<LatencyScenario> = vec![
        (
            "PreemptionPodGroupScaledCandidates/1000Nodes",
            Box::new(|| preemption::scaled_candidates(1000, 200)),
        ),
        (
            "PreemptionPodGroupDisruptionMode/1000Nodes_1000Candidates_NoPodGroup",
            Box::new(|| preemption::disruption_mode(1000, preemption::Candidates::NoPodGroup, 200)),
        ),
        (
            "PreemptionPodGroupDisruptionMode/1000Nodes_1000Candidates_DisruptionSingle",
            Box::new(|| preemption::disruption_mode(1000, preemption::Candidates::DisruptionSingle, 200)),
        ),
        (
            "PreemptionPodGroupDisruptionMode/1000Nodes_1000Candidates_DisruptionAll",
            Box::new(|| preemption::disruption_mode(1000, preemption::Candidates::DisruptionAll, 200)),
        ),
    ];
    let chosen: Vec<_> = latency
        .iter()
        .filter(|(name, _)| filter.as_ref().is_none_or(|f| name.contains(f.as_str())))
        .collect();
    if !chosen.is_empty() {
        let gang_ms = preemption::gang_attempt_ms(1000, 1000);
        let mut ls = Vec::new();
        for (_, run) in chosen {
            let l = run();
            eprintln!("{}: P50 {:.3} ms, P99 {:.3} ms", l.name, l.p50_ms(), l.p99_ms());
            ls.push(l);
        }
        println!("{}", preemption::table(&ls, gang_ms));
    }
}
