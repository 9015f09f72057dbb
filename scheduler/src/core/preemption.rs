//! Workload-aware preemption (KEP-5710, KEP-6012 "Integration with workload-aware preemption").
//!
//! Preemption runs only for a root unit, and only when its cycle says it may help (the root is
//! Unschedulable, or it is satisfied but some / all extra pods failed). It is *delayed*: it returns
//! victims only if the whole hierarchy becomes feasible with them gone, and it never binds anything
//! (the runtime evicts the victims, records the nominations, and the unit goes back to the queue).
//!
//! - **Preemptor**: the root's priority and preemption policy (a pod's own for a plain pod). Policy
//!   `Never` preempts nothing.
//! - **Preemption units**: a pod not in a group, or in a `single` group, is its own unit; a pod under a
//!   group with disruption mode `all` belongs to the unit of the *highest* such ancestor (a PodGroup, or
//!   the whole subtree of a CompositePodGroup). A unit is a potential victim only if every pod in it has
//!   a priority below the preemptor's. Pods already terminating are never victims (they still count on
//!   their nodes until they are gone).
//! - **Domains**: for a plain pod, each node; for a root with a topology constraint, each domain of its
//!   key; otherwise the whole cluster.
//! - **Candidates**: found once per attempt in one pass over the nodes' pods (a pod's group is the
//!   snapshot's cached id; each group's highest `all` ancestor is looked up once), indexed by node.
//! - **One node** (a plain pod's domain), upstream's per-node search: remove every candidate on the
//!   node (all pods of a unit go, even those elsewhere), place the preemptor, and reprieve victims from
//!   the most important down (priority, then groups before single pods, then larger units): a unit is
//!   put back on its nodes if all its pods still fit there, all-or-none for `all` units. What is left
//!   are the victims.
//! - **Many nodes** (a topology domain, or the whole cluster for a gang without one), node by node
//!   (beyond KEP-5710's alpha algorithm, which removes every candidate of the domain at once and lets a
//!   preemptor settle where a large `all` unit ran): the domain's nodes are ordered by the cost of
//!   evicting what runs there (budgets touched, highest victim priority, victim pods, their priority
//!   sum, node name); the candidates of the first `k` nodes are removed for `k` = 1, 2, 4, ... until the
//!   preemptor fits, then the smallest such `k` is found by bisection; every try that fits reprieves as
//!   above, and the cheapest answer wins. The last try removes every candidate of the domain, so a
//!   preemption is found whenever removing them all would make the hierarchy feasible; an attempt costs
//!   about `2 log2(k)` trial placements where the answer needs `k` nodes. The trials are quiet: a pod
//!   that fits nowhere fails without the per-node diagnosis.
//! - **PodDisruptionBudgets**: reprieval first tries the victims whose eviction would violate a budget
//!   (budgets used up in importance order, as upstream's `filterPodsWithPDBViolation`), then the others.
//!   A victim is put back only if it fits its node again, resources and dynamic constraints (ports,
//!   anti-affinity) included.
//! - **Choice**, upstream's `pickOneNodeForPreemption` order: the domain whose victims violate the fewest
//!   budgets, then the lowest highest victim priority, then the smallest priority sum, then the fewest
//!   victims, then domain order.

use super::cycle::{Cycle, Domain};
use super::filters::fits;
use super::journal::Op;
use super::model::{DisruptionMode, GroupKey, PodKey, PreemptionPolicy, UnitKey};
use super::outcome::{Assignment, Verdict};
use super::scheduler::{Scheduler, resolve_root};
use super::snapshot::Snapshot;
use super::status::Code;

/// The unit a victim pod is evicted with.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum VictimUnit {
    /// The pod alone.
    Pod(PodKey),
    /// Every running pod of this group's subtree (disruption mode `all`).
    Group(GroupKey),
}

/// A pod to evict.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Victim {
    /// The pod.
    pub pod: PodKey,
    /// Its node.
    pub node: String,
    /// Its preemption unit.
    pub unit: VictimUnit,
    /// The unit's priority.
    pub priority: i32,
}

