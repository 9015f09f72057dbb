//! Dynamic resource allocation through kube-rs, raw HTTP and kubectl 1.37 (`get` with upstream's columns,
//! `describe`, `apply` client- and server-side, `delete`, field selectors): the simulated driver's DeviceClass and
//! ResourceSlices following nodes, the kubelet holding a pod (`ContainerCreating`,
//! `FailedPrepareDynamicResources`) until its claim is allocated and reserved for it (directly, through a
//! template, or for its PodGroup), a claim allocated elsewhere, and hostile claims and slices refused with
//! 422 and upstream's field paths.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, Pod};
use k8s_openapi::api::resource::v1::{DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice};
use k8s_openapi::api::scheduling::v1alpha3::PodGroup;
use kube::ResourceExt;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kwas_devcluster::{DRA_DEVICE_CLASS, DRA_DRIVER, DevCluster, DraGpus, NodeSpec, dra_slice_name};
use serde_json::{Value, json};

const T: Duration = Duration::from_secs(15);

fn obj<K: serde::de::DeserializeOwned>(v: Value) -> K {
    serde_json::from_value(v).unwrap()
}

async fn events_of(c: &DevCluster, uid: &str) -> Vec<(String, String)> {
    let events: Api<Event> = Api::default_namespaced(c.client());
    events
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| e.involved_object.uid.as_deref() == Some(uid))
        .map(|e| (e.reason.unwrap_or_default(), e.message.unwrap_or_default()))
        .collect()
}

fn phase(p: &Pod) -> String {
    p.status.as_ref().and_then(|s| s.phase.clone()).unwrap_or_default()
}

fn waiting_reason(p: &Pod) -> Option<String> {
    p.status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .first()?
        .state
        .as_ref()?
        .waiting
        .as_ref()?
        .reason
        .clone()
}

/// Waits for a `FailedPrepareDynamicResources` event on the pod containing `want`; returns the message.
async fn prepare_failure(c: &DevCluster, pod: &Pod, want: &str) -> String {
    let uid = pod.uid().unwrap();
    crate::common::eventually_within(T, format!("FailedPrepareDynamicResources with {want:?}"), || async {
        events_of(c, &uid)
            .await
            .into_iter()
            .find(|(r, m)| r == "FailedPrepareDynamicResources" && m.contains(want))
            .map(|(_, m)| m)
    })
    .await
}

fn gpu_claim(name: &str) -> ResourceClaim {
    obj(
        json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRA_DEVICE_CLASS,
            "selectors": [{"cel": {"expression": "device.attributes[\"gpu.kwas.dev\"].model == \"KW100\""}}]}}]}}}),
    )
}

fn pod_with_claims(name: &str, node: &str, claims: Value, group: Option<&str>) -> Pod {
    let mut spec = json!({"nodeName": node, "resourceClaims": claims,
        "containers": [{"name": "app", "image": "busybox", "resources": {"claims": [{"name": "gpu"}]}}]});
    if let Some(g) = group {
        spec["schedulingGroup"] = json!({"podGroupName": g});
    }
    obj(json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}))
}

/// What a scheduler writes once it picked devices: the allocation (pinned to the node) and the consumer.
fn allocated(node: &str, devices: &[&str], consumer: Value) -> Value {
    let results: Vec<Value> = devices
        .iter()
        .map(|d| json!({"request": "gpu", "driver": DRA_DRIVER, "pool": node, "device": d}))
        .collect();
    json!({"status": {"allocation": {"devices": {"results": results}, "nodeSelector": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}},
        "reservedFor": [consumer]}})
}

