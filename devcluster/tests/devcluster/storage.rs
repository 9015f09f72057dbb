//! Volumes and disruption budgets through kube-rs and raw HTTP: the default StorageClass and the simulated
//! CSI driver, a pod waiting for its claims (`ContainerCreating`, `FailedMount`) until they bind, a volume
//! whose node affinity keeps a pod off other nodes, CSINodes following the nodes, and evictions refused by
//! a PodDisruptionBudget (429 with a `DisruptionBudget` cause, no `Retry-After`) until the budget allows them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use kube::ResourceExt;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kwas_devcluster::{NodeSpec, SIM_DISK_DRIVER};
use serde_json::{Value, json};

const T: Duration = Duration::from_secs(15);

fn obj<K: serde::de::DeserializeOwned>(v: Value) -> K {
    serde_json::from_value(v).unwrap()
}

fn pod_with_claim(name: &str, node: &str, claim: &str, labels: Value) -> Pod {
    obj(
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels}, "spec": {
        "nodeName": node, "containers": [{"name": "app", "image": "busybox"}],
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]}}),
    )
}

fn claim(name: &str, class: Option<&str>) -> PersistentVolumeClaim {
    let mut spec = json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}});
    if let Some(c) = class {
        spec["storageClassName"] = json!(c);
    }
    obj(json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name}, "spec": spec}))
}

