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
//! - **Per domain**: remove every potential victim touching the domain (all pods of a unit go, even
//!   those outside it), run the cycle confined to the domain, and give up on the domain if the
//!   hierarchy is still not feasible. Otherwise keep the preemptor's placement and reprieve victims from
//!   the most important down (priority, then groups before single pods, then larger units): a unit is
//!   put back on its nodes if all its pods still fit there, all-or-none for `all` units. What is left
//!   are the victims.
//! - **Fewest candidates** (beyond KEP-5710's alpha algorithm): with every candidate gone the preemptor
//!   may settle where a large `all` unit ran and evict it whole when a few single pods would have made
//!   room. So each domain also tries the shortest prefix of candidates, least important first, whose
//!   removal makes the hierarchy feasible (a binary search), reprieves among them the same way, and
//!   keeps whichever of the two evicts less.
//! - **PodDisruptionBudgets**: reprieval first tries the victims whose eviction would violate a budget
//!   (budgets used up in importance order, as upstream's `filterPodsWithPDBViolation`), then the others.
//!   A victim is put back only if it fits its node again, resources and dynamic constraints (ports,
//!   anti-affinity) included.
//! - **Choice**, upstream's `pickOneNodeForPreemption` order: the domain whose victims violate the fewest
//!   budgets, then the lowest highest victim priority, then the smallest priority sum, then the fewest
//!   victims, then domain order.

use std::collections::{BTreeMap, HashMap, HashSet};

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

