//! Larger random instances for the placement-quality measurements, and an exact reference for them.
//!
//! **Generator** ([`generate`] with [`Params::LARGE`]): 8-128 nodes in 2-4 blocks of 2-4 racks (racks
//! mostly of one node shape, some nodes partly used by plain pods, a few without topology labels) and
//! one hierarchy up to four levels deep (CompositePodGroups over PodGroups, gang or basic policies, rack
//! / block constraints, identical replicas of a subtree as JobSet-style workloads have), gangs of up to
//! 16 pods. The pods' total request is 35-90% of the cluster's free cpu; a group only gets a rack or
//! block constraint when its minimum could fit the largest such domain.
//!
//! **Reference** ([`decide`]): exhaustive depth-first search for a placement of the root's minimum (for
//! every composite `M` children, for every leaf its `M` smallest pods; a smaller pod never hurts), with
//! pruning that never loses a placement:
//!
//! - bounds: every domain (cluster, block, rack) must hold the minimum demand of the open groups
//!   confined to it: cpu, pod slots, and for every pod size `s` the number of pods of size >= `s` (a
//!   node holds at most `min(free cpu / s, free slots)` of those) and the sum of `floor(size / s)` (at
//!   most `floor(free cpu / s)` per node); a topology-constrained group needs one domain that holds it
//!   alone, and the open groups bound to domains of one key within one domain must fit them together
//!   (a domain takes at most as many as fit by each dimension alone, smallest first);
//! - symmetry: nodes with the same free capacity and labels are interchangeable (only the first is
//!   tried), equal pods of a leaf go to nodes in index order, identical sibling groups are chosen in
//!   order, and sibling domains with the same free-capacity profile that no open group tells apart are
//!   tried once;
//! - order: the largest open group first, cheapest children first, domains and nodes tightest-fit
//!   first; a first search with an eighth of the budget tries the roomiest first instead (it finds the
//!   placements tight packing buries under dead ends; either search is complete, so either's "no" is
//!   an answer).
//!
//! The searches count their steps (groups expanded, pods placed); past the budget the answer is
//! [`Verdict::Undecided`]. `tests/scheduler/quality_large.rs` checks the pruned search against a plain
//! one on small instances of the same generator.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, HashMap};

use kwas_scheduler::core::testing::{GroupBuilder, bound, node_with, pod_with};
use kwas_scheduler::core::{Assignment, GroupKey, Snapshot, UnitKey};

pub const NS: &str = "ns";
pub const BLOCK: &str = "kwas.dev/block";
pub const RACK: &str = "kwas.dev/rack";

/// The default search budget (steps: groups expanded plus pods placed).
pub const DEFAULT_BUDGET: u64 = 200_000;

/// A minimum that cannot be met (too few members); large, but sums of many stay far from overflow.
const INF: i64 = 1 << 40;

/// A topology level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Key {
    Block,
    Rack,
}

impl Key {
    pub fn label(self) -> &'static str {
        match self {
            Key::Block => BLOCK,
            Key::Rack => RACK,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub cpu: i64,
    pub slots: i64,
    /// Rack index (global); `None` = the node has no topology labels.
    pub rack: Option<usize>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    pub name: String,
    pub parent: Option<usize>,
    pub children: Vec<usize>,
    pub composite: bool,
    /// `None` = Basic.
    pub min: Option<u32>,
    pub topo: Option<Key>,
    /// Pending pods' cpu (millis).
    pub pods: Vec<i64>,
}

impl Group {
    pub fn minimum(&self) -> usize {
        self.min.unwrap_or(1) as usize
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instance {
    pub seed: u64,
    pub nodes: Vec<Node>,
    /// Block of each rack.
    pub rack_block: Vec<usize>,
    pub blocks: usize,
    /// Groups, parents before children, in creation order; group 0 is the root.
    pub groups: Vec<Group>,
    /// Plain pods already running: (node, cpu millis).
    pub running: Vec<(usize, i64)>,
}

impl Instance {
    pub fn free(&self) -> (Vec<i64>, Vec<i64>) {
        let mut cpu: Vec<i64> = self.nodes.iter().map(|n| n.cpu).collect();
        let mut slots: Vec<i64> = self.nodes.iter().map(|n| n.slots).collect();
        for (n, c) in &self.running {
            cpu[*n] -= c;
            slots[*n] -= 1;
        }
        (cpu, slots)
    }

    pub fn pod_count(&self) -> usize {
        self.groups.iter().map(|g| g.pods.len()).sum()
    }

    /// All pods' cpu over the free cpu.
    pub fn demand_fraction(&self) -> f64 {
        let d: i64 = self.groups.iter().flat_map(|g| g.pods.iter()).sum();
        d as f64 / self.free().0.iter().sum::<i64>().max(1) as f64
    }

    pub fn depth(&self) -> usize {
        fn d(inst: &Instance, g: usize) -> usize {
            1 + inst.groups[g].children.iter().map(|c| d(inst, *c)).max().unwrap_or(0)
        }
        d(self, 0)
    }

    pub fn block_of(&self, n: usize) -> Option<usize> {
        self.nodes[n].rack.map(|r| self.rack_block[r])
    }

    fn label_value(&self, n: usize, key: Key) -> Option<usize> {
        match key {
            Key::Rack => self.nodes[n].rack,
            Key::Block => self.block_of(n),
        }
    }
}

/// Generator parameters (inclusive ranges).
#[derive(Debug, Clone, Copy)]
pub struct Params {
    pub nodes: (usize, usize),
    pub blocks: (usize, usize),
    pub racks_per_block: (usize, usize),
    /// Levels of the hierarchy (root = 1), at most 4.
    pub max_depth: usize,
    /// Children per composite (from 2).
    pub max_fanout: usize,
    pub max_gang: usize,
    /// Total pod cpu as a percentage of the free cpu.
    pub demand_pct: (u64, u64),
}

impl Params {
    /// The larger instances.
    pub const LARGE: Params = Params {
        nodes: (8, 128),
        blocks: (2, 4),
        racks_per_block: (2, 4),
        max_depth: 4,
        max_fanout: 4,
        max_gang: 16,
        demand_pct: (35, 90),
    };
    /// Scaled down, so an unpruned exhaustive search can check the pruned one.
    pub const SMALL: Params = Params {
        nodes: (4, 7),
        blocks: (2, 2),
        racks_per_block: (1, 2),
        max_depth: 3,
        max_fanout: 3,
        max_gang: 4,
        // Tighter than the large ones, so that many are infeasible and the search has to prove it.
        demand_pct: (50, 130),
    };
}

/// xorshift64*, enough for test instances.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng((seed ^ 0x26_1A26_0004).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
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
    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below((hi.saturating_sub(lo) + 1) as u64) as usize
    }
    pub fn chance(&mut self, pct: u64) -> bool {
        self.below(100) < pct
    }
    pub fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize]
    }
}

