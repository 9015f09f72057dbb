//! The state of one scheduling cycle: the snapshot being changed, the journal of tentative placements,
//! the configuration and counters ([`Cycle`]), the domain a group is confined to ([`Domain`]) and what
//! happened to a group in one attempt ([`Outcome`]). The algorithm's steps are methods on [`Cycle`] in
//! the modules above it: `podgroup` (leaves), `topology` (placements), `composite` (the recursion),
//! `scheduler` (a whole cycle).

use std::rc::Rc;

use super::config::SchedulerConfig;
use super::journal::Journal;
use super::outcome::{CycleStats, Rejection};
use super::snapshot::Snapshot;
use super::status::Code;

/// A set of nodes a group is confined to, in name order.
#[derive(Debug, Clone)]
pub(crate) struct Domain {
    pub nodes: Rc<[u32]>,
    /// True when this is the whole cluster (lets topology use its cached index).
    pub whole: bool,
}

impl Domain {
    pub(crate) fn whole(snap: &Snapshot) -> Self {
        Self {
            nodes: snap.node_order.clone().into(),
            whole: true,
        }
    }
}

/// What happened to one group in one attempt.
#[derive(Debug, Clone)]
pub(crate) struct Outcome {
    pub group: u32,
    pub code: Code,
    pub message: String,
    /// The topology domain value chosen for this group, if it has a constraint.
    pub domain: Option<String>,
    pub children: Vec<Outcome>,
    /// Leaf: pending pods that could not be placed, with the reason.
    pub unplaced: Vec<(u32, String)>,
    /// How the failure is reported (inter-pod dependencies, something not honoured).
    pub rejection: Rejection,
}

impl Outcome {
    pub(crate) fn new(group: u32, code: Code, message: String) -> Self {
        Self {
            group,
            code,
            message,
            domain: None,
            children: Vec::new(),
            unplaced: Vec::new(),
            rejection: Rejection::Unschedulable,
        }
    }
}

pub(crate) struct Cycle<'a> {
    pub snap: &'a mut Snapshot,
    pub journal: Journal,
    pub cfg: SchedulerConfig,
    pub greedy: bool,
    pub backtracks_left: u32,
    pub stats: CycleStats,
    /// Only whether the unit fits matters (preemption's trial placements): a pod that fits no node
    /// fails without the per-node diagnosis.
    pub quiet: bool,
    /// The dynamic state of the last pod placed, updated for its own placement, with the journal's
    /// generation then: the next pending pod of the same template starts from it
    /// ([`Cycle::prepared_for`](super::podgroup)) instead of recomputing its PreFilter.
    pub(crate) reuse: Option<(u32, u64, super::dynamic::Prepared)>,
}

impl<'a> Cycle<'a> {
    pub(crate) fn new(snap: &'a mut Snapshot, cfg: SchedulerConfig) -> Self {
        snap.dra.budget.start_cycle(cfg.dra_pod_budget, cfg.dra_cycle_budget);
        Self {
            snap,
            journal: Journal::new(),
            greedy: true,
            backtracks_left: cfg.backtracking_limit,
            cfg,
            stats: CycleStats::default(),
            quiet: false,
            reuse: None,
        }
    }

    pub(crate) fn walk(&self, g: u32, f: &mut dyn FnMut(&Snapshot, u32)) {
        let mut stack = vec![g];
        while let Some(id) = stack.pop() {
            f(self.snap, id);
            for &c in self.snap.children(id).iter().rev() {
                stack.push(c);
            }
        }
    }
}
