//! Informers: one kube-runtime watcher per kind (nodes, pods, PodGroups, CompositePodGroups,
//! PriorityClasses, and what the filters and preemption read: namespaces, PersistentVolumeClaims,
//! PersistentVolumes, StorageClasses, CSINodes, PodDisruptionBudgets, Workloads, DeviceClasses,
//! ResourceSlices, ResourceClaims), merged into one
//! stream of [`InformerEvent`]s that the scheduling loop applies to its snapshot between cycles.
//!
//! Watchers re-list after a desync; a re-list arrives as `InitStart`, `InitApply`... `InitDone`, and
//! objects known before but not listed again are deleted at `InitDone`.

use std::pin::Pin;

use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::{Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::resource::v1::{DeviceClass, ResourceClaim, ResourceSlice};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use kwas_api_types::v1alpha3::{CompositePodGroup, PodGroup, Workload};

/// The kinds the scheduler watches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// Nodes.
    Node,
    /// Pods.
    Pod,
    /// PodGroups.
    PodGroup,
    /// CompositePodGroups.
    CompositePodGroup,
    /// PriorityClasses.
    PriorityClass,
    /// Namespaces (labels, for affinity terms' `namespaceSelector`).
    Namespace,
    /// PersistentVolumeClaims.
    PersistentVolumeClaim,
    /// PersistentVolumes.
    PersistentVolume,
    /// StorageClasses.
    StorageClass,
    /// CSINodes (volume limits).
    CSINode,
    /// PodDisruptionBudgets.
    PodDisruptionBudget,
    /// Workloads (their template trees).
    Workload,
    /// DeviceClasses.
    DeviceClass,
    /// ResourceSlices (devices).
    ResourceSlice,
    /// ResourceClaims.
    ResourceClaim,
}

impl Kind {
    /// Every kind.
    pub const ALL: [Kind; 15] = [
        Kind::Node,
        Kind::Pod,
        Kind::PodGroup,
        Kind::CompositePodGroup,
        Kind::PriorityClass,
        Kind::Namespace,
        Kind::PersistentVolumeClaim,
        Kind::PersistentVolume,
        Kind::StorageClass,
        Kind::CSINode,
        Kind::PodDisruptionBudget,
        Kind::Workload,
        Kind::DeviceClass,
        Kind::ResourceSlice,
        Kind::ResourceClaim,
    ];

    /// The kind's name.
    pub fn as_str(&self) -> &'static str {
        match self {
            Kind::Node => "Node",
            Kind::Pod => "Pod",
            Kind::PodGroup => "PodGroup",
            Kind::CompositePodGroup => "CompositePodGroup",
            Kind::PriorityClass => "PriorityClass",
            Kind::Namespace => "Namespace",
            Kind::PersistentVolumeClaim => "PersistentVolumeClaim",
            Kind::PersistentVolume => "PersistentVolume",
            Kind::StorageClass => "StorageClass",
            Kind::CSINode => "CSINode",
            Kind::PodDisruptionBudget => "PodDisruptionBudget",
            Kind::Workload => "Workload",
            Kind::DeviceClass => "DeviceClass",
            Kind::ResourceSlice => "ResourceSlice",
            Kind::ResourceClaim => "ResourceClaim",
        }
    }
}

/// An object of a watched kind.
#[derive(Debug, Clone)]
pub enum Object {
    /// A node.
    Node(Box<Node>),
    /// A pod.
    Pod(Box<Pod>),
    /// A PodGroup.
    PodGroup(Box<PodGroup>),
    /// A CompositePodGroup.
    CompositePodGroup(Box<CompositePodGroup>),
    /// A PriorityClass.
    PriorityClass(Box<PriorityClass>),
    /// A namespace.
    Namespace(Box<Namespace>),
    /// A PersistentVolumeClaim.
    PersistentVolumeClaim(Box<PersistentVolumeClaim>),
    /// A PersistentVolume.
    PersistentVolume(Box<PersistentVolume>),
    /// A StorageClass.
    StorageClass(Box<StorageClass>),
    /// A CSINode.
    CSINode(Box<CSINode>),
    /// A PodDisruptionBudget.
    PodDisruptionBudget(Box<PodDisruptionBudget>),
    /// A Workload.
    Workload(Box<Workload>),
    /// A DeviceClass.
    DeviceClass(Box<DeviceClass>),
    /// A ResourceSlice.
    ResourceSlice(Box<ResourceSlice>),
    /// A ResourceClaim.
    ResourceClaim(Box<ResourceClaim>),
}

