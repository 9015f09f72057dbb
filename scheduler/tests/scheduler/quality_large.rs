//! The larger placement-quality instances: the generator's ranges, the exact reference on hand-checked
//! instances and against an unpruned search, and the default mode on a fixed seed set.

#[path = "common/reference_large.rs"]
mod reference_large;

use kwas_scheduler::core::{Scheduler, SchedulerConfig};
use reference_large::{
    DEFAULT_BUDGET, Group, Instance, Key, Node, Params, Verdict, decide, decide_with, generate, root_unit, to_snapshot,
    violation, violation_of,
};

/// A cluster of `racks` racks (two per block) of `per_rack` nodes with `cpu` millis and `slots` slots.
fn cluster(racks: usize, per_rack: usize, cpu: i64, slots: i64) -> Instance {
    Instance {
        seed: 0,
        nodes: (0..racks * per_rack)
            .map(|i| Node {
                cpu,
                slots,
                rack: Some(i / per_rack),
            })
            .collect(),
        rack_block: (0..racks).map(|r| r / 2).collect(),
        blocks: racks.div_ceil(2),
        groups: Vec::new(),
        running: Vec::new(),
    }
}

fn leaf(name: &str, parent: Option<usize>, min: Option<u32>, topo: Option<Key>, pods: &[i64]) -> Group {
    Group {
        name: name.into(),
        parent,
        children: Vec::new(),
        composite: false,
        min,
        topo,
        pods: pods.to_vec(),
    }
}

fn composite(name: &str, parent: Option<usize>, min: Option<u32>, topo: Option<Key>, children: &[usize]) -> Group {
    Group {
        name: name.into(),
        parent,
        children: children.to_vec(),
        composite: true,
        min,
        topo,
        pods: Vec::new(),
    }
}

fn verdict(inst: &Instance) -> Verdict {
    let (v, _) = decide(inst, DEFAULT_BUDGET);
    if let Verdict::Feasible(w) = &v {
        assert_eq!(violation_of(inst, w), None, "the reference's witness breaks a rule");
    }
    v
}

#[test]
fn quality_large_generator_stays_in_its_ranges() {
    for seed in 0..200 {
        let inst = generate(seed, &Params::LARGE);
        assert_eq!(inst, generate(seed, &Params::LARGE), "seed {seed} is not reproducible");
        assert!(
            (8..=128).contains(&inst.nodes.len()),
            "seed {seed}: {} nodes",
            inst.nodes.len()
        );
        assert!((2..=4).contains(&inst.blocks));
        for b in 0..inst.blocks {
            let racks = inst.rack_block.iter().filter(|x| **x == b).count();
            assert!((2..=4).contains(&racks), "seed {seed}: block {b} has {racks} racks");
        }
        assert!(inst.depth() <= 4, "seed {seed}: depth {}", inst.depth());
        assert!(inst.groups.iter().all(|g| g.pods.len() <= 16));
        assert!(
            inst.groups
                .iter()
                .all(|g| g.min.is_none_or(|m| m as usize <= g.pods.len().max(g.children.len())))
        );
        assert!(!inst.running.is_empty(), "seed {seed}: no node is partly used");
    }
    // Sizes spread over the whole range, demand around the 35-90%.
    let sizes: Vec<usize> = (0..200).map(|s| generate(s, &Params::LARGE).nodes.len()).collect();
    assert!(sizes.iter().any(|n| *n < 16) && sizes.iter().any(|n| *n > 100));
    let mean = (0..200)
        .map(|s| generate(s, &Params::LARGE).demand_fraction())
        .sum::<f64>()
        / 200.0;
    assert!((0.35..0.9).contains(&mean), "mean demand {mean}");
}

