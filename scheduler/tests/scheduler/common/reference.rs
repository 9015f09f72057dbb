//! Random small instances and an exact reference that says whether a placement exists.
//!
//! An instance is a handful of nodes in blocks and racks (some capacity already used by plain pods)
//! and one group hierarchy. The reference searches exhaustively (with symmetry pruning): it picks, for
//! every composite, exactly `M` children to satisfy, for every leaf its `M` smallest pods (a smaller
//! pod never hurts), a domain for every topology-constrained group inside its parent's, and a node for
//! every chosen pod within capacity. A placement of the root exists iff this search succeeds; any
//! valid placement contains such a minimal one.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, HashMap};

use kwas_scheduler::core::testing::{GroupBuilder, bound, node_with, pod_with, with_priority};
use kwas_scheduler::core::{Assignment, GroupKey, Snapshot, UnitKey};

pub const NS: &str = "ns";
pub const BLOCK: &str = "kwas.dev/block";
pub const RACK: &str = "kwas.dev/rack";

#[derive(Debug, Clone)]
pub struct NodeM {
    pub cpu: i64,
    pub slots: i64,
    pub block: Option<String>,
    pub rack: Option<String>,
}

#[derive(Debug, Clone)]
pub struct GroupM {
    pub name: String,
    pub parent: Option<usize>,
    pub children: Vec<usize>,
    pub composite: bool,
    /// `None` = Basic.
    pub min: Option<u32>,
    pub topo: Option<&'static str>,
    /// Pending pods' cpu (millis).
    pub pods: Vec<i64>,
}

impl GroupM {
    pub fn minimum(&self) -> u32 {
        self.min.unwrap_or(1)
    }
}

#[derive(Debug, Clone)]
pub struct Inst {
    pub nodes: Vec<NodeM>,
    pub groups: Vec<GroupM>,
    /// Plain pods already running: (node, cpu millis).
    pub running: Vec<(usize, i64)>,
    /// Priority of the hierarchy's groups and pods.
    pub priority: Option<i32>,
}

/// xorshift64*, enough for test instances.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    pub fn chance(&mut self, pct: u64) -> bool {
        self.below(100) < pct
    }
    pub fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize]
    }
}

