//! One scheduling cycle for one root unit, and what it returns.
//!
//! [`Scheduler::schedule`] takes a root unit (a plain pod, a standalone PodGroup or a root
//! CompositePodGroup), checks the hierarchy, runs the recursive algorithm on the snapshot with every
//! tentative placement recorded in a [`Journal`], reverts the journal, and returns a [`CycleOutcome`]:
//! either a placement for the whole hierarchy (`Verdict::Scheduled` with pod -> node assignments the
//! runtime binds and then reports with [`Snapshot::assume`]) or a failure with per-group and per-pod
//! statuses. The snapshot is unchanged afterwards.
//!
//! With [`SchedulerConfig::secure_minimums_first`] the cycle runs twice on the same journal: a
//! non-greedy pass that places only what every minimum needs, then a greedy pass that adds extras inside
//! the domains the first pass chose (assumed pods pin their groups' domains like running pods do).
//! With [`SchedulerConfig::scoring_retry`] the pass that places the minimum, if it fails, runs once more
//! with the other scoring strategy.

use std::collections::HashMap;

use super::config::{SchedulerConfig, ScoringStrategy};
use super::cycle::{Cycle, Domain, Outcome};
use super::hierarchy::{Climb, HierarchyError, climb, validate_tree};
use super::journal::{Mark, Op};
use super::model::{GroupKey, GroupKind, PodKey, Policy, UnitKey};
use super::outcome::{Assignment, CycleOutcome, GroupOutcome, PodOutcome, Rejection, TopologyDomain, Verdict};
use super::podgroup::Failure;
use super::snapshot::Snapshot;
use super::status::Code;

/// The scheduler core's entry point: configuration plus the cycle and preemption algorithms.
///
/// ```
/// use kwas_scheduler::core::{Scheduler, SchedulerConfig, Snapshot, UnitKey, GroupKey};
/// use kwas_scheduler::core::testing::{node, pod_in_group, pod_group_gang};
///
/// let mut snap = Snapshot::new();
/// for i in 0..2 {
///     snap.upsert_node(&node(&format!("n{i}"), "4", "8Gi", &[])).unwrap();
/// }
/// snap.upsert_pod_group(&pod_group_gang("ns", "gang", 3)).unwrap();
/// for i in 0..3 {
///     snap.upsert_pod(&pod_in_group("ns", &format!("p{i}"), "gang", "2", "1Gi")).unwrap();
/// }
/// let out = Scheduler::new(SchedulerConfig::default()).schedule(&mut snap, &UnitKey::Group(GroupKey::pod_group("ns", "gang")));
/// assert!(out.is_scheduled());
/// assert_eq!(out.assignments.len(), 3);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Scheduler {
    /// The configuration.
    pub config: SchedulerConfig,
}

impl Scheduler {
    /// A scheduler with `config`.
    pub fn new(config: SchedulerConfig) -> Self {
        Self { config }
    }

    /// Runs one cycle for `unit` (see the module docs). The snapshot is left as it was.
    pub fn schedule(&self, snap: &mut Snapshot, unit: &UnitKey) -> CycleOutcome {
        snap.prepare();
        match unit {
            UnitKey::Pod(key) => self.schedule_single_pod(snap, unit, key),
            UnitKey::Group(key) => {
                let root = match resolve_root(snap, key) {
                    Ok(r) => r,
                    Err(out) => return out.into_outcome(snap, unit, key),
                };
                let domain = Domain::whole(snap);
                let mut cycle = Cycle::new(snap, self.config);
                let (outcome, first) = cycle.run_root(root, &domain);
                let out = cycle.finish(unit, root, &outcome, first.as_ref());
                let mut journal = std::mem::take(&mut cycle.journal);
                journal.revert_all(cycle.snap);
                out
            }
        }
    }

