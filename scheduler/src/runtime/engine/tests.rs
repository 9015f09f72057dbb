//! The engine's unit tests, with fixed times.

use super::*;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use k8s_openapi::jiff::Timestamp;
use kwas_api_types::names::conditions::{
    COMPOSITE_POD_GROUP_INITIALLY_SCHEDULED, DISRUPTION_TARGET, POD_GROUP_INITIALLY_SCHEDULED,
    REASON_PREEMPTION_BY_SCHEDULER, REASON_SCHEDULED, REASON_SCHEDULER_ERROR, REASON_UNSCHEDULABLE,
};

use crate::core::testing::{GroupBuilder, bound, node, pod, pod_in_group, with_priority};
use crate::core::{GroupKey, PodKey, PodState, SchedulerConfig, UnitKey};
use crate::runtime::actions::{Action, PodStatusUpdate};
use crate::runtime::conditions::REASON_SCHEDULING_GATED;
use crate::runtime::config::BackoffConfig;
use crate::runtime::informers::{InformerEvent, Kind, Object};
use crate::runtime::metrics::Metrics;
use crate::runtime::scheduling_queue::QueueState;
use k8s_openapi::api::core::v1::PodStatus;
use kwas_api_types::names::conditions::REASON_INVALID;

struct Harness {
    e: Engine,
    now: Now,
}

pub(super) fn settings() -> EngineSettings {
    EngineSettings {
        scheduler_names: vec!["default-scheduler".into()],
        primary_name: "kwas-scheduler".into(),
        core: SchedulerConfig::default(),
        backoff: BackoffConfig::default(),
        preemption_timeout: Duration::from_secs(60),
        partial_gang_timeout: Duration::from_secs(60),
        waiting_message_delay: Duration::from_secs(1),
        profile: Default::default(),
    }
}

impl Harness {
    fn new() -> Self {
        let mut e = Engine::new(settings(), Metrics::new());
        let now = Now {
            instant: Instant::now(),
            wall: Timestamp::from_second(1_800_000_000).unwrap_or(Timestamp::UNIX_EPOCH),
        };
        for k in Kind::ALL {
            e.apply(InformerEvent::InitStart(k), now);
            e.apply(InformerEvent::InitDone(k), now);
        }
        Self { e, now }
    }

    fn apply(&mut self, o: Object) {
        self.e.apply(InformerEvent::Apply(o), self.now);
        self.e.end_of_batch(self.now);
    }

    fn delete(&mut self, o: Object) {
        self.e.apply(InformerEvent::Delete(o), self.now);
        self.e.end_of_batch(self.now);
    }

    fn node(&mut self, name: &str, cpu: &str) {
        self.apply(Object::Node(Box::new(node(name, cpu, "64Gi", &[]))));
    }

    fn pod(&mut self, p: Pod) {
        self.apply(Object::Pod(Box::new(p)));
    }

    fn group(&mut self, g: GroupBuilder) {
        self.apply(Object::PodGroup(Box::new(g.pod_group())));
    }

    /// Runs every ready unit.
    fn run(&mut self) -> Vec<Action> {
        let mut out = Vec::new();
        while self.e.schedule_one(self.now, &mut out) {}
        out
    }

    fn advance(&mut self, d: Duration) {
        self.now.instant += d;
        self.now.wall = self
            .now
            .wall
            .checked_add(k8s_openapi::jiff::SignedDuration::try_from(d).unwrap_or_default())
            .unwrap_or(self.now.wall);
    }

    /// Confirms every binding in `actions` as the API server and informer would.
    fn confirm_binds(&mut self, actions: &[Action]) -> Vec<Action> {
        let mut out = Vec::new();
        for a in actions {
            if let Action::Bind { pod, node, .. } = a {
                self.e.bind_finished(pod, node, BindResult::Bound, self.now, &mut out);
            }
        }
        out
    }
}

pub(super) fn binds(actions: &[Action]) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = actions
        .iter()
        .filter_map(|a| match a {
            Action::Bind { pod, node, .. } => Some((pod.name.clone(), node.clone())),
            _ => None,
        })
        .collect();
    v.sort();
    v
}

pub(super) fn pod_reasons(actions: &[Action]) -> Vec<(String, String, String)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::PodStatus(PodStatusUpdate {
                pod, desired: Some(d), ..
            }) => Some((pod.name.clone(), d.reason.clone(), d.message.clone())),
            _ => None,
        })
        .collect()
}

pub(super) fn group_conditions(actions: &[Action]) -> Vec<(String, String, bool, String)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::GroupStatus(g) => Some((
                g.group.name.clone(),
                g.desired.type_.clone(),
                g.desired.status,
                g.desired.reason.clone(),
            )),
            _ => None,
        })
        .collect()
}

