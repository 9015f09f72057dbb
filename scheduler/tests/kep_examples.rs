//! KEP-6012's worked examples and the PodGroup cycle's basic promises.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "scheduler/common/mod.rs"]
mod common;

use common::*;
use kwas_scheduler::core::testing::GroupBuilder;
use kwas_scheduler::core::{Code, GroupKey, SchedulerConfig, Snapshot, Verdict};

/// block-A: rack-A1 (3 free slots), rack-A2 (5); block-B: rack-B1 (5), rack-B2 (5). A root gang CPG
/// (minGroupCount 2, block) with PG-1 and PG-2 (gangs of 5, rack).
fn worked_example() -> Snapshot {
    let mut snap = Snapshot::new();
    for (block, rack, slots) in [
        ("block-A", "rack-A1", 3),
        ("block-A", "rack-A2", 5),
        ("block-B", "rack-B1", 5),
        ("block-B", "rack-B2", 5),
    ] {
        add_nodes(&mut snap, rack, slots, "1", &[(BLOCK, block), (RACK, rack)]);
    }
    cpg(&mut snap, GroupBuilder::gang(NS, "cpg-root", 2).topology(BLOCK));
    pg(
        &mut snap,
        GroupBuilder::gang(NS, "pg-1", 5)
            .parent("cpg-root")
            .topology(RACK)
            .created(1),
    );
    pg(
        &mut snap,
        GroupBuilder::gang(NS, "pg-2", 5)
            .parent("cpg-root")
            .topology(RACK)
            .created(2),
    );
    add_pods(&mut snap, "pg-1", 5, "1");
    add_pods(&mut snap, "pg-2", 5, "1");
    snap
}

#[test]
fn worked_example_ends_in_block_b_rack_b1_rack_b2() {
    for cfg in [SchedulerConfig::alpha(), SchedulerConfig::default()] {
        let mut snap = worked_example();
        let out = schedule(&mut snap, cfg, &composite_unit("cpg-root"));
        assert_eq!(out.verdict, Verdict::Scheduled, "{cfg:?}: {out:#?}");
        assert_eq!(out.assignments.len(), 10);
        let domain = |name: &str, kind_composite: bool| {
            let key = if kind_composite {
                GroupKey::composite(NS, name)
            } else {
                GroupKey::pod_group(NS, name)
            };
            out.groups
                .iter()
                .find(|g| g.group == key)
                .and_then(|g| g.domain.clone())
                .map(|d| d.value)
        };
        assert_eq!(domain("cpg-root", true).as_deref(), Some("block-B"));
        assert_eq!(domain("pg-1", false).as_deref(), Some("rack-B1"));
        assert_eq!(domain("pg-2", false).as_deref(), Some("rack-B2"));
        assert_eq!(domains_of(&snap, &out.assignments, "pg-1", RACK), vec!["rack-B1"]);
        assert_eq!(domains_of(&snap, &out.assignments, "pg-2", RACK), vec!["rack-B2"]);
        assert!(out.groups.iter().all(|g| g.satisfied));
    }
}

#[test]
fn worked_example_block_a_alone_is_infeasible_without_backtracking_alternatives() {
    // Only block-A exists: PG-1 takes rack-A2 (the only rack with 5 slots), PG-2 has nowhere to go.
    let mut snap = worked_example();
    for rack in ["rack-B1", "rack-B2"] {
        for i in 0..5 {
            snap.remove_node(&format!("{rack}-{i}"));
        }
    }
    let out = schedule(&mut snap, SchedulerConfig::alpha(), &composite_unit("cpg-root"));
    match &out.verdict {
        Verdict::Unschedulable { code, message } => {
            assert_eq!(*code, Code::Unschedulable);
            // Aggregated, naming the member that stopped the gang and why in each placement it tried.
            assert!(
                message.starts_with("0/1 kwas.dev/block placements are available: kwas.dev/block=block-A: "),
                "{message}"
            );
            assert!(message.contains("minGroupCount (2) cannot be satisfied"), "{message}");
            assert!(
                message.contains("PodGroup ns/pg-2: 0/2 kwas.dev/rack placements are available"),
                "{message}"
            );
            assert!(message.contains("Insufficient cpu"), "{message}");
            assert!(!message.contains("first placement status"), "{message}");
        }
        v => panic!("unexpected {v:?}"),
    }
    assert!(out.assignments.is_empty());
    assert!(out.preemption_may_help);
    // Nothing is left behind in the snapshot.
    assert_eq!(snap.node_requested("rack-A2-0").unwrap().get("cpu"), None);
}

/// Root CPG (minGroupCount 2) with CPG-1 (minGroupCount 2, one child PG-11 of 100 pods), PG-2, PG-3.
fn inadmissible_example() -> Snapshot {
    let mut snap = Snapshot::new();
    add_nodes(&mut snap, "node", 10, "20", &[]);
    cpg(&mut snap, GroupBuilder::gang(NS, "root", 2));
    cpg(&mut snap, GroupBuilder::gang(NS, "cpg-1", 2).parent("root").created(1));
    pg(
        &mut snap,
        GroupBuilder::gang(NS, "pg-11", 100).parent("cpg-1").created(2),
    );
    pg(&mut snap, GroupBuilder::gang(NS, "pg-2", 3).parent("root").created(3));
    pg(&mut snap, GroupBuilder::gang(NS, "pg-3", 3).parent("root").created(4));
    add_pods(&mut snap, "pg-11", 100, "1");
    add_pods(&mut snap, "pg-2", 3, "1");
    add_pods(&mut snap, "pg-3", 3, "1");
    snap
}

