//! Workload-aware preemption: units, reprieval, delayed preemption, least disruption.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;

use crate::common::reference::{Inst, Rng, generate, root_unit, structure_violation, to_snapshot};
use crate::common::*;
use kwas_scheduler::core::testing::{GroupBuilder, bound, pod_with, with_priority};
use kwas_scheduler::core::{
    GroupKey, PodKey, PreemptionVerdict, Scheduler, SchedulerConfig, Snapshot, UnitKey, Verdict, VictimUnit,
};
use proptest::prelude::*;

fn low_pod(snap: &mut Snapshot, name: &str, group: Option<&str>, node: &str, cpu: &str, prio: i32) {
    let p = with_priority(pod_with(NS, name, group, &[("cpu", cpu)]), prio);
    snap.upsert_pod(&bound(p, node)).unwrap();
}

fn preemptor_gang(snap: &mut Snapshot, name: &str, pods: usize, cpu: &str, prio: i32) {
    pg(snap, GroupBuilder::gang(NS, name, pods as i32).priority(prio));
    for i in 0..pods {
        let p = with_priority(pod_with(NS, &format!("{name}-{i}"), Some(name), &[("cpu", cpu)]), prio);
        snap.upsert_pod(&p).unwrap();
    }
}

fn preempt(snap: &mut Snapshot, unit: &UnitKey) -> kwas_scheduler::core::PreemptionOutcome {
    Scheduler::new(SchedulerConfig::default()).preempt(snap, unit)
}

#[test]
fn gang_preempts_lower_priority_pods_and_is_nominated() {
    let mut snap = Snapshot::new();
    add_nodes(&mut snap, "node", 2, "2", &[]);
    for i in 0..4 {
        low_pod(&mut snap, &format!("low-{i}"), None, &format!("node-{}", i / 2), "1", 0);
    }
    preemptor_gang(&mut snap, "hi", 2, "1", 100);
    let out = preempt(&mut snap, &group_unit("hi"));
    assert_eq!(out.verdict, PreemptionVerdict::Preempt, "{out:#?}");
    assert_eq!(out.victims.len(), 2, "only what the gang needs: {out:#?}");
    assert_eq!(out.nominations.len(), 2);
    // Delayed preemption: victims and nominations are consistent: evict, then the gang fits there.
    for v in &out.victims {
        snap.remove_pod(&v.pod);
    }
    for n in &out.nominations {
        snap.assume(&n.pod, &n.node).unwrap();
    }
    assert_no_overcommit(&snap);
}

#[test]
fn an_all_unit_is_evicted_whole_and_a_single_one_pod_by_pod() {
    for (all, expected) in [(true, 4), (false, 1)] {
        let mut snap = Snapshot::new();
        add_nodes(&mut snap, "node", 4, "1", &[]);
        let mut b = GroupBuilder::gang(NS, "low", 4).priority(1);
        if all {
            b = b.all();
        }
        pg(&mut snap, b);
        for i in 0..4 {
            low_pod(
                &mut snap,
                &format!("low-{i}"),
                Some("low"),
                &format!("node-{i}"),
                "1",
                1,
            );
        }
        let p = with_priority(pod_with(NS, "solo", None, &[("cpu", "1")]), 50);
        snap.upsert_pod(&p).unwrap();
        let out = preempt(&mut snap, &UnitKey::Pod(PodKey::new(NS, "solo")));
        assert_eq!(out.verdict, PreemptionVerdict::Preempt);
        assert_eq!(out.victims.len(), expected, "all={all}: {out:#?}");
        if all {
            assert_eq!(out.victim_groups, vec![GroupKey::pod_group(NS, "low")]);
            assert!(
                out.victims
                    .iter()
                    .all(|v| v.unit == VictimUnit::Group(GroupKey::pod_group(NS, "low")))
            );
        }
        assert_eq!(out.nominations.len(), 1);
    }
}

