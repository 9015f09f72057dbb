//! Scenario tests: policies, the algorithm switches, topology pinning, filters, hierarchy checks,
//! readiness, snapshot input errors and the assume/forget lifecycle.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use k8s_openapi::api::core::v1::{Affinity, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm};
use kwas_scheduler::core::testing::{GroupBuilder, bound, node_with, pod, pod_with, with_priority, with_taint};
use kwas_scheduler::core::{
    Code, GroupKey, HierarchyError, Journal, PodKey, PodState, Readiness, Scheduler, SchedulerConfig, Snapshot,
    SnapshotError, UnitKey, Verdict,
};

fn status<'a>(out: &'a kwas_scheduler::core::CycleOutcome, key: &GroupKey) -> &'a kwas_scheduler::core::GroupOutcome {
    out.groups.iter().find(|g| &g.group == key).unwrap()
}

#[test]
fn a_basic_child_under_a_gang_parent_counts_once_one_pod_is_placed() {
    // Root gang (2 of 2): "prep" is Basic with 3 pods of which only 1 fits next to the gang "train".
    let mut snap = Snapshot::new();
    add_nodes(&mut snap, "node", 3, "1", &[]);
    cpg(&mut snap, GroupBuilder::gang(NS, "root", 2));
    pg(&mut snap, GroupBuilder::basic(NS, "prep").parent("root").created(1));
    pg(&mut snap, GroupBuilder::gang(NS, "train", 2).parent("root").created(2));
    add_pods(&mut snap, "prep", 3, "1");
    add_pods(&mut snap, "train", 2, "1");
    // Minimums first: prep gets its one pod, train its two; prep's extras find no room.
    let out = schedule(&mut snap, SchedulerConfig::default(), &composite_unit("root"));
    assert!(out.is_scheduled(), "{out:#?}");
    let counts = per_group(&out.assignments);
    assert_eq!(counts.get("prep"), Some(&1));
    assert_eq!(counts.get("train"), Some(&2));
    assert!(status(&out, &GroupKey::pod_group(NS, "prep")).satisfied);
    assert_eq!(out.unschedulable_pods.len(), 2);

    // A Basic child with no placeable pod is not satisfied: the gang parent fails.
    let mut snap = Snapshot::new();
    add_nodes(&mut snap, "node", 2, "1", &[]);
    cpg(&mut snap, GroupBuilder::gang(NS, "root", 2));
    pg(&mut snap, GroupBuilder::basic(NS, "prep").parent("root").created(1));
    pg(&mut snap, GroupBuilder::gang(NS, "train", 2).parent("root").created(2));
    add_pods(&mut snap, "prep", 2, "4");
    add_pods(&mut snap, "train", 2, "1");
    let out = schedule(&mut snap, SchedulerConfig::default(), &composite_unit("root"));
    assert!(
        matches!(
            out.verdict,
            Verdict::Unschedulable {
                code: Code::Unschedulable,
                ..
            }
        ),
        "{out:#?}"
    );
}

#[test]
fn a_basic_root_schedules_children_independently() {
    let mut snap = Snapshot::new();
    add_nodes(&mut snap, "node", 2, "1", &[]);
    cpg(&mut snap, GroupBuilder::basic(NS, "root"));
    pg(&mut snap, GroupBuilder::gang(NS, "big", 3).parent("root").created(1));
    pg(&mut snap, GroupBuilder::gang(NS, "small", 2).parent("root").created(2));
    add_pods(&mut snap, "big", 3, "1");
    add_pods(&mut snap, "small", 2, "1");
    let out = schedule(&mut snap, SchedulerConfig::alpha(), &composite_unit("root"));
    assert!(out.is_scheduled());
    assert_eq!(per_group(&out.assignments).get("small"), Some(&2));
    let big = status(&out, &GroupKey::pod_group(NS, "big"));
    assert_eq!(big.code, Some(Code::Unschedulable));
    assert!(!big.satisfied);
    assert_eq!(big.placed, 0);
}

#[test]
fn minimums_first_prevents_resource_stealing() {
    // Five slots. "first" (gang 2, 4 pods) would greedily take four; "second" needs three.
    let build = || {
        let mut snap = Snapshot::new();
        add_nodes(&mut snap, "node", 5, "1", &[]);
        cpg(&mut snap, GroupBuilder::gang(NS, "root", 2));
        pg(&mut snap, GroupBuilder::gang(NS, "first", 2).parent("root").created(1));
        pg(&mut snap, GroupBuilder::gang(NS, "second", 3).parent("root").created(2));
        add_pods(&mut snap, "first", 4, "1");
        add_pods(&mut snap, "second", 3, "1");
        snap
    };
    let mut snap = build();
    let out = schedule(&mut snap, SchedulerConfig::alpha(), &composite_unit("root"));
    assert!(
        !out.is_scheduled(),
        "greedy alpha lets the first sibling steal: {out:#?}"
    );
    let mut cfg = SchedulerConfig::alpha();
    cfg.secure_minimums_first = true;
    let mut snap = build();
    let out = schedule(&mut snap, cfg, &composite_unit("root"));
    assert!(out.is_scheduled(), "{out:#?}");
    let counts = per_group(&out.assignments);
    assert_eq!((counts["first"], counts["second"]), (2, 3));
}