impl Object {
    /// The object's kind.
    pub fn kind(&self) -> Kind {
        match self {
            Object::Node(_) => Kind::Node,
            Object::Pod(_) => Kind::Pod,
            Object::PodGroup(_) => Kind::PodGroup,
            Object::CompositePodGroup(_) => Kind::CompositePodGroup,
            Object::PriorityClass(_) => Kind::PriorityClass,
            Object::Namespace(_) => Kind::Namespace,
            Object::PersistentVolumeClaim(_) => Kind::PersistentVolumeClaim,
            Object::PersistentVolume(_) => Kind::PersistentVolume,
            Object::StorageClass(_) => Kind::StorageClass,
            Object::CSINode(_) => Kind::CSINode,
            Object::PodDisruptionBudget(_) => Kind::PodDisruptionBudget,
            Object::Workload(_) => Kind::Workload,
            Object::DeviceClass(_) => Kind::DeviceClass,
            Object::ResourceSlice(_) => Kind::ResourceSlice,
            Object::ResourceClaim(_) => Kind::ResourceClaim,
        }
    }

    /// `namespace/name` (or `name` for cluster-scoped kinds).
    pub fn key(&self) -> String {
        let meta = match self {
            Object::Node(o) => &o.metadata,
            Object::Pod(o) => &o.metadata,
            Object::PodGroup(o) => &o.metadata,
            Object::CompositePodGroup(o) => &o.metadata,
            Object::PriorityClass(o) => &o.metadata,
            Object::Namespace(o) => &o.metadata,
            Object::PersistentVolumeClaim(o) => &o.metadata,
            Object::PersistentVolume(o) => &o.metadata,
            Object::StorageClass(o) => &o.metadata,
            Object::CSINode(o) => &o.metadata,
            Object::PodDisruptionBudget(o) => &o.metadata,
            Object::Workload(o) => &o.metadata,
            Object::DeviceClass(o) => &o.metadata,
            Object::ResourceSlice(o) => &o.metadata,
            Object::ResourceClaim(o) => &o.metadata,
        };
        let name = meta.name.clone().unwrap_or_default();
        match &meta.namespace {
            Some(ns) => format!("{ns}/{name}"),
            None => name,
        }
    }
}

/// One informer event.
#[derive(Debug, Clone)]
pub enum InformerEvent {
    /// An object was added or changed.
    Apply(Object),
    /// An object was deleted.
    Delete(Object),
    /// A (re-)list of the kind starts.
    InitStart(Kind),
    /// An object of a (re-)list.
    InitApply(Object),
    /// The (re-)list is complete.
    InitDone(Kind),
    /// The watch failed; it is retried with backoff.
    Error(Kind, String),
}

/// The merged informer stream.
pub type InformerStream = Pin<Box<dyn Stream<Item = InformerEvent> + Send>>;

fn informer<K>(api: Api<K>, kind: Kind, wrap: fn(K) -> Object) -> InformerStream
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
    K::DynamicType: Default,
{
    watcher(api, watcher::Config::default())
        .default_backoff()
        .map(move |r| match r {
            Ok(watcher::Event::Apply(o)) => InformerEvent::Apply(wrap(o)),
            Ok(watcher::Event::Delete(o)) => InformerEvent::Delete(wrap(o)),
            Ok(watcher::Event::Init) => InformerEvent::InitStart(kind),
            Ok(watcher::Event::InitApply(o)) => InformerEvent::InitApply(wrap(o)),
            Ok(watcher::Event::InitDone) => InformerEvent::InitDone(kind),
            Err(e) => InformerEvent::Error(kind, e.to_string()),
        })
        .boxed()
}

/// Whether the API server serves `resource.k8s.io/v1` (dynamic resource allocation). A cluster that
/// does not (the API disabled) gets no DRA informers; pods with ResourceClaims then wait with
/// `resourceclaim ... not found`. An error other than "not found" counts as served (the informers
/// retry).
pub async fn dra_served(client: &Client) -> bool {
    match client.list_api_group_resources("resource.k8s.io/v1").await {
        Ok(_) => true,
        Err(kube::Error::Api(s)) if s.code == 404 => false,
        Err(_) => true,
    }
}

