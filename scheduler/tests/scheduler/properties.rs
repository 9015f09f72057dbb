//! Property tests over random clusters and hierarchies, checked against an exact reference.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::reference::{Inst, generate, placement_exists, root_unit, to_snapshot, violation};
use crate::common::{assert_no_overcommit, commit};
use kwas_scheduler::core::{PlacementLimit, Scheduler, SchedulerConfig, Verdict};
use proptest::prelude::*;

fn configs() -> Vec<(&'static str, SchedulerConfig)> {
    let alpha = SchedulerConfig::alpha();
    vec![
        ("alpha", alpha),
        (
            "precheck",
            SchedulerConfig {
                admissibility_precheck: true,
                ..alpha
            },
        ),
        (
            "minimums-first",
            SchedulerConfig {
                secure_minimums_first: true,
                ..alpha
            },
        ),
        (
            "backtracking",
            SchedulerConfig {
                backtracking_limit: 16,
                ..alpha
            },
        ),
        (
            "capped",
            SchedulerConfig {
                placement_limit: PlacementLimit::Percentage(50),
                ..alpha
            },
        ),
        ("all", SchedulerConfig::default()),
    ]
}

fn check_instance(inst: &Inst) {
    let exists = placement_exists(inst);
    for (name, cfg) in configs() {
        let mut snap = to_snapshot(inst);
        let out = Scheduler::new(cfg).schedule(&mut snap, &root_unit(inst));
        match &out.verdict {
            Verdict::Scheduled => {
                assert!(
                    exists,
                    "{name}: scheduled an instance the reference says is infeasible: {inst:#?}\n{out:#?}"
                );
                if let Some(v) = violation(inst, &out.assignments) {
                    panic!("{name}: {v}\n{inst:#?}\n{out:#?}");
                }
                commit(&mut snap, &out);
                assert_no_overcommit(&snap);
                for g in &out.groups {
                    if g.satisfied {
                        assert!(g.code.is_some());
                    }
                }
            }
            Verdict::Unschedulable { .. } => {
                assert!(out.assignments.is_empty());
            }
            v => panic!("{name}: unexpected verdict {v:?}"),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// No node overcommitted; a gang gets at least minCount pods or none; a gang composite gets at least
    /// minGroupCount satisfied children or nothing; every topology-constrained group sits in one domain
    /// of its key (inside its parent's); a Success is only ever claimed when a placement exists.
    #[test]
    fn placements_respect_every_rule(seed in any::<u64>(), tight in any::<bool>()) {
        check_instance(&generate(seed, tight));
    }
}

#[test]
fn the_snapshot_is_unchanged_after_a_cycle() {
    for seed in 0..50 {
        let inst = generate(seed, true);
        let mut snap = to_snapshot(&inst);
        let before: Vec<_> = snap.node_names().map(|n| snap.node_requested(n).unwrap()).collect();
        let _ = Scheduler::new(SchedulerConfig::default()).schedule(&mut snap, &root_unit(&inst));
        let _ = Scheduler::new(SchedulerConfig::default()).preempt(&mut snap, &root_unit(&inst));
        let after: Vec<_> = snap.node_names().map(|n| snap.node_requested(n).unwrap()).collect();
        assert_eq!(before, after, "seed {seed}");
    }
}