    fn schedule_single_pod(&self, snap: &mut Snapshot, unit: &UnitKey, key: &PodKey) -> CycleOutcome {
        let Some(pid) = snap.pod_id(key) else {
            return CycleOutcome::not_ready(unit, format!("pod {key} not found"));
        };
        let p = snap.pod(pid);
        if p.group_name.is_some() {
            return CycleOutcome::not_ready(
                unit,
                format!("pod {key} belongs to a pod group; schedule its root group"),
            );
        }
        if !p.schedulable_pending() || !snap.responsible_for(&p.scheduler_name) {
            return CycleOutcome::not_ready(unit, format!("pod {key} is not pending for this scheduler"));
        }
        let domain = Domain::whole(snap);
        let mut cycle = Cycle::new(snap, self.config);
        let mut rankers = Vec::new();
        cycle.stats.pods_tried += 1;
        let out = match cycle.place_pod(pid, &domain, &mut rankers) {
            Ok(node) => CycleOutcome {
                unit: unit.clone(),
                verdict: Verdict::Scheduled,
                assignments: vec![Assignment {
                    pod: key.clone(),
                    node: cycle.snap.node_name(node).to_string(),
                }],
                reservations: {
                    let r = cycle.snap.claim_reservations(pid);
                    if r.is_empty() {
                        Vec::new()
                    } else {
                        vec![(key.clone(), r)]
                    }
                },
                groups: Vec::new(),
                unschedulable_pods: Vec::new(),
                preemption_may_help: false,
                stats: cycle.stats,
            },
            Err(Failure {
                message,
                unresolvable,
                unsupported,
            }) => CycleOutcome {
                unit: unit.clone(),
                verdict: Verdict::Unschedulable {
                    code: if unresolvable {
                        Code::UnschedulableAndUnresolvable
                    } else {
                        Code::Unschedulable
                    },
                    message: message.clone(),
                },
                assignments: Vec::new(),
                reservations: Vec::new(),
                groups: Vec::new(),
                unschedulable_pods: vec![PodOutcome {
                    pod: key.clone(),
                    message,
                    // A single pod is filtered against every node: its placement is exact.
                    rejection: if unsupported {
                        Rejection::Unsupported
                    } else {
                        Rejection::Unschedulable
                    },
                }],
                preemption_may_help: !unresolvable,
                stats: cycle.stats,
            },
        };
        let mut journal = std::mem::take(&mut cycle.journal);
        journal.revert_all(cycle.snap);
        out
    }
}

pub(crate) enum RootError {
    NotReady(String),
    Invalid(HierarchyError),
}

impl RootError {
    /// The outcome for a unit that could not be resolved. An invalid hierarchy lists every group
    /// connected to the unit, so the runtime can mark them all.
    pub(crate) fn into_outcome(self, snap: &Snapshot, unit: &UnitKey, key: &GroupKey) -> CycleOutcome {
        match self {
            RootError::NotReady(m) => CycleOutcome::not_ready(unit, m),
            RootError::Invalid(e) => {
                let mut o = CycleOutcome::not_ready(unit, String::new());
                let message = e.to_string();
                o.groups = snap
                    .hierarchy_members(key)
                    .into_iter()
                    .map(|group| GroupOutcome {
                        group,
                        code: None,
                        satisfied: false,
                        placed: 0,
                        scheduled_before: 0,
                        domain: None,
                        message: message.clone(),
                        rejection: Rejection::Unschedulable,
                    })
                    .collect();
                o.verdict = Verdict::Invalid {
                    reason: e.reason().to_string(),
                    message,
                };
                o
            }
        }
    }
}

/// Finds the root group id for a unit key and validates its tree.
pub(crate) fn resolve_root(snap: &Snapshot, key: &GroupKey) -> Result<u32, RootError> {
    let Some(id) = snap.group_id(key) else {
        return Err(RootError::NotReady(format!("{key} not found")));
    };
    match climb(snap, id) {
        Climb::Root(r) if r == id => {}
        Climb::Root(_) => return Err(RootError::NotReady(format!("{key} is not the root of its hierarchy"))),
        Climb::Waiting(m) => return Err(RootError::NotReady(m)),
        Climb::Invalid(e) => return Err(RootError::Invalid(e)),
    }
    validate_tree(snap, id).map_err(RootError::Invalid)?;
    Ok(id)
}