/// What preemption decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PreemptionVerdict {
    /// Evict the victims; nominate the preemptor's pods.
    Preempt,
    /// The unit schedules (or can schedule in a domain) without evicting anything.
    NotNeeded,
    /// The preemptor may not preempt (`preemptionPolicy: Never`).
    NotAllowed,
    /// No set of lower-priority victims makes the hierarchy feasible.
    NotHelpful,
    /// The unit is not ready or its hierarchy is invalid (see the message).
    NotReady,
}

/// Result of [`Scheduler::preempt`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreemptionOutcome {
    /// The preemptor.
    pub unit: UnitKey,
    /// The decision.
    pub verdict: PreemptionVerdict,
    /// Pods to evict, in name order.
    pub victims: Vec<Victim>,
    /// Groups whose pods are evicted as a unit (they get `DisruptionTarget`).
    pub victim_groups: Vec<GroupKey>,
    /// Where the preemptor's pods are expected to land once the victims are gone
    /// (`status.nominatedNodeName`).
    pub nominations: Vec<Assignment>,
    /// Human-readable summary.
    pub message: String,
    /// Domains simulated.
    pub domains_evaluated: u32,
}

impl PreemptionOutcome {
    fn empty(unit: &UnitKey, verdict: PreemptionVerdict, message: String) -> Self {
        Self {
            unit: unit.clone(),
            verdict,
            victims: Vec::new(),
            victim_groups: Vec::new(),
            nominations: Vec::new(),
            message,
            domains_evaluated: 0,
        }
    }
}

/// A preemption unit by id: a pod alone, or the pods of an `all` group's subtree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum UnitRef {
    Pod(u32),
    Group(u32),
}

impl UnitRef {
    fn victim_unit(self, snap: &Snapshot) -> VictimUnit {
        match self {
            UnitRef::Pod(p) => VictimUnit::Pod(snap.pod(p).key.clone()),
            UnitRef::Group(g) => VictimUnit::Group(snap.group(g).key.clone()),
        }
    }

    /// The order of the [`VictimUnit`]s these stand for, without building them.
    fn cmp_keys(self, other: Self, snap: &Snapshot) -> std::cmp::Ordering {
        use std::cmp::Ordering;
        match (self, other) {
            (UnitRef::Pod(a), UnitRef::Pod(b)) => snap.pod(a).key.cmp(&snap.pod(b).key),
            (UnitRef::Group(a), UnitRef::Group(b)) => snap.group(a).key.cmp(&snap.group(b).key),
            (UnitRef::Pod(_), UnitRef::Group(_)) => Ordering::Less,
            (UnitRef::Group(_), UnitRef::Pod(_)) => Ordering::Greater,
        }
    }
}

#[derive(Debug, Clone)]
struct Unit {
    key: UnitRef,
    priority: i32,
    /// A group unit's pods (a single pod's is its key).
    members: Vec<u32>,
}

impl Unit {
    fn is_group(&self) -> bool {
        matches!(self.key, UnitRef::Group(_))
    }

    fn pods(&self) -> &[u32] {
        match &self.key {
            UnitRef::Pod(p) => std::slice::from_ref(p),
            UnitRef::Group(_) => &self.members,
        }
    }
}

/// The potential victims: every unit below the preemptor's priority, and the units touching each node.
struct Candidates {
    units: Vec<Unit>,
    /// Node id -> its range in `touching` (empty for a node without candidates).
    by_node: Vec<(u32, u32)>,
    touching: Vec<usize>,
}

impl Candidates {
    fn on_node(&self, n: u32) -> &[usize] {
        match self.by_node.get(n as usize) {
            Some(&(a, b)) => &self.touching[a as usize..b as usize],
            None => &[],
        }
    }
}

