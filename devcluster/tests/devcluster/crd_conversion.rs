//! CRD conversion by webhook (`spec.conversion.strategy: Webhook`) with kubectl 1.37, kube-rs and raw
//! HTTP: the JobSet CRD's two versions (`jobset.x-k8s.io/v1alpha2`, the storage version, and `v1`) over
//! one object, converted by the JobSet conversion registered in-process at the CRD's webhook address;
//! discovery preferring `v1` (kube-aware order, not the storage version); a write that cannot convert to
//! the storage version refused with upstream's message; a webhook answering wrongly (another uid, another
//! name) caught; an unregistered webhook failing conversions; `spec.conversion` validated.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kwas_api_types::jobset::{self, v1};
use kwas_devcluster::{DevCluster, WebhookAddress};
use serde_json::{Value, json};

use crate::common::{kubectl, kubectl_in, kubectl_ok, raw};

async fn cluster_with_jobset_webhook() -> DevCluster {
    let cluster = crate::common::cluster_with(|c| {
        c.conversion_webhooks.register_jobset();
    })
    .await;
    let crds: Api<CustomResourceDefinition> = Api::all(cluster.client());
    crds.create(&PostParams::default(), &jobset::crd()).await.unwrap();
    wait_served(&cluster, "jobset.x-k8s.io/v1").await;
    cluster
}

