//! Property tests at the limits: nodes, pods and groups with quantities, counts, priorities and times at
//! their type's extremes (and past them) are either taken into the snapshot or refused with an error, and
//! a cycle and a preemption attempt over whatever was taken never panic and never overcommit a node.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use kwas_scheduler::core::testing::{GroupBuilder, bound, node, pod_in_group, with_priority};
use kwas_scheduler::core::{PodState, Readiness, Scheduler, SchedulerConfig, Snapshot};
use proptest::prelude::*;

fn quantities() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("0".to_string()),
        Just("1".to_string()),
        Just("-1".to_string()),
        Just("1m".to_string()),
        Just("9223372036854775807".to_string()),
        Just("9223372036854775808".to_string()),
        Just("18446744073709551615".to_string()),
        Just("1e300".to_string()),
        Just("999999999999Ei".to_string()),
        Just("0.000000001".to_string()),
        Just("8Ei".to_string()),
        Just("abc".to_string()),
        Just(String::new()),
        (0u32..8).prop_map(|n| n.to_string()),
        any::<u64>().prop_map(|n| format!("{n}m")),
    ]
}

fn i32s() -> impl Strategy<Value = i32> {
    prop_oneof![Just(i32::MIN), Just(i32::MAX), Just(0), Just(-1), 1..6i32, any::<i32>()]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, ..ProptestConfig::default() })]

    #[test]
    fn extreme_values_are_taken_or_refused_never_a_panic(
        node_cpu in quantities(),
        node_memory in quantities(),
        pod_cpu in quantities(),
        pod_memory in quantities(),
        min in i32s(),
        parent_min in i32s(),
        priority in i32s(),
        created in prop_oneof![Just(i64::MIN), Just(i64::MAX), Just(0i64), any::<i64>()],
        pods in 0..6usize,
        bound_pods in 0..3usize,
    ) {
        let mut snap = Snapshot::new();
        let _ = snap.upsert_node(&node("n0", &node_cpu, &node_memory, &[("kwas.dev/rack", "r0")]));
        snap.upsert_node(&node("n1", "4", "16Gi", &[("kwas.dev/rack", "r0")])).unwrap();
        let _ = snap.upsert_composite_pod_group(&GroupBuilder::gang("ns", "root", parent_min).created(created).composite());
        let _ = snap.upsert_pod_group(
            &GroupBuilder::gang("ns", "g", min).parent("root").topology("kwas.dev/rack").priority(priority).created(created).pod_group(),
        );
        let _ = snap.upsert_pod_group(&GroupBuilder::gang("ns", "h", min).priority(priority).all().pod_group());
        for i in 0..pods {
            let _ = snap.upsert_pod(&with_priority(pod_in_group("ns", &format!("g-{i}"), "g", &pod_cpu, &pod_memory), priority));
            let _ = snap.upsert_pod(&pod_in_group("ns", &format!("h-{i}"), "h", "1", "1Gi"));
        }
        for i in 0..bound_pods {
            let _ = snap.upsert_pod(&with_priority(bound(pod_in_group("ns", &format!("b-{i}"), "h", &pod_cpu, "1Gi"), "n1"), i32::MIN));
        }
        let scheduler = Scheduler::new(SchedulerConfig::default());
        for (unit, readiness) in snap.pending_units() {
            if readiness != Readiness::Ready {
                continue;
            }
            let out = scheduler.schedule(&mut snap, &unit);
            for a in &out.assignments {
                snap.assume(&a.pod, &a.node).unwrap();
            }
            let _ = scheduler.preempt(&mut snap, &unit);
        }
        // Whatever was placed fits: at most 4 cpu worth of 1-cpu pods of `h` land on n1 beside the bound ones.
        let on_n1 = (0..pods)
            .filter(|i| matches!(snap.pod_state(&kwas_scheduler::core::PodKey::new("ns", format!("h-{i}"))), Some((PodState::Assumed, Some("n1")))))
            .count();
        prop_assert!(on_n1 <= 4);
    }
}
