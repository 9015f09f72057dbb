//! Scaled-down runs of every benchmark scenario, so the benchmark code stays correct under
//! `cargo test`. The real sizes run with `cargo bench -p kwas-scheduler --bench scheduler_perf`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../benches/common/scenarios.rs"]
mod scenarios;

use kwas_scheduler::core::PlacementLimit;
use scenarios::*;

#[test]
fn every_benchmark_scenario_runs_at_small_scale() {
    let ms = vec![
        gang_scheduling(100, 20, 3, None),
        gang_scheduling(20, 2, 100, None),
        topology_aware(100, 5, 20, 4, PlacementLimit::Adaptive, None),
        topology_aware(100, 5, 20, 4, PlacementLimit::ScoreAll, None),
        cpg_gang(100, 10),
        cpg_three_level(1000, 10),
        plain_pods(50, 100, None),
        preemption(20, 20, 10, 2),
        dynamic::pod_anti_affinity(50, 10, 40, None),
        dynamic::pod_affinity(50, 20, 40, None),
        dynamic::topology_spreading(60, 50, 60, None),
        dynamic::gang_anti_affinity(50, 10, 4),
        dynamic::gang_topology_spreading(60, 10, 6),
        dynamic::preemption_pvs(20, 80, 10),
        dra::gpu_gangs(20, 16, 8, false),
        dra::gpu_gangs(20, 16, 8, true),
    ];
    for m in &ms {
        assert_eq!(m.scheduled_units, m.attempts, "{}", m.name);
        assert!(m.pods > 0, "{}", m.name);
    }
    let t = table(&ms);
    assert!(t.contains("GangScheduling/100Nodes_20Gangs_60Pods"), "{t}");
}
