//! Taking a snapshot of a cluster: every object of the kinds the informers watch, listed page by page,
//! without `managedFields` (and without the `kubectl.kubernetes.io/last-applied-configuration`
//! annotation, a copy of the object itself).
//!
//! The lists are not one consistent cut of the cluster (no API offers that across kinds): an object
//! changing while the snapshot is taken may show its state before or after the change.

use k8s_openapi::api::core::v1::{Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::resource::v1::{DeviceClass, ResourceClaim, ResourceSlice};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use kube::api::ListParams;
use kube::{Api, Client};
use kwas_api_types::v1alpha3::{CompositePodGroup, PodGroup, Workload};

use super::file::{SchedulingSnapshot, SnapshotMetadata};
use crate::runtime::informers::{Kind, Object, composite_served, dra_served};

/// Objects per list request.
const PAGE: u32 = 500;
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// A list that failed.
#[derive(Debug, thiserror::Error)]
#[error("listing {kind}s: {source}")]
pub struct TakeError {
    /// The kind.
    pub kind: &'static str,
    /// Why.
    #[source]
    pub source: kube::Error,
}

async fn list_all<K>(client: &Client, kind: Kind, wrap: fn(K) -> Object, out: &mut Vec<Object>) -> Result<(), TakeError>
where
    K: kube::Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let api: Api<K> = Api::all(client.clone());
    let mut params = ListParams::default().limit(PAGE);
    loop {
        let list = api.list(&params).await.map_err(|source| TakeError {
            kind: kind.as_str(),
            source,
        })?;
        for mut o in list.items {
            o.meta_mut().managed_fields = None;
            let meta = o.meta_mut();
            if let Some(a) = meta.annotations.as_mut() {
                a.remove(LAST_APPLIED);
                if a.is_empty() {
                    meta.annotations = None;
                }
            }
            out.push(wrap(o));
        }
        match list.metadata.continue_ {
            Some(token) if !token.is_empty() => params = params.continue_token(&token),
            _ => break,
        }
    }
    Ok(())
}

/// Lists the scheduling inputs of the cluster `client` talks to. `scheduler_names` are recorded as the
/// names its kwas scheduler answers for (the replay's default). The DRA kinds are left out, and named
/// in [`SnapshotMetadata::absent_kinds`], when the API server does not serve `resource.k8s.io/v1`, as
/// the scheduler leaves them out; so are CompositePodGroups where they are not served. Workloads and
/// PodGroups are read in the version `client` speaks (a [`kwas_api_types::versioned`] client reads the
/// served one).
pub async fn take(client: &Client, scheduler_names: Vec<String>) -> Result<SchedulingSnapshot, TakeError> {
    let server_version = client.apiserver_version().await.ok().map(|v| v.git_version);
    let dra = dra_served(client).await;
    let composite = composite_served(client).await;
    let mut objects = Vec::new();
    let mut absent_kinds = Vec::new();
    for kind in Kind::ALL {
        let o = &mut objects;
        match kind {
            Kind::Node => list_all::<Node>(client, kind, |x| Object::Node(Box::new(x)), o).await?,
            Kind::Pod => list_all::<Pod>(client, kind, |x| Object::Pod(Box::new(x)), o).await?,
            Kind::PodGroup => list_all::<PodGroup>(client, kind, |x| Object::PodGroup(Box::new(x)), o).await?,
            Kind::CompositePodGroup if !composite => absent_kinds.push(kind.as_str().to_string()),
            Kind::CompositePodGroup => {
                list_all::<CompositePodGroup>(client, kind, |x| Object::CompositePodGroup(Box::new(x)), o).await?
            }
            Kind::PriorityClass => {
                list_all::<PriorityClass>(client, kind, |x| Object::PriorityClass(Box::new(x)), o).await?
            }
            Kind::Namespace => list_all::<Namespace>(client, kind, |x| Object::Namespace(Box::new(x)), o).await?,
            Kind::PersistentVolumeClaim => {
                list_all::<PersistentVolumeClaim>(client, kind, |x| Object::PersistentVolumeClaim(Box::new(x)), o)
                    .await?
            }
            Kind::PersistentVolume => {
                list_all::<PersistentVolume>(client, kind, |x| Object::PersistentVolume(Box::new(x)), o).await?
            }
            Kind::StorageClass => {
                list_all::<StorageClass>(client, kind, |x| Object::StorageClass(Box::new(x)), o).await?
            }
            Kind::CSINode => list_all::<CSINode>(client, kind, |x| Object::CSINode(Box::new(x)), o).await?,
            Kind::PodDisruptionBudget => {
                list_all::<PodDisruptionBudget>(client, kind, |x| Object::PodDisruptionBudget(Box::new(x)), o).await?
            }
            Kind::Workload => list_all::<Workload>(client, kind, |x| Object::Workload(Box::new(x)), o).await?,
            Kind::DeviceClass | Kind::ResourceSlice | Kind::ResourceClaim if !dra => {
                absent_kinds.push(kind.as_str().to_string());
            }
            Kind::DeviceClass => list_all::<DeviceClass>(client, kind, |x| Object::DeviceClass(Box::new(x)), o).await?,
            Kind::ResourceSlice => {
                list_all::<ResourceSlice>(client, kind, |x| Object::ResourceSlice(Box::new(x)), o).await?
            }
            Kind::ResourceClaim => {
                list_all::<ResourceClaim>(client, kind, |x| Object::ResourceClaim(Box::new(x)), o).await?
            }
        }
    }
    let taken_at = k8s_openapi::jiff::Timestamp::now()
        .round(k8s_openapi::jiff::Unit::Second)
        .ok();
    Ok(SchedulingSnapshot {
        metadata: SnapshotMetadata {
            taken_at: taken_at.map(|t| t.to_string()),
            server_version,
            scheduler_names,
            absent_kinds,
        },
        objects,
    })
}
