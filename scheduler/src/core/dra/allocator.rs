//! Allocating a pod's unallocated claims on one node: a depth-first search over the claims' requests
//! (each request's alternatives in order, each alternative's devices in device order without
//! permutations), checking every constraint as devices are chosen and backtracking when a later
//! request cannot be satisfied.
//!
//! Bounded as upstream bounds it, and more: a claim may hold at most [`ALLOCATION_RESULTS_MAX`]
//! devices (`AllocationResultsMaxSize`; an `All` request counts every matching device), the search
//! keeps its own stack (no recursion per device), and every step and every selector evaluation is
//! charged to the pod's [`Budget`](super::Budget), shared across the nodes tried and with the cycle:
//! once it is spent the search stops and the pod is rejected with a message naming the claim.

use std::collections::BTreeMap;

use super::cel::{Attr, DeviceView, Match};
use super::{Allocated, DraState, Reach, tolerated};
use crate::core::framework::NodeView;

/// Upstream's `AllocationResultsMaxSize`: the most devices one claim's allocation may hold.
pub(crate) const ALLOCATION_RESULTS_MAX: usize = 32;

/// Why claims cannot be allocated on a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// Not enough matching devices (upstream: `cannot allocate all claims`).
    CannotAllocate,
    /// A class the claim names does not exist (UnschedulableAndUnresolvable upstream).
    ClassNotFound(String),
    /// A selector failed at runtime on some device (reported in the message).
    Cel(String),
    /// A claim asks for more devices than an allocation may hold (upstream's message).
    TooMany(String),
    /// The pod's or the cycle's allocation budget is spent (the message names the claim).
    Budget(String),
}

/// The part of a claim the search reads.
struct ClaimData {
    /// `namespace/name`.
    name: String,
    requests: Vec<super::Request>,
    constraints: Vec<super::Constraint>,
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
    let reachable: Vec<u32> = state
        .by_node
        .get(node.name)
        .into_iter()
        .flatten()
        .chain(state.shared.iter())
        .copied()
        .collect();
    // What the search needs of each claim (not the whole claim: its source object stays put).
    let mut claims_data: Vec<ClaimData> = Vec::with_capacity(claims.len());
    for &id in claims {
        let Some(c) = state.claim(id) else {
            return Err(Failure::CannotAllocate);
        };
        claims_data.push(ClaimData {
            name: format!("{}/{}", c.namespace, c.name),
            requests: c.requests.clone(),
            constraints: c.constraints.clone(),
        });
    }
    for (ci, claim) in claims_data.iter().enumerate() {
        let claim_name = &claim.name;
        let out_of_budget = |state: &DraState, cel_error: &Option<String>| {
            let mut m = state.budget.exhausted_message(claim_name);
            if let Some(e) = cel_error {
                m.push_str("; first selector error: ");
                m.push_str(e);
            }
            Failure::Budget(m)
        };
        let mut min_devices = 0usize;
        for (ri, r) in claim.requests.iter().enumerate() {
            let mut alts = Vec::new();
            let mut request_min: Option<usize> = None;
            for alt in &r.alternatives {
                let Some(class_selectors) = state.class(&alt.class).map(|(sel, _)| sel.clone()) else {
                    if r.alternatives.len() == 1 {
                        return Err(Failure::ClassNotFound(alt.class.clone()));
                    }
                    continue;
                };
                let mut candidates = Vec::new();
                let mut all_matching_free = true;
                let mut matching = 0usize;
                for &d in &reachable {
                    let DraState {
                        devices,
                        exprs,
                        budget,
                        in_use,
                        ..
                    } = &mut *state;
                    let Some(dev) = devices.get(d as usize) else { continue };
                    if dev.unsupported || !dev.reach.admits(node) || !tolerated(&dev.taints, &alt.tolerations) {
                        continue;
                    }
                    if !budget.charge(1) {
                        return Err(out_of_budget(state, &cel_error));
                    }
                    let view = DeviceView {
                        driver: &dev.key.0,
                        attributes: &dev.attributes,
                        capacity: &dev.capacity,
                        allow_multiple_allocations: false,
                    };
                    let mut ok = true;
                    let selectors = class_selectors
                        .iter()
                        .map(|s| (true, s))
                        .chain(alt.selectors.iter().map(|s| (false, s)));
                    for (k, (of_class, sel)) in selectors.enumerate() {
                        match exprs.matches(sel, d, &view, budget) {
                            Match::Yes => {}
                            Match::No => {
                                ok = false;
                                break;
                            }
                            Match::Error(m) => {
                                cel_error.get_or_insert_with(|| {
                                    let (driver, pool, name) = &dev.key;
                                    let owner = if of_class {
                                        format!("class {}", alt.class)
                                    } else {
                                        format!("claim {claim_name}")
                                    };
                                    let k = if of_class { k } else { k - class_selectors.len() };
                                    format!("{owner}: selector #{k} on device {driver}/{pool}/{name}: CEL runtime error: {m}")
                                });
                                ok = false;
                                break;
                            }
                            Match::OutOfBudget => return Err(out_of_budget(state, &cel_error)),
                        }
                    }
                    if !ok {
                        continue;
                    }
                    matching += 1;
                    if in_use.get(d as usize).copied().unwrap_or(0) > 0 {
                        all_matching_free = false;
                        continue;
                    }
                    candidates.push(d);
                }
                let needed = match alt.count {
                    Some(n) => n as usize,
                    None => matching,
                };
                request_min = Some(request_min.map_or(needed, |m| m.min(needed)));
                // `All` needs every matching device, and at least one (upstream).
                if alt.count.is_none() && (!all_matching_free || candidates.is_empty()) {
                    candidates.clear();
                }
                alts.push((alt.name.clone(), alt.count, candidates));
            }
            min_devices = min_devices.saturating_add(request_min.unwrap_or(0));
            plan.push((ci, ri, alts));
        }
        if min_devices > ALLOCATION_RESULTS_MAX {
            return Err(Failure::TooMany(format!(
                "claim {claim_name}: number of requested devices {min_devices} exceeds the claim limit of {ALLOCATION_RESULTS_MAX}"
            )));
        }
    }
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
        budget: &mut state.budget,
    };
    match search.run() {
        Outcome::Found => {
            let chosen = search.chosen;
            Ok(chosen
                .into_iter()
                .map(|devices| {
                    let node_selector = node_selector(state, &devices, node);
                    Allocated { devices, node_selector }
                })
                .collect())
        }
        Outcome::OutOfBudget => {
            let claim = claims_data.first().map(|c| c.name.clone()).unwrap_or_default();
            Err(Failure::Budget(state.budget.exhausted_message(&claim)))
        }
        Outcome::NotFound => match cel_error {
            Some(e) => Err(Failure::Cel(e)),
            None => Err(Failure::CannotAllocate),
        },
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Found,
    NotFound,
    OutOfBudget,
}

