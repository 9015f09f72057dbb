//! Regression tests for hostile and extreme input: each test sends what once broke devcluster (a forged
//! `continue` token, values at their type's limits, a browser's request, a forged Binding, a CRD shadowing
//! a built-in) and then checks that the server still serves and its background tasks still work.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kwas_devcluster::{DevCluster, DevClusterConfig};
use serde_json::{Value, json};

const PATIENCE: Duration = Duration::from_secs(20);

fn obj<K: serde::de::DeserializeOwned>(v: Value) -> K {
    serde_json::from_value(v).unwrap()
}

fn pod(name: &str, annotations: Value, node: Option<&str>) -> Pod {
    let mut spec = json!({"containers": [{"name": "c", "image": "i"}], "restartPolicy": "Never"});
    if let Some(n) = node {
        spec["nodeName"] = json!(n);
    }
    obj(json!({"metadata": {"name": name, "annotations": annotations}, "spec": spec}))
}

async fn running(pods: &Api<Pod>, name: &str) {
    crate::common::eventually_within(PATIENCE, &format!("pod {name} running"), || async {
        let p = pods.get(name).await.ok()?;
        (p.status?.phase.as_deref() == Some("Running")).then_some(())
    })
    .await;
}

/// The server answers and its kubelet and garbage collector still work.
async fn still_healthy(c: &DevCluster, tag: &str) {
    let node = c.node_names()[0].clone();
    let pods: Api<Pod> = Api::default_namespaced(c.client());
    let name = format!("probe-{tag}");
    pods.create(&PostParams::default(), &pod(&name, json!({}), Some(&node)))
        .await
        .unwrap();
    running(&pods, &name).await;
    // An owned ConfigMap is collected after its owner goes.
    let cms: Api<ConfigMap> = Api::default_namespaced(c.client());
    let owner = cms
        .create(
            &PostParams::default(),
            &obj(json!({"metadata": {"name": format!("owner-{tag}")}})),
        )
        .await
        .unwrap();
    let dependent = format!("dependent-{tag}");
    cms.create(
        &PostParams::default(),
        &obj(json!({"metadata": {"name": dependent, "ownerReferences": [{
            "apiVersion": "v1", "kind": "ConfigMap", "name": owner.name_any(), "uid": owner.uid().unwrap()}]}})),
    )
    .await
    .unwrap();
    cms.delete(&owner.name_any(), &DeleteParams::default()).await.unwrap();
    crate::common::eventually_within(PATIENCE, "the dependent collected", || async {
        cms.get_opt(&dependent).await.ok()?.is_none().then_some(())
    })
    .await;
}

#[tokio::test]
async fn forged_continue_tokens_are_answered_not_fatal() {
    let c = crate::common::cluster().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(c.client());
    for i in 0..3 {
        cms.create(
            &PostParams::default(),
            &obj(json!({"metadata": {"name": format!("cm-{i}")}})),
        )
        .await
        .unwrap();
    }
    let first = cms.list(&ListParams::default().limit(1)).await.unwrap();
    let token = first.metadata.continue_.unwrap();
    let id = token.split('-').next().unwrap();
    let path = "/api/v1/namespaces/default/configmaps?limit=1&continue=";
    // An offset far past the end (and one that would overflow when the page size is added) of a real
    // snapshot: an empty page.
    for offset in ["18446744073709551615", "18446744073709551614", "4"] {
        let (code, body) = crate::common::raw(&c, "GET", &format!("{path}{id}-{offset}"), &[], b"")
            .await
            .unwrap();
        assert_eq!(code, 200, "{body}");
        assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["items"], json!([]));
    }
    // Unknown snapshots and garbage.
    for (token, want) in [
        ("99999999-1", 410),
        ("x-1", 400),
        ("1", 400),
        ("-", 400),
        ("%FF%FE", 400),
    ] {
        let (code, body) = crate::common::raw(&c, "GET", &format!("{path}{token}"), &[], b"")
            .await
            .unwrap();
        assert_eq!(code, want, "{token}: {body}");
    }
    still_healthy(&c, "continue").await;
    c.shutdown().await;
}

