//! discovery.k8s.io/v1 EndpointSlices through kube-rs, raw HTTP and kubectl 1.37: the EndpointSlice
//! controller's slice for a JobSet-style headless Service (`publishNotReadyAddresses`, pods with
//! `hostname` / `subdomain`) listing its pods before they are Ready, a normal Service's endpoints following
//! readiness, graceful deletion and removal, its selector and its deletion, and hostile slices refused
//! with 422 and upstream's field paths. The tests whose pods must stay not Ready run without the
//! simulated kubelet and write the pods' status themselves, as a kubelet would.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kwas_devcluster::DevCluster;
use serde_json::{Value, json};

const T: Duration = Duration::from_secs(30);
const SERVICE_NAME: &str = "kubernetes.io/service-name";

fn obj<K: serde::de::DeserializeOwned>(v: Value) -> K {
    serde_json::from_value(v).unwrap()
}

/// A cluster without the simulated kubelet: the test reports the pods' status.
async fn cluster_without_kubelet() -> DevCluster {
    crate::common::cluster_with(|c| c.kubelet.enabled = false).await
}

fn pod(name: &str, labels: Value, node: &str, extra: Value) -> Pod {
    let mut spec = json!({"nodeName": node, "containers": [{"name": "main", "image": "busybox",
        "ports": [{"name": "http", "containerPort": 8080}]}]});
    if let (Some(s), Some(e)) = (spec.as_object_mut(), extra.as_object()) {
        s.extend(e.clone());
    }
    obj(json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels}, "spec": spec}))
}

/// Reports a pod running with `ip`, Ready or not, through `pods/status`.
async fn report(pods: &Api<Pod>, name: &str, ip: &str, ready: bool) {
    let status = if ready { "True" } else { "False" };
    pods.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(
            json!({"status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
            "conditions": [{"type": "Ready", "status": status}, {"type": "ContainersReady", "status": status}]}}),
        ),
    )
    .await
    .unwrap();
}

/// The slices of a Service, by name.
async fn slices_of(slices: &Api<EndpointSlice>, service: &str) -> Vec<EndpointSlice> {
    let mut items = slices
        .list(&ListParams::default().labels(&format!("{SERVICE_NAME}={service}")))
        .await
        .unwrap()
        .items;
    items.sort_by_key(|s| s.name_any());
    items
}

/// Waits until the Service has exactly one slice that `check` accepts; `check` says what it saw when not.
async fn one_slice(
    slices: &Api<EndpointSlice>,
    service: &str,
    what: &str,
    check: impl Fn(&EndpointSlice) -> Result<(), String>,
) -> EndpointSlice {
    crate::common::eventually_within(T, what.to_string(), || async {
        let all = slices_of(slices, service).await;
        let [s] = all.as_slice() else {
            return Err(format!("{} slices: {all:?}", all.len()));
        };
        check(s).map(|()| s.clone())
    })
    .await
}

