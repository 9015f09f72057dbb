//! Nodes: their labels, taints, cordon and allocatable, what is requested on them, and their name order.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Node;

use super::Snapshot;
use super::SnapshotError;
use super::conversion::invalid;
use crate::core::framework::{NodeTaint, NodeView};
use crate::core::resources::{Requests, node_allocatable};

#[derive(Debug)]
pub(crate) struct NodeInfo {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub taints: Vec<NodeTaint>,
    pub unschedulable: bool,
    pub allocatable: Vec<i64>,
    pub requested: Vec<i64>,
    /// Bumped on every usage change (real or simulated).
    pub version: u64,
    /// Position in name order, for deterministic tie-breaks.
    pub rank: u32,
    /// Pods counted on this node (assumed or bound).
    pub pods: Vec<u32>,
    /// Pods placed on this node in the running cycle's simulation.
    pub sim_pods: Vec<u32>,
}

impl NodeInfo {
    pub(crate) fn view(&self) -> NodeView<'_> {
        NodeView {
            name: &self.name,
            labels: &self.labels,
            taints: &self.taints,
            unschedulable: self.unschedulable,
        }
    }

    pub(crate) fn add(&mut self, r: &Requests, sign: i64) {
        for &(i, v) in &r.0 {
            let i = i as usize;
            if self.requested.len() <= i {
                self.requested.resize(i + 1, 0);
            }
            self.requested[i] = self.requested[i].saturating_add(sign * v);
        }
        self.version += 1;
    }
}

impl Snapshot {
    /// Adds or updates a node from its API object (labels, taints, `spec.unschedulable`,
    /// `status.allocatable`, falling back to `status.capacity`).
    pub fn upsert_node(&mut self, node: &Node) -> Result<(), SnapshotError> {
        let name = node.metadata.name.clone().unwrap_or_default();
        let object = format!("Node {name}");
        if name.is_empty() {
            return Err(invalid(object, "metadata.name", "Required value: name is required"));
        }
        let status = node.status.as_ref();
        let alloc_src = status.and_then(|s| s.allocatable.as_ref().or(s.capacity.as_ref()));
        let allocatable = node_allocatable(&mut self.resources, alloc_src).map_err(|e| {
            invalid(
                object.clone(),
                e.path,
                format!("Invalid value: \"{}\": {}", e.value, e.error),
            )
        })?;
        let labels = node.metadata.labels.clone().unwrap_or_default();
        let spec = node.spec.as_ref();
        let taints: Vec<NodeTaint> = spec
            .and_then(|s| s.taints.as_ref())
            .into_iter()
            .flatten()
            .map(|t| NodeTaint {
                key: t.key.clone(),
                value: t.value.clone().unwrap_or_default(),
                effect: t.effect.clone(),
            })
            .collect();
        let unschedulable = spec.and_then(|s| s.unschedulable).unwrap_or(false);
        if let Some(id) = self.nodes.id(&name) {
            let mut changed = false;
            if let Some(n) = self.nodes.get_mut(id) {
                changed = n.labels != labels || n.taints != taints || n.unschedulable != unschedulable;
                n.labels = labels;
                n.taints = taints;
                n.unschedulable = unschedulable;
                n.allocatable = allocatable;
                n.version += 1;
            }
            if changed {
                self.node_epoch += 1;
            }
            return Ok(());
        }
        let mut info = NodeInfo {
            name: name.clone(),
            labels,
            taints,
            unschedulable,
            allocatable,
            requested: vec![0; self.resources.len()],
            version: 0,
            rank: 0,
            pods: Vec::new(),
            sim_pods: Vec::new(),
        };
        // Attach pods already bound or assumed to this node name.
        let orphans = self.orphans.remove(&name).unwrap_or_default();
        for &pid in &orphans {
            if let Some(p) = self.pods.get(pid) {
                info.add(&p.requests, 1);
                info.pods.push(pid);
            }
        }
        let id = self.nodes.insert(name, info);
        for pid in orphans {
            if let Some(p) = self.pods.get_mut(pid) {
                p.node = Some(id);
            }
        }
        self.node_epoch += 1;
        self.order_dirty = true;
        Ok(())
    }

    /// Removes a node. Pods on it stay (they keep their node name) but no longer count anywhere.
    pub fn remove_node(&mut self, name: &str) -> bool {
        let Some((_, n)) = self.nodes.remove(name) else {
            return false;
        };
        for pid in &n.pods {
            if let Some(p) = self.pods.get_mut(*pid) {
                p.node = None;
            }
        }
        self.orphans.insert(n.name, n.pods);
        self.node_epoch += 1;
        self.order_dirty = true;
        true
    }

    /// Brings the name order of the nodes up to date (after nodes were added or removed). Every cycle
    /// starts with it; adding many nodes in a row costs one sort.
    pub(crate) fn prepare(&mut self) {
        self.dra.prepare();
        if self.order_dirty {
            self.rebuild_node_order();
            self.order_dirty = false;
        }
    }

    fn rebuild_node_order(&mut self) {
        let mut order: Vec<u32> = self.nodes.ids().collect();
        order.sort_by(|a, b| self.node_name(*a).cmp(self.node_name(*b)));
        for (rank, id) in order.iter().enumerate() {
            if let Some(n) = self.nodes.get_mut(*id) {
                n.rank = rank as u32;
            }
        }
        self.node_order = order;
    }

    pub(crate) fn node(&self, id: u32) -> &NodeInfo {
        // Ids handed out by the snapshot always point at a live node while a cycle runs.
        match self.nodes.get(id) {
            Some(n) => n,
            None => unreachable_node(),
        }
    }

    pub(crate) fn node_name(&self, id: u32) -> &str {
        self.nodes.get(id).map(|n| n.name.as_str()).unwrap_or("")
    }

    /// Node slots (ids are below this).
    pub(crate) fn node_slots(&self) -> usize {
        self.nodes.capacity()
    }

    /// Number of nodes.
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// What is requested on a node, by resource name (cpu in millicores, memory in bytes).
    pub fn node_requested(&self, name: &str) -> Option<BTreeMap<String, i64>> {
        let n = self.nodes.by_key(name)?;
        Some(
            n.requested
                .iter()
                .enumerate()
                .filter(|(_, v)| **v != 0)
                .map(|(i, v)| (self.resources.name(i as u16).to_string(), *v))
                .collect(),
        )
    }

    /// What a node can hold, by resource name.
    pub fn node_allocatable(&self, name: &str) -> Option<BTreeMap<String, i64>> {
        let n = self.nodes.by_key(name)?;
        Some(
            n.allocatable
                .iter()
                .enumerate()
                .filter(|(_, v)| **v != 0)
                .map(|(i, v)| (self.resources.name(i as u16).to_string(), *v))
                .collect(),
        )
    }

    /// Node names in name order.
    pub fn node_names(&self) -> impl Iterator<Item = &str> {
        let mut names: Vec<&str> = self.nodes.keys().map(String::as_str).collect();
        names.sort_unstable();
        names.into_iter()
    }

    /// A node's label value.
    pub fn node_label(&self, node: &str, key: &str) -> Option<&str> {
        let n = self.nodes.by_key(node)?;
        n.labels.get(key).map(String::as_str)
    }

    /// The id of a node.
    pub(crate) fn node_id(&self, name: &str) -> Option<u32> {
        self.nodes.id(name)
    }
}

#[cold]
fn unreachable_node() -> ! {
    panic!("internal error: stale node id in the scheduler snapshot")
}
