//! What the example controller creates for a LeaderWorkerSet: one CompositePodGroup per replica from the same
//! template, each with a leader and a workers PodGroup, all checked against the API server's rules.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use lws_controller::{LeaderWorkerSet, desired};
use serde_json::json;
use workloadbuilder::validation::{validate_composite_pod_group, validate_pod_group, validate_workload};

fn lws(scheduling: serde_json::Value) -> LeaderWorkerSet {
    serde_json::from_value(json!({
        "apiVersion": "examples.kwas.dev/v1alpha1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "serve", "namespace": "default", "uid": "lws-uid"},
        "spec": {
            "replicas": 2,
            "size": 3,
            "leaderTemplate": {"spec": {"containers": [{"name": "leader", "image": "vllm"}]}},
            "workerTemplate": {"spec": {"containers": [{"name": "worker", "image": "vllm"}]}},
            "scheduling": scheduling
        }
    }))
    .unwrap()
}

#[test]
fn one_composite_instance_per_replica_from_one_template() {
    let d = desired(&lws(
        json!({"group": {"schedulingConstraints": {"topology": [{"key": "kwas.dev/rack"}]}}}),
    ))
    .unwrap();
    assert!(validate_workload(&d.workload).is_empty());
    assert!(validate_composite_pod_group(&d.root).is_empty());
    assert_eq!(d.replicas.len(), 2);
    for (i, r) in d.replicas.iter().enumerate() {
        assert_eq!(r.group.spec.workload_ref.template_name, "group");
        assert_eq!(
            r.group.spec.parent_composite_pod_group_name.as_deref(),
            Some("serve-root")
        );
        assert_eq!(r.group.spec.scheduling_policy.gang.as_ref().unwrap().min_group_count, 2);
        assert!(r.group.spec.disruption_mode.as_ref().unwrap().all.is_some());
        assert!(validate_composite_pod_group(&r.group).is_empty());
        let workers = r.workers.as_ref().unwrap();
        assert_eq!(
            workers.spec.parent_composite_pod_group_name.as_deref(),
            Some(format!("serve-{i}").as_str())
        );
        assert_eq!(workers.spec.scheduling_policy.gang.as_ref().unwrap().min_count, 2);
        assert!(validate_pod_group(&r.leader).is_empty() && validate_pod_group(workers).is_empty());
        assert_eq!(r.pods.len(), 3);
    }
    insta::assert_yaml_snapshot!(json!({
        "workload": d.workload,
        "root": d.root,
        "replica0": {"group": d.replicas[0].group, "leader": d.replicas[0].leader, "workers": d.replicas[0].workers, "pods": d.replicas[0].pods},
    }));
}

#[test]
fn basic_escape_hatch_drops_atomic_disruption() {
    let d = desired(&lws(json!({"group": {"schedulingPolicy": {"basic": {}}}}))).unwrap();
    let g = &d.replicas[0].group;
    assert!(g.spec.scheduling_policy.basic.is_some());
    assert!(g.spec.disruption_mode.as_ref().unwrap().single.is_some());
}

#[test]
fn invalid_intent_has_field_paths() {
    let errs = desired(&lws(
        json!({"group": {"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}}}),
    ))
    .unwrap_err();
    assert_eq!(
        errs.to_string(),
        "spec.scheduling.group.disruptionMode: Invalid value: \"\": the disruptionMode `all` is not supported with the Basic scheduling policy"
    );
}

#[test]
fn every_group_carries_the_pods_priority_class() {
    let mut set = lws(json!({}));
    set.spec.leader_template.spec.as_mut().unwrap().priority_class_name = Some("serving".into());
    set.spec.worker_template.spec.as_mut().unwrap().priority_class_name = Some("serving".into());
    let d = desired(&set).unwrap();
    let r = &d.replicas[0];
    assert_eq!(r.group.spec.priority_class_name.as_deref(), Some("serving"));
    assert_eq!(r.leader.spec.priority_class_name.as_deref(), Some("serving"));
    assert_eq!(
        r.workers.as_ref().unwrap().spec.priority_class_name.as_deref(),
        Some("serving")
    );

    set.spec.worker_template.spec.as_mut().unwrap().priority_class_name = None;
    let errs = desired(&set).unwrap_err();
    assert_eq!(
        errs.to_string(),
        "spec.workerTemplate.spec.priorityClassName: Invalid value: \"\": must equal spec.leaderTemplate.spec.priorityClassName: leader and workers share one priority"
    );
}

#[test]
fn a_replica_gang_larger_than_its_groups_is_reported_at_the_users_field() {
    let errs = desired(&lws(
        json!({"group": {"schedulingPolicy": {"gang": {"minGroupCount": 3}}}}),
    ))
    .unwrap_err();
    assert_eq!(
        errs.to_string(),
        "spec.scheduling.group.schedulingPolicy.gang.minGroupCount: Invalid value: 3: must be at most the groups of a replica (2)"
    );
}

#[test]
fn an_empty_policy_block_is_refused_not_read_as_unset() {
    let errs = desired(&lws(json!({"group": {"schedulingPolicy": {}}}))).unwrap_err();
    assert_eq!(
        errs.to_string(),
        "spec.scheduling.group.schedulingPolicy: Invalid value: \"\": must specify one of: `basic`, `gang`"
    );
}