/// A subtree template: replicas of a child share one template (and so one topology decision).
#[derive(Debug, Clone)]
struct Tmpl {
    composite: bool,
    min: Option<u32>,
    topo: Option<Key>,
    /// Leaf: pod weights (relative cpu).
    weights: Vec<i64>,
    /// Composite: (template, replicas).
    children: Vec<(Tmpl, usize)>,
}

impl Tmpl {
    fn weight(&self) -> i64 {
        self.weights.iter().sum::<i64>() + self.children.iter().map(|(c, k)| c.weight() * *k as i64).sum::<i64>()
    }
    fn pods(&self) -> usize {
        self.weights.len() + self.children.iter().map(|(c, k)| c.pods() * k).sum::<usize>()
    }
    fn max_weight(&self) -> i64 {
        self.weights
            .iter()
            .copied()
            .chain(self.children.iter().map(|(c, _)| c.max_weight()))
            .max()
            .unwrap_or(1)
    }
    /// The cpu and pod count of the minimum (the `M` cheapest members), with pod cpu `unit` per weight.
    fn required(&self, unit: i64, cap: i64) -> (i64, i64) {
        let m = self.min.unwrap_or(1) as usize;
        if self.composite {
            let mut each: Vec<(i64, i64)> = Vec::new();
            for (c, k) in &self.children {
                let r = c.required(unit, cap);
                each.extend(std::iter::repeat_n(r, *k));
            }
            each.sort_unstable();
            each.iter().take(m).fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
        } else {
            let mut pods: Vec<i64> = self.weights.iter().map(|w| (w * unit).min(cap)).collect();
            pods.sort_unstable();
            (pods.iter().take(m).sum(), m.min(pods.len()) as i64)
        }
    }
}

fn gen_tmpl(r: &mut Rng, p: &Params, level: usize, depth: usize) -> Tmpl {
    if level >= depth || (level > 1 && r.chance(15)) {
        let n = if r.chance(50) {
            r.pick(&[1usize, 2, 4, 8, 16]).min(p.max_gang)
        } else {
            r.range(1, p.max_gang)
        };
        let w = r.pick(&[1i64, 1, 2, 2, 3, 4]);
        let mut weights = vec![w; n];
        if n >= 2 && r.chance(20) {
            // A larger leader pod (driver, parameter server).
            weights[0] = 2 * w;
        }
        let min = if r.chance(75) {
            Some(if r.chance(50) { n } else { r.range(1, n) } as u32)
        } else {
            None
        };
        return Tmpl {
            composite: false,
            min,
            topo: None,
            weights,
            children: Vec::new(),
        };
    }
    let fanout = r.range(2, p.max_fanout.max(2));
    let mut children = Vec::new();
    if r.chance(50) {
        children.push((gen_tmpl(r, p, level + 1, depth), fanout));
    } else {
        let mut left = fanout;
        while left > 0 {
            let k = r.range(1, left);
            children.push((gen_tmpl(r, p, level + 1, depth), k));
            left -= k;
        }
    }
    let min = if r.chance(70) {
        Some(if r.chance(50) { fanout } else { r.range(1, fanout) } as u32)
    } else {
        None
    };
    Tmpl {
        composite: true,
        min,
        topo: None,
        weights: Vec::new(),
        children,
    }
}