#[tokio::test]
async fn bodies_are_decoded_by_content_type_only() {
    let c = crate::common::cluster().await;
    let path = "/api/v1/namespaces/default/configmaps";
    let cm = |n: &str| format!(r#"{{"metadata":{{"name":"{n}"}},"data":{{"a":"b"}}}}"#);
    for ct in [
        "text/plain",
        "text/plain;charset=UTF-8",
        "application/x-www-form-urlencoded",
        "multipart/form-data",
    ] {
        let (code, body) = crate::common::raw(&c, "POST", path, &[("Content-Type", ct)], cm("browser").as_bytes())
            .await
            .unwrap();
        assert_eq!(code, 415, "{ct}: {body}");
        assert!(body.contains("UnsupportedMediaType"), "{body}");
    }
    let cms: Api<ConfigMap> = Api::default_namespaced(c.client());
    assert!(cms.get_opt("browser").await.unwrap().is_none(), "nothing was created");
    // JSON, with or without the header (kube-apiserver defaults to JSON; the Python client sends none).
    let (code, body) = crate::common::raw(
        &c,
        "POST",
        path,
        &[("Content-Type", "application/json")],
        cm("a").as_bytes(),
    )
    .await
    .unwrap();
    assert_eq!(code, 201, "{body}");
    let (code, body) = crate::common::raw(&c, "POST", path, &[], cm("b").as_bytes())
        .await
        .unwrap();
    assert_eq!(code, 201, "{body}");
    c.shutdown().await;
}

#[tokio::test]
async fn requests_a_web_page_could_make_are_refused() {
    let c = crate::common::cluster().await;
    let path = "/api/v1/namespaces/default/configmaps";
    let body = br#"{"metadata":{"name":"x"}}"#;
    // DNS rebinding: the attacker's name resolves to loopback, the Host header still names it.
    let (code, text) = crate::common::raw(&c, "POST", path, &[("Host", "evil.example:6443")], body)
        .await
        .unwrap();
    assert_eq!(code, 403, "{text}");
    let (code, _) = crate::common::raw(&c, "GET", "/api/v1/namespaces", &[("Host", "evil.example")], b"")
        .await
        .unwrap();
    assert_eq!(code, 403);
    // A cross-site request from a page in the browser.
    let headers = [("Origin", "https://evil.example"), ("Content-Type", "application/json")];
    let (code, text) = crate::common::raw(&c, "POST", path, &headers, body).await.unwrap();
    assert_eq!(code, 403, "{text}");
    let cms: Api<ConfigMap> = Api::default_namespaced(c.client());
    assert!(cms.get_opt("x").await.unwrap().is_none());
    // Loopback names and origins are fine.
    for host in ["localhost", "127.0.0.1:1234", "[::1]:6443"] {
        let (code, _) = crate::common::raw(&c, "GET", "/api/v1/namespaces", &[("Host", host)], b"")
            .await
            .unwrap();
        assert_eq!(code, 200, "{host}");
    }
    let (code, _) = crate::common::raw(&c, "GET", "/version", &[("Origin", "http://localhost:3000")], b"")
        .await
        .unwrap();
    assert_eq!(code, 200);
    c.shutdown().await;
}

#[tokio::test]
async fn a_non_loopback_address_needs_an_explicit_opt_in() {
    let err = DevCluster::start(DevClusterConfig {
        host: "0.0.0.0".into(),
        ..Default::default()
    })
    .await
    .unwrap_err();
    assert!(err.to_string().contains("no authentication"), "{err}");
    let c = DevCluster::start(DevClusterConfig {
        host: "0.0.0.0".into(),
        allow_remote_clients: true,
        ..kwas_devcluster::testing::fast_config(kwas_devcluster::testing::small_topology())
    })
    .await
    .unwrap();
    let (code, _) = crate::common::raw(&c, "GET", "/api/v1/namespaces", &[("Host", "devbox.example")], b"")
        .await
        .unwrap();
    assert_eq!(code, 200, "an opted-in cluster answers any host");
    c.shutdown().await;
}

#[tokio::test]
async fn binding_checks_its_preconditions_and_target() {
    let c = crate::common::cluster().await;
    let node = c.node_names()[0].clone();
    let pods: Api<Pod> = Api::default_namespaced(c.client());
    let p = pods
        .create(&PostParams::default(), &pod("p", json!({}), None))
        .await
        .unwrap();
    let path = "/api/v1/namespaces/default/pods/p/binding";
    let ct = [("Content-Type", "application/json")];
    let bind = |extra: Value| {
        let mut b = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"}, "target": {"kind": "Node", "name": node}});
        merge(&mut b, extra);
        b.to_string()
    };
    let cases = [
        (
            json!({"metadata": {"uid": "not-the-pods-uid"}}),
            409,
            "UID in precondition",
        ),
        (
            json!({"metadata": {"resourceVersion": "1"}}),
            409,
            "ResourceVersion in precondition",
        ),
        (json!({"target": {"kind": "Pod"}}), 422, "target.kind"),
        (json!({"target": {"name": "Not_A_Node!"}}), 422, "target.name"),
        (
            json!({"metadata": {"annotations": {"bad key!": "v"}}}),
            422,
            "metadata.annotations",
        ),
        (json!({"metadata": {"annotations": {"k": 7}}}), 400, "annotations"),
    ];
    for (extra, want, text) in cases {
        let (code, body) = crate::common::raw(&c, "POST", path, &ct, bind(extra.clone()).as_bytes())
            .await
            .unwrap();
        assert_eq!(code, want, "{extra}: {body}");
        assert!(body.contains(text), "{extra}: {body}");
    }
    assert!(
        pods.get("p").await.unwrap().spec.unwrap().node_name.is_none(),
        "nothing was bound"
    );
    let good = json!({"metadata": {"uid": p.uid().unwrap(), "resourceVersion": p.resource_version().unwrap()}});
    let (code, body) = crate::common::raw(&c, "POST", path, &ct, bind(good).as_bytes())
        .await
        .unwrap();
    assert_eq!(code, 201, "{body}");
    running(&pods, "p").await;
    c.shutdown().await;
}

fn merge(base: &mut Value, extra: Value) {
    match (base, extra) {
        (Value::Object(b), Value::Object(e)) => {
            for (k, v) in e {
                merge(b.entry(k).or_insert(Value::Null), v);
            }
        }
        (b, e) => *b = e,
    }
}

#[tokio::test]
async fn a_crd_cannot_shadow_a_built_in_resource() {
    let c = crate::common::cluster().await;
    let crd = |group: &str, plural: &str, kind: &str, annotations: Value| {
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("{plural}.{group}"), "annotations": annotations},
            "spec": {"group": group, "scope": "Namespaced", "names": {"plural": plural, "kind": kind},
                "versions": [{"name": "v9", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}})
        .to_string()
    };
    let path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let ct = [("Content-Type", "application/json")];
    let approved = json!({"api-approved.kubernetes.io": "https://example.com/approval"});
    let (code, body) = crate::common::raw(
        &c,
        "POST",
        path,
        &ct,
        crd("scheduling.k8s.io", "podgroups", "PodGroup", approved.clone()).as_bytes(),
    )
    .await
    .unwrap();
    assert_eq!(code, 422, "{body}");
    assert!(body.contains("built-in resource"), "{body}");
    let (code, body) = crate::common::raw(
        &c,
        "POST",
        path,
        &ct,
        crd("scheduling.k8s.io", "things", "Thing", json!({})).as_bytes(),
    )
    .await
    .unwrap();
    assert_eq!(code, 422, "{body}");
    assert!(body.contains("api-approved.kubernetes.io"), "{body}");
    // PodGroups are still served as before.
    let (code, body) = crate::common::raw(
        &c,
        "GET",
        "/apis/scheduling.k8s.io/v1alpha3/namespaces/default/podgroups",
        &[],
        b"",
    )
    .await
    .unwrap();
    assert_eq!(code, 200, "{body}");
    c.shutdown().await;
}

