//! Storage the volume plugins read: PersistentVolumeClaims, PersistentVolumes, StorageClasses and
//! CSINodes (per-driver volume limits), and namespaces (their labels, for affinity terms'
//! `namespaceSelector`).

use std::collections::HashMap;

use k8s_openapi::api::core::v1::{Namespace, PersistentVolume, PersistentVolumeClaim};
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};

use super::Snapshot;
use crate::core::filters::volumes::{ClaimInfo, ClassInfo, NodeTerms, VolumeInfo};

fn quantity_bytes(q: Option<&k8s_openapi::apimachinery::pkg::api::resource::Quantity>) -> i64 {
    q.and_then(|q| kwas_api_types::quantity::parse_units(&q.0).ok())
        .unwrap_or(0)
}

impl Snapshot {
    /// Adds or updates a PersistentVolumeClaim.
    pub fn upsert_persistent_volume_claim(&mut self, pvc: &PersistentVolumeClaim) {
        let ns = pvc.metadata.namespace.clone().unwrap_or_else(|| "default".into());
        let name = pvc.metadata.name.clone().unwrap_or_default();
        let spec = pvc.spec.as_ref();
        let info = ClaimInfo {
            storage_class: spec
                .and_then(|s| s.storage_class_name.clone())
                .filter(|s| !s.is_empty()),
            volume_name: spec.and_then(|s| s.volume_name.clone()).filter(|s| !s.is_empty()),
            bound: pvc.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound"),
            request: quantity_bytes(
                spec.and_then(|s| s.resources.as_ref())
                    .and_then(|r| r.requests.as_ref())
                    .and_then(|r| r.get("storage")),
            ),
            access_modes: spec.and_then(|s| s.access_modes.clone()).unwrap_or_default(),
            selected_node: pvc
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(crate::core::filters::volumes::SELECTED_NODE))
                .cloned(),
            deleting: pvc.metadata.deletion_timestamp.is_some(),
        };
        self.storage.claims.insert((ns, name), info);
    }

    /// Removes a PersistentVolumeClaim.
    pub fn remove_persistent_volume_claim(&mut self, namespace: &str, name: &str) {
        self.storage.claims.remove(&(namespace.to_string(), name.to_string()));
    }

    /// Adds or updates a PersistentVolume.
    pub fn upsert_persistent_volume(&mut self, pv: &PersistentVolume) {
        let name = pv.metadata.name.clone().unwrap_or_default();
        let spec = pv.spec.as_ref();
        let labels = pv.metadata.labels.clone().unwrap_or_default();
        let zone_labels = labels
            .into_iter()
            .filter(|(k, _)| crate::core::filters::volumes::ZONE_LABELS.contains(&k.as_str()))
            .collect();
        let info = VolumeInfo {
            storage_class: spec
                .and_then(|s| s.storage_class_name.clone())
                .filter(|s| !s.is_empty()),
            capacity: quantity_bytes(spec.and_then(|s| s.capacity.as_ref()).and_then(|c| c.get("storage"))),
            access_modes: spec.and_then(|s| s.access_modes.clone()).unwrap_or_default(),
            available: pv.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Available")
                && spec.and_then(|s| s.claim_ref.as_ref()).is_none(),
            claim_ref: spec.and_then(|s| s.claim_ref.as_ref()).map(|r| {
                (
                    r.namespace.clone().unwrap_or_default(),
                    r.name.clone().unwrap_or_default(),
                )
            }),
            node_affinity: spec
                .and_then(|s| s.node_affinity.as_ref())
                .and_then(|a| a.required.as_ref())
                .map(NodeTerms::from_selector),
            zone_labels,
            csi_driver: spec.and_then(|s| s.csi.as_ref()).map(|c| c.driver.clone()),
        };
        self.storage.volumes.insert(name, info);
    }

    /// Removes a PersistentVolume.
    pub fn remove_persistent_volume(&mut self, name: &str) {
        self.storage.volumes.remove(name);
    }

    /// Adds or updates a StorageClass.
    pub fn upsert_storage_class(&mut self, sc: &StorageClass) {
        let name = sc.metadata.name.clone().unwrap_or_default();
        let info = ClassInfo {
            provisioner: sc.provisioner.clone(),
            wait_for_consumer: sc.volume_binding_mode.as_deref() == Some("WaitForFirstConsumer"),
            allowed_topologies: sc
                .allowed_topologies
                .as_ref()
                .map(|terms| NodeTerms::from_topology(terms)),
        };
        self.storage.classes.insert(name, info);
    }

    /// Removes a StorageClass.
    pub fn remove_storage_class(&mut self, name: &str) {
        self.storage.classes.remove(name);
    }

    /// Adds or updates a CSINode (its drivers' volume limits).
    pub fn upsert_csi_node(&mut self, csi: &CSINode) {
        let name = csi.metadata.name.clone().unwrap_or_default();
        let drivers = csi
            .spec
            .drivers
            .iter()
            .map(|d| {
                (
                    d.name.clone(),
                    d.allocatable.as_ref().and_then(|a| a.count).map(i64::from),
                )
            })
            .collect();
        self.storage.csi_limits.insert(name, drivers);
    }

    /// Removes a CSINode.
    pub fn remove_csi_node(&mut self, name: &str) {
        self.storage.csi_limits.remove(name);
    }

    /// What to do for a pod's `WaitForFirstConsumer` claims before binding it to `node` (upstream's
    /// VolumeBinding PreBind): pre-bind a fitting available volume, or select the node for the
    /// provisioner. Empty when the pod has none.
    pub fn volume_prebind(
        &self,
        pod: &crate::core::model::PodKey,
        node: &str,
    ) -> Vec<crate::core::filters::volumes::ClaimAction> {
        let (Some(pid), Some(nid)) = (self.pod_id(pod), self.node_id(node)) else {
            return Vec::new();
        };
        let p = self.pod(pid);
        let Some(d) = p.dynamic.as_ref().filter(|d| !d.claims.is_empty()) else {
            return Vec::new();
        };
        crate::core::filters::volumes::prebind(&self.storage, &p.key.namespace, &d.claims, &self.node(nid).view())
    }

    /// Adds or updates a PodDisruptionBudget (its selector and `status.disruptionsAllowed`), which
    /// preemption ranks candidates by and reprieves for.
    pub fn upsert_pod_disruption_budget(&mut self, pdb: &k8s_openapi::api::policy::v1::PodDisruptionBudget) {
        let ns = pdb.metadata.namespace.clone().unwrap_or_else(|| "default".into());
        let name = pdb.metadata.name.clone().unwrap_or_default();
        let selector = crate::core::filters::pod_selector::PodSelector::parse(
            pdb.spec.as_ref().and_then(|s| s.selector.as_ref()),
            "spec.selector",
        )
        .unwrap_or_default();
        let allowed = pdb
            .status
            .as_ref()
            .and_then(|s| s.disruptions_allowed)
            .map_or(0, i64::from);
        let list = self.pdbs.entry(ns).or_default();
        list.retain(|(n, _, _)| *n != name);
        list.push((name, selector, allowed));
    }

    /// Removes a PodDisruptionBudget.
    pub fn remove_pod_disruption_budget(&mut self, namespace: &str, name: &str) {
        if let Some(list) = self.pdbs.get_mut(namespace) {
            list.retain(|(n, _, _)| n != name);
        }
    }

    /// Of `pods` (evicted in this order), those whose eviction would violate a PodDisruptionBudget:
    /// each budget's allowed disruptions are used up in order (upstream's `filterPodsWithPDBViolation`).
    pub(crate) fn pdb_violating(&self, pods: &[u32]) -> std::collections::HashSet<u32> {
        let mut allowed: HashMap<(String, String), i64> = HashMap::new();
        let mut out = std::collections::HashSet::new();
        for &pid in pods {
            let p = self.pod(pid);
            let Some(list) = self.pdbs.get(&p.key.namespace) else {
                continue;
            };
            let mut violated = false;
            for (name, selector, budget) in list {
                if !selector.matches(&p.labels) {
                    continue;
                }
                let left = allowed
                    .entry((p.key.namespace.clone(), name.clone()))
                    .or_insert(*budget);
                *left -= 1;
                if *left < 0 {
                    violated = true;
                }
            }
            if violated {
                out.insert(pid);
            }
        }
        out
    }

    /// Adds or updates a namespace (its labels, for affinity terms' `namespaceSelector`).
    pub fn upsert_namespace(&mut self, ns: &Namespace) {
        let name = ns.metadata.name.clone().unwrap_or_default();
        self.storage
            .namespaces
            .insert(name, ns.metadata.labels.clone().unwrap_or_default());
    }

    /// Removes a namespace.
    pub fn remove_namespace(&mut self, name: &str) {
        self.storage.namespaces.remove(name);
    }
}