pub(super) fn event_reasons(actions: &[Action]) -> Vec<String> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Event(e) => Some(e.reason.clone()),
            _ => None,
        })
        .collect()
}

pub(super) fn gang_unit(name: &str) -> UnitKey {
    UnitKey::Group(GroupKey::pod_group("ns", name))
}

#[test]
pub(super) fn a_gang_waits_for_min_count_then_binds_all_or_nothing() {
    let mut h = Harness::new();
    h.node("n1", "4");
    h.group(GroupBuilder::gang("ns", "g", 3));
    h.pod(pod_in_group("ns", "g-0", "g", "1", "1Gi"));
    h.pod(pod_in_group("ns", "g-1", "g", "1", "1Gi"));
    let out = h.run();
    assert!(out.is_empty(), "no message before the delay: {out:?}");
    assert_eq!(h.e.next_wakeup(), Some(h.now.instant + Duration::from_secs(1)));
    h.advance(Duration::from_secs(1));
    h.e.end_of_batch(h.now);
    let out = h.run();
    assert!(binds(&out).is_empty());
    let reasons = pod_reasons(&out);
    assert_eq!(reasons.len(), 2, "{reasons:?}");
    for (_, reason, message) in &reasons {
        assert_eq!(reason, REASON_SCHEDULING_GATED);
        assert_eq!(message, crate::core::readiness::WAITING_FOR_MIN_COUNT);
    }
    assert!(event_reasons(&out).is_empty(), "waiting is not a scheduling failure");
    assert_eq!(h.e.queue().state(&gang_unit("g")), Some(QueueState::Gated));
    // Nothing new is written while nothing changes.
    h.group(GroupBuilder::gang("ns", "g", 3));
    assert!(pod_reasons(&h.run()).is_empty());

    h.pod(pod_in_group("ns", "g-2", "g", "1", "1Gi"));
    let out = h.run();
    assert_eq!(
        binds(&out),
        vec![
            ("g-0".into(), "n1".into()),
            ("g-1".into(), "n1".into()),
            ("g-2".into(), "n1".into())
        ]
    );
    assert_eq!(
        group_conditions(&out),
        vec![(
            "g".into(),
            POD_GROUP_INITIALLY_SCHEDULED.into(),
            true,
            REASON_SCHEDULED.into()
        )]
    );
    assert_eq!(h.e.queue().state(&gang_unit("g")), None);
    assert_eq!(h.e.bindings_in_flight(), 3);
    let events = h.confirm_binds(&out);
    assert_eq!(event_reasons(&events), vec!["Scheduled"; 3]);
    assert_eq!(h.e.bindings_in_flight(), 0);
    // The assumed pods hold their node until the informer reports them bound.
    assert_eq!(h.e.snapshot().node_requested("n1").unwrap()["cpu"], 3000);
    h.pod(bound(pod_in_group("ns", "g-0", "g", "1", "1Gi"), "n1"));
    assert_eq!(h.e.snapshot().node_requested("n1").unwrap()["cpu"], 3000);
    assert!(h.run().is_empty());
}

#[test]
pub(super) fn a_pod_waits_for_its_pod_group_with_upstreams_message() {
    let mut h = Harness::new();
    h.node("n1", "4");
    h.pod(pod_in_group("ns", "p", "late", "1", "1Gi"));
    assert!(h.run().is_empty());
    h.advance(Duration::from_secs(2));
    h.e.end_of_batch(h.now);
    let out = h.run();
    assert_eq!(
        pod_reasons(&out),
        vec![(
            "p".into(),
            REASON_SCHEDULING_GATED.into(),
            "waiting for pods's pod group \"late\" to appear in scheduling queue".into()
        )]
    );
    h.group(GroupBuilder::gang("ns", "late", 1));
    assert_eq!(binds(&h.run()), vec![("p".into(), "n1".into())]);
}

#[test]
pub(super) fn a_gang_that_does_not_fit_binds_nothing_until_capacity_frees() {
    let mut h = Harness::new();
    h.node("n1", "2");
    h.group(GroupBuilder::gang("ns", "g", 3));
    for i in 0..3 {
        h.pod(pod_in_group("ns", &format!("g-{i}"), "g", "1", "1Gi"));
    }
    let out = h.run();
    assert!(binds(&out).is_empty());
    assert_eq!(
        group_conditions(&out),
        vec![(
            "g".into(),
            POD_GROUP_INITIALLY_SCHEDULED.into(),
            false,
            REASON_UNSCHEDULABLE.into()
        )]
    );
    let reasons = pod_reasons(&out);
    assert_eq!(reasons.len(), 3);
    assert!(reasons.iter().all(|(_, r, _)| r == REASON_UNSCHEDULABLE), "{reasons:?}");
    assert_eq!(event_reasons(&out), vec!["FailedScheduling"; 3]);
    assert_eq!(h.e.queue().state(&gang_unit("g")), Some(QueueState::Unschedulable));
    // A retry with the same outcome writes nothing new.
    h.node("n1", "2");
    h.advance(Duration::from_secs(2));
    let out = h.run();
    assert!(out.is_empty(), "{out:?}");
    // A second node frees enough room: the gang binds.
    h.node("n2", "2");
    h.advance(Duration::from_secs(10));
    let out = h.run();
    assert_eq!(binds(&out).len(), 3);
}