/// The search's stack: one frame per request being filled and per device being chosen.
#[derive(Debug)]
enum Frame {
    /// Filling request `slot`; alternatives from `next_alt` on are still to be tried.
    Request { slot: usize, next_alt: usize },
    /// Choosing `need` more devices of alternative `alt` of `slot` from its candidates from `next` on;
    /// `took` is the device this frame holds while its child frame runs.
    Pick {
        slot: usize,
        alt: usize,
        next: usize,
        need: usize,
        took: Option<u32>,
    },
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
    budget: &'a mut super::Budget,
}

impl Search<'_> {
    /// The depth-first search, without recursion: `ret` carries a finished frame's answer to its parent.
    fn run(&mut self) -> Outcome {
        let mut stack = vec![Frame::Request { slot: 0, next_alt: 0 }];
        let mut ret: Option<bool> = None;
        while let Some(top) = stack.last_mut() {
            match top {
                Frame::Request { slot, next_alt } => {
                    let slot = *slot;
                    if slot >= self.slots.len() {
                        stack.pop();
                        ret = Some(true);
                        continue;
                    }
                    if ret.take() == Some(true) {
                        stack.pop();
                        ret = Some(true);
                        continue;
                    }
                    let s = &self.slots[slot];
                    let next = s.alternatives[*next_alt..]
                        .iter()
                        .position(|(_, count, candidates)| {
                            let need = count.map_or(candidates.len(), |n| n as usize);
                            need > 0 && candidates.len() >= need
                        })
                        .map(|i| i + *next_alt);
                    match next {
                        None => {
                            stack.pop();
                            ret = Some(false);
                        }
                        Some(alt) => {
                            *next_alt = alt + 1;
                            let (_, count, candidates) = &s.alternatives[alt];
                            let need = count.map_or(candidates.len(), |n| n as usize);
                            stack.push(Frame::Pick {
                                slot,
                                alt,
                                next: 0,
                                need,
                                took: None,
                            });
                        }
                    }
                }
                Frame::Pick {
                    slot,
                    alt,
                    next,
                    need,
                    took,
                } => {
                    let (slot, alt) = (*slot, *alt);
                    if *need == 0 {
                        // This request is filled: the next one decides.
                        match ret.take() {
                            Some(r) => {
                                stack.pop();
                                ret = Some(r);
                            }
                            None => stack.push(Frame::Request {
                                slot: slot + 1,
                                next_alt: 0,
                            }),
                        }
                        continue;
                    }
                    if let Some(r) = ret.take() {
                        if r {
                            stack.pop();
                            ret = Some(true);
                            continue;
                        }
                        if let Some(d) = took.take() {
                            self.untake(slot, d);
                        }
                    }
                    let s = &self.slots[slot];
                    let (name, _, candidates) = &s.alternatives[alt];
                    let mut pushed = None;
                    while *next < candidates.len() {
                        let i = *next;
                        *next += 1;
                        if candidates.len() - i < *need {
                            break;
                        }
                        if !self.budget.charge(1) {
                            return Outcome::OutOfBudget;
                        }
                        let d = candidates[i];
                        if self.taken.contains(&d) || !self.admit(s.claim, &s.constraints, d) {
                            continue;
                        }
                        self.take(s.claim, &s.constraints, d, name);
                        *took = Some(d);
                        pushed = Some(Frame::Pick {
                            slot,
                            alt,
                            next: i + 1,
                            need: *need - 1,
                            took: None,
                        });
                        break;
                    }
                    match pushed {
                        Some(f) => stack.push(f),
                        None => {
                            stack.pop();
                            ret = Some(false);
                        }
                    }
                }
            }
        }
        if ret == Some(true) {
            Outcome::Found
        } else {
            Outcome::NotFound
        }
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

    fn untake(&mut self, slot: usize, d: u32) {
        let s = &self.slots[slot];
        let (claim, constraints) = (s.claim, &s.constraints);
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