/// Upstream's candidate order: fewest PodDisruptionBudget violations, then the lowest highest victim
/// priority, then the smallest priority sum, then the fewest victims.
type Cost = (usize, i32, i64, usize);

struct Found {
    cost: Cost,
    victims: Vec<usize>,
    assignments: Vec<(u32, u32)>,
}

impl Scheduler {
    /// Computes a preemption for `unit` (see the module docs). The snapshot is left as it was.
    pub fn preempt(&self, snap: &mut Snapshot, unit: &UnitKey) -> PreemptionOutcome {
        let baseline = self.schedule(snap, unit);
        snap.prepare();
        match &baseline.verdict {
            Verdict::NotReady { message } => {
                return PreemptionOutcome::empty(unit, PreemptionVerdict::NotReady, message.clone());
            }
            Verdict::Invalid { message, .. } => {
                return PreemptionOutcome::empty(unit, PreemptionVerdict::NotReady, message.clone());
            }
            Verdict::Unschedulable {
                code: Code::UnschedulableAndUnresolvable,
                message,
            } => {
                return PreemptionOutcome::empty(
                    unit,
                    PreemptionVerdict::NotHelpful,
                    format!("preemption: not helpful for scheduling: {message}"),
                );
            }
            Verdict::Scheduled if !baseline.preemption_may_help => {
                return PreemptionOutcome::empty(
                    unit,
                    PreemptionVerdict::NotNeeded,
                    "schedulable without preemption".into(),
                );
            }
            _ => {}
        }
        let baseline_placed = if baseline.is_scheduled() {
            Some(baseline.assignments.len())
        } else {
            None
        };

        // The preemptor.
        let (root, pod, priority, policy) = match unit {
            UnitKey::Group(key) => match resolve_root(snap, key) {
                Ok(r) => {
                    let g = snap.group(r);
                    (Some(r), None, g.priority, g.preemption_policy)
                }
                Err(_) => return PreemptionOutcome::empty(unit, PreemptionVerdict::NotReady, "unit not ready".into()),
            },
            UnitKey::Pod(key) => match snap.pod_id(key) {
                Some(p) => {
                    let pi = snap.pod(p);
                    (None, Some(p), pi.priority, pi.preemption_policy)
                }
                None => return PreemptionOutcome::empty(unit, PreemptionVerdict::NotReady, "pod not found".into()),
            },
        };
        if policy == PreemptionPolicy::Never {
            return PreemptionOutcome::empty(
                unit,
                PreemptionVerdict::NotAllowed,
                "preemption: not eligible due to preemptionPolicy=Never.".into(),
            );
        }

        // Pods of the preemptor's own hierarchy are never victims.
        let own = Own::of(snap, root, pod);
        let cands = candidates(snap, &own, priority);

        // Domains.
        let domains: Vec<Domain> = if let Some(p) = pod {
            let sid = snap.classes.classes[snap.pod(p).class as usize].static_id;
            snap.ensure_static(sid);
            snap.node_order
                .iter()
                .filter(|n| snap.static_ok(sid, **n))
                .map(|n| Domain {
                    nodes: vec![*n].into(),
                    whole: false,
                })
                .collect()
        } else if let Some(key) = root.and_then(|r| snap.group(r).topology_key.clone()) {
            snap.ensure_topology(&key);
            snap.topology
                .get(&key)
                .map(|t| {
                    t.domains
                        .values()
                        .map(|n| Domain {
                            nodes: n.clone().into(),
                            whole: false,
                        })
                        .collect()
                })
                .unwrap_or_default()
        } else {
            vec![Domain::whole(snap)]
        };

        let mut cycle = Cycle::new(snap, self.config);
        cycle.quiet = true;
        let mut best: Option<Found> = None;
        let mut evaluated = 0u32;
        let preemptor = Preemptor {
            root,
            pod,
            baseline_placed,
        };
        for dom in &domains {
            evaluated += 1;
            let found = if dom.nodes.len() == 1 {
                // One node (a plain pod's domain): upstream's per-node search. Remove every candidate on
                // the node, place the preemptor, reprieve the most important back.
                let mut touching = cands.on_node(dom.nodes[0]).to_vec();
                if touching.is_empty() {
                    continue;
                }
                touching.sort_by(|a, b| importance(cycle.snap, &cands.units[*a], &cands.units[*b]));
                attempt(&mut cycle, &cands.units, &touching, dom, &preemptor)
            } else {
                node_by_node(&mut cycle, &cands, dom, &preemptor)
            };
            if let Some(found) = found
                && best.as_ref().is_none_or(|b| found.cost < b.cost)
            {
                best = Some(found);
            }
        }
        let snap = &*cycle.snap;
        let Some(found) = best else {
            return PreemptionOutcome {
                domains_evaluated: evaluated,
                ..PreemptionOutcome::empty(
                    unit,
                    PreemptionVerdict::NotHelpful,
                    match unit {
                        // Upstream's wording for a pod (its search is per node, like ours).
                        UnitKey::Pod(_) => {
                            let n = snap.node_count();
                            format!(
                                "preemption: 0/{n} nodes are available: {n} No preemption victims found for incoming pod."
                            )
                        }
                        UnitKey::Group(_) => {
                            "preemption: no set of lower-priority victims makes the pod group schedulable.".to_string()
                        }
                    },
                )
            };
        };
        let mut nominations: Vec<Assignment> = found
            .assignments
            .iter()
            .map(|(p, n)| Assignment {
                pod: snap.pod(*p).key.clone(),
                node: snap.node_name(*n).to_string(),
            })
            .collect();
        nominations.sort();
        let mut victims = Vec::new();
        let mut victim_groups = Vec::new();
        for &u in &found.victims {
            let unit = &cands.units[u];
            let key = unit.key.victim_unit(snap);
            if let VictimUnit::Group(g) = &key {
                victim_groups.push(g.clone());
            }
            for &p in unit.pods() {
                let pi = snap.pod(p);
                victims.push(Victim {
                    pod: pi.key.clone(),
                    node: pi.node_name.clone().unwrap_or_default(),
                    unit: key.clone(),
                    priority: unit.priority,
                });
            }
        }
        victims.sort();
        victim_groups.sort();
        let verdict = if victims.is_empty() {
            PreemptionVerdict::NotNeeded
        } else {
            PreemptionVerdict::Preempt
        };
        let message = format!(
            "preempting {} pod(s) in {} unit(s) to make room for {unit}",
            victims.len(),
            found.victims.len()
        );
        PreemptionOutcome {
            unit: unit.clone(),
            verdict,
            victims,
            victim_groups,
            nominations,
            message,
            domains_evaluated: evaluated,
        }
    }
}