/// `(pod name, hostname, ready, serving, terminating)` of each endpoint, in pod name order.
fn summary(s: &EndpointSlice) -> Vec<(String, Option<String>, bool, bool, bool)> {
    let mut out: Vec<_> = s
        .endpoints
        .iter()
        .flatten()
        .map(|e| {
            let c = e.conditions.clone().unwrap_or_default();
            (
                e.target_ref.as_ref().and_then(|t| t.name.clone()).unwrap_or_default(),
                e.hostname.clone(),
                c.ready == Some(true),
                c.serving == Some(true),
                c.terminating == Some(true),
            )
        })
        .collect();
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_headless_service_publishes_its_pods_with_hostnames_before_they_are_ready() {
    let c = cluster_without_kubelet().await;
    let client = c.client();
    let services: Api<Service> = Api::default_namespaced(client.clone());
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let slices: Api<EndpointSlice> = Api::default_namespaced(client.clone());
    // What the JobSet controller creates: a headless Service named after the JobSet's subdomain.
    let svc = services
        .create(
            &PostParams::default(),
            &obj(
                json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "trainer"},
                "spec": {"clusterIP": "None", "publishNotReadyAddresses": true,
                    "selector": {"jobset.sigs.k8s.io/jobset-name": "trainer"}}}),
            ),
        )
        .await
        .unwrap();
    let labels = json!({"jobset.sigs.k8s.io/jobset-name": "trainer"});
    let mut uids = Vec::new();
    for (i, node) in ["node-b0-r0-n0", "node-b0-r1-n1"].iter().enumerate() {
        let p = pods
            .create(
                &PostParams::default(),
                &pod(
                    &format!("trainer-workers-0-{i}-x"),
                    labels.clone(),
                    node,
                    json!({"hostname": format!("trainer-workers-0-{i}"), "subdomain": "trainer"}),
                ),
            )
            .await
            .unwrap();
        uids.push(p.uid().unwrap());
    }
    // Before the pods have IPs the Service has a placeholder slice.
    let placeholder = one_slice(&slices, "trainer", "the placeholder slice", |s| {
        if s.endpoints.as_ref().is_none_or(Vec::is_empty) {
            Ok(())
        } else {
            Err(format!("{s:?}"))
        }
    })
    .await;
    assert!(placeholder.name_any().starts_with("trainer-"), "{placeholder:?}");
    for (i, ip) in ["10.244.0.11", "10.244.1.12"].iter().enumerate() {
        report(&pods, &format!("trainer-workers-0-{i}-x"), ip, false).await;
    }
    let s = one_slice(&slices, "trainer", "both workers listed, not Ready yet", |s| {
        if s.endpoints.as_ref().map_or(0, Vec::len) == 2 {
            Ok(())
        } else {
            Err(format!("{s:?}"))
        }
    })
    .await;
    assert_eq!(
        s.name_any(),
        placeholder.name_any(),
        "the placeholder is filled, not replaced"
    );
    assert_eq!(s.address_type, "IPv4");
    assert_eq!(s.ports, None, "a headless Service without ports: ports null");
    let l = s.labels();
    assert_eq!(l.get(SERVICE_NAME).map(String::as_str), Some("trainer"));
    assert_eq!(
        l.get("endpointslice.kubernetes.io/managed-by").map(String::as_str),
        Some("endpointslice-controller.k8s.io")
    );
    assert_eq!(l.get("service.kubernetes.io/headless").map(String::as_str), Some(""));
    let owner = &s.owner_references()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.uid.as_str()),
        ("Service", svc.uid().unwrap().as_str())
    );
    assert_eq!(owner.controller, Some(true));
    assert_eq!(
        summary(&s),
        vec![
            (
                "trainer-workers-0-0-x".into(),
                Some("trainer-workers-0-0".into()),
                true,
                false,
                false
            ),
            (
                "trainer-workers-0-1-x".into(),
                Some("trainer-workers-0-1".into()),
                true,
                false,
                false
            ),
        ],
        "publishNotReadyAddresses: ready, not serving"
    );
    let eps = s.endpoints.clone().unwrap();
    let first = eps
        .iter()
        .find(|e| e.hostname.as_deref() == Some("trainer-workers-0-0"))
        .unwrap();
    assert_eq!(first.addresses, ["10.244.0.11"]);
    assert_eq!(first.node_name.as_deref(), Some("node-b0-r0-n0"));
    assert_eq!(first.zone.as_deref(), Some("zone-0"));
    let target = first.target_ref.clone().unwrap();
    assert_eq!(target.kind.as_deref(), Some("Pod"));
    assert_eq!(target.namespace.as_deref(), Some("default"));
    assert_eq!(target.uid.as_deref(), Some(uids[0].as_str()));

    // kubectl shows upstream's columns; `describe` reads the slice through client-go (protobuf).
    let out = crate::common::kubectl(
        &c,
        &["get", "endpointslices", "-l", "kubernetes.io/service-name=trainer"],
    );
    let mut lines = out.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"], "{out}");
    let row: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(
        row[..4],
        [s.name_any().as_str(), "IPv4", "<unset>", "10.244.0.11,10.244.1.12"],
        "{out}"
    );
    let out = crate::common::kubectl(&c, &["describe", "endpointslice", &s.name_any()]);
    for want in [
        "AddressType:  IPv4",
        "Hostname:   trainer-workers-0-1",
        "TargetRef:  Pod/trainer-workers-0-1-x",
    ] {
        assert!(out.contains(want), "{want:?} not in {out}");
    }

    // Ready: now serving too.
    for (i, ip) in ["10.244.0.11", "10.244.1.12"].iter().enumerate() {
        report(&pods, &format!("trainer-workers-0-{i}-x"), ip, true).await;
    }
    one_slice(&slices, "trainer", "both workers serving", |s| {
        let all_serving = summary(s).iter().all(|e| e.2 && e.3 && !e.4);
        if all_serving && summary(s).len() == 2 {
            Ok(())
        } else {
            Err(format!("{:?}", summary(s)))
        }
    })
    .await;

    // The Service goes: so do its slices (garbage collection of the controller's ownerReference).
    services.delete("trainer", &DeleteParams::default()).await.unwrap();
    crate::common::eventually_within(T, "the slices gone with the Service", || async {
        let left = slices_of(&slices, "trainer").await;
        if left.is_empty() {
            Ok(())
        } else {
            Err(format!("{left:?}"))
        }
    })
    .await;
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_marks_only_ready_pods_ready_and_follows_deletions_and_its_selector() {
    let c = cluster_without_kubelet().await;
    let client = c.client();
    let services: Api<Service> = Api::default_namespaced(client.clone());
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let slices: Api<EndpointSlice> = Api::default_namespaced(client.clone());
    services
        .create(
            &PostParams::default(),
            &obj(
                json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "labels": {"tier": "front"}},
                "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}}),
            ),
        )
        .await
        .unwrap();
    for (name, ip, ready) in [("web-a", "10.244.0.21", true), ("web-b", "10.244.0.22", false)] {
        pods.create(
            &PostParams::default(),
            &pod(name, json!({"app": "web"}), "node-b0-r0-n1", json!({})),
        )
        .await
        .unwrap();
        report(&pods, name, ip, ready).await;
    }
    // Another app's pod is not selected.
    pods.create(
        &PostParams::default(),
        &pod("db", json!({"app": "db"}), "node-b0-r0-n1", json!({})),
    )
    .await
    .unwrap();
    report(&pods, "db", "10.244.0.29", true).await;
    let s = one_slice(&slices, "web", "web's two pods", |s| {
        if summary(s).len() == 2 {
            Ok(())
        } else {
            Err(format!("{:?}", summary(s)))
        }
    })
    .await;
    // Only the Ready pod is ready (and serving); the other is listed as not ready, as upstream lists it.
    assert_eq!(
        summary(&s),
        vec![
            ("web-a".into(), None, true, true, false),
            ("web-b".into(), None, false, false, false)
        ]
    );
    let ready: Vec<String> = s
        .endpoints
        .iter()
        .flatten()
        .filter(|e| e.conditions.as_ref().and_then(|c| c.ready) == Some(true))
        .flat_map(|e| e.addresses.clone())
        .collect();
    assert_eq!(ready, ["10.244.0.21"]);
    // The named target port is the pod's container port.
    let port = &s.ports.clone().unwrap()[0];
    assert_eq!(
        (port.name.as_deref(), port.port, port.protocol.as_deref()),
        (Some("http"), Some(8080), Some("TCP"))
    );
    assert_eq!(s.labels().get("tier").map(String::as_str), Some("front"));
    assert!(!s.labels().contains_key("service.kubernetes.io/headless"));

    // web-b becomes Ready.
    report(&pods, "web-b", "10.244.0.22", true).await;
    one_slice(&slices, "web", "web-b ready", |s| {
        if summary(s).iter().all(|e| e.2) {
            Ok(())
        } else {
            Err(format!("{:?}", summary(s)))
        }
    })
    .await;

    // A graceful deletion: web-a stays while it terminates (not ready, still serving)...
    pods.delete("web-a", &DeleteParams::default()).await.unwrap();
    one_slice(&slices, "web", "web-a terminating", |s| {
        let a = summary(s).into_iter().find(|e| e.0 == "web-a");
        match a {
            Some((_, _, false, true, true)) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    // ...and goes once its containers stopped (what the kubelet does with grace period 0).
    pods.delete("web-a", &DeleteParams::default().grace_period(0))
        .await
        .unwrap();
    one_slice(&slices, "web", "web-a removed", |s| {
        if summary(s).iter().map(|e| e.0.as_str()).collect::<Vec<_>>() == ["web-b"] {
            Ok(())
        } else {
            Err(format!("{:?}", summary(s)))
        }
    })
    .await;
    pods.delete("web-b", &DeleteParams::default().grace_period(0))
        .await
        .unwrap();
    let placeholder = one_slice(&slices, "web", "no endpoints left", |s| {
        if s.endpoints.as_ref().is_none_or(Vec::is_empty) {
            Ok(())
        } else {
            Err(format!("{:?}", summary(s)))
        }
    })
    .await;
    assert_eq!(placeholder.ports, None, "the placeholder has no ports");

    // The selector goes: so do the slices; it comes back: so does the placeholder.
    services
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"selector": null}})),
        )
        .await
        .unwrap();
    crate::common::eventually_within(T, "the slices of a Service without selector gone", || async {
        let left = slices_of(&slices, "web").await;
        if left.is_empty() {
            Ok(())
        } else {
            Err(format!("{left:?}"))
        }
    })
    .await;
    services
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"selector": {"app": "web"}}})),
        )
        .await
        .unwrap();
    one_slice(&slices, "web", "the placeholder back", |_| Ok(())).await;
    services.delete("web", &DeleteParams::default()).await.unwrap();
    crate::common::eventually_within(T, "the slices gone with the Service", || async {
        let left = slices_of(&slices, "web").await;
        if left.is_empty() {
            Ok(())
        } else {
            Err(format!("{left:?}"))
        }
    })
    .await;
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_the_kubelet_runs_are_ready_endpoints() {
    let c = crate::common::cluster().await;
    let client = c.client();
    let services: Api<Service> = Api::default_namespaced(client.clone());
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let slices: Api<EndpointSlice> = Api::default_namespaced(client.clone());
    services
        .create(
            &PostParams::default(),
            &obj(
                json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "api"},
                "spec": {"selector": {"app": "api"}, "ports": [{"port": 80, "targetPort": 8080}]}}),
            ),
        )
        .await
        .unwrap();
    for i in 0..3 {
        pods.create(
            &PostParams::default(),
            &pod(&format!("api-{i}"), json!({"app": "api"}), "node-b0-r1-n0", json!({})),
        )
        .await
        .unwrap();
    }
    let s = one_slice(&slices, "api", "three serving pods", |s| {
        let e = summary(s);
        if e.len() == 3 && e.iter().all(|e| e.2 && e.3) {
            Ok(())
        } else {
            Err(format!("{e:?}"))
        }
    })
    .await;
    let pod_ips: Vec<String> = {
        let mut ips = Vec::new();
        for i in 0..3 {
            let p = pods.get(&format!("api-{i}")).await.unwrap();
            ips.push(p.status.unwrap().pod_ip.unwrap());
        }
        ips.sort();
        ips
    };
    let mut addresses: Vec<String> = s.endpoints.iter().flatten().flat_map(|e| e.addresses.clone()).collect();
    addresses.sort();
    assert_eq!(addresses, pod_ips);
    let port = &s.ports.clone().unwrap()[0];
    assert_eq!((port.name.as_deref(), port.port), (Some(""), Some(8080)));
    // The kubelet stops a deleted pod and removes it: its endpoint goes.
    pods.delete("api-1", &DeleteParams::default()).await.unwrap();
    one_slice(&slices, "api", "api-1 gone", |s| {
        let names: Vec<String> = summary(s).into_iter().map(|e| e.0).collect();
        if names == ["api-0", "api-2"] {
            Ok(())
        } else {
            Err(format!("{names:?}"))
        }
    })
    .await;
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_slices_are_refused_with_field_paths() {
    let c = crate::common::cluster().await;
    let path = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices";
    let post = |body: Value| {
        let c = &c;
        async move {
            let (code, text) = crate::common::raw(
                c,
                "POST",
                path,
                &[("Content-Type", "application/json")],
                body.to_string().as_bytes(),
            )
            .await
            .unwrap();
            (
                code,
                serde_json::from_str::<Value>(&text).unwrap_or(Value::String(text)),
            )
        }
    };
    let slice = |name: &str, address_type: &str, endpoints: Value| {
        json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"name": name},
            "addressType": address_type, "endpoints": endpoints})
    };
    let causes = |status: &Value| -> Vec<(String, String)> {
        status["details"]["causes"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                (
                    c["field"].as_str().unwrap_or("").to_string(),
                    c["message"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect()
    };
    let (code, status) = post(slice("bad-type", "IP", json!([]))).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        causes(&status),
        [(
            "addressType".to_string(),
            r#"Unsupported value: "IP": supported values: "FQDN", "IPv4", "IPv6""#.to_string()
        )]
    );
    let (code, status) = post(slice("no-type", "", json!([]))).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(causes(&status)[0].0, "addressType");
    let many: Vec<Value> = (0..1001)
        .map(|i| json!({"addresses": [format!("10.1.{}.{}", i / 200, i % 200 + 1)]}))
        .collect();
    let (code, status) = post(slice("too-many", "IPv4", json!(many))).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        causes(&status),
        [(
            "endpoints".to_string(),
            "Too many: 1001: must have at most 1000 items".to_string()
        )]
    );
    let too_many_addresses: Vec<String> = (0..101).map(|i| format!("10.2.0.{}", i + 1)).collect();
    let (code, status) = post(slice(
        "addresses",
        "IPv4",
        json!([{"addresses": []}, {"addresses": too_many_addresses}, {"addresses": ["not-an-ip"]}]),
    ))
    .await;
    assert_eq!(code, 422, "{status}");
    let fields: Vec<String> = causes(&status).into_iter().map(|(f, _)| f).collect();
    for want in [
        "endpoints[0].addresses",
        "endpoints[1].addresses",
        "endpoints[2].addresses[0]",
    ] {
        assert!(fields.iter().any(|f| f == want), "{want} not in {fields:?}");
    }
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .starts_with("EndpointSlice.discovery.k8s.io \"addresses\" is invalid"),
        "{status}"
    );
    // A valid one is stored, and its address type cannot change.
    let (code, created) = post(slice("ok", "IPv4", json!([{"addresses": ["10.3.0.1"]}]))).await;
    assert_eq!(code, 201, "{created}");
    let slices: Api<EndpointSlice> = Api::default_namespaced(c.client());
    let err = slices
        .patch(
            "ok",
            &PatchParams::default(),
            &Patch::Merge(json!({"addressType": "IPv6", "endpoints": [{"addresses": ["fd00::1"]}]})),
        )
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("addressType: Invalid value: \"IPv6\": field is immutable"),
        "{err}"
    );
    // A slice without the service-name label is fine, and the controller leaves it alone.
    let listed = crate::common::kubectl(
        &c,
        &[
            "get",
            "endpointslices",
            "ok",
            "-o",
            "jsonpath={.endpoints[0].addresses[0]}",
        ],
    );
    assert_eq!(listed, "10.3.0.1");
    c.shutdown().await;
}