/// Top-down topology decisions: a constraint only where the group's minimum fits the largest domain.
#[allow(clippy::too_many_arguments)]
fn gen_topology(
    r: &mut Rng,
    t: &mut Tmpl,
    level: usize,
    parent: Option<Key>,
    unit: i64,
    cap: i64,
    rack_max: (i64, i64),
    block_max: (i64, i64),
) {
    let (cpu, pods) = t.required(unit, cap);
    let fits = |m: (i64, i64)| cpu * 10 <= m.0 * 9 && pods <= m.1;
    let (p_rack, p_block) = match (level, t.composite) {
        (1, true) => (10, 30),
        (_, true) => (25, 25),
        (_, false) => (40, 20),
    };
    let roll = r.below(100);
    t.topo = if roll < p_rack && fits(rack_max) && parent != Some(Key::Rack) {
        Some(Key::Rack)
    } else if roll < p_rack + p_block && fits(block_max) && parent.is_none() {
        Some(Key::Block)
    } else {
        None
    };
    let inner = t.topo.or(parent);
    for (c, _) in &mut t.children {
        gen_topology(r, c, level + 1, inner, unit, cap, rack_max, block_max);
    }
}

fn flatten(t: &Tmpl, parent: Option<usize>, unit: i64, cap: i64, out: &mut Vec<Group>) -> usize {
    let idx = out.len();
    out.push(Group {
        name: format!("g{idx}"),
        parent,
        children: Vec::new(),
        composite: t.composite,
        min: t.min,
        topo: t.topo,
        pods: t.weights.iter().map(|w| (w * unit).min(cap)).collect(),
    });
    for (c, k) in &t.children {
        for _ in 0..*k {
            let ci = flatten(c, Some(idx), unit, cap, out);
            out[idx].children.push(ci);
        }
    }
    idx
}

/// A random instance (see the module docs).
pub fn generate(seed: u64, p: &Params) -> Instance {
    let mut r = Rng::new(seed);
    let blocks = r.range(p.blocks.0, p.blocks.1);
    let mut rack_block = Vec::new();
    for b in 0..blocks {
        for _ in 0..r.range(p.racks_per_block.0, p.racks_per_block.1) {
            rack_block.push(b);
        }
    }
    // Sizes spread over the range on a log scale: as many 8-16 node clusters as 64-128 node ones.
    let n_nodes = {
        let (lo, hi) = (p.nodes.0.max(1), p.nodes.1.max(p.nodes.0));
        let mut bounds = vec![lo];
        while bounds.last().copied().unwrap_or(hi) * 2 < hi {
            let b = bounds.last().copied().unwrap_or(hi) * 2;
            bounds.push(b);
        }
        bounds.push(hi + 1);
        let i = r.below((bounds.len() - 1) as u64) as usize;
        r.range(bounds[i], bounds[i + 1] - 1)
    }
    .max(rack_block.len());
    let shapes: Vec<(i64, i64)> = rack_block
        .iter()
        .map(|_| (r.pick(&[8000, 16000, 16000, 32000]), r.pick(&[4, 8, 16, 16])))
        .collect();
    let mut rack_of: Vec<usize> = (0..rack_block.len()).collect();
    while rack_of.len() < n_nodes {
        rack_of.push(r.below(rack_block.len() as u64) as usize);
    }
    rack_of.sort_unstable();
    let mut nodes = Vec::new();
    for &rk in &rack_of {
        let (mut cpu, slots) = shapes[rk];
        if r.chance(10) {
            cpu = r.pick(&[8000, 16000, 32000]);
        }
        nodes.push(Node {
            cpu,
            slots,
            rack: (!r.chance(3)).then_some(rk),
        });
    }
    // Partly used nodes: a quarter to three quarters used by one or two plain pods.
    let used_pct = 30 + r.below(51);
    let mut running = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        if r.chance(used_pct) {
            let used = n.cpu * r.pick(&[1, 2, 2, 3, 4, 6]) / 8;
            if r.chance(50) && n.slots >= 2 {
                running.push((i, used / 2));
                running.push((i, used - used / 2));
            } else {
                running.push((i, used));
            }
        }
    }
    let inst = Instance {
        seed,
        nodes,
        rack_block,
        blocks,
        groups: Vec::new(),
        running,
    };
    let (free_cpu, free_slots) = inst.free();
    let total_free: i64 = free_cpu.iter().sum();
    let total_slots: i64 = free_slots.iter().sum();
    let median_cpu = {
        let mut c: Vec<i64> = inst.nodes.iter().map(|n| n.cpu).collect();
        c.sort_unstable();
        c[c.len() / 2]
    };
    let cap = inst.nodes.iter().map(|n| n.cpu).max().unwrap_or(1000);
    let pct = p.demand_pct.0 + r.below(p.demand_pct.1 - p.demand_pct.0 + 1);
    let target = total_free * pct as i64 / 100;
    // A tree whose pods come out between 250m and a median node: retry shapes until one does.
    let mut best: Option<(Tmpl, i64)> = None;
    for attempt in 0..40 {
        let depth = r.pick(&[1usize, 2, 2, 3, 3, 3, 4, 4, 4]).min(p.max_depth);
        let t = gen_tmpl(&mut r, p, 1, depth);
        let unit = (target / t.weight().max(1) / 250 * 250).max(250);
        let ok = unit * t.max_weight() <= median_cpu && t.pods() as i64 <= total_slots;
        if ok || attempt == 39 {
            best = Some((t, unit));
            break;
        }
    }
    let (mut tmpl, unit) = best.expect("a template");
    let domain_max = |key: Key| -> (i64, i64) {
        let mut by: BTreeMap<usize, (i64, i64)> = BTreeMap::new();
        for n in 0..inst.nodes.len() {
            if let Some(v) = inst.label_value(n, key) {
                let e = by.entry(v).or_default();
                e.0 += free_cpu[n];
                e.1 += free_slots[n];
            }
        }
        by.values().fold((0, 0), |a, b| (a.0.max(b.0), a.1.max(b.1)))
    };
    let (rack_max, block_max) = (domain_max(Key::Rack), domain_max(Key::Block));
    gen_topology(&mut r, &mut tmpl, 1, None, unit, cap, rack_max, block_max);
    let mut groups = Vec::new();
    flatten(&tmpl, None, unit, cap, &mut groups);
    Instance { groups, ..inst }
}

