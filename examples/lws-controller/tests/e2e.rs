//! The example controller end to end on the embedded cluster, with the kwas scheduler placing its pods: a
//! LeaderWorkerSet of 2 groups of 1 leader + 3 workers, a gang per group; both groups are placed; a deleted
//! worker pod is replaced and placed again. Every wait polls and, on timeout, reports what it saw last.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::scheduling::v1alpha3::{CompositePodGroup, PodGroup};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::{Client, CustomResourceExt, ResourceExt};
use kwas_stack::{Stack, StackConfig};
use lws_controller::{LeaderWorkerSet, SET_LABEL};
use serde_json::json;

use kwas_test_tools::wait::eventually;

async fn install_crd(client: &Client) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &LeaderWorkerSet::crd())
        .await
        .unwrap();
    let sets: Api<LeaderWorkerSet> = Api::namespaced(client.clone(), "default");
    eventually("the LeaderWorkerSet resource to be served", || async {
        sets.list(&ListParams::default())
            .await
            .map(drop)
            .map_err(|e| e.to_string())
    })
    .await;
}

/// The set's pods: (name, uid, node) sorted by name.
async fn pods(client: &Client) -> Vec<(String, String, Option<String>)> {
    let api: Api<Pod> = Api::namespaced(client.clone(), "default");
    let listed = api
        .list(&ListParams::default().labels(&format!("{SET_LABEL}=serve")))
        .await
        .unwrap();
    let mut out: Vec<_> = listed
        .items
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .map(|p| {
            (
                p.name_any(),
                p.uid().unwrap_or_default(),
                p.spec.as_ref().and_then(|s| s.node_name.clone()),
            )
        })
        .collect();
    out.sort();
    out
}

/// Wait until all 8 pods exist and are bound to nodes; returns them.
async fn all_placed(client: &Client) -> Vec<(String, String, Option<String>)> {
    eventually("8 pods of the set bound to nodes", || async {
        let pods = pods(client).await;
        match pods.len() == 8 && pods.iter().all(|(_, _, node)| node.is_some()) {
            true => Ok(pods),
            false => Err(format!("{pods:?}")),
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_gangs_of_a_leader_and_three_workers_are_placed_and_a_deleted_worker_is_replaced() {
    let stack = Stack::start(StackConfig::default()).await.unwrap();
    stack.ready().await.unwrap();
    let client = stack.client();
    install_crd(&client).await;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let controller = tokio::spawn(lws_controller::controller::run(client.clone(), async move {
        let _ = stopped.await;
    }));

    let template = json!({"spec": {"containers": [{"name": "c", "image": "vllm"}]}});
    let set: LeaderWorkerSet = serde_json::from_value(json!({
        "apiVersion": "examples.kwas.dev/v1alpha1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "serve", "namespace": "default"},
        "spec": {"replicas": 2, "size": 4, "leaderTemplate": template, "workerTemplate": template}
    }))
    .unwrap();
    let sets: Api<LeaderWorkerSet> = Api::namespaced(client.clone(), "default");
    sets.create(&PostParams::default(), &set).await.unwrap();

    // Both groups placed: every pod bound by the scheduler, under its group's gang.
    let placed = all_placed(&client).await;
    let groups: Api<PodGroup> = Api::namespaced(client.clone(), "default");
    for (name, gang) in [
        ("serve-0-leader", 1),
        ("serve-0-workers", 3),
        ("serve-1-leader", 1),
        ("serve-1-workers", 3),
    ] {
        let g = groups.get(name).await.unwrap();
        assert_eq!(
            g.spec.scheduling_policy.gang.as_ref().map(|g| g.min_count),
            Some(gang),
            "{name}"
        );
    }
    let replicas: Api<CompositePodGroup> = Api::namespaced(client.clone(), "default");
    for name in ["serve-0", "serve-1"] {
        let g = replicas.get(name).await.unwrap();
        assert_eq!(
            g.spec.scheduling_policy.gang.as_ref().map(|g| g.min_group_count),
            Some(2),
            "{name}"
        );
        assert_eq!(g.spec.parent_composite_pod_group_name.as_deref(), Some("serve-root"));
    }

    // One group's worker pod deleted: the controller creates it again and the scheduler places it.
    let (victim, old_uid, _) = placed.iter().find(|(n, _, _)| n == "serve-1-2").cloned().unwrap();
    let pod_api: Api<Pod> = Api::namespaced(client.clone(), "default");
    pod_api.delete(&victim, &DeleteParams::default()).await.unwrap();
    let replaced = eventually("serve-1-2 replaced by a new pod bound to a node", || async {
        let pods = pods(&client).await;
        let new = pods
            .iter()
            .find(|(n, uid, node)| n == &victim && uid != &old_uid && node.is_some());
        new.cloned().ok_or_else(|| format!("{pods:?}"))
    })
    .await;
    assert!(replaced.2.is_some());

    let _ = stop.send(());
    let _ = controller.await;
    stack.shutdown().await;
}
