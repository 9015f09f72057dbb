//! Placement quality: the fraction of feasible random instances each algorithm mode places.
//!
//! `cargo bench -p kwas-scheduler --bench placement_quality` (add `-- 5000` for more small instances,
//! `-- --large 5000` for more large ones, `-- --budget 1000000` for a larger reference budget,
//! `-- --large-only` to skip the small ones).
//!
//! Small instances are small clusters (3-5 nodes in 2 blocks and up to 4 racks, some capacity in use)
//! with one random hierarchy (up to 3 levels, gang or basic policies, rack / block constraints). The
//! exact reference decides which instances have a placement; each mode is run on those.
//!
//! Large instances (`tests/scheduler/common/reference_large.rs`) have 8-128 nodes in 2-4 blocks of
//! 2-4 racks and hierarchies up to 4 levels deep with gangs of up to 16 pods, demanding 35-90% of the
//! free cpu. A pruned exhaustive search decides them within a step budget; the instances it cannot
//! decide are counted and reported apart. Every mode runs on every instance, its `Scheduler::schedule`
//! timed; every placement is checked against the instance's rules.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/scheduler/common/reference.rs"]
mod reference;
#[path = "../tests/scheduler/common/reference_large.rs"]
mod reference_large;

use std::time::Instant;

use kwas_scheduler::core::{PlacementLimit, Scheduler, SchedulerConfig};
use reference::{generate, placement_exists, root_unit, to_snapshot};
use reference_large::{Params, Verdict};

/// The value after `--flag`.
fn flag(args: &[String], name: &str) -> Option<u64> {
    let i = args.iter().position(|a| a == name)?;
    args.get(i + 1)?.parse().ok()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n: u64 = args
        .iter()
        .enumerate()
        .filter(|(i, _)| *i == 0 || !args[*i - 1].starts_with("--"))
        .find_map(|(_, a)| a.parse().ok())
        .unwrap_or(2000);
    let n_large = flag(&args, "--large").unwrap_or(1000);
    let budget = flag(&args, "--budget").unwrap_or(reference_large::DEFAULT_BUDGET);
    let modes = modes();
    if !args.iter().any(|a| a == "--large-only") {
        small(n, &modes);
    }
    large(n_large, budget, &modes);
}

fn modes() -> Vec<(&'static str, SchedulerConfig)> {
    let alpha = SchedulerConfig::alpha();
    vec![
        ("alpha (greedy, KEP-6012)", alpha),
        (
            "+ admissibility pre-check",
            SchedulerConfig {
                admissibility_precheck: true,
                ..alpha
            },
        ),
        (
            "+ minimums first (children in creation order)",
            SchedulerConfig {
                secure_minimums_first: true,
                ..alpha
            },
        ),
        (
            "+ minimums first, demand-ordered",
            SchedulerConfig {
                secure_minimums_first: true,
                demand_ordered_minimums: true,
                ..alpha
            },
        ),
        (
            "+ backtracking (16)",
            SchedulerConfig {
                backtracking_limit: 16,
                ..alpha
            },
        ),
        (
            "+ placement cap (50%)",
            SchedulerConfig {
                placement_limit: PlacementLimit::Percentage(50),
                ..alpha
            },
        ),
        (
            "+ retry with the other scoring",
            SchedulerConfig {
                scoring_retry: true,
                ..alpha
            },
        ),
        (
            "default before issue 26 (no demand order, no retry)",
            SchedulerConfig {
                demand_ordered_minimums: false,
                scoring_retry: false,
                ..SchedulerConfig::default()
            },
        ),
        ("all improvements (default)", SchedulerConfig::default()),
    ]
}

fn small(n: u64, modes: &[(&str, SchedulerConfig)]) {
    for tight in [false, true] {
        let mut feasible = 0u64;
        let mut placed = vec![0u64; modes.len()];
        let mut pods_tried = vec![0u64; modes.len()];
        let mut placements = vec![0u64; modes.len()];
        for seed in 0..n {
            let inst = generate(seed, tight);
            if !placement_exists(&inst) {
                continue;
            }
            feasible += 1;
            for (i, (_, cfg)) in modes.iter().enumerate() {
                let mut snap = to_snapshot(&inst);
                let out = Scheduler::new(*cfg).schedule(&mut snap, &root_unit(&inst));
                if out.is_scheduled() {
                    placed[i] += 1;
                }
                pods_tried[i] += out.stats.pods_tried;
                placements[i] += out.stats.placements_evaluated;
            }
        }
        println!(
            "\n{} instances ({n} generated, {feasible} feasible per the exact reference)\n",
            if tight { "tight" } else { "roomy" }
        );
        println!(
            "| mode | placed | fraction of feasible | pod placements simulated / instance | topology placements simulated / instance |"
        );
        println!("| --- | ---: | ---: | ---: | ---: |");
        for (i, (name, _)) in modes.iter().enumerate() {
            let pct = if feasible == 0 {
                0.0
            } else {
                100.0 * placed[i] as f64 / feasible as f64
            };
            let per = |x: u64| x as f64 / feasible.max(1) as f64;
            println!(
                "| {name} | {} | {pct:.1}% | {:.2} | {:.2} |",
                placed[i],
                per(pods_tried[i]),
                per(placements[i])
            );
        }
    }
}