async fn wait_served(cluster: &DevCluster, api_version: &str) {
    for _ in 0..400 {
        if raw(cluster, "GET", &format!("/apis/{api_version}"), &[], b"")
            .await
            .is_some_and(|(c, _)| c == 200)
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("{api_version} was not served");
}

fn api(cluster: &DevCluster, version: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("jobset.x-k8s.io", version, "JobSet");
    Api::namespaced_with(cluster.client(), "default", &ApiResource::from_gvk(&gvk))
}

const V1_IN_ORDER: &str = r#"
apiVersion: jobset.x-k8s.io/v1
kind: JobSet
metadata:
  name: in-order
  annotations:
    # {"startupPolicyOrder":"InOrder"}
    jobset.sigs.k8s.io/startup-policy: eyJzdGFydHVwUG9saWN5T3JkZXIiOiJJbk9yZGVyIn0=
spec:
  suspend: true
  replicatedJobs:
  - name: driver
    template:
      spec:
        template:
          spec:
            restartPolicy: Never
            containers:
            - name: main
              image: busybox
  - name: workers
    replicas: 2
    template:
      spec:
        template:
          spec:
            restartPolicy: Never
            containers:
            - name: main
              image: busybox
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_jobset_through_both_versions() {
    let cluster = cluster_with_jobset_webhook().await;
    // Discovery prefers v1 (kube-aware order), though v1alpha2 is the storage version.
    let (_, group) = raw(&cluster, "GET", "/apis/jobset.x-k8s.io", &[], b"").await.unwrap();
    let group: Value = serde_json::from_str(&group).unwrap();
    assert_eq!(group["preferredVersion"]["version"], "v1", "{group}");
    assert_eq!(group["versions"][0]["version"], "v1");
    assert_eq!(group["versions"][1]["version"], "v1alpha2");

    // A v1 manifest applies; through v1alpha2 it has its startupPolicy back.
    kubectl_ok(&cluster, &["apply", "-f", "-"], Some(V1_IN_ORDER));
    let alpha: Value = serde_json::from_str(&kubectl(
        &cluster,
        &["get", "jobsets.v1alpha2.jobset.x-k8s.io", "in-order", "-o", "json"],
    ))
    .unwrap();
    assert_eq!(alpha["apiVersion"], "jobset.x-k8s.io/v1alpha2");
    assert_eq!(alpha["spec"]["startupPolicy"], json!({"startupPolicyOrder": "InOrder"}));
    // The v1alpha2 schema's defaults apply to what v1alpha2 readers see as to what v1 readers see.
    assert_eq!(alpha["spec"]["replicatedJobs"][0]["replicas"], 1);
    // `kubectl get jobsets` reads the preferred version, v1.
    let preferred: Value =
        serde_json::from_str(&kubectl(&cluster, &["get", "jobsets", "in-order", "-o", "json"])).unwrap();
    assert_eq!(preferred["apiVersion"], "jobset.x-k8s.io/v1");
    assert!(preferred["spec"].get("startupPolicy").is_none());
    let table = kubectl(&cluster, &["get", "jobsets"]);
    assert!(table.contains("in-order") && table.contains("TERMINALSTATE"), "{table}");

    // A status write through v1alpha2 (what the controller does) to the object written through v1
    // keeps its spec as each version shows it.
    api(&cluster, "v1alpha2")
        .patch_status(
            "in-order",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"restarts": 1}})),
        )
        .await
        .unwrap();
    let alpha = api(&cluster, "v1alpha2").get("in-order").await.unwrap();
    assert_eq!(alpha.data["spec"]["startupPolicy"]["startupPolicyOrder"], "InOrder");
    assert_eq!(alpha.data["status"]["restarts"], 1);
    let as_v1 = api(&cluster, "v1").get("in-order").await.unwrap();
    assert!(as_v1.data["spec"].get("startupPolicy").is_none());
    assert_eq!(as_v1.data["status"]["restarts"], 1);
    // And a spec write through v1alpha2 (a label and suspend) keeps it too.
    api(&cluster, "v1alpha2")
        .patch(
            "in-order",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"via": "alpha"}}, "spec": {"suspend": false}})),
        )
        .await
        .unwrap();
    let as_v1 = api(&cluster, "v1").get("in-order").await.unwrap();
    assert_eq!(as_v1.data["spec"]["suspend"], false);
    assert!(
        as_v1
            .metadata
            .annotations
            .unwrap()
            .contains_key(v1::STARTUP_POLICY_ANNOTATION)
    );

    // A v1alpha2 object with a startupPolicy reads through v1 with the annotation.
    let created = api(&cluster, "v1alpha2")
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                "metadata": {"name": "alpha"},
                "spec": {"suspend": true, "startupPolicy": {"startupPolicyOrder": "InOrder"},
                    "replicatedJobs": [{"name": "w", "template": {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}}]}
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    let as_v1 = api(&cluster, "v1").get("alpha").await.unwrap();
    assert_eq!(
        as_v1.metadata.annotations.as_ref().unwrap()[v1::STARTUP_POLICY_ANNOTATION],
        "eyJzdGFydHVwUG9saWN5T3JkZXIiOiJJbk9yZGVyIn0="
    );
    assert!(as_v1.data["spec"].get("startupPolicy").is_none());
    assert_eq!(as_v1.metadata.resource_version, created.metadata.resource_version);
    assert_eq!(as_v1.metadata.uid, created.metadata.uid);

    // Patched through v1 (a label), it keeps its startupPolicy through v1alpha2.
    api(&cluster, "v1")
        .patch(
            "alpha",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"team": "a"}}})),
        )
        .await
        .unwrap();
    let again = api(&cluster, "v1alpha2").get("alpha").await.unwrap();
    assert_eq!(again.data["spec"]["startupPolicy"]["startupPolicyOrder"], "InOrder");
    assert_eq!(again.metadata.labels.unwrap()["team"], "a");

    // Lists and watches of either version see every object in that version.
    for version in ["v1", "v1alpha2"] {
        let items = api(&cluster, version).list(&ListParams::default()).await.unwrap().items;
        assert_eq!(items.len(), 2);
        assert!(
            items
                .iter()
                .all(|o| o.types.as_ref().unwrap().api_version == format!("jobset.x-k8s.io/{version}"))
        );
    }
    let (code, body) = raw(
        &cluster,
        "GET",
        "/apis/jobset.x-k8s.io/v1alpha2/namespaces/default/jobsets?watch=true&timeoutSeconds=1",
        &[],
        b"",
    )
    .await
    .unwrap();
    assert_eq!(code, 200);
    let events: Vec<Value> = body.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(events.len(), 2, "{body}");
    let in_order = events
        .iter()
        .find(|e| e["object"]["metadata"]["name"] == "in-order")
        .unwrap();
    assert_eq!(in_order["object"]["apiVersion"], "jobset.x-k8s.io/v1alpha2");
    assert_eq!(
        in_order["object"]["spec"]["startupPolicy"]["startupPolicyOrder"],
        "InOrder"
    );
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_v1_object_that_cannot_convert_is_refused() {
    let cluster = cluster_with_jobset_webhook().await;
    let bad = V1_IN_ORDER.replace("eyJzdGFydHVwUG9saWN5T3JkZXIiOiJJbk9yZGVyIn0=", "not-base64!");
    let out = kubectl_in(&cluster, &["apply", "-f", "-"], Some(&bad));
    assert!(!out.ok);
    assert!(
        out.stderr.contains(
            "Internal error occurred: conversion webhook for jobset.x-k8s.io/v1, Kind=JobSet failed: converting object 0 (\"in-order\") to jobset.x-k8s.io/v1alpha2: metadata.annotations[jobset.sigs.k8s.io/startup-policy]: not base64"
        ),
        "{}",
        out.stderr
    );
    // Nothing was stored.
    assert!(api(&cluster, "v1alpha2").get_opt("in-order").await.unwrap().is_none());
    cluster.shutdown().await;
}

