//! Multi-level topology-aware placement (KEP-5732, KEP-6012 "Multi-level topology-aware scheduling").
//!
//! For a group with a topology constraint `key`:
//!
//! 1. **Placement generation**: one candidate per distinct value of `key` among the nodes of the
//!    parent's domain (nodes without the label are dropped). If pods of the group's subtree already run
//!    (or were assumed earlier in this cycle), they pin the group: the only candidate is their domain; if
//!    they sit in several domains, or on a node without the label, or outside the parent's domain, the
//!    group is UnschedulableAndUnresolvable.
//! 2. **Evaluation**: for each candidate, the group (and recursively its children, confined to the
//!    candidate's nodes) is simulated under a journal mark; a Success is recorded with its pod -> node
//!    assignments and scored, then reverted. With a placement limit the candidates are tried most
//!    promising first (tightest domain under bin packing) and evaluation stops once enough feasible
//!    ones are found.
//! 3. **Selection**: the best-scored feasible candidate (see [`scores`](super::scores)) is replayed into
//!    the snapshot and returned with Success; the rest are kept as alternatives for backtracking. With no
//!    feasible candidate the group fails with upstream's
//!    `0/N placements are available, first placement status: ...`, Unschedulable if any candidate was
//!    Unschedulable, UnschedulableAndUnresolvable otherwise.

use std::collections::BTreeMap;
use std::rc::Rc;

use super::config::PlacementLimit;
use super::cycle::{Cycle, Domain, Outcome};
use super::journal::Op;
use super::outcome::Rejection;
use super::placement_message::PlacementMessage;
use super::scores::packing;
use super::status::Code;

/// A feasible placement of a group: its domain value, the assignments it made and its outcome.
#[derive(Debug, Clone)]
pub(crate) struct Alt {
    pub value: String,
    /// The placement's changes, to replay: pods assumed on nodes and the claims allocated for them.
    pub ops: Vec<Replay>,
    pub outcome: Outcome,
    pub score: (u32, i64),
}

/// One change of a recorded placement.
#[derive(Debug, Clone)]
pub(crate) enum Replay {
    Assume(u32, u32),
    Allocate(u32, super::dra::Allocated),
}

/// A candidate domain: label value and its nodes in name order.
type Candidate = (String, Rc<[u32]>);

/// Number of feasible placements to find before stopping.
pub(crate) fn placements_to_find(limit: PlacementLimit, candidates: usize, total_nodes: usize) -> usize {
    let pct = match limit {
        PlacementLimit::ScoreAll => return candidates,
        PlacementLimit::Percentage(p) => u64::from(p.clamp(1, 100)),
        PlacementLimit::Adaptive => {
            let drop = 90 * total_nodes as u64 / 5000;
            100u64.saturating_sub(drop).max(5)
        }
    };
    let n = (candidates as u64 * pct).div_ceil(100) as usize;
    n.clamp(1, candidates.max(1))
}