/// What a simulation needs to know about the preemptor.
struct Preemptor {
    root: Option<u32>,
    pod: Option<u32>,
    /// Pods the root placed without preemption (a satisfied root preempts only to place more).
    baseline_placed: Option<usize>,
}

/// Ascending importance: lower priority, then single pods before groups, then smaller units, then key.
fn importance(snap: &Snapshot, a: &Unit, b: &Unit) -> std::cmp::Ordering {
    a.priority
        .cmp(&b.priority)
        .then(a.is_group().cmp(&b.is_group()))
        .then(a.pods().len().cmp(&b.pods().len()))
        .then_with(|| b.key.cmp_keys(a.key, snap))
}

fn remove_units(cycle: &mut Cycle<'_>, units: &[Unit], removed: &[usize]) {
    for &u in removed {
        for &p in units[u].pods() {
            if let Some(n) = cycle.snap.pod(p).placed_node() {
                cycle.journal.remove_id(cycle.snap, p, n);
            }
        }
    }
}

/// Place the preemptor in `dom`; true when the hierarchy (or pod) becomes feasible.
fn place(cycle: &mut Cycle<'_>, dom: &Domain, preemptor: &Preemptor) -> bool {
    let placed_mark = cycle.journal.mark();
    cycle.backtracks_left = cycle.cfg.backtracking_limit;
    match (preemptor.root, preemptor.pod) {
        (Some(r), _) => {
            let (o, _) = cycle.run_root(r, dom);
            let placed = cycle.journal.ops_since(placed_mark).len();
            o.code == Code::Success && preemptor.baseline_placed.is_none_or(|b| placed > b)
        }
        (None, Some(p)) => {
            let mut rankers = Vec::new();
            cycle.place_pod(p, dom, &mut rankers).is_ok()
        }
        _ => false,
    }
}