#[test]
fn backtracking_finds_what_greedy_misses() {
    // One block, racks of 5 and 3 slots. "first" (gang 3 of 5 pods, rack) greedily takes the big rack
    // with all five pods; "second" (gang 5, rack) is then stuck. Backtracking moves "first".
    let build = || {
        let mut snap = Snapshot::new();
        add_nodes(&mut snap, "big", 5, "1", &[(RACK, "rack-big")]);
        add_nodes(&mut snap, "small", 3, "1", &[(RACK, "rack-small")]);
        cpg(&mut snap, GroupBuilder::gang(NS, "root", 2));
        pg(
            &mut snap,
            GroupBuilder::gang(NS, "first", 3)
                .parent("root")
                .topology(RACK)
                .created(1),
        );
        pg(
            &mut snap,
            GroupBuilder::gang(NS, "second", 5)
                .parent("root")
                .topology(RACK)
                .created(2),
        );
        add_pods(&mut snap, "first", 5, "1");
        add_pods(&mut snap, "second", 5, "1");
        snap
    };
    let mut snap = build();
    assert!(!schedule(&mut snap, SchedulerConfig::alpha(), &composite_unit("root")).is_scheduled());
    let mut cfg = SchedulerConfig::alpha();
    cfg.backtracking_limit = 4;
    let mut snap = build();
    let out = schedule(&mut snap, cfg, &composite_unit("root"));
    assert!(out.is_scheduled(), "{out:#?}");
    assert_eq!(out.stats.backtracks, 1);
    assert_eq!(domains_of(&snap, &out.assignments, "first", RACK), vec!["rack-small"]);
    assert_eq!(domains_of(&snap, &out.assignments, "second", RACK), vec!["rack-big"]);
}

#[test]
fn running_pods_pin_their_groups_domain() {
    let mut snap = Snapshot::new();
    add_nodes(&mut snap, "a", 2, "4", &[(RACK, "rack-a")]);
    add_nodes(&mut snap, "b", 2, "4", &[(RACK, "rack-b")]);
    // rack-a is tighter (bin packing would choose it), but the group already runs in rack-b.
    snap.upsert_pod(&bound(pod("other", "filler", "3", "1Gi"), "a-0"))
        .unwrap();
    pg(&mut snap, GroupBuilder::gang(NS, "g", 1).topology(RACK));
    snap.upsert_pod(&bound(pod_with(NS, "g-0", Some("g"), &[("cpu", "1")]), "b-1"))
        .unwrap();
    for i in 1..3 {
        snap.upsert_pod(&pod_with(NS, &format!("g-{i}"), Some("g"), &[("cpu", "1")]))
            .unwrap();
    }
    let out = schedule(&mut snap, SchedulerConfig::default(), &group_unit("g"));
    assert!(out.is_scheduled());
    assert_eq!(domains_of(&snap, &out.assignments, "g", RACK), vec!["rack-b"]);
    assert_eq!(status(&out, &GroupKey::pod_group(NS, "g")).scheduled_before, 1);

    // Running pods split across racks: the constraint is already broken, nothing more is placed.
    snap.upsert_pod(&bound(pod_with(NS, "g-9", Some("g"), &[("cpu", "1")]), "a-1"))
        .unwrap();
    let out = schedule(&mut snap, SchedulerConfig::default(), &group_unit("g"));
    assert_eq!(
        out.verdict,
        Verdict::Unschedulable {
            code: Code::UnschedulableAndUnresolvable,
            message: "pods of the group already run in more than one \"kwas.dev/rack\" domain".into()
        }
    );
}

#[test]
fn running_pods_count_towards_min_count() {
    let mut snap = Snapshot::new();
    add_nodes(&mut snap, "node", 1, "3", &[]);
    pg(&mut snap, GroupBuilder::gang(NS, "g", 3));
    for i in 0..2 {
        snap.upsert_pod(&bound(
            pod_with(NS, &format!("g-{i}"), Some("g"), &[("cpu", "1")]),
            "node-0",
        ))
        .unwrap();
    }
    snap.upsert_pod(&pod_with(NS, "g-2", Some("g"), &[("cpu", "1")]))
        .unwrap();
    let out = schedule(&mut snap, SchedulerConfig::alpha(), &group_unit("g"));
    assert!(out.is_scheduled());
    assert_eq!(out.assignments.len(), 1);
}