#[test]
fn quality_large_reference_on_hand_checked_instances() {
    // Four racks of two 4-cpu nodes; a rack-constrained gang of two 4-cpu pods fits an empty rack.
    let mut inst = cluster(4, 2, 4000, 4);
    inst.groups = vec![leaf("g", None, Some(2), Some(Key::Rack), &[4000, 4000])];
    assert!(verdict(&inst).is_feasible());
    // With one node of every rack partly used, no rack holds it (though the cluster has 4 free nodes).
    inst.running = vec![(0, 1000), (2, 500), (4, 250), (6, 1000)];
    assert_eq!(verdict(&inst), Verdict::Infeasible);
    // Without the constraint it fits, on two nodes of different racks.
    inst.groups[0].topo = None;
    assert!(verdict(&inst).is_feasible());
    // Slots bind: one slot left on every node, three pods in one rack cannot fit.
    let mut inst = cluster(4, 2, 8000, 1);
    inst.groups = vec![leaf("g", None, Some(3), Some(Key::Rack), &[100, 100, 100])];
    assert_eq!(verdict(&inst), Verdict::Infeasible);
    // A block (two racks, four slots) does.
    inst.groups[0].topo = Some(Key::Block);
    assert!(verdict(&inst).is_feasible());
    inst.groups[0].topo = None;
    assert!(verdict(&inst).is_feasible());
    // Basic needs one pod; a gang's minimum takes the smallest pods.
    let mut inst = cluster(2, 1, 2000, 8);
    inst.groups = vec![leaf("g", None, None, Some(Key::Rack), &[3000, 1500])];
    assert!(verdict(&inst).is_feasible());
    inst.groups = vec![leaf("g", None, Some(2), None, &[3000, 1500, 1500])];
    assert!(verdict(&inst).is_feasible());
    inst.groups = vec![leaf("g", None, Some(2), Some(Key::Block), &[3000, 1500, 1500])];
    assert!(verdict(&inst).is_feasible());
    inst.groups = vec![leaf("g", None, Some(3), None, &[3000, 1500, 1500])];
    assert_eq!(verdict(&inst), Verdict::Infeasible);
    // A block-constrained composite of two rack-constrained gangs, each filling a rack: one block has
    // two free racks, the other only one.
    let mut inst = cluster(4, 2, 4000, 4);
    inst.running = vec![(6, 4000)];
    inst.groups = vec![
        composite("root", None, Some(2), Some(Key::Block), &[1, 2]),
        leaf("a", Some(0), Some(2), Some(Key::Rack), &[4000, 4000]),
        leaf("b", Some(0), Some(2), Some(Key::Rack), &[4000, 4000]),
    ];
    assert!(verdict(&inst).is_feasible());
    inst.running.push((0, 4000));
    assert_eq!(verdict(&inst), Verdict::Infeasible);
    // A basic composite needs only one of them; minGroupCount 1 likewise.
    inst.groups[0].min = None;
    assert!(verdict(&inst).is_feasible());
    // Four levels: root > block composite > rack composite > leaves; the rack composite needs both
    // leaves in one rack (3 + 2.5 + 2.5 cpu): a rack with 7.5 of its 10 cpu free does not hold them,
    // an empty one does (2.5 + 2.5 on one node, 3 on the other).
    let mut inst = cluster(4, 2, 5000, 4);
    inst.running = vec![(0, 2500), (2, 2500), (4, 2500), (6, 2500)];
    inst.groups = vec![
        composite("root", None, Some(1), None, &[1]),
        composite("blk", Some(0), Some(1), Some(Key::Block), &[2]),
        composite("rk", Some(1), Some(2), Some(Key::Rack), &[3, 4]),
        leaf("x", Some(2), Some(1), None, &[3000]),
        leaf("y", Some(2), Some(2), None, &[2500, 2500]),
    ];
    assert_eq!(verdict(&inst), Verdict::Infeasible);
    inst.running.pop();
    assert!(verdict(&inst).is_feasible());
}