#[tokio::test]
async fn extreme_durations_never_stop_the_kubelet_or_the_garbage_collector() {
    let c = crate::common::cluster().await;
    let node = c.node_names()[0].clone();
    let pods: Api<Pod> = Api::default_namespaced(c.client());
    for (name, run) in [
        ("huge", "100000000000000000000s"),
        ("max", "18446744073709551615s"),
        ("hours", "9223372036854775807h"),
        ("fractional", "0.000000001ns"),
    ] {
        let annotations = json!({kwas_api_types::names::annotations::SIM_RUN_DURATION: run,
            kwas_devcluster::SIM_SHUTDOWN_DURATION: run});
        pods.create(&PostParams::default(), &pod(name, annotations, Some(&node)))
            .await
            .unwrap();
    }
    running(&pods, "huge").await;
    // A grace period at i64's limit: the deletion time saturates, nothing overflows.
    let dp = DeleteParams {
        grace_period_seconds: Some(u32::MAX),
        ..Default::default()
    };
    pods.delete("huge", &dp).await.unwrap();
    let (code, body) = crate::common::raw(
        &c,
        "DELETE",
        "/api/v1/namespaces/default/pods/max?gracePeriodSeconds=9223372036854775807",
        &[],
        b"",
    )
    .await
    .unwrap();
    assert_eq!(code, 200, "{body}");
    // A watch with a timeout at u64's limit opens.
    let code = crate::common::raw_status(
        &c,
        "/api/v1/namespaces/default/pods?watch=true&timeoutSeconds=18446744073709551615",
    )
    .await
    .unwrap();
    assert_eq!(code, 200);
    still_healthy(&c, "durations").await;
    c.shutdown().await;
}

