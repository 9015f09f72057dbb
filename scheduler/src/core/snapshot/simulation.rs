//! What a cycle tries without committing it: simulated placements and removals of pods (driven by the
//! journal, which reverts them), and the caches the cycle keeps across cycles (static-filter results per
//! equivalence class, the topology domains per label key), both invalidated by node changes.

use std::collections::{BTreeMap, HashMap};

use super::Snapshot;
use crate::core::equivalence::StaticId;

#[derive(Debug, Default)]
pub(crate) struct TopologyIndex {
    pub epoch: u64,
    /// Label value -> nodes with it, in name order. Nodes without the label are left out.
    pub domains: BTreeMap<String, Vec<u32>>,
}

/// One simulated change to a pod's placement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sim {
    /// A pending pod is placed on the node.
    Assume,
    /// A simulated placement is taken back.
    Unassume,
    /// A placed pod is removed (a preemption victim).
    Remove,
    /// A simulated removal is taken back.
    Restore,
}

impl Snapshot {
    /// Applies one simulated change of `pod` on `node`: the pod's simulation state and the node's usage.
    pub(crate) fn simulate(&mut self, pod: u32, node: u32, step: Sim) {
        let Some(p) = self.pods.get_mut(pod) else { return };
        let sign = match step {
            Sim::Assume => {
                p.sim_node = Some(node);
                1
            }
            Sim::Unassume => {
                p.sim_node = None;
                -1
            }
            Sim::Remove => {
                p.sim_removed = true;
                -1
            }
            Sim::Restore => {
                p.sim_removed = false;
                1
            }
        };
        let has_claims = !p.claims.is_empty();
        if let Some(n) = self.nodes.get_mut(node) {
            n.add(&p.requests, sign);
            match step {
                Sim::Assume => n.sim_pods.push(pod),
                Sim::Unassume => {
                    if let Some(i) = n.sim_pods.iter().rposition(|x| *x == pod) {
                        n.sim_pods.swap_remove(i);
                    }
                }
                Sim::Remove | Sim::Restore => {}
            }
        }
        if has_claims && matches!(step, Sim::Remove | Sim::Restore) {
            self.simulate_claims(pod, step == Sim::Remove);
        }
    }

    /// Makes sure the static-filter result of a static class is current.
    pub(crate) fn ensure_static(&mut self, sid: StaticId) {
        let epoch = self.node_epoch;
        let Some(entry) = self.classes.statics.get(sid as usize) else {
            return;
        };
        if entry.epoch == epoch {
            return;
        }
        let mut feasible = vec![false; self.nodes.capacity()];
        let mut raw = vec![(0, 0); self.nodes.capacity()];
        let mut max_raw = (0, 0);
        for (i, n) in self.nodes.iter() {
            let view = n.view();
            let ok = entry.spec.check(&view).is_ok();
            feasible[i as usize] = ok;
            if ok {
                let r = entry.spec.raw_scores(&view);
                raw[i as usize] = r;
                max_raw = (max_raw.0.max(r.0), max_raw.1.max(r.1));
            }
        }
        if let Some(entry) = self.classes.statics.get_mut(sid as usize) {
            entry.feasible = feasible;
            entry.raw = raw;
            entry.max_raw = max_raw;
            entry.epoch = epoch;
        }
    }

    pub(crate) fn static_ok(&self, sid: StaticId, node: u32) -> bool {
        self.classes
            .statics
            .get(sid as usize)
            .and_then(|e| e.feasible.get(node as usize))
            .copied()
            .unwrap_or(false)
    }

    /// Makes sure the topology index for `key` is current.
    pub(crate) fn ensure_topology(&mut self, key: &str) {
        self.prepare();
        let epoch = self.node_epoch;
        if self.topology.get(key).is_some_and(|t| t.epoch == epoch) {
            return;
        }
        let mut domains: BTreeMap<String, Vec<u32>> = BTreeMap::new();
        for &id in &self.node_order {
            if let Some(v) = self.node(id).labels.get(key) {
                domains.entry(v.clone()).or_default().push(id);
            }
        }
        self.topology.insert(key.to_string(), TopologyIndex { epoch, domains });
    }
}

/// A topology key's domains: node id -> domain id (`NO_DOMAIN`: the node lacks the key), and the
/// domains' values. Built once per key and node epoch (the inter-pod and spread PreFilters' cache).
#[derive(Debug)]
pub(crate) struct DomainIndex {
    pub(crate) key: String,
    of_node: Vec<u32>,
    pub(crate) values: Vec<String>,
}

const NO_DOMAIN: u32 = u32::MAX;

impl DomainIndex {
    pub(crate) fn build(snap: &Snapshot, key: &str) -> Self {
        let mut ids: HashMap<&str, u32> = HashMap::new();
        let mut values = Vec::new();
        let mut of_node = vec![NO_DOMAIN; snap.node_slots()];
        for &n in &snap.node_order {
            if let Some(v) = snap.node(n).labels.get(key) {
                let id = *ids.entry(v.as_str()).or_insert_with(|| {
                    values.push(v.clone());
                    (values.len() - 1) as u32
                });
                if let Some(slot) = of_node.get_mut(n as usize) {
                    *slot = id;
                }
            }
        }
        Self {
            key: key.to_string(),
            of_node,
            values,
        }
    }

    pub(crate) fn domain(&self, node: u32) -> Option<usize> {
        match self.of_node.get(node as usize) {
            Some(&d) if d != NO_DOMAIN => Some(d as usize),
            _ => None,
        }
    }
}

/// The nodes a spread constraint counts (upstream: those passing the pod's node affinity and, with
/// `nodeTaintsPolicy: Honor`, its tolerations), by node id.
pub(crate) type Eligible = Vec<bool>;