async fn running(pods: &Api<Pod>, name: &str) -> Pod {
    crate::common::eventually_within(T, format!("pod {name} running"), || async {
        pods.get(name).await.ok().filter(|p| phase(p) == "Running")
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_driver_publishes_a_slice_per_node_that_follows_the_nodes() {
    let c = crate::common::cluster().await;
    let client = c.client();
    let classes: Api<DeviceClass> = Api::all(client.clone());
    let class = classes.get(DRA_DEVICE_CLASS).await.unwrap();
    let selector = &class.spec.as_ref().unwrap().selectors.as_ref().unwrap()[0];
    assert_eq!(
        selector.cel.as_ref().unwrap().expression,
        "device.driver == \"gpu.kwas.dev\""
    );
    let slices: Api<ResourceSlice> = Api::all(client.clone());
    // A cluster starts with its nodes' slices published (and a channel slice per rack).
    let all: Vec<ResourceSlice> = slices
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|s| s.spec.driver == DRA_DRIVER)
        .collect();
    assert_eq!(all.len(), 4);
    let n0 = all
        .iter()
        .find(|s| s.spec.node_name.as_deref() == Some("node-b0-r0-n0"))
        .unwrap();
    assert_eq!(n0.name_any(), dra_slice_name("node-b0-r0-n0"));
    assert_eq!(n0.spec.driver, DRA_DRIVER);
    assert_eq!(n0.spec.pool.name, "node-b0-r0-n0");
    let devices = n0.spec.devices.as_ref().unwrap();
    assert_eq!(devices.len(), 8);
    let attrs = devices[7].attributes.as_ref().unwrap();
    assert_eq!(devices[7].name, "gpu-7");
    assert_eq!(attrs["model"].string.as_deref(), Some("KW100"));
    assert_eq!(attrs["index"].int, Some(7));
    assert_eq!(attrs["interconnectDomain"].string.as_deref(), Some("b0-r0"));
    assert_eq!(devices[7].capacity.as_ref().unwrap()["memory"].value.0, "80Gi");

    // Discovery and OpenAPI serve the group in its one version.
    let (_, group) = crate::common::raw(&c, "GET", "/apis/resource.k8s.io", &[], b"")
        .await
        .unwrap();
    let group: Value = serde_json::from_str(&group).unwrap();
    assert_eq!(group["preferredVersion"]["groupVersion"], "resource.k8s.io/v1");
    assert_eq!(group["versions"].as_array().unwrap().len(), 1);
    let (_, list) = crate::common::raw(&c, "GET", "/apis/resource.k8s.io/v1", &[], b"")
        .await
        .unwrap();
    let list: Value = serde_json::from_str(&list).unwrap();
    let names: Vec<&str> = list["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "deviceclasses",
            "resourceclaims",
            "resourceclaims/status",
            "resourceclaimtemplates",
            "resourceslices"
        ]
    );
    let (code, _) = crate::common::raw(&c, "GET", "/openapi/v3/apis/resource.k8s.io/v1", &[], b"")
        .await
        .unwrap();
    assert_eq!(code, 200);

    // client-go's typed clients read them in protobuf.
    let (code, body) = crate::common::raw_bytes(
        &c,
        "GET",
        "/apis/resource.k8s.io/v1/resourceslices",
        &[("Accept", "application/vnd.kubernetes.protobuf")],
        b"",
    )
    .await
    .unwrap();
    assert_eq!(code, 200);
    assert!(body.starts_with(b"k8s\0"), "not a protobuf envelope");
    assert!(
        body.windows(b"ResourceSliceList".len())
            .any(|w| w == b"ResourceSliceList")
    );
    assert!(
        body.windows(b"interconnectDomain".len())
            .any(|w| w == b"interconnectDomain")
    );

    // Field selectors upstream supports on slices.
    let on_node = slices
        .list(&ListParams::default().fields("spec.nodeName=node-b0-r1-n1"))
        .await
        .unwrap();
    assert_eq!(on_node.items.len(), 1);
    let by_driver = slices
        .list(&ListParams::default().fields("spec.driver=other.example.com"))
        .await
        .unwrap();
    assert!(by_driver.items.is_empty());

    // A node added gets a slice with its own GPUs; a removed node loses it.
    c.add_node(NodeSpec::new("extra").with_dra_gpus(DraGpus {
        count: 2,
        model: "KW200".into(),
        memory: "40Gi".into(),
    }))
    .unwrap();
    let extra = slices.get(&dra_slice_name("extra")).await.unwrap();
    let devices = extra.spec.devices.as_ref().unwrap();
    assert_eq!(devices.len(), 2);
    assert_eq!(
        devices[0].attributes.as_ref().unwrap()["model"].string.as_deref(),
        Some("KW200")
    );
    assert_eq!(
        devices[0].attributes.as_ref().unwrap()["interconnectDomain"]
            .string
            .as_deref(),
        Some("extra"),
        "without a rack label the domain is the node"
    );
    // A client deleting the slice gets it back; one editing it gets it restored with a new generation.
    slices.delete(&extra.name_any(), &Default::default()).await.unwrap();
    crate::common::eventually_within(T, "the slice republished", || async {
        slices
            .get_opt(&dra_slice_name("extra"))
            .await
            .unwrap()
            .filter(|s| s.uid() != extra.uid())
    })
    .await;
    c.remove_node("extra").unwrap();
    assert!(slices.get_opt(&dra_slice_name("extra")).await.unwrap().is_none());
    // A node created by a client (kubectl) with the annotation gets its slice from the driver's task.
    let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(client.clone());
    nodes
        .create(
            &PostParams::default(),
            &obj(
                json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "byhand",
                "annotations": {"kwas.dev/sim-dra-gpus": "1"}}}),
            ),
        )
        .await
        .unwrap();
    crate::common::eventually_within(T, "the slice of a node a client created", || async {
        slices.get_opt(&dra_slice_name("byhand")).await.unwrap()
    })
    .await;
    nodes.delete("byhand", &Default::default()).await.unwrap();
    crate::common::eventually_within(T, "the slice of a node a client deleted gone", || async {
        slices
            .get_opt(&dra_slice_name("byhand"))
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await;
    // Changing a node's GPU count republishes its devices with the pool's generation bumped.
    nodes
        .patch(
            "node-b0-r0-n0",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"kwas.dev/sim-dra-gpus": "3"}}})),
        )
        .await
        .unwrap();
    let n0 = crate::common::eventually_within(T, "node-b0-r0-n0's slice with 3 devices", || async {
        slices
            .get_opt(&dra_slice_name("node-b0-r0-n0"))
            .await
            .unwrap()
            .filter(|s| s.spec.devices.as_ref().is_some_and(|d| d.len() == 3))
    })
    .await;
    assert_eq!(n0.spec.pool.generation, 2);
    assert!(c.task_failures().is_empty(), "{:?}", c.task_failures());
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racks_get_interconnect_channels_that_reach_the_rack() {
    use kwas_devcluster::{CHANNELS_PER_DOMAIN, INTERCONNECT_DEVICE_CLASS, INTERCONNECT_DRIVER, channel_slice_name};
    let c = crate::common::cluster().await;
    let client = c.client();
    let classes: Api<DeviceClass> = Api::all(client.clone());
    assert!(classes.get(INTERCONNECT_DEVICE_CLASS).await.is_ok());
    let slices: Api<ResourceSlice> = Api::all(client.clone());
    let channels = |all: Vec<ResourceSlice>| -> Vec<ResourceSlice> {
        all.into_iter()
            .filter(|s| s.spec.driver == INTERCONNECT_DRIVER)
            .collect()
    };
    let found = channels(slices.list(&ListParams::default()).await.unwrap().items);
    let mut names: Vec<String> = found.iter().map(|s| s.name_any()).collect();
    names.sort();
    assert_eq!(names, vec![channel_slice_name("b0-r0"), channel_slice_name("b0-r1")]);
    let r0 = found.iter().find(|s| s.spec.pool.name == "b0-r0").unwrap();
    assert_eq!(r0.spec.node_name, None);
    let term = &r0.spec.node_selector.as_ref().unwrap().node_selector_terms[0];
    let expr = &term.match_expressions.as_ref().unwrap()[0];
    assert_eq!(
        (expr.key.as_str(), expr.values.clone().unwrap()),
        ("kwas.dev/rack", vec!["b0-r0".to_string()])
    );
    let devices = r0.spec.devices.as_ref().unwrap();
    assert_eq!(devices.len(), CHANNELS_PER_DOMAIN as usize);
    assert_eq!(
        devices[0].attributes.as_ref().unwrap()["interconnectDomain"]
            .string
            .as_deref(),
        Some("b0-r0")
    );
    // A rack's last node gone: its channels go too.
    c.remove_node("node-b0-r1-n0").unwrap();
    c.remove_node("node-b0-r1-n1").unwrap();
    let left = channels(slices.list(&ListParams::default()).await.unwrap().items);
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].spec.pool.name, "b0-r0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_waits_for_its_claim_to_be_allocated_and_reserved_for_it() {
    let c = crate::common::cluster().await;
    let client = c.client();
    let claims: Api<ResourceClaim> = Api::default_namespaced(client.clone());
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let node = "node-b0-r0-n1";

    // No claim yet.
    let pod = pods
        .create(
            &PostParams::default(),
            &pod_with_claims(
                "trainer",
                node,
                json!([{"name": "gpu", "resourceClaimName": "gpus"}]),
                None,
            ),
        )
        .await
        .unwrap();
    let msg = prepare_failure(&c, &pod, "not found").await;
    assert_eq!(
        msg,
        "Failed to prepare dynamic resources: fetch ResourceClaim gpus: resourceclaims.resource.k8s.io \"gpus\" not found"
    );
    let p = pods.get("trainer").await.unwrap();
    assert_eq!(phase(&p), "Pending");
    assert_eq!(waiting_reason(&p).as_deref(), Some("ContainerCreating"));

    // The claim exists but is neither allocated nor reserved.
    let claim = claims.create(&PostParams::default(), &gpu_claim("gpus")).await.unwrap();
    prepare_failure(&c, &pod, "is not allowed to use ResourceClaim gpus").await;
    let uid = pod.uid().unwrap();
    assert!(
        events_of(&c, &uid).await.iter().any(|(_, m)| m
            == &format!(
                "Failed to prepare dynamic resources: pod trainer ({uid}) is not allowed to use ResourceClaim gpus ({})",
                claim.uid().unwrap()
            )),
        "{:?}",
        events_of(&c, &uid).await
    );

    // Reserved for the pod but allocated on another node: the driver cannot prepare it here.
    let consumer = json!({"resource": "pods", "name": "trainer", "uid": uid});
    claims
        .patch_status(
            "gpus",
            &PatchParams::default(),
            &Patch::Merge(allocated("node-b0-r1-n0", &["gpu-0"], consumer.clone())),
        )
        .await
        .unwrap();
    prepare_failure(&c, &pod, "does not admit node \"node-b0-r0-n1\"").await;
    assert_eq!(phase(&pods.get("trainer").await.unwrap()), "Pending");

    // Deallocate (reservation first, as a scheduler would), then allocate where the pod runs.
    claims
        .patch_status(
            "gpus",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"reservedFor": null, "allocation": null}})),
        )
        .await
        .unwrap();
    claims
        .patch_status(
            "gpus",
            &PatchParams::default(),
            &Patch::Merge(allocated(node, &["gpu-0", "gpu-1"], consumer)),
        )
        .await
        .unwrap();
    let p = running(&pods, "trainer").await;
    assert_eq!(p.spec.as_ref().unwrap().node_name.as_deref(), Some(node));
    // kubectl's STATE for it.
    let table = crate::common::raw(
        &c,
        "GET",
        "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/gpus",
        &[("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")],
        b"",
    )
    .await
    .unwrap()
    .1;
    let table: Value = serde_json::from_str(&table).unwrap();
    assert_eq!(table["rows"][0]["cells"][1], "allocated,reserved");
    assert!(c.task_failures().is_empty());
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn template_claims_and_claims_shared_with_a_pod_group_resolve_like_upstream() {
    let c = crate::common::cluster().await;
    let client = c.client();
    let claims: Api<ResourceClaim> = Api::default_namespaced(client.clone());
    let templates: Api<ResourceClaimTemplate> = Api::default_namespaced(client.clone());
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let groups: Api<PodGroup> = Api::default_namespaced(client.clone());
    let node = "node-b0-r1-n1";
    templates
        .create(
            &PostParams::default(),
            &obj(json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "one-gpu"},
                "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRA_DEVICE_CLASS}}]}}}})),
        )
        .await
        .unwrap();

    // A template claim: not created until the pod's status names it; then it must be the pod's.
    let pod = pods
        .create(
            &PostParams::default(),
            &pod_with_claims(
                "solo",
                node,
                json!([{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]),
                None,
            ),
        )
        .await
        .unwrap();
    let uid = pod.uid().unwrap();
    let msg = prepare_failure(&c, &pod, "ResourceClaim not created yet").await;
    assert_eq!(
        msg,
        "Failed to prepare dynamic resources: pod \"default/solo\": ResourceClaim not created yet"
    );
    let generated = |name: &str, owner: Value| -> ResourceClaim {
        let mut claim = serde_json::to_value(gpu_claim(name)).unwrap();
        claim["metadata"]["ownerReferences"] = json!([owner]);
        obj(claim)
    };
    // Generated for another pod (one that exists: the garbage collector removes claims whose owner does
    // not).
    let other = pods
        .create(
            &PostParams::default(),
            &obj(json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "other"},
                "spec": {"containers": [{"name": "app", "image": "busybox"}]}})),
        )
        .await
        .unwrap();
    claims
        .create(
            &PostParams::default(),
            &generated(
                "solo-gpu-abc12",
                json!({"apiVersion": "v1", "kind": "Pod", "name": "other", "uid": other.uid().unwrap(), "controller": true}),
            ),
        )
        .await
        .unwrap();
    pods.patch_status(
        "solo",
        &PatchParams::default(),
        &Patch::Merge(
            json!({"status": {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "solo-gpu-abc12"}]}}),
        ),
    )
    .await
    .unwrap();
    prepare_failure(
        &c,
        &pod,
        "ResourceClaim default/solo-gpu-abc12 was not created for pod default/solo (pod is not owner)",
    )
    .await;
    claims
        .create(
            &PostParams::default(),
            &generated(
                "solo-gpu-def34",
                json!({"apiVersion": "v1", "kind": "Pod",
            "name": "solo", "uid": uid, "controller": true}),
            ),
        )
        .await
        .unwrap();
    claims
        .patch_status(
            "solo-gpu-def34",
            &PatchParams::default(),
            &Patch::Merge(allocated(
                node,
                &["gpu-2"],
                json!({"resource": "pods", "name": "solo", "uid": uid}),
            )),
        )
        .await
        .unwrap();
    pods.patch_status(
        "solo",
        &PatchParams::default(),
        &Patch::Merge(
            json!({"status": {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "solo-gpu-def34"}]}}),
        ),
    )
    .await
    .unwrap();
    running(&pods, "solo").await;

    // A claim the pods share with their PodGroup (KEP-5729): reserved for the group, not each pod. The
    // PodGroup's status names the claim generated for it; the pods' status need not.
    let group = groups
        .create(
            &PostParams::default(),
            &obj(
                json!({"apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "PodGroup", "metadata": {"name": "gang"},
                "spec": {"schedulingPolicy": {"gang": {"minCount": 2}},
                    "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]}}),
            ),
        )
        .await
        .unwrap();
    let member = |name: &str| {
        pod_with_claims(
            name,
            node,
            json!([{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]),
            Some("gang"),
        )
    };
    let m0 = pods.create(&PostParams::default(), &member("gang-0")).await.unwrap();
    let m1 = pods.create(&PostParams::default(), &member("gang-1")).await.unwrap();
    prepare_failure(&c, &m0, "ResourceClaim not created yet").await;
    claims
        .create(
            &PostParams::default(),
            &generated(
                "gang-gpu-x1",
                json!({"apiVersion": "scheduling.k8s.io/v1alpha3",
            "kind": "PodGroup", "name": "gang", "uid": group.uid().unwrap(), "controller": true}),
            ),
        )
        .await
        .unwrap();
    groups
        .patch_status(
            "gang",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"status": {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "gang-gpu-x1"}]}}),
            ),
        )
        .await
        .unwrap();
    prepare_failure(&c, &m1, "is not allowed to use ResourceClaim gang-gpu-x1").await;
    // Reserved for another PodGroup of the same name (a different uid): still not this group's.
    let stranger = json!({"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": "gang",
        "uid": "9a0c2d11-0000-4000-8000-000000000000"});
    claims
        .patch_status(
            "gang-gpu-x1",
            &PatchParams::default(),
            &Patch::Merge(allocated(node, &["gpu-3", "gpu-4"], stranger)),
        )
        .await
        .unwrap();
    prepare_failure(&c, &m0, "is not allowed to use ResourceClaim gang-gpu-x1").await;
    assert_eq!(phase(&pods.get("gang-0").await.unwrap()), "Pending");
    let mine =
        json!({"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": "gang", "uid": group.uid().unwrap()});
    claims
        .patch_status(
            "gang-gpu-x1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"reservedFor": [mine]}})),
        )
        .await
        .unwrap();
    running(&pods, "gang-0").await;
    running(&pods, "gang-1").await;

    // A pod whose claim entry differs from the group's (another template) does not share it.
    let odd = pods
        .create(
            &PostParams::default(),
            &pod_with_claims(
                "gang-odd",
                node,
                json!([{"name": "gpu", "resourceClaimTemplateName": "other-template"}]),
                Some("gang"),
            ),
        )
        .await
        .unwrap();
    prepare_failure(&c, &odd, "ResourceClaim not created yet").await;
    assert!(c.task_failures().is_empty());
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_claims_and_slices_are_refused_with_field_paths() {
    let c = crate::common::cluster().await;
    let post = |path: &'static str, body: Value| {
        let c = &c;
        async move {
            crate::common::raw(
                c,
                "POST",
                path,
                &[("Content-Type", "application/json")],
                body.to_string().as_bytes(),
            )
            .await
            .unwrap()
        }
    };
    let claims = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims";
    let claim = |name: &str, requests: Value| {
        json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name},
            "spec": {"devices": {"requests": requests}}})
    };
    let cases: Vec<(Value, &str)> = vec![
        (
            claim(
                "many",
                json!(
                    (0..40)
                        .map(|i| json!({"name": format!("r{i}"), "exactly": {"deviceClassName": "c"}}))
                        .collect::<Vec<_>>()
                ),
            ),
            "spec.devices.requests: Too many: 40: must have at most 32 items",
        ),
        (
            claim(
                "selectors",
                json!([{"name": "r", "exactly": {"deviceClassName": "c",
                    "selectors": (0..33).map(|_| json!({"cel": {"expression": "true"}})).collect::<Vec<_>>()}}]),
            ),
            "spec.devices.requests[0].exactly.selectors: Too many: 33: must have at most 32 items",
        ),
        (
            claim(
                "count",
                json!([{"name": "r", "exactly": {"deviceClassName": "c", "count": -9_000_000_000_000_000_000_i64}}]),
            ),
            "spec.devices.requests[0].exactly.count: Invalid value: -9000000000000000000: must be greater than zero",
        ),
        (
            claim(
                "names",
                json!([{"name": "Not A Name", "exactly": {"deviceClassName": "UPPER.case"}}]),
            ),
            "spec.devices.requests[0].name: Invalid value: \"Not A Name\"",
        ),
        (
            claim(
                "long",
                json!([{"name": "r", "exactly": {"deviceClassName": "c", "selectors": [{"cel": {"expression": "x".repeat(10 * 1024 + 1)}}]}}]),
            ),
            "spec.devices.requests[0].exactly.selectors[0].cel.expression: Too long: must have at most 10240 bytes",
        ),
        (
            claim(
                "deep",
                json!([{"name": "r", "exactly": {"deviceClassName": "c", "selectors": [{"cel": {"expression": format!("{}true{}", "(".repeat(3000), ")".repeat(3000))}}]}}]),
            ),
            "spec.devices.requests[0].exactly.selectors[0].cel.expression: Invalid value: ",
        ),
    ];
    for (body, want) in cases {
        let (code, text) = post(claims, body).await;
        assert_eq!(code, 422, "{text}");
        let status: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(status["reason"], "Invalid");
        assert!(
            status["message"].as_str().unwrap().contains(want),
            "{want} missing from {text}"
        );
        assert!(
            status["details"]["causes"]
                .as_array()
                .unwrap()
                .iter()
                .any(|cause| want.starts_with(cause["field"].as_str().unwrap())),
            "no cause with the field path of {want}: {text}"
        );
    }
    let (code, text) = post(
        "/apis/resource.k8s.io/v1/resourceslices",
        json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
            "spec": {"driver": "x.example.com", "nodeName": "n", "pool": {"name": "n", "generation": 0, "resourceSliceCount": 1},
                "devices": [{"name": "d", "attributes": (0..40).map(|i| (format!("a{i}"), json!({"int": i}))).collect::<serde_json::Map<_, _>>()}]}}),
    )
    .await;
    assert_eq!(code, 422, "{text}");
    assert!(
        text.contains(
            "spec.devices[0]: Invalid value: 40: the total number of attributes and capacities must not exceed 32"
        ),
        "{text}"
    );
    // The deepest chains that fit the length limit compile on the compiler's own stack: answered, never a
    // crashed handler.
    for (name, expression) in [
        ("members", format!("device{}", ".a".repeat(5000))),
        (
            "sums",
            vec!["device.attributes[\"gpu.kwas.dev\"].index"; 200].join(" + ") + " > 1",
        ),
        ("ternaries", format!("{}true", "true ? true : ".repeat(700))),
        ("calls", format!("device{}", ".f()".repeat(2500))),
    ] {
        let body = claim(
            name,
            json!([{"name": "r", "exactly": {"deviceClassName": "c", "selectors": [{"cel": {"expression": expression}}]}}]),
        );
        let (code, text) = post(claims, body).await;
        assert!(code == 201 || code == 422, "{name}: {code} {text}");
    }
    // The server is fine afterwards.
    assert!(c.task_failures().is_empty());
    let classes: Api<DeviceClass> = Api::all(c.client());
    assert!(classes.get(DRA_DEVICE_CLASS).await.is_ok());
    c.shutdown().await;
}