fn large(n: u64, budget: u64, modes: &[(&str, SchedulerConfig)]) {
    let mut feasible = 0u64;
    let mut infeasible = 0u64;
    let mut undecided = 0u64;
    let mut steps = 0u64;
    let mut ref_time = 0f64;
    let mut placed = vec![0u64; modes.len()];
    let mut placed_undecided = vec![0u64; modes.len()];
    let mut micros = vec![0f64; modes.len()];
    let mut micros_max = vec![0f64; modes.len()];
    let mut micros_failed = vec![(0f64, 0u64); modes.len()];
    let mut misses: Vec<String> = Vec::new();
    let (mut nodes, mut pods, mut demand) = (0usize, 0usize, 0f64);
    for seed in 0..n {
        let inst = reference_large::generate(seed, &Params::LARGE);
        nodes += inst.nodes.len();
        pods += inst.pod_count();
        demand += inst.demand_fraction();
        let t = Instant::now();
        let (verdict, s) = reference_large::decide(&inst, budget);
        ref_time += t.elapsed().as_secs_f64();
        steps += s;
        match &verdict {
            Verdict::Feasible(w) => {
                assert_eq!(
                    reference_large::violation_of(&inst, w),
                    None,
                    "reference witness, seed {seed}"
                );
                feasible += 1;
            }
            Verdict::Infeasible => infeasible += 1,
            Verdict::Undecided => undecided += 1,
        }
        for (i, (name, cfg)) in modes.iter().enumerate() {
            let mut snap = reference_large::to_snapshot(&inst);
            let unit = reference_large::root_unit(&inst);
            let t = Instant::now();
            let out = Scheduler::new(*cfg).schedule(&mut snap, &unit);
            let us = t.elapsed().as_secs_f64() * 1e6;
            micros[i] += us;
            micros_max[i] = micros_max[i].max(us);
            if out.is_scheduled() {
                if let Some(v) = reference_large::violation(&inst, &out.assignments) {
                    panic!("{name} placed seed {seed} wrongly: {v}");
                }
                assert_ne!(
                    verdict,
                    Verdict::Infeasible,
                    "{name} placed seed {seed}, which the reference calls infeasible"
                );
                match verdict {
                    Verdict::Feasible(_) => placed[i] += 1,
                    _ => placed_undecided[i] += 1,
                }
            } else {
                micros_failed[i].0 += us;
                micros_failed[i].1 += 1;
            }
            if !out.is_scheduled() && verdict.is_feasible() && i + 1 == modes.len() {
                misses.push(format!(
                    "seed {seed}: {} nodes, {} groups, depth {}, {} pods, demand {:.0}%: {}",
                    inst.nodes.len(),
                    inst.groups.len(),
                    inst.depth(),
                    inst.pod_count(),
                    100.0 * inst.demand_fraction(),
                    {
                        let m = format!("{:?}", out.verdict);
                        m.chars().take(300).collect::<String>()
                    }
                ));
            }
        }
    }
    let nf = n.max(1) as f64;
    println!(
        "\nlarge instances ({n} generated: mean {:.1} nodes, {:.1} pods, demand {:.0}% of free cpu; reference: {feasible} feasible, {infeasible} infeasible, {undecided} undecided at a budget of {budget} steps, {:.0} steps and {:.1} ms per instance)\n",
        nodes as f64 / nf,
        pods as f64 / nf,
        100.0 * demand / nf,
        steps as f64 / nf,
        1e3 * ref_time / nf
    );
    println!(
        "| mode | placed | fraction of feasible | placed of undecided | µs / instance (mean) | µs / unplaced instance (mean) | µs (max) |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    for (i, (name, _)) in modes.iter().enumerate() {
        let pct = 100.0 * placed[i] as f64 / feasible.max(1) as f64;
        println!(
            "| {name} | {} | {pct:.2}% | {} | {:.0} | {:.0} | {:.0} |",
            placed[i],
            placed_undecided[i],
            micros[i] / nf,
            micros_failed[i].0 / micros_failed[i].1.max(1) as f64,
            micros_max[i]
        );
    }
    if !misses.is_empty() {
        println!("\nfeasible instances the default mode misses:");
        for m in &misses {
            println!("- {m}");
        }
    }
}