/// The pruned search decides like a plain exhaustive search on small instances of the same generator.
#[test]
fn quality_large_pruning_loses_no_placement() {
    let (mut agreed, mut infeasible) = (0, 0);
    for seed in 0..400 {
        let inst = generate(seed, &Params::SMALL);
        let (pruned, _) = decide(&inst, 1_000_000);
        let (plain, _) = decide_with(&inst, 300_000, false);
        if plain == Verdict::Undecided {
            continue;
        }
        assert_eq!(pruned.is_feasible(), plain.is_feasible(), "seed {seed}: {inst:?}");
        assert_ne!(pruned, Verdict::Undecided, "seed {seed}");
        agreed += 1;
        infeasible += usize::from(plain == Verdict::Infeasible);
    }
    assert!(agreed >= 350, "only {agreed} instances decided by the plain search");
    assert!(
        infeasible >= 20,
        "only {infeasible} infeasible instances: the check is too easy"
    );
}

/// On a fixed seed set the default mode places every instance the reference finds feasible, and every
/// placement is valid; the default as it was before issue 26 (creation order, Basic composites placed
/// whole in the first pass, no retry) misses some of them.
#[test]
fn quality_large_default_places_every_feasible_instance() {
    let before = SchedulerConfig {
        demand_ordered_minimums: false,
        scoring_retry: false,
        ..SchedulerConfig::default()
    };
    let (mut feasible, mut missed_before) = (0, Vec::new());
    for seed in 0..70 {
        let inst = generate(seed, &Params::LARGE);
        let verdict = verdict(&inst);
        let run = |cfg: SchedulerConfig| {
            let mut snap = to_snapshot(&inst);
            Scheduler::new(cfg).schedule(&mut snap, &root_unit(&inst))
        };
        let out = run(SchedulerConfig::default());
        if out.is_scheduled() {
            assert_eq!(violation(&inst, &out.assignments), None, "seed {seed}");
            assert_ne!(
                verdict,
                Verdict::Infeasible,
                "seed {seed}: placed, but the reference says infeasible"
            );
        }
        if verdict.is_feasible() {
            feasible += 1;
            assert!(
                out.is_scheduled(),
                "seed {seed}: feasible, not placed: {:?}",
                out.verdict
            );
            if !run(before).is_scheduled() {
                missed_before.push(seed);
            }
        }
    }
    assert!(feasible >= 55, "{feasible}");
    assert_eq!(missed_before, vec![2, 51, 64]);
}

/// Prints one large instance, the reference's answer and the default mode's statuses, to see where a
/// miss comes from: `SEED=1165 cargo test -p kwas-scheduler --test scheduler quality_large_explain --
/// --ignored --nocapture`.
#[test]
#[ignore]
fn quality_large_explain() {
    let seed: u64 = std::env::var("SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0);
    let inst = generate(seed, &Params::LARGE);
    let (free_cpu, free_slots) = inst.free();
    for (i, n) in inst.nodes.iter().enumerate() {
        println!(
            "node {i}: rack {:?}, block {:?}, {}m / {} slots, free {}m / {}",
            n.rack,
            inst.block_of(i),
            n.cpu,
            n.slots,
            free_cpu[i],
            free_slots[i]
        );
    }
    for (i, g) in inst.groups.iter().enumerate() {
        let mut depth = 0;
        let mut up = g.parent;
        while let Some(p) = up {
            depth += 1;
            up = inst.groups[p].parent;
        }
        let kind = if g.composite { "composite" } else { "leaf" };
        println!(
            "{}g{i} {kind} min {:?} topology {:?} pods {:?}",
            "  ".repeat(depth),
            g.min,
            g.topo,
            g.pods
        );
    }
    let (v, steps) = decide(&inst, DEFAULT_BUDGET);
    println!("reference ({steps} steps): {v:?}");
    let mut snap = to_snapshot(&inst);
    let out = Scheduler::new(SchedulerConfig::default()).schedule(&mut snap, &root_unit(&inst));
    println!("{:?}\n{:?}", out.verdict, out.stats);
    for g in &out.groups {
        println!(
            "{} {:?} {:?}: {}",
            g.group,
            g.code,
            g.domain.as_ref().map(|d| &d.value),
            g.message
        );
    }
}
