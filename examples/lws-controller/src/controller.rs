//! The reconcile loop: create what [`desired`] lists that does not exist yet, in order
//! (Workload, root group, then per replica its group, PodGroups and pods), remove the objects of replicas
//! beyond `spec.replicas`, and report ready replicas.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::scheduling::v1alpha3::{CompositePodGroup, PodGroup, Workload};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{Client, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;
use tracing::warn;

use crate::{LeaderWorkerSet, REPLICA_LABEL, SET_LABEL, desired};

/// Errors of a reconcile (retried).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An API call failed.
    #[error("kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    /// The LeaderWorkerSet's scheduling intent is invalid.
    #[error("invalid LeaderWorkerSet: {0}")]
    Invalid(#[from] workloadbuilder::FieldErrors),
}

async fn ensure<K>(client: &Client, obj: &K) -> Result<(), Error>
where
    K: Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + Serialize
        + std::fmt::Debug,
{
    let api: Api<K> = Api::namespaced(client.clone(), &obj.namespace().unwrap_or_default());
    match api.create(&PostParams::default(), obj).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

async fn remove_extra<K>(client: &Client, lws: &LeaderWorkerSet, replicas: i32) -> Result<(), Error>
where
    K: Resource<DynamicType = (), Scope = NamespaceResourceScope> + Clone + DeserializeOwned + std::fmt::Debug,
{
    let api: Api<K> = Api::namespaced(client.clone(), &lws.namespace().unwrap_or_default());
    let selector = format!("{SET_LABEL}={},{REPLICA_LABEL}", lws.name_any());
    for obj in api.list(&ListParams::default().labels(&selector)).await?.items {
        let index: i32 = obj
            .labels()
            .get(REPLICA_LABEL)
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        if index >= replicas {
            match api.delete(&obj.name_any(), &DeleteParams::background()).await {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
    Ok(())
}

/// Reconcile one LeaderWorkerSet.
pub async fn reconcile(lws: Arc<LeaderWorkerSet>, client: Arc<Client>) -> Result<Action, Error> {
    if lws.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let want = desired(&lws)?;
    ensure(&client, &want.workload).await?;
    ensure(&client, &want.root).await?;
    for r in &want.replicas {
        ensure(&client, &r.group).await?;
        ensure(&client, &r.leader).await?;
        if let Some(w) = &r.workers {
            ensure(&client, w).await?;
        }
        for p in &r.pods {
            ensure(&client, p).await?;
        }
    }
    remove_extra::<Pod>(&client, &lws, lws.spec.replicas).await?;
    remove_extra::<PodGroup>(&client, &lws, lws.spec.replicas).await?;
    remove_extra::<CompositePodGroup>(&client, &lws, lws.spec.replicas).await?;

    let pods: Api<Pod> = Api::namespaced((*client).clone(), &lws.namespace().unwrap_or_default());
    let listed = pods
        .list(&ListParams::default().labels(&format!("{SET_LABEL}={}", lws.name_any())))
        .await?;
    let running = |p: &Pod| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running");
    let ready = want
        .replicas
        .iter()
        .filter(|r| {
            r.pods.iter().all(|want| {
                listed
                    .items
                    .iter()
                    .any(|p| p.name_any() == want.name_any() && running(p))
            })
        })
        .count();
    let status = json!({"status": {"readyReplicas": ready, "workloadName": want.workload.name_any()}});
    let api: Api<LeaderWorkerSet> = Api::namespaced((*client).clone(), &lws.namespace().unwrap_or_default());
    api.patch_status(&lws.name_any(), &PatchParams::default(), &Patch::Merge(&status))
        .await?;
    Ok(Action::requeue(Duration::from_secs(10)))
}

fn error_policy(_lws: Arc<LeaderWorkerSet>, error: &Error, _client: Arc<Client>) -> Action {
    warn!(%error, "retrying LeaderWorkerSet");
    Action::requeue(Duration::from_secs(5))
}

/// Run the controller until `shutdown` resolves.
pub async fn run(client: Client, shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static) {
    let cfg = || watcher::Config::default().labels(SET_LABEL);
    Controller::new(Api::<LeaderWorkerSet>::all(client.clone()), watcher::Config::default())
        .owns(Api::<Pod>::all(client.clone()), cfg())
        .owns(Api::<PodGroup>::all(client.clone()), cfg())
        .owns(Api::<CompositePodGroup>::all(client.clone()), cfg())
        .owns(Api::<Workload>::all(client.clone()), cfg())
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy, Arc::new(client))
        .for_each(|r| async move {
            if let Err(e) = r {
                warn!(error = %e, "LeaderWorkerSet reconcile");
            }
        })
        .await;
}