#[tokio::test]
async fn sizes_are_limited_like_kube_apiserver() {
    let c = crate::common::cluster().await;
    let ct = [("Content-Type", "application/json")];
    let big = |n: usize| "x".repeat(n);
    // A body over 3 MiB.
    let body = json!({"metadata": {"name": "huge"}, "data": {"a": big(3 * 1024 * 1024)}}).to_string();
    let (code, text) = crate::common::raw(
        &c,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        &ct,
        body.as_bytes(),
    )
    .await
    .unwrap();
    assert_eq!(code, 413, "{text}");
    assert!(text.contains("limit is 3145728"), "{text}");
    // ConfigMap data over 1 MiB.
    let body = json!({"metadata": {"name": "big"}, "data": {"a": big(1024 * 1024 + 1)}}).to_string();
    let (code, text) = crate::common::raw(
        &c,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        &ct,
        body.as_bytes(),
    )
    .await
    .unwrap();
    assert_eq!(code, 422, "{text}");
    assert!(text.contains("Too long: must have at most 1048576 bytes"), "{text}");
    // Annotations over 256 KiB.
    let body = json!({"metadata": {"name": "ann", "annotations": {"a": big(300 * 1024)}}}).to_string();
    let (code, text) = crate::common::raw(
        &c,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        &ct,
        body.as_bytes(),
    )
    .await
    .unwrap();
    assert_eq!(code, 422, "{text}");
    assert!(text.contains("metadata.annotations: Too long"), "{text}");
    // An object over 1.5 MiB, built by two patches that each fit in a request.
    let path = "/apis/scheduling.k8s.io/v1/priorityclasses";
    let body = json!({"metadata": {"name": "wordy"}, "value": 10, "description": big(1024 * 1024)}).to_string();
    let (code, text) = crate::common::raw(&c, "POST", path, &ct, body.as_bytes())
        .await
        .unwrap();
    assert_eq!(code, 201, "{text}");
    let merge = [("Content-Type", "application/merge-patch+json")];
    let patch = json!({"metadata": {"labels": {"a": "b"}}, "description": big(1024 * 1024 + 600 * 1024)}).to_string();
    let (code, text) = crate::common::raw(&c, "PATCH", &format!("{path}/wordy"), &merge, patch.as_bytes())
        .await
        .unwrap();
    assert_eq!(code, 413, "{text}");
    // A JSON patch with more operations than kube-apiserver allows.
    let ops: Vec<Value> = (0..10_001)
        .map(|i| json!({"op": "add", "path": format!("/metadata/labels/l{i}"), "value": "v"}))
        .collect();
    let json_patch = [("Content-Type", "application/json-patch+json")];
    let (code, text) = crate::common::raw(
        &c,
        "PATCH",
        &format!("{path}/wordy"),
        &json_patch,
        Value::Array(ops).to_string().as_bytes(),
    )
    .await
    .unwrap();
    assert_eq!(code, 413, "{text}");
    assert!(text.contains("maximum operations in a JSON patch is 10000"), "{text}");
    // Deeply nested JSON is a 400, not a stack overflow.
    let nested = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let (code, _) = crate::common::raw(
        &c,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        &ct,
        nested.as_bytes(),
    )
    .await
    .unwrap();
    assert_eq!(code, 400);
    let yaml = [("Content-Type", "application/apply-patch+yaml")];
    let nested = format!("{}x{}", "[".repeat(100_000), "]".repeat(100_000));
    let (code, _) = crate::common::raw(
        &c,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/deep?fieldManager=t",
        &yaml,
        nested.as_bytes(),
    )
    .await
    .unwrap();
    assert_eq!(code, 400);
    still_healthy(&c, "sizes").await;
    c.shutdown().await;
}

