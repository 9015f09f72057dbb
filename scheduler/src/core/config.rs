//! Scheduler configuration: scoring and the switches for the algorithm improvements.

/// Default per-pod DRA allocation budget, in work units (see [`SchedulerConfig::dra_pod_budget`]).
pub const DEFAULT_POD_ALLOCATION_BUDGET: u64 = 5_000_000;
/// Default per-cycle DRA allocation budget, in work units (see [`SchedulerConfig::dra_cycle_budget`]).
pub const DEFAULT_CYCLE_ALLOCATION_BUDGET: u64 = 20_000_000;

/// How nodes are scored for a pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ScoringStrategy {
    /// Bin packing (upstream `MostAllocated`): prefer the node that is fullest after the pod lands.
    /// Topology placements likewise prefer the domain that is packed tightest. The default for groups.
    #[default]
    MostAllocated,
    /// Spreading (upstream `LeastAllocated`): prefer the emptiest node and domain.
    LeastAllocated,
}

/// The weight of each score plugin (KubeSchedulerConfiguration `plugins.score.enabled[].weight`; 0
/// disables one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScoreWeights {
    /// `NodeResourcesFit` (the [`ScoringStrategy`]).
    pub node_resources_fit: i64,
    /// `NodeResourcesBalancedAllocation`.
    pub balanced_allocation: i64,
    /// `NodeAffinity` (preferred terms).
    pub node_affinity: i64,
    /// `TaintToleration` (`PreferNoSchedule`).
    pub taint_toleration: i64,
    /// `InterPodAffinity` (preferred terms, and existing pods' terms).
    pub inter_pod_affinity: i64,
    /// `PodTopologySpread` (`ScheduleAnyway` and default constraints).
    pub pod_topology_spread: i64,
}

impl ScoreWeights {
    /// Upstream's default profile weights.
    pub const UPSTREAM: ScoreWeights = ScoreWeights {
        node_resources_fit: 1,
        balanced_allocation: 1,
        node_affinity: 2,
        taint_toleration: 3,
        inter_pod_affinity: 2,
        pod_topology_spread: 2,
    };
}

impl Default for ScoreWeights {
    /// kwas' profile: upstream's weights without `NodeResourcesBalancedAllocation`, so bin packing
    /// (`MostAllocated`) decides alone among otherwise equal nodes.
    fn default() -> Self {
        ScoreWeights {
            balanced_allocation: 0,
            ..ScoreWeights::UPSTREAM
        }
    }
}

/// How many feasible topology placements are scored before one is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PlacementLimit {
    /// Score every placement (KEP-5732 alpha).
    ScoreAll,
    /// Upstream's adaptive `PercentageOfPlacementsToScore`: 100% of the candidate placements for tiny
    /// clusters, falling linearly to 10% when the candidates hold 5000 nodes in total, never below 5%;
    /// at least one. Candidates are tried most promising first (the tightest-packed domain under bin
    /// packing), so the cap rarely costs quality.
    #[default]
    Adaptive,
    /// A fixed percentage (1..=100) of the candidate placements.
    Percentage(u8),
}

