#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;

use super::*;
use crate::jobset::v1alpha2;

fn v1alpha2_with(policy: Option<&str>) -> Value {
    let mut obj = json!({
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "js", "namespace": "default", "labels": {"a": "b"}},
        "spec": {
            "replicatedJobs": [{"name": "workers", "replicas": 2, "template": {"spec": {"template": {"spec": {"containers": []}}}}}],
            "failurePolicy": {"maxRestarts": 3, "rules": [{"name": "r", "action": "FailJobSet", "onJobFailureMessagePatterns": ["oom"]}]},
            "scheduling": {"schedulingPolicy": {"gang": {"minCount": 2}}}
        },
        "status": {"restarts": 1, "replicatedJobsStatus": [{"name": "workers", "ready": 1, "succeeded": 0, "failed": 0, "active": 2, "suspended": 0}]}
    });
    if let Some(p) = policy {
        obj["spec"]["startupPolicy"] = json!({"startupPolicyOrder": p});
    }
    obj
}

#[test]
fn startup_policy_moves_to_the_annotation_and_back() {
    let alpha = v1alpha2_with(Some("InOrder"));
    let v1 = convert(alpha.clone(), API_VERSION).unwrap();
    assert_eq!(v1["apiVersion"], API_VERSION);
    assert!(v1["spec"].get("startupPolicy").is_none());
    let encoded = v1["metadata"]["annotations"][STARTUP_POLICY_ANNOTATION]
        .as_str()
        .unwrap()
        .to_string();
    // Go's json.Marshal of the StartupPolicy, base64 (StdEncoding).
    assert_eq!(encoded, STANDARD.encode(r#"{"startupPolicyOrder":"InOrder"}"#));
    // Everything else is the same object, fields upstream's ConvertTo misses included.
    assert_eq!(v1["spec"]["failurePolicy"], alpha["spec"]["failurePolicy"]);
    assert_eq!(v1["spec"]["scheduling"], alpha["spec"]["scheduling"]);
    assert_eq!(v1["status"], alpha["status"]);
    // It deserializes as the v1 type.
    let typed: JobSet = serde_json::from_value(v1.clone()).unwrap();
    assert_eq!(typed.spec.replicated_jobs[0].replicas, 2);

    let back = convert(v1, v1alpha2::API_VERSION).unwrap();
    assert_eq!(back["spec"], alpha["spec"]);
    assert_eq!(back["status"], alpha["status"]);
    // The annotation stays, as upstream's ConvertFrom copies the metadata.
    assert_eq!(
        back["metadata"]["annotations"][STARTUP_POLICY_ANNOTATION],
        encoded.as_str()
    );
    let typed: v1alpha2::JobSet = serde_json::from_value(back).unwrap();
    assert_eq!(
        typed.spec.startup_policy.unwrap().startup_policy_order,
        v1alpha2::StartupPolicyOptions::InOrder
    );
}

#[test]
fn no_startup_policy_no_annotation() {
    let alpha = v1alpha2_with(None);
    let v1 = convert(alpha.clone(), API_VERSION).unwrap();
    assert!(v1["metadata"].get("annotations").is_none());
    let back = convert(v1, v1alpha2::API_VERSION).unwrap();
    assert_eq!(back, alpha);
}

#[test]
fn same_version_is_unchanged() {
    let alpha = v1alpha2_with(Some("AnyOrder"));
    assert_eq!(convert(alpha.clone(), v1alpha2::API_VERSION).unwrap(), alpha);
}

#[test]
fn malformed_annotations_and_versions_are_errors_with_field_paths() {
    let mut v1 = convert(v1alpha2_with(None), API_VERSION).unwrap();
    let field = format!("metadata.annotations[{STARTUP_POLICY_ANNOTATION}]");
    for (bad, what) in [
        ("%%%", "not base64"),
        (&*STANDARD.encode("{"), "not the JSON of a StartupPolicy"),
        (
            &*STANDARD.encode(r#"{"startupPolicyOrder":"Sideways"}"#),
            "not the JSON of a StartupPolicy",
        ),
    ] {
        v1["metadata"]["annotations"] = json!({STARTUP_POLICY_ANNOTATION: bad});
        let e = convert(v1.clone(), v1alpha2::API_VERSION).unwrap_err();
        assert_eq!(e.field, field);
        assert!(e.message.starts_with(what), "{e}");
    }
    // An empty annotation is no policy (upstream checks for "").
    v1["metadata"]["annotations"] = json!({STARTUP_POLICY_ANNOTATION: ""});
    assert!(
        convert(v1.clone(), v1alpha2::API_VERSION).unwrap()["spec"]
            .get("startupPolicy")
            .is_none()
    );

    assert_eq!(
        convert(json!({"kind": "Job", "apiVersion": API_VERSION}), API_VERSION)
            .unwrap_err()
            .field,
        "kind"
    );
    assert_eq!(
        convert(
            json!({"kind": "JobSet", "apiVersion": "jobset.x-k8s.io/v2"}),
            API_VERSION
        )
        .unwrap_err()
        .field,
        "apiVersion"
    );
    assert_eq!(
        convert(v1alpha2_with(None), "jobset.x-k8s.io/v9").unwrap_err().field,
        "desiredAPIVersion"
    );
    let mut bad_policy = v1alpha2_with(None);
    bad_policy["spec"]["startupPolicy"] = json!("InOrder");
    assert_eq!(
        convert(bad_policy, API_VERSION).unwrap_err().field,
        "spec.startupPolicy"
    );
    // A non-object metadata is refused, not a panic.
    let mut odd = v1alpha2_with(Some("InOrder"));
    odd["metadata"] = json!([]);
    assert_eq!(convert(odd, API_VERSION).unwrap_err().field, "metadata");
}

#[test]
fn review_converts_every_object_in_order_or_fails_whole() {
    let request = |objects: Vec<Value>| -> ConversionReview {
        serde_json::from_value(json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "ConversionReview",
            "request": {"uid": "705ab4f5-6393-11e8-b7cc-42010a800002", "desiredAPIVersion": API_VERSION, "objects": objects}
        }))
        .unwrap()
    };
    let ok = serde_json::to_value(review(request(vec![
        v1alpha2_with(Some("InOrder")),
        v1alpha2_with(None),
    ])))
    .unwrap();
    assert_eq!(ok["apiVersion"], "apiextensions.k8s.io/v1");
    assert_eq!(ok["kind"], "ConversionReview");
    assert_eq!(ok["response"]["uid"], "705ab4f5-6393-11e8-b7cc-42010a800002");
    assert_eq!(ok["response"]["result"]["status"], "Success");
    let converted = ok["response"]["convertedObjects"].as_array().unwrap();
    assert_eq!(converted.len(), 2);
    assert!(converted.iter().all(|o| o["apiVersion"] == API_VERSION));

    let mut bad = v1alpha2_with(None);
    bad["kind"] = json!("Job");
    let failed = serde_json::to_value(review(request(vec![v1alpha2_with(None), bad]))).unwrap();
    assert_eq!(failed["response"]["result"]["status"], "Failure");
    assert!(
        failed["response"]["result"]["message"]
            .as_str()
            .unwrap()
            .starts_with("converting object 1 (\"js\") to jobset.x-k8s.io/v1: kind: must be JobSet"),
        "{failed}"
    );
    assert_eq!(failed["response"]["convertedObjects"], json!([]));

    let no_request: ConversionReview =
        serde_json::from_value(json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview"})).unwrap();
    let answer = serde_json::to_value(review(no_request)).unwrap();
    assert_eq!(answer["response"]["result"]["status"], "Failure");
}

#[test]
fn the_served_crd_has_both_versions_and_the_webhook() {
    let crd = serde_json::to_value(crate::jobset::crd()).unwrap();
    let versions: Vec<(&str, bool, bool)> = crd["spec"]["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["name"].as_str().unwrap(),
                v["served"].as_bool().unwrap(),
                v["storage"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(versions, [("v1alpha2", true, true), ("v1", true, false)]);
    let v1_spec = &crd["spec"]["versions"][1]["schema"]["openAPIV3Schema"]["properties"]["spec"];
    assert!(v1_spec["properties"].get("startupPolicy").is_none());
    assert!(v1_spec["properties"]["scheduling"].is_object());
    assert_eq!(crd["spec"]["conversion"]["strategy"], "Webhook");
    assert_eq!(
        crd["spec"]["conversion"]["webhook"]["clientConfig"]["service"],
        json!({"namespace": "kwas-system", "name": "kwas-controllers-webhook", "port": 443, "path": "/convert"})
    );
    assert_eq!(
        crd["spec"]["conversion"]["webhook"]["conversionReviewVersions"],
        json!(["v1"])
    );
}

proptest::proptest! {
    /// Any annotation value, any startup policy and any other annotations: conversion never panics, a
    /// v1alpha2 object survives the round trip through v1, and a v1 object either converts or fails with
    /// the annotation's field path.
    #[test]
    fn conversion_round_trips_and_never_panics(
        order in proptest::option::of(proptest::sample::select(vec!["AnyOrder", "InOrder"])),
        annotation in proptest::option::of(".{0,64}"),
        others in proptest::collection::btree_map("[a-z]{1,8}", ".{0,16}", 0..4),
    ) {
        let mut alpha = v1alpha2_with(order);
        if !others.is_empty() {
            alpha["metadata"]["annotations"] = json!(others);
        }
        let v1 = convert(alpha.clone(), API_VERSION).unwrap();
        let back = convert(v1, v1alpha2::API_VERSION).unwrap();
        proptest::prop_assert_eq!(&back["spec"], &alpha["spec"]);
        proptest::prop_assert_eq!(&back["status"], &alpha["status"]);

        let mut raw = convert(v1alpha2_with(None), API_VERSION).unwrap();
        if let Some(a) = annotation {
            raw["metadata"]["annotations"] = json!({STARTUP_POLICY_ANNOTATION: a});
        }
        match convert(raw, v1alpha2::API_VERSION) {
            Ok(o) => proptest::prop_assert_eq!(&o["apiVersion"], v1alpha2::API_VERSION),
            Err(e) => proptest::prop_assert_eq!(e.field, format!("metadata.annotations[{STARTUP_POLICY_ANNOTATION}]")),
        }
    }
}