/// A CRD with two versions and a webhook at `url`.
fn widget_crd(url: &str) -> CustomResourceDefinition {
    let version = |name: &str, storage: bool| {
        json!({"name": name, "served": true, "storage": storage,
            "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}})
    };
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [version("v1", true), version("v2", false)],
            "conversion": {"strategy": "Webhook", "webhook": {"clientConfig": {"url": url}, "conversionReviewVersions": ["v1"]}}}
    }))
    .unwrap()
}

fn widgets(cluster: &DevCluster, version: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("example.com", version, "Widget");
    Api::namespaced_with(cluster.client(), "default", &ApiResource::from_gvk(&gvk))
}

fn widget(version: &str, name: &str) -> DynamicObject {
    serde_json::from_value(json!({"apiVersion": format!("example.com/{version}"), "kind": "Widget",
        "metadata": {"name": name}, "spec": {"size": 1}}))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_that_answers_wrongly_or_not_at_all_fails_the_write() {
    use kube::core::conversion::ConversionReview;
    let cluster = crate::common::cluster_with(|c| {
        // Answers with another uid.
        c.conversion_webhooks.register(
            WebhookAddress::Url("https://uid.example/convert".into()),
            Arc::new(|mut r: ConversionReview| {
                let mut req = r.request.take().unwrap();
                req.uid = "someone-else".into();
                let objects = req.objects.clone();
                kube::core::conversion::ConversionResponse::for_request(req)
                    .success(objects)
                    .into_review()
            }),
        );
        // Renames the object and converts it; the name is restored, the label kept.
        c.conversion_webhooks.register(
            WebhookAddress::Url("https://rename.example/convert".into()),
            Arc::new(|mut r: ConversionReview| {
                let req = r.request.take().unwrap();
                let desired = req.desired_api_version.clone();
                let objects = req
                    .objects
                    .iter()
                    .map(|o| {
                        let mut o = o.clone();
                        o["apiVersion"] = json!(desired);
                        o["metadata"]["name"] = json!("renamed");
                        o["metadata"]["labels"] = json!({"converted": "yes"});
                        o
                    })
                    .collect();
                kube::core::conversion::ConversionResponse::for_request(req)
                    .success(objects)
                    .into_review()
            }),
        );
    })
    .await;
    let crds: Api<CustomResourceDefinition> = Api::all(cluster.client());
    for (url, expect) in [
        ("https://uid.example/convert", "expected response.uid="),
        ("https://nowhere.example/convert", "no conversion webhook is registered"),
    ] {
        let _ = crds.delete("widgets.example.com", &Default::default()).await;
        for _ in 0..400 {
            if crds.get_opt("widgets.example.com").await.unwrap().is_none() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        crds.create(&PostParams::default(), &widget_crd(url)).await.unwrap();
        wait_served(&cluster, "example.com/v2").await;
        // Through the storage version nothing converts.
        widgets(&cluster, "v1")
            .create(&PostParams::default(), &widget("v1", "stored"))
            .await
            .unwrap();
        let e = widgets(&cluster, "v2")
            .create(&PostParams::default(), &widget("v2", "converted"))
            .await
            .unwrap_err();
        let kube::Error::Api(s) = e else { panic!("{e}") };
        assert_eq!(s.code, 500);
        assert!(
            s.message
                .starts_with("Internal error occurred: conversion webhook for example.com/v2, Kind=Widget failed: ")
                && s.message.contains(expect),
            "{}",
            s.message
        );
    }
    let _ = crds.delete("widgets.example.com", &Default::default()).await;
    for _ in 0..400 {
        if crds.get_opt("widgets.example.com").await.unwrap().is_none() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    crds.create(&PostParams::default(), &widget_crd("https://rename.example/convert"))
        .await
        .unwrap();
    wait_served(&cluster, "example.com/v2").await;
    widgets(&cluster, "v1")
        .create(&PostParams::default(), &widget("v1", "w"))
        .await
        .unwrap();
    let seen = widgets(&cluster, "v2").get("w").await.unwrap();
    assert_eq!(seen.metadata.name.as_deref(), Some("w"));
    assert_eq!(seen.metadata.labels.unwrap()["converted"], "yes");
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conversion_settings_are_validated() {
    let cluster = crate::common::cluster().await;
    let crds: Api<CustomResourceDefinition> = Api::all(cluster.client());
    let with = |conversion: Value| {
        let mut crd = serde_json::to_value(widget_crd("https://x.example")).unwrap();
        crd["spec"]["conversion"] = conversion;
        serde_json::from_value::<CustomResourceDefinition>(crd).unwrap()
    };
    for (conversion, field, message) in [
        (
            json!({"strategy": "Sometimes"}),
            "spec.conversion.strategy",
            "Unsupported value: \"Sometimes\"",
        ),
        (
            json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"]}}),
            "spec.conversion.webhook.clientConfig",
            "required when strategy is set to Webhook",
        ),
        (
            json!({"strategy": "Webhook", "webhook": {"clientConfig": {"url": "https://x.example"}, "conversionReviewVersions": ["v2"]}}),
            "spec.conversion.webhook.conversionReviewVersions",
            "must include at least one of v1, v1beta1",
        ),
        (
            json!({"strategy": "None", "webhook": {"clientConfig": {"url": "https://x.example"}, "conversionReviewVersions": ["v1"]}}),
            "spec.conversion.webhook",
            "should not be set when strategy is not set to Webhook",
        ),
        (
            json!({"strategy": "Webhook", "webhook": {"clientConfig": {"url": "https://x.example", "service": {"namespace": "a", "name": "b"}}, "conversionReviewVersions": ["v1"]}}),
            "spec.conversion.webhook.clientConfig",
            "exactly one of url or service is required",
        ),
    ] {
        let e = crds
            .create(&PostParams::default(), &with(conversion))
            .await
            .unwrap_err();
        let kube::Error::Api(s) = e else { panic!("{e}") };
        assert_eq!(s.code, 422);
        assert!(
            s.message.contains(field) && s.message.contains(message),
            "{}",
            s.message
        );
    }
    cluster.shutdown().await;
}