pub fn node_name(i: usize) -> String {
    format!("node-{i:03}")
}

pub fn pod_name(g: &Group, j: usize) -> String {
    format!("{}-p{j}", g.name)
}

pub fn root_unit(inst: &Instance) -> UnitKey {
    let g = &inst.groups[0];
    UnitKey::Group(if g.composite {
        GroupKey::composite(NS, &g.name)
    } else {
        GroupKey::pod_group(NS, &g.name)
    })
}

/// Builds the snapshot for an instance.
pub fn to_snapshot(inst: &Instance) -> Snapshot {
    let mut snap = Snapshot::new();
    for (i, n) in inst.nodes.iter().enumerate() {
        let cpu = format!("{}m", n.cpu);
        let slots = n.slots.to_string();
        let (block, rack) = match n.rack {
            Some(r) => (
                format!("b{}", inst.rack_block[r]),
                format!("b{}-r{r}", inst.rack_block[r]),
            ),
            None => (String::new(), String::new()),
        };
        let labels: Vec<(&str, &str)> = if n.rack.is_some() {
            vec![(BLOCK, block.as_str()), (RACK, rack.as_str())]
        } else {
            Vec::new()
        };
        snap.upsert_node(&node_with(
            &node_name(i),
            &[("cpu", &cpu), ("memory", "256Gi"), ("pods", &slots)],
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
        if let Some(p) = g.parent {
            b = b.parent(&inst.groups[p].name);
        }
        if let Some(t) = g.topo {
            b = b.topology(t.label());
        }
        if g.composite {
            snap.upsert_composite_pod_group(&b.composite()).unwrap();
        } else {
            snap.upsert_pod_group(&b.pod_group()).unwrap();
            for (j, cpu) in g.pods.iter().enumerate() {
                let pod = pod_with(NS, &pod_name(g, j), Some(&g.name), &[("cpu", &format!("{cpu}m"))]);
                snap.upsert_pod(&pod).unwrap();
            }
        }
    }
    snap
}

/// The reference's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// A placement of the root's minimum: (group, pod index, node).
    Feasible(Vec<(usize, usize, usize)>),
    Infeasible,
    /// The search ran out of budget.
    Undecided,
}

impl Verdict {
    pub fn is_feasible(&self) -> bool {
        matches!(self, Verdict::Feasible(_))
    }
}

/// Domains: 0 = the cluster, then blocks, then racks.
struct Domains {
    nodes: Vec<Vec<usize>>,
    /// Whether domain `a` contains domain `b`.
    contains: Vec<Vec<bool>>,
    /// The domains of a key within a domain.
    of_key: HashMap<(Key, usize), Vec<usize>>,
    /// The domains holding each node (cluster, block, rack).
    of_node: Vec<Vec<usize>>,
    /// The domain directly containing each domain (the cluster contains itself).
    parent: Vec<usize>,
}

impl Domains {
    fn new(inst: &Instance) -> Self {
        let (nb, nr) = (inst.blocks, inst.rack_block.len());
        let nd = 1 + nb + nr;
        let block_dom = |b: usize| 1 + b;
        let rack_dom = |r: usize| 1 + nb + r;
        let mut nodes = vec![Vec::new(); nd];
        let mut of_node = Vec::new();
        for (i, n) in inst.nodes.iter().enumerate() {
            let mut ds = vec![0];
            if let Some(r) = n.rack {
                ds.push(block_dom(inst.rack_block[r]));
                ds.push(rack_dom(r));
            }
            for &d in &ds {
                nodes[d].push(i);
            }
            of_node.push(ds);
        }
        let mut contains = vec![vec![false; nd]; nd];
        for (a, row) in contains.iter_mut().enumerate() {
            row[a] = true;
            if a == 0 {
                row.iter_mut().for_each(|x| *x = true);
            }
        }
        for (r, &b) in inst.rack_block.iter().enumerate() {
            contains[block_dom(b)][rack_dom(r)] = true;
        }
        let mut of_key = HashMap::new();
        for d in 0..nd {
            for key in [Key::Block, Key::Rack] {
                let v: Vec<usize> = match (key, d) {
                    (Key::Block, 0) => (0..nb).map(block_dom).collect(),
                    (Key::Rack, 0) => (0..nr).map(rack_dom).collect(),
                    (Key::Rack, d) if d <= nb => (0..nr)
                        .filter(|r| block_dom(inst.rack_block[*r]) == d)
                        .map(rack_dom)
                        .collect(),
                    // A block within a block or a rack, a rack within a rack: the domain itself.
                    _ => vec![d],
                };
                let v = v.into_iter().filter(|x| !nodes[*x].is_empty()).collect();
                of_key.insert((key, d), v);
            }
        }
        let mut parent = vec![0; nd];
        for (r, &b) in inst.rack_block.iter().enumerate() {
            parent[rack_dom(r)] = block_dom(b);
        }
        Domains {
            nodes,
            contains,
            of_key,
            of_node,
            parent,
        }
    }
}

/// A domain's free (cpu, slots) per node, sorted, grouped by rack.
type Signature = Vec<Vec<(i64, i64)>>;

#[derive(Clone, Copy, PartialEq, Eq)]
enum R {
    Yes,
    No,
    Abort,
}

struct Search<'a> {
    inst: &'a Instance,
    dom: Domains,
    cpu: Vec<i64>,
    slots: Vec<i64>,
    /// Pod sizes the bounds count by, largest first.
    sizes: Vec<i64>,
    /// Per leaf: its `M` smallest pods as (cpu, pod index), largest first.
    req: Vec<Vec<(i64, usize)>>,
    /// Per group: what its minimum needs at least, by dimension (see [`Search::pod_need`]).
    need: Vec<Vec<i64>>,
    /// Per group: class of identical siblings.
    class: Vec<usize>,
    /// Per domain: what its free capacity holds at most, by dimension (see [`Search::node_cap`]).
    cap: Vec<Vec<i64>>,
    pending: Vec<(usize, usize)>,
    placed: Vec<(usize, usize, usize)>,
    witness: Option<Vec<(usize, usize, usize)>>,
    steps: u64,
    budget: u64,
    prune: bool,
    /// Roomiest domain and node first instead of the tightest.
    spread: bool,
}