#[test]
pub(super) fn plain_pods_are_scheduled_one_by_one() {
    let mut h = Harness::new();
    h.node("n1", "2");
    for i in 0..3 {
        h.pod(pod("ns", &format!("p{i}"), "1", "1Gi"));
    }
    let out = h.run();
    assert_eq!(
        binds(&out),
        vec![("p0".into(), "n1".into()), ("p1".into(), "n1".into())]
    );
    assert_eq!(pod_reasons(&out).len(), 1);
    assert_eq!(
        h.e.queue().state(&UnitKey::Pod(PodKey::new("ns", "p2"))),
        Some(QueueState::Unschedulable)
    );
}

#[test]
pub(super) fn pods_of_other_schedulers_are_left_alone_but_count() {
    let mut h = Harness::new();
    h.node("n1", "2");
    let mut other = pod("ns", "other", "1", "1Gi");
    other.spec.as_mut().unwrap().scheduler_name = Some("someone-else".into());
    h.pod(other.clone());
    assert!(h.run().is_empty());
    h.pod(bound(other, "n1"));
    h.pod(pod("ns", "mine", "2", "1Gi"));
    let out = h.run();
    assert!(binds(&out).is_empty());
    assert_eq!(pod_reasons(&out)[0].1, REASON_UNSCHEDULABLE);
}

#[test]
pub(super) fn a_rejected_binding_releases_the_pod_and_backs_off() {
    let mut h = Harness::new();
    h.node("n1", "2");
    h.group(GroupBuilder::gang("ns", "g", 2));
    h.pod(pod_in_group("ns", "g-0", "g", "1", "1Gi"));
    h.pod(pod_in_group("ns", "g-1", "g", "1", "1Gi"));
    let out = h.run();
    assert_eq!(binds(&out).len(), 2);
    let mut after = Vec::new();
    let key = PodKey::new("ns", "g-1");
    h.e.bind_finished(&PodKey::new("ns", "g-0"), "n1", BindResult::Bound, h.now, &mut after);
    h.e.bind_finished(&key, "n1", BindResult::Failed("boom".into()), h.now, &mut after);
    assert_eq!(h.e.snapshot().pod_state(&key), Some((PodState::Pending, None)));
    assert_eq!(
        pod_reasons(&after),
        vec![(
            "g-1".into(),
            REASON_SCHEDULER_ERROR.into(),
            "Binding rejected: boom".into()
        )]
    );
    assert_eq!(h.e.queue().state(&gang_unit("g")), Some(QueueState::Backoff));
    assert!(h.run().is_empty(), "nothing before the backoff expires");
    h.advance(Duration::from_secs(1));
    // The bound pod counts towards the gang; only the released one is bound again.
    let out = h.run();
    assert_eq!(binds(&out), vec![("g-1".into(), "n1".into())]);
}

#[test]
pub(super) fn a_binding_conflict_is_left_to_the_informer() {
    let mut h = Harness::new();
    h.node("n1", "2");
    h.pod(pod("ns", "p", "1", "1Gi"));
    let out = h.run();
    assert_eq!(binds(&out).len(), 1);
    let mut after = Vec::new();
    let key = PodKey::new("ns", "p");
    h.e.bind_finished(
        &key,
        "n1",
        BindResult::Conflict("already assigned".into()),
        h.now,
        &mut after,
    );
    assert!(after.is_empty());
    assert_eq!(h.e.snapshot().pod_state(&key).map(|s| s.0), Some(PodState::Assumed));
}

#[test]
pub(super) fn group_conditions_never_regress_from_true() {
    let mut h = Harness::new();
    h.node("n1", "2");
    let mut pg = GroupBuilder::gang("ns", "g", 1).pod_group();
    pg.status = Some(kwas_api_types::v1alpha3::PodGroupStatus {
        conditions: Some(vec![Condition {
            type_: POD_GROUP_INITIALLY_SCHEDULED.into(),
            status: "True".into(),
            reason: REASON_SCHEDULED.into(),
            message: "minCount (1) satisfied: 1 scheduled".into(),
            last_transition_time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(Timestamp::now()),
            observed_generation: None,
        }]),
        ..Default::default()
    });
    h.apply(Object::PodGroup(Box::new(pg)));
    h.pod(bound(pod_in_group("ns", "g-0", "g", "2", "1Gi"), "n1"));
    // An extra pod that does not fit: the group stays True, the pod is Unschedulable.
    h.pod(pod_in_group("ns", "g-1", "g", "2", "1Gi"));
    let out = h.run();
    assert!(binds(&out).is_empty());
    assert!(group_conditions(&out).is_empty(), "{out:?}");
    assert_eq!(pod_reasons(&out)[0].1, REASON_UNSCHEDULABLE);
}

