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
use super::outcome::Rejection;
use super::scores::balanced_allocation::balanced;
use super::scores::node_score;
use super::status::{Code, Counts, placement_feasible};

/// Why a pod could not be placed: upstream's diagnosis, and whether every node rejected it with
/// UnschedulableAndUnresolvable (preemption cannot help).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    pub message: String,
    pub unresolvable: bool,
    /// The pod uses something this scheduler cannot honour (reported as [`Rejection::Unsupported`]).
    pub unsupported: bool,
}

/// The filter reason of a DynamicResources rejection.
fn dra_reject(r: super::snapshot::dra::DraReject) -> super::framework::Reject {
    use super::framework::Reject;
    use super::snapshot::dra::DraReject;
    match r {
        DraReject::NotAvailable => Reject::ClaimNotAvailable,
        DraReject::CannotAllocate => Reject::CannotAllocate,
        DraReject::ClassNotFound(c) => Reject::DeviceClassNotFound(c),
        DraReject::Cel(e) => Reject::Cel(e),
        DraReject::TooMany(m) => Reject::DeviceLimit(m),
        DraReject::Budget(m) => Reject::AllocationBudget(m),
    }
}

/// [`Cycle::class_score`] with what does not depend on the node decided once.
struct ClassScorer {
    strategy: super::config::ScoringStrategy,
    weights: super::config::ScoreWeights,
    /// The static (preferred node affinity, taint) scores differ between nodes.
    static_varies: bool,
}

impl ClassScorer {
    #[inline]
    fn new(cycle: &Cycle<'_>, entry: &super::equivalence::ClassEntry) -> Self {
        let static_varies = cycle
            .snap
            .classes
            .statics
            .get(entry.static_id as usize)
            .is_some_and(|e| e.max_raw != (0, 0));
        Self {
            strategy: cycle.cfg.scoring,
            weights: cycle.cfg.weights,
            static_varies,
        }
    }

    #[inline(always)]
    fn score(&self, snap: &super::snapshot::Snapshot, entry: &super::equivalence::ClassEntry, n: u32) -> i64 {
        let node = snap.node(n);
        let w = &self.weights;
        let mut score = w.node_resources_fit * node_score(self.strategy, entry, node);
        if w.balanced_allocation != 0 {
            score += w.balanced_allocation * balanced(entry, node);
        }
        if self.static_varies {
            score += super::scores::static_score(snap, entry.static_id, n, w);
        }
        score
    }
}

/// Per-class ranking state within one attempt.
#[derive(Debug)]
pub(crate) struct RankerSlot {
    class: ClassId,
    /// The fewest free devices a node needs (pods with simple claims; see `Snapshot::simple_claims`).
    devices: Option<usize>,
    ranker: Ranker,
    diagnosis: Option<Failure>,
    /// Nodes the last pod's filters refused, kept out of the ranking while the next pod continues its
    /// dynamic state (see [`Cycle::place_pod`]), with the journal's generation after that pod's
    /// placement.
    aside: Vec<(i64, u32, u32, u64)>,
    aside_generation: Option<u64>,
}