impl<'a> Search<'a> {
    fn new(inst: &'a Instance, budget: u64, prune: bool) -> Self {
        let dom = Domains::new(inst);
        let (cpu, slots) = inst.free();
        let ng = inst.groups.len();
        let mut req = vec![Vec::new(); ng];
        for (g, group) in inst.groups.iter().enumerate() {
            if !group.composite {
                let mut p: Vec<(i64, usize)> = group.pods.iter().copied().zip(0..).collect();
                p.sort_unstable();
                p.truncate(group.minimum());
                p.reverse();
                req[g] = p;
            }
        }
        let mut sizes: Vec<i64> = req.iter().flatten().map(|p| p.0).collect();
        sizes.sort_unstable_by(|a, b| b.cmp(a));
        sizes.dedup();
        let mut s = Search {
            inst,
            dom,
            cpu,
            slots,
            sizes,
            req,
            need: vec![Vec::new(); ng],
            class: vec![0; ng],
            cap: Vec::new(),
            pending: Vec::new(),
            placed: Vec::new(),
            witness: None,
            steps: 0,
            budget,
            prune,
            spread: false,
        };
        let dims = s.dims();
        let mut sig: HashMap<String, usize> = HashMap::new();
        for g in (0..ng).rev() {
            let group = &inst.groups[g];
            let m = group.minimum();
            s.need[g] = if group.composite {
                if group.children.len() < m {
                    vec![INF; dims]
                } else {
                    // Any `m` children: per dimension, at least the `m` smallest.
                    (0..dims)
                        .map(|i| {
                            let mut v: Vec<i64> = group.children.iter().map(|c| s.need[*c][i]).collect();
                            v.sort_unstable();
                            v.iter().take(m).sum()
                        })
                        .collect()
                }
            } else if s.req[g].len() < m {
                vec![INF; dims]
            } else {
                let mut v = vec![0; dims];
                for p in &s.req[g] {
                    for (x, y) in v.iter_mut().zip(s.pod_need(p.0)) {
                        *x += y;
                    }
                }
                v
            };
            let mut kid_classes: Vec<usize> = group.children.iter().map(|c| s.class[*c]).collect();
            kid_classes.sort_unstable();
            let key = format!(
                "{}|{:?}|{:?}|{:?}|{:?}",
                group.composite, group.min, group.topo, s.req[g], kid_classes
            );
            let n = sig.len();
            s.class[g] = *sig.entry(key).or_insert(n);
        }
        s.cap = vec![vec![0; dims]; s.dom.nodes.len()];
        for n in 0..inst.nodes.len() {
            s.account(n, 1);
        }
        s
    }