/// A random instance; `tight` makes capacity scarcer.
pub fn generate(seed: u64, tight: bool) -> Inst {
    let mut r = Rng::new(seed);
    let n_nodes = 3 + r.below(3) as usize;
    let mut nodes = Vec::new();
    for i in 0..n_nodes {
        let b = if i < n_nodes / 2 { 0 } else { 1 };
        let rack = format!("r{b}{}", r.below(2));
        let missing = r.chance(5);
        nodes.push(NodeM {
            cpu: r.pick(&[1000, 2000, 3000, 4000]),
            slots: 2 + r.below(3) as i64,
            block: (!missing).then(|| format!("b{b}")),
            rack: (!missing).then_some(rack),
        });
    }
    let mut running = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        if r.chance(if tight { 60 } else { 25 }) {
            let sizes: &[i64] = if tight { &[500, 1000, 1500] } else { &[500, 1000] };
            running.push((i, r.pick(sizes).min(n.cpu)));
        }
    }
    let mut groups: Vec<GroupM> = Vec::new();
    let mut pods_left: i64 = if tight { 10 } else { 8 };
    let max_leaf: u64 = if tight { 4 } else { 3 };
    fn leaf(r: &mut Rng, name: String, parent: Option<usize>, pods_left: &mut i64, max_leaf: u64) -> GroupM {
        let n = (1 + r.below(max_leaf) as i64).min((*pods_left).max(1));
        *pods_left -= n;
        let pods: Vec<i64> = (0..n).map(|_| r.pick(&[500, 1000, 1000, 1500, 2000])).collect();
        let min = if r.chance(75) {
            Some(1 + r.below(pods.len() as u64) as u32)
        } else {
            None
        };
        let topo = if r.chance(35) {
            Some(RACK)
        } else if r.chance(15) {
            Some(BLOCK)
        } else {
            None
        };
        GroupM {
            name,
            parent,
            children: Vec::new(),
            composite: false,
            min,
            topo,
            pods,
        }
    }
    if r.chance(25) {
        let g = leaf(&mut r, "root".into(), None, &mut pods_left, max_leaf);
        groups.push(g);
    } else {
        groups.push(GroupM {
            name: "root".into(),
            parent: None,
            children: Vec::new(),
            composite: true,
            min: None,
            topo: if r.chance(40) { Some(BLOCK) } else { None },
            pods: Vec::new(),
        });
        let n_children = 2 + r.below(2) as usize;
        for c in 0..n_children {
            if pods_left <= 0 {
                break;
            }
            let idx = groups.len();
            if r.chance(25) && pods_left >= 2 {
                groups.push(GroupM {
                    name: format!("c{c}"),
                    parent: Some(0),
                    children: Vec::new(),
                    composite: true,
                    min: None,
                    topo: if r.chance(40) { Some(RACK) } else { None },
                    pods: Vec::new(),
                });
                groups[0].children.push(idx);
                let k = 2usize;
                for j in 0..k {
                    if pods_left <= 0 {
                        break;
                    }
                    let li = groups.len();
                    let mut g = leaf(&mut r, format!("c{c}l{j}"), Some(idx), &mut pods_left, max_leaf);
                    if groups[idx].topo == Some(RACK) && g.topo == Some(BLOCK) {
                        g.topo = None;
                    }
                    groups.push(g);
                    groups[idx].children.push(li);
                }
                let nc = groups[idx].children.len() as u32;
                groups[idx].min = if r.chance(75) {
                    Some(1 + r.below(u64::from(nc)) as u32)
                } else {
                    None
                };
            } else {
                let g = leaf(&mut r, format!("c{c}"), Some(0), &mut pods_left, max_leaf);
                groups.push(g);
                groups[0].children.push(idx);
            }
        }
        let nc = groups[0].children.len() as u32;
        groups[0].min = if r.chance(75) {
            Some(1 + r.below(u64::from(nc)) as u32)
        } else {
            None
        };
    }
    Inst {
        nodes,
        groups,
        running,
        priority: None,
    }
}

pub fn node_name(i: usize) -> String {
    format!("node-{i}")
}

pub fn pod_name(g: &GroupM, j: usize) -> String {
    format!("{}-p{j}", g.name)
}

pub fn root_unit(inst: &Inst) -> UnitKey {
    let g = &inst.groups[0];
    UnitKey::Group(if g.composite {
        GroupKey::composite(NS, &g.name)
    } else {
        GroupKey::pod_group(NS, &g.name)
    })
}

/// Builds the snapshot for an instance.
pub fn to_snapshot(inst: &Inst) -> Snapshot {
    let mut snap = Snapshot::new();
    for (i, n) in inst.nodes.iter().enumerate() {
        let mut labels = Vec::new();
        if let Some(b) = &n.block {
            labels.push((BLOCK, b.as_str()));
        }
        if let Some(r) = &n.rack {
            labels.push((RACK, r.as_str()));
        }
        let cpu = format!("{}m", n.cpu);
        let slots = n.slots.to_string();
        snap.upsert_node(&node_with(
            &node_name(i),
            &[("cpu", &cpu), ("memory", "64Gi"), ("pods", &slots)],
            &labels,
        ))
        .unwrap();
    }
    for (k, (node, cpu)) in inst.running.iter().enumerate() {
        let p = pod_with("other", &format!("filler-{k}"), None, &[("cpu", &format!("{cpu}m"))]);
        snap.upsert_pod(&bound(p, &node_name(*node))).unwrap();
    }
    for (i, g) in inst.groups.iter().enumerate() {
        let mut b = match g.min {
            Some(m) => GroupBuilder::gang(NS, &g.name, m as i32),
            None => GroupBuilder::basic(NS, &g.name),
        }
        .created(i as i64 + 1);
        if let Some(p) = inst.priority {
            b = b.priority(p);
        }
        if let Some(p) = g.parent {
            b = b.parent(&inst.groups[p].name);
        }
        if let Some(t) = g.topo {
            b = b.topology(t);
        }
        if g.composite {
            snap.upsert_composite_pod_group(&b.composite()).unwrap();
        } else {
            snap.upsert_pod_group(&b.pod_group()).unwrap();
            for (j, cpu) in g.pods.iter().enumerate() {
                let mut pod = pod_with(NS, &pod_name(g, j), Some(&g.name), &[("cpu", &format!("{cpu}m"))]);
                if let Some(p) = inst.priority {
                    pod = with_priority(pod, p);
                }
                snap.upsert_pod(&pod).unwrap();
            }
        }
    }
    snap
}

