//! The PodGroup cycle (KEP-4671 "Scheduling Algorithm", KEP-6012 leaf level).
//!
//! The pending pods of a leaf group are tried in order of priority (highest first), then first-seen
//! time. Each pod goes to the best-scored node of the current domain that passes the filters (see
//! [`equivalence`](super::equivalence) for how pods of one class share that work) and is assumed there
//! through the journal. After every pod PlacementFeasible is evaluated with `M` = `minCount` (1 for
//! Basic), `S` = pods placed now plus pods of the group already running, `R` = pods not tried yet,
//! `U` = pods that failed (at the leaf level every pod failure counts as `U`, per KEP-6012's note):
//! Success and Wait continue (greedily placing extras, or stopping at the minimum in the non-greedy
//! pass), Unschedulable and UnschedulableAndUnresolvable abort and revert the group's assumptions.

use std::collections::BTreeMap;

use super::cycle::{Cycle, Domain, Outcome};
use super::equivalence::{ClassId, Ranker};
use super::filters::{diagnosis, fits, insufficient};
use super::model::Policy;
use super::scores::node_score;
use super::status::{Code, Counts, placement_feasible};

/// Per-class ranking state within one attempt.
#[derive(Debug)]
pub(crate) struct RankerSlot {
    class: ClassId,
    ranker: Ranker,
    diagnosis: Option<String>,
}

