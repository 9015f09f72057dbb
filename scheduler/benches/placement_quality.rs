//! Placement quality: the fraction of feasible random instances each algorithm mode places.
//!
//! `cargo bench -p kwas-scheduler --bench placement_quality` (add `-- 5000` for more instances).
//!
//! Instances are small clusters (3-5 nodes in 2 blocks and up to 4 racks, some capacity in use) with
//! one random hierarchy (up to 3 levels, gang or basic policies, rack / block constraints). The exact
//! reference decides which instances have a placement; each mode is run on those.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/scheduler/common/reference.rs"]
mod reference;

use kwas_scheduler::core::{PlacementLimit, Scheduler, SchedulerConfig};
use reference::{generate, placement_exists, root_unit, to_snapshot};

fn main() {
    let n: u64 = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(2000);
    let alpha = SchedulerConfig::alpha();
    let modes: Vec<(&str, SchedulerConfig)> = vec![
        ("alpha (greedy, KEP-6012)", alpha),
        (
            "+ admissibility pre-check",
            SchedulerConfig {
                admissibility_precheck: true,
                ..alpha
            },
        ),
        (
            "+ minimums first",
            SchedulerConfig {
                secure_minimums_first: true,
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
        ("all improvements (default)", SchedulerConfig::default()),
    ];
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