async fn events_of(c: &kwas_devcluster::DevCluster, uid: &str) -> Vec<(String, String)> {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_wait_for_their_claims_and_run_once_the_volumes_are_provisioned() {
    let c = crate::common::cluster().await;
    let client = c.client();
    let classes: Api<StorageClass> = Api::all(client.clone());
    let standard = classes.get("standard").await.unwrap();
    assert_eq!(standard.provisioner, SIM_DISK_DRIVER);
    assert_eq!(standard.volume_binding_mode.as_deref(), Some("WaitForFirstConsumer"));
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let claims: Api<PersistentVolumeClaim> = Api::default_namespaced(client.clone());
    let node = "node-b0-r0-n1";
    pods.create(&PostParams::default(), &pod_with_claim("app", node, "data", json!({})))
        .await
        .unwrap();
    // No claim yet: the kubelet waits and says why.
    let waiting = crate::common::eventually_within(T, "the pod waiting for its claim", || async {
        let p = pods.get("app").await.ok()?;
        (waiting_reason(&p).as_deref() == Some("ContainerCreating")).then_some(p)
    })
    .await;
    assert_eq!(waiting.status.as_ref().unwrap().phase.as_deref(), Some("Pending"));
    let pod_uid = waiting.uid().unwrap();
    let mounts = crate::common::eventually_within(T, "a FailedMount event", || async {
        let evs = events_of(&c, &pod_uid).await;
        evs.into_iter().find(|(r, _)| r == "FailedMount")
    })
    .await;
    assert!(
        mounts.1.contains("error processing PVC default/data") && mounts.1.contains("not found"),
        "{mounts:?}"
    );
    // The claim gets the default class and waits for its consumer's node.
    let created = claims
        .create(&PostParams::default(), &claim("data", None))
        .await
        .unwrap();
    assert_eq!(
        created.spec.as_ref().unwrap().storage_class_name.as_deref(),
        Some("standard")
    );
    let claim_uid = created.uid().unwrap();
    crate::common::eventually_within(T, "WaitForFirstConsumer", || async {
        let evs = events_of(&c, &claim_uid).await;
        evs.iter()
            .any(|(r, m)| r == "WaitForFirstConsumer" && m == "waiting for first consumer to be created before binding")
            .then_some(())
    })
    .await;
    assert_eq!(
        pods.get("app").await.unwrap().status.unwrap().phase.as_deref(),
        Some("Pending")
    );
    // A scheduler selects the node: the volume is provisioned there, bound, and the pod runs.
    let patch = json!({"metadata": {"annotations": {"volume.kubernetes.io/selected-node": node}}});
    claims
        .patch("data", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    let bound = crate::common::eventually_within(T, "the claim bound", || async {
        let c = claims.get("data").await.ok()?;
        (c.status.as_ref()?.phase.as_deref() == Some("Bound")).then_some(c)
    })
    .await;
    let volume = bound.spec.as_ref().unwrap().volume_name.clone().unwrap();
    assert_eq!(volume, format!("pvc-{claim_uid}"));
    let pv: Api<PersistentVolume> = Api::all(client.clone());
    let pv = pv.get(&volume).await.unwrap();
    let terms = &pv
        .spec
        .as_ref()
        .unwrap()
        .node_affinity
        .as_ref()
        .unwrap()
        .required
        .as_ref()
        .unwrap()
        .node_selector_terms;
    assert_eq!(
        terms[0].match_expressions.as_ref().unwrap()[0].values.as_ref().unwrap(),
        &vec![node.to_string()]
    );
    assert_eq!(
        pv.labels().get("topology.kubernetes.io/zone").map(String::as_str),
        Some("zone-0")
    );
    crate::common::eventually_within(T, "the pod running", || async {
        let p = pods.get("app").await.ok()?;
        (p.status.as_ref()?.phase.as_deref() == Some("Running")).then_some(())
    })
    .await;
    // Deleting the claim waits for the pod; then the claim and its volume go.
    claims.delete("data", &Default::default()).await.unwrap();
    crate::common::eventually_within(T, "the claim marked for deletion", || async {
        claims.get("data").await.ok()?.metadata.deletion_timestamp.map(|_| ())
    })
    .await;
    assert!(claims.get("data").await.unwrap().metadata.deletion_timestamp.is_some());
    pods.delete("app", &Default::default()).await.unwrap();
    crate::common::eventually_within(T, "claim and volume gone", || async {
        let pvs: Api<PersistentVolume> = Api::all(c.client());
        (claims.get_opt("data").await.unwrap().is_none() && pvs.get_opt(&volume).await.unwrap().is_none()).then_some(())
    })
    .await;
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_volume_pinned_to_another_node_keeps_the_pod_waiting() {
    let c = crate::common::cluster().await;
    let client = c.client();
    let pvs: Api<PersistentVolume> = Api::all(client.clone());
    pvs.create(
        &PostParams::default(),
        &obj(
            json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "local-a"}, "spec": {
            "capacity": {"storage": "5Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "",
            "local": {"path": "/mnt/a"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": ["node-b0-r0-n0"]}]}]}}}}),
        ),
    )
    .await
    .unwrap();
    let claims: Api<PersistentVolumeClaim> = Api::default_namespaced(client.clone());
    claims
        .create(&PostParams::default(), &claim("local", Some("")))
        .await
        .unwrap();
    crate::common::eventually_within(T, "the static volume bound", || async {
        let c = claims.get("local").await.ok()?;
        (c.spec.as_ref()?.volume_name.as_deref() == Some("local-a")
            && c.status.as_ref()?.phase.as_deref() == Some("Bound"))
        .then_some(())
    })
    .await;
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    pods.create(
        &PostParams::default(),
        &pod_with_claim("far", "node-b0-r1-n1", "local", json!({})),
    )
    .await
    .unwrap();
    let far = crate::common::eventually_within(T, "the far pod waiting", || async {
        let p = pods.get("far").await.ok()?;
        (waiting_reason(&p).as_deref() == Some("ContainerCreating")).then_some(p)
    })
    .await;
    let evs = crate::common::eventually_within(T, "the node affinity event", || async {
        let evs = events_of(&c, &far.uid().unwrap()).await;
        evs.into_iter()
            .find(|(r, m)| r == "FailedMount" && m.contains("NodeAffinity"))
    })
    .await;
    assert!(evs.1.contains("\"local-a\""), "{evs:?}");
    pods.create(
        &PostParams::default(),
        &pod_with_claim("near", "node-b0-r0-n0", "local", json!({})),
    )
    .await
    .unwrap();
    crate::common::eventually_within(T, "the near pod running", || async {
        let p = pods.get("near").await.ok()?;
        (p.status.as_ref()?.phase.as_deref() == Some("Running")).then_some(())
    })
    .await;
    assert_eq!(
        pods.get("far").await.unwrap().status.unwrap().phase.as_deref(),
        Some("Pending")
    );
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn csinodes_follow_the_nodes() {
    let c = crate::common::cluster_with(|cfg| cfg.csi.attach_limit = 3).await;
    let csinodes: Api<CSINode> = Api::all(c.client());
    crate::common::eventually_within(T, "a CSINode per node", || async {
        (csinodes.list(&ListParams::default()).await.ok()?.items.len() == 4).then_some(())
    })
    .await;
    let n = csinodes.get("node-b0-r0-n0").await.unwrap();
    let driver = &n.spec.drivers[0];
    assert_eq!(driver.name, SIM_DISK_DRIVER);
    assert_eq!(driver.allocatable.as_ref().unwrap().count, Some(3));
    c.add_node(NodeSpec::new("extra")).unwrap();
    crate::common::eventually_within(T, "the new node's CSINode", || async {
        csinodes.get_opt("extra").await.ok()?.map(|_| ())
    })
    .await;
    c.remove_node("extra").unwrap();
    crate::common::eventually_within(T, "the removed node's CSINode gone", || async {
        csinodes.get_opt("extra").await.ok()?.is_none().then_some(())
    })
    .await;
    c.shutdown().await;
}

async fn evict(c: &kwas_devcluster::DevCluster, name: &str) -> (u16, Value) {
    let body =
        json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": "default"}});
    let (code, text) = crate::common::raw(
        c,
        "POST",
        &format!("/api/v1/namespaces/default/pods/{name}/eviction"),
        &[("Content-Type", "application/json")],
        body.to_string().as_bytes(),
    )
    .await
    .unwrap();
    (code, serde_json::from_str(&text).unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evictions_spend_the_budget_and_are_refused_once_it_is_spent() {
    let c = crate::common::cluster().await;
    let client = c.client();
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    for (i, name) in ["web-0", "web-1", "web-2"].iter().enumerate() {
        let p: Pod = obj(
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "web"}},
            "spec": {"nodeName": format!("node-b0-r{}-n0", i % 2), "containers": [{"name": "app", "image": "nginx"}]}}),
        );
        pods.create(&PostParams::default(), &p).await.unwrap();
    }
    let pdbs: Api<PodDisruptionBudget> = Api::default_namespaced(client.clone());
    pdbs.create(
        &PostParams::default(),
        &obj(
            json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web"},
            "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}}}),
        ),
    )
    .await
    .unwrap();
    let counted = crate::common::eventually_within(T, "the budget counting 3 healthy pods", || async {
        let b = pdbs.get("web").await.ok()?;
        let st = b.status?;
        (st.current_healthy == Some(3) && st.disruptions_allowed == Some(1)).then_some(st)
    })
    .await;
    assert_eq!(counted.expected_pods, Some(3));
    assert_eq!(counted.desired_healthy, Some(2));
    assert_eq!(counted.conditions.unwrap()[0].reason, "SufficientPods");
    let (code, _) = evict(&c, "web-0").await;
    assert_eq!(code, 201);
    let (code, status) = evict(&c, "web-1").await;
    assert_eq!(code, 429, "{status}");
    assert_eq!(
        status["message"],
        "Cannot evict pod as it would violate the pod's disruption budget."
    );
    assert_eq!(status["details"]["causes"][0]["reason"], "DisruptionBudget");
    // The budget is raised: the next eviction goes through.
    let patch = json!({"spec": {"minAvailable": 1}});
    pdbs.patch("web", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    crate::common::eventually_within(T, "the budget allowing one more", || async {
        let b = pdbs.get("web").await.ok()?;
        (b.status?.disruptions_allowed == Some(1)).then_some(())
    })
    .await;
    let (code, status) = evict(&c, "web-1").await;
    assert_eq!(code, 201, "{status}");
    // A second budget over the same pods: upstream's 500.
    pdbs.create(
        &PostParams::default(),
        &obj(
            json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "all"},
            "spec": {"maxUnavailable": 5, "selector": {}}}),
        ),
    )
    .await
    .unwrap();
    let (code, status) = evict(&c, "web-2").await;
    assert_eq!(code, 500);
    assert_eq!(
        status["message"],
        "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
    );
    c.shutdown().await;
}