impl Cycle<'_> {
    fn build_ranker(&mut self, class: ClassId, dom: &Domain) -> Ranker {
        let sid = self.snap.classes.classes[class as usize].static_id;
        self.snap.ensure_static(sid);
        let snap = &*self.snap;
        let entry = &snap.classes.classes[class as usize];
        let strategy = self.cfg.scoring;
        self.stats.nodes_evaluated += dom.nodes.len() as u64;
        let mut entries = Vec::with_capacity(dom.nodes.len());
        for &n in dom.nodes.iter() {
            if !snap.static_ok(sid, n) {
                continue;
            }
            let node = snap.node(n);
            if fits(&entry.requests, &node.allocatable, &node.requested) {
                entries.push((node_score(strategy, entry, node), node.rank, n, node.version));
            }
        }
        Ranker::from_entries(entries)
    }

    /// Why a pod fits no node of `dom`: upstream's `0/N nodes are available: ...`.
    pub(crate) fn diagnose(&mut self, pid: u32, dom: &Domain) -> String {
        let class = self.snap.pod(pid).class;
        let sid = self.snap.classes.classes[class as usize].static_id;
        self.snap.ensure_static(sid);
        let snap = &*self.snap;
        let entry = &snap.classes.classes[class as usize];
        let spec = &snap.classes.statics[sid as usize].spec;
        let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
        for &n in dom.nodes.iter() {
            let node = snap.node(n);
            let reject = match spec.check(&node.view()) {
                Err(r) => Some(r),
                Ok(()) => insufficient(&entry.requests, &node.allocatable, &node.requested, &snap.resources),
            };
            if let Some(r) = reject {
                *reasons.entry(r.message()).or_default() += 1;
            }
        }
        diagnosis(dom.nodes.len(), &reasons)
    }

    /// Places one pending pod on the best node of `dom` and assumes it there; `Err` is the diagnosis.
    pub(crate) fn place_pod(&mut self, pid: u32, dom: &Domain, rankers: &mut Vec<RankerSlot>) -> Result<u32, String> {
        let class = self.snap.pod(pid).class;
        let idx = match rankers.iter().position(|s| s.class == class) {
            Some(i) => i,
            None => {
                let ranker = self.build_ranker(class, dom);
                rankers.push(RankerSlot {
                    class,
                    ranker,
                    diagnosis: None,
                });
                rankers.len() - 1
            }
        };
        if rankers[idx].ranker.failed {
            return Err(rankers[idx].diagnosis.clone().unwrap_or_default());
        }
        let strategy = self.cfg.scoring;
        loop {
            let Some((_, rank, n, version)) = rankers[idx].ranker.pop() else {
                rankers[idx].ranker.failed = true;
                let d = self.diagnose(pid, dom);
                rankers[idx].diagnosis = Some(d.clone());
                return Err(d);
            };
            let snap = &*self.snap;
            let entry = &snap.classes.classes[class as usize];
            let node = snap.node(n);
            if node.version != version {
                self.stats.nodes_evaluated += 1;
                if fits(&entry.requests, &node.allocatable, &node.requested) {
                    rankers[idx]
                        .ranker
                        .push(node_score(strategy, entry, node), rank, n, node.version);
                }
                continue;
            }
            self.journal.assume_id(self.snap, pid, n);
            self.stats.nodes_evaluated += 1;
            let snap = &*self.snap;
            let entry = &snap.classes.classes[class as usize];
            let node = snap.node(n);
            if fits(&entry.requests, &node.allocatable, &node.requested) {
                rankers[idx]
                    .ranker
                    .push(node_score(strategy, entry, node), rank, n, node.version);
            }
            return Ok(n);
        }
    }

    /// Pending pods of a leaf group that this scheduler may place, in scheduling order, and the number of
    /// its pods that count as placed towards the minimum (running, assumed, placed earlier in this cycle,
    /// or `Succeeded`).
    pub(crate) fn leaf_members(&self, g: u32) -> (Vec<u32>, u32) {
        let snap = &*self.snap;
        let mut pending = Vec::new();
        let mut already = snap.succeeded_members(g);
        for &pid in snap.members(g) {
            let p = snap.pod(pid);
            if p.terminating {
                continue;
            }
            if p.placed_node().is_some() {
                already += 1;
            } else if p.schedulable_pending() && snap.responsible_for(&p.scheduler_name) {
                pending.push(pid);
            }
        }
        pending.sort_by(|a, b| {
            let (pa, pb) = (snap.pod(*a), snap.pod(*b));
            pb.priority.cmp(&pa.priority).then(pa.seen.cmp(&pb.seen))
        });
        (pending, already)
    }

    /// Order for the non-greedy pass: the minimum is secured with the smallest pods of the highest
    /// priority, placed largest first (first-fit decreasing); the other pods follow, smallest first.
    fn minimum_first_order(&self, pending: &mut [u32], needed: usize) {
        let snap = &*self.snap;
        let size = |p: u32| {
            let r = &snap.pod(p).requests;
            let mut v: Vec<i64> = r.0.iter().map(|(_, x)| *x).collect();
            v.insert(0, r.get(super::resources::MEMORY));
            v.insert(0, r.get(super::resources::CPU));
            v
        };
        pending.sort_by(|a, b| {
            let (pa, pb) = (snap.pod(*a), snap.pod(*b));
            pb.priority
                .cmp(&pa.priority)
                .then_with(|| size(*a).cmp(&size(*b)))
                .then(pa.seen.cmp(&pb.seen))
        });
        let needed = needed.min(pending.len());
        pending[..needed].reverse();
    }

    fn leaf_message(policy: Policy, c: Counts, first_failure: Option<&str>) -> String {
        match policy {
            Policy::Gang { min } => format!(
                "minCount ({min}) cannot be satisfied: {} scheduled, {} remaining",
                c.success, c.remaining
            ),
            Policy::Basic => match first_failure {
                Some(f) => f.to_string(),
                None => "no pods of the group are pending".to_string(),
            },
        }
    }

    /// The leaf cycle within one domain (see the module docs).
    pub(crate) fn place_leaf(&mut self, g: u32, dom: &Domain) -> Outcome {
        let policy = self.snap.group(g).policy;
        let min = policy.minimum();
        let (mut pending, already) = self.leaf_members(g);
        if !self.greedy {
            self.minimum_first_order(&mut pending, min.saturating_sub(already) as usize);
        }
        let mut counts = Counts {
            min,
            success: already,
            remaining: pending.len() as u32,
            unschedulable: 0,
            unresolvable: 0,
        };
        if self.cfg.admissibility_precheck && placement_feasible(counts) == Code::UnschedulableAndUnresolvable {
            self.stats.subtrees_skipped += 1;
            let mut o = Outcome::new(
                g,
                Code::UnschedulableAndUnresolvable,
                Self::leaf_message(policy, counts, None),
            );
            if policy == Policy::Basic {
                o.message = "no pods of the group are pending".to_string();
            }
            return o;
        }
        let mark = self.journal.mark();
        let mut rankers = Vec::new();
        let mut unplaced = Vec::new();
        for &pid in &pending {
            if !self.greedy && counts.success >= min {
                break;
            }
            counts.remaining -= 1;
            self.stats.pods_tried += 1;
            match self.place_pod(pid, dom, &mut rankers) {
                Ok(_) => counts.success += 1,
                Err(reason) => {
                    counts.unschedulable += 1;
                    unplaced.push((pid, reason));
                }
            }
            let code = placement_feasible(counts);
            if matches!(code, Code::Unschedulable | Code::UnschedulableAndUnresolvable) {
                self.journal.revert_to(self.snap, mark);
                let first = unplaced.first().map(|(_, m): &(u32, String)| m.as_str());
                let message = Self::leaf_message(policy, counts, first);
                // Every pending pod stays pending: failed ones keep their own reason, the others
                // (reverted or never tried) get the group's.
                let mut all_unplaced = unplaced;
                for &p in &pending {
                    if !all_unplaced.iter().any(|(x, _)| *x == p) {
                        all_unplaced.push((p, message.clone()));
                    }
                }
                let mut o = Outcome::new(g, code, message);
                o.unplaced = all_unplaced;
                return o;
            }
        }
        let code = placement_feasible(counts);
        if code != Code::Success {
            // No pending pods and too few placed (the loop never ran): nothing to revert.
            self.journal.revert_to(self.snap, mark);
            let message = Self::leaf_message(policy, counts, unplaced.first().map(|(_, m)| m.as_str()));
            let mut o = Outcome::new(g, code, message);
            o.unplaced = unplaced;
            return o;
        }
        let message = match policy {
            Policy::Gang { min } => format!("minCount ({min}) satisfied: {} scheduled", counts.success),
            Policy::Basic => format!("{} scheduled", counts.success),
        };
        let mut o = Outcome::new(g, Code::Success, message);
        o.unplaced = unplaced;
        o
    }
}