#[test]
pub(super) fn an_invalid_hierarchy_marks_its_groups_and_pods() {
    let mut h = Harness::new();
    h.node("n1", "4");
    h.apply(Object::CompositePodGroup(Box::new(
        GroupBuilder::gang("ns", "root", 1).all().composite(),
    )));
    h.group(GroupBuilder::gang("ns", "leaf", 1).parent("root"));
    h.pod(pod_in_group("ns", "p", "leaf", "1", "1Gi"));
    let out = h.run();
    assert!(binds(&out).is_empty());
    let mut gc = group_conditions(&out);
    gc.sort();
    assert_eq!(
        gc,
        vec![
            (
                "leaf".into(),
                POD_GROUP_INITIALLY_SCHEDULED.into(),
                false,
                REASON_INVALID.into()
            ),
            (
                "root".into(),
                COMPOSITE_POD_GROUP_INITIALLY_SCHEDULED.into(),
                false,
                REASON_INVALID.into()
            ),
        ]
    );
    assert_eq!(pod_reasons(&out)[0].1, REASON_SCHEDULER_ERROR);
}

#[test]
pub(super) fn preemption_evicts_whole_all_units_reserves_and_then_binds() {
    let mut h = Harness::new();
    h.node("n1", "4");
    h.group(GroupBuilder::gang("ns", "low", 2).all().priority(1));
    for i in 0..2 {
        h.pod(bound(
            with_priority(pod_in_group("ns", &format!("low-{i}"), "low", "2", "1Gi"), 1),
            "n1",
        ));
    }
    h.group(GroupBuilder::gang("ns", "high", 1).priority(100));
    h.pod(with_priority(pod_in_group("ns", "high-0", "high", "1", "1Gi"), 100));
    let out = h.run();
    assert!(binds(&out).is_empty());
    let evicted: Vec<String> = out
        .iter()
        .filter_map(|a| match a {
            Action::Evict {
                pod, condition, event, ..
            } => {
                assert_eq!(condition.reason, REASON_PREEMPTION_BY_SCHEDULER);
                assert_eq!(
                    condition.message,
                    "kwas-scheduler: preempting to accommodate a higher priority podgroup ns/high (priority 100)"
                );
                assert_eq!(event.note, "Preempted by podgroup ns/high on node n1");
                Some(pod.name.clone())
            }
            _ => None,
        })
        .collect();
    assert_eq!(evicted, vec!["low-0", "low-1"], "an `all` unit goes whole");
    let gc = group_conditions(&out);
    assert!(gc.contains(&(
        "low".into(),
        DISRUPTION_TARGET.into(),
        true,
        REASON_PREEMPTION_BY_SCHEDULER.into()
    )));
    assert!(gc.contains(&(
        "high".into(),
        POD_GROUP_INITIALLY_SCHEDULED.into(),
        false,
        REASON_UNSCHEDULABLE.into()
    )));
    let nominated: Vec<_> = out
        .iter()
        .filter_map(|a| match a {
            Action::PodStatus(PodStatusUpdate {
                pod,
                nominated_node_name: Some(n),
                ..
            }) => Some((pod.name.clone(), n.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(nominated, vec![("high-0".to_string(), Some("n1".to_string()))]);
    assert_eq!(h.e.preempting(), vec![gang_unit("high")]);

    // A lower-priority newcomer cannot take the reserved room while the victims terminate.
    h.pod(pod("ns", "small", "1", "1Gi"));
    h.advance(Duration::from_secs(30));
    let out = h.run();
    assert!(binds(&out).is_empty(), "{out:?}");

    // The victims go: the preemptor runs right away and binds where it was nominated.
    for i in 0..2 {
        h.delete(Object::Pod(Box::new(pod_in_group(
            "ns",
            &format!("low-{i}"),
            "low",
            "2",
            "1Gi",
        ))));
    }
    let out = h.run();
    let b = binds(&out);
    assert!(b.contains(&("high-0".into(), "n1".into())), "{b:?}");
    assert!(h.e.preempting().is_empty());
    assert_eq!(h.e.metrics.victims(), 2);
}

#[test]
pub(super) fn a_preemptor_whose_victims_linger_is_retried_after_the_timeout() {
    let mut h = Harness::new();
    h.node("n1", "2");
    let low = bound(with_priority(pod("ns", "low", "2", "1Gi"), 1), "n1");
    h.pod(low.clone());
    h.pod(with_priority(pod("ns", "high", "2", "1Gi"), 10));
    let out = h.run();
    assert_eq!(out.iter().filter(|a| matches!(a, Action::Evict { .. })).count(), 1);
    assert_eq!(h.e.next_wakeup(), Some(h.now.instant + Duration::from_secs(60)));
    // The victim is observed terminating, but never goes away.
    let mut terminating = low;
    terminating.metadata.deletion_timestamp =
        Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(Timestamp::now()));
    h.pod(terminating);
    h.advance(Duration::from_secs(30));
    assert!(h.run().is_empty(), "nothing happens before the timeout");
    h.advance(Duration::from_secs(31));
    h.e.end_of_batch(h.now);
    let out = h.run();
    // The reservation is dropped and the preemptor tries again; a terminating pod is never a
    // victim again, so nothing more is evicted.
    assert!(h.e.preempting().is_empty());
    assert!(binds(&out).is_empty());
    assert!(!out.iter().any(|a| matches!(a, Action::Evict { .. })), "{out:?}");
    assert_eq!(
        h.e.queue().state(&UnitKey::Pod(PodKey::new("ns", "high"))),
        Some(QueueState::Unschedulable)
    );
}

#[test]
pub(super) fn a_relist_drops_objects_deleted_while_disconnected() {
    let mut h = Harness::new();
    h.node("n1", "2");
    h.node("n2", "2");
    h.pod(bound(pod("ns", "p", "1", "1Gi"), "n1"));
    let now = h.now;
    h.e.apply(InformerEvent::InitStart(Kind::Node), now);
    h.e.apply(
        InformerEvent::InitApply(Object::Node(Box::new(node("n2", "2", "64Gi", &[])))),
        now,
    );
    h.e.apply(InformerEvent::InitDone(Kind::Node), now);
    h.e.apply(InformerEvent::InitStart(Kind::Pod), now);
    h.e.apply(InformerEvent::InitDone(Kind::Pod), now);
    assert_eq!(h.e.snapshot().node_names().collect::<Vec<_>>(), vec!["n2"]);
    assert_eq!(h.e.snapshot().pod_count(), 0);
    assert!(h.e.pod_meta(&PodKey::new("ns", "p")).is_none());
}

#[test]
pub(super) fn a_restarted_scheduler_completes_a_half_bound_gang_first() {
    let mut h = Harness::new();
    h.node("n1", "4");
    // Another gang of the same priority arrived first and would take the room.
    h.group(GroupBuilder::gang("ns", "other", 2));
    for i in 0..2 {
        h.pod(pod_in_group("ns", &format!("other-{i}"), "other", "1", "1Gi"));
    }
    // The gang a previous instance was binding when it died: two of four bound.
    h.group(GroupBuilder::gang("ns", "g", 4));
    for i in 0..4 {
        let p = pod_in_group("ns", &format!("g-{i}"), "g", "1", "1Gi");
        h.pod(if i < 2 { bound(p, "n1") } else { p });
    }
    let out = h.run();
    let b = binds(&out);
    assert_eq!(
        b,
        vec![("g-2".into(), "n1".into()), ("g-3".into(), "n1".into())],
        "{b:?}"
    );
}

#[test]
pub(super) fn status_writes_do_not_wake_an_unschedulable_unit() {
    let mut h = Harness::new();
    h.node("n1", "1");
    let mut p = pod("ns", "big", "2", "1Gi");
    p.metadata.generation = Some(1);
    h.pod(p.clone());
    let out = h.run();
    assert_eq!(pod_reasons(&out).len(), 1);
    let unit = UnitKey::Pod(PodKey::new("ns", "big"));
    assert_eq!(h.e.queue().state(&unit), Some(QueueState::Unschedulable));
    // The echo of our own status write.
    let written = match &out[0] {
        Action::PodStatus(u) => u.prepared.clone().unwrap(),
        other => panic!("{other:?}"),
    };
    p.status = Some(PodStatus {
        conditions: Some(vec![written]),
        ..Default::default()
    });
    p.metadata.resource_version = Some("2".into());
    h.pod(p);
    assert_eq!(h.e.queue().state(&unit), Some(QueueState::Unschedulable));
    assert_eq!(
        h.e.pod_meta(&PodKey::new("ns", "big"))
            .unwrap()
            .resource_version
            .as_deref(),
        Some("2")
    );
    // Nor do node status updates that change nothing scheduling reads.
    h.node("n1", "1");
    assert_eq!(h.e.queue().state(&unit), Some(QueueState::Unschedulable));
    h.node("n1", "4");
    assert_ne!(h.e.queue().state(&unit), Some(QueueState::Unschedulable));
}

#[test]
pub(super) fn a_pod_the_snapshot_rejects_is_told_why() {
    let mut h = Harness::new();
    h.node("n1", "2");
    h.pod(pod("ns", "bad", "lots", "1Gi"));
    let mut out = Vec::new();
    h.e.take_deferred(&mut out);
    let reasons = pod_reasons(&out);
    assert_eq!(reasons.len(), 1, "{out:?}");
    assert_eq!(reasons[0].1, REASON_SCHEDULER_ERROR);
    assert!(
        reasons[0].2.contains("spec.containers[0].resources.requests[cpu]"),
        "{}",
        reasons[0].2
    );
    assert_eq!(event_reasons(&out), vec!["FailedScheduling"]);
    assert!(h.run().is_empty());
    // Fixed (a new version), it is scheduled.
    let mut fixed = pod("ns", "bad", "1", "1Gi");
    fixed.metadata.generation = Some(2);
    h.pod(fixed);
    assert_eq!(binds(&h.run()), vec![("bad".into(), "n1".into())]);
}

#[test]
pub(super) fn a_deleted_preemptor_drops_its_reservation() {
    let mut h = Harness::new();
    h.node("n1", "2");
    h.pod(bound(with_priority(pod("ns", "low", "2", "1Gi"), 1), "n1"));
    let high = with_priority(pod("ns", "high", "2", "1Gi"), 10);
    h.pod(high.clone());
    h.run();
    assert_eq!(h.e.preempting().len(), 1);
    h.delete(Object::Pod(Box::new(high)));
    h.advance(Duration::from_secs(61));
    h.e.end_of_batch(h.now);
    assert!(h.e.preempting().is_empty());
    assert!(
        h.e.next_wakeup().is_none_or(|t| t > h.now.instant),
        "no timer left in the past"
    );
}

#[test]
pub(super) fn terminal_pods_free_their_node() {
    let mut h = Harness::new();
    h.node("n1", "2");
    let running = bound(pod("ns", "done", "2", "1Gi"), "n1");
    h.pod(running.clone());
    h.pod(pod("ns", "next", "2", "1Gi"));
    assert!(binds(&h.run()).is_empty());
    let mut finished = running;
    finished.status = Some(PodStatus {
        phase: Some("Succeeded".into()),
        ..Default::default()
    });
    h.pod(finished);
    h.advance(Duration::from_secs(1));
    assert_eq!(binds(&h.run()), vec![("next".into(), "n1".into())]);
}

fn marked_victim(mut p: Pod) -> Pod {
    let status = p.status.get_or_insert_with(PodStatus::default);
    status
        .conditions
        .get_or_insert_with(Vec::new)
        .push(k8s_openapi::api::core::v1::PodCondition {
            type_: DISRUPTION_TARGET.into(),
            status: "True".into(),
            reason: Some(REASON_PREEMPTION_BY_SCHEDULER.into()),
            ..Default::default()
        });
    p
}

#[test]
pub(super) fn a_new_leader_waits_for_the_victims_of_a_preemption_it_did_not_decide() {
    // What the cluster shows after the previous leader preempted and died: the preemptor nominated to
    // n1, its victim on n1 marked and terminating.
    let mut h = Harness::new();
    h.node("n1", "2");
    let mut victim = marked_victim(bound(with_priority(pod("ns", "low", "2", "1Gi"), 1), "n1"));
    victim.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(h.now.wall));
    h.pod(victim.clone());
    let mut preemptor = with_priority(pod("ns", "high", "2", "1Gi"), 10);
    preemptor
        .status
        .get_or_insert_with(PodStatus::default)
        .nominated_node_name = Some("n1".into());
    h.pod(preemptor);
    let out = h.run();
    assert!(
        !out.iter().any(|a| matches!(a, Action::Evict { .. })),
        "no second preemption: {out:?}"
    );
    assert!(binds(&out).is_empty());
    assert_eq!(h.e.preempting().len(), 1, "the preemption in progress is taken over");
    // The victim goes: the preemptor binds where it was nominated.
    h.delete(Object::Pod(Box::new(victim)));
    let out = h.run();
    assert_eq!(binds(&out), vec![("high".to_string(), "n1".to_string())]);
}

#[test]
pub(super) fn a_marked_victim_that_was_not_deleted_is_evicted_again_until_it_goes() {
    let mut h = Harness::new();
    h.node("n1", "4");
    let victim = marked_victim(bound(pod("ns", "v", "1", "1Gi"), "n1"));
    h.pod(victim.clone());
    let mut out = Vec::new();
    h.e.retry_evictions(h.now, &mut out);
    assert!(out.is_empty(), "not before the retry delay");
    assert_eq!(h.e.next_wakeup(), Some(h.now.instant + preemption::EVICTION_RETRY));
    for _ in 0..2 {
        h.advance(preemption::EVICTION_RETRY);
        let mut out = Vec::new();
        h.e.retry_evictions(h.now, &mut out);
        assert!(
            matches!(out.as_slice(), [Action::Evict { pod, .. }] if pod.name == "v"),
            "{out:?}"
        );
    }
    // Being deleted now: no more retries.
    let mut deleting = victim;
    deleting.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(h.now.wall));
    h.pod(deleting);
    h.advance(preemption::EVICTION_RETRY * 3);
    let mut out = Vec::new();
    h.e.retry_evictions(h.now, &mut out);
    assert!(out.is_empty(), "{out:?}");
}

#[test]
pub(super) fn a_gang_left_partially_bound_is_released_after_the_timeout() {
    let mut h = Harness::new();
    h.node("n1", "3");
    // Two of four bound by an instance that died; the other two no longer fit (one cpu is taken).
    h.pod(bound(pod("ns", "squatter", "1", "1Gi"), "n1"));
    h.group(GroupBuilder::gang("ns", "g", 4));
    for i in 0..4 {
        let p = pod_in_group("ns", &format!("g-{i}"), "g", "1", "1Gi");
        h.pod(if i < 2 { bound(p, "n1") } else { p });
    }
    let out = h.run();
    assert!(binds(&out).is_empty());
    assert!(
        !out.iter().any(|a| matches!(a, Action::Evict { .. })),
        "not yet: {out:?}"
    );
    // Retried (max_unschedulable) past the timeout: the two bound pods are released.
    h.advance(Duration::from_secs(61));
    h.e.end_of_batch(h.now);
    let mut out = h.run();
    for _ in 0..10 {
        if out.iter().any(|a| matches!(a, Action::Evict { .. })) {
            break;
        }
        h.advance(Duration::from_secs(60));
        h.e.end_of_batch(h.now);
        out = h.run();
    }
    let mut evicted: Vec<String> = out
        .iter()
        .filter_map(|a| match a {
            Action::Evict { pod, .. } => Some(pod.name.clone()),
            _ => None,
        })
        .collect();
    evicted.sort();
    assert_eq!(evicted, ["g-0", "g-1"], "{out:?}");
}

#[test]
pub(super) fn failures_read_like_upstreams_and_record_the_generation() {
    let mut h = Harness::new();
    h.node("n1", "2");
    h.pod(bound(with_priority(pod("ns", "low", "2", "1Gi"), 1), "n1"));
    // May not preempt: upstream's PostFilter message follows the filter message.
    let mut never = with_priority(pod("ns", "never", "2", "1Gi"), 100);
    never.spec.as_mut().unwrap().preemption_policy = Some("Never".into());
    never.metadata.generation = Some(3);
    h.pod(never);
    let out = h.run();
    let reasons = pod_reasons(&out);
    assert_eq!(
        reasons,
        vec![(
            "never".to_string(),
            REASON_UNSCHEDULABLE.to_string(),
            "0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never."
                .to_string()
        )]
    );
    let written = out.iter().find_map(|a| match a {
        Action::PodStatus(PodStatusUpdate { prepared: Some(c), .. }) => Some(c.observed_generation),
        _ => None,
    });
    assert_eq!(written, Some(Some(3)), "observedGeneration is the pod's generation");

    // Something the scheduler cannot honour (a claim asking for admin access): its own reason, never
    // placed.
    h.node("n2", "8");
    h.apply(Object::ResourceClaim(Box::new(
        serde_json::from_value(serde_json::json!({
            "metadata": {"namespace": "ns", "name": "claim", "uid": "c1"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu", "adminAccess": true}}]}}
        }))
        .unwrap(),
    )));
    let mut dra = pod("ns", "dra", "1", "1Gi");
    dra.spec.as_mut().unwrap().resource_claims = Some(vec![k8s_openapi::api::core::v1::PodResourceClaim {
        name: "gpu".into(),
        resource_claim_name: Some("claim".into()),
        ..Default::default()
    }]);
    h.pod(dra);
    let out = h.run();
    assert!(binds(&out).iter().all(|(p, _)| p != "dra"), "{out:?}");
    let r = pod_reasons(&out);
    let dra = r.iter().find(|(p, ..)| p == "dra").unwrap();
    assert_eq!(dra.1, kwas_api_types::names::conditions::REASON_UNSUPPORTED);
    assert!(dra.2.contains("adminAccess is not supported"), "{}", dra.2);
    assert!(
        dra.2
            .ends_with("preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."),
        "{}",
        dra.2
    );
}

#[test]
pub(super) fn a_gang_with_inter_pod_constraints_is_not_guaranteed() {
    let mut h = Harness::new();
    h.node("n1", "8");
    h.node("n2", "8");
    h.group(GroupBuilder::gang("ns", "g", 3));
    for i in 0..3 {
        let mut p = pod_in_group("ns", &format!("p{i}"), "g", "1", "1Gi");
        p.metadata.labels = Some([("app".to_string(), "x".to_string())].into());
        p.spec.as_mut().unwrap().affinity = Some(
            serde_json::from_value(serde_json::json!({
                "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}
                ]}
            }))
            .unwrap(),
        );
        h.pod(p);
    }
    h.e.apply(
        InformerEvent::Apply(Object::Node(Box::new(node(
            "n1",
            "8",
            "64Gi",
            &[("kubernetes.io/hostname", "n1")],
        )))),
        h.now,
    );
    h.e.apply(
        InformerEvent::Apply(Object::Node(Box::new(node(
            "n2",
            "8",
            "64Gi",
            &[("kubernetes.io/hostname", "n2")],
        )))),
        h.now,
    );
    h.e.end_of_batch(h.now);
    h.advance(Duration::from_secs(2));
    let out = h.run();
    assert!(binds(&out).is_empty());
    let groups = group_conditions(&out);
    assert!(
        groups.iter().any(|(_, _, status, reason)| !status
            && reason == kwas_api_types::names::conditions::REASON_PLACEMENT_NOT_GUARANTEED),
        "{groups:?}"
    );
    assert!(
        pod_reasons(&out)
            .iter()
            .all(|(_, r, _)| r == kwas_api_types::names::conditions::REASON_PLACEMENT_NOT_GUARANTEED)
    );
}