impl Cycle<'_> {
    /// The node score of the plugins that depend only on the node and the pod's class: resource fit,
    /// balanced allocation, preferred node affinity, `PreferNoSchedule` taints; weighted.
    #[inline]
    pub(crate) fn class_score(&self, class: ClassId, n: u32) -> i64 {
        let snap = &*self.snap;
        let entry = &snap.classes.classes[class as usize];
        ClassScorer::new(self, entry).score(snap, entry, n)
    }

    fn build_ranker(&mut self, class: ClassId, dom: &Domain, devices: Option<usize>) -> Ranker {
        let sid = self.snap.classes.classes[class as usize].static_id;
        self.snap.ensure_static(sid);
        // Nodes with too few free devices are left out before scoring.
        let device_ok: Option<Vec<bool>> = devices.filter(|need| *need > 0).map(|need| {
            let shared = self.snap.dra.free_shared();
            let mut ok = vec![false; self.snap.node_slots()];
            for &n in dom.nodes.iter() {
                if let Some(slot) = ok.get_mut(n as usize) {
                    *slot = self.snap.has_free_devices(n, need, shared);
                }
            }
            ok
        });
        let snap = &*self.snap;
        let entry = &snap.classes.classes[class as usize];
        self.stats.nodes_evaluated += dom.nodes.len() as u64;
        // The hot loop of every gang attempt: what does not depend on the node is decided once, and
        // nodes whose version has not moved since this class last ranked them keep their score.
        let scorer = ClassScorer::new(self, entry);
        let key = (self.cfg.scoring, self.cfg.weights, snap.node_epoch);
        let slots = snap.node_slots();
        let mut cache = self.snap.classes.take_score_cache(class, key, slots);
        let snap = &*self.snap;
        let entry = &snap.classes.classes[class as usize];
        let mut entries = Vec::with_capacity(dom.nodes.len());
        for &n in dom.nodes.iter() {
            if !snap.static_ok(sid, n)
                || device_ok
                    .as_ref()
                    .is_some_and(|ok| !ok.get(n as usize).copied().unwrap_or(false))
            {
                continue;
            }
            let node = snap.node(n);
            if fits(&entry.requests, &node.allocatable, &node.requested) {
                let tag = node.version.wrapping_add(1);
                let score = match cache.get_mut(n as usize) {
                    Some(c) if c.0 == tag => c.1,
                    Some(c) => {
                        let s = scorer.score(snap, entry, n);
                        *c = (tag, s);
                        s
                    }
                    None => scorer.score(snap, entry, n),
                };
                entries.push((score, node.rank, n, node.version));
            }
        }
        self.snap.classes.put_score_cache(class, cache);
        Ranker::from_entries(entries)
    }

    /// Why a pod fits no node of `dom`: upstream's `0/N nodes are available: ...`, with the dynamic
    /// filters' reasons when the pod has dynamic constraints. A quiet cycle gets no reasons.
    pub(crate) fn diagnose(&mut self, pid: u32, dom: &Domain, prepared: Option<&super::dynamic::Prepared>) -> Failure {
        if self.quiet {
            return Failure {
                message: String::new(),
                unresolvable: false,
                unsupported: false,
            };
        }
        let class = self.snap.pod(pid).class;
        let sid = self.snap.classes.classes[class as usize].static_id;
        self.snap.ensure_static(sid);
        let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
        let mut unresolvable = true;
        let claims = prepared.map(|p| p.claims.as_slice()).unwrap_or(&[]);
        for &n in dom.nodes.iter() {
            let reject = {
                let snap = &*self.snap;
                let entry = &snap.classes.classes[class as usize];
                let spec = &snap.classes.statics[sid as usize].spec;
                let node = snap.node(n);
                match spec.check(&node.view()) {
                    Err(r) => Some(r),
                    Ok(()) => insufficient(&entry.requests, &node.allocatable, &node.requested, &snap.resources)
                        .or_else(|| prepared.and_then(|p| p.check(snap, n).err())),
                }
            };
            let reject = match reject {
                None if !claims.is_empty() => self.snap.dra_fit(claims, n).err().map(dra_reject),
                other => other,
            };
            if let Some(super::framework::Reject::AllocationBudget(message)) = reject {
                return Failure {
                    message,
                    unresolvable: false,
                    unsupported: false,
                };
            }
            if let Some(r) = reject {
                unresolvable &= r.unresolvable();
                *reasons.entry(r.message()).or_default() += 1;
            }
        }
        Failure {
            message: diagnosis(dom.nodes.len(), &reasons),
            unresolvable,
            unsupported: false,
        }
    }

    /// Places a pod with dynamic constraints (see [`super::dynamic`]): filters and scores every node of
    /// `dom` against the cluster as it is now.
    fn place_pod_dynamic(&mut self, pid: u32, dom: &Domain) -> Result<u32, Failure> {
        let prepared = self.snap.prepare_dynamic_indexed(pid);
        self.place_pod_prepared(pid, dom, &prepared)
    }

    /// [`Cycle::place_pod_dynamic`] with the pod's dynamic state already computed.
    fn place_pod_prepared(
        &mut self,
        pid: u32,
        dom: &Domain,
        prepared: &super::dynamic::Prepared,
    ) -> Result<u32, Failure> {
        let class = self.snap.pod(pid).class;
        let sid = self.snap.classes.classes[class as usize].static_id;
        self.snap.ensure_static(sid);
        if let Some(message) = prepared.unsupported.clone() {
            return Err(Failure {
                message,
                unresolvable: true,
                unsupported: true,
            });
        }
        if let Some(message) = prepared.pod_error.clone() {
            return Err(Failure {
                message,
                unresolvable: true,
                unsupported: false,
            });
        }
        self.stats.nodes_evaluated += dom.nodes.len() as u64;
        let mut candidates: Vec<(u32, i64)> = Vec::new();
        {
            let snap = &*self.snap;
            let entry = &snap.classes.classes[class as usize];
            for &n in dom.nodes.iter() {
                if !snap.static_ok(sid, n) {
                    continue;
                }
                let node = snap.node(n);
                if !fits(&entry.requests, &node.allocatable, &node.requested) || prepared.check(snap, n).is_err() {
                    continue;
                }
                candidates.push((n, self.class_score(class, n)));
            }
        }
        // DynamicResources last: its allocation search is the costliest filter. Scores normalized over
        // the feasible nodes (inter-pod affinity, spread) need every node filtered first; otherwise the
        // nodes are tried best first and the first that fits is the one a full filter would pick.
        // The pod's allocation budget is shared by every node tried; once it is spent the pod fails
        // with the claim named, without trying further nodes.
        let has_claims = !prepared.claims.is_empty();
        if has_claims {
            self.snap.dra.budget.start_pod();
        }
        let over_budget = |message: String| Failure {
            message,
            unresolvable: false,
            unsupported: false,
        };
        if has_claims && prepared.scores_anything() {
            let mut kept = Vec::with_capacity(candidates.len());
            for (n, score) in candidates {
                match self.snap.dra_fit(&prepared.claims, n) {
                    Ok(_) => kept.push((n, score)),
                    Err(super::snapshot::dra::DraReject::Budget(m)) => return Err(over_budget(m)),
                    Err(_) => {}
                }
            }
            candidates = kept;
        }
        if candidates.is_empty() {
            return Err(self.diagnose(pid, dom, Some(prepared)));
        }
        let snap = &*self.snap;
        if prepared.scores_anything() {
            let w = self.cfg.weights;
            let affinity: Vec<i64> = candidates.iter().map(|(n, _)| prepared.affinity_raw(*n)).collect();
            let spread: Vec<Option<f64>> = candidates.iter().map(|(n, _)| prepared.spread_raw(*n)).collect();
            let affinity = super::dynamic::normalize_affinity(&affinity);
            let spread = super::dynamic::normalize_spread(&spread);
            for (i, c) in candidates.iter_mut().enumerate() {
                c.1 += w.inter_pod_affinity * affinity[i] + w.pod_topology_spread * spread[i];
            }
        }
        // Best first: highest score, then the node name that sorts first.
        candidates.sort_by(|a, b| b.1.cmp(&a.1).then(snap.node(a.0).rank.cmp(&snap.node(b.0).rank)));
        let mut chosen = None;
        for &(n, _) in &candidates {
            if !has_claims {
                chosen = Some((n, Vec::new()));
                break;
            }
            // DynamicResources Reserve: the claims not allocated yet get their devices on this node.
            match self.snap.dra_fit(&prepared.claims, n) {
                Ok(a) => {
                    chosen = Some((n, a));
                    break;
                }
                Err(super::snapshot::dra::DraReject::Budget(m)) => return Err(over_budget(m)),
                Err(_) => {}
            }
        }
        let Some((n, allocations)) = chosen else {
            return Err(self.diagnose(pid, dom, Some(prepared)));
        };
        self.journal.assume_id(self.snap, pid, n);
        for (claim, a) in allocations {
            self.journal.allocate(self.snap, claim, a);
        }
        Ok(n)
    }

    /// Whether node `n` has at least `need` free devices (always, without a need).
    fn devices_fit(&mut self, n: u32, need: Option<usize>) -> bool {
        let Some(need) = need.filter(|n| *n > 0) else {
            return true;
        };
        let shared = self.snap.dra.free_shared();
        self.snap.has_free_devices(n, need, shared)
    }

    /// Places one pending pod on the best node of `dom` and assumes it there; `Err` is the diagnosis.
    /// A pod with simple claims ([`Snapshot::simple_claims`](super::snapshot::Snapshot)) stays on its
    /// class's ranking: nodes are popped best first as the per-pod path would try them, each allocated
    /// on by the allocator; nodes it refuses are set aside for this pod only. When none is left the
    /// per-pod path decides (and explains) the failure.
    pub(crate) fn place_pod(&mut self, pid: u32, dom: &Domain, rankers: &mut Vec<RankerSlot>) -> Result<u32, Failure> {
        #[cfg(test)]
        if tests::PER_POD.with(std::cell::Cell::get) && self.snap.needs_dynamic(pid) {
            return self.place_pod_dynamic(pid, dom);
        }
        if !self.snap.needs_dynamic(pid) {
            return self.place_pod_ranked(pid, dom, rankers, None);
        }
        let (prepared, continued) = self.prepared_for(pid);
        let placed = self.place_pod_ranked(pid, dom, rankers, Some((&prepared, continued)));
        if let Ok(n) = placed
            && self.snap.pod(pid).claims.is_empty()
            && prepared.unsupported.is_none()
            && prepared.pod_error.is_none()
        {
            let mut prepared = prepared;
            self.snap.add_placed(&mut prepared, pid, pid, n);
            self.reuse = Some((pid, self.journal.generation(), prepared));
        }
        placed
    }

    /// The dynamic state of pending pod `pid` (upstream's PreFilter): the last placed pod's, updated for
    /// that placement ([`Snapshot::add_placed`](super::snapshot::Snapshot)), when nothing else changed in
    /// the snapshot since (the journal's generation) and `pid` is of the same template: class,
    /// namespace, labels and constraints equal, no ResourceClaims. A gang's members (one pod template)
    /// so pay for the PreFilter's walk over every matching pod once per gang, not once per member.
    /// Otherwise it is computed anew. The flag says whether the state was continued.
    fn prepared_for(&mut self, pid: u32) -> (super::dynamic::Prepared, bool) {
        if let Some((prev, generation, prepared)) = self.reuse.take()
            && generation == self.journal.generation()
            && prev != pid
        {
            let (a, b) = (self.snap.pod(prev), self.snap.pod(pid));
            let same_spec = match (&a.dynamic, &b.dynamic) {
                (Some(x), Some(y)) => std::sync::Arc::ptr_eq(x, y) || x == y,
                (None, None) => true,
                _ => false,
            };
            if same_spec
                && b.placed_node().is_none()
                && b.claims.is_empty()
                && a.class == b.class
                && a.key.namespace == b.key.namespace
                && a.labels == b.labels
            {
                return (prepared, true);
            }
        }
        (self.snap.prepare_dynamic_indexed(pid), false)
    }

    /// [`Cycle::place_pod`] once the pod's dynamic state (if it has dynamic constraints) is known, and
    /// whether that state continues the last placed pod's.
    fn place_pod_ranked(
        &mut self,
        pid: u32,
        dom: &Domain,
        rankers: &mut Vec<RankerSlot>,
        prepared: Option<(&super::dynamic::Prepared, bool)>,
    ) -> Result<u32, Failure> {
        let continued = prepared.is_some_and(|p| p.1);
        let prepared = prepared.map(|p| p.0);
        // A pod with dynamic constraints that score nothing (required inter-pod terms, hard spread
        // constraints, ports, volumes, claims) stays on the ranking: its filters run on each node
        // popped, best first, as the per-pod path would try them.
        let (claims, devices) = match prepared {
            Some(prepared) => {
                if prepared.unsupported.is_some() || prepared.pod_error.is_some() || prepared.scores_anything() {
                    return self.place_pod_prepared(pid, dom, prepared);
                }
                let claims = prepared.claims.clone();
                let devices = (!claims.is_empty()).then(|| self.snap.devices_needed(&claims));
                (claims, devices)
            }
            None => (Vec::new(), None),
        };
        let class = self.snap.pod(pid).class;
        let idx = match rankers.iter().position(|s| s.class == class && s.devices == devices) {
            Some(i) => i,
            None => {
                let ranker = self.build_ranker(class, dom, devices);
                rankers.push(RankerSlot {
                    class,
                    devices,
                    ranker,
                    diagnosis: None,
                    aside: Vec::new(),
                    aside_generation: None,
                });
                rankers.len() - 1
            }
        };
        if rankers[idx].ranker.failed {
            for (score, rank, n, version) in std::mem::take(&mut rankers[idx].aside) {
                rankers[idx].ranker.push(score, rank, n, version);
            }
            if let Some(prepared) = prepared {
                return self.place_pod_prepared(pid, dom, prepared);
            }
            return Err(rankers[idx].diagnosis.clone().unwrap_or(Failure {
                message: String::new(),
                unresolvable: false,
                unsupported: false,
            }));
        }
        // The nodes the last pod's filters refused: a pod continuing its state (the same template, only
        // that pod placed since) checks them again without the heap (a gang with anti-affinity would
        // otherwise pop every node its earlier members and every earlier gang took, per member); any
        // other pod gets them back in the ranking.
        let mut aside: Vec<(i64, u32, u32, u64)> = Vec::new();
        let kept = std::mem::take(&mut rankers[idx].aside);
        let carried = continued && rankers[idx].aside_generation == Some(self.journal.generation());
        rankers[idx].aside_generation = None;
        for (score, rank, n, version) in kept {
            match prepared {
                Some(p) if carried && p.check(self.snap, n).is_err() => aside.push((score, rank, n, version)),
                _ => rankers[idx].ranker.push(score, rank, n, version),
            }
        }
        if devices.is_some() {
            self.snap.dra.budget.start_pod();
        }
        // Nodes this pod's filters or the allocator refused (they may suit the class's next pod).
        let result = loop {
            let Some((score, rank, n, version)) = rankers[idx].ranker.pop() else {
                if prepared.is_some() {
                    break None;
                }
                rankers[idx].ranker.failed = true;
                let d = self.diagnose(pid, dom, None);
                rankers[idx].diagnosis = Some(d.clone());
                return Err(d);
            };
            let snap = &*self.snap;
            let entry = &snap.classes.classes[class as usize];
            let node = snap.node(n);
            if node.version != version {
                self.stats.nodes_evaluated += 1;
                if fits(&entry.requests, &node.allocatable, &node.requested) && self.devices_fit(n, devices) {
                    let (score, version) = (self.class_score(class, n), self.snap.node(n).version);
                    rankers[idx].ranker.push(score, rank, n, version);
                }
                continue;
            }
            if let Some(p) = &prepared
                && p.check(self.snap, n).is_err()
            {
                aside.push((score, rank, n, version));
                continue;
            }
            let mut allocations = Vec::new();
            if devices.is_some() {
                if !self.devices_fit(n, devices) {
                    aside.push((score, rank, n, version));
                    continue;
                }
                match self.snap.dra_fit(&claims, n) {
                    Ok(a) => allocations = a,
                    Err(super::snapshot::dra::DraReject::Budget(m)) => {
                        break Some(Err(Failure {
                            message: m,
                            unresolvable: false,
                            unsupported: false,
                        }));
                    }
                    Err(_) => {
                        aside.push((score, rank, n, version));
                        continue;
                    }
                }
            }
            self.journal.assume_id(self.snap, pid, n);
            for (claim, a) in allocations {
                self.journal.allocate(self.snap, claim, a);
            }
            self.stats.nodes_evaluated += 1;
            let snap = &*self.snap;
            let entry = &snap.classes.classes[class as usize];
            let node = snap.node(n);
            if fits(&entry.requests, &node.allocatable, &node.requested) && self.devices_fit(n, devices) {
                let (score, version) = (self.class_score(class, n), self.snap.node(n).version);
                rankers[idx].ranker.push(score, rank, n, version);
            }
            break Some(Ok(n));
        };
        // Refused by the filters only (no claims), after a placement: kept for the next pod of the
        // template; otherwise back in the ranking.
        if devices.is_none() && prepared.is_some() && matches!(result, Some(Ok(_))) {
            rankers[idx].aside = aside;
            rankers[idx].aside_generation = Some(self.journal.generation());
        } else {
            for (score, rank, n, version) in aside {
                rankers[idx].ranker.push(score, rank, n, version);
            }
        }
        match (result, prepared) {
            (Some(r), _) => r,
            // Every node refused: the per-pod path says why (and finds nothing the ranking missed).
            (None, Some(prepared)) => self.place_pod_prepared(pid, dom, prepared),
            (None, None) => self.place_pod_dynamic(pid, dom),
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

    /// A leaf's failure: the gang's counts, then why its first failing pod fits no node (upstream's
    /// `0/N nodes are available: ...`).
    fn leaf_message(policy: Policy, c: Counts, first_failure: Option<&str>) -> String {
        match (policy, first_failure) {
            (Policy::Gang { min }, Some(f)) => format!(
                "minCount ({min}) cannot be satisfied: {} scheduled, {} remaining: {f}",
                c.success, c.remaining
            ),
            (Policy::Gang { min }, None) => format!(
                "minCount ({min}) cannot be satisfied: {} scheduled, {} remaining",
                c.success, c.remaining
            ),
            (Policy::Basic, Some(f)) => f.to_string(),
            (Policy::Basic, None) => "no pods of the group are pending".to_string(),
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
        let mut rejection = if pending
            .iter()
            .any(|p| self.snap.pod(*p).dynamic.as_ref().is_some_and(|d| d.inter_pod()))
        {
            Rejection::NotGuaranteed
        } else {
            Rejection::Unschedulable
        };
        for &pid in &pending {
            if !self.greedy && counts.success >= min {
                break;
            }
            counts.remaining -= 1;
            self.stats.pods_tried += 1;
            match self.place_pod(pid, dom, &mut rankers) {
                Ok(_) => counts.success += 1,
                Err(f) => {
                    // Pod-level UnschedulableAndUnresolvable propagates (KEP-6012's Beta plan), so a
                    // gang no preemption can help is not preempted for.
                    if f.unsupported {
                        rejection = Rejection::Unsupported;
                    }
                    if f.unresolvable {
                        counts.unresolvable += 1;
                    } else {
                        counts.unschedulable += 1;
                    }
                    unplaced.push((pid, f.message));
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
                o.rejection = rejection;
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
            o.rejection = rejection;
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

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    thread_local! {
        /// Pods with dynamic constraints take the per-pod path (the reference the ranking must match).
        pub(super) static PER_POD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }

    /// A cluster of `nodes` (cpu, devices) and a history of pods (plain or gangs of two) with 0-2
    /// claims of one device each (every claim named in the pod's status) and, by the bits of their
    /// second number, a label, required anti-affinity and a hard spread; returns every placement and
    /// allocation, in order.
    fn claims_history(nodes: &[(u8, u8)], pods: &[(u8, u8, bool)], per_pod: bool) -> Vec<String> {
        PER_POD.with(|c| c.set(per_pod));
        let mut snap = Snapshot::new();
        for (i, (cpu, devices)) in nodes.iter().enumerate() {
            let name = format!("n{i}");
            let zone = format!("z{}", i % 2);
            snap.upsert_node(&node(
                &name,
                &format!("{}", 1 + cpu % 4),
                "8Gi",
                &[("kubernetes.io/hostname", name.as_str()), ("zone", zone.as_str())],
            ))
            .unwrap();
            // Devices of two kinds: a claim of class `a` takes only the first kind, so a node with free
            // devices may still refuse it (the ranking sets such a node aside for that pod).
            let devs: Vec<_> = (0..devices % 5)
                .map(|d| json!({"name": format!("d{d}"), "attributes": {"kind": {"string": if (d + devices / 5) % 2 == 0 { "a" } else { "b" }}}}))
                .collect();
            snap.upsert_resource_slice(
                &serde_json::from_value(json!({"metadata": {"name": format!("{name}-s")},
                    "spec": {"driver": "x.dev", "nodeName": name, "pool": {"name": name, "generation": 1, "resourceSliceCount": 1}, "devices": devs}}))
                .unwrap(),
            );
        }
        snap.upsert_device_class(
            &serde_json::from_value(json!({"metadata": {"name": "x"},
                "spec": {"selectors": [{"cel": {"expression": "device.driver == \"x.dev\""}}]}}))
            .unwrap(),
        );
        snap.upsert_device_class(
            &serde_json::from_value(json!({"metadata": {"name": "a"},
                "spec": {"selectors": [{"cel": {"expression": "device.attributes[\"x.dev\"].kind == \"a\""}}]}}))
            .unwrap(),
        );
        let mut log = Vec::new();
        let add = |snap: &mut Snapshot, name: &str, group: Option<&str>, cpu: u8, claims: u8, flip: u8| {
            let mut p = serde_json::to_value(crate::core::testing::pod_with(
                "ns",
                name,
                group,
                &[("cpu", &format!("{}m", 200 + u32::from(cpu) * 50))],
            ))
            .unwrap();
            p["metadata"]["uid"] = json!(format!("u-{name}"));
            let refs: Vec<_> = (0..claims % 3)
                .map(|c| json!({"name": format!("c{c}"), "resourceClaimTemplateName": "t"}))
                .collect();
            let statuses: Vec<_> = (0..claims % 3)
                .map(|c| json!({"name": format!("c{c}"), "resourceClaimName": format!("{name}-c{c}")}))
                .collect();
            for c in 0..claims % 3 {
                snap.upsert_resource_claim(
                    &serde_json::from_value(json!({"metadata": {"namespace": "ns", "name": format!("{name}-c{c}"), "uid": format!("c-{name}-{c}")},
                        "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": if (cpu.wrapping_add(c).wrapping_add(flip)) % 2 == 0 { "a" } else { "x" }}}]}}}))
                    .unwrap(),
                );
            }
            p["spec"]["resourceClaims"] = json!(refs);
            p["status"] = json!({"resourceClaimStatuses": statuses});
            // Inter-pod constraints that filter but do not score: required anti-affinity per node, a
            // hard spread over zones.
            if claims & 8 != 0 {
                p["metadata"]["labels"] = json!({"app": "a"});
            }
            if claims & 16 != 0 {
                p["spec"]["affinity"] = json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": "a"}}, "topologyKey": "kubernetes.io/hostname"}]}});
            }
            if claims & 32 != 0 {
                p["spec"]["topologySpreadConstraints"] = json!([{"maxSkew": 1, "topologyKey": "zone",
                    "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "a"}}}]);
            }
            snap.upsert_pod(&serde_json::from_value(p).unwrap()).unwrap();
        };
        for (i, (cpu, claims, gang)) in pods.iter().enumerate() {
            let unit = if *gang {
                let g = format!("g{i}");
                snap.upsert_pod_group(&GroupBuilder::gang("ns", &g, 2).pod_group())
                    .unwrap();
                for j in 0..2u8 {
                    add(&mut snap, &format!("{g}-{j}"), Some(&g), *cpu, *claims, j);
                }
                UnitKey::Group(crate::core::GroupKey::pod_group("ns", &g))
            } else {
                let name = format!("p{i}");
                add(&mut snap, &name, None, *cpu, *claims, 0);
                UnitKey::Pod(PodKey::new("ns", name))
            };
            let out = Scheduler::new(SchedulerConfig::default()).schedule(&mut snap, &unit);
            log.push(format!("{unit}: {:?}", out.verdict));
            if out.is_scheduled() {
                for a in &out.assignments {
                    snap.assume(&a.pod, &a.node).unwrap();
                    log.push(format!("{} -> {}", a.pod, a.node));
                }
                for (pod, rs) in &out.reservations {
                    for r in rs {
                        if let Some(a) = &r.allocation {
                            log.push(format!("{pod} {} {:?}", r.claim, a.devices));
                            snap.assume_claim_allocation(&r.namespace, &r.claim, a);
                        }
                    }
                }
            }
        }
        PER_POD.with(|c| c.set(false));
        log
    }

    use crate::core::testing::{GroupBuilder, node, pod, pod_in_group};
    use crate::core::{PodKey, Scheduler, SchedulerConfig, ScoringStrategy, Snapshot, UnitKey};

    /// A gang member continuing the previous member's dynamic state re-checks the nodes that member
    /// refused: a node a hard spread refused the first member (its zone ahead) takes the second once
    /// the first evened the zones, as the per-pod path decides.
    #[test]
    fn a_node_the_previous_member_refused_is_checked_again() {
        for per_pod in [true, false] {
            PER_POD.with(|c| c.set(per_pod));
            let mut snap = Snapshot::new();
            snap.upsert_node(&node("n0", "4", "8Gi", &[("zone", "a")])).unwrap();
            snap.upsert_node(&node("n1", "4", "8Gi", &[("zone", "b")])).unwrap();
            let spread_pod = |name: &str, group: Option<&str>, cpu: &str, node: Option<&str>| {
                let mut p =
                    serde_json::to_value(crate::core::testing::pod_with("ns", name, group, &[("cpu", cpu)])).unwrap();
                p["metadata"]["labels"] = json!({"app": "a"});
                p["spec"]["topologySpreadConstraints"] = json!([{"maxSkew": 1, "topologyKey": "zone",
                    "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "a"}}}]);
                if let Some(n) = node {
                    p["spec"]["nodeName"] = json!(n);
                    p["status"] = json!({"phase": "Running"});
                }
                serde_json::from_value::<k8s_openapi::api::core::v1::Pod>(p).unwrap()
            };
            // Zone a is one pod ahead and its node the fuller (bin packing ranks it first).
            snap.upsert_pod(&spread_pod("running", None, "2", Some("n0"))).unwrap();
            snap.upsert_pod_group(&GroupBuilder::gang("ns", "g", 2).pod_group())
                .unwrap();
            for m in ["g-0", "g-1"] {
                snap.upsert_pod(&spread_pod(m, Some("g"), "500m", None)).unwrap();
            }
            let out = Scheduler::new(SchedulerConfig::default())
                .schedule(&mut snap, &UnitKey::Group(crate::core::GroupKey::pod_group("ns", "g")));
            let mut nodes: Vec<&str> = out.assignments.iter().map(|a| a.node.as_str()).collect();
            nodes.sort();
            assert_eq!(nodes, ["n0", "n1"], "per_pod {per_pod}");
        }
        PER_POD.with(|c| c.set(false));
    }

    /// Applies step `s` of a random history to `snap`: add a pod (and schedule it, or a gang of two),
    /// delete a pod, or add / remove a node.
    fn step(snap: &mut Snapshot, i: usize, s: (u8, u8, u8), spread: bool, drop_caches: bool) -> Vec<(String, String)> {
        let (kind, a, b) = s;
        let cfg = SchedulerConfig {
            scoring: if spread {
                ScoringStrategy::LeastAllocated
            } else {
                ScoringStrategy::MostAllocated
            },
            ..SchedulerConfig::default()
        };
        let unit = match kind % 5 {
            0 | 1 => {
                let name = format!("p{i}");
                snap.upsert_pod(&pod(
                    "ns",
                    &name,
                    &format!("{}m", 100 + u32::from(a) * 10),
                    &format!("{}Mi", 64 + u32::from(b)),
                ))
                .unwrap();
                UnitKey::Pod(PodKey::new("ns", name))
            }
            2 => {
                let g = format!("g{i}");
                snap.upsert_pod_group(&GroupBuilder::gang("ns", &g, 2).pod_group())
                    .unwrap();
                for j in 0..2 {
                    snap.upsert_pod(&pod_in_group(
                        "ns",
                        &format!("{g}-{j}"),
                        &g,
                        &format!("{}m", 200 + u32::from(a)),
                        "128Mi",
                    ))
                    .unwrap();
                }
                UnitKey::Group(crate::core::GroupKey::pod_group("ns", &g))
            }
            3 => {
                snap.remove_pod(&PodKey::new("ns", format!("p{}", usize::from(a) % (i + 1))));
                return Vec::new();
            }
            _ => {
                let name = format!("n{}", b % 6);
                if a % 2 == 0 {
                    snap.upsert_node(&node(&name, &format!("{}", 2 + b % 5), "8Gi", &[]))
                        .unwrap();
                } else {
                    snap.remove_node(&name);
                }
                return Vec::new();
            }
        };
        if drop_caches {
            for c in &mut snap.classes.classes {
                c.score_cache = Default::default();
            }
        }
        let out = Scheduler::new(cfg).schedule(snap, &unit);
        let mut placed = Vec::new();
        if out.is_scheduled() {
            for a in &out.assignments {
                snap.assume(&a.pod, &a.node).unwrap();
                placed.push((a.pod.name.clone(), a.node.clone()));
            }
        }
        placed
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        /// Pods whose dynamic constraints score nothing (claims, required anti-affinity, a hard
        /// spread) stay on the class's cached ranking (nodes with too few free devices left out, nodes
        /// their filters or the allocator refuse set aside): every history places, allocates and fails
        /// exactly as the per-pod path does.
        #[test]
        fn dynamic_pods_on_the_cached_ranking_decide_like_the_per_pod_path(
            nodes in proptest::collection::vec((any::<u8>(), any::<u8>()), 1..8),
            pods in proptest::collection::vec((any::<u8>(), any::<u8>(), any::<bool>()), 1..16),
        ) {
            prop_assert_eq!(claims_history(&nodes, &pods, false), claims_history(&nodes, &pods, true));
        }
    }

    proptest! {
        /// The node scores a class keeps across cycles never change a decision: every history places
        /// exactly as it does when each cycle scores from scratch.
        #[test]
        fn kept_scores_decide_like_fresh_ones(steps in proptest::collection::vec((any::<u8>(), any::<u8>(), any::<u8>()), 1..40), spread_every in 1usize..5) {
            let mut kept = Snapshot::new();
            let mut fresh = Snapshot::new();
            for n in 0..6 {
                for s in [&mut kept, &mut fresh] {
                    s.upsert_node(&node(&format!("n{n}"), &format!("{}", 2 + n), "8Gi", &[])).unwrap();
                }
            }
            for (i, s) in steps.into_iter().enumerate() {
                let spread = i % spread_every == 0;
                let a = step(&mut kept, i, s, spread, false);
                let b = step(&mut fresh, i, s, spread, true);
                prop_assert_eq!(a, b, "step {}", i);
            }
        }
    }
}