const KUBECTL_OBJECTS: &str = "apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: one-gpu
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.kwas.dev
          selectors:
          - cel:
              expression: device.attributes[\"gpu.kwas.dev\"].model == \"KW100\"
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: gpus
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.kwas.dev
        count: 2
    constraints:
    - matchAttribute: gpu.kwas.dev/interconnectDomain
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: big-gpus
spec:
  selectors:
  - cel:
      expression: device.driver == \"gpu.kwas.dev\" && device.capacity[\"gpu.kwas.dev\"].memory.compareTo(quantity(\"64Gi\")) >= 0
";

/// The rows of `kubectl get` output without its header, split into columns.
fn rows(out: &str) -> Vec<Vec<String>> {
    out.lines()
        .skip(1)
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_gets_describes_applies_and_deletes_the_dra_kinds() {
    let c = crate::common::cluster().await;
    let slices: Api<ResourceSlice> = Api::all(c.client());
    // Four GPU slices (one per node) and two channel slices (one per rack).
    crate::common::eventually_within(T, "the drivers' 6 slices", || async {
        (slices.list(&ListParams::default()).await.unwrap().items.len() == 6).then_some(())
    })
    .await;

    // The driver's objects, with upstream's columns.
    let out = crate::common::kubectl(&c, &["get", "resourceslices"]);
    let header: Vec<&str> = out.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "NODE", "DRIVER", "POOL", "AGE"], "{out}");
    let rows_ = rows(&out);
    assert_eq!(rows_.len(), 6, "{out}");
    // A slice for a node selector has an empty NODE cell.
    assert!(
        rows_.iter().any(|r| r[..3]
            == [
                "b0-r0-interconnect.kwas.dev".to_string(),
                "interconnect.kwas.dev".into(),
                "b0-r0".into()
            ]),
        "{out}"
    );
    assert!(
        rows_.iter().any(|r| r[..4]
            == [
                "node-b0-r0-n0-gpu.kwas.dev".to_string(),
                "node-b0-r0-n0".into(),
                "gpu.kwas.dev".into(),
                "node-b0-r0-n0".into()
            ]),
        "{out}"
    );
    let out = crate::common::kubectl(
        &c,
        &[
            "get",
            "resourceslices",
            "--field-selector",
            "spec.nodeName=node-b0-r1-n0",
            "-o",
            "name",
        ],
    );
    assert_eq!(out.trim(), "resourceslice.resource.k8s.io/node-b0-r1-n0-gpu.kwas.dev");
    let out = crate::common::kubectl(&c, &["get", "deviceclasses"]);
    assert_eq!(
        out.lines().next().unwrap().split_whitespace().collect::<Vec<_>>(),
        ["NAME", "AGE"]
    );
    assert!(rows(&out).iter().any(|r| r[0] == "gpu.kwas.dev"), "{out}");

    // Apply, get, describe.
    let out = crate::common::kubectl_ok(&c, &["apply", "-f", "-"], Some(KUBECTL_OBJECTS));
    for want in [
        "resourceclaimtemplate.resource.k8s.io/one-gpu created",
        "resourceclaim.resource.k8s.io/gpus created",
        "deviceclass.resource.k8s.io/big-gpus created",
    ] {
        assert!(out.contains(want), "{want} missing from {out}");
    }
    // Applying again changes nothing: kubectl sends the atomic request lists whole (the live ones carry
    // the server's defaults, so it says `configured`, as against kube-apiserver), the server defaults them
    // the same way and the immutable spec stays as it was.
    let rv = |c: &DevCluster| {
        crate::common::kubectl(
            c,
            &[
                "get",
                "resourceclaim",
                "gpus",
                "-o",
                "jsonpath={.metadata.resourceVersion}",
            ],
        )
    };
    let before = rv(&c);
    let again = crate::common::kubectl_ok(&c, &["apply", "-f", "-"], Some(KUBECTL_OBJECTS));
    assert!(again.contains("resourceclaim.resource.k8s.io/gpus"), "{again}");
    assert!(
        again.contains("deviceclass.resource.k8s.io/big-gpus unchanged"),
        "{again}"
    );
    assert_eq!(rv(&c), before);
    let out = crate::common::kubectl(&c, &["get", "resourceclaims"]);
    assert_eq!(
        out.lines().next().unwrap().split_whitespace().collect::<Vec<_>>(),
        ["NAME", "STATE", "AGE"]
    );
    assert_eq!(rows(&out)[0][..2], ["gpus".to_string(), "pending".into()], "{out}");
    let out = crate::common::kubectl(&c, &["get", "resourceclaimtemplates"]);
    assert_eq!(
        out.lines().next().unwrap().split_whitespace().collect::<Vec<_>>(),
        ["NAME", "AGE"]
    );
    assert_eq!(rows(&out)[0][0], "one-gpu");
    let claim: Value = serde_json::from_str(&crate::common::kubectl(
        &c,
        &["get", "resourceclaim", "gpus", "-o", "json"],
    ))
    .unwrap();
    assert_eq!(
        claim["spec"]["devices"]["requests"][0]["exactly"]["allocationMode"], "ExactCount",
        "defaulted: {claim}"
    );
    let out = crate::common::kubectl(&c, &["describe", "resourceclaim", "gpus"]);
    assert!(out.contains("gpus") && out.contains("gpu.kwas.dev"), "{out}");
    let out = crate::common::kubectl(&c, &["describe", "resourceslice", "node-b0-r0-n0-gpu.kwas.dev"]);
    assert!(out.contains("Interconnect Domain:") && out.contains("KW100"), "{out}");

    // Server-side apply of a claim's labels; then the spec is immutable.
    let labelled = KUBECTL_OBJECTS
        .split("---\n")
        .nth(1)
        .unwrap()
        .replace("  name: gpus\n", "  name: gpus\n  labels: {team: ml}\n");
    crate::common::kubectl_ok(
        &c,
        &["apply", "--server-side", "--force-conflicts", "-f", "-"],
        Some(&labelled),
    );
    let immutable = labelled.replace("count: 2", "count: 3");
    let out = crate::common::kubectl_in(
        &c,
        &["apply", "--server-side", "--force-conflicts", "-f", "-"],
        Some(&immutable),
    );
    assert!(!out.ok);
    assert!(out.stderr.contains("field is immutable"), "{}", out.stderr);

    // A claim whose selector does not compile is refused with the field path.
    let bad = KUBECTL_OBJECTS
        .split("---\n")
        .nth(1)
        .unwrap()
        .replace("name: gpus", "name: broken")
        .replace(
            "        count: 2\n",
            "        count: 2\n        selectors:\n        - cel:\n            expression: device.attributes[\"gpu.kwas.dev\"].model ==\n",
        );
    let out = crate::common::kubectl_in(&c, &["apply", "-f", "-"], Some(&bad));
    assert!(!out.ok, "{}", out.stdout);
    assert!(
        out.stderr.contains("The ResourceClaim \"broken\" is invalid")
            && out.stderr.contains(
                "spec.devices.requests[0].exactly.selectors[0].cel.expression: Invalid value: \"device.attributes[\\\"gpu.kwas.dev\\\"].model ==\": compilation failed: ERROR: <input>:1:"
            ),
        "{}",
        out.stderr
    );

    // Delete them.
    let out = crate::common::kubectl(&c, &["delete", "resourceclaim/gpus", "resourceclaimtemplate/one-gpu"]);
    assert!(out.contains("resourceclaim.resource.k8s.io \"gpus\" deleted"), "{out}");
    assert!(
        out.contains("resourceclaimtemplate.resource.k8s.io \"one-gpu\" deleted"),
        "{out}"
    );
    let out = crate::common::kubectl(&c, &["delete", "deviceclass", "big-gpus"]);
    assert!(out.contains("deleted"), "{out}");
    assert!(
        crate::common::kubectl(&c, &["get", "resourceclaims", "-o", "name"])
            .trim()
            .is_empty()
    );
    c.shutdown().await;
}