/// Knobs of the scheduling algorithm. [`SchedulerConfig::alpha`] is KEP-6012's alpha algorithm
/// exactly; [`SchedulerConfig::default`] turns on every improvement from the KEP's Beta plans.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchedulerConfig {
    /// Node and placement scoring.
    pub scoring: ScoringStrategy,
    /// Score plugin weights.
    pub weights: ScoreWeights,
    /// Beta plan "pre-simulation feasibility": before simulating, count the members that could ever
    /// reach their minimum (enough pods exist, enough admissible children) and return
    /// UnschedulableAndUnresolvable for a subtree that cannot, without placing any pod.
    pub admissibility_precheck: bool,
    /// Beta plan "double-run in a single cycle": a non-greedy first pass secures every group's minimum
    /// (gangs place exactly `minCount` pods, composites stop at `minGroupCount` children, one for
    /// Basic), then a greedy pass places the extras inside the domains the first pass chose. Prevents an
    /// early sibling from stealing the capacity a later sibling needs for its minimum. In the first pass
    /// a gang's minimum is secured with its smallest pods (same priority first), placed largest first.
    pub secure_minimums_first: bool,
    /// With [`secure_minimums_first`](Self::secure_minimums_first): the first pass secures a composite's
    /// minimum with the children whose minimums take the smallest share of the free resources, placing
    /// the tightest of them first (a topology-constrained child measured against the roomiest domain it
    /// may use), and stops a Basic composite at one child like a gang composite at `minGroupCount`;
    /// without it the first pass takes children in creation order and places every child of a Basic
    /// composite. Keeps a large or rack-bound gang from finding its capacity taken by siblings that
    /// would have fit anywhere, or by a Basic composite's optional children.
    pub demand_ordered_minimums: bool,
    /// Beta plan "bounded backtracking": when a child group fails under a composite, up to this many
    /// times per cycle an earlier sibling is moved to its next-best feasible topology placement and the
    /// following siblings are retried. 0 turns backtracking off.
    pub backtracking_limit: u32,
    /// Cap on the topology placements scored per group.
    pub placement_limit: PlacementLimit,
    /// Retry with the other scoring: when the pass that places the root's minimum (the only pass, or
    /// the first with [`secure_minimums_first`](Self::secure_minimums_first)) fails `Unschedulable`, it
    /// runs once more scoring nodes and placements the other way (spreading instead of bin packing, or
    /// back) before the cycle gives up. Bin packing's tightest-fit choices now and then strand what a
    /// later gang needs (a node's free pod slots once its cpu went to another pod, the one gap large
    /// enough for a big pod), which spreading leaves open. Only failing cycles pay (at most one more
    /// pass, with its own backtracking budget); the extras pass keeps the configured scoring, a failure
    /// reports the configured scoring's statuses, and preemption's trial placements never retry. Nor does
    /// a minimum that needs more of some resource than the whole domain has free (no placement exists;
    /// a full cluster before preemption would otherwise pay the failed pass twice).
    pub scoring_retry: bool,
    /// The device allocation work (allocator steps and selector cost units) one pod may do, across all
    /// the nodes tried for it; past it the pod is rejected `Unschedulable` naming its claim.
    pub dra_pod_budget: u64,
    /// The device allocation work one cycle may do, across its pods: past it the pod being placed is
    /// rejected likewise (the cycle's other pods keep what they placed).
    pub dra_cycle_budget: u64,
}

impl SchedulerConfig {
    /// Upstream kube-scheduler's default profile: `LeastAllocated` and upstream's score weights (with
    /// kwas' algorithm improvements on).
    pub fn upstream_default_profile() -> Self {
        Self {
            scoring: ScoringStrategy::LeastAllocated,
            weights: ScoreWeights::UPSTREAM,
            ..Self::default()
        }
    }

    /// KEP-6012's alpha algorithm: greedy, no pre-check, no backtracking, every placement scored, no
    /// retry.
    pub fn alpha() -> Self {
        Self {
            scoring: ScoringStrategy::MostAllocated,
            weights: ScoreWeights::default(),
            admissibility_precheck: false,
            secure_minimums_first: false,
            demand_ordered_minimums: false,
            backtracking_limit: 0,
            placement_limit: PlacementLimit::ScoreAll,
            scoring_retry: false,
            ..Self::default()
        }
    }
}

impl Default for SchedulerConfig {
    /// Every improvement on: pre-check, minimums first (demand-ordered), backtracking (limit 16), adaptive
    /// placement cap, retry with the other scoring.
    fn default() -> Self {
        Self {
            scoring: ScoringStrategy::MostAllocated,
            weights: ScoreWeights::default(),
            admissibility_precheck: true,
            secure_minimums_first: true,
            demand_ordered_minimums: true,
            backtracking_limit: 16,
            placement_limit: PlacementLimit::Adaptive,
            scoring_retry: true,
            dra_pod_budget: DEFAULT_POD_ALLOCATION_BUDGET,
            dra_cycle_budget: DEFAULT_CYCLE_ALLOCATION_BUDGET,
        }
    }
}