/// What evicting a node's candidates costs: budgets touched, the highest victim priority, victim pods,
/// their priority sum, then the node's rank in name order.
type NodeCost = (usize, i32, usize, i64, u32);

/// A multi-node domain: nodes ordered by the cost of evicting what runs there (budgets touched, then the
/// highest victim priority, then victim pods, then their priority sum, then node order); the candidates
/// of the first `k` nodes are removed, for `k` = 1, 2, 4, ... until the preemptor fits, then the smallest
/// such `k` is found by bisection. Each try that fits reprieves the most important back ([`attempt`]);
/// the cheapest answer wins. Evicting every candidate of the domain is the last try, so this finds a
/// preemption whenever removing all candidates would.
fn node_by_node(cycle: &mut Cycle<'_>, cands: &Candidates, dom: &Domain, preemptor: &Preemptor) -> Option<Found> {
    let snap = &*cycle.snap;
    let budgets = !snap.pdbs.is_empty();
    let mut order: Vec<(NodeCost, u32)> = dom
        .nodes
        .iter()
        .filter_map(|&n| {
            let units = cands.on_node(n);
            if units.is_empty() {
                return None;
            }
            let protected = if budgets {
                let pods: Vec<u32> = units
                    .iter()
                    .flat_map(|u| cands.units[*u].pods().iter().copied())
                    .collect();
                snap.pdb_violating(&pods).len()
            } else {
                0
            };
            let (mut max, mut count, mut sum) = (i32::MIN, 0usize, 0i64);
            for u in units {
                let u = &cands.units[*u];
                max = max.max(u.priority);
                count += u.pods().len();
                sum += i64::from(u.priority) * u.pods().len() as i64;
            }
            Some(((protected, max, count, sum, snap.node(n).rank), n))
        })
        .collect();
    order.sort_unstable();
    // The candidates of the first k nodes are seq[..upto[k]].
    let mut seen = vec![false; cands.units.len()];
    let mut seq: Vec<usize> = Vec::new();
    let mut upto = Vec::with_capacity(order.len() + 1);
    upto.push(0usize);
    for (_, n) in &order {
        for &u in cands.on_node(*n) {
            if !std::mem::replace(&mut seen[u], true) {
                seq.push(u);
            }
        }
        upto.push(seq.len());
    }
    let nodes = order.len();
    if nodes == 0 {
        return None;
    }
    let mut best: Option<Found> = None;
    let try_prefix = |cycle: &mut Cycle<'_>, k: usize, best: &mut Option<Found>| -> bool {
        let mut removed = seq[..upto[k]].to_vec();
        removed.sort_by(|a, b| importance(cycle.snap, &cands.units[*a], &cands.units[*b]));
        match attempt(cycle, &cands.units, &removed, dom, preemptor) {
            Some(found) => {
                if best.as_ref().is_none_or(|b| found.cost < b.cost) {
                    *best = Some(found);
                }
                true
            }
            None => false,
        }
    };
    // Gallop: the preemptor does not fit with nothing removed (or preemption would not run).
    let (mut lo, mut k) = (0usize, 1usize);
    let mut hi = loop {
        let k_now = k.min(nodes);
        if try_prefix(cycle, k_now, &mut best) {
            break k_now;
        }
        if k_now == nodes {
            return None;
        }
        lo = k_now;
        k = k_now.saturating_mul(2);
    };
    // Bisect (lo fails, hi fits) for the fewest nodes.
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if try_prefix(cycle, mid, &mut best) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    best
}