fn label<'a>(n: &'a NodeM, key: &str) -> Option<&'a str> {
    if key == BLOCK {
        n.block.as_deref()
    } else {
        n.rack.as_deref()
    }
}

struct Search<'a> {
    inst: &'a Inst,
    free_cpu: Vec<i64>,
    free_slots: Vec<i64>,
    steps: u64,
}

#[derive(Clone, Copy)]
enum Task {
    Satisfy(usize, u64),
}

impl Search<'_> {
    fn domains(&self, key: &str, allowed: u64) -> Vec<u64> {
        let mut by: BTreeMap<&str, u64> = BTreeMap::new();
        for (i, n) in self.inst.nodes.iter().enumerate() {
            if allowed & (1 << i) != 0
                && let Some(v) = label(n, key)
            {
                *by.entry(v).or_insert(0) |= 1 << i;
            }
        }
        by.into_values().collect()
    }

    fn solve(&mut self, tasks: &mut Vec<Task>) -> bool {
        self.steps += 1;
        let Some(Task::Satisfy(g, allowed)) = tasks.pop() else {
            return true;
        };
        let group = &self.inst.groups[g];
        let masks = match group.topo {
            Some(k) => self.domains(k, allowed),
            None => vec![allowed],
        };
        let m = group.minimum() as usize;
        for mask in masks {
            if group.composite {
                let children = group.children.clone();
                if children.len() < m {
                    continue;
                }
                for combo in combinations(children.len(), m) {
                    let before = tasks.len();
                    for &c in &combo {
                        tasks.push(Task::Satisfy(children[c], mask));
                    }
                    if self.solve(tasks) {
                        return true;
                    }
                    tasks.truncate(before);
                }
            } else {
                if group.pods.len() < m {
                    continue;
                }
                let mut pods = group.pods.clone();
                pods.sort_unstable();
                pods.truncate(m);
                pods.reverse();
                if self.place(&pods, 0, mask, tasks) {
                    return true;
                }
            }
        }
        tasks.push(Task::Satisfy(g, allowed));
        false
    }

    fn place(&mut self, pods: &[i64], i: usize, mask: u64, tasks: &mut Vec<Task>) -> bool {
        if i == pods.len() {
            let snapshot = tasks.clone();
            let ok = self.solve(tasks);
            if !ok {
                *tasks = snapshot;
            }
            return ok;
        }
        let mut tried: Vec<(i64, i64)> = Vec::new();
        for n in 0..self.inst.nodes.len() {
            if mask & (1 << n) == 0 || self.free_cpu[n] < pods[i] || self.free_slots[n] < 1 {
                continue;
            }
            // Nodes with the same free capacity are interchangeable for the rest of this leaf only when
            // they also share labels; keep it simple and exact by keying on capacity and labels.
            let key = (self.free_cpu[n], self.free_slots[n]);
            let lbl = (self.inst.nodes[n].block.clone(), self.inst.nodes[n].rack.clone());
            if tried.contains(&key)
                && (0..n).any(|o| {
                    mask & (1 << o) != 0
                        && (self.free_cpu[o], self.free_slots[o]) == key
                        && (self.inst.nodes[o].block.clone(), self.inst.nodes[o].rack.clone()) == lbl
                })
            {
                continue;
            }
            tried.push(key);
            self.free_cpu[n] -= pods[i];
            self.free_slots[n] -= 1;
            let ok = self.place(pods, i + 1, mask, tasks);
            self.free_cpu[n] += pods[i];
            self.free_slots[n] += 1;
            if ok {
                return true;
            }
        }
        false
    }
}