fn finished(mut pod: k8s_openapi::api::core::v1::Pod, node: &str, phase: &str) -> k8s_openapi::api::core::v1::Pod {
    pod = bound(pod, node);
    pod.status.get_or_insert_default().phase = Some(phase.into());
    pod
}

#[test]
fn succeeded_pods_keep_counting_towards_min_count_and_failed_ones_do_not() {
    // A gang Job with more completions than parallelism: its first wave of 3 ran and succeeded, now the
    // 4th pod runs alone (the gang was secured and its members finished, not lost).
    let mut snap = Snapshot::new();
    add_nodes(&mut snap, "node", 1, "3", &[]);
    pg(&mut snap, GroupBuilder::gang(NS, "g", 3));
    for i in 0..3 {
        let p = pod_with(NS, &format!("g-{i}"), Some("g"), &[("cpu", "1")]);
        snap.upsert_pod(&bound(p.clone(), "node-0")).unwrap();
        snap.upsert_pod(&finished(p, "node-0", "Succeeded")).unwrap();
        // Repeated status updates of a finished pod count it once.
        snap.upsert_pod(&finished(
            pod_with(NS, &format!("g-{i}"), Some("g"), &[("cpu", "1")]),
            "node-0",
            "Succeeded",
        ))
        .unwrap();
    }
    assert_eq!(snap.succeeded_count(NS, "g"), 3);
    snap.upsert_pod(&pod_with(NS, "g-3", Some("g"), &[("cpu", "3")]))
        .unwrap();
    assert_eq!(snap.readiness(&group_unit("g")), Readiness::Ready);
    let out = schedule(&mut snap, SchedulerConfig::default(), &group_unit("g"));
    assert!(out.is_scheduled(), "{out:#?}");
    assert_eq!(
        node_of(&out.assignments, "g-3"),
        Some("node-0"),
        "finished pods hold no resources"
    );

    // Deleted finished pods no longer count: a new pod waits for a gang again.
    for i in 0..3 {
        assert!(snap.remove_pod(&PodKey::new(NS, format!("g-{i}"))));
    }
    assert_eq!(snap.succeeded_count(NS, "g"), 0);
    pg(&mut snap, GroupBuilder::gang(NS, "h", 2));
    for i in 0..2 {
        let p = pod_with(NS, &format!("h-{i}"), Some("h"), &[("cpu", "1")]);
        snap.upsert_pod(&finished(p, "node-0", "Failed")).unwrap();
    }
    snap.upsert_pod(&pod_with(NS, "h-2", Some("h"), &[("cpu", "1")]))
        .unwrap();
    assert_eq!(
        snap.readiness(&group_unit("h")),
        Readiness::Waiting("waiting for minCount pods from a gang to appear in scheduling queue".into()),
        "failed pods do not count: their replacements secure the gang again"
    );
}