const HAND_WRITTEN: &str = r#"apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: external-db
  labels: {kubernetes.io/service-name: external-db}
addressType: IPv4
ports: [{name: sql, port: 5432, protocol: TCP}]
endpoints:
- addresses: [192.0.2.10]
  conditions: {ready: true}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_applies_a_hand_written_slice_client_and_server_side() {
    let c = crate::common::cluster().await;
    let out = crate::common::kubectl_ok(&c, &["apply", "-f", "-"], Some(HAND_WRITTEN));
    assert!(
        out.contains("endpointslice.discovery.k8s.io/external-db created"),
        "{out}"
    );
    // A second endpoint, applied client-side (a strategic merge patch replacing the atomic list).
    let two = HAND_WRITTEN.replace(
        "- addresses: [192.0.2.10]",
        "- addresses: [192.0.2.10]\n- addresses: [192.0.2.11]",
    );
    let out = crate::common::kubectl_ok(&c, &["apply", "-f", "-"], Some(&two));
    assert!(out.contains("configured"), "{out}");
    let out = crate::common::kubectl(&c, &["get", "endpointslices", "external-db"]);
    let row: Vec<&str> = out.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(
        row[..4],
        ["external-db", "IPv4", "5432", "192.0.2.10,192.0.2.11"],
        "{out}"
    );
    // Server-side apply of the first version takes the second endpoint away again.
    let out = crate::common::kubectl_ok(
        &c,
        &["apply", "--server-side", "--force-conflicts", "-f", "-"],
        Some(HAND_WRITTEN),
    );
    assert!(out.contains("serverside-applied"), "{out}");
    let slices: Api<EndpointSlice> = Api::default_namespaced(c.client());
    let s = slices.get("external-db").await.unwrap();
    let addresses: Vec<String> = s.endpoints.into_iter().flatten().flat_map(|e| e.addresses).collect();
    assert_eq!(addresses, ["192.0.2.10"]);
    // No Service of that name: the controller leaves the slice alone.
    assert_eq!(
        crate::common::kubectl(&c, &["get", "endpointslices", "-o", "name"]).trim(),
        "endpointslice.discovery.k8s.io/external-db"
    );
    let out = crate::common::kubectl(&c, &["delete", "endpointslice", "external-db"]);
    assert!(out.contains("deleted"), "{out}");
    c.shutdown().await;
}
