//! Allocating a pod's unallocated claims on one node: a depth-first search over the claims' requests
//! (each request's alternatives in order, each alternative's devices in device order without
//! permutations), checking every constraint as devices are chosen and backtracking when a later
//! request cannot be satisfied.

use std::collections::BTreeMap;

use super::cel::{Attr, DeviceView};
use super::{Allocated, Claim, DraState, Reach, tolerated};
use crate::core::filters::NodeView;

/// Steps a search may take per node before it gives up (the node counts as not fitting).
pub(crate) const STEP_BUDGET: u32 = 100_000;

/// Why claims cannot be allocated on a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// Not enough matching devices (upstream: `cannot allocate all claims`).
    CannotAllocate,
    /// A class the claim names does not exist (UnschedulableAndUnresolvable upstream).
    ClassNotFound(String),
    /// A selector failed at runtime on some device (reported in the message).
    Cel(String),
}

/// A request alternative's result name, count (`None`: `All`) and candidate devices.
type Candidates = (String, Option<u32>, Vec<u32>);

/// One request of one claim: its alternatives (result name, count or `All`, candidate devices) and
/// the claim's constraints that apply to it.
struct Slot<'a> {
    claim: usize,
    alternatives: Vec<Candidates>,
    constraints: Vec<&'a super::Constraint>,
}

/// Allocates every claim in `claims` (indices into the state's claims, none allocated yet) on `node`.
/// Returns one [`Allocated`] per claim, in order.
pub(crate) fn allocate(state: &mut DraState, claims: &[u32], node: &NodeView<'_>) -> Result<Vec<Allocated>, Failure> {
    state.prepare();
    // Candidate devices per (claim, request, alternative): available on the node, free, matching.
    let mut plan: Vec<(usize, usize, Vec<Candidates>)> = Vec::new();
    let mut cel_error: Option<String> = None;
    for (ci, &id) in claims.iter().enumerate() {
        let Some(claim) = state.claim(id).cloned() else {
            return Err(Failure::CannotAllocate);
        };
        for (ri, r) in claim.requests.iter().enumerate() {
            let mut alts = Vec::new();
            for alt in &r.alternatives {
                let Some((class_selectors, _)) = state.class(&alt.class).cloned() else {
                    if r.alternatives.len() == 1 {
                        return Err(Failure::ClassNotFound(alt.class.clone()));
                    }
                    continue;
                };
                for &e in class_selectors.iter().chain(alt.selectors.iter()) {
                    state.exprs.ensure(e, &state.devices);
                }
                let mut candidates = Vec::new();
                let mut all_matching_free = true;
                let reachable: Vec<u32> = state
                    .by_node
                    .get(node.name)
                    .into_iter()
                    .flatten()
                    .chain(state.shared.iter())
                    .copied()
                    .collect();
                for d in reachable {
                    let dev = &state.devices[d as usize];
                    if dev.unsupported || !dev.reach.admits(node) || !tolerated(&dev.taints, &alt.tolerations) {
                        continue;
                    }
                    let view = DeviceView {
                        driver: &dev.key.0,
                        attributes: Some(&dev.attributes),
                        capacity: Some(&dev.capacity),
                        allow_multiple_allocations: false,
                    };
                    let mut ok = true;
                    for &e in class_selectors.iter().chain(alt.selectors.iter()) {
                        match state.exprs.matches(e, d, &view) {
                            Ok(true) => {}
                            Ok(false) => {
                                ok = false;
                                break;
                            }
                            Err(m) => {
                                cel_error.get_or_insert(m);
                                ok = false;
                                break;
                            }
                        }
                    }
                    if !ok {
                        continue;
                    }
                    if state.in_use.get(d as usize).copied().unwrap_or(0) > 0 {
                        all_matching_free = false;
                        continue;
                    }
                    candidates.push(d);
                }
                // `All` needs every matching device, and at least one (upstream).
                if alt.count.is_none() && (!all_matching_free || candidates.is_empty()) {
                    candidates.clear();
                }
                alts.push((alt.name.clone(), alt.count, candidates));
            }
            plan.push((ci, ri, alts));
        }
    }
    let claims_data: Vec<Claim> = claims.iter().filter_map(|&id| state.claim(id).cloned()).collect();
    let slots: Vec<Slot<'_>> = plan
        .into_iter()
        .map(|(ci, ri, alternatives)| {
            let claim = &claims_data[ci];
            let rname = &claim.requests[ri].name;
            let constraints = claim
                .constraints
                .iter()
                .filter(|k| k.requests.is_empty() || k.requests.iter().any(|q| q == rname))
                .collect();
            Slot {
                claim: ci,
                alternatives,
                constraints,
            }
        })
        .collect();
    let mut search = Search {
        devices: &state.devices,
        slots: &slots,
        chosen: vec![Vec::new(); claims.len()],
        taken: Vec::new(),
        pinned: BTreeMap::new(),
        distinct: BTreeMap::new(),
        steps: 0,
    };
    if search.request(0) {
        let chosen = search.chosen;
        Ok(chosen
            .into_iter()
            .map(|devices| {
                let node_selector = node_selector(state, &devices, node);
                Allocated { devices, node_selector }
            })
            .collect())
    } else if let Some(e) = cel_error {
        Err(Failure::Cel(e))
    } else {
        Err(Failure::CannotAllocate)
    }
}