#[test]
fn extended_resources_taints_affinity_and_cordon_filter_nodes() {
    let mut snap = Snapshot::new();
    snap.upsert_node(&node_with(
        "gpu-0",
        &[
            ("cpu", "32"),
            ("memory", "128Gi"),
            ("pods", "110"),
            ("nvidia.com/gpu", "8"),
        ],
        &[("accel", "h100")],
    ))
    .unwrap();
    snap.upsert_node(&node_with(
        "cpu-0",
        &[("cpu", "32"), ("memory", "128Gi"), ("pods", "110")],
        &[],
    ))
    .unwrap();
    snap.upsert_node(&with_taint(
        node_with(
            "gpu-tainted",
            &[
                ("cpu", "32"),
                ("memory", "128Gi"),
                ("pods", "110"),
                ("nvidia.com/gpu", "8"),
            ],
            &[("accel", "h100")],
        ),
        "dedicated",
        "infra",
        "NoSchedule",
    ))
    .unwrap();
    pg(&mut snap, GroupBuilder::gang(NS, "train", 3));
    for i in 0..3 {
        snap.upsert_pod(&pod_with(
            NS,
            &format!("train-{i}"),
            Some("train"),
            &[("cpu", "1"), ("nvidia.com/gpu", "4")],
        ))
        .unwrap();
    }
    let out = schedule(&mut snap, SchedulerConfig::default(), &group_unit("train"));
    match &out.verdict {
        Verdict::Unschedulable { code, .. } => assert_eq!(*code, Code::Unschedulable),
        v => panic!("{v:?}"),
    }
    let msg = &out
        .unschedulable_pods
        .iter()
        .find(|p| p.message.starts_with("0/3"))
        .unwrap()
        .message;
    assert_eq!(
        msg,
        "0/3 nodes are available: 2 Insufficient nvidia.com/gpu, 1 node(s) had untolerated taint {dedicated: infra}."
    );

    // Two GPU pods fit; required node affinity steers a plain pod away from GPU nodes.
    pg(&mut snap, GroupBuilder::gang(NS, "train", 2));
    let out = schedule(&mut snap, SchedulerConfig::default(), &group_unit("train"));
    assert!(out.is_scheduled());
    assert!(out.assignments.iter().all(|a| a.node == "gpu-0"));

    let mut web = pod(NS, "web", "1", "1Gi");
    web.spec.as_mut().unwrap().affinity = Some(Affinity {
        node_affinity: Some(NodeAffinity {
            required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                node_selector_terms: vec![NodeSelectorTerm {
                    match_expressions: Some(vec![NodeSelectorRequirement {
                        key: "accel".into(),
                        operator: "DoesNotExist".into(),
                        values: None,
                    }]),
                    match_fields: None,
                }],
            }),
            ..Default::default()
        }),
        ..Default::default()
    });
    snap.upsert_pod(&web).unwrap();
    let out = Scheduler::default().schedule(&mut snap, &UnitKey::Pod(PodKey::new(NS, "web")));
    assert_eq!(out.assignments[0].node, "cpu-0");

    // Cordon it: nowhere left.
    let mut cordoned = node_with("cpu-0", &[("cpu", "32"), ("memory", "128Gi"), ("pods", "110")], &[]);
    cordoned.spec.as_mut().unwrap().unschedulable = Some(true);
    snap.upsert_node(&cordoned).unwrap();
    let out = Scheduler::default().schedule(&mut snap, &UnitKey::Pod(PodKey::new(NS, "web")));
    assert_eq!(
        out.unschedulable_pods[0].message,
        "0/3 nodes are available: 2 node(s) didn't match Pod's node affinity/selector, 1 node(s) were unschedulable."
    );
}

