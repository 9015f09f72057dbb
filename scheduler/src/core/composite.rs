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
//! With the admissibility pre-check, a child that can never reach its minimum (too few pods, too few
//! admissible children) counts as UnschedulableAndUnresolvable without being simulated, and a composite
//! that cannot reach its own minimum returns at once.
//!
//! With bounded backtracking, when the status turns Unschedulable or UnschedulableAndUnresolvable the
//! composite looks for the latest earlier sibling that has another feasible topology placement, moves
//! it there, and retries the siblings after it; each move costs one unit of the cycle's budget.

use super::cycle::{Cycle, Domain, Outcome};
use super::journal::Mark;
use super::model::{GroupKind, Policy};
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
        let mark = self.journal.mark();
        let mut states: Vec<ChildState> = Vec::new();
        while states.len() < total {
            let i = states.len();
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
                    if !self.greedy && matches!(policy, Policy::Gang { .. }) {
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