    /// Dimensions of a need or capacity: cpu, pods, then per size `s` the pods of size >= `s`, then
    /// per size `s` the sum of `floor(size / s)` over pods (a node with `f` free cpu holds pods whose
    /// sum is at most `floor(f / s)`, since `floor(a / s) + floor(b / s) <= floor((a + b) / s)`).
    fn dims(&self) -> usize {
        2 + 2 * self.sizes.len()
    }

    fn pod_need(&self, cpu: i64) -> Vec<i64> {
        let mut v = vec![cpu, 1];
        v.extend(self.sizes.iter().map(|s| i64::from(cpu >= *s)));
        v.extend(self.sizes.iter().map(|s| cpu / s));
        v
    }

    fn node_cap(&self, n: usize) -> Vec<i64> {
        let (cpu, slots) = (self.cpu[n].max(0), self.slots[n].max(0));
        let mut v = vec![cpu, slots];
        v.extend(self.sizes.iter().map(|s| (cpu / s).min(slots)));
        v.extend(self.sizes.iter().map(|s| if slots > 0 { cpu / s } else { 0 }));
        v
    }

    /// Adds (`sign` 1) or removes (-1) node `n`'s free capacity from its domains' totals.
    fn account(&mut self, n: usize, sign: i64) {
        let c = self.node_cap(n);
        for &d in &self.dom.of_node[n] {
            for (x, y) in self.cap[d].iter_mut().zip(&c) {
                *x += sign * y;
            }
        }
    }

    fn take(&mut self, n: usize, cpu: i64) {
        self.account(n, -1);
        self.cpu[n] -= cpu;
        self.slots[n] -= 1;
        self.account(n, 1);
    }

    fn give(&mut self, n: usize, cpu: i64) {
        self.account(n, -1);
        self.cpu[n] += cpu;
        self.slots[n] += 1;
        self.account(n, 1);
    }

    fn holds(&self, d: usize, need: &[i64]) -> bool {
        need.iter().zip(&self.cap[d]).all(|(n, c)| n <= c)
    }

    /// The bounds over the open groups plus `extra` (a leaf's pods not placed yet, in a domain).
    fn bounds_ok(&self, extra: Option<(&[(i64, usize)], usize)>) -> bool {
        if !self.prune {
            return true;
        }
        let nd = self.dom.nodes.len();
        let dims = self.dims();
        // Every domain holds what is confined to it.
        let mut own = vec![vec![0i64; dims]; nd];
        for &(g, d) in &self.pending {
            for (x, y) in own[d].iter_mut().zip(&self.need[g]) {
                *x += y;
            }
        }
        if let Some((rest, d)) = extra {
            for p in rest {
                for (x, y) in own[d].iter_mut().zip(self.pod_need(p.0)) {
                    *x += y;
                }
            }
        }
        for a in 0..nd {
            let mut total = vec![0i64; dims];
            for (d, v) in own.iter().enumerate() {
                if self.dom.contains[a][d] {
                    for (x, y) in total.iter_mut().zip(v) {
                        *x += y;
                    }
                }
            }
            if !self.holds(a, &total) {
                return false;
            }
        }
        // Every open group has a place that holds it alone ...
        for &(g, d) in &self.pending {
            let fits = match self.inst.groups[g].topo {
                Some(k) => self.dom.of_key[&(k, d)].iter().any(|c| self.holds(*c, &self.need[g])),
                None => self.holds(d, &self.need[g]),
            };
            if !fits {
                return false;
            }
        }
        // ... and the open groups bound to one domain of a key each fit the domains together: a domain
        // takes at most as many of them as fit by every dimension alone, smallest first.
        let mut bound: BTreeMap<(Key, usize), Vec<usize>> = BTreeMap::new();
        for &(g, d) in &self.pending {
            if let Some(k) = self.inst.groups[g].topo {
                bound.entry((k, d)).or_default().push(g);
            }
        }
        for ((k, d), groups) in bound {
            if groups.len() < 2 {
                continue;
            }
            let mut hosted = 0usize;
            for &c in &self.dom.of_key[&(k, d)] {
                let mut most = groups.len();
                for i in 0..dims {
                    let mut v: Vec<i64> = groups.iter().map(|g| self.need[*g][i]).collect();
                    v.sort_unstable();
                    let mut sum = 0;
                    let fit = v
                        .iter()
                        .take_while(|x| {
                            sum += **x;
                            sum <= self.cap[c][i]
                        })
                        .count();
                    most = most.min(fit);
                }
                hosted += most;
            }
            if hosted < groups.len() {
                return false;
            }
        }
        true
    }