#[test]
fn invalid_hierarchies_are_rejected_with_a_reason() {
    let invalid = |snap: &mut Snapshot, unit: &UnitKey| match Scheduler::default().schedule(snap, unit).verdict {
        Verdict::Invalid { reason, message } => (reason, message),
        v => panic!("{v:?}"),
    };

    // Cycle.
    let mut snap = Snapshot::new();
    cpg(&mut snap, GroupBuilder::gang(NS, "a", 1).parent("b"));
    cpg(&mut snap, GroupBuilder::gang(NS, "b", 1).parent("a"));
    pg(&mut snap, GroupBuilder::gang(NS, "leaf", 1).parent("a"));
    add_pods(&mut snap, "leaf", 1, "1");
    match snap.unit_of(&PodKey::new(NS, "leaf-0")) {
        Err(Readiness::Invalid(HierarchyError::Cycle(path))) => {
            assert_eq!(
                path,
                vec!["CompositePodGroup a", "CompositePodGroup b", "CompositePodGroup a"]
            );
        }
        r => panic!("{r:?}"),
    }

    // Depth 5.
    let mut snap = Snapshot::new();
    cpg(&mut snap, GroupBuilder::gang(NS, "l1", 1));
    for (c, p) in [("l2", "l1"), ("l3", "l2"), ("l4", "l3")] {
        cpg(&mut snap, GroupBuilder::gang(NS, c, 1).parent(p));
    }
    pg(&mut snap, GroupBuilder::gang(NS, "leaf", 1).parent("l4"));
    add_pods(&mut snap, "leaf", 1, "1");
    let (reason, message) = invalid(&mut snap, &composite_unit("l1"));
    assert_eq!(reason, "Invalid");
    assert!(message.contains("maximum hierarchy depth is 4"), "{message}");
    let out = Scheduler::default().schedule(&mut snap, &composite_unit("l1"));
    let marked: Vec<String> = out.groups.iter().map(|g| g.group.name.clone()).collect();
    assert_eq!(
        marked,
        vec!["leaf", "l1", "l2", "l3", "l4"],
        "every group of the tree gets the reason"
    );
    assert_eq!(
        snap.readiness(&composite_unit("l1")),
        Readiness::Invalid(HierarchyError::TooDeep {
            group: "PodGroup leaf".into(),
            depth: 5
        })
    );

    // Two Workloads.
    let mut snap = Snapshot::new();
    cpg(&mut snap, GroupBuilder::gang(NS, "root", 1).workload("w1"));
    pg(
        &mut snap,
        GroupBuilder::gang(NS, "leaf", 1).parent("root").workload("w2"),
    );
    let (_, message) = invalid(&mut snap, &composite_unit("root"));
    assert!(
        message.contains("more than one Workload: \"w1\" and \"w2\""),
        "{message}"
    );

    // Mixed group priorities, pod priority divergence, scheduler names, disruption nesting.
    let mut snap = Snapshot::new();
    cpg(&mut snap, GroupBuilder::gang(NS, "root", 1).priority(1));
    pg(&mut snap, GroupBuilder::gang(NS, "leaf", 1).parent("root").priority(2));
    let (reason, _) = invalid(&mut snap, &composite_unit("root"));
    assert_eq!(reason, "Invalid");

    let mut snap = Snapshot::new();
    pg(&mut snap, GroupBuilder::gang(NS, "g", 1).priority(1));
    snap.upsert_pod(&with_priority(pod_with(NS, "g-0", Some("g"), &[("cpu", "1")]), 2))
        .unwrap();
    let (reason, message) = invalid(&mut snap, &group_unit("g"));
    assert_eq!(reason, "SchedulerError");
    assert_eq!(
        message,
        "all pods in a single pod group should match the priority of the pod group, got: 1 and 2"
    );

    let mut snap = Snapshot::new();
    pg(&mut snap, GroupBuilder::gang(NS, "g", 2));
    add_pods(&mut snap, "g", 1, "1");
    let mut other = pod_with(NS, "g-1", Some("g"), &[("cpu", "1")]);
    other.spec.as_mut().unwrap().scheduler_name = Some("custom-scheduler".into());
    snap.upsert_pod(&other).unwrap();
    let (_, message) = invalid(&mut snap, &group_unit("g"));
    assert_eq!(
        message,
        "all pods in a single pod group should have the same .spec.schedulerName set, got: \"default-scheduler\" and \"custom-scheduler\""
    );

    let mut snap = Snapshot::new();
    cpg(&mut snap, GroupBuilder::gang(NS, "root", 1).all());
    pg(&mut snap, GroupBuilder::gang(NS, "leaf", 1).parent("root"));
    let (_, message) = invalid(&mut snap, &composite_unit("root"));
    assert!(message.contains("disruption mode `all`"), "{message}");
}

#[test]
fn readiness_follows_pre_enqueue() {
    let mut snap = Snapshot::new();
    add_nodes(&mut snap, "node", 2, "4", &[]);
    add_pods(&mut snap, "leaf", 2, "1");
    let pod0 = PodKey::new(NS, "leaf-0");
    assert_eq!(
        snap.unit_of(&pod0),
        Err(Readiness::Waiting(
            "waiting for pods's pod group \"leaf\" to appear in scheduling queue".into()
        ))
    );
    pg(&mut snap, GroupBuilder::gang(NS, "leaf", 3).parent("root"));
    assert!(matches!(snap.unit_of(&pod0), Err(Readiness::Waiting(m)) if m.contains("\"root\"")));
    cpg(&mut snap, GroupBuilder::gang(NS, "root", 1));
    let unit = snap.unit_of(&pod0).unwrap();
    assert_eq!(unit, composite_unit("root"));
    assert_eq!(
        snap.readiness(&unit),
        Readiness::Waiting("waiting for minCount pods from a gang to appear in scheduling queue".into())
    );
    snap.upsert_pod(&pod_with(NS, "leaf-2", Some("leaf"), &[("cpu", "1")]))
        .unwrap();
    assert_eq!(snap.readiness(&unit), Readiness::Ready);
    let units = snap.pending_units();
    assert_eq!(units, vec![(unit.clone(), Readiness::Ready)]);

    let out = Scheduler::default().schedule(&mut snap, &unit);
    commit(&mut snap, &out);
    assert_eq!(snap.readiness(&unit), Readiness::NothingPending);
    assert!(snap.pending_units().is_empty());
}

#[test]
fn pending_units_come_highest_priority_first() {
    let mut snap = Snapshot::new();
    add_nodes(&mut snap, "node", 1, "4", &[]);
    snap.upsert_pod(&with_priority(pod(NS, "low", "1", "1Gi"), 1)).unwrap();
    snap.upsert_pod(&with_priority(pod(NS, "high", "1", "1Gi"), 10))
        .unwrap();
    pg(&mut snap, GroupBuilder::gang(NS, "g", 1).priority(5));
    snap.upsert_pod(&with_priority(pod_with(NS, "g-0", Some("g"), &[("cpu", "1")]), 5))
        .unwrap();
    let order: Vec<UnitKey> = snap.pending_units().into_iter().map(|(u, _)| u).collect();
    assert_eq!(
        order,
        vec![
            UnitKey::Pod(PodKey::new(NS, "high")),
            group_unit("g"),
            UnitKey::Pod(PodKey::new(NS, "low")),
        ]
    );
}