#[test]
fn the_highest_all_ancestor_composite_is_the_unit() {
    let mut snap = Snapshot::new();
    add_nodes(&mut snap, "node", 4, "1", &[]);
    cpg(&mut snap, GroupBuilder::gang(NS, "low-root", 2).all().priority(1));
    cpg(
        &mut snap,
        GroupBuilder::gang(NS, "low-mid", 1)
            .all()
            .parent("low-root")
            .priority(1),
    );
    pg(
        &mut snap,
        GroupBuilder::gang(NS, "low-a", 2).all().parent("low-mid").priority(1),
    );
    pg(
        &mut snap,
        GroupBuilder::gang(NS, "low-b", 2).all().parent("low-root").priority(1),
    );
    for (i, g) in ["low-a", "low-a", "low-b", "low-b"].iter().enumerate() {
        low_pod(&mut snap, &format!("{g}-{i}"), Some(g), &format!("node-{i}"), "1", 1);
    }
    snap.upsert_pod(&with_priority(pod_with(NS, "solo", None, &[("cpu", "1")]), 50))
        .unwrap();
    let out = preempt(&mut snap, &UnitKey::Pod(PodKey::new(NS, "solo")));
    assert_eq!(out.verdict, PreemptionVerdict::Preempt);
    assert_eq!(out.victims.len(), 4);
    assert_eq!(out.victim_groups, vec![GroupKey::composite(NS, "low-root")]);
}

#[test]
fn never_policy_and_equal_priority_are_not_preempted() {
    let mut snap = Snapshot::new();
    add_nodes(&mut snap, "node", 1, "1", &[]);
    low_pod(&mut snap, "same", None, "node-0", "1", 100);
    preemptor_gang(&mut snap, "hi", 1, "1", 100);
    let out = preempt(&mut snap, &group_unit("hi"));
    assert_eq!(out.verdict, PreemptionVerdict::NotHelpful, "{out:#?}");
    assert!(out.victims.is_empty());

    let mut snap = Snapshot::new();
    add_nodes(&mut snap, "node", 1, "1", &[]);
    low_pod(&mut snap, "low", None, "node-0", "1", 0);
    pg(
        &mut snap,
        GroupBuilder::gang(NS, "polite", 1)
            .priority(100)
            .preemption_policy("Never"),
    );
    snap.upsert_pod(&with_priority(
        pod_with(NS, "polite-0", Some("polite"), &[("cpu", "1")]),
        100,
    ))
    .unwrap();
    let out = preempt(&mut snap, &group_unit("polite"));
    assert_eq!(out.verdict, PreemptionVerdict::NotAllowed);
    assert!(out.victims.is_empty());
}

#[test]
fn no_victims_unless_the_whole_hierarchy_fits() {
    // The gang needs 3 cpu; only 2 are held by lower-priority pods, 1 by a higher one.
    let mut snap = Snapshot::new();
    add_nodes(&mut snap, "node", 3, "1", &[]);
    low_pod(&mut snap, "low-0", None, "node-0", "1", 0);
    low_pod(&mut snap, "low-1", None, "node-1", "1", 0);
    low_pod(&mut snap, "high", None, "node-2", "1", 1000);
    preemptor_gang(&mut snap, "hi", 3, "1", 100);
    let out = preempt(&mut snap, &group_unit("hi"));
    assert_eq!(out.verdict, PreemptionVerdict::NotHelpful);
    assert!(out.victims.is_empty() && out.nominations.is_empty());
}

#[test]
fn reprieve_keeps_the_most_important_victims() {
    let mut snap = Snapshot::new();
    add_nodes(&mut snap, "node", 1, "2", &[]);
    low_pod(&mut snap, "p10", None, "node-0", "1", 10);
    low_pod(&mut snap, "p5", None, "node-0", "1", 5);
    preemptor_gang(&mut snap, "hi", 1, "1", 100);
    let out = preempt(&mut snap, &group_unit("hi"));
    assert_eq!(out.verdict, PreemptionVerdict::Preempt);
    let names: Vec<&str> = out.victims.iter().map(|v| v.pod.name.as_str()).collect();
    assert_eq!(names, vec!["p5"]);
}