/// Whether the API server serves CompositePodGroups (`scheduling.k8s.io/v1alpha3`, the CompositePodGroup
/// feature). A cluster that does not gets no CompositePodGroup informer: the scheduler runs flat gangs
/// (PodGroups without a parent), and a PodGroup naming a parent waits for it as for any parent not yet
/// seen. An error other than "not found" counts as served (the informer retries).
pub async fn composite_served(client: &Client) -> bool {
    match client
        .list_api_group_resources(&format!(
            "scheduling.k8s.io/{}",
            kwas_api_types::names::SCHEDULING_VERSION
        ))
        .await
    {
        Ok(list) => list.resources.iter().any(|r| r.name == "compositepodgroups"),
        Err(kube::Error::Api(s)) if s.code == 404 => false,
        Err(_) => true,
    }
}

/// A stream that reports `kinds` synced and empty, then nothing.
fn absent(kinds: &'static [Kind]) -> InformerStream {
    futures::stream::iter(
        kinds
            .iter()
            .flat_map(|k| [InformerEvent::InitStart(*k), InformerEvent::InitDone(*k)]),
    )
    .chain(futures::stream::pending())
    .boxed()
}

/// Watches every kind the scheduler needs, cluster-wide (the DRA kinds only when `dra`, CompositePodGroups
/// only when `composite`).
pub fn informers(client: &Client, dra: bool, composite: bool) -> InformerStream {
    let composite_stream = if composite {
        informer(
            Api::<CompositePodGroup>::all(client.clone()),
            Kind::CompositePodGroup,
            |o| Object::CompositePodGroup(Box::new(o)),
        )
    } else {
        absent(&[Kind::CompositePodGroup])
    };
    let mut streams = vec![
        informer(Api::<Node>::all(client.clone()), Kind::Node, |o| {
            Object::Node(Box::new(o))
        }),
        informer(Api::<PriorityClass>::all(client.clone()), Kind::PriorityClass, |o| {
            Object::PriorityClass(Box::new(o))
        }),
        composite_stream,
        informer(Api::<PodGroup>::all(client.clone()), Kind::PodGroup, |o| {
            Object::PodGroup(Box::new(o))
        }),
        informer(Api::<Pod>::all(client.clone()), Kind::Pod, |o| Object::Pod(Box::new(o))),
        informer(Api::<Namespace>::all(client.clone()), Kind::Namespace, |o| {
            Object::Namespace(Box::new(o))
        }),
        informer(
            Api::<PersistentVolumeClaim>::all(client.clone()),
            Kind::PersistentVolumeClaim,
            |o| Object::PersistentVolumeClaim(Box::new(o)),
        ),
        informer(
            Api::<PersistentVolume>::all(client.clone()),
            Kind::PersistentVolume,
            |o| Object::PersistentVolume(Box::new(o)),
        ),
        informer(Api::<StorageClass>::all(client.clone()), Kind::StorageClass, |o| {
            Object::StorageClass(Box::new(o))
        }),
        informer(Api::<CSINode>::all(client.clone()), Kind::CSINode, |o| {
            Object::CSINode(Box::new(o))
        }),
        informer(
            Api::<PodDisruptionBudget>::all(client.clone()),
            Kind::PodDisruptionBudget,
            |o| Object::PodDisruptionBudget(Box::new(o)),
        ),
        informer(Api::<Workload>::all(client.clone()), Kind::Workload, |o| {
            Object::Workload(Box::new(o))
        }),
    ];
    if dra {
        streams.push(informer(
            Api::<DeviceClass>::all(client.clone()),
            Kind::DeviceClass,
            |o| Object::DeviceClass(Box::new(o)),
        ));
        streams.push(informer(
            Api::<ResourceSlice>::all(client.clone()),
            Kind::ResourceSlice,
            |o| Object::ResourceSlice(Box::new(o)),
        ));
        streams.push(informer(
            Api::<ResourceClaim>::all(client.clone()),
            Kind::ResourceClaim,
            |o| Object::ResourceClaim(Box::new(o)),
        ));
    } else {
        streams.push(absent(&[Kind::DeviceClass, Kind::ResourceSlice, Kind::ResourceClaim]));
    }
    futures::stream::select_all(streams).boxed()
}