#[test]
fn bad_objects_are_rejected_whole_with_a_field_path() {
    let mut snap = Snapshot::new();
    let bad = pod_with(NS, "bad", None, &[("cpu", "two")]);
    let err = snap.upsert_pod(&bad).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Pod ns/bad: spec.containers[0].resources.requests[cpu]: Invalid value: \"two\": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    );
    assert_eq!(snap.pod_count(), 0);

    let err = snap
        .upsert_node(&node_with("n", &[("memory", "-1Gi")], &[]))
        .unwrap_err();
    assert!(
        matches!(&err, SnapshotError::Invalid { path, .. } if path == "status.allocatable[memory]"),
        "{err}"
    );
    assert_eq!(snap.node_count(), 0);

    let mut g = GroupBuilder::gang(NS, "g", 1).pod_group();
    g.spec.scheduling_policy.gang.as_mut().unwrap().min_count = 0;
    let err = snap.upsert_pod_group(&g).unwrap_err();
    assert_eq!(
        err.to_string(),
        "PodGroup ns/g: spec.schedulingPolicy.gang.minCount: Invalid value: 0: must be greater than or equal to 1"
    );
    assert!(!snap.has_group(&GroupKey::pod_group(NS, "g")));
}

#[test]
fn assume_forget_and_binding_lifecycle() {
    let mut snap = Snapshot::new();
    add_nodes(&mut snap, "node", 1, "2", &[]);
    pg(&mut snap, GroupBuilder::gang(NS, "g", 2));
    add_pods(&mut snap, "g", 2, "1");
    let out = Scheduler::default().schedule(&mut snap, &group_unit("g"));
    assert!(out.is_scheduled());
    assert_eq!(
        snap.node_requested("node-0").unwrap().get("cpu"),
        None,
        "a cycle leaves no trace"
    );
    for a in &out.assignments {
        snap.assume(&a.pod, &a.node).unwrap();
    }
    assert_eq!(snap.node_requested("node-0").unwrap()["cpu"], 2000);
    // An informer update that does not show the binding yet keeps the assumption.
    snap.upsert_pod(&pod_with(NS, "g-0", Some("g"), &[("cpu", "1")]))
        .unwrap();
    assert_eq!(
        snap.pod_state(&PodKey::new(NS, "g-0")),
        Some((PodState::Assumed, Some("node-0")))
    );
    // Binding g-0 fails: forget frees its share.
    snap.forget(&PodKey::new(NS, "g-0")).unwrap();
    assert_eq!(snap.node_requested("node-0").unwrap()["cpu"], 1000);
    assert_eq!(snap.pod_state(&PodKey::new(NS, "g-0")), Some((PodState::Pending, None)));
    // g-1's binding is confirmed by the informer.
    snap.upsert_pod(&bound(pod_with(NS, "g-1", Some("g"), &[("cpu", "1")]), "node-0"))
        .unwrap();
    assert_eq!(
        snap.pod_state(&PodKey::new(NS, "g-1")),
        Some((PodState::Bound, Some("node-0")))
    );
    assert_eq!(snap.node_requested("node-0").unwrap()["cpu"], 1000);
    assert!(snap.forget(&PodKey::new(NS, "g-1")).is_err());
    // The rest of the gang can be scheduled again, accounting for the running pod.
    let out = Scheduler::default().schedule(&mut snap, &group_unit("g"));
    assert_eq!(out.assignments.len(), 1);
    // Finished pods release their resources.
    let mut done = bound(pod_with(NS, "g-1", Some("g"), &[("cpu", "1")]), "node-0");
    done.status = Some(k8s_openapi::api::core::v1::PodStatus {
        phase: Some("Succeeded".into()),
        ..Default::default()
    });
    snap.upsert_pod(&done).unwrap();
    assert_eq!(snap.node_requested("node-0").unwrap().get("cpu"), None);
}