#[test]
fn the_least_disruptive_topology_domain_wins() {
    let mut snap = Snapshot::new();
    add_nodes(&mut snap, "a", 2, "2", &[(RACK, "rack-a")]);
    add_nodes(&mut snap, "b", 2, "2", &[(RACK, "rack-b")]);
    // rack-a: 4 small victims needed; rack-b: 2 bigger ones.
    for i in 0..4 {
        low_pod(&mut snap, &format!("small-{i}"), None, &format!("a-{}", i / 2), "1", 0);
    }
    low_pod(&mut snap, "big-0", None, "b-0", "2", 0);
    low_pod(&mut snap, "big-1", None, "b-1", "2", 0);
    pg(&mut snap, GroupBuilder::gang(NS, "hi", 2).priority(100).topology(RACK));
    for i in 0..2 {
        snap.upsert_pod(&with_priority(
            pod_with(NS, &format!("hi-{i}"), Some("hi"), &[("cpu", "2")]),
            100,
        ))
        .unwrap();
    }
    let out = preempt(&mut snap, &group_unit("hi"));
    assert_eq!(out.verdict, PreemptionVerdict::Preempt);
    assert_eq!(out.domains_evaluated, 2);
    let names: Vec<&str> = out.victims.iter().map(|v| v.pod.name.as_str()).collect();
    assert_eq!(names, vec!["big-0", "big-1"]);
    assert!(out.nominations.iter().all(|n| n.node.starts_with("b-")));
}

#[test]
fn satisfied_hierarchy_preempts_for_extra_pods_only_when_it_ran_before() {
    let mut snap = Snapshot::new();
    add_nodes(&mut snap, "node", 2, "1", &[]);
    pg(&mut snap, GroupBuilder::gang(NS, "hi", 1).priority(100));
    let running = with_priority(pod_with(NS, "hi-0", Some("hi"), &[("cpu", "1")]), 100);
    snap.upsert_pod(&bound(running, "node-0")).unwrap();
    snap.upsert_pod(&with_priority(pod_with(NS, "hi-1", Some("hi"), &[("cpu", "1")]), 100))
        .unwrap();
    low_pod(&mut snap, "low", None, "node-1", "1", 0);
    let out = Scheduler::new(SchedulerConfig::default()).schedule(&mut snap, &group_unit("hi"));
    assert_eq!(out.verdict, Verdict::Scheduled);
    assert!(out.assignments.is_empty());
    assert!(out.preemption_may_help, "{out:#?}");
    let p = preempt(&mut snap, &group_unit("hi"));
    assert_eq!(p.verdict, PreemptionVerdict::Preempt);
    assert_eq!(p.victims.len(), 1);
    assert_eq!(p.nominations.len(), 1);
}

/// One random preemption scenario: the preemptor (priority 100) and a cluster filled with running
/// groups of random priority, some `all`. Returns the instance, the snapshot, the `all` groups and the
/// running pods below the preemptor's priority.
fn scenario(seed: u64) -> (Inst, Snapshot, Vec<String>, Vec<PodKey>) {
    let mut inst = generate(seed, true);
    inst.priority = Some(100);
    let mut snap = to_snapshot(&inst);
    let mut r = Rng::new(seed ^ 0xdead_beef);
    // Fill the cluster with running groups and pods of random priority, some `all`.
    let nodes: Vec<String> = snap.node_names().map(str::to_string).collect();
    let mut all_groups = Vec::new();
    let mut low = Vec::new();
    for g in 0..3 {
        let prio = r.pick(&[0, 50, 100, 200]);
        let name = format!("run{g}");
        let mut b = GroupBuilder::gang("victims", &name, 1).priority(prio);
        let all = r.chance(50);
        if all {
            b = b.all();
            all_groups.push(name.clone());
        }
        snap.upsert_pod_group(&b.pod_group()).unwrap();
        for k in 0..(1 + r.below(3)) {
            let node = &nodes[r.below(nodes.len() as u64) as usize];
            let used = snap.node_requested(node).unwrap();
            let alloc = snap.node_allocatable(node).unwrap();
            let fits = used.get("cpu").copied().unwrap_or(0) + 500 <= alloc["cpu"]
                && used.get("pods").copied().unwrap_or(0) < alloc["pods"];
            if !fits {
                continue;
            }
            let p = with_priority(
                pod_with("victims", &format!("{name}-{k}"), Some(&name), &[("cpu", "500m")]),
                prio,
            );
            snap.upsert_pod(&bound(p, node)).unwrap();
            if prio < 100 {
                low.push(PodKey::new("victims", format!("{name}-{k}")));
            }
        }
    }
    (inst, snap, all_groups, low)
}