#[tokio::test]
async fn a_lost_response_still_commits() {
    let c = crate::common::cluster().await;
    c.faults().set(kwas_devcluster::FaultConfig {
        seed: 1,
        rules: vec![kwas_devcluster::FaultRule {
            resources: vec!["configmaps".into()],
            verbs: vec![kwas_devcluster::Verb::Create],
            lost_response_rate: 1.0,
            ..Default::default()
        }],
    });
    let ct = [("Content-Type", "application/json")];
    let (code, text) = crate::common::raw(
        &c,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        &ct,
        br#"{"metadata":{"name":"lost"}}"#,
    )
    .await
    .unwrap();
    assert_eq!(code, 504, "{text}");
    c.faults().clear();
    let cms: Api<ConfigMap> = Api::default_namespaced(c.client());
    assert!(cms.get_opt("lost").await.unwrap().is_some(), "the create took effect");
    c.shutdown().await;
}

#[tokio::test]
async fn objects_every_typed_client_could_not_decode_are_refused() {
    let c = crate::common::cluster().await;
    // A pod with a number for an annotation, and a label list: kube-apiserver's decoder refuses both, so no
    // typed informer (the scheduler's, the kubelet's) is ever handed one.
    for (name, metadata) in [
        (
            "numeric-annotation",
            json!({"name": "a", "annotations": {"kwas.dev/sim-run-duration": 5}}),
        ),
        ("label-list", json!({"name": "b", "labels": ["x"]})),
        ("null-name", json!({"name": null, "generateName": 7})),
    ] {
        let body = json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
            "spec": {"containers": [{"name": "c", "image": "i"}]}});
        let (code, text) = crate::common::raw(
            &c,
            "POST",
            "/api/v1/namespaces/default/pods",
            &[("Content-Type", "application/json")],
            body.to_string().as_bytes(),
        )
        .await
        .unwrap();
        assert_eq!(code, 400, "{name}: {text}");
        assert!(text.contains("BadRequest"), "{name}: {text}");
    }
    let pods: Api<Pod> = Api::default_namespaced(c.client());
    assert!(pods.list(&ListParams::default()).await.unwrap().items.is_empty());
    still_healthy(&c, "decode").await;
    c.shutdown().await;
}