impl Cycle<'_> {
    /// Nodes of the group's subtree that hold its placed pods (real or simulated).
    fn pinned_nodes(&self, g: u32) -> Vec<u32> {
        let mut nodes = Vec::new();
        self.walk(g, &mut |snap, id| {
            for &p in snap.members(id) {
                let p = snap.pod(p);
                if p.terminating {
                    continue;
                }
                if let Some(n) = p.placed_node() {
                    nodes.push(n);
                }
            }
        });
        nodes.sort_unstable();
        nodes.dedup();
        nodes
    }

    /// Candidate domains of `key` within `dom`, as (value, nodes in name order).
    fn candidates(&mut self, key: &str, dom: &Domain) -> Vec<Candidate> {
        if dom.whole {
            self.snap.ensure_topology(key);
            return self
                .snap
                .topology
                .get(key)
                .map(|t| {
                    t.domains
                        .iter()
                        .map(|(v, n)| (v.clone(), Rc::from(n.as_slice())))
                        .collect()
                })
                .unwrap_or_default();
        }
        let mut by_value: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
        for &n in dom.nodes.iter() {
            if let Some(v) = self.snap.node(n).labels.get(key) {
                by_value.entry(v.as_str()).or_default().push(n);
            }
        }
        by_value
            .into_iter()
            .map(|(v, n)| (v.to_string(), Rc::from(n.as_slice())))
            .collect()
    }

    /// Schedules a topology-constrained group (see the module docs). Returns the outcome and, when
    /// `want_alts`, the other feasible placements best first.
    pub(crate) fn schedule_topology(
        &mut self,
        g: u32,
        key: &str,
        dom: &Domain,
        want_alts: bool,
    ) -> (Outcome, Vec<Alt>) {
        let pinned = self.pinned_nodes(g);
        let mut cands = self.candidates(key, dom);
        if !pinned.is_empty() {
            let mut values: Vec<Option<&str>> = pinned
                .iter()
                .map(|n| self.snap.node(*n).labels.get(key).map(String::as_str))
                .collect();
            values.sort_unstable();
            values.dedup();
            let message = match values.as_slice() {
                [Some(v)] => {
                    let v = v.to_string();
                    cands.retain(|(c, _)| *c == v);
                    if cands.is_empty() {
                        Some(format!(
                            "pods of the group already run in {key}={v}, outside the parent group's domain"
                        ))
                    } else {
                        None
                    }
                }
                _ if values.contains(&None) => Some(format!(
                    "pods of the group already run on nodes without the topology label {key:?}"
                )),
                _ => Some(format!("pods of the group already run in more than one {key:?} domain")),
            };
            if let Some(message) = message {
                return (Outcome::new(g, Code::UnschedulableAndUnresolvable, message), Vec::new());
            }
        }
        if cands.is_empty() {
            return (
                Outcome::new(
                    g,
                    Code::UnschedulableAndUnresolvable,
                    PlacementMessage::NoDomains { key: key.to_string() }.to_string(),
                ),
                Vec::new(),
            );
        }
        let total_nodes: usize = cands.iter().map(|(_, n)| n.len()).sum();
        let to_find = placements_to_find(self.cfg.placement_limit, cands.len(), total_nodes);
        if to_find < cands.len() {
            // Most promising first, so the cap keeps the best candidates.
            let strategy = self.cfg.scoring;
            let snap = &*self.snap;
            let mut keyed: Vec<(i64, Candidate)> =
                cands.into_iter().map(|c| (packing(strategy, snap, &c.1), c)).collect();
            keyed.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.0.cmp(&b.1.0)));
            cands = keyed.into_iter().map(|(_, c)| c).collect();
        }
        let total = cands.len();
        let mut feasible: Vec<Alt> = Vec::new();
        let mut first_failure: Option<Outcome> = None;
        let mut failures: Vec<(String, String)> = Vec::new();
        let mut any_unschedulable = false;
        for (value, nodes) in cands {
            if feasible.len() >= to_find {
                break;
            }
            self.stats.placements_evaluated += 1;
            let sub = Domain {
                nodes: nodes.clone(),
                whole: false,
            };
            let mark = self.journal.mark();
            let mut outcome = self.schedule_inner(g, &sub);
            if outcome.code == Code::Success {
                self.stats.placements_feasible += 1;
                let ops: Vec<Replay> = self
                    .journal
                    .ops_since(mark)
                    .iter()
                    .filter_map(|op| match op {
                        Op::Assume { pod, node } => Some(Replay::Assume(*pod, *node)),
                        Op::Allocate { claim } => self
                            .snap
                            .dra
                            .claim(*claim)
                            .and_then(|c| c.sim.clone())
                            .map(|a| Replay::Allocate(*claim, a)),
                        _ => None,
                    })
                    .collect();
                let pods = ops.iter().filter(|o| matches!(o, Replay::Assume(..))).count() as u32;
                let score = (pods, packing(self.cfg.scoring, self.snap, &nodes));
                outcome.domain = Some(value.clone());
                feasible.push(Alt {
                    value,
                    ops,
                    outcome,
                    score,
                });
            } else {
                any_unschedulable |= outcome.code == Code::Unschedulable;
                failures.push((value.clone(), outcome.message.clone()));
                if first_failure.is_none() {
                    first_failure = Some(outcome);
                }
            }
            self.journal.revert_to(self.snap, mark);
        }
        if feasible.is_empty() {
            let code = if any_unschedulable {
                Code::Unschedulable
            } else {
                Code::UnschedulableAndUnresolvable
            };
            // The children and pods of the first placement tried keep their statuses; the group's message
            // aggregates every placement tried by reason.
            let (children, unplaced, rejection) = match first_failure {
                Some(o) => (o.children, o.unplaced, o.rejection),
                None => (Vec::new(), Vec::new(), Rejection::Unschedulable),
            };
            let mut o = Outcome::new(g, code, placements_message(key, total, &failures));
            o.children = children;
            o.unplaced = unplaced;
            o.rejection = rejection;
            return (o, Vec::new());
        }
        // Best first: more pods, then tighter packing (already oriented by strategy), then value.
        feasible.sort_by(|a, b| b.score.cmp(&a.score).then_with(|| a.value.cmp(&b.value)));
        let best = feasible.remove(0);
        self.apply_alt(&best);
        let outcome = best.outcome;
        (outcome, if want_alts { feasible } else { Vec::new() })
    }

    /// Replays a recorded placement into the snapshot.
    pub(crate) fn apply_alt(&mut self, alt: &Alt) {
        for op in &alt.ops {
            match op {
                Replay::Assume(pod, node) => self.journal.assume_id(self.snap, *pod, *node),
                Replay::Allocate(claim, a) => self.journal.allocate(self.snap, *claim, a.clone()),
            }
        }
    }
}

/// `0/T <key> placements are available: <why>` (see [`PlacementMessage`]).
pub(crate) fn placements_message(key: &str, total: usize, failures: &[(String, String)]) -> String {
    PlacementMessage::from_failures(key, total, failures).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placement_failures_are_grouped_by_reason() {
        let f = |v: &str, m: &str| (v.to_string(), m.to_string());
        let msg = placements_message(
            "kwas.dev/rack",
            5,
            &[
                f(
                    "r1",
                    "minCount (4) cannot be satisfied: 0 scheduled, 3 remaining: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu.",
                ),
                f(
                    "r2",
                    "minCount (4) cannot be satisfied: 0 scheduled, 3 remaining: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu.",
                ),
                f("r3", "other"),
            ],
        );
        assert_eq!(
            msg,
            "0/5 kwas.dev/rack placements are available: kwas.dev/rack=r1, r2: minCount (4) cannot be satisfied: 0 scheduled, 3 remaining: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu.; kwas.dev/rack=r3: other"
        );
    }

    #[test]
    fn adaptive_limit_follows_upstream() {
        // 50 racks of 100 nodes: 10% of the placements.
        assert_eq!(placements_to_find(PlacementLimit::Adaptive, 50, 5000), 5);
        // Tiny clusters: everything.
        assert_eq!(placements_to_find(PlacementLimit::Adaptive, 4, 20), 4);
        // Huge: never below 5%, never below 1.
        assert_eq!(placements_to_find(PlacementLimit::Adaptive, 100, 50_000), 5);
        assert_eq!(placements_to_find(PlacementLimit::Adaptive, 2, 50_000), 1);
        assert_eq!(placements_to_find(PlacementLimit::ScoreAll, 50, 5000), 50);
        assert_eq!(placements_to_find(PlacementLimit::Percentage(50), 5, 10), 3);
    }
}
