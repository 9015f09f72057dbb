//! The recursive CompositePodGroup cycle (KEP-6012 `groupRecursiveSchedulingDefaultAlgorithm` and its
//! placement variant).
//!
//! A composite iterates its children in creation order (then name) and schedules each recursively in
//! the current domain; successful children keep their assumptions so later siblings see the consumed
//! capacity. After every child PlacementFeasible is evaluated with `M` = `minGroupCount` (1 for Basic),
//! `S` = children that returned Success, `R` = children not tried yet, `U` / `UU` = children that
//! returned Unschedulable / UnschedulableAndUnresolvable:
//!
//! - Success: continue greedily with the remaining children (or stop, in the non-greedy first pass of a
//!   gang composite);
//! - Wait: continue;
//! - Unschedulable / UnschedulableAndUnresolvable: abort, revert everything the composite assumed, and
//!   return the status to the parent.
//!
//! With [`SchedulerConfig::demand_ordered_minimums`], the non-greedy first pass stops at the minimum
//! for a Basic composite too (one child: the others are extras for the greedy pass), and takes the
//! children in another order: the `M` whose minimums need the smallest share of the domain's free
//! resources, the tightest of them first (a topology-constrained child measured against the roomiest
//! domain it may use), then the others. Placing the hardest minimum first, as first-fit decreasing
//! does for pods, keeps a large or rack-bound gang from finding its capacity taken by smaller siblings
//! that would have fit anywhere.
//!
//! [`SchedulerConfig::demand_ordered_minimums`]: super::config::SchedulerConfig::demand_ordered_minimums
//!
//! With the admissibility pre-check, a child that can never reach its minimum (too few pods, too few
//! admissible children) counts as UnschedulableAndUnresolvable without being simulated, and a composite
//! that cannot reach its own minimum returns at once.
//!
//! With bounded backtracking, when the status turns Unschedulable or UnschedulableAndUnresolvable the
//! composite looks for the latest earlier sibling that has another feasible topology placement, moves
//! it there, and retries the siblings after it; each move costs one unit of the cycle's budget.

use std::collections::BTreeMap;

use super::cycle::{Cycle, Domain, Outcome};
use super::journal::Mark;
use super::model::{GroupKind, Policy};
use super::resources::{CPU, MEMORY};
use super::status::{Code, Counts, placement_feasible};
use super::topology::Alt;

struct ChildState {
    before: Mark,
    outcome: Outcome,
    alts: Vec<Alt>,
}