#[derive(Debug, Clone)]
struct Unit {
    key: VictimUnit,
    is_group: bool,
    priority: i32,
    pods: Vec<u32>,
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
        let mut own: HashSet<u32> = HashSet::new();
        if let Some(r) = root {
            let mut stack = vec![r];
            while let Some(g) = stack.pop() {
                own.extend(snap.members(g).iter().copied());
                stack.extend(snap.children(g).iter().copied());
            }
        }
        if let Some(p) = pod {
            own.insert(p);
        }
        let units = victim_units(snap, &own, priority);
        let mut units_on_node: HashMap<u32, Vec<usize>> = HashMap::new();
        for (i, u) in units.iter().enumerate() {
            for &p in &u.pods {
                if let Some(n) = snap.pod(p).node {
                    let v = units_on_node.entry(n).or_default();
                    if v.last() != Some(&i) {
                        v.push(i);
                    }
                }
            }
        }

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
        let mut best: Option<Found> = None;
        let mut evaluated = 0u32;
        let preemptor = Preemptor {
            root,
            pod,
            baseline_placed,
        };
        for dom in &domains {
            evaluated += 1;
            // Every unit touching the domain is a candidate.
            let mut touching: Vec<usize> = if dom.whole {
                (0..units.len()).collect()
            } else {
                let mut v: Vec<usize> = dom
                    .nodes
                    .iter()
                    .flat_map(|n| units_on_node.get(n).into_iter().flatten().copied())
                    .collect();
                v.sort_unstable();
                v.dedup();
                v
            };
            if touching.is_empty() && !dom.whole {
                continue;
            }
            // Least important first: the reverse of the reprieve order.
            touching.sort_by(|a, b| importance(&units[*a], &units[*b]));
            // KEP-5710: remove every candidate, place the preemptor, reprieve the most important back.
            let Some(all) = attempt(&mut cycle, &units, &touching, dom, &preemptor) else {
                continue;
            };
            // The preemptor placed with every candidate gone may land on the nodes of a large `all` unit and
            // evict it whole where a few single pods would do. So also try the fewest least-important
            // candidates that make room (binary search on the prefix), then reprieve among those.
            let mut found = all;
            let (mut lo, mut hi) = (0usize, touching.len());
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if feasible(&mut cycle, &units, &touching[..mid], dom, &preemptor) {
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
            if hi < touching.len()
                && let Some(prefix) = attempt(&mut cycle, &units, &touching[..hi], dom, &preemptor)
                && prefix.cost < found.cost
            {
                found = prefix;
            }
            if best.as_ref().is_none_or(|b| found.cost < b.cost) {
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
            let unit = &units[u];
            if let VictimUnit::Group(g) = &unit.key {
                victim_groups.push(g.clone());
            }
            for &p in &unit.pods {
                let pi = snap.pod(p);
                victims.push(Victim {
                    pod: pi.key.clone(),
                    node: pi.node_name.clone().unwrap_or_default(),
                    unit: unit.key.clone(),
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
fn importance(a: &Unit, b: &Unit) -> std::cmp::Ordering {
    a.priority
        .cmp(&b.priority)
        .then(a.is_group.cmp(&b.is_group))
        .then(a.pods.len().cmp(&b.pods.len()))
        .then(b.key.cmp(&a.key))
}

fn remove_units(cycle: &mut Cycle<'_>, units: &[Unit], removed: &[usize]) {
    for &u in removed {
        for &p in &units[u].pods {
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

/// Whether removing `removed` makes the preemptor feasible in `dom` (the snapshot is left as it was).
fn feasible(cycle: &mut Cycle<'_>, units: &[Unit], removed: &[usize], dom: &Domain, preemptor: &Preemptor) -> bool {
    let mark = cycle.journal.mark();
    remove_units(cycle, units, removed);
    let ok = place(cycle, dom, preemptor);
    cycle.journal.revert_to(cycle.snap, mark);
    ok
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
    let pods_in_order: Vec<u32> = order.iter().flat_map(|u| units[*u].pods.iter().copied()).collect();
    let violating = cycle.snap.pdb_violating(&pods_in_order);
    let (first, second): (Vec<usize>, Vec<usize>) = order
        .iter()
        .partition(|u| units[**u].pods.iter().any(|p| violating.contains(p)));
    let mut victims = Vec::new();
    for u in first.into_iter().chain(second) {
        let unit_mark = cycle.journal.mark();
        let mut ok = true;
        for &p in &units[u].pods {
            let Some(n) = cycle.snap.pod(p).node else {
                continue;
            };
            let node = cycle.snap.node(n);
            let fits_back = fits(&cycle.snap.pod(p).requests, &node.allocatable, &node.requested)
                && (!cycle.snap.needs_dynamic(p) || cycle.snap.prepare_dynamic(p).check(cycle.snap, n).is_ok())
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
    victims.sort_by(|a, b| importance(&units[*b], &units[*a]));
    let victim_pods: Vec<u32> = victims.iter().flat_map(|u| units[*u].pods.iter().copied()).collect();
    let pdb_violations = cycle.snap.pdb_violating(&victim_pods).len();
    let count: usize = victim_pods.len();
    let max_prio = victims.iter().map(|u| units[*u].priority).max().unwrap_or(i32::MIN);
    let sum: i64 = victims
        .iter()
        .map(|u| i64::from(units[*u].priority) * units[*u].pods.len() as i64)
        .sum();
    cycle.journal.revert_to(cycle.snap, mark);
    Some(Found {
        cost: (pdb_violations, max_prio, sum, count),
        victims,
        assignments,
    })
}

/// Groups every placed, non-terminating pod outside `own` into preemption units and keeps the units
/// whose every pod has a priority below `preemptor`.
fn victim_units(snap: &Snapshot, own: &HashSet<u32>, preemptor: i32) -> Vec<Unit> {
    let mut by_group: BTreeMap<GroupKey, Unit> = BTreeMap::new();
    let mut singles: Vec<Unit> = Vec::new();
    let mut order: Vec<u32> = snap.pod_ids().filter(|p| snap.pod(*p).node.is_some()).collect();
    order.sort_unstable();
    for pid in order {
        if own.contains(&pid) {
            continue;
        }
        let p = snap.pod(pid);
        if p.terminating {
            continue;
        }
        let prio = snap.effective_priority(pid);
        // Highest ancestor with disruption mode `all`.
        let mut all_root = None;
        if let Some(gname) = p.group_name.as_ref()
            && let Some(mut g) = snap.group_id(&GroupKey::pod_group(p.key.namespace.clone(), gname.clone()))
        {
            let mut steps = 0;
            loop {
                if snap.group(g).disruption == DisruptionMode::All {
                    all_root = Some(g);
                }
                steps += 1;
                match snap.parent(g) {
                    Some(parent) if steps <= 8 => g = parent,
                    _ => break,
                }
            }
        }
        match all_root {
            Some(g) => {
                let key = snap.group(g).key.clone();
                let e = by_group.entry(key.clone()).or_insert_with(|| Unit {
                    key: VictimUnit::Group(key),
                    is_group: true,
                    priority: i32::MIN,
                    pods: Vec::new(),
                });
                e.priority = e.priority.max(prio);
                e.pods.push(pid);
            }
            None => singles.push(Unit {
                key: VictimUnit::Pod(p.key.clone()),
                is_group: false,
                priority: prio,
                pods: vec![pid],
            }),
        }
    }
    by_group
        .into_values()
        .chain(singles)
        .filter(|u| u.priority < preemptor)
        .collect()
}