#[test]
fn inadmissible_child_groups_example() {
    // Alpha: PG-11's 100 pods are simulated, then CPG-1 turns UnschedulableAndUnresolvable, the root
    // stays Wait and succeeds with PG-2 and PG-3.
    let mut snap = inadmissible_example();
    let out = schedule(&mut snap, SchedulerConfig::alpha(), &composite_unit("root"));
    assert_eq!(out.verdict, Verdict::Scheduled, "{out:#?}");
    let counts = per_group(&out.assignments);
    assert_eq!(counts.get("pg-2"), Some(&3));
    assert_eq!(counts.get("pg-3"), Some(&3));
    assert_eq!(counts.get("pg-11"), None);
    let cpg1 = out
        .groups
        .iter()
        .find(|g| g.group == GroupKey::composite(NS, "cpg-1"))
        .unwrap();
    assert_eq!(cpg1.code, Some(Code::UnschedulableAndUnresolvable));
    assert!(!cpg1.satisfied);
    assert!(out.stats.pods_tried >= 106, "alpha simulates PG-11: {:?}", out.stats);

    // With the pre-check the inadmissible subtree is skipped without placing a pod.
    let mut snap = inadmissible_example();
    let mut cfg = SchedulerConfig::alpha();
    cfg.admissibility_precheck = true;
    let out = schedule(&mut snap, cfg, &composite_unit("root"));
    assert_eq!(out.verdict, Verdict::Scheduled);
    assert_eq!(out.assignments.len(), 6);
    assert_eq!(out.stats.pods_tried, 6, "{:?}", out.stats);
    assert!(out.stats.subtrees_skipped >= 1);
}

#[test]
fn gang_is_all_or_nothing() {
    let mut snap = Snapshot::new();
    add_nodes(&mut snap, "node", 2, "2", &[]);
    pg(&mut snap, GroupBuilder::gang(NS, "gang", 5));
    add_pods(&mut snap, "gang", 5, "1");
    let out = schedule(&mut snap, SchedulerConfig::default(), &group_unit("gang"));
    match &out.verdict {
        Verdict::Unschedulable { code, message } => {
            assert_eq!(*code, Code::Unschedulable);
            assert_eq!(
                message,
                "minCount (5) cannot be satisfied: 4 scheduled, 0 remaining: 0/2 nodes are available: 2 Insufficient cpu."
            );
        }
        v => panic!("{v:?}"),
    }
    assert!(out.assignments.is_empty());
    assert_eq!(out.unschedulable_pods.len(), 5);
    assert!(
        out.unschedulable_pods
            .iter()
            .any(|p| p.message == "0/2 nodes are available: 2 Insufficient cpu."),
        "{:?}",
        out.unschedulable_pods
    );

    // minCount 4 of 5: four placed, the fifth stays pending.
    let mut snap = Snapshot::new();
    add_nodes(&mut snap, "node", 2, "2", &[]);
    pg(&mut snap, GroupBuilder::gang(NS, "gang", 4));
    add_pods(&mut snap, "gang", 5, "1");
    let out = schedule(&mut snap, SchedulerConfig::default(), &group_unit("gang"));
    assert!(out.is_scheduled());
    assert_eq!(out.assignments.len(), 4);
    assert_eq!(out.unschedulable_pods.len(), 1);
    assert!(
        !out.preemption_may_help,
        "first cycle: the policy is satisfied, nothing ran before"
    );
}

#[test]
fn gang_that_can_never_fill_is_unresolvable() {
    let mut snap = Snapshot::new();
    add_nodes(&mut snap, "node", 4, "8", &[]);
    pg(&mut snap, GroupBuilder::gang(NS, "gang", 5));
    add_pods(&mut snap, "gang", 3, "1");
    let out = schedule(&mut snap, SchedulerConfig::alpha(), &group_unit("gang"));
    assert_eq!(
        out.verdict,
        Verdict::Unschedulable {
            code: Code::UnschedulableAndUnresolvable,
            message: "minCount (5) cannot be satisfied: 1 scheduled, 2 remaining".into()
        }
    );
    assert!(!out.preemption_may_help);
}

#[test]
fn bin_packing_fills_nodes_in_name_order_and_spreading_spreads() {
    let mut snap = Snapshot::new();
    add_nodes(&mut snap, "node", 3, "4", &[]);
    pg(&mut snap, GroupBuilder::gang(NS, "gang", 4));
    add_pods(&mut snap, "gang", 4, "1");
    let out = schedule(&mut snap, SchedulerConfig::default(), &group_unit("gang"));
    assert!(
        out.assignments.iter().all(|a| a.node == "node-0"),
        "{:?}",
        out.assignments
    );

    let cfg = SchedulerConfig {
        scoring: kwas_scheduler::core::ScoringStrategy::LeastAllocated,
        ..SchedulerConfig::default()
    };
    let out = schedule(&mut snap, cfg, &group_unit("gang"));
    let mut nodes: Vec<&str> = out.assignments.iter().map(|a| a.node.as_str()).collect();
    nodes.sort();
    assert_eq!(nodes, vec!["node-0", "node-0", "node-1", "node-2"]);
}

#[test]
fn worked_example_outcome_snapshot() {
    let mut snap = worked_example();
    let out = schedule(&mut snap, SchedulerConfig::alpha(), &composite_unit("cpg-root"));
    insta::assert_debug_snapshot!("worked_example_scheduled", out);
    for rack in ["rack-B1", "rack-B2"] {
        for i in 0..5 {
            snap.remove_node(&format!("{rack}-{i}"));
        }
    }
    let out = schedule(&mut snap, SchedulerConfig::alpha(), &composite_unit("cpg-root"));
    insta::assert_debug_snapshot!("worked_example_block_a_only", out);
}