#[test]
fn the_journal_reverts_in_reverse_order() {
    let mut snap = Snapshot::new();
    add_nodes(&mut snap, "node", 2, "4", &[]);
    snap.upsert_pod(&bound(pod(NS, "running", "1", "1Gi"), "node-1"))
        .unwrap();
    snap.upsert_pod(&pod(NS, "a", "1", "1Gi")).unwrap();
    snap.upsert_pod(&pod(NS, "b", "2", "1Gi")).unwrap();
    let before: Vec<_> = snap.node_names().map(|n| snap.node_requested(n).unwrap()).collect();
    let mut j = Journal::new();
    j.assume(&mut snap, &PodKey::new(NS, "a"), "node-0").unwrap();
    let mark = j.mark();
    j.remove(&mut snap, &PodKey::new(NS, "running")).unwrap();
    j.assume(&mut snap, &PodKey::new(NS, "b"), "node-1").unwrap();
    assert_eq!(snap.node_requested("node-1").unwrap()["cpu"], 2000);
    assert!(
        j.assume(&mut snap, &PodKey::new(NS, "b"), "node-0").is_err(),
        "already placed"
    );
    j.revert_to(&mut snap, mark);
    assert_eq!(snap.node_requested("node-1").unwrap()["cpu"], 1000);
    assert_eq!(snap.node_requested("node-0").unwrap()["cpu"], 1000);
    j.revert_all(&mut snap);
    let after: Vec<_> = snap.node_names().map(|n| snap.node_requested(n).unwrap()).collect();
    assert_eq!(before, after);
    assert!(j.is_empty());
}

#[test]
fn a_three_level_hierarchy_with_topology_at_two_levels() {
    // root (gang 2, block) -> replicas r0, r1 (gang 2, rack) -> leader (gang 1) + workers (gang 3).
    let mut snap = Snapshot::new();
    for b in 0..2 {
        for r in 0..2 {
            let rack = format!("rack-{b}{r}");
            let block = format!("block-{b}");
            add_nodes(
                &mut snap,
                &rack,
                2,
                "2",
                &[(BLOCK, block.as_str()), (RACK, rack.as_str())],
            );
        }
    }
    // Block 0 is partly used, so bin packing prefers it.
    snap.upsert_pod(&bound(pod("other", "filler", "1", "1Gi"), "rack-00-0"))
        .unwrap();
    cpg(&mut snap, GroupBuilder::gang(NS, "root", 2).topology(BLOCK));
    for r in 0..2 {
        let rep = format!("r{r}");
        cpg(
            &mut snap,
            GroupBuilder::gang(NS, &rep, 2).parent("root").topology(RACK).created(r),
        );
        let leader = format!("r{r}leader");
        let workers = format!("r{r}workers");
        pg(
            &mut snap,
            GroupBuilder::gang(NS, &leader, 1).parent(&rep).created(10 + r),
        );
        pg(
            &mut snap,
            GroupBuilder::gang(NS, &workers, 3).parent(&rep).created(20 + r),
        );
        add_pods(&mut snap, &leader, 1, "1");
        add_pods(&mut snap, &workers, 3, "500m");
    }
    let out = schedule(&mut snap, SchedulerConfig::default(), &composite_unit("root"));
    assert!(out.is_scheduled(), "{out:#?}");
    assert_eq!(out.assignments.len(), 8);
    let blocks: Vec<String> = {
        let mut v: Vec<String> = out
            .assignments
            .iter()
            .map(|a| snap.node_label(&a.node, BLOCK).unwrap().to_string())
            .collect();
        v.sort();
        v.dedup();
        v
    };
    assert_eq!(blocks, vec!["block-0"]);
    for r in 0..2 {
        let mut racks: Vec<&str> = out
            .assignments
            .iter()
            .filter(|a| a.pod.name.starts_with(&format!("r{r}")))
            .map(|a| snap.node_label(&a.node, RACK).unwrap())
            .collect();
        racks.sort();
        racks.dedup();
        assert_eq!(racks.len(), 1, "replica r{r} spans racks {racks:?}");
    }
    commit(&mut snap, &out);
    assert_no_overcommit(&snap);
}

#[test]
fn pods_bound_to_nodes_the_snapshot_has_not_seen_count_once_the_node_arrives() {
    let mut snap = Snapshot::new();
    snap.upsert_pod(&bound(pod(NS, "early", "1", "1Gi"), "late-node"))
        .unwrap();
    snap.upsert_node(&node_with(
        "late-node",
        &[("cpu", "4"), ("memory", "8Gi"), ("pods", "10")],
        &[],
    ))
    .unwrap();
    assert_eq!(snap.node_requested("late-node").unwrap()["cpu"], 1000);
    assert!(snap.remove_node("late-node"));
    snap.upsert_node(&node_with(
        "late-node",
        &[("cpu", "4"), ("memory", "8Gi"), ("pods", "10")],
        &[],
    ))
    .unwrap();
    assert_eq!(snap.node_requested("late-node").unwrap()["cpu"], 1000);
    assert!(snap.remove_pod(&PodKey::new(NS, "early")));
    assert_eq!(snap.node_requested("late-node").unwrap().get("cpu"), None);
}