/// Runs one random preemption scenario and checks its rules; returns the verdict.
fn check_preemption(seed: u64) -> PreemptionVerdict {
    let (inst, mut snap, all_groups, _) = scenario(seed);
    assert_no_overcommit(&snap);
    let out = preempt(&mut snap, &root_unit(&inst));
    assert!(out.verdict != PreemptionVerdict::NotReady, "{out:?}");
    for v in &out.victims {
        assert!(v.priority < 100, "{v:?}");
    }
    let victims: HashSet<&PodKey> = out.victims.iter().map(|v| &v.pod).collect();
    for g in &all_groups {
        let members: Vec<PodKey> = (0..3)
            .map(|k| PodKey::new("victims", format!("{g}-{k}")))
            .filter(|k| snap.pod_state(k).is_some())
            .collect();
        let hit = members.iter().filter(|m| victims.contains(m)).count();
        assert!(hit == 0 || hit == members.len(), "partial eviction of {g}");
    }
    if out.verdict == PreemptionVerdict::Preempt {
        for v in &out.victims {
            snap.remove_pod(&v.pod);
        }
        for n in &out.nominations {
            snap.assume(&n.pod, &n.node).unwrap();
        }
        assert_no_overcommit(&snap);
        assert!(
            structure_violation(&inst, &out.nominations).is_none(),
            "{:?}",
            structure_violation(&inst, &out.nominations)
        );
    }
    out.verdict
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// No victim with priority >= the preemptor's; no `all` unit partially evicted; the nominated
    /// placement is valid once the victims are gone.
    #[test]
    fn preemption_rules_hold(seed in any::<u64>()) {
        check_preemption(seed);
    }
}

#[test]
fn random_preemption_scenarios_do_evict() {
    let preempted = (0..200u64)
        .filter(|s| check_preemption(*s) == PreemptionVerdict::Preempt)
        .count();
    assert!(preempted >= 20, "only {preempted} of 200 random scenarios preempted");
}

/// The node-by-node search is complete: it finds a preemption whenever evicting every lower-priority
/// pod would let the preemptor schedule (its last try removes every candidate of a domain). The
/// converse is not asked: a found preemption's placement is checked by `check_preemption`, and the
/// greedy cycle may place a gang with some victims gone that it fails to place with all of them gone.
#[test]
fn preemption_is_found_whenever_evicting_every_candidate_would_help() {
    let mut helpful = 0;
    for seed in 0..200u64 {
        let (inst, mut snap, _, low) = scenario(seed);
        let verdict = preempt(&mut snap, &root_unit(&inst)).verdict;
        for k in &low {
            snap.remove_pod(k);
        }
        let fits = Scheduler::new(SchedulerConfig::default())
            .schedule(&mut snap, &root_unit(&inst))
            .is_scheduled();
        if verdict == PreemptionVerdict::NotHelpful {
            assert!(
                !fits,
                "seed {seed}: NotHelpful, yet evicting every candidate lets it schedule"
            );
        } else if fits {
            helpful += 1;
        }
    }
    assert!(
        helpful >= 20,
        "only {helpful} of 200 scenarios fit with every candidate gone"
    );
}

#[test]
fn a_mixed_cluster_loses_one_single_pod_rather_than_a_whole_all_gang() {
    // Nodes 0-3 run an `all` gang of 4; nodes 4-7 run a `single` gang of 4; every node is full. A 1-pod
    // preemptor gang with no topology constraint must take one `single` pod's place, not the `all` gang's.
    let mut snap = Snapshot::new();
    add_nodes(&mut snap, "node", 8, "1", &[]);
    pg(&mut snap, GroupBuilder::gang(NS, "atomic", 4).priority(1).all());
    pg(&mut snap, GroupBuilder::gang(NS, "loose", 4).priority(1));
    for i in 0..4 {
        low_pod(
            &mut snap,
            &format!("atomic-{i}"),
            Some("atomic"),
            &format!("node-{i}"),
            "1",
            1,
        );
        low_pod(
            &mut snap,
            &format!("loose-{i}"),
            Some("loose"),
            &format!("node-{}", i + 4),
            "1",
            1,
        );
    }
    preemptor_gang(&mut snap, "hi", 1, "1", 100);
    let out = preempt(&mut snap, &group_unit("hi"));
    assert_eq!(out.verdict, PreemptionVerdict::Preempt, "{out:#?}");
    assert_eq!(out.victims.len(), 1, "{out:#?}");
    assert!(matches!(out.victims[0].unit, VictimUnit::Pod(_)), "{out:#?}");
    assert!(out.victim_groups.is_empty());
    assert_eq!(out.nominations[0].node, out.victims[0].node);
}