/// A member the kubelet rejected (`Failed`, reason `OutOfcpu`: another scheduler raced for the node) is a
/// lost member: the gang is reported below its minimum and, with a recovery policy on its PodGroup,
/// scheduled again whole once the grace period passed (its survivor evicted with `DisruptionTarget`);
/// without one it is only reported.
#[test]
pub(super) fn a_member_rejected_by_its_kubelet_breaks_the_gang_and_recovery_replaces_it() {
    for recovery in [Some("5"), None] {
        let mut h = Harness::new();
        h.node("n1", "4");
        h.node("n2", "4");
        let mut group = GroupBuilder::gang("ns", "g", 2).pod_group();
        if let Some(s) = recovery {
            group.metadata.annotations = Some(
                [(
                    kwas_api_types::names::annotations::GANG_RECOVERY_SECONDS.to_string(),
                    s.to_string(),
                )]
                .into(),
            );
        }
        h.apply(Object::PodGroup(Box::new(group)));
        for (i, n) in [(0, "n1"), (1, "n2")] {
            h.pod(bound(pod_in_group("ns", &format!("g-{i}"), "g", "1", "1Gi"), n));
        }
        let mut out = Vec::new();
        h.e.turn(h.now, true, false, &mut out);
        let satisfied = |out: &[Action]| {
            group_conditions(out)
                .into_iter()
                .find(|(_, t, ..)| t == kwas_api_types::names::conditions::POD_GROUP_SATISFIED)
                .map(|(_, _, s, r)| (s, r))
        };
        assert_eq!(satisfied(&out), Some((true, "MinCountSatisfied".to_string())));
        // The kubelet of n2 rejects g-1.
        let mut rejected = bound(pod_in_group("ns", "g-1", "g", "1", "1Gi"), "n2");
        rejected.status = Some(PodStatus {
            phase: Some("Failed".into()),
            reason: Some("OutOfcpu".into()),
            message: Some("Pod was rejected: Node didn't have enough resource: cpu".into()),
            ..Default::default()
        });
        h.pod(rejected);
        let mut out = Vec::new();
        h.e.turn(h.now, true, false, &mut out);
        assert_eq!(
            satisfied(&out),
            Some((false, "BelowMinCount".to_string())),
            "{recovery:?}"
        );
        assert!(
            !out.iter().any(|a| matches!(a, Action::Evict { .. })),
            "not before the grace period"
        );
        assert_eq!(h.e.next_wakeup().is_some(), recovery.is_some());
        h.advance(Duration::from_secs(5));
        let mut out = Vec::new();
        h.e.turn(h.now, true, false, &mut out);
        let evicted: Vec<String> = out
            .iter()
            .filter_map(|a| match a {
                Action::Evict { pod, condition, .. } => {
                    assert_eq!(condition.type_, DISRUPTION_TARGET);
                    assert!(
                        condition.message.contains("gang-recovery-seconds"),
                        "{}",
                        condition.message
                    );
                    Some(pod.name.clone())
                }
                _ => None,
            })
            .collect();
        let expected: Vec<String> = if recovery.is_some() { vec!["g-0".into()] } else { vec![] };
        assert_eq!(evicted, expected, "{recovery:?}");
    }
}
