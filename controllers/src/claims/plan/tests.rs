use serde_json::json;

use super::*;

fn pod(v: serde_json::Value) -> Pod {
    let mut base = json!({"metadata": {"namespace": "ns", "name": "p", "uid": "pod-uid"},
        "spec": {"containers": [{"name": "c", "image": "i"}]}});
    json_patch::merge(&mut base, &v);
    serde_json::from_value(base).unwrap()
}

fn group(v: serde_json::Value) -> PodGroup {
    let mut base = json!({"metadata": {"namespace": "ns", "name": "g", "uid": "group-uid"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}});
    json_patch::merge(&mut base, &v);
    serde_json::from_value(base).unwrap()
}

fn claim(name: &str, annotation: &str, entry: &str, owner_uid: &str) -> ResourceClaim {
    serde_json::from_value(json!({"metadata": {"namespace": "ns", "name": name,
        "annotations": {annotation: entry},
        "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "x", "uid": owner_uid, "controller": true}]},
        "spec": {}}))
    .unwrap()
}

#[test]
fn a_pods_template_claim_is_created_then_recorded() {
    let p = pod(json!({"spec": {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}]}}));
    let Step::Create(c) = plan_pod(&p, None, &[]) else {
        panic!()
    };
    assert_eq!(
        c.owner,
        Owner::Pod {
            name: "p".into(),
            uid: "pod-uid".into()
        }
    );
    assert_eq!(
        (c.entry.as_str(), c.template.as_str(), c.generate_name.as_str()),
        ("gpu", "t", "p-gpu-")
    );
    // Created (a restart finds it by owner and annotation): recorded.
    let made = claim("p-gpu-abcde", POD_CLAIM_ANNOTATION, "gpu", "pod-uid");
    assert_eq!(
        plan_pod(&p, None, std::slice::from_ref(&made)),
        Step::Record(vec![("gpu".into(), Some("p-gpu-abcde".into()))])
    );
    // Someone else's claim with the same annotation is not ours.
    let other = claim("other", POD_CLAIM_ANNOTATION, "gpu", "another-uid");
    assert!(matches!(plan_pod(&p, None, &[other]), Step::Create(_)));
    // Recorded: nothing more.
    let p = pod(
        json!({"spec": {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}]},
        "status": {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "p-gpu-abcde"}]}}),
    );
    assert_eq!(plan_pod(&p, None, &[]), Step::Nothing);
    // Named claims need nothing; finished pods need nothing.
    let p = pod(json!({"spec": {"resourceClaims": [{"name": "gpu", "resourceClaimName": "c"}]}}));
    assert_eq!(plan_pod(&p, None, &[]), Step::Nothing);
    let p = pod(
        json!({"spec": {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}]},
        "status": {"phase": "Succeeded"}}),
    );
    assert_eq!(plan_pod(&p, None, &[]), Step::Nothing);
}

#[test]
fn a_claim_equal_to_the_groups_is_the_groups() {
    let entry = json!([{"name": "net", "resourceClaimTemplateName": "t"}]);
    let g = group(json!({"spec": {"resourceClaims": entry}}));
    // The group's claim is created once, for the group.
    let Step::Create(c) = plan_group(&g, &[]) else { panic!() };
    assert_eq!(
        c.owner,
        Owner::PodGroup {
            name: "g".into(),
            uid: "group-uid".into()
        }
    );
    assert_eq!(c.generate_name, "g-net-");
    let made = claim("g-net-xyz12", PODGROUP_CLAIM_ANNOTATION, "net", "group-uid");
    assert_eq!(
        plan_group(&g, std::slice::from_ref(&made)),
        Step::Record(vec![("net".into(), Some("g-net-xyz12".into()))])
    );
    let g = group(json!({"spec": {"resourceClaims": entry},
        "status": {"resourceClaimStatuses": [{"name": "net", "resourceClaimName": "g-net-xyz12"}]}}));
    assert_eq!(plan_group(&g, &[]), Step::Nothing);
    // A pod of the group with the same entry records the group's claim; it never creates its own.
    let p = pod(json!({"spec": {"schedulingGroup": {"podGroupName": "g"}, "resourceClaims": entry}}));
    assert_eq!(
        plan_pod(&p, Some(&g), &[]),
        Step::Record(vec![("net".into(), Some("g-net-xyz12".into()))])
    );
    // Before the group records it, the pod waits.
    let pending = group(json!({"spec": {"resourceClaims": entry}}));
    assert!(matches!(plan_pod(&p, Some(&pending), &[]), Step::Wait(_)));
    // Without its PodGroup, the pod waits too (it may be meant to share).
    assert!(matches!(plan_pod(&p, None, &[]), Step::Wait(_)));
    // A differing entry (another template) is the pod's own.
    let own = pod(json!({"spec": {"schedulingGroup": {"podGroupName": "g"},
        "resourceClaims": [{"name": "net", "resourceClaimTemplateName": "other"}]}}));
    assert!(matches!(
        plan_pod(&own, Some(&g), &[]),
        Step::Create(NewClaim {
            owner: Owner::Pod { .. },
            ..
        })
    ));
}