#[test]
fn candidates_rank_like_upstream_lowest_highest_victim_priority_before_fewest_victims() {
    // node-0 runs one priority-900 pod, node-1 two priority-10 pods: a pod of priority 1000 needing a
    // whole node evicts the two cheap pods, not the one important pod (upstream's order).
    let mut snap = Snapshot::new();
    add_nodes(&mut snap, "node", 2, "2", &[]);
    low_pod(&mut snap, "important", None, "node-0", "2", 900);
    low_pod(&mut snap, "cheap-a", None, "node-1", "1", 10);
    low_pod(&mut snap, "cheap-b", None, "node-1", "1", 10);
    let p = with_priority(pod_with(NS, "hi", None, &[("cpu", "2")]), 1000);
    snap.upsert_pod(&p).unwrap();
    let out = preempt(&mut snap, &UnitKey::Pod(PodKey::new(NS, "hi")));
    assert_eq!(out.verdict, PreemptionVerdict::Preempt, "{out:#?}");
    let names: Vec<&str> = out.victims.iter().map(|v| v.pod.name.as_str()).collect();
    assert_eq!(names, ["cheap-a", "cheap-b"]);
}

#[test]
fn pod_disruption_budgets_steer_preemption_away_from_protected_pods() {
    use k8s_openapi::api::policy::v1::PodDisruptionBudget;
    let mut snap = Snapshot::new();
    add_nodes(&mut snap, "node", 2, "1", &[]);
    for (name, node, app) in [("db-0", "node-0", "db"), ("batch-0", "node-1", "batch")] {
        let mut p = with_priority(pod_with(NS, name, None, &[("cpu", "1")]), 10);
        p.metadata.labels = Some([("app".to_string(), app.to_string())].into());
        snap.upsert_pod(&bound(p, node)).unwrap();
    }
    let pdb: PodDisruptionBudget = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "db", "namespace": NS},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "db"}}},
        "status": {"disruptionsAllowed": 0, "currentHealthy": 1, "desiredHealthy": 1, "expectedPods": 1}
    }))
    .unwrap();
    snap.upsert_pod_disruption_budget(&pdb);
    // Same priority on both nodes; the names would pick node-0 first, the budget says node-1.
    let p = with_priority(pod_with(NS, "hi", None, &[("cpu", "1")]), 1000);
    snap.upsert_pod(&p).unwrap();
    let out = preempt(&mut snap, &UnitKey::Pod(PodKey::new(NS, "hi")));
    assert_eq!(out.verdict, PreemptionVerdict::Preempt, "{out:#?}");
    assert_eq!(out.victims[0].pod.name, "batch-0");
    // With no other choice, the budget is violated rather than nothing preempted (best effort).
    snap.remove_pod(&PodKey::new(NS, "batch-0"));
    snap.upsert_pod(&bound(
        with_priority(pod_with(NS, "hi-peer", None, &[("cpu", "1")]), 1000),
        "node-1",
    ))
    .unwrap();
    let out = preempt(&mut snap, &UnitKey::Pod(PodKey::new(NS, "hi")));
    assert_eq!(out.verdict, PreemptionVerdict::Preempt, "{out:#?}");
    assert_eq!(out.victims[0].pod.name, "db-0");
}

#[test]
fn a_groups_pods_share_its_preemption_policy() {
    let mut snap = Snapshot::new();
    add_nodes(&mut snap, "node", 2, "2", &[]);
    pg(&mut snap, GroupBuilder::gang(NS, "g", 2).preemption_policy("Never"));
    for i in 0..2 {
        let mut p = pod_with(NS, &format!("g-{i}"), Some("g"), &[("cpu", "1")]);
        p.spec.as_mut().unwrap().preemption_policy = Some(if i == 0 { "Never" } else { "PreemptLowerPriority" }.into());
        snap.upsert_pod(&p).unwrap();
    }
    let out = schedule(&mut snap, SchedulerConfig::default(), &group_unit("g"));
    match out.verdict {
        Verdict::Invalid { reason, message } => {
            assert_eq!(reason, "SchedulerError");
            assert_eq!(
                message,
                "all pods in a single pod group should match the preemptionPolicy of the pod group, got: Never and PreemptLowerPriority"
            );
        }
        v => panic!("{v:?}"),
    }
}
