//! The volume plugins, over the PersistentVolumeClaims a pod mounts (`persistentVolumeClaim` volumes,
//! and generic ephemeral volumes' claims `<pod>-<volume>`):
//!
//! - `VolumeBinding` (pre-filter and filter): a missing or deleting claim, or an unbound claim of an
//!   `Immediate` class, makes the pod `UnschedulableAndUnresolvable` (`pod has unbound immediate
//!   PersistentVolumeClaims`); a bound claim's PersistentVolume must admit the node by its node affinity
//!   (`node(s) had volume node affinity conflict`); an unbound `WaitForFirstConsumer` claim needs an
//!   available PersistentVolume of its class that fits it and admits the node, or a class that can
//!   provision there (a provisioner other than `kubernetes.io/no-provisioner`, `allowedTopologies`
//!   matching the node): else `node(s) didn't find available persistent volumes to bind`. After the
//!   node is chosen the runtime binds such claims before the pod (`prebind`): a chosen static volume
//!   is pre-bound (its `claimRef`), otherwise the claim gets `volume.kubernetes.io/selected-node` so the
//!   provisioner creates the volume there.
//! - `VolumeZone` (filter): a bound volume's zone and region labels must match the node's.
//! - `NodeVolumeLimits` (filter): where a CSINode reports `allocatable.count` for a driver, the distinct
//!   claims of that driver on the node plus the pod's new ones must stay within it
//!   (`node(s) exceed max volume count`).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use k8s_openapi::api::core::v1::{NodeSelector, PodSpec, TopologySelectorTerm};

use crate::core::framework::{ClaimReservation, NodeView, Reject};

/// The annotation the scheduler sets on a `WaitForFirstConsumer` claim for its provisioner.
pub const SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
/// The provisioner name of classes that never provision.
pub const NO_PROVISIONER: &str = "kubernetes.io/no-provisioner";
/// Volume labels `VolumeZone` compares with the node's.
pub(crate) const ZONE_LABELS: [&str; 4] = [
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
];

/// Node-selector terms (ORed) of expressions (ANDed) over node labels: a volume's node affinity or a
/// class' `allowedTopologies`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct NodeTerms(Vec<Vec<(String, String, BTreeSet<String>)>>);

impl NodeTerms {
    pub(crate) fn from_selector(sel: &NodeSelector) -> Self {
        NodeTerms(
            sel.node_selector_terms
                .iter()
                .map(|t| {
                    let mut exprs: Vec<_> = t
                        .match_expressions
                        .iter()
                        .flatten()
                        .map(|e| {
                            (
                                e.key.clone(),
                                e.operator.clone(),
                                e.values.iter().flatten().cloned().collect(),
                            )
                        })
                        .collect();
                    exprs.extend(t.match_fields.iter().flatten().map(|e| {
                        (
                            format!("field:{}", e.key),
                            e.operator.clone(),
                            e.values.iter().flatten().cloned().collect(),
                        )
                    }));
                    exprs
                })
                .collect(),
        )
    }

    pub(crate) fn from_topology(terms: &[TopologySelectorTerm]) -> Self {
        NodeTerms(
            terms
                .iter()
                .map(|t| {
                    t.match_label_expressions
                        .iter()
                        .flatten()
                        .map(|e| (e.key.clone(), "In".to_string(), e.values.iter().cloned().collect()))
                        .collect()
                })
                .collect(),
        )
    }

    pub(crate) fn matches(&self, node: &NodeView<'_>) -> bool {
        self.0.iter().any(|term| {
            !term.is_empty()
                && term.iter().all(|(key, op, values)| {
                    let v = if key == "field:metadata.name" {
                        Some(node.name)
                    } else {
                        node.labels.get(key).map(String::as_str)
                    };
                    match op.as_str() {
                        "In" => v.is_some_and(|v| values.contains(v)),
                        "NotIn" => v.is_none_or(|v| !values.contains(v)),
                        "Exists" => v.is_some(),
                        "DoesNotExist" => v.is_none(),
                        "Gt" | "Lt" => {
                            let (Some(v), Some(bound)) = (
                                v.and_then(|v| v.parse::<i64>().ok()),
                                values.iter().next().and_then(|b| b.parse::<i64>().ok()),
                            ) else {
                                return false;
                            };
                            if op == "Gt" { v > bound } else { v < bound }
                        }
                        _ => false,
                    }
                })
        })
    }
}

/// A PersistentVolumeClaim, as far as scheduling needs it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct ClaimInfo {
    pub storage_class: Option<String>,
    pub volume_name: Option<String>,
    pub bound: bool,
    pub request: i64,
    pub access_modes: Vec<String>,
    pub selected_node: Option<String>,
    pub deleting: bool,
}