/// The worst rejection in `o`'s subtree.
fn subtree_rejection(o: &Outcome) -> Rejection {
    o.children
        .iter()
        .map(subtree_rejection)
        .fold(o.rejection, Rejection::max)
}

impl Cycle<'_> {
    /// Runs the (one- or two-pass) algorithm for a root group within `domain`.
    pub(crate) fn run_root(&mut self, root: u32, domain: &Domain) -> (Outcome, Option<Outcome>) {
        if !self.cfg.secure_minimums_first {
            self.greedy = true;
            return (self.minimum_pass(root, domain), None);
        }
        self.greedy = false;
        let first = self.minimum_pass(root, domain);
        if first.code != Code::Success {
            return (first, None);
        }
        let mark = self.journal.mark();
        self.greedy = true;
        let second = self.schedule_group(root, domain, false).0;
        if second.code != Code::Success {
            // Extras must never undo the minimum: keep the first pass.
            self.journal.revert_to(self.snap, mark);
            return (first, None);
        }
        (second, Some(first))
    }

    /// The pass that must place the root's minimum; with [`SchedulerConfig::scoring_retry`], a pass that
    /// fails Unschedulable runs once more with the other scoring strategy. A failure reports the configured
    /// strategy's outcome, so the statuses do not depend on the retry.
    fn minimum_pass(&mut self, root: u32, domain: &Domain) -> Outcome {
        let outcome = self.schedule_group(root, domain, false).0;
        // UnschedulableAndUnresolvable does not depend on where pods went, nor does a minimum that needs
        // more of a resource than the whole domain has free (a full cluster before preemption): no
        // retry can help.
        if outcome.code != Code::Unschedulable || !self.cfg.scoring_retry || self.quiet || !self.could_fit(root, domain)
        {
            return outcome;
        }
        // A failed pass has reverted everything it assumed: the retry starts from the same snapshot.
        let configured = self.cfg;
        self.cfg.scoring = match configured.scoring {
            ScoringStrategy::MostAllocated => ScoringStrategy::LeastAllocated,
            ScoringStrategy::LeastAllocated => ScoringStrategy::MostAllocated,
        };
        self.backtracks_left = configured.backtracking_limit;
        let retry = self.schedule_group(root, domain, false).0;
        self.cfg = configured;
        if retry.code == Code::Success { retry } else { outcome }
    }

    /// Whether `domain`'s free resources hold, resource by resource, at least what any placement of
    /// `g`'s minimum needs ([`Cycle::minimum_lower_bound`]).
    fn could_fit(&self, g: u32, domain: &Domain) -> bool {
        let free = self.free_resources(domain.nodes.iter().copied());
        let need = self.minimum_lower_bound(g, free.len());
        need.iter().zip(&free).all(|(n, f)| n <= f)
    }

    /// Per resource, the least any placement of `g`'s minimum adds: a leaf's smallest requests among its
    /// pending pods, as many as its minimum still lacks; a composite's smallest bounds among its
    /// children, `minGroupCount` of them (each resource taken apart, so it is a lower bound).
    fn minimum_lower_bound(&self, g: u32, resources: usize) -> Vec<i64> {
        let snap = &*self.snap;
        let group = snap.group(g);
        let min = group.policy.minimum() as usize;
        let smallest_sum = |mut column: Vec<i64>, n: usize| {
            column.sort_unstable();
            column.iter().take(n).fold(0i64, |a, x| a.saturating_add(*x))
        };
        match group.key.kind {
            GroupKind::PodGroup => {
                let (pending, already) = self.leaf_members(g);
                let needed = min.saturating_sub(already as usize);
                (0..resources)
                    .map(|r| {
                        let column = pending
                            .iter()
                            .map(|p| {
                                snap.pod(*p).requests.get(
                                    super::resources::ResourceIdx::try_from(r)
                                        .unwrap_or(super::resources::ResourceIdx::MAX),
                                )
                            })
                            .collect();
                        smallest_sum(column, needed)
                    })
                    .collect()
            }
            GroupKind::CompositePodGroup => {
                let kids: Vec<Vec<i64>> = snap
                    .children(g)
                    .iter()
                    .map(|c| self.minimum_lower_bound(*c, resources))
                    .collect();
                (0..resources)
                    .map(|r| smallest_sum(kids.iter().map(|k| k.get(r).copied().unwrap_or(0)).collect(), min))
                    .collect()
            }
        }
    }

    /// Builds the public result from the final outcome tree and the journal, before it is reverted.
    fn finish(&self, unit: &UnitKey, root: u32, outcome: &Outcome, first: Option<&Outcome>) -> CycleOutcome {
        let snap = &*self.snap;
        let mut by_group: HashMap<u32, &Outcome> = HashMap::new();
        fn index<'o>(o: &'o Outcome, m: &mut HashMap<u32, &'o Outcome>) {
            m.insert(o.group, o);
            for c in &o.children {
                index(c, m);
            }
        }
        if let Some(f) = first {
            index(f, &mut by_group);
        }
        index(outcome, &mut by_group);

        let scheduled = outcome.code == Code::Success;
        // Placements: every assume left in the journal.
        let mut placed_node: HashMap<u32, u32> = HashMap::new();
        for op in self.journal.ops_since(Mark::default()) {
            if let Op::Assume { pod, node } = op {
                placed_node.insert(*pod, *node);
            }
        }
        let mut assignments: Vec<Assignment> = if scheduled {
            placed_node
                .iter()
                .map(|(p, n)| Assignment {
                    pod: snap.pod(*p).key.clone(),
                    node: snap.node_name(*n).to_string(),
                })
                .collect()
        } else {
            Vec::new()
        };
        assignments.sort();
        let reservations = assignments
            .iter()
            .filter_map(|a| {
                let pid = snap.pod_id(&a.pod)?;
                let r = snap.claim_reservations(pid);
                (!r.is_empty()).then(|| (a.pod.clone(), r))
            })
            .collect();

        // Per-group statuses, root first, depth-first in child order.
        let mut order = Vec::new();
        self.walk(root, &mut |_, id| order.push(id));
        let mut groups = Vec::new();
        let mut unschedulable_pods = Vec::new();
        let mut pod_messages: HashMap<u32, &str> = HashMap::new();
        for o in by_group.values() {
            for (p, m) in &o.unplaced {
                pod_messages.insert(*p, m.as_str());
            }
        }
        let mut pending_total = 0u32;
        for &id in &order {
            let g = snap.group(id);
            let o = by_group.get(&id);
            let mut placed = 0;
            let mut before = 0;
            self.walk(id, &mut |snap, sub| {
                for &p in snap.members(sub) {
                    if placed_node.contains_key(&p) && scheduled {
                        placed += 1;
                    }
                    let pi = snap.pod(p);
                    if pi.node.is_some() && !pi.terminating {
                        before += 1;
                    }
                }
            });
            let domain = o
                .and_then(|o| o.domain.clone())
                .and_then(|value| g.topology_key.clone().map(|key| TopologyDomain { key, value }));
            let code = o.map(|o| o.code);
            let message = match o {
                Some(o) if o.code == Code::Success && !scheduled => {
                    format!("the hierarchy could not be scheduled: {}", outcome.message)
                }
                Some(o) => o.message.clone(),
                None if scheduled => "not attempted: the parent's requirement was met without it".to_string(),
                None => format!("not attempted: {}", outcome.message),
            };
            let rejection = if scheduled {
                Rejection::Unschedulable
            } else {
                // The hierarchy is placed all or nothing: its groups and pods share the worst reason.
                subtree_rejection(outcome)
            };
            groups.push(GroupOutcome {
                group: g.key.clone(),
                code,
                satisfied: scheduled && code == Some(Code::Success),
                placed,
                scheduled_before: before,
                domain,
                message,
                rejection,
            });
            if g.key.kind == GroupKind::PodGroup {
                for &p in snap.members(id) {
                    let pi = snap.pod(p);
                    if !(pi.waiting() && snap.responsible_for(&pi.scheduler_name)) {
                        continue;
                    }
                    pending_total += 1;
                    if scheduled && placed_node.contains_key(&p) {
                        continue;
                    }
                    let message = pod_messages
                        .get(&p)
                        .map(|m| m.to_string())
                        .unwrap_or_else(|| groups.last().map(|s| s.message.clone()).unwrap_or_default());
                    unschedulable_pods.push(PodOutcome {
                        pod: pi.key.clone(),
                        message,
                        rejection,
                    });
                }
            }
        }
        unschedulable_pods.sort_by(|a, b| a.pod.cmp(&b.pod));

        let root_info = snap.group(root);
        let scheduled_before_root = groups.first().map(|g| g.scheduled_before).unwrap_or(0);
        let placed_now = if scheduled { placed_node.len() as u32 } else { 0 };
        let preemption_may_help = match outcome.code {
            Code::Unschedulable => true,
            Code::Success if scheduled_before_root > 0 && pending_total > placed_now => match root_info.policy {
                Policy::Gang { .. } => true,
                Policy::Basic => placed_now == 0,
            },
            _ => false,
        };
        let verdict = if scheduled {
            Verdict::Scheduled
        } else {
            Verdict::Unschedulable {
                code: outcome.code,
                message: outcome.message.clone(),
            }
        };
        CycleOutcome {
            unit: unit.clone(),
            verdict,
            assignments,
            reservations,
            groups,
            unschedulable_pods,
            preemption_may_help,
            stats: self.stats,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::core::testing::{GroupBuilder, node, pod_in_group};
    use crate::core::{GroupKey, Scheduler, SchedulerConfig, Snapshot, UnitKey};

    /// Pods a failing gang of `cpus` tries on two 3-cpu nodes, with and without the scoring retry.
    fn tried(cpus: &[&str]) -> (u64, u64) {
        let run = |retry: bool| {
            let mut snap = Snapshot::new();
            for n in ["n0", "n1"] {
                snap.upsert_node(&node(n, "3", "8Gi", &[])).unwrap();
            }
            snap.upsert_pod_group(&GroupBuilder::gang("ns", "g", cpus.len() as i32).pod_group())
                .unwrap();
            for (i, cpu) in cpus.iter().enumerate() {
                snap.upsert_pod(&pod_in_group("ns", &format!("p{i}"), "g", cpu, "1Gi"))
                    .unwrap();
            }
            let cfg = SchedulerConfig {
                scoring_retry: retry,
                ..SchedulerConfig::default()
            };
            let out = Scheduler::new(cfg).schedule(&mut snap, &UnitKey::Group(GroupKey::pod_group("ns", "g")));
            assert!(!out.is_scheduled());
            out.stats.pods_tried
        };
        (run(false), run(true))
    }

    /// The retry runs only when the domain's free resources could hold the minimum: a packing dead end
    /// (three 2-cpu pods, 6 cpu free on two 3-cpu nodes) is retried, a gang larger than the free capacity
    /// (a full cluster before preemption) is not.
    #[test]
    fn the_scoring_retry_runs_only_when_the_minimum_could_fit() {
        let (without, with) = tried(&["2", "2", "2"]);
        assert!(
            with > without,
            "a packing dead end is retried ({without} / {with} pods tried)"
        );
        let (without, with) = tried(&["2", "2", "2", "1"]);
        assert_eq!(with, without, "7 cpu on 6 free: no retry");
    }
}