impl Cycle<'_> {
    /// Schedules any group within `dom`, handling its topology constraint.
    pub(crate) fn schedule_group(&mut self, g: u32, dom: &Domain, want_alts: bool) -> (Outcome, Vec<Alt>) {
        match self.snap.group(g).topology_key.clone() {
            Some(key) => self.schedule_topology(g, &key, dom, want_alts),
            None => (self.schedule_inner(g, dom), Vec::new()),
        }
    }

    /// Schedules a group within a domain its own constraint is already resolved to.
    pub(crate) fn schedule_inner(&mut self, g: u32, dom: &Domain) -> Outcome {
        match self.snap.group(g).key.kind {
            GroupKind::PodGroup => self.place_leaf(g, dom),
            GroupKind::CompositePodGroup => self.place_composite(g, dom),
        }
    }

    /// See [`Snapshot::admissible`].
    pub(crate) fn admissible(&self, g: u32) -> bool {
        self.snap.admissible(g)
    }

    fn composite_message(&self, policy: Policy, c: Counts, last_child: Option<&Outcome>) -> String {
        let head = match policy {
            Policy::Gang { min } => format!(
                "minGroupCount ({min}) cannot be satisfied: {} scheduled, {} remaining",
                c.success, c.remaining
            ),
            Policy::Basic => "no child group could be scheduled".to_string(),
        };
        match last_child {
            Some(o) if o.code != Code::Success => format!("{head}: {}", self.blame(o)),
            _ => head,
        }
    }

    /// Names the member that stopped a parent, with its domain and its own explanation:
    /// `PodGroup ns/x in kwas.dev/rack=b0-r1: minCount (4) cannot be satisfied: ...`.
    pub(crate) fn blame(&self, o: &Outcome) -> String {
        let g = self.snap.group(o.group);
        let place = match (&g.topology_key, &o.domain) {
            (Some(k), Some(v)) => format!(" in {k}={v}"),
            _ => String::new(),
        };
        format!("{}{place}: {}", g.key, o.message)
    }

    fn counts(min: u32, total: usize, states: &[ChildState]) -> Counts {
        let mut c = Counts {
            min,
            remaining: (total - states.len()) as u32,
            ..Counts::default()
        };
        for s in states {
            match s.outcome.code {
                Code::Success => c.success += 1,
                Code::Unschedulable => c.unschedulable += 1,
                Code::UnschedulableAndUnresolvable => c.unresolvable += 1,
                Code::Wait => c.remaining += 1,
            }
        }
        c
    }

    /// The composite cycle within one domain (see the module docs).
    pub(crate) fn place_composite(&mut self, g: u32, dom: &Domain) -> Outcome {
        let policy = self.snap.group(g).policy;
        let min = policy.minimum();
        let children: Vec<u32> = self.snap.children(g).to_vec();
        let total = children.len();
        let precheck = self.cfg.admissibility_precheck;
        let mut inadmissible = vec![false; total];
        if precheck {
            for (i, c) in children.iter().enumerate() {
                inadmissible[i] = !self.admissible(*c);
            }
            let admissible = inadmissible.iter().filter(|x| !**x).count() as u32;
            if admissible < min {
                self.stats.subtrees_skipped += 1;
                let c = Counts {
                    min,
                    success: 0,
                    remaining: admissible,
                    unschedulable: 0,
                    unresolvable: total as u32 - admissible,
                };
                return Outcome::new(
                    g,
                    Code::UnschedulableAndUnresolvable,
                    format!(
                        "{}: not enough admissible child groups",
                        self.composite_message(policy, c, None)
                    ),
                );
            }
        }
        let want_alts = self.cfg.backtracking_limit > 0;
        // The greedy pass follows creation order (KEP-6012); the first pass secures the minimum with the
        // cheapest children, the largest of them first.
        let order: Vec<usize> = if self.greedy || !self.cfg.demand_ordered_minimums {
            (0..total).collect()
        } else {
            self.minimum_first_children(&children, min, &inadmissible, dom)
        };
        let mark = self.journal.mark();
        let mut states: Vec<ChildState> = Vec::new();
        while states.len() < total {
            let i = order.get(states.len()).copied().unwrap_or(states.len());
            let c = children[i];
            let before = self.journal.mark();
            let (outcome, alts) = if inadmissible[i] {
                self.stats.subtrees_skipped += 1;
                (
                    Outcome::new(
                        c,
                        Code::UnschedulableAndUnresolvable,
                        "not enough pods or child groups to ever reach the group's minimum".to_string(),
                    ),
                    Vec::new(),
                )
            } else {
                self.schedule_group(c, dom, want_alts)
            };
            states.push(ChildState { before, outcome, alts });
            let counts = Self::counts(min, total, &states);
            match placement_feasible(counts) {
                Code::Success => {
                    // The first pass stops at the minimum; with demand-ordered minimums a Basic
                    // composite too (one child): its other children are extras, for the greedy pass
                    // once every sibling's minimum is secured.
                    if !self.greedy && (self.cfg.demand_ordered_minimums || matches!(policy, Policy::Gang { .. })) {
                        break;
                    }
                }
                Code::Wait => {}
                code @ (Code::Unschedulable | Code::UnschedulableAndUnresolvable) => {
                    if self.backtrack(&mut states) {
                        continue;
                    }
                    let last = states.last().map(|s| &s.outcome);
                    let message = self.composite_message(policy, counts, last);
                    self.journal.revert_to(self.snap, mark);
                    let mut o = Outcome::new(g, code, message);
                    o.children = states.into_iter().map(|s| s.outcome).collect();
                    return o;
                }
            }
        }
        let counts = Self::counts(min, total, &states);
        let code = placement_feasible(counts);
        let mut o = if code == Code::Success {
            let message = match policy {
                Policy::Gang { min } => format!("minGroupCount ({min}) satisfied: {} scheduled", counts.success),
                Policy::Basic => format!("{} child groups scheduled", counts.success),
            };
            Outcome::new(g, Code::Success, message)
        } else {
            // Only reachable with no children at all.
            self.journal.revert_to(self.snap, mark);
            Outcome::new(g, code, self.composite_message(policy, counts, None))
        };
        o.children = states.into_iter().map(|s| s.outcome).collect();
        o
    }

    /// The first pass's order of a composite's children, as indexes into `children`: the `min` children
    /// whose minimums need the smallest share of `dom`'s free resources, tightest first (first-fit
    /// decreasing, as a leaf secures its minimum), then the other admissible children smallest first,
    /// then the inadmissible ones. Ties keep creation order. A child with a topology constraint is as
    /// tight as its minimum's share of the roomiest domain it may use, so a rack-bound gang goes before
    /// a larger unconstrained sibling that would otherwise spread over every rack.
    fn minimum_first_children(&self, children: &[u32], min: u32, inadmissible: &[bool], dom: &Domain) -> Vec<usize> {
        let free = self.free_resources(dom.nodes.iter().copied());
        let demand: Vec<Vec<i64>> = children.iter().map(|c| self.minimum_demand(*c, &free)).collect();
        let share: Vec<f64> = demand.iter().map(|d| dominant_share(d, &free)).collect();
        let mut domains: Vec<(&str, Vec<Vec<i64>>)> = Vec::new();
        let mut tight = share.clone();
        for (i, &c) in children.iter().enumerate() {
            let Some(key) = self.snap.group(c).topology_key.as_deref() else {
                continue;
            };
            if !domains.iter().any(|(k, _)| *k == key) {
                domains.push((key, self.domain_free(key, dom)));
            }
            if let Some((_, frees)) = domains.iter().find(|(k, _)| *k == key) {
                tight[i] = frees
                    .iter()
                    .map(|f| dominant_share(&demand[i], f))
                    .fold(f64::INFINITY, f64::min);
            }
        }
        let mut admissible: Vec<usize> = (0..children.len())
            .filter(|i| !inadmissible.get(*i).copied().unwrap_or(false))
            .collect();
        admissible.sort_by(|a, b| share[*a].total_cmp(&share[*b]).then(a.cmp(b)));
        let m = (min as usize).min(admissible.len());
        let (chosen, rest) = admissible.split_at(m);
        let mut order: Vec<usize> = chosen.to_vec();
        order.sort_by(|a, b| tight[*b].total_cmp(&tight[*a]).then(a.cmp(b)));
        order.extend_from_slice(rest);
        order.extend((0..children.len()).filter(|i| inadmissible.get(*i).copied().unwrap_or(false)));
        order
    }

    /// Free resources of `nodes`, indexed by resource.
    pub(super) fn free_resources(&self, nodes: impl Iterator<Item = u32>) -> Vec<i64> {
        let snap = &*self.snap;
        let mut free = vec![0i64; snap.resources.len()];
        for n in nodes {
            let node = snap.node(n);
            for (r, f) in free.iter_mut().enumerate() {
                let a = node.allocatable.get(r).copied().unwrap_or(0);
                let u = node.requested.get(r).copied().unwrap_or(0);
                *f = f.saturating_add(a.saturating_sub(u).max(0));
            }
        }
        free
    }

    /// Free resources of every domain of `key` within `dom` (nodes without the label belong to none).
    fn domain_free(&self, key: &str, dom: &Domain) -> Vec<Vec<i64>> {
        let snap = &*self.snap;
        let mut by_value: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
        for &n in dom.nodes.iter() {
            if let Some(v) = snap.node(n).labels.get(key) {
                by_value.entry(v.as_str()).or_default().push(n);
            }
        }
        by_value
            .into_values()
            .map(|nodes| self.free_resources(nodes.into_iter()))
            .collect()
    }

    /// The resources group `g` still needs for its minimum, indexed by resource: the smallest pending
    /// pods of the highest priority a leaf lacks, the `minGroupCount` children of a composite that take
    /// the smallest share of `free`.
    fn minimum_demand(&self, g: u32, free: &[i64]) -> Vec<i64> {
        let snap = &*self.snap;
        let group = snap.group(g);
        let min = group.policy.minimum() as usize;
        let mut demand = vec![0i64; free.len()];
        match group.key.kind {
            GroupKind::PodGroup => {
                let (mut pending, already) = self.leaf_members(g);
                let needed = min.saturating_sub(already as usize);
                pending.sort_by_key(|p| {
                    let pod = snap.pod(*p);
                    (
                        std::cmp::Reverse(pod.priority),
                        pod.requests.get(CPU),
                        pod.requests.get(MEMORY),
                    )
                });
                for &p in pending.iter().take(needed) {
                    for &(r, x) in &snap.pod(p).requests.0 {
                        if let Some(d) = demand.get_mut(r as usize) {
                            *d = d.saturating_add(x);
                        }
                    }
                }
            }
            GroupKind::CompositePodGroup => {
                let mut kids: Vec<(f64, Vec<i64>)> = snap
                    .children(g)
                    .iter()
                    .map(|c| {
                        let d = self.minimum_demand(*c, free);
                        (dominant_share(&d, free), d)
                    })
                    .collect();
                kids.sort_by(|a, b| a.0.total_cmp(&b.0));
                for (_, d) in kids.iter().take(min) {
                    for (t, x) in demand.iter_mut().zip(d) {
                        *t = t.saturating_add(*x);
                    }
                }
            }
        }
        demand
    }

    /// Moves the latest sibling that has an alternative placement to it and drops the states after it.
    fn backtrack(&mut self, states: &mut Vec<ChildState>) -> bool {
        if self.backtracks_left == 0 {
            return false;
        }
        let Some(j) = states.iter().rposition(|s| !s.alts.is_empty()) else {
            return false;
        };
        self.backtracks_left -= 1;
        self.stats.backtracks += 1;
        let before = states[j].before;
        self.journal.revert_to(self.snap, before);
        let alt = states[j].alts.remove(0);
        self.apply_alt(&alt);
        let rest = std::mem::take(&mut states[j].alts);
        states.truncate(j);
        states.push(ChildState {
            before,
            outcome: alt.outcome,
            alts: rest,
        });
        true
    }
}

/// The largest fraction of a free resource that `demand` takes (above 1 when it does not fit).
fn dominant_share(demand: &[i64], free: &[i64]) -> f64 {
    demand
        .iter()
        .zip(free)
        .filter(|(d, _)| **d > 0)
        .map(|(d, f)| if *f <= 0 { f64::INFINITY } else { *d as f64 / *f as f64 })
        .fold(0.0, f64::max)
}