struct Search<'a> {
    devices: &'a [super::Device],
    slots: &'a [Slot<'a>],
    /// Per claim: (result name, device).
    chosen: Vec<Vec<(String, u32)>>,
    taken: Vec<u32>,
    /// (claim, constraint index by attribute) -> pinned value and how many devices pinned it.
    pinned: BTreeMap<(usize, String), (Attr, u32)>,
    /// (claim, attribute) -> values used by distinct constraints.
    distinct: BTreeMap<(usize, String), Vec<Attr>>,
    steps: u32,
}

impl Search<'_> {
    fn request(&mut self, slot: usize) -> bool {
        let Some(s) = self.slots.get(slot) else {
            return true;
        };
        for (name, count, candidates) in &s.alternatives {
            let need = match count {
                Some(n) => *n as usize,
                None => candidates.len(),
            };
            if need == 0 || candidates.len() < need {
                continue;
            }
            if self.pick(slot, name, candidates, 0, need) {
                return true;
            }
            if self.steps > STEP_BUDGET {
                return false;
            }
        }
        false
    }

    /// Picks `need` more devices for `slot` from `candidates[from..]`, then continues with the next slot.
    fn pick(&mut self, slot: usize, name: &str, candidates: &[u32], from: usize, need: usize) -> bool {
        if need == 0 {
            return self.request(slot + 1);
        }
        let s = &self.slots[slot];
        for i in from..candidates.len() {
            if candidates.len() - i < need {
                return false;
            }
            self.steps += 1;
            if self.steps > STEP_BUDGET {
                return false;
            }
            let d = candidates[i];
            if self.taken.contains(&d) || !self.admit(s.claim, &s.constraints, d) {
                continue;
            }
            self.take(s.claim, &s.constraints, d, name);
            if self.pick(slot, name, candidates, i + 1, need - 1) {
                return true;
            }
            self.untake(s.claim, &s.constraints, d);
        }
        false
    }

    fn admit(&self, claim: usize, constraints: &[&super::Constraint], d: u32) -> bool {
        let dev = &self.devices[d as usize];
        constraints.iter().all(|k| {
            let Some(v) = dev.attributes.get(&k.attribute) else {
                return false;
            };
            let key = (claim, k.attribute.clone());
            if k.distinct {
                !self.distinct.get(&key).is_some_and(|vs| vs.contains(v))
            } else {
                self.pinned.get(&key).is_none_or(|(p, _)| p == v)
            }
        })
    }

    fn take(&mut self, claim: usize, constraints: &[&super::Constraint], d: u32, name: &str) {
        let dev = &self.devices[d as usize];
        for k in constraints {
            let Some(v) = dev.attributes.get(&k.attribute) else {
                continue;
            };
            let key = (claim, k.attribute.clone());
            if k.distinct {
                self.distinct.entry(key).or_default().push(v.clone());
            } else {
                self.pinned.entry(key).or_insert((v.clone(), 0)).1 += 1;
            }
        }
        self.taken.push(d);
        self.chosen[claim].push((name.to_string(), d));
    }

    fn untake(&mut self, claim: usize, constraints: &[&super::Constraint], d: u32) {
        let dev = &self.devices[d as usize];
        for k in constraints {
            if !dev.attributes.contains_key(&k.attribute) {
                continue;
            }
            let key = (claim, k.attribute.clone());
            if k.distinct {
                if let Some(vs) = self.distinct.get_mut(&key) {
                    vs.pop();
                }
            } else if let Some(e) = self.pinned.get_mut(&key) {
                e.1 -= 1;
                if e.1 == 0 {
                    self.pinned.remove(&key);
                }
            }
        }
        self.taken.pop();
        self.chosen[claim].pop();
    }
}

/// Upstream's allocation node selector: the node of a node-local device; else the union of the
/// devices' slice node selectors (single-term ones); else none.
fn node_selector(
    state: &DraState,
    devices: &[(String, u32)],
    node: &NodeView<'_>,
) -> Option<k8s_openapi::api::core::v1::NodeSelector> {
    use k8s_openapi::api::core::v1::{NodeSelector, NodeSelectorRequirement, NodeSelectorTerm};
    let mut fields: Vec<NodeSelectorRequirement> = Vec::new();
    let mut labels: Vec<NodeSelectorRequirement> = Vec::new();
    for (_, d) in devices {
        match state.devices.get(*d as usize).map(|x| &x.reach) {
            Some(Reach::Node(_)) => {
                return Some(NodeSelector {
                    node_selector_terms: vec![NodeSelectorTerm {
                        match_fields: Some(vec![NodeSelectorRequirement {
                            key: "metadata.name".into(),
                            operator: "In".into(),
                            values: Some(vec![node.name.to_string()]),
                        }]),
                        match_expressions: None,
                    }],
                });
            }
            Some(Reach::Selector(_, Some(sel))) => {
                if let Some(t) = sel.node_selector_terms.first() {
                    for r in t.match_fields.iter().flatten() {
                        if !fields.contains(r) {
                            fields.push(r.clone());
                        }
                    }
                    for r in t.match_expressions.iter().flatten() {
                        if !labels.contains(r) {
                            labels.push(r.clone());
                        }
                    }
                }
            }
            _ => {}
        }
    }
    if fields.is_empty() && labels.is_empty() {
        return None;
    }
    Some(NodeSelector {
        node_selector_terms: vec![NodeSelectorTerm {
            match_fields: (!fields.is_empty()).then_some(fields),
            match_expressions: (!labels.is_empty()).then_some(labels),
        }],
    })
}