/// Remove `removed`, place the preemptor, then reprieve from the most important down (all-or-none per
/// unit). Returns the victims left and the preemptor's placement; the snapshot is left as it was.
fn attempt(
    cycle: &mut Cycle<'_>,
    units: &[Unit],
    removed: &[usize],
    dom: &Domain,
    preemptor: &Preemptor,
) -> Option<Found> {
    let mark = cycle.journal.mark();
    remove_units(cycle, units, removed);
    let placed_mark = cycle.journal.mark();
    if !place(cycle, dom, preemptor) {
        cycle.journal.revert_to(cycle.snap, mark);
        return None;
    }
    let assignments: Vec<(u32, u32)> = cycle
        .journal
        .ops_since(placed_mark)
        .iter()
        .filter_map(|op| match op {
            Op::Assume { pod, node } => Some((*pod, *node)),
            _ => None,
        })
        .collect();
    // Most important first; the units whose eviction would violate a budget are tried first.
    let order: Vec<usize> = removed.iter().rev().copied().collect();
    let pods_in_order: Vec<u32> = order.iter().flat_map(|u| units[*u].pods().iter().copied()).collect();
    let violating = cycle.snap.pdb_violating(&pods_in_order);
    let (first, second): (Vec<usize>, Vec<usize>) = order
        .iter()
        .partition(|u| units[**u].pods().iter().any(|p| violating.contains(p)));
    let mut victims = Vec::new();
    for u in first.into_iter().chain(second) {
        let unit_mark = cycle.journal.mark();
        let mut ok = true;
        for &p in units[u].pods() {
            let Some(n) = cycle.snap.pod(p).node else {
                continue;
            };
            let node = cycle.snap.node(n);
            let fits_back = fits(&cycle.snap.pod(p).requests, &node.allocatable, &node.requested)
                && (!cycle.snap.needs_dynamic(p) || cycle.snap.prepare_dynamic_indexed(p).check(cycle.snap, n).is_ok())
                && cycle.snap.claims_fit_back(p);
            if fits_back {
                cycle.journal.restore_id(cycle.snap, p, n);
            } else {
                ok = false;
                break;
            }
        }
        if !ok {
            cycle.journal.revert_to(cycle.snap, unit_mark);
            victims.push(u);
        }
    }
    victims.sort_by(|a, b| importance(cycle.snap, &units[*b], &units[*a]));
    let victim_pods: Vec<u32> = victims.iter().flat_map(|u| units[*u].pods().iter().copied()).collect();
    let pdb_violations = cycle.snap.pdb_violating(&victim_pods).len();
    let count: usize = victim_pods.len();
    let max_prio = victims.iter().map(|u| units[*u].priority).max().unwrap_or(i32::MIN);
    let sum: i64 = victims
        .iter()
        .map(|u| i64::from(units[*u].priority) * units[*u].pods().len() as i64)
        .sum();
    cycle.journal.revert_to(cycle.snap, mark);
    Some(Found {
        cost: (pdb_violations, max_prio, sum, count),
        victims,
        assignments,
    })
}

