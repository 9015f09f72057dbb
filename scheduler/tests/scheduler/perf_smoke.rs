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
        dra::scheduling_with_claim_template(20, 50, 50, false),
        dra::scheduling_with_claim_template(20, 50, 50, true),
        dra::steady_state(20, dra::Fill::Full, 20, false),
        dra::steady_state(20, dra::Fill::Full, 20, true),
        dra::shared_pod_group_claim(20, 5, 10, false),
        dra::shared_pod_group_claim(20, 5, 10, true),
    ];
    for m in &ms {
        assert_eq!(m.scheduled_units, m.attempts, "{}", m.name);
        assert!(m.pods > 0, "{}", m.name);
    }
    let t = table(&ms);
    assert!(t.contains("GangScheduling/100Nodes_20Gangs_60Pods"), "{t}");
    let r = dra::ratios(&ms);
    assert!(r.contains("| SharedPodGroupResourceClaim/5podgroups_50pods |"), "{r}");
    let ls = [
        preemption::scaled_candidates(20, 5),
        preemption::disruption_mode(20, preemption::Candidates::NoPodGroup, 3),
        preemption::disruption_mode(20, preemption::Candidates::DisruptionSingle, 3),
        preemption::disruption_mode(20, preemption::Candidates::DisruptionAll, 3),
    ];
    for l in &ls {
        assert!(!l.attempts.is_empty() && l.victims > 0, "{}", l.name);
    }
}

/// The preemption ratios of issue-sized runs (`cargo bench ... -- PreemptionPodGroup`), scaled down:
/// P50 of a preemption attempt against a gang attempt at the same node count, measured in this run.
/// The bound is loose (the build is unoptimised and CI machines are shared); it fails when preemption
/// goes back to work proportional to every candidate per trial (the search before the node-by-node one
/// measured 119x at 1000 nodes, release).
#[test]
fn preemption_latency_keeps_its_ratio_to_a_gang_attempt() {
    let nodes = 300;
    let mut ratios = Vec::new();
    for _ in 0..3 {
        let gang = preemption::gang_attempt_ms(nodes, 300);
        let runs = [
            preemption::scaled_candidates(nodes, 40),
            preemption::disruption_mode(nodes, preemption::Candidates::DisruptionAll, 40),
        ];
        let worst = runs.iter().map(|l| l.p50_ms() / gang.max(1e-6)).fold(0.0, f64::max);
        ratios.push(worst);
        eprintln!("{}", preemption::table(&runs, gang));
    }
    let best = ratios.iter().copied().fold(f64::INFINITY, f64::min);
    assert!(best <= 30.0, "preemption P50 / gang attempt: {ratios:?}");
}

/// The DRA ratios of `cargo bench ... -- Claim` and `-- "GangScheduling 1000"`, scaled down: a DRA
/// gang attempt against the same gang asking for an extended resource, and a steady-state pod in a
/// full cluster against one in an empty cluster, measured in this run. Loose bounds (unoptimised
/// build, shared machines); they fail when pods with claims go back to rescoring every node per pod
/// and trying the full nodes first (280x at 1000 nodes, release, before the cached ranking).
#[test]
fn dra_keeps_its_ratios_to_extended_resources_and_to_an_empty_cluster() {
    let mut gang = Vec::new();
    let mut fill = Vec::new();
    for _ in 0..3 {
        let er = dra::gpu_gangs(200, 160, 8, false);
        let d = dra::gpu_gangs(200, 160, 8, true);
        gang.push(d.ms_per_attempt() / er.ms_per_attempt().max(1e-6));
        let empty = dra::steady_state(100, dra::Fill::Empty, 200, true);
        let full = dra::steady_state(100, dra::Fill::Full, 200, true);
        fill.push(full.ms_per_attempt() / empty.ms_per_attempt().max(1e-6));
        eprintln!("{}", dra::ratios(&[er, d, empty, full]));
    }
    let best = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    assert!(
        best(&gang) <= 20.0,
        "DRA gang attempt / extended-resource gang attempt: {gang:?}"
    );
    assert!(best(&fill) <= 2.0, "steady state full / empty: {fill:?}");
}

/// The per-pod plugins' ratios of `cargo bench ... -- Affinity` / `-- Spreading`, scaled down: a gang
/// whose members must not share a node, and one spread evenly over zones, against a plain gang attempt
/// at the same node count, measured in this run. Loose bounds (unoptimised build, shared machines);
/// they fail when such members go back to rescoring every node with string-keyed domain counts.
#[test]
fn inter_pod_gangs_keep_their_ratio_to_a_plain_gang() {
    let mut ratios = Vec::new();
    for _ in 0..3 {
        let plain = gang_scheduling(1000, 100, 4, None).ms_per_attempt();
        let anti = dynamic::gang_anti_affinity(1000, 100, 4).ms_per_attempt();
        let spread = dynamic::gang_topology_spreading(1000, 100, 6).ms_per_attempt();
        eprintln!("plain {plain:.3} ms, anti-affinity {anti:.3} ms, spreading {spread:.3} ms");
        ratios.push((anti / plain.max(1e-6)).max(spread / plain.max(1e-6)));
    }
    let best = ratios.iter().copied().fold(f64::INFINITY, f64::min);
    assert!(best <= 25.0, "inter-pod gang attempt / plain gang attempt: {ratios:?}");
}