    fn solve(&mut self) -> R {
        self.steps += 1;
        if self.steps > self.budget {
            return R::Abort;
        }
        if self.pending.is_empty() {
            self.witness = Some(self.placed.clone());
            return R::Yes;
        }
        if !self.bounds_ok(None) {
            return R::No;
        }
        // The largest open group first: it is the hardest to fit, and fails soonest.
        let i = (0..self.pending.len())
            .max_by_key(|&i| (self.need[self.pending[i].0][0], std::cmp::Reverse(self.pending[i].0)))
            .unwrap_or(0);
        let (g, d) = self.pending.remove(i);
        let r = self.expand(g, d);
        self.pending.insert(i, (g, d));
        r
    }

    /// Rack / block signature: the sorted free capacities of its nodes, by rack.
    fn signature(&self, d: usize) -> Signature {
        let mut by: BTreeMap<Option<usize>, Vec<(i64, i64)>> = BTreeMap::new();
        for &n in &self.dom.nodes[d] {
            by.entry(self.inst.nodes[n].rack)
                .or_default()
                .push((self.cpu[n], self.slots[n]));
        }
        let mut v: Vec<Vec<(i64, i64)>> = by
            .into_values()
            .map(|mut x| {
                x.sort_unstable();
                x
            })
            .collect();
        v.sort_unstable();
        v
    }

    fn expand(&mut self, g: usize, d: usize) -> R {
        let group = &self.inst.groups[g];
        let Some(key) = group.topo else {
            return self.expand_in(g, d);
        };
        let mut cands: Vec<usize> = self.dom.of_key[&(key, d)].clone();
        if self.prune {
            cands.retain(|c| self.holds(*c, &self.need[g]));
            cands.sort_by_key(|c| (if self.spread { -self.cap[*c][0] } else { self.cap[*c][0] }, *c));
            // Domains that look alike and that no open group tells apart: try one of them.
            let mut tried: Vec<(usize, Signature)> = Vec::new();
            let mut kept = Vec::new();
            for c in cands {
                let distinguishes = self.pending.iter().any(|&(_, m)| self.dom.contains[c][m]);
                let sig = self.signature(c);
                // Racks must share their block: swapping racks of two blocks changes the blocks.
                let same_parent = |o: usize| key == Key::Block || self.dom.parent[o] == self.dom.parent[c];
                let twin = tried.iter().any(|(o, s)| {
                    *s == sig
                        && !distinguishes
                        && same_parent(*o)
                        && self.pending.iter().all(|&(_, m)| {
                            self.dom.contains[m][*o] == self.dom.contains[m][c] && !self.dom.contains[*o][m]
                        })
                });
                if !twin {
                    kept.push(c);
                }
                tried.push((c, sig));
            }
            cands = kept;
        }
        for c in cands {
            match self.expand_in(g, c) {
                R::No => {}
                r => return r,
            }
        }
        R::No
    }

    /// Expands group `g` within domain `d` (its own constraint resolved).
    fn expand_in(&mut self, g: usize, d: usize) -> R {
        let group = &self.inst.groups[g];
        let m = group.minimum();
        if !group.composite {
            if self.req[g].len() < m {
                return R::No;
            }
            let pods = self.req[g].clone();
            return self.place(g, &pods, 0, d, 0);
        }
        let kids = group.children.clone();
        if kids.len() < m {
            return R::No;
        }
        // Identical siblings are interchangeable: choose how many of each class, first ones first.
        let mut classes: Vec<Vec<usize>> = Vec::new();
        for &c in &kids {
            match classes.iter_mut().find(|v| self.class[v[0]] == self.class[c]) {
                Some(v) if self.prune => v.push(c),
                _ => classes.push(vec![c]),
            }
        }
        let mut combos: Vec<Vec<usize>> = Vec::new();
        fn rec(classes: &[Vec<usize>], i: usize, left: usize, cur: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
            if i == classes.len() {
                if left == 0 {
                    out.push(cur.clone());
                }
                return;
            }
            let before = cur.len();
            for k in 0..=left.min(classes[i].len()) {
                cur.truncate(before);
                cur.extend_from_slice(&classes[i][..k]);
                rec(classes, i + 1, left - k, cur, out);
            }
            cur.truncate(before);
        }
        // Without pruning, classes are singletons and this enumerates every subset of size `m`.
        rec(&classes, 0, m, &mut Vec::new(), &mut combos);
        combos.sort_by_key(|c| c.iter().map(|x| self.need[*x][0]).sum::<i64>());
        for combo in combos {
            let before = self.pending.len();
            self.pending.extend(combo.iter().map(|c| (*c, d)));
            let r = self.solve();
            self.pending.truncate(before);
            if r != R::No {
                return r;
            }
        }
        R::No
    }