/// A PersistentVolume.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct VolumeInfo {
    pub storage_class: Option<String>,
    pub capacity: i64,
    pub access_modes: Vec<String>,
    pub available: bool,
    pub claim_ref: Option<(String, String)>,
    pub node_affinity: Option<NodeTerms>,
    pub zone_labels: BTreeMap<String, String>,
    pub csi_driver: Option<String>,
}

/// The storage objects and namespace labels of the cluster.
#[derive(Debug, Default)]
pub(crate) struct Storage {
    pub claims: HashMap<(String, String), ClaimInfo>,
    pub volumes: HashMap<String, VolumeInfo>,
    pub classes: HashMap<String, ClassInfo>,
    /// Node name -> CSI driver -> volume limit (`None`: no limit reported).
    pub csi_limits: HashMap<String, HashMap<String, Option<i64>>>,
    pub namespaces: HashMap<String, BTreeMap<String, String>>,
}

/// A StorageClass.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct ClassInfo {
    pub provisioner: String,
    pub wait_for_consumer: bool,
    pub allowed_topologies: Option<NodeTerms>,
}

/// The claims a pod mounts, by name.
pub(crate) fn claims_of(spec: &PodSpec, pod_name: &str) -> Vec<String> {
    let mut out = Vec::new();
    for v in spec.volumes.iter().flatten() {
        if let Some(c) = v.persistent_volume_claim.as_ref() {
            out.push(c.claim_name.clone());
        } else if v.ephemeral.is_some() {
            out.push(format!("{pod_name}-{}", v.name));
        }
    }
    out.sort();
    out.dedup();
    out
}

/// A claim resolved against the cluster's storage.
#[derive(Debug, Clone)]
pub(crate) enum Resolved {
    /// Bound to this volume.
    Bound { claim: String, volume: String },
    /// Waiting for its first consumer.
    Waiting { claim: String },
}

/// The pod-level check (upstream's PreFilter): `Err` is an `UnschedulableAndUnresolvable` message.
pub(crate) fn prefilter(storage: &Storage, namespace: &str, claims: &[String]) -> Result<Vec<Resolved>, String> {
    let mut out = Vec::new();
    let mut immediate = false;
    for name in claims {
        let Some(c) = storage.claims.get(&(namespace.to_string(), name.clone())) else {
            return Err(format!("persistentvolumeclaim \"{name}\" not found"));
        };
        if c.deleting {
            return Err(format!("persistentvolumeclaim \"{name}\" is being deleted"));
        }
        match (&c.volume_name, c.bound) {
            (Some(v), true) => {
                if !storage.volumes.contains_key(v) {
                    return Err(format!("persistentvolume \"{v}\" not found"));
                }
                out.push(Resolved::Bound {
                    claim: name.clone(),
                    volume: v.clone(),
                });
            }
            _ => {
                let class = c.storage_class.as_ref().and_then(|s| storage.classes.get(s));
                match class {
                    Some(class) if class.wait_for_consumer => out.push(Resolved::Waiting { claim: name.clone() }),
                    _ => immediate = true,
                }
            }
        }
    }
    if immediate {
        return Err("pod has unbound immediate PersistentVolumeClaims".to_string());
    }
    Ok(out)
}

/// An available volume that fits `claim` and admits `node`, smallest first.
pub(crate) fn static_candidate<'s>(storage: &'s Storage, claim: &ClaimInfo, node: &NodeView<'_>) -> Option<&'s str> {
    let mut best: Option<(&str, i64)> = None;
    for (name, v) in &storage.volumes {
        let fits = v.available
            && v.storage_class == claim.storage_class
            && v.capacity >= claim.request
            && claim.access_modes.iter().all(|m| v.access_modes.contains(m))
            && v.node_affinity.as_ref().is_none_or(|a| a.matches(node));
        if fits && best.is_none_or(|(b, cap)| (v.capacity, name.as_str()) < (cap, b)) {
            best = Some((name.as_str(), v.capacity));
        }
    }
    best.map(|(n, _)| n)
}

fn can_provision(class: &ClassInfo, node: &NodeView<'_>) -> bool {
    class.provisioner != NO_PROVISIONER && class.allowed_topologies.as_ref().is_none_or(|t| t.matches(node))
}