#[test]
fn generated_names_stay_within_the_limit() {
    let long = "x".repeat(100);
    let n = generate_name(&long, &long);
    assert_eq!(n.len(), 28 + 1 + 28 + 1);
    assert_eq!(generate_name("p", "gpu"), "p-gpu-");
    // Multi-byte names are cut on a character boundary.
    let n = generate_name(&"é".repeat(40), &"ü".repeat(40));
    assert!(n.len() <= 58);
}

fn allocated(
    reserved: serde_json::Value,
    finalizers: serde_json::Value,
    annotations: serde_json::Value,
) -> ResourceClaim {
    serde_json::from_value(
        json!({"metadata": {"namespace": "ns", "name": "c", "finalizers": finalizers, "annotations": annotations},
        "spec": {},
        "status": {"allocation": {"devices": {"results": []}}, "reservedFor": reserved}}),
    )
    .unwrap()
}

#[test]
fn reservations_follow_consumers_then_the_claim_is_released() {
    let a = json!({"resource": "pods", "name": "a", "uid": "ua"});
    let b = json!({"resource": "pods", "name": "b", "uid": "ub"});
    let c = allocated(json!([a, b]), json!([DELETE_PROTECTION]), json!({}));
    let gone_b = |r: &ResourceClaimConsumerReference| {
        if r.name == "b" {
            Consumer::Gone
        } else {
            Consumer::Active
        }
    };
    let ClaimStep::Status {
        reserved_for,
        deallocate,
        drop_finalizer,
    } = plan_claim(&c, gone_b, false)
    else {
        panic!()
    };
    assert_eq!(reserved_for.len(), 1);
    assert!(!deallocate && !drop_finalizer);
    // The last consumer gone: reservation and allocation go in one write, then the finalizer.
    assert_eq!(
        plan_claim(&c, |_| Consumer::Gone, false),
        ClaimStep::Status {
            reserved_for: vec![],
            deallocate: true,
            drop_finalizer: true
        }
    );
    // Unreserved but allocated, or holding the finalizer without an allocation: the scheduler may be
    // between its writes; left alone (upstream's rule).
    let c = allocated(json!([]), json!([DELETE_PROTECTION]), json!({}));
    assert_eq!(plan_claim(&c, |_| Consumer::Active, false), ClaimStep::Nothing);
    let c: ResourceClaim = serde_json::from_value(json!({"metadata": {"namespace": "ns", "name": "c",
        "finalizers": [DELETE_PROTECTION]}, "spec": {}}))
    .unwrap();
    assert_eq!(plan_claim(&c, |_| Consumer::Active, false), ClaimStep::Nothing);
    // Being deleted and unused: unblocked.
    let c: ResourceClaim = serde_json::from_value(json!({"metadata": {"namespace": "ns", "name": "c",
        "finalizers": [DELETE_PROTECTION], "deletionTimestamp": "2026-01-01T00:00:00Z"}, "spec": {},
        "status": {"allocation": {"devices": {"results": []}}}}))
    .unwrap();
    assert_eq!(
        plan_claim(&c, |_| Consumer::Active, false),
        ClaimStep::Unblock { deallocate: true }
    );
    // A pod's generated claim, unreserved, is deleted once its pod is done or replaced.
    let c: ResourceClaim = serde_json::from_value(json!({"metadata": {"namespace": "ns", "name": "c",
        "annotations": {POD_CLAIM_ANNOTATION: "gpu"}}, "spec": {}}))
    .unwrap();
    assert_eq!(plan_claim(&c, |_| Consumer::Active, true), ClaimStep::Delete);
    assert_eq!(plan_claim(&c, |_| Consumer::Active, false), ClaimStep::Nothing);
    // A user's claim is never deleted.
    let c: ResourceClaim =
        serde_json::from_value(json!({"metadata": {"namespace": "ns", "name": "c"}, "spec": {}})).unwrap();
    assert_eq!(plan_claim(&c, |_| Consumer::Active, true), ClaimStep::Nothing);
    // Active consumers keep everything.
    let c = allocated(json!([a]), json!([DELETE_PROTECTION]), json!({}));
    assert_eq!(plan_claim(&c, |_| Consumer::Active, false), ClaimStep::Nothing);
}

#[test]
fn which_pods_still_need_claims() {
    assert!(pod_needs_claims(&pod(json!({}))));
    assert!(!pod_needs_claims(&pod(json!({"status": {"phase": "Failed"}}))));
    assert!(!pod_needs_claims(&pod(
        json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}})
    )));
    assert!(pod_needs_claims(&pod(
        json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}, "spec": {"nodeName": "n"}})
    )));
}