#[test]
fn a_homogeneous_gang_does_not_cost_pods_times_nodes() {
    let mut snap = Snapshot::new();
    add_nodes(&mut snap, "node", 1000, "4", &[]);
    pg(&mut snap, GroupBuilder::gang(NS, "g", 200));
    add_pods(&mut snap, "g", 200, "100m");
    let out = schedule(&mut snap, SchedulerConfig::alpha(), &group_unit("g"));
    assert!(out.is_scheduled());
    assert_eq!(out.stats.pods_tried, 200);
    // One ranking of the 1000 nodes, then about one rescore per pod, instead of 200 x 1000.
    assert!(out.stats.nodes_evaluated <= 1000 + 2 * 200, "{:?}", out.stats);
}

#[test]
fn the_adaptive_placement_cap_scores_a_tenth_of_the_racks_in_5000_nodes() {
    let build = || {
        let mut snap = Snapshot::new();
        for r in 0..50 {
            let rack = format!("rack-{r:02}");
            add_nodes(&mut snap, &rack, 100, "4", &[(RACK, rack.as_str())]);
        }
        // rack-37 is the tightest: bin packing wants it.
        snap.upsert_pod(&bound(pod("other", "filler", "2", "1Gi"), "rack-37-0"))
            .unwrap();
        pg(&mut snap, GroupBuilder::gang(NS, "g", 4).topology(RACK));
        add_pods(&mut snap, "g", 4, "100m");
        snap
    };
    let mut snap = build();
    let one_pass = SchedulerConfig {
        secure_minimums_first: false,
        ..SchedulerConfig::default()
    };
    let capped = schedule(&mut snap, one_pass, &group_unit("g"));
    let all = schedule(
        &mut snap,
        SchedulerConfig {
            placement_limit: kwas_scheduler::core::PlacementLimit::ScoreAll,
            ..one_pass
        },
        &group_unit("g"),
    );
    assert_eq!(all.stats.placements_evaluated, 50);
    assert_eq!(capped.stats.placements_evaluated, 5);
    assert_eq!(
        capped.assignments, all.assignments,
        "the cap tries the most promising racks first"
    );
    assert_eq!(domains_of(&snap, &capped.assignments, "g", RACK), vec!["rack-37"]);
}

#[test]
fn a_group_tree_must_match_its_workloads_templates() {
    use kwas_api_types::v1alpha3::Workload;
    let workload: Workload = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "w", "namespace": NS},
        "spec": {"controllerRef": {"apiGroup": "batch", "kind": "Job", "name": "j"},
            "compositePodGroupTemplates": [{"name": "root", "schedulingPolicy": {"gang": {"minGroupCount": 1}},
                "podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 1}}}]}]}
    }))
    .unwrap();
    let build = |leaf_template: &str, leaf_basic: bool| {
        let mut snap = Snapshot::new();
        add_nodes(&mut snap, "node", 2, "2", &[]);
        snap.upsert_workload(&workload);
        let mut root = GroupBuilder::gang(NS, "root", 1).workload("w").composite();
        root.spec.workload_ref.template_name = "root".into();
        snap.upsert_composite_pod_group(&root).unwrap();
        let b = if leaf_basic {
            GroupBuilder::basic(NS, "pg")
        } else {
            GroupBuilder::gang(NS, "pg", 1)
        };
        let mut leaf = b.parent("root").workload("w").pod_group();
        if let Some(r) = leaf.spec.workload_ref.as_mut() {
            r.template_name = leaf_template.into();
        }
        snap.upsert_pod_group(&leaf).unwrap();
        add_pods(&mut snap, "pg", 1, "1");
        snap
    };
    let mut ok = build("workers", false);
    assert!(schedule(&mut ok, SchedulerConfig::default(), &composite_unit("root")).is_scheduled());
    for (template, basic, detail) in [
        ("nope", false, "it has no template \"nope\""),
        ("root", false, "template \"root\" is a compositePodGroupTemplate"),
        ("workers", true, "template \"workers\" has the gang scheduling policy"),
    ] {
        let mut snap = build(template, basic);
        match schedule(&mut snap, SchedulerConfig::default(), &composite_unit("root")).verdict {
            Verdict::Invalid { reason, message } => {
                assert_eq!(reason, "Invalid");
                assert!(message.ends_with(detail), "{message}");
                assert!(message.contains("does not match its Workload \"w\""), "{message}");
            }
            v => panic!("{template}: {v:?}"),
        }
    }
}