/// Groups every placed, non-terminating pod outside `own` into preemption units, keeps the units whose
/// every pod has a priority below `preemptor`, and indexes them by the nodes they touch. One pass over
/// the nodes' pods into arrays indexed by id: a pod's group is the snapshot's cached id, and each
/// group's highest `all` ancestor is found once.
fn candidates(snap: &Snapshot, own: &Own, preemptor: i32) -> Candidates {
    const UNKNOWN: u32 = u32::MAX;
    const NONE: u32 = u32::MAX - 1;
    // Group id -> its highest `all` ancestor (UNKNOWN: not looked up yet; NONE: there is none).
    let mut all_root = vec![UNKNOWN; snap.group_slots()];
    // Group id -> its unit.
    let mut group_unit = vec![usize::MAX; snap.group_slots()];
    let mut units: Vec<Unit> = Vec::new();
    let mut touching: Vec<(u32, usize)> = Vec::new();
    for &n in &snap.node_order {
        for &pid in &snap.node(n).pods {
            let p = snap.pod(pid);
            if p.terminating || own.contains(p, pid) {
                continue;
            }
            let (prio, root) = match p.group {
                Some(g) => {
                    let slot = &mut all_root[g as usize];
                    if *slot == UNKNOWN {
                        *slot = highest_all(snap, g).unwrap_or(NONE);
                    }
                    (snap.group(g).priority, (*slot != NONE).then_some(*slot))
                }
                None => (p.priority, None),
            };
            let u = match root {
                Some(g) => {
                    let slot = &mut group_unit[g as usize];
                    if *slot == usize::MAX {
                        *slot = units.len();
                        units.push(Unit {
                            key: UnitRef::Group(g),
                            priority: i32::MIN,
                            members: Vec::new(),
                        });
                    }
                    let u = &mut units[*slot];
                    u.priority = u.priority.max(prio);
                    u.members.push(pid);
                    *slot
                }
                None => {
                    units.push(Unit {
                        key: UnitRef::Pod(pid),
                        priority: prio,
                        members: Vec::new(),
                    });
                    units.len() - 1
                }
            };
            touching.push((n, u));
        }
    }
    // Keep the units below the preemptor, renumbered.
    let mut renumber = vec![usize::MAX; units.len()];
    let mut kept = Vec::with_capacity(units.len());
    for (i, mut u) in units.into_iter().enumerate() {
        if u.priority < preemptor {
            u.members.sort_unstable();
            renumber[i] = kept.len();
            kept.push(u);
        }
    }
    // Per node, its distinct units (`touching` is grouped by node).
    let mut by_node = vec![(0u32, 0u32); snap.node_slots()];
    let mut flat: Vec<usize> = Vec::with_capacity(touching.len());
    let mut i = 0;
    while i < touching.len() {
        let n = touching[i].0;
        let start = flat.len();
        while i < touching.len() && touching[i].0 == n {
            let u = renumber[touching[i].1];
            if u != usize::MAX && !flat[start..].contains(&u) {
                flat.push(u);
            }
            i += 1;
        }
        if let Some(slot) = by_node.get_mut(n as usize) {
            *slot = (start as u32, flat.len() as u32);
        }
    }
    Candidates {
        units: kept,
        by_node,
        touching: flat,
    }
}

/// The preemptor's own pods: the members of its hierarchy's groups, or the pod itself.
struct Own {
    /// Group id -> in the preemptor's hierarchy.
    groups: Vec<bool>,
    pod: Option<u32>,
}

impl Own {
    fn of(snap: &Snapshot, root: Option<u32>, pod: Option<u32>) -> Self {
        let mut groups = vec![false; snap.group_slots()];
        if let Some(r) = root {
            let mut stack = vec![r];
            while let Some(g) = stack.pop() {
                match groups.get_mut(g as usize) {
                    Some(slot) if !*slot => *slot = true,
                    _ => continue,
                }
                stack.extend(snap.children(g).iter().copied());
            }
        }
        Self { groups, pod }
    }

    fn contains(&self, p: &super::snapshot::PodInfo, pid: u32) -> bool {
        self.pod == Some(pid)
            || p.group
                .is_some_and(|g| self.groups.get(g as usize).copied().unwrap_or(false))
    }
}

/// The highest ancestor of `g` (itself included) with disruption mode `all`.
fn highest_all(snap: &Snapshot, mut g: u32) -> Option<u32> {
    let mut found = None;
    let mut steps = 0;
    loop {
        if snap.group(g).disruption == DisruptionMode::All {
            found = Some(g);
        }
        steps += 1;
        match snap.parent(g) {
            Some(parent) if steps <= 8 => g = parent,
            _ => return found,
        }
    }
}