fn combinations(n: usize, k: usize) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    let mut cur = Vec::new();
    fn rec(start: usize, n: usize, k: usize, cur: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
        if cur.len() == k {
            out.push(cur.clone());
            return;
        }
        for i in start..n {
            cur.push(i);
            rec(i + 1, n, k, cur, out);
            cur.pop();
        }
    }
    rec(0, n, k, &mut cur, &mut out);
    out
}

/// Whether the root's requirement can be met at all.
pub fn placement_exists(inst: &Inst) -> bool {
    let mut free_cpu: Vec<i64> = inst.nodes.iter().map(|n| n.cpu).collect();
    let mut free_slots: Vec<i64> = inst.nodes.iter().map(|n| n.slots).collect();
    for (n, cpu) in &inst.running {
        free_cpu[*n] -= cpu;
        free_slots[*n] -= 1;
    }
    let mut s = Search {
        inst,
        free_cpu,
        free_slots,
        steps: 0,
    };
    let all = (1u64 << inst.nodes.len()) - 1;
    s.solve(&mut vec![Task::Satisfy(0, all)])
}

/// Checks a placement against the instance's rules; returns the violation, if any.
pub fn violation(inst: &Inst, assignments: &[Assignment]) -> Option<String> {
    check(inst, assignments, true)
}

/// Like [`violation`] without the capacity check (for placements made after preemption, where the
/// instance's plain pods may have been evicted).
pub fn structure_violation(inst: &Inst, assignments: &[Assignment]) -> Option<String> {
    check(inst, assignments, false)
}

fn check(inst: &Inst, assignments: &[Assignment], capacity: bool) -> Option<String> {
    let node_of: HashMap<String, usize> = (0..inst.nodes.len()).map(|i| (node_name(i), i)).collect();
    let mut placed: Vec<Vec<usize>> = vec![Vec::new(); inst.groups.len()];
    let mut cpu: Vec<i64> = inst.nodes.iter().map(|n| n.cpu).collect();
    let mut slots: Vec<i64> = inst.nodes.iter().map(|n| n.slots).collect();
    for (n, c) in &inst.running {
        cpu[*n] -= c;
        slots[*n] -= 1;
    }
    for a in assignments {
        let n = node_of[&a.node];
        let (gi, g) = inst
            .groups
            .iter()
            .enumerate()
            .find(|(_, g)| (0..g.pods.len()).any(|j| pod_name(g, j) == a.pod.name))?;
        let j = (0..g.pods.len()).find(|j| pod_name(g, *j) == a.pod.name)?;
        cpu[n] -= g.pods[j];
        slots[n] -= 1;
        placed[gi].push(n);
    }
    for n in 0..inst.nodes.len() {
        if capacity && (cpu[n] < 0 || slots[n] < 0) {
            return Some(format!("node-{n} overcommitted"));
        }
    }
    // Subtree nodes and satisfaction.
    fn subtree(inst: &Inst, g: usize, placed: &[Vec<usize>], out: &mut Vec<usize>) {
        out.extend(placed[g].iter().copied());
        for &c in &inst.groups[g].children {
            subtree(inst, c, placed, out);
        }
    }
    fn satisfied(inst: &Inst, g: usize, placed: &[Vec<usize>]) -> bool {
        let group = &inst.groups[g];
        let m = group.minimum() as usize;
        if group.composite {
            group.children.iter().filter(|c| satisfied(inst, **c, placed)).count() >= m
        } else {
            placed[g].len() >= m
        }
    }
    for (g, group) in inst.groups.iter().enumerate() {
        let mut nodes = Vec::new();
        subtree(inst, g, &placed, &mut nodes);
        if nodes.is_empty() {
            continue;
        }
        if group.min.is_some() && !satisfied(inst, g, &placed) {
            return Some(format!("gang {} partially placed", group.name));
        }
        if let Some(k) = group.topo {
            let mut vals: Vec<Option<&str>> = nodes.iter().map(|n| label(&inst.nodes[*n], k)).collect();
            vals.sort();
            vals.dedup();
            if vals.len() != 1 || vals[0].is_none() {
                return Some(format!("group {} spans {k} domains {vals:?}", group.name));
            }
        }
    }
    if !assignments.is_empty() && !satisfied(inst, 0, &placed) {
        return Some("root not satisfied".into());
    }
    None
}