/// The per-node check. `on_node`: driver -> claims of that driver already on the node.
pub(crate) fn filter(
    storage: &Storage,
    namespace: &str,
    resolved: &[Resolved],
    node: &NodeView<'_>,
    on_node: &HashMap<String, BTreeSet<(String, String)>>,
) -> Result<(), Reject> {
    let mut new_per_driver: HashMap<String, usize> = HashMap::new();
    // VolumeBinding.
    for r in resolved {
        match r {
            Resolved::Bound { volume, .. } => {
                let Some(v) = storage.volumes.get(volume) else { continue };
                if v.node_affinity.as_ref().is_some_and(|a| !a.matches(node)) {
                    return Err(Reject::VolumeNodeAffinity);
                }
            }
            Resolved::Waiting { claim } => {
                let Some(c) = storage.claims.get(&(namespace.to_string(), claim.clone())) else {
                    continue;
                };
                let class = c.storage_class.as_ref().and_then(|s| storage.classes.get(s));
                let ok = static_candidate(storage, c, node).is_some() || class.is_some_and(|k| can_provision(k, node));
                if !ok {
                    return Err(Reject::VolumeBind);
                }
            }
        }
    }
    // VolumeZone.
    for r in resolved {
        if let Resolved::Bound { volume, .. } = r
            && let Some(v) = storage.volumes.get(volume)
        {
            for (k, val) in &v.zone_labels {
                // A volume label may list several zones separated by "__" (upstream's LabelMultiZoneDelimiter).
                let ok = node.labels.get(k).is_some_and(|nv| val.split("__").any(|z| z == nv));
                if !ok {
                    return Err(Reject::VolumeZone);
                }
            }
        }
    }
    // NodeVolumeLimits.
    let limits = storage.csi_limits.get(node.name);
    if let Some(limits) = limits {
        for r in resolved {
            let (claim, driver) = match r {
                Resolved::Bound { claim, volume } => {
                    (claim, storage.volumes.get(volume).and_then(|v| v.csi_driver.clone()))
                }
                Resolved::Waiting { claim } => (
                    claim,
                    storage
                        .claims
                        .get(&(namespace.to_string(), claim.clone()))
                        .and_then(|c| c.storage_class.as_ref())
                        .and_then(|s| storage.classes.get(s))
                        .map(|k| k.provisioner.clone()),
                ),
            };
            let Some(driver) = driver else { continue };
            let already = on_node
                .get(&driver)
                .is_some_and(|s| s.contains(&(namespace.to_string(), claim.clone())));
            if !already {
                *new_per_driver.entry(driver).or_default() += 1;
            }
        }
        for (driver, new) in new_per_driver {
            if let Some(Some(limit)) = limits.get(&driver) {
                let used = on_node.get(&driver).map_or(0, BTreeSet::len);
                if i64::try_from(used + new).unwrap_or(i64::MAX) > *limit {
                    return Err(Reject::VolumeLimit);
                }
            }
        }
    }
    Ok(())
}

/// What the runtime does for a pod's waiting claims once its node is chosen, before binding the pod.
#[derive(Debug, Clone, PartialEq)]
pub enum ClaimAction {
    /// Pre-bind this available PersistentVolume to the claim (its `spec.claimRef`).
    BindVolume {
        /// The claim's namespace.
        namespace: String,
        /// The claim.
        claim: String,
        /// The volume.
        volume: String,
    },
    /// Annotate the claim with `volume.kubernetes.io/selected-node` so its provisioner creates the volume
    /// on the node.
    SelectNode {
        /// The claim's namespace.
        namespace: String,
        /// The claim.
        claim: String,
        /// The node.
        node: String,
    },
    /// Write a ResourceClaim's allocation (if the cycle made it) and reserve it for the pod or its
    /// PodGroup (upstream's DynamicResources PreBind).
    ReserveDevices(Box<ClaimReservation>),
}

/// The claim actions for a pod's waiting claims on `node` (upstream's VolumeBinding PreBind).
pub(crate) fn prebind(storage: &Storage, namespace: &str, claims: &[String], node: &NodeView<'_>) -> Vec<ClaimAction> {
    let mut out = Vec::new();
    let mut taken: BTreeSet<&str> = BTreeSet::new();
    for name in claims {
        let Some(c) = storage.claims.get(&(namespace.to_string(), name.clone())) else {
            continue;
        };
        if c.bound || c.volume_name.is_some() || c.selected_node.as_deref() == Some(node.name) {
            continue;
        }
        let class = c.storage_class.as_ref().and_then(|s| storage.classes.get(s));
        if !class.is_some_and(|k| k.wait_for_consumer) {
            continue;
        }
        let volume = static_candidate(storage, c, node).filter(|v| !taken.contains(v));
        match volume {
            Some(v) => {
                taken.insert(v);
                out.push(ClaimAction::BindVolume {
                    namespace: namespace.to_string(),
                    claim: name.clone(),
                    volume: v.to_string(),
                });
            }
            None => out.push(ClaimAction::SelectNode {
                namespace: namespace.to_string(),
                claim: name.clone(),
                node: node.name.to_string(),
            }),
        }
    }
    out
}