    /// Places pods `i..` of leaf `g` in domain `d`; equal pods go to nodes in index order from `lb`.
    fn place(&mut self, g: usize, pods: &[(i64, usize)], i: usize, d: usize, lb: usize) -> R {
        if i == pods.len() {
            return self.solve();
        }
        self.steps += 1;
        if self.steps > self.budget {
            return R::Abort;
        }
        if i > 0 && !self.bounds_ok(Some((&pods[i..], d))) {
            return R::No;
        }
        let size = pods[i].0;
        let mut cands: Vec<usize> = self.dom.nodes[d]
            .iter()
            .copied()
            .filter(|&n| (!self.prune || n >= lb) && self.cpu[n] >= size && self.slots[n] >= 1)
            .collect();
        if self.prune {
            let mut seen: Vec<(i64, i64, Option<usize>)> = Vec::new();
            cands.retain(|&n| {
                let k = (self.cpu[n], self.slots[n], self.inst.nodes[n].rack);
                if seen.contains(&k) {
                    false
                } else {
                    seen.push(k);
                    true
                }
            });
            // Tightest fit first (roomiest, when spreading).
            cands.sort_by_key(|&n| (if self.spread { -self.cpu[n] } else { self.cpu[n] }, n));
        }
        for n in cands {
            self.take(n, size);
            self.placed.push((g, pods[i].1, n));
            let next_lb = if pods.get(i + 1).is_some_and(|p| p.0 == size) {
                n
            } else {
                0
            };
            let r = self.place(g, pods, i + 1, d, next_lb);
            self.placed.pop();
            self.give(n, size);
            if r != R::No {
                return r;
            }
        }
        R::No
    }
}

/// Decides whether the root's minimum can be placed (see the module docs); also returns the steps used.
pub fn decide(inst: &Instance, budget: u64) -> (Verdict, u64) {
    decide_with(inst, budget, true)
}

/// [`decide`] with the pruning switched off (`prune` false): a plain exhaustive search, to check the
/// pruned one on small instances.
pub fn decide_with(inst: &Instance, budget: u64, prune: bool) -> (Verdict, u64) {
    let mut used = 0;
    // Both orders search exhaustively; the one packing tightly answers most instances, and spreading
    // quickly finds the placements that tight packing buries under many dead ends. The spreading one
    // goes first with a small share of the budget.
    let orders: &[(bool, u64)] = if prune {
        &[(true, budget / 8), (false, budget)]
    } else {
        &[(false, budget)]
    };
    for &(spread, share) in orders {
        let mut s = Search::new(inst, share.min(budget - used), prune);
        s.spread = spread;
        s.pending.push((0, 0));
        let r = s.solve();
        used += s.steps.min(s.budget);
        match r {
            R::Yes => return (Verdict::Feasible(s.witness.take().unwrap_or_default()), used),
            R::No => return (Verdict::Infeasible, used),
            R::Abort => {}
        }
    }
    (Verdict::Undecided, used)
}

/// Checks a placement against the instance's rules; returns the violation, if any.
pub fn violation(inst: &Instance, assignments: &[Assignment]) -> Option<String> {
    let node_of: HashMap<String, usize> = (0..inst.nodes.len()).map(|i| (node_name(i), i)).collect();
    let pod_of: HashMap<String, (usize, usize)> = inst
        .groups
        .iter()
        .enumerate()
        .flat_map(|(gi, g)| (0..g.pods.len()).map(move |j| (pod_name(g, j), (gi, j))))
        .collect();
    let mut triples = Vec::new();
    for a in assignments {
        let n = *node_of.get(&a.node)?;
        let (g, j) = *pod_of.get(&a.pod.name)?;
        triples.push((g, j, n));
    }
    violation_of(inst, &triples)
}

/// [`violation`] for (group, pod index, node) triples.
pub fn violation_of(inst: &Instance, placed_pods: &[(usize, usize, usize)]) -> Option<String> {
    let (mut cpu, mut slots) = inst.free();
    let mut placed: Vec<Vec<usize>> = vec![Vec::new(); inst.groups.len()];
    for &(g, j, n) in placed_pods {
        cpu[n] -= inst.groups[g].pods[j];
        slots[n] -= 1;
        placed[g].push(n);
    }
    for n in 0..inst.nodes.len() {
        if cpu[n] < 0 || slots[n] < 0 {
            return Some(format!("{} overcommitted", node_name(n)));
        }
    }
    fn subtree(inst: &Instance, g: usize, placed: &[Vec<usize>], out: &mut Vec<usize>) {
        out.extend(placed[g].iter().copied());
        for &c in &inst.groups[g].children {
            subtree(inst, c, placed, out);
        }
    }
    fn satisfied(inst: &Instance, g: usize, placed: &[Vec<usize>]) -> bool {
        let group = &inst.groups[g];
        let m = group.minimum();
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
            let mut vals: Vec<Option<usize>> = nodes.iter().map(|n| inst.label_value(*n, k)).collect();
            vals.sort_unstable();
            vals.dedup();
            if vals.len() != 1 || vals[0].is_none() {
                return Some(format!("group {} spans {k:?} domains {vals:?}", group.name));
            }
        }
    }
    if !satisfied(inst, 0, &placed) {
        return Some("root not satisfied".into());
    }
    None
}
